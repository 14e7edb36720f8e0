"""Mode shapes in joint coordinates against closed forms.

- The double pendulum of two equal point masses on equal massless links, hanging:
  in absolute angles the slow mode is (1, sqrt 2) and the fast one (1, -sqrt 2), with
  omega^2 = (g / l)(2 -+ sqrt 2). In joint coordinates (J2 is relative) that is
  q = (1, sqrt 2 - 1) and (1, -sqrt 2 - 1); mode_shapes scales each so its largest
  joint excursion is the amplitude. Point masses are bodies with a central inertia of
  1e-12 kg m^2 (its effect on the shapes is of that order).
- Two uniform rods of different masses and lengths: the shapes equal the null vectors of
  K - omega^2 M in absolute angles.
- A damped compound pendulum: damping ratio c / (2 sqrt(k I)); overdamped, two real
  modes with the same shape; the rotor of the three-body mechanism (no restoring
  force) is a rigid-body mode.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bondgraph import ModelError
from elements import (
    Inertia, Mechanism, RevoluteJoint, RigidBody, linearize_mechanism, mechanism_equilibrium,
    mode_shapes, models,
)
from test_linearize import double_pendulum

G = 9.81


def point_mass_double_pendulum(m: float, l: float, g: float = G) -> Mechanism:
    """Bobs of mass m at distance l below J1 (ground) and J2 (at bob 1), in the x-y
    plane, hinges about z, hanging along -y at q = 0."""
    mech = Mechanism("point_double_pendulum", gravity=(0.0, -g, 0.0))
    c = 1e-12
    b1 = mech.add_body(RigidBody("bob1", m, Inertia.principal(c, c, c)))
    b2 = mech.add_body(RigidBody("bob2", m, Inertia.principal(c, c, c)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, b1, child_point=(0, l, 0), axis=(0, 0, 1)))
    mech.add_joint(RevoluteJoint("J2", b1, b2, child_point=(0, l, 0), axis=(0, 0, 1)))
    return mech


def test_double_pendulum_shapes_equal_the_closed_form():
    m, l, amp = 0.7, 0.9, 0.3
    mm = point_mass_double_pendulum(m, l).assemble()
    lin = linearize_mechanism(mm, {"J1": 0.0, "J2": 0.0})
    shapes = mode_shapes(lin, amplitude=amp)
    for s in shapes:
        print(s)
    assert [s.kind for s in shapes] == ["oscillatory", "oscillatory"]
    assert [s.coordinates for s in shapes] == [("J1", "J2")] * 2
    r2 = math.sqrt(2.0)
    w = np.sqrt(G / l * np.array([2 - r2, 2 + r2]))
    got_w = np.array([s.damped_frequency for s in shapes])
    assert np.allclose(got_w, w, rtol=1e-9, atol=0)
    assert np.allclose([s.frequency_hz for s in shapes], w / (2 * math.pi), rtol=1e-9)
    # joint coordinates of (1, +-sqrt 2) in absolute angles, the largest scaled to amp
    slow = amp * np.array([1.0, r2 - 1.0])
    fast = amp * np.array([-1.0 / (r2 + 1.0), 1.0])
    for s, want in zip(shapes, (slow, fast)):
        err = np.abs(s.vector - want).max() / amp
        absolute = np.array([s.vector[0], s.vector[0] + s.vector[1]]).real
        print(f"mode {s.index}: joint shape {s.vector.real}, absolute angles ratio "
              f"{absolute[1] / absolute[0]:+.12f}, error {err:.1e}")
        assert err < 1e-8
        assert np.abs(s.vector.imag).max() < 1e-8 * amp
    assert abs(shapes[0].vector[1] / shapes[0].vector[0] + 1 - r2) < 1e-8     # 1 : sqrt 2
    assert abs(shapes[1].vector[1] / shapes[1].vector[0] + 1 + r2) < 1e-8     # 1 : -sqrt 2
    # the motion: q0 + shape sin(w t), the largest excursion = amp
    t = np.linspace(0.0, 2 * math.pi / w[0], 9)
    q = shapes[0].coordinates_at(t)
    assert np.allclose(q["J1"], amp * np.sin(w[0] * t), atol=1e-12)
    assert np.allclose(q["J2"], amp * (r2 - 1) * np.sin(w[0] * t), atol=1e-8 * amp)
    assert "J1 0.3 rad, J2 0.1243 rad" in str(shapes[0])


def test_rod_double_pendulum_shapes_are_null_vectors_of_k_minus_w2_m():
    """Uniform rods (m1, l1) and (m2, l2), hanging: M and K in absolute angles as in
    test_linearize; the shape of mode k is (K_22 - w^2 M_22, -(K_21 - w^2 M_21)) in
    absolute angles, (phi_1, phi_2 - phi_1) in joint coordinates."""
    m1, l1, m2, l2 = 1.3, 0.8, 0.6, 0.5
    mm = double_pendulum(m1, l1, m2, l2, G).assemble()
    lin = linearize_mechanism(mm, mechanism_equilibrium(mm, {"J1": 0.02, "J2": -0.01}))
    M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, m2 * l1 * l2 / 2],
                  [m2 * l1 * l2 / 2, m2 * l2**2 / 3]])
    K = np.diag([(m1 / 2 + m2) * G * l1, m2 * G * l2 / 2])
    w2, _ = np.linalg.eig(np.linalg.solve(M, K))
    for s, wk2 in zip(mode_shapes(lin), np.sort(w2.real)):
        phi = np.array([K[1, 1] - wk2 * M[1, 1], -(K[1, 0] - wk2 * M[1, 0])])
        q = np.array([phi[0], phi[1] - phi[0]])
        q = q / q[np.argmax(np.abs(q))]
        print(f"mode {s.index}: {s.vector.real} against {q}")
        assert abs(s.damped_frequency ** 2 - wk2) < 1e-9 * wk2
        assert np.abs(s.vector - q).max() < 1e-8


def test_damping_ratio_real_and_rigid_modes():
    m, l = 1.7, 0.9
    k, inertia = m * G * l / 2, m * l * l / 3
    for c, kinds in ((0.4, ["oscillatory"]), (40.0, ["real", "real"])):
        mech = models.compound_pendulum(m, l, G)
        mech.joint("J1").add_damper(c)
        lin = linearize_mechanism(mech.assemble(), {"J1": 0.0})
        shapes = mode_shapes(lin, amplitude=0.1)
        print("\n".join(map(str, shapes)))
        assert [s.kind for s in shapes] == kinds
        if c < 1:
            zeta = c / (2 * math.sqrt(k * inertia))
            assert abs(shapes[0].damping_ratio - zeta) < 1e-8
            assert abs(shapes[0].damped_frequency -
                       math.sqrt(k / inertia) * math.sqrt(1 - zeta**2)) < 1e-8
        else:                       # overdamped: roots of I s^2 + c s + k, real, negative
            roots = np.sort(np.roots([inertia, c, k]).real)[::-1]
            got = [s.eigenvalue.real for s in shapes]
            assert np.allclose(sorted(got, reverse=True), roots, rtol=1e-8)
            assert all(s.vector[0] == 0.1 and "time constant" in s.label for s in shapes)
    # the three-body mechanism's rotor turns freely: a rigid-body mode, shape J1 alone
    mm = models.three_body_prismatic().assemble()
    eq = mechanism_equilibrium(mm, {"J3": -0.01}, inputs={"J1": 0.0})
    lin = linearize_mechanism(mm, eq, inputs=["J1"], u0={"J1": 0.0})
    shapes = mode_shapes(lin, amplitude=0.2, units={"J3": "m"})
    print("\n".join(map(str, shapes)))
    assert [s.kind for s in shapes] == ["rigid", "oscillatory", "oscillatory"]
    assert np.allclose(shapes[0].vector, [0.2, 0.0, 0.0], atol=1e-9)
    assert math.isnan(shapes[0].damping_ratio) and "rigid-body mode" in shapes[0].label
    assert abs(shapes[2].natural_frequency - math.sqrt(500.0)) < 1e-8
    assert "J3 0.2 m" in str(shapes[2])


def test_bad_amplitude_and_a_model_without_joint_coordinates_are_refused():
    from bondgraph import assemble, assign_causality, linearize
    from bondgraph import models as core_models
    lin = linearize_mechanism(models.compound_pendulum(1.0, 0.5).assemble(), {"J1": 0.0})
    with pytest.raises(ModelError, match=r"amplitude must be a positive number.*-0\.1"):
        mode_shapes(lin, amplitude=-0.1)
    motor = assemble(assign_causality(core_models.dc_motor(12.0, 1.2, 0.05, 0.08, 0.02,
                                                           0.01)))
    plain = linearize(motor, {"p_La": 0.0, "p_J": 0.0}, inputs=["V"])
    with pytest.raises(ModelError, match=r"no joint-coordinate states.*p_La.*"
                                         r"linearize_mechanism"):
        mode_shapes(plain, require_equilibrium=False)
