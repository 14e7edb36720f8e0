"""Consistent states of an assembled mechanism: forward kinematics along the spanning tree,
loop closure (Gauss-Newton on the loop joints' closure residuals), the rates from c = 0,
the check that every joint holds, the constraint Jacobian, and the projection of a state
onto Phi = 0 and c = 0.

The functions take a :class:`~elements.mechanism_model.MechanismModel` (read through its
attributes: ``mechanism``, ``model``, ``graph``, ``tree``, ``loop_joints``, ``blocks``,
``block_of``, ``source_of``, ``mass``, ``inertia``, ``state_from_poses``); the model's
methods :meth:`~elements.mechanism_model.MechanismModel.initial_state`,
:meth:`~elements.mechanism_model.MechanismModel.project` and
:meth:`~elements.mechanism_model.MechanismModel.constraint_jacobian` are the public
entry points.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.spatial import axis_angle_matrix, matrix_to_quat, quat_to_matrix

from elements.kernels.blocks import _deps, _geometry
from elements.kernels.geometry import Geometry

__all__ = ["AssemblyError", "CLOSED_TOL"]


CLOSED_TOL = 1e-8
"""Largest closure residual (m, or an entry of a rotation matrix) an initial state may
leave at a joint."""


class AssemblyError(ModelError):
    """Fires when a consistent initial state cannot be found (Newton on Phi = 0 did not
    converge, or the coordinates given do not fit the mechanism)."""


# -- initial configurations ----------------------------------------------------------------
def checked_coordinates(mm, q, qd, free):
    """The user's joint coordinates, rates and free-body states, checked and in the form
    each joint takes (see :meth:`Joint.initial_values`)."""
    mech = mm.mechanism
    for d, what in ((q, "coordinates"), (qd, "rates")):
        if d is not None and not isinstance(d, Mapping):
            raise ModelError(f"initial joint {what} must be a mapping of joint names to "
                             f"values, e.g. {{'J1': 0.3}}; got {d!r}")
    q = dict(q or {})
    qd = dict(qd or {})
    for d, what in ((q, "coordinate"), (qd, "rate")):
        for name in d:
            if name not in mech.joints:
                raise ModelError(f"initial {what} given for unknown joint '{name}'; "
                                 f"joints: {', '.join(mech.joints)}")
    for name in set(q) | set(qd):        # checked, in the form the joint takes
        qv, qdv = mech.joints[name].initial_values(q.get(name), qd.get(name))
        for d, v in ((q, qv), (qd, qdv)):
            if v is not None:
                d[name] = v
    free = dict(free or {})
    on = {fj.child.name: fj for fj in mm.free_joints}
    unknown = [n for n in free if n not in on]
    if unknown:
        raise ModelError(f"free-body state given for {', '.join(unknown)}, which are not "
                         f"free bodies; free bodies: {', '.join(on) or 'none'}")
    for body, fj in on.items():           # a free body's start: its joint's q and qd
        if fj.name in q or fj.name in qd:  # (an explicit joint's own values)
            if body in free:
                raise ModelError(f"free body '{body}': its start is given twice, as "
                                 f"free['{body}'] and as the q or qd of its free joint "
                                 f"'{fj.name}'; give one of them")
            continue
        spec = start_of(mech, body, free)
        if spec is not None:
            q[fj.name], qd[fj.name] = fj.center_values(spec)
    return q, qd


def initial_configuration(mm, q, qd, free, guess, tol, max_iterations, t=0.0):
    """(pose, twist, coords) of a consistent initial state: loops closed, every joint
    checked, rates that flow sources prescribe taken (read at time ``t``, s; see
    :meth:`MechanismModel.initial_state`)."""
    q, qd = checked_coordinates(mm, q, qd, free)
    qd = with_prescribed_rates(mm, qd, t)
    q, qd = coupled(mm.mechanism, q, qd)
    if mm.loop_joints:
        solve_for = [j for j in mm.tree if j.n_free and j.name not in q]
        q = close_loops(mm, q, solve_for, tol, max_iterations, _guesses(mm, guess))
        given = dict(qd)
        qd, c = close_rates(mm, q, given, [j for j in solve_for if j.name not in given])
        if c > 1e-9 * max([1.0] + [float(np.abs(v).max(initial=0.0)) for v in qd.values()]):
            # the rates left at 0 (of joints whose coordinates were given) do not fit the
            # rates given (a prescribed one): solve for every rate not given instead
            qd, _ = close_rates(mm, q, given, [j for j in mm.tree
                                               if j.n_free and j.name not in given])
    pose, twist = forward(mm, q, qd)
    check_closed(mm, pose)
    _check_coupled(mm.mechanism, {**{j: 0.0 for j in mm.mechanism.joints}, **q})
    coords = {}
    for j in mm.mechanism.joints.values():
        if j.n_free:
            if j.name in q:
                coords[j.name] = j.port_values(q[j.name])
            else:
                A_a, r_a = pose[j.parent.name]
                A_b, r_b = pose[j.child.name]
                coords[j.name] = j.coordinate(A_a, r_a, A_b, r_b)
    return pose, twist, coords


def prescribed_rates(mm, t: float = 0.0) -> dict[str, dict[int, tuple[str, float]]]:
    """The coordinate rates that flow sources fix: joint name -> {coordinate index:
    (source name, its flow at time ``t``)}, for every Sf bonded to a coordinate's axis
    1-junction (whose flow is the coordinate's rate: a subsystem's velocity source, a
    prescribed motion's drive) whose flow does not depend on the state."""
    g, m = mm.graph, mm.model
    out: dict[str, dict[int, tuple[str, float]]] = {}
    for j in mm.mechanism.joints.values():
        for ax in j.axes:
            if ax.junction not in g:
                continue
            for b in g.bonds_of(ax.junction):
                el = g.element(b.other(ax.junction))
                law = m.sources.get(el.name) if el.kind == "Sf" else None
                if law is not None and not law.state_dependent:
                    out.setdefault(j.name, {})[ax.index] = (
                        el.name, float(np.asarray(law.value(t, None))[0]))
    return out


def with_prescribed_rates(mm, qd: dict, t: float) -> dict:
    """The user's rates ``qd`` (checked, by joint) with those flow sources prescribe
    (:func:`prescribed_rates` at time ``t``) filled in; a ModelError naming the joint and
    the source for a rate given that contradicts one."""
    fixed = prescribed_rates(mm, t)
    if not fixed:
        return qd
    qd = dict(qd)
    for name, by_index in fixed.items():
        j = mm.mechanism.joints[name]
        given = qd.get(name)
        rates = np.zeros(j.n_free) if given is None else \
            np.array(np.atleast_1d(np.asarray(given, dtype=float)), dtype=float)
        for i, (source, flow) in by_index.items():
            if given is not None and not abs(rates[i] - flow) <= 1e-12 * max(1.0, abs(flow)):
                what = "rate" if j.n_free == 1 else f"rate of coordinate '{j.axes[i].name}'"
                raise ModelError(
                    f"joint '{name}': the initial {what} {rates[i]:g} {j.axes[i].unit}/s "
                    f"contradicts flow source '{source}' on its axis, which prescribes "
                    f"{flow:g} {j.axes[i].unit}/s at t = {t:g} s; leave the rate out (it "
                    f"is taken from the source) or give {flow:g}")
            rates[i] = flow
        qd[name] = float(rates[0]) if j.n_free == 1 else rates
    return qd


def check_rates(mm, x: np.ndarray, t: float) -> None:
    """An AssemblyError when the velocities of state ``x`` violate a constraint (c != 0
    at time ``t``: a flow source, through a transformer or on a body, that the rates
    given do not follow), naming the joint whose constraint it is. Trees' forward
    kinematics, loop closure and :func:`with_prescribed_rates` leave c = 0 to rounding,
    so only graphs with flow sources are evaluated."""
    if not any(el.kind == "Sf" for el in mm.graph.elements.values()) or not mm.model.n_u2:
        return
    ev = mm.model.evaluate(float(t), x, redundancy_ok=True)
    c = np.asarray(ev.constraint_flow, dtype=float)
    speed = max([1.0] + [float(np.abs(w).max()) for w, _ in mm.twists(x).values()] +
                [float(np.abs(v).max()) for _, v in mm.twists(x).values()])
    tol = 1e-9 * speed
    worst = np.flatnonzero(~(np.abs(c) <= tol))
    if not worst.size:
        return
    k = int(worst[np.argmax(np.abs(c[worst]))])
    source = next(n for n, sl in mm.model.u2_slices.items() if sl.start <= k < sl.stop)
    junction = next((s.junction for s in mm.causal.constraint_sources if s.name == source),
                    source)
    joint = next((j for j in mm.mechanism.joints if junction.startswith(f"{j}.")), None)
    where = f"joint '{joint}' (constraint '{source}')" if joint else f"constraint '{source}'"
    raise AssemblyError(
        f"mechanism '{mm.mechanism.name}': the initial rates violate {where} at t = {t:g} "
        f"s: its constraint flow is {c[k]:.3g} (a flow source the rates given do not "
        f"follow); give rates that agree with it")


def _guesses(mm, guess) -> dict:
    """The user's starting guesses for loop closure, by joint name, checked as initial
    coordinates (a number, or several for a joint with several coordinates)."""
    out = {}
    for name, v in dict(guess or {}).items():
        if name not in mm.mechanism.joints:
            raise ModelError(f"guess given for unknown joint '{name}'; joints: "
                             f"{', '.join(mm.mechanism.joints)}")
        out[name] = mm.mechanism.joints[name].initial_values(v, None)[0]
    return out


def _flat(joints, values) -> np.ndarray:
    """The coordinates of ``joints`` (from ``values``, by name) as one vector."""
    return np.concatenate([np.atleast_1d(np.asarray(j.port_values(values[j.name]),
                                                    dtype=float))
                           for j in joints]) if joints else np.zeros(0)


def _unflat(joints, z) -> dict:
    """Coordinates by joint name from one vector (a number for a one-coordinate joint)."""
    out, k = {}, 0
    for j in joints:
        n = j.n_free
        out[j.name] = float(z[k]) if n == 1 else np.array(z[k:k + n], dtype=float)
        k += n
    return out


def _coupling_order(mech) -> list:
    """The couplings, each after the one that sets its leader (a follower may lead
    another coupling); an AssemblyError for couplings that form a cycle."""
    pending = list(mech.couplings.values())
    order: list = []
    while pending:
        followers = {c.follower.name for c in pending}
        ready = [c for c in pending if c.leader.name not in followers]
        if not ready:
            raise AssemblyError(f"mechanism '{mech.name}': couplings "
                                f"{', '.join(c.name for c in pending)} form a cycle (each "
                                f"joint's coordinate set by another's): break it")
        order += ready
        pending = [c for c in pending if c not in ready]
    return order


def coupled(mech, q: dict, qd: dict) -> tuple[dict, dict]:
    """Coordinates and rates with each coupling's follower set from its leader (0 where
    the leader's are not given); a follower given too must agree, or an AssemblyError
    names the coupling."""
    q, qd = dict(q), dict(qd)
    for c in _coupling_order(mech):
        for values, what, rate in ((q, "coordinate", False), (qd, "rate", True)):
            lead = float(values.get(c.leader.name, 0.0))
            want = c.expected(lead, rate=rate)
            got = values.get(c.follower.name)
            if got is None:
                values[c.follower.name] = want
            elif not c.agrees(got, lead, rate=rate):
                raise AssemblyError(
                    f"coupling '{c.name}': the initial {what} of joint '{c.follower.name}' "
                    f"({float(got):g}) is not {c.ratio:g} x that of '{c.leader.name}'"
                    f"{'' if rate else f' + {c.offset:g}'} = {want:g}; give the leader's "
                    f"only (the follower's is set from it)")
    return q, qd


def _check_coupled(mech, q) -> None:
    """An AssemblyError naming the coupling whose joints' coordinates (after the loops
    were closed) do not hold it."""
    for c in mech.couplings.values():
        res = float(c.phi(q[c.follower.name], q[c.leader.name])[0])
        if not abs(res) <= CLOSED_TOL:
            raise AssemblyError(
                f"coupling '{c.name}': q_{c.follower.name} - {c.ratio:g} q_{c.leader.name} "
                f"- {c.offset:g} = {res:.3g} at the initial configuration (a loop closure "
                f"moved the leader?); give both joints' coordinates consistently")


def forward(mm, q: Mapping[str, Any], qd: Mapping[str, Any]):
    """Forward kinematics along the spanning tree (with the free bodies' joints): every
    body's pose (A, r) and twist (omega, v; global) from tree coordinates and rates (0
    where not given; a free body's from :func:`checked_coordinates`)."""
    mech = mm.mechanism
    pose = {mech.ground.name: (np.eye(3), np.zeros(3))}
    twist = {mech.ground.name: (np.zeros(3), np.zeros(3))}
    for j in mm.tree:
        A_a, r_a = pose[j.parent.name]
        w_a, v_a = twist[j.parent.name]
        qj = q.get(j.name, j.zero())
        qdj = qd.get(j.name, j.zero())
        A_b, r_b = j.child_pose(A_a, r_a, qj)
        pose[j.child.name] = (A_b, r_b)
        twist[j.child.name] = j.child_twist(A_a, r_a, w_a, v_a, A_b, r_b, qdj)
    return pose, twist


def start_of(mech, name: str, free) -> Any:
    """Free body ``name``'s start: the keys of ``free[name]`` over those of
    :attr:`Mechanism.free_start` (the pose a file drew); None where neither gives one
    (at rest at the origin)."""
    given = (free or {}).get(name)
    default = mech.free_start.get(name)
    if default is None or given is not None and not isinstance(given, Mapping):
        return given
    return {**default, **(given or {})}


# -- closure -------------------------------------------------------------------------------
def closure(mm, pose, joints) -> np.ndarray:
    """The closure residuals of ``joints`` at body poses ``pose`` (zero exactly where each
    joint holds; see :meth:`elements.kernels.geometry.Kernel.closure`)."""
    out = [blk.phi.closure(Geometry.of_poses(pose, blk.bodies))
           for j in joints for blk in mm.blocks[j.name] if blk.phi is not None]
    return np.concatenate(out) if out else np.zeros(0)


def check_closed(mm, pose) -> None:
    """Raise an AssemblyError naming the joint where a pose does not satisfy a joint's
    constraints (to ``CLOSED_TOL``: metres, or the entries of a rotation)."""
    for j in mm.mechanism.joints.values():
        res = closure(mm, pose, [j])
        if res.size and not np.abs(res).max() <= CLOSED_TOL:
            raise AssemblyError(
                f"mechanism '{mm.mechanism.name}': the initial configuration does not "
                f"satisfy joint '{j.name}' ({j.type_name}): residual "
                f"{np.abs(res).max():.3g} > {CLOSED_TOL:g}. Check the geometry, the "
                f"coordinates given, or give a guess nearer the intended assembly")


def close_loops(mm, q, solve, tol, max_iterations, guess):
    """Tree coordinates ``q`` with the joints ``solve`` solved so that the loop joints
    close (free bodies where ``q`` puts their joints): Gauss-Newton on the closure
    residual, each step cut back until it lowers |residual|."""
    q = dict(q)
    for j in solve:
        q.setdefault(j.name, guess.get(j.name, j.zero()))

    def residual(zz):
        pose, _ = forward(mm, dict(q, **_unflat(solve, zz)), {})
        return closure(mm, pose, mm.loop_joints)

    if not solve:
        res = residual(np.zeros(0))
        if np.abs(res).max() > 1e-9:
            raise AssemblyError(_loop_message(mm, res, "the coordinates given do not close "
                                                       "the loop and none is left free"))
        return q
    z = _flat(solve, q)
    res = residual(z)
    why = f"Newton's method did not converge in {max_iterations} iterations"
    for _ in range(max_iterations):
        if np.abs(res).max() < tol:
            return dict(q, **_unflat(solve, z))
        h = 1e-7
        Jm = np.empty((res.size, z.size))
        for k in range(z.size):
            zp, zm = z.copy(), z.copy()
            zp[k] += h
            zm[k] -= h
            Jm[:, k] = (residual(zp) - residual(zm)) / (2 * h)
        step = np.linalg.lstsq(Jm, -res, rcond=None)[0]
        n0 = float(np.linalg.norm(res))
        for lam in 0.5 ** np.arange(20):
            z_new = z + lam * step
            r_new = residual(z_new)
            if np.linalg.norm(r_new) < n0:
                break
        else:
            why = ("Newton's method stalled (no step lowers the residual: the loop "
                   "does not close near this guess)")
            break
        z, res = z_new, r_new
    if np.abs(res).max() < max(tol, 1e-10):
        return dict(q, **_unflat(solve, z))
    raise AssemblyError(_loop_message(mm, res, why))


def _loop_message(mm, res, why):
    return (f"mechanism '{mm.mechanism.name}': {why}; loop joints "
            f"{', '.join(j.name for j in mm.loop_joints)}, max |residual| = "
            f"{np.abs(res).max():.3g}. Check the geometry or give other coordinates "
            f"or a guess (initial_state's guess=...) nearer the intended assembly")


def close_rates(mm, q, qd, solve):
    """(rates ``qd`` with those of the joints ``solve`` solved from the loop joints'
    c = 0 (linear in the rates: one least-squares solve), max |c| left)."""
    qd = dict(qd)
    for j in solve:
        qd.setdefault(j.name, j.zero())
    sources = [mm.source_of(blk) for j in mm.loop_joints for blk in mm.blocks[j.name]]
    coords = {j.name: j.zero() for j in mm.mechanism.joints.values() if j.n_free}
    coords.update({k: mm.mechanism.joints[k].port_values(v) for k, v in q.items()
                   if mm.mechanism.joints[k].n_free})

    def c_of(z):
        pose, twist = forward(mm, q, dict(qd, **_unflat(solve, z)))
        x = mm.state_from_poses(pose, twist, coords, _other_states_zero(mm))
        ev = mm.model.evaluate(0.0, x)
        return np.concatenate([ev.constraint_flow[mm.model.u2_slices[s]] for s in sources])

    size = sum(j.n_free for j in solve)
    c0 = c_of(np.zeros(size))
    if not size:
        return qd, float(np.abs(c0).max(initial=0.0))
    Jm = np.column_stack([c_of(np.eye(size)[k]) - c0 for k in range(size)])
    z = np.linalg.lstsq(Jm, -c0, rcond=None)[0]
    return dict(qd, **_unflat(solve, z)), float(np.abs(c0 + Jm @ z).max(initial=0.0))


def _other_states_zero(mm):
    """Zero values for the states that are not the mechanism's own (subsystems')."""
    owned = set(mm.mechanism_states())
    return {n: np.zeros(mm.model.state_slices[n].stop - mm.model.state_slices[n].start)
            for n in mm.state_names if n not in owned}


# -- projection ----------------------------------------------------------------------------
def constraint_jacobian(mm, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G, Phi) at state ``x`` (see :meth:`MechanismModel.constraint_jacobian`)."""
    m = mm.model
    bodies = list(mm.mechanism.bodies.values())
    col = {}
    for i, b in enumerate(bodies):
        col[f"{b.name}.v"] = 6 * i
        col[f"{b.name}.w"] = 6 * i + 3
    rows, phis = [], []
    for src in m.unknown_sources:
        try:
            blk = mm.block_of(src)
        except ModelError:
            raise ModelError(
                f"mechanism '{mm.mechanism.name}': the constraint at '{src}' is not a joint's "
                f"position constraint (a coupling between joints, or an inertia on a joint "
                f"axis, a rotor or a subsystem's I, tied to the joint rate): the constraint "
                f"Jacobian and projection (projection=True) cover joint constraints only; "
                f"simulate without projection") from None
        geo = _geometry(blk.bodies, [x[m.state_slices[n]] for n in _deps(blk.bodies)])
        G = np.zeros((blk.dim, 6 * len(bodies)))
        for t in blk.terms:
            g = t.constant if t.constant is not None else t.G(geo)
            G[:, col[t.junction]:col[t.junction] + 3] += g
        rows.append(G)
        phis.append(blk.phi(geo))
    return (np.vstack(rows) if rows else np.zeros((0, 6 * len(bodies))),
            np.concatenate(phis) if phis else np.zeros(0))


def project(mm, x: np.ndarray, tol: float, max_iterations: int) -> np.ndarray:
    """``x`` projected onto Phi = 0 and c = 0 (see :meth:`MechanismModel.project`)."""
    m = mm.model
    x = np.array(x, dtype=float)
    bodies = list(mm.mechanism.bodies.values())
    for _ in range(max_iterations):
        G, phi = constraint_jacobian(mm, x)
        if phi.size == 0 or np.abs(phi).max() < tol:
            break
        dz = -np.linalg.lstsq(G, phi, rcond=None)[0]
        for i, b in enumerate(bodies):
            x[m.state_slices[b.r]] += dz[6 * i:6 * i + 3]
            A = quat_to_matrix(x[m.state_slices[b.q]])
            dth = dz[6 * i + 3:6 * i + 6]
            ang = np.linalg.norm(dth)
            if ang > 0:
                A = A @ axis_angle_matrix(dth, ang)
            x[m.state_slices[b.q]] = matrix_to_quat(A) * np.sign(
                np.dot(matrix_to_quat(A), x[m.state_slices[b.q]]) or 1.0)
    # velocities: minimise the kinetic energy of the correction subject to G u = 0
    G, _ = constraint_jacobian(mm, x)
    if G.shape[0]:
        u = np.zeros(6 * len(bodies))
        mass = {b.name: mm.mass(b.name) for b in bodies}
        inertia = {b.name: mm.inertia(b.name) for b in bodies}
        for i, b in enumerate(bodies):
            u[6 * i:6 * i + 3] = x[m.state_slices[b.linear_momentum]] / mass[b.name]
            u[6 * i + 3:6 * i + 6] = np.linalg.solve(inertia[b.name],
                                                     x[m.state_slices[b.angular_momentum]])
        Mi = np.zeros((6 * len(bodies), 6 * len(bodies)))
        for i, b in enumerate(bodies):
            Mi[6 * i:6 * i + 3, 6 * i:6 * i + 3] = np.eye(3) / mass[b.name]
            Mi[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = np.linalg.inv(inertia[b.name])
        H = G @ Mi @ G.T
        lam = np.linalg.lstsq(H, G @ u, rcond=None)[0]
        u = u - Mi @ G.T @ lam
        for i, b in enumerate(bodies):
            x[m.state_slices[b.linear_momentum]] = mass[b.name] * u[6 * i:6 * i + 3]
            x[m.state_slices[b.angular_momentum]] = inertia[b.name] @ u[6 * i + 3:6 * i + 6]
    return x
