"""The library's joint kinds, each registered (:func:`~elements.joints.contract.
register_joint`) under its ``type_name``:

- :class:`RevoluteJoint` (5 constraints; the angle about the axis).
- :class:`PrismaticJoint` (5 constraints, the seed's Eqs. (1)-(4); the slide).
- :class:`CylindricalJoint` (4; the angle about and the slide along one axis).
- :class:`ScrewJoint` (5; the angle, the slide following as pitch x angle).
- :class:`UniversalJoint` (4, Cardan; two angles about axes meeting at the joint point).
- :class:`GimbalJoint` (3; three angles about axes meeting at the joint point, each
  perpendicular to the next: a spherical joint with a port per angle).
- :class:`PlanarJoint` (3; two slides in a plane and the angle about its normal).
- :class:`TranslationJoint` (4 or 3; two or three slides along independent axes).
- :class:`SphericalJoint` (3 constraints; its rotation has no axis port).
- :class:`FixedJoint` (6 constraints).
- :class:`FreeJoint` (no constraint: 6 freedoms, the free body's motion written as a
  joint; three slides x, y, z with ports, its rotation as a spherical joint's).

Spherical and free joints (``free_rotation``) report their rotation as a quaternion and a
rotation vector (:class:`~elements.results.JointResult`).

The contract they follow, the ports and attachments are :mod:`elements.joints.contract`'s
(re-exported here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import MAX_MAGNITUDE
from bondgraph.spatial import as_rotation, axis_angle_matrix, skew

from elements.kernels.blocks import Block
from elements.kernels.geometry import AxesCombination, AxesCross, AxesDot, GimbalRate, Sandwich, ScrewGap
from elements.joints.blocks import (
    across_block, body_terms, kernel_bodies, offset_blocks, orientation_block, slide_port,
    spherical_block,
    tilt_block, turn_port,
)
from elements.joints.free import FreeJoint
from elements.joints.contract import (
    AxisActuator, AxisDamper, AxisFriction, AxisLimit, AxisMotion, AxisRotor, AxisSpring, Joint,
    JointAxis, attachment_name, joint_type, joint_types, register_joint,
)
from elements.parts.rigid_body import RigidBody

__all__ = ["Joint", "JointAxis", "RevoluteJoint", "PrismaticJoint", "CylindricalJoint",
           "ScrewJoint", "UniversalJoint", "GimbalJoint", "PlanarJoint", "TranslationJoint",
           "SphericalJoint", "FixedJoint",
           "FreeJoint",
           "AxisMotion", "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor", "AxisLimit",
           "AxisFriction", "attachment_name",
           "register_joint", "joint_type", "joint_types"]


def _turn(axis: np.ndarray, angle: float) -> np.ndarray:
    """The rotation by ``angle`` (rad) about the unit ``axis``."""
    return axis_angle_matrix(axis, float(angle))


def _angle_about(F: np.ndarray, R: np.ndarray) -> float:
    """The angle of rotation ``R`` about F's third column, F an orthonormal frame (R a
    rotation about that axis; otherwise the angle of its projection)."""
    rel = F.T @ R @ F
    return float(np.arctan2(rel[1, 0], rel[0, 0]))


@register_joint
class RevoluteJoint(Joint):
    """Revolute joint: 3 translational and 2 rotational constraints; the angle about the
    axis is free (rad, child relative to parent, right-hand rule)."""

    type_name = "revolute"
    coordinates = (("angle", "rad"),)

    def axis_motions(self):
        return (AxisMotion.rotation((0.0, 0.0, 1.0)),)

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

    def axis_motions(self):
        return (AxisMotion.translation((0.0, 0.0, 1.0)),)

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

    def axis_motions(self):
        return (AxisMotion.rotation((0.0, 0.0, 1.0)), AxisMotion.translation((0.0, 0.0, 1.0)))

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

    no_axis_motions = ("its slide follows its angle (pitch x angle): a helical motion, "
                       "neither a rotation nor a translation alone")

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
    cross keeps ``axis`` (on the parent) at a fixed angle to ``axis2`` (on the child; 1
    constraint). Coordinates ``angle1`` about ``axis`` and then ``angle2`` about
    ``axis2`` (rad): the child's rotation from its rest is R(axis, angle1) R(axis2,
    angle2). Both axes in parent coordinates at coordinates 0; perpendicular for a
    Cardan joint, or at any other angle but parallel (two revolutes through a massless
    link, as robot descriptions write a 2-DOF wrist).

    ``axis2_offset`` (parent coordinates at coordinates 0, m; default none) is a point
    on the second axis relative to the joint point, for two revolutes whose axes do not
    meet (an ankle or a shoulder whose second axis is set off from the first): the
    first axis passes through the joint point, the second through the joint point plus
    the offset, and a rigid massless link holds the feet X1, X2 of their common
    perpendicular (length d > 0) apart. Its constraints are then X2 - X1 normal to
    both axes and |X2 - X1| = d (in place of the coinciding points) with the axes'
    angle held; the child's rotation is the same R(axis, angle1) R(axis2, angle2)."""

    type_name = "universal"
    coordinates = (("angle1", "rad"), ("angle2", "rad"))
    options = {"axis2": "vector", "axis2_offset": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 axis2: Any = None, axis2_offset: Any = None, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        if axis2 is None:
            raise ModelError(f"universal joint '{name}' needs axis2, the cross's second "
                             f"axis (parent coordinates at coordinates 0, not parallel "
                             f"to axis)")
        a1 = self.Fa[:, 2]
        a2 = self._vector(axis2, "axis2")
        c = float(a1 @ a2)
        if abs(c) > 1.0 - 1e-9:
            raise ModelError(f"universal joint '{name}': axis2 {np.round(a2, 6).tolist()} "
                             f"is parallel to axis {np.round(a1, 6).tolist()}; the two "
                             f"angles need axes that are not parallel")
        self.cos_axes = 0.0 if abs(c) <= 1e-12 else c
        self.axis2 = a2
        e = a2 - self.cos_axes * a1
        e /= np.linalg.norm(e)
        self._set_frame(np.column_stack([e, np.cross(a1, e), a1]))
        self.axis2_offset, self.span, self._feet = np.zeros(3), 0.0, None
        if axis2_offset is not None:
            self._set_offset(axis2_offset)

    def _set_offset(self, value: Any) -> None:
        """The second axis through the joint point plus ``value`` (parent coordinates,
        m): the feet of the common perpendicular and its length, or the plain cross
        where the axes meet at the joint point."""
        try:
            o = np.array(value, dtype=float)
            if o.shape != (3,) or not np.all(np.isfinite(o)):
                raise ValueError
        except (TypeError, ValueError):
            raise ModelError(f"universal joint '{self.name}': axis2_offset must be 3 finite "
                             f"numbers (m, parent coordinates: a point on axis2 relative "
                             f"to the joint point), got {value!r}") from None
        a1, a2, c = self.Fa[:, 2], self.axis2, float(self.Fa[:, 2] @ self.axis2)
        t1 = (a1 @ o - c * (a2 @ o)) / (1.0 - c * c)      # the feet: P + t1 a1, P + o + t2 a2
        t2 = (c * (a1 @ o) - a2 @ o) / (1.0 - c * c)
        F1, F2 = t1 * a1, o + t2 * a2
        span = float(np.linalg.norm(F2 - F1))
        tol = 1e-9 * max(1.0, float(np.abs(o).max()))
        if span <= tol:
            if abs(t1) > tol:
                raise ModelError(f"universal joint '{self.name}': its axes meet at "
                                 f"{np.round(self.P + F1, 9).tolist()} (parent coordinates), "
                                 f"not at the joint point; give that point as the joint "
                                 f"point and no axis2_offset")
            return
        self.axis2_offset, self.span = o, span
        self._feet = (self.P + F1, self.Q + self.R0.T @ F2)

    def axis_motions(self):
        return (AxisMotion.rotation((0.0, 0.0, 1.0)),
                AxisMotion.rotation(self.Fa.T @ self.axis2, self.Fa.T @ self.axis2_offset))

    def constraint_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        a1, b2 = self.Fa[:, 2], self.R0.T @ self.axis2
        terms = body_terms(self, [
            (self.parent, "w", AxesCross(a, b, a1, b2, 0, 1.0), None),
            (self.child, "w", AxesCross(a, b, a1, b2, 1, -1.0), None),
        ])
        cross = Block(f"{self.name}.cross", 1, terms, self._bodies(),
                      AxesDot(a, b, a1, b2, self.cos_axes), True, f"{self.name}.cross")
        if self._feet is None:
            return [spherical_block(self), cross]
        return offset_blocks(self, a1, b2, *self._feet, self.span) + [cross]

    def axis_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        a1, b2 = self.Fa[:, 2], self.R0.T @ self.axis2
        c = self.cos_axes
        if c == 0.0:                  # perpendicular: each rate is one axis's component
            first = Block(self.axes[0].block_name, 1, body_terms(self, [
                (self.parent, "w", None, -a1[None, :]),
                (self.child, "w", Sandwich(a1[None, :], a, b, np.eye(3)), None),
            ]), self._bodies())
            return [first, turn_port(self, self.axes[1], b2)]
        # w = a1 q1' + a2 q2' (a2 as turned by q1): a1 . w = q1' + c q2',
        # a2 . w = c q1' + q2'
        k = 1.0 / (1.0 - c * c)
        return [Block(ax.block_name, 1, body_terms(self, [
            (self.parent, "w", AxesCombination(a, b, a1, b2, al, be, 0, -1.0), None),
            (self.child, "w", AxesCombination(a, b, a1, b2, al, be, 1, 1.0), None),
        ]), self._bodies()) for ax, (al, be) in zip(self.axes, ((k, -c * k), (-c * k, k)))]

    def _rotation(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        return _turn(self.Fa[:, 2], q[0]) @ _turn(self.axis2, q[1])

    def child_pose(self, A_a, r_a, q):
        R = self._rotation(q)
        if self._feet is None:
            return self._place(A_a, r_a, R, np.zeros(3))
        o, R1 = self.axis2_offset, _turn(self.Fa[:, 2], np.asarray(q, dtype=float)[0])
        return self._place(A_a, r_a, R, R1 @ o - R @ o)     # (about the moved axis2)

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        a2 = Rrel @ self.axis2                               # axis2 as turned (parent axes)
        w_rel = self.Fa[:, 2] * qd[0] + a2 * qd[1]
        d_rate = np.zeros(3)
        if self._feet is not None:     # Q turning about a1 through P and about a2 through o2
            o2 = _turn(self.Fa[:, 2], self.coordinate(A_a, r_a, A_b, r_b)[0]) @ \
                self.axis2_offset
            d_rate = np.cross(self.Fa[:, 2], d) * qd[0] + np.cross(a2, d - o2) * qd[1]
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, w_rel, d_rate)

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel = self._relative(A_a, r_a, A_b, r_b)[0]
        e, y, a1 = self.Fa.T
        a2 = self.axis2
        u = Rrel @ a2                       # axis2 after the first turn
        t1 = np.arctan2(y @ u, e @ u)
        M = _turn(a1, -t1) @ Rrel           # the second turn, about axis2
        f = a1 - self.cos_axes * a2
        f /= np.linalg.norm(f)
        v = M @ f
        t2 = np.arctan2(np.cross(a2, f) @ v, f @ v)
        return np.array([t1, t2])


@register_joint
class GimbalJoint(Joint):
    """Gimbal: three revolutes whose axes meet at the joint point, as a robot's 3-DOF hip
    or shoulder is written (the joint points coincide: 3 constraints). Coordinates
    ``angle1`` about ``axis``, ``angle2`` about ``axis2`` and ``angle3`` about ``axis3``
    (rad; all three in parent coordinates at coordinates 0, ``axis2`` perpendicular to
    the other two, which are not parallel): the child's rotation from its rest is
    R(axis, angle1) R(axis2, angle2) R(axis3, angle3), intrinsic angles as the chain of
    three revolutes turns them.

    The angles are singular where the first and third axes become parallel (gimbal lock,
    the middle angle a quarter turn from rest for perpendicular axes): the rates there
    are unbounded and an evaluation raises
    :class:`~elements.kernels.geometry.GimbalLockError` naming the joint. Within the range the
    dynamics equal the chain of revolutes through massless links (a SphericalJoint
    with a port per angle)."""

    type_name = "gimbal"
    coordinates = (("angle1", "rad"), ("angle2", "rad"), ("angle3", "rad"))
    options = {"axis2": "vector", "axis3": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 axis2: Any = None, axis3: Any = None, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        if axis2 is None or axis3 is None:
            raise ModelError(f"gimbal joint '{name}' needs axis2 and axis3 (parent "
                             f"coordinates at coordinates 0; axis2 perpendicular to axis "
                             f"and to axis3)")
        a1 = self.Fa[:, 2]
        a2 = self._normal_to_axis(axis2, "axis2", "cannot be the middle axis")
        a3 = self._vector(axis3, "axis3")
        if abs(a2 @ a3) > 1e-9:
            raise ModelError(f"gimbal joint '{name}': axis3 {np.round(a3, 6).tolist()} is "
                             f"not perpendicular to axis2 {np.round(a2, 6).tolist()} "
                             f"(cosine {a2 @ a3:.3g}); a gimbal turns about axes each "
                             f"perpendicular to the next")
        if np.linalg.norm(np.cross(a1, a3)) < 1e-6:
            raise ModelError(f"gimbal joint '{name}': axis and axis3 are parallel: the "
                             f"gimbal is locked at coordinates 0 (angles undefined there); "
                             f"give axes whose first and third are not parallel")
        self.gimbal_axes = (a1, a2, a3)
        self._sign = float(np.sign(a2 @ np.cross(a1, a3)))
        psi = float(np.arctan2(a1 @ np.cross(a2, a3), a1 @ a3))
        self.middle_range = (psi - np.pi, psi) if psi > 0 else (psi, psi + np.pi)
        """The open range of ``angle2`` (rad, modulo a turn) between the gimbal locks
        that contains 0: the angles are computed there (beyond it, the same rotation
        has other angles, on the far side of the lock)."""

    def axis_motions(self):
        return tuple(AxisMotion.rotation(self.Fa.T @ a) for a in self.gimbal_axes)

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """As :meth:`Joint.initial_values`, and ``angle2`` checked within
        :attr:`middle_range` (modulo a turn)."""
        q, qd = super().initial_values(q, qd)
        if q is not None:
            lo, hi = self.middle_range
            if not (q[1] - lo) % (2 * np.pi) < hi - lo or \
                    (q[1] - lo) % (2 * np.pi) == 0.0:
                raise ModelError(
                    f"gimbal joint '{self.name}': angle2 = {q[1]:.6g} rad is beyond gimbal "
                    f"lock from rest: the gimbal's angles are computed with angle2 between "
                    f"{lo:.6g} and {hi:.6g} rad (modulo a turn); the same rotation has "
                    f"angles on that side of the lock (for axes each perpendicular to the "
                    f"next and the first and third perpendicular: angle1 + pi, "
                    f"pi - angle2, angle3 + pi)")
        return q, qd

    def constraint_blocks(self) -> list[Block]:
        return [spherical_block(self)]

    def axis_blocks(self) -> list[Block]:
        a, b = kernel_bodies(self)
        a1, _, a3 = self.gimbal_axes
        b3 = self.R0.T @ a3
        return [Block(ax.block_name, 1, body_terms(self, [
            (self.parent, "w", GimbalRate(a, b, a1, b3, k, 0, -1.0, self._sign, self.name),
             None),
            (self.child, "w", GimbalRate(a, b, a1, b3, k, 1, 1.0, self._sign, self.name),
             None),
        ]), self._bodies()) for k, ax in enumerate(self.axes)]

    def _rotation(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        a1, a2, a3 = self.gimbal_axes
        return _turn(a1, q[0]) @ _turn(a2, q[1]) @ _turn(a3, q[2])

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, self._rotation(q), np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        a1, _, a3 = self.gimbal_axes
        u3 = A_a.T @ A_b @ self.R0.T @ a3
        c = np.cross(a1, u3)
        u2 = self._sign * c / np.linalg.norm(c)
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, a1 * qd[0] + u2 * qd[1] + u3 * qd[2],
                          np.zeros(3))

    def coordinate(self, A_a, r_a, A_b, r_b):
        from scipy.spatial.transform import Rotation
        Rrel = self._relative(A_a, r_a, A_b, r_b)[0]
        return Rotation.from_matrix(Rrel).as_davenport(np.array(self.gimbal_axes),
                                                       "intrinsic")


@register_joint
class PlanarJoint(Joint):
    """Planar joint: the child moves in the plane normal to ``axis`` (1 translational and
    2 rotational constraints). Coordinates ``x`` and ``y`` (m: Q's displacement from P
    along ``x_axis`` and ``y_axis``, parent coordinates) and ``angle`` (rad, about
    ``axis``); ``x_axis`` defaults to a fixed direction normal to ``axis``, ``y_axis`` to
    ``axis`` x ``x_axis`` (given, it must be that or its opposite: a slide chain such as
    MuJoCo's rootx, rootz, rooty keeps its own directions)."""

    type_name = "planar"
    coordinates = (("x", "m"), ("y", "m"), ("angle", "rad"))
    options = {"x_axis": "vector", "y_axis": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 x_axis: Any = None, y_axis: Any = None, **kwargs: Any):
        super().__init__(name, parent, child, **kwargs)
        n = self.Fa[:, 2]
        if x_axis is not None:
            e1 = self._normal_to_axis(x_axis, "x_axis", "does not lie in the plane")
            self._set_frame(np.column_stack([e1, np.cross(n, e1), n]))
        self.slide_axes = (self.Fa[:, 0], self.Fa[:, 1])
        if y_axis is not None:
            e2 = self._normal_to_axis(y_axis, "y_axis", "does not lie in the plane")
            if abs(e2 @ self.Fa[:, 0]) > 1e-9:
                raise ModelError(f"planar joint '{name}': y_axis "
                                 f"{np.round(e2, 6).tolist()} is not perpendicular to x_axis "
                                 f"{np.round(self.Fa[:, 0], 6).tolist()}")
            self.slide_axes = (self.Fa[:, 0], e2)

    def axis_motions(self):
        ex, ey = self.slide_axes
        return (AxisMotion.translation(self.Fa.T @ ex), AxisMotion.translation(self.Fa.T @ ey),
                AxisMotion.rotation((0.0, 0.0, 1.0)))

    def constraint_blocks(self) -> list[Block]:
        return [across_block(self, self.Fb[:, 2:3]), tilt_block(self)]

    def axis_blocks(self) -> list[Block]:
        ex, ey = self.slide_axes
        return [slide_port(self, self.axes[0], ex, exact=True),
                slide_port(self, self.axes[1], ey, exact=True),
                turn_port(self, self.axes[2], self.Fb[:, 2])]

    def child_pose(self, A_a, r_a, q):
        q = np.asarray(q, dtype=float)
        ex, ey = self.slide_axes
        return self._place(A_a, r_a, _turn(self.Fa[:, 2], q[2]), ex * q[0] + ey * q[1])

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        ex, ey = self.slide_axes
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, self.Fa[:, 2] * qd[2],
                          ex * qd[0] + ey * qd[1])

    def coordinate(self, A_a, r_a, A_b, r_b):
        Rrel, d = self._relative(A_a, r_a, A_b, r_b)
        ex, ey = self.slide_axes
        return np.array([ex @ d, ey @ d, _angle_about(self.Fa, Rrel)])


@register_joint
class TranslationJoint(Joint):
    """Translation joint: the child slides along two or three independent axes without
    turning, as MuJoCo writes a point mass's or a target's x and y slides (3 rotational
    constraints, and with two axes 1 translational: no slide across their plane).
    Coordinates ``slide1``, ``slide2`` (and ``slide3``; m): Q's displacement from P is
    ``slide1 axis + slide2 axis2 (+ slide3 axis3)``, unit axes in parent coordinates
    that need not be perpendicular (a slide's rate is then the displacement's rate
    along the axes' dual basis, not its projection on the axis)."""

    type_name = "translation"
    coordinates = (("slide1", "m"), ("slide2", "m"))
    needs_axis = False
    options = {"axis2": "vector", "axis3": "vector"}

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *, axis: Any = None,
                 axis2: Any = None, axis3: Any = None, **kwargs: Any):
        if axis is None or axis2 is None:
            raise ModelError(f"translation joint '{name}' needs axis and axis2 (and axis3 "
                             f"for three slides; parent coordinates)")
        n = 2 if axis3 is None else 3
        self.coordinates = tuple((f"slide{k + 1}", "m") for k in range(n))
        self.n_free = n
        super().__init__(name, parent, child, **kwargs)
        E = np.column_stack([self._vector(a, w) for a, w in
                             zip((axis, axis2, axis3)[:n], ("axis", "axis2", "axis3"))])
        sv = np.linalg.svd(E, compute_uv=False)
        if sv[-1] < 1e-6 * sv[0]:
            raise ModelError(f"translation joint '{name}': its axes "
                             f"{np.round(E.T, 6).tolist()} are dependent (parallel, or "
                             f"three in a plane); give independent axes")
        self.slide_axes = tuple(E.T.copy())
        self.dual_axes = tuple(np.linalg.pinv(E))      # e*_k . e_j = delta_kj
        if n == 2:       # the joint frame's axis: the normal to the slides' plane
            normal = np.cross(E[:, 0], E[:, 1])
            self._set_frame(_frame(normal / np.linalg.norm(normal), E[:, 0]))

    def axis_motions(self):
        return tuple(AxisMotion.translation(self.Fa.T @ e) for e in self.slide_axes)

    def constraint_blocks(self) -> list[Block]:
        if self.n_free == 3:
            return [orientation_block(self)]
        return [across_block(self, self.Fb[:, 2:3]), orientation_block(self)]

    def axis_blocks(self) -> list[Block]:
        return [slide_port(self, ax, e, exact=True)
                for ax, e in zip(self.axes, self.dual_axes)]

    def child_pose(self, A_a, r_a, q):
        q = np.asarray(q, dtype=float)
        return self._place(A_a, r_a, np.eye(3), np.column_stack(self.slide_axes) @ q)

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        qd = np.asarray(qd, dtype=float)
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, np.zeros(3),
                          np.column_stack(self.slide_axes) @ qd)

    def coordinate(self, A_a, r_a, A_b, r_b):
        return np.vstack(self.dual_axes) @ self._relative(A_a, r_a, A_b, r_b)[1]


def _frame(axis: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The frame (columns d1, d2, axis) with d1 along ``first``'s part normal to
    ``axis`` (unit vectors)."""
    d1 = first - axis * (first @ axis)
    d1 = d1 / np.linalg.norm(d1)
    return np.column_stack([d1, np.cross(axis, d1), axis])


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

    def axis_motions(self):
        return ()                   # (then its free rotation about the joint point)

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

    def axis_motions(self):
        return ()

    def constraint_blocks(self) -> list[Block]:
        return [spherical_block(self), orientation_block(self)]

    def child_pose(self, A_a, r_a, q):
        return self._place(A_a, r_a, np.eye(3), np.zeros(3))

    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd):
        return self._move(A_a, r_a, w_a, v_a, A_b, r_b, np.zeros(3), np.zeros(3))


# the free joint is its own module; registered here, after the others (their order)
register_joint(FreeJoint)
