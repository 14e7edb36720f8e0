"""A long run: memory stays bounded by the output grid, not by the number of steps.

Simulates the mass-spring-damper of bondgraph.models with a tiny max_step, so that the
solver takes --steps accepted steps (default 10^6), with 1001 output points, and reports
the peak resident memory and the memory held by the result.

    python benchmarks/long_run.py [--steps 1000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bondgraph import assemble, assign_causality, models, simulate  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--points", type=int, default=1001)
    args = ap.parse_args(argv)
    model = assemble(assign_causality(models.mass_spring_damper(1.0, 4.0, 0.1, 0.5)))
    t_end = 10.0
    h = t_end / args.steps
    before = peak_rss_mb()
    t0 = time.perf_counter()
    r = simulate(model, (0.0, t_end), {"p_m": 0.0, "q_k": 0.1}, max_step=h, first_step=h,
                 t_eval=np.linspace(0.0, t_end, args.points), rtol=1e-6, atol=1e-9)
    elapsed = time.perf_counter() - t0
    held = sum(a.nbytes for a in (r.t, r.x, r.bond_values, r.constraint_flow, r.phi,
                                  r.stored_energy)) / 2 ** 20
    print(f"steps {r.n_steps}, nfev {r.nfev}, output points {r.t.size}, {elapsed:.1f} s")
    print(f"peak RSS before {before:.1f} MB, after {peak_rss_mb():.1f} MB; the result holds "
          f"{held:.3f} MB")
    ok = r.success and r.n_steps >= 0.99 * args.steps and peak_rss_mb() < before + 50.0
    print("bounded memory:", "PASSED" if ok else "FAILED",
          "(limit: 50 MB above the start, whatever the number of steps)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
