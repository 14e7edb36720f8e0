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
from elements.files.modelfile import ModelFileError, load_model, loads_model

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


def _matrix_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0][1:], [r[0] for r in rows[1:]], np.array([[float(v) for v in r[1:]]
                                                           for r in rows[1:]])


def test_linearize_takes_a_bond_graph_file(tmp_path):
    """``bondgraph linearize examples/dc_motor.toml``: the motor's A, B, C, D against the
    hand-derived model (states p_La = La i, p_J = J w; inputs the supply V and the load
    effort; outputs the shaft speed J.f = w and p_La):
    A = [[-Ra/La, -k/J], [k/La, -b/J]], B = I, C = [[0, 1/J], [1, 0]], D = 0. The
    equilibrium under the file's inputs is the closed-form steady state."""
    Ra, La, k, J, b, V, tl = 1.2, 0.005, 0.05, 2e-4, 1e-4, 12.0, 0.01
    model = os.path.join(ROOT, "examples", "dc_motor.toml")
    out = tmp_path / "lin"
    p = cli("linearize", model, "--out", str(out), "--inputs", "V,load",
            "--outputs", "J.f,p_La")
    assert p.returncode == 0, p.stdout + p.stderr
    cols, rows, A = _matrix_csv(out / "linear_A.csv")
    assert cols == rows == ["p_La", "p_J"]
    # exact affine differences: rounding only (|A| ~ 250)
    np.testing.assert_allclose(A, [[-Ra / La, -k / J], [k / La, -b / J]], rtol=1e-12)
    cols, rows, B = _matrix_csv(out / "linear_B.csv")
    assert cols == ["V", "load"] and np.allclose(B, np.eye(2), rtol=0, atol=1e-12)
    cols, rows, C = _matrix_csv(out / "linear_C.csv")
    assert rows == ["J.f", "p_La"]
    np.testing.assert_allclose(C, [[0.0, 1.0 / J], [1.0, 0.0]], rtol=1e-12, atol=1e-12)
    assert np.allclose(_matrix_csv(out / "linear_D.csv")[2], 0.0, atol=1e-12)
    # the steady state: Ra i + k w = V, k i = b w + tl
    w = (k * V - Ra * tl) / (k * k + Ra * b)
    i = (b * w + tl) / k
    p = cli("linearize", model, "--out", str(tmp_path / "eq"), "--equilibrium")
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("equilibrium:"))
    got = dict(part.split(" = ") for part in line[len("equilibrium: "):].split(" (")[0]
               .split(", "))
    assert float(got["p_La"]) == pytest.approx(La * i, rel=1e-9)
    assert float(got["p_J"]) == pytest.approx(J * w, rel=1e-9)
    bad = cli("linearize", model, "--out", str(tmp_path / "bad"), "--at", "p_X=1")
    assert bad.returncode == 2 and "--at p_X" in bad.stderr and "p_La" in bad.stderr
    bad = cli("linearize", model, "--out", str(tmp_path / "bad"), "--modes-page")
    assert bad.returncode == 2 and "mechanisms" in bad.stderr


def test_equations_label_every_row_and_column():
    """``bondgraph equations`` of the three-body file: the counts agree with the model
    (components, states, U_1, U_2), every energy component has its equation line, and
    each matrix is printed with its row and column names (T_X: the energy components
    both ways; T_U2: U_2's components as columns)."""
    from bondgraph.bonds import component_names
    p = cli("equations", TOML)
    assert p.returncode == 0, p.stderr
    m = models.three_body_prismatic().assemble().model
    out = p.stdout
    assert out.splitlines()[0].startswith(
        f"model three_body_prismatic: {m.n_states} state components in "
        f"{len(m.state_names)} states: {m.n_energy} energy components")
    energy = component_names((m.graph.element(n).state_name, m.graph.element(n).dim)
                             for n in m.storage)
    u2 = component_names(zip(m.unknown_sources, m.u2_dims))
    assert len(energy) == m.n_energy and len(u2) == m.n_u2
    for name in energy:
        assert f"  d {name}/dt = " in out, name
    lines = out.splitlines()
    for block, cols in (("T_X", energy), ("T_U2", u2)):
        at = next(i for i, x in enumerate(lines) if x.startswith(f"{block} ("))
        assert lines[at + 1].split() == cols
        assert [x.split()[0] for x in lines[at + 2:at + 2 + len(energy)]] == energy
    # the spring couples m1's and m2's vertical momenta: K = 500 N/m in T_X
    assert "d p_m2.linear[2]/dt = -500 q_J3.spring" in out


def test_a_sweep_that_cannot_start_leaves_nothing_in_the_way(tmp_path, monkeypatch):
    """A Dask sweep where dask.distributed does not import ends with the hint naming the
    'study' extra (exit 2) and writes nothing; the retry in process into the same folder
    runs. A results.csv holding only its header (a study that ended before its first
    run) does not block a new study either."""
    study = os.path.join(ROOT, "examples", "three_body_sweep.toml")
    out = tmp_path / "sweep"
    blocker = tmp_path / "nodask"
    blocker.mkdir()
    (blocker / "distributed.py").write_text("raise ImportError('no dask here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(blocker), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "sweep", study, "--out",
                        str(out), "--executor", "local"], capture_output=True, text=True,
                       timeout=600, cwd=ROOT, env=env)
    assert p.returncode == 2, p.stderr
    assert 'vector-bondgraph[study]' in p.stderr and "inprocess" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not out.exists() or not os.listdir(out)
    out.mkdir(exist_ok=True)
    from elements.study import RESULTS
    (out / RESULTS).write_text("index,status\n")
    p = cli("sweep", study, "--out", str(out), "--executor", "inprocess", "--quiet")
    assert p.returncode in (0, 1), p.stderr
    with open(out / RESULTS) as f:
        assert len(f.read().strip().splitlines()) > 1


def test_quiet_says_nothing_on_a_first_run_either(tmp_path):
    """``bondgraph run --quiet`` on a machine with no compiled kernels yet (an empty
    numba cache) prints nothing, not even the line about compiling them (which a run
    without --quiet prints: tests/test_wheel.py); the kernels are compiled and cached
    all the same. (The DC motor's graph file: the core's kernels, about 8 s.)"""
    cache = tmp_path / "numba"
    env = {k: v for k, v in os.environ.items() if k != "BONDGRAPH_COMPILE_NOTICE"}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "bondgraph_cli", "run",
                          os.path.join(ROOT, "examples", "dc_motor.toml"), "--out",
                          str(tmp_path / "o"), "--quiet"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT, env=env)
    assert out.returncode == 0 and out.stderr == "" and out.stdout == "", out.stderr
    assert any(cache.rglob("*.nbi")), "nothing was compiled: the check saw no first run"
