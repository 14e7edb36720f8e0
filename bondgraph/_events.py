"""Events of a run: zero crossings of user functions g(t, x), located on the steps.

- :class:`EventTracker`: watches every event function over the accepted steps, locates
  each sign change with Brent's method on the step's interpolant, records the crossing
  times, and says when a terminal event ends the run or crossings come too often (an
  event storm).

An event is a callable ``g(t, x) -> float``; optional attributes, as in scipy:
``terminal`` (True: the first crossing ends the run) and ``direction`` (> 0 only
rising crossings count, < 0 only falling ones).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import brentq

__all__ = ["EventTracker"]


class EventTracker:
    """The crossings of ``events`` from (t0, x0) on (see the module docstring)."""

    def __init__(self, events: Sequence[Callable], t0: float, x0: np.ndarray,
                 max_events: int):
        self.events = tuple(events)
        self.max_events = max_events
        self._values = [float(e(t0, x0)) for e in self.events]
        self.t_events: list[list[float]] = [[] for _ in self.events]
        self.n_crossings = 0

    @property
    def storm(self) -> bool:
        """More crossings than ``max_events`` so far."""
        return self.n_crossings > self.max_events

    def step(self, t_prev: float, t_new: float, y_new: np.ndarray,
             interpolate: Callable[[float], np.ndarray]) -> float | None:
        """Check the step from ``t_prev`` to ``t_new`` (state ``y_new`` there,
        ``interpolate(t)`` inside it): record the crossings, and return the time of the
        earliest terminal one (None: the run goes on)."""
        terminate_at = None
        for j, e in enumerate(self.events):
            g_new = float(e(t_new, y_new))
            g_old = self._values[j]
            direction = getattr(e, "direction", 0)
            crossed = (g_old < 0 <= g_new or g_old > 0 >= g_new) and g_old != g_new
            if crossed and (direction == 0 or np.sign(g_new - g_old) == np.sign(direction)):
                te = brentq(lambda tt: e(tt, interpolate(tt)), t_prev, t_new, xtol=1e-14)
                self.t_events[j].append(te)
                self.n_crossings += 1
                if getattr(e, "terminal", False):
                    terminate_at = te if terminate_at is None else min(terminate_at, te)
            self._values[j] = g_new
        return terminate_at
