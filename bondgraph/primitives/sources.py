"""Sources: known efforts and flows (``Se``, ``Sf``: their laws of time or state, with
their rates) and the unknown effort source ``Se*`` (a constraint force)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bonds import PortSpec
from ..element import (
    Category, Element, StateFunction, StateView, TimeFunction, is_symbolic, register_element,
    resolve_parameter,
)
from ..errors import ModelError
from ..laws import SourceTiming, TimeLaw, depends_on_time
from .._expr_program import EXPRESSION_SOURCES, expression_kernel, program
from ..timefunctions import TIME_SOURCES, TimeKernel, time_kernel
from ._common import _check_dim, _short


@dataclass(frozen=True, eq=False)
class CompiledSource:
    """A state-dependent source's value computed by a compiled kernel, which
    evaluations call instead of the law's Python ``value`` where numba is enabled: the
    compiled Runge-Kutta loop (:mod:`bondgraph._fastrk`) and the Python right-hand side
    (:meth:`CompiledFamilies.fill`). Both must give the same numbers (the Python value
    may call the same kernel); the first evaluation of a model checks it.

    One kernel call serves a family of sources (e.g. every contact wrench of a
    mechanism): the sources whose ``family`` is the same object share it.

    Attributes
    ----------
    family : object
        The family (compared by identity).
    kernel : callable
        ``kernel()``: the numba function (asked for only where numba is enabled)
        ``f(t, x, ints, flts, out)`` -> None with the fixed types of
        :data:`bondgraph._rk_kernels.SOURCE_SIGNATURE`: time (s), the state vector, the
        family's packed arrays, and ``out`` (``size`` floats) that it fills.
    pack : callable
        ``pack(state_slices)`` -> (ints int64 array, flts float64 array, size): the
        kernel's packed arrays and number of outputs for a model whose state vector has
        these slices (state name -> slice).
    entries : ndarray of int
        Which outputs are this source's value, in order (its ``dim`` of them).
    rate_entries : ndarray of int, optional
        Which outputs are its time derivative (dU_1/dt), where the kernel gives it
        (functions of time: :mod:`bondgraph.timefunctions`), else None.

    A family whose object has ``per_source = True`` packs each source's own arrays one
    after another (``pack`` and the entries are each source's, its outputs counted
    from its own first one), so that one call serves all of them; otherwise ``pack`` is
    the whole family's, taken from its first source.
    """

    family: Any
    kernel: Callable[[], Any]
    pack: Callable[[Mapping[str, slice]], tuple[np.ndarray, np.ndarray, int]]
    entries: np.ndarray
    rate_entries: np.ndarray | None = None


@dataclass(eq=False)
class CompiledFamilies:
    """The compiled sources of a model packed for their kernels: one kernel call per
    family fills the outputs of all its sources, which are then copied into U_1.

    Made by :meth:`pack`; the compiled Runge-Kutta loop passes these arrays to its
    kernels, and :meth:`fill` makes the same calls from Python (the right-hand side of
    implicit methods, event runs and the dense path), so that both paths compute a
    compiled source with one kernel. Made by :meth:`split`, the first :meth:`fill`
    also calls the sources' own ``value`` functions and raises
    :class:`~bondgraph.errors.ModelError` naming a source whose kernel disagrees.

    Attributes
    ----------
    kernels : tuple
        One numba function per family (see :class:`CompiledSource`).
    offsets : ndarray of int, shape (3, width + 1)
        Each family's start in ``ints``, ``flts`` and the outputs (families beyond
        those there are empty).
    ints, flts : ndarray
        The families' packed arrays, one after another.
    dest, src : ndarray of int
        U_1 entries, and the outputs that fill them.
    rdest, rsrc : ndarray of int
        dU_1/dt entries, and the outputs that fill them (sources that give their rate).
    laws : tuple
        (name, U_1 slice, :class:`SourceLaw`) of the sources, for the first call's
        check (empty: no check).
    """

    kernels: tuple
    offsets: np.ndarray
    ints: np.ndarray
    flts: np.ndarray
    dest: np.ndarray
    src: np.ndarray
    rdest: np.ndarray
    rsrc: np.ndarray
    laws: tuple = ()
    checked: bool = False

    CHECK_RTOL = 1e-9
    """The first call's check: a kernel's value may differ from the source's own by this
    much of the largest value of the sources there (sums in another order)."""

    @classmethod
    def pack(cls, sources: list[tuple[str, slice, CompiledSource]],
             state_slices: Mapping[str, slice], width: int = 0) -> "CompiledFamilies":
        """Pack ``sources`` (name, U_1 slice, compiled source), grouped by family, for a
        model with these state slices; ``width``: the number of families the offsets
        leave room for (at least the families there)."""
        families: dict[int, list] = {}
        for item in sources:
            families.setdefault(id(item[2].family), []).append(item)
        width = max(width, len(families))
        off = np.zeros((3, width + 1), dtype=np.int64)
        kernels, ints, flts = [], [], []
        first: dict[int, int] = {}            # (id of a source's CompiledSource)
        sizes: dict[int, int] = {}
        for k, members in enumerate(families.values()):
            c0 = members[0][2]
            if getattr(c0.family, "per_source", False):
                packs, at = [], 0
                for _, _, c in members:
                    i, f, size = c.pack(state_slices)
                    packs.append((i, f))
                    first[id(c)], sizes[id(c)] = off[2, k] + at, int(size)
                    at += int(size)
                i = np.concatenate([np.asarray(p[0], dtype=np.int64).ravel() for p in packs])
                f = np.concatenate([np.asarray(p[1], dtype=np.float64).ravel()
                                    for p in packs])
                size = at
            else:
                i, f, size = c0.pack(state_slices)
                for _, _, c in members:
                    first[id(c)], sizes[id(c)] = off[2, k], int(size)
            ints.append(np.asarray(i, dtype=np.int64).ravel())
            flts.append(np.asarray(f, dtype=np.float64).ravel())
            kernels.append(c0.kernel())
            off[:, k + 1] = off[:, k] + (ints[-1].size, flts[-1].size, int(size))
        off[:, len(families) + 1:] = off[:, len(families):len(families) + 1]
        dest, src, rdest, rsrc = [], [], [], []
        for name, sl, c in sources:
            for entries, to, fr in ((c.entries, dest, src), (c.rate_entries, rdest, rsrc)):
                if entries is None:
                    continue
                entries = np.asarray(entries, dtype=np.int64).ravel()
                if entries.size != sl.stop - sl.start or entries.size and \
                        not 0 <= entries.min() <= entries.max() < sizes[id(c)]:
                    raise AssertionError(f"source '{name}': its compiled entries do not "
                                         f"fit")
                to.append(np.arange(sl.start, sl.stop, dtype=np.int64))
                fr.append(entries + first[id(c)])
        none = np.zeros(0, dtype=np.int64)
        return cls(tuple(kernels), off, np.concatenate([none, *ints]),
                   np.concatenate([np.zeros(0), *flts]), np.concatenate([none, *dest]),
                   np.concatenate([none, *src]), np.concatenate([none, *rdest]),
                   np.concatenate([none, *rsrc]))

    def fill(self, t: float, s: StateView, U1: np.ndarray,
             dU1: np.ndarray | None = None, rates: bool = True) -> None:
        """Write the sources' values at time ``t`` (s) and state ``s`` into ``U1`` (and
        the rates of those that give them into ``dU1``: NaN unless ``rates``)."""
        x = s.array
        if not (x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable):
            x = np.array(x, dtype=np.float64)       # (the kernels' fixed types)
        off = self.offsets
        out = np.empty(int(off[2, -1]))
        for k, kernel in enumerate(self.kernels):
            kernel(float(t), x, self.ints[off[0, k]:off[0, k + 1]],
                   self.flts[off[1, k]:off[1, k + 1]], out[off[2, k]:off[2, k + 1]])
        U1[self.dest] = out[self.src]
        if dU1 is not None:
            dU1[self.rdest] = out[self.rsrc] if rates else np.nan
        asked = rates and dU1 is not None
        if self.laws and not (np.isfinite(out[self.src]).all() and
                              (not asked or np.isfinite(out[self.rsrc]).all())):
            # the sources' own functions say which is not finite there, naming it
            # (NonFiniteLawError); where they give the same values, so be it
            for _, _, law in self.laws:
                law.value(t, s)
                if asked and law.rate is not None:
                    law.rate(t, s)
        if not self.checked and self.laws:
            self._check(t, s, U1, "value", lambda law: law.value)
            if self.rdest.size:
                R = np.full(U1.size, np.nan)
                R[self.rdest] = out[self.rsrc]
                self._check(t, s, R, "rate", lambda law: law.rate if law.compiled is not
                            None and law.compiled.rate_entries is not None else None)
            self.checked = True

    def _check(self, t: float, s: StateView, U1: np.ndarray, what: str, of) -> None:
        laws = [(name, sl, of(law)) for name, sl, law in self.laws]
        laws = [(name, sl, f) for name, sl, f in laws if f is not None]
        own = [np.asarray(f(t, s), dtype=float).ravel() for _, _, f in laws]

        def largest(a: np.ndarray) -> float:          # (of the finite values)
            return float(np.abs(a[np.isfinite(a)]).max(initial=0.0))
        scale = max([largest(U1[sl]) for _, sl, _ in laws] + [largest(v) for v in own],
                    default=0.0)
        for (name, sl, _), v in zip(laws, own):
            got = U1[sl]
            if v.shape != got.shape or not np.all(np.isclose(
                    got, v, rtol=0.0, atol=self.CHECK_RTOL * scale, equal_nan=True)):
                raise ModelError(
                    f"source '{name}': its compiled kernel gives {np.array2string(got)} "
                    f"at t = {t:g} s where its {what} function gives "
                    f"{np.array2string(v)}; a CompiledSource must compute the same "
                    f"{what} as the source's function (to {self.CHECK_RTOL:g} of the "
                    f"largest)")

    @classmethod
    def split(cls, varying: list, state_slices: Mapping[str, slice], enabled: bool
              ) -> "tuple[CompiledFamilies | None, list]":
        """(the families of the sources among ``varying`` (name, U_1 slice,
        :class:`SourceLaw`) that have a compiled kernel, if ``enabled`` (numba
        is: :func:`bondgraph.fastlu.enabled`) and there are any, else None; the other
        sources, in order)."""
        got = [(n, sl, law.compiled) for n, sl, law in varying
               if law.compiled is not None] if enabled else []
        if not got:
            return None, list(varying)
        names = {n for n, _, _ in got}
        families = cls.pack(got, state_slices)
        families.laws = tuple(v for v in varying if v[0] in names)
        return families, [v for v in varying if v[0] not in names]


def compiled_time_source(kernel: TimeKernel | None, dim: int) -> CompiledSource | None:
    """The :class:`CompiledSource` of a source of ``dim`` values whose value is the
    standard function of time ``kernel`` (:mod:`bondgraph.timefunctions`: its values,
    then its rates), or None (no kernel, or parameters that do not fit)."""
    rec = kernel.record(dim) if kernel is not None else None
    if rec is None:
        return None
    ints, flts = rec
    return CompiledSource(TIME_SOURCES, time_kernel, lambda slices: (ints, flts, 2 * dim),
                          np.arange(dim), rate_entries=np.arange(dim, 2 * dim))


def compiled_expression_source(bound, dim: int) -> CompiledSource | None:
    """The :class:`CompiledSource` of a source of ``dim`` values given as expressions of
    time: ``bound`` holds its values, then its rates, numbers for every symbol but
    ``t`` (:meth:`bondgraph.laws.TimeLaw.bound`); None where the interpreter of
    :mod:`bondgraph._expr_program` does not compute some part (its Python function
    then serves)."""
    rec = program(list(bound[:dim, :]), list(bound[dim:, :]))
    if rec is None:
        return None
    ints, flts = rec
    return CompiledSource(EXPRESSION_SOURCES, expression_kernel,
                          lambda slices: (ints, flts, 2 * dim), np.arange(dim),
                          rate_entries=np.arange(dim, 2 * dim))


def plan_sources(laws: Mapping[str, "SourceLaw"], dims: Mapping[str, int],
                 state_slices: Mapping[str, slice], compiled: bool) -> tuple:
    """A model's known sources made ready for evaluation, from their ``laws`` and
    dimensions in U_1 order: (U_1 with the constant sources' values, else 0; dU_1/dt
    likewise, NaN for a varying source without a rate; the varying sources as (name,
    U_1 slice, law); the :class:`CompiledFamilies` of those with a compiled kernel,
    where ``compiled`` (numba is enabled), else None; the other varying sources)."""
    n = sum(dims[name] for name in laws)
    U1c, dU1c, varying, start = np.zeros(n), np.zeros(n), [], 0
    for name, law in laws.items():
        sl = slice(start, start + dims[name])
        start = sl.stop
        if law.constant is not None:
            U1c[sl] = law.constant
        else:
            varying.append((name, sl, law))
            if law.rate is None:
                dU1c[sl] = np.nan
    return (U1c, dU1c, varying, *CompiledFamilies.split(varying, state_slices, compiled))


@dataclass(frozen=True)
class SourceLaw:
    """A source's numeric law after parameters are resolved.

    ``value(t, state)`` and ``rate(t, state)`` return arrays of shape (dim,); ``rate`` is
    None when not available; ``state_dependent`` says whether ``value`` reads the state;
    ``timing`` is what the value says about stepping through it (its period and breaks,
    :class:`~bondgraph.laws.SourceTiming`), None when nothing is known; ``expression``
    says that ``value`` is a compiled sympy expression of time (pure and cheap: a run may
    sample it, where it calls a user's function only when it must); ``compiled`` is the
    value's compiled kernel where the law offers one (a state-dependent law's own, a
    standard function of time's: :mod:`bondgraph.timefunctions`;
    :class:`CompiledSource`), else None.
    """

    value: Callable[[float, StateView], np.ndarray]
    rate: Callable[[float, StateView], np.ndarray] | None
    state_dependent: bool
    constant: np.ndarray | None = None
    timing: SourceTiming | None = None
    expression: bool = False
    compiled: CompiledSource | None = None


class SourceBase(Element):
    """Base of known sources (Se, Sf).

    Subclasses must implement: class attributes ``kind`` and ``category``
    (``EFFORT_SOURCE`` or ``FLOW_SOURCE``); optionally override :meth:`law`.

    The value is a number, an array of ``dim`` numbers, a sympy expression (of
    parameters, and of time as the symbol ``t`` (s): its rate is then derived exactly),
    a :class:`~bondgraph.TimeFunction` (with its analytic rate) or a
    :class:`~bondgraph.StateFunction`.
    """

    value_name = "value"

    def __init__(self, name: str, value: Any = None, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)
        self.value = value

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", self._dim),)

    def parameters(self) -> dict[str, Any]:
        return {self.value_name: self.value}

    def state_dependencies(self) -> tuple[str, ...]:
        if isinstance(self.value, StateFunction):
            return tuple(self.value.depends_on)
        return ()

    def problems(self) -> list[str]:
        v = self.value
        if v is None:
            return [f"{self.kind} '{self.name}': its {self.value_name} is missing (no "
                    f"physical default is assumed)"]
        if isinstance(v, (TimeFunction, StateFunction)):
            return []
        if callable(v):
            return [f"{self.kind} '{self.name}': a bare callable is ambiguous; wrap it as "
                    f"TimeFunction(f, rate) or StateFunction(f, depends_on)"]
        if is_symbolic(v):
            return []
        try:
            arr = resolve_parameter(v, None, owner=self.name, parameter=self.value_name)
        except ModelError as exc:
            return [str(exc)]
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != self._dim):
            return [f"{self.kind} '{self.name}': {self.value_name} has shape {arr.shape}; "
                    f"valid: a scalar or a vector of {self._dim}"]
        return []

    def problems_at(self, values: Mapping[str, float]) -> list[str]:
        if depends_on_time(self.value):
            try:
                self._time_law().bind(values)
            except ModelError as exc:
                return [str(exc)]
            return []
        return super().problems_at(values)

    def _time_law(self, value: Any = None) -> TimeLaw:
        return TimeLaw(self.value if value is None else value, self._dim, self.name,
                       self.value_name)

    def _expressions(self) -> Any:
        """The value, with a :meth:`TimeFunction.expression` in its place written as
        the expressions it holds (sympy, one per component)."""
        v = self.value
        if isinstance(v, TimeFunction) and v.compiled is not None and \
                v.compiled.kind == "expression":
            e = v.expressions(self._dim)
            return v if e is None else e[0] if self._dim == 1 else e
        return v

    def _vector(self, raw: Any) -> np.ndarray:
        arr = np.asarray(raw, dtype=float)
        if arr.ndim == 0:
            arr = np.full(self._dim, float(arr))
        if arr.shape != (self._dim,):
            raise ModelError(f"{self.kind} '{self.name}': its {self.value_name} returned shape "
                             f"{arr.shape}; valid: ({self._dim},)")
        return arr

    def law(self, values: Mapping[str, float] | None = None) -> SourceLaw:
        """The numeric law, with symbols replaced by ``values``."""
        v = self._expressions()
        if isinstance(v, TimeFunction):
            rate = None
            if v.rate is not None:
                rate = lambda t, s, f=v.rate: self._vector(f(t))  # noqa: E731
            period, breaks = v.period, v.breaks
            if v.compiled is not None and not (period or breaks):
                period, breaks = v.compiled.timing()    # (a model file's step, sine...)
            timing = SourceTiming(period, breaks) if period or breaks else None
            compiled = compiled_time_source(v.compiled, self._dim) if rate else None
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t)), rate, False,
                             timing=timing, compiled=compiled)
        if isinstance(v, StateFunction):
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t, s)), None, True,
                             compiled=v.compiled)
        if depends_on_time(v):
            law = self._time_law(v)
            bound = law.bound(values)
            value, rate = law.bind(values, bound)
            return SourceLaw(lambda t, s: value(t), lambda t, s: rate(t), False,
                             timing=law.timing(values), expression=True,
                             compiled=compiled_expression_source(bound, self._dim))
        const = self._vector(resolve_parameter(v, values, owner=self.name,
                                               parameter=self.value_name))
        zero = np.zeros(self._dim)
        return SourceLaw(lambda t, s: const, lambda t, s: zero, False, constant=const)

    def label(self, values: Mapping[str, float] | None = None) -> str:
        v = self._expressions()
        text = "f(t)" if isinstance(v, TimeFunction) else (
            "f(t,x)" if isinstance(v, StateFunction) else _short(v, values))
        return f"{self.kind}: {self.name}\\n{text}"


@register_element
class Se(SourceBase):
    """Known effort source: effort = ``effort`` (N, N m, V, ...), imposed on its bond.

    Parameters
    ----------
    name : str
    effort : number, array (dim,), sympy expression, TimeFunction or StateFunction
        A sympy expression may use time as the symbol ``t`` (s): ``V0*sin(w*t)``.
    dim : int, default 1
    """

    kind = "Se"
    category = Category.EFFORT_SOURCE
    value_name = "effort"

    def __init__(self, name: str, effort: Any = None, *, dim: int = 1):
        super().__init__(name, effort, dim=dim)


@register_element
class Sf(SourceBase):
    """Known flow source: flow = ``flow`` (m/s, rad/s, A, ...), imposed on its bond."""

    kind = "Sf"
    category = Category.FLOW_SOURCE
    value_name = "flow"

    def __init__(self, name: str, flow: Any = None, *, dim: int = 1):
        super().__init__(name, flow, dim=dim)


@register_element
class UnknownEffort(Element):
    """Unknown effort source Se*: its effort (the constraint force) is solved for so that
    its flow stays zero. Inserted by the causality assignment at constraint 0-junctions;
    users may also place one explicitly. The bond points from the Se* into the junction.
    """

    kind = "Se*"
    category = Category.UNKNOWN_EFFORT

    def __init__(self, name: str, *, dim: int = 1, junction: str | None = None):
        super().__init__(name)
        self._dim = _check_dim(name, dim)
        self.junction = junction

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", self._dim),)

    def parameters(self) -> dict[str, Any]:
        return {"junction": self.junction} if self.junction else {}
