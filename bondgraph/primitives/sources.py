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
from ._common import _check_dim, _short


@dataclass(frozen=True, eq=False)
class CompiledSource:
    """A state-dependent source's value computed by a compiled kernel, which a compiled
    caller (the compiled Runge-Kutta loop, :mod:`bondgraph._fastrk`) calls instead of
    the law's Python ``value``; both give the same numbers (the Python value may call
    the same kernel).

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
    """

    family: Any
    kernel: Callable[[], Any]
    pack: Callable[[Mapping[str, slice]], tuple[np.ndarray, np.ndarray, int]]
    entries: np.ndarray


@dataclass(frozen=True)
class SourceLaw:
    """A source's numeric law after parameters are resolved.

    ``value(t, state)`` and ``rate(t, state)`` return arrays of shape (dim,); ``rate`` is
    None when not available; ``state_dependent`` says whether ``value`` reads the state;
    ``timing`` is what the value says about stepping through it (its period and breaks,
    :class:`~bondgraph.laws.SourceTiming`), None when nothing is known; ``expression``
    says that ``value`` is a compiled sympy expression of time (pure and cheap: a run may
    sample it, where it calls a user's function only when it must); ``compiled`` is the
    value's compiled kernel where a state-dependent law offers one
    (:class:`CompiledSource`), else None.
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

    def _time_law(self) -> TimeLaw:
        return TimeLaw(self.value, self._dim, self.name, self.value_name)

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
        v = self.value
        if isinstance(v, TimeFunction):
            rate = None
            if v.rate is not None:
                rate = lambda t, s, f=v.rate: self._vector(f(t))  # noqa: E731
            timing = SourceTiming(v.period, v.breaks) if v.period or v.breaks else None
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t)), rate, False,
                             timing=timing)
        if isinstance(v, StateFunction):
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t, s)), None, True,
                             compiled=v.compiled)
        if depends_on_time(v):
            law = self._time_law()
            value, rate = law.bind(values)
            return SourceLaw(lambda t, s: value(t), lambda t, s: rate(t), False,
                             timing=law.timing(values), expression=True)
        const = self._vector(resolve_parameter(v, values, owner=self.name,
                                               parameter=self.value_name))
        zero = np.zeros(self._dim)
        return SourceLaw(lambda t, s: const, lambda t, s: zero, False, constant=const)

    def label(self, values: Mapping[str, float] | None = None) -> str:
        v = self.value
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
