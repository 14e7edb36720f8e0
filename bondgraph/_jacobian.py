"""The Jacobian d(dX/dt)/dX an implicit solver (Radau, BDF, LSODA) is given.

- :func:`jacobian_options`: the keyword arguments for the solver's constructor (``jac``)
  and a description of what it gets, for the result's diagnostics.
- :func:`linear_jacobian`: the exact, constant Jacobian A = T_X of a linear model (no
  kinematic or work states, no constraint sources, no Euler junction structure, no
  state-dependent source or modulus: dX/dt = T_X X + T_U1 U_1(t) with constant T_X), or
  None and the reason it is not.

Any other model gets scipy's dense finite differences (one evaluation per state for
each Jacobian; scipy's solvers form it rarely: when Newton's iteration converges badly).
The Jacobian only steers Newton's iteration: the solution's accuracy is set by rtol and
atol, so an approximate Jacobian costs iterations, never accuracy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.integrate import BDF, LSODA, OdeSolver, Radau

__all__ = ["jacobian_options", "linear_jacobian", "IMPLICIT", "SPARSE_ABOVE"]

IMPLICIT: tuple[type[OdeSolver], ...] = (Radau, BDF, LSODA)
"""The solvers (and their subclasses) that take a Jacobian."""

SPARSE_ABOVE = 200
"""States above which a constant Jacobian with at most 10 % nonzeros is handed over as a
sparse matrix (Radau and BDF then factor it with a sparse LU)."""

LINEARITY_RTOL = 1e-8
"""Relative tolerance of the check that the model is linear along a trial direction
(rounding in a linear model's derivative is of order 1e-16 relative)."""


def jacobian_options(model, solver_cls: type[OdeSolver], rhs, t0: float,
                     x0: np.ndarray) -> tuple[dict[str, Any], str]:
    """The ``jac`` keyword for ``solver_cls`` (empty for explicit methods and where
    finite differences are used) and what it is, in words."""
    if not issubclass(solver_cls, IMPLICIT):
        return {}, "none (explicit method)"
    A, why = linear_jacobian(model, rhs, t0, x0)
    if A is None:
        return {}, f"dense finite differences ({why})"
    if issubclass(solver_cls, LSODA):       # (LSODA takes a callable only)
        return {"jac": lambda t, y: A}, "analytic: constant T_X (a linear model)"
    if A.shape[0] > SPARSE_ABOVE and np.count_nonzero(A) <= 0.1 * A.size:
        return {"jac": sp.csc_matrix(A)}, "analytic: constant T_X (a linear model), sparse"
    return {"jac": A}, "analytic: constant T_X (a linear model)"


def linear_jacobian(model, rhs, t0: float, x0: np.ndarray
                    ) -> tuple[np.ndarray | None, str]:
    """(A, "") where dX/dt = A X + b(t) holds exactly with A = T_X, else (None, the
    reason). ``rhs(t, x)`` is the run's right-hand side: two evaluations of it check
    linearity along a fixed trial direction, a guard against a model kind this test does
    not know (the structural conditions are the proof)."""
    why = []
    if model.n_kinematic:
        why.append("kinematic states")
    if model.work:
        why.append("work states")
    if model.n_u2:
        why.append("constraint sources")
    if model.ejs:
        why.append("Euler junction structures")
    if model._state_dependent_u1:
        why.append(f"state-dependent source(s) {', '.join(model._state_dependent_u1)}")
    moduli = [n for n, m in model.moduli.items() if getattr(m, "depends_on", ())]
    if moduli:
        why.append(f"state-dependent moduli ({', '.join(moduli)})")
    if getattr(model, "nonlinear", False):
        why.append("nonlinear constitutive laws")
    if not (isinstance(model.F, np.ndarray) and isinstance(model.R, np.ndarray)):
        why.append("fields that are not constant matrices")
    if why:
        return None, "not a linear model: " + ", ".join(why)
    with np.errstate(all="ignore"):
        A = np.array(model.evaluate(t0, x0).T_X, dtype=float)
        if A.shape != (model.n_states, model.n_states) or not np.all(np.isfinite(A)):
            return None, "T_X is not a finite square matrix"
        # the guard: f(x0 + d) - f(x0) = A d along a fixed direction d
        d = np.random.default_rng(20).uniform(0.5, 1.0, x0.size) * \
            (1e-2 * np.abs(x0) + 1e-2 * max(float(np.abs(x0).max(initial=0.0)), 1.0))
        f0, f1 = rhs(t0, x0), rhs(t0, x0 + d)
        diff = np.abs(f1 - f0 - A @ d)
        scale = np.abs(A) @ (np.abs(x0) + d) + np.abs(f0) + np.abs(f1)
    if not (np.all(np.isfinite(diff)) and np.all(diff <= LINEARITY_RTOL * scale.max())):
        return None, "the derivative is not linear along a trial direction"
    return A, ""
