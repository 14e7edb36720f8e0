"""Stiff solvers by name (issue 20, item 4): explicit against implicit methods on a stiff
DC motor and on the (non-stiff) three-body mechanism; evaluations, time and error, with
ratios measured in one run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/stiff.py [--repeat 3] [--skip-rk45]

- DC motor (``bondgraph.models.dc_motor``): V = 10 V, Ra = 1 ohm, La = 1e-5 H,
  k = 0.1 N m/A, J = 0.01 kg m^2, b = 1e-3 N m s; 0-2 s from rest, rtol = 1e-8,
  atol = 1e-10 (``simulate``'s defaults). Error: the largest difference from the closed
  form x(t) = A^-1 (e^(A t) - I) b on 201 points, relative to each state's largest
  magnitude.
- Three-body mechanism (``elements.models.three_body_prismatic``): 0-5 s from rest,
  rtol = atol = 1e-10, Baumgarte (10/s, 10/s), 501 points. Error: the largest state
  difference from DOP853 at rtol = atol = 1e-12, relative to each state's largest
  magnitude (at least 1).

Evaluations are every right-hand side evaluation of the run, those of finite-difference
Jacobians included (``result.diagnostics["rhs_evaluations"]``); times are the best of
``--repeat`` runs after one warm-up run (compilation). Ratios are to RK45 (motor) and to
DOP853 (mechanism) in the same run of this script.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import scipy.linalg as sla

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MOTOR = dict(voltage=10.0, resistance=1.0, inductance=1e-5, torque_constant=0.1,
             inertia=0.01, friction=0.001)


def motor_exact(t: np.ndarray) -> np.ndarray:
    """(p_La, p_J) of the motor at times ``t`` from rest, in closed form."""
    R, L, k, J, b, V = (MOTOR[n] for n in ("resistance", "inductance", "torque_constant",
                                           "inertia", "friction", "voltage"))
    A = np.array([[-R / L, -k / J], [k / L, -b / J]])
    u = np.array([V, 0.0])
    return np.array([np.linalg.solve(A, (sla.expm(A * ti) - np.eye(2)) @ u)
                     for ti in t]).T


def _timed(run, repeat: int):
    best, res = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = run()
        best = min(best, time.perf_counter() - t0)
    return res, best


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="runs per method, best reported")
    p.add_argument("--skip-rk45", action="store_true",
                   help="skip the motor's RK45 run (about 15 s per repeat)")
    args = p.parse_args(argv)
    from bondgraph import assemble, assign_causality, models, simulate
    from elements import models as mechanisms

    print("DC motor, 0-2 s, rtol = 1e-8, atol = 1e-10")
    motor = assemble(assign_causality(models.dc_motor(**MOTOR)))
    grid = np.linspace(0.0, 2.0, 201)
    exact = motor_exact(grid)
    scale = np.abs(exact).max(axis=1, keepdims=True)
    rows = {}
    methods = ["Radau", "BDF", "LSODA"] + ([] if args.skip_rk45 else ["RK45"])
    for method in methods:
        def run(method=method):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return simulate(motor, (0.0, 2.0), np.zeros(2), t_eval=grid, method=method)
        run()
        res, best = _timed(run, 1 if method == "RK45" else args.repeat)
        err = float((np.abs(res.x - exact) / scale).max())
        rows[method] = (res.diagnostics["rhs_evaluations"], best)
        print(f"  {method:6s} {res.diagnostics['rhs_evaluations']:8d} evaluations "
              f"{res.n_steps:7d} steps {best:8.3f} s  error {err:.1e}  stiff flag "
              f"{res.diagnostics['stiff']}  Jacobian: {res.diagnostics['jacobian']}")
    if "RK45" in rows:
        n0, t0 = rows["RK45"]
        for method in ("Radau", "BDF", "LSODA"):
            n, t = rows[method]
            print(f"  RK45 / {method}: {n0 / n:.0f} x the evaluations, {t0 / t:.0f} x the "
                  f"time")

    print("three-body mechanism, 0-5 s, rtol = atol = 1e-10, Baumgarte (10/s, 10/s)")
    mm = mechanisms.three_body_prismatic().assemble()
    grid = np.linspace(0.0, 5.0, 501)
    ref = mm.simulate((0.0, 5.0), {}, {}, t_eval=grid, method="DOP853", rtol=1e-12,
                      atol=1e-12).raw.x
    scale = np.maximum(np.abs(ref).max(axis=1, keepdims=True), 1.0)
    rows = {}
    for method in ("DOP853", "Radau", "BDF"):
        def run(method=method):
            return mm.simulate((0.0, 5.0), {}, {}, t_eval=grid, method=method, rtol=1e-10,
                               atol=1e-10).raw
        run()
        res, best = _timed(run, args.repeat)
        d = res.diagnostics
        err = float((np.abs(res.x - ref) / scale).max())
        rows[method] = (d["rhs_evaluations"], best)
        print(f"  {method:6s} {d['rhs_evaluations']:8d} evaluations ({res.nfev} by the "
              f"steps, {d['rhs_evaluations'] - res.nfev} for {d['jacobian_evaluations']} "
              f"Jacobians) {res.n_steps:6d} steps {best:7.3f} s  error {err:.1e}")
    n0, t0 = rows["DOP853"]
    for method in ("Radau", "BDF"):
        n, t = rows[method]
        print(f"  {method} / DOP853: {n / n0:.1f} x the evaluations, {t / t0:.1f} x the "
              f"time")
    electromechanical_arm(args.repeat)


def electromechanical_arm(repeat: int) -> None:
    """The issue-20 showcase (examples/electromechanical_arm.py): 0-5 s, explicit and
    implicit methods, energy balance drift relative to the batteries' work."""
    import importlib.util
    path = os.path.join(ROOT, "examples", "electromechanical_arm.py")
    spec = importlib.util.spec_from_file_location("electromechanical_arm", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    mm = ex.arm().assemble()
    drive = {s: 0.0 for s in mm.model.state_names if s.endswith(".motor.La")}
    grid = np.linspace(0.0, 5.0, 251)
    print("electromechanical arm (3 joints, DC motors, gearboxes, PD), 0-5 s, "
          "rtol = atol = 1e-8")
    rows = {}
    for method in ("DOP853", "RK45", "Radau", "BDF"):
        def run(method=method):
            return mm.simulate((0.0, 5.0), t_eval=grid, method=method, rtol=1e-8,
                               atol=1e-8, states=drive)
        res, best = _timed(run, repeat)
        led = res.energy
        work = sum(v for k, v in led.work.items() if k.endswith(".battery.V"))
        drift = float(np.abs(led.balance - led.balance[0]).max() / np.abs(work).max())
        d = res.raw.diagnostics
        rows[method] = (d["rhs_evaluations"], best)
        print(f"  {method:6s} {d['rhs_evaluations']:8d} evaluations {res.raw.n_steps:6d} "
              f"steps {best:7.3f} s  balance drift {drift:.1e} of the work  "
              f"{res.raw.status.name}")
    n0, t0 = rows["DOP853"]
    for method in ("RK45", "Radau", "BDF"):
        n, t = rows[method]
        print(f"  {method} / DOP853: {n / n0:.1f} x the evaluations, {t / t0:.1f} x the "
              f"time")


if __name__ == "__main__":
    main()
