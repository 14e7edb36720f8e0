"""Default tolerances mean relative accuracy at any size (bondgraph.scales).

The same circuit at capacitances from 1e-15 F to 1e3 F, and the same mass-damper at
masses from 1e-15 kg to 1e3 kg, run at simulate's default tolerances, give the same
relative answer: the states divided by their closed-form final values, at the same
fractions of the time constant. Before the nominal scales a fixed atol = 1e-10 let a
femtofarad's charge (5e-15 C) swing by 1e-8 C and the run said SUCCESS.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bondgraph import (
    C, I, BondGraph, IntegrationWarning, OneJunction, R, Se, assemble, assign_causality,
    nominal_scales, simulate,
)

V, RES = 5.0, 1e6            # V, ohm
F, DAMP = 2.0, 3.0           # N, N s/m
FRACTIONS = np.linspace(0.0, 5.0, 11)     # t / tau

# rtol = 1e-8 (the default): a relative error a few times rtol is what the error control
# delivers over 5 time constants; 1e-6 is far below any uncontrolled state (relative
# errors of 1 and more before) and above the solver's own 1e-8-level errors
REL = 1e-6


def rc(capacitance: float):
    bg = BondGraph("rc")
    bg.add(Se("V", V), OneJunction("i"), R("R", RES), C("cap", compliance=capacitance))
    for tail, head in [("V", "i"), ("i", "R"), ("i", "cap")]:
        bg.connect(tail, head)
    return assemble(assign_causality(bg))


def mass_damper(mass: float):
    bg = BondGraph("md")
    bg.add(Se("F", F), OneJunction("v"), I("m", mass), R("b", DAMP))
    for tail, head in [("F", "v"), ("v", "m"), ("v", "b")]:
        bg.connect(tail, head)
    return assemble(assign_causality(bg))


def relative_answer(model, state, tau, final):
    """The state over its final value at FRACTIONS of tau, with default tolerances; no
    warning may say that a state is not controlled."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", IntegrationWarning)
        r = simulate(model, (0.0, FRACTIONS[-1] * tau), {state: 0.0}, t_eval=FRACTIONS * tau)
    assert r.success and not r.diagnostics["below_atol"]
    return r.state(state) / final


EXACT = 1.0 - np.exp(-FRACTIONS)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(min_value=-15, max_value=3))
def test_rc_charge_is_relative_at_every_capacitance(k):
    cap = 10.0 ** k
    got = relative_answer(rc(cap), "q_cap", RES * cap, cap * V)
    assert np.abs(got - EXACT).max() < REL, (cap, got - EXACT)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(min_value=-15, max_value=3))
def test_mass_damper_momentum_is_relative_at_every_mass(k):
    mass = 10.0 ** k
    got = relative_answer(mass_damper(mass), "p_m", mass / DAMP, mass * F / DAMP)
    assert np.abs(got - EXACT).max() < REL, (mass, got - EXACT)


def test_the_relative_answers_agree_across_twenty_orders_of_magnitude():
    """The whole range at once: the answers of 1e-15 F and 1e3 F agree with each other
    (the same tolerance as against the closed form)."""
    answers = [relative_answer(rc(10.0 ** k), "q_cap", RES * 10.0 ** k, 10.0 ** k * V)
               for k in (-15, -9, -3, 0, 3)]
    assert np.ptp(np.array(answers), axis=0).max() < REL


def test_nominal_scales_are_the_physical_ones():
    """q = C V for the capacitor, p = m F / b for the mass (its flow through the damper),
    1 for a state without a scale of its own."""
    assert np.isclose(nominal_scales(rc(1e-15))[0], 5e-15, rtol=1e-12)
    assert np.isclose(nominal_scales(mass_damper(1e-6))[0], 1e-6 * F / DAMP, rtol=1e-12)


def test_an_explicit_atol_above_a_state_scale_is_reported():
    """The trial's run: 1 fF, 1 Mohm, 5 V over 1 us at atol = 1e-9 (DOP853): the charge
    is not controlled; the result's diagnostics and a warning say so, naming q_cap."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = simulate(rc(1e-15), (0.0, 1e-6), {"q_cap": 0.0}, method="DOP853", rtol=1e-9,
                     atol=1e-9)
    assert "q_cap" in r.diagnostics["below_atol"]
    assert any("does not control" in str(w.message) and "q_cap" in str(w.message)
               for w in caught)
    # and the default tolerances get it right: 5e-15 C at the end, never negative
    d = simulate(rc(1e-15), (0.0, 1e-6), {"q_cap": 0.0}, method="DOP853", rtol=1e-9)
    q = d.state("q_cap")
    assert abs(q[-1] - 5e-15) < 1e-8 * 5e-15 and q.min() >= 0.0
