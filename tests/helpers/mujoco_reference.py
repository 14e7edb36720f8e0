"""Our dynamics and MuJoCo's for the same MJCF model at the same state, side by side
(tests of the MJCF import; MuJoCo's ``mj_forward`` is the second, independent
formulation: joint-space, composite rigid body, its own compiler).

What the mechanism does not represent (limits, friction loss, contacts, equality
constraints, tendons, actuators, fluid forces, damping and armature of ball and free
joints) is reported by the import; MuJoCo's side is set to leave it out too: its
constraint solver and actuation are disabled, the medium's density and viscosity are
zero and those dampings and armatures are zeroed on the model compared.
"""

from __future__ import annotations

import numpy as np


def comparable(model):
    """``model`` changed in place to hold only what the mechanism represents."""
    import mujoco
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION   # (bias forces too)
    model.opt.density, model.opt.viscosity = 0.0, 0.0                  # fluid forces
    model.opt.wind[:] = 0.0
    for j in range(model.njnt):
        if model.jnt_type[j] in (0, 1):
            d, n = model.jnt_dofadr[j], 6 if model.jnt_type[j] == 0 else 3
            model.dof_damping[d:d + n] = 0.0
            model.dof_armature[d:d + n] = 0.0
            model.jnt_stiffness[j] = 0.0
    model.tendon_stiffness[:] = 0.0
    model.tendon_damping[:] = 0.0
    return model


def random_state(model, rng):
    """(qpos, qvel, qfrc): hinges and slides moved by up to 1 rad or 1 m from qpos0,
    random ball and free-joint orientations, free bodies anywhere near the origin."""
    qpos = np.array(model.qpos0)
    for j in range(model.njnt):
        a, kind = model.jnt_qposadr[j], model.jnt_type[j]
        if kind == 0:
            qpos[a:a + 3] = rng.normal(size=3)
            quat = rng.normal(size=4)
            qpos[a + 3:a + 7] = quat / np.linalg.norm(quat)
        elif kind == 1:
            quat = rng.normal(size=4)
            qpos[a:a + 4] = quat / np.linalg.norm(quat)
        else:
            qpos[a] += rng.uniform(-1.0, 1.0)
    qfrc = rng.normal(size=model.nv)
    for j in range(model.njnt):             # efforts only where the mechanism has an axis
        if model.jnt_type[j] in (0, 1):
            d, n = model.jnt_dofadr[j], 6 if model.jnt_type[j] == 0 else 3
            qfrc[d:d + n] = 0.0
    return qpos, rng.normal(size=model.nv), qfrc


def compare(model, mech, mm, rng) -> tuple[float, int]:
    """(the largest error of our accelerations against ``mj_forward``'s at one random
    state, relative to max(1, the largest of MuJoCo's), the number of values compared):
    every hinge's and slide's qacc, and every MuJoCo body's angular acceleration and the
    acceleration of our body's centre (MuJoCo's ``mj_objectAcceleration`` at its own
    centre, which reports a - gravity, moved to ours: a welded body's centre is the
    merged one)."""
    import mujoco

    from elements import direct_dynamics
    from elements.files.mjcf import mujoco_coordinates
    data = mujoco.MjData(model)
    qpos, qvel, qfrc = random_state(model, rng)
    data.qpos[:], data.qvel[:], data.qfrc_applied[:] = qpos, qvel, qfrc
    mujoco.mj_forward(model, data)
    mujoco.mj_rnePostConstraint(model, data)
    q, qd, free = mujoco_coordinates(mech, model, qpos, qvel)
    report = mech.import_report
    tau = {}
    for j in range(model.njnt):
        if model.jnt_type[j] in (2, 3):
            tau[model.joint(j).name] = float(qfrc[model.jnt_dofadr[j]])
    ours = direct_dynamics(mm, q, qd, report.mechanism_values(tau), free=free, bodies=True)
    by_file = report.file_values({k: v for k, v in ours.items() if "." not in k})
    errors, scale = [], [1.0, float(np.abs(data.qacc).max())]
    for j in range(model.njnt):
        if model.jnt_type[j] in (2, 3):
            errors.append(abs(by_file[model.joint(j).name] -
                              data.qacc[model.jnt_dofadr[j]]))
    res, vel = np.zeros(6), np.zeros(6)
    gravity = np.zeros(3) if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY \
        else model.opt.gravity
    for b in range(1, model.nbody):
        frame = mech.frames[model.body(b).name]
        if frame.body == "ground":
            continue
        mujoco.mj_objectAcceleration(model, data, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
        A = data.xmat[b].reshape(3, 3) @ frame.rotation.T        # our body's axes
        alpha, w = res[:3], vel[:3]
        errors.append(np.abs(alpha - A @ ours[f"{frame.body}.alpha"]).max())
        # our body's centre (of the merged links) from MuJoCo's body centre xipos
        d = data.xpos[b] - A @ frame.position - data.xipos[b]
        a = res[3:] + gravity + np.cross(alpha, d) + np.cross(w, np.cross(w, d))
        errors.append(np.abs(a - ours[f"{frame.body}.a"]).max())
        scale.append(float(np.abs(res).max()))
    return max(errors) / max(scale), len(errors)
