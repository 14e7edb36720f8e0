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
- **a changed kernel is never loaded stale.** numba checks a cached kernel against its
  own source file only, but kernels call and inline kernels of other files (the RK loop
  the sparse stages, the contact wrenches the narrow phase): an edited callee left its
  callers' cached code in use, silently (a shape kind added to the narrow phase was
  missed by the contact wrenches). So the sources of every kernel
  (:data:`KERNEL_SOURCES`) are hashed together; when the hash differs from the one the
  cache was made with, their cached kernels are removed (in every folder numba keeps
  them: ``NUMBA_CACHE_DIR``, ``__pycache__``, the user's cache), so that all are
  compiled again, once.
- **no garbage collection while compiling.** numba's compiler makes many short-lived
  Python objects, and each collection of the oldest generation walks every live object
  of the process: compiled late in a run (a model built, its results held), a kernel
  took a quarter longer (the three-body example's element program 10.6 s, not 8.0 s).
  From the start to the end of compiling one of the package's kernels (with what it
  compiles inside), the cyclic garbage collector is paused, then resumed as it was;
  reference counting frees memory as always.
- **a kernel passed to a kernel is looked up once.** A compiled function handed to a
  compiled call as a first-class function (the element program, a rate kernel, the
  compiled sources' kernels, to the compiled RK loop) is resolved to its address at
  every call: numba finds the compiled version for the signature and asks LLVM for its
  address, about 20 us per kernel, six kernels per call of the RK loop, which a run
  with many output times calls at every step. :func:`first_class` resolves it once.
- **an interrupted compile costs its cache, not the run.** A signal (Ctrl-C, a caller's
  timer) that lands in the callback by which LLVM hands numba a kernel's object code is
  swallowed by ctypes ("Exception ignored on calling ctypes callback function"): the
  compile goes on and the kernel works, but numba holds no object code to cache, and
  saving it (or a kernel that calls it) raised ``RuntimeError: no compiled object yet``
  at every later compile of the process: an internal error, found by the expression
  fuzzing's timers. :func:`njit` gives the package's kernels a cache that skips such a
  save (once per process a line on stderr says so; the next process compiles them
  again).
- **a first run says why it is slow.** Compiling the kernels takes 20 s to a minute, once
  per machine (and after each upgrade); the first kernel compiled in a process prints
  one line on stderr saying so. Loading them from the cache prints nothing.
  ``BONDGRAPH_COMPILE_NOTICE=0`` silences it.

Nothing here runs at ``import bondgraph``: only a kernel module imports this one.
"""

from __future__ import annotations

import gc
import hashlib
import inspect
import os
import sys
import tempfile
import threading

from numba import njit as _numba_njit
from numba import types
from numba.core import config, event
from numba.core.caching import FunctionCache
from numba.typed import List

__all__ = ["njit", "types", "List", "cache_location", "refresh_stale_cache", "NOTICE",
           "UNSAVED_NOTICE",
           "KERNEL_SOURCES", "first_class"]

#: the line printed (with the cache's place) when this process first compiles a kernel
NOTICE = ("vector-bondgraph: compiling the numerical kernels for this machine (once: "
          "20 s to a minute; later runs load them from the cache{where})")

_PACKAGES = (os.path.dirname(os.path.abspath(__file__)),
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "elements"))
_STATE = {"announced": False, "fallback": "", "depth": 0, "paused": False,
          "unsaved": False}

KERNEL_SOURCES = ("bondgraph/_lu_kernels.py", "bondgraph/_sparse_kernels.py",
                  "bondgraph/_rk_kernels.py", "bondgraph/_time_kernels.py",
                  "bondgraph/_expr_kernels.py",
                  "bondgraph/spatial.py",
                  "elements/kernels/compiled.py", "elements/kernels/tree.py",
                  "elements/contact/compiled.py", "elements/contact/shapes.py",
                  "elements/contact/gjk.py", "elements/contact/detect.py")
"""The files whose functions are compiled (relative to the folder holding the two
packages); ``tests/unit/test_jit_cache.py`` checks that every compiled kernel's source is
listed."""
_ROOT = os.path.dirname(_PACKAGES[0])
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


def _stamp_folder() -> str | None:
    """Where the kernels' hash is kept: the cache's own folder (None: nowhere
    writable)."""
    if config.CACHE_DIR:
        folder = str(config.CACHE_DIR)
    else:
        inside = os.path.join(_PACKAGES[0], "__pycache__")
        folder = inside if _writable(inside) else _user_cache()
    return folder if _writable(folder) else None


def _cache_folders(path: str) -> list[str]:
    """The folders where numba may keep the kernels compiled from ``path``: its
    ``NUMBA_CACHE_DIR`` sub-folder, or the ``__pycache__`` beside it and the user-wide
    one (numba's rule; its private sub-path helper, so nothing where it is missing)."""
    try:
        from numba.core.caching import _CacheLocator
        subpath = _CacheLocator.get_suitable_cache_subpath(path)
    except (ImportError, AttributeError, TypeError):
        subpath = None
    if config.CACHE_DIR:
        return [os.path.join(str(config.CACHE_DIR), subpath)] if subpath else []
    out = [os.path.join(os.path.dirname(path), "__pycache__")]
    if subpath:
        out.append(os.path.join(_user_cache(), subpath))
    return out


def _remove_cached(path: str) -> None:
    """Remove the cached kernels compiled from the source file ``path``."""
    stem = os.path.splitext(os.path.basename(path))[0] + "."
    for folder in _cache_folders(path):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith(stem) and name.endswith((".nbi", ".nbc")):
                try:
                    os.remove(os.path.join(folder, name))
                except OSError:
                    pass


def refresh_stale_cache(sources: tuple[str, ...] = KERNEL_SOURCES, root: str = _ROOT,
                        folder: str | None = None) -> bool:
    """Remove every kernel source's cached kernels when their joint hash is not the one
    the cache was made with (see the module docstring); returns whether it did.
    ``folder``: where the hash is kept (default: the cache's folder)."""
    digest = hashlib.sha256()
    paths = [os.path.join(root, s) for s in sources]
    for path in paths:
        try:
            with open(path, "rb") as f:
                digest.update(f.read())
        except OSError:
            digest.update(b"-")
    key = digest.hexdigest()
    folder = folder or _stamp_folder()
    if folder is None:
        return False
    stamp = os.path.join(folder, "vector-bondgraph-kernels.sha256")
    try:
        with open(stamp, encoding="ascii") as f:
            if f.read().strip() == key:
                return False
    except OSError:
        pass
    for path in paths:
        _remove_cached(path)
    try:
        with open(stamp, "w", encoding="ascii") as f:
            f.write(key + "\n")
    except OSError:
        pass
    return True


class _Notice(event.Listener):
    """Prints :data:`NOTICE` once, when numba starts compiling one of the package's
    kernels (a cache hit sends no compile event), and pauses the garbage collector
    while one of them compiles (see the module docstring). numba compiles under its
    global lock: compile events nest, one thread at a time; the end event comes on an
    error too."""

    def on_start(self, ev) -> None:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        module = getattr(func, "__module__", "") or ""
        ours = module.startswith(("bondgraph.", "elements."))
        if _STATE["depth"] == 0 and ours and gc.isenabled():
            gc.disable()
            _STATE["paused"] = True
        _STATE["depth"] += 1
        if _STATE["announced"] or not ours:
            return               # (not ours: a user's own numba code)
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
        _STATE["depth"] = max(_STATE["depth"] - 1, 0)
        if _STATE["depth"] == 0 and _STATE["paused"]:
            _STATE["paused"] = False
            gc.enable()


cache_location()
refresh_stale_cache()
event.register("numba:compile", _Notice())


class _Resolved(types.WrapperAddressProtocol):
    """A compiled kernel with its address for one signature resolved once (numba's
    wrapper address protocol: compiled code calls it as it would the kernel)."""

    def __init__(self, kernel, signature, address: int):
        self.kernel, self._signature, self._address = kernel, signature, address
        # (read by numba's typing of a call's arguments, as a dispatcher's is: without
        # it each call types this object through the slower generic path)
        self._numba_type_ = types.FunctionType(signature)

    def __wrapper_address__(self) -> int:
        return self._address

    def signature(self):
        return self._signature


def first_class(kernel, signature):
    """``kernel`` (a numba dispatcher) as a first-class function of ``signature`` whose
    address is looked up now, not at every compiled call it is passed to (see the
    module docstring); the kernel itself where numba does not offer the lookup (then
    each call looks it up, as before). Compiles the kernel for ``signature`` if needed;
    the same object for the same kernel and signature for the rest of the process."""
    key = (kernel, signature)
    with _RESOLVED_LOCK:
        got = _RESOLVED.get(key)
    if got is not None:
        return got
    try:
        from numba.experimental.function_type import _get_wrapper_address
        address = _get_wrapper_address(kernel, signature)
    except (ImportError, AttributeError, TypeError, NotImplementedError):  # pragma: no cover
        return kernel
    got = _Resolved(kernel, signature, int(address))
    with _RESOLVED_LOCK:
        _RESOLVED[key] = got
    return got


_RESOLVED: dict = {}       # (kernel, signature) -> its _Resolved (a process's kernels stay)
_RESOLVED_LOCK = threading.Lock()


UNSAVED_NOTICE = ("vector-bondgraph: a compile of the numerical kernels was interrupted in "
                  "this process; the kernels it compiles from now on are not cached (the "
                  "next process compiles them again)")


class _KernelCache(FunctionCache):
    """numba's cache of one kernel, which skips a save that finds no object code (an
    interrupted compile: see the module docstring) instead of failing the call."""

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except RuntimeError as exc:
            if "no compiled object" not in str(exc):
                raise
            with _LOCK:
                if _STATE["unsaved"]:
                    return
                _STATE["unsaved"] = True
            if os.environ.get("BONDGRAPH_COMPILE_NOTICE", "") != "0":
                try:
                    sys.stderr.write(UNSAVED_NOTICE + "\n")
                    sys.stderr.flush()
                except (OSError, ValueError, AttributeError):
                    pass


def njit(signature=None, **options):
    """numba's ``njit`` for the package's kernels: the same arguments (a signature or
    list of them, compiled now; ``cache``, ``inline``, ``error_model``...), but a cached
    kernel gets :class:`_KernelCache`. Used as ``@njit(...)``, ``njit(...)(f)`` or
    ``@njit``."""
    if inspect.isfunction(signature):           # (@njit without arguments)
        return njit(**options)(signature)
    cache = options.pop("cache", False)
    signatures = (None if signature is None else
                  list(signature) if isinstance(signature, (list, tuple)) else [signature])

    def decorate(func):
        kernel = _numba_njit(**options)(func)
        if not hasattr(kernel, "compile"):      # (NUMBA_DISABLE_JIT: the Python function)
            return kernel
        if cache:
            kernel._cache = _KernelCache(kernel.py_func)
        if signatures is not None:
            from numba.core import typeinfer
            with typeinfer.register_dispatcher(kernel):   # (as numba's decorator does)
                for sig in signatures:
                    kernel.compile(sig)
                kernel.disable_compile()
        return kernel
    return decorate
