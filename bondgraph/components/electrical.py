"""Electrical components: resistor, capacitor, inductor, diode, voltage and current
sources, DC motor.

Efforts are voltages (V), flows currents (A). Every component is two-terminal (ports
``a`` and ``b``, see :mod:`bondgraph.components.base`): connect
``node_a -> comp.a`` and ``comp.b -> node_b`` from node 0-junctions; the component sees
the voltage e_a - e_b and the current from a to b. A port left unconnected is ground
(0 V). The DC motor adds a mechanical port ``shaft`` (rotational, N m and rad/s).
"""

from __future__ import annotations

from typing import Any

import sympy

from bondgraph.primitives import C, GY, I, OneJunction, R, Se, Sf

from bondgraph.components.base import ComponentParameter as P
from bondgraph.components.base import ComponentType, source_builder, through_junction

__all__ = ["RESISTOR", "CAPACITOR", "INDUCTOR", "DIODE", "VOLTAGE_SOURCE", "CURRENT_SOURCE",
           "DC_MOTOR", "TYPES"]

A_TO_B = (("a", "j", "terminal a: connect node_a -> comp.a"),
          ("b", "j", "terminal b: connect comp.b -> node_b (unconnected: ground)"))


def _resistor(bg, *, resistance: Any) -> None:
    through_junction(bg, R("R", resistance))


def _capacitor(bg, *, capacitance: Any) -> None:
    through_junction(bg, C("C", compliance=capacitance))


def _inductor(bg, *, inductance: Any) -> None:
    through_junction(bg, I("L", inductance))


def _diode(bg, *, saturation_current: Any, thermal_voltage: Any, ideality: Any) -> None:
    e = sympy.Symbol("e")
    law = sympy.sympify(saturation_current) * (
        sympy.exp(e / (sympy.sympify(ideality) * sympy.sympify(thermal_voltage))) - 1)
    through_junction(bg, R("D", flow_law=law))


def _dc_motor(bg, *, resistance: Any, inductance: Any, torque_constant: Any,
              rotor_inertia: Any, friction: Any) -> None:
    through_junction(bg, R("Ra", resistance), I("La", inductance))
    bg.add(GY("k", torque_constant), OneJunction("shaft"))
    bg.connect("j", "k")
    bg.connect("k", "shaft")
    extra = []
    if rotor_inertia:
        extra.append(I("J", rotor_inertia))
    if friction:
        extra.append(R("b", friction))
    bg.add(*extra)
    for el in extra:
        bg.connect("shaft", el.name)


RESISTOR = ComponentType(
    "resistor", _resistor, A_TO_B,
    [P("resistance", "ohm", "resistance R: e_a - e_b = R i")],
    domain="electrical", description="a linear resistor (inner element R)")
CAPACITOR = ComponentType(
    "capacitor", _capacitor, A_TO_B,
    [P("capacitance", "F", "capacitance C: e_a - e_b = q / C; state q_<name>.C, charge in C")],
    domain="electrical", description="a linear capacitor (inner element C)")
INDUCTOR = ComponentType(
    "inductor", _inductor, A_TO_B,
    [P("inductance", "H", "inductance L: i = p / L; state p_<name>.L, flux linkage in V s")],
    domain="electrical", description="a linear inductor (inner element L)")
DIODE = ComponentType(
    "diode", _diode, A_TO_B,
    [P("saturation_current", "A", "Is in Shockley's law i = Is (exp(v / (n Vt)) - 1)"),
     P("thermal_voltage", "V", "Vt = k T / q (default: 300 K)", 0.025852),
     P("ideality", "1", "ideality factor n", 1.0)],
    domain="electrical",
    description="Shockley's diode, anode a, cathode b (an R with a flow law: it needs "
                "the voltage as input, conductance causality)")
VOLTAGE_SOURCE = ComponentType(
    "voltage_source", source_builder("V", Se), A_TO_B,
    [P("voltage", "V", "e_b - e_a: a number, an expression of t, a TimeFunction or a "
                       "StateFunction", rule="value")],
    domain="electrical",
    description="an ideal voltage source, b the positive terminal (inner element V)")
CURRENT_SOURCE = ComponentType(
    "current_source", source_builder("I", Sf), A_TO_B,
    [P("current", "A", "the current from a to b, out of b: a number, an expression of t, "
                       "a TimeFunction or a StateFunction", rule="value")],
    domain="electrical", description="an ideal current source (inner element I)")
DC_MOTOR = ComponentType(
    "dc_motor", _dc_motor,
    A_TO_B + (("shaft", "shaft", "the shaft's 1-junction (rad/s): power out, connect "
                                 "comp.shaft -> load"),),
    [P("resistance", "ohm", "armature resistance Ra"),
     P("inductance", "H", "armature inductance La; state p_<name>.La = La i"),
     P("torque_constant", "N m/A", "k: torque k i, back emf k omega (V s/rad)"),
     P("rotor_inertia", "kg m^2", "rotor inertia J (0: none); state p_<name>.J = J omega",
       0.0, "nonnegative"),
     P("friction", "N m s/rad", "viscous friction b on the shaft (0: none)", 0.0,
       "nonnegative")],
    domain="electrical",
    description="a permanent-magnet DC motor: armature a -> b (Ra, La) and a gyrator k to "
                "the shaft")

TYPES = (RESISTOR, CAPACITOR, INDUCTOR, DIODE, VOLTAGE_SOURCE, CURRENT_SOURCE, DC_MOTOR)
