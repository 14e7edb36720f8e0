"""Run a model (from Python or a model file) and write every output.

- :func:`run`: simulate a :class:`~elements.files.modelfile.ModelSpec` and write the CSV, JSON,
  MAT files, the diagram and the plots into a directory.
- :func:`plot_columns`: figures of result columns against time.

The three-body example script and ``bondgraph run MODEL.toml`` both call :func:`run`, so
they write the same files with the same numbers.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bondgraph._files import atomic_path, write_text
from bondgraph.errors import ModelError, NameNotFoundError, did_you_mean, warn

from bondgraph import BondGraphError, render

from bondgraph._plot import NO_PLOTS, have_matplotlib, pyplot
from elements.files.modelfile import ModelSpec, PlotSpec, check_output
from elements.drawing.result_display import import_summary
from elements.results import MechanismResult
from elements.files.robot_spec import RobotImportWarning

__all__ = ["run", "plot_columns"]


def plot_columns(result: MechanismResult, specs: Sequence[PlotSpec], out_dir: str
                 ) -> list[str]:
    """One PNG per spec: the named columns (as in the CSV files) against time."""
    if not specs:
        return []
    if not have_matplotlib():
        print(NO_PLOTS, file=sys.stderr)
        return []
    plt = pyplot("plots")
    bodies, joints, energy = result.columns()
    cols = {**bodies, **joints, **energy}
    files = []
    for spec in specs:
        missing = [y for y in spec.y if y not in cols]
        if missing:
            raise NameNotFoundError(f"plot {spec.file}: no column(s) {', '.join(missing)}")
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for y in spec.y:
            ax.plot(result.t, cols[y], lw=1.1, label=y)
        if spec.norm:
            ax.plot(result.t, np.linalg.norm([cols[y] for y in spec.y], axis=0), "k", lw=1.4,
                    label="magnitude")
        ax.set_xlabel("t (s)")
        ax.set_ylabel(spec.ylabel or ", ".join(spec.y))
        if spec.title:
            ax.set_title(spec.title)
        if len(spec.y) > 1 or spec.norm:
            ax.legend(fontsize=8, ncol=4)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(out_dir, spec.file)
        ext = os.path.splitext(spec.file)[1]
        try:
            with atomic_path(path, ext) as tmp:
                fig.savefig(tmp, dpi=120, format=ext[1:].lower())
        finally:
            plt.close(fig)
        files.append(path)
    return files


def run(spec: ModelSpec, out_dir: str, *, progress: Callable[[float], None] | None = None,
        quiet: bool = False, animation: str | None = None
        ) -> tuple[MechanismResult, dict[str, Any]]:
    """Assemble, simulate and write everything a run produces into ``out_dir``:
    bodies.csv, joints.csv, energy.csv, units.json, mechanism.json, summary.json, the MAT
    file, the diagram (DOT always; SVG when graphviz's dot is installed) and the plots;
    with ``animation`` (a file name), also the 3D animation page
    (:func:`elements.drawing.animation.animate`, with traces of the bodies that move).

    Every file goes inside ``out_dir`` (the output names are checked: see
    :func:`elements.files.modelfile.check_output`); files written are listed in its
    ``manifest.json`` even when the run is interrupted. Unless ``quiet``, the spec's
    ``notes`` (a robot description's import warnings) are said first, each once, as
    :class:`~elements.RobotImportWarning` s.

    Raises
    ------
    ModelError
        An output name that would leave ``out_dir`` or clash with the run's own files,
        or an ``out_dir`` that is an existing file."""
    out_dir = os.fspath(out_dir)
    if not quiet:            # (what reading the model file had to say: once, here)
        for note in getattr(spec, "notes", ()):
            warn(note, RobotImportWarning)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ModelError(f"output directory {out_dir!r} is an existing file; give a "
                         f"directory (it is created when missing)")
    check_output(spec.output, animation)
    os.makedirs(out_dir, exist_ok=True)
    _remove_previous_run(out_dir)
    paths: dict[str, Any] = {}
    try:
        return _run(spec, out_dir, paths, progress, quiet, animation)
    finally:
        written = sorted({os.path.basename(p) for p in _flatten(paths) if isinstance(p, str)
                          and os.path.exists(p)})
        if written:
            _write_manifest(out_dir, written,
                            import_summary(getattr(spec.mechanism, "import_report", None)))


def _check_plot_columns(spec: ModelSpec, result: MechanismResult) -> None:
    """Every column a plot asks for exists (before anything is written): else a
    NameNotFoundError naming the model file, the plot and the columns it could mean."""
    bodies, joints, energy = result.columns()
    cols = [*bodies, *joints, *energy]
    for k, p in enumerate(spec.output.plots):
        missing = [y for y in p.y if y not in cols]
        if missing:
            hint = did_you_mean(missing[0], cols) or \
                "; columns are named as in the CSV files, e.g. 'rod.x', 'J1.q'"
            raise NameNotFoundError(f"{spec.source}: [output.plot {k + 1}] 'y': no column(s) "
                                    f"{', '.join(map(repr, missing))}{hint}")


def _run(spec, out_dir, paths, progress, quiet, animation):
    t0 = time.perf_counter()
    mm = spec.mechanism.assemble()
    s = spec.solver
    solver, save, budget = s.options()
    result = mm.simulate((s.t_start, s.t_end), spec.q0, spec.qd0, solver=solver, save=save,
                         budget=budget, stabilization=s.stabilization,
                         projection=s.projection, progress=progress)
    elapsed = time.perf_counter() - t0
    _check_plot_columns(spec, result)
    paths.update(result.write(out_dir, mat_name=spec.output.mat))
    diagram = os.path.join(out_dir, spec.output.diagram)
    paths["dot"] = os.path.splitext(diagram)[0] + ".dot"
    try:
        paths["diagram"] = render(mm.causal, diagram)
    except BondGraphError as exc:
        if not quiet:
            print(f"diagram: {exc}", file=sys.stderr)
    paths["plots"] = plot_columns(result, spec.output.plots, out_dir)
    if animation:
        from elements.drawing.animation import animate, moving_bodies
        try:
            paths["animation"] = animate(result, os.path.join(out_dir, animation),
                                         traces=moving_bodies(result))
        except (BondGraphError, ValueError) as exc:   # the results are written regardless
            if not quiet:
                print(f"animation: {exc}", file=sys.stderr)
    paths["elapsed"] = elapsed
    return result, paths


MANIFEST = "manifest.json"
"""The list of files a run wrote, so that a later run into the same directory removes
exactly those (never a user's own files) and old and new results never mix."""


def _flatten(paths):
    for v in paths.values():
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


def _write_manifest(out_dir: str, files: list[str], imported: dict | None = None) -> None:
    """The run's files, and (for an imported mechanism) what the import left out."""
    import json
    data: dict[str, Any] = {"files": files}
    if imported is not None:
        data["import"] = imported
    write_text(os.path.join(out_dir, MANIFEST), json.dumps(data, indent=1, ensure_ascii=False))


def _remove_previous_run(out_dir: str) -> None:
    import json
    path = os.path.join(out_dir, MANIFEST)
    if not os.path.exists(path):
        return
    try:
        with open(path, encoding="utf-8") as f:
            files = json.load(f).get("files", [])
        if not isinstance(files, list):
            files = []
    except (OSError, ValueError, AttributeError):
        files = []
    for name in files + [MANIFEST]:
        target = os.path.join(out_dir, os.path.basename(name))
        if os.path.isfile(target):
            os.remove(target)
