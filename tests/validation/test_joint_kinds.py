"""The joint kinds with several or coupled coordinates (PlanarJoint, CylindricalJoint,
ScrewJoint, UniversalJoint, TranslationJoint) against second routes: Lagrangian models derived here with
sympy, the Cardan velocity ratio of a universal joint closing a loop, and the closed form
of a nut falling along a screw.

The Lagrangian references share only the conventions of elements/joints/kinds.py with the
library (coordinates are the child's motion relative to the parent; at 0 the joint points
coincide and the orientations agree). The bodies' rotations A(q) and centres r(q) are
written out with Rodrigues' formula; skew(w) = A' A^T, T = sum 1/2 m |r'|^2 + 1/2 w^T
(A I A^T) w, V = -sum m g.r + the coordinates' springs, and Lagrange's equations
M(q) q'' = dL/dq - d/dq(dT/dq') q' are derived symbolically, then integrated by scipy. The
algebra is exact: the data are rationals (unit axes from Pythagorean quadruples) and the
expressions polynomials in cos q_i, sin q_i, q_i, q_i' (a sympy ring) reduced by cos^2 +
sin^2 = 1 after each product, which keeps them small (plain sympy expressions of the same
T took minutes to differentiate). The bond graph integrates body momenta and poses under
Baumgarte-stabilised constraints: an independent route to the same motion.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from bondgraph import ModelError

from elements import (
    AxisSpring, CylindricalJoint, Inertia, Mechanism, PlanarJoint, RevoluteJoint, RigidBody,
    ScrewJoint, TranslationJoint, UniversalJoint, prescribed_motion,
)

R = sp.Rational
G = np.array([R(13, 10), R(-46, 5), R(12, 5)])     # gravity along no body or joint axis
T_END = 1.5
T_EVAL = np.linspace(0.0, T_END, 31)


def num(x):
    """Rational data as floats, for the library."""
    return np.array(x, dtype=float)


class Lagrange:
    """Exact polynomials in C_i = cos q_i, S_i = sin q_i, q_i and u_i = q_i' (n
    coordinates), and the equations of motion of bodies written with them."""

    def __init__(self, n):
        self.n = n
        self.ring, *g = sp.ring([f"{k}{i}" for k in "CSqu" for i in range(n)], sp.QQ)
        self.C, self.S, self.q, self.u = (g[k * n:(k + 1) * n] for k in range(4))
        self.circle = [c ** 2 + s ** 2 - 1 for c, s in zip(self.C, self.S)]

    def red(self, p):
        return self.ring(p).rem(self.circle)

    def mul(self, A, B):
        return np.frompyfunc(self.red, 1, 1)(np.dot(A, B))

    def rot(self, axis, i):
        """Rodrigues: I + sin(q_i) K + (1 - cos(q_i)) K^2, K = skew(axis), |axis| = 1."""
        a = list(axis)
        assert sum(x * x for x in a) == 1
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], dtype=object)
        K2 = K.dot(K)
        return np.array([[self.ring(int(r == c)) + self.S[i] * K[r, c] +
                          (1 - self.C[i]) * K2[r, c] for c in range(3)] for r in range(3)])

    def d(self, p, i):
        """d/dq_i."""
        C, S = self.C[i], self.S[i]
        return p.diff(self.q[i]) + p.diff(S) * C - p.diff(C) * S

    def rate(self, X):
        """d/dt of an array of polynomials in the coordinates."""
        return np.frompyfunc(lambda p: self.red(sum(self.d(self.ring(p), i) * self.u[i]
                                                    for i in range(self.n))), 1, 1)(X)

    def rhs(self, bodies, spring_list):
        """y' = f(t, y), y = (q, q'), for ``bodies`` (m, I_c, A, r_c) under gravity G and
        springs (k, coordinate number, rest)."""
        T = V = self.ring(0)
        for m, I, A, r in bodies:
            v = self.rate(r)
            W = self.mul(self.rate(A), A.T)                  # skew(w), w global
            w = np.array([W[2, 1], W[0, 2], W[1, 0]])
            Iw = self.mul(self.mul(self.mul(A, I), A.T), w)
            T += m * self.red(v.dot(v)) / 2 + self.red(w.dot(Iw)) / 2
            V -= m * G.dot(r)
        for k, i, rest in spring_list:
            V += k * (self.q[i] - rest) ** 2 / 2
        T = self.red(T)
        n, L = self.n, T - V
        dT_du = [T.diff(u) for u in self.u]
        M = [[p.diff(u) for u in self.u] for p in dT_du]
        F = [self.d(L, j) - sum(self.d(dT_du[j], k) * self.u[k] for k in range(n))
             for j in range(n)]
        args = [self.ring.symbols]
        f_M = sp.lambdify(args, sp.Matrix([[p.as_expr() for p in row] for row in M]))
        f_F = sp.lambdify(args, sp.Matrix([p.as_expr() for p in F]))

        def f(t, y):
            x = np.concatenate([np.cos(y[:n]), np.sin(y[:n]), y])
            return np.concatenate([y[n:], np.linalg.solve(f_M(x), np.ravel(f_F(x)))])
        return f


def rat(numerators, den):
    """An array of rationals numerators / den."""
    return np.frompyfunc(lambda x: R(x, den), 1, 1)(np.array(numerators))


def springs(joint, first, specs):
    """Attach springs (coordinate name, k, rest) to the library's ``joint`` whose first
    coordinate is the reference's number ``first``; the reference's (k, number, rest)."""
    out = []
    for c, k, rest in specs:
        joint.add_spring(AxisSpring(float(k), float(rest)), coordinate=c)
        out.append((k, first + joint.coordinate_names.index(c), rest))
    return out


# the awkward child: off-diagonal inertia, joint point off its centre ---------------------
M_C = R(4, 5)
I_C = rat([[21, 4, -3], [4, 15, 2], [-3, 2, 11]], 1000)
Q_C = rat([5, -12, 3], 100)                  # its joint point, from its centre
P_G = rat([20, -10, 15], 100)                # the joint point on the ground
GROUND = (np.eye(3, dtype=int), np.zeros(3, dtype=int))


def child(mech):
    return mech.add_body(RigidBody("c", num(M_C), Inertia.about_center(num(I_C))))


def on(parent, P, d, A_rel):
    """The child's (m, I, A, r): turned by A_rel from the parent's (A_a, r_a), its joint
    point at the parent's point P displaced by d (parent coordinates)."""
    A_a, r_a = parent
    A = A_a.dot(A_rel)
    return (M_C, I_C, A, r_a + A_a.dot(P + d) - A.dot(Q_C))


def arm(mech, lg):
    """A parent that moves: an arm swinging on a spring-loaded revolute joint R from the
    ground (the reference's coordinate 0). Returns the arm, its (m, I, A, r) and springs."""
    n0, P0, Q0 = rat([1, 4, 8], 9), rat([0, 30, -10], 100), rat([-10, 15, 2], 100)
    m, I = R(13, 10), rat([[30, -5, 2], [-5, 20, 4], [2, 4, 40]], 1000)
    body = mech.add_body(RigidBody("arm", num(m), Inertia.about_center(num(I))))
    j = mech.add_joint(RevoluteJoint("R", mech.ground, body, parent_point=num(P0),
                                     child_point=num(Q0), axis=num(n0)))
    A = lg.rot(n0, 0)
    return body, (m, I, A, P0 - A.dot(Q0)), springs(j, 0, [("angle", 4, R(1, 5))])


def planar_case():
    n, e1, e2 = rat([1, 2, 2], 3), rat([2, 1, -2], 3), rat([-2, 2, -1], 3)  # e2 = n x e1
    mech = Mechanism("planar", gravity=num(G))
    j = mech.add_joint(PlanarJoint("K", mech.ground, child(mech), parent_point=num(P_G),
                                   child_point=num(Q_C), axis=num(n), x_axis=num(e1)))
    lg = Lagrange(3)
    sprs = springs(j, 0, [("x", 30, R(1, 20)), ("y", 20, R(-1, 50)),
                         ("angle", R(3, 5), R(3, 10))])
    bodies = [on(GROUND, P_G, e1 * lg.q[0] + e2 * lg.q[1], lg.rot(n, 2))]
    return mech, sprs, lg, bodies, {"K": [0.1, -0.05, 0.4]}, {"K": [0.3, -0.2, 1.0]}


def cylindrical_case():
    a, P1 = rat([2, 3, 6], 7), rat([12, -20, 5], 100)
    mech = Mechanism("cylindrical", gravity=num(G))
    lg = Lagrange(3)
    parent, arm_body, arm_springs = arm(mech, lg)
    j = mech.add_joint(CylindricalJoint("K", parent, child(mech), parent_point=num(P1),
                                        child_point=num(Q_C), axis=num(a)))
    sprs = arm_springs + springs(j, 1, [("angle", R(2, 5), R(-1, 5)),
                                       ("slide", 25, R(1, 10))])
    bodies = [arm_body, on(arm_body[2:], P1, a * lg.q[2], lg.rot(a, 1))]
    return mech, sprs, lg, bodies, {"R": -0.3, "K": [0.3, -0.05]}, \
        {"R": 1.2, "K": [2.0, 0.4]}


PITCH = R(1, 50)


def screw_case():
    a = rat([-2, 6, 3], 7)
    mech = Mechanism("screw", gravity=num(G))
    j = mech.add_joint(ScrewJoint("K", mech.ground, child(mech), parent_point=num(P_G),
                                  child_point=num(Q_C), axis=num(a), pitch=float(PITCH)))
    lg = Lagrange(1)
    bodies = [on(GROUND, P_G, a * PITCH * lg.q[0], lg.rot(a, 0))]
    return mech, springs(j, 0, [("angle", R(3, 10), R(1, 2))]), lg, bodies, {"K": -0.2}, \
        {"K": 1.5}


def universal_case(swap=False):
    """``swap``: a deliberately wrong reference turning about axis2 before axis."""
    a1, a2, P1 = rat([2, 3, 6], 7), rat([3, -6, 2], 7), rat([12, -20, 5], 100)
    mech = Mechanism("universal", gravity=num(G))
    lg = Lagrange(3)
    parent, arm_body, arm_springs = arm(mech, lg)
    j = mech.add_joint(UniversalJoint("K", parent, child(mech), parent_point=num(P1),
                                      child_point=num(Q_C), axis=num(a1), axis2=num(a2)))
    sprs = arm_springs + springs(j, 1, [("angle1", R(1, 2), R(-3, 10)),
                                       ("angle2", R(4, 5), R(1, 4))])
    turns = (lg.rot(a2, 2), lg.rot(a1, 1)) if swap else (lg.rot(a1, 1), lg.rot(a2, 2))
    bodies = [arm_body, on(arm_body[2:], P1, 0, lg.mul(*turns))]
    return mech, sprs, lg, bodies, {"R": 0.4, "K": [0.3, -0.5]}, \
        {"R": -1.0, "K": [1.5, 2.0]}


def universal_offset_case():
    """Two revolutes whose axes do not meet (the second set off from the first by a
    massless link, as dm_control's humanoid ankle): the child turns about a1 through P1
    and about a2 through P1 + o, so its joint point moves by R1 o - R1 R2 o."""
    a1, a2, P1 = rat([2, 3, 6], 7), rat([3, -6, 2], 7), rat([12, -20, 5], 100)
    o = rat([6, 2, -9], 110)
    mech = Mechanism("universal_offset", gravity=num(G))
    lg = Lagrange(3)
    parent, arm_body, arm_springs = arm(mech, lg)
    j = mech.add_joint(UniversalJoint("K", parent, child(mech), parent_point=num(P1),
                                      child_point=num(Q_C), axis=num(a1), axis2=num(a2),
                                      axis2_offset=num(o)))
    sprs = arm_springs + springs(j, 1, [("angle1", R(1, 2), R(-3, 10)),
                                       ("angle2", R(4, 5), R(1, 4))])
    R1, R2 = lg.rot(a1, 1), lg.rot(a2, 2)
    R12 = lg.mul(R1, R2)
    d = lg.mul(R1, o) - lg.mul(R12, o)
    bodies = [arm_body, on(arm_body[2:], P1, d, R12)]
    return mech, sprs, lg, bodies, {"R": 0.4, "K": [0.3, -0.5]}, \
        {"R": -1.0, "K": [1.5, 2.0]}


def translation_case():
    """Two slides along unit axes that are not perpendicular (cosine 4/21), on the
    swinging arm: the child keeps the arm's orientation, its joint point displaced by
    q1 e1 + q2 e2 (so each port must read its own coordinate, not a projection)."""
    e1, e2, P1 = rat([2, 3, 6], 7), rat([1, 4, 8], 9), rat([12, -20, 5], 100)
    mech = Mechanism("translation", gravity=num(G))
    lg = Lagrange(3)
    parent, arm_body, arm_springs = arm(mech, lg)
    j = mech.add_joint(TranslationJoint("K", parent, child(mech), parent_point=num(P1),
                                        child_point=num(Q_C), axis=num(e1),
                                        axis2=num(e2)))
    sprs = arm_springs + springs(j, 1, [("slide1", 30, R(1, 20)),
                                       ("slide2", 20, R(-1, 50))])
    bodies = [arm_body, on(arm_body[2:], P1, e1 * lg.q[1] + e2 * lg.q[2],
                           np.eye(3, dtype=int))]
    return mech, sprs, lg, bodies, {"R": 0.3, "K": [0.05, -0.1]}, \
        {"R": -1.0, "K": [0.4, 0.3]}


CASES = {"planar": planar_case, "cylindrical": cylindrical_case, "screw": screw_case,
         "universal": universal_case, "universal_offset": universal_offset_case,
         "translation": translation_case}


def both_routes(case):
    """(library, reference) coordinate histories, rows in the order of q0 (R first)."""
    mech, spring_list, lg, bodies, q0, qd0 = case
    res = mech.assemble().simulate((0.0, T_END), q0, qd0, t_eval=T_EVAL, rtol=1e-11,
                                   atol=1e-11)
    assert res.success and res.energy.relative_drift < 1e-8
    got = np.vstack([np.atleast_2d(res.joint(name).q) for name in q0])
    y0 = np.concatenate([np.ravel(v) for v in (*q0.values(), *qd0.values())])
    sol = solve_ivp(lg.rhs(bodies, spring_list), (0.0, T_END), y0, method="DOP853",
                    t_eval=T_EVAL, rtol=1e-12, atol=1e-12)
    assert sol.success
    return got, sol.y[:lg.n]


@pytest.mark.parametrize("kind", sorted(CASES))
def test_joint_kind_against_a_sympy_lagrangian(kind):
    """The coordinates' histories over 1.5 s (several swings; springs, gravity and, for
    the cylindrical and universal joints, a swinging parent exchanging energy) agree with
    Lagrange's equations to 1e-7 (rad or m).

    Tolerance: the two integrations (rtol = atol = 1e-11 for the library, 1e-12 for the
    reference) agree to 4e-11 - 2e-10 (measured), the size of the library's global
    integration error, which includes its Baumgarte-held constraint drift (max |Phi| up to
    7e-11). 1e-7 leaves a margin of 500, while model errors show far above it: the wrong
    turn order (test_a_wrong_universal_reference_fails) misses by ~1 rad, and gravity 1%
    too strong in the reference by 1e-2."""
    got, ref = both_routes(CASES[kind]())
    err = np.abs(got - ref).max()
    print(f"{kind}: max |q - q_ref| = {err:.2e}")
    assert np.ptp(ref, axis=1).min() > 0.05         # every coordinate moved
    assert err < 1e-7, err


def test_a_wrong_universal_reference_fails():
    """The deliberate fault: a reference turning about axis2 before axis (the order the
    library does not use) misses the library's motion by far more than the tolerance, so
    the comparison above can fail."""
    got, ref = both_routes(universal_case(swap=True))
    assert np.abs(got - ref).max() > 1e-3


def test_a_universal_offset_reference_without_the_offset_fails():
    """The deliberate fault for the offset case: a reference whose child turns about
    axis2 through the joint point (the offset dropped) misses the library's motion by
    far more than the tolerance."""
    mech, sprs, lg, bodies, q0, qd0 = universal_offset_case()
    A_arm, r_arm = bodies[0][2:]
    R1, R2 = lg.rot(rat([2, 3, 6], 7), 1), lg.rot(rat([3, -6, 2], 7), 2)
    R12 = lg.mul(R1, R2)
    bodies[1] = on((A_arm, r_arm), rat([12, -20, 5], 100), np.zeros(3, dtype=int), R12)
    got, ref = both_routes((mech, sprs, lg, bodies, q0, qd0))
    assert np.abs(got - ref).max() > 1e-3


def test_a_universal_offset_is_checked():
    """``axis2_offset``: an offset along axis2 (the axes still meet at the joint point)
    is the plain universal joint (the same blocks); one whose axes meet elsewhere, and
    one that is not 3 finite numbers, are refused naming the joint."""
    mech = Mechanism("u")
    b = mech.add_body(RigidBody("b", 1.0, Inertia.principal(0.1, 0.2, 0.3)))
    a1, a2 = (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)
    plain = UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2)
    along = UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2,
                           axis2_offset=(0.3, 0.0, 0.0))
    assert along.span == 0.0 and [k.name for k in along.constraint_blocks()] == \
        [k.name for k in plain.constraint_blocks()] == ["U.t", "U.cross"]
    off = UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2, axis2_offset=(0.1, 0.05, 0.2))
    assert off.span == pytest.approx(0.05, abs=1e-15)
    assert [k.name for k in off.constraint_blocks()] == ["U.t2", "U.t1", "U.span", "U.cross"]
    with pytest.raises(ModelError, match="universal joint 'U': its axes meet at .* not at "
                                         "the joint point"):
        UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2, axis2_offset=(0.0, 0.0, 0.2))
    with pytest.raises(ModelError, match="universal joint 'U': axis2_offset must be 3 "
                                         "finite numbers"):
        UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2, axis2_offset=(0.0, np.nan, 0.2))


def cardan_ratio(theta1, b, wrong=False):
    """The output shaft's rate per input rate with the input yoke arm in the shafts'
    plane at theta1 = 0: tan theta2 = tan theta1 / cos b, so dtheta2/dtheta1 =
    cos b / (1 - sin^2 b cos^2 theta1). ``wrong``: cos b replaced by 1 in the numerator."""
    return (1.0 if wrong else np.cos(b)) / (1.0 - np.sin(b) ** 2 * np.cos(theta1) ** 2)


def test_universal_joint_cardan_velocity_ratio():
    """Input shaft on a revolute about x, output on a revolute about (cos b, sin b, 0),
    both pinned at the origin, a universal joint there (axis y on the input, axis2 z on
    the output): a loop with one degree of freedom. The input turns at w for 1.25 turns.

    Tolerance 1e-8 rad/s (w = 2 pi rad/s): the output rate is the integrated state's, its
    error the loop's velocity-constraint residual held by the Baumgarte terms, which
    follows the integrator's tolerance (measured 2.7e-8, 2.5e-9, 2.9e-10 at rtol = atol =
    1e-10, 1e-11, 1e-12); at 1e-12 the margin is ~30. The formula with cos b replaced by
    1 is 15% off (checked below)."""
    b, w = np.radians(30.0), 2 * np.pi
    mech = Mechanism("cardan")
    shaft_in = mech.add_body(RigidBody("in", 1.0, Inertia.principal(0.01, 0.02, 0.02)))
    shaft_out = mech.add_body(RigidBody("out", 0.8, Inertia.principal(0.01, 0.015, 0.015)))
    mech.add_joint(RevoluteJoint("J1", mech.ground, shaft_in, axis=(1, 0, 0)))
    s2 = (np.cos(b), np.sin(b), 0.0)
    mech.add_joint(RevoluteJoint("J2", mech.ground, shaft_out, axis=s2))
    mech.add_joint(UniversalJoint("U", shaft_in, shaft_out, axis=(0, 1, 0),
                                  axis2=(0, 0, 1)))
    t = np.linspace(0.0, 1.25, 201)
    out = prescribed_motion(mech.assemble(), {"J1": (lambda t: w * t, lambda t: w,
                                                     lambda t: 0.0)},
                            (0.0, 1.25), t_eval=t, rtol=1e-12, atol=1e-12)
    res = out.result
    assert res.success
    th1, th2, w2 = res.joint("J1").q, res.joint("J2").q, res.joint("J2").qd
    assert th1[-1] > 2 * np.pi
    err = np.abs(w2 - w * cardan_ratio(th1, b)).max()
    print(f"cardan: max |w2 - w ratio| = {err:.2e} rad/s")
    assert err < 1e-8, err
    # the position relation too, theta2 continuous through the turns
    assert np.abs(th2 - np.unwrap(np.arctan2(np.sin(th1), np.cos(b) * np.cos(th1)))).max() \
        < 1e-8
    # the deliberate fault: without cos b the formula misses by orders of magnitude more
    assert np.abs(w2 - w * cardan_ratio(th1, b, wrong=True)).max() > 1e-3


def test_nut_falling_along_a_screw():
    """A nut on a screw (pitch p) along gravity, its centre off the axis, off-diagonal
    inertia, released at rest: energy m g s = 1/2 (m + J/p^2) s'^2 with J = a^T I_c a +
    m |centre's distance from the axis|^2 gives s = 1/2 a t^2, a = g m / (m + J / p^2);
    s = p x angle, and the centre's drop is s too.

    Tolerance 1e-8 (m; s reaches 0.75 m): the simulation runs at 1e-11 and the motion is
    a quadratic in time, which DOP853 integrates exactly, so only rounding and the
    Baumgarte-held constraint drift remain (measured 2e-12)."""
    g, p, m = 9.81, 0.01, 0.5
    I_c = np.array([[2e-4, 3e-5, -1e-5], [3e-5, 3e-4, 2e-5], [-1e-5, 2e-5, 2.5e-4]])
    Q, a = np.array([0.006, -0.004, 0.01]), np.array([0.0, 0.0, -1.0])
    mech = Mechanism("nut", gravity=(0, 0, -g))
    nut = mech.add_body(RigidBody("nut", m, Inertia.about_center(I_c)))
    mech.add_joint(ScrewJoint("S", mech.ground, nut, child_point=Q, axis=a, pitch=p))
    t = np.linspace(0.0, 1.0, 21)
    res = mech.assemble().simulate((0.0, 1.0), t_eval=t, rtol=1e-11, atol=1e-11)
    assert res.success
    off = Q - (Q @ a) * a
    acc = g * m / (m + (a @ I_c @ a + m * off @ off) / p ** 2)
    s = 0.5 * acc * t ** 2
    r = res.body("nut").position
    errs = (np.abs(p * res.joint("S").q - s).max(), np.abs(a @ (r - r[:, :1]) - s).max())
    print(f"screw: a = {acc:.6f} m/s^2, errors {errs[0]:.2e}, {errs[1]:.2e} m, "
          f"energy drift {res.energy.relative_drift:.1e}")
    assert max(errs) < 1e-8
    assert res.energy.relative_drift < 1e-8
    # a wrong model (the parallel-axis term forgotten) misses s(1 s) by 6e-2
    assert abs(g * m / (m + (a @ I_c @ a) / p ** 2) - acc) * 0.5 > 1e-3


def _gimbal_body():
    from elements import GimbalJoint
    mech = Mechanism("gimbal", gravity=(0.0, 0.0, 0.0))
    b = mech.add_body(RigidBody("b", 1.0, Inertia.about_center(np.diag([0.1, 0.2, 0.3]))))
    mech.add_joint(GimbalJoint("G", mech.ground, b, axis=(0, 0, 1), axis2=(1, 0, 0),
                               axis3=(0, 1, 0), child_point=(0.0, 0.0, 0.2)))
    return mech.assemble()


def test_a_gimbal_reaching_lock_fails_naming_it_and_keeps_the_run():
    """A body turning about the gimbal's middle axis (x: a principal axis of the body
    about the joint point, so without gravity the rate stays constant) from
    angle2 = 1.4 rad at 1 rad/s reaches the lock (pi/2) at
    t = pi/2 - 1.4 = 0.1708 s: the run stops there with the joint named, not SUCCESS,
    and returns what it computed, angle2 equal to 1.4 + t to 1e-6."""
    import warnings as _w
    mm = _gimbal_body()
    x0 = mm.initial_state({"G": [0.0, 1.4, 0.0]}, {"G": [0.0, 1.0, 0.0]})
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        res = mm.simulate((0.0, 1.0), x0=x0, rtol=1e-10, atol=1e-10)
    assert not res.success
    assert "GimbalLockError" in res.message and "gimbal joint 'G'" in res.message
    assert abs(res.t[-1] - (np.pi / 2 - 1.4)) < 2e-3
    q = res.joint("G").q
    assert np.abs(q[1] - (1.4 + res.t)).max() < 1e-6
    assert np.abs(q[0]).max() < 1e-6 and np.abs(q[2]).max() < 1e-6


def test_a_gimbal_state_beyond_lock_is_refused_with_the_near_side():
    mm = _gimbal_body()
    assert mm.mechanism.joint("G").middle_range == pytest.approx((-np.pi / 2, np.pi / 2))
    with pytest.raises(ModelError, match=r"gimbal joint 'G': angle2 = 1.8 rad is beyond "
                       r"gimbal lock from rest: .* between -1.5708 and 1.5708 rad"):
        mm.initial_state({"G": [0.0, 1.8, 0.0]})
    with pytest.raises(ModelError, match="beyond gimbal lock"):    # (modulo a turn)
        mm.initial_state({"G": [0.0, 1.8 - 2 * np.pi, 0.0]})
    mm.initial_state({"G": [0.0, 0.5 + 2 * np.pi, 0.0]})        # the near side, a turn on


def test_universal_axis2_is_in_parent_coordinates_at_rest():
    """Which frame ``axis2`` is given in (docs/multibody.md once read "on the child",
    the docstring "parent coordinates at coordinates 0"): with a rest rotation R0 (a
    quarter turn about z) the child's rotation at (angle1, angle2) is R(axis, angle1)
    R(axis2, angle2) R0 with both axes in the parent's coordinates; read in the child's
    body coordinates, axis2 would be R0 axis2 (here the parent's y instead of x), a
    rotation 0.7 away. Exact to rounding."""
    from bondgraph.spatial import axis_angle_matrix
    from elements import Inertia, Mechanism, RigidBody, forward_kinematics
    R0 = axis_angle_matrix(np.array([0.0, 0.0, 1.0]), np.pi / 2)
    a1, a2 = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    mech = Mechanism("u")
    b = mech.add_body(RigidBody("b", 1.0, Inertia.principal(0.1, 0.2, 0.3)))
    mech.add_joint(UniversalJoint("U", mech.ground, b, axis=a1, axis2=a2, rest_rotation=R0))
    A = forward_kinematics(mech.assemble(), {"U": [0.3, 0.5]})["b.A"]
    parent = axis_angle_matrix(a1, 0.3) @ axis_angle_matrix(a2, 0.5) @ R0
    child = axis_angle_matrix(a1, 0.3) @ axis_angle_matrix(R0 @ a2, 0.5) @ R0
    assert np.abs(A - parent).max() < 1e-14
    assert np.abs(A - child).max() > 0.4


def test_a_translation_joint_from_a_file_and_its_bad_axes():
    """``type = "translation"`` in a model file is the same joint as the API's (the
    same accelerations); axes that are parallel, or three in a plane, and a missing
    axis2 are refused naming the joint."""
    from elements import direct_dynamics
    from elements.files.modelfile import ModelFileError, loads_model
    text = """[model]
name = "slides"
gravity = [0.3, -1.0, -9.81]
[[body]]
name = "b"
mass = 2.0
inertia = { principal = [0.1, 0.2, 0.3] }
[[joint]]
name = "J"
type = "translation"
parent = "ground"
child = "b"
parent_point = [0.1, 0.2, 0.3]
axis = [1.0, 0.2, 0.0]
axis2 = [0.3, 1.0, 0.5]
spring = { slide1 = 40.0 }
[solver]
t_end = 1.0
"""
    spec = loads_model(text, "slides.toml")
    j = spec.mechanism.joints["J"]
    assert isinstance(j, TranslationJoint) and j.coordinate_names == ("slide1", "slide2")
    mech = Mechanism("slides", gravity=(0.3, -1.0, -9.81))
    b = mech.add_body(RigidBody("b", 2.0, Inertia.principal(0.1, 0.2, 0.3)))
    mech.add_joint(TranslationJoint("J", mech.ground, b, parent_point=(0.1, 0.2, 0.3),
                                    axis=(1.0, 0.2, 0.0), axis2=(0.3, 1.0, 0.5)))
    mech.joints["J"].add_spring(AxisSpring(40.0), coordinate="slide1")
    q, qd = {"J": [0.2, -0.1]}, {"J": [0.5, 0.3]}
    a_file = direct_dynamics(spec.mechanism.assemble(), q, qd, {})["J"]
    a_api = direct_dynamics(mech.assemble(), q, qd, {})["J"]
    assert np.allclose(a_file, a_api, rtol=1e-12, atol=1e-12) and abs(a_api).max() > 1
    for old, new, words in [
            ("axis2 = [0.3, 1.0, 0.5]", "axis2 = [-2.0, -0.4, 0.0]", "are dependent"),
            ("axis2 = [0.3, 1.0, 0.5]", "axis2 = [0.3, 1.0, 0.5]\naxis3 = [1.3, 1.2, 0.5]",
             "are dependent"),
            ("axis2 = [0.3, 1.0, 0.5]\n", "", "needs axis and axis2")]:
        with pytest.raises(ModelFileError, match=rf"translation joint 'J'.*{words}"):
            loads_model(text.replace(old, new), "slides.toml")
