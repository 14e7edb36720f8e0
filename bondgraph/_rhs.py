"""The right-hand side a solver integrates: dX/dt at (t, x), with failures as values.

- :class:`RightHandSide`: callable ``(t, x) -> dX/dt``. The sparse evaluation where it
  applies, the dense one otherwise and wherever the sparse one cannot answer. It never
  raises to tell the stepping loop something: a failure it cannot recover from (a user
  function that raised, a singular configuration, a derivative that stays non-finite)
  is recorded in :attr:`RightHandSide.failure` and every later call returns NaN, so
  that the solver rejects its step, shrinks it to its floor and stops; the loop then
  reports the recorded failure. A non-finite derivative at a trial stage is not a
  failure (the solver rejects that step and tries a smaller one), nor is a nonlinear
  law that is not finite there (:class:`~bondgraph.NonFiniteLawError`: a square root
  of a negative pressure past a tank's draining): it is remembered in
  :attr:`RightHandSide.nonfinite` so that a run that cannot get past it says why.
  :attr:`RightHandSide.calls` counts every evaluation, also those an implicit solver
  makes for its finite-difference Jacobian (which scipy's ``nfev`` leaves out).
- :class:`Failure`: a recorded failure's status, message and time.

An interrupt (KeyboardInterrupt, also when compiled code turns it into another error
chained to it) is never recorded: it goes on and stops the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import NonFiniteLawError, SingularConstraintError, caused_by_interrupt
from .results import Status

__all__ = ["RightHandSide", "Failure", "MAX_NONFINITE", "STATE_NONFINITE"]

STATE_NONFINITE = "the state became non-finite"
"""Why a trial stage's derivative is not finite when its state is not (a stage built
from an earlier non-finite derivative: that one names the cause)."""

MAX_NONFINITE = 500
"""Non-finite derivatives at trial stages after which the run is stopped (the solver is
not getting past them)."""


@dataclass(frozen=True)
class Failure:
    """Why a run cannot go on: its status, a message naming the cause, and the time (s)
    where it happened."""

    status: Status
    message: str
    time: float


class RightHandSide:
    """dX/dt of ``model`` for a solver (see the module docstring).

    Parameters
    ----------
    model : StateSpaceModel
    stabilization : Baumgarte or None
    fast : SparseReduction or None
        The sparse evaluation, where it applies (full rank, Eq. (15) or no constraint).
    workspace : bondgraph.sparse.Workspace or None
        The run's workspace of the sparse evaluation.
    rank0 : int
        The constraint matrix's rank at the initial state: a smaller rank later is a
        singular configuration.
    reference : callable
        The constraint matrix's scale at the initial state (computed on first use),
        below which the dense reduction counts singular values as lost rank.
    """

    def __init__(self, model, stabilization, fast, workspace, rank0: int, reference):
        self.model = model
        self.stabilization = stabilization
        self.fast = fast
        self.workspace = workspace
        self.rank0 = rank0
        self.reference = reference
        self.failure: Failure | None = None
        self.calls = 0          # every evaluation asked for, the Jacobian's included
        self.nonfinite: list[tuple[float, str]] = []
        self.singular: list[tuple[float, str]] = []     # trial stages rejected as singular
        self._nan = np.full(model.n_states, np.nan)
        self._nan.setflags(write=False)
        # the compiled right-hand side (bondgraph._fastrk.compiled_evaluation), where the
        # run steps in Python and the model's whole evaluation is compiled; set by the
        # run after the first evaluation (which the Python path makes: it checks the
        # compiled sources' kernels and sets the pivot order)
        self.compiled = None

    def __call__(self, t: float, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.failure is not None:
            return self._nan.copy()
        fast = self.fast
        if self.compiled is not None and math.isfinite(t):
            xdot = self.compiled.evaluate(t, x)     # (None: it cannot answer here)
            if xdot is not None:
                return xdot
        # the sparse evaluation at a finite state: the common case; anything else goes
        # the full path, which repeats the evaluation, finds out why and records it
        if fast is not None and math.isfinite(t):
            try:
                xdot = fast.derivative(t, x, self.stabilization, self.workspace)
            except (SingularConstraintError, NonFiniteLawError):
                xdot = None
            except Exception as exc:  # a user callable (source, modulus, rate) raised
                if caused_by_interrupt(exc):
                    raise KeyboardInterrupt from exc
                if np.isfinite(x).all():
                    return self._user_error(t, exc)
                xdot = None                     # (at a non-finite state: that is the news)
            # (x's sum: a NaN in a state nothing reads leaves dX/dt finite; a sum is
            # finite only where every term is, or it overflowed: then the full path)
            if xdot is not None and math.isfinite(xdot.sum()) and math.isfinite(x.sum()):
                return xdot
        return self._full(t, x)

    def grouped_differences(self, t: float, y: np.ndarray, f0: np.ndarray, h: np.ndarray,
                            groups: tuple, J: np.ndarray) -> int:
        """Columns of a finite-difference Jacobian by the compiled right-hand side in one
        call (:meth:`bondgraph._fastrk.CompiledLoop.grouped_differences`), written into
        ``J``: the groups answered, in order, each counted as an evaluation in
        :attr:`calls`; 0 where there is no compiled right-hand side or a failure is
        recorded (the caller evaluates the rest through this object)."""
        if self.compiled is None or self.failure is not None or not math.isfinite(t):
            return 0
        done = self.compiled.grouped_differences(t, y, f0, h, groups, J)
        self.calls += done
        return done

    # -- the full path ---------------------------------------------------------------------
    def _full(self, t, x) -> np.ndarray:
        model = self.model
        if not math.isfinite(t) or len(self.nonfinite) > MAX_NONFINITE:
            # the solver cannot recover (e.g. a non-finite step size): stop here
            last = self.nonfinite[-1] if self.nonfinite else (t, "the time became "
                                                                 "non-finite")
            return self._fail(Status.NON_FINITE, f"non-finite state derivative: {last[1]} "
                                                 f"near t = {last[0]:.6g} s", last[0])
        if not np.isfinite(x).all():     # a trial stage built from a non-finite derivative
            self.nonfinite.append((t, STATE_NONFINITE))
            return self._nan.copy()
        try:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                ev = None
                if self.fast is not None:
                    ev = self.fast.evaluate(t, x, self.stabilization, self.workspace)
                if ev is None:
                    ev = model.evaluate(t, x, stabilization=self.stabilization,
                                        redundancy_ok=True, rank_reference=self.reference())
        except SingularConstraintError as exc:
            if getattr(exc, "non_finite", False):    # overflow at a trial stage: reject it
                self.nonfinite.append((t, str(exc)))
                return self._nan.copy()
            return self._fail(Status.SINGULAR, str(exc),
                              exc.time if exc.time is not None else t)
        except NonFiniteLawError as exc:  # a law undefined at this trial stage: reject it
            self.nonfinite.append((t, str(exc)))
            return self._nan.copy()
        except Exception as exc:  # a user callable (source, modulus, rate) raised
            if caused_by_interrupt(exc):
                raise KeyboardInterrupt from exc
            return self._user_error(t, exc)
        if not np.isfinite(ev.U1).all():
            bad = model._u1_names_at(np.flatnonzero(~np.isfinite(ev.U1)))
            self.nonfinite.append((t, f"source(s) {', '.join(bad)} returned a non-finite "
                                      f"value"))
        elif not np.isfinite(ev.xdot).all():
            self.nonfinite.append((t, "the state derivative is not finite"))
        elif ev.rank < self.rank0:
            # a trial stage in a singular configuration: rejected like a non-finite one
            # (a stiff model's explicit stages can stray there while its steps do not);
            # where the accepted motion reaches it, the solver cannot step past, and
            # the run ends SINGULAR with this message (bondgraph._stepping)
            self.singular.append((t, f"singular configuration at t = {t:.6g} s: the "
                                     f"constraint matrix lost rank ({ev.rank} < "
                                     f"{self.rank0}); "
                                     f"{model.deficient_sources_text(ev.H4)}"))
            return self._nan.copy()
        else:
            return ev.xdot
        # a non-finite derivative at a trial stage: the solver rejects the step and
        # shrinks it; if it cannot get past, the run fails there (the loop says so)
        return self._nan.copy()

    def singular_cause(self, since: float) -> tuple[float, str] | None:
        """The last singular configuration a trial stage met at or after ``since`` (s),
        as (time, why); None when there is none."""
        recent = [item for item in self.singular if item[0] >= since]
        return recent[-1] if recent else None

    def cause(self, since: float) -> tuple[float, str] | None:
        """The last non-finite derivative at or after ``since`` (s) as (time, why),
        preferring a named cause (a law, a source) to a trial state that became
        non-finite after one; None when there is none."""
        recent = [(t, why) for t, why in self.nonfinite if t >= since]
        named = [item for item in recent if item[1] != STATE_NONFINITE]
        return (named or recent or [None])[-1]

    def _user_error(self, t, exc) -> np.ndarray:
        return self._fail(Status.CALLBACK_ERROR, f"a user function raised near t = "
                                                 f"{t:.6g} s: {type(exc).__name__}: {exc}", t)

    def _fail(self, status: Status, message: str, t: float) -> np.ndarray:
        if self.failure is None:
            self.failure = Failure(status, message, float(t))
        return self._nan.copy()
