"""Time integration of a :class:`~bondgraph.StateSpaceModel`.

- :func:`simulate`: adaptive embedded Runge-Kutta (Dormand-Prince 5(4) by default,
  DOP853 for tight tolerances, or any scipy ``OdeSolver`` subclass), output on a time
  grid, dense output, events; returns a :class:`~bondgraph.SimulationResult`.

The stepping loop is ours (not ``solve_ivp``) so that a failure mid-run keeps
everything computed up to it, and output memory is bounded by the output grid.
"""

from __future__ import annotations

import math

import warnings
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.integrate import DOP853, RK45, OdeSolver
from scipy.integrate._ivp.common import OdeSolution
from scipy.optimize import brentq

from ._blas import one_blas_thread
from .errors import (
    IntegrationError,
    caused_by_interrupt,
    IntegrationWarning,
    ModelError,
    SingularConstraintError,
)
from .reduction import Baumgarte, StateSpaceModel
from .results import SimulationResult, Status

__all__ = ["simulate", "METHODS"]

METHODS: dict[str, type[OdeSolver]] = {"RK45": RK45, "DOP853": DOP853}
"""Named solvers: ``"RK45"`` (Dormand-Prince 5(4), default) and ``"DOP853"`` (8(5,3))."""


class _NonFinite(Exception):
    pass


class _UserError(Exception):
    pass


def simulate(model: StateSpaceModel, t_span: tuple[float, float],
             x0: Mapping[str, Any] | np.ndarray, *,
             t_eval: Sequence[float] | np.ndarray | None = None,
             method: str | type[OdeSolver] = "RK45", rtol: float = 1e-8, atol: float = 1e-10,
             max_step: float = np.inf, first_step: float | None = None,
             stabilization: Baumgarte | None = None,
             events: Sequence[Callable[[float, np.ndarray], float]] = (),
             dense_output: bool = False, strict: bool = False,
             raise_on_failure: bool = False,
             progress: Callable[[float], None] | None = None,
             max_events: int = 10_000, max_steps: int | None = None,
             dense_reduction: bool = False) -> SimulationResult:
    """Simulate ``model`` over ``t_span`` from ``x0``.

    Parameters
    ----------
    model : StateSpaceModel
    t_span : (float, float)
        Start and end time (s).
    x0 : mapping of state name to value, or ndarray (n_states,)
        Initial state; a mapping must name every state.
    t_eval : array_like, optional
        Output times (s) within ``t_span``; default: 101 evenly spaced points.
    method : str or OdeSolver subclass
        ``"RK45"`` (default), ``"DOP853"``, or a scipy ``OdeSolver`` subclass.
    rtol, atol : float
        Error tolerances on every state.
    stabilization : Baumgarte, optional
        Constraint stabilisation gains (uses the junctions' position constraints).
    events : sequence of callables ``g(t, x) -> float``
        Zero crossings are located; an event with attribute ``terminal = True`` stops the
        run; ``direction`` as in scipy.
    dense_output : bool
        Keep a continuous solution (``result.sol``); it stores every step.
    strict : bool
        Refuse redundant constraints (rank-deficient H_4 at the initial state).
    raise_on_failure : bool
        Raise :class:`~bondgraph.IntegrationError` (holding the partial result) instead of
        returning it with ``success=False`` and an :class:`~bondgraph.IntegrationWarning`.
    progress : callable, optional
        Called with the time (s) after every accepted step (e.g. a progress bar).
    max_events : int
        More event crossings than this (an event storm, e.g. chattering) stop the run.
    max_steps : int, optional
        Stop (status STEP_FAILED) after this many accepted steps: a bound on the work.
    dense_reduction : bool
        Evaluate every step with the dense reduction (every J, T and H block formed, cost
        growing with the square and cube of the model's size) instead of the sparse one
        (:mod:`bondgraph.sparse`, linear for tree-like mechanisms). Both give the same
        numbers to rounding; the sparse one is used wherever it applies (Eq. (15) or no
        constraint, full rank), the dense one elsewhere and at any state where the sparse
        system is singular.

    Notes
    -----
    When the solver fails (its step size falls below its floor, or the state becomes
    non-finite), the constraint matrix at the last state is examined: if it is nearly
    singular (a singular configuration the run was heading into), the status is
    ``SINGULAR`` and the message names the unknown sources involved.

    Returns
    -------
    SimulationResult

    Raises
    ------
    ModelError
        Bad arguments or initial state (nothing is simulated).
    SingularConstraintError
        With ``strict=True``, when the constraints are redundant at the initial state.

    Examples
    --------
    >>> from bondgraph import models, assign_causality, assemble, simulate
    >>> bg = models.mass_spring_damper(m=1.0, k=4.0, b=0.0, force=0.0)
    >>> model = assemble(assign_causality(bg))
    >>> r = simulate(model, (0.0, 1.0), {"p_m": 0.0, "q_k": 0.1}, t_eval=[0.0, 1.0])
    >>> round(float(r.state("q_k")[-1]), 6)   # 0.1 cos(2 t)
    -0.041615
    """
    solver_cls, t0, t1, x_init, grid = _check_arguments(
        model, t_span, x0, t_eval, method, rtol, atol, max_step, first_step, stabilization,
        events, progress, max_events, max_steps)
    with one_blas_thread():
        return _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol, max_step,
                          first_step, stabilization, tuple(events), dense_output, strict,
                          raise_on_failure, progress, max_events, max_steps,
                          dense_reduction)


def _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol, max_step, first_step,
               stabilization, events, dense_output, strict, raise_on_failure, progress,
               max_events, max_steps, dense_reduction) -> SimulationResult:
    """:func:`simulate` once its arguments are checked."""

    # the initial state: the sparse evaluation where it applies (it is used only with full
    # rank), else the dense one, which also finds redundant constraints and the branch
    fast = None
    # the run's own workspace: its numbers do not depend on earlier runs or other threads
    ws = model.sparse().workspace() if not dense_reduction else None
    if not dense_reduction and model.sparse().applicable:
        fast = model.sparse()
        with np.errstate(all="ignore"):
            ev0 = fast.evaluate(t0, x_init, stabilization, ws)
        if ev0 is None or not np.all(np.isfinite(ev0.xdot)):
            fast = None
    if fast is None:
        ev0 = model.evaluate(t0, x_init, stabilization=stabilization, redundancy_ok=True)
    rank0 = ev0.rank
    deficiency = model.n_u2 - rank0
    redundancy = (model.deficient_sources_text(ev0.H4 if ev0.H4 is not None else None)
                  if deficiency > 0 else "")
    if strict and deficiency > 0:
        raise SingularConstraintError(
            f"redundant constraints at the initial state (strict mode): "
            f"{model.deficient_sources_text(ev0.H4 if ev0.H4 is not None else None)}",
            time=t0, sources=model.unknown_sources)
    if fast is None and not dense_reduction and deficiency == 0 and \
            ev0.branch in ("15", "none") and model.sparse().applicable:
        fast = model.sparse()
    # the constraint matrix's scale at the initial state, below which the dense
    # reduction counts singular values as lost rank; computed when first needed
    scale0 = [getattr(ev0, "constraint_scale", None)]

    def reference() -> float:
        if scale0[0] is None:
            scale0[0] = model.evaluate(t0, x_init, stabilization=stabilization,
                                       redundancy_ok=True).constraint_scale
        return scale0[0]

    nonfinite: list[tuple[float, str]] = []

    def fun(t, x):
        # the sparse evaluation at a finite state: the common case (full rank: the
        # sparse path is used only then); anything else goes the full path, which
        # repeats the evaluation, records why and reports
        if fast is not None and math.isfinite(t):
            try:
                xdot = fast.derivative(t, x, stabilization, ws)
            except SingularConstraintError:
                xdot = None
            except Exception as exc:  # a user callable (source, modulus, rate) raised
                if caused_by_interrupt(exc):
                    raise KeyboardInterrupt from exc
                if not np.isfinite(x).all():
                    return full(t, x)  # (at a non-finite state: that is the news)
                raise _UserError(f"{type(exc).__name__}: {exc}") from exc
            # (x's sum: a NaN in a state nothing reads leaves dX/dt finite; a sum is
            # finite only where every term is, or it overflowed: then the full path)
            if xdot is not None and math.isfinite(xdot.sum()) and math.isfinite(x.sum()):
                return xdot
        return full(t, x)

    def full(t, x):
        if not math.isfinite(t) or len(nonfinite) > 500:
            # the solver cannot recover (e.g. a non-finite step size): stop here
            why = nonfinite[-1][1] if nonfinite else "the time became non-finite"
            raise _NonFinite(f"non-finite state derivative: {why} near t = "
                             f"{(nonfinite[-1][0] if nonfinite else t):.6g} s")
        if not np.isfinite(x).all():     # a trial stage built from a non-finite derivative
            nonfinite.append((t, "the state became non-finite"))
            return np.full(model.n_states, np.nan)
        try:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                ev = fast.evaluate(t, x, stabilization, ws) if fast is not None else None
                if ev is None:
                    ev = model.evaluate(t, x, stabilization=stabilization,
                                        redundancy_ok=True, rank_reference=reference())
        except SingularConstraintError as exc:
            if getattr(exc, "non_finite", False):    # overflow at a trial stage: reject it
                nonfinite.append((t, str(exc)))
                return np.full(model.n_states, np.nan)
            raise
        except Exception as exc:  # a user callable (source, modulus, rate) raised
            if caused_by_interrupt(exc):
                raise KeyboardInterrupt from exc
            raise _UserError(f"{type(exc).__name__}: {exc}") from exc
        if not np.isfinite(ev.U1).all():
            bad = model._u1_names_at(np.flatnonzero(~np.isfinite(ev.U1)))
            nonfinite.append((t, f"source(s) {', '.join(bad)} returned a non-finite value"))
        elif not np.isfinite(ev.xdot).all():
            nonfinite.append((t, "the state derivative is not finite"))
        else:
            if ev.rank < rank0:
                raise SingularConstraintError(
                    f"singular configuration at t = {t:.6g} s: the constraint matrix lost "
                    f"rank ({ev.rank} < {rank0}); {model.deficient_sources_text(ev.H4)}",
                    time=t, sources=model.unknown_sources)
            return ev.xdot
        # a non-finite derivative at a trial stage: the solver rejects the step and
        # shrinks it; if it cannot get past, the run fails there (see below)
        return np.full(model.n_states, np.nan)

    with np.errstate(all="ignore"):
        finite0 = bool(np.all(np.isfinite(ev0.xdot)))
    if not finite0:
        bad = model._u1_names_at(np.flatnonzero(~np.isfinite(ev0.U1))) if \
            not np.all(np.isfinite(ev0.U1)) else []
        why = (f"source(s) {', '.join(bad)} are not finite" if bad else
               "the state derivative is not finite (check the parameters for overflow)")
        result = _collect(model, [t0], [x_init], stabilization, Status.NON_FINITE,
                          f"at the initial state t = {t0:.6g} s: {why}", t0, _Stats(), 0,
                          model.n_u2 - ev0.rank, "", ev0.branch, None, [])
        return _fail(result, raise_on_failure)

    kwargs: dict[str, Any] = {"rtol": rtol, "atol": atol, "max_step": max_step}
    if first_step is not None:
        kwargs["first_step"] = first_step
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        solver = solver_cls(fun, t0, x_init, t1, **kwargs)   # (its first step's choice)

    ts: list[float] = []
    xs: list[np.ndarray] = []
    interpolants: list = []
    ts_dense: list[float] = [t0]
    event_values = [float(e(t0, x_init)) for e in events]
    t_events: list[list[float]] = [[] for _ in events]
    n_crossings = 0
    k = 0
    while k < grid.size and grid[k] <= t0 + 1e-15 * max(1.0, abs(t0)):
        ts.append(grid[k])
        xs.append(x_init.copy())
        k += 1
    status = Status.SUCCESS
    message = Status.SUCCESS.description
    failure_time: float | None = None
    n_steps = 0
    terminate_at: float | None = None
    while solver.status == "running":
        t_prev = solver.t
        try:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                msg = solver.step()      # (the evaluations' warnings are its business)
        except SingularConstraintError as exc:
            status, message, failure_time = Status.SINGULAR, str(exc), exc.time
            break
        except _NonFinite as exc:
            status, message, failure_time = Status.NON_FINITE, str(exc), solver.t
            break
        except _UserError as exc:
            status = Status.CALLBACK_ERROR
            message = f"a user function raised near t = {solver.t:.6g} s: {exc}"
            failure_time = solver.t
            break
        if solver.status == "failed":
            status, message, failure_time = Status.STEP_FAILED, \
                f"{msg} (at t = {solver.t:.6g} s)", solver.t
            if nonfinite and nonfinite[-1][0] - solver.t < 10 * max(abs(solver.t), 1.0) * \
                    np.finfo(float).eps ** 0.5 + (solver.step_size or 0.0):
                tn, why = nonfinite[-1]
                status = Status.NON_FINITE
                message = (f"non-finite state derivative: {why} at t = {tn:.6g} s; the "
                           f"solver could not step past t = {solver.t:.6g} s")
            break
        n_steps += 1
        if max_steps is not None and n_steps > max_steps:
            status, message, failure_time = Status.STEP_FAILED, \
                f"more than max_steps = {max_steps} steps by t = {solver.t:.6g} s", solver.t
            break
        if progress is not None:
            progress(solver.t)
        # the interpolant costs DOP853 three more evaluations: build it only when a step
        # has output times, events or dense output to serve
        _dense: list = []

        def dense(tt, _dense=_dense, solver=solver):
            if not _dense:
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    _dense.append(solver.dense_output())
            return _dense[0](tt)
        t_new = solver.t
        if not np.all(np.isfinite(solver.y)):
            status, message, failure_time = Status.NON_FINITE, \
                f"non-finite state at t = {t_new:.6g} s", t_new
            break
        # events
        for j, e in enumerate(events):
            g_new = float(e(t_new, solver.y))
            g_old = event_values[j]
            direction = getattr(e, "direction", 0)
            crossed = (g_old < 0 <= g_new or g_old > 0 >= g_new) and g_old != g_new
            if crossed and (direction == 0 or np.sign(g_new - g_old) == np.sign(direction)):
                te = brentq(lambda tt: e(tt, dense(tt)), t_prev, t_new, xtol=1e-14)
                t_events[j].append(te)
                n_crossings += 1
                if getattr(e, "terminal", False):
                    terminate_at = te if terminate_at is None else min(terminate_at, te)
            event_values[j] = g_new
        if n_crossings > max_events:
            status = Status.EVENT_STORM
            message = (f"{n_crossings} event crossings by t = {t_new:.6g} s exceed "
                       f"max_events = {max_events} (an event storm)")
            failure_time = t_new
            terminate_at = t_new
        t_stop = t_new if terminate_at is None else terminate_at
        while k < grid.size and grid[k] <= t_stop:
            ts.append(grid[k])
            xs.append(solver.y.copy() if grid[k] == t_new else dense(grid[k]))
            k += 1
        if dense_output:
            if not _dense:
                dense(t_new)
            interpolants.append(_dense[0])
            ts_dense.append(t_new)
        if terminate_at is not None:
            if status is Status.EVENT_STORM:
                break
            status, message = Status.EVENT, f"terminal event at t = {terminate_at:.6g} s"
            if not ts or ts[-1] < terminate_at:
                ts.append(terminate_at)
                xs.append(dense(terminate_at))
            break

    if status in (Status.STEP_FAILED, Status.NON_FINITE) and n_steps == 0:
        # the run could not leave the initial state: the dense evaluation there (skipped
        # for the sparse one at the start) explains why where it can, by raising
        reference()
    if status in (Status.STEP_FAILED, Status.NON_FINITE) and model.n_u2:
        diag = _singularity(model, solver.t, solver.y, stabilization)
        if diag:
            status, message = Status.SINGULAR, f"{diag} ({message})"
    result = _collect(model, ts, xs, stabilization, status, message, failure_time, solver,
                      n_steps, deficiency, redundancy, ev0.branch,
                      OdeSolution(ts_dense, interpolants) if dense_output and interpolants
                      else None, t_events, fast)
    return _fail(result, raise_on_failure) if not status.success else result


def _check_arguments(model, t_span, x0, t_eval, method, rtol, atol, max_step, first_step,
                     stabilization, events, progress, max_events, max_steps):
    """:func:`simulate`'s arguments checked: (solver class, t0, t1, initial state, output
    grid), or a ModelError naming the argument and what is valid."""
    if not isinstance(model, StateSpaceModel):
        hint = {"BondGraph": "simulate(assemble(assign_causality(graph)), ...)",
                "CausalGraph": "simulate(assemble(causal_graph), ...)",
                "Mechanism": "mechanism.assemble().simulate(...)",
                "MechanismModel": "mechanism_model.simulate(...)"}.get(
                    type(model).__name__, "assemble a model first")
        raise ModelError(f"simulate takes a StateSpaceModel (from assemble), got "
                         f"{type(model).__name__}; {hint}")
    if isinstance(method, str):
        if method not in METHODS:
            raise ModelError(f"unknown method {method!r}; valid: {', '.join(METHODS)} or a "
                             f"scipy OdeSolver subclass")
        solver_cls = METHODS[method]
    elif isinstance(method, type) and issubclass(method, OdeSolver):
        solver_cls = method
    else:
        raise ModelError(f"method must be a name ({', '.join(METHODS)}) or an OdeSolver "
                         f"subclass, got {method!r}")
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ModelError(f"t_span must be two numbers (start, end) in s, got "
                         f"{t_span!r}") from None
    if not (np.isfinite(t0) and np.isfinite(t1)) or t1 <= t0:
        raise ModelError(f"t_span must be finite with end > start, got {t_span!r}")
    for name, val in (("rtol", rtol), ("atol", atol)):
        try:
            arr = np.asarray(val, dtype=float)
        except (TypeError, ValueError):
            arr = np.array(np.nan)
        if arr.ndim > 1 or (arr.ndim == 1 and arr.size not in (1, model.n_states)) or \
                not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ModelError(f"{name} must be positive and finite (a number, or one per "
                             f"state), got {val!r}")
    for name, val, none_ok in (("max_step", max_step, False),
                               ("first_step", first_step, True)):
        if val is None and none_ok:
            continue
        try:
            ok = float(val) > 0 and not np.isnan(float(val))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ModelError(f"{name} must be a positive number of seconds, got {val!r}")
    if stabilization is not None and not isinstance(stabilization, Baumgarte):
        raise ModelError(f"stabilization must be None or Baumgarte(alpha, beta), got "
                         f"{stabilization!r}")
    try:
        events = list(events)
    except TypeError:
        events = [events]
    for e in events:
        if not callable(e):
            raise ModelError(f"events must be callables g(t, x) -> float, got {e!r}")
    if progress is not None and not callable(progress):
        raise ModelError(f"progress must be a callable taking the time, got {progress!r}")
    for name, val in (("max_events", max_events), ("max_steps", max_steps)):
        if val is None and name == "max_steps":
            continue
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise ModelError(f"{name} must be a positive integer, got {val!r}")
    if isinstance(x0, Mapping):
        x_init = model.initial_state(x0)
    else:
        try:
            x_init = np.asarray(x0, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"x0 must be numbers, or a mapping of state names to values; "
                             f"got {x0!r}") from None
        if x_init.shape != (model.n_states,):
            raise ModelError(f"x0 has shape {x_init.shape}; valid: ({model.n_states},) for "
                             f"states {', '.join(model.state_names)}")
        if not np.all(np.isfinite(x_init)):
            raise ModelError("x0 must be finite")
    if t_eval is None:
        grid = np.linspace(t0, t1, 101)
    else:
        try:
            grid = np.asarray(t_eval, dtype=float).ravel()
        except (TypeError, ValueError):
            grid = np.array([np.nan])
        if grid.size == 0 or np.any(np.diff(grid) < 0) or grid[0] < t0 - 1e-12 or \
                grid[-1] > t1 + 1e-12 or not np.all(np.isfinite(grid)):
            raise ModelError(f"t_eval must be sorted, finite and within t_span {t_span}")
    return solver_cls, t0, t1, x_init, grid


class _Stats:
    nfev = 1


def _fail(result: SimulationResult, raise_on_failure: bool) -> SimulationResult:
    """Raise (with the partial result) or warn and return it."""
    if raise_on_failure:
        raise IntegrationError(result.message, result)
    end = f"{result.t[-1]:.6g} s" if result.t.size else "the start"
    warnings.warn(f"simulation failed: {result.message}; the result up to t = {end} is "
                  f"returned", IntegrationWarning, stacklevel=3)
    return result


SINGULAR_CONDITION = 1e8
"""Scaled condition number of H_4 above which a failed run is reported as singular."""


def _singularity(model, t, x, stabilization) -> str:
    """A description of a nearly singular constraint matrix at (t, x), or ""."""
    try:
        with np.errstate(all="ignore"):
            ev = model.evaluate(t, x, stabilization=stabilization, redundancy_ok=True)
    except Exception as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        return ""
    H = ev.H4 if ev.H4 is not None else None
    if H is None or not np.all(np.isfinite(H)):
        return ""
    d = np.sqrt(np.abs(np.diag(H)))
    d = np.where(d > 0, d, 1.0)
    sv = np.linalg.svd(H / np.outer(d, d), compute_uv=False)
    structural = model.n_u2 - ev.rank
    live = sv[:len(sv) - structural] if structural > 0 else sv
    if live.size == 0 or live.min() > live.max() / SINGULAR_CONDITION:
        return ""
    return (f"singular configuration near t = {t:.6g} s: the constraint matrix is nearly "
            f"singular (scaled condition {live.max() / max(live.min(), 1e-300):.2g}); "
            f"{model.deficient_sources_text(H / np.outer(d, d), cutoff=live.min() * 1.0001)}")


def _collect(model, ts, xs, stabilization, status, message, failure_time, solver, n_steps,
             deficiency, redundancy, branch, sol, t_events, fast=None) -> SimulationResult:
    n = len(ts)
    X = np.array(xs).T if n else np.zeros((model.n_states, 0))
    return SimulationResult(
        t=np.asarray(ts, dtype=float), x=X, state_names=model.state_names, status=status,
        message=message, success=status.success, failure_time=failure_time,
        nfev=int(solver.nfev), n_steps=n_steps, rank_deficiency=int(deficiency),
        redundancy=redundancy, branch=branch, sol=sol,
        _state_slices=dict(model.state_slices), _bond_slices=model.bond_slices,
        t_events=tuple(np.asarray(v) for v in t_events),
        _u2_slices=dict(model.u2_slices),
        _outputs=partial(_outputs, model, stabilization, fast))


def _outputs(model, stabilization, fast, ts: np.ndarray, X: np.ndarray
             ) -> dict[str, np.ndarray]:
    """U_2, c, Phi, the bond values and the stored energy at the output times ``ts`` and
    states ``X`` (columns): what :class:`SimulationResult` derives when first asked; NaN
    at a point where the evaluation fails (the failure state of a failed run)."""
    n = ts.size
    n2 = model.n_u2
    ws = fast.workspace() if fast is not None else None
    out = {"U2": np.full((n2, n), np.nan), "c": np.full((n2, n), np.nan),
           "phi": np.full((n2, n), np.nan),
           "bond_values": np.full((model.layout.n_var, n), np.nan),
           "energy": np.full(n, np.nan)}
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
            continue
        out["U2"][:, i] = ev.U2
        out["c"][:, i] = ev.constraint_flow
        out["phi"][:, i] = ev.phi
        out["bond_values"][:, i] = ev.bond_values
        out["energy"][i] = model.stored_energy(x)
    return out
