"""Runs per second of a parameter study: in this process vs a local Dask cluster.

The three-body example (examples/three_body_prismatic.toml) swept over its spring K and
moment M on a grid of --runs runs of --t-end seconds each, with the solver settings of
the model file (DOP853, rtol = atol = 1e-10) unless --rtol is given. The same study runs
in this process and on a Dask LocalCluster of --workers processes (one thread each),
alternately, --repeat times; the cluster's start-up is timed apart. Every cluster row is
compared with the in-process row of the same run (they must agree to 1e-12).

    python benchmarks/study_bench.py [--runs 32] [--t-end 0.5] [--workers 2] [--repeat 3]

Not a test: pytest never collects benchmarks/. Prints a table; --json FILE also writes
the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from elements.study import Grid, Output, Study  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "examples", "three_body_prismatic.toml")


def make_study(runs: int, t_end: float, rtol: float | None) -> Study:
    nk = max(d for d in range(1, int(np.sqrt(runs)) + 1) if runs % d == 0)
    nm = runs // nk                                  # nk x nm = runs, as square as can be
    solver = {"t_end": t_end, "points": max(2, int(round(t_end / 0.01)) + 1)}
    if rtol is not None:
        solver.update(rtol=rtol, atol=rtol)
    grid = Grid({"J3.spring.k": np.linspace(200.0, 900.0, nk),
                 "J1.actuator": np.linspace(0.05, 0.4, nm)})
    return Study(MODEL, grid, [Output("J3_force_max", "J3.F", "max"),
                               Output("m2_z_final", "m2.z", "final"),
                               Output.of("energy_drift", "energy_drift")], solver=solver)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--t-end", type=float, default=0.5, help="simulated seconds per run")
    ap.add_argument("--rtol", type=float, default=None,
                    help="rtol = atol of every run (default: the model file's 1e-10)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3,
                    help="alternating repeats of both (the machine may be shared: the best "
                         "and the median are reported)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    import distributed

    study = make_study(args.runs, args.t_end, args.rtol)
    n = len(study.runs())
    tmp = tempfile.mkdtemp(prefix="study_bench_")
    t_in, t_dask = [], []
    try:
        t0 = time.perf_counter()
        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           silence_logs=logging.ERROR)
        client = distributed.Client(cluster)
        client.wait_for_workers(args.workers)
        t_start = time.perf_counter() - t0
        try:
            for k in range(args.repeat):          # alternate, so both see the same load
                t0 = time.perf_counter()
                inproc = study.run(os.path.join(tmp, f"inprocess{k}"), executor="inprocess")
                t_in.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                dask = study.run(os.path.join(tmp, f"cluster{k}"), executor=client)
                t_dask.append(time.perf_counter() - t0)
        finally:
            client.close()
            cluster.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    diff = max(abs(a - b) for name in ("J3_force_max", "m2_z_final")
               for a, b in zip(inproc.column(name), dask.column(name)))
    run_time = float(np.median(inproc.column("runtime_s")))
    s = study.model.solver
    print(f"study: {n} runs of the three-body example, 0-{s.t_end} s each, {s.method} "
          f"rtol = {s.rtol:g}; median run {run_time:.3f} s in-process; "
          f"{os.cpu_count()} cores; {args.repeat} alternating repeats")
    print(f"{'executor':30s} {'runs/s best':>11s} {'median':>8s} {'wall best (s)':>14s} "
          f"{'start-up':>9s}")
    for name, walls, start in (("in-process", t_in, "-"),
                               (f"LocalCluster, {args.workers} workers", t_dask,
                                f"{t_start:.1f} s")):
        print(f"{name:30s} {n / min(walls):11.2f} {n / float(np.median(walls)):8.2f} "
              f"{min(walls):14.2f} {start:>9s}")
    print(f"speed-up {min(t_in) / min(t_dask):.2f}x best, "
          f"{float(np.median(t_in)) / float(np.median(t_dask)):.2f}x median (start-up "
          f"excluded); every row the same to {diff:.1e} (ok: {inproc.n_ok} in-process, "
          f"{dask.n_ok} on the cluster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": n, "t_end": s.t_end, "rtol": s.rtol, "median_run_s": run_time,
                       "inprocess": {"wall_s": t_in, "runs_per_s_best": n / min(t_in)},
                       "cluster": {"workers": args.workers, "wall_s": t_dask,
                                   "runs_per_s_best": n / min(t_dask),
                                   "startup_s": t_start},
                       "max_difference": diff, "cores": os.cpu_count()}, f, indent=1)
    return 0 if diff <= 1e-12 and inproc.n_ok == dask.n_ok == n else 1


if __name__ == "__main__":
    sys.exit(main())
