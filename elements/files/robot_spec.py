"""A robot description as read: links with their inertials, joints with their frames
(:class:`LinkSpec`, :class:`JointSpec`, :class:`RobotTree`, in SI units and the file's
own frames), the groups of links rigidly joined by fixed joints and their combined
inertial, and what an import made of it (:class:`ImportReport`, :class:`Frame`).

:mod:`elements.files.robot_tree` turns a tree into a mechanism; the importers
(:mod:`elements.files.urdf`, :mod:`elements.files.mjcf`) fill one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.errors import warn

from elements.joints.kinds import (
    FixedJoint, FreeJoint, Joint, PlanarJoint, PrismaticJoint, RevoluteJoint, SphericalJoint,
)

__all__ = ["URDF_JOINTS", "LinkSpec", "JointSpec", "RobotTree", "ImportReport", "Frame",
           "RobotImportWarning", "merged_inertial"]


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


URDF_JOINTS: dict[str, type[Joint]] = {
    "revolute": RevoluteJoint, "continuous": RevoluteJoint, "prismatic": PrismaticJoint,
    "fixed": FixedJoint, "floating": FreeJoint, "planar": PlanarJoint,
    "spherical": SphericalJoint}
"""URDF's joint types -> the joint class each becomes: the robot tree's own vocabulary
(a :class:`JointSpec` made with a ``type`` and no ``kind`` takes its class from here).
PyBullet's URDF extension ``spherical`` is a spherical joint (its cone and twist limits
reported as not imported). What the tree does with a joint it reads from the class's
contract: its coordinates and their units, whether it is fixed (no coordinate, rotation
locked) or free (a :class:`~elements.joints.FreeJoint`: from a fixed root its child
becomes a free body); a ``continuous`` joint is a revolute one whose limits the importer
drops. URDF's ``planar`` joint moves in the plane normal to its axis; its in-plane
directions, which the format leaves open, are the joint frame's x axis (projected onto
the plane) and the normal times it, as Pinocchio takes them."""


def is_fixed(kind: type[Joint]) -> bool:
    """Whether joints of ``kind`` lock the bodies together (no coordinate, no free
    rotation): their links merge into one body."""
    return not kind.n_free and not kind.free_rotation


def is_floating(kind: type[Joint]) -> bool:
    """Whether ``kind`` is the free joint (6 freedoms): from a fixed root its child
    becomes a free body."""
    return issubclass(kind, FreeJoint)


def has_axis(kind: type[Joint] | None) -> bool:
    """Whether joints of ``kind`` have one coordinate (an axis port)."""
    return kind is not None and kind.n_free == 1


@dataclass
class JointSpec:
    """A joint as a description gives it.

    ``xyz`` and ``rotation`` place the child link frame in the parent link frame at
    coordinate 0 (m; child axes -> parent axes); ``axis`` is in the child link frame, and
    so is ``anchor``, the point the joint turns about (m; URDF: the link frame's origin,
    MJCF: the joint's ``pos``). ``type`` is one of ``revolute``, ``continuous``,
    ``prismatic``, ``ball``, ``fixed``, ``floating`` (from a fixed root the child becomes
    a free body, elsewhere a free joint) and ``planar``. Limits (rad or m, N m or N,
    rad/s or m/s) and ``friction`` are kept for the report; ``damping`` (N m s/rad or
    N s/m) becomes an axis damper, ``armature`` (kg m^2 or kg) a rotor inertia on the
    axis, ``stiffness`` (N m/rad or N/m) an axis spring at rest at ``spring_rest``;
    ``mimic`` is (leader joint, multiplier, offset). ``kind``: the joint class the
    format's table maps ``type`` to (the importer's; default :data:`URDF_JOINTS`'s)."""

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
    kind: type[Joint] | None = None


@dataclass
class RobotTree:
    """Links and joints read from ``source`` (a file name, or ``<string>``)."""

    name: str
    source: str
    links: dict[str, LinkSpec]
    joints: list[JointSpec]
    collisions: list = field(default_factory=list)
    """The links' collision geometry as written (a URDF's ``<collision>``:
    :class:`~elements.files.urdf_collision.CollisionSpec`)."""


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
        Each moving joint of the file -> the mechanism's joint (joints of a chain through
        massless links share the composite joint).
    coordinates : dict of str to (str, str or None)
        Each moving joint of the file -> (the mechanism's joint, the coordinate that
        holds it; None for a one-coordinate joint). See :meth:`mechanism_values` and
        :meth:`file_values`.
    composed : dict of str to list of str
        Each composite joint -> the file's joints it stands for (a chain through massless
        links: a universal, gimbal or planar joint).
    lumped : dict of str to str
        Each point-mass link inside a composite joint that does not move with it (it lies
        on the axes before it) -> the body that carries its mass.
    inner_links : list of str
        Links inside composite joints: no body carries them, they have no frame.
    renamed : dict of str to str
        ``"link X"`` or ``"joint X"`` -> the mechanism's name, where it differs.
    couplings : dict of str to str
        Each mimic joint of the file -> the mechanism's coupling that holds it.
    not_imported : dict of str to list of str
        What the mechanism does not represent, by kind (``"position limits"``,
        ``"friction"``), each with the joints that carry it.
    bounded : dict of str to (list of float, list of float)
        Each link group (its links, joined by ", ") whose principal moments of inertia
        were raised to the importer's ``min_inertia`` -> (the moments before, after;
        kg m^2). Empty unless ``min_inertia`` was given.
    approximated : dict of str to list of str
        What was imported only approximately, by kind, with the names it concerns (an
        MJCF geom's solref as a contact law, a mesh as its convex hull...).
    warnings : list of str
        Everything the import has to say (what was left out, changed or doubtful).
    said : list of str
        Those of them said as a :class:`RobotImportWarning` (the others, such as
        limits every description carries, are only listed): at the user's call by the
        importers, or, for a model file's ``[robot]``, once by the run (not with
        ``quiet``).
    """

    bodies: dict[str, str] = field(default_factory=dict)
    merged: dict[str, list[str]] = field(default_factory=dict)
    joints: dict[str, str] = field(default_factory=dict)
    coordinates: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    composed: dict[str, list[str]] = field(default_factory=dict)
    lumped: dict[str, str] = field(default_factory=dict)
    inner_links: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    couplings: dict[str, str] = field(default_factory=dict)
    not_imported: dict[str, list[str]] = field(default_factory=dict)
    bounded: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    approximated: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)

    def note(self, message: str, say: bool = True) -> None:
        """List ``message`` among the warnings, and among those to say unless ``say`` is
        False."""
        self.warnings.append(message)
        if say:
            self.said.append(message)

    def say(self) -> None:
        """Give every message of :attr:`said` as a :class:`RobotImportWarning`,
        attributed to the user's call."""
        for message in self.said:
            warn(message, RobotImportWarning)

    def mechanism_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Values by the file's joint names (coordinates, rates or efforts: rad or m,
        N m or N) as the mechanism's functions take them: by mechanism joint, a mapping
        from coordinate name to value for a composite joint."""
        out: dict[str, Any] = {}
        for name, v in values.items():
            if name not in self.coordinates:
                raise ModelError(f"no moving joint {name!r} in the description; its moving "
                                 f"joints: {', '.join(self.coordinates) or 'none'}")
            joint, coordinate = self.coordinates[name]
            if coordinate is None:
                out[joint] = v
            else:
                out.setdefault(joint, {})[coordinate] = v
        return out

    def file_values(self, values: Mapping[str, Any]) -> dict[str, float]:
        """The mechanism's per-joint values (a number, or an array in coordinate order for
        a joint with several, as :func:`~elements.analysis.dynamics.direct_dynamics` gives them) by
        the file's joint names."""
        out: dict[str, float] = {}
        for name, (joint, coordinate) in self.coordinates.items():
            if joint not in values:
                continue
            v = values[joint]
            if coordinate is None:
                out[name] = float(v)
            else:
                members = self.composed[joint]
                out[name] = float(np.asarray(v)[members.index(name)])
        return out


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
        if is_fixed(j.kind):
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


def _subtree_mass(rep: str, groups, group_of, moving_children) -> float:
    total, stack = 0.0, [rep]
    while stack:
        g = stack.pop()
        total += groups[g].mass
        stack += [group_of[j.child] for j in moving_children.get(g, ())]
    return total


def _add_point_mass(g: _Group, m: float, x: np.ndarray) -> None:
    """Add a point mass ``m`` (kg) at ``x`` (the group's frame, m) to a group's inertial
    (parallel-axis theorem)."""
    total = g.mass + m
    com = (g.mass * g.com + m * x) / total
    J = g.inertia.copy()
    for mass, c in ((g.mass, g.com), (m, x)):
        d = c - com
        J += mass * (d @ d * np.eye(3) - np.outer(d, d))
    g.mass, g.com, g.inertia = total, com, 0.5 * (J + J.T)


def _fix_massless(tree: RobotTree, order: list[JointSpec], mimic: str,
                  error: type[ModelError]) -> tuple[list[JointSpec], list[str]]:
    """``order`` with every joint that moves no mass made fixed (at its coordinate 0),
    and the names of those joints.

    A joint moves no mass when every link after it (its child and the child's whole
    subtree, through joints of any type) has none: its equations are singular (no
    inertia resists its motion), and fixing it changes no other joint's dynamics. A
    follower coupled by ``<mimic>`` (with ``mimic="couple"``) to a joint made fixed
    must move no mass either (else its coupling would hold it still), or the import
    is refused naming both."""
    below = {name: link.mass for name, link in tree.links.items()}
    for j in reversed(order):                       # children before their parents
        below[j.parent] += below[j.child]
    fixed = [j.name for j in order if not (is_fixed(j.kind) or is_floating(j.kind))
             and below[j.child] <= 0.0]
    if not fixed:
        return order, fixed
    names = set(fixed)
    for j in order:
        if mimic == "couple" and j.mimic is not None and j.mimic[0] in names \
                and j.name not in names and not is_fixed(j.kind):
            raise error(f"{tree.source}: joint '{j.name}' <mimic joint='{j.mimic[0]}'>: "
                        f"massless='fix' makes '{j.mimic[0]}' fixed (it moves no mass), "
                        f"but '{j.name}' moves {below[j.child]:g} kg and would be held "
                        f"still by the coupling; give the leader's links an <inertial>, "
                        f"or load with mimic='independent'")
    return [dataclasses.replace(j, type="fixed", kind=FixedJoint) if j.name in names else j
            for j in order], fixed
