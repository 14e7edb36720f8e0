"""The MBSlib analytical tests (seed 001): the bond graph models' direct kinematics,
direct dynamics and inverse dynamics against closed forms re-derived from first
principles by sympy Lagrange (tests/validation/reference_mbslib.py, no shared code)."""

from __future__ import annotations

import numpy as np
import pytest

import reference_mbslib as ref
from elements import models
from elements.analysis.dynamics import (
    direct_dynamics, forward_kinematics, inverse_dynamics, joint_accelerations,
    prescribed_motion,
)

N_STATES = 200
RTOL = 1e-9


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def scara_params(rng=None):
    p = dict(m1=1.2, l1=0.5, I1xx=0.006, I1yy=0.021, I1zz=0.025, r1x=-0.22, r1y=0.03,
             r1z=0.01, m2=0.8, l2=0.4, I2xx=0.001, I2yy=0.011, I2zz=0.012, r2x=-0.17,
             r2y=0.04, r2z=-0.02, g=9.81)       # r_y != 0: the seed's M_11 typo shows
    return p


CASES = {
    "compound_pendulum": (
        lambda p: models.compound_pendulum(p["m"], p["l"], p["g"]).assemble(),
        dict(m=1.7, l=0.9, g=9.81), ["J1"],
        lambda fk: [fk["tip"][0], fk["tip"][1]], {"tip": ("rod", "tip")}),
    "spring_pendulum": (
        lambda p: models.spring_pendulum(p["m"], p["k"], p["d"], p["g"]).assemble(),
        dict(m=1.3, k=40.0, d=0.6, g=9.81), ["J1"],
        lambda fk: [fk["mass"][0], fk["mass"][1]], {}),
    "pendulum_on_trolley": (
        lambda p: models.pendulum_on_trolley(p["m"], p["l"], p["k"], p["d"], p["g"],
                                             m_trolley=p["m_t"]).assemble(),
        dict(m=1.1, l=0.7, k=3.0, d=0.25, g=9.81, m_t=1e-3), ["J1", "J2"],
        lambda fk: [fk["trolley"][0], fk["trolley"][1], fk["tip"][0], fk["tip"][1]],
        {"tip": ("rod", "tip")}),
    "scara": (
        lambda p: models.scara(p["m1"], p["l1"], (p["I1xx"], p["I1yy"], p["I1zz"]),
                               (p["r1x"], p["r1y"], p["r1z"]), p["m2"], p["l2"],
                               (p["I2xx"], p["I2yy"], p["I2zz"]),
                               (p["r2x"], p["r2y"], p["r2z"]), p["g"]).assemble(),
        scara_params(), ["J1", "J2"],
        lambda fk: [fk["e"][0], fk["e"][1], fk["t"][0], fk["t"][1]],
        {"e": ("link1", "distal"), "t": ("link2", "distal")}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    build, p, joints, pick, points = CASES[request.param]
    return request.param, build(p), p, joints, pick, points


def random_states(n_dof, rng):
    q = rng.uniform(-np.pi, np.pi, size=n_dof)
    return q, rng.normal(scale=2.0, size=n_dof), rng.normal(scale=3.0, size=n_dof)


@pytest.mark.parametrize("method", ["auto", "bond_graph"])
def test_direct_kinematics_dynamics_and_inverse(case, method):
    """Both ways of evaluating (the compiled joint-space recursion where it applies, and
    the bond graph model) against the closed forms."""
    name, mm, p, joints, pick, points = case
    R = getattr(ref, name)
    rng = np.random.default_rng(len(name))
    worst = {"kin": 0.0, "dir": 0.0, "inv": 0.0, "round": 0.0}
    for _ in range(N_STATES):
        q, qd, tau = random_states(len(joints), rng)
        if name == "spring_pendulum":
            q = np.abs(q) * 0.2
        Q, QD, TAU = (dict(zip(joints, v)) for v in (q, qd, tau))
        fk = forward_kinematics(mm, Q, points)
        worst["kin"] = max(worst["kin"], rel(pick(fk), R.kinematics(q, p)))
        qdd = direct_dynamics(mm, Q, QD, TAU, method=method)
        qdd_v = np.array([qdd[j] for j in joints])
        worst["dir"] = max(worst["dir"], rel(qdd_v, R.direct(q, qd, tau, p)))
        back = inverse_dynamics(mm, Q, QD, qdd, method=method)
        worst["round"] = max(worst["round"], rel([back[j] for j in joints], tau))
        qdd_any = rng.normal(size=len(joints))
        inv = inverse_dynamics(mm, Q, QD, dict(zip(joints, qdd_any)), method=method)
        worst["inv"] = max(worst["inv"], rel([inv[j] for j in joints],
                                             R.inverse(q, qd, qdd_any, p)))
    for k, v in worst.items():
        assert v < RTOL, (name, k, v)


@pytest.mark.parametrize("name", ["compound_pendulum", "spring_pendulum"])
def test_simulated_accelerations_follow_the_closed_form(name):
    build, p, joints, _, _ = CASES[name]
    mm = build(p)
    R = getattr(ref, name)
    q0 = {"J1": 1.0 if name == "compound_pendulum" else 0.05}
    res = mm.simulate((0.0, 2.0), q0, t_eval=np.linspace(0, 2, 41), rtol=1e-11, atol=1e-11)
    m = mm.model
    worst = 0.0
    for i in range(res.t.size):
        x = res.raw.x[:, i]
        xdot = m.evaluate(res.t[i], x, stabilization=res.stabilization).xdot
        qdd = joint_accelerations(mm, x, xdot)["J1"]
        q, qd = res.joint("J1").q[i], res.joint("J1").qd[i]
        worst = max(worst, rel([qdd], R.direct(np.array([q]), np.array([qd]), np.zeros(1), p)))
    assert worst < RTOL


def test_scara_inverse_dynamics_along_a_prescribed_path():
    build, p, joints, _, _ = CASES["scara"]
    mm = build(p)
    R = ref.scara
    w1, w2 = 1.3, 2.1
    motion = {"J1": (lambda t: 0.4 * np.sin(w1 * t), lambda t: 0.4 * w1 * np.cos(w1 * t),
                     lambda t: -0.4 * w1 ** 2 * np.sin(w1 * t)),
              "J2": (lambda t: 0.8 - 0.5 * np.cos(w2 * t), lambda t: 0.5 * w2 * np.sin(w2 * t),
                     lambda t: 0.5 * w2 ** 2 * np.cos(w2 * t))}
    out = prescribed_motion(mm, motion, (0.0, 2.0), t_eval=np.linspace(0, 2, 41), rtol=1e-11,
                            atol=1e-11)
    assert out.result.success
    for i, t in enumerate(out.t):
        q = np.array([motion[j][0](t) for j in joints])
        qd = np.array([motion[j][1](t) for j in joints])
        qdd = np.array([motion[j][2](t) for j in joints])
        got = np.array([out.efforts[j][i] for j in joints])
        assert rel(got, R.inverse(q, qd, qdd, p)) < 1e-7, t
        assert rel([out.result.joint(j).q[i] for j in joints], q) < 1e-8


@pytest.mark.parametrize("name", ["scara", "spring_pendulum"])
def test_prescribed_motion_energy_ledger_counts_the_drives_work(name):
    """The drives (flow sources) do work on the mechanism; the ledger has a work state for
    each, so the balance closes under prescribed motion (springs and dampers included)."""
    build, p, joints, _, _ = CASES[name]
    mm = build(p)
    w = 1.7
    a = 0.4 if name == "scara" else 0.05
    motion = {j: (lambda t, k=k: a * np.sin(w * t + k), lambda t, k=k: a * w * np.cos(w * t + k),
                  lambda t, k=k: -a * w ** 2 * np.sin(w * t + k))
              for k, j in enumerate(joints)}
    out = prescribed_motion(mm, motion, (0.0, 2.0), t_eval=np.linspace(0, 2, 81),
                            rtol=1e-11, atol=1e-11)
    assert out.result.success
    led = out.result.energy
    assert led.relative_drift < 1e-6, led.relative_drift
    assert sorted(led.work) == sorted(f"{j}.drive" for j in motion)
    assert max(np.abs(v).max() for v in led.work.values()) > 1e-3   # the drives did work


def test_direct_and_inverse_dynamics_at_a_time_t():
    """A torque motor A sin(w t) attached to J1's axis (a TimeFunction effort source that
    the drives do not replace): direct and inverse dynamics evaluate it at ``t``."""
    from bondgraph import Se, TimeFunction
    m, l, g, A, w = 1.7, 0.9, 9.81, 2.5, 3.0
    mech = models.compound_pendulum(m, l, g)

    def motor(bg):
        bg.add(Se("motor.torque", TimeFunction(lambda t: A * np.sin(w * t),
                                               lambda t: A * w * np.cos(w * t))))
        bg.connect("motor.torque", mech.joints["J1"].axis_junction, name="motor.torque.b")

    mech.add_subsystem("motor", motor)
    mm = mech.assemble()
    q, qd, tau = {"J1": 0.4}, {"J1": 1.0}, {"J1": 0.5}
    inertia, grav = m * l * l / 3, 0.5 * m * g * l * np.sin(0.4)
    for t in (0.0, 0.7, 1.3):
        want = (0.5 + A * np.sin(w * t) - grav) / inertia
        qdd = direct_dynamics(mm, q, qd, tau, t=t)["J1"]
        assert abs(qdd - want) < 1e-9 * max(1.0, abs(want)), t
        back = inverse_dynamics(mm, q, qd, {"J1": want}, t=t)["J1"]
        assert abs(back - 0.5) < 1e-9, t
    assert direct_dynamics(mm, q, qd, tau)["J1"] == pytest.approx((0.5 - grav) / inertia)
