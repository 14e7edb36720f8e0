"""Progress of a run, shown on a stream (stderr by default) once the run has taken a
while.

- :class:`RunProgress`: a callable taking the simulated time, which
  :func:`~bondgraph.simulate` calls after its steps (``progress=True`` makes one). On a
  terminal it draws a one-line bar (at most 10 updates a second); on anything else (a
  log file, a pipe, a CI job) it writes a plain line every few seconds. Nothing is
  shown for a run shorter than :data:`SHOW_AFTER`.

Written here rather than taken from tqdm: what a run needs is these sixty lines (a bar
on a terminal, lines in a log, silence for short runs, the simulated time against the
span), and tqdm writes carriage returns into a log file where a plain line is wanted.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

__all__ = ["RunProgress", "SHOW_AFTER", "LOG_EVERY"]

SHOW_AFTER = 2.0
"""Wall-clock seconds after which progress is shown (a shorter run shows nothing)."""

LOG_EVERY = 5.0
"""Wall-clock seconds between two lines when the stream is not a terminal."""


class RunProgress:
    """Progress of a run from ``t_start`` to ``t_end`` (s, simulated) on ``stream``
    (stderr by default; see the module docstring). Call it with the simulated time;
    :meth:`close` ends the bar's line (a run that showed nothing writes nothing).

    Parameters
    ----------
    t_start, t_end : float
        The span (s).
    stream : text stream, optional
    interactive : bool, optional
        Draw a bar (True) or write lines (False); default: whether ``stream`` is a
        terminal.
    label : str
        Put before every line ("" for none).
    """

    def __init__(self, t_start: float, t_end: float, stream: TextIO | None = None, *,
                 interactive: bool | None = None, label: str = ""):
        self.t0, self.t1 = float(t_start), float(t_end)
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            try:
                interactive = bool(self.stream.isatty())
            except (AttributeError, ValueError, OSError):
                interactive = False
        self.interactive = interactive
        self.label = f"{label}: " if label else ""
        self.started = time.monotonic()
        self.shown = False
        self._last = -math.inf

    def fraction(self, t: float) -> float:
        """How much of the span is done at simulated time ``t`` (0 to 1)."""
        span = self.t1 - self.t0
        return min(max((t - self.t0) / span, 0.0), 1.0) if span > 0 else 1.0

    def __call__(self, t: float) -> None:
        now = time.monotonic()
        elapsed = now - self.started
        if elapsed < SHOW_AFTER or now - self._last < (0.1 if self.interactive
                                                        else LOG_EVERY):
            return
        self._last = now
        frac = self.fraction(t)
        rest = elapsed * (1 - frac) / frac if 0 < frac < 1 else 0.0
        left = (f", about {rest:.0f} s left" if rest < 1e7 else
                f", about {rest:.2g} s left") if 0 < frac < 1 else ""
        try:
            if self.interactive:
                n = int(frac * 40)
                self.stream.write(f"\r  {self.label}[{'#' * n}{'.' * (40 - n)}] "
                                  f"{100 * frac:5.1f}%  t = {t:.4g} s{left}   ")
            else:
                self.stream.write(f"{self.label}progress: t = {t:.6g} s of {self.t1:g} s "
                                  f"({100 * frac:.1f} %), {elapsed:.0f} s elapsed{left}\n")
            self.stream.flush()
        except (OSError, ValueError):     # a closed stream: progress is not the run's work
            return
        self.shown = True

    def close(self) -> None:
        """End the bar's line (only when something was drawn)."""
        if self.shown and self.interactive:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass
