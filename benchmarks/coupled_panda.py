"""Panda as its URDF has it (the second finger mimics the first: a joint coupling), 0-1 s
at the default tolerances: wall time (best of 3 after a warm-up), evaluations, whether
the run took the compiled loop, and the final coordinates of two joints.

    OPENBLAS_NUM_THREADS=1 python benchmarks/coupled_panda.py
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/other/tree python benchmarks/coupled_panda.py

Needs example-robot-data (the test extra).
"""

from __future__ import annotations

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))


def main() -> int:
    from robot_data import robot_file

    from elements import load_urdf
    path = robot_file("panda_description/urdf/panda.urdf")
    if path is None:
        print("example-robot-data is not installed (pip install -e '.[test]')")
        return 1
    mm = load_urdf(path).assemble()
    mm.simulate((0, 0.05))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        res = mm.simulate((0, 1.0))
        best = min(best, time.perf_counter() - t0)
    d = res.raw.diagnostics
    print(f"panda (mimic coupling), 0-1 s, defaults: {best:.3f} s, {res.raw.nfev} "
          f"evaluations, compiled loop {d['compiled_loop']} "
          f"{d.get('compiled_loop_reason') or ''}")
    print(f"  panda_joint2 at 1 s {res.joint('panda_joint2').q[-1]:.15f} rad, "
          f"panda_finger_joint2 {res.joint('panda_finger_joint2').q[-1]:.15f} m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
