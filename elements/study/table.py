"""A study's table: ``results.csv`` (one row per run), the histories, the plots.

- :class:`StudyResult`, :func:`read_results`: the table read back (columns, failures,
  histories, a DataFrame, Parquet).
- :func:`plot_study`: an output against one parameter (lines) or two (a heat map).
"""


from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph._files import atomic_path, open_append
from bondgraph.errors import require_extra

from bondgraph._plot import pyplot

from elements.study.names import HISTORIES, RESULTS, STUDY_JSON




def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def _write_history(out: str, run_id: str, hist: Mapping[str, Mapping[str, np.ndarray]]
                   ) -> None:
    d = os.path.join(out, HISTORIES)
    os.makedirs(d, exist_ok=True)
    arrays = {}
    for oname, cols in hist.items():
        for c, arr in cols.items():
            arrays[c if c == "t" else f"{oname}/{c}"] = arr
    with atomic_path(os.path.join(d, f"{run_id}.npz"), ".npz") as tmp:
        np.savez(tmp, **arrays)


def _drop_partial_line(path: str) -> None:
    """A study killed while writing a row leaves a line without its newline: cut it (the
    run is done again)."""
    with open_append(path, "r+b") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


class StudyResult:
    """The results table of a study, one row per run.

    Attributes
    ----------
    rows : list of dict
        In plan order (``index``); values parsed (floats; ``status``, ``message``,
        ``run_id``, ``worker`` as strings).
    parameters, outputs : list of str
        The varied parameters' and the outputs' column names.
    units : dict
        Units of the parameters.
    elapsed : float
        Wall time of the last :meth:`Study.run` (s); ``new_runs`` how many it ran.
    """

    def __init__(self, rows: list[dict[str, Any]], parameters: list[str],
                 outputs: list[str], units: Mapping[str, str] | None = None,
                 directory: str | None = None):
        self.rows = sorted(rows, key=lambda r: r["index"])
        self.parameters = parameters
        self.outputs = outputs
        self.units = dict(units or {})
        self.directory = directory
        self.elapsed = math.nan
        self.new_runs = 0

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> np.ndarray:
        """A column as an array (floats where numeric)."""
        vals = [r.get(name) for r in self.rows]
        try:
            return np.array(vals, dtype=float)
        except (TypeError, ValueError):
            return np.array(vals, dtype=object)

    @property
    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    @property
    def n_ok(self) -> int:
        return self.status_counts.get("ok", 0)

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The rows whose status is not ``ok``."""
        return [r for r in self.rows if r["status"] != "ok"]

    def history(self, run_id: str) -> dict[str, np.ndarray]:
        """The history file of a run (``t`` and ``<output>/<column>`` arrays)."""
        path = os.path.join(self.directory or ".", HISTORIES, f"{run_id}.npz")
        with np.load(path) as z:
            return {k: z[k] for k in z.files}

    def to_dataframe(self):
        """The table as a pandas DataFrame (needs pandas)."""
        pd = require_extra("pandas", "to_dataframe()", "dataframe")
        return pd.DataFrame(self.rows)

    def write_parquet(self, path: str) -> str:
        """The table as a Parquet file (needs pyarrow)."""
        pa = require_extra("pyarrow", "write_parquet()", None)
        pq = require_extra("pyarrow.parquet", "write_parquet()", None)
        cols = {}
        for k in (self.rows[0].keys() if self.rows else []):
            vals = [r.get(k) for r in self.rows]
            if all(isinstance(v, (int, float)) for v in vals):
                cols[k] = pa.array(vals, type=pa.int64() if k == "index" else pa.float64())
            else:                               # text (a history's path; NaN if failed)
                cols[k] = pa.array([None if isinstance(v, float) and math.isnan(v)
                                    else str(v) for v in vals], type=pa.string())
        pq.write_table(pa.table(cols), path)
        return path

    def plot(self, output: str, x: str, y: str | None = None, path: str | None = None):
        """See :func:`plot_study`."""
        return plot_study(self, output, x, y, path)

    def __repr__(self) -> str:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(self.status_counts.items()))
        return f"StudyResult({len(self.rows)} runs: {counts or 'none'})"


def read_results(directory: str | os.PathLike) -> StudyResult:
    """Read a study's ``results.csv`` (and ``study.json``) from ``directory``; a partial
    last line (a killed study) is ignored."""
    directory = os.fspath(directory)
    path = os.path.join(directory, RESULTS)
    if not os.path.exists(path):
        raise ModelError(f"{directory}: no {RESULTS} (give the --out directory of a study)")
    meta = {}
    mpath = os.path.join(directory, STUDY_JSON)
    if os.path.exists(mpath):
        with open(mpath, encoding="utf-8") as f:
            meta = json.load(f)
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(text.splitlines())
    head = next(reader, [])
    params = list(meta.get("parameters", {}).get("values", {}) or
                  meta.get("parameters", {}).get("distributions", {}))
    outputs = list(meta.get("outputs", {}))
    rows = []
    for rec in reader:
        if len(rec) != len(head):
            continue
        row: dict[str, Any] = {}
        for k, v in zip(head, rec):
            if k in ("run_id", "status", "message", "worker"):
                row[k] = v
            elif k == "index":
                row[k] = int(v)
            else:
                try:
                    row[k] = float(v) if v != "" else math.nan
                except ValueError:
                    row[k] = v
        rows.append(row)
    return StudyResult(rows, params, outputs, meta.get("units"), directory)


# =======================================================================================
# Plots
# =======================================================================================

def plot_study(result: StudyResult, output: str, x: str, y: str | None = None,
               path: str | None = None):
    """A figure of ``output`` against parameter ``x`` (one line per combination of the
    other parameters, up to 8, else points), or against ``x`` and ``y``: a heat map with
    contour lines when the runs form a grid, else points coloured by the output. Failed
    runs are gaps. Writes ``path`` (PNG, ...) when given; returns the figure."""
    plt = pyplot("plot_study", to_file=path is not None)
    for name in (output, x) + ((y,) if y else ()):
        if not result.rows or name not in result.rows[0]:
            raise ModelError(f"plot: the table has no column {name!r}")
    z = result.column(output)
    xs = result.column(x)

    def label(p):
        u = result.units.get(p, "")
        return f"{p} ({u})" if u else p

    fig, ax = plt.subplots(figsize=(6, 4))
    if y is None:
        others = [p for p in result.parameters if p not in (x,)]
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(result.rows):
            groups.setdefault(tuple(r.get(p) for p in others), []).append(i)
        if len(groups) <= 8:
            for key, idx in groups.items():
                idx = sorted(idx, key=lambda i: xs[i])
                lab = ", ".join(f"{p} = {v:.4g}" for p, v in zip(others, key)) or None
                ax.plot(xs[idx], z[idx], "o-", ms=3, lw=1.2, label=lab)
            if len(groups) > 1:
                ax.legend(fontsize=7)
        else:
            ax.plot(xs, z, ".", ms=4)
        ax.set_xlabel(label(x))
        ax.set_ylabel(output)
    else:
        ys = result.column(y)
        ux, uy = np.unique(xs), np.unique(ys)
        if ux.size * uy.size == len(result.rows) and ux.size > 1 and uy.size > 1:
            Z = np.full((uy.size, ux.size), np.nan)
            Z[np.searchsorted(uy, ys), np.searchsorted(ux, xs)] = z
            mesh = ax.pcolormesh(ux, uy, np.ma.masked_invalid(Z), shading="nearest",
                                 cmap="viridis")
            if np.isfinite(Z).sum() >= 4 and np.nanmax(Z) > np.nanmin(Z):
                ax.contour(ux, uy, np.ma.masked_invalid(Z), colors="w", linewidths=0.6)
        else:
            mesh = ax.scatter(xs, ys, c=z, s=14, cmap="viridis")
        fig.colorbar(mesh, ax=ax, label=output)
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(y))
    n_bad = len(result.failures)
    ax.set_title(f"{output}" + (f" ({n_bad} failed runs not shown)" if n_bad else ""),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    if path is not None:
        ext = os.path.splitext(os.fspath(path))[1]
        try:
            with atomic_path(path, ext) as tmp:
                fig.savefig(tmp, dpi=120, format=ext[1:].lower() or "png")
        finally:
            plt.close(fig)
    return fig
