"""Time one derivative and one simulation of chain-N or the three-body example with
whichever version of the package is importable, for A/B comparisons of two code versions
on one machine (run them alternately; single runs of a loaded machine are noisy).

    OPENBLAS_NUM_THREADS=1 python benchmarks/ab.py 0 10 100         # this tree
    git worktree add /tmp/old <commit>
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/old python benchmarks/ab.py 0 10 100

N = 0 is the three-body example (0-5 s), N >= 1 chain-N (0-1 s), both as in run.py:
DOP853, rtol = atol = 1e-8, Baumgarte (10/s, 10/s), outputs every 0.1 s. One derivative
is timed at two states that alternate (so that no per-state cache hides the cost),
best of 5 x ``--calls``; the simulation is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model(n: int):
    from elements import models
    if n == 0:
        mech, q0, span = models.three_body_prismatic(), {}, 5.0
    else:
        (mech, q0), span = models.chain(n), 1.0
    mm = mech.assemble()
    return mm, mm.initial_state(q0, {}), span


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int, nargs="+", help="0: three-body; N >= 1: chain-N")
    p.add_argument("--calls", type=int, default=400, help="derivatives per timing")
    p.add_argument("--repeat", type=int, default=3, help="simulations, best reported")
    args = p.parse_args(argv)
    from bondgraph import Baumgarte
    import bondgraph
    print(f"package: {os.path.dirname(bondgraph.__file__)}")
    stab = Baumgarte(10.0, 10.0)
    for n in args.n:
        mm, x0, span = _model(n)
        x1 = x0 * (1.0 + 1e-9) + 1e-12
        rhs = mm.model.rhs
        rhs(0.0, x0, stab)
        rhs(0.0, x1, stab)
        best = np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(args.calls // 2):
                rhs(0.0, x0, stab)
                rhs(0.0, x1, stab)
            best = min(best, (time.perf_counter() - t0) / (2 * (args.calls // 2)))
        grid = np.linspace(0.0, span, int(round(span / 0.1)) + 1)
        kw = dict(t_eval=grid, method="DOP853", rtol=1e-8, atol=1e-8, stabilization=stab)
        mm.simulate((0.0, span), x0=x0, **kw)
        sim = np.inf
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = mm.simulate((0.0, span), x0=x0, **kw)
            sim = min(sim, time.perf_counter() - t0)
        label = "three-body" if n == 0 else f"chain-{n}"
        print(f"{label:>10}: one derivative {1e6 * best:7.1f} us, simulate {sim:.3f} s "
              f"({r.raw.nfev} evaluations)")


if __name__ == "__main__":
    main()
