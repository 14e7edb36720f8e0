"""Stiff solvers by name (issue 20, item 4): the stiff DC motor under Radau and BDF
against its closed form, their cost in evaluations against RK45's, the stiffness
warning of explicit runs (and its silence on runs that are not stiff), the three-body
mechanism under Radau against DOP853, and the method named in a model file."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sla

from bondgraph import IntegrationWarning, assemble, assign_causality, models, simulate
from bondgraph._jacobian import jacobian_sparsity

# the motor: electrical time constant La/Ra = 10 us; mechanical
# J / (b + k^2/Ra) = 0.91 s; eigenvalues -99 999 and -1.1 per second
R, L, K, J, B, V = 1.0, 1e-5, 0.1, 0.01, 0.001, 10.0


def motor():
    return assemble(assign_causality(models.dc_motor(V, R, L, K, J, B)))


def motor_exact(t):
    """(p_La, p_J) from rest: x' = A x + u, x(t) = A^-1 (e^(A t) - I) u (A invertible),
    A from the equations L di/dt = V - R i - k w, J dw/dt = k i - b w written in the
    momenta p_La = L i, p_J = J w."""
    A = np.array([[-R / L, -K / J], [K / L, -B / J]])
    u = np.array([V, 0.0])
    return np.array([np.linalg.solve(A, (sla.expm(A * ti) - np.eye(2)) @ u) for ti in t]).T


GRID = np.linspace(0.0, 2.0, 201)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_the_stiff_motor_equals_its_closed_form(method):
    """rtol = 1e-8 and atol = 1e-14 (p_La is at most 1e-4 V s: atol must sit below
    rtol |p_La| for rtol to govern it). The solvers keep each step's local error below
    rtol |x|; the system is stable (both eigenvalues negative), so local errors decay
    instead of adding up and the global error stays a small multiple of rtol: 10 rtol
    of each state's largest magnitude is allowed (seen: Radau 0.08 rtol, BDF 2 rtol).
    The Jacobian used is the model's exact T_X (the model is linear)."""
    rtol = 1e-8
    r = simulate(motor(), (0.0, 2.0), np.zeros(2), t_eval=GRID, method=method, rtol=rtol,
                 atol=1e-14)
    assert r.success and r.diagnostics["jacobian"].startswith("analytic")
    exact = motor_exact(GRID)
    err = np.abs(r.x - exact) / np.abs(exact).max(axis=1, keepdims=True)
    assert err.max() <= 10 * rtol, (method, err.max(axis=1))


def test_radau_takes_a_small_fraction_of_rk45s_evaluations():
    """RK45 over the first 1/40 of the span (0.05 s; past the 10 us transient its step is
    held at its stability limit, so its work grows in proportion to the span: the full
    2 s took it 422 990 evaluations) already takes more than 5 times the evaluations
    Radau needs for the whole 2 s, at the same default tolerances. Evaluation counts
    are deterministic; no time is measured here (benchmarks/stiff.py times them)."""
    model = motor()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        short = simulate(model, (0.0, 0.05), np.zeros(2), method="RK45")
    full = simulate(model, (0.0, 2.0), np.zeros(2), t_eval=GRID, method="Radau")
    n_rk, n_radau = short.diagnostics["rhs_evaluations"], full.diagnostics["rhs_evaluations"]
    assert full.success and n_radau * 5 < n_rk, (n_radau, n_rk)
    assert n_radau < 2000                              # (807 when written)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_an_explicit_run_of_the_stiff_motor_says_it_is_stiff(method):
    with pytest.warns(IntegrationWarning, match=r'looks stiff.*method="Radau"'):
        r = simulate(motor(), (0.0, 0.02), np.zeros(2), method=method)
    assert r.success and r.diagnostics["stiff"]
    assert "limited by the explicit method's stability" in r.diagnostics["stiffness"]


def test_the_stiffness_message_says_what_an_implicit_methods_jacobian_costs():
    """An implicit method is not always cheaper (on contact mechanisms Radau takes 1.4 to 3
    times DOP853's time: benchmarks/README.md), so the message of a nonlinear
    model gives the cost of its Jacobian instead of promising a saving: for a two-link
    pendulum whose second joint has a stiff damper (200 N m s/rad), the evaluations one
    Jacobian costs, which is what a Radau run then spends per Jacobian (its column
    groups; plus the unperturbed evaluation). The linear motor's message (an exact,
    constant Jacobian) still says an implicit method is far cheaper."""
    import re
    from elements import AxisDamper
    from elements import models as mechanisms
    mech = mechanisms.chain(2)[0]
    mech.joints["J2"].add_damper(AxisDamper(200.0))
    mm = mech.assemble()
    q0 = {"J1": 0.5, "J2": -0.3}
    with pytest.warns(IntegrationWarning, match="looks stiff"):
        r = mm.simulate((0.0, 0.2), q0, {}, method="DOP853", rtol=1e-6).raw
    text = r.diagnostics["stiffness"]
    assert "far cheaper" not in text and "compare both on a short span" in text
    cost = int(re.search(r"each Jacobian it forms costs (\d+) evaluations", text).group(1))
    radau = mm.simulate((0.0, 0.2), q0, {}, method="Radau", rtol=1e-6).raw
    assert radau.success and radau.diagnostics["jacobian_evaluations"] >= 1
    assert cost == radau.diagnostics["evaluations_per_jacobian"] - 1 == \
        jacobian_sparsity(mm.model).groups
    with pytest.warns(IntegrationWarning, match="looks stiff"):
        r = simulate(motor(), (0.0, 0.02), np.zeros(2), method="RK45")
    assert "an implicit method is far cheaper here" in r.diagnostics["stiffness"]
    assert "exact, constant Jacobian" in r.diagnostics["stiffness"]


@pytest.mark.parametrize("k, span, rtol", [
    (4.0, 30.0, 1e-8),          # ten periods, accurate
    (4.0, 30.0, 1e-3),          # loose: the steps grow toward the stability limit
    (1e8, 0.05, 1e-8),          # omega = 1e4 rad/s: 80 periods, hundreds of tiny steps
    (1e8, 0.05, 1e-4),
])
@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_ordinary_runs_are_not_called_stiff(k, span, rtol, method):
    """Small steps are not stiffness: an undamped oscillator's steps are set by accuracy
    (h |lambda| inside the stability region), however many periods it runs."""
    model = assemble(assign_causality(models.mass_spring_damper(1.0, k, 0.0, 0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IntegrationWarning)
        r = simulate(model, (0.0, span), {"p_m": 0.0, "q_k": 0.1}, method=method,
                     rtol=rtol, atol=rtol * 1e-3)
    assert r.success and not r.diagnostics["stiff"] and r.diagnostics["stiffness"] == ""
    if k > 1e3 and rtol == 1e-8:
        # hundreds of steps, each below a hundredth of the span (so each was tested)
        assert r.n_steps > 500 and 100 * (span / r.n_steps) < span


def test_the_three_body_mechanism_under_radau_equals_dop853():
    """0-1 s at rtol = atol = 1e-10 (Baumgarte 10/s): Radau's states and DOP853's both
    within 1e-8 of each state's scale (at least 1) of DOP853 at 1e-12; DOP853's run is
    not called stiff. Radau's cost, finite-difference Jacobians included, is in its
    diagnostics (benchmarks/stiff.py reports it: about 8 times DOP853's evaluations)."""
    from elements import models as mechanisms
    mm = mechanisms.three_body_prismatic().assemble()
    grid = np.linspace(0.0, 1.0, 101)
    ref = mm.simulate((0.0, 1.0), {}, {}, t_eval=grid, method="DOP853", rtol=1e-12,
                      atol=1e-12).raw
    scale = np.maximum(np.abs(ref.x).max(axis=1, keepdims=True), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IntegrationWarning)
        dop = mm.simulate((0.0, 1.0), {}, {}, t_eval=grid, method="DOP853", rtol=1e-10,
                          atol=1e-10).raw
    radau = mm.simulate((0.0, 1.0), {}, {}, t_eval=grid, method="Radau", rtol=1e-10,
                        atol=1e-10).raw
    assert dop.success and radau.success and not dop.diagnostics["stiff"]
    for r in (dop, radau):
        assert (np.abs(r.x - ref.x) / scale).max() <= 1e-8
    d = radau.diagnostics
    groups = jacobian_sparsity(mm.model).groups
    assert groups < mm.model.n_states         # (the work state's column is empty)
    assert d["jacobian"].startswith(f"finite differences in {groups} groups of columns")
    assert "not a linear model" in d["jacobian"]
    assert d["jacobian_evaluations"] >= 1
    assert d["rhs_evaluations"] >= radau.nfev + groups * d["jacobian_evaluations"]


def test_a_model_file_names_an_implicit_method(tmp_path):
    from elements.files.modelfile import ModelFileError, load_model
    text = open("examples/three_body_prismatic.toml").read()
    assert 'method = "DOP853"' in text
    (tmp_path / "m.toml").write_text(text.replace('method = "DOP853"', 'method = "BDF"'))
    spec = load_model(str(tmp_path / "m.toml"))
    assert spec.solver.method == "BDF"
    (tmp_path / "bad.toml").write_text(text.replace('method = "DOP853"',
                                                    'method = "radau"'))
    with pytest.raises(ModelFileError, match=r"'method': unknown value 'radau'; did you "
                                             r"mean 'Radau'\? valid: RK45, DOP853, Radau, "
                                             r"BDF, LSODA"):
        load_model(str(tmp_path / "bad.toml"))


def test_a_bad_method_name_lists_the_valid_ones():
    from bondgraph import ModelError
    with pytest.raises(ModelError, match="unknown method 'radau'; valid: RK45, DOP853, "
                                         "Radau, BDF, LSODA"):
        simulate(motor(), (0.0, 1.0), np.zeros(2), method="radau")
