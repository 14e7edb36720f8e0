"""A 6-joint arm (example-robot-data's UR5) driven by sinusoidal joint torques
(``TimeFunction.sine``), 0-1 s at the default tolerances: wall time (best of 3 after a
warm-up), evaluations, and whether the run took the compiled loop; beside it the same
arm with the same torques as Python functions only (no compiled form), and with
constant torques.

    OPENBLAS_NUM_THREADS=1 python benchmarks/time_drives.py
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/other/tree python benchmarks/time_drives.py

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


def _arm(kind: str):
    from robot_data import robot_file

    from bondgraph import TimeFunction
    from elements import load_urdf
    mech = load_urdf(robot_file("ur_description/urdf/ur5_robot.urdf"))
    for k, (name, joint) in enumerate(j for j in mech.joints.items() if j[1].coordinates):
        sine = TimeFunction.sine(5.0, 3.0, float(k))
        joint.add_actuator({"compiled sine": sine,
                            "Python sine": TimeFunction(sine.value, sine.rate, sine.period),
                            "constant": 5.0}[kind])
    return mech.assemble()


def main() -> int:
    from robot_data import robot_file
    if robot_file("ur_description/urdf/ur5_robot.urdf") is None:
        print("example-robot-data is not installed (pip install -e '.[test]')")
        return 1
    for kind in ("compiled sine", "Python sine", "constant"):
        try:
            mm = _arm(kind)
        except TypeError:          # (a version whose TimeFunction has no compiled form)
            print(f"{kind:14s} not available in this version")
            continue
        mm.simulate((0, 0.05))
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            res = mm.simulate((0, 1.0))
            best = min(best, time.perf_counter() - t0)
        d = res.raw.diagnostics
        print(f"{kind:14s} {best:.3f} s  {res.raw.nfev:5d} evaluations  compiled loop "
              f"{d['compiled_loop']}  {d.get('compiled_loop_reason') or ''}"[:160])
    return 0


if __name__ == "__main__":
    sys.exit(main())
