"""URDF import: links, inertials, revolute, continuous, prismatic and fixed joints.

- :func:`load_urdf`, :func:`loads_urdf`: a URDF file or text -> :class:`~elements.Mechanism`.
- :func:`read_urdf_tree`: the file's links and joints as a
  :class:`~elements.files.robot_tree.RobotTree` (before any mapping).
- :class:`URDFError`: names the element and attribute at fault and what is supported.

Mapping (:func:`elements.files.robot_tree.build_mechanism`, shared with other formats). Links
joined by fixed joints are merged into one body (exact mass, centre and inertia; every
link stays a named point and frame of its body: ``mechanism.frames``). The root link's
body is the ground, or a free body with ``floating_base=True`` that starts, unless
``initial_state(free=...)`` says otherwise, at rest with the root link frame at the
global origin, with the global axes (``mechanism.free_start``; Pinocchio's
``neutral`` configuration with a free-flyer root). A body's frame has its
first link's axes and its origin at the merged centre of mass. A joint's ``<origin>``
places the child link frame in the parent link frame at coordinate 0; its ``<axis>`` (in
the joint frame = the child link frame) becomes the joint axis in parent coordinates;
revolute and continuous joints become :class:`~elements.RevoluteJoint`, prismatic ones
:class:`~elements.PrismaticJoint`. ``<dynamics damping>`` becomes an axis damper; every
moving joint gets an actuator whose effort is ``efforts[joint]`` (default 0); the
``<limit effort>`` is kept as ``joint.effort_limit`` and the position limits as
``joint.limits``; the position limits become stops and ``<dynamics friction>`` Coulomb
friction when asked (``limits=``, ``friction=``). What is not enforced is listed in
``mechanism.import_report.not_imported``; transmissions and geometry are ignored. A
``<mimic>`` joint is coupled to its leader (:class:`~elements.parts.couplings.JointCoupling`).
A ``floating`` joint from the root link makes its child a free body (starting with its
link frame where the joint's ``<origin>`` puts it); a ``planar`` joint
is a :class:`~elements.joints.PlanarJoint` (x, y along the joint frame's axes, the angle
about its axis, as Pinocchio reads it); a floating joint inside the tree (or from a
floating base) is a :class:`~elements.joints.FreeJoint`.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import MAX_MAGNITUDE

from elements.files.tables import read_text
from elements.mechanism import Mechanism
from elements.files.robot_spec import URDF_JOINTS
from elements.files.robot_tree import JointSpec, LinkSpec, RobotTree, build_mechanism

__all__ = ["load_urdf", "loads_urdf", "read_urdf_tree", "URDFError", "rpy_matrix"]


class URDFError(ModelError):
    """Fires when a URDF description is malformed or uses what is not supported."""


def rpy_matrix(rpy) -> np.ndarray:
    """URDF's fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), \
        math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _floats(where: str, attr: str, text: str | None, n: int, default=None) -> np.ndarray:
    if text is None:
        if default is None:
            raise URDFError(f"URDF {where}: attribute '{attr}' is missing")
        return np.asarray(default, dtype=float)
    try:
        vals = [float(v) for v in text.split()]
    except ValueError:
        raise URDFError(f"URDF {where}: attribute '{attr}'='{text}' is not {n} numbers") from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise URDFError(f"URDF {where}: attribute '{attr}'='{text}' must be {n} finite numbers")
    return np.array(vals)


def _origin(el, where: str) -> tuple[np.ndarray, np.ndarray]:
    o = el.find("origin") if el is not None else None
    if o is None:
        return np.zeros(3), np.eye(3)
    xyz = _floats(f"{where} <origin>", "xyz", o.get("xyz"), 3, [0, 0, 0])
    rpy = _floats(f"{where} <origin>", "rpy", o.get("rpy"), 3, [0, 0, 0])
    return xyz, rpy_matrix(rpy)


def loads_urdf(text: str, *, gravity: Any = (0.0, 0.0, -9.81),
               efforts: Mapping[str, Any] | None = None, floating_base: bool = False,
               strict: bool = False, mimic: str = "couple", limits: Any = None,
               friction: bool = False, massless: str = "refuse",
               min_inertia: float | None = None, contacts: bool = False,
               contact_law: Any = None,
               source: str = "<string>", warn: bool = True) -> Mechanism:
    """A mechanism from URDF text (see the module docstring for the mapping).

    Parameters
    ----------
    gravity : 3-vector
        m/s^2, in the root link's frame (the global frame).
    efforts : mapping of joint name to effort, optional
        Each moving joint's actuator effort (N m or N; a number, TimeFunction or
        StateFunction); 0 where not given.
    floating_base : bool
        Make the root link (with the links fixed to it) a free body (6 freedoms) rather
        than the ground: legged robots, humanoids. Its pose and twist are set with
        ``initial_state(free={body: {...}})`` (the position of its centre of mass); a
        key not given there takes the default (``mechanism.free_start``): at rest,
        with the root link frame at the global origin and the global axes, so the
        body's centre is at the root link's centre of mass (Pinocchio's
        ``pin.neutral(model)`` with a free-flyer root joint).
    strict : bool
        Refuse inertias that break the triangle inequality (by default they load with a
        :class:`~elements.files.robot_tree.RobotImportWarning`, as Pinocchio loads them).
    mimic : "couple", "independent" or "refuse"
        A ``<mimic>`` joint is coupled to its leader (q = multiplier q_leader + offset: a
        :class:`~elements.parts.couplings.JointCoupling` named ``<joint>_mimic``), or loaded as
        an independent joint, as Pinocchio's ``buildModel`` does by default, with a
        warning, or refused.
    limits : None, "impact" or a mapping
        ``<limit lower upper>`` of revolute and prismatic joints: not enforced (None, the
        default, as Pinocchio's dynamics; listed in ``import_report.not_imported``), or
        stops (:meth:`~elements.Joint.add_limit`): ``"impact"`` for plastic impact stops
        (restitution 0), or the keywords of ``add_limit`` (``{"restitution": 0.5}``,
        ``{"stiffness": 1e4, "damping": 50}``).
    friction : bool
        Put ``<dynamics friction>`` on the joints as Coulomb friction with stiction
        (:meth:`~elements.Joint.add_friction`; N m or N); by default it is listed as not
        imported.
    massless : "refuse" or "fix"
        A joint that moves no mass (every link after it massless, e.g. a hand made of
        massless finger frames) has singular equations (Pinocchio's ABA returns NaN for
        the whole model): refused naming the joint, or (``"fix"``) made fixed at
        coordinate 0, listed in ``import_report.not_imported`` and warned about.
    min_inertia : float, optional
        kg m^2: raise every body's principal moments of inertia below it to it, as
        MuJoCo's ``boundinertia`` (a point mass, a thin rod or a negative moment would
        be refused otherwise; iCub's links are point masses). Listed in
        ``import_report.bounded`` and warned about: it changes the model.
    contacts : bool
        Make the links' ``<collision>`` boxes, cylinders and spheres collision shapes
        on their bodies (:mod:`elements.files.urdf_collision`: they touch what you add,
        such as a floor ``Plane``, not each other; meshes are reported as not
        imported); by default the collision geometry is listed as not imported.
    contact_law : ContactLaw, optional
        Their law (default ``ContactLaw()``).
    source : str
        The name used in messages (the file name).
    warn : bool
        Give what the import has to say (``import_report.said``) as
        :class:`~elements.RobotImportWarning` s, attributed to the caller's line; False
        leaves it to the caller (a model file's run says it once).

    Returns
    -------
    Mechanism
        With ``mechanism.frames`` (every link's frame by name) and
        ``mechanism.import_report`` (:class:`~elements.files.robot_tree.ImportReport`: merged
        links, renamed names, what was not imported).

    Raises
    ------
    URDFError
        Naming ``source``, the element and the attribute at fault (for a problem the
        library finds in what the file describes: ``source`` and its message)."""
    try:
        tree = read_urdf_tree(text, source)
        mech = build_mechanism(tree, gravity=gravity, efforts=dict(efforts or {}),
                               floating_base=floating_base, strict=strict, mimic=mimic,
                               limits=limits, friction=friction, massless=massless,
                               min_inertia=min_inertia, error=URDFError)
        if contacts:
            from elements.files.urdf_collision import add_collisions
            add_collisions(mech, tree.collisions, contact_law)
        elif tree.collisions:
            mech.import_report.not_imported.setdefault(
                "collision geometry (contacts=True imports its primitives)",
                []).extend(c.name for c in tree.collisions)
    except URDFError:
        raise
    except ModelError as exc:
        raise URDFError(f"{source}: {exc}") from None
    if warn:
        mech.import_report.say()
    return mech


def _physical(where: str, attr: str, text: str | None, unit: str) -> float:
    """A mass or inertia entry: a finite number at most ``MAX_MAGNITUDE`` in magnitude
    (the bodies' equations multiply such values, and merging links adds them: beyond
    it they overflow double precision)."""
    v = float(_floats(where, attr, text, 1)[0])
    if abs(v) > MAX_MAGNITUDE:
        raise URDFError(f"URDF {where}: attribute '{attr}'='{text}' is beyond "
                        f"{MAX_MAGNITUDE:.0e} in magnitude ({unit}): such values overflow "
                        f"double precision in the body's equations; valid: |value| <= "
                        f"{MAX_MAGNITUDE:.0e}")
    return v


def _number(where: str, el, attr: str, default: float | None = None) -> float | None:
    if el is None or el.get(attr) is None:
        return default
    return float(_floats(where, attr, el.get(attr), 1)[0])


def read_urdf_tree(text: str, source: str = "<string>") -> RobotTree:
    """The links and joints of URDF text, as written (no mapping yet; see
    :func:`~elements.files.robot_tree.build_mechanism`).

    Raises
    ------
    URDFError
        For text that is not a URDF: bad XML, a missing or malformed attribute, a
        duplicate name, naming ``source``, the element and the attribute."""
    # blank lines before the XML declaration (which must come first): Pinocchio's and
    # pybullet's parsers take them; messages keep the file's line numbers
    body = text.lstrip()
    skipped = text[:len(text) - len(body)].count("\n")
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        msg = re.sub(r"line (\d+)", lambda mt: f"line {int(mt.group(1)) + skipped}",
                     str(exc))
        raise URDFError(f"{source}: not valid XML: {msg}") from None
    if root.tag != "robot":
        raise URDFError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    links: dict[str, LinkSpec] = {}
    for ln in root.findall("link"):
        name = ln.get("name")
        if not name:
            raise URDFError(f"{source}: a <link> has no name")
        if name in links:
            raise URDFError(f"{source}: duplicate link name '{name}'")
        links[name] = _link(ln, f"{source}: link '{name}'")
    joints = []
    for j in root.findall("joint"):
        jn = j.get("name")
        if not jn:
            raise URDFError(f"{source}: a <joint> has no name")
        where = f"{source}: joint '{jn}'"
        ends = {}
        for tag in ("parent", "child"):
            e = j.find(tag)
            if e is None or e.get("link") not in links:
                raise URDFError(f"{where}: <{tag} link=...> names no link of the file (got "
                                f"{None if e is None else e.get('link')!r})")
            ends[tag] = e.get("link")
        xyz, R = _origin(j, where)
        ax_el = j.find("axis")
        axis = _floats(f"{where} <axis>", "xyz", ax_el.get("xyz") if ax_el is not None
                       else None, 3, [1, 0, 0])
        if j.get("type") != "fixed" and np.linalg.norm(axis) == 0:
            raise URDFError(f"{where}: <axis xyz> has zero length")
        dyn, lim, mim = j.find("dynamics"), j.find("limit"), j.find("mimic")
        mimic = None
        if mim is not None:
            if not mim.get("joint"):
                raise URDFError(f"{where}: <mimic> has no joint attribute")
            mimic = (mim.get("joint"), _number(f"{where} <mimic>", mim, "multiplier", 1.0),
                     _number(f"{where} <mimic>", mim, "offset", 0.0))
        damping = _number(f"{where} <dynamics>", dyn, "damping", 0.0)
        if damping < 0:
            raise URDFError(f"{where}: <dynamics damping> must be >= 0, got {damping}")
        jtype = str(j.get("type"))
        if jtype not in URDF_JOINTS:
            raise URDFError(f"{where}: unknown type {jtype!r}; valid: "
                            f"{', '.join(t for t in URDF_JOINTS if t != 'spherical')}, "
                            f"and PyBullet's spherical")
        # (a continuous joint is a revolute one without limits, whatever <limit> says)
        bounded = jtype != "continuous"
        joints.append(JointSpec(
            jn, jtype, ends["parent"], ends["child"], xyz, R, axis / (
                np.linalg.norm(axis) or 1.0), damping=damping,
            friction=_number(f"{where} <dynamics>", dyn, "friction", 0.0),
            lower=_number(f"{where} <limit>", lim, "lower") if bounded else None,
            upper=_number(f"{where} <limit>", lim, "upper") if bounded else None,
            effort_limit=_number(f"{where} <limit>", lim, "effort"),
            velocity_limit=_number(f"{where} <limit>", lim, "velocity"), mimic=mimic,
            kind=URDF_JOINTS[jtype]))
    from elements.files.urdf_collision import read_collisions
    return RobotTree(root.get("name") or "robot", source, links, joints,
                     read_collisions(root, source, _origin, _floats))


def _link(ln, where: str) -> LinkSpec:
    """A <link>'s inertial in the link frame (a LinkSpec without mass when it has none)."""
    name = ln.get("name")
    inertial = ln.find("inertial")
    if inertial is None:
        return LinkSpec(name)
    m_el = inertial.find("mass")
    if m_el is None:
        raise URDFError(f"{where}: <inertial> has no <mass>")
    mass = _physical(f"{where} <mass>", "value", m_el.get("value"), "kg")
    if mass < 0:
        raise URDFError(f"{where}: <mass value> must be >= 0 (kg), got {mass}")
    i_el = inertial.find("inertia")
    if i_el is None:
        raise URDFError(f"{where}: <inertial> has no <inertia>")
    ixx, ixy, ixz, iyy, iyz, izz = (
        _physical(f"{where} <inertia>", k, i_el.get(k), "kg m^2")
        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    I_c = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    xyz, R = _origin(inertial, f"{where} <inertial>")
    return LinkSpec(name, float(mass), xyz, R @ I_c @ R.T, True)


def load_urdf(path: str, **kwargs: Any) -> Mechanism:
    """A mechanism from a URDF file (see :func:`loads_urdf`)."""
    return loads_urdf(read_text(path, "URDF file", URDFError), source=path, **kwargs)
