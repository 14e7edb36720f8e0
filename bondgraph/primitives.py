"""The primitive elements, scalar and vector, and their category bases.

Category bases (what a new element kind subclasses; each lists its hooks):

- :class:`SourceBase`: known effort or flow sources (``Se``, ``Sf``).
- :class:`StorageBase`: ``I`` and ``C`` storage fields (Eqs. (5)-(6): Z = F X).
- :class:`ResistorBase`: the resistive field (Eq. (7): D_out = R D_in).
- :class:`EulerBase`: Euler junction structures (Eq. (8): E_out = R_E E_in).
- :class:`TwoPortBase`: transformers and gyrators, constant or modulated.
- :class:`JunctionBase`: 0- and 1-junctions.

Primitive kinds (registered):

=======  =========================  ==================================================
kind     class                      law (bond 1 into a two-port, bond 2 out of it)
=======  =========================  ==================================================
Se       :class:`Se`                effort = value(t[, state])
Sf       :class:`Sf`                flow = value(t[, state])
Se*      :class:`UnknownEffort`     effort unknown (a constraint force); flow = 0
I        :class:`I`                 flow = inertia^-1 p, dp/dt = effort
C        :class:`C`                 effort = stiffness q, dq/dt = flow
R        :class:`R`                 effort = resistance flow
TF       :class:`TF`                f2 = mu f1, e1 = mu^T e2 (mu constant)
MTF      :class:`MTF`               as TF, mu a function of the state
GY       :class:`GY`                e2 = r f1, e1 = r^T f2 (r constant)
MGY      :class:`MGY`               as GY, r a function of the state
EJS      :class:`EJS`               effort = -h~ flow, h the momentum of an I element
0        :class:`ZeroJunction`      common effort, signed flows sum to zero
1        :class:`OneJunction`       common flow, signed efforts sum to zero
=======  =========================  ==================================================

Plus :class:`KinematicState`, a non-energy state that integrates a flow (positions,
orientation quaternions) and may modulate MTF/MGY elements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from .bonds import PortSpec
from .element import (
    Category,
    Element,
    StateFunction,
    StateView,
    TimeFunction,
    is_symbolic,
    register_element,
    resolve_parameter,
)
from .errors import ModelError
from .spatial import skew

__all__ = [
    "SourceBase", "StorageBase", "ResistorBase", "EulerBase", "TwoPortBase", "JunctionBase",
    "Se", "Sf", "UnknownEffort", "I", "C", "R", "TF", "MTF", "GY", "MGY", "EJS",
    "ZeroJunction", "OneJunction", "KinematicState", "WorkState", "PositionConstraint",
    "Modulus",
]


def _check_dim(name: str, dim: Any) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ModelError(f"element '{name}': dim must be a positive integer, got {dim!r}")
    return int(dim)


def _square(name: str, parameter: str, value: Any, dim: int,
            values: Mapping[str, float] | None) -> np.ndarray:
    """A parameter as a (dim, dim) matrix: scalars times identity, vectors as diagonals."""
    arr = resolve_parameter(value, values, owner=name, parameter=parameter)
    if arr.ndim == 0:
        return float(arr) * np.eye(dim)
    if arr.ndim == 1 and arr.shape == (dim,):
        return np.diag(arr)
    if arr.shape == (dim, dim):
        return arr
    raise ModelError(f"element '{name}': parameter '{parameter}' has shape {arr.shape}; "
                     f"valid: a scalar, a vector of {dim} diagonal entries, or a "
                     f"{dim}x{dim} matrix")


def _spd_problems(name: str, parameter: str, value: Any, dim: int) -> list[str]:
    """Problems with a matrix parameter that must be symmetric positive definite."""
    if value is None:
        return [f"element '{name}': parameter '{parameter}' is missing (no physical default "
                f"is assumed)"]
    if is_symbolic(value):
        return []
    try:
        mat = _square(name, parameter, value, dim, None)
    except ModelError as exc:
        return [str(exc)]
    if not np.allclose(mat, mat.T, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(mat).max())):
        return [f"element '{name}': parameter '{parameter}' is not symmetric: {mat.tolist()}"]
    scale = float(np.abs(mat).max()) or 1.0       # (scaled: no overflow inside eigvalsh)
    eig = np.linalg.eigvalsh(0.5 * (mat + mat.T) / scale) * scale
    if eig.min() <= 0.0:
        return [f"element '{name}': parameter '{parameter}' must be positive definite; its "
                f"smallest eigenvalue is {eig.min():.6g}"]
    return []


# =======================================================================================
# Sources
# =======================================================================================

@dataclass(frozen=True)
class SourceLaw:
    """A source's numeric law after parameters are resolved.

    ``value(t, state)`` and ``rate(t, state)`` return arrays of shape (dim,); ``rate`` is
    None when not available; ``state_dependent`` says whether ``value`` reads the state.
    """

    value: Callable[[float, StateView], np.ndarray]
    rate: Callable[[float, StateView], np.ndarray] | None
    state_dependent: bool
    constant: np.ndarray | None = None


class SourceBase(Element):
    """Base of known sources (Se, Sf).

    Subclasses must implement: class attributes ``kind`` and ``category``
    (``EFFORT_SOURCE`` or ``FLOW_SOURCE``); optionally override :meth:`law`.

    The value is a number, an array of ``dim`` numbers, a sympy expression, a
    :class:`~bondgraph.TimeFunction` (with its analytic rate) or a
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
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t)), rate, False)
        if isinstance(v, StateFunction):
            return SourceLaw(lambda t, s, f=v.value: self._vector(f(t, s)), None, True)
        const = self._vector(resolve_parameter(v, values, owner=self.name,
                                               parameter=self.value_name))
        zero = np.zeros(self._dim)
        return SourceLaw(lambda t, s: const, lambda t, s: zero, False, constant=const)

    def label(self) -> str:
        v = self.value
        text = "f(t)" if isinstance(v, TimeFunction) else (
            "f(t,x)" if isinstance(v, StateFunction) else _short(v))
        return f"{self.kind}: {self.name}\\n{text}"


@register_element
class Se(SourceBase):
    """Known effort source: effort = ``effort`` (N, N m, V, ...), imposed on its bond.

    Parameters
    ----------
    name : str
    effort : number, array (dim,), sympy expression, TimeFunction or StateFunction
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


# =======================================================================================
# Storage, resistance, EJS
# =======================================================================================

class StorageBase(Element):
    """Base of storage elements (I and C).

    Subclasses must implement: ``kind``, ``category`` (INERTIA or CAPACITANCE),
    ``state_prefix`` (``"p"`` or ``"q"``) and :meth:`field_matrix`.
    """

    state_prefix = "x"

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", self._dim),)

    @property
    def state_name(self) -> str:
        """Name of the energy state (``p_<name>`` or ``q_<name>``)."""
        return f"{self.state_prefix}_{self.name}"

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        """F of Eqs. (5)-(6): co-energy = F @ state, shape (dim, dim)."""
        raise NotImplementedError

    def field_matrix_symbolic(self) -> sympy.Matrix:
        """F as a sympy matrix (parameters may be symbols)."""
        raise NotImplementedError


@register_element
class I(StorageBase):
    """Inertia: momentum p (state ``p_<name>``), flow = inertia^-1 p, dp/dt = effort.

    Parameters
    ----------
    inertia : number, vector (dim,) of diagonal entries, (dim, dim) SPD matrix, or sympy
        Mass (kg), moment of inertia (kg m^2) or inductance (H), in the frame of the
        bond's flow.
    """

    kind = "I"
    category = Category.INERTIA
    state_prefix = "p"

    def __init__(self, name: str, inertia: Any = None, *, dim: int = 1):
        super().__init__(name, dim=dim)
        self.inertia = inertia

    def parameters(self) -> dict[str, Any]:
        return {"inertia": self.inertia}

    def problems(self) -> list[str]:
        return _spd_problems(self.name, "inertia", self.inertia, self._dim)

    def inertia_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        return _square(self.name, "inertia", self.inertia, self._dim, values)

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        return np.linalg.inv(self.inertia_matrix(values))

    def field_matrix_symbolic(self) -> sympy.Matrix:
        return _sym_square(self.inertia, self._dim).inv()

    def label(self) -> str:
        return f"I: {self.name}\\n{_short(self.inertia)}"


@register_element
class C(StorageBase):
    """Compliance: displacement q (state ``q_<name>``), effort = stiffness q, dq/dt = flow.

    Give exactly one of ``stiffness`` (N/m, N m/rad, 1/F) or ``compliance`` (its inverse).
    The displacement is measured from the unstretched position.
    """

    kind = "C"
    category = Category.CAPACITANCE
    state_prefix = "q"

    def __init__(self, name: str, stiffness: Any = None, *, compliance: Any = None,
                 dim: int = 1):
        super().__init__(name, dim=dim)
        self.stiffness = stiffness
        self.compliance = compliance

    def parameters(self) -> dict[str, Any]:
        if self.compliance is not None:
            return {"compliance": self.compliance}
        return {"stiffness": self.stiffness}

    def problems(self) -> list[str]:
        if (self.stiffness is None) == (self.compliance is None):
            return [f"element '{self.name}': give exactly one of 'stiffness' or 'compliance' "
                    f"(no physical default is assumed)"]
        which = "stiffness" if self.stiffness is not None else "compliance"
        return _spd_problems(self.name, which, getattr(self, which), self._dim)

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        if self.compliance is not None:
            return np.linalg.inv(_square(self.name, "compliance", self.compliance, self._dim,
                                         values))
        return _square(self.name, "stiffness", self.stiffness, self._dim, values)

    def field_matrix_symbolic(self) -> sympy.Matrix:
        if self.compliance is not None:
            return _sym_square(self.compliance, self._dim).inv()
        return _sym_square(self.stiffness, self._dim)

    def label(self) -> str:
        p = self.parameters()
        (k, v), = p.items()
        return f"C: {self.name}\\n{k}={_short(v)}"


class ResistorBase(Element):
    """Base of resistive elements. Subclasses must implement :meth:`resistance_matrix`
    (effort = R flow, shape (dim, dim)) and :meth:`resistance_matrix_symbolic`."""

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", self._dim),)

    def resistance_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        raise NotImplementedError

    def resistance_matrix_symbolic(self) -> sympy.Matrix:
        raise NotImplementedError


@register_element
class R(ResistorBase):
    """Resistance: effort = resistance @ flow (N s/m, N m s/rad, ohm).

    In conductance causality (effort in) its flow = resistance^-1 effort, which needs an
    invertible resistance.
    """

    kind = "R"
    category = Category.RESISTANCE

    def __init__(self, name: str, resistance: Any = None, *, dim: int = 1):
        super().__init__(name, dim=dim)
        self.resistance = resistance

    def parameters(self) -> dict[str, Any]:
        return {"resistance": self.resistance}

    def problems(self) -> list[str]:
        if self.resistance is None:
            return [f"element '{self.name}': parameter 'resistance' is missing (no physical "
                    f"default is assumed)"]
        if is_symbolic(self.resistance):
            return []
        try:
            mat = _square(self.name, "resistance", self.resistance, self._dim, None)
        except ModelError as exc:
            return [str(exc)]
        eig = np.linalg.eigvalsh(0.5 * (mat + mat.T))
        if eig.min() < -1e-14 * max(1.0, np.abs(mat).max()):
            return [f"element '{self.name}': parameter 'resistance' must be non-negative "
                    f"(dissipative); its symmetric part has eigenvalue {eig.min():.6g}"]
        return []

    def resistance_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        return _square(self.name, "resistance", self.resistance, self._dim, values)

    def resistance_matrix_symbolic(self) -> sympy.Matrix:
        return _sym_square(self.resistance, self._dim)

    def label(self) -> str:
        return f"R: {self.name}\\n{_short(self.resistance)}"


class EulerBase(Element):
    """Base of Euler junction structures: E_out = R_E(x) E_in (Eq. (8)), power-neutral.

    Fixed causality: receives the flow (omega), imposes the effort.
    Subclasses must implement :meth:`euler_matrix` and :meth:`state_dependencies`.
    """

    def euler_matrix(self, state: StateView) -> np.ndarray:
        raise NotImplementedError


@register_element
class EJS(EulerBase):
    """Euler junction structure of a rotating body, on its body-frame rotational junction.

    With its bond pointing from the junction into the EJS (the convention), its effort
    is ``-h~ omega`` where ``h`` is the body-frame angular momentum, the state of the
    I element named by ``momentum``; so the junction gives dh/dt = M + h~ omega (Euler's
    equations). It never does work: omega . (h~ omega) = 0.

    Parameters
    ----------
    momentum : str
        Name of the 3-dimensional I element whose momentum state is h (kg m^2/s).
    """

    kind = "EJS"
    category = Category.EULER

    def __init__(self, name: str, momentum: str | None = None):
        super().__init__(name)
        self.momentum = momentum

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", 3),)

    def parameters(self) -> dict[str, Any]:
        return {"momentum": self.momentum}

    def problems(self) -> list[str]:
        if not self.momentum:
            return [f"EJS '{self.name}': parameter 'momentum' (the name of its body's "
                    f"rotational I element) is missing"]
        return []

    def state_dependencies(self) -> tuple[str, ...]:
        return (f"p_{self.momentum}",) if self.momentum else ()

    def euler_matrix(self, state: StateView) -> np.ndarray:
        return -skew(state[f"p_{self.momentum}"])

    def euler_matrix_symbolic(self, h: sympy.Matrix) -> sympy.Matrix:
        x, y, z = h
        return -sympy.Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])


# =======================================================================================
# Two-ports
# =======================================================================================

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

    def label(self) -> str:
        return f"{self.kind}: {self.name}\\n{_short(self.modulus_value)}"


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
            if (len(shape) != 2 or any(not isinstance(s, (int, np.integer)) or s < 1
                                       for s in shape)):
                raise ModelError(f"{self.kind} '{name}': shape must be (n_out, n_in) positive "
                                 f"integers, got {shape!r}")
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
            f = sympy.lambdify(state_syms, m, "numpy")
            fr = sympy.lambdify(state_syms + rates, mdot, "numpy")

            def value(*deps):
                return np.asarray(f(*[float(np.squeeze(d)) for d in deps]), dtype=float)

            def rate(*args):
                return np.asarray(fr(*[float(np.squeeze(a)) for a in args]), dtype=float)

            return Modulus(self.shape, value=value, rate=rate, depends_on=self.depends_on)
        return Modulus(self.shape, value=m, rate=self.modulus_rate, depends_on=self.depends_on,
                       context=self.context)

    def modulus_symbolic(self) -> sympy.Matrix:
        if isinstance(self.modulus_value, sympy.MatrixBase):
            return self.modulus_value
        raise ModelError(f"{self.kind} '{self.name}': symbolic equations need its modulus as a "
                         f"sympy matrix, not a Python callable")

    def label(self) -> str:
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


# =======================================================================================
# Junctions, constraints, kinematic states
# =======================================================================================

@dataclass(frozen=True)
class PositionConstraint:
    """The position-level constraint Phi(x) of a constraint 0-junction (for drift
    measurement and Baumgarte stabilisation), defined so that dPhi/dt equals the
    junction's constraint flow (the Se* flow) on Phi = 0.

    ``value(*deps) -> ndarray (dim,)`` with ``deps`` the states named in ``depends_on``;
    with a ``context`` (:class:`ModulusContext`), ``value`` receives the context's value
    instead (shared with the moduli that use it) and ``depends_on`` is the context's.
    """

    value: Callable[..., np.ndarray]
    depends_on: tuple[str, ...] = ()
    context: ModulusContext | None = None

    def value_at(self, *deps: Any) -> np.ndarray:
        """Phi at the values of the states in ``depends_on``."""
        if self.context is not None:
            return self.value(self.context.value_at(*deps))
        return self.value(*deps)


class JunctionBase(Element):
    """Base of 0- and 1-junctions: any number of bonds of one dimension ``dim``."""

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    def ports(self) -> tuple[PortSpec, ...]:
        return ()

    @property
    def dim(self) -> int:
        return self._dim

    def parameters(self) -> dict[str, Any]:
        return {"dim": self._dim}

    def label(self) -> str:
        return self.kind


@register_element
class ZeroJunction(JunctionBase):
    """0-junction: common effort, signed flows sum to zero.

    Parameters
    ----------
    constraint : bool
        Flags a kinematic-constraint junction: the causality assignment prefers it when it
        inserts an unknown effort source Se* (whose effort is the constraint force).
    constraint_label : str, optional
        Name used for the inserted source: ``Se*_<label>`` (default: the junction's name).
    position_constraint : PositionConstraint, optional
        Phi for drift measurement and Baumgarte stabilisation.
    """

    kind = "0"
    category = Category.ZERO

    def __init__(self, name: str, *, dim: int = 1, constraint: bool = False,
                 constraint_label: str | None = None,
                 position_constraint: PositionConstraint | None = None):
        super().__init__(name, dim=dim)
        self.constraint = bool(constraint)
        self.constraint_label = constraint_label
        self.position_constraint = position_constraint

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {"dim": self._dim}
        if self.constraint:
            p["constraint"] = True
        if self.constraint_label:
            p["constraint_label"] = self.constraint_label
        if self.position_constraint is not None:
            p["position_constraint"] = self.position_constraint
        return p

    def state_dependencies(self) -> tuple[str, ...]:
        pc = self.position_constraint
        return tuple(pc.depends_on) if pc is not None else ()


@register_element
class OneJunction(JunctionBase):
    """1-junction: common flow, signed efforts sum to zero."""

    kind = "1"
    category = Category.ONE


@dataclass(frozen=True)
class KinematicState:
    """A non-energy state that integrates flows: d(state)/dt = rate(state, *flows, *reads).

    Parameters
    ----------
    name : str
        State name (e.g. ``"m2.r"``), unique among all states.
    source : str or tuple of str
        Where the flow(s) come from: a 1-junction (its common flow), a one-port element
        (its bond's flow) or a bond name; several for a rate that combines flows.
    dim : int
        Dimension of the state.
    rate : callable, optional
        ``rate(state, *flows, *read_states) -> ndarray (dim,)``; default: the (single)
        flow itself (dims equal). Orientation quaternions use ``0.5 q (x) (0, omega)``.
    reads : tuple of str
        Other kinematic states whose values ``rate`` also needs (e.g. orientations).
    vectorized : bool
        ``rate`` also accepts stacks: arguments of shape (n, dim) for n states, returning
        (n, dim). The states that share a vectorised rate function (and their dimensions)
        are then computed in one call per evaluation.
    """

    name: str
    source: str | tuple[str, ...]
    dim: int
    rate: Callable[..., np.ndarray] | None = None
    reads: tuple[str, ...] = ()
    vectorized: bool = False

    @property
    def sources(self) -> tuple[str, ...]:
        """The flow sources as a tuple."""
        return (self.source,) if isinstance(self.source, str) else tuple(self.source)


@dataclass(frozen=True)
class WorkState:
    """A state that integrates the power on a bond: d(state)/dt = e . f (J).

    Parameters
    ----------
    name : str
        State name (e.g. ``"work.M"``), unique among all states.
    source : str
        A one-port element (its bond) or a bond name. The power is counted in the bond's
        direction: for a source's bond (pointing out of the source) it is the work the
        source does on the system; for an R's bond, the energy it dissipates.
    """

    name: str
    source: str


# ---------------------------------------------------------------------------------------

def _sym_square(value: Any, dim: int) -> sympy.Matrix:
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        return sympy.sympify(value) * sympy.eye(dim)
    if arr.ndim == 1:
        return sympy.diag(*[sympy.sympify(v) for v in arr])
    return sympy.Matrix(arr.tolist())


def _short(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, sympy.Basic):
        return str(value)
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        try:
            return f"{float(value):.4g}"
        except (TypeError, ValueError):
            return str(value)
    try:
        f = np.asarray(value, dtype=float)
        if f.ndim == 2 and np.allclose(f, np.diag(np.diag(f))):
            return "diag(" + ", ".join(f"{v:.4g}" for v in np.diag(f)) + ")"
        return "[" + ", ".join(f"{v:.4g}" for v in f.ravel()) + "]"
    except (TypeError, ValueError):
        return str(arr.tolist())
