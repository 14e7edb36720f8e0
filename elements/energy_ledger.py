"""The energy ledger of a mechanism run (:class:`EnergyLedger`) and the scale its drift
is measured against (:func:`energy_scale`, also the ``bondgraph check`` report's).

A drift is relative to the largest energy seen, or to :data:`ENERGY_FLOOR` when every
energy stays below it: a model at rest has no energy to compare with, and its round-off
would otherwise read as a drift of order 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["EnergyLedger", "energy_scale", "ENERGY_FLOOR"]


ENERGY_FLOOR = 1e-9
"""J: the smallest scale an energy drift is measured against (a model at rest has no
energy to compare with)."""


def energy_scale(*energies: np.ndarray) -> tuple[float, str]:
    """(J, what it is): the largest magnitude among ``energies`` (arrays over time, J),
    or :data:`ENERGY_FLOOR` when that is smaller; what it is says which, for the
    reports ("the largest energy", "the floor 1e-09 J")."""
    largest = max((float(np.abs(e).max(initial=0.0)) for e in energies), default=0.0)
    if largest >= ENERGY_FLOOR or not np.isfinite(largest):
        return largest, "the largest energy"
    return ENERGY_FLOOR, f"the floor {ENERGY_FLOOR:g} J (the energies stay below it)"


@dataclass(frozen=True)
class EnergyLedger:
    """Energies (J) over time: kinetic, gravity and spring potential, the work done by each
    source (actuators, loads) and the energy each damper dissipated, and the energy stored
    in the I elements of attached subsystems (``other``).

    ``balance`` = kinetic + gravity + springs - sum(work) + sum(dissipated): constant when
    the simulation is right.
    """

    kinetic: np.ndarray
    gravity: np.ndarray
    springs: np.ndarray
    work: dict[str, np.ndarray]
    dissipated: dict[str, np.ndarray]
    other: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def total(self) -> np.ndarray:
        """Kinetic + gravity + springs + the energy stored in attached subsystems' I
        elements (``other``, e.g. a motor's inductance), J."""
        t = self.kinetic + self.gravity + self.springs
        for v in self.other.values():
            t = t + v
        return t

    @property
    def balance(self) -> np.ndarray:
        w = sum(self.work.values()) if self.work else 0.0
        d = sum(self.dissipated.values()) if self.dissipated else 0.0
        return self.total - w + d

    @property
    def drift(self) -> float:
        """max |balance - balance[0]| (J)."""
        b = self.balance
        return float(np.abs(b - b[0]).max())

    @property
    def drift_scale(self) -> tuple[float, str]:
        """(J, what it is) that :attr:`relative_drift` divides by: the largest energy
        seen (kinetic, gravity, springs, subsystems' I elements), or
        :data:`ENERGY_FLOOR` when that is smaller (a model at rest: its drift is then
        not read relative to round-off)."""
        return energy_scale(self.kinetic, self.gravity, self.springs, *self.other.values())

    @property
    def relative_drift(self) -> float:
        """:attr:`drift` / :attr:`drift_scale` (1)."""
        return self.drift / self.drift_scale[0]
