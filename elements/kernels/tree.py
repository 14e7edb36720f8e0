"""Compiled recursions over a tree of revolute, prismatic, fixed and ball joints with free
bodies as roots, in joint coordinates (arrays and numbers only): forward kinematics, the
recursive Newton-Euler algorithm, the joint-space mass matrix and direct dynamics, each
for one state or a batch of states in one call (used by :mod:`elements.analysis.fast_dynamics`).

Every quantity is global and referred to the bodies' centres of mass, as the bond graph
model's states are: a body's twist is (omega, v_c), its wrench (torque about the
centre, force). Body ``b`` (tree order: a parent before its children) has a joint of
``kind[b]``: 0 revolute, 1 prismatic, 2 fixed, 3 a free root (q: centre position,
global, m, and a unit quaternion (w, x, y, z) body -> global; v: the centre's velocity,
global, m/s, and the angular velocity in body axes, rad/s), 4 a ball (a free rotation
about the joint point; q: a unit quaternion (w, x, y, z) of the rotation Rrel in
A_b = A_p Rrel R0; v: the angular velocity relative to the parent in the child's body
axes, rad/s; its motion subspace the three revolutes about A_b e_k through o). The joint's motion
subspace at the child's centre is (s, s x (c_b - o)) for a revolute joint of global
axis s through the point o, (0, s) for a prismatic one.

Without numba the same functions run as Python (correct, slow).
"""

from __future__ import annotations

import numpy as np

from bondgraph import spatial

try:
    from bondgraph._jit import njit
except ImportError:                         # pragma: no cover - numba is a dependency
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

REVOLUTE, PRISMATIC, FIXED, FREE, BALL = 0, 1, 2, 3, 4

_matrix_entries = njit(cache=True, inline="always")(spatial.quat_matrix_entries)


@njit(cache=True)
def _finite(a):
    for r in range(a.size):
        if not np.isfinite(a[r]):
            return False
    return True


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def forward_kinematics(q, qd, kind, parent, qi, vi, axis, P, Q, R0, A, c, w, v, s, o):
    """Poses (A (nb, 3, 3) body -> global, c (nb, 3) centres, m) and twists (w, v:
    global, rad/s and m/s) of every body, with each joint's global axis ``s`` and
    joint point ``o`` (m), written into the given arrays."""
    nb = kind.size
    Rrel = np.empty((3, 3))
    Ap = np.empty((3, 3))
    t1 = np.empty(3)
    t2 = np.empty(3)
    t3 = np.empty(3)
    for b in range(nb):
        k = kind[b]
        p = parent[b]
        if k == FREE:
            j = qi[b]
            qw, qx, qy, qz = q[j + 3], q[j + 4], q[j + 5], q[j + 6]
            nrm = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
            qw, qx, qy, qz = qw / nrm, qx / nrm, qy / nrm, qz / nrm
            A[b, 0, 0] = 1 - 2 * (qy * qy + qz * qz)
            A[b, 0, 1] = 2 * (qx * qy - qw * qz)
            A[b, 0, 2] = 2 * (qx * qz + qw * qy)
            A[b, 1, 0] = 2 * (qx * qy + qw * qz)
            A[b, 1, 1] = 1 - 2 * (qx * qx + qz * qz)
            A[b, 1, 2] = 2 * (qy * qz - qw * qx)
            A[b, 2, 0] = 2 * (qx * qz - qw * qy)
            A[b, 2, 1] = 2 * (qy * qz + qw * qx)
            A[b, 2, 2] = 1 - 2 * (qx * qx + qy * qy)
            jv = vi[b]
            for r in range(3):
                c[b, r] = q[j + r]
                v[b, r] = qd[jv + r]
                w[b, r] = A[b, r, 0] * qd[jv + 3] + A[b, r, 1] * qd[jv + 4] + \
                    A[b, r, 2] * qd[jv + 5]
                s[b, r] = 0.0
                o[b, r] = c[b, r]
            continue
        # the parent's pose and twist (the ground: identity, at rest)
        for r in range(3):
            for cc in range(3):
                Ap[r, cc] = A[p, r, cc] if p >= 0 else (1.0 if r == cc else 0.0)
        # Rrel: the turn about the axis (parent coordinates), by Rodrigues' formula
        ax = axis[b]
        if k == BALL:
            j = qi[b]
            _quat_matrix(q[j], q[j + 1], q[j + 2], q[j + 3], Rrel)
        else:
            ang = q[qi[b]] if k == REVOLUTE else 0.0
            sn, cs = np.sin(ang), np.cos(ang)
            for r in range(3):
                for cc in range(3):
                    Rrel[r, cc] = (cs if r == cc else 0.0) + (1.0 - cs) * ax[r] * ax[cc]
            Rrel[0, 1] -= sn * ax[2]
            Rrel[1, 0] += sn * ax[2]
            Rrel[0, 2] += sn * ax[1]
            Rrel[2, 0] -= sn * ax[1]
            Rrel[1, 2] -= sn * ax[0]
            Rrel[2, 1] += sn * ax[0]
        # A_b = A_p Rrel R0; o = c_p + A_p (P + d), d the slide; c_b = o - A_b Q
        for r in range(3):
            for cc in range(3):
                acc = 0.0
                for m in range(3):
                    t = 0.0
                    for n in range(3):
                        t += Rrel[m, n] * R0[b, n, cc]
                    acc += Ap[r, m] * t
                A[b, r, cc] = acc
        slide = q[qi[b]] if k == PRISMATIC else 0.0
        for r in range(3):
            acc = 0.0
            sa = 0.0
            for m in range(3):
                acc += Ap[r, m] * (P[b, m] + slide * ax[m])
                sa += Ap[r, m] * ax[m]
            s[b, r] = sa
            o[b, r] = (c[p, r] if p >= 0 else 0.0) + acc
        for r in range(3):
            c[b, r] = o[b, r] - (A[b, r, 0] * Q[b, 0] + A[b, r, 1] * Q[b, 1] +
                                 A[b, r, 2] * Q[b, 2])
        # twist: w_b = w_p (+ s qd); v_b = v_p + w_p x (c_b - c_p) (+ the joint's part)
        for r in range(3):
            t1[r] = c[b, r] - (c[p, r] if p >= 0 else 0.0)
        if p >= 0:
            _cross(w[p], t1, t2)
        else:
            t2[:] = 0.0
        rate = qd[vi[b]] if k != FIXED else 0.0
        for r in range(3):
            w[b, r] = (w[p, r] if p >= 0 else 0.0)
            v[b, r] = (v[p, r] if p >= 0 else 0.0) + t2[r]
        if k == REVOLUTE:
            for r in range(3):
                w[b, r] += s[b, r] * rate
                t1[r] = c[b, r] - o[b, r]
            _cross(s[b], t1, t2)
            for r in range(3):
                v[b, r] += t2[r] * rate
        elif k == PRISMATIC:
            for r in range(3):
                v[b, r] += s[b, r] * rate
        elif k == BALL:                 # Om = A_b u: w_b += Om, v_b += Om x (c_b - o)
            jv = vi[b]
            for r in range(3):
                t2[r] = A[b, r, 0] * qd[jv] + A[b, r, 1] * qd[jv + 1] + A[b, r, 2] * qd[jv + 2]
                w[b, r] += t2[r]
                t1[r] = c[b, r] - o[b, r]
            _cross(t2, t1, t3)
            for r in range(3):
                v[b, r] += t3[r]


@njit(cache=True)
def _quat_matrix(qw, qx, qy, qz, R):
    """The rotation matrix of the quaternion (qw, qx, qy, qz), normalised, into R
    (:func:`bondgraph.spatial.quat_matrix_entries`, the one definition)."""
    n = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    e = _matrix_entries(qw / n, qx / n, qy / n, qz / n)
    for k in range(9):
        R[k // 3, k % 3] = e[k]


@njit(cache=True)
def rnea(q, qd, qdd, kind, parent, qi, vi, A, c, w, v, s, o, mass, Ib, gravity,
         armature, stiffness, rest, damping, with_velocity, F, N, al, ac, tau):
    """Joint efforts ``tau`` (nv,) for accelerations ``qdd`` at the poses and twists of
    :func:`forward_kinematics` (recursive Newton-Euler, global, about the centres):
    M qdd + bias, bias with the rotors' (armature) J qdd, the axis springs'
    k (q - rest) and dampers' c qd. With ``with_velocity`` False the twists, gravity,
    springs and dampers are left out (M qdd alone: the mass matrix's columns).
    F, N, al, ac: (nb, 3) work arrays."""
    nb = kind.size
    t1 = np.empty(3)
    t2 = np.empty(3)
    t3 = np.empty(3)
    wp = np.zeros(3)
    vp = np.zeros(3)
    alp = np.zeros(3)
    ap = np.zeros(3)
    cp = np.zeros(3)
    wb = np.empty(3)
    vb = np.empty(3)
    Iw = np.empty(3)
    Om = np.empty(3)
    Od = np.empty(3)
    for b in range(nb):
        k = kind[b]
        p = parent[b]
        j = vi[b]
        for r in range(3):
            wb[r] = w[b, r] if with_velocity else 0.0
            vb[r] = v[b, r] if with_velocity else 0.0
        if k == FREE:
            for r in range(3):
                ac[b, r] = qdd[j + r]
                al[b, r] = A[b, r, 0] * qdd[j + 3] + A[b, r, 1] * qdd[j + 4] + \
                    A[b, r, 2] * qdd[j + 5]
        else:
            for r in range(3):
                if p >= 0:
                    wp[r] = w[p, r] if with_velocity else 0.0
                    vp[r] = v[p, r] if with_velocity else 0.0
                    alp[r] = al[p, r]
                    ap[r] = ac[p, r]
                    cp[r] = c[p, r]
                else:
                    wp[r] = vp[r] = alp[r] = ap[r] = cp[r] = 0.0
            # the parent's part: a_p + al_p x (c_b - c_p) + w_p x (v_b - v_p)
            for r in range(3):
                t1[r] = c[b, r] - cp[r]
                t3[r] = vb[r] - vp[r]
            _cross(alp, t1, t2)
            for r in range(3):
                al[b, r] = alp[r]
                ac[b, r] = ap[r] + t2[r]
            _cross(wp, t3, t2)
            for r in range(3):
                ac[b, r] += t2[r]
            if k == REVOLUTE:
                rate, acc = qd[j], qdd[j]
                if not with_velocity:
                    rate = 0.0
                _cross(wp, s[b], t3)                      # ds/dt = w_p x s
                for r in range(3):
                    al[b, r] += s[b, r] * acc + t3[r] * rate
                    t1[r] = c[b, r] - o[b, r]
                _cross(s[b], t1, t2)                      # s x (c_b - o)
                for r in range(3):
                    ac[b, r] += t2[r] * acc
                _cross(t3, t1, t2)                        # (w_p x s) x (c_b - o)
                for r in range(3):
                    ac[b, r] += t2[r] * rate
                # s x (v_b - v_o), v_o = v_p + w_p x (o - c_p)
                for r in range(3):
                    t1[r] = o[b, r] - cp[r]
                _cross(wp, t1, t2)
                for r in range(3):
                    t1[r] = vb[r] - vp[r] - t2[r]
                _cross(s[b], t1, t2)
                for r in range(3):
                    ac[b, r] += t2[r] * rate
            elif k == PRISMATIC:
                rate, acc = qd[j], qdd[j]
                if not with_velocity:
                    rate = 0.0
                _cross(wp, s[b], t3)
                for r in range(3):
                    ac[b, r] += s[b, r] * acc + t3[r] * rate
            elif k == BALL:
                # Om = A_b u (relative, global); its rate A_b u' + w_p x Om
                for r in range(3):
                    Om[r] = (A[b, r, 0] * qd[j] + A[b, r, 1] * qd[j + 1] +
                             A[b, r, 2] * qd[j + 2]) if with_velocity else 0.0
                    Od[r] = A[b, r, 0] * qdd[j] + A[b, r, 1] * qdd[j + 1] + \
                        A[b, r, 2] * qdd[j + 2]
                _cross(wp, Om, t3)
                for r in range(3):
                    Od[r] += t3[r]
                    al[b, r] += Od[r]
                    t1[r] = c[b, r] - o[b, r]
                _cross(Od, t1, t2)                        # Om' x (c_b - o)
                for r in range(3):
                    ac[b, r] += t2[r]
                # Om x (v_b - v_o), v_o = v_p + w_p x (o - c_p)
                for r in range(3):
                    t1[r] = o[b, r] - cp[r]
                _cross(wp, t1, t2)
                for r in range(3):
                    t1[r] = vb[r] - vp[r] - t2[r]
                _cross(Om, t1, t2)
                for r in range(3):
                    ac[b, r] += t2[r]
        # the body's own wrench: F = m (a - g), N = I al + w x I w (I global)
        for r in range(3):
            F[b, r] = mass[b] * (ac[b, r] - (gravity[r] if with_velocity else 0.0))
        # I x = A Ib A^T x
        for r in range(3):
            t1[r] = A[b, 0, r] * al[b, 0] + A[b, 1, r] * al[b, 1] + A[b, 2, r] * al[b, 2]
            t3[r] = A[b, 0, r] * wb[0] + A[b, 1, r] * wb[1] + A[b, 2, r] * wb[2]
        for r in range(3):
            t2[r] = Ib[b, r, 0] * t1[0] + Ib[b, r, 1] * t1[1] + Ib[b, r, 2] * t1[2]
            Iw[r] = Ib[b, r, 0] * t3[0] + Ib[b, r, 1] * t3[1] + Ib[b, r, 2] * t3[2]
        for r in range(3):
            N[b, r] = A[b, r, 0] * t2[0] + A[b, r, 1] * t2[1] + A[b, r, 2] * t2[2]
            t1[r] = A[b, r, 0] * Iw[0] + A[b, r, 1] * Iw[1] + A[b, r, 2] * Iw[2]
        _cross(wb, t1, t2)
        for r in range(3):
            N[b, r] += t2[r]
    # backward: project each subtree's wrench, then carry it to the parent's centre
    for b in range(nb - 1, -1, -1):
        k = kind[b]
        j = vi[b]
        if k == FREE:
            for r in range(3):
                tau[j + r] = F[b, r]
                tau[j + 3 + r] = A[b, 0, r] * N[b, 0] + A[b, 1, r] * N[b, 1] + \
                    A[b, 2, r] * N[b, 2]
        elif k == REVOLUTE:
            for r in range(3):
                t1[r] = c[b, r] - o[b, r]
            _cross(s[b], t1, t2)
            tau[j] = (s[b, 0] * N[b, 0] + s[b, 1] * N[b, 1] + s[b, 2] * N[b, 2] +
                      t2[0] * F[b, 0] + t2[1] * F[b, 1] + t2[2] * F[b, 2])
        elif k == PRISMATIC:
            tau[j] = s[b, 0] * F[b, 0] + s[b, 1] * F[b, 1] + s[b, 2] * F[b, 2]
        elif k == BALL:             # the three revolutes about A_b e_k through o
            for r in range(3):
                t1[r] = c[b, r] - o[b, r]
            for e in range(3):
                for r in range(3):
                    t3[r] = A[b, r, e]
                _cross(t3, t1, t2)
                tau[j + e] = (t3[0] * N[b, 0] + t3[1] * N[b, 1] + t3[2] * N[b, 2] +
                              t2[0] * F[b, 0] + t2[1] * F[b, 1] + t2[2] * F[b, 2])
        p = parent[b]
        if p >= 0:
            for r in range(3):
                t1[r] = c[b, r] - c[p, r]
            _cross(t1, F[b], t2)
            for r in range(3):
                F[p, r] += F[b, r]
                N[p, r] += N[b, r] + t2[r]
    # the axes' own elements: rotors (armature), springs, dampers
    for b in range(nb):
        k = kind[b]
        if k == REVOLUTE or k == PRISMATIC:
            j = vi[b]
            tau[j] += armature[j] * qdd[j]
            if with_velocity:
                tau[j] += stiffness[j] * (q[qi[b]] - rest[j]) + damping[j] * qd[j]


@njit(cache=True)
def mass_matrix(kind, parent, vi, A, c, s, o, mass, Ib, armature, Ic, S, M):
    """The joint-space mass matrix M (nv, nv) by the composite-rigid-body algorithm,
    with the rotors' inertias (armature) on its diagonal.

    Spatial quantities in global axes about a reference point per tree (its free root's
    centre, or the origin for a tree on the ground), (angular, linear) order: a body's
    inertia [[J - m C C, m C], [-m C, m E]] (J = A Ib A^T, C the skew matrix of its
    centre), summed over each subtree into Ic (nb, 6, 6; work); each coordinate's motion
    column S (nv, 6; work): (s, o x s) revolute, (0, s) prismatic, for a free body
    (0, e_k) and (A e_k, c x A e_k). M[i, j] = S_j . Ic_b S_i for coordinate i of body
    b and j of b or an ancestor of b: symmetric by construction."""
    nb = kind.size
    nv = M.shape[0]
    ref = np.zeros((nb, 3))
    for b in range(nb):
        p = parent[b]
        if p >= 0:
            for r in range(3):
                ref[b, r] = ref[p, r]
        elif kind[b] == FREE:
            for r in range(3):
                ref[b, r] = c[b, r]
    J = np.empty((3, 3))
    C = np.empty((3, 3))
    x = np.empty(3)
    t = np.empty(3)
    for b in range(nb):
        for r in range(3):
            x[r] = c[b, r] - ref[b, r]
        for r in range(3):
            for k in range(3):
                acc = 0.0
                for m in range(3):
                    acc += A[b, r, m] * (Ib[b, m, 0] * A[b, k, 0] + Ib[b, m, 1] * A[b, k, 1]
                                         + Ib[b, m, 2] * A[b, k, 2])
                J[r, k] = acc
        C[0, 0] = C[1, 1] = C[2, 2] = 0.0
        C[0, 1], C[0, 2], C[1, 2] = -x[2], x[1], -x[0]
        C[1, 0], C[2, 0], C[2, 1] = x[2], -x[1], x[0]
        m = mass[b]
        for r in range(3):
            for k in range(3):
                cc = 0.0
                for n in range(3):
                    cc += C[r, n] * C[n, k]
                Ic[b, r, k] = J[r, k] - m * cc
                Ic[b, r, 3 + k] = m * C[r, k]
                Ic[b, 3 + r, k] = -m * C[r, k]
                Ic[b, 3 + r, 3 + k] = m if r == k else 0.0
    for b in range(nb - 1, 0, -1):
        p = parent[b]
        if p >= 0:
            for r in range(6):
                for k in range(6):
                    Ic[p, r, k] += Ic[b, r, k]
    # the motion columns
    for b in range(nb):
        k = kind[b]
        j = vi[b]
        if k == REVOLUTE:
            for r in range(3):
                x[r] = o[b, r] - ref[b, r]
            _cross(x, s[b], t)
            for r in range(3):
                S[j, r] = s[b, r]
                S[j, 3 + r] = t[r]
        elif k == PRISMATIC:
            for r in range(3):
                S[j, r] = 0.0
                S[j, 3 + r] = s[b, r]
        elif k == BALL:
            for r in range(3):
                x[r] = o[b, r] - ref[b, r]
            for e in range(3):
                for r in range(3):
                    t[r] = A[b, r, e]
                    S[j + e, r] = t[r]
                _cross(x, t, C[0])
                for r in range(3):
                    S[j + e, 3 + r] = C[0, r]
        elif k == FREE:
            for r in range(3):
                x[r] = c[b, r] - ref[b, r]
            for e in range(3):
                for r in range(3):
                    S[j + e, r] = 0.0
                    S[j + e, 3 + r] = 1.0 if r == e else 0.0
                    t[r] = A[b, r, e]
                for r in range(3):
                    S[j + 3 + e, r] = t[r]
                _cross(x, t, C[0])
                for r in range(3):
                    S[j + 3 + e, 3 + r] = C[0, r]
    F = np.empty(6)
    for b in range(nb):
        k = kind[b]
        if k == FIXED:
            continue
        nd = 6 if k == FREE else (3 if k == BALL else 1)
        for d in range(nd):
            i = vi[b] + d
            for r in range(6):
                acc = 0.0
                for n in range(6):
                    acc += Ic[b, r, n] * S[i, n]
                F[r] = acc
            a = b
            while a >= 0:
                ka = kind[a]
                if ka != FIXED:
                    na = 6 if ka == FREE else (3 if ka == BALL else 1)
                    for e in range(na):
                        jj = vi[a] + e
                        if a == b and jj > i:
                            continue
                        acc = 0.0
                        for r in range(6):
                            acc += S[jj, r] * F[r]
                        M[i, jj] = acc
                        M[jj, i] = acc
                a = parent[a]
    for b in range(nb):
        k = kind[b]
        if k == REVOLUTE or k == PRISMATIC:
            j = vi[b]
            M[j, j] += armature[j]


@njit(cache=True)
def cholesky_solve(M, rhs, L, out):
    """Solve M out = rhs for a symmetric positive definite M by Cholesky (L: (n, n)
    work). Returns False where M is not positive definite (a pivot <= 0)."""
    n = M.shape[0]
    for i in range(n):
        for j in range(i + 1):
            acc = M[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > 0.0:
                    return False
                L[i, i] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    for i in range(n):
        acc = rhs[i]
        for k in range(i):
            acc -= L[i, k] * out[k]
        out[i] = acc / L[i, i]
    for i in range(n - 1, -1, -1):
        acc = out[i]
        for k in range(i + 1, n):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]
    return True


@njit(cache=True)
def batch(op, Q, QD, X, kind, parent, qi, vi, axis, P, Qp, R0, mass, Ib, gravity,
          armature, stiffness, rest, damping, out, out_m):
    """One of the operations for every row of Q (B, nq), QD (B, nv) and X (B, nv)
    (the efforts for op 0 direct dynamics, the accelerations for op 1 inverse dynamics;
    unused for 2 mass matrix, 3 bias), into ``out`` (B, nv), or ``out_m`` (B, nv, nv)
    for the mass matrix.
    Returns the first row whose mass matrix is not positive definite, or -2 - 3 i - k
    for row i holding a value that is not finite in Q (k = 0), QD (1) or X (2), or -1."""
    nb = kind.size
    nv = QD.shape[1]
    A = np.empty((nb, 3, 3))
    c = np.empty((nb, 3))
    w = np.empty((nb, 3))
    v = np.empty((nb, 3))
    s = np.empty((nb, 3))
    o = np.empty((nb, 3))
    F = np.empty((nb, 3))
    N = np.empty((nb, 3))
    al = np.empty((nb, 3))
    ac = np.empty((nb, 3))
    M = np.zeros((nv, nv))
    Ic = np.empty((nb, 6, 6))
    S = np.empty((nv, 6))
    L = np.zeros((nv, nv))
    bias = np.empty(nv)
    zero = np.zeros(nv)
    rhs = np.empty(nv)
    res = np.empty(nv)
    for i in range(Q.shape[0]):
        if not _finite(Q[i]):
            return -2 - 3 * i
        if not _finite(QD[i]):
            return -3 - 3 * i
        if not _finite(X[i]):
            return -4 - 3 * i
        forward_kinematics(Q[i], QD[i], kind, parent, qi, vi, axis, P, Qp, R0, A, c, w, v,
                           s, o)
        if op == 1:
            rnea(Q[i], QD[i], X[i], kind, parent, qi, vi, A, c, w, v, s, o, mass, Ib,
                 gravity, armature, stiffness, rest, damping, True, F, N, al, ac, res)
            for r in range(nv):      # (a loop: a slice assignment compiles numba's
                out[i, r] = res[r]   # shape-error message)
        elif op == 3:
            rnea(Q[i], QD[i], zero, kind, parent, qi, vi, A, c, w, v, s, o, mass, Ib,
                 gravity, armature, stiffness, rest, damping, True, F, N, al, ac, res)
            for r in range(nv):      # (a loop: a slice assignment compiles numba's
                out[i, r] = res[r]   # shape-error message)
        else:
            mass_matrix(kind, parent, vi, A, c, s, o, mass, Ib, armature, Ic, S, M)
            if op == 2:
                for r in range(nv):
                    for k in range(nv):
                        out_m[i, r, k] = M[r, k]
                continue
            rnea(Q[i], QD[i], zero, kind, parent, qi, vi, A, c, w, v, s, o, mass, Ib,
                 gravity, armature, stiffness, rest, damping, True, F, N, al, ac, bias)
            for r in range(nv):
                rhs[r] = X[i, r] - bias[r]
            if not cholesky_solve(M, rhs, L, res):
                return i
            for r in range(nv):      # (a loop: a slice assignment compiles numba's
                out[i, r] = res[r]   # shape-error message)
    return -1


@njit(cache=True)
def poses(Q, QD, kind, parent, qi, vi, axis, P, Qp, R0, A, c, w, v):
    """Poses and twists of every body for every row of Q, QD: A (B, nb, 3, 3),
    c, w, v (B, nb, 3)."""
    nb = kind.size
    s = np.empty((nb, 3))
    o = np.empty((nb, 3))
    for i in range(Q.shape[0]):
        forward_kinematics(Q[i], QD[i], kind, parent, qi, vi, axis, P, Qp, R0, A[i], c[i],
                           w[i], v[i], s, o)
