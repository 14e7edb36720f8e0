"""Jacobian blocks: the one mechanism by which joints and loads attach to bodies.

A block is a 0-junction ``J`` of dimension n whose bonds bring, from body junctions
k (a body's ``.v`` or ``.w``), the flows ``mu_k f_k`` with ``mu_k = -G_k``, so that the
flow of one further bond pointing into ``J`` (its port) is

    f_port = sum_k G_k f_k

and the common effort e of J acts on each body as the generalised force G_k^T e
(a force on ``.v``, a body-frame moment on ``.w``). Joints leave constraint blocks'
ports open (the causality assignment inserts an Se* there: its flow is sum G_k f_k =
dPhi/dt, its effort the reaction); a joint's free direction is a block whose port is the
joint's axis 1-junction; a load is a block whose port is its effort source.

G_k and Phi are functions of the bodies' orientations and positions. Each is a
:class:`Kernel`: a formula written once for a stack of instances (every joint of a
mechanism whose term has that form), which computes one instance as a stack of one. A
mechanism's bond graph shares one modulus context, :func:`frames_context`: per
evaluation it turns every body's quaternion and position (and their rates) into the
stacked :class:`Geometry`, and its ``batch`` evaluates all the terms of one form, and
all the Phi of one form, in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import MTF, TF, BondGraph, ModulusContext, PositionConstraint, ZeroJunction
from bondgraph.spatial import body_rate_from_quat_rate, cross3, quat_to_matrix, skew, vee

__all__ = ["Term", "Block", "Geometry", "Kernel", "Sandwich", "PrismaticRotation",
           "PointGap", "OrientationGap", "RevoluteGap", "SlideGap", "build_block",
           "frames_context", "term_bond"]


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


# -- terms and blocks ---------------------------------------------------------------------

@dataclass
class Term:
    """G_k of one body junction: ``junction`` is ``"<body>.v"`` or ``"<body>.w"``.

    ``kernel`` gives G (n, 3) and its rate from the geometry; ``constant`` is set instead
    when G never changes (then a TF is used and no rate is needed).
    """

    junction: str
    kernel: Kernel | None = None
    constant: np.ndarray | None = None

    def G(self, geo: Geometry) -> np.ndarray:
        """G at ``geo``."""
        return self.constant if self.kernel is None else self.kernel.value(geo)

    def G_rate(self, geo: Geometry) -> np.ndarray:
        """dG/dt at ``geo`` (with rates)."""
        return np.zeros_like(self.constant) if self.kernel is None else self.kernel.rate(geo)


@dataclass
class Block:
    """A 0-junction ``name`` of dimension ``dim`` with its terms.

    ``phi`` (a :class:`Kernel`, ``phi(geo) -> (dim,)``) is the position-level constraint
    (constraint blocks only), defined so that dPhi/dt = sum G_k f_k on Phi = 0.
    """

    name: str
    dim: int
    terms: list[Term]
    bodies: tuple  # RigidBody objects whose states the G functions read
    phi: Kernel | None = None
    constraint: bool = False
    label: str | None = None


def _deps(bodies) -> tuple[str, ...]:
    out = []
    for b in bodies:
        if not b.is_ground:
            out += [b.q, b.r]
    return tuple(out)


def _geometry(bodies, values, rates=None) -> Geometry:
    """The geometry of ``bodies`` at the values (and rates) of their states, in the order
    of ``_deps(bodies)``."""
    return Geometry.of(bodies, values, rates)


class _Modulus:
    """An MTF's modulus mu = -G of one term (or its rate), as a function of the
    context's geometry; the batch recognises it."""

    __slots__ = ("kernel", "rate")

    def __init__(self, kernel: Kernel, rate: bool):
        self.kernel, self.rate = kernel, rate

    def __call__(self, geo: Geometry) -> np.ndarray:
        return -(self.kernel.rate(geo) if self.rate else self.kernel.value(geo))


def _compiled():
    """:mod:`elements._compiled` where numba is available and enabled (see
    :func:`bondgraph.fastlu.enabled`), else None (the numpy stacks)."""
    from bondgraph import fastlu
    if not fastlu.enabled():
        return None
    from . import _compiled as compiled
    return compiled


class _CompiledSandwiches:
    """Every :class:`Sandwich` of a batch (one rate flag and sign) in one compiled call
    (:func:`elements._compiled.sandwich`), whatever their forms."""

    @staticmethod
    def takes(kernel: Kernel) -> bool:
        """A Sandwich whose L has at most 3 rows and R at most 3 columns."""
        return type(kernel) is Sandwich and kernel.params[0].shape[0] <= 3 and \
            kernel.params[1].shape == (3, kernel.params[1].shape[1]) and \
            kernel.params[1].shape[1] <= 3 and kernel.params[0].shape[1] == 3

    def __init__(self, kernels, rate: bool, scale: float, offsets, module):
        n = len(kernels)
        self.kernels, self.rate, self.sign = kernels, bool(rate), float(scale)
        self.L = np.zeros((n, 3, 3))
        self.R = np.zeros((n, 3, 3))
        self.nrow = np.empty(n, dtype=np.int64)
        self.ncol = np.empty(n, dtype=np.int64)
        self.form = np.zeros(n, dtype=np.int64)      # bit 0: L = E (3 x 3), bit 1: R = E
        self.dest = np.zeros((n, 9), dtype=np.int64)
        for i, (k, off) in enumerate(zip(kernels, offsets)):
            L, R = k.params
            self.L[i, :L.shape[0]] = L
            self.R[i, :, :R.shape[1]] = R
            self.nrow[i], self.ncol[i] = L.shape[0], R.shape[1]
            self.form[i] = (1 if L.shape == (3, 3) and np.array_equal(L, np.eye(3)) else 0) \
                | (2 if R.shape == (3, 3) and np.array_equal(R, np.eye(3)) else 0)
            size = L.shape[0] * R.shape[1]
            self.dest[i, :size] = off + np.arange(size)
        self.kernel = module.sandwich
        self._index = None

    def __call__(self, geo: Geometry, out: np.ndarray) -> None:
        if self._index is not geo.index:
            self._index = geo.index
            self.ix, self.iy = _rows(self.kernels, geo.index)
        Adot = geo.Adot if self.rate else geo.A
        self.kernel(geo.A, Adot, self.rate, self.ix, self.iy, self.L, self.R, self.nrow,
                    self.ncol, self.form, self.dest, self.sign, out)


# the compiled form of each kernel type (elements._compiled): f(module, geo, rate, ia, ib,
# params, dest, sign, out); Phi kernels only as values
_COMPILED_KERNELS = {
    PointGap: lambda m, g, rate, ia, ib, p, *o: m.point_gap(g.A, g.r, ia, ib, *p, *o),
    RevoluteGap: lambda m, g, rate, ia, ib, p, *o: m.revolute_gap(g.A, ia, ib, *p, *o),
    SlideGap: lambda m, g, rate, ia, ib, p, *o: m.slide_gap(g.A, g.r, ia, ib, *p, *o),
    OrientationGap: lambda m, g, rate, ia, ib, p, *o: m.orientation_gap(g.A, ia, ib, *p, *o),
    PrismaticRotation: lambda m, g, rate, ia, ib, p, *o: m.prismatic_rotation(
        g.A, g.r, g.w if rate else g.r, g.v if rate else g.r, rate, ia, ib, *p, *o),
}
_RATES_COMPILED = (PrismaticRotation,)


def _compiles(kernel: Kernel, rate: bool) -> bool:
    t = type(kernel)
    if t is PrismaticRotation or t is SlideGap:       # D of shape (3, k), k <= 3
        D = kernel.params[0]
        if D.ndim != 2 or D.shape[0] != 3 or D.shape[1] > 3:
            return False
    return t in _COMPILED_KERNELS and (not rate or t in _RATES_COMPILED)


class _CompiledKernels:
    """The kernels of a batch that :mod:`elements._compiled` has (see
    :data:`_COMPILED_KERNELS`), one compiled call per type."""

    def __init__(self, kernels, rate: bool, scale: float, offsets, module):
        self.sign = float(scale)
        self.rate = bool(rate)
        self.module = module
        self.groups = []
        by_form: dict[tuple, list] = {}
        for k, off in zip(kernels, offsets):
            by_form.setdefault((type(k), tuple(p.shape for p in k.params)), []).append((k, off))
        for (cls, _), sel in by_form.items():
            ks = [k for k, _ in sel]
            size = int(np.prod(ks[0].shape))
            dest = np.array([off + np.arange(size) for _, off in sel], dtype=np.int64)
            params = [np.ascontiguousarray(np.array(p, dtype=float))
                      for p in zip(*(k.params for k in ks))]
            self.groups.append([_COMPILED_KERNELS[cls], ks, dest, params, None, None, None])

    def __call__(self, geo: Geometry, out: np.ndarray) -> None:
        for g in self.groups:
            fn, ks, dest, params, index, ia, ib = g
            if index is not geo.index:
                g[4] = geo.index
                g[5], g[6] = ia, ib = _rows(ks, geo.index)
            fn(self.module, geo, self.rate, ia, ib, params, dest, self.sign, out)


def _batch(functions) -> Any:
    """The context's batch: all the terms' moduli (or rates), or all the Phi, stacked by
    kernel form; None when a function is not one of ours."""
    items = []
    for f in functions:
        if isinstance(f, _Modulus):
            items.append((f.kernel, f.rate, -1.0))
        elif isinstance(f, Kernel):
            items.append((f, False, 1.0))
        else:
            return None
    sizes = [int(np.prod(k.shape)) for k, _, _ in items]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    compiled = _compiled()
    groups: dict[tuple, list[int]] = {}
    for i, (k, rate, scale) in enumerate(items):
        key = k.key
        if compiled is not None and _CompiledSandwiches.takes(k):
            key = ("compiled", _CompiledSandwiches)
        elif compiled is not None and _compiles(k, rate):
            key = ("compiled", _CompiledKernels)
        groups.setdefault((key, rate, scale), []).append(i)
    plan = []
    index = None
    for (key, rate, scale), members in groups.items():
        if key[0] == "compiled":
            plan.append(key[1]([items[i][0] for i in members], rate, scale,
                               [offsets[i] for i in members], compiled))
            continue
        dest = np.array([np.arange(offsets[i], offsets[i + 1]) for i in members])
        plan.append(([items[i][0] for i in members], rate, scale, dest))
    total = int(offsets[-1])
    stacks: dict[int, list] = {}

    def run(geo: Geometry) -> np.ndarray:
        nonlocal index
        if index is not geo.index:           # the stacks' body rows, made once
            index = geo.index
            stacks.clear()
        out = np.empty(total)
        for i, entry in enumerate(plan):
            if isinstance(entry, (_CompiledSandwiches, _CompiledKernels)):
                entry(geo, out)
                continue
            kernels, rate, scale, dest = entry
            st = stacks.get(i)
            if st is None:
                st = stacks[i] = type(kernels[0]).stack(kernels, geo.index)
            val = st(geo, rate).reshape(dest.shape)
            out[dest] = -val if scale < 0 else val
        return out

    return run


class _Program:
    """Terms and Phi of a mechanism as one compiled call (:func:`elements._compiled.
    program`): ``outputs`` is one list per output vector of (kernel, sign) pairs, each
    kernel's value (or rate, with ``rate``) raveled, times sign, at its place in the
    list's concatenation. The groups are those of :class:`_CompiledSandwiches` and
    :class:`_CompiledKernels`."""

    _CODES = {Sandwich: 0, PointGap: 1, RevoluteGap: 2, SlideGap: 3, OrientationGap: 4,
              PrismaticRotation: 5}

    def __init__(self, module, index: dict[str, int], outputs, rate: bool):
        C = module
        self.module, self.rate = module, bool(rate)
        rows, ints, flts = [], [], []
        n_int, n_flt = [0], [0]

        def put(store, count, arr) -> int:
            arr = np.ravel(arr)
            store.append(arr)
            count[0] += arr.size
            return count[0] - arr.size

        def rows_of(ks):
            ia, ib = _rows(ks, index)
            return put(ints, n_int, ia), put(ints, n_int, ib)

        self.sizes = []
        for target, items in enumerate(outputs):
            sizes = [int(np.prod(k.shape)) for k, _ in items]
            offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            self.sizes.append(int(offsets[-1]))
            by_sign: dict[tuple, list[int]] = {}
            for i, (k, sign) in enumerate(items):
                by_sign.setdefault((type(k) is Sandwich, float(sign)), []).append(i)
            for (is_sandwich, sign), members in by_sign.items():
                ks = [items[i][0] for i in members]
                offs = [offsets[i] for i in members]
                if is_sandwich:
                    sw = _CompiledSandwiches(ks, rate, sign, offs, module)
                    row = np.zeros(C.D_COLUMNS, dtype=np.int64)
                    row[[C.D_CODE, C.D_N]] = C.SANDWICH, len(ks)
                    row[C.D_IA], row[C.D_IB] = rows_of(ks)
                    row[C.D_DEST] = put(ints, n_int, sw.dest)
                    row[C.D_NROW] = put(ints, n_int, sw.nrow)
                    row[C.D_NCOL] = put(ints, n_int, sw.ncol)
                    row[C.D_FORM] = put(ints, n_int, sw.form)
                    row[C.D_F0] = put(flts, n_flt, sw.L)
                    row[C.D_F1] = put(flts, n_flt, sw.R)
                    row[[C.D_TARGET, C.D_SIGN]] = target, int(sign)
                    rows.append(row)
                    continue
                for _, gks, dest, params, *_ in _CompiledKernels(ks, rate, sign, offs,
                                                                 module).groups:
                    row = np.zeros(C.D_COLUMNS, dtype=np.int64)
                    row[[C.D_CODE, C.D_N]] = self._CODES[type(gks[0])], len(gks)
                    row[C.D_IA], row[C.D_IB] = rows_of(gks)
                    row[C.D_DEST] = put(ints, n_int, dest)
                    if type(gks[0]) in (SlideGap, PrismaticRotation):
                        row[C.D_K] = params[0].shape[2]
                    for j, par in enumerate(params):
                        row[C.D_F0 + j] = put(flts, n_flt, par)
                    row[[C.D_TARGET, C.D_SIGN]] = target, int(sign)
                    rows.append(row)
        self.desc = np.array(rows, dtype=np.int64).reshape(-1, C.D_COLUMNS)
        self.ints = np.concatenate(ints).astype(np.int64) if ints else \
            np.zeros(0, dtype=np.int64)
        self.flts = np.concatenate(flts).astype(float) if flts else np.zeros(0)
        while len(self.sizes) < 2:
            self.sizes.append(0)

    @staticmethod
    def takes(functions, rate: bool, modulus: bool) -> list | None:
        """(kernel, sign) of each function when all are ours and compiled (moduli -G
        with the rate flag ``rate`` when ``modulus``, else Phi kernels), else None."""
        items = []
        for f in functions:
            if modulus and isinstance(f, _Modulus) and f.rate == rate:
                k, sign = f.kernel, -1.0
            elif not modulus and isinstance(f, Kernel):
                k, sign = f, 1.0
            else:
                return None
            if not (_CompiledSandwiches.takes(k) or
                    (type(k) is not Sandwich and _compiles(k, rate))):
                return None
            items.append((k, sign))
        return items

    def __call__(self, states: np.ndarray, state_rates: np.ndarray | None = None):
        out0, out1 = np.empty(self.sizes[0]), np.empty(self.sizes[1])
        self.module.program(states, states if state_rates is None else state_rates,
                            self.rate, self.desc, self.ints, self.flts, out0, out1)
        return out0, out1


class _Fused:
    """What :attr:`bondgraph.ModulusContext.fuse` returns for a mechanism: the terms'
    moduli and the Phi in one compiled call, the moduli's rates in another."""

    def __init__(self, module, index, values, rates, phi, n):
        self._values = _Program(module, index, [values, phi], rate=False)
        self._rates = _Program(module, index, [rates], rate=True)
        self._n = n

    def values(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._values(state.reshape(self._n, 7))

    def rates(self, state: np.ndarray, state_rates: np.ndarray) -> np.ndarray:
        return self._rates(state.reshape(self._n, 7), state_rates.reshape(self._n, 7))[0]


def frames_context(bodies) -> ModulusContext:
    """One modulus context for all ``bodies`` (a mechanism's, ground included): its
    result is their :class:`Geometry`, computed once per evaluation from every moving
    body's quaternion and centre (gathered as one array), and its batch computes the
    terms and Phi of each kernel form in one call."""
    moving = [b for b in bodies if not b.is_ground]
    index = _index_of(bodies)
    n = len(moving)

    last: dict[bytes, Geometry] = {}      # the latest state's geometry (value and rate
                                         # contexts of one evaluation share it)
    compiled = _compiled()               # decided when the mechanism is built

    def value(vals):
        vals = np.asarray(vals, dtype=float)
        key = vals.tobytes()
        geo = last.get(key)
        if geo is None:
            s = vals.reshape(n, 7)
            if compiled is not None:
                geo = Geometry(index, *compiled.frames(s))
            else:
                geo = Geometry.from_states(index, s[:, :4], s[:, 4:])
            last.clear()
            last[key] = geo
        return geo

    def rate(vals, rates):
        geo = value(vals)
        s = np.asarray(vals, dtype=float).reshape(n, 7)
        d = np.asarray(rates, dtype=float).reshape(n, 7)
        if compiled is not None:
            w, v, Adot = compiled.rates(s[:, :4], d[:, :4], d[:, 4:], geo.A)
            out = Geometry(index, geo.A, geo.r, w, v)
            out._Adot = Adot
            return out
        return geo.with_rates(s[:, :4], d[:, :4], d[:, 4:])

    def fuse(values, rates, phi):
        if compiled is None:
            return None
        items = [_Program.takes(values, False, True), _Program.takes(rates, True, True),
                 _Program.takes(phi, False, False)]
        if any(i is None for i in items):
            return None
        return _Fused(compiled, index, *items, n)

    return ModulusContext(value=value, rate=rate, depends_on=_deps(moving), batch=_batch,
                          concatenated=True, fuse=fuse)


def term_bond(block: Block, term: Term) -> tuple[str, float]:
    """The bond by which ``term`` of ``block`` meets its body junction, and the sign by
    which that bond's effort is the generalised force G^T e on the body: a bond into
    the junction brings +effort, one out of it takes it away (-effort). Constant terms
    E and -E are one bond between the block and the body (``<term>.b``); the others go
    through a TF or MTF whose bond at the body is ``<term>.b1``, out of the junction."""
    body, kind = term.junction.rsplit(".", 1)
    ename = f"{block.name}.{body}.{kind}"
    if term.constant is not None:
        g = np.asarray(term.constant, dtype=float)
        if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, np.eye(3)):
            return f"{ename}.b", 1.0                 # block -> body junction (mu = -E)
        if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, -np.eye(3)):
            return f"{ename}.b", -1.0                # body junction -> block (mu = +E)
    return f"{ename}.b1", -1.0


def build_block(bg: BondGraph, block: Block, context: ModulusContext, *,
                port_from: str | None = None, port_name: str | None = None) -> None:
    """Add ``block`` to ``bg``: its 0-junction, one MTF (modulus -G, from ``context``, a
    :func:`frames_context` that covers the block's bodies) or TF per term, and, when
    ``port_from`` is given, the port bond ``port_from -> block`` (its flow is
    sum G_k f_k)."""
    pc = None
    if block.phi is not None:
        pc = PositionConstraint(block.phi, context.depends_on, context=context)
    bg.add(ZeroJunction(block.name, dim=block.dim, constraint=block.constraint,
                        constraint_label=block.label, position_constraint=pc))
    for term in block.terms:
        body, kind = term.junction.rsplit(".", 1)
        ename = f"{block.name}.{body}.{kind}"
        bond, sign = term_bond(block, term)
        if bond == f"{ename}.b":                 # G = E or -E: one bond, no two-port
            if sign > 0:
                bg.connect(block.name, term.junction, name=bond)
            else:
                bg.connect(term.junction, block.name, name=bond)
            continue
        if term.constant is not None:
            bg.add(TF(ename, -np.asarray(term.constant, dtype=float)))
        else:
            bg.add(MTF(ename, _Modulus(term.kernel, False),
                       modulus_rate=_Modulus(term.kernel, True),
                       context=context, shape=(block.dim, 3)))
        bg.connect(term.junction, ename, name=f"{ename}.b1")
        bg.connect(ename, block.name, name=f"{ename}.b2")
    if port_from is not None:
        bg.connect(port_from, block.name, name=port_name or f"{block.name}.port")
