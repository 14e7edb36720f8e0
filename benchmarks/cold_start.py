"""Cold and warm start of the installed package: what a new user waits for.

Builds the wheel of a source tree (default: this checkout) with ``python -m build``,
installs it with its core dependencies into a fresh venv, and times whole processes
from a folder outside the checkout:

- ``core``: the README's core quick start (two masses, ``bondgraph`` only);
- ``three_body``: the README's three-body example (``elements``).

Each is run with a fresh, empty numba cache (``NUMBA_CACHE_DIR``: cold, the kernels are
compiled) and then twice more with that cache (warm; the faster is kept). The build,
first-simulation and import split of each process is printed by the scripts
themselves. Results: a table on stdout and ``benchmarks/results/cold_start.json``.

    python benchmarks/cold_start.py                  # this checkout
    python benchmarks/cold_start.py --source /tmp/old --label before
    python benchmarks/cold_start.py --venv /tmp/v    # reuse a venv with the wheel in it

The machine is shared and noisy: compare figures of one run (or of two runs made back
to back), never with a number from another day.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SCRIPTS = {
    "core": """
import time, sys
t0 = time.perf_counter()
from bondgraph import models, assign_causality, assemble, simulate
t1 = time.perf_counter()
model = assemble(assign_causality(models.two_masses_rigid(m1=1.0, m2=3.0, force=2.0)))
t2 = time.perf_counter()
r = simulate(model, (0.0, 1.0), {"p_m1": 0.0, "p_m2": 0.0})
t3 = time.perf_counter()
assert abs(r.constraint_force("Se*_coupling")[0][-1] - 1.5) < 1e-9
print(f"SPLIT import={t1 - t0:.3f} build={t2 - t1:.3f} simulate={t3 - t2:.3f}")
""",
    "three_body": """
import time, sys
import numpy as np
t0 = time.perf_counter()
from elements import models
t1 = time.perf_counter()
model = models.three_body_prismatic().assemble()
t2 = time.perf_counter()
result = model.simulate((0.0, 1.0), t_eval=np.linspace(0.0, 1.0, 11))
t3 = time.perf_counter()
assert result.success and result.energy.relative_drift < 1e-7
print(f"SPLIT import={t1 - t0:.3f} build={t2 - t1:.3f} simulate={t3 - t2:.3f}")
""",
}


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{p.stdout}\n{p.stderr}")
    return p


def install(source: Path, base: Path) -> Path:
    """Build ``source``'s wheel and install it into a fresh venv under ``base``."""
    src = base / "src"
    shutil.copytree(source, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "out", "build", "dist", "*.egg-info"))
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(base / "dist"),
          str(src)], timeout=900)
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    wheel = next((base / "dist").glob("*.whl"))
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
         timeout=900)
    return venv


def time_process(python: Path, script: Path, cache: Path, work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(NUMBA_CACHE_DIR=str(cache), OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    t0 = time.perf_counter()
    p = subprocess.run([str(python), str(script)], capture_output=True, text=True, env=env,
                       cwd=work, timeout=1800)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{script.name} failed:\n{p.stderr[-3000:]}")
    split = dict(kv.split("=") for kv in p.stdout.split("SPLIT ", 1)[1].split())
    return {"wall_s": round(wall, 3), **{k: float(v) for k, v in split.items()},
            "compile_notice": "compiling the numerical kernels" in p.stderr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", default=str(ROOT), help="the tree to build (default: here)")
    ap.add_argument("--venv", default=None, help="reuse this venv (the wheel installed)")
    ap.add_argument("--label", default="this checkout")
    ap.add_argument("--results", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        venv = Path(args.venv) if args.venv else install(Path(args.source), base)
        install_s = time.perf_counter() - t0
        work = base / "user"
        work.mkdir()
        rows = {}
        for name, code in SCRIPTS.items():
            script = work / f"{name}.py"
            script.write_text(code)
            cache = base / f"cache-{name}"
            cache.mkdir()
            cold = time_process(venv / "bin" / "python", script, cache, work)
            warm = min((time_process(venv / "bin" / "python", script, cache, work)
                        for _ in range(2)), key=lambda r: r["wall_s"])
            rows[name] = {"cold": cold, "warm": warm}
    print(f"cold and warm start ({args.label}; wheel installed in {install_s:.0f} s)")
    print(f"{'script':<12}{'':>6}{'wall s':>9}{'import':>9}{'build':>9}{'simulate':>10}"
          f"  notice")
    for name, r in rows.items():
        for kind in ("cold", "warm"):
            x = r[kind]
            print(f"{name:<12}{kind:>6}{x['wall_s']:>9.2f}{x['import']:>9.2f}"
                  f"{x['build']:>9.2f}{x['simulate']:>10.2f}  "
                  f"{'yes' if x['compile_notice'] else 'no'}")
    os.makedirs(args.results, exist_ok=True)
    out = Path(args.results) / "cold_start.json"
    data = json.loads(out.read_text()) if out.exists() else {}
    data[args.label] = {"command": " ".join(sys.argv), "rows": rows,
                        "cpu_count": os.cpu_count(),
                        "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    out.write_text(json.dumps(data, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
