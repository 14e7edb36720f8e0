"""Couplings between joints (elements.parts.couplings.JointCoupling): gears, a rack and pinion,
URDF's mimic joints, against closed forms and conservation laws.

Tolerances: the closed forms are evaluated at one state by the bond graph's linear solve
(1e-10 relative: rounding only); the simulations run at rtol = atol = 1e-10, so the
energy ledger balances to about 1e-9 of the energies and the coupling's Phi stays at
rounding level (its Baumgarte term acts on the joints' unwrapped coordinate states).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bondgraph import ModelError
from elements import (
    AssemblyError, Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody,
    SphericalJoint, direct_dynamics, loads_urdf,
)
from elements.parts.couplings import JointCoupling
from mechanisms import gripper_urdf      # (tests/helpers)

J1, J2, RATIO, OFFSET, TAU = 0.02, 0.05, -0.4, 0.1, 0.3


def gears(ratio=RATIO, offset=OFFSET):
    """Two gears on parallel fixed axes 0.3 m apart; the first driven by TAU (N m)."""
    m = Mechanism("gears")
    g1 = m.add_body(RigidBody("g1", 1.0, Inertia.principal(0.01, 0.01, J1)))
    g2 = m.add_body(RigidBody("g2", 2.0, Inertia.principal(0.03, 0.03, J2)))
    a = m.add_joint(RevoluteJoint("a", m.ground, g1, axis=(0, 0, 1), actuator=TAU))
    b = m.add_joint(RevoluteJoint("b", m.ground, g2, parent_point=(0.3, 0, 0),
                                  axis=(0, 0, 1)))
    m.add_coupling(JointCoupling("mesh", a, b, ratio, offset))
    return m


def test_a_gear_pair_has_the_equivalent_inertia():
    """(J1 + r^2 J2) q_a'' = tau; the follower turns at r q_a''; the tooth torque on the
    follower is J2 r q_a'' (its only load)."""
    mm = gears().assemble()
    acc = direct_dynamics(mm, {"a": 0.2}, {"a": 1.0}, {"a": TAU})
    qdd = TAU / (J1 + RATIO ** 2 * J2)
    assert acc["a"] == pytest.approx(qdd, rel=1e-10)
    assert acc["b"] == pytest.approx(RATIO * qdd, rel=1e-10)
    res = mm.simulate((0.0, 3.0), {"a": 0.2}, {"a": 1.0}, rtol=1e-10, atol=1e-10)
    assert res.success
    qa, qb = res.joint("a").q, res.joint("b").q
    # many turns (q_a reaches 51 rad): the coordinates are not wrapped
    assert qa[-1] == pytest.approx(0.2 + 3.0 + 0.5 * qdd * 9.0, rel=1e-8)
    assert np.abs(qb - RATIO * qa - OFFSET).max() < 1e-9
    assert res.max_abs_phi < 1e-9
    assert res.energy.relative_drift < 1e-8
    assert np.allclose(res.coupling_effort("mesh"), J2 * RATIO * qdd, rtol=1e-8, atol=0)


def test_a_rack_and_pinion_couples_metres_to_radians():
    """A pinion (J about z) drives a rack (mass m) sliding along z under gravity:
    x = rho theta, (J + m rho^2) theta'' = tau - m g rho; the force on the rack is
    m (x'' + g)."""
    J, m, rho, g, tau = 0.01, 3.0, 0.05, 9.81, 2.0
    mech = Mechanism("rack", gravity=(0, 0, -g))
    pinion = mech.add_body(RigidBody("pinion", 0.5, Inertia.principal(0.008, 0.008, J)))
    rack = mech.add_body(RigidBody("rack", m, Inertia.principal(0.1, 0.1, 0.05)))
    turn = mech.add_joint(RevoluteJoint("turn", mech.ground, pinion, axis=(0, 0, 1),
                                        actuator=tau))
    slide = mech.add_joint(PrismaticJoint("slide", mech.ground, rack,
                                          parent_point=(0.2, 0, 0), axis=(0, 0, 1)))
    mech.add_coupling(JointCoupling("teeth", turn, slide, rho))
    mm = mech.assemble()
    acc = direct_dynamics(mm, {"turn": 0.4}, {"turn": -2.0}, {"turn": tau})
    thdd = (tau - m * g * rho) / (J + m * rho ** 2)
    assert acc["turn"] == pytest.approx(thdd, rel=1e-10)
    assert acc["slide"] == pytest.approx(rho * thdd, rel=1e-10)
    res = mm.simulate((0.0, 0.5), {"turn": 0.4}, {"turn": -2.0},
                      t_eval=np.linspace(0, 0.5, 6), rtol=1e-10, atol=1e-10)
    assert np.allclose(res.coupling_effort("teeth"), m * (rho * thdd + g), rtol=1e-8)


def test_initial_states_follow_the_leader():
    mm = gears().assemble()
    x = mm.initial_state({"a": 0.5}, {"a": 2.0})
    coords = mm.model.state_slices
    assert x[coords["b.coord"]][0] == pytest.approx(RATIO * 0.5 + OFFSET)
    res = mm.simulate((0, 0.01), {"a": 0.5, "b": RATIO * 0.5 + OFFSET}, {"a": 2.0})
    assert res.joint("b").qd[0] == pytest.approx(RATIO * 2.0)
    with pytest.raises(AssemblyError, match=r"coupling 'mesh': the initial coordinate of "
                       r"joint 'b' \(0.3\) is not -0.4 x that of 'a' \+ 0.1 = -0.1"):
        mm.initial_state({"a": 0.5, "b": 0.3})
    with pytest.raises(AssemblyError, match="initial rate of joint 'b'"):
        mm.initial_state({"a": 0.5}, {"b": 1.0})


def test_bad_couplings_are_named():
    m = gears()
    a, b = m.joint("a"), m.joint("b")
    s_body = m.add_body(RigidBody("s", 1.0, Inertia.principal(1.0, 1.0, 1.0)))
    s = m.add_joint(SphericalJoint("ball", m.ground, s_body, parent_point=(0, 1, 0)))
    with pytest.raises(ModelError, match="coupling 'c': the follower must be a joint "
                       "with an axis"):
        JointCoupling("c", a, s, 1.0)
    with pytest.raises(ModelError, match="couples joint 'a' to itself"):
        JointCoupling("c", a, a, 1.0)
    with pytest.raises(ModelError, match="ratio and offset must be finite"):
        JointCoupling("c", a, b, float("inf"))
    with pytest.raises(ModelError, match="joint 'b' already follows coupling 'mesh'"):
        m.add_coupling(JointCoupling("again", a, b, 2.0))
    with pytest.raises(ModelError, match="duplicate name 'mesh'"):
        m.add_coupling(JointCoupling("mesh", b, a, 2.0))
    other = gears()
    with pytest.raises(ModelError, match="its leader 'a' is not a joint of mechanism"):
        m.add_coupling(JointCoupling("x", other.joint("a"), other.joint("b"), 1.0))
    m.add_coupling(JointCoupling("back", b, a, 2.0))        # a cycle: a <- b <- a
    with pytest.raises(AssemblyError, match="couplings mesh, back form a cycle"):
        m.assemble().initial_state()
    mm = gears().assemble()
    res = mm.simulate((0, 0.01))
    with pytest.raises(ModelError, match="no coupling 'gear' in mechanism 'gears'; couplings: mesh"):
        res.coupling_effort("gear")
    with pytest.raises(ModelError, match="'Se\\*_mesh' is not a joint's position constraint"):
        mm.simulate((0, 0.01), projection=True)


def _urdf(multiplier):
    """The helpers' gripper, its right finger mimicking the left, and a pad fixed to the
    right finger by a fixed joint that carries a (meaningless) <mimic>."""
    return gripper_urdf(f'<mimic joint="l" multiplier="{multiplier}" offset="0.001"/>',
                        '<link name="pad"/><joint name="p" type="fixed"><parent '
                        'link="right"/><child link="pad"/><mimic joint="l"/></joint>')


def test_urdf_mimic_joints_couple_by_default():
    """Two fingers, the right one mimicking the left (multiplier k): (m_l + k^2 m_r) a_l
    = f (no gravity); a mimic on a fixed joint is reported, not refused; mimic=
    'independent' and 'refuse' do what they say."""
    k, f = 1.5, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = loads_urdf(_urdf(k), gravity=(0, 0, 0))
    rep = mech.import_report
    assert rep.couplings == {"r": "r_mimic"}
    assert rep.not_imported["<mimic> on fixed joints (nothing to couple)"] == ["p"]
    acc = direct_dynamics(mech.assemble(), {"l": 0.01}, {"l": 0.1}, {"l": f})
    assert acc["l"] == pytest.approx(f / (0.2 + k * k * 0.3), rel=1e-10)
    assert acc["r"] == pytest.approx(k * acc["l"], rel=1e-10)
    with pytest.warns(UserWarning, match="mimic couplings"):
        free = loads_urdf(_urdf(k), gravity=(0, 0, 0), mimic="independent")
    assert not free.couplings
    assert direct_dynamics(free.assemble(), {}, {}, {"l": f})["l"] == pytest.approx(f / 0.2)
    with pytest.raises(ModelError, match="joint 'r': <mimic> .* refused"):
        loads_urdf(_urdf(k), mimic="refuse")


def test_inverse_dynamics_puts_the_follower_load_on_the_leader():
    """Both axes driven would leave the split of the effort between leader and follower
    undetermined (a least-squares split came out before); the follower is passive (0) and
    the leader's effort is the whole (J1 + r^2 J2) q_a'' = tau, as in Pinocchio's mimic
    joints."""
    from elements import inverse_dynamics
    mm = gears().assemble()
    qdd = TAU / (J1 + RATIO ** 2 * J2)
    for given in ({"a": qdd}, {"a": qdd, "b": RATIO * qdd}):
        eff = inverse_dynamics(mm, {"a": 0.2}, {"a": 1.0}, given)
        assert eff["a"] == pytest.approx(TAU, rel=1e-10) and eff["b"] == 0.0
    with pytest.raises(ModelError, match=r"coupling 'mesh': qdd of joint 'b' \(1\) is not "
                       r"-0.4 x that of 'a'"):
        inverse_dynamics(mm, {"a": 0.2}, {"a": 1.0}, {"a": qdd, "b": 1.0})
    # prescribed motion of the leader: the drive's effort is (J1 + r^2 J2) q_a''
    from elements import prescribed_motion
    motion = (lambda t: t * t, lambda t: 2 * t, lambda t: 2.0)
    pm = prescribed_motion(mm, {"a": motion}, (0, 1), t_eval=np.linspace(0, 1, 3))
    assert np.allclose(pm.efforts["a"], (J1 + RATIO ** 2 * J2) * 2.0, rtol=1e-9)
    with pytest.raises(ModelError, match="joint 'b' follows coupling 'mesh'.*prescribe the "
                       "leader's"):
        prescribed_motion(mm, {"b": motion}, (0, 1))
