"""Sources given as sympy expressions of time, computed by one compiled interpreter
(bondgraph._expr_program, bondgraph._expr_kernels): their programs against the numeric
evaluator's own functions (bondgraph.laws.compile_numeric), and runs driven by them on
the compiled loop against closed forms and against the Python stepping.

Tolerances: the program does the numeric code's operations in its order with IEEE
arithmetic, so + - * / and pow give the same bits; libm's transcendental functions
where numpy may use its own differ by an ulp or two, amplified by what follows them
(exp(1000 t): 1000 ulp of t), so 1e-13 relative (or both not finite, of the same kind).
A run on the compiled loop equals the Python stepping (which calls the same kernel) to
1e-12 of each state's largest magnitude, and the closed form to 1e-9 at rtol 1e-10.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import sympy

from bondgraph import (
    BondGraph, I, ModelError, OneJunction, R, Se, assemble, assign_causality, simulate,
)
from bondgraph import _expr_program
from bondgraph.expressions import parse_expression
from bondgraph.fastlu import enabled
from bondgraph.laws import TIME, TimeLaw, compile_numeric
from bondgraph.primitives.sources import compiled_expression_source

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled "
                                                      "expression sources")

# every function an expression may call, the numeric code's special cases (heaviside at
# 0, sign at 0, reduce of minimum/maximum, integer and fractional powers, constants
# folded as Python folds them)
CASES = ["5*Heaviside(t - 0.004)", "Heaviside(t - 0.002, 1)", "Min(Max(t, 0.001), 0.002)",
         "Max(t, 0.001, 3*t - 0.01, sin(40*t))", "sign(t - 0.004)", "Abs(t - 0.004)", "1/t",
         "log(t)", "sqrt(t)", "exp(1000*t)", "atan2(t, 1)", "atan2(1 - 100*t, t)",
         "t**(1/3)", "2**t", "pi*t", "sin(3*t) - t/7", "acosh(t + 2)", "pow(t, -1)",
         "(t + 1)**(-1/2)", "sqrt(2)*t", "tanh(50*(t - 0.003))*cos(t)", "tan(100*t)",
         "asin(50*t)", "acos(50*t)", "atan(t)", "sinh(300*t)", "cosh(300*t)",
         "asinh(t)", "atanh(60*t)", "exp(-t/0.004)*(1 - t)**3", "(t - 0.004)**2*sign(t)",
         "1/(t - 0.004)", "log(Abs(t - 0.004))", "sqrt(0.01 - t)", "exp(1e5*t)",
         "Heaviside(t - 0.003)*(1e300*t)*(1e300*t)", "-1/t**2 + t**3", "(-t)**0.5",
         "10**(-300)*t", "exp(710 + t)"]

TIMES = np.concatenate([np.linspace(-0.01, 0.02, 301),
                        [0.0, -0.0, 0.001, 0.002, 0.003, 0.004, 0.01, 0.02, 1e-300]])


def _pairs(expr: sympy.Expr, ts=TIMES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The program's, the numeric evaluator's and the same code's in extended precision
    (numpy's long double: what the evaluator's own rounding costs) values and rates at
    ``ts``, shape (len(ts), 2) each."""
    law = TimeLaw(expr, 1, "F", "effort")
    bound = law.bound({})
    rec = _expr_program.program(list(bound[:1, :]), list(bound[1:, :]))
    assert rec is not None, expr
    ints, flts = rec
    f = compile_numeric((TIME,), bound, "F", "effort", (2,)).raw
    kernel = _expr_program.expression_kernel()
    got, ref, ext = (np.empty((len(ts), 2)) for _ in range(3))
    for k, t in enumerate(ts):
        kernel(float(t), np.zeros(1), ints, flts, got[k])
        with np.errstate(all="ignore"):
            ref[k] = np.broadcast_to(np.asarray(f(np.float64(t)), dtype=float), (2,))
            ext[k] = np.broadcast_to(np.asarray(f(np.longdouble(t)), dtype=float), (2,))
    return got, ref, ext


def _compare(expr: sympy.Expr, ts=TIMES, own_rounding: bool = False) -> tuple[float, int]:
    """(worst difference of finite pairs relative to the value, count of other
    mismatches: finite against not, or infinities of other signs). With
    ``own_rounding``, a difference within four times the evaluator's own rounding error
    there (against its extended-precision value: a cancellation such as
    t/d - y/d of terms of 6e14) counts as none."""
    got, ref, ext = _pairs(expr, ts)
    both = np.isfinite(got) & np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - ref)
        if own_rounding:
            diff = np.where(diff <= 4.0 * np.abs(ref - ext), 0.0, diff)
    with np.errstate(all="ignore"):
        rel = diff / np.maximum(np.abs(ref), 1e-300)
    worst = float(rel[both].max(initial=0.0))
    bad = int((~both & ~(np.isnan(got) & np.isnan(ref)) & (got != ref)).sum())
    return worst, bad


@pytest.mark.parametrize("text", CASES)
def test_each_expression_equals_the_numeric_evaluator(text):
    worst, bad = _compare(parse_expression(text))
    assert worst <= 1e-13 and bad == 0, (worst, bad)


@pytest.mark.parametrize("c", [4 * np.pi, 1 / 3, 0.1 + 0.2, 3e-300 / 7, 6.02214076e23 / 3,
                               -2 * np.e])
def test_a_constant_is_the_double_it_stands_for(c):
    """A sympy Float made from a double (TimeFunction.expression of a model file's
    numbers, sympy.Float(4 * pi)) is that double in the numeric code and in the
    interpreter's program: c t at t = 1 is c exactly (sympy prints a Float of 53 bits
    with 15 digits: 4 pi came out 2.2e-15 off, and a sine's rate 7e-14 off)."""
    expr = sympy.Float(c) * TIME
    f = compile_numeric((TIME,), sympy.Matrix([expr]), "F", "effort", (1,))
    assert f(1.0)[0] == c
    got, ref, _ = _pairs(expr, np.array([1.0]))
    assert got[0, 0] == c and got[0, 1] == c and ref[0, 1] == c


def _random_expression(rng: random.Random, depth: int = 0) -> str:
    leaves = ["t", "0.004", "2", "(1/3)", "pi", "1000*t", "(t - 0.002)"]
    if depth >= 3 or rng.random() < 0.3:
        return rng.choice(leaves)
    kind = rng.random()
    if kind < 0.45:
        fn = rng.choice(["sin", "cos", "exp", "log", "sqrt", "Abs", "sign", "Heaviside",
                         "tanh", "atan"])
        return f"{fn}({_random_expression(rng, depth + 1)})"
    if kind < 0.55:
        fn = rng.choice(["Min", "Max", "atan2"])
        return (f"{fn}({_random_expression(rng, depth + 1)}, "
                f"{_random_expression(rng, depth + 1)})")
    op = rng.choice(["+", "-", "*", "/", "**"])
    return f"({_random_expression(rng, depth + 1)}) {op} ({_random_expression(rng, depth + 1)})"


RANDOM_TIMES = np.concatenate([np.linspace(-0.0097, 0.0197, 31), [0.0, 0.002, 0.004]])
"""(No time a rounding error away from a kink: at t = -1.7e-18, t / d - y / d with d of
1e-30 cancels terms of 6e14, and an ulp of tanh decides between 0 and -0.125.)"""


def test_random_compositions_equal_the_numeric_evaluator():
    """300 random nestings of the functions and operators: every one the interpreter
    takes equals the numeric evaluator (values and sympy's derivatives) to 1e-9, or
    within the evaluator's own rounding error (an ulp of a transcendental function,
    numpy's or libm's, amplified by a cancellation: 1 - tanh(y)**2 near tanh = -1 is
    5e-11 off); those it does not take are few."""
    rng = random.Random(7)
    taken = 0
    for _ in range(300):
        try:
            expr = parse_expression(_random_expression(rng))
        except ModelError:                  # (refused when read: log(0), ...)
            continue
        if not any(s.name == "t" for s in expr.free_symbols):
            continue
        law = TimeLaw(expr, 1, "F", "effort")
        bound = law.bound({})
        if _expr_program.program(list(bound[:1, :]), list(bound[1:, :])) is None:
            continue
        taken += 1
        worst, bad = _compare(expr, RANDOM_TIMES, own_rounding=True)
        assert worst <= 1e-9 and bad == 0, (expr, worst, bad)
    assert taken >= 150, taken         # (of 300: 117 hold no t, 3 cannot be printed)


def test_a_wrong_operation_shows(monkeypatch):
    """The comparison sees a program whose sine is a cosine."""
    codes = dict(_expr_program._CODE)
    codes["sin"], codes["cos"] = codes["cos"], codes["sin"]
    monkeypatch.setattr(_expr_program, "_CODE", codes)
    worst, bad = _compare(parse_expression("sin(3*t) - t/7"))
    assert worst > 1e-3


def test_what_the_interpreter_does_not_compute_is_left_to_python():
    """An integer too large for a float (Python's OverflowError where the numeric code
    meets it) and a symbol other than t have no program: their Python functions serve
    (the first names the element when evaluated)."""
    for text in ("10**400*t", "2**3000*t"):
        law = TimeLaw(parse_expression(text), 1, "F", "effort")
        assert compiled_expression_source(law.bound({}), 1) is None, text
    b = sympy.Symbol("b")
    assert _expr_program.program([b * TIME], [b]) is None


def _push(force) -> BondGraph:
    """A mass of 2 kg with a damper of 0.5 N s/m pushed by ``force`` (N)."""
    bg = BondGraph("push")
    bg.add(Se("F", force), OneJunction("v"), I("m", 2.0), R("d", 0.5))
    for a, h in [("F", "v"), ("v", "m"), ("v", "d")]:
        bg.connect(a, h)
    return bg


def test_a_run_driven_by_an_expression_takes_the_compiled_loop():
    """A step of 5 N at 4 ms: the momentum p = (m F / b)(1 - exp(-b (t - 4 ms) / m))
    after it, on the compiled loop (no fallback), equal to the Python stepping."""
    model = assemble(assign_causality(_push(5 * sympy.Heaviside(TIME - 0.004))))
    ts = np.linspace(0.0, 0.05, 26)
    kw = dict(t_eval=ts, rtol=1e-10, atol=1e-12)
    fast = simulate(model, (0.0, 0.05), {"p_m": 0.0}, **kw)
    slow = simulate(model, (0.0, 0.05), {"p_m": 0.0}, compiled_loop=False, **kw)
    d = fast.diagnostics
    assert d["compiled_loop"] and d["compiled_steps"] > 0, d["compiled_loop_reason"]
    assert d["compiled_fallbacks"] == 0
    exact = np.where(ts > 0.004, 2.0 * 5.0 / 0.5 * (1 - np.exp(-0.5 * (ts - 0.004) / 2.0)),
                     0.0)
    assert np.abs(fast.x[0] - exact).max() <= 1e-9 * 20.0
    assert np.abs(fast.x - slow.x).max() <= 1e-12 * np.abs(slow.x).max()


def test_a_source_not_finite_is_named_as_before():
    """sqrt(0.02 - t) is not a number past 20 ms: the run on the compiled loop ends
    there with the element's own message, as the Python stepping does."""
    model = assemble(assign_causality(_push(sympy.sqrt(0.02 - TIME))))
    runs = [simulate(model, (0.0, 0.05), {"p_m": 0.0}, compiled_loop=c) for c in (True, False)]
    for r in runs:
        assert not r.success
        assert "element 'F': its effort is not finite" in r.message, r.message
        assert 0.019 < r.t[-1] <= 0.02
    assert runs[0].message == runs[1].message
    assert np.array_equal(runs[0].t, runs[1].t)


def test_a_rate_no_equation_reads_does_not_stop_a_run():
    """sqrt(|t - 4 ms|) is finite everywhere; its rate is not at 4 ms, where the runs
    step to its kink. Without constraint sources no equation reads dU_1/dt (Eq. (14)),
    so every path runs through: the compiled loop, the Python stepping on the sparse
    evaluation (it evaluated the rate and failed there) and the dense reduction, all
    equal."""
    model = assemble(assign_causality(_push(sympy.sqrt(sympy.Abs(TIME - 0.004)))))
    runs = [simulate(model, (0.0, 0.01), {"p_m": 0.0}, rtol=1e-10, atol=1e-12,
                     compiled_loop=c, dense_reduction=d)
            for c, d in ((True, False), (False, False), (False, True))]
    assert all(r.success for r in runs), [r.message for r in runs]
    ends = np.array([r.x[0, -1] for r in runs])
    assert np.abs(ends - ends[0]).max() <= 1e-12 * abs(ends[0])


def test_a_prescribed_motion_given_as_an_expression_reads_its_rate():
    """A pendulum's joint driven by the flow a sin(w t) given as an expression (its
    rate enters the constraint's equation, Eq. (15)) on the compiled loop: the bob
    follows q0 + (a / w)(1 - cos(w t)) to 1e-10 m. With the interpreter's rate not
    handed on (dU_1/dt left at 0) the bob is more than 1 mm off: the rate is read."""
    from elements import Inertia, Mechanism, RevoluteJoint, RigidBody
    from bondgraph import Sf
    a, w, q0 = 0.8, 2.0, 0.3

    def pendulum():
        mech = Mechanism("pendulum", gravity=(0, 0, -9.81))
        bob = mech.add_body(RigidBody("bob", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
        mech.add_joint(RevoluteJoint("J", mech.ground, bob, axis=(0, 1, 0),
                                     child_point=(0, 0, 0.5)))
        return mech.assemble().with_drives({"J": Sf("J.drive", a * sympy.sin(w * TIME))})

    def off(res) -> float:
        q = q0 + a / w * (1.0 - np.cos(w * res.t))
        exact = np.stack([-0.5 * np.sin(q), 0.0 * q, -0.5 * np.cos(q)])
        return float(np.abs(res.body("bob").position - exact).max())
    run = dict(q={"J": q0}, rtol=1e-10, atol=1e-10, t_eval=np.linspace(0.0, 2.0, 21))
    mm = pendulum()
    assert mm.model.sources["J.drive"].compiled is not None
    res = mm.simulate((0.0, 2.0), **run)
    assert res.success and res.raw.diagnostics["compiled_loop"], \
        res.raw.diagnostics["compiled_loop_reason"]
    assert off(res) < 1e-10
    broken = pendulum()
    object.__setattr__(broken.model.sources["J.drive"].compiled, "rate_entries", None)
    assert off(broken.simulate((0.0, 2.0), **run)) > 1e-3
