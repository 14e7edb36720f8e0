"""Python's cyclic garbage collector paused while a model is built.

Building a model creates tens of thousands of small objects (elements, bonds, index
arrays, plans); every so many allocations the collector runs, and its full passes walk
every object of the process (numpy, scipy, numba and sympy loaded: millions). For
chain-100 that made the build 0.29 s or 0.42 s depending on when a pass fell
(``benchmarks/run.py``). Nothing a build makes is garbage while it runs, so
:func:`paused` switches the collector off for its duration and back on after (if it
was on: nested pauses and a user's own ``gc.disable()`` are respected); the
objects are collected as usual later.
"""

from __future__ import annotations

import functools
import gc
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def paused(fn: F) -> F:
    """Decorate ``fn`` to run with the cyclic garbage collector off."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return wrapper  # type: ignore[return-value]
