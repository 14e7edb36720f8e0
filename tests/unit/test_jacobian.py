"""bondgraph._jacobian: the Jacobian an implicit solver gets (the exact T_X of a linear
model, else finite differences), checked against central differences of the model's
own right-hand side."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import BDF, DOP853, LSODA, RK45, Radau

from bondgraph import (
    StateFunction, assemble, assign_causality, models, simulate,
)
from bondgraph._jacobian import jacobian_options, linear_jacobian
from tests.helpers.rich_graphs import GRAPHS

#: the graphs of GRAPHS that are linear (dX/dt = A X + b(t), A constant) by construction:
#: no constraint, kinematic, work or Euler junction states, no state-dependent law
LINEAR = {"mass_spring_damper", "lever", "dc_motor", "algebraic_loop", "prescribed_flow"}


def central_differences(model, t, x):
    """d(dX/dt)/dX by central differences of ``model.rhs`` (step 1e-4 of each state's
    scale): exact for a linear model up to rounding, eps |f| / h ~ 1e-12 relative."""
    n = x.size
    J = np.empty((n, n))
    for j in range(n):
        h = 1e-4 * max(abs(x[j]), 1.0)
        e = np.zeros(n)
        e[j] = h
        J[:, j] = (model.rhs(t, x + e) - model.rhs(t, x - e)) / (2 * h)
    return J


def model_of(name):
    return assemble(assign_causality(GRAPHS[name]()))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_linear_models_get_their_exact_jacobian_and_the_others_differences(name):
    """For a linear graph the Jacobian handed over equals central differences at other
    states and times too (it is constant: no entry is missed anywhere); a graph with
    constraints, an EJS or other state dependence gets finite differences, and says
    why."""
    model = model_of(name)
    rng = np.random.default_rng(7)
    x0 = rng.normal(size=model.n_states)
    jac, what = jacobian_options(model, Radau, model.rhs, 0.0, x0)
    if name not in LINEAR:
        assert jac == {} and what.startswith("dense finite differences (not a linear model")
        return
    assert what.startswith("analytic")
    A = jac["jac"]
    for t in (0.0, 0.37, 2.1):
        x = rng.normal(size=model.n_states) * 3.0
        fd = central_differences(model, t, x)
        assert np.abs(fd - A).max() <= 1e-7 * max(np.abs(A).max(), 1.0), name


def test_what_each_method_gets():
    model = model_of("dc_motor")
    x0 = np.zeros(2)
    assert jacobian_options(model, RK45, model.rhs, 0.0, x0) == ({}, "none (explicit method)")
    assert jacobian_options(model, DOP853, model.rhs, 0.0, x0)[0] == {}
    for cls in (Radau, BDF):
        assert isinstance(jacobian_options(model, cls, model.rhs, 0.0, x0)[0]["jac"],
                          np.ndarray)
    f = jacobian_options(model, LSODA, model.rhs, 0.0, x0)[0]["jac"]  # LSODA: a callable
    assert np.array_equal(f(1.0, x0), model.evaluate(0.0, x0).T_X)


def test_the_reasons_for_finite_differences_are_named():
    pend = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    x = pend.initial_state({"p_m": [0.0, 0.0], "r": [0.6, -0.8]})
    A, why = linear_jacobian(pend, pend.rhs, 0.0, x)
    assert A is None and "constraint sources" in why and "kinematic states" in why
    spin = model_of("spinning_body")
    A, why = linear_jacobian(spin, spin.rhs, 0.0, np.ones(spin.n_states))
    assert A is None and "Euler junction structures" in why


def test_a_state_dependent_source_is_not_linear():
    from bondgraph import BondGraph, C, I, OneJunction, Se
    bg = BondGraph("feedback")
    bg.add(Se("u", StateFunction(lambda t, s: -3.0 * s["q_k"] ** 3, depends_on=("q_k",))),
           OneJunction("v"), I("m", 1.0), C("k", 4.0))
    for a, h in [("u", "v"), ("v", "m"), ("v", "k")]:
        bg.connect(a, h)
    model = assemble(assign_causality(bg))
    A, why = linear_jacobian(model, model.rhs, 0.0, np.array([0.1, 0.2]))
    assert A is None and "state-dependent source(s) u" in why


def test_the_linearity_guard_refuses_a_right_hand_side_that_is_not_linear():
    """The structural conditions hold, but the derivative handed in is not linear (as a
    future nonlinear law would make it): the guard along a trial direction refuses."""
    model = model_of("mass_spring_damper")
    x0 = np.array([0.3, -0.2])

    def bent(t, x):
        return model.rhs(t, x) + 1e-3 * x ** 2
    A, why = linear_jacobian(model, bent, 0.0, x0)
    assert A is None and "not linear along a trial direction" in why
    A, why = linear_jacobian(model, model.rhs, 0.0, x0)
    assert A is not None and why == ""


def test_implicit_runs_report_their_jacobian_and_every_evaluation():
    """A constraint model under Radau: finite differences, whose evaluations are in
    rhs_evaluations but not in nfev; a linear one: the analytic Jacobian, no Jacobian
    evaluations, and the two of the linearity guard."""
    pend = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    x = pend.initial_state({"p_m": [0.0, 0.0], "r": [0.6, -0.8]})
    r = simulate(pend, (0.0, 1.0), x, method="Radau")
    d = r.diagnostics
    assert r.success and d["method"] == "Radau" and d["jacobian"].startswith("dense")
    assert d["jacobian_evaluations"] >= 1
    assert d["rhs_evaluations"] >= r.nfev + pend.n_states * d["jacobian_evaluations"]
    msd = assemble(assign_causality(models.mass_spring_damper(1.0, 4.0, 0.1, 0.0)))
    r = simulate(msd, (0.0, 1.0), {"p_m": 0.0, "q_k": 0.1}, method="BDF")
    d = r.diagnostics
    assert d["jacobian"].startswith("analytic") and d["jacobian_evaluations"] == 0
    assert d["rhs_evaluations"] == r.nfev + 2


@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_implicit_methods_by_name_reach_the_closed_form(method):
    """m x'' + k x = 0 (k = 4 kg/s^2): x = 0.1 cos 2t. BDF and LSODA's global errors are a
    few times their local tolerance (rtol = 1e-10 here): 1e-8 absolute on 0.1 m."""
    model = assemble(assign_causality(models.mass_spring_damper(1.0, 4.0, 0.0, 0.0)))
    r = simulate(model, (0.0, 3.0), {"p_m": 0.0, "q_k": 0.1}, t_eval=[3.0], method=method,
                 rtol=1e-10, atol=1e-12)
    assert r.success
    assert r.state("q_k")[-1] == pytest.approx(0.1 * np.cos(6.0), abs=1e-8)


def test_time_varying_sources_keep_the_constant_jacobian():
    """A sine flow source enters b(t) only: the Jacobian is still T_X, and Radau at
    rtol = 1e-10 equals DOP853 at 1e-12 to 1e-8 of the states' scale (a few times
    Radau's tolerance: its global error stayed below its rtol on the DC motor)."""
    model = model_of("prescribed_flow")
    x0 = np.zeros(model.n_states)
    ref = simulate(model, (0.0, 4.0), x0, t_eval=np.linspace(0, 4, 41), method="DOP853",
                   rtol=1e-12, atol=1e-14)
    r = simulate(model, (0.0, 4.0), x0, t_eval=np.linspace(0, 4, 41), method="Radau",
                 rtol=1e-10, atol=1e-12)
    assert r.diagnostics["jacobian"].startswith("analytic")
    assert np.abs(r.x - ref.x).max() <= 1e-8 * max(np.abs(ref.x).max(), 1.0)
