"""MJCF import through MuJoCo's own compiler: a MuJoCo model -> :class:`~elements.Mechanism`.

- :func:`load_mjcf`, :func:`loads_mjcf`, :func:`from_mujoco`: an MJCF file, MJCF text or a
  compiled ``mujoco.MjModel`` -> a mechanism.
- :func:`read_mujoco_tree`: the compiled model's bodies and joints as a
  :class:`~elements.files.robot_tree.RobotTree` (before any mapping).
- :func:`mujoco_coordinates`: MuJoCo's ``qpos`` and ``qvel`` -> the mechanism's joint
  coordinates, rates and free-body states (for ``initial_state`` and the dynamics
  functions).
- :class:`MJCFError`: names the file, body or joint at fault.

MJCF is not parsed here: the ``mujoco`` package (an optional extra:
``pip install "vector-bondgraph[mjcf]"``) compiles the file, which resolves defaults and
classes, ``childclass``, every way of writing an orientation (``quat``, ``euler`` with
``eulerseq``, ``axisangle``, ``xyaxes``, ``zaxis``), ``angle="degree"``, inertias
inferred from geoms and ``fullinertia``, and includes. The compiled model is mapped with
:func:`elements.files.robot_tree.build_mechanism`, as URDF files are:

- every MuJoCo body is a link (frame: the body's frame; inertial: ``body_ipos``,
  ``body_iquat``, ``body_inertia``); the world body is the ground;
- a body without a joint is welded to its parent and merged with it (exact mass, centre
  and inertia; its frame stays available by name in ``mechanism.frames``);
- ``hinge`` -> :class:`~elements.RevoluteJoint`, ``slide`` ->
  :class:`~elements.PrismaticJoint`, ``ball`` -> :class:`~elements.SphericalJoint`, each
  turning about the joint's ``pos``; a ``free`` joint makes its body a free body;
- on hinges and slides: ``damping`` -> an axis damper, ``armature`` -> a rotor inertia on
  the axis (:class:`~elements.AxisRotor`), ``stiffness`` -> an axis spring at rest at
  ``springref``; every hinge and slide gets an actuator (``efforts[joint]``, default 0);
- gravity from ``<option gravity>`` (zero when the gravity flag is disabled).

A joint coordinate is MuJoCo's ``qpos - qpos0`` (0 at the pose the file gives, the
``ref`` of a joint); :func:`mujoco_coordinates` converts. What the mechanism cannot
represent yet is listed by name in ``mechanism.import_report.not_imported`` and said in
a :class:`~elements.RobotImportWarning`, never dropped silently: joint limits, friction
loss, tendons, equality constraints, contacts, MuJoCo actuators (their joints get a plain
effort input instead), fluid forces, gravity compensation, damping, stiffness and
armature of ball and free joints. A body with two or more joints is a chain of them
through massless links: one universal, gimbal or planar joint where they form one, a
general chain joint otherwise (see :mod:`elements.files.joint_chains`); refused, naming the
joints, when more than six or dependent (coaxial hinges, parallel slides).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.errors import require_extra, warn
from bondgraph.spatial import quat_to_matrix

from elements.files.tables import read_text, xml_root
from elements.joints.kinds import FixedJoint, FreeJoint, PrismaticJoint, RevoluteJoint, SphericalJoint
from elements.mechanism import Mechanism
from elements.files.robot_tree import JointSpec, LinkSpec, RobotImportWarning, RobotTree, build_mechanism

__all__ = ["load_mjcf", "loads_mjcf", "from_mujoco", "read_mujoco_tree", "colliding_geoms",
           "mujoco_coordinates", "MJCFError"]


class MJCFError(ModelError):
    """Fires when an MJCF model cannot be compiled or uses what is not supported."""


def _mujoco():
    return require_extra("mujoco", "reading MJCF (MuJoCo's compiler)", "mjcf")


_TYPES = {0: ("free", FreeJoint), 1: ("ball", SphericalJoint), 2: ("slide", PrismaticJoint),
          3: ("hinge", RevoluteJoint)}
"""MuJoCo's joint types (mjtJoint) -> (MuJoCo's name, the joint class each becomes); a
body without a joint is welded (a :class:`~elements.joints.FixedJoint`). The robot tree
reads the rest from the classes' contract (their coordinates and units)."""


def _names(model, kind: str, count: int, stem: str) -> list[str]:
    out = []
    for i in range(count):
        n = getattr(model, kind)(i).name
        out.append(n if n else f"{stem}{i}")
    return out


def read_mujoco_tree(model: Any, source: str = "<model>", *, contacts: bool = False
                     ) -> tuple[RobotTree, dict[str, list[str]]]:
    """The bodies and joints of a compiled ``mujoco.MjModel`` as a robot tree, and what
    it holds that the mechanism does not represent (kind -> names).

    Unnamed bodies are called ``body<i>``, unnamed joints ``joint<i>`` (MuJoCo's ids).

    A body with several joints becomes a chain through massless links (named
    ``<body>:<joint>``) that :func:`~elements.files.robot_tree.build_mechanism` turns into one
    composite joint (universal, gimbal, planar or a general chain) or refuses, naming
    the joints. With ``contacts`` the colliding geoms are not reported as left out
    (:func:`colliding_geoms` gives them to the contact import)."""
    mujoco = _mujoco()
    flags, bit = int(model.opt.disableflags), mujoco.mjtDisableBit

    def on(*names):
        """The features the model's <flag>s leave enabled (the constraint solver too)."""
        return not flags & (int(bit.mjDSBL_CONSTRAINT) | sum(int(getattr(bit, n))
                                                             for n in names))

    springs = not flags & int(bit.mjDSBL_SPRING)
    dampers = not flags & int(bit.mjDSBL_DAMPER)
    bodies = _names(model, "body", model.nbody, "body")
    bodies[0] = bodies[0] or "world"
    joints = _names(model, "joint", model.njnt, "joint")
    links: dict[str, LinkSpec] = {}
    for b in range(model.nbody):
        R = quat_to_matrix(model.body_iquat[b])
        mass = float(model.body_mass[b])
        links[bodies[b]] = LinkSpec(bodies[b], mass, np.array(model.body_ipos[b], float),
                                    R @ np.diag(model.body_inertia[b]) @ R.T, mass > 0)
    specs: list[JointSpec] = []
    skipped: dict[str, list[str]] = {}

    def skip(kind, names):
        skipped.setdefault(kind, []).extend([names] if isinstance(names, str) else names)

    for b in range(1, model.nbody):
        n_j = int(model.body_jntnum[b])
        first = int(model.body_jntadr[b])
        parent = bodies[int(model.body_parentid[b])]
        xyz = np.array(model.body_pos[b], dtype=float)
        R = quat_to_matrix(model.body_quat[b])
        if n_j == 0:
            if model.body_mocapid[b] >= 0:
                skip("mocap bodies (held fixed where the file puts them)", bodies[b])
            specs.append(JointSpec(f"(weld of {bodies[b]})", "fixed", parent, bodies[b],
                                   xyz, R, kind=FixedJoint))
            continue
        # several joints in a body: a chain through massless links placed at the body's
        # frame (MuJoCo applies them in order, each axis and pos in the body frame)
        chain = [bodies[b]] if n_j == 1 else \
            [f"{bodies[b]}:{joints[j]}" for j in range(first, first + n_j - 1)] + [bodies[b]]
        for link in chain[:-1]:
            links[link] = LinkSpec(link)
        for k, j in enumerate(range(first, first + n_j)):
            specs.append(_joint_spec(model, j, joints[j], parent if k == 0 else chain[k - 1],
                                     chain[k], xyz if k == 0 else np.zeros(3),
                                     R if k == 0 else np.eye(3), springs, dampers, on, skip))
    for b in range(1, model.nbody):
        if model.body_gravcomp[b] != 0:
            skip("gravity compensation", bodies[b])
    if model.ntendon and (springs or dampers or on()):
        skip("tendons", _names(model, "tendon", model.ntendon, "tendon"))
    if model.neq and on("mjDSBL_EQUALITY"):
        skip("equality constraints", _names(model, "equality", model.neq, "equality"))
    if model.nu:
        skip("actuators (each hinge and slide takes efforts= instead)",
             _names(model, "actuator", model.nu, "actuator"))
    if on("mjDSBL_CONTACT") and not contacts:
        colliding = colliding_geoms(model)
        names = _names(model, "geom", model.ngeom, "geom")
        colliding = [names[i] for i in colliding]
        if model.npair:
            colliding += _names(model, "pair", model.npair, "pair")
        if colliding:
            skip("contacts (geoms and pairs that may collide)", colliding)
    if model.opt.density or model.opt.viscosity or np.any(model.opt.wind):
        skip("fluid forces (density, viscosity, wind)", "option")
    return RobotTree(_model_name(model, source), source, links, specs), skipped


def _joint_spec(model, j: int, name: str, parent: str, child: str, xyz, R, springs: bool,
                dampers: bool, on, skip) -> JointSpec:
    """MuJoCo joint ``j`` as a joint spec from link ``parent`` to link ``child``."""
    word, cls = _TYPES[int(model.jnt_type[j])]
    dof = int(model.jnt_dofadr[j])
    spec = JointSpec(name, word, parent, child, xyz, R,
                     np.array(model.jnt_axis[j], dtype=float),
                     anchor=np.array(model.jnt_pos[j], dtype=float), kind=cls)
    ndof = cls.n_free + (3 if cls.free_rotation else 0)       # (free 6, ball 3, else 1)
    damping = model.dof_damping[dof:dof + ndof] * dampers
    armature = model.dof_armature[dof:dof + ndof]
    stiffness = float(model.jnt_stiffness[j]) * springs
    if ndof == 1:
        spec.damping = float(damping[0])
        spec.armature = float(armature[0])
        spec.stiffness = stiffness
        adr = int(model.jnt_qposadr[j])
        spec.spring_rest = float(model.qpos_spring[adr] - model.qpos0[adr])
    else:
        for what, vals in (("damping", damping), ("armature", armature),
                           ("stiffness", [stiffness])):
            if np.any(np.asarray(vals) != 0):
                skip(f"{what} of ball and free joints", name)
    limited = bool(model.jnt_limited[j]) and on("mjDSBL_LIMIT")
    lossy = np.any(model.dof_frictionloss[dof:dof + ndof] > 0) and on("mjDSBL_FRICTIONLOSS")
    if ndof == 1:         # the mechanism's limits= and friction= options decide
        if limited:
            spec.lower, spec.upper = (float(v) for v in model.jnt_range[j])
        if lossy:
            spec.friction = float(model.dof_frictionloss[dof])
    else:
        if limited:
            skip("position limits of ball joints", name)
        if lossy:
            skip("friction loss of ball and free joints", name)
    for attr, what in (("dof_dampingpoly", "nonlinear damping"),
                       ("jnt_stiffnesspoly", "nonlinear stiffness")):
        arr = getattr(model, attr, None)
        if arr is not None and np.any(np.asarray(arr[dof if attr[0] == "d" else j]) != 0):
            skip(what, name)
    return spec


def colliding_geoms(model) -> list[int]:
    """The geoms that MuJoCo's collision filter lets touch another: on bodies that do not
    move together (``body_weldid``), with matching ``contype``/``conaffinity`` bits, not
    a parent and its child (when the parent filter is on and the parent is not the
    world); and the geoms of explicit ``<pair>``s, which collide whatever their masks;
    none when the model's contacts are disabled."""
    bit = _mujoco().mjtDisableBit
    flags = int(model.opt.disableflags)
    if flags & (int(bit.mjDSBL_CONSTRAINT) | int(bit.mjDSBL_CONTACT)):
        return []
    filter_parent = not flags & int(bit.mjDSBL_FILTERPARENT)
    paired = {int(g) for p in range(int(model.npair))
              for g in (model.pair_geom1[p], model.pair_geom2[p])}
    if model.ngeom < 2:
        return sorted(paired)
    weld = np.asarray(model.body_weldid)[model.geom_bodyid]
    parent = np.asarray(model.body_weldid)[model.body_parentid]
    wa, wb = weld[:, None], weld[None, :]
    ok = (wa != wb) & ((model.geom_contype[:, None] & model.geom_conaffinity[None, :]) |
                       (model.geom_contype[None, :] & model.geom_conaffinity[:, None])
                       ).astype(bool)
    if filter_parent:
        pa, pb = parent[wa], parent[wb]
        ok &= ~(((pa == wb) & (wb != 0)) | ((pb == wa) & (wa != 0)))
    return sorted(paired | {int(i) for i in np.flatnonzero(ok.any(axis=1))})


def _model_name(model, source: str) -> str:
    try:
        name = model.names[:model.names.index(b"\0")].decode() if model.names else ""
    except (ValueError, AttributeError):
        name = ""
    return name or os.path.splitext(os.path.basename(source))[0] or "mjcf"


def from_mujoco(model: Any, *, gravity: Any = None,
                efforts: Mapping[str, Any] | None = None, strict: bool = False,
                limits: Any = None, friction: bool = False, contacts: bool = True,
                source: str = "<model>", warn: bool = True) -> Mechanism:
    """A mechanism from a compiled ``mujoco.MjModel`` (see the module docstring).

    Parameters
    ----------
    gravity : 3-vector, optional
        m/s^2, global; default the model's (``<option gravity>``, zero when the gravity
        flag is disabled).
    efforts : mapping of joint name to effort, optional
        Each hinge's and slide's actuator effort (N m or N; a number, TimeFunction or
        StateFunction); 0 where not given.
    strict : bool
        Refuse inertias that break the triangle inequality (MuJoCo refuses them too,
        unless ``balanceinertia`` is set).
    limits : None, "impact" or a mapping
        Hinge and slide ``range`` (of limited joints): not enforced (None, the default;
        reported), or stops: ``"impact"`` (restitution 0) or the keywords of
        :meth:`~elements.Joint.add_limit` (MuJoCo's own limits are soft constraints;
        ``{"stiffness": ..., "damping": ...}`` is the closest).
    friction : bool
        Put ``frictionloss`` on hinges and slides as Coulomb friction with stiction
        (:meth:`~elements.Joint.add_friction`); by default it is reported as not
        imported.
    contacts : bool
        Give the geoms that may collide collision shapes with contact laws from their
        friction, solref and solimp (:mod:`elements.files.mjcf_contact`, which lists
        what is approximated; default); False leaves contact out (reported).
    source : str
        The name used in messages.
    warn : bool
        Give what the import has to say (``import_report.said``) as
        :class:`~elements.RobotImportWarning` s, attributed to the caller's line; False
        leaves it to the caller (a model file's run says it once).

    Returns
    -------
    Mechanism
        With ``frames`` (every body's frame by name) and ``import_report``.
    """
    return _from_mujoco(model, [], gravity=gravity, efforts=efforts, strict=strict,
                        limits=limits, friction=friction, contacts=contacts, source=source,
                        warn=warn)


def _from_mujoco(model: Any, compiler: list[str], *, gravity: Any = None,
                 efforts: Mapping[str, Any] | None = None, strict: bool = False,
                 limits: Any = None, friction: bool = False, contacts: bool = True,
                 source: str = "<model>", warn: bool = True) -> Mechanism:
    """:func:`from_mujoco`, with the warnings of MuJoCo's compiler (``compiler``) said
    first."""
    mujoco = _mujoco()
    tree, skipped = read_mujoco_tree(model, source, contacts=contacts)
    if gravity is None:
        off = model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY
        gravity = np.zeros(3) if off else np.array(model.opt.gravity, dtype=float)
    try:
        mech = build_mechanism(tree, gravity=gravity, efforts=dict(efforts or {}),
                               strict=strict, limits=limits, friction=friction,
                               error=MJCFError)
    except MJCFError:
        raise
    except ModelError as exc:
        raise MJCFError(f"{source}: {exc}") from None
    report = mech.import_report
    # floating bodies start where the file draws them (MuJoCo's qpos0), at rest
    _, _, free = mujoco_coordinates(mech, model, model.qpos0)
    mech.free_start = {b: {"position": s["position"], "rotation": s["rotation"]}
                       for b, s in free.items()}
    if contacts:
        from elements.files.mjcf_contact import add_contacts
        try:
            add_contacts(mech, model, _names(model, "geom", model.ngeom, "geom"),
                         _names(model, "body", model.nbody, "body"),
                         colliding_geoms(model), report)
        except ModelError as exc:
            raise MJCFError(f"{source}: contact: {exc}") from None
    report.said[:0] = compiler
    report.warnings[:0] = compiler
    for kind, names in skipped.items():
        report.not_imported.setdefault(kind, []).extend(names)
    if skipped:
        said = "; ".join(f"{kind}: {', '.join(names[:6])}{', ...' if len(names) > 6 else ''}"
                         for kind, names in skipped.items())
        report.note(f"{source}: not imported: {said} (see mechanism.import_report)")
    if warn:
        report.say()
    return mech


def _compile(text: str | None, path: str | None, source: str,
             messages: list[str] | None = None) -> Any:
    """The compiled model. MuJoCo's compiler warnings (a deprecated attribute, say)
    become messages naming ``source``, put in ``messages`` (else said as
    RobotImportWarnings): by default MuJoCo would print them and append them to
    MUJOCO_LOG.TXT in the working folder, a file the user did not ask for. A document
    that is not MJCF (a URDF, which MuJoCo would read too) is refused."""
    if path is not None:
        text = read_text(path, "MJCF file", MJCFError)
    root = xml_root(text) if isinstance(text, str) else None
    if root is not None and root != "mujoco":
        what = " (a URDF: load it with load_urdf, or format = \"urdf\")" \
            if root == "robot" else ""
        raise MJCFError(f"{source}: not an MJCF file: its root element is <{root}>{what}; "
                        f"valid: an MJCF document, whose root element is <mujoco>")
    mujoco = _mujoco()
    said: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda msg: said.append(str(msg).strip()))
    try:
        if path is not None:
            model = mujoco.MjModel.from_xml_path(path)
        else:
            model = mujoco.MjModel.from_xml_string(text)
    except ValueError as exc:
        raise MJCFError(f"{source}: MuJoCo's compiler refused the model: "
                        f"{str(exc).strip()}") from None
    finally:
        mujoco.set_mju_user_warning(previous)
    said = [f"{source}: MuJoCo's compiler: {msg}" for msg in said]
    if messages is None:
        for msg in said:
            warn(msg, RobotImportWarning)
    else:
        messages.extend(said)
    return model


def loads_mjcf(text: str, *, source: str = "<string>", **kwargs: Any) -> Mechanism:
    """A mechanism from MJCF text (compiled by MuJoCo; see :func:`from_mujoco` for the
    options). Files it includes or meshes it names are looked up from the current
    folder; use :func:`load_mjcf` for a file with assets beside it.

    Raises
    ------
    MJCFError
        When MuJoCo's compiler refuses the text (its message, with ``source``) or the
        model uses what is not supported, naming the body or joint."""
    if not isinstance(text, str):
        raise MJCFError(f"{source}: MJCF text must be a string, got {type(text).__name__}")
    said: list[str] = []
    return _from_mujoco(_compile(text, None, source, said), said, source=source, **kwargs)


def load_mjcf(path: str, **kwargs: Any) -> Mechanism:
    """A mechanism from an MJCF file (compiled by MuJoCo, with its includes and assets
    found beside it; see :func:`from_mujoco` for the options). A file that is not MJCF
    (a URDF, which MuJoCo would also read) is refused."""
    said: list[str] = []
    return _from_mujoco(_compile(None, str(path), str(path), said), said, source=str(path),
                        **kwargs)


def mujoco_coordinates(mech: Mechanism, model: Any, qpos: Any, qvel: Any = None
                       ) -> tuple[dict[str, Any], dict[str, Any], dict[str, dict]]:
    """(q, qd, free) for ``initial_state``, ``direct_dynamics`` and ``simulate`` from
    MuJoCo's ``qpos`` and ``qvel`` of the model ``mech`` was imported from.

    Hinges and slides: q = qpos - qpos0 (rad or m), qd = qvel. Ball joints: the child's
    rotation relative to the parent in parent coordinates (3x3) and the relative angular
    velocity in parent coordinates. Free bodies: rotation and centre of mass, angular
    velocity and centre velocity, global."""
    qpos = np.asarray(qpos, dtype=float)
    qvel = np.zeros(model.nv) if qvel is None else np.asarray(qvel, dtype=float)
    if qpos.shape != (model.nq,) or qvel.shape != (model.nv,):
        raise MJCFError(f"qpos and qvel must have {model.nq} and {model.nv} entries, got "
                        f"{qpos.shape} and {qvel.shape}")
    report = mech.import_report
    bodies = _names(model, "body", model.nbody, "body")
    joints = _names(model, "joint", model.njnt, "joint")
    q: dict[str, Any] = {}
    qd: dict[str, Any] = {}
    free: dict[str, dict] = {}
    for j in range(model.njnt):
        a, d = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        kind = int(model.jnt_type[j])
        if kind == 0:
            link = bodies[int(model.jnt_bodyid[j])]
            frame = mech.frames[link]
            A_link = quat_to_matrix(qpos[a + 3:a + 7])
            A = A_link @ frame.rotation.T
            w = A_link @ qvel[d + 3:d + 6]
            offset = -A @ frame.position               # body origin -> centre of mass
            free[frame.body] = {"rotation": A, "position": qpos[a:a + 3] + offset,
                                "angular_velocity": w,
                                "velocity": qvel[d:d + 3] + np.cross(w, offset)}
            continue
        name = report.joints[joints[j]]
        if kind == 1:
            R0 = mech.joint(name).R0
            Rrel = R0 @ quat_to_matrix(qpos[a:a + 4]) @ R0.T
            q[name] = Rrel
            qd[name] = Rrel @ R0 @ qvel[d:d + 3]
        else:          # (a hinge or slide in a body with several: a composite's coordinate)
            joint, coordinate = report.coordinates[joints[j]]
            value, rate = float(qpos[a] - model.qpos0[a]), float(qvel[d])
            if coordinate is None:
                q[joint], qd[joint] = value, rate
            else:
                q.setdefault(joint, {})[coordinate] = value
                qd.setdefault(joint, {})[coordinate] = rate
    return q, qd, free
