"""Exported FMUs (bondgraph.fmu, elements.export_mechanism_fmu) in an independent FMI
tool: fmpy loads each one, validates its model description and simulates it.

Each model is exported and compiled once per session (module fixtures). The checks:

- the FMU's derivative (its C: the dense reduction or the compiled kernels ported)
  equals ``model.rhs`` at random states to 1e-12 of the largest rate: the same
  equations, summed in another order (seen: 0 for the plain graphs, below 1e-15 for
  the mechanisms);
- fmpy's runs, model exchange (CVode at 1e-14) and co-simulation (the FMU's own
  Dormand-Prince at 1e-12), equal :func:`bondgraph.simulate` (DOP853 at 1e-12, an
  absolute tolerance 1e-15 of each state's nominal) to 1e-8 of each state's scale (its
  largest magnitude over the run; for a state that stays at rounding level, a rotor's
  centre at 1e-18 m, 1e-6 of its nominal magnitude); seen: 7e-12, the three-body 4e-10;
- a mechanism with universal (perpendicular and oblique), gimbal and screw joints, with
  rotors so that the terms' rates count: the same derivative (1e-12), fmpy's runs equal
  to :meth:`MechanismModel.simulate` to 1e-8 (seen: 7e-11), and at gimbal lock an
  fmi2Error naming the joint's term where Python raises GimbalLockError;
- the fixed-step co-simulation solver (RK4) converges at its order: halving the step
  divides the error by 2^4 = 16 (accepted between 12 and 20);
- an input stepped during a run changes the response as the Python model with the new
  value does; a deliberately wrong export (a parameter written 1e-6 off) fails the
  comparison of runs.

fmpy is in the test extra; a machine without a C compiler skips with the reason.
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bondgraph import (
    Baumgarte, FMUBuildError, ModelError, StateFunction, TimeFunction, assemble,
    assign_causality, models, simulate,
)
from bondgraph.fmu import _export, export_fmu
from bondgraph.fmu._build import find_compiler, platform_folder
from bondgraph.fmu._variables import Interface
from bondgraph.graphfile import load_graph_file
from robot_data import robot_file                     # (tests/helpers)

fmpy = pytest.importorskip("fmpy", reason="fmpy (the test extra) is not installed: "
                                          "pip install -e '.[test]'")
from fmpy import extract, read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

pytestmark = pytest.mark.skipif(
    find_compiler() is None or platform_folder() is None,
    reason="no C compiler (cc, gcc, clang or $CC) or no FMI platform folder for this "
           "machine: the FMUs' binaries cannot be built")

ROOT = Path(__file__).resolve().parents[1]
RUN_RTOL = 1e-8          # the agreement between fmpy's runs and simulate
DERIV_RTOL = 1e-12       # the FMU's derivative against model.rhs


# -- driving an FMU through fmpy ----------------------------------------------------------
class Instance:
    """An FMU instantiated by fmpy for model exchange: derivatives and outputs at any
    (t, x) with any inputs."""

    def __init__(self, path):
        self.md = read_model_description(path, validate=True)
        self.fmu = FMU2Model(guid=self.md.guid, unzipDirectory=extract(path),
                             modelIdentifier=self.md.modelExchange.modelIdentifier,
                             instanceName="test")
        self.fmu.instantiate()
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        self.fmu.enterContinuousTimeMode()
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.n = self.md.numberOfContinuousStates
        self._x = (ctypes.c_double * self.n)()
        self._dx = (ctypes.c_double * self.n)()

    def at(self, t, x):
        self.fmu.setTime(float(t))
        self._x[:] = [float(v) for v in x]
        self.fmu.setContinuousStates(self._x, self.n)

    def derivative(self, t, x) -> np.ndarray:
        self.at(t, x)
        self.fmu.getDerivatives(self._dx, self.n)
        return np.array(self._dx[:])

    def get(self, names) -> np.ndarray:
        return np.array(self.fmu.getReal([self.vr[n] for n in names]))

    def set(self, values: dict):
        self.fmu.setReal([self.vr[k] for k in values], [float(v) for v in values.values()])


def run_errors(path, ref, names, scale, fmi_type, **kw) -> np.ndarray:
    """Each state's largest difference between fmpy's run and the reference (states in
    rows, at fmpy's output times), divided by its scale."""
    tol = 1e-14 if fmi_type == "ModelExchange" else 1e-12
    r = simulate_fmu(str(path), fmi_type=fmi_type, relative_tolerance=tol, output=names,
                     **kw)
    keep = np.r_[True, np.diff(r["time"]) > 0]        # (an event's second sample)
    F = np.array([r[n][keep] for n in names])
    assert F.shape == ref.shape, (F.shape, ref.shape)
    return np.abs(F - ref).max(axis=1) / scale


def state_scale(X, nominal) -> np.ndarray:
    """Each state's largest magnitude over the run; for a state that stays at rounding
    level (a rotor's centre, 1e-18 m), 1e-6 of its nominal magnitude instead."""
    return np.maximum(np.abs(X).max(axis=1), 1e-6 * np.asarray(nominal, dtype=float))


# -- the models, exported once -------------------------------------------------------------
@dataclasses.dataclass
class Case:
    name: str
    model: object
    x0: np.ndarray
    span: float
    stab: object
    path: Path
    info: object
    nominal: np.ndarray


def _dc_motor():
    spec = load_graph_file(str(ROOT / "examples" / "dc_motor.toml"))
    model = assemble(assign_causality(spec.graph))
    return model, model.initial_state({"p_La": 0.0, "p_J": 0.0}), 0.5, None, {}


def _duffing():
    model = assemble(assign_causality(models.duffing(1.0, 1.0, 1.0)))
    return model, model.initial_state({"p_m": 0.0, "q_spring": 1.3}), 10.0, None, {}


def _diode():
    model = assemble(assign_causality(models.diode_rectifier(
        amplitude=5.0, omega=100.0, saturation_current=1e-9, thermal_voltage=0.05,
        series_resistance=10.0, capacitance=1e-4, load=100.0)))
    # (the charge is 1e-4 C: its nominal makes CVode's absolute tolerance fit it)
    return model, model.initial_state({"q_cap": 0.0}), 0.05, None, {"q_cap": 1e-4}


PLAIN = {"dc_motor": _dc_motor, "duffing": _duffing, "diode_rectifier": _diode}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fmus")


@pytest.fixture(scope="module")
def plain(folder):
    out = {}
    for name, make in PLAIN.items():
        model, x0, span, stab, nominals = make()
        extra = {"inputs": ["V"], "outputs": ["J.f", "La.f", "Ra.e"]} \
            if name == "dc_motor" else {}
        path = folder / f"{name}.fmu"
        info = export_fmu(model, path, x0=x0, stop_time=span, nominals=nominals, **extra)
        nominal = np.ones(model.n_states)
        for k, v in nominals.items():
            nominal[model.state_slices[k]] = v
        out[name] = Case(name, model, x0, span, stab, path, info, nominal)
    return out


@pytest.fixture(scope="module")
def three_body(folder):
    from elements import export_mechanism_fmu
    from elements.models import three_body_prismatic
    mm = three_body_prismatic().assemble()
    path = folder / "three_body.fmu"
    outputs = ["J1.q", "J1.qd", "J3.q", "J3.qd", "J3.spring", "J2.Fx", "J2.Fy", "J2.Fz",
               "m2.x", "m2.qz"]
    info = export_mechanism_fmu(mm, path, inputs=["J1"], outputs=outputs, stop_time=2.0)
    case = Case("three_body", mm.model, mm.initial_state({}, {}), 2.0,
                Baumgarte(10.0, 10.0), path, info, mm.state_atol(1.0))
    return mm, case


# -- the model description -----------------------------------------------------------------
def test_fmpy_validates_every_model_description(plain, three_body):
    for case in [*plain.values(), three_body[1]]:
        assert validate_fmu(str(case.path)) == [], case.name
        with zipfile.ZipFile(case.path) as z:
            names = z.namelist()
        assert case.info.binary in names
        assert "sources/model.c" in names and "sources/fmi2Functions.h" in names
        assert "documentation/licenses/LICENSE_FMI.txt" in names


def test_the_interface_names_states_parameters_inputs_and_outputs(plain):
    case = plain["dc_motor"]
    md = read_model_description(str(case.path), validate=True)
    assert md.modelName == "dc_motor" and "vector bond graph" in md.description
    v = {x.name: x for x in md.modelVariables}
    # states with their derivatives
    assert md.numberOfContinuousStates == 2
    assert [d.variable.name for d in md.derivatives] == ["der(p_La)", "der(p_J)"]
    assert v["der(p_J)"].derivative is v["p_J"]
    # the file's parameters, tunable, with their units and values
    assert (v["Ra"].causality, v["Ra"].variability, v["Ra"].unit, float(v["Ra"].start)) == \
        ("parameter", "tunable", "ohm", 1.2)
    assert v["J"].unit == "kg m^2" and v["load.torque"].unit == "N m"
    # the supply voltage is an input (its parameter V, used by nothing else, is replaced)
    assert (v["V"].causality, float(v["V"].start), v["V"].unit) == ("input", 12.0, "V")
    assert case.info.replaced == ("V",)
    assert [o.variable.name for o in md.outputs] == ["J.f", "La.f", "Ra.e"]


# -- the derivative ---------------------------------------------------------------------
def _random_states(case, rng, count=4):
    if case.name == "diode_rectifier":
        # near the trajectory: Newton's method on the diode's exponential law, started
        # from the last solution, needs about (v - v*) / Vt passes from far away (in
        # Python as in C), more than it is allowed at a state 5 V off
        ts = np.sort(rng.uniform(0, case.span, count))
        X = simulate(case.model, (0, case.span), case.x0, t_eval=ts, rtol=1e-10,
                     atol=1e-16).x
        for k in range(count):
            yield ts[k], X[:, k] * (1 + 1e-3 * rng.normal(size=case.x0.size))
        return
    for _ in range(count):
        if case.name == "three_body":
            yield rng.uniform(0, case.span), case.x0 + rng.normal(scale=0.1,
                                                                  size=case.x0.size)
        else:
            yield rng.uniform(0, case.span), rng.normal(size=case.x0.size) * case.nominal


@pytest.mark.parametrize("name", [*PLAIN, "three_body"])
def test_the_fmus_derivative_is_the_models(name, plain, three_body):
    case = three_body[1] if name == "three_body" else plain[name]
    inst = Instance(case.path)
    rng = np.random.default_rng(7)
    for t, x in _random_states(case, rng):
        got = inst.derivative(t, x)
        want = case.model.rhs(t, x, stabilization=case.stab)
        assert np.abs(got - want).max() <= DERIV_RTOL * np.abs(want).max(), (t, got, want)


def test_the_fused_engines_dense_fallback_gives_the_same_derivative(three_body, folder,
                                                                     monkeypatch):
    """A pivot threshold above 1 fails every fixed pivot: the C then factors the kept
    system densely with partial pivoting; the derivative stays the model's."""
    from elements import export_mechanism_fmu
    mm, case = three_body
    original = _export.fused_parts

    def forced(model, x0, stabilization):
        D, parts, fast = original(model, x0, stabilization)
        D = list(D)
        F, FO = D[17].copy(), D[19]
        F[FO[3]] = 2.0                  # F_SCAL[0]: the threshold test's u
        D[17] = F
        return tuple(D), parts, fast

    monkeypatch.setattr(_export, "fused_parts", forced)
    path = folder / "three_body_dense_lu.fmu"
    export_mechanism_fmu(mm, path)
    inst = Instance(path)
    rng = np.random.default_rng(8)
    for t, x in _random_states(case, rng, 3):
        got = inst.derivative(t, x)
        want = case.model.rhs(t, x, stabilization=case.stab)
        assert np.abs(got - want).max() <= DERIV_RTOL * np.abs(want).max()


# -- runs ---------------------------------------------------------------------------------
_REFERENCES: dict = {}


def _reference(case, ts):
    """simulate's states at ``ts`` (DOP853, 1e-12; made once per case and grid). Its
    steps are at most the output interval: DOP853's dense output across a long step
    errs by 1e-8 of a state's scale between its steps (seen on the DC motor at 1e-12),
    where the FMU's runs step exactly to each output time."""
    key = (case.name, ts.size, float(ts[-1]))
    if key not in _REFERENCES:
        _REFERENCES[key] = simulate(case.model, (0.0, case.span), case.x0, t_eval=ts,
                                    method="DOP853", rtol=1e-12, atol=1e-15 * case.nominal,
                                    stabilization=case.stab, max_step=ts[1] - ts[0]).x
    return _REFERENCES[key]


@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
@pytest.mark.parametrize("name", [*PLAIN, "three_body"])
def test_fmpy_runs_equal_simulate(name, fmi_type, plain, three_body):
    case = three_body[1] if name == "three_body" else plain[name]
    ts = np.linspace(0.0, case.span, 51)
    X = _reference(case, ts)
    err = run_errors(case.path, X, list(case.info.states), state_scale(X, case.nominal),
                     fmi_type, stop_time=case.span, output_interval=case.span / 50)
    assert err.max() <= RUN_RTOL, dict(zip(case.info.states, err))


def test_a_wrong_parameter_in_the_export_fails_the_comparison(plain, folder, monkeypatch):
    """The same comparison on an FMU whose armature resistance was written 1e-6 off."""
    case = plain["dc_motor"]
    build = Interface.build.__func__

    def wrong(cls, *args, **kwargs):
        iface = build(cls, *args, **kwargs)
        k = [v.name for v in iface.parameters].index("Ra")
        v = iface.parameters[k]
        iface.parameters[k] = dataclasses.replace(v, start=v.start * (1 + 1e-6))
        return iface

    monkeypatch.setattr(Interface, "build", classmethod(wrong))
    path = folder / "dc_motor_wrong.fmu"
    export_fmu(case.model, path, x0=case.x0, stop_time=case.span)
    ts = np.linspace(0.0, case.span, 51)
    X = _reference(case, ts)
    err = run_errors(path, X, list(case.info.states), state_scale(X, case.nominal),
                     "CoSimulation", stop_time=case.span, output_interval=case.span / 50)
    assert err.max() > RUN_RTOL
    # and the derivative check sees it too
    x = np.array([0.03, 0.01])
    got, want = Instance(path).derivative(0.0, x), case.model.rhs(0.0, x)
    assert np.abs(got - want).max() > DERIV_RTOL * np.abs(want).max()


def test_fixed_step_co_simulation_converges_at_fourth_order(plain, folder):
    """RK4, one step per communication step: the error at t = 50 ms falls 16-fold when
    the step is halved."""
    case = plain["dc_motor"]
    path = folder / "dc_motor_rk4.fmu"
    export_fmu(case.model, path, x0=case.x0, cs_solver="rk4", inputs=["V"])
    span = 0.05
    exact = simulate(case.model, (0, span), case.x0, method="DOP853", rtol=1e-13,
                     atol=1e-16).x[:, -1]
    errors = []
    for h in (1e-3, 5e-4, 2.5e-4):
        r = simulate_fmu(str(path), fmi_type="CoSimulation", stop_time=span,
                         output_interval=h, output=["p_La", "p_J"])
        errors.append(np.abs(np.array([r["p_La"][-1], r["p_J"][-1]]) - exact).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 12) & (ratios < 20)), (errors, ratios)


def test_an_input_step_changes_the_response_as_the_python_model(plain):
    """The supply voltage steps from 12 V to 6 V at 0.25 s during fmpy's run; Python:
    the same model run to 0.25 s, then with V = 6 V from there."""
    case = plain["dc_motor"]
    ts = np.linspace(0.0, 0.5, 101)
    first = simulate(case.model, (0, 0.25), case.x0, t_eval=ts[:51], method="DOP853",
                     rtol=1e-12, atol=1e-15, max_step=0.005)
    then = simulate(case.model.with_parameters(V=6.0), (0.25, 0.5), first.x[:, -1],
                    t_eval=ts[50:], method="DOP853", rtol=1e-12, atol=1e-15, max_step=0.005)
    X = np.concatenate([first.x, then.x[:, 1:]], axis=1)
    step = np.array([(0.0, 12.0), (0.25, 12.0), (0.25, 6.0), (0.5, 6.0)],
                    dtype=[("time", float), ("V", float)])
    for fmi_type in ("ModelExchange", "CoSimulation"):
        err = run_errors(case.path, X, ["p_La", "p_J"], state_scale(X, 1.0), fmi_type,
                         stop_time=0.5, output_interval=0.005, input=step)
        assert err.max() <= RUN_RTOL, (fmi_type, err)
    # without the step the run is another one
    err = run_errors(case.path, X, ["p_La", "p_J"], state_scale(X, 1.0), "CoSimulation",
                     stop_time=0.5, output_interval=0.005)
    assert err.max() > 0.1, err


def test_a_tunable_parameter_set_by_the_tool_acts_as_in_python(plain):
    case = plain["dc_motor"]
    ts = np.linspace(0.0, 0.5, 51)
    X = simulate(case.model.with_parameters(Ra=2.0, J=3e-4), (0, 0.5), case.x0, t_eval=ts,
                 method="DOP853", rtol=1e-12, atol=1e-15, max_step=0.01).x
    err = run_errors(case.path, X, ["p_La", "p_J"], state_scale(X, 1.0), "CoSimulation",
                     stop_time=0.5, output_interval=0.01,
                     start_values={"Ra": 2.0, "J": 3e-4})
    assert err.max() <= RUN_RTOL


def test_outputs_are_the_models_bond_variables(plain):
    from bondgraph.linearization import output_reader
    case = plain["dc_motor"]
    inst = Instance(case.path)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.normal(size=2)
        inst.at(0.1, x)
        ev = case.model.evaluate(0.1, x)
        want = [output_reader(case.model, n)(ev) for n in case.info.outputs]
        got = inst.get(case.info.outputs)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_mechanism_outputs_equal_the_result(three_body):
    """Joint coordinates, rates, the spring's effort, a joint's reaction force and a
    body's pose from fmpy's co-simulation against MechanismResult (1e-8 of each output's
    largest magnitude)."""
    mm, case = three_body
    outs = list(case.info.outputs)
    r = simulate_fmu(str(case.path), fmi_type="CoSimulation", stop_time=2.0,
                     relative_tolerance=1e-12, output_interval=0.04, output=outs)
    res = mm.simulate((0, 2.0), t_eval=r["time"], rtol=1e-12, atol=1e-12, max_step=0.04)
    for name in outs:
        stem, _, what = name.rpartition(".")
        if stem in mm.mechanism.joints:
            j = res.joint(stem)
            ref = {"q": j.q, "qd": j.qd, "spring": j.spring, "Fx": j.force[0],
                   "Fy": j.force[1], "Fz": j.force[2]}[what]
        else:
            b = res.body(stem)
            ref = {"x": b.position[0], "qz": b.quaternion[3]}[what]
        assert np.abs(r[name] - ref).max() <= RUN_RTOL * np.abs(ref).max(), name


def _universal_gimbal_screw():
    """A Cardan joint from the ground and an oblique universal joint below it (axes at
    a cosine of 0.5: AxesCombination), a gimbal and a screw (pitch 0.01 m/rad, its axis
    off the vertical), every coordinate with a rotor inertia: a rotor's flow is the
    coordinate's rate, so the derivative also needs the rates of the joints' terms
    (without rotors it does not read them). Springs and a damper on some coordinates,
    gravity off the axes. Over 2 s the gimbal's middle angle stays within -0.2..0.3 rad
    (far from its lock at pi/2)."""
    from elements import GimbalJoint, Inertia, Mechanism, RigidBody, ScrewJoint, \
        UniversalJoint
    mech = Mechanism("universal_gimbal_screw", gravity=(0.3, -0.2, -9.81))
    I1 = Inertia.about_center([[0.05, 0.004, -0.002], [0.004, 0.03, 0.001],
                               [-0.002, 0.001, 0.04]])
    I2 = Inertia.about_center([[0.02, -0.003, 0.001], [-0.003, 0.015, 0.002],
                               [0.001, 0.002, 0.025]])
    g = mech.ground
    u1 = mech.add_body(RigidBody("u1", 1.2, I1))
    u2 = mech.add_body(RigidBody("u2", 0.8, I2))
    gb = mech.add_body(RigidBody("gb", 1.0, I1))
    nut = mech.add_body(RigidBody("nut", 0.5, I2))
    mech.add_joint(UniversalJoint("U", g, u1, axis=(1, 0, 0), axis2=(0, 1, 0),
                                  child_point=(0.02, -0.01, 0.3),
                                  rotor={"angle1": 0.01, "angle2": 0.02}))
    mech.add_joint(UniversalJoint("UO", u1, u2, parent_point=(0.0, 0.0, -0.2),
                                  child_point=(0.01, 0.02, 0.25), axis=(0, 0, 1),
                                  axis2=(1, 1, 0.7), spring={"angle1": 2.0, "angle2": 1.0},
                                  damper={"angle1": 0.01}, rotor={"angle2": 0.01}))
    mech.add_joint(GimbalJoint("G", g, gb, parent_point=(1.0, 0.0, 0.0), axis=(0, 0, 1),
                               axis2=(1, 0, 0), axis3=(0, 1, 0), child_point=(0.05, 0.03, 0.3),
                               rotor={"angle1": 0.01, "angle2": 0.02, "angle3": 0.015}))
    mech.add_joint(ScrewJoint("S", g, nut, parent_point=(-1.0, 0.0, 0.0),
                              child_point=(0.006, -0.004, 0.01), axis=(0.1, 0.0, 1.0),
                              pitch=0.01, spring=40.0, rotor=0.002))
    # two revolutes whose axes do not meet (an ankle: GapRow and GapLength)
    foot = mech.add_body(RigidBody("foot", 0.6, I2))
    mech.add_joint(UniversalJoint("UF", u2, foot, parent_point=(0.0, 0.0, -0.15),
                                  child_point=(0.02, 0.0, 0.05), axis=(1, 0, 0.2),
                                  axis2=(0, 1, 0), axis2_offset=(0.0, 0.03, -0.04),
                                  spring={"angle1": 1.5, "angle2": 1.0},
                                  rotor={"angle2": 0.005}))
    q = {"U": [0.3, -0.2], "UO": [0.4, 0.5], "G": [0.2, 0.3, -0.1], "S": 0.5,
         "UF": [0.2, -0.3]}
    qd = {"U": [0.5, -0.4], "UO": [-0.3, 0.8], "G": [0.5, -0.3, 0.4], "S": 1.0,
          "UF": [0.6, -0.5]}
    return mech.assemble(), q, qd


UGS_PORTS = ["U.angle1", "U.angle2", "UO.angle1", "UO.angle2", "G.angle1", "G.angle2",
             "G.angle3", "S", "UF.angle1", "UF.angle2"]


@pytest.fixture(scope="module")
def universal_gimbal_screw(folder):
    from elements import export_mechanism_fmu
    mm, q, qd = _universal_gimbal_screw()
    path = folder / "universal_gimbal_screw.fmu"
    outputs = [f"{p}.{w}" for p in UGS_PORTS for w in ("q", "qd")] + \
        ["G.Fz", "S.Fx", "nut.z"]
    info = export_mechanism_fmu(mm, path, q=q, qd=qd, outputs=outputs, stop_time=2.0)
    case = Case("universal_gimbal_screw", mm.model, mm.initial_state(q, qd), 2.0,
                Baumgarte(10.0, 10.0), path, info, mm.state_atol(1.0))
    return mm, case


def test_universal_gimbal_and_screw_joints_export(universal_gimbal_screw, capsys):
    """Their kernels are compiled, hence in the FMU's C (program.c): the FMU's
    derivative at random states near the start (joint terms, their rates through the
    rotors, the screw's Phi through the stabilisation) is the model's to 1e-12 of the
    largest rate. At the gimbal's lock (its body turned a quarter turn about the
    middle axis x: the third axis y onto the first, z) the evaluation fails with
    fmi2Error and says where (the gimbal's term whose modulus is NaN), as Python raises
    GimbalLockError there."""
    from fmpy.fmi1 import FMICallException
    from elements.kernels.geometry import GimbalLockError
    mm, case = universal_gimbal_screw
    assert case.info.engine == "fused"
    inst = Instance(case.path)
    rng = np.random.default_rng(9)
    for _ in range(4):
        t, x = rng.uniform(0, 2.0), case.x0 + rng.normal(scale=0.1, size=case.x0.size)
        got = inst.derivative(t, x)
        want = case.model.rhs(t, x, stabilization=case.stab)
        assert np.abs(got - want).max() <= DERIV_RTOL * np.abs(want).max(), (t, got, want)
    x = case.x0.copy()
    x[case.model.state_slices[mm.mechanism.bodies["gb"].q]] = [np.sqrt(0.5), np.sqrt(0.5),
                                                               0.0, 0.0]
    with pytest.raises(GimbalLockError, match="gimbal joint 'G' is in gimbal lock"):
        case.model.rhs(0.0, x, stabilization=case.stab)
    capsys.readouterr()
    with pytest.raises(FMICallException, match="fmi2GetDerivatives"):
        inst.derivative(0.0, x)
    # (the element it names: one of the gimbal's terms)
    assert re.search(r"MTF 'G\.[\w.]+': its modulus is not finite here",
                     capsys.readouterr().out)


@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
def test_universal_gimbal_and_screw_runs_equal_the_result(universal_gimbal_screw,
                                                          fmi_type):
    """fmpy's runs (CVode at 1e-14, the FMU's Dormand-Prince at 1e-12) of the mechanism
    with universal, gimbal and screw joints: every coordinate and rate, the gimbal's
    and the screw's reactions and the nut's height equal MechanismModel.simulate (at
    1e-12, steps no longer than the output interval) to 1e-8 of each output's largest
    magnitude."""
    mm, case = universal_gimbal_screw
    outs = list(case.info.outputs)
    tol = 1e-14 if fmi_type == "ModelExchange" else 1e-12
    r = simulate_fmu(str(case.path), fmi_type=fmi_type, stop_time=2.0,
                     relative_tolerance=tol, output_interval=0.04, output=outs)
    keep = np.r_[True, np.diff(r["time"]) > 0]
    res = mm.simulate((0, 2.0), x0=case.x0, t_eval=r["time"][keep], rtol=1e-12,
                      atol=1e-12, max_step=0.04)
    assert res.success
    errs = {}
    for name in outs:
        stem, _, what = name.rpartition(".")
        if stem == "nut":
            ref = res.body("nut").position[2]
        elif what in ("Fx", "Fy", "Fz"):
            ref = res.joint(stem).force["xyz".index(what[1])]
        else:
            joint, _, coord = stem.partition(".")
            ax = [a for a in mm.mechanism.joint(joint).axes if a.port == stem][0]
            ref = np.atleast_2d(getattr(res.joint(joint), what))[ax.index]
        errs[name] = np.abs(r[name][keep] - ref).max() / np.abs(ref).max()
    print(fmi_type, {k: f"{v:.1e}" for k, v in errs.items()})
    assert max(errs.values()) <= RUN_RTOL, errs


def _panda_urdf():
    return robot_file("panda_description/urdf/panda.urdf")


def test_a_7_dof_robot_under_a_pd_law_on_its_inputs(folder):
    """Panda (7 arm joints and 2 fingers, from its URDF): the FMU's inputs are the joint
    efforts, set by a PD law from its outputs q and qd at every evaluation (fmpy's
    model-exchange instance integrated by DOP853); Python: the same PD law as a spring
    (Kp, rest q_ref) and a damper (Kd) on each joint. Joint coordinates and rates agree
    to 1e-8 of their scale (seen: 3e-11 and 2e-10)."""
    path_urdf = _panda_urdf()
    if path_urdf is None:
        pytest.skip("example-robot-data (the test extra) is not installed: no robot URDF")
    from scipy.integrate import solve_ivp
    from elements import export_mechanism_fmu
    from elements.files.urdf import load_urdf

    def robot():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_urdf(path_urdf, mimic="independent")

    mech = robot()
    axes = [ax for j in mech.joints.values() for ax in j.axes]
    ports = [ax.port for ax in axes]
    assert len([ax for ax in axes if ax.unit == "rad"]) == 7
    rng = np.random.default_rng(3)
    q0 = {ax.port: float(rng.uniform(-0.3, 0.3)) if ax.unit == "rad" else 0.01 for ax in axes}
    qd0 = {ax.port: float(rng.normal(scale=0.3)) if ax.unit == "rad" else 0.0 for ax in axes}
    qref = np.array([0.2 if ax.unit == "rad" else 0.02 for ax in axes])
    kp = np.array([60.0 if ax.unit == "rad" else 20.0 for ax in axes])
    kd = np.array([6.0 if ax.unit == "rad" else 1.0 for ax in axes])
    path = folder / "panda.fmu"
    info = export_mechanism_fmu(mech.assemble(), path, q=q0, qd=qd0, inputs=ports,
                                outputs=[f"{p}.q" for p in ports] + [f"{p}.qd" for p in ports])
    reference = robot()
    for ax, k, c, r in zip(axes, kp, kd, qref):
        reference.joint(ax.joint).add_spring(k, r)
        reference.joint(ax.joint).add_damper(c)
    span, ts = 0.5, np.linspace(0.0, 0.5, 26)
    res = reference.assemble().simulate((0, span), q=q0, qd=qd0, t_eval=ts, rtol=1e-12,
                                        atol=1e-12, max_step=0.02)
    inst = Instance(path)
    n = len(ports)
    ys = [f"{p}.q" for p in ports] + [f"{p}.qd" for p in ports]
    nominal = np.array([float(inst.md.modelVariables[k].nominal) for k in range(inst.n)])

    def rhs(t, x):
        inst.at(t, x)
        y = inst.get(ys)
        inst.set(dict(zip(info.inputs, -kp * (y[:n] - qref) - kd * y[n:])))
        inst.fmu.getDerivatives(inst._dx, inst.n)
        return np.array(inst._dx[:])

    x0 = inst.get(list(info.states))
    sol = solve_ivp(rhs, (0, span), x0, method="DOP853", t_eval=ts, rtol=1e-12,
                    atol=1e-12 * nominal)
    assert sol.success
    Y = []
    for k in range(ts.size):
        inst.at(ts[k], sol.y[:, k])
        Y.append(inst.get(ys))
    Y = np.array(Y).T
    for i, ax in enumerate(axes):
        j = res.joint(ax.joint)
        for got, want in ((Y[i], np.atleast_2d(j.q)[ax.index]),
                          (Y[n + i], np.atleast_2d(j.qd)[ax.index])):
            assert np.abs(got - want).max() <= RUN_RTOL * np.abs(want).max(), ax.port


def test_subsystems_with_python_controllers_named_as_inputs(folder):
    """examples/electromechanical_arm.py: three DC motors (R, L, gyrator, gearbox;
    subsystems of the mechanism) whose battery voltages are Python StateFunctions (a PD
    law). Named as inputs, the voltages become the tool's (the FMU holds none of the
    Python law); with the law's values at a state set as inputs, the FMU's derivative
    is the model's (1e-12)."""
    import importlib.util
    from bondgraph.element import StateView
    from elements import export_mechanism_fmu
    spec = importlib.util.spec_from_file_location(
        "electromechanical_arm", ROOT / "examples" / "electromechanical_arm.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    mm = ex.arm().assemble()
    batteries = [n for n, law in mm.model.sources.items() if law.state_dependent]
    assert len(batteries) == 3
    motors = [n for n in mm.model.state_names if n.endswith(".motor.La")]
    q0 = {"J1": 0.3, "J2": -0.4, "J3": 0.8}
    path = folder / "arm.fmu"
    info = export_mechanism_fmu(mm, path, q=q0, states={s: 0.0 for s in motors},
                                inputs=batteries, outputs=["J2.q", "J2.qd"])
    assert info.engine == "fused" and info.inputs == tuple(batteries)
    with pytest.raises(ModelError, match=r"Se 'J1.drive.battery.V': its value is a Python "
                                         r"StateFunction"):
        export_mechanism_fmu(mm, folder / "x.fmu", q=q0, states={s: 0.0 for s in motors})
    x0 = mm.initial_state(q0, {}, states={s: 0.0 for s in motors})
    inst = Instance(path)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = x0 + 0.05 * rng.normal(size=x0.size)
        view = StateView(x, mm.model.state_slices)
        inst.set({n: float(mm.model.sources[n].value(0.0, view)[0]) for n in batteries})
        got = inst.derivative(0.0, x)
        want = mm.model.rhs(0.0, x, stabilization=Baumgarte(10.0, 10.0))
        assert np.abs(got - want).max() <= DERIV_RTOL * np.abs(want).max()


# -- what cannot be exported, and a compiler that fails --------------------------------------
def test_a_python_function_source_is_refused_by_name(folder):
    bg = models.dc_motor(12.0, 1.2, 0.005, 0.05, 2e-4, 1e-4)
    bg.element("V").value = StateFunction(lambda t, s: 12.0, ())
    model = assemble(assign_causality(bg))
    with pytest.raises(ModelError, match=r"Se 'V': its value is a Python StateFunction"):
        export_fmu(model, folder / "x.fmu", x0=np.zeros(2))
    bg.element("V").value = TimeFunction(lambda t: 12.0)
    model = assemble(assign_causality(bg))
    with pytest.raises(ModelError, match=r"Se 'V': its value is a Python TimeFunction"):
        export_fmu(model, folder / "x.fmu", x0=np.zeros(2))
    # named as an input, the same source is the tool's to set
    bg.element("V").value = 12.0
    info = export_fmu(assemble(assign_causality(bg)), folder / "x.fmu", x0=np.zeros(2),
                      inputs=["V"], compile=False)
    assert info.inputs == ("V",) and info.binary is None


def test_a_callable_modulus_is_refused_by_name(folder):
    model = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    x0 = {"r": [0.0, -1.0], "p_m": [0.0, 0.0]}
    with pytest.raises(ModelError, match=r"MTF 'radial': its modulus is a Python function"):
        export_fmu(model, folder / "x.fmu", x0=x0)


def test_stops_and_friction_are_refused_by_joint(folder):
    from elements import export_mechanism_fmu
    from elements.models import three_body_prismatic
    mech = three_body_prismatic()
    mech.joint("J3").add_limit(-0.1, 0.1, restitution=0.5)
    with pytest.raises(ModelError, match=r"joint 'J3' has stops on coordinate 'J3'"):
        export_mechanism_fmu(mech.assemble(), folder / "x.fmu")


def test_contact_and_free_bodies_alone_are_refused_by_name(folder):
    """Contact is refused naming the shapes (it was refused for a kinematic rate
    function, the real cause in parentheses), and a mechanism of free bodies alone says
    that it needs a joint constraint; nothing is written."""
    from elements import Inertia, Mechanism, RigidBody, export_mechanism_fmu
    from elements.contact import Plane, Sphere
    from elements.models import three_body_prismatic
    mech = three_body_prismatic()
    mech.add_shape(Plane("floor"))
    with pytest.raises(ModelError, match=r"has collision shapes \(floor\): contact is not"):
        export_mechanism_fmu(mech.assemble(), folder / "refused.fmu")
    alone = Mechanism("alone", gravity=(0.0, 0.0, -9.81))
    alone.add_body(RigidBody("ball", 1.0, Inertia.principal(0.004, 0.004, 0.004)))
    alone.add_shape(Sphere("s", "ball", 0.1))
    with pytest.raises(ModelError, match=r"'alone' has collision shapes \(s\)"):
        export_mechanism_fmu(alone.assemble(), folder / "refused.fmu")
    alone.shapes.clear()
    alone.contact_laws.clear()
    with pytest.raises(ModelError, match=r"no joint constraint \(free bodies only\)"):
        export_mechanism_fmu(alone.assemble(), folder / "refused.fmu")
    assert not (folder / "refused.fmu").exists()


def test_unknown_inputs_and_outputs_name_the_valid_ones(plain, folder):
    case = plain["dc_motor"]
    with pytest.raises(ModelError, match=r"no source named 'Vs'.*sources \(Se, Sf\): V"):
        export_fmu(case.model, folder / "x.fmu", x0=case.x0, inputs=["Vs"])
    with pytest.raises(ModelError, match=r"no output 'J.w'"):
        export_fmu(case.model, folder / "x.fmu", x0=case.x0, outputs=["J.w"])
    with pytest.raises(ModelError, match=r"must end in .fmu"):
        export_fmu(case.model, folder / "x.zip", x0=case.x0)


def test_a_compile_failure_keeps_the_sources_and_says_where(plain, tmp_path):
    case = plain["dc_motor"]
    target = tmp_path / "motor.fmu"
    with pytest.raises(FMUBuildError, match=r"failed on the FMU's sources.*sources are in") \
            as err:
        export_fmu(case.model, target, x0=case.x0, cc="false")    # (a compiler that fails)
    kept = Path(err.value.sources)
    assert kept == tmp_path / "motor_sources"
    assert (kept / "model.c").is_file() and (kept / "bg_fmi2.c").is_file()
    assert not target.exists()


def test_the_command_line_writes_an_fmu_and_refuses_bad_names(tmp_path, capsys):
    from bondgraph_cli.commands import run
    out = tmp_path / "motor.fmu"
    assert run(["export-fmu", str(ROOT / "examples" / "dc_motor.toml"), "--out", str(out),
                "--inputs", "V", "--outputs", "J.f,La.f"]) == 0
    assert "dc_motor (dense engine), 2 states" in capsys.readouterr().out
    assert validate_fmu(str(out)) == []
    assert read_model_description(str(out)).defaultExperiment.stopTime == "0.5"
    assert run(["export-fmu", str(ROOT / "examples" / "dc_motor.toml"), "--out",
                str(tmp_path / "motor.zip")]) == 2
    assert "must end in .fmu" in capsys.readouterr().err
    assert run(["export-fmu", str(ROOT / "examples" / "three_body_prismatic.toml"), "--out",
                str(out), "--outputs", "J1.qdd"]) == 2
    assert "no output 'J1.qdd'" in capsys.readouterr().err


SIGNALS_MODEL = """
[model]
name = "driven_double_pendulum"
gravity = [0.0, -9.81, 0.0]

[[body]]
name = "upper"
mass = 1.2
inertia = { principal = [0.036, 0.036, 0.036] }
points = { top = [0.0, 0.3, 0.0], tip = [0.0, -0.3, 0.0] }

[[body]]
name = "lower"
mass = 0.8
inertia = { principal = [0.02, 0.02, 0.02] }
points = { top = [0.0, 0.25, 0.0], tip = [0.0, -0.25, 0.0] }

[[joint]]
name = "shoulder"
type = "revolute"
parent = "ground"
child = "upper"
child_point = "top"
axis = [0.0, 0.0, 1.0]
actuator = { type = "sine", amplitude = 0.4, frequency = 1.5, phase = 0.3 }

[[joint]]
name = "elbow"
type = "revolute"
parent = "upper"
child = "lower"
parent_point = "tip"
child_point = "top"
axis = [0.0, 0.0, 1.0]
actuator = { type = "expression", expr = "0.2*exp(-t)*cos(3*t) + 0.05*t**2" }

[[load]]
name = "push"
type = "force"
body = "lower"
point = "tip"
frame = "global"
value = { type = "ramp", slope = [0.3, 0.1, 0.0] }

[initial]
q = { shoulder = 0.5, elbow = -0.3 }
qd = { shoulder = 0.0, elbow = 0.2 }

[solver]
t_end = 1.0
"""


def test_a_mechanisms_time_signals_are_written_in_c(folder, tmp_path):
    """A model file's sine, ramp and expression signals (Python TimeFunctions carrying
    their form) export as C and give the model's derivative and run; before, the export
    refused them ("a Python TimeFunction")."""
    from elements import export_mechanism_fmu
    from elements.files.modelfile import load_model
    (tmp_path / "signals.toml").write_text(SIGNALS_MODEL, encoding="utf-8")
    spec = load_model(str(tmp_path / "signals.toml"))
    mm = spec.mechanism.assemble()
    path = folder / "signals.fmu"
    info = export_mechanism_fmu(mm, path, q=spec.q0, qd=spec.qd0, stop_time=1.0)
    assert info.inputs == ()
    x0 = mm.initial_state(spec.q0, spec.qd0)
    case = Case("signals", mm.model, x0, 1.0, Baumgarte(10.0, 10.0), path, info,
                mm.state_atol(1.0))
    inst = Instance(path)
    rng = np.random.default_rng(3)
    for t, x in [(0.0, x0), *((rng.uniform(0, 1), x0 + rng.normal(scale=0.05,
                                                                  size=x0.size))
                              for _ in range(4))]:
        got = inst.derivative(t, x)
        want = case.model.rhs(t, x, stabilization=case.stab)
        assert np.abs(got - want).max() <= DERIV_RTOL * np.abs(want).max(), (t, got, want)
    ts = np.linspace(0.0, 1.0, 51)
    X = _reference(case, ts)
    err = run_errors(path, X, list(info.states), state_scale(X, case.nominal),
                     "ModelExchange", stop_time=1.0, output_interval=0.02)
    assert err.max() <= RUN_RTOL, dict(zip(info.states, err))


def _pushed_masses(force):
    """The README's two rigidly joined masses (1 and 3 kg) pushed by ``force``."""
    return assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, force)))


def _impulse(t, ts, vs):
    """The integral of np.interp(s, ts, vs) over 0 <= s <= t (trapezoids between the
    points: exact)."""
    grid = np.sort(np.concatenate([ts[(ts > 0) & (ts < t)], [0.0, t]]))
    f = np.interp(grid, ts, vs)
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(grid)))


def test_a_table_and_steps_are_written_as_data_and_met_as_time_events(folder):
    """A 302-point TimeFunction.table is written as a C array and a lookup (it was a
    nested ?: per point: 26 s to export 2001 points, and beyond clang's bracket depth);
    the sources' breaks are the FMU's: the co-simulation solver ends a step at each and
    starts the next after the jump, so its momenta equal the exact integral of the force
    to 1e-13 of their scale (the table: 9e-8 before; a step and a ramp written as
    expressions: 3.8e-9 before); model exchange announces them as time events (fmpy's
    CVode at 1e-14 then within 1e-8, as every run here)."""
    tt = np.r_[np.linspace(0.0, 1.0, 301), 1.3]
    vv = np.r_[np.sin(7 * tt[:-1]) + 0.3 * np.cos(23 * tt[:-1]), 2.0]
    step = TimeFunction.expression("2*Heaviside(t - 0.3137) + 3*(t - 0.71)*"
                                   "Heaviside(t - 0.71, 1)")
    cases = [("table", TimeFunction.table(tt, vv), lambda t: _impulse(t, tt, vv)),
             ("steps", step, lambda t: 2 * max(t - 0.3137, 0) + 1.5 * max(t - 0.71, 0) ** 2)]
    for name, force, exact in cases:
        path = folder / f"pushed_{name}.fmu"
        info = export_fmu(_pushed_masses(force), path, x0=np.zeros(2), stop_time=1.5)
        with zipfile.ZipFile(path) as z:
            text = z.read("sources/model.c").decode()
        assert ("bg_table(bg_table_0, 302, 1, 0, t" in text) == (name == "table")
        breaks = re.search(r"BG_NBREAKS = (\d+)", text).group(1)
        assert int(breaks) == (301 if name == "table" else 2)
        for kind, tol in (("CoSimulation", 1e-13), ("ModelExchange", 1e-8)):
            r = simulate_fmu(str(path), fmi_type=kind, output=list(info.states),
                             relative_tolerance=1e-14 if kind == "ModelExchange" else 1e-10,
                             output_interval=0.05, stop_time=1.5)
            keep = np.r_[True, np.diff(r["time"]) > 0]
            p = r[info.states[0]][keep] + r[info.states[1]][keep]
            want = np.array([exact(t) for t in r["time"][keep]])
            assert np.abs(p - want).max() <= tol * np.abs(want).max(), (name, kind)


def test_a_graphs_states_take_simulates_nominal_scales(folder):
    """Without ``nominals`` an FMU's states take the scales simulate takes its
    tolerances from (before: 1 for every state, so a tool's absolute tolerance on an RC
    circuit's charge of 5e-6 C was the relative tolerance itself, and fmpy's runs at
    1e-10 ended 1e-4 off): an RC circuit (1 kOhm, 1 uF) charged by a 5 V step at 2 ms
    follows C V (1 - exp(-(t - 2 ms)/RC)) to 1e-8 of C V in both of fmpy's runs."""
    from bondgraph import C as Cap, BondGraph, OneJunction, R, Se
    bg = BondGraph("rc")
    bg.add(Se("V", TimeFunction.expression("5*Heaviside(t - 0.002, 1)")),
           OneJunction("node"), Cap("cap", compliance=1e-6), R("res", 1e3))
    for tail, head in [("V", "node"), ("node", "cap"), ("node", "res")]:
        bg.connect(tail, head)
    path = folder / "rc_nominal.fmu"
    info = export_fmu(assemble(assign_causality(bg)), path, x0=np.zeros(1), stop_time=0.01)
    md = read_model_description(str(path))
    nominal = [v.nominal for v in md.modelVariables if v.name == "q_cap"][0]
    assert 5e-7 <= float(nominal) <= 5e-5
    for kind in ("ModelExchange", "CoSimulation"):
        r = simulate_fmu(str(path), fmi_type=kind, relative_tolerance=1e-10,
                         output=list(info.states), output_interval=5e-4, stop_time=0.01)
        t = r["time"]
        exact = 5e-6 * -np.expm1(-np.maximum(t - 0.002, 0.0) / 1e-3)
        assert np.abs(r["q_cap"] - exact).max() <= 1e-8 * 5e-6, kind


_UNKNOWN_JUMP = """
import numpy as np, fmpy, sys
from bondgraph import BondGraph, I, OneJunction, Se, TimeFunction, assemble, assign_causality
from bondgraph.fmu import export_fmu
bg = BondGraph("pushed")
bg.add(Se("F", TimeFunction.step(1e6, 0.5)), OneJunction("v"), I("m", 2.0))
bg.connect("F", "v"); bg.connect("v", "m")
path = sys.argv[1]
info = export_fmu(assemble(assign_causality(bg)), path, x0=np.zeros(1), stop_time=0.4)
try:
    fmpy.simulate_fmu(path, fmi_type="CoSimulation", relative_tolerance=1e-12,
                      output_interval=0.1, stop_time=2.0)
except Exception as exc:
    print("refused:", exc)
"""


def test_a_jump_the_fmu_does_not_know_ends_its_cosimulation_step_with_an_error(folder):
    """A step of 1e6 N at 0.5 s, after the export's stop time (so not among the FMU's
    breaks) and on a communication point: the co-simulation solver's last stage sees
    the value after the jump and its error control shrinks the step to its floor, then
    reports fmi2Error naming the time. Before, a step rejected there was stretched back
    to the communication point and tried again for ever (fmi2DoStep never returned)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _UNKNOWN_JUMP, str(folder / "jump.fmu")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "fmi2DoStep failed" in done.stdout
    assert "fell below its floor" in done.stderr + done.stdout


def test_breaks_on_and_near_communication_points_and_events(folder):
    """A step at 0.3 s met by a communication grid of 0.1 s (0.2 + 0.1 is one ulp past
    0.3): the co-simulation step that starts after the break and ends an ulp later is
    taken (it failed, 'below its floor'), p(1) = 1.4 to 1e-12; a table with two points 8
    ulps apart is one time event (fmpy's CVode refused two: 'tout too close to t0');
    model exchange's time event is the step's own time (an output time there, and one an
    ulp after it, made CVode refuse), announced from before it (not 1 ulp before: no tool
    integrates an ulp)."""
    T = 0.3137
    for force, want in ((TimeFunction.step(2.0, 0.3), 1.4),
                        (TimeFunction.table([0.0, 0.5, 0.5 + 8 * np.spacing(0.5), 1.5],
                                            [0.0, 0.0, 1.0, 1.0]), 0.5)):
        path = folder / "grid.fmu"
        info = export_fmu(_pushed_masses(force), path, x0=np.zeros(2), stop_time=1.0)
        for kind in ("CoSimulation", "ModelExchange"):
            r = simulate_fmu(str(path), fmi_type=kind, output=list(info.states),
                             output_interval=0.1, stop_time=1.0, relative_tolerance=1e-10)
            p = r[info.states[0]][-1] + r[info.states[1]][-1]
            assert abs(p - want) <= (1e-12 if kind == "CoSimulation" else 1e-7), (kind, p)
    path = folder / "event.fmu"
    export_fmu(_pushed_masses(TimeFunction.step(2.0, T)), path, x0=np.zeros(2))
    md = read_model_description(str(path))
    fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(path)),
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="e")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    for t, event in ((0.0, T), (T - 1e-9, T), (T - np.spacing(T), None), (T, None)):
        fmu.setTime(t)
        info = fmu.newDiscreteStates()
        assert (info[-1] if info[-2] else None) == event, (t, info)
    fmu.terminate()
    fmu.freeInstance()
