"""matplotlib, imported when a figure is drawn (it is an optional dependency).

- :func:`pyplot`: ``matplotlib.pyplot`` with the file backend (Agg) where a figure goes
  to a file, or a BondGraphError saying how to install it.
- :func:`have_matplotlib`: whether it imports.
"""

from __future__ import annotations

from typing import Any

from bondgraph.errors import BondGraphError

__all__ = ["pyplot", "have_matplotlib"]


def pyplot(what: str, *, to_file: bool = True) -> Any:
    """``matplotlib.pyplot`` for ``what`` (named in the error when matplotlib is not
    installed); with ``to_file`` the Agg backend (no display needed)."""
    try:
        import matplotlib
        if to_file:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BondGraphError(f"{what} needs matplotlib: pip install matplotlib (or the "
                             f"'plot' extra)") from None
    return plt


def have_matplotlib() -> bool:
    """Whether matplotlib imports here."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
