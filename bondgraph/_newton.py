"""The algebraic loop through nonlinear resistors, solved by a globalised Newton method.

- :func:`solve_resistor_loop`: the inputs D_in of the nonlinear resistors where the
  junction structure and their laws agree.
- :func:`loop_slope`: the slope M of D_in(o) by its columns.

With the laws' outputs o = r(d) as known inputs (the resistive field zero at the
nonlinear resistors), the junction structure gives the inputs D_in = c + M o: affine in
o, its matrices eliminated once per evaluation (``implied``; ``M`` is its slope at the
nonlinear resistors). The residual of a guess d is F(d) = d - implied(r(d)); a Newton
step solves (I - M R_k) s = -F(d) with the laws' tangents R_k, a system of the size of
the nonlinear resistors' inputs. (It is the step of the model's linear reduction with
the tangents R_k and offsets r(d) - R_k d, which this module formed at every pass
before: the same iterates, without a whole reduction per pass.)

Far from the solution a full Newton step of an exponential law (a diode) overshoots to
where the law overflows, and plain Newton's method then needs hundreds of passes or
stops. So the step is globalised: a step is taken whole while the Newton steps contract
(quadratic convergence, no line search); otherwise it is halved until the residual's
norm decreases (Armijo's rule), and a trial where a law is not finite
(:class:`~bondgraph.NonFiniteLawError`) is halved too. The passes stop when a step
changes the inputs by less than :data:`NEWTON_RTOL` of their size, or when two whole
steps contract at a rate theta that bounds the error left, theta / (1 - theta) times
the last step, below that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .errors import AlgebraicLoopError, NonFiniteLawError

__all__ = ["solve_resistor_loop", "loop_slope", "NEWTON_RTOL", "NEWTON_MAX_ITERATIONS", "ARMIJO",
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


def solve_resistor_loop(laws: Sequence, n: int,
                        implied: Callable[[np.ndarray], np.ndarray], M: np.ndarray,
                        starts: Sequence[Callable[[], np.ndarray]], names: str, t: float,
                        warm: bool = False) -> np.ndarray:
    """The inputs D_in (length ``n``) where the nonlinear resistors' laws and the
    junction structure agree (their entries at the nonlinear resistors; the others are
    those of the chosen start).

    Parameters
    ----------
    laws : sequence of (slice, bound law)
        The nonlinear resistors' places in D_in and their laws (``value``,
        ``tangent_or_zero``).
    n : int
        The length of D_in (every resistor's inputs).
    implied : callable
        ``implied(o) -> D_in``: the inputs the junction structure gives when the
        resistors' outputs o (length ``n``, zero but at the nonlinear resistors) are
        known inputs; affine in o.
    M : ndarray
        Its slope at the nonlinear resistors: d implied(o)[nl] / d o[nl], with nl their
        places in the order of ``laws``. Only Newton's direction uses it: the residual,
        hence the converged answer, is ``implied``'s.
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
        No convergence in :data:`NEWTON_MAX_ITERATIONS` iterations, no decrease of
        the residual along a Newton direction, or a Newton step that is not finite.
    NonFiniteLawError
        A law is not finite at any starting guess.
    """
    nl = np.concatenate([np.arange(sl.start, sl.stop) for sl, _ in laws])
    eye = np.eye(nl.size)

    def outputs(d: np.ndarray) -> np.ndarray:
        o = np.zeros(n)
        for sl, law in laws:       # (NonFiniteLawError says where a law is not finite)
            o[sl] = law.value(d[sl])
        return o

    undefined: list[NonFiniteLawError] = []      # (the last law not finite at a trial)

    def residual(d: np.ndarray) -> np.ndarray | None:
        """d - D_in(r(d)) over the nonlinear inputs (None where a law is not finite)."""
        try:
            o = outputs(d)
        except NonFiniteLawError as exc:
            undefined[:] = [exc]
            return None
        return d[nl] - implied(o)[nl]

    def norm(r: np.ndarray | None) -> float:
        if r is None:
            return np.inf
        v = float(np.sqrt(r @ r))
        return v if np.isfinite(v) else np.inf

    # (one errstate for the whole method: an overflow is an infinity, judged as such)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        d, F, error = None, None, None
        for k, start in enumerate(starts):
            try:
                guess = start()
            except NonFiniteLawError as exc:
                error = exc
                continue
            r = residual(guess)
            if r is None:                         # a law is not finite there
                error = undefined[0]
                continue
            if k == 0 and warm:                   # (consecutive states of a run are close)
                d, F = guess, r
                break
            if d is None or norm(r) < norm(F):    # else the guess of least residual
                d, F = guess, r
        if d is None:
            raise error if error is not None else AlgebraicLoopError(
                f"no starting guess for the nonlinear resistor law(s) of {names}")
        undefined.clear()                         # (a start's: not a trial step's)
        last, delta, contracting = np.inf, np.inf, False
        for _ in range(NEWTON_MAX_ITERATIONS):
            if len(laws) == 1:
                Rk = laws[0][1].tangent_or_zero(d[laws[0][0]])
            else:
                Rk = np.zeros((nl.size, nl.size))
                off = 0
                for sl, law in laws:
                    w = sl.stop - sl.start
                    Rk[off:off + w, off:off + w] = law.tangent_or_zero(d[sl])
                    off += w
            A = eye - M @ Rk
            if nl.size == 1:                      # (one scalar law: a division)
                step_nl = -F / A[0, 0] if A[0, 0] != 0.0 else np.full(1, np.inf)
            else:
                try:
                    step_nl = np.linalg.solve(A, -F)
                except np.linalg.LinAlgError:
                    step_nl = np.full(nl.size, np.inf)
            step = np.zeros(n)
            step[nl] = step_nl
            d_new = d + step
            delta = float(np.abs(step_nl).max())
            size = float(np.abs(d_new[nl]).max())
            if delta <= NEWTON_RTOL * size or delta == 0.0 or \
                    (delta >= last and delta <= 1e3 * NEWTON_RTOL * max(size, 1e-300)):
                return d_new
            if contracting and delta < 0.5 * last and \
                    delta * delta / (last - delta) <= NEWTON_RTOL * size:
                # contracting at the rate theta = delta / last: the error left after this
                # step is at most theta / (1 - theta) delta (far less where quadratic)
                return d_new
            if not np.isfinite(delta):
                raise AlgebraicLoopError(
                    f"the nonlinear resistor law(s) of {names}: Newton's step is not finite at "
                    f"t = {t:.6g} s (a singular tangent of the loop)")
            if contracting and delta <= 0.5 * last:     # contracting: the whole step
                F_new = residual(d_new)
                if F_new is not None:
                    d, F, last = d_new, F_new, delta
                    continue
            res = norm(F)
            lam, defined = 1.0, False
            while True:
                trial = d + lam * step
                F_trial = residual(trial)
                r_trial = norm(F_trial)
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
            d, F, last, contracting = trial, F_trial, delta, lam == 1.0
        raise AlgebraicLoopError(
            f"the nonlinear resistor law(s) of {names} did not converge in "
            f"{NEWTON_MAX_ITERATIONS} Newton iterations at t = {t:.6g} s (last change "
            f"{delta:.3g} in their inputs): the algebraic loop through them may have no "
            f"solution or several; give the loop a storage element, or smoother laws")


def loop_slope(nl: np.ndarray, n: int, implied: Callable[[np.ndarray], np.ndarray]
               ) -> np.ndarray:
    """d implied(o)[nl] / d o[nl] by the columns of the affine map ``implied`` (unit
    offsets, length ``n``): exact but for rounding, which steers Newton's step only."""
    base = implied(np.zeros(n))[nl]
    cols = []
    for k in nl:
        o = np.zeros(n)
        o[k] = 1.0
        cols.append(implied(o)[nl] - base)
    return np.column_stack(cols) if cols else np.zeros((0, 0))
