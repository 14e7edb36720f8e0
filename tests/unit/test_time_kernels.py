"""Standard functions of time computed compiled (bondgraph.timefunctions,
bondgraph._time_kernels): TimeFunction.sine and .ramp and the model files' step, ramp,
sine and table sources against their own Python functions, and runs driven by them on
the compiled loop.

Tolerances: the kernel evaluates the same formulas as the Python functions (libm's sin
and cos where numpy may use its own: an ulp or two), so 1e-14 of the largest value; a
run on the compiled loop equals one with every evaluation in Python (which computes the
same kernels) to 1e-12 of each state's largest magnitude, as the compiled loop's own
tests; against the functions' Python forms (no kernel), the runs differ by rounding
amplified by the integration: 1e-8 at rtol 1e-10.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bondgraph import ModelError, Sf, TimeFunction, TimeKernel
from bondgraph.laws import TimeLaw
from bondgraph.fastlu import enabled
from bondgraph.primitives.sources import compiled_time_source
from elements import AxisActuator, Inertia, Mechanism, RevoluteJoint, RigidBody
from elements.files.tables import signal

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled "
                                                      "time functions")

G = 9.81


def _functions():
    """(name, TimeFunction, dim) with a compiled form."""
    yield "sine", TimeFunction.sine(2.0, 3.0, 0.4, 1.0), 1
    yield "ramp", TimeFunction.ramp(2.5, 0.3, -1.0), 1
    yield "file step", signal({"type": "step", "time": 0.5, "before": 1.0, "after": -2.0}), 1
    yield "file ramp (3)", signal({"type": "ramp", "slope": [1.0, -2.0, 0.5], "start": 0.2,
                                   "offset": [0.0, 1.0, 2.0]}, dim=3), 3
    yield "file sine (3)", signal({"type": "sine", "amplitude": [1.0, 0.0, -3.0],
                                   "frequency": 2.0, "phase": 0.3}, dim=3), 3
    yield "file table", signal({"type": "table", "t": [0.0, 0.5, 1.0, 1.7],
                                "value": [0.0, 2.0, -1.0, 4.0]}), 1
    yield "file table (2)", signal({"type": "table", "t": [0.1, 0.6, 1.0],
                                    "value": [[0.0, 1.0], [2.0, 3.0], [-1.0, 0.5]]},
                                   dim=2), 2
    yield "step", TimeFunction.step([3.0, -1.0], time=0.6, before=0.5), 2
    yield "table", TimeFunction.table([0.0, 0.2, 0.3, 1.7], [1.0, -2.0, 0.0, 5.0]), 1
    yield "table (2), no breaks", TimeFunction.table(
        [0.1, 0.6, 1.0], [[0.0, 1.0], [2.0, 3.0], [-1.0, 0.5]], breaks=False), 2


def _kernel_values(tf, dim, ts):
    cs = compiled_time_source(tf.compiled, dim)
    assert cs is not None
    ints, flts, size = cs.pack({})
    k = cs.kernel()
    out = np.empty(size)
    vals, rates = [], []
    for t in ts:
        k(float(t), np.zeros(1), ints, flts, out)
        vals.append(out[cs.entries].copy())
        rates.append(out[cs.rate_entries].copy())
    return np.array(vals), np.array(rates)


TIMES = np.concatenate([np.linspace(-0.5, 2.5, 301), [0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 1.0,
                                                      1.7]])


def _own(f, dim):
    """A TimeFunction's own value (or rate) ``f`` at TIMES, shape (len(TIMES), dim)."""
    return np.array([np.broadcast_to(np.asarray(f(float(t)), dtype=float), (dim,))
                     for t in TIMES])


def _equal_to_own(vals, rates, tf, dim):
    """Assert values and rates at TIMES equal TimeFunction ``tf``'s own to 1e-14 of the
    largest; its own values."""
    ref_v, ref_r = _own(tf.value, dim), _own(tf.rate, dim)
    scale = max(np.abs(ref_v).max(), np.abs(ref_r).max(), 1.0)
    assert np.abs(vals - ref_v).max() <= 1e-14 * scale
    assert np.abs(rates - ref_r).max() <= 1e-14 * scale
    return ref_v


@pytest.mark.parametrize("case", list(_functions()), ids=lambda c: c[0])
def test_each_standard_function_of_time_equals_its_python_function(case):
    """Values and rates at 309 times (before, at and after the breaks and the table's
    points) equal the TimeFunction's own value and rate to 1e-14 of the largest; a
    kernel whose parameters are off (the first one by 1e-3) does not."""
    _, tf, dim = case
    assert isinstance(tf.compiled, TimeKernel)
    vals, rates = _kernel_values(tf, dim, TIMES)
    ref_v = _equal_to_own(vals, rates, tf, dim)
    p = list(tf.compiled.params)
    p[0] = np.asarray(p[0], dtype=float) + 1e-3
    off = TimeFunction(tf.value, tf.rate, compiled=TimeKernel(tf.compiled.kind, tuple(p)))
    wrong, _ = _kernel_values(off, dim, TIMES)
    assert np.abs(wrong - ref_v).max() > 1e-4


@pytest.mark.parametrize("case", list(_functions()), ids=lambda c: c[0])
def test_each_standard_function_written_as_expressions_computes_the_same(case):
    """What an FMU's C is made from (TimeKernel.expressions): the sympy expressions of t,
    evaluated with their exact rates as any expression source is, equal the function's
    own value and rate at the 309 times (jumps and kinks taken on the same side: the
    value after from the break on) to 1e-14 of the largest; with a parameter off by
    1e-3, they do not."""
    _, tf, dim = case

    def law(f):
        value, rate = TimeLaw(f.expressions(dim), dim, "case", "value").bind(None)
        return (np.array([value(float(t)) for t in TIMES]),
                np.array([rate(float(t)) for t in TIMES]))

    vals, rates = law(tf)
    ref_v = _equal_to_own(vals, rates, tf, dim)
    p = list(tf.compiled.params)
    p[1] = np.asarray(p[1], dtype=float) + 1e-3
    wrong, _ = law(TimeFunction(tf.value, compiled=TimeKernel(tf.compiled.kind, tuple(p))))
    assert np.abs(wrong - ref_v).max() > 1e-4


def test_the_standard_functions_say_where_a_run_must_stop():
    """A model file's step, ramp and table (which carry no breaks of their own) stop a
    run at their jumps, kinks and points, and a sine bounds its steps by its period
    (TimeKernel.timing, read by the source's law where the TimeFunction gives none)."""
    step = signal({"type": "step", "time": 0.5, "after": 1.0})
    table = signal({"type": "table", "t": [0.0, 0.5, 1.7], "value": [0.0, 2.0, 4.0]})
    sine = signal({"type": "sine", "amplitude": 1.0, "frequency": 50.0})
    assert step.compiled.timing() == (None, (0.5,))
    assert signal({"type": "ramp", "slope": 1.0, "start": 0.2}).compiled.timing() == \
        (None, (0.2,))
    assert table.compiled.timing() == (None, (0.0, 0.5, 1.7))
    assert sine.compiled.timing()[0] == pytest.approx(0.02, rel=1e-15)
    timing = Sf("f", step).law().timing
    # (a segment ends one float before the step, the next starts one float after it)
    assert [list(v) for v in timing.segments(0.0, 2.0)] == [[np.nextafter(0.5, 0)],
                                                            [np.nextafter(0.5, 1)]]
    assert Sf("f", sine).law().timing.period(0.0, 1.0) == pytest.approx(0.02, rel=1e-15)
    # a TimeFunction's own timing stands
    assert Sf("f", TimeFunction(step.value, step.rate, breaks=(0.7,),
                                compiled=step.compiled)).law().timing.breaks(0, 2) == \
        [np.nextafter(0.7, 0)]


def test_a_step_and_a_table_as_time_functions():
    """TimeFunction.step and .table: values equal their closed forms (the step's,
    np.interp's) to rounding at 309 times, the rates each segment's slope; they stop a
    run at the step and at every point, or nowhere with breaks=False (a model file's
    'breaks = false' too); bad tables, steps, sines and ramps are refused naming where
    (a sine of amplitude NaN was taken, and its first evaluation's singular matrix
    named the joint's constraint sources; a string amplitude a bare TypeError)."""
    ts, vs = [0.0, 0.2, 0.3, 1.7], [1.0, -2.0, 0.0, 5.0]
    table = TimeFunction.table(ts, vs, where="drive")
    vals = np.array([table.value(float(t)) for t in TIMES])
    assert np.abs(vals - np.interp(TIMES, ts, vs)).max() <= 1e-15 * 5
    slopes = np.diff(vs) / np.diff(ts)
    inside = [(t, k) for t in TIMES for k in range(3) if ts[k] < t < ts[k + 1]]
    assert all(table.rate(float(t)) == slopes[k] for t, k in inside)
    assert table.rate(-0.1) == table.rate(1.7) == table.rate(2.0) == 0.0
    assert table.breaks == tuple(ts)
    assert list(Sf("f", table).law().timing.segments(0.0, 2.0)[1]) == \
        list(np.nextafter(ts[1:], 3.0))                                   # (after 0)
    dense = TimeFunction.table(ts, vs, breaks=False)
    assert dense.breaks == () and dense.compiled.timing() == (None, ())
    assert Sf("f", dense).law().timing is None
    assert signal({"type": "table", "t": ts, "value": vs, "breaks": False}
                  ).compiled.timing() == (None, ())
    with pytest.raises(ModelError, match=r"\[signal\] 'breaks': must be true or false"):
        signal({"type": "table", "t": ts, "value": vs, "breaks": 0})
    step = TimeFunction.step(2.0, time=0.5, before=-1.0)
    assert [step.value(t) for t in (0.0, 0.5 - 1e-12, 0.5, 3.0)] == [-1.0, -1.0, 2.0, 2.0]
    assert step.rate(0.5) == 0.0 and step.breaks == (0.5,)
    assert np.array_equal(TimeFunction.step([1.0, 2.0], 0.1).value(0.0), [0.0, 0.0])
    for bad, match in [
            (lambda: TimeFunction.table([0.0, 0.3, 0.3], [1, 2, 3], where="drive"),
             r"drive: times must increase strictly; times\[1\] = 0.3 and times\[2\]"),
            (lambda: TimeFunction.table([0.0], [1.0], where="drive"), "at least 2 times"),
            (lambda: TimeFunction.table([0.0, 1.0], [1.0, 2.0, 3.0], where="drive"),
             r"drive: values must hold 2 entries"),
            (lambda: TimeFunction.table([0.0, np.nan], [1.0, 2.0], where="drive"),
             "drive times: .* not finite"),
            (lambda: TimeFunction.table([0.0, 1.0], ["a", 2.0], where="drive"),
             "drive values: .* not a number"),
            (lambda: TimeFunction.step([1.0, 2.0], 0.0, [0.0, 0.0, 0.0], where="kick"),
             "kick: before has 3 values and after 2"),
            (lambda: TimeFunction.step(1.0, np.inf, where="kick"), "kick time: .* not finite"),
            (lambda: TimeFunction.sine(np.nan, 3.0), "sine amplitude: nan .*not finite"),
            (lambda: TimeFunction.sine("1", 3.0), "sine amplitude: '1' is not a number"),
            (lambda: TimeFunction.sine(1.0, np.inf), "sine omega: inf .*not finite"),
            (lambda: TimeFunction.sine(1.0, [1.0, 2.0]), "sine omega: .*valid: one number"),
            (lambda: TimeFunction.ramp(1.0, np.nan, where="lift"), "lift start: nan"),
            (lambda: TimeFunction.ramp([1.0, None]), "ramp slope: ")]:
        with pytest.raises(ModelError, match=match):
            bad()


def _impulse(t, ts, vs):
    """The integral of np.interp(s, ts, vs) over 0 <= s <= t, exact (trapezoids between
    the points)."""
    grid = np.sort(np.concatenate([np.asarray(ts)[(np.asarray(ts) > 0) & (ts < t)],
                                   [0.0, t]]))
    f = np.interp(grid, ts, vs)
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(grid)))


def test_a_table_drives_two_rigidly_joined_masses_on_the_compiled_loop():
    """A table force on the README's two masses (m1 = 1, m2 = 3 kg): their momenta sum to
    the force's integral (1e-12, closed form: trapezoids) and the coupling force is
    3 F / 4 (its rate enters Eq. (15)) to 1e-12, on the compiled loop. A dense table
    (2001 points) without breaks takes far fewer evaluations at a loose tolerance (RK45
    1e-6: 284 against 16 036 on this machine) and ends within 1e-4 of the integral: the
    error control meets each kink, but the kinks' local errors add up (1e-5 there,
    against 4e-14 with breaks), as docs/time_functions say."""
    from bondgraph import assemble, assign_causality, models, simulate

    def run(tf, **kw):
        model = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, tf)))
        return simulate(model, (0.0, 2.0), {"p_m1": 0.0, "p_m2": 0.0}, t_eval=te, **kw)

    te = np.linspace(0.0, 2.0, 41)
    ts = np.array([0.0, 0.3, 0.31, 0.9, 1.4, 1.75])
    vs = np.array([0.0, 2.0, -1.0, 4.0, 4.0, 0.5])
    res = run(TimeFunction.table(ts, vs), method="DOP853", rtol=1e-10, atol=1e-10)
    assert res.success and res.diagnostics["compiled_loop"]
    p = res.state("p_m1").ravel() + res.state("p_m2").ravel()
    assert np.abs(p - [_impulse(t, ts, vs) for t in te]).max() < 1e-12
    coupling = res.constraint_force("Se*_coupling")[0]
    assert np.abs(coupling - 0.75 * np.interp(te, ts, vs)).max() < 1e-12
    tt = np.linspace(0.0, 2.0, 2001)
    vv = np.sin(7 * tt) + 0.3 * np.cos(23 * tt)
    ref = np.array([_impulse(t, tt, vv) for t in te])
    errors, nfev = [], []
    for breaks in (True, False):
        res = run(TimeFunction.table(tt, vv, breaks=breaks), method="RK45", rtol=1e-6,
                  atol=1e-6)
        assert res.success and res.diagnostics["compiled_loop"]
        errors.append(np.abs(res.state("p_m1").ravel() + res.state("p_m2").ravel()
                             - ref).max())
        nfev.append(res.nfev)
    assert errors[0] < 1e-12 and errors[1] < 1e-4
    assert nfev[1] * 10 < nfev[0]


def test_an_expression_of_time_as_a_time_function():
    """TimeFunction.expression: the value and exact rate of an expression of t alone
    (text read, never executed; a list for a vector), its form kept as data; names other
    than t, and what is not an expression, are refused naming where."""
    f = TimeFunction.expression("3*sin(2*t) + Heaviside(t - 1, 1)*t**2")
    assert f.value(0.5) == pytest.approx(3 * math.sin(1.0), rel=1e-15)
    assert f.rate(0.5) == pytest.approx(6 * math.cos(1.0), rel=1e-15)
    assert f.value(2.0) == pytest.approx(3 * math.sin(4.0) + 4.0, rel=1e-15)
    assert f.rate(2.0) == pytest.approx(6 * math.cos(4.0) + 4.0, rel=1e-15)
    assert f.compiled.kind == "expression" and len(f.expressions(1)) == 1
    v = TimeFunction.expression(["t", 2, "exp(-t)"])
    assert np.allclose(v.value(1.0), [1.0, 2.0, math.exp(-1.0)], rtol=1e-15)
    assert np.allclose(v.rate(1.0), [1.0, 0.0, -math.exp(-1.0)], rtol=1e-15)
    assert len(TimeFunction.expression("sin(t)").expressions(3)) == 3    # (broadcast)
    assert v.expressions(2) is None
    for bad, words in [("k*t", "names k"), ("sin(", "never closed"),
                       ("[[1, 2]]", "is not an expression"), ([], "an empty list"),
                       ("open('x')", "not an allowed function"),
                       ("2**3000*sin(t)", "(904 characters) is not a finite real number"),
                       ("t + 10**200", "is not a finite real number of magnitude at most")]:
        with pytest.raises(ModelError, match=f"actuator J.*{re.escape(words)}"):
            TimeFunction.expression(bad, where="actuator J")
    # a folded constant of 904 digits is quoted in part (the message was 950 characters)
    import sympy
    with pytest.raises(ModelError) as err:
        Sf("f", sympy.Integer(2) ** 3000).law()
    assert "(904 characters) is not finite" in str(err.value) and len(str(err.value)) < 200


def test_a_run_driven_by_an_expression_takes_the_compiled_loop():
    """An actuator given as an expression of t (TimeFunction.expression, or a sympy
    expression handed to add_actuator) runs on the compiled loop as the same function
    given as a sine does: the same motion to 1e-10."""
    import sympy
    t = sympy.Symbol("t")
    by_sine = _pendulum(TimeFunction.sine(2.0, 3.0, 0.4, 1.0)).simulate(
        (0.0, 2.0), q={"J": 0.3}, **RUN)
    for actuator in (TimeFunction.expression("1 + 2*sin(3*t + 0.4)"),
                     1 + 2 * sympy.sin(3 * t + sympy.Float(0.4))):
        res = _pendulum(actuator).simulate((0.0, 2.0), q={"J": 0.3}, **RUN)
        assert res.success and res.raw.diagnostics["compiled_loop"], \
            res.raw.diagnostics["compiled_loop_reason"]
        assert np.abs(res.joint("J").q - by_sine.joint("J").q).max() < 1e-10
    for wrong in (sympy.Symbol("k") * t, AxisActuator(sympy.Symbol("k") * t)):
        with pytest.raises(ModelError, match=r"joint 'J': actuator effort: names k"):
            _pendulum(wrong)


def test_a_load_given_as_expressions_of_t():
    """A point force given as 3 sympy expressions of t (a TimeFunction.expression) on a
    free 2 kg body at rest: x = (t - sin t) / 2 (1e-9 at rtol 1e-10), on the compiled
    loop; a name other than t is refused naming the load."""
    import sympy
    from elements import PointForce
    t = sympy.Symbol("t")
    mech = Mechanism("free", gravity=(0, 0, 0))
    body = mech.add_body(RigidBody("b", 2.0, Inertia.principal(0.1, 0.1, 0.1)))
    mech.add_load(PointForce("push", body, (0, 0, 0), [sympy.sin(t), 0, 0]))
    res = mech.assemble().simulate((0.0, 2.0), **RUN)
    assert res.success and res.raw.diagnostics["compiled_loop"]
    ts = res.t
    assert np.abs(res.body("b").position[0] - (ts - np.sin(ts)) / 2).max() < 1e-9
    with pytest.raises(ModelError, match=r"load 'f': its value\[0\]: names k"):
        PointForce("f", body, (0, 0, 0), [sympy.Symbol("k") * t, 0, 0])
    with pytest.raises(ModelError, match=r"load 'f': its value must be 3 finite numbers, 3 "
                                         r"expressions of t"):
        PointForce("f", body, (0, 0, 0), [sympy.sin(t), 0])
    as_array = PointForce("f", body, (0, 0, 0), np.array([sympy.sin(t), 0, 0]))
    assert as_array.value.compiled.kind == "expression"
    # a known form of one value is refused (it was applied to all three components)
    for scalar in (TimeFunction.sine(1.0, 3.0), TimeFunction.expression("t")):
        with pytest.raises(ModelError, match=r"load 'f': its TimeFunction \(\w+\) gives "
                                             r"one value; valid: 3"):
            PointForce("f", body, (0, 0, 0), scalar)
    assert PointForce("f", body, (0, 0, 0), TimeFunction.sine([1.0, 0, 0], 3.0)).value


def test_parameters_that_do_not_fit_leave_the_python_function():
    """A kernel whose vectors do not fit the source's dimension, whose table does not
    increase, of an unknown kind or with a vector where a number belongs makes no
    compiled source (the Python functions run and say what is wrong)."""
    assert compiled_time_source(TimeKernel("sine", ([1.0, 2.0], 1.0, 3.0, 0.0)), 3) is None
    assert compiled_time_source(TimeKernel("table", ([0.0, 0.0], [1.0, 2.0])), 1) is None
    assert compiled_time_source(TimeKernel("wave", (1.0, 2.0, 3.0)), 1) is None
    assert compiled_time_source(TimeKernel("sine", (0.0, 1.0, np.array([1.0, 2.0]), 0.0)),
                                2) is None          # (omega and phase are numbers)
    assert compiled_time_source(None, 1) is None


def _pendulum(actuator, drive=None):
    mech = Mechanism("pendulum", gravity=(0, 0, -G))
    bob = mech.add_body(RigidBody("bob", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
    j = mech.add_joint(RevoluteJoint("J", mech.ground, bob, axis=(0, 1, 0),
                                     child_point=(0, 0, 0.5)))
    j.add_damper(0.05)
    if actuator is not None:
        j.add_actuator(actuator)
    mm = mech.assemble()
    return mm.with_drives({"J": drive}) if drive is not None else mm


def _python_form(tf):
    period, breaks = (tf.period, tf.breaks) if tf.period or tf.breaks else \
        tf.compiled.timing()
    return TimeFunction(tf.value, tf.rate, period, breaks)


RUN = dict(rtol=1e-10, atol=1e-10, t_eval=np.linspace(0.0, 2.0, 21))


@pytest.mark.parametrize("case", [c for c in _functions() if c[2] == 1],
                         ids=lambda c: c[0])
def test_a_run_driven_by_a_standard_function_takes_the_compiled_loop(case):
    """An actuator that is a standard function of time keeps the run on the compiled
    loop: the same steps and states as with every evaluation in Python, and the same
    motion (1e-8) as with the function's Python form, which leaves the compiled loop."""
    _, tf, _ = case
    mm = _pendulum(tf)
    fast = mm.simulate((0.0, 2.0), q={"J": 0.3}, **RUN)
    slow = mm.simulate((0.0, 2.0), q={"J": 0.3}, compiled_loop=False, **RUN)
    plain = _pendulum(_python_form(tf)).simulate((0.0, 2.0), q={"J": 0.3}, **RUN)
    assert fast.success and slow.success and plain.success
    d = fast.raw.diagnostics
    assert d["compiled_loop"], d["compiled_loop_reason"]
    assert not plain.raw.diagnostics["compiled_loop"]
    assert fast.raw.nfev == slow.raw.nfev
    scale = np.abs(slow.raw.x).max(axis=1, keepdims=True)
    assert np.all(np.abs(fast.raw.x - slow.raw.x) <= 1e-12 * scale)
    q, qp = fast.joint("J").q, plain.joint("J").q
    assert np.abs(q - qp).max() < 1e-8


def _bob_off_the_prescribed_motion(res, q0, a, w) -> float:
    """How far (m) the bob's centre is from where the prescribed angle puts it, 0.5 m
    below the pivot rotated by q(t) = q0 + (a / w) (1 - cos(w t)) about y."""
    q = q0 + a / w * (1.0 - np.cos(w * res.t))
    exact = np.stack([-0.5 * np.sin(q), 0.0 * q, -0.5 * np.cos(q)])
    return float(np.abs(res.body("bob").position - exact).max())


def test_a_prescribed_motion_reads_the_kernels_rate():
    """A flow source on the joint (prescribed motion a sin(w t), whose rate enters the
    constraint's equation, Eq. (15)) on the compiled loop: the bob follows the angle
    q0 + (a / w) (1 - cos(w t)) to 1e-10 m and the energy ledger balances to 1e-10.
    With the kernel's rate not handed on (dU_1/dt left at 0), the bob is 1.6 cm off
    and the ledger off by 4 % (seen): the rate is read."""
    a, w, q0 = 0.8, 2.0, 0.3
    mm = _pendulum(None, Sf("J.drive", TimeFunction.sine(a, w)))
    res = mm.simulate((0.0, 2.0), q={"J": q0}, **RUN)
    assert res.success and res.raw.diagnostics["compiled_loop"]
    assert _bob_off_the_prescribed_motion(res, q0, a, w) < 1e-10
    assert res.energy.relative_drift < 1e-10
    broken = _pendulum(None, Sf("J.drive", TimeFunction.sine(a, w)))
    object.__setattr__(broken.model.sources["J.drive"].compiled, "rate_entries", None)
    res2 = broken.simulate((0.0, 2.0), q={"J": q0}, **RUN)
    assert _bob_off_the_prescribed_motion(res2, q0, a, w) > 1e-3


def test_a_kernel_that_disagrees_with_its_function_is_named():
    """A TimeFunction whose compiled form is not its function (the phase off by 0.1
    rad): the first evaluation raises a ModelError naming the source."""
    tf = TimeFunction.sine(2.0, 3.0)
    wrong = TimeFunction(tf.value, tf.rate, tf.period,
                         compiled=TimeKernel("sine", (0.0, 2.0, 3.0, 0.1)))
    mm = _pendulum(wrong)
    with pytest.raises(ModelError, match=r"source 'J\.actuator': its compiled kernel"):
        mm.simulate((0.0, 1.0), q={"J": 0.3})
    assert math.isfinite(tf.value(0.5))


def test_the_compiled_loop_goes_on_through_a_tables_breaks(monkeypatch):
    """A 201-point table stops a run at each point; the compiled loop starts each next
    segment itself, as a new solver would (f at its start, scipy's initial step): the
    same steps as the Python stepping's new solver per segment, the states equal to the
    last bit, one to three solvers made instead of 201 (a dense table's run was 8 to 10 times
    slower: benchmarks/breaks.py)."""
    from bondgraph import _stepping, assemble, assign_causality, models, simulate
    made = []
    original = _stepping.Steps.solver

    def counted(self, *args, **kwargs):
        made.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(_stepping.Steps, "solver", counted)
    tt = np.linspace(0.0, 2.0, 201)
    force = TimeFunction.table(tt, np.sin(7 * tt) + 0.3 * np.cos(23 * tt))
    model = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, force)))
    runs, solvers = [], []
    for method in ("RK45", "DOP853"):
        for compiled in (True, False):
            made.clear()
            runs.append(simulate(model, (0.0, 2.0), np.zeros(2), method=method, rtol=1e-8,
                                 atol=1e-8, t_eval=np.linspace(0.0, 2.0, 41),
                                 compiled_loop=compiled))
            solvers.append(len(made))
    for fast, slow in (runs[:2], runs[2:]):
        assert fast.success and fast.diagnostics["compiled_steps"] == fast.n_steps
        assert fast.n_steps == slow.n_steps and np.array_equal(fast.x, slow.x)
    # (a compiled call that ends at a segment's end, its CHUNK of steps taken, leaves
    # that restart to Python)
    assert solvers[1] == solvers[3] == 201 and solvers[0] <= 3 and solvers[2] <= 3


def test_a_break_at_the_end_of_the_span():
    """A break an ulp before the span's end leaves a last segment an ulp long, which the
    compiled loop passes: Heaviside(Heaviside(log(t))) over 0-0.01 s (its inner argument
    0 at every sample, each a break) ran past the segments the loop was given and ended in
    an internal error ('pop from empty list'; found by the expression fuzzing); a table
    whose last point is the span's end: the momenta equal the exact integral."""
    import sympy
    from bondgraph import assemble, assign_causality, models, simulate
    from bondgraph.laws import TIME
    flat = TimeFunction.expression(sympy.Heaviside(sympy.Heaviside(sympy.log(TIME))))
    table = TimeFunction.table([0.0, 0.5, 1.0], [0.0, 2.0, 1.0])
    for force, span, want in ((flat, 0.01, 0.005), (table, 1.0, 1.25)):   # (H(0) = 1/2)
        model = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0, force)))
        for method in ("RK45", "DOP853"):
            res = simulate(model, (0.0, span), np.zeros(2), method=method, rtol=1e-8,
                           atol=1e-8, t_eval=[0.0, span])
            p = res.state("p_m1").ravel() + res.state("p_m2").ravel()
            assert res.success and abs(p[-1] - want) < 1e-14, method
