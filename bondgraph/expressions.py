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

Limits, so that reading any text takes milliseconds (sympy computes with exact integers
and fractions, and simplifies ``Min``/``Max`` by comparing every pair of arguments):
:data:`MAX_LENGTH` characters, :data:`MAX_NODES` operators, numbers, names and calls,
:data:`MAX_DEPTH` levels of nesting, :data:`MAX_MINMAX_ARGUMENTS` arguments of ``Min``
and ``Max`` together, exact numbers (integers, fractions, and powers of them) of at most
:data:`MAX_DIGITS` digits, exact exponents within :data:`MAX_EXPONENT` (integers on
expressions of symbols, fractions on anything), and floating-point numbers within double
precision (no infinity).
Each refusal names the limit.
"""

from __future__ import annotations

import ast
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import sympy
from sympy.printing.str import StrPrinter

from .errors import ModelError, signal_safe

__all__ = ["FUNCTIONS", "parse_expression", "expression_text", "MAX_LENGTH", "MAX_NODES",
           "MAX_DEPTH", "MAX_MINMAX_ARGUMENTS", "MAX_DIGITS", "MAX_EXPONENT",
           "MAX_FLOAT_EXPONENT",
           "RESERVED_NAMES"]

FUNCTIONS: dict[str, Callable[..., sympy.Basic]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "asin": sympy.asin,
    "acos": sympy.acos, "atan": sympy.atan, "atan2": sympy.atan2, "sinh": sympy.sinh,
    "cosh": sympy.cosh, "tanh": sympy.tanh, "asinh": sympy.asinh, "acosh": sympy.acosh,
    "atanh": sympy.atanh, "exp": sympy.exp, "log": sympy.log, "sqrt": sympy.sqrt,
    "Abs": sympy.Abs, "sign": sympy.sign, "Min": sympy.Min, "Max": sympy.Max,
    "Heaviside": sympy.Heaviside, "pow": sympy.Pow,
}
"""The functions an expression may call, by name (sympy's)."""

RESERVED_NAMES = {"t": "the time (s)", "pi": "the constant pi"}
"""Names an expression reads as something other than a parameter; no parameter may take
one (a parameter "t" would never be used: ``t`` stays the time)."""

MAX_LENGTH = 100_000
"""The longest expression text read (characters)."""

MAX_NODES = 10_000
"""The most operators, numbers, names and calls in one expression."""

MAX_DEPTH = 100
"""The deepest nesting of one expression: each operator, call and list inside another is
one level (a chain ``a + b + c`` nests one level per ``+``)."""

MAX_MINMAX_ARGUMENTS = 6
"""The most arguments of ``Min`` and ``Max`` in one expression, all calls together:
sympy compares every pair of them, again in each derivative a law needs and when it
simplifies the symbolic equations (8 took a second, 250 minutes)."""

MAX_EXPONENT = 100
"""The largest exact exponent: an integer of at most this magnitude on an expression of
symbols, a fraction p/q with |p| and q at most this on any base. Symbolic equations
expand and simplify such powers as polynomials of that degree."""

MAX_DIGITS = 1000
"""The most digits of an exact number in an expression: an integer, a fraction's
numerator or denominator, a power of them (``(1/3)**(10**9)`` would take sympy hours;
``(1.0/3)**(10**9)`` is a floating-point number); an exact constant (``pi**(10**9)``,
``exp(exp(10))``) lies within 1e-1000 to 1e1000 in magnitude."""

MAX_FLOAT_EXPONENT = 10 ** 30
"""The largest exact exponent on a floating-point number (its power is then computed in
floating point, at a cost that grows with the exponent's digits)."""

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

    def refuse(self, node: ast.AST | None, why: str, *, limit: bool = False) -> NoReturn:
        """Raise the ModelError: ``why`` (a refused construct, followed by what the
        language has; with ``limit``, a limit passed, which ``why`` states)."""
        col = f" (column {node.col_offset + 1})" if node is not None and \
            hasattr(node, "col_offset") else ""
        valid = "" if limit else (f"; valid: numbers, names, + - * / **, parentheses, "
                                  f"lists, and calls of {', '.join(FUNCTIONS)}")
        raise ModelError(f"{self.where}: expression {self._short()!r}: {why}{col}{valid}")

    def _short(self) -> str:
        return self.text if len(self.text) <= 80 else self.text[:77] + "..."

    def measure(self, tree: ast.AST) -> None:
        """Refuse a tree beyond :data:`MAX_NODES`, :data:`MAX_DEPTH` or
        :data:`MAX_MINMAX_ARGUMENTS` (walked without recursion, before sympy sees it)."""
        nodes, minmax = 0, 0
        stack = [(tree, 1)]
        while stack:
            node, depth = stack.pop()
            nodes += 1
            if nodes > MAX_NODES:
                self.refuse(None, f"more than {MAX_NODES} operators, numbers, names and "
                                  f"calls; valid: at most {MAX_NODES} in one expression",
                            limit=True)
            if depth > MAX_DEPTH:
                self.refuse(node, f"nested more than {MAX_DEPTH} levels deep (each "
                                  f"operator, call or list inside another is a level; a "
                                  f"chain a + b + c nests one level per +); valid: at most "
                                  f"{MAX_DEPTH}", limit=True)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("Min", "Max"):
                minmax += len(node.args)
                if minmax > MAX_MINMAX_ARGUMENTS:
                    self.refuse(node, f"Min and Max take more than {MAX_MINMAX_ARGUMENTS} "
                                      f"arguments together (sympy compares every pair, "
                                      f"again in each derivative); valid: at most "
                                      f"{MAX_MINMAX_ARGUMENTS} in one expression",
                                limit=True)
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                         if isinstance(child, ast.expr))

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
            return self.checked(node, sympy.Integer(v))
        if type(v) is float:
            if not math.isfinite(v):
                self.refuse(node, f"the number {v!r} is not finite")
            return sympy.Float(v)
        self.refuse(node, _describe(node))

    def checked(self, node: ast.AST, value: sympy.Basic) -> sympy.Basic:
        """``value`` if it is not a number beyond the limits: an exact one of more than
        :data:`MAX_DIGITS` digits, a float beyond double precision, an infinity."""
        if value.is_Rational:
            digits = _digits(value)
            if digits > MAX_DIGITS:
                self.refuse(node, f"an exact number of {digits} digits; valid: at most "
                                  f"{MAX_DIGITS} digits", limit=True)
        elif value.is_Float:
            if not math.isfinite(float(value)):
                self.refuse(node, f"a number of about {_size(value)} is beyond double "
                                  f"precision; valid: at most 1.8e308 in magnitude",
                            limit=True)
        elif value in (sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
            self.refuse(node, f"its value is {value}; valid: a finite number", limit=True)
        elif value.is_number:              # (pi**(10**9), exp(exp(10)): exact, and huge)
            k = _decimal_exponent(value)
            if k is not None and abs(k) > MAX_DIGITS:
                self.refuse(node, f"an exact number of about 1e{k}; valid: within "
                                  f"1e-{MAX_DIGITS} to 1e{MAX_DIGITS} in magnitude (sympy "
                                  f"would evaluate it, or powers of it, to that many "
                                  f"digits)", limit=True)
        for part in (value, *value.args) if value.is_Mul or value.is_Add else (value,):
            if part.is_Pow and part.exp.is_Rational:      # (also as sympy combined them)
                self.check_exponent(node, part.base, part.exp)
            elif part.is_Rational and part is not value and _digits(part) > MAX_DIGITS:
                # (a coefficient sympy combined: (2**3000 x)**5 holds 2**15000)
                self.refuse(node, f"an exact number of {_digits(part)} digits; valid: at "
                                  f"most {MAX_DIGITS} digits", limit=True)
        return value

    def check_exponent(self, node: ast.AST, base: sympy.Basic,
                       exponent: sympy.Rational) -> None:
        """Refuse an exact exponent beyond :data:`MAX_EXPONENT`: a fraction p/q with
        |p| or q larger (on any base), an integer larger in magnitude on an expression
        of symbols. Symbolic equations expand and simplify such powers as polynomials of
        that degree: (t + 1)**1000 has 1001 terms, 3**(1/10**9) a degree of 10**9."""
        p, q = abs(int(exponent.p)), int(exponent.q)
        if (q > 1 and max(p, q) > MAX_EXPONENT) or (q == 1 and base.free_symbols and
                                                    p > MAX_EXPONENT):
            what = "of an expression of symbols" if base.free_symbols else "of a number"
            self.refuse(node, f"the exact exponent {exponent} {what}; valid: an integer of "
                              f"at most {MAX_EXPONENT} in magnitude (on numbers, any with "
                              f"at most {MAX_DIGITS} digits in the result) or a fraction "
                              f"p/q with |p| and q at most {MAX_EXPONENT}; a decimal "
                              f"exponent (0.001) is a floating-point number", limit=True)

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
                return self.checked(node, a ** b)
            if op is ast.Add:
                return self.checked(node, a + b)
            if op is ast.Sub:
                return self.checked(node, a - b)
            if op is ast.Mult:
                return self.checked(node, a * b)
            if b == 0:
                self.refuse(node, "a division by zero")
            return self.checked(node, a / b)
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
                value = FUNCTIONS[fname](*args)
            except (TypeError, ValueError) as exc:
                self.refuse(node, f"{fname}() with {len(args)} argument(s): {exc}")
            return self.checked(node, value)
        if isinstance(node, ast.List):
            self.refuse(node, "a list inside an expression (lists are allowed only as the "
                              "whole value)")
        self.refuse(node, _describe(node))

    def check_power(self, node: ast.AST, base: sympy.Basic, exponent: sympy.Basic) -> None:
        """Refuse, before sympy computes it, a power of exact numbers whose result would
        have more than :data:`MAX_DIGITS` digits (``9**9**9``, ``(1/3)**(10**9)``,
        ``((1/3)**(1/3))**(10**300)``: sympy computes them exactly, for hours), and zero
        to a negative power."""
        if base == 0 and exponent.is_Number and exponent.is_negative:
            self.refuse(node, "zero to a negative power (a division by zero)", limit=True)
        if exponent.is_Rational and base.is_number and base.has(sympy.Float) and \
                abs(exponent) > MAX_FLOAT_EXPONENT:
            # (mpmath's power takes time in the exponent's bits: (1e-300)**(2**3000)
            # ran for seconds, for 0.0)
            self.refuse(node, f"a floating-point number to the exact power of about "
                              f"{_size(sympy.Float(exponent, 3))}; valid: an exponent of "
                              f"at most {MAX_FLOAT_EXPONENT:.0e} in magnitude (beyond it "
                              f"the power is 0, 1 or beyond double precision)", limit=True)
        if exponent.is_Rational:
            self.check_exponent(node, base, exponent)
        if not exponent.is_Rational or not base.is_number:
            return
        # sympy expands a power of exact numbers at once: (p/q)**e to p**e / q**e, and a
        # power of c**r (or of a product of them, ((1/3)**(1/3))**(10**300)) to c**(r e)
        # whose whole part it computes exactly; the digits those take
        digits = 0.0
        for factor in (base.args if base.is_Mul else (base,)):
            c, r = (factor.base, factor.exp) if factor.is_Pow else (factor, sympy.S.One)
            if c.is_Rational and r.is_Rational and abs(c) != 1 and c != 0:
                digits += abs(float(r * exponent)) * \
                    math.log10(max(abs(int(c.p)), int(c.q)))
        if digits > MAX_DIGITS:
            self.refuse(node, f"a power of exact numbers of about {digits:.3g} digits; "
                              f"valid: at most {MAX_DIGITS} digits (with a decimal point, "
                              f"as in (1.0/3)**n, the power is a floating-point number)", limit=True)


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
        with signal_safe():
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ModelError(f"{where}: expression {reader._short()!r} is not valid{col}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise ModelError(f"{where}: expression {reader._short()!r} is nested too deeply to "
                         f"read; valid: at most {MAX_DEPTH} levels (a chain a + b + c nests "
                         f"one level per +)") from None
    except (ValueError, MemoryError) as exc:
        raise ModelError(f"{where}: expression {reader._short()!r} cannot be read: "
                         f"{type(exc).__name__}: {exc}") from None
    reader.measure(tree.body)
    try:
        return reader.top(tree.body)
    except RecursionError:
        raise ModelError(f"{where}: expression {reader._short()!r} is nested too deeply; "
                         f"valid: at most {MAX_DEPTH} levels") from None


def _size(value: sympy.Float) -> str:
    """``value``'s order of magnitude as text, without printing its digits (its
    exponent may itself have hundreds of digits)."""
    k = _decimal_exponent(value)
    return f"1e{k}" if abs(k) < 10 ** 12 else f"10**(10**{len(str(abs(k))) - 1})"


def _decimal_exponent(value: sympy.Basic) -> int | None:
    """The decimal exponent of a number (Float, or an exact constant evaluated to 15
    digits; the largest of its real and imaginary parts); None for zero or what does
    not evaluate."""
    if not value.is_Float:
        try:
            value = value.evalf(15)
        except (ArithmeticError, TypeError, ValueError):
            return None
    parts = [value] if value.is_Float else [p for p in value.as_real_imag() if p.is_Float]
    exps = [(p._mpf_[2] + p._mpf_[3]) * 30103 // 100000 for p in parts if p._mpf_[1]]
    return max(exps, key=abs) if exps else None


def _digits(value: sympy.Rational) -> int:
    """The digits of an exact number: of its numerator or denominator, the longer (from
    their bit lengths: exact to one digit, without printing)."""
    bits = max(abs(int(value.p)).bit_length(), int(value.q).bit_length())
    return int(bits * math.log10(2)) + 1


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
