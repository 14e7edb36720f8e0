"""C text for an exported FMU's generated model file: arrays and sympy expressions.

- :func:`array`: a constant C array of numbers (doubles written with 17 significant
  digits, so that they read back as the same doubles).
- :func:`string`: a C string literal.
- :class:`CFunction`: the body of a generated C function that assigns sympy
  expressions (common subexpressions shared) and checks that they are finite, naming
  the element in its message.

Symbols are written as the C expressions a mapping gives them (``p[3]`` for a
parameter, ``x[5]`` for a state, ``t``); an expression with a function C has no
equivalent is refused by :func:`c_code`, naming the element.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import sympy
from sympy.printing.c import C99CodePrinter

from ..errors import ModelError

__all__ = ["array", "string", "scalar", "c_code", "CFunction"]


def _number(v: float) -> str:
    v = float(v)
    if not np.isfinite(v):
        raise ModelError(f"a value of the model is not finite ({v}); it cannot be exported")
    text = repr(v)
    return text if any(c in text for c in ".eE") else text + ".0"


def array(ctype: str, name: str, values: Iterable, per_line: int = 8) -> str:
    """``const <ctype> <name>[] = {...};`` (one zero for an empty array: C has no empty
    arrays; the count is exported separately)."""
    vals = list(np.asarray(list(values) if not isinstance(values, np.ndarray) else values)
                .ravel())
    if ctype == "double":
        items = [_number(v) for v in vals]
    else:
        items = [str(int(v)) for v in vals]
    if not items:
        items = ["0"]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    body = ",\n    ".join(lines)
    return f"const {ctype} {name}[] = {{\n    {body}}};\n"


def scalar(ctype: str, name: str, value) -> str:
    """``const <ctype> <name> = value;``"""
    text = _number(value) if ctype == "double" else str(int(value))
    return f"const {ctype} {name} = {text};\n"


def string(text: str) -> str:
    """A C string literal of ``text``."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + "".join(c if 32 <= ord(c) < 127 else f"\\{ord(c):03o}" for c in out) + '"'


class _Printer(C99CodePrinter):
    """C99 with every float at 17 significant digits (the double it came from)."""

    def _print_Float(self, expr):
        return _number(float(expr))


def c_code(expr: sympy.Basic, names: Mapping[sympy.Symbol, str], owner: str) -> str:
    """C text of ``expr`` with its symbols written as ``names`` says.

    Raises
    ------
    ModelError
        Naming ``owner`` when the expression has a symbol without a name (an unknown
        parameter) or a function C does not have.
    """
    expr = sympy.sympify(expr)
    by_name = {s.name: c for s, c in names.items()}
    free = expr.free_symbols
    missing = sorted(s.name for s in free if s.name not in by_name)
    if missing:
        raise ModelError(f"{owner}: symbol(s) {', '.join(missing)} have no value in the "
                         f"exported model (valid: its parameters, its own variables)")
    expr = expr.xreplace({s: sympy.Symbol(by_name[s.name]) for s in free})
    try:
        return _Printer({"strict": True}).doprint(expr)
    except Exception as exc:   # noqa: BLE001 - sympy's printer errors are plain exceptions
        raise ModelError(f"{owner}: its law {expr} cannot be written in C ({exc}); write it "
                         f"with elementary functions") from None


class CFunction:
    """Assignments of sympy expressions to C lvalues, with the subexpressions they share
    computed once; :meth:`text` gives the statements, each checked finite.

    Parameters
    ----------
    names : mapping of sympy.Symbol to str
        How each symbol is written in C.
    """

    def __init__(self, names: Mapping[sympy.Symbol, str]):
        self.names = dict(names)
        self._targets: list[tuple[str, sympy.Basic, str]] = []

    def assign(self, target: str, expr, owner: str) -> None:
        """``target = expr;`` (``owner`` names the element in messages)."""
        self._targets.append((target, sympy.sympify(expr), owner))

    def assign_all(self, targets: Sequence[str], exprs: Sequence, owner: str) -> None:
        for t, e in zip(targets, exprs):
            self.assign(t, e, owner)

    def text(self, indent: str = "    ") -> str:
        """The C statements: temporaries, assignments, finiteness checks (``return
        bg_fail(m, ...)`` naming the element)."""
        if not self._targets:
            return ""
        exprs = [e for _, e, _ in self._targets]
        reps, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols("_c"),
                                  optimizations=None)
        names = dict(self.names)
        lines = []
        owner0 = self._targets[0][2]
        for sym, sub in reps:
            cname = sym.name
            lines.append(f"{indent}const double {cname} = "
                         f"{c_code(sub, names, owner0)};")
            names[sym] = cname
        for (target, _, owner), e in zip(self._targets, reduced):
            lines.append(f"{indent}{target} = {c_code(e, names, owner)};")
            lines.append(f"{indent}if (!isfinite({target})) return bg_fail(m, "
                         f"{string(owner + ': its value is not finite here')});")
        return "\n".join(lines) + "\n"
