"""Rigid bodies as vector bond graphs (method.md section 2).

- :class:`Inertia`: a body's central inertia tensor; built so that it cannot be mistaken
  for an inertia about another point.
- :class:`RigidBody`: mass, central inertia, named points; builds its vector bond graph.
- :class:`Ground`: the fixed body (no states, no elements).
- :class:`PointVelocityMTF`: the MTF of a point's velocity, registered kind ``"PointMTF"``.

A body ``B`` contributes these elements and states to the mechanism's graph::

    Se:B.gravity --> 1:B.v (v_c, global) --> I:B.linear (m E3; state p_B.linear = m v_c)
                     1:B.w (omega^b, body) --> I:B.angular (J^b; state p_B.angular = h^b)
                                          '--> EJS:B.ejs (effort -h~ omega^b)
    kinematic states: B.r (centre of mass, global, m) integrates v_c;
                      B.q (unit quaternion w,x,y,z, body -> global) integrates omega^b.

Joints and loads attach to ``B.v`` and ``B.w``; a point P (body coordinates r_P^b) is
reached through an MTF from ``B.w`` of modulus ``sign * (-A r_P^b~)``, whose flow is the
rotational part A (omega^b x r_P^b) of the point's velocity (global).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import (
    EJS, I, MTF, BondGraph, KinematicState, ModelError, OneJunction, Se, register_element,
)
from bondgraph.element import MAX_MAGNITUDE, check_name
from bondgraph.spatial import body_rate_from_quat_rate, quat_rate, quat_to_matrix, skew

from elements.kernels.blocks import _compiled

__all__ = ["Inertia", "RigidBody", "Ground", "PointVelocityMTF"]


def _quat_rate(q: np.ndarray, omega_body: np.ndarray) -> np.ndarray:
    """:func:`bondgraph.spatial.quat_rate`, compiled for stacks (the batched kinematic
    rates of all bodies; elements.kernels.compiled.quat_rates), numpy for one body. Given to
    the bodies built where numba is enabled (one function for all: one batch)."""
    q, om = np.asarray(q, dtype=float), np.asarray(omega_body, dtype=float)
    if q.ndim == 2 and om.ndim == 2:
        compiled = _COMPILED[0]
        if compiled is None:     # (a model built elsewhere and unpickled in this process)
            compiled = _COMPILED[0] = _compiled()
        if compiled is not None:
            return compiled.quat_rates(np.ascontiguousarray(q), np.ascontiguousarray(om))
    return quat_rate(q, om)


_COMPILED: list = [None]      # elements.kernels.compiled, once a body was built with it


def _quat_rate_kernel():
    """The compiled kernel behind :func:`_quat_rate` for stacks
    (:func:`elements.kernels.compiled.quat_rates_typed`: q (n, 4), omega^b (n, 3) -> dq/dt
    (n, 4)),
    for compiled callers (:mod:`bondgraph._rk_kernels`); None without numba."""
    compiled = _COMPILED[0]
    if compiled is None:
        compiled = _COMPILED[0] = _compiled()
    return None if compiled is None else compiled.quat_rates_typed


def _quat_rate_c_source() -> str:
    """The C source of the compiled kernel (``bg_kin_rate``), for an exported FMU."""
    from elements.kernels.compiled_c import quat_rate_c_source
    return quat_rate_c_source()


_quat_rate.compiled_kernel = _quat_rate_kernel    # type: ignore[attr-defined]
_quat_rate.c_source = _quat_rate_c_source         # type: ignore[attr-defined]


INERTIA_ENTRIES = {"Ixx": (0, 0), "Iyy": (1, 1), "Izz": (2, 2), "Ixy": (0, 1),
                   "Ixz": (0, 2), "Iyz": (1, 2)}
"""The parameters of a body's central inertia (body axes): name -> matrix entry."""

SINGULAR_INERTIA = 1e-12
"""A central inertia whose smallest principal moment is at most this times its largest is
singular to double precision (its inverse, which the equations use, is meaningless)."""


@dataclass(frozen=True)
class Inertia:
    """A body's inertia tensor about its centre of mass, in body coordinates (kg m^2).

    Build it with one of the constructors, which say what they take:
    :meth:`about_center`, :meth:`principal`, :meth:`about_point` (converted to the centre
    with the parallel-axis theorem), :meth:`solid_cube`, :meth:`rod`.
    """

    matrix: np.ndarray
    check_triangle: bool = True
    """Refuse principal moments that break I1 + I2 >= I3 (no rigid body has them). A
    robot description may carry such values (Pinocchio and MuJoCo accept them; the
    equations only need a positive definite tensor): importers pass False after a
    warning."""

    def __post_init__(self):
        try:
            m = np.array(self.matrix, dtype=float)
        except (TypeError, ValueError):
            m = np.zeros(0)
        if m.shape != (3, 3) or not np.all(np.isfinite(m)):
            raise ModelError(f"inertia must be a finite 3x3 matrix (kg m^2), got "
                             f"{self.matrix!r}")
        if np.abs(m).max() > MAX_MAGNITUDE:
            raise ModelError(f"inertia {m.tolist()} has entries beyond {MAX_MAGNITUDE:.0e} "
                             f"kg m^2 (products of such values overflow)")
        if not np.allclose(m, m.T, atol=1e-12 * max(1.0, np.abs(m).max())):
            raise ModelError(f"inertia must be symmetric, got {m.tolist()}")
        eig = np.linalg.eigvalsh(m)
        if eig.min() <= SINGULAR_INERTIA * eig.max():
            raise ModelError(f"inertia must be positive definite (its smallest principal "
                             f"moment above {SINGULAR_INERTIA:g} times its largest); its "
                             f"principal moments are {eig.tolist()}")
        tol = 1e-9 * eig.max()
        if self.check_triangle and eig[0] + eig[1] < eig[2] - tol:
            raise ModelError(f"inertia {m.tolist()} violates the triangle inequality of "
                             f"principal moments (I1 + I2 >= I3): no rigid body has it")
        object.__setattr__(self, "matrix", m)

    @classmethod
    def about_center(cls, matrix) -> "Inertia":
        """From the 3x3 tensor about the centre of mass, body coordinates (kg m^2)."""
        return cls(_numbers("Inertia.about_center", "matrix", matrix, (3, 3)))

    @classmethod
    def principal(cls, ixx: float, iyy: float, izz: float) -> "Inertia":
        """From principal moments about the centre of mass along the body axes (kg m^2)."""
        return cls(np.diag(_numbers("Inertia.principal", "moments", [ixx, iyy, izz], (3,))))

    @classmethod
    def about_point(cls, matrix, point, mass: float) -> "Inertia":
        """From the tensor about ``point`` (body coordinates of that point relative to the
        centre of mass, m) of a body of ``mass`` (kg): J_c = J_P - m (|r|^2 E - r r^T)."""
        r = _numbers("Inertia.about_point", "point", point, (3,))
        jp = _numbers("Inertia.about_point", "matrix", matrix, (3, 3))
        m = float(_numbers("Inertia.about_point", "mass", mass, ()))
        return cls(jp - m * (np.dot(r, r) * np.eye(3) - np.outer(r, r)))

    @classmethod
    def solid_cube(cls, mass: float, side: float) -> "Inertia":
        """A uniform cube: m s^2 / 6 about each axis."""
        m, s = _numbers("Inertia.solid_cube", "mass and side", [mass, side], (2,))
        return cls(np.eye(3) * (m * s ** 2 / 6.0))

    @classmethod
    def rod(cls, mass: float, length: float, axis: int = 0, *, thin: float) -> "Inertia":
        """A uniform slender rod along body axis ``axis`` (0, 1, 2): m l^2 / 12 about the
        two transverse axes and ``thin`` (> 0, kg m^2) about its own axis."""
        m, length, thin = _numbers("Inertia.rod", "mass, length and thin",
                                   [mass, length, thin], (3,))
        if not thin > 0:
            raise ModelError(f"Inertia.rod: thin (the inertia about the rod's own axis) must "
                             f"be positive, got {thin}")
        if axis not in (0, 1, 2):
            raise ModelError(f"Inertia.rod: axis must be 0, 1 or 2 (body x, y, z), got "
                             f"{axis!r}")
        d = np.full(3, m * length ** 2 / 12.0)
        d[axis] = thin
        return cls(np.diag(d))


def _numbers(where: str, what: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a finite float array of ``shape``, or a ModelError naming ``where``."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ModelError(f"{where}: {what} must be finite numbers of shape {shape}, got "
                         f"{value!r}")
    return arr


class RigidBody:
    """A rigid body: mass, central inertia and named points.

    Parameters
    ----------
    name : str
        Prefix of the body's elements and states (``<name>.v``, ``<name>.r``, ...).
    mass : float
        kg, > 0.
    inertia : Inertia
        About the centre of mass, body coordinates. A bare array is refused: say what it
        is with ``Inertia.about_center(...)`` or ``Inertia.about_point(...)``.
    points : mapping of str to 3-vectors, optional
        Named points in body coordinates relative to the centre of mass (m).

    The body frame's origin is the centre of mass.
    """

    is_ground = False

    def __init__(self, name: str, mass: float, inertia: Inertia,
                 points: Mapping[str, Any] | None = None):
        check_name(name, "body", ".")
        self.name = name
        try:
            mass = float(mass)
        except (TypeError, ValueError):
            raise ModelError(f"body '{name}': mass must be a number (kg), got {mass!r}") from None
        if not np.isfinite(mass) or mass <= 0 or mass > MAX_MAGNITUDE:
            raise ModelError(f"body '{name}': mass must be positive and finite, at most "
                             f"{MAX_MAGNITUDE:.0e} (kg), got {mass}")
        if not isinstance(inertia, Inertia):
            raise ModelError(f"body '{name}': inertia must be an Inertia (e.g. "
                             f"Inertia.about_center(J) or Inertia.principal(Ixx, Iyy, Izz)), "
                             f"got {type(inertia).__name__}; a bare matrix is ambiguous about "
                             f"its reference point")
        self.mass = mass
        self.inertia = inertia
        self.points: dict[str, np.ndarray] = {}
        for pname, p in (points or {}).items():
            self.add_point(pname, p)

    def add_point(self, name: str, position) -> np.ndarray:
        """Name a point (body coordinates from the centre of mass, m)."""
        p = np.asarray(position, dtype=float)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ModelError(f"body '{self.name}': point '{name}' must be 3 finite numbers, "
                             f"got {position!r}")
        self.points[name] = p
        return p

    def point(self, p) -> np.ndarray:
        """A point given by name or by body coordinates (m)."""
        if isinstance(p, str):
            try:
                return self.points[p]
            except KeyError:
                raise ModelError(f"body '{self.name}' has no point '{p}'; its points: "
                                 f"{', '.join(self.points) or 'none'}") from None
        arr = np.asarray(p, dtype=float)
        if arr.shape != (3,) or not np.all(np.isfinite(arr)):
            raise ModelError(f"body '{self.name}': a point must be a name or 3 finite numbers, "
                             f"got {p!r}")
        return arr

    # names ---------------------------------------------------------------------------
    @property
    def v(self) -> str:
        """Translational 1-junction (centre-of-mass velocity, global, m/s)."""
        return f"{self.name}.v"

    @property
    def w(self) -> str:
        """Rotational 1-junction (angular velocity, body coordinates, rad/s)."""
        return f"{self.name}.w"

    @property
    def r(self) -> str:
        """Position state of the centre of mass (global, m)."""
        return f"{self.name}.r"

    @property
    def q(self) -> str:
        """Orientation state (unit quaternion w, x, y, z; body -> global)."""
        return f"{self.name}.q"

    @property
    def linear_momentum(self) -> str:
        """State name of the linear momentum m v_c (global, kg m/s)."""
        return f"p_{self.name}.linear"

    @property
    def angular_momentum(self) -> str:
        """State name of the angular momentum J^b omega^b (body coordinates, kg m^2/s)."""
        return f"p_{self.name}.angular"

    def build(self, bg: BondGraph, gravity: Any = None) -> None:
        """Add the body's elements and kinematic states to ``bg``, and its parameters
        (``<body>.mass`` and the central inertia's entries in body axes,
        ``<body>.Ixx`` ... ``<body>.Iyz``: :data:`INERTIA_ENTRIES`), whose symbols its
        elements use. ``gravity``: 3 numbers or the gravity parameters' symbols
        (m/s^2)."""
        n = self.name
        m = bg.add_parameter(f"{n}.mass", self.mass, "kg", f"mass of body {n}",
                             positive=True)
        J = self.inertia.matrix
        sym = {}
        for key, (i, j) in INERTIA_ENTRIES.items():
            sym[key] = bg.add_parameter(
                f"{n}.{key}", J[i, j], "kg m^2", f"central inertia of body {n}, entry "
                f"{key[1:]} in body axes (the whole must stay a valid inertia)")
        Jsym = np.empty((3, 3), dtype=object)
        for key, (i, j) in INERTIA_ENTRIES.items():
            Jsym[i, j] = Jsym[j, i] = sym[key]
        bg.add(OneJunction(self.v, dim=3), I(f"{n}.linear", m, dim=3),
               OneJunction(self.w, dim=3), I(f"{n}.angular", Jsym, dim=3),
               EJS(f"{n}.ejs", momentum=f"{n}.angular"))
        bg.connect(self.v, f"{n}.linear", name=f"{n}.b_linear")
        bg.connect(self.w, f"{n}.angular", name=f"{n}.b_angular")
        bg.connect(self.w, f"{n}.ejs", name=f"{n}.b_ejs")
        # the weight m g (zero without gravity: it keeps a lone body's junction valid)
        g = [0.0, 0.0, 0.0] if gravity is None else list(gravity)
        bg.add(Se(f"{n}.gravity", np.array([m * gk for gk in g], dtype=object), dim=3))
        bg.connect(f"{n}.gravity", self.v, name=f"{n}.b_gravity")
        bg.add_kinematic_state(KinematicState(self.r, self.v, 3))
        compiled = _compiled()
        if compiled is not None:
            _COMPILED[0] = compiled
        bg.add_kinematic_state(KinematicState(
            self.q, self.w, 4, rate=quat_rate if compiled is None else _quat_rate,
            vectorized=True))

    def __repr__(self) -> str:
        return f"RigidBody({self.name!r}, mass={self.mass})"


class Ground(RigidBody):
    """The fixed body: at the origin, aligned with the global frame, no states.

    Joints to the ground add no bonds on the ground's side (its velocities are zero).
    """

    is_ground = True

    def __init__(self, name: str = "ground", points: Mapping[str, Any] | None = None):
        self.name = name
        self.mass = np.inf
        self.inertia = None
        self.points = {}
        for pname, p in (points or {}).items():
            self.add_point(pname, p)

    def build(self, bg: BondGraph, gravity=None) -> None:
        return None

    def __repr__(self) -> str:
        return f"Ground({self.name!r})"


@register_element
class PointVelocityMTF(MTF):
    """MTF from a body's rotational junction (omega^b) to the rotational part of a point's
    velocity (global): modulus ``sign * (-A r~)`` (3x3), A = A(q) the body's rotation.

    Its rate is ``sign * (-A omega^b~ r~)`` (method.md section 5). ``sign`` (+1 or -1) lets
    a joint take the point's velocity with either sign into a constraint junction.
    """

    kind = "PointMTF"

    def __init__(self, name: str, quaternion: str | None = None, point=None, sign: float = 1.0):
        self.quaternion = quaternion
        self.point_b = np.asarray(point if point is not None else np.zeros(3), dtype=float)
        self.sign = float(sign)
        rt = skew(self.point_b)
        k = -self.sign

        def value(q):
            return k * (quat_to_matrix(q) @ rt)

        def rate(q, qd):
            a = quat_to_matrix(q)
            return k * (a @ skew(body_rate_from_quat_rate(q, qd)) @ rt)

        super().__init__(name, value, modulus_rate=rate, depends_on=(quaternion,),
                         shape=(3, 3))

    def parameters(self) -> dict[str, Any]:
        return {"quaternion": self.quaternion, "point": self.point_b.tolist(),
                "sign": self.sign}
