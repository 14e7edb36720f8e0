"""The compiled LU with a fixed structure (bondgraph.fastlu) against SuperLU.

The sparse evaluation factors one system per derivative; with numba it uses the compiled
LU on a fixed pivot order and falls back to SuperLU where that order's pivots fail. Here:
its solutions equal SuperLU's (and numpy's dense solve) to 1e-12 of their largest entry
on the systems of chains, the three-body example and the graphs and mechanisms of
test_sparse.py, at random states; a whole simulation is the same with and without it
(BONDGRAPH_NO_NUMBA=1); a singular system is still reported (None); a pivot that the
values make tiny is refused and SuperLU's answer used. 1e-12 is far above the round-off
of either factorisation on these systems (about 1e-14 at condition numbers up to 1e7)
and far below any difference a wrong pivot or a wrong structure would make."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

numba = pytest.importorskip(
    "numba", reason="numba not installed: bondgraph.fastlu is unused and sparse.py "
                    "keeps SuperLU (pip install -e '.[fast]' to test the compiled LU)")

import rich_graphs as rg  # noqa: E402
from mechanisms import random_states, sparse_scara  # noqa: E402
import bondgraph.fastlu as F  # noqa: E402
import bondgraph.sparse as S  # noqa: E402
import bondgraph._sparse_systems as SS  # noqa: E402  (the systems and their LU)
from bondgraph import Baumgarte, assemble, assign_causality, simulate  # noqa: E402
from elements.models import (  # noqa: E402
    chain, spring_pendulum, three_body_prismatic,
)

TOL = 1e-12

# test_sparse.py's graphs (less the Eq. (14) one, which has no sparse path) and mechanisms
GRAPHS = {n: f for n, f in rg.GRAPHS.items() if n not in rg.EQ14}
MECHANISMS = {
    "chain1": lambda: chain(1),
    "chain5": lambda: chain(5),
    "chain20": lambda: chain(20),
    "three_body": lambda: (three_body_prismatic(), {}),
    "chain7": lambda: chain(7),
    "spring_pendulum": lambda: (spring_pendulum(1.0, 20.0, 0.8), {}),
    "scara": sparse_scara,
}


@pytest.fixture(autouse=True)
def _numba_path(monkeypatch):
    """The compiled path, whatever the environment says."""
    monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)


def _systems(model, states, monkeypatch):
    """(pattern, sources) of every factorisation that evaluating at ``states`` asks for."""
    seen = []
    factor = SS._factor

    def spy(pattern, sources, ws):   # the LU's systems (a condensed system's kept one)
        lu = factor(pattern, sources, ws)
        if isinstance(pattern, S._Pattern):
            seen.append((pattern, sources.copy(), ws))
        return lu

    with monkeypatch.context() as mp:
        mp.setattr(SS, "_factor", spy)
        # (the one-call stages factor inside their kernel: the steps one by one here)
        mp.setattr(S.SparseReduction, "_evaluate_fused", lambda self, *a, **k: None)
        sr = model.sparse()
        for t, x, stab in states:
            sr.evaluate(t, x, stab)
    return seen


def _rel(y, ref):
    return np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-300)


def _check_systems(seen, rng):
    """On every system: the compiled LU with SuperLU's pivot order at these values, and
    the pattern's current (static) structure where its pivots pass, against SuperLU and,
    for small systems, numpy; and _factor + _back against SuperLU's path."""
    used_static = 0
    for pattern, sources, ws in seen:
        assert pattern.fast is not None
        A = pattern.matrix(sources).copy()
        ref_lu, _ = SS._splu(A)
        b = rng.normal(size=A.shape[0])
        ref = ref_lu.solve(b)
        here = F.Structure(pattern, ref_lu.perm_r, ref_lu.perm_c).factor(sources)
        assert here is not None, "SuperLU's own pivots refused"
        assert _rel(here.solve(b), ref) <= TOL
        if A.shape[0] <= 400:
            assert _rel(here.solve(b), np.linalg.solve(A.toarray(), b)) <= TOL
        static = ws.lu(pattern.fast).structure.factor(sources)
        if static is not None:
            used_static += 1
            assert _rel(static.solve(b), ref) <= TOL
        lu = SS._factor(pattern, sources, ws)
        y = S.SparseReduction._back(lu, pattern, b)
        assert _rel(y, ref[pattern.position]) <= TOL
    return used_static


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_solves_equal_superlu_for_mechanisms(name, monkeypatch):
    mech, q0 = MECHANISMS[name]()
    mm = mech.assemble()
    model = mm.model
    assert model.sparse().applicable, model.sparse().reason
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    states = [(0.0, mm.initial_state(q0, {}), None)] + \
        random_states(mech, mm, rng, 6, Baumgarte(10.0, 10.0))
    seen = _systems(model, states, monkeypatch)
    assert len(seen) == len(states)
    used = _check_systems(seen, rng)
    assert used >= 1                      # at least the state its pivots were taken at


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_solves_equal_superlu_for_graphs(name, monkeypatch):
    """On the whole (not condensed) systems: the condensation can leave a small graph
    nothing to factor."""
    model = assemble(assign_causality(GRAPHS[name]()))
    model._sparse = S.SparseReduction(model, condensed=False)
    assert model.sparse().applicable, model.sparse().reason
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    states = [(float(rng.uniform(0, 3)), rng.normal(size=model.n_states),
               Baumgarte(3.0, 4.0) if k % 2 else None) for k in range(8)]
    seen = _systems(model, states, monkeypatch)
    assert seen
    assert _check_systems(seen, rng) >= 1


def test_evaluation_uses_the_compiled_lu(monkeypatch):
    """After the first (SuperLU) factorisation, the next evaluations use the compiled
    LU, and their results equal the first's."""
    mech, q0 = chain(5)
    mm = mech.assemble()
    x = mm.initial_state(q0, {"J2": 1.0})
    sr = mm.model.sparse()
    stab = Baumgarte(10.0, 10.0)
    ws = sr.workspace()
    first = sr.evaluate(0.1, x, stab, ws)
    state = ws.lu(sr._B.fast)
    assert state.structure is not None and state.setups == 1
    kinds = []
    factor = SS._factor

    def spy(pattern, sources, ws):
        lu = factor(pattern, sources, ws)
        if isinstance(pattern, S._Pattern):
            kinds.append(type(lu))
        return lu

    monkeypatch.setattr(SS, "_factor", spy)
    monkeypatch.setattr(S.SparseReduction, "_evaluate_fused", lambda self, *a, **k: None)
    second = sr.evaluate(0.1, x, stab, ws)
    assert kinds == [F.Factors]
    assert _rel(second.xdot, first.xdot) <= TOL and _rel(second.U2, first.U2) <= TOL


def _run(model, x0):
    return simulate(model, (0.0, 0.5), x0, method="DOP853", rtol=1e-10, atol=1e-10,
                    stabilization=Baumgarte(10.0, 10.0), t_eval=np.linspace(0, 0.5, 11))


def test_simulation_with_and_without_numba(monkeypatch):
    """BONDGRAPH_NO_NUMBA=1 when the model's sparse path is built: SuperLU throughout;
    the two runs see the same derivatives to rounding and end in the same state."""
    runs, fast, adopted = [], [], []
    for off in (False, True):
        if off:
            monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
        mech, q0 = chain(4)
        mm = mech.assemble()
        with monkeypatch.context() as mp:     # (the pivot orders the run takes)
            adopt = F.FixedLU.adopt
            mp.setattr(F.FixedLU, "adopt",
                       lambda self, state, lu: (adopt(self, state, lu),
                                                adopted.append(state.structure)))
            runs.append(_run(mm.model, mm.initial_state(q0, {"J1": 1.0})))
        fast.append(mm.model.sparse()._B.fast)
    assert all(r.success for r in runs)
    assert fast[0] is not None and adopted and adopted[0] is not None and fast[1] is None
    assert np.max(np.abs(runs[0].x[:, -1] - runs[1].x[:, -1])) <= 1e-10   # final state
    assert np.max(np.abs(runs[0].x - runs[1].x)) <= 1e-10                 # every output


def _four_bar():
    from mechanisms import four_bar_start
    return four_bar_start()


def test_singular_system_is_still_none():
    """The four-bar's redundant constraints make its system singular whatever the
    values (structurally): the pattern gets no compiled LU and the evaluation is None,
    as before. (Values that make a regular pattern singular: the next tests.)"""
    mm, x0 = _four_bar()
    sr = mm.model.sparse()
    assert sr._B.structurally_singular and sr._B.fast is None
    assert sr.evaluate(0.0, x0, None) is None
    assert sr.evaluate(0.0, x0, Baumgarte(10.0, 10.0)) is None


def _hand_pattern():
    """A full 3 x 3 pattern, every entry its own source (source 3 i + j: entry (i, j)),
    logical columns 1 and 2 stored swapped (so that the solution is gathered back)."""
    rows = np.repeat(np.arange(3), 3)
    cols = np.tile(np.arange(3), 3)
    p = S._Pattern((3, 3), rows, cols, np.arange(9), np.ones(9),
                   position=np.array([0, 2, 1]))
    p.mark_constants(np.full(9, np.nan))
    p.fast = F.FixedLU.for_pattern(p)
    return p


def test_tiny_static_pivot_falls_back_to_superlu():
    """Pivots taken at one set of values (where the first row's leading entry is the
    largest of its column: partial pivoting takes it), then values that make that pivot
    zero, and tiny, while the matrix stays regular: the compiled LU refuses, _factor
    answers with SuperLU (right answer), and the pattern takes SuperLU's pivots for the
    next evaluations once SETUP_INTERVAL factorisations have passed."""
    p = _hand_pattern()
    ws = S.Workspace()
    state = ws.lu(p.fast)
    first = np.array([4.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 5.0])
    lu = SS._factor(p, first, ws)                   # SuperLU; its pivots adopted
    assert not isinstance(lu, F.Factors)
    assert state.setups == 1
    st = state.structure
    assert st.prow[0] == 0 and st.pcol[0] == 0    # the first pivot: entry (0, 0)
    assert isinstance(SS._factor(p, first, ws), F.Factors)
    b = np.array([1.0, -2.0, 0.5])
    for a00 in (0.0, 1e-5):
        values = first.copy()
        values[0] = a00                            # the static pivot (row 0, column 0)
        A = values.reshape(3, 3)
        assert abs(np.linalg.det(A)) > 1.0         # regular
        assert state.structure.factor(values) is None
        lu = SS._factor(p, values, ws)
        assert lu is not None and not isinstance(lu, F.Factors)
        y = S.SparseReduction._back(lu, p, b)
        assert _rel(y, np.linalg.solve(A, b)) <= TOL
    # fewer than SETUP_INTERVAL factorisations since the set-up: the order is kept ...
    assert state.setups == 1
    for _ in range(F.SETUP_INTERVAL):
        SS._factor(p, first, ws)
    # ... then the next failure brings SuperLU's order at the new values
    lu = SS._factor(p, values, ws)
    assert not isinstance(lu, F.Factors) and state.setups == 2
    lu = SS._factor(p, values, ws)
    assert isinstance(lu, F.Factors)
    y = S.SparseReduction._back(lu, p, b)
    assert _rel(y, np.linalg.solve(values.reshape(3, 3), b)) <= TOL


def test_a_recent_pivot_order_serves_before_superlu():
    """Where the current pivot order fails, the orders before it are tried (the latest
    first) and the first that passes becomes current, without SuperLU: here order 1
    pivots on entry (0, 0), order 2 (SuperLU's, taken where (0, 0) vanished) on
    another row; values where order 2's pivot vanishes are factored with order 1
    again, rightly, and no new structure is built."""
    p = _hand_pattern()
    ws = S.Workspace()
    state = ws.lu(p.fast)
    first = np.array([4.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 5.0])
    SS._factor(p, first, ws)                        # SuperLU; order 1 adopted
    order1 = state.structure
    for _ in range(F.SETUP_INTERVAL):
        assert isinstance(SS._factor(p, first, ws), F.Factors)
    second = first.copy()
    second[0] = 0.0                                # order 1's first pivot vanishes
    SS._factor(p, second, ws)                       # SuperLU; order 2 adopted
    order2 = state.structure
    assert state.setups == 2 and order2 is not order1 and state.recent == [order1]
    assert order2.prow[0] != 0                     # (order 2 pivots column 0 elsewhere)
    # the row order 2 pivots column 0 on (B's row 0): its entry in column 0 zeroed
    third = first.copy()
    row = int(np.flatnonzero(order2.prow == 0)[0])
    third[3 * row] = 0.0
    assert order2.factor(third) is None and order1.factor(third) is not None
    lu = SS._factor(p, third, ws)
    assert isinstance(lu, F.Factors) and lu.structure is order1
    assert state.structure is order1 and state.recent == [order2]   # (latest last)
    assert state.setups == 2                       # no new structure, no SuperLU
    b = np.array([1.0, -2.0, 0.5])
    y = S.SparseReduction._back(lu, p, b)
    assert _rel(y, np.linalg.solve(third.reshape(3, 3), b)) <= TOL


def test_guards_refuse_non_finite_and_singular_values():
    p = _hand_pattern()
    ws = S.Workspace()
    first = np.array([4.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 5.0])
    SS._factor(p, first, ws)
    st = ws.lu(p.fast).structure
    assert st.factor(first) is not None
    for bad in (np.nan, np.inf):
        values = first.copy()
        values[5] = bad
        assert st.factor(values) is None
    singular = np.array([1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0])   # row 1 = 2 row 0
    assert st.factor(singular) is None
    assert SS._factor(p, singular, ws) is None
    for line in (np.s_[3:6], np.s_[1::3]):           # a zero row, a zero column
        values = first.copy()
        values[line] = 0.0
        assert st.factor(values) is None
        assert SS._factor(p, values, ws) is None
    # pivots 1, 1e-15, 1: each the largest of its column, but their ratio is below
    # SINGULAR_RATIO: refused here, and SuperLU's (the same) pivots say singular too
    tiny = np.array([1.0, 0.0, 0.0, 0.0, 1e-15, 0.0, 0.0, 0.0, 1.0])
    assert st.factor(tiny) is None
    assert st.factor(tiny * [1, 1, 1, 1, 1e13, 1, 1, 1, 1]) is not None
    assert SS._factor(p, tiny, ws) is None


def test_environment_variable_turns_it_off(monkeypatch):
    monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
    assert not F.enabled()
    mech, q0 = chain(2)
    sr = mech.assemble().model.sparse()
    assert sr._B.fast is None
    monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "0")
    assert F.enabled()


def test_import_without_numba():
    """With numba unimportable, the module imports, says it is unavailable, and the
    sparse evaluation uses SuperLU."""
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import bondgraph.fastlu as F\n"
        "assert not F.have_numba() and not F.enabled()\n"
        "from elements.models import chain\n"
        "mech, q0 = chain(2); mm = mech.assemble(); sr = mm.model.sparse()\n"
        "assert sr._B.fast is None\n"
        "assert sr.evaluate(0.0, mm.initial_state(q0, {}), None) is not None\n"
    )
    env = dict(os.environ)
    env.pop("BONDGRAPH_NO_NUMBA", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
