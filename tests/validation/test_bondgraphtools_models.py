"""The linear models of BondGraphTools' tests and tutorials (issue 20), built from the
primitives, against the exact solution of their state equations derived by hand here
(not from our reduction): x(t) = e^{At} x0 + int_0^t e^{A s} ds B u for a constant input,
evaluated with one matrix exponential of the augmented matrix [[A, B u], [0, 0]].

Tolerance: DOP853 at rtol 1e-13 gives global errors of a few 1e-13 relative over these
spans (a few time constants or periods); 1e-10 relative to the largest state leaves a
margin of several hundred for platform rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from bondgraph import (
    C, GY, I, R, TF, BondGraph, OneJunction, Se, Sf, ZeroJunction, assemble,
    assign_causality, simulate,
)


def _graph(name, elements, bonds):
    bg = BondGraph(name)
    bg.add(*elements)
    for a, h in bonds:
        bg.connect(a, h)
    return bg


def parallel_rlc():
    Rv, Lv, Cv = 2.0, 0.5, 0.1
    bg = _graph("parallel_rlc", [ZeroJunction("n"), C("C", compliance=Cv), I("L", Lv),
                                 R("R", Rv)], [("n", "C"), ("n", "L"), ("n", "R")])
    # q' = -p/L - (q/C)/R, p' = q/C           (states q_C, p_L)
    A = np.array([[-1 / (Rv * Cv), -1 / Lv], [1 / Cv, 0.0]])
    return bg, ("q_C", "p_L"), A, np.zeros(2), np.array([0.3, -0.2]), 3.0


def rc_effort_source():
    Rv, Cv, V = 4.0, 0.25, 3.0
    bg = _graph("rc_se", [Se("V", V), OneJunction("i"), R("R", Rv), C("C", compliance=Cv)],
                [("V", "i"), ("i", "R"), ("i", "C")])
    return bg, ("q_C",), np.array([[-1 / (Rv * Cv)]]), np.array([V / Rv]), \
        np.array([0.1]), 4.0


def rc_flow_source():
    Rv, Cv, Iv = 4.0, 0.25, 0.7
    bg = _graph("rc_sf", [Sf("I", Iv), ZeroJunction("n"), R("R", Rv), C("C", compliance=Cv)],
                [("I", "n"), ("n", "R"), ("n", "C")])
    return bg, ("q_C",), np.array([[-1 / (Rv * Cv)]]), np.array([Iv]), np.array([0.0]), 4.0


def l_tf_c():
    Lv, Cv, n = 0.4, 0.05, 1.7
    bg = _graph("l_tf_c", [OneJunction("i"), I("L", Lv), TF("tf", n), ZeroJunction("v"),
                           C("C", compliance=Cv)],
                [("i", "L"), ("i", "tf"), ("tf", "v"), ("v", "C")])
    # flow into the C is n p/L; the effort back on the L is n q/C: p' = -n q/C
    A = np.array([[0.0, -n / Cv], [n / Lv, 0.0]])
    return bg, ("p_L", "q_C"), A, np.zeros(2), np.array([0.2, 0.01]), 2.0


def dc_motor():
    V, Ra, La, k, J, b = 12.0, 1.2, 0.05, 0.08, 2e-3, 1e-3
    bg = _graph("dc_motor", [Se("V", V), OneJunction("i"), R("Ra", Ra), I("La", La),
                             GY("k", k), OneJunction("w"), I("J", J), R("b", b)],
                [("V", "i"), ("i", "Ra"), ("i", "La"), ("i", "k"), ("k", "w"), ("w", "J"),
                 ("w", "b")])
    A = np.array([[-Ra / La, -k / J], [k / La, -b / J]])
    return bg, ("p_La", "p_J"), A, np.array([V, 0.0]), np.zeros(2), 1.0


def series_rlc():
    V, Rv, Lv, Cv = 5.0, 0.8, 0.2, 0.02
    bg = _graph("series_rlc", [Se("V", V), OneJunction("i"), R("R", Rv), I("L", Lv),
                               C("C", compliance=Cv)],
                [("V", "i"), ("i", "R"), ("i", "L"), ("i", "C")])
    A = np.array([[-Rv / Lv, -1 / Cv], [1 / Lv, 0.0]])
    return bg, ("p_L", "q_C"), A, np.array([V, 0.0]), np.zeros(2), 2.0


CASES = {f.__name__: f for f in (parallel_rlc, rc_effort_source, rc_flow_source, l_tf_c,
                                 dc_motor, series_rlc)}


def exact(A, b, x0, tt):
    n = len(x0)
    M = np.zeros((n + 1, n + 1))
    M[:n, :n], M[:n, n] = A, b
    return np.array([(expm(M * t) @ np.r_[x0, 1.0])[:n] for t in tt]).T


@pytest.mark.parametrize("case", CASES)
def test_linear_model_equals_its_exact_solution(case):
    bg, names, A, b, x0, span = CASES[case]()
    model = assemble(assign_causality(bg))
    order = [model.state_names.index(n) for n in names]
    assert len(order) == model.n_states
    tt = np.linspace(0, span, 41)
    res = simulate(model, (0, span), dict(zip(names, x0)), t_eval=tt, method="DOP853",
                   rtol=1e-13, atol=1e-15)
    assert res.success
    ref = exact(A, b, x0, tt)
    got = np.array([res.state(n) for n in names])
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 1e-10, err
