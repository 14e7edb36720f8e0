"""Reading bond graph files (:mod:`bondgraph.graphfile`): what a file holds
(:class:`GraphFile`, :class:`GraphSolver`, :class:`GraphOutput`), the checked reading of
its tables (:func:`read_document`) and the values in them (:func:`decode`). Every error
is a :class:`GraphFileError` naming the file, the table and the key."""

from __future__ import annotations

import inspect
import math
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

try:                                   # (sympy's names of assumptions)
    from sympy.core.assumptions import _assume_defined
except ImportError:                    # pragma: no cover
    _assume_defined = frozenset(("real", "positive", "negative", "nonnegative",
                                 "nonpositive", "nonzero", "integer", "rational",
                                 "finite", "complex", "zero", "even", "odd", "prime"))

from ._files import MAX_POINTS, output_name
from .element import ELEMENT_TYPES, TimeFunction
from .errors import ModelError, did_you_mean
from .expressions import parse_expression
from .graph import BondGraph
from .options import Budget, SaveAt, Solver
from ._tables import TableReader
from .parameters import symbol as parameter_symbol
from .primitives import MAX_DIM, KinematicState, WorkState

__all__ = ["GraphFileError", "GraphSolver", "GraphOutput", "GraphFile", "read_document",
           "decode", "keywords", "FORMAT", "TOP_TABLES", "GRAPH_RUN_FILES", "MAX_POINTS"]

FORMAT = 1
"""The version of the format, written as ``[bondgraph] format``."""

TOP_TABLES = ("bondgraph", "symbols", "parameters", "element", "bond", "ports",
              "kinematic_state", "work_state", "initial", "solver", "output")
"""The tables a bond graph file may have."""

GRAPH_RUN_FILES = ("states.csv", "bonds.csv", "constraint_forces.csv", "summary.json",
                   "manifest.json")
"""The files ``bondgraph run`` writes for a bond graph file (besides the diagram)."""

_TAGS = ("expr", "matrix", "array")


class GraphFileError(ModelError):
    """Fires when a bond graph file is malformed, or a graph cannot be saved; names the
    file, the table (``[element 'La']``) and the key, and says what is valid."""


@dataclass(frozen=True)
class GraphSolver:
    """How ``bondgraph run`` simulates the graph: time span (s), output points, the
    method (a name of :data:`bondgraph.simulation.METHODS`), tolerances (``atol`` None:
    a fraction of each state's nominal scale, as :func:`bondgraph.simulate`'s default),
    the Baumgarte gains (alpha, beta in 1/s; None: no stabilisation), the largest step
    (s; None: as ``simulate``: a periodic source bounds it) and the budget: accepted
    steps and wall-clock seconds (None: none)."""

    t_start: float = 0.0
    t_end: float = 1.0
    points: int = 101
    method: str = "DOP853"
    rtol: float = 1e-9
    atol: float | None = None
    stabilization: tuple[float, float] | None = None
    max_step: float | None = None
    max_steps: int | None = None
    max_wall_time: float | None = None

    @property
    def t_eval(self) -> np.ndarray:
        """The output times (s)."""
        return np.linspace(self.t_start, self.t_end, self.points)

    def options(self) -> tuple[Solver, SaveAt, Budget]:
        """These settings as :func:`bondgraph.simulate`'s option objects (the span and
        the stabilisation aside)."""
        return (Solver(method=self.method, rtol=self.rtol, atol=self.atol,
                       max_step=self.max_step), SaveAt(t=self.t_eval),
                Budget(max_steps=self.max_steps, max_wall_time=self.max_wall_time))


@dataclass(frozen=True)
class GraphOutput:
    """What ``bondgraph run`` writes besides its CSV and JSON files: the diagram's name
    (SVG, PNG or PDF; its DOT text goes beside it)."""

    diagram: str = "bond_graph.svg"


@dataclass
class GraphFile:
    """Everything a bond graph file says: the graph, the initial state (state name ->
    value; states not named start at zero), the solver settings (None: the file has no
    ``[solver]``) and the outputs."""

    graph: BondGraph
    initial: dict[str, Any] = field(default_factory=dict)
    solver: GraphSolver | None = None
    output: GraphOutput = field(default_factory=GraphOutput)
    source: str = "<python>"


def keywords(klass: type) -> dict[str, inspect.Parameter]:
    """An element class's constructor keywords after the name (empty when it takes
    any keyword)."""
    params = list(inspect.signature(klass.__init__).parameters.values())[2:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return {}
    return {p.name: p for p in params
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          inspect.Parameter.KEYWORD_ONLY)}


def decode(v: Any, where: str, symbols: Mapping[str, sympy.Symbol]) -> Any:
    """A TOML value as Python: tables holding expressions parsed (never executed)."""
    if isinstance(v, list):
        return [decode(x, where, symbols) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1 and isinstance(v.get("table"), dict):
        return _table(v["table"], where)
    if len(v) != 1 or next(iter(v)) not in _TAGS or \
            not isinstance(next(iter(v.values())), str):
        raise GraphFileError(f"{where}: a table here holds one expression: {{ expr = \"...\" "
                             f"}}, {{ matrix = \"[[...], ...]\" }} or {{ array = \"[...]\" }}; "
                             f"got keys {', '.join(v) or 'none'}")
    (tag, text), = v.items()
    try:
        value = parse_expression(text, symbols=symbols, where=f"{where} {tag}")
    except GraphFileError:
        raise
    except ModelError as exc:
        raise GraphFileError(str(exc)) from None
    if tag == "matrix":
        try:
            return sympy.Matrix(value if isinstance(value, list) else [[value]])
        except (ValueError, TypeError) as exc:
            raise GraphFileError(f"{where}: matrix {text!r} is not a list of equal-length "
                                 f"rows ({exc})") from None
    if tag == "array":
        return np.array(value, dtype=object)
    return value


def _table(spec: dict, where: str) -> TimeFunction:
    """``{ table = { t = [...], value = [...], breaks = true } }``: a
    :meth:`TimeFunction.table` (times in s, one value or row per time)."""
    unknown = sorted(set(spec) - {"t", "value", "breaks"})
    if unknown or "t" not in spec or "value" not in spec:
        raise GraphFileError(f"{where}: a table holds t (times, s), value (one per time) and "
                             f"optionally breaks (true or false); got keys "
                             f"{', '.join(spec) or 'none'}")
    breaks = spec.get("breaks", True)
    if not isinstance(breaks, bool):
        raise GraphFileError(f"{where} table: 'breaks' must be true or false, got "
                             f"{breaks!r}")
    try:
        return TimeFunction.table(spec["t"], spec["value"], breaks=breaks,
                                  where=f"{where} table")
    except ModelError as exc:
        raise GraphFileError(str(exc)) from None


class _Reader(TableReader):
    error = GraphFileError


def _hints(klass: type) -> dict[str, Any]:
    """The type annotations of ``klass``'s constructor keywords (empty when they cannot
    be resolved: the element then checks its values itself)."""
    try:
        return typing.get_type_hints(klass.__init__)
    except Exception:               # (an annotation naming what is not importable)
        return {}


def _quoted_hint(table: str) -> str:
    return (f"; a name with a dot must be quoted in [{table}] (\"m2.mass\" = ...), or TOML "
            f"reads it as a nested table")


def read_document(doc: dict, path: str) -> GraphFile:
    """The :class:`GraphFile` of a parsed TOML document ``doc`` read from ``path``."""
    r = _Reader(path)
    if "bondgraph" not in doc:
        r.fail("top level", "bondgraph", "missing: a bond graph file starts with a "
                                         "[bondgraph] table (name = \"...\")")
    mech = [k for k in ("model", "body", "joint", "robot") if k in doc]
    if mech:
        r.fail("top level", mech[0], "a mechanism model file's table in a bond graph file; "
                                     "a file is one or the other")
    r.only(doc, "top level", TOP_TABLES)
    head = r.table(doc, "bondgraph")
    r.only(head, "bondgraph", ("name", "format"))
    stem = os.path.splitext(os.path.basename(path))[0] or "model"
    name = r.string(head, "bondgraph", "name", default=stem)
    fmt = r.integer(head, "bondgraph", "format", FORMAT, 1, FORMAT)
    del fmt
    try:
        bg = BondGraph(name)
    except ModelError as exc:
        r.fail("bondgraph", "name", str(exc))
    symbols = _parameters(r, doc, bg)
    _elements(r, doc, bg, symbols)
    _ports(r, doc, bg)
    _bonds(r, doc, bg)
    _states(r, doc, bg)
    return GraphFile(bg, _initial(r, doc), _solver(r, doc), _output(r, doc), path)


def _parameters(r: _Reader, doc: dict, bg: BondGraph) -> dict[str, sympy.Symbol]:
    """Declares the parameters; returns the symbol of every name with assumptions."""
    symbols: dict[str, sympy.Symbol] = {}
    for pname, spec in r.table(doc, "parameters").items():
        where = "parameters"
        if isinstance(spec, dict):
            if "value" not in spec:
                r.fail(where, pname, "a table needs 'value' (and optional unit, meaning, "
                                     f"positive){_quoted_hint(where)}")
            r.only(spec, f"{where} {pname}", ("value", "unit", "meaning", "positive"))
            pos = r.boolean(spec, f"{where} {pname}", "positive", False)
            args = (r.number(spec, f"{where} {pname}", "value"),
                    r.string(spec, f"{where} {pname}", "unit", ""),
                    r.string(spec, f"{where} {pname}", "meaning", ""), pos)
        else:
            args = (r.number({pname: spec}, where, pname), "", "", False)
        try:
            bg.add_parameter(pname, args[0], args[1], args[2], positive=args[3])
        except ModelError as exc:
            r.fail(where, pname, str(exc))
        symbols[pname] = parameter_symbol(pname)
    for sname, spec in r.table(doc, "symbols").items():
        where = f"symbols {sname}"
        if not isinstance(spec, dict):
            r.fail("symbols", sname, f"must be a table of assumptions, e.g. {{ positive = "
                                     f"true }}{_quoted_hint('symbols')}")
        r.only(spec, where, sorted(_assume_defined))
        for k, v in spec.items():
            if not isinstance(v, bool):
                r.fail(where, k, f"must be true or false, got {v!r}")
        try:
            symbols[sname] = sympy.Symbol(sname, **spec)
        except (ValueError, TypeError) as exc:
            r.fail("symbols", sname, f"inconsistent assumptions: {exc}")
    return symbols


def _elements(r: _Reader, doc: dict, bg: BondGraph, symbols: dict) -> None:
    seen: dict[str, int] = {}
    for k, t in enumerate(r.tables(doc, "element")):
        where = f"element {k + 1}"
        name = r.string(t, where, "name")
        where = f"element '{name}'"
        if name in seen:
            r.fail(where, "name", f"duplicate name {name!r} (also element {seen[name]}); "
                                  f"names must be unique")
        seen[name] = k + 1
        kind = r.string(t, where, "kind")
        klass = ELEMENT_TYPES.get(kind)
        if klass is None:
            r.fail(where, "kind", f"unknown kind {kind!r}{did_you_mean(kind, ELEMENT_TYPES)} "
                                  f"registered kinds: {', '.join(sorted(ELEMENT_TYPES))} "
                                  f"(a library's kinds are registered when it is imported)")
        allowed = keywords(klass)
        if allowed:
            r.only(t, f"{where} ({kind})", ("name", "kind", *allowed))
        hints = _hints(klass)
        kwargs = {}
        for key, v in t.items():
            if key not in ("name", "kind"):
                value = decode(v, f"{r.path}: [{where}] '{key}'", symbols)
                kwargs[key] = r.typed(value, hints[key], where, key) if key in hints \
                    else value
        try:
            el = klass(name, **kwargs)
        except ModelError as exc:
            r.fail(where, None, str(exc))
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            r.fail(where, None, f"kind {kind!r} refused these keywords "
                                f"({', '.join(kwargs) or 'none'}): {exc}")
        problems = el.problems()
        if problems:
            r.fail(where, None, "; ".join(problems))
        try:
            bg.add(el)
        except ModelError as exc:
            r.fail(where, "name", str(exc))


def _ports(r: _Reader, doc: dict, bg: BondGraph) -> None:
    for port, target in r.table(doc, "ports").items():
        if not isinstance(target, str) or target not in bg.elements:
            r.fail("ports", port, f"must name an element of the file, got {target!r}"
                                  f"{did_you_mean(target, bg.elements)}")
        if port in bg:
            r.fail("ports", port, "a component port cannot have an element's name")
        bg._component_ports[port] = target


def _bonds(r: _Reader, doc: dict, bg: BondGraph) -> None:
    seen: set[str] = set()
    for k, t in enumerate(r.tables(doc, "bond")):
        where = f"bond {k + 1}"
        r.only(t, where, ("name", "tail", "head", "tail_port", "head_port", "dim"))
        name = r.string(t, where, "name", default="") or None
        if name is not None:
            where = f"bond '{name}'"
            if name in seen:
                r.fail(where, "name", f"duplicate bond name {name!r}; names must be unique")
            seen.add(name)
        ends = {}
        for key in ("tail", "head"):
            end = r.string(t, where, key)
            if end not in bg:
                r.fail(where, key, f"no element {end!r}{did_you_mean(end, bg.elements)} "
                                   f"(a bond joins two elements of the file)")
            ends[key] = end
        ports = {key: r.string(t, where, key) if key in t else None
                 for key in ("tail_port", "head_port")}
        dim = r.integer(t, where, "dim", 1, 1, MAX_DIM) if "dim" in t else None
        try:
            b = bg.connect(ends["tail"], ends["head"], name=name, dim=dim, **ports)
        except ModelError as exc:
            r.fail(where, None, str(exc))
        seen.add(b.name)


def _states(r: _Reader, doc: dict, bg: BondGraph) -> None:
    for k, t in enumerate(r.tables(doc, "kinematic_state")):
        where = f"kinematic_state {k + 1}"
        r.only(t, where, ("name", "source", "dim", "reads", "vectorized"))
        name = r.string(t, where, "name")
        where = f"kinematic_state '{name}'"
        src = r.names(t, where, "source")
        if not src:
            r.fail(where, "source", "missing: the element, junction or bond whose flow the "
                                    "state integrates")
        vec = r.boolean(t, where, "vectorized", False)
        try:
            bg.add_kinematic_state(KinematicState(
                name, src[0] if isinstance(t["source"], str) else src,
                r.integer(t, where, "dim", 1, 1, MAX_DIM), None,
                r.names(t, where, "reads"), vec))
        except ModelError as exc:
            r.fail(where, "name", str(exc))
    for k, t in enumerate(r.tables(doc, "work_state")):
        where = f"work_state {k + 1}"
        r.only(t, where, ("name", "source"))
        name = r.string(t, where, "name")
        try:
            bg.add_work_state(WorkState(name, r.string(t, f"work_state '{name}'", "source")))
        except ModelError as exc:
            r.fail(f"work_state '{name}'", "name", str(exc))


def _initial(r: _Reader, doc: dict) -> dict[str, Any]:
    out = {}
    for key, v in r.table(doc, "initial").items():
        flat = v if isinstance(v, list) else [v]
        if isinstance(v, dict) or not flat or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in flat):
            r.fail("initial", key, f"must be a finite number or a list of them (one per "
                                   f"component of the state), got {v!r}"
                                   + (_quoted_hint("initial") if isinstance(v, dict) else ""))
        out[key] = float(v) if not isinstance(v, list) else [float(x) for x in v]
    return out


def _solver(r: _Reader, doc: dict) -> GraphSolver | None:
    if "solver" not in doc:
        return None
    s, w = r.table(doc, "solver"), "solver"
    r.only(s, w, ("t_start", "t_end", "points", "method", "rtol", "atol", "stabilization",
                  "max_step", "max_steps", "max_wall_time"))
    t0 = r.number(s, w, "t_start", 0.0)
    t1 = r.number(s, w, "t_end")
    if t1 <= t0:
        r.fail(w, "t_end", f"must be greater than t_start ({t0}), got {t1}")
    stab = None
    if "stabilization" in s and s["stabilization"] != "none":
        st = s["stabilization"]
        if not isinstance(st, dict):
            r.fail(w, "stabilization", f"must be \"none\" or {{ alpha = .., beta = .. }}, "
                                       f"got {st!r}")
        r.only(st, f"{w} stabilization", ("alpha", "beta"))
        stab = (r.number(st, f"{w} stabilization", "alpha", nonneg=True),
                r.number(st, f"{w} stabilization", "beta", nonneg=True))
    given = {k: r.number(s, w, k, positive=True) for k in ("atol", "max_step",
                                                             "max_wall_time") if k in s}
    if "max_steps" in s:
        given["max_steps"] = r.integer(s, w, "max_steps", 1, 1, 10 ** 15)
    return GraphSolver(t0, t1, r.integer(s, w, "points", 101, 2, MAX_POINTS),
                       r.string(s, w, "method", "DOP853"),
                       r.number(s, w, "rtol", 1e-9, positive=True), stabilization=stab,
                       **given)


def _output(r: _Reader, doc: dict) -> GraphOutput:
    o = r.table(doc, "output")
    r.only(o, "output", ("diagram",))
    diagram = r.string(o, "output", "diagram", "bond_graph.svg")
    try:
        output_name(diagram, (".svg", ".png", ".pdf"), GRAPH_RUN_FILES)
    except ValueError as exc:
        r.fail("output", "diagram", str(exc))
    return GraphOutput(diagram)
