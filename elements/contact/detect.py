"""The narrow phase: the contact points of two posed shapes (docs/contact.md).

:func:`collide` gives the :class:`Contacts` of shapes A and B with their bodies at given
poses: for each point, the point (global, m: the midpoint of the two surfaces' deepest
points), the unit normal (global, from A into B: the direction B must move to separate)
and the depth (m; > 0 overlapping, <= 0 a gap up to ``margin``). A's deepest point is
``point + depth / 2 * normal`` and B's ``point - depth / 2 * normal``.

Closed forms (exact up to rounding):

- a plane against every shape, with the manifolds a resting shape needs: a box's corners
  below the plane (4 for a face, up to 8), a capsule's two end spheres, a cylinder's
  lowest point on each end circle (2 when lying on its side) plus three more points of
  its lower cap's rim (4 rim points when standing on a cap), a mesh's vertices; a
  strictly convex shape (an ellipsoid) its support point along the plane's inward
  normal;
- sphere-sphere, sphere-capsule, capsule-capsule: the closest points of their segments
  (a sphere's is a point), parallel segments meeting in the middle of their overlap;
- sphere-box.

Every other pair (box-box, box-capsule, cylinder-, mesh- and ellipsoid-anything) goes to GJK
and EPA (:func:`elements.contact.gjk.convex_contact`), one point; for box-box, where that
point's normal is a face normal, the other box's facing face is clipped by the sides of
that face into a manifold of up to 8 points (:func:`box_box_manifold`). Two planes never
touch (refused).

The kernels (``*_contacts``, :func:`contact_kernel`) are numba-compatible: they write up
to :func:`capacity` rows of the caller's arrays and return how many they wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError

from elements.contact.gjk import convex_contact
from elements.contact.shapes import (
    BOX, CAPSULE, CYLINDER, MESH, PLANE, SPHERE, Shape, support_point,
)

__all__ = ["Contacts", "collide", "contact_kernel", "capacity", "segment_closest",
           "segment_closest_xyz",
           "plane_contacts", "capsule_contacts", "sphere_box_contacts", "box_box_manifold",
           "FACE_ALIGNED"]


def _emit(out_p, out_n, out_d, at, xb, n, depth) -> None:
    """Row ``at``: the point of B ``xb`` moved half the depth along the normal."""
    for c in range(3):
        out_p[at, c] = xb[c] + 0.5 * depth * n[c]
        out_n[at, c] = n[c]
    out_d[at] = depth


def plane_contacts(c_plane, R_plane, kind, params, verts, c, R, margin, out_p, out_n,
                   out_d) -> int:
    """Plane A (centre ``c_plane``, normal ``R_plane[:, 2]``) against shape B: the points
    of B below the plane (or within ``margin`` above it), normal = the plane's."""
    n = np.empty(3)
    for i in range(3):
        n[i] = R_plane[i, 2]
    off = n[0] * c_plane[0] + n[1] * c_plane[1] + n[2] * c_plane[2]
    x = np.empty(3)
    k = np.int64(0)          # (a literal 0 where the last branch emits: _emit compiled twice)
    if kind == SPHERE or kind == CAPSULE:
        r = params[0]
        ends = 1 if (kind == SPHERE or params[1] == 0.0) else 2
        for e in range(ends):
            s = 0.0 if ends == 1 else (params[1] if e == 0 else -params[1])
            for i in range(3):
                x[i] = c[i] + s * R[i, 2] - r * n[i]
            depth = off - (n[0] * x[0] + n[1] * x[1] + n[2] * x[2])
            if depth >= -margin:
                _emit(out_p, out_n, out_d, k, x, n, depth)
                k += 1
    elif kind == BOX or kind == MESH:
        count = 8 if kind == BOX else verts.shape[0]
        for v in range(count):
            if kind == BOX:
                l0 = params[0] * (1.0 if v & 1 else -1.0)
                l1 = params[1] * (1.0 if v & 2 else -1.0)
                l2 = params[2] * (1.0 if v & 4 else -1.0)
            else:
                l0, l1, l2 = verts[v, 0], verts[v, 1], verts[v, 2]
            for i in range(3):
                x[i] = c[i] + R[i, 0] * l0 + R[i, 1] * l1 + R[i, 2] * l2
            depth = off - (n[0] * x[0] + n[1] * x[1] + n[2] * x[2])
            if depth >= -margin:
                _emit(out_p, out_n, out_d, k, x, n, depth)
                k += 1
    elif kind == CYLINDER:
        r, h = params[0], params[1]
        s = n[0] * R[0, 2] + n[1] * R[1, 2] + n[2] * R[2, 2]     # cos(tilt)
        u = np.empty(3)
        for i in range(3):
            u[i] = n[i] - s * R[i, 2]                  # "up" across the axis
        uu = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
        if uu > 1e-12:
            for i in range(3):
                u[i] /= uu
        else:                                          # standing upright: the shape's x
            for i in range(3):
                u[i] = R[i, 0]
        vv = np.empty(3)
        vv[0] = R[1, 2] * u[2] - R[2, 2] * u[1]
        vv[1] = R[2, 2] * u[0] - R[0, 2] * u[2]
        vv[2] = R[0, 2] * u[1] - R[1, 2] * u[0]
        low = -h if s >= 0.0 else h                    # the lower cap's centre, on the axis
        # the lowest points of the lower and the upper end circle, then three more
        # points of the lower rim at 90, 180 and 270 degrees
        for p in range(5):
            z = low if p != 1 else -low
            cu, cv = -1.0, 0.0
            if p == 2:
                cu, cv = 0.0, -1.0
            elif p == 3:
                cu, cv = 1.0, 0.0
            elif p == 4:
                cu, cv = 0.0, 1.0
            for i in range(3):
                x[i] = c[i] + z * R[i, 2] + r * (cu * u[i] + cv * vv[i])
            depth = off - (n[0] * x[0] + n[1] * x[1] + n[2] * x[2])
            if depth >= -margin:
                _emit(out_p, out_n, out_d, k, x, n, depth)
                k += 1
    else:
        # a strictly convex shape (an ellipsoid): its one deepest point, the support
        # point along -n
        down = np.empty(3)
        for i in range(3):
            down[i] = -n[i]
        support_point(kind, params, verts, c, R, down, x)
        depth = off - (n[0] * x[0] + n[1] * x[1] + n[2] * x[2])
        if depth >= -margin:
            _emit(out_p, out_n, out_d, k, x, n, depth)
            k += 1
    return k


def segment_closest(p1, q1, p2, q2):
    """The parameters (s, t) in [0, 1] of the closest points p1 + s (q1 - p1) and
    p2 + t (q2 - p2) of two segments (Ericson, Real-Time Collision Detection, 5.1.9). A
    segment may be a point. Parallel segments take the middle of their overlap (the
    same pair whichever segment comes first)."""
    return segment_closest_xyz(p1[0], p1[1], p1[2], q1[0], q1[1], q1[2],
                               p2[0], p2[1], p2[2], q2[0], q2[1], q2[2])


def segment_closest_xyz(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """:func:`segment_closest` of points given by their coordinates (no array: what a
    compiled caller uses where it must not allocate)."""
    d1x, d1y, d1z = q1x - p1x, q1y - p1y, q1z - p1z
    d2x, d2y, d2z = q2x - p2x, q2y - p2y, q2z - p2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= 0.0 and e <= 0.0:
        return 0.0, 0.0
    if a <= 0.0:
        return 0.0, min(1.0, max(0.0, f / e))
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= 0.0:
        return min(1.0, max(0.0, -c / a)), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    if denom > 1e-12 * a * e:
        s = min(1.0, max(0.0, (b * f - c * e) / denom))
    else:                       # parallel: the middle of the overlap along segment 1
        s0 = -c / a
        s1 = s0 + b / a
        lo = max(0.0, min(s0, s1))
        hi = min(1.0, max(s0, s1))
        s = min(1.0, max(0.0, 0.5 * (lo + hi)))
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = min(1.0, max(0.0, -c / a))
    elif t > 1.0:
        t = 1.0
        s = min(1.0, max(0.0, (b - c) / a))
    return s, t


def capsule_contacts(a0, a1, ra, b0, b1, rb, ca, cb, margin, out_p, out_n, out_d) -> int:
    """Capsule A (segment a0-a1, radius ra) against capsule B; a sphere is a capsule
    whose segment is a point. The normal joins the segments' closest points; where these
    are inside both segments of crossing axes it is computed as the axes' common
    perpendicular (exact where the axes meet). Where the segments meet otherwise (no
    direction between the closest points) it is a perpendicular of the longer axis, else
    the line of the centres ``ca``-``cb``, else z, signed towards B's centre."""
    s, t = segment_closest(a0, a1, b0, b1)
    pa = np.empty(3)
    pb = np.empty(3)
    n = np.empty(3)
    da = np.empty(3)
    db = np.empty(3)
    for i in range(3):
        da[i] = a1[i] - a0[i]
        db[i] = b1[i] - b0[i]
        pa[i] = a0[i] + s * da[i]
        pb[i] = b0[i] + t * db[i]
        n[i] = pb[i] - pa[i]
    dist = np.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
    x = np.empty(3)                     # the common perpendicular of the two axes
    x[0] = da[1] * db[2] - da[2] * db[1]
    x[1] = da[2] * db[0] - da[0] * db[2]
    x[2] = da[0] * db[1] - da[1] * db[0]
    xx = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    aa = da[0] * da[0] + da[1] * da[1] + da[2] * da[2]
    bb = db[0] * db[0] + db[1] * db[1] + db[2] * db[2]
    if 0.0 < s < 1.0 and 0.0 < t < 1.0 and xx * xx > 1e-12 * aa * bb:
        # closest points inside both segments of crossing axes: the line between them
        # is the common perpendicular, exact even where they (nearly) meet
        sign = n[0] * x[0] + n[1] * x[1] + n[2] * x[2]
        if sign == 0.0:
            sign = x[0] * (cb[0] - ca[0]) + x[1] * (cb[1] - ca[1]) + x[2] * (cb[2] - ca[2])
        for i in range(3):
            n[i] = x[i] / xx if sign >= 0.0 else -x[i] / xx
    elif dist > 0.0:
        for i in range(3):
            n[i] /= dist
    else:
        ax = da
        if bb > aa:
            ax = db
        axx = max(aa, bb)
        if axx > 0.0:          # a perpendicular of the axis (frame_from_axis's rule)
            k = 0
            if abs(ax[1]) < abs(ax[k]):
                k = 1
            if abs(ax[2]) < abs(ax[k]):
                k = 2
            for i in range(3):
                n[i] = (1.0 if i == k else 0.0) - ax[k] * ax[i] / axx
        else:
            for i in range(3):
                n[i] = cb[i] - ca[i]
        nn = np.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
        if not nn > 0.0:
            n[0], n[1], n[2] = 0.0, 0.0, 1.0
            nn = 1.0
        sign = 1.0 if (n[0] * (cb[0] - ca[0]) + n[1] * (cb[1] - ca[1]) +
                       n[2] * (cb[2] - ca[2])) >= 0.0 else -1.0
        for i in range(3):
            n[i] *= sign / nn
    depth = ra + rb - dist
    if depth < -margin:
        return 0
    for i in range(3):
        out_p[0, i] = 0.5 * (pa[i] + pb[i]) + 0.5 * (ra - rb) * n[i]
        out_n[0, i] = n[i]
    out_d[0] = depth
    return 1


def sphere_box_contacts(cb, Rb, h, cs, r, margin, out_p, out_n, out_d) -> int:
    """Box A (centre ``cb``, axes ``Rb``, half extents ``h``) against sphere B (centre
    ``cs``, radius ``r``). A centre inside the box leaves through the nearest face."""
    p = np.empty(3)
    q = np.empty(3)
    for i in range(3):          # the sphere's centre in the box's frame, and clamped
        p[i] = Rb[0, i] * (cs[0] - cb[0]) + Rb[1, i] * (cs[1] - cb[1]) + \
            Rb[2, i] * (cs[2] - cb[2])
        q[i] = min(h[i], max(-h[i], p[i]))
    nl = np.empty(3)
    for i in range(3):
        nl[i] = p[i] - q[i]
    dist = np.sqrt(nl[0] * nl[0] + nl[1] * nl[1] + nl[2] * nl[2])
    if dist > 0.0:              # outside: the nearest point of the box
        for i in range(3):
            nl[i] /= dist
        depth = r - dist
    else:                       # inside: out through the nearest face
        k = 0
        for i in range(1, 3):
            if h[i] - abs(p[i]) < h[k] - abs(p[k]):
                k = i
        for i in range(3):
            nl[i] = 0.0
        nl[k] = 1.0 if p[k] >= 0.0 else -1.0
        depth = r + h[k] - abs(p[k])
        q[k] = nl[k] * h[k]
    if depth < -margin:
        return 0
    for i in range(3):
        n = Rb[i, 0] * nl[0] + Rb[i, 1] * nl[1] + Rb[i, 2] * nl[2]
        xa = cb[i] + Rb[i, 0] * q[0] + Rb[i, 1] * q[1] + Rb[i, 2] * q[2]
        out_p[0, i] = 0.5 * (xa + cs[i] - r * n)
        out_n[0, i] = n
    out_d[0] = depth
    return 1


def _flip(out_n, k) -> None:
    for j in range(k):
        for i in range(3):
            out_n[j, i] = -out_n[j, i]


def contact_kernel(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b, cb, Rb,
                   margin, out_p, out_n, out_d) -> int:
    """The contacts of posed shapes A and B into out_p (m, 3), out_n (m, 3), out_d (m,)
    (m >= :func:`capacity`); returns their number, or -1 for two planes."""
    if kind_a > kind_b:
        # the closed forms take the lower kind first: compute B against A and flip
        k = contact_kernel(kind_b, params_b, verts_b, cb, Rb, kind_a, params_a, verts_a,
                           ca, Ra, margin, out_p, out_n, out_d)
        if k > 0:
            _flip(out_n, k)
        return k
    if kind_a == PLANE:
        if kind_b == PLANE:
            return -1
        return plane_contacts(ca, Ra, kind_b, params_b, verts_b, cb, Rb, margin,
                              out_p, out_n, out_d)
    if (kind_a == SPHERE or kind_a == CAPSULE) and (kind_b == SPHERE or kind_b == CAPSULE):
        a0 = np.empty(3)
        a1 = np.empty(3)
        b0 = np.empty(3)
        b1 = np.empty(3)
        for i in range(3):
            a0[i] = ca[i] - params_a[1] * Ra[i, 2] if kind_a == CAPSULE else ca[i]
            a1[i] = ca[i] + params_a[1] * Ra[i, 2] if kind_a == CAPSULE else ca[i]
            b0[i] = cb[i] - params_b[1] * Rb[i, 2] if kind_b == CAPSULE else cb[i]
            b1[i] = cb[i] + params_b[1] * Rb[i, 2] if kind_b == CAPSULE else cb[i]
        return capsule_contacts(a0, a1, params_a[0], b0, b1, params_b[0], ca, cb, margin,
                                out_p, out_n, out_d)
    if kind_a == SPHERE and kind_b == BOX:
        k = sphere_box_contacts(cb, Rb, params_b, ca, params_a[0], margin, out_p, out_n,
                                out_d)
        if k > 0:
            _flip(out_n, k)
        return k
    # (int64, not a constant: see gjk._closest)
    k = convex_contact(kind_a, params_a, verts_a, ca, Ra, kind_b, params_b, verts_b,
                       cb, Rb, margin, out_p, out_n, out_d, np.int64(0))
    if k == 1 and kind_a == BOX and kind_b == BOX:
        return box_box_manifold(ca, Ra, params_a, cb, Rb, params_b, margin, out_p, out_n,
                                out_d)
    return k


FACE_ALIGNED = 1e-9
"""How near 1 the cosine between GJK/EPA's normal and a box's face normal must be for
box-box to be a face contact, clipped into a manifold (on polytopes, the normal of a face
contact is that face's normal up to rounding)."""


def box_box_manifold(ca, Ra, ha, cb, Rb, hb, margin, out_p, out_n, out_d) -> int:
    """Box A against box B, given GJK/EPA's one contact in row 0: where its normal is a
    face normal of either box (a face contact), the other box's most opposed face is
    clipped by the sides of that reference face (Sutherland-Hodgman), and each clipped
    corner below it (or within ``margin``) is a contact: up to 8. Otherwise (edge on
    edge) the one contact stays. Returns the number of contacts."""
    n = np.empty(3)
    for i in range(3):
        n[i] = out_n[0, i]
    # the reference face: the face normal best aligned with n, of A (+n) or B (-n)
    best = -1.0
    ref_is_a = True
    axis = 0
    for box in range(2):
        for j in range(3):
            dot = 0.0
            for i in range(3):
                dot += (Ra[i, j] if box == 0 else Rb[i, j]) * n[i]
            if abs(dot) > best:
                best = abs(dot)
                ref_is_a = box == 0
                axis = j
    if best < 1.0 - FACE_ALIGNED:
        return 1
    cr, Rr, hr = (ca, Ra, ha) if ref_is_a else (cb, Rb, hb)
    ci, Ri, hi = (cb, Rb, hb) if ref_is_a else (ca, Ra, ha)
    nr = np.empty(3)                 # the reference face's outward normal, towards I
    for i in range(3):
        nr[i] = n[i] if ref_is_a else -n[i]
    sr = 0.0
    for i in range(3):
        sr += Rr[i, axis] * nr[i]
    sr = 1.0 if sr > 0.0 else -1.0
    # the incident face: the face of I whose outward normal is most against nr
    worst = 2.0
    ai = 0
    si = 1.0
    for j in range(3):
        dot = Ri[0, j] * nr[0] + Ri[1, j] * nr[1] + Ri[2, j] * nr[2]
        if -abs(dot) < worst:
            worst = -abs(dot)
            ai = j
            si = -1.0 if dot > 0.0 else 1.0
    u, v = (ai + 1) % 3, (ai + 2) % 3
    poly = np.empty((16, 3))
    tmp = np.empty((16, 3))
    for k in range(4):               # the incident face's corners, in order around it
        cu = 1.0 if (k == 0 or k == 3) else -1.0
        cv = 1.0 if k < 2 else -1.0
        for i in range(3):
            poly[k, i] = ci[i] + Ri[i, ai] * si * hi[ai] + Ri[i, u] * cu * hi[u] + \
                Ri[i, v] * cv * hi[v]
    m = 4
    for side in range(4):            # clip by the reference face's four side planes
        j = (axis + 1 + side // 2) % 3
        sgn = 1.0 if side % 2 == 0 else -1.0
        q = 0
        for k in range(m):
            k2 = (k + 1) % m
            d1 = -hr[j]
            d2 = -hr[j]
            for i in range(3):
                d1 += sgn * Rr[i, j] * (poly[k, i] - cr[i])
                d2 += sgn * Rr[i, j] * (poly[k2, i] - cr[i])
            if d1 <= 0.0:
                for i in range(3):
                    tmp[q, i] = poly[k, i]
                q += 1
            if (d1 < 0.0 < d2) or (d2 < 0.0 < d1):
                f = d1 / (d1 - d2)
                for i in range(3):
                    tmp[q, i] = poly[k, i] + f * (poly[k2, i] - poly[k, i])
                q += 1
        m = q
        for k in range(m):
            for i in range(3):
                poly[k, i] = tmp[k, i]
        if m == 0:
            return 1
    face = 0.0                       # the reference face's plane: nr . x = face
    for i in range(3):
        face += nr[i] * (cr[i] + Rr[i, axis] * sr * hr[axis])
    count = 0
    for k in range(m):
        depth = face - (nr[0] * poly[k, 0] + nr[1] * poly[k, 1] + nr[2] * poly[k, 2])
        if depth >= -margin and count < 8:
            for i in range(3):       # midpoint of I's corner and its foot on the face
                out_p[count, i] = poly[k, i] + 0.5 * depth * nr[i]
                out_n[count, i] = n[i]
            out_d[count] = depth
            count += 1
    if count == 0:
        return 1                     # (rounding: keep GJK/EPA's point)
    return count


def capacity(a: Shape, b: Shape) -> int:
    """How many contact points two shapes can have: 8, or a mesh's vertex count."""
    return max(8, len(a.vertices), len(b.vertices))


@dataclass(frozen=True)
class Contacts:
    """The contacts of shape A with shape B (k points).

    points : (k, 3) global, m: the midpoints of the two surfaces' deepest points.
    normals : (k, 3) unit, global, from A into B (the way B must move to separate).
    depths : (k,) m: penetration (> 0) or, within the margin asked for, the gap (< 0).
    shape_a, shape_b : the two shapes' names.
    """

    shape_a: str
    shape_b: str
    points: np.ndarray
    normals: np.ndarray
    depths: np.ndarray

    def __len__(self) -> int:
        return len(self.depths)

    @property
    def points_a(self) -> np.ndarray:
        """A's deepest points (k, 3): ``points + depths / 2 * normals``."""
        return self.points + 0.5 * self.depths[:, None] * self.normals

    @property
    def points_b(self) -> np.ndarray:
        """B's deepest points (k, 3): ``points - depths / 2 * normals``."""
        return self.points - 0.5 * self.depths[:, None] * self.normals

    def swapped(self) -> Contacts:
        """The same contacts seen from B (normals flipped)."""
        return Contacts(self.shape_b, self.shape_a, self.points, -self.normals,
                        self.depths)


def _nonnegative(value: Any) -> bool:
    """Whether ``value`` is a finite number >= 0 (a margin)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool) and np.isfinite(v) and v >= 0.0


def collide(a: Shape, b: Shape, pose_a: Any = None, pose_b: Any = None, *,
            margin: float = 0.0) -> Contacts:
    """The contacts of shape ``a`` with shape ``b``, their bodies at ``pose_a`` and
    ``pose_b`` (each None for the identity, or (position (3,) m, rotation: a 3x3 matrix
    body -> global or a quaternion (w, x, y, z))).

    ``margin`` (m, >= 0): also report gaps up to this size (as negative depths).

    Raises
    ------
    ModelError
        For two planes (they cannot touch), a negative margin or a bad pose.
    """
    if not _nonnegative(margin):
        raise ModelError(f"collide({a.name!r}, {b.name!r}): margin must be a finite "
                         f"number >= 0 (m), got {margin!r}")
    ca, Ra = a.world_pose(pose_a)
    cb, Rb = b.world_pose(pose_b)
    m = capacity(a, b)
    out_p, out_n, out_d = np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
    k = contact_kernel(a.kind, a.params, a.vertices, ca, Ra, b.kind, b.params,
                       b.vertices, cb, Rb, float(margin), out_p, out_n, out_d)
    if k < 0:
        raise ModelError(f"shapes {a.name!r} and {b.name!r} are both planes: two "
                         f"half-spaces have no contact points; valid: a plane against "
                         f"a sphere, capsule, box, cylinder or mesh")
    return Contacts(a.name, b.name, out_p[:k].copy(), out_n[:k].copy(), out_d[:k].copy())
