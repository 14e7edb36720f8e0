"""The free joint (6 DOF, type "free") against the free body it writes as a joint.

- From the ground, a tumbling asymmetric body under gravity (turning near its
  intermediate axis) on a FreeJoint moves as the same body left free (no joint): the
  positions, quaternions and angular velocities of the two runs agree to 1e-12, with the
  joint point at the centre and off it with a rest rotation.
- The joint's coordinates (x, y, z: the joint point relative to the parent's, parent
  axes), rates and orientation (quaternion, rotation vector) match their definitions
  computed from the bodies' states.
- From a moving parent (a pendulum), the child moves as a free body and the joint reports
  its motion relative to the parent.

Both runs of a comparison take the same steps (DOP853 held at a fixed step by first_step
= max_step with tolerances that never reject one: the extra coordinate states of the
joint would otherwise change an adaptive step sequence, and the agreement would be the
tolerance's, not the model's).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bondgraph import ModelError
from bondgraph.spatial import as_rotation
from elements import FreeJoint, Inertia, Mechanism, RevoluteJoint, RigidBody

H = 2e-3
STEPS = dict(method="DOP853", first_step=H, max_step=H, rtol=1e-6, atol=1e-6)
GRID = np.linspace(0.0, 2.0, 201)

A0 = as_rotation([0.3, -0.5, 0.8])
R0 = np.array([0.1, 0.2, 0.3])
W0 = np.array([0.05, 6.0, 0.04])        # near the intermediate axis: it tumbles
V0 = np.array([1.0, 0.5, 2.0])
REST = as_rotation([-0.2, 0.1, 0.4])


def _body(name="b"):
    return RigidBody(name, 1.7, Inertia.about_center(
        [[0.05, 0.004, -0.002], [0.004, 0.03, 0.001], [-0.002, 0.001, 0.025]]))


def _same_motion(ra, rb, bodies, tol=1e-12):
    for n in bodies:
        a, b = ra.body(n), rb.body(n)
        for what in ("position", "quaternion", "angular_velocity", "velocity"):
            err = np.abs(getattr(a, what) - getattr(b, what)).max()
            assert err <= tol, (n, what, err)


def _rel_rot(parent_quat, child_quat, rest=np.eye(3)) -> Rotation:
    """The child's rotation relative to the parent beyond ``rest`` (scipy, per time)."""
    def rot(q):
        q = np.asarray(q, dtype=float).T
        return Rotation.from_quat(q[:, [1, 2, 3, 0]])
    child = rot(child_quat) * Rotation.from_matrix(rest).inv()
    return child if parent_quat is None else rot(parent_quat).inv() * child


@pytest.fixture(scope="module")
def free_body_run():
    mech = Mechanism("free_body", gravity=(0.0, -9.81, 0.0))
    mech.add_body(_body())
    assert mech.free_bodies() == ["b"]
    res = mech.assemble().simulate((0.0, 2.0), free={"b": dict(
        rotation=A0, position=R0, angular_velocity=W0, velocity=V0)}, t_eval=GRID, **STEPS)
    assert res.success
    return res


def test_free_joint_from_the_ground_is_the_free_body(free_body_run):
    mech = Mechanism("free_joint", gravity=(0.0, -9.81, 0.0))
    b = mech.add_body(_body())
    mech.add_joint(FreeJoint("F", mech.ground, b))
    assert mech.free_bodies() == []
    mm = mech.assemble()
    res = mm.simulate((0.0, 2.0), q={"F": {"x": R0[0], "y": R0[1], "z": R0[2],
                                           "rotation": A0}},
                      qd={"F": (V0, W0)}, t_eval=GRID, **STEPS)
    assert res.success
    _same_motion(free_body_run, res, ["b"])
    # it does tumble: the angular velocity's body-y component changes sign
    wb = res.body("b").angular_velocity_body
    assert wb[1].min() < -2 and wb[1].max() > 2
    jr = res.joint("F")
    assert jr.coordinates == ("x", "y", "z")
    assert np.abs(jr.q - res.body("b").position).max() < 1e-12
    assert np.abs(jr.qd - res.body("b").velocity).max() < 1e-12
    assert np.abs(jr.force).max() == 0.0 and np.abs(jr.moment).max() == 0.0
    ref = _rel_rot(None, res.body("b").quaternion)
    q = jr.quaternion
    sign = np.sign(np.einsum("in,in->n", q, res.body("b").quaternion))
    assert np.abs(q * sign - res.body("b").quaternion /
                  np.linalg.norm(res.body("b").quaternion, axis=0)).max() < 1e-12
    assert np.abs(jr.rotation_vector - ref.as_rotvec().T).max() < 1e-12
    _, cols, _ = res.columns()
    units = res.units()
    for c in ("F.x.q", "F.y.qd", "F.qw", "F.qz", "F.rx", "F.rz"):
        assert c in cols and c in units
    assert units["F.z.q"]["unit"] == "m" and units["F.ry"]["unit"] == "rad"


def test_a_spring_on_a_free_joint_port_acts(free_body_run):
    """The ports carry efforts: a spring on x (k = 50 N/m, rest 0) pulls the body
    off the free body's path (by more than 1e-2 m), along x only at the start."""
    mech = Mechanism("free_joint_spring", gravity=(0.0, -9.81, 0.0))
    b = mech.add_body(_body())
    mech.add_joint(FreeJoint("F", mech.ground, b, spring={"x": 50.0}))
    res = mech.assemble().simulate((0.0, 2.0), q={"F": (R0, A0)}, qd={"F": (V0, W0)},
                                   t_eval=GRID, **STEPS)
    off = np.abs(res.body("b").position - free_body_run.body("b").position).max(axis=1)
    assert off[0] > 1e-2 and off[1] < 1e-12 and off[2] < 1e-12
    assert np.abs(res.joint("F").spring[0] + 50.0 * (res.joint("F").q[0])).max() < 1e-9


def test_free_joint_off_the_centre_with_a_rest_rotation(free_body_run):
    """Q off the centre, a rest rotation: the initial values that put the body where the
    free body starts give the same motion; x, y, z follow r + A Q."""
    Q = np.array([0.1, -0.05, 0.2])
    P = np.array([0.3, 0.0, -0.1])
    mech = Mechanism("free_joint_off", gravity=(0.0, -9.81, 0.0))
    b = mech.add_body(_body())
    mech.add_joint(FreeJoint("F", mech.ground, b, parent_point=P, child_point=Q,
                             rest_rotation=REST))
    mm = mech.assemble()
    d = R0 + A0 @ Q - P
    d_rate = V0 + np.cross(W0, A0 @ Q)
    res = mm.simulate((0.0, 2.0), q={"F": (d, A0 @ REST.T)}, qd={"F": (d_rate, W0)},
                      t_eval=GRID, **STEPS)
    assert res.success
    _same_motion(free_body_run, res, ["b"], tol=1e-12)
    br = res.body("b")
    want = br.position + np.einsum("nij,j->in", br.rotation, Q) - P[:, None]
    assert np.abs(res.joint("F").q - want).max() < 1e-12
    ref = _rel_rot(None, br.quaternion, REST)
    assert np.abs(res.joint("F").rotation_vector - ref.as_rotvec().T).max() < 1e-12


def test_free_joint_on_a_moving_parent():
    """A pendulum carries a FreeJoint to a body: the body moves as if free (compared
    with the same body free), and the joint reports x, y, z = A_a^T (r_Q - r_P), their
    rates, and the rotation A_a^T A_b."""
    P, Q = np.array([0.0, -0.4, 0.1]), np.array([0.05, 0.0, -0.1])

    def pendulum(name):
        mech = Mechanism(name, gravity=(0.0, -9.81, 0.0))
        a = mech.add_body(RigidBody("a", 2.0, Inertia.about_center(
            np.diag([0.04, 0.01, 0.04]))))
        mech.add_joint(RevoluteJoint("J", mech.ground, a, axis=(0, 0, 1),
                                     child_point=(0.0, 0.3, 0.0)))
        return mech, a

    mech, a = pendulum("with_free_joint")
    b = mech.add_body(_body())
    fj = FreeJoint("F", a, b, parent_point=P, child_point=Q)
    mech.add_joint(fj)
    mm = mech.assemble()
    q0 = {"J": 0.6, "F": {"x": 0.1, "y": -0.2, "z": 0.05, "rotation": [0.2, 0.4, -0.1]}}
    qd0 = {"J": -1.0, "F": {"x": 0.3, "z": -0.2, "angular_velocity": [1.0, 4.0, -0.5]}}
    res = mm.simulate((0.0, 2.0), q=q0, qd=qd0, t_eval=GRID, **STEPS)
    assert res.success

    # the same body, free, from the same pose and twist
    x0 = mm.initial_state(q0, qd0)
    pose, twist = mm.poses(x0)["b"], mm.twists(x0)["b"]
    mech2, _ = pendulum("with_free_body")
    mech2.add_body(_body())
    res2 = mech2.assemble().simulate(
        (0.0, 2.0), q={"J": 0.6}, qd={"J": -1.0}, free={"b": dict(
            rotation=pose[0], position=pose[1], angular_velocity=twist[0],
            velocity=twist[1])}, t_eval=GRID, **STEPS)
    _same_motion(res, res2, ["a", "b"], tol=1e-12)

    ra, rb = res.body("a"), res.body("b")
    rP = ra.position + np.einsum("nij,j->in", ra.rotation, P)
    rQ = rb.position + np.einsum("nij,j->in", rb.rotation, Q)
    want = np.einsum("nji,jn->in", ra.rotation, rQ - rP)
    jr = res.joint("F")
    assert np.abs(jr.q[:, 0] - [0.1, -0.2, 0.05]).max() < 1e-12
    assert np.abs(jr.q - want).max() < 1e-11          # integrated ports vs poses
    vP = ra.velocity + np.cross(ra.angular_velocity.T, (rP - ra.position).T).T
    vQ = rb.velocity + np.cross(rb.angular_velocity.T, (rQ - rb.position).T).T
    rate = np.einsum("nji,jn->in", ra.rotation,
                     vQ - vP - np.cross(ra.angular_velocity.T, (rQ - rP).T).T)
    assert np.abs(jr.qd - rate).max() < 1e-12
    assert np.abs(jr.qd[:, 0] - [0.3, 0.0, -0.2]).max() < 1e-12
    ref = _rel_rot(ra.quaternion, rb.quaternion)
    assert np.abs(jr.rotation_vector - ref.as_rotvec().T).max() < 1e-12
    assert np.abs(jr.rotation_vector[:, 0] - [0.2, 0.4, -0.1]).max() < 1e-12
    w_rel = np.einsum("nji,jn->in", ra.rotation, rb.angular_velocity - ra.angular_velocity)
    assert np.abs(w_rel[:, 0] - [1.0, 4.0, -0.5]).max() < 1e-12


def test_free_joint_inputs():
    mech = Mechanism("inputs")
    b = mech.add_body(_body())
    with pytest.raises(ModelError, match="free joint 'F' has no axis"):
        FreeJoint("F", mech.ground, b, axis=(0, 0, 1))
    fj = mech.add_joint(FreeJoint("F", mech.ground, b, spring={"z": 10.0}))
    assert fj.n_free == 3 and fj.free_rotation and not fj.constraint_blocks()
    assert [ax.port for ax in fj.axes] == ["F.x", "F.y", "F.z"]
    q, qd = fj.initial_values([1, 2, 3], {"angular_velocity": [0, 0, 1]})
    assert np.array_equal(q[0], [1, 2, 3]) and np.array_equal(q[1], np.eye(3))
    assert np.array_equal(qd[0], [0, 0, 0]) and np.array_equal(qd[1], [0, 0, 1])
    assert np.allclose(fj.initial_values(q)[0][1], q[1])          # its own form again
    for bad, match in (({"rotation": [1, 2]}, "rotation"), ({"w": 1}, "'w'"),
                       ([1, 2], "3 finite numbers"), ((None, [[2, 0, 0]] * 3), "rotation")):
        with pytest.raises(ModelError, match=match):
            fj.initial_values(bad)
    with pytest.raises(ModelError, match="angular velocity"):
        fj.initial_values(None, {"angular_velocity": [1, np.inf, 0]})
    mm = mech.assemble()
    x = mm.initial_state({"F": {"z": 0.2, "rotation": [0.0, 0.0, 0.5]}})
    A, r = mm.poses(x)["b"]
    assert np.allclose(r, [0, 0, 0.2]) and np.allclose(A, as_rotation([0, 0, 0.5]))
    assert mm.model.state_slices["F.z.coord"] is not None
