"""The study: a model, the parameters to vary, the outputs to keep; its run writes the
table one row per finished run.

- :class:`Study`: see its docstring; :meth:`Study.run` runs it into a directory
  (``results.csv``, ``study.json``, histories, plots), resumable.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


from bondgraph import ModelError
from bondgraph._files import open_append, write_text

from bondgraph._plot import NO_PLOTS, have_matplotlib
from elements.study.executors import RunProgress, _run_dask, _run_inprocess, check_executor
from elements.study.model import ParametricModel
from elements.study.names import FIXED_COLUMNS
from elements.study.outputs import Output
from elements.study.plans import Grid, MonteCarlo, Run
from elements.study.table import (
    HISTORIES, RESULTS, STUDY_JSON, _cell, _drop_partial_line, _has_pyarrow,
    _write_history, plot_study, read_results, StudyResult,
)


@dataclass
class PlotRequest:
    """A figure written at the end of a study: ``output`` against ``x`` (and ``y``)."""

    file: str
    output: str
    x: str
    y: str | None = None


class Study:
    """A parameter study of one model.

    Parameters
    ----------
    model : str, ModelSpec, Mechanism, callable or ParametricModel
        See :class:`ParametricModel`.
    parameters : Grid or MonteCarlo
        What to vary. Parameter names: :meth:`ParametricModel.parameters`.
    outputs : sequence of Output
        What to keep from each run.
    solver : mapping, optional
        Overrides of the model's solver settings (``t_end`` in s, ``points``, ``rtol``,
        ...).
    name : str, optional
    plots : sequence of PlotRequest, optional
        Figures written into the output directory at the end.
    executor : str
        Default for :meth:`run`: ``"local"`` (a Dask LocalCluster with ``workers``
        processes, as many as cores by default), ``"inprocess"``, or a scheduler
        address (``"tcp://host:8786"``).
    workers : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> from elements import models
    >>> study = Study(models.three_body_spec, Grid({"J3.spring.k": [400.0, 600.0]}),
    ...               [Output("m2_z_end", "m2.z", "final")],
    ...               solver={"t_end": 0.05, "points": 6})
    >>> [r.values for r in study.runs()]
    [{'J3.spring.k': 400.0}, {'J3.spring.k': 600.0}]
    """

    def __init__(self, model: Any, parameters: Grid | MonteCarlo,
                 outputs: Sequence[Output], *, solver: Mapping[str, Any] | None = None,
                 name: str | None = None, plots: Sequence[PlotRequest] = (),
                 executor: str = "local", workers: int | None = None):
        if isinstance(model, ParametricModel):
            if solver:
                raise ModelError("give the solver overrides to the ParametricModel")
            self.model = model
        else:
            self.model = ParametricModel(model, solver=solver)
        if not isinstance(parameters, (Grid, MonteCarlo)):
            raise ModelError(f"parameters must be a Grid or a MonteCarlo, got "
                             f"{type(parameters).__name__}")
        self.parameters = parameters
        self.outputs = list(outputs)
        if not self.outputs:
            raise ModelError("a study needs at least one output")
        names = [o.name for o in self.outputs]
        dup = {n for n in names if names.count(n) > 1}
        clash = set(names) & (set(parameters.names) | set(FIXED_COLUMNS))
        if dup or clash:
            raise ModelError(f"output names must be unique and differ from the parameter "
                             f"and fixed column names: {', '.join(sorted(dup | clash))}")
        self.notes = self.model.prepare(parameters.names)
        self.name = name or self.model.base.mechanism.name
        self.plots = list(plots)
        for p in self.plots:
            self._check_plot(p)
        self.executor = executor
        self.workers = workers

    def _check_plot(self, p: PlotRequest) -> None:
        if p.output not in [o.name for o in self.outputs]:
            raise ModelError(f"plot {p.file}: no output {p.output!r}; outputs: "
                             f"{', '.join(o.name for o in self.outputs)}")
        for ax in (p.x, p.y):
            if ax is not None and ax not in self.parameters.names:
                raise ModelError(f"plot {p.file}: {ax!r} is not a varied parameter; "
                                 f"parameters: {', '.join(self.parameters.names)}")

    def runs(self) -> list[Run]:
        """The planned runs, in order (stable ids)."""
        return self.parameters.runs()

    @property
    def columns(self) -> list[str]:
        """The results table's columns."""
        return ["run_id", "index", "status", *self.parameters.names,
                *[o.name for o in self.outputs], "runtime_s", "message", "worker"]

    def fingerprint(self) -> str:
        """A hash of what makes rows comparable: the model, solver settings, parameter
        names and outputs (not the plan: more samples may resume fewer)."""
        h = hashlib.sha256(self.model.fingerprint().encode())
        h.update(json.dumps([self.parameters.names,
                             [(o.name, o.describe()) for o in self.outputs]]).encode())
        return h.hexdigest()[:16]

    def run(self, out: str | os.PathLike, *, executor: Any = None,
            workers: int | None = None, resume: bool = False, overwrite: bool = False,
            progress: bool | Callable[[Mapping[str, Any]], None] | None = None,
            on_row: Callable[[Mapping[str, Any]], None] | None = None,
            quiet: bool = True) -> "StudyResult":
        """Run the study into directory ``out``.

        ``results.csv`` gets one row per run as runs finish (appended and flushed per
        row), so an interrupted study keeps what it finished. ``resume=True`` skips the
        runs already in it (by run id); ``overwrite=True`` starts anew. ``executor``:
        ``"inprocess"``, ``"local"`` (a Dask LocalCluster of ``workers`` processes,
        default: as many as cores; started and closed here), a scheduler address, or a
        ``distributed.Client``. ``progress``: True for the bar on stderr, or a callable
        taking each row. ``on_row`` is called with each row after it is written (an
        exception there, such as KeyboardInterrupt, stops the study; rows written stay).

        Also writes ``study.json`` (the plan and the notes), ``histories/*.npz`` for
        history outputs, ``results.parquet`` at the end when pyarrow is installed, and
        the plots. Returns the :class:`StudyResult`.

        Raises
        ------
        ModelError
            A directory that holds another study's results, or rows without
            ``resume``/``overwrite``.
        """
        out = os.fspath(out)
        executor = self.executor if executor is None else executor
        workers = self.workers if workers is None else workers
        check_executor(executor, workers)
        if os.path.exists(out) and not os.path.isdir(out):
            raise ModelError(f"study output {out!r} is an existing file; give a directory "
                             f"(it is created when missing)")
        runs = self.runs()
        os.makedirs(out, exist_ok=True)
        results = os.path.join(out, RESULTS)
        done: set[str] = set()
        if os.path.exists(results) and not _has_rows(results):
            overwrite = True      # a study that ended before its first run: nothing to keep
        if os.path.exists(results) and overwrite:
            for name in (RESULTS, STUDY_JSON, "results.parquet"):
                p = os.path.join(out, name)
                if os.path.exists(p):
                    os.remove(p)
            shutil.rmtree(os.path.join(out, HISTORIES), ignore_errors=True)
        elif os.path.exists(results):
            if not resume:
                raise ModelError(f"{out} already holds a study's results ({RESULTS}); pass "
                                 f"--resume to continue it or --overwrite to start anew")
            done = self._resume_ids(out)
        self._write_study_json(out, runs, executor, workers)
        todo = [r for r in runs if r.run_id not in done]
        if progress is True:
            bar: Callable | None = RunProgress(len(runs), len(runs) - len(todo))
        else:
            bar = progress if callable(progress) else None
        t0 = time.perf_counter()
        new = 0
        fresh = not os.path.exists(results)
        try:
            with open_append(results, "a", newline="", encoding="utf-8") as f:
                writer = csv.writer(f)
                if fresh:
                    writer.writerow(self.columns)
                    f.flush()
                if todo:
                    rows = (_run_inprocess(self.model, todo, self.outputs)
                            if executor == "inprocess" else
                            _run_dask(self.model, todo, self.outputs, executor, workers))
                    try:
                        for row in rows:
                            hist = row.pop("_histories", None)
                            if hist:
                                _write_history(out, row["run_id"], hist)
                            writer.writerow([_cell(row.get(c)) for c in self.columns])
                            f.flush()
                            os.fsync(f.fileno())
                            new += 1
                            if bar is not None:
                                bar(row)
                            if on_row is not None:
                                on_row(row)
                    finally:
                        if hasattr(rows, "close"):
                            rows.close()
        finally:
            if isinstance(bar, RunProgress):
                bar.close()
        elapsed = time.perf_counter() - t0
        res = read_results(out)
        res.elapsed, res.new_runs = elapsed, new
        if _has_pyarrow():
            res.write_parquet(os.path.join(out, "results.parquet"))
        if self.plots:
            if not have_matplotlib():
                print(NO_PLOTS, file=sys.stderr)
            else:
                for p in self.plots:
                    plot_study(res, p.output, p.x, p.y, os.path.join(out, p.file))
        return res

    def _resume_ids(self, out: str) -> set[str]:
        meta = os.path.join(out, STUDY_JSON)
        if os.path.exists(meta):
            try:
                old = json.load(open(meta, encoding="utf-8")).get("fingerprint")
            except (OSError, ValueError):
                old = None
            if old is not None and old != self.fingerprint():
                raise ModelError(f"{out} holds the results of a different study (its model, "
                                 f"solver settings, parameters or outputs differ); use "
                                 f"another directory or --overwrite")
        path = os.path.join(out, RESULTS)
        _drop_partial_line(path)
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            head = next(reader, None)
            if head != self.columns:
                raise ModelError(f"{path}: its columns ({', '.join(head or [])}) are not this "
                                 f"study's ({', '.join(self.columns)}); use another directory "
                                 f"or --overwrite")
            return {r[0] for r in reader if len(r) == len(head)}

    def _write_study_json(self, out, runs, executor, workers) -> None:
        meta = {"name": self.name, "fingerprint": self.fingerprint(),
                "model": self.model.source, "solver": repr(self.model.solver),
                "parameters": self.parameters.describe(),
                "units": {n: self.model.parameters()[n].unit
                          for n in self.parameters.names},
                "outputs": {o.name: o.describe() for o in self.outputs},
                "notes": self.notes, "n_runs": len(runs),
                "executor": executor if isinstance(executor, str) else repr(executor),
                "workers": workers, "columns": self.columns,
                "runs": [[r.run_id, r.values] for r in runs]}
        write_text(os.path.join(out, STUDY_JSON), json.dumps(meta, indent=1,
                                                             ensure_ascii=False))


def _has_rows(path: str) -> bool:
    """Whether a results table holds a run (a line after its header)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return bool(f.readline()) and any(line.strip() for line in f)
    except OSError:
        return True                   # unreadable: let the caller's checks say so
