"""The joint contract: :class:`Joint` (an abstract base class), a coordinate's port
:class:`JointAxis`, the attachments on ports (:class:`AxisSpring`, :class:`AxisDamper`,
:class:`AxisRotor`, :class:`AxisActuator`) and the registry of joint kinds
(:func:`register_joint`, :func:`joint_type`, :func:`joint_types`).

A kind is one class (:mod:`elements.joints` holds the library's; ``examples/custom_joint.py``
writes one outside it); the registry serves model files, importers, results, studies, the 3D page.

Conventions (method.md section 3). Coordinates are the child's motion relative to the
parent: angles by the right-hand rule about the axis, slides along it. At coordinates 0
the joint points coincide and the child's orientation is the parent's times
``rest_rotation`` (default: the identity). Each constraint block's Phi has dPhi/dt equal
to its constraint flow on Phi = 0 (P = E), so Baumgarte stabilisation pairs them.

Attachments (springs, dampers, rotor inertias, actuators) and any bond graph meet a
coordinate at its port, the 1-junction ``<port>.axis`` (flow: the rate; effort: the
generalised force on the child, minus that on the parent). A one-coordinate joint's port
is the joint's name (``J1.axis``); with several, ``<joint>.<coordinate>`` (``C1.slide.
axis``, state ``C1.slide.coord``, spring ``C1.slide.spring``).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np
import sympy

from bondgraph import ModelError, StateFunction, TimeFunction
from bondgraph.element import MAX_MAGNITUDE, check_name
from bondgraph.spatial import (
    as_rotation, cross3, frame_from_axis, matrix_to_quat,
)

from elements.kernels.blocks import Block, Junction
from elements.kernels.geometry import Geometry
from elements.joints.axis import (
    _KINDS, AxisActuator, AxisMotion, chain_pose, AxisDamper, AxisFriction, AxisLimit, AxisRotor, AxisSpring, JointAxis,
    TRANSVERSE_REACTION_KINDS, attachment_name, checked_friction,
)
from elements.parts.rigid_body import RigidBody

__all__ = ["Joint", "JointAxis", "AxisMotion", "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor",
           "AxisLimit", "AxisFriction", "attachment_name", "register_joint", "joint_type", "joint_types",
           "TRANSVERSE_REACTION_KINDS"]



_REGISTRY: dict[str, type["Joint"]] = {}


def register_joint(cls: type["Joint"]) -> type["Joint"]:
    """Enter a joint class in the registry under its ``type_name`` (usable as a class
    decorator): model files (``type = "<type_name>"``), importers and the tools that list
    joint kinds find it there. Re-registering the same class is allowed; another class
    under a taken name is a ModelError."""
    if not (isinstance(cls, type) and issubclass(cls, Joint)):
        raise ModelError(f"register_joint takes a Joint subclass, got {cls!r}")
    name = getattr(cls, "type_name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ModelError(f"joint class {cls.__name__} needs a type_name (an identifier), "
                         f"got {name!r}")
    old = _REGISTRY.get(name)
    if old is not None and old is not cls and \
            (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ModelError(f"joint type {name!r} is already registered (by "
                         f"{old.__module__}.{old.__qualname__}); choose another type_name")
    _REGISTRY[name] = cls
    return cls


def joint_types() -> dict[str, type["Joint"]]:
    """The registered joint kinds, type name -> class."""
    return dict(_REGISTRY)


def joint_type(name: str) -> type["Joint"]:
    """The joint class registered as ``name``; a ModelError listing the kinds otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ModelError(f"unknown joint type {name!r}; registered: "
                         f"{', '.join(sorted(_REGISTRY))}") from None


class Joint(abc.ABC):
    """The joint contract: the abstract base class of joint kinds.

    A subclass sets :attr:`type_name` and :attr:`coordinates` and implements
    :meth:`constraint_blocks`, :meth:`axis_blocks` (one per coordinate), :meth:`child_pose`,
    :meth:`child_twist` and :meth:`coordinate`; :func:`register_joint` makes it known by
    name. The contract test (``tests/contract/test_joint_contract.py``) checks every
    registered kind: constraint rates against central differences of Phi, axis flows
    against the coordinates' rates, the pose/coordinate round trip.

    Parameters
    ----------
    name : str
    parent, child : RigidBody
        alpha and beta. The child cannot be the ground (swap them).
    parent_point, child_point : str or 3-vector
        The joint point on each body (name or body coordinates from its centre, m).
    axis : 3-vector, optional
        The joint axis in parent coordinates (kinds with an axis).
    rest_rotation : (3, 3) array, optional
        Child orientation relative to the parent at coordinates 0 (default identity).
    spring, damper, actuator, rotor : optional
        Attachments on the coordinate's port (see AxisSpring, AxisDamper, AxisActuator,
        AxisRotor; a plain number for ``spring`` is a stiffness with rest 0, for
        ``damper`` a coefficient, for ``actuator`` a constant effort, for ``rotor`` an
        inertia). For a joint with several coordinates, a mapping from coordinate name to
        such a value.
    """

    type_name: ClassVar[str] = "joint"
    coordinates: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(name, unit) of each coordinate, unit "rad" or "m"; one port each."""
    needs_axis: ClassVar[bool] = False
    """Whether ``axis`` is required (default: when the kind has coordinates)."""
    options: ClassVar[dict[str, str]] = {}
    """Constructor keywords beyond the common ones, with their kind for model files
    ("vector": 3 numbers, "number", "matrix": 3 x 3, "boolean": true or false)."""
    in_files: ClassVar[bool] = True
    """Whether a model file can describe the kind (the common keys and :attr:`options`)."""
    n_free: ClassVar[int] = 0
    """The number of coordinates (set from :attr:`coordinates`)."""
    coordinate_unit: ClassVar[str | None] = None
    """The unit of a one-coordinate joint's coordinate ("rad" or "m"); None otherwise."""
    free_rotation: ClassVar[bool] = False
    """Whether the child's rotation relative to the parent is unconstrained and has no
    port (spherical and free joints): it is given as a rotation and an angular velocity
    and results report it as a quaternion and a rotation vector (see
    :meth:`orientation`)."""

    no_axis_motions: ClassVar[str] = (
        "it does not declare axis_motions() (each coordinate a rotation about or a "
        "translation along a fixed axis of the joint frame)")
    """Why :meth:`axis_motions` is None, as the fast paths that refuse the kind say."""

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        cls.n_free = len(cls.coordinates)
        cls.coordinate_unit = cls.coordinates[0][1] if cls.n_free == 1 else None
        if "needs_axis" not in cls.__dict__:      # kinds with coordinates need one
            cls.needs_axis = bool(cls.n_free)

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
        if self.needs_axis or axis is not None:
            if axis is None:
                raise ModelError(f"{self.type_name} joint '{name}' needs an axis (parent "
                                 f"coordinates)")
            self._set_frame(frame_from_axis(self._vector(axis, "axis")))
        else:
            self._set_frame(np.eye(3))
        self.axes: tuple[JointAxis, ...] = tuple(
            JointAxis(name, c, u, i, self.n_free) for i, (c, u) in enumerate(self.coordinates))
        for kind, value in (("spring", spring), ("damper", damper), ("actuator", actuator),
                            ("rotor", rotor)):
            if value is None:
                continue
            adder = getattr(self, f"add_{kind}")
            if self.n_free > 1:
                if not isinstance(value, Mapping):
                    raise ModelError(f"{self.type_name} joint '{name}' has coordinates "
                                     f"{', '.join(self.coordinate_names)}: give its {kind} "
                                     f"as a mapping from coordinate name to value")
                for c, v in value.items():
                    adder(v, coordinate=c)
            else:
                adder(value)

    def _vector(self, value: Any, what: str) -> np.ndarray:
        """The unit vector of ``value`` (3 finite numbers, not all zero: a direction in
        parent coordinates), or a ModelError naming the joint and ``what``."""
        try:
            v = np.array(value, dtype=float)
            if v.shape != (3,):
                raise TypeError
        except (TypeError, ValueError):
            raise ModelError(f"joint '{self.name}': {what} must be 3 numbers (parent "
                             f"coordinates), got {value!r}") from None
        try:
            return frame_from_axis(v)[:, 2]
        except ValueError as exc:
            raise ModelError(f"joint '{self.name}': {exc}; give a non-zero {what}") from None

    def _normal_to_axis(self, value: Any, what: str, problem: str) -> np.ndarray:
        """The unit vector of ``value`` (see :meth:`_vector`), checked perpendicular to
        the axis (to 1e-9 in cosine); ``problem`` says in the ModelError what it breaks."""
        a = self.Fa[:, 2]
        e = self._vector(value, what)
        if abs(a @ e) > 1e-9:
            raise ModelError(f"{self.type_name} joint '{self.name}': {what} "
                             f"{np.round(e, 6).tolist()} {problem} (it is not perpendicular "
                             f"to axis {np.round(a, 6).tolist()}: cosine {a @ e:.3g})")
        return e

    def _set_frame(self, Fa: np.ndarray) -> None:
        """The joint frame: ``Fa`` in parent coordinates (columns d1, d2, axis), ``Fb`` the
        same frame on the child at coordinates 0 (child coordinates)."""
        self.Fa = np.asarray(Fa, dtype=float)
        self.Fb = self.R0.T @ self.Fa

    # coordinates and ports ---------------------------------------------------------------
    @property
    def coordinate_names(self) -> tuple[str, ...]:
        """The coordinates' names, in order."""
        return tuple(c for c, _ in self.coordinates)

    def axis(self, coordinate: str | int | None = None) -> JointAxis:
        """The port of ``coordinate`` (its name or index; None for a one-coordinate
        joint). Raises a ModelError naming the joint and its coordinates otherwise."""
        if not self.axes:
            raise ModelError(f"{self.type_name} joint '{self.name}' has no coordinate with "
                             f"a port")
        if coordinate is None:
            if len(self.axes) == 1:
                return self.axes[0]
            raise ModelError(f"{self.type_name} joint '{self.name}' has coordinates "
                             f"{', '.join(self.coordinate_names)}: name one")
        for ax in self.axes:
            if coordinate == ax.name or (isinstance(coordinate, (int, np.integer)) and
                                         not isinstance(coordinate, bool) and
                                         coordinate == ax.index):
                return ax
        raise ModelError(f"{self.type_name} joint '{self.name}' has no coordinate "
                         f"{coordinate!r}; its coordinates: "
                         f"{', '.join(self.coordinate_names)}")

    def units(self) -> dict[str, str]:
        """A one-coordinate joint's units (see :meth:`JointAxis.units`); empty without a
        coordinate. A joint with several has them per axis: ``joint.axis(c).units()``."""
        return self.axes[0].units() if len(self.axes) == 1 else {}

    @property
    def axis_junction(self) -> str:
        """A one-coordinate joint's port junction ``<joint>.axis`` (flow: the rate)."""
        return self.axis().junction

    @property
    def axis_bond(self) -> str:
        """A one-coordinate joint's bond into its axis block (flow: the rate)."""
        return self.axis().bond

    @property
    def coordinate_state(self) -> str:
        """A one-coordinate joint's kinematic state holding its coordinate (rad or m)."""
        return self.axis().state

    def _all(self, kind: str) -> list:
        if len(self.axes) == 1:
            return self.axes[0].items(kind)
        return [x for ax in self.axes for x in ax.items(kind)]

    @property
    def springs(self) -> list[AxisSpring]:
        """The springs (every port's, in port order)."""
        return self._all("spring")

    @property
    def dampers(self) -> list[AxisDamper]:
        """The dampers (every port's, in port order)."""
        return self._all("damper")

    @property
    def actuators(self) -> list[AxisActuator]:
        """The actuators (every port's, in port order)."""
        return self._all("actuator")

    @property
    def rotors(self) -> list[AxisRotor]:
        """The rotor inertias (every port's, in port order)."""
        return self._all("rotor")

    def attachments(self, kind: str) -> list[str]:
        """The element names of this joint's springs, dampers, actuators or rotor
        inertias (``kind``: ``"spring"``, ``"damper"``, ``"actuator"`` or ``"rotor"``), port
        by port in the order they were added (see :func:`attachment_name`)."""
        if kind not in _KINDS:
            raise ModelError(f"unknown attachment kind {kind!r}; kinds: {', '.join(_KINDS)}")
        return [n for ax in self.axes for n in ax.attachments(kind)]

    # attachments -----------------------------------------------------------------------
    def _port_for(self, what: str, coordinate) -> JointAxis:
        if not self.n_free:
            raise ModelError(f"{self.type_name} joint '{self.name}' has no free-direction "
                             f"port for a {what}")
        return self.axis(coordinate)

    def add_spring(self, spring: AxisSpring | float, rest: float = 0.0, *,
                   coordinate: str | None = None) -> AxisSpring:
        """Attach a linear spring (stiffness > 0) on a coordinate (``coordinate``: its
        name; None for a one-coordinate joint)."""
        ax = self._port_for("spring", coordinate)
        s = spring if isinstance(spring, AxisSpring) else AxisSpring(spring, rest)
        try:
            s = AxisSpring(float(s.stiffness), float(s.rest))
        except (TypeError, ValueError):
            raise ModelError(f"joint '{self.name}': spring stiffness and rest must be "
                             f"numbers, got {spring!r}") from None
        if not np.isfinite(s.stiffness) or s.stiffness <= 0 or not np.isfinite(s.rest):
            raise ModelError(f"joint '{self.name}': spring stiffness must be positive and "
                             f"finite and its rest position finite, got {s}")
        ax.springs.append(s)
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

    def add_damper(self, damper: AxisDamper | float, *,
                   coordinate: str | None = None) -> AxisDamper:
        """Attach a linear damper (coefficient >= 0) on a coordinate."""
        ax = self._port_for("damper", coordinate)
        d = self._one_number(damper, AxisDamper, "damper coefficient", positive=False)
        ax.dampers.append(d)
        return d

    def add_rotor(self, rotor: AxisRotor | float, *,
                  coordinate: str | None = None) -> AxisRotor:
        """Attach a rotor inertia (> 0: kg m^2 on an angle, kg on a slide) on a coordinate."""
        ax = self._port_for("rotor inertia", coordinate)
        r = self._one_number(rotor, AxisRotor, "rotor inertia", positive=True)
        ax.rotors.append(r)
        return r

    def add_actuator(self, actuator: AxisActuator | Any, *,
                     coordinate: str | None = None) -> AxisActuator:
        """Attach an effort source on a coordinate (:class:`AxisActuator`'s efforts)."""
        ax = self._port_for("actuator", coordinate)
        a = actuator if isinstance(actuator, AxisActuator) else AxisActuator(actuator)
        if isinstance(a.effort, sympy.Basic) and a.effort.free_symbols:   # (not of t alone)
            TimeFunction.expression(a.effort, where=f"joint '{self.name}': actuator effort")
        if not isinstance(a.effort, (TimeFunction, StateFunction)):
            try:
                v = float(a.effort)
            except (TypeError, ValueError):
                raise ModelError(f"joint '{self.name}': actuator effort must be a number, a Time"
                                 f"Function, a StateFunction or an expression of t, got "
                                 f"{a.effort!r}") from None
            if not np.isfinite(v):
                raise ModelError(f"joint '{self.name}': actuator effort must be finite")
        ax.actuators.append(a)
        return a

    def add_limit(self, lower: float | None = None, upper: float | None = None, *,
                  restitution: float | None = None, stiffness: float | None = None,
                  damping: float = 0.0, rest_speed: float = 1e-3,
                  coordinate: str | None = None) -> AxisLimit:
        """Set stops on a coordinate (see :class:`AxisLimit`): ``lower`` and/or
        ``upper`` (rad or m), and either ``restitution`` (impact stops, e in [0, 1]) or
        ``stiffness`` (and ``damping``: compliant stops). One limit per coordinate."""
        ax = self._port_for("limit", coordinate)
        where = f"joint '{self.name}'" + (f" coordinate '{ax.name}'" if len(self.axes) > 1
                                          else "")
        if ax.limit is not None:
            raise ModelError(f"{where} already has a limit ({ax.limit}); one per coordinate")

        def num(v, what, low=None, high=None, none_ok=True):
            if v is None and none_ok:
                return None
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ModelError(f"{where}: limit {what} must be a number, got {v!r}") from None
            if not np.isfinite(v) or (low is not None and v < low) or \
                    (high is not None and v > high):
                rng = f" in [{low:g}, {high:g}]" if high is not None else \
                    (f" >= {low:g}" if low is not None else "")
                raise ModelError(f"{where}: limit {what} must be finite{rng}, got {v}")
            return v

        lo, hi = num(lower, "lower"), num(upper, "upper")
        if lo is None and hi is None:
            raise ModelError(f"{where}: a limit needs lower or upper (or both)")
        if lo is not None and hi is not None and not lo < hi:
            raise ModelError(f"{where}: limit lower ({lo:g}) must be below upper ({hi:g})")
        if (restitution is None) == (stiffness is None):
            raise ModelError(f"{where}: give either restitution (impact stops, in [0, 1]) "
                             f"or stiffness (compliant stops, > 0), not "
                             f"{'both' if restitution is not None else 'neither'}")
        e = num(restitution, "restitution", 0.0, 1.0)
        k = num(stiffness, "stiffness", 0.0)
        if k is not None and k == 0.0:
            raise ModelError(f"{where}: limit stiffness must be positive")
        lim = AxisLimit(lo, hi, e, k, num(damping, "damping", 0.0, none_ok=False),
                        num(rest_speed, "rest_speed", 0.0, none_ok=False))
        ax.limit = lim
        return lim

    def add_friction(self, coulomb: float, *, static: float | None = None,
                     viscous: float = 0.0, coordinate: str | None = None,
                     mu: float = 0.0, mu_static: float | None = None,
                     radius: float | None = None) -> AxisFriction:
        """Put Coulomb friction with stiction on a coordinate (see :class:`AxisFriction`):
        ``coulomb`` (N or N m, > 0; >= 0 with ``mu`` > 0) while sliding, ``static`` (>=
        coulomb; default coulomb) to break away; ``viscous`` (N s/m or N m s/rad) adds a
        damper.

        ``mu`` (>= 0, dimensionless) adds a part that follows the joint's transverse
        reaction R_t (N): the sliding level is ``coulomb + mu * radius * R_t`` on a
        turning coordinate (``radius``, m, > 0: the bearing's effective radius) and
        ``coulomb + mu * R_t`` on a sliding one (no radius); ``mu_static`` (>= mu;
        default mu) does the same for the static level. Only on the joint kinds in
        :data:`TRANSVERSE_REACTION_KINDS`, whose constraint force across the axis is the
        load a bearing or a slide carries."""
        ax = self._port_for("friction", coordinate)
        where = f"joint '{self.name}'" + (f" coordinate '{ax.name}'" if len(self.axes) > 1
                                          else "")
        if ax.friction is not None:
            raise ModelError(f"{where} already has friction ({ax.friction}); one per "
                             f"coordinate")
        friction = checked_friction(
            where, self.type_name, ax.unit, coulomb, static, mu, mu_static, radius,
            lambda v, what, positive: self._one_number(v, AxisDamper, what,
                                                       positive=positive).coefficient)
        if viscous:
            self.add_damper(viscous, coordinate=coordinate)
        ax.friction = friction
        return ax.friction

    # geometry helpers --------------------------------------------------------------------
    def _bodies(self):
        return (self.parent, self.child)

    def _place(self, A_a, r_a, Rrel, d) -> tuple[np.ndarray, np.ndarray]:
        """(A_b, r_b) with the child turned by ``Rrel`` from its rest (parent coordinates)
        and Q displaced from P by ``d`` (parent coordinates)."""
        A_b = A_a @ Rrel @ self.R0
        return A_b, r_a + A_a @ (self.P + d) - A_b @ self.Q

    def _move(self, A_a, r_a, w_a, v_a, A_b, r_b, w_rel, d_rate) -> tuple[np.ndarray, np.ndarray]:
        """(omega_b, v_b) global, with the child's angular velocity relative to the
        parent ``w_rel`` and Q's velocity relative to P ``d_rate`` (both in parent
        coordinates, the latter as seen in the parent)."""
        r_Q = r_b + A_b @ self.Q
        v_Q = v_a + cross3(w_a, r_Q - r_a) + A_a @ np.asarray(d_rate, dtype=float)
        w_b = w_a + A_a @ np.asarray(w_rel, dtype=float)
        return w_b, v_Q + cross3(w_b, r_b - r_Q)

    def rotation(self, A_a, r_a, A_b, r_b) -> np.ndarray:
        """The child's rotation relative to the parent beyond ``rest_rotation`` (3 x 3,
        parent coordinates), from the two bodies' poses."""
        return self._relative(A_a, r_a, A_b, r_b)[0]

    def frame_rotation(self, A_a, A_b) -> np.ndarray:
        """The child's joint frame relative to the parent's, (A_a Fa)^T (A_b Fb): the
        rotation taking child-joint-frame components to parent-joint-frame ones (the
        identity at coordinates 0). ``A_a``, ``A_b`` (3, 3) or stacks (n, 3, 3); for a
        joint without an axis Fa is the identity and this is :meth:`rotation`."""
        A_a, A_b = np.asarray(A_a, dtype=float), np.asarray(A_b, dtype=float)
        return self.Fa.T @ np.swapaxes(A_a, -1, -2) @ A_b @ self.Fb

    def orientation(self, A_a, A_b) -> tuple[np.ndarray, np.ndarray]:
        """(quaternions (4, n), rotation vectors (3, n)) of :meth:`frame_rotation` at
        the rotations ``A_a`` ((3, 3) or (n, 3, 3)) and ``A_b`` (n, 3, 3), in time order:
        unit quaternions (w, x, y, z), w >= 0 at the first and each sign-continuous with
        the one before; rotation vectors axis times angle (rad, angle in [0, pi])."""
        rel = self.frame_rotation(A_a, A_b)
        n = rel.shape[0]
        quat, rvec = np.zeros((4, n)), np.zeros((3, n))
        for i in range(n):
            q = matrix_to_quat(rel[i])                # w >= 0: the angle in [0, pi]
            s = float(np.linalg.norm(q[1:]))
            if s > 0.0:
                rvec[:, i] = q[1:] * (2.0 * np.arctan2(s, q[0]) / s)
            quat[:, i] = -q if i and q @ quat[:, i - 1] < 0 else q
        return quat, rvec

    def port_values(self, q: Any) -> Any:
        """The coordinates of the ports (as :meth:`coordinate` gives them) of ``q`` in
        :meth:`child_pose`'s form: ``q`` itself, but for kinds whose form carries more
        than the ports' coordinates (a free joint's rotation)."""
        return q

    def _relative(self, A_a, r_a, A_b, r_b) -> tuple[np.ndarray, np.ndarray]:
        """(Rrel, d): the child's rotation from its rest and Q's displacement from P, both
        in parent coordinates (the inverse of :meth:`_place`)."""
        Rrel = A_a.T @ A_b @ self.R0.T
        d = A_a.T @ ((r_b + A_b @ self.Q) - (r_a + A_a @ self.P))
        return Rrel, d

    # the contract ------------------------------------------------------------------------
    def axis_motions(self) -> tuple[AxisMotion, ...] | None:
        """How the coordinates move the child: one :class:`AxisMotion` per coordinate,
        in order, each a rotation about or a translation along a fixed axis of the
        joint frame, each moving the ones after it (the child's motion from its rest is
        :func:`~elements.joints.axis.chain_pose` of them); ``()`` for a joint without
        coordinates. A kind with :attr:`free_rotation` turns freely about the joint
        point after them (spherical: ``()``; free: three translations). None (the
        default) where the motion is no such chain (a screw): the joint-space recursions
        (:class:`~elements.FastDynamics`) then refuse the joint, naming it and
        :attr:`no_axis_motions`; the bond graph model takes every joint. The contract
        test checks a declared chain against :meth:`child_pose`."""
        return None

    def checked_axis_motions(self) -> tuple[AxisMotion, ...] | None:
        """:meth:`axis_motions`, checked: one per coordinate, each a rotation or a
        translation whose unit is its coordinate's ("rad" or "m"), with a unit
        direction and a finite point; a ModelError naming the joint otherwise."""
        got = self.axis_motions()
        if got is None:
            return None
        where = f"{self.type_name} joint '{self.name}': axis_motions()"
        try:
            got = tuple(got)
        except TypeError:
            raise ModelError(f"{where} must give a tuple of AxisMotion, got {got!r}") from None
        if len(got) != self.n_free:
            raise ModelError(f"{where} gives {len(got)} motion(s) for its {self.n_free} "
                             f"coordinate(s) ({', '.join(self.coordinate_names) or 'none'}); "
                             f"give one per coordinate, in order")
        for m, (c, unit) in zip(got, self.coordinates):
            if not isinstance(m, AxisMotion) or m.kind not in ("rotation", "translation"):
                raise ModelError(f"{where}: coordinate '{c}': expected an AxisMotion "
                                 f"(AxisMotion.rotation or .translation), got {m!r}")
            if m.unit != unit:
                raise ModelError(f"{where}: coordinate '{c}' is in {unit} but its motion "
                                 f"is a {m.kind} (in {m.unit}); a rotation's coordinate is "
                                 f"in rad, a translation's in m")
            d, p = np.asarray(m.direction, dtype=float), np.asarray(m.point, dtype=float)
            if d.shape != (3,) or p.shape != (3,) or not np.all(np.isfinite(p)) or \
                    not abs(float(np.linalg.norm(d)) - 1.0) < 1e-9:
                raise ModelError(f"{where}: coordinate '{c}': direction must be a unit "
                                 f"vector and point 3 finite numbers (joint frame), got "
                                 f"{m.direction!r}, {m.point!r}")
        return got

    def motion_pose(self, q: Any, rotation: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """(Rrel, d) of the declared :meth:`axis_motions` at coordinates ``q`` (and, for
        a kind with :attr:`free_rotation`, the free ``rotation`` after them, 3 x 3 in
        the frame they leave; None: none): the child's rotation from its rest and Q's
        displacement from P (parent body axes), as :meth:`_relative` gives them back
        from :meth:`child_pose`'s poses."""
        motions = self.checked_axis_motions()
        if motions is None:
            raise ModelError(f"{self.type_name} joint '{self.name}': {self.no_axis_motions}")
        R, d = chain_pose(motions, self.Fa, q)
        return (R if rotation is None else R @ np.asarray(rotation, dtype=float)), d

    @abc.abstractmethod
    def constraint_blocks(self) -> list[Block]:
        """The constraint blocks (each a 0-junction whose port the causality assignment
        closes with an unknown effort source: its effort is the reaction)."""

    def axis_blocks(self) -> list[Block]:
        """One block per coordinate, in order, whose flow sum_k G_k f_k is that
        coordinate's rate (exactly, or wherever the constraints hold)."""
        return []

    def axis_block(self) -> Block:
        """The axis block of a one-coordinate joint."""
        self.axis()
        return self.axis_blocks()[0]

    @abc.abstractmethod
    def child_pose(self, A_a: np.ndarray, r_a: np.ndarray, q) -> tuple[np.ndarray, np.ndarray]:
        """(A_b, r_b): the child's rotation and centre for the parent's pose and the
        coordinates ``q`` (a number, an array of the coordinates, for a spherical joint
        a rotation matrix, for a free joint a pair (translation, rotation) or the
        translation alone; None: the default)."""

    @abc.abstractmethod
    def child_twist(self, A_a, r_a, w_a, v_a, A_b, r_b, qd) -> tuple[np.ndarray, np.ndarray]:
        """(omega_b, v_b) global, from the parent's (omega_a, v_a, global) and the rates
        ``qd`` (as ``q`` in :meth:`child_pose`)."""

    def coordinate(self, A_a, r_a, A_b, r_b) -> Any:
        """The coordinates from the two bodies' poses (angles as principal values): a
        number for a one-coordinate joint, an array (n,) for several."""
        raise ModelError(f"{self.type_name} joint '{self.name}' has no coordinate")

    def rates(self, pose, twist) -> np.ndarray:
        """The coordinates' rates (rad/s or m/s), (n,), from the bodies' poses
        ``{name: (A, r)}`` and twists ``{name: (omega, v)}`` (global): each axis block's
        flow sum_k G_k f_k."""
        out = []
        for blk in self.axis_blocks():
            geo = Geometry.of_poses(pose, blk.bodies)
            total = 0.0
            for t in blk.terms:
                w, v = twist[t.owner]
                f = v if t.kind is Junction.V else pose[t.owner][0].T @ w
                total += float((t.G(geo) @ f)[0])
            out.append(total)
        return np.array(out)

    def rate(self, pose, twist) -> float:
        """A one-coordinate joint's rate (see :meth:`rates`)."""
        self.axis()
        return float(self.rates(pose, twist)[0])

    def n_constraints(self) -> int:
        return sum(b.dim for b in self.constraint_blocks())

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """The joint's initial coordinates and rates checked and in the form
        :meth:`child_pose` and :meth:`child_twist` take (None: not given, the default).

        One coordinate: a finite number each (rad or m, rad/s or m/s). Several: a
        sequence of that many numbers in :attr:`coordinates` order, or a mapping from
        coordinate name to number (those not named 0), as an array (n,). Raises a
        ModelError naming the joint otherwise."""
        if not self.n_free:
            if q is not None or qd is not None:
                raise ModelError(f"{self.type_name} joint '{self.name}' has no coordinate: "
                                 f"give no initial coordinate or rate for it")
            return None, None
        out = []
        for what, v, key in (("initial coordinate", q, "q"), ("initial rate", qd, "qd")):
            out.append(None if v is None else
                       self.values(v, what, [ax.units()[key] for ax in self.axes]))
        return out[0], out[1]

    def values(self, v: Any, what: str, units: list[str]) -> Any:
        """``v``, one value per coordinate (a number; several as a sequence in coordinate
        order or a mapping by coordinate name, those not named 0), checked finite: a
        number for one coordinate, an array (n,) for several. ``what`` and ``units`` (one
        per coordinate) name them in the ModelError raised otherwise."""
        n = self.n_free
        if n > 1 and isinstance(v, Mapping):
            bad = [k for k in v if k not in self.coordinate_names]
            if bad:
                raise ModelError(f"{self.type_name} joint '{self.name}': {what} "
                                 f"names {', '.join(map(repr, bad))}; its coordinates: "
                                 f"{', '.join(self.coordinate_names)}")
            v = [v.get(c, 0.0) for c in self.coordinate_names]
        try:
            arr = np.array(v, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            arr = np.zeros(0)
        if n > 1 and np.ndim(v) == 0:
            arr = np.zeros(0)
        if arr.size != n or not np.all(np.isfinite(arr)) or \
                np.abs(arr).max() > MAX_MAGNITUDE:
            want = (f"one finite number ({units[0]}, " if n == 1 else
                    f"{n} finite numbers ({', '.join(f'{c} in {u}' for c, u in zip(self.coordinate_names, units))}"
                    f") in order, or a mapping by coordinate name (")
            raise ModelError(f"{self.type_name} joint '{self.name}': {what} must "
                             f"be {want}at most {MAX_MAGNITUDE:.0e} in magnitude), got {v!r}")
        return float(arr[0]) if n == 1 else arr

    def zero(self) -> Any:
        """The coordinates (or rates) 0 in :meth:`child_pose`'s form."""
        if not self.n_free:
            return None
        return 0.0 if self.n_free == 1 else np.zeros(self.n_free)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, parent={self.parent.name!r}, "
                f"child={self.child.name!r})")

