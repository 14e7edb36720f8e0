"""What a study keeps of each run, and one run.

- :class:`Output`: a value of each run, from result columns reduced over time
  (:data:`REDUCTIONS`) or a named quantity (:data:`QUANTITIES`).
- :func:`execute_run`: run one point and return its row (never raises for the run's own
  failure: its error is the row's message; an interrupt stops the study).
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.errors import BondGraphError, IntegrationWarning, caused_by_interrupt

from elements.study.model import ParametricModel
from elements.study.names import HISTORIES
from elements.study.plans import Run


REDUCTIONS = ("final", "initial", "max", "min", "mean", "max_abs", "rms", "history")
"""How an output turns a column over time into a value: the value at the last or first
output time, the largest, the smallest, the mean over the output times, the largest
magnitude, the root mean square, or the whole ``history`` (written to a file per run)."""

QUANTITIES = {
    "energy_drift": "relative drift of the energy balance (1): EnergyLedger.relative_drift",
    "max_phi": "largest |Phi| over joints and output times (m or rad)",
    "max_constraint_flow": "largest |c| over joints and output times (m/s or rad/s)",
    "n_steps": "accepted solver steps (1)",
    "nfev": "right-hand-side evaluations (1)",
    "t_reached": "the last output time reached (s)",
}
"""Whole-run quantities an :class:`Output` can keep instead of a column."""


@dataclass(frozen=True)
class Output:
    """A value to keep from each run.

    Parameters
    ----------
    name : str
        The table's column name.
    columns : tuple of str
        Result columns as in the CSV files of a run (``m2.x``, ``J3.F``, ``J3.Fx``,
        ``kinetic``, ``work.J1.actuator``, ...). With several, the value at each time is
        their Euclidean norm (a force's magnitude, say).
    reduce : str
        One of :data:`REDUCTIONS`; ``history`` keeps the columns over time (one ``.npz``
        file per run under ``histories/``; the table holds its path).
    quantity : str, optional
        Instead of columns, a whole-run quantity of :data:`QUANTITIES`.

    Examples
    --------
    >>> Output("J3_force_max", ("J3.Fx", "J3.Fy", "J3.Fz"), "max").reduce
    'max'
    >>> Output.of("drift", "energy_drift").quantity
    'energy_drift'
    """

    name: str
    columns: tuple[str, ...] = ()
    reduce: str = "final"
    quantity: str | None = None

    def __post_init__(self):
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        object.__setattr__(self, "columns", cols)
        if not isinstance(self.name, str) or not self.name or "," in self.name:
            raise ModelError(f"output name must be a non-empty string without ',', got "
                             f"{self.name!r}")
        if self.quantity is not None:
            if self.quantity not in QUANTITIES:
                raise ModelError(f"output {self.name!r}: unknown quantity "
                                 f"{self.quantity!r}; valid: {', '.join(QUANTITIES)}")
            if cols:
                raise ModelError(f"output {self.name!r}: give either columns or a quantity")
            return
        if not cols:
            raise ModelError(f"output {self.name!r}: give the columns (e.g. ['m2.x']) or a "
                             f"quantity ({', '.join(QUANTITIES)})")
        if self.reduce not in REDUCTIONS:
            raise ModelError(f"output {self.name!r}: unknown reduce {self.reduce!r}; valid: "
                             f"{', '.join(REDUCTIONS)}")

    @classmethod
    def of(cls, name: str, quantity: str) -> "Output":
        """A whole-run quantity (:data:`QUANTITIES`)."""
        return cls(name, (), "final", quantity)

    def evaluate(self, result, cols: Mapping[str, np.ndarray] | None) -> Any:
        """The output's value for one result (``cols``: its columns, by name)."""
        if self.quantity is not None:
            raw = result.raw
            return {"energy_drift": lambda: result.energy.relative_drift,
                    "max_phi": lambda: result.max_abs_phi,
                    "max_constraint_flow": lambda: result.max_abs_constraint_flow,
                    "n_steps": lambda: raw.n_steps, "nfev": lambda: raw.nfev,
                    "t_reached": lambda: float(result.t[-1]) if result.t.size else math.nan,
                    }[self.quantity]()
        assert cols is not None
        missing = [c for c in self.columns if c not in cols]
        if missing:
            raise ModelError(f"output {self.name!r}: no column(s) {', '.join(missing)}; "
                             f"columns: {', '.join(sorted(cols))}")
        if self.reduce == "history":
            return {c: np.asarray(cols[c], dtype=float) for c in self.columns}
        ys = [np.asarray(cols[c], dtype=float) for c in self.columns]
        y = ys[0] if len(ys) == 1 else np.linalg.norm(ys, axis=0)
        if y.size == 0:
            return math.nan
        return float({"final": lambda: y[-1], "initial": lambda: y[0],
                      "max": lambda: y.max(), "min": lambda: y.min(),
                      "mean": lambda: y.mean(), "max_abs": lambda: np.abs(y).max(),
                      "rms": lambda: np.sqrt(np.mean(y * y))}[self.reduce]())

    def describe(self) -> dict[str, Any]:
        return ({"quantity": self.quantity} if self.quantity else
                {"columns": list(self.columns), "reduce": self.reduce})


# =======================================================================================
# One run (in this process or on a worker)
# =======================================================================================

def execute_run(pm: ParametricModel, run: Run, outputs: Sequence[Output]) -> dict[str, Any]:
    """Run one point of a study and return its row: ``run_id``, ``index``, ``status``
    (``ok``; ``failed``: the simulation stopped early; ``error``: it could not run), the
    parameter values, the outputs (NaN unless ok), ``runtime_s`` (s), ``message`` and
    ``worker``. Never raises for a run's own failure: the error is the row's message."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"run_id": run.run_id, "index": run.index, **run.values}
    histories: dict[str, dict[str, np.ndarray]] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IntegrationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            result = pm.simulate(run.values, reuse=True)     # outputs are read below
        if result.success:
            cols = None
            if any(o.quantity is None for o in outputs):
                b, j, e = result.columns()
                cols = {**b, **j, **e}
                t = cols.get("t")
            for o in outputs:
                v = o.evaluate(result, cols)
                if o.reduce == "history" and o.quantity is None:
                    histories[o.name] = {"t": np.asarray(t, dtype=float), **v}
                    row[o.name] = f"{HISTORIES}/{run.run_id}.npz"
                else:
                    row[o.name] = v
            row["status"], row["message"] = "ok", ""
        else:
            for o in outputs:
                row[o.name] = math.nan
            row["status"] = "failed"
            ft = result.raw.failure_time
            row["message"] = f"{result.raw.status.name}" + \
                (f" at t = {ft:.6g} s" if ft is not None else "") + \
                f": {' '.join(str(result.message).split())}"
    except (BondGraphError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        for o in outputs:
            row[o.name] = math.nan
        row["status"] = "error"
        row["message"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    except Exception as exc:  # noqa: BLE001 - a run's bug is its row, not the study's end
        if caused_by_interrupt(exc):     # (a Ctrl-C inside compiled code): not a row
            raise KeyboardInterrupt from exc
        for o in outputs:
            row[o.name] = math.nan
        row["status"] = "error"
        row["message"] = f"internal error {type(exc).__name__}: {' '.join(str(exc).split())}"
    row["runtime_s"] = time.perf_counter() - t0
    row["worker"] = _worker_name()
    if histories:
        row["_histories"] = histories
    return row


def _worker_name() -> str:
    if "distributed" in sys.modules:          # never import Dask for an in-process run
        try:
            from distributed import get_worker
            return get_worker().address
        except (ImportError, ValueError):
            pass
    return f"pid {os.getpid()}"


def _execute_task(pm: ParametricModel, run: Run, outputs: Sequence[Output]
                  ) -> dict[str, Any]:
    """The Dask task: one run."""
    return execute_run(pm, run, outputs)
