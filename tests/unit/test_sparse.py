"""The sparse evaluation (bondgraph.sparse) against the dense reduction and the direct
solve of every junction equation (tests/helpers/direct_solve.py), at random states.

The sparse path forms no J, T or H_4: it solves one sparse system for every bond value
and U_2 together. Agreement to 1e-12 of the largest term is the round-off of either
computation (the dense one was itself checked against the direct solve to that level)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import rich_graphs as rg
from direct_solve import direct_solution
from bondgraph import Baumgarte, assemble, assign_causality, simulate
from elements.models import chain, spring_pendulum, three_body_prismatic
from mechanisms import random_states, sparse_scara

GRAPHS = rg.GRAPHS

EQ14 = rg.EQ14


def _compare(model, t, x, stab):
    ev = model.evaluate(t, x, stabilization=stab)
    sv = model.sparse().evaluate(t, x, stab)
    assert sv is not None
    scale = 1.0 + np.abs(ev.bond_values).max(initial=0.0)
    assert np.max(np.abs(sv.xdot - ev.xdot)) <= 1e-12 * (1.0 + np.abs(ev.xdot).max()) * \
        max(1.0, np.abs(ev.T_X).max(initial=0.0))
    assert np.max(np.abs(sv.U2 - ev.U2), initial=0.0) <= 1e-12 * (1.0 + np.abs(ev.U2).max(
        initial=0.0)) * 10
    assert np.max(np.abs(sv.bond_values - ev.bond_values)) <= 1e-11 * scale
    assert np.array_equal(np.isnan(sv.phi), np.isnan(ev.phi))
    assert sv.branch == ev.branch
    return ev, sv


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_sparse_equals_dense_and_direct_solve(name):
    model = assemble(assign_causality(GRAPHS[name]()))
    sr = model.sparse()
    if name in EQ14:
        assert not sr.applicable and "Eq. (14)" in sr.reason
        return
    assert sr.applicable, sr.reason
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for _ in range(25):
        x = rng.normal(size=model.n_states)
        t = float(rng.uniform(0, 3))
        stab = Baumgarte(3.0, 4.0) if rng.uniform() < 0.5 else None
        _compare(model, t, x, stab)
        xdot, U2 = direct_solution(model, t, x, stabilization=stab)
        sv = model.sparse().evaluate(t, x, stab)
        assert np.max(np.abs(sv.xdot - xdot)) <= 1e-10 * (1.0 + np.abs(xdot).max())


def test_a_resistive_field_costs_terms_per_element_not_per_entry():
    """The resistors' field R is block diagonal by element: the single stage's system
    takes its structural non-zeros only. It took every entry of the dense n_L x n_L
    matrix as a term, and where the resistors' inputs are known values (an RLC ladder:
    currents and capacitor voltages) each of their rows summed n_L known terms at every
    evaluation: 6 559 terms for the 40-section ladder's 160 unknowns (23 us an
    evaluation, 346 us at 160 sections). Now at most two known terms a row, at every
    size; and the evaluation still equals the dense reduction's."""
    for n in (3, 12, 40):
        model = assemble(assign_causality(rg.rlc_ladder(n)))
        sr = model.sparse()
        assert sr.applicable and model.R.shape[0] == 2 * n
        rows = sr._M_known[0]
        assert np.bincount(rows).max() <= 2 and rows.size <= 6 * n
    rng = np.random.default_rng(5)
    for _ in range(10):
        _compare(model, float(rng.uniform(0, 1)), rng.normal(size=model.n_states), None)


MECHANISMS = {
    "three_body": lambda: (three_body_prismatic(), {}),
    "chain7": lambda: chain(7),
    "spring_pendulum": lambda: (spring_pendulum(1.0, 20.0, 0.8), {}),
    "scara": sparse_scara,
}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_sparse_equals_dense_for_mechanisms(name):
    """Random momenta (the bodies move fast in all directions) at random poses reached by
    random joint coordinates; with and without Baumgarte's terms."""
    mech, q0 = MECHANISMS[name]()
    mm = mech.assemble()
    model = mm.model
    assert model.sparse().applicable, model.sparse().reason
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for t, x, stab in random_states(mech, mm, rng, 8, Baumgarte(10.0, 10.0)):
        _compare(model, t, x, stab)


def test_simulation_sparse_equals_dense():
    """The same run with either reduction: the solver sees the same derivatives to
    rounding, so the trajectories agree far below the tolerance."""
    mech, q0 = chain(4)
    mm = mech.assemble()
    x0 = mm.initial_state(q0)
    stab = Baumgarte(10.0, 10.0)
    runs = [simulate(mm.model, (0.0, 0.5), x0, method="DOP853", rtol=1e-10, atol=1e-10,
                     stabilization=stab, t_eval=np.linspace(0, 0.5, 11), dense_reduction=d)
            for d in (False, True)]
    assert all(r.success for r in runs)
    assert np.max(np.abs(runs[0].x - runs[1].x)) < 1e-9
    for n in runs[0].constraint_forces:
        assert np.allclose(runs[0].constraint_forces[n], runs[1].constraint_forces[n],
                           rtol=1e-7, atol=1e-8)


def test_redundant_loop_uses_the_dense_path():
    """A four-bar's redundant constraints make the sparse system singular: the evaluation
    says so (None) and the simulation uses the dense reduction's minimum-norm solution."""
    from mechanisms import four_bar_start
    mm, x0 = four_bar_start()
    assert mm.model.sparse().evaluate(0.0, x0, None) is None
    r = mm.simulate((0.0, 0.1), x0=x0)
    assert r.raw.success and r.raw.rank_deficiency == 3


def test_public_splu_fallback_gives_the_same_numbers(monkeypatch):
    """The sparse path calls scipy's SuperLU binding directly (see _sparse_systems._splu);
    with the public splu instead the numbers are the same."""
    import bondgraph._sparse_systems as S
    mech, q0 = chain(3)
    mm = mech.assemble()
    x = mm.initial_state(q0, {"J2": 1.0})
    stab = Baumgarte(10.0, 10.0)
    direct = mm.model.sparse().evaluate(0.1, x, stab)
    monkeypatch.setattr(S, "_DIRECT", [False])
    public = mm.model.sparse().evaluate(0.1, x, stab)
    assert np.allclose(direct.xdot, public.xdot, rtol=1e-13, atol=1e-13)
    assert np.allclose(direct.U2, public.U2, rtol=1e-13, atol=1e-13)


def test_a_state_of_the_wrong_size_is_named():
    """The compiled stages index the state without bounds checks: a state of the wrong
    size is refused first, naming the valid size and the states."""
    from bondgraph import ModelError
    mm = three_body_prismatic().assemble()
    x0 = mm.initial_state({}, {})
    sr = mm.model.sparse()
    assert sr.evaluate(0.0, x0, None) is not None
    with pytest.raises(ModelError, match=rf"shape \(43,\); valid: \({x0.size},\) for states"):
        sr.evaluate(0.0, x0[:-1], None)
