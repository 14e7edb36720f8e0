"""Linear models and equilibria of mechanisms, in independent joint coordinates.

- :func:`linearize_mechanism`: (A, B, C, D) about an operating point given by joint
  coordinates and rates, with states z = [q, qd, subsystem states], inputs (joint
  efforts, named sources) and outputs (joint coordinates, rates and accelerations, body
  positions and velocities, reactions, springs', dampers' and actuators' efforts, any
  bond variable or state of the graph).
- :func:`mechanism_equilibrium`: a steady operating point (qdd = 0, subsystem states at
  rest) under given inputs, solving for coordinates, rates or inputs.
- :class:`MechanismEquilibrium`: what it found.

The bond graph of a mechanism carries maximal coordinates (every body's pose and
momenta), tied by constraints that are not dynamics. The linear model is made in
independent coordinates instead: the joint coordinates of the spanning tree; with closed
loops, the tree coordinates that remain after removing, for each independent loop
closure condition, one coordinate that it determines (chosen where the closure Jacobian
has full rank, or given by the user). The map from z to the full state is the
mechanism's own consistent-state construction (forward kinematics, loop closure by
Newton's method, rates from c = 0), and z' = [qd, qdd, subsystem rates] comes from the
state equations and :func:`~elements.analysis.dynamics.joint_accelerations`. The derivatives are
Ridders' extrapolated central differences (:func:`bondgraph.linearization.jacobian`),
each with its error estimate. Reactions are outputs: the constraint efforts at
consistent states.

Not supported yet (a ModelError says so): free bodies (a floating base), joints with a
free rotation (spherical, free: their coordinates are rotations), joint stops and
friction (their runs switch between models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError, Se
from bondgraph.bonds import component_names
from bondgraph.element import StateView
from bondgraph.errors import did_you_mean
from bondgraph.linear_model import LinearModel
from bondgraph.linearization import (
    DEFAULT_STEP, InputOverride, evaluate, jacobian, output_reader, solve_steady,
)
from bondgraph.results import SimulationResult, Status

import elements.running.closure as closure
from elements.analysis.dynamics import joint_accelerations
from elements.mechanism_model import MechanismModel
from elements.results import MechanismResult

__all__ = ["linearize_mechanism", "mechanism_equilibrium", "MechanismEquilibrium"]


@dataclass(frozen=True)
class MechanismEquilibrium:
    """A steady operating point of a mechanism (see :func:`mechanism_equilibrium`).

    Attributes
    ----------
    q, qd : dict of str to float
        Every joint coordinate and rate by port (rad or m, rad/s or m/s).
    inputs : dict of str to float
        The inputs' values (N m or N for joints, the source's unit for sources).
    states : dict of str to ndarray
        The attached subsystems' states.
    residual : float
        The largest remaining rate condition (qdd in rad/s^2 or m/s^2, subsystem rates).
    nfev : int
    """

    q: dict[str, float]
    qd: dict[str, float]
    inputs: dict[str, float]
    states: dict[str, np.ndarray]
    residual: float
    nfev: int


# -- the space of independent coordinates ----------------------------------------------------
class _Space:
    """A mechanism in independent coordinates: the driven model (drives on the ports named
    as inputs), the inputs, the independent joints, and the evaluation of z' and the
    outputs at (z, u)."""

    def __init__(self, mm: MechanismModel, inputs: Sequence[str],
                 coordinates: Sequence[str] | None, t: float):
        self.mm, self.t = mm, float(t)
        mech = mm.mechanism
        self._check_supported(mm)
        if isinstance(inputs, str):
            inputs = [inputs]
        ports = {ax.port: ax for j in mech.joints.values() for ax in j.axes}
        self.port_inputs = [n for n in inputs if n in ports]
        drives = {p: Se(f"{p}.drive", 0.0) for p in self.port_inputs}
        if drives:
            dm = mm.with_drives(drives)
        else:
            dm = mm
        self.dm = dm
        src = [f"{p}.drive" for p in self.port_inputs] + \
            [n for n in inputs if n not in ports]
        from bondgraph.linearization import _input_components
        try:
            names, where = _input_components(dm.model, src)
        except ModelError as exc:
            raise ModelError(f"{exc}; or a joint coordinate (its actuator effort): "
                             f"{', '.join(ports) or 'none'}") from None
        port_of_drive = {drives[p].name: p for p in self.port_inputs}
        self.input_names = [port_of_drive.get(n, n) for n in names]
        self.override = InputOverride(dm.model, where)
        self.ports = ports
        followers = {c.follower.name for c in mech.couplings.values()}
        self.free_joints = [j for j in mm.tree if j.n_free and j.name not in followers]
        self.independent = self._independent(coordinates)
        self.ind_ports = [ax.port for j in self.independent or () for ax in j.axes]
        owned = set(dm.mechanism_states()) | {w.name for w in dm.model.work}
        self.sub = [n for n in dm.model.state_names if n not in owned]
        self.sub_names: list[str] = []
        self.sub_idx: list[int] = []
        for n in self.sub:
            sl = dm.model.state_slices[n]
            d = sl.stop - sl.start
            self.sub_names += component_names([(n, d)])
            self.sub_idx += list(range(sl.start, sl.stop))
        self.state_names = [f"{p}.q" for p in self.ind_ports] + \
            [f"{p}.qd" for p in self.ind_ports] + self.sub_names
        self.guess: dict[str, Any] = {}

    @staticmethod
    def _check_supported(mm):
        mech = mm.mechanism
        what = []
        if mm.free_joints:
            what.append(f"free bodies ({', '.join(fj.child.name for fj in mm.free_joints)}"
                        f": a floating base)")
        rot = [j.name for j in mech.joints.values() if j.free_rotation]
        if rot:
            what.append(f"joints with a free rotation ({', '.join(rot)})")
        sw = [ax.port for j in mech.joints.values() for ax in j.axes if ax.switched]
        if sw:
            what.append(f"joint stops or friction (on {', '.join(sw)})")
        if what:
            raise ModelError(f"mechanism '{mech.name}': linearisation in joint coordinates "
                             f"does not support {'; '.join(what)} yet")

    def _independent(self, coordinates):
        """The independent joints: the user's, checked, or chosen so that the loop
        closure determines the others."""
        mm = self.mm
        joints = {j.name: j for j in self.free_joints}
        if coordinates is not None:
            bad = [c for c in coordinates if c not in joints]
            if bad:
                raise ModelError(f"coordinates {', '.join(bad)}: not joints with a "
                                 f"coordinate of their own in the spanning tree; valid: "
                                 f"{', '.join(joints) or 'none'}")
        if not mm.loop_joints:
            if coordinates is not None and set(coordinates) != set(joints):
                raise ModelError(f"mechanism '{mm.mechanism.name}' has no closed loop: its "
                                 f"independent coordinates are all of {', '.join(joints)}")
            return list(joints.values())
        self._closure_jacobian = None
        return None  # decided at the operating point (needs the configuration)

    def choose_loop_coordinates(self, q_all, coordinates):
        """Independent joints of a closed-loop mechanism at configuration ``q_all``."""
        mm = self.mm
        cols, owner = [], []
        z0 = closure._flat(self.free_joints, q_all)
        tree_q = {j.name: q_all[j.name] for j in mm.tree if j.n_free}

        def residual(z):
            q = dict(tree_q, **closure._unflat(self.free_joints, z))
            q, _ = closure.coupled(mm.mechanism, q, {})
            pose, _ = closure.forward(mm, q, {})
            return closure.closure(mm, pose, mm.loop_joints)

        h = 1e-6
        for k in range(z0.size):
            zp, zm = z0.copy(), z0.copy()
            zp[k] += h
            zm[k] -= h
            cols.append((residual(zp) - residual(zm)) / (2 * h))
        for j in self.free_joints:
            owner += [j.name] * j.n_free
        Jc = np.column_stack(cols) if cols else np.zeros((0, 0))
        sv = np.linalg.svd(Jc, compute_uv=False) if Jc.size else np.zeros(0)
        tol = 1e-8 * max(1.0, float(sv.max(initial=0.0)))
        rank = int(np.sum(sv > tol))

        def rank_of(names):
            idx = [i for i, o in enumerate(owner) if o in names]
            if not idx:
                return 0
            return int(np.linalg.matrix_rank(Jc[:, idx], tol))

        if coordinates is not None:
            dep = [j.name for j in self.free_joints if j.name not in coordinates]
            n_dep = sum(j.n_free for j in self.free_joints if j.name in dep)
            if rank_of(dep) != rank or n_dep != rank:
                raise ModelError(
                    f"coordinates {', '.join(coordinates)} are not independent coordinates "
                    f"of mechanism '{mm.mechanism.name}' here: the loops leave "
                    f"{z0.size - rank} of the {z0.size} tree coordinates free, and the "
                    f"others ({', '.join(dep) or 'none'}) must be determined by the loop "
                    f"closure (rank {rank_of(dep)} of {n_dep}, needed {rank})")
            return [j for j in self.free_joints if j.name in coordinates]
        dep: list[str] = []
        for j in reversed(self.free_joints):        # the last tree joints close the loops
            if rank_of(dep) == rank:
                break
            if rank_of(dep + [j.name]) == rank_of(dep) + j.n_free:
                dep.append(j.name)
        if rank_of(dep) != rank:
            raise ModelError(f"mechanism '{mm.mechanism.name}': no set of whole joints "
                             f"closes its loops here (closure rank {rank}); give "
                             f"coordinates=[...] explicitly")
        return [j for j in self.free_joints if j.name not in dep]

    # -- the operating point -------------------------------------------------------------
    def operating_point(self, q, qd, states, guess, coordinates):
        """(z0, x_full) for the user's joint coordinates and rates (loops closed)."""
        dm = self.dm
        x = dm.initial_state(q, qd, states=states, guess=guess)
        q_all, qd_all = {}, {}
        for j in dm.mechanism.joints.values():
            if not j.n_free:
                continue
            vals = [float(x[dm.model.state_slices[ax.state]][0]) for ax in j.axes]
            q_all[j.name] = vals[0] if j.n_free == 1 else np.array(vals)
            r = dm.coordinate_rates(x, j.name)
            qd_all[j.name] = float(r[0]) if j.n_free == 1 else np.array(r)
        if self.independent is None:
            self.independent = self.choose_loop_coordinates(q_all, coordinates)
            self.ind_ports = [ax.port for j in self.independent for ax in j.axes]
            self.state_names = [f"{p}.q" for p in self.ind_ports] + \
                [f"{p}.qd" for p in self.ind_ports] + self.sub_names
        self.guess = {j.name: q_all[j.name] for j in self.free_joints
                      if j not in self.independent}
        z = np.concatenate([closure._flat(self.independent, q_all),
                            closure._flat(self.independent, qd_all),
                            x[self.sub_idx] if self.sub_idx else np.zeros(0)])
        return z, x

    def nominal_inputs(self, x_user: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Each input's value at the operating point in the user's model: a port's
        actuators' efforts summed (the drive replaces them), a source's own value."""
        mm, t = self.mm, self.t
        u = self.override.nominal(t, x)
        s = StateView(x_user, mm.model.state_slices)
        for k, name in enumerate(self.input_names):
            if name in self.port_inputs:
                ax = self.ports[name]
                u[k] = sum(float(np.atleast_1d(mm.model.sources[a].value(t, s))[0])
                           for a in ax.attachments("actuator") if a in mm.model.sources)
        return u

    # -- evaluation ----------------------------------------------------------------------
    def state(self, z):
        """The full consistent state at z (loops closed from the operating point's
        dependent coordinates)."""
        n = len(self.ind_ports)
        q = closure._unflat(self.independent, z[:n])
        qd = closure._unflat(self.independent, z[n:2 * n])
        states = {}
        k = 2 * n
        for name in self.sub:
            sl = self.dm.model.state_slices[name]
            d = sl.stop - sl.start
            states[name] = z[k:k + d]
            k += d
        return self.dm.initial_state(q, qd, states=states, guess=self.guess)

    def evaluate(self, zu):
        """(x, evaluation, joint accelerations by joint) at z and u = zu."""
        nz = len(self.state_names)
        self.override.values[:] = zu[nz:]
        x = self.state(zu[:nz])
        ev = evaluate(self.override.model, self.t, x)
        return x, ev, joint_accelerations(self.dm, x, ev.xdot)

    def rates(self, zu, ev, acc) -> np.ndarray:
        """z' = [qd, qdd, subsystem rates] at z, u = zu."""
        n = len(self.ind_ports)
        return np.concatenate([zu[n:2 * n], closure._flat(self.independent, acc),
                               ev.xdot[self.sub_idx] if self.sub_idx else np.zeros(0)])


# -- outputs --------------------------------------------------------------------------------
_BODY = {**{a: ("position", k) for k, a in enumerate("xyz")},
         **{f"q{a}": ("quaternion", k) for k, a in enumerate("wxyz")},
         **{f"v{a}": ("velocity", k) for k, a in enumerate("xyz")},
         **{f"w{a}": ("angular_velocity", k) for k, a in enumerate("xyz")}}
_JOINT = {**{f"F{a}": ("force", k) for k, a in enumerate("xyz")},
          **{f"M{a}": ("moment", k) for k, a in enumerate("xyz")},
          **{f"F_{a}": ("force_joint", k) for k, a in enumerate(("d1", "d2", "axis"))},
          **{f"M_{a}": ("moment_joint", k) for k, a in enumerate(("d1", "d2", "axis"))}}
_PORT = ("q", "qd", "qdd", "spring", "damper", "actuator")


def _reader(space: _Space, name: str):
    """A function of (result at one point, accelerations) giving output ``name``."""
    mech = space.dm.mechanism
    stem, _, what = name.rpartition(".")
    if stem in mech.bodies and not mech.bodies[stem].is_ground and what in _BODY:
        attr, k = _BODY[what]
        return lambda res, acc: float(getattr(res.body(stem), attr)[k, 0])
    if stem in mech.joints and what in _JOINT:
        attr, k = _JOINT[what]
        return lambda res, acc: float(getattr(res.joint(stem), attr)[k, 0])
    if stem in mech.joints and what == "F":
        return lambda res, acc: float(np.linalg.norm(res.joint(stem).force[:, 0]))
    if stem in space.ports and what in _PORT:
        ax = space.ports[stem]
        j = mech.joint(ax.joint)
        if what == "qdd":
            return lambda res, acc: float(np.atleast_1d(acc[j.name])[ax.index])
        return lambda res, acc: float(np.asarray(getattr(res.joint(j.name), what))
                                      .reshape(j.n_free, -1)[ax.index, 0])
    try:
        core = output_reader(space.dm.model, name)
    except ModelError:
        bodies = [b for b in mech.bodies if not mech.bodies[b].is_ground]
        raise ModelError(
            f"no output {name!r} in mechanism '{mech.name}'"
            f"{did_you_mean(name, _all_outputs(space))}; outputs: '<port>.q', '.qd', "
            f"'.qdd', '.spring', '.damper', '.actuator' for ports "
            f"{', '.join(space.ports) or 'none'}; '<body>.x', '.y', '.z', '.vx'..'.wz', "
            f"'.qw'..'.qz' for bodies {', '.join(bodies)}; '<joint>.Fx'..'.Mz', "
            f"'.F_d1'..'.M_axis', '.F' for joints {', '.join(mech.joints)}; or the "
            f"graph's states, '<bond>.e'/'.f' and 'Se*_...' efforts") from None
    return lambda res, acc: core(res._ev)


def _all_outputs(space: _Space) -> list[str]:
    mech = space.dm.mechanism
    out = [f"{b}.{w}" for b in mech.bodies if not mech.bodies[b].is_ground for w in _BODY]
    out += [f"{j}.{w}" for j in mech.joints for w in (*_JOINT, "F")]
    out += [f"{p}.{w}" for p in space.ports for w in _PORT]
    return out


def _result(space: _Space, x: np.ndarray, ev) -> MechanismResult:
    """A one-point MechanismResult at state ``x`` (its derived outputs from ``ev``)."""
    m = space.override.model
    t = np.array([space.t])
    X = x[:, None]
    pre = {"U2": ev.U2[:, None], "c": ev.constraint_flow[:, None], "phi": ev.phi[:, None],
           "bond_values": ev.bond_values[:, None],
           "energy": np.array([m.stored_energy(x)])}
    raw = SimulationResult(
        t=t, x=X, state_names=m.state_names, status=Status.SUCCESS, message="",
        success=True, failure_time=None, nfev=0, n_steps=0, rank_deficiency=0,
        branch=ev.branch, redundancy="", _state_slices=dict(m.state_slices),
        _bond_slices=m.bond_slices, _u2_slices=dict(m.u2_slices),
        _outputs=lambda ts, xs: pre)
    res = MechanismResult(space.dm, raw, None)
    res._ev = ev
    return res


# -- the public functions -------------------------------------------------------------------
def _point(mm, q, qd, u0, states):
    """An equilibrium given as the operating point: its q, qd, inputs and states."""
    if isinstance(q, MechanismEquilibrium):
        eq = q
        return _joint_values(mm, eq.q), _joint_values(mm, eq.qd), {**eq.inputs, **dict(u0 or {})}, {**eq.states,
                                                             **dict(states or {})}
    return q, qd, u0, states


def _joint_values(mm, ports_values):
    """Values by port -> by joint (a number, or an array for several coordinates)."""
    if ports_values is None:
        return None
    out: dict[str, Any] = {}
    for j in mm.mechanism.joints.values():
        got = [p for p in (ax.port for ax in j.axes) if p in ports_values]
        if got and j.n_free > 1:
            out[j.name] = np.array([float(ports_values.get(ax.port, 0.0)) for ax in j.axes])
        elif got:
            out[j.name] = ports_values[got[0]]
    for k, v in ports_values.items():
        if k in mm.mechanism.joints and k not in out:
            out[k] = v
    return out


def linearize_mechanism(mm: MechanismModel, q: Mapping[str, Any] | MechanismEquilibrium |
                        None = None, qd: Mapping[str, Any] | None = None, *,
                        inputs: Sequence[str] = (), outputs: Sequence[str] = (),
                        u0: Mapping[str, float] | None = None,
                        states: Mapping[str, Any] | None = None, t: float = 0.0,
                        coordinates: Sequence[str] | None = None,
                        guess: Mapping[str, float] | None = None,
                        step: float | None = None) -> LinearModel:
    """Linearise a mechanism about an operating point, in independent joint coordinates.

    Parameters
    ----------
    mm : MechanismModel
    q, qd : mapping of joint name to value, or a MechanismEquilibrium
        Joint coordinates (rad or m) and rates (rad/s or m/s), as for
        :meth:`~elements.MechanismModel.initial_state` (others 0; closed loops are
        closed from ``guess``). A :class:`MechanismEquilibrium` gives q, qd, the inputs
        and the subsystem states at once.
    inputs : sequence of str
        Joint coordinates (ports: ``"J1"``, or ``"J1.angle"`` for a joint with several),
        whose actuator effort (N m or N, on the child along the axis) becomes the input
        and replaces the port's own actuators; or sources of the graph (a load's
        ``Se``, a subsystem's voltage), by element name (``name[i]`` for a component).
    outputs : sequence of str
        ``<port>.q``, ``.qd``, ``.qdd``, ``.spring``, ``.damper``, ``.actuator``;
        ``<body>.x``, ``.y``, ``.z`` (centre, global, m), ``.vx``.. (m/s), ``.wx``..
        (rad/s, global), ``.qw``..``.qz``; ``<joint>.Fx``..``.Mz`` (reaction of the
        parent on the child, global, N and N m about the joint's point on the child),
        ``.F_d1``..``.M_axis`` (joint frame), ``.F`` (magnitude); or anything
        :func:`bondgraph.linearization.output_reader` reads from the graph.
    u0 : mapping, optional
        Input values at the point (default: the replaced actuators' efforts, a source's
        own value).
    states : mapping, optional
        Subsystem states at the point (by state name).
    t : float
        Time of the point (s).
    coordinates : sequence of str, optional
        With closed loops: the joints whose coordinates are independent (default:
        chosen where the loop closure has full rank).
    step : float, optional
        First finite-difference step relative to max(1, |value|).

    Returns
    -------
    LinearModel
        States ``<port>.q`` for each independent coordinate, then ``<port>.qd``, then
        the subsystem states.

    Raises
    ------
    ModelError
        For an unknown joint, input or output (naming the valid ones), or what the
        linearisation does not support (see the module docstring).
    """
    q, qd, u0, states = _point(mm, q, qd, u0, states)
    sp = _Space(mm, inputs, coordinates, t)
    readers = [_reader(sp, o) for o in outputs]
    x_user = mm.initial_state(q, qd, states=states, guess=guess)
    z0, x = sp.operating_point(q, qd, states, guess, coordinates)
    u = sp.nominal_inputs(x_user, x)
    for k, v in (u0 or {}).items():
        if k not in sp.input_names:
            raise ModelError(f"u0 given for {k!r}, not an input"
                             f"{did_you_mean(k, sp.input_names)}; inputs: "
                             f"{', '.join(sp.input_names) or 'none'}")
        u[sp.input_names.index(k)] = float(v)
    nz = z0.size

    def f(zu):
        x, ev, acc = sp.evaluate(zu)
        res = _result(sp, x, ev) if readers else None
        return np.concatenate([sp.rates(zu, ev, acc), [r(res, acc) for r in readers]])

    zu0 = np.concatenate([z0, u])
    sp.override.values[:] = u
    sp.override.check_rates(sp.override.model.evaluate(t, x))
    f0 = f(zu0)
    J, E = jacobian(f, zu0, None if step is None else step * np.maximum(1.0, np.abs(zu0)))
    notes = ["inputs' rates taken as zero"] if inputs else []
    if mm.loop_joints:
        notes.append(f"closed loops: independent coordinates "
                     f"{', '.join(j.name for j in sp.independent)}; the others follow "
                     f"from the loop closure")
    return LinearModel(J[:nz, :nz], J[:nz, nz:], J[nz:, :nz], J[nz:, nz:],
                       tuple(sp.state_names), tuple(sp.input_names), tuple(outputs),
                       z0, u, f0[nz:], f0[:nz], float(t),
                       {"A": E[:nz, :nz], "B": E[:nz, nz:], "C": E[nz:, :nz],
                        "D": E[nz:, nz:]},
                       f"Ridders' extrapolated central differences in joint coordinates "
                       f"(first step {DEFAULT_STEP if step is None else step:g} x "
                       f"max(1, |value|); errors: the extrapolation's own estimate)",
                       tuple(notes),
                       tuple((p, i, len(sp.ind_ports) + i) for i, p in enumerate(sp.ind_ports)))


def mechanism_equilibrium(mm: MechanismModel, q: Mapping[str, Any] | None = None,
                          qd: Mapping[str, Any] | None = None, *,
                          inputs: Mapping[str, float] | None = None,
                          solve_for: Sequence[str] | None = None,
                          steady: Sequence[str] | None = None,
                          states: Mapping[str, Any] | None = None, t: float = 0.0,
                          coordinates: Sequence[str] | None = None,
                          guess: Mapping[str, float] | None = None, tol: float = 1e-9,
                          max_nfev: int = 500) -> MechanismEquilibrium:
    """A steady operating point: joint accelerations zero (and subsystem states at rest)
    under given inputs.

    Parameters
    ----------
    q, qd : mappings of joint name to value, optional
        The starting guess for the unknowns and the values of the rest (rates default
        to 0: a static equilibrium).
    inputs : mapping of input name to value, optional
        Joint efforts (by port) and sources held at these values (see
        :func:`linearize_mechanism`'s ``inputs``; one named in ``solve_for`` starts
        there).
    solve_for : sequence of str, optional
        The unknowns: ``<port>.q``, ``<port>.qd``, subsystem states, input names.
        Default: every independent coordinate ``<port>.q`` and every subsystem state.
        A gravity-loaded arm held still: ``solve_for=["J1", "J2"]`` (the efforts) with
        q given; a motor at constant speed: its ``<port>.qd`` and its current's state.
    steady : sequence of str, optional
        The conditions: ``<port>.qdd`` (zero acceleration) and subsystem states (zero
        rate). Default: every independent coordinate's qdd and every subsystem state.
    tol : float
        The largest remaining condition accepted (rad/s^2, m/s^2, state units/s).

    Returns
    -------
    MechanismEquilibrium

    Raises
    ------
    ModelError
        For unknown names (naming the valid ones), or when no equilibrium is found: the
        message names the unknowns, the conditions left largest and the solver's reason.
    """
    inputs = dict(inputs or {})
    ports = {ax.port for j in mm.mechanism.joints.values() for ax in j.axes}
    extra = [n for n in (solve_for or ()) if n not in inputs and
             (n in ports or n in mm.model.sources or
              n.rpartition("[")[0] in mm.model.sources)]
    sp = _Space(mm, list(inputs) + extra, coordinates, t)
    x_user = mm.initial_state(q, qd, states=states, guess=guess)
    z0, x = sp.operating_point(q, qd, states, guess, coordinates)
    u = sp.nominal_inputs(x_user, x)
    for k, v in inputs.items():
        u[sp.input_names.index(k)] = float(v)
    names = list(sp.state_names) + sp.input_names
    n = len(sp.ind_ports)
    default_unknowns = sp.state_names[:n] + sp.sub_names
    unknowns = list(default_unknowns if solve_for is None else solve_for)
    bad = [k for k in unknowns if k not in names]
    if bad:
        raise ModelError(f"cannot solve for {', '.join(bad)}{did_you_mean(bad[0], names)}; "
                         f"unknowns may be {', '.join(names)}")
    cond_names = [f"{p}.qdd" for p in sp.ind_ports] + sp.sub_names
    conds = list(cond_names if steady is None else steady)
    bad = [k for k in conds if k not in cond_names]
    if bad:
        raise ModelError(f"steady conditions {', '.join(bad)}{did_you_mean(bad[0], cond_names)}"
                         f" are not known; valid: {', '.join(cond_names)}")
    cidx = [n + cond_names.index(c) for c in conds]
    zu0 = np.concatenate([z0, u])
    uidx = [names.index(k) for k in unknowns]

    def put(v):
        zu = zu0.copy()
        zu[uidx] = v
        return zu

    def residual(v):
        zu = put(v)
        x, ev, acc = sp.evaluate(zu)
        return sp.rates(zu, ev, acc)[cidx]

    v, worst, nfev = solve_steady(residual, zu0[uidx], unknowns, conds, tol=tol,
                                  max_nfev=max_nfev,
                                  what=f"mechanism '{mm.mechanism.name}'")
    zu = put(v)
    x, _, _ = sp.evaluate(zu)
    q_all, qd_all = {}, {}
    for j in sp.dm.mechanism.joints.values():
        for ax in j.axes:
            q_all[ax.port] = float(x[sp.dm.model.state_slices[ax.state]][0])
        if j.n_free:
            for ax, r in zip(j.axes, np.atleast_1d(sp.dm.coordinate_rates(x, j.name))):
                qd_all[ax.port] = float(r)
    sub = {s: x[sp.dm.model.state_slices[s]].copy() for s in sp.sub}
    return MechanismEquilibrium(q_all, qd_all,
                                dict(zip(sp.input_names, map(float, zu[len(names) -
                                                                      len(sp.input_names):]))),
                                sub, worst, nfev)
