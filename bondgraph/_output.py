"""What a run keeps: the states on the output grid, the dense output, and the result.

- :class:`OutputGrid`: the output times and the states there, filled step by step (from
  the step's end state or its interpolant).
- :func:`collect`: the :class:`~bondgraph.SimulationResult` of a run.
- :func:`derived_outputs`: U_2, c, Phi, the bond values and the stored energy at the
  output points, which a result computes when first asked for them.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .errors import ModelError, caused_by_interrupt
from .results import SimulationResult

__all__ = ["OutputGrid", "collect", "derived_outputs"]


class OutputGrid:
    """The states at the output times ``grid`` (sorted, s), filled as steps are taken:
    ``ts`` (the times filled so far, s) and ``xs`` (the states there, in rows), views of
    arrays made once for the whole grid (and one point more: a terminal event's)."""

    def __init__(self, grid: np.ndarray, t0: float, x0: np.ndarray):
        self.grid = grid
        try:
            self._T = np.empty(grid.size + 1)
            self._X = np.empty((grid.size + 1, np.size(x0)))
        except MemoryError:
            need = (grid.size + 1) * (np.size(x0) + 1) * 8
            raise ModelError(
                f"t_eval: {grid.size:,} output times of {np.size(x0)} states need "
                f"{need / 2 ** 30:.1f} GiB to keep, more than can be allocated here; "
                f"valid: fewer output times (e.g. 10001), or dense_output=True to "
                f"evaluate the solution at any time afterwards") from None
        self._n = 0
        self._k = 0
        # (the times at t0 up to rounding, relative to the times' size: a span of
        # femtoseconds is a span like any other)
        at_t0 = t0 + 1e-15 * max(abs(t0), abs(float(grid[-1]))) if grid.size else t0
        while self._k < grid.size and grid[self._k] <= at_t0:
            self._add(grid[self._k], x0)

    @property
    def ts(self) -> np.ndarray:
        """The times filled so far (s)."""
        return self._T[:self._n]

    @property
    def xs(self) -> np.ndarray:
        """The states at :attr:`ts`, one row each."""
        return self._X[:self._n]

    def _add(self, t, x) -> None:
        self._T[self._n] = t
        self._X[self._n] = x
        self._n += 1
        self._k += 1

    @property
    def next_time(self) -> float:
        """The next output time not yet filled (s; inf after the last)."""
        return float(self.grid[self._k]) if self._k < self.grid.size else np.inf

    def pending(self) -> tuple[np.ndarray, np.ndarray]:
        """The output times not yet filled, and the rows their states go to (views:
        whoever writes rows 0..m-1 then calls :meth:`take` with m)."""
        times = np.ascontiguousarray(self.grid[self._k:], dtype=float)
        return times, self._X[self._n:self._n + times.size]

    def take(self, m: int) -> None:
        """The next ``m`` output times' states are filled (the rows that
        :meth:`pending` gave: the compiled loop,
        :meth:`bondgraph._fastrk.CompiledLoop.advance`, writes them)."""
        self._T[self._n:self._n + m] = self.grid[self._k:self._k + m]
        self._n += m
        self._k += m

    def fill(self, t_stop: float, t_new: float, y_new: np.ndarray, interpolate) -> None:
        """Every output time up to ``t_stop`` within the step ending at ``t_new`` (where
        the state is ``y_new``; ``interpolate(t)`` inside the step)."""
        grid = self.grid
        stop = self._k
        while stop < grid.size and grid[stop] <= t_stop:
            stop += 1
        inside = [k for k in range(self._k, stop) if grid[k] != t_new]
        # (the interpolant called once for all the step's times: a scipy interpolant
        # costs about 10 us per call, whatever the number of times)
        at = interpolate(grid[inside]) if inside else None
        column = {k: i for i, k in enumerate(inside)}
        for k in range(self._k, stop):
            t = grid[k]
            self._add(t, y_new if t == t_new else at[:, column[k]])

    def end_at(self, t: float, x: np.ndarray) -> None:
        """A last point at ``t`` (a terminal event), unless the grid already ends there."""
        if not self._n or self._T[self._n - 1] < t:
            self._T[self._n] = t
            self._X[self._n] = x
            self._n += 1


def collect(model, ts, xs, stabilization, status, message, failure_time, nfev: int,
            n_steps: int, deficiency: int, redundancy: str, branch, sol, t_events,
            fast=None, diagnostics=None) -> SimulationResult:
    """The result of a run of ``model``: output times ``ts`` and states ``xs`` (one per
    time: sequences, or arrays with a row per time),
    how it ended, the counts, the constraints' redundancy at the start and the branch,
    the dense output ``sol`` (or None), the event times and the run's diagnostics."""
    n = len(ts)
    X = np.array(xs).T if n else np.zeros((model.n_states, 0))
    return SimulationResult(
        t=np.asarray(ts, dtype=float), x=X, state_names=model.state_names, status=status,
        message=message, success=status.success, failure_time=failure_time,
        nfev=int(nfev), n_steps=n_steps, rank_deficiency=int(deficiency),
        redundancy=redundancy, branch=branch, sol=sol,
        _state_slices=dict(model.state_slices), _bond_slices=model.bond_slices,
        t_events=tuple(np.asarray(v) for v in t_events),
        _u2_slices=dict(model.u2_slices),
        _outputs=partial(derived_outputs, model, stabilization, fast),
        diagnostics=dict(diagnostics or {}))


def derived_outputs(model, stabilization, fast, ts: np.ndarray, X: np.ndarray
                    ) -> dict[str, np.ndarray]:
    """U_2, c, Phi, the bond values and the stored energy at the output times ``ts`` and
    states ``X`` (columns): what :class:`SimulationResult` derives when first asked; NaN
    at a point where the evaluation fails (the failure state of a failed run); the
    times of such points are ``failed_at``, the first one's cause ``failed_why`` (a 0-d
    object array), so that the result can say so (:meth:`SimulationResult._derived`)."""
    n = ts.size
    n2 = model.n_u2
    ws = fast.workspace() if fast is not None else None
    out = {"U2": np.full((n2, n), np.nan), "c": np.full((n2, n), np.nan),
           "phi": np.full((n2, n), np.nan),
           "bond_values": np.full((model.layout.n_var, n), np.nan),
           "energy": np.full(n, np.nan)}
    failed: list[float] = []
    why = ""
    for i in range(n):
        x = np.array(X[:, i])
        try:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                ev = fast.evaluate(ts[i], x, stabilization, ws) if fast is not None \
                    else None
                if ev is None:
                    ev = model.evaluate(ts[i], x, stabilization=stabilization,
                                        redundancy_ok=True)
        except Exception as exc:  # the failure point itself: NaN there
            if caused_by_interrupt(exc):
                raise KeyboardInterrupt from exc
            failed.append(float(ts[i]))
            why = why or f"{type(exc).__name__}: {exc}"
            continue
        out["U2"][:, i] = ev.U2
        out["c"][:, i] = ev.constraint_flow
        out["phi"][:, i] = ev.phi
        out["bond_values"][:, i] = ev.bond_values
        out["energy"][i] = model.stored_energy(x)
    out["failed_at"] = np.array(failed, dtype=float)
    out["failed_why"] = np.array(why, dtype=object)
    return out
