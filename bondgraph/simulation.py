"""Time integration of a :class:`~bondgraph.StateSpaceModel`.

- :func:`simulate`: adaptive embedded Runge-Kutta (Dormand-Prince 5(4) by default,
  DOP853 for tight tolerances), the implicit Radau, BDF and LSODA for stiff models (with
  the exact Jacobian of a linear model, :mod:`bondgraph._jacobian`), or any scipy
  ``OdeSolver`` subclass; output on a time grid, dense output, events; returns a
  :class:`~bondgraph.SimulationResult`.

The stepping loop is ours (not ``solve_ivp``, :mod:`bondgraph._stepping`) so that a
failure mid-run keeps everything computed up to it, a run has a budget and restarts at
its sources' breaks, and output memory is bounded by the output grid. Its parts: the
right-hand side with failures as values (:mod:`bondgraph._rhs`), the events
(:mod:`bondgraph._events`), the output grid and the result (:mod:`bondgraph._output`),
the diagnosis of a failure or of stiffness (:mod:`bondgraph._diagnosis`), the Jacobian
of implicit methods (:mod:`bondgraph._jacobian`), the states' nominal scales and the
sources' time scales (:mod:`bondgraph.scales`); results of consecutive segments join
with :func:`bondgraph.results.join_results`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver, Radau

from ._blas import one_blas_thread
from ._diagnosis import StiffnessMonitor, drift, inconsistency, singularity
from ._events import EventTracker
from ._fastrk import compiled_evaluation, compiled_loop
from ._fastrk import diagnostics as loop_diagnostics
from ._jacobian import jacobian_cost, jacobian_options
from ._output import OutputGrid, collect
from ._progress import RunProgress
from ._rhs import RightHandSide
from ._stepping import StepBudget, Steps, step_until_done
from .branches import Branch
from .errors import (
    IntegrationError, IntegrationWarning, ModelError, SingularConstraintError, warn,
)
from .options import Budget, SaveAt, Solver, merge_options
from .reduction import Baumgarte, StateSpaceModel
from .results import SimulationResult, Status
from .scales import ATOL_PER_RTOL, nominal_scales, source_time_scales

__all__ = ["simulate", "METHODS"]

METHODS: dict[str, type[OdeSolver]] = {"RK45": RK45, "DOP853": DOP853, "Radau": Radau,
                                        "BDF": BDF, "LSODA": LSODA}
"""Named solvers: explicit ``"RK45"`` (Dormand-Prince 5(4), default) and ``"DOP853"``
(8(5,3)); for stiff models the implicit ``"Radau"`` (Radau IIA, order 5), ``"BDF"``
(variable order 1-5) and ``"LSODA"`` (switches between Adams and BDF)."""


def simulate(model: StateSpaceModel, t_span: tuple[float, float],
             x0: Mapping[str, Any] | np.ndarray, *,
             t_eval: Sequence[float] | np.ndarray | None = None,
             method: str | type[OdeSolver] = "RK45", rtol: float = 1e-8,
             atol: float | Sequence[float] | np.ndarray | None = None,
             max_step: float | None = None, first_step: float | None = None,
             stabilization: Baumgarte | None = None,
             events: Sequence[Callable[[float, np.ndarray], float]] = (),
             dense_output: bool = False, strict: bool = False,
             raise_on_failure: bool = False,
             progress: Callable[[float], None] | bool | None = None,
             max_events: int = 10_000, max_steps: int | None = None,
             max_wall_time: float | None = None,
             dense_reduction: bool = False,
             parameters: Mapping[str, float] | None = None,
             compiled_loop: bool = True, solver: Solver | None = None,
             save: SaveAt | None = None, budget: Budget | None = None,
             check_start: bool = True) -> SimulationResult:
    """Simulate ``model`` over ``t_span`` from ``x0``.

    Parameters
    ----------
    model : StateSpaceModel
    t_span : (float, float)
        Start and end time (s).
    x0 : mapping of state name to value, or ndarray (n_states,)
        Initial state; a mapping must name every state.

    Solver

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
        Euler junction); any other model's Jacobian is formed by scipy's finite
        differences when Newton's iteration asks for it, in groups of states given by
        the Jacobian's structural sparsity (one evaluation per group;
        :func:`bondgraph._jacobian.jacobian_sparsity`; a sparse LU above 200 states
        with at most 10 % nonzeros). The Jacobian steers Newton's iteration only;
        accuracy is set by rtol and atol.
    rtol : float
        Relative error tolerance on every state.
    atol : float, array (n_states,) or None
        Absolute error tolerance, in each state's unit. None (default): a fraction
        ``ATOL_PER_RTOL * rtol`` (1e-2 rtol) of each state's nominal scale
        (:func:`bondgraph.scales.nominal_scales`: a capacitor's charge from its
        capacitance and its domain's efforts, a momentum from its mass and its domain's
        flows), so that the default tolerances mean relative accuracy at any size: a
        1 fF capacitor's 5e-15 C is controlled as a 1 F one's 5 C. A number is the same
        absolute tolerance for every state; then a state whose magnitude stays below it
        throughout is not controlled, and ``result.diagnostics["below_atol"]`` names it
        (with an :class:`~bondgraph.IntegrationWarning`).
    max_step : float, optional
        Largest step (s). None (default): a periodic source bounds it to 1/20 of its
        shortest period (:func:`bondgraph.scales.source_time_scales`; a solver that
        steps over a period misses what happens in it), else unbounded;
        ``result.diagnostics["max_step"]`` says which bound was used and why.
        Whatever it is, the run stops and restarts at every time where a source jumps
        or has a kink (Heaviside, sign, Abs, Min, Max, Piecewise of ``t``, a
        TimeFunction's ``breaks``: ``diagnostics["breaks"]`` counts them).
    first_step : float, optional
        The first step (s); default: the solver's choice.
    stabilization : Baumgarte, optional
        Constraint stabilisation gains (uses the junctions' position constraints). Without
        it the initial state must satisfy the constraints (see Raises).
    check_start : bool
        Check that the initial state satisfies the constraints (see Raises). False for a
        run that continues another run's state (a switched run's next stretch), whose
        drift is that run's and already reported there.
    strict : bool
        Refuse redundant constraints (rank-deficient H_4 at the initial state).
    dense_reduction : bool
        Evaluate every step with the dense reduction (every J, T and H block formed, cost
        growing with the square and cube of the model's size) instead of the sparse one
        (:mod:`bondgraph.sparse`, linear for tree-like mechanisms). Both give the same
        numbers to rounding; the sparse one is used wherever it applies (Eq. (15) or no
        constraint, full rank), the dense one elsewhere and at any state where the sparse
        system is singular.
    compiled_loop : bool
        Take the steps of RK45 and DOP853 in compiled calls (:mod:`bondgraph._fastrk`)
        where the whole evaluation is compiled (mechanisms whose sources are constant
        or offer a compiled kernel, e.g. contact and compliant stops, and whose events
        all have ``scan_steps = True``; ``result.diagnostics["compiled_loop"]`` says
        whether it ran and
        ``["compiled_loop_reason"]`` why not). Same tableau, error norm, step-size
        control, first step and dense output as scipy's solvers: the same steps and
        states to rounding. False: scipy's stepping in every case.
    parameters : mapping of str to float, optional
        Values of some of the model's parameters (:attr:`StateSpaceModel.parameters`)
        for this run: the run uses ``model.with_parameters(parameters)``, assembled from
        the same causal graph; ``model`` itself is not changed.

    Events

    events : sequence of callables ``g(t, x) -> float``
        Zero crossings are located; an event with attribute ``terminal = True`` stops the
        run; ``direction`` as in scipy; ``scan_steps = True``: it may be checked at the
        ends of the compiled loop's accepted steps (see :mod:`bondgraph._events`).
    max_events : int
        More event crossings than this (an event storm, e.g. chattering) stop the run
        (status ``EVENT_STORM``).

    Budget

    max_steps : int, optional
        Stop after this many accepted steps (status ``STEP_LIMIT``, the result so far
        kept): a bound on the work.
    max_wall_time : float, optional
        Stop once the run has taken this many seconds of wall-clock time (status
        ``TIME_LIMIT``, the result so far kept).
    raise_on_failure : bool
        Raise :class:`~bondgraph.IntegrationError` (holding the partial result) instead of
        returning it with ``success=False`` and an :class:`~bondgraph.IntegrationWarning`.

    Output

    t_eval : array_like, optional
        Output times (s) within ``t_span``; default: 101 evenly spaced points.
    dense_output : bool
        Keep a continuous solution (``result.sol``); it stores every step.
    progress : callable, bool or None
        A callable is called with the simulated time (s) after every accepted step (after
        every chunk of steps of the compiled loop, at least every 0.2 s). True: show the
        run's progress on stderr once it has taken more than 2 s
        (:class:`bondgraph._progress.RunProgress`: a bar on a terminal, a line every 5 s
        otherwise). None or False: nothing.

    Options as objects

    solver : Solver, optional
        The solver options above as one object (:class:`~bondgraph.Solver`: method,
        rtol, atol, max_step, first_step, compiled_loop, dense_reduction).
    save : SaveAt, optional
        The output options as one object (:class:`~bondgraph.SaveAt`: ``t`` for
        ``t_eval``, ``dense`` for ``dense_output``).
    budget : Budget, optional
        The budget as one object (:class:`~bondgraph.Budget`: max_steps, max_wall_time,
        max_events).

    An object's fields left at :data:`~bondgraph.DEFAULT` keep the keyword's value; an
    option given both as a keyword and in an object is refused (ModelError naming it).
    ``events`` also takes :class:`~bondgraph.Event` objects.

    Notes
    -----
    ``result.nfev`` is the solver's count of derivative evaluations; implicit methods'
    finite-difference Jacobians are counted in ``result.diagnostics["rhs_evaluations"]``
    (every evaluation of the run) and ``["jacobian_evaluations"]``, and
    ``["evaluations_per_jacobian"]`` is what one costs (0 for an analytic one).

    When the solver fails (its step size falls below its floor, the state becomes
    non-finite, or the solver itself raises on non-finite values), the run ends with a
    failure status and everything computed before; ``failure_time`` is the end of the
    last step the solver accepted (the results reach it), and the message says where
    the trouble was found when that was at a trial stage beyond it. If the constraint
    matrix is nearly singular there (a singular configuration the run was heading into),
    the status is ``SINGULAR`` and the message names the unknown sources involved.

    Returns
    -------
    SimulationResult

    Raises
    ------
    ModelError
        Bad arguments or initial state (nothing is simulated); an initial state that
        violates the constraints (a constraint flow, or a position constraint where the
        model defines one, beyond :data:`bondgraph._diagnosis.CONSISTENCY_RTOL` of its
        scale) without ``stabilization`` (with it, an ``IntegrationWarning``: the run's
        start is Baumgarte's transient onto the constraints).
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
    if solver is not None or save is not None or budget is not None:
        given = merge_options("simulate", dict(
            t_eval=t_eval, method=method, rtol=rtol, atol=atol, max_step=max_step,
            first_step=first_step, compiled_loop=compiled_loop,
            dense_reduction=dense_reduction, dense_output=dense_output,
            max_steps=max_steps, max_wall_time=max_wall_time, max_events=max_events),
            _DEFAULTS, solver=solver, save=save, budget=budget)
        return simulate(model, t_span, x0, stabilization=stabilization, events=events,
                        strict=strict, raise_on_failure=raise_on_failure,
                        progress=progress, parameters=parameters, check_start=check_start,
                        **given)
    if parameters is not None and isinstance(model, StateSpaceModel):
        model = model.with_parameters(parameters)
    solver_cls, t0, t1, x_init, grid = _check_arguments(
        model, t_span, x0, t_eval, method, rtol, atol, max_step, first_step, stabilization,
        events, progress, max_events, max_steps, max_wall_time)
    for name, flag in (("compiled_loop", compiled_loop), ("check_start", check_start)):
        if not isinstance(flag, bool):
            raise ModelError(f"{name} must be True or False, got {flag!r}")
    reporter = RunProgress(t0, t1) if progress is True else None
    report = reporter if reporter is not None else (progress or None)
    deadline = None if max_wall_time is None else time.monotonic() + float(max_wall_time)
    try:
        with one_blas_thread():
            return _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol,
                              max_step, first_step, stabilization, tuple(events),
                              dense_output, strict, raise_on_failure, report, max_events,
                              StepBudget(max_steps, max_wall_time, deadline),
                              dense_reduction, compiled_loop, check_start)
    finally:
        if reporter is not None:
            reporter.close()


def _tolerances(model, rtol, atol, t0, t1, x_init) -> tuple[Any, np.ndarray, dict]:
    """The absolute tolerance the solver gets (see :func:`simulate`), the states'
    nominal scales and what the result's diagnostics say about them."""
    nominal = nominal_scales(model, (t0, t1), x_init)
    notes = {"nominal": dict(zip(_component_names(model), nominal.tolist()))}
    if atol is not None:
        return atol, nominal, {"atol": "given", **notes}
    return ATOL_PER_RTOL * np.asarray(rtol, dtype=float) * nominal, nominal, \
        {"atol": f"{ATOL_PER_RTOL:g} rtol times the states' nominal scales", **notes}


def _component_names(model) -> list[str]:
    """The name of every state component (``name`` or ``name[k]``)."""
    out = []
    for name, sl in model.state_slices.items():
        n = sl.stop - sl.start
        out += [name] if n == 1 else [f"{name}[{k}]" for k in range(n)]
    return out


def _below_atol(model, xs, atol, rtol, nominal) -> dict[str, tuple[float, float, float]]:
    """The state components the absolute tolerance does not control: those whose
    tolerance exceeds their nominal scale (errors as large as the state itself pass),
    and those whose magnitude stayed below their tolerance over the output points
    although it is not negligible at their scale (at least ``ATOL_PER_RTOL * rtol``
    times it: rounding noise in a momentum that stays zero is not reported): name ->
    (max |x|, atol, nominal scale)."""
    if len(xs) == 0:
        return {}
    peak = np.abs(np.asarray(xs, dtype=float)).max(axis=0)
    tol = np.broadcast_to(np.asarray(atol, dtype=float), peak.shape)
    low = ATOL_PER_RTOL * np.broadcast_to(np.asarray(rtol, dtype=float), peak.shape) * \
        nominal
    bad = (tol > nominal) | ((peak >= low) & (peak < tol) & (peak > 0))
    return {n: (float(p), float(a), float(s)) for n, p, a, s, b in
            zip(_component_names(model), peak, tol, nominal, bad) if b}


def _integrate(model, solver_cls, t0, t1, x_init, grid, rtol, atol, max_step, first_step,
               stabilization, events, dense_output, strict, raise_on_failure, progress,
               max_events, budget, dense_reduction, use_compiled=True, check_start=True
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
    atol_used, nominal, tolerance_notes = _tolerances(model, rtol, atol, t0, t1, x_init)
    violated = inconsistency(model, ev0, t0, nominal) if check_start else ""
    if violated and stabilization is None:
        raise ModelError(f"{violated}: without stabilization a run keeps the violation (the "
                         f"constraint flow stays what it is, and moves the positions "
                         f"off the constraint at that rate); give initial flows and "
                         f"positions that satisfy the constraints, or "
                         f"stabilization=Baumgarte(alpha, beta) to pull the state onto "
                         f"them (in a model file: [solver] stabilization = {{alpha = "
                         f"10.0, beta = 10.0}})")
    if violated:
        warn(f"{violated}: Baumgarte's terms pull the state onto the constraints, and the "
             f"run's start is that transient, not the model's motion", IntegrationWarning)
    loop, why_not = compiled_loop(model, solver_cls, rhs, stabilization, events,
                                  use_compiled)
    if use_compiled:           # (the steps scipy takes in Python: one compiled call each)
        rhs.compiled = loop if loop is not None else \
            compiled_evaluation(model, rhs, stabilization)
    scales = source_time_scales(model, t0, t1)
    if max_step is None:
        max_step, step_why = scales.max_step, scales.why or "none (no periodic source)"
    else:
        step_why = "given"
    kwargs: dict[str, Any] = {"rtol": rtol, "atol": atol_used, "max_step": max_step}
    if first_step is not None:
        kwargs["first_step"] = first_step
    jac, jacobian, per_jacobian = jacobian_options(model, solver_cls, rhs, t0, x_init,
                                                   atol_used)
    kwargs.update(jac)
    steps = Steps(solver_cls, kwargs, budget, loop, tuple(scales.breaks.tolist()),
                  tuple(scales.starts.tolist()))
    solver = steps.solver(rhs, t0, x_init, steps.breaks[0] if steps.breaks else t1, True)
    output = OutputGrid(grid, t0, x_init)
    tracker = EventTracker(events, t0, x_init, max_events)
    stiffness = StiffnessMonitor(steps.solver_cls, t1 - t0, lambda: jacobian_cost(model))
    run = step_until_done(solver, rhs, output, tracker, steps, progress, dense_output,
                           stiffness, t1)
    solver = run.solver
    status, message, failure_time = run.status, run.message, run.failure_time
    if status in (Status.STEP_FAILED, Status.NON_FINITE) and run.n_steps == 0:
        # the run could not leave the initial state: the dense evaluation there (skipped
        # for the sparse one at the start) explains why where it can, by raising
        rhs.reference()
    if status in (Status.STEP_FAILED, Status.NON_FINITE) and model.n_u2:
        diag = singularity(model, run.t_ok, run.y_ok, stabilization)
        if diag:
            status, message = Status.SINGULAR, f"{diag} ({message})"
    below = _below_atol(model, output.xs, atol_used, rtol, nominal)
    diagnostics = {"method": steps.solver_cls.__name__, "rhs_evaluations": rhs.calls,
                   "jacobian": jacobian,
                   "jacobian_evaluations": run.counts["njev"],
                   "evaluations_per_jacobian": per_jacobian,
                   "lu_decompositions": run.counts["nlu"],
                   "stiff": stiffness.stiff_at is not None, "stiffness": stiffness.message,
                   "max_step": float(max_step), "max_step_reason": step_why,
                   "breaks": len(steps.breaks), **tolerance_notes, "below_atol": below,
                   **loop_diagnostics(loop, why_not, rhs)}
    if below and atol is not None and np.ndim(atol) == 0:
        names = ", ".join(f"{n} (scale {sc:.3g}, max |x| {p:.3g})"
                          for n, (p, _, sc) in list(below.items())[:5])
        warn(f"the absolute tolerance atol = {float(atol):g} does not control "
             f"state(s) {names}: it is above their scale, or they stayed below it; "
             f"leave atol to its default (a fraction of each state's nominal "
             f"scale) or give one per state", IntegrationWarning)
    result = collect(model, output.ts, output.xs, stabilization, status, message,
                     failure_time, run.counts["nfev"], run.n_steps, start.deficiency,
                     start.redundancy, ev0.branch, run.sol, tracker.t_events,
                     start.fast, diagnostics)
    drifted = drift(model, result.t, result.x, nominal) if stabilization is None else ""
    if drifted:
        result.diagnostics["drift"] = drifted
        warn(drifted, IntegrationWarning)
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


_DEFAULTS = {k: p.default for k, p in inspect.signature(simulate).parameters.items()}
""":func:`simulate`'s keyword defaults (a keyword that differs was given)."""


def _check_arguments(model, t_span, x0, t_eval, method, rtol, atol, max_step, first_step,
                     stabilization, events, progress, max_events, max_steps, max_wall_time):
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
        if val is None and name == "atol":
            continue
        try:
            arr = np.asarray(val, dtype=float)
        except (TypeError, ValueError):
            arr = np.array(np.nan)
        if arr.ndim > 1 or (arr.ndim == 1 and arr.size not in (1, model.n_states)) or \
                not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ModelError(f"{name} must be positive and finite (a number, or one per "
                             f"state), got {val!r}")
    for name, val, none_ok in (("max_step", max_step, True),
                               ("first_step", first_step, True),
                               ("max_wall_time", max_wall_time, True)):
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
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise ModelError(f"progress must be True, False, None or a callable taking the "
                         f"time, got {progress!r}")
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
        slack = 1e-12 * max(abs(t0), abs(t1))       # (rounding, at the times' size)
        if grid.size == 0 or np.any(np.diff(grid) < 0) or grid[0] < t0 - slack or \
                grid[-1] > t1 + slack or not np.all(np.isfinite(grid)):
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
