"""Pinocchio's joint-space quantities (ABA, RNEA, CRBA) in :class:`FastDynamics`'
coordinates, for the same URDF (tests/unit/test_fast_dynamics.py and
benchmarks/dynamics_api.py).

Pinocchio's free flyer: q = (origin of the root link frame, global; quaternion x, y, z,
w), v = (the origin's velocity, angular velocity), both in the root frame, and its
acceleration the derivative of those components. Ours: the centre of mass c (global),
quaternion (w, x, y, z), v = (the centre's velocity, global; angular velocity, body
axes = root frame axes). With c_l the centre in the root frame and A the rotation:
v_ours = T v_pin, T = [[A, -A [c_l]x], [0, I]] (joints: identity), so
M_ours = T^-T M_pin T^-1, tau_ours = T^-T tau_pin and
a_ours = T a_pin + (A (w x (v_o + w x c_l)), 0). ABA has no joint damping: the
damper's effort is taken off tau (the caller adds c qd).
"""

from __future__ import annotations

import numpy as np

from bondgraph.spatial import skew


class PinocchioJointSpace:
    """Pinocchio's model of a URDF side by side with a FastDynamics of ours."""

    def __init__(self, pin, path: str, fd, mech, floating: bool):
        self.pin = pin
        self.model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
        self.data = self.model.createData()
        self.fd = fd
        self.floating = floating
        report = mech.import_report
        model = self.model
        self.idx_v, self.idx_q = [], []
        for n in fd.velocity_names[6 if floating else 0:]:
            jm = model.joints[model.getJointId(n)]
            assert jm.nq == 1, f"{n}: a joint with (cos, sin) coordinates"
            self.idx_v.append(jm.idx_v)
            self.idx_q.append(jm.idx_q)
        if floating:
            base = fd.body_names[0]
            self.c_l = -mech.bodies[base].points[report.merged[base][0]]
        self.nv = model.nv

    def random(self, rng):
        """A random state in both coordinates: (ours q, qd, tau), (Pinocchio's q, v, tau,
        T)."""
        n = len(self.idx_v)
        off = 6 if self.floating else 0
        ang = rng.uniform(-1.2, 1.2, n)
        rate = rng.normal(size=n)
        eff = rng.normal(size=n)
        qp, vp, tp = np.zeros(self.model.nq), np.zeros(self.nv), np.zeros(self.nv)
        qp[self.idx_q], vp[self.idx_v], tp[self.idx_v] = ang, rate, eff
        q = np.concatenate([np.zeros(7 if self.floating else 0), ang])
        qd = np.concatenate([np.zeros(off), rate])
        tau = np.concatenate([np.zeros(off), eff])
        T = np.eye(self.nv)
        if self.floating:
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)            # (w, x, y, z)
            pos = rng.normal(size=3)
            qp[0:3], qp[3:7] = pos, [*quat[1:], quat[0]]
            vp[0:6] = rng.normal(size=6)
            A = self.pin.Quaternion(quat[0], *quat[1:]).toRotationMatrix()
            T[0:3, 0:3] = A
            T[0:3, 3:6] = -A @ skew(self.c_l)
            q[0:3], q[3:7] = pos + A @ self.c_l, quat
            qd[0:6] = T[0:6, 0:6] @ vp[0:6]
        return (q, qd, tau), (qp, vp, tp, T)

    def _perm(self):
        off = 6 if self.floating else 0
        return list(range(off)) + self.idx_v

    def aba(self, qp, vp, tp, T, damping):
        """Pinocchio's accelerations in our coordinates (tau ours = T^-T tau_pin: tp
        holds ours for the joints, zero on the base, as T^-T keeps zeros there)."""
        tp = tp.copy()
        tp[self.idx_v] -= damping * vp[self.idx_v]
        a = self.pin.aba(self.model, self.data, qp, vp, tp)
        return self._acc(a, vp, T)

    def _acc(self, a, vp, T):
        out = (T @ a)[self._perm()]
        if self.floating:
            vo, w = vp[0:3], vp[3:6]
            out[0:3] += T[0:3, 0:3] @ np.cross(w, vo + np.cross(w, self.c_l))
        return out

    def _acc_pin(self, a_ours, vp, T):
        """The inverse of :meth:`_acc`."""
        a = np.zeros(self.nv)
        a[self._perm()] = a_ours
        if self.floating:
            vo, w = vp[0:3], vp[3:6]
            a[0:3] -= T[0:3, 0:3] @ np.cross(w, vo + np.cross(w, self.c_l))
        return np.linalg.solve(T, a)

    def rnea(self, qp, vp, a_ours, T, damping):
        """Pinocchio's efforts for our accelerations, in our coordinates (with the
        dampers' c qd added)."""
        tau = self.pin.rnea(self.model, self.data, qp, vp, self._acc_pin(a_ours, vp, T))
        tau = np.linalg.solve(T.T, tau)[self._perm()]
        tau[6 if self.floating else 0:] += damping * vp[self.idx_v]
        return tau

    def crba(self, qp, T):
        """Pinocchio's mass matrix in our coordinates."""
        M = self.pin.crba(self.model, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        Ti = np.linalg.inv(T)
        return (Ti.T @ M @ Ti)[np.ix_(self._perm(), self._perm())]
