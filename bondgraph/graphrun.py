"""Running a bond graph file (:mod:`bondgraph.graphfile`): what ``bondgraph run``,
``render`` and ``equations`` do with one.

- :func:`simulate_graph_file`: assemble and simulate a :class:`GraphFile` as its
  ``[initial]`` and ``[solver]`` say.
- :func:`run_graph_file`: that, and every result written into a folder: states.csv,
  bonds.csv (each bond's effort and flow), constraint_forces.csv (when the graph has
  unknown effort sources), summary.json, the diagram (DOT always; SVG, PNG or PDF when
  Graphviz's ``dot`` is installed) and manifest.json (the list of files written, so that
  a later run into the folder replaces exactly those).
- :func:`graph_equations_text`: the symbolic state equations as text or LaTeX.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ._files import atomic_open, write_text
from .bonds import component_names
from ._graphfile_read import GRAPH_RUN_FILES, GraphFile, GraphFileError
from .causality import assign_causality
from .errors import BondGraphError, ModelError
from .graph import BondGraph
from .reduction import StateSpaceModel, assemble
from .results import SimulationResult
from .simulation import METHODS, simulate
from .stabilization import Baumgarte
from .viz import render

__all__ = ["assemble_graph_file", "simulate_graph_file", "run_graph_file", "graph_equations_text",
           "numeric_equations_text", "GRAPH_RUN_FILES"]


def _initial(spec: GraphFile, model: StateSpaceModel) -> dict[str, Any]:
    """Every state's initial value: the file's, zero for the others."""
    unknown = [n for n in spec.initial if n not in model.state_slices]
    if unknown:
        raise GraphFileError(f"{spec.source}: [initial] '{unknown[0]}': no such state; the "
                             f"states are {', '.join(model.state_names)}")
    return {n: spec.initial.get(n, np.zeros(s.stop - s.start))
            for n, s in model.state_slices.items()}


def assemble_graph_file(spec: GraphFile) -> tuple[StateSpaceModel, dict[str, Any]]:
    """The assembled model of ``spec.graph`` and its initial state (the file's
    ``[initial]``; states it does not name start at zero).

    Raises
    ------
    GraphFileError
        An unknown state in ``[initial]``, or what the assembly finds wrong (naming the
        element), prefixed with the file.
    """
    try:
        model = assemble(assign_causality(spec.graph))
        return model, _initial(spec, model)
    except GraphFileError:
        raise
    except ModelError as exc:
        raise GraphFileError(f"{spec.source}: {exc}") from None


def simulate_graph_file(spec: GraphFile, *, progress: Callable[[float], None] | None = None
                        ) -> tuple[StateSpaceModel, SimulationResult]:
    """Assemble ``spec.graph`` (with its declared parameters' values) and simulate it
    from its initial state (states the file does not name start at zero) with its
    ``[solver]`` settings.

    Raises
    ------
    GraphFileError
        When the file has no ``[solver]``, names an unknown method or state.
    ModelError
        What the assembly finds wrong (naming the element), prefixed with the file.
    """
    s = spec.solver
    if s is None:
        raise GraphFileError(f"{spec.source}: [solver] missing: a run needs at least "
                             f"[solver] t_end = ... (s)")
    if s.method not in METHODS:
        raise GraphFileError(f"{spec.source}: [solver] 'method': unknown method "
                             f"{s.method!r}; valid: {', '.join(METHODS)}")
    model, x0 = assemble_graph_file(spec)
    stab = Baumgarte(*s.stabilization) if s.stabilization else None
    solver, save, budget = s.options()
    result = simulate(model, (s.t_start, s.t_end), x0, solver=solver, save=save,
                      budget=budget, stabilization=stab, progress=progress)
    return model, result


def _columns(names_slices: Mapping[str, slice], values: np.ndarray
             ) -> tuple[list[str], list[np.ndarray]]:
    """Column names (``name``, or ``name[k]`` for a vector) and rows of ``values``."""
    heads = component_names((n, sl.stop - sl.start) for n, sl in names_slices.items())
    return heads, [values[sl][k] for sl in names_slices.values()
                   for k in range(sl.stop - sl.start)]


def _write_csv(path: str, t: np.ndarray, heads: list[str], cols: list[np.ndarray]) -> str:
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(["t", *(json.dumps(h) if "," in h or '"' in h else h
                                for h in heads)]) + "\n")
        data = np.column_stack([t, *cols]) if cols else t[:, None]
        for row in data:
            f.write(",".join(repr(float(v)) for v in row) + "\n")
    return path


def run_graph_file(spec: GraphFile, out_dir: str | os.PathLike, *,
                   progress: Callable[[float], None] | None = None, quiet: bool = True
                   ) -> tuple[SimulationResult, dict[str, str]]:
    """Simulate ``spec`` (:func:`simulate_graph_file`) and write the results into
    ``out_dir`` (created when missing; only files inside it are written, and a previous
    run's files listed in its manifest.json are removed first): states.csv (t in s, the
    states), bonds.csv (``<bond>.e`` and ``<bond>.f`` of every bond), constraint_forces.csv
    (every Se*'s effort, when there are any), summary.json (status, message, counts,
    the parameters' values, the largest step and why, the sources' breaks, the states
    that stayed below their absolute tolerance) and the diagram of the causal graph.

    Returns
    -------
    (SimulationResult, dict)
        The result and the paths written, by kind.
    """
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise GraphFileError(f"output directory {out_dir!r} is an existing file; give a "
                             f"directory (it is created when missing)")
    model, result = simulate_graph_file(spec, progress=progress)
    os.makedirs(out_dir, exist_ok=True)
    _remove_previous_run(out_dir)
    paths: dict[str, str] = {}
    try:
        t = result.t
        paths["states"] = _write_csv(os.path.join(out_dir, "states.csv"), t,
                                     *_columns(model.state_slices, result.x))
        bonds = {f"{b}.{q}": sl for b, (e, f) in model.bond_slices.items()
                 for q, sl in (("e", e), ("f", f))}
        paths["bonds"] = _write_csv(os.path.join(out_dir, "bonds.csv"), t,
                                    *_columns(bonds, result.bond_values))
        if result.constraint_forces:
            forces = result.constraint_forces
            heads = component_names((n, v.shape[0]) for n, v in forces.items())
            cols = [row for v in forces.values() for row in v]
            paths["constraint_forces"] = _write_csv(
                os.path.join(out_dir, "constraint_forces.csv"), t, heads, cols)
        summary = {"model": spec.graph.name, "source": spec.source,
                   "status": result.status.name, "message": result.message,
                   "success": bool(result.success), "failure_time": result.failure_time,
                   "points": int(t.size), "nfev": int(result.nfev),
                   "n_steps": int(result.n_steps), "states": list(model.state_names),
                   "unknown_sources": list(model.unknown_sources),
                   "parameters": {k: float(v) for k, v in spec.graph.parameters.items()},
                   "max_step": (result.diagnostics["max_step"] if np.isfinite(
                       result.diagnostics.get("max_step", np.inf)) else None),
                   "max_step_reason": result.diagnostics.get("max_step_reason"),
                   "breaks": result.diagnostics.get("breaks"),
                   "below_atol": {k: {"max_abs": p, "atol": a, "scale": sc}
                                  for k, (p, a, sc) in
                                  result.diagnostics.get("below_atol", {}).items()},
                   "units": {"t": "s"}}
        paths["summary"] = os.path.join(out_dir, "summary.json")
        write_text(paths["summary"], json.dumps(summary, indent=1, ensure_ascii=False))
        diagram = os.path.join(out_dir, spec.output.diagram)
        paths["dot"] = os.path.splitext(diagram)[0] + ".dot"
        try:
            paths["diagram"] = render(model.causal, diagram)
        except BondGraphError as exc:
            if not quiet:
                print(f"diagram: {exc}")
    finally:
        written = sorted({os.path.basename(p) for p in paths.values()
                          if os.path.exists(p)})
        if written:
            write_text(os.path.join(out_dir, "manifest.json"),
                       json.dumps({"files": written}, indent=1, ensure_ascii=False))
    return result, paths


def _remove_previous_run(out_dir: str) -> None:
    """Remove the files a previous run listed in ``out_dir``'s manifest.json (never
    others)."""
    path = os.path.join(out_dir, "manifest.json")
    if not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8") as f:
            files = json.load(f).get("files", [])
    except (OSError, ValueError, AttributeError):
        files = []
    for name in (files if isinstance(files, list) else []) + ["manifest.json"]:
        target = os.path.join(out_dir, os.path.basename(str(name)))
        if os.path.isfile(target):
            os.remove(target)


def graph_equations_text(graph: BondGraph, *, latex: bool = False) -> str:
    """The state equations of ``graph`` derived symbolically
    (:func:`bondgraph.symbolic_equations`): one line ``d<state>/dt = ...`` per state, the
    unknown efforts U_2 when there are any; with ``latex``, an ``aligned`` block."""
    from .symbolic import symbolic_equations
    eq = symbolic_equations(graph)
    if latex:
        return eq.latex()
    branch = "" if eq.branch == "none" else f"; U_2 from Eq. ({eq.branch})"
    lines = [f"bond graph {graph.name}: {len(eq.states)} states "
             f"({', '.join(str(s) for s in eq.states)}){branch}"]
    lines += [f"d{s}/dt = {e}" for s, e in zip(eq.states, eq.xdot)]
    if len(eq.U2):
        lines += [f"U_2[{k}] = {u}" for k, u in enumerate(eq.U2)]
    return "\n".join(lines)


def numeric_equations_text(model: StateSpaceModel, t: float,
                           x: np.ndarray | Mapping[str, Any], *,
                           latex: bool = False, title: str | None = None) -> str:
    """The state equations of an assembled ``model`` at the state ``x`` (time ``t``, s),
    with every row and column named: the counts (state components, known and unknown
    source components), the states, U_2, then ``dX/dt = T_X X + T_U1 U_1 + T_U2 U_2`` row
    by row with its non-zero terms, and the matrices T_X, T_U1, T_U2 (and H_4 in the
    Eq. (15) branch) as labelled tables (with ``latex``, ``bmatrix`` blocks with their
    labels in comments).

    X is the energy states' components (momenta and displacements of storage elements);
    the kinematic states (body positions, orientations, joint coordinates) follow from
    flows and the work states integrate source powers, so they have no rows here.
    Component names follow :func:`bondgraph.bonds.component_names`; ``x`` is a state
    vector or a mapping of state names to values."""
    if isinstance(x, Mapping):
        x = model.initial_state(x)
    ev = model.evaluate(t, x)
    slices = model.state_slices
    sizes = {n: sl.stop - sl.start for n, sl in slices.items()}
    energy = [model.graph.element(n).state_name for n in model.storage]
    work = {w.name for w in model.work}
    kinematic = [n for n in model.state_names if n not in energy and n not in work]
    rows = component_names((n, sizes[n]) for n in energy)
    u1 = component_names(zip(model.sources, model.u1_dims))
    u2 = component_names(zip(model.unknown_sources, model.u2_dims))
    count = (lambda names: sum(sizes[n] for n in names))
    lines = [f"{title or 'model ' + model.graph.name}: {model.n_states} state components in "
             f"{len(model.state_names)} states: {count(energy)} energy components in "
             f"{len(energy)} storage states (X)"
             + (f", {count(kinematic)} kinematic in {len(kinematic)}" if kinematic else "")
             + (f", {len(work)} work" if work else ""),
             f"known sources U_1: {model.n_u1} components in {len(model.sources)} sources",
             f"unknown effort sources U_2: {len(u2)} components in "
             f"{len(model.unknown_sources)} sources",
             "states (components): " + ", ".join(f"{n} ({sizes[n]})"
                                                 for n in model.state_names),
             ("dX/dt = T_X X + T_U1 U_1 (no unknown efforts)" if not u2 else
              f"dX/dt = T_X X + T_U1 U_1 + T_U2 U_2, U_2 from Eq. ({ev.branch})")
             + (": H_4 U_2 = -(H_X X + H_3 U_1 + J_CU1 dU_1/dt + dJ_CZ/dt Z + dJ_CU1/dt U_1),"
                " one row per U_2 component (its constraint flow's rate)"
                if ev.H4 is not None else ""),
             f"at t = {t:g} s:"]
    lines.append("U_1 = " + (", ".join(f"{n} = {v:.6g}" for n, v in zip(u1, ev.U1))
                             or "(none)"))
    lines.append("U_2 = " + (", ".join(f"{n} = {v:.6g}" for n, v in zip(u2, ev.U2))
                             or "(none)"))
    lines.append("dX/dt row by row (non-zero terms; X, U_1, U_2 by name):")
    for i, name in enumerate(rows):
        terms = [(c, n) for M, names in ((ev.T_X, rows), (ev.T_U1, u1), (ev.T_U2, u2))
                 for c, n in zip(M[i], names) if c != 0.0]
        text = "".join(f"{' - ' if c < 0 else ' + '}"
                       f"{'' if abs(c) == 1.0 else f'{abs(c):.6g} '}{n}" for c, n in terms)
        text = ("-" + text[3:] if text.startswith(" - ") else text[3:]) or "0"
        lines.append(f"  d {name}/dt = {text}   [= {ev.xdot[i]:.6g}]")
    blocks = [("T_X", ev.T_X, rows, rows), ("T_U1", ev.T_U1, rows, u1),
              ("T_U2", ev.T_U2, rows, u2)]
    if ev.H4 is not None:
        blocks.append(("H_4", ev.H4, u2, u2))
    for name, M, rn, cn in blocks:
        lines.append(_labelled_matrix(name, np.atleast_2d(M), rn, cn, latex))
    return "\n".join(lines)


def _labelled_matrix(name: str, M: np.ndarray, rows: list[str], cols: list[str],
                     latex: bool) -> str:
    """``M`` with its row and column names: an aligned text table, or a LaTeX
    ``bmatrix`` with the names in comment lines."""
    head = f"{name} ({M.shape[0]} x {M.shape[1]})"
    if M.size == 0:
        return f"{head}: empty"
    if latex:
        body = " \\\\\n".join(" & ".join(f"{v:.6g}" for v in r) for r in M)
        return (f"% {head}\n% rows: {', '.join(rows)}\n% columns: {', '.join(cols)}\n"
                f"{name} = \\begin{{bmatrix}}\n{body}\n\\end{{bmatrix}}")
    cells = [[f"{v:.6g}" if v != 0.0 else "0" for v in r] for r in M]
    w0 = max(len(r) for r in rows)
    widths = [max(len(c), *(len(r[j]) for r in cells)) for j, c in enumerate(cols)]
    out = [f"{head}, rows then columns by name:",
           " " * w0 + "  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    out += [r.ljust(w0) + "  " + "  ".join(v.rjust(w) for v, w in zip(cell, widths))
            for r, cell in zip(rows, cells)]
    return "\n".join(out)
