"""The models of the work-precision benchmark (work_precision.py), each three ways.

A :class:`Case` holds, for one model: ours (a :class:`~elements.MechanismModel` and its
initial state), Pinocchio's (ABA in joint coordinates, a right-hand side for scipy), and
optionally MuJoCo's (its RK4 at a fixed step), together with the *points* whose final
positions are compared with the reference:

- chain-N: every body's centre of mass (m), as run.py compares them;
- three-body: the centres of m1 and m2 (m);
- a robot: the origin of every URDF link frame that moves (m). Ours from the body's
  centre and rotation (``mechanism.frames``: a link's origin in its body's axes),
  Pinocchio's from ``framesForwardKinematics``, MuJoCo's from ``xpos`` (the URDF is
  compiled with ``fusestatic="false"``: every link keeps its own body).

Every model starts from one state given in Pinocchio's joint coordinates and mapped to the
others (floating base: Pinocchio's free flyer is the root link frame's origin and
quaternion (x, y, z, w), its velocity in the root link frame; ours is the merged body's
centre and rotation, velocities global; MuJoCo's free joint has (w, x, y, z), the linear
velocity global and the angular one local). At t = 0 the three sets of points agree to
rounding (checked when a case is built).
"""

from __future__ import annotations

import os
import re
import warnings

import numpy as np

from bondgraph.spatial import quat_to_matrix

HERE = os.path.dirname(os.path.abspath(__file__))

# (label, path under example-robot-data's robots/, floating base, span s, what it is)
ROBOTS = (
    ("panda", "panda_description/urdf/panda.urdf", False, 1.0,
     "7-DOF arm + 2 fingers, fixed base, joint damping"),
    ("solo12", "solo_description/robots/solo12.urdf", True, 1.0,
     "quadruped, 12 joints, floating base"),
    ("talos", "talos_data/robots/talos_reduced.urdf", True, 1.0,
     "humanoid (TALOS, reduced), 32 joints, floating base"),
    ("anymal_kinova", "anymal_b_simple_description/robots/anymal-kinova.urdf", True, 1.0,
     "quadruped with a 6-DOF Kinova arm (branched), 18 joints, floating base"),
)


def robots_dir() -> str | None:
    import importlib.metadata as md
    try:
        dist = md.distribution("example-robot-data")
    except md.PackageNotFoundError:
        return None
    path = str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if os.path.isdir(path) else None


class Case:
    """One model: ``name``, ``span`` (s), ``description``; ``ours`` = (MechanismModel,
    x0) and ``ours_points(result)``; ``pin`` (a :class:`PinocchioODE`, or None);
    ``mujoco`` (a :class:`MuJoCoRK4`, or None, with ``mujoco_note`` saying why);
    ``points`` (what is compared)."""

    def __init__(self, name, span, description, points):
        self.name, self.span, self.description, self.points = name, span, description, points
        self.pin = None
        self.mujoco = None
        self.mujoco_note = ""
        self.state_kinds = None


# ---------------------------------------------------------------------------------------
# Pinocchio: (q, v) for scipy
# ---------------------------------------------------------------------------------------
class PinocchioODE:
    """y = (q, v); ``rhs(t, y)`` = (dq/dt, ABA) with tau = -damping v (plus ``tau_fn``);
    free-flyer quaternions are normalised before use; continuous joints (cos, sin)."""

    def __init__(self, model, q0, v0, points, tau_fn=None):
        import pinocchio as pin
        self.pin, self.model, self.data = pin, model, model.createData()
        self.nq, self.nv = model.nq, model.nv
        self.y0 = np.concatenate([q0, v0])
        self.damping = np.array(model.damping, dtype=float)
        self.tau_fn = tau_fn
        self.points_fn = points
        sq, sv, cq, cv = [], [], [], []
        self.ff = None
        for i in range(1, model.njoints):
            j = model.joints[i]
            if j.shortname() == "JointModelFreeFlyer":
                self.ff = (j.idx_q, j.idx_v)
            elif j.nq == j.nv:
                sq += range(j.idx_q, j.idx_q + j.nq)
                sv += range(j.idx_v, j.idx_v + j.nv)
            elif j.nq == 2 and j.nv == 1:
                cq.append(j.idx_q)
                cv.append(j.idx_v)
            else:
                raise ValueError(f"joint {model.names[i]}: {j.shortname()} not mapped")
        self.sq, self.sv = np.array(sq, dtype=int), np.array(sv, dtype=int)
        self.cq, self.cv = np.array(cq, dtype=int), np.array(cv, dtype=int)

    def _q(self, y):
        q = np.array(y[: self.nq])
        if self.ff is not None:
            a = self.ff[0] + 3
            q[a:a + 4] /= np.linalg.norm(q[a:a + 4])
        return q

    def rhs(self, t, y):
        q, v = self._q(y), y[self.nq:]
        tau = -self.damping * v
        if self.tau_fn is not None:
            tau += self.tau_fn(q, v)
        a = self.pin.aba(self.model, self.data, q, v, tau)
        dq = np.empty(self.nq)
        dq[self.sq] = v[self.sv]
        if self.cq.size:
            w = v[self.cv]
            c, s = q[self.cq], q[self.cq + 1]
            dq[self.cq], dq[self.cq + 1] = -s * w, c * w
        if self.ff is not None:
            iq, iv = self.ff
            x, yy, z, w4 = q[iq + 3:iq + 7]
            vl, wl = v[iv:iv + 3], v[iv + 3:iv + 6]
            dq[iq:iq + 3] = quat_to_matrix(np.array([w4, x, yy, z])) @ vl
            qv = np.array([x, yy, z])
            dq[iq + 3:iq + 6] = 0.5 * (w4 * wl + np.cross(qv, wl))
            dq[iq + 6] = -0.5 * qv @ wl
        return np.concatenate((dq, a))

    def points(self, y):
        return self.points_fn(self._q(y))


# ---------------------------------------------------------------------------------------
# chains and the three-body
# ---------------------------------------------------------------------------------------
def chain_case(n: int, span: float = 1.0, mujoco: bool = True) -> Case:
    from elements.models import chain
    from peers import MuJoCoPeer, PinocchioPeer
    case = Case(f"chain-{n}", span, f"{n} cubes on alternating x/y revolutes, 0.3 rad "
                                    f"bend, at rest", "every body's centre")
    mech, q0 = chain(n)
    mm = mech.assemble()
    case.ours = (mm, mm.initial_state(q0, {}))
    case.ours_points = lambda r: np.array([r.body(f"b{i}").position[:, -1]
                                           for i in range(1, n + 1)])
    pp = PinocchioPeer().build(n)
    case.pin = PinocchioODE(pp.model, pp.y0[:n], pp.y0[n:],
                            lambda q: pp.centres(np.concatenate([q, np.zeros(n)])))
    if mujoco:
        try:
            mp = MuJoCoPeer().build(n)
            case.mujoco = MuJoCoRK4.from_peer(mp)
        except ImportError as exc:
            case.mujoco_note = f"mujoco does not import: {exc}"
    return case


def three_body_case() -> Case:
    """The seed paper's example (elements.models.three_body_prismatic) over 5 s; Pinocchio's
    model is written here from the same numbers (J1 RZ with moment M, J2 RY a along the
    rotor's x, J3 PZ c below J2 with the spring -K s)."""
    import pinocchio as pin

    from elements.models import THREE_BODY as P
    from elements.models import three_body_prismatic
    case = Case("three-body", 5.0, "the seed paper's rotor, pendulum and spring slider "
                                   "(revolute, revolute, prismatic), moment 0.1 N m",
                "the centres of m1 and m2")
    mm = three_body_prismatic().assemble()
    case.ours = (mm, mm.initial_state({}, {}))
    case.ours_points = lambda r: np.array([r.body("m1").position[:, -1],
                                           r.body("m2").position[:, -1]])
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -P["g"]]), np.zeros(3))

    def inertia(m):
        return pin.Inertia(m, np.zeros(3), np.eye(3) * P["inertia"])
    j1 = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "J1")
    model.appendBodyToJoint(j1, inertia(P["m_rotor"]), pin.SE3.Identity())
    j2 = model.addJoint(j1, pin.JointModelRY(),
                        pin.SE3(np.eye(3), np.array([P["a"], 0.0, 0.0])), "J2")
    model.appendBodyToJoint(j2, inertia(P["m1"]),
                            pin.SE3(np.eye(3), np.array([0.0, 0.0, -P["b"]])))
    j3 = model.addJoint(j2, pin.JointModelPZ(),
                        pin.SE3(np.eye(3), np.array([0.0, 0.0, -P["c"]])), "J3")
    model.appendBodyToJoint(j3, inertia(P["m2"]), pin.SE3.Identity())
    data = model.createData()

    def points(q):
        pin.forwardKinematics(model, data, q)
        return np.array([data.oMi[2].act(np.array([0.0, 0.0, -P["b"]])),
                         data.oMi[3].translation.copy()])

    def tau(q, v):
        return np.array([P["M"], 0.0, -P["K"] * q[2]])
    case.pin = PinocchioODE(model, np.zeros(3), np.zeros(3), points, tau_fn=tau)
    case.mujoco_note = "not written for MuJoCo"
    return case


# ---------------------------------------------------------------------------------------
# robots from URDF
# ---------------------------------------------------------------------------------------
def robot_case(label, rel, floating, span, description, seed=0, mujoco=True) -> Case:
    """A robot of example-robot-data: ours through ``elements.files.urdf.load_urdf``
    (``mimic="independent"``, as Pinocchio's buildModel), Pinocchio's
    ``buildModelFromUrdf`` (free flyer for a floating base), MuJoCo's URDF compiler.

    Initial state (seed ``seed``): every joint at a random angle within +-0.5 rad (and
    its limits), random rates N(0, 0.5) rad/s; a floating base at the origin, not
    turned, at rest but for a random angular velocity N(0, 0.5) rad/s; gravity."""
    import pinocchio as pin

    from elements.files.urdf import load_urdf
    root = robots_dir()
    if root is None:
        raise FileNotFoundError("example-robot-data is not installed")
    path = os.path.join(root, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, floating_base=floating, mimic="independent")
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
    mm = mech.assemble()
    report = mech.import_report
    rng = np.random.default_rng(seed)
    q = pin.neutral(model)
    v = rng.normal(scale=0.5, size=model.nv)
    file_q, file_qd = {}, {}
    for i in range(1, model.njoints):
        j, name = model.joints[i], model.names[i]
        if j.shortname() == "JointModelFreeFlyer":
            v[j.idx_v:j.idx_v + 3] = 0.0
            continue
        th = rng.uniform(-0.5, 0.5)
        if j.nq == 2:
            q[j.idx_q:j.idx_q + 2] = np.cos(th), np.sin(th)
        else:
            lo, hi = model.lowerPositionLimit[j.idx_q], model.upperPositionLimit[j.idx_q]
            if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
                th = float(np.clip(th, lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo)))
            q[j.idx_q] = th
        file_q[name], file_qd[name] = th, float(v[j.idx_v])
    free = None
    if floating:
        base = next(iter(mech.free_bodies()))
        c = -mech.body(base).points[report.merged[base][0]]   # centre, root link frame
        wl = v[3:6]
        free = {base: {"rotation": np.eye(3), "position": c, "angular_velocity": wl,
                       "velocity": np.cross(wl, c)}}
    x0 = mm.initial_state(report.mechanism_values(file_q), report.mechanism_values(file_qd),
                          free=free)
    links = [n for n, f in mech.frames.items() if f.body != "ground"]
    case = Case(label, span, description, f"the origins of the {len(links)} URDF link "
                                          f"frames that move")
    case.ours = (mm, x0)
    frames = [mech.frames[n] for n in links]

    def ours_points(r):
        out = []
        for f in frames:
            b = r.body(f.body)
            out.append(b.position[:, -1] + b.rotation[-1] @ f.position)
        return np.array(out)
    case.ours_points = ours_points
    data = model.createData()
    fids = [model.getFrameId(n) for n in links]

    def pin_points(qq):
        pin.framesForwardKinematics(model, data, qq)
        return np.array([data.oMf[k].translation.copy() for k in fids])
    case.pin = PinocchioODE(model, q, v, pin_points)
    if mujoco:
        try:
            case.mujoco = MuJoCoRK4.from_urdf(path, floating, model, q, v, links)
        except Exception as exc:  # noqa: BLE001 - MuJoCo's compiler refuses the file
            case.mujoco_note = f"MuJoCo does not compile it: {str(exc).splitlines()[0]}"
    return case


# ---------------------------------------------------------------------------------------
# MuJoCo
# ---------------------------------------------------------------------------------------
class MuJoCoRK4:
    """MuJoCo's RK4 at a fixed step: ``run(span, dt)`` -> the final points (m)."""

    def __init__(self, model, qpos0, qvel0, points):
        import mujoco
        self.mj, self.model = mujoco, model
        self.data = mujoco.MjData(model)
        self.qpos0, self.qvel0, self.points_fn = qpos0, qvel0, points
        model.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4

    @classmethod
    def from_peer(cls, peer):
        n = peer.n
        return cls(peer.model, peer.y0[:n], peer.y0[n:], lambda d: d.xipos[1:].copy())

    @classmethod
    def from_urdf(cls, path, floating, pmodel, q, v, links):
        """MuJoCo's URDF compiler on the file with its geometry left out (meshes are not
        needed for dynamics), every link its own body; a free joint added on the root
        link for a floating base. Constraints (limits, mimic equalities) and friction
        loss are disabled, as ours and Pinocchio's leave them out; joint damping stays
        (all three have it)."""
        import mujoco
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"<(visual|collision)\b.*?</\1>", "", text, flags=re.S)
        text = re.sub(r"<(visual|collision)\b[^>]*/>", "", text)
        text = re.sub(r"(<robot\b[^>]*>)", r'\1<mujoco><compiler fusestatic="false" '
                      r'discardvisual="true" balanceinertia="false"/></mujoco>', text, count=1)
        model = mujoco.MjModel.from_xml_string(text)
        if floating:
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                f = os.path.join(tmp, "m.xml")
                mujoco.mj_saveLastXML(f, model)
                xml = open(f, encoding="utf-8").read()
            root = _root_link(pmodel)
            xml, k = re.subn(r'(<body name="%s"[^>]*>)' % re.escape(root),
                             r'\1<freejoint name="root_free"/>', xml, count=1)
            if not k:
                raise RuntimeError(f"root link body not found ({root})")
            model = mujoco.MjModel.from_xml_string(xml)
        model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        model.opt.gravity[:] = (0.0, 0.0, -9.81)
        qpos, qvel = np.array(model.qpos0), np.zeros(model.nv)
        for i in range(1, pmodel.njoints):
            j, name = pmodel.joints[i], pmodel.names[i]
            if j.shortname() == "JointModelFreeFlyer":
                jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "root_free")
                a, d = model.jnt_qposadr[jid], model.jnt_dofadr[jid]
                x, y, z, w = q[j.idx_q + 3:j.idx_q + 7]
                qpos[a:a + 7] = np.concatenate([q[j.idx_q:j.idx_q + 3], [w, x, y, z]])
                R = quat_to_matrix(np.array([w, x, y, z]))
                qvel[d:d + 3] = R @ v[j.idx_v:j.idx_v + 3]
                qvel[d + 3:d + 6] = v[j.idx_v + 3:j.idx_v + 6]
                continue
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise RuntimeError(f"joint {name} missing")
            a, d = model.jnt_qposadr[jid], model.jnt_dofadr[jid]
            qpos[a] = np.arctan2(q[j.idx_q + 1], q[j.idx_q]) if j.nq == 2 else q[j.idx_q]
            qvel[d] = v[j.idx_v]
        bids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in links]
        if min(bids) < 0:
            raise RuntimeError("a link has no body")
        return cls(model, qpos, qvel, lambda dd: dd.xpos[bids].copy())

    def run(self, span, dt):
        mj, m, d = self.mj, self.model, self.data
        n = int(round(span / dt))
        m.opt.timestep = span / n
        mj.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = self.qpos0, self.qvel0
        mj.mj_step(m, d, nstep=n)
        mj.mj_forward(m, d)
        return self.points_fn(d), n

    def initial_points(self):
        d = self.data
        self.mj.mj_resetData(self.model, d)
        d.qpos[:], d.qvel[:] = self.qpos0, self.qvel0
        self.mj.mj_forward(self.model, d)
        return self.points_fn(d)


def _root_link(pmodel) -> str:
    """The URDF root link's name: the body frame whose parent joint is the free flyer."""
    import pinocchio as pin
    for f in pmodel.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint == 1:
            return f.name
    raise RuntimeError("no root link")
