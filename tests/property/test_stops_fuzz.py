"""Property test (hypothesis): a joint with impact stops never leaves the admissible side.

A pendulum (a revolute joint under gravity) or a slider (a prismatic joint down an
incline) with random stops, restitutions, rest speeds, actuators (constant or a sine),
friction and initial states, over long spans (20 to 60 s: hundreds of impacts, bounces
that accumulate, stick-slip against a stop). The coordinate stays within its stops by
:data:`elements.hybrid.STOP_TOLERANCE` at every output point (a grid of 2001, finer
than the bounces that matter), or the run ends in a named failure (not success, a
message): it never says SUCCESS past a stop. A successful run's energy ledger balances
(impacts, friction and dampers counted as dissipated): a missed switch (friction
pulling the wrong way, a stop passed through) breaks it.

Work per case is bounded by max_switches (an event storm is a named failure). The
default profile's 12 cases take about a minute; ``--runslow`` runs 150.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from bondgraph import IntegrationWarning, TimeFunction
from elements import Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody
from elements.hybrid import STOP_TOLERANCE

G = 9.81
MAX_SWITCHES = 1500


@st.composite
def stopped_joints(draw):
    """(mechanism, joint name, (lower, upper), q0, qd0, t_end) of a random case."""
    kind = draw(st.sampled_from(["pendulum", "slider"]))
    mech = Mechanism("stops", gravity=(0.0, 0.0, -G))
    body = mech.add_body(RigidBody("b", draw(st.floats(0.2, 3.0)),
                                   Inertia.principal(0.01, 0.01, 0.01)))
    if kind == "pendulum":
        j = mech.add_joint(RevoluteJoint("J", mech.ground, body, axis=(0, 1, 0),
                                         child_point=(0, 0, draw(st.floats(0.1, 1.0)))))
        span = (0.05, 2.5)                                     # rad
    else:
        a = draw(st.floats(0.0, 0.8))                          # incline (rad)
        j = mech.add_joint(PrismaticJoint("J", mech.ground, body,
                                          axis=(math.cos(a), 0.0, -math.sin(a))))
        span = (0.05, 1.0)                                     # m
    lower = -draw(st.floats(*span)) if draw(st.integers(0, 3)) else None
    upper = draw(st.floats(*span)) if lower is None or draw(st.integers(0, 3)) else None
    e = draw(st.one_of(st.sampled_from([0.0, 0.5, 0.9, 0.95, 1.0]), st.floats(0.0, 1.0)))
    rest = draw(st.sampled_from([0.0, 1e-6, 1e-3, 0.05]))
    j.add_limit(lower, upper, restitution=e, rest_speed=rest)
    if draw(st.booleans()):
        j.add_damper(draw(st.floats(0.0, 0.5)))
    effort = draw(st.floats(-8.0, 8.0))
    if draw(st.booleans()):
        amp, w = draw(st.floats(0.0, 8.0)), draw(st.floats(0.2, 6.0))
        j.add_actuator(TimeFunction(lambda t, a0=effort, a=amp, w=w: a0 + a * np.sin(w * t)))
    elif effort:
        j.add_actuator(effort)
    if draw(st.booleans()):
        c = draw(st.floats(0.01, 3.0))
        j.add_friction(c, static=c * draw(st.floats(1.0, 1.5)))
    lo = -span[1] if lower is None else lower
    hi = span[1] if upper is None else upper
    q0 = min(max(lo + (hi - lo) * draw(st.floats(0.0, 1.0)), lo), hi)   # (on a stop too)
    qd0 = draw(st.floats(-4.0, 4.0))
    return mech, (lower, upper), q0, qd0, draw(st.sampled_from([20.0, 60.0]))


def run_case(case):
    mech, (lower, upper), q0, qd0, t_end = case
    grid = np.linspace(0.0, t_end, 2001)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)      # stiffness, failures
        res = mech.assemble().simulate((0.0, t_end), q={"J": q0}, qd={"J": qd0},
                                       t_eval=grid, max_switches=MAX_SWITCHES)
    raw = res.raw
    q = res.joint("J").q
    past = np.zeros_like(q)
    if upper is not None:
        past = np.maximum(past, q - upper)
    if lower is not None:
        past = np.maximum(past, lower - q)
    if raw.success:
        assert raw.t[-1] == t_end
        assert past.max() <= STOP_TOLERANCE, (
            f"SUCCESS with J {past.max():.3g} past a stop at t = {res.t[past.argmax()]:.6g}")
        drift = res.energy.relative_drift
        assert drift < 1e-6, f"energy ledger off by {drift:.3g} (relative)"
    else:
        assert raw.message and raw.status.name in ("EVENT_STORM", "STEP_FAILED"), \
            (raw.status, raw.message)
        # up to its failure it stayed within the stops (the point past one that ends a
        # STEP_FAILED run is the failure itself)
        assert past[:-1].max(initial=0.0) <= STOP_TOLERANCE
        if past[-1] > STOP_TOLERANCE:
            assert "'J'" in raw.message and "stop" in raw.message


PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=12, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=HEALTH)
@given(stopped_joints())
def test_a_joint_never_leaves_its_stops(case):
    run_case(case)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, phases=PHASES, suppress_health_check=HEALTH)
@given(stopped_joints())
def test_a_joint_never_leaves_its_stops_slow(case):
    run_case(case)
