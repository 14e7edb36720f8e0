"""Two-ports: transformers and gyrators, constant (``TF``, ``GY``) or modulated by the
state (``MTF``, ``MGY``), and their moduli (:class:`Modulus`, :class:`ModulusContext`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ..bonds import PortSpec
from ..element import Category, Element, is_symbolic, register_element, resolve_parameter
from ..errors import ModelError
from ..laws import compile_numeric
from ._common import MAX_DIM, _check_dim, _short


@dataclass(frozen=True)
class Modulus:
    """A two-port's numeric modulus after parameters are resolved.

    ``constant`` is set for TF/GY; else ``value(*deps)`` and ``rate(*deps, *dep_rates)``
    give the modulus and its time derivative, with ``deps`` the values of the states named
    in ``depends_on``; with a ``context``, they take the context's result instead.
    """

    shape: tuple[int, int]
    constant: np.ndarray | None = None
    value: Callable[..., np.ndarray] | None = None
    rate: Callable[..., np.ndarray] | None = None
    depends_on: tuple[str, ...] = ()
    context: "ModulusContext | None" = None

    def value_at(self, *deps: Any) -> np.ndarray:
        """The modulus at the values of the states in ``depends_on``."""
        if self.context is not None:
            return self.value(self.context.value_at(*deps))
        return self.value(*deps)

    def rate_at(self, *deps_and_rates: Any) -> np.ndarray:
        """Its time derivative at the states' values followed by their rates."""
        if self.context is not None:
            return self.rate(self.context.rate_at(*deps_and_rates))
        return self.rate(*deps_and_rates)


@dataclass(frozen=True, eq=False)
class ModulusContext:
    """A computation several moduli share at one state, done once per evaluation.

    ``value(*deps)`` (deps: the values of the states named in ``depends_on``) and
    ``rate(*deps, *dep_rates)`` return any object (for example the rotation matrices and
    angular velocities of the bodies a joint connects); an MTF or MGY built with
    ``context=`` receives that object in place of the states, in both its modulus and its
    modulus rate. The result must not be modified by the moduli.

    With ``concatenated``, ``value`` receives one array, the states' values concatenated
    in ``depends_on`` order, and ``rate`` two (values, then rates): a context over many
    states (every body of a mechanism, say) then costs one gather per evaluation.

    ``batch`` (optional) vectorises the members: ``batch(functions)`` receives the
    callables that take this context's result (moduli, modulus rates or position
    constraints' values, all of one kind) and returns one function of the context's
    result giving all their values, each raveled row-major, concatenated in the order
    given; or None when it cannot, and then each member is called on its own. The
    evaluation uses it so that, say, every joint of one type is computed in one numpy
    call; it must give what the members give one by one.

    ``fuse`` (optional, with ``concatenated``) goes further, for a model all of whose
    moduli, modulus rates and position constraints have this one context:
    ``fuse(values, rates, phi)`` receives the three lists of member callables and
    returns an object with ``values(state) -> (moduli, phi)`` and ``rates(state,
    state_rates) -> moduli_rates`` (``state``: the concatenated values, as ``value``
    receives them; each output the members' values raveled and concatenated in the
    order given; fresh arrays, which the evaluation keeps), or None. The evaluation
    then makes two calls per state in place of the context and its batches (the element
    library compiles them into one call each); it must give what the members give.
    """

    value: Callable[..., Any]
    rate: Callable[..., Any]
    depends_on: tuple[str, ...] = ()
    batch: Callable[[Sequence[Callable[[Any], np.ndarray]]],
                    Callable[[Any], np.ndarray] | None] | None = None
    concatenated: bool = False
    fuse: Callable[..., Any] | None = None

    def value_at(self, *deps: Any) -> Any:
        """The context's result at the values of the states in ``depends_on``."""
        if self.concatenated:
            return self.value(np.concatenate([np.ravel(d) for d in deps]))
        return self.value(*deps)

    def rate_at(self, *deps_and_rates: Any) -> Any:
        """Its result with rates, at the states' values followed by their rates."""
        if self.concatenated:
            n = len(self.depends_on)
            return self.rate(np.concatenate([np.ravel(d) for d in deps_and_rates[:n]]),
                             np.concatenate([np.ravel(d) for d in deps_and_rates[n:]]))
        return self.rate(*deps_and_rates)


class TwoPortBase(Element):
    """Base of transformers and gyrators: port ``in`` (bond 1, dim n1) and ``out`` (bond 2,
    dim n2), modulus of shape (n2, n1).

    TF: f2 = mu f1, e1 = mu^T e2. GY: e2 = r f1, e1 = r^T f2.

    Subclasses must implement :meth:`modulus` and, for the symbolic path,
    :meth:`modulus_symbolic`; set ``invertible`` when the modulus is always invertible
    (then the causality assignment may also use the element the other way round).
    """

    shape: tuple[int, int]

    def ports(self) -> tuple[PortSpec, ...]:
        n2, n1 = self.shape
        return (PortSpec("in", n1), PortSpec("out", n2))

    @property
    def invertible(self) -> bool:
        return False

    def modulus(self, values: Mapping[str, float] | None = None) -> Modulus:
        raise NotImplementedError

    def modulus_symbolic(self) -> sympy.Matrix:
        raise NotImplementedError(f"{self.kind} '{self.name}' has no symbolic modulus")


class _ConstantTwoPort(TwoPortBase):
    def __init__(self, name: str, modulus: Any = None, *, dim: int | None = None):
        super().__init__(name)
        self.modulus_value = modulus
        arr = np.asarray(modulus, dtype=object) if modulus is not None else np.empty(0)
        if modulus is None:
            n = _check_dim(name, dim if dim is not None else 1)
            self.shape = (n, n)
        elif arr.ndim == 0:
            n = _check_dim(name, dim if dim is not None else 1)
            self.shape = (n, n)
        elif arr.ndim == 2:
            self.shape = (int(arr.shape[0]), int(arr.shape[1]))
            if dim is not None and dim != self.shape[1]:
                raise ModelError(f"{self.kind} '{name}': dim={dim} does not match the "
                                 f"modulus shape {self.shape} (n_out, n_in)")
        else:
            raise ModelError(f"{self.kind} '{name}': modulus has shape {arr.shape}; valid: "
                             f"a scalar or a matrix of shape (n_out, n_in)")

    def parameters(self) -> dict[str, Any]:
        return {"modulus": self.modulus_value}

    def problems(self) -> list[str]:
        if self.modulus_value is None:
            return [f"{self.kind} '{self.name}': parameter 'modulus' is missing"]
        if is_symbolic(self.modulus_value):
            return []
        try:
            self.modulus(None)
        except ModelError as exc:
            return [str(exc)]
        return []

    def _matrix(self, values: Mapping[str, float] | None) -> np.ndarray:
        arr = resolve_parameter(self.modulus_value, values, owner=self.name,
                                parameter="modulus")
        if arr.ndim == 0:
            return float(arr) * np.eye(self.shape[0])
        return arr

    @property
    def invertible(self) -> bool:
        if self.shape[0] != self.shape[1]:
            return False
        if is_symbolic(self.modulus_value):
            return bool(sympy.simplify(self.modulus_symbolic().det()) != 0)
        return bool(np.linalg.matrix_rank(self._matrix(None)) == self.shape[0])

    def modulus(self, values: Mapping[str, float] | None = None) -> Modulus:
        return Modulus(self.shape, constant=self._matrix(values))

    def modulus_symbolic(self) -> sympy.Matrix:
        v = self.modulus_value
        if np.ndim(np.asarray(v, dtype=object)) == 0:
            return sympy.sympify(v) * sympy.eye(self.shape[0])
        return sympy.Matrix(v)

    def label(self, values: Mapping[str, float] | None = None) -> str:
        return f"{self.kind}: {self.name}\\n{_short(self.modulus_value, values)}"


@register_element
class TF(_ConstantTwoPort):
    """Transformer: f2 = mu f1, e1 = mu^T e2, mu constant (scalar or (n2, n1) matrix)."""

    kind = "TF"
    category = Category.TRANSFORMER


@register_element
class GY(_ConstantTwoPort):
    """Gyrator: e2 = r f1, e1 = r^T f2, r constant (scalar or (n2, n1) matrix).
    A DC motor's torque constant (N m/A = V s/rad) is a scalar GY."""

    kind = "GY"
    category = Category.GYRATOR


class _ModulatedTwoPort(TwoPortBase):
    """A two-port whose modulus is a function of named states.

    Either ``modulus`` is a callable ``modulus(*deps) -> (n2, n1)`` with
    ``modulus_rate(*deps, *dep_rates) -> (n2, n1)`` its time derivative along the motion,
    or ``modulus`` is a sympy matrix whose free symbols named in ``depends_on`` are the
    states (other symbols are parameters); its rate is then derived exactly.
    """

    def __init__(self, name: str, modulus: Any = None, *, modulus_rate: Callable | None = None,
                 depends_on: Sequence[str] = (), shape: tuple[int, int] | None = None,
                 invertible: bool = False, context: ModulusContext | None = None):
        super().__init__(name)
        self.modulus_value = modulus
        self.modulus_rate = modulus_rate
        self.context = context
        if isinstance(depends_on, str):          # one state, not its characters
            depends_on = (depends_on,)
        if not all(isinstance(d, str) for d in depends_on):
            raise ModelError(f"{self.kind} '{name}': depends_on must be state names, got "
                             f"{depends_on!r}")
        if not isinstance(invertible, (bool, np.bool_)):
            raise ModelError(f"{self.kind} '{name}': invertible must be True or False, got "
                             f"{invertible!r}")
        if context is not None:
            if not isinstance(context, ModulusContext):
                raise ModelError(f"{self.kind} '{name}': context must be a ModulusContext, "
                                 f"got {type(context).__name__}")
            if depends_on and tuple(depends_on) != tuple(context.depends_on):
                raise ModelError(f"{self.kind} '{name}': with a context, the states are the "
                                 f"context's ({', '.join(context.depends_on)}); leave "
                                 f"depends_on out")
            depends_on = context.depends_on
        self.depends_on = tuple(depends_on)
        self._invertible = bool(invertible)
        if isinstance(modulus, (sympy.MatrixBase, sympy.Basic)):
            m = sympy.Matrix(modulus) if isinstance(modulus, sympy.MatrixBase) else \
                sympy.Matrix([[modulus]])
            self.modulus_value = m
            self.shape = (m.shape[0], m.shape[1])
        elif shape is not None:
            if (len(shape) != 2 or any(isinstance(s, bool) or
                                       not isinstance(s, (int, np.integer)) or
                                       not 1 <= s <= MAX_DIM for s in shape)):
                raise ModelError(f"{self.kind} '{name}': shape must be (n_out, n_in), "
                                 f"integers from 1 to {MAX_DIM}, got {shape!r}")
            self.shape = (int(shape[0]), int(shape[1]))
        else:
            raise ModelError(f"{self.kind} '{name}': give shape=(n_out, n_in) for a callable "
                             f"modulus")

    @property
    def invertible(self) -> bool:
        return self._invertible and self.shape[0] == self.shape[1]

    def state_dependencies(self) -> tuple[str, ...]:
        return self.depends_on

    def parameters(self) -> dict[str, Any]:
        return {"modulus": self.modulus_value, "depends_on": self.depends_on}

    def problems(self) -> list[str]:
        if self.modulus_value is None:
            return [f"{self.kind} '{self.name}': parameter 'modulus' is missing"]
        if isinstance(self.modulus_value, sympy.MatrixBase):
            return []
        if not callable(self.modulus_value):
            return [f"{self.kind} '{self.name}': modulus must be a callable of the states in "
                    f"depends_on, or a sympy matrix"]
        if self.modulus_rate is None:
            return [f"{self.kind} '{self.name}': a callable modulus needs its time derivative "
                    f"'modulus_rate(*states, *state_rates)' (dJ/dt enters Eq. (15))"]
        return []

    def modulus(self, values: Mapping[str, float] | None = None) -> Modulus:
        m = self.modulus_value
        n2, n1 = self.shape
        if isinstance(m, sympy.MatrixBase):
            state_syms = [sympy.Symbol(d) for d in self.depends_on]
            by_name = {s.name: s for s in m.free_symbols}
            state_syms = [by_name.get(d, sympy.Symbol(d)) for d in self.depends_on]
            params = [s for s in m.free_symbols if s.name not in self.depends_on]
            missing = [s.name for s in params if values is None or s.name not in values]
            if missing:
                raise ModelError(f"{self.kind} '{self.name}': modulus needs values for "
                                 f"symbol(s) {', '.join(sorted(missing))}; states must be "
                                 f"listed in depends_on={self.depends_on}")
            m = m.subs({s: values[s.name] for s in params}) if params else m
            rates = [sympy.Symbol(f"__rate_{i}") for i in range(len(state_syms))]
            mdot = sympy.zeros(n2, n1)
            for s, r in zip(state_syms, rates):
                mdot += m.diff(s) * r
            f = compile_numeric(state_syms, m, self.name, "modulus", (n2, n1))
            fr = compile_numeric(state_syms + rates, mdot, self.name, "modulus's rate",
                                 (n2, n1))

            def value(*deps):
                return f(*[float(np.squeeze(d)) for d in deps])

            def rate(*args):
                return fr(*[float(np.squeeze(a)) for a in args])

            return Modulus(self.shape, value=value, rate=rate, depends_on=self.depends_on)
        return Modulus(self.shape, value=m, rate=self.modulus_rate, depends_on=self.depends_on,
                       context=self.context)

    def modulus_symbolic(self) -> sympy.Matrix:
        if isinstance(self.modulus_value, sympy.MatrixBase):
            return self.modulus_value
        raise ModelError(f"{self.kind} '{self.name}': symbolic equations need its modulus as a "
                         f"sympy matrix, not a Python callable")

    def label(self, values: Mapping[str, float] | None = None) -> str:
        return f"{self.kind}: {self.name}"


@register_element
class MTF(_ModulatedTwoPort):
    """Modulated transformer: f2 = mu(x) f1, e1 = mu(x)^T e2."""

    kind = "MTF"
    category = Category.TRANSFORMER


@register_element
class MGY(_ModulatedTwoPort):
    """Modulated gyrator: e2 = r(x) f1, e1 = r(x)^T f2."""

    kind = "MGY"
    category = Category.GYRATOR
