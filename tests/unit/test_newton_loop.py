"""The nonlinear resistors' loop (bondgraph._newton, issue 36 item 2): Newton's method on
the resistors' inputs alone, the junction structure eliminated once per evaluation.

- its slope M (the Newton direction's matrix) is the derivative of the affine map
  D_in(o) it stands for, with and without unknown (constraint) sources;
- a warm start (the last solution of a run) converges to the cold start's answer within
  the Newton tolerance;
- a loop without a solution ends in AlgebraicLoopError naming the resistor;
- the junction's solve kept where no modulus varies equals a fresh one.
"""

from __future__ import annotations

import numpy as np
import pytest
import rich_graphs as rg
import sympy

import bondgraph.reduction as reduction
from bondgraph import (
    I, R, TF, AlgebraicLoopError, BondGraph, C, OneJunction, Se, ZeroJunction, assemble,
    assign_causality, models, simulate,
)
from bondgraph._newton import NEWTON_RTOL

f, e = sympy.symbols("f e")


def _diode():
    return assemble(assign_causality(models.diode_rectifier(5.0, 100.0, 1e-9, 0.05, 10.0,
                                                            1e-4, 100.0)))


def _constrained():
    """Two masses tied by a transformer through a constraint (an unknown source Se*),
    a cubic damper in an algebraic loop with a linear one on the first mass's
    velocity junction: D_in of the nonlinear damper depends on its own output through
    the constraint effort."""
    bg = BondGraph("constrained_loop")
    bg.add(Se("F", 2.0), OneJunction("v1"), I("m1", 1.5), TF("T", 0.7),
           ZeroJunction("c", constraint=True), OneJunction("v2"), I("m2", 0.8),
           C("k", 0.1), ZeroJunction("p"), R("cubic", effort_law=0.4 * f + 0.2 * f ** 3),
           R("lin", 3.0))
    for a, h in [("F", "v1"), ("v1", "m1"), ("v1", "T"), ("T", "c"), ("c", "v2"),
                 ("v2", "m2"), ("v2", "k"), ("v1", "p"), ("p", "cubic"), ("p", "lin")]:
        bg.connect(a, h)
    return assemble(assign_causality(bg))


def _captured(model, t, x, monkeypatch):
    """(implied, M, d) of the loop at (t, x), from the arguments handed to the solver."""
    got = {}
    solve = reduction.solve_resistor_loop

    def spy(laws, n, implied, M, *rest):
        got.update(implied=implied, M=M, n=n, laws=laws)
        got["d"] = solve(laws, n, implied, M, *rest)
        return got["d"]

    monkeypatch.setattr(reduction, "solve_resistor_loop", spy)
    model.evaluate(t, x)
    return got


@pytest.mark.parametrize("build, x", [(_diode, [2e-4]), (_constrained, None)])
def test_slope_is_the_derivative_of_the_implied_inputs(build, x, monkeypatch):
    """M against central differences of implied(o) around the solution's outputs. The
    map is affine, so a difference of step 1e-3 of o is exact but for rounding: 1e-8
    relative to M's largest entry is far above rounding (eps times the map's terms)
    and far below any structural error (a missing term changes entries by O(1))."""
    model = build()
    if x is None:
        x = np.linspace(0.1, 0.4, model.n_states)
        assert model.n_u2 > 0                         # (the constraint path)
    got = _captured(model, 0.003, np.asarray(x, float), monkeypatch)
    nl = np.concatenate([np.arange(sl.start, sl.stop) for sl, _ in got["laws"]])
    o = np.zeros(got["n"])
    for sl, law in got["laws"]:
        o[sl] = law.value(got["d"][sl])
    M = np.empty((nl.size, nl.size))
    for j, k in enumerate(nl):
        dh = np.zeros(got["n"])
        dh[k] = 1e-3
        M[:, j] = (got["implied"](o + dh)[nl] - got["implied"](o - dh)[nl]) / 2e-3
    assert np.abs(M).max() > 1e-3                     # a loop: D_in depends on o
    assert np.abs(got["M"] - M).max() <= 1e-8 * np.abs(M).max()


def test_the_loop_solution_satisfies_the_law_with_a_constraint():
    """With the constraint source, the damper's bond effort is its law at its flow (to
    the Newton tolerance, 1e-12 relative, with room for the final evaluation's
    rounding: 1e-10)."""
    model = _constrained()
    x = np.linspace(0.1, 0.4, model.n_states)
    ev = model.evaluate(0.0, x)
    b = [bd.name for bd in model.graph.bonds if bd.head == "cubic"][0]
    es, fs = model.bond_slices[b]
    ec, fc = float(ev.bond_values[es][0]), float(ev.bond_values[fs][0])
    assert abs(fc) > 1e-2
    assert abs(ec - (0.4 * fc + 0.2 * fc ** 3)) <= 1e-10 * max(abs(ec), 1.0)


def test_warm_start_converges_to_the_cold_answer():
    """Along a Radau run of the rectifier (conducting and blocking), each evaluation
    started from the previous one's solution (a warm start, as in a run) against the
    same evaluation of a model that has never solved the loop (cold: its starts compared
    by residual). The diode's inputs agree to 10 x the Newton tolerance on their size:
    both stop where the remaining error is below NEWTON_RTOL of it; the derivatives to
    1e-9 of their size (the diode's exponential law amplifies its input's last digits
    by e_d / Vt, up to 100)."""
    warm, cold = _diode(), _diode()
    res = simulate(warm, (0.0, 0.05), {"q_cap": 0.0}, method="Radau", rtol=1e-8,
                   t_eval=np.linspace(0.0, 0.05, 41))
    assert res.success
    for k in range(res.t.size):
        t, x = float(res.t[k]), res.x[:, k]
        a = warm.evaluate(t, x)                       # warm: from the previous point's
        cold._newton_start.clear()
        b = cold.evaluate(t, x)
        sl = warm._nl_r[0][0]
        d_w = warm._newton_start[next(iter(warm._newton_start))][sl]
        d_c = cold._newton_start[next(iter(cold._newton_start))][sl]
        # (1e-15 V: at rest both are zero but for underflow)
        assert np.abs(d_w - d_c).max() <= 10 * NEWTON_RTOL * np.abs(d_c).max() + 1e-15
        assert np.abs(a.xdot - b.xdot).max() <= 1e-9 * np.abs(b.xdot).max() + 1e-300


def test_a_loop_without_solution_is_named():
    """Se = -10 V through R_s = 1 ohm and a resistor e = f^2 into a capacitor at 0 V:
    f^2 + f + 10 = 0 has no real root; the evaluation raises AlgebraicLoopError naming
    the resistor (never a result)."""
    bg = BondGraph("no_root")
    bg.add(Se("V", -10.0), OneJunction("i"), R("sq", effort_law=f ** 2), R("Rs", 1.0),
           ZeroJunction("out"), C("cap", compliance=1e-3), R("load", 100.0))
    for a, h in [("V", "i"), ("i", "sq"), ("i", "Rs"), ("i", "out"), ("out", "cap"),
                 ("out", "load")]:
        bg.connect(a, h)
    model = assemble(assign_causality(bg))
    with pytest.raises(AlgebraicLoopError, match="'sq'.*(did not converge|no step)"):
        model.evaluate(0.0, np.array([0.0]))


@pytest.mark.parametrize("build", [rg.algebraic_loop, rg.double_pendulum_cartesian])
def test_kept_junction_solve_equals_a_fresh_one(build):
    """JunctionLayout.solved keeps the junction's factorization where no modulus varies
    (the algebraic loop's), and must not where moduli follow the state (the Cartesian
    pendulum's rods). A model evaluated at one state and then at another against a
    fresh model evaluated at the second only: the same derivative to 1e-13 relative
    (the same operations; rounding only); the kept map is read-only."""
    model, fresh = (assemble(assign_causality(build())) for _ in range(2))
    n = model.n_states
    x1 = np.linspace(0.2, 0.9, n)
    x2 = np.linspace(-0.5, 0.7, n)[::-1].copy()
    model.evaluate(0.1, x1)
    a, b = model.evaluate(0.3, x2), fresh.evaluate(0.3, x2)
    assert np.abs(a.xdot - b.xdot).max() <= 1e-13 * np.abs(b.xdot).max()
    if not model.layout.dynamic:
        with pytest.raises(ValueError, match="read-only"):
            a.junction.W[0, 0] = 1.0
