"""Our dynamics and Pinocchio's for the same URDF at the same state, side by side
(tests of the URDF import; Pinocchio is the second, independent formulation).

Pinocchio's conventions: a continuous joint has q = (cos, sin); a free flyer has
q = (position of the root link frame, quaternion x, y, z, w) and v = (linear velocity of
that origin, angular velocity), both in the root link frame, and its acceleration is the
derivative of that v (not the classical acceleration of the origin). ABA has no joint
damping: the damper's effort is taken off tau.
"""

from __future__ import annotations

import numpy as np

from bondgraph.spatial import quat_to_matrix


def moving_joints(model) -> list[str]:
    """Pinocchio's joints with a coordinate of their own (not the universe, not the root
    joint of a floating base)."""
    return [model.names[i] for i in range(1, model.njoints)
            if model.joints[i].shortname() != "JointModelFreeFlyer"]


def random_angle(model, jm, q, rng, span: float = 1.2) -> float:
    """A random coordinate of joint model ``jm`` (within its limits, else within
    +-span), written into ``q`` (as (cos, sin) for a continuous joint); returned."""
    th = rng.uniform(-span, span)
    if jm.nq == 2:
        q[jm.idx_q:jm.idx_q + 2] = np.cos(th), np.sin(th)
    else:
        lo, hi = model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q]
        if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
            th = rng.uniform(lo, hi)
        q[jm.idx_q] = th
    return th


def random_state(model, rng, floating: bool):
    """(q, v, tau, per-joint angles) for a random state of a Pinocchio model."""
    q = np.zeros(model.nq)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    angles = {}
    for name in moving_joints(model):
        angles[name] = random_angle(model, model.joints[model.getJointId(name)], q, rng)
    if floating:               # (no wrench on the base: it has no actuator)
        tau[0:6] = 0.0
        q[0:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
    return q, v, tau, angles


def near_side(mech, report, q, qd, tau) -> dict[str, float]:
    """Gimbals (composite joints of three revolutes, first and third axes perpendicular)
    whose middle angle is beyond gimbal lock from rest, moved in place to the same
    rotation on the near side: (q1 + pi, pi - q2, q3 + pi), rates (q1', -q2', q3'),
    efforts (t1, -t2, t3). Returns each file joint's sign (-1 for those middle angles:
    their accelerations compare negated)."""
    signs = {n: 1.0 for n in q}
    for joint, members in report.composed.items():
        j = mech.joints[joint]
        if j.type_name != "gimbal":
            continue
        lo, hi = j.middle_range
        if (q[members[1]] - lo) % (2 * np.pi) < hi - lo:
            continue
        a1, _, a3 = j.gimbal_axes
        assert abs(a1 @ a3) < 1e-12, "the near side's formula is for a1 _|_ a3"
        q[members[0]] += np.pi
        q[members[1]] = np.pi - q[members[1]]
        q[members[2]] += np.pi
        qd[members[1]] = -qd[members[1]]
        tau[members[1]] = -tau[members[1]]
        signs[members[1]] = -1.0
    return signs


def compare(model, data, mm, report, rng, floating: bool, damping) -> float:
    """The largest error of our accelerations against Pinocchio's ABA at one random state,
    relative to max(1, the largest of Pinocchio's): joints, and the base for a
    floating base."""
    import pinocchio as pin
    q, v, tau, angles = random_state(model, rng, floating)
    names = moving_joints(model)
    file_q, file_qd, file_tau = {}, {}, {}
    tau_pin = tau.copy()
    for n in names:
        jm = model.joints[model.getJointId(n)]
        file_q[n] = angles[n]
        file_qd[n] = v[jm.idx_v]
        file_tau[n] = tau[jm.idx_v]
        tau_pin[jm.idx_v] -= damping.get(n, 0.0) * v[jm.idx_v]
    # (joints of a chain through massless links are coordinates of one composite joint)
    signs = near_side(mm.mechanism, report, file_q, file_qd, file_tau)
    ours_q, ours_qd, ours_tau = (report.mechanism_values(d) for d in (file_q, file_qd,
                                                                      file_tau))
    free = base = A = c = None
    if floating:
        base = next(iter(mm.mechanism.free_bodies()))
        c = -mm.mechanism.body(base).points[report.merged[base][0]]  # centre, root frame
        x, y, z, w = q[3:7]
        A = quat_to_matrix(np.array([w, x, y, z]))
        vl, wl = v[0:3], v[3:6]
        free = {base: {"rotation": A, "position": q[0:3] + A @ c,
                       "angular_velocity": A @ wl,
                       "velocity": A @ (vl + np.cross(wl, c))}}
    from elements.analysis.dynamics import direct_dynamics
    a = pin.aba(model, data, q, v, tau_pin)
    # both ways of evaluating: the bond graph model and (where it takes the mechanism)
    # the compiled joint-space recursion; the worse of the two is returned
    return max(_error(model, mm, report, names, signs, direct_dynamics(
        mm, ours_q, ours_qd, ours_tau, free=free, method=method), a, floating, base, A, c,
        v) for method in ("bond_graph", "auto"))


def _error(model, mm, report, names, signs, ours, a, floating, base, A, c, v) -> float:
    """The largest difference of our accelerations ``ours`` from Pinocchio's ``a``
    relative to max(1, |a|)."""
    theirs, mine = [], []
    by_file = report.file_values({k: v for k, v in ours.items() if "." not in k})
    for n in names:
        theirs.append(a[model.joints[model.getJointId(n)].idx_v])
        mine.append(signs[n] * by_file[n])
    if floating:
        wl = v[3:6]
        alpha = ours[f"{base}.alpha"]
        a_c = A.T @ ours[f"{base}.a"]                 # centre's acceleration, root frame
        a_o = a_c - np.cross(alpha, c) - np.cross(wl, np.cross(wl, c))
        vl = v[0:3]
        theirs += list(a[0:6])
        mine += list(a_o - np.cross(wl, vl)) + list(alpha)
    theirs, mine = np.array(theirs), np.array(mine)
    return float(np.abs(mine - theirs).max() / max(1.0, np.abs(theirs).max()))
