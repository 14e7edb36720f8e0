"""The element library against closed forms, conservation laws and Newton-Euler."""

from __future__ import annotations

import numpy as np
import pytest

from elements import (
    Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody, SphericalJoint, FixedJoint,
    PointForce, BodyMoment, models,
)


# ---------------------------------------------------------------------------------------
# Torque-free asymmetric body
# ---------------------------------------------------------------------------------------

J_TUMBLE = np.diag([0.1, 0.2, 0.3])      # intermediate axis: body y


@pytest.fixture(scope="module")
def tumbling():
    mech = Mechanism("tumbling", gravity=(0, 0, 0))
    mech.add_body(RigidBody("B", 2.0, Inertia.about_center(J_TUMBLE)))
    mm = mech.assemble()
    # spin about the intermediate axis with a tiny perturbation: it flips
    w0 = np.array([1e-3, 2.0, 1e-3])
    x0 = mm.initial_state(free={"B": {"angular_velocity": w0, "velocity": [0.1, 0, 0]}})
    res = mm.simulate((0.0, 30.0), x0=x0, t_eval=np.linspace(0, 30, 601), rtol=1e-11,
                      atol=1e-12)
    return mm, res


class TestTorqueFreeBody:
    J = J_TUMBLE

    @pytest.fixture
    def run(self, tumbling):
        return tumbling

    def test_energy_and_global_angular_momentum_are_constant(self, run):
        mm, res = run
        b = res.body("B")
        ke = res.energy.kinetic
        assert np.abs(ke - ke[0]).max() / ke[0] < 1e-9
        H = np.einsum("nij,jk,kn->in", b.rotation, self.J, b.angular_velocity_body)
        assert np.abs(H - H[:, :1]).max() / np.linalg.norm(H[:, 0]) < 1e-9
        # linear momentum too
        assert np.abs(b.velocity - b.velocity[:, :1]).max() < 1e-12

    def test_intermediate_axis_flip(self, run):
        _, res = run
        wy = res.body("B").angular_velocity_body[1]
        assert wy[0] > 1.9 and wy.min() < -1.9     # the spin about y reverses


# ---------------------------------------------------------------------------------------
# Conical pendulum on a spherical joint
# ---------------------------------------------------------------------------------------

def test_conical_pendulum_reaction():
    m, l, g, theta = 1.5, 0.8, 9.81, 0.5
    Jc = np.diag([0.02, 0.02, 0.005])
    I1, I3 = Jc[0, 0] + m * l ** 2, Jc[2, 2]
    Omega = np.sqrt(m * g * l / ((I1 - I3) * np.cos(theta)))     # steady precession
    mech = Mechanism("conical", gravity=(0, 0, -g))
    bob = mech.add_body(RigidBody("bob", m, Inertia.about_center(Jc)))
    mech.add_joint(SphericalJoint("S", mech.ground, bob, child_point=(0, 0, l)))
    mm = mech.assemble()
    tilt = np.array([[1, 0, 0], [0, np.cos(theta), -np.sin(theta)],
                     [0, np.sin(theta), np.cos(theta)]])
    x0 = mm.initial_state({"S": tilt}, {"S": [0.0, 0.0, Omega]})
    T = 2 * np.pi / Omega
    res = mm.simulate((0, 2 * T), x0=x0, t_eval=np.linspace(0, 2 * T, 81), rtol=1e-11,
                      atol=1e-12)
    pos = res.body("bob").position
    rho = np.hypot(pos[0], pos[1])
    assert np.abs(rho - l * np.sin(theta)).max() < 1e-8          # stays conical
    assert np.abs(pos[2] + l * np.cos(theta)).max() < 1e-8
    F = res.joint("S").force
    inward = -pos[:2] / rho
    expected_h = m * Omega ** 2 * l * np.sin(theta)
    assert np.abs(np.sum(F[:2] * inward, axis=0) - expected_h).max() < 1e-7
    assert np.abs(F[2] - m * g).max() < 1e-7
    assert np.abs(res.joint("S").moment).max() < 1e-9            # a spherical joint


# ---------------------------------------------------------------------------------------
# Analytic modulus rates against central differences
# ---------------------------------------------------------------------------------------

def _random_state(mm, rng):
    x = mm.initial_state(qd={"J1": 1.3, "J2": -0.7, "J3": 0.2} if "J3" in
                         mm.mechanism.joints else {})
    x = x + 0.05 * rng.normal(size=x.size)
    for b in mm.mechanism.bodies.values():
        s = mm.model.state_slices[b.q]
        x[s] /= np.linalg.norm(x[s])
        # moderate rates (a few rad/s, m/s), whatever the inertia
        x[mm.model.state_slices[b.angular_momentum]] = b.inertia.matrix @ rng.normal(size=3)
        x[mm.model.state_slices[b.linear_momentum]] = b.mass * rng.normal(size=3)
    return x


def _mechanisms():
    three = models.three_body_prismatic()
    mixed = Mechanism("mixed", gravity=(0, 0, -9.81))
    a = mixed.add_body(RigidBody("a", 1.0, Inertia.principal(0.01, 0.02, 0.025)))
    b = mixed.add_body(RigidBody("b", 0.5, Inertia.principal(0.003, 0.004, 0.005)))
    c = mixed.add_body(RigidBody("c", 0.7, Inertia.principal(0.002, 0.003, 0.004)))
    mixed.add_joint(SphericalJoint("S", mixed.ground, a, child_point=(0.1, 0.2, 0.3)))
    mixed.add_joint(FixedJoint("F", a, b, parent_point=(0.2, 0, 0), child_point=(0, 0.1, 0)))
    mixed.add_joint(PrismaticJoint("P", b, c, parent_point=(0.1, 0.1, 0), child_point=(0.05, 0, 0),
                                   axis=(1, 1, 0)))
    mixed.add_load(PointForce("push", c, (0.1, 0, 0.2), [1.0, 0.0, -2.0], frame="body"))
    mixed.add_load(PointForce("pull", a, (0.0, 0.1, 0.0), [0.0, 3.0, 1.0]))
    mixed.add_load(BodyMoment("twist", b, [0.1, 0.2, 0.3], frame="global"))
    return [three, mixed]


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: m.name)
def test_every_modulus_rate_against_a_central_difference(mech):
    mm = mech.assemble()
    rng = np.random.default_rng(5)
    model = mm.model
    checked = 0
    for _ in range(3):
        x = _random_state(mm, rng)
        xdot = model.evaluate(0.0, x).xdot
        for name, mod, *_ in model.layout.dynamic:
            deps = [x[model.state_slices[d]] for d in mod.depends_on]
            rates = [xdot[model.state_slices[d]] for d in mod.depends_on]
            h = 1e-6
            plus = mod.value_at(*[d + h * r for d, r in zip(deps, rates)])
            minus = mod.value_at(*[d - h * r for d, r in zip(deps, rates)])
            fd = (plus - minus) / (2 * h)
            an = mod.rate_at(*deps, *rates)
            scale = 1.0 + np.abs(an).max()
            assert np.abs(fd - an).max() < 1e-7 * scale, name
            checked += 1
    assert checked > 10


# ---------------------------------------------------------------------------------------
# Reactions against Newton-Euler on the solved motion
# ---------------------------------------------------------------------------------------

def _wrench_residuals(res, mm, i):
    """Per body: sum of the reported joint reactions, axis efforts, loads and gravity
    minus the rates of momentum (from the solved state derivative)."""
    mech = mm.mechanism
    model = mm.model
    x = res.raw.x[:, i]
    xdot = model.evaluate(res.t[i], x, stabilization=res.stabilization).xdot
    out = {}
    F = {n: mech.gravity * b.mass for n, b in mech.bodies.items()}
    M = {n: np.zeros(3) for n in mech.bodies}
    pos = {n: res.body(n).position[:, i] for n in mech.bodies}

    def add(body, force, moment, at):
        if body.is_ground:
            return
        F[body.name] = F[body.name] + force
        M[body.name] = M[body.name] + moment + np.cross(at - pos[body.name], force)

    for name, j in mech.joints.items():
        jr = res.joint(name)
        at = jr.point[:, i]
        add(j.child, jr.force[:, i], jr.moment[:, i], at)
        add(j.parent, -jr.force[:, i], -jr.moment[:, i], at)
        if j.n_free:
            tau = jr.spring[i] + jr.damper[i] + jr.actuator[i]    # on the child, along the axis
            if j.type_name == "revolute":
                ax = res.body(j.child.name).rotation[i] @ j.Fb[:, 2]
                add(j.child, np.zeros(3), tau * ax, at)
                add(j.parent, np.zeros(3), -tau * ax, at)
            else:   # prismatic: along the parent's axis, at Q on the child and P on the parent
                Aa = np.eye(3) if j.parent.is_ground else res.body(j.parent.name).rotation[i]
                ax = Aa @ j.Fa[:, 2]
                ra = np.zeros(3) if j.parent.is_ground else pos[j.parent.name]
                add(j.child, tau * ax, np.zeros(3), at)
                add(j.parent, -tau * ax, np.zeros(3), ra + Aa @ j.P)
    for load in mech.loads.values():
        A = res.body(load.body.name).rotation[i]
        v = np.asarray(load.value, dtype=float)
        vg = v if load.frame == "global" else A @ v
        if isinstance(load, PointForce):
            add(load.body, vg, np.zeros(3), pos[load.body.name] + A @ load.point)
        else:
            add(load.body, np.zeros(3), vg, pos[load.body.name])
    for name, b in mech.bodies.items():
        pdot = xdot[model.state_slices[b.linear_momentum]]
        hdot_b = xdot[model.state_slices[b.angular_momentum]]
        A = res.body(name).rotation[i]
        wb = res.body(name).angular_velocity_body[:, i]
        # d/dt (A h^b) = A (hdot^b + w^b x h^b)
        Hdot = A @ (hdot_b + np.cross(wb, b.inertia.matrix @ wb))
        out[name] = (F[name] - pdot, M[name] - Hdot)
    return out


def test_reactions_satisfy_newton_euler_three_body():
    mm = models.three_body_prismatic().assemble()
    res = mm.simulate((0, 2.0), t_eval=np.linspace(0, 2, 21), rtol=1e-10, atol=1e-10)
    for i in range(0, 21, 4):
        for name, (dF, dM) in _wrench_residuals(res, mm, i).items():
            assert np.abs(dF).max() < 1e-8, (name, i, dF)
            assert np.abs(dM).max() < 1e-8, (name, i, dM)


def test_reactions_satisfy_newton_euler_all_joint_types_and_loads():
    mech = _mechanisms()[1]
    mm = mech.assemble()
    res = mm.simulate((0, 0.5), qd={"P": 0.3}, t_eval=np.linspace(0, 0.5, 6), rtol=1e-10,
                      atol=1e-10)
    assert res.success
    for i in range(6):
        for name, (dF, dM) in _wrench_residuals(res, mm, i).items():
            assert np.abs(dF).max() < 1e-8, (name, i, dF)
            assert np.abs(dM).max() < 1e-8, (name, i, dM)


def test_state_dependent_actuator_equals_a_spring_and_projection_keeps_the_manifold():
    """tau = -k q read from the joint's coordinate state behaves exactly like a spring."""
    from bondgraph import StateFunction

    def pendulum(**attach):
        mech = Mechanism("p", gravity=(0.0, -9.81, 0.0))
        rod = mech.add_body(RigidBody("rod", 1.0, Inertia.rod(1.0, 0.4, axis=1, thin=1e-4)))
        mech.add_joint(RevoluteJoint("J1", mech.ground, rod, child_point=(0, 0.2, 0),
                                     axis=(0, 0, 1), **attach))
        return mech.assemble()

    k = 3.0
    a = pendulum(spring=k)
    b = pendulum(actuator=StateFunction(lambda t, s: -k * s["J1.coord"], ("J1.coord",)))
    ra = a.simulate((0, 2), {"J1": 0.8}, t_eval=np.linspace(0, 2, 41), rtol=1e-11, atol=1e-11)
    rb = b.simulate((0, 2), {"J1": 0.8}, t_eval=np.linspace(0, 2, 41), rtol=1e-11, atol=1e-11)
    assert np.abs(ra.joint("J1").q - rb.joint("J1").q).max() < 1e-8
    assert np.allclose(ra.joint("J1").spring, rb.joint("J1").actuator, atol=1e-7)
    # with projection (restarts at every output time) and no Baumgarte
    rp = a.simulate((0, 2), {"J1": 0.8}, t_eval=np.linspace(0, 2, 41), rtol=1e-11,
                    atol=1e-11, stabilization=None, projection=True)
    assert rp.max_abs_phi < 1e-12
    assert np.abs(rp.joint("J1").q - ra.joint("J1").q).max() < 1e-7
