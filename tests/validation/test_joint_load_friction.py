"""Joint friction that follows the joint's transverse reaction (mu N) against closed
forms, a second formulation and the energy ledger (elements/running/joint_load.py).

- A block on a prismatic joint on an incline, friction mu times the normal reaction
  (no constant part), released at rest: it slides with a = g (sin a - mu cos a) when
  tan a > mu_s, and stays stuck otherwise, held by m g sin a; the friction force
  while sliding is mu m g cos a.
- A wheel on a horizontal axle carrying its weight: friction torque c + mu r m g, so it
  spins down at the rate (c + mu r m g) / I and sticks at t* = w0 I / (c + mu r m g);
  the friction's work equals the kinetic energy lost (the energy ledger).
- A pendulum whose bearing friction changes its own load (the reaction depends on the
  angular acceleration, which depends on the friction): the joint's angle against an
  independent ODE that solves I q'' = -m g l sin q - s (mu r |m (a_G - g)|) for q'' at
  each state (the loop that the mechanism solves through its bond graph).
- The same pendulum with mu r large enough that the friction changes its load by more
  than itself: the run ends with a named failure, not SUCCESS.

Tolerances: the closed forms are polynomials the integrator (DOP853 at rtol 1e-10,
atol 1e-12) reproduces to ~1e-12; the switch times are located to 1e-14 s; the loop is
solved to 1e-12 of the friction (LOOP_RTOL). 1e-8 leaves room for the steps across a
switch; each test also shows that mu off by 1 % misses by far more than the tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from bondgraph import IntegrationWarning, ModelError, TimeFunction
from bondgraph.results import Status
from elements import (
    Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody, UniversalJoint,
)

G = 9.81
RUN = dict(rtol=1e-10, atol=1e-12)


def incline(alpha, mu, mu_s, m=2.0):
    mech = Mechanism("incline", gravity=(0, 0, -G))
    block = mech.add_body(RigidBody("block", m, Inertia.principal(0.1, 0.1, 0.1)))
    downhill = (math.cos(alpha), 0.0, -math.sin(alpha))
    j = mech.add_joint(PrismaticJoint("J", mech.ground, block, axis=downhill))
    j.add_friction(0.0, mu=mu, mu_static=mu_s)
    return mech


@pytest.mark.parametrize("alpha", [0.12, 0.3], ids=["tan<mu_s", "tan>mu_s"])
def test_block_on_an_incline_with_friction_proportional_to_the_normal_force(alpha):
    mu, mu_s, m = 0.15, 0.2, 2.0
    t = np.linspace(0.0, 1.0, 21)
    res = incline(alpha, mu, mu_s, m).assemble().simulate((0, 1), q={"J": 0.0},
                                                          qd={"J": 0.0}, t_eval=t, **RUN)
    assert res.success, res.message
    j = res.joint("J")
    N = m * G * math.cos(alpha)
    # the reaction the friction follows is the joint's normal force, m g cos a
    assert np.allclose(np.hypot(*j.force_joint[:2]), N, rtol=1e-10)

    def a(mu_):
        return G * (math.sin(alpha) - mu_ * math.cos(alpha))

    if math.tan(alpha) > mu_s:
        assert [s.what for s in res.switches] == ["slide +"]
        assert np.abs(j.q - 0.5 * a(mu) * t ** 2).max() < 1e-8
        assert np.abs(j.friction + mu * N).max() < 1e-8
        # the ledger: friction took mu N times the distance slid
        assert abs(res.energy.dissipated["J.friction"][-1] - mu * N * j.q[-1]) < 1e-8
        assert res.energy.relative_drift < 1e-8
        # mu off by 1 %: the closed form misses by 1e-3 m, far beyond the tolerance
        assert np.abs(j.q - 0.5 * a(1.01 * mu) * t ** 2).max() > 1e-4
    else:
        assert [s.what for s in res.switches] == ["stick"]
        assert np.abs(j.q).max() < 1e-12
        assert np.abs(j.friction + m * G * math.sin(alpha)).max() < 1e-8
        # the static limit it sticks within: a mu_s 1 % below tan a would let go
        assert m * G * math.sin(alpha) <= mu_s * N


@pytest.mark.parametrize("mu, mu_s", [(0.2, 0.35), (0.1, 0.2)], ids=["sticks", "slides"])
def test_block_thrown_up_the_incline_halts_then_sticks_or_slides_back(mu, mu_s):
    """The halt compares the holding effort m g sin a with the static level mu_s m g
    cos a under the normal reaction of that instant; the piecewise closed form of
    test_limits_friction.py (where the levels were constant efforts mu N)."""
    from test_limits_friction import incline_closed_form
    v0, alpha = 1.0, 0.3
    t = np.linspace(0.0, 1.0, 41)
    res = incline(alpha, mu, mu_s).assemble().simulate((0, 1), q={"J": 0.0},
                                                        qd={"J": -v0}, t_eval=t, **RUN)
    assert res.success, res.message
    q, ts, _ = incline_closed_form(t, v0, mu, mu_s, alpha)
    sticks = mu_s * math.cos(alpha) >= math.sin(alpha)
    assert [s.what for s in res.switches] == ["stick" if sticks else "slide +"]
    assert abs(res.switches[0].t - ts) < 1e-10
    assert np.abs(res.joint("J").q - q).max() < 1e-8
    assert res.energy.relative_drift < 1e-8


def wheel(mu, r, coulomb=0.0, m=3.0, I=0.05):
    mech = Mechanism("wheel", gravity=(0, 0, -G))
    w = mech.add_body(RigidBody("wheel", m, Inertia.principal(0.04, I, 0.04)))
    j = mech.add_joint(RevoluteJoint("axle", mech.ground, w, axis=(0, 1, 0)))
    j.add_friction(coulomb, mu=mu, radius=r)
    return mech


@pytest.mark.parametrize("coulomb", [0.0, 0.02])
def test_a_wheel_on_its_axle_spins_down_at_mu_r_m_g_over_I(coulomb):
    mu, r, m, I, w0 = 0.2, 0.01, 3.0, 0.05, 4.0
    torque = coulomb + mu * r * m * G
    t_stop = w0 * I / torque
    t = np.linspace(0.0, 1.5 * t_stop, 31)
    res = wheel(mu, r, coulomb, m, I).assemble().simulate(
        (0, t[-1]), q={"axle": 0.0}, qd={"axle": w0}, t_eval=t, **RUN)
    assert res.success, res.message
    j = res.joint("axle")
    assert [s.what for s in res.switches] == ["stick"]
    assert abs(res.switches[0].t - t_stop) < 1e-10

    def rate(tq):
        return np.maximum(w0 - tq / I * t, 0.0)

    assert np.abs(j.qd - rate(torque)).max() < 1e-8
    moving, stuck = t < t_stop - 1e-9, t > t_stop + 1e-9   # (a point at t*: either)
    assert np.abs(j.friction[moving] + torque).max() < 1e-8
    assert np.abs(j.friction[stuck]).max() < 1e-8      # stuck: nothing to hold
    # the friction's work is the kinetic energy lost (the axle does no other work)
    led = res.energy
    assert np.abs(led.dissipated["axle.friction"] - 0.5 * I * (w0 ** 2 - j.qd ** 2)).max() \
        < 1e-8
    assert led.relative_drift < 1e-8
    # mu off by 1 %: the rates miss by 1e-2 rad/s
    wrong = coulomb + 1.01 * mu * r * m * G
    assert np.abs(j.qd - rate(wrong)).max() > 1e-3


def pendulum(mu, r, l=0.5, m=1.0, Ic=0.01):
    mech = Mechanism("pendulum", gravity=(0, 0, -G))
    bob = mech.add_body(RigidBody("bob", m, Inertia.principal(Ic, Ic, Ic)))
    j = mech.add_joint(RevoluteJoint("J", mech.ground, bob, child_point=(0, 0, l),
                                     axis=(0, 1, 0)))
    j.add_friction(0.0, mu=mu, radius=r)
    return mech


def pendulum_reference(mu, r, q0, t_end, l=0.5, m=1.0, Ic=0.01):
    """q(t) of the pendulum from rest at q0 until its rate is zero again: I_p q'' =
    -m g l sin q - s mu r |R|, R = m (a_G - g) the joint's force on the bob, its
    centre at l (-sin q, -cos q) in (x, z); q'' solved at each state by a fixed
    point (the friction changes R by m l q'', a contraction of mu r m l / I_p)."""
    Ip = Ic + m * l * l

    def qdd(q, qd):
        s = -1.0                            # the first swing: q' < 0 until the halt
        a = 0.0
        for _ in range(200):
            ax = l * a * -math.cos(q) + l * qd * qd * math.sin(q)
            az = l * a * math.sin(q) + l * qd * qd * math.cos(q)
            R = m * math.hypot(ax, az + G)
            new = (-m * G * l * math.sin(q) - s * mu * r * R) / Ip
            if abs(new - a) <= 1e-15 * max(1.0, abs(new)):
                return new
            a = new
        raise AssertionError("the reference's loop did not converge")

    def halt(t, y):
        return y[1]
    halt.terminal, halt.direction = True, 1.0
    return solve_ivp(lambda t, y: [y[1], qdd(y[0], y[1])], (0, t_end), [q0, 0.0],
                     method="DOP853", rtol=1e-12, atol=1e-13, events=halt,
                     dense_output=True)


def test_a_pendulum_whose_friction_changes_its_own_bearing_load():
    mu, r, q0 = 0.3, 0.05, 1.0
    res = pendulum(mu, r).assemble().simulate((0, 1.0), q={"J": q0}, qd={"J": 0.0},
                                              t_eval=np.linspace(0, 1.0, 101), **RUN)
    assert res.success, res.message
    ref = pendulum_reference(mu, r, q0, 1.0)
    t_halt = ref.t_events[0][0]
    # the run's first halt (q' = 0 on the far side) where the reference's is
    halts = [s for s in res.switches if s.t > 0]
    assert abs(halts[0].t - t_halt) < 1e-8
    before = res.t < t_halt
    j = res.joint("J")
    assert np.abs(j.q[before] - ref.sol(res.t[before])[0]).max() < 1e-8
    # the friction torque is mu r |R| with R the reaction the run reports
    R = np.hypot(*j.force_joint[:2])
    assert np.abs(np.abs(j.friction[before]) - mu * r * R[before]).max() < 1e-9
    # the reaction does depend on the friction here: |R| differs from the frictionless
    # reaction at the same state by m l q''-terms, which the constant-level run misses
    wrong = pendulum_reference(1.01 * mu, r, q0, 1.0)
    assert np.abs(j.q[before] - wrong.sol(res.t[before])[0]).max() > 1e-5


def test_two_joints_whose_frictions_load_each_other():
    """A double pendulum with mu N friction in both hinges: each friction moves both
    reactions, so the two efforts are solved together. While a joint slides its
    friction is mu r times the reaction the run reports there (the loop's solution,
    1e-12 relative plus the output's rounding), and the ledger balances with both
    frictions' losses."""
    mu, r, l = 0.3, 0.05, 0.3
    dp = Mechanism("double", gravity=(0, 0, -G))
    b1 = dp.add_body(RigidBody("b1", 1.0, Inertia.principal(0.02, 0.02, 0.02)))
    b2 = dp.add_body(RigidBody("b2", 1.0, Inertia.principal(0.02, 0.02, 0.02)))
    dp.add_joint(RevoluteJoint("J1", dp.ground, b1, child_point=(0, 0, l), axis=(0, 1, 0)))
    dp.add_joint(RevoluteJoint("J2", b1, b2, parent_point=(0, 0, -l), child_point=(0, 0, l),
                               axis=(0, 1, 0)))
    for name in ("J1", "J2"):
        dp.joint(name).add_friction(0.0, mu=mu, radius=r)
    res = dp.assemble().simulate((0, 1.5), q={"J1": 1.0, "J2": 0.5},
                                 qd={"J1": 0.0, "J2": 0.0},
                                 t_eval=np.linspace(0, 1.5, 151), **RUN)
    assert res.success, res.message
    assert {s.port for s in res.switches} == {"J1", "J2"}
    for name in ("J1", "J2"):
        j = res.joint(name)
        R = np.hypot(*j.force_joint[:2])
        moving = np.abs(j.qd) > 1e-6
        assert moving.sum() > 50
        assert np.abs(np.abs(j.friction[moving]) - mu * r * R[moving]).max() < 1e-10
        # both frictions took energy
        assert res.energy.dissipated[f"{name}.friction"][-1] > 1e-3
    assert res.energy.relative_drift < 1e-8


def test_a_friction_that_loads_itself_faster_than_itself_is_a_named_failure():
    """mu r m l / I_p = 1.5: where the reaction leans along the swing (R.e_t / |R| =
    sin q), the friction adds to its own load faster than itself: no unique sliding
    state. At the first state the run raises; later it ends CALLBACK_ERROR, named."""
    from elements.running.joint_load import FrictionLoopError
    l, m, Ic, q0 = 0.5, 1.0, 0.01, 1.0
    Ip = Ic + m * l * l
    r = 1.5 * Ip / (m * l)
    mech = pendulum(1.0, r, l, m, Ic)
    with pytest.raises(FrictionLoopError, match=r"coordinate\(s\) 'J'.*did not converge "
                                                r"at t = 0 s.*no unique sliding state"):
        mech.assemble().simulate((0, 1.0), q={"J": q0}, qd={"J": -3.0}, **RUN)
    # held at q0 by static friction mu r m g (at rest the reaction is the weight) until a
    # torque ramp -k t added to gravity's -m g l sin q0 exceeds it: then it would slide
    k = 2.0
    mech.joint("J").add_actuator(TimeFunction.ramp(-k))
    t_release = (r * m * G - m * G * l * math.sin(q0)) / k
    t = np.linspace(0.0, 3.0, 31)
    with pytest.warns(IntegrationWarning, match="did not converge"):
        res = mech.assemble().simulate((0, 3.0), q={"J": q0}, qd={"J": 0.0}, t_eval=t,
                                       **RUN)
    assert [s.what for s in res.switches] == ["stick", "slide -"]
    assert abs(res.switches[1].t - t_release) < 1e-9
    assert not res.success and res.raw.status is Status.CALLBACK_ERROR
    assert "did not converge" in res.message and "'J'" in res.message
    assert abs(res.raw.failure_time - t_release) < 1e-9
    assert np.array_equal(res.t, t[t < t_release])        # what came before is kept
    assert np.abs(res.joint("J").q - q0).max() < 1e-12
    # a release time 1 % off in mu would be 0.04 s off
    assert abs((1.01 * r * m * G - m * G * l * math.sin(q0)) / k - t_release) > 1e-2


def test_bad_load_dependent_friction_is_named():
    mech = Mechanism("m")
    a = mech.add_body(RigidBody("a", 1.0, Inertia.principal(1, 1, 1)))
    b = mech.add_body(RigidBody("b", 1.0, Inertia.principal(1, 1, 1)))
    c = mech.add_body(RigidBody("c", 1.0, Inertia.principal(1, 1, 1)))
    rev = mech.add_joint(RevoluteJoint("hinge", mech.ground, a, axis=(0, 0, 1)))
    pri = mech.add_joint(PrismaticJoint("rail", mech.ground, b, axis=(1, 0, 0)))
    uni = mech.add_joint(UniversalJoint("cross", mech.ground, c, axis=(0, 0, 1),
                                        axis2=(1, 0, 0)))
    for call, words in [
            (lambda: rev.add_friction(0.1, mu=-0.1, radius=0.01),
             "joint 'hinge': friction coefficient mu must be >= 0"),
            (lambda: rev.add_friction(0.0, mu=0.1),
             "joint 'hinge': friction coefficient mu on a turning coordinate needs radius"),
            (lambda: rev.add_friction(0.0, mu=0.1, radius=0.0),
             "joint 'hinge': friction radius must be positive"),
            (lambda: rev.add_friction(0.1, radius=0.01),
             "joint 'hinge': radius is used only with a friction coefficient mu > 0"),
            (lambda: rev.add_friction(0.0, mu=0.2, mu_static=0.1, radius=0.01),
             r"joint 'hinge': mu_static \(0.1\) must be at least mu \(0.2\)"),
            (lambda: pri.add_friction(0.0, mu=0.1, radius=0.01),
             "joint 'rail': radius applies to a turning coordinate only"),
            (lambda: uni.add_friction(0.0, mu=0.1, radius=0.01, coordinate="angle1"),
             r"joint 'cross' coordinate 'angle1' \(universal\): friction coefficient mu needs a joint whose "
             r"transverse reaction is defined"),
            (lambda: rev.add_friction(0.0),
             "joint 'hinge': Coulomb friction must be positive")]:
        with pytest.raises(ModelError, match=words):
            call()
    assert rev.axes[0].friction is None and pri.axes[0].friction is None
