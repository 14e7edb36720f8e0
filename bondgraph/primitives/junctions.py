"""Junctions (0, 1), the position constraints that 0-junctions of joints carry, and
the non-energy states: kinematic states (positions, orientations) and work states."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bonds import PortSpec
from ..element import Category, Element, register_element
from ..errors import ModelError
from ._common import _check_dim
from .two_ports import ModulusContext


@dataclass(frozen=True)
class PositionConstraint:
    """The position-level constraint Phi(x) of a constraint 0-junction (for drift
    measurement and Baumgarte stabilisation), defined so that dPhi/dt equals the
    junction's constraint flow (the Se* flow) on Phi = 0.

    ``value(*deps) -> ndarray (dim,)`` with ``deps`` the states named in ``depends_on``;
    with a ``context`` (:class:`ModulusContext`), ``value`` receives the context's value
    instead (shared with the moduli that use it) and ``depends_on`` is the context's.

    ``affine``, optional: ``(coefficients, constant)`` declaring that ``value`` is
    Phi = sum_k coefficients[k] x_k + constant for the scalar states x_k of
    ``depends_on`` and a one-component Phi (a coupling between two joint coordinates).
    It is what a compiled evaluation without Python computes Phi from
    (:mod:`bondgraph.fmu`); ``value`` stays the definition (it must agree).
    """

    value: Callable[..., np.ndarray]
    depends_on: tuple[str, ...] = ()
    context: ModulusContext | None = None
    affine: tuple[tuple[float, ...], float] | None = None

    def value_at(self, *deps: Any) -> np.ndarray:
        """Phi at the values of the states in ``depends_on``."""
        if self.context is not None:
            return self.value(self.context.value_at(*deps))
        return self.value(*deps)


class JunctionBase(Element):
    """Base of 0- and 1-junctions: any number of bonds of one dimension ``dim``."""

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    def ports(self) -> tuple[PortSpec, ...]:
        return ()

    @property
    def dim(self) -> int:
        return self._dim

    def parameters(self) -> dict[str, Any]:
        return {"dim": self._dim}

    def label(self, values: Mapping[str, float] | None = None) -> str:
        return self.kind


@register_element
class ZeroJunction(JunctionBase):
    """0-junction: common effort, signed flows sum to zero.

    Parameters
    ----------
    constraint : bool
        Flags a kinematic-constraint junction: the causality assignment prefers it when it
        inserts an unknown effort source Se* (whose effort is the constraint force).
    constraint_label : str, optional
        Name used for the inserted source: ``Se*_<label>`` (default: the junction's name).
    position_constraint : PositionConstraint, optional
        Phi for drift measurement and Baumgarte stabilisation.
    """

    kind = "0"
    category = Category.ZERO

    def __init__(self, name: str, *, dim: int = 1, constraint: bool = False,
                 constraint_label: str | None = None,
                 position_constraint: PositionConstraint | None = None):
        super().__init__(name, dim=dim)
        if not isinstance(constraint, (bool, np.bool_)):
            raise ModelError(f"0-junction '{name}': constraint must be True or False, got "
                             f"{constraint!r}")
        if constraint_label is not None and not isinstance(constraint_label, str):
            raise ModelError(f"0-junction '{name}': constraint_label must be a name, got "
                             f"{constraint_label!r}")
        if position_constraint is not None and \
                not isinstance(position_constraint, PositionConstraint):
            raise ModelError(f"0-junction '{name}': position_constraint must be a "
                             f"PositionConstraint(value, depends_on), got "
                             f"{type(position_constraint).__name__} {position_constraint!r}")
        self.constraint = bool(constraint)
        self.constraint_label = constraint_label
        self.position_constraint = position_constraint

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {"dim": self._dim}
        if self.constraint:
            p["constraint"] = True
        if self.constraint_label:
            p["constraint_label"] = self.constraint_label
        if self.position_constraint is not None:
            p["position_constraint"] = self.position_constraint
        return p

    def state_dependencies(self) -> tuple[str, ...]:
        pc = self.position_constraint
        return tuple(pc.depends_on) if pc is not None else ()


@register_element
class OneJunction(JunctionBase):
    """1-junction: common flow, signed efforts sum to zero."""

    kind = "1"
    category = Category.ONE


@dataclass(frozen=True)
class KinematicState:
    """A non-energy state that integrates flows: d(state)/dt = rate(state, *flows, *reads).

    Parameters
    ----------
    name : str
        State name (e.g. ``"m2.r"``), unique among all states.
    source : str or tuple of str
        Where the flow(s) come from: a 1-junction (its common flow), a one-port element
        (its bond's flow) or a bond name; several for a rate that combines flows.
    dim : int
        Dimension of the state.
    rate : callable, optional
        ``rate(state, *flows, *read_states) -> ndarray (dim,)``; default: the (single)
        flow itself (dims equal). Orientation quaternions use ``0.5 q (x) (0, omega)``.
    reads : tuple of str
        Other kinematic states whose values ``rate`` also needs (e.g. orientations).
    vectorized : bool
        ``rate`` also accepts stacks: arguments of shape (n, dim) for n states, returning
        (n, dim). The states that share a vectorised rate function (and their dimensions)
        are then computed in one call per evaluation.
    """

    name: str
    source: str | tuple[str, ...]
    dim: int
    rate: Callable[..., np.ndarray] | None = None
    reads: tuple[str, ...] = ()
    vectorized: bool = False

    def __post_init__(self):
        _check_dim(self.name, self.dim)

    @property
    def sources(self) -> tuple[str, ...]:
        """The flow sources as a tuple."""
        return (self.source,) if isinstance(self.source, str) else tuple(self.source)


@dataclass(frozen=True)
class WorkState:
    """A state that integrates the power on a bond: d(state)/dt = e . f (J).

    Parameters
    ----------
    name : str
        State name (e.g. ``"work.M"``), unique among all states.
    source : str
        A one-port element (its bond) or a bond name. The power is counted in the bond's
        direction: for a source's bond (pointing out of the source) it is the work the
        source does on the system; for an R's bond, the energy it dissipates.
    """

    name: str
    source: str


# ---------------------------------------------------------------------------------------
