"""Kinematics and dynamics of any mechanism, computed from its bond graph model.

- :func:`forward_kinematics`: body poses (and points) for joint coordinates.
- :func:`joint_accelerations`: joint accelerations from a state and its derivative.
- :func:`direct_dynamics`: qdd for given q, qd and actuator efforts tau (at time t).
- :func:`inverse_dynamics`: tau for given q, qd, qdd (every joint with an axis; at time t).
- :func:`prescribed_motion`: prescribe the motion of some joints over time (functions or
  samples) and get the efforts that produce it and every reaction.

Both dynamics functions take ``method``: ``"auto"`` (the default) evaluates mechanisms that
:class:`~elements.analysis.fast_dynamics.FastDynamics` takes (trees of joints with axis
motions or a free rotation, free bodies, rotors, linear springs and dampers) by its compiled
recursion in joint coordinates, microseconds per call, and every other mechanism by the
bond graph model (``FastDynamics(model)`` raises a ModelError that says why it does
not take one); ``"bond_graph"`` always uses the bond graph model (milliseconds per
call). Both give the same accelerations and efforts to rounding
(tests/unit/test_fast_dynamics.py).

Direct dynamics puts an effort source (Se) with the given tau on each joint's axis.
Inverse dynamics turns those sources into flow sources (Sf) that impose the joint rates:
the causality assignment then inserts an unknown effort source at each driven axis
junction, and Eq. (15), with dU_1/dt = qdd, solves for it. The efforts are read off the
flow sources' bonds: a bicausal treatment by ordinary causality. Springs and dampers on
the axes stay in the model, so tau is the actuator's effort alone (M qdd + bias = tau).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from bondgraph import ModelError, Se, Sf, TimeFunction
from bondgraph.spatial import quat_to_matrix

from elements.kernels.blocks import Junction, _deps, _geometry
from elements.analysis.fast_dynamics import FastDynamics
from elements.mechanism import MechanismModel

METHODS = ("auto", "bond_graph")
"""The ways :func:`direct_dynamics` and :func:`inverse_dynamics` evaluate (see the module
docstring)."""

__all__ = ["forward_kinematics", "joint_accelerations", "direct_dynamics",
           "inverse_dynamics", "prescribed_motion", "PrescribedMotionResult"]


def forward_kinematics(mm: MechanismModel, q: Mapping[str, Any] | None = None,
                       points: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Positions (global, m) for joint coordinates ``q``.

    Returns every body's centre ``"<body>"`` and rotation ``"<body>.A"``, and, for
    ``points = {label: (body, point)}``, each point's position under its label.
    """
    x = mm.initial_state(q or {})
    m = mm.model
    out: dict[str, np.ndarray] = {}
    for name, b in mm.mechanism.bodies.items():
        out[name] = x[m.state_slices[b.r]].copy()
        out[f"{name}.A"] = quat_to_matrix(x[m.state_slices[b.q]])
    for label, (body, point) in (points or {}).items():
        b = mm.mechanism.body(body)
        p = b.point(point)
        out[label] = p.copy() if b.is_ground else out[body] + out[f"{body}.A"] @ p
    return out


def joint_accelerations(mm: MechanismModel, x: np.ndarray, xdot: np.ndarray
                        ) -> dict[str, Any]:
    """qdd of every joint with an axis (a number, or an array (n,) for a joint with n > 1
    coordinates): d/dt (sum_k G_k f_k) = sum_k (dG_k/dt f_k + G_k df_k/dt) of each axis
    block, with f_k the bodies' velocities, from the state and its derivative."""
    m = mm.model
    out: dict[str, Any] = {}
    for j in mm.mechanism.joints.values():
        accs = []
        for blk in j.axis_blocks():
            deps = _deps(blk.bodies)
            geo = _geometry(blk.bodies, [x[m.state_slices[d]] for d in deps],
                            [xdot[m.state_slices[d]] for d in deps])
            acc = 0.0
            for t in blk.terms:
                body = t.owner
                b = mm.mechanism.body(body)
                if t.kind is Junction.V:
                    f = x[m.state_slices[b.linear_momentum]] / mm.mass(body)
                    fd = xdot[m.state_slices[b.linear_momentum]] / mm.mass(body)
                else:
                    J = mm.inertia(body)
                    f = np.linalg.solve(J, x[m.state_slices[b.angular_momentum]])
                    fd = np.linalg.solve(J, xdot[m.state_slices[b.angular_momentum]])
                if t.constant is not None:
                    acc += float((t.constant @ fd)[0])
                else:
                    acc += float((t.G_rate(geo) @ f + t.G(geo) @ fd)[0])
            accs.append(acc)
        if accs:
            out[j.name] = _join(j, accs)
    return out


def _join(j, values) -> Any:
    """Per-coordinate values of joint ``j`` as the API gives them: a number for one
    coordinate, an array for several."""
    return float(values[0]) if j.n_free == 1 else np.array(values, dtype=float)


def _split(j, value: Any, what: str, key: str) -> list[float]:
    """A joint's value (a number, or several as a sequence or a mapping by coordinate
    name) as one number per coordinate, checked (a ModelError naming the joint; ``key``
    the unit of each, from :meth:`JointAxis.units`)."""
    if value is None:
        return [0.0] * j.n_free
    units = [ax.units()[key] for ax in j.axes]
    return [float(c) for c in np.atleast_1d(j.values(value, what, units))]


def _axis_joints(mm: MechanismModel, names, *, single: bool = False) -> list[str]:
    for n in names:
        j = mm.mechanism.joint(n)
        if not j.n_free:
            raise ModelError(f"joint '{n}' ({j.type_name}) has no axis: no effort or "
                             f"acceleration of its own")
        if single and j.n_free != 1:
            raise ModelError(f"joint '{n}' ({j.type_name}) has coordinates "
                             f"{', '.join(j.coordinate_names)}: prescribing the motion of a "
                             f"joint with several coordinates is not supported yet")
    return list(names)


class _Inputs:
    """Values the drive sources read (set before each evaluation)."""

    def __init__(self, names):
        self.value = {n: 0.0 for n in names}
        self.rate = {n: 0.0 for n in names}


def _driven(mm: MechanismModel, kind: str):
    """The mechanism assembled with Se (kind 'effort') or Sf (kind 'flow') drives on every
    joint that has an axis (for 'flow', but the followers of couplings: their rates are
    set by their leaders'), with ``mm``'s parameter values (those it keeps: the
    actuators the drives replace are gone); kept in ``mm.derived``."""
    key = f"driven_{kind}"
    if key not in mm.derived:
        followers = {c.follower.name for c in mm.mechanism.couplings.values()}
        names = [ax.port for j in mm.mechanism.joints.values() for ax in j.axes
                 if not (kind == "flow" and j.name in followers)]
        inputs = _Inputs(names)
        cls = Se if kind == "effort" else Sf
        drives = {n: cls(f"{n}.drive", TimeFunction(lambda t, n=n: inputs.value[n],
                                                    lambda t, n=n: inputs.rate[n]))
                  for n in names}
        mm.derived[key] = (mm.with_drives(drives), inputs)
    return mm.derived[key]


def direct_dynamics(mm: MechanismModel, q: Mapping[str, float], qd: Mapping[str, float],
                    tau: Mapping[str, float], *, t: float = 0.0,
                    free: Mapping[str, Mapping[str, Any]] | None = None,
                    states: Mapping[str, Any] | None = None,
                    bodies: bool = False,
                    method: Literal["auto", "bond_graph"] = "auto") -> dict[str, Any]:
    """Joint accelerations (rad/s^2 or m/s^2) for coordinates, rates and actuator efforts
    (N m or N; joints not named get 0), from the bond graph model (or, with ``method``
    "auto" where it applies, the same equations by a compiled joint-space recursion).

    The mechanism's own actuators are replaced by ``tau``; springs, dampers, loads and
    gravity act as modelled. ``t`` (s) is the time at which time-dependent sources (loads'
    and attached subsystems' TimeFunctions) are evaluated. ``free`` gives the pose and
    twist of free bodies (a floating base), as for
    :meth:`~elements.mechanism_model.MechanismModel.initial_state`. For every free body
    (every body with ``bodies=True``) the result also holds ``"<body>.a"``, its
    centre's acceleration (global, m/s^2, (3,)), and ``"<body>.alpha"``, the rate of its
    angular velocity in body coordinates (rad/s^2, (3,); equal to the body-frame
    components of the angular acceleration). ``states`` gives the states of attached subsystems by
    name (a rotor inertia's momentum, a motor's flux linkage), as for ``initial_state``.
    ``method``: ``"auto"`` or ``"bond_graph"`` (the module docstring).
    """
    fd = _fast(mm, method)
    if fd is not None and states is None and not bodies:
        got = _fast_direct(fd, q, qd, tau, free)
        if got is not None:
            return got
    model, inputs = _driven(mm, "effort")
    axes = {j.name: j for j in mm.mechanism.joints.values() if j.n_free}
    unknown = [n for n in tau if n not in axes]
    if unknown:
        raise ModelError(f"tau given for {', '.join(unknown)}: not joints with an axis; "
                         f"valid: {', '.join(axes)}")
    for n in inputs.value:
        inputs.value[n] = 0.0
        inputs.rate[n] = 0.0
    for n, value in tau.items():
        j = axes[n]
        for ax, v in zip(j.axes, _split(j, value, "effort", "effort")):
            inputs.value[ax.port] = v
    x = model.initial_state(q, qd, free=free, states=states)
    xdot = model.model.evaluate(float(t), x).xdot
    out: dict[str, Any] = dict(joint_accelerations(model, x, xdot))
    m = model.model
    for name in (model.mechanism.bodies if bodies else
                 [fj.child.name for fj in model.free_joints]):
        b = model.mechanism.body(name)
        out[f"{name}.a"] = xdot[m.state_slices[b.linear_momentum]] / model.mass(name)
        out[f"{name}.alpha"] = np.linalg.solve(model.inertia(name),
                                               xdot[m.state_slices[b.angular_momentum]])
    return out


def inverse_dynamics(mm: MechanismModel, q: Mapping[str, float], qd: Mapping[str, float],
                     qdd: Mapping[str, float], *, t: float = 0.0,
                     states: Mapping[str, Any] | None = None,
                     method: Literal["auto", "bond_graph"] = "auto") -> dict[str, float]:
    """Actuator efforts (N m or N) that produce accelerations ``qdd`` at ``q``, ``qd``, for
    every joint with an axis (all must be given), from the bond graph model with flow
    sources on the axes (rotor inertias on a driven axis add J qdd). The follower of a
    coupling is passive: its qdd (optional) must be the leader's times the ratio, its
    effort is 0, and the leader's effort carries its load (as in Pinocchio's mimic
    joints). ``t`` (s) is the time at which time-dependent sources (loads' and
    attached subsystems' TimeFunctions) are evaluated; ``states`` gives attached
    subsystems' states by name, as for ``initial_state``. ``method``: ``"auto"`` or
    ``"bond_graph"`` (the module docstring; a mechanism with free bodies always takes
    the bond graph model here: their accelerations are not given but follow)."""
    fd = _fast(mm, method)
    if fd is not None and states is None and not fd._free:
        got = _fast_inverse(fd, q, qd, qdd)
        if got is not None:
            return got
    model, inputs = _driven(mm, "flow")
    followers = {c.follower.name: c for c in mm.mechanism.couplings.values()}
    driven = [j for j in mm.mechanism.joints.values() if j.n_free and j.name not in followers]
    missing = [j.name for j in driven if j.name not in qdd]
    if missing:
        raise ModelError(f"inverse dynamics needs qdd for every joint with an axis; missing "
                         f"{', '.join(missing)} (use prescribed_motion for some joints only)")
    for name, c in followers.items():
        lead = float(qdd.get(c.leader.name, 0.0))
        if name in qdd and not c.agrees(qdd[name], lead, rate=True):
            raise ModelError(f"coupling '{c.name}': qdd of joint '{name}' ({qdd[name]:g}) is "
                             f"not {c.ratio:g} x that of '{c.leader.name}' "
                             f"= {c.expected(lead, rate=True):g}; give the leader's only")
    acc = {}
    for j in driven:
        rates = _split(j, qd.get(j.name), "rate", "qd")
        for ax, v, a in zip(j.axes, rates, _split(j, qdd[j.name], "acceleration", "qdd")):
            inputs.value[ax.port] = v
            inputs.rate[ax.port] = acc[ax.port] = a
    x = model.initial_state(q, qd, states=states)
    ev = model.model.evaluate(float(t), x)
    out: dict[str, Any] = {}
    for j in driven:
        efforts = []
        for ax in j.axes:
            e, _ = model.model.bond_index(f"{ax.port}.drive.b")
            efforts.append(float(ev.bond_values[e][0]) + _rotor_inertia(mm, ax) *
                           acc[ax.port])
        out[j.name] = _join(j, efforts)
    for name, c in followers.items():   # passive: its load reaches the leader's effort
        out[name] = 0.0
    return out


def _fast(mm: MechanismModel, method: str) -> FastDynamics | None:
    """The model's FastDynamics for ``method`` "auto" where it takes the mechanism (made
    once, kept on the model), else None; a ModelError for an unknown method."""
    if method not in METHODS:
        raise ModelError(f"method {method!r}; valid: {', '.join(map(repr, METHODS))}")
    if method != "auto" or mm.drives or mm.locks:
        return None
    if "fast" not in mm.derived:
        try:
            fd = FastDynamics(mm)
        except ModelError:   # a mechanism it does not take (FastDynamics(mm) says why):
            fd = None        # the bond graph model (the reference) evaluates instead
        mm.derived["fast"] = fd
    return mm.derived["fast"]


def _fill(fd: FastDynamics, values: Any, out: np.ndarray, column: int) -> bool:
    """Write joint values by name into ``out`` (column 0 of the joint's index: q, 1: the
    rates); False for a name or value the fast path does not read (the bond graph path
    then checks it and names what is wrong)."""
    if values is None:
        return True
    if not isinstance(values, Mapping):
        return False
    index = fd._coordinate_of
    for name, value in values.items():
        i = index.get(name)
        if i is None:
            several = fd._coordinates_of.get(name)
            if several is None or isinstance(value, (str, bytes, Mapping)):
                return False
            try:
                v = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                return False
            if v.shape != (several[2],) or not np.isfinite(v).all():
                return False
            out[several[column]:several[column] + several[2]] = v
            continue
        if type(value) is not float:
            if isinstance(value, (str, bytes)):
                return False
            try:
                v = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                return False
            if v.shape != ():
                return False
            value = float(v)
        if not math.isfinite(value):
            return False
        out[i[column]] = value
    return True


def _fast_direct(fd: FastDynamics, q, qd, tau, free) -> dict[str, Any] | None:
    """direct_dynamics by FastDynamics, or None where the inputs need the bond graph
    path (its checks and messages)."""
    from bondgraph.spatial import matrix_to_quat

    from elements.joints.free import center_state
    from elements.running.closure import start_of
    Q, V, T = fd._rest_q.copy(), np.zeros(fd.n_v), np.zeros(fd.n_v)
    if not (_fill(fd, q, Q, 0) and _fill(fd, qd, V, 1) and _fill(fd, tau, T, 1)):
        return None
    if free is not None and (not isinstance(free, Mapping) or
                             any(n not in fd._free for n in free)):
        return None
    at = {}
    for n in fd._free:
        R, pos, w, v = center_state(n, start_of(fd.mm.mechanism, n, free))   # (checked)
        iq = fd.coordinate_names.index(f"{n}.x")
        iv = at[n] = fd.velocity_names.index(f"{n}.vx")
        Q[iq:iq + 3], Q[iq + 3:iq + 7] = pos, matrix_to_quat(R)
        V[iv:iv + 3], V[iv + 3:iv + 6] = v, R.T @ w
    qdd = fd.direct_dynamics(Q, V, T)
    out: dict[str, Any] = {name: float(qdd[iv]) for name, (_, iv) in
                           fd._coordinate_of.items()}
    for name, (_, iv, n) in fd._coordinates_of.items():
        out[name] = qdd[iv:iv + n].copy()
    for n, iv in at.items():
        out[f"{n}.a"] = qdd[iv:iv + 3].copy()
        out[f"{n}.alpha"] = qdd[iv + 3:iv + 6].copy()
    return out


def _fast_inverse(fd: FastDynamics, q, qd, qdd) -> dict[str, float] | None:
    """inverse_dynamics by FastDynamics (no free bodies), or None where the inputs need
    the bond graph path."""
    Q, V, A = fd._rest_q.copy(), np.zeros(fd.n_v), np.full(fd.n_v, np.nan)
    if not (_fill(fd, q, Q, 0) and _fill(fd, qd, V, 1) and _fill(fd, qdd, A, 1)):
        return None
    if not np.isfinite(A).all():
        return None                    # (a joint's qdd missing: the error names it)
    tau = fd.inverse_dynamics(Q, V, A)
    out: dict[str, Any] = {name: float(tau[iv]) for name, (_, iv) in
                           fd._coordinate_of.items()}
    for name, (_, iv, n) in fd._coordinates_of.items():
        out[name] = tau[iv:iv + n].copy()
    return out


def _rotor_inertia(mm: MechanismModel, axis) -> float:
    """The rotor inertias on a coordinate's port, summed (kg m^2 or kg; a flow drive
    leaves them out of the driven model, so their effort J qdd is added to the
    drive's)."""
    return sum(mm.parameters[f"{stem}.inertia"] for stem in axis.attachments("rotor"))


class PrescribedMotionResult:
    """A mechanism result under prescribed joint motion, with the efforts that drive it.

    Attributes
    ----------
    result : MechanismResult
        The whole motion, reactions and energies.
    efforts : dict of str to ndarray (n,)
        The actuator effort of each driven joint (N m or N) over time.
    """

    def __init__(self, result, efforts):
        self.result = result
        self.efforts = efforts
        self.t = result.t


def _motion(spec, name):
    if isinstance(spec, tuple) and len(spec) == 3 and all(callable(f) for f in spec):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2:
        from scipy.interpolate import CubicSpline
        ts, qs = (np.asarray(a, dtype=float) for a in spec)
        if ts.ndim != 1 or ts.shape != qs.shape or ts.size < 4 or np.any(np.diff(ts) <= 0):
            raise ModelError(f"motion of '{name}': samples must be (t, q) with the same length "
                             f">= 4 and increasing t")
        cs = CubicSpline(ts, qs)
        d1, d2 = cs.derivative(1), cs.derivative(2)
        return (lambda t: float(cs(t)), lambda t: float(d1(t)), lambda t: float(d2(t)))
    raise ModelError(f"motion of '{name}': give (q(t), qd(t), qdd(t)) callables or samples "
                     f"(t, q)")


def prescribed_motion(mm: MechanismModel, motion: Mapping[str, Any],
                      t_span: tuple[float, float], *, q0: Mapping[str, float] | None = None,
                      qd0: Mapping[str, float] | None = None, **simulate_kwargs: Any
                      ) -> PrescribedMotionResult:
    """Prescribe the motion of some joints and simulate the rest.

    Parameters
    ----------
    motion : mapping of joint name to (q(t), qd(t), qdd(t)) callables or samples (t, q)
        Samples are interpolated by a cubic spline (its derivatives give qd, qdd).
    q0, qd0 : mappings, optional
        Initial coordinates and rates of the joints not prescribed.
    simulate_kwargs
        Passed to :meth:`MechanismModel.simulate` (t_eval, rtol, ...).
    """
    _axis_joints(mm, motion, single=True)
    for c in mm.mechanism.couplings.values():
        if c.follower.name in motion:
            raise ModelError(f"joint '{c.follower.name}' follows coupling '{c.name}': its "
                             f"motion is set by joint '{c.leader.name}'; prescribe the "
                             f"leader's")
    fns = {n: _motion(spec, n) for n, spec in motion.items()}
    drives = {n: Sf(f"{n}.drive", TimeFunction(f[1], f[2])) for n, f in fns.items()}
    model = mm.with_drives(drives)
    t0 = float(t_span[0])
    q = dict(q0 or {})
    qd = dict(qd0 or {})
    for n, f in fns.items():
        q[n], qd[n] = f[0](t0), f[1](t0)
    result = model.simulate(t_span, q, qd, **simulate_kwargs)
    efforts = {n: np.asarray(result.raw.effort(f"{n}.drive.b"), dtype=float) +
               _rotor_inertia(mm, mm.mechanism.joint(n).axis()) *
               np.array([fns[n][2](t) for t in result.t])
               for n in fns}
    return PrescribedMotionResult(result, efforts)
