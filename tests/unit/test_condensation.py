"""The static condensation (bondgraph.condensation) and the sparse evaluation built on it.

condense() is checked on its own against numpy's dense solve of hand-made systems (the
algebra: S, G, H, C and the extended sources, assembled densely here); the sparse
evaluation with the condensation against the one without it, at random states of every
graph and mechanism of the other sparse tests. Both compute the same solution of the
same system in a different order, so they agree to the systems' rounding: 1e-12 of the
largest value, as the sparse/dense comparison (tests/unit/test_sparse.py).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import rich_graphs as rg
from bondgraph import Baumgarte, assemble, assign_causality
from bondgraph.condensation import MAX_BLOCK_CONDITION, condense
from bondgraph.sparse import SparseReduction, _Condensed
from elements.models import chain, spring_pendulum, three_body_prismatic
from mechanisms import random_states, random_unit_state, sparse_scara


def _dense(n, rows, cols, src, coef, sources):
    A = np.zeros((n, n))
    np.add.at(A, (rows, cols), coef * sources[src])
    return A


def _solve_condensed(c, sources, b):
    """y from the condensation's arrays, densely (an independent assembly)."""
    ext = c.extend(sources)
    nE, nK = c.rE.size, c.rK.size
    S = _dense(nK, c.S_row, c.S_col, c.S_src, c.S_coef, ext)
    C = np.zeros((nE, nE))
    np.add.at(C, (c.C_row, c.C_col), c.C_val)
    G = np.zeros((nK, nE))
    np.add.at(G, (c.G_row, c.G_col), c.G_coef * sources[c.G_src])
    H = np.zeros((nE, nK))
    np.add.at(H, (c.H_row, c.H_col), c.H_coef * sources[c.H_src])
    yK = np.linalg.solve(S, b[c.rK] - G @ b[c.rE]) if nK else np.zeros(0)
    y = np.empty(c.n)
    y[c.cK] = yK
    y[c.cE] = C @ b[c.rE] - H @ yK
    return y


def _random_system(rng, n, p_var):
    """A random sparse square system: a constant diagonal (so that it is regular) and
    off-diagonal entries, a fraction p_var of them varying (sources 1..m), the others
    on the constant source 0 (value 1) or on constant sources with values, and entries
    whose two constant terms cancel (stored zeros: they must not join two blocks)."""
    rows, cols, src, coef = [], [], [], []
    m = 12
    for i in range(n):
        rows.append(i); cols.append(i); src.append(0); coef.append(rng.uniform(2, 4))
    for _ in range(2 * n):
        i, j = rng.integers(n, size=2)
        rows.append(i); cols.append(j)
        src.append(int(rng.integers(1, m + 1)) if rng.uniform() < p_var else
                   int(rng.integers(m + 1, m + 3)))
        coef.append(rng.uniform(-1, 1))
    for _ in range(n // 3):         # constant entries whose terms cancel: zero, no coupling
        i, j = rng.integers(n, size=2)
        a = rng.uniform(0.5, 1.0)
        rows += [i, i]; cols += [j, j]; src += [0, 0]; coef += [a, -a]
    constants = np.full(m + 3, np.nan)
    constants[0] = 1.0
    constants[m + 1:] = [0.5, -2.0]
    return (np.array(rows), np.array(cols), np.array(src), np.array(coef)), constants


@pytest.mark.parametrize("seed", range(8))
def test_condensed_solve_equals_dense_solve(seed):
    rng = np.random.default_rng(seed)
    n = 30
    (rows, cols, src, coef), constants = _random_system(rng, n, p_var=0.3)
    c = condense((n, n), rows, cols, src, coef, constants, one=0)
    assert c is not None and 0 < c.rE.size < n
    for _ in range(5):
        sources = np.where(np.isnan(constants), rng.uniform(-1, 1, constants.size),
                           constants)
        A = _dense(n, rows, cols, src, coef, sources)
        b = rng.normal(size=n)
        ref = np.linalg.solve(A, b)
        y = _solve_condensed(c, sources, b)
        assert np.abs(y - ref).max() <= 1e-12 * np.abs(ref).max() * np.linalg.cond(A)


def test_nothing_constant_is_none_and_ill_conditioned_blocks_stay():
    """Every column varying: nothing to eliminate. A constant 2 x 2 block with condition
    number 4e12 (beyond MAX_BLOCK_CONDITION) is not eliminated; a well-conditioned one
    beside it is."""
    rows, cols = np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0])
    assert condense((2, 2), rows, cols, np.array([1, 2, 3, 4]), np.ones(4),
                    np.array([1.0, np.nan, np.nan, np.nan, np.nan]), one=0) is None
    eps = 1e-12
    # unknowns 0, 1: [[1, 1], [1, 1 + eps]] (constant); 2, 3: [[2, 1], [1, 3]] (constant);
    # unknown 4 (its column varying) couples to both; row 4 reads unknowns 0 and 2
    entries = [(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0 + eps),
               (2, 2, 2.0), (2, 3, 1.0), (3, 2, 1.0), (3, 3, 3.0), (4, 0, 1.0), (4, 2, 1.0)]
    r = [e[0] for e in entries] + [4, 0, 2]
    cl = [e[1] for e in entries] + [4, 4, 4]
    sr = [0] * len(entries) + [1, 1, 1]
    cf = [e[2] for e in entries] + [5.0, 1.0, 1.0]
    constants = np.array([1.0, np.nan])
    c = condense((5, 5), np.array(r), np.array(cl), np.array(sr), np.array(cf),
                 constants, one=0)
    assert np.linalg.cond([[1, 1], [1, 1 + eps]]) > MAX_BLOCK_CONDITION
    assert sorted(c.cE) == [2, 3] and sorted(c.cK) == [0, 1, 4]
    sources = np.array([1.0, 0.7])
    A = _dense(5, np.array(r), np.array(cl), np.array(sr), np.array(cf), sources)
    b = np.arange(1.0, 6.0)
    assert np.allclose(_solve_condensed(c, sources, b), np.linalg.solve(A, b),
                       rtol=0, atol=1e-3)  # the system's own conditioning is 1e12


MODELS = {
    **{f"graph:{k}": (lambda k=k: (assemble(assign_causality(rg.GRAPHS[k]())), None))
       for k in sorted(rg.GRAPHS) if k not in rg.EQ14},
    "chain1": lambda: _mech(*chain(1)),
    "chain6": lambda: _mech(*chain(6)),
    "three_body": lambda: _mech(three_body_prismatic(), {}),
    "spring_pendulum": lambda: _mech(spring_pendulum(1.0, 20.0, 0.8), {}),
    "scara": lambda: _mech(*sparse_scara()),
}


def _mech(mech, q0):
    mm = mech.assemble()
    return mm.model, (mm, q0, [n for n, j in mech.joints.items() if j.n_free == 1])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_evaluation_with_and_without_condensation(name):
    model, mech = MODELS[name]()
    on, off = model.sparse(), SparseReduction(model, condensed=False)
    assert on.applicable and off.applicable
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    condensed = [p for p in (getattr(on, "_B", None), getattr(on, "_M", None))
                 if isinstance(p, _Condensed)]
    if name.startswith("graph:"):
        states = [rng.normal(size=model.n_states) for _ in range(10)]
    else:
        assert condensed and all(p.n_K < 0.3 * p.shape[0] for p in condensed)
        mm, q0, coords = mech
        states = [mm.initial_state(q0, {})] + [
            mm.initial_state({c: float(rng.uniform(-1, 1)) for c in coords},
                             {c: float(rng.uniform(-2, 2)) for c in coords})
            for _ in range(9)]
    for k, x in enumerate(states):
        t = float(rng.uniform(0, 2))
        stab = Baumgarte(10.0, 10.0) if k % 2 else None
        a, b = on.evaluate(t, x, stab), off.evaluate(t, x, stab)
        assert a is not None and b is not None
        for f in ("xdot", "U2", "bond_values"):
            va, vb = getattr(a, f), getattr(b, f)
            assert np.abs(va - vb).max(initial=0.0) <= 1e-12 * (1.0 + np.abs(vb).max(
                initial=0.0)), f


# -- the one-call stages (SparseReduction._evaluate_fused) ---------------------------------

def _driven_scara():
    """scara with both joints driven by flow sources (time functions with rates: dU_1/dt
    enters the constraint rows) and a spring-damper pendulum: R and time-dependent
    sources in the fused path."""
    from bondgraph import Sf, TimeFunction
    mech, _ = sparse_scara()
    drives = {j: Sf(f"{j}.drive", TimeFunction(lambda t, k=k: 0.3 * np.sin(2 * t + k),
                                                lambda t, k=k: 0.6 * np.cos(2 * t + k)))
              for k, j in enumerate(n for n, jt in mech.joints.items() if jt.n_free == 1)}
    return mech.assemble(drives=drives).model


def _without_rate_terms():
    mm = three_body_prismatic().assemble()
    return assemble(assign_causality(mm.mechanism.build()), omit_rate_terms=True)


FUSED = {
    "chain6": lambda: chain(6)[0].assemble().model,
    "three_body": lambda: three_body_prismatic().assemble().model,
    "spring_pendulum": lambda: spring_pendulum(1.0, 20.0, 0.8).assemble().model,
    "driven_scara": _driven_scara,
    "without_rate_terms": _without_rate_terms,
}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_one_call_stages_equal_the_steps(name, monkeypatch):
    """The evaluation in two compiled calls against the same evaluation step by step
    (compiled stages, numpy glue) and against the uncondensed numpy evaluation, at random
    states (unit quaternions, random momenta), with and without Baumgarte's terms. The
    sums are the same, but each reduction takes a new pivot order where its current
    one fails (at its own evaluations), so two of them can factor one system with
    different pivots: 1e-11 of the largest value (measured against the uncondensed
    numpy path: at most 1.4e-12 for the three-body graph without rate terms, 7e-14 for
    the others)."""
    pytest.importorskip("numba")
    from bondgraph import fastlu
    import bondgraph.sparse as S
    monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    model = FUSED[name]()
    fused = SparseReduction(model)
    steps = SparseReduction(model)
    plain = SparseReduction(model, condensed=False)
    kern = fastlu._sparse_kernels()
    calls = {"first": 0, "xdot alone": 0}
    first, second = kern._first, kern._second

    def counted(*a):
        calls["first"] += 1
        return first(*a)

    def counted2(*a):
        calls["xdot alone"] += not a[-1]          # (full=False)
        return second(*a)

    monkeypatch.setattr(kern, "_first", counted)
    monkeypatch.setattr(kern, "_second", counted2)
    original = S.SparseReduction._evaluate_fused
    monkeypatch.setattr(S.SparseReduction, "_evaluate_fused",
                        lambda self, *a, **k: original(self, *a, **k) if self is fused else None)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for k in range(12):
        x = random_unit_state(model, rng)
        t = float(rng.uniform(0, 2))
        stab = Baumgarte(10.0, 7.0) if k % 2 else None
        a, b, c = (r.evaluate(t, x, stab) for r in (fused, steps, plain))
        assert a is not None and b is not None and c is not None
        for f in ("xdot", "U2", "bond_values", "constraint_flow"):
            va, vb, vc = getattr(a, f), getattr(b, f), getattr(c, f)
            scale = 1.0 + np.abs(vc).max(initial=0.0)
            assert np.abs(va - vb).max(initial=0.0) <= 1e-11 * scale, f
            assert np.abs(va - vc).max(initial=0.0) <= 1e-11 * scale, f
        # dX/dt alone (the acceleration stage cut down to what it reads): the same sums
        # as the one-call evaluation's (the pivot order may change between two calls)
        d = fused.derivative(t, x, stab)
        scale = 1.0 + np.abs(c.xdot).max()
        assert d.shape == c.xdot.shape
        assert np.abs(d - c.xdot).max() <= 1e-11 * scale
        assert np.array_equal(np.isnan(a.phi), np.isnan(c.phi))
    assert calls["first"] >= 10          # all but the first (SuperLU's pivots) evaluations
    assert calls["xdot alone"] >= 10     # derivative() took its cut-down stage
    # both velocity stages are covered: on its own system V (U_2 = 0, condensed
    # entirely: no solve) where V condenses entirely, else with B's factors
    own = fused._V is not None
    assert own == (name in ("chain6", "driven_scara"))
    assert not own or fused._V.n_K == 0


def test_a_failed_pivot_order_is_replaced_within_the_one_call_path(monkeypatch):
    """Over a swinging chain's run the compiled LU's pivot order fails now and then; the
    one-call path then takes SuperLU's order and repeats the stage (no general path):
    the run equals the one that takes the general path at every evaluation. (Without
    the one-call path's refined solves, which keep such orders in use: with them, this
    run has no failed order at all; test_structured_evaluation.py covers them.)"""
    pytest.importorskip("numba")
    import bondgraph.sparse as S
    from bondgraph import fastlu, simulate
    monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    monkeypatch.setattr(fastlu, "REFINE_THRESHOLD", fastlu.PIVOT_THRESHOLD)
    monkeypatch.setattr(fastlu, "WEAK_THRESHOLD", fastlu.PIVOT_THRESHOLD)
    runs, calls = [], {"inside": False, "retries": 0, "general": 0}
    import bondgraph._sparse_systems as SS
    superlu, one_call = SS._superlu_factor, S.SparseReduction._evaluate_fused

    def counted(pattern, sources, ws):
        calls["retries"] += calls["inside"]
        return superlu(pattern, sources, ws)

    def watched(self, *a, **k):
        calls["inside"] = True
        try:
            out = one_call(self, *a, **k)
        finally:
            calls["inside"] = False
        calls["general"] += out is None
        return out

    for fused in (True, False):
        mech, q0 = chain(8)
        mm = mech.assemble()
        x0 = mm.initial_state(q0, {"J1": 2.0})
        with monkeypatch.context() as mp:
            if fused:
                mp.setattr(SS, "_superlu_factor", counted)
                mp.setattr(S.SparseReduction, "_evaluate_fused", watched)
            else:
                mp.setattr(S.SparseReduction, "_evaluate_fused", lambda self, *a, **k: None)
            r = simulate(mm.model, (0.0, 1.0), x0, method="DOP853", rtol=1e-10,
                         atol=1e-10, stabilization=Baumgarte(10.0, 10.0),
                         t_eval=np.linspace(0.0, 1.0, 11))
        assert r.success
        runs.append(r.x)
    # measured: 6 new orders taken in the one-call path; 2 evaluations on the general
    # path (the first, before any order, and one within SETUP_INTERVAL of a new order)
    assert calls["retries"] >= 1 and calls["general"] <= 3
    assert np.max(np.abs(runs[0] - runs[1])) <= 1e-9


def test_derivative_with_kinematic_rates_from_the_acceleration_stage():
    """Where the velocity stage's kinematic flows do not hold (a kinematic flow that
    depends on D, E or U_2), derivative() takes them from its cut-down acceleration
    stage. Forced here on chain-6, whose flows do hold: the same dX/dt either way."""
    pytest.importorskip("numba")
    model = chain(6)[0].assemble().model
    plain = SparseReduction(model)
    forced = SparseReduction(model)
    forced._kin_final = False             # (before its plans are made)
    rng = np.random.default_rng(4)
    x = random_unit_state(model, rng)
    stab = Baumgarte(10.0, 7.0)
    for _ in range(3):                    # (the first factorisation is SuperLU's)
        a, b = plain.derivative(0.4, x, stab), forced.derivative(0.4, x, stab)
    assert forced._w2_kin.size == model._kin_rows.size and plain._w2_kin.size == 0
    assert np.abs(a - b).max() <= 1e-11 * (1.0 + np.abs(a).max())


def test_the_one_call_path_reads_the_lu_checks_live(monkeypatch):
    """fastlu.SINGULAR_RATIO changed after the first evaluations: the one-call path's
    LU applies the new value (here one that refuses every factorisation), and the
    evaluation still comes, from the general path."""
    pytest.importorskip("numba")
    from bondgraph import fastlu
    from bondgraph.element import StateView
    mech = chain(3)[0]
    mm = mech.assemble()
    model = mm.model
    sr = SparseReduction(model)
    _, x, _ = random_states(mech, mm, np.random.default_rng(2), 1, None)[0]
    stab = Baumgarte(10.0, 10.0)
    for _ in range(3):
        ref = sr.derivative(0.1, x, stab)
    view = StateView(x, model.state_slices)
    ws = sr._default_workspace()          # (the one derivative() used: its pivot order)
    assert sr._evaluate_fused(0.1, x, view, {}, stab, ws, full=False) is not None
    # a copy made after use (cloudpickle ships a model to a study's workers) reads
    # them live too (its first factorisation, in a new workspace, is SuperLU's)
    cloudpickle = pytest.importorskip("cloudpickle")
    copied = cloudpickle.loads(cloudpickle.dumps(sr))
    for _ in range(2):
        copied.derivative(0.1, x, stab)
    ws_copy = copied._default_workspace()
    assert copied._evaluate_fused(0.1, x, view, {}, stab, ws_copy, full=False) is not None
    monkeypatch.setattr(fastlu, "SINGULAR_RATIO", 0.999999)
    assert sr._evaluate_fused(0.1, x, view, {}, stab, ws, full=False) is None
    assert copied._evaluate_fused(0.1, x, view, {}, stab, ws_copy, full=False) is None
    d = sr.derivative(0.1, x, stab)
    assert np.abs(d - ref).max() <= 1e-11 * (1.0 + np.abs(ref).max())


def test_one_call_sources_are_per_thread_and_reentrant(monkeypatch):
    """The one-call path writes the sources' varying entries into a buffer of the
    calling thread, taken out while in use. Two threads evaluating one model at two
    states, and an evaluation nested inside another (from an element function between
    the two compiled calls), each get the values of their own state: exactly those of
    the same evaluations made one at a time."""
    pytest.importorskip("numba")
    import sys
    import threading

    mech = chain(4)[0]
    mm = mech.assemble()
    model = mm.model
    sr = SparseReduction(model)
    rng = np.random.default_rng(7)
    states = [s[1] for s in random_states(mech, mm, rng, 2, None)]
    stab = Baumgarte(10.0, 10.0)
    for _ in range(3):                    # (pivot orders set)
        ref = [sr.derivative(0.2, x, stab) for x in states]
    assert sr._src_bufs                   # the one-call path is used
    results: dict[int, list] = {0: [], 1: []}

    def work(i):
        for _ in range(300):
            results[i].append(sr.derivative(0.2, states[i], stab))

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)           # (switch threads as often as possible)
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    # (equal to rounding: a state whose pivots fail under the other's order makes the
    # LU take a new one, so two evaluations of a state may use different pivots;
    # another state's sources would be off by far more)
    def close(a, b):
        return np.abs(a - b).max() <= 1e-12 * (1.0 + np.abs(b).max())
    for i in (0, 1):
        assert len(results[i]) == 300 and all(close(r, ref[i]) for r in results[i])

    # nested: the first state's evaluation computes the second's inside its own
    fns = model.functions
    original = fns.kinematic_rates
    nested = []

    def inner(x, flows):
        if not nested:
            nested.append(None)
            nested[0] = sr.derivative(0.2, states[1], stab)
        return original(x, flows)

    monkeypatch.setattr(fns, "kinematic_rates", inner)
    outer = sr.derivative(0.2, states[0], stab)
    assert close(outer, ref[0]) and close(nested[0], ref[1])


def _motor_chain():
    """chain-3 with a DC motor (Se, R, I, GY) on its first joint: a gyrator couples the
    effort and flow equations (the electrical current's flow is the joint's torque)."""
    from bondgraph import GY, R, I, OneJunction, Se
    mech, _ = chain(3)

    def motor(bg):
        bg.add(Se("motor.V", 6.0), OneJunction("motor.i"), R("motor.Ra", 2.0),
               I("motor.La", 0.05), GY("motor.k", 0.3))
        for a, b in [("motor.V", "motor.i"), ("motor.i", "motor.Ra"),
                     ("motor.i", "motor.La"), ("motor.i", "motor.k"),
                     ("motor.k", f"{next(iter(mech.joints))}.axis")]:
            bg.connect(a, b)

    mech.add_subsystem("motor", motor)
    return mech.assemble().model


@pytest.mark.parametrize("build", [lambda: chain(6)[0].assemble().model, _motor_chain,
                                   lambda: three_body_prismatic().assemble().model],
                         ids=["chain6", "motor_chain", "three_body"])
def test_rate_terms_that_cannot_reach_u2_are_dropped(build, monkeypatch):
    """The dA/dt terms on rows of z that do not reach U_2 (a chain's effort rows: the
    moduli's transposes) are left out, decided once at random moduli; the evaluation is
    the same as with every term kept (both paths: one call and the general one), at
    random states with and without Baumgarte's terms, against the dense reduction too."""
    model = build()
    fewer = SparseReduction(model)
    monkeypatch.setattr(SparseReduction, "_rate_rows_reaching_u2",
                        lambda self, T, shape, rows, rng: np.ones(rows.size, dtype=bool))
    every = SparseReduction(model)
    monkeypatch.undo()
    assert every._dyn_terms.size == fewer._dyn.size
    assert 0 < fewer._dyn_terms.size < every._dyn_terms.size     # about half left out
    rng = np.random.default_rng(11)
    for k in range(8):
        x = random_unit_state(model, rng)
        stab = Baumgarte(10.0, 7.0) if k % 2 else None
        dense = model.evaluate(0.3, x, stabilization=stab)
        scale = 1.0 + np.abs(dense.xdot).max()
        for sr in (fewer, every):
            for _ in range(2):             # (the first factorisation is SuperLU's)
                d = sr.derivative(0.3, x, stab)
            ev = sr.evaluate(0.3, x, stab)
            assert np.abs(d - dense.xdot).max() <= 1e-10 * scale
            assert np.abs(ev.U2 - dense.U2).max() <= 1e-10 * (1.0 + np.abs(dense.U2).max())
        assert np.abs(fewer.derivative(0.3, x, stab) - every.derivative(0.3, x, stab)).max() \
            <= 1e-11 * scale
