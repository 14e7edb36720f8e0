"""Events of a run: zero crossings of user functions g(t, x), located on the steps.

- :class:`EventTracker`: watches every event function over the accepted steps, locates
  each sign change with Brent's method on the step's interpolant, records the crossing
  times, and says when a terminal event ends the run or crossings come too often (an
  event storm).

An event is a callable ``g(t, x) -> float``; optional attributes, as in scipy:
``terminal`` (True: the first crossing ends the run) and ``direction`` (> 0 only
rising crossings count, < 0 only falling ones), and ours:

- ``tolerance`` (> 0, with a ``direction``): how far past its zero, on the side its
  direction crosses to, the function may be at a step's end without a crossing having
  been seen. A crossing is seen as a sign change between the ends of a step; a function
  that starts a step at (or, by rounding, just past) its zero and ends it beyond misses
  it (a quick return within the step: a small bounce off a stop). Such a step is
  searched: the function is sampled on the step's interpolant, and the first crossing
  after a dip is located; without a dip, the crossing is put at the step's start (the
  function was past its zero all along). The step is then not accepted beyond the
  crossing, if the event is terminal.
- ``scan_steps`` (True): the compiled loop (:mod:`bondgraph._fastrk`) may take the run:
  the event is then evaluated at the ends of the steps of each of the loop's calls
  (:meth:`EventTracker.scan`), in order and once each, as on the scipy path.
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
        self._pending: tuple[float, list[float]] | None = None

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
        pending, self._pending = self._pending, None
        for j, e in enumerate(self.events):
            # (the values scan() took at this step's end: each is evaluated once there)
            g_new = pending[1][j] if pending is not None and pending[0] == t_new else \
                float(e(t_new, y_new))
            g_old = self._values[j]
            direction = getattr(e, "direction", 0)
            te = None
            found = _found(e, g_old, g_new)
            if found == "crossed":
                te = brentq(lambda tt: e(tt, interpolate(tt)), t_prev, t_new, xtol=1e-14)
            elif found == "hidden":
                te = _hidden_crossing(e, np.sign(direction), t_prev, t_new, interpolate)
            if te is not None:
                self.t_events[j].append(te)
                self.n_crossings += 1
                if getattr(e, "terminal", False):
                    terminate_at = te if terminate_at is None else min(terminate_at, te)
            self._values[j] = g_new
        return terminate_at

    def scan(self, ts: np.ndarray, ys: np.ndarray) -> int | None:
        """The first of consecutive accepted steps (their end times ``ts`` and states
        ``ys``) at whose end :meth:`step` would find a crossing, or None. Every event is
        evaluated once at each end up to it; :meth:`step` of that step (else of the
        last one) takes the values found there, and the steps before it are done."""
        g_old = list(self._values)
        last = len(ts) - 1
        for i in range(len(ts)):
            g = [float(e(float(ts[i]), ys[i])) for e in self.events]
            hit = any(_found(e, a, b) for e, a, b in zip(self.events, g_old, g))
            if hit or i == last:
                self._values, self._pending = g_old, (float(ts[i]), g)
                return i if hit else None
            g_old = g
        return None


def _found(e: Callable, g_old: float, g_new: float) -> str | None:
    """What :meth:`EventTracker.step` finds of event ``e`` in a step whose ends have
    the values g_old, g_new: ``"crossed"`` (a sign change in its direction),
    ``"hidden"`` (a crossing to search for: see ``tolerance``), or None."""
    direction = getattr(e, "direction", 0)
    crossed = (g_old < 0 <= g_new or g_old > 0 >= g_new) and g_old != g_new
    if crossed and (direction == 0 or np.sign(g_new - g_old) == np.sign(direction)):
        return "crossed"
    if direction and getattr(e, "tolerance", None) is not None and \
            np.sign(direction) * g_new > e.tolerance:
        return "hidden"
    return None


SAMPLES = 32
"""Points of a step's interpolant sampled in the search for a hidden crossing."""


def _hidden_crossing(e: Callable, d: float, t_prev: float, t_new: float,
                     interpolate: Callable[[float], np.ndarray]) -> float:
    """The first crossing of ``e`` (towards ``d`` times its value) in a step that ended
    past it without a sign change between its ends: after the first sampled point on
    the near side of the zero; the step's start if there is none."""
    ts = np.linspace(t_prev, t_new, SAMPLES + 1)
    near = [d * float(e(t, interpolate(t))) < 0 for t in ts[1:-1]]
    if not any(near):
        return t_prev
    k = near.index(True) + 1
    while k + 1 < ts.size - 1 and near[k]:          # (near[k] is ts[k + 1]'s)
        k += 1
    return brentq(lambda tt: e(tt, interpolate(tt)), ts[k], ts[k + 1], xtol=1e-14)
