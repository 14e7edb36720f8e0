"""Joints: constraint 0-junctions (with their Phi) and free-direction ports.

- :class:`Joint`: base; parent body alpha, child body beta, joint point P on the parent
  and Q on the child, joint frame given by the axis (parent coordinates).
- :class:`RevoluteJoint` (5 constraints, 1 freedom: the angle about the axis).
- :class:`PrismaticJoint` (5 constraints, the seed's Eqs. (1)-(4); 1 freedom: the slide).
- :class:`SphericalJoint` (3 constraints, no axis port).
- :class:`FixedJoint` (6 constraints).

Conventions (method.md section 3). The joint coordinate is the child's motion relative
to the parent: the revolute angle is the child's rotation about the axis (right-hand
rule), the prismatic slide the child's displacement along the axis. At coordinate 0 the
joint points coincide and the child's orientation is the parent's times
``rest_rotation`` (default: the identity). Revolute d1, d2 are fixed on the child; the
prismatic translational directions d1, d2 are fixed on the child and its axis on the
parent, as in the seed. Each constraint block's Phi has dPhi/dt equal to its constraint
flow on Phi = 0 (P = E), so Baumgarte stabilisation pairs them correctly.

Springs (stiffness, rest position), dampers and actuators (constant, TimeFunction or
StateFunction effort) attach to a joint's free direction, the 1-junction ``<joint>.axis``
(flow: the joint rate; effort: the torque or force on the child along the axis, minus
that on the parent); any bond graph can attach there too (a DC motor's gyrator, say).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from bondgraph import ModelError, StateFunction, TimeFunction
from bondgraph.element import MAX_MAGNITUDE, check_name
from bondgraph.spatial import as_rotation, axis_angle_matrix, cross3, frame_from_axis, skew

from ._blocks import Block, Term
from ._kernels import (
    Geometry, OrientationGap, PointGap, PrismaticRotation, RevoluteGap, Sandwich, SlideGap,
)
from .rigid_body import RigidBody

__all__ = ["Joint", "RevoluteJoint", "PrismaticJoint", "SphericalJoint", "FixedJoint",
           "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor", "attachment_name"]


def attachment_name(joint: str, kind: str, i: int, count: int) -> str:
    """The element name of a joint's i-th spring, damper or actuator (of ``count``):
    ``J3.spring`` for one, ``J3.spring0``, ``J3.spring1`` for several; its parameters
    are named after it (``J3.spring.k``, ``J3.spring.rest``, ``J3.damper.c``, and the
    actuator's constant effort ``J1.actuator``)."""
    return f"{joint}.{kind}{i}" if count > 1 else f"{joint}.{kind}"


@dataclass(frozen=True)
class AxisSpring:
    """A linear spring on a joint's free direction: effort = stiffness (q - rest).

    stiffness in N/m (prismatic) or N m/rad (revolute); rest in m or rad."""

    stiffness: float
    rest: float = 0.0


@dataclass(frozen=True)
class AxisDamper:
    """A linear damper on a joint's free direction: effort = coefficient * rate
    (N s/m or N m s/rad)."""

    coefficient: float


@dataclass(frozen=True)
class AxisRotor:
    """A rotor inertia on a joint's free direction (MuJoCo's ``armature``, a motor's
    reflected inertia): kinetic energy inertia * rate^2 / 2, in kg m^2 (revolute) or kg
    (prismatic). An I element on the axis 1-junction; its momentum is set from the joint
    rate by :meth:`~elements.mechanism_model.MechanismModel.initial_state`."""

    inertia: float


@dataclass(frozen=True)
class AxisActuator:
    """An effort source on a joint's free direction (N or N m on the child along the axis):
    a number, a TimeFunction or a StateFunction."""

    effort: Any


class Joint:
    """Base class of joints. Subclasses define the constraint blocks, the free direction,
    forward kinematics and the coordinate.

    Parameters
    ----------
    name : str
    parent, child : RigidBody
        alpha and beta. The child cannot be the ground (swap them).
    parent_point, child_point : str or 3-vector
        The joint point on each body (name or body coordinates from its centre, m).
    axis : 3-vector, optional
        Joint axis in parent coordinates (revolute and prismatic).
    rest_rotation : (3, 3) array, optional
        Child orientation relative to the parent at coordinate 0 (default identity).
    spring, damper, actuator, rotor : optional
        Attachments on the free direction (see AxisSpring, AxisDamper, AxisActuator,
        AxisRotor; a plain number for ``spring`` is a stiffness with rest 0, for
        ``damper`` a coefficient, for ``actuator`` a constant effort, for ``rotor`` an
        inertia).
    """

    type_name = "joint"
    n_free = 0
    coordinate_unit: str | None = None
    """The unit of the free coordinate: "rad" (a rotation) or "m" (a slide); None
    without an axis."""

    def units(self) -> dict[str, str]:
        """The units of what attaches to the axis, from :attr:`coordinate_unit`: the
        coordinate ``q`` and rate ``qd``, the ``effort`` along it, a spring's ``k`` and
        ``rest``, a damper's ``c`` (empty without an axis)."""
        u = self.coordinate_unit
        if u is None:
            return {}
        effort = "N" if u == "m" else "N m"
        return {"q": u, "qd": f"{u}/s", "effort": effort, "k": f"{effort}/{u}",
                "rest": u, "c": f"{effort} s/{u}", "inertia": "kg" if u == "m" else "kg m^2"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 parent_point: Any = (0.0, 0.0, 0.0), child_point: Any = (0.0, 0.0, 0.0),
                 axis: Any = None, rest_rotation: Any = None, spring: Any = None,
                 damper: Any = None, actuator: Any = None, rotor: Any = None):
        check_name(name, "joint", ".")
        self.name = name
        for role, b in (("parent", parent), ("child", child)):
            if not isinstance(b, RigidBody):
                raise ModelError(f"joint '{name}': {role} must be a RigidBody (or the ground), "
                                 f"got {b!r}")
        if parent is child:
            raise ModelError(f"joint '{name}' joins body '{parent.name}' to itself")
        if child.is_ground:
            raise ModelError(f"joint '{name}': the child is the ground; make the ground the "
                             f"parent and '{parent.name}' the child")
        self.parent, self.child = parent, child
        self.P = parent.point(parent_point)
        self.Q = child.point(child_point)
        if rest_rotation is None:
            R0 = np.eye(3)
        else:
            try:
                R0 = as_rotation(rest_rotation)
            except ValueError as exc:
                raise ModelError(f"joint '{name}': rest_rotation {exc}") from None
        self.R0 = R0
        if self.n_free or axis is not None:
            if axis is None:
                raise ModelError(f"{self.type_name} joint '{name}' needs an axis (parent "
                                 f"coordinates)")
            try:
                ax = np.array(axis, dtype=float)
                if ax.shape != (3,):
                    raise TypeError
            except (TypeError, ValueError):
                raise ModelError(f"joint '{name}': axis must be 3 numbers (parent "
                                 f"coordinates), got {axis!r}") from None
            try:
                self.Fa = frame_from_axis(ax)
            except ValueError as exc:
                raise ModelError(f"joint '{name}': {exc}; give a non-zero axis") from None
        else:
            self.Fa = np.eye(3)
        self.Fb = self.R0.T @ self.Fa          # the joint frame in child coordinates
        self.springs: list[AxisSpring] = []
        self.dampers: list[AxisDamper] = []
        self.actuators: list[AxisActuator] = []
        self.rotors: list[AxisRotor] = []
        if spring is not None:
            self.add_spring(spring)
        if damper is not None:
            self.add_damper(damper)
        if actuator is not None:
            self.add_actuator(actuator)
        if rotor is not None:
            self.add_rotor(rotor)

    # attachments -----------------------------------------------------------------------
    def _need_axis(self, what: str):
        if not self.n_free:
            raise ModelError(f"{self.type_name} joint '{self.name}' has no free-direction "
                             f"port for a {what}")

    def add_spring(self, spring: AxisSpring | float, rest: float = 0.0) -> AxisSpring:
        """Attach a linear spring (stiffness > 0) on the free direction."""
        self._need_axis("spring")
        s = spring if isinstance(spring, AxisSpring) else AxisSpring(spring, rest)
        try:
            s = AxisSpring(float(s.stiffness), float(s.rest))
        except (TypeError, ValueError):
            raise ModelError(f"joint '{self.name}': spring stiffness and rest must be "
                             f"numbers, got {spring!r}") from None
        if not np.isfinite(s.stiffness) or s.stiffness <= 0 or not np.isfinite(s.rest):
            raise ModelError(f"joint '{self.name}': spring stiffness must be positive and "
                             f"finite and its rest position finite, got {s}")
        self.springs.append(s)
        return s

    def _one_number(self, value: Any, cls: type, what: str, positive: bool) -> Any:
        """``value`` (a ``cls`` or its one number) checked: finite, and > 0 (positive) or
        >= 0; a ModelError naming the joint and ``what`` otherwise."""
        raw = getattr(value, fields(cls)[0].name) if isinstance(value, cls) else value
        try:
            v = float(raw)
        except (TypeError, ValueError):
            raise ModelError(f"joint '{self.name}': {what} must be a number, got "
                             f"{value!r}") from None
        if not np.isfinite(v) or (v <= 0 if positive else v < 0):
            raise ModelError(f"joint '{self.name}': {what} must be "
                             f"{'positive' if positive else '>= 0'} and finite, got {v}")
        return cls(v)

    def add_damper(self, damper: AxisDamper | float) -> AxisDamper:
        """Attach a linear damper (coefficient >= 0) on the free direction."""
        self._need_axis("damper")
        d = self._one_number(damper, AxisDamper, "damper coefficient", positive=False)
        self.dampers.append(d)
        return d

    def add_rotor(self, rotor: AxisRotor | float) -> AxisRotor:
        """Attach a rotor inertia (> 0: kg m^2 on a revolute axis, kg on a prismatic one)
        on the free direction."""
        self._need_axis("rotor inertia")
        r = self._one_number(rotor, AxisRotor, "rotor inertia", positive=True)
        self.rotors.append(r)
        return r

    def add_actuator(self, actuator: AxisActuator | Any) -> AxisActuator:
        """Attach an effort source (constant, TimeFunction or StateFunction)."""
        self._need_axis("actuator")
        a = actuator if isinstance(actuator, AxisActuator) else AxisActuator(actuator)
        if not isinstance(a.effort, (TimeFunction, StateFunction)):
            try:
                v = float(a.effort)
            except (TypeError, ValueError):
                raise ModelError(f"joint '{self.name}': actuator effort must be a number, a "
                                 f"TimeFunction or a StateFunction, got {a.effort!r}") from None
            if not np.isfinite(v):
                raise ModelError(f"joint '{self.name}': actuator effort must be finite")
        self.actuators.append(a)
        return a

    # names -------------------------------------------------------------------------------
    @property
    def axis_junction(self) -> str:
        """The free direction's 1-junction (flow: the joint rate)."""
        return f"{self.name}.axis"

    @property
    def axis_bond(self) -> str:
        """The bond from the axis junction into the constraint terms (its flow: the joint
        rate, rad/s or m/s)."""
        return f"{self.name}.axis.b"

    @property
    def coordinate_state(self) -> str:
        """Kinematic state holding the joint coordinate (rad or m)."""
        return f"{self.name}.coord"

    def attachments(self, kind: str) -> list[str]:
        """The element names of this joint's springs, dampers, actuators or rotor
        inertias (``kind``: ``"spring"``, ``"damper"``, ``"actuator"`` or ``"rotor"``), in
        the order they were added (see :func:`attachment_name`)."""
        items = {"spring": self.springs, "damper": self.dampers,
                 "actuator": self.actuators, "rotor": self.rotors}[kind]
        return [attachment_name(self.name, kind, i, len(items)) for i in range(len(items))]

    # geometry helpers --------------------------------------------------------------------
    def _bodies(self):
        return (self.parent, self.child)

    def _terms(self, pairs):
        """Terms for the non-ground bodies among (body, junction kind, kernel, constant)."""
        return [Term(f"{body.name}.{kind}", kernel, const)
                for body, kind, kernel, const in pairs if not body.is_ground]

    def _names(self):
        """The parent's and the child's names for the kernels (None: the ground)."""
        return (None if self.parent.is_ground else self.parent.name), self.child.name

    def _spherical_block(self) -> Block:
        """v_P - v_Q = 0; Phi = r_P - r_Q (global)."""
        a, b = self._names()
        P, Q = self.P, self.Q
        E = np.eye(3)
        pairs = [(self.parent, "v", None, E), (self.child, "v", None, -E)]
        if np.any(P):       # a point at the centre of mass adds no rotational term
            pairs.append((self.parent, "w", Sandwich(E, None, a, -skew(P)), None))
        if np.any(Q):
            pairs.append((self.child, "w", Sandwich(E, None, b, skew(Q)), None))
        return Block(f"{self.name}.t", 3, self._terms(pairs), self._bodies(),
                     PointGap(a, b, P, Q), True, f"{self.name}.t")

    def _orientation_block(self) -> Block:
        """omega_alpha - omega_beta = 0 (global); Phi = vee(A_a F_a (A_b F_b)^T)."""
        a, b = self._names()
        E = np.eye(3)
        terms = self._terms([
            (self.parent, "w", Sandwich(E, None, a, E), None),
            (self.child, "w", Sandwich(E, None, b, -E), None),
        ])
        return Block(f"{self.name}.r", 3, terms, self._bodies(),
                     OrientationGap(a, b, self.Fa @ self.Fb.T), True, f"{self.name}.r")

    # to be provided by subclasses ----------------------------------------------------------
    def constraint_blocks(self) -> list[Block]:
        raise NotImplementedError

    def axis_block(self) -> Block | None:
        return None

    def child_pose(self, A_a: np.ndarray, r_a: np.ndarray, q) -> tuple[np.ndarray, np.ndarray]:
        """(A_b, r_b): the child's rotation and centre for the parent's pose and coordinate."""
        raise NotImplementedError

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        """(omega_b, v_b) global, from the parent's (omega_a, v_a, global) and the rate."""
        raise NotImplementedError

    def coordinate(self, A_a, r_a, A_b, r_b) -> float:
        """The joint coordinate computed from the two bodies' poses (principal value)."""
        raise NotImplementedError

    def rate(self, pose, twist) -> float:
        """The joint rate (rad/s or m/s) from the bodies' poses ``{name: (A, r)}`` and
        twists ``{name: (omega, v)}`` (global): the axis block's flow sum_k G_k f_k."""
        blk = self.axis_block()
        geo = Geometry.of_poses(pose, blk.bodies)
        total = 0.0
        for t in blk.terms:
            body, kind = t.junction.rsplit(".", 1)
            w, v = twist[body]
            f = v if kind == "v" else pose[body][0].T @ w
            total += float((t.G(geo) @ f)[0])
        return total

    def n_constraints(self) -> int:
        return sum(b.dim for b in self.constraint_blocks())

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """The joint's initial coordinate and rate checked and in the form
        :meth:`child_pose` and :meth:`child_twist` take (None: not given, the default).

        One free coordinate: a finite number each (rad or m, rad/s or m/s). Raises a
        ModelError naming the joint otherwise."""
        if not self.n_free:
            if q is not None or qd is not None:
                raise ModelError(f"{self.type_name} joint '{self.name}' has no coordinate: "
                                 f"give no initial coordinate or rate for it")
            return None, None
        unit = self.coordinate_unit
        out = []
        for what, v, u in (("coordinate", q, unit), ("rate", qd, f"{unit}/s")):
            if v is None:
                out.append(None)
                continue
            try:
                f = float(np.asarray(v, dtype=float).item()) if np.size(v) == 1 else None
            except (TypeError, ValueError):
                f = None
            if f is None or not np.isfinite(f) or abs(f) > MAX_MAGNITUDE:
                raise ModelError(f"{self.type_name} joint '{self.name}': initial {what} must "
                                 f"be one finite number ({u}, at most {MAX_MAGNITUDE:.0e} in "
                                 f"magnitude), got {v!r}")
            out.append(f)
        return out[0], out[1]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, parent={self.parent.name!r}, "
                f"child={self.child.name!r})")


class RevoluteJoint(Joint):
    """Revolute joint: 3 translational and 2 rotational constraints; the angle about the
    axis is free (rad, child relative to parent, right-hand rule)."""

    type_name = "revolute"
    n_free = 1
    coordinate_unit = "rad"

    def constraint_blocks(self) -> list[Block]:
        a, b = self._names()
        D = self.Fb[:, :2]             # d1, d2 fixed on the child (child coordinates)
        ax = self.Fa[:, 2]             # the axis fixed on the parent (parent coordinates)
        # Phi = [-a_alpha . d2_beta ; a_alpha . d1_beta]: dPhi/dt = D^T (w_alpha - w_beta),
        # with w_alpha seen in the child: G_alpha = D^T A_b^T A_a
        terms = self._terms([
            (self.parent, "w", Sandwich(D.T, b, a, np.eye(3)), None),
            (self.child, "w", None, -D.T),
        ])
        rot = Block(f"{self.name}.r", 2, terms, self._bodies(), RevoluteGap(a, b, ax, D),
                    True, f"{self.name}.r")
        return [self._spherical_block(), rot]

    def axis_block(self) -> Block:
        a, b = self._names()
        ab = self.Fb[:, 2][None, :]    # the axis on the child (child coordinates)
        terms = self._terms([
            (self.parent, "w", Sandwich(-ab, b, a, np.eye(3)), None),
            (self.child, "w", None, ab),
        ])
        return Block(f"{self.name}.axis0", 1, terms, self._bodies())

    def child_pose(self, A_a, r_a, q):
        Rj = self.Fa @ axis_angle_matrix(np.array([0.0, 0.0, 1.0]), float(q)) @ self.Fa.T
        A_b = A_a @ Rj @ self.R0
        r_P = r_a + A_a @ self.P
        return A_b, r_P - A_b @ self.Q

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        axis = A_a @ self.Fa[:, 2]
        w_b = w_a + axis * float(qd)
        r_P = r_a + A_a @ self.P
        v_P = v_a + cross3(w_a, r_P - r_a)
        return w_b, v_P + cross3(w_b, r_b - r_P)

    def coordinate(self, A_a, r_a, A_b, r_b):
        rel = self.Fa.T @ A_a.T @ A_b @ self.R0.T @ self.Fa
        return float(np.arctan2(rel[1, 0], rel[0, 0]))


class PrismaticJoint(Joint):
    """Prismatic joint (the seed's Eqs. (1)-(4)): 2 translational and 3 rotational
    constraints; the slide along the axis is free (m, child relative to parent).

    The translational constraint is Phi = [d1; d2]^T (r_P - r_Q) with d1, d2 fixed on the
    child (h = r_P - r_Q in both Eq. (1) and Eq. (4), method.md); its rate carries the
    term -h^T d~ omega_beta of the rotating directions.
    """

    type_name = "prismatic"
    n_free = 1
    coordinate_unit = "m"

    def constraint_blocks(self) -> list[Block]:
        a, b = self._names()
        P, Q = self.P, self.Q
        D = self.Fb[:, :2]             # child coordinates
        E = np.eye(3)
        # D^T A_b^T (v_P - v_Q): the parent's and child's velocities and rotations
        terms = self._terms([
            (self.parent, "v", Sandwich(D.T, b, None, E), None),
            (self.parent, "w", Sandwich(-D.T, b, a, skew(P)), None),
            (self.child, "v", Sandwich(-D.T, b, None, E), None),
            (self.child, "w", PrismaticRotation(a, b, D, P, Q), None),
        ])
        if not np.any(P):
            terms = [t for t in terms if t.junction != f"{self.parent.name}.w"]
        trans = Block(f"{self.name}.t", 2, terms, self._bodies(), SlideGap(a, b, D, P, Q),
                      True, f"{self.name}.t")
        return [trans, self._orientation_block()]

    def axis_block(self) -> Block:
        a, b = self._names()
        P, Q = self.P, self.Q
        da = self.Fa[:, 2][None, :]    # the axis on the parent (parent coordinates)
        E = np.eye(3)
        # sdot = d_a^T A_a^T (v_Q - v_P)
        terms = self._terms([
            (self.parent, "v", Sandwich(-da, a, None, E), None),
            (self.parent, "w", None, da @ skew(P)),
            (self.child, "v", Sandwich(da, a, None, E), None),
            (self.child, "w", Sandwich(-da, a, b, skew(Q)), None),
        ])
        if not np.any(P):
            terms = [t for t in terms if t.junction != f"{self.parent.name}.w"]
        if not np.any(Q):
            terms = [t for t in terms if t.junction != f"{self.child.name}.w"]
        return Block(f"{self.name}.axis0", 1, terms, self._bodies())

    def child_pose(self, A_a, r_a, q):
        A_b = A_a @ self.R0
        r_Q = r_a + A_a @ self.P + A_a @ self.Fa[:, 2] * float(q)
        return A_b, r_Q - A_b @ self.Q

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        axis = A_a @ self.Fa[:, 2]
        r_Q = r_b + A_b @ self.Q
        v_Q = v_a + cross3(w_a, r_Q - r_a) + axis * float(qd)
        return w_a.copy(), v_Q + cross3(w_a, r_b - r_Q)

    def coordinate(self, A_a, r_a, A_b, r_b):
        r_P = r_a + A_a @ self.P
        r_Q = r_b + A_b @ self.Q
        return float((A_a @ self.Fa[:, 2]) @ (r_Q - r_P))


class SphericalJoint(Joint):
    """Spherical joint: the joint points coincide (3 constraints); rotation is free.

    It has no axis port. Its coordinate is the child's rotation relative to the parent
    (beyond ``rest_rotation``), given to :meth:`MechanismModel.initial_state` as a
    rotation matrix, a unit quaternion (w, x, y, z) or a rotation vector (rad), in
    parent coordinates; its rate is the child's angular velocity relative to the parent
    (rad/s, parent coordinates)."""

    type_name = "spherical"
    n_free = 0

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """(rotation matrix or None, angular velocity (3,) or None), checked; raises a
        ModelError naming the joint for anything else."""
        R = None
        if q is not None:
            try:
                R = as_rotation(q)
            except ValueError as exc:
                raise ModelError(f"spherical joint '{self.name}': initial orientation "
                                 f"{exc}") from None
        w = None
        if qd is not None:
            try:
                w = np.array(qd, dtype=float)
            except (TypeError, ValueError):
                w = np.zeros(0)
            if w.shape != (3,) or not np.all(np.isfinite(w)) or \
                    np.abs(w).max() > MAX_MAGNITUDE:
                raise ModelError(f"spherical joint '{self.name}': initial rate must be the "
                                 f"angular velocity, 3 finite numbers (rad/s, parent "
                                 f"coordinates), got {qd!r}")
        return R, w

    def constraint_blocks(self) -> list[Block]:
        return [self._spherical_block()]

    def child_pose(self, A_a, r_a, q):
        Rrel = np.eye(3) if q is None else np.asarray(q, dtype=float)
        A_b = A_a @ Rrel @ self.R0
        return A_b, r_a + A_a @ self.P - A_b @ self.Q

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        w_b = w_a + (np.zeros(3) if qd is None else A_a @ np.asarray(qd, dtype=float))
        r_P = r_a + A_a @ self.P
        v_P = v_a + cross3(w_a, r_P - r_a)
        return w_b, v_P + cross3(w_b, r_b - r_P)


class FixedJoint(Joint):
    """Fixed joint: the joint points coincide and the orientations are locked
    (6 constraints)."""

    type_name = "fixed"
    n_free = 0

    def constraint_blocks(self) -> list[Block]:
        return [self._spherical_block(), self._orientation_block()]

    def child_pose(self, A_a, r_a, q):
        A_b = A_a @ self.R0
        return A_b, r_a + A_a @ self.P - A_b @ self.Q

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        r_P = r_a + A_a @ self.P
        v_P = v_a + cross3(w_a, r_P - r_a)
        return w_a.copy(), v_P + cross3(w_a, r_b - r_P)
