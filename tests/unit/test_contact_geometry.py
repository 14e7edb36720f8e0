"""Contact geometry (elements.contact): shapes, the narrow phase, the broad phase.

Every pair routine is checked against a configuration built so that its answer is known
(a sphere put at a chosen gap along a chosen normal, two capsules with a chosen common
perpendicular...), at random poses. The general routine (GJK, EPA) is checked against the
closed forms on the pairs both can do. Tolerances: the closed forms and GJK/EPA on
polytopes are exact up to rounding of numbers of size ~1 m (1e-12 observed; 1e-9 asked);
EPA on a cylinder's curved side converges like a polytope refining a circle (1e-6 asked
of deep contacts, observed 1e-6 in the worst of 3000 cases: a centre 3e-4 m off the
axis, where every radial direction is nearly as good).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bondgraph import ModelError
from bondgraph.spatial import axis_angle_matrix, frame_from_axis, quat_to_matrix
from elements.contact import (
    Box, Capsule, CollisionWorld, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere, collide,
    sweep_and_prune,
)
from elements.contact import broadphase, detect
from elements.contact.gjk import convex_contact

EXACT = 1e-9        # m: closed forms and GJK/EPA on polytopes (rounding: ~1e-12)
CURVED = 3e-5       # m: GJK/EPA on an ellipsoid of 0.1-0.3 m (a polytope of its points)


def rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return quat_to_matrix(q / np.linalg.norm(q))


def unit(v) -> np.ndarray:
    return np.asarray(v, float) / np.linalg.norm(v)


def general(a, b, pose_a=None, pose_b=None, margin=10.0):
    """GJK/EPA on two shapes, bypassing the closed forms: (points, normals, depths)."""
    ca, Ra = a.world_pose(pose_a)
    cb, Rb = b.world_pose(pose_b)
    out = np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1)
    k = convex_contact(a.kind, a.params, a.vertices, ca, Ra, b.kind, b.params, b.vertices,
                       cb, Rb, margin, *out, 0)
    return out[0][:k], out[1][:k], out[2][:k]


def assert_contact(c, point, normal, depth, tol=EXACT):
    assert len(c) == 1, f"expected one contact, got {len(c)}"
    np.testing.assert_allclose(c.depths[0], depth, atol=tol, rtol=0)
    np.testing.assert_allclose(c.normals[0], normal, atol=tol, rtol=0)
    np.testing.assert_allclose(c.points[0], point, atol=tol, rtol=0)


def midpoint(deep_a, deep_b):
    return 0.5 * (np.asarray(deep_a) + np.asarray(deep_b))


# -- shapes: bad input named ------------------------------------------------------------

@pytest.mark.parametrize("build, words", [
    (lambda: Sphere("foot", "shin", -0.1), ["Sphere 'foot'", "radius", "positive"]),
    (lambda: Sphere("foot", "shin", float("nan")), ["Sphere 'foot'", "radius"]),
    (lambda: Capsule("arm", "b", 0.1, -1.0), ["Capsule 'arm'", "length", ">= 0"]),
    (lambda: Box("crate", "b", [0.1, 0.0, 0.1]), ["Box 'crate'", "half_extents",
                                                  "positive"]),
    (lambda: Box("crate", "b", [0.1, 0.1]), ["Box 'crate'", "half_extents", "3"]),
    (lambda: Cylinder("can", "b", 0.1, 0.0), ["Cylinder 'can'", "length", "positive"]),
    (lambda: Ellipsoid("egg", "b", [0.1, -0.2, 0.1]), ["Ellipsoid 'egg'", "semi_axes",
                                                       "positive"]),
    (lambda: Ellipsoid("egg", "b", [0.1, 0.2]), ["Ellipsoid 'egg'", "semi_axes", "3"]),
    (lambda: Sphere("foot", "shin", 0.1, position=[0, np.inf, 0]),
     ["Sphere 'foot'", "position", "finite"]),
    (lambda: Box("crate", "b", [1, 1, 1], rotation=2 * np.eye(3)),
     ["Box 'crate'", "rotation", "orthonormal"]),
    (lambda: Box("crate", "b", [1, 1, 1], rotation=np.diag([1.0, 1.0, -1.0])),
     ["Box 'crate'", "rotation", "reflection"]),
    (lambda: Box("crate", "b", [1, 1, 1], rotation=[2.0, 0, 0, 0]),
     ["Box 'crate'", "rotation", "unit"]),
    (lambda: ConvexMesh("rock", "b", [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]),
     ["ConvexMesh 'rock'", "flat", "4 points not on one plane"]),
    (lambda: ConvexMesh("rock", "b", [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]),
     ["ConvexMesh 'rock'", "flat"]),
    (lambda: ConvexMesh("rock", "b", [[0, 0, 0], [1, 0, 0], [0, 1, 0]]),
     ["ConvexMesh 'rock'", "fewer than 4"]),
    (lambda: ConvexMesh("rock", "b", [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1e-12]]),
     ["ConvexMesh 'rock'", "flat"]),
    (lambda: ConvexMesh("rock", "b", [[0, 0], [1, 0]]), ["ConvexMesh 'rock'", "(n, 3)"]),
    (lambda: Plane("floor", normal=[0, 0, 0]), ["Plane 'floor'", "normal", "nonzero"]),
    (lambda: Plane("floor", offset=float("inf")), ["Plane 'floor'", "offset", "finite"]),
    (lambda: Sphere("", "b", 0.1), ["Sphere shape name", "non-empty"]),
    (lambda: Sphere("s", "b", 0.1, contype=-1), ["Sphere 's'", "contype", "bit mask"]),
    (lambda: Sphere("s", "b", 0.1, conaffinity=1.5), ["Sphere 's'", "conaffinity"]),
])
def test_bad_shapes_are_named(build, words):
    with pytest.raises(ModelError) as err:
        build()
    for w in words:
        assert w in str(err.value), f"{w!r} not in: {err.value}"


def test_bad_calls_are_named():
    s, b = Sphere("s", "b1", 0.1), Box("box", "b2", [1, 1, 1])
    with pytest.raises(ModelError, match="both planes"):
        collide(Plane("p1"), Plane("p2", body="b"))
    with pytest.raises(ModelError, match="margin"):
        collide(s, b, margin=-1.0)
    with pytest.raises(ModelError, match="Sphere 's': pose of body 'b1'"):
        collide(s, b, pose_a=([0, 0], np.eye(3)))
    with pytest.raises(ModelError, match="CollisionWorld: margin must be a finite number"):
        CollisionWorld([s, b], margin=float("nan"))
    assert collide(s, b, margin=np.float32(0.5)).depths[0] > 0     # (any real number)
    with pytest.raises(ModelError, match="two shapes are named 's'"):
        CollisionWorld([s, Sphere("s", "b3", 0.1)])
    with pytest.raises(ModelError, match="pairs_on names shape 'bx'.*did you mean 'box'"):
        CollisionWorld([s, b], pairs_on=[("s", "bx")])
    with pytest.raises(ModelError, match="both on body"):
        CollisionWorld([s, Sphere("t", "b1", 0.1)], pairs_on=[("s", "t")])
    with pytest.raises(ModelError, match="no pose for body 'b2'"):
        CollisionWorld([s, b]).contacts({"b1": ([0, 0, 0], np.eye(3))})


# -- shapes: support, bounding radius, AABB ---------------------------------------------

def shapes_zoo(rng):
    pts = rng.normal(size=(30, 3)) * [0.2, 0.1, 0.15]
    return [Sphere("s", "b", 0.3, position=[0.1, 0, 0]),
            Capsule("c", "b", 0.1, 0.5, rotation=rng.normal(size=3)),
            Box("x", "b", [0.1, 0.2, 0.3], position=[0, 0.2, 0], rotation=rotation(rng)),
            Cylinder("y", "b", 0.2, 0.6, rotation=rotation(rng)),
            ConvexMesh("m", "b", pts, position=[0.05, 0, 0], rotation=rotation(rng))]


def test_support_aabb_and_bounding_radius_agree():
    """The AABB (closed form per kind) equals the support function's extremes along the
    axes; the bounding radius holds every support point and is reached by one (the
    support points along 2000 directions); a mesh's support is its farthest vertex."""
    rng = np.random.default_rng(1)
    egg = Ellipsoid("e", "b", [0.3, 0.1, 0.2], position=[0, 0, 0.1], rotation=rotation(rng))
    for shape in [*shapes_zoo(rng), egg]:
        pose = (rng.normal(size=3), rotation(rng))
        lo, hi = shape.aabb(pose)
        for k in range(3):
            e = np.eye(3)[k]
            assert abs(shape.support(e, pose)[k] - hi[k]) < EXACT, shape
            assert abs(shape.support(-e, pose)[k] - lo[k]) < EXACT, shape
        c, R = shape.world_pose(pose)
        dirs = rng.normal(size=(2000, 3))
        far = max(np.linalg.norm(shape.support(d, pose) - c) for d in dirs)
        assert far <= shape.bounding_radius + EXACT
        assert far >= 0.97 * shape.bounding_radius    # (2000 directions come close)
        if isinstance(shape, ConvexMesh):
            world = c + shape.vertices @ R.T
            for d in dirs[:50]:
                np.testing.assert_allclose(shape.support(d, pose), world[np.argmax(world @ d)])


def test_convex_mesh_keeps_the_hull_vertices():
    cube = np.array(list(itertools.product([-1, 1], repeat=3)), float)
    inner = np.random.default_rng(2).uniform(-0.5, 0.5, size=(20, 3))
    m = ConvexMesh("cube", "b", np.vstack([inner, cube]))
    assert len(m.vertices) == 8 and abs(m.volume - 8.0) < 1e-12
    assert sorted(map(tuple, m.vertices)) == sorted(map(tuple, cube))


def test_plane_aabb_is_bounded_only_along_its_normal_axis():
    lo, hi = Plane("f", [0, 0, 1], 0.5).aabb()
    assert np.all(np.isinf(lo)) and hi[2] == 0.5 and np.isinf(hi[:2]).all()
    lo, hi = Plane("f", [1, 1, 0], 0.0).aabb()
    assert np.all(np.isinf(lo)) and np.all(np.isinf(hi))


# -- closed forms -----------------------------------------------------------------------

def random_plane(rng):
    n = unit(rng.normal(size=3))
    return Plane("floor", n, rng.normal()), n


def test_plane_sphere_and_capsule():
    rng = np.random.default_rng(3)
    for _ in range(50):
        plane, n = random_plane(rng)
        off = plane.offset
        s = Sphere("s", "b", 0.2)
        h = rng.uniform(-0.15, 0.3)                          # centre height above the plane
        c = off * n + h * n + np.cross(n, rng.normal(size=3))
        depth = 0.2 - h
        deep_b = c - 0.2 * n
        got = collide(plane, s, None, (c, np.eye(3)), margin=0.2)
        assert_contact(got, deep_b + 0.5 * depth * n, n, depth)
        # a capsule: both end spheres, each by the sphere formula
        cap = Capsule("c", "b", 0.1, 0.4)
        R = rotation(rng)
        c = off * n + rng.uniform(0.0, 0.3) * n
        got = collide(plane, cap, None, (c, R), margin=1.0)
        ends = [c + 0.2 * R[:, 2], c - 0.2 * R[:, 2]]
        depths = [off - n @ e + 0.1 for e in ends]
        assert len(got) == 2
        np.testing.assert_allclose(got.depths, depths, atol=EXACT)
        np.testing.assert_allclose(got.points_b, [e - 0.1 * n for e in ends], atol=EXACT)
        np.testing.assert_allclose(got.points_a @ n, [off, off], atol=EXACT)   # on the plane


def test_plane_capsule_lying_gives_two_points_and_a_margin_hides_far_ends():
    plane = Plane("floor")
    cap = Capsule("c", "b", 0.1, 0.4, rotation=[0, np.pi / 2, 0])      # along x
    got = collide(plane, cap, None, ([0.3, 0, 0.099], np.eye(3)))
    np.testing.assert_allclose(got.depths, [0.001, 0.001], atol=EXACT)
    np.testing.assert_allclose(sorted(got.points[:, 0]), [0.1, 0.5], atol=EXACT)
    tilted = ([0, 0, 0.15], axis_angle_matrix([0, 1, 0], 1.2))  # one end down, one up
    assert len(collide(plane, cap, None, tilted)) == 1
    assert len(collide(plane, cap, None, tilted, margin=1.0)) == 2


def test_box_resting_on_a_plane_gives_its_four_corners():
    """A box face on a random plane: 4 points at the face's corners, equal depths; a
    box tipped on an edge gives 2, on a corner 1; a box wholly below gives all 8."""
    rng = np.random.default_rng(4)
    h = np.array([0.1, 0.2, 0.3])
    box = Box("b", "body", h)
    for _ in range(20):
        plane, n = random_plane(rng)
        k = rng.integers(3)                         # which face rests: -axis k down
        F = frame_from_axis(n)                      # columns: two tangents, then n
        R = np.empty((3, 3))                        # (a cyclic shift: still a rotation)
        R[:, k], R[:, (k + 1) % 3], R[:, (k + 2) % 3] = n, F[:, 0], F[:, 1]
        R = axis_angle_matrix(n, rng.uniform(0, 2 * np.pi)) @ R
        depth = rng.uniform(0, 0.01)
        c = (plane.offset + h[k] - depth) * n + np.cross(n, rng.normal(size=3))
        got = collide(plane, box, None, (c, R))
        assert len(got) == 4
        np.testing.assert_allclose(got.depths, depth, atol=EXACT)
        corners = [c + R @ (h * s) for s in itertools.product([-1, 1], repeat=3)]
        low = [x for x in corners if (x - c) @ n < 0]
        np.testing.assert_allclose(sorted(map(tuple, got.points_b)), sorted(map(tuple, low)),
                                   atol=EXACT)
        np.testing.assert_allclose(got.normals, np.tile(n, (4, 1)), atol=EXACT)
    # on an edge (45 degrees about x), on a corner, and sunk
    edge = axis_angle_matrix([1, 0, 0], np.pi / 4)
    zc = np.hypot(0.2, 0.3) * np.cos(np.pi / 4 - np.arctan2(0.2, 0.3))
    assert len(collide(Plane("f"), box, None, ([0, 0, zc - 1e-3], edge))) == 2
    corner = frame_from_axis(unit([1, 1, 1])).T
    assert len(collide(Plane("f"), box, None, ([0, 0, 0.3], corner))) == 1
    assert len(collide(Plane("f"), box, None, ([0, 0, -1.0], np.eye(3)))) == 8


def test_cylinder_on_a_plane():
    """On its side: 2 points, the ends of the lowest line of its side; upright: 4 points
    of the lower rim; tilted: the lowest rim point at its closed-form depth."""
    rng = np.random.default_rng(5)
    r, half = 0.1, 0.25
    cyl = Cylinder("cyl", "b", r, 2 * half)
    for _ in range(20):
        plane, n = random_plane(rng)
        a = unit(np.cross(n, rng.normal(size=3)))          # the axis, in the plane
        R = frame_from_axis(a)
        depth = rng.uniform(0, 0.01)
        c = (plane.offset + r - depth) * n + np.cross(n, rng.normal(size=3)) * 0.3
        got = collide(plane, cyl, None, (c, R))
        assert len(got) == 2
        np.testing.assert_allclose(got.depths, [depth, depth], atol=EXACT)
        line = [c - r * n + half * a, c - r * n - half * a]
        np.testing.assert_allclose(sorted(map(tuple, got.points_b)), sorted(map(tuple, line)),
                                   atol=EXACT)
        # upright on a cap: the rim, 4 points at 90 degrees, equal depths
        up = frame_from_axis(n) @ axis_angle_matrix([0, 0, 1], rng.uniform(0, 6))
        cu = (plane.offset + half - depth) * n
        got = collide(plane, cyl, None, (cu, up))
        assert len(got) == 4
        np.testing.assert_allclose(got.depths, depth, atol=EXACT)
        np.testing.assert_allclose(np.linalg.norm(got.points_b - (cu - half * n), axis=1),
                                   r, atol=EXACT)
        np.testing.assert_allclose(got.points_b.mean(axis=0), cu - half * n, atol=EXACT)
        # tilted by theta: the lowest point of the lower circle sinks half*cos + r*sin
        theta = rng.uniform(0.1, 1.4)
        tilt = axis_angle_matrix(np.cross(n, a), theta) @ frame_from_axis(n)
        ct = (plane.offset + half * np.cos(theta) + r * np.sin(theta) - depth) * n
        got = collide(plane, cyl, None, (ct, tilt))
        assert len(got) >= 1
        np.testing.assert_allclose(got.depths.max(), depth, atol=EXACT)


def test_mesh_on_a_plane_gives_its_vertices_below():
    rng = np.random.default_rng(6)
    pts = rng.normal(size=(40, 3)) * 0.1
    m = ConvexMesh("rock", "b", pts)
    plane, n = random_plane(rng)
    pose = (plane.offset * n + 0.05 * n, rotation(rng))
    c, R = m.world_pose(pose)
    world = c + m.vertices @ R.T
    below = world[world @ n <= plane.offset]
    got = collide(plane, m, None, pose)
    assert len(got) == len(below) > 0
    np.testing.assert_allclose(sorted(got.depths), sorted(plane.offset - below @ n), atol=EXACT)


def ellipsoid_support(a, R, c, n):
    """The closed form: the support function of an ellipsoid of semi-axes a, axes R,
    centre c along the unit n, h(n) = n.c + |diag(a) R^T n|."""
    return float(n @ c + np.linalg.norm(a * (R.T @ n)))


def test_ellipsoid_support_points_are_on_its_surface_with_the_normal_asked_for():
    rng = np.random.default_rng(7)
    a = np.array([0.3, 0.1, 0.2])
    for _ in range(50):
        R, c = rotation(rng), rng.normal(size=3)
        e = Ellipsoid("e", "b", a)
        d = unit(rng.normal(size=3))
        p = e.support(d, (c, R))
        local = R.T @ (p - c)
        assert abs(np.sum((local / a) ** 2) - 1.0) < 1e-12         # on the surface
        normal = R @ (local / a ** 2)                              # the outward normal
        np.testing.assert_allclose(unit(normal), d, atol=1e-12)
        assert abs(d @ p - ellipsoid_support(a, R, c, d)) < 1e-12


def test_ellipsoid_on_a_plane_and_on_a_box_against_the_closed_form():
    """A plane and a box's top face against a tilted ellipsoid: one contact, its depth
    the support function's overlap (closed form) and its point the ellipsoid's lowest
    point; GJK/EPA (the box) finds the same point as the plane's closed form."""
    rng = np.random.default_rng(8)
    a = np.array([0.3, 0.1, 0.2])
    up = np.array([0.0, 0.0, 1.0])
    for _ in range(20):
        R = rotation(rng)
        c = np.array([*rng.normal(size=2) * 0.1, 0.05])        # (always overlapping)
        e = Ellipsoid("e", "b", a)
        depth = ellipsoid_support(a, R, np.zeros(3), -up) - c[2]    # below z = 0
        lowest = e.support(-up, (c, R))
        plane = collide(Plane("floor"), e, None, (c, R))
        assert_contact(plane, lowest + 0.5 * depth * up, up, depth)
        box = Box("slab", "ground", [2.0, 2.0, 0.5])
        on_box = collide(box, e, (np.array([0.0, 0.0, -0.5]), np.eye(3)), (c, R))
        # GJK/EPA on a curved shape: EPA's polytope (at most EPA_MAX_VERTICES) touches
        # the surface only at its vertices: the depth to ~1e-7 and the point and normal
        # to ~1e-5 of a 0.3 m shape (seen 8e-6); a plane's closed form is exact
        assert_contact(on_box, lowest + 0.5 * depth * up, up, depth, tol=CURVED)


@pytest.mark.parametrize("other", ["plane", "sphere", "capsule", "box"])
def test_an_ellipsoid_with_equal_axes_is_a_sphere(other):
    """An independent route: a sphere's contacts are closed forms (and sphere-box its
    own kernel); an ellipsoid of equal semi-axes goes through GJK/EPA (or the plane's
    support point) and must give the same contact."""
    rng = np.random.default_rng(9)
    r = 0.2
    for _ in range(10):
        R, c = rotation(rng), np.array([0.05, -0.02, 0.0])
        shape = {"plane": Plane("p", normal=unit([0.1, 0.2, 1.0]), offset=0.1),
                 "sphere": Sphere("o", "g", 0.15),
                 "capsule": Capsule("o", "g", 0.1, 0.4, rotation=rotation(rng)),
                 "box": Box("o", "g", [0.3, 0.2, 0.1], rotation=rotation(rng))}[other]
        pose = None if other == "plane" else (np.array([0.0, 0.0, -0.25]), np.eye(3))
        want = collide(shape, Sphere("s", "b", r), pose, (c, R))
        got = collide(shape, Ellipsoid("e", "b", [r, r, r]), pose, (c, R))
        assert len(want) == 1
        assert_contact(got, want.points[0], want.normals[0], want.depths[0], tol=CURVED)
    wrong = collide(shape, Ellipsoid("e", "b", [r, r, 1.01 * r]), pose, (c, R))
    assert abs(wrong.depths[0] - want.depths[0]) > 1e-4      # (the check can fail)


def test_sphere_sphere():
    rng = np.random.default_rng(7)
    a, b = Sphere("a", "A", 0.3), Sphere("b", "B", 0.2)
    for _ in range(50):
        ca = rng.normal(size=3)
        n = unit(rng.normal(size=3))
        dist = rng.uniform(0.0, 0.6)
        cb = ca + dist * n
        got = collide(a, b, (ca, rotation(rng)), (cb, rotation(rng)), margin=0.2)
        assert_contact(got, midpoint(ca + 0.3 * n, cb - 0.2 * n), n, 0.5 - dist)
    # coincident centres: a unit normal, the full depth, no NaN
    got = collide(a, b, ([1, 2, 3], np.eye(3)), ([1, 2, 3], np.eye(3)))
    assert np.isfinite(got.points).all() and abs(np.linalg.norm(got.normals[0]) - 1) < 1e-15
    assert got.depths[0] == pytest.approx(0.5)


def test_sphere_capsule_and_capsule_capsule():
    """Capsules built around a chosen common perpendicular n at a chosen distance: the
    closest points sit inside both segments, so depth = ra + rb - distance."""
    rng = np.random.default_rng(8)
    cap_a, cap_b = Capsule("a", "A", 0.1, 0.6), Capsule("b", "B", 0.15, 0.4)
    sph = Sphere("s", "S", 0.12)
    for _ in range(50):
        n = unit(rng.normal(size=3))
        F = frame_from_axis(n)
        da = F[:, 0]
        db = axis_angle_matrix(n, rng.uniform(0.3, 2.8)) @ da     # not parallel to da
        pa = rng.normal(size=3)
        dist = rng.uniform(0.0, 0.4)
        pb = pa + dist * n
        sa, sb = rng.uniform(-0.25, 0.25), rng.uniform(-0.15, 0.15)
        ca, cb = pa - sa * da, pb - sb * db
        got = collide(cap_a, cap_b, (ca, frame_from_axis(da)), (cb, frame_from_axis(db)),
                      margin=0.5)
        assert_contact(got, midpoint(pa + 0.1 * n, pb - 0.15 * n), n, 0.25 - dist)
        # a sphere at distance dist from capsule a's axis point pa, along n
        got = collide(cap_a, sph, (ca, frame_from_axis(da)), (pb, np.eye(3)), margin=0.5)
        assert_contact(got, midpoint(pa + 0.1 * n, pb - 0.12 * n), n, 0.22 - dist)
        got = collide(sph, cap_a, (pb, np.eye(3)), (ca, frame_from_axis(da)), margin=0.5)
        assert_contact(got, midpoint(pa + 0.1 * n, pb - 0.12 * n), -n, 0.22 - dist)


def test_parallel_capsules_meet_in_the_middle_of_their_overlap():
    a, b = Capsule("a", "A", 0.1, 1.0), Capsule("b", "B", 0.1, 1.0)
    # axes along z, 0.15 apart in x, b shifted up by 0.4: overlap z in [-0.1, 0.5]
    got = collide(a, b, ([0, 0, 0], np.eye(3)), ([0.15, 0, 0.4], np.eye(3)))
    assert_contact(got, [0.075, 0, 0.2], [1, 0, 0], 0.05)
    back = collide(b, a, ([0.15, 0, 0.4], np.eye(3)), ([0, 0, 0], np.eye(3)))
    assert_contact(back, [0.075, 0, 0.2], [-1, 0, 0], 0.05)
    # crossing axes that meet: the normal is their common perpendicular
    got = collide(a, b, ([0, 0, 0], np.eye(3)), ([0, 0, 0.1], axis_angle_matrix([1, 0, 0],
                                                                             np.pi / 2)))
    assert abs(abs(got.normals[0] @ [1, 0, 0]) - 1) < 1e-15
    assert got.depths[0] == pytest.approx(0.2, abs=1e-15)


def test_sphere_box_regions():
    """In the box's frame: a face region (gap along the face normal), an edge region, a
    corner region, and a centre inside (out through the nearest face)."""
    rng = np.random.default_rng(9)
    h = np.array([0.3, 0.2, 0.1])
    box, s = Box("box", "B", h), Sphere("s", "S", 0.05)
    for _ in range(30):
        R, c = rotation(rng), rng.normal(size=3)
        g = rng.uniform(-0.04, 0.08, size=3)
        cases = [  # (sphere centre local, nearest box point local, normal local)
            ([h[0] + g[0], 0.1, -0.05], [h[0], 0.1, -0.05], [1, 0, 0]),
            ([0.2, -h[1] - g[1] ** 2 - 0.01, h[2] + 0.02], [0.2, -h[1], h[2]],
             unit([0, -(g[1] ** 2 + 0.01), 0.02])),
            ([-h[0] - 0.01, h[1] + 0.02, -h[2] - 0.03], -h * [1, -1, 1],
             unit([-0.01, 0.02, -0.03])),
            ([0.25, 0.05, 0.07], [0.25, 0.05, h[2]], [0, 0, 1]),     # inside, near +z
        ]
        for p, q, nl in cases:
            p, q = np.array(p, float), np.array(q, float)
            depth = 0.05 - (p - q) @ nl              # (p - q) @ nl < 0 inside the box
            n = R @ nl
            cs = c + R @ p
            got = collide(box, s, (c, R), (cs, np.eye(3)), margin=1.0)
            assert_contact(got, midpoint(c + R @ q, cs - 0.05 * n), n, depth)


# -- GJK/EPA against the closed forms ---------------------------------------------------

@pytest.mark.parametrize("pair", ["sphere-sphere", "sphere-box", "capsule-capsule",
                                  "sphere-capsule", "sphere-boxmesh"])
def test_gjk_epa_matches_the_closed_forms(pair):
    """At 400 random poses (separated, touching and overlapping, sphere centres inside
    boxes: EPA), the general routine gives the closed form's depth, normal and point to
    1e-9 m. A box given as a ConvexMesh of its 8 corners checks the mesh support too."""
    rng = np.random.default_rng(10)
    corners = np.array(list(itertools.product([-0.1, 0.1], [-0.2, 0.2], [-0.3, 0.3])))
    a, b, exact_b = {
        "sphere-sphere": (Sphere("a", "A", 0.3), Sphere("b", "B", 0.2), None),
        "sphere-box": (Sphere("a", "A", 0.3), Box("b", "B", [0.1, 0.2, 0.3]), None),
        "capsule-capsule": (Capsule("a", "A", 0.1, 0.5), Capsule("b", "B", 0.2, 0.3), None),
        "sphere-capsule": (Sphere("a", "A", 0.1), Capsule("b", "B", 0.2, 0.3), None),
        "sphere-boxmesh": (Sphere("a", "A", 0.1), ConvexMesh("b", "B", corners),
                           Box("b", "B", [0.1, 0.2, 0.3])),
    }[pair]
    deep = 0
    for _ in range(400):
        pa, pb = (rng.normal(size=3) * 0.25, rotation(rng)), (rng.normal(size=3) * 0.25,
                                                              rotation(rng))
        want = collide(a, exact_b or b, pa, pb, margin=10.0)
        p, n, d = general(a, b, pa, pb)
        assert len(want) == 1 and len(d) == 1
        np.testing.assert_allclose(d, want.depths, atol=EXACT, rtol=0)
        np.testing.assert_allclose(n, want.normals, atol=EXACT, rtol=0)
        np.testing.assert_allclose(p, want.points, atol=EXACT, rtol=0)
        deep += bool(want.depths[0] > a.params[0])     # (a sphere's centre in b)
    if pair in ("sphere-box", "sphere-boxmesh"):
        assert deep > 20, "too few sphere centres inside the box: EPA barely tested"


def test_gjk_epa_on_boxes_and_cylinders():
    """Box-box with axes aligned (the gap or overlap along z is the depth, for GJK/EPA's
    one point and for the clipped manifold's four); a sphere
    against a cylinder's side, cap and rim (closed forms: the cylinder's radial and axial
    distances); deep inside the cylinder EPA is asked 1e-6 (a curved side)."""
    big, small = Box("a", "A", [0.5, 0.5, 0.5]), Box("b", "B", [0.2, 0.3, 0.4])
    for dz in [1.0, 0.9, 0.75, 0.5]:
        got = collide(big, small, None, ([0.1, 0.05, dz], np.eye(3)), margin=1.0)
        assert len(got) == 4                    # (face on face: the clipped manifold)
        np.testing.assert_allclose(got.depths, 0.9 - dz, atol=EXACT)
        np.testing.assert_allclose(got.normals, np.tile([0, 0, 1], (4, 1)), atol=EXACT)
        p, n, d = general(big, small, None, ([0.1, 0.05, dz], np.eye(3)))   # GJK/EPA alone
        assert abs(d[0] - (0.9 - dz)) < EXACT
        np.testing.assert_allclose(n[0], [0, 0, 1], atol=EXACT)
    rng = np.random.default_rng(11)
    cyl, s = Cylinder("c", "A", 0.2, 0.6), Sphere("s", "B", 0.1)
    for _ in range(200):
        R, c = rotation(rng), rng.normal(size=3) * 0.1
        p = rng.uniform(-0.5, 0.5, size=3)
        rho, z = np.hypot(p[0], p[1]), abs(p[2])
        inside = rho <= 0.2 and z <= 0.3
        depth = 0.1 + (min(0.2 - rho, 0.3 - z) if inside else
                       -np.hypot(max(rho - 0.2, 0), max(z - 0.3, 0)))
        got = collide(cyl, s, (c, R), (c + R @ p, np.eye(3)), margin=10.0)
        assert abs(got.depths[0] - depth) < (1e-6 if inside else EXACT), (p, got.depths)


def test_box_on_box_face_contact_is_clipped_into_a_manifold():
    """A box resting on a bigger one, turned about the normal by a random angle and
    placed at random on its top: 4 points, the small box's bottom corners, equal depths;
    hanging over an edge: the corners clipped at that edge; tipped on an edge: 2 points
    at that edge's ends; swapped: the same points, normals flipped."""
    rng = np.random.default_rng(17)
    big, small = Box("big", "A", [0.5, 0.5, 0.5]), Box("small", "B", [0.2, 0.1, 0.05])
    for _ in range(20):
        R0, c0 = rotation(rng), rng.normal(size=3)          # the big box anywhere
        turn = axis_angle_matrix([0, 0, 1], rng.uniform(0, 2 * np.pi))
        xy = rng.uniform(-0.2, 0.2, size=2)
        depth = rng.uniform(0.0, 0.02)
        local = np.array([xy[0], xy[1], 0.55 - depth])
        pose_b = (c0 + R0 @ local, R0 @ turn)
        got = collide(big, small, (c0, R0), pose_b)
        corners = [c0 + R0 @ (local + turn @ ([0.2, 0.1, 0.05] * np.array([sx, sy, -1])))
                   for sx in (-1, 1) for sy in (-1, 1)]
        assert len(got) == 4
        np.testing.assert_allclose(got.depths, depth, atol=EXACT)
        np.testing.assert_allclose(got.normals, np.tile(R0[:, 2], (4, 1)), atol=EXACT)
        np.testing.assert_allclose(sorted(map(tuple, got.points_b)),
                                   sorted(map(tuple, corners)), atol=EXACT)
        back = collide(small, big, pose_b, (c0, R0))
        np.testing.assert_allclose(sorted(map(tuple, back.points)),
                                   sorted(map(tuple, got.points)), atol=EXACT)
        np.testing.assert_allclose(back.normals, -got.normals, atol=EXACT)
    over = collide(big, small, None, ([0.45, 0.0, 0.54], np.eye(3)))
    np.testing.assert_allclose(sorted(over.points[:, 0]), [0.25, 0.25, 0.5, 0.5], atol=EXACT)
    np.testing.assert_allclose(over.depths, 0.01, atol=EXACT)
    tip = axis_angle_matrix([1, 0, 0], 0.3)                    # the long edge down
    low = 0.1 * np.sin(0.3) + 0.05 * np.cos(0.3)
    edge = collide(big, small, None, ([0, 0, 0.5 + low - 0.004], tip))
    assert len(edge) == 2
    np.testing.assert_allclose(edge.depths, 0.004, atol=EXACT)
    np.testing.assert_allclose(sorted(edge.points_b[:, 0]), [-0.2, 0.2], atol=EXACT)


# -- symmetry and invariance ------------------------------------------------------------

def zoo_pairs(rng):
    zoo = shapes_zoo(rng) + [Plane("floor", unit(rng.normal(size=3)), 0.1)]
    for a, b in itertools.combinations_with_replacement(zoo, 2):
        if not (isinstance(a, Plane) and isinstance(b, Plane)):
            yield a, b


def test_swapping_a_and_b_flips_the_normal():
    """For every kind pair at 20 random poses: the same points and depths, the normals
    flipped (closed forms and GJK/EPA; 1e-9 m, 1e-5 for the points and normals of two
    cylinders; pairs of two kinds are computed in one order, so exactly)."""
    rng = np.random.default_rng(12)
    for a, b in zoo_pairs(rng):
        for _ in range(20):
            pa = (rng.normal(size=3) * 0.2, rotation(rng))
            pb = (rng.normal(size=3) * 0.2, rotation(rng))
            ab = collide(a, b, pa, pb, margin=0.05)
            ba = collide(b, a, pb, pa, margin=0.05)
            # (two curved sides, computed in either order by EPA: the depth converges to
            # 1e-11 m, the direction only as its square root, ~sqrt(1e-11 / 0.2) = 1e-5)
            tol = 1e-5 if Cylinder in (type(a), type(b)) else EXACT
            assert len(ab) == len(ba), (a, b)
            order_ab, order_ba = np.lexsort(ab.points.T), np.lexsort(ba.points.T)
            np.testing.assert_allclose(ab.depths[order_ab], ba.depths[order_ba], atol=EXACT)
            np.testing.assert_allclose(ab.points[order_ab], ba.points[order_ba], atol=tol)
            np.testing.assert_allclose(ab.normals[order_ab], -ba.normals[order_ba], atol=tol)
            assert np.isfinite(ab.points).all() and np.isfinite(ab.normals).all()
            np.testing.assert_allclose(np.linalg.norm(ab.normals, axis=1), 1.0, atol=1e-12)


def test_contacts_move_with_a_translation():
    """Translating both bodies (and the plane with them, through its body's pose) by t
    moves every point by t and changes no depth nor normal."""
    rng = np.random.default_rng(13)
    for a, b in zoo_pairs(rng):
        pa = (rng.normal(size=3) * 0.2, rotation(rng))
        pb = (rng.normal(size=3) * 0.2, rotation(rng))
        t = rng.normal(size=3) * 3
        here = collide(a, b, pa, pb, margin=0.05)
        there = collide(a, b, (pa[0] + t, pa[1]), (pb[0] + t, pb[1]), margin=0.05)
        assert len(here) == len(there)
        np.testing.assert_allclose(there.points, here.points + t, atol=1e-6)
        np.testing.assert_allclose(there.depths, here.depths, atol=1e-6)
        np.testing.assert_allclose(there.normals, here.normals, atol=1e-6)


def test_degenerate_configurations_give_no_nan():
    """Coincident centres, a box exactly resting, touching boxes, concentric cylinders,
    a sphere centre on a box's corner and at its centre, identical meshes."""
    m = ConvexMesh("m", "A", np.random.default_rng(14).normal(size=(12, 3)))
    m2 = ConvexMesh("m2", "B", m.vertices)
    box, box2 = Box("b", "A", [0.1, 0.1, 0.1]), Box("b2", "B", [0.1, 0.1, 0.1])
    cyl, cyl2 = Cylinder("c", "A", 0.1, 0.2), Cylinder("c2", "B", 0.1, 0.2)
    cases = [
        (Sphere("s", "A", 0.1), Sphere("t", "B", 0.1), None, None),
        (Capsule("c", "A", 0.1, 1), Capsule("d", "B", 0.1, 1), None, None),
        (Capsule("c", "A", 0.1, 1), Sphere("t", "B", 0.1), None, None),
        (Plane("f"), box, None, ([0, 0, 0.1], np.eye(3))),
        (box, box2, None, ([0, 0, 0.2], np.eye(3))),
        (box, box2, None, None),
        (cyl, cyl2, None, None),
        (box, Sphere("t", "B", 0.05), None, ([0.1, 0.1, 0.1], np.eye(3))),
        (box, Sphere("t", "B", 0.05), None, None),
        (m, m2, None, None),
    ]
    for a, b, pa, pb in cases:
        got = collide(a, b, pa, pb)
        assert len(got) >= 1, (a, b)
        for arr in (got.points, got.normals, got.depths):
            assert np.isfinite(arr).all(), (a, b, got)
        np.testing.assert_allclose(np.linalg.norm(got.normals, axis=1), 1.0, atol=1e-12)
    resting = collide(Plane("f"), box, None, ([0, 0, 0.1], np.eye(3)))
    assert len(resting) == 4 and np.all(resting.depths == 0.0)


def test_margin_reports_gaps_as_negative_depths():
    a, b = Sphere("a", "A", 0.1), Box("b", "B", [0.1, 0.1, 0.1])
    far = ([0.0, 0.0, 0.25], np.eye(3))            # a 0.05 m gap
    assert len(collide(b, a, None, far)) == 0
    assert len(collide(b, a, None, far, margin=0.04)) == 0
    got = collide(b, a, None, far, margin=0.06)
    assert got.depths[0] == pytest.approx(-0.05)
    cap = Capsule("cap", "B", 0.1, 0.4, rotation=[0, np.pi / 2, 0])   # (lying: 0.05 m)
    assert len(collide(a, cap, None, far, margin=0.04)) == 0
    assert collide(a, cap, None, far, margin=0.06).depths[0] == pytest.approx(-0.05)
    c = Cylinder("c", "B", 0.1, 0.2)               # (GJK: the same 0.05 m gap)
    assert len(collide(b, c, None, far, margin=0.04)) == 0
    assert collide(b, c, None, far, margin=0.06).depths[0] == pytest.approx(-0.05)


# -- broad phase ------------------------------------------------------------------------

def test_sweep_and_prune_equals_all_pairs():
    """The pairs found equal the brute-force check of all N (N - 1) / 2 boxes."""
    rng = np.random.default_rng(15)
    lo = rng.uniform(0, 10, size=(150, 3))
    hi = lo + rng.uniform(0, 1.5, size=(150, 3))
    lo[0], hi[0] = [-np.inf, -np.inf, -np.inf], [np.inf, np.inf, 0.5]   # a plane's box
    pairs, tests = sweep_and_prune(lo, hi)
    brute = [(i, j) for i, j in itertools.combinations(range(150), 2)
             if np.all(lo[i] <= hi[j]) and np.all(lo[j] <= hi[i])]
    assert pairs == brute
    assert tests < 150 * 149 / 2


def test_a_sparse_scene_costs_far_fewer_than_n_squared_tests(monkeypatch):
    """200 spheres on a 1 m grid (radius 0.1), 5 of them moved onto a neighbour: the
    narrow phase runs for exactly those 5 pairs (counted by wrapping it), and the sweep
    compares a few hundred boxes, not the 19900 pairs."""
    spheres = [Sphere(f"s{k}", f"b{k}", 0.1) for k in range(200)]
    world = CollisionWorld(spheres)
    poses = {f"b{k}": (np.array([k % 20, k // 20, 0.0]), np.eye(3)) for k in range(200)}
    for k in (3, 50, 77, 120, 199):
        poses[f"b{k}"] = (poses[f"b{k - 1}"][0] + [0.15, 0, 0], np.eye(3))
    calls = []
    real = detect.collide

    def counting(*args, **kwargs):
        calls.append((args[0].name, args[1].name))
        return real(*args, **kwargs)

    monkeypatch.setattr(broadphase.detect, "collide", counting)
    found = world.contacts(poses)
    assert len(calls) == 5 and len(found) == 5
    assert sorted(calls) == sorted((f"s{k - 1}", f"s{k}") for k in (3, 50, 77, 120, 199))
    for c in found:
        assert c.depths[0] == pytest.approx(0.05)
    _, tests = sweep_and_prune(*world.aabbs(poses))
    assert tests < 1000, tests            # (N^2 / 2 = 19900)


def test_filters():
    """Same body never; body and parent skipped unless the parent is the ground;
    contype/conaffinity; pairs named on override the groups and the parent rule, pairs
    named off win over everything."""
    floor = Plane("floor")
    base = Sphere("base", "torso", 0.2)
    hip = Sphere("hip", "thigh", 0.2)
    hip2 = Sphere("hip2", "thigh", 0.1)
    foot = Sphere("foot", "shin", 0.1, contype=2, conaffinity=2)
    ghost = Sphere("ghost", "arm", 0.1, contype=0, conaffinity=0)
    shapes = [floor, base, hip, hip2, foot, ghost]
    parents = {"torso": "ground", "thigh": "torso", "shin": "thigh", "arm": "torso"}
    world = CollisionWorld(shapes, parents=parents)
    i = world.index
    assert not world.allowed(i["hip"], i["hip2"])             # same body
    assert not world.allowed(i["base"], i["hip"])             # parent and child
    assert world.allowed(i["floor"], i["base"])               # parent is the ground
    assert world.allowed(i["base"], i["foot"]) is False       # 1 & 2 = 0 both ways
    assert world.allowed(i["floor"], i["hip"])
    assert not world.allowed(i["floor"], i["ghost"])
    assert not world.allowed(i["floor"], i["foot"])           # floor 1 vs foot 2
    assert CollisionWorld(shapes, parents=parents, skip_parent=False).allowed(
        i["base"], i["hip"])
    on = CollisionWorld(shapes, parents=parents, pairs_on=[("hip", "base"), ("foot", "floor")],
                        pairs_off=[("floor", "hip")])
    assert on.allowed(i["base"], i["hip"]) and on.allowed(i["floor"], i["foot"])
    assert not on.allowed(i["floor"], i["hip"])
    # the rule itself, over all masks of 2 bits
    for ta, aa, tb, ab in itertools.product(range(4), repeat=4):
        w = CollisionWorld([Sphere("a", "A", 1, contype=ta, conaffinity=aa),
                            Sphere("b", "B", 1, contype=tb, conaffinity=ab)])
        assert w.allowed(0, 1) == bool((ta & ab) or (tb & aa))
    # all of it through the sweep: everything overlaps, the filters decide
    poses = {b: (np.zeros(3), np.eye(3)) for b in parents}
    got = {tuple(sorted((shapes[a].name, shapes[b].name)))
           for a, b in world.candidate_pairs(poses)}
    assert got == {("base", "floor"), ("floor", "hip"), ("floor", "hip2")}


@pytest.mark.slow
def test_the_kernels_compile_with_numba(monkeypatch):
    """Every kernel compiled with numba gives the same contacts as the Python one on
    every kind pair (the kernels are written to be compiled later: this keeps them so)."""
    from numba import njit

    from elements.contact import gjk, shapes
    modules = (shapes, gjk, detect)
    kernels = {"shapes": ["_sgn", "core_radius", "core_support_point", "support_point"],
               "gjk": ["_dot", "_cross", "_perpendicular", "_support", "_segment",
                       "_triangle", "_closest", "_compact", "gjk_distance", "_face",
                       "_flat_normal", "epa", "_projection", "convex_contact"],
               "detect": ["_emit", "plane_contacts", "segment_closest_xyz",
                          "segment_closest", "capsule_contacts",
                          "sphere_box_contacts", "_flip", "box_box_manifold",
                          "contact_kernel"]}
    # the Python originals first (a run with contact may have compiled them in place
    # already: elements.contact.compiled), for the expected contacts
    for mod in modules:
        for name in kernels[mod.__name__.rsplit(".", 1)[1]]:
            f = getattr(mod, name)
            original = getattr(f, "py_func", f)
            for other in modules:
                if hasattr(other, name):
                    monkeypatch.setattr(other, name, original)
    assert not hasattr(detect.contact_kernel, "py_func")
    rng = np.random.default_rng(16)
    cases, expected = [], []
    for a, b in zoo_pairs(rng):
        for _ in range(5):
            ca, Ra = a.world_pose((rng.normal(size=3) * 0.2, rotation(rng)))
            cb, Rb = b.world_pose((rng.normal(size=3) * 0.2, rotation(rng)))
            m = detect.capacity(a, b)
            args = (a.kind, a.params, a.vertices, ca, Ra, b.kind, b.params, b.vertices,
                    cb, Rb, 0.05)
            out = np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m)
            k = detect.contact_kernel(*args, *out)
            cases.append((args, m))
            expected.append((k, out))
    for mod in modules:
        for name in kernels[mod.__name__.rsplit(".", 1)[1]]:
            compiled = njit(getattr(mod, name))
            for other in modules:
                if hasattr(other, name):
                    monkeypatch.setattr(other, name, compiled)
    assert hasattr(detect.contact_kernel, "py_func")
    for (args, m), (k, out) in zip(cases, expected):
        got = np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m)
        assert detect.contact_kernel(*args, *got) == k
        for x, y in zip(out, got):
            np.testing.assert_allclose(y[:k], x[:k], atol=1e-12)


def test_every_shape_draws_as_its_surface_of_outward_triangles():
    """Shape.surface (what the page and the videos draw, whatever the kind): a closed
    polytope of outward triangles inscribed in the shape: its volume (divergence
    theorem, positive only if every triangle faces out) exact for a box and a mesh's
    hull, within 5 % below the closed form for curved shapes (256 directions), and its
    vertices on the shape's boundary (each is its own support point's distance)."""
    r, L, (a, b, c) = 0.1, 0.4, (0.3, 0.2, 0.1)
    pts = np.random.default_rng(3).normal(size=(40, 3))
    cases = [(Sphere("s", "b", r), 4 / 3 * np.pi * r ** 3, 0.05),
             (Capsule("c", "b", r, L), np.pi * r * r * L + 4 / 3 * np.pi * r ** 3, 0.05),
             (Cylinder("y", "b", r, L), np.pi * r * r * L, 0.05),
             (Ellipsoid("e", "b", [a, b, c]), 4 / 3 * np.pi * a * b * c, 0.05),
             (Box("x", "b", [a, b, c]), 8 * a * b * c, 1e-12),
             (ConvexMesh("m", "b", pts), ConvexMesh("m", "b", pts).volume, 1e-12)]
    for shape, volume, short in cases:
        v, f = shape.surface()
        p, q, w = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
        signed = np.einsum("ij,ij->i", p, np.cross(q, w)) / 6      # per triangle, about 0
        centre = v.mean(axis=0)
        outward = np.einsum("ij,ij->i", np.cross(q - p, w - p), p - centre)
        assert (outward > 0).all(), shape
        assert volume * (1 - short) <= signed.sum() <= volume * (1 + 1e-12), shape
        for x in v[::7]:                # on the boundary: its support along its normal
            n = unit(x - centre) if np.linalg.norm(x - centre) > 0 else np.eye(3)[0]
            assert n @ shape.support(n) >= n @ x - 1e-12, shape
    with pytest.raises(ModelError, match="Plane 'floor': a plane is unbounded"):
        Plane("floor").surface()


def test_the_compiled_early_out_skips_only_rounded_pairs_that_do_not_touch():
    """The compiled wrenches skip a sphere or capsule pair whose segments are farther
    apart than the radii (``elements.contact.compiled._rounded_apart``) before the narrow
    phase: over 4000 random poses of capsule-capsule, capsule-sphere and sphere-sphere
    pairs (centres 0 to 1.2 m apart: about a third touch), it says "apart" exactly
    where the narrow phase (asked with a margin, so that it gives the signed depth of
    pairs apart too) finds no point of positive depth, but for pairs within its 1e-9
    relative slack. A test that also counted one radius' worth of distance (reach
    ra + 2 rb) would keep pairs that do not touch, and one short of a radius would skip
    touching pairs: either fails here."""
    from elements.contact import compiled
    rng = np.random.default_rng(31)
    shapes_ = [Capsule("a", "A", 0.1, 0.6), Capsule("b", "B", 0.15, 0.4),
               Sphere("s", "S", 0.12)]
    skipped = touching = 0
    for _ in range(4000):
        a, b = shapes_[rng.integers(3)], shapes_[rng.integers(3)]
        ca = rng.normal(size=3)
        Ra, Rb = rotation(rng), rotation(rng)
        cb = ca + unit(rng.normal(size=3)) * rng.uniform(0.0, 1.2)
        got = collide(a, b, (ca, Ra), (cb, Rb), margin=3.0)
        assert got.depths.size >= 1
        touches = bool(np.any(got.depths > 0.0))
        apart = compiled._rounded_apart(a.kind, a.params, np.asarray(ca, dtype=float),
                                        np.asarray(Ra, dtype=float), b.kind, b.params,
                                        np.asarray(cb, dtype=float),
                                        np.asarray(Rb, dtype=float))
        if touches:
            touching += 1
            assert not apart, (a.name, b.name, got.depths)
        else:
            skipped += apart
            depth = got.depths.max()
            assert apart or depth > -1e-9 * (a.params[0] + b.params[0]), \
                (a.name, b.name, depth)
    assert touching > 500 and skipped > 1000, (touching, skipped)
