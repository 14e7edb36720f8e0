"""Reliability: singular mechanisms, solver failures that keep their work, event storms,
atomic files, and re-runs that never mix old and new results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bondgraph import (
    IntegrationWarning, ModelError, NameNotFoundError, Status, assemble, assign_causality,
    models, simulate,
)
from elements import (
    Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody,
)
from elements.analysis.dynamics import prescribed_motion

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
R_, L_ = 0.1, 0.3


def slider_crank():
    mech = Mechanism("slider_crank", gravity=(0, 0, 0))

    def rod(name, length):
        return mech.add_body(RigidBody(name, 0.3, Inertia.rod(0.3, length, axis=0, thin=1e-5)))

    crank, link = rod("crank", R_), rod("link", L_)
    slider = mech.add_body(RigidBody("slider", 0.5, Inertia.solid_cube(0.5, 0.05)))
    z = (0, 0, 1)
    mech.add_joint(RevoluteJoint("J1", mech.ground, crank, child_point=(-R_ / 2, 0, 0), axis=z))
    mech.add_joint(RevoluteJoint("J2", crank, link, parent_point=(R_ / 2, 0, 0),
                                 child_point=(-L_ / 2, 0, 0), axis=z))
    mech.add_joint(PrismaticJoint("J4", mech.ground, slider, axis=(1, 0, 0)))
    mech.add_joint(RevoluteJoint("J3", link, slider, parent_point=(L_ / 2, 0, 0), axis=z))
    return mech


def test_singular_configuration_mid_run_names_joints_and_time_and_keeps_results():
    """The slider is pushed at constant speed into the dead centre (crank and rod aligned,
    reached at t = 1 s): H_4 loses rank there."""
    mm = slider_crank().assemble()
    s0 = np.sqrt(L_ ** 2 - R_ ** 2)
    v = R_ + L_ - s0
    motion = {"J4": (lambda t: s0 + v * t, lambda t: v, lambda t: 0.0)}
    with pytest.warns(IntegrationWarning, match="singular configuration"):
        out = prescribed_motion(mm, motion, (0.0, 2.0), q0={"J1": np.pi / 2},
                                guess={"J2": -1.9}, t_eval=np.linspace(0, 2, 201))
    raw = out.result.raw
    assert raw.status is Status.SINGULAR and not raw.success
    assert 0.99 < raw.failure_time < 1.01
    assert "singular configuration" in raw.message and "Se*_J3" in raw.message
    # everything before the failure is kept, and it is right: the slider followed s(t)
    assert raw.t[-1] >= 0.99 and raw.t.size >= 100
    assert np.allclose(out.result.joint("J4").q, s0 + v * out.t, atol=1e-7)
    assert out.efforts["J4"].size == raw.t.size


def test_zero_length_axis_names_the_joint():
    mech = Mechanism("m", gravity=(0, 0, 0))
    b = mech.add_body(RigidBody("b", 1.0, Inertia.solid_cube(1.0, 0.1)))
    with pytest.raises(ModelError, match="joint 'Jz'.*no direction"):
        RevoluteJoint("Jz", mech.ground, b, axis=(0, 0, 0))


def test_lookups_raise_the_package_error():
    from elements import models as em
    mm = em.three_body_prismatic().assemble()
    with pytest.raises(NameNotFoundError, match="no joint 'J9'"):
        mm.mechanism.joint("J9")
    r = simulate(assemble(assign_causality(models.mass_spring_damper(1, 1, 1, 1))), (0, 0.1),
                 {"p_m": 0.0, "q_k": 0.0})
    with pytest.raises(KeyError):            # NameNotFoundError is also a KeyError
        r.state("nope")


def test_event_storm_stops_with_the_result_so_far():
    model = assemble(assign_causality(models.mass_spring_damper(1.0, 4.0, 0.0, 0.0)))

    def chatter(t, x):
        return np.sin(2000.0 * t)

    with pytest.warns(IntegrationWarning, match="event storm"):
        r = simulate(model, (0.0, 1.0), {"p_m": 0.0, "q_k": 0.1}, events=[chatter],
                     max_events=50, t_eval=np.linspace(0, 1, 101), max_step=2e-4)
    assert r.status is Status.EVENT_STORM and r.t.size > 0 and r.t[-1] < 1.0
    assert len(r.t_events[0]) > 50
    assert np.allclose(r.state("q_k"), 0.1 * np.cos(2 * r.t), atol=1e-6)


FAILING = """
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
points = 101
"""


def test_cli_failed_run_writes_partial_results_and_the_cause(tmp_path):
    model = tmp_path / "blowup.toml"
    model.write_text(FAILING)
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "run", str(model), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "simulation failed" in p.stderr and "Traceback" not in p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is False and summary["status"] in ("NON_FINITE", "STEP_FAILED")
    assert 0.49 <= summary["failure_time"] <= 0.51
    assert "non-finite" in summary["message"]
    rows = np.loadtxt(out / "bodies.csv", delimiter=",", skiprows=1)
    assert 40 < rows.shape[0] <= 61 and rows[-1, 0] <= summary["failure_time"]


def test_rerun_with_overwrite_removes_only_the_previous_runs_files(tmp_path):
    from elements import models as em
    from elements.running.runner import run
    out = tmp_path / "o"
    spec = em.three_body_spec(t_end=0.05, points=6)
    run(spec, str(out), quiet=True)
    (out / "fig6_m2_x.png").exists()
    (out / "notes.txt").write_text("mine")
    spec2 = em.three_body_spec(t_end=0.05, points=6)
    object.__setattr__(spec2.output, "plots", ())       # the second run makes no plots
    run(spec2, str(out), quiet=True)
    files = set(os.listdir(out))
    assert "notes.txt" in files                          # the user's file is kept
    assert "fig6_m2_x.png" not in files                  # the old run's plot is gone
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert "bodies.csv" in manifest and "fig6_m2_x.png" not in manifest


KILLER = r"""
import sys, numpy as np
sys.path.insert(0, {root!r})
from elements.results import _atomic_csv
cols = {{"t": np.arange(3_000_000, dtype=float), "x": np.ones(3_000_000)}}
print("writing", flush=True)
_atomic_csv({path!r}, cols)
print("done", flush=True)
"""


def test_an_interrupted_write_leaves_no_complete_looking_file(tmp_path):
    path = tmp_path / "bodies.csv"
    p = subprocess.Popen([sys.executable, "-c", KILLER.format(root=ROOT, path=str(path))],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    time.sleep(0.5)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not path.exists()                       # only the temporary file may remain
    # (its name is unpredictable: bodies.csv.<12 random hex digits>.tmp)
    assert [p.name for p in tmp_path.glob("bodies.csv.*.tmp")] == \
        [p.name for p in tmp_path.iterdir()]


# -- the energy drift of a model at rest (reliability issue, item 14) ---------------------

def test_the_energy_drift_of_a_model_at_rest_is_not_round_off_over_round_off():
    """Relative to the energies, a model at rest (every energy at round-off, 1e-30 J)
    showed "energy drift = 1.00e+00"; the scale is now the largest energy seen or a
    floor of 1 nJ, and the result says which."""
    from elements import EnergyLedger
    from elements.energy_ledger import ENERGY_FLOOR
    z = np.zeros(4)
    rest = EnergyLedger(kinetic=np.array([0.0, 1e-30, 3e-31, 2e-30]), gravity=z.copy(),
                        springs=z.copy(), work={}, dissipated={})
    assert rest.drift == 2e-30
    assert rest.drift_scale == (ENERGY_FLOOR, "the floor 1e-09 J (the energies stay "
                                              "below it)")
    assert rest.relative_drift == pytest.approx(2e-30 / 1e-9, rel=1e-12)   # (was 1.0)
    # with energy, the scale is the largest energy seen, the subsystems' included
    moving = EnergyLedger(kinetic=np.array([0.0, 1.0, 2.0, 3.0]),
                          gravity=np.array([0.0, -1.0, -2.0, -3.0 + 1e-12]),
                          springs=z.copy(), work={}, dissipated={},
                          other={"motor.L": np.array([4.0, 4.0, 4.0, 4.0])})
    assert moving.drift_scale == (4.0, "the largest energy")
    assert moving.relative_drift == pytest.approx(1e-12 / 4.0, rel=1e-3)


def test_a_run_says_what_its_energy_drift_is_relative_to(tmp_path):
    from elements import models as em
    from elements.running.runner import run
    res, _ = run(em.three_body_spec(t_end=0.05, points=6), str(tmp_path), quiet=True)
    scale, what = res.energy.drift_scale
    assert what == "the largest energy" and scale == max(
        np.abs(res.energy.kinetic).max(), np.abs(res.energy.gravity).max(),
        np.abs(res.energy.springs).max())
    assert f"of {scale:.3g} J, the largest energy)" in repr(res)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["energy_balance_drift_scale"] == {"value": scale,
                                                     "is": "the largest energy"}
