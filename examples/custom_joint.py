"""A new joint kind in one file: a Cartesian (gantry) joint, three slides, no rotation.

Coordinates x, y, z (m): Q from P along the parent's axes; orientations locked. Works in
model files (``type = "cartesian"``), results (``J.x.q``...), runs, FastDynamics and the 3D
page (axis_motions: three translations). Check: a mass on three springs under gravity moves
as three oscillators, q_i = g_i/w_i^2 (1 - cos w_i t). Run: ``python examples/custom_joint.py
[--out DIR]`` (exit status 1 if the check fails)."""

import argparse
import sys
import tempfile

import numpy as np

from elements import AxisMotion, Joint, register_joint
from elements.joints.blocks import orientation_block, slide_port
from elements.files.modelfile import loads_model
from elements.running.runner import run


@register_joint
class CartesianJoint(Joint):
    """Three slides along the parent's x, y, z axes (m); 3 rotational constraints."""

    type_name = "cartesian"
    coordinates = (("x", "m"), ("y", "m"), ("z", "m"))
    needs_axis = False

    def constraint_blocks(self):
        return [orientation_block(self)]

    def axis_motions(self):       # each coordinate a translation along a joint-frame axis
        return tuple(AxisMotion.translation(e) for e in np.eye(3))

    def axis_blocks(self):        # d/dt of e_i . (r_Q - r_P), e_i fixed on the parent
        return [slide_port(self, ax, e, exact=True) for ax, e in zip(self.axes, np.eye(3))]

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, np.eye(3), np.asarray(q, dtype=float))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, np.zeros(3), qd)

    def coordinate(self, A_a, r_a, A_b, r_b):
        return self._relative(A_a, r_a, A_b, r_b)[1]


MODEL = """
[model]
name = "gantry"
gravity = [0.5, -9.81, 1.0]
[[body]]
name = "head"
mass = 2.0
inertia = { principal = [0.01, 0.02, 0.03] }
[[joint]]
name = "G"
type = "cartesian"
parent = "ground"
child = "head"
child_point = [0.0, 0.05, 0.0]
spring = { x = 200.0, y = 800.0, z = 450.0 }
[solver]
t_end = 1.0
points = 101
rtol = 1e-11
atol = 1e-11
"""

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="output folder (default: a temporary one)")
    out = ap.parse_args().out or tempfile.mkdtemp(prefix="custom_joint_")
    result, _ = run(loads_model(MODEL, "gantry.toml"), out, quiet=True, animation="gantry.html")
    g, w2 = np.array([0.5, -9.81, 1.0]), np.array([200.0, 800.0, 450.0]) / 2.0
    exact = (g / w2)[:, None] * (1 - np.cos(np.sqrt(w2)[:, None] * result.t))
    err = np.abs(result.joint("G").q - exact).max()
    print(f"cartesian joint: max |q - closed form| = {err:.2e} m; files in {out}")
    sys.exit(0 if err < 1e-8 else 1)
