"""The free joint (6 DOF, type ``"free"``): :class:`FreeJoint`, and the free body's start
(:func:`center_state`: a body's centre of mass, its rotation and twist, as
``free={body: {...}}`` gives them).

From the ground without ports (``ports=False``) a free joint builds nothing: it is the
free body, the joint of every body that is nobody's child
(:meth:`~elements.Mechanism.free_joints`). It is registered with the other kinds by
:mod:`elements.joints.kinds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import MAX_MAGNITUDE
from bondgraph.spatial import as_rotation

from elements.kernels.blocks import Block
from elements.joints.blocks import slide_port
from elements.joints.contract import AxisMotion, Joint
from elements.parts.rigid_body import RigidBody

__all__ = ["FreeJoint", "CENTER_KEYS", "center_state"]


CENTER_KEYS = ("rotation", "position", "angular_velocity", "velocity")
"""The keys of a free body's start (``free={body: {...}}``)."""


def center_state(name: str, spec: Mapping[str, Any] | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Free body ``name``'s (rotation body -> global, position m, angular velocity
    rad/s, velocity m/s) of its centre of mass (global) from the user's mapping
    (identity and zeros where not given), checked; a ModelError naming the body and
    the key otherwise."""
    if spec is not None and not isinstance(spec, Mapping):
        raise ModelError(f"free body '{name}': its start must be a mapping with keys "
                         f"{', '.join(sorted(CENTER_KEYS))}; got {spec!r}")
    spec = dict(spec or {})
    bad = set(spec) - set(CENTER_KEYS)
    if bad:
        raise ModelError(f"free body '{name}': unknown key(s) {', '.join(sorted(bad))}; valid: "
                         f"{', '.join(sorted(CENTER_KEYS))}")
    try:
        A = as_rotation(spec.get("rotation", np.eye(3)))
    except ValueError as exc:
        raise ModelError(f"free body '{name}': rotation {exc}") from None
    vecs = []
    for key in ("position", "angular_velocity", "velocity"):
        try:
            vecs.append(_vector3(spec.get(key, np.zeros(3)), key))
        except ValueError as exc:
            raise ModelError(f"free body '{name}': {exc}") from None
    return A, vecs[0], vecs[1], vecs[2]


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


class FreeJoint(Joint):
    """Free joint (6 DOF): no constraint; the child moves freely relative to the parent.
    From the ground it is the free body (a body that is nobody's child): without ports
    the same joint, with them the same motion and three coordinate ports more; from a
    moving body it measures the child relative to it.

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
    parent axes). A free joint has no axis (its coordinates are along the parent's axes).

    ``ports=False`` leaves out the three ports (and their coordinate states): from the
    ground, the joint then builds nothing at all, and it *is* the free body: a body that
    is nobody's child stands on such a joint, implicit, named after the body
    (:meth:`Mechanism.free_joints`). Its initial values are then given by its child's
    centre of mass (``free={body: {...}}``, :meth:`center_values`) or as ``q``/``qd``
    above (not both), and the child's accelerations are reported as a free body's
    (``"<body>.a"``, ``"<body>.alpha"``); :class:`~elements.FastDynamics` runs it as a
    floating base.
    """

    type_name = "free"
    coordinates = (("x", "m"), ("y", "m"), ("z", "m"))
    needs_axis = False
    options = {"ports": "boolean"}
    free_rotation = True

    def axis_motions(self):         # (then its free rotation about the moved joint point)
        return tuple(AxisMotion.translation(e) for e in np.eye(3))

    def __init__(self, name: str, parent: RigidBody, child: RigidBody, *,
                 ports: bool = True, **kwargs: Any):
        if kwargs.get("axis") is not None:
            raise ModelError(f"free joint '{name}' has no axis: its coordinates x, y, z are "
                             f"along the parent's axes and its rotation is free; drop axis")
        if not ports:
            if not parent.is_ground:
                raise ModelError(f"free joint '{name}': ports=False is the free body, from "
                                 f"the ground only (its parent is '{parent.name}'); give "
                                 f"ports=True to measure '{child.name}' relative to it")
            given = [k for k in ("spring", "damper", "actuator", "rotor")
                     if kwargs.get(k) is not None]
            if given:
                raise ModelError(f"free joint '{name}' has no ports (ports=False): its "
                                 f"{', '.join(given)} would have no coordinate to act on; "
                                 f"give ports=True or drop {', '.join(given)}")
            self.coordinates = ()         # (this joint's: no port, no coordinate state)
            self.n_free = 0
        super().__init__(name, parent, child, **kwargs)
        self.ports = bool(ports)
        """Whether x, y, z have ports (False: the free body, nothing built from the
        ground)."""

    @property
    def is_free_body(self) -> bool:
        """Whether this is the free body's joint: from the ground, without ports (what
        :meth:`Mechanism.free_joints` lists)."""
        return self.parent.is_ground and not self.ports

    def center_values(self, spec: Mapping[str, Any] | None
                      ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """(q, qd) in :meth:`child_pose`'s form from the child's centre of mass given as
        a free body's start (``rotation`` body -> global, ``position`` m, ``velocity``
        m/s, ``angular_velocity`` rad/s, all global; identity and zeros where not
        given; :func:`center_state`), for a joint from the ground; a ModelError naming
        the body or the joint otherwise."""
        if not self.parent.is_ground:
            raise ModelError(f"free joint '{self.name}' is not from the ground (its parent "
                             f"is '{self.parent.name}'): give its q and qd")
        A, r, w, v = center_state(self.child.name, spec)
        Rrel, d = self._relative(np.eye(3), np.zeros(3), A, r)
        return (d, Rrel), (v + np.cross(w, A @ self.Q), w)

    def initial_values(self, q: Any = None, qd: Any = None) -> tuple[Any, Any]:
        """(translation (3,), rotation (3, 3)) or None, and (translation rates (3,),
        relative angular velocity (3,)) or None, checked (see the class docstring);
        raises a ModelError naming the joint otherwise."""
        return (None if q is None else self._pair(q, "rotation", "initial coordinate"),
                None if qd is None else self._pair(qd, "angular_velocity", "initial rate"))

    def _pair(self, v: Any, key: str, what: str) -> tuple[np.ndarray, np.ndarray]:
        key_q = what == "initial coordinate"
        names = tuple(c for c, _ in type(self).coordinates)    # (x, y, z: ports or not)
        units = [ax.units()["q" if key_q else "qd"] for ax in self.axes]

        def translation(value):
            if self.axes:
                return self.values(value, what, units)
            if isinstance(value, Mapping):        # (keys checked below)
                value = [value.get(c, 0.0) for c in names]
            try:
                return _vector3(value, f"its {what} (x, y, z: m{'' if key_q else '/s'}, "
                                       f"parent axes)")
            except ValueError as exc:
                raise ModelError(f"free joint '{self.name}': {exc}") from None

        turn = None
        if isinstance(v, Mapping):
            bad = [k for k in v if k not in (*names, key)]
            if bad:
                raise ModelError(f"free joint '{self.name}': {what} names "
                                 f"{', '.join(map(repr, bad))}; valid: "
                                 f"{', '.join((*names, key))}")
            turn = v.get(key)
            lin = {k: x for k, x in v.items() if k != key}
            lin = translation(lin) if lin else np.zeros(3)
        elif (isinstance(v, (tuple, list)) or (isinstance(v, np.ndarray) and v.ndim)) \
                and len(v) == 2:
            lin = np.zeros(3) if v[0] is None else translation(v[0])
            turn = v[1]
        else:
            lin = translation(v)
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
