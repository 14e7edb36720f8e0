"""The compiled LU's threshold pivoting (bondgraph.fastlu) measured over simulations:
how often its fixed pivot order fails, and how accurate the factorisations it accepts
are, for one or more values of ``PIVOT_THRESHOLD`` (u).

    OPENBLAS_NUM_THREADS=1 python benchmarks/pivots.py --n 0 5 10 20 --span 5 --u 0.01 0.001

N = 0 is the three-body example, N >= 1 chain-N (benchmarks.md), simulated as in
run.py (DOP853, rtol = atol = 1e-8, Baumgarte 10/s, 10/s) over ``--span`` seconds.
During the run the one-call evaluation's kept-system sources are sampled (``--samples``
of them); after it, each sample is factored again with the pivot order that was in use
and solved for a random right-hand side, and compared with SuperLU's partial pivoting:

    fails      evaluations whose pivot order failed its checks (each then tries the
               recent orders, then SuperLU; a retry that fails again counts twice)
    diff       max |y - y_SuperLU| / max |y_SuperLU|
    residual   max |A y - b| / (max |A| max |y|), the scaled residual (backward error)
    growth     max |U| / max |A| (largest and median over the samples)
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import scipy.sparse.linalg as spla

if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measure(n: int, u: float, span: float, samples: int, seed: int = 0) -> dict:
    from bondgraph import Baumgarte, fastlu, simulate
    from elements import models
    fastlu.PIVOT_THRESHOLD = u
    if n == 0:
        mech, q0 = models.three_body_prismatic(), {}
    else:
        mech, q0 = models.chain(n)
    mm = mech.assemble()
    model = mm.model
    sr = model.sparse()
    kern = fastlu._sparse_kernels()
    first = kern._first
    rng = np.random.default_rng(seed)
    taken, fails = [], [0]
    every = max(1, int(span * 1000 / max(samples, 1)))   # (about evenly over the run)

    current = [None]                     # the run's pivot order (its workspace's)
    fused_args = type(sr)._fused_args

    def args_spy(self, ws):
        out = fused_args(self, ws)
        current[0] = None if out is None else out[2]
        return out

    def spy(*a):
        out = first(*a)
        if out[2] == 2:
            fails[0] += 1
        elif out[2] == 0 and len(taken) < samples and rng.integers(every) == 0:
            taken.append((sr._B.c.extend(a[3]).copy(), current[0]))
        return out

    kern._first = spy
    type(sr)._fused_args = args_spy
    try:
        res = simulate(model, (0.0, span), mm.initial_state(q0, {}), method="DOP853",
                       rtol=1e-8, atol=1e-8, stabilization=Baumgarte(10.0, 10.0))
    finally:
        kern._first = first
        type(sr)._fused_args = fused_args
    S = sr._B.S
    k = fastlu._kernels()
    diff = resid = 0.0
    growth = []
    for ext, st in taken:
        Lx, Vx, d, ok = k._factor_kernel(ext, st.tp, st.t_row, st.t_src, st.t_coef, st.Lp,
                                         st.Li, st.Up, st.Ui, u, fastlu.SINGULAR_RATIO)
        if not ok:
            continue
        A = S.matrix(ext).tocsc()
        b = rng.standard_normal(A.shape[0])
        y = fastlu.Factors(st, Lx, Vx, d).solve(b)
        ref = spla.splu(A).solve(b)
        diff = max(diff, float(np.abs(y - ref).max() / np.abs(ref).max()))
        resid = max(resid, float(np.abs(A @ y - b).max() / (abs(A).max() * np.abs(y).max())))
        umax = max(np.abs(d).max(), np.abs(Vx * d[st.Uj]).max(initial=0.0))
        growth.append(float(umax / abs(A).max()))
    return {"model": "three-body" if n == 0 else f"chain-{n}", "u": u, "nfev": res.nfev,
            "fails": fails[0], "samples": len(growth), "diff": diff, "residual": resid,
            "growth_max": max(growth, default=np.nan),
            "growth_median": float(np.median(growth)) if growth else np.nan}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[0, 5, 10, 20],
                   help="0: three-body; N >= 1: chain-N")
    p.add_argument("--u", type=float, nargs="+", default=[0.01, 0.001])
    p.add_argument("--span", type=float, default=5.0, help="simulated seconds")
    p.add_argument("--samples", type=int, default=400)
    args = p.parse_args(argv)
    print(f"{'model':>11} {'u':>6} {'nfev':>6} {'fails':>6} {'samples':>7} {'diff':>9} "
          f"{'residual':>9} {'growth max':>10} {'median':>7}")
    for n in args.n:
        for u in args.u:
            r = measure(n, u, args.span, args.samples)
            print(f"{r['model']:>11} {u:>6g} {r['nfev']:>6} {r['fails']:>6} "
                  f"{r['samples']:>7} {r['diff']:>9.2e} {r['residual']:>9.2e} "
                  f"{r['growth_max']:>10.3g} {r['growth_median']:>7.3g}", flush=True)


if __name__ == "__main__":
    main()
