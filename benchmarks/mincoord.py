"""chain-N in minimal (joint) coordinates, pure numpy: an independent model of the
benchmark chain (benchmarks.md section 3), used for the reference solutions.

It shares nothing with ``bondgraph``/``elements`` except the geometry written down in the
design: N cubes of mass m = 1 kg and side 0.05 m, joint i at (0, 0, -0.2 (i-1)) in the
reference configuration, body i's centre 0.1 m below joint i, joint i about the parent's
x axis for odd i and y for even i, gravity (0, 0, -9.81).

State y = (q_1..q_N, qd_1..qd_N). The equations are M(q) qdd = -h(q, qd), with
M = sum_i m Jv_i^T Jv_i + Jw_i^T I_i Jw_i and h the velocity-product and gravity terms,
all built with vectorised numpy (O(N^2) memory, one N x N solve per evaluation):

- world rotation of body i: R_i = R_{i-1} Rot(axis_i, q_i) (the axis is fixed in both
  the parent and the child, so its world direction is a_i = R_i axis_i);
- joint points p_1 = 0, p_{i+1} = p_i + R_i (0, 0, -0.2); centres c_i = p_i + R_i (0, 0, -0.1);
- omega_i = sum_{j<=i} a_j qd_j; Jw_i[:, j] = a_j and Jv_i[:, j] = a_j x (c_i - p_j), j <= i;
- the acceleration of everything at qdd = 0 ("bias"): alpha_i = sum_{j<=i} omega_{j-1} x
  a_j qd_j; a point fixed in body i at world offset d from p_i accelerates by
  a_{p_i} + alpha_i x d + omega_i x (omega_i x d), with a_{p_1} = 0.
"""

from __future__ import annotations

import numpy as np

MASS = 1.0
SIDE = 0.05
LINK = 0.2          # joint-to-joint distance (m)
HALF = 0.1          # joint-to-centre distance (m)
GRAVITY = np.array([0.0, 0.0, -9.81])


def _rot(axis_index: int, angle: np.ndarray) -> np.ndarray:
    """Rotations about x (0) or y (1) by ``angle`` (n,), shape (n, 3, 3)."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros((angle.size, 3, 3))
    if axis_index == 0:
        R[:, 0, 0] = 1.0
        R[:, 1, 1], R[:, 1, 2], R[:, 2, 1], R[:, 2, 2] = c, -s, s, c
    else:
        R[:, 1, 1] = 1.0
        R[:, 0, 0], R[:, 0, 2], R[:, 2, 0], R[:, 2, 2] = c, s, -s, c
    return R


class Chain:
    """chain-N in joint coordinates. ``rhs(t, y)`` returns a fresh array every call."""

    def __init__(self, n: int, *, mass: float = MASS, side: float = SIDE,
                 gravity=GRAVITY):
        self.n = n
        self.mass = float(mass)
        self.i0 = self.mass * side ** 2 / 6.0          # cube: isotropic central inertia
        self.g = np.asarray(gravity, dtype=float)
        self.axis_index = np.array([0 if (i % 2 == 1) else 1 for i in range(1, n + 1)])
        self.axes = np.eye(3)[self.axis_index]           # (N, 3), local = parent-local
        self.tril = np.tril(np.ones((n, n)))[:, :, None]  # [i, j] = 1 for j <= i

    # -- kinematics ------------------------------------------------------------------------
    def rotations(self, q: np.ndarray) -> np.ndarray:
        Rj = np.empty((self.n, 3, 3))
        odd = self.axis_index == 0
        Rj[odd] = _rot(0, q[odd])
        Rj[~odd] = _rot(1, q[~odd])
        R = np.empty_like(Rj)
        acc = np.eye(3)
        for i in range(self.n):
            acc = acc @ Rj[i]
            R[i] = acc
        return R

    def kinematics(self, q: np.ndarray):
        """World rotations R (N,3,3), joint axes a (N,3), joint points p (N,3), centres c."""
        R = self.rotations(q)
        z = R[:, :, 2]                                    # body z axes in the world
        a = np.einsum("nij,nj->ni", R, self.axes)
        link = -LINK * z
        p = np.zeros((self.n, 3))
        p[1:] = np.cumsum(link, axis=0)[:-1]
        c = p - HALF * z
        return R, a, p, c, link

    def centres(self, q: np.ndarray) -> np.ndarray:
        """Centres of mass (N, 3) at joint angles q."""
        return self.kinematics(q)[3]

    def mass_matrix_and_bias(self, q: np.ndarray, qd: np.ndarray):
        R, a, p, c, link = self.kinematics(q)
        aq = a * qd[:, None]                              # a_j qd_j
        w = np.cumsum(aq, axis=0)                         # omega_i
        w_prev = np.zeros_like(w)
        w_prev[1:] = w[:-1]
        alpha = np.cumsum(np.cross(w_prev, aq), axis=0)
        # acceleration bias of the joint points and the centres
        step = np.cross(alpha, link) + np.cross(w, np.cross(w, link))
        ap = np.zeros_like(p)
        ap[1:] = np.cumsum(step, axis=0)[:-1]
        d = c - p
        ac = ap + np.cross(alpha, d) + np.cross(w, np.cross(w, d))
        # Jacobians: Jv[i, j] = a_j x (c_i - p_j) for j <= i
        Jv = np.cross(a[None, :, :], c[:, None, :] - p[None, :, :]) * self.tril
        A = Jv.transpose(0, 2, 1).reshape(3 * self.n, self.n)
        M = self.mass * (A.T @ A)
        # rotational part, isotropic inertia: i0 * sum_i Jw_i^T Jw_i
        G = a @ a.T
        idx = np.arange(self.n)
        count = self.n - np.maximum(idx[:, None], idx[None, :])   # bodies i >= max(j, k)
        M += self.i0 * G * count
        # h = sum_i m Jv_i^T (ac_i - g) + Jw_i^T (I alpha_i + w_i x I w_i); the last is 0
        h = A.T @ (self.mass * (ac - self.g)).reshape(-1)
        # Jw_i^T (i0 alpha_i) summed over i >= j: a_j . sum_{i>=j} alpha_i
        tail = np.cumsum(alpha[::-1], axis=0)[::-1]
        h += self.i0 * np.einsum("ij,ij->i", a, tail)
        return M, h

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        n = self.n
        q, qd = y[:n], y[n:]
        M, h = self.mass_matrix_and_bias(q, qd)
        out = np.empty(2 * n)
        out[:n] = qd
        out[n:] = np.linalg.solve(M, -h)
        return out

    def energy(self, y: np.ndarray) -> tuple[float, float]:
        """(kinetic, gravity potential) in J; the potential is zero at z = 0."""
        n = self.n
        q, qd = y[:n], y[n:]
        M, _ = self.mass_matrix_and_bias(q, np.zeros(n))
        c = self.centres(q)
        return float(0.5 * qd @ M @ qd), float(-self.mass * np.sum(c @ self.g))

    def initial_state(self, bend: float = 0.3) -> np.ndarray:
        return np.concatenate([np.full(self.n, bend), np.zeros(self.n)])
