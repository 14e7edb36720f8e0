"""Causality assignment: strokes, inserted unknown sources, dependent storage, conflicts."""

from __future__ import annotations

import pytest

import rich_graphs as rg
from bondgraph import (
    BondGraph, C, Causality, CausalityError, DifferentialCausalityError, I, OneJunction, R,
    Se, ZeroJunction, assign_causality, models,
)


def test_mass_spring_damper_strokes():
    cg = assign_causality(models.mass_spring_damper(1.0, 1.0, 1.0, 1.0))
    # Se imposes effort on v; I receives effort (integral); C imposes effort (integral);
    # R receives flow (resistance causality)
    assert cg.effort_receiver("b1") == "v"
    assert cg.effort_receiver("b2") == "m"
    assert cg.effort_receiver("b3") == "v"
    assert cg.effort_receiver("b4") == "v"
    assert cg.constraint_sources == () and cg.dependent_storage == ()
    assert isinstance(cg.stroke("b1"), Causality)


def test_assignment_never_mutates_the_users_graph():
    bg = models.two_masses_rigid(1.0, 2.0, 3.0)
    before = (tuple(bg.elements), bg.bonds)
    cg = assign_causality(bg)
    assert (tuple(bg.elements), bg.bonds) == before
    assert "Se*_coupling" in cg.graph.elements and "Se*_coupling" not in bg
    assert cg.source_graph is bg


def test_assignment_is_deterministic():
    a = assign_causality(rg.double_pendulum_cartesian())
    b = assign_causality(rg.double_pendulum_cartesian())
    assert a.causality == b.causality
    assert [s.name for s in a.constraint_sources] == [s.name for s in b.constraint_sources]


def test_inserted_source_bond_points_into_the_junction():
    cg = assign_causality(rg.vector_constraint())
    (src,) = cg.constraint_sources
    bond = cg.graph.bond(src.bond)
    assert (bond.tail, bond.head, bond.dim) == (src.name, "c", 3)
    assert cg.effort_receiver(src.bond) == "c"
    assert cg.unknown_sources == (src.name,)


def test_flagged_constraint_junction_is_preferred_over_a_nearer_plain_one():
    # m1 -> 1:v1 -> 0:plain -> 1:mid -> 0:joint(constraint) -> 1:v2 -> m2, with the plain
    # 0-junction also feeding a spring so it is a legitimate junction
    bg = BondGraph()
    bg.add(Se("F", 1.0), OneJunction("v1"), I("m1", 1.0), ZeroJunction("joint", constraint=True,
                                                                       constraint_label="J"),
           OneJunction("mid"), ZeroJunction("plain"), OneJunction("v2"), I("m2", 2.0))
    for a, b in [("F", "v1"), ("v1", "m1"), ("v1", "joint"), ("joint", "mid"),
                 ("mid", "plain"), ("plain", "v2"), ("v2", "m2")]:
        bg.connect(a, b)
    cg = assign_causality(bg)
    assert [s.name for s in cg.constraint_sources] == ["Se*_J"]
    assert cg.constraint_sources[0].junction == "joint"


def test_two_inertias_on_one_junction_is_a_differential_causality_error():
    bg = BondGraph()
    bg.add(Se("F", 1.0), OneJunction("v"), I("m1", 1.0), I("m2", 2.0))
    for a, b in [("F", "v"), ("v", "m1"), ("v", "m2")]:
        bg.connect(a, b)
    with pytest.raises(DifferentialCausalityError, match="I 'm2' is forced into differential"):
        assign_causality(bg)


def test_two_effort_sources_on_a_zero_junction():
    bg = BondGraph()
    bg.add(Se("A", 1.0), Se("B", 2.0), ZeroJunction("z"), C("k", 1.0))
    for a, b in [("A", "z"), ("B", "z"), ("z", "k")]:
        bg.connect(a, b)
    with pytest.raises(CausalityError, match="Se 'B' must impose its effort, but 0 'z' already imposes one"):
        assign_causality(bg)


def test_algebraic_loop_is_reported():
    cg = assign_causality(rg.algebraic_loop())
    assert cg.algebraic_loops == ("R1",)
    assert "algebraic loops through: R1" in cg.summary()


def test_resistor_takes_conductance_causality_when_forced():
    bg = BondGraph()
    bg.add(Se("E", 1.0), ZeroJunction("z"), R("r", 4.0), OneJunction("v"), I("m", 1.0))
    for a, b in [("E", "z"), ("z", "r"), ("z", "v"), ("v", "m")]:
        bg.connect(a, b)
    cg = assign_causality(bg)
    assert cg.effort_receiver("b2") == "r"


def test_flow_source_drives_a_compliance():
    cg = assign_causality(rg.prescribed_flow())
    assert cg.effort_receiver("b1") == "v0"   # the Sf receives the effort
    assert cg.constraint_sources == ()


def test_summary_lists_inserted_sources_and_dependents():
    text = assign_causality(models.two_masses_rigid(1.0, 2.0, 3.0)).summary()
    assert "inserted Se*_coupling (dim 1) at 0-junction 'coupling'" in text
    assert "X_i2): m2" in text
