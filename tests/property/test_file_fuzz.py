"""Fuzzing the files users bring: mutated model files through the command line, mutated
URDFs through the importer (issue 23).

Each case mutates a valid file (drop a key, duplicate a table, change a value's type,
an extreme number, a Unicode or control-character string, a path trick in an output
name, deep nesting, a damaged text) and runs it. Every case must end in exit 0, 1 or 2
(a URDF: a mechanism, or the package's error), with an exit-2 message naming the file;
never exit 3, never a file written outside ``--out``.

A few hundred cases run in ``make test``; ``--runslow`` runs thousands.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from bondgraph import BondGraphError

COUNTS: dict[str, dict[str, int]] = {}
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)

BASE_MODEL = {
    "model": {"name": "fuzz", "gravity": [0.0, -9.81, 0.0]},
    "body": [
        {"name": "rod", "mass": 1.0, "inertia": {"principal": [0.02, 0.02, 0.02]},
         "points": {"tip": [0.0, -0.25, 0.0]}},
        {"name": "bob", "mass": 0.5, "inertia": {"solid_cube": 0.05}},
    ],
    "joint": [
        {"name": "J1", "type": "revolute", "parent": "ground", "child": "rod",
         "child_point": [0.0, 0.25, 0.0], "axis": [0.0, 0.0, 1.0],
         "spring": {"stiffness": 2.0, "rest": 0.0}, "damper": 0.05,
         "actuator": {"type": "sine", "amplitude": 0.5, "omega": 3.0}},
        {"name": "J2", "type": "prismatic", "parent": "rod", "child": "bob",
         "parent_point": "tip", "axis": [0.0, 1.0, 0.0], "spring": 50.0},
    ],
    "load": [{"name": "push", "type": "force", "body": "bob", "frame": "global",
              "value": [0.1, 0.0, 0.0]}],
    "initial": {"q": {"J1": 0.5, "J2": 0.0}, "qd": {"J1": 0.0}},
    "solver": {"t_end": 0.02, "points": 3, "method": "RK45", "rtol": 1e-6, "atol": 1e-6},
    "output": {"mat": "r.mat", "diagram": "g.svg",
               "plot": [{"file": "p.png", "y": ["J1.q"]}]},
}

EXTREME = [0.0, -0.0, -1.0, 1e308, -1e308, 1e-308, 1e30, 2 ** 63, math.inf, -math.inf,
           math.nan, 3]
STRINGS = ["", " ", "質量", "🚀", "a\u0301", "\u202eevil", "x\u200dy", "a\nb", "tab\t",
           "esc\x1b", "ground", "rod", "J1", "<b>", "a.b", "a*b", "../x", "/tmp/x",
           "x" * 300, "con", "nul.png"]
PATHS = ["../x.png", "../../x.mat", "/tmp/fuzz_abs.svg", "a/b.png", "..", ".", "x\\y.png",
         "~/x.png", "bodies.csv", "summary.json", "p.png", "r.mat", "g.dot", "x.PNG",
         "a" * 260 + ".png", "\x00.png"]


# -- a small TOML writer (tomllib only reads) -----------------------------------------------

class _Raw(str):
    """TOML text put in as it is (deep nesting, which a recursive writer cannot emit)."""


def _toml_value(v) -> str:
    if isinstance(v, _Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        out = []
        for ch in v:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ord(ch) < 32 or ord(ch) == 127:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_value(str(k))} = {_toml_value(x)}"
                                for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(doc: dict) -> str:
    lines = []
    for table, content in doc.items():
        key = _toml_value(str(table))
        if isinstance(content, list) and content and all(isinstance(x, dict) for x in content):
            for item in content:
                lines.append(f"[[{key}]]")
                lines += [f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in item.items()
                          if not (k == "plot" and isinstance(v, list))]
            continue
        if isinstance(content, dict):
            lines.append(f"[{key}]")
            plots = None
            for k, v in content.items():
                if k == "plot" and isinstance(v, list) and v and \
                        all(isinstance(x, dict) for x in v):
                    plots = v
                    continue
                lines.append(f"{_toml_value(str(k))} = {_toml_value(v)}")
            for p in plots or ():
                lines.append(f"[[{key}.plot]]")
                lines += [f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in p.items()]
            continue
        lines.append(f"{key} = {_toml_value(content)}")
    return "\n".join(lines) + "\n"


# -- mutations ------------------------------------------------------------------------------

def _paths(node, depth=0):
    """Every (container, key) in the document, depth first (to depth 8)."""
    if depth > 8:
        return
    if isinstance(node, dict):
        for k in list(node):
            yield node, k
            yield from _paths(node[k], depth + 1)
    elif isinstance(node, list):
        for i in range(len(node)):
            yield node, i
            yield from _paths(node[i], depth + 1)


@st.composite
def mutated_models(draw):
    import copy
    doc = copy.deepcopy(BASE_MODEL)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        spots = list(_paths(doc))
        if not spots:
            break
        container, key = spots[draw(st.integers(0, len(spots) - 1))]
        op = draw(st.sampled_from(["drop", "duplicate", "retype", "extreme", "string",
                                   "path", "nest"]))
        old = container[key]
        if op == "drop":
            del container[key]
        elif op == "duplicate":
            if isinstance(container, list):
                container.insert(key, copy.deepcopy(old))
            elif isinstance(old, list) and old:
                old.append(copy.deepcopy(old[0]))
        elif op == "retype":
            container[key] = draw(st.sampled_from(
                [1.5, "text", [1.0, 2.0], {"a": 1.0}, True, [], {}, [[1.0]]]))
        elif op == "extreme":
            container[key] = draw(st.sampled_from(EXTREME))
        elif op == "string":
            container[key] = draw(st.sampled_from(STRINGS))
        elif op == "path":
            output = doc.setdefault("output", {})
            if not isinstance(output, dict):
                continue
            where = draw(st.sampled_from(["mat", "diagram", "plot"]))
            name = draw(st.sampled_from(PATHS))
            if where == "plot":
                output["plot"] = [{"file": name, "y": ["J1.q"]}]
            else:
                output[where] = name
        elif op == "nest":
            depth = draw(st.sampled_from([3, 50, 2000]))
            container[key] = _Raw("[" * depth + "1.0" + "]" * depth)
    text = to_toml(doc)
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "bom", "byte", "crlf"]))
    if damage == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif damage == "bom":
        text = "\ufeff" + text
    elif damage == "byte":
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        text = text[:i] + draw(st.sampled_from(["\x00", "=", "[", "]", '"', "\\", "é"])) + \
            text[i + 1:]
    elif damage == "crlf":
        text = text.replace("\n", "\r\n")
    return text


def _tally(suite, outcome):
    c = COUNTS.setdefault(suite, {})
    c[outcome] = c.get(outcome, 0) + 1


def _files(root):
    out = set()
    for d, _, files in os.walk(root):
        out |= {os.path.join(d, f) for f in files}
    return out


TIME_LIMIT = 10
"""Seconds a case may run: a mutated file may ask for a long span or a tiny tolerance."""


class _Slow(BaseException):
    """Raised by the timer (BaseException: no handler of the package turns it into a
    result, as with an interrupt)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    import signal

    def ring(signum, frame):
        raise _Slow()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_model_case(text: str, suite: str, time_limit: float = TIME_LIMIT) -> None:
    from bondgraph_cli import main
    base = tempfile.mkdtemp(prefix="fuzz_")
    try:
        model_dir = os.path.join(base, "models")
        out = os.path.join(base, "runs", "a", "out")      # (../../x lands in base)
        os.makedirs(model_dir)
        model = os.path.join(model_dir, "fuzz.toml")
        with open(model, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        before = _files(base)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                    warnings.catch_warnings(), _time_limit(time_limit):
                warnings.simplefilter("ignore")
                code = main(["run", model, "--out", out, "--quiet", "--no-animation"])
        except _Slow:          # (a long span, a tiny tolerance: asked for, not a fault)
            _tally(suite, f"stopped after {time_limit:g} s")
            return
        msg = err.getvalue()
        assert code in (0, 1, 2), f"exit {code}:\n{msg}\n--- file ---\n{text}"
        if code == 2:
            assert model in msg or "--out" in msg, f"exit 2 not naming the file:\n{msg}"
        written = _files(base) - before
        outside = [p for p in written if not p.startswith(out + os.sep)]
        assert not outside, f"written outside --out: {outside}\n--- file ---\n{text}"
        assert not os.path.exists("/tmp/fuzz_abs.svg")
        assert not [p for p in written if ".tmp" in os.path.basename(p)]
        _tally(suite, {0: "ran (exit 0)", 1: "failed run (exit 1)",
                       2: "refused (exit 2)"}[code])
    finally:
        shutil.rmtree(base, ignore_errors=True)


SETTINGS = dict(deadline=None, phases=PHASES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def test_the_base_model_runs():
    """(The mutations start from a file that runs.) No short time limit here: on a fresh
    clone this first run also compiles the numba kernels and builds matplotlib's font
    cache (half a minute on CI), which the mutated cases then reuse."""
    run_model_case(to_toml(BASE_MODEL), "base", time_limit=600)
    assert COUNTS["base"] == {"ran (exit 0)": 1}


@settings(max_examples=400, derandomize=True, **SETTINGS)
@given(mutated_models())
def test_mutated_model_files(text):
    run_model_case(text, "mutated model files")


@pytest.mark.slow
@settings(max_examples=3000, **SETTINGS)
@given(mutated_models())
def test_mutated_model_files_slow(text):
    run_model_case(text, "mutated model files (slow)")


# -- URDF ------------------------------------------------------------------------------------

BASE_URDF = """<?xml version="1.0"?>
<robot name="fuzzbot">
  <link name="base"/>
  <link name="upper">
    <inertial><origin xyz="0 0 -0.1" rpy="0 0 0"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.005"/></inertial>
  </link>
  <link name="lower">
    <inertial><origin xyz="0 0 -0.1" rpy="0.1 0 0"/><mass value="0.5"/>
      <inertia ixx="0.004" ixy="0.0001" ixz="0" iyy="0.004" iyz="0" izz="0.002"/></inertial>
  </link>
  <link name="tool">
    <inertial><mass value="0.1"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0 0 1" rpy="0 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="1"/>
    <dynamics damping="0.1"/>
  </joint>
  <joint name="elbow" type="continuous">
    <parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.2" rpy="0 0 0.3"/>
    <axis xyz="1 0 0"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="lower"/><child link="tool"/><origin xyz="0 0 -0.2"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.1" effort="5" velocity="1"/>
  </joint>
</robot>
"""


@st.composite
def mutated_urdfs(draw):
    import xml.etree.ElementTree as ET
    root = ET.fromstring(BASE_URDF)
    for _ in range(draw(st.integers(1, 3))):
        nodes = list(root.iter())
        node = nodes[draw(st.integers(0, len(nodes) - 1))]
        op = draw(st.sampled_from(["drop_attr", "drop_el", "dup_el", "value", "name",
                                   "nest", "swap"]))
        if op == "drop_attr" and node.attrib:
            del node.attrib[draw(st.sampled_from(sorted(node.attrib)))]
        elif op == "drop_el" and len(node):
            node.remove(node[draw(st.integers(0, len(node) - 1))])
        elif op == "dup_el" and len(node):
            import copy
            node.append(copy.deepcopy(node[draw(st.integers(0, len(node) - 1))]))
        elif op == "value" and node.attrib:
            attr = draw(st.sampled_from(sorted(node.attrib)))
            node.set(attr, draw(st.sampled_from(
                ["nan", "inf", "-1", "0", "1e308", "1 2", "a b c", "", "1e-308 0 0",
                 "0 0 0", "floating", "planar", "fixed", "revolute", "  1  0  0 ", "1,0,0"])))
        elif op == "name" and "name" in node.attrib:
            node.set("name", draw(st.sampled_from(["質量", "🚀", "", "base", "upper",
                                                   "shoulder", "a.b", "x\ny", "world"])))
        elif op == "nest":
            deep = node
            for _ in range(draw(st.sampled_from([5, 200]))):
                deep = ET.SubElement(deep, "origin")
        elif op == "swap":
            parents = root.findall(".//parent")
            children = root.findall(".//child")
            if parents and children:
                p = parents[draw(st.integers(0, len(parents) - 1))]
                c = children[draw(st.integers(0, len(children) - 1))]
                p.attrib, c.attrib = dict(c.attrib), dict(p.attrib)
    text = ET.tostring(root, encoding="unicode")
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def run_urdf_case(text: str, suite: str) -> None:
    from elements.files.urdf import loads_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mech = loads_urdf(text, source="fuzz.urdf")
        except BondGraphError as exc:
            assert "fuzz.urdf" in str(exc), f"not naming the file: {exc}"
            _tally(suite, f"refused: {type(exc).__name__}")
            return
        try:
            mm = mech.assemble()
            res = mm.simulate((0.0, 0.01), t_eval=[0.0, 0.01], max_steps=2000)
        except BondGraphError as exc:
            _tally(suite, f"refused at assembly: {type(exc).__name__}")
            return
    _tally(suite, "simulated" if res.raw.success else f"stopped: {res.raw.status.name}")


def test_the_base_urdf_simulates():
    run_urdf_case(BASE_URDF, "base urdf")
    assert COUNTS["base urdf"] == {"simulated": 1}


@settings(max_examples=400, derandomize=True, **SETTINGS)
@given(mutated_urdfs())
def test_mutated_urdfs(text):
    run_urdf_case(text, "mutated URDFs")


@pytest.mark.slow
@settings(max_examples=5000, **SETTINGS)
@given(mutated_urdfs())
def test_mutated_urdfs_slow(text):
    run_urdf_case(text, "mutated URDFs (slow)")


# -- expressions in bond graph files (reliability issue, item 9) --------------------------

EXPRESSION_LIMIT = 1.0
"""CPU seconds a case's file may take to be read, its laws compiled and its model
evaluated at a few times, accepted or refused: reading any text is bounded by the limits
of bondgraph.expressions, so a case that takes longer is a fault (those the limits
refuse took from seconds to past 90 s). CPU time, not wall time: other processes on the
machine do not count. (Running it is bounded as the model files' cases are: a source
of time may ask for a long integration, sin(exp(1000 t)) for thousands of steps.)"""

EQUATIONS_LIMIT = 3.0
"""CPU seconds for `bondgraph equations` of a case: sympy's simplify of the equations
alone takes up to 1.4 s on a small expression such as sin(sin(Max(t, sign(t - 0.004))))
(its Piecewise and trigonometric rewrites), which is its own cost, not the input's."""


TIME_FUNCTIONS = ["Heaviside(t - 0.004)", "Heaviside(t, 1)", "sign(t - 0.004)",
                  "Abs(t - 0.004)", "1/t", "log(t)", "sqrt(t)", "1/(t - 0.004)",
                  "exp(1000*t)", "Min(Max(t, 0.001), 0.002)", "atan2(t, 1)", "t"]
EXPONENTS = ["10**9", "10**400", "3*10**7", "-10**9", "1/10**9", "100", "101", "0.5",
             "1e-300", "-1e300", "2", "-1"]
BASES = ["(1/3)", "(2/3)", "2", "1.5", "0.5", "0", "(t + 1)", "t", "pi", "10"]


@st.composite
def expressions(draw, depth=0):
    """Expression text: numbers, t, time functions, powers with huge and tiny exponents,
    Min/Max of 1 to 300 arguments, nested."""
    kind = draw(st.sampled_from(["time", "power", "minmax", "number", "nest", "op"]
                                if depth < 3 else ["time", "number"]))
    if kind == "time":
        return draw(st.sampled_from(TIME_FUNCTIONS))
    if kind == "number":
        return draw(st.sampled_from(["5", "0.5", "1e-300", "1e300", "10**300", "2**3000",
                                     "1/3", "-2"]))
    if kind == "power":
        base = draw(st.sampled_from(BASES))
        exponent = draw(st.sampled_from(EXPONENTS))
        return draw(st.sampled_from([f"{base}**({exponent})", f"pow({base}, {exponent})"]))
    if kind == "minmax":
        n = draw(st.sampled_from([1, 2, 8, 9, 50, 300]))
        args = [draw(expressions(depth=depth + 1)) if k < 2 else f"sin({k}*t)"
                for k in range(n)]
        return f"{draw(st.sampled_from(['Min', 'Max']))}({', '.join(args)})"
    if kind == "nest":
        fn = draw(st.sampled_from(["sin", "exp", "Heaviside", "Abs", "sign", "sqrt"]))
        return f"{fn}({draw(expressions(depth=depth + 1))})"
    op = draw(st.sampled_from(["+", "-", "*", "/", "**"]))
    return f"({draw(expressions(depth=depth + 1))}) {op} ({draw(expressions(depth=depth + 1))})"


EXPRESSION_GRAPH = """[bondgraph]
name = "push"
[[element]]
name = "F"
kind = "Se"
effort = {{ expr = "{expr}" }}
[[element]]
name = "v"
kind = "1"
[[element]]
name = "m"
kind = "I"
inertia = 2.0
[[element]]
name = "d"
kind = "R"
resistance = 0.5
[[bond]]
tail = "F"
head = "v"
[[bond]]
tail = "v"
head = "m"
[[bond]]
tail = "v"
head = "d"
[solver]
t_end = 0.01
points = 5
rtol = 1e-6
atol = 1e-9
"""


@contextlib.contextmanager
def _cpu_limit(seconds: float):
    """Raise _Slow after ``seconds`` of this process's CPU time."""
    import signal

    def ring(signum, frame):
        raise _Slow()
    old = signal.signal(signal.SIGPROF, ring)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def _read_and_evaluate(path: str) -> None:
    """Read the file, compile its model and evaluate it at a few times."""
    import numpy as np
    from bondgraph import assemble, assign_causality
    from bondgraph.graphfile import load_graph_file
    model = assemble(assign_causality(load_graph_file(path).graph))
    for t in (0.0, 0.003, 0.004, 0.01):
        model.rhs(t, np.zeros(model.n_states))


def run_expression_case(expr: str, suite: str, limit: float = EXPRESSION_LIMIT) -> None:
    """A graph whose force is ``expr``: read, compiled and evaluated within ``limit`` CPU
    seconds, or refused naming the file and the element; ``bondgraph run`` (within
    :data:`TIME_LIMIT`, as the model files) and ``equations`` (within
    :data:`EQUATIONS_LIMIT` CPU seconds) end in exit 0, 1 or 2, an exit 2 naming the
    file and the element."""
    from bondgraph_cli import main
    base = tempfile.mkdtemp(prefix="fuzz_expr_")
    try:
        path = os.path.join(base, "push.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(EXPRESSION_GRAPH.format(expr=expr))
        outcome = "read"
        try:
            with warnings.catch_warnings(), _cpu_limit(limit):
                warnings.simplefilter("ignore")
                _read_and_evaluate(path)
        except _Slow:
            raise AssertionError(f"reading took more than {limit} CPU s: {expr}") from None
        except BondGraphError as exc:
            assert path in str(exc) or "element 'F'" in str(exc), f"not named: {exc}"
            outcome = "refused"
        codes, err = [], io.StringIO()
        for command, bound in ((["run", path, "--out", os.path.join(base, "o"), "--quiet"],
                                _time_limit(TIME_LIMIT)),
                               (["equations", path], _cpu_limit(EQUATIONS_LIMIT))):
            try:
                with contextlib.redirect_stderr(err), \
                        contextlib.redirect_stdout(io.StringIO()), \
                        warnings.catch_warnings(), bound:
                    warnings.simplefilter("ignore")
                    codes.append(main(command))
            except _Slow:
                if command[0] == "equations":
                    raise AssertionError(f"equations took more than {EQUATIONS_LIMIT} CPU "
                                         f"s: {expr}") from None
                codes.append("stopped")      # (a long integration: asked for)
        msg = err.getvalue()
        assert set(codes) <= {0, 1, 2, "stopped"}, \
            f"exit {codes}:\n{msg}\n--- expression ---\n{expr}"
        if 2 in codes:
            assert path in msg and "element 'F'" in msg, f"exit 2 not naming it:\n{msg}"
        _tally(suite, f"{outcome}, exits {'/'.join(map(str, codes))}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def warm_expressions():
    """The base graph run once without a limit before any timed case: the first run
    compiles and loads what the cases then reuse (numba's kernels, from an empty cache
    more than the limit), whichever expression test runs first or alone."""
    run_expression_case("5*Heaviside(t - 0.004)", "base expression", limit=600)


def test_the_expression_cases_start_from_a_graph_that_runs(warm_expressions):
    assert COUNTS["base expression"] == {"read, exits 0/0": 1}


@settings(max_examples=150, derandomize=True, **SETTINGS)
@given(expressions())
def test_expressions_end_in_a_result_or_a_named_refusal_within_a_second(warm_expressions,
                                                                         expr):
    run_expression_case(expr, "expressions")


@pytest.mark.slow
@settings(max_examples=2000, **SETTINGS)
@given(expressions())
def test_expressions_slow(warm_expressions, expr):
    run_expression_case(expr, "expressions (slow)")


def _with_expression_signal(expr: str) -> str:
    """The base model file with J1's actuator an expression signal of ``expr``."""
    import copy
    doc = copy.deepcopy(BASE_MODEL)
    doc["joint"][0]["actuator"] = {"type": "expression", "expr": expr}
    return to_toml(doc)


@pytest.fixture(scope="module")
def warm_signals():
    """The base model with an expression signal, run once without a short limit (the
    interpreter's first compile)."""
    run_model_case(_with_expression_signal("0.5*sin(3*t)"), "base signal", time_limit=600)


def test_the_signal_cases_start_from_a_model_that_runs(warm_signals):
    assert COUNTS["base signal"] == {"ran (exit 0)": 1}


@settings(max_examples=60, derandomize=True, **SETTINGS)
@given(expressions())
def test_expression_signals_in_model_files(warm_signals, expr):
    """A model file's actuator given as any expression (huge powers, poles, Min/Max of
    300 arguments, nestings): a result (exit 0), a failed run saying why (1) or a
    refusal naming the file (2), nothing written outside --out."""
    run_model_case(_with_expression_signal(expr), "expression signals")


@pytest.mark.slow
@settings(max_examples=600, **SETTINGS)
@given(expressions())
def test_expression_signals_in_model_files_slow(warm_signals, expr):
    run_model_case(_with_expression_signal(expr), "expression signals (slow)")
