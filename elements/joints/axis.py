"""A joint coordinate's port and what attaches there.

- :class:`JointAxis`: one coordinate of a joint: its names (port, junction, bond,
  state), unit, and its springs, dampers, actuators, rotor inertias, limit and friction.
- :class:`AxisMotion`: how one coordinate moves the child, a rotation (rad) about or a
  translation (m) along a fixed axis of the joint frame: what the joint-space
  recursions (:class:`~elements.FastDynamics`) and the 3D page read of a joint kind.
- The attachments: :class:`AxisSpring`, :class:`AxisDamper`, :class:`AxisActuator`,
  :class:`AxisRotor`, :class:`AxisLimit` (stops), :class:`AxisFriction` (Coulomb
  friction with stiction); :func:`attachment_name`.

The joint contract (:mod:`elements.joints.contract`) gives each joint one port per
coordinate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from bondgraph import ModelError, TimeFunction
from bondgraph.spatial import axis_angle_matrix

__all__ = ["JointAxis", "AxisMotion", "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor",
           "AxisLimit", "AxisFriction", "attachment_name", "attachment_of", "chain_pose"]


def attachment_name(joint: str, kind: str, i: int, count: int) -> str:
    """The element name of a port's i-th spring, damper or actuator (of ``count``):
    ``J3.spring`` for one, ``J3.spring0``, ``J3.spring1`` for several; its parameters
    are named after it (``J3.spring.k``, ``J3.spring.rest``, ``J3.damper.c``, and the
    actuator's constant effort ``J1.actuator``). ``joint`` is the port's name: the
    joint's, or ``<joint>.<coordinate>`` for a joint with several coordinates."""
    return f"{joint}.{kind}{i}" if count > 1 else f"{joint}.{kind}"


def attachment_of(stem: str) -> tuple[str, int] | None:
    """The inverse of :func:`attachment_name` for the part after the port, as a user
    writes it in a parameter's name: ``"spring"`` -> ("spring", 0), ``"damper1"`` ->
    ("damper", 1); None for anything else."""
    for kind in _KINDS:
        if stem == kind:
            return kind, 0
        if stem.startswith(kind) and stem[len(kind):].isdigit():
            return kind, int(stem[len(kind):])
    return None


@dataclass(frozen=True)
class AxisMotion:
    """How one coordinate of a joint moves the child: a ``"rotation"`` (the coordinate
    in rad, right-hand rule) about, or a ``"translation"`` (in m) along, the unit
    ``direction``; a rotation's axis passes through ``point`` (m, from the joint point
    P). Both in the joint frame (:attr:`Joint.Fa`'s columns d1, d2, axis; the parent's
    axes for a kind without an axis) at coordinates 0.

    A joint's :meth:`~elements.Joint.axis_motions` lists one per coordinate, in order,
    each moving the ones after it (a chain of revolutes and slides through massless
    links): the child's motion from its rest is the product of exponentials
    exp(xi_1 q_1) ... exp(xi_n q_n) of the rest twists xi_k (:func:`chain_pose`).
    Make one with :meth:`rotation` or :meth:`translation`."""

    kind: str
    direction: tuple[float, float, float]
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @classmethod
    def rotation(cls, direction: Any, point: Any = (0.0, 0.0, 0.0)) -> "AxisMotion":
        """A rotation (rad) about ``direction`` through ``point`` (joint frame, m from P)."""
        return cls("rotation", _unit(direction), tuple(float(v) for v in point))

    @classmethod
    def translation(cls, direction: Any) -> "AxisMotion":
        """A translation (m) along ``direction`` (joint frame)."""
        return cls("translation", _unit(direction))

    @property
    def unit(self) -> str:
        """The coordinate's unit: ``"rad"`` for a rotation, ``"m"`` for a translation."""
        return "rad" if self.kind == "rotation" else "m"

    def twist(self, Fa: np.ndarray) -> np.ndarray:
        """The rest twist (6,) in the parent body's axes, positions from P: (s, p x s)
        for a rotation, (0, s) for a translation, s = Fa direction, p = Fa point."""
        s = np.asarray(Fa, dtype=float) @ np.asarray(self.direction, dtype=float)
        if self.kind == "translation":
            return np.concatenate([np.zeros(3), s])
        p = np.asarray(Fa, dtype=float) @ np.asarray(self.point, dtype=float)
        return np.concatenate([s, np.cross(p, s)])


def _unit(v: Any) -> tuple[float, float, float]:
    """``v`` (3 finite numbers, not all zero) as a unit vector; a ValueError otherwise."""
    a = np.asarray(v, dtype=float).reshape(3)
    n = float(np.linalg.norm(a))
    if not (np.all(np.isfinite(a)) and n > 0):
        raise ValueError(f"an axis motion's direction must be 3 finite numbers, not all "
                         f"zero, got {v!r}")
    return tuple(float(x) for x in a / n)


def chain_pose(motions: "tuple[AxisMotion, ...]", Fa: np.ndarray, q: Any
               ) -> tuple[np.ndarray, np.ndarray]:
    """(Rrel, d): the child's rotation from its rest and its joint point's displacement
    from P (parent body axes, m) at coordinates ``q`` (one per motion) for the chain of
    ``motions`` in the joint frame ``Fa``: the product of exponentials (see
    :class:`AxisMotion`), the same as :meth:`Joint.child_pose` for a joint that
    declares them (the contract test checks it)."""
    R, t = np.eye(3), np.zeros(3)
    for m, qk in zip(motions, np.atleast_1d(np.asarray(q, dtype=float))):
        xi = m.twist(Fa)
        if m.kind == "translation":
            Rk, tk = np.eye(3), xi[3:] * qk
        else:
            s = xi[:3]
            p = np.asarray(Fa, dtype=float) @ np.asarray(m.point, dtype=float)
            Rk = axis_angle_matrix(s, float(qk))
            tk = p - Rk @ p
        R, t = R @ Rk, R @ tk + t
    return R, t


@dataclass(frozen=True)
class AxisSpring:
    """A linear spring on a joint coordinate: effort = stiffness (q - rest).

    stiffness in N/m (a slide) or N m/rad (an angle); rest in m or rad."""

    stiffness: float
    rest: float = 0.0


@dataclass(frozen=True)
class AxisDamper:
    """A linear damper on a joint coordinate: effort = coefficient * rate
    (N s/m or N m s/rad)."""

    coefficient: float


@dataclass(frozen=True)
class AxisRotor:
    """A rotor inertia on a joint coordinate (MuJoCo's ``armature``, a motor's reflected
    inertia): kinetic energy inertia * rate^2 / 2, in kg m^2 (an angle) or kg (a slide).
    An I element on the port's 1-junction; its momentum is set from the coordinate's
    rate by :meth:`~elements.mechanism_model.MechanismModel.initial_state`."""

    inertia: float


@dataclass(frozen=True)
class AxisActuator:
    """An effort source on a joint coordinate (N or N m on the child along the axis):
    a number, a TimeFunction, a StateFunction, or a sympy expression of time ``t``
    alone (kept as its :meth:`TimeFunction.expression`: its exact rate, its jumps
    stepped to, the compiled loop kept)."""

    effort: Any

    def __post_init__(self) -> None:
        if isinstance(self.effort, sympy.Basic) and self.effort.free_symbols:
            try:
                object.__setattr__(self, "effort", TimeFunction.expression(
                    self.effort, where="actuator effort"))
            except ModelError:       # (kept: the joint it is added to says what is wrong)
                pass


@dataclass(frozen=True)
class AxisLimit:
    """Stops on a joint coordinate: ``lower <= q <= upper`` (rad or m; None: no stop on
    that side). Two kinds, the user's choice:

    - **impact** (``restitution`` e in [0, 1] given): when the coordinate reaches a stop
      the run stops there (an event), an impulse along the axis reverses its rate,
      qd+ = -e qd-, and the run goes on. A rebound slower than ``rest_speed`` (rad/s or
      m/s; and every rebound when e = 0) leaves the joint resting on the stop, held
      there by whatever effort it takes, until that effort would have to pull;
    - **compliant** (``stiffness`` k > 0 given, ``damping`` c >= 0): beyond a stop an
      effort -k (q - stop) - c qd acts (a spring and a damper engaged only in contact; N
      or N m, with k in N/m or N m/rad and c in N s/m or N m s/rad).

    The energy an impact takes and the energy a compliant stop's damper dissipates are
    reported in the energy ledger (``<port>.impacts``, ``<port>.stop.<side>.damper``)."""

    lower: float | None = None
    upper: float | None = None
    restitution: float | None = None
    stiffness: float | None = None
    damping: float = 0.0
    rest_speed: float = 1e-3

    @property
    def kind(self) -> str:
        """``"impact"`` or ``"compliant"``."""
        return "impact" if self.restitution is not None else "compliant"

    def sides(self) -> list[tuple[str, float]]:
        """The stops that are set: (``"lower"`` or ``"upper"``, position)."""
        return [(side, v) for side, v in (("lower", self.lower), ("upper", self.upper))
                if v is not None]


@dataclass(frozen=True)
class AxisFriction:
    """Coulomb friction with stiction on a joint coordinate (N or N m).

    While the coordinate moves, an effort -coulomb * sign(qd) acts on it. When its rate
    reaches zero (an event) the joint sticks if the effort that holds it still is at
    most ``static`` in magnitude (default: ``coulomb``), and is held by exactly that
    effort; it slips again (an event) when the holding effort would exceed ``static``.
    The energy friction dissipates is reported in the energy ledger
    (``<port>.friction``). Viscous friction is a damper (:meth:`Joint.add_damper`).

    **Load-dependent friction** (``mu`` > 0): the levels follow the joint's transverse
    reaction R_t (N), the magnitude of the constraint force on the child perpendicular
    to the joint's axis (a revolute joint's bearing load, a prismatic joint's force
    normal to its slide): kinetic ``coulomb + mu * radius * R_t`` and static ``static +
    mu_static * radius * R_t`` on a turning coordinate (``radius`` the bearing's
    effective radius, m), ``coulomb + mu * R_t`` and ``static + mu_static * R_t`` on a
    sliding one (``radius`` None). The run solves the loop between the friction and
    the reaction it loads (:mod:`elements.running.joint_load`)."""

    coulomb: float
    static: float
    mu: float = 0.0
    mu_static: float = 0.0
    radius: float | None = None

    @property
    def loaded(self) -> bool:
        """Whether the levels follow the transverse reaction (``mu`` or ``mu_static``
        > 0)."""
        return self.mu > 0.0 or self.mu_static > 0.0

    def kinetic_level(self, reaction: float) -> float:
        """The sliding friction's magnitude (N or N m) under a transverse reaction of
        magnitude ``reaction`` (N)."""
        return self.coulomb + self.mu * (self.radius or 1.0) * reaction

    def static_level(self, reaction: float) -> float:
        """The largest holding effort (N or N m) under a transverse reaction of
        magnitude ``reaction`` (N)."""
        return self.static + self.mu_static * (self.radius or 1.0) * reaction


TRANSVERSE_REACTION_KINDS = ("revolute", "prismatic", "cylindrical")
"""The joint kinds (``type_name``) whose friction may follow the transverse reaction
(:meth:`Joint.add_friction` with ``mu``): their constraint force on the child across
the axis is the load their bearing or slide carries."""


def checked_friction(where: str, kind: str, unit: str, coulomb: Any, static: Any,
                     mu: Any, mu_static: Any, radius: Any, number) -> AxisFriction:
    """The :class:`AxisFriction` of :meth:`Joint.add_friction` on a coordinate of unit
    ``unit`` of a joint of kind ``kind`` (``where`` names it in messages), every value
    checked (``number(value, what, positive)`` reads one number or says what is valid):
    static >= coulomb, mu_static >= mu, load-dependent friction only on the kinds of
    :data:`TRANSVERSE_REACTION_KINDS`, a radius (m, > 0) exactly where a turning
    coordinate has it. A ModelError says what is valid."""
    m = number(mu, "friction coefficient mu", False)
    ms = m if mu_static is None else number(mu_static, "static friction coefficient "
                                            "mu_static", False)
    if ms < m:
        raise ModelError(f"{where}: mu_static ({ms:g}) must be at least mu ({m:g})")
    loaded = m > 0.0 or ms > 0.0
    fc = number(coulomb, "Coulomb friction", not loaded)
    fs = fc if static is None else number(static, "static friction", not loaded)
    if fs < fc:
        raise ModelError(f"{where}: static friction ({fs:g}) must be at least the "
                         f"Coulomb friction ({fc:g})")
    if loaded and kind not in TRANSVERSE_REACTION_KINDS:
        raise ModelError(
            f"{where} ({kind}): friction coefficient mu needs a joint whose "
            f"transverse reaction is defined ({', '.join(TRANSVERSE_REACTION_KINDS)}); "
            f"give this joint a constant Coulomb friction (mu = 0)")
    if radius is not None and not loaded:
        raise ModelError(f"{where}: radius is used only with a friction coefficient "
                         f"mu > 0; leave it out for constant friction")
    r = None
    if loaded and unit == "rad":
        if radius is None:
            raise ModelError(f"{where}: friction coefficient mu on a turning "
                             f"coordinate needs radius (m, > 0): the bearing's "
                             f"effective radius (friction torque = mu * radius * "
                             f"transverse reaction)")
        r = number(radius, "friction radius", True)
    elif loaded and radius is not None:
        raise ModelError(f"{where}: radius applies to a turning coordinate only; on a "
                         f"sliding one the friction force is mu * the normal reaction "
                         f"(leave radius out)")
    return AxisFriction(fc, fs, m, ms, r)


_KINDS = ("spring", "damper", "actuator", "rotor")


class JointAxis:
    """One coordinate of a joint and its port: names, unit and what is attached there.

    Attributes
    ----------
    joint : str
        The joint's name.
    name : str
        The coordinate's name (``"angle"``, ``"slide"``, ``"x"``...).
    unit : str
        ``"rad"`` or ``"m"``.
    index : int
        Its place among the joint's coordinates.
    port : str
        The stem of its element names: the joint's name for a one-coordinate joint,
        ``<joint>.<name>`` otherwise.
    springs, dampers, actuators, rotors : list
        The attachments, in the order they were added.
    """

    def __init__(self, joint: str, name: str, unit: str, index: int, count: int):
        self.joint, self.name, self.unit, self.index = joint, name, unit, index
        self.port = joint if count == 1 else f"{joint}.{name}"
        self.springs: list[AxisSpring] = []
        self.dampers: list[AxisDamper] = []
        self.actuators: list[AxisActuator] = []
        self.rotors: list[AxisRotor] = []
        self.limit: AxisLimit | None = None
        self.friction: AxisFriction | None = None

    @property
    def lock(self) -> str:
        """The source on the port that carries Coulomb friction and holds the joint when
        it sticks or rests on an impact stop: an Se (effort ``<port>.lock.effort``, set
        by the run from the friction's direction) or, while held, an Sf of zero flow
        whose effort is the holding effort. Present when the port has friction or
        impact stops."""
        return f"{self.port}.lock"

    @property
    def switched(self) -> bool:
        """Whether the port has friction or stops (its run switches between modes)."""
        return self.limit is not None or self.friction is not None

    def stop_element(self, side: str) -> str:
        """A compliant stop's spring element (``<port>.stop.lower`` / ``.upper``); its
        damper is ``<that>.damper``."""
        return f"{self.port}.stop.{side}"

    @property
    def junction(self) -> str:
        """The port's 1-junction (flow: the coordinate's rate)."""
        return f"{self.port}.axis"

    @property
    def bond(self) -> str:
        """The bond from the port's junction into the axis block (its flow: the rate,
        rad/s or m/s)."""
        return f"{self.port}.axis.b"

    @property
    def state(self) -> str:
        """The kinematic state integrating the rate: the coordinate, never wrapped."""
        return f"{self.port}.coord"

    @property
    def block_name(self) -> str:
        """The axis block's 0-junction."""
        return f"{self.port}.axis0"

    def items(self, kind: str) -> list:
        """The attachments of ``kind`` ("spring", "damper", "actuator" or "rotor")."""
        return {"spring": self.springs, "damper": self.dampers,
                "actuator": self.actuators, "rotor": self.rotors}[kind]

    def attachments(self, kind: str) -> list[str]:
        """Their element names (see :func:`attachment_name`)."""
        n = len(self.items(kind))
        return [attachment_name(self.port, kind, i, n) for i in range(n)]

    def units(self) -> dict[str, str]:
        """The units of what attaches here: the coordinate ``q``, rate ``qd`` and
        acceleration ``qdd``, the
        ``effort``, a spring's ``k`` and ``rest``, a damper's ``c``, a rotor's
        ``inertia``."""
        u = self.unit
        effort = "N" if u == "m" else "N m"
        return {"q": u, "qd": f"{u}/s", "qdd": f"{u}/s^2", "effort": effort,
                "k": f"{effort}/{u}", "rest": u, "c": f"{effort} s/{u}", "inertia": "kg" if u == "m" else "kg m^2"}

    def __repr__(self) -> str:
        return f"JointAxis({self.port!r}, {self.unit})"
