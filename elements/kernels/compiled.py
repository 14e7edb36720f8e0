"""The compiled forms of the kernels of :mod:`elements.kernels.blocks` (arrays and numbers only).

Imported by :mod:`elements.kernels.blocks` where numba is available and enabled
(:func:`bondgraph.fastlu.enabled`), so that importing the package does not import numba.
Every Sandwich term of a batch, whatever its form (ground factors, identity L or R,
shapes), is computed in one call: G_i = L_i A_x^T A_y R_i, or its rate
L_i (dA_x/dt^T A_y + A_x^T dA_y/dt) R_i; the other kernel forms likewise (every joint
kind's but the chain joint's: universal, gimbal and screw joints included), and
:func:`program` runs all the groups of a mechanism in one call. Ground factors and
identity L or R are not multiplied out, as the numpy stacks do not (their products are
exact); ``tests/unit/test_moduli.py`` compares the two.
"""

from __future__ import annotations

import numpy as np
from bondgraph._jit import njit, types

from bondgraph import spatial

# the quaternion formulas of bondgraph.spatial, compiled (one definition for both paths)
_matrix_entries = njit(cache=True, inline="always")(spatial.quat_matrix_entries)
_rate_entries = njit(cache=True, inline="always")(spatial.quat_rate_entries)
_body_rate_entries = njit(cache=True, inline="always")(spatial.body_rate_entries)


@njit(cache=True, inline="always")
def sandwich(A, Adot, rate, ix, iy, L, R, nrow, ncol, form, dest, sign, out):
    """Write ``sign * G_i`` (row-major, ``nrow[i] x ncol[i]``) at ``out[dest[i, :]]``.

    A, Adot : (n_bodies, 3, 3) rotation matrices and their rates (row 0 the ground);
    ix, iy : (n,) body rows; L : (n, 3, 3) with the first ``nrow[i]`` rows used (the
    others zero); R : (n, 3, 3) with the first ``ncol[i]`` columns used (the others
    zero); form : (n,) bit 0: L is the 3 x 3 identity, bit 1: R is; dest : (n, 9)
    positions (the first nrow * ncol used). A ground factor (row 0) and identity L or R
    are not multiplied out (the numpy stacks skip them too), which changes no value:
    their products are exact. (Every loop has 3 turns, the rows and columns written
    aside: written out so, with A indexed in place, the products unroll; half the time
    of loops over views and the used sizes, measured on chain-100's 397 terms.)"""
    M = np.empty((3, 3))
    T = np.empty((3, 3))
    for i in range(ix.size):
        x, y = ix[i], iy[i]
        # M = X^T Y, or its rate Xd^T Y + X^T Yd (the ground's A = E, Adot = 0: then M
        # is the other body's factor, or its rate)
        P = Adot if rate else A
        if x == 0:
            for a in range(3):
                for b in range(3):
                    M[a, b] = P[y, a, b]
        elif y == 0:
            for a in range(3):
                for b in range(3):
                    M[a, b] = P[x, b, a]
        elif rate:
            for a in range(3):
                for b in range(3):
                    M[a, b] = (Adot[x, 0, a] * A[y, 0, b] + A[x, 0, a] * Adot[y, 0, b]) + \
                        (Adot[x, 1, a] * A[y, 1, b] + A[x, 1, a] * Adot[y, 1, b]) + \
                        (Adot[x, 2, a] * A[y, 2, b] + A[x, 2, a] * Adot[y, 2, b])
        else:
            for a in range(3):
                for b in range(3):
                    M[a, b] = A[x, 0, a] * A[y, 0, b] + A[x, 1, a] * A[y, 1, b] + \
                        A[x, 2, a] * A[y, 2, b]
        # T = M R, then L T (nrow x ncol)
        f = form[i]
        if f & 2:
            for a in range(3):
                for c in range(3):
                    T[a, c] = M[a, c]
        else:
            for a in range(3):
                for c in range(3):
                    T[a, c] = M[a, 0] * R[i, 0, c] + M[a, 1] * R[i, 1, c] + \
                        M[a, 2] * R[i, 2, c]
        nc = np.int64(ncol[i])
        if f & 1:
            for r in range(3):
                for c in range(nc):
                    out[dest[i, r * nc + c]] = sign * T[r, c]
        else:
            for r in range(nrow[i]):
                for c in range(nc):
                    out[dest[i, r * nc + c]] = sign * (
                        L[i, r, 0] * T[0, c] + L[i, r, 1] * T[1, c] + L[i, r, 2] * T[2, c])


@njit(cache=True, inline="always")
def point_gap(A, r, ia, ib, P, Q, dest, sign, out):
    """:class:`elements.kernels.geometry.PointGap`: (r_a + A_a P) - (r_b + A_b Q), 3 values per
    instance at ``out[dest[i]]``."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        for k in range(3):
            pa = r[a, k] + (A[a, k, 0] * P[i, 0] + A[a, k, 1] * P[i, 1] + A[a, k, 2] * P[i, 2])
            pb = r[b, k] + (A[b, k, 0] * Q[i, 0] + A[b, k, 1] * Q[i, 1] + A[b, k, 2] * Q[i, 2])
            out[dest[i, k]] = sign * (pa - pb)


@njit(cache=True, inline="always")
def revolute_gap(A, ia, ib, ax, D, dest, sign, out):
    """:class:`elements.kernels.geometry.RevoluteGap`: with a = A_a ax and d_j = A_b D[:, j],
    [-a . d_2, a . d_1] at ``out[dest[i]]``."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        s0 = 0.0
        s1 = 0.0
        for k in range(3):
            ak = A[a, k, 0] * ax[i, 0] + A[a, k, 1] * ax[i, 1] + A[a, k, 2] * ax[i, 2]
            d0 = A[b, k, 0] * D[i, 0, 0] + A[b, k, 1] * D[i, 1, 0] + A[b, k, 2] * D[i, 2, 0]
            d1 = A[b, k, 0] * D[i, 0, 1] + A[b, k, 1] * D[i, 1, 1] + A[b, k, 2] * D[i, 2, 1]
            s0 += ak * d0
            s1 += ak * d1
        out[dest[i, 0]] = sign * -s1
        out[dest[i, 1]] = sign * s0


@njit(cache=True)
def rates(q, qdot, rdot, A):
    """Body rates of the moving bodies (rows 1..n of A): omega^b = 2 vec(conj(q) (x)
    dq/dt) / |q|^2 (:func:`bondgraph.spatial.body_rate_from_quat_rate`), v = dr/dt, and
    dA/dt = A omega~ (ground row 0: zeros). Returns w (n + 1, 3), v (n + 1, 3),
    Adot (n + 1, 3, 3)."""
    n = q.shape[0]
    w = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 3))
    Adot = np.zeros((n + 1, 3, 3))
    for i in range(n):
        w0, w1, w2 = _body_rate_entries(q[i, 0], q[i, 1], q[i, 2], q[i, 3],
                                        qdot[i, 0], qdot[i, 1], qdot[i, 2], qdot[i, 3])
        w[i + 1, 0], w[i + 1, 1], w[i + 1, 2] = w0, w1, w2
        for m in range(3):
            v[i + 1, m] = rdot[i, m]
        R = A[i + 1]
        for m in range(3):      # (A omega~)[m, :] = row m of A times omega~
            Adot[i + 1, m, 0] = R[m, 1] * w2 - R[m, 2] * w1
            Adot[i + 1, m, 1] = -R[m, 0] * w2 + R[m, 2] * w0
            Adot[i + 1, m, 2] = R[m, 0] * w1 - R[m, 1] * w0
    return w, v, Adot


@njit(cache=True, inline="always")
def _gap3(A, r, a, b, P, Q, i):
    """h = (r_a + A_a P_i) - (r_b + A_b Q_i)."""
    h = np.empty(3)
    for k in range(3):
        h[k] = (r[a, k] + (A[a, k, 0] * P[i, 0] + A[a, k, 1] * P[i, 1] + A[a, k, 2] * P[i, 2])) \
            - (r[b, k] + (A[b, k, 0] * Q[i, 0] + A[b, k, 1] * Q[i, 1] + A[b, k, 2] * Q[i, 2]))
    return h


@njit(cache=True, inline="always")
def _gap_rate3(A, w, v, a, b, P, Q, i):
    """dh/dt = (v_a + A_a (w_a x P_i)) - (v_b + A_b (w_b x Q_i)), w body axes."""
    cp = np.empty(3)
    cq = np.empty(3)
    cp[0] = w[a, 1] * P[i, 2] - w[a, 2] * P[i, 1]
    cp[1] = w[a, 2] * P[i, 0] - w[a, 0] * P[i, 2]
    cp[2] = w[a, 0] * P[i, 1] - w[a, 1] * P[i, 0]
    cq[0] = w[b, 1] * Q[i, 2] - w[b, 2] * Q[i, 1]
    cq[1] = w[b, 2] * Q[i, 0] - w[b, 0] * Q[i, 2]
    cq[2] = w[b, 0] * Q[i, 1] - w[b, 1] * Q[i, 0]
    dh = np.empty(3)
    for k in range(3):
        dh[k] = (v[a, k] + (A[a, k, 0] * cp[0] + A[a, k, 1] * cp[1] + A[a, k, 2] * cp[2])) \
            - (v[b, k] + (A[b, k, 0] * cq[0] + A[b, k, 1] * cq[1] + A[b, k, 2] * cq[2]))
    return dh


@njit(cache=True, inline="always")
def prismatic_rotation(A, r, w, v, rate, ia, ib, D, P, Q, dest, sign, out):
    """:class:`elements.kernels.geometry.PrismaticRotation`: D^T u~ with u = Q + A_b^T h, or its
    rate D^T (du/dt)~ with du/dt = A_b^T dh/dt - omega_b x (u - Q); D (n, 3, k)."""
    u = np.empty(3)
    du = np.empty(3)
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        h = _gap3(A, r, a, b, P, Q, i)
        for k in range(3):
            u[k] = Q[i, k] + (A[b, 0, k] * h[0] + A[b, 1, k] * h[1] + A[b, 2, k] * h[2])
        if rate:
            dh = _gap_rate3(A, w, v, a, b, P, Q, i)
            e0, e1, e2 = u[0] - Q[i, 0], u[1] - Q[i, 1], u[2] - Q[i, 2]
            c0 = w[b, 1] * e2 - w[b, 2] * e1
            c1 = w[b, 2] * e0 - w[b, 0] * e2
            c2 = w[b, 0] * e1 - w[b, 1] * e0
            for k in range(3):
                du[k] = A[b, 0, k] * dh[0] + A[b, 1, k] * dh[1] + A[b, 2, k] * dh[2]
            du[0] -= c0
            du[1] -= c1
            du[2] -= c2
            x0, x1, x2 = du[0], du[1], du[2]
        else:
            x0, x1, x2 = u[0], u[1], u[2]
        # (D^T x~)[row, c] = sum_m D[m, row] x~[m, c]; x~ = [[0,-x2,x1],[x2,0,-x0],[-x1,x0,0]]
        for row in range(D.shape[2]):
            d0, d1, d2 = D[i, 0, row], D[i, 1, row], D[i, 2, row]
            out[dest[i, 3 * row + 0]] = sign * (d1 * x2 - d2 * x1)
            out[dest[i, 3 * row + 1]] = sign * (-d0 * x2 + d2 * x0)
            out[dest[i, 3 * row + 2]] = sign * (d0 * x1 - d1 * x0)


@njit(cache=True, inline="always")
def gap_row(A, r, w, v, rate, ia, ib, P, Q, scale, dest, sign, out):
    """:class:`elements.kernels.geometry.GapRow`: scale h^T, or its rate scale dh/dt^T
    with dh/dt = (v_a + A_a (w_a x P)) - (v_b + A_b (w_b x Q))."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        if rate:
            h = _gap_rate3(A, w, v, a, b, P, Q, i)
        else:
            h = _gap3(A, r, a, b, P, Q, i)
        for k in range(3):
            out[dest[i, k]] = sign * (scale[i, 0] * h[k])


@njit(cache=True, inline="always")
def gap_length(A, r, ia, ib, P, Q, d, dest, sign, out):
    """:class:`elements.kernels.geometry.GapLength`: (h . h - d^2) / (2 d)."""
    for i in range(ia.size):
        h = _gap3(A, r, ia[i], ib[i], P, Q, i)
        di = d[i, 0]
        out[dest[i, 0]] = sign * (((h[0] * h[0] + h[1] * h[1]) + h[2] * h[2] - di * di)
                                  / (2.0 * di))


@njit(cache=True, inline="always")
def slide_gap(A, r, ia, ib, D, P, Q, dest, sign, out):
    """:class:`elements.kernels.geometry.SlideGap`: D^T A_b^T h."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        h = _gap3(A, r, a, b, P, Q, i)
        for row in range(D.shape[2]):
            s = 0.0
            for m in range(3):
                s += D[i, m, row] * (A[b, 0, m] * h[0] + A[b, 1, m] * h[1] + A[b, 2, m] * h[2])
            out[dest[i, row]] = sign * s


@njit(cache=True, inline="always")
def orientation_gap(A, ia, ib, C, dest, sign, out):
    """:class:`elements.kernels.geometry.OrientationGap`: vee(A_a C A_b^T), vee(M) =
    (M[2,1] - M[1,2], M[0,2] - M[2,0], M[1,0] - M[0,1]) / 2."""
    M = np.empty((3, 3))
    T = np.empty((3, 3))
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        for p in range(3):
            for q in range(3):
                T[p, q] = A[a, p, 0] * C[i, 0, q] + A[a, p, 1] * C[i, 1, q] + A[a, p, 2] * C[i, 2, q]
        for p in range(3):
            for q in range(3):
                M[p, q] = T[p, 0] * A[b, q, 0] + T[p, 1] * A[b, q, 1] + T[p, 2] * A[b, q, 2]
        out[dest[i, 0]] = sign * 0.5 * (M[2, 1] - M[1, 2])
        out[dest[i, 1]] = sign * 0.5 * (M[0, 2] - M[2, 0])
        out[dest[i, 2]] = sign * 0.5 * (M[1, 0] - M[0, 1])


# -- universal, gimbal and screw joints -----------------------------------------------------
# 3-vectors as tuples: A_x u, A_x^T w and a x b, the sums of bondgraph.spatial and the
# numpy stacks (elements/kernels/geometry.py) in their order

@njit(cache=True, inline="always")
def _mv3(A, x, u0, u1, u2):
    """A[x] u."""
    return (A[x, 0, 0] * u0 + A[x, 0, 1] * u1 + A[x, 0, 2] * u2,
            A[x, 1, 0] * u0 + A[x, 1, 1] * u1 + A[x, 1, 2] * u2,
            A[x, 2, 0] * u0 + A[x, 2, 1] * u1 + A[x, 2, 2] * u2)


@njit(cache=True, inline="always")
def _mtv3(A, x, w0, w1, w2):
    """A[x]^T w."""
    return (A[x, 0, 0] * w0 + A[x, 1, 0] * w1 + A[x, 2, 0] * w2,
            A[x, 0, 1] * w0 + A[x, 1, 1] * w1 + A[x, 2, 1] * w2,
            A[x, 0, 2] * w0 + A[x, 1, 2] * w1 + A[x, 2, 2] * w2)


@njit(cache=True, inline="always")
def _cross3(a0, a1, a2, b0, b1, b2):
    """a x b (:func:`bondgraph.spatial.cross3`)."""
    return (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)


@njit(cache=True, inline="always")
def axes_cross(A, Adot, rate, ia, ib, u, v, flags, dest, sign, out):
    """:class:`elements.kernels.geometry.AxesCross`: flags[i, 1] (u x v)^T A_x with
    u = A_a u_i, v = A_b v_i, x = b where flags[i, 0] > 0.5 (else a); its rate
    A_x^T (du/dt x v + u x dv/dt) + (dA_x/dt)^T (u x v). 3 values per instance."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        x = b if flags[i, 0] > 0.5 else a
        u0, u1, u2 = _mv3(A, a, u[i, 0], u[i, 1], u[i, 2])
        v0, v1, v2 = _mv3(A, b, v[i, 0], v[i, 1], v[i, 2])
        w0, w1, w2 = _cross3(u0, u1, u2, v0, v1, v2)
        if rate:
            du0, du1, du2 = _mv3(Adot, a, u[i, 0], u[i, 1], u[i, 2])
            dv0, dv1, dv2 = _mv3(Adot, b, v[i, 0], v[i, 1], v[i, 2])
            c0, c1, c2 = _cross3(du0, du1, du2, v0, v1, v2)
            e0, e1, e2 = _cross3(u0, u1, u2, dv0, dv1, dv2)
            p0, p1, p2 = _mtv3(A, x, c0 + e0, c1 + e1, c2 + e2)
            q0, q1, q2 = _mtv3(Adot, x, w0, w1, w2)
            o0, o1, o2 = p0 + q0, p1 + q1, p2 + q2
        else:
            o0, o1, o2 = _mtv3(A, x, w0, w1, w2)
        s = flags[i, 1]
        out[dest[i, 0]] = sign * (s * o0)
        out[dest[i, 1]] = sign * (s * o1)
        out[dest[i, 2]] = sign * (s * o2)


@njit(cache=True, inline="always")
def axes_dot(A, ia, ib, u, v, c, dest, sign, out):
    """:class:`elements.kernels.geometry.AxesDot`: (A_a u_i) . (A_b v_i) - c_i."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        u0, u1, u2 = _mv3(A, a, u[i, 0], u[i, 1], u[i, 2])
        v0, v1, v2 = _mv3(A, b, v[i, 0], v[i, 1], v[i, 2])
        out[dest[i, 0]] = sign * ((u0 * v0 + u1 * v1 + u2 * v2) - c[i, 0])


@njit(cache=True, inline="always")
def axes_combination(A, Adot, rate, ia, ib, u, v, flags, dest, sign, out):
    """:class:`elements.kernels.geometry.AxesCombination`: flags[i, 3] row^T A_x with
    row = alpha A_a u_i + beta A_b v_i (alpha, beta = flags[i, 0], flags[i, 1]), x = b
    where flags[i, 2] > 0.5 (else a); its rate A_x^T drow/dt + (dA_x/dt)^T row."""
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        al, be = flags[i, 0], flags[i, 1]
        x = b if flags[i, 2] > 0.5 else a
        u0, u1, u2 = _mv3(A, a, u[i, 0], u[i, 1], u[i, 2])
        v0, v1, v2 = _mv3(A, b, v[i, 0], v[i, 1], v[i, 2])
        w0, w1, w2 = al * u0 + be * v0, al * u1 + be * v1, al * u2 + be * v2
        if rate:
            du0, du1, du2 = _mv3(Adot, a, u[i, 0], u[i, 1], u[i, 2])
            dv0, dv1, dv2 = _mv3(Adot, b, v[i, 0], v[i, 1], v[i, 2])
            p0, p1, p2 = _mtv3(A, x, al * du0 + be * dv0, al * du1 + be * dv1,
                               al * du2 + be * dv2)
            q0, q1, q2 = _mtv3(Adot, x, w0, w1, w2)
            o0, o1, o2 = p0 + q0, p1 + q1, p2 + q2
        else:
            o0, o1, o2 = _mtv3(A, x, w0, w1, w2)
        s = flags[i, 3]
        out[dest[i, 0]] = sign * (s * o0)
        out[dest[i, 1]] = sign * (s * o1)
        out[dest[i, 2]] = sign * (s * o2)


@njit(cache=True, inline="always")
def screw_gap(A, r, ia, ib, F, R0, P, Q, pitch, dest, sign, out):
    """:class:`elements.kernels.geometry.ScrewGap`: s - p theta less the whole turns
    2 pi p that make it least (rounded half to even, as numpy rounds), with
    s = (A_a F[:, 2]) . -h and theta = atan2(X[1, 0], X[0, 0]),
    X = F^T A_a^T A_b R0^T F (its first column's two entries, multiplied out left to
    right)."""
    X1 = np.empty(3)
    X2 = np.empty(3)
    X3 = np.empty(3)
    X4 = np.empty(2)
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        h = _gap3(A, r, a, b, P, Q, i)
        g0, g1, g2 = _mv3(A, a, F[i, 0, 2], F[i, 1, 2], F[i, 2, 2])
        s = g0 * -h[0] + g1 * -h[1] + g2 * -h[2]
        for row in range(2):
            for j in range(3):          # (F^T A_a^T)[row, j]
                X1[j] = F[i, 0, row] * A[a, j, 0] + F[i, 1, row] * A[a, j, 1] + \
                    F[i, 2, row] * A[a, j, 2]
            for j in range(3):          # (.. A_b)[row, j]
                X2[j] = X1[0] * A[b, 0, j] + X1[1] * A[b, 1, j] + X1[2] * A[b, 2, j]
            for j in range(3):          # (.. R0^T)[row, j]
                X3[j] = X2[0] * R0[i, j, 0] + X2[1] * R0[i, j, 1] + X2[2] * R0[i, j, 2]
            X4[row] = X3[0] * F[i, 0, 0] + X3[1] * F[i, 1, 0] + X3[2] * F[i, 2, 0]
        theta = np.arctan2(X4[1], X4[0])
        p = pitch[i, 0]
        raw = s - p * theta
        turn = 2.0 * np.pi * p
        k = np.rint(raw / turn) if turn != 0.0 else 0.0
        out[dest[i, 0]] = sign * (raw - k * turn)


@njit(cache=True, inline="always")
def gimbal_rate(A, Adot, rate, ia, ib, u, v, flags, dest, sign, out):
    """:class:`elements.kernels.geometry.GimbalRate`: flags[i, 2] r_k^T A_x (or its
    rate) with flags (k, which, sign, s, lock). Returns the first instance in gimbal
    lock (|a1 x u3| below ``lock``), whose values are written NaN, or -1: the caller
    raises :class:`~elements.kernels.geometry.GimbalLockError` naming its joint (a
    compiled caller sees the NaN)."""
    bad = -1
    for i in range(ia.size):
        a, b = ia[i], ib[i]
        a0, a1, a2 = _mv3(A, a, u[i, 0], u[i, 1], u[i, 2])
        w0, w1, w2 = _mv3(A, b, v[i, 0], v[i, 1], v[i, 2])        # u3
        d = a0 * w0 + a1 * w1 + a2 * w2
        c0, c1, c2 = _cross3(a0, a1, a2, w0, w1, w2)
        n2 = 1.0 - d * d
        n = np.sqrt(max(n2, 0.0))
        if n < flags[i, 4]:
            if bad < 0:
                bad = i
            for j in range(3):
                out[dest[i, j]] = np.nan
            continue
        k, s = flags[i, 0], flags[i, 3]
        x = b if flags[i, 1] > 0.5 else a
        if k < 0.5:
            r0, r1, r2 = (a0 - d * w0) / n2, (a1 - d * w1) / n2, (a2 - d * w2) / n2
        elif k < 1.5:
            r0, r1, r2 = s * c0 / n, s * c1 / n, s * c2 / n
        else:
            r0, r1, r2 = (w0 - d * a0) / n2, (w1 - d * a1) / n2, (w2 - d * a2) / n2
        if rate:
            da0, da1, da2 = _mv3(Adot, a, u[i, 0], u[i, 1], u[i, 2])
            dw0, dw1, dw2 = _mv3(Adot, b, v[i, 0], v[i, 1], v[i, 2])
            dd = (da0 * w0 + da1 * w1 + da2 * w2) + (a0 * dw0 + a1 * dw1 + a2 * dw2)
            if k < 0.5 or k > 1.5:
                g = 2.0 * d * dd / (n2 * n2)
                if k < 0.5:
                    e0 = (da0 - dd * w0 - d * dw0) / n2 + (a0 - d * w0) * g
                    e1 = (da1 - dd * w1 - d * dw1) / n2 + (a1 - d * w1) * g
                    e2 = (da2 - dd * w2 - d * dw2) / n2 + (a2 - d * w2) * g
                else:
                    e0 = (dw0 - dd * a0 - d * da0) / n2 + (w0 - d * a0) * g
                    e1 = (dw1 - dd * a1 - d * da1) / n2 + (w1 - d * a1) * g
                    e2 = (dw2 - dd * a2 - d * da2) / n2 + (w2 - d * a2) * g
            else:
                f0, f1, f2 = _cross3(da0, da1, da2, w0, w1, w2)
                h0, h1, h2 = _cross3(a0, a1, a2, dw0, dw1, dw2)
                f0, f1, f2 = f0 + h0, f1 + h1, f2 + h2                  # dc/dt
                dn = (c0 * f0 + c1 * f1 + c2 * f2) / n
                e0 = s * (f0 / n - c0 * dn / n2)
                e1 = s * (f1 / n - c1 * dn / n2)
                e2 = s * (f2 / n - c2 * dn / n2)
            p0, p1, p2 = _mtv3(Adot, x, r0, r1, r2)
            q0, q1, q2 = _mtv3(A, x, e0, e1, e2)
            o0, o1, o2 = p0 + q0, p1 + q1, p2 + q2
        else:
            o0, o1, o2 = _mtv3(A, x, r0, r1, r2)
        t = flags[i, 2]
        out[dest[i, 0]] = sign * (t * o0)
        out[dest[i, 1]] = sign * (t * o1)
        out[dest[i, 2]] = sign * (t * o2)
    return bad


@njit(cache=True)
def frames(states):
    """Rotation matrices (body -> global) and centres of the moving bodies from their
    states [q (w, x, y, z), r] (n, 7), as stacks with the ground in row 0 (A = E, r = 0):
    :func:`bondgraph.spatial.quat_to_matrix` of the normalised quaternion."""
    n = states.shape[0]
    A = np.zeros((n + 1, 3, 3))
    r = np.zeros((n + 1, 3))
    A[0, 0, 0] = 1.0
    A[0, 1, 1] = 1.0
    A[0, 2, 2] = 1.0
    for i in range(n):
        qw, qx, qy, qz = states[i, 0], states[i, 1], states[i, 2], states[i, 3]
        s = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        e = _matrix_entries(qw / s, qx / s, qy / s, qz / s)
        R = A[i + 1]
        for k in range(9):
            R[k // 3, k % 3] = e[k]
        r[i + 1, 0], r[i + 1, 1], r[i + 1, 2] = states[i, 4], states[i, 5], states[i, 6]
    return A, r


@njit(cache=True)
def quat_rates(q, om):
    """dq/dt = 1/2 q (x) (0, omega^b) for stacks q (n, 4), omega^b (n, 3)
    (:func:`bondgraph.spatial.quat_rate`, the same sums)."""
    out = np.empty((q.shape[0], 4))
    for i in range(q.shape[0]):
        e = _rate_entries(q[i, 0], q[i, 1], q[i, 2], q[i, 3], om[i, 0], om[i, 1], om[i, 2])
        for k in range(4):
            out[i, k] = e[k]
    return out


# -- every term and Phi of a mechanism in one call ----------------------------------------
# A program is a table ``desc`` with one row per group of kernels of one form (columns
# below) and the groups' arrays packed in ``ints`` (body rows, destinations, Sandwich
# row and column counts) and ``flts`` (the kernels' parameters, row-major, one after
# another from D_F0: D_F1 and D_F2 give the second and third, a screw's further ones
# follow its third).
(SANDWICH, POINT_GAP, REVOLUTE_GAP, SLIDE_GAP, ORIENTATION_GAP, PRISMATIC_ROTATION,
 AXES_CROSS, AXES_DOT, AXES_COMBINATION, SCREW_GAP, GIMBAL_RATE, GAP_ROW,
 GAP_LENGTH) = range(13)
(D_CODE, D_N, D_TARGET, D_SIGN, D_K, D_IA, D_IB, D_DEST, D_NROW, D_NCOL, D_F0, D_F1,
 D_F2, D_FORM) = range(14)
D_COLUMNS = 14


@njit(cache=True)
def program(states, state_rates, rate, desc, ints, flts, out0, out1):
    """Run a program: the bodies' frames from ``states`` (n, 7) (and, with ``rate``,
    their rates from ``state_rates`` (n, 7)), then every group of ``desc``, each writing
    ``sign`` times its kernels' values (or rates) at its destinations in ``out0``
    (target 0) or ``out1`` (target 1). Returns (group, instance) of the first gimbal in
    lock (see :func:`gimbal_rate`; its values NaN), or (-1, -1).

    Every array C-contiguous: the types of ``bondgraph._rk_kernels.PROGRAM_SIGNATURE``,
    so that one compiled form serves the Python path and the compiled RK loop (which
    takes it as a first-class function of that signature). Compiled when first called
    (or passed to the loop), not at import: a user of :class:`elements.FastDynamics`
    alone compiles none of it.

    The kernels of the groups are inlined here (``inline="always"``): compiled once,
    as part of this function, rather than each on its own and then again linked in
    (the cold start's compile 1 s shorter; and an evaluation's element programs a
    third faster: the three-body example's 2.2 and 1.5 us became 1.5 and 1.1 us)."""
    locked_g, locked_i = -1, -1
    A, r = frames(states)
    if rate:
        w, v, Adot = rates(states[:, :4], state_rates[:, :4], state_rates[:, 4:], A)
    else:
        w, v, Adot = r, r, A
    # (indices read as unsigned: no negative-index fix-up at each access, see
    # bondgraph._lu_kernels; none is negative)
    ints = ints.view(np.uint64)
    for g in range(desc.shape[0]):
        code, n, k = desc[g, D_CODE], desc[g, D_N], desc[g, D_K]
        out = out0 if desc[g, D_TARGET] == 0 else out1
        sign = float(desc[g, D_SIGN])
        ia = ints[desc[g, D_IA]:desc[g, D_IA] + n]
        ib = ints[desc[g, D_IB]:desc[g, D_IB] + n]
        f0, f1, f2, i0 = desc[g, D_F0], desc[g, D_F1], desc[g, D_F2], desc[g, D_DEST]
        if code == SANDWICH:
            dest = ints[i0:i0 + 9 * n].reshape((n, 9))
            nrow = ints[desc[g, D_NROW]:desc[g, D_NROW] + n]
            ncol = ints[desc[g, D_NCOL]:desc[g, D_NCOL] + n]
            form = ints[desc[g, D_FORM]:desc[g, D_FORM] + n]
            sandwich(A, Adot, rate, ia, ib, flts[f0:f0 + 9 * n].reshape((n, 3, 3)),
                     flts[f1:f1 + 9 * n].reshape((n, 3, 3)), nrow, ncol, form, dest, sign,
                     out)
        elif code == POINT_GAP:
            point_gap(A, r, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                      flts[f1:f1 + 3 * n].reshape((n, 3)),
                      ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
        elif code == REVOLUTE_GAP:
            revolute_gap(A, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                         flts[f1:f1 + 6 * n].reshape((n, 3, 2)),
                         ints[i0:i0 + 2 * n].reshape((n, 2)), sign, out)
        elif code == SLIDE_GAP:
            slide_gap(A, r, ia, ib, flts[f0:f0 + 3 * k * n].reshape((n, 3, k)),
                      flts[f1:f1 + 3 * n].reshape((n, 3)), flts[f2:f2 + 3 * n].reshape((n, 3)),
                      ints[i0:i0 + k * n].reshape((n, k)), sign, out)
        elif code == ORIENTATION_GAP:
            orientation_gap(A, ia, ib, flts[f0:f0 + 9 * n].reshape((n, 3, 3)),
                            ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
        elif code == PRISMATIC_ROTATION:
            prismatic_rotation(A, r, w, v, rate, ia, ib,
                               flts[f0:f0 + 3 * k * n].reshape((n, 3, k)),
                               flts[f1:f1 + 3 * n].reshape((n, 3)),
                               flts[f2:f2 + 3 * n].reshape((n, 3)),
                               ints[i0:i0 + 3 * k * n].reshape((n, 3 * k)), sign, out)
        elif code == AXES_CROSS:
            axes_cross(A, Adot, rate, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                       flts[f1:f1 + 3 * n].reshape((n, 3)),
                       flts[f2:f2 + 2 * n].reshape((n, 2)),
                       ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
        elif code == AXES_DOT:
            axes_dot(A, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                     flts[f1:f1 + 3 * n].reshape((n, 3)), flts[f2:f2 + n].reshape((n, 1)),
                     ints[i0:i0 + n].reshape((n, 1)), sign, out)
        elif code == AXES_COMBINATION:
            axes_combination(A, Adot, rate, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                             flts[f1:f1 + 3 * n].reshape((n, 3)),
                             flts[f2:f2 + 4 * n].reshape((n, 4)),
                             ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
        elif code == SCREW_GAP:
            # F, R0 (3 x 3), P, Q (3), pitch (1) one after another from f0
            f3, f4 = f2 + 3 * n, f2 + 6 * n
            screw_gap(A, r, ia, ib, flts[f0:f0 + 9 * n].reshape((n, 3, 3)),
                      flts[f1:f1 + 9 * n].reshape((n, 3, 3)),
                      flts[f2:f2 + 3 * n].reshape((n, 3)),
                      flts[f3:f3 + 3 * n].reshape((n, 3)), flts[f4:f4 + n].reshape((n, 1)),
                      ints[i0:i0 + n].reshape((n, 1)), sign, out)
        elif code == GAP_ROW:
            gap_row(A, r, w, v, rate, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                    flts[f1:f1 + 3 * n].reshape((n, 3)), flts[f2:f2 + n].reshape((n, 1)),
                    ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
        elif code == GAP_LENGTH:
            gap_length(A, r, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                       flts[f1:f1 + 3 * n].reshape((n, 3)), flts[f2:f2 + n].reshape((n, 1)),
                       ints[i0:i0 + n].reshape((n, 1)), sign, out)
        else:
            bad = gimbal_rate(A, Adot, rate, ia, ib, flts[f0:f0 + 3 * n].reshape((n, 3)),
                              flts[f1:f1 + 3 * n].reshape((n, 3)),
                              flts[f2:f2 + 5 * n].reshape((n, 5)),
                              ints[i0:i0 + 3 * n].reshape((n, 3)), sign, out)
            if bad >= 0 and locked_g < 0:
                locked_g, locked_i = g, bad
    return locked_g, locked_i


# kernels of fixed types (those of bondgraph._rk_kernels' signatures): first-class
# functions, which a compiled caller takes as arguments and which keep it cacheable
_f8, _i8 = types.float64, types.int64
_V, _I, _M, _IM = _f8[::1], _i8[::1], _f8[:, ::1], _i8[:, ::1]


@njit(types.void(_f8, _V, _I, _V, _V), cache=True)
def stop_springs(t, x, ints, flts, out):
    """The compliant stops' springs (elements.mechanism._stop_law, the same numbers):
    out[i] = -k max(q - at, 0) (an upper stop) or -k min(q - at, 0) (a lower), q =
    x[ints[i]] (-1: 0), [k, at, upper] = flts[3 i:3 i + 3]; the signature of
    bondgraph._rk_kernels.SOURCE_SIGNATURE (t not read)."""
    for i in range(ints.size):
        if ints[i] < 0:
            out[i] = 0.0
            continue
        k, d = flts[3 * i], x[ints[i]] - flts[3 * i + 1]
        if flts[3 * i + 2] != 0.0:
            out[i] = -k * (0.0 if 0.0 > d else d)        # (Python's max(d, 0.0))
        else:
            out[i] = -k * (0.0 if 0.0 < d else d)        # (min(d, 0.0))


@njit(_M(_M, _M), cache=True)
def quat_rates_typed(q, om):
    """:func:`quat_rates` with fixed argument types."""
    return quat_rates(q, om)


# -- a stale cache --------------------------------------------------------------------------
# numba's on-disk cache of a function here is keyed to this file only: after an edit of
# the formulas in bondgraph.spatial, the cached kernels would still run the old ones.
# One quaternion through both paths at import tells; on a difference every kernel's cache
# is flushed (recompiled on first use).

def _stale() -> bool:
    q = np.array([[0.3, -0.5, 0.7, 0.2]])
    om = np.array([[0.4, -1.1, 0.9]])
    A, _ = frames(np.concatenate([q, np.zeros((1, 3))], axis=1))
    qd = quat_rates(q, om)
    # (columns of (n, 7) states and rates, as program and the Python path pass them, so
    # that one compiled rates serves all: two rows, else numpy calls them contiguous)
    s, d = np.zeros((2, 7)), np.zeros((2, 7))
    s[:, :4], d[:, :4] = q, qd
    w, _, _ = rates(s[:, :4], d[:, :4], d[:, 4:], np.concatenate([A, A[1:]]))
    return not (np.allclose(A[1], spatial.quat_to_matrix(q[0]), rtol=0, atol=1e-14)
                and np.allclose(qd[0], spatial.quat_rate(q[0], om[0]), rtol=0, atol=1e-14)
                and np.allclose(w[1], om[0], rtol=0, atol=1e-14))


if _stale():
    for _f in list(globals().values()):
        if hasattr(_f, "recompile") and hasattr(_f, "py_func"):
            _f.recompile()
    if _stale():
        raise RuntimeError("elements.kernels.compiled: the compiled quaternion formulas differ from "
                           "bondgraph.spatial's even after recompiling; delete the "
                           "__pycache__ folders of bondgraph and elements and retry")
