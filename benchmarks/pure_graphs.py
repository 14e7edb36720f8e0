"""Bond graphs without constraint sources on the compiled loop (issue 36): each model run
with the compiled loop and with scipy's Python stepping (``compiled_loop=False``, the
path every such model took before), in one process, alternating: wall time (best of
``--repeat`` after a warm-up), steps, evaluations and the largest state difference
between the two runs.

    OPENBLAS_NUM_THREADS=1 python benchmarks/pure_graphs.py [--repeat 5]

Models: a mass, spring and damper (``models.mass_spring_damper``, 0-20 s); a DC motor
(``models.dc_motor``, 0-1 s); a tumbling rigid body with drag (EJS, tests/helpers'
``spinning_body``, 0-20 s); a ladder of 40 RLC sections driven by a sine voltage (80
states, tests/helpers' ``rlc_ladder``), 0-0.05 s; a mass on a spring and a damper pushed by
an expression of time (a step and a decaying sine), 0-20 s. DOP853 at rtol 1e-8, atol
1e-10.
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
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))


def _driven_mass():
    """A mass (2 kg) with a damper (0.5 N s/m) and a spring (10 N/m) pushed by the
    expression 5 Heaviside(t - 0.004) + 2 sin(30 t) exp(-t) N (the compiled loop's
    expression interpreter; before it, the Python stepping)."""
    import sympy

    from bondgraph import C, I, R, BondGraph, OneJunction, Se
    from bondgraph.laws import TIME
    bg = BondGraph("driven_mass")
    bg.add(Se("F", 5 * sympy.Heaviside(TIME - 0.004) + 2 * sympy.sin(30 * TIME) *
              sympy.exp(-TIME)), OneJunction("v"), I("m", 2.0), R("d", 0.5), C("k", 0.1))
    for a, h in [("F", "v"), ("v", "m"), ("v", "d"), ("v", "k")]:
        bg.connect(a, h)
    return bg


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="timed runs per row, best shown")
    args = p.parse_args(argv)
    import rich_graphs as rg

    from bondgraph import assemble, assign_causality, models, simulate
    cases = [("mass-spring-damper", models.mass_spring_damper(1.0, 10.0, 0.5, 1.0), 20.0),
             ("dc motor", models.dc_motor(12.0, 1.0, 0.01, 0.05, 0.02, 0.001), 1.0),
             ("tumbling body (EJS)", rg.spinning_body(), 20.0),
             ("RLC ladder, 40 sections", rg.rlc_ladder(40), 0.05),
             ("mass driven by an expression", _driven_mass(), 20.0)]
    print(f"{'model':26s} {'states':>6s} {'compiled':>10s} {'Python':>10s} {'ratio':>6s} "
          f"{'steps':>6s} {'nfev':>6s} {'max diff':>9s}")
    for name, bg, span in cases:
        model = assemble(assign_causality(bg))
        x0 = np.random.default_rng(3).uniform(-0.1, 0.1, model.n_states)
        best, res = {}, {}
        for compiled in (True, False):            # (warm-up)
            simulate(model, (0.0, span), x0, method="DOP853", rtol=1e-8, atol=1e-10,
                     compiled_loop=compiled)
        for _ in range(args.repeat):
            for compiled in (True, False):
                t0 = time.perf_counter()
                r = simulate(model, (0.0, span), x0, method="DOP853", rtol=1e-8,
                             atol=1e-10, compiled_loop=compiled)
                dt = time.perf_counter() - t0
                best[compiled] = min(best.get(compiled, np.inf), dt)
                res[compiled] = r
        fast, slow = res[True], res[False]
        if not fast.diagnostics["compiled_loop"]:
            print(f"{name}: not on the compiled loop: "
                  f"{fast.diagnostics['compiled_loop_reason']}")
        diff = float(np.abs(fast.x - slow.x).max())
        print(f"{name:26s} {model.n_states:6d} {best[True]:9.4f}s {best[False]:9.4f}s "
              f"{best[False] / best[True]:6.1f} {fast.n_steps:6d} {fast.nfev:6d} "
              f"{diff:9.1e}")


if __name__ == "__main__":
    main()
