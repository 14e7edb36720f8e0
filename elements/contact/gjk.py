"""The general convex-convex contact: GJK for the separation, EPA for the penetration.

:func:`convex_contact` works on any two posed shapes but planes, through their support
functions only (:func:`elements.contact.shapes.core_support_point`). Spheres and capsules
enter as their cores (a point, a segment) and their radii are added afterwards, so that
GJK and EPA only ever meet polytopes and the curved sides of cylinders: the distance of
two polytopes is found in finitely many steps, exactly up to rounding.

- GJK (Gilbert, Johnson, Keerthi 1988; the termination of van den Bergen 1999) walks a
  simplex of the Minkowski difference D = A - B towards the origin: the point v of D
  nearest the origin gives the distance |v| and the normal -v / |v|.
- Where the cores overlap (the origin inside D), EPA (van den Bergen 2001) grows a
  polytope inside D from GJK's last simplex until the face nearest the origin is on D's
  boundary: its distance is the penetration depth and its outward normal the normal.

Every routine is numba-compatible (float64 arrays, plain loops, fixed capacities) and
never divides by a length it did not check: touching, flat and degenerate cases end in a
direction chosen by rule, not in NaN.
"""

from __future__ import annotations

import numpy as np

from elements.contact.shapes import core_radius, core_support_point

__all__ = ["convex_contact", "gjk_distance", "EPA_MAX_VERTICES"]

GJK_MAX_ITERATIONS = 128
EPA_MAX_VERTICES = 256
_EPS_REL = 1e-12          # GJK's relative accuracy (on |v|^2)
_EPA_TOL = 1e-11          # EPA stops when the next support point is this near its face
_EPA_SLACK = 1e-10        # (relative to the size of D): a new face nearer the origin
                          # than the nearest one by more is a fold made by rounding
_TETRAHEDRON = ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2))   # EPA's first faces (outward)


def _dot(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b, out) -> None:
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


def _perpendicular(u, out) -> None:
    """A unit vector perpendicular to u (nonzero): the coordinate axis least aligned with
    u, made perpendicular (the rule of bondgraph.spatial.frame_from_axis)."""
    k = 0
    if abs(u[1]) < abs(u[k]):
        k = 1
    if abs(u[2]) < abs(u[k]):
        k = 2
    uu = _dot(u, u)
    for i in range(3):
        out[i] = (1.0 if i == k else 0.0) - u[k] * u[i] / uu
    n = np.sqrt(_dot(out, out))
    for i in range(3):
        out[i] /= n


def _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb, d,
             pa, pb, w, tmp) -> None:
    """The support point w = pa - pb of D = A - B (cores) in direction d."""
    core_support_point(kind_a, params_a, verts_a, ca, Ra, d, pa)
    for i in range(3):
        tmp[i] = -d[i]
    core_support_point(kind_b, params_b, verts_b, cb, Rb, tmp, pb)
    for i in range(3):
        w[i] = pa[i] - pb[i]


# -- the closest point of a simplex to the origin ---------------------------------------

def _segment(W, i, j, lam) -> float:
    """Closest point of segment W[i]W[j] to the origin: the barycentric weights into
    lam[i], lam[j] (others untouched); returns its squared distance."""
    e0 = W[j, 0] - W[i, 0]
    e1 = W[j, 1] - W[i, 1]
    e2 = W[j, 2] - W[i, 2]
    ee = e0 * e0 + e1 * e1 + e2 * e2
    t = 0.0
    if ee > 0.0:
        t = -(W[i, 0] * e0 + W[i, 1] * e1 + W[i, 2] * e2) / ee
        t = min(1.0, max(0.0, t))
    lam[i] = 1.0 - t
    lam[j] = t
    x0 = W[i, 0] + t * e0
    x1 = W[i, 1] + t * e1
    x2 = W[i, 2] + t * e2
    return x0 * x0 + x1 * x1 + x2 * x2


def _triangle(W, i, j, k, lam, best) -> float:
    """Closest point of triangle W[i]W[j]W[k] to the origin, weights into lam (i, j, k
    only; ``best`` (4,) is scratch); returns its squared distance. Inside the face by
    the projection, else the nearest of its three edges (also for a flat triangle)."""
    a0, a1, a2 = W[i, 0], W[i, 1], W[i, 2]
    b0, b1, b2 = W[j, 0] - a0, W[j, 1] - a1, W[j, 2] - a2
    c0, c1, c2 = W[k, 0] - a0, W[k, 1] - a1, W[k, 2] - a2
    bb = b0 * b0 + b1 * b1 + b2 * b2
    cc = c0 * c0 + c1 * c1 + c2 * c2
    bc = b0 * c0 + b1 * c1 + b2 * c2
    det = bb * cc - bc * bc
    if det > 1e-14 * bb * cc:
        ab = -(a0 * b0 + a1 * b1 + a2 * b2)
        ac = -(a0 * c0 + a1 * c1 + a2 * c2)
        s = (ab * cc - ac * bc) / det
        t = (ac * bb - ab * bc) / det
        if s > 0.0 and t > 0.0 and s + t < 1.0:
            lam[i] = 1.0 - s - t
            lam[j] = s
            lam[k] = t
            x0 = a0 + s * b0 + t * c0
            x1 = a1 + s * b1 + t * c1
            x2 = a2 + s * b2 + t * c2
            return x0 * x0 + x1 * x1 + x2 * x2
    dmin = np.inf
    for e in range(3):
        p, q = (i, j) if e == 0 else ((j, k) if e == 1 else (i, k))
        for m in range(4):
            best[m] = 0.0
        dd = _segment(W, p, q, best)
        if dd < dmin:
            dmin = dd
            lam[i] = best[i]
            lam[j] = best[j]
            lam[k] = best[k]
    return dmin


def _closest(W, n, lam, scratch) -> float:
    """Closest point of the simplex W[:n] to the origin: barycentric weights lam[:n];
    returns its squared distance, or -1.0 if the origin is inside a (non-flat)
    tetrahedron."""
    for m in range(4):
        lam[m] = 0.0
    if n == 1:
        lam[0] = 1.0
        return W[0, 0] ** 2 + W[0, 1] ** 2 + W[0, 2] ** 2
    # (the rows as int64, not constants: numba compiles a callee once per constant
    # argument, typed as a literal, besides its int64 form)
    if n == 2:
        return _segment(W, np.int64(0), np.int64(1), lam)
    if n == 3:
        return _triangle(W, np.int64(0), np.int64(1), np.int64(2), lam, scratch)
    # tetrahedron: the origin's barycentric coordinates (Cramer's rule)
    e = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            e[c, r] = W[r + 1, c] - W[0, c]          # columns: the three edges from W[0]
    det = (e[0, 0] * (e[1, 1] * e[2, 2] - e[1, 2] * e[2, 1])
           - e[0, 1] * (e[1, 0] * e[2, 2] - e[1, 2] * e[2, 0])
           + e[0, 2] * (e[1, 0] * e[2, 1] - e[1, 1] * e[2, 0]))
    size = 0.0
    for r in range(3):
        size = max(size, e[0, r] ** 2 + e[1, r] ** 2 + e[2, r] ** 2)
    if abs(det) > 1e-12 * size ** 1.5:
        rhs0, rhs1, rhs2 = -W[0, 0], -W[0, 1], -W[0, 2]
        x = np.empty(3)
        for c in range(3):           # replace column c by the right-hand side
            m00, m01, m02 = e[0, 0], e[0, 1], e[0, 2]
            m10, m11, m12 = e[1, 0], e[1, 1], e[1, 2]
            m20, m21, m22 = e[2, 0], e[2, 1], e[2, 2]
            if c == 0:
                m00, m10, m20 = rhs0, rhs1, rhs2
            elif c == 1:
                m01, m11, m21 = rhs0, rhs1, rhs2
            else:
                m02, m12, m22 = rhs0, rhs1, rhs2
            x[c] = (m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20)
                    + m02 * (m10 * m21 - m11 * m20)) / det
        if x[0] >= 0.0 and x[1] >= 0.0 and x[2] >= 0.0 and x[0] + x[1] + x[2] <= 1.0:
            return -1.0
    # outside (or flat): the nearest of the four faces
    trial = np.zeros(4)
    dmin = np.inf
    for f in range(4):
        i, j, k = (1, 2, 3) if f == 0 else ((0, 2, 3) if f == 1 else
                                            ((0, 1, 3) if f == 2 else (0, 1, 2)))
        for m in range(4):
            trial[m] = 0.0
        dd = _triangle(W, i, j, k, trial, scratch)
        if dd < dmin:
            dmin = dd
            for m in range(4):
                lam[m] = trial[m]
    return dmin


def _compact(W, PA, PB, n, lam) -> int:
    """Keep the vertices of positive weight (the smallest simplex holding the closest
    point), in order; returns their number."""
    k = 0
    for i in range(n):
        if lam[i] > 0.0:
            for c in range(3):
                W[k, c] = W[i, c]
                PA[k, c] = PA[i, c]
                PB[k, c] = PB[i, c]
            lam[k] = lam[i]
            k += 1
    return k


def gjk_distance(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb,
                 stop_beyond, W, PA, PB, lam, witness):
    """GJK on the cores of A and B. Fills the simplex W, PA, PB (4, 3) and its weights
    lam (4,), ``witness`` (6,) with the closest points (pa, pb) of the cores.

    Returns (n, dist): the simplex size and the cores' distance (m); dist = -1.0 when
    they overlap or touch (within GJK's accuracy: EPA must decide), and dist = inf when
    a separating direction proved them farther apart than ``stop_beyond`` (m).
    """
    d = np.empty(3)
    pa = np.empty(3)
    pb = np.empty(3)
    w = np.empty(3)
    tmp = np.empty(3)
    scratch = np.zeros(4)
    for i in range(3):
        d[i] = cb[i] - ca[i]
    if _dot(d, d) == 0.0:
        d[0] = 1.0
    # the simplex starts with one point of D (the support away from B's centre)
    _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb, d,
             pa, pb, w, tmp)
    v = np.empty(3)
    for c in range(3):
        W[0, c] = w[c]
        PA[0, c] = pa[c]
        PB[0, c] = pb[c]
        v[c] = w[c]
    n = 1
    lam[0] = 1.0
    scale2 = _dot(w, w)
    for it in range(GJK_MAX_ITERATIONS):
        vv = _dot(v, v)
        if vv <= 1e-26 * max(scale2, 1e-300):
            return n, -1.0                       # the origin on the simplex: touching
        for i in range(3):
            d[i] = -v[i]
        _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb,
                 d, pa, pb, w, tmp)
        scale2 = max(scale2, _dot(w, w))
        vw = _dot(v, w)
        if vw > 0.0 and vw * vw > vv * stop_beyond * stop_beyond:
            return n, np.inf                     # farther apart than asked about
        if vv - vw <= _EPS_REL * vv:
            break                                # w no nearer than v: converged
        duplicate = False
        for k in range(n):
            if (W[k, 0] - w[0]) ** 2 + (W[k, 1] - w[1]) ** 2 + (W[k, 2] - w[2]) ** 2 \
                    <= 1e-28 * scale2:
                duplicate = True
        if duplicate:
            break
        for c in range(3):
            W[n, c] = w[c]
            PA[n, c] = pa[c]
            PB[n, c] = pb[c]
        n += 1
        dist2 = _closest(W, n, lam, scratch)
        if dist2 < 0.0:
            return n, -1.0                       # the origin inside the tetrahedron
        n = _compact(W, PA, PB, n, lam)
        for c in range(3):
            v[c] = 0.0
            for k in range(n):
                v[c] += lam[k] * W[k, c]
        if _dot(v, v) >= vv:                     # no progress (rounding): converged
            break
    for c in range(3):
        witness[c] = 0.0
        witness[3 + c] = 0.0
        for k in range(n):
            witness[c] += lam[k] * PA[k, c]
            witness[3 + c] += lam[k] * PB[k, c]
    dist = np.sqrt(_dot(v, v))
    if dist <= 1e-13 * np.sqrt(scale2):
        return n, -1.0
    return n, dist


# -- EPA ---------------------------------------------------------------------------------

def _face(V, F, Fn, Fd, f, i, j, k) -> bool:
    """Set face f = (i, j, k) (counter-clockwise seen from outside); False if it has no
    area (its normal then undefined)."""
    F[f, 0] = i
    F[f, 1] = j
    F[f, 2] = k
    u0, u1, u2 = V[j, 0] - V[i, 0], V[j, 1] - V[i, 1], V[j, 2] - V[i, 2]
    w0, w1, w2 = V[k, 0] - V[i, 0], V[k, 1] - V[i, 1], V[k, 2] - V[i, 2]
    n0 = u1 * w2 - u2 * w1
    n1 = u2 * w0 - u0 * w2
    n2 = u0 * w1 - u1 * w0
    nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if not nn > 0.0:
        Fn[f, 0] = 0.0
        Fn[f, 1] = 0.0
        Fn[f, 2] = 1.0
        Fd[f] = np.inf
        return False
    Fn[f, 0] = n0 / nn
    Fn[f, 1] = n1 / nn
    Fn[f, 2] = n2 / nn
    Fd[f] = Fn[f, 0] * V[i, 0] + Fn[f, 1] * V[i, 1] + Fn[f, 2] * V[i, 2]
    return True


def _flat_normal(W, n, ca, cb, out) -> None:
    """A normal for a flat Minkowski difference (dimension n - 1 < 3) holding the origin:
    any direction off its span (point: towards B's centre, else z; segment: a
    perpendicular; triangle: its normal), signed towards B's centre."""
    u = np.empty(3)
    e = np.empty(3)
    if n >= 3:
        for c in range(3):
            u[c] = W[1, c] - W[0, c]
            e[c] = W[2, c] - W[0, c]
        _cross(u, e, out)
    elif n == 2:
        for c in range(3):
            u[c] = W[1, c] - W[0, c]
        if _dot(u, u) > 0.0:
            _perpendicular(u, out)
        else:
            out[0], out[1], out[2] = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
    else:
        out[0], out[1], out[2] = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
    nn = np.sqrt(_dot(out, out))
    if not nn > 0.0:
        out[0], out[1], out[2] = 0.0, 0.0, 1.0
        nn = 1.0
    sign = 1.0 if (cb[0] - ca[0]) * out[0] + (cb[1] - ca[1]) * out[1] + \
        (cb[2] - ca[2]) * out[2] >= 0.0 else -1.0
    for c in range(3):
        out[c] *= sign / nn


def epa(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb, W, PA, PB,
        n, result):
    """EPA from GJK's simplex W, PA, PB (n points, the origin in or on it). Fills
    ``result`` (10,): the penetration depth of the cores (m, >= 0 up to rounding), the
    normal (3; from A into B), A's and B's deepest points (3 each; global, m)."""
    MAXV = EPA_MAX_VERTICES
    MAXF = 8 * MAXV
    V = np.empty((MAXV, 3))
    VA = np.empty((MAXV, 3))
    VB = np.empty((MAXV, 3))
    F = np.zeros((MAXF, 3), dtype=np.int64)
    Fn = np.zeros((MAXF, 3))
    Fd = np.full(MAXF, np.inf)
    alive = np.zeros(MAXF, dtype=np.bool_)
    d = np.empty(3)
    pa = np.empty(3)
    pb = np.empty(3)
    w = np.empty(3)
    tmp = np.empty(3)
    u = np.empty(3)
    e1 = np.empty(3)
    e2 = np.empty(3)
    g = np.empty(3)
    bw = np.empty(3)
    bpa = np.empty(3)
    bpb = np.empty(3)
    nv = n
    for k in range(n):
        for c in range(3):
            V[k, c] = W[k, c]
            VA[k, c] = PA[k, c]
            VB[k, c] = PB[k, c]
    scale = 0.0
    for k in range(nv):
        scale = max(scale, np.sqrt(_dot(V[k], V[k])))
    # grow the simplex to a tetrahedron with volume; a flat D ends here (depth 0)
    while nv < 4:
        found = False
        if nv == 1:
            for t in range(6):
                for c in range(3):
                    d[c] = 0.0
                d[t // 2] = 1.0 if t % 2 == 0 else -1.0
                _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b,
                         cb, Rb, d, pa, pb, w, tmp)
                gap = np.sqrt((w[0] - V[0, 0]) ** 2 + (w[1] - V[0, 1]) ** 2 +
                              (w[2] - V[0, 2]) ** 2)
                if gap > 1e-10 * max(scale, 1e-300):
                    found = True
                    break
        elif nv == 2:
            for c in range(3):
                u[c] = V[1, c] - V[0, c]
            uu = np.sqrt(_dot(u, u))
            _perpendicular(u, e1)
            _cross(u, e1, e2)
            for c in range(3):
                e2[c] /= uu
            for t in range(6):                   # six directions around the segment
                ang = t * np.pi / 3.0
                for c in range(3):
                    d[c] = np.cos(ang) * e1[c] + np.sin(ang) * e2[c]
                _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b,
                         cb, Rb, d, pa, pb, w, tmp)
                for c in range(3):
                    tmp[c] = w[c] - V[0, c]
                _cross(tmp, u, g)
                if np.sqrt(_dot(g, g)) / uu > 1e-10 * max(scale, 1e-300):
                    found = True
                    break
        else:
            for c in range(3):
                u[c] = V[1, c] - V[0, c]
                tmp[c] = V[2, c] - V[0, c]
            _cross(u, tmp, e1)
            nn = np.sqrt(_dot(e1, e1))
            best = 0.0
            for s in range(2):
                for c in range(3):
                    d[c] = e1[c] if s == 0 else -e1[c]
                _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b,
                         cb, Rb, d, pa, pb, w, tmp)
                h = abs((w[0] - V[0, 0]) * e1[0] + (w[1] - V[0, 1]) * e1[1] +
                        (w[2] - V[0, 2]) * e1[2]) / max(nn, 1e-300)
                if h > best:
                    best = h
                    for c in range(3):
                        bw[c] = w[c]
                        bpa[c] = pa[c]
                        bpb[c] = pb[c]
            if best > 1e-10 * max(scale, 1e-300):
                for c in range(3):
                    w[c] = bw[c]
                    pa[c] = bpa[c]
                    pb[c] = bpb[c]
                found = True
        if not found:
            _flat_normal(V, nv, ca, cb, d)
            result[0] = 0.0
            for c in range(3):
                result[1 + c] = d[c]
                result[4 + c] = 0.0
                result[7 + c] = 0.0
                for k in range(nv):        # (any point of D's flat span: its mean)
                    result[4 + c] += VA[k, c] / nv
                    result[7 + c] += VB[k, c] / nv
            return
        for c in range(3):
            V[nv, c] = w[c]
            VA[nv, c] = pa[c]
            VB[nv, c] = pb[c]
        scale = max(scale, np.sqrt(_dot(w, w)))
        nv += 1
    # the tetrahedron's four faces, wound outwards
    for c in range(3):
        u[c] = V[1, c] - V[0, c]
        e1[c] = V[2, c] - V[0, c]
        e2[c] = V[3, c] - V[0, c]
    _cross(u, e1, d)
    if _dot(d, e2) > 0.0:                         # V3 above (0, 1, 2): swap 1 and 2
        for c in range(3):
            V[1, c], V[2, c] = V[2, c], V[1, c]
            VA[1, c], VA[2, c] = VA[2, c], VA[1, c]
            VB[1, c], VB[2, c] = VB[2, c], VB[1, c]
    for f in range(4):          # (from a table, not constants: see _closest)
        _face(V, F, Fn, Fd, f, _TETRAHEDRON[f][0], _TETRAHEDRON[f][1],
              _TETRAHEDRON[f][2])
    nf = 4
    # adj[f, m]: the face across edge m of face f (the edge F[f, m] -> F[f, m + 1])
    adj = np.full((MAXF, 3), -1, dtype=np.int64)
    for f in range(4):
        alive[f] = True
        for m in range(3):
            a, b = F[f, m], F[f, (m + 1) % 3]
            for g in range(4):
                for k in range(3):
                    if F[g, k] == b and F[g, (k + 1) % 3] == a:
                        adj[f, m] = g
    horizon = np.empty((MAXF, 2), dtype=np.int64)     # (alive face, its edge)
    stack = np.empty((4 * MAXF, 2), dtype=np.int64)
    fresh = np.empty(MAXF, dtype=np.int64)
    best = 0
    for it in range(4 * MAXV):
        best = -1
        dmin = np.inf
        for f in range(nf):
            if alive[f] and Fd[f] < dmin:
                dmin = Fd[f]
                best = f
        if best < 0:
            break
        for c in range(3):
            d[c] = Fn[best, c]
        _support(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb, d,
                 pa, pb, w, tmp)
        scale = max(scale, np.sqrt(_dot(w, w)))
        if _dot(w, d) - dmin <= _EPA_TOL * scale or nv >= MAXV:
            break                                 # the face is on D's boundary
        # flood the faces the new point sees, from the nearest face; the alive faces
        # bordering them give the horizon (a connected hole keeps the polytope whole)
        alive[best] = False
        ns = 0
        for m in range(3):
            stack[ns, 0] = adj[best, m]
            stack[ns, 1] = best
            ns += 1
        nh = 0
        while ns > 0:
            ns -= 1
            f, came = stack[ns, 0], stack[ns, 1]
            if not alive[f]:
                continue
            if Fn[f, 0] * (w[0] - V[F[f, 0], 0]) + Fn[f, 1] * (w[1] - V[F[f, 0], 1]) + \
                    Fn[f, 2] * (w[2] - V[F[f, 0], 2]) > 0.0:
                alive[f] = False
                for m in range(3):
                    if adj[f, m] != came and ns < stack.shape[0]:
                        stack[ns, 0] = adj[f, m]
                        stack[ns, 1] = f
                        ns += 1
            else:
                for m in range(3):
                    if adj[f, m] == came and nh < MAXF:
                        horizon[nh, 0] = f
                        horizon[nh, 1] = m
                        nh += 1
        if nh < 3 or nf + nh > MAXF:
            break                                 # (capacity: keep the nearest face)
        for c in range(3):
            V[nv, c] = w[c]
            VA[nv, c] = pa[c]
            VB[nv, c] = pb[c]
        for h in range(nh):          # a face (b, a, new) on each horizon edge a -> b
            g, k = horizon[h, 0], horizon[h, 1]
            _face(V, F, Fn, Fd, nf + h, F[g, (k + 1) % 3], F[g, k], nv)
            alive[nf + h] = True
            adj[nf + h, 0] = g
            adj[g, k] = nf + h
            fresh[h] = nf + h
        closed = True
        for h in range(nh):
            if Fd[fresh[h]] < dmin - _EPA_SLACK * scale:
                closed = False       # (rounding folded a face inwards: stop here)
        for h in range(nh):          # neighbours among the new faces: (b, a, p) meets
            f = fresh[h]             # (a, ., p) across a -> p
            adj[f, 1] = -1
            for h2 in range(nh):
                if F[fresh[h2], 0] == F[f, 1]:
                    adj[f, 1] = fresh[h2]
                    adj[fresh[h2], 2] = f
            if adj[f, 1] < 0:
                closed = False
        nf += nh
        nv += 1
        if not closed:               # (the nearest face found so far is the answer)
            break
    # the result: the nearest face, and where the origin's projection falls on it. A
    # flat side of D is cut into coplanar triangles: take the one the projection falls
    # in, else the nearest face's nearest point.
    f = best
    dmin = Fd[best]
    lam = np.zeros(4)
    for g in range(-1, nf):
        cand = best if g < 0 else g
        if g >= 0 and (not alive[g] or g == best or Fd[g] - dmin > 1e-9 * scale or
                       Fn[g, 0] * Fn[best, 0] + Fn[g, 1] * Fn[best, 1] +
                       Fn[g, 2] * Fn[best, 2] < 1.0 - 1e-12):
            continue
        if _projection(V, F, Fn, Fd, cand, lam):
            f = cand
            break
    else:
        T = np.empty((3, 3))
        for c in range(3):      # the face shifted so the origin's projection is the origin
            for m in range(3):
                T[m, c] = V[F[f, m], c] - Fd[f] * Fn[f, c]
        _triangle(T, np.int64(0), np.int64(1), np.int64(2), lam, np.zeros(4))
    i, j, k = F[f, 0], F[f, 1], F[f, 2]
    result[0] = Fd[f]
    for c in range(3):
        result[1 + c] = Fn[f, c]
        result[4 + c] = lam[0] * VA[i, c] + lam[1] * VA[j, c] + lam[2] * VA[k, c]
        result[7 + c] = lam[0] * VB[i, c] + lam[1] * VB[j, c] + lam[2] * VB[k, c]


def _projection(V, F, Fn, Fd, f, lam) -> bool:
    """The barycentric weights (into lam[:3]) of the origin's projection on face f's
    plane; whether they put it inside the triangle (to rounding)."""
    i, j, k = F[f, 0], F[f, 1], F[f, 2]
    b0, b1, b2 = V[j, 0] - V[i, 0], V[j, 1] - V[i, 1], V[j, 2] - V[i, 2]
    c0, c1, c2 = V[k, 0] - V[i, 0], V[k, 1] - V[i, 1], V[k, 2] - V[i, 2]
    a0 = V[i, 0] - Fd[f] * Fn[f, 0]
    a1 = V[i, 1] - Fd[f] * Fn[f, 1]
    a2 = V[i, 2] - Fd[f] * Fn[f, 2]
    bb = b0 * b0 + b1 * b1 + b2 * b2
    cc = c0 * c0 + c1 * c1 + c2 * c2
    bc = b0 * c0 + b1 * c1 + b2 * c2
    det = bb * cc - bc * bc
    if not det > 1e-14 * bb * cc:
        return False
    ab = -(a0 * b0 + a1 * b1 + a2 * b2)
    ac = -(a0 * c0 + a1 * c1 + a2 * c2)
    s = (ab * cc - ac * bc) / det
    t = (ac * bb - ab * bc) / det
    tol = 1e-9
    if s < -tol or t < -tol or s + t > 1.0 + tol:
        return False
    lam[0] = 1.0 - s - t
    lam[1] = s
    lam[2] = t
    return True


def convex_contact(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb,
                   margin, out_p, out_n, out_d, at) -> int:
    """The contact of two convex shapes (not planes) by GJK and EPA: one point.

    Writes row ``at`` of out_p (point, the midpoint of the two surfaces' deepest points),
    out_n (unit normal from A into B), out_d (depth, m; negative: the gap) and returns 1,
    or returns 0 when the gap is larger than ``margin`` (m).
    """
    ra = core_radius(kind_a, params_a)
    rb = core_radius(kind_b, params_b)
    W = np.zeros((4, 3))
    PA = np.zeros((4, 3))
    PB = np.zeros((4, 3))
    lam = np.zeros(4)
    witness = np.zeros(6)
    n, dist = gjk_distance(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b,
                           cb, Rb, ra + rb + margin, W, PA, PB, lam, witness)
    nrm = np.empty(3)
    if dist == np.inf:
        return 0
    if dist >= 0.0:
        depth = ra + rb - dist
        if depth < -margin:
            return 0
        for c in range(3):
            nrm[c] = (witness[3 + c] - witness[c]) / dist
    else:
        result = np.zeros(10)
        epa(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb, W, PA,
            PB, n, result)
        depth = result[0] + ra + rb
        for c in range(3):
            nrm[c] = result[1 + c]
            witness[c] = result[4 + c]
            witness[3 + c] = result[7 + c]
        if depth < -margin:
            return 0
    for c in range(3):
        # A's deepest point pa + ra n and B's pb - rb n; their midpoint
        out_p[at, c] = 0.5 * (witness[c] + witness[3 + c]) + 0.5 * (ra - rb) * nrm[c]
        out_n[at, c] = nrm[c]
    out_d[at] = depth
    return 1
