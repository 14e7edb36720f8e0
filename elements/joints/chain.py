"""A general serial chain as one joint: :class:`ChainJoint` (registered as ``"chain"``),
any sequence of n <= 6 one-axis members (:class:`ChainAxis`: a revolute about an axis
through a point, or a slide along an axis), each moving the next, with massless links
between them. Its coordinates are the members' angles (rad) and slides (m), in order.

The special kinds (:class:`~elements.joints.UniversalJoint`, ``GimbalJoint``,
``PlanarJoint``) write their chains in closed form; this kind covers every other chain
(two parallel hinges, three hinges whose axes do not meet, proper-Euler gimbals,
slide-hinge-slide)
at the price of evaluating it numerically (no compiled kernel).

Formulation (parent coordinates, positions relative to the joint point P)
-------------------------------------------------------------------------
Member k has the twist xi_k = (s_k, p_k x s_k) (revolute about s_k through p_k) or
(0, s_k) (slide), at rest. The child's pose relative to its rest is the product of
exponentials g(q) = exp(xi_1 q_1) ... exp(xi_n q_n); its spatial Jacobian J(q) (6 x n)
has the columns Ad(g_1 ... g_(k-1)) xi_k, and its rate column k is
[sum_(j<k) xi'_j qd_j, xi'_k] (the Lie bracket). The relative twist V = (omega_rel,
v at P) of the child is linear in the bodies' flows, V = sum_k B_k f_k.

- Axis blocks (n rows): qd = J^+ V, J^+ = (J^T J)^-1 J^T, exact where the constraints hold.
- Constraint block (6 - n rows): N V, N = N_c (E - J J^+); N J = 0. N_c is the rest
  complement N_0 of J(0) carried by the first member's motion, N_0 Ad(g_1)^-1: for
  n <= 2, for revolutes meeting at a point and for slides it annihilates J by itself
  (the range of J is Ad(g_1) of its rest range), so the projection changes nothing;
  where the projection would lose rank (a chain of 3 or more whose motion subspace has
  turned far from rest), the complement of J at q rounded to a grid (pi/4 rad, 0.25 m)
  is used instead. Either is smooth where it is used and spans the same rows, so the
  dynamics on Phi = 0 do not depend on the choice; only the basis in which the
  constraint's multipliers are written does (the reported reaction wrench does not).
- Phi = N e, e = (log(R_rel R(q)^T), d - R_rel R(q)^T t(q)) the pose error of
  T = (R_rel, d) (the child's rotation from its rest and Q's displacement from P)
  against g(q).

How the kernels get q: by the chain's inverse kinematics from the two bodies' relative
pose, q* solving J^+(q*) e(q*, T) = 0 by Newton's iteration q <- q + J^+ e from the
last solution (warm start; from zero if that fails), damped where J is near singular
and with a line search on |e|. A pose that neither start brings within 0.1 of the
chain (a trial stage of an explicit step thrown far off) raises
:class:`ChainPoseError`, which a run treats as a non-finite derivative: the step is
rejected and retried shorter, and a run that cannot get past it fails naming the
joint. This keeps G_k and Phi functions
of the bodies' geometry as the kernel contract (:mod:`elements.kernels.geometry`) and the
modulus context (:func:`elements.kernels.blocks.frames_context`: it gathers body states only)
require, so nothing in the assembly, batching or stabilisation changes; the joint's
coordinate states are integrated from the axis flows as any joint's. Because J^+ e = 0
at q*, e = N^+ Phi: Phi = 0 exactly where T = g(q*), and there de/dt = V - J qd*, so
dPhi/dt = N V (the contract's pairing for Baumgarte) and qd* = J^+ V, which gives the
kernels' rates exactly on Phi = 0 (off it, to O(Phi)). Reading the coordinate states
instead would need the modulus context to serve joint states and a Phi of 6 rows.
Where J loses rank (two members' axes become dependent) the rates are unbounded:
:class:`ChainSingularError` names the joint.

:meth:`ChainJoint.link_poses` gives each intermediate (massless) link's placement for
coordinates q.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError, SingularConstraintError
from bondgraph.spatial import axis_angle_matrix, skew

from elements.kernels.blocks import Block
from elements.kernels.geometry import Geometry, Kernel
from elements.joints.blocks import body_terms, kernel_bodies
from elements.joints.contract import AxisMotion, Joint, register_joint
from elements.parts.rigid_body import RigidBody

__all__ = ["ChainAxis", "ChainJoint", "ChainSingularError", "ChainPoseError",
           "MAX_MEMBERS"]

MAX_MEMBERS = 6
"""The most members a chain joint takes (six freedoms)."""
SINGULAR = 1e-9
"""The least ratio of J's smallest to largest singular value at which the chain's rates
are computed (below it, :class:`ChainSingularError`)."""
_CHART_RATIO = 0.05


class ChainSingularError(ModelError):
    """A chain joint whose members' motions have become dependent (its Jacobian lost
    rank): its coordinates' rates are unbounded there."""


class ChainPoseError(SingularConstraintError, ModelError):
    """The bodies' relative pose is no configuration of a chain joint (its inverse
    kinematics finds no coordinates that come near it): a state far off the joint's
    constraint. In a run this is a trial stage an explicit step threw far off (the
    solver rejects the step and tries a shorter one, as for a non-finite derivative:
    ``non_finite``); a run that cannot get past it ends with a failure status whose
    message names the joint."""

    non_finite = True


@dataclass(frozen=True)
class ChainAxis:
    """One member of a :class:`ChainJoint`: ``kind`` ``"revolute"`` or ``"prismatic"``,
    its ``axis`` (3 numbers, parent coordinates at the chain's rest, made unit) and,
    for a revolute, ``offset``: a point on the axis relative to the joint point P
    (parent coordinates, m; ignored for a slide). ``name``: its coordinate's name
    (default ``angle<k>`` or ``slide<k>``, k from 1)."""

    kind: str
    axis: Any
    offset: Any = (0.0, 0.0, 0.0)
    name: str | None = None


def _ad(xi: np.ndarray) -> np.ndarray:
    """ad(xi) (6 x 6): [xi, .] for twists (omega, v)."""
    out = np.zeros((6, 6))
    W = skew(xi[:3])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[3:, :3] = skew(xi[3:])
    return out


def _Ad(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Ad(g) (6 x 6) of g = (R, t): twists (omega, v at the origin) carried by g."""
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = skew(t) @ R
    return out


def _log_rotation(R: np.ndarray) -> np.ndarray:
    """The rotation vector of R (rad, angle in [0, pi])."""
    c = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2.0
    s = np.linalg.norm(w)
    if c > 0.0:                         # angle < pi/2: atan2 of the vee, accurate near 0
        return w * (1.0 if s == 0.0 else np.arctan2(s, c) / s)
    angle = np.arccos(c)                # near pi: the axis from the symmetric part
    B = (R + R.T) / 2.0 - c * np.eye(3)
    k = int(np.argmax(np.diag(B)))
    a = B[:, k] / np.sqrt(max(B[k, k], 1e-300))
    if a @ w < 0.0:
        a = -a
    return a * angle


def _twists(members: Sequence[ChainAxis]) -> list[np.ndarray]:
    """The members' twists at rest (6,) each: (s, p x s) or (0, s)."""
    out = []
    for m in members:
        s, p = np.asarray(m.axis, dtype=float), np.asarray(m.offset, dtype=float)
        out.append(np.concatenate([s, np.cross(p, s)]) if m.kind == "revolute"
                   else np.concatenate([np.zeros(3), s]))
    return out


class _ChainSolver:
    """The chain's kinematics: forward (product of exponentials), its Jacobian and the
    inverse kinematics, and per geometry every block's G (and rates) and Phi,
    memoised (the terms of one evaluation share one solve)."""

    def __init__(self, joint: "ChainJoint"):
        self.joint = joint
        self.kinds = tuple(m.kind for m in joint.members)
        self.axes = [np.asarray(m.axis, dtype=float) for m in joint.members]
        self.points = [np.asarray(m.offset, dtype=float) for m in joint.members]
        self.n = len(self.kinds)
        self.xi = _twists(joint.members)
        self.revolute = np.array([k == "revolute" for k in self.kinds])
        U = np.linalg.svd(np.column_stack(self.xi))[0]
        self.N0 = U[:, self.n:].T.copy()
        self.scale = max(1.0, max(float(np.abs(p).max()) for p in self.points))
        self.last = np.zeros(self.n)
        self._memo: dict[bytes, dict] = {}

    # kinematics --------------------------------------------------------------------
    def member(self, k: int, q: float) -> tuple[np.ndarray, np.ndarray]:
        """exp(xi_k q): (R, t) acting on points x -> R x + t (relative to P)."""
        if self.kinds[k] == "revolute":
            R = axis_angle_matrix(self.axes[k], float(q))
            return R, self.points[k] - R @ self.points[k]
        return np.eye(3), self.axes[k] * float(q)

    def partials(self, q) -> list[tuple[np.ndarray, np.ndarray]]:
        """[g_1 ... g_k for k = 0..n] as (R, t) (the first the identity)."""
        out = [(np.eye(3), np.zeros(3))]
        for k in range(self.n):
            R, t = out[-1]
            Rk, tk = self.member(k, q[k])
            out.append((R @ Rk, R @ tk + t))
        return out

    def jacobian(self, parts) -> np.ndarray:
        """J (6 x n): the members' current twists."""
        return np.column_stack([_Ad(*parts[k]) @ self.xi[k] for k in range(self.n)])

    def error(self, Rrel, d, R, t) -> np.ndarray:
        """e (6,): the pose error of (Rrel, d) against the chain's (R, t)."""
        RE = Rrel @ R.T
        return np.concatenate([_log_rotation(RE), d - RE @ t])

    def pinv(self, J: np.ndarray) -> np.ndarray:
        K = J.T @ J
        ev = np.linalg.eigvalsh(K)
        if ev[0] < (SINGULAR ** 2) * max(1.0, ev[-1]):
            raise ChainSingularError(
                f"chain joint '{self.joint.name}' is singular (its members' motions have "
                f"become dependent, singular values of its Jacobian "
                f"{np.round(np.sqrt(np.maximum(ev, 0.0)), 9).tolist()}): its coordinates' "
                f"rates are undefined there")
        return np.linalg.solve(K, J.T)

    def _newton(self, Rrel, d, q) -> tuple[np.ndarray, bool]:
        """(q, converged): Gauss-Newton on the pose error from ``q`` (q <- q + J^+ e,
        the steps at most 0.5 in any coordinate), damped (Levenberg-Marquardt) where J
        is near singular, each step halved until it lowers |e| (a line search: without
        it, a start far off cycles between two points). Converged when the step is at
        rounding level; a step that cannot lower |e| any more is the end too
        (a least-squares stationary point, the pose a little off the chain)."""
        q = np.array(q, dtype=float)
        tol = 1e-14 * self.scale
        parts = self.partials(q)
        e = self.error(Rrel, d, *parts[-1])
        big = np.inf
        for _ in range(100):
            J = self.jacobian(parts)
            K = J.T @ J
            ev = np.linalg.eigvalsh(K)
            damp = 0.0 if ev[0] >= 1e-6 * max(1.0, ev[-1]) else 1e-6 * max(1.0, ev[-1])
            dq = np.linalg.solve(K + damp * np.eye(self.n), J.T @ e)
            big = float(np.abs(dq).max())
            if not np.isfinite(big):
                return q, False
            if big <= tol * (1.0 + np.abs(q).max()):
                return q + dq, True
            step = dq * min(1.0, 0.5 / big)
            norm = float(np.linalg.norm(e))
            for _half in range(40):
                q_new = q + step
                parts_new = self.partials(q_new)
                e_new = self.error(Rrel, d, *parts_new[-1])
                if np.linalg.norm(e_new) < norm or norm <= tol:
                    break
                step = step / 2.0
            else:       # no step lowers |e|: a stationary point, to rounding
                return q, big <= 1e-9 * self.scale
            q, parts, e = q_new, parts_new, e_new
        return q, big <= 1e-9 * self.scale

    def solve(self, Rrel, d, starts=None) -> np.ndarray:
        """q* with J^+(q*) e(q*) = 0 (Newton from the last solution, then from zero); a
        :class:`ChainPoseError` when neither comes near the pose."""
        tries = [self.last, np.zeros(self.n)] if starts is None else starts
        best = None
        for s in tries:
            q, ok = self._newton(Rrel, d, s)
            if ok:
                res = np.linalg.norm(self.error(Rrel, d, *self.partials(q)[-1]))
                if res < 1e-6 * self.scale and starts is None:
                    self.last = q
                    return q
                if best is None or res < best[0] - 1e-12:
                    best = (res, q)
        if best is None or best[0] > 0.1 * self.scale + 0.1:
            # (a pose error of 0.1 rad or 0.1 of the chain's size and more: not a state
            # near the joint's constraint, whose rates and Phi would mean nothing)
            why = "does not converge" if best is None else \
                f"leaves a pose error of {best[0]:.3g}"
            raise ChainPoseError(f"chain joint '{self.joint.name}': the bodies' relative "
                                 f"pose is no configuration of the chain (its inverse "
                                 f"kinematics {why})")
        if starts is None:
            self.last = best[1]
        return best[1]

    def chart(self, q, parts, J, Jp):
        """(N_c, its rate factor): N_c (6 - n, 6) and a function qd -> dN_c/dt."""
        Rg, tg = parts[1]
        Ainv = _Ad(Rg.T, -Rg.T @ tg)
        Nc = self.N0 @ Ainv
        M = Nc - (Nc @ J) @ Jp
        s_m = np.linalg.svd(M, compute_uv=False)
        s_c = np.linalg.svd(Nc, compute_uv=False)
        if s_m.min() >= _CHART_RATIO * s_c.min():
            xi0 = self.xi[0]
            return Nc, lambda qd: -Nc @ _ad(xi0 * qd[0])
        grid = np.where(self.revolute, np.pi / 4, 0.25)
        qbar = np.round(q / grid) * grid
        Jbar = self.jacobian(self.partials(qbar))
        U = np.linalg.svd(Jbar)[0]
        Nb = U[:, self.n:].T
        return Nb, lambda qd: np.zeros_like(Nb)

    # one geometry ------------------------------------------------------------------
    def at(self, geo: Geometry, a, b, rate: bool) -> dict:
        """Phi, the constraint's G and the axes' G for the bodies a, b (and the rates)."""
        ia = geo.index[a] if a else 0
        ib = geo.index[b]
        parts_key = [geo.A[ia], geo.r[ia], geo.A[ib], geo.r[ib]]
        if rate:
            parts_key += [geo.w[ia], geo.v[ia], geo.w[ib], geo.v[ib]]
        key = np.concatenate([np.ravel(x) for x in parts_key]).tobytes() + bytes([rate])
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._compute(geo.A[ia], geo.r[ia], geo.A[ib], geo.r[ib],
                            (geo.w[ia], geo.v[ia], geo.w[ib], geo.v[ib]) if rate else None)
        if len(self._memo) > 8:
            self._memo.clear()
        self._memo[key] = out
        return out

    def _compute(self, Aa, ra, Ab, rb, rates) -> dict:
        j, n = self.joint, self.n
        C = Aa.T @ Ab
        Rrel = C @ j.R0.T
        x = rb + Ab @ j.Q - ra
        d = Aa.T @ x - j.P
        q = self.solve(Rrel, d)
        parts = self.partials(q)
        J = self.jacobian(parts)
        Jp = self.pinv(J)
        Proj = np.eye(6) - J @ Jp
        Nc, Nc_rate = self.chart(q, parts, J, Jp)
        N = Nc @ Proj
        e = self.error(Rrel, d, *parts[-1])
        Z, E = np.zeros((3, 3)), np.eye(3)
        B = {"av": np.vstack([Z, -Aa.T]), "aw": np.vstack([-E, skew(j.P)]),
             "bv": np.vstack([Z, Aa.T]), "bw": np.vstack([C, skew(d) @ C - C @ skew(j.Q)])}
        out = {"phi": N @ e, "q": q}
        for k, Bk in B.items():
            out[("c", k)] = N @ Bk
            out[("x", k)] = Jp @ Bk
        if rates is None:
            return out
        wa, va, wb, vb = rates
        f = {"av": va, "aw": wa, "bv": vb, "bw": wb}
        V = sum(B[k] @ f[k] for k in B)
        qd = Jp @ V
        # dJ/dt: column k is [sum_(i<k) xi'_i qd_i, xi'_k]
        Jd = np.zeros_like(J)
        acc = np.zeros(6)
        for k in range(n):
            Jd[:, k] = _ad(acc) @ J[:, k]
            acc = acc + J[:, k] * qd[k]
        K_inv = np.linalg.inv(J.T @ J)
        Jp_d = -Jp @ Jd @ Jp + K_inv @ Jd.T @ Proj
        Proj_d = -(Jd @ Jp + J @ Jp_d)
        N_d = Nc_rate(qd) @ Proj + Nc @ Proj_d
        Aad, Abd = Aa @ skew(wa), Ab @ skew(wb)
        Cd = Aad.T @ Ab + Aa.T @ Abd
        dd = Aad.T @ x + Aa.T @ (vb + Abd @ j.Q - va)
        Bd = {"av": np.vstack([Z, -Aad.T]), "aw": np.zeros((6, 3)),
              "bv": np.vstack([Z, Aad.T]),
              "bw": np.vstack([Cd, skew(dd) @ C + skew(d) @ Cd - Cd @ skew(j.Q)])}
        for k in B:
            out[("c", k)] = N_d @ B[k] + N @ Bd[k]
            out[("x", k)] = Jp_d @ B[k] + Jp @ Bd[k]
        return out


class ChainTerm(Kernel):
    """One output of a chain joint's solver: its Phi (``part`` None), or the G of the
    body junction ``part`` (``"av"``, ``"aw"``, ``"bv"``, ``"bw"``) in the constraint
    block (``row`` None) or in coordinate ``row``'s axis block. Evaluated one instance
    at a time (no compiled form)."""

    def __init__(self, solver: _ChainSolver, a: str | None, b: str, part: str | None,
                 row: int | None):
        self.solver = solver
        self.bodies = (a, b)
        self.part, self.row = part, row
        self.params = ()
        n = solver.n
        self.shape = (6 - n,) if part is None else ((6 - n, 3) if row is None else (1, 3))

    @classmethod
    def stack(cls, kernels, index):
        def run(geo: Geometry, rate: bool) -> np.ndarray:
            return np.array([k._one(geo, rate) for k in kernels])
        return run

    def _one(self, geo: Geometry, rate: bool) -> np.ndarray:
        if self.part is None:
            if rate:
                raise ModelError("a chain joint's Phi has no rate kernel")
            return self.solver.at(geo, *self.bodies, False)["phi"]
        out = self.solver.at(geo, *self.bodies, rate)
        if self.row is None:
            return out[("c", self.part)]
        return out[("x", self.part)][self.row:self.row + 1]


@register_joint
class ChainJoint(Joint):
    """A serial chain of n <= 6 revolutes and slides through massless links, as one
    joint (see the module docstring): 6 - n constraints, one coordinate per member.

    Parameters
    ----------
    name, parent, child, parent_point, child_point, rest_rotation, spring, damper,
    actuator, rotor
        As :class:`~elements.joints.contract.Joint`. P (``parent_point``) and Q
        (``child_point``) coincide at rest (every coordinate 0).
    members : sequence of ChainAxis (or tuples (kind, axis[, offset[, name]]))
        The members in order, each moving the next: axes in parent coordinates at
        rest, a revolute's ``offset`` a point on its axis relative to P (m).

    The child's rotation from its rest and Q's displacement from P at coordinates q
    are the product of the members' motions, member 1 outermost (:meth:`link_poses`).
    Singular where the members' motions become dependent (:class:`ChainSingularError`).
    """

    type_name = "chain"
    needs_axis = False
    options = {}
    in_files = False                 # (its members: built in Python)

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 members: Sequence[Any] = (), **kwargs: Any):
        if kwargs.get("axis") is not None:
            raise ModelError(f"chain joint '{name}' has no axis of its own: give each "
                             f"member's axis in members")
        self.members = self.check_members(name, members)
        names = [m.name or f"{'angle' if m.kind == 'revolute' else 'slide'}{k + 1}"
                 for k, m in enumerate(self.members)]
        if len(set(names)) != len(names):
            raise ModelError(f"chain joint '{name}': coordinate names repeat: {names}")
        self.coordinates = tuple((c, "rad" if m.kind == "revolute" else "m")
                                 for c, m in zip(names, self.members))
        self.n_free = len(self.coordinates)
        self.coordinate_unit = self.coordinates[0][1] if self.n_free == 1 else None
        super().__init__(name, parent, child, **kwargs)
        self._solver = _ChainSolver(self)

    @staticmethod
    def check_members(name: str, members: Sequence[Any]) -> tuple[ChainAxis, ...]:
        """``members`` checked (1 to 6, each a ChainAxis or a tuple (kind, axis[, offset[,
        name]]), finite, axes non-zero; their motions independent at rest) and
        normalised (unit axes, each revolute's offset the point on its axis nearest P);
        a ModelError naming the chain joint ``name`` and what would be valid otherwise."""
        out = ChainJoint._members(name, members)
        sv = np.linalg.svd(np.column_stack(_twists(out)), compute_uv=False)
        if sv.min() < SINGULAR * max(1.0, sv.max()):
            raise ModelError(
                f"chain joint '{name}': its members' motions are dependent at rest "
                f"(singular values of the chain's Jacobian {np.round(sv, 9).tolist()}): "
                f"e.g. coaxial revolutes or parallel slides; give members whose axes "
                f"move the child in independent directions")
        return out

    @staticmethod
    def _members(name: str, members: Sequence[Any]) -> tuple[ChainAxis, ...]:
        try:
            items = list(members)
        except TypeError:
            items = None
        if not items or len(items) > MAX_MEMBERS:
            raise ModelError(f"chain joint '{name}': members must be 1 to {MAX_MEMBERS} "
                             f"ChainAxis (kind 'revolute' or 'prismatic', axis, offset), "
                             f"got {members!r}")
        out = []
        for k, m in enumerate(items):
            if not isinstance(m, ChainAxis):
                try:
                    m = ChainAxis(*m)
                except TypeError:
                    raise ModelError(f"chain joint '{name}': member {k + 1} must be a "
                                     f"ChainAxis or (kind, axis[, offset[, name]]), got "
                                     f"{m!r}") from None
            if m.kind not in ("revolute", "prismatic"):
                raise ModelError(f"chain joint '{name}': member {k + 1} kind {m.kind!r}; "
                                 f"valid: 'revolute', 'prismatic'")
            try:
                ax = np.array(m.axis, dtype=float).reshape(3)
                off = np.array(m.offset, dtype=float).reshape(3)
            except (TypeError, ValueError):
                raise ModelError(f"chain joint '{name}': member {k + 1} needs an axis and "
                                 f"an offset of 3 numbers each (parent coordinates), got "
                                 f"{m.axis!r}, {m.offset!r}") from None
            if not (np.all(np.isfinite(ax)) and np.all(np.isfinite(off))) or \
                    not np.linalg.norm(ax) > 0:
                raise ModelError(f"chain joint '{name}': member {k + 1}: axis must be "
                                 f"finite and non-zero, offset finite; got {m.axis!r}, "
                                 f"{m.offset!r}")
            ax = ax / np.linalg.norm(ax)
            if m.kind == "revolute":       # the point on the axis nearest P
                off = off - ax * (off @ ax)
            else:
                off = np.zeros(3)
            out.append(ChainAxis(m.kind, ax, off, m.name))
        return tuple(out)

    # kinematics --------------------------------------------------------------------
    def link_poses(self, q: Any) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each link's placement at coordinates ``q`` (n numbers): a list of n pairs
        (R_k, t_k), k = 1..n, the link after member k (the last: the child's motion
        from its rest), as the map x -> R_k x + t_k of a point of that link given in
        parent-body coordinates (from the parent's centre, m) at the chain's rest to
        its place in parent-body coordinates at q."""
        q = np.asarray(q, dtype=float).reshape(self.n_free)
        out = []
        for R, t in self._solver.partials(q)[1:]:
            out.append((R, self.P + t - R @ self.P))
        return out

    def _pose(self, q) -> tuple[np.ndarray, np.ndarray]:
        R, t = self._solver.partials(np.asarray(q, dtype=float).reshape(self.n_free))[-1]
        return R, t

    # the contract ------------------------------------------------------------------
    def axis_motions(self):
        """The members as axis motions (the chain's frame is the parent's axes)."""
        return tuple(AxisMotion.rotation(m.axis, m.offset) if m.kind == "revolute"
                     else AxisMotion.translation(m.axis) for m in self.members)

    def _terms(self, row):
        a, b = kernel_bodies(self)
        s = self._solver
        return body_terms(self, [
            (self.parent, "v", ChainTerm(s, a, b, "av", row), None),
            (self.parent, "w", ChainTerm(s, a, b, "aw", row), None),
            (self.child, "v", ChainTerm(s, a, b, "bv", row), None),
            (self.child, "w", ChainTerm(s, a, b, "bw", row), None),
        ])

    def constraint_blocks(self) -> list[Block]:
        if self.n_free == 6:
            return []
        a, b = kernel_bodies(self)
        return [Block(f"{self.name}.c", 6 - self.n_free, self._terms(None), self._bodies(),
                      ChainTerm(self._solver, a, b, None, None), True, f"{self.name}.c")]

    def axis_blocks(self) -> list[Block]:
        return [Block(ax.block_name, 1, self._terms(k), self._bodies())
                for k, ax in enumerate(self.axes)]

    def child_pose(self, A_a, r_a, q):
        R, t = self._pose(self.zero() if q is None else q)
        return self._place(A_a, r_a, R, t)

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        s = self._solver
        q = s.solve(Rrel, d)
        J = s.jacobian(s.partials(q))
        V = J @ np.asarray(self.zero() if qd is None else qd, dtype=float).reshape(-1)
        w_rel = V[:3]
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, w_rel, V[3:] + np.cross(w_rel, d))

    def coordinate(self, A_a, r_a, A_b, r_b):
        """The coordinates (n,) from the poses, by the inverse kinematics from zero and
        from the last solution, the least (angles as principal values) of those that
        reach the pose."""
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        s = self._solver
        cands = []
        for start in (np.zeros(self.n_free), s.last):
            q, ok = s._newton(Rrel, d, start)
            if ok and np.linalg.norm(s.error(Rrel, d, *s.partials(q)[-1])) < 1e-9 * s.scale:
                q = np.where(s.revolute, (q + np.pi) % (2 * np.pi) - np.pi, q)
                cands.append(q)
        if not cands:
            raise ModelError(f"chain joint '{self.name}': the bodies' relative pose is no "
                             f"configuration of the chain")
        q = min(cands, key=lambda v: float(np.linalg.norm(v)))
        return float(q[0]) if self.n_free == 1 else q
