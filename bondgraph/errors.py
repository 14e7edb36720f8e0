"""The package's exception hierarchy.

Every public entry point raises one of these (or a subclass) for bad input, never a
bare numpy or networkx error.

- :class:`BondGraphError`: base of every error of the package.
- :class:`ModelError`: the graph or a parameter is invalid (also a ``ValueError``).
- :class:`PortError`: a bond names a missing element or port, or a port is misused.
- :class:`NameNotFoundError`: a lookup by name failed (also a ``KeyError``).
- :class:`CausalityError`: causality cannot be assigned.
- :class:`DifferentialCausalityError`: a storage element stays in differential causality
  and no constraint junction can take an unknown effort source.
- :class:`AlgebraicLoopError`: an algebraic loop cannot be solved (singular).
- :class:`NonFiniteLawError`: a nonlinear law is not finite where it is evaluated.
- :class:`SingularConstraintError`: the constraint matrix (H4 or T_LE) loses rank.
- :class:`IntegrationError`: the solver failed (raised only on request).
- :class:`IntegrationWarning`: the solver failed and a partial result was returned.
- :func:`caused_by_interrupt`: whether an exception is (or comes from) a Ctrl-C.
- :func:`did_you_mean`: the close-name hint of "no such name" messages.
"""

from __future__ import annotations

__all__ = [
    "BondGraphError",
    "ModelError",
    "PortError",
    "NameNotFoundError",
    "CausalityError",
    "DifferentialCausalityError",
    "AlgebraicLoopError",
    "NonFiniteLawError",
    "SingularConstraintError",
    "IntegrationError",
    "IntegrationWarning",
    "caused_by_interrupt",
    "did_you_mean",
]


class BondGraphError(Exception):
    """Base class of every error raised by the package."""


class ModelError(BondGraphError, ValueError):
    """Fires when a graph, an element or a parameter is invalid; lists every problem found."""

    def __init__(self, problems: str | list[str]):
        if isinstance(problems, str):
            problems = [problems]
        self.problems: list[str] = list(problems)
        if len(self.problems) == 1:
            msg = self.problems[0]
        else:
            msg = f"{len(self.problems)} problems found:\n" + "\n".join(
                f"  - {p}" for p in self.problems
            )
        super().__init__(msg)


class PortError(ModelError):
    """Fires when a bond names a missing element or port, or connects a port twice."""


class NameNotFoundError(BondGraphError, KeyError):
    """Fires when an element, bond, state, body, joint or column is looked up by a name that
    does not exist; the message lists the close matches or the valid names."""

    def __str__(self) -> str:          # KeyError would print the message's repr
        return str(self.args[0]) if self.args else ""


class CausalityError(BondGraphError):
    """Fires when causality cannot be assigned consistently."""


class DifferentialCausalityError(CausalityError):
    """Fires when a storage element is forced into differential causality and no
    0-junction on its causal path can take an unknown effort source (Se*)."""


class AlgebraicLoopError(CausalityError):
    """Fires when an algebraic loop of the junction structure is singular."""


class NonFiniteLawError(ModelError):
    """Fires when a nonlinear law (a storage element's energy, a resistor's law, a
    source's expression of time) is not finite at the value it is evaluated at (a square
    root of a negative number, an exponential that overflows). Names the element and the
    value. Inside a run it is not an error of the model but of the trial: Newton's method
    shortens its step, the solver rejects the stage and shrinks its step; a run that
    cannot get past it ends with status ``NON_FINITE``."""


class SingularConstraintError(BondGraphError):
    """Fires when the constraint matrix (H4 of Eq. (15), or T_LE of Eq. (14)) loses rank
    during a run: a singular configuration. Names the constraint sources and the time."""

    def __init__(self, message: str, *, time: float | None = None,
                 sources: tuple[str, ...] = ()):
        super().__init__(message)
        self.time = time
        self.sources = sources


class IntegrationError(BondGraphError):
    """Fires when the solver fails and the caller asked for ``raise_on_failure=True``.

    The partial result computed up to the failure is kept in :attr:`result`."""

    def __init__(self, message: str, result: object | None = None):
        super().__init__(message)
        self.result = result


class IntegrationWarning(UserWarning):
    """Emitted when the solver fails: the partial result up to the failure is returned."""


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt or was raised because of one.

    An interrupt (Ctrl-C, SIGINT) that arrives while compiled code runs Python code
    inside its call (numba's dispatcher, a user function called back) can surface as
    another exception chained to the KeyboardInterrupt, e.g. ``SystemError: ... returned
    a result with an exception set``. Code that turns exceptions into results (a failed
    run, a study's error row, NaN outputs) asks this first and re-raises the interrupt
    instead: an interrupt must stop the work, never become a result."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def did_you_mean(name: object, choices) -> str:
    """``"; did you mean 'a', 'b'?"`` with the (up to three) choices closest to
    ``name``, or ``""`` when none is close: the hint every "no such name" message ends
    with."""
    import difflib
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=3)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""
