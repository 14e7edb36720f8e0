"""Runs through the sources' jumps and kinks: evaluations and error against closed forms.

    OPENBLAS_NUM_THREADS=1 python benchmarks/breaks.py
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/path/to/other/tree python benchmarks/breaks.py

The README's two rigidly joined masses (1 and 3 kg) pushed by a force F(t); their momenta
sum to the integral of F, known in closed form. Rows: a step (TimeFunction.step) and
steps written as Heaviside expressions (plain, with sympy's 1/2 at the jump, and
``Heaviside(., 1)``), RK45 and DOP853, rtol = atol = 1e-6 and 1e-10; a dense table of
2001 points (sin 7t + 0.3 cos 23t sampled) with a break at every point and without
(``breaks=False``, where the other tree has it). Each line: the evaluations, the largest
error of the momenta at 21 output times, and the best of 3 wall times after a warm-up.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, ROOT)

from bondgraph import TimeFunction, assemble, assign_causality, models, simulate  # noqa: E402

TE = np.linspace(0.0, 2.0, 21)


def _impulse(t: float, ts: np.ndarray, vs: np.ndarray) -> float:
    grid = np.sort(np.concatenate([ts[(ts > 0) & (ts < t)], [0.0, t]]))
    f = np.interp(grid, ts, vs)
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(grid)))


def _step(after, time):
    if hasattr(TimeFunction, "step"):
        return TimeFunction.step(after, time)
    from elements.files.tables import signal              # (a tree without it)
    return signal({"type": "step", "time": time, "after": after})


def _table(ts, vs):
    if hasattr(TimeFunction, "table"):
        return TimeFunction.table(ts, vs)
    from elements.files.tables import signal
    return signal({"type": "table", "t": list(ts), "value": list(vs)})


def cases():
    """(label, force, exact momentum at TE)."""
    steps = 2 * np.maximum(TE - 0.3137, 0) + 1.5 * np.maximum(TE - 0.71, 0) ** 2
    yield "TimeFunction.step(2, 0.3137)", _step(2.0, 0.3137), \
        2 * np.maximum(TE - 0.3137, 0)
    yield "Heaviside steps (1/2 at 0)", TimeFunction.expression(
        "2*Heaviside(t - 0.3137) + 3*(t - 0.71)*Heaviside(t - 0.71)"), steps
    yield "Heaviside(., 1) steps", TimeFunction.expression(
        "2*Heaviside(t - 0.3137, 1) + 3*(t - 0.71)*Heaviside(t - 0.71, 1)"), steps
    tt = np.linspace(0.0, 2.0, 2001)
    vv = np.sin(7 * tt) + 0.3 * np.cos(23 * tt)
    exact = np.array([_impulse(t, tt, vv) for t in TE])
    yield "table of 2001 points", _table(tt, vv), exact
    if hasattr(TimeFunction, "table"):      # (a tree without the option: no row)
        yield "the same, breaks=False", TimeFunction.table(tt, vv, breaks=False), exact


def main() -> None:
    for label, force, exact in cases():
        model = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, force)))
        for method in ("RK45", "DOP853"):
            for tol in (1e-6, 1e-10):
                def run():
                    return simulate(model, (0.0, 2.0), {"p_m1": 0.0, "p_m2": 0.0},
                                    method=method, rtol=tol, atol=tol, t_eval=TE)
                res = run()
                best = np.inf
                for _ in range(3):
                    t0 = time.perf_counter()
                    run()
                    best = min(best, time.perf_counter() - t0)
                p = res.state("p_m1").ravel() + res.state("p_m2").ravel()
                print(f"{label:32s} {method:6s} {tol:5.0e}  {res.nfev:6d} evaluations  "
                      f"error {np.abs(p - exact).max():8.1e}  {best:7.4f} s  "
                      f"{res.status.name}")


if __name__ == "__main__":
    main()
