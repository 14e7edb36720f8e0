"""Closed loops (redundant constraints of a planar loop modelled spatially) and
multi-domain coupling (a DC motor driving a joint)."""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import GY, I, R, OneJunction, Se, SingularConstraintError, WorkState
from elements import AssemblyError, Inertia, Mechanism, RevoluteJoint, RigidBody

from mechanisms import four_bar, four_bar_start


@pytest.fixture(scope="module")
def four_bar_run():
    mm, x0 = four_bar_start()
    res = mm.simulate((0.0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 101), rtol=1e-10, atol=1e-10)
    return mm, x0, res


class TestFourBar:
    @pytest.fixture
    def run(self, four_bar_run):
        return four_bar_run

    def test_loop_closes_at_assembly(self, run):
        mm, x0, _ = run
        _, phi = mm.constraint_jacobian(x0)
        assert np.abs(phi).max() < 1e-12
        assert np.abs(mm.model.evaluate(0, x0).constraint_flow).max() < 1e-10

    def test_redundancy_detected_and_reported_by_joint(self, run):
        mm, _, res = run
        assert mm.loop_joints[0].name == "J3"
        assert res.raw.rank_deficiency == 3          # 20 constraints, 17 independent
        summary = res.summary()
        assert summary["redundant_constraints"] == 3
        assert "3 dependent constraint component(s)" in summary["redundancy"]
        for j in ("J1", "J2", "J3", "J4"):
            assert f"Se*_{j}.r" in summary["redundancy"]

    def test_run_completes_and_loop_stays_closed(self, run):
        _, _, res = run
        assert res.success
        assert res.max_abs_phi < 1e-8
        # the crank turns: the motion is real
        assert np.ptp(res.joint("J1").q) > 1.0
        # energy is conserved (no dissipation, gravity only)
        assert res.energy.relative_drift < 1e-7

    def test_strict_mode_refuses_redundancy(self):
        mm = four_bar().assemble(strict=True)
        x0 = mm.initial_state({"J1": np.pi / 2}, guess={"J2": -1.0, "J4": 1.5})
        with pytest.raises(SingularConstraintError, match=r"redundant constraints.*Se\*_J"):
            mm.simulate((0.0, 0.1), x0=x0)

    def test_a_loop_that_cannot_close(self):
        mech = four_bar()
        mech.joints["J3"].Q[0] = 5.0     # the rocker's pin far away: no assembly exists
        mm = mech.assemble()
        with pytest.raises(AssemblyError, match="loop joints J3"):
            mm.initial_state({"J1": 0.3})


def test_dc_motor_driving_a_joint_balances_power():
    Ra, La, k, V = 2.0, 0.05, 0.3, 6.0
    mech = Mechanism("motor_pendulum", gravity=(0.0, -9.81, 0.0))
    arm = mech.add_body(RigidBody("arm", 0.4, Inertia.rod(0.4, 0.3, axis=0, thin=1e-5)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, arm, child_point=(-0.15, 0, 0),
                                 axis=(0, 0, 1)))

    def motor(bg):
        bg.add(Se("motor.V", V), OneJunction("motor.i"), R("motor.Ra", Ra), I("motor.La", La),
               GY("motor.k", k))
        for a, b in [("motor.V", "motor.i"), ("motor.i", "motor.Ra"), ("motor.i", "motor.La"),
                     ("motor.i", "motor.k"), ("motor.k", "J1.axis")]:
            bg.connect(a, b)
        bg.add_work_state(WorkState("motor.V.work", "motor.V"))
        bg.add_work_state(WorkState("motor.Ra.dissipated", "motor.Ra"))

    mech.add_subsystem("motor", motor)
    mm = mech.assemble()
    x0 = mm.initial_state(states={"p_motor.La": 0.0})
    res = mm.simulate((0.0, 2.0), x0=x0, t_eval=np.linspace(0, 2, 201), rtol=1e-11, atol=1e-11)
    assert res.success
    raw = res.raw
    i = raw.state("p_motor.La") / La
    led = res.energy
    electrical = raw.state("motor.V.work") - raw.state("motor.Ra.dissipated") \
        - 0.5 * La * i ** 2
    mechanical = led.kinetic + led.gravity - led.kinetic[0] - led.gravity[0]
    scale = np.abs(raw.state("motor.V.work")).max()
    assert scale > 0.1                                       # the motor did real work
    assert np.abs(electrical - mechanical).max() < 1e-8 * scale
    # the torque on the joint is k i (the gyrator), the back emf k omega
    torque = raw.effort([b.name for b in mm.graph.bonds if b.tail == "motor.k"][0])
    assert np.allclose(torque, k * i, atol=1e-12)
    assert np.ptp(res.joint("J1").q) > 0.5
