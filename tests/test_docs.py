"""The documentation tells the truth: its code runs.

- Every fenced code block marked ``python`` in README.md and docs/*.md is run. The blocks
  of one file run in order in one shared namespace (a later snippet may use names from
  an earlier one), and each file starts with a fresh namespace. Blocks that are not
  meant to run use ``text`` or ``bash`` fences.
- The examples run as subprocesses with this interpreter and must exit with status 0
  and write the files they promise.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bondgraph import ELEMENT_TYPES

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1).lower() in ("python", "py"):
            line = text.count("\n", 0, match.start(2)) + 1
            blocks.append((line, match.group(2)))
    return blocks


DOCS_WITH_CODE = [p for p in DOC_FILES if python_blocks(p)]


def test_the_readme_and_the_docs_have_code():
    assert (ROOT / "README.md") in DOCS_WITH_CODE
    assert any(p.parent.name == "docs" for p in DOCS_WITH_CODE)


@pytest.fixture
def clean_registry():
    """Snippets may register element kinds; forget them afterwards."""
    before = dict(ELEMENT_TYPES)
    yield
    ELEMENT_TYPES.clear()
    ELEMENT_TYPES.update(before)


def _needs(path: Path) -> str:
    """Why a page's blocks cannot run on this machine ("" when they can): docs/fmu.md
    compiles FMUs (a C compiler) and runs them in fmpy (the test extra)."""
    if path.name != "fmu.md":
        return ""
    from bondgraph.fmu._build import find_compiler, platform_folder
    if find_compiler() is None or platform_folder() is None:
        return "no C compiler (cc, gcc, clang or $CC): docs/fmu.md builds FMUs"
    if importlib.util.find_spec("fmpy") is None:
        return "fmpy (the test extra) is not installed: docs/fmu.md runs FMUs in it"
    return ""


@pytest.mark.parametrize("path", DOCS_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(path, tmp_path, monkeypatch, clean_registry):
    if _needs(path):
        pytest.skip(_needs(path))
    blocks = python_blocks(path)
    monkeypatch.setenv("MPLBACKEND", "Agg")    # snippets that plot never open a window
    monkeypatch.chdir(tmp_path)              # snippets that write files write them here
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    for line, code in blocks:
        compiled = compile(code, f"{path.relative_to(ROOT)}:{line}", "exec")
        try:
            exec(compiled, namespace)
        except Exception as exc:             # name the block that failed
            raise AssertionError(f"the python block at {path.relative_to(ROOT)} line "
                                 f"{line} raised {type(exc).__name__}: {exc}") from exc


def run_example(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_custom_element_example(tmp_path):
    proc = run_example(str(ROOT / "examples" / "custom_element.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cross-checks: PASSED" in proc.stdout


def test_core_demo_example(tmp_path):
    out = tmp_path / "demo"
    proc = run_example(str(ROOT / "examples" / "core_demo.py"), "--out", str(out),
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cross-checks: PASSED" in proc.stdout
    expected = ["pendulum.csv", "dc_motor.csv", "pendulum_bond_graph.dot"]
    if importlib.util.find_spec("matplotlib") is not None:
        expected += ["pendulum_tension.png", "dc_motor.png"]
    if shutil.which("dot"):
        expected.append("pendulum_bond_graph.svg")
    for name in expected:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    header = (out / "pendulum.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "t_s,x_m,y_m,tension_N,tension_closed_form_N"


def test_the_results_table_names_every_result_view():
    """docs/multibody.md's Results section names every public field of the result views
    (BodyResult, JointResult, EnergyLedger) and every public name of MechanismResult,
    and says where a prescribed drive's effort is: a view added to the code and not to
    the docs fails here (EnergyLedger.other and coupling_effort were missing)."""
    import dataclasses

    from elements.results import BodyResult, EnergyLedger, JointResult, MechanismResult
    text = (ROOT / "docs" / "multibody.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Results\n"):]
    section = section[:section.index("\n## ", 1)]
    names = set()
    for cls in (BodyResult, JointResult, EnergyLedger):
        names |= {f.name for f in dataclasses.fields(cls) if f.name != "name"}
        names |= {n for n, v in vars(cls).items() if isinstance(v, property)}
    names |= {n for n in vars(MechanismResult) if not n.startswith("_")}
    names |= {"switches", "raw"}                      # (attributes set in __init__)
    missing = sorted(n for n in names if not re.search(rf"\b{n}\b", section))
    assert not missing, f"docs/multibody.md, Results: not named: {missing}"
    assert ".drive.b" in section and "prescribed_motion" in section
