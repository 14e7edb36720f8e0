"""Which of the paper's reductions gives the constraint efforts U_2.

- :class:`Branch`: ``EQ15`` (the constraint flows do not depend on U_2: they are
  differentiated once, Eq. (15)), ``EQ14`` (they do, through R or EJS terms: solved
  directly, Eq. (14)), ``NONE`` (no unknown sources). A string enum: it compares equal to
  ``"15"``, ``"14"`` and ``"none"`` and prints as those.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Branch"]


class Branch(StrEnum):
    """The reduction that solves for U_2 (see the module docstring)."""

    EQ15 = "15"
    EQ14 = "14"
    NONE = "none"
