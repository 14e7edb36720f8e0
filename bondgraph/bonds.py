"""Value objects of the graph: ports, bonds and causality.

- :class:`PortSpec`: a named port of an element, with its dimension.
- :class:`Bond`: a power bond (tail -> head is the power direction), with its dimension.
- :class:`Causality`: which end of a bond receives the effort (the causal stroke's end).
- :func:`component_names`: the scalar names of vector items (``p_m[0]``, ``p_m[1]``, ...),
  the one rule every table, CSV column and linear model uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

__all__ = ["PortSpec", "Bond", "Causality", "component_names"]


def component_names(items: Iterable[tuple[str, int]]) -> list[str]:
    """The scalar names of ``(name, dim)`` items: ``name`` for a one-component item,
    ``name[k]`` (k = 0 .. dim - 1) for each component of a vector.

    >>> component_names([("p_m", 3), ("q_c", 1)])
    ['p_m[0]', 'p_m[1]', 'p_m[2]', 'q_c']
    """
    return [n if d == 1 else f"{n}[{k}]" for n, d in items for k in range(d)]


@dataclass(frozen=True)
class PortSpec:
    """A port of an element.

    Attributes
    ----------
    name : str
        Port name, unique within its element (``"p"`` for one-ports, ``"in"``/``"out"``
        for two-ports; junction ports are the bonds themselves).
    dim : int
        Number of scalar components of the effort and of the flow (1 scalar, 3 spatial).
    """

    name: str
    dim: int


class Causality(Enum):
    """The causal stroke of a bond: which end receives the effort.

    ``EFFORT_TO_HEAD``: the tail element imposes the effort on the head element (the
    stroke is drawn at the head); the head element imposes the flow on the tail.
    ``EFFORT_TO_TAIL``: the reverse.
    """

    EFFORT_TO_HEAD = "effort_to_head"
    EFFORT_TO_TAIL = "effort_to_tail"

    def effort_receiver(self, bond: "Bond") -> str:
        """Name of the element that receives the effort on ``bond``."""
        return bond.head if self is Causality.EFFORT_TO_HEAD else bond.tail

    def effort_setter(self, bond: "Bond") -> str:
        """Name of the element that imposes the effort on ``bond``."""
        return bond.tail if self is Causality.EFFORT_TO_HEAD else bond.head


@dataclass(frozen=True)
class Bond:
    """A power bond from ``tail`` to ``head`` (positive power flows tail -> head).

    Attributes
    ----------
    name : str
        Unique bond name (``"b1"``, ``"b2"``, ... unless given).
    tail, head : str
        Element names at the two ends.
    tail_port, head_port : str
        Port names at the two ends (junction ports are named after the bond).
    dim : int
        Dimension of the effort and flow vectors.
    """

    name: str
    tail: str
    head: str
    tail_port: str
    head_port: str
    dim: int

    def other(self, element: str) -> str:
        """The element at the other end of the bond from ``element``."""
        return self.head if element == self.tail else self.tail

    def sign_at(self, element: str) -> int:
        """+1 if the bond points into ``element``, -1 if it points out of it."""
        return 1 if element == self.head else -1

    def __str__(self) -> str:
        return f"bond {self.name} ({self.tail}.{self.tail_port} -> {self.head}.{self.head_port})"
