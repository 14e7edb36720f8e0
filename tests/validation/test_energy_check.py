"""Energy testing (seed 000): the four procedures, conservation and momentum tests."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from elements import (
    Inertia, Mechanism, RevoluteJoint, RigidBody, models,
)
from elements.analysis.energy_check import (
    MotionData, check, motion_from_result, procedure1, procedure2, procedure3, procedure4,
)

RTOL = 1e-7


@pytest.fixture(scope="module")
def three_body_no_moment():
    mm = models.three_body_prismatic(M=0.0).assemble()
    # the rotor needs a spin to make the example interesting without M
    return mm.simulate((0, 2.0), qd={"J1": 3.0, "J2": 0.5}, t_eval=np.linspace(0, 2, 201),
                       rtol=1e-11, atol=1e-11)


def free_chain(gravity=(0.0, 0.0, 0.0), damping=0.0):
    """Three bodies floating freely, joined by revolute joints with springs."""
    mech = Mechanism("free_chain", gravity=gravity)
    b = [mech.add_body(RigidBody(f"b{i}", 1.0 + 0.2 * i, Inertia.principal(0.01, 0.02, 0.025)))
         for i in range(3)]
    mech.add_joint(RevoluteJoint("J1", b[0], b[1], parent_point=(0.1, 0, 0),
                                 child_point=(-0.1, 0, 0), axis=(0, 0, 1), spring=5.0,
                                 damper=damping if damping else None))
    mech.add_joint(RevoluteJoint("J2", b[1], b[2], parent_point=(0.1, 0, 0),
                                 child_point=(-0.1, 0, 0), axis=(0, 1, 0), spring=3.0))
    return mech


@pytest.fixture(scope="module")
def floating():
    mm = free_chain().assemble()
    x0 = mm.initial_state({"J1": 0.4, "J2": -0.3}, {"J1": 1.0, "J2": -2.0},
                          free={"b0": {"angular_velocity": [0.3, -0.2, 0.5],
                                       "velocity": [0.1, 0.2, 0.0]}})
    return mm.simulate((0, 3.0), x0=x0, t_eval=np.linspace(0, 3, 151), rtol=1e-11,
                       atol=1e-12)


def test_four_procedures_agree(floating):
    d = motion_from_result(floating)
    ke1, pe1 = procedure1(d.m, d.I, d.omega, d.r, d.rdot, d.g, k=d.k, theta=d.theta)
    # system-CM centric
    M = d.m.sum()
    R = np.einsum("n,tni->ti", d.m, d.r) / M
    Rd = np.einsum("n,tni->ti", d.m, d.rdot) / M
    ke2, pe2 = procedure2(d.m, d.I, d.omega, d.r - R[:, None], d.rdot - Rd[:, None], R, Rd,
                          d.g, k=d.k, theta=d.theta)
    # body-1 coordinates: C1 = body 1's rotation
    C1 = floating.body("b0").rotation
    I1 = np.einsum("tji,tnjk,tkl->tnil", C1, d.I, C1)
    w1 = np.einsum("tji,tnj->tni", C1, d.omega)
    rh1 = np.einsum("tji,tnj->tni", C1, d.r - R[:, None])
    rhd1 = np.einsum("tji,tnj->tni", C1, d.rdot - Rd[:, None])
    ke3, pe3 = procedure3(d.m, I1, w1, rh1, rhd1, R, Rd, C1, d.g, k=d.k, theta=d.theta)
    # joint-1 centric: eta_1 = J1's point on its child
    eta = floating.joint("J1").point.T
    etad = _point_velocity(floating, "J1")
    ke4, pe4 = procedure4(d.m, d.I, d.omega, d.r - eta[:, None], d.rdot - etad[:, None],
                          eta, etad, d.g, k=d.k, theta=d.theta)
    for ke, pe in ((ke2, pe2), (ke3, pe3), (ke4, pe4)):
        assert np.abs(ke - ke1).max() < 1e-12 * np.abs(ke1).max()
        assert np.abs(pe - pe1).max() < 1e-12 * max(np.abs(pe1).max(), 1.0)
    # and they equal the simulation's own figures
    assert np.abs(ke1 - d.internal_ke).max() < 1e-12 * np.abs(ke1).max()


def _point_velocity(res, joint):
    j = res.model.mechanism.joint(joint)
    b = res.body(j.child.name)
    arm = np.einsum("tij,j->ti", b.rotation, j.Q)
    return b.velocity.T + np.cross(b.angular_velocity.T, arm)


def test_conservation_passes_on_conservative_examples(three_body_no_moment, floating):
    for res in (three_body_no_moment, floating):
        rep = check(res, rtol=RTOL)
        assert rep.passed, rep.text()
        line = [ln for ln in rep.lines if ln.name.startswith("(a)")][0]
        assert line.passed is True and line.value < RTOL


def test_momentum_passes_when_free_floating_and_fails_under_gravity(floating):
    rep = check(floating, rtol=RTOL)
    mom = {ln.name: ln for ln in rep.lines if "momentum" in ln.name}
    assert all(ln.passed for ln in mom.values()), rep.text()
    mm = free_chain(gravity=(0, 0, -9.81)).assemble()
    x0 = mm.initial_state({"J1": 0.4, "J2": -0.3}, {"J1": 1.0, "J2": -2.0})
    falling = mm.simulate((0, 1.0), x0=x0, t_eval=np.linspace(0, 1, 51), rtol=1e-10,
                          atol=1e-10)
    rep = check(falling, rtol=RTOL, external_free=True)      # claim no external force
    lin = [ln for ln in rep.lines if ln.name == "linear momentum constant"][0]
    assert lin.passed is False and lin.value > 1.0


def test_detects_a_damper_and_left_out_work(three_body_no_moment):
    mm = free_chain(damping=0.2).assemble()
    x0 = mm.initial_state({"J1": 0.4, "J2": -0.3}, {"J1": 1.0, "J2": -2.0})
    damped = mm.simulate((0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 51), rtol=1e-10,
                         atol=1e-10)
    rep = check(damped, rtol=RTOL, conservative=True)
    a = [ln for ln in rep.lines if ln.name.startswith("(a)")][0]
    assert a.passed is False and a.value > 1e-3
    # the ledger (work and dissipation accounted for) still balances
    assert check(damped, rtol=RTOL).passed
    # the driven three-body example with the moment's work left out
    driven = models.three_body_prismatic().assemble().simulate(
        (0, 1.0), t_eval=np.linspace(0, 1, 51), rtol=1e-10, atol=1e-10)
    d = motion_from_result(driven)
    d.work = None
    rep = check(d, rtol=RTOL, conservative=True)
    assert not rep.passed


def test_command_line_on_written_files(tmp_path, floating):
    floating.write(str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "elements.analysis.energy_check", str(tmp_path), "--plot",
                        str(tmp_path / "check.png")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "overall: PASS" in p.stdout
    assert (tmp_path / "check.png").exists()
    p = subprocess.run([sys.executable, "-m", "elements.analysis.energy_check", str(tmp_path / "nope")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "missing" in p.stderr and "Traceback" not in p.stderr


def test_reaction_wheel_term():
    """Eq. (1)'s wheel term: a wheel of spin inertia Iw and momentum h adds |h|^2/(2 Iw)."""
    t = np.zeros(1)
    d = MotionData(t=t, m=np.array([2.0]), I=np.eye(3)[None], omega=np.zeros((1, 1, 3)),
                   r=np.zeros((1, 1, 3)), rdot=np.zeros((1, 1, 3)), g=np.zeros(3),
                   h_wheel=np.array([[[0.0, 0.0, 3.0]]]), I_wheel=np.array([0.5]))
    ke, _ = procedure1(d.m, d.I, d.omega, d.r, d.rdot, d.g, h_wheel=d.h_wheel,
                       I_wheel=d.I_wheel)
    assert ke[0] == pytest.approx(9.0 / (2 * 0.5))


def test_the_report_calls_dissipation_dissipation(tmp_path):
    """A damped-only system: the report says dampers dissipate energy (not that sources do
    work), from a result and from the files of a run; a driven damped one names both."""
    mech = Mechanism("damped", gravity=(0.0, -9.81, 0.0))
    rod = mech.add_body(RigidBody("rod", 1.0, Inertia.principal(0.03, 0.03, 0.03)))
    joint = mech.add_joint(RevoluteJoint("J1", mech.ground, rod, child_point=(0.0, 0.3, 0.0),
                                         axis=(0.0, 0.0, 1.0), damper=0.2))
    damped = mech.assemble().simulate((0.0, 1.0), {"J1": 0.5}, t_eval=np.linspace(0, 1, 21),
                                      rtol=1e-10, atol=1e-10)
    damped.write(str(tmp_path))
    for rep in (check(damped), check(str(tmp_path))):
        assert rep.passed
        a = [ln for ln in rep.lines if ln.name.startswith("(a)")][0]
        assert a.passed is None and a.note == "dampers dissipate energy: see the balance"
        assert "sources do work" not in rep.text() and "work of the sources" not in rep.text()
        assert any(ln.name == "KE + PE + dissipated energy constant" and ln.passed
                   for ln in rep.lines)
    from elements import AxisActuator
    joint.add_actuator(AxisActuator(0.3))
    driven = mech.assemble().simulate((0.0, 1.0), {"J1": 0.5}, t_eval=np.linspace(0, 1, 21),
                                      rtol=1e-10, atol=1e-10)
    rep = check(driven)
    assert rep.passed and "sources do work and dampers dissipate energy" in rep.text()
    assert "KE + PE - work of the sources + dissipated energy constant" in rep.text()
