"""The application layer: the ``bondgraph`` command line, above both packages.

``bondgraph`` (the core) and ``elements`` (the multibody library) never import this
package; it imports both. Importing it costs nothing (the standard library only): the
commands and the packages they need are imported when :func:`main` runs, so that an
interrupt at any moment, even while numpy loads, ends the program the same way (one
line, exit 130).

- :func:`main`: run the command line with ``argv`` (default ``sys.argv[1:]``); returns
  the exit code (0 success; 1 a failed simulation or check; 2 bad input; 3 an internal
  error; 130 interrupted).

Commands: :mod:`bondgraph_cli.commands`; exit codes: :mod:`bondgraph_cli.exits`.
"""

from __future__ import annotations

import sys

from .exits import (
    EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, SIGINT_SEEN,
    interrupted,
)

__all__ = ["main", "console", "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring). Signal
    handling is left as it is (the process may be a host that calls it, a test)."""
    _safe_streams()
    try:
        from .commands import run
        return run(argv)
    except KeyboardInterrupt:
        return interrupted()


def _on_sigint(signum, frame) -> None:
    """Python's own Ctrl-C behaviour (raise KeyboardInterrupt), remembering that it
    came."""
    SIGINT_SEEN[0] = True
    raise KeyboardInterrupt


def console() -> None:
    """The ``bondgraph`` program: :func:`main`, then exit with its code (a second
    Ctrl-C while exiting is ignored: the work is done).

    A Ctrl-C that lands in the import of a compiled extension can surface as another
    error (scipy's HiGHS module raises ``ImportError: initialization failed``); after a
    Ctrl-C any error is reported as the interrupt it is. And when the KeyboardInterrupt
    passed through code that an extension ran with ``PyRun_String``, CPython would end
    the process by SIGINT (exit -2) after the clean report; an interrupted program
    therefore ends with ``os._exit(130)`` once its streams are flushed (the writers have
    removed their temporary files by then)."""
    import signal
    import threading
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        code = main()
    except KeyboardInterrupt:    # (one that came while the first was being reported)
        code = interrupted()
    except Exception:
        if not SIGINT_SEEN[0]:
            raise
        code = interrupted()
    finally:
        _ignore_interrupts()
    if code == EXIT_INTERRUPTED and SIGINT_SEEN[0]:
        import os
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


def _ignore_interrupts() -> None:
    """A second Ctrl-C must not turn a clean ending into a traceback."""
    import signal
    import threading
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _safe_streams() -> None:
    """Names that the terminal's encoding cannot show print as escapes instead of failing
    (a body called '質量' under LANG=C)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
