"""The stepping loop of a run: the solver's steps from the start to the end of the span,
a terminal event, a failure or the budget.

- :func:`step_until_done`: takes the steps (in compiled calls where
  :mod:`bondgraph._fastrk` applies, else scipy's ``step()``), starts a new solver at
  every break of the sources (where one jumps or has a kink), fills the output grid,
  the events and the dense output, reports progress, watches for stiffness, and ends
  with a :class:`Run`: how it ended, the last accepted time and state, the counts.
- :class:`Steps`, :class:`StepBudget`: what the loop is given.

A failure never loses work: the run ends at the last step the solver accepted
(``t_ok``), which is the failure time it reports; where the trouble was found beyond
it (a trial stage), the message says so. A solver that raises on the values it got
(scipy's implicit methods factor a Jacobian with NaN in it) ends the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import OdeSolver
from scipy.integrate._ivp.common import OdeSolution

from ._diagnosis import StiffnessMonitor
from ._events import EventTracker
from ._fastrk import CHUNK
from ._output import OutputGrid
from ._rhs import RightHandSide
from .errors import IntegrationWarning, caused_by_interrupt, warn
from .results import Status

__all__ = ["step_until_done", "Steps", "StepBudget", "Run", "WALL_CHECK"]


@dataclass(frozen=True)
class StepBudget:
    """A run's bounds on its work: accepted steps and wall-clock seconds (None: none),
    and the wall-clock deadline (time.monotonic())."""

    max_steps: int | None
    max_wall_time: float | None
    deadline: float | None


@dataclass(frozen=True)
class Steps:
    """The stepping options that travel together: the solver class, the keywords of its
    constructor, the budget, the compiled loop, the breaks (where a segment ends)."""

    solver_cls: type[OdeSolver]
    kwargs: dict
    budget: StepBudget
    compiled: Any = None          # the run's CompiledLoop (bondgraph._fastrk), or None
    breaks: tuple[float, ...] = ()
    starts: tuple[float, ...] = ()   # where the segment after each break starts

    def solver(self, rhs, t: float, y: np.ndarray, t_bound: float, first: bool):
        """A new solver from (t, y) to ``t_bound`` (the user's first step only on the
        run's first segment)."""
        kwargs = dict(self.kwargs)
        left = abs(t_bound - t)
        if not first:
            kwargs.pop("first_step", None)
        elif kwargs.get("first_step") is not None and kwargs["first_step"] > left:
            # (a segment that ends sooner than the first step asked for: a hybrid run's
            # switch 5e-15 s before a source's break; scipy refuses such a step)
            if left > 0:
                kwargs["first_step"] = left
            else:
                kwargs.pop("first_step")
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return self.solver_cls(rhs, t, y, t_bound, **kwargs)   # (its first step)


@dataclass
class Run:
    """How the stepping loop ended: the status, message and failure time, the steps,
    the dense output, the last solver, the last accepted time and state (``t_ok``,
    ``y_ok``) and the evaluation counts of every segment's solver."""

    status: Status
    message: str
    failure_time: float | None
    n_steps: int
    sol: Any
    solver: Any
    t_ok: float
    y_ok: np.ndarray
    counts: dict


WALL_CHECK = 0.2
"""Wall-clock seconds a compiled call of steps takes at most when the run reports
progress or has a time budget (its step count is chosen from the last call's pace)."""


def step_until_done(solver, rhs: RightHandSide, output: OutputGrid,
                     tracker: EventTracker, steps: Steps, progress, dense_output,
                     stiffness: StiffnessMonitor, t_end: float) -> Run:
    """Take the solver's steps until the end of the span, a terminal event, a failure or
    the budget; a new solver at every break (:attr:`Steps.breaks`); fill the output
    grid, the events and the dense output on the way; warn (once) when an explicit
    method's steps show the run to be stiff."""
    interpolants: list = []
    ts_dense: list[float] = [solver.t]
    n_steps = 0
    loop = steps.compiled
    budget = steps.budget
    # the bounds of the segments after the current one and where each starts, as arrays
    # read from ``nxt`` on (the compiled loop is handed views of them)
    bounds = np.array([*steps.breaks[1:], t_end], dtype=float)
    starts = np.array(steps.starts, dtype=float)
    nxt = 0
    done = {"nfev": 0, "njev": 0, "nlu": 0}
    t_ok, y_ok = float(solver.t), np.array(solver.y)
    gap = (np.nan, np.nan)                   # (a segment's start, one float after its break)
    paced = progress is not None or budget.deadline is not None
    max_k = 1 if dense_output else (CHUNK if not paced else 8)

    def counts():
        return {k: done[k] + int(getattr(solver, k, 0) or 0) for k in done}

    def end(status, message, failure_time):
        return Run(status, message, failure_time, n_steps,
                    _dense(dense_output, ts_dense, interpolants), solver, t_ok, y_ok,
                    counts())

    while True:
        if solver.status == "finished":
            if nxt >= bounds.size or float(solver.t) >= t_end:
                break
            for k in done:                       # the next segment, from the break
                done[k] += int(getattr(solver, k, 0) or 0)
            # (from the first float of the value after the break (its last float before:
            # solver.t), so that no stage of either segment sees the other side's value,
            # or Heaviside's 1/2 where its argument is 0: a wrong first stage costs a
            # step an error its error estimate hardly sees)
            after = float(starts[nxt]) if nxt < starts.size else \
                float(np.nextafter(solver.t, t_end))
            if not solver.t < after < bounds[nxt]:
                after = float(np.nextafter(solver.t, t_end))
            gap = (after, float(solver.t))   # (events: the step from it starts at the break)
            try:
                bound = float(bounds[nxt])
                nxt += 1
                solver = steps.solver(rhs, after, solver.y, bound, False)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                return end(*_solver_raised(exc, rhs, t_ok))
            continue
        t_prev = solver.t
        taken = 0
        if loop is not None:          # many steps in one compiled call, or none
            limit = max_k if budget.max_steps is None else \
                min(max_k, budget.max_steps + 1 - n_steps)
            started = time.monotonic()
            # (the loop fills the output times itself, except where a step limit
            # may end the run inside the call: its last step's outputs are not kept)
            # (the loop also goes on into the next segments, as a new solver below
            # would, where there are no events and no dense output)
            taken = loop.advance(solver, output.next_time, limit, stiffness,
                                 tracker.scan if tracker.events else None, dense_output,
                                 output if budget.max_steps is None else None,
                                 (bounds[nxt:], starts[nxt:]))
            nxt += loop.restarts
            t_prev = solver.t_old if taken else t_prev
            if paced and taken and not dense_output:
                pace = (time.monotonic() - started) / taken
                max_k = int(min(CHUNK, max(1, WALL_CHECK / pace if pace > 0 else CHUNK)))
        if not taken:
            try:
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    msg = solver.step()  # (the evaluations' warnings are its business)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                # an implicit solver's LU of a Jacobian with NaN in it, and the like
                return end(*_solver_raised(exc, rhs, t_ok))
        failure = rhs.failure
        if failure is not None:          # (the solver stopped on the NaNs it got after)
            return end(failure.status, failure.message + _beyond(failure.time, t_ok),
                       t_ok)
        if solver.status == "failed":
            status, message = Status.STEP_FAILED, f"{msg} (at t = {t_ok:.6g} s)"
            singular = rhs.singular_cause(t_ok)
            if singular is not None:         # the motion reached a singular configuration
                return end(Status.SINGULAR, singular[1] + _beyond(singular[0], t_ok),
                           t_ok)
            cause = rhs.cause(t_ok)
            if cause is not None and cause[0] - t_ok < \
                    10 * max(abs(t_ok), 1.0) * np.finfo(float).eps ** 0.5 + \
                    max(solver.step_size or 0.0, float(solver.t) - t_ok):
                tn, why = cause
                status = Status.NON_FINITE
                message = (f"non-finite state derivative: {why} at t = {tn:.6g} s; the "
                           f"solver could not step past t = {t_ok:.6g} s")
            return end(status, message, t_ok)
        n_steps += max(taken, 1)
        if budget.max_steps is not None and n_steps > budget.max_steps:
            return end(Status.STEP_LIMIT, f"more than max_steps = {budget.max_steps} steps "
                                          f"by t = {solver.t:.6g} s (the results reach "
                                          f"t = {t_ok:.6g} s)", t_ok)
        if stiffness.active and (loop.stiff_now if taken else stiffness.step(solver)):
            warn(stiffness.message, IntegrationWarning)
        if progress is not None:
            progress(solver.t)
        t_new = solver.t
        if not np.all(np.isfinite(solver.y)):
            cause = rhs.cause(t_ok)
            why = f": {cause[1]} at t = {cause[0]:.6g} s" if cause else ""
            return end(Status.NON_FINITE, f"non-finite state at t = {t_new:.6g} s (the last "
                                          f"finite one at t = {t_ok:.6g} s){why}", t_ok)
        t_ok, y_ok = float(t_new), solver.y
        interpolate = _Interpolant(solver, loop if taken else None)
        if t_prev == gap[0]:     # (the events' last values are the break's, one float back)
            t_prev = gap[1]
        terminate_at = tracker.step(t_prev, t_new, solver.y, interpolate)
        storm = tracker.storm
        if storm:
            terminate_at = t_new
        output.fill(t_new if terminate_at is None else terminate_at, t_new, solver.y,
                    interpolate)
        if dense_output:
            interpolants.append(interpolate.function())
            ts_dense.append(t_new)
        if storm:
            return end(Status.EVENT_STORM,
                       f"{tracker.n_crossings} event crossings by t = {t_new:.6g} s exceed "
                       f"max_events = {tracker.max_events} (an event storm)", t_new)
        if terminate_at is not None:
            output.end_at(terminate_at, interpolate(terminate_at))
            return end(Status.EVENT, f"terminal event at t = {terminate_at:.6g} s", None)
        if budget.deadline is not None and time.monotonic() > budget.deadline and \
                solver.status == "running":
            return end(Status.TIME_LIMIT, f"the run took more than max_wall_time = "
                                          f"{budget.max_wall_time:g} s of wall-clock time "
                                          f"by t = {t_new:.6g} s", float(t_new))
    return end(Status.SUCCESS, Status.SUCCESS.description, None)


def _beyond(t_found: float, t_ok: float) -> str:
    """Where a failure was found, when that is beyond the last accepted step (a trial
    stage): what the message adds ("" otherwise)."""
    if t_found - t_ok <= 1e-12 * max(1.0, abs(t_ok)):
        return ""
    return (f" (found at a trial stage at t = {t_found:.6g} s; the last accepted step "
            f"ends at t = {t_ok:.6g} s)")


def _solver_raised(exc: BaseException, rhs: RightHandSide, t_ok: float
                   ) -> tuple[Status, str, float]:
    """(status, message, failure time) when the solver itself raised on the values it
    got (scipy's implicit methods factor a Jacobian with NaN in it: ValueError)."""
    if caused_by_interrupt(exc):
        raise KeyboardInterrupt from exc
    if rhs.failure is not None:
        f = rhs.failure
        return f.status, f.message + _beyond(f.time, t_ok), t_ok
    why = f"{type(exc).__name__}: {exc}"
    if rhs.cause(t_ok) is not None:
        tn, what = rhs.cause(t_ok)
        return (Status.NON_FINITE, f"non-finite state derivative: {what} at t = "
                                   f"{tn:.6g} s; the solver could not step past t = "
                                   f"{t_ok:.6g} s (it raised {why})", t_ok)
    return Status.STEP_FAILED, f"the solver raised {why} (at t = {t_ok:.6g} s)", t_ok


class _Interpolant:
    """The last step's interpolant, built on first use (it costs DOP853 three more
    evaluations: only steps with output times, events or dense output pay for it)."""

    def __init__(self, solver, loop=None):
        self._solver = solver
        self._loop = loop          # (the compiled loop that took the step, or None)
        self._f = None

    def function(self):
        if self._f is None:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                self._f = self._solver.dense_output() if self._loop is None else \
                    self._loop.dense_output(self._solver)
        return self._f

    def __call__(self, t: float) -> np.ndarray:
        return self.function()(t)


def _dense(dense_output, ts_dense, interpolants):
    """The dense output over the steps taken (or None)."""
    return OdeSolution(ts_dense, interpolants) if dense_output and interpolants else None
