"""Ctrl-C at random moments of ``bondgraph run`` and ``bondgraph sweep`` (in-process and
on a local Dask cluster): exit 130 with one line on stderr, no temporary file left, no
failed row recorded for the interrupted run, and ``--resume`` completes the study.

The signal goes to the whole process group, as a terminal's Ctrl-C does (the workers of a
local cluster get it too). A run that finished before the signal came exits 0; each
test asserts that some of its moments did interrupt.
"""

from __future__ import annotations

import csv
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "examples", "three_body_prismatic.toml")
STUDY = os.path.join(ROOT, "examples", "three_body_sweep.toml")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def _interrupt(args, delay):
    """Run the command line in a new process group, send SIGINT to the group after
    ``delay`` s; (exit code, stderr)."""
    p = subprocess.Popen([sys.executable, "-m", "bondgraph_cli", *args], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         # (as a shell starts a program: SIGINT at its default)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    try:
        os.killpg(p.pid, signal.SIGINT)
    except ProcessLookupError:          # (it had finished)
        pass
    _, err = p.communicate(timeout=300)
    return p.returncode, err


def _no_temporary_files(out):
    return [f for f in glob.glob(os.path.join(out, "**"), recursive=True) if ".tmp" in f]


def _check_interrupted(code, err, what):
    assert code in (0, 130), f"{what}: exit {code}\n{err}"
    if code == 130:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("interrupted"), f"{what}:\n{err}"
    return code == 130


def _delays(seed, n, lo, hi):
    rng = random.Random(seed)
    return [rng.uniform(lo, hi) for _ in range(n)]


def test_run_interrupted_at_random_moments(tmp_path):
    hit, seen = 0, []
    for k, delay in enumerate(_delays(1, 4, 0.2, 3.0)):
        out = str(tmp_path / f"run{k}")
        code, err = _interrupt(["run", MODEL, "--out", out, "--quiet"], delay)
        seen.append((round(delay, 2), code, err))
        hit += _check_interrupted(code, err, f"run after {delay:.2f} s")
        assert not _no_temporary_files(out)
        if os.path.exists(os.path.join(out, "manifest.json")):     # lists what is there
            import json
            with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
                listed = json.load(f)["files"]
            assert all(os.path.exists(os.path.join(out, n)) for n in listed)
    assert hit >= 1, seen


def _rows(out):
    path = os.path.join(out, "results.csv")
    if not os.path.exists(path):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("executor, n, hi", [("inprocess", 3, 3.0), ("local", 2, 3.5)])
def test_sweep_interrupted_then_resumed(tmp_path, executor, n, hi):
    hit, seen = 0, []
    for k, delay in enumerate(_delays(2, n, 0.5, hi)):
        out = str(tmp_path / f"{executor}{k}")
        args = ["sweep", STUDY, "--out", out, "--quiet", "--executor", executor,
                "--workers", "2"]
        code, err = _interrupt(args, delay)
        seen.append((round(delay, 2), code, err))
        hit += _check_interrupted(code, err, f"sweep ({executor}) after {delay:.2f} s")
        assert not _no_temporary_files(out)
        rows = _rows(out)
        assert all(r["status"] == "ok" for r in rows), \
            [r["message"] for r in rows if r["status"] != "ok"]      # no bogus failed row
        done = subprocess.run([sys.executable, "-m", "bondgraph_cli", *args, "--resume"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        rows = _rows(out)
        assert len(rows) == 64 and len({r["run_id"] for r in rows}) == 64
        assert all(r["status"] == "ok" for r in rows)
        shutil.rmtree(out)
    assert hit >= 1, seen
