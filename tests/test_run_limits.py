"""What a run may take and what it tells while it runs, from files and the command line:
the largest step and the budget ([solver] max_step, max_steps, max_wall_time in model
files and bond graph files), the output points' bound, the default tolerances of bond
graph files, failures of implicit methods ending in a status (exit 1, the results
written), progress on stderr, and the mechanism's simulate options as documented
parameters."""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest

from bondgraph import GraphSolver, Status, load_graph_file, models, save_graph
from bondgraph_cli import main

PENDULUM = '''
[model]
name = "pendulum"
gravity = [0.0, -9.81, 0.0]
[[body]]
name = "rod"
mass = 1.0
inertia = { principal = [0.02, 0.02, 0.02] }
[[joint]]
name = "J1"
type = "revolute"
parent = "ground"
child = "rod"
child_point = [0.0, 0.25, 0.0]
axis = [0.0, 0.0, 1.0]
[initial]
q = { J1 = 0.5 }
[solver]
t_end = 2.0
points = 21
'''

RC = '''
[bondgraph]
name = "rc"
[[element]]
name = "V"
kind = "Se"
effort = 5.0
[[element]]
name = "i"
kind = "1"
[[element]]
name = "R"
kind = "R"
resistance = 1e6
[[element]]
name = "cap"
kind = "C"
compliance = 1e-15
[[bond]]
tail = "V"
head = "i"
[[bond]]
tail = "i"
head = "R"
[[bond]]
tail = "i"
head = "cap"
[solver]
t_end = 1e-6
points = 11
'''

TANK = '''
[bondgraph]
name = "tank"
[[element]]
name = "p"
kind = "0"
[[element]]
name = "tank"
kind = "C"
compliance = 2e-3
[[element]]
name = "orifice"
kind = "R"
flow_law = { expr = "1e-4*sqrt(e)" }
[[bond]]
tail = "p"
head = "tank"
[[bond]]
tail = "p"
head = "orifice"
[initial]
q_tank = 0.05
[solver]
t_end = 600.0
points = 101
method = "Radau"
'''


def _run(tmp_path, text, *extra, name="model.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    return main(["run", str(path), "--out", str(out), "--no-animation", *extra]), out


def _summary(out):
    with open(out / "summary.json", encoding="utf-8") as f:
        return json.load(f)


def test_a_model_files_step_and_budget_reach_the_run(tmp_path, capsys):
    """max_step bounds the steps (2 s at 1e-3 s: at least 2000 of them); max_steps
    ends the run with STEP_LIMIT (exit 1, the files written up to it)."""
    code, out = _run(tmp_path, PENDULUM.replace("points = 21", "points = 21\nmax_step = 1e-3"),
                     "--quiet")
    assert code == 0 and _summary(out)["n_steps"] >= 2000
    code, out = _run(tmp_path, PENDULUM.replace("points = 21", "points = 21\nmax_steps = 20"),
                     "--quiet", "--overwrite")
    s = _summary(out)
    assert code == 1 and s["status"] == "STEP_LIMIT" and "max_steps = 20" in s["message"]
    rows = np.loadtxt(out / "joints.csv", delimiter=",", skiprows=1, ndmin=2)
    assert 1 <= rows.shape[0] < 21 and rows[-1, 0] <= s["failure_time"]
    assert "error: simulation failed" in capsys.readouterr().err


def test_a_model_files_wall_clock_budget_reaches_the_run(tmp_path):
    """10 000 s of the pendulum at a 1 ms step is ten million steps; 0.5 s of wall-clock
    time ends it with TIME_LIMIT and what it computed written."""
    text = PENDULUM.replace("t_end = 2.0", "t_end = 10000.0").replace(
        "points = 21", "points = 10001\nmax_step = 1e-3\nmax_wall_time = 0.5")
    code, out = _run(tmp_path, text, "--quiet")
    s = _summary(out)
    assert code == 1 and s["status"] == "TIME_LIMIT" and 0 < s["failure_time"] < 10000.0


@pytest.mark.parametrize("key, value, says", [
    ("max_steps", "0", "'max_steps': must be an integer >= 1"),
    ("max_steps", "1.5", "'max_steps': must be an integer"),
    ("max_step", "-1.0", "'max_step': must be positive"),
    ("max_wall_time", "\"1 s\"", "'max_wall_time': must be a number"),
])
def test_bad_limits_are_named(tmp_path, capsys, key, value, says):
    code, _ = _run(tmp_path, PENDULUM.replace("points = 21", f"points = 21\n{key} = {value}"),
                   "--quiet")
    err = capsys.readouterr().err
    assert code == 2 and "[solver]" in err and says in err, err


@pytest.mark.parametrize("text", [PENDULUM, RC])
def test_ten_million_points_are_refused_naming_the_bound(tmp_path, capsys, text):
    """points = 10 000 000 was accepted and spent minutes writing files; the bound is
    100 000 (bondgraph._files.MAX_POINTS), for model files and bond graph files."""
    code, _ = _run(tmp_path, text.replace("points = 21", "points = 10000000").replace(
        "points = 11", "points = 10000000"), "--quiet")
    err = capsys.readouterr().err
    assert code == 2 and "'points': must be an integer from 2 to 100000" in err, err


def test_a_bond_graph_files_default_tolerance_follows_the_states_scale(tmp_path):
    """The trial's femtofarad RC as a file without atol (DOP853, rtol 1e-9: the file
    defaults): the charge ends at C V = 5e-15 C (to 1e-6 of it; it swung by 2e-8 C at
    the old fixed atol = 1e-9) and never goes negative."""
    code, out = _run(tmp_path, RC, "--quiet")
    assert code == 0
    q = np.loadtxt(out / "states.csv", delimiter=",", skiprows=1)[:, 1]
    assert abs(q[-1] - 5e-15) < 1e-6 * 5e-15 and q.min() >= 0.0
    assert _summary(out)["below_atol"] == {}
    # an explicit atol above the charge's scale is reported in the summary
    code, out = _run(tmp_path, RC.replace("points = 11", "points = 11\natol = 1e-9"),
                     "--quiet", "--overwrite")
    assert "q_cap" in _summary(out)["below_atol"]


def test_run_settings_with_limits_round_trip(tmp_path):
    g = models.mass_spring_damper(1.5, 40.0, 0.3, 2.0)
    solver = GraphSolver(t_end=2.0, points=11, max_step=0.01, max_steps=500,
                         max_wall_time=30.0)
    spec = load_graph_file(save_graph(g, tmp_path / "m.toml", solver=solver))
    assert spec.solver == solver and spec.solver.atol is None


def test_an_implicit_method_on_a_nan_law_exits_1_with_its_results(tmp_path, capsys):
    """The orifice without Abs under Radau: scipy's ValueError made it exit 3 with
    nothing written; now exit 1, NON_FINITE naming the orifice, the states up to the
    draining time (200 s) written."""
    code, out = _run(tmp_path, TANK, "--quiet")
    err = capsys.readouterr().err
    assert code == 1 and "orifice" in err
    s = _summary(out)
    assert s["status"] == "NON_FINITE" and 199.0 < s["failure_time"] < 201.0
    rows = np.loadtxt(out / "states.csv", delimiter=",", skiprows=1)
    assert rows[-1, 0] <= s["failure_time"] and rows.shape[0] == 34      # t = 0 .. 198 s


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    """``bondgraph run`` shows progress by default: on a terminal a bar, in a log (here
    a captured stderr) plain lines; --quiet and --no-progress turn it off, --progress
    turns it on with --quiet. (The 2 s before anything shows and the 5 s between lines
    are set to 0 here, so that a short run shows its lines.)"""
    from bondgraph import _progress
    monkeypatch.setattr(_progress, "SHOW_AFTER", 0.0)
    monkeypatch.setattr(_progress, "LOG_EVERY", 0.0)
    code, _ = _run(tmp_path, PENDULUM)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("progress: t = ")]
    assert code == 0 and len(lines) >= 2 and "\r" not in err
    assert lines[-1].startswith("progress: t = 2 s of 2 s (100.0 %)")
    for extra in (["--quiet"], ["--no-progress"]):
        code, _ = _run(tmp_path, PENDULUM, *extra, "--overwrite")
        assert code == 0 and "progress:" not in capsys.readouterr().err
    code, _ = _run(tmp_path, PENDULUM, "--quiet", "--progress", "--overwrite")
    assert code == 0 and "progress: t = " in capsys.readouterr().err


def test_the_mechanism_simulate_options_are_documented_parameters():
    """events=, max_step= and the budget reached the solver through undocumented
    **kwargs; they are parameters of MechanismModel.simulate, each in its docstring,
    as in bondgraph.simulate."""
    from bondgraph import simulate
    from elements import MechanismModel
    for fn in (MechanismModel.simulate, simulate):
        params = inspect.signature(fn).parameters
        for name in ("events", "max_step", "max_steps", "max_wall_time", "progress",
                     "rtol", "atol", "t_eval", "method"):
            assert name in params, (fn.__qualname__, name)
            assert f"{name}" in fn.__doc__, (fn.__qualname__, name)


def test_a_mechanism_event_and_budget_act(tmp_path):
    """The options act through MechanismModel.simulate: a terminal event ends the run
    where the pendulum first passes the vertical; max_steps ends it with STEP_LIMIT."""
    from elements.files.modelfile import loads_model
    spec = loads_model(PENDULUM, "p.toml")
    mm = spec.mechanism.assemble()
    sl = mm.model.state_slices["J1.coord"]

    def vertical(t, x):
        return x[sl][0]
    vertical.terminal = True
    r = mm.simulate((0, 2.0), spec.q0, events=[vertical])
    assert r.raw.status is Status.EVENT and abs(r.joint("J1").q[-1]) < 1e-9
    r = mm.simulate((0, 2.0), spec.q0, max_steps=5)
    assert r.raw.status is Status.STEP_LIMIT
