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
    EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, interrupted,
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


def console() -> None:
    """The ``bondgraph`` program: :func:`main`, then exit with its code (a second
    Ctrl-C while exiting is ignored: the work is done)."""
    try:
        code = main()
    except KeyboardInterrupt:    # (one that came while the first was being reported)
        code = interrupted()
    finally:
        _ignore_interrupts()
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
