"""Named physical parameters: what a model's numbers are, held as data.

A graph declares its parameters (:meth:`BondGraph.add_parameter`: a name such as
``"m2.mass"``, a value, a unit, what it means, and whether it must be positive) and uses
their sympy symbols in its elements' laws (an inertia ``m``, a gravity force ``m g``). The
assembled model holds one :class:`ParameterSet`; a model with other values comes from the
same causal graph (:meth:`StateSpaceModel.with_parameters`, or ``simulate(...,
parameters={...})``), without copying or changing anything: a study, a fit or a
sensitivity computation hands new values to the same model.

- :class:`Parameter`: one declared parameter.
- :class:`ParameterSet`: an ordered, read-only mapping name -> value (float), with the
  declarations; :meth:`ParameterSet.updated` checks new values (known names, finite,
  positive where declared) and gives a new set.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy

from .element import MAX_MAGNITUDE, check_name
from .expressions import RESERVED_NAMES
from .errors import ModelError, NameNotFoundError, did_you_mean

__all__ = ["Parameter", "ParameterSet", "symbol"]


def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol of parameter ``name`` (real): the same object for the same name."""
    return sympy.Symbol(name, real=True)


@dataclass(frozen=True)
class Parameter:
    """A named physical parameter.

    Attributes
    ----------
    name : str
        ``"<owner>.<quantity>"`` by convention: ``"m2.mass"``, ``"J3.spring.k"``,
        ``"gravity.z"``, ``"motor.R"``.
    value : float
        Its value, in ``unit``.
    unit : str
        SI unit (``"kg"``, ``"N/m"``, ``"m/s^2"``; ``""`` for none).
    meaning : str
        What it is, in a few words.
    positive : bool
        Whether it must be > 0 (a mass, a stiffness); otherwise any finite value.
    """

    name: str
    value: float
    unit: str = ""
    meaning: str = ""
    positive: bool = False

    def __post_init__(self):
        check_name(self.name, "parameter")
        if self.name in RESERVED_NAMES:
            raise ModelError(f"parameter name {self.name!r} is {RESERVED_NAMES[self.name]} "
                             f"in every expression, so a parameter of that name would never "
                             f"be used; choose another name (e.g. '{self.name}0')")
        object.__setattr__(self, "value", self.checked(self.value))

    @property
    def symbol(self) -> sympy.Symbol:
        """Its sympy symbol (use it in element laws)."""
        return symbol(self.name)

    def checked(self, value) -> float:
        """``value`` as a float if it is valid for this parameter, else a ModelError
        naming the parameter and the rule."""
        try:
            if isinstance(value, (bool, np.bool_, str, bytes)):
                raise TypeError              # (true is not 1.0, nor "5" 5.0)
            v = float(value)
        except (TypeError, ValueError):
            unit = self.unit or "no unit"
            raise ModelError(f"parameter {self.name}: must be a number ({unit}), got "
                             f"{value!r}") from None
        if not math.isfinite(v):
            raise ModelError(f"parameter {self.name}: must be finite, got {value!r}")
        if abs(v) > MAX_MAGNITUDE:
            raise ModelError(f"parameter {self.name} = {value!r} is beyond "
                             f"{MAX_MAGNITUDE:.0e} in magnitude: products of such values "
                             f"overflow double precision")
        if self.positive and not v > 0:
            raise ModelError(f"parameter {self.name}: must be positive "
                             f"({self.meaning or self.unit}), got {v}")
        return v


class ParameterSet(Mapping[str, float]):
    """The parameters of a model: name -> value (float), in declaration order, read-only.

    ``values`` is the vector of values (a copy); :meth:`updated` gives a new set with
    some values changed (checked); :meth:`info` the declaration of a name."""

    __slots__ = ("_params", "_index")

    def __init__(self, parameters: Sequence[Parameter] = ()):
        self._params: tuple[Parameter, ...] = tuple(parameters)
        self._index = {p.name: k for k, p in enumerate(self._params)}
        if len(self._index) != len(self._params):
            seen: set[str] = set()
            dup = next(p.name for p in self._params if p.name in seen or seen.add(p.name))
            raise ModelError(f"parameter {dup!r} is declared twice")

    def __getitem__(self, name: str) -> float:
        try:
            return self._params[self._index[name]].value
        except KeyError:
            raise NameNotFoundError(f"no parameter named {name!r}"
                                    f"{did_you_mean(name, self._index)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._params)

    def __repr__(self) -> str:
        inner = ", ".join(f"{p.name}={p.value:g}" for p in self._params[:6])
        more = f", ... ({len(self)} in all)" if len(self) > 6 else ""
        return f"ParameterSet({inner}{more})"

    def __eq__(self, other) -> bool:
        if isinstance(other, ParameterSet):
            return self._params == other._params
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def names(self) -> tuple[str, ...]:
        """The names, in order."""
        return tuple(self._index)

    @property
    def values(self) -> np.ndarray:
        """The values, in order (a new array)."""
        return np.array([p.value for p in self._params], dtype=float)

    def info(self, name: str) -> Parameter:
        """The declaration of ``name``."""
        self[name]                       # (the error, with close names)
        return self._params[self._index[name]]

    def updated(self, values: Mapping[str, float] | Sequence[float] | np.ndarray | None
                ) -> "ParameterSet":
        """A set with ``values`` (by name, or a full vector in order) instead of the
        current ones, each checked.

        Raises
        ------
        ModelError
            Naming an unknown parameter (with close names and the valid ones) or a value
            that breaks its parameter's rule.
        """
        if values is None:
            return self
        if not isinstance(values, Mapping):
            arr = np.asarray(values, dtype=float).ravel()
            if arr.size != len(self):
                raise ModelError(f"a parameter vector needs {len(self)} values (for "
                                 f"{', '.join(self.names)}), got {arr.size}")
            values = dict(zip(self.names, arr))
        unknown = [n for n in values if n not in self._index]
        if unknown:
            raise ModelError(f"no parameter {unknown[0]!r}{did_you_mean(unknown[0], self)}; "
                             f"parameters: {', '.join(self.names) or 'none'}")
        params = list(self._params)
        for name, v in values.items():
            k = self._index[name]
            p = params[k]
            params[k] = Parameter(p.name, p.checked(v), p.unit, p.meaning, p.positive)
        return ParameterSet(params)

    def declarations(self) -> tuple[Parameter, ...]:
        """Every declared parameter, in order."""
        return self._params
