"""1-D mechanics: translational (N, m/s) and rotational (N m, rad/s) components.

Nodes are 1-junctions (a velocity). A mass or an inertia *is* a node: its port ``a`` is
its own 1-junction, to which any number of bonds attach. A spring or a damper is
two-terminal (ports ``a`` and ``b``, see :mod:`bondgraph.components.base`): one
force, on an inner 0-junction, the elements seeing the rate v_a - v_b; connect
``node_a -> comp.a`` and ``comp.b -> node_b``; a ``b`` left unconnected is fixed to the
ground (a wall). Sources are one-ports on their own 1-junction ``a`` (connect
``comp.a -> node``; the force acts on the node along the positive direction). The
gearbox and the rack and pinion are transformers between two 1-junctions ``a``
(input) and ``b`` (output); connect ``node_a -> comp.a`` and ``comp.b -> node_b``.
"""

from __future__ import annotations

from typing import Any

from bondgraph.primitives import C, I, OneJunction, R, Se, Sf, TF

from bondgraph.components.base import ComponentParameter as P
from bondgraph.components.base import ComponentType, source_builder, across_junction

__all__ = ["MASS", "SPRING", "DAMPER", "FORCE_SOURCE", "VELOCITY_SOURCE", "INERTIA",
           "TORSIONAL_SPRING", "ROTATIONAL_DAMPER", "TORQUE_SOURCE", "SPEED_SOURCE",
           "GEARBOX", "RACK_PINION", "TYPES"]

A_TO_B = (("a", "j", "flange a: connect node_a -> comp.a"),
          ("b", "j", "flange b: connect comp.b -> node_b (unconnected: fixed)"))
NODE = (("a", "j", "the velocity node (1-junction): attach any bonds"),)


def _storage_node(element: str, cls, keyword: str | None):
    def build(bg, **values: Any) -> None:
        (value,) = values.values()
        el = cls(element, value) if keyword is None else cls(element, **{keyword: value})
        bg.add(OneJunction("j"), el)
        bg.connect("j", element)
    return build


def _across(element: str, cls):
    def build(bg, **values: Any) -> None:
        (value,) = values.values()
        across_junction(bg, cls(element, value))
    return build


def _transformer(bg, *, modulus: Any) -> None:
    bg.add(OneJunction("a"), TF("TF", modulus), OneJunction("b"))
    bg.connect("a", "TF")
    bg.connect("TF", "b")


def _gearbox(bg, *, ratio: Any) -> None:
    _transformer(bg, modulus=1 / ratio)


def _rack_pinion(bg, *, radius: Any) -> None:
    _transformer(bg, modulus=radius)


MASS = ComponentType("mass", _storage_node("m", I, None), NODE,
                     [P("mass", "kg", "mass m; state p_<name>.m = m v (kg m/s)")],
                     domain="translational", description="a point mass on its velocity node")
SPRING = ComponentType("spring", _across("k", C), A_TO_B,
                       [P("stiffness", "N/m", "k; state q_<name>.k = integral of "
                                              "(v_a - v_b), m; force k q")],
                       domain="translational", description="a linear spring between a and b")
DAMPER = ComponentType("damper", _across("c", R), A_TO_B,
                       [P("damping", "N s/m", "c; force c (v_a - v_b)")],
                       domain="translational", description="a linear damper between a and b")
FORCE_SOURCE = ComponentType("force_source", source_builder("F", Se), NODE,
                             [P("force", "N", "the force on the node: a number, an "
                                              "expression of t, a TimeFunction or a "
                                              "StateFunction", rule="value")],
                             domain="translational", description="a force on a node")
VELOCITY_SOURCE = ComponentType("velocity_source", source_builder("v", Sf), NODE,
                                [P("velocity", "m/s", "the node's velocity: a number, an "
                                                      "expression of t, a TimeFunction or "
                                                      "a StateFunction", rule="value")],
                                domain="translational",
                                description="a prescribed velocity of a node")
INERTIA = ComponentType("inertia", _storage_node("J", I, None), NODE,
                        [P("inertia", "kg m^2", "moment of inertia J; state p_<name>.J = "
                                                "J omega (kg m^2/s)")],
                        domain="rotational", description="a rotor on its speed node")
TORSIONAL_SPRING = ComponentType("torsional_spring", _across("k", C), A_TO_B,
                                 [P("stiffness", "N m/rad", "k; state q_<name>.k = twist, "
                                                            "rad; torque k q")],
                                 domain="rotational",
                                 description="a linear torsional spring between a and b")
ROTATIONAL_DAMPER = ComponentType("rotational_damper", _across("c", R), A_TO_B,
                                  [P("damping", "N m s/rad", "c; torque c (w_a - w_b)")],
                                  domain="rotational",
                                  description="a linear rotational damper between a and b")
TORQUE_SOURCE = ComponentType("torque_source", source_builder("T", Se), NODE,
                              [P("torque", "N m", "the torque on the node: a number, an "
                                                  "expression of t, a TimeFunction or a "
                                                  "StateFunction", rule="value")],
                              domain="rotational", description="a torque on a node")
SPEED_SOURCE = ComponentType("speed_source", source_builder("w", Sf), NODE,
                             [P("speed", "rad/s", "the node's angular velocity: a number, "
                                                  "an expression of t, a TimeFunction or a "
                                                  "StateFunction", rule="value")],
                             domain="rotational",
                             description="a prescribed angular velocity of a node")
GEARBOX = ComponentType(
    "gearbox", _gearbox,
    (("a", "a", "input shaft (1-junction): connect node -> comp.a"),
     ("b", "b", "output shaft (1-junction): connect comp.b -> node")),
    [P("ratio", "1", "n = w_a / w_b (a reduction for n > 1); torque_b = n torque_a")],
    domain="rotational", description="an ideal gearbox (a TF of modulus 1/n)")
RACK_PINION = ComponentType(
    "rack_pinion", _rack_pinion,
    (("a", "a", "pinion (rotational 1-junction, rad/s): connect node -> comp.a"),
     ("b", "b", "rack (translational 1-junction, m/s): connect comp.b -> node")),
    [P("radius", "m", "pinion pitch radius r: v_b = r w_a, force_b = torque_a / r")],
    domain="translational", description="an ideal rack and pinion (a TF of modulus r)")

TYPES = (MASS, SPRING, DAMPER, FORCE_SOURCE, VELOCITY_SOURCE, INERTIA, TORSIONAL_SPRING,
         ROTATIONAL_DAMPER, TORQUE_SOURCE, SPEED_SOURCE, GEARBOX, RACK_PINION)
