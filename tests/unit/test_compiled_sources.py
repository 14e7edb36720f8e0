"""State-dependent sources with a compiled kernel in the compiled Runge-Kutta loop
(bondgraph.primitives.sources.CompiledSource: the contact wrenches, the compliant
stops) and events checked on its accepted steps (``scan_steps``: the tunnelling watch).

The same run twice, ``compiled_loop=True`` and ``False``: the compiled loop calls the
same numba kernels as the Python path's sources (``elements.contact.compiled.wrenches``
through ``wrench_source``; the stops' formula written out the same way) and takes the
same steps with the same tableau and controller, so the runs agree to rounding: the
same steps, evaluations and output times, the states to RTOL_EQUAL of each state's
largest magnitude (the only differences are the order of sums in the step's stage
combination, see bondgraph._fastrk; 1e-12 leaves a margin of 1e3-1e4 over the
1e-16-1e-15 seen, while a wrong compiled source (one force component's sign flipped)
moves the states by far more: checked below).
"""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph.fastlu import enabled
from elements import Inertia, Mechanism, RigidBody
from elements.contact import Box, ContactLaw, Plane, Sphere
from elements.joints.kinds import RevoluteJoint

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled "
                                                      "loop")

RTOL_EQUAL = 1e-12
G = 9.81


def _swing(stop: bool = False) -> Mechanism:
    """A rod (0.6 m, 1 kg) hinged 0.648 m above a floor with a ball (r 5 cm) at its tip:
    at the bottom of its swing the ball dips 2 mm into the floor and scrapes it
    (friction 0.5, regularised below 1 cm/s so that the run is short; damping);
    ``stop``: no friction, and a compliant stop at -0.2 rad that it hits beyond the
    floor."""
    mech = Mechanism("swing", gravity=(0.0, 0.0, -G))
    m, l = 1.0, 0.6
    c = m * l * l / 12.0
    rod = mech.add_body(RigidBody("rod", m, Inertia.principal(c, c, c)))
    joint = mech.add_joint(RevoluteJoint("J1", mech.ground, rod,
                                         parent_point=(0.0, 0.0, 0.648),
                                         child_point=(0.0, 0.0, l / 2),
                                         axis=(0.0, 1.0, 0.0)))
    if stop:
        joint.add_limit(lower=-0.2, stiffness=200.0, damping=0.5)
    mech.add_shape(Plane("floor"))
    mech.add_shape(Sphere("ball", "rod", 0.05, position=(0.0, 0.0, -l / 2)),
                   ContactLaw(stiffness=1e5, damping=0.5, friction=0.0 if stop else 0.5,
                              slip_velocity=0.01))
    return mech


def _runs(mech, span, **kw):
    mm = mech.assemble()
    out = []
    for compiled in (False, True):
        out.append(mm.simulate((0.0, span), compiled_loop=compiled, rtol=1e-6, atol=1e-8,
                               t_eval=np.linspace(0.0, span, 41), **kw).raw)
    return out


def _same(a, b, rtol=RTOL_EQUAL) -> bool:
    """Arrays (states in rows) equal to rtol times each row's largest magnitude."""
    scale = np.maximum(np.abs(a).max(axis=-1, keepdims=True), 1e-300)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= rtol * scale))


def _assert_same_run(ref, fast):
    assert ref.status == fast.status
    assert fast.diagnostics["compiled_loop"], fast.diagnostics["compiled_loop_reason"]
    assert not ref.diagnostics["compiled_loop"]
    assert fast.diagnostics["compiled_steps"] >= 0.8 * fast.n_steps
    assert fast.n_steps == ref.n_steps and fast.nfev == ref.nfev
    np.testing.assert_array_equal(fast.t, ref.t)
    assert _same(ref.x, fast.x), np.abs(ref.x - fast.x).max()


def test_a_ball_scraping_the_floor_takes_the_same_steps_compiled():
    ref, fast = _runs(_swing(), 0.6, q={"J1": 0.6})
    assert ref.success
    assert abs(np.ravel(ref.state("J1.coord"))).min() < 0.1     # (it reached the floor)
    _assert_same_run(ref, fast)


def test_compliant_stops_are_compiled_sources_too():
    ref, fast = _runs(_swing(stop=True), 0.8, q={"J1": 0.6})
    assert ref.success
    q = np.ravel(ref.state("J1.coord"))
    assert q.min() < -0.2                     # (the stop was hit)
    _assert_same_run(ref, fast)


def _flip_the_floors_push(monkeypatch):
    """Make every contact wrench's compiled kernel flip the sign of one force
    component (the rod's elastic force along z: the floor's push)."""
    from numba import njit, types

    import elements.contact.compiled as cc
    from elements.contact import dynamics
    good = cc.wrench_source
    _V, _I = types.float64[::1], types.int64[::1]

    @njit(types.void(types.float64, _V, _I, _V, _V))
    def flipped(t, x, ints, flts, out):
        good(t, x, ints, flts, out)
        out[2] = -out[2]

    original = dynamics.BoundContacts.compiled_source

    def wrong(self, k, part):
        c = original(self, k, part)
        return None if c is None else type(c)(c.family, lambda: flipped, c.pack,
                                               c.entries)
    monkeypatch.setattr(dynamics.BoundContacts, "compiled_source", wrong)


def _kernel_against_laws(model, states):
    """The largest difference, over ``states``, between the compiled sources' values
    as the right-hand side's Python path computes them (one kernel call per family,
    ``model.source_values``) and the sources' own value functions, relative to the
    largest value; and that largest value."""
    from bondgraph.element import StateView
    laws = [(n, sl, law) for n, sl, law in model.source_plan()[2]
            if law.compiled is not None]
    assert laws
    worst, scale = 0.0, 0.0
    for x in states:
        s = StateView(x, model.state_slices)
        U1, _ = model.source_values(0.0, s)
        for _, sl, law in laws:
            own = np.asarray(law.value(0.0, s), dtype=float)
            worst = max(worst, float(np.abs(U1[sl] - own).max()))
            scale = max(scale, float(np.abs(own).max()))
    return worst / scale, scale


def test_the_python_path_computes_compiled_sources_with_their_kernels(monkeypatch):
    """Implicit methods (and event runs, the dense path) evaluate the right-hand side
    from Python; there a compiled source is filled by its family's kernel (one call per
    family), not by its Python function (36 calls a state on gymnasium's ant, half of
    a Radau run's time), and the functions are called only at the start. The values:
    those of the sources' own functions, at 41 states of a run that scrapes the floor
    (RTOL_EQUAL of the largest force)."""
    from elements.contact import dynamics
    mm = _swing().assemble()
    calls = []
    original = dynamics.BoundContacts.wrench

    def counted(self, s):
        calls.append(1)
        return original(self, s)
    monkeypatch.setattr(dynamics.BoundContacts, "wrench", counted)
    res = mm.simulate((0.0, 0.6), q={"J1": 0.6}, method="Radau", rtol=1e-6, atol=1e-8,
                      t_eval=np.linspace(0.0, 0.6, 41)).raw
    assert res.success
    n_laws = sum(law.compiled is not None for _, _, law in mm.model.source_plan()[2])
    assert n_laws == 4 and res.nfev > 500
    # (only at the start: the tolerances' scales read each source twice, the first
    # evaluation's check once; before, every evaluation called each)
    assert len(calls) <= 3 * n_laws
    monkeypatch.setattr(dynamics.BoundContacts, "wrench", original)
    worst, scale = _kernel_against_laws(mm.model, res.x.T)
    assert scale > 1.0                         # (in contact: the floor pushes)
    assert worst <= RTOL_EQUAL


def test_a_wrong_compiled_source_is_caught(monkeypatch):
    """A compiled contact source with the sign of one force component flipped: the
    first evaluation's check names it where the run starts in contact; the comparison
    above sees it along a run that reaches the floor."""
    from bondgraph import ModelError
    ref = _swing().assemble().simulate((0.0, 0.6), q={"J1": 0.6}, rtol=1e-6, atol=1e-8,
                                       t_eval=np.linspace(0.0, 0.6, 41)).raw
    _flip_the_floors_push(monkeypatch)
    mm = _swing().assemble()
    with pytest.raises(ModelError, match=r"source 'rod\.contact\.elastic_force': its "
                                         r"compiled kernel gives"):
        mm.simulate((0.0, 0.1), q={"J1": 0.0}, method="Radau")
    worst, _ = _kernel_against_laws(_swing().assemble().model, ref.x.T)
    assert worst > 1.0                          # (the push, reversed: twice its size)


def _shot(v, compiled, **kw):
    """A pellet (5 mm, 10 g) at ``v`` (m/s) along x, no gravity, at a plate 2 mm thick
    0.3 m ahead, beside a pendulum (its joint: the constraints that the compiled
    evaluation needs), which it also passes: tests/validation/test_contact.py's
    _pellet with a plain (unswitched) pendulum."""
    mech = Mechanism("shot", gravity=(0, 0, 0))
    c = 1.0 * 0.36 / 12.0
    rod = mech.add_body(RigidBody("rod", 1.0, Inertia.principal(c, c, c)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rod, parent_point=(0.0, 0.5, 0.0),
                                 child_point=(0.0, 0.3, 0.0), axis=(0.0, 0.0, 1.0)))
    m, r = 0.01, 0.005
    mech.add_body(RigidBody("pellet", m, Inertia.principal(*[0.4 * m * r * r] * 3)))
    mech.add_shape(Box("plate", "ground", (0.001, 0.2, 0.2), position=(0.3, 0, 0)),
                   ContactLaw(stiffness=1e8, damping=0.0, friction=0.0))
    mech.add_shape(Sphere("ball", "pellet", r), ContactLaw(stiffness=1e8, damping=0.0,
                                                            friction=0.0))
    T = 0.6 / v
    return mech.assemble().simulate(
        (0.0, T), q={"J1": 0.3}, free={"pellet": {"position": [0, 0, 0],
                                                 "velocity": [v, 0, 0]}},
        t_eval=np.linspace(0, T, 7), compiled_loop=compiled, **kw).raw


def test_the_tunnelling_watch_ends_a_compiled_run_as_the_scipy_path_does():
    """The watch is checked on the compiled loop's accepted steps: the run fails at the
    same step, with the same message (shapes, speed, max_step), keeping the results up
    to it; with the max_step it suggests both runs see the bounce, the same."""
    from bondgraph import IntegrationWarning
    runs = []
    for compiled in (False, True):
        with pytest.warns(IntegrationWarning, match="tunnelling"):
            runs.append(_shot(100.0, compiled))
    ref, fast = runs
    assert fast.diagnostics["compiled_loop"], fast.diagnostics["compiled_loop_reason"]
    assert fast.diagnostics["compiled_steps"] > 0
    assert fast.status.name == ref.status.name == "STEP_FAILED"
    assert "shape 'ball' entered shape 'plate'" in fast.message
    assert fast.message == ref.message
    assert fast.failure_time == ref.failure_time and fast.failure_time < 0.3 / 100.0 * 1.01
    assert fast.n_steps == ref.n_steps and fast.nfev == ref.nfev
    np.testing.assert_array_equal(fast.t, ref.t)
    assert _same(ref.x, fast.x)
    ref, fast = (_shot(100.0, c, max_step=1e-5) for c in (False, True))
    assert ref.success
    _assert_same_run(ref, fast)


def test_events_on_the_compiled_loops_steps_are_found_as_on_the_scipy_path(monkeypatch):
    """Events marked ``scan_steps`` are evaluated at the ends of the compiled loop's
    accepted steps; where one crosses in the middle of a call's steps the loop is cut
    back to that step: the crossings (a non-terminal one, then a terminal one) are
    located at the same times, and the run ends at the same step, as on the scipy path
    (one output interval: the loop's calls are long)."""
    mm = _swing().assemble()

    def passing(t, x):                         # J1 through 0.4 rad
        return x[mm.model.state_slices["J1.coord"]][0] - 0.4

    def down(t, x):                            # J1 through 0.06 rad (the ball in the
        return x[mm.model.state_slices["J1.coord"]][0] - 0.06      # floor): the end
    down.terminal, down.direction = True, -1
    from bondgraph._events import EventTracker
    scan, cuts = EventTracker.scan, []

    def spy(self, ts, ys):                     # (the cuts inside a call's steps)
        got = scan(self, ts, ys)
        if got is not None and got < len(ts) - 1:
            cuts.append(got)
        return got
    monkeypatch.setattr(EventTracker, "scan", spy)
    runs = []
    for compiled in (False, True):
        for e in (passing, down):
            e.scan_steps = compiled
        runs.append(mm.simulate((0.0, 0.6), q={"J1": 0.6}, t_eval=[0.0, 0.6], rtol=1e-6,
                                atol=1e-8, events=[passing, down]).raw)
    ref, fast = runs
    assert fast.diagnostics["compiled_loop"] and not ref.diagnostics["compiled_loop"]
    assert ref.status.name == fast.status.name == "EVENT"
    assert len(ref.t_events[0]) == 1 and len(ref.t_events[1]) == 1
    assert ref.t_events[0][0] < ref.t_events[1][0]
    for a, b in zip(fast.t_events, ref.t_events, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(cuts) == 2                     # (both found inside a call's steps)
    assert fast.n_steps == ref.n_steps and fast.nfev == ref.nfev
    np.testing.assert_array_equal(fast.t, ref.t)
    assert _same(ref.x, fast.x)


def test_the_first_evaluations_check_compares_values_not_nans():
    """The check of a kernel against its source's function (CompiledFamilies' first
    fill): values within 1e-9 of the largest finite one agree; NaN where both give NaN
    agrees (a degenerate state is the evaluation's to handle); NaN against a number, or
    a difference of 5 % of the largest, is named."""
    from bondgraph import ModelError
    from bondgraph.element import StateView
    from bondgraph.primitives.sources import CompiledFamilies, SourceLaw

    def fill(kernel_values, function_values):
        kv = np.array(kernel_values, dtype=float)

        def kernel(t, x, ints, flts, out):
            out[:] = kv
        law = SourceLaw(lambda t, s: np.array(function_values, dtype=float), None, True)
        n = kv.size
        fam = CompiledFamilies((kernel,), np.array([[0, 0], [0, 0], [0, n]]),
                               np.zeros(0, dtype=np.int64), np.zeros(0),
                               np.arange(n), np.arange(n), np.zeros(0, dtype=np.int64),
                               np.zeros(0, dtype=np.int64), laws=(("S", slice(0, n), law),))
        U1 = np.zeros(n)
        fam.fill(0.0, StateView(np.zeros(1), {}), U1)
        return U1

    assert np.isnan(fill([1.0, np.nan], [1.0, np.nan])[1])
    assert fill([1.0, 2.0], [1.0, 2.0 + 1e-12])[1] == 2.0
    for kernel_values, function_values in (([1.0, np.nan], [1.0, 2.0]),
                                           ([1.0, 2.0], [1.0, 2.1])):
        with pytest.raises(ModelError, match="source 'S': its compiled kernel gives"):
            fill(kernel_values, function_values)
