"""Time integration of a :class:`~bondgraph.StateSpaceModel`.

- :func:`simulate`: adaptive embedded Runge-Kutta (Dormand-Prince 5(4) by default,
  DOP853 for tight tolerances), the implicit Radau, BDF and LSODA for stiff models (with
  the exact Jacobian of a linear model, :mod:`bondgraph._jacobian`), or any scipy
  ``OdeSolver`` subclass; output on a time grid, dense output, events; returns a
  :class:`~bondgraph.SimulationResult`.

The stepping loop is ours (not ``solve_ivp``) so that a failure mid-run keeps
everything computed up to it, and output memory is bounded by the output grid. Its
parts: the right-hand side with failures as values (:mod:`bondgraph._rhs`), the events
(:mod:`bondgraph._events`), the output grid and the result (:mod:`bondgraph._output`),
the diagnosis of a failure or of stiffness (:mod:`bondgraph._diagnosis`), the Jacobian
of implicit methods (:mod:`bondgraph._jacobian`); results of consecutive segments join
with :func:`bondgraph.results.join_results`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver, Radau
from scipy.integrate._ivp.common import OdeSolution

from ._blas import one_blas_thread
from ._diagnosis import StiffnessMonitor, singularity
from ._events import EventTracker
from ._fastrk import CHUNK, compiled_loop
from ._fastrk import diagnostics as loop_diagnostics
from ._jacobian import jacobian_options
from ._output import OutputGrid, collect
from ._rhs import RightHandSide
from .branches import Branch
from .errors import (
    IntegrationError, IntegrationWarning, ModelError, SingularConstraintError, warn,
)
from .reduction import Baumgarte, StateSpaceModel
from .results import SimulationResult, Status

__all__ = ["simulate", "METHODS"]

METHODS: dict[str, type[OdeSolver]] = {"RK45": RK45, "DOP853": DOP853, "Radau": Radau,
                                        "BDF": BDF, "LSODA": LSODA}
"""Named solvers: explicit ``"RK45"`` (Dormand-Prince 5(4), default) and ``"DOP853"``
(8(5,3)); for stiff models the implicit ``"Radau"`` (Radau IIA, order 5), ``"BDF"``
(variable order 1-5) and ``"LSODA"`` (switches between Adams and BDF)."""


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
             dense_reduction: bool = False,
             parameters: Mapping[str, float] | None = None,
             compiled_loop: bool = True) -> SimulationResult:
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
        ``"RK45"`` (default), ``"DOP853"``, ``"Radau"``, ``"BDF"``, ``"LSODA"``
        (:data:`METHODS`), or a scipy ``OdeSolver`` subclass. The explicit RK45 and
        DOP853 suit most models; a *stiff* model (time constants far apart, e.g. a DC
        motor's 10 us electrical and 1 s mechanical ones) makes them crawl at a step
        size set by stability, and then the run's diagnostics say so
        (``result.diagnostics["stiff"]``, with an :class:`~bondgraph.IntegrationWarning`
        suggesting ``"Radau"``). The implicit methods (Radau, BDF, LSODA and their
        subclasses) get the exact constant Jacobian T_X of a linear model (no
        kinematic, work or constraint states, no state-dependent source, modulus or
        Euler junction); any other model's Jacobian is formed by scipy's dense finite
        differences (one evaluation per state, when Newton's iteration asks for it).
        The Jacobian steers Newton's iteration only; accuracy is set by rtol and atol.
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
    parameters : mapping of str to float, optional
        Values of some of the model's parameters (:attr:`StateSpaceModel.parameters`)
        for this run: the run uses ``model.with_parameters(parameters)``, assembled from
        the same causal graph; ``model`` itself is not changed.
    dense_reduction : bool
        Evaluate every step with the dense reduction (every J, T and H block formed, cost
        growing with the square and cube of the model's size) instead of the sparse one
        (:mod:`bondgraph.sparse`, linear for tree-like mechanisms). Both give the same
        numbers to rounding; the sparse one is used wherever it applies (Eq. (15) or no
        constraint, full rank), the dense one elsewhere and at any state where the sparse
        system is singular.
    compiled_loop : bool
        Take the steps of RK45 and DOP853 in compiled calls (:mod:`bondgraph._fastrk`)
        where the whole evaluation is compiled (mechanisms with constant sources, no
        events; ``result.diagnostics["compiled_loop"]`` says whether it ran and
        ``["compiled_loop_reason"]`` why not). Same tableau, error norm, step-size
        control, first step and dense output as scipy's solvers: the same steps and
        states to rounding. False: scipy's stepping in every case.

    Notes
    -----
    ``result.nfev`` is the solver's count of derivative evaluations; implicit methods'
    finite-difference Jacobians are counted in ``result.diagnostics["rhs_evaluations"]``
    (every evaluation of the run) and ``["jacobian_evaluations"]``.

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
    if parameters is not None and isinstance(model, StateSpaceModel):
        model = model.with_parameters(parameters)
    solver_cls, t0, t1, x_init, grid = _check_arguments(
        model, t_span, x0, t_eval, method, rtol, atol, max_step, first_step, stabilization,
        events, progress, max_events, max_steps)
    if not isinstance(compiled_loop, bool):
        raise ModelError(f"compiled_loop must be True or False, got {compiled_loop!r}")
    with one_blas_thread():
        return _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol, max_step,
                          first_step, stabilization, tuple(events), dense_output, strict,
                          raise_on_failure, progress, max_events, max_steps,
                          dense_reduction, compiled_loop)


@dataclass(frozen=True)
class _Steps:
    """The stepping options that travel together: the solver class and its settings."""

    solver_cls: type[OdeSolver]
    rtol: Any
    atol: Any
    max_step: float
    first_step: float | None
    max_steps: int | None
    compiled: Any = None          # the run's CompiledLoop (bondgraph._fastrk), or None


def _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol, max_step, first_step,
               stabilization, events, dense_output, strict, raise_on_failure, progress,
               max_events, max_steps, dense_reduction, use_compiled=True
               ) -> SimulationResult:
    """:func:`simulate` once its arguments are checked: the initial evaluation, the
    right-hand side, the stepping loop, the diagnosis of a failure, the result."""
    start = _start(model, t0, x_init, stabilization, strict, dense_reduction)
    rhs, ev0 = start.rhs, start.ev0
    if not bool(np.all(np.isfinite(ev0.xdot))):
        bad = model._u1_names_at(np.flatnonzero(~np.isfinite(ev0.U1))) if \
            not np.all(np.isfinite(ev0.U1)) else []
        why = (f"source(s) {', '.join(bad)} are not finite" if bad else
               "the state derivative is not finite (check the parameters for overflow)")
        result = collect(model, [t0], [x_init], stabilization, Status.NON_FINITE,
                         f"at the initial state t = {t0:.6g} s: {why}", t0, 1, 0,
                         model.n_u2 - ev0.rank, "", ev0.branch, None, [])
        return _fail(result, raise_on_failure)
    loop, why_not = compiled_loop(model, solver_cls, rhs, stabilization, events,
                                  use_compiled)
    steps = _Steps(solver_cls, rtol, atol, max_step, first_step, max_steps, loop)
    kwargs: dict[str, Any] = {"rtol": steps.rtol, "atol": steps.atol,
                              "max_step": steps.max_step}
    if steps.first_step is not None:
        kwargs["first_step"] = steps.first_step
    jac, jacobian = jacobian_options(model, steps.solver_cls, rhs, t0, x_init)
    kwargs.update(jac)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        solver = steps.solver_cls(rhs, t0, x_init, t1, **kwargs)   # (its first step)
    output = OutputGrid(grid, t0, x_init)
    tracker = EventTracker(events, t0, x_init, max_events)
    stiffness = StiffnessMonitor(steps.solver_cls, t1 - t0)
    run = _step_until_done(solver, rhs, output, tracker, steps, progress, dense_output,
                           stiffness)
    status, message, failure_time = run.status, run.message, run.failure_time
    if status in (Status.STEP_FAILED, Status.NON_FINITE) and run.n_steps == 0:
        # the run could not leave the initial state: the dense evaluation there (skipped
        # for the sparse one at the start) explains why where it can, by raising
        rhs.reference()
    if status in (Status.STEP_FAILED, Status.NON_FINITE) and model.n_u2:
        diag = singularity(model, solver.t, solver.y, stabilization)
        if diag:
            status, message = Status.SINGULAR, f"{diag} ({message})"
    diagnostics = {"method": steps.solver_cls.__name__, "rhs_evaluations": rhs.calls,
                   "jacobian": jacobian,
                   "jacobian_evaluations": int(getattr(solver, "njev", 0) or 0),
                   "lu_decompositions": int(getattr(solver, "nlu", 0) or 0),
                   "stiff": stiffness.stiff_at is not None, "stiffness": stiffness.message,
                   **loop_diagnostics(loop, why_not)}
    result = collect(model, output.ts, output.xs, stabilization, status, message,
                     failure_time, solver.nfev, run.n_steps, start.deficiency,
                     start.redundancy, ev0.branch, run.sol, tracker.t_events,
                     start.fast, diagnostics)
    return _fail(result, raise_on_failure) if not status.success else result


@dataclass
class _Start:
    """A run's start: its right-hand side, the initial evaluation, the sparse evaluation
    (or None), and the constraints' redundancy there."""

    rhs: RightHandSide
    ev0: Any
    fast: Any
    deficiency: int
    redundancy: str


def _start(model, t0, x_init, stabilization, strict, dense_reduction) -> _Start:
    """Evaluate the initial state (the sparse evaluation where it applies: it is used
    only with full rank; else the dense one, which also finds redundant constraints and
    the branch) and make the right-hand side.

    Raises
    ------
    SingularConstraintError
        With ``strict``, for redundant constraints at the initial state."""
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
    deficiency = model.n_u2 - ev0.rank
    redundancy = (model.deficient_sources_text(ev0.H4 if ev0.H4 is not None else None)
                  if deficiency > 0 else "")
    if strict and deficiency > 0:
        raise SingularConstraintError(
            f"redundant constraints at the initial state (strict mode): {redundancy}",
            time=t0, sources=model.unknown_sources)
    if fast is None and not dense_reduction and deficiency == 0 and \
            ev0.branch in (Branch.EQ15, Branch.NONE) and model.sparse().applicable:
        fast = model.sparse()
    # the constraint matrix's scale at the initial state, below which the dense
    # reduction counts singular values as lost rank; computed when first needed
    scale0 = [getattr(ev0, "constraint_scale", None)]

    def reference() -> float:
        if scale0[0] is None:
            scale0[0] = model.evaluate(t0, x_init, stabilization=stabilization,
                                       redundancy_ok=True).constraint_scale
        return scale0[0]

    rhs = RightHandSide(model, stabilization, fast, ws, ev0.rank, reference)
    return _Start(rhs, ev0, fast, deficiency, redundancy)


@dataclass
class _Run:
    """How the stepping loop ended."""

    status: Status
    message: str
    failure_time: float | None
    n_steps: int
    sol: Any


def _step_until_done(solver, rhs: RightHandSide, output: OutputGrid,
                     tracker: EventTracker, steps: _Steps, progress, dense_output,
                     stiffness: StiffnessMonitor) -> _Run:
    """Take the solver's steps until the end of the span, a terminal event, a failure or
    ``max_steps``; fill the output grid, the events and the dense output on the way;
    warn (once) when an explicit method's steps show the run to be stiff."""
    interpolants: list = []
    ts_dense: list[float] = [solver.t]
    n_steps = 0
    loop = steps.compiled
    max_k = 1 if (progress is not None or dense_output) else CHUNK
    while solver.status == "running":
        t_prev = solver.t
        taken = 0
        if loop is not None:          # many steps in one compiled call, or none
            limit = max_k if steps.max_steps is None else \
                min(max_k, steps.max_steps + 1 - n_steps)
            taken = loop.advance(solver, output.next_time, limit, stiffness)
            t_prev = solver.t_old if taken else t_prev
        if not taken:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                msg = solver.step()      # (the evaluations' warnings are its business)
        failure = rhs.failure
        if failure is not None:          # (the solver stopped on the NaNs it got after)
            t_fail = failure.time if failure.status is Status.SINGULAR else solver.t
            return _Run(failure.status, failure.message, t_fail, n_steps,
                        _dense(dense_output, ts_dense, interpolants))
        if solver.status == "failed":
            status, message = Status.STEP_FAILED, f"{msg} (at t = {solver.t:.6g} s)"
            if rhs.nonfinite and rhs.nonfinite[-1][0] - solver.t < \
                    10 * max(abs(solver.t), 1.0) * np.finfo(float).eps ** 0.5 + \
                    (solver.step_size or 0.0):
                tn, why = rhs.nonfinite[-1]
                status = Status.NON_FINITE
                message = (f"non-finite state derivative: {why} at t = {tn:.6g} s; the "
                           f"solver could not step past t = {solver.t:.6g} s")
            return _Run(status, message, solver.t, n_steps,
                        _dense(dense_output, ts_dense, interpolants))
        n_steps += max(taken, 1)
        if steps.max_steps is not None and n_steps > steps.max_steps:
            return _Run(Status.STEP_FAILED, f"more than max_steps = {steps.max_steps} steps "
                                            f"by t = {solver.t:.6g} s", solver.t, n_steps,
                        _dense(dense_output, ts_dense, interpolants))
        if stiffness.active and (loop.stiff_now if taken else stiffness.step(solver)):
            warn(stiffness.message, IntegrationWarning)
        if progress is not None:
            progress(solver.t)
        t_new = solver.t
        if not np.all(np.isfinite(solver.y)):
            return _Run(Status.NON_FINITE, f"non-finite state at t = {t_new:.6g} s", t_new,
                        n_steps, _dense(dense_output, ts_dense, interpolants))
        interpolate = _Interpolant(solver)
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
            return _Run(Status.EVENT_STORM,
                        f"{tracker.n_crossings} event crossings by t = {t_new:.6g} s exceed "
                        f"max_events = {tracker.max_events} (an event storm)", t_new,
                        n_steps, _dense(dense_output, ts_dense, interpolants))
        if terminate_at is not None:
            output.end_at(terminate_at, interpolate(terminate_at))
            return _Run(Status.EVENT, f"terminal event at t = {terminate_at:.6g} s", None,
                        n_steps, _dense(dense_output, ts_dense, interpolants))
    return _Run(Status.SUCCESS, Status.SUCCESS.description, None, n_steps,
                _dense(dense_output, ts_dense, interpolants))


class _Interpolant:
    """The last step's interpolant, built on first use (it costs DOP853 three more
    evaluations: only steps with output times, events or dense output pay for it)."""

    def __init__(self, solver):
        self._solver = solver
        self._f = None

    def function(self):
        if self._f is None:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                self._f = self._solver.dense_output()
        return self._f

    def __call__(self, t: float) -> np.ndarray:
        return self.function()(t)


def _dense(dense_output, ts_dense, interpolants):
    """The dense output over the steps taken (or None)."""
    return OdeSolution(ts_dense, interpolants) if dense_output and interpolants else None


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


def _fail(result: SimulationResult, raise_on_failure: bool) -> SimulationResult:
    """Raise (with the partial result) or warn and return it."""
    if raise_on_failure:
        raise IntegrationError(result.message, result)
    end = f"{result.t[-1]:.6g} s" if result.t.size else "the start"
    warn(f"simulation failed: {result.message}; the result up to t = {end} is "
              f"returned", IntegrationWarning)
    return result
