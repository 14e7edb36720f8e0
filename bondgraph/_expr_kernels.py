"""The compiled kernel of sources given as expressions of time (arrays and numbers only):
one interpreter of the programs :mod:`bondgraph._expr_program` makes from a source's
numeric code, as one family of compiled sources
(:class:`bondgraph.primitives.sources.CompiledSource`), so that a run driven by
``Se("F", 5 * Heaviside(t - 0.004))`` or a file's ``{ expr = "..." }`` stays on the
compiled loop. Imported where numba is enabled.

A source's record: ``ints`` holds (outputs, floats, stack depth), then per output its
program's length L and L pairs (operation, argument); ``flts`` holds its constants. The
operations (:data:`bondgraph._expr_program.OPS`) are those of the Python code the
numeric evaluator runs, in its order, with IEEE arithmetic (a division by zero is an
infinity, a logarithm of a negative number NaN: numba's numpy error model), so that
both compute the same numbers; the first evaluation of a model checks it.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit
from ._rk_kernels import SOURCE_SIGNATURE

HEADER = 3
"""ints per record before its programs: outputs, floats, stack depth."""

(CONST, TIME, ADD, SUB, MUL, DIV, POW, NEG, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH,
 TANH, ASINH, ACOSH, ATANH, EXP, LOG, SQRT, ABS, SIGN, ATAN2, HEAVISIDE, MINIMUM,
 MAXIMUM) = range(29)
"""The operations' codes (:data:`bondgraph._expr_program.OPS` names them)."""


@njit(cache=True, inline="always")
def _unary(op, a):
    if op == SIN:
        return math.sin(a)
    if op == COS:
        return math.cos(a)
    if op == TAN:
        return math.tan(a)
    if op == ASIN:
        return math.asin(a) if -1.0 <= a <= 1.0 else math.nan
    if op == ACOS:
        return math.acos(a) if -1.0 <= a <= 1.0 else math.nan
    if op == ATAN:
        return math.atan(a)
    if op == SINH:
        return math.sinh(a) if abs(a) < 710.5 else math.copysign(math.inf, a)
    if op == COSH:
        return math.cosh(a) if abs(a) < 710.5 else (math.inf if a == a else a)
    if op == TANH:
        return math.tanh(a)
    if op == ASINH:
        return math.asinh(a)
    if op == ACOSH:
        return math.acosh(a) if a >= 1.0 else math.nan
    if op == ATANH:
        if -1.0 < a < 1.0:
            return math.atanh(a)
        if a == 1.0 or a == -1.0:
            return math.copysign(math.inf, a)
        return math.nan
    if op == EXP:
        return math.exp(a) if a < 709.8 else (math.inf if a == a else a)
    if op == LOG:
        if a > 0.0:
            return math.log(a)
        if a == 0.0:
            return -math.inf
        return math.nan
    if op == SQRT:
        return math.sqrt(a) if a >= 0.0 else math.nan
    if op == ABS:
        return abs(a)
    if op == SIGN:
        if a > 0.0:
            return 1.0
        if a < 0.0:
            return -1.0
        return a                   # (0 or NaN, as numpy's)
    return math.nan


@njit(cache=True, inline="always")
def _binary(op, a, b):
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return a / b
    if op == POW:
        return a ** b
    if op == ATAN2:
        return math.atan2(a, b)
    if op == HEAVISIDE:            # numpy.heaviside(a, b)
        if a < 0.0:
            return 0.0
        if a > 0.0:
            return 1.0
        return b if a == 0.0 else a
    if a != a or b != b:           # numpy.minimum and maximum propagate NaN
        return math.nan
    if op == MINIMUM:
        return a if a <= b else b
    return a if a >= b else b


@njit(SOURCE_SIGNATURE, cache=True, error_model="numpy")
def expressions(t, x, ints, flts, out):
    """Every record's outputs at time ``t`` (s) into ``out`` (see the module docstring);
    ``x`` is not read."""
    i = 0
    f = 0
    o = 0
    while i < ints.size:
        n_out, n_flt, depth = ints[i], ints[i + 1], ints[i + 2]
        i += HEADER
        stack = np.empty(max(depth, 1))
        for _ in range(n_out):
            length = ints[i]
            i += 1
            top = 0
            for _ in range(length):
                op, arg = ints[i], ints[i + 1]
                i += 2
                if op == CONST:
                    stack[top] = flts[f + arg]
                    top += 1
                elif op == TIME:
                    stack[top] = t
                    top += 1
                elif op == NEG:
                    stack[top - 1] = -stack[top - 1]
                elif op < SIN or op >= ATAN2:
                    stack[top - 2] = _binary(op, stack[top - 2], stack[top - 1])
                    top -= 1
                else:
                    stack[top - 1] = _unary(op, stack[top - 1])
            out[o] = stack[0]
            o += 1
        f += n_flt
