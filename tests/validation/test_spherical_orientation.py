"""A spherical joint's reported orientation (JointResult.quaternion, .rotation_vector and
the columns <joint>.qw/.qx/.qy/.qz, .rx/.ry/.rz) against an independent computation:
scipy's Rotation applied to the bodies' own quaternion states and the joint frames.

- A spinning top on a spherical joint to the ground (rest rotation, joint point off the
  centre): the relative rotation passes half a turn, so the quaternion's scalar part
  changes sign and sign continuity is exercised.
- A double spherical pendulum whose second joint has an axis (a joint frame that is not
  the parent's axes) and a moving parent.

Both to 1e-12; a reference that forgets the rest rotation (or swaps the bodies) misses by
more than 1e-2.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bondgraph.spatial import as_rotation
from elements import Inertia, Mechanism, RevoluteJoint, RigidBody, SphericalJoint

REST = as_rotation([0.4, -0.3, 0.2])


def _body(name, mass, diag):
    return RigidBody(name, mass, Inertia.about_center(np.diag(diag)))


def _rot(quats: np.ndarray) -> Rotation:
    """Rotations of quaternion states (4, n), scalar first."""
    q = np.asarray(quats, dtype=float).T
    return Rotation.from_quat(q[:, [1, 2, 3, 0]])


def _quat(rot: Rotation) -> np.ndarray:
    """(4, n) scalar-first quaternions of ``rot``."""
    return rot.as_quat()[:, [3, 0, 1, 2]].T


def _sign_free_error(got: np.ndarray, ref: np.ndarray) -> float:
    """max over time of min(|got - ref|, |got + ref|) (quaternions, (4, n))."""
    a = np.abs(got - ref).max(axis=0)
    b = np.abs(got + ref).max(axis=0)
    return float(np.minimum(a, b).max())


def _check_orientation(jr, ref: Rotation, tol=1e-12):
    q = jr.quaternion
    assert q.shape == (4, jr.q.size if jr.q.ndim == 1 else jr.q.shape[-1])
    assert q[0, 0] >= 0
    assert np.all(np.einsum("in,in->n", q[:, 1:], q[:, :-1]) > 0)     # continuous
    assert np.abs(np.linalg.norm(q, axis=0) - 1).max() < 1e-14
    assert _sign_free_error(q, _quat(ref)) < tol
    rv = jr.rotation_vector
    assert np.linalg.norm(rv, axis=0).max() <= np.pi + 1e-15
    assert np.abs(rv - ref.as_rotvec().T).max() < tol


@pytest.fixture(scope="module")
def top():
    mech = Mechanism("top", gravity=(0.0, 0.0, -9.81))
    b = mech.add_body(_body("b", 1.5, [0.02, 0.02, 0.035]))
    mech.add_joint(SphericalJoint("S", mech.ground, b, parent_point=(0.1, 0.0, 0.05),
                                  child_point=(0.0, 0.0, -0.2), rest_rotation=REST))
    mm = mech.assemble()
    spin = REST @ np.array([0.3, 0.2, 40.0])     # fast about the body's symmetry axis
    res = mm.simulate((0.0, 1.0), q={"S": [0.3, 0.1, 0.0]}, qd={"S": spin},
                      t_eval=np.linspace(0.0, 1.0, 401), rtol=1e-11, atol=1e-11)
    assert res.success
    return res


def test_top_orientation_is_the_body_rotation_beyond_the_rest(top):
    """Ground parent, no axis: the reported rotation is A_b R0^T (R0 the rest rotation)."""
    jr = top.joint("S")
    ref = _rot(top.body("b").quaternion) * Rotation.from_matrix(REST).inv()
    _check_orientation(jr, ref)
    assert jr.quaternion[0].min() < -0.5       # past half a turn: sign continuity mattered
    wrong = _rot(top.body("b").quaternion)      # the rest rotation forgotten
    assert _sign_free_error(jr.quaternion, _quat(wrong)) > 1e-2


def test_top_columns_and_units(top):
    _, cols, _ = top.columns()
    jr = top.joint("S")
    for k, ax in enumerate("wxyz"):
        assert np.array_equal(cols[f"S.q{ax}"], jr.quaternion[k])
    for k, ax in enumerate("xyz"):
        assert np.array_equal(cols[f"S.r{ax}"], jr.rotation_vector[k])
    units = top.units()
    assert units["S.qw"]["unit"] == "1" and units["S.rz"]["unit"] == "rad"
    assert "child joint frame" in units["S.qx"]["frame"]
    assert set(cols) - {"t"} <= set(units)


def test_double_spherical_with_an_axis_on_a_moving_parent():
    """S2 between two moving bodies, its joint frame set by an axis: the reported rotation
    is (A_a Fa)^T (A_b Fb), Fb = R0^T Fa."""
    mech = Mechanism("double", gravity=(0.0, -9.81, 0.0))
    a = mech.add_body(_body("a", 1.0, [0.03, 0.01, 0.025]))
    b = mech.add_body(_body("b", 0.6, [0.01, 0.02, 0.015]))
    mech.add_joint(SphericalJoint("S1", mech.ground, a, child_point=(0.0, 0.25, 0.0)))
    s2 = SphericalJoint("S2", a, b, parent_point=(0.05, -0.25, 0.0),
                        child_point=(0.0, 0.2, 0.03), axis=(0.3, 0.2, 1.0),
                        rest_rotation=REST)
    mech.add_joint(s2)
    # another kind's result has no orientation
    mech.add_body(_body("c", 0.3, [0.01, 0.01, 0.01]))
    mech.add_joint(RevoluteJoint("J", b, mech.body("c"), axis=(0, 0, 1),
                                 child_point=(0.1, 0.0, 0.0)))
    mm = mech.assemble()
    res = mm.simulate((0.0, 0.8), q={"S1": [0.5, 0.0, 0.3], "S2": [0.0, 1.0, -0.4]},
                      qd={"S1": [0.0, 2.0, 1.0], "S2": [6.0, -3.0, 4.0]},
                      t_eval=np.linspace(0.0, 0.8, 201), rtol=1e-11, atol=1e-11)
    assert res.success
    Fa = Rotation.from_matrix(s2.Fa)
    Fb = Rotation.from_matrix(REST.T @ s2.Fa)
    Ra, Rb = _rot(res.body("a").quaternion), _rot(res.body("b").quaternion)
    ref = (Ra * Fa).inv() * (Rb * Fb)
    _check_orientation(res.joint("S2"), ref)
    swapped = (Rb * Fb).inv() * (Ra * Fa)
    assert _sign_free_error(res.joint("S2").quaternion, _quat(swapped)) > 1e-2
    _check_orientation(res.joint("S1"), Ra)
    jr = res.joint("J")
    assert jr.quaternion is None and jr.rotation_vector is None
    _, cols, _ = res.columns()
    assert "J.qw" not in cols and "J.rx" not in cols and "S2.qw" in cols
