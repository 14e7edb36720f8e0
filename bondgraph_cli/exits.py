"""The command line's exit codes, and the one line an interrupt prints.

- ``EXIT_OK`` 0, ``EXIT_FAILED`` 1 (a simulation or a check failed; what was computed is
  written), ``EXIT_BAD_INPUT`` 2 (a one-line message names the file, table and key),
  ``EXIT_INTERNAL`` 3 (a bug: rerun with --debug), ``EXIT_INTERRUPTED`` 130 (Ctrl-C).
- :func:`interrupted`: report an interrupt in one line; its exit code.
- :data:`SIGINT_SEEN`: set by the ``bondgraph`` program's SIGINT handler; after a Ctrl-C
  any error the command reports is the interrupt's consequence (an extension's import
  interrupted half-way raises ``ImportError``), so it is reported as the interrupt.
"""

from __future__ import annotations

import sys

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED",
           "interrupted", "SIGINT_SEEN"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

#: ``[True]`` once the ``bondgraph`` program's SIGINT handler ran (a list: one object that
#: the handler and the command runner share).
SIGINT_SEEN = [False]


def interrupted(what: str = "files being written were removed; finished ones are "
                             "kept") -> int:
    """Report an interrupt in one line (``what`` says what was kept) and give its exit
    code (files being written were removed by the writers themselves)."""
    try:
        sys.stderr.write(f"interrupted (Ctrl-C): {what}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return EXIT_INTERRUPTED
