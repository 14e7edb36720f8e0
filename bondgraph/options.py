"""A run's options as objects, grouped by what they steer (in the manner of diffrax's
``SaveAt`` and ``Event``): made once, reused across runs, handed around whole.

- :class:`Solver`: the method, its tolerances and its steps.
- :class:`SaveAt`: what the run keeps: the output times, a continuous solution.
- :class:`Budget`: when a run stops early: accepted steps, wall-clock time, event
  crossings.
- :class:`Event`: a located zero crossing of a function of time and state, terminal or
  not, in one direction or both.

:func:`bondgraph.simulate` and :meth:`elements.MechanismModel.simulate` take them as
``solver=``, ``save=``, ``budget=`` and in ``events=`` (stabilisation already is an
object: :class:`~bondgraph.Baumgarte`). Their keywords of the same names (``rtol=``,
``t_eval=``, ...) stay a shorthand for one run. A field left at :data:`DEFAULT` means the
function's own default (they differ: ``simulate`` defaults to RK45 at rtol 1e-8, a
mechanism to DOP853 at 1e-9), so one object serves both. One option given both ways
(``rtol=`` and ``Solver(rtol=...)``) is refused, naming it, not silently resolved.

>>> from bondgraph import Solver, SaveAt
>>> tight = Solver(method="DOP853", rtol=1e-10)
>>> tight
Solver(method='DOP853', rtol=1e-10)
>>> SaveAt(t=[0.0, 0.5, 1.0]).keywords()
{'t_eval': [0.0, 0.5, 1.0]}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .errors import ModelError

__all__ = ["Solver", "SaveAt", "Budget", "Event", "DEFAULT", "merge_options"]


class _Default:
    """The type of :data:`DEFAULT` (one instance)."""

    _instance: "_Default | None" = None

    def __new__(cls) -> "_Default":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self):
        return (_Default, ())


DEFAULT: Any = _Default()
"""A field not given: the simulating function's own default for it."""


class _Options:
    """What the option groups share: their keywords, a short repr."""

    _KEYWORDS: Mapping[str, str] = {}     # field -> the simulate keyword it sets

    def keywords(self) -> dict[str, Any]:
        """The fields that were given, as the keywords of ``simulate`` they set."""
        return {self._KEYWORDS.get(f.name, f.name): getattr(self, f.name)
                for f in fields(self) if getattr(self, f.name) is not DEFAULT}

    def __repr__(self) -> str:
        given = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                          if getattr(self, f.name) is not DEFAULT)
        return f"{type(self).__name__}({given})"


@dataclass(frozen=True, repr=False)
class Solver(_Options):
    """How a run steps (each field as the :func:`bondgraph.simulate` keyword of the same
    name; :data:`DEFAULT`: the function's default).

    Attributes
    ----------
    method : str or scipy ``OdeSolver`` subclass
        ``"RK45"``, ``"DOP853"``, ``"Radau"``, ``"BDF"``, ``"LSODA"``
        (:data:`bondgraph.simulation.METHODS`) or a class.
    rtol : float
        Relative tolerance (dimensionless).
    atol : float, array (n_states,) or None
        Absolute tolerance, in each state's unit (None: from the states' nominal
        scales, in :func:`bondgraph.simulate`).
    max_step, first_step : float or None
        Largest and first step (s).
    compiled_loop : bool
        Take RK45/DOP853 steps in compiled calls where the evaluation is compiled.
    dense_reduction : bool
        Evaluate with the dense reduction instead of the sparse one.
    """

    method: Any = DEFAULT
    rtol: Any = DEFAULT
    atol: Any = DEFAULT
    max_step: Any = DEFAULT
    first_step: Any = DEFAULT
    compiled_loop: Any = DEFAULT
    dense_reduction: Any = DEFAULT


@dataclass(frozen=True, repr=False)
class SaveAt(_Options):
    """What a run keeps (:data:`DEFAULT`: the function's default).

    Attributes
    ----------
    t : array_like of float
        Output times (s) within the span (the keyword ``t_eval``).
    dense : bool
        Keep a continuous solution, ``result.sol`` (the keyword ``dense_output``).
    """

    t: Any = DEFAULT
    dense: Any = DEFAULT

    _KEYWORDS = {"t": "t_eval", "dense": "dense_output"}


@dataclass(frozen=True, repr=False)
class Budget(_Options):
    """When a run stops before its end, keeping what it computed (:data:`DEFAULT`: the
    function's default).

    Attributes
    ----------
    max_steps : int or None
        Accepted steps (status ``STEP_LIMIT``).
    max_wall_time : float or None
        Wall-clock seconds (status ``TIME_LIMIT``).
    max_events : int
        Event crossings (status ``EVENT_STORM``).
    """

    max_steps: Any = DEFAULT
    max_wall_time: Any = DEFAULT
    max_events: Any = DEFAULT


@dataclass(frozen=True)
class Event:
    """A zero crossing located during a run: ``condition(t, x)`` (t in s, x the state
    vector in the model's state order) changes sign.

    Attributes
    ----------
    condition : callable ``(t, x) -> float``
        The function whose zeros are located.
    terminal : bool
        True: the first crossing ends the run (status ``EVENT``).
    direction : float
        > 0: only rising crossings count; < 0: only falling ones; 0: both.
    name : str
        How results and messages name it (default: the function's name).

    An Event is called as its condition is, so it goes where ``events=`` takes a
    function (scipy's convention of ``terminal`` and ``direction`` attributes).
    """

    condition: Callable[[float, np.ndarray], float]
    terminal: bool = False
    direction: float = 0.0
    name: str = ""

    def __post_init__(self) -> None:
        if not callable(self.condition):
            raise ModelError(f"Event: condition must be a function (t, x) -> float, got "
                             f"{type(self.condition).__name__}")
        if not isinstance(self.terminal, (bool, np.bool_)):
            raise ModelError(f"Event {self.label}: terminal must be True or False, got "
                             f"{self.terminal!r}")
        try:
            direction = float(self.direction)
        except (TypeError, ValueError):
            direction = np.nan
        if not np.isfinite(direction):
            raise ModelError(f"Event {self.label}: direction must be a number (> 0 "
                             f"rising, < 0 falling, 0 both), got {self.direction!r}")

    @property
    def label(self) -> str:
        """The event's name, else its condition's."""
        return self.name or getattr(self.condition, "__name__", "event")

    def __call__(self, t: float, x: np.ndarray) -> float:
        return self.condition(t, x)


_GROUPS = {"solver": Solver, "save": SaveAt, "budget": Budget}


def _same(a: Any, b: Any) -> bool:
    """Whether a keyword still holds its default (numbers and names by value)."""
    if a is b:
        return True
    if isinstance(a, (str, bool, int, float)) and isinstance(b, (str, bool, int, float)):
        return type(a) is type(b) and a == b
    return False


def merge_options(where: str, keywords: dict[str, Any], defaults: Mapping[str, Any],
                  **groups: Any) -> dict[str, Any]:
    """``keywords`` with the given option objects' fields set in them.

    Parameters
    ----------
    where : str
        The function, for messages (``"simulate"``).
    keywords : dict
        The function's keyword values as called.
    defaults : mapping
        Their defaults (a keyword that differs from its default was given).
    **groups : Solver, SaveAt, Budget or None
        The objects, by the function's parameter name (``solver``, ``save``, ``budget``).

    Raises
    ------
    ModelError
        An object of the wrong type, or one option given both as a keyword and in an
        object (naming both).
    """
    out = dict(keywords)
    for param, obj in groups.items():
        if obj is None:
            continue
        cls = _GROUPS[param]
        if not isinstance(obj, cls):
            raise ModelError(f"{where}: {param}= takes a bondgraph.{cls.__name__}(...), got "
                             f"{type(obj).__name__}; e.g. {param}={cls.__name__}("
                             f"{fields(cls)[0].name}=...)")
        for key, value in obj.keywords().items():
            if key not in out:
                raise ModelError(f"{where} has no option {key!r} (from {param}=)")
            if not _same(out[key], defaults[key]):
                raise ModelError(f"{where}: {key} given twice, as the keyword {key}="
                                 f"{out[key]!r} and in {param}={obj!r}; give it once")
            out[key] = value
    return out

