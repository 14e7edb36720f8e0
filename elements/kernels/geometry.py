"""Kernels: the formulas of joints' and loads' Jacobian terms and position constraints,
written once for stacks of instances.

- :class:`Geometry`: the bodies' rotations, centres and (with rates) angular velocities
  and centre velocities, stacked (row 0 the ground).
- :class:`Kernel`: a function of two bodies' geometry for a stack of instances (its
  value, its rate along the motion, and, for a Phi, its :meth:`Kernel.closure`
  residual); :class:`Sandwich` (L A_x^T A_y R: every term but one),
  :class:`PrismaticRotation`, and the gaps that are joints' Phi: :class:`PointGap`,
  :class:`SlideGap`, :class:`OrientationGap`, :class:`RevoluteGap`, :class:`AxesDot`
  (universal joints, with :class:`AxesCross` their constraint row and
  :class:`AxesCombination` their rates when the axes are not perpendicular) and
  :class:`ScrewGap`;
  :class:`GimbalRate`, a gimbal joint's coordinate rates; :class:`GapRow` and
  :class:`GapLength`, a distance between two bodies' points held (a universal joint
  whose axes do not meet).

:mod:`elements.kernels.blocks` builds blocks of them into the bond graph, and batches them
(with :mod:`elements.kernels.compiled` where numba is enabled).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.spatial import body_rate_from_quat_rate, cross3, quat_to_matrix, skew, vee

__all__ = ["Geometry", "Kernel", "Sandwich", "PrismaticRotation", "PointGap",
           "OrientationGap", "RevoluteGap", "SlideGap", "AxesCross", "AxesDot", "AxesCombination", "ScrewGap", "GimbalRate", "GimbalLockError",
           "GapRow", "GapLength"]


def _T(m: np.ndarray) -> np.ndarray:
    """Transpose of the last two axes (a stack of matrices)."""
    return m.swapaxes(-1, -2)


def _mv(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """m_i v_i for stacks m (n, a, b) and v (n, b) (or one v (b,) for all)."""
    return (m @ v[..., None])[..., 0]


class Geometry:
    """Rotation matrices A (body -> global), centres r (global, m) and, with rates,
    angular velocities w (body coordinates, rad/s) and centre velocities v (global, m/s)
    of a set of bodies, as stacks with one row per body. Row 0 is the ground (A = E,
    r = w = v = 0); ``index`` maps body names to rows (ground bodies to 0).
    """

    __slots__ = ("index", "A", "r", "w", "v", "_Adot")

    def __init__(self, index: dict[str, int], A: np.ndarray, r: np.ndarray,
                 w: np.ndarray | None = None, v: np.ndarray | None = None):
        self.index, self.A, self.r, self.w, self.v = index, A, r, w, v
        self._Adot = None

    @property
    def Adot(self) -> np.ndarray:
        """dA/dt = A omega~ of every body (needs rates); computed once."""
        if self._Adot is None:
            self._Adot = self.A @ skew(self.w)
        return self._Adot

    @classmethod
    def from_states(cls, index: dict[str, int], q: np.ndarray, r: np.ndarray,
                    qdot: np.ndarray | None = None, rdot: np.ndarray | None = None
                    ) -> "Geometry":
        """From the moving bodies' quaternions q (n, 4) and centres r (n, 3) (rows 1..n)
        and, optionally, their rates."""
        n = q.shape[0]
        A = np.empty((n + 1, 3, 3))
        A[0] = np.eye(3)
        A[1:] = quat_to_matrix(q)
        rr = np.zeros((n + 1, 3))
        rr[1:] = r
        geo = cls(index, A, rr)
        return geo if qdot is None else geo.with_rates(q, qdot, rdot)

    def with_rates(self, q: np.ndarray, qdot: np.ndarray, rdot: np.ndarray) -> "Geometry":
        """This geometry (same arrays) with the rates of the moving bodies: their
        quaternions q (n, 4), quaternion rates (n, 4) and centre velocities (n, 3)."""
        n = q.shape[0]
        w = np.zeros((n + 1, 3))
        w[1:] = body_rate_from_quat_rate(q, qdot)
        v = np.zeros((n + 1, 3))
        v[1:] = rdot
        return Geometry(self.index, self.A, self.r, w, v)

    @classmethod
    def of(cls, bodies, values, rates=None) -> "Geometry":
        """The geometry of ``bodies`` from the values [q, r] of each moving one, in
        order (and their rates)."""
        moving = [b for b in bodies if not b.is_ground]
        index = _index_of(bodies)
        q = np.array([values[2 * k] for k in range(len(moving))], dtype=float).reshape(-1, 4)
        r = np.array([values[2 * k + 1] for k in range(len(moving))], dtype=float).reshape(-1, 3)
        if rates is None:
            return cls.from_states(index, q, r)
        qd = np.array([rates[2 * k] for k in range(len(moving))], dtype=float).reshape(-1, 4)
        rd = np.array([rates[2 * k + 1] for k in range(len(moving))], dtype=float).reshape(-1, 3)
        return cls.from_states(index, q, r, qd, rd)

    @classmethod
    def of_poses(cls, poses: dict[str, tuple[np.ndarray, np.ndarray]], bodies) -> "Geometry":
        """From poses ``{name: (A, r)}`` of the moving ``bodies`` (no rates)."""
        index = _index_of(bodies)
        moving = [b for b in bodies if not b.is_ground]
        A = np.array([np.eye(3)] + [poses[b.name][0] for b in moving])
        r = np.array([np.zeros(3)] + [poses[b.name][1] for b in moving])
        return cls(index, A, r)


def _index_of(bodies) -> dict[str, int]:
    index, k = {}, 0
    for b in bodies:
        if b.is_ground:
            index[b.name] = 0
        else:
            k += 1
            index[b.name] = k
    return index


# -- kernels ------------------------------------------------------------------------------

class Kernel:
    """A function of two bodies' geometry written for stacks of instances.

    Subclasses set ``shape`` (of one instance's value), ``bodies`` (a, b: body names,
    None for the ground), ``params`` (per-instance constant arrays) and implement
    ``compute(geo, ia, ib, *stacked_params, rate)`` -> (n, *shape), or override
    :meth:`stack`; ``rate`` asks for the time derivative along the motion (the geometry
    then has rates). Instances with the same :attr:`key` are computed together.
    """

    shape: tuple[int, ...]
    bodies: tuple[str | None, str | None]
    params: tuple[np.ndarray, ...]

    @property
    def key(self) -> tuple:
        return (type(self), self.shape, tuple(p.shape for p in self.params))

    @staticmethod
    def compute(geo: Geometry, ia, ib, *params, rate: bool) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def stack(cls, kernels: Sequence["Kernel"], index: dict[str, int]) -> "_Stack":
        """Instances of this form (equal keys) as one computation."""
        return _Stack(kernels, index)

    def value(self, geo: Geometry) -> np.ndarray:
        """This instance's value at ``geo``."""
        return self.stack([self], geo.index)(geo, False)[0]

    def rate(self, geo: Geometry) -> np.ndarray:
        """Its time derivative (``geo`` with rates)."""
        return self.stack([self], geo.index)(geo, True)[0]

    def closure(self, geo: Geometry) -> np.ndarray:
        """For a Phi kernel: a residual that is zero exactly where the constraint holds
        (what closing a loop solves for; Phi itself may vanish elsewhere too, as an
        orientation's vee does at a half turn). Default: the value."""
        return self.value(geo)

    __call__ = value


def _rows(kernels: Sequence[Kernel], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """The stacks' rows of each kernel's two bodies (0: the ground), as int64 arrays."""
    return tuple(np.array([index[k.bodies[j]] if k.bodies[j] else 0 for k in kernels],
                          dtype=np.int64) for j in (0, 1))


class _Stack:
    """Instances of one kernel form, stacked: body rows and parameters as arrays."""

    def __init__(self, kernels: Sequence[Kernel], index: dict[str, int]):
        self.compute = type(kernels[0]).compute
        self.ia, self.ib = _rows(kernels, index)
        self.params = [np.array(p) for p in zip(*(k.params for k in kernels))]

    def __call__(self, geo: Geometry, rate: bool) -> np.ndarray:
        return self.compute(geo, self.ia, self.ib, *self.params, rate=rate)


class Sandwich(Kernel):
    """G = L A_x^T A_y R, x and y bodies (None: the ground, A = E), L and R constant.

    Every joint and load term but one has this form: A_a R (a point's velocity or a
    moment in global coordinates), L A_b^T (a direction fixed on b), L A_b^T A_a (the
    relative rotation seen in b), L A_b^T A_a R (both). Its rate is
    L (dA_x/dt^T A_y + A_x^T dA_y/dt) R. Stacks skip the factors that are E (a ground
    body, an identity L or R): most terms are one or two of the four."""

    def __init__(self, L: Any, x: str | None, y: str | None, R: Any):
        L, R = np.atleast_2d(np.asarray(L, dtype=float)), np.asarray(R, dtype=float)
        self.params = (L, R)
        self.bodies = (x, y)
        self.shape = (L.shape[0], R.shape[1])

    @property
    def key(self) -> tuple:
        L, R = self.params
        eye = (L.shape == (3, 3) and np.array_equal(L, np.eye(3)),
               R.shape == (3, 3) and np.array_equal(R, np.eye(3)))
        return super().key + (self.bodies[0] is None, self.bodies[1] is None) + eye

    @classmethod
    def stack(cls, kernels, index):
        st = _Stack(kernels, index)
        *_, x_ground, y_ground, L_eye, R_eye = kernels[0].key
        L = None if L_eye else st.params[0]
        R = None if R_eye else st.params[1]
        ix, iy = st.ia, st.ib

        def run(geo: Geometry, rate: bool) -> np.ndarray:
            A = geo.A
            if x_ground:                       # A_y R, d/dt: dA_y/dt R
                M = (geo.Adot if rate else A)[iy]
            elif y_ground:                     # L A_x^T
                M = _T((geo.Adot if rate else A)[ix])
            elif not rate:
                M = _T(A[ix]) @ A[iy]
            else:
                M = _T(geo.Adot[ix]) @ A[iy] + _T(A[ix]) @ geo.Adot[iy]
            if L is not None:
                M = L @ M
            return M if R is None else M @ R

        return run


def _gap(geo, ia, ib, P, Q):
    """h = r_P - r_Q: the joint point on a minus the one on b (global, m)."""
    return (geo.r[ia] + _mv(geo.A[ia], P)) - (geo.r[ib] + _mv(geo.A[ib], Q))


def _gap_rate(geo, ia, ib, P, Q):
    """dh/dt (global, m/s)."""
    return (geo.v[ia] + _mv(geo.A[ia], cross3(geo.w[ia], P))) - \
        (geo.v[ib] + _mv(geo.A[ib], cross3(geo.w[ib], Q)))


class PrismaticRotation(Kernel):
    """G of the child's rotation in a prismatic joint's translational block:
    D^T u~, u = Q + A_b^T h the joint point P seen from the child's centre (child
    coordinates), so that row i is (d_i x u)^T; its rate D^T du/dt~ with
    du/dt = A_b^T dh/dt - omega_b x (u - Q)."""

    def __init__(self, a: str | None, b: str, D: Any, P: Any, Q: Any):
        self.bodies = (a, b)
        self.params = tuple(np.asarray(p, dtype=float) for p in (D, P, Q))
        self.shape = (self.params[0].shape[1], 3)

    @staticmethod
    def compute(geo, ia, ib, D, P, Q, *, rate):
        AbT = _T(geo.A[ib])
        u = Q + _mv(AbT, _gap(geo, ia, ib, P, Q))
        if rate:
            u = _mv(AbT, _gap_rate(geo, ia, ib, P, Q)) - cross3(geo.w[ib], u - Q)
        return _T(D) @ skew(u)


class PointGap(Kernel):
    """Phi = r_P - r_Q (global, m): a spherical joint's points."""

    def __init__(self, a: str | None, b: str, P: Any, Q: Any):
        self.bodies = (a, b)
        self.params = (np.asarray(P, dtype=float), np.asarray(Q, dtype=float))
        self.shape = (3,)

    @staticmethod
    def compute(geo, ia, ib, P, Q, *, rate):
        return _gap(geo, ia, ib, P, Q)


class SlideGap(Kernel):
    """Phi = D^T A_b^T (r_P - r_Q) (m): a prismatic joint's gap across its axis (D: the
    directions d1, d2 on the child, child coordinates)."""

    def __init__(self, a: str | None, b: str, D: Any, P: Any, Q: Any):
        self.bodies = (a, b)
        self.params = tuple(np.asarray(p, dtype=float) for p in (D, P, Q))
        self.shape = (self.params[0].shape[1],)

    @staticmethod
    def compute(geo, ia, ib, D, P, Q, *, rate):
        return _mv(_T(D) @ _T(geo.A[ib]), _gap(geo, ia, ib, P, Q))


class GapRow(Kernel):
    """G = scale h^T (1 x 3, global), h = r_P - r_Q the point P on a less Q on b (m):
    the row of a held distance on a body's centre velocity (global; ``scale`` 1/d on
    a's, -1/d on b's). Its rate is scale (dh/dt)^T."""

    def __init__(self, a: str | None, b: str, P: Any, Q: Any, scale: float):
        self.bodies = (a, b)
        self.params = (np.asarray(P, dtype=float), np.asarray(Q, dtype=float),
                       np.array([float(scale)]))
        self.shape = (1, 3)

    @staticmethod
    def compute(geo, ia, ib, P, Q, scale, *, rate):
        h = _gap_rate(geo, ia, ib, P, Q) if rate else _gap(geo, ia, ib, P, Q)
        return (scale[:, 0:1] * h)[:, None, :]


class GapLength(Kernel):
    """Phi = (|h|^2 - d^2) / (2 d) (m, |h| - d to first order), h = r_P - r_Q: zero where
    P on a and Q on b are ``d`` apart (d > 0)."""

    def __init__(self, a: str | None, b: str, P: Any, Q: Any, d: float):
        self.bodies = (a, b)
        self.params = (np.asarray(P, dtype=float), np.asarray(Q, dtype=float),
                       np.array([float(d)]))
        self.shape = (1,)

    @staticmethod
    def compute(geo, ia, ib, P, Q, d, *, rate):
        h = _gap(geo, ia, ib, P, Q)
        d = d[:, 0]
        return ((np.einsum("ni,ni->n", h, h) - d * d) / (2.0 * d))[:, None]


class OrientationGap(Kernel):
    """Phi = vee(A_a C A_b^T) (rad, small): zero when the bodies' orientations differ by
    C = F_a F_b^T (fixed and prismatic joints)."""

    def __init__(self, a: str | None, b: str, C: Any):
        self.bodies = (a, b)
        self.params = (np.asarray(C, dtype=float),)
        self.shape = (3,)

    @staticmethod
    def compute(geo, ia, ib, C, *, rate):
        return vee(geo.A[ia] @ C @ _T(geo.A[ib]))

    def closure(self, geo: Geometry) -> np.ndarray:
        """A_a C A_b^T - E, raveled (9,): zero only where the orientations agree (the
        vee is also zero where they differ by a half turn, and flat at a quarter)."""
        ia, ib = _rows([self], geo.index)
        return (geo.A[ia[0]] @ self.params[0] @ geo.A[ib[0]].T - np.eye(3)).ravel()


class RevoluteGap(Kernel):
    """Phi = [-a_a . d2_b, a_a . d1_b] (rad, small): the parent's axis ``ax`` (parent
    coordinates) leaving the plane of d1 and d2 fixed on the child (``D``, child
    coordinates)."""

    def __init__(self, a: str | None, b: str, ax: Any, D: Any):
        self.bodies = (a, b)
        self.params = (np.asarray(ax, dtype=float), np.asarray(D, dtype=float))
        self.shape = (2,)

    @staticmethod
    def compute(geo, ia, ib, ax, D, *, rate):
        s = np.einsum("ni,nij->nj", _mv(geo.A[ia], ax), geo.A[ib] @ D)   # (a . d1, a . d2)
        return np.stack([-s[:, 1], s[:, 0]], axis=-1)

    def closure(self, geo: Geometry) -> np.ndarray:
        """a_a - a_b (3,), global, a_b = d1 x d2 the child's axis: zero only where the
        axes agree (Phi is also zero where they are opposite)."""
        ia, ib = _rows([self], geo.index)
        ax, D = self.params
        return geo.A[ia[0]] @ ax - geo.A[ib[0]] @ np.cross(D[:, 0], D[:, 1])


class AxesCross(Kernel):
    """G = sign (u x v)^T A_x, u = A_a ``u`` (fixed on a), v = A_b ``v`` (fixed on b), x
    the body ``which`` (0: a, 1: b): a universal joint's constraint row on body x's
    angular velocity (body coordinates). Its rate differentiates u, v and A_x."""

    def __init__(self, a: str | None, b: str, u: Any, v: Any, which: int, sign: float):
        self.bodies = (a, b)
        self.params = (np.asarray(u, dtype=float), np.asarray(v, dtype=float),
                       np.array([float(which), float(sign)]))
        self.shape = (1, 3)

    @staticmethod
    def compute(geo, ia, ib, u, v, flags, *, rate):
        Aa, Ab = geo.A[ia], geo.A[ib]
        ug, vg = _mv(Aa, u), _mv(Ab, v)
        w = cross3(ug, vg)
        on_b = (flags[:, 0] > 0.5)[:, None, None]
        M = np.where(on_b, Ab, Aa)
        if rate:
            Ad = geo.Adot
            wd = cross3(_mv(Ad[ia], u), vg) + cross3(ug, _mv(Ad[ib], v))
            Md = np.where(on_b, Ad[ib], Ad[ia])
            out = _mv(_T(M), wd) + _mv(_T(Md), w)
        else:
            out = _mv(_T(M), w)
        return (flags[:, 1:2] * out)[:, None, :]


class AxesDot(Kernel):
    """Phi = (A_a u) . (A_b v) - c (rad, small): zero when an axis fixed on a keeps the
    angle acos(c) to one fixed on b (a universal joint's cross; c = 0: perpendicular)."""

    def __init__(self, a: str | None, b: str, u: Any, v: Any, c: float = 0.0):
        self.bodies = (a, b)
        self.params = (np.asarray(u, dtype=float), np.asarray(v, dtype=float),
                       np.array([float(c)]))
        self.shape = (1,)

    @staticmethod
    def compute(geo, ia, ib, u, v, c, *, rate):
        return (np.einsum("ni,ni->n", _mv(geo.A[ia], u), _mv(geo.A[ib], v)) - c[:, 0])[:, None]


class AxesCombination(Kernel):
    """G = sign (alpha A_a u + beta A_b v)^T A_x, u fixed on a, v fixed on b, x the body
    ``which`` (0: a, 1: b): a row on body x's angular velocity (body coordinates) that
    takes a fixed combination of the two axes (a universal joint's coordinate rates when
    its axes are not perpendicular). Its rate differentiates both axes and A_x."""

    def __init__(self, a: str | None, b: str, u: Any, v: Any, alpha: float, beta: float,
                 which: int, sign: float):
        self.bodies = (a, b)
        self.params = (np.asarray(u, dtype=float), np.asarray(v, dtype=float),
                       np.array([float(alpha), float(beta), float(which), float(sign)]))
        self.shape = (1, 3)

    @staticmethod
    def compute(geo, ia, ib, u, v, flags, *, rate):
        Aa, Ab = geo.A[ia], geo.A[ib]
        al, be = flags[:, 0:1], flags[:, 1:2]
        row = al * _mv(Aa, u) + be * _mv(Ab, v)
        on_b = (flags[:, 2] > 0.5)[:, None, None]
        M = np.where(on_b, Ab, Aa)
        if rate:
            Ad = geo.Adot
            drow = al * _mv(Ad[ia], u) + be * _mv(Ad[ib], v)
            Md = np.where(on_b, Ad[ib], Ad[ia])
            out = _mv(_T(M), drow) + _mv(_T(Md), row)
        else:
            out = _mv(_T(M), row)
        return (flags[:, 3:4] * out)[:, None, :]


class ScrewGap(Kernel):
    """Phi = s - pitch theta (m): a screw joint's slide s = (A_a ax) . (r_Q - r_P) against
    its turn theta about ``ax`` (parent coordinates; ``F`` the parent's joint frame with
    ``ax`` its third column, ``C`` the child's rest rotation), theta's turn chosen so that
    |Phi| is least (the angle is known only modulo a turn, the slide is not)."""

    def __init__(self, a: str | None, b: str, F: Any, R0: Any, P: Any, Q: Any, pitch: float):
        self.bodies = (a, b)
        self.params = tuple(np.asarray(p, dtype=float) for p in (F, R0, P, Q)) + \
            (np.array([float(pitch)]),)
        self.shape = (1,)

    @staticmethod
    def compute(geo, ia, ib, F, R0, P, Q, pitch, *, rate):
        Aa, Ab = geo.A[ia], geo.A[ib]
        s = np.einsum("ni,ni->n", _mv(Aa, F[:, :, 2]), -_gap(geo, ia, ib, P, Q))
        rel = _T(F) @ _T(Aa) @ Ab @ _T(R0) @ F
        theta = np.arctan2(rel[:, 1, 0], rel[:, 0, 0])
        p = pitch[:, 0]
        raw = s - p * theta
        turn = 2.0 * np.pi * p
        k = np.where(turn != 0.0, np.round(raw / np.where(turn != 0.0, turn, 1.0)), 0.0)
        return (raw - k * turn)[:, None]


class GimbalLockError(ModelError):
    """A gimbal joint whose first and third axes have become parallel: its three angles
    no longer determine the rotation, and their rates are unbounded."""

    @classmethod
    def of(cls, joint: str) -> "GimbalLockError":
        """The error of gimbal joint ``joint`` (the numpy stack's and the compiled
        kernels' one message)."""
        return cls(f"gimbal joint '{joint}' is in gimbal lock (its first and third axes "
                   f"are parallel: the middle angle is at +-90 degrees from rest); its "
                   f"angles and their rates are undefined there")


GIMBAL_LOCK = 1e-8
"""The least sine between a gimbal's first and third axes (|a1 x u3|) at which its rates
are computed; below it, :class:`GimbalLockError`."""


class GimbalRate(Kernel):
    """G = sign r_k^T A_x: the rate of coordinate ``k`` of a gimbal (three revolutes
    meeting at a point, a1 on the parent, a2 between, a3 on the child, a1 _|_ a2 _|_ a3)
    from body x's angular velocity (body coordinates); x the body ``which`` (0: a, 1: b).

    With a1 = A_a ``u`` and u3 = A_b ``v`` (global), d = a1 . u3 and u2 = s (a1 x u3) /
    |a1 x u3| (the middle axis; ``s`` its sign at rest), the relative angular velocity
    w = a1 q1' + u2 q2' + u3 q3' gives q1' = (a1 - d u3) . w / (1 - d^2),
    q2' = u2 . w and q3' = (u3 - d a1) . w / (1 - d^2). Singular where a1 and u3 are
    parallel (gimbal lock): the stack raises :class:`GimbalLockError` naming the joint.
    """

    def __init__(self, a: str | None, b: str, u: Any, v: Any, k: int, which: int,
                 sign: float, s: float, joint: str = "?"):
        self.bodies = (a, b)
        # (the lock's threshold travels with the parameters: the compiled kernels read
        # it there)
        self.params = (np.asarray(u, dtype=float), np.asarray(v, dtype=float),
                       np.array([float(k), float(which), float(sign), float(s),
                                 GIMBAL_LOCK]))
        self.shape = (1, 3)
        self.joint = joint

    @classmethod
    def stack(cls, kernels, index):
        st = _Stack(kernels, index)
        names = [k.joint for k in kernels]
        u, v, flags = st.params
        ia, ib = st.ia, st.ib
        row = flags[:, 0].astype(np.int64)
        on_b = (flags[:, 1] > 0.5)[:, None, None]

        def run(geo: Geometry, rate: bool) -> np.ndarray:
            Aa, Ab = geo.A[ia], geo.A[ib]
            a1, u3 = _mv(Aa, u), _mv(Ab, v)
            d = np.einsum("ni,ni->n", a1, u3)[:, None]
            c = cross3(a1, u3)
            n2 = 1.0 - d * d
            n = np.sqrt(np.maximum(n2, 0.0))
            bad = np.flatnonzero(n[:, 0] < flags[:, 4])
            if bad.size:
                raise GimbalLockError.of(names[bad[0]])
            s = flags[:, 3:4]
            rows = np.stack([(a1 - d * u3) / n2, s * c / n, (u3 - d * a1) / n2], axis=1)
            r = rows[np.arange(len(row)), row]
            M = np.where(on_b, Ab, Aa)
            out = _mv(_T(M), r)
            if rate:
                Ad = geo.Adot
                da1, du3 = _mv(Ad[ia], u), _mv(Ad[ib], v)
                dd = (np.einsum("ni,ni->n", da1, u3) + np.einsum("ni,ni->n", a1, du3))[:, None]
                dc = cross3(da1, u3) + cross3(a1, du3)
                dn = np.einsum("ni,ni->n", c, dc)[:, None] / n
                g = 2.0 * d * dd / (n2 * n2)
                drows = np.stack([
                    (da1 - dd * u3 - d * du3) / n2 + (a1 - d * u3) * g,
                    s * (dc / n - c * dn / n2),
                    (du3 - dd * a1 - d * da1) / n2 + (u3 - d * a1) * g], axis=1)
                dr = drows[np.arange(len(row)), row]
                Md = np.where(on_b, Ad[ib], Ad[ia])
                out = _mv(_T(Md), r) + _mv(_T(M), dr)
            return (flags[:, 2:3] * out)[:, None, :]

        return run
