"""What one evaluation of the reduction gives (:class:`Evaluation`), and the solve of
the constraint equations for the unknown efforts U_2 (:func:`solve_constraints`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .branches import Branch
from .errors import SingularConstraintError
from .junction import JunctionStructure

__all__ = ["Evaluation", "solve_constraints", "RANK_RTOL", "CHOLESKY_RTOL"]

RANK_RTOL = 1e-10
"""Relative singular-value threshold (of the diagonally scaled H_4, or of T_LE) below which
the constraint matrix is taken as rank deficient."""

CHOLESKY_RTOL = 1e-12
"""Smallest Cholesky pivot (relative, scaled H_4) accepted without a rank-revealing check."""


@dataclass(frozen=True)
class Evaluation:
    """Everything computed at one time and state (arrays in the model's orders).

    Attributes
    ----------
    t : float
    x : ndarray (n_states,)
    xdot : ndarray (n_states,)
    U1, U2 : ndarray
        Known source values and unknown (constraint) efforts.
    T_X, T_U1, T_U2 : ndarray
        dX/dt = T_X X + T_U1 U1 + T_U2 U2.
    constraint_flow : ndarray
        c, the Se* flows (zero when the constraints hold at velocity level).
    phi : ndarray
        Position-level constraint values (NaN where a junction defines none).
    H4 : ndarray or None
        Eq. (15)'s constraint matrix (None in the Eq. (14) branch).
    H_X, H_3 : ndarray or None
        Eq. (15)'s H_X = J_CZ F T_X (the paper's [H_1 H_2]) and H_3 = J_CZ F T_U1.
    branch : Branch
        Which reduction gave U_2: Eq. (15), Eq. (14) or none (no unknown sources).
    rank : int
        Numerical rank of H_4 (or T_LE); equals ``U2.size`` unless redundant.
    constraint_scale : float
        Largest singular value (or pivot) of H_4 (or T_LE).
    junction : JunctionStructure
        The J blocks at this configuration.
    bond_values : ndarray (n_variables,)
        Every bond's effort then flow (see ``StateSpaceModel.bond_effort``).
    """

    t: float
    x: np.ndarray
    xdot: np.ndarray
    U1: np.ndarray
    U2: np.ndarray
    T_X: np.ndarray
    T_U1: np.ndarray
    T_U2: np.ndarray
    constraint_flow: np.ndarray
    phi: np.ndarray
    H4: np.ndarray | None
    H_X: np.ndarray | None
    H_3: np.ndarray | None
    branch: Branch
    rank: int
    constraint_scale: float
    junction: JunctionStructure
    bond_values: np.ndarray


def solve_constraints(H: np.ndarray, rhs: np.ndarray, *, spd_sign: bool,
           reference: float = 0.0) -> tuple[np.ndarray, int, float]:
    """Solve H u = rhs: Cholesky when H is (+/-) symmetric positive definite, else the
    minimum-norm least-squares solution (rank-revealing SVD).

    H_4 = G M^-1 G^T is first scaled symmetrically by its diagonal (Jacobi), so that the
    rank decision does not depend on units or on very different masses and lever arms.
    Rank is judged against ``max(largest singular value, reference)`` of the scaled
    matrix, so that a matrix that shrinks as a whole during a run (a singular
    configuration) is caught too. Returns the solution, the numerical rank and the scale.
    """
    if H.size == 0:
        return np.zeros(0), 0, 0.0
    if not np.all(np.isfinite(H)):
        raise SingularConstraintError("the constraint matrix has non-finite entries")
    if spd_sign:
        sign = 1.0 if np.trace(H) >= 0 else -1.0
        Hs = sign * H
        d = np.sqrt(np.abs(np.diag(Hs)))
        d = np.where(d > 0, d, 1.0)
        Hn = Hs / np.outer(d, d)
        b = sign * rhs / d
        try:
            cf = sla.cho_factor(Hn)
            piv = np.diag(cf[0]) ** 2
            if piv.min() > CHOLESKY_RTOL * max(1.0, reference):
                return sla.cho_solve(cf, b) / d, H.shape[0], 1.0
        except (np.linalg.LinAlgError, ValueError):
            pass
        u, sv, vt = np.linalg.svd(Hn)
        tol = RANK_RTOL * max(float(sv.max(initial=0.0)), reference)
        rank = int(np.sum(sv > tol))
        inv = np.where(sv > tol, 1.0 / np.where(sv > tol, sv, 1.0), 0.0)
        return (vt.T @ (inv * (u.T @ b))) / d, rank, float(sv.max(initial=0.0))
    u, sv, vt = np.linalg.svd(H)
    scale = float(sv.max(initial=0.0))
    tol = RANK_RTOL * max(scale, reference)
    rank = int(np.sum(sv > tol))
    inv = np.where(sv > tol, 1.0 / np.where(sv > tol, sv, 1.0), 0.0)
    return vt.T @ (inv * (u.T @ rhs)), rank, scale
