"""Nonlinear constitutive laws given as sympy expressions: energies of storage elements,
resistor laws and source values of time.

- :class:`EnergyLaw`: a storage element's stored energy H(x) (J) as an expression of its
  own state; its co-energy variable (effort of a C, flow of an I) is dH/dx and the
  tangent d2H/dx2 enters Eq. (15).
- :class:`VectorLaw`: an output vector as an expression of an input vector (a resistor's
  e = phi(f) or f = g(e)), with its Jacobian.
- :class:`TimeLaw`: a known value as an expression of time ``t`` (s), with its exact
  rate.
- :class:`SourceTiming`: what a value of time says about stepping through it: its
  shortest period (sines and cosines of ``t``) and its breaks, the times where it jumps
  or has a kink (Heaviside, sign, Abs, Min, Max, Piecewise of ``t``).

Every law is written once, symbolically, and compiled (:func:`compile_numeric`, the one
evaluator of expressions: ``sympy.lambdify`` to numpy) when a model binds the values of
its parameters: the symbols of a law that are neither its own variables nor ``t`` are
parameters, resolved by name like any other symbolic parameter. Evaluated, ``Heaviside(0)``
is 1/2 (sympy's value; ``Heaviside(x, 1)`` makes it 1), ``sign(0)`` is 0, the Dirac terms of
their derivatives are zero, and a value that is not finite (``1/t`` at t = 0) is a
:class:`~bondgraph.ModelError` naming the element, never a Python exception.

Variable names: an element's own variables are ``q`` (C), ``p`` (I), ``f`` (a law of the
flow), ``e`` (a law of the effort) for one dimension, and ``q1``, ``q2``, ... for
several.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import sympy
from sympy.printing.numpy import NumPyPrinter

from .errors import ModelError, NonFiniteLawError

__all__ = ["law_symbols", "EnergyLaw", "VectorLaw", "TimeLaw", "SourceTiming", "is_law",
           "TIME", "compile_numeric", "compile_batch"]

TIME = sympy.Symbol("t", real=True)
"""The symbol of time in source expressions (real: ``Abs(t - 1)`` has the derivative
``sign(t - 1)``); a plain ``Symbol("t")`` of a user's expression is taken for it by name."""


class _NumericPrinter(NumPyPrinter):
    """numpy code of a law. ``Heaviside`` is ``numpy.heaviside`` with its value at 0
    (sympy's 1/2, or the second argument): sympy's own printer rewrites it into nested
    conditions, exponentially many when its argument holds a Min or Max."""

    def _print_Float(self, expr):
        # the double the Float stands for, in full (sympy prints a Float of 53 bits with
        # 15 digits: 4 pi came out as 12.5663706143592, 2.2e-15 off, and a rate
        # 37.7 cos(12.6 t) 7e-14 off at t = 2.5)
        v = float(expr)
        return repr(v) if np.isfinite(v) else super()._print_Float(expr)

    def _print_Heaviside(self, expr):
        at_zero = expr.args[1] if len(expr.args) > 1 else sympy.Rational(1, 2)
        return (f"{self._module_format('numpy.heaviside')}({self._print(expr.args[0])}, "
                f"{self._print(sympy.Float(at_zero))})")


def _no_dirac(exprs: sympy.Matrix) -> sympy.Matrix:
    """``exprs`` with the Dirac terms of the derivatives of ``sign``, ``Heaviside`` and
    ``Abs`` dropped (they vanish wherever the expression is smooth)."""
    return exprs.replace(sympy.DiracDelta, lambda *a: sympy.Integer(0))


def _degree(g: sympy.Basic) -> float:
    """The degree of ``g`` as a polynomial in ``t``, read from its tree without
    expanding it ((t + 1)**(10**9) is 1e9, not a billion terms); inf where it is not a
    polynomial in t."""
    if TIME not in g.free_symbols:
        return 0
    if g == TIME:
        return 1
    if isinstance(g, sympy.Add):
        return max(_degree(a) for a in g.args)
    if isinstance(g, sympy.Mul):
        return sum(_degree(a) for a in g.args)
    if isinstance(g, sympy.Pow) and g.exp.is_Integer and g.exp >= 0:
        return _degree(g.base) * int(g.exp)
    return float("inf")


def _polynomial_zeros(g: sympy.Expr, max_degree: int = 20) -> list[float]:
    """The real zeros of ``g`` where it is a polynomial in ``t`` with number coefficients
    (degree 1 to ``max_degree``), else none: found exactly where sampling a span can
    miss them (two zeros between two samples: Heaviside((t - a) (b - t)), a pulse
    shorter than the samples' spacing, was stepped over). The roots of the companion
    matrix, polished by two Newton steps."""
    if TIME not in g.free_symbols or not 1 <= _degree(g) <= max_degree:
        return []
    try:
        coeffs = [complex(a) for a in sympy.Poly(g, TIME).all_coeffs()]
    except (sympy.PolynomialError, TypeError, ValueError, OverflowError):
        return []
    c = np.array(coeffs)
    if not 2 <= c.size <= max_degree + 1 or not np.all(np.isfinite(c)) or c[0] == 0 or \
            np.any(c.imag != 0):
        return []
    c = c.real
    with np.errstate(all="ignore"):
        z = np.roots(c)
        z = z[np.abs(z.imag) <= 1e-9 * np.maximum(1.0, np.abs(z))].real
        dc = np.polyder(c)
        for _ in range(2):
            d = np.polyval(dc, z)
            z = np.where(d != 0, z - np.polyval(c, z) / np.where(d != 0, d, 1.0), z)
    return [float(v) for v in z if np.isfinite(v)]


def _sampled(f: Callable[[np.ndarray], Any], tt: np.ndarray | np.float64) -> np.ndarray:
    """A stepping hint ``f`` (:func:`_of_time`) at the times ``tt``, as floats of their
    shape: NaN where it cannot be computed (a term numpy cannot take, such as the log of
    an integer beyond 64 bits in d/dt (10**300)**(1/t), raised TypeError and ended a run
    as an internal error), which the callers skip as any value that is not finite."""
    with np.errstate(all="ignore"):
        try:
            return np.broadcast_to(np.asarray(f(tt), dtype=float), np.shape(tt))
        except (TypeError, ValueError, ArithmeticError):
            return np.full(np.shape(tt), np.nan)


def _of_time(expr: sympy.Expr) -> Callable[[np.ndarray], Any]:
    """A vectorised numpy function of time for the stepping hints (periods, kinks),
    printed as :func:`compile_numeric` prints (Heaviside as numpy's, Dirac terms
    dropped); not-finite values are the caller's to skip."""
    printer = _NumericPrinter({"fully_qualified_modules": False, "inline": True,
                               "allow_unknown_functions": True, "user_functions": {}})
    return sympy.lambdify([TIME], _no_dirac(sympy.Matrix([expr]))[0], "numpy",
                          printer=printer)


def compile_numeric(variables: Sequence[sympy.Symbol], exprs: sympy.Matrix, owner: str,
                    what: str, shape: tuple[int, ...] | None = None
                    ) -> Callable[..., np.ndarray]:
    """``exprs`` (numbers for every symbol but ``variables``) as a numeric function of the
    variables' values, returning a float array of ``shape`` (default: one entry per
    expression). The one way this package evaluates a symbolic law, source of time or
    modulus:

    - the arguments are taken as numpy floats, so a division by zero or an overflow is
      an infinity, not a Python exception;
    - ``Heaviside(0)`` is 1/2 (sympy's) unless given as ``Heaviside(x, h0)``;
      ``sign(0)`` is 0; the Dirac terms of derivatives are zero;
    - a result that is not finite raises a :class:`~bondgraph.NonFiniteLawError` (a
      :class:`~bondgraph.ModelError`) naming
      ``owner``, ``what`` and the variables' values.
    """
    exprs = _no_dirac(sympy.Matrix(exprs))
    shape = (exprs.shape[0] * exprs.shape[1],) if shape is None else tuple(shape)
    names = ", ".join(v.name for v in variables)
    try:
        printer = _NumericPrinter({"fully_qualified_modules": False, "inline": True,
                                   "allow_unknown_functions": True, "user_functions": {}})
        f = sympy.lambdify(list(variables), list(exprs), "numpy", printer=printer)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise ModelError(f"element '{owner}': its {what} cannot be evaluated numerically "
                         f"({type(exc).__name__}: {exc})") from None

    def shown(values) -> str:                # (one number without brackets)
        v = [float(a) for a in np.ravel(values)]
        return f"{v[0]!r}" if len(v) == 1 else f"{v}"

    def evaluate(*x) -> np.ndarray:
        args = [np.float64(v) for v in x]
        with np.errstate(all="ignore"):
            try:
                out = np.asarray(f(*args), dtype=float)
            except (ArithmeticError, TypeError, ValueError) as exc:
                raise NonFiniteLawError(f"element '{owner}': its {what} cannot be evaluated at "
                                 f"{names} = {shown(args)}: "
                                 f"{type(exc).__name__}: {exc}") from None
        out = out.reshape(shape)
        if not np.isfinite(out).all():      # (the method: np.all costs 3 us more)
            raise NonFiniteLawError(f"element '{owner}': its {what} is not finite at {names} = "
                             f"{shown(args)} (got {shown(out)})")
        return out

    evaluate.raw = f              # (the lambdified function, for tangent_or_zero)
    return evaluate


def compile_batch(parts: Sequence[tuple[Sequence[sympy.Symbol], sympy.Matrix]],
                  what: str) -> Callable[..., np.ndarray]:
    """Several laws as one numeric function (:func:`compile_numeric`'s rules): ``parts``
    holds each law's variables and its expressions (numbers for its parameters); the
    function takes every law's variables in that order and returns every expression's
    value, in that order (one Python call instead of one per law: a network of many
    nonlinear elements). Its :class:`~bondgraph.NonFiniteLawError` names no element
    (``what`` only): a caller that needs the name evaluates the laws one by one."""
    variables, exprs = [], []
    for k, (own, column) in enumerate(parts):
        fresh = sympy.symbols(f"v{k}_0:{len(own)}", real=True)
        variables += fresh
        exprs += list(sympy.Matrix(column).xreplace(dict(zip(own, fresh))))
    return compile_numeric(variables, sympy.Matrix(exprs), what, what)


def law_symbols(prefix: str, dim: int) -> tuple[sympy.Symbol, ...]:
    """The variables of a law: ``(prefix,)`` for one dimension, ``prefix1..prefixN``
    for ``dim`` = N."""
    if dim == 1:
        return (sympy.Symbol(prefix, real=True),)
    return tuple(sympy.Symbol(f"{prefix}{i + 1}", real=True) for i in range(dim))


def _by_name(exprs: sympy.Matrix, own: Sequence[sympy.Symbol]) -> sympy.Matrix:
    """``exprs`` with every symbol named like one of ``own`` replaced by it (a user's
    ``Symbol("q")`` and the law's real ``q`` are one variable)."""
    names = {s.name: s for s in own}
    subs = {s: names[s.name] for e in exprs for s in e.free_symbols
            if s.name in names and s != names[s.name]}
    return exprs.xreplace(subs) if subs else exprs


def _derivative(exprs: sympy.Matrix, variables: Sequence[sympy.Symbol], owner: str,
                what: str) -> sympy.Matrix:
    """The Jacobian of ``exprs``, with the Dirac terms of sign/Heaviside dropped (they
    vanish wherever the law is smooth)."""
    jac = _no_dirac(exprs.jacobian(sympy.Matrix(variables)))
    if jac.has(sympy.Derivative):
        raise ModelError(f"element '{owner}': {what} has no closed-form derivative "
                         f"({jac}); write it with elementary functions of "
                         f"{', '.join(v.name for v in variables)}")
    return jac


def is_law(value: Any) -> bool:
    """True when ``value`` is a sympy expression, or a list of them, that a law accepts."""
    if isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return True
    if isinstance(value, (list, tuple)) and value:
        return any(isinstance(v, sympy.Basic) for v in value)
    return False


def _as_column(value: Any, dim: int, owner: str, what: str) -> sympy.Matrix:
    if isinstance(value, sympy.MatrixBase):
        col = sympy.Matrix(value).reshape(len(value), 1)
    elif isinstance(value, (list, tuple, np.ndarray)):
        col = sympy.Matrix([sympy.sympify(v) for v in np.asarray(value, dtype=object).ravel()])
    else:
        col = sympy.Matrix([sympy.sympify(value)])
    if col.shape[0] != dim:
        raise ModelError(f"element '{owner}': {what} has {col.shape[0]} component(s); valid: "
                         f"{dim} (one per port dimension)")
    return col


def _parameters_of(exprs: Sequence[sympy.Basic], own: Sequence[sympy.Symbol]
                   ) -> tuple[str, ...]:
    names = set()
    for e in exprs:
        names |= {s.name for s in e.free_symbols}
    return tuple(sorted(names - {s.name for s in own}))


def _bind(exprs: sympy.Matrix, own: Sequence[sympy.Symbol], parameters: Sequence[str],
          values: Mapping[str, float] | None, owner: str, what: str) -> sympy.Matrix:
    """``exprs`` with every parameter replaced by its value (by symbol name)."""
    missing = [n for n in parameters if values is None or n not in values]
    if missing:
        raise ModelError(f"element '{owner}': {what} needs values for symbol(s) "
                         f"{', '.join(missing)} (its own variables are "
                         f"{', '.join(s.name for s in own)}): pass them as parameters={{...}} "
                         f"or declare them with BondGraph.add_parameter")
    if not parameters:
        return exprs
    subs = {s: sympy.Float(float(values[s.name])) for e in exprs for s in e.free_symbols
            if s.name in parameters}
    return exprs.xreplace(subs)


def _check_variables(exprs: Sequence[sympy.Basic], own: Sequence[sympy.Symbol], owner: str,
                     what: str, needs_own: bool = False) -> None:
    bad = [e for e in exprs if e.has(sympy.I) or e.has(sympy.zoo) or e.has(sympy.nan)]
    if bad:
        raise ModelError(f"element '{owner}': {what} {bad[0]} is not a real expression")
    if any(s.name == TIME.name for e in exprs for s in e.free_symbols) and TIME not in own:
        raise ModelError(f"element '{owner}': {what} depends on time 't'; a law of an element "
                         f"must be a function of its own variables "
                         f"({', '.join(s.name for s in own)}) and parameters only")
    if needs_own and not any(e.free_symbols & set(own) for e in exprs):
        raise ModelError(f"element '{owner}': {what} does not depend on "
                         f"{', '.join(s.name for s in own)}; valid: an expression of them")


class EnergyLaw:
    """Stored energy H(x) (J) of a storage element as a sympy expression of its state.

    The element's co-energy variable is dH/dx (its effort for a C, its flow for an I),
    its tangent d2H/dx2. ``H = q**2/2 + q**4/4`` gives the Duffing spring e = q + q^3.

    Parameters
    ----------
    energy : sympy expression
        In the element's variables (:func:`law_symbols` of ``prefix`` and ``dim``) and
        parameters.
    prefix : str
        ``"q"`` for a C, ``"p"`` for an I.
    dim : int
    owner : str
        The element's name (for messages).
    """

    def __init__(self, energy: Any, prefix: str, dim: int, owner: str):
        if not isinstance(energy, sympy.Basic) or isinstance(energy, sympy.MatrixBase):
            raise ModelError(f"element '{owner}': energy must be one sympy expression (a "
                             f"scalar, J) of {', '.join(s.name for s in law_symbols(prefix, dim))}"
                             f", got {type(energy).__name__} {energy!r}")
        self.owner = owner
        self.variables = law_symbols(prefix, dim)
        self.expression = _by_name(sympy.Matrix([energy]), self.variables)[0]
        _check_variables([self.expression], self.variables, owner, "energy", needs_own=True)
        self.parameters = _parameters_of([self.expression], self.variables)
        self.gradient = _derivative(sympy.Matrix([self.expression]), self.variables, owner,
                                    "energy").T
        self.hessian = _derivative(self.gradient, self.variables, owner, "energy")

    def bind(self, values: Mapping[str, float] | None) -> "BoundEnergy":
        """The numeric law with the parameters' ``values``."""
        m = _bind(sympy.Matrix([self.expression, *self.gradient, *self.hessian]),
                  self.variables, self.parameters, values, self.owner, "energy")
        d, v, o = len(self.variables), self.variables, self.owner
        law = BoundEnergy(compile_numeric(v, m[:1, :], o, "energy", ()),
                          compile_numeric(v, m[1:1 + d, :], o, "energy's gradient", (d,)),
                          compile_numeric(v, m[1 + d:, :], o, "energy's tangent", (d, d)),
                          d, self.owner)
        law.variables, law.coenergy_expressions = v, m[1:1 + d, :]
        return law


class BoundEnergy:
    """An :class:`EnergyLaw` with numbers for its parameters: ``energy(x)`` (J),
    ``coenergy(x)`` (dH/dx, shape (dim,)), ``tangent(x)`` (d2H/dx2, (dim, dim));
    ``variables`` and ``coenergy_expressions`` (the gradient as sympy expressions of
    them, numbers for the parameters: for evaluating many laws in one call)."""

    variables: tuple = ()
    coenergy_expressions: Any = None

    def __init__(self, h, grad, hess, dim: int, owner: str):
        self._h, self._g, self._k, self.dim, self.owner = h, grad, hess, dim, owner

    def energy(self, x: np.ndarray) -> float:
        return float(self._h(*x))

    def coenergy(self, x: np.ndarray) -> np.ndarray:
        return self._g(*x)

    def tangent(self, x: np.ndarray) -> np.ndarray:
        return self._k(*x)


class VectorLaw:
    """An output vector as sympy expressions of an input vector (a resistor's law).

    Parameters
    ----------
    law : sympy expression (dim 1) or sequence of ``dim`` expressions
    prefix : str
        The input's variable name (``"f"``: the law gives the effort from the flow;
        ``"e"``: the flow from the effort).
    dim : int
    owner, what : str
        The element and the keyword (for messages).
    """

    def __init__(self, law: Any, prefix: str, dim: int, owner: str, what: str):
        self.owner, self.what = owner, what
        self.variables = law_symbols(prefix, dim)
        self.expressions = _by_name(_as_column(law, dim, owner, what), self.variables)
        _check_variables(list(self.expressions), self.variables, owner, what)
        self.parameters = _parameters_of(list(self.expressions), self.variables)
        self.jacobian = _derivative(self.expressions, self.variables, owner, what)

    def bind(self, values: Mapping[str, float] | None) -> "BoundVector":
        """The numeric law with the parameters' ``values``."""
        d, v, o, w = len(self.variables), self.variables, self.owner, self.what
        m = _bind(sympy.Matrix([*self.expressions, *self.jacobian]), self.variables,
                  self.parameters, values, self.owner, self.what)
        law = BoundVector(compile_numeric(v, m[:d, :], o, w, (d,)),
                          compile_numeric(v, m[d:, :], o, f"{w}'s Jacobian", (d, d)), d,
                          self.owner)
        law.variables, law.expressions = v, m[:d, :]
        return law


class BoundVector:
    """A :class:`VectorLaw` with numbers for its parameters: ``value(x)`` (dim,) and
    ``jacobian(x)`` (dim, dim); ``variables`` and ``expressions`` (the law as sympy
    expressions of them, numbers for the parameters: for evaluating many laws in one
    call)."""

    variables: tuple = ()
    expressions: Any = None

    def __init__(self, f, jac, dim: int, owner: str):
        self._f, self._j, self.dim, self.owner = f, jac, dim, owner

    def value(self, x: np.ndarray) -> np.ndarray:
        return self._f(*x)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        return self._j(*x)

    def tangent_or_zero(self, x: np.ndarray) -> np.ndarray:
        """The Jacobian at ``x``, or zeros where it is not finite (the slope of
        ``sqrt`` at 0): Newton's method then takes a fixed-point step there."""
        with np.errstate(all="ignore"):
            try:
                jac = np.asarray(self._j.raw(*[np.float64(v) for v in x]), dtype=float)
            except (ArithmeticError, TypeError, ValueError):
                return np.zeros((self.dim, self.dim))
        jac = jac.reshape(self.dim, self.dim)
        return np.where(np.isfinite(jac), jac, 0.0)


class TimeLaw:
    """A known value as sympy expression(s) of time ``t`` (s) and parameters, with its
    exact rate d/dt."""

    def __init__(self, value: Any, dim: int, owner: str, what: str):
        self.owner, self.what = owner, what
        arr = np.asarray(value, dtype=object)
        if arr.ndim == 0 and dim > 1:
            value = [value] * dim
        self.expressions = _by_name(_as_column(value, dim, owner, what), (TIME,))
        self.parameters = _parameters_of(list(self.expressions), (TIME,))
        # the rate with t real (so that Abs, sign and Heaviside of t have closed-form
        # derivatives) and their Dirac terms dropped, as for the laws of state
        real_t = sympy.Symbol(TIME.name, real=True)
        rates = self.expressions.xreplace({TIME: real_t}).diff(real_t)
        self.rates = rates.replace(sympy.DiracDelta, lambda *a: sympy.Integer(0)).xreplace(
            {real_t: TIME})

    def bound(self, values: Mapping[str, float] | None) -> sympy.Matrix:
        """The values, then the rates, with the parameters' ``values``: a column of
        2 dim expressions of ``t`` alone."""
        return _bind(sympy.Matrix([*self.expressions, *self.rates]), (TIME,),
                     self.parameters, values, self.owner, self.what)

    def bind(self, values: Mapping[str, float] | None, bound: sympy.Matrix | None = None):
        """``(value(t), rate(t))`` as numeric functions returning arrays (dim,)
        (``bound``: :meth:`bound`'s column, where the caller has it)."""
        d = self.expressions.shape[0]
        m = self.bound(values) if bound is None else bound
        return (compile_numeric((TIME,), m[:d, :], self.owner, self.what, (d,)),
                compile_numeric((TIME,), m[d:, :], self.owner, f"{self.what}'s rate", (d,)))

    def timing(self, values: Mapping[str, float] | None) -> "SourceTiming | None":
        """The :class:`SourceTiming` of the value with the parameters' ``values``."""
        m = _bind(self.expressions, (TIME,), self.parameters, values, self.owner, self.what)
        return SourceTiming.of(list(m))


class SourceTiming:
    """What a known value of time says about stepping through it (see the module
    docstring): a solver that steps over a period, or across a jump, of a source sees
    neither (a rectifier's diode pulses, a step input between two steps).

    Parameters
    ----------
    period : float, optional
        The value's period (s), when it is known as a number (a TimeFunction's).
    times : sequence of float
        Times (s) where the value jumps or has a kink, when known as numbers.
    rates : sequence of callables
        ``rate(t)``: the angular rate |d arg/dt| (rad/s) of each periodic part
        ``sin(arg(t))``; the period is 2 pi over the largest rate over a span.
    kinks : sequence of callables
        ``g(t)``: the value jumps or has a kink where g changes sign.
    hints : sequence of sequences of float
        For each kink, times (s) to sample it at besides the span's samples (a
        polynomial argument's zeros and the midpoints between them: two zeros closer
        than the samples, a short pulse, are then seen as two sign changes).
    """

    SAMPLES = 257
    """Points of a span at which rates are sampled and arguments searched for zeros (at
    least; 32 per period of the fastest periodic part)."""

    MAX_BREAKS = 100_000
    """Breaks found in one span at most (more: the first ones are kept)."""

    def __init__(self, period: float | None = None, times=(), rates=(), kinks=(),
                 hints=()):
        self._period = period
        self._times = np.asarray(sorted(float(t) for t in times), dtype=float)
        self._rates = tuple(rates)
        self._kinks = tuple(kinks)
        self._hints = tuple(np.sort(np.asarray(h, dtype=float)) for h in hints) or \
            tuple(np.zeros(0) for _ in self._kinks)

    @classmethod
    def of(cls, expressions: Sequence[sympy.Basic]) -> "SourceTiming | None":
        """The timing of sympy expressions of ``t`` with numbers for their parameters
        (None when they have neither a periodic part nor a break)."""
        rates, kinks, hints = [], [], []
        for e in expressions:
            for f in sympy.preorder_traversal(e):
                if not isinstance(f, sympy.Basic) or TIME not in f.free_symbols:
                    continue
                if isinstance(f, (sympy.sin, sympy.cos, sympy.tan, sympy.cot, sympy.sec,
                                  sympy.csc)):
                    # (tan and cot repeat twice as often as sin and cos)
                    twice = 2 if isinstance(f, (sympy.tan, sympy.cot)) else 1
                    rate = sympy.diff(f.args[0], TIME) * twice
                    rates.append(_of_time(sympy.Abs(rate)))
                    continue
                args: list[sympy.Basic] = []
                if isinstance(f, (sympy.Heaviside, sympy.sign, sympy.Abs)):
                    args = [f.args[0]]
                elif isinstance(f, (sympy.Min, sympy.Max)):
                    args = [a - f.args[0] for a in f.args[1:]]
                elif isinstance(f, sympy.Piecewise):
                    args = [r.lhs - r.rhs for _, c in f.args
                            for r in sympy.preorder_traversal(c)
                            if isinstance(r, sympy.core.relational.Relational)]
                for g in args:
                    if TIME in g.free_symbols:
                        kinks.append(_of_time(g))
                        hints.append(_polynomial_zeros(g))
        if not rates and not kinks:
            return None
        return cls(rates=rates, kinks=kinks, hints=hints)

    def period(self, t0: float, t1: float) -> float | None:
        """The shortest period (s) of the value over [t0, t1] (None: not periodic)."""
        best = self._period
        if self._rates:
            tt = np.linspace(t0, t1, self.SAMPLES)
            for rate in self._rates:
                w = _sampled(rate, tt)
                w = w[np.isfinite(w)]
                if w.size and w.max() > 0:
                    p = 2 * np.pi / float(w.max())
                    best = p if best is None else min(best, p)
        return best

    def breaks(self, t0: float, t1: float) -> np.ndarray:
        """The times (s) in [t0, t1) where the value jumps or has a kink after t0,
        sorted: each the last float of the value before it (:meth:`segments`' ends)."""
        return self.segments(t0, t1)[0]

    def segments(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
        """(ends, starts): where the value jumps or has a kink after t0 and before t1,
        sorted, the last float of the value before each (a run's segment ends there) and
        the first float of the value after it (the next segment starts there), so that
        no stage of either sees the other side's value, nor Heaviside's 1/2 where its
        argument is 0. A given time (a TimeFunction's ``breaks``, whose Python function
        may take either side there: ``t >= time`` or ``t > time``) is in neither: the
        float before it ends a segment, the float after it starts the next;
        the zeros of the arguments of Heaviside, sign, Abs, Min, Max and Piecewise's
        conditions are located by Brent's method between samples at least 32 per period
        of the fastest periodic part apart, then to the float (:func:`_around_zero`)."""
        from scipy.optimize import brentq
        ends = [np.nextafter(self._times, -np.inf)]
        starts = [np.nextafter(self._times, np.inf)]
        if self._kinks:
            p = self.period(t0, t1)
            n = self.SAMPLES if p is None else \
                int(min(max(self.SAMPLES, 32 * (t1 - t0) / p + 1), 10 * self.MAX_BREAKS))
            grid = np.linspace(t0, t1, n)
            for g, hint in zip(self._kinks, self._hints):
                tt = grid
                if hint.size:                  # (its zeros, and the midpoints between)
                    extra = np.concatenate([hint, (hint[1:] + hint[:-1]) / 2])
                    tt = np.union1d(grid, extra[(extra > t0) & (extra < t1)])
                v = _sampled(g, tt)
                ok = np.isfinite(v)
                zero = tt[ok & (v == 0.0)]          # (a sample at the zero: skipped)
                pairs = list(zip(np.nextafter(zero, -np.inf), np.nextafter(zero, np.inf)))
                s = np.sign(v)
                for k in np.flatnonzero(ok[:-1] & ok[1:] & (s[:-1] * s[1:] < 0))[
                        :self.MAX_BREAKS]:
                    # (numpy's scalars: a sign change through a pole, 1 / (t - 0.004),
                    # meets it as inf, where Python's floats raise ZeroDivisionError)
                    def at(t: float, g=g) -> float:
                        return float(_sampled(g, np.float64(t)))
                    try:
                        r = brentq(at, tt[k], tt[k + 1], xtol=1e-15 * max(1.0, abs(tt[k])))
                    except (ValueError, ArithmeticError):  # (not located: the solver's
                        continue                           # error control sees the jump)
                    pairs.extend(_around_zero(at, tt[k], tt[k + 1], r, s[k]))
                if pairs:
                    ends.append(np.array([e for e, _ in pairs]))
                    starts.append(np.array([st for _, st in pairs]))
        end, start = np.concatenate(ends), np.concatenate(starts)
        # (a break whose end is t0 itself, a run restarted there by an event, starts the
        # run: its first segment is empty, and the next starts after the jump)
        keep = (end >= t0) & (start > t0) & (end < t1)
        end, start = merged_segments([(end[keep], start[keep])], t1)
        return end[:self.MAX_BREAKS], start[:self.MAX_BREAKS]


def merged_segments(parts, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """The (ends, starts) of several sources' :meth:`~bondgraph.laws.SourceTiming.
    segments` as one sorted pair: at an end shared by several, the latest start; a
    start that does not come before the next end (or ``t1``), one float after its end."""
    if not parts:
        return np.zeros(0), np.zeros(0)
    end = np.concatenate([e for e, _ in parts])
    start = np.concatenate([st for _, st in parts])
    order = np.lexsort((-start, end))
    end, start = end[order], start[order]
    first = np.r_[True, end[1:] != end[:-1]] if end.size else np.zeros(0, dtype=bool)
    end, start = end[first], start[first]
    nxt = np.r_[end[1:], t1]
    return end, np.where((start > end) & (start < nxt), start, np.nextafter(end, np.inf))


def _around_zero(g: Callable[[float], float], a: float, b: float, r: float,
                 before: float) -> list[tuple[float, float]]:
    """[(the last float in [a, b) at which ``g`` still has its sign ``before``, its sign
    at a, strictly; the first after it at which g has the other sign strictly)], found
    from Brent's ``r`` (a few ulps off; the floats where g is 0 between them, rounding
    near its zero, are in neither). Where g is 0 over more than 64 ulps of time (an
    argument that underflows), two: the stretch where it is 0 is a segment of its own.
    [(``r``, one float after it)] where g does not change sign monotonically near it."""
    def started(t: float) -> bool:
        v = g(t)
        return not (np.isfinite(v) and np.sign(v) == before)

    def after(t: float) -> bool:
        v = g(t)
        return not (np.isfinite(v) and np.sign(v) != -before)

    fallback = (float(r), float(np.nextafter(r, np.inf)))
    lo = float(r)
    if started(lo):                  # back to a float before the sign change
        step = 1
        while started(lo):
            if lo <= a or step > 2 ** 60:
                return [fallback]
            lo, step = max(float(a), lo - step * float(np.spacing(lo))), step * 2
    end = _first_float(started, lo, float(b))
    if end is None:
        return [fallback]
    start = _first_float(after, end[0], float(b))
    if start is None or start[1] - end[0] <= 64 * np.spacing(max(abs(end[0]), 1.0)):
        return [(end[0], end[1] if start is None else start[1])]
    # (g is 0 over a stretch, not a few rounding floats: a segment of its own, where
    # Heaviside is 1/2, between its two jumps)
    return [(end[0], end[1]), start]


def _first_float(pred: Callable[[float], bool], lo: float, limit: float
                 ) -> tuple[float, float] | None:
    """(the last float at which ``pred`` is False, the first at which it is True) from
    ``lo`` (where it is False) up to ``limit`` (doubling steps, then bisection on the
    floats between); None where it is not True by ``limit``."""
    hi, step = lo, 1
    while True:
        nxt = min(limit, hi + step * float(np.spacing(hi)))
        if pred(nxt):
            hi = nxt
            break
        if nxt >= limit or step > 2 ** 60:
            return None
        lo = hi = nxt
        step *= 2
    while np.nextafter(lo, np.inf) < hi:
        mid = lo + (hi - lo) / 2
        if mid <= lo or mid >= hi:
            mid = float(np.nextafter(lo, np.inf))
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def depends_on_time(value: Any) -> bool:
    """True when ``value`` (an expression or a list of them) contains the symbol ``t``."""
    if isinstance(value, sympy.Basic):
        return any(s.name == TIME.name for s in value.free_symbols)
    if isinstance(value, (list, tuple, np.ndarray)):
        return any(depends_on_time(v) for v in np.asarray(value, dtype=object).ravel())
    return False

