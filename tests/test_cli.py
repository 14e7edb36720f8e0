"""The command line and model files: same results as Python, clean errors."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from elements import models
from elements.modelfile import ModelFileError, load_model, loads_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOML = os.path.join(ROOT, "examples", "three_body_prismatic.toml")


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "bondgraph_cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def _param(v):
    if callable(v):
        return "function"
    if hasattr(v, "depends_on"):             # a PositionConstraint: compare what it reads
        return ("position_constraint", tuple(v.depends_on))
    return repr(np.asarray(v).tolist())


def graph_signature(bg):
    els = [(n, el.kind, sorted((k, _param(v)) for k, v in el.parameters().items()))
           for n, el in bg.elements.items()]
    bonds = [(b.name, b.tail, b.head, b.tail_port, b.head_port, b.dim) for b in bg.bonds]
    return els, bonds, [k.name for k in bg.kinematic_states], [w.name for w in bg.work_states]


def test_file_and_python_build_identical_graphs():
    from_file = load_model(TOML).mechanism.build()
    from_python = models.three_body_prismatic().build()
    assert graph_signature(from_file) == graph_signature(from_python)
    # and the functions inside (moduli, constraints) behave identically
    from bondgraph import assemble, assign_causality
    mf = assemble(assign_causality(from_file))
    mp = assemble(assign_causality(from_python))
    x = np.random.default_rng(0).normal(size=mp.n_states)
    assert np.array_equal(mf.rhs(0.3, x), mp.rhs(0.3, x))
    spec_f, spec_p = load_model(TOML), models.three_body_spec()
    assert spec_f.solver == spec_p.solver
    assert spec_f.output == spec_p.output


def read_csv(path):
    with open(path) as f:
        head = next(csv.reader(f))
    return head, np.loadtxt(path, delimiter=",", skiprows=1)


def test_run_writes_the_same_files_and_numbers_as_the_python_example(tmp_path):
    a, b = tmp_path / "cli", tmp_path / "py"
    p = cli("run", TOML, "--out", str(a))
    assert p.returncode == 0, p.stderr
    q = subprocess.run([sys.executable, os.path.join(ROOT, "examples",
                                                     "three_body_prismatic.py"),
                        "--out", str(b)], capture_output=True, text=True, cwd=ROOT)
    assert q.returncode == 0, q.stdout + q.stderr
    assert sorted(os.listdir(a)) == sorted(os.listdir(b))
    for name in ("bodies.csv", "joints.csv", "energy.csv"):
        ha, da = read_csv(a / name)
        hb, db = read_csv(b / name)
        assert ha == hb
        assert np.abs(da - db).max() <= 1e-12 * max(1.0, np.abs(db).max())
    sa = json.loads((a / "summary.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    for key in ("max_abs_phi", "nfev", "energy_balance_relative_drift"):
        assert sa[key] == pytest.approx(sb[key], rel=1e-12, abs=1e-15)
    assert (a / "bond_graph.dot").read_text() == (b / "bond_graph.dot").read_text()


GOOD = open(TOML).read()


@pytest.mark.parametrize("edit, key", [
    (lambda s: s.replace('mass = 1.0\n', '', 1), "'mass'"),                       # missing key
    (lambda s: s.replace('mass = 1.0', 'mass = "heavy"', 1), "'mass'"),           # wrong type
    (lambda s: s.replace('type = "prismatic"', 'type = "helical"'), "'type'"),    # unknown joint
    (lambda s: s.replace('child = "m2"', 'child = "m3"'), "'child'"),             # missing body
    (lambda s: s.replace('stiffness = 500.0', 'stiffness = inf'), "'stiffness'"),  # non-finite
    (lambda s: s.replace('name = "m1"', 'name = "rotor"'), "'name'"),             # duplicate
    (lambda s: s.replace('axis = [0.0, 1.0, 0.0]', 'axis = [0.0, 1.0]'), "'axis'"),
    (lambda s: s + "\n[extra]\nx = 1\n", "'extra'"),
    (lambda s: s.replace('[model]', '[model'), "not valid TOML"),
])
def test_malformed_files_get_a_one_line_message_naming_the_key(tmp_path, edit, key):
    path = tmp_path / "bad.toml"
    path.write_text(edit(GOOD))
    commands = [["run", str(path), "--out", str(tmp_path / "o")]]
    if key == "'child'":       # every command reads files the same way: check them once
        commands += [["render", str(path)], ["equations", str(path)]]
    for command in commands:
        p = cli(*command)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
        assert key in lines[0] and "bad.toml" in lines[0] or "not valid TOML" in lines[0]


def test_signals_in_files():
    spec = loads_model('''
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
actuator = { type = "table", t = [0.0, 1.0, 2.0], value = [0.0, 2.0, 0.0] }
[[load]]
name = "wind"
type = "force"
body = "rod"
value = { type = "sine", amplitude = [1.0, 0.0, 0.0], frequency = 2.0 }
[solver]
t_end = 1.0
''', "inline.toml")
    act = spec.mechanism.joints["J1"].actuators[0].effort
    assert act.value(0.5) == pytest.approx(1.0) and act.rate(0.5) == pytest.approx(2.0)
    assert act.value(1.5) == pytest.approx(1.0) and act.rate(1.5) == pytest.approx(-2.0)
    wind = spec.mechanism.loads["wind"].value
    assert wind.value(0.125)[0] == pytest.approx(1.0)
    with pytest.raises(ModelFileError, match=r"inline.toml: \[joint 'J1'\] 'axis'"):
        loads_model(GOOD.replace("axis = [0.0, 0.0, 1.0]\nactuator", "actuator"), "inline.toml")


def test_help_and_check(tmp_path):
    for sub in ("run", "render", "equations", "check"):
        p = cli(sub, "--help")
        assert p.returncode == 0 and "usage: bondgraph" in p.stdout
    p = cli("check", str(tmp_path / "none"))
    assert p.returncode == 2 and "no such directory" in p.stderr
    p = cli("equations", TOML, "--latex")
    assert p.returncode == 0 and "\\begin{bmatrix}" in p.stdout and "Eq. (15)" in p.stdout


def test_run_refuses_to_mix_old_and_new_files(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "old.csv").write_text("stale")
    p = cli("run", TOML, "--out", str(out))
    assert p.returncode == 2 and "not empty" in p.stderr


def test_linearize_writes_the_named_matrices_and_reports_mistakes(tmp_path):
    """``bondgraph linearize`` of the three-body model file about its static
    equilibrium (the moment J1 as the input, held at 0): the spring mode sqrt(K / m2) in
    A, the names in the CSV headers, the MAT and JSON files; a mistake exits 2 naming
    the name at fault, and writes nothing."""
    model = os.path.join(ROOT, "examples", "three_body_prismatic.toml")
    out = tmp_path / "lin"
    p = cli("linearize", model, "--out", str(out), "--equilibrium", "--at", "J3=-0.01",
            "--inputs", "J1", "--u0", "J1=0", "--outputs", "m2.z,J3.Fz")
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(os.listdir(out)) == ["linear.json", "linear.mat", "linear_A.csv",
                                       "linear_B.csv", "linear_C.csv", "linear_D.csv",
                                       "linear_point.csv"]
    with open(out / "linear_A.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["", "J1.q", "J2.q", "J3.q", "J1.qd", "J2.qd", "J3.qd"]
    A = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    w = np.sort(np.abs(np.linalg.eigvals(A)))
    assert abs(w[-1] - np.sqrt(500.0)) < 1e-9 * np.sqrt(500.0)
    data = json.loads((out / "linear.json").read_text())
    assert data["outputs"] == ["m2.z", "J3.Fz"] and data["inputs"] == ["J1"]
    assert "2.236068e+01" in p.stdout                 # the modes are printed
    bad = cli("linearize", model, "--out", str(tmp_path / "bad"), "--outputs", "m2.w")
    assert bad.returncode == 2 and "no output 'm2.w'" in bad.stderr and "m2.wz" in bad.stderr
    assert not (tmp_path / "bad").exists()
    bad = cli("linearize", model, "--out", str(tmp_path / "bad"), "--equilibrium",
              "--inputs", "J1")                 # the moment 0.1 N m spins the rotor up
    assert bad.returncode == 2 and "no equilibrium found" in bad.stderr
