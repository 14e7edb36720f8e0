"""The algebraic loop through nonlinear resistors, solved by a globalised Newton method.

- :func:`solve_resistor_loop`: the inputs D_in of the nonlinear resistors where the
  junction structure and their laws agree, and the evaluation there.

Each Newton pass is the model's linear reduction with the laws' tangents R_k and
offsets o = r(d) - R_k d (a known input: D_out = R_k D_in + o); its D_in is the Newton
point. The residual of a guess d is d minus the inputs the junction structure gives
when the laws' outputs r(d) are known (one more reduction, with R_k = 0 and o = r(d)).

Far from the solution a full Newton step of an exponential law (a diode) overshoots to
where the law overflows, and plain Newton's method then needs hundreds of passes or
stops. So the step is globalised: a step is taken whole while the Newton steps contract
(quadratic convergence, no residual needed); otherwise it is halved until the residual's
norm decreases (Armijo's rule), and a trial where a law is not finite
(:class:`~bondgraph.NonFiniteLawError`) is halved too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .errors import AlgebraicLoopError, NonFiniteLawError

__all__ = ["solve_resistor_loop", "NEWTON_RTOL", "NEWTON_MAX_ITERATIONS", "ARMIJO",
           "MIN_STEP_FRACTION"]

NEWTON_RTOL = 1e-12
"""Relative change of the nonlinear resistors' inputs at which Newton's method stops."""

NEWTON_MAX_ITERATIONS = 100
"""Newton iterations allowed for the nonlinear resistors' algebraic equations (each
with its step halvings)."""

ARMIJO = 1e-4
"""A step of fraction lambda is accepted when the residual's norm falls by at least
ARMIJO lambda of itself."""

MIN_STEP_FRACTION = 2.0 ** -60
"""Halvings stop here: no decrease of the residual along the Newton direction."""


def solve_resistor_loop(laws: Sequence, R: np.ndarray,
                        reduce: Callable[[np.ndarray, np.ndarray], tuple],
                        starts: Sequence[Callable[[], np.ndarray]], names: str, t: float,
                        warm: bool = False):
    """The evaluation at the solution of the nonlinear resistors' loop and their inputs
    there: ``(evaluation, d)``.

    Parameters
    ----------
    laws : sequence of (slice, bound law)
        The nonlinear resistors' places in D_in and their laws (``value``,
        ``tangent_or_zero``).
    R : ndarray
        The resistive field with zero blocks at the nonlinear resistors.
    reduce : callable
        ``reduce(R_k, o) -> (evaluation, D_in)``: the linear reduction.
    starts : sequence of callables
        Starting guesses: the one of least residual among those where the laws are
        finite is taken (the inputs with every law's output zero, zero: from above, an
        exponential law's Newton steps shrink its input by about one thermal voltage
        each, so the start matters).
    warm : bool
        The first guess is the last solution of this thread: taken where the laws are
        finite there, without comparing residuals.
    names : str
        The elements, for messages.
    t : float
        The time (s), for messages.

    Raises
    ------
    AlgebraicLoopError
        No convergence in :data:`NEWTON_MAX_ITERATIONS` iterations, or no decrease of
        the residual along a Newton direction.
    NonFiniteLawError
        A law is not finite at any starting guess.
    """
    def outputs(d: np.ndarray) -> np.ndarray:
        o = np.zeros(R.shape[0])
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for sl, law in laws:              # (NonFiniteLawError says where not finite)
                o[sl] = law.value(d[sl])
        return o

    def newton_pass(d: np.ndarray):
        Rk, o = R.copy(), outputs(d)
        for sl, law in laws:
            Jk = law.tangent_or_zero(d[sl])
            Rk[sl, sl] = Jk
            o[sl] -= Jk @ d[sl]
        return reduce(Rk, o)

    undefined: list[NonFiniteLawError] = []      # (the last law not finite at a trial)

    def residual(d: np.ndarray) -> float:
        """|d - D_in(r(d))| over the nonlinear inputs (inf where a law is not finite)."""
        try:
            _, implied = reduce(R, outputs(d))
        except NonFiniteLawError as exc:
            undefined[:] = [exc]
            return np.inf
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.concatenate([d[sl] - implied[sl] for sl, _ in laws])
            norm = float(np.linalg.norm(r))
        return norm if np.isfinite(norm) else np.inf

    d, res, error = None, None, None
    for k, start in enumerate(starts):
        try:
            guess = start()
            outputs(guess)
        except NonFiniteLawError as exc:
            error = exc
            continue
        if k == 0 and warm:                   # (consecutive states of a run are close)
            d = guess
            break
        r = residual(guess)                   # else the guess of least residual
        if d is None or r < res:
            d, res = guess, r
    if d is None:
        raise error if error is not None else AlgebraicLoopError(
            f"no starting guess for the nonlinear resistor law(s) of {names}")
    last, delta, contracting = np.inf, np.inf, False
    for _ in range(NEWTON_MAX_ITERATIONS):
        ev, d_new = newton_pass(d)
        step = d_new - d
        delta = max(float(np.abs(step[sl]).max()) for sl, _ in laws)
        size = max(float(np.abs(d_new[sl]).max()) for sl, _ in laws)
        if delta <= NEWTON_RTOL * size or delta == 0.0 or \
                (delta >= last and delta <= 1e3 * NEWTON_RTOL * max(size, 1e-300)):
            return ev, d_new
        if not np.isfinite(delta):
            raise AlgebraicLoopError(
                f"the nonlinear resistor law(s) of {names}: Newton's step is not finite at "
                f"t = {t:.6g} s (a singular tangent of the loop)")
        if contracting and delta <= 0.5 * last:     # contracting: the whole step
            try:
                outputs(d_new)
                d, last, res = d_new, delta, None
                continue
            except NonFiniteLawError:
                pass
        if res is None:
            res = residual(d)
        lam, defined = 1.0, False
        while True:
            trial = d + lam * step
            r_trial = residual(trial)
            if r_trial <= (1.0 - ARMIJO * lam) * res:
                break
            defined = defined or np.isfinite(r_trial)
            lam *= 0.5
            if lam < MIN_STEP_FRACTION:
                if not defined and undefined:     # the laws are not finite beyond d:
                    raise undefined[0]            # (a tank past empty), not a loop's fault
                raise AlgebraicLoopError(
                    f"the nonlinear resistor law(s) of {names}: no step along Newton's "
                    f"direction lowers the loop's residual ({res:.3g}) at t = {t:.6g} s: "
                    f"the algebraic loop through them may have no solution; give the "
                    f"loop a storage element, or smoother laws")
        d, res, last, contracting = trial, r_trial, delta, lam == 1.0
    raise AlgebraicLoopError(
        f"the nonlinear resistor law(s) of {names} did not converge in "
        f"{NEWTON_MAX_ITERATIONS} Newton iterations at t = {t:.6g} s (last change "
        f"{delta:.3g} in their inputs): the algebraic loop through them may have no "
        f"solution or several; give the loop a storage element, or smoother laws")
