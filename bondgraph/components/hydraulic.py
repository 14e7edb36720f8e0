"""Hydraulic components: pipe, orifice, accumulator, pump.

Efforts are pressures (Pa), flows volume flow rates (m^3/s). Every component is
two-terminal (ports ``a`` and ``b``, see :mod:`bondgraph.components.base`):
connect ``node_a -> comp.a`` and ``comp.b -> node_b`` from node 0-junctions; the
component sees the pressure drop e_a - e_b and the flow from a to b. A port left
unconnected is the reference pressure (0 Pa: pressures are gauge pressures).
"""

from __future__ import annotations

from typing import Any

import sympy

from bondgraph.errors import ModelError
from bondgraph.primitives import C, I, OneJunction, R, Se, Sf

from bondgraph.components.base import ComponentParameter as P
from bondgraph.components.base import ComponentType, through_junction

__all__ = ["PIPE", "ORIFICE", "ACCUMULATOR", "PUMP", "TYPES"]

A_TO_B = (("a", "j", "end a: connect node_a -> comp.a"),
          ("b", "j", "end b: connect comp.b -> node_b (unconnected: reference pressure)"))


def _pipe(bg, *, inertance: Any, resistance: Any) -> None:
    els = [I("L", inertance)]
    if resistance:
        els.append(R("R", resistance))
    through_junction(bg, *els)


def _orifice(bg, *, coefficient: Any) -> None:
    e, f = sympy.Symbol("e"), sympy.Symbol("f")
    c = sympy.sympify(coefficient)
    through_junction(bg, R("R", flow_law=c * sympy.sign(e) * sympy.sqrt(sympy.Abs(e)),
                           effort_law=f * sympy.Abs(f) / c**2))


def _accumulator(bg, *, capacitance: Any) -> None:
    through_junction(bg, C("C", compliance=capacitance))


def _pump(bg, *, flow: Any, pressure: Any) -> None:
    if (flow is None) == (pressure is None):
        raise ModelError(f"component '{bg.name}' (pump): give exactly one of 'flow' "
                         f"(m^3/s, a flow source) and 'pressure' (Pa, a pressure source)")
    source = Sf("Q", flow) if flow is not None else Se("P", pressure)
    bg.add(OneJunction("j"), source)
    bg.connect(source.name, "j")


PIPE = ComponentType(
    "pipe", _pipe, A_TO_B,
    [P("inertance", "kg/m^4", "rho l / A (Pa s^2/m^3); state p_<name>.L = inertance Q"),
     P("resistance", "Pa s/m^3", "laminar resistance (Hagen-Poiseuille: 8 mu l / (pi "
                                 "r^4)); 0: none", 0.0, "nonnegative")],
    domain="hydraulic", description="a pipe: fluid inertance and laminar resistance in "
                                    "series")
ORIFICE = ComponentType(
    "orifice", _orifice, A_TO_B,
    [P("coefficient", "m^3/(s Pa^0.5)", "c in Q = c sign(dp) sqrt(|dp|) (c = Cd A "
                                        "sqrt(2 / rho))")],
    domain="hydraulic", description="a turbulent orifice (an R with both laws: Q(dp) and "
                                    "dp = Q |Q| / c^2)")
ACCUMULATOR = ComponentType(
    "accumulator", _accumulator, A_TO_B,
    [P("capacitance", "m^3/Pa", "dV/dp (a tank open to the reference: A / (rho g)); "
                                "state q_<name>.C, the stored volume in m^3")],
    domain="hydraulic", description="an accumulator or open tank: pressure = V / "
                                    "capacitance (leave b unconnected)")
PUMP = ComponentType(
    "pump", _pump, A_TO_B,
    [P("flow", "m^3/s", "delivered flow a -> b (a flow source), or", None, "value"),
     P("pressure", "Pa", "pressure rise e_b - e_a (a pressure source)", None, "value")],
    domain="hydraulic", description="an ideal pump from suction a to delivery b: give "
                                    "flow or pressure")

TYPES = (PIPE, ORIFICE, ACCUMULATOR, PUMP)
