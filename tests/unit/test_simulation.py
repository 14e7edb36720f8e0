"""simulate(): output grid, solvers, events, dense output, and failures that keep work."""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import (
    IntegrationError, IntegrationWarning, ModelError, SingularConstraintError, Status,
    TimeFunction, assemble, assign_causality, models, simulate,
)


def msd(force=0.0):
    return assemble(assign_causality(models.mass_spring_damper(1.0, 4.0, 0.0, force)))


X0 = {"p_m": 0.0, "q_k": 0.1}


class TestOutput:
    def test_output_grid_and_named_states(self):
        r = simulate(msd(), (0.0, 2.0), X0, t_eval=np.linspace(0, 2, 11))
        assert r.t.shape == (11,) and r.x.shape == (2, 11)
        assert r.state_names == ("p_m", "q_k")
        assert np.allclose(r.state("q_k"), 0.1 * np.cos(2 * r.t), atol=1e-7)
        assert r.success and r.status is Status.SUCCESS and r.nfev > 0 and r.n_steps > 0
        with pytest.raises(KeyError, match="did you mean 'q_k'"):
            r.state("q_kk")

    @pytest.mark.parametrize("method", ["RK45", "DOP853"])
    def test_methods_reach_their_tolerance(self, method):
        r = simulate(msd(), (0.0, 3.0), X0, t_eval=[3.0], method=method, rtol=1e-10,
                     atol=1e-12)
        assert r.state("q_k")[-1] == pytest.approx(0.1 * np.cos(6.0), abs=1e-8)

    def test_result_is_frozen(self):
        r = simulate(msd(), (0.0, 1.0), X0)
        with pytest.raises(Exception):
            r.t = np.zeros(3)
        with pytest.raises(ValueError):
            r.x[0, 0] = 1.0
        with pytest.raises(TypeError):
            r.constraint_forces["x"] = 1

    def test_derived_outputs_on_demand(self, monkeypatch):
        """U_2, c, Phi, the bond values and the energy are made when first read, one
        evaluation per output point, and equal the model evaluated at the stored states;
        a run read for its states alone makes no evaluation after the solver's."""
        model = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
        x0 = model.initial_state({"p_m": [0.0, 0.0], "r": [0.6, -0.8]})
        calls = []
        orig = type(model).evaluate

        def counting(self, *a, **k):
            calls.append(1)
            return orig(self, *a, **k)
        monkeypatch.setattr(type(model), "evaluate", counting)
        r = simulate(model, (0.0, 1.0), x0, t_eval=np.linspace(0, 1, 11),
                     dense_reduction=True)
        during = len(calls)
        assert during >= r.nfev                     # the solver's, and the initial state's
        r.state("r")
        assert len(calls) == during                 # states read: nothing evaluated
        e = r.stored_energy
        assert len(calls) == during + 11            # one evaluation per output point
        r.constraint_forces, r.phi, r.bond_values
        assert len(calls) == during + 11            # computed once, for all five
        for i in (0, 5, 10):
            ev = orig(model, r.t[i], r.x[:, i], redundancy_ok=True)
            assert np.allclose(r.constraint_force("Se*_rod")[:, i], ev.U2, rtol=1e-12,
                               atol=1e-12)
            assert np.allclose(r.bond_values[:, i], ev.bond_values, rtol=1e-12, atol=1e-12)
            assert e[i] == pytest.approx(model.stored_energy(r.x[:, i]), rel=1e-14)
        # the pendulum's energy 0.5 |p|^2 / m (its stored energy: gravity is a source)
        p = r.state("p_m")
        assert np.allclose(e, 0.5 * (p ** 2).sum(axis=0), rtol=1e-12, atol=1e-15)
        # pickled with its outputs, without the model
        import pickle
        r2 = pickle.loads(pickle.dumps(r))
        assert r2._outputs is None and np.array_equal(r2.bond_values, r.bond_values)
        assert np.array_equal(r2.constraint_force("Se*_rod"), r.constraint_force("Se*_rod"))
        assert repr(r2) == repr(r)

    def test_dense_output(self):
        r = simulate(msd(), (0.0, 2.0), X0, dense_output=True, rtol=1e-10, atol=1e-12)
        assert r.sol(1.234)[1] == pytest.approx(0.1 * np.cos(2 * 1.234), abs=1e-8)

    def test_terminal_event(self):
        def crosses_zero(t, x):
            return x[1]
        crosses_zero.terminal = True
        crosses_zero.direction = -1
        r = simulate(msd(), (0.0, 5.0), X0, events=[crosses_zero], rtol=1e-10, atol=1e-12)
        assert r.status is Status.EVENT
        assert r.t_events[0][0] == pytest.approx(np.pi / 4, abs=1e-8)
        assert r.t[-1] == pytest.approx(np.pi / 4, abs=1e-8)

    @pytest.mark.parametrize("tolerance", [None, 1e-9])
    def test_a_crossing_hidden_in_a_step_is_found_with_a_tolerance(self, tolerance):
        """A function that starts a step at its zero, dips and ends the step past it
        (x = t (t - 1) over a step from 0 to 2: a quick return, like a small bounce off a
        stop) shows no sign change between the step's ends. Without a tolerance the
        crossing at t = 1 is missed; with one it is found on the interpolant, and the
        step is not accepted beyond it."""
        from bondgraph._events import EventTracker

        def g(t, x):
            return x[0]
        g.terminal, g.direction = True, 1.0
        if tolerance is not None:
            g.tolerance = tolerance
        tr = EventTracker([g], 0.0, np.array([0.0]), 100)
        te = tr.step(0.0, 2.0, np.array([2.0]), lambda t: np.array([t * (t - 1.0)]))
        if tolerance is None:
            assert te is None and tr.t_events == [[]]
        else:
            assert te == pytest.approx(1.0, abs=1e-13) and tr.t_events[0] == [te]
        # past its zero all along (no dip): the crossing is put at the step's start
        tr = EventTracker([g], 0.0, np.array([0.0]), 100)
        te = tr.step(0.0, 2.0, np.array([4.0]), lambda t: np.array([t * t]))
        assert te == (None if tolerance is None else 0.0)
        # within the tolerance, nothing: a located crossing is that close to the zero
        tr = EventTracker([g], 0.0, np.array([0.0]), 100)
        assert tr.step(0.0, 1e-6, np.array([1e-10]), lambda t: np.array([1e-4 * t])) is None


class TestBadArguments:
    @pytest.mark.parametrize("kw, match", [
        ({"t_span": (1.0, 0.0)}, "end > start"),
        ({"method": "Euler"}, "unknown method 'Euler'"),
        ({"rtol": -1.0}, "rtol must be positive"),
        ({"t_eval": [0.5, 0.2]}, "t_eval must be sorted"),
    ])
    def test_bad_arguments_raise_model_error(self, kw, match):
        args = {"t_span": (0.0, 1.0)}
        args.update(kw)
        with pytest.raises(ModelError, match=match):
            simulate(msd(), args.pop("t_span"), X0, **args)

    def test_bad_initial_state(self):
        with pytest.raises(ModelError, match="missing value"):
            simulate(msd(), (0, 1), {"p_m": 0.0})


class TestFailuresKeepWork:
    def failing_force(self, t_fail, kind):
        def value(t):
            if t > t_fail:
                if kind == "raise":
                    raise RuntimeError("sensor lost")
                return np.inf
            return 0.0
        return TimeFunction(value, lambda t: 0.0)

    @pytest.mark.parametrize("kind, status", [("raise", Status.CALLBACK_ERROR),
                                              ("inf", Status.NON_FINITE)])
    def test_partial_result_and_warning(self, kind, status):
        model = msd(self.failing_force(0.5, kind))
        with pytest.warns(IntegrationWarning, match="simulation failed"):
            r = simulate(model, (0.0, 1.0), X0, t_eval=np.linspace(0, 1, 101))
        assert not r.success and r.status is status
        assert 0.45 < r.failure_time <= 0.52
        assert r.t[-1] <= 0.5 and r.t.size >= 45
        assert np.allclose(r.state("q_k"), 0.1 * np.cos(2 * r.t), atol=1e-7)
        # the outputs derived from the states: one per output point, right before the end
        assert r.stored_energy.shape == r.t.shape
        assert np.allclose(r.stored_energy[:-1], 0.5 * r.state("p_m")[:-1] ** 2 +
                           0.5 * 4.0 * r.state("q_k")[:-1] ** 2, rtol=1e-12)
        if kind == "raise":
            assert "sensor lost" in r.message

    def test_raise_on_failure_carries_the_partial_result(self):
        model = msd(self.failing_force(0.3, "raise"))
        with pytest.raises(IntegrationError, match="sensor lost") as err:
            simulate(model, (0.0, 1.0), X0, raise_on_failure=True)
        assert err.value.result.t[-1] <= 0.3 and err.value.result.t.size > 10

    def test_step_size_failure(self):
        blow_up = TimeFunction(lambda t: 1.0 / (1.0 - t) ** 3, lambda t: 3.0 / (1.0 - t) ** 4)
        with pytest.warns(IntegrationWarning):
            r = simulate(msd(blow_up), (0.0, 2.0), X0, t_eval=np.linspace(0, 2, 201))
        assert not r.success
        assert r.status in (Status.STEP_FAILED, Status.NON_FINITE)
        assert 0.9 < r.failure_time <= 1.0
        assert r.t[-1] < 1.0


def test_singular_constraint_is_reported_with_its_time():
    """A constraint whose modulus vanishes: H4 = 0; strict evaluation refuses it."""
    model = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    x = model.initial_state({"p_m": [0.0, 0.0], "r": [0.0, 0.0]})   # |r| = 0: no direction
    with pytest.raises(SingularConstraintError, match=r"rank 0 < 1 at t = 0.25 s.*Se\*_rod") as err:
        model.evaluate(0.25, x, redundancy_ok=False)
    assert err.value.time == 0.25


def test_a_user_function_that_raises_once_is_reported():
    """A drive's value function that raises on one call only: the run stops with
    CALLBACK_ERROR and the message (the sparse path hands the exception on; it must not
    retry the call and carry on)."""
    from bondgraph import Se
    from elements.models import chain
    calls = [0]

    def value(t):
        calls[0] += 1
        if calls[0] == 40:
            raise RuntimeError("sensor glitch")
        return 0.0
    mech, q0 = chain(3)
    mm = mech.assemble(drives={"J2": Se("J2.drive", TimeFunction(value, lambda t: 0.0))})
    with pytest.warns(IntegrationWarning):
        r = mm.simulate((0.0, 1.0), q0, t_eval=np.linspace(0, 1, 11))
    assert r.raw.status is Status.CALLBACK_ERROR and "sensor glitch" in r.raw.message


def test_copies_of_a_result_keep_their_outputs_or_say_why_not():
    """dataclasses.replace of a pickled result keeps the outputs while its states are
    the same; with other states and no model it raises a clear error, not NaN."""
    import dataclasses
    import pickle
    from bondgraph import BondGraphError
    model = assemble(assign_causality(models.cartesian_pendulum(1.0, 1.0, 9.81)))
    x0 = model.initial_state({"p_m": [0.0, 0.0], "r": [0.6, -0.8]})
    r = simulate(model, (0.0, 0.5), x0, t_eval=np.linspace(0, 0.5, 6))
    r2 = pickle.loads(pickle.dumps(r))
    r3 = dataclasses.replace(r2, message="renamed")
    assert np.array_equal(r3.phi, r.phi) and np.array_equal(r3.stored_energy,
                                                            r.stored_energy)
    r4 = dataclasses.replace(r2, x=np.array(r2.x) * 2.0)
    with pytest.raises(BondGraphError, match="no model"):
        r4.bond_values
    # with its model, a copy with other states derives its own
    r5 = dataclasses.replace(r, x=np.array(r.x))
    assert np.allclose(r5.bond_values, r.bond_values, rtol=1e-12, atol=1e-12)


# -- failures of every method, the failure time, the budget, progress ------------------

def orifice_sqrt(cap=2e-3, c=1e-4):
    """A tank drained through an orifice of flow c sqrt(p) without Abs: past empty
    (T = 2 sqrt(V0 Cap) / c) the law is NaN."""
    import sympy
    from bondgraph import BondGraph, C, R, ZeroJunction
    bg = BondGraph("tank")
    bg.add(ZeroJunction("p"), C("tank", compliance=cap),
           R("orifice", flow_law=c * sympy.sqrt(sympy.Symbol("e"))))
    bg.connect("p", "tank")
    bg.connect("p", "orifice")
    return assemble(assign_causality(bg))


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_a_law_turning_nan_ends_every_method_in_a_status_with_its_results(method):
    """Radau and BDF raised scipy's bare ValueError (their LU of a Jacobian with NaN);
    LSODA reported a failure time past the end of its results. Every method now ends
    NON_FINITE naming the orifice, its results reach the failure time (the end of the
    last accepted step) and are Torricelli's before it. Tolerances: the run is at the
    default rtol 1e-8, so 1e-6 of V0 on the volume; the failure lies at the draining time
    T, which an accepted step passes by at most 1e-3 T (the volume there is below the
    solver's tolerance), except LSODA, which stops earlier (its last step jumped past T
    to a NaN state)."""
    cap, c, V0 = 2e-3, 1e-4, 0.05
    T = 2 * np.sqrt(V0 * cap) / c                                    # 200 s
    grid = np.linspace(0, 3 * T, 101)                                # 6 s apart
    with pytest.warns(IntegrationWarning, match="orifice"):
        r = simulate(orifice_sqrt(cap, c), (0, 3 * T), {"q_tank": V0}, t_eval=grid,
                     method=method)
    assert r.status is Status.NON_FINITE and "orifice" in r.message
    assert r.t[-1] <= r.failure_time < r.t[-1] + 6.0
    assert r.failure_time < T * (1 + 1e-3)
    if method != "LSODA":
        assert r.failure_time > T * (1 - 1e-3)
    exact = (np.sqrt(V0) - c * r.t / (2 * np.sqrt(cap))) ** 2
    assert np.abs(r.state("q_tank") - exact).max() < 1e-6 * V0


@pytest.mark.parametrize("method", ["RK45", "Radau", "LSODA"])
def test_the_failure_time_is_where_the_results_end(method):
    """A drive that raises past t = 0.5 s: the failure time is the end of the last
    accepted step (never past 0.5 s, never before the last output), and where the error
    was found at a trial stage beyond it the message says both times."""
    def value(t):
        if t > 0.5:
            raise RuntimeError("sensor unplugged")
        return 1.0
    bg = models.mass_spring_damper(1.0, 4.0, 0.5, TimeFunction(value, lambda t: 0.0))
    with pytest.warns(IntegrationWarning):
        r = simulate(assemble(assign_causality(bg)), (0, 1), X0,
                     t_eval=np.linspace(0, 1, 101), method=method)
    assert r.status is Status.CALLBACK_ERROR and "sensor unplugged" in r.message
    assert r.t[-1] <= r.failure_time <= 0.5
    if "trial stage" in r.message:
        assert f"last accepted step ends at t = {r.failure_time:.6g} s" in r.message


def test_a_step_budget_ends_in_its_own_status_with_the_result_so_far():
    r = simulate(msd(), (0.0, 100.0), X0, t_eval=np.linspace(0, 100, 1001), max_steps=50)
    assert r.status is Status.STEP_LIMIT and not r.success and r.n_steps == 51
    assert "max_steps = 50" in r.message
    assert 0 < r.t[-1] <= r.failure_time < 100.0
    assert np.allclose(r.state("q_k"), 0.1 * np.cos(2 * r.t), atol=1e-7)


def test_a_time_budget_ends_in_its_own_status_with_the_result_so_far():
    """A drive that takes 2 ms per call (a slow co-simulation): 0.3 s of wall-clock
    time allows some 150 calls, far fewer than 100 s of the run needs; the run stops
    within a step of the budget (0.1 s of slack for a loaded machine) with TIME_LIMIT."""
    import time

    def slow(t):
        time.sleep(2e-3)
        return 0.0
    model = assemble(assign_causality(models.mass_spring_damper(
        1.0, 4.0, 0.0, TimeFunction(slow, lambda t: 0.0))))
    start = time.monotonic()
    r = simulate(model, (0.0, 100.0), X0, t_eval=np.linspace(0, 100, 1001),
                 max_wall_time=0.3)
    took = time.monotonic() - start
    assert r.status is Status.TIME_LIMIT and "max_wall_time = 0.3" in r.message
    assert 0.3 <= took < 0.3 + 0.1 + 20 * 2e-3
    assert 0 < r.t[-1] <= r.failure_time < 100.0
    assert np.allclose(r.state("q_k"), 0.1 * np.cos(2 * r.t), atol=1e-7)


def test_progress_of_the_compiled_loop_comes_in_chunks_and_changes_nothing():
    """A mechanism whose steps run compiled: with a progress callable the loop still
    takes many steps per compiled call (it took one per call before), the times reported
    increase to the end, and the states are those of the run without progress, to the
    last bit (the same steps)."""
    from elements.models import chain
    mech, q0 = chain(5)
    mm = mech.assemble()
    seen = []
    kw = dict(t_eval=np.linspace(0, 10, 3), method="DOP853")
    plain = mm.simulate((0, 10.0), q0, **kw)
    shown = mm.simulate((0, 10.0), q0, progress=seen.append, **kw)
    raw = shown.raw
    assert raw.diagnostics["compiled_loop"] and raw.diagnostics["compiled_steps"] > 300
    assert np.array_equal(plain.raw.x, raw.x)
    assert len(seen) < raw.n_steps / 4 and seen[-1] == 10.0
    assert all(b > a for a, b in zip(seen, seen[1:]))


def test_run_progress_draws_a_bar_on_a_terminal_and_lines_in_a_log(monkeypatch):
    """Nothing for the first 2 s; then, on a terminal, a bar redrawn in place (at most
    10 times a second); elsewhere a line every 5 s."""
    import io
    from bondgraph import RunProgress
    from bondgraph import _progress
    clock = [100.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: clock[0])
    log = io.StringIO()
    p = RunProgress(0.0, 10.0, log)
    assert not p.interactive                          # (a StringIO is no terminal)
    for elapsed, t in [(1.0, 1.0), (2.5, 2.0), (4.0, 3.0), (7.6, 6.0), (8.0, 7.0)]:
        clock[0] = 100.0 + elapsed
        p(t)
    p.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("progress: t = 2 s of 10 s (20.0 %)")
    assert "t = 6 s of 10 s (60.0 %)" in lines[1] and "s left" in lines[1]
    # a span far beyond the run's pace: the time left in a few digits, not 300 of them
    # (a model file's t_end = 1e308 printed every digit)
    log = io.StringIO()
    clock[0] = 100.0
    p = RunProgress(0.0, 1e308, log)
    clock[0] = 110.0
    p(1e4)
    assert log.getvalue().strip().endswith("about 1e+305 s left"), log.getvalue()
    bar = io.StringIO()
    clock[0] = 100.0
    p = RunProgress(0.0, 10.0, bar, interactive=True)
    for elapsed in (0.5, 2.1, 2.15, 2.3):
        clock[0] = 100.0 + elapsed
        p(elapsed)
    p.close()
    text = bar.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and "#" in text


def test_an_output_point_that_cannot_be_evaluated_is_said_not_silent():
    """A successful run whose model cannot be evaluated at an output time the solver
    never stepped on (here a drive that raises exactly at t = 0.55 s, an output point
    between steps): the states are there, the derived outputs at that point are NaN,
    and reading them warns naming the time and the cause (it was silent: NaN reactions
    under SUCCESS). The other points' reactions are finite."""
    from bondgraph import Se
    from elements.models import chain

    def value(t):
        if t == 0.55:
            raise RuntimeError("sensor glitch")
        return 0.0
    mech, q0 = chain(2)
    mm = mech.assemble(drives={"J2": Se("J2.drive", TimeFunction(value, lambda t: 0.0))})
    grid = np.linspace(0.0, 1.0, 21)
    r = mm.simulate((0.0, 1.0), q0, t_eval=grid)
    assert r.raw.success and grid[11] == 0.55
    with pytest.warns(IntegrationWarning, match=r"1 of 21 output time\(s\) \(first t = "
                                                r"0\.55 s: RuntimeError: sensor glitch"):
        f = r.joint("J1").force
    assert np.isnan(f[:, 11]).all() and np.isfinite(np.delete(f, 11, axis=1)).all()


def test_a_run_with_stops_sums_its_stretches_diagnostics_and_says_failed_points():
    """A run with joint stops is several ordinary runs joined at its impacts: its
    diagnostics count the evaluations of all of them (they counted the last stretch's
    only), and an output point where a stretch's model cannot be evaluated warns as in
    a plain run (it was NaN under SUCCESS)."""
    from bondgraph import Se
    from elements.models import chain

    def value(t):
        if t == 1.5:
            raise RuntimeError("sensor glitch")
        return 0.0
    mech, _ = chain(2)
    mech.joint("J1").add_limit(-0.2, 0.2, restitution=0.5)
    mm = mech.assemble(drives={"J2": Se("J2.drive", TimeFunction(value, lambda t: 0.0))})
    r = mm.simulate((0.0, 2.0), {"J1": 0.0}, {"J1": 3.0}, t_eval=np.linspace(0, 2, 21))
    assert r.raw.success and len(r.switches) >= 3
    assert r.raw.diagnostics["rhs_evaluations"] == r.raw.nfev
    with pytest.warns(IntegrationWarning, match=r"first t = 1\.5 s: RuntimeError"):
        f = r.joint("J1").force
    assert np.isnan(f[:, 15]).all() and np.isfinite(np.delete(f, 15, axis=1)).all()


def test_an_event_at_a_break_is_found_from_the_break():
    """A run restarts one float after a break (so that its first stage sees the value
    after a jump); an event whose value changes sign in that float (Heaviside of the
    same argument: 1/2 at the break) is searched from the break itself and found there,
    to the event search's 1e-14, on the compiled loop and off it (the search raised "f(a) and f(b) must have
    different signs" when it started one float late)."""
    import sympy
    t = sympy.Symbol("t")
    m = assemble(assign_causality(models.mass_spring_damper(1, 4, 0.5,
                                                            sympy.Heaviside(t - 0.5))))
    for compiled in (True, False):
        r = simulate(m, (0, 1), {"p_m": 0, "q_k": 0}, compiled_loop=compiled,
                     events=[lambda tt, x: np.heaviside(tt - 0.5, 0.5) - 0.75])
        assert r.success, r.message
        assert len(r.t_events[0]) == 1 and abs(r.t_events[0][0] - 0.5) <= 1e-13
