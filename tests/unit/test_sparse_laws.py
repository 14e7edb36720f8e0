"""Nonlinear constitutive laws on the sparse evaluation (bondgraph._sparse_laws) against
the dense reduction, which evaluates every law one by one with its own matrices.

Models without constraint sources take the sparse path with nonlinear storage and
resistor laws: co-energies from the laws, resistor outputs as the right-hand side of
their rows, an algebraic loop through the resistors solved by the same Newton method as
the dense reduction's. The two computations share no linear algebra, so agreement to
1e-12 of the largest term is their round-off (the dense reduction is itself checked
against closed forms in tests/validation/test_nonlinear_laws.py)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import sympy

import rich_graphs as rg
from bondgraph import (
    C, EJS, I, R, Baumgarte, BondGraph, NonFiniteLawError, OneJunction, Se, TimeFunction,
    ZeroJunction,
    assemble, assign_causality, models, simulate,
)

f, q, p = sympy.symbols("f q p", real=True)
f1, f2, f3 = sympy.symbols("f1 f2 f3", real=True)
q1, q2 = sympy.symbols("q1 q2", real=True)


def cubic_loop():
    """A cubic resistor in series with a linear one, driven by a sine source, into a
    capacitor with a load: the cubic law's input is the source's voltage less the linear
    resistor's drop, which is its own output (an algebraic loop through a linear R)."""
    bg = BondGraph("cubic_loop")
    bg.add(Se("V", TimeFunction.sine(2.0, 30.0)), OneJunction("i"),
           R("cubic", effort_law=f + f ** 3), R("Rs", 1.0), ZeroJunction("out"),
           C("cap", compliance=1e-3), R("load", 100.0))
    for a, h in [("V", "i"), ("i", "cubic"), ("i", "Rs"), ("i", "out"), ("out", "cap"),
                 ("out", "load")]:
        bg.connect(a, h)
    return bg


def planar_mass():
    """A 2-D mass on a 2-D spring of energy (q1^2 + q2^2)^2 / 4 + q1^2 / 2 with a 2-D
    damper of effort 0.3 f + 0.1 f^3 per component and a 2-D force: vector laws."""
    bg = BondGraph("planar_mass")
    bg.add(Se("F", [0.5, -0.2], dim=2), OneJunction("v", dim=2), I("m", 1.5, dim=2),
           C("k", energy=(q1 ** 2 + q2 ** 2) ** 2 / 4 + q1 ** 2 / 2, dim=2),
           R("b", effort_law=[0.3 * f1 + 0.1 * f1 ** 3, 0.3 * f2 + 0.1 * f2 ** 3], dim=2))
    for a, h in [("F", "v"), ("v", "m"), ("v", "k"), ("v", "b")]:
        bg.connect(a, h)
    return bg


def tumbling_drag():
    """A body's rotation (I 3-D, EJS) with a quadratic-plus-linear drag torque (a
    nonlinear 3-D resistor) and a constant torque: nonlinear laws beside Euler's
    junction structure."""
    bg = BondGraph("tumbling_drag")
    law = [0.05 * v + 0.02 * v * sympy.Abs(v) for v in (f1, f2, f3)]
    bg.add(Se("M", [0.1, -0.2, 0.05], dim=3), OneJunction("w", dim=3),
           I("J", [0.2, 0.5, 0.9], dim=3), EJS("ejs", momentum="J"),
           R("drag", effort_law=law, dim=3))
    for a, h in [("M", "w"), ("w", "J"), ("w", "ejs"), ("w", "drag")]:
        bg.connect(a, h)
    return bg


# name -> (factory, whether an algebraic loop runs through the nonlinear resistors)
GRAPHS = {
    "nonlinear_chain": (rg.nonlinear_chain, False),
    "long_chain": (lambda: rg.nonlinear_chain(25), False),
    "duffing": (lambda: models.duffing(1.0, 2.0, 3.0), False),
    "orifice_tank": (lambda: models.orifice_tank(1e-3, 0.1), False),
    "diode_rectifier": (lambda: models.diode_rectifier(5.0, 100.0, 1e-9, 0.05, 10.0, 1e-4,
                                                       100.0), True),
    "cubic_loop": (cubic_loop, True),
    "planar_mass": (planar_mass, False),
    "tumbling_drag": (tumbling_drag, False),
}


def _states(model, rng, n=25):
    """Random states where every law is finite (an orifice's pressure, a tank's
    volume: positive)."""
    positive = model.graph.name == "orifice_tank"
    for _ in range(n):
        x = rng.uniform(0.05, 1.0, model.n_states)
        if not positive:
            x *= rng.choice([-1.0, 1.0], model.n_states)
        yield float(rng.uniform(0.0, 0.05)), x


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_nonlinear_laws_on_the_sparse_path_equal_the_dense_reduction(name):
    build, looped = GRAPHS[name]
    model = assemble(assign_causality(build()))
    assert model.nonlinear
    sr = model.sparse()
    assert sr.applicable, sr.reason
    assert sr._resistor_loop is looped
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for t, x in _states(model, rng):
        ev = model.evaluate(t, x)
        sv = sr.evaluate(t, x)
        assert sv is not None
        assert np.abs(sv.xdot - ev.xdot).max() <= 1e-12 * (1.0 + np.abs(ev.xdot).max())
        assert np.abs(sv.bond_values - ev.bond_values).max() <= \
            1e-12 * (1.0 + np.abs(ev.bond_values).max())
        # (a loop's Newton iteration starts from the last solution: equal to 1e-12)
        assert np.abs(sr.derivative(t, x) - sv.xdot).max() <= \
            1e-12 * (1.0 + np.abs(ev.xdot).max())


def test_the_loop_test_is_what_makes_a_looped_resistor_right(monkeypatch):
    """Taken as loop-free, the cubic resistor's input would be read at zero output (the
    linear resistor's drop left out): the evaluation then differs from the dense one by
    far more than round-off; the structural test found the loop."""
    model = assemble(assign_causality(cubic_loop()))
    sr = model.sparse()
    x = np.array([0.7e-3])
    ev = model.evaluate(0.01, x)
    assert np.abs(sr.evaluate(0.01, x).xdot - ev.xdot).max() <= 1e-12 * np.abs(ev.xdot).max()
    monkeypatch.setattr(sr, "_resistor_loop", False)
    assert np.abs(sr.evaluate(0.01, x).xdot - ev.xdot).max() > 1e-2 * np.abs(ev.xdot).max()


@pytest.mark.parametrize("name", ["diode_rectifier", "nonlinear_chain"])
def test_a_run_on_the_sparse_path_equals_the_dense_run(name):
    """The whole run (DOP853, rtol 1e-9): the sparse and the dense reduction give the
    same solution within the tolerance's reach (their evaluations differ by round-off,
    so their steps may differ by a few)."""
    build, _ = GRAPHS[name]
    model = assemble(assign_causality(build()))
    x0 = {n: 0.0 for n in model.state_names}
    if name == "nonlinear_chain":
        x0["q_k0"] = 0.5
    kw = dict(method="DOP853", rtol=1e-9, atol=1e-12, t_eval=np.linspace(0, 0.05, 11))
    a = simulate(model, (0.0, 0.05), x0, **kw)
    b = simulate(model, (0.0, 0.05), x0, dense_reduction=True, **kw)
    assert a.success and b.success
    scale = np.abs(b.x).max(axis=1, keepdims=True) + 1e-300
    assert np.abs(a.x - b.x).max() <= 1e-6 * scale.max()
    assert (np.abs(a.x - b.x) / scale).max() <= 1e-6


def constrained_cubic():
    """Two masses on a constraint junction, a cubic damper on the second."""
    bg = BondGraph("constrained_cubic")
    bg.add(Se("F", 2.0), OneJunction("v1"), I("m1", 1.5), ZeroJunction("c", constraint=True),
           OneJunction("v2"), I("m2", 0.8), R("cubic", effort_law=0.4 * f + 0.2 * f ** 3))
    for a, h in [("F", "v1"), ("v1", "m1"), ("v1", "c"), ("c", "v2"), ("v2", "m2"),
                 ("v2", "cubic")]:
        bg.connect(a, h)
    return bg


def constrained_cubic_loop():
    """Two masses on a constraint junction; on the second a cubic damper (flow in) beside
    a linear one on a 0-junction: the cubic law sets the junction's effort, the linear
    damper's flow follows from it, and the cubic's input is the second mass's velocity
    less that flow: an algebraic loop through a linear R in the acceleration stage."""
    bg = BondGraph("constrained_cubic_loop")
    bg.add(Se("F", 2.0), OneJunction("v1"), I("m1", 1.5), ZeroJunction("c", constraint=True),
           OneJunction("v2"), I("m2", 0.8), ZeroJunction("j"),
           R("cubic", effort_law=0.4 * f + 0.2 * f ** 3), R("Rp", 2.0))
    for a, h in [("F", "v1"), ("v1", "m1"), ("v1", "c"), ("c", "v2"), ("v2", "m2"),
                 ("v2", "j"), ("j", "cubic"), ("j", "Rp")]:
        bg.connect(a, h)
    return bg


def pendulum_with_drag():
    """The Cartesian pendulum with a 2-D drag law 0.3 v sqrt(|v|^2 + 1) on the bob."""
    bg = models.cartesian_pendulum(2.0, 1.5, 9.81)
    speed = sympy.sqrt(f1 ** 2 + f2 ** 2 + 1)
    bg.add(R("drag", effort_law=sympy.Matrix([0.3 * f1 * speed, 0.3 * f2 * speed]), dim=2))
    bg.connect("v", "drag")
    return bg


p1, p2 = sympy.symbols("p1 p2", real=True)


def rigid_nonlinear_mass():
    """Two masses joined rigidly, the first of a nonlinear kinetic energy (its velocity
    p + p^3/2): Eq. (15) reads its tangent 1 + 3 p^2/2 in the constraint's row."""
    bg = BondGraph("rigid_nonlinear_mass")
    bg.add(Se("force", 2.0), OneJunction("v1"), I("m1", energy=p ** 2 / 2 + p ** 4 / 8),
           ZeroJunction("coupling"), OneJunction("v2"), I("m2", 3.0), C("k", 4.0))
    for a, h in [("force", "v1"), ("v1", "m1"), ("v1", "coupling"), ("coupling", "v2"),
                 ("v2", "m2"), ("v2", "k")]:
        bg.connect(a, h)
    return bg


def pendulum_nonlinear_mass():
    """The Cartesian pendulum with a 2-D nonlinear kinetic energy and a rod (a
    modulated constraint): the tangent is a full 2 x 2 block."""
    from bondgraph import MTF, KinematicState
    length = 1.5
    bg = BondGraph("pendulum_nonlinear_mass")
    bg.add(Se("gravity", [0.0, -2.0 * 9.81], dim=2), OneJunction("v", dim=2),
           I("m", energy=(p1 ** 2 + p2 ** 2) / 4 + (p1 ** 2 + p2 ** 2) ** 2 / 40, dim=2),
           MTF("radial", lambda r: (r / length)[None, :],
               modulus_rate=lambda r, rd: (rd / length)[None, :], depends_on=("r",),
               shape=(1, 2)),
           ZeroJunction("rod", constraint=True))
    for a, h in [("gravity", "v"), ("v", "m"), ("v", "radial"), ("radial", "rod")]:
        bg.connect(a, h)
    bg.add_kinematic_state(KinematicState("r", "v", 2))
    return bg


def pendulum_with_a_hardening_spring():
    """The Cartesian pendulum with a 2-D hardening spring from the pivot (a nonlinear
    C beside the constraint: its tangent does not reach the constraint's row)."""
    bg = models.cartesian_pendulum(2.0, 1.5, 9.81)
    bg.add(C("soft", energy=3 * (q1 ** 2 + q2 ** 2) / 2 + (q1 ** 2 + q2 ** 2) ** 2, dim=2))
    bg.connect("v", "soft")
    return bg


CONSTRAINED = {"rigid, nonlinear mass": rigid_nonlinear_mass,
               "pendulum, nonlinear mass": pendulum_nonlinear_mass,
               "pendulum, hardening spring": pendulum_with_a_hardening_spring,
               "constrained cubic damper": constrained_cubic,
               "constrained cubic loop": constrained_cubic_loop,
               "pendulum, 2-D drag": pendulum_with_drag}


@pytest.mark.parametrize("name", sorted(CONSTRAINED))
def test_nonlinear_laws_with_constraint_sources_on_the_sparse_path(name):
    """With constraint sources a nonlinear storage law's rate dZ/dt = T(X) dX/dt enters
    the acceleration stage through a new unknown per component and a row whose
    coefficients are the law's tangent (Eq. (15)'s F); a nonlinear resistor's output
    enters that stage's right-hand side and Newton's method works on its affine map.
    dX/dt, U_2 and every bond value equal the dense reduction's to 1e-12 at 25 random
    states, with and without Baumgarte's terms (whose rows the new ones follow: taking
    them in doubled alpha's term; and the compiled stage's plan dropped the resistors'
    rows of B: off by 0.9); with the tangent replaced by ones the nonlinear masses are
    off by more than 1."""
    model = assemble(assign_causality(CONSTRAINED[name]()))
    assert model.n_u2 >= 1
    sr = model.sparse()
    assert sr.applicable, sr.reason

    def worst(sr) -> float:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        out = 0.0
        for k in range(25):
            x, t = rng.normal(size=model.n_states), float(rng.uniform(0.0, 1.0))
            stab = Baumgarte(3.0, 4.0) if k % 2 else None
            ev, sv = model.evaluate(t, x, stabilization=stab), sr.evaluate(t, x, stab)
            for a, b in ((sv.xdot, ev.xdot), (sv.U2, ev.U2), (sv.bond_values, ev.bond_values),
                         (sr.derivative(t, x, stab), ev.xdot)):
                out = max(out, float(np.abs(a - b).max() / (1.0 + np.abs(b).max())))
        return out
    assert worst(sr) <= 1e-12
    starts = {"rigid, nonlinear mass": [0.4, 3.0 * (0.4 + 0.4 ** 3 / 2), 0.1],
              "constrained cubic damper": [1.5 * 0.3, 0.8 * 0.3]}     # (on the coupling)
    if name in starts:                        # (a whole run, both reductions)
        x0 = np.array(starts[name])
        runs = [simulate(model, (0.0, 2.0), x0, rtol=1e-10, atol=1e-12,
                         dense_reduction=d) for d in (False, True)]
        assert all(r.success for r in runs)
        assert np.abs(runs[0].x - runs[1].x).max() <= 1e-7 * np.abs(runs[1].x).max()
    if "mass" in name:
        sr._tangents = lambda X: np.ones(sum(d * d for d in sr._tan_dims))
        assert worst(sr) > 1.0


@pytest.mark.parametrize("name, looped", [("constrained cubic damper", False),
                                          ("pendulum, 2-D drag", False),
                                          ("constrained cubic loop", True)])
def test_with_constraint_sources_only_a_resistor_loop_takes_newtons_method(
        name, looped, monkeypatch):
    """With constraint sources the loop test reads the acceleration stage's system B:
    a damper whose input is a mass's velocity is loop-free (one pass, no Newton
    iteration nor a column per input), the damper beside a linear one on a 0-junction
    is not. Taken as loop-free, the looped one's evaluation is off by far more than
    round-off (its input read at zero output)."""
    model = assemble(assign_causality(CONSTRAINED[name]()))
    sr = model.sparse()
    assert sr._resistor_loop is looped
    rng = np.random.default_rng(5)
    x = rng.normal(size=model.n_states)
    ev = model.evaluate(0.1, x)
    assert np.abs(sr.evaluate(0.1, x).xdot - ev.xdot).max() <= 1e-12 * (
        1.0 + np.abs(ev.xdot).max())
    if looped:
        monkeypatch.setattr(sr, "_resistor_loop", False)
        assert np.abs(sr.evaluate(0.1, x).xdot - ev.xdot).max() > 1e-2 * (
            1.0 + np.abs(ev.xdot).max())


def test_a_law_not_finite_leaves_the_sparse_path_to_the_dense_error():
    """A spring of energy (2/3) (1 + q)^(3/2) compressed past q = -1: the sparse
    evaluation gives up (None) and the dense reduction raises the error that names the
    element (a run ends there with its partial result:
    tests/validation/test_nonlinear_laws.py)."""
    bg = BondGraph("edge")
    bg.add(Se("F", -5.0), OneJunction("v"), I("m", 1.0),
           C("soft", energy=sympy.Rational(2, 3) * (1 + q) ** sympy.Rational(3, 2)))
    for a, h in [("F", "v"), ("v", "m"), ("v", "soft")]:
        bg.connect(a, h)
    model = assemble(assign_causality(bg))
    sr = model.sparse()
    assert sr.applicable
    assert sr.evaluate(0.0, np.array([0.0, -0.5])) is not None
    x = np.array([0.0, -1.5])
    assert sr.evaluate(0.0, x) is None
    with pytest.raises(NonFiniteLawError, match="'soft'"):
        model.evaluate(0.0, x)


def test_a_vector_resistor_law_matches_the_hand_written_equations():
    """The planar mass by hand: dp/dt = F - dH/dq - b(p/m), dq/dt = p/m, with the
    damper's law per component; both reductions (the dense one raised a broadcasting
    ValueError on any nonlinear resistor of more than one dimension before)."""
    model = assemble(assign_causality(planar_mass()))
    rng = np.random.default_rng(7)
    for _ in range(5):
        x = rng.uniform(-1.0, 1.0, 4)
        p_, q_ = x[model.state_slices["p_m"]], x[model.state_slices["q_k"]]
        v = p_ / 1.5
        r2 = q_ @ q_
        grad = r2 * q_ + np.array([q_[0], 0.0])
        want = np.r_[np.array([0.5, -0.2]) - grad - (0.3 * v + 0.1 * v ** 3), v]
        order = np.r_[np.arange(4)[model.state_slices["p_m"]],
                      np.arange(4)[model.state_slices["q_k"]]]
        for got in (model.evaluate(0.0, x).xdot, model.sparse().evaluate(0.0, x).xdot):
            assert np.abs(got[order] - want).max() <= 1e-14 * (1.0 + np.abs(want).max())
