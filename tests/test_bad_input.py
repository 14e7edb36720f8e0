"""Bad input named, never exit 3; nothing written outside the output folder; Unicode
names everywhere (issue 23, items 6 and 9 to 14).

Each case here exited 3 (an internal error), wrote outside ``--out``, escaped as a bare
numpy or Python error, or was silently accepted before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io

from bondgraph import BondGraphError, assemble, assign_causality, models, simulate
from bondgraph_cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PENDULUM = '''
[model]
name = "pendulum"
gravity = [0.0, -9.81, 0.0]
[[body]]
name = "rod"
mass = 1.0
inertia = { principal = [0.02, 0.02, 0.02] }
[[joint]]
name = "J1"
type = "revolute"
parent = "ground"
child = "rod"
child_point = [0.0, 0.25, 0.0]
axis = [0.0, 0.0, 1.0]
[initial]
q = { J1 = 0.5 }
[solver]
t_end = 0.2
points = 11
[output]
mat = "result.mat"
diagram = "bond_graph.svg"
[[output.plot]]
file = "angle.png"
y = ["J1.q"]
'''


OUT = os.path.join("a", "b", "out")       # (so that ../../x lands inside tmp_path)


def _run(tmp_path, text, *extra, name="model.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return main(["run", str(path), "--out", str(tmp_path / OUT), "--quiet",
                 "--no-animation", *extra])


def _files_outside(tmp_path):
    """Every file under tmp_path that is neither the model nor in the output folder."""
    found = []
    for root, _, files in os.walk(tmp_path):
        for f in files:
            p = os.path.join(root, f)
            if not (p.startswith(str(tmp_path / OUT)) or p.endswith(".toml")):
                found.append(p)
    return found


# -- 6. nothing written outside the output folder ------------------------------------------

@pytest.mark.parametrize("old, new, key", [
    ('mat = "result.mat"', 'mat = "../../x.mat"', "'mat'"),
    ('mat = "result.mat"', 'mat = "sub/x.mat"', "'mat'"),
    ('diagram = "bond_graph.svg"', 'diagram = "/tmp/abs_x.svg"', "'diagram'"),
    ('file = "angle.png"', 'file = "../../x.png"', "[output.plot 1] 'file'"),
    ('file = "angle.png"', 'file = "bodies.csv"', "[output.plot 1] 'file'"),
    ('[[output.plot]]', '[[output.plot]]\nfile = "twice.png"\ny = ["J1.q"]\n'
                        '[[output.plot]]\nfile = "twice.png"\ny = ["J1.q"]\n[[output.plot]]',
     "[output.plot 2] 'file'"),
])
def test_output_names_stay_inside_the_output_folder(tmp_path, capsys, old, new, key):
    code = _run(tmp_path, PENDULUM.replace(old, new))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"model.toml: [output" in err and key in err, err
    assert not _files_outside(tmp_path)
    assert not os.path.exists("/tmp/abs_x.svg")


def test_the_python_api_checks_output_names_too(tmp_path):
    from elements.files.modelfile import loads_model
    from elements.running.runner import run
    import dataclasses
    spec = loads_model(PENDULUM, "p.toml")
    bad = dataclasses.replace(spec, output=dataclasses.replace(spec.output, mat="../x.mat"))
    with pytest.raises(BondGraphError, match="output.mat: '../x.mat' points outside"):
        run(bad, str(tmp_path / "o"))
    res = spec.mechanism.assemble().simulate((0.0, 0.1))
    with pytest.raises(BondGraphError, match="mat_name '/x.mat' points outside"):
        res.write(str(tmp_path / "o2"), mat_name="/x.mat")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(BondGraphError, match="is an existing file"):
        res.write(str(tmp_path / "afile"))
    assert not os.path.exists(tmp_path / "x.mat")


def test_a_study_plot_stays_inside_too(tmp_path):
    from elements.study import StudyFileError, load_study
    (tmp_path / "m.toml").write_text(PENDULUM, encoding="utf-8")
    study = ('[study]\nname = "s"\nmodel = "m.toml"\n[parameters]\n'
             '"rod.mass" = { values = [1.0, 2.0] }\n[[output]]\nname = "q"\n'
             'columns = ["J1.q"]\nreduce = "final"\n[[plot]]\nfile = "../x.png"\n'
             'output = "q"\nx = "rod.mass"\n')
    (tmp_path / "s.toml").write_text(study, encoding="utf-8")
    with pytest.raises(StudyFileError, match=r"s.toml: \[plot 1\] 'file': '../x.png' points"):
        load_study(str(tmp_path / "s.toml"))


# -- 9. Unicode names ----------------------------------------------------------------------

UNICODE = PENDULUM.replace('"rod"', '"質量"').replace('"J1"', '"🚀"') \
    .replace("q = { J1 = 0.5 }", 'q = { "🚀" = 0.5 }').replace('["J1.q"]', '["🚀.q"]')


@pytest.mark.parametrize("lang", ["C.UTF-8", "C"])
def test_unicode_names_work_everywhere(tmp_path, lang):
    """In a subprocess under LANG=C too (an ASCII terminal): the names print as escapes
    there, the files are UTF-8 whatever the locale."""
    path = tmp_path / "u.toml"
    path.write_text(UNICODE, encoding="utf-8")
    env = dict(os.environ, LANG=lang, LC_ALL=lang, PYTHONIOENCODING="")
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "run", str(path), "--out",
                        str(tmp_path / "o")], capture_output=True, cwd=ROOT, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    out = tmp_path / "o"
    head = (out / "bodies.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "質量.x" in head
    mat = scipy.io.loadmat(str(out / "result.mat"))
    names = {str(a[0]): str(b[0]) for a, b in mat["column_names"]}
    assert names["u8ceau91cf_x"] == "質量.x" and names["u1f680_q"] == "🚀.q"
    assert np.allclose(mat["u1f680_q"].ravel()[0], 0.5)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert "animation.html" in manifest["files"] and "angle.png" in manifest["files"]
    page = (out / "animation.html").read_text(encoding="utf-8")
    assert "質量" in page or json.dumps("質量").strip('"') in page     # (JSON escapes)
    assert not [f for f in os.listdir(out) if ".tmp" in f]


def test_mat_names_are_valid_and_unique():
    from elements.results import mat_names
    cols = ["m.x", "m_x", "1a", "a" * 70, "a" * 70 + "b", "*", "é"]
    names = mat_names(cols)
    assert len(set(names.values())) == len(cols)
    for n in names.values():
        assert len(n) <= 63 and n[0].isalpha() and all(c.isalnum() or c == "_" for c in n)
        assert n.isascii()


@pytest.mark.parametrize("bad", ["ro\ntor", "tab\there", "esc\x1b[0m", " padded", ""])
def test_names_with_control_characters_are_refused(bad):
    from elements import Inertia, RigidBody
    with pytest.raises(BondGraphError, match="body name"):
        RigidBody(bad, 1.0, Inertia.principal(1.0, 1.0, 1.0))


def test_names_that_look_like_html_render(tmp_path):
    from bondgraph import BondGraph, I, OneJunction, Se, render, to_dot
    bg = BondGraph("<a")
    for el in (Se("<b>", 1.0), OneJunction("<j"), I("<m>", 1.0)):
        bg.add(el)
    bg.connect("<b>", "<j")
    bg.connect("<j", "<m>")
    dot = to_dot(assign_causality(bg))
    assert dot.startswith('digraph "<a"')
    import shutil
    if shutil.which("dot"):
        assert os.path.getsize(render(bg, str(tmp_path / "g.svg"))) > 0


# -- 10 and 11. exit 2 with the file and key named ----------------------------------------

@pytest.mark.parametrize("old, new, what", [
    ("mass = 1.0", "mass = 1e308", "body '.*': mass must be .*at most 1e\\+100"),
    ("principal = [0.02, 0.02, 0.02]", "principal = [1e308, 1e308, 1e308]",
     "'inertia': inertia .* beyond 1e\\+100"),
    ("principal = [0.02, 0.02, 0.02]", "principal = [1.0, 1.0, 1e-14]",
     "'inertia': inertia must be positive definite"),
    ("points = 11", "points = 100000000000", "'points': must be an integer from 2 to"),
    ("points = 11", "points = 1e30", "'points': must be an integer"),
])
def test_extreme_values_are_bad_input(tmp_path, capsys, old, new, what):
    import re
    code = _run(tmp_path, PENDULUM.replace(old, new))
    err = capsys.readouterr().err
    assert code == 2 and re.search(f"model.toml: .*{what}", err), err


def test_deep_nesting_a_bom_and_a_directory(tmp_path, capsys):
    assert _run(tmp_path, "a = " + "[" * 100_000 + "]" * 100_000 + "\n") == 2
    assert "nested too deeply" in capsys.readouterr().err
    (tmp_path / "bom.toml").write_text("\ufeff" + PENDULUM, encoding="utf-8")
    assert main(["equations", str(tmp_path / "bom.toml")]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "is a directory; give the model file itself" in capsys.readouterr().err


def test_command_line_arguments_are_named(tmp_path, capsys):
    model = tmp_path / "m.toml"
    model.write_text(PENDULUM, encoding="utf-8")
    (tmp_path / "afile").write_text("x")
    assert main(["run", str(model), "--out", str(tmp_path / "afile")]) == 2
    assert "an existing file, not a directory" in capsys.readouterr().err
    assert main(["run", str(model), "--out", "/proc/no_such/x", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "/proc/no_such" in err and "error: 2" not in err
    assert main(["export-fmu", str(model), "--out", str(tmp_path / "no" / "m.fmu")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "d.fmu").mkdir()
    assert main(["export-fmu", str(model), "--out", str(tmp_path / "d.fmu")]) == 2
    assert "an existing directory; give the FMU's file name" in capsys.readouterr().err
    study = os.path.join(ROOT, "examples", "three_body_sweep.toml")
    assert main(["sweep", study, "--out", str(tmp_path / "s"), "--executor", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown executor 'bogus'" in err and "runs of" not in capsys.readouterr().out


def test_overwrite_quiet_leaves_no_open_file(tmp_path):
    model = tmp_path / "m.toml"
    model.write_text(PENDULUM, encoding="utf-8")
    cmd = [sys.executable, "-W", "error::ResourceWarning", "-X", "dev", "-m", "bondgraph_cli",
           "run", str(model), "--out", str(tmp_path / "o"), "--quiet", "--no-animation"]
    for extra in ([], ["--overwrite"]):
        p = subprocess.run(cmd + extra, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "ResourceWarning" not in p.stderr and "unclosed" not in p.stderr, p.stderr


def test_the_singular_inertia_of_a_real_urdf_is_named():
    """pybullet's cube_no_rotation.urdf: its prismatic links' inertia has principal
    moments (1.5e-17, 0.215, 0.215): assemble() raised a raw LinAlgError."""
    from elements.files.urdf import loads_urdf
    link = ('<link name="x"><inertial><mass value="0.01"/><inertia ixx="0.2125" '
            'ixy="-0.005" ixz="0.0225" iyy="0.205" iyz="0.045" izz="0.0125"/></inertial>'
            '</link>')
    text = (f'<robot name="cube"><link name="world"/>{link}<joint name="j" '
            f'type="prismatic"><parent link="world"/><child link="x"/><axis xyz="1 0 0"/>'
            f'</joint></robot>')
    with pytest.raises(BondGraphError, match=r"cube.urdf: link x \(body 'x', mass 0.01 "
                                             r"kg\): the central inertia is not positive "
                                             r"definite"):
        loads_urdf(text, source="cube.urdf")



def _two_links(tool_inertia: str = 'ixx="0.001" iyy="0.001" izz="0.001"',
               tool_origin: str = "0 0 -0.2") -> str:
    """A pendulum link with a tool fixed to it (merged into one body)."""
    zero = 'ixy="0" ixz="0" iyz="0"'
    return (f'<robot name="r"><link name="world"/><link name="arm"><inertial><mass '
            f'value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" {zero}/></inertial>'
            f'</link><link name="tool"><inertial><mass value="0.1"/><inertia '
            f'{tool_inertia} {zero}/></inertial></link><joint name="j" type="revolute">'
            f'<parent link="world"/><child link="arm"/><axis xyz="1 0 0"/><limit '
            f'lower="-1" upper="1" effort="1" velocity="1"/></joint><joint name="f" '
            f'type="fixed"><parent link="arm"/><child link="tool"/><origin '
            f'xyz="{tool_origin}"/></joint></robot>')


@pytest.mark.parametrize("case", ["inertia", "origin"])
def test_an_inertial_that_overflows_is_named(case):
    """An inertia entry of 1e308 (finite: the parser took it) overflowed when the tool
    was merged into its link's body, and the import ended in numpy's bare
    LinAlgError ("Eigenvalues did not converge": found by the slow URDF fuzz). An
    entry beyond 1e100 is refused by name, as an element's parameter is; an origin
    so far that the parallel-axis term overflows is refused naming the links."""
    from elements.files.urdf import loads_urdf
    assert loads_urdf(_two_links(), source="r.urdf").bodies["arm"].mass == \
        pytest.approx(1.1)
    if case == "inertia":
        text = _two_links(tool_inertia='ixx="0.001" iyy="1e308" izz="0.001"')
        match = (r"r.urdf: link 'tool' <inertia>: attribute 'iyy'='1e308' is beyond "
                 r"1e\+100 in magnitude \(kg m\^2\)")
    else:
        text = _two_links(tool_origin="0 0 -1e200")
        match = (r"r.urdf: links arm, tool \(body 'arm'\): its mass, centre or central "
                 r"inertia is not finite")
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(BondGraphError, match=match):
        loads_urdf(text, source="r.urdf")


# -- 12. misuse of the Python API ---------------------------------------------------------

def _api_cases():
    from bondgraph import BondGraph, CausalGraph, export_fmu
    from elements import Inertia, Mechanism, RevoluteJoint, RigidBody, export_mechanism_fmu
    from elements import models as em
    bg = models.mass_spring_damper(1.0, 1.0, 1.0, 1.0)
    x0 = {"p_m": 0.0, "q_k": 0.0}

    def model():
        return assemble(assign_causality(bg))

    def body():
        return RigidBody("b", 1.0, Inertia.principal(1.0, 1.0, 1.0))

    assert isinstance(bg, BondGraph) and CausalGraph
    return {
        "simulate(BondGraph)": (lambda: simulate(bg, (0, 1), x0), "takes a StateSpaceModel"),
        "simulate(CausalGraph)": (lambda: simulate(assign_causality(bg), (0, 1), x0),
                                  "got CausalGraph"),
        "assign_causality(Mechanism)": (
            lambda: assign_causality(em.three_body_prismatic()), "mechanism.assemble"),
        "Mechanism(gravity='down')": (lambda: Mechanism(gravity="down"), "3 finite numbers"),
        "Inertia.principal('a', ...)": (lambda: Inertia.principal("a", 1, 1),
                                        "Inertia.principal"),
        "mm.simulate(1.0)": (lambda: em.three_body_prismatic().assemble().simulate(1.0),
                             "t_span must be two numbers"),
        "mm.initial_state([1.0])": (
            lambda: em.three_body_prismatic().assemble().initial_state([1.0]),
            "must be a mapping"),
        "simulate(t_eval='abc')": (lambda: simulate(model(), (0, 1), x0, t_eval="abc"),
                                   "t_eval"),
        "simulate(rtol='a')": (lambda: simulate(model(), (0, 1), x0, rtol="a"), "rtol"),
        "simulate(stabilization=3)": (lambda: simulate(model(), (0, 1), x0, stabilization=3),
                                      "Baumgarte"),
        "simulate(events=[1])": (lambda: simulate(model(), (0, 1), x0, events=[1]),
                                 "events must be callables"),
        "simulate(max_step=-1)": (lambda: simulate(model(), (0, 1), x0, max_step=-1),
                                  "max_step"),
        "RevoluteJoint(axis='z')": (
            lambda: RevoluteJoint("J", Mechanism().ground, body(), axis="z"),
            "axis must be 3 numbers"),
        "RevoluteJoint(spring='x')": (
            lambda: RevoluteJoint("J", Mechanism().ground, body(), axis=(0, 0, 1),
                                  spring="x"), "spring stiffness"),
        # (refused before anything is compiled or written)
        "export_fmu(BondGraph)": (lambda: export_fmu(bg, "never.fmu", x0=x0),
                                  "expects an assembled StateSpaceModel"),
        "export_fmu(x0=[1.0])": (lambda: export_fmu(model(), "never.fmu", x0=[1.0]),
                                 "x0 must be a mapping of state names"),
        "export_fmu(cs_solver='euler')": (
            lambda: export_fmu(model(), "never.fmu", x0=x0, cs_solver="euler"),
            "cs_solver must be one of dopri5, rk4"),
        "export_fmu(nominals=-1)": (
            lambda: export_fmu(model(), "never.fmu", x0=x0, nominals=-1.0),
            "nominals must be positive"),
        "export_mechanism_fmu(StateSpaceModel)": (
            lambda: export_mechanism_fmu(model(), "never.fmu"),
            "expects a MechanismModel"),
        "export_mechanism_fmu(inputs=['J9'])": (
            lambda: export_mechanism_fmu(em.three_body_prismatic().assemble(), "never.fmu",
                                         inputs=["J9"]), "no input 'J9'.*joint ports"),
    }


@pytest.mark.parametrize("case", sorted(_api_cases()))
def test_api_misuse_raises_the_package_error(case):
    call, words = _api_cases()[case]
    with pytest.raises(BondGraphError, match=words):
        call()


# -- 13 and 14. the slow path says so; reports hold plain types ----------------------------

def test_without_numba_the_first_model_says_how_to_get_the_fast_path():
    code = ("import sys, warnings; sys.modules['numba'] = None\n"
            "warnings.simplefilter('always')\n"
            "from elements import models\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    for _ in range(2):\n"
            "        models.three_body_prismatic().assemble().model.sparse()\n"
            "print(sum('pip install numba' in str(x.message) for x in w))\n")
    env = {k: v for k, v in os.environ.items() if k != "BONDGRAPH_NO_NUMBA"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "1", p.stderr


def test_energy_report_lines_hold_python_types():
    from elements.analysis.energy_check import CheckLine
    line = CheckLine("x", np.float64(1e-9), np.float64(1e-7), np.float64(1e-9) <= 1e-7)
    assert line.passed is True and type(line.value) is float


@pytest.mark.parametrize("value, what", [(0.0, "positive"), (float("nan"), "positive"),
                                         ("heavy", "a number")])
def test_a_bad_rotor_inertia_names_the_joint(value, what):
    from elements import AxisRotor, models
    mech = models.three_body_prismatic()
    with pytest.raises(BondGraphError, match=rf"joint 'J1': rotor inertia must be .*{what}"):
        mech.joint("J1").add_rotor(AxisRotor(value))
    from elements import Inertia, Mechanism, RigidBody, SphericalJoint
    m = Mechanism("m")
    b = m.add_body(RigidBody("b", 1.0, Inertia.principal(1.0, 1.0, 1.0)))
    with pytest.raises(BondGraphError, match="spherical joint 's' has no free-direction "
                       "port for a rotor inertia"):
        m.add_joint(SphericalJoint("s", m.ground, b)).add_rotor(1.0)


def test_projection_with_a_rotor_says_it_covers_joint_constraints_only():
    """A rotor ties its momentum to the joint rate: a constraint that is not a joint's
    position constraint. Projection used to fail with 'unknown effort source ...'; the
    message now says what covers what, and the simulation without projection runs."""
    from elements import models
    mech = models.three_body_prismatic()
    mech.joint("J1").add_rotor(0.01)
    mm = mech.assemble()
    with pytest.raises(BondGraphError, match=r"'Se\*_J1.axis0' is not a joint's position "
                       r"constraint .* simulate without projection"):
        mm.simulate((0.0, 0.01), projection=True)
    assert mm.simulate((0.0, 0.01)).success


# -- files that are not files, too large, or planted (reliability issue, items 12, 13) ------

DC_MOTOR = os.path.join(ROOT, "examples", "dc_motor.toml")


def _limited(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m bondgraph_cli cmd`` with 3 GB of address space (a file read whole
    fails fast instead of taking the machine's memory)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "bondgraph_cli", *cmd], capture_output=True,
                          text=True, timeout=timeout, env=env, preexec_fn=limit)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("command", [["run", "/dev/zero", "--out", "OUT"],
                                     ["equations", "/dev/zero"], ["render", "/dev/zero"]])
def test_a_device_named_as_the_model_is_refused(command, tmp_path):
    """`bondgraph run /dev/zero` read the device until memory ran out (MemoryError,
    exit 3)."""
    proc = _limited([c.replace("OUT", str(tmp_path / "o")) for c in command])
    assert proc.returncode == 2, proc.stderr
    assert "/dev/zero: not a regular file (a device, a pipe or a socket); give the model " \
           "file itself" in proc.stderr


def test_a_pipe_named_as_the_model_does_not_wait_for_a_writer(tmp_path):
    fifo = tmp_path / "model.toml"
    os.mkfifo(fifo)
    proc = _limited(["equations", str(fifo)], timeout=60)     # (it waited for ever)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr


def test_a_file_over_the_size_limit_is_refused_naming_it(tmp_path, capsys):
    from bondgraph._files import MAX_FILE_BYTES
    from bondgraph.graphfile import load_graph_file
    big = tmp_path / "big.toml"
    with open(DC_MOTOR, encoding="utf-8") as f:
        text = f.read()
    big.write_text(text + "#" * (MAX_FILE_BYTES - len(text.encode()) + 1) + "\n")
    assert main(["run", str(big), "--out", str(tmp_path / "o")]) == 2
    assert f"big.toml: larger than {MAX_FILE_BYTES:,} bytes; valid: a model file of at most " \
           f"10 MB" in capsys.readouterr().err
    with pytest.raises(BondGraphError, match="larger than"):
        load_graph_file(big)
    big.write_text(text)                               # (just below: read as before)
    assert load_graph_file(big).graph.name == "dc_motor"


@pytest.mark.parametrize("command", ["run", "render", "equations"])
def test_a_huge_dimension_is_refused_at_once(command, tmp_path, capsys):
    """dim = 1000000 on a C element: MemoryError (exit 3) in run, render and
    equations."""
    with open(DC_MOTOR, encoding="utf-8") as f:
        text = f.read().replace('kind = "I"\ninertia = { expr = "La" }',
                                'kind = "C"\ndim = 1000000\nstiffness = 1.0', 1)
    path = tmp_path / "huge.toml"
    path.write_text(text, encoding="utf-8")
    extra = {"run": ["--out", str(tmp_path / "o")], "render": ["--out",
                                                               str(tmp_path / "g.svg")]}
    assert main([command, str(path), *extra.get(command, [])]) == 2
    err = capsys.readouterr().err
    assert "huge.toml: [element 'La']" in err and "dim must be an integer from 1 to 1000" in err


def test_only_the_packages_own_errors_are_bad_input(tmp_path, capsys, monkeypatch):
    """Any KeyError was exit 2 ("bad input"), which hid internal bugs: a KeyError is now
    an internal error (exit 3), a failed lookup by name (NameNotFoundError) still bad
    input."""
    import bondgraph.graphfile
    from bondgraph import NameNotFoundError

    def broken(path):
        raise KeyError("p_La")
    monkeypatch.setattr(bondgraph.graphfile, "load_graph_file", broken)
    assert main(["equations", DC_MOTOR]) == 3
    assert "internal error: KeyError: 'p_La'" in capsys.readouterr().err

    def no_such(path):
        raise NameNotFoundError(f"{path}: no element 'x'")
    monkeypatch.setattr(bondgraph.graphfile, "load_graph_file", no_such)
    assert main(["equations", DC_MOTOR]) == 2
    assert "dc_motor.toml: no element 'x'" in capsys.readouterr().err


def _plant(link: str, victim) -> None:
    victim.write_text("the user's own file\n")
    os.symlink(victim, link)


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path, capsys):
    """A symbolic link at --out/states.csv.tmp (the writer's temporary name) redirected
    the write to the link's target."""
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for name in ("states.csv", "bonds.csv", "summary.json", "manifest.json"):
        victims[name] = tmp_path / f"victim_{name}"
        _plant(str(out / f"{name}.tmp"), victims[name])
    assert main(["run", DC_MOTOR, "--out", str(out), "--overwrite", "--quiet"]) == 0
    for name, victim in victims.items():
        assert victim.read_text() == "the user's own file\n", name
        assert os.path.isfile(out / name) and not os.path.islink(out / name)
    data = np.loadtxt(out / "states.csv", delimiter=",", skiprows=1)
    assert data.shape == (501, 3)
    # a mechanism run's files too
    mout = tmp_path / "mout"
    mout.mkdir()
    _plant(str(mout / "bodies.csv.tmp"), tmp_path / "victim_bodies")
    model = tmp_path / "m.toml"
    model.write_text(PENDULUM, encoding="utf-8")
    assert main(["run", str(model), "--out", str(mout), "--overwrite", "--quiet",
                 "--no-animation"]) == 0
    assert (tmp_path / "victim_bodies").read_text() == "the user's own file\n"


def test_temporary_files_are_created_exclusively(tmp_path, monkeypatch):
    """Even a link at the very name the writer draws is not followed: the name is
    created with O_EXCL | O_NOFOLLOW, and another is drawn."""
    import bondgraph._files as files
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(names))
    target = tmp_path / "x.json"
    _plant(f"{target}.aaaa.tmp", tmp_path / "victim")
    files.write_text(target, "{}")
    assert target.read_text() == "{}" and (tmp_path / "victim").read_text() == \
        "the user's own file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim", "x.json",
                                                          "x.json.aaaa.tmp"]


def test_output_times_that_do_not_fit_in_memory_are_named(monkeypatch):
    """A t_eval whose states cannot be kept (numpy's MemoryError when the output grid's
    arrays are made) ends in a ModelError naming t_eval, its size and what would do,
    not in numpy's bare "Unable to allocate". numpy's allocation is made to fail above
    a million values here (a real one needs more memory than the machine has)."""
    import types

    from bondgraph import ModelError
    from bondgraph import _output

    def empty(shape, *args, **kwargs):
        if int(np.prod(shape)) > 1_000_000:
            raise MemoryError(f"Unable to allocate an array with shape {shape}")
        return np.empty(shape, *args, **kwargs)
    fake = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np)
                                    if not k.startswith("__")})
    fake.empty = empty
    monkeypatch.setattr(_output, "np", fake)
    m = assemble(assign_causality(models.mass_spring_damper(1.0, 1.0, 1.0, 1.0)))
    x0 = np.zeros(m.n_states)
    small = simulate(m, (0.0, 0.01), x0, t_eval=np.linspace(0.0, 0.01, 11))
    assert small.success and small.x.shape == (m.n_states, 11)
    with pytest.raises(ModelError, match=r"t_eval: 1,000,000 output times of \d+ states need "
                                         r"[\d.]+ GiB to keep.*dense_output=True"):
        simulate(m, (0.0, 0.01), x0, t_eval=np.linspace(0.0, 0.01, 1_000_000))
