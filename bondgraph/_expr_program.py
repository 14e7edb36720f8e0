"""Sources given as sympy expressions of time, computed by compiled code: the programs
of :mod:`bondgraph._expr_kernels` (one interpreter for every expression, compiled once
per machine, not once per expression).

- :func:`program`: a source's values and rates (sympy expressions of ``t`` alone) as a
  record of the interpreter, or None where some part has no operation of it (the source
  is then computed by its Python function, as before).
- :data:`EXPRESSION_SOURCES` and :func:`expression_kernel`: the family of these sources
  and its kernel (:func:`bondgraph.primitives.sources.compiled_expression_source` makes a
  source's ``CompiledSource``).

A program is made from the very code the numeric evaluator runs
(:func:`bondgraph.laws.compile_numeric`: sympy's numpy printer with this package's
``Heaviside``), read as a Python syntax tree without executing it, so that the kernel
does the same operations in the same order: ``-1/t**2`` is (-1) / (t ** 2), not
-(t ** -2). Parts without ``t`` are folded to one number as Python would compute them
(``(1/2)/sqrt(t)``: 0.5); a part Python would fail on (an integer too large for a float)
leaves the source to its Python function, which reports it.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Sequence

import numpy as np
import sympy

__all__ = ["program", "EXPRESSION_SOURCES", "expression_kernel", "OPS"]

OPS = ("const", "t", "+", "-", "*", "/", "**", "neg", "sin", "cos", "tan", "arcsin",
       "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp",
       "log", "sqrt", "abs", "sign", "arctan2", "heaviside", "minimum", "maximum")
"""The operations by code (the order of :mod:`bondgraph._expr_kernels`' codes)."""
_CODE = {name: k for k, name in enumerate(OPS)}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_UNARY_CALLS = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                "arcsinh", "arccosh", "arctanh", "exp", "log", "sqrt", "abs", "sign"}
_BINARY_CALLS = {"arctan2", "heaviside"}
_NAMES = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
_PY_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
              "/": operator.truediv, "**": operator.pow}

MAX_PROGRAM = 5_000
"""The most operations of one source's programs, and nodes of its expressions (more:
its Python function; printing a sum of 250 sines and its rate for a program takes 0.2
s beside sympy's 0.5 s to bind it)."""


class _Unsupported(Exception):
    """A part of the code that the interpreter does not compute (or not as Python)."""


class _Family:
    """The family of every expression source (compared by identity): its sources'
    records are packed one after another (``per_source``)."""

    per_source = True

    def __repr__(self) -> str:
        return "EXPRESSION_SOURCES"


EXPRESSION_SOURCES = _Family()


def expression_kernel():
    """The compiled interpreter of the family (numba; asked for only where enabled)."""
    from ._expr_kernels import expressions
    return expressions


MAX_NESTING = 300
"""The deepest syntax tree made into a program (a sum of many terms prints as a chain of
that many additions; deeper: its Python function)."""


def _reduction(name: str, args: list[ast.AST]) -> tuple[str, list[ast.AST]] | None:
    """("minimum" or "maximum", the items) of the printed ``reduce(minimum, [a, b, ...])``
    (sympy's Min and Max), else None."""
    if name == "reduce" and len(args) == 2 and isinstance(args[0], ast.Name) and \
            args[0].id in ("minimum", "maximum") and \
            isinstance(args[1], (ast.List, ast.Tuple)) and args[1].elts:
        return args[0].id, list(args[1].elts)
    return None


class _Compiler:
    """Post-order operations of one syntax tree, with its constants; parts without the
    time folded to numbers (Python's own arithmetic, numpy's functions)."""

    def __init__(self, constants: list[float], tree: ast.AST):
        self.constants = constants
        self.ops: list[tuple[int, int]] = []
        # which nodes read the time, and the tree's nesting, in one pass from the
        # leaves (ast.walk lists a node before its children)
        nodes = list(ast.walk(tree))
        self._timed: dict[int, bool] = {}
        nesting: dict[int, int] = {}
        for node in reversed(nodes):
            kids = list(ast.iter_child_nodes(node))
            self._timed[id(node)] = (isinstance(node, ast.Name) and node.id == "t") or \
                any(self._timed[id(k)] for k in kids)
            nesting[id(node)] = 1 + max((nesting[id(k)] for k in kids), default=0)
        if nesting[id(tree)] > MAX_NESTING:
            raise _Unsupported

    def emit(self, node: ast.AST) -> int:
        """Append ``node``'s operations; the stack depth they need."""
        value = self.fold(node)
        if value is not None:
            try:
                number = float(value)
            except (OverflowError, TypeError, ValueError):
                raise _Unsupported from None
            self.constants.append(number)
            self.ops.append((_CODE["const"], len(self.constants) - 1))
            return 1
        if isinstance(node, ast.Name) and node.id == "t":
            self.ops.append((_CODE["t"], 0))
            return 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            need = self.emit(node.operand)
            if isinstance(node.op, ast.USub):
                self.ops.append((_CODE["neg"], 0))
            return need
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self._binary(_BINOPS[type(node.op)], node.left, node.right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                not node.keywords:
            name, args = node.func.id, node.args
            if name in _UNARY_CALLS and len(args) == 1:
                need = self.emit(args[0])
                self.ops.append((_CODE[name], 0))
                return need
            if name in _BINARY_CALLS and len(args) == 2:
                return self._binary(name, args[0], args[1])
            reduced = _reduction(name, args)
            if reduced is not None:             # functools.reduce: left to right
                op, items = reduced
                need = self.emit(items[0])
                for item in items[1:]:
                    need = max(need, 1 + self.emit(item))
                    self.ops.append((_CODE[op], 0))
                return need
        raise _Unsupported

    def _binary(self, name: str, left: ast.AST, right: ast.AST) -> int:
        need = max(self.emit(left), 1 + self.emit(right))
        self.ops.append((_CODE[name], 0))
        return need

    def fold(self, node: ast.AST):
        """The value of a part without the time, as Python computes it (an int stays an
        int), or None where it reads the time."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
                not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "t":
                return None
            if node.id in _NAMES:
                return _NAMES[node.id]
            raise _Unsupported
        if not self._timed[id(node)]:
            return self._evaluate(node)
        return None

    def _evaluate(self, node: ast.AST):
        """A constant part's value (Python numbers; a failure leaves the source to its
        Python function, which reports it)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return _NAMES[node.id]
        try:
            with np.errstate(all="ignore"):
                if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                    v = self._evaluate(node.operand)
                    return -v if isinstance(node.op, ast.USub) else v
                if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
                    a, b = self._evaluate(node.left), self._evaluate(node.right)
                    if isinstance(a, int) and isinstance(b, int) and \
                            isinstance(node.op, ast.Pow) and abs(b) > 64:
                        raise _Unsupported          # (a huge exact power)
                    return _PY_BINOPS[_BINOPS[type(node.op)]](a, b)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        not node.keywords:
                    return self._call(node.func.id, node.args)
        except (ArithmeticError, ValueError, TypeError):
            raise _Unsupported from None
        raise _Unsupported

    def _call(self, name: str, args: list[ast.AST]):
        """A call of constants, with numpy's function as the numeric code calls it."""
        if name in _UNARY_CALLS and len(args) == 1:
            v = self._evaluate(args[0])
            return abs(v) if name == "abs" else getattr(np, name)(v)
        if name in _BINARY_CALLS and len(args) == 2:
            return getattr(np, name)(self._evaluate(args[0]), self._evaluate(args[1]))
        reduced = _reduction(name, args)
        if reduced is not None:
            op, items = reduced
            out = self._evaluate(items[0])
            for item in items[1:]:
                out = getattr(np, op)(out, self._evaluate(item))
            return out
        raise _Unsupported


def program(values: Sequence[sympy.Expr], rates: Sequence[sympy.Expr]
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """The interpreter's record (ints, flts) of a source whose ``values`` and ``rates``
    (numbers for every symbol but ``t``) are these expressions: its outputs are the
    values, then the rates. None where the numeric code holds something the interpreter
    does not compute."""
    from .laws import TIME, _NumericPrinter, _no_dirac
    printer = _NumericPrinter({"fully_qualified_modules": False, "inline": True,
                               "allow_unknown_functions": True, "user_functions": {}})
    exprs = list(_no_dirac(sympy.Matrix([*values, *rates])))
    if any(e.free_symbols - {TIME} for e in exprs):
        return None
    size = 0
    for e in exprs:                  # (before printing, which costs more)
        for _ in sympy.preorder_traversal(e):
            size += 1
        if size > MAX_PROGRAM:
            return None
    constants: list[float] = []
    body: list[int] = []
    depth = 1
    try:
        for e in exprs:
            code = printer.doprint(e)
            tree = ast.parse(code, mode="eval").body
            c = _Compiler(constants, tree)
            depth = max(depth, c.emit(tree))
            if len(c.ops) > MAX_PROGRAM:
                return None
            body.append(len(c.ops))
            for op, arg in c.ops:
                body += (op, arg)
    except (_Unsupported, SyntaxError, RecursionError, ValueError, TypeError):
        return None
    ints = np.array([len(exprs), len(constants), depth, *body], dtype=np.int64)
    return ints, np.array(constants, dtype=np.float64)
