"""Model files: malformed tables, spherical initial orientations, loads, [initial] keys;
and the command line's handling of them (one clean line, exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from elements.modelfile import ModelFileError, loads_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PENDULUM = '''
[model]
name = "pendulum"
gravity = [0.0, -9.81, 0.0]

[[body]]
name = "rod"
mass = 1.2
inertia = { principal = [0.036, 0.036, 0.036] }
points = { top = [0.0, 0.3, 0.0], tip = [0.0, -0.3, 0.0] }

[[joint]]
name = "hinge"
type = "revolute"
parent = "ground"
child = "rod"
child_point = "top"
axis = [0.0, 0.0, 1.0]
damper = 0.05

[[load]]
name = "gust"
type = "force"
body = "rod"
point = "tip"
value = [0.5, 0.0, 0.0]

[initial]
q = { hinge = 0.5 }

[solver]
t_end = 0.2
points = 5

[output]
[[output.plot]]
file = "angle.png"
y = ["hinge.q"]
'''


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "bondgraph", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def error(text, path="bad.toml"):
    with pytest.raises(ModelFileError) as info:
        loads_model(text, path)
    return str(info.value)


def test_the_base_file_is_valid():
    spec = loads_model(PENDULUM, "good.toml")
    assert list(spec.mechanism.joints) == ["hinge"] and list(spec.mechanism.loads) == ["gust"]
    assert len(spec.output.plots) == 1


# -- 1. arrays of tables written with one bracket ------------------------------------------

@pytest.mark.parametrize("header, what", [
    ("[[joint]]", "joint"), ("[[load]]", "load"), ("[[body]]", "body"),
    ("[[output.plot]]", "output.plot"),
])
def test_single_bracket_array_of_tables_is_an_error(header, what):
    text = PENDULUM.replace(header, header[1:-1])
    msg = error(text)
    assert msg.startswith(f"bad.toml: [{what}] ")
    assert "array of tables" in msg and f"[[{what}]]" in msg


@pytest.mark.parametrize("text, what", [
    ("joint = [1, 2]\n", "joint"),
    ("load = 3\n", "load"),
])
def test_array_of_tables_keys_must_hold_tables(text, what):
    msg = error(text + "[model]\ngravity = [0.0, 0.0, 0.0]\n[solver]\nt_end = 1.0\n")
    assert f"[{what}]" in msg and "array of tables" in msg


@pytest.mark.parametrize("header", ["initial", "solver", "output", "model"])
def test_single_tables_written_as_arrays_are_an_error(header):
    text = PENDULUM.replace(f"[{header}]", f"[[{header}]]", 1)
    if header == "output":
        text = text.replace("[[output.plot]]", "[[output.plots_gone]]")
    msg = error(text)
    assert f"[{header}]" in msg and "single table" in msg


def test_single_bracket_joint_exits_2_on_the_command_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(PENDULUM.replace("[[joint]]", "[joint]"))
    p = cli("run", str(path), "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bad.toml" in lines[0] and "[[joint]]" in lines[0]
