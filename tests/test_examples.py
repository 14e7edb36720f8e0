"""Every example script runs (short spans) and writes what it promises."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script, *args, timeout=300):
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_three_body_example_writes_every_output(tmp_path):
    out = tmp_path / "tb"
    p = run("three_body_prismatic.py", "--out", str(out), "--t-end", "1.0", "--points", "101")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cross-checks: PASSED" in p.stdout
    for name in ["bodies.csv", "joints.csv", "energy.csv", "units.json", "summary.json",
                 "three_body.mat", "bond_graph.dot", "fig6_m2_x.png", "fig7_m2_y.png",
                 "fig8_m2_z.png", "fig9_J3_force.png", "animation.html"]:
        assert (out / name).exists(), name
    with open(out / "joints.csv") as f:
        header = next(csv.reader(f))
    for col in ["t", "J3.Fx", "J3.Fy", "J3.Fz", "J3.Mx", "J3.My", "J3.Mz", "J1.q", "J1.qd"]:
        assert col in header
    with open(out / "bodies.csv") as f:
        header = next(csv.reader(f))
    assert {"m2.x", "m2.y", "m2.z"} <= set(header)
    units = json.loads((out / "units.json").read_text())
    assert units["J3.Fx"]["unit"] == "N" and units["J3.Fx"]["frame"] == "global"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] and summary["max_abs_phi"] < 1e-8
    assert len(summary["inserted_by_causality"]) == 6
    data = np.loadtxt(out / "bodies.csv", delimiter=",", skiprows=1)
    assert data.shape == (101, len(header))
    # m2 starts at (0.3, 0, -0.15) (benchmarks.md section 1)
    col = {h: k for k, h in enumerate(header)}
    assert np.allclose([data[0, col["m2.x"]], data[0, col["m2.y"]], data[0, col["m2.z"]]],
                       [0.3, 0.0, -0.15], atol=1e-12)
    import scipy.io
    mat = scipy.io.loadmat(out / "three_body.mat")
    with open(out / "joints.csv") as f:
        jheader = next(csv.reader(f))
    joints = np.loadtxt(out / "joints.csv", delimiter=",", skiprows=1)
    assert np.array_equal(mat["J3_Fx"].ravel(), joints[:, jheader.index("J3.Fx")])


def test_results_as_dataframes_and_compact_reprs():
    pd = pytest.importorskip("pandas", reason="the optional pandas is not installed")
    from elements import models
    res = models.three_body_prismatic().assemble().simulate((0, 0.1),
                                                            t_eval=np.linspace(0, 0.1, 6))
    df = res.to_dataframe()
    assert df.shape[0] == 6 and "J3.Fx" in df.columns and df.index.name == "t"
    assert np.array_equal(df["m2.z"].to_numpy(), res.body("m2").position[2])
    raw = res.raw.to_dataframe()
    assert "p_m2.linear[2]" in raw.columns
    assert repr(res).startswith("MechanismResult('three_body_prismatic': SUCCESS")


def test_robots_gallery_holds_a_real_arm_and_quadruped(tmp_path):
    """UR5 (fixed base) and Solo12 (floating base, free fall) from their URDFs under PD
    control: both runs reach the end, their energy ledgers balance (drift below 1e-6 J:
    the ledger counts the springs', dampers' and gravity's work independently of the
    kinetic energy), and the 3D pages are written."""
    if not _has_robot_data():
        pytest.skip("the test extra's example-robot-data is not installed")
    p = run("robots_gallery.py", "--out", str(tmp_path), "--t-end", "0.4")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("ur5:", "solo12:"))]
    assert len(lines) == 2, p.stdout
    for ln in lines:
        assert "reached the end" in ln, ln
        drift = float(ln.split("energy balance drift ")[1].split(" J")[0])
        assert drift < 1e-6, ln
    assert (tmp_path / "ur5.html").stat().st_size > 10_000
    assert (tmp_path / "solo12.html").stat().st_size > 10_000


def _has_robot_data() -> bool:
    import importlib.metadata as md
    try:
        md.distribution("example-robot-data")
        return True
    except md.PackageNotFoundError:
        return False


def test_custom_joint_example_adds_a_kind_in_one_file(tmp_path):
    """examples/custom_joint.py registers a Cartesian joint (under 80 lines, no other
    file touched) and runs it from a model file: its coordinates follow the closed form
    (the script exits 1 above 1e-8 m), the per-coordinate columns are written and the 3D
    page holds the joint."""
    path = os.path.join(ROOT, "examples", "custom_joint.py")
    assert sum(1 for _ in open(path, encoding="utf-8")) < 80
    p = run("custom_joint.py", "--out", str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    with open(tmp_path / "joints.csv") as f:
        header = next(csv.reader(f))
    assert {"G.x.q", "G.y.q", "G.z.q", "G.x.spring", "G.Fx"} <= set(header)
    page = (tmp_path / "gantry.html").read_text()
    assert '"cartesian"' in page
    meta = json.loads((tmp_path / "mechanism.json").read_text())
    assert meta["joints"]["G"]["type"] == "cartesian"
    assert [s["joint"] for s in meta["springs"]] == ["G.x", "G.y", "G.z"]


# Run in a fresh interpreter: importing the example registers its joint kind, which the
# session's registry (and the contract test's list of samples) must not see.
_CUSTOM_JOINT_CHECK = r"""
import importlib.util, json, sys
import numpy as np
from elements import (AxisMotion, FastDynamics, Inertia, Mechanism, RevoluteJoint,
                      RigidBody, direct_dynamics, register_joint)
from elements.drawing.scene import build_scene
spec = importlib.util.spec_from_file_location("custom_joint", sys.argv[1])
ex = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ex)
Cartesian = ex.CartesianJoint
if sys.argv[2] == "wrong":          # a deliberately wrong contract: x and y swapped
    @register_joint
    class Cartesian(ex.CartesianJoint):
        type_name, needs_axis = "cartesian_wrong", False
        def axis_motions(self):
            return tuple(AxisMotion.translation(e) for e in np.eye(3)[[1, 0, 2]])

def mechanism():
    # the gantry on a swinging arm: the slides' frame turns, so Coriolis and centrifugal
    # terms enter (a fixed parent would test only M's diagonal)
    mech = Mechanism("arm_gantry", gravity=(0.5, -9.81, 1.0))
    arm = mech.add_body(RigidBody("arm", 1.5, Inertia.principal(0.02, 0.05, 0.04)))
    head = mech.add_body(RigidBody("head", 2.0, Inertia.principal(0.01, 0.02, 0.03)))
    mech.add_joint(RevoluteJoint("J0", mech.ground, arm, axis=(0.1, 0.3, 1.0),
                                 child_point=(-0.3, 0.0, 0.05)))
    mech.add_joint(Cartesian("G", arm, head, parent_point=(0.2, 0.05, 0.0),
                             child_point=(0.0, 0.05, 0.0), rest_rotation=[0.2, -0.1, 0.3],
                             spring={"x": 200.0, "y": 800.0, "z": 450.0},
                             damper={"x": 0.5, "z": 1.5}))
    return mech

mm = mechanism().assemble()
fd = FastDynamics(mm)
rng = np.random.default_rng(4)
err = 0.0
for _ in range(5):
    q, qd, tau = (rng.uniform(-1.0, 1.0, 4) for _ in range(3))
    named = [{"J0": a[0], "G": a[1:]} for a in (q, qd, tau)]
    ref = direct_dynamics(mm, *named, method="bond_graph")
    qdd = fd.direct_dynamics(q, qd, tau)
    want = np.concatenate([[ref["J0"]], ref["G"]])
    err = max(err, float(np.abs(qdd - want).max() / max(1.0, np.abs(want).max())))
res = mm.simulate((0.0, 0.3), x0=mm.initial_state({"J0": 0.2, "G": [0.05, -0.02, 0.01]}),
                  t_eval=np.linspace(0.0, 0.3, 31))
scene = build_scene(res.motion())
plots = [{"unit": p["unit"], "series": [s["name"] for s in p["series"]]} for p in scene.plots]
print(json.dumps({"names": list(fd.velocity_names), "qdd_error": err, "plots": plots,
                  "marks": scene.marks}))
"""


def custom_joint_figures(contract="right"):
    p = subprocess.run([sys.executable, "-c", _CUSTOM_JOINT_CHECK,
                        os.path.join(ROOT, "examples", "custom_joint.py"), contract],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_custom_joint_runs_on_fast_dynamics_and_is_drawn_as_slides():
    """The example's joint, declared in its one file (axis_motions: three translations),
    on a swinging arm: FastDynamics (the compiled joint-space recursion) gives the bond
    graph model's qdd to 1e-10 relative to the largest (|qdd| up to 1e3 here; both exact
    to rounding, seen 1e-13; a wrong axis, sign or term moves it by orders more), and the 3D page plots its coordinates as
    displacements (m), the arm's angle apart (rad). A deliberately wrong contract (x
    and y swapped) is caught: its qdd differ from the bond graph model's by more than
    1e-3 relative (seen 5e3 m/s^2 absolute)."""
    got = custom_joint_figures()
    assert got["names"] == ["J0", "G.x", "G.y", "G.z"]
    assert got["qdd_error"] <= 1e-10, got["qdd_error"]
    assert got["plots"] == [{"unit": "rad", "series": ["J0.q"]},
                            {"unit": "m", "series": ["G.x.q", "G.y.q", "G.z.q"]}]
    assert got["marks"] == {"J0": "revolute"}
    assert custom_joint_figures("wrong")["qdd_error"] > 1e-3


def test_lqr_cart_pole_keeps_the_pole_up(tmp_path):
    """The LQR designed on the linear model holds the nonlinear cart-pole: from 0.2 rad
    the pole never leans further, is back within 1e-3 rad after 6 s with the cart near
    the origin, and the linear model's unstable root equals its closed form (the
    example's own cross-checks); it writes the linear model and its plots."""
    p = run("lqr_cart_pole.py", "--out", str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cross-checks: PASSED" in p.stdout
    import re
    m = re.search(r"max \|theta\| ([\d.e+-]+) rad, \|theta\| at 6 s ([\d.e+-]+) rad, "
                  r"cart at ([\d.e+-]+) m", p.stdout)
    assert m, p.stdout
    top, end, cart = (float(v) for v in m.groups())
    assert top <= 0.2 + 1e-9 and end < 1e-3 and abs(cart) < 1e-2
    for name in ["cart_pole_A.csv", "cart_pole.mat", "cart_pole.json", "lqr_run.png",
                 "bode_force_to_angle.png", "step_force_to_angle.png"]:
        assert (tmp_path / name).is_file(), name
    header = (tmp_path / "cart_pole_A.csv").read_text().splitlines()[0]
    assert header == ",slide.q,hinge.q,slide.qd,hinge.qd"


def test_electromechanical_arm_reaches_its_set_points_and_balances_energy(tmp_path):
    """Three DC motors (components) drive a 3-DOF arm through gearboxes under PD control
    with gravity compensation. After 2 s every joint is within 1e-3 rad of its set-point
    (the closed loop's slowest time constant is about 0.25 s, and the gravity feed-forward
    leaves no steady error: the run shows 1e-4 rad). The energy ledger (battery work =
    links' kinetic and gravity energy + inductances and rotors + armature and friction
    losses) closes to 1e-8 of the batteries' work: the run is integrated at rtol = atol =
    1e-10 and the ledger's terms are states of the same integration. Each motor current
    equals the torque its gearbox puts on the joint over k n (the gyrator and the
    transformer are exact: a round-off difference)."""
    out = tmp_path / "arm"
    p = run("electromechanical_arm.py", "--out", str(out), "--t-end", "2.0", "--points",
            "201")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((out / "summary_arm.json").read_text())
    assert max(abs(e) for e in summary["set_point_errors"].values()) < 1e-3
    assert summary["battery_work"] > 1.0                  # the motors did real work
    assert summary["energy_drift"] < 1e-8 * summary["battery_work"]
    with open(out / "currents.csv") as f:
        header = next(csv.reader(f))
    amps = np.loadtxt(out / "currents.csv", delimiter=",", skiprows=1)
    assert header == ["t", "J1.current", "J2.current", "J3.current"]
    assert np.abs(amps[:, 1:]).max() > 1.0
    assert summary["current_torque_difference"] < 1e-9 * np.abs(amps[:, 1:]).max()
    page = (out / "arm.html").read_text()
    assert '"name":"J2.current"' in page and '"name":"J3.q"' in page
