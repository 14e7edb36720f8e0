"""The general chain joint (elements.joints.chain): chains of revolutes and slides through
massless links that no special kind takes, against MuJoCo's mj_forward and Pinocchio's
ABA (joint-space formulations, independent of ours), its forward kinematics against
the product of the members' transforms, and a free motion's energy and constraint
residual.

Tolerances: accelerations 1e-8 relative to max(1, the largest of the reference's), as
tests/validation/test_mjcf.py (both sides are exact to rounding: we see 1e-12 to 1e-14;
a member's point 1 mm off moves them by 1e-3, see
test_a_wrong_member_offset_is_caught).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import expm

from bondgraph.spatial import skew
from elements import (
    ChainAxis, ChainJoint, Inertia, Mechanism, RevoluteJoint, RigidBody, RobotImportWarning,
)
from mechanisms import urdf_inertial, urdf_joint        # (tests/helpers)

TOL = 1e-8

# four chains, one per body: two slides (not perpendicular); two hinges whose axes miss
# each other (offset 5 cm: a universal joint with axis2_offset); a proper-Euler gimbal (z, then an axis at 60 degrees to it,
# then one at 60 degrees to that, meeting at a point); slide, hinge, slide. A pendulum
# hangs from the first so that the chain carries a moving subtree.
CHAINS_XML = """<mujoco model="chains">
  <option gravity="0.3 -0.5 -9.81"><flag contact="disable"/></option>
  <worldbody>
    <body name="sled" pos="0 0 1" quat="0.97 0.1 -0.2 0.05">
      <joint name="s1" type="slide" axis="1 0 0"/>
      <joint name="s2" type="slide" axis="0.3 1 0"/>
      <geom type="box" size="0.1 0.05 0.04" density="800"/>
      <body name="bob" pos="0.1 0.02 -0.05">
        <joint name="swing" type="hinge" axis="0 1 0.2"/>
        <geom type="capsule" fromto="0 0 0 0.02 0 -0.3" size="0.02" density="1200"/>
      </body>
    </body>
    <body name="skew" pos="1 0 1">
      <joint name="k1" type="hinge" pos="0 0 0.05" axis="1 0 0"/>
      <joint name="k2" type="hinge" pos="0.02 0.03 -0.04" axis="0 1 0.2"/>
      <geom type="capsule" fromto="0 0 0 0.05 0.1 -0.3" size="0.03" density="900"/>
    </body>
    <body name="euler" pos="2 0 1">
      <joint name="e1" type="hinge" pos="0 0 0.02" axis="0 0 1"/>
      <joint name="e2" type="hinge" pos="0 0 0.02" axis="0.8660254037844386 0 0.5"/>
      <joint name="e3" type="hinge" pos="0 0 0.02"
             axis="0.4330127018922193 -0.8660254037844386 0.25"/>
      <geom type="box" size="0.12 0.05 0.03" pos="0.03 0.01 -0.1" density="700"/>
    </body>
    <body name="shs" pos="3 0 1">
      <joint name="h1" type="slide" axis="1 0 0"/>
      <joint name="h2" type="hinge" pos="0.05 0 0" axis="0 0 1"/>
      <joint name="h3" type="slide" axis="0 0.7071067811865476 0.7071067811865476"/>
      <geom type="box" size="0.08 0.06 0.03" pos="0.02 0.03 0" density="1000"/>
    </body>
  </worldbody>
</mujoco>"""

CHAIN_OF = {"sled": ["s1", "s2"], "skew": ["k1", "k2"], "euler": ["e1", "e2", "e3"],
            "shs": ["h1", "h2", "h3"]}


def _mjcf(text: str):
    from elements.files.mjcf import loads_mjcf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        return loads_mjcf(text)


def _mujoco_model(text: str):
    from elements.files.mjcf import _compile
    from mujoco_reference import comparable
    return comparable(_compile(text, None, "chains.xml"))


def test_chains_equal_mj_forward():
    """Each of the four chains is one joint whose coordinates are the file's joints
    (the two slides a translation joint, the skew hinges a universal joint with an
    offset, the others chain joints); qacc and every body's acceleration equal
    mj_forward at 8 random states."""
    pytest.importorskip("mujoco")
    from mujoco_reference import compare
    mech = _mjcf(CHAINS_XML)
    report = mech.import_report
    assert report.composed == {m[0]: m for m in CHAIN_OF.values()}
    kinds = {"sled": "translation", "skew": "universal"}
    for body, members in CHAIN_OF.items():
        assert mech.joint(members[0]).type_name == kinds.get(body, "chain")
    mm = mech.assemble()
    model = _mujoco_model(CHAINS_XML)
    rng = np.random.default_rng(21)
    worst = max(compare(model, mech, mm, rng)[0] for _ in range(8))
    assert worst < TOL, worst


def test_a_wrong_member_offset_is_caught():
    """The same comparison with the skew chain's second hinge moved 1 mm along x in our
    model only: the accelerations differ by far more than the tolerance (the check can
    fail)."""
    pytest.importorskip("mujoco")
    from mujoco_reference import compare
    wrong = CHAINS_XML.replace('pos="0.02 0.03 -0.04"', 'pos="0.021 0.03 -0.04"')
    assert wrong != CHAINS_XML
    mech = _mjcf(wrong)
    mm = mech.assemble()
    model = _mujoco_model(CHAINS_XML)
    rng = np.random.default_rng(21)
    worst = max(compare(model, mech, mm, rng)[0] for _ in range(3))
    assert worst > 100 * TOL, worst


URDF_CHAINS = f"""<robot name="skew_chains">
  <link name="base">{urdf_inertial(3.0, "0 0 0.1", (0.05, 0.06, 0.07))}</link>
  <link name="v1"/><link name="v2"/><link name="v3"/>
  <link name="A">{urdf_inertial(2.0, "0.05 0.02 -0.3", (0.03, 0.025, 0.02))}</link>
  <link name="B">{urdf_inertial(1.5, "0 0.1 -0.2", (0.02, 0.015, 0.018))}</link>
  {urdf_joint("w1", "base", "v1", "0 0 0.5", "0 0 1")}
  {urdf_joint("w2", "v1", "A", "0.04 0.03 0.1", "1 0 0.3", rpy="0.3 0 0.2")}
  {urdf_joint("r1", "A", "v2", "0.1 0 -0.6", "0 1 0")}
  {urdf_joint("r2", "v2", "v3", "0.02 0 -0.05", "1 0.2 0", kind="prismatic")}
  {urdf_joint("r3", "v3", "B", "0 0.04 0.03", "0.1 0 1", rpy="0 0.4 0")}
</robot>"""


@pytest.mark.parametrize("floating", [False, True])
def test_urdf_chains_through_massless_links_equal_pinocchio(tmp_path, floating):
    """Two revolutes whose axes miss each other (a universal joint with an offset), and
    revolute, slide, revolute with offsets (a chain joint), through massless URDF links:
    forward dynamics equal to Pinocchio's ABA at 20 random states to 1e-8 relative."""
    pin = pytest.importorskip("pinocchio")
    from pinocchio_reference import compare
    from elements.files.urdf import load_urdf
    path = tmp_path / "skew.urdf"
    path.write_text(URDF_CHAINS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(str(path), floating_base=floating)
    report = mech.import_report
    assert report.composed == {"w1": ["w1", "w2"], "r1": ["r1", "r2", "r3"]}
    assert {j: mech.joint(j).type_name for j in report.composed} == \
        {"w1": "universal", "r1": "chain"}
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(str(path))
    data = model.createData()
    mm = mech.assemble()
    rng = np.random.default_rng(4)
    worst = max(compare(model, data, mm, report, rng, floating, {}) for _ in range(20))
    assert worst <= TOL, worst


MEMBERS = [ChainAxis("prismatic", (1.0, 0.2, -0.1)),
           ChainAxis("revolute", (0.0, 0.3, 1.0), (0.05, -0.02, 0.0)),
           ChainAxis("revolute", (1.0, 0.0, 0.2), (0.0, 0.1, 0.04)),
           ChainAxis("prismatic", (0.0, 1.0, 0.5))]


def _twist_matrix(member: ChainAxis, offset) -> np.ndarray:
    """The 4 x 4 twist of a member (parent coordinates about the joint point)."""
    s = np.asarray(member.axis, dtype=float)
    s = s / np.linalg.norm(s)
    X = np.zeros((4, 4))
    if member.kind == "revolute":
        X[:3, :3] = skew(s)
        X[:3, 3] = -np.cross(s, np.asarray(offset, dtype=float))
    else:
        X[:3, 3] = s
    return X


def test_forward_kinematics_is_the_product_of_the_member_transforms():
    """child_pose at random q equals the product of the members' homogeneous transforms
    exp(X_k q_k) (scipy's matrix exponential: an independent formula) composed with the
    bodies' frames, to 1e-12; link_poses' last is that product and
    coordinate(child_pose(q)) returns q."""
    mech = Mechanism("fk")
    a = mech.add_body(RigidBody("a", 1.0, Inertia.about_center(np.diag([0.1, 0.2, 0.3]))))
    b = mech.add_body(RigidBody("b", 1.0, Inertia.about_center(np.diag([0.1, 0.2, 0.3]))))
    P, Q = np.array([0.2, -0.1, 0.05]), np.array([0.03, 0.1, -0.02])
    R0 = expm(skew([0.3, -0.2, 0.5]))
    j = ChainJoint("C", a, b, members=MEMBERS, parent_point=P, child_point=Q,
                   rest_rotation=R0)
    assert j.coordinate_names == ("slide1", "angle2", "angle3", "slide4")
    rng = np.random.default_rng(9)
    for _ in range(10):
        q = rng.uniform(-1.0, 1.0, 4)
        A_a, r_a = expm(skew(rng.normal(size=3))), rng.normal(size=3)
        T = np.eye(4)
        for m, qk in zip(MEMBERS, q):
            T = T @ expm(_twist_matrix(m, m.offset) * qk)
        # (the members' offsets: each revolute's point, relative to P)
        A_b, r_b = j.child_pose(A_a, r_a, q)
        assert np.abs(A_b - A_a @ T[:3, :3] @ R0).max() < 1e-12
        r_Q = r_a + A_a @ (P + T[:3, 3])                      # Q moved with the chain
        assert np.abs(r_b + A_b @ Q - r_Q).max() < 1e-12
        R, t = j.link_poses(q)[-1]
        assert np.abs(R - T[:3, :3]).max() < 1e-12
        assert np.abs(t - (P + T[:3, 3] - T[:3, :3] @ P)).max() < 1e-12
        assert np.abs(j.coordinate(A_a, r_a, A_b, r_b) - q).max() < 1e-10


def test_bad_chains_are_refused_naming_the_joint():
    mech = Mechanism("bad")
    a = mech.add_body(RigidBody("a", 1.0, Inertia.about_center(np.diag([0.1, 0.2, 0.3]))))
    with pytest.raises(Exception, match=r"chain joint 'C': its members' motions are "
                                        r"dependent at rest"):
        ChainJoint("C", mech.ground, a, members=[("prismatic", (1, 0, 0)),
                                                  ("prismatic", (2, 0, 0))])
    with pytest.raises(Exception, match=r"chain joint 'C': member 2 kind 'ball'"):
        ChainJoint("C", mech.ground, a, members=[("prismatic", (1, 0, 0)),
                                                  ("ball", (0, 1, 0))])
    with pytest.raises(Exception, match=r"chain joint 'C': members must be 1 to 6"):
        ChainJoint("C", mech.ground, a, members=[("revolute", (1, 0, 0))] * 7)


ENERGY_MEMBERS = [ChainAxis("revolute", (0.0, 0.0, 1.0), (0.1, 0.0, 0.0)),
                  ChainAxis("prismatic", (1.0, 0.2, 0.0)),
                  ChainAxis("revolute", (0.0, 1.0, 0.3), (0.0, 0.05, 0.1))]
"""Revolute, slide, revolute with offsets: never singular (the revolutes' axes stay
apart, so their twists and the slide's are independent at every q)."""


def test_a_chain_conserves_energy_and_holds_its_constraint():
    """A body on the revolute-slide-revolute chain above (a spring of 200 N/m on the
    slide, no damper) with a pendulum hanging from it, under gravity, 2 s from a moving
    start: DOP853 at rtol = atol = 1e-11 keeps the energy balance to 1e-8 relative (the
    solver's tolerance, as the joint kinds' energy tests) and the chain's Phi (Baumgarte
    stabilised) below 1e-8."""
    mech = Mechanism("chain_energy", gravity=(0.4, -1.0, -9.81))
    a = mech.add_body(RigidBody("a", 1.3, Inertia.about_center(
        [[0.05, 0.004, -0.002], [0.004, 0.03, 0.001], [-0.002, 0.001, 0.04]])))
    b = mech.add_body(RigidBody("b", 0.7, Inertia.about_center(np.diag([0.02, 0.015, 0.025]))))
    mech.add_joint(ChainJoint("C", mech.ground, a, members=ENERGY_MEMBERS,
                              child_point=(0.1, 0.2, -0.05), spring={"slide2": 200.0}))
    mech.add_joint(RevoluteJoint("J", a, b, axis=(0.0, 1.0, 0.2), parent_point=(0.1, 0, 0),
                                 child_point=(0.0, 0.0, 0.25)))
    mm = mech.assemble()
    x0 = mm.initial_state({"C": [0.1, 0.3, -0.2], "J": 0.5}, {"C": [0.5, -1.0, 0.8],
                                                              "J": -1.0})
    res = mm.simulate((0.0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 41), rtol=1e-11,
                      atol=1e-11, method="DOP853")
    assert res.success, res.message
    jr = res.joint("C")
    print(f"energy drift {res.energy.relative_drift:.2e}, max |Phi| {jr.max_abs_phi:.2e}")
    assert res.energy.relative_drift < 1e-8
    assert jr.max_abs_phi < 1e-8
    assert np.ptp(jr.q[1]) > 0.01 and np.ptp(jr.q[2]) > 0.1        # (it moved)


def test_a_trial_stage_far_off_the_chain_is_rejected_not_fatal():
    """A first step of 0.5 s (given) on a fast-moving chain: the explicit method's trial
    stages throw the body far off the chain, where its inverse kinematics has no
    solution. That stage is rejected as one with a non-finite derivative (a
    ChainPoseError, non_finite) and the solver takes shorter steps; before, the run
    stopped there (CALLBACK_ERROR "does not converge"). A state far off the chain from
    the start is refused naming the joint."""
    from elements.joints.chain import ChainPoseError
    mech = Mechanism("chain_far", gravity=(0.4, -1.0, -9.81))
    a = mech.add_body(RigidBody("a", 1.3, Inertia.about_center(np.diag([0.05, 0.03, 0.04]))))
    mech.add_joint(ChainJoint("C", mech.ground, a, members=ENERGY_MEMBERS,
                              child_point=(0.1, 0.2, -0.05), spring={"slide2": 200.0}))
    mm = mech.assemble()
    x0 = mm.initial_state({"C": [0.1, 0.3, -0.2]}, {"C": [5.0, -10.0, 8.0]})
    res = mm.simulate((0.0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 5), first_step=0.5,
                      method="RK45", rtol=1e-8, atol=1e-8)
    assert res.raw.success, res.raw.message
    # (the same run as one with scipy's own first step: the rejected stages leave no
    # trace; rtol 1e-8 over 2 s of a fast chain: 1e-5)
    ref = mm.simulate((0.0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 5), method="RK45",
                      rtol=1e-8, atol=1e-8)
    assert np.abs(res.joint("C").q - ref.joint("C").q).max() < 1e-5
    assert res.energy.relative_drift < 1e-5
    far = x0.copy()
    far[mm.model.state_slices[mm.mechanism.bodies["a"].r]] += 5.0     # 8.7 m away
    with pytest.raises(ChainPoseError, match="chain joint 'C': the bodies' relative pose "
                                             "is no configuration of the chain"):
        mm.simulate((0.0, 1.0), x0=far)
