"""What a run costs beside its evaluations: the fixed cost of ``simulate`` (a span so
short that it takes one step) and the cost of output points (1 s of the same run with
2, 101, 1001 and 10001 output times).

    OPENBLAS_NUM_THREADS=1 python benchmarks/run_overhead.py [--repeat 7]
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/path/to/other/tree python benchmarks/run_overhead.py

The model: Panda from example-robot-data as in the work-precision benchmark (its
``wp_models`` case: random joint angles and rates, seed 0) when that package is
installed, else the three-body example. DOP853 at rtol = atol = 1e-6 (the
work-precision runs' settings; the fixed cost is read with RK45 at 1e-2). Each figure is
the best of ``--repeat`` runs after two warm-up runs (ms of wall time), with the run's
evaluations (``nfev``). Run it from two trees one after the other and compare within a
run: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def model():
    import wp_models
    if wp_models.robots_dir() is not None:
        row = next(r for r in wp_models.ROBOTS if r[0] == "panda")
        case = wp_models.robot_case(*row, mujoco=False)
        return "panda", case.ours[0], case.ours[1]
    from elements import models
    mm = models.three_body_prismatic().assemble()
    return "three-body", mm, None


def best(fn, repeat: int) -> tuple[float, object]:
    fn()
    fn()
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    import bondgraph
    name, mm, x0 = model()
    print(f"{name}, bondgraph from {os.path.dirname(bondgraph.__file__)}")

    def run(span, n, method="DOP853", tol=1e-6):
        return lambda: mm.simulate((0.0, span), x0=x0, t_eval=np.linspace(0.0, span, n),
                                   method=method, rtol=tol, atol=tol)
    ms, res = best(run(1e-6, 2, "RK45", 1e-2), args.repeat)
    print(f"  fixed cost (a span of 1e-6 s, one step): {ms:8.2f} ms  nfev {res.raw.nfev}")
    for n in (2, 101, 1001, 10001):
        ms, res = best(run(1.0, n), args.repeat)
        print(f"  1 s, {n:5d} output times:              {ms:8.2f} ms  nfev {res.raw.nfev}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
