"""Any bond graph as a TOML file: :func:`save_graph` writes it, :func:`load_graph` reads it
back to an identical graph, and ``bondgraph run|render|equations FILE`` take it.

- :func:`save_graph`, :func:`dumps_graph`: a built graph (and optionally its initial
  state, solver settings and outputs) as a file.
- :func:`load_graph`, :func:`load_graph_file`, :func:`loads_graph`: the file back.
- :func:`graph_differences`: what differs between two graphs (empty: identical).
- :class:`GraphFile`, :class:`GraphSolver`, :class:`GraphOutput`: what a file holds.
- :class:`GraphFileError`: a :class:`~bondgraph.ModelError` naming the file, the table
  (``[element 'La']``, ``[bond 'b3']``...) and the key.

The format, by example::

    [bondgraph]                     # this table makes it a bond graph file
    name = "rlc"

    [parameters]                    # optional: named parameters (BondGraph.add_parameter)
    L = { value = 0.1, unit = "H", meaning = "inductance", positive = true }
    "motor.R" = 2.0                 # a value alone; a name with a dot is quoted

    [[element]]                     # one per element: its name, its registered kind
    name = "L1"                     # and the keywords of its constructor
    kind = "I"                      # (what the element's parameters() lists, and dim)
    inertia = { expr = "L" }        # a sympy expression, as text: never executed

    [[element]]
    name = "i"
    kind = "1"

    [[bond]]                        # one per bond, in the power direction
    name = "b1"                     # optional (default b1, b2, ...)
    tail = "V"
    head = "i"                      # optional: tail_port, head_port, dim

    [initial]                       # optional: state = value (others start at 0)
    p_L1 = 0.0
    [solver]                        # for `bondgraph run`
    t_end = 1.0
    [output]
    diagram = "bond_graph.svg"

A value is a number, a string (a name), an array, or a table holding an expression:
``{ expr = "2*m" }`` (a sympy expression, or a list of them: ``{ expr = "[0, -m*g]" }``),
``{ matrix = "[[cos(x), 0], [0, 1]]" }`` (a sympy Matrix), ``{ array = "[m, 2*m]" }`` (a
numpy array of expressions), or a table of a function of time: ``{ table = { t = [...],
value = [...] } }`` (a :meth:`TimeFunction.table`). Expressions are read by :mod:`bondgraph.expressions`: no
code runs. Other tables: ``[symbols]`` (assumptions of symbols, e.g. ``m = { positive =
true }``), ``[ports]`` (component ports), ``[[kinematic_state]]`` and ``[[work_state]]``.
"""

from __future__ import annotations

import inspect
import numbers
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy

from ._files import read_text, write_text
from ._tables import read_toml
from ._toml import table_text
from .element import ELEMENT_TYPES, Element, StateFunction, TimeFunction
from .laws import TIME
from ._graphfile_read import (
    FORMAT, GraphFile, GraphFileError, GraphOutput, GraphSolver, keywords, read_document,
)
from .errors import ModelError
from .expressions import expression_text
from .graph import BondGraph
from .parameters import symbol as parameter_symbol

__all__ = ["save_graph", "dumps_graph", "load_graph", "load_graph_file", "loads_graph",
           "graph_differences", "is_graph_file", "GraphFile", "GraphSolver", "GraphOutput",
           "GraphFileError", "FORMAT"]

# ---------------------------------------------------------------------------------------
# Values: Python <-> TOML
# ---------------------------------------------------------------------------------------

def _has_sympy(v: Any) -> bool:
    if isinstance(v, sympy.Basic):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype == object and any(_has_sympy(x) for x in v.ravel())
    if isinstance(v, (list, tuple)):
        return any(_has_sympy(x) for x in v)
    return False


WRITTEN_KINDS = ("expression", "sine", "step", "ramp")
"""The TimeFunctions a file holds as their expressions of t (:meth:`TimeFunction.
expressions`: a step and a ramp with ``Heaviside(t - time, 1)``): what
:func:`bondgraph.parse_expression` reads back exactly (a table is written as its points,
``{ table = {...} }``)."""


def _written(el: Element, v: Any) -> Any:
    """``v`` as a file holds it: a TimeFunction of a kind in :data:`WRITTEN_KINDS` as
    its expression(s) of t (one for a scalar element, a list for a vector), anything
    else as it is."""
    if isinstance(v, TimeFunction) and v.compiled is not None and \
            v.compiled.kind in WRITTEN_KINDS:
        dim = getattr(el, "dim", 1) or 1
        exprs = v.expressions(dim)
        if exprs is not None:                # (t as a file reads it: a plain symbol)
            exprs = [sympy.sympify(e).xreplace({TIME: sympy.Symbol(TIME.name)})
                     for e in exprs]
            return exprs[0] if dim == 1 else exprs
    return v


def _unsaveable(v: Any) -> str | None:
    """Why ``v`` cannot be written (None when it can)."""
    if _table_of(v) is not None:
        return None
    if isinstance(v, TimeFunction):
        return ("a TimeFunction (Python functions of time); a file holds no code: give a "
                "number, or a sympy expression of the symbol t where the element accepts "
                "one (its laws of time are read as { expr = \"...\" }; TimeFunction."
                "expression, .sine, .step and .ramp are written so, and a "
                "TimeFunction.table as { table = { t = [...], value = [...] } })")
    if isinstance(v, StateFunction):
        return ("a StateFunction (a Python function of the state); a file holds no code: "
                "give a sympy expression of the states where the element accepts one, or "
                "build this element in Python")
    if callable(v) or type(v).__name__ in ("PositionConstraint", "ModulusContext"):
        return (f"a Python function ({type(v).__name__}); a file holds numbers, arrays, "
                f"names and sympy expressions only (for a modulated two-port, a sympy "
                f"Matrix modulus with depends_on)")
    return None


def _encode(v: Any, where: str) -> Any:
    """``v`` as a TOML value; GraphFileError naming ``where`` when it cannot be."""
    why = _unsaveable(v)
    if why:
        raise GraphFileError(f"{where} is {why}")
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    table = _table_of(v)
    if table is not None:                 # { table = { t = [...], value = [...] } }
        ts, vs, breaks = table
        return {"table": {"t": ts.tolist(), "value": vs.tolist(), "breaks": breaks}}
    if isinstance(v, (numbers.Integral, numbers.Real)) and not isinstance(v, sympy.Basic):
        return v
    if isinstance(v, str):
        return v
    try:
        if isinstance(v, sympy.MatrixBase):
            return {"matrix": expression_text(v.tolist())}
        if isinstance(v, sympy.Basic):
            return {"expr": expression_text(v)}
        if isinstance(v, np.ndarray) and _has_sympy(v):
            return {"array": expression_text(v.tolist())}
        if isinstance(v, (list, tuple)) and _has_sympy(v):
            return {"expr": expression_text(list(v))}
    except ModelError as exc:
        raise GraphFileError(f"{where}: {exc}") from None
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise GraphFileError(f"{where} is an array of {v.dtype}; a file holds arrays of "
                                 f"numbers or of sympy expressions")
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_encode(x, f"{where}[{k}]") for k, x in enumerate(v)]
    raise GraphFileError(f"{where} is a {type(v).__name__} ({v!r}), which a file cannot "
                         f"hold; valid: numbers, strings, arrays, sympy expressions")


def _table_of(v: Any) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(times, values, breaks) of a :meth:`TimeFunction.table`; None for anything else."""
    if not isinstance(v, TimeFunction) or v.compiled is None or v.compiled.kind != "table":
        return None
    p = v.compiled.params
    return (np.asarray(p[0], dtype=float), np.asarray(p[1], dtype=float),
            bool(p[2]) if len(p) > 2 else True)


def _canon(v: Any) -> Any:
    """A comparable form of a parameter value: numbers by value (int, float, numpy or
    sympy), sequences and arrays by their entries, expressions by their exact
    structure (sympy's srepr), other objects by identity."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return ("bool", bool(v))
    if isinstance(v, sympy.MatrixBase):
        return ("matrix", v.shape, tuple(_canon(x) for x in v))
    if isinstance(v, sympy.Basic):
        if v.is_Number:
            return ("number", float(v))
        return ("expr", sympy.srepr(v))
    if isinstance(v, numbers.Real):
        return ("number", float(v))
    if isinstance(v, np.ndarray):
        return _canon(v.tolist()) if v.ndim else _canon(v.item())
    if isinstance(v, (list, tuple)):
        return ("seq", tuple(_canon(x) for x in v))
    table = _table_of(v)
    if table is not None:
        return ("table", _canon(table[0]), _canon(table[1]), table[2])
    return ("object", type(v).__name__, id(v))


# ---------------------------------------------------------------------------------------
# Elements: generic over the registry
# ---------------------------------------------------------------------------------------

_MISSING = object()


def _attribute(el: Element, key: str) -> Any:
    """The value the element holds for constructor keyword ``key`` (attribute ``key``
    or ``_key``), or _MISSING."""
    for name in (key, f"_{key}"):
        try:
            return getattr(el, name)
        except AttributeError:
            continue
        except Exception:            # (a property that cannot answer)
            return _MISSING
    return _MISSING


def _extras(el: Element, params: Mapping[str, Any]) -> dict[str, Any]:
    """Constructor keywords that ``parameters()`` leaves out but the element needs to be
    rebuilt identically (``dim`` of a one-port, ``invertible`` of an MTF...): those whose
    held value differs from both the default and what the other keywords imply."""
    klass = type(el)
    cands = {}
    for k, p in keywords(klass).items():
        if k in params:
            continue
        v = _attribute(el, k)
        if v is _MISSING or v is None:
            continue
        if p.default is not inspect.Parameter.empty and _canon(v) == _canon(p.default):
            continue
        cands[k] = v
    if not cands:
        return {}
    try:
        plain = klass(el.name, **params)
    except Exception:
        return cands
    return {k: v for k, v in cands.items() if _canon(_attribute(plain, k)) != _canon(v)}


def _fingerprint(el: Element) -> tuple:
    params = el.parameters()
    held = {k: _canon(_attribute(el, k)) for k in keywords(type(el)) if k not in params}
    return (type(el), el.kind, el.name, tuple((p.name, p.dim) for p in el.ports()),
            el.dim if el.category.is_junction else None,
            tuple(sorted((k, _canon(_written(el, v))) for k, v in params.items())),
            tuple(sorted((k, v) for k, v in held.items() if v is not None)))


def _element_table(el: Element) -> dict[str, Any]:
    where = f"element '{el.name}' ({el.kind})"
    if ELEMENT_TYPES.get(el.kind) is not type(el):
        raise GraphFileError(f"{where}: its class {type(el).__name__} is not the registered "
                             f"class of kind {el.kind!r}; register it (register_element) so "
                             f"that a file can name it")
    params = el.parameters()
    table: dict[str, Any] = {"name": el.name, "kind": el.kind}
    for k, v in {**params, **_extras(el, params)}.items():
        if k in ("name", "kind"):
            raise GraphFileError(f"{where}: its parameter {k!r} clashes with the file's own "
                                 f"key")
        if v is not None:
            table[k] = _encode(_written(el, v), f"{where}: '{k}'")
    return table


# ---------------------------------------------------------------------------------------
# Differences between graphs
# ---------------------------------------------------------------------------------------

def graph_differences(a: BondGraph, b: BondGraph) -> list[str]:
    """Every difference between graphs ``a`` and ``b`` (empty when they are identical):
    the name; the elements in order (name, kind, class, ports and dims, parameters,
    the constructor values they hold); the bonds in order (name, ends, ports, dim); the
    kinematic and work states; the declared parameters (value, unit, meaning, rule);
    the component ports. Numbers compare by value, expressions by their exact form."""
    out = []
    if a.name != b.name:
        out.append(f"name: {a.name!r} vs {b.name!r}")
    ea, eb = a.elements, b.elements
    if list(ea) != list(eb):
        out.append(f"elements: {list(ea)} vs {list(eb)}")
    for n in ea.keys() & eb.keys():
        fa, fb = _fingerprint(ea[n]), _fingerprint(eb[n])
        if fa != fb:
            parts = ("class", "kind", "name", "ports", "dim", "parameters", "held values")
            which = [p for p, x, y in zip(parts, fa, fb) if x != y]
            out.append(f"element '{n}': {', '.join(which)} differ")
    ba = [(x.name, x.tail, x.head, x.tail_port, x.head_port, x.dim) for x in a.bonds]
    bb = [(x.name, x.tail, x.head, x.tail_port, x.head_port, x.dim) for x in b.bonds]
    if ba != bb:
        out.append(f"bonds: {[x for x in ba if x not in bb]} vs {[x for x in bb if x not in ba]}")
    if a.kinematic_states != b.kinematic_states:
        out.append("kinematic states differ")
    if a.work_states != b.work_states:
        out.append("work states differ")
    pa, pb = a.parameters.declarations(), b.parameters.declarations()
    if pa != pb:
        out.append(f"parameters: {pa} vs {pb}")
    if a.component_ports != b.component_ports:
        out.append(f"component ports: {a.component_ports} vs {b.component_ports}")
    return out


# ---------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------

def _symbols_table(graph: BondGraph) -> dict[str, dict[str, bool]]:
    """Assumptions of the symbols the elements use that a reader would not give them
    (a declared parameter's symbol is real; any other name a plain symbol)."""
    declared = set(graph.parameters.names)
    found: dict[str, sympy.Symbol] = {}

    def visit(v):
        if isinstance(v, sympy.Basic) or isinstance(v, sympy.MatrixBase):
            for s in v.free_symbols:
                if s.name in found and found[s.name] != s:
                    raise GraphFileError(f"two symbols named {s.name!r} with different "
                                         f"assumptions; a file names each symbol once")
                found[s.name] = s
        elif isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.dtype == object):
            for x in (v.ravel() if isinstance(v, np.ndarray) else v):
                visit(x)

    for el in graph.elements.values():
        for v in el.parameters().values():
            visit(v)
    out = {}
    for name, s in found.items():
        expected = parameter_symbol(name) if name in declared else sympy.Symbol(name)
        if s != expected:
            out[name] = dict(s._assumptions_orig)
    return out


def dumps_graph(graph: BondGraph, *, initial: Mapping[str, Any] | None = None,
                solver: GraphSolver | None = None, output: GraphOutput | None = None
                ) -> str:
    """The text of the file :func:`save_graph` writes (checked to read back to an
    identical graph)."""
    if not isinstance(graph, BondGraph):
        raise GraphFileError(f"save_graph: expected a BondGraph, got {type(graph).__name__}")
    parts = [f"# bond graph '{graph.name}' (vector-bondgraph model file; read it with "
             f"bondgraph.load_graph,\n# run it with `bondgraph run FILE --out DIR`)\n",
             table_text("bondgraph", {"name": graph.name, "format": FORMAT})]
    syms = _symbols_table(graph)
    if syms:
        parts.append(table_text("symbols", syms))
    decl = graph.parameters.declarations()
    if decl:
        parts.append(table_text("parameters", {
            p.name: {"value": p.value, **({"unit": p.unit} if p.unit else {}),
                     **({"meaning": p.meaning} if p.meaning else {}),
                     **({"positive": True} if p.positive else {})} for p in decl}))
    for el in graph.elements.values():
        parts.append(table_text("element", _element_table(el), array=True))
    els = graph.elements
    for b in graph.bonds:
        row: dict[str, Any] = {"name": b.name, "tail": b.tail, "head": b.head}
        for end, port, as_tail in ((b.tail, b.tail_port, True), (b.head, b.head_port, False)):
            el = els[end]
            if el.category.is_junction:
                continue
            default = ("out" if as_tail else "in") if el.category.is_two_port \
                else el.ports()[0].name
            if port != default:
                row["tail_port" if as_tail else "head_port"] = port
        if b.dim != 1:
            row["dim"] = b.dim
        parts.append(table_text("bond", row, array=True))
    if graph.component_ports:
        parts.append(table_text("ports", graph.component_ports))
    for ks in graph.kinematic_states:
        if ks.rate is not None:
            raise GraphFileError(f"kinematic state '{ks.name}': its rate is a Python function; "
                                 f"a file holds kinematic states whose rate is their flow "
                                 f"(rate=None) only")
        row = {"name": ks.name, "source": list(ks.sources) if not isinstance(ks.source, str)
               else ks.source, "dim": ks.dim}
        if ks.reads:
            row["reads"] = list(ks.reads)
        if ks.vectorized:
            row["vectorized"] = True
        parts.append(table_text("kinematic_state", row, array=True))
    for ws in graph.work_states:
        parts.append(table_text("work_state", {"name": ws.name, "source": ws.source},
                                array=True))
    if initial:
        parts.append(table_text("initial", {k: _encode(np.asarray(v, dtype=float).tolist(),
                                                       f"initial '{k}'")
                                            for k, v in initial.items()}))
    if solver is not None:
        s = {"t_start": solver.t_start, "t_end": solver.t_end, "points": solver.points,
             "method": solver.method, "rtol": solver.rtol}
        s.update({k: getattr(solver, k) for k in ("atol", "max_step", "max_steps",
                                                  "max_wall_time")
                  if getattr(solver, k) is not None})
        if solver.stabilization is not None:
            s["stabilization"] = {"alpha": solver.stabilization[0],
                                  "beta": solver.stabilization[1]}
        parts.append(table_text("solver", s))
    if output is not None:
        parts.append(table_text("output", {"diagram": output.diagram}))
    text = "\n".join(parts)
    back = loads_graph(text, f"<the file of graph '{graph.name}'>").graph
    diff = graph_differences(graph, back)
    if diff:
        raise GraphFileError([f"graph '{graph.name}' cannot be saved faithfully (it would "
                              f"read back different): {d}" for d in diff])
    return text


def save_graph(graph: BondGraph, path: str | os.PathLike, *,
               initial: Mapping[str, Any] | None = None, solver: GraphSolver | None = None,
               output: GraphOutput | None = None) -> str:
    """Write ``graph`` as a TOML bond graph file at ``path`` (whole or not at all; only
    that file is written). :func:`load_graph` reads it back to an identical graph
    (checked before writing: see :func:`graph_differences`).

    Parameters
    ----------
    graph : BondGraph
    path : str or PathLike
    initial : mapping of state name to value, optional
        The initial state ``bondgraph run`` starts from (momenta in kg m/s or V s,
        displacements in m, rad or C; states not named start at zero).
    solver : GraphSolver, optional
        Time span (s), points, method and tolerances for ``bondgraph run``.
    output : GraphOutput, optional

    Returns
    -------
    str
        The path written.

    Raises
    ------
    GraphFileError
        Naming the element and key whose value a file cannot hold (a TimeFunction, a
        StateFunction, a Python callable, a kinematic state with a rate function) and
        what to use instead.
    """
    text = dumps_graph(graph, initial=initial, solver=solver, output=output)
    write_text(path, text)
    return os.fspath(path)


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------

def loads_graph(text: str, path: str = "<string>") -> GraphFile:
    """Parse bond graph file text (see the module docstring).

    Raises
    ------
    GraphFileError
        Naming ``path``, the table and the key, and what is valid; a TOML syntax error
        with its line and column.
    """
    doc = read_toml(text, path, GraphFileError)
    return read_document(doc, path)


def load_graph_file(path: str | os.PathLike) -> GraphFile:
    """Read a bond graph file: the graph, its initial state, solver and output settings.

    Raises
    ------
    GraphFileError
        Naming the file, the table and the key, and saying what is valid.
    """
    path = os.fspath(path)
    text = read_text(path, "bond graph file", GraphFileError)
    return loads_graph(text, path)


def load_graph(path: str | os.PathLike) -> BondGraph:
    """The graph of the bond graph file ``path`` (see :func:`load_graph_file` for its
    run settings too).

    Raises
    ------
    GraphFileError
        Naming the file, the table and the key, and saying what is valid.
    """
    return load_graph_file(path).graph


def is_graph_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a bond graph file: TOML with a top-level ``[bondgraph]``
    table (False for anything else, a mechanism model file or unreadable text
    included: its own reader reports those)."""
    try:
        doc = read_toml(read_text(path, "file"), os.fspath(path))
    except ModelError:
        return False
    return isinstance(doc.get("bondgraph"), dict)

