"""The element extension point: the :class:`Element` base, its categories, and the registry.

- :class:`Category`: the role an element plays in the equations (the paper's fields).
- :class:`Element`: base class of every element kind.
- :func:`register_element`, :data:`ELEMENT_TYPES`: the explicit registry of kinds.
- :class:`TimeFunction`, :class:`StateFunction`: known source values that vary.
- :class:`StateView`: named read access to a state vector, handed to element hooks.

Writing a new element kind
--------------------------
Subclass one of the category bases of :mod:`bondgraph.primitives` (``EffortSourceBase``,
``StorageBase``, ``ResistorBase``, ``TransformerBase``, ...), set the class attribute
``kind`` (a unique string) and implement that base's hooks (its docstring lists them
under "Subclasses must implement"), then decorate the class with
:func:`register_element`. The causality assignment, the junction structure and the
reduction only ever talk to elements through these hooks, so a registered kind works
everywhere a built-in one does (see ``examples/custom_element.py``).
"""

from __future__ import annotations

import copy
from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

import numpy as np
import sympy

from .bonds import PortSpec
from .errors import ModelError, NameNotFoundError, did_you_mean
from .timefunctions import TimeKernel

__all__ = [
    "Category",
    "Element",
    "ELEMENT_TYPES",
    "register_element",
    "element_type",
    "TimeFunction",
    "StateFunction",
    "StateView",
    "resolve_parameter",
    "check_name",
    "MAX_MAGNITUDE",
]


def check_name(name: object, what: str, forbidden: str = "") -> str:
    """``name`` if it is a usable name for ``what`` (an element, a body, a joint...): a
    non-empty string without control characters (a newline or an escape would break the
    files and reports that carry it), nor any character of ``forbidden``, nor blanks at
    either end; any other Unicode is fine.

    Raises
    ------
    ModelError
        Saying which rule the name breaks.
    """
    rules = "a non-empty string of printable characters" + \
        (f" without {' or '.join(repr(c) for c in forbidden)}" if forbidden else "")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{what} name must be {rules}, got {name!r}")
    bad = [c for c in name if not c.isprintable() or c in forbidden]
    if bad or name != name.strip():
        why = (f"it holds {bad[0]!r}" if bad else "it has blanks at an end")
        raise ModelError(f"{what} name {name!r} is not valid ({why}); valid: {rules}")
    return name


class Category(Enum):
    """What an element is for the causality assignment and the equations."""

    EFFORT_SOURCE = "Se"
    FLOW_SOURCE = "Sf"
    UNKNOWN_EFFORT = "Se*"
    INERTIA = "I"
    CAPACITANCE = "C"
    RESISTANCE = "R"
    EULER = "EJS"
    TRANSFORMER = "TF"
    GYRATOR = "GY"
    ZERO = "0"
    ONE = "1"

    @property
    def is_junction(self) -> bool:
        return self in (Category.ZERO, Category.ONE)

    @property
    def is_two_port(self) -> bool:
        return self in (Category.TRANSFORMER, Category.GYRATOR)

    @property
    def is_one_port(self) -> bool:
        return not (self.is_junction or self.is_two_port)

    @property
    def is_storage(self) -> bool:
        return self in (Category.INERTIA, Category.CAPACITANCE)

    @property
    def is_source(self) -> bool:
        return self in (Category.EFFORT_SOURCE, Category.FLOW_SOURCE, Category.UNKNOWN_EFFORT)


class Element(ABC):
    """Base class of every bond graph element.

    An element is a named node of a :class:`~bondgraph.BondGraph`. Elements are plain
    objects compared by identity; the graph enforces unique names.

    Class attributes (declarative, like a scipy tableau)
    ----------------------------------------------------
    kind : str
        Registry key (``"I"``, ``"MTF"``, ...). Unique.
    category : Category
        The element's role in the causality assignment and in the equations.

    Subclasses must implement (through a category base of :mod:`bondgraph.primitives`)
    -----------------------------------------------------------------------------------
    ``ports()``, ``parameters()``, ``problems()`` and their category's hooks.
    """

    kind: ClassVar[str] = ""
    category: ClassVar[Category]

    def __init__(self, name: str):
        self.name = check_name(name, "element")

    # -- structure -----------------------------------------------------------------
    def ports(self) -> tuple[PortSpec, ...]:
        """The element's fixed ports; junctions return ``()`` (each bond is a port)."""
        raise NotImplementedError

    @property
    def dim(self) -> int:
        """Dimension of a one-port or a junction (two-ports: of their input port)."""
        return self.ports()[0].dim

    def parameters(self) -> dict[str, Any]:
        """The element's parameters by name (used for labels and networkx export)."""
        return {}

    def problems(self) -> list[str]:
        """Every problem with the element's own parameters, as messages naming it."""
        return []

    def problems_at(self, values: Mapping[str, float]) -> list[str]:
        """:meth:`problems` with its symbolic parameters replaced by their ``values``
        (what assembly checks once the values are known: :meth:`problems` cannot judge
        a symbol). Works for elements whose parameters are attributes of the same names
        (as :meth:`parameters` lists them); others may override it."""
        params = self.parameters()
        symbolic = {k: v for k, v in params.items() if is_symbolic(v)}
        if not symbolic:
            return []
        clone = copy.copy(self)
        for k, v in symbolic.items():
            if not hasattr(clone, k):
                return []
            try:
                resolved = resolve_parameter(v, values, owner=self.name, parameter=k)
            except ModelError as exc:
                return [str(exc)]
            object.__setattr__(clone, k, resolved if resolved.ndim else float(resolved))
        names = sorted({s.name for v in symbolic.values() for s in _free_symbols(v)})
        return [f"{p} (with {', '.join(names)} = "
                f"{', '.join(f'{values[n]:g}' for n in names if n in values)})"
                for p in clone.problems()]

    def state_dependencies(self) -> tuple[str, ...]:
        """Names of the states the element's law reads (checked against the model)."""
        return ()

    def label(self, values: Mapping[str, float] | None = None) -> str:
        """Short text for diagrams: kind and name (and, in subclasses, the parameters,
        with the numbers of named parameters from ``values`` where given)."""
        return f"{self.kind}: {self.name}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


ELEMENT_TYPES: dict[str, type[Element]] = {}
"""Registry of element kinds: ``kind`` string -> class."""


def register_element(cls: type[Element]) -> type[Element]:
    """Class decorator: add an element kind to :data:`ELEMENT_TYPES`.

    Raises
    ------
    ModelError
        If the class has no ``kind`` or the kind is already registered.
    """
    kind = getattr(cls, "kind", "")
    if not kind:
        raise ModelError(f"element class {cls.__name__} has no 'kind' to register under")
    if kind in ELEMENT_TYPES and ELEMENT_TYPES[kind] is not cls:
        raise ModelError(
            f"element kind {kind!r} is already registered by {ELEMENT_TYPES[kind].__name__}; "
            f"choose another kind for {cls.__name__}"
        )
    ELEMENT_TYPES[kind] = cls
    return cls


def element_type(kind: str) -> type[Element]:
    """The registered class of ``kind``.

    Raises
    ------
    KeyError
        With the closest registered kinds when ``kind`` is unknown.
    """
    try:
        return ELEMENT_TYPES[kind]
    except KeyError:
        raise NameNotFoundError(
            f"unknown element kind {kind!r}{did_you_mean(kind, ELEMENT_TYPES)} Registered "
            f"kinds: {sorted(ELEMENT_TYPES)}") from None


# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------

def _free_symbols(value: Any) -> set:
    """The sympy symbols in ``value`` (an expression or an array of them)."""
    if isinstance(value, sympy.Basic):
        return set(value.free_symbols)
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and
                                            value.dtype == object):
        return set().union(*(_free_symbols(v) for v in np.asarray(value, dtype=object).ravel()))
    return set()


def is_symbolic(value: Any) -> bool:
    """True when ``value`` is (or contains) a sympy expression with free symbols."""
    if isinstance(value, sympy.Basic):
        return bool(value.free_symbols)
    if isinstance(value, (list, tuple)):
        try:
            value = np.asarray(value)
        except (ValueError, TypeError):          # (ragged: look at each entry)
            return any(is_symbolic(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return any(isinstance(v, sympy.Basic) and bool(v.free_symbols)
                   or isinstance(v, (list, tuple, np.ndarray)) and is_symbolic(v)
                   for v in value.ravel())
    return False


def _symbols_and_numbers(arr: np.ndarray, values: Mapping[str, float] | None
                         ) -> np.ndarray | None:
    """``arr`` (an object array) as floats when every entry is a number or a symbol with
    a value (the common case: a declared parameter), else None (the general path)."""
    if values is None:
        return None
    out = np.empty(arr.size)
    for k, v in enumerate(arr.flat):
        if type(v) is sympy.Symbol:
            got = values.get(v.name)
            if got is None:
                return None
            out[k] = got
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            out[k] = v
        elif isinstance(v, sympy.Basic):
            got = _arithmetic(v, values)
            if got is None:
                return None
            out[k] = got
        else:
            return None
    return out.reshape(arr.shape)


def _arithmetic(e: sympy.Basic, values: Mapping[str, float]) -> float | None:
    """A sum, product or power of symbols (with values) and numbers, evaluated (m g:
    a weight); None for anything else (the general path substitutes instead)."""
    if e.is_Symbol:
        got = values.get(e.name)
        return None if got is None else float(got)
    if e.is_Number:
        return float(e)
    if e.is_Mul or e.is_Add:
        parts = [_arithmetic(a, values) for a in e.args]
        if any(p is None for p in parts):
            return None
        return float(np.prod(parts)) if e.is_Mul else float(sum(parts))
    if e.is_Pow:
        b, x = (_arithmetic(a, values) for a in e.args)
        if b is None or x is None:
            return None
        try:
            return float(b ** x)
        except (OverflowError, ZeroDivisionError, ValueError, TypeError):
            return None
    return None


def _quoted(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, its middle left out beyond ``limit`` characters (a
    folded constant such as 2**3000 has 904 digits)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-limit // 4:]} ({len(text)} characters)"


def resolve_parameter(value: Any, values: Mapping[str, float] | None, *, owner: str,
                      parameter: str) -> np.ndarray:
    """Turn a parameter (number, array or sympy expression) into a float array.

    Symbols are replaced by ``values[symbol.name]``.

    Raises
    ------
    ModelError
        Naming ``owner`` and ``parameter`` when a symbol has no value or the result is
        not a finite real number.
    """
    if value is None:
        raise ModelError(f"element '{owner}': parameter '{parameter}' is missing "
                         f"(no physical default is assumed)")
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    bad = [v for v in (arr.flat if arr.dtype.kind in "bUSVO" else ())
           if isinstance(v, (bool, np.bool_, str, bytes))]
    if bad:
        what = "text" if isinstance(bad[0], (str, bytes)) else "true or false"
        raise ModelError(f"element '{owner}': parameter '{parameter}' = {_quoted(value)} is "
                         f"{what}, not a number; valid: a number, an array of numbers or a "
                         f"sympy expression (in a file: {{ expr = \"...\" }})")
    fast = _symbols_and_numbers(arr, values) if arr.dtype == object else None
    if fast is not None:
        out = fast
    elif arr.dtype == object:
        flat = []
        missing: set[str] = set()
        for v in arr.ravel():
            if isinstance(v, sympy.Symbol) and values is not None and v.name in values:
                flat.append(complex(values[v.name]))     # (the common case: no subs)
                continue
            if isinstance(v, sympy.Basic):
                subs = {s: sympy.Float(values[s.name]) for s in v.free_symbols
                        if values is not None and s.name in values}
                left = [s.name for s in v.free_symbols if s not in subs]
                if left:
                    missing.update(left)
                    flat.append(np.nan)
                    continue
                v = v.xreplace(subs)             # (numbers in: it evaluates to one)
            try:
                flat.append(complex(v))
            except (TypeError, ValueError):
                raise ModelError(f"element '{owner}': parameter '{parameter}' has a value "
                                 f"{_quoted(v)} that is not a number") from None
        if missing:
            raise ModelError(f"element '{owner}': parameter '{parameter}' needs values for "
                             f"symbol(s) {', '.join(sorted(missing))}: pass them as "
                             f"parameters={{...}}")
        carr = np.array(flat).reshape(arr.shape)
        if np.any(np.abs(carr.imag) > 0):
            raise ModelError(f"element '{owner}': parameter '{parameter}' is complex")
        out = carr.real.astype(float)
    else:
        try:
            out = np.asarray(arr, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"element '{owner}': parameter '{parameter}' = "
                             f"{_quoted(value)} is not a number or an array of numbers"
                             ) from None
    if not np.all(np.isfinite(out)):
        raise ModelError(f"element '{owner}': parameter '{parameter}' = {_quoted(value)} is "
                         f"not finite")
    if out.size and np.abs(out).max() > MAX_MAGNITUDE:
        raise ModelError(f"element '{owner}': parameter '{parameter}' = {_quoted(value)} is "
                         f"beyond {MAX_MAGNITUDE:.0e} in magnitude: products of such values "
                         f"overflow double precision; valid: |value| <= {MAX_MAGNITUDE:.0e} "
                         f"(choose other units if the physics needs more)")
    return out


MAX_MAGNITUDE = 1e100
"""The largest magnitude a numeric parameter may have: the equations multiply a few
parameters and states together (m g, m v^2, an inverse inertia), which would overflow
double precision (1.8e308) beyond it."""


# ---------------------------------------------------------------------------------------
# Varying source values and state access
# ---------------------------------------------------------------------------------------

class StateView(Mapping[str, np.ndarray]):
    """Read-only access to a state vector by state name.

    ``view["p_m"]`` is the slice of the state vector that holds the state ``p_m``.
    """

    __slots__ = ("_x", "_slices")

    def __init__(self, x: np.ndarray, slices: Mapping[str, slice]):
        self._x = x
        self._slices = slices

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._x[self._slices[name]]
        except KeyError:
            raise NameNotFoundError(f"no state named {name!r}"
                                    f"{did_you_mean(name, self._slices)}") from None

    def __iter__(self):
        return iter(self._slices)

    def __len__(self) -> int:
        return len(self._slices)

    @property
    def slices(self) -> Mapping[str, slice]:
        """Each state's slice of :attr:`array`."""
        return self._slices

    @property
    def array(self) -> np.ndarray:
        """The whole state vector, read-only (a function of many states may key a cache
        on it: the sources of one evaluation all see the same vector)."""
        v = self._x.view()
        v.flags.writeable = False
        return v


@dataclass(frozen=True)
class TimeFunction:
    """A known value that varies with time, with its analytic time derivative.

    Parameters
    ----------
    value : callable
        ``value(t) -> float or ndarray, shape (dim,)``.
    rate : callable, optional
        ``rate(t)``, the time derivative of ``value``. Needed only where the constraint
        equations see the source (Eq. (15) uses dU_1/dt); an error says so when missing.
    period : float, optional
        The value's period (s), when it is periodic: a run's step is then at most a
        fraction of it (:func:`bondgraph.scales.source_time_scales`), so that the solver
        does not step over what happens within a period.
    breaks : tuple of float
        Times (s) where the value jumps or has a kink: a run stops and restarts there.
    compiled : TimeKernel, optional
        What the function is, as data (:class:`bondgraph.timefunctions.TimeKernel`: set
        by :meth:`sine`, :meth:`ramp`, :meth:`step`, :meth:`table` and
        :meth:`expression`, and so by the model files' signals), so that a run computes it in compiled
        code and stays on the compiled loop, and an FMU can write it in C; ``value`` and
        ``rate`` must compute the same (the first evaluation of a model checks it).
        None: the Python functions are called.

    Examples
    --------
    >>> import numpy as np
    >>> f = TimeFunction.sine(amplitude=2.0, omega=3.0)
    >>> float(f.value(0.0)), float(f.rate(0.0))
    (0.0, 6.0)
    >>> g = TimeFunction.expression("2*t**2 + Heaviside(t - 1)")
    >>> g.value(2.0), g.rate(2.0)
    (9.0, 8.0)
    """

    value: Callable[[float], Any]
    rate: Callable[[float], Any] | None = None
    period: float | None = None
    breaks: tuple[float, ...] = ()
    compiled: TimeKernel | None = None

    @staticmethod
    def sine(amplitude: float, omega: float, phase: float = 0.0, offset: float = 0.0, *,
             where: str = "sine") -> "TimeFunction":
        """``offset + amplitude * sin(omega t + phase)`` (omega in rad/s, phase in rad;
        amplitude and offset in the source's unit, numbers or arrays of its dimension).
        A value that is not a finite number is refused naming ``where``."""
        amplitude = _finite_values(amplitude, f"{where} amplitude")
        offset = _finite_values(offset, f"{where} offset")
        omega = _finite_values(omega, f"{where} omega", scalar=True)
        phase = _finite_values(phase, f"{where} phase", scalar=True)
        kernel = TimeKernel("sine", (offset, amplitude, omega, phase))
        return TimeFunction(*kernel.functions(),
                            period=2 * np.pi / abs(omega) if omega else None,
                            compiled=kernel)

    @staticmethod
    def ramp(slope: float, start: float = 0.0, offset: float = 0.0, *,
             where: str = "ramp") -> "TimeFunction":
        """``offset`` until ``start`` (s), then ``offset + slope (t - start)``; the run
        stops and restarts at ``start``. A value that is not a finite number is refused
        naming ``where``."""
        slope = _finite_values(slope, f"{where} slope")
        offset = _finite_values(offset, f"{where} offset")
        start = _finite_values(start, f"{where} start", scalar=True)
        kernel = TimeKernel("ramp", (offset, slope, start))
        return TimeFunction(*kernel.functions(), breaks=(float(start),), compiled=kernel)

    @staticmethod
    def step(after: Any, time: float = 0.0, before: Any = 0.0, *,
             where: str = "step") -> "TimeFunction":
        """``before`` until ``time`` (s), ``after`` from ``time`` on (numbers, or arrays
        of the source's dimension, in its unit); the run stops and restarts at ``time``.

        Raises
        ------
        ModelError
            Naming ``where``: a value that is not finite, values of different shapes.
        """
        a = _finite_values(before, f"{where} before")
        b = _finite_values(after, f"{where} after")
        t0 = float(_finite_values(time, f"{where} time", scalar=True))
        if np.ndim(a) and np.ndim(b) and np.shape(a) != np.shape(b):
            raise ModelError(f"{where}: before has {np.size(a)} values and after "
                             f"{np.size(b)}; valid: the same number (or a number for one)")
        if np.ndim(a) != np.ndim(b):            # (one number for every component)
            a, b = np.broadcast_arrays(np.asarray(a, dtype=float),
                                       np.asarray(b, dtype=float))
            a, b = a.copy(), b.copy()
        kernel = TimeKernel("step", (a, b, t0))
        return TimeFunction(*kernel.functions(), breaks=(t0,), compiled=kernel)

    @staticmethod
    def table(times: Sequence[float], values: Any, *, breaks: bool = True,
              where: str = "table") -> "TimeFunction":
        """Linear interpolation in a table of ``times`` (s, at least 2, strictly
        increasing) and ``values`` (one per time: numbers, or rows of the source's
        dimension), the first and last values held outside it (``np.interp``).

        ``breaks``: whether a run stops and restarts at each point (default, as
        Modelica's CombiTimeTable's time events: the kinks cost the error control
        nothing, and a pulse between two of its steps is not stepped over). False for
        a dense table of measured data: a run of a 2001-point table then takes about a
        sixth of the evaluations, each kink handled by the error control.

        Raises
        ------
        ModelError
            Naming ``where``: fewer than 2 times, times not increasing, a value count
            other than the times', a value that is not finite.
        """
        ts = np.asarray(_finite_values(times, f"{where} times"), dtype=float)
        if ts.ndim != 1 or ts.size < 2:
            raise ModelError(f"{where}: times must be a list of at least 2 times (s)")
        bad = np.flatnonzero(np.diff(ts) <= 0)
        if bad.size:
            i = int(bad[0])
            raise ModelError(f"{where}: times must increase strictly; times[{i}] = "
                             f"{ts[i]:g} and times[{i + 1}] = {ts[i + 1]:g}")
        vs = np.asarray(_finite_values(values, f"{where} values"), dtype=float)
        if vs.ndim not in (1, 2) or vs.shape[0] != ts.size:
            raise ModelError(f"{where}: values must hold {ts.size} entries (one per time, "
                             f"each a number or a row of the source's values); got shape "
                             f"{vs.shape}")
        kernel = TimeKernel("table", (ts, vs, bool(breaks)))
        return TimeFunction(*kernel.functions(),
                            breaks=tuple(float(t) for t in ts) if breaks else (),
                            compiled=kernel)

    @staticmethod
    def expression(value: Any, *, where: str = "expression") -> "TimeFunction":
        """A function of time given as an expression of ``t`` (s) alone: a sympy
        expression, a number, text read by :func:`bondgraph.expressions.parse_expression`
        (``"5*sin(2*t) + 3*Heaviside(t - 1)"``, never executed), or a list of these for
        a vector value.

        A source whose value this is runs as a source given as the expression itself:
        its exact rate (Eq. (15) needs it), its jumps and period read from the
        expression (the run stops at a Heaviside's jump), the compiled loop kept, and an
        FMU writes it in C.

        Raises
        ------
        ModelError
            Naming ``where``: text that does not parse, a name other than ``t`` (give
            parameters as numbers here), or a value that is not a scalar or a flat list.
        """
        from .expressions import parse_expression
        from .laws import TIME, TimeLaw

        if isinstance(value, str):
            value = parse_expression(value, symbols={TIME.name: TIME}, where=where)
        items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
        if not items:
            raise ModelError(f"{where}: an empty list; valid: an expression of t or a "
                             f"list of them")
        exprs = []
        for i, item in enumerate(items):
            at = where if len(items) == 1 else f"{where}[{i}]"
            if isinstance(item, str):
                item = parse_expression(item, symbols={TIME.name: TIME}, where=at)
            try:
                e = sympy.sympify(item, strict=True)
            except (sympy.SympifyError, TypeError, ValueError):
                e = None
            if not isinstance(e, sympy.Expr):
                raise ModelError(f"{at}: {item!r} is not an expression; valid: a number or "
                                 f"an expression of t")
            others = sorted(s.name for s in e.free_symbols if s.name != TIME.name)
            if others:
                raise ModelError(f"{at}: names {', '.join(others)}; valid: an expression "
                                 f"of time t alone (write parameters' values as numbers)")
            # (its numbers, and a constant as a whole, checked now: 2**3000 sin(t) failed
            # in its first evaluation, naming neither the file nor the key)
            for c in [*e.atoms(sympy.Number), *([e] if not e.free_symbols else [])]:
                try:
                    v = complex(c)
                except (TypeError, ValueError, OverflowError):
                    v = complex(np.nan)
                if v.imag or not np.isfinite(v.real) or abs(v.real) > MAX_MAGNITUDE:
                    raise ModelError(f"{at}: {_quoted(c)} is not a finite real number of "
                                     f"magnitude at most {MAX_MAGNITUDE:.0e}")
            exprs.append(e.xreplace({s: TIME for s in e.free_symbols}))
        dim = len(exprs)
        value_fn, rate_fn = TimeLaw(exprs, dim, where, "value").bind(None)
        if dim == 1:
            return TimeFunction(lambda t: float(value_fn(t)[0]),
                                lambda t: float(rate_fn(t)[0]),
                                compiled=TimeKernel("expression", (tuple(exprs),)))
        return TimeFunction(value_fn, rate_fn,
                            compiled=TimeKernel("expression", (tuple(exprs),)))

    def expressions(self, dim: int) -> list[sympy.Expr] | None:
        """The value, for a source of ``dim`` components, as sympy expressions of ``t``
        where its form is known (:meth:`sine`, :meth:`ramp`, :meth:`expression`, a model
        file's signals: :meth:`TimeKernel.expressions`); None for a function given only
        in Python."""
        return None if self.compiled is None else self.compiled.expressions(dim)


def _finite_values(v: Any, where: str, scalar: bool = False) -> Any:
    """``v`` as a float or a float array, checked finite (ModelError naming ``where``)."""
    try:
        if np.asarray(v).dtype.kind in "USb":     # (numpy would read "1" and True)
            raise TypeError
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: {_quoted(v)} is not a number or an array of numbers"
                         ) from None
    if scalar and a.ndim:
        raise ModelError(f"{where}: {_quoted(v)}; valid: one number")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: {_quoted(v)} holds a value that is not finite")
    return float(a) if a.ndim == 0 else a


@dataclass(frozen=True)
class StateFunction:
    """A known value that depends on time and on the state (feedback, an actuator law).

    Parameters
    ----------
    value : callable
        ``value(t, state) -> float or ndarray``; ``state`` is a :class:`StateView`.
    depends_on : sequence of str
        Names of the states read (checked when the model is assembled).
    compiled : CompiledSource or None
        The same value by a compiled kernel
        (:class:`bondgraph.primitives.sources.CompiledSource`), which every
        evaluation calls instead of ``value`` where numba is enabled (the compiled
        Runge-Kutta loop, and the Python right-hand side of the other methods; the
        first evaluation checks that both agree); None: the loop does not take a
        model with this source.
    """

    value: Callable[[float, StateView], Any]
    depends_on: Sequence[str] = ()
    compiled: Any = None
