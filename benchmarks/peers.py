"""Peers for chain-N, run side by side with ours, and a small scipy integration loop.

Every peer exposes the same interface (class attribute ``name``, ``build(n)``, then
``rhs(t, y)`` returning a fresh array, ``y0``, ``centres(y)`` (N, 3) and
``energy(y)`` -> (kinetic, potential)), so run.py times them all the same way: scipy's
DOP853 at the tolerances of our run, checked against the common reference before the
timing is reported.

- ``mincoord``: the in-house minimal-coordinate numpy model (mincoord.py); always there.
- ``pinocchio``: Pinocchio's ABA (``pin.aba``) if ``import pinocchio`` works (the optional
  ``bench`` extra; run here with pin 4.1.0). Any exception it raises is reported as a
  peer failure.
- ``mujoco`` and ``pydy``: only detected; no runner is implemented for them.
"""

from __future__ import annotations

import importlib
import time

import numpy as np
from scipy.integrate import DOP853

from mincoord import GRAVITY, HALF, LINK, MASS, SIDE, Chain

BEND = 0.3


def integrate(fun, y0, t_end, grid, rtol, atol, deadline=None):
    """scipy DOP853 from t = 0 to ``t_end``; states at ``grid`` (dense output).

    Returns (t, Y (n, len(t)), nfev, accepted steps, stopped_by_deadline). A run past
    ``deadline`` (perf_counter seconds) stops after the current step, keeping the grid
    points reached.
    """
    solver = DOP853(fun, 0.0, np.array(y0, dtype=float), t_end, rtol=rtol, atol=atol)
    ts, ys = [grid[0]], [np.array(y0, dtype=float)]
    k, steps, stopped = 1, 0, False
    while solver.status == "running":
        msg = solver.step()
        if solver.status == "failed":
            raise RuntimeError(f"DOP853 failed at t = {solver.t:.6g}: {msg}")
        steps += 1
        dense = solver.dense_output()
        while k < len(grid) and grid[k] <= solver.t + 1e-12:
            ts.append(grid[k])
            ys.append(dense(grid[k]))
            k += 1
        if deadline is not None and solver.status == "running" and \
                time.perf_counter() > deadline:
            stopped = True
            break
    return np.array(ts), np.array(ys).T, solver.nfev, steps, stopped


class MinCoordPeer:
    name = "mincoord"
    description = "in-house numpy model in joint coordinates (benchmarks/mincoord.py)"

    def build(self, n: int):
        self.n = n
        self.chain = Chain(n)
        self.y0 = self.chain.initial_state(BEND)
        return self

    def rhs(self, t, y):
        return self.chain.rhs(t, y)

    def centres(self, y):
        return self.chain.centres(y[: self.n])

    def energy(self, y):
        return self.chain.energy(y)


class PinocchioPeer:
    name = "pinocchio"
    description = "Pinocchio ABA (pin.aba), scipy DOP853"

    def build(self, n: int):
        import pinocchio as pin
        self.pin = pin
        self.n = n
        model = pin.Model()
        model.gravity = pin.Motion(np.asarray(GRAVITY, dtype=float), np.zeros(3))
        i0 = MASS * SIDE ** 2 / 6.0
        inertia = pin.Inertia(MASS, np.array([0.0, 0.0, -HALF]), np.eye(3) * i0)
        parent = 0
        for i in range(1, n + 1):
            placement = pin.SE3.Identity()
            if i > 1:   # joint i sits 0.2 m below joint i-1, in the parent's frame
                placement.translation = np.array([0.0, 0.0, -LINK])
            joint = pin.JointModelRX() if i % 2 == 1 else pin.JointModelRY()
            jid = model.addJoint(parent, joint, placement, f"J{i}")
            model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
            parent = jid
        self.model = model
        self.data = model.createData()
        self.tau = np.zeros(model.nv)
        self.y0 = np.concatenate([np.full(n, BEND), np.zeros(n)])
        return self

    def rhs(self, t, y):
        n = self.n
        q, v = y[:n], y[n:]
        a = self.pin.aba(self.model, self.data, q, v, self.tau)
        return np.concatenate((v, a))          # a fresh array (aba returns data.ddq)

    def centres(self, y):
        pin = self.pin
        pin.forwardKinematics(self.model, self.data, np.ascontiguousarray(y[: self.n]))
        off = np.array([0.0, 0.0, -HALF])
        return np.array([self.data.oMi[i].rotation @ off + self.data.oMi[i].translation
                         for i in range(1, self.n + 1)])

    def energy(self, y):
        pin = self.pin
        q, v = np.ascontiguousarray(y[: self.n]), np.ascontiguousarray(y[self.n:])
        k = pin.computeKineticEnergy(self.model, self.data, q, v)
        p = pin.computePotentialEnergy(self.model, self.data, q)
        return float(k), float(p)


RUNNERS = {"mincoord": MinCoordPeer, "pinocchio": PinocchioPeer}
OPTIONAL = ("pinocchio", "mujoco", "pydy")


def availability() -> dict[str, dict]:
    """Which optional peers import, with version, and whether a runner exists."""
    out = {}
    for name in OPTIONAL:
        try:
            mod = importlib.import_module(name)
            out[name] = {"imports": True, "version": str(getattr(mod, "__version__", "?")),
                         "runner": name in RUNNERS}
        except Exception as exc:  # ImportError, or a broken install
            out[name] = {"imports": False, "error": f"{type(exc).__name__}: {exc}",
                         "runner": name in RUNNERS}
    return out
