"""The compiled paths' tests again with numba's bounds checks on (slow: a compile of
every kernel with the checks, about 4 minutes).

numba checks no array bounds in compiled code: a kernel that writes past an array's end
corrupts the heap silently, and the process aborts later somewhere else (the single
stage's one-call plan once wrote n_u values past a right-hand side of length 0; every
test of that path passed, and the fresh-clone suite aborted in LAPACK). With
``NUMBA_BOUNDSCHECK=1`` such a write is an IndexError in the test that makes it. The
kernels compiled with the checks go to a cache folder of their own (the package's
cache stays as it is)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMPILED_PATH_TESTS = ("tests/unit/test_fastrk.py", "tests/unit/test_sparse.py",
                       "tests/unit/test_sparse_laws.py", "tests/unit/test_compiled_sources.py",
                       "tests/unit/test_time_kernels.py", "tests/unit/test_fastlu.py",
                       "tests/property/test_fuzz_laws.py")


@pytest.mark.slow
def test_the_compiled_paths_index_within_their_arrays(tmp_path):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               BONDGRAPH_COMPILE_NOTICE="0")
    env["PYTHONPATH"] = os.pathsep.join(
        [ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-x", *COMPILED_PATH_TESTS], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=3000, check=False)
    tail = (out.stdout + out.stderr)[-4000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and "IndexError" not in out.stdout, tail
