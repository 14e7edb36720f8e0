"""Thermal components: heat capacity, thermal conductance, temperature and heat-flow
sources.

A *pseudo* bond graph: the effort is the temperature (K) and the flow the heat flow
rate (W), so e f is not a power and the states are heats (J). It keeps the thermal
capacity and the conductance linear (with entropy flow as the flow, the true power
pair, both would be nonlinear, T = T0 exp(S / C)). The energy ledgers of the package
therefore do not apply to thermal parts: their "power" is in K W.

Every component is two-terminal (ports ``a`` and ``b``, see
:mod:`bondgraph.components.base`): connect ``node_a -> comp.a`` and
``comp.b -> node_b`` from node 0-junctions. A port left unconnected is 0 K: leave a heat
capacity's ``b`` unconnected, so that its state is C T (J).
"""

from __future__ import annotations

from typing import Any

from bondgraph.primitives import C, R, Se, Sf

from bondgraph.components.base import ComponentParameter as P
from bondgraph.components.base import ComponentType, source_builder, through_junction

__all__ = ["HEAT_CAPACITY", "THERMAL_CONDUCTANCE", "TEMPERATURE_SOURCE", "HEAT_FLOW_SOURCE",
           "TYPES"]

A_TO_B = (("a", "j", "side a: connect node_a -> comp.a"),
          ("b", "j", "side b: connect comp.b -> node_b (unconnected: 0 K)"))


def _capacity(bg, *, capacity: Any) -> None:
    through_junction(bg, C("C", compliance=capacity))


def _conductance(bg, *, conductance: Any) -> None:
    through_junction(bg, R("R", 1 / conductance))


HEAT_CAPACITY = ComponentType(
    "heat_capacity", _capacity, A_TO_B,
    [P("capacity", "J/K", "heat capacity m c_p; state q_<name>.C = capacity T, J")],
    domain="thermal", description="a lumped heat capacity (temperature = heat / capacity)")
THERMAL_CONDUCTANCE = ComponentType(
    "thermal_conductance", _conductance, A_TO_B,
    [P("conductance", "W/K", "G = k A / L: heat flow G (T_a - T_b)")],
    domain="thermal", description="a thermal conductance from a to b (an R of 1/G, K/W)")
TEMPERATURE_SOURCE = ComponentType(
    "temperature_source", source_builder("T", Se), A_TO_B,
    [P("temperature", "K", "T_b - T_a (a unconnected: the temperature of b)", rule="value")],
    domain="thermal", description="a prescribed temperature (an ambient)")
HEAT_FLOW_SOURCE = ComponentType(
    "heat_flow_source", source_builder("Q", Sf), A_TO_B,
    [P("heat_flow", "W", "heat flow from a to b, into node b", rule="value")],
    domain="thermal", description="a prescribed heat flow (a heater)")

TYPES = (HEAT_CAPACITY, THERMAL_CONDUCTANCE, TEMPERATURE_SOURCE, HEAT_FLOW_SOURCE)
