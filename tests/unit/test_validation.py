"""Every bad input raises the package's own error naming the culprit."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bondgraph import (
    C, EJS, MTF, BondGraph, I, ModelError, OneJunction, R, Se, ZeroJunction,
    KinematicState, assemble, assign_causality, validate,
)


def graph(*elements, bonds=()):
    bg = BondGraph("g")
    bg.add(*elements)
    for a, b in bonds:
        bg.connect(a, b)
    return bg


def test_collects_every_problem_and_raises_once():
    bg = graph(Se("F", 1.0), OneJunction("v"), I("m", -1.0), C("k", [[1, 2], [3, 4]], dim=2),
               I("lonely", 1.0), bonds=[("F", "v"), ("v", "m")])
    with pytest.raises(ModelError) as err:
        validate(bg)
    msg = str(err.value)
    assert "problems found" in msg
    assert "'m'" in msg and "positive definite" in msg
    assert "'k'" in msg and "not symmetric" in msg
    assert "I 'lonely' is a one-port with 0 bonds" in msg
    assert "C 'k' is a one-port with 0 bonds" in msg
    assert "junction 'v' (1) has 2 bond(s)" not in msg
    assert len(err.value.problems) == 4


@pytest.mark.parametrize("build, match", [
    # one-port with more than one bond (via from_networkx, which skips connect's checks)
    (lambda: BondGraph.from_networkx(_nx_two_bonds_on_I()), r"Port 'p' in I 'm' is already connected"),
    # a junction with fewer than two bonds
    (lambda: graph(Se("F", 1.0), OneJunction("v"), bonds=[("F", "v")]),
     r"junction 'v' \(1\) has 1 bond\(s\); a junction needs at least 2"),
    # missing parameter: no silent defaults
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m"), bonds=[("F", "v"), ("v", "m")]),
     r"element 'm': parameter 'inertia' is missing"),
    (lambda: graph(Se("F"), OneJunction("v"), I("m", 1.0), bonds=[("F", "v"), ("v", "m")]),
     r"Se 'F': its effort is missing"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0), R("b"),
                   bonds=[("F", "v"), ("v", "m"), ("v", "b")]),
     r"element 'b': parameter 'resistance' is missing"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0), C("k"),
                   bonds=[("F", "v"), ("v", "m"), ("v", "k")]),
     r"element 'k': give exactly one of 'stiffness' or 'compliance'"),
    # non-positive / non-symmetric inertia or compliance
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 0.0), bonds=[("F", "v"), ("v", "m")]),
     r"element 'm': parameter 'inertia' must be positive definite"),
    (lambda: graph(Se("F", [1, 1], dim=2), OneJunction("v", dim=2),
                   I("m", [[1.0, 0.5], [0.4, 1.0]], dim=2), bonds=[("F", "v"), ("v", "m")]),
     r"element 'm': parameter 'inertia' is not symmetric"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0), C("k", compliance=-2.0),
                   bonds=[("F", "v"), ("v", "m"), ("v", "k")]),
     r"element 'k': parameter 'compliance' must be positive definite"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", np.nan),
                   bonds=[("F", "v"), ("v", "m")]),
     r"element 'm': parameter 'inertia' = nan is not finite"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", [1.0, 2.0, 3.0]),
                   bonds=[("F", "v"), ("v", "m")]),
     r"element 'm': parameter 'inertia' has shape \(3,\)"),
    # a modulus that reads a state the graph does not have
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0),
                   MTF("T", lambda q: np.eye(1), modulus_rate=lambda q, qd: np.zeros((1, 1)),
                       depends_on=("theta",), shape=(1, 1)), OneJunction("w"), I("m2", 1.0),
                   bonds=[("F", "v"), ("v", "m"), ("v", "T"), ("T", "w"), ("w", "m2")]),
     r"MTF 'T' reads state 'theta', which the graph does not have"),
    (lambda: graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0),
                   MTF("T", lambda q: np.eye(1), depends_on=(), shape=(1, 1)),
                   OneJunction("w"), C("k", 1.0),
                   bonds=[("F", "v"), ("v", "m"), ("v", "T"), ("T", "w"), ("w", "k")]),
     r"MTF 'T': a callable modulus needs its time derivative"),
    (lambda: graph(Se("M", [0, 0, 1], dim=3), OneJunction("w", dim=3), I("J", 1.0, dim=3),
                   EJS("e", momentum="nope"), bonds=[("M", "w"), ("w", "J"), ("w", "e")]),
     r"EJS 'e': momentum 'nope' must name a 3-dim I element"),
])
def test_bad_input_names_the_culprit(build, match):
    with pytest.raises(ModelError, match=match):
        bg = build()
        validate(bg)


def _nx_two_bonds_on_I():
    g = nx.MultiDiGraph()
    g.add_node("a", kind="1")
    g.add_node("b", kind="1")
    g.add_node("m", kind="I", inertia=1.0)
    g.add_edge("a", "m")
    g.add_edge("b", "m", head_port="p")
    return g


def test_modulus_of_the_wrong_shape_is_caught_at_evaluation():
    bg = graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0),
               MTF("T", lambda r: np.ones((2, 2)), modulus_rate=lambda r, rd: np.zeros((2, 2)),
                   depends_on=("x",), shape=(1, 1)), ZeroJunction("c", constraint=True),
               bonds=[("F", "v"), ("v", "m"), ("v", "T"), ("T", "c")])
    bg.add_kinematic_state(KinematicState("x", "v", 1))
    model = assemble(assign_causality(bg))
    with pytest.raises(ModelError, match=r"MTF 'T': modulus returned shape \(2, 2\); valid: \(1, 1\)"):
        model.evaluate(0.0, np.zeros(2))


def test_kinematic_state_with_missing_source():
    bg = graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0), bonds=[("F", "v"), ("v", "m")])
    bg.add_kinematic_state(KinematicState("x", "nowhere", 1))
    with pytest.raises(ModelError, match="kinematic state 'x': source 'nowhere'"):
        validate(bg)


def test_initial_state_lists_missing_and_unknown_names():
    model = assemble(assign_causality(graph(Se("F", 1.0), OneJunction("v"), I("m", 1.0),
                                            C("k", 1.0),
                                            bonds=[("F", "v"), ("v", "m"), ("v", "k")])))
    with pytest.raises(ModelError, match=r"missing value\(s\) for q_k") as err:
        model.initial_state({"p_m": 0.0, "q_kk": 1.0})
    assert "unknown state name(s) q_kk" in str(err.value)


def test_bad_type_added_to_graph():
    with pytest.raises(ModelError, match="can only add Element or Component objects"):
        BondGraph("g").add("I")
