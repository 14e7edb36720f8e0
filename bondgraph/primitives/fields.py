"""The fields: storage (``I``, ``C``; Eqs. (5)-(6): Z = F X), resistance (``R``;
Eq. (7): D_out = R D_in) and Euler junction structures (``EJS``; Eq. (8))."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy

from ..bonds import PortSpec
from ..element import Category, Element, StateView, is_symbolic, register_element
from ..errors import ModelError
from ..spatial import skew
from ._common import _check_dim, _short, _spd_problems, _square, _sym_square


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

    def label(self, values: Mapping[str, float] | None = None) -> str:
        return f"I: {self.name}\\n{_short(self.inertia, values)}"


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

    def label(self, values: Mapping[str, float] | None = None) -> str:
        p = self.parameters()
        (k, v), = p.items()
        return f"C: {self.name}\\n{k}={_short(v, values)}"


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

    def label(self, values: Mapping[str, float] | None = None) -> str:
        return f"R: {self.name}\\n{_short(self.resistance, values)}"


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
