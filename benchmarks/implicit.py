"""Implicit methods and their Jacobian (issue 36, item 2): Radau against the explicit
DOP853 on the models of the issue's targets, with what one Jacobian costs.

    OPENBLAS_NUM_THREADS=1 python benchmarks/implicit.py [--repeat 2] [--skip-ant]

- Diode rectifier (``bondgraph.models.diode_rectifier``, the parameters of
  tests/validation/test_nonlinear_laws.py: 5 V at 100 rad/s, Is = 1e-9 A, Vt = 0.05 V,
  Rs = 10 ohm, C = 1e-4 F, load 100 ohm), 0-0.1 s from an empty capacitor, rtol = 1e-10
  (atol: ``simulate``'s default).
- Nonlinear chain (``tests/helpers/rich_graphs.py``'s ``nonlinear_chain``: 6 masses,
  hardening springs and cubic dampers, 11 states), 0-2 s, rtol = 1e-9.
- Electromechanical arm (``examples/electromechanical_arm.py``), 0-5 s, rtol = atol =
  1e-8, as in stiff.py.
- gymnasium's ant with contact (``benchmarks/contact.py``'s setup: the file's pose at
  rest, joint ranges as stops of 50 N m/rad), 0-1 s, rtol = 1e-4, atol = 1e-6
  (``--skip-ant`` leaves it out; it needs gymnasium and mujoco).

Each row: the wall time (best of ``--repeat`` after a warm-up run; the CPU time of this
process beside it, less sensitive to a loaded machine), the steps' evaluations
(``nfev``: scipy's count, without its Jacobians'), Jacobians formed, the evaluations one
Jacobian costs (``diagnostics["evaluations_per_jacobian"]``: the column groups of the
structural pattern, or every state), the achieved error (the largest state difference
from a tight DOP853 run, rtol 1e-13 (arm: 1e-12), relative to each state's largest
magnitude (the arm's: at least 1, as in stiff.py: its states at rest are zero); the
diode and the chain at their span's end, the arm on its output grid)
and the ratio of the time to DOP853's in the same run. The ant's run is a hybrid one (a
new segment at every stop's engagement): its Jacobian count is its last segment's, its
``nfev`` the whole run's. Run it from another checkout (``PYTHONPATH=/path/to/it``) to
compare versions: the ratios of one run are what to compare, the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, ROOT)


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _reference(run) -> np.ndarray:
    """The states of a tight run (at the row's output points)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run()
    return getattr(res, "raw", res).x


def _error(x: np.ndarray, ref: np.ndarray, floor: float) -> float:
    """The largest state difference from the reference, relative to each state's largest
    magnitude in it (at least ``floor``)."""
    scale = np.maximum(np.abs(ref).max(axis=1, keepdims=True), floor)
    return float((np.abs(x - ref) / scale).max())


def _row(label: str, run, repeat: int, base: float | None,
         ref: np.ndarray | None = None, floor: float = 1e-300) -> tuple[float, float]:
    """Time one run (best of ``repeat`` after a warm-up) and print its row: (seconds, the
    achieved error, NaN without a reference)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()                                        # warm-up (compilation, caches)
        best, cpu, res = np.inf, np.inf, None
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            res = run()
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
    raw = getattr(res, "raw", res)
    d = raw.diagnostics
    per = d.get("evaluations_per_jacobian", "-")
    ratio = f"{best / base:5.2f} x DOP853" if base else ""
    error = _error(raw.x, ref, floor) if ref is not None else float("nan")
    err = f"error {error:.1e} " if ref is not None else ""
    print(f"  {label:7s} {best:8.3f} s ({cpu:.3f} s CPU) {raw.nfev:8d} step evaluations "
          f"{d.get('jacobian_evaluations', 0):4d} Jacobians of {per!s:>4} evaluations "
          f"{err}{raw.status.name:8s} {ratio}", flush=True)
    what = d.get("jacobian", "")
    if what.startswith(("dense", "finite")):
        pattern = what.rsplit("; ", 1)[1].rstrip(")") if "; " in what else ""
        print(f"          Jacobian: {what.split(' (', 1)[0]}"
              f"{'; ' + pattern if pattern else ''}", flush=True)
    return best, error


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=2, help="timed runs per row, best shown")
    p.add_argument("--skip-ant", action="store_true", help="leave out gymnasium's ant")
    args = p.parse_args(argv)
    from bondgraph import assemble, assign_causality, models, simulate

    print("diode rectifier, 0-0.1 s, rtol = 1e-10")
    diode = assemble(assign_causality(models.diode_rectifier(5.0, 100.0, 1e-9, 0.05, 10.0,
                                                             1e-4, 100.0)))
    ends = [0.0, 0.1]                  # (the error at the end, against rtol 1e-13)
    ref = _reference(lambda: simulate(diode, (0.0, 0.1), {"q_cap": 0.0}, t_eval=ends,
                                      method="DOP853", rtol=1e-13, atol=1e-16))
    base = None
    for method in ("DOP853", "Radau"):
        (t, err) = _row(method, lambda m=method: simulate(diode, (0.0, 0.1), {"q_cap": 0.0},
                                                   t_eval=ends, method=m, rtol=1e-10),
                 args.repeat, base, ref)
        base = base or t

    print("nonlinear chain (6 masses, 11 states), 0-2 s, rtol = 1e-9")
    graphs = _load("rich_graphs", os.path.join(ROOT, "tests", "helpers", "rich_graphs.py"))
    chain = assemble(assign_causality(graphs.nonlinear_chain()))
    x0 = {n: 0.0 for n in chain.state_names} | {"q_k0": 0.4, "p_m5": -0.3}
    ref = _reference(lambda: simulate(chain, (0.0, 2.0), x0, t_eval=[0.0, 2.0],
                                      method="DOP853", rtol=1e-13, atol=1e-13))
    base = None
    for method in ("DOP853", "Radau", "BDF"):
        (t, err) = _row(method, lambda m=method: simulate(chain, (0.0, 2.0), x0, t_eval=[0.0, 2.0],
                                                   method=m, rtol=1e-9), args.repeat, base,
                 ref)
        base = base or t

    print("electromechanical arm, 0-5 s, rtol = atol = 1e-8")
    arm = _load("electromechanical_arm",
                os.path.join(ROOT, "examples", "electromechanical_arm.py")).arm().assemble()
    drive = {s: 0.0 for s in arm.model.state_names if s.endswith(".motor.La")}
    grid = np.linspace(0.0, 5.0, 251)
    ref = _reference(lambda: arm.simulate((0.0, 5.0), t_eval=grid, method="DOP853",
                                          rtol=1e-12, atol=1e-12, states=drive))
    base, target = None, None
    for method in ("DOP853", "Radau", "BDF"):
        (t, err) = _row(method, lambda m=method: arm.simulate((0.0, 5.0), t_eval=grid, method=m,
                                                       rtol=1e-8, atol=1e-8, states=drive),
                 args.repeat, base, ref, 1.0)
        base, target = base or t, target if base else err
    # DOP853's steps here are bounded by stability (from about 1 s, when the links
    # settle and La/Ra = 2 ms is the fastest time constant): its error hardly moves with
    # the tolerance, while an implicit method at the same rtol ends far more accurate. So
    # compare at equal achieved error: the cheapest run of a tolerance ladder whose error
    # is at most DOP853's at 1e-8.
    print(f"  at DOP853's achieved error ({target:.1e}): each implicit method's tolerance "
          f"ladder, to the first run that reaches it")
    for method in ("Radau", "BDF"):
        for tol in (1e-6, 3e-7, 1e-7, 3e-8, 1e-8, 3e-9, 1e-9):
            t, err = _row(f"{method} {tol:.0e}", lambda m=method, tol=tol: arm.simulate(
                (0.0, 5.0), t_eval=grid, method=m, rtol=tol, atol=tol, states=drive),
                args.repeat, base, ref, 1.0)
            if err <= target:
                print(f"  -> {method} reaches it at rtol = atol = {tol:.0e}: {t:.3f} s, "
                      f"{t / base:.2f} x DOP853's time", flush=True)
                break

    if args.skip_ant:
        return
    print("gymnasium ant with contact, 0-1 s, rtol = 1e-4, atol = 1e-6")
    import gymnasium
    import mujoco

    from elements import RobotImportWarning, load_mjcf, mujoco_coordinates
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets",
                        "ant.xml")
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        mech = load_mjcf(path, limits={"stiffness": 50.0, "damping": 1.0})
    ant = mech.assemble()
    q, qd, free = mujoco_coordinates(mech, mj, data.qpos, data.qvel)
    print(f"  ({ant.model.n_states} states)")
    base = None
    for method in ("DOP853", "Radau"):
        (t, err) = _row(method, lambda m=method: ant.simulate(
            (0.0, 1.0), q, qd, free=free, t_eval=np.linspace(0.0, 1.0, 51), method=m,
            rtol=1e-4, atol=1e-6), args.repeat, base)
        base = base or t


if __name__ == "__main__":
    main()
