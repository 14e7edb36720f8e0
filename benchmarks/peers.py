"""Peers for chain-N, run side by side with ours, and a small scipy integration loop.

Every peer exposes the same interface (class attribute ``name``, ``build(n)``, then
``rhs(t, y)`` returning a fresh array, ``y0``, ``centres(y)`` (N, 3) and
``energy(y)`` -> (kinetic, potential)), so run.py times them all the same way: scipy's
DOP853 at the tolerances of our run, checked against the common reference before the
timing is reported. A peer with ``integrator = "own"`` (MuJoCo, Exudyn) gives
``match_step``, ``simulate(span, grid)`` and ``evaluation()`` instead of ``rhs``.

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
- ``exudyn``: Exudyn in redundant coordinates (rigid bodies with Euler-parameter nodes,
  revolute joints as constraints, Lagrange multipliers), its own implicit
  generalized-alpha solver (``mbs.SolveDynamic``, Exudyn's defaults, sparse linear
  solver) at a fixed step (``integrator = "own"``): the largest of ``ExudynPeer.STEPS``
  (0.01 s halved down to 9.8e-6 s) at which body 1's and body N's final centres are
  within ``match_tol`` (1e-6 m) of the reference and the energy drift within
  ``energy_tol`` (run.py's --energy-tol). A row that would take longer than ``budget``
  seconds (step search, check and timed runs) is skipped (``PeerSkipped``), and longer
  chains are not tried.

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
# Exudyn
# ---------------------------------------------------------------------------------------
class ExudynPeer:
    """chain-N in Exudyn's redundant coordinates, its implicit generalized-alpha solver at a
    fixed step matched to the reference.

    Each cube is a rigid body (``mbs.CreateRigidBody``: a ``NodeRigidBodyEP`` node at the
    centre of mass, 3 displacements and 4 Euler parameters, plus the Euler-parameter
    constraint; ``ObjectRigidBody`` with mass 1 kg and the isotropic inertia m s^2 / 6)
    with gravity as a ``LoadMassProportional`` on it. The model is defined in the straight
    reference configuration (every joint angle zero): body i's reference centre at
    (0, 0, -0.2 (i-1) - 0.1), joint i (``mbs.CreateRevoluteJoint``, an
    ``ObjectJointRevoluteZ`` with its markers' frames turned onto the axis) at
    (0, 0, -0.2 (i-1)) about x (odd i) or y (even i). The bent start (every joint at BEND)
    is given to the nodes as initial displacements and rotations from the forward
    kinematics of mincoord.Chain; the initial velocities are zero.

    The solver is ``mbs.SolveDynamic`` with Exudyn's defaults for the generalized-alpha
    method (index-3 constraints, spectral radius 0.9, modified Newton with relative
    tolerance 1e-8) and its sparse linear solver (``EigenSparse``; the dense default is
    about 100 times slower at N = 100). Its step is fixed (Exudyn's automatic step-size
    control is for its explicit solvers only): the largest of ``STEPS`` at which the final
    centres of body 1 and body N are within ``match_tol`` of the reference and the energy
    drift, sampled every 0.1 s as run.py checks it, within ``energy_tol``
    (``match_step``). The energy usually decides: the method is second order in both, but
    at N = 20 the centres match 1e-6 m at 1.6e-4 s while the drift needs 3.9e-5 s to
    stay below 1e-6 (spectral radius 1, or the trapezoidal index-2 variant, do not do
    better). ``budget`` bounds the wall time of the whole row (the step search, the
    check run and ``repeat`` timed runs): when the next halving, or the runs at the matched
    step, would go past it, the row is skipped (``PeerSkipped``); every solve also runs
    under Exudyn's own CPU-time limit (``exudyn.special.solver.timeout``) set to what is
    left of the budget.

    State y = (ODE2 coordinates, their velocities) as Exudyn stores them (displacements
    and Euler parameters relative to the reference configuration). ``simulate`` writes
    the states at the grid times to a binary solution file in a private temporary
    directory and reads them back. nfev counts Newton iterations (one residual each),
    steps the time steps. ``evaluation`` times one ``ComputeNewtonResidual`` of an
    initialised solver at y0 (the generalized-alpha residual: inertia terms, ODE2 right-hand
    side and constraints; no Jacobian, no linear solve). ``centres`` and ``energy`` read
    positions, velocities and angular velocities from Exudyn's own node outputs.
    """

    name = "exudyn"
    description = ("Exudyn rigid bodies (Euler parameters) + revolute joints, implicit "
                   "generalized-alpha with a fixed step matched to the reference")
    integrator = "own"
    repeat_build = True
    STEPS = tuple(1e-2 / 2 ** k for k in range(11))   # 0.01 (the reference grid) .. 9.8e-6 s

    def __init__(self, match_tol: float = 1e-6, energy_tol: float = 1e-6,
                 budget: float = 120.0, repeat: int = 3):
        self.match_tol = float(match_tol)
        self.energy_tol = float(energy_tol)
        self.budget = float(budget)
        self.repeat = int(repeat)
        self.notes = ""
        self.build_stages = {}
        self._row_start = None
        self._last_run_s = None
        self._tmp = None

    def build(self, n: int):
        import exudyn as exu
        from exudyn.utilities import RigidBodyInertia

        self.exu = exu
        self.n = n
        t0 = time.perf_counter()
        rotations, _, _, centres, _ = Chain(n).kinematics(np.full(n, BEND))   # the bent start
        self.sc = exu.SystemContainer()
        mbs = self.mbs = self.sc.AddSystem()
        inertia = RigidBodyInertia(mass=MASS, inertiaTensor=np.eye(3) * MASS * SIDE ** 2 / 6.0)
        parent = mbs.CreateGround(referencePosition=[0.0, 0.0, 0.0])
        self.bodies, self.nodes = [], []
        for i in range(n):                                 # body i+1, joint i+1
            joint = np.array([0.0, 0.0, -LINK * i])
            ref = joint + np.array([0.0, 0.0, -HALF])
            body = mbs.CreateRigidBody(inertia=inertia, referencePosition=ref,
                                       initialDisplacement=centres[i] - ref,
                                       initialRotationMatrix=rotations[i],
                                       gravity=list(GRAVITY), show=False)
            axis = [1.0, 0.0, 0.0] if i % 2 == 0 else [0.0, 1.0, 0.0]
            mbs.CreateRevoluteJoint(itemNumbers=[parent, body], position=joint, axis=axis,
                                    useGlobalFrame=True, show=False)
            self.bodies.append(body)
            self.nodes.append(mbs.GetObject(body)["nodeNumber"])
            parent = body
        t1 = time.perf_counter()
        mbs.Assemble()
        t2 = time.perf_counter()
        self.build_stages = {"construct": t1 - t0, "assemble": t2 - t1}
        initial = exu.ConfigurationType.Initial
        q0 = np.array(mbs.systemData.GetODE2Coordinates(configuration=initial))
        v0 = np.array(mbs.systemData.GetODE2Coordinates_t(configuration=initial))
        self.m = q0.size
        self.y0 = np.concatenate([q0, v0])
        if self.m != 7 * n or mbs.systemData.AEsize() != 6 * n:
            raise RuntimeError(f"unexpected Exudyn system: {self.m} ODE2 coordinates, "
                               f"{mbs.systemData.AEsize()} algebraic (expected {7 * n}, {6 * n})")
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="exudyn_peer_")
        self.dt = self.STEPS[0]
        return self

    def _settings(self, span, write_period=None):
        exu = self.exu
        s = exu.SimulationSettings()
        ti = s.timeIntegration
        ti.endTime = float(span)
        ti.numberOfSteps = int(round(span / self.dt))
        ti.verboseMode = 0
        s.linearSolver.solverType = exu.LinearSolverType.EigenSparse
        s.solution.sensors.active = False
        s.solution.file.write = write_period is not None
        if write_period is not None:
            f = s.solution.file
            f.name = os.path.join(self._tmp.name, "chain.sol")
            f.binary = True
            s.solution.precision = 16                 # >= 8: doubles in the binary file
            f.writePeriod = float(write_period)
            f.writeInitialValues = True
            for k in ("accelerations", "algebraicCoordinates", "dataCoordinates",
                      "ODE1Velocities"):
                setattr(f.export, k, False)
            f.export.velocities = True
        return s

    def _remaining(self):
        if self._row_start is None:
            return self.budget
        return self.budget - (time.perf_counter() - self._row_start)

    def set_step(self, dt: float):
        self.dt = float(dt)

    def simulate(self, span, grid):
        """(t, Y (2m, len(t)), nfev, steps) of one run from y0 at the current step; the grid
        must be uniform and a multiple of the step."""
        from exudyn.utilities import LoadBinarySolutionFile
        exu = self.exu
        grid = np.asarray(grid, dtype=float)
        period = float(grid[1] - grid[0])
        counts = np.diff(grid) / self.dt
        if grid[0] != 0.0 or np.any(np.abs(counts - np.rint(counts)) > 1e-6) or \
                np.any(np.abs(np.diff(grid) - period) > 1e-12) or abs(grid[-1] - span) > 1e-12:
            raise ValueError(f"grid is not uniform from 0 to {span:g} s in multiples of the "
                             f"step {self.dt:g} s")
        if self._row_start is None:
            self._row_start = time.perf_counter()
        left = self._remaining()
        if left <= 0:
            raise PeerSkipped(f"past its {self.budget:g} s budget (--exudyn-budget)",
                              larger_too=True)
        s = self._settings(span, period)
        if os.path.exists(s.solution.file.name):
            os.unlink(s.solution.file.name)
        old = exu.special.solver.timeout
        exu.special.solver.timeout = left
        t0 = time.perf_counter()
        try:
            self.mbs.SolveDynamic(s)
        except Exception:
            solver = self.mbs.sys.get("dynamicSolver")
            if solver is not None and solver.output.simulationTimeout:
                raise PeerSkipped(f"a run at dt = {self.dt:.3g} s went past the "
                                  f"{self.budget:g} s budget (--exudyn-budget)",
                                  larger_too=True) from None
            raise
        finally:
            exu.special.solver.timeout = old
        self._last_run_s = time.perf_counter() - t0
        solver = self.mbs.sys["dynamicSolver"]
        if solver.output.simulationTimeout:
            raise PeerSkipped(f"a run at dt = {self.dt:.3g} s went past the {self.budget:g} s "
                              f"budget (--exudyn-budget)", larger_too=True)
        data = LoadBinarySolutionFile(s.solution.file.name, verbose=False)["data"]
        ts, Y = data[:, 0], data[:, 1:1 + 2 * self.m]
        if ts.size != grid.size or np.abs(ts - grid).max() > 1e-9:
            raise RuntimeError(f"solution file times {ts[:3]}... do not match the grid")
        steps = int(round(span / self.dt))
        return grid, Y.T.copy(), int(solver.it.newtonStepsCount), steps

    def _drift(self, Y):
        """Relative energy drift of the states Y (2m, k), as run.py measures it."""
        en = np.array([self.energy(Y[:, k]) for k in range(Y.shape[1])])
        scale = max(float(np.abs(en).max()), 1e-300)
        bal = en.sum(axis=1)
        return float(np.abs(bal - bal[0]).max() / scale)

    def match_step(self, span, first_ref, last_ref, tol=None):
        """Set the largest step of STEPS at which the final centres of body 1 and body N
        are both within ``tol`` of the reference and the energy drift (sampled every
        0.1 s, as run.py checks it) is within ``energy_tol``; returns [(step, distance,
        drift)] as tried. Raises PeerSkipped when the next step, or the row's remaining
        runs at the matched one, would not fit ``budget``. If no step matches, the
        smallest stays set and the caller's check decides."""
        tol = self.match_tol if tol is None else tol
        self._row_start = time.perf_counter()
        coarse = np.linspace(0.0, span, int(round(span / 0.1)) + 1)
        tried = []
        for k, dt in enumerate(self.STEPS):
            if k > 0:
                # the next run costs about twice the last; the row then needs the check
                # run and `repeat` timed runs at that step
                need = 2.0 * self._last_run_s * (2 + self.repeat)
                if need > self._remaining():
                    dt0, err0, drift0 = tried[-1]
                    raise PeerSkipped(
                        f"at dt = {dt0:.3g} s: {err0:.2g} m from the reference, energy "
                        f"drift {drift0:.2g} (needs {tol:g} m, {self.energy_tol:g}); a "
                        f"smaller step would take the row past its {self.budget:g} s "
                        f"budget (--exudyn-budget)", larger_too=True)
            self.set_step(dt)
            _, Y, _, _ = self.simulate(span, coarse)
            c = self.centres(Y[:, -1])
            err = float(max(np.linalg.norm(c[0] - first_ref), np.linalg.norm(c[-1] - last_ref)))
            tried.append((dt, err, self._drift(Y)))
            if err <= tol and tried[-1][2] <= self.energy_tol:
                break
        matched = tried[-1][1] <= tol and tried[-1][2] <= self.energy_tol
        if matched and self._last_run_s * (1 + self.repeat) > self._remaining():
            raise PeerSkipped(f"matched at dt = {self.dt:.3g} s, but the check and "
                              f"{self.repeat} timed run(s) would take the row past its "
                              f"{self.budget:g} s budget (--exudyn-budget)", larger_too=True)
        by_position = next((t[0] for t in tried if t[1] <= tol), None)
        self.notes = f"gen.-alpha dt = {self.dt:.3g} s"
        if not matched:
            self.notes += (f" (smallest tried; misses {tol:g} m / {self.energy_tol:g}: "
                           f"{tried[-1][1]:.2g} m, drift {tried[-1][2]:.2g})")
        elif by_position is not None and by_position > self.dt:
            self.notes += f" (energy drift; position alone: {by_position:.3g} s)"
        return tried

    def evaluation(self):
        """One generalized-alpha residual (ComputeNewtonResidual) of an initialised solver
        at y0, for the per-derivative timing."""
        solver = self.exu.MainSolverImplicitSecondOrder()
        s = self._settings(1.0)
        if not solver.InitializeSolver(self.mbs, s):
            raise RuntimeError("Exudyn: InitializeSolver failed")
        self._probe_solver = (solver, s)          # keep both alive while timed
        mbs = self.mbs
        return lambda: solver.ComputeNewtonResidual(mbs, s)

    def _state(self, y):
        """Positions, velocities and angular velocities (N, 3) of the nodes at state y."""
        exu, mbs, m = self.exu, self.mbs, self.m
        cur = exu.ConfigurationType.Current
        mbs.systemData.SetODE2Coordinates(np.asarray(y[:m], dtype=float), configuration=cur)
        mbs.systemData.SetODE2Coordinates_t(np.asarray(y[m:], dtype=float), configuration=cur)
        ovt = exu.OutputVariableType
        out = [np.array([mbs.GetNodeOutput(nd, var, configuration=cur) for nd in self.nodes])
               for var in (ovt.Position, ovt.Velocity, ovt.AngularVelocity)]
        return out

    def centres(self, y):
        return self._state(y)[0]

    def energy(self, y):
        c, v, w = self._state(y)
        i0 = MASS * SIDE ** 2 / 6.0            # isotropic: |w| is the same in any frame
        kinetic = 0.5 * MASS * float(np.sum(v * v)) + 0.5 * i0 * float(np.sum(w * w))
        return kinetic, float(-MASS * np.sum(c @ GRAVITY))


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
           "pydy": PyDyPeer, "exudyn": ExudynPeer}
OPTIONAL = ("pinocchio", "mujoco", "pydy", "exudyn")


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
