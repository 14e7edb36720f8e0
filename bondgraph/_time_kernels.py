"""The compiled kernel of the standard functions of time (arrays and numbers only):
:class:`bondgraph.TimeFunction`'s ``sine`` and ``ramp``, and the model files' ``step``,
``ramp``, ``sine`` and ``table`` sources, as one family of compiled sources
(:class:`bondgraph.primitives.sources.CompiledSource`), so that a run whose drives are
such functions stays on the compiled loop. Imported where numba is enabled.

Each source is a record in the family's packed arrays: ``ints`` holds (kind, dim, the
number of its floats, table points); ``flts`` its parameters; it writes ``dim`` values
and then ``dim`` rates into ``out``, in the order of the records. The formulas are
those of the Python functions they replace (:mod:`bondgraph.timefunctions`), which the
first evaluation of a model checks them against.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit
from ._rk_kernels import SOURCE_SIGNATURE

SINE, RAMP, STEP, TABLE = range(4)
"""The kinds of record (ints[0] of each)."""
INTS = 4
"""ints per record: kind, dim, floats, table points."""


@njit(SOURCE_SIGNATURE, cache=True, error_model="numpy")
def time_functions(t, x, ints, flts, out):
    """Every record's values and rates at time ``t`` (s) into ``out`` (see the module
    docstring); ``x`` is not read."""
    f = 0
    o = 0
    for r in range(ints.size // INTS):
        kind, d, nf, n = ints[INTS * r], ints[INTS * r + 1], ints[INTS * r + 2], \
            ints[INTS * r + 3]
        p = flts[f:f + nf]
        if kind == SINE:            # offset (d), amplitude (d), omega, phase
            w, ph = p[2 * d], p[2 * d + 1]
            s, c = math.sin(w * t + ph), math.cos(w * t + ph)
            for k in range(d):
                out[o + k] = p[k] + p[d + k] * s
                out[o + d + k] = p[d + k] * w * c
        elif kind == RAMP:          # offset (d), slope (d), start
            t0 = p[2 * d]
            for k in range(d):
                out[o + k] = p[k] + p[d + k] * max(t - t0, 0.0)
                out[o + d + k] = p[d + k] if t >= t0 else 0.0
        elif kind == STEP:          # before (d), after (d), time
            t0 = p[2 * d]
            for k in range(d):
                out[o + k] = p[d + k] if t >= t0 else p[k]
                out[o + d + k] = 0.0
        else:                       # times (n), values (n, d) row-major: np.interp
            ts = p[:n]
            i = np.searchsorted(ts, t, side="right") - 1
            for k in range(d):
                if i < 0:
                    v, rate = p[n + k], 0.0
                elif i >= n - 1:
                    v, rate = p[n + (n - 1) * d + k], 0.0
                else:
                    y0, y1 = p[n + i * d + k], p[n + (i + 1) * d + k]
                    rate = (y1 - y0) / (ts[i + 1] - ts[i])
                    v = rate * (t - ts[i]) + y0
                out[o + k] = v
                out[o + d + k] = rate
        f += nf
        o += 2 * d
