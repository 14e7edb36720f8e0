"""Hybrid runs: joint stops and Coulomb friction switch the model at events (impacts,
sticking, slipping), so a run is a sequence of stretches, each a run of its own.

    OPENBLAS_NUM_THREADS=1 python benchmarks/switched.py [--repeat 5]
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/path/to/other/tree python benchmarks/switched.py

Two cases (DOP853, the package's default tolerances; ``MechanismModel.simulate``'s 501
output times): a pendulum (chain-1) bouncing between impact stops at +-0.2 rad with
restitution 0.95 for 5 s (24 impacts), and chain-2 with Coulomb friction on both joints
(stiction on the first) and impact stops on the second for 4 s. Each line: the status,
the switches, the evaluations, the first run's wall time (a new model: its variants
for held ports are made then) and the best of ``--repeat`` runs after it (s). Run it
from two trees one after the other and compare within a run: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, ROOT)


def impact():
    """chain-1 between impact stops: (label, run)."""
    from elements import models
    mech, _ = models.chain(1)
    j = next(iter(mech.joints.values()))
    j.add_limit(-0.2, 0.2, restitution=0.95)
    mm = mech.assemble()
    return "pendulum between impact stops, 5 s", \
        lambda: mm.simulate((0.0, 5.0), q={j.name: 0.0}, qd={j.name: 3.0})


def friction():
    """chain-2 with friction and a stop: (label, run)."""
    from elements import models
    mech, _ = models.chain(2)
    j1, j2 = mech.joints.values()
    j1.add_friction(0.3, static=0.4)
    j2.add_limit(-0.3, 0.5, restitution=0.5)
    j2.add_friction(0.05)
    mm = mech.assemble()
    return "chain-2, friction and a stop, 4 s", \
        lambda: mm.simulate((0.0, 4.0), q={j1.name: 0.5, j2.name: 0.0},
                            qd={j1.name: 1.0, j2.name: 2.0})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import bondgraph
    print(f"bondgraph from {os.path.dirname(bondgraph.__file__)}")
    for make in (impact, friction):
        label, run = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            res = run()
            first = time.perf_counter() - t
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                res = run()
                best = min(best, time.perf_counter() - t)
        print(f"  {label:38s} {res.raw.status.name:8s} switches {len(res.switches):3d}  "
              f"nfev {res.raw.nfev:6d}  first {first:.3f} s  best {best:.3f} s")


if __name__ == "__main__":
    main()
