"""URDF import: structure, errors, a closed form, and Pinocchio's forward dynamics for
the same file at random states (where the optional `pin` package is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from elements.analysis.dynamics import direct_dynamics
from elements.files.urdf import URDFError, loads_urdf, rpy_matrix

ROBOT = """<?xml version="1.0"?>
<robot name="test_arm">
  <link name="base">
    <inertial><mass value="5.0"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>
    </inertial>
  </link>
  <link name="upper">
    <inertial>
      <origin xyz="0.02 0.01 0.15" rpy="0.1 -0.2 0.3"/>
      <mass value="1.3"/>
      <inertia ixx="0.012" ixy="0.001" ixz="-0.0005" iyy="0.011" iyz="0.0008" izz="0.004"/>
    </inertial>
  </link>
  <link name="slider">
    <inertial>
      <origin xyz="0.0 0.03 0.05" rpy="0 0 0.4"/>
      <mass value="0.7"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/>
    </inertial>
  </link>
  <link name="tool">
    <inertial>
      <origin xyz="0.05 0 0.02"/>
      <mass value="0.2"/>
      <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0005" iyz="0" izz="0.0003"/>
    </inertial>
  </link>
  <link name="wrist">
    <inertial>
      <origin xyz="0.0 0.0 0.04" rpy="0.3 0 0"/>
      <mass value="0.4"/>
      <inertia ixx="0.0009" ixy="0.0001" ixz="0" iyy="0.0008" iyz="0" izz="0.0004"/>
    </inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0.1 0.0 0.2" rpy="0.0 0.3 0.2"/>
    <axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="40" velocity="5"/>
    <dynamics damping="0.05"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="upper"/><child link="slider"/>
    <origin xyz="0.0 0.05 0.3" rpy="0.2 0 0"/>
    <axis xyz="0 1 1"/>
    <limit lower="-0.2" upper="0.2" effort="100" velocity="1"/>
  </joint>
  <joint name="tool_mount" type="fixed">
    <parent link="slider"/><child link="tool"/>
    <origin xyz="0.0 0.1 0.0" rpy="0 0 1.0"/>
  </joint>
  <joint name="wrist_joint" type="revolute">
    <parent link="slider"/><child link="wrist"/>
    <origin xyz="0.02 0.0 0.1" rpy="0.0 0.0 -0.5"/>
    <axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
</robot>
"""

DOF = ["shoulder", "slide", "wrist_joint"]


def test_structure_and_mapping():
    mech = loads_urdf(ROBOT)
    # the tool, fixed to the slider, is merged into it (its frame stays, by name)
    assert sorted(mech.bodies) == ["slider", "upper", "wrist"]
    assert mech.import_report.merged["slider"] == ["slider", "tool"]
    assert mech.frames["tool"].body == "slider" and "tool" in mech.bodies["slider"].points
    assert mech.bodies["slider"].mass == pytest.approx(0.9)
    assert [j.type_name for j in mech.joints.values()] == ["revolute", "prismatic",
                                                           "revolute"]
    sh = mech.joints["shoulder"]
    assert sh.effort_limit == 40.0 and sh.dampers[0].coefficient == 0.05
    # the axis in parent coordinates is the origin's rotation applied to <axis>
    assert np.allclose(sh.Fa[:, 2], rpy_matrix([0.0, 0.3, 0.2]) @ [0, 0, 1])
    # the inertia is rotated into the link axes
    R = rpy_matrix([0.1, -0.2, 0.3])
    Ic = np.array([[0.012, 0.001, -0.0005], [0.001, 0.011, 0.0008], [-0.0005, 0.0008, 0.004]])
    assert np.allclose(mech.bodies["upper"].inertia.matrix, R @ Ic @ R.T)


def _pendulum(m: float, l: float) -> str:
    """A uniform rod of mass m and length l hanging from a continuous joint about y."""
    return f"""<robot name="p"><link name="world"/>
      <link name="rod"><inertial><origin xyz="0 0 {-l / 2}"/><mass value="{m}"/>
        <inertia ixx="{m * l * l / 12}" ixy="0" ixz="0" iyy="{m * l * l / 12}" iyz="0"
                 izz="1e-6"/></inertial></link>
      <joint name="hinge" type="continuous"><parent link="world"/><child link="rod"/>
        <axis xyz="0 1 0"/></joint></robot>"""


def test_single_link_matches_the_compound_pendulum():
    m, l, g = 2.0, 0.6, 9.81
    urdf = _pendulum(m, l)
    mm = loads_urdf(urdf, gravity=(0, 0, -g)).assemble()
    for q, qd, tau in [(0.3, 1.0, 0.5), (-1.2, 0.0, -2.0), (2.5, -3.0, 0.0)]:
        qdd = direct_dynamics(mm, {"hinge": q}, {"hinge": qd}, {"hinge": tau})["hinge"]
        # right-hand rule about +y: positive q swings the rod's end towards -x
        expected = (tau - m * g * l / 2 * np.sin(q)) / (m * l * l / 3)
        assert qdd == pytest.approx(expected, rel=1e-10)


def test_direct_dynamics_with_a_rotor_inertia_on_the_axis():
    """An armature (an I element on the joint's axis 1-junction, added as a subsystem)
    adds its inertia to the pendulum's: q'' = (tau - m g l/2 sin q) / (m l^2/3 + J_a).
    Its momentum is a state of the subsystem, given through ``states`` (J_a qd); without
    it the message names the state (it was a dead end before)."""
    from bondgraph import I
    from bondgraph.errors import ModelError
    m, l, g, Ja = 2.0, 0.6, 9.81, 0.05
    urdf = _pendulum(m, l)
    mech = loads_urdf(urdf, gravity=(0, 0, -g))

    def armature(bg):
        bg.add(I("hinge.armature", Ja))
        bg.connect("hinge.axis", "hinge.armature", name="hinge.armature.b")
    mech.add_subsystem("hinge_armature", armature)
    mm = mech.assemble()
    for q, qd, tau in [(0.3, 1.0, 0.5), (-1.2, -2.0, -2.0)]:
        qdd = direct_dynamics(mm, {"hinge": q}, {"hinge": qd}, {"hinge": tau},
                              states={"p_hinge.armature": Ja * qd})["hinge"]
        expected = (tau - m * g * l / 2 * np.sin(q)) / (m * l * l / 3 + Ja)
        assert qdd == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ModelError, match="p_hinge.armature"):
        direct_dynamics(mm, {"hinge": 0.1}, {"hinge": 0.0}, {"hinge": 0.0})


@pytest.mark.parametrize("text, match", [
    (ROBOT.replace('type="prismatic"', 'type="screw"'), "joint 'slide': unknown type 'screw'"),
    (ROBOT.replace('<child link="wrist"/>', '<child link="elbow"/>'), "names no link"),
    (ROBOT.replace('<mass value="0.7"/>', ''), "link 'slider': <inertial> has no <mass>"),
    (ROBOT.replace('xyz="0 1 1"', 'xyz="0 0 0"'), "joint 'slide': <axis xyz> has zero length"),
    (ROBOT.replace('value="1.3"', 'value="abc"'), "attribute 'value'='abc'"),
    ("<robot><link", "not valid XML"),
])
def test_errors_name_the_culprit(text, match):
    with pytest.raises(URDFError, match=match):
        loads_urdf(text)


def test_forward_dynamics_against_pinocchio():
    pin = pytest.importorskip("pinocchio", reason="the optional 'pin' package (Pinocchio) is "
                                                  "not installed")
    model = pin.buildModelFromXML(ROBOT)
    data = model.createData()
    mm = loads_urdf(ROBOT).assemble()
    rng = np.random.default_rng(11)
    for _ in range(50):
        q = rng.uniform(-1.0, 1.0, 3) * np.array([2.0, 0.15, 2.0])
        qd = rng.normal(size=3)
        tau = rng.normal(size=3) * np.array([3.0, 5.0, 0.5])
        ours = direct_dynamics(mm, dict(zip(DOF, q)), dict(zip(DOF, qd)), dict(zip(DOF, tau)))
        qp = np.zeros(model.nq)
        vp = np.zeros(model.nv)
        tp = np.zeros(model.nv)
        for k, name in enumerate(DOF):
            jid = model.getJointId(name)
            qp[model.joints[jid].idx_q] = q[k]
            vp[model.joints[jid].idx_v] = qd[k]
            damping = 0.05 if name == "shoulder" else 0.0     # ABA has no joint damping
            tp[model.joints[jid].idx_v] = tau[k] - damping * qd[k]
        a = pin.aba(model, data, qp, vp, tp)
        theirs = np.array([a[model.joints[model.getJointId(n)].idx_v] for n in DOF])
        mine = np.array([ours[n] for n in DOF])
        assert np.abs(mine - theirs).max() <= 1e-8 * max(1.0, np.abs(theirs).max())


HAND = """<?xml version="1.0"?>
<robot name="hand_arm">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0.2 0 0"/><mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial>
  </link>
  <link name="palm"/>
  <link name="finger"/>
  <link name="tip">{tip}</link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
  <joint name="hand" type="revolute">
    <parent link="arm"/><child link="palm"/><origin xyz="0.4 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
  <joint name="finger" type="revolute">
    <parent link="palm"/><child link="finger"/><origin xyz="0.05 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
    <mimic joint="hand" multiplier="2"/>
  </joint>
  <joint name="tip" type="revolute">
    <parent link="arm"/><child link="tip"/><origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>{tip_mimic}
  </joint>
</robot>"""


def test_joints_that_move_no_mass_refused_or_fixed():
    """A hand of massless links: its joints move no mass (singular equations). Refused by
    default naming the joint; with massless='fix' loaded with them fixed, reported and
    warned about, and the arm alone equals the pendulum closed form (m g d cos q /
    (I_c + m d^2): the fixed hand adds nothing)."""
    text = HAND.format(tip="", tip_mimic="")
    with pytest.raises(URDFError, match="joint 'hand' moves only massless links.*"
                                        "massless='fix'"):
        loads_urdf(text)
    with pytest.warns(Warning, match="joints that move no mass"):
        mech = loads_urdf(text, massless="fix")
    assert mech.import_report.not_imported[
        "joints that move no mass (made fixed; massless='fix')"] == ["hand", "tip", "finger"]
    mm = mech.assemble()
    q = 0.4
    qdd = direct_dynamics(mm, {"shoulder": q}, {"shoulder": 0.0}, {})["shoulder"]
    m, d, Iyy = 2.0, 0.2, 0.03
    # gravity -z, axis +y: a positive angle lowers the centre (x -> -z; potential
    # -m g d sin q), so the torque is +m g d cos q
    assert qdd == pytest.approx(m * 9.81 * d * np.cos(q) / (Iyy + m * d * d), rel=1e-10)
    with pytest.raises(URDFError, match="massless must be 'refuse' or 'fix'"):
        loads_urdf(text, massless="yes")


def test_massless_leader_of_a_follower_with_mass_is_refused():
    """A follower that moves mass, coupled to a joint that massless='fix' would fix: the
    coupling would hold it still; refused naming both."""
    text = HAND.format(
        tip='<inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" '
            'iyz="0" izz="1e-4"/></inertial>',
        tip_mimic='<mimic joint="hand" multiplier="1"/>')
    with pytest.raises(URDFError, match="joint 'tip' <mimic joint='hand'>: massless='fix' "
                                        "makes 'hand' fixed"):
        loads_urdf(text, massless="fix")


def test_blank_lines_before_the_xml_declaration_are_taken():
    """pybullet's differential/diff_ring.urdf starts with a blank line before
    ``<?xml ...?>`` (Pinocchio's parser takes it): it loads, and a parse error further on
    still names the file's own line."""
    from elements.files.urdf import URDFError, loads_urdf
    text = ('\n\n<?xml version="1.0"?>\n<robot name="r"><link name="base"/>\n'
            '<link name="bob"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" '
            'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>\n'
            '<joint name="hinge" type="continuous"><parent link="base"/><child '
            'link="bob"/><axis xyz="0 1 0"/></joint></robot>')
    assert loads_urdf(text).joint("hinge").type_name == "revolute"
    with pytest.raises(URDFError, match=r"not valid XML: mismatched tag: line 6, column 2"):
        loads_urdf("\n\n<?xml version='1.0'?>\n<robot name='a'>\n<link name='x'>\n</robot>")


def test_a_description_where_nothing_moves_says_why():
    """Every link fixed to the root on a fixed base: assembling names the cause and the
    option (a floating base makes them one free body, which assembles)."""
    from elements.files.urdf import loads_urdf
    text = ('<robot name="table"><link name="top"><inertial><mass value="5"/><inertia '
            'ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>'
            '<link name="leg"/><joint name="j" type="fixed"><parent link="top"/><child '
            'link="leg"/></joint></robot>')
    with pytest.raises(Exception, match=r"every link of its description is fixed to the "
                                        r"root link.*floating_base=True"):
        loads_urdf(text).assemble()
    assert list(loads_urdf(text, floating_base=True).assemble().mechanism.bodies) == ["top"]


def test_pybullets_spherical_joint_is_a_spherical_joint():
    """PyBullet's URDF extension ``type="spherical"`` (spherical_joint_limit.urdf) loads
    as a SphericalJoint, its cone limit reported as not enforced, and a swing from a
    tilted start conserves energy (DOP853 at 1e-10: 1e-8 relative)."""
    from scipy.spatial.transform import Rotation
    text = ('<robot name="neck"><link name="chest"/><link name="neck"><inertial><origin '
            'xyz="0 0 0.3"/><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" '
            'iyy="0.008" iyz="0" izz="0.004"/></inertial></link><joint name="neck" '
            'type="spherical"><parent link="chest"/><child link="neck"/><limit '
            'effort="1000" lower="0.2" upper="0.8"/><origin xyz="0 0 1"/>'
            '<axis xyz="0 0 1"/></joint></robot>')
    mech = loads_urdf(text)
    assert mech.joint("neck").type_name == "spherical"
    assert list(mech.import_report.not_imported.values()) == [["neck"]]
    assert "spherical" in next(iter(mech.import_report.not_imported))
    res = mech.assemble().simulate(
        (0, 1), q={"neck": Rotation.from_rotvec([0.5, 0.2, 0.0]).as_matrix()},
        qd={"neck": [0.0, 0.0, 3.0]}, rtol=1e-10, atol=1e-10, method="DOP853")
    assert res.raw.success and res.energy.relative_drift < 1e-8
    assert np.ptp(res.body("neck_link").position[2]) > 0.01     # (it swung; the link
    # is renamed: a joint has its name)
