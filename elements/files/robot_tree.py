"""A robot tree (:mod:`elements.files.robot_spec`) as a mechanism.

An importer (:mod:`elements.files.urdf`, :mod:`elements.files.mjcf`) reads a file into a
:class:`RobotTree` (links with their inertials, joints with their frames, in SI units and
the file's own frames); :func:`build_mechanism` turns the tree into a
:class:`~elements.Mechanism`, in one place for every format:

- **Fixed joints are merged**, as Pinocchio and MuJoCo do: the links joined by fixed joints
  form one rigid body whose mass, centre of mass and central inertia are the exact sums
  (parallel-axis theorem). Massless links (sensor frames, tool flanges, links without an
  inertial) are harmless there. Every link stays available by name: as a point of its
  body (``body.points[link]``, the link frame's origin) and as a frame
  (``mechanism.frames[link]``: body, position, rotation).
- The root link's group is the ground, or with ``floating_base=True`` a free body
  (6 freedoms; its initial pose and twist through ``initial_state(free=...)``). By
  default it starts at rest with the root link frame at the global origin, with the
  global axes (:attr:`~elements.Mechanism.free_start`: its centre at the root link's
  centre of mass), as Pinocchio's ``neutral`` configuration of a free-flyer root puts
  it; the child of a ``floating`` joint from a fixed root likewise starts with its link
  frame where the joint's origin puts it.
- **Names**: links and joints have separate name spaces in a robot description but one
  in a mechanism; a body whose name is taken (by a joint, ``ground``, ``gravity``) gets the
  suffix ``_link``, a ``.`` becomes ``_``; :attr:`ImportReport.renamed` lists every change.
- **Chains through massless links** (a robot's 2- or 3-DOF wrist, hip or shoulder as
  revolutes in sequence, MJCF's several joints in one body, a planar root as slide,
  slide, hinge) become one joint: universal, gimbal or planar where they have that
  form, a general chain joint otherwise (:mod:`elements.files.joint_chains`), each file joint
  a coordinate of it
  (:attr:`ImportReport.coordinates`, :attr:`ImportReport.composed`). A point mass
  inside the chain (a link with mass and no rotational inertia) is carried by the body
  before it when it lies on the axes before it, by the body after when on the axes after
  it (:attr:`ImportReport.lumped`); otherwise the import is refused, naming the link.
- A link group without mass moved by a joint, with no moving joint after it, is refused
  naming the joint: its motion has no inertia.
- Inertias that break the triangle inequality load with a :class:`RobotImportWarning`
  naming the body, its links and principal moments (``strict=True`` refuses them).
- A body whose central inertia is not positive definite (a point mass, a rod with no
  inertia about its own axis, a negative principal moment) is refused naming its links,
  unless ``min_inertia`` is given: then its principal moments below that bound are
  raised to it, as MuJoCo's compiler attribute ``boundinertia`` does (listed in
  :attr:`ImportReport.bounded`, warned about). This changes the model: a quick fix for
  descriptions that are not physical, made only on request.
- What the mechanism does not represent is listed in :attr:`ImportReport.not_imported`
  and said once in a warning: position limits, friction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dataclasses

import numpy as np

from bondgraph import ModelError

from elements.parts.couplings import JointCoupling
from elements.files.joint_chains import ChainMember, compose_chain
from elements.joints.kinds import AxisActuator, AxisDamper, AxisSpring, PlanarJoint
from elements.mechanism import Mechanism
from elements.parts.rigid_body import SINGULAR_INERTIA, Inertia, RigidBody
from elements.files.robot_spec import (
    URDF_JOINTS, Frame, ImportReport, has_axis, is_fixed, is_floating, JointSpec, LinkSpec, RobotImportWarning, RobotTree, _add_point_mass,
    _fix_massless, _Group, _groups, _subtree_mass, _tree_order,
)

__all__ = ["LinkSpec", "JointSpec", "RobotTree", "ImportReport", "Frame",
           "RobotImportWarning", "build_mechanism"]

MOVING_JOINTS = {t: cls for t, cls in URDF_JOINTS.items() if not is_fixed(cls)}
"""URDF's moving joint types (:data:`~elements.files.robot_spec.URDF_JOINTS`, the one
table, without ``fixed``); kept for code that read it here. Each importer maps its
format's types to joint classes in its own table (URDF: ``URDF_JOINTS``, MJCF:
``elements.files.mjcf._TYPES``); the tree reads the rest from the classes' contract."""


def _in_plane_x(R: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """The joint frame's x axis (else its y axis) projected onto the plane normal to
    ``normal``: a planar joint's first in-plane direction."""
    n = normal / np.linalg.norm(normal)
    for col in (R[:, 0], R[:, 1]):
        v = col - (col @ n) * n
        if np.linalg.norm(v) > 1e-6:
            return v / np.linalg.norm(v)
    raise ModelError("the joint frame has no direction in the plane")


def _unique_names(tree: RobotTree, moving: list[JointSpec], groups, body_reps,
                  report: ImportReport) -> tuple[dict[str, str], dict[str, str]]:
    """Mechanism names for the moving joints and the bodies (by representative link)."""
    taken = {"ground", "gravity"}
    joint_names = {}
    for j in moving:
        n = j.name.replace(".", "_")
        base, k = n, 2
        while n in taken:
            n, k = f"{base}_{k}", k + 1
        taken.add(n)
        joint_names[j.name] = n
        if n != j.name:
            report.renamed[f"joint {j.name}"] = n
    body_names = {}
    for rep in body_reps:
        n = rep.replace(".", "_")
        if n in taken:
            n = f"{n}_link"
        base, k = n, 2
        while n in taken:
            n, k = f"{base}{k}", k + 1
        taken.add(n)
        body_names[rep] = n
        if n != rep:
            report.renamed[f"link {rep}"] = n
    return joint_names, body_names


def _unit_frames(unit: list[JointSpec], groups, group_of):
    """Each member's child link frame (R, o) and its axis and anchor (unit vector, point)
    in the frame of the group before the unit, at rest."""
    gp = groups[group_of[unit[0].parent]]
    R, o = gp.pose[unit[0].parent]
    out = []
    for k, j in enumerate(unit):
        if k:                    # the parent link, in the group the member before moves
            Rl, pl = groups[unit[k - 1].child].pose[j.parent]
            R, o = out[-1][0] @ Rl, out[-1][1] + out[-1][0] @ pl
        Rk, ok = R @ j.rotation, o + R @ j.xyz
        axis = np.asarray(j.axis, dtype=float)
        n = np.linalg.norm(axis)
        out.append((Rk, ok, Rk @ axis / n if n > 0 else axis,
                    ok + Rk @ np.asarray(j.anchor, dtype=float)))
    return out


def _is_point_mass(g: _Group) -> bool:
    return g.mass > 0 and float(np.linalg.eigvalsh(g.inertia).max()) <= 1e-12 * g.mass


def _units(moving: list[JointSpec], groups, group_of, moving_children) -> list[list[JointSpec]]:
    """The moving joints in units: a joint alone, or a chain of joints with an axis whose
    links between carry nothing of their own (massless, or a point mass) and one moving
    joint each (a composite joint; see :mod:`elements.files.joint_chains`)."""
    taken: set[str] = set()
    units = []
    for j in moving:
        if j.name in taken:
            continue
        unit, cur = [j], j
        while has_axis(cur.kind):
            g = groups[cur.child]
            kids = moving_children.get(g.rep, [])
            if len(kids) != 1 or not has_axis(kids[0].kind) or not (
                    g.mass <= 0 or _is_point_mass(g)) or not _subtree_mass(
                    kids[0].child, groups, group_of, moving_children) > 0:
                break
            unit.append(kids[0])
            taken.add(kids[0].name)
            cur = kids[0]
        units.append(unit)
    return units


def _lump(unit, groups, group_of, report, body_names, src, error) -> None:
    """Move the point masses inside a chain onto a body: the one before the chain if the
    mass lies on the axes of the joints before it, the one after if on the axes of the
    joints after it (either way it does not move relative to that body); else refuse."""
    frames = _unit_frames(unit, groups, group_of)
    gp, gc = groups[group_of[unit[0].parent]], groups[unit[-1].child]
    Rc, oc = frames[-1][0], frames[-1][1]

    def moving(x, members, fr):
        return [m for m, (_, _, a, p) in zip(members, fr)
                if m.kind.coordinate_unit == "m" or
                np.linalg.norm((x - p) - a * ((x - p) @ a)) > 1e-9 * max(1.0, np.abs(x).max())]
    for k in range(1, len(unit)):
        g = groups[unit[k - 1].child]
        if g.mass <= 0:
            continue
        R, o = frames[k - 1][0], frames[k - 1][1]
        x = o + R @ g.com
        before, after = moving(x, unit[:k], frames[:k]), moving(x, unit[k:], frames[k:])
        if not before:
            _add_point_mass(gp, g.mass, x)
            target = body_names.get(gp.rep, "ground")
        elif not after:
            _add_point_mass(gc, g.mass, Rc.T @ (x - oc))
            target = body_names[gc.rep]
        else:
            raise error(f"{src}: link(s) {', '.join(g.pose)}: a point mass ({g.mass:g} kg, "
                        f"no rotational inertia) between the moving joints "
                        f"{unit[k - 1].name} and {unit[k].name}, moved relative to the "
                        f"bodies on both sides (by joints {before[0].name} and "
                        f"{after[0].name}): a point mass on a moving joint is not "
                        f"supported; give the link an inertia, or load with "
                        f"min_inertia=<kg m^2> (a lower bound on principal moments, as "
                        f"MuJoCo's boundinertia; it changes the model)")
        for link in g.pose:
            report.lumped[link] = target
        g.mass = 0.0


def _bound_inertias(groups, root: str, floating_base: bool, bound: float
                    ) -> dict[str, tuple[list[float], list[float]]]:
    """Raise every moving link group's principal moments below ``bound`` to it (kg m^2;
    its principal axes kept); returns each changed group's links (joined by ", ") ->
    (the principal moments before, after)."""
    out = {}
    for rep, g in groups.items():
        if g.mass <= 0 or (rep == root and not floating_base) or \
                not np.all(np.isfinite(g.inertia)):     # (refused by _body, by name)
            continue
        eig, V = np.linalg.eigh(g.inertia)
        if eig.min() >= bound:
            continue
        new = np.maximum(eig, bound)
        J = (V * new) @ V.T
        g.inertia = 0.5 * (J + J.T)
        out[", ".join(g.pose)] = (eig.tolist(), new.tolist())
    return out


def _check_finite(g: _Group, where: str, name: str, error) -> None:
    """Refuse a link group whose merged mass, centre or central inertia overflowed
    (values near double precision's limit in the file: masses, inertias and the
    distances of the parallel-axis terms), naming its links."""
    if np.all(np.isfinite(g.inertia)) and np.isfinite(g.mass) and \
            np.all(np.isfinite(g.com)):
        return
    raise error(f"{where} (body '{name}'): its mass, centre or central inertia is not "
                f"finite once the links are combined (mass {g.mass:g} kg, centre "
                f"{np.asarray(g.com).tolist()} m): the file's masses, inertias or "
                f"origins are too large for double precision; give values at most "
                f"1e100 in magnitude (other units if the physics needs more)")


def _body(tree, g: _Group, name: str, strict: bool, error, report) -> RigidBody:
    """The rigid body of a link group (its links named in every message)."""
    links = ", ".join(g.pose)
    where = f"{tree.source}: link{'s' if len(g.pose) > 1 else ''} {links}"
    _check_finite(g, where, name, error)
    eig = np.linalg.eigvalsh(g.inertia)
    if eig.min() <= SINGULAR_INERTIA * max(eig.max(), 0.0) or eig.max() <= 0:
        raise error(f"{where} (body '{name}', mass {g.mass:g} kg): the central inertia "
                    f"is not positive definite (principal moments {eig.tolist()} kg m^2): each "
                    f"body's equations need a positive definite one; give the link(s) a "
                    f"valid <inertial>, or load with min_inertia=<kg m^2> (a lower bound "
                    f"on principal moments, as MuJoCo's boundinertia; it changes the "
                    f"model)")
    tol = 1e-9 * eig.max()
    triangle_ok = eig[0] + eig[1] >= eig[2] - tol
    if not triangle_ok:
        msg = (f"{where} (body '{name}'): principal moments {eig.tolist()} kg m^2 break "
               f"the triangle inequality I1 + I2 >= I3 (no rigid body has them); loaded "
               f"as given (strict=True refuses them)")
        if strict:
            raise error(msg.split("; loaded")[0])
        report.note(msg)
    try:
        return RigidBody(name, g.mass, Inertia(g.inertia, check_triangle=triangle_ok))
    except ModelError as exc:
        raise error(f"{where}: {exc}") from None


def _attach(joint, m: JointSpec, c: str | None, efforts, stops, friction: bool) -> None:
    """A file joint's damping, stiffness, armature, actuator, limits and friction on its
    coordinate ``c`` of ``joint`` (None: the joint's only one)."""
    if m.damping > 0:
        joint.add_damper(AxisDamper(m.damping), coordinate=c)
    if m.stiffness > 0:
        joint.add_spring(AxisSpring(m.stiffness, m.spring_rest), coordinate=c)
    if m.armature > 0:
        joint.add_rotor(m.armature, coordinate=c)
    joint.add_actuator(AxisActuator(efforts.get(m.name, 0.0)), coordinate=c)
    if stops is not None and _limited(m):
        joint.add_limit(m.lower, m.upper, coordinate=c, **stops)
    if friction and m.friction > 0:
        joint.add_friction(m.friction, coordinate=c)


def _start(link: Frame, R: np.ndarray, o: np.ndarray) -> dict[str, np.ndarray]:
    """A free body's start (:attr:`~elements.Mechanism.free_start`: its centre's
    ``position`` and its ``rotation``, global) that puts the frame ``link`` of the body at
    rotation ``R`` and origin ``o`` (m), global."""
    A = R @ link.rotation.T
    return {"position": o - A @ link.position, "rotation": A}


def _limited(j) -> bool:
    """Whether a joint of the description has position limits (URDF writes 0, 0 for
    none on a joint type that needs them)."""
    return (j.lower is not None or j.upper is not None) and (j.lower, j.upper) != (0.0, 0.0)


def _stop_options(limits: Any, src: str, error) -> dict[str, Any] | None:
    """The ``add_limit`` keywords of an importer's ``limits`` option (None: not
    enforced)."""
    if limits is None:
        return None
    if limits == "impact":
        return {"restitution": 0.0}
    if isinstance(limits, Mapping):
        allowed = ("restitution", "stiffness", "damping", "rest_speed")
        bad = [k for k in limits if k not in allowed]
        if not bad:
            return dict(limits)
        raise error(f"{src}: limits= takes the keywords {', '.join(allowed)}, got "
                    f"{', '.join(map(str, bad))}")
    raise error(f"{src}: limits must be None, 'impact' or a mapping of add_limit keywords "
                f"(restitution, or stiffness and damping), got {limits!r}")


def build_mechanism(tree: RobotTree, *, gravity: Any = (0.0, 0.0, -9.81),
                    efforts: dict[str, Any] | None = None, floating_base: bool = False,
                    strict: bool = False, mimic: str = "couple", limits: Any = None,
                    friction: bool = False, massless: str = "refuse",
                    min_inertia: float | None = None,
                    error: type[ModelError] = ModelError) -> Mechanism:
    """The mechanism of a robot tree (see the module docstring for the mapping).

    Parameters
    ----------
    gravity : 3-vector
        m/s^2, global (the root link's frame).
    efforts : mapping of joint name (as in the file) to an actuator effort, optional
        Constant (N m or N), TimeFunction or StateFunction; every moving joint gets an
        actuator (0 where not given).
    floating_base : bool
        Make the root link (with the links fixed to it) a free body instead of the
        ground, starting by default (``mechanism.free_start``) at rest with the root
        link frame at the global origin, with the global axes.
    strict : bool
        Refuse an inertia that breaks the triangle inequality instead of warning.
    mimic : "couple", "independent" or "refuse"
        A mimic joint (q = multiplier q_leader + offset) becomes a
        :class:`~elements.parts.couplings.JointCoupling` named ``<joint>_mimic`` (its effort
        reported like any constraint's), or an independent joint (listed in
        ``import_report.not_imported`` and warned about, as Pinocchio's ``buildModel``
        loads it by default), or is refused.
    limits : None, "impact" or a mapping of :meth:`~elements.Joint.add_limit` keywords
        Position limits not enforced (None: reported), or stops on every limited joint
        with an axis (``"impact"``: plastic impact stops, restitution 0).
    friction : bool
        Joint friction (N m or N) as Coulomb friction with stiction, or (False)
        reported as not imported.
    massless : "refuse" or "fix"
        A joint that moves no mass (every link after it massless: a hand of massless
        finger frames) has singular equations: refused naming the joint, or (``"fix"``)
        made fixed at its coordinate 0, listed in ``import_report.not_imported`` and
        warned about (the other joints' dynamics are unchanged: Pinocchio's ABA gives
        NaN for such a model, and its reduced model with those joints locked equals
        this one).
    min_inertia : float, optional
        kg m^2. A lower bound on every body's principal moments of inertia (about its
        centre of mass), as MuJoCo's ``boundinertia``: a link group with a smaller one
        (a point mass, a thin rod, a negative moment) gets it raised to the bound, its
        principal axes kept; listed in ``import_report.bounded`` and warned about. By
        default (None) such a body is refused naming its links. It changes the
        dynamics: use a bound far below the robot's real inertias.
    error : ModelError subclass
        The error raised (the importer's, e.g. URDFError).

    Returns
    -------
    Mechanism
        With ``frames`` (every link by name) and ``import_report``
        (:class:`ImportReport`) set. What the import has to say is in
        ``import_report.said``, not yet said: the importer gives it
        (:meth:`ImportReport.say`) at its user's call.
    """
    src = tree.source
    if mimic not in ("couple", "refuse", "independent"):
        raise error(f"{src}: mimic must be 'couple', 'independent' or 'refuse', got "
                    f"{mimic!r}")
    if not tree.links:
        raise error(f"{src}: the description has no links")
    if massless not in ("refuse", "fix"):
        raise error(f"{src}: massless must be 'refuse' or 'fix', got {massless!r}")
    if min_inertia is not None and not (isinstance(min_inertia, (int, float)) and
                                        np.isfinite(min_inertia) and min_inertia > 0):
        raise error(f"{src}: min_inertia must be a positive number of kg m^2 (a lower bound "
                    f"on principal moments) or None, got {min_inertia!r}")
    stops = _stop_options(limits, src, error)
    root, order = _tree_order(tree, error)
    for k, j in enumerate(order):          # (a spec without a class: URDF's vocabulary)
        if j.kind is None:
            if j.type not in URDF_JOINTS:
                raise error(f"{src}: joint '{j.name}': unknown type {j.type!r}; valid: "
                            f"{', '.join(t for t in URDF_JOINTS if t != 'spherical')}, "
                            f"and PyBullet's spherical")
            order[k] = dataclasses.replace(j, kind=URDF_JOINTS[j.type])
    fixed_massless: list[str] = []
    if massless == "fix":
        order, fixed_massless = _fix_massless(tree, order, mimic, error)
    for j in order:
        if j.mimic is not None and mimic == "refuse":
            raise error(f"{src}: joint '{j.name}': <mimic> (a coupling to joint "
                        f"'{j.mimic[0]}') refused (mimic='refuse'); mimic='couple' couples "
                        f"the joints, mimic='independent' loads it as an independent joint")
    names = {j.name: j for j in order}
    for j in order:
        if j.mimic is not None and mimic == "couple" and not is_fixed(j.kind) and (
                j.mimic[0] not in names or not has_axis(names[j.mimic[0]].kind) or
                not has_axis(j.kind)):
            raise error(f"{src}: joint '{j.name}': <mimic joint='{j.mimic[0]}'> must name a "
                        f"revolute, continuous or prismatic joint of the file, and be on one "
                        f"(mimic='independent' ignores the coupling)")
    groups, group_of = _groups(tree, root, order)
    bounded = _bound_inertias(groups, root, floating_base, min_inertia) \
        if min_inertia is not None else {}
    moving = [j for j in order if not is_fixed(j.kind)]
    moving_children: dict[str, list[JointSpec]] = {}
    for j in moving:
        moving_children.setdefault(group_of[j.parent], []).append(j)
    units = _units(moving, groups, group_of, moving_children)
    inner = {groups[m.child].rep for unit in units for m in unit[:-1]}
    report = ImportReport()
    report.bounded = bounded
    if bounded:
        msg = (f"{src}: principal moments of inertia raised to min_inertia = "
               f"{min_inertia:g} kg m^2 (the dynamics change) for the links "
               f"{', '.join(bounded)} (see mechanism.import_report.bounded)")
        report.note(msg)
    body_reps = [g for g in groups if (g != root or floating_base) and g not in inner]
    joint_names, body_names = _unique_names(tree, moving, groups, body_reps, report)
    for unit in units:
        if len(unit) > 1:
            _lump(unit, groups, group_of, report, body_names, src, error)
    mech = Mechanism(tree.name.replace(".", "_") or "robot", gravity=gravity)
    bodies: dict[str, RigidBody] = {}
    if not floating_base:
        bodies[root] = mech.ground
    for j in moving:                      # massless groups moved by a joint
        g = groups[j.child]
        if g.mass > 0 or g.rep in inner:
            continue
        if _subtree_mass(j.child, groups, group_of, moving_children) > 0:
            raise error(f"{src}: joint '{j.name}' moves link(s) {', '.join(g.pose)} without "
                        f"mass, which carry the moving joints "
                        f"{', '.join(c.name for c in moving_children[j.child])}: a massless "
                        f"link between moving joints is supported where one moving joint "
                        f"follows another (a chain of at most six, composed into one "
                        f"joint); give the link a mass and inertia")
        raise error(f"{src}: joint '{j.name}' moves only massless links "
                    f"({', '.join(g.pose)}): its motion has no inertia (the equations are "
                    f"singular); make the joint fixed, give a link an <inertial>, or load "
                    f"with massless='fix' (every joint that moves no mass made fixed)")
    if floating_base and groups[root].mass <= 0:
        raise error(f"{src}: floating base: the root link '{root}' (with the links fixed "
                    f"to it: {', '.join(groups[root].pose)}) has no mass; a free body "
                    f"needs mass and inertia (a massless base is a fixed one in "
                    f"PyBullet's and Gazebo's convention: floating_base=False)")
    for rep in body_reps:
        bodies[rep] = mech.add_body(_body(tree, groups[rep], body_names[rep], strict, error,
                                          report))
    frames: dict[str, Frame] = {}
    for rep, g in groups.items():
        if rep in inner:
            report.inner_links += list(g.pose)
            continue
        body = bodies[rep]
        com = np.zeros(3) if body.is_ground else g.com
        report.merged[body.name] = list(g.pose)
        for link, (R, p) in g.pose.items():
            body.add_point(link, p - com)
            frames[link] = Frame(body.name, p - com, R)
            report.bodies[link] = body.name
    if floating_base:                     # the root link frame at the global origin
        mech.free_start[bodies[root].name] = _start(frames[root], np.eye(3), np.zeros(3))
    efforts = dict(efforts or {})
    driven = [j.name for j in moving if has_axis(j.kind)]
    unknown = [n for n in efforts if n not in driven]
    if unknown:
        raise error(f"{src}: efforts given for {', '.join(unknown)}, not joints of the file "
                    f"with an axis; joints with an axis: {', '.join(driven) or 'none'}")
    limited, frictional, mimics, unlimitable = [], [], [], []
    for unit in units:
        j, last = unit[0], unit[-1]
        if is_floating(j.kind) and not floating_base and group_of[j.parent] == root:
            # its child is a free body (on its implicit free joint, no ports), starting
            # with its link frame where the joint's origin puts it
            R, o = _unit_frames(unit, groups, group_of)[-1][:2]
            mech.free_start[bodies[last.child].name] = _start(frames[last.child], R, o)
            continue
        gp, gc = groups[group_of[j.parent]], groups[last.child]
        parent = bodies[gp.rep]
        com_p = np.zeros(3) if parent.is_ground else gp.com
        frames_u = _unit_frames(unit, groups, group_of)
        R, o, axis, X = frames_u[-1]
        if len(unit) == 1:
            cls, coords = j.kind, (None,)
            kw = {"axis": axis if cls.n_free else None}
            if cls.needs_axis is False:
                kw = {}
            elif cls.n_free and not np.linalg.norm(axis) > 0:
                raise error(f"{src}: joint '{j.name}': its axis has zero length")
            if cls is PlanarJoint:
                kw["x_axis"] = _in_plane_x(R, axis)
        else:
            for m, f in zip(unit, frames_u):
                if not np.linalg.norm(f[2]) > 0:
                    raise error(f"{src}: joint '{m.name}': its axis has zero length")
            try:
                cls, kw, coords = compose_chain([
                    ChainMember(m.name, "prismatic" if m.kind.coordinate_unit == "m" else
                                "revolute",
                                f[2], f[3]) for m, f in zip(unit, frames_u)])
            except ModelError as exc:
                raise error(f"{src}: {exc}") from None
            X = kw.pop("point")
        n_free = cls.n_free if len(unit) == 1 else len(coords)   # (a chain's, per joint)
        if not n_free and j.name in efforts:
            raise error(f"{src}: joint '{j.name}' ({j.type}) has no axis: no effort of its "
                        f"own (a load on the body acts instead)")
        # (a planar joint's damping, limits and friction have no one coordinate to act on)
        attachable = n_free > 0 and (len(unit) > 1 or has_axis(j.kind))
        try:
            joint = cls(joint_names[j.name], parent, bodies[last.child],
                        parent_point=X - com_p, child_point=R.T @ (X - o) - gc.com,
                        rest_rotation=R, **kw)
            if cls.n_free > 1 and len(unit) == 1:      # (so efforts can drive them)
                for cname, _ in cls.coordinates:
                    joint.add_actuator(AxisActuator(0.0), coordinate=cname)
            for m, c in zip(unit, coords):
                if attachable:
                    _attach(joint, m, c, efforts, stops, friction)
                elif m.damping > 0 or m.stiffness > 0 or m.armature > 0:
                    report.not_imported.setdefault(
                        "dynamics of planar and floating joints (damping, stiffness, "
                        "armature)",
                        []).append(m.name)
        except ModelError as exc:
            raise error(f"{src}: joint '{j.name}': {exc}") from None
        mech.add_joint(joint)
        if len(unit) > 1:
            report.composed[joint.name] = [m.name for m in unit]
        for m, c in zip(unit, coords):
            report.joints[m.name] = joint.name
            report.coordinates[m.name] = (joint.name, c)
            if len(unit) == 1 and attachable:
                joint.effort_limit = m.effort_limit
                joint.limits = (m.lower, m.upper)
            if _limited(m) and not attachable:
                unlimitable.append(m.name)
            elif _limited(m) and stops is None:
                limited.append(m.name)
            if m.friction > 0 and not (friction and attachable):
                frictional.append(m.name)
            if m.mimic is not None:
                if c is not None and mimic == "couple":
                    raise error(f"{src}: joint '{m.name}' <mimic>: it is a coordinate of the "
                                f"composite joint '{joint.name}' ({', '.join(report.composed[joint.name])}); "
                                f"couplings take one-coordinate joints (mimic='independent' "
                                f"ignores the coupling)")
                mimics.append(m.name)
    fixed_mimics = [j.name for j in order if is_fixed(j.kind) and j.mimic is not None
                    and j.name not in fixed_massless]
    if fixed_mimics:
        report.not_imported["<mimic> on fixed joints (nothing to couple)"] = fixed_mimics
    if limited:
        report.not_imported["position limits (not enforced; limits= enforces them)"] = \
            limited
    if unlimitable:
        report.not_imported["limits of joints without one coordinate per axis (planar, "
                            "spherical, floating: not enforced)"] = unlimitable
    if frictional:
        report.not_imported["friction"] = frictional
    if fixed_massless:
        report.not_imported["joints that move no mass (made fixed; massless='fix')"] = \
            fixed_massless
    if mimics and mimic == "independent":
        report.not_imported["mimic couplings (the joints move independently)"] = mimics
    elif mimics:
        for name in mimics:
            leader, multiplier, offset = names[name].mimic
            if report.coordinates[leader][1] is not None:
                raise error(f"{src}: joint '{name}' <mimic joint='{leader}'>: the leader is a "
                            f"coordinate of the composite joint "
                            f"'{report.coordinates[leader][0]}'; couplings take "
                            f"one-coordinate joints (mimic='independent' ignores the "
                            f"coupling)")
            stem, cname, k = f"{joint_names[name]}_mimic", f"{joint_names[name]}_mimic", 2
            while cname in mech.joints or cname in mech.bodies or cname in mech.couplings:
                cname, k = f"{stem}{k}", k + 1
            try:
                mech.add_coupling(JointCoupling(
                    cname, mech.joint(report.joints[leader]), mech.joint(report.joints[name]),
                    multiplier, offset))
            except ModelError as exc:
                raise error(f"{src}: joint '{name}' <mimic>: {exc}") from None
            report.couplings[name] = cname
        mimics = []
    if report.not_imported:
        said = "; ".join(f"{kind} of {len(names)} joint(s): {', '.join(names[:6])}"
                         f"{', ...' if len(names) > 6 else ''}"
                         for kind, names in report.not_imported.items())
        msg = f"{src}: not imported: {said} (see mechanism.import_report)"
        # (limits alone are not said: every description has them; the report lists them)
        report.note(msg, say=bool(frictional or mimics or fixed_massless))
    mech.frames = frames
    mech.import_report = report
    return mech
