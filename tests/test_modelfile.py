"""Model files: malformed tables, spherical initial orientations, loads, [initial] keys;
and the command line's handling of them (one clean line, exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from elements.files.modelfile import ModelFileError, load_model, loads_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PENDULUM = '''
[model]
name = "pendulum"
gravity = [0.0, -9.81, 0.0]

[[body]]
name = "rod"
mass = 1.2
inertia = { principal = [0.036, 0.036, 0.036] }
points = { top = [0.0, 0.3, 0.0], tip = [0.0, -0.3, 0.0] }

[[joint]]
name = "hinge"
type = "revolute"
parent = "ground"
child = "rod"
child_point = "top"
axis = [0.0, 0.0, 1.0]
damper = 0.05

[[load]]
name = "gust"
type = "force"
body = "rod"
point = "tip"
value = [0.5, 0.0, 0.0]

[initial]
q = { hinge = 0.5 }

[solver]
t_end = 0.2
points = 5

[output]
[[output.plot]]
file = "angle.png"
y = ["hinge.q"]
'''


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "bondgraph_cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def error(text, path="bad.toml"):
    with pytest.raises(ModelFileError) as info:
        loads_model(text, path)
    return str(info.value)


def test_the_base_file_is_valid():
    spec = loads_model(PENDULUM, "good.toml")
    assert list(spec.mechanism.joints) == ["hinge"] and list(spec.mechanism.loads) == ["gust"]
    assert len(spec.output.plots) == 1


# -- 1. arrays of tables written with one bracket ------------------------------------------

@pytest.mark.parametrize("header, what", [
    ("[[joint]]", "joint"), ("[[load]]", "load"), ("[[body]]", "body"),
    ("[[output.plot]]", "output.plot"),
])
def test_single_bracket_array_of_tables_is_an_error(header, what):
    text = PENDULUM.replace(header, header[1:-1])
    msg = error(text)
    assert msg.startswith(f"bad.toml: [{what}] ")
    assert "array of tables" in msg and f"[[{what}]]" in msg


@pytest.mark.parametrize("text, what", [
    ("joint = [1, 2]\n", "joint"),
    ("load = 3\n", "load"),
])
def test_array_of_tables_keys_must_hold_tables(text, what):
    msg = error(text + "[model]\ngravity = [0.0, 0.0, 0.0]\n[solver]\nt_end = 1.0\n")
    assert f"[{what}]" in msg and "array of tables" in msg


@pytest.mark.parametrize("header", ["initial", "solver", "output", "model"])
def test_single_tables_written_as_arrays_are_an_error(header):
    text = PENDULUM.replace(f"[{header}]", f"[[{header}]]", 1)
    if header == "output":
        text = text.replace("[[output.plot]]", "[[output.plots_gone]]")
    msg = error(text)
    assert f"[{header}]" in msg and "single table" in msg


def test_single_bracket_joint_exits_2_on_the_command_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(PENDULUM.replace("[[joint]]", "[joint]"))
    p = cli("run", str(path), "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bad.toml" in lines[0] and "[[joint]]" in lines[0]


# -- 2. a spherical joint's initial orientation --------------------------------------------

SPHERICAL = '''
[model]
gravity = [0.0, -9.81, 0.0]
[[body]]
name = "bob"
mass = 1.0
inertia = { principal = [0.01, 0.02, 0.03] }
[[joint]]
name = "S"
type = "spherical"
parent = "ground"
child = "bob"
child_point = [0.0, 0.5, 0.0]
[initial]
q = { S = QVALUE }
qd = { S = [0.0, 0.0, 1.5] }
[solver]
t_end = 0.05
points = 3
rtol = 1e-10
atol = 1e-10
'''


def _start_pose(text):
    spec = loads_model(text, "sph.toml")
    res = spec.mechanism.assemble().simulate((0.0, 0.05), spec.q0, spec.qd0,
                                             t_eval=spec.solver.t_eval, rtol=1e-10,
                                             atol=1e-10)
    assert res.success and res.max_abs_phi < 1e-9
    return res.body("bob").rotation[0], res.body("bob").position[:, 0], res


def test_spherical_orientation_from_a_rotation_vector_and_a_quaternion():
    from bondgraph.spatial import axis_angle_matrix
    angle = 0.4
    want = axis_angle_matrix(np.array([1.0, 0.0, 0.0]), angle)
    A, r, res = _start_pose(SPHERICAL.replace("QVALUE", f"[{angle}, 0.0, 0.0]"))
    assert np.allclose(A, want, atol=1e-12)
    assert np.allclose(r, -want @ np.array([0.0, 0.5, 0.0]), atol=1e-12)   # pivot at origin
    assert np.allclose(res.body("bob").angular_velocity[:, 0], [0.0, 0.0, 1.5], atol=1e-12)
    c, s = float(np.cos(angle / 2)), float(np.sin(angle / 2))
    A4, _, _ = _start_pose(SPHERICAL.replace("QVALUE", f"[{c!r}, {s!r}, 0.0, 0.0]"))
    assert np.allclose(A4, want, atol=1e-12)
    A0, _, _ = _start_pose(SPHERICAL.replace("QVALUE", "[0.0, 0.0, 0.0]"))
    assert np.allclose(A0, np.eye(3))


@pytest.mark.parametrize("value, what", [
    ("0.3", "rotation vector"),
    ("[1.0, 0.0]", "rotation vector"),
    ("[2.0, 0.0, 0.0, 0.0]", "unit length"),
    ('"x"', "rotation vector"),
])
def test_bad_spherical_orientations_name_the_key_and_the_valid_forms(value, what):
    msg = error(SPHERICAL.replace("QVALUE", value))
    assert msg.startswith("bad.toml: [initial] 'q.S': ") and what in msg


def test_spherical_orientation_on_the_command_line(tmp_path):
    path = tmp_path / "sph.toml"
    path.write_text(SPHERICAL.replace("QVALUE", "[0.3, 0.0, 0.0]"))
    p = cli("run", str(path), "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    path.write_text(SPHERICAL.replace("QVALUE", "0.3"))
    p = cli("run", str(path), "--out", str(tmp_path / "o2"))
    assert p.returncode == 2 and "'q.S'" in p.stderr and "Traceback" not in p.stderr


# -- 3. a moment has no point --------------------------------------------------------------

def test_point_on_a_moment_is_an_error_naming_the_load():
    text = PENDULUM.replace('type = "force"', 'type = "moment"')
    msg = error(text)
    assert msg.startswith("bad.toml: [load 'gust'] 'point': ") and "moment" in msg
    spec = loads_model(text.replace('point = "tip"\n', ""), "good.toml")
    assert type(spec.mechanism.loads["gust"]).__name__ == "BodyMoment"


# -- 6. [initial] errors name the full key -------------------------------------------------

@pytest.mark.parametrize("line, key, what", [
    ("q = { hinge = \"a\" }", "q.hinge", "must be a number"),
    ("qd = { hinge = inf }", "qd.hinge", "finite"),
    ("q = { hinge = [0.1, 0.2, 0.3] }", "q.hinge", "one number"),
    ("q = { nope = 0.1 }", "q.nope", "no joint"),
])
def test_initial_errors_name_the_full_key(line, key, what):
    msg = error(PENDULUM.replace("q = { hinge = 0.5 }", line))
    assert msg.startswith(f"bad.toml: [initial] '{key}': ") and what in msg


# -- 5. a failed run: one clean line on stderr; the library still warns ---------------------

DIVERGES = '''
[model]
gravity = [0.0, -9.81, 0.0]
[[body]]
name = "rod"
mass = 1.0
inertia = { solid_cube = 0.1 }
[[joint]]
name = "J1"
type = "revolute"
parent = "ground"
child = "rod"
child_point = [0.0, 0.2, 0.0]
axis = [0.0, 0.0, 1.0]
actuator = { type = "ramp", slope = 1e305, start = 0.5 }
[solver]
t_end = 1.0
points = 5
rtol = 1e-6
atol = 1e-6
'''


def test_a_failed_run_prints_one_clean_line(tmp_path):
    path = tmp_path / "diverges.toml"
    path.write_text(DIVERGES)
    p = cli("run", str(path), "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 1, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: simulation failed at t = "), p.stderr
    assert "Warning" not in p.stderr and "Traceback" not in p.stderr
    assert (tmp_path / "o" / "summary.json").exists()     # what was computed is written


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's overflow on the way
def test_the_library_still_warns_when_a_run_fails():
    from bondgraph import IntegrationWarning
    spec = loads_model(DIVERGES, "diverges.toml")
    with pytest.warns(IntegrationWarning, match="simulation failed"):
        res = spec.mechanism.assemble().simulate((0.0, 1.0), spec.q0, spec.qd0,
                                                 t_eval=spec.solver.t_eval)
    assert not res.success


def test_damper_table_refuses_unknown_keys():
    text = PENDULUM.replace("damper = 0.05", "damper = { coefficient = 0.05, coeficient = 1.0 }")
    with pytest.raises(ModelFileError, match="coeficient.*unknown key; did you mean "
                                              "'coefficient'\\? valid keys: coefficient"):
        loads_model(text, "pendulum.toml")
    ok = loads_model(PENDULUM.replace("damper = 0.05", "damper = { coefficient = 0.05 }"),
                     "pendulum.toml")
    assert ok.mechanism.joint("hinge").dampers[0].coefficient == 0.05


def test_a_study_file_given_as_a_model_says_to_use_sweep():
    study = open(os.path.join(ROOT, "examples", "three_body_sweep.toml")).read()
    with pytest.raises(ModelFileError, match="bondgraph sweep"):
        loads_model(study, "three_body_sweep.toml")


def test_a_rotor_on_a_joint_adds_its_inertia():
    """``rotor = J_a`` on the hinge: the pendulum (damper and gust removed) has
    q'' = -m g l sin q / (I_c + m l^2 + J_a) about the top point (l = 0.3 m); a rotor
    that is not positive is an error naming the joint and the key."""
    from elements import direct_dynamics
    text = PENDULUM.replace("damper = 0.05", "rotor = 0.02").replace(
        "value = [0.5, 0.0, 0.0]", "value = [0.0, 0.0, 0.0]")
    mm = loads_model(text, "rotor.toml").mechanism.assemble()
    q = 0.5
    qdd = direct_dynamics(mm, {"hinge": q}, {"hinge": 0.7}, {})["hinge"]
    assert qdd == pytest.approx(-1.2 * 9.81 * 0.3 * np.sin(q) / (0.036 + 1.2 * 0.09 + 0.02),
                                rel=1e-10)
    msg = error(PENDULUM.replace("damper = 0.05", "rotor = -1.0"))
    assert "joint 'hinge'" in msg and "rotor" in msg


ROBOT_MODEL = '''
[model]
name = "chain"
[robot]
file = "{file}"
efforts = {{ hinge1 = {{ type = "sine", amplitude = 0.5, omega = 3.0 }} }}
[initial]
q = {{ hinge2 = 0.3 }}
[solver]
t_end = 0.4
points = 5
'''


def test_a_robot_description_in_a_model_file(tmp_path):
    """``[robot] file = ...`` imports an MJCF file (path relative to the model file):
    `bondgraph run` writes the joints' motion, equal to the same import and simulation
    done through the Python API (same solver settings)."""
    import csv
    import shutil
    import warnings
    from bondgraph import TimeFunction
    from elements import load_mjcf
    src = os.path.join(ROOT, "tests", "validation", "mjcf", "pendulum_chain.xml")
    shutil.copy(src, tmp_path / "chain.xml")
    (tmp_path / "chain.toml").write_text(ROBOT_MODEL.format(file="chain.xml"))
    r = cli("run", str(tmp_path / "chain.toml"), "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "out" / "joints.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_mjcf(src, efforts={"hinge1": TimeFunction.sine(0.5, 3.0)})
    res = mech.assemble().simulate((0.0, 0.4), {"hinge2": 0.3}, t_eval=np.linspace(0, 0.4, 5))
    for name in ("hinge1", "hinge3", "slide4"):
        got = np.array([float(row[f"{name}.q"]) for row in rows])
        assert np.allclose(got, res.joint(name).q, rtol=1e-9, atol=1e-12), name
    assert abs(res.joint("hinge1").q[-1]) > 1e-3          # (it moved)


def test_a_robot_description_runs_as_a_model_file(tmp_path):
    """`bondgraph run robot.xml` (or .urdf): a robot description where a model file is
    expected is read as ``[robot] file = ...`` with ``[solver] t_end = 1``; the outputs
    equal, value for value, those of that model file written out. Before, the command
    said the file was not valid TOML."""
    import shutil
    from elements.files.modelfile import ROBOT_FILE_SPAN
    src = os.path.join(ROOT, "tests", "validation", "mjcf", "pendulum_chain.xml")
    shutil.copy(src, tmp_path / "chain.xml")
    (tmp_path / "chain.toml").write_text(
        f'[robot]\nfile = "chain.xml"\n[solver]\nt_end = {ROBOT_FILE_SPAN}\n')
    spec = load_model(str(tmp_path / "chain.xml"))
    assert spec.solver.t_end == 1.0
    assert set(spec.mechanism.joints) >= {"hinge1", "hinge3", "slide4"}
    out = {}
    for name in ("chain.xml", "chain.toml"):
        r = cli("run", str(tmp_path / name), "--out", str(tmp_path / name.replace(".", "_")),
                "--quiet", "--no-animation")
        assert r.returncode == 0, r.stderr
        out[name] = (tmp_path / name.replace(".", "_") / "joints.csv").read_text()
    assert out["chain.xml"] == out["chain.toml"]
    rows = out["chain.xml"].splitlines()
    assert len(rows) > 50 and rows[1] != rows[-1]         # (it moved)


def test_a_coupling_in_a_model_file(tmp_path):
    """``[[coupling]]`` between two joints of a URDF robot: the fingers move together,
    (m_l + k^2 m_r) a_l = f (no gravity)."""
    from elements import direct_dynamics
    from mechanisms import gripper_urdf           # (tests/helpers)
    (tmp_path / "g.urdf").write_text(gripper_urdf())
    text = ('[model]\ngravity = [0.0, 0.0, 0.0]\n[robot]\nfile = "g.urdf"\n'
            'efforts = { l = 2.0 }\n[[coupling]]\nname = "link"\nleader = "l"\n'
            'follower = "r"\nratio = 1.5\n[solver]\nt_end = 0.1\n')
    (tmp_path / "g.toml").write_text(text)
    from elements.files.modelfile import load_model
    spec = load_model(str(tmp_path / "g.toml"))
    acc = direct_dynamics(spec.mechanism.assemble(), {}, {}, {"l": 2.0})
    assert acc["l"] == pytest.approx(2.0 / (0.2 + 1.5 ** 2 * 0.3), rel=1e-10)
    assert acc["r"] == pytest.approx(1.5 * acc["l"], rel=1e-10)
    for edit, what in [
        (lambda t: t.replace('file = "g.urdf"', 'file = "nowhere.urdf"'),
         r"\[robot\] 'file': 'nowhere.urdf': no such file"),
        (lambda t: t.replace('follower = "r"', 'follower = "x"'),
         r"\[coupling 'link'\] 'follower': names joint 'x'"),
        (lambda t: t.replace('ratio = 1.5', 'ratio = "big"'), r"'ratio'"),
        (lambda t: t.replace('name = "link"', 'name = "l"'), r"duplicate name 'l'"),
        (lambda t: t.replace('file = "g.urdf"', 'file = "g.urdf"\nmimic = "maybe"'),
         r"\[robot\] 'mimic': unknown value 'maybe'"),
        (lambda t: t.replace('efforts = { l = 2.0 }', 'efforts = { q = 2.0 }'),
         r"\[robot\] 'file': .*efforts given for q"),
    ]:
        (tmp_path / "bad.toml").write_text(edit(text))
        with pytest.raises(ModelFileError, match=what):
            load_model(str(tmp_path / "bad.toml"))


SLEEVE = """
[model]
name = "sleeve"
gravity = [0.0, 0.0, -9.81]
[[body]]
name = "sleeve"
mass = 0.5
inertia = { principal = [2e-3, 2e-3, 1e-3] }
[[joint]]
name = "C1"
type = "cylindrical"
parent = "ground"
child = "sleeve"
child_point = [0.0, 0.0, 0.1]
axis = [0.0, 0.0, 1.0]
spring = { slide = { stiffness = 200.0, rest = 0.01 } }
damper = { angle = 0.01, slide = 0.5 }
[initial]
q = { C1 = { angle = 0.2, slide = 0.05 } }
qd = { C1 = [3.0, 0.0] }
[solver]
t_end = 0.5
rtol = 1e-10
atol = 1e-10
"""


def test_a_joint_with_several_coordinates_from_a_file_equals_the_api():
    """A cylindrical joint with per-coordinate attachments read from a file simulates
    like the same joint built in Python (1e-12: the same model, the same solver)."""
    from elements import CylindricalJoint, Inertia, Mechanism, RigidBody
    spec = loads_model(SLEEVE, "sleeve.toml")
    j = spec.mechanism.joint("C1")
    assert [a.port for a in j.axes] == ["C1.angle", "C1.slide"]
    assert j.axis("slide").springs[0].rest == 0.01 and j.axis("angle").dampers[0].coefficient == 0.01
    t = np.linspace(0, 0.5, 11)
    a = spec.mechanism.assemble().simulate((0, 0.5), spec.q0, spec.qd0, t_eval=t,
                                           rtol=1e-10, atol=1e-10)
    m = Mechanism("sleeve", gravity=(0, 0, -9.81))
    b = m.add_body(RigidBody("sleeve", 0.5, Inertia.principal(2e-3, 2e-3, 1e-3)))
    m.add_joint(CylindricalJoint("C1", m.ground, b, child_point=(0, 0, 0.1), axis=(0, 0, 1)))
    m.joint("C1").add_spring(200.0, 0.01, coordinate="slide")
    m.joint("C1").add_damper(0.01, coordinate="angle")
    m.joint("C1").add_damper(0.5, coordinate="slide")
    ref = m.assemble().simulate((0, 0.5), {"C1": [0.2, 0.05]}, {"C1": [3.0, 0.0]}, t_eval=t,
                                rtol=1e-10, atol=1e-10)
    assert a.joint("C1").q.shape == (2, 11)
    assert np.abs(a.joint("C1").q - ref.joint("C1").q).max() < 1e-12


@pytest.mark.parametrize("old, new, words", [
    ("spring = { slide = { stiffness = 200.0, rest = 0.01 } }", "spring = 200.0",
     "has coordinates angle, slide: give a table by coordinate"),
    ("spring = { slide = { stiffness = 200.0, rest = 0.01 } }", "spring = { twist = 1.0 }",
     "twist"),
    ("q = { C1 = { angle = 0.2, slide = 0.05 } }", "q = { C1 = [0.2] }",
     r"q.C1.*2 finite numbers"),
    ('type = "cylindrical"', 'type = "cardan"', "cardan"),
    ("axis = [0.0, 0.0, 1.0]", "axis = [0.0, 0.0, 1.0]\naxis2 = [1.0, 0.0, 0.0]", "axis2"),
])
def test_bad_multi_coordinate_joints_are_named(old, new, words):
    """Each mistake is a ModelFileError naming the file, the joint and the key."""
    with pytest.raises(ModelFileError, match=words) as err:
        loads_model(SLEEVE.replace(old, new), "sleeve.toml")
    assert "sleeve.toml" in str(err.value)


def test_limits_and_friction_from_a_file_equal_the_api():
    """``limit`` and ``friction`` on a joint coordinate (a table per coordinate for a
    joint with several) run like the same joint built in Python (1e-12), and their
    mistakes are named by file, joint and key."""
    from elements import CylindricalJoint, Inertia, Mechanism, RigidBody
    text = SLEEVE.replace(
        "damper = { angle = 0.01, slide = 0.5 }",
        "damper = { angle = 0.01, slide = 0.5 }\n"
        "limit = { slide = { lower = -0.02, upper = 0.08, restitution = 0.5 } }\n"
        "friction = { angle = { coulomb = 1e-3, static = 2e-3 } }")
    spec = loads_model(text, "sleeve.toml")
    j = spec.mechanism.joint("C1")
    assert (j.axis("slide").limit.upper, j.axis("angle").friction.static) == (0.08, 2e-3)
    t = np.linspace(0, 0.5, 11)
    a = spec.mechanism.assemble().simulate((0, 0.5), spec.q0, spec.qd0, t_eval=t,
                                           rtol=1e-10, atol=1e-10)
    m = Mechanism("sleeve", gravity=(0, 0, -9.81))
    b = m.add_body(RigidBody("sleeve", 0.5, Inertia.principal(2e-3, 2e-3, 1e-3)))
    c = m.add_joint(CylindricalJoint("C1", m.ground, b, child_point=(0, 0, 0.1),
                                     axis=(0, 0, 1)))
    c.add_spring(200.0, 0.01, coordinate="slide")
    c.add_damper(0.01, coordinate="angle")
    c.add_damper(0.5, coordinate="slide")
    c.add_limit(-0.02, 0.08, restitution=0.5, coordinate="slide")
    c.add_friction(1e-3, static=2e-3, coordinate="angle")
    ref = m.assemble().simulate((0, 0.5), {"C1": [0.2, 0.05]}, {"C1": [3.0, 0.0]}, t_eval=t,
                                rtol=1e-10, atol=1e-10)
    assert [s.what for s in a.switches] == [s.what for s in ref.switches]
    assert any(s.what.startswith("impact") for s in a.switches)
    assert np.abs(a.joint("C1").q - ref.joint("C1").q).max() < 1e-12
    for old, new, words in [
            ("upper = 0.08, restitution = 0.5", "upper = 0.08",
             "give either restitution .* or stiffness"),
            ("restitution = 0.5 }", "restitution = 0.5, bounce = 1 }", "bounce"),
            ("static = 2e-3", "static = 1e-4", r"static friction \(0.0001\) must be at least"),
            ("coulomb = 1e-3", "coulomb = -1.0", "coulomb.*must be positive")]:
        with pytest.raises(ModelFileError, match=words) as err:
            loads_model(text.replace(old, new), "sleeve.toml")
        assert "sleeve.toml" in str(err.value) and "C1" in str(err.value)


def test_robot_import_options_massless_and_min_inertia_in_a_model_file(tmp_path):
    """The refusals of a URDF name ``massless`` and ``min_inertia``; a model file's
    ``[robot]`` table takes both (URDF only), and a wrong value is named."""
    from elements.files.modelfile import ModelFileError, load_model
    (tmp_path / "p.urdf").write_text(
        '<robot name="p"><link name="base"/><link name="bob"><inertial><origin '
        'xyz="0 0 -1"/><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" '
        'izz="0"/></inertial></link><link name="tip"/><joint name="hinge" '
        'type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>'
        '</joint><joint name="spin" type="continuous"><parent link="bob"/><child '
        'link="tip"/><axis xyz="0 0 1"/></joint></robot>')
    base = '[robot]\nfile = "p.urdf"\n{extra}[solver]\nt_end = 0.1\n'

    def load(extra):
        (tmp_path / "p.toml").write_text(base.format(extra=extra))
        return load_model(str(tmp_path / "p.toml"))
    with pytest.raises(ModelFileError, match=r"\[robot\] 'file'.*massless='fix'"):
        load("")                                  # (spin moves the massless tip)
    with pytest.raises(ModelFileError, match=r"\[robot\] 'file'.*min_inertia="):
        load('massless = "fix"\n')               # (bob is a point mass)
    spec = load('massless = "fix"\nmin_inertia = 1e-4\n')
    report = spec.mechanism.import_report
    # (the tip, fixed by massless="fix", is merged into bob's body: the group is bounded)
    assert list(report.bounded) == ["bob, tip"]
    assert report.bounded["bob, tip"][1] == [1e-4] * 3
    with pytest.raises(ModelFileError, match=r"\[robot\] 'min_inertia': must be positive"):
        load('min_inertia = -1.0\n')
    with pytest.raises(ModelFileError, match=r"\[robot\] 'massless': unknown value 'yes'"):
        load('massless = "yes"\n')


# -- the [robot] table: its format and what the import says (reliability issue, item 15) ---

MJCF_DIR = os.path.join(ROOT, "tests", "validation", "mjcf")


def _robot_model(tmp_path, robot: str, file: str, extra: str = "") -> str:
    import shutil
    shutil.copy(robot, tmp_path / file)
    path = tmp_path / "robot.toml"
    path.write_text(f'[robot]\nfile = "{file}"\n{extra}[solver]\nt_end = 0.01\npoints = 3\n')
    return str(path)


def test_a_format_that_contradicts_the_file_is_refused(tmp_path):
    """format = "mjcf" on a URDF compiled it with MuJoCo's URDF reader without a word."""
    from mechanisms import gripper_urdf           # (tests/helpers)
    from elements import MJCFError, load_mjcf
    from elements.files.modelfile import load_model
    (tmp_path / "g.urdf").write_text(gripper_urdf())
    (tmp_path / "g.toml").write_text('[robot]\nfile = "g.urdf"\nformat = "mjcf"\n'
                                     '[solver]\nt_end = 0.1\n')
    with pytest.raises(ModelFileError, match=r"g.toml: \[robot\] 'format': 'mjcf', but "
                                             r"'g.urdf' is a URDF \(its root element is "
                                             r"<robot>\); valid: \"urdf\", or leave format "
                                             r"out"):
        load_model(str(tmp_path / "g.toml"))
    with pytest.raises(MJCFError, match=r"g.urdf: not an MJCF file: its root element is "
                                        r"<robot> \(a URDF"):
        load_mjcf(str(tmp_path / "g.urdf"))
    # the format the file says, with or without the key: the same mechanism
    (tmp_path / "g.toml").write_text('[robot]\nfile = "g.urdf"\nformat = "urdf"\n'
                                     '[solver]\nt_end = 0.1\n')
    assert list(load_model(str(tmp_path / "g.toml")).mechanism.joints) == ["l", "r"]
    mjcf = _robot_model(tmp_path, os.path.join(MJCF_DIR, "pendulum_chain.xml"), "p.urdf",
                        'format = "urdf"\n')
    with pytest.raises(ModelFileError, match=r"\[robot\] 'format': 'urdf', but 'p.urdf' is "
                                             r"an MJCF file \(its root element is <mujoco>\)"):
        load_model(mjcf)
    (tmp_path / "notes.xml").write_text("<?xml version='1.0'?><!-- <robot> --><notes/>")
    (tmp_path / "n.toml").write_text('[robot]\nfile = "notes.xml"\n[solver]\nt_end = 0.1\n')
    with pytest.raises(ModelFileError, match=r"'notes.xml' is not a robot description: its "
                                             r"root element is <notes>"):
        load_model(str(tmp_path / "n.toml"))


def test_import_warnings_are_said_once_in_the_command_lines_style(tmp_path):
    """The MJCF import's warning printed as a raw Python warning (a line of mjcf.py and
    the source line under it), twice, even with --quiet."""
    model = _robot_model(tmp_path, os.path.join(MJCF_DIR, "unsupported_features.xml"),
                         "u.xml")
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = [sys.executable, "-m", "bondgraph_cli", "run", model, "--no-animation"]
    quiet = subprocess.run([*run, "--out", str(tmp_path / "q"), "--quiet"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    loud = subprocess.run([*run, "--out", str(tmp_path / "l")], capture_output=True,
                          text=True, env=env, timeout=600)
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert len(lines) == 2 and all(ln.startswith("warning: ") and "u.xml: not imported"
                                   in ln for ln in lines), loud.stderr
    assert "tendons: u_coupling_tendon" in lines[1] and "RobotImportWarning" not in \
        loud.stderr


def test_import_warnings_point_at_the_users_call():
    """In Python the warning names the line that called the importer (stacklevel),
    not a line inside the package."""
    import warnings
    from elements import RobotImportWarning, load_mjcf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_mjcf(os.path.join(MJCF_DIR, "unsupported_features.xml"))
    said = [w for w in caught if issubclass(w.category, RobotImportWarning)]
    assert len(said) == 2 and {w.filename for w in said} == {__file__}, \
        [(w.filename, w.lineno) for w in said]


WHEEL = """
[model]
name = "wheel"
gravity = [0.0, 0.0, -9.81]
[[body]]
name = "wheel"
mass = 3.0
inertia = { principal = [0.04, 0.05, 0.04] }
[[joint]]
name = "axle"
type = "revolute"
parent = "ground"
child = "wheel"
axis = [0.0, 1.0, 0.0]
friction = { mu = 0.2, radius = 0.01 }
[initial]
q = { axle = 0.0 }
qd = { axle = 4.0 }
[solver]
t_end = 4.0
rtol = 1e-10
atol = 1e-12
"""


def test_friction_following_the_load_from_a_file():
    """``friction = { mu, mu_static, radius }``: a wheel on its axle carrying its weight
    spins down under mu r m g and sticks at w0 I / (mu r m g) (1e-10: the event's
    location); the coulomb part defaults to 0 with mu; mistakes are named by file,
    joint and key."""
    spec = loads_model(WHEEL, "wheel.toml")
    f = spec.mechanism.joint("axle").axes[0].friction
    assert (f.coulomb, f.mu, f.mu_static, f.radius) == (0.0, 0.2, 0.2, 0.01)
    res = spec.mechanism.assemble().simulate((0, 4.0), spec.q0, spec.qd0, rtol=1e-10,
                                             atol=1e-12)
    t_stick = 4.0 * 0.05 / (0.2 * 0.01 * 3.0 * 9.81)
    assert [s.what for s in res.switches] == ["stick"]
    assert abs(res.switches[0].t - t_stick) < 1e-10
    for old, new, words in [
            ("mu = 0.2,", "mu = -0.2,", "mu.*must be >= 0"),
            ("radius = 0.01", "radius = 0.0", "radius.*must be positive"),
            (", radius = 0.01", "", "needs radius"),
            ("radius = 0.01", "radius = 0.01, mu_static = 0.1", r"mu_static \(0.1\) must be "
                                                                 "at least mu"),
            ("radius = 0.01", "radius = 0.01, mu_k = 0.1", "mu_k")]:
        with pytest.raises(ModelFileError, match=words) as err:
            loads_model(WHEEL.replace(old, new), "wheel.toml")
        assert "wheel.toml" in str(err.value) and "axle" in str(err.value)


FREE_BOX = '''
[model]
name = "free_box"
gravity = [0.0, 0.0, -9.81]

[[body]]
name = "box"
mass = 2.0
inertia = { principal = [0.02, 0.03, 0.04] }

[[body]]
name = "lid"
mass = 0.5
inertia = { principal = [0.004, 0.004, 0.006] }

[[joint]]
name = "hinge"
type = "revolute"
parent = "box"
child = "lid"
parent_point = [0.1, 0.0, 0.05]
axis = [0.0, 1.0, 0.0]

[solver]
t_end = 0.1
'''


def test_a_free_joint_without_ports_from_a_file_is_the_free_body():
    """``ports = false`` on a free joint from the ground: the same model as the body
    left nobody's child (same states; derivatives equal to rounding at a random
    state, 1e-12 of their largest: the same equations built in the same order, seen
    0.0); true keeps the three coordinate ports (three states more); a non-boolean or
    ports = false with a spring is refused naming the joint and the key."""
    joint = '''
[[joint]]
name = "float"
type = "free"
parent = "ground"
child = "box"
ports = {}
'''
    implicit = loads_model(FREE_BOX, "implicit.toml").mechanism.assemble()
    explicit = loads_model(FREE_BOX + joint.format("false"), "explicit.toml")
    mm = explicit.mechanism.assemble()
    assert "float" in explicit.mechanism.joints
    assert [j.name for j in mm.free_joints] == ["float"]
    assert mm.model.state_names == implicit.model.state_names
    rng = np.random.default_rng(3)
    x = rng.normal(size=mm.model.n_states)
    a, b = mm.model.rhs(0.0, x), implicit.model.rhs(0.0, x)
    assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
    ported = loads_model(FREE_BOX + joint.format("true"), "ported.toml").mechanism.assemble()
    assert ported.model.n_states == mm.model.n_states + 3
    msg = error(FREE_BOX + joint.format('"no"'))
    assert "float" in msg and "ports" in msg and "true or false" in msg
    msg = error(FREE_BOX + joint.format("false") + "spring = 10.0\n")
    assert "float" in msg and "spring" in msg


SLIDER = '''
[model]
name = "slider"
gravity = [0.0, 0.0, 0.0]

[[body]]
name = "block"
mass = 1.5
inertia = { principal = [0.1, 0.1, 0.1] }

[[joint]]
name = "slide"
type = "prismatic"
parent = "ground"
child = "block"
axis = [1.0, 0.0, 0.0]
actuator = ACTUATOR

[[load]]
name = "side"
type = "force"
body = "block"
frame = "global"
value = LOAD

[solver]
t_end = 1.0
points = 11
rtol = 1e-6
atol = 1e-6
'''


def _slide(actuator, load="[0.0, 0.0, 0.0]", text=SLIDER):
    spec = loads_model(text.replace("ACTUATOR", actuator).replace("LOAD", load),
                       "slider.toml")
    s = spec.solver
    solver, save, budget = s.options()
    res = spec.mechanism.assemble().simulate((s.t_start, s.t_end), spec.q0, spec.qd0,
                                             solver=solver, save=save, budget=budget)
    assert res.success, res.message
    return res


def test_a_step_signal_stops_the_run_at_its_jump():
    """A 2 N step at 0.3 s on a free 1.5 kg slider: x = (t - 0.3)^2 / 1.5 after it. The
    run stops and restarts at the jump (its time known from the signal), so it ends
    within its tolerance (rtol = atol = 1e-6: 4.1e-7 seen); stepped over, 1.3e-5 (the
    signal's time was not handed to the run before). An expression with the same jump
    (Heaviside(t - 0.3, 1): 1 from the jump on, as the step) runs the same, on the
    compiled loop too; with Heaviside(t - 0.3), 1/2 at the jump, within the same
    bound."""
    res = _slide('{ type = "step", time = 0.3, after = 2.0 }')
    t = res.t
    exact = np.where(t > 0.3, (t - 0.3) ** 2 / 1.5, 0.0)
    assert res.raw.diagnostics["breaks"] == 1
    assert np.abs(res.coordinate("slide") - exact).max() < 2e-6
    same = _slide('{ type = "expression", expr = "2*Heaviside(t - 0.3, 1)" }')
    assert same.raw.diagnostics["compiled_loop"], same.raw.diagnostics
    assert np.abs(same.coordinate("slide") - res.coordinate("slide")).max() < 1e-12
    # sympy's Heaviside is 1/2 at the jump: the segment after it starts one float later,
    # so that its first stage sees the force after the jump (7.5e-7 off; from the jump
    # itself, half the force in the first stage: 3.6e-6)
    half = _slide('{ type = "expression", expr = "2*Heaviside(t - 0.3)" }')
    assert np.abs(half.coordinate("slide") - exact).max() < 2e-6


def test_an_expression_signal_drives_an_actuator_and_a_load():
    """A load's expression signal is a list of three expressions of t: the block, pushed
    by 3 t^2 along x and held on its axis, has the reaction -(0, sin(t), 0) across it,
    and slides x = t^4 / (4 * 1.5)."""
    res = _slide('{ type = "expression", expr = "3*t**2" }',
                 '{ type = "expression", expr = "[0, sin(t), 0]" }')
    t = res.t
    assert np.abs(res.coordinate("slide") - t ** 4 / 6.0).max() < 1e-6
    fy = res.joint("slide").force[1]
    assert np.abs(fy + np.sin(t)).max() < 1e-6


@pytest.mark.parametrize("signal, what", [
    ('{ type = "expression", expr = "k*t" }', "[joint 'slide' actuator] 'expr': names k"),
    ('{ type = "expression", expr = "sin(t" }', "'expr': expression 'sin(t' is not valid"),
    ('{ type = "expression", expr = "[t, t]" }', "'expr': gives 2 values; valid: one "),
    ('{ type = "expression", expr = 3.0 }', "'expr': must be a string"),
    ('{ type = "expression" }', "'expr': missing"),
    ('{ type = "expression", expr = "t", value = 2 }', "'value': unknown key"),
    ('{ type = "expresion", expr = "t" }', "'type'"),
    ('{ type = "expression", expr = "2**3000" }',
     "'expr': 1230231922161117176931558813276752514640...72178519018229989376 (904 "
     "characters) is not a finite real number of magnitude at most 1e+100"),
    ('{ type = "expression", expr = "sqrt(-1)" }', "'expr': I is not a finite real"),
    ('{ type = "expression", expr = "2**3000*sin(t)" }', "(904 characters) is not a finite"),
])
def test_bad_expression_signals_are_named(signal, what):
    msg = error(SLIDER.replace("ACTUATOR", signal).replace("LOAD", "[0.0, 0.0, 0.0]"))
    assert msg.startswith("bad.toml: ") and what in msg, msg


def test_a_load_expression_needs_three_values():
    msg = error(SLIDER.replace("ACTUATOR", "0.0").replace(
        "LOAD", '{ type = "expression", expr = "sin(t)" }'))
    assert "[load 'side' value] 'expr': gives 1 value; valid: a list of 3 expressions" in msg


def test_a_short_table_pulse_is_not_stepped_over():
    """A 5 ms pulse of 1 N in a table, on a free 1.5 kg slider at rest: each of the
    table's points is a break, so the run sees it wherever it falls (stepped over, the
    slider never moved, q(1) = 0, and the run said SUCCESS)."""
    for a in (0.13, 0.33, 0.88):
        res = _slide(f'{{ type = "table", t = [0.0, {a}, {a + 0.005}, {a + 0.01}, 1.0], '
                     f'value = [0.0, 0.0, 1.0, 0.0, 0.0] }}')
        impulse = 0.005                          # (the triangle's area, N s)
        exact = impulse / 1.5 * (1.0 - (a + 0.005))
        assert abs(res.coordinate("slide")[-1] - exact) < 1e-6 * 5, (a, res.coordinate(
            "slide")[-1], exact)


def test_a_step_that_frees_a_stuck_joint_runs_through_its_break():
    """Friction 0.5 N holds the slider until a 2 N step at 0.3 s: the release is found
    5e-15 s before the step's break, and the segment up to the break is shorter than the
    first step the hybrid run asks for (it ended in scipy's "first_step exceeds bounds",
    an internal error, for a step signal and for Heaviside(t - 0.3, 1) alike). Then
    x = (2 - 0.5) / 1.5 (t - 0.3)^2 / 2."""
    text = SLIDER.replace("actuator = ACTUATOR", "actuator = ACTUATOR\nfriction = 0.5")
    for signal in ('{ type = "step", time = 0.3, after = 2.0 }',
                   '{ type = "expression", expr = "2*Heaviside(t - 0.3, 1)" }'):
        res = _slide(signal, text=text)
        t = res.t
        exact = np.where(t > 0.3, 0.5 * (1.5 / 1.5) * (t - 0.3) ** 2, 0.0)
        assert np.abs(res.coordinate("slide") - exact).max() < 2e-6


FREE_NO_PORTS = '''
[model]
gravity = [0.0, 0.0, -9.81]
[[body]]
name = "c"
mass = 1.0
inertia = { principal = [0.1, 0.2, 0.25] }
[[joint]]
name = "F"
type = "free"
parent = "ground"
child = "c"
ports = PORTS
[solver]
t_end = 0.1
[initial]
INITIAL
'''


@pytest.mark.parametrize("initial", ["qd = { F = [1.0, 2.0, 3.0] }",
                                     "q = { F = [0.1, 0.2, 0.3] }"])
def test_a_free_joint_without_ports_takes_no_initial_value(initial):
    """ports = false is the free body's model, which a file gives no pose or twist: a
    q or qd for it is refused naming the key (qd = [1, 2, 3] was read as a spherical
    joint's angular velocity and set as the linear one; q failed in the initial state
    without naming the key); with ports = true the same joint takes them by name."""
    msg = error(FREE_NO_PORTS.replace("PORTS", "false").replace("INITIAL", initial))
    assert "[initial] '" in msg and "free joint 'F' without ports has no key for its " \
        "pose or twist" in msg and "valid: ports = true" in msg, msg
    spec = loads_model(FREE_NO_PORTS.replace("PORTS", "true").replace(
        "INITIAL", "q = { F = { x = 0.1, y = 0.2, z = 0.3 } }\nqd = { F = { x = 1.0 } }"),
        "free.toml")
    mm = spec.mechanism.assemble()
    x = mm.initial_state(spec.q0, spec.qd0)
    assert np.allclose(x[mm.model.state_slices["c.r"]], [0.1, 0.2, 0.3], atol=1e-15)
    assert np.allclose(x[mm.model.state_slices["p_c.linear"]], [1.0, 0.0, 0.0], atol=1e-15)


def test_a_kind_a_file_cannot_describe_is_refused_by_name():
    """A chain joint (its members are built in Python) is refused naming the key, and
    the kinds listed as valid are those a file takes (chain was listed as valid, then
    failed in its constructor: "members must be 1 to 6 ChainAxis")."""
    text = FREE_NO_PORTS.replace('type = "free"', 'type = "chain"').replace(
        "ports = PORTS\n", "").replace("INITIAL", "")
    msg = error(text)
    assert "[joint 'F'] 'type': a chain joint cannot be described in a model file" in msg
    assert "chain" not in msg.split("kinds a file takes:")[1] and "revolute" in msg


@pytest.mark.parametrize("old, new, where", [
    ('name = "rod"', 'name = "a.b"', "[body 1] 'name': body name 'a.b' is not valid"),
    ('name = "hinge"', 'name = "h\\ninge"', "[joint 1] 'name': joint name"),
    ('name = "gust"', 'name = " gust"', "[load 1] 'name': load name"),
])
def test_a_bad_name_is_refused_naming_its_table_and_key(old, new, where):
    """(The library's rule for names, said with the file's table and key: a body name
    holding '.' named only the file.)"""
    msg = error(PENDULUM.replace(old, new, 1))
    assert msg.startswith("bad.toml: ") and where in msg and "valid:" in msg, msg
