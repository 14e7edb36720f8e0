"""numba, prepared once for the package's compiled kernels.

Every kernel module (``bondgraph._lu_kernels``, ``_sparse_kernels``, ``_rk_kernels``,
``elements.kernels.compiled``, ``elements.kernels.tree``) takes ``njit`` and ``types`` from
here, never from numba directly, so that before its first kernel is compiled or loaded:

- **the on-disk cache has a home.** numba caches a kernel next to its source
  (``__pycache__``), else in the user's cache folder (``~/.cache/numba``); where neither
  is writable (a read-only site-packages in a container with no home) numba would refuse
  to import the kernels at all. Then the cache goes to a folder of this user's in the
  system's temporary folder, and the first compile says where (``NUMBA_CACHE_DIR``
  chooses another).
- **a first run says why it is slow.** Compiling the kernels takes 20 s to a minute, once
  per machine (and after each upgrade); the first kernel compiled in a process prints
  one line on stderr saying so. Loading them from the cache prints nothing.
  ``BONDGRAPH_COMPILE_NOTICE=0`` silences it.

Nothing here runs at ``import bondgraph``: only a kernel module imports this one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading

from numba import njit, types
from numba.core import config, event

__all__ = ["njit", "types", "cache_location", "NOTICE"]

#: the line printed (with the cache's place) when this process first compiles a kernel
NOTICE = ("vector-bondgraph: compiling the numerical kernels for this machine (once: "
          "20 s to a minute; later runs load them from the cache{where})")

_PACKAGES = (os.path.dirname(os.path.abspath(__file__)),
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "elements"))
_STATE = {"announced": False, "fallback": ""}
_LOCK = threading.Lock()


def _writable(path: str) -> bool:
    """Whether a file can be created in ``path`` (made if missing), as numba tests it."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def _user_cache() -> str:
    """numba's user-wide cache folder (its ``appdirs.user_cache_dir('numba')`` on Linux
    and macOS; on Windows numba's own rule applies and this check is only a guess)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numba")


def cache_location() -> str:
    """Where this process's compiled kernels are cached: ``NUMBA_CACHE_DIR``, the
    packages' ``__pycache__`` folders, numba's user cache folder, or the fallback in the
    temporary folder (chosen here when the others are read-only)."""
    if config.CACHE_DIR:
        return str(config.CACHE_DIR)
    inside = [os.path.join(p, "__pycache__") for p in _PACKAGES if os.path.isdir(p)]
    if all(_writable(p) for p in inside):
        return "the packages' __pycache__ folders"
    if _writable(_user_cache()):
        return _user_cache()
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    fallback = os.path.join(tempfile.gettempdir(), f"vector-bondgraph-numba-{uid}")
    if not _writable(fallback):
        fallback = tempfile.mkdtemp(prefix="vector-bondgraph-numba-")
    config.CACHE_DIR = fallback          # read by numba's first cache locator
    _STATE["fallback"] = fallback
    return fallback


class _Notice(event.Listener):
    """Prints :data:`NOTICE` once, when numba starts compiling one of the package's
    kernels (a cache hit sends no compile event)."""

    def on_start(self, ev) -> None:
        if _STATE["announced"]:
            return
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        module = getattr(func, "__module__", "") or ""
        if not module.startswith(("bondgraph.", "elements.")):
            return               # a user's own numba code
        with _LOCK:
            if _STATE["announced"]:
                return
            _STATE["announced"] = True
        if os.environ.get("BONDGRAPH_COMPILE_NOTICE", "") == "0":
            return
        where = ""
        if _STATE["fallback"]:
            where = (f" in {_STATE['fallback']}: the package's folder and ~/.cache are "
                     f"read-only; set NUMBA_CACHE_DIR to keep them elsewhere")
        try:
            sys.stderr.write(NOTICE.format(where=where) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def on_end(self, ev) -> None:
        pass


cache_location()
event.register("numba:compile", _Notice())
