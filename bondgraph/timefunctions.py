"""The standard functions of time as data, so that a run can compute them in compiled
code (:mod:`bondgraph._time_kernels`) instead of calling their Python functions.

- :class:`TimeKernel`: what a :class:`~bondgraph.TimeFunction` made by ``sine`` or
  ``ramp`` (or by a model file's ``step``, ``ramp``, ``sine`` or ``table`` source) is:
  its kind and parameters (SI units, as given to it).
- :data:`TIME_SOURCES` and :func:`time_kernel`: the family of these sources and its
  compiled kernel (:func:`bondgraph.primitives.sources.compiled_time_source` makes a
  source's ``CompiledSource``: its value and its rate).

All the time sources of a model are one family: one kernel call computes them all.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

__all__ = ["TimeKernel", "TIME_SOURCES", "time_kernel"]

KINDS = ("sine", "ramp", "step", "table")
"""The kinds, in the order of :mod:`bondgraph._time_kernels`' codes."""


class _Family:
    """The family of every time source (compared by identity): its sources' records are
    packed one after another (``per_source``), so that one call serves any number."""

    per_source = True

    def __repr__(self) -> str:
        return "TIME_SOURCES"


TIME_SOURCES = _Family()


@dataclass(frozen=True, eq=False)
class TimeKernel:
    """A standard function of time: ``kind`` and its parameters.

    - ``"sine"``: (offset, amplitude, omega (rad/s), phase (rad)): offset + amplitude
      sin(omega t + phase).
    - ``"ramp"``: (offset, slope, start (s)): offset + slope max(t - start, 0).
    - ``"step"``: (before, after, time (s)): before until ``time``, then after.
    - ``"table"``: (times (n,), values (n, dim)): linear between the points, the end
      values outside them (``np.interp``).

    Offsets, amplitudes, slopes and the step's values are numbers or arrays of the
    source's dimension.
    """

    kind: str
    params: tuple

    def record(self, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(ints (4,), flts) of this function as a record of the kernel, for a source of
        ``dim`` values; None where a parameter does not fit ``dim`` or is not finite."""
        try:
            if self.kind == "table":
                ts = np.asarray(self.params[0], dtype=float).ravel()
                vs = np.asarray(self.params[1], dtype=float).reshape(ts.size, -1)
                if vs.shape[1] == 1 and dim > 1:
                    vs = np.repeat(vs, dim, axis=1)
                if vs.shape != (ts.size, dim) or ts.size < 2 or np.any(np.diff(ts) <= 0):
                    return None
                flts, n = np.concatenate([ts, vs.ravel()]), ts.size
            else:
                a, b, *rest = self.params
                vec = [np.broadcast_to(np.asarray(p, dtype=float), (dim,)) for p in (a, b)]
                flts, n = np.concatenate([*vec, [float(r) for r in rest]]), 0
        except (ValueError, TypeError, IndexError):
            return None
        expected = {"sine": 2, "ramp": 1, "step": 1}.get(self.kind)
        if self.kind not in KINDS or not np.all(np.isfinite(flts)) or \
                (expected is not None and len(self.params) != 2 + expected):
            return None
        ints = np.array([KINDS.index(self.kind), dim, flts.size, n], dtype=np.int64)
        return ints, flts


def time_kernel():
    """The compiled kernel of the family (numba; asked for only where it is enabled)."""
    from ._time_kernels import time_functions
    return time_functions
