"""bondgraph._jacobian: the Jacobian an implicit solver gets (the exact T_X of a linear
model, else finite differences grouped by the structural sparsity), checked against
central differences of the model's own right-hand side."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import BDF, DOP853, LSODA, RK45, Radau
from scipy.optimize._numdiff import group_columns

from bondgraph import (
    Se, StateFunction, assemble, assign_causality, models, simulate,
)
from bondgraph._jacobian import (
    GroupedDifferences, Sparsity, jacobian_options, jacobian_sparsity, linear_jacobian,
)
from tests.helpers.rich_graphs import GRAPHS, nonlinear_chain

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
    jac, what, cost = jacobian_options(model, Radau, model.rhs, 0.0, x0)
    if name not in LINEAR:
        assert "not a linear model" in what
        sparsity = jacobian_sparsity(model)
        if sparsity.dense:
            assert jac == {} and what.startswith("dense finite differences")
            assert cost == model.n_states
        else:                # (small models: grouped differences, a dense matrix)
            assert isinstance(jac["jac"], GroupedDifferences)
            assert what.startswith("finite differences in")
            assert cost == sparsity.groups + 1 <= model.n_states
        return
    assert what.startswith("analytic") and cost == 0
    A = jac["jac"]
    for t in (0.0, 0.37, 2.1):
        x = rng.normal(size=model.n_states) * 3.0
        fd = central_differences(model, t, x)
        assert np.abs(fd - A).max() <= 1e-7 * max(np.abs(A).max(), 1.0), name


def test_what_each_method_gets():
    model = model_of("dc_motor")
    x0 = np.zeros(2)
    assert jacobian_options(model, RK45, model.rhs, 0.0, x0) == ({}, "none (explicit method)",
                                                                0)
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


# -- the structural sparsity -----------------------------------------------------------------

def grouped_differences(rhs, t, x, pattern):
    """d(dX/dt)/dX by central differences, the columns of a group (scipy's
    ``group_columns`` of ``pattern``, as Radau and BDF use it) perturbed together and
    each entry read off the rows ``pattern`` gives its column; step as
    :func:`central_differences`."""
    n = x.size
    groups = group_columns(pattern)
    h = 1e-4 * np.maximum(np.abs(x), 1.0)
    J = np.zeros((n, n))
    for g in range(groups.max() + 1 if n else 0):
        cols = np.flatnonzero(groups == g)
        e = np.zeros(n)
        e[cols] = h[cols]
        df = rhs(t, x + e) - rhs(t, x - e)
        for j in cols:
            rows = np.flatnonzero(pattern[:, j])
            J[rows, j] = df[rows] / (2 * h[j])
    return J


def mismatch(model, t, x, pattern):
    """The largest difference between grouped and dense central differences, each row
    relative to its largest dense entry (at least 1e-9 of the whole matrix's)."""
    dense = central_differences(model, t, x)
    grouped = grouped_differences(model.rhs, t, x, pattern)
    scale = np.maximum(np.abs(dense).max(axis=1, keepdims=True),
                       1e-9 * max(np.abs(dense).max(), 1e-300))
    return float((np.abs(grouped - dense) / scale).max()), dense


def _contact_ball():
    from elements import Inertia, Mechanism, RigidBody
    from elements.contact import ContactLaw, Plane, Sphere
    mech = Mechanism("ball", gravity=(0, 0, -9.81))
    mech.add_body(RigidBody("ball", 1.0, Inertia.principal(4e-3, 4e-3, 4e-3)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Sphere("s", "ball", 0.1), ContactLaw(stiffness=1e5, exponent=1.5,
                                                        damping=0.5, friction=0.3,
                                                        slip_velocity=1e-2))
    return mech.assemble()


def _mechanism_states(mm, **start):
    """States along a short run of a mechanism (consistent, in motion)."""
    res = mm.simulate((0.0, 0.2), method="DOP853", t_eval=[0.05, 0.12, 0.2], **start).raw
    return [res.x[:, k] for k in range(res.x.shape[1])]


def _sparsity_cases():
    """(name, model, states, at least how many structural zeros the pattern has)."""
    from elements import models as mechanisms
    rng = np.random.default_rng(11)
    chain = assemble(assign_causality(nonlinear_chain()))
    yield "nonlinear chain", chain, [rng.normal(size=chain.n_states) for _ in range(3)], 80
    diode = assemble(assign_causality(models.diode_rectifier(5.0, 100.0, 1e-9, 0.05, 10.0,
                                                             1e-4, 100.0)))
    yield "diode rectifier", diode, [np.array([v]) for v in (0.0, 2e-4, 4e-4)], 0
    three = mechanisms.three_body_prismatic().assemble()
    yield "three-body", three.model, _mechanism_states(three), 100
    ball = _contact_ball()
    states = _mechanism_states(ball, free={"ball": {"position": [0.0, 0.0, 0.099],
                                                    "velocity": [0.5, 0.0, -0.2]}})
    yield "ball on a floor (contact)", ball.model, states, 60


@pytest.mark.parametrize("case", list(_sparsity_cases()), ids=lambda c: c[0])
def test_grouped_differences_equal_dense_ones_and_a_dropped_entry_is_caught(case):
    """Finite differences grouped by the structural pattern (one evaluation pair per
    group) equal dense central differences (one pair per state) at several states of
    a nonlinear bond graph, a nonlinear algebraic loop, the three-body mechanism and a
    ball in contact with a floor: every entry the model makes nonzero is in the pattern,
    and columns grouped together do not share a row.

    Tolerance 1e-6 of each row's largest entry: both use the same step (1e-4 of each
    state's scale) and, where the pattern is right, the same evaluations on every row
    an entry is read from (the other columns of a group do not reach it), so they differ
    by the evaluations' rounding over the step: about 1e-12 relative, and up to 1e-8
    where a Newton loop (the diode's, converged to 1e-12) sits inside the evaluation.
    A pattern with one significant entry dropped misses that entry (and, grouped with
    another column of its row, pollutes that one): an error of the entry's size, at
    least 1e-3 of its row's largest here."""
    name, model, states, zeros = case
    sparsity = jacobian_sparsity(model)
    P = sparsity.pattern
    assert P.shape == (model.n_states, model.n_states)
    assert (~P).sum() >= zeros, (name, sparsity.describe())
    assert sparsity.groups == group_columns(P).max() + 1
    worst, dense = 0.0, None
    for k, x in enumerate(states):
        err, dense = mismatch(model, 0.01 * k, x, P)
        worst = max(worst, err)
    assert worst <= 1e-6, (name, worst)
    # a deliberately wrong pattern: the largest entry of the row with most significant
    # entries dropped (significant: 1e-3 of its row's largest and 1e-6 of the matrix's,
    # not the rounding in a row that vanishes, a fixed rotor's linear momentum)
    scale = np.abs(dense).max(axis=1, keepdims=True)
    sig = (np.abs(dense) > 1e-3 * scale) & (np.abs(dense) > 1e-6 * scale.max()) & P
    i = int(np.argmax(sig.sum(axis=1)))
    j = int(np.argmax(np.where(sig[i], np.abs(dense[i]), 0.0)))
    wrong = P.copy()
    wrong[i, j] = False
    assert mismatch(model, 0.01 * (len(states) - 1), states[-1], wrong)[0] > 1e-3, name
    # what the solver gets: forward differences of step sqrt(eps) max(|x|, atol) in
    # the pattern's groups, against the same with every state its own group; 1e-3 of
    # each row's largest entry: they differ by the rounding of the evaluations over the
    # step, sqrt(eps) relative, up to 1e-4 with a Newton loop (1e-12) inside
    n, t, x = model.n_states, 0.01 * (len(states) - 1), states[-1]
    grouped = GroupedDifferences(model.rhs, sparsity)(t, x)
    every = GroupedDifferences(model.rhs, Sparsity(np.ones((n, n), dtype=bool), n))(t, x)
    row = np.maximum(np.abs(every).max(axis=1, keepdims=True),
                     1e-9 * max(np.abs(every).max(), 1e-300))
    assert (np.abs(grouped - every) / row).max() <= 1e-3, name
    worst_wrong = GroupedDifferences(model.rhs, Sparsity(wrong, int(group_columns(
        wrong).max()) + 1))(t, x)
    assert (np.abs(worst_wrong - every) / row).max() > 1e-3, name


def test_the_pattern_of_a_chain_is_its_neighbours_and_radau_uses_it():
    """The nonlinear chain's pattern, read from its graph: a mass's momentum rate reads
    the masses and springs beside it, a spring's deflection rate the two masses it joins;
    Radau gets it (its 6 groups for 11 states: one evaluation per group and one at the
    state), and a run with it equals a dense-Jacobian run within the tolerances. A chain
    of 101 masses (201 states, 2 % nonzeros) gives Radau and BDF the pattern itself
    (scipy's grouped differences and sparse LU), LSODA the grouped differences."""
    model = assemble(assign_causality(nonlinear_chain()))
    sp = jacobian_sparsity(model)
    names = model.state_names
    reads = {names[i]: {names[j] for j in np.flatnonzero(sp.pattern[i])}
             for i in range(model.n_states)}
    assert reads["p_m2"] == {"p_m1", "p_m2", "p_m3", "q_k1", "q_k2"}
    assert reads["q_k2"] == {"p_m2", "p_m3"}
    assert reads["p_m0"] == {"p_m0", "p_m1", "q_k0"}
    assert sp.groups <= 6            # (scipy's greedy grouping; at least 3 are needed)
    jac, what, cost = jacobian_options(model, Radau, model.rhs, 0.0,
                                       np.zeros(model.n_states))
    assert cost == sp.groups + 1 and isinstance(jac["jac"], GroupedDifferences)
    assert what.startswith(f"finite differences in {sp.groups} groups")
    x0 = {n: 0.0 for n in names} | {"q_k0": 0.4, "p_m5": -0.3}
    run = simulate(model, (0.0, 2.0), x0, method="Radau", rtol=1e-9)
    # the reference: scipy's dense differences (what every nonlinear model got before)
    from bondgraph import simulation
    before = simulation.jacobian_options
    simulation.jacobian_options = lambda *a: ({}, "dense", model.n_states)
    try:
        dense = simulate(model, (0.0, 2.0), x0, method="Radau", rtol=1e-9)
    finally:
        simulation.jacobian_options = before
    assert run.success and dense.success
    assert run.diagnostics["jacobian"] == what
    assert run.diagnostics["evaluations_per_jacobian"] == sp.groups + 1
    assert dense.diagnostics["evaluations_per_jacobian"] == model.n_states
    # both within their tolerances of the same solution (rtol 1e-9 per step: 1e-6 of
    # the states' scale over the span is a wide bound on the global error)
    assert np.abs(run.x - dense.x).max() <= 1e-6 * np.abs(dense.x).max()
    long = assemble(assign_causality(nonlinear_chain(101)))
    big = jacobian_sparsity(long)
    assert long.n_states == 201 and big.pattern.sum() <= 0.1 * 201 ** 2
    for cls in (Radau, BDF):
        jac, what, cost = jacobian_options(long, cls, long.rhs, 0.0, np.zeros(201))
        assert (jac["jac_sparsity"].toarray() != 0).tolist() == big.pattern.tolist()
        assert cost == big.groups and "sparse LU" in what
    jac, what, cost = jacobian_options(long, LSODA, long.rhs, 0.0, np.zeros(201))
    assert isinstance(jac["jac"], GroupedDifferences) and cost == big.groups + 1
    groups_run = run.diagnostics["rhs_evaluations"] - run.nfev
    groups_dense = dense.diagnostics["rhs_evaluations"] - dense.nfev
    assert groups_run < groups_dense


def test_a_source_that_declares_no_state_makes_the_pattern_dense():
    """A state-dependent source whose element declares no state it reads: its reads are
    unknown, so every column is dense, and the description names the source."""
    # a chain with a force on mass 0 from a StateFunction that declares nothing
    bg = nonlinear_chain(3)
    bg.add(Se("push", StateFunction(lambda t, s: -s["q_k1"][0], ())))
    bg.connect("push", "v0")
    model = assemble(assign_causality(bg))
    sp = jacobian_sparsity(model)
    assert sp.dense and "push" in sp.describe() and "declare no state" in sp.describe()
    jac, what, cost = jacobian_options(model, Radau, model.rhs, 0.0,
                                       np.zeros(model.n_states))
    assert jac == {} and what.startswith("dense finite differences") and "push" in what
    assert cost == model.n_states
    # declared, the read column is in the rows the source reaches
    bg = nonlinear_chain(3)
    bg.add(Se("push", StateFunction(lambda t, s: -s["q_k1"][0], ("q_k1",))))
    bg.connect("push", "v0")
    model = assemble(assign_causality(bg))
    P = jacobian_sparsity(model).pattern
    i, j = model.state_slices["p_m0"].start, model.state_slices["q_k1"].start
    assert P[i, j] and not jacobian_sparsity(model).dense
