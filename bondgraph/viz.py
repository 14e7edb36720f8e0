"""Bond graph diagrams with Graphviz.

Public names
------------
- :func:`to_graphviz`: a :class:`~bondgraph.BondGraph` or a
  :class:`~bondgraph.causality.CausalGraph` -> :class:`graphviz.Digraph`.
- :func:`to_dot`: the same diagram as DOT text.
- :func:`render`: write the DOT text and render it to an SVG, PNG or PDF file.
- :func:`svg_or_none`: SVG text for notebooks (``_repr_svg_``), or ``None`` without the
  ``dot`` program.
- :data:`FORMATS`: the output formats :func:`render` accepts.

Drawing conventions
-------------------
Elements are plain text nodes labelled with their kind, name and parameters
(:meth:`~bondgraph.Element.label`); junctions are small circles with their name next to
them. Every bond is an edge from its tail to its head (the power direction) ending in a
half arrow. Vector bonds (``dim > 1``) are drawn as double lines and their label shows
the dimension. In a causal graph the causal stroke (a ``tee``) sits at the end that
receives the effort, and the unknown effort sources Se* (inserted by the causality
assignment or placed by the user) are drawn in red, bold and filled, with red bonds.

The Python ``graphviz`` package is imported only inside the functions, so importing
this module never needs it; rendering also needs the ``dot`` program
(``apt-get install graphviz``, ``brew install graphviz`` or ``conda install graphviz``).
The output is deterministic: the same graph gives the same DOT text.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._files import atomic_open, write_text
from .bonds import Bond, Causality
from .element import Category, Element
from .errors import BondGraphError, ModelError
if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import graphviz

__all__ = ["FORMATS", "to_graphviz", "to_dot", "render", "svg_or_none", "GraphvizNotFound"]

Drawable = Any
"""What a diagram is drawn from: a :class:`~bondgraph.BondGraph` or a
:class:`~bondgraph.CausalGraph` (read through their attributes: the drawing does not
import the stages that make them, so that they can offer diagrams of themselves)."""

FORMATS: tuple[str, ...] = ("svg", "png", "pdf")
"""Output formats accepted by :func:`render`."""

_INSTALL_HINT = ("install the Graphviz 'dot' program: 'apt-get install graphviz' "
                 "(Debian/Ubuntu), 'brew install graphviz' (macOS) or "
                 "'conda install graphviz'")

# -- style -------------------------------------------------------------------------------
_FONT = "Helvetica"
_POWER_ARROW = "lvee"  # half arrow: the power direction
_STROKE = "tee"  # causal stroke
_SE_STAR_COLOR = "red"
_SE_STAR_FILL = "mistyrose"
_BOND_COLOR = "black"


def _import_graphviz() -> Any:
    """Import the ``graphviz`` Python package, or raise a helpful BondGraphError."""
    try:
        import graphviz
    except ImportError as exc:  # pragma: no cover - graphviz is a declared dependency
        raise BondGraphError("diagrams need the Python 'graphviz' package: "
                             "pip install graphviz") from exc
    return graphviz


def _split(obj: Drawable) -> tuple[Any, Any]:
    """The graph to draw and, for a causal graph, the causal graph itself.

    The drawing reads what it draws (a graph's ``elements`` and ``bonds``; a causal
    graph's ``graph``, ``causality`` and ``constraint_sources``) without importing the
    stages that make them, so that they can offer their own diagrams."""
    if all(hasattr(obj, a) for a in ("graph", "causality", "constraint_sources")):
        return obj.graph, obj
    if all(hasattr(obj, a) for a in ("elements", "bonds", "kinematic_states")):
        return obj, None
    raise ModelError(f"diagrams are drawn from a BondGraph or a CausalGraph, got "
                     f"{type(obj).__name__} {obj!r}")


def _escape(text: str) -> str:
    """Text inserted into a DOT label as is (backslashes are not escapes, and a text
    that looks like ``<...>`` is not read as an HTML label)."""
    import graphviz
    return graphviz.nohtml(text.replace("\\", "\\\\"))


def _node_ids(bg: Any) -> dict[str, str]:
    """Graphviz node ids: the element names, unless a name contains ``:`` (which DOT
    reads as a port separator), a backslash or starts with ``<`` (an HTML string to
    DOT); those get a unique ``_el<i>`` id."""
    names = list(bg.elements)
    taken = set(names)
    ids: dict[str, str] = {}
    for i, name in enumerate(names):
        if ":" in name or "\\" in name or name.startswith("<"):
            nid = f"_el{i}"
            while nid in taken:
                nid = "_" + nid
            taken.add(nid)
            ids[name] = nid
        else:
            ids[name] = name
    return ids


def _is_se_star(el: Element) -> bool:
    return el.kind == "Se*" or el.category is Category.UNKNOWN_EFFORT


def _node_attrs(el: Element, inserted: dict[str, str],
                values: Mapping[str, float] | None = None) -> dict[str, str]:
    """Graphviz attributes of the node of ``el`` (named parameters shown with their
    numbers from ``values``)."""
    label = el.label(values)
    if el.category.is_junction:
        return {"label": _escape(el.kind) if label == el.kind else label,
                "xlabel": _escape(el.name), "shape": "circle", "width": "0.3",
                "height": "0.3", "fixedsize": "true", "fontsize": "11", "margin": "0"}
    if el.name not in label:
        label = f"{label}\\n{_escape(el.name)}"
    if _is_se_star(el):
        if "Se*" not in label:
            label = f"Se*: {label}"
        if el.name in inserted:
            label = f"{label}\\ninserted at 0-junction '{_escape(inserted[el.name])}'"
        return {"label": label, "shape": "box", "style": "filled,bold,rounded",
                "color": _SE_STAR_COLOR, "fillcolor": _SE_STAR_FILL,
                "fontcolor": _SE_STAR_COLOR, "penwidth": "2"}
    return {"label": label, "shape": "plaintext"}


def _edge_attrs(bond: Bond, stroke: Causality | None, highlight: bool) -> dict[str, str]:
    """Graphviz attributes of the edge of ``bond``."""
    color = _SE_STAR_COLOR if highlight else _BOND_COLOR
    label = _escape(bond.name)
    if bond.dim > 1:
        label = f"{label} (dim {bond.dim})"
    attrs: dict[str, str] = {
        "label": label,
        # two colours without fractions: parallel lines (an "invis" middle colour would
        # hide the tail arrow, which graphviz draws in the second colour)
        "color": f"{color}:{color}" if bond.dim > 1 else color,
    }
    if stroke is None:
        attrs["arrowhead"] = _POWER_ARROW
    elif stroke is Causality.EFFORT_TO_HEAD:
        # the first shape of a multi-arrow is drawn closest to the node
        attrs["arrowhead"] = _STROKE + _POWER_ARROW
        attrs["arrowtail"] = "none"
        attrs["dir"] = "both"
    else:
        attrs["arrowhead"] = _POWER_ARROW
        attrs["arrowtail"] = _STROKE
        attrs["dir"] = "both"
    if highlight:
        attrs["penwidth"] = "2"
        attrs["fontcolor"] = _SE_STAR_COLOR
        attrs["style"] = "bold"
    return attrs


def to_graphviz(obj: Drawable) -> graphviz.Digraph:
    """The diagram of a bond graph as a :class:`graphviz.Digraph`.

    Parameters
    ----------
    obj : BondGraph or CausalGraph
        A graph, or the result of :func:`~bondgraph.causality.assign_causality` (its
        ``graph``, with the inserted Se*, is drawn together with the causal strokes).

    Returns
    -------
    graphviz.Digraph
        Nodes in element order, edges in bond order: the same input gives the same DOT
        text. Edges point tail -> head (the power direction) and end in a half arrow;
        vector bonds are double lines labelled with their dimension; causal strokes
        (``tee``) sit at the effort-receiving end; Se* elements and their bonds are red.

    Raises
    ------
    ModelError
        If ``obj`` is neither a BondGraph nor a CausalGraph.
    BondGraphError
        If the Python ``graphviz`` package is not installed.

    Examples
    --------
    >>> from bondgraph.graph import BondGraph
    >>> from bondgraph.primitives import Se, I, OneJunction
    >>> bg = BondGraph("demo")
    >>> _ = bg.add(Se("F", 1.0), OneJunction("v"), I("m", 2.0))
    >>> _ = bg.connect("F", "v"); _ = bg.connect("v", "m")
    >>> g = to_graphviz(bg)
    >>> "F -> v" in g.source
    True
    """
    graphviz = _import_graphviz()
    bg, causal = _split(obj)
    ids = _node_ids(bg)
    elements = bg.elements
    inserted: dict[str, str] = {}
    causality: dict[str, Causality] = {}
    title = bg.name
    if causal is not None:
        inserted = {s.name: s.junction for s in causal.constraint_sources}
        causality = dict(causal.causality)
        n = len(causal.constraint_sources)
        title = f"{bg.name} (causal; {n} Se* inserted)" if n else f"{bg.name} (causal)"

    g = graphviz.Digraph(name=graphviz.nohtml(bg.name))
    g.attr("graph", rankdir="LR", label=_escape(title), labelloc="t", fontname=_FONT,
           forcelabels="true", nodesep="0.35", ranksep="0.6")
    g.attr("node", fontname=_FONT, fontsize="12")
    g.attr("edge", fontname=_FONT, fontsize="10", arrowsize="0.9")

    values = dict(getattr(bg, "parameters", None) or {})   # named parameters' numbers
    for name, el in elements.items():
        g.node(ids[name], **_node_attrs(el, inserted, values))

    for bond in bg.bonds:
        highlight = (bond.tail in inserted or bond.head in inserted
                     or _is_se_star(elements[bond.tail]) or _is_se_star(elements[bond.head]))
        stroke = causality.get(bond.name) if causal is not None else None
        g.edge(ids[bond.tail], ids[bond.head], **_edge_attrs(bond, stroke, highlight))
    return g


def to_dot(obj: Drawable) -> str:
    """The DOT text of the diagram of ``obj`` (see :func:`to_graphviz`).

    Parameters
    ----------
    obj : BondGraph or CausalGraph

    Returns
    -------
    str
        Graphviz DOT source; deterministic for a given graph.
    """
    return to_graphviz(obj).source


def _output_paths(path: str | Path, format: str | None) -> tuple[str, Path, Path]:
    """The format, the output file and the DOT file of :func:`render`."""
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    if format is None:
        if not suffix:
            raise ModelError(f"render: cannot infer the format of '{p}' (no suffix); give "
                             f"format= one of {', '.join(FORMATS)}")
        fmt = suffix
    else:
        fmt = str(format).lower().lstrip(".")
    if fmt not in FORMATS:
        raise ModelError(f"render: unsupported format {fmt!r} for '{p}'; valid formats: "
                         f"{', '.join(FORMATS)}")
    if suffix == fmt:
        out = p
    elif suffix in FORMATS or suffix == "dot":
        raise ModelError(f"render: the path '{p}' has suffix '.{suffix}' but format={fmt!r}; "
                         f"make them agree (valid formats: {', '.join(FORMATS)})")
    else:
        out = p.with_name(p.name + "." + fmt)
    return fmt, out, out.with_suffix(".dot")


class GraphvizNotFound(BondGraphError):
    """Fires when the Graphviz ``dot`` program is not installed: the DOT text was
    written, the picture was not."""


def render(obj: Drawable, path: str | Path, format: str | None = None) -> str:
    """Write the diagram of ``obj`` to ``path`` (and its DOT text next to it).

    Parameters
    ----------
    obj : BondGraph or CausalGraph
    path : str or path-like
        Output file. Its suffix gives the format unless ``format`` is given; a path
        without a suffix gets ``.<format>`` appended.
    format : {"svg", "png", "pdf"}, optional
        Output format (default: from the suffix of ``path``).

    Returns
    -------
    str
        The path of the written diagram.

    Raises
    ------
    ModelError
        On an unsupported format (naming it and the valid ones), a path whose suffix
        contradicts ``format``, or a path without suffix and no ``format``.
    GraphvizNotFound
        If the Graphviz ``dot`` program is missing (a BondGraphError). The DOT text is
        always written first (to the output path with suffix ``.dot``), and the message
        names that file and how to install Graphviz.
    BondGraphError
        If ``dot`` fails, with its message.
    """
    fmt, out, dot_path = _output_paths(path, format)
    source = to_dot(obj)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(dot_path, source)
    missing = (f"the Graphviz 'dot' program was not found, so '{out}' was not rendered; the "
               f"DOT text was written to '{dot_path}'. To render it, {_INSTALL_HINT}, then "
               f"run: dot -T{fmt} '{dot_path}' -o '{out}'")
    if shutil.which("dot") is None:
        raise GraphvizNotFound(missing)
    graphviz = _import_graphviz()
    try:
        data = graphviz.Source(source).pipe(format=fmt, engine="dot", quiet=True)
    except graphviz.ExecutableNotFound as exc:
        raise GraphvizNotFound(missing) from exc
    except (graphviz.CalledProcessError, subprocess.CalledProcessError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        if isinstance(err, bytes):
            err = err.decode("utf-8", "replace")
        raise BondGraphError(f"the Graphviz 'dot' program failed to render '{out}' (the DOT "
                             f"text is in '{dot_path}'): {err.strip() or exc}") from exc
    with atomic_open(out, "wb") as f:
        f.write(data)
    return str(out)


def svg_or_none(obj: Drawable) -> str | None:
    """The SVG text of the diagram, or ``None`` when Graphviz cannot render it.

    Meant for notebooks' ``_repr_svg_``: without the ``dot`` program (or the Python
    ``graphviz`` package) the notebook falls back to the text representation.

    Parameters
    ----------
    obj : BondGraph or CausalGraph

    Returns
    -------
    str or None
    """
    if shutil.which("dot") is None:
        return None
    try:
        graphviz = _import_graphviz()
    except BondGraphError:  # pragma: no cover - graphviz is a declared dependency
        return None
    try:
        data = graphviz.Source(to_dot(obj)).pipe(format="svg", engine="dot", quiet=True)
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError,
            subprocess.CalledProcessError, OSError):
        return None
    return data.decode("utf-8") if isinstance(data, bytes) else str(data)
