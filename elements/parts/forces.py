"""Loads on bodies: forces at points and moments, in the global or the body frame.

- :class:`PointForce`: a force (N) at a body point.
- :class:`BodyMoment`: a moment (N m) on a body.

Gravity is a mechanism setting (:class:`~elements.Mechanism` ``gravity``): an effort
source m g on each body's translational junction. Joint springs, dampers and actuators
are attached to joints (:mod:`elements.joints`).

Each load is a block (:mod:`elements.kernels.blocks`) whose port is an effort source
``<load>.source``: its flow is the point's velocity (or the body's angular velocity) in
the load's frame, so its power is the load's power on the body.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import sympy

from bondgraph import ModelError, StateFunction, TimeFunction
from bondgraph.element import check_name
from bondgraph.spatial import skew

from elements.kernels.blocks import Block, Junction, Term
from elements.kernels.geometry import Sandwich
from elements.parts.rigid_body import RigidBody

__all__ = ["PointForce", "BodyMoment", "Load"]


def _check_vector(name: str, value: Any) -> Any:
    if isinstance(value, TimeFunction) and value.compiled is not None and \
            np.shape(value.value(0.0)) != (3,):
        # (a known form of one value: its Python function would give one number for
        # all three components, where a model file refuses it)
        raise ModelError(f"load '{name}': its TimeFunction ({value.compiled.kind}) gives "
                         f"one value; valid: 3 (a list of 3 expressions of t, or arrays of "
                         f"3 for the amplitude, slope, step values and offset)")
    if isinstance(value, (TimeFunction, StateFunction)):
        return value
    items = list(np.ravel(value)) if isinstance(value, (list, tuple, np.ndarray,
                                                        sympy.MatrixBase)) else []
    if len(items) == 3 and any(isinstance(v, sympy.Basic) and v.free_symbols
                               for v in items):    # expressions of t
        return TimeFunction.expression(items, where=f"load '{name}': its value")
    try:
        arr = np.asarray(value, dtype=float) if not isinstance(value, str) else None
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ModelError(f"load '{name}': its value must be 3 finite numbers, 3 expressions "
                         f"of t, a TimeFunction or a StateFunction, got {value!r}")
    return arr


class Load:
    """Base of loads: a block on one body and the effort source at its port."""

    def __init__(self, name: str, body: RigidBody, value: Any,
                 frame: Literal["global", "body"]):
        check_name(name, "load", ".")
        if not isinstance(body, RigidBody) or body.is_ground:
            raise ModelError(f"load '{name}': body must be a moving RigidBody, got {body!r}")
        if frame not in ("global", "body"):
            raise ModelError(f"load '{name}': frame must be 'global' or 'body', got {frame!r}")
        self.name, self.body, self.frame = name, body, frame
        self.value = _check_vector(name, value)

    unit = ""
    """The unit of the load's components."""

    @property
    def source(self) -> str:
        """Name of the load's effort source element."""
        return f"{self.name}.source"

    def block(self) -> Block:
        raise NotImplementedError


class PointForce(Load):
    """A force (N) at a point of a body, in global or body coordinates.

    The effort source's flow is the point's velocity in the same coordinates, so its
    power is the force's power.
    """

    unit = "N"

    def __init__(self, name: str, body: RigidBody, point: Any, force: Any,
                 frame: Literal["global", "body"] = "global"):
        super().__init__(name, body, force, frame)
        self.point = body.point(point)

    def block(self) -> Block:
        b, r = self.body.name, self.point
        E = np.eye(3)
        if self.frame == "global":       # v + A (w x r): G_w = -A r~
            terms = [Term(b, Junction.V, constant=E)]
            if np.any(r):
                terms.append(Term(b, Junction.W, Sandwich(E, None, b, -skew(r))))
        else:                            # A^T v + w x r: G_v = A^T, G_w = -r~
            terms = [Term(b, Junction.V, Sandwich(E, b, None, E))]
            if np.any(r):
                terms.append(Term(b, Junction.W, constant=-skew(r)))
        return Block(f"{self.name}", 3, terms, (self.body,))


class BodyMoment(Load):
    """A moment (N m) on a body, in global or body coordinates."""

    unit = "N m"

    def __init__(self, name: str, body: RigidBody, moment: Any,
                 frame: Literal["global", "body"] = "global"):
        super().__init__(name, body, moment, frame)

    def block(self) -> Block:
        b = self.body.name
        E = np.eye(3)
        if self.frame == "global":       # A w
            terms = [Term(b, Junction.W, Sandwich(E, None, b, E))]
        else:
            terms = [Term(b, Junction.W, constant=E)]
        return Block(f"{self.name}", 3, terms, (self.body,))
