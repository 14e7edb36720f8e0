"""Peers for chain-N, run side by side with ours, and a small scipy integration loop.

Every peer exposes the same interface (class attribute ``name``, ``build(n)``, then
``rhs(t, y)`` returning a fresh array, ``y0``, ``centres(y)`` (N, 3) and
``energy(y)`` -> (kinetic, potential)), so run.py times them all the same way: scipy's
DOP853 at the tolerances of our run, checked against the common reference before the
timing is reported. A peer with ``integrator = "own"`` (MuJoCo) gives ``match_step``,
``simulate(span, grid)`` and ``evaluation()`` instead of ``rhs``.

- ``mincoord``: the in-house minimal-coordinate numpy model (mincoord.py); always there.
- ``pinocchio``: Pinocchio's ABA (``pin.aba``) if ``import pinocchio`` works (the optional
  ``bench`` extra; run here with pin 4.1.0). Any exception it raises is reported as a
  peer failure.
- ``mujoco``: MuJoCo's own fixed-step RK4 (``integrator = "own"``: run.py does not hand
  it to scipy). The chain is written as MJCF; the step is the largest of
  ``MuJoCoPeer.STEPS`` (0.01 s halved down to 2.4e-6 s) at which the final centres of
  body 1 and body N are within ``match_tol`` (1e-6 m) of the reference (``match_step``),
  and the run is timed at that step.
- ``pydy``: PyDy / sympy's KanesMethod in joint coordinates. The derivation runs in a
  child process (``python peers.py --pydy-derive N FILE``) that is killed past
  ``budget`` seconds (``PeerSkipped``: not a wrong answer, and longer chains are not
  tried); the equations come back pickled and pydy's ODEFunctionGenerator turns them
  into a numeric rhs (Cython when a C compiler works, else lambdify).

A peer's ``build(n)`` may fill ``build_stages`` (seconds per stage) and ``notes``; a
peer with ``repeat_build = False`` is built once per row (its build is too slow to
repeat).
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.integrate import DOP853

from mincoord import GRAVITY, HALF, LINK, MASS, SIDE, Chain

BEND = 0.3


class PeerSkipped(Exception):
    """The peer cannot produce this row, for a reason that is not a wrong answer (for
    example its derivation ran past its time budget). ``larger_too``: longer chains
    would not fare better, so run.py does not try them."""

    def __init__(self, reason: str, larger_too: bool = False):
        super().__init__(reason)
        self.larger_too = larger_too


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


# ---------------------------------------------------------------------------------------
# MuJoCo
# ---------------------------------------------------------------------------------------
class MuJoCoPeer:
    """chain-N in MJCF, MuJoCo's RK4 with a fixed step matched to the reference.

    Every body frame sits at its joint (joint i at the body origin, body i+1 placed 0.2 m
    below it, along the parent's -z), the centre of mass 0.1 m below (``inertial pos``),
    mass 1 kg and the cube's isotropic inertia m s^2 / 6 set explicitly (``diaginertia``;
    ``inertiafromgeom`` off, so the box geom is only a shape). Hinge axes alternate x, y,
    expressed in the body frame, which coincides with the parent's at q = 0. No contacts
    (geoms with contype = conaffinity = 0), no damping, armature, friction loss or limits.

    State y = (qpos, qvel). ``simulate`` steps ``mj_step`` from y0 and returns the state
    on the grid; RK4 evaluates the dynamics 4 times per step (mj_forward plus 3 stages),
    so nfev = 4 x steps.
    """

    name = "mujoco"
    description = "MuJoCo mj_step, RK4 with a fixed step matched to the reference"
    integrator = "own"
    repeat_build = True
    STEPS = tuple(1e-2 / 2 ** k for k in range(13))   # 0.01 (the reference grid) .. 2.4e-6 s

    def __init__(self, match_tol: float = 1e-6):
        self.match_tol = float(match_tol)
        self.notes = ""
        self.build_stages = {}

    @staticmethod
    def mjcf(n: int) -> str:
        i0 = MASS * SIDE ** 2 / 6.0
        g = " ".join(f"{v:g}" for v in GRAVITY)
        body = ""
        for i in range(n, 0, -1):                         # innermost first
            axis = "1 0 0" if i % 2 == 1 else "0 1 0"
            pos = "0 0 0" if i == 1 else f"0 0 {-LINK:g}"
            body = (f'<body name="b{i}" pos="{pos}">'
                    f'<joint name="J{i}" type="hinge" pos="0 0 0" axis="{axis}" '
                    f'damping="0" armature="0" frictionloss="0" limited="false"/>'
                    f'<inertial pos="0 0 {-HALF:g}" mass="{MASS:g}" '
                    f'diaginertia="{i0!r} {i0!r} {i0!r}"/>'
                    f'<geom type="box" size="{SIDE / 2:g} {SIDE / 2:g} {SIDE / 2:g}" '
                    f'pos="0 0 {-HALF:g}" contype="0" conaffinity="0"/>'
                    f'{body}</body>')
        return (f'<mujoco model="chain{n}"><compiler inertiafromgeom="false"/>'
                f'<option timestep="{MuJoCoPeer.STEPS[0]!r}" integrator="RK4" '
                f'gravity="{g}"><flag energy="enable"/></option>'
                f'<worldbody>{body}</worldbody></mujoco>')

    def build(self, n: int):
        import mujoco
        self.mj = mujoco
        self.n = n
        self.model = mujoco.MjModel.from_xml_string(self.mjcf(n))
        if self.model.nv != n or self.model.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4:
            raise RuntimeError("MJCF did not compile to the intended chain")
        self.data = mujoco.MjData(self.model)
        self.probe = mujoco.MjData(self.model)            # for centres/energy of a state
        self.y0 = np.concatenate([np.full(n, BEND), np.zeros(n)])
        self.dt = self.model.opt.timestep
        return self

    def set_step(self, dt: float):
        self.dt = float(dt)
        self.model.opt.timestep = self.dt

    def simulate(self, span, grid):
        """(t, Y (2n, len(t)), nfev, steps) of one run from y0 at the current step; the
        grid must be a multiple of the step."""
        mj, m, d, n = self.mj, self.model, self.data, self.n
        counts = np.diff(np.asarray(grid, dtype=float)) / self.dt
        k = np.rint(counts).astype(int)
        if np.any(np.abs(counts - k) > 1e-6) or grid[0] != 0.0:
            raise ValueError(f"grid is not a multiple of the step {self.dt:g} s")
        mj.mj_resetData(m, d)
        d.qpos[:] = self.y0[:n]
        d.qvel[:] = self.y0[n:]
        ys = [self.y0.copy()]
        for steps in k:
            mj.mj_step(m, d, nstep=int(steps))
            ys.append(np.concatenate([d.qpos, d.qvel]))
        total = int(k.sum())
        return np.asarray(grid, dtype=float), np.array(ys).T, 4 * total, total

    def match_step(self, span, first_ref, last_ref, tol=None):
        """Set the largest step of STEPS at which the final centres of body 1 and body N
        are both within ``tol`` of the reference (``first_ref``, ``last_ref``); returns
        [(step, distance)] as tried. If none is, the smallest step stays set and the
        caller's position check decides."""
        tol = self.match_tol if tol is None else tol
        tried = []
        for dt in self.STEPS:
            self.set_step(dt)
            _, Y, _, _ = self.simulate(span, np.array([0.0, span]))
            c = self.centres(Y[:, -1])
            err = float(max(np.linalg.norm(c[0] - first_ref), np.linalg.norm(c[-1] - last_ref)))
            tried.append((dt, err))
            if err <= tol:
                break
        matched = tried[-1][1] <= tol
        self.notes = (f"RK4 dt = {self.dt:.3g} s" + ("" if matched else
                      f" (smallest tried; misses {tol:g} m: {tried[-1][1]:.2g} m)"))
        return tried

    def evaluation(self):
        """One dynamics evaluation (mj_forward) at y0, for the per-derivative timing."""
        mj, m, d, n = self.mj, self.model, self.probe, self.n
        d.qpos[:] = self.y0[:n]
        d.qvel[:] = self.y0[n:]
        return lambda: mj.mj_forward(m, d)

    def _set(self, y):
        d = self.probe
        d.qpos[:] = y[: self.n]
        d.qvel[:] = y[self.n:]
        self.mj.mj_forward(self.model, d)
        return d

    def centres(self, y):
        return self._set(y).xipos[1:].copy()

    def energy(self, y):
        d = self._set(y)
        return float(d.energy[1]), float(d.energy[0])       # (kinetic, potential)


# ---------------------------------------------------------------------------------------
# PyDy
# ---------------------------------------------------------------------------------------
def pydy_derive(n: int) -> dict:
    """chain-N by sympy.physics.mechanics' KanesMethod in joint coordinates (q_i the joint
    angles, u_i = q_i'), with the kinematics needed to check the answer.

    Returns the mass matrix M and forcing F of M u' = F, the symbols, the derivation time
    and the centres, their velocities and the angular velocities (3 rows per body, in the
    ground frame, as expressions in plain symbols ``q1..qn, u1..un`` and the constants).
    """
    import sympy as sp
    import sympy.physics.mechanics as me

    t0 = time.perf_counter()
    q = me.dynamicsymbols(f"q1:{n + 1}")
    u = me.dynamicsymbols(f"u1:{n + 1}")
    g, m, i0, link, half = sp.symbols("g m i0 link half")
    ground = me.ReferenceFrame("N")
    origin = me.Point("O")
    origin.set_vel(ground, 0)
    parent, joint, bodies, loads = ground, origin, [], []
    for i in range(n):
        axis = parent.x if i % 2 == 0 else parent.y
        frame = parent.orientnew(f"B{i + 1}", "Axis", [q[i], axis])
        frame.set_ang_vel(parent, u[i] * axis)
        if i > 0:                     # joint i+1 is fixed in the parent, link below joint i
            nxt = joint.locatenew(f"P{i + 1}", -link * parent.z)
            nxt.v2pt_theory(joint, ground, parent)
            joint = nxt
        centre = joint.locatenew(f"C{i + 1}", -half * frame.z)
        centre.v2pt_theory(joint, ground, frame)
        bodies.append(me.RigidBody(f"b{i + 1}", centre, frame, m,
                                   (me.inertia(frame, i0, i0, i0), centre)))
        loads.append((centre, -m * g * ground.z))
        parent = frame
    kane = me.KanesMethod(ground, q_ind=q, u_ind=u,
                          kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)])
    kane.kanes_equations(bodies, loads)
    mass, forcing = kane.mass_matrix, kane.forcing
    derive_s = time.perf_counter() - t0

    qs, us = sp.symbols(f"q1:{n + 1}"), sp.symbols(f"u1:{n + 1}")
    plain = dict(zip(q, qs)) | dict(zip(u, us))
    rows = lambda vec: [c.xreplace(plain) for c in vec.to_matrix(ground)]  # noqa: E731
    kin = {"centres": [], "velocities": [], "angular": []}
    for b in bodies:
        kin["centres"] += rows(b.masscenter.pos_from(origin))
        kin["velocities"] += rows(b.masscenter.vel(ground))
        kin["angular"] += rows(b.frame.ang_vel_in(ground))
    return {"n": n, "mass": mass, "forcing": forcing, "q": q, "u": u,
            "constants": [g, m, i0, link, half], "plain_q": qs, "plain_u": us,
            "kinematics": kin, "derive_s": derive_s}


def _pydy_derive_main(n: int, path: str):
    """Child-process entry: derive chain-n, pickle the result to ``path``."""
    sys.setrecursionlimit(100000)             # deep sympy trees pickle recursively
    out = pydy_derive(n)
    with open(path + ".tmp", "wb") as fh:
        pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".tmp", path)


class PyDyPeer:
    """PyDy: KanesMethod equations (derived in a child process under ``budget``), code
    generated by pydy's ODEFunctionGenerator (``CythonODEFunctionGenerator`` when a C
    compiler works, else ``LambdifyODEFunctionGenerator``), solved by scipy's DOP853."""

    name = "pydy"
    description = "PyDy (sympy KanesMethod, joint coordinates), generated rhs, scipy DOP853"
    integrator = "scipy"
    repeat_build = False

    def __init__(self, budget: float = 120.0):
        self.budget = float(budget)
        self.build_time = None
        self.notes = ""
        self.build_stages = {}

    def _derive(self, n):
        fd, path = tempfile.mkstemp(suffix=f".pydy_chain{n}.pkl")
        os.close(fd)
        os.unlink(path)
        err = tempfile.TemporaryFile()
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--pydy-derive",
                                 str(n), path], stdout=subprocess.DEVNULL, stderr=err,
                                cwd=os.path.dirname(os.path.abspath(__file__)))
        try:
            proc.wait(timeout=self.budget)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            err.close()
            for leftover in (path, path + ".tmp"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
            raise PeerSkipped(f"derivation unfinished after {self.budget:g} s "
                              f"(--pydy-budget)", larger_too=True) from None
        wall = time.perf_counter() - t0
        try:
            if proc.returncode != 0 or not os.path.exists(path):
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-5:]
                raise RuntimeError(f"derivation process exited with {proc.returncode}: "
                                   + " | ".join(tail))
            sys.setrecursionlimit(max(sys.getrecursionlimit(), 100000))
            with open(path, "rb") as fh:
                out = pickle.load(fh)
        finally:
            err.close()
            if os.path.exists(path):
                os.unlink(path)
        out["child_wall_s"] = wall
        return out

    def build(self, n: int):
        import sympy as sp
        from pydy.codegen.ode_function_generators import (
            CythonODEFunctionGenerator, LambdifyODEFunctionGenerator)

        self.n = n
        eq = self._derive(n)
        self.build_stages = {"derive": eq["derive_s"],
                             "derive_process_wall": eq["child_wall_s"]}
        args = (eq["forcing"], eq["q"], eq["u"], eq["constants"])
        kwargs = dict(mass_matrix=eq["mass"], coordinate_derivatives=sp.Matrix(eq["u"]),
                      constants_arg_type="array", linear_sys_solver="numpy")
        t0 = time.perf_counter()
        self.backend, fallback = "cython", ""
        try:
            with tempfile.TemporaryDirectory(suffix=".pydy_compile") as tmp:
                f = CythonODEFunctionGenerator(*args, tmp_dir=tmp, **kwargs).generate()
        except Exception as exc:      # no Cython, no working C compiler
            fallback = f"{type(exc).__name__}: {exc}"
            t0 = time.perf_counter()
            self.backend = "lambdify"
            f = LambdifyODEFunctionGenerator(*args, **kwargs).generate()
        self.build_stages["codegen"] = time.perf_counter() - t0
        self.build_stages["codegen_backend"] = self.backend
        if fallback:
            self.build_stages["cython_failure"] = fallback
        self._f = f
        self._p = np.array([-GRAVITY[2], MASS, MASS * SIDE ** 2 / 6.0, LINK, HALF])
        y = np.concatenate([np.full(n, BEND), np.zeros(n)])
        self.build_stages["generated_rhs_reuses_its_output"] = bool(np.shares_memory(
            f(y, 0.0, self._p), f(y + 0.1, 0.0, self._p)))

        plain = list(eq["plain_q"]) + list(eq["plain_u"]) + list(eq["constants"])
        kin = eq["kinematics"]
        self._kin = sp.lambdify(plain, [kin["centres"], kin["velocities"], kin["angular"]],
                                "numpy", cse=True)
        self.y0 = np.concatenate([np.full(n, BEND), np.zeros(n)])
        self.build_time = self.build_stages["derive"] + self.build_stages["codegen"]
        self.notes = (f"derive {self.build_stages['derive']:.1f} s + codegen "
                      f"{self.build_stages['codegen']:.1f} s ({self.backend})")
        return self

    def rhs(self, t, y):
        # a copy: the generated function may hand back (and later overwrite) its buffer
        return np.array(self._f(y, t, self._p), dtype=float)

    def _kinematics(self, y):
        c, v, w = self._kin(*y, *self._p)
        return (np.asarray(c, float).reshape(self.n, 3), np.asarray(v, float).reshape(self.n, 3),
                np.asarray(w, float).reshape(self.n, 3))

    def centres(self, y):
        return self._kinematics(y)[0]

    def energy(self, y):
        c, v, w = self._kinematics(y)
        i0 = MASS * SIDE ** 2 / 6.0
        kinetic = 0.5 * MASS * float(np.sum(v * v)) + 0.5 * i0 * float(np.sum(w * w))
        return kinetic, float(-MASS * np.sum(c @ GRAVITY))


RUNNERS = {"mincoord": MinCoordPeer, "pinocchio": PinocchioPeer, "mujoco": MuJoCoPeer,
           "pydy": PyDyPeer}
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


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--pydy-derive":
        _pydy_derive_main(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: python peers.py --pydy-derive N FILE  (used by PyDyPeer)")
