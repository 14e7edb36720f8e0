"""The package as a user installs it: a wheel built from the checkout, in a fresh venv.

An editable install (what ``make test`` uses for everything else) reads the checkout and
hides a package or a data file that the wheel leaves out. Here the sdist and the wheel
are built with the standard tool (``python -m build``: the wheel is built from the
sdist, so a file missing from either fails), the wheel is installed with its core
dependencies only into a new venv, and everything below runs from a folder outside the
checkout with that venv's interpreter and ``bondgraph`` program:

- the imports come from the venv, with the distribution's version;
- the first process compiles the kernels and says so in one line; the next one loads
  them from the cache and says nothing; a read-only site-packages with no writable home
  still runs (where the test may mount one read-only);
- the README's Python blocks run;
- every CLI subcommand runs on the shipped examples and writes its files;
- a feature whose extra is missing ends with one line naming the extra (exit 2 in the
  CLI, :class:`bondgraph.MissingExtraError` in Python), never a traceback;
- then with the extras ``plot``, ``mjcf`` and ``control`` installed into the same venv,
  those routes work (an MJCF pendulum against its closed form, python-control's state
  space and DC gain against the motor's, a PNG figure).

The tests share one venv and run in file order (later ones install the extras).
Building needs PyPI (setuptools in the isolated build, the dependencies of the wheel);
where it cannot be reached the tests are skipped saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOTICE = "vector-bondgraph: compiling the numerical kernels"
OFFLINE = ("Could not find a version", "No matching distribution", "Failed to establish",
           "Temporary failure in name resolution", "Network is unreachable")


def _sources(dest: Path) -> None:
    """The checkout's files as git sees them (tracked, and new files not ignored), or
    the tree without build products where git is not there."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=ROOT, capture_output=True,
                                check=True, timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "out", "build", "dist", "*.egg-info"))
        return
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if any(s in text for s in OFFLINE):
            pytest.skip(f"{what}: PyPI cannot be reached from here ({text.strip()[-300:]})")
        raise AssertionError(f"{what} failed ({proc.returncode}):\n{text[-3000:]}")


class Installed:
    """The venv with the wheel, and a user's folder outside the checkout."""

    def __init__(self, base: Path):
        self.base = base
        self.venv = base / "venv"
        self.python = str(self.venv / "bin" / "python")
        self.program = str(self.venv / "bin" / "bondgraph")
        self.home = base / "home"
        self.work = base / "user"
        self.home.mkdir()
        self.work.mkdir()
        shutil.copytree(ROOT / "examples", self.work / "examples")
        self.wheel = next((base / "dist").glob("*.whl"))
        self.first: subprocess.CompletedProcess | None = None
        self.second: subprocess.CompletedProcess | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NUMBA_CACHE"))}
        env.update(HOME=str(self.home), MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1",
                   PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
        return env

    def run(self, *args: str, timeout: float = 900, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=self.work, env=self.env(), capture_output=True,
                              text=True, timeout=timeout, **kw)

    def cli(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return self.run(self.program, *args, timeout=timeout)

    def script(self, name: str, code: str) -> subprocess.CompletedProcess:
        path = self.work / name
        path.write_text(code, encoding="utf-8")
        return self.run(self.python, str(path))

    def pip(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(self.python, "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", *args)


def _readme_code() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [m.group(2) for m in FENCE.finditer(text) if m.group(1).lower() in ("python", "py")]
    assert blocks, "the README has Python blocks"
    return "\n".join(blocks)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    _sources(src)
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(base / "dist"),
                            str(src)], capture_output=True, text=True, timeout=900)
    _check(built, "python -m build (sdist, then the wheel from it)")
    made = subprocess.run([sys.executable, "-m", "venv", str(base / "venv")],
                          capture_output=True, text=True, timeout=300)
    _check(made, "python -m venv")
    inst = Installed(base)
    _check(inst.pip(str(inst.wheel)), "pip install <wheel> (core dependencies only)")
    # the first two processes of the installed package: the README's Python blocks
    code = _readme_code()
    inst.first = inst.script("readme_first.py", code)
    inst.second = inst.script("readme_second.py", code)
    return inst


def _packages(names) -> set[str]:
    return {os.path.dirname(n).replace("/", ".") for n in names
            if n.endswith("/__init__.py")}


def test_the_wheel_holds_every_package_and_data_file(installed):
    """Every package of the checkout (a folder with __init__.py under bondgraph,
    elements, bondgraph_cli) and every data file the code reads is in the wheel."""
    import zipfile
    with zipfile.ZipFile(installed.wheel) as z:
        names = z.namelist()
    ours = {str(p.relative_to(ROOT)) for top in ("bondgraph", "elements", "bondgraph_cli")
            for p in (ROOT / top).rglob("__init__.py")}
    missing = sorted(_packages(ours) - _packages(names))
    assert not missing, f"packages left out of the wheel: {missing}"
    # every other file of the packages (page parts, C sources, licences, py.typed)
    data = {str(p.relative_to(ROOT)) for top in ("bondgraph", "elements", "bondgraph_cli")
            for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix not in
            (".py", ".pyc", ".nbi", ".nbc") and "__pycache__" not in p.parts}
    assert "elements/drawing/_static/animation.js" in data and "bondgraph/py.typed" in data
    missing = sorted(data - set(names))
    assert not missing, f"data files left out of the wheel: {missing}"


def test_imports_come_from_the_venv(installed):
    p = installed.script("where.py", textwrap.dedent("""
        import importlib.metadata, json, bondgraph, bondgraph_cli, elements
        print(json.dumps({"files": [bondgraph.__file__, elements.__file__,
                                    bondgraph_cli.__file__],
                          "version": importlib.metadata.version("vector-bondgraph"),
                          "own": bondgraph.__version__}))
    """))
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    site = str(installed.venv / "lib")
    assert all(f.startswith(site) for f in info["files"]), info["files"]
    assert info["version"] == info["own"]
    v = installed.cli("--version")
    assert v.returncode == 0 and v.stdout.split() == ["bondgraph", info["version"]]


def test_the_readme_runs_and_a_first_compile_says_so_once(installed):
    """The README's blocks run in the installed package; the first process says in one
    line that it compiles the kernels, the second (loading them from the cache beside
    the installed package) says nothing of it."""
    first, second = installed.first, installed.second
    assert first.returncode == 0, first.stderr[-3000:]
    assert second.returncode == 0, second.stderr[-3000:]
    assert first.stderr.count(NOTICE) == 1, first.stderr
    assert NOTICE not in second.stderr, second.stderr
    assert first.stdout == second.stdout


def _unshare_works() -> bool:
    if not shutil.which("unshare") or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs root and unshare to mount the "
                    "venv's site-packages read-only")
def test_a_read_only_install_with_no_home_still_runs(installed, tmp_path):
    """site-packages mounted read-only and HOME a read-only folder: numba has no place
    for its cache, and without bondgraph._jit the kernels' import raised 'cannot cache
    function ... no locator available'. The package puts the cache in the temporary
    folder and says where; the compiled LU solves a system as numpy does."""
    site = next((installed.venv / "lib").glob("python3*/site-packages"))
    home = tmp_path / "rohome"
    home.mkdir()
    code = tmp_path / "ro.py"
    code.write_text(textwrap.dedent("""
        import numpy as np
        from bondgraph import fastlu
        fastlu.warm_up()                      # compiles the LU kernels into the cache
        from bondgraph._jit import cache_location
        print(cache_location())
    """))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    shell = (f"mount --bind {site} {site} && mount -o remount,bind,ro {site} && "
             f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
             f"HOME={home} TMPDIR={tmp} {installed.python} {code}")
    env = installed.env()
    p = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True, text=True,
                       timeout=600, cwd=installed.work, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().startswith(str(tmp)), p.stdout
    assert "read-only" in p.stderr and NOTICE in p.stderr


def _files(path: Path) -> set[str]:
    return set(os.listdir(path))


def test_every_cli_command_runs_on_the_shipped_examples(installed):
    i = installed
    p = i.cli("run", "examples/three_body_prismatic.toml", "--out", "r3")
    assert p.returncode == 0, p.stderr[-3000:]
    assert {"bodies.csv", "joints.csv", "energy.csv", "summary.json", "manifest.json",
            "mechanism.json", "units.json", "animation.html"} <= _files(i.work / "r3")
    assert 'vector-bondgraph[plot]' in p.stderr        # plots skipped, the extra named
    assert json.loads((i.work / "r3" / "summary.json").read_text())["success"] is True
    p = i.cli("run", "examples/dc_motor.toml", "--out", "rdc")
    assert p.returncode == 0, p.stderr[-3000:]
    assert {"states.csv", "bonds.csv", "summary.json"} <= _files(i.work / "rdc")
    p = i.cli("render", "examples/three_body_prismatic.toml", "--out", "three.svg")
    assert p.returncode == 0, p.stderr
    assert (i.work / "three.dot").is_file()
    for model in ("examples/three_body_prismatic.toml", "examples/dc_motor.toml"):
        p = i.cli("equations", model)
        assert p.returncode == 0 and "d" in p.stdout, p.stderr
    p = i.cli("check", "r3")
    assert p.returncode == 0, p.stdout + p.stderr
    p = i.cli("animate", "r3", "--out", "page.html")
    assert p.returncode == 0 and (i.work / "page.html").stat().st_size > 100_000, p.stderr
    p = i.cli("linearize", "examples/dc_motor.toml", "--out", "lin", "--inputs", "V")
    assert p.returncode == 0 and "linear_A.csv" in _files(i.work / "lin"), p.stderr
    p = i.cli("linearize", "examples/three_body_prismatic.toml", "--out", "lin3",
              "--equilibrium", "--at", "J3=-0.01", "--inputs", "J1", "--u0", "J1=0")
    assert p.returncode == 0 and "linear_A.csv" in _files(i.work / "lin3"), p.stderr
    p = i.cli("sweep", "examples/three_body_sweep.toml", "--out", "sweep", "--executor",
              "inprocess", "--quiet")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "results.csv" in _files(i.work / "sweep")


def _one_line_hint(p: subprocess.CompletedProcess, extra: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"vector-bondgraph[{extra}]" in lines[0], lines[0]


def test_a_missing_extra_names_it_in_one_line(installed):
    i = installed
    if not (i.work / "r3").is_dir():
        assert i.cli("run", "examples/three_body_prismatic.toml", "--out", "r3").returncode == 0
    _one_line_hint(i.cli("check", "r3", "--plot", "check.png"), "plot")
    _one_line_hint(i.cli("linearize", "examples/dc_motor.toml", "--out", "linp", "--inputs",
                         "V", "--outputs", "J.f", "--plots"), "plot")
    p = i.cli("animate", "r3", "--out", "v.html", "--video", "v.gif")
    assert p.returncode == 2 and "vector-bondgraph[plot]" in p.stderr, p.stderr
    _one_line_hint(i.cli("sweep", "examples/three_body_sweep.toml", "--out", "sweepd",
                         "--executor", "local"), "study")
    (i.work / "pendulum.xml").write_text(PENDULUM_XML)
    (i.work / "pendulum.toml").write_text(PENDULUM_TOML)
    _one_line_hint(i.cli("run", "pendulum.toml", "--out", "pend"), "mjcf")
    p = i.script("extras.py", textwrap.dedent("""
        from bondgraph import MissingExtraError, assemble, assign_causality, linearize
        from bondgraph import models, simulate
        m = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, 2.0)))
        r = simulate(m, (0.0, 0.1), {"p_m1": 0.0, "p_m2": 0.0})
        lin = linearize(m, {"p_m1": 0.0, "p_m2": 0.0})
        for call in (r.to_dataframe, lin.to_control, r.plot):
            try:
                call()
            except MissingExtraError as exc:
                print(str(exc))
    """))
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 3
    for line, extra in zip(lines, ("dataframe", "control", "plot")):
        assert f"vector-bondgraph[{extra}]" in line, line


PENDULUM_XML = """<mujoco model="pendulum">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="bob" pos="0 0 0">
      <joint name="hinge" type="hinge" axis="0 1 0" pos="0 0 0"/>
      <geom type="sphere" size="0.05" pos="0 0 -0.8" mass="2.0"/>
    </body>
  </worldbody>
</mujoco>
"""
PENDULUM_TOML = """[robot]
file = "pendulum.xml"
[initial]
q = { hinge = 0.01 }
[solver]
t_end = 1.0
points = 11
rtol = 1e-10
atol = 1e-12
"""


def test_the_extras_work_from_the_wheel(installed):
    """With the plot, mjcf and control extras: the MJCF pendulum (a sphere of 2 kg,
    radius 0.05 m, 0.8 m below the hinge) swings at the compound pendulum's small-angle
    frequency sqrt(m g L / (m L^2 + 2/5 m r^2)) (amplitude 0.01 rad: the nonlinear
    frequency shift q0^2/16 = 6e-6 moves the phase by < 1e-4 rad in 1 s); the motor's
    python-control state space has the linear model's A and the DC gain V -> w of the
    closed form k / (k^2 + Ra b); plots are PNG files."""
    i = installed
    _check(i.pip(f"{i.wheel}[plot,mjcf,control]"), "pip install <wheel>[plot,mjcf,control]")
    (i.work / "pendulum.xml").write_text(PENDULUM_XML)
    (i.work / "pendulum.toml").write_text(PENDULUM_TOML)
    p = i.cli("run", "pendulum.toml", "--out", "pend_ok")
    assert p.returncode == 0, p.stderr[-3000:]
    import csv
    with open(i.work / "pend_ok" / "joints.csv") as f:
        rows = list(csv.DictReader(f))
    t = np.array([float(r["t"]) for r in rows])
    q = np.array([float(r["hinge.q"]) for r in rows])
    m, g, L, r = 2.0, 9.81, 0.8, 0.05
    w = np.sqrt(m * g * L / (m * L * L + 0.4 * m * r * r))
    np.testing.assert_allclose(q, 0.01 * np.cos(w * t), rtol=0, atol=0.01 * 2e-4)
    p = i.script("control_check.py", textwrap.dedent("""
        import json
        import numpy as np
        from bondgraph import linearize, load_graph_file, assemble, assign_causality
        spec = load_graph_file("examples/dc_motor.toml")
        model = assemble(assign_causality(spec.graph))
        lin = linearize(model, {"p_La": 0.0, "p_J": 0.0}, inputs=["V"], outputs=["J.f"])
        ss = lin.to_control()
        print(json.dumps({"same_A": bool(np.allclose(ss.A, lin.A, rtol=1e-14)),
                          "dcgain": float(np.squeeze(ss.dcgain()))}))
    """))
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout)
    Ra, k, b = 1.2, 0.05, 1e-4
    assert got["same_A"] and got["dcgain"] == pytest.approx(k / (k * k + Ra * b), rel=1e-9)
    p = i.cli("check", "pend_ok", "--plot", "check.png")
    assert p.returncode == 0, p.stderr
    assert (i.work / "check.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
