"""The free body is a free joint to the ground (issue 34): one path.

- A body that is nobody's child stands on an implicit ``FreeJoint`` from the ground
  without ports (named after the body); the same joint written out,
  ``FreeJoint("F", ground, b, ports=False)``, assembles the same model: the same state
  names and layout, the same derivatives at a random state (to 1e-15 relative: both
  evaluate the same graph, so they agree to the last bit unless a path differs), the
  same initial state from ``free=`` and the same run.
- Off the centre and turned at rest, the written-out joint's ``free=`` start still
  puts the centre where it says (to 1e-15: two products with the identity and a cross
  product, rounding only).
- ``free=`` and the joint's own ``q`` at once are refused, naming the body and the
  joint; ``ports=False`` from a moving body is refused; a free joint with ports is not
  a free body (its coordinates have states, ``free=`` is refused for its child).
- FastDynamics and direct_dynamics take the written-out joint as the floating base it
  is (same coordinates, same accelerations).
"""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import ModelError
from bondgraph.spatial import as_rotation
from elements import FastDynamics, FreeJoint, Inertia, Mechanism, RevoluteJoint, RigidBody
from elements.analysis.dynamics import direct_dynamics

START = dict(rotation=as_rotation([0.3, -0.5, 0.8]), position=[0.1, 0.2, 0.3],
             angular_velocity=[0.05, 6.0, 0.04], velocity=[1.0, 0.5, 2.0])


def _rotvec(A):
    from scipy.spatial.transform import Rotation
    return Rotation.from_matrix(A).as_rotvec()


def _mechanism(name, written_out, **joint):
    """A pendulum from the ground (a tree beside the free body) and a body ``b`` hung
    from nothing: left free, or on a FreeJoint from the ground written out."""
    mech = Mechanism(name, gravity=(0.0, -9.81, 0.0))
    a = mech.add_body(RigidBody("a", 2.0, Inertia.about_center(np.diag([0.04, 0.01, 0.04]))))
    mech.add_joint(RevoluteJoint("J", mech.ground, a, axis=(0, 0, 1),
                                 child_point=(0.0, 0.3, 0.0)))
    b = mech.add_body(RigidBody("b", 1.7, Inertia.about_center(
        [[0.05, 0.004, -0.002], [0.004, 0.03, 0.001], [-0.002, 0.001, 0.025]])))
    if written_out:
        mech.add_joint(FreeJoint("F", mech.ground, b, ports=False, **joint))
    return mech


def _same_model(m1, m2, rel=1e-15):
    """Same state names and slices, same derivatives at a random state."""
    s1, s2 = m1.model, m2.model
    assert s1.state_names == s2.state_names
    assert {k: (v.start, v.stop) for k, v in s1.state_slices.items()} == \
        {k: (v.start, v.stop) for k, v in s2.state_slices.items()}
    x = np.random.default_rng(7).normal(size=s1.n_states)
    d1, d2 = s1.evaluate(0.3, x).xdot, s2.evaluate(0.3, x).xdot
    assert np.abs(d1 - d2).max() <= rel * np.abs(d1).max()


def test_a_free_body_is_its_free_joint_to_the_ground():
    implicit = _mechanism("implicit", False)
    explicit = _mechanism("explicit", True)
    assert implicit.free_bodies() == explicit.free_bodies() == ["b"]
    fj = implicit.free_joints()[0]
    assert (fj.name, fj.parent.name, fj.child.name, fj.is_free_body) == \
        ("b", "ground", "b", True) and "b" not in implicit.joints
    assert explicit.free_joints() == [explicit.joints["F"]]
    m1, m2 = implicit.assemble(), explicit.assemble()
    assert [j.name for j in m1.tree] == ["J", "b"] and [j.name for j in m2.tree] == ["J", "F"]
    _same_model(m1, m2)
    x1 = m1.initial_state({"J": 0.6}, {"J": -1.0}, free={"b": START})
    x2 = m2.initial_state({"J": 0.6}, {"J": -1.0}, free={"b": START})
    assert np.array_equal(x1, x2)
    A, r = m1.poses(x1)["b"]
    assert np.abs(A - START["rotation"]).max() <= 1e-15
    assert np.abs(r - START["position"]).max() == 0.0
    (d, R), (d_rate, w) = m2.mechanism.joints["F"].center_values(START)
    x3 = m2.initial_state({"J": 0.6, "F": (d, R)}, {"J": -1.0, "F": (d_rate, w)})
    # (the joint's own q passes its rotation through as_rotation again: an ulp or two)
    assert np.abs(x2 - x3).max() <= 1e-15
    t = np.linspace(0.0, 1.0, 11)
    r1 = m1.simulate((0.0, 1.0), x0=x1, t_eval=t)
    r2 = m2.simulate((0.0, 1.0), x0=x2, t_eval=t)
    assert r1.success and r2.success
    assert np.array_equal(r1.raw.x, r2.raw.x) and r1.raw.nfev == r2.raw.nfev
    for what in ("position", "quaternion", "velocity", "angular_velocity"):
        assert np.array_equal(getattr(r1.body("b"), what), getattr(r2.body("b"), what))
    # the joint written out reports the body's motion as its own (no ports: no q)
    assert np.abs(r2.joint("F").rotation_vector[:, 0] -
                  _rotvec(START["rotation"])).max() <= 1e-15


def test_the_written_out_joint_off_the_centre_starts_where_free_says():
    """P off the origin, Q off the centre, a rest rotation: the same model, and
    free={'b': ...} puts the centre where it says, at the twist it says."""
    m1 = _mechanism("implicit", False).assemble()
    m2 = _mechanism("offset", True, parent_point=(0.3, 0.0, -0.1),
                    child_point=(0.1, -0.05, 0.2),
                    rest_rotation=as_rotation([-0.2, 0.1, 0.4])).assemble()
    _same_model(m1, m2)
    x1 = m1.initial_state(free={"b": START})
    x2 = m2.initial_state(free={"b": START})
    # (the translation's round trip r -> d -> r: a few ulps of |r + A Q - P|)
    assert np.abs(x1 - x2).max() <= 1e-15 * 4
    # the twist read back from the momenta (an inertia solve: a few ulps of |w| = 6)
    w, v = m2.twists(x2)["b"]
    ulps = 4 * np.finfo(float).eps * 6.0
    assert np.abs(v - START["velocity"]).max() <= ulps
    assert np.abs(w - START["angular_velocity"]).max() <= ulps


def test_free_starts_and_free_joints_refused_where_they_do_not_fit():
    mm = _mechanism("explicit", True).assemble()
    with pytest.raises(ModelError, match=r"free body 'b': its start is given twice.*"
                                         r"free joint 'F'"):
        mm.initial_state({"F": (np.zeros(3), np.eye(3))}, free={"b": START})
    # its own q without ports: x, y, z by name or 3 numbers, as with them
    fj = mm.mechanism.joints["F"]
    (d, R), _ = fj.initial_values({"y": 2.0, "rotation": [0.0, 0.0, 0.5]})
    assert np.array_equal(d, [0.0, 2.0, 0.0]) and np.allclose(R, as_rotation([0, 0, 0.5]))
    with pytest.raises(ModelError, match="free joint 'F': initial coordinate names 'w'"):
        fj.initial_values({"w": 1.0})
    with pytest.raises(ModelError, match="free joint 'F': its initial rate .* 3 finite"):
        fj.initial_values(None, [1.0, 2.0])
    with pytest.raises(ModelError, match="free body 'b': position must be 3 finite"):
        mm.initial_state(free={"b": {"position": [1.0, np.nan, 0.0]}})
    mech = _mechanism("moving", False)
    with pytest.raises(ModelError, match="free joint 'K': ports=False is the free body, "
                                         "from the ground only"):
        FreeJoint("K", mech.bodies["a"], mech.bodies["b"], ports=False)
    with pytest.raises(ModelError, match="no ports.*spring"):
        FreeJoint("K", mech.ground, mech.bodies["b"], ports=False, spring={"x": 1.0})
    # with ports it is a joint with coordinates, not the free body
    mech.add_joint(FreeJoint("K", mech.ground, mech.bodies["b"]))
    assert mech.free_bodies() == [] and mech.free_joints() == []
    mm = mech.assemble()
    assert "K.x.coord" in mm.model.state_names
    with pytest.raises(ModelError, match="free-body state given for b, which are not free "
                                         "bodies; free bodies: none"):
        mm.initial_state(free={"b": START})


def test_fast_dynamics_and_direct_dynamics_take_the_written_out_joint():
    m1 = _mechanism("implicit", False).assemble()
    m2 = _mechanism("explicit", True).assemble()
    f1, f2 = FastDynamics(m1), FastDynamics(m2)
    assert f1.coordinate_names == f2.coordinate_names
    assert f2.coordinate_names[:7] == ("b.x", "b.y", "b.z", "b.qw", "b.qx", "b.qy", "b.qz")
    rng = np.random.default_rng(3)
    q = rng.normal(size=f1.n_q)
    q[3:7] /= np.linalg.norm(q[3:7])
    qd, tau = rng.normal(size=f1.n_v), rng.normal(size=f1.n_v)
    assert np.array_equal(f1.direct_dynamics(q, qd, tau), f2.direct_dynamics(q, qd, tau))
    for method in ("auto", "bond_graph"):
        a = direct_dynamics(m1, {"J": 0.4}, {"J": 1.0}, {}, free={"b": START}, method=method)
        b = direct_dynamics(m2, {"J": 0.4}, {"J": 1.0}, {}, free={"b": START}, method=method)
        assert a.keys() == b.keys() == {"J", "b.a", "b.alpha"}
        for k in a:
            assert np.array_equal(a[k], b[k]), (method, k)
