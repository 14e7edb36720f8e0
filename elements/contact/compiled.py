"""Contact forces in one compiled call (numba): what
:meth:`elements.contact.dynamics.BoundContacts.evaluate` computes, for the right-hand
side.

Imported only where numba is enabled (:func:`bondgraph.fastlu.enabled`), when a model
with collision shapes is bound. On import it compiles the geometry's kernels in place:
the functions of :mod:`elements.contact.shapes`, :mod:`elements.contact.gjk` and
:mod:`elements.contact.detect` that :data:`KERNELS` names are replaced in their modules
by their numba versions (they are written for it: plain loops over float64 arrays; the
Python originals stay as ``.py_func``), so that :func:`wrenches` can call them and the
Python path (``collide``, the contact history) runs the same code compiled.

- :func:`wrenches`: every body's contact wrench (elastic and dissipative force and
  moment) and the stored energy at a state vector, from the packed arrays of
  :class:`Packed`.
- :func:`wrench_source`: the same wrenches as the compiled kernel of the contact
  wrench sources (:class:`bondgraph.primitives.sources.CompiledSource`, with the fixed
  argument types of ``bondgraph._rk_kernels.SOURCE_SIGNATURE``), which the compiled
  Runge-Kutta loop calls at every evaluation; its arrays: :meth:`Packed.flat`.
"""

from __future__ import annotations

import numpy as np

from bondgraph import spatial
from bondgraph._jit import njit, types

import elements.contact.detect as detect
import elements.contact.gjk as gjk
import elements.contact.shapes as shapes

_matrix_entries = njit(cache=True, inline="always")(spatial.quat_matrix_entries)

__all__ = ["wrenches", "wrench_source", "KERNELS", "Packed"]

KERNELS = {
    shapes: ("_sgn", "core_radius", "core_support_point", "support_point"),
    gjk: ("_dot", "_cross", "_perpendicular", "_support", "_segment", "_triangle",
          "_closest", "_compact", "gjk_distance", "_face", "_flat_normal", "epa",
          "_projection", "convex_contact"),
    detect: ("_emit", "plane_contacts", "segment_closest_xyz", "segment_closest",
             "capsule_contacts",
             "sphere_box_contacts", "_flip", "box_box_manifold", "contact_kernel"),
}
"""The geometry kernels compiled in place, by module (callees before callers)."""

for _mod, _names in KERNELS.items():
    for _name in _names:
        _f = getattr(_mod, _name)
        if not hasattr(_f, "py_func"):
            _jitted = njit(cache=True)(_f)
            for _other in KERNELS:                 # every module that names it
                if getattr(_other, _name, None) is _f:
                    setattr(_other, _name, _jitted)

_contact_kernel = detect.contact_kernel
_segment_closest = detect.segment_closest_xyz
PLANE, SPHERE, CAPSULE = shapes.PLANE, shapes.SPHERE, shapes.CAPSULE


class Packed:
    """The arrays :func:`wrenches` reads, made once per bound system: the state
    indices of each body (position 3, quaternion 4, momenta 3 + 3), masses and inverse
    inertias, the shapes (kind, size, hull vertices, body, pose in the body, bounding
    radius, a plane's normal and offset), the pairs the filters allow and each pair's
    law (k, n, lambda, mu, v_s, c_r, c_n, w_s)."""

    def __init__(self, system, bound):
        bodies = system.bodies
        where = {b: i for i, b in enumerate(bodies)}
        self.index = np.zeros((len(bodies), 13), dtype=np.int64)
        self.mass = np.array([bound.mass[b] for b in bodies], dtype=float)
        self.jinv = np.array([bound.inertia_inv[b] for b in bodies],
                             dtype=float).reshape(-1, 3, 3)
        S = system.shapes
        self.kind = np.array([s.kind for s in S], dtype=np.int64)
        self.params = np.array([s.params for s in S], dtype=float).reshape(-1, 4)
        counts = [len(s.vertices) for s in S]
        self.vstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.verts = (np.concatenate([s.vertices for s in S if len(s.vertices)])
                      if sum(counts) else np.zeros((0, 3)))
        self.sbody = np.array([where.get(s.body, -1) for s in S], dtype=np.int64)
        self.spos = np.array([s.position for s in S], dtype=float).reshape(-1, 3)
        self.srot = np.array([s.rotation for s in S], dtype=float).reshape(-1, 3, 3)
        self.srad = np.array([0.0 if s.kind == PLANE else s.bounding_radius for s in S])
        self.pnormal = np.array([getattr(s, "normal", np.zeros(3)) for s in S],
                                dtype=float).reshape(-1, 3)
        self.poffset = np.array([getattr(s, "offset", 0.0) for s in S], dtype=float)
        pairs = system.allowed_pairs()
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.laws = np.array([[law.stiffness, law.exponent, law.damping, law.friction,
                               law.slip_velocity, law.rolling, law.torsion,
                               law.spin_velocity] for law in
                              (bound.pair_law(i, j) for i, j in pairs)],
                             dtype=float).reshape(-1, 8)
        self.capacity = int(max([8] + counts))
        self.margin = float(system.world.margin)

    def set_indices(self, slices, states) -> None:
        """The state vector's indices of each body's states (``states``: body ->
        (position, quaternion, linear momentum, angular momentum) names)."""
        for i, names in enumerate(states):
            idx = [k for n in names for k in range(slices[n].start, slices[n].stop)]
            self.index[i] = idx

    def flat(self, slices, states) -> tuple[np.ndarray, np.ndarray]:
        """(ints, flts): every array of :meth:`args` but the state, packed for
        :func:`wrench_source`, with the state indices of a state vector whose states
        sit at ``slices`` (``states`` as in :meth:`set_indices`)."""
        index = np.array([[k for n in names for k in range(slices[n].start, slices[n].stop)]
                          for names in states], dtype=np.int64).reshape(-1, 13)
        nb, ns, nv, npr = index.shape[0], self.kind.size, self.verts.shape[0], \
            self.pairs.shape[0]
        ints = np.concatenate([[nb, ns, nv, npr, self.capacity], index.ravel(),
                               self.kind, self.vstart, self.sbody, self.pairs.ravel()])
        flts = np.concatenate([[self.margin], self.mass, self.jinv.ravel(),
                               self.params.ravel(), self.verts.ravel(), self.spos.ravel(),
                               self.srot.ravel(), self.srad, self.pnormal.ravel(),
                               self.poffset, self.laws.ravel()])
        return ints.astype(np.int64), flts.astype(np.float64)

    def args(self, x: np.ndarray) -> tuple:
        return (x, self.index, self.mass, self.jinv, self.kind, self.params, self.verts,
                self.vstart, self.sbody, self.spos, self.srot, self.srad, self.pnormal,
                self.poffset, self.pairs, self.laws, self.capacity, self.margin)


@njit(cache=True)
def _quat_matrix(q0, q1, q2, q3, A):
    """The rotation matrix of the quaternion (q0, q1, q2, q3), normalised, into A
    (:func:`bondgraph.spatial.quat_matrix_entries`, the one definition)."""
    n = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    e = _matrix_entries(q0 / n, q1 / n, q2 / n, q3 / n)
    for k in range(9):
        A[k // 3, k % 3] = e[k]


@njit(cache=True, inline="always")
def _rounded_apart(ki, pi, ci, Ri, kj, pj, cj, Rj):
    """Whether two spheres or capsules (a capsule: radius p[0] about the segment of
    half-length p[1] along its third axis) are apart, by their segments' closest
    distance (no array made: most close pairs of a robot's limbs do not touch, and the
    narrow phase's small arrays cost more than its arithmetic). False for other kinds
    and where they may touch (a relative slack of 1e-9: the narrow phase decides)."""
    if not ((ki == SPHERE or ki == CAPSULE) and (kj == SPHERE or kj == CAPSULE)):
        return False
    hi = pi[1] if ki == CAPSULE else 0.0
    hj = pj[1] if kj == CAPSULE else 0.0
    a0x, a0y, a0z = ci[0] - hi * Ri[0, 2], ci[1] - hi * Ri[1, 2], ci[2] - hi * Ri[2, 2]
    a1x, a1y, a1z = ci[0] + hi * Ri[0, 2], ci[1] + hi * Ri[1, 2], ci[2] + hi * Ri[2, 2]
    b0x, b0y, b0z = cj[0] - hj * Rj[0, 2], cj[1] - hj * Rj[1, 2], cj[2] - hj * Rj[2, 2]
    b1x, b1y, b1z = cj[0] + hj * Rj[0, 2], cj[1] + hj * Rj[1, 2], cj[2] + hj * Rj[2, 2]
    s, t = _segment_closest(a0x, a0y, a0z, a1x, a1y, a1z, b0x, b0y, b0z, b1x, b1y, b1z)
    dx = (a0x + s * (a1x - a0x)) - (b0x + t * (b1x - b0x))
    dy = (a0y + s * (a1y - a0y)) - (b0y + t * (b1y - b0y))
    dz = (a0z + s * (a1z - a0z)) - (b0z + t * (b1z - b0z))
    reach = (pi[0] + pj[0]) * (1.0 + 1e-9)
    return dx * dx + dy * dy + dz * dz > reach * reach


@njit(cache=True)
def wrenches(x, index, mass, jinv, kind, params, verts, vstart, sbody, spos, srot, srad,
             pnormal, poffset, pairs, laws, capacity, margin):
    """(W (n_bodies, 4, 3), stored energy J): each body's elastic force (global),
    elastic moment (body axes), dissipative force, dissipative moment; the same sums as
    :meth:`BoundContacts.evaluate` (see :mod:`elements.contact.dynamics`)."""
    nb = index.shape[0]
    A = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    v = np.empty((nb, 3))
    w = np.empty((nb, 3))
    for b in range(nb):
        _quat_matrix(x[index[b, 3]], x[index[b, 4]], x[index[b, 5]], x[index[b, 6]], A[b])
        wb = np.empty(3)
        for i in range(3):
            r[b, i] = x[index[b, i]]
            v[b, i] = x[index[b, 7 + i]] / mass[b]
        for i in range(3):
            s = 0.0
            for j in range(3):
                s += jinv[b, i, j] * x[index[b, 10 + j]]
            wb[i] = s
        for i in range(3):
            w[b, i] = A[b, i, 0] * wb[0] + A[b, i, 1] * wb[1] + A[b, i, 2] * wb[2]
    ns = kind.shape[0]
    c = np.empty((ns, 3))
    R = np.empty((ns, 3, 3))
    for s in range(ns):
        b = sbody[s]
        for i in range(3):
            if b < 0:
                c[s, i] = spos[s, i]
                for j in range(3):
                    R[s, i, j] = srot[s, i, j]
            else:
                c[s, i] = r[b, i] + A[b, i, 0] * spos[s, 0] + A[b, i, 1] * spos[s, 1] + \
                    A[b, i, 2] * spos[s, 2]
                for j in range(3):
                    R[s, i, j] = A[b, i, 0] * srot[s, 0, j] + A[b, i, 1] * srot[s, 1, j] + \
                        A[b, i, 2] * srot[s, 2, j]
    W = np.zeros((nb, 4, 3))
    stored = 0.0
    P = np.empty((capacity, 3))
    N = np.empty((capacity, 3))
    D = np.empty(capacity)
    for p in range(pairs.shape[0]):
        i, j = pairs[p, 0], pairs[p, 1]
        # the bounding test (a plane: its half-space)
        if kind[i] == PLANE or kind[j] == PLANE:
            pl, o = (i, j) if kind[i] == PLANE else (j, i)
            d = pnormal[pl, 0] * c[o, 0] + pnormal[pl, 1] * c[o, 1] + \
                pnormal[pl, 2] * c[o, 2] - poffset[pl]
            if d > srad[o] + margin:
                continue
        else:
            dd = 0.0
            for k in range(3):
                dd += (c[i, k] - c[j, k]) ** 2
            if dd > (srad[i] + srad[j] + margin) ** 2:
                continue
            if _rounded_apart(kind[i], params[i], c[i], R[i], kind[j], params[j], c[j],
                              R[j]):
                continue
        n_pts = _contact_kernel(kind[i], params[i], verts[vstart[i]:vstart[i + 1]], c[i],
                                R[i], kind[j], params[j], verts[vstart[j]:vstart[j + 1]],
                                c[j], R[j], 0.0, P, N, D)
        kk, nn, lam, mu, vs = laws[p, 0], laws[p, 1], laws[p, 2], laws[p, 3], laws[p, 4]
        cr, cn, ws = laws[p, 5], laws[p, 6], laws[p, 7]
        ba, bb = sbody[i], sbody[j]
        wrel = np.zeros(3)            # B's angular velocity relative to A's (global)
        for k in range(3):
            if bb >= 0:
                wrel[k] += w[bb, k]
            if ba >= 0:
                wrel[k] -= w[ba, k]
        for q in range(n_pts):
            dep = D[q]
            if not dep > 0.0:
                continue
            pa = np.empty(3)
            pb = np.empty(3)
            va = np.zeros(3)
            vb = np.zeros(3)
            for k in range(3):
                pa[k] = P[q, k] + 0.5 * dep * N[q, k]
                pb[k] = P[q, k] - 0.5 * dep * N[q, k]
            if ba >= 0:
                ra = pa - r[ba]
                va[0] = v[ba, 0] + w[ba, 1] * ra[2] - w[ba, 2] * ra[1]
                va[1] = v[ba, 1] + w[ba, 2] * ra[0] - w[ba, 0] * ra[2]
                va[2] = v[ba, 2] + w[ba, 0] * ra[1] - w[ba, 1] * ra[0]
            if bb >= 0:
                rb = pb - r[bb]
                vb[0] = v[bb, 0] + w[bb, 1] * rb[2] - w[bb, 2] * rb[1]
                vb[1] = v[bb, 1] + w[bb, 2] * rb[0] - w[bb, 0] * rb[2]
                vb[2] = v[bb, 2] + w[bb, 0] * rb[1] - w[bb, 1] * rb[0]
            rel = vb - va
            nrel = N[q, 0] * rel[0] + N[q, 1] * rel[1] + N[q, 2] * rel[2]
            el = kk * dep ** nn
            tot = el * (1.0 - lam * nrel)
            if tot < 0.0:
                tot = 0.0
            vt = rel - nrel * N[q]
            if np.isfinite(vs):
                sp = np.sqrt(vt[0] ** 2 + vt[1] ** 2 + vt[2] ** 2 + vs * vs)
                ft = -(mu * tot / sp) * vt
            else:
                ft = np.zeros(3)
            stored += kk * dep ** (nn + 1.0) / (nn + 1.0)
            fel = el * N[q]
            fd = (tot - el) * N[q] + ft
            mr = np.zeros(3)          # rolling and torsional resistance, on B (global)
            if cr > 0.0 or cn > 0.0:
                wn_s = N[q, 0] * wrel[0] + N[q, 1] * wrel[1] + N[q, 2] * wrel[2]
                wn = wn_s * N[q]
                wt = wrel - wn
                if cr > 0.0:
                    mr -= (cr * tot / np.sqrt(wt[0] ** 2 + wt[1] ** 2 + wt[2] ** 2 +
                                              ws * ws)) * wt
                if cn > 0.0:
                    mr -= (cn * tot / np.sqrt(wn_s * wn_s + ws * ws)) * wn
            for body, pt, sign in ((ba, pa, -1.0), (bb, pb, 1.0)):
                if body < 0:
                    continue
                arm = pt - r[body]
                mel = np.empty(3)
                md = np.empty(3)
                mel[0] = arm[1] * fel[2] - arm[2] * fel[1]
                mel[1] = arm[2] * fel[0] - arm[0] * fel[2]
                mel[2] = arm[0] * fel[1] - arm[1] * fel[0]
                md[0] = arm[1] * fd[2] - arm[2] * fd[1] + mr[0]
                md[1] = arm[2] * fd[0] - arm[0] * fd[2] + mr[1]
                md[2] = arm[0] * fd[1] - arm[1] * fd[0] + mr[2]
                for k in range(3):
                    W[body, 0, k] += sign * fel[k]
                    W[body, 2, k] += sign * fd[k]
                    W[body, 1, k] += sign * (A[body, 0, k] * mel[0] + A[body, 1, k] * mel[1]
                                             + A[body, 2, k] * mel[2])
                    W[body, 3, k] += sign * (A[body, 0, k] * md[0] + A[body, 1, k] * md[1]
                                             + A[body, 2, k] * md[2])
    return W, stored


_f8, _i8 = types.float64, types.int64


@njit(types.void(_f8, _f8[::1], _i8[::1], _f8[::1], _f8[::1]), cache=True)
def wrench_source(t, x, ints, flts, out):
    """:func:`wrenches` at the state ``x`` from :meth:`Packed.flat`'s arrays, into
    ``out`` (n_bodies * 12: W of :func:`wrenches` row by row; the time t is not
    read)."""
    nb, ns, nv, npr, capacity = ints[0], ints[1], ints[2], ints[3], ints[4]
    i = 5
    index = ints[i:i + 13 * nb].reshape((nb, 13))
    i += 13 * nb
    kind = ints[i:i + ns]
    i += ns
    vstart = ints[i:i + ns + 1]
    i += ns + 1
    sbody = ints[i:i + ns]
    i += ns
    pairs = ints[i:i + 2 * npr].reshape((npr, 2))
    margin = flts[0]
    f = 1
    mass = flts[f:f + nb]
    f += nb
    jinv = flts[f:f + 9 * nb].reshape((nb, 3, 3))
    f += 9 * nb
    params = flts[f:f + 4 * ns].reshape((ns, 4))
    f += 4 * ns
    verts = flts[f:f + 3 * nv].reshape((nv, 3))
    f += 3 * nv
    spos = flts[f:f + 3 * ns].reshape((ns, 3))
    f += 3 * ns
    srot = flts[f:f + 9 * ns].reshape((ns, 3, 3))
    f += 9 * ns
    srad = flts[f:f + ns]
    f += ns
    pnormal = flts[f:f + 3 * ns].reshape((ns, 3))
    f += 3 * ns
    poffset = flts[f:f + ns]
    f += ns
    laws = flts[f:f + 8 * npr].reshape((npr, 8))
    W, _ = wrenches(x, index, mass, jinv, kind, params, verts, vstart, sbody, spos, srot,
                    srad, pnormal, poffset, pairs, laws, capacity, margin)
    for b in range(nb):
        for p in range(4):
            for k in range(3):
                out[12 * b + 3 * p + k] = W[b, p, k]
