"""The package's layering and public API.

The layers, from the bottom: the core (``bondgraph``), the multibody library
(``elements``), the application (``bondgraph_cli``). Inside each package the modules form
stages (:data:`STAGES`, the order of docs/architecture.md): a module imports only
modules of its own stage or earlier ones, and the imports form no cycle. The import
graph is read from the source (every ``import`` statement, at module level or inside a
function, type-checking ones included), not from what happens to be loaded.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import bondgraph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("bondgraph", "elements", "bondgraph_cli")

# stages, in order; a module not listed takes its package's last stage (the package
# __init__ files sit there: they re-export)
STAGES: list[tuple[str, ...]] = [
    # the core: foundations, elements, the graph, causality, the junction structure,
    # the reduction, the evaluation, the solution and its result
    ("bondgraph.errors", "bondgraph.bonds", "bondgraph._files", "bondgraph._gc",
     "bondgraph._blas", "bondgraph.spatial", "bondgraph._jit", "bondgraph._lu_kernels",
     "bondgraph._sparse_kernels", "bondgraph._rk_kernels", "bondgraph._time_kernels",
     "bondgraph._expr_kernels", "bondgraph.condensation", "bondgraph.laws",
     "bondgraph._expr_program",
     "bondgraph.expressions", "bondgraph._toml", "bondgraph._tables", "bondgraph._plot",
     "bondgraph._display", "bondgraph._progress", "bondgraph.options"),
    ("bondgraph.element", "bondgraph.parameters", "bondgraph.timefunctions",
     "bondgraph.primitives._common",
     "bondgraph.primitives.sources", "bondgraph.primitives.fields",
     "bondgraph.primitives.two_ports"),
    ("bondgraph.primitives.junctions",),
    ("bondgraph.primitives", "bondgraph.viz"),
    ("bondgraph.graph", "bondgraph.validation", "bondgraph.models"),
    # the component library (composite bond graphs by name)
    ("bondgraph.components.base",),
    ("bondgraph.components.electrical", "bondgraph.components.mechanics",
     "bondgraph.components.hydraulic", "bondgraph.components.thermal"),
    ("bondgraph.components",),
    # bond graph files: the reader, then saving and loading
    ("bondgraph._graphfile_read",),
    ("bondgraph.graphfile",),
    ("bondgraph.causality",),
    ("bondgraph.junction", "bondgraph.symbolic", "bondgraph.stabilization",
     "bondgraph.branches"),
    # (the reduction's evaluators, dense and sparse, are built from the assembled model,
    # which they read through its attributes: they come before the model's module)
    ("bondgraph.fastlu", "bondgraph._sparse_systems", "bondgraph._sparse_compiled",
     "bondgraph._sparse_laws",
     "bondgraph.sparse", "bondgraph.moduli", "bondgraph.evaluation", "bondgraph._newton"),
    ("bondgraph.reduction",),
    ("bondgraph.results",),
    ("bondgraph._rhs", "bondgraph._events", "bondgraph._output", "bondgraph._diagnosis",
     "bondgraph._jacobian", "bondgraph._fastrk", "bondgraph.scales"),
    ("bondgraph._stepping",),
    ("bondgraph.simulation",),
    # running a bond graph file
    ("bondgraph.graphrun",),
    # linear models (pure numpy), then linearisation and equilibria of any model
    ("bondgraph.linear_model",),
    ("bondgraph.linearization",),
    # FMU export: C text and the archive, the interface and the two engines' data, then
    # export_fmu
    ("bondgraph.fmu._cwriter", "bondgraph.fmu._build"),
    ("bondgraph.fmu._variables", "bondgraph.fmu._dense", "bondgraph.fmu._fused"),
    ("bondgraph.fmu._export",),
    ("bondgraph.fmu",),
    ("bondgraph",),
    # the library: kernels, bodies and joints, views of motion, results, the mechanism,
    # what works on mechanisms, files, runs and studies
    # (the sub-packages' own files hold only their docstrings)
    ("elements.kernels", "elements.parts", "elements.running", "elements.analysis",
     "elements.files", "elements.drawing", "elements.export"),
    ("elements.kernels.compiled", "elements.kernels.compiled_c", "elements.kernels.tree",
     "elements.files.tables", "elements.build_index", "elements.running.switch"),
    # contact geometry: shapes, GJK/EPA, the narrow phase, the broad phase
    ("elements.contact.shapes",),
    ("elements.contact.gjk",),
    ("elements.contact.detect",),
    ("elements.contact.broadphase", "elements.contact.law"),
    ("elements.contact.compiled",),
    ("elements.contact.dynamics", "elements.contact.history", "elements.contact.tunnelling"),
    ("elements.contact",),
    ("elements.kernels.geometry",),
    ("elements.kernels.blocks",),
    ("elements.parts.rigid_body", "elements.joints.blocks", "elements.joints.axis"),
    ("elements.joints.contract",),
    ("elements.joints.free",),
    ("elements.joints.kinds", "elements.joints.chain", "elements.parts.couplings",
     "elements.parts.forces", "elements.drawing.motion"),
    ("elements.joints",),
    ("elements.drawing.scene",),
    ("elements.drawing.animation", "elements.drawing.video", "elements.drawing.result_display"),
    ("elements.energy_ledger", "elements.results"),
    ("elements.running.joint_load",),
    ("elements.running.closure", "elements.running.hybrid"),
    ("elements.mechanism_model",),
    ("elements.mechanism",),
    ("elements.analysis.dynamics", "elements.analysis.fast_dynamics",
     "elements.analysis.energy_check", "elements.files.robot_spec",
     "elements.files.joint_chains", "elements.files.robot_tree"),
    ("elements.analysis.linearization", "elements.analysis.modes", "elements.export.fmu"),
    ("elements.files.mjcf_contact", "elements.files.urdf_collision"),
    ("elements.files.modelfile", "elements.files.modelfile_robot", "elements.files.urdf",
     "elements.files.mjcf", "elements.models"),
    ("elements.running.runner", "elements.study.names", "elements.study.model",
     "elements.study.plans"),
    ("elements.study.outputs", "elements.study.table"),
    ("elements.study.executors",),
    ("elements.study.sweep",),
    ("elements.study.files",),
    ("elements.study",),
    ("elements._moved", "elements"),
    # the application
    ("bondgraph_cli.exits",),
    ("bondgraph_cli.commands",),
    ("bondgraph_cli",),
]

ENTRY_POINTS = ("bondgraph.__main__", "bondgraph_cli.__main__")
"""Scripts run by ``python -m``: nothing imports them, and they start the application
(``bondgraph.__main__`` imports ``bondgraph_cli``: it belongs to the application layer
although it lives in the core's folder)."""


def modules(root: str = ROOT) -> dict[str, str]:
    """Every module of the three packages: name -> path."""
    out = {}
    for pkg in PACKAGES:
        for dirpath, _, files in os.walk(os.path.join(root, pkg)):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(dirpath, f)
    return out


def imports(name: str, path: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its source."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_pkg = path.endswith("__init__.py")
    here = name if is_pkg else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            # (``from . import x`` imports the module x, not the package itself)
            targets = ([mod] if node.module else []) + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            # the deepest known module that the target names (a.b.c -> a.b if a.b.c is
            # a function of module a.b)
            parts = t.split(".")
            for k in range(len(parts), 0, -1):
                cand = ".".join(parts[:k])
                if cand in known:
                    found.add(cand)
                    break
    found.discard(name)
    return found


def import_graph(root: str = ROOT) -> dict[str, set[str]]:
    mods = modules(root)
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def stage_of(name: str) -> int:
    for k, stage in enumerate(STAGES):
        if name in stage:
            return k
    pkg = name.split(".")[0]
    return max(k for k, stage in enumerate(STAGES) if pkg in stage)


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Upward imports and cycles, one line each (empty: the layering holds)."""
    out = []
    for m, deps in sorted(graph.items()):
        if m in ENTRY_POINTS:
            continue
        for d in sorted(deps):
            if d in ENTRY_POINTS or stage_of(d) > stage_of(m):
                out.append(f"{m} imports {d}, a later stage")
    # cycles (among the modules that are not entry points)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if d in ENTRY_POINTS:
                continue
            if state.get(d) == 1:
                out.append("import cycle: " + " -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state and n not in ENTRY_POINTS:
            visit(n)
    return out


def test_every_module_has_a_stage():
    unlisted = [m for m in modules() if m not in ENTRY_POINTS and
                not any(m in s for s in STAGES) and m not in PACKAGES]
    assert not unlisted, f"add these to STAGES (and docs/architecture.md): {unlisted}"


MAX_MODULE_LINES = 700
"""A module longer than this holds more than one concern: split it along its seams."""


def test_no_module_is_too_long():
    long = {m: n for m, path in modules().items()
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_the_architecture_page_names_every_module():
    page = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    missing = [m for stage in STAGES for m in stage if f"`{m}`" not in page]
    assert not missing, f"docs/architecture.md does not place: {missing}"


def test_no_upward_import_and_no_cycle():
    problems = violations(import_graph())
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_cycle_and_an_upward_import(tmp_path):
    """A copy of the sources with a deliberate upward import (the core's errors module
    importing the simulation) fails the check, naming both problems."""
    import shutil
    for pkg in PACKAGES:
        shutil.copytree(os.path.join(ROOT, pkg), tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.nbi",
                                                      "*.nbc"))
    errors = tmp_path / "bondgraph" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") +
                      "\n\ndef _late():\n    from .simulation import simulate  # noqa\n",
                      encoding="utf-8")
    problems = violations(import_graph(str(tmp_path)))
    assert "bondgraph.errors imports bondgraph.simulation, a later stage" in problems
    assert any(p.startswith("import cycle:") and "bondgraph.errors" in p for p in problems)


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


def test_moved_modules_keep_their_old_names_for_one_version():
    """Every module that moved into a room (or into the core) is importable by its old
    name: the same module object, with a DeprecationWarning that names the new place."""
    import importlib
    import sys
    import warnings

    from elements._moved import MOVED
    for old, new in MOVED.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mod = importlib.import_module(old)
        assert mod is importlib.import_module(new), old
        assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message)
                   for w in caught), old
    # the public names of the old module elements.joints are still there
    from elements.joints import Joint, RevoluteJoint, register_joint  # noqa: F401
