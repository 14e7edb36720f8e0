"""Why a run stopped: a nearly singular constraint matrix where the solver gave up.

- :func:`singularity`: a description of a nearly singular H_4 at a state (naming the
  unknown sources involved), or "" when it is not.
- :data:`SINGULAR_CONDITION`: the scaled condition number above which it is.
"""

from __future__ import annotations

import numpy as np

from .errors import caused_by_interrupt

__all__ = ["singularity", "SINGULAR_CONDITION"]

SINGULAR_CONDITION = 1e8
"""Scaled condition number of H_4 above which a failed run is reported as singular."""


def singularity(model, t: float, x: np.ndarray, stabilization) -> str:
    """A description of a nearly singular constraint matrix of ``model`` at (t, x), or
    ""."""
    try:
        with np.errstate(all="ignore"):
            ev = model.evaluate(t, x, stabilization=stabilization, redundancy_ok=True)
    except Exception as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        return ""
    H = ev.H4 if ev.H4 is not None else None
    if H is None or not np.all(np.isfinite(H)):
        return ""
    d = np.sqrt(np.abs(np.diag(H)))
    d = np.where(d > 0, d, 1.0)
    sv = np.linalg.svd(H / np.outer(d, d), compute_uv=False)
    structural = model.n_u2 - ev.rank
    live = sv[:len(sv) - structural] if structural > 0 else sv
    if live.size == 0 or live.min() > live.max() / SINGULAR_CONDITION:
        return ""
    return (f"singular configuration near t = {t:.6g} s: the constraint matrix is nearly "
            f"singular (scaled condition {live.max() / max(live.min(), 1e-300):.2g}); "
            f"{model.deficient_sources_text(H / np.outer(d, d), cutoff=live.min() * 1.0001)}")
