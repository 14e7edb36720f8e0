"""The mode changes of a run with stops or friction, as data.

- :class:`SwitchKind`: what a change is (stick, slide, impact, rest, leave, contact,
  separate).
- :class:`Hold`: how a held port is held (sticking, resting on its lower or upper stop).
- :class:`Switch`: one mode change (time, port, kind, side, direction, the energy an
  impact took, the rates around it).

:mod:`elements.running.hybrid` makes them; results read them
(:attr:`MechanismResult.switches <elements.MechanismResult>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

__all__ = ["SwitchKind", "Hold", "Switch"]


class SwitchKind(Enum):
    """What a mode change of a switched port is."""

    STICK = "stick"
    SLIDE = "slide"
    IMPACT = "impact"
    REST = "rest"
    LEAVE = "leave"
    CONTACT = "contact"
    SEPARATE = "separate"


class Hold(Enum):
    """How a port is held still (its lock an Sf of zero flow): sticking by friction, or
    resting on its lower or upper stop."""

    STICK = "stick"
    LOWER = "lower"
    UPPER = "upper"


@dataclass(frozen=True)
class Switch:
    """A mode change of a run with stops or friction.

    Attributes
    ----------
    t : float
        Time (s).
    port : str
        The joint coordinate's port (the joint's name, or ``<joint>.<coordinate>``).
    kind : SwitchKind
        What happened: it sticks, slides, takes an impact on a stop, rests on it (an
        impact that leaves the joint on the stop), leaves it, or a compliant stop's
        contact begins or ends.
    side : str or None
        ``"lower"`` or ``"upper"``: the stop of an impact, rest, leave, contact or
        separation.
    direction : int
        +1 or -1: the direction of sliding (0 for other switches).
    loss : float
        Kinetic energy an impact took (J; 0 otherwise).
    rate_before, rate_after : float
        An impact's coordinate rate just before and just after it (rad/s or m/s; NaN
        for other switches).
    """

    t: float
    port: str
    kind: "SwitchKind"
    side: str | None = None
    direction: int = 0
    loss: float = 0.0
    rate_before: float = float("nan")
    rate_after: float = float("nan")

    @property
    def what(self) -> str:
        """The switch in words: ``"stick"``, ``"slide +"`` / ``"slide -"``, ``"impact
        lower"``, ``"rest upper"``, ``"leave lower"``, ``"contact upper"``, ``"separate
        lower"``..."""
        if self.kind is SwitchKind.SLIDE:
            return f"slide {'+' if self.direction > 0 else '-'}"
        return self.kind.value if self.side is None else f"{self.kind.value} {self.side}"

    def after(self, t: np.ndarray) -> np.ndarray:
        """Which output times ``t`` (s, sorted) hold the state after this switch: those
        after it, and the first when the switch is there (a run's initial switches, e.g.
        a joint that starts on a stop; at a later switch's time the output holds the
        state before it)."""
        t = np.asarray(t, dtype=float)
        return (t > self.t) | ((t == t[0]) & (self.t == t[0])) if t.size else t > self.t
