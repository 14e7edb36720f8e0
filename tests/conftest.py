"""Shared test configuration: the ``slow`` marker (``--runslow``) and tolerance helpers."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "helpers"))
sys.path.insert(0, os.path.join(HERE, "validation"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="run the suites marked slow (large fuzz runs)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow suite: run with --runslow (make test-slow)")
    for item in items:
        # (the marker, not the keywords: those hold the names of the folders above, and
        # a checkout in a folder named "slow" skipped every test)
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


def normalized_error(actual, expected, rtol, atol):
    """scipy's tolerance-normalised error: max |a - e| / (atol + rtol |e|); <= 1 passes."""
    a = np.asarray(actual, dtype=float)
    e = np.asarray(expected, dtype=float)
    return float(np.max(np.abs(a - e) / (atol + rtol * np.abs(e))))


def pytest_terminal_summary(terminalreporter):
    """Print the property suites' case counts by outcome."""
    mods = [m for name, m in list(sys.modules.items())
            if name.endswith(("test_fuzz", "test_file_fuzz")) and hasattr(m, "COUNTS")]
    for suite, counts in [kv for m in mods for kv in m.COUNTS.items()]:
        total = sum(counts.values())
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        terminalreporter.write_line(f"hypothesis {suite}: {total} cases ({parts})")
