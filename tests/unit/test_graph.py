"""BondGraph: building, networkx interchange, components, the element registry."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bondgraph import (
    ELEMENT_TYPES, BondGraph, C, Component, I, ModelError, OneJunction, PortError, Se,
    TF, assemble, assign_causality, models, register_element,
)
from bondgraph.element import Category, element_type
from bondgraph.primitives import StorageBase


class TestBuilding:
    def test_ports_and_dims_are_inferred(self):
        bg = BondGraph()
        bg.add(Se("F", [1, 2, 3], dim=3), OneJunction("v", dim=3), I("m", 2.0, dim=3))
        b1 = bg.connect("F", "v")
        b2 = bg.connect("v", "m")
        assert (b1.dim, b1.tail_port, b2.head_port) == (3, "p", "p")
        assert b1.head_port == b1.name  # junction ports are the bonds themselves

    def test_two_port_ports_follow_the_power_direction(self):
        bg = BondGraph()
        bg.add(OneJunction("a"), TF("t", 2.0), OneJunction("b"))
        assert bg.connect("a", "t").head_port == "in"
        assert bg.connect("t", "b").tail_port == "out"

    def test_duplicate_name(self):
        bg = BondGraph("g")
        bg.add(I("m", 1.0))
        with pytest.raises(ModelError, match="duplicate element name 'm'"):
            bg.add(C("m", 1.0))

    def test_dimension_mismatch_names_the_bond(self):
        bg = BondGraph()
        bg.add(Se("F", [1, 2, 3], dim=3), OneJunction("v"))
        with pytest.raises(PortError, match=r"bond b1 \(F\.p -> v\.b1\): port dims differ, 3 vs 1"):
            bg.connect("F", "v")

    def test_missing_element_suggests(self):
        bg = BondGraph("g")
        bg.add(OneJunction("velocity"))
        with pytest.raises(PortError, match="no element or component port 'velocty'.*velocity"):
            bg.connect("velocty", "velocity")

    def test_port_connected_twice(self):
        bg = BondGraph()
        bg.add(Se("F", 1.0), OneJunction("a"), OneJunction("b"))
        bg.connect("F", "a")
        with pytest.raises(PortError, match="Port 'p' in Se 'F' is already connected"):
            bg.connect("F", "b")

    def test_missing_port(self):
        bg = BondGraph()
        bg.add(OneJunction("a"), TF("t", 2.0))
        with pytest.raises(PortError, match="TF 't' has no port 'x'; valid ports: in, out"):
            bg.connect("a", "t", head_port="x")

    def test_nx_view_is_read_only(self):
        bg = models.mass_spring_damper(1.0, 1.0, 1.0, 1.0)
        view = bg.nx
        assert sorted(view.nodes) == ["b", "force", "k", "m", "v"]
        with pytest.raises(nx.NetworkXError):
            view.add_node("x")
        assert nx.is_weakly_connected(view)

    def test_remove_and_disconnect(self):
        bg = models.mass_spring_damper(1.0, 1.0, 1.0, 1.0)
        bg.remove("b")
        assert "b" not in bg and len(bg.bonds) == 3
        bg.disconnect("b3")
        assert len(bg.bonds_of("k")) == 0


class TestNetworkxInterchange:
    def test_round_trip_builds_the_same_model(self):
        bg = models.dc_motor(12.0, 1.0, 0.5, 0.1, 0.01, 0.001)
        again = BondGraph.from_networkx(bg.to_networkx())
        x = np.array([0.3, 0.02])
        a = assemble(assign_causality(bg)).rhs(0, x)
        b = assemble(assign_causality(again)).rhs(0, x)
        assert np.array_equal(a, b)

    def test_graph_written_directly_in_networkx(self):
        g = nx.MultiDiGraph()
        g.add_node("F", kind="Se", effort=2.0)
        g.add_node("v", kind="1")
        g.add_node("m", kind="I", inertia=4.0)
        g.add_node("k", kind="C", stiffness=16.0)
        g.add_edge("F", "v")
        g.add_edge("v", "m")
        g.add_edge("v", "k")
        model = assemble(assign_causality(BondGraph.from_networkx(g)))
        assert model.state_names == ("p_m", "q_k")
        assert model.rhs(0, np.array([4.0, 0.5])) == pytest.approx([2.0 - 8.0, 1.0])

    def test_bad_schema_lists_every_node(self):
        g = nx.MultiDiGraph()
        g.add_node("a", kind="Q")
        g.add_node("b")
        g.add_node("c", kind="I", mass=1.0)
        with pytest.raises(ModelError) as err:
            BondGraph.from_networkx(g)
        msg = str(err.value)
        assert "node 'a'" in msg and "unknown element kind 'Q'" in msg
        assert "node 'b': needs an 'element' or a 'kind'" in msg
        assert "node 'c' (kind 'I'): bad attributes" in msg

    def test_undirected_graph_is_refused(self):
        with pytest.raises(ModelError, match="must be directed"):
            BondGraph.from_networkx(nx.Graph())


class TestComponents:
    def spring_mass(self, name):
        inner = BondGraph()
        inner.add(OneJunction("v"), I("m", 2.0), C("k", 8.0))
        inner.connect("v", "m")
        inner.connect("v", "k")
        return Component(name, inner, {"port": "v"})

    def test_component_adds_prefixed_elements_and_exposes_ports(self):
        bg = BondGraph()
        bg.add(self.spring_mass("left"), Se("F", 1.0))
        bg.connect("F", "left.port")
        assert {"left.v", "left.m", "left.k"} <= set(bg.elements)
        assert bg.component_ports == {"left.port": "left.v"}
        model = assemble(assign_causality(bg))
        assert model.state_names == ("p_left.m", "q_left.k")

    def test_component_port_to_missing_inner_element(self):
        inner = BondGraph()
        inner.add(OneJunction("v"))
        bg = BondGraph()
        with pytest.raises(PortError, match="component 'c': port 'p' names missing inner element 'w'"):
            bg.add(Component("c", inner, {"p": "w"}))


class TestRegistry:
    def test_primitive_kinds_are_registered(self):
        for kind in ["Se", "Sf", "Se*", "I", "C", "R", "TF", "MTF", "GY", "MGY", "0", "1",
                     "EJS"]:
            assert kind in ELEMENT_TYPES

    def test_unknown_kind_suggests(self):
        with pytest.raises(KeyError, match="did you mean 'MTF'"):
            element_type("MFT")

    def test_duplicate_kind_is_refused(self):
        class Other(I):
            kind = "I"
        with pytest.raises(ModelError, match="already registered"):
            register_element(Other)

    def test_user_kind_works_everywhere(self):
        @register_element
        class Spring(StorageBase):
            """A linear spring given by its stiffness (N/m): a C with another parameter."""
            kind = "TestSpring"
            category = Category.CAPACITANCE
            state_prefix = "q"

            def __init__(self, name, k=None):
                super().__init__(name)
                self.k = k

            def field_matrix(self, values=None):
                return np.array([[float(self.k)]])

        try:
            bg = BondGraph()
            bg.add(Se("F", 1.0), OneJunction("v"), I("m", 1.0), Spring("s", k=9.0))
            for a, b in [("F", "v"), ("v", "m"), ("v", "s")]:
                bg.connect(a, b)
            model = assemble(assign_causality(bg))
            assert model.rhs(0, np.array([0.0, 0.1])) == pytest.approx([1 - 0.9, 0.0])
            again = BondGraph.from_networkx(bg.to_networkx())
            assert again.element("s").kind == "TestSpring"
        finally:
            ELEMENT_TYPES.pop("TestSpring")


def test_building_pauses_the_garbage_collector_and_restores_it():
    """assign_causality, assemble, Mechanism.build and the sparse set-up run with the
    cyclic collector off (bondgraph._gc.paused) and leave it as they found it: on, or
    off if the caller had switched it off, also when they raise."""
    import gc

    from bondgraph import assemble, assign_causality, models
    from bondgraph._gc import paused
    seen = []

    @paused
    def probe(fail=False):
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("x")

    assert gc.isenabled()
    probe()
    with pytest.raises(ValueError):
        probe(fail=True)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        probe()
        assert not gc.isenabled()          # the caller's choice kept
    finally:
        gc.enable()
    model = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    model.sparse()
    assert gc.isenabled()


def test_a_component_keeps_its_references_to_inner_elements():
    """An EJS names its body's I element: inside a component both get the prefix, so
    the reference must follow (Euler's equations then conserve |h| of a free rotor)."""
    import numpy as np
    from bondgraph import EJS, Component, assemble, assign_causality, simulate
    inner = BondGraph("rotor")
    inner.add(OneJunction("w", dim=3), I("J", np.diag([1.0, 2.0, 3.0]), dim=3),
              EJS("ejs", momentum="J"))
    inner.connect("w", "J")
    inner.connect("w", "ejs")
    bg = BondGraph("top")
    bg.add(Component("b1", inner, {"w": "w"}))
    assert bg.element("b1.ejs").momentum == "b1.J"
    model = assemble(assign_causality(bg))
    res = simulate(model, (0, 2), model.initial_state({"p_b1.J": [0.1, 1.0, 0.2]}),
                   rtol=1e-10)
    h = res.state("p_b1.J")
    assert res.success
    assert abs(np.linalg.norm(h[:, -1]) - np.linalg.norm(h[:, 0])) < 1e-8
    assert np.abs(h[:, -1] - h[:, 0]).max() > 0.05         # (it did tumble: seen 0.07)
