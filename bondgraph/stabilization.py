"""Constraint stabilisation (method.md section 5, Drift).

- :class:`Baumgarte`: the gains of c' + 2 alpha c + beta^2 Phi = 0, which the dense and
  the sparse evaluations add to Eq. (15).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ModelError

__all__ = ["Baumgarte"]


@dataclass(frozen=True)
class Baumgarte:
    """Baumgarte stabilisation: c' + 2 alpha c + beta^2 Phi = 0 (alpha, beta in 1/s).

    Both gains non-negative and finite; 0 and 0 is no stabilisation (pass None to
    ``simulate`` instead)."""

    alpha: float = 10.0
    beta: float = 10.0

    def __post_init__(self):
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            try:
                ok = math.isfinite(float(v)) and float(v) >= 0.0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ModelError(f"Baumgarte: {name} must be a non-negative number (1/s), "
                                 f"got {v!r}")
