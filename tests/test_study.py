"""Parameter studies (elements.study, bondgraph sweep): runs on a Dask cluster equal runs
done alone, killed studies resume without repeating runs, failed runs are rows, bad study
files are one-line errors."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from bondgraph import ModelError
from bondgraph_cli import main
from elements import PointForce, models
from elements.study import (
    Choice, Grid, LogNormal, MonteCarlo, Normal, Output, ParametricModel, Study,
    StudyFileError, Uniform, load_study, plot_study, read_results,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "three_body_sweep.toml")
MODEL = os.path.join(ROOT, "examples", "three_body_prismatic.toml")

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    """A real local Dask cluster: 2 worker processes, one thread each."""
    import logging
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as c:
        yield c


def close(a, b, rtol=1e-12):
    return abs(a - b) <= rtol * max(1.0, abs(b))


# -- the 8 x 8 sweep of the example file on the cluster vs runs done alone ---------------

def test_sweep_on_a_dask_cluster_equals_each_run_done_alone(cluster, tmp_path):
    study = load_study(EXAMPLE)
    assert study.parameters.names == ["J3.spring.k", "J1.actuator"]
    assert len(study.runs()) == 64 and study.notes == []
    with distributed.Client(cluster) as client:
        res = study.run(tmp_path / "km", executor=client)
    assert len(res) == 64 and res.n_ok == 64 and res.new_runs == 64
    # both worker processes took runs, and none ran here
    workers = Counter(r["worker"] for r in res.rows)
    assert set(workers) == set(cluster.scheduler_info["workers"]) and len(workers) == 2
    assert all(n >= 8 for n in workers.values())
    # every row against the same run, built from scratch and simulated in this process
    s = study.model.solver
    assert (s.t_end, s.points, s.rtol) == (0.2, 21, 1e-8)
    checked = 0
    for row in res.rows:
        K, M = row["J3.spring.k"], row["J1.actuator"]
        mm = models.three_body_prismatic(M=M, K=K).assemble()     # a fresh build
        alone = mm.simulate((s.t_start, s.t_end), {}, {}, t_eval=s.t_eval, method=s.method,
                            rtol=s.rtol, atol=s.atol, stabilization=s.stabilization)
        b, j, e = alone.columns()
        cols = {**b, **j, **e}
        for out in study.outputs:
            expected = out.evaluate(alone, cols)
            assert close(row[out.name], expected), (row, out.name, expected)
            checked += 1
    assert checked == 64 * 4
    # the values differ from run to run: the parameters reached the model
    assert np.unique(np.round(res.column("J3_force_max"), 9)).size >= 8
    assert np.unique(np.round(res.column("m2_z_final"), 9)).size >= 8
    # the table on disk says the same, to the last digit
    again = read_results(tmp_path / "km")
    assert [r["J3_force_max"] for r in again.rows] == list(res.column("J3_force_max"))
    # the plots of the study file
    assert (tmp_path / "km" / "m2_z_final.png").stat().st_size > 5000
    assert (tmp_path / "km" / "J3_force_max.png").stat().st_size > 5000


def test_an_existing_scheduler_by_address(cluster, tmp_path):
    study = Study(MODEL, Grid({"J2.q0": [0.1, 0.2], "m1.mass": [1.0, 2.0]}),
                  [Output("J2_q_end", "J2.q", "final")], solver={"t_end": 0.05, "points": 3})
    res = study.run(tmp_path / "addr", executor=cluster.scheduler_address)
    assert res.n_ok == 4 and all(r["worker"].startswith("tcp://") for r in res.rows)
    # the cluster is still there: the study closes only what it started
    assert len(cluster.scheduler_info["workers"]) == 2


# -- built once, values changed by name ---------------------------------------------------

def _spec_with_a_load():
    spec = models.three_body_spec(t_end=0.1, points=11)
    m2 = spec.mechanism.bodies["m2"]
    spec.mechanism.add_load(PointForce("push", m2, (0.0, 0.0, 0.0), [0.2, 0.0, 0.0]))
    return spec


def test_changed_values_equal_a_fresh_build_for_every_kind_of_parameter(monkeypatch):
    pm = ParametricModel(_spec_with_a_load(), solver={"rtol": 1e-9, "atol": 1e-9})
    values = {"m2.mass": 1.7, "m1.Ixx": 5e-4, "gravity.z": -9.0, "gravity.x": 0.5,
              "J3.spring.k": 900.0, "J3.spring.rest": 0.02, "J1.actuator": 0.3,
              "J2.damper.c": 0.002, "push.x": 0.7, "push.z": -0.1, "J2.q0": 0.3,
              "J1.qd0": 0.8}
    notes = pm.prepare(values)
    assert len(notes) == 1 and "J2.damper" in notes[0] and "rebuilt once" in notes[0]
    base = pm.simulate({})                    # builds the template (with J2's damper)
    from elements.mechanism import Mechanism
    builds = []
    real_build = Mechanism.build_indexed
    monkeypatch.setattr(Mechanism, "build_indexed", lambda self, *a, **k: builds.append(1)
                        or real_build(self, *a, **k))
    changed = pm.simulate(values)
    assert builds == []                       # no graph was built for the run
    fresh = pm.simulate(values, fresh=True)
    assert builds == [1]
    assert changed.success and fresh.success
    assert np.abs(changed.raw.x - fresh.raw.x).max() <= 1e-12
    assert np.abs(changed.joint("J3").force - fresh.joint("J3").force).max() <= 1e-12
    assert changed.energy.relative_drift < 1e-6
    # a study's runs reuse one working copy per thread: reset between runs, so nothing
    # leaks from one run into the next (not even from a run whose value was refused)
    seq = [values, {"J3.spring.k": 300.0, "gravity.x": 1.0}, {"m2.mass": 0.0}, {}, values]
    xs = []
    for v in seq:
        try:
            xs.append(pm.simulate(v, reuse=True).raw.x.copy())
        except ModelError as exc:
            assert "m2.mass" in str(exc)
            xs.append(None)
    assert xs[2] is None and builds == [1]
    assert np.abs(xs[0] - fresh.raw.x).max() <= 1e-12
    assert np.abs(xs[4] - fresh.raw.x).max() <= 1e-12
    assert np.abs(xs[3] - base.raw.x).max() <= 1e-12
    other = pm.simulate(seq[1], fresh=True)
    assert np.abs(xs[1] - other.raw.x).max() <= 1e-12
    # the values arrived: a different motion, the template untouched
    assert np.abs(changed.raw.x - base.raw.x).max() > 1e-3
    spec, mm = pm._template({})
    assert mm.mechanism.bodies["m2"].mass == 1.0
    assert mm.parameters["J3.spring.k"] == 500.0       # (the values are the model's data)
    assert mm.parameters["J2.damper.c"] == 0.0


def test_the_built_model_travels_by_cloudpickle_not_by_pickle():
    import pickle
    import cloudpickle
    pm = ParametricModel(MODEL, solver={"t_end": 0.05, "points": 6})
    pm.prepare(["J3.spring.k"])
    here = pm.simulate({"J3.spring.k": 650.0}, reuse=True)
    with pytest.raises(Exception):            # the moduli and constraints are closures
        pickle.dumps(pm)
    there = cloudpickle.loads(cloudpickle.dumps(pm))
    assert set(there._templates) == {((), ())}   # shipped built, not rebuilt
    again = there.simulate({"J3.spring.k": 650.0}, reuse=True)
    assert np.array_equal(here.raw.x, again.raw.x)


def test_factory_arguments_rebuild_per_value_and_say_so():
    fast = {"t_end": 0.05, "points": 3, "rtol": 1e-9, "atol": 1e-9}
    pm = ParametricModel(models.three_body_prismatic, solver=fast)
    notes = pm.prepare(["K", "J1.actuator"])
    assert any(n.startswith("K: an argument of the factory") for n in notes)
    by_factory = pm.simulate({"K": 300.0, "J1.actuator": 0.2})
    default = pm.simulate({"J1.actuator": 0.2})                     # K = 500
    assert by_factory.success and default.success
    assert np.abs(by_factory.raw.x - default.raw.x).max() > 1e-6     # K changed the run
    pm2 = ParametricModel(models.three_body_spec, solver=fast)
    pm2.prepare(["J3.spring.k", "J1.actuator"])
    same = pm2.simulate({"J3.spring.k": 300.0, "J1.actuator": 0.2})
    assert np.abs(by_factory.raw.x - same.raw.x).max() <= 1e-12
    assert {k[0] for k in pm._templates} == {(), (("K", 300.0),)}   # one build per K


# -- failures are rows ----------------------------------------------------------------------

RAMP = "actuator = { type = \"ramp\", slope = 1e305, start = 0.04 }"


def test_failed_runs_are_rows_with_their_error_and_the_others_complete(tmp_path, capsys):
    study = Study(MODEL, Grid({"m2.mass": [1.0, 0.0], "J1.actuator": [0.1, 1e305]}),
                  [Output("z", "m2.z", "final"), Output.of("drift", "energy_drift")],
                  solver={"t_end": 0.05, "points": 6})
    res = study.run(tmp_path / "f", executor="inprocess")
    by = {(r["m2.mass"], r["J1.actuator"]): r for r in res.rows}
    ok = by[(1.0, 0.1)]
    assert ok["status"] == "ok" and np.isfinite(ok["z"]) and ok["message"] == ""
    for M in (0.1, 1e305):
        bad = by[(0.0, M)]
        assert bad["status"] == "error" and np.isnan(bad["z"])
        assert "m2.mass" in bad["message"] and "positive" in bad["message"]
    huge = by[(1.0, 1e305)]                # (a constant beyond 1e100: bad input)
    assert huge["status"] == "error" and "beyond 1e+100" in huge["message"]
    assert "J1.actuator" in huge["message"]
    assert res.status_counts == {"ok": 1, "error": 3}
    # a simulation that stops part-way (a ramp that overflows at 0.04 s): status failed,
    # and the command line says so with exit status 1
    text = open(MODEL).read().replace("actuator = 0.1", RAMP)
    (tmp_path / "ramp.toml").write_text(text)
    (tmp_path / "s.toml").write_text(f"""
[study]
model = "ramp.toml"
[solver]
t_end = 0.08
points = 9
[parameters]
"J3.spring.k" = {{ values = [400.0] }}
[[output]]
name = "z"
columns = ["m2.z"]
[executor]
type = "inprocess"
""")
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "1 of 1 runs did not succeed" in err and "NON_FINITE" in err
    [row] = read_results(tmp_path / "r").rows
    assert row["status"] == "failed" and np.isnan(row["z"])
    assert row["message"].startswith("NON_FINITE at t = 0.04 s: non-finite")


# -- interrupted studies resume, each run done once ------------------------------------------

def _ids(path):
    with open(path, newline="") as f:
        return [r["run_id"] for r in csv.DictReader(f)]


def test_a_killed_sweep_resumes_without_repeating_runs(tmp_path):
    (tmp_path / "kill.toml").write_text(f"""
[study]
model = {MODEL!r}
[solver]
t_end = 0.02
points = 3
rtol = 1e-6
atol = 1e-6
[parameters]
"J3.spring.k" = {{ linspace = [300.0, 700.0, 6] }}
"J1.actuator" = {{ values = [0.05, 0.1, 0.15, 0.2, 0.25] }}
[[output]]
name = "z"
columns = ["m2.z"]
[executor]
type = "inprocess"
""")
    out = tmp_path / "k"
    results = out / "results.csv"
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "bondgraph_cli", "sweep",
                             str(tmp_path / "kill.toml"), "--out", str(out), "--quiet"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if results.exists() and len(_ids(results)) >= 4:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = _ids(results)
    assert proc.returncode == -signal.SIGKILL
    assert 4 <= len(before) < 30, "the study finished before it was killed"
    with open(results, "a") as f:             # as if killed in the middle of a row
        f.write("0123abcd,99,ok,300.0")
    first_rows = results.read_text().splitlines()[1:len(before) + 1]
    assert main(["sweep", str(tmp_path / "kill.toml"), "--out", str(out)]) == 2   # no flag
    assert main(["sweep", str(tmp_path / "kill.toml"), "--out", str(out), "--resume",
                 "--quiet"]) == 0
    after = _ids(results)
    study = load_study(tmp_path / "kill.toml")
    planned = [r.run_id for r in study.runs()]
    assert Counter(after) == Counter(planned)            # every run exactly once
    assert after[:len(before)] == before                  # the first rows kept as written
    assert results.read_text().splitlines()[1:len(before) + 1] == first_rows
    assert "0123abcd" not in results.read_text()


def test_an_interrupted_study_keeps_its_rows_and_resumes(tmp_path):
    study = Study(MODEL, Grid({"J3.spring.k": [300.0, 400.0, 500.0, 600.0, 700.0]}),
                  [Output("z", "m2.z", "final")], solver={"t_end": 0.02, "points": 3})
    seen = []

    def stop_after_two(row):
        seen.append(row["run_id"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        study.run(tmp_path / "i", executor="inprocess", on_row=stop_after_two)
    assert _ids(tmp_path / "i" / "results.csv") == seen
    res = study.run(tmp_path / "i", executor="inprocess", resume=True)
    assert res.new_runs == 3 and len(res) == 5 and res.n_ok == 5
    assert Counter(_ids(tmp_path / "i" / "results.csv")) == Counter(
        r.run_id for r in study.runs())
    # another study into the same directory is refused
    other = Study(MODEL, Grid({"J3.spring.k": [300.0]}), [Output("x", "m2.x", "final")],
                  solver={"t_end": 0.02, "points": 3})
    with pytest.raises(Exception, match="different study"):
        other.run(tmp_path / "i", executor="inprocess", resume=True)


# -- Monte Carlo ------------------------------------------------------------------------------

def test_monte_carlo_plans_are_reproducible_and_extendable():
    dists = {"m2.mass": LogNormal(1.0, 0.1), "J3.spring.k": Uniform(400.0, 600.0),
             "J1.actuator": Normal(0.1, 0.01), "J2.q0": Choice((0.0, 0.1))}
    a = MonteCarlo(dists, samples=200, seed=7).runs()
    b = MonteCarlo(dists, samples=200, seed=7).runs()
    c = MonteCarlo(dists, samples=300, seed=7).runs()
    d = MonteCarlo(dists, samples=200, seed=8).runs()
    assert [r.run_id for r in a] == [r.run_id for r in b] == [r.run_id for r in c[:200]]
    assert len({r.run_id for r in c}) == 300
    assert not set(r.run_id for r in a) & set(r.run_id for r in d)
    k = np.array([r.values["J3.spring.k"] for r in c])
    m = np.array([r.values["m2.mass"] for r in c])
    assert k.min() >= 400.0 and k.max() <= 600.0 and abs(k.mean() - 500.0) < 15.0
    assert m.min() > 0 and abs(np.median(m) - 1.0) < 0.03
    assert set(r.values["J2.q0"] for r in c) == {0.0, 0.1}


def test_monte_carlo_study_file_and_plots(tmp_path):
    (tmp_path / "mc.toml").write_text(f"""
[study]
model = {MODEL!r}
samples = 6
seed = 3
[solver]
t_end = 0.02
points = 3
[parameters]
"m2.mass" = {{ distribution = "lognormal", median = 1.0, sigma = 0.2 }}
"J3.spring.k" = {{ distribution = "uniform", low = 400.0, high = 600.0 }}
[[output]]
name = "F"
columns = ["J3.Fx", "J3.Fy", "J3.Fz"]
reduce = "max"
[[output]]
name = "hist"
columns = ["m2.z"]
reduce = "history"
[executor]
type = "inprocess"
[[plot]]
file = "F.png"
output = "F"
x = "m2.mass"
y = "J3.spring.k"
""")
    assert main(["sweep", str(tmp_path / "mc.toml"), "--out", str(tmp_path / "mc"),
                 "--quiet"]) == 0
    res = read_results(tmp_path / "mc")
    assert res.n_ok == 6 and (tmp_path / "mc" / "F.png").exists()
    h = res.history(res.rows[0]["run_id"])
    assert h["t"].shape == (3,) and h["hist/m2.z"].shape == (3,)
    # F is the norm of the three components, its max over time
    assert np.all(res.column("F") > 0)
    plot_study(res, "F", "m2.mass", path=str(tmp_path / "line.png"))
    assert (tmp_path / "line.png").stat().st_size > 3000


def test_parquet_when_pyarrow_is_installed(tmp_path):
    pytest.importorskip("pyarrow")
    study = Study(MODEL, Grid({"J3.spring.k": [400.0, 500.0], "m2.mass": [1.0, 0.0]}),
                  [Output("z", "m2.z", "final"), Output("h", "m2.z", "history")],
                  solver={"t_end": 0.02, "points": 3})
    res = study.run(tmp_path / "p", executor="inprocess")
    import pyarrow.parquet as pq
    table = pq.read_table(tmp_path / "p" / "results.parquet").to_pydict()
    assert len(table["run_id"]) == 4 and table["J3.spring.k"] == [400.0, 400.0, 500.0, 500.0]
    assert table["status"] == [r["status"] for r in res.rows] == ["ok", "error"] * 2
    assert table["h"][0] == f"histories/{res.rows[0]['run_id']}.npz" and table["h"][1] is None


# -- bad study files: exit 2, one line naming the file, the table and the key ---------------

BASE = f"""
[study]
model = {MODEL!r}
[parameters]
"J3.spring.k" = {{ values = [400.0] }}
[[output]]
name = "z"
columns = ["m2.z"]
"""


@pytest.mark.parametrize("text, expected", [
    (BASE.replace('"J3.spring.k"', '"J9.spring.k"'), "[parameters] 'J9.spring.k': no such "
                                                     "parameter"),
    (BASE + "[extra]\n", "[top level] 'extra': unknown key"),
    (BASE.replace(f"model = {MODEL!r}", 'model = "nope.toml"'), "[study] 'model': no such "
                                                               "model file"),
    (BASE.replace('columns = ["m2.z"]', 'columns = ["m2.z"]\nreduce = "median"'),
     "[output 'z'] 'reduce': unknown value 'median'"),
    (BASE.replace("[[output]]", '"J1.actuator" = { distribution = "normal", mean = 0.1, '
                                'std = 0.01 }\n[[output]]'),
     "[parameters] 'J1.actuator': a study is either a grid"),
    (BASE + '[executor]\ntype = "cloud"\n', "[executor] 'type': unknown value 'cloud'"),
    (BASE.split("[[output]]")[0], "[output] 'output': missing"),
    (BASE + "[solver]\nt_end = -1.0\n", "[solver] 't_end': must be greater than t_start"),
    (BASE.replace("values = [400.0]", "linspace = [1.0, 2.0]"),
     "[parameters J3.spring.k] 'linspace': must be [start, stop, n]"),
    (BASE + '[[plot]]\nfile = "a.png"\noutput = "nope"\nx = "J3.spring.k"\n',
     "[plot]: plot a.png: no output 'nope'"),
    ("[study\n", "not valid TOML"),
])
def test_bad_study_files_exit_2_naming_file_table_and_key(tmp_path, capsys, text, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: ") and expected in err, err
    assert len(err.splitlines()) == 1
    with pytest.raises(StudyFileError):
        load_study(path)


def test_missing_study_file_and_occupied_directory(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "none.toml: no such study file" in capsys.readouterr().err


def test_studies_set_each_coordinate_of_a_joint_with_several():
    """A cylindrical joint's parameters are per coordinate (``C1.slide.spring.k``,
    ``C1.slide.q0``, the structural ``C1.angle.actuator``); a run that sets them simulates
    exactly like the model rebuilt from scratch with them (bitwise: the same model)."""
    from test_modelfile import SLEEVE
    from elements.files.modelfile import loads_model
    from elements.study import ParametricModel
    pm = ParametricModel(loads_model(SLEEVE, "sleeve.toml"))
    assert {"C1.slide.spring.k", "C1.angle.q0", "C1.slide.qd0", "C1.angle.damper.c",
            "C1.angle.actuator"} <= set(pm.parameters())
    values = {"C1.slide.spring.k": 400.0, "C1.slide.q0": 0.02, "C1.angle.actuator": 0.1}
    pm.prepare(list(values))
    mm, q0, qd0 = pm.instantiate(values)
    assert mm.parameters["C1.slide.spring.k"] == 400.0
    assert np.array_equal(q0["C1"], [0.2, 0.02]) and np.array_equal(qd0["C1"], [3.0, 0.0])
    a, b = pm.simulate(values), pm.simulate(values, fresh=True)
    assert np.array_equal(a.joint("C1").q, b.joint("C1").q)
    assert a.joint("C1").actuator[0, 0] == 0.1
