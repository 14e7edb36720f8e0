"""The compiled kernels' cache is never used stale (bondgraph._jit): every kernel's source
is among the hashed files, and a change to any of them makes every one be compiled
again."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

pytest.importorskip("numba")

from bondgraph import _jit  # noqa: E402

KERNEL_MODULES = ("bondgraph._lu_kernels", "bondgraph._sparse_kernels",
                  "bondgraph._rk_kernels", "elements.kernels.compiled",
                  "elements.kernels.tree", "elements.contact.compiled")


def test_every_compiled_kernels_source_is_hashed():
    for name in KERNEL_MODULES:
        importlib.import_module(name)
    sources = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(("bondgraph", "elements")) or module is None:
            continue
        for value in vars(module).values():
            func = getattr(value, "py_func", None)
            if func is not None and hasattr(value, "recompile"):      # a numba kernel
                path = os.path.relpath(func.__code__.co_filename, _jit._ROOT)
                sources.add(path.replace(os.sep, "/"))
    assert sources, "no compiled kernel found"
    missing = sources - set(_jit.KERNEL_SOURCES)
    assert not missing, f"kernel sources not in _jit.KERNEL_SOURCES: {sorted(missing)}"


def test_a_changed_source_removes_every_kernels_cache_once(tmp_path, monkeypatch):
    root = tmp_path / "src"
    (root / "__pycache__").mkdir(parents=True)
    monkeypatch.setattr(_jit.config, "CACHE_DIR", "")        # the in-tree __pycache__
    names = ("a.py", "b.py")
    for n in names:
        (root / n).write_text(f"# {n}\n")
    cached = [root / "__pycache__" / f for f in
              ("a.f-3.py311.nbi", "a.f-3.py311.1.nbc", "b.g-7.py311.nbi", "c.h-1.py311.nbi")]

    def fill():
        for f in cached:
            f.write_bytes(b"x")
    fill()
    # the first time (no hash kept): the listed sources' kernels removed, the hash kept
    assert _jit.refresh_stale_cache(names, str(root), str(tmp_path))
    assert [f.exists() for f in cached] == [False, False, False, True]   # c.py: not listed
    fill()
    # unchanged: nothing removed
    assert not _jit.refresh_stale_cache(names, str(root), str(tmp_path))
    assert all(f.exists() for f in cached)
    # one file edited (its callers in the other must be compiled again too): both removed
    (root / "a.py").write_text("# a, edited\n")
    assert _jit.refresh_stale_cache(names, str(root), str(tmp_path))
    assert [f.exists() for f in cached] == [False, False, False, True]
