"""The core against independent answers: closed forms and hand derivations."""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import (
    TimeFunction, assemble, assign_causality, models, simulate,
)


def run(bg, x0, t_end, n=201, **kw):
    model = assemble(assign_causality(bg))
    t = np.linspace(0.0, t_end, n)
    kw.setdefault("method", "DOP853")
    kw.setdefault("rtol", 1e-12)
    kw.setdefault("atol", 1e-12)
    return model, simulate(model, (0.0, t_end), x0, t_eval=t, **kw)


class TestMassSpringDamper:
    """m x'' + b x' + k x = F, underdamped: x(t) closed form."""

    def test_response_matches_closed_form(self):
        m, k, b, F = 1.5, 40.0, 0.6, 2.0
        x0, v0 = 0.02, -0.3
        model, r = run(models.mass_spring_damper(m, k, b, F), {"p_m": m * v0, "q_k": x0}, 3.0)
        t = r.t
        sigma = b / (2 * m)
        wd = np.sqrt(k / m - sigma ** 2)
        xeq = F / k
        A = x0 - xeq
        B = (v0 + sigma * A) / wd
        x = xeq + np.exp(-sigma * t) * (A * np.cos(wd * t) + B * np.sin(wd * t))
        v = np.exp(-sigma * t) * ((B * wd - sigma * A) * np.cos(wd * t)
                                  - (A * wd + sigma * B) * np.sin(wd * t))
        assert r.success
        assert np.max(np.abs(r.state("q_k") - x)) < 1e-8
        assert np.max(np.abs(r.state("p_m") / m - v)) < 1e-8
        # every bond by name: the damper's effort is b v, the spring's k x
        bond_b = [bd.name for bd in model.graph.bonds if bd.head == "b"][0]
        assert np.max(np.abs(r.effort(bond_b) - b * v)) < 1e-7


class TestTwoMassesRigid:
    """Two masses joined rigidly: the inserted Se* carries the coupling force."""

    def test_se_star_inserted_at_coupling(self):
        cg = assign_causality(models.two_masses_rigid(1.0, 3.0, 2.0))
        assert [s.name for s in cg.constraint_sources] == ["Se*_coupling"]
        assert cg.constraint_sources[0].junction == "coupling"
        assert cg.dependent_storage == ("m2",)
        assert cg.independent_storage == ("m1",)

    def test_coupling_force_equals_analytic(self):
        m1, m2 = 1.2, 3.4
        F = TimeFunction(lambda t: 2.0 + np.sin(3 * t), lambda t: 3 * np.cos(3 * t))
        model, r = run(models.two_masses_rigid(m1, m2, F), {"p_m1": 0.0, "p_m2": 0.0}, 2.0)
        Ft = 2.0 + np.sin(3 * r.t)
        assert np.max(np.abs(r.constraint_force("Se*_coupling")[0] - m2 * Ft / (m1 + m2))) < 1e-10
        # the two velocities stay equal and follow the total impulse
        v1 = r.state("p_m1") / m1
        v2 = r.state("p_m2") / m2
        impulse = 2.0 * r.t + (1 - np.cos(3 * r.t)) / 3
        assert np.max(np.abs(v1 - v2)) < 1e-10
        assert np.max(np.abs(v1 - impulse / (m1 + m2))) < 1e-9


class TestLever:
    """A massless lever (TF) driving m, k, b: m x'' + b x' + k x = F / ratio."""

    def test_rhs_matches_hand_derivation(self):
        F, n, m, k, b = 10.0, 2.5, 1.3, 80.0, 0.7
        model = assemble(assign_causality(models.lever(F, n, m, k, b)))
        rng = np.random.default_rng(3)
        for _ in range(20):
            p, q = rng.normal(size=2)
            xd = model.rhs(0.0, np.array([p, q]))
            assert xd == pytest.approx([F / n - b * p / m - k * q, p / m], rel=1e-13, abs=1e-13)

    def test_lever_input_velocity(self):
        """The lever's input flow is the output velocity divided by the ratio."""
        model, r = run(models.lever(10.0, 2.5, 1.3, 80.0, 0.7), {"p_m": 0.5, "q_k": 0.0}, 0.5)
        b_in = [bd.name for bd in model.graph.bonds if bd.head == "lever"][0]
        assert np.max(np.abs(r.flow(b_in) - r.state("p_m") / 1.3 / 2.5)) < 1e-12


class TestDCMotor:
    """Se(V) - R, L - GY(k) - J, b: the gyrator couples domains."""

    V, Ra, La, k, J, b = 12.0, 1.1, 0.5, 0.08, 0.01, 0.002

    def test_rhs_matches_hand_derivation(self):
        model = assemble(assign_causality(models.dc_motor(self.V, self.Ra, self.La, self.k,
                                                          self.J, self.b)))
        rng = np.random.default_rng(4)
        for _ in range(20):
            pL, pJ = rng.normal(size=2)
            i, w = pL / self.La, pJ / self.J
            xd = model.rhs(0.0, np.array([pL, pJ]))
            assert xd == pytest.approx([self.V - self.Ra * i - self.k * w,
                                        self.k * i - self.b * w], rel=1e-13, abs=1e-12)

    def test_steady_state_and_power_balance(self):
        model, r = run(models.dc_motor(self.V, self.Ra, self.La, self.k, self.J, self.b),
                       {"p_La": 0.0, "p_J": 0.0}, 20.0, n=8001)
        den = self.Ra * self.b + self.k ** 2
        w_ss, i_ss = self.k * self.V / den, self.b * self.V / den
        assert r.state("p_J")[-1] / self.J == pytest.approx(w_ss, rel=1e-8)
        assert r.state("p_La")[-1] / self.La == pytest.approx(i_ss, rel=1e-8)
        # electrical power in = dissipation + d(stored)/dt, integrated
        i = r.state("p_La") / self.La
        w = r.state("p_J") / self.J
        p_in = self.V * i
        p_loss = self.Ra * i ** 2 + self.b * w ** 2
        from scipy.integrate import simpson
        work = simpson(p_in - p_loss, x=r.t)     # quadrature error ~1e-9 at this spacing
        assert r.stored_energy[-1] - r.stored_energy[0] == pytest.approx(work, rel=1e-8)


class TestCartesianPendulum:
    """A pendulum from primitives; the Se* effort is the rod tension."""

    m, l, g = 2.0, 1.5, 9.81

    def state(self, model, th, thd):
        r = self.l * np.array([np.sin(th), -np.cos(th)])
        v = self.l * thd * np.array([np.cos(th), np.sin(th)])
        return model.initial_state({"p_m": self.m * v, "r": r})

    def test_tension_at_a_state_and_the_paper_omission(self):
        bg = models.cartesian_pendulum(self.m, self.l, self.g)
        cg = assign_causality(bg)
        good = assemble(cg)
        printed = assemble(cg, omit_rate_terms=True)
        x = self.state(good, 1.0, 1.5)
        tension = self.m * (self.g * np.cos(1.0) + self.l * 1.5 ** 2)
        assert good.evaluate(0, x).U2[0] == pytest.approx(tension, rel=1e-13)    # 17.35 N
        # the seed's printed (15c) misses exactly m l thetadot^2 (method.md: 10.60 N)
        assert printed.evaluate(0, x).U2[0] == pytest.approx(tension - self.m * self.l * 1.5 ** 2,
                                                             rel=1e-13)

    def test_tension_along_a_run(self):
        bg = models.cartesian_pendulum(self.m, self.l, self.g)
        model = assemble(assign_causality(bg))
        x0 = self.state(model, 1.0, 1.5)
        r = simulate(model, (0, 5), x0, t_eval=np.linspace(0, 5, 501), method="DOP853",
                     rtol=1e-12, atol=1e-12)
        pos = r.state("r")
        vel = r.state("p_m") / self.m
        cos_th = -pos[1] / np.linalg.norm(pos, axis=0)
        thd2 = np.sum(vel ** 2, axis=0) / self.l ** 2
        tension = self.m * (self.g * cos_th + self.l * thd2)
        assert np.max(np.abs(r.constraint_force("Se*_rod")[0] - tension)) < 1e-7
        assert r.max_abs_phi < 1e-8

    def test_without_the_rate_term_the_rod_drifts(self):
        cg = assign_causality(models.cartesian_pendulum(self.m, self.l, self.g))
        printed = assemble(cg, omit_rate_terms=True)
        x0 = self.state(printed, 1.0, 1.5)
        r = simulate(printed, (0, 5), x0, t_eval=np.linspace(0, 5, 101), rtol=1e-10,
                     atol=1e-10)
        # the rod length drifts by far more than any tolerance (metres within 5 s)
        assert r.max_abs_phi > 0.5


class TestEq14Branch:
    """An explicit Se* whose constraint sees a resistor: T_LE invertible, Eq. (14)."""

    def test_against_hand_solution(self):
        m, b, F, v0 = 2.0, 0.5, 1.0, 3.0
        model, r = run(models.damped_constraint(m, b, F), {"p_m": m * v0}, 4.0)
        assert r.branch == "14"
        v = F / b + (v0 - F / b) * np.exp(-b * r.t / m)
        assert np.max(np.abs(r.state("p_m") / m - v)) < 1e-9
        assert np.max(np.abs(r.constraint_force("u")[0] - b * v)) < 1e-9
        assert r.max_abs_constraint_flow < 1e-12
