"""Where a cold start's compile time goes: numba's compile events per kernel.

Runs one workload in this process with the kernels compiled (run it with an empty
``NUMBA_CACHE_DIR``: a cached kernel sends no compile event) and prints, per compiled
function, the seconds of its compiles less those of the compiles nested in them
(numba compiles a callee while typing its caller) and how many times it was compiled
(more than once: one compile per signature, e.g. a constant argument typed as a
literal), then the total.

    NUMBA_CACHE_DIR=/tmp/cold-$(date +%s) OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/compile_profile.py [three-body | fast | contact] [--top N]

``three-body``: the README's three-body example (build, then simulate 0-1 s: the Python
path and the compiled RK loop); ``fast``: :class:`elements.FastDynamics` of a chain of
3 (the four operations); ``contact``: a ball on a swinging rod scraping a floor (0-0.6
s: the contact kernels, in the compiled RK loop too); ``two-masses``: the README's core
quick start (``bondgraph`` only: the compiled RK loop without an element program). A callee linked into its caller is compiled to machine code
again as part of the caller: that time counts as the caller's.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, os.path.dirname(HERE))

from numba.core import event


class _Profile(event.Listener):
    """Exclusive seconds and counts of numba's compile events, by function."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.count = collections.Counter()
        self._stack = []                   # [name, start, seconds of nested compiles]

    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        self._stack.append([f"{f.__module__}.{f.__qualname__}", time.perf_counter(), 0.0])

    def on_end(self, ev):
        name, start, nested = self._stack.pop()
        dt = time.perf_counter() - start
        self.seconds[name] += dt - nested
        self.count[name] += 1
        if self._stack:
            self._stack[-1][2] += dt


def _swing():
    """A rod (0.6 m, 1 kg) on a hinge whose ball (r 5 cm) scrapes a floor at the bottom
    of its swing (friction 0.5): ``tests/unit/test_compiled_sources.py``'s scene."""
    from elements import Inertia, Mechanism, RigidBody
    from elements.contact import ContactLaw, Plane, Sphere
    from elements.joints.kinds import RevoluteJoint
    mech = Mechanism("swing", gravity=(0.0, 0.0, -9.81))
    rod = mech.add_body(RigidBody("rod", 1.0, Inertia.principal(0.03, 0.03, 0.03)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rod, parent_point=(0.0, 0.0, 0.648),
                                 child_point=(0.0, 0.0, 0.3), axis=(0.0, 1.0, 0.0)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Sphere("ball", "rod", 0.05, position=(0.0, 0.0, -0.3)),
                   ContactLaw(stiffness=1e5, damping=0.5, friction=0.5, slip_velocity=0.01))
    return mech


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload", nargs="?", default="three-body", choices=("three-body", "fast", "contact", "two-masses"))
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    prof = _Profile()
    event.register("numba:compile", prof)
    t0 = time.perf_counter()
    import numpy as np

    from elements import FastDynamics, models
    if a.workload == "fast":
        fd = FastDynamics(models.chain(3)[0].assemble())
        t1 = time.perf_counter()
        q = np.zeros((2, fd.n_q))
        if fd.n_q != fd.n_v:               # (a quaternion first: the identity)
            q[:, 0] = 1.0
        qd = np.ones((2, fd.n_v))
        fd.direct_dynamics(q, qd, qd)
        fd.inverse_dynamics(q, qd, qd)
        fd.mass_matrix(q)
        fd.bias(q, qd)
    elif a.workload == "two-masses":           # (bondgraph only: the README's quick start)
        from bondgraph import assemble, assign_causality, simulate
        from bondgraph import models as core_models
        model = assemble(assign_causality(core_models.two_masses_rigid(1.0, 3.0, 2.0)))
        t1 = time.perf_counter()
        simulate(model, (0.0, 1.0), {"p_m1": 0.0, "p_m2": 0.0})
    elif a.workload == "contact":
        model = _swing().assemble()
        t1 = time.perf_counter()
        model.simulate((0.0, 0.6), q={"J1": 0.6}, rtol=1e-6, atol=1e-8)
    else:
        model = models.three_body_prismatic().assemble()
        t1 = time.perf_counter()
        model.simulate((0.0, 1.0))
    t2 = time.perf_counter()
    print(f"{a.workload}: import and build {t1 - t0:.1f} s, run {t2 - t1:.1f} s")
    print(" seconds  compiles  function")
    ranked = sorted(prof.seconds.items(), key=lambda kv: -kv[1])
    for name, s in ranked[:a.top]:
        print(f"{s:8.2f}  {prof.count[name]:8d}  {name}")
    print(f"total {sum(prof.seconds.values()):.1f} s in {sum(prof.count.values())} compiles "
          f"of {len(prof.count)} functions")


if __name__ == "__main__":
    main()
