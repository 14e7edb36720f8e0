"""The package's layering and public API."""

from __future__ import annotations

import subprocess
import sys

import bondgraph


def test_core_does_not_import_the_element_library():
    code = "import sys, bondgraph; print('elements' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_graphviz_is_imported_lazily():
    code = "import sys, bondgraph; print('graphviz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_every_exported_name_exists_and_is_documented():
    for name in bondgraph.__all__:
        obj = getattr(bondgraph, name)
        if callable(obj) and not isinstance(obj, type(bondgraph)):
            assert obj.__doc__, f"{name} has no docstring"
