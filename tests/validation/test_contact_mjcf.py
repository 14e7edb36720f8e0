"""MJCF geoms as collision shapes (elements.files.mjcf_contact), against MuJoCo.

MuJoCo's soft contact and the law here differ (its impedance varies with the
penetration; ours is a linear spring with Hunt and Crossley damping that rests where
MuJoCo rests when one point carries the weight): one ball rests at MuJoCo's penetration
to 1e-9 m; a box on four corners within 0.05 mm of MuJoCo's height (its rest
penetration, 0.37 mm for the defaults, shared by the corners differently); the normal
forces balance the weights exactly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from elements import RobotImportWarning, load_mjcf, loads_mjcf, mujoco_coordinates  # noqa: E402
from elements.contact import Box, Plane, Sphere  # noqa: E402

SCENE = """<mujoco><option gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" friction="0.8 0.005 0.0001"/>
    <body name="crate" pos="0 0 0.06"><freejoint/>
      <geom name="b" type="box" size="0.2 0.1 0.05" mass="2"/></body>
    <body name="ball" pos="1 0 0.2"><freejoint/>
      <geom name="s" type="sphere" size="0.1" mass="1"/></body>
    <body name="ghost" pos="-1 0 0.05"><freejoint/>
      <geom name="g" type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
</mujoco>"""


def _scene():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        return loads_mjcf(SCENE)


def test_geoms_become_shapes_with_their_filters_and_laws():
    mech = _scene()
    assert isinstance(mech.shapes["floor"], Plane)
    assert isinstance(mech.shapes["b"], Box) and isinstance(mech.shapes["s"], Sphere)
    assert "g" not in mech.shapes                    # collides with nothing: left out
    assert np.allclose(mech.shapes["b"].params[:3], [0.2, 0.1, 0.05])
    assert mech.contact_laws["floor"].friction == 0.8
    assert mech.contact_laws["b"].friction == 1.0    # MuJoCo's default geom friction
    rep = mech.import_report
    assert any(k.startswith("solref") for k in rep.approximated)
    assert rep.approximated["torsional and rolling friction (not imported)"] == \
        ["floor", "b", "s"]


def test_bodies_at_rest_press_their_weights_at_mujocos_rest_heights():
    mech = _scene()
    mm = mech.assemble()
    model = mujoco.MjModel.from_xml_string(SCENE)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    res = mm.simulate((0.0, 2.0), q, qd, free=free, t_eval=np.linspace(0, 2, 21),
                      method="Radau", rtol=1e-8, atol=1e-10)
    assert res.success
    while data.time < 2.0:
        mujoco.mj_step(model, data)
    contacts = res.contacts()
    for body, shape, weight in (("crate", "b", 2.0 * 9.81), ("ball", "s", 9.81)):
        z_mj = data.xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)][2]
        assert abs(res.body(body).position[2, -1] - z_mj) < 5e-5, body
        assert abs(contacts.pair("floor", shape).normal_force[-1] / weight - 1) < 1e-6
    # the ghost sphere has no shape: it falls through the floor, as in MuJoCo
    ghost = data.xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "ghost")][2]
    assert ghost < -10 and res.body("ghost").position[2, -1] < -10


_ONE_BALL = """<mujoco><option gravity="0 0 -9.81" timestep="{dt}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" solimp="{solimp}" solref="{solref}"/>
    <body name="ball" pos="0 0 0.1"><freejoint/>
      <geom name="s" type="sphere" size="0.1" mass="2" solimp="{solimp}"
            solref="{solref}"/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("solimp, solref, dt", [
    ("0.9 0.95 0.001 0.5 2", "0.02 1", 0.001),      # MuJoCo's defaults
    ("0 0.9 0.01 0.5 2", "0.02 1", 0.001),          # dm_control's finger
    ("0.5 0.99 0.005 0.3 3", "0.02 1", 0.001),      # a steep sigmoid
    ("0.2 0.8 0.02 0.5 1", "0.02 1", 0.001),        # a linear ramp
    ("0.9 0.95 0.001 0.5 2", "-5000 -50", 0.001),   # direct stiffness and damping
    ("0.9 0.95 0.001 0.5 2", "0.005 1", 0.005)])    # a time constant below 2 steps
def test_a_ball_rests_at_mujocos_penetration(solimp, solref, dt):
    """One contact point carrying a ball's weight: the imported linear spring rests
    where MuJoCo's soft contact does, with the impedance MuJoCo has at that
    penetration (its sigmoid over solimp's width), not the one at contact; with
    direct solref (k = -solref[0] / dmax^2) and with a time constant raised to two
    time steps (MuJoCo's refsafe). dm_control finger's solimp (0 0.9 0.01: no impedance
    at contact) gave no stiffness at all and refused the file. MuJoCo's rest after 4 s
    and ours (Radau, rtol 1e-8) are both the root of d(r)^2 k r = (1 - d(r)) g: within
    1e-9 m (below 1e-12 seen; the impedance at contact instead missed by 2.6e-5 m for
    the defaults, d(r) k r = (1 - d(r)) g by 2.4e-5 to 2.9e-3 m)."""
    xml = _ONE_BALL.format(solimp=solimp, solref=solref, dt=dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(xml)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    while data.time < 4.0:
        mujoco.mj_step(model, data)
    assert abs(data.qvel[2]) < 1e-8                     # (MuJoCo at rest)
    res = mech.assemble().simulate((0.0, 4.0), q, qd, free=free, t_eval=[0.0, 4.0],
                                   method="Radau", rtol=1e-8, atol=1e-10)
    assert res.success
    assert 0.1 - data.xpos[1][2] > 5e-5                 # (a soft contact, sunk in)
    assert abs(res.body("ball").position[2, -1] - data.xpos[1][2]) < 1e-9


_CREEP = """<mujoco><option gravity="0 0 -9.81" timestep="0.0005" cone="{cone}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" friction="{mu} 0.005 0.0001"/>
    <body name="ball" pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/><joint name="z" type="slide" axis="0 0 1"/>
      <geom name="s" type="sphere" size="0.1" mass="2" friction="{mu} 0.005 0.0001"/></body>
  </worldbody>
  <actuator><motor name="push" joint="x"/></actuator>
</mujoco>"""


@pytest.mark.parametrize("cone, mu, load, ratio", [
    ("elliptic", 1.0, 0.05, 1.0 / np.sqrt(1.0 - 0.05 ** 2)),
    ("elliptic", 0.5, 0.3, 1.0 / np.sqrt(1.0 - 0.3 ** 2)),
    ("pyramidal", 1.0, 0.05, 0.5 / np.sqrt(1.0 - 0.05 ** 2))])
def test_a_pushed_ball_creeps_at_mujocos_speed(cone, mu, load, ratio):
    """A ball on the floor that cannot turn (slides x and z), pushed along x by a force
    of ``load`` mu m g: MuJoCo's soft friction lets it creep at v = (1 - d) F / (d b m)
    (an elliptic cone: its friction rows' a_ref = -b v mixed by the impedance d), and
    the imported friction's regularisation speed gives ours that slope at the ball's
    weight: our speed is MuJoCo's times 1 / sqrt(1 - load^2), the curvature of ours
    (mu N v / sqrt(v^2 + v_s^2)) where MuJoCo's is linear, within 1 %. A pyramidal cone
    creeps twice as fast at mu = 1 (reported as approximate). The speeds after 1 s of
    pushing (both steady after a few ms); the fixed 1 mm/s this replaced gave 0.11 times
    MuJoCo's."""
    xml = _CREEP.format(cone=cone, mu=mu)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    while data.time < 1.0:                                  # at rest on the floor
        mujoco.mj_step(model, data)
    force = load * mu * 2.0 * 9.81
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(xml, efforts={"x": force})
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    data.ctrl[0] = force
    t0 = data.time
    while data.time < t0 + 1.0:
        mujoco.mj_step(model, data)
    res = mech.assemble().simulate((0.0, 1.0), q, qd, free=free, t_eval=[0.0, 1.0],
                                   method="Radau", rtol=1e-8, atol=1e-10)
    assert res.success
    ours = float(np.atleast_2d(res.joint("x").qd)[0, -1])
    assert data.qvel[0] > 1e-4                              # (it creeps)
    assert abs(ours / data.qvel[0] / ratio - 1.0) < 0.01, (ours, data.qvel[0])


def test_every_dm_control_suite_model_loads_with_its_contacts():
    """DeepMind's control suite, loaded as a user loads it (contacts on): every file
    loads, and those with geoms that collide get their shapes (finger.xml's solimp
    "0 0.9 0.01" used to give a stiffness of 0 and refuse the file)."""
    import glob
    import os
    dm_control = pytest.importorskip("dm_control", reason="dm_control is not installed "
                                     "(pip install -e '.[test]' installs it)")
    paths = sorted(glob.glob(os.path.join(os.path.dirname(dm_control.__file__), "suite",
                                          "*.xml")))
    assert len(paths) >= 19
    shapes = {}
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RobotImportWarning)
            mech = load_mjcf(path)
        shapes[os.path.basename(path)] = len(mech.shapes)
    assert shapes["finger.xml"] == 7 and shapes["walker.xml"] == 8, shapes
    assert all(law.stiffness > 0 for law in mech.contact_laws.values())


def test_contacts_false_leaves_them_out_and_says_so():
    with pytest.warns(RobotImportWarning, match="contacts"):
        mech = loads_mjcf(SCENE, contacts=False)
    assert not mech.shapes
    assert "contacts (geoms and pairs that may collide)" in mech.import_report.not_imported


SPIN = """<mujoco><option gravity="0 0 -9.81" timestep="0.0005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" friction="1 0.01 0.0001" condim="4"/>
    <body name="top" pos="0 0 0.1"><freejoint/>
      <geom name="s" type="sphere" size="0.1" mass="1" friction="1 0.01 0.0001"
            condim="4"/></body>
  </worldbody>
</mujoco>"""


def test_condim_4_torsional_friction_spins_a_ball_down_as_mujoco_does():
    """A ball (1 kg, r 0.1 m) resting on the floor, set spinning at 10 rad/s about the
    vertical, with condim 4 and torsional friction 0.01 m: the law's ``torsion``, a
    moment 0.01 m g opposing the spin, slows it linearly (to 5.095 rad/s at 0.2 s, to
    1e-4). MuJoCo's soft constraint does not: it brakes a little harder at first and
    less later (7.534, 5.095, 2.892 rad/s at 0.1, 0.2, 0.3 s against 7.548, 5.095,
    2.643), but halves the spin at the same time: at 0.2 s the two agree to 3.2e-4
    rad/s (within 2e-3), and a coefficient 1 % off moves ours by 0.05 rad/s there.
    condim 3 would leave it out (reported as not imported)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(SPIN)
    assert mech.contact_laws["s"].torsion == 0.01 and mech.contact_laws["s"].rolling == 0
    assert any(k.startswith("condim 4: torsional friction as regularised moments")
               for k in mech.import_report.approximated)
    model = mujoco.MjModel.from_xml_string(SPIN)
    data = mujoco.MjData(model)
    while data.time < 1.0:                               # at rest on the floor
        mujoco.mj_step(model, data)
    data.qvel[5] = 10.0
    mujoco.mj_forward(model, data)
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    t0, spins = data.time, []
    for t in (0.1, 0.2, 0.3):
        while data.time < t0 + t - 1e-9:
            mujoco.mj_step(model, data)
        spins.append(data.qvel[5])
    res = mech.assemble().simulate((0.0, 0.3), q, qd, free=free, t_eval=[0.0, 0.1, 0.2, 0.3],
                                   method="Radau", rtol=1e-8, atol=1e-10)
    assert res.success
    ours = res.body("top").angular_velocity[2, 1:]
    rate = 0.01 * 9.81 / (0.4 * 0.1 ** 2)                 # c_n m g / I, rad/s^2
    assert np.abs(ours - (10.0 - rate * res.t[1:])).max() < 1e-4
    assert abs(ours[1] - spins[1]) < 2e-3, (ours, spins)
    assert abs(10.0 - 1.01 * rate * 0.2 - spins[1]) > 2e-3          # 1 % off: seen
    assert np.abs(ours - spins).max() < 0.3               # (the soft constraint's shape)


POSED = """<mujoco><option gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="lid" pos="0.5 -0.3 0.4" quat="0.9 0.1 0.3 -0.2"><freejoint/>
      <inertial pos="0.05 0.02 -0.01" mass="1.5" diaginertia="0.01 0.02 0.03"/>
      <geom name="lg" type="box" size="0.1 0.1 0.02" contype="2" conaffinity="2"/></body>
    <body name="paired" pos="2 0 0.2"><freejoint/>
      <geom name="pg" type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <contact><pair geom1="floor" geom2="pg"/></contact>
</mujoco>"""


def test_floating_bodies_start_where_the_file_draws_them():
    """MuJoCo's qpos0 is the pose the file draws: every floating body's centre of mass
    and orientation in our initial state equal MuJoCo's xipos and ximat there to 1e-12
    (they started at the origin, all overlapping, without a word); a key given in
    free= replaces the file's."""
    from bondgraph.spatial import quat_to_matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(POSED)
    mm = mech.assemble()
    model = mujoco.MjModel.from_xml_string(POSED)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    x = mm.initial_state()
    s = mm.model.state_slices
    for body in ("lid", "paired"):
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        assert np.allclose(x[s[f"{body}.r"]], data.xipos[bid], atol=1e-12, rtol=0)
        A = quat_to_matrix(x[s[f"{body}.q"]])
        assert np.allclose(A, data.ximat[bid].reshape(3, 3), atol=1e-12, rtol=0)
    moved = mm.initial_state(free={"lid": {"position": [0.0, 0.0, 1.0]}})
    assert np.allclose(moved[s["lid.r"]], [0.0, 0.0, 1.0])
    assert np.allclose(moved[s["lid.q"]], x[s["lid.q"]])      # (the file's rotation kept)


def test_an_explicit_pair_collides_whatever_its_geoms_masks():
    """MuJoCo collides a <pair> whatever the contype/conaffinity of its geoms: the
    sphere with masks 0 rests on the floor through its pair, at MuJoCo's height (it was
    left out, and fell through the floor with nothing in the import report)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(POSED)
    assert "pg" in mech.shapes and ("floor", "pg") in mech.contact_options["pairs_on"]
    mm = mech.assemble()
    model = mujoco.MjModel.from_xml_string(POSED)
    data = mujoco.MjData(model)
    res = mm.simulate((0.0, 1.0), t_eval=np.linspace(0, 1, 11), method="Radau",
                      rtol=1e-8, atol=1e-10)
    assert res.success
    while data.time < 1.0:
        mujoco.mj_step(model, data)
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "paired")
    assert abs(res.body("paired").position[2, -1] - data.xpos[bid][2]) < 5e-5
    assert abs(res.contacts().pair("floor", "pg").normal_force[-1] / 9.81 - 1) < 1e-6


EGG = """<mujoco><option gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="egg" pos="0 0 0.06"><freejoint/>
      <geom name="e" type="ellipsoid" size="0.15 0.1 0.06" mass="1.5"/></body>
    <body name="tilted" pos="1 0 0.12" euler="0.4 0.3 0"><freejoint/>
      <geom name="t" type="ellipsoid" size="0.12 0.08 0.05" mass="0.8"/></body>
  </worldbody>
</mujoco>"""


def test_an_ellipsoid_rests_on_its_shortest_axis_at_mujocos_height():
    """Two ellipsoid geoms become Ellipsoid shapes. One lies flat from the start, one is
    dropped tilted and rocks down onto its shortest semi-axis (its lowest centre of
    mass; 0.05 m): both are within 5e-5 m of MuJoCo's height at 4 s (the law's
    difference, see the module docstring); the flat one presses its weight on the floor
    to 1e-6 (the tilted one still rocks a little: 0.2 % of its weight at 4 s)."""
    from elements.contact import Ellipsoid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = loads_mjcf(EGG)
    assert isinstance(mech.shapes["e"], Ellipsoid)
    assert np.array_equal(mech.shapes["t"].params[:3], [0.12, 0.08, 0.05])
    assert not any("ellipsoid" in k for k in mech.import_report.not_imported)
    mm = mech.assemble()
    model = mujoco.MjModel.from_xml_string(EGG)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    res = mm.simulate((0.0, 4.0), q, qd, free=free, t_eval=np.linspace(0, 4, 41),
                      method="Radau", rtol=1e-8, atol=1e-10)
    assert res.success, res.raw.message
    while data.time < 4.0:
        mujoco.mj_step(model, data)
    contacts = res.contacts()
    for body, c in (("egg", 0.06), ("tilted", 0.05)):
        z_mj = data.xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)][2]
        z = res.body(body).position[2, -1]
        assert abs(z - z_mj) < 5e-5, (body, z, z_mj)
        assert 0 < c - z < 1e-3                        # on its shortest axis, pressed in
    assert abs(contacts.pair("floor", "e").normal_force[-1] / (1.5 * 9.81) - 1) < 1e-6


def test_the_quadrupeds_torso_is_an_ellipsoid():
    """dm_control's quadruped draws and collides its torso as an ellipsoid (0.3, 0.27,
    0.2 m): it was left out (reported) before."""
    dm_control = pytest.importorskip("dm_control", reason="dm_control is not installed")
    import os
    from elements import load_mjcf
    from elements.contact import Ellipsoid
    path = os.path.join(os.path.dirname(dm_control.__file__), "suite", "quadruped.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = load_mjcf(path)
    torso = mech.shapes["torso"]
    assert isinstance(torso, Ellipsoid)
    assert np.allclose(torso.semi_axes, [0.3, 0.27, 0.2])


# a free tree of six bodies whose masses add up differently in different orders
# ((0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)), on a floor
_TREE = """<mujoco><option gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="b0" pos="0 0 0.3"><freejoint/>
      <geom type="sphere" size="0.05" mass="0.1"/>
      <body name="b1" pos="0.1 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05" mass="0.2"/>
        <body name="b2" pos="0.1 0 0"><joint type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.05" mass="0.3"/></body></body>
      <body name="b3" pos="-0.1 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05" mass="0.7"/>
        <body name="b4" pos="-0.1 0 0"><joint type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.05" mass="1.1"/>
          <body name="b5" pos="-0.1 0 0"><joint type="hinge" axis="0 1 0"/>
            <geom type="sphere" size="0.05" mass="1.3"/></body></body></body>
    </body>
  </worldbody>
</mujoco>"""

_DIGEST = """
import hashlib, sys, warnings
import numpy as np
from bondgraph.element import StateView
from elements import loads_mjcf
warnings.simplefilter("ignore")
mm = loads_mjcf(sys.stdin.read()).assemble()
m = mm.model
laws = [law for _, _, law in m.source_plan()[2] if law.compiled is not None]
ints, flts, _ = laws[0].compiled.pack(m.state_slices)
print(hashlib.sha256(np.asarray(flts).tobytes()).hexdigest())
"""


def test_a_model_is_the_same_whatever_python_s_hash_seed():
    """A model read from a file is the same, bit for bit, in every process: Python
    orders sets of names by a hash seeded per process, so a sum over such a set (the
    tree masses behind MJCF contact stiffnesses) gave runs of gymnasium's ant that
    differed from one process to the next (3110 or 3242 evaluations over 1 s). The
    contact kernel's packed parameters (masses, laws), under six seeds."""
    import os
    import subprocess
    import sys
    got = set()
    for seed in range(6):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        run = subprocess.run([sys.executable, "-c", _DIGEST], input=_TREE, env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        got.add(run.stdout.strip())
    assert len(got) == 1, got
