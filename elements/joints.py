"""The library's joint kinds, each registered (:func:`~elements.joint_contract.
register_joint`) under its ``type_name``:

- :class:`RevoluteJoint` (5 constraints; the angle about the axis).
- :class:`PrismaticJoint` (5 constraints, the seed's Eqs. (1)-(4); the slide).
- :class:`CylindricalJoint` (4; the angle about and the slide along one axis).
- :class:`ScrewJoint` (5; the angle, the slide following as pitch x angle).
- :class:`UniversalJoint` (4, Cardan; two angles about perpendicular axes).
- :class:`PlanarJoint` (3; two slides in a plane and the angle about its normal).
- :class:`SphericalJoint` (3 constraints; its rotation has no axis port).
- :class:`FixedJoint` (6 constraints).
- :class:`FreeJoint` (no constraint: 6 freedoms, the free body's motion written as a
  joint; three slides x, y, z with ports, its rotation as a spherical joint's).

Spherical and free joints (``free_rotation``) report their rotation as a quaternion and a
rotation vector (:class:`~elements.results.JointResult`).

The contract they follow, the ports and attachments are :mod:`elements.joint_contract`'s
(re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import MAX_MAGNITUDE
from bondgraph.spatial import as_rotation, skew

from ._blocks import Block
from ._kernels import AxesCross, AxesDot, Sandwich, ScrewGap
from .joint_blocks import (
    across_block, body_terms, kernel_bodies, orientation_block, slide_port, spherical_block,
    tilt_block, turn_port,
)
from .joint_contract import (
    AxisActuator, AxisDamper, AxisFriction, AxisLimit, AxisRotor, AxisSpring, Joint,
    JointAxis, _angle_about, _turn, attachment_name, joint_type, joint_types, register_joint,
)
from .rigid_body import RigidBody

__all__ = ["Joint", "JointAxis", "RevoluteJoint", "PrismaticJoint", "CylindricalJoint",
           "ScrewJoint", "UniversalJoint", "PlanarJoint", "SphericalJoint", "FixedJoint",
           "FreeJoint",
           "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor", "AxisLimit",
           "AxisFriction", "attachment_name",
           "register_joint", "joint_type", "joint_types"]


@register_joint
class RevoluteJoint(Joint):
    """Revolute joint: 3 translational and 2 rotational constraints; the angle about the
    axis is free (rad, child relative to parent, right-hand rule)."""

    type_name = "revolute"
    coordinates = (("angle", "rad"),)

    def constraint_blocks(self) -> list[Block]:
        return [spherical_block(self), tilt_block(self)]

    def axis_blocks(self) -> list[Block]:
        return [turn_port(self, self.axes[0], self.Fb[:, 2])]

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, _turn(self.Fa[:, 2], q), np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, self.Fa[:, 2] * float(qd),
                          np.zeros(3))

    def coordinate(self, A_a, r_a, A_b, r_b):
        return _angle_about(self.Fa, self._relative(A_a, r_a, A_b, r_b)[0])


@register_joint
class PrismaticJoint(Joint):
    """Prismatic joint (the seed's Eqs. (1)-(4)): 2 translational and 3 rotational
    constraints; the slide along the axis is free (m, child relative to parent).

    The translational constraint is Phi = [d1; d2]^T (r_P - r_Q) with d1, d2 fixed on the
    child (h = r_P - r_Q in both Eq. (1) and Eq. (4), method.md); its rate carries the
    term -h^T d~ omega_beta of the rotating directions.
    """

    type_name = "prismatic"
    coordinates = (("slide", "m"),)

    def constraint_blocks(self) -> list[Block]:
        return [across_block(self, self.Fb[:, :2]), orientation_block(self)]

    def axis_blocks(self) -> list[Block]:
        return [slide_port(self, self.axes[0], self.Fa[:, 2], exact=False)]

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, np.eye(3), self.Fa[:, 2] * float(q))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, np.zeros(3),
                          self.Fa[:, 2] * float(qd))

    def coordinate(self, A_a, r_a, A_b, r_b):
        return float(self.Fa[:, 2] @ self._relative(A_a, r_a, A_b, r_b)[1])


@register_joint
class CylindricalJoint(Joint):
    """Cylindrical joint: the child turns about and slides along one axis (2
    translational and 2 rotational constraints). Coordinates ``angle`` (rad, right-hand
    rule about the axis) and ``slide`` (m, along it), child relative to parent."""

    type_name = "cylindrical"
    coordinates = (("angle", "rad"), ("slide", "m"))

    def constraint_blocks(self) -> list[Block]:
        return [across_block(self, self.Fb[:, :2]), tilt_block(self)]

    def axis_blocks(self) -> list[Block]:
        return [turn_port(self, self.axes[0], self.Fb[:, 2]),
                slide_port(self, self.axes[1], self.Fa[:, 2], exact=False)]

    def child_pose(self, A_a, r_a, q):
        q = np.asarray(q, dtype=float)
        return self._place(A_a, r_a, _turn(self.Fa[:, 2], q[0]), self.Fa[:, 2] * q[1])

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        ax = self.Fa[:, 2]
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, ax * qd[0], ax * qd[1])

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        return np.array([_angle_about(self.Fa, Rrel), self.Fa[:, 2] @ d])


@register_joint
class ScrewJoint(Joint):
    """Screw (helical) joint: the child turns about the axis and advances ``pitch`` x
    angle along it (m/rad; 5 constraints, the fifth s - pitch theta = 0). One coordinate,
    the ``angle`` (rad); its port's effort is the torque about the axis (an axial force F
    acts on it as pitch x F through the constraint)."""

    type_name = "screw"
    coordinates = (("angle", "rad"),)
    options = {"pitch": "number"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 pitch: float = 0.0, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        try:
            self.pitch = float(pitch)
        except (TypeError, ValueError):
            self.pitch = float("nan")
        if not np.isfinite(self.pitch):
            raise ModelError(f"screw joint '{name}': pitch must be a finite number (m/rad, "
                             f"the advance per radian), got {pitch!r}")

    def constraint_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        P, Q, p = self.P, self.Q, self.pitch
        da = self.Fa[:, 2][None, :]
        E = np.eye(3)
        # d/dt (s - p theta): the slide port's terms less p times the turn's, the turn's
        # written with the axis on the parent (they agree where the tilt block holds)
        terms = body_terms(self, [
            (self.parent, "v", Sandwich(-da, a, None, E), None),
            (self.parent, "w", None, da @ (skew(P) + p * E)),
            (self.child, "v", Sandwich(da, a, None, E), None),
            (self.child, "w", Sandwich(-da, a, b, skew(Q) + p * E), None),
        ])
        lead = Block(f"{self.name}.lead", 1, terms, self._bodies(),
                     ScrewGap(a, b, self.Fa, self.R0, P, Q, p), True, f"{self.name}.lead")
        return [across_block(self, self.Fb[:, :2]), tilt_block(self), lead]

    def axis_blocks(self) -> list[Block]:
        return [turn_port(self, self.axes[0], self.Fb[:, 2])]

    def child_pose(self, A_a, r_a, q):
        ax = self.Fa[:, 2]
        return self._place(A_a, r_a, _turn(ax, q), ax * (self.pitch * float(q)))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        ax = self.Fa[:, 2]
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, ax * float(qd),
                          ax * (self.pitch * float(qd)))

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        if self.pitch != 0.0:       # the slide counts the turns the angle cannot
            return float(self.Fa[:, 2] @ d) / self.pitch
        return _angle_about(self.Fa, Rrel)


@register_joint
class UniversalJoint(Joint):
    """Universal (Cardan, Hooke) joint: the joint points coincide (3 constraints) and a
    cross keeps ``axis`` (on the parent) perpendicular to ``axis2`` (on the child; 1
    constraint). Coordinates ``angle1`` about ``axis`` and then ``angle2`` about
    ``axis2`` (rad): the child's rotation from its rest is R(axis, angle1) R(axis2,
    angle2). Both axes in parent coordinates at coordinates 0, perpendicular."""

    type_name = "universal"
    coordinates = (("angle1", "rad"), ("angle2", "rad"))
    options = {"axis2": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 axis2: Any = None, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        if axis2 is None:
            raise ModelError(f"universal joint '{name}' needs axis2, the cross's second "
                             f"axis (parent coordinates at coordinates 0, perpendicular "
                             f"to axis)")
        a1 = self.Fa[:, 2]
        a2 = self._normal_to_axis(axis2, "axis2", "cannot be the cross's second arm")
        self._set_frame(np.column_stack([a2, np.cross(a1, a2), a1]))

    def constraint_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        a1, b2 = self.Fa[:, 2], self.Fb[:, 0]
        terms = body_terms(self, [
            (self.parent, "w", AxesCross(a, b, a1, b2, 0, 1.0), None),
            (self.child, "w", AxesCross(a, b, a1, b2, 1, -1.0), None),
        ])
        cross = Block(f"{self.name}.cross", 1, terms, self._bodies(), AxesDot(a, b, a1, b2),
                      True, f"{self.name}.cross")
        return [spherical_block(self), cross]

    def axis_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        a1 = self.Fa[:, 2][None, :]
        first = Block(self.axes[0].block_name, 1, body_terms(self, [
            (self.parent, "w", None, -a1),
            (self.child, "w", Sandwich(a1, a, b, np.eye(3)), None),
        ]), self._bodies())
        return [first, turn_port(self, self.axes[1], self.Fb[:, 0])]

    def _rotation(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        return _turn(self.Fa[:, 2], q[0]) @ _turn(self.Fa[:, 0], q[1])

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, self._rotation(q), np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        A_rel = A_a.T @ A_b @ self.R0.T
        w_rel = self.Fa[:, 2] * qd[0] + A_rel @ self.Fa[:, 0] * qd[1]
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, w_rel, np.zeros(3))

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel = self._relative(A_a, r_a, A_b, r_b)[0]
        a2, y, a1 = self.Fa.T
        u = Rrel @ a2                       # axis2 after the first turn
        t1 = np.arctan2(y @ u, a2 @ u)
        M = _turn(a1, -t1) @ Rrel           # the second turn, about axis2
        v = M @ a1
        t2 = np.arctan2(np.cross(a2, a1) @ v, a1 @ v)
        return np.array([t1, t2])


@register_joint
class PlanarJoint(Joint):
    """Planar joint: the child moves in the plane normal to ``axis`` (1 translational and
    2 rotational constraints). Coordinates ``x`` and ``y`` (m: Q's displacement from P
    along ``x_axis`` and ``axis`` x ``x_axis``, parent coordinates) and ``angle`` (rad,
    about ``axis``); ``x_axis`` defaults to a fixed direction normal to ``axis``."""

    type_name = "planar"
    coordinates = (("x", "m"), ("y", "m"), ("angle", "rad"))
    options = {"x_axis": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 x_axis: Any = None, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        if x_axis is not None:
            n = self.Fa[:, 2]
            e1 = self._normal_to_axis(x_axis, "x_axis", "does not lie in the plane")
            self._set_frame(np.column_stack([e1, np.cross(n, e1), n]))

    def constraint_blocks(self) -> list[Block]:
        return [across_block(self, self.Fb[:, 2:3]), tilt_block(self)]

    def axis_blocks(self) -> list[Block]:
        return [slide_port(self, self.axes[0], self.Fa[:, 0], exact=True),
                slide_port(self, self.axes[1], self.Fa[:, 1], exact=True),
                turn_port(self, self.axes[2], self.Fb[:, 2])]

    def child_pose(self, A_a, r_a, q):
        q = np.asarray(q, dtype=float)
        return self._place(A_a, r_a, _turn(self.Fa[:, 2], q[2]),
                           self.Fa[:, 0] * q[0] + self.Fa[:, 1] * q[1])

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, self.Fa[:, 2] * qd[2],
                          self.Fa[:, 0] * qd[0] + self.Fa[:, 1] * qd[1])

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        return np.array([self.Fa[:, 0] @ d, self.Fa[:, 1] @ d, _angle_about(self.Fa, Rrel)])


@register_joint
class SphericalJoint(Joint):
    """Spherical joint: the joint points coincide (3 constraints); rotation is free.

    It has no axis port. Its coordinate is the child's rotation relative to the parent
    (beyond ``rest_rotation``), given to :meth:`MechanismModel.initial_state` as a
    rotation matrix, a unit quaternion (w, x, y, z) or a rotation vector (rad), in
    parent coordinates; its rate is the child's angular velocity relative to the parent
    (rad/s, parent coordinates). :meth:`rotation` gives it back from poses; results
    report the child's joint frame relative to the parent's as a quaternion and a
    rotation vector (:attr:`JointResult.quaternion`, ``.rotation_vector``)."""

    type_name = "spherical"
    free_rotation = True

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
        return [spherical_block(self)]

    def child_pose(self, A_a, r_a, q):
        Rrel = np.eye(3) if q is None else np.asarray(q, dtype=float)
        return self._place(A_a, r_a, Rrel, np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        w_rel = np.zeros(3) if qd is None else np.asarray(qd, dtype=float)
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, w_rel, np.zeros(3))


@register_joint
class FixedJoint(Joint):
    """Fixed joint: the joint points coincide and the orientations are locked
    (6 constraints)."""

    type_name = "fixed"

    def constraint_blocks(self) -> list[Block]:
        return [spherical_block(self), orientation_block(self)]

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, np.eye(3), np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, np.zeros(3), np.zeros(3))


def _vector3(value: Any, what: str) -> np.ndarray:
    """``value`` as 3 finite numbers (at most MAX_MAGNITUDE), or a ValueError saying
    ``what`` it should be."""
    try:
        v = np.array(value, dtype=float)
    except (TypeError, ValueError):
        v = np.zeros(0)
    if v.shape != (3,) or not np.all(np.isfinite(v)) or np.abs(v).max() > MAX_MAGNITUDE:
        raise ValueError(f"{what} must be 3 finite numbers (at most {MAX_MAGNITUDE:.0e} in "
                         f"magnitude), got {value!r}")
    return v


@register_joint
class FreeJoint(Joint):
    """Free joint (6 DOF): no constraint; the child moves freely relative to the parent.
    From the ground it is the free body (a body that is nobody's child) written as a
    joint, with the same motion; from a moving body it measures the child relative to it.

    Coordinates ``x``, ``y``, ``z`` (m): the child's joint point Q relative to the
    parent's P, along the parent's axes, each with a port (``F.x.axis``; exact slide
    ports, so springs, dampers, actuators, stops attach as on a planar joint's slides).
    The rotation has no port: three rotation angles have rates that are not the
    components of the angular velocity (and the angular velocity's components integrate
    to no coordinate), so, as for :class:`SphericalJoint`, the child's rotation relative
    to the parent (beyond ``rest_rotation``, parent coordinates) is given as an initial
    value and reported as a quaternion and a rotation vector
    (:attr:`JointResult.quaternion`, ``.rotation_vector``).

    Initial values (:meth:`MechanismModel.initial_state`): ``q`` is the translation (3
    numbers or a mapping by coordinate name), or a mapping that may add ``rotation``
    (a rotation matrix, a unit quaternion (w, x, y, z) or a rotation vector, rad), or a
    pair (translation, rotation); ``qd`` likewise with ``angular_velocity`` (rad/s,
    parent coordinates, the child's relative to the parent) in place of ``rotation``;
    the translation rates are Q's velocity relative to P as seen in the parent (m/s,
    parent axes). A free joint has no axis (its coordinates are along the parent's
    axes).
    """

    type_name = "free"
    coordinates = (("x", "m"), ("y", "m"), ("z", "m"))
    needs_axis = False
    free_rotation = True

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, **kwargs: Any):
        if kwargs.get("axis") is not None:
            raise ModelError(f"free joint '{name}' has no axis: its coordinates x, y, z are "
                             f"along the parent's axes and its rotation is free; drop axis")
        super().__init__(name, parent, child, **kwargs)

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """(translation (3,), rotation (3, 3)) or None, and (translation rates (3,),
        relative angular velocity (3,)) or None, checked (see the class docstring);
        raises a ModelError naming the joint otherwise."""
        return (None if q is None else self._pair(q, "rotation", "initial coordinate"),
                None if qd is None else self._pair(qd, "angular_velocity", "initial rate"))

    def _pair(self, v: Any, key: str, what: str) -> tuple[np.ndarray, np.ndarray]:
        key_q = what == "initial coordinate"
        units = [ax.units()["q" if key_q else "qd"] for ax in self.axes]
        turn = None
        if isinstance(v, Mapping):
            bad = [k for k in v if k not in (*self.coordinate_names, key)]
            if bad:
                raise ModelError(f"free joint '{self.name}': {what} names "
                                 f"{', '.join(map(repr, bad))}; valid: "
                                 f"{', '.join((*self.coordinate_names, key))}")
            turn = v.get(key)
            lin = {k: x for k, x in v.items() if k != key}
            lin = self.values(lin, what, units) if lin else np.zeros(3)
        elif (isinstance(v, (tuple, list)) or (isinstance(v, np.ndarray) and v.ndim)) \
                and len(v) == 2:
            lin = np.zeros(3) if v[0] is None else self.values(v[0], what, units)
            turn = v[1]
        else:
            lin = self.values(v, what, units)
        try:
            if key_q:
                turn = np.eye(3) if turn is None else as_rotation(turn)
            else:
                turn = np.zeros(3) if turn is None else \
                    _vector3(turn, "the angular velocity (rad/s, parent coordinates)")
        except ValueError as exc:
            raise ModelError(f"free joint '{self.name}': {what}'s "
                             f"{'rotation ' if key_q else ''}{exc}") from None
        return np.asarray(lin, dtype=float), turn

    @staticmethod
    def _parts(v: Any, rotation: bool) -> tuple[np.ndarray, np.ndarray]:
        """(translation, rotation or angular velocity) of a value in :meth:`child_pose`'s
        form: a pair, the translation alone (3,) or None (zero)."""
        rest = np.eye(3) if rotation else np.zeros(3)
        if v is None:
            return np.zeros(3), rest
        if isinstance(v, tuple):
            return (np.asarray(v[0], dtype=float),
                    rest if v[1] is None else np.asarray(v[1], dtype=float))
        return np.asarray(v, dtype=float).reshape(3), rest

    def port_values(self, q: Any) -> np.ndarray:
        return self._parts(q, True)[0]

    def constraint_blocks(self) -> list[Block]:
        return []

    def axis_blocks(self) -> list[Block]:
        return [slide_port(self, ax, self.Fa[:, k], exact=True)
                for k, ax in enumerate(self.axes)]

    def child_pose(self, A_a, r_a, q):
        d, Rrel = self._parts(q, True)
        return self._place(A_a, r_a, Rrel, self.Fa @ d)

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        d_rate, w_rel = self._parts(qd, False)
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, w_rel, self.Fa @ d_rate)

    def coordinate(self, A_a, r_a, A_b, r_b):
        return self.Fa.T @ self._relative(A_a, r_a, A_b, r_b)[1]
