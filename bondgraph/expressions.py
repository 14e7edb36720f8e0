"""Sympy expressions as text and back, without executing anything.

- :func:`expression_text`: a sympy expression (or a list of numbers and expressions) as
  text that :func:`parse_expression` reads back to the same object (floats to the last
  bit: they are printed with ``repr``).
- :func:`parse_expression`: text -> sympy objects. The text is parsed by Python's
  ``ast`` module (``mode="eval"``) and only whitelisted nodes are turned into sympy
  objects; nothing is evaluated, so ``__import__('os')``, attribute access on anything
  but a name, lambdas, subscripts, comparisons and strings are refused with a
  :class:`~bondgraph.ModelError` naming the offending construct. ``sympy.sympify`` and
  ``parse_expr`` are never called (both evaluate Python).

The language: numbers, names (``m``, ``t``, ``q_k``; dotted names such as ``m2.mass``
are one symbol), ``+ - * / **``, unary minus, parentheses, calls of
:data:`FUNCTIONS` and (only at the top level) lists, possibly nested. ``pi`` is the
constant; every other name is a symbol (``t`` the time, ``q_C`` or ``p_I`` an element's
state, any other name a parameter).
"""

from __future__ import annotations

import ast
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import sympy
from sympy.printing.str import StrPrinter

from .errors import ModelError

__all__ = ["FUNCTIONS", "parse_expression", "expression_text", "MAX_LENGTH"]

FUNCTIONS: dict[str, Callable[..., sympy.Basic]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "asin": sympy.asin,
    "acos": sympy.acos, "atan": sympy.atan, "atan2": sympy.atan2, "sinh": sympy.sinh,
    "cosh": sympy.cosh, "tanh": sympy.tanh, "asinh": sympy.asinh, "acosh": sympy.acosh,
    "atanh": sympy.atanh, "exp": sympy.exp, "log": sympy.log, "sqrt": sympy.sqrt,
    "Abs": sympy.Abs, "sign": sympy.sign, "Min": sympy.Min, "Max": sympy.Max,
    "Heaviside": sympy.Heaviside, "pow": sympy.Pow,
}
"""The functions an expression may call, by name (sympy's)."""

MAX_LENGTH = 100_000
"""The longest expression text read (characters)."""

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _describe(node: ast.AST) -> str:
    """A short name of a refused construct, for the message."""
    names = {ast.Attribute: "attribute access", ast.Lambda: "a lambda",
             ast.Subscript: "a subscript", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional expression",
             ast.Dict: "a dict", ast.Set: "a set", ast.Tuple: "a tuple",
             ast.ListComp: "a comprehension", ast.GeneratorExp: "a generator",
             ast.NamedExpr: "an assignment (:=)", ast.Starred: "a starred argument",
             ast.JoinedStr: "an f-string", ast.Await: "await"}
    for cls, text in names.items():
        if isinstance(node, cls):
            return text
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r}"
    if isinstance(node, ast.BinOp):
        return f"the operator {type(node.op).__name__}"
    if isinstance(node, ast.UnaryOp):
        return f"the unary operator {type(node.op).__name__}"
    return f"a {type(node).__name__} node"


class _Reader:
    """Turns a whitelisted ``ast`` tree into sympy objects."""

    def __init__(self, text: str, symbols: Mapping[str, sympy.Symbol], where: str):
        self.text = text
        self.symbols = symbols
        self.where = where

    def refuse(self, node: ast.AST | None, why: str) -> None:
        col = f" (column {node.col_offset + 1})" if node is not None and \
            hasattr(node, "col_offset") else ""
        raise ModelError(f"{self.where}: expression {self._short()!r}: {why}{col}; valid: "
                         f"numbers, names, + - * / **, parentheses, lists, and calls of "
                         f"{', '.join(FUNCTIONS)}")

    def _short(self) -> str:
        return self.text if len(self.text) <= 80 else self.text[:77] + "..."

    def top(self, node: ast.AST) -> Any:
        """The top level: a list (of lists, numbers, expressions) or an expression;
        a bare number in a list stays a Python number."""
        if isinstance(node, ast.List):
            return [self.item(e) for e in node.elts]
        return self.expr(node)

    def item(self, node: ast.AST) -> Any:
        if isinstance(node, ast.List):
            return [self.item(e) for e in node.elts]
        number = self.literal(node)
        if number is not None:
            return number
        return self.expr(node)

    def literal(self, node: ast.AST) -> int | float | None:
        """A bare number, or minus one, as a Python number (None otherwise)."""
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1, node.operand
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            self.number(node)
            return sign * node.value
        return None

    def number(self, node: ast.Constant) -> sympy.Number:
        v = node.value
        if type(v) is int:
            return sympy.Integer(v)
        if type(v) is float:
            if not math.isfinite(v):
                self.refuse(node, f"the number {v!r} is not finite")
            return sympy.Float(v)
        self.refuse(node, _describe(node))

    def name(self, node: ast.AST) -> str | None:
        """``a`` or ``a.b.c`` (a dotted name: one symbol) as text; None otherwise."""
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.name(node.value)
            if base is None:
                self.refuse(node, "attribute access (only a dotted name, such as m2.mass, "
                                  "may hold dots)")
            return f"{base}.{node.attr}"
        return None

    def expr(self, node: ast.AST) -> sympy.Basic:
        if isinstance(node, ast.Constant):
            return self.number(node)
        dotted = self.name(node)
        if dotted is not None:
            if any(part.startswith("__") for part in dotted.split(".")):
                self.refuse(node, f"the name {dotted!r} (names may not start with __)")
            if dotted == "pi":
                return sympy.pi
            if dotted in FUNCTIONS:
                self.refuse(node, f"the function {dotted!r} used as a name")
            return self.symbols.get(dotted) or sympy.Symbol(dotted)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            a, b = self.expr(node.left), self.expr(node.right)
            op = type(node.op)
            if op is ast.Pow:
                self.check_power(node, a, b)
                return a ** b
            if op is ast.Add:
                return a + b
            if op is ast.Sub:
                return a - b
            if op is ast.Mult:
                return a * b
            if b == 0:
                self.refuse(node, "a division by zero")
            return a / b
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.expr(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Call):
            fname = node.func.id if isinstance(node.func, ast.Name) else None
            if fname not in FUNCTIONS:
                what = f"a call of {fname!r}" if fname else \
                    f"a call of {_describe(node.func)}"
                self.refuse(node, f"{what} (not an allowed function)")
            if node.keywords:
                self.refuse(node, f"keyword arguments in the call of {fname!r}")
            args = [self.expr(a) for a in node.args]
            if fname == "pow" and len(args) == 2:
                self.check_power(node, *args)
            try:
                return FUNCTIONS[fname](*args)
            except (TypeError, ValueError) as exc:
                self.refuse(node, f"{fname}() with {len(args)} argument(s): {exc}")
        if isinstance(node, ast.List):
            self.refuse(node, "a list inside an expression (lists are allowed only as the "
                              "whole value)")
        self.refuse(node, _describe(node))

    def check_power(self, node: ast.AST, base: sympy.Basic, exponent: sympy.Basic) -> None:
        """Refuse a power of numbers too large to compute exactly (9**9**9 would run
        for ever)."""
        if base.is_Number and exponent.is_Number:
            b, e = abs(float(base)), abs(float(exponent))
            if b > 1 and e * math.log10(b) > 1000:
                self.refuse(node, "a power of numbers beyond 1e1000")


def parse_expression(text: str, *, symbols: Mapping[str, sympy.Symbol] | None = None,
                     where: str = "expression") -> Any:
    """Read ``text`` into sympy objects without executing it.

    Parameters
    ----------
    text : str
        An expression (``"2*m*g"``, ``"sin(3*t)"``) or a list of them (``"[0, -m*g]"``,
        nested for a matrix). A bare number in a list is returned as a Python number.
    symbols : mapping of str to sympy.Symbol, optional
        The symbol to use for a name (with its assumptions, e.g. a declared parameter's
        real symbol); other names become plain ``sympy.Symbol(name)``.
    where : str
        What the text is (file, element, key), put at the start of every message.

    Returns
    -------
    sympy.Basic or list

    Raises
    ------
    ModelError
        Naming ``where`` and the refused construct (a call of a function that is not in
        :data:`FUNCTIONS`, attribute access, a lambda, a string, a syntax error...).

    Examples
    --------
    >>> parse_expression("2*m + sin(t)")
    2*m + sin(t)
    >>> parse_expression("__import__('os')")
    Traceback (most recent call last):
    ...
    bondgraph.errors.ModelError: expression: expression "__import__('os')": a call of '__import__' (not an allowed function) (column 1); valid: numbers, names, + - * / **, parentheses, lists, and calls of sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh, exp, log, sqrt, Abs, sign, Min, Max, Heaviside, pow
    """
    reader = _Reader(str(text), symbols or {}, where)
    if not isinstance(text, str):
        reader.refuse(None, f"must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ModelError(f"{where}: expression of {len(text)} characters; valid: at most "
                         f"{MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ModelError(f"{where}: expression {reader._short()!r} is not valid{col}: "
                         f"{exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ModelError(f"{where}: expression {reader._short()!r} cannot be read: "
                         f"{type(exc).__name__}") from None
    try:
        return reader.top(tree.body)
    except RecursionError:
        raise ModelError(f"{where}: expression {reader._short()!r} is nested too "
                         f"deeply") from None


class _Printer(StrPrinter):
    """sympy's str printer, with floats to the last bit and E as exp(1)."""

    def _print_Float(self, expr):
        if expr._prec != 53:
            raise ModelError(f"the number {expr} has {expr._prec} bits of precision; a "
                             f"file holds double precision (53) only")
        return repr(float(expr))

    def _print_Exp1(self, expr):
        return "exp(1)"


def expression_text(value: Any) -> str:
    """``value`` (a sympy expression, a number, or a list of them, nested) as text that
    :func:`parse_expression` reads back: sympy's own notation, floats printed exactly.

    Examples
    --------
    >>> import sympy
    >>> m = sympy.Symbol("m")
    >>> expression_text([0.1 + 0.2, -9.81 * m])
    '[0.30000000000000004, -9.81*m]'
    """
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(expression_text(v) for v in value) + "]"
    if isinstance(value, bool):
        raise ModelError(f"{value!r} is not a number or an expression")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, sympy.Basic):
        return _Printer({"order": None}).doprint(value)
    raise ModelError(f"{value!r} ({type(value).__name__}) is not a number or an expression")
