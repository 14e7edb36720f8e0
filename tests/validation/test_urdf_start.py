"""Where an imported URDF's free bodies start when the user does not say: the root link
frame of a floating base at the global origin with the global axes, and the child of a
``floating`` joint from the root where the joint's ``<origin>`` puts it, as Pinocchio's
``pin.neutral(model)`` (free-flyer root) places them (and MuJoCo and Drake likewise).

Pinocchio is the independent reference: its forward kinematics at the neutral
configuration gives every link frame (``data.oMf``); ours is the default initial state
(``Mechanism.free_start``) through ``mm.poses``. Both are exact to rounding (sums of a few
rotations and offsets of order 1 m), so 1e-12 m and 1e-12 on the rotation entries fail on
any real offset (the old default was off by the base's centre of mass, 0.01 to 0.3 m).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from elements.files.urdf import load_urdf
from robot_data import robots_dir                     # (tests/helpers)

pin = pytest.importorskip("pinocchio", reason="the test extra's 'pin' (Pinocchio) is not "
                                              "installed: pip install -e '.[test]'")


ROBOTS = robots_dir()
needs_robots = pytest.mark.skipif(
    ROBOTS is None, reason="the test extra's 'example-robot-data' is not installed "
                           "(pip install -e '.[test]'): no real robot descriptions")

TOL = 1e-12
"""m, and rotation entries: both sides exact to rounding (see the module docstring)."""

# the root link's inertial is offset and turned, a fixed child adds mass (the merged
# centre moves again), a revolute and a continuous joint carry the legs
OFFSET_BASE = """<robot name="offset_base">
  <link name="torso"><inertial><origin xyz="0.12 -0.05 0.3" rpy="0.4 -0.3 0.7"/>
    <mass value="4"/><inertia ixx="0.2" ixy="0.01" ixz="-0.02" iyy="0.25" iyz="0.015"
    izz="0.3"/></inertial></link>
  <link name="pack"><inertial><origin xyz="0.02 0.01 0.05"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.014"/></inertial></link>
  <link name="thigh"><inertial><origin xyz="0 0.02 -0.15" rpy="0.1 0 0.2"/>
    <mass value="1.2"/><inertia ixx="0.02" ixy="0" ixz="0.001" iyy="0.021" iyz="0"
    izz="0.004"/></inertial></link>
  <link name="wheel"><inertial><origin xyz="0.01 0 0"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="mount" type="fixed"><parent link="torso"/><child link="pack"/>
    <origin xyz="-0.1 0 0.2" rpy="0 0.5 0.3"/></joint>
  <joint name="hip" type="revolute"><parent link="torso"/><child link="thigh"/>
    <origin xyz="0.1 0.15 -0.05" rpy="0.2 0 -0.4"/><axis xyz="0 1 0.2"/>
    <limit lower="-2" upper="2" effort="10" velocity="5"/></joint>
  <joint name="axle" type="continuous"><parent link="thigh"/><child link="wheel"/>
    <origin xyz="0 0 -0.3" rpy="0 0.3 0"/><axis xyz="1 0 0"/></joint>
</robot>"""

# a world link with a floating joint to the body: the body starts at the joint's origin
FLOATING_FROM_WORLD = OFFSET_BASE.replace(
    '<link name="torso">', '<link name="world"/>\n  <joint name="drop" type="floating">'
    '<parent link="world"/><child link="torso"/><origin xyz="0.3 -0.2 1.1" '
    'rpy="0.3 -0.6 1.2"/></joint>\n  <link name="torso">')


def _neutral_error(path: str, floating_base: bool) -> tuple[float, int]:
    """The largest difference between our default initial link frames and Pinocchio's
    at ``pin.neutral`` (origins m, rotation entries), and how many links compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, floating_base=floating_base, mimic="independent")
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base \
            else pin.buildModelFromUrdf(path)
    mm = mech.assemble()
    poses = mm.poses(mm.initial_state())
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    worst = 0.0
    for link, fr in mech.frames.items():
        A, r = poses.get(fr.body, (np.eye(3), np.zeros(3)))      # (the ground)
        ref = data.oMf[model.getFrameId(link)]
        worst = max(worst, float(np.abs(r + A @ fr.position - ref.translation).max()),
                    float(np.abs(A @ fr.rotation - ref.rotation).max()))
    return worst, len(mech.frames)


@pytest.mark.parametrize("text, floating_base", [(OFFSET_BASE, True),
                                                 (FLOATING_FROM_WORLD, False)],
                         ids=["floating_base", "floating-joint-from-world"])
def test_a_free_root_starts_at_pinocchios_neutral_configuration(tmp_path, text,
                                                                floating_base):
    """Every link frame of the default initial state equals Pinocchio's at pin.neutral
    (1e-12): the root link frame at the origin (or at the floating joint's origin), not
    the root body's centre of mass."""
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    worst, n = _neutral_error(str(path), floating_base)
    assert n == text.count("<link ")
    assert worst <= TOL, worst


@needs_robots
@pytest.mark.parametrize("rel", ["solo_description/robots/solo12.urdf",
                                 "talos_data/robots/talos_reduced.urdf"])
def test_a_real_floating_base_starts_at_pinocchios_neutral_configuration(rel):
    """The same for real robots: solo12 (its base's centre at its link frame) and
    Talos (its base's centre 11 cm from its link frame), every link frame (1e-12)."""
    worst, n = _neutral_error(os.path.join(ROBOTS, rel), True)
    assert n > 15
    assert worst <= TOL, (rel, worst)


def test_a_floating_base_falls_from_its_link_frame_at_the_origin(tmp_path):
    """Released at rest by default, the robot falls as one rigid body (uniform gravity
    puts no load on its joints): after T = 0.2 s the root link frame is at (0, 0,
    -g T^2 / 2) with the global axes. Tolerance 1e-8 m: the integration's tolerances
    (rtol 1e-10, atol 1e-12 on states of order 1) allow a drift of about 1e-10 m in the
    fall (0.196 m; seen 1e-16: the motion is quadratic in t); the old default (the
    base's centre at the origin) is 0.28 m away."""
    g, T = 9.81, 0.2
    path = tmp_path / "robot.urdf"
    path.write_text(OFFSET_BASE)
    mech = load_urdf(str(path), floating_base=True, gravity=(0.0, 0.0, -g))
    mm = mech.assemble()
    res = mm.simulate((0.0, T), rtol=1e-10, atol=1e-12)
    assert res.success
    fr = mech.frames["torso"]
    A, r = mm.poses(res.raw.x[:, -1])[fr.body]
    assert np.abs(r + A @ fr.position - [0.0, 0.0, -0.5 * g * T * T]).max() <= 1e-8
    assert np.abs(A @ fr.rotation - np.eye(3)).max() <= 1e-8
