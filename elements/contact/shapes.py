"""Collision shapes: what a body is made of, for contact (docs/contact.md).

- :class:`Plane`: a half-space (the ground); :class:`Sphere`, :class:`Capsule`,
  :class:`Box`, :class:`Cylinder`, :class:`ConvexMesh` (the convex hull of points),
  :class:`Ellipsoid`.
- Each shape is named, belongs to a body and has a pose in that body's frame.
- :func:`support_point`, :func:`core_support_point`: the support functions as kernels on
  float64 arrays (the posed shape as ``kind, params, verts, c, R``), written so that numba
  can compile them; the shapes' methods call them.

Frames. A body's frame has its origin at the body's centre of mass, and a body's pose
is (r, A): r the origin in global coordinates (m), A the rotation matrix body -> global
(a quaternion (w, x, y, z), scalar first, is accepted too), as ``RigidBody`` uses them. A
shape's own frame is placed in its body's frame by ``position`` (the shape's centre in
body coordinates, m) and ``rotation`` (the shape's axes in body coordinates: the matrix
shape -> body, or a unit quaternion, or a rotation vector, rad). A point x^s of the shape
is at ``r + A (position + rotation x^s)`` in global coordinates. A capsule's and a
cylinder's axis is the shape's local z. The ground's pose is the identity, so a
:class:`Plane` on the ground has its normal and offset in global coordinates.

Posed shapes in the kernels: ``kind`` (one of :data:`PLANE` ... :data:`MESH`), ``params``
(4,) (sphere: r; capsule: r, half length; box: three half extents; cylinder: r, half
length; ellipsoid: three semi-axes; plane, mesh: unused), ``verts`` (n, 3) the hull's vertices in the shape's frame
(a mesh; (0, 3) otherwise), ``c`` (3,) the shape's centre and ``R`` (3, 3) its axes
(shape -> global). A plane is {x: n.x <= n.c} with n = R[:, 2].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import check_name
from bondgraph.spatial import as_rotation, frame_from_axis, quat_to_matrix

__all__ = ["Shape", "Plane", "Sphere", "Capsule", "Box", "Cylinder", "ConvexMesh",
           "Ellipsoid", "PLANE", "SPHERE", "CAPSULE", "BOX", "CYLINDER", "MESH",
           "ELLIPSOID", "KIND_NAMES",
           "support_point", "core_support_point", "core_radius", "body_pose"]

PLANE, SPHERE, CAPSULE, BOX, CYLINDER, MESH, ELLIPSOID = 0, 1, 2, 3, 4, 5, 6
KIND_NAMES = ("Plane", "Sphere", "Capsule", "Box", "Cylinder", "ConvexMesh", "Ellipsoid")
_NO_VERTS = np.zeros((0, 3))
SURFACE_DIRECTIONS = 256
"""How many directions :meth:`Shape.surface` samples a curved shape's surface along."""


def _hull(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The convex hull of points: (its vertices, its triangles as indices into them,
    counter-clockwise seen from outside)."""
    from scipy.spatial import ConvexHull
    hull = ConvexHull(points)
    keep = np.asarray(hull.vertices)
    index = np.full(len(points), -1)
    index[keep] = np.arange(len(keep))
    faces = index[hull.simplices]
    verts = points[keep]
    centre = verts.mean(axis=0)          # orient every triangle outward
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - centre) < 0
    faces[inward] = faces[inward][:, ::-1]
    return np.ascontiguousarray(verts), np.ascontiguousarray(faces)


# -- kernels (numba-compatible: float64 arrays, plain loops) -----------------------------

def _sgn(x: float) -> float:
    """The sign of x, 0 for 0 (a support point in the middle of a flat side)."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


def core_radius(kind: int, params: np.ndarray) -> float:
    """The radius a shape's core is inflated by: a sphere is a point inflated by r, a
    capsule a segment inflated by r; the other shapes are their own core (0)."""
    if kind == SPHERE or kind == CAPSULE:
        return params[0]
    return 0.0


def core_support_point(kind: int, params: np.ndarray, verts: np.ndarray, c: np.ndarray,
                       R: np.ndarray, d: np.ndarray, out: np.ndarray) -> None:
    """The point of the shape's core (global, m) farthest along direction ``d`` (global,
    any length) into ``out`` (3,). The core of a sphere is its centre, of a capsule its
    segment; the others are their own core. Planes have no support point (not called)."""
    # the direction in the shape's frame
    l0 = R[0, 0] * d[0] + R[1, 0] * d[1] + R[2, 0] * d[2]
    l1 = R[0, 1] * d[0] + R[1, 1] * d[1] + R[2, 1] * d[2]
    l2 = R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]
    p0 = 0.0
    p1 = 0.0
    p2 = 0.0
    if kind == CAPSULE:
        p2 = params[1] * _sgn(l2)
    elif kind == BOX:
        p0 = params[0] * _sgn(l0)
        p1 = params[1] * _sgn(l1)
        p2 = params[2] * _sgn(l2)
    elif kind == CYLINDER:
        rho = np.sqrt(l0 * l0 + l1 * l1)
        if rho > 0.0:
            p0 = params[0] * l0 / rho
            p1 = params[0] * l1 / rho
        p2 = params[1] * _sgn(l2)
    elif kind == MESH:
        best = -np.inf
        k = 0
        for i in range(verts.shape[0]):
            s = verts[i, 0] * l0 + verts[i, 1] * l1 + verts[i, 2] * l2
            if s > best:
                best = s
                k = i
        p0 = verts[k, 0]
        p1 = verts[k, 1]
        p2 = verts[k, 2]
    elif kind == ELLIPSOID:
        # the point where the outward normal, diag(1/a^2) p, is along l:
        # p = diag(a^2) l / |diag(a) l|
        s0 = params[0] * l0
        s1 = params[1] * l1
        s2 = params[2] * l2
        w = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        if w > 0.0:
            p0 = params[0] * s0 / w
            p1 = params[1] * s1 / w
            p2 = params[2] * s2 / w
    for i in range(3):
        out[i] = c[i] + R[i, 0] * p0 + R[i, 1] * p1 + R[i, 2] * p2


def support_point(kind: int, params: np.ndarray, verts: np.ndarray, c: np.ndarray,
                  R: np.ndarray, d: np.ndarray, out: np.ndarray) -> None:
    """The point of the shape (global, m) farthest along direction ``d`` (global, any
    nonzero length) into ``out`` (3,): the core's support point plus the core radius
    along d."""
    core_support_point(kind, params, verts, c, R, d, out)
    r = core_radius(kind, params)
    if r > 0.0:
        n = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        if n > 0.0:
            for i in range(3):
                out[i] += r * d[i] / n


# -- poses -------------------------------------------------------------------------------

def body_pose(pose: Any, what: str = "pose") -> tuple[np.ndarray, np.ndarray]:
    """(r, A) of a body pose given as None (the identity: the ground), or a pair
    (position (3,) m global, rotation: a matrix (3, 3) body -> global, or a quaternion
    (w, x, y, z)). Raises ModelError naming ``what`` for any other value."""
    if pose is None:
        return np.zeros(3), np.eye(3)
    try:
        r, rot = pose
        r = np.asarray(r, dtype=float).reshape(3)
        rot = np.asarray(rot, dtype=float)
        A = quat_to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: must be a pair (position (3,) in m, rotation: a 3x3 "
                         f"matrix body -> global or a quaternion (w, x, y, z)), got "
                         f"{pose!r}") from None
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(A))):
        raise ModelError(f"{what}: position and rotation must be finite, got {pose!r}")
    return r, A


# -- the shapes -------------------------------------------------------------------------

def _positive(shape: str, field: str, value: Any, *, zero_ok: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = np.nan
    if not np.isfinite(v) or v < 0.0 or (v == 0.0 and not zero_ok):
        valid = "a finite number >= 0" if zero_ok else "a positive finite number"
        raise ModelError(f"{shape}: {field} must be {valid} (m), got {value!r}")
    return v


def _vector(shape: str, field: str, value: Any) -> np.ndarray:
    try:
        v = np.array(value, dtype=float)
    except (TypeError, ValueError):
        v = np.array([np.nan])
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{shape}: {field} must be 3 finite numbers, got {value!r}")
    return v


def _sizes(shape: str, field: str, value: Any) -> np.ndarray:
    """Three positive sizes (m): a box's half extents, an ellipsoid's semi-axes."""
    v = _vector(shape, field, value)
    if np.any(v <= 0.0):
        raise ModelError(f"{shape}: {field} must be 3 positive finite numbers (m), got "
                         f"{value!r}")
    return v


def _mask(shape: str, field: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise ModelError(f"{shape}: {field} must be an integer bit mask >= 0 (MuJoCo's "
                         f"rule: pair when (contype_a & conaffinity_b) or (contype_b & "
                         f"conaffinity_a)), got {value!r}")
    return int(value)


class Shape:
    """A collision shape: named, on a body, posed in the body's frame.

    Attributes
    ----------
    name : str
        The shape's name (unique within a scene).
    body : str
        The body it belongs to (``"ground"`` for the ground).
    position : ndarray (3,)
        The shape's centre in body coordinates (m).
    rotation : ndarray (3, 3)
        The shape's axes in body coordinates (columns; shape -> body).
    contype, conaffinity : int
        Collision bit masks, MuJoCo's rule: shapes a and b may touch when
        ``(a.contype & b.conaffinity) or (b.contype & a.conaffinity)``.
    kind : int
        :data:`PLANE`, :data:`SPHERE`, ... (the kernels' code).
    params : ndarray (4,)
        The kernels' size parameters (see the module's docstring).
    vertices : ndarray (n, 3)
        A mesh's hull vertices in the shape's frame (m); (0, 3) for the other shapes.
    """

    kind: int = -1

    def __init__(self, name: str, body: str, position: Any = (0.0, 0.0, 0.0),
                 rotation: Any = None, contype: int = 1, conaffinity: int = 1):
        kind_name = KIND_NAMES[self.kind]
        self.name = check_name(name, f"{kind_name} shape")
        self.label = f"{kind_name} {name!r}"
        self.body = check_name(body, f"{self.label}: body")
        self.position = _vector(self.label, "position", position)
        if rotation is None:
            self.rotation = np.eye(3)
        else:
            try:
                self.rotation = as_rotation(rotation)
            except ValueError as exc:
                raise ModelError(f"{self.label}: rotation {exc}") from None
        self.contype = _mask(self.label, "contype", contype)
        self.conaffinity = _mask(self.label, "conaffinity", conaffinity)
        self.params = np.zeros(4)
        self.vertices = _NO_VERTS

    def __repr__(self) -> str:
        return f"{KIND_NAMES[self.kind]}({self.name!r}, body={self.body!r})"

    def world_pose(self, pose: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The shape's centre c (global, m) and axes R (shape -> global) when its body
        has ``pose`` = (r, A) (None: the identity)."""
        r, A = body_pose(pose, f"{self.label}: pose of body {self.body!r}")
        return r + A @ self.position, A @ self.rotation

    def support(self, direction: Any, pose: Any = None) -> np.ndarray:
        """The shape's point farthest along ``direction`` (global, any nonzero length), in
        global coordinates (m), with its body at ``pose``."""
        d = np.asarray(direction, dtype=float).reshape(3)
        c, R = self.world_pose(pose)
        out = np.empty(3)
        support_point(self.kind, self.params, self.vertices, c, R, d, out)
        return out

    def surface(self, directions: int = SURFACE_DIRECTIONS) -> tuple[np.ndarray, np.ndarray]:
        """The shape's surface as triangles, for drawing: ``vertices`` (k, 3, m, the
        shape's frame) and ``faces`` (f, 3, indices into them, outward), the convex hull
        of the support points along ``directions`` directions spread evenly over the
        sphere (a Fibonacci lattice). Exact for polytopes (a box gives its 8 corners, a
        mesh its hull); a curved shape's polytope is inscribed in it (with 256
        directions, 2 % of a sphere's volume short, 5 % of a 3:2:1 ellipsoid's). The
        page and the videos draw every shape but the plane through it: a new convex kind
        needs only its support point."""
        k = np.arange(directions) + 0.5
        z = 1.0 - 2.0 * k / directions
        phi = np.pi * (1.0 + np.sqrt(5.0)) * k
        rho = np.sqrt(1.0 - z * z)
        dirs = np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
        pts = np.empty_like(dirs)
        c, R = np.zeros(3), np.eye(3)
        for i, d in enumerate(dirs):
            support_point(self.kind, self.params, self.vertices, c, R, d, pts[i])
        size = max(float(np.abs(pts).max()), 1e-300)
        pts = np.unique(np.round(pts / size, 12), axis=0) * size   # (a box: 8 corners)
        return _hull(pts)

    @property
    def bounding_radius(self) -> float:
        """The radius (m) of a sphere about the shape's centre that holds the shape."""
        raise NotImplementedError

    def aabb(self, pose: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The axis-aligned bounding box (lower, upper corners, global, m) with the
        shape's body at ``pose``; tight for every kind (a plane's is infinite on the
        sides it is not bounded)."""
        c, R = self.world_pose(pose)
        ext = self._extent(R)
        return c - ext, c + ext

    def _extent(self, R: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class Plane(Shape):
    """The half-space {x : n . x <= offset} (solid below; n the normal made unit), on the
    ground by default.

    normal : the unit outward normal (3,) (made unit; zero or non-finite is refused), in
        the body's frame: global on the ground.
    offset : the plane's distance from the origin along the normal (m).
    """

    kind = PLANE

    def __init__(self, name: str, normal: Any = (0.0, 0.0, 1.0), offset: float = 0.0, *,
                 body: str = "ground", contype: int = 1, conaffinity: int = 1):
        label = f"Plane {check_name(name, 'Plane shape')!r}"
        n = _vector(label, "normal", normal)
        size = float(np.linalg.norm(n))
        if size == 0.0:
            raise ModelError(f"{label}: normal must be a nonzero vector, got {normal!r}")
        try:
            off = float(offset)
        except (TypeError, ValueError):
            off = np.nan
        if not np.isfinite(off):
            raise ModelError(f"{label}: offset must be a finite number (m), got {offset!r}")
        n = n / size
        self.normal, self.offset = n, off
        super().__init__(name, body, off * n, frame_from_axis(n), contype, conaffinity)

    def surface(self, directions: int = SURFACE_DIRECTIONS):
        """A plane is unbounded: no surface of triangles (the page and the videos draw a
        square of it under the scene)."""
        raise ModelError(f"{self.label}: a plane is unbounded; it has no surface of "
                         f"triangles")

    @property
    def bounding_radius(self) -> float:
        return np.inf

    def _extent(self, R: np.ndarray) -> np.ndarray:
        return np.full(3, np.inf)

    def aabb(self, pose: Any = None) -> tuple[np.ndarray, np.ndarray]:
        c, R = self.world_pose(pose)
        lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
        n = R[:, 2]
        for k in range(3):      # bounded only along an axis the normal is aligned with
            if abs(n[k]) == 1.0:
                if n[k] > 0:
                    hi[k] = c[k]
                else:
                    lo[k] = c[k]
        return lo, hi


class Sphere(Shape):
    """A sphere of ``radius`` (m) centred at ``position``."""

    kind = SPHERE

    def __init__(self, name: str, body: str, radius: float, *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        super().__init__(name, body, position, rotation, contype, conaffinity)
        self.radius = _positive(self.label, "radius", radius)
        self.params[0] = self.radius

    @property
    def bounding_radius(self) -> float:
        return self.radius

    def _extent(self, R: np.ndarray) -> np.ndarray:
        return np.full(3, self.radius)


class Capsule(Shape):
    """A capsule: the points within ``radius`` (m) of a segment of ``length`` (m, >= 0,
    between the two sphere centres) along the shape's local z, centred at ``position``."""

    kind = CAPSULE

    def __init__(self, name: str, body: str, radius: float, length: float, *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        super().__init__(name, body, position, rotation, contype, conaffinity)
        self.radius = _positive(self.label, "radius", radius)
        self.length = _positive(self.label, "length", length, zero_ok=True)
        self.params[0], self.params[1] = self.radius, 0.5 * self.length

    @property
    def bounding_radius(self) -> float:
        return self.radius + 0.5 * self.length

    def _extent(self, R: np.ndarray) -> np.ndarray:
        return 0.5 * self.length * np.abs(R[:, 2]) + self.radius


class Box(Shape):
    """A box of ``half_extents`` (3,) (m, each > 0) along the shape's axes."""

    kind = BOX

    def __init__(self, name: str, body: str, half_extents: Any, *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        super().__init__(name, body, position, rotation, contype, conaffinity)
        self.half_extents = _sizes(self.label, "half_extents", half_extents)
        self.params[:3] = self.half_extents

    @property
    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.half_extents))

    def _extent(self, R: np.ndarray) -> np.ndarray:
        return np.abs(R) @ self.half_extents


class Cylinder(Shape):
    """A solid cylinder of ``radius`` (m) and ``length`` (m, between its two flat caps)
    along the shape's local z, centred at ``position``."""

    kind = CYLINDER

    def __init__(self, name: str, body: str, radius: float, length: float, *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        super().__init__(name, body, position, rotation, contype, conaffinity)
        self.radius = _positive(self.label, "radius", radius)
        self.length = _positive(self.label, "length", length)
        self.params[0], self.params[1] = self.radius, 0.5 * self.length

    @property
    def bounding_radius(self) -> float:
        return float(np.hypot(self.radius, 0.5 * self.length))

    def _extent(self, R: np.ndarray) -> np.ndarray:
        a = R[:, 2]
        return 0.5 * self.length * np.abs(a) + self.radius * np.sqrt(
            np.clip(1.0 - a * a, 0.0, 1.0))


class Ellipsoid(Shape):
    """A solid ellipsoid of ``semi_axes`` (3,) (m, each > 0) along the shape's x, y and z
    axes, centred at ``position``: {p : (p_x/a)^2 + (p_y/b)^2 + (p_z/c)^2 <= 1}."""

    kind = ELLIPSOID

    def __init__(self, name: str, body: str, semi_axes: Any, *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        super().__init__(name, body, position, rotation, contype, conaffinity)
        self.semi_axes = _sizes(self.label, "semi_axes", semi_axes)
        self.params[:3] = self.semi_axes

    @property
    def bounding_radius(self) -> float:
        return float(self.semi_axes.max())

    def _extent(self, R: np.ndarray) -> np.ndarray:
        # the support function along each global axis: |diag(a) R^T e_k|
        return np.sqrt((R * R) @ (self.semi_axes ** 2))


class ConvexMesh(Shape):
    """The convex hull of ``vertices`` (n, 3) (m, in the shape's frame), computed by
    ``scipy.spatial.ConvexHull`` (qhull). Only the hull's vertices are kept
    (``vertices``); points that are flat (in one plane or on one line) are refused.
    ``faces`` (k, 3) are the hull's triangles (indices into ``vertices``)."""

    kind = MESH

    def __init__(self, name: str, body: str, vertices: Sequence[Sequence[float]], *,
                 position: Any = (0.0, 0.0, 0.0), rotation: Any = None,
                 contype: int = 1, conaffinity: int = 1):
        from scipy.spatial import ConvexHull, QhullError

        super().__init__(name, body, position, rotation, contype, conaffinity)
        try:
            pts = np.array(vertices, dtype=float)
        except (TypeError, ValueError):
            pts = np.zeros((0, 0))
        if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
            raise ModelError(f"{self.label}: vertices must be an (n, 3) array of finite "
                             f"numbers (m), got {np.shape(vertices)!r} values")
        flat = (f"{self.label}: vertices are flat (all on one plane or one line, or fewer "
                f"than 4), so their hull has no volume; valid: at least 4 points not on "
                f"one plane")
        if len(pts) < 4:
            raise ModelError(flat)
        try:
            hull = ConvexHull(pts)
        except QhullError:
            raise ModelError(flat) from None
        size = float(np.ptp(pts, axis=0).max())
        if not hull.volume > 1e-9 * size ** 3:      # (qhull may accept nearly flat input)
            raise ModelError(flat)
        keep = np.asarray(hull.vertices)
        index = np.full(len(pts), -1)
        index[keep] = np.arange(len(keep))
        self.vertices = np.ascontiguousarray(pts[keep])
        self.faces = index[hull.simplices]
        self.volume = float(hull.volume)

    def surface(self, directions: int = SURFACE_DIRECTIONS):
        """The hull itself (``directions`` unused)."""
        return _hull(self.vertices)

    @property
    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.vertices, axis=1).max())

    def _extent(self, R: np.ndarray) -> np.ndarray:   # (unused: aabb is exact below)
        return np.abs(R) @ np.abs(self.vertices).max(axis=0)

    def aabb(self, pose: Any = None) -> tuple[np.ndarray, np.ndarray]:
        c, R = self.world_pose(pose)
        w = self.vertices @ R.T
        return c + w.min(axis=0), c + w.max(axis=0)
