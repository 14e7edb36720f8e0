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
- :class:`MissingExtraError`: a feature needs an optional package that is not installed
  (also an ``ImportError``); its message names the extra that installs it.
- :class:`FMUBuildError`: an exported FMU's C sources could not be compiled (no C
  compiler, or the compiler failed); it names the folder where the sources were kept.
- :func:`require_extra`: import an optional package, or raise :class:`MissingExtraError`.
- :func:`caused_by_interrupt`: whether an exception is (or comes from) a Ctrl-C.
- :func:`signal_origin`, :func:`signal_safe`: a signal handler's exception raised as
  itself where compiled code or CPython's parser turned it into a SystemError.
- :func:`did_you_mean`: the close-name hint of "no such name" messages.
- :func:`warn`: a warning attributed to the user's line that called into the package.
"""

from __future__ import annotations

import contextlib

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
    "MissingExtraError",
    "FMUBuildError",
    "require_extra",
    "caused_by_interrupt", "signal_origin", "signal_safe",
    "did_you_mean",
    "warn",
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


class MissingExtraError(BondGraphError, ImportError):
    """Fires when a feature needs an optional package that is not installed. The message
    is one line that names the feature, the package and the extra of vector-bondgraph
    that installs it (``pip install "vector-bondgraph[plot]"``). The command line exits
    with 2 (a setup to change, not a bug)."""

    def __init__(self, feature: str, package: str, extra: str | None, hint: str = "",
                 failure: str = ""):
        self.feature, self.package, self.extra = feature, package, extra
        how = (f'pip install "vector-bondgraph[{extra}]" (or pip install {package})'
               if extra else f"pip install {package}")
        if failure:       # installed, but its import fails: a broken installation
            came = f' (it comes with "vector-bondgraph[{extra}]")' if extra else ""
            text = (f"{feature} needs {package}, which is installed but failed to import "
                    f"({failure}); reinstall it: pip install --force-reinstall "
                    f"{package}{came}")
        else:
            text = f"{feature} needs {package}, which is not installed: {how}"
        super().__init__(text + (f"; {hint}" if hint else ""))


class FMUBuildError(BondGraphError):
    """Fires when an exported FMU's C sources cannot be compiled into its binary (no C
    compiler on the machine, or the compiler's errors). The sources are kept in
    :attr:`sources` (a folder beside the FMU) and :attr:`log` holds the compiler's
    output; no FMU is written. The command line exits with 2."""

    def __init__(self, message: str, sources: str | None = None, log: str = ""):
        super().__init__(message)
        self.sources = sources
        self.log = log


def require_extra(module: str, feature: str, extra: str | None, *,
                  package: str | None = None, hint: str = ""):
    """Import the optional ``module`` for ``feature`` and return it.

    Parameters
    ----------
    module
        The dotted module to import (``"matplotlib.pyplot"``, ``"distributed"``).
    feature
        What needs it, as the user called it (``"result.plot()"``, ``"a Dask sweep"``).
    extra
        The extra of vector-bondgraph that installs it (``"plot"``), or None.
    package
        The distribution's name on PyPI when it differs from the module's top level.
    hint
        What else the user can do (``"or use --executor inprocess"``).

    Raises
    ------
    MissingExtraError
        When the module (or a package it needs) is not installed, or is installed but
        its import fails (the message says which).
    KeyboardInterrupt
        (or another signal handler's exception) when a signal interrupted the import: an
        extension interrupted half-way raises ImportError, which is not a missing package.
    """
    import importlib
    import importlib.util
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        origin = signal_origin(exc)
        if origin is not None:
            raise origin from exc
        top = module.split(".")[0]
        missing = (getattr(exc, "name", None) or top) if \
            isinstance(exc, ModuleNotFoundError) else top
        if missing.split(".")[0] != top:
            # the module is there but one of its own dependencies is missing (a failed
            # "from x import y" names x too: that is the module's own failure)
            top = package = missing.split(".")[0]
        try:
            present = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            present = False
        failure = " ".join(str(exc).split()) if present else ""
        raise MissingExtraError(feature, package or top, extra, hint, failure) from None


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


def signal_origin(exc: BaseException | None) -> BaseException | None:
    """The exception a signal handler raised (KeyboardInterrupt, SystemExit from a
    SIGTERM handler, any BaseException that is no Exception) of which ``exc`` is the
    consequence, or None. numba's dispatcher runs Python code around a compiled call;
    a handler that raises there leaves its exception set while the call returns, and
    Python reports ``SystemError: ... returned a result with an exception set`` chained
    to it (see :func:`signal_safe`)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if not isinstance(exc, Exception):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def signal_safe():
    """Around a call in which a signal handler's exception can surface as a SystemError
    (:func:`signal_origin`): a long call into compiled code (the compiled Runge-Kutta
    loop), or CPython 3.11's ``ast.parse``, which reports an exception raised inside it
    as ``SystemError: AST constructor recursion depth mismatch``. The handler's
    exception is raised as itself, so that Ctrl-C, a SIGTERM handler's SystemExit or a
    caller's own timer stop the work as they would in Python, never as an internal
    error."""
    try:
        yield
    except SystemError as exc:
        origin = signal_origin(exc)
        if origin is None:
            raise
        raise origin from None


def did_you_mean(name: object, choices) -> str:
    """``"; did you mean 'a', 'b'?"`` with the (up to three) choices closest to
    ``name``, or ``""`` when none is close: the hint every "no such name" message ends
    with."""
    import difflib
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=3)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``warnings.warn(message, category)`` attributed to the first caller outside
    the packages (``bondgraph``, ``elements``, ``bondgraph_cli``), as pandas'
    ``find_stack_level`` does, so that Python points at the user's line, however deep
    inside the package the warning arises, rather than at a line of the package."""
    import sys
    import warnings
    frame, level = sys._getframe(1), 1
    while frame is not None and \
            (frame.f_globals.get("__name__") or "").partition(".")[0] in _OWN:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


_OWN = frozenset({"bondgraph", "elements", "bondgraph_cli"})
