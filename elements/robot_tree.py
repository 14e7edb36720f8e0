"""Robot descriptions as a tree of links and joints, and that tree as a mechanism.

An importer (:mod:`elements.urdf`, and later MJCF) reads a file into a :class:`RobotTree`
(links with their inertials, joints with their frames, in SI units and the file's own
frames); :func:`build_mechanism` turns the tree into a :class:`~elements.Mechanism`, in
one place for every format:

- **Fixed joints are merged**, as Pinocchio and MuJoCo do: the links joined by fixed joints
  form one rigid body whose mass, centre of mass and central inertia are the exact sums
  (parallel-axis theorem). Massless links (sensor frames, tool flanges, links without an
  inertial) are harmless there. Every link stays available by name: as a point of its
  body (``body.points[link]``, the link frame's origin) and as a frame
  (``mechanism.frames[link]``: body, position, rotation).
- The root link's group is the ground, or with ``floating_base=True`` a free body
  (6 freedoms; its initial pose and twist through ``initial_state(free=...)``).
- **Names**: links and joints have separate name spaces in a robot description but one
  in a mechanism; a body whose name is taken (by a joint, ``ground``, ``gravity``) gets the
  suffix ``_link``, a ``.`` becomes ``_``; :attr:`ImportReport.renamed` lists every change.
- A link group without mass moved by a joint is refused, naming the joint: its motion
  has no inertia (a massless link between two moving joints needs the multi-coordinate
  joints that are not there yet; the message says so).
- Inertias that break the triangle inequality load with a :class:`RobotImportWarning`
  naming the body, its links and principal moments (``strict=True`` refuses them).
- What the mechanism does not represent is listed in :attr:`ImportReport.not_imported`
  and said once in a warning: position limits, friction.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError

from .couplings import JointCoupling
from .joints import (
    AxisActuator, AxisDamper, AxisSpring, PrismaticJoint, RevoluteJoint, SphericalJoint,
)
from .mechanism import Mechanism
from .rigid_body import SINGULAR_INERTIA, Inertia, RigidBody

__all__ = ["LinkSpec", "JointSpec", "RobotTree", "ImportReport", "Frame",
           "RobotImportWarning", "build_mechanism"]

MOVING_JOINTS = {"revolute": RevoluteJoint, "continuous": RevoluteJoint,
                 "prismatic": PrismaticJoint, "ball": SphericalJoint}
"""Joint types mapped onto a joint, and the joint class each becomes (a ``floating``
joint from the ground makes its child a free body instead)."""

NOT_YET = ("planar",)
"""Joint types read but not yet mapped (they need multi-coordinate joints); a
``floating`` joint is mapped only from the ground (its child becomes a free body)."""


def _has_axis(joint_type: str) -> bool:
    """Whether a joint type becomes a joint with one free coordinate (an axis port)."""
    return joint_type in MOVING_JOINTS and MOVING_JOINTS[joint_type].n_free > 0


class RobotImportWarning(UserWarning):
    """A robot description loaded with something the mechanism changes or leaves out
    (an inertia breaking the triangle inequality, limits or friction not imported)."""


@dataclass
class LinkSpec:
    """A link as a description gives it: ``mass`` (kg), ``com`` (the centre of mass in the
    link frame, m) and ``inertia`` (central, link axes, kg m^2); ``has_inertial`` False
    for a link that gives none (a frame)."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    has_inertial: bool = False


@dataclass
class JointSpec:
    """A joint as a description gives it.

    ``xyz`` and ``rotation`` place the child link frame in the parent link frame at
    coordinate 0 (m; child axes -> parent axes); ``axis`` is in the child link frame, and
    so is ``anchor``, the point the joint turns about (m; URDF: the link frame's origin,
    MJCF: the joint's ``pos``). ``type`` is one of ``revolute``, ``continuous``,
    ``prismatic``, ``ball``, ``fixed``, ``floating`` (from the ground only: the child
    becomes a free body) and ``planar`` (refused for now). Limits (rad or m, N m or N,
    rad/s or m/s) and ``friction`` are kept for the report; ``damping`` (N m s/rad or
    N s/m) becomes an axis damper, ``armature`` (kg m^2 or kg) a rotor inertia on the
    axis, ``stiffness`` (N m/rad or N/m) an axis spring at rest at ``spring_rest``;
    ``mimic`` is (leader joint, multiplier, offset)."""

    name: str
    type: str
    parent: str
    child: str
    xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    damping: float = 0.0
    friction: float = 0.0
    lower: float | None = None
    upper: float | None = None
    effort_limit: float | None = None
    velocity_limit: float | None = None
    mimic: tuple[str, float, float] | None = None
    anchor: np.ndarray = field(default_factory=lambda: np.zeros(3))
    armature: float = 0.0
    stiffness: float = 0.0
    spring_rest: float = 0.0


@dataclass
class RobotTree:
    """Links and joints read from ``source`` (a file name, or ``<string>``)."""

    name: str
    source: str
    links: dict[str, LinkSpec]
    joints: list[JointSpec]


@dataclass(frozen=True)
class Frame:
    """A named frame fixed on a body: ``position`` of its origin (body coordinates from
    the centre of mass, m) and ``rotation`` (frame axes -> body axes)."""

    body: str
    position: np.ndarray
    rotation: np.ndarray


@dataclass
class ImportReport:
    """What :func:`build_mechanism` made of a description.

    Attributes
    ----------
    bodies : dict of str to str
        Each link -> the body it belongs to (``ground`` for links fixed to the root of a
        fixed base).
    merged : dict of str to list of str
        Each body -> its links (first the one whose axes are the body's axes).
    joints : dict of str to str
        Each moving joint of the file -> the mechanism's joint.
    renamed : dict of str to str
        ``"link X"`` or ``"joint X"`` -> the mechanism's name, where it differs.
    couplings : dict of str to str
        Each mimic joint of the file -> the mechanism's coupling that holds it.
    not_imported : dict of str to list of str
        What the mechanism does not represent, by kind (``"position limits"``,
        ``"friction"``), each with the joints that carry it.
    warnings : list of str
        The warnings given while importing.
    """

    bodies: dict[str, str] = field(default_factory=dict)
    merged: dict[str, list[str]] = field(default_factory=dict)
    joints: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    couplings: dict[str, str] = field(default_factory=dict)
    not_imported: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _tree_order(tree: RobotTree, error: type[ModelError]) -> tuple[str, list[JointSpec]]:
    """(root link, joints in breadth-first order from it), checking that the joints form
    one tree over the links."""
    src = tree.source
    parent_of: dict[str, JointSpec] = {}
    names: set[str] = set()
    for j in tree.joints:
        if j.name in names:
            raise error(f"{src}: duplicate joint name '{j.name}'")
        names.add(j.name)
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in tree.links:
                raise error(f"{src}: joint '{j.name}': its {role} link {link!r} is not a link "
                            f"of the file")
        if j.child in parent_of:
            raise error(f"{src}: link '{j.child}' is the child of two joints "
                        f"('{parent_of[j.child].name}' and '{j.name}'): not a tree")
        parent_of[j.child] = j
    roots = [n for n in tree.links if n not in parent_of]
    if len(roots) != 1:
        raise error(f"{src}: expected exactly one root link (a link that is no joint's "
                    f"child), found {len(roots)}: {', '.join(roots) or 'none (a cycle)'}")
    children: dict[str, list[JointSpec]] = {}
    for j in tree.joints:
        children.setdefault(j.parent, []).append(j)
    order, queue, seen = [], [roots[0]], {roots[0]}
    while queue:
        link = queue.pop(0)
        for j in children.get(link, ()):
            order.append(j)
            seen.add(j.child)
            queue.append(j.child)
    lost = [n for n in tree.links if n not in seen]
    if lost:
        raise error(f"{src}: links {', '.join(lost)} are not reached from the root link "
                    f"'{roots[0]}' (their joints form a cycle)")
    return roots[0], order


@dataclass
class _Group:
    """Links rigidly joined by fixed joints; ``pose[link] = (R, p)`` of each in the
    frame of the first (the representative, whose axes the body takes)."""

    rep: str
    pose: dict[str, tuple[np.ndarray, np.ndarray]]
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


def merged_inertial(links: dict[str, LinkSpec], pose) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre of mass, central inertia) of rigidly joined links, in the frame in
    which ``pose[link] = (R, p)`` places each link (kg, m, kg m^2): the masses add, the
    centre is their weighted mean, the inertias are rotated into that frame and moved to
    the common centre with the parallel-axis theorem."""
    total = 0.0
    first = np.zeros(3)
    for name, (R, p) in pose.items():
        ln = links[name]
        total += ln.mass
        first += ln.mass * (p + R @ ln.com)
    com = first / total if total > 0 else np.zeros(3)
    J = np.zeros((3, 3))
    for name, (R, p) in pose.items():
        ln = links[name]
        if ln.mass == 0 and not np.any(ln.inertia):
            continue
        d = p + R @ ln.com - com
        J += R @ ln.inertia @ R.T + ln.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, 0.5 * (J + J.T)


def _groups(tree: RobotTree, root: str, order: list[JointSpec]):
    """The link groups (by representative) and each link's group."""
    groups = {root: _Group(root, {root: (np.eye(3), np.zeros(3))})}
    group_of = {root: root}
    for j in order:
        if j.type == "fixed":
            g = groups[group_of[j.parent]]
            R, p = g.pose[j.parent]
            g.pose[j.child] = (R @ j.rotation, p + R @ j.xyz)
            group_of[j.child] = g.rep
        else:
            groups[j.child] = _Group(j.child, {j.child: (np.eye(3), np.zeros(3))})
            group_of[j.child] = j.child
    for g in groups.values():
        g.mass, g.com, g.inertia = merged_inertial(tree.links, g.pose)
    return groups, group_of


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


def _subtree_mass(rep: str, groups, group_of, moving_children) -> float:
    total, stack = 0.0, [rep]
    while stack:
        g = stack.pop()
        total += groups[g].mass
        stack += [group_of[j.child] for j in moving_children.get(g, ())]
    return total


def _body(tree, g: _Group, name: str, strict: bool, error, report) -> RigidBody:
    """The rigid body of a link group (its links named in every message)."""
    links = ", ".join(g.pose)
    where = f"{tree.source}: link{'s' if len(g.pose) > 1 else ''} {links}"
    eig = np.linalg.eigvalsh(g.inertia)
    if eig.min() <= SINGULAR_INERTIA * max(eig.max(), 0.0) or eig.max() <= 0:
        raise error(f"{where} (body '{name}', mass {g.mass:g} kg): the central inertia "
                    f"is not positive definite (principal moments {eig.tolist()} kg m^2): each "
                    f"body's equations need a positive definite one; give the link(s) a "
                    f"valid <inertial> (a point mass on a moving joint is not supported)")
    tol = 1e-9 * eig.max()
    triangle_ok = eig[0] + eig[1] >= eig[2] - tol
    if not triangle_ok:
        msg = (f"{where} (body '{name}'): principal moments {eig.tolist()} kg m^2 break "
               f"the triangle inequality I1 + I2 >= I3 (no rigid body has them); loaded "
               f"as given (strict=True refuses them)")
        if strict:
            raise error(msg.split("; loaded")[0])
        warnings.warn(msg, RobotImportWarning, stacklevel=4)
        report.warnings.append(msg)
    try:
        return RigidBody(name, g.mass, Inertia(g.inertia, check_triangle=triangle_ok))
    except ModelError as exc:
        raise error(f"{where}: {exc}") from None


def _limited(j) -> bool:
    """Whether a joint of the description has position limits (URDF writes 0, 0 for
    none on a joint type that needs them)."""
    return j.type != "continuous" and (j.lower is not None or j.upper is not None) and \
        (j.lower, j.upper) != (0.0, 0.0)


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
                    friction: bool = False,
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
        ground.
    strict : bool
        Refuse an inertia that breaks the triangle inequality instead of warning.
    mimic : "couple", "independent" or "refuse"
        A mimic joint (q = multiplier q_leader + offset) becomes a
        :class:`~elements.couplings.JointCoupling` named ``<joint>_mimic`` (its effort
        reported like any constraint's), or an independent joint (listed in
        ``import_report.not_imported`` and warned about, as Pinocchio's ``buildModel``
        loads it by default), or is refused.
    limits : None, "impact" or a mapping of :meth:`~elements.Joint.add_limit` keywords
        Position limits not enforced (None: reported), or stops on every limited joint
        with an axis (``"impact"``: plastic impact stops, restitution 0).
    friction : bool
        Joint friction (N m or N) as Coulomb friction with stiction, or (False)
        reported as not imported.
    error : ModelError subclass
        The error raised (the importer's, e.g. URDFError).

    Returns
    -------
    Mechanism
        With ``frames`` (every link by name) and ``import_report``
        (:class:`ImportReport`) set.
    """
    src = tree.source
    if mimic not in ("couple", "refuse", "independent"):
        raise error(f"{src}: mimic must be 'couple', 'independent' or 'refuse', got "
                    f"{mimic!r}")
    if not tree.links:
        raise error(f"{src}: the description has no links")
    stops = _stop_options(limits, src, error)
    root, order = _tree_order(tree, error)
    for j in order:
        if j.type in NOT_YET:
            raise error(f"{src}: joint '{j.name}': type '{j.type}' is not supported yet "
                        f"(it needs multi-coordinate joints); supported: revolute, "
                        f"continuous, prismatic, ball, fixed, and floating from the root")
        if j.type not in ("fixed", "floating") and j.type not in MOVING_JOINTS:
            raise error(f"{src}: joint '{j.name}': unknown type {j.type!r}; valid: "
                        f"revolute, continuous, prismatic, ball, fixed, planar, floating")
        if j.mimic is not None and mimic == "refuse":
            raise error(f"{src}: joint '{j.name}': <mimic> (a coupling to joint "
                        f"'{j.mimic[0]}') refused (mimic='refuse'); mimic='couple' couples "
                        f"the joints, mimic='independent' loads it as an independent joint")
    names = {j.name: j for j in order}
    for j in order:
        if j.mimic is not None and mimic == "couple" and j.type != "fixed" and (
                j.mimic[0] not in names or not _has_axis(names[j.mimic[0]].type) or
                not _has_axis(j.type)):
            raise error(f"{src}: joint '{j.name}': <mimic joint='{j.mimic[0]}'> must name a "
                        f"revolute, continuous or prismatic joint of the file, and be on one "
                        f"(mimic='independent' ignores the coupling)")
    groups, group_of = _groups(tree, root, order)
    for j in order:
        if j.type == "floating" and (floating_base or group_of[j.parent] != root):
            raise error(f"{src}: joint '{j.name}': a floating joint is supported only from "
                        f"the fixed root (its child becomes a free body); a floating joint "
                        f"inside the tree needs multi-coordinate joints, not supported yet")
    moving = [j for j in order if j.type != "fixed"]
    moving_children: dict[str, list[JointSpec]] = {}
    for j in moving:
        moving_children.setdefault(group_of[j.parent], []).append(j)
    report = ImportReport()
    body_reps = [g for g in groups if g != root or floating_base]
    joint_names, body_names = _unique_names(tree, moving, groups, body_reps, report)
    mech = Mechanism(tree.name.replace(".", "_") or "robot", gravity=gravity)
    bodies: dict[str, RigidBody] = {}
    if not floating_base:
        bodies[root] = mech.ground
    for j in moving:                      # massless groups moved by a joint
        g = groups[j.child]
        if g.mass > 0:
            continue
        if _subtree_mass(j.child, groups, group_of, moving_children) > 0:
            raise error(f"{src}: joint '{j.name}' moves link(s) {', '.join(g.pose)} without "
                        f"mass, which carry the moving joints "
                        f"{', '.join(c.name for c in moving_children[j.child])}: a massless "
                        f"link between moving joints needs multi-coordinate joints, not "
                        f"supported yet; give the link a mass and inertia")
        raise error(f"{src}: joint '{j.name}' moves only massless links "
                    f"({', '.join(g.pose)}): its motion has no inertia (the equations are "
                    f"singular); make the joint fixed or give a link an <inertial>")
    if floating_base and groups[root].mass <= 0:
        raise error(f"{src}: floating base: the root link '{root}' (with the links fixed "
                    f"to it: {', '.join(groups[root].pose)}) has no mass; a free body "
                    f"needs mass and inertia")
    for rep in body_reps:
        bodies[rep] = mech.add_body(_body(tree, groups[rep], body_names[rep], strict, error,
                                          report))
    frames: dict[str, Frame] = {}
    for rep, g in groups.items():
        body = bodies[rep]
        com = np.zeros(3) if body.is_ground else g.com
        report.merged[body.name] = list(g.pose)
        for link, (R, p) in g.pose.items():
            body.add_point(link, p - com)
            frames[link] = Frame(body.name, p - com, R)
            report.bodies[link] = body.name
    efforts = dict(efforts or {})
    driven = [j.name for j in moving if _has_axis(j.type)]
    unknown = [n for n in efforts if n not in driven]
    if unknown:
        raise error(f"{src}: efforts given for {', '.join(unknown)}, not joints of the file "
                    f"with an axis; joints with an axis: {', '.join(driven) or 'none'}")
    limited, frictional, mimics = [], [], []
    for j in moving:
        if j.type == "floating":          # its child is a free body: no joint
            continue
        gp, gc = groups[group_of[j.parent]], groups[j.child]
        R_p, p_p = gp.pose[j.parent]
        parent = bodies[gp.rep]
        R = R_p @ j.rotation
        anchor = np.asarray(j.anchor, dtype=float)
        P = p_p + R_p @ (j.xyz + j.rotation @ anchor) - (
            np.zeros(3) if parent.is_ground else gp.com)
        axis = np.asarray(j.axis, dtype=float)
        cls = MOVING_JOINTS[j.type]
        if cls.n_free and not np.linalg.norm(axis) > 0:
            raise error(f"{src}: joint '{j.name}': its axis has zero length")
        if not cls.n_free and j.name in efforts:
            raise error(f"{src}: joint '{j.name}' ({j.type}) has no axis: no effort of its "
                        f"own (a load on the body acts instead)")
        try:
            joint = cls(joint_names[j.name], parent, bodies[j.child], parent_point=P,
                        child_point=anchor - gc.com,
                        axis=R @ axis if cls.n_free else None, rest_rotation=R)
            if cls.n_free:
                if j.damping > 0:
                    joint.add_damper(AxisDamper(j.damping))
                if j.stiffness > 0:
                    joint.add_spring(AxisSpring(j.stiffness, j.spring_rest))
                if j.armature > 0:
                    joint.add_rotor(j.armature)
                joint.add_actuator(AxisActuator(efforts.get(j.name, 0.0)))
                if stops is not None and _limited(j):
                    joint.add_limit(j.lower, j.upper, **stops)
                if friction and j.friction > 0:
                    joint.add_friction(j.friction)
        except ModelError as exc:
            raise error(f"{src}: joint '{j.name}': {exc}") from None
        joint.effort_limit = j.effort_limit
        joint.limits = (j.lower, j.upper) if j.type != "continuous" else (None, None)
        mech.add_joint(joint)
        report.joints[j.name] = joint.name
        if _limited(j) and (stops is None or not cls.n_free):
            limited.append(j.name)
        if j.friction > 0 and not (friction and cls.n_free):
            frictional.append(j.name)
        if j.mimic is not None:
            mimics.append(j.name)
    fixed_mimics = [j.name for j in order if j.type == "fixed" and j.mimic is not None]
    if fixed_mimics:
        report.not_imported["<mimic> on fixed joints (nothing to couple)"] = fixed_mimics
    if limited:
        report.not_imported["position limits (not enforced; limits= enforces them)"] = \
            limited
    if frictional:
        report.not_imported["friction"] = frictional
    if mimics and mimic == "independent":
        report.not_imported["mimic couplings (the joints move independently)"] = mimics
    elif mimics:
        for name in mimics:
            leader, multiplier, offset = names[name].mimic
            stem, cname, k = f"{joint_names[name]}_mimic", f"{joint_names[name]}_mimic", 2
            while cname in mech.joints or cname in mech.bodies or cname in mech.couplings:
                cname, k = f"{stem}{k}", k + 1
            try:
                mech.add_coupling(JointCoupling(
                    cname, mech.joint(joint_names[leader]), mech.joint(joint_names[name]),
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
        report.warnings.append(msg)
        if frictional or mimics:  # (limits are in every description: the report says them)
            warnings.warn(msg, RobotImportWarning, stacklevel=3)
    mech.frames = frames
    mech.import_report = report
    return mech
