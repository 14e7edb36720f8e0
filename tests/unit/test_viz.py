"""Unit tests of bondgraph.viz: DOT text, rendering, the missing-dot error."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bondgraph.bonds import Causality
from bondgraph.causality import assign_causality
from bondgraph.errors import BondGraphError, ModelError
from bondgraph.graph import BondGraph
from bondgraph.primitives import C, I, OneJunction, R, Se, UnknownEffort, ZeroJunction
from bondgraph import viz

HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(
    not HAVE_DOT, reason="the Graphviz 'dot' program is not installed "
                         "(apt-get install graphviz); rendering tests skipped")


# -- fixtures ------------------------------------------------------------------------------

def two_masses() -> BondGraph:
    """Two masses joined rigidly through a 0-junction: Se*_coupling gets inserted."""
    bg = BondGraph("two_masses")
    bg.add(Se("F", 1.0), OneJunction("v1"), I("m1", 1.0), ZeroJunction("coupling"),
           OneJunction("v2"), I("m2", 3.0))
    for a, b in [("F", "v1"), ("v1", "m1"), ("v1", "coupling"), ("coupling", "v2"),
                 ("v2", "m2")]:
        bg.connect(a, b)
    return bg


def vector_oscillator() -> BondGraph:
    """A 3-D mass-spring-damper: every bond has dim 3."""
    bg = BondGraph("vec")
    bg.add(Se("F", [1.0, 0.0, 0.0], dim=3), OneJunction("v", dim=3),
           I("m", 2.0, dim=3), C("k", 50.0, dim=3), R("d", 0.5, dim=3))
    for a, b in [("F", "v"), ("v", "m"), ("v", "k"), ("v", "d")]:
        bg.connect(a, b)
    return bg


def edge_attrs(dot: str, tail: str, head: str) -> str:
    """The attribute text of the (single) edge tail -> head in DOT text."""
    def q(name: str) -> str:
        return re.escape(name) if re.fullmatch(r"\w+", name) else re.escape(f'"{name}"')
    pattern = rf"^\s*{q(tail)} -> {q(head)} \[(.*)\]$"
    found = re.findall(pattern, dot, flags=re.M)
    assert len(found) == 1, f"expected one edge {tail} -> {head} in\n{dot}"
    return found[0]


def node_attrs(dot: str, name: str) -> str:
    """The attribute text of node ``name`` in DOT text."""
    q = re.escape(name) if re.fullmatch(r"\w+", name) else re.escape(f'"{name}"')
    found = re.findall(rf"^\s*{q} \[(.*)\]$", dot, flags=re.M)
    assert len(found) == 1, f"expected one node {name} in\n{dot}"
    return found[0]


# -- DOT text --------------------------------------------------------------------------

def test_to_graphviz_returns_digraph_with_every_element_and_bond():
    import graphviz

    bg = two_masses()
    g = viz.to_graphviz(bg)
    assert isinstance(g, graphviz.Digraph)
    dot = g.source
    for name in bg.elements:
        node_attrs(dot, name)
    for b in bg.bonds:
        attrs = edge_attrs(dot, b.tail, b.head)
        assert f"label={b.name}" in attrs


def test_plain_graph_has_half_arrows_and_no_strokes():
    dot = viz.to_dot(two_masses())
    for tail, head in [("F", "v1"), ("v1", "m1"), ("v2", "m2")]:
        attrs = edge_attrs(dot, tail, head)
        assert "arrowhead=lvee" in attrs
        assert "tee" not in attrs
        assert "dir=both" not in attrs
    assert "Se*" not in dot


def test_labels_carry_kind_name_and_parameters():
    dot = viz.to_dot(two_masses())
    assert 'label="Se: F\\n1"' in node_attrs(dot, "F")
    assert 'label="I: m2\\n3"' in node_attrs(dot, "m2")
    junction = node_attrs(dot, "coupling")
    assert "label=0" in junction and "xlabel=coupling" in junction
    assert "shape=circle" in junction and "fixedsize=true" in junction


def test_named_parameters_are_drawn_as_their_numbers():
    """A graph's named parameters (symbols in its elements) show their numbers, as
    literal values do; a symbol the graph does not declare shows as itself."""
    bg = BondGraph("named")
    m = bg.add_parameter("m", 2.5, "kg", "mass")
    g = bg.add_parameter("g", -9.81, "m/s^2", "gravity")
    k = bg.add_parameter("k", 40.0, "N/m", "stiffness")
    import sympy
    free = sympy.Symbol("undeclared")
    bg.add(Se("W", m * g), OneJunction("v"), I("mass", m), C("spring", k), R("d", free))
    bg.connect("W", "v")
    for e in ("mass", "spring", "d"):
        bg.connect("v", e)
    dot = viz.to_dot(bg)
    assert 'label="Se: W\\n-24.53"' in node_attrs(dot, "W")
    assert 'label="I: mass\\n2.5"' in node_attrs(dot, "mass")
    assert 'label="C: spring\\nstiffness=40"' in node_attrs(dot, "spring")
    assert 'undeclared' in node_attrs(dot, "d")


def test_inserted_se_star_is_highlighted():
    cg = assign_causality(two_masses())
    assert [s.name for s in cg.constraint_sources] == ["Se*_coupling"]
    dot = viz.to_dot(cg)
    attrs = node_attrs(dot, "Se*_coupling")
    assert "Se*: Se*_coupling" in attrs
    assert "inserted at 0-junction 'coupling'" in attrs
    assert "color=red" in attrs and "fillcolor=" in attrs
    assert 'style="filled,bold,rounded"' in attrs
    edge = edge_attrs(dot, "Se*_coupling", "coupling")
    assert "color=red" in edge and "penwidth=2" in edge and "style=bold" in edge
    assert "1 Se* inserted" in dot
    # ordinary elements are not highlighted
    assert "red" not in node_attrs(dot, "m2")
    assert "red" not in edge_attrs(dot, "v2", "m2")


def test_causal_strokes_sit_at_the_effort_receiving_end():
    cg = assign_causality(two_masses())
    dot = viz.to_dot(cg)
    seen = set()
    for b in cg.graph.bonds:
        attrs = edge_attrs(dot, b.tail, b.head)
        assert "dir=both" in attrs
        stroke = cg.causality[b.name]
        seen.add(stroke)
        if cg.effort_receiver(b.name) == b.head:
            assert stroke is Causality.EFFORT_TO_HEAD
            assert "arrowhead=teelvee" in attrs and "arrowtail=none" in attrs
        else:
            assert "arrowhead=lvee" in attrs and "arrowtail=tee" in attrs
    assert seen == {Causality.EFFORT_TO_HEAD, Causality.EFFORT_TO_TAIL}
    # the bond into the 0-junction from v1 is set by the Se*: effort goes to v1 (tail)
    assert "arrowtail=tee" in edge_attrs(dot, "v1", "coupling")


def test_vector_bonds_are_double_lines_labelled_with_dim():
    dot = viz.to_dot(assign_causality(vector_oscillator()))
    attrs = edge_attrs(dot, "F", "v")
    assert 'color="black:black"' in attrs
    assert 'label="b1 (dim 3)"' in attrs
    for head in ("m", "k", "d"):
        assert 'color="black:black"' in edge_attrs(dot, "v", head)
    scalar = edge_attrs(viz.to_dot(two_masses()), "F", "v1")
    assert re.search(r"\bcolor=black\b(?!:)", scalar)
    assert "dim" not in scalar


def test_vector_se_star_bond_is_double_and_red():
    bg = BondGraph("vec_coupled")
    bg.add(Se("F", [1.0, 0.0, 0.0], dim=3), OneJunction("v1", dim=3), I("m1", 1.0, dim=3),
           ZeroJunction("joint", dim=3), OneJunction("v2", dim=3), I("m2", 2.0, dim=3))
    for a, b in [("F", "v1"), ("v1", "m1"), ("v1", "joint"), ("joint", "v2"), ("v2", "m2")]:
        bg.connect(a, b)
    cg = assign_causality(bg)
    (src,) = cg.constraint_sources
    assert src.dim == 3
    edge = edge_attrs(viz.to_dot(cg), src.name, "joint")
    assert 'color="red:red"' in edge and "(dim 3)" in edge


def test_user_placed_se_star_is_highlighted_without_insertion_note():
    bg = BondGraph("explicit")
    bg.add(UnknownEffort("lam"), ZeroJunction("j"), C("k", 2.0))
    bg.connect("lam", "j")
    bg.connect("j", "k")
    dot = viz.to_dot(bg)
    attrs = node_attrs(dot, "lam")
    assert "Se*: lam" in attrs and "color=red" in attrs
    assert "inserted" not in attrs
    assert "color=red" in edge_attrs(dot, "lam", "j")


def test_output_is_deterministic():
    a = viz.to_dot(assign_causality(two_masses()))
    b = viz.to_dot(assign_causality(two_masses()))
    assert a == b
    cg = assign_causality(two_masses())
    assert viz.to_dot(cg) == viz.to_dot(cg)


def test_names_with_colons_get_safe_node_ids():
    bg = BondGraph("odd names")
    bg.add(Se("src:1", 2.0), OneJunction("j"), I("mass:a", 1.0))
    bg.connect("src:1", "j")
    bg.connect("j", "mass:a")
    dot = viz.to_dot(bg)
    assert "Se: src:1" in dot and "I: mass:a" in dot
    assert "_el0 -> j" in dot and "j -> _el2" in dot
    if HAVE_DOT:
        assert "src:1" in viz.svg_or_none(bg)


def test_rejects_other_objects():
    with pytest.raises(ModelError, match="BondGraph or a CausalGraph"):
        viz.to_dot(object())


def test_graph_methods_delegate_to_viz():
    bg = two_masses()
    assert bg.to_dot() == viz.to_dot(bg)


def test_import_does_not_import_graphviz():
    code = "import sys, bondgraph.viz; print('graphviz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=True)
    assert out.stdout.strip() == "False"


# -- render ----------------------------------------------------------------------------

def test_render_without_dot_writes_dot_text_and_explains(tmp_path, monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name, *a, **k: None)
    out = tmp_path / "diagram.svg"
    cg = assign_causality(two_masses())
    with pytest.raises(BondGraphError) as info:
        viz.render(cg, out)
    dot_file = tmp_path / "diagram.dot"
    assert dot_file.read_text(encoding="utf-8") == viz.to_dot(cg)
    msg = str(info.value)
    assert str(dot_file) in msg
    assert "apt-get install graphviz" in msg
    assert not out.exists()
    assert viz.svg_or_none(cg) is None


def test_render_executable_not_found_from_graphviz(tmp_path, monkeypatch):
    import graphviz

    monkeypatch.setattr(viz.shutil, "which", lambda name, *a, **k: "/usr/bin/dot")

    def missing(self, *args, **kwargs):
        raise graphviz.ExecutableNotFound(["dot"])

    monkeypatch.setattr(graphviz.Source, "pipe", missing)
    with pytest.raises(BondGraphError, match="apt-get install graphviz") as info:
        viz.render(two_masses(), tmp_path / "g.png")
    assert str(tmp_path / "g.dot") in str(info.value)
    assert (tmp_path / "g.dot").exists()
    assert viz.svg_or_none(two_masses()) is None


def test_render_rejects_unknown_format(tmp_path):
    with pytest.raises(ModelError) as info:
        viz.render(two_masses(), tmp_path / "g.gif")
    msg = str(info.value)
    assert "'gif'" in msg and "svg" in msg and "png" in msg and "pdf" in msg
    with pytest.raises(ModelError, match="'jpeg'"):
        viz.render(two_masses(), tmp_path / "g", format="jpeg")
    with pytest.raises(ModelError, match="no suffix"):
        viz.render(two_masses(), tmp_path / "g")
    with pytest.raises(ModelError, match="suffix"):
        viz.render(two_masses(), tmp_path / "g.png", format="svg")


def test_render_output_path_rules(tmp_path, monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(BondGraphError):
        viz.render(two_masses(), tmp_path / "sub" / "g", format="SVG")
    assert (tmp_path / "sub" / "g.dot").exists()
    with pytest.raises(BondGraphError, match="g.v2.dot"):
        viz.render(two_masses(), tmp_path / "g.v2", format="pdf")


@needs_dot
def test_render_svg_contains_inserted_source(tmp_path):
    cg = assign_causality(two_masses())
    out = viz.render(cg, tmp_path / "two_masses.svg")
    assert out == str(tmp_path / "two_masses.svg")
    svg = Path(out).read_text(encoding="utf-8")
    assert "<svg" in svg and "Se*_coupling" in svg
    assert (tmp_path / "two_masses.dot").read_text(encoding="utf-8") == viz.to_dot(cg)


@needs_dot
@pytest.mark.parametrize("fmt,magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_render_binary_formats(tmp_path, fmt, magic):
    out = viz.render(vector_oscillator(), tmp_path / "vec", format=fmt)
    assert out == str(tmp_path / f"vec.{fmt}")
    assert Path(out).read_bytes().startswith(magic)
    assert (tmp_path / "vec.dot").exists()


@needs_dot
def test_svg_or_none_and_repr_svg():
    cg = assign_causality(two_masses())
    svg = viz.svg_or_none(cg)
    assert svg is not None and svg.lstrip().startswith("<?xml") and "Se*_coupling" in svg
    assert "<svg" in two_masses()._repr_svg_()
