"""Symbolic state equations against hand derivations (exact equality)."""

from __future__ import annotations

import sympy

from bondgraph import TimeFunction, models, symbolic_equations


def test_mass_spring_damper_exact():
    m, k, b, F = sympy.symbols("m k b F", positive=True)
    eq = symbolic_equations(models.mass_spring_damper(m, k, b, F))
    p, q = sympy.symbols("p_m q_k")
    assert list(eq.states) == [p, q]
    hand = sympy.Matrix([F - b * p / m - k * q, p / m])
    assert sympy.simplify(eq.xdot - hand) == sympy.zeros(2, 1)
    assert eq.branch == "none"
    assert r"\dot{p_{m}}" in eq.latex()


def test_lever_exact():
    F, n, m, k, b = sympy.symbols("F n m k b", positive=True)
    eq = symbolic_equations(models.lever(F, n, m, k, b))
    p, q = sympy.symbols("p_m q_k")
    hand = sympy.Matrix([F / n - b * p / m - k * q, p / m])
    assert sympy.simplify(eq.xdot - hand) == sympy.zeros(2, 1)


def test_two_masses_coupling_force_exact():
    m1, m2, F = sympy.symbols("m1 m2 F", positive=True)
    eq = symbolic_equations(models.two_masses_rigid(m1, m2, F))
    assert eq.branch == "15"
    assert sympy.simplify(eq.U2[0] - m2 * F / (m1 + m2)) == 0


def test_dc_motor_exact_with_a_time_varying_voltage():
    Ra, La, k, J, b = sympy.symbols("R_a L_a k J b", positive=True)
    V = TimeFunction(lambda t: 1.0)
    eq = symbolic_equations(models.dc_motor(V, Ra, La, k, J, b))
    t = sympy.Symbol("t")
    pL, pJ = sympy.symbols("p_La p_J")
    hand = sympy.Matrix([sympy.Function("V")(t) - Ra * pL / La - k * pJ / J,
                         k * pL / La - b * pJ / J])
    assert sympy.simplify(eq.xdot - hand) == sympy.zeros(2, 1)


def test_eq14_branch_exact():
    m, b, F = sympy.symbols("m b F", positive=True)
    eq = symbolic_equations(models.damped_constraint(m, b, F))
    p = sympy.Symbol("p_m")
    assert eq.branch == "14"
    assert sympy.simplify(eq.xdot[0] - (F - b * p / m)) == 0
