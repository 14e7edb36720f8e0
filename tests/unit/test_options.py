"""A run's options as objects (bondgraph.options): the same run as the keywords, the
function's own defaults for fields not given, an option given twice refused, events
against the closed form of a harmonic oscillator."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bondgraph import (
    DEFAULT, Budget, Event, ModelError, SaveAt, Solver, assemble, assign_causality, models,
    simulate,
)
from elements import Inertia, Mechanism, RevoluteJoint, RigidBody

X0 = {"p_m": 0.0, "q_k": 0.1}


@pytest.fixture(scope="module")
def oscillator():
    """m = 1 kg, k = 4 N/m: q_k(t) = 0.1 cos(2 t)."""
    return assemble(assign_causality(models.mass_spring_damper(m=1.0, k=4.0, b=0.0,
                                                               force=0.0)))


@pytest.fixture(scope="module")
def pendulum():
    mech = Mechanism("pendulum", gravity=(0.0, -9.81, 0.0))
    rod = mech.add_body(RigidBody("rod", 1.2, Inertia.rod(1.2, 0.6, axis=1, thin=1e-4)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rod, child_point=(0.0, 0.3, 0.0),
                                 axis=(0.0, 0.0, 1.0)))
    return mech.assemble()


def test_objects_give_the_run_the_keywords_give(oscillator):
    grid = [0.0, 0.25, 0.5, 1.0]
    by_keywords = simulate(oscillator, (0.0, 1.0), X0, t_eval=grid, method="DOP853",
                           rtol=1e-10, max_step=0.05, dense_output=True)
    by_objects = simulate(oscillator, (0.0, 1.0), X0,
                          solver=Solver(method="DOP853", rtol=1e-10, max_step=0.05),
                          save=SaveAt(t=grid, dense=True))
    # the same solver, tolerances and steps: bitwise the same states and work
    assert by_objects.nfev == by_keywords.nfev
    assert np.array_equal(by_objects.x, by_keywords.x)
    assert np.array_equal(by_objects.t, grid)
    assert by_objects.sol is not None
    # and the motion is the closed form (rtol 1e-10; atol a 1e-12 fraction of the scales)
    assert np.allclose(by_objects.state("q_k"), 0.1 * np.cos(2 * np.asarray(grid)),
                       atol=1e-9)


def test_a_field_not_given_keeps_the_functions_own_default(oscillator, pendulum):
    # simulate's default method is RK45 at rtol 1e-8; Solver(max_step=...) keeps both
    plain = simulate(oscillator, (0.0, 1.0), X0, max_step=0.1)
    via = simulate(oscillator, (0.0, 1.0), X0, solver=Solver(max_step=0.1))
    assert via.nfev == plain.nfev and np.array_equal(via.x, plain.x)
    # a mechanism's default is DOP853 at rtol = atol = 1e-9 with 501 points
    q = {"J1": 0.5}
    plain = pendulum.simulate((0.0, 0.5), q, rtol=1e-7)
    via = pendulum.simulate((0.0, 0.5), q, solver=Solver(rtol=1e-7))
    assert via.raw.nfev == plain.raw.nfev and len(via.t) == 501
    assert np.array_equal(via.raw.x, plain.raw.x)
    differs = pendulum.simulate((0.0, 0.5), q, solver=Solver(rtol=1e-7, method="RK45"))
    assert differs.raw.nfev != plain.raw.nfev          # (the check can fail)


def test_an_option_given_twice_or_a_wrong_object_is_refused(oscillator, pendulum):
    with pytest.raises(ModelError, match=r"rtol given twice.*rtol=1e-06.*Solver\(rtol=1e-10\)"):
        simulate(oscillator, (0.0, 1.0), X0, rtol=1e-6, solver=Solver(rtol=1e-10))
    with pytest.raises(ModelError, match=r"t_eval given twice"):
        pendulum.simulate((0.0, 1.0), {"J1": 0.5}, t_eval=[0.0, 1.0],
                          save=SaveAt(t=[0.0, 0.5, 1.0]))
    with pytest.raises(ModelError, match=r"solver= takes a bondgraph.Solver"):
        simulate(oscillator, (0.0, 1.0), X0, solver={"rtol": 1e-6})
    with pytest.raises(ModelError, match=r"budget= takes a bondgraph.Budget"):
        pendulum.simulate((0.0, 1.0), {"J1": 0.5}, budget=Solver(rtol=1e-6))
    # a keyword at its default and the object: the object's value (not a conflict)
    res = simulate(oscillator, (0.0, 1.0), X0, rtol=1e-8, solver=Solver(rtol=1e-6))
    assert res.nfev == simulate(oscillator, (0.0, 1.0), X0, rtol=1e-6).nfev
    # a bad value in an object is named as the keyword would be
    with pytest.raises(ModelError, match="rtol"):
        simulate(oscillator, (0.0, 1.0), X0, solver=Solver(rtol=-1.0))


def test_events_as_objects_against_the_closed_form(oscillator):
    # q_k = 0.1 cos(2 t) falls through zero at pi/4 and rises through it at 3 pi/4
    falling = Event(lambda t, x: x[1], terminal=True, direction=-1, name="falling")
    rising = Event(lambda t, x: x[1], terminal=True, direction=+1, name="rising")
    fall = simulate(oscillator, (0.0, 3.0), X0, events=[falling], rtol=1e-10)
    rise = simulate(oscillator, (0.0, 3.0), X0, events=[rising], rtol=1e-10)
    assert fall.status.name == "EVENT" and rise.status.name == "EVENT"
    # event location to the solver's accuracy (rtol 1e-10 on a 0.1 m amplitude)
    assert abs(fall.t[-1] - np.pi / 4) < 1e-8
    assert abs(rise.t[-1] - 3 * np.pi / 4) < 1e-8
    passing = Event(lambda t, x: x[1], name="passing")          # not terminal
    assert simulate(oscillator, (0.0, 3.0), X0, events=[passing]).status.name == "SUCCESS"
    assert falling.label == "falling" and Event(np.sin).label == "sin"
    with pytest.raises(ModelError, match="condition must be a function"):
        Event(0.5)
    with pytest.raises(ModelError, match="Event falling: direction must be a number"):
        Event(lambda t, x: x[1], direction="down", name="falling")
    with pytest.raises(ModelError, match="terminal must be True or False"):
        Event(np.sin, terminal="yes")


def test_a_budget_object_stops_the_run_and_keeps_it(oscillator):
    with pytest.warns(Warning, match="max_steps = 3"):
        res = simulate(oscillator, (0.0, 10.0), X0, budget=Budget(max_steps=3),
                       save=SaveAt(t=np.linspace(0.0, 10.0, 10_001)))
    assert res.status.name == "STEP_LIMIT" and not res.success
    assert 0.0 < res.t[-1] < 1.0              # three steps of the first second, kept


def test_objects_print_what_was_given_and_survive_pickling():
    s = Solver(method="Radau", rtol=1e-6)
    assert repr(s) == "Solver(method='Radau', rtol=1e-06)"
    assert s.atol is DEFAULT and repr(SaveAt()) == "SaveAt()"
    assert s.keywords() == {"method": "Radau", "rtol": 1e-6}
    assert SaveAt(t=[0.0, 1.0], dense=True).keywords() == {"t_eval": [0.0, 1.0],
                                                           "dense_output": True}
    back = pickle.loads(pickle.dumps(s))                # studies send them to workers
    assert back == s and back.atol is DEFAULT
