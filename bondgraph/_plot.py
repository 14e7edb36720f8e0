"""matplotlib, imported when a figure is drawn (it is an optional dependency).

- :func:`pyplot`: ``matplotlib.pyplot`` with the file backend (Agg) where a figure goes
  to a file, or a :class:`~bondgraph.errors.MissingExtraError` naming the ``plot`` extra.
- :func:`have_matplotlib`: whether it imports.
"""

from __future__ import annotations

from typing import Any

from .errors import require_extra

__all__ = ["pyplot", "have_matplotlib"]


def pyplot(what: str, *, to_file: bool = True) -> Any:
    """``matplotlib.pyplot`` for ``what`` (named in the error when matplotlib is not
    installed); with ``to_file`` the Agg backend (no display needed)."""
    matplotlib = require_extra("matplotlib", what, "plot")
    if to_file:
        matplotlib.use("Agg")
    return require_extra("matplotlib.pyplot", what, "plot")


def have_matplotlib() -> bool:
    """Whether matplotlib imports here."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
