"""Parameters as data (issue 18): every physical parameter of a built model has a name
and a value in one parameter set; a model with other values comes from the same causal
graph, without copying or changing anything."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from bondgraph import (
    BondGraph, I, ModelError, OneJunction, C, R, Se, assemble, assign_causality, simulate,
)
from elements import models as em

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _oscillator(declared: bool = True):
    """Mass m on a spring k with a damper b and a force F: parameters declared by name."""
    bg = BondGraph("osc")
    if declared:
        m = bg.add_parameter("m", 2.0, "kg", "mass", positive=True)
        k = bg.add_parameter("k", 8.0, "N/m", "stiffness", positive=True)
        b = bg.add_parameter("b", 0.5, "N s/m", "damping")
        F = bg.add_parameter("F", 1.0, "N", "force")
    else:
        m, k, b, F = 2.0, 8.0, 0.5, 1.0
    bg.add(Se("F", F), OneJunction("j"), I("m", m), C("k", k), R("b", b))
    for e in ("m", "k", "b"):
        bg.connect("j", e)
    bg.connect("F", "j")
    return bg


def test_declared_parameters_are_the_models_values():
    model = assemble(assign_causality(_oscillator()))
    assert dict(model.parameters) == {"m": 2.0, "k": 8.0, "b": 0.5, "F": 1.0}
    assert model.parameters.info("k").unit == "N/m"
    numbers = assemble(assign_causality(_oscillator(declared=False)))
    x = np.array([0.3, -0.1])
    assert np.array_equal(model.rhs(0.0, x), numbers.rhs(0.0, x))


def test_a_model_with_other_values_equals_one_built_with_them():
    model = assemble(assign_causality(_oscillator()))
    changed = model.with_parameters({"m": 3.0, "k": 5.0})
    assert changed.causal is model.causal                 # the same causal graph
    assert dict(model.parameters)["m"] == 2.0             # this one unchanged
    bg = _oscillator(declared=False)
    bg2 = BondGraph("osc")
    bg2.add(Se("F", 1.0), OneJunction("j"), I("m", 3.0), C("k", 5.0), R("b", 0.5))
    for e in ("m", "k", "b"):
        bg2.connect("j", e)
    bg2.connect("F", "j")
    ref = assemble(assign_causality(bg2))
    x0 = {"p_m": 0.2, "q_k": 0.1}
    a = simulate(changed, (0.0, 2.0), x0, rtol=1e-10, atol=1e-12)
    b = simulate(ref, (0.0, 2.0), x0, rtol=1e-10, atol=1e-12)
    assert np.array_equal(a.x, b.x)
    # simulate(parameters=...) hands the values to the same model
    c = simulate(model, (0.0, 2.0), x0, rtol=1e-10, atol=1e-12,
                 parameters={"m": 3.0, "k": 5.0})
    assert np.array_equal(c.x, b.x)
    # a whole vector, in the set's order
    v = model.parameters.values
    v[model.parameters.names.index("k")] = 5.0
    v[model.parameters.names.index("m")] = 3.0
    assert np.array_equal(model.with_parameters(v).rhs(0.0, np.array([0.2, 0.1])),
                          ref.rhs(0.0, np.array([0.2, 0.1])))
    assert bg is not None


@pytest.mark.parametrize("values, words", [
    ({"kk": 1.0}, "no parameter 'kk'; did you mean 'k'.*parameters: m, k, b, F"),
    ({"m": -1.0}, "parameter m: must be positive"),
    ({"k": np.nan}, "parameter k: must be finite"),
    ({"b": -0.5}, "element 'b': parameter 'resistance' must be non-negative.*b = -0.5"),
])
def test_bad_values_are_named(values, words):
    model = assemble(assign_causality(_oscillator()))
    with pytest.raises(ModelError, match=words):
        model.with_parameters(values)


def test_a_mechanism_names_every_physical_parameter():
    mm = em.three_body_prismatic().assemble()
    p = mm.parameters
    for name in ("gravity.z", "m2.mass", "m2.Ixx", "m2.Iyz", "rotor.Izz", "J3.spring.k",
                 "J3.spring.rest", "J1.actuator"):
        assert name in p
    assert p["gravity.z"] == -9.8 and p["J3.spring.k"] == 500.0 and p["J1.actuator"] == 0.1
    assert p.info("J3.spring.k").unit == "N/m" and p.info("J1.actuator").unit == "N m"
    assert mm.mass("m2") == 1.0 and np.allclose(mm.gravity, [0, 0, -9.8])


def test_mechanism_values_equal_a_mechanism_built_with_them():
    """The same motion, bit for bit, as a mechanism whose objects hold the values."""
    base = em.three_body_prismatic().assemble()
    changed = base.with_parameters({"m2.mass": 1.5, "J3.spring.k": 700.0,
                                    "gravity.z": -9.0, "m1.Ixx": 6e-4})
    mech = em.three_body_prismatic()
    mech.gravity = np.array([0.0, 0.0, -9.0])
    mech.bodies["m2"].mass = 1.5
    mech.joints["J3"].springs[0] = type(mech.joints["J3"].springs[0])(700.0, 0.0)
    from elements import Inertia
    J = mech.bodies["m1"].inertia.matrix.copy()
    J[0, 0] = 6e-4
    mech.bodies["m1"].inertia = Inertia.about_center(J)
    ref = mech.assemble()
    t = np.linspace(0.0, 0.5, 11)
    a, b = changed.simulate((0.0, 0.5), t_eval=t), ref.simulate((0.0, 0.5), t_eval=t)
    assert np.array_equal(a.raw.x, b.raw.x)
    assert np.array_equal(a.joint("J3").force, b.joint("J3").force)
    assert np.array_equal(a.energy.balance, b.energy.balance)
    # MechanismModel.simulate(parameters=...) is the same run
    c = base.simulate((0.0, 0.5), t_eval=t, parameters={
        "m2.mass": 1.5, "J3.spring.k": 700.0, "gravity.z": -9.0, "m1.Ixx": 6e-4})
    assert np.array_equal(c.raw.x, b.raw.x)
    assert base.mass("m2") == 1.0                              # unchanged


@pytest.mark.parametrize("method", ["auto", "bond_graph"])
def test_dynamics_functions_follow_the_models_values(method):
    """direct_dynamics, inverse_dynamics and prescribed_motion of a model made by
    with_parameters use its values (before, the bond graph path rebuilt the driven model
    from the mechanism's own values, and a model derived from one that had been used
    kept its parent's): the compound pendulum's closed form with the new mass, length-
    independent gravity and a new damper-free value, called on the parent first."""
    from elements import direct_dynamics, inverse_dynamics, prescribed_motion
    m, l, g = 2.0, 1.5, 9.81
    parent = em.compound_pendulum(m, l, g).assemble()
    q, qd = {"J1": 0.7}, {"J1": 0.3}
    direct_dynamics(parent, q, qd, {"J1": 0.0}, method=method)     # (caches the parent's)
    inverse_dynamics(parent, q, qd, {"J1": 0.0}, method=method)
    child = parent.with_parameters({"gravity.y": -3.0, "rod.mass": 4.0})   # (-y: down)
    inertia = child.inertia("rod")[0, 0] + 4.0 * (l / 2) ** 2    # (about the pivot)
    want = (1.0 - 0.5 * 4.0 * 3.0 * l * np.sin(0.7)) / inertia
    got = direct_dynamics(child, q, qd, {"J1": 1.0}, method=method)["J1"]
    assert got == pytest.approx(want, rel=1e-10)
    assert inverse_dynamics(child, q, qd, {"J1": want}, method=method)["J1"] == \
        pytest.approx(1.0, rel=1e-10)
    # the parent keeps its own values
    assert direct_dynamics(parent, q, qd, {"J1": 1.0}, method=method)["J1"] != \
        pytest.approx(want, rel=1e-3)
    if method == "auto":               # (prescribed motion has one way of evaluating)
        hold = prescribed_motion(child, {"J1": (lambda t: np.pi / 2, lambda t: 0.0,
                                                lambda t: 0.0)}, (0.0, 0.1),
                                 t_eval=[0.0, 0.1])
        assert hold.efforts["J1"][-1] == pytest.approx(0.5 * 4.0 * 3.0 * l, rel=1e-8)


def test_an_invalid_inertia_from_parameters_is_named():
    mm = em.three_body_prismatic().assemble()
    with pytest.raises(ModelError, match="body 'm2': its inertia parameters give an "
                                         "invalid inertia.*triangle"):
        mm.with_parameters({"m2.Izz": 1.0})


def test_with_parameters_copies_and_changes_nothing(monkeypatch):
    """No deep copy of the model, and the built model's graph, elements and values stay
    as they were (the study's runs used to copy and rewrite them)."""
    mm = em.three_body_prismatic().assemble()
    elements_before = {n: (type(e), dict(e.parameters())) for n, e in
                       mm.graph.elements.items()}
    values_before = dict(mm.parameters)
    copies = []
    real = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: copies.append(a[0]) or real(*a, **k))
    for k in (300.0, 600.0, 900.0):
        mm.with_parameters({"J3.spring.k": k}).simulate((0.0, 0.05))
    assert not copies
    assert dict(mm.parameters) == values_before
    assert all(type(e) is elements_before[n][0] and
               str(e.parameters()) == str(elements_before[n][1])
               for n, e in mm.graph.elements.items())


def test_a_built_model_runs_in_a_new_process():
    """Shipped built (cloudpickle, as to a study's workers) into a process that never
    built a body: the compiled kinematic rates load there too."""
    cloudpickle = pytest.importorskip("cloudpickle")
    mm = em.three_body_prismatic().assemble()
    ref = mm.simulate((0.0, 0.2), t_eval=[0.0, 0.2])
    blob = cloudpickle.dumps(mm)
    code = ("import sys, pickle, numpy as np\n"
            "mm = pickle.loads(sys.stdin.buffer.read())\n"
            "r = mm.simulate((0.0, 0.2), t_eval=[0.0, 0.2])\n"
            "sys.stdout.write(repr(r.raw.x[:, -1].tolist()))\n")
    p = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    assert np.array_equal(np.array(eval(p.stdout.decode())), ref.raw.x[:, -1])
    assert pickle is not None
