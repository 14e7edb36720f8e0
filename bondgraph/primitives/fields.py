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
from ..laws import EnergyLaw, VectorLaw
from ..spatial import skew
from ._common import _check_dim, _short, _spd_problems, _square, _sym_square


class StorageBase(Element):
    """Base of storage elements (I and C).

    Subclasses must implement: ``kind``, ``category`` (INERTIA or CAPACITANCE),
    ``state_prefix`` (``"p"`` or ``"q"``) and :meth:`field_matrix`; a nonlinear kind
    gives its stored energy as ``self.energy`` (a sympy expression of its state,
    :mod:`bondgraph.laws`) instead, and :meth:`energy_law` returns it.
    """

    state_prefix = "x"
    energy: Any = None

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    @property
    def is_linear(self) -> bool:
        """True when the co-energy is F times the state (no ``energy`` expression)."""
        return self.energy is None

    def energy_law(self) -> EnergyLaw | None:
        """The stored energy H(x) as a law (None for a linear element: H = x F x / 2)."""
        if self.energy is None:
            return None
        return EnergyLaw(self.energy, self.state_prefix, self._dim, self.name)

    def coenergy_symbolic(self, x: sympy.Matrix) -> sympy.Matrix:
        """The co-energy variable (effort of a C, flow of an I) at the state symbols ``x``."""
        law = self.energy_law()
        if law is None:
            return self.field_matrix_symbolic() * x
        return law.gradient.xreplace(dict(zip(law.variables, x)))

    def tangent_symbolic(self, x: sympy.Matrix) -> sympy.Matrix:
        """d(co-energy)/d(state) at the state symbols ``x`` (F for a linear element)."""
        law = self.energy_law()
        if law is None:
            return self.field_matrix_symbolic()
        return law.hessian.xreplace(dict(zip(law.variables, x)))

    def problems_at(self, values: Mapping[str, float]) -> list[str]:
        if self.energy is None:
            return super().problems_at(values)
        try:
            self.energy_law().bind(values)
        except ModelError as exc:
            return [str(exc)]
        return []

    def _energy_problems(self, others: dict[str, Any]) -> list[str] | None:
        """Problems of a nonlinear element (None when it is linear): the energy must be
        the only law given, a valid expression of the state."""
        if self.energy is None:
            return None
        given = [k for k, v in others.items() if v is not None]
        if given:
            return [f"element '{self.name}': give either energy or {' / '.join(others)}, "
                    f"not both (got energy and {', '.join(given)})"]
        try:
            self.energy_law()
        except ModelError as exc:
            return [str(exc)]
        return []

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

    def _linear_only(self, what: str) -> None:
        if self.energy is not None:
            raise ModelError(f"element '{self.name}' has a nonlinear energy law; {what} "
                             f"exists for linear elements only (use energy_law())")


@register_element
class I(StorageBase):
    """Inertia: momentum p (state ``p_<name>``), flow = inertia^-1 p, dp/dt = effort.

    Parameters
    ----------
    inertia : number, vector (dim,) of diagonal entries, (dim, dim) SPD matrix, or sympy
        Mass (kg), moment of inertia (kg m^2) or inductance (H), in the frame of the
        bond's flow.
    energy : sympy expression, optional
        Instead of ``inertia``: the kinetic (or magnetic) energy (J) as an expression of
        the momentum ``p`` (``p1``, ``p2``, ... for dim > 1) and parameters; the flow is
        dH/dp (a saturating inductor, a relativistic mass...).
    """

    kind = "I"
    category = Category.INERTIA
    state_prefix = "p"

    def __init__(self, name: str, inertia: Any = None, *, energy: Any = None, dim: int = 1):
        super().__init__(name, dim=dim)
        self.inertia = inertia
        self.energy = energy

    def parameters(self) -> dict[str, Any]:
        if self.energy is not None:
            return {"energy": self.energy}
        return {"inertia": self.inertia}

    def problems(self) -> list[str]:
        nonlinear = self._energy_problems({"inertia": self.inertia})
        if nonlinear is not None:
            return nonlinear
        return _spd_problems(self.name, "inertia", self.inertia, self._dim)

    def inertia_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        self._linear_only("inertia_matrix")
        return _square(self.name, "inertia", self.inertia, self._dim, values)

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        return np.linalg.inv(self.inertia_matrix(values))

    def field_matrix_symbolic(self) -> sympy.Matrix:
        self._linear_only("field_matrix_symbolic")
        return _sym_square(self.inertia, self._dim).inv()

    def label(self, values: Mapping[str, float] | None = None) -> str:
        if self.energy is not None:
            return f"I: {self.name}\\nH={self.energy}"
        return f"I: {self.name}\\n{_short(self.inertia, values)}"


@register_element
class C(StorageBase):
    """Compliance: displacement q (state ``q_<name>``), effort = stiffness q, dq/dt = flow.

    Give exactly one of ``stiffness`` (N/m, N m/rad, 1/F), ``compliance`` (its inverse)
    or ``energy``: the stored energy (J) as a sympy expression of the displacement ``q``
    (``q1``, ``q2``, ... for dim > 1) and parameters, whose derivative dH/dq is the
    effort (``q**2/2 + q**4/4``: a hardening Duffing spring). The displacement is
    measured from the unstretched position.
    """

    kind = "C"
    category = Category.CAPACITANCE
    state_prefix = "q"

    def __init__(self, name: str, stiffness: Any = None, *, compliance: Any = None,
                 energy: Any = None, dim: int = 1):
        super().__init__(name, dim=dim)
        self.stiffness = stiffness
        self.compliance = compliance
        self.energy = energy

    def parameters(self) -> dict[str, Any]:
        if self.energy is not None:
            return {"energy": self.energy}
        if self.compliance is not None:
            return {"compliance": self.compliance}
        return {"stiffness": self.stiffness}

    def problems(self) -> list[str]:
        nonlinear = self._energy_problems({"stiffness": self.stiffness,
                                           "compliance": self.compliance})
        if nonlinear is not None:
            return nonlinear
        if (self.stiffness is None) == (self.compliance is None):
            return [f"element '{self.name}': give exactly one of 'stiffness' or 'compliance' "
                    f"(no physical default is assumed)"]
        which = "stiffness" if self.stiffness is not None else "compliance"
        return _spd_problems(self.name, which, getattr(self, which), self._dim)

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        self._linear_only("field_matrix")
        if self.compliance is not None:
            return np.linalg.inv(_square(self.name, "compliance", self.compliance, self._dim,
                                         values))
        return _square(self.name, "stiffness", self.stiffness, self._dim, values)

    def field_matrix_symbolic(self) -> sympy.Matrix:
        self._linear_only("field_matrix_symbolic")
        if self.compliance is not None:
            return _sym_square(self.compliance, self._dim).inv()
        return _sym_square(self.stiffness, self._dim)

    def label(self, values: Mapping[str, float] | None = None) -> str:
        if self.energy is not None:
            return f"C: {self.name}\\nH={self.energy}"
        p = self.parameters()
        (k, v), = p.items()
        return f"C: {self.name}\\n{k}={_short(v, values)}"


class ResistorBase(Element):
    """Base of resistive elements. Subclasses must implement :meth:`resistance_matrix`
    (effort = R flow, shape (dim, dim)) and :meth:`resistance_matrix_symbolic`; a
    nonlinear kind returns its laws from :meth:`resistor_law` instead."""

    def __init__(self, name: str, *, dim: int = 1):
        super().__init__(name)
        self._dim = _check_dim(name, dim)

    def ports(self) -> tuple[PortSpec, ...]:
        return (PortSpec("p", self._dim),)

    @property
    def is_linear(self) -> bool:
        """True when the law is a constant matrix (:meth:`resistance_matrix`)."""
        return True

    @property
    def prefers_conductance(self) -> bool:
        """True when the element should receive the effort (conductance causality) where
        the causality assignment is free to choose."""
        return False

    def resistor_law(self, resistance_causality: bool) -> VectorLaw | None:
        """The nonlinear law for the given causality: effort from flow (``True``) or flow
        from effort (``False``); None for a linear element.

        Raises
        ------
        ModelError
            When the element has no law for that causality.
        """
        return None

    def resistance_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        raise NotImplementedError

    def resistance_matrix_symbolic(self) -> sympy.Matrix:
        raise NotImplementedError


@register_element
class R(ResistorBase):
    """Resistance: effort = resistance @ flow (N s/m, N m s/rad, ohm), or a nonlinear law.

    In conductance causality (effort in) its flow = resistance^-1 effort, which needs an
    invertible resistance.

    Parameters
    ----------
    resistance : number, vector of diagonal entries, (dim, dim) matrix or sympy
        The linear law.
    effort_law : sympy expression (or ``dim`` of them), optional
        Instead of ``resistance``: the effort as a function of the flow ``f`` (``f1``,
        ``f2``, ... for dim > 1), e.g. quadratic drag ``c*f*Abs(f)``. Used where the
        element receives the flow.
    flow_law : sympy expression (or ``dim`` of them), optional
        The flow as a function of the effort ``e`` (``e1``, ...), e.g. a diode
        ``Is*(exp(e/Vt) - 1)`` or an orifice ``Cd*sign(e)*sqrt(Abs(e))``. Used where the
        element receives the effort; an element given only a flow law asks the
        causality assignment for that causality. Give both for a law that may be used
        either way (they must be inverses of each other).
    """

    kind = "R"
    category = Category.RESISTANCE

    def __init__(self, name: str, resistance: Any = None, *, effort_law: Any = None,
                 flow_law: Any = None, dim: int = 1):
        super().__init__(name, dim=dim)
        self.resistance = resistance
        self.effort_law = effort_law
        self.flow_law = flow_law

    def parameters(self) -> dict[str, Any]:
        if self.effort_law is not None or self.flow_law is not None:
            return {k: v for k, v in (("effort_law", self.effort_law),
                                      ("flow_law", self.flow_law)) if v is not None}
        return {"resistance": self.resistance}

    @property
    def is_linear(self) -> bool:
        return self.effort_law is None and self.flow_law is None

    @property
    def prefers_conductance(self) -> bool:
        return self.effort_law is None and self.flow_law is not None

    def resistor_law(self, resistance_causality: bool) -> VectorLaw | None:
        if self.is_linear:
            return None
        if resistance_causality:
            if self.effort_law is None:
                raise ModelError(
                    f"R '{self.name}' receives the flow in this graph (resistance "
                    f"causality) but has only a flow law f = g(e); give effort_law= (the "
                    f"effort as a function of the flow f) too, or change the graph so that "
                    f"it receives the effort")
            return VectorLaw(self.effort_law, "f", self._dim, self.name, "effort_law")
        if self.flow_law is None:
            raise ModelError(
                f"R '{self.name}' receives the effort in this graph (conductance causality) "
                f"but has only an effort law e = phi(f); give flow_law= (the flow as a "
                f"function of the effort e, the inverse law) too")
        return VectorLaw(self.flow_law, "e", self._dim, self.name, "flow_law")

    def problems(self) -> list[str]:
        if not self.is_linear:
            if self.resistance is not None:
                return [f"element '{self.name}': give either resistance or a law "
                        f"(effort_law / flow_law), not both"]
            out = []
            for which, prefix in (("effort_law", "f"), ("flow_law", "e")):
                value = getattr(self, which)
                if value is not None:
                    try:
                        VectorLaw(value, prefix, self._dim, self.name, which)
                    except ModelError as exc:
                        out.append(str(exc))
            return out
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

    def problems_at(self, values: Mapping[str, float]) -> list[str]:
        if self.is_linear:
            return super().problems_at(values)
        out = []
        for which, prefix in (("effort_law", "f"), ("flow_law", "e")):
            value = getattr(self, which)
            if value is not None:
                try:
                    VectorLaw(value, prefix, self._dim, self.name, which).bind(values)
                except ModelError as exc:
                    out.append(str(exc))
        return out

    def resistance_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        if not self.is_linear:
            raise ModelError(f"element '{self.name}' has a nonlinear law; resistance_matrix "
                             f"exists for linear elements only (use resistor_law())")
        return _square(self.name, "resistance", self.resistance, self._dim, values)

    def resistance_matrix_symbolic(self) -> sympy.Matrix:
        return _sym_square(self.resistance, self._dim)

    def label(self, values: Mapping[str, float] | None = None) -> str:
        if not self.is_linear:
            law = (f"e={self.effort_law}" if self.effort_law is not None
                   else f"f={self.flow_law}")
            return f"R: {self.name}\\n{law}"
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
