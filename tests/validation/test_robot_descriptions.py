"""Real robot descriptions: every URDF that ``example-robot-data`` ships (installed by the
test extra), loaded here and by Pinocchio, with forward dynamics compared to Pinocchio's
ABA at random states, fixed base and floating base (issue 17).

Pinocchio is the second, independent formulation (joint coordinates, articulated-body
algorithm); ours is the maximal-coordinate bond graph. A few random states per robot run
in ``make test``; ``--runslow`` runs 50 per robot and variant.

Tolerance: 1e-8 relative to max(1, |Pinocchio's accelerations|). Both sides are exact to
rounding; the largest differences seen are 1e-13 (floating-point sums over up to 107
freedoms of inertias that span seven decades), so 1e-8 leaves five decades of margin and
still fails on any modelling difference (a wrong inertia, axis, merged centre or sign
moves the accelerations by orders above 1e-8).
"""

from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest

from elements import direct_dynamics
from elements.files.urdf import URDFError, load_urdf, loads_urdf

from mechanisms import urdf_inertial, urdf_joint        # (tests/helpers)
from pinocchio_reference import compare, moving_joints, random_angle      # (tests/helpers)
from robot_data import robots_dir                                          # (tests/helpers)

pin = pytest.importorskip("pinocchio", reason="the test extra's 'pin' (Pinocchio) is not "
                                              "installed: pip install -e '.[test]'")


ROBOTS = robots_dir()
FILES = sorted(glob.glob(os.path.join(ROBOTS, "**", "*.urdf"), recursive=True)) \
    if ROBOTS else []
needs_robots = pytest.mark.skipif(
    ROBOTS is None, reason="the test extra's 'example-robot-data' is not installed "
                           "(pip install -e '.[test]'): no real robot descriptions")

MIN_INERTIA = 1e-6
"""kg m^2: the bound on principal moments given to the descriptions of BOUNDED (far below
their real links' moments, 1e-4 and up)."""

BOUNDED = {
    # point masses (0.526 kg with a zero inertia tensor) on moving joints, all over the
    # legs, arms and head
    "icub_description/robots/icub.urdf": "point mass on a moving joint",
    "icub_description/robots/icub_reduced.urdf": "point mass on a moving joint",
    # (with massless='fix': its grippers move no mass, as in romeo.urdf) the base body's
    # central inertia has a negative principal moment (-0.0213 kg m^2), no rigid body's
    "romeo_description/urdf/romeo_laas_small.urdf": "not positive definite",
}
"""Refused by default, with the reason the message gives and the option that loads them
(min_inertia, as MuJoCo's boundinertia); loaded with min_inertia = MIN_INERTIA and
compared with Pinocchio's model whose inertias are bounded the same way (Pinocchio
loads them as they are: joint coordinates do not need each body's inertia invertible).
Any other refusal fails the test."""

SINGULAR = {"romeo_description/urdf/romeo.urdf", "romeo_description/urdf/romeo_laas_small.urdf"}
"""Truly singular: LHand and RHand move only massless links (the fingers, massless too),
so no inertia resists them and Pinocchio's ABA returns NaN for every coordinate. Refused
by default, naming the joint; loaded with massless='fix' (those joints made fixed) and
compared with Pinocchio's model reduced by locking the same joints at 0."""


def _options(rel) -> dict:
    """The import options a description needs (the defaults for all but SINGULAR and
    BOUNDED)."""
    return dict(massless="fix" if rel in SINGULAR else "refuse",
                min_inertia=MIN_INERTIA if rel in BOUNDED else None)


def _load(path, floating):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(path, floating_base=floating, mimic="independent",
                         **_options(os.path.relpath(path, ROBOTS)))


def _bound_pinocchio_inertias(model, bound) -> int:
    """Raise every body's principal moments (about its centre) below ``bound`` to it, its
    principal axes kept, in Pinocchio's model (as min_inertia does in ours, written
    independently, on Pinocchio's own merged bodies); returns how many changed."""
    changed = 0
    for i in range(1, model.njoints):
        inertia = model.inertias[i]
        if inertia.mass <= 0:
            continue
        eig, V = np.linalg.eigh(inertia.inertia)
        if eig.min() >= bound:
            continue
        model.inertias[i] = pin.Inertia(inertia.mass, inertia.lever,
                                        (V * np.maximum(eig, bound)) @ V.T)
        changed += 1
    return changed


def _pinocchio_is_singular(model) -> bool:
    """Whether Pinocchio's own ABA is non-finite at a random state (its mass matrix is
    singular: some joint moves no mass)."""
    data = model.createData()
    rng = np.random.default_rng(0)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    a = pin.aba(model, data, q, rng.normal(size=model.nv), rng.normal(size=model.nv))
    return not np.all(np.isfinite(a))


def _pin_model(path, floating):
    try:
        return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
    except Exception:  # noqa: BLE001 - Pinocchio refuses it (urdfdom's parser)
        return None


COUNTS: dict[str, int] = {}


@needs_robots
def test_every_urdf_pinocchio_loads_loads_here(capsys):
    """Count both; the refusals by default are exactly the singular and the bounded ones,
    each naming its joint or links and the option that loads it, and with that option
    every one loads."""
    pin_ok, ours_ok, with_options, refused, singular = 0, 0, 0, {}, []
    for path in FILES:
        rel = os.path.relpath(path, ROBOTS)
        model = _pin_model(path, True)
        if model is None:
            continue
        pin_ok += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_urdf(path, floating_base=True, mimic="independent").assemble()
            ours_ok += 1
            continue
        except URDFError as exc:
            msg = str(exc)
            if "its motion has no inertia" in msg:
                # refused as singular: so must Pinocchio's dynamics be
                assert "joint '" in msg and "massless='fix'" in msg and \
                    _pinocchio_is_singular(model), (rel, msg)
                singular.append(rel)
            else:
                refused[rel] = msg
        try:                 # with the options the message names
            _load(path, True).assemble()
            with_options += 1
        except URDFError as exc2:
            refused[rel] = str(exc2)
    with capsys.disabled():
        print(f"\nexample-robot-data: {len(FILES)} URDFs, Pinocchio loads {pin_ok}, "
              f"we load {ours_ok} by default (floating base) and {ours_ok + with_options} "
              f"with the options the refusals name; singular (Pinocchio's ABA is NaN; "
              f"loaded with massless='fix'): {sorted(singular)}; not physical (loaded with "
              f"min_inertia): {sorted(refused)}")
    assert pin_ok >= 60, "fewer descriptions than the package has shipped"
    assert ours_ok + with_options == pin_ok
    assert set(singular) == SINGULAR, singular
    assert set(refused) == set(BOUNDED) - SINGULAR, refused
    for rel, msg in refused.items():
        assert BOUNDED[rel] in msg and "min_inertia" in msg and (
            "joint" in msg or "link" in msg), msg


def _cases():
    return [pytest.param(os.path.relpath(p, ROBOTS), fl, id=f"{os.path.relpath(p, ROBOTS)}"
                         f"-{'floating' if fl else 'fixed'}")
            for p in FILES for fl in (False, True)]


def _check_dynamics(rel, floating, n_states):
    path = os.path.join(ROBOTS, rel)
    model = _pin_model(path, floating)
    if model is None:
        pytest.skip(f"Pinocchio does not load {rel}")
    mech = _load(path, floating)
    if not mech.bodies:
        with pytest.raises(Exception, match="no bodies"):
            mech.assemble()
        return                       # (nothing moves on a fixed base: refused, named)
    mm = mech.assemble()
    report = mech.import_report
    fixed = report.not_imported.get("joints that move no mass (made fixed; massless='fix')")
    if fixed:
        # exactly the joints that move no mass: a zero diagonal of Pinocchio's mass matrix
        # (independent of our list); then Pinocchio's model with them locked at 0
        full = model.createData()
        q0 = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        Md = np.diag(pin.crba(model, full, q0))
        zero = {n for n in moving_joints(model)
                if Md[model.joints[model.getJointId(n)].idx_v] <= 1e-12 * Md.max()}
        assert zero == set(fixed), (sorted(zero ^ set(fixed)))
        model = pin.buildReducedModel(model, [model.getJointId(n) for n in fixed],
                                      pin.neutral(model))
    if report.bounded:
        # the same bound on Pinocchio's own bodies: as many bodies change
        assert _bound_pinocchio_inertias(model, MIN_INERTIA) == len(report.bounded)
    damping = {}
    for urdf_name, (ours, coordinate) in report.coordinates.items():
        dampers = mech.joints[ours].axis(coordinate).items("damper") \
            if mech.joints[ours].n_free else []
        damping[urdf_name] = dampers[0].coefficient if dampers else 0.0
    rng = np.random.default_rng(abs(hash(rel)) % 2 ** 32)
    data = model.createData()
    errs = [compare(model, data, mm, report, rng, floating, damping)
            for _ in range(n_states)]
    assert max(errs) <= 1e-8, f"{rel}: max relative error {max(errs):.3g}"


@needs_robots
@pytest.mark.parametrize("rel, floating", _cases())
def test_forward_dynamics_match_pinocchio(rel, floating):
    _check_dynamics(rel, floating, 2)


@pytest.mark.slow
@needs_robots
@pytest.mark.parametrize("rel, floating", _cases())
def test_forward_dynamics_match_pinocchio_50_states(rel, floating):
    _check_dynamics(rel, floating, 50)


@needs_robots
def test_link_frames_stay_where_pinocchio_puts_them():
    """The merged links' frames (UR5's ee_link, tool0, base) at a random configuration
    equal Pinocchio's frame placements."""
    path = os.path.join(ROBOTS, "ur_description/urdf/ur5_robot.urdf")
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    mech = _load(path, False)
    mm = mech.assemble()
    rng = np.random.default_rng(3)
    q = rng.uniform(-2, 2, model.nq)
    pin.framesForwardKinematics(model, data, q)
    x = mm.initial_state({mech.import_report.joints[model.names[i]]: q[i - 1]
                          for i in range(1, model.njoints)})
    poses = mm.poses(x)
    checked = 0
    for name in ("ee_link", "tool0", "wrist_3_link", "base"):
        fr = mech.frames[name]
        A, r = poses[fr.body] if fr.body in poses else (np.eye(3), np.zeros(3))
        ref = data.oMf[model.getFrameId(name)]
        assert np.allclose(r + A @ fr.position, ref.translation, atol=1e-12), name
        assert np.allclose(A @ fr.rotation, ref.rotation, atol=1e-12), name
        checked += 1
    assert checked == 4 and mech.frames["ee_link"].body == mech.frames["wrist_3_link"].body


SPLIT = """<robot name="split">
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0.1 0 0" rpy="0.3 0.1 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0.2 0.05"/><mass value="0.5"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.005"/></inertial></link>
  <link name="flange"/>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1"
    velocity="1"/></joint>
  <joint name="weld" type="fixed"><parent link="a"/><child link="b"/>
    <origin xyz="0.4 0 0" rpy="0 0.5 0.2"/></joint>
  <joint name="tip" type="fixed"><parent link="b"/><child link="flange"/>
    <origin xyz="0 0 0.1"/></joint>
</robot>"""


def test_merging_fixed_links_keeps_the_dynamics():
    """Two links welded together and one link with their combined inertial (computed here
    by hand: masses, centres, parallel axes) have the same pendulum dynamics, equal to
    the closed form about the hinge."""
    from elements.analysis.dynamics import direct_dynamics
    from elements.files.urdf import rpy_matrix
    mech = loads_urdf(SPLIT, gravity=(0, 0, -9.81))
    assert list(mech.bodies) == ["a"] and mech.import_report.merged["a"] == ["a", "b",
                                                                            "flange"]
    Ra, Rb = rpy_matrix([0.3, 0.1, 0]), rpy_matrix([0, 0.5, 0.2])
    Ia = Ra @ np.array([[0.02, 0.001, 0], [0.001, 0.03, 0], [0, 0, 0.04]]) @ Ra.T
    cb = np.array([0.4, 0, 0]) + Rb @ np.array([0, 0.2, 0.05])
    Ib = Rb @ np.diag([0.004, 0.002, 0.005]) @ Rb.T
    ca = np.array([0.1, 0, 0])
    c = (2 * ca + 0.5 * cb) / 2.5
    # the inertia about the hinge axis (y through the link origin), by hand
    J_yy = Ia[1, 1] + Ib[1, 1] + 2 * (ca[0] ** 2 + ca[2] ** 2) + \
        0.5 * (cb[0] ** 2 + cb[2] ** 2)
    mm = mech.assemble()
    for q, qd in [(0.2, 0.0), (-1.0, 2.0), (2.5, -1.0)]:
        qdd = direct_dynamics(mm, {"hinge": q}, {"hinge": qd}, {"hinge": 0.7})["hinge"]
        # gravity's torque about +y on the centre at R_y(q) c: (r x F)_y = -r_x F_z
        torque = 0.7 + 2.5 * 9.81 * (c[0] * np.cos(q) + c[2] * np.sin(q))
        assert qdd == pytest.approx(torque / J_yy, rel=1e-12)
    assert np.allclose(mech.frames["flange"].position,
                       cb - Rb @ np.array([0, 0.2, 0.05]) + Rb @ [0, 0, 0.1] - c)


def test_link_and_joint_names_get_separate_name_spaces():
    text = SPLIT.replace('name="hinge"', 'name="a"').replace(
        '<link name="base"/>', '<link name="ground"/>').replace(
        'link="base"', 'link="ground"')
    mech = loads_urdf(text)
    assert list(mech.joints) == ["a"] and list(mech.bodies) == ["a_link"]
    assert mech.import_report.renamed == {"link a": "a_link"}
    assert mech.import_report.joints == {"a": "a"}
    assert mech.import_report.bodies["ground"] == "ground"


def test_an_inertia_breaking_the_triangle_inequality_warns_or_is_refused():
    bad = SPLIT.replace('ixx="0.004" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.005"',
                        'ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.5"')
    bad = bad.replace('type="fixed"><parent link="a"/>', 'type="continuous"><parent '
                      'link="a"/><axis xyz="0 0 1"/>', 1)
    with pytest.warns(UserWarning, match=r"links? b.*'b'.*triangle inequality"):
        mech = loads_urdf(bad)
    assert mech.import_report.warnings
    mech.assemble().with_parameters({"a.mass": 2.1})   # (parameters keep the exemption)
    with pytest.raises(URDFError, match=r"links b, flange .*triangle inequality"):
        loads_urdf(bad, strict=True)


@pytest.mark.parametrize("edit, match", [
    # a massless link between two coaxial moving joints (dependent: no joint)
    (lambda t: t.replace('type="fixed"><parent link="a"/>', 'type="continuous"><parent '
                         'link="a"/><axis xyz="0 0 1"/>').replace(
        '<mass value="0.5"/>', '<mass value="0"/>').replace(
        'type="fixed"><parent link="b"/>', 'type="continuous"><parent link="b"/>'
        '<axis xyz="0 0 1"/>').replace('<link name="flange"/>', '<link name="flange">'
        '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
        'izz="1"/></inertial></link>'),
     r"joints weld \(revolute\), tip \(revolute\) in sequence through massless links: "
     r"their motions are dependent at rest"),
    # a massless link carrying two moving joints
    (lambda t: t.replace('type="fixed"><parent link="a"/>', 'type="continuous"><parent '
                         'link="a"/><axis xyz="0 0 1"/>').replace(
        '<mass value="0.5"/>', '<mass value="0"/>').replace(
        '</robot>', '<link name="c"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
        'ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><link name="d"><inertial><mass '
        'value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
        '</link><joint name="j_c" type="continuous"><parent link="b"/><child link="c"/>'
        '<axis xyz="1 0 0"/></joint><joint name="j_d" type="continuous"><parent link="b"/>'
        '<child link="d"/><axis xyz="0 1 0"/></joint></robot>'),
     r"joint 'weld' moves link\(s\) b, flange without mass, which carry the moving "
     r"joints j_c, j_d"),
    # a moving joint that moves nothing with mass
    (lambda t: t.replace('type="fixed"><parent link="b"/>', 'type="continuous"><parent '
                         'link="b"/><axis xyz="1 0 0"/>'),
     r"joint 'tip' moves only massless links \(flange\): its motion has no inertia"),
    # pybullet's cube_no_rotation.urdf: a singular inertia on a prismatic joint (this
    # raised numpy's LinAlgError from assemble())
    (lambda t: t.replace('ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"',
                         'ixx="0.2125" ixy="-0.005" ixz="0.0225" iyy="0.205" iyz="0.045" '
                         'izz="0.0125"').replace('origin xyz="0.1 0 0" rpy="0.3 0.1 0"',
                                                 'origin xyz="0 0 0"').replace(
        '<mass value="0.5"/>', '<mass value="0"/>').replace(
        '<inertia ixx="0.004"', '<inertia ixx="0"').replace(
        'iyy="0.002" iyz="0" izz="0.005"', 'iyy="0" iyz="0" izz="0"'),
     r"links a, b, flange \(body 'a', mass 2 kg\): the central inertia is not positive "
     r"definite"),
    (lambda t: t.replace('type="revolute">', 'type="revolute"><mimic joint="nowhere"/>'),
     "<mimic joint='nowhere'> must name a revolute, continuous or prismatic joint of the "
     "file, and be on one"),
    (lambda t: t.replace('<robot name="split">', '<robot name="split"><link name="x"/>'),
     "exactly one root link.*found 2: x, base"),
])
def test_what_cannot_be_loaded_is_named(edit, match):
    with pytest.raises(URDFError, match=match):
        loads_urdf(edit(SPLIT)).assemble()


def test_a_floating_base_is_a_free_body():
    """The root becomes a free body: refused without mass (named); with mass, a free
    flight conserves the total linear and angular momentum (no gravity, no torque)."""
    with pytest.raises(URDFError, match="floating base: the root link 'base'.*no mass"):
        loads_urdf(SPLIT, floating_base=True)
    text = SPLIT.replace('<link name="base"/>', '<link name="base"><inertial><mass '
                         'value="3"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" '
                         'izz="0.25"/></inertial></link>')
    mech = loads_urdf(text, floating_base=True, gravity=(0, 0, 0))
    assert mech.free_bodies() == ["base"] and sorted(mech.bodies) == ["a", "base"]
    mm = mech.assemble()
    res = mm.simulate((0.0, 0.5), {"hinge": 0.4}, {"hinge": 3.0}, free={"base": {
        "angular_velocity": [0.5, -1.0, 2.0], "velocity": [0.1, 0.0, 0.3]}},
        rtol=1e-10, atol=1e-12)
    m = mm.model
    x0, x1 = res.raw.x[:, 0], res.raw.x[:, -1]

    def momenta(x):
        p = sum(x[m.state_slices[b.linear_momentum]] for b in mech.bodies.values())
        L = np.zeros(3)
        for b in mech.bodies.values():
            A, r = mm.poses(x)[b.name]
            L += np.cross(r, x[m.state_slices[b.linear_momentum]]) + \
                A @ x[m.state_slices[b.angular_momentum]]
        return p, L
    (p0, L0), (p1, L1) = momenta(x0), momenta(x1)
    assert np.abs(p1 - p0).max() <= 1e-9 * np.abs(p0).max()
    assert np.abs(L1 - L0).max() <= 1e-7 * np.abs(L0).max()
    assert np.abs(L0).max() > 0.1      # (a motion, not a state at rest)


FLOATING_INSIDE = """<robot name="float_tree">
  <link name="base"><inertial><origin xyz="0 0 0.05"/><mass value="3"/><inertia ixx="0.05"
    ixy="0" ixz="0" iyy="0.06" iyz="0" izz="0.07"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.1 0.02 -0.2" rpy="0.2 0.1 0"/><mass value="1.5"/>
    <inertia ixx="0.03" ixy="0.002" ixz="0" iyy="0.025" iyz="0.001" izz="0.02"/></inertial>
  </link>
  <link name="drone"><inertial><origin xyz="0.03 -0.02 0.01"/><mass value="0.8"/><inertia
    ixx="0.01" ixy="0.001" ixz="0.0005" iyy="0.012" iyz="0" izz="0.015"/></inertial></link>
  <link name="prop"><inertial><origin xyz="0 0.05 0.02"/><mass value="0.2"/><inertia
    ixx="0.002" ixy="0" ixz="0" iyy="0.0015" iyz="0" izz="0.001"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.3" rpy="0.1 0 0.2"/><axis xyz="0 1 0.3"/>
    <limit lower="-3" upper="3" effort="5" velocity="3"/></joint>
  <joint name="flyer" type="floating"><parent link="arm"/><child link="drone"/>
    <origin xyz="0.2 0.05 -0.4" rpy="0.3 -0.2 0.5"/></joint>
  <joint name="spin" type="continuous"><parent link="drone"/><child link="prop"/>
    <origin xyz="0.05 0 0.1" rpy="0 0.3 0"/><axis xyz="1 0 0.2"/></joint>
</robot>"""


@pytest.mark.parametrize("floating", [False, True])
def test_a_floating_joint_inside_the_tree_equals_pinocchio(tmp_path, floating):
    """A ``floating`` joint between two moving links (and, with a floating base, from a
    free root's child) is a FreeJoint: at 10 random states the link frames equal
    Pinocchio's forward kinematics (1e-12) and the revolutes' accelerations and the
    drone's and prop's angular accelerations equal Pinocchio's ABA (1e-8 relative).
    Pinocchio's free flyer: q = (t, quaternion) of the child frame in the joint frame,
    v in the child frame; ours: Q's displacement and the rotation from rest in the
    parent body's axes: d = R_j t, R_rel = R_j R_q R_j^T, rates R_j R_q v."""
    from bondgraph.spatial import quat_to_matrix
    path = tmp_path / "float_tree.urdf"
    path.write_text(FLOATING_INSIDE)
    mech = load_urdf(str(path), floating_base=floating)
    assert mech.joint("flyer").type_name == "free"
    mm = mech.assemble()
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(str(path))
    data = model.createData()
    ids = {n: model.getJointId(n) for n in ("shoulder", "flyer", "spin")}
    Rj = model.jointPlacements[ids["flyer"]].rotation
    rng = np.random.default_rng(8)
    worst = 0.0
    for _ in range(10):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        jq = {n: model.joints[i].idx_q for n, i in ids.items()}
        jv = {n: model.joints[i].idx_v for n, i in ids.items()}
        t_q = q[jq["flyer"]:jq["flyer"] + 3]
        x, y, z, w = q[jq["flyer"] + 3:jq["flyer"] + 7]
        Rq = quat_to_matrix(np.array([w, x, y, z]))
        v_lin, v_ang = v[jv["flyer"]:jv["flyer"] + 3], v[jv["flyer"] + 3:jv["flyer"] + 6]
        d, d_rate = Rj @ t_q, Rj @ Rq @ v_lin
        cs = q[jq["spin"]:jq["spin"] + 2]
        ours_q = {"shoulder": q[jq["shoulder"]], "spin": np.arctan2(cs[1], cs[0]),
                  "flyer": {"x": d[0], "y": d[1], "z": d[2], "rotation": Rj @ Rq @ Rj.T}}
        ours_qd = {"shoulder": v[jv["shoulder"]], "spin": v[jv["spin"]],
                   "flyer": {"x": d_rate[0], "y": d_rate[1], "z": d_rate[2],
                             "angular_velocity": Rj @ Rq @ v_ang}}
        ours_tau = {"shoulder": tau[jv["shoulder"]], "spin": tau[jv["spin"]]}
        tau_pin = tau.copy()
        tau_pin[jv["flyer"]:jv["flyer"] + 6] = 0.0
        if floating:
            tau_pin[0:6] = 0.0
        free = None
        if floating:
            x, y, z, w = q[3:7]
            A = quat_to_matrix(np.array([w, x, y, z]))
            c = np.array([0.0, 0.0, 0.05])
            free = {"base": {"rotation": A, "position": q[0:3] + A @ c,
                             "angular_velocity": A @ v[3:6],
                             "velocity": A @ (v[0:3] + np.cross(v[3:6], c))}}
        a = pin.aba(model, data, q, v, tau_pin)
        pin.forwardKinematics(model, data, q, v, a)
        poses = mm.poses(mm.initial_state(ours_q, ours_qd, free=free))
        for link in ("arm", "drone", "prop"):
            fr = mech.frames[link]
            A, r = poses[fr.body]
            ref = data.oMi[model.getJointId({"arm": "shoulder", "drone": "flyer",
                                             "prop": "spin"}[link])]
            assert np.abs(r + A @ fr.position - ref.translation).max() < 1e-12, link
            assert np.abs(A @ fr.rotation - ref.rotation).max() < 1e-12, link
        ours = direct_dynamics(mm, ours_q, ours_qd, ours_tau, free=free, bodies=True)
        mine = [ours["shoulder"], ours["spin"], *ours["drone.alpha"], *ours["prop.alpha"]]
        theirs = [a[jv["shoulder"]], a[jv["spin"]],
                  *pin.getAcceleration(model, data, ids["flyer"], pin.LOCAL).angular,
                  *pin.getAcceleration(model, data, ids["spin"], pin.LOCAL).angular]
        worst = max(worst, float(np.abs(np.subtract(mine, theirs)).max() /
                                 max(1.0, np.abs(theirs).max())))
    assert worst <= 1e-8, worst


MIMIC_ROBOTS = ["panda_description/urdf/panda.urdf", "baxter_description/urdf/baxter.urdf",
                "pr2_description/urdf/pr2.urdf",
                "tiago_pro_description/robots/tiago_pro.urdf"]


@needs_robots
@pytest.mark.parametrize("rel", MIMIC_ROBOTS)
def test_mimic_joints_are_couplings(rel):
    """``<mimic>`` joints (Panda's and Baxter's fingers, PR2's and Tiago's grippers: 1 to
    10 per robot) load as couplings by default, and forward dynamics equal Pinocchio's
    model built with ``mimic=True`` (its mimic joints have no freedom of their own:
    M q'' = tau - b by CRBA and RNEA, which support them; ABA does not) at two random
    states. The dampers of the followers act on the leaders through the ratio squared
    (Pinocchio has no damping: taken off tau)."""
    from elements.files.urdf import read_urdf_tree
    path = os.path.join(ROBOTS, rel)
    model = pin.buildModelFromUrdf(path, mimic=True)
    data = model.createData()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path)
    report = mech.import_report
    with open(path, encoding="utf-8") as fh:
        specs = {j.name: j for j in read_urdf_tree(fh.read(), path).joints}
    mimics = [n for n, j in specs.items() if j.mimic is not None and j.type != "fixed"]
    assert sorted(report.couplings) == sorted(mimics) and mimics
    mm = mech.assemble()
    own = [i for i in range(1, model.njoints) if "Mimic" not in model.joints[i].shortname()]
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, v, tau = pin.neutral(model), rng.normal(size=model.nv), rng.normal(size=model.nv)
        ours_q, ours_qd, ours_tau, tau_pin = {}, {}, {}, tau.copy()
        for i in own:
            jm, name = model.joints[i], model.names[i]
            th = random_angle(model, jm, q, rng, 1.0)
            mine = report.joints[name]
            ours_q[mine], ours_qd[mine], ours_tau[mine] = th, v[jm.idx_v], tau[jm.idx_v]
            tau_pin[jm.idx_v] -= specs[name].damping * v[jm.idx_v]
        for follower in mimics:
            leader, ratio, _ = specs[follower].mimic
            k = model.joints[model.getJointId(leader)].idx_v
            tau_pin[k] -= ratio * ratio * specs[follower].damping * v[k]
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        qdd = np.linalg.solve(M, tau_pin - pin.rnea(model, data, q, v, np.zeros(model.nv)))
        ours = direct_dynamics(mm, ours_q, ours_qd, ours_tau)
        err = max(abs(ours[report.joints[model.names[i]]] - qdd[model.joints[i].idx_v])
                  for i in own)
        assert err < 1e-8 * max(1.0, np.abs(qdd).max()), f"{rel}: {err:.3g}"
        for follower in mimics:             # and the followers move with their leaders
            leader, ratio, _ = specs[follower].mimic
            assert ours[report.joints[follower]] == pytest.approx(
                ratio * ours[report.joints[leader]], rel=1e-9, abs=1e-9)


CHAINS = f"""<robot name="chains">
  <link name="base">{urdf_inertial(3.0, "0 0 0.1", (0.04, 0.05, 0.06))}</link>
  <link name="v1"><inertial><origin xyz="0 0 0.07"/><mass value="0.3"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="A">{urdf_inertial(2.0, "0.05 0.02 -0.3", (0.03, 0.02, 0.01))}</link>
  <link name="v2"/><link name="v3"/>
  <link name="B">{urdf_inertial(1.5, "0 0.1 -0.2", (0.02, 0.01, 0.015))}</link>
  <link name="v4"/><link name="v5"/>
  <link name="C">{urdf_inertial(0.8, "0.1 0 0", (0.004, 0.006, 0.005))}</link>
  {urdf_joint("u1", "base", "v1", "0 0 0.5", "0 0 1")}
  {urdf_joint("u2", "v1", "A", "0 0 0.1", "1 0 1", rpy="0.3 0 0")}
  {urdf_joint("g1", "A", "v2", "0.1 0 -0.6", "0 0 1")}
  {urdf_joint("g2", "v2", "v3", "0 0 0", "1 0 0")}
  {urdf_joint("g3", "v3", "B", "0 0 0", "0 0.96 0.28")}
  {urdf_joint("p1", "B", "v4", "0 0.2 -0.4", "1 0 0", kind="prismatic")}
  {urdf_joint("p2", "v4", "v5", "0 0 0", "0 -1 0", kind="prismatic")}
  {urdf_joint("p3", "v5", "C", "0 0 0", "0 0 1")}
</robot>"""


@pytest.mark.parametrize("floating", [False, True])
def test_chains_through_massless_links_equal_pinocchio(tmp_path, floating):
    """Revolutes and slides in sequence through massless links (Pinocchio's joint
    chain) become one joint each: two revolutes at 45 degrees -> universal (with a point
    mass on the first axis carried by the base), three revolutes each perpendicular to
    the next (first and third not) -> gimbal, slide, slide (opposite to axis x x_axis),
    revolute -> planar. Forward dynamics equal Pinocchio's ABA at 20 random states to
    1e-8 relative (seen: round-off)."""
    path = tmp_path / "chains.urdf"
    path.write_text(CHAINS)
    mech = _load(str(path), floating)
    report = mech.import_report
    assert {j: mech.joint(j).type_name for j in report.composed} == \
        {"u1": "universal", "g1": "gimbal", "p1": "planar"}
    assert report.composed["p1"] == ["p1", "p2", "p3"]
    assert report.lumped == {"v1": "base" if floating else "ground"}
    assert sorted(report.inner_links) == ["v1", "v2", "v3", "v4", "v5"]
    model = _pin_model(str(path), floating)
    data = model.createData()
    mm = mech.assemble()
    rng = np.random.default_rng(17)
    errs = [compare(model, data, mm, report, rng, floating, {}) for _ in range(20)]
    assert max(errs) <= 1e-8, max(errs)


PLANAR = """<robot name="planar">
  <link name="base"/>
  <link name="sled"><inertial><origin xyz="0.1 -0.05 0.02" rpy="0.3 0.1 -0.2"/>
    <mass value="2.0"/><inertia ixx="0.3" ixy="0.01" ixz="0.02" iyy="0.25" iyz="-0.01"
    izz="0.4"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.05 0.0 -0.3"/><mass value="1.0"/>
    <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.06" iyz="0" izz="0.01"/></inertial></link>
  <joint name="p1" type="planar"><parent link="base"/><child link="sled"/>
    <origin xyz="0.2 0.1 0.5" rpy="0.4 -0.3 0.7"/><axis xyz="0 0 1"/></joint>
  <joint name="r1" type="revolute"><parent link="sled"/><child link="arm"/>
    <origin xyz="0.1 0.2 0" rpy="0 0.2 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>"""


def test_a_urdf_planar_joint_equals_pinocchio(tmp_path):
    """URDF's planar joint (in the plane normal to its axis, tilted by its origin; x, y
    along the joint frame's axes and the angle about the normal, as Pinocchio's
    JointModelPlanar) under a revolute: forward dynamics equal Pinocchio's ABA at 20
    random states, both with efforts on every coordinate, to 1e-9 relative. Pinocchio's
    planar velocity and acceleration are in the moving joint frame: v_l = R(th)^T (x', y'),
    a_l = d/dt v_l, and its in-plane force f_l maps to ours as R(th) f_l."""
    path = tmp_path / "planar.urdf"
    path.write_text(PLANAR)
    mech = _load(str(path), False)
    assert mech.joint("p1").type_name == "planar"
    model = _pin_model(str(path), False)
    data = model.createData()
    mm = mech.assemble()
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(20):
        x, y, th, a = rng.uniform(-1, 1, 4)
        xd, yd, thd, ad = rng.normal(size=4)
        fl, tz, ta = rng.normal(size=2), rng.normal(), rng.normal()
        c, s = np.cos(th), np.sin(th)
        Rt = np.array([[c, s], [-s, c]])                 # R(th)^T
        q = np.array([x, y, c, s, a])
        v = np.r_[Rt @ [xd, yd], thd, ad]
        acc = pin.aba(model, data, q, v, np.r_[fl, tz, ta])
        ours = direct_dynamics(mm, {"p1": [x, y, th], "r1": a}, {"p1": [xd, yd, thd],
                                                                 "r1": ad},
                               {"p1": np.r_[Rt.T @ fl, tz], "r1": ta})
        xdd, ydd, thdd = ours["p1"]
        dRt = np.array([[-s, c], [-c, -s]]) * thd          # d/dt R(th)^T
        mine = np.r_[Rt @ [xdd, ydd] + dRt @ [xd, yd], thdd, ours["r1"]]
        worst = max(worst, float(np.abs(mine - acc).max() / max(1.0, np.abs(acc).max())))
    assert worst <= 1e-9, worst


def test_chains_that_form_no_joint_are_refused_naming_them():
    """A point mass off the axes on both sides, and two parallel slides, are refused with
    the joints named and the reason (two slides alone are a translation joint: they
    load)."""
    off = CHAINS.replace('<origin xyz="0 0 0.07"/><mass value="0.3"/>',
                         '<origin xyz="0.05 0 0.07"/><mass value="0.3"/>')
    with pytest.raises(URDFError, match=r"link\(s\) v1: a point mass \(0.3 kg, no "
                       r"rotational inertia\) between the moving joints u1 and u2"):
        loads_urdf(off)
    slides = CHAINS.replace(urdf_joint("p3", "v5", "C", "0 0 0", "0 0 1"),
                            urdf_joint("p3", "v5", "C", "0 0 0", "0 0 1", kind="fixed"))
    assert loads_urdf(slides).joint("p1").type_name == "translation"
    parallel = slides.replace(urdf_joint("p2", "v4", "v5", "0 0 0", "0 -1 0",
                                        kind="prismatic"),
                              urdf_joint("p2", "v4", "v5", "0 0 0", "1 0 0",
                                        kind="prismatic"))
    with pytest.raises(URDFError, match=r"the joints p1 \(prismatic\), p2 \(prismatic\) "
                       r"in sequence through massless links: their motions are dependent"):
        loads_urdf(parallel)
