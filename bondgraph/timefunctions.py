"""The standard functions of time as data, so that a run can compute them in compiled
code (:mod:`bondgraph._time_kernels`) instead of calling their Python functions.

- :class:`TimeKernel`: what a :class:`~bondgraph.TimeFunction` made by ``sine``,
  ``ramp`` or ``expression`` (or by a model file's ``step``, ``ramp``, ``sine``,
  ``table`` or ``expression`` signal) is: its kind and parameters (SI units, as given
  to it); :meth:`TimeKernel.expressions` writes it as sympy expressions of ``t`` (what
  an FMU's C code is made from).
- :data:`TIME_SOURCES` and :func:`time_kernel`: the family of these sources and its
  compiled kernel (:func:`bondgraph.primitives.sources.compiled_time_source` makes a
  source's ``CompiledSource``: its value and its rate).

All the time sources of a model are one family: one kernel call computes them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from .laws import TIME

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
    - ``"table"``: (times (n,), values (n,) or (n, dim)[, breaks]): linear between the
      points, the end values outside them (``np.interp``); ``breaks`` (default True):
      whether a run stops at each point.
    - ``"expression"``: (a tuple of sympy expressions of ``t`` alone, one per component,
      or one for every component): a run computes it as a source given as an
      expression (:func:`bondgraph.primitives.sources.compiled_expression_source`),
      with its exact rate.

    Offsets, amplitudes, slopes and the step's values are numbers or arrays of the
    source's dimension.
    """

    kind: str
    params: tuple

    def record(self, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(ints (4,), flts) of this function as a record of the kernel, for a source of
        ``dim`` values; None where a parameter does not fit ``dim`` or is not finite (or
        the kind is ``"expression"``, which is not of this family)."""
        if self.kind not in KINDS:
            return None
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

    def timing(self) -> tuple[float | None, tuple[float, ...]]:
        """(period (s) or None, the times (s) where the value jumps or has a kink) of
        this function, for a run's steps (:class:`bondgraph.laws.SourceTiming`): a
        sine's period, a step's or a ramp's start, a table's points (as Modelica's
        CombiTimeTable's time events: a pulse between two steps of the error control is
        not seen at all; a break at each point costs a dense table's run its evaluations,
        6 times on a 2001-point table; none for a table made with ``breaks=False``). An
        expression's come from the expression itself: (None, ()) here."""
        try:
            if self.kind == "sine":
                w = float(self.params[2])
                return (2 * np.pi / abs(w) if w and np.isfinite(w) else None), ()
            if self.kind in ("ramp", "step"):
                return None, (float(self.params[2]),)
            if self.kind == "table":
                if len(self.params) > 2 and not self.params[2]:
                    return None, ()                     # (TimeFunction.table, breaks=False)
                ts = np.asarray(self.params[0], dtype=float).ravel()
                return None, tuple(float(t) for t in ts[np.isfinite(ts)])
        except (ValueError, TypeError, IndexError):
            pass
        return None, ()

    def functions(self) -> tuple[Callable[[float], Any], Callable[[float], Any]]:
        """(value(t), rate(t)) of a ``sine``, ``ramp``, ``step`` or ``table`` as Python
        functions, with the compiled kernel's formulas (:mod:`bondgraph._time_kernels`):
        a float where the parameters are numbers (a table's values of shape (n,)), an
        array of their dimension otherwise. The kink or jump belongs to what follows it
        (from ``start``/``time`` on, the ramp's slope, the step's value after; at a table's
        point the next segment's slope, 0 from the last point on)."""
        k, p = self.kind, self.params
        if k == "sine":
            off, amp, w, ph = p
            return (lambda t: off + amp * np.sin(w * t + ph),
                    lambda t: amp * w * np.cos(w * t + ph))
        if k in ("ramp", "step"):
            a, b, t0 = p
            zero = np.zeros_like(np.asarray(b, dtype=float)) + 0.0
            zero = float(zero) if zero.ndim == 0 else zero
            if k == "ramp":
                return (lambda t: a + b * max(t - t0, 0.0), lambda t: b if t >= t0 else zero)
            return (lambda t: b if t >= t0 else a), (lambda t: zero)
        if k != "table":
            raise ValueError(f"no Python functions for a TimeKernel of kind {k!r}")
        ts = np.asarray(p[0], dtype=float)
        vs = np.asarray(p[1], dtype=float)
        scalar = vs.ndim == 1
        vs = vs.reshape(ts.size, -1)
        n = ts.size

        def segment(t: float) -> tuple[np.ndarray, np.ndarray]:
            i = int(np.searchsorted(ts, t, side="right")) - 1
            if i < 0:
                return vs[0].copy(), np.zeros(vs.shape[1])
            if i >= n - 1:
                return vs[n - 1].copy(), np.zeros(vs.shape[1])
            rate = (vs[i + 1] - vs[i]) / (ts[i + 1] - ts[i])
            return rate * (t - ts[i]) + vs[i], rate

        def value(t: float) -> Any:
            v = segment(t)[0]
            return float(v[0]) if scalar else v

        def rate(t: float) -> Any:
            r = segment(t)[1]
            return float(r[0]) if scalar else r

        return value, rate

    def expressions(self, dim: int) -> list[sympy.Expr] | None:
        """The value of a source of ``dim`` components as sympy expressions of ``t`` (the
        symbol :data:`bondgraph.laws.TIME`), one per component: the kernel's function,
        a jump's or a kink's side as the kernel takes it (from ``time`` on, the value
        after: ``Heaviside(t - time, 1)``), its rate exactly, its value to rounding (a
        table as a Piecewise, whose segments sympy distributes, b t - b t0 for
        b (t - t0): apart by the rounding of b t and b t0); None where a parameter does
        not fit ``dim``."""
        t = TIME
        if self.kind == "expression":
            items = list(self.params[0])
            if len(items) == 1 and dim > 1:
                items = items * dim
            return items if len(items) == dim else None
        rec = self.record(dim)
        if rec is None:
            return None
        ints, flts = rec
        f = [sympy.Float(float(v)) for v in flts]
        if self.kind == "table":
            n = int(ints[3])
            ts, vs = f[:n], np.array(f[n:], dtype=object).reshape(n, dim)
            out = []
            for c in range(dim):
                # np.interp: slope (t - t_j) + v_j on [t_j, t_j+1), the end values outside
                pieces = [(vs[0, c], t < ts[0])]
                pieces += [((vs[j + 1, c] - vs[j, c]) / (ts[j + 1] - ts[j]) * (t - ts[j])
                            + vs[j, c], t < ts[j + 1]) for j in range(n - 1)]
                out.append(sympy.Piecewise(*pieces, (vs[n - 1, c], True)))
            return out
        a, b, rest = f[:dim], f[dim:2 * dim], f[2 * dim:]
        if self.kind == "sine":
            w, ph = rest
            return [a[c] + b[c] * sympy.sin(w * t + ph) for c in range(dim)]
        # a ramp and a step with Heaviside(., 1), 1 from the break on (the kernel's side),
        # which graph files read back; values exact (x * 1 and x * 0 + y are exact)
        t0 = rest[0]
        if self.kind == "ramp":
            return [a[c] + b[c] * (t - t0) * sympy.Heaviside(t - t0, 1) for c in range(dim)]
        return [a[c] * sympy.Heaviside(t0 - t, 0) + b[c] * sympy.Heaviside(t - t0, 1)
                for c in range(dim)]                        # step


def time_kernel():
    """The compiled kernel of the family (numba; asked for only where it is enabled)."""
    from ._time_kernels import time_functions
    return time_functions
