"""URDF import: links, inertials, revolute, continuous, prismatic and fixed joints.

- :func:`load_urdf`, :func:`loads_urdf`: a URDF file or text -> :class:`~elements.Mechanism`.
- :class:`URDFError`: names the element and attribute at fault and what is supported.

Mapping. The root link (never a child) is the ground. Each other link becomes a body whose
frame has the link frame's axes and its origin at the link's centre of mass (the
``<inertial><origin>``); the inertia tensor is rotated into the link axes. A joint's
``<origin>`` places the child link frame in the parent link frame at coordinate 0; its
``<axis>`` (in the joint frame = the child link frame) becomes the joint axis in parent
coordinates; revolute and continuous joints become :class:`~elements.RevoluteJoint`,
prismatic ones :class:`~elements.PrismaticJoint`, fixed ones
:class:`~elements.FixedJoint`. ``<dynamics damping>`` becomes an axis damper; every
revolute, continuous and prismatic joint gets an actuator whose effort is
``efforts[joint]`` (default 0); the ``<limit effort>`` is kept as ``joint.effort_limit``
(it is not enforced). Joint position limits, friction, mimic joints, planar and floating
joints, transmissions and geometry are not supported: planar, floating and mimic raise.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError

from .joints import AxisActuator, AxisDamper, FixedJoint, PrismaticJoint, RevoluteJoint
from .file_tables import read_text
from .mechanism import Mechanism
from .rigid_body import Inertia, RigidBody

__all__ = ["load_urdf", "loads_urdf", "URDFError", "rpy_matrix"]


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
               efforts: Mapping[str, Any] | None = None, source: str = "<string>"
               ) -> Mechanism:
    """A mechanism from URDF text (see the module docstring for the mapping).

    Raises
    ------
    URDFError
        Naming ``source``, the element and the attribute at fault (for a problem the
        library finds in what the file describes: ``source`` and its message)."""
    try:
        return _loads_urdf(text, gravity, efforts, source)
    except URDFError:
        raise
    except ModelError as exc:
        raise URDFError(f"{source}: {exc}") from None


def _loads_urdf(text, gravity, efforts, source) -> Mechanism:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f"{source}: not valid XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    mech = Mechanism(root.get("name") or "robot", gravity=gravity)
    links = {}
    for ln in root.findall("link"):
        name = ln.get("name")
        if not name:
            raise URDFError(f"{source}: a <link> has no name")
        if name in links:
            raise URDFError(f"{source}: duplicate link name '{name}'")
        links[name] = ln
    joints = root.findall("joint")
    children = {}
    names: set[str] = set()
    for j in joints:
        jn = j.get("name")
        if not jn:
            raise URDFError(f"{source}: a <joint> has no name")
        if jn in names:
            raise URDFError(f"{source}: duplicate joint name '{jn}'")
        names.add(jn)
        for tag in ("parent", "child"):
            e = j.find(tag)
            if e is None or e.get("link") not in links:
                raise URDFError(f"{source}: joint '{jn}': <{tag} link=...> names no link of "
                                f"the file (got {None if e is None else e.get('link')!r})")
        c = j.find("child").get("link")
        if c in children:
            raise URDFError(f"{source}: link '{c}' is the child of two joints "
                            f"('{children[c].get('name')}' and '{jn}'): not a tree")
        children[c] = j
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise URDFError(f"{source}: expected exactly one root link, found {roots}")
    root_link = roots[0]
    com: dict[str, np.ndarray] = {root_link: np.zeros(3)}
    bodies = {root_link: mech.ground}
    for name, ln in links.items():
        if name == root_link:
            continue
        where = f"{source}: link '{name}'"
        inertial = ln.find("inertial")
        if inertial is None:
            raise URDFError(f"{where} has no <inertial>; a moving link needs mass and inertia")
        m_el = inertial.find("mass")
        if m_el is None:
            raise URDFError(f"{where}: <inertial> has no <mass>")
        mass = _floats(f"{where} <mass>", "value", m_el.get("value"), 1)[0]
        i_el = inertial.find("inertia")
        if i_el is None:
            raise URDFError(f"{where}: <inertial> has no <inertia>")
        ixx, ixy, ixz, iyy, iyz, izz = (
            _floats(f"{where} <inertia>", k, i_el.get(k), 1)[0]
            for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        I_c = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        xyz, R = _origin(inertial, f"{where} <inertial>")
        try:
            body = RigidBody(name.replace(".", "_"), mass, Inertia.about_center(R @ I_c @ R.T))
        except ModelError as exc:
            raise URDFError(f"{where}: {exc}") from None
        com[name] = xyz
        bodies[name] = mech.add_body(body)
    efforts = dict(efforts or {})
    for j in joints:
        jn = j.get("name")
        where = f"{source}: joint '{jn}'"
        jtype = j.get("type")
        if jtype in ("planar", "floating"):
            raise URDFError(f"{where}: type '{jtype}' is not supported (supported: revolute, "
                            f"continuous, prismatic, fixed)")
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise URDFError(f"{where}: unknown type {jtype!r} (supported: revolute, "
                            f"continuous, prismatic, fixed)")
        if j.find("mimic") is not None:
            raise URDFError(f"{where}: <mimic> is not supported")
        parent = j.find("parent").get("link")
        child = j.find("child").get("link")
        xyz, R = _origin(j, where)
        kw = dict(parent_point=xyz - com[parent], child_point=-com[child], rest_rotation=R)
        if jtype == "fixed":
            mech.add_joint(FixedJoint(jn.replace(".", "_"), bodies[parent], bodies[child], **kw))
            continue
        ax_el = j.find("axis")
        axis = _floats(f"{where} <axis>", "xyz",
                       ax_el.get("xyz") if ax_el is not None else None, 3, [1, 0, 0])
        if np.linalg.norm(axis) == 0:
            raise URDFError(f"{where}: <axis xyz> has zero length")
        cls = PrismaticJoint if jtype == "prismatic" else RevoluteJoint
        joint = cls(jn.replace(".", "_"), bodies[parent], bodies[child], axis=R @ axis, **kw)
        dyn = j.find("dynamics")
        if dyn is not None and dyn.get("damping") is not None:
            d = _floats(f"{where} <dynamics>", "damping", dyn.get("damping"), 1)[0]
            if d > 0:
                joint.add_damper(AxisDamper(d))
        lim = j.find("limit")
        joint.effort_limit = (
            float(_floats(f"{where} <limit>", "effort", lim.get("effort"), 1)[0])
            if lim is not None and lim.get("effort") is not None else None)
        joint.add_actuator(AxisActuator(efforts.pop(jn, 0.0)))
        mech.add_joint(joint)
    if efforts:
        raise URDFError(f"{source}: efforts given for joints the file does not have: "
                        f"{', '.join(efforts)}")
    return mech


def load_urdf(path: str, **kwargs: Any) -> Mechanism:
    """A mechanism from a URDF file (see :func:`loads_urdf`)."""
    return loads_urdf(read_text(path, "URDF file", URDFError), source=path, **kwargs)
