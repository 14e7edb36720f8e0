"""The commands of the ``bondgraph`` command line (also ``python -m bondgraph``).

Commands::

    bondgraph run MODEL --out DIR      simulate a model file; write CSV, MAT, JSON, plots,
                                       the diagram (progress bar on a terminal)
    bondgraph render MODEL [--out F]   the model's vector bond graph (SVG, PNG or PDF; the
                                       DOT text is always written)
    bondgraph equations MODEL [--latex]  the state equations' structure and T, H, U_2 at
                                       the initial state
    bondgraph check DIR                the energy and momentum report of a run's files
    bondgraph sweep STUDY --out DIR    a parameter study (grid or Monte Carlo, on Dask):
                                       one results.csv row per run, plots
    bondgraph animate DIR [--video F]  the 3D animation page of a run (and a GIF or MP4)
    bondgraph linearize MODEL --out DIR [--at J=v,...] [--inputs ...] [--outputs ...]
                                       the linear model (A, B, C, D with names) about an
                                       operating point or equilibrium: CSV, MAT, JSON;
                                       --modes-page: the mode shapes on a 3D page
    bondgraph export-fmu MODEL --out FILE.fmu [--inputs ...] [--outputs ...]
                                       an FMI 2.0 FMU (model exchange, co-simulation;
                                       standalone C compiled for this platform)

Exit codes: 0 success; 1 the simulation or a check failed (what was computed is
written, the cause is in summary.json); 2 bad input (a one-line message names the file,
table and key); 3 an internal error (run with --debug for the traceback); 130
interrupted (Ctrl-C: one line; files being written are removed, finished ones kept).

Model files are the multibody library's (:mod:`elements.files.modelfile`) or, for ``run``,
``render``, ``equations``, ``linearize`` and ``export-fmu``, bond graph files (a top-level ``[bondgraph]`` table:
:mod:`bondgraph.graphfile`); the command line sits above both packages and imports
``elements`` only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings
from contextlib import contextmanager

import numpy as np

from bondgraph._files import write_text
from bondgraph.errors import BondGraphError, caused_by_interrupt

from .exits import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, SIGINT_SEEN, interrupted

__all__ = ["run", "build_parser"]


def _load(path):
    from elements.files.modelfile import load_model
    return load_model(path)


def _load_graph(path):
    """The bond graph file at ``path`` (a top-level [bondgraph] table), else None."""
    from bondgraph.graphfile import is_graph_file, load_graph_file
    return load_graph_file(path) if is_graph_file(path) else None


@contextmanager
def _about(path: str):
    """Errors of the package inside say which file they are about (the model or study
    file the command was given), if they do not already."""
    try:
        yield
    except BondGraphError as exc:
        msg = str(exc.args[0]) if exc.args else str(exc)
        if msg.startswith(str(path)):
            raise
        raise _UserError(f"{path}: {msg}") from exc


def cmd_run(args) -> int:
    from bondgraph import RunProgress
    from elements.running.runner import run
    graph = _load_graph(args.model)
    spec = graph or _load(args.model)
    _output_directory(args.out)
    if args.out and os.path.isdir(args.out) and os.listdir(args.out) and not args.overwrite:
        stale = [f for f in os.listdir(args.out)]
        raise _UserError(f"{args.out} is not empty ({len(stale)} files); pass --overwrite to "
                         f"replace the files of the run it holds (listed in its "
                         f"manifest.json; other files are kept), or choose an empty directory")
    # progress on stderr once a run has taken 2 s: a bar on a terminal, a line every 5 s
    # in a log; on by default, off with --quiet, --progress/--no-progress decide
    show = (not args.quiet) if args.progress is None else args.progress
    if graph is not None:
        return _run_graph(args, graph, show)
    # the library warns (IntegrationWarning, numpy's overflow warnings) when a run fails;
    # the command line reports that in one line instead (below)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bar = RunProgress(spec.solver.t_start, spec.solver.t_end) if show else None
        try:
            with _about(args.model):
                result, paths = run(spec, args.out, progress=bar, quiet=args.quiet,
                                    animation=None if args.no_animation else
                                    "animation.html")
        finally:
            if bar is not None:
                bar.close()
        if not args.quiet:
            print(f"{spec.mechanism.name}: {result.raw.status.name} ({result.message}); "
                  f"{result.t.size} output points, max |Phi| {result.max_abs_phi:.2e}, "
                  f"energy balance drift {result.energy.relative_drift:.2e}")
            print(f"wrote {args.out}: {', '.join(sorted(os.listdir(args.out)))}")
    if not result.success:
        print(f"error: simulation failed at t = {result.raw.failure_time}: {result.message} "
              f"(results up to the failure are written)", file=sys.stderr)
        return 1
    for text in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
        print(f"warning: {text}", file=sys.stderr)
    return 0


def _run_graph(args, spec, show) -> int:
    """``bondgraph run`` of a bond graph file."""
    from bondgraph import RunProgress
    from bondgraph.graphrun import run_graph_file
    s = spec.solver
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bar = RunProgress(s.t_start, s.t_end) if show and s is not None else None
        try:
            with _about(args.model):
                result, _ = run_graph_file(spec, args.out, progress=bar, quiet=args.quiet)
        finally:
            if bar is not None:
                bar.close()
    if not args.quiet:
        print(f"{spec.graph.name}: {result.status.name} ({result.message}); "
              f"{result.t.size} output points, {len(result.state_names)} states")
        print(f"wrote {args.out}: {', '.join(sorted(os.listdir(args.out)))}")
    if not result.success:
        print(f"error: simulation failed at t = {result.failure_time}: {result.message} "
              f"(results up to the failure are written)", file=sys.stderr)
        return 1
    for text in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
        print(f"warning: {text}", file=sys.stderr)
    return 0


def _output_directory(out: str) -> None:
    """An --out that names an existing file (or lies under one) is refused."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise _UserError(f"--out {out}: an existing file, not a directory; give a "
                         f"directory (it is created when missing)")


def cmd_render(args) -> int:
    from bondgraph import assign_causality, render
    from bondgraph.viz import GraphvizNotFound
    file = _load_graph(args.model)
    spec = file or _load(args.model)
    with _about(args.model):
        graph = file.graph if file is not None else spec.mechanism.build()
        obj = graph if args.acausal else assign_causality(graph)
    out = args.out or os.path.splitext(os.path.basename(args.model))[0] + ".svg"
    try:
        path = render(obj, out, args.format)
    except GraphvizNotFound as exc:        # (the DOT text is written)
        print(f"warning: {exc}", file=sys.stderr)
        return 0
    print(f"wrote {path} (and {os.path.splitext(path)[0]}.dot)")
    return 0


def cmd_equations(args) -> int:
    from bondgraph.graphrun import numeric_equations_text
    file = _load_graph(args.model)
    if file is not None and not args.numeric:
        from bondgraph.graphrun import graph_equations_text
        with _about(args.model):
            print(graph_equations_text(file.graph, latex=args.latex))
        return 0
    with _about(args.model):
        if file is not None:
            from bondgraph.graphrun import assemble_graph_file
            m, x0 = assemble_graph_file(file)
            t0, title = (file.solver.t_start if file.solver else 0.0), None
        else:
            spec = _load(args.model)
            mm = spec.mechanism.assemble()
            m, x0 = mm.model, mm.initial_state(spec.q0, spec.qd0)
            t0, title = spec.solver.t_start, f"model {spec.mechanism.name}"
        text = numeric_equations_text(m, t0, x0, latex=args.latex, title=title)
    print(text)
    return 0


def cmd_sweep(args) -> int:
    from elements.study import RESULTS, check_executor, load_study
    study = load_study(args.study)
    executor = args.executor or study.executor
    workers = study.workers if args.workers is None else args.workers
    check_executor(executor, workers)
    runs = study.runs()
    _output_directory(args.out)
    if not args.quiet:
        where = {"inprocess": "in this process",
                 "local": f"on a local Dask cluster of {workers or os.cpu_count()} workers"
                 }.get(executor, f"on the Dask scheduler at {executor}")
        print(f"{study.name}: {len(runs)} runs of {study.model.source} {where}")
        for note in study.notes:
            print(f"note: {note}")
    show = args.progress or (args.progress is None and sys.stderr.isatty())
    try:
        res = study.run(args.out, executor=executor, workers=workers,
                        resume=args.resume, overwrite=args.overwrite, progress=bool(show))
    except KeyboardInterrupt:
        interrupted(f"the runs that finished are in {os.path.join(args.out, RESULTS)}; "
                    f"rerun with --resume to do the rest")
        return EXIT_INTERRUPTED
    counts = res.status_counts
    if not args.quiet:
        new = (f"{res.new_runs} new in {res.elapsed:.1f} s, "
               f"{res.new_runs / res.elapsed:.3g} runs/s" if res.new_runs else "none new")
        print(f"{study.name}: {len(res)} of {len(runs)} runs in the table ({new}): "
              + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        print(f"wrote {args.out}: {', '.join(sorted(os.listdir(args.out)))}")
    bad = res.failures
    if bad:
        first = bad[0]
        vals = ", ".join(f"{p} = {first[p]:.6g}" for p in res.parameters)
        print(f"error: {len(bad)} of {len(res)} runs did not succeed (status and message in "
              f"{os.path.join(args.out, RESULTS)}); first: run {first['index']} ({vals}): "
              f"{first['status']}: {first['message']}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args) -> int:
    from elements.analysis.energy_check import check
    if not os.path.isdir(args.directory):
        raise _UserError(f"{args.directory}: no such directory (give the --out directory of "
                         f"a run)")
    rep = check(args.directory, rtol=args.rtol)
    print(rep.text())
    if args.plot:
        rep.plot(args.plot)
        print(f"figure: {args.plot}")
    return 0 if rep.passed else 1


def cmd_animate(args) -> int:
    from elements.drawing.animation import animate, load_motion, moving_bodies
    motion = load_motion(args.directory)           # names the missing or malformed file
    shapes = {}
    for item in args.shape or ():
        body, sep, spec = item.partition("=")
        if not sep:
            raise _UserError(f"--shape {item!r}: expected BODY=KIND:DIMS, e.g. "
                             f"m1=box:0.05,0.05,0.1")
        shapes[body] = spec
    plots = None if args.plot is None else [p.split(",") for p in args.plot]
    traces = moving_bodies(motion) if args.trace is None else args.trace
    options = dict(shapes=shapes, traces=traces, reactions=not args.no_reactions, plots=plots,
                   contacts=not args.no_contacts)
    out = args.out or os.path.join(args.directory, "animation.html")
    written = [animate(motion, out, speed=args.speed, **options)]
    print(f"wrote {out} (open it in a browser; it needs no network)")
    if args.video:
        from elements.drawing.video import animate_video
        written.append(animate_video(motion, args.video, fps=args.fps, speed=args.speed,
                                     progress=sys.stderr.isatty(), **options))
        print(f"wrote {args.video}")
    _add_to_manifest(args.directory, written)
    return 0


def _pairs(text_items, what: str) -> dict[str, float]:
    """``NAME=VALUE`` items (repeated options, each possibly comma-separated) as a dict;
    a _UserError naming the item otherwise."""
    out: dict[str, float] = {}
    for text in text_items or ():
        for item in filter(None, (t.strip() for t in text.split(","))):
            name, sep, value = item.partition("=")
            try:
                if not sep or not name.strip():
                    raise ValueError
                out[name.strip()] = float(value)
            except ValueError:
                raise _UserError(f"{what} {item!r}: expected NAME=VALUE with a number, e.g. "
                                 f"J1=0.3") from None
    return out


def _names(text_items) -> list[str]:
    return [t.strip() for text in text_items or () for t in text.split(",") if t.strip()]


def cmd_linearize(args) -> int:
    from bondgraph.linear_model import FORMATS
    file = _load_graph(args.model)
    spec = None if file is not None else _load(args.model)
    _output_directory(args.out)
    if os.path.isdir(args.out) and os.listdir(args.out) and not args.overwrite:
        raise _UserError(f"{args.out} is not empty; pass --overwrite to replace the files "
                         f"of a linear model there, or choose an empty directory")
    formats = _names(args.format) or list(FORMATS)
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise _UserError(f"--format {', '.join(bad)}: valid formats are {', '.join(FORMATS)}")
    u0 = _pairs(args.u0, "--u0")
    inputs, outputs = _names(args.inputs), _names(args.outputs)
    unknown = [k for k in u0 if k not in inputs]
    if unknown:
        raise _UserError(f"--u0 {', '.join(unknown)}: not among --inputs "
                         f"({', '.join(inputs) or 'none'})")
    if file is not None:
        if args.modes_page is not None:
            raise _UserError("--modes-page: mode shapes are drawn for mechanisms (a model "
                             "file with bodies and joints), not for a bond graph file")
        name, lin = file.graph.name, _linearize_graph(args, file, inputs, outputs, u0)
        return _write_linear(args, name, lin, formats, inputs, outputs, None, None)
    from elements.analysis.linearization import linearize_mechanism, mechanism_equilibrium
    q = {**spec.q0, **_pairs(args.at, "--at")}
    qd = {**spec.qd0, **_pairs(args.rates, "--rates")}
    guess = _pairs(args.guess, "--guess") or None
    with _about(args.model):
        mm = spec.mechanism.assemble()
        at = q
        if args.equilibrium:
            at = mechanism_equilibrium(mm, q, qd, inputs=u0 or None, guess=guess)
            print(f"equilibrium: {', '.join(f'{k} = {v:.10g}' for k, v in at.q.items())} "
                  f"(largest remaining acceleration {at.residual:.1e})")
        lin = linearize_mechanism(mm, at, None if args.equilibrium else qd, inputs=inputs,
                                  outputs=outputs, u0=u0 or None, guess=guess)
    return _write_linear(args, spec.mechanism.name, lin, formats, inputs, outputs, mm,
                         guess)


def _linearize_graph(args, file, inputs, outputs, u0):
    """The linear model of a bond graph file about its [initial] state (``--at`` sets
    states or their components by name, ``--equilibrium`` first solves for a steady
    state with the inputs at ``--u0``)."""
    from bondgraph import find_equilibrium, linearize
    from bondgraph.bonds import component_names
    from bondgraph.graphrun import assemble_graph_file
    if args.rates or args.guess:
        raise _UserError(f"{'--rates' if args.rates else '--guess'}: joint rates and loop "
                         f"guesses belong to mechanisms; a bond graph file's operating point "
                         f"is its states (--at NAME=VALUE)")
    t0 = file.solver.t_start if file.solver is not None else 0.0
    with _about(args.model):
        model, x0 = assemble_graph_file(file)
        x = model.initial_state(x0)
        slices = model.state_slices
        index = {c: k for n, sl in slices.items()
                 for c, k in zip(component_names([(n, sl.stop - sl.start)]),
                                 range(sl.start, sl.stop))}
        for k, v in _pairs(args.at, "--at").items():
            if k not in index:
                raise _UserError(f"--at {k}: no such state component; valid: "
                                 f"{', '.join(index)}")
            x[index[k]] = v
        if args.equilibrium:
            eq = find_equilibrium(model, x, inputs=u0 or None, t=t0)
            x = eq.x
            print(f"equilibrium: {', '.join(f'{c} = {x[k]:.10g}' for c, k in index.items())} "
                  f"(largest remaining rate {eq.residual:.1e})")
        return linearize(model, x, inputs=inputs, outputs=outputs, u0=u0 or None, t=t0)


def _write_linear(args, name, lin, formats, inputs, outputs, mm, guess) -> int:
    """Write and print a linear model (and, for a mechanism, its mode-shape page)."""
    at_rest = lin.equilibrium_residual <= 1e-8 * max(1.0, float(np.abs(lin.A).max(initial=0.0)))
    page = None
    if args.modes_page is not None:
        page = args.modes_page or os.path.join(args.out, "modes.html")
        if not page.lower().endswith((".html", ".htm")):
            raise _UserError(f"--modes-page {page}: the page is an HTML file (name it "
                             f"*.html)")
        if not (np.isfinite(args.mode_amplitude) and args.mode_amplitude > 0):
            raise _UserError(f"--mode-amplitude {args.mode_amplitude:g}: must be a positive "
                             f"number (rad or m: the largest joint excursion)")
        if not at_rest:
            raise _UserError(f"--modes-page: the operating point is not an equilibrium "
                             f"(max |dz/dt| = {lin.equilibrium_residual:.3g}), so it has no "
                             f"modes; --equilibrium finds one")
    os.makedirs(args.out, exist_ok=True)
    paths = lin.write(args.out, formats, stem="linear")
    print(f"{name}: {lin}")
    print(f"states: {', '.join(lin.state_names)}")
    print(f"inputs: {', '.join(lin.input_names) or 'none'}; outputs: "
          f"{', '.join(lin.output_names) or 'none'}")
    if at_rest:
        print(lin.modes().table())
    else:
        print(f"(not an equilibrium: max |dz/dt| = {lin.equilibrium_residual:.3g}; no modes; "
              f"--equilibrium finds one)")
    if args.plots and inputs and outputs:
        paths.append(lin.bode_plot(os.path.join(args.out, "bode.png")))
        paths.append(lin.step_plot(os.path.join(args.out, "step.png")))
    if page is not None:
        from elements.analysis.modes import animate_modes, mode_shapes
        with _about(args.model):
            units = {ax.port: ax.unit for j in mm.mechanism.joints.values() for ax in j.axes}
            for m in mode_shapes(lin, amplitude=args.mode_amplitude, units=units):
                print(m)
            animate_modes(mm, lin, page, amplitude=args.mode_amplitude, guess=guess)
    print(f"wrote {args.out}: {', '.join(sorted(os.path.basename(p) for p in paths))}")
    if page is not None:
        print(f"wrote {page} (the mode shapes; open it in a browser and pick a mode)")
    return 0


def cmd_export_fmu(args) -> int:
    """``bondgraph export-fmu``: a model file (a mechanism) or a bond graph file as an FMI
    2.0 FMU (model exchange and co-simulation) from its initial state and [solver]."""
    out = args.out
    if not out.lower().endswith(".fmu"):
        raise _UserError(f"--out {out}: the FMU's file name must end in .fmu")
    if os.path.isdir(out):
        raise _UserError(f"--out {out}: an existing directory; give the FMU's file name")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise _UserError(f"--out {out}: its folder {folder} does not exist")
    options = {"inputs": _names(args.inputs), "outputs": _names(args.outputs),
               "cs_solver": args.cs_solver, "cs_step": args.cs_step,
               "compile": not args.no_compile}
    file = _load_graph(args.model)
    with _about(args.model):
        if file is not None:
            from bondgraph.fmu import export_fmu
            from bondgraph.graphrun import assemble_graph_file
            from bondgraph.stabilization import Baumgarte
            model, x0 = assemble_graph_file(file)
            s = file.solver
            if s is not None:
                options.update(start_time=s.t_start, stop_time=s.t_end, tolerance=s.rtol)
                if s.stabilization is not None:
                    options["stabilization"] = Baumgarte(*s.stabilization)
            info = export_fmu(model, out, x0=model.initial_state(x0), **options)
        else:
            from elements.export.fmu import export_mechanism_fmu
            spec = _load(args.model)
            s = spec.solver
            info = export_mechanism_fmu(
                spec.mechanism.assemble(), out, q=spec.q0, qd=spec.qd0,
                stabilization=s.stabilization, start_time=s.t_start, stop_time=s.t_end,
                tolerance=s.rtol, **options)
    print(f"wrote {info.path}: {info.identifier} ({info.engine} engine), "
          f"{len(info.states)} states, {len(info.tunable)} tunable parameters and "
          f"{len(info.fixed)} fixed, inputs: {', '.join(info.inputs) or 'none'}, outputs: "
          f"{', '.join(info.outputs) or 'none'}; binary: {info.binary or 'none (sources only)'}")
    return 0


def _add_to_manifest(directory, paths) -> None:
    """List files written into a run's directory in its manifest.json, so that the next
    run into it replaces them too."""
    manifest = os.path.join(directory, "manifest.json")
    mine = [os.path.basename(p) for p in paths
            if os.path.dirname(os.path.abspath(p)) == os.path.abspath(directory)]
    if not mine or not os.path.isfile(manifest):
        return
    try:
        with open(manifest, encoding="utf-8") as f:
            data = json.load(f)
        files = sorted(set(data.get("files", [])) | set(mine))
    except (OSError, ValueError, AttributeError, TypeError):
        return
    write_text(manifest, json.dumps({**data, "files": files}, indent=1, ensure_ascii=False))


class _UserError(Exception):
    pass


def _version() -> str:
    """The installed distribution's version (the checkout's when run from one)."""
    try:
        from importlib.metadata import version
        return version("vector-bondgraph")
    except Exception:                     # (not installed: a checkout on the path)
        from bondgraph import __version__
        return __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bondgraph", description="Vector bond graph models of "
                                "spatial multibody systems.")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a model file and write every output",
                       description="Simulate MODEL (a TOML model file, or a URDF or MJCF "
                       "file: 1 s from its pose at rest) and write bodies.csv, joints.csv, "
                       "energy.csv, units.json, mechanism.json, summary.json, the MAT file, "
                       "the bond graph diagram and the plots into DIR. A bond graph file "
                       "(a [bondgraph] table) writes states.csv, bonds.csv, "
                       "constraint_forces.csv, summary.json and the diagram.")
    r.add_argument("model")
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--overwrite", action="store_true",
                   help="write into a non-empty directory: the files of the previous run "
                        "there (its manifest.json) are removed first")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr once the run has taken 2 s: a bar on a "
                        "terminal, a line every 5 s otherwise (default: on, off with "
                        "--quiet)")
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--no-animation", action="store_true",
                   help="do not write animation.html (the 3D animation page)")
    r.set_defaults(func=cmd_run)
    d = sub.add_parser("render", help="draw a model's vector bond graph",
                       description="Write MODEL's vector bond graph with its causal strokes "
                       "and inserted constraint sources (SVG, PNG or PDF by the suffix or "
                       "--format; the DOT text is always written next to it).")
    d.add_argument("model")
    d.add_argument("--out", default=None, help="output file (default MODEL name .svg)")
    d.add_argument("--format", default=None, choices=["svg", "png", "pdf"])
    d.add_argument("--acausal", action="store_true", help="draw before causality assignment")
    d.set_defaults(func=cmd_render)
    e = sub.add_parser("equations", help="print the state equations",
                       description="Print the structure of MODEL's state equations and the "
                       "matrices T_X, T_U1, T_U2, H_4 and U_2 at its initial state; for a bond "
                       "graph file (a [bondgraph] table), the symbolic state equations.")
    e.add_argument("model")
    e.add_argument("--latex", action="store_true", help="matrices as LaTeX")
    e.add_argument("--numeric", action="store_true",
                   help="for a bond graph file: the numeric matrices at its initial state "
                        "(as for a mechanism) instead of the symbolic equations")
    e.set_defaults(func=cmd_equations)
    s = sub.add_parser("sweep", help="a parameter study: sweep or Monte Carlo, on Dask",
                       description="Run the parameter study STUDY (a TOML study file naming a "
                       "model file, the parameters to vary, the outputs to keep and where to "
                       "run; see docs/studies.md) into DIR: results.csv (one row per run, "
                       "written as runs finish), study.json, the plots.")
    s.add_argument("study")
    s.add_argument("--out", required=True, help="output directory")
    s.add_argument("--resume", action="store_true",
                   help="continue a study in DIR: runs already in results.csv are skipped")
    s.add_argument("--overwrite", action="store_true",
                   help="start anew in DIR (its results.csv, study.json and histories go)")
    s.add_argument("--executor", default=None,
                   help="inprocess, local (a Dask LocalCluster) or a scheduler address "
                        "(tcp://HOST:PORT); default: the study file's [executor]")
    s.add_argument("--workers", type=int, default=None,
                   help="worker processes of a local cluster (default: the file's, else "
                        "the number of cores)")
    s.add_argument("--progress", action="store_true", default=None,
                   help="show the progress bar even when stderr is not a terminal")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_sweep)
    c = sub.add_parser("check", help="energy and momentum report of a run",
                       description="The energy and momentum tests (seed: MBS Energy Testing) "
                       "of the files a run wrote into DIRECTORY.")
    c.add_argument("directory")
    c.add_argument("--rtol", type=float, default=1e-7)
    c.add_argument("--plot", default=None, help="also write the report's figure (PNG)")
    c.set_defaults(func=cmd_check)
    a = sub.add_parser("animate", help="3D animation of a run (HTML; GIF or MP4 with --video)",
                       description="Write a self-contained HTML page (three.js inlined; it "
                       "opens with no network) that animates the run in DIRECTORY in 3D, from "
                       "its bodies.csv, joints.csv and mechanism.json; with --video also a GIF "
                       "(Pillow) or MP4 (ffmpeg) drawn by matplotlib.")
    a.add_argument("directory", help="the --out directory of a run")
    a.add_argument("--out", default=None, help="the HTML file (default DIRECTORY/animation.html)")
    a.add_argument("--video", default=None, metavar="FILE",
                   help="also write a video: FILE ending in .gif or .mp4 (needs ffmpeg)")
    a.add_argument("--fps", type=float, default=20.0, help="video frames per second (20)")
    a.add_argument("--speed", type=float, default=1.0,
                   help="simulated seconds per second of playback (1)")
    a.add_argument("--trace", action="append", default=None, metavar="BODY[:POINT]",
                   help="draw the path of a body's centre or named point (repeatable; "
                        "default: every body that moves)")
    a.add_argument("--plot", action="append", default=None, metavar="COL[,COL...]",
                   help="a plot beside the 3D view of columns named as in the CSV files "
                        "(repeatable; default: the joint coordinates)")
    a.add_argument("--shape", action="append", default=None, metavar="BODY=SHAPE",
                   help="draw BODY as box:LX,LY,LZ, sphere:R or cylinder:R,L[,AXIS] (m, body "
                        "coordinates; repeatable; default: the box of its inertia)")
    a.add_argument("--no-reactions", action="store_true", help="no joint reaction arrows")
    a.add_argument("--no-contacts", action="store_true",
                   help="no contact force arrows (the collision shapes are drawn)")
    a.set_defaults(func=cmd_animate)
    lz = sub.add_parser("linearize", help="the linear model about an operating point",
                        description="Linearise MODEL (a TOML model file, or a URDF or MJCF "
                        "file) about an operating point in independent joint coordinates: "
                        "states <joint>.q, <joint>.qd (and subsystem states), the inputs and "
                        "outputs named; write A, B, C, D with their names into DIR (CSV, MAT, "
                        "JSON) and print the modes at an equilibrium. See "
                        "docs/linearization.md.")
    lz.add_argument("model")
    lz.add_argument("--out", required=True, help="output directory")
    lz.add_argument("--at", action="append", metavar="JOINT=VALUE[,...]",
                    help="joint coordinates of the operating point (rad or m; default the "
                         "model file's [initial] q)")
    lz.add_argument("--rates", action="append", metavar="JOINT=VALUE[,...]",
                    help="joint rates there (default the file's [initial] qd)")
    lz.add_argument("--equilibrium", action="store_true",
                    help="first find the static equilibrium from --at (coordinates solved "
                         "with the inputs at --u0, the others at the model's own values)")
    lz.add_argument("--inputs", action="append", metavar="NAME[,...]",
                    help="joints (their actuator effort) or sources of the graph")
    lz.add_argument("--outputs", action="append", metavar="NAME[,...]",
                    help="e.g. J1.q, J1.qd, m2.x, J3.Fz, J2.spring (see the docs)")
    lz.add_argument("--u0", action="append", metavar="INPUT=VALUE[,...]",
                    help="input values at the operating point (default the model's own)")
    lz.add_argument("--guess", action="append", metavar="JOINT=VALUE[,...]",
                    help="starting coordinates for closing loops")
    lz.add_argument("--format", action="append", metavar="csv,mat,json",
                    help="file formats (default all three)")
    lz.add_argument("--plots", action="store_true",
                    help="also write bode.png and step.png of every input/output pair")
    lz.add_argument("--modes-page", nargs="?", const="", default=None, metavar="FILE",
                    help="also write the mode shapes on a 3D page (default DIR/modes.html; "
                         "needs an equilibrium)")
    lz.add_argument("--mode-amplitude", type=float, default=0.2, metavar="A",
                    help="the largest joint excursion of each mode on the page (rad or m; "
                         "default 0.2)")
    lz.add_argument("--overwrite", action="store_true",
                    help="write into a non-empty directory")
    lz.set_defaults(func=cmd_linearize)
    fm = sub.add_parser("export-fmu", help="an FMI 2.0 FMU (model exchange and "
                        "co-simulation, standalone C)",
                        description="Write MODEL (a TOML model file, or a bond graph file) as "
                        "an FMI 2.0 FMU for model exchange and co-simulation: C sources and "
                        "a binary for this platform compiled with the system's C compiler "
                        "($CC, cc, gcc or clang), start values from the file's initial "
                        "state, the default experiment from its [solver]. See docs/fmu.md.")
    fm.add_argument("model")
    fm.add_argument("--out", required=True, metavar="FILE.fmu", help="the FMU to write")
    fm.add_argument("--inputs", action="append", metavar="NAME[,...]",
                    help="joint ports (their actuator effort) or sources the tool sets")
    fm.add_argument("--outputs", action="append", metavar="NAME[,...]",
                    help="e.g. J1.q, J1.qd, J3.Fz, m2.x; states, <bond>.e/.f, Se*_... "
                         "(see docs/fmu.md)")
    fm.add_argument("--cs-solver", default="dopri5", choices=["dopri5", "rk4"],
                    help="co-simulation solver: adaptive Dormand-Prince 5(4) (default) or "
                         "fixed-step RK4")
    fm.add_argument("--cs-step", type=float, default=None, metavar="H",
                    help="RK4's largest step in s (default: one per communication step)")
    fm.add_argument("--no-compile", action="store_true",
                    help="write a source-only FMU (no binary)")
    fm.set_defaults(func=cmd_export_fmu)
    return p


@contextmanager
def _quiet_compile(quiet: bool):
    """With ``--quiet``, no line about compiling the kernels on a first run either
    (``BONDGRAPH_COMPILE_NOTICE=0`` for the command and the processes it starts, unless
    the user set it), then the environment as it was."""
    key = "BONDGRAPH_COMPILE_NOTICE"
    if not quiet or key in os.environ:
        yield
        return
    os.environ[key] = "0"
    try:
        yield
    finally:
        os.environ.pop(key, None)


def run(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit code (see
    :func:`bondgraph_cli.main`, which also turns an interrupt into one line)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with _quiet_compile(getattr(args, "quiet", False)):
            return args.func(args)
    except Exception as exc:
        if SIGINT_SEEN[0] or caused_by_interrupt(exc):
            # after a Ctrl-C an error is its consequence (an interrupted import raises
            # ImportError, which would read as a missing package)
            return interrupted()
        return _report(exc, args.debug)


def _report(exc: Exception, debug: bool) -> int:
    """One line for an error a command raised; its exit code."""
    if isinstance(exc, (BondGraphError, _UserError)):    # (the errors raised on purpose)
        msg = exc.args[0] if exc.args else str(exc)
        print(f"error: {' '.join(str(msg).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if isinstance(exc, OSError):        # a file or directory named on the command line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if debug:                           # an internal error: one line unless --debug
        traceback.print_exception(exc)
    else:
        print(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
              f"traceback)", file=sys.stderr)
    return EXIT_INTERNAL
