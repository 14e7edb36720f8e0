"""Linear models, modes and equilibria against closed forms and an independent code.

- Pendulum and double pendulum about the hanging equilibrium: natural frequencies equal
  the closed forms to 1e-9 (relative).
- A chain of 10 bodies bent and moving: A and B equal Pinocchio's analytic derivatives
  of ABA (``computeABADerivatives``) to 1e-8; the joint coordinates are the same on both
  sides, so the change of coordinates is the identity map z = [q, v].
- The DC motor: voltage -> speed equals k / ((L s + R)(J s + b) + k^2) to 1e-10 and the
  sympy derivation of the same graph; the steady speed equals k V / (R b + k^2).
- The three-body mechanism: its linear model's response to a small disturbance differs
  from the nonlinear run by O(eps^2) (slope of a log-log fit printed).
- A four-bar linkage (a closed loop) about its gravity equilibrium: the frequency equals
  the energy method's sqrt(V''/M) in the independent coordinate.
"""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import ModelError, assemble, assign_causality, find_equilibrium, linearize
from bondgraph import models as core_models
from elements import (
    Inertia, Mechanism, RevoluteJoint, RigidBody, inverse_dynamics, linearize_mechanism,
    mechanism_equilibrium, models,
)


# -- pendulums --------------------------------------------------------------------------------
def test_pendulum_frequency_equals_closed_form():
    """A uniform rod on a hinge: omega^2 = (m g l / 2) / (m l^2 / 3) = 3 g / (2 l). The
    differences are extrapolated (Ridders) to ~1e-13 here, so 1e-9 leaves a margin of
    1e4 while any error in the model's dynamics (a wrong inertia, lever or gravity) is
    of order 1."""
    m, l, g = 1.7, 0.9, 9.81
    pend = models.compound_pendulum(m, l, g).assemble()
    lin = linearize_mechanism(pend, {"J1": 0.0}, inputs=["J1"],
                              outputs=["J1.q", "rod.x", "J1.Fy"])
    assert lin.state_names == ("J1.q", "J1.qd") and lin.input_names == ("J1",)
    w = np.sqrt(1.5 * g / l)
    modes = lin.modes()
    print(modes.table())
    assert np.allclose(modes.natural_frequencies, w, rtol=1e-9, atol=0)
    assert np.allclose(modes.frequencies_hz, w / (2 * np.pi), rtol=1e-9, atol=0)
    assert np.allclose(modes.damping_ratios, 0.0, atol=1e-9)
    # B: the torque's angular acceleration 1 / (m l^2 / 3); C: the rod's centre moves
    # l/2 per radian along x; the hinge carries the weight (reaction on the rod, +y)
    assert abs(lin.B[1, 0] - 3.0 / (m * l * l)) < 1e-9 * 3.0 / (m * l * l)
    assert abs(lin.C[1, 0] - l / 2) < 1e-10
    assert abs(lin.y0[2] - m * g) < 1e-9
    assert lin.max_error < 1e-9
    # an operating point that is not an equilibrium is refused for modes, naming the
    # state whose rate is not zero
    tilted = linearize_mechanism(pend, {"J1": 0.4})
    with pytest.raises(ModelError, match=r"not an equilibrium.*J1\.qd"):
        tilted.modes()
    assert tilted.modes(require_equilibrium=False).eigenvalues.size == 2


def double_pendulum(m1, l1, m2, l2, g):
    """Two uniform rods in the x-y plane on hinges about z (J1 at the origin, J2 at
    rod 1's end), hanging along -y at q = 0."""
    mech = Mechanism("double_pendulum", gravity=(0.0, -g, 0.0))
    rods = []
    for name, m, l in (("rod1", m1, l1), ("rod2", m2, l2)):
        c = m * l * l / 12
        rods.append(mech.add_body(RigidBody(name, m, Inertia.principal(c, c, c))))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rods[0], child_point=(0, l1 / 2, 0),
                                 axis=(0, 0, 1)))
    mech.add_joint(RevoluteJoint("J2", rods[0], rods[1], parent_point=(0, -l1 / 2, 0),
                                 child_point=(0, l2 / 2, 0), axis=(0, 0, 1)))
    return mech


def test_double_pendulum_frequencies_equal_closed_forms():
    """Hanging still, in absolute angles: M = [[m1 l1^2/3 + m2 l1^2, m2 l1 l2/2],
    [m2 l1 l2/2, m2 l2^2/3]], K = diag((m1/2 + m2) g l1, m2 g l2/2); omega^2 are the
    roots of det(K - omega^2 M) = 0 (the joint's relative angle gives the same
    frequencies). Tolerance as for the pendulum."""
    m1, l1, m2, l2, g = 1.3, 0.8, 0.6, 0.5, 9.81
    mm = double_pendulum(m1, l1, m2, l2, g).assemble()
    eq = mechanism_equilibrium(mm, {"J1": 0.05, "J2": -0.03})
    assert max(abs(eq.q["J1"]), abs(eq.q["J2"])) < 1e-9 and eq.residual < 1e-9
    lin = linearize_mechanism(mm, eq)
    M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, m2 * l1 * l2 / 2],
                  [m2 * l1 * l2 / 2, m2 * l2**2 / 3]])
    K = np.diag([(m1 / 2 + m2) * g * l1, m2 * g * l2 / 2])
    a, b, c = np.linalg.det(M), M[0, 0] * K[1, 1] + M[1, 1] * K[0, 0] - 2 * M[0, 1] * K[0, 1], \
        np.linalg.det(K)
    w2 = np.array([(b - np.sqrt(b * b - 4 * a * c)) / (2 * a),
                   (b + np.sqrt(b * b - 4 * a * c)) / (2 * a)])
    closed = np.sqrt(w2)
    modes = lin.modes()
    print(modes.table())
    got = modes.natural_frequencies.reshape(2, 2)      # (a conjugate pair per mode)
    err = np.abs(got - closed[:, None]).max() / closed.min()
    print(f"double pendulum: closed forms {closed} rad/s, relative error {err:.2e}")
    assert err < 1e-9
    # the slow mode: both rods swing the same way (in-phase relative angle small)
    shape = modes.shape(0)
    assert abs(shape["J1.q"]) > abs(shape["J2.q"]) > 0


# -- the chain of 10 against Pinocchio ------------------------------------------------------------
def test_chain_of_10_matches_pinocchios_aba_derivatives():
    """elements.models.chain(10) rebuilt in Pinocchio from its definition (joint i 0.2 m
    below joint i-1, revolute about x for odd i, y for even i, a 1 kg cube of side 0.05
    centred 0.1 m below its joint). At a bent, moving, driven state both sides use the
    same coordinates, so A = [[0, I], [ddq_dq, ddq_dv]] and B = [0; M^-1] directly.
    Tolerance 1e-8 (absolute; |A| reaches 150): the finite differences' estimated error
    here is ~1e-9, Pinocchio's analytic derivatives are exact to rounding."""
    pin = pytest.importorskip("pinocchio", reason="the test extra's pin is not installed")
    n = 10
    mech, q0 = models.chain(n, bend=0.3)
    mm = mech.assemble()
    rng = np.random.default_rng(21)
    v = rng.uniform(-1.0, 1.0, n)
    tau = rng.uniform(-2.0, 2.0, n)
    names = [f"J{i}" for i in range(1, n + 1)]
    lin = linearize_mechanism(mm, q0, dict(zip(names, v)), inputs=names,
                              u0=dict(zip(names, tau)))
    model = pin.Model()
    parent = 0
    inertia = pin.Inertia(1.0, np.array([0.0, 0.0, -0.1]), np.eye(3) * 0.05**2 / 6)
    for i in range(1, n + 1):
        jm = pin.JointModelRX() if i % 2 else pin.JointModelRY()
        place = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.0 if i == 1 else -0.2]))
        parent = model.addJoint(parent, jm, place, f"J{i}")
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    data = model.createData()
    q = np.array([q0[k] for k in names])
    pin.computeABADerivatives(model, data, q, v, tau)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [data.ddq_dq, data.ddq_dv]])
    B = np.vstack([np.zeros((n, n)), data.Minv])
    assert lin.state_names == tuple([f"{k}.q" for k in names] + [f"{k}.qd" for k in names])
    err_a, err_b = np.abs(lin.A - A).max(), np.abs(lin.B - B).max()
    acc = pin.aba(model, data, q, v, tau)
    print(f"chain10: |A - A_pin| = {err_a:.2e} (|A| up to {np.abs(A).max():.0f}), "
          f"|B - B_pin| = {err_b:.2e}, estimated {lin.max_error:.2e}, qdd "
          f"{np.abs(lin.xdot0[n:] - acc).max():.1e}")
    assert err_a < 1e-8 and err_b < 1e-8
    assert np.abs(lin.xdot0[n:] - acc).max() < 1e-10
    # the estimate is of the right size: neither far below the error nor far above
    assert err_a < 10 * lin.max_error and lin.max_error < 1e-8


# -- the DC motor (a plain bond graph) -----------------------------------------------------------
def test_dc_motor_transfer_function_and_steady_speed():
    """L di/dt = V - R i - k w, J dw/dt = k i - b w: the speed's response to the voltage
    is G(s) = k / ((L s + R)(J s + b) + k^2) and the steady speed k V / (R b + k^2). The
    graph is linear, so the matrices are exact to rounding: 1e-10 is ~1e5 above it."""
    V, R, L, k, J, b = 12.0, 1.2, 0.05, 0.08, 0.02, 0.01
    model = assemble(assign_causality(core_models.dc_motor(V, R, L, k, J, b)))
    eq = find_equilibrium(model, {"p_La": 0.0, "p_J": 0.0})
    speed = eq.x[model.state_slices["p_J"]][0] / J
    assert abs(speed - k * V / (R * b + k * k)) < 1e-10 * speed
    lin = linearize(model, eq.x, inputs=["V"], outputs=["J.f", "La.f"])
    assert lin.method.startswith("exact")
    s = 1j * np.logspace(-2, 3, 11)
    hand = k / ((L * s + R) * (J * s + b) + k * k)
    got = lin.transfer("V", "J.f", s)
    err = np.abs(got - hand).max() / np.abs(hand).max()
    print(f"DC motor voltage -> speed: relative error {err:.2e}")
    assert err < 1e-10
    assert np.allclose(lin.y0, [speed, V * b / (R * b + k * k)], rtol=1e-10)
    # the sympy derivation of the same graph gives the same A and B
    import sympy
    from bondgraph import symbolic_equations
    Vs = sympy.Symbol("V")
    eqs = symbolic_equations(core_models.dc_motor(Vs, R, L, k, J, b))
    A_sym = np.array(eqs.xdot.jacobian(eqs.states), dtype=float)
    B_sym = np.array(eqs.xdot.jacobian([Vs]), dtype=float)
    assert np.allclose(lin.A, A_sym, rtol=1e-13, atol=0) and np.allclose(lin.B, B_sym)
    # python-control and scipy give the same frequency response
    ctl = pytest.importorskip("control", reason="the optional 'control' extra")
    sys_c = lin.to_control()
    assert list(sys_c.input_labels) == ["V"] and list(sys_c.output_labels) == ["J_f", "La_f"]
    assert np.allclose(sys_c(s[3])[0, 0], hand[3], rtol=1e-10)
    assert np.allclose(ctl.dcgain(sys_c)[0], k / (R * b + k * k), rtol=1e-10)
    from scipy.signal import step
    t_end = 10 * 2 * np.pi / np.abs(np.linalg.eigvals(lin.A)).min()
    _, y = step(lin.select(outputs=["J.f"]).to_scipy(), T=np.linspace(0, t_end, 200))
    assert abs(y[-1] - k / (R * b + k * k)) < 1e-6 * k / (R * b + k * k)


def test_equilibrium_failure_is_reported():
    """A hinge torque larger than the rod's largest gravity moment m g l / 2 holds it
    nowhere: the message says no equilibrium was found and names the condition left."""
    m, l, g = 1.0, 1.0, 9.81
    pend = models.compound_pendulum(m, l, g).assemble()
    tau = 0.3 * m * g * l              # below m g l / 2: held at sin q = tau / (m g l / 2)
    eq = mechanism_equilibrium(pend, {"J1": 0.1}, inputs={"J1": tau})
    assert abs(np.sin(eq.q["J1"]) - tau / (0.5 * m * g * l)) < 1e-10
    with pytest.raises(ModelError, match=r"no equilibrium found.*J1\.qdd"):
        mechanism_equilibrium(pend, {"J1": 0.1}, inputs={"J1": 0.6 * m * g * l})


def test_holding_a_gravity_loaded_arm_equals_inverse_dynamics():
    """Solving for the efforts that hold a double pendulum still at a pose gives
    inverse dynamics at zero rate and acceleration (1e-9 N m)."""
    mm = double_pendulum(1.3, 0.8, 0.6, 0.5, 9.81).assemble()
    q = {"J1": 0.7, "J2": -0.4}
    eq = mechanism_equilibrium(mm, q, inputs={"J1": 0.0, "J2": 0.0},
                               solve_for=["J1", "J2"])
    ref = inverse_dynamics(mm, q, {"J1": 0.0, "J2": 0.0}, {"J1": 0.0, "J2": 0.0})
    assert eq.q["J1"] == pytest.approx(0.7, abs=1e-14)
    assert abs(eq.inputs["J1"] - ref["J1"]) < 1e-9 and abs(eq.inputs["J2"] - ref["J2"]) < 1e-9
    assert abs(ref["J1"]) > 1.0          # (a real load, not a trivial zero)


# -- the three-body mechanism: second order in the disturbance -----------------------------------
def test_three_body_linear_model_is_second_order_accurate():
    """The three-body example's mechanism (its moment M as the input J1, zero at the
    operating point) about its static equilibrium (m2 sagged by m2 g / K on the spring).
    A disturbance of size eps (J2 by eps, J3 by eps/2, J1's rate by 2 eps, and M = eps)
    is simulated nonlinearly (rtol = atol = 1e-12) and with the linear model over 1 s:
    the largest difference of the joint coordinates and rates falls as eps^2 (the slope
    of log error against log eps is 2 within 0.05; first order would be 1)."""
    mm = models.three_body_prismatic(M=0.0).assemble()
    eq = mechanism_equilibrium(mm, {"J3": -0.01}, inputs={"J1": 0.0})
    assert abs(eq.q["J3"] + 9.8 / 500.0) < 1e-12       # m2 g / K (m2 = 1 kg)
    lin = linearize_mechanism(mm, eq, inputs=["J1"])
    t = np.linspace(0.0, 1.0, 51)
    joints = ("J1", "J2", "J3")
    z0 = np.array([eq.q[j] for j in joints] + [0.0, 0.0, 0.0])
    epss = np.array([1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2])
    errors = []
    for eps in epss:
        dz = lin.response(t, {"J1": eps}, {"J2.q": eps, "J3.q": eps / 2, "J1.qd": 2 * eps})
        run = models.three_body_prismatic(M=eps).assemble().simulate(
            (0.0, 1.0), {"J1": 0.0, "J2": eq.q["J2"] + eps, "J3": eq.q["J3"] + eps / 2},
            {"J1": 2 * eps}, t_eval=t, rtol=1e-12, atol=1e-12)
        nonlinear = np.array([run.joint(j).q for j in joints] +
                             [run.joint(j).qd for j in joints])
        errors.append(np.abs(nonlinear - (z0[:, None] + dz)).max())
    slope = np.polyfit(np.log(epss), np.log(errors), 1)[0]
    print("three-body: eps, max |nonlinear - linear|:",
          ", ".join(f"{e:.0e}: {r:.3e}" for e, r in zip(epss, errors)),
          f"; log-log slope {slope:.4f}")
    assert abs(slope - 2.0) < 0.05
    assert errors[0] < 1e-4           # (and small: the linear model is the right one)


# -- a closed loop -----------------------------------------------------------------------------
def test_four_bar_loop_frequency_equals_energy_method():
    """The four-bar (tests/helpers) about its gravity equilibrium, in the crank angle:
    omega^2 = V''(q1) / M(q1), with V the potential energy along the closed
    configurations (central differences at 1e-2 and 5e-3 rad, Richardson-extrapolated)
    and M = 2 T at unit crank rate (T from the bodies' momenta). Tolerance 1e-6: the
    second difference of a potential whose loop closure is solved to ~1e-13 m."""
    from mechanisms import four_bar                 # (tests/helpers)
    mm = four_bar().assemble()
    guess = {"J2": -1.0, "J4": 1.5}
    eq = mechanism_equilibrium(mm, {"J1": -1.0}, guess=guess)
    near = {"J2": eq.q["J2"], "J4": eq.q["J4"]}
    lin = linearize_mechanism(mm, eq, guess=near, outputs=["J3.Fx", "rocker.y"])
    assert lin.state_names == ("J1.q", "J1.qd")
    m = mm.model

    def potential(q1):
        x = mm.initial_state({"J1": q1}, guess=near, tol=1e-14)
        return -sum(mm.mass(b) * float(mm.gravity @ x[m.state_slices[mm.mechanism.body(b).r]])
                    for b in mm.mechanism.bodies)

    q1 = eq.q["J1"]

    def second(h):
        return (potential(q1 + h) - 2 * potential(q1) + potential(q1 - h)) / (h * h)

    stiffness = (4 * second(5e-3) - second(1e-2)) / 3
    x = mm.initial_state({"J1": q1}, {"J1": 1.0}, guess=near)
    kinetic = 0.0
    for name in mm.mechanism.bodies:
        body = mm.mechanism.body(name)
        p, h = x[m.state_slices[body.linear_momentum]], x[m.state_slices[body.angular_momentum]]
        kinetic += p @ p / (2 * mm.mass(name)) + h @ np.linalg.solve(mm.inertia(name), h) / 2
    omega = np.sqrt(stiffness / (2 * kinetic))
    got = lin.modes().natural_frequencies[0]
    print(f"four-bar: omega {got:.12g} rad/s, energy method {omega:.12g}, relative "
          f"{abs(got - omega) / omega:.1e}")
    assert abs(got - omega) < 1e-6 * omega
    # independent coordinates chosen by the user must leave the loop closable
    with pytest.raises(ModelError, match="not independent coordinates"):
        linearize_mechanism(mm, eq, guess=near, coordinates=["J1", "J2"])
