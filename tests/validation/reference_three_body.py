"""Independent reference model of the three-body prismatic mechanism.

This module is the reference solution for benchmark model 1 of
``/work/shared/design/benchmarks.md`` ("The three-body prismatic mechanism").
It deliberately uses nothing from the ``bondgraph`` or ``elements`` packages:
only numpy, scipy and sympy (``sympy.physics.mechanics``, Kane's method).

Model (SI units, global Z up, gravity ``(0, 0, -g)``):

* Body 1, the rotor: centre of mass fixed at the origin, mass ``m_rotor``,
  central inertia ``I_rotor`` (diagonal, body frame).  It turns about global Z
  through the revolute joint J1 (ground to body 1, at the origin).  A constant
  moment ``M`` about +Z acts across J1 (ground on body 1).
* J2: revolute joint, body 1 to body 2, at the point ``(a, 0, 0)`` of body 1's
  frame, axis = body 1's local y axis.
* Body 2 (the paper's m1): mass ``m1``, central inertia ``I_m1``; its centre of
  mass lies ``b`` below J2 along body 2's local -z axis.
* J3: prismatic joint, body 2 to body 3, sliding axis = body 2's local z axis
  through J2.  Body 3 keeps body 2's orientation.
* Body 3 (the paper's m2): mass ``m2``, central inertia ``I_m2``; its centre of
  mass is at ``J2 + R2 @ (0, 0, -c + s)``.
* Spring ``K`` along J3: force on body 3 = ``-K s`` along body 2's +z, the
  opposite force on body 2 (both along the sliding axis, so the spring exerts
  no moment about body 3's centre).

Generalized coordinates (Kane's method, generalized speeds u_i = dq_i/dt):

* ``q1``: rotor angle about global Z (J1);
* ``q2``: swing angle of body 2 relative to body 1 about body 1's local y axis
  (J2, right-hand rule);
* ``q3``: slide ``s`` of body 3 along body 2's local +z (J3).

Initial state: every coordinate and rate zero.

Reaction convention (benchmarks.md): the force and moment that the parent body
exerts on the child body through the joint's *constraints only* (springs and
actuators acting along the joint's freedom are excluded), in global
coordinates; the moment is taken about the joint's point on the child:

* J3: body 2 on body 3, moment about body 3's centre of mass;
* J2: body 1 on body 2 (which carries body 3), moment about the J2 point;
* J1: ground on body 1 (carrying everything), moment about the origin, the
  applied moment ``M`` about Z excluded.

The reactions are computed by Newton-Euler applied to the solved motion
(accelerations from the equations of motion, not finite differences).  The
module also offers :func:`j3_reaction_auxiliary`, an independent computation of
the J3 reaction with Kane's auxiliary generalized speeds, used by the
self-check in the ``__main__`` block.

Run ``python tests/validation/reference_three_body.py`` for a printout of a few
values and the self-check residuals.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from sympy.physics import mechanics as me

__all__ = [
    "PARAMS",
    "PARAM_NAMES",
    "simulate_reference",
    "equations_of_motion",
    "j3_reaction_auxiliary",
]

#: Default parameters (benchmarks.md section 1).  ``m1``/``m2`` follow the
#: paper's naming: ``m1`` is body 2 (the swinging cube), ``m2`` is body 3 (the
#: sliding cube).  Inertias are the diagonal of the central inertia tensor in
#: the body frame, kg m^2.
PARAMS: dict = {
    "M": 0.1,  # N m, constant moment about +Z across J1 (ground on rotor)
    "K": 500.0,  # N/m, spring along J3
    "g": 9.8,  # m/s^2, gravity magnitude, acting along -Z
    "m_rotor": 1.0,  # kg, body 1 (rotor)
    "m1": 1.0,  # kg, body 2
    "m2": 1.0,  # kg, body 3
    "I_rotor": (4.167e-4, 4.167e-4, 4.167e-4),  # kg m^2, body 1 central
    "I_m1": (4.167e-4, 4.167e-4, 4.167e-4),  # kg m^2, body 2 central
    "I_m2": (4.167e-4, 4.167e-4, 4.167e-4),  # kg m^2, body 3 central
    "a": 0.3,  # m, J2 at (a, 0, 0) in body 1's frame
    "b": 0.1,  # m, body 2's centre b below J2 along body 2's -z
    "c": 0.15,  # m, body 3's centre c below J2 on the slide axis at s = 0
}

#: Order of the scalar parameters passed to the lambdified functions.
PARAM_NAMES = (
    "M", "K", "g", "m_rotor", "m1", "m2",
    "I1x", "I1y", "I1z", "I2x", "I2y", "I2z", "I3x", "I3y", "I3z",
    "a", "b", "c",
)


def _merge_params(params):
    p = dict(PARAMS)
    if params:
        unknown = set(params) - set(PARAMS)
        if unknown:
            raise KeyError(f"unknown parameter(s): {sorted(unknown)}")
        p.update(params)
    return p


def _param_vector(p):
    """Flatten a parameter dict into the order of PARAM_NAMES."""
    return (
        float(p["M"]), float(p["K"]), float(p["g"]),
        float(p["m_rotor"]), float(p["m1"]), float(p["m2"]),
        *map(float, p["I_rotor"]), *map(float, p["I_m1"]), *map(float, p["I_m2"]),
        float(p["a"]), float(p["b"]), float(p["c"]),
    )


# ---------------------------------------------------------------------------
# Symbolic model
# ---------------------------------------------------------------------------

def _build_model(auxiliary=False):
    """Build the sympy mechanics model.

    Returns a dict with the symbols, frames, points and the KanesMethod object.
    With ``auxiliary=True`` body 3 gets five auxiliary generalized speeds (two
    translations across the slide, three rotations) and the matching unknown
    J3 constraint loads, for the independent reaction check.
    """
    t = me.dynamicsymbols._t
    q = me.dynamicsymbols("q1:4")
    u = me.dynamicsymbols("u1:4")
    pars = sp.symbols(PARAM_NAMES, real=True)
    (M, K, g, m0, m1, m2,
     I1x, I1y, I1z, I2x, I2y, I2z, I3x, I3y, I3z, a, b, c) = pars

    N = me.ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [q[0], N.z])  # body 1 (rotor)
    B = A.orientnew("B", "Axis", [q[1], A.y])  # body 2 (and body 3's orientation)
    A.set_ang_vel(N, u[0] * N.z)
    B.set_ang_vel(A, u[1] * A.y)

    O = me.Point("O")
    O.set_vel(N, 0)
    C1 = O.locatenew("C1", 0)  # rotor centre
    C1.set_vel(N, 0)
    P2 = O.locatenew("P2", a * A.x)  # J2
    P2.v2pt_theory(O, N, A)
    C2 = P2.locatenew("C2", -b * B.z)  # body 2 centre
    C2.v2pt_theory(P2, N, B)
    C3 = P2.locatenew("C3", (q[2] - c) * B.z)  # body 3 centre
    # velocity of C3: body-2 point plus the slide rate
    C3.set_vel(N, P2.vel(N) + (B.ang_vel_in(N) ^ C3.pos_from(P2)) + u[2] * B.z)

    ua = []
    loads_aux = []
    frame3 = B
    if auxiliary:
        ua = me.dynamicsymbols("ua1:6")
        Fx, Fy, Tx, Ty, Tz = sp.symbols("F_x F_y T_x T_y T_z", real=True)
        # body 3's frame: coincides with B, but gets auxiliary angular speeds
        frame3 = B.orientnew("B3", "Axis", [0, B.z])
        frame3.set_ang_vel(N, B.ang_vel_in(N) + ua[2] * B.x + ua[3] * B.y + ua[4] * B.z)
        C3.set_vel(N, C3.vel(N) + ua[0] * B.x + ua[1] * B.y)
        # the point of body 2 that coincides with C3 (no auxiliary speeds)
        Q2 = P2.locatenew("Q2", (q[2] - c) * B.z)
        Q2.v2pt_theory(P2, N, B)
        F = Fx * B.x + Fy * B.y
        T = Tx * B.x + Ty * B.y + Tz * B.z
        loads_aux = [(C3, F), (frame3, T), (Q2, -F), (B, -T)]

    def central(frame, Ix, Iy, Iz, point):
        return (me.inertia(frame, Ix, Iy, Iz), point)

    body1 = me.RigidBody("body1", C1, A, m0, central(A, I1x, I1y, I1z, C1))
    body2 = me.RigidBody("body2", C2, B, m1, central(B, I2x, I2y, I2z, C2))
    body3 = me.RigidBody("body3", C3, frame3, m2, central(frame3, I3x, I3y, I3z, C3))
    bodies = [body1, body2, body3]

    loads = [
        (A, M * N.z),  # applied moment across J1 (reaction on ground omitted)
        (C2, -m1 * g * N.z),
        (C3, -m2 * g * N.z),
        (C3, -K * q[2] * B.z),  # spring on body 3
        (C2, K * q[2] * B.z),  # spring on body 2 (C2 lies on the slide axis)
    ] + loads_aux

    kd = [qi.diff(t) - ui for qi, ui in zip(q, u)]
    kane = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd,
                          u_auxiliary=ua if auxiliary else None)
    kane.kanes_equations(bodies, loads)
    return dict(t=t, q=q, u=u, ua=ua, pars=pars, N=N, A=A, B=B, O=O, P2=P2,
                C1=C1, C2=C2, C3=C3, kane=kane,
                aux_syms=(sp.symbols("F_x F_y T_x T_y T_z", real=True) if auxiliary else ()))


@functools.lru_cache(maxsize=None)
def _derived():
    """Derive and lambdify the equations of motion and the kinematics (once)."""
    mdl = _build_model(auxiliary=False)
    t, q, u, pars = mdl["t"], mdl["q"], mdl["u"], mdl["pars"]
    N, A, B = mdl["N"], mdl["A"], mdl["B"]
    kane = mdl["kane"]

    qs = sp.symbols("q1:4", real=True)
    us = sp.symbols("u1:4", real=True)
    uds = sp.symbols("ud1:4", real=True)
    # substitution: q''->ud, q'->u, u'->ud, then functions -> plain symbols
    sub = {}
    for qi, ui, qsi, usi, udsi in zip(q, u, qs, us, uds):
        sub[qi.diff(t, 2)] = udsi
        sub[ui.diff(t)] = udsi
        sub[qi.diff(t)] = usi
    sub_f = {}
    for qi, ui, qsi, usi in zip(q, u, qs, us):
        sub_f[qi] = qsi
        sub_f[ui] = usi

    def to_plain(expr):
        return sp.Matrix(expr).subs(sub).subs(sub_f)

    mm = to_plain(kane.mass_matrix)
    fo = to_plain(kane.forcing)
    args = (*qs, *us, *pars)
    f_mm = sp.lambdify(args, mm, modules="numpy", cse=True)
    f_fo = sp.lambdify(args, fo, modules="numpy", cse=True)

    # kinematics as functions of (q, u, ud, params)
    O, P2, C2, C3 = mdl["O"], mdl["P2"], mdl["C2"], mdl["C3"]

    def rot(frame):
        return sp.Matrix.hstack(*(e.to_matrix(N) for e in (frame.x, frame.y, frame.z)))

    r_p2 = P2.pos_from(O).to_matrix(N)
    r_c2 = C2.pos_from(O).to_matrix(N)
    r_c3 = C3.pos_from(O).to_matrix(N)
    v_c2, v_c3 = r_c2.diff(t), r_c3.diff(t)
    a_c2, a_c3 = v_c2.diff(t), v_c3.diff(t)
    w1 = A.ang_vel_in(N).to_matrix(N)
    w2 = B.ang_vel_in(N).to_matrix(N)
    al1, al2 = w1.diff(t), w2.diff(t)
    kin = sp.Matrix.vstack(
        r_p2, r_c2, r_c3, v_c2, v_c3, a_c2, a_c3, w1, w2, al1, al2,
        rot(A).reshape(9, 1), rot(B).reshape(9, 1),
    )
    kin = to_plain(kin)
    f_kin = sp.lambdify((*qs, *us, *uds, *pars), kin, modules="numpy", cse=True)
    return f_mm, f_fo, f_kin


def equations_of_motion(q, u, params=None):
    """Mass matrix and forcing of Kane's equations, ``MM(q, u) u' = F(q, u)``.

    Returns ``(MM, F, ud)`` with ``ud`` the generalized accelerations.
    """
    f_mm, f_fo, _ = _derived()
    pv = _param_vector(_merge_params(params))
    mm = np.asarray(f_mm(*q, *u, *pv), dtype=float)
    fo = np.asarray(f_fo(*q, *u, *pv), dtype=float).reshape(3)
    return mm, fo, np.linalg.solve(mm, fo)


# ---------------------------------------------------------------------------
# Simulation and post-processing
# ---------------------------------------------------------------------------

def _unpack_kin(k):
    k = np.asarray(k, dtype=float).reshape(-1)
    out = {}
    names = ["r_p2", "r_c2", "r_c3", "v_c2", "v_c3", "a_c2", "a_c3",
             "w1", "w2", "al1", "al2"]
    for i, nm in enumerate(names):
        out[nm] = k[3 * i:3 * i + 3]
    o = 3 * len(names)
    out["R1"] = k[o:o + 9].reshape(3, 3)
    out["R2"] = k[o + 9:o + 18].reshape(3, 3)
    return out


def _dH(R, I_b, w, al):
    """d/dt of the global angular momentum about the centre, global coords."""
    wb = R.T @ w
    ab = R.T @ al
    return R @ (I_b * ab + np.cross(wb, I_b * wb))


def simulate_reference(t_eval, rtol=1e-12, atol=1e-12, params=None):
    """Integrate Kane's equations of the three-body mechanism.

    Parameters
    ----------
    t_eval : array_like, shape (n,)
        Output times, increasing; the span integrated is t_eval[0]..t_eval[-1]
        from the rest state (all coordinates and rates zero at t_eval[0]).
    rtol, atol : float
        Tolerances of scipy's DOP853.
    params : dict, optional
        Overrides of :data:`PARAMS`.

    Returns
    -------
    dict of numpy arrays sampled at ``t_eval`` (n samples):

    ``t`` (n,); ``q``, ``qd``, ``qdd`` (3, n) generalized coordinates
    (q1 rotor angle, q2 swing angle, q3 slide s), rates and accelerations
    (from the equations of motion); ``m1_position``, ``m2_position`` (3, n)
    global centres of body 2 and body 3; ``J2_position`` (3, n); ``R1``,
    ``R2``, ``R3`` (n, 3, 3) body-to-global rotations; ``omega1..3`` and
    ``alpha1..3`` (3, n) global angular velocities/accelerations;
    ``J3_force``, ``J3_moment`` (body 2 on body 3, constraint only, moment
    about body 3's centre); ``J2_force``, ``J2_moment`` (body 1 on body 2,
    moment about the J2 point); ``J1_force``, ``J1_moment`` (ground on body 1,
    moment about the origin, applied M excluded); ``spring_force_on_m2``
    (3, n); ``kinetic``, ``potential``, ``energy`` (n,) with potential =
    gravity (m g z over all bodies) + spring (K s^2 / 2); ``work_M`` = M q1;
    ``stats`` (nfev, njev, status message).
    """
    p = _merge_params(params)
    pv = _param_vector(p)
    f_mm, f_fo, f_kin = _derived()
    t_eval = np.asarray(t_eval, dtype=float)

    def rhs(_t, x):
        q, u = x[:3], x[3:]
        mm = np.asarray(f_mm(*q, *u, *pv), dtype=float)
        fo = np.asarray(f_fo(*q, *u, *pv), dtype=float).reshape(3)
        return np.concatenate((u, np.linalg.solve(mm, fo)))

    sol = solve_ivp(rhs, (t_eval[0], t_eval[-1]), np.zeros(6), method="DOP853",
                    t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")

    n = t_eval.size
    q = sol.y[:3]
    qd = sol.y[3:]
    qdd = np.empty((3, n))
    keys3 = ["m1_position", "m2_position", "J2_position", "omega1", "omega2",
             "omega3", "alpha1", "alpha2", "alpha3", "J3_force", "J3_moment",
             "J2_force", "J2_moment", "J1_force", "J1_moment", "spring_force_on_m2"]
    out = {k: np.empty((3, n)) for k in keys3}
    for k in ("R1", "R2", "R3"):
        out[k] = np.empty((n, 3, 3))
    kinetic = np.empty(n)
    potential = np.empty(n)

    M, K, g = p["M"], p["K"], p["g"]
    m0, m1, m2 = p["m_rotor"], p["m1"], p["m2"]
    I1 = np.asarray(p["I_rotor"], float)
    I2 = np.asarray(p["I_m1"], float)
    I3 = np.asarray(p["I_m2"], float)
    gvec = np.array([0.0, 0.0, -g])
    ez = np.array([0.0, 0.0, 1.0])

    for i in range(n):
        qi, ui = q[:, i], qd[:, i]
        mm = np.asarray(f_mm(*qi, *ui, *pv), dtype=float)
        fo = np.asarray(f_fo(*qi, *ui, *pv), dtype=float).reshape(3)
        udi = np.linalg.solve(mm, fo)
        qdd[:, i] = udi
        k = _unpack_kin(f_kin(*qi, *ui, *udi, *pv))
        R1, R2 = k["R1"], k["R2"]
        R3 = R2
        w1, w2, w3 = k["w1"], k["w2"], k["w2"]
        al1, al2, al3 = k["al1"], k["al2"], k["al2"]
        r_p2, r_c2, r_c3 = k["r_p2"], k["r_c2"], k["r_c3"]
        a_c2, a_c3 = k["a_c2"], k["a_c3"]
        v_c2, v_c3 = k["v_c2"], k["v_c3"]

        s = qi[2]
        f_spring3 = -K * s * R2[:, 2]  # spring on body 3 (opposite on body 2)

        dH1 = _dH(R1, I1, w1, al1)
        dH2 = _dH(R2, I2, w2, al2)
        dH3 = _dH(R3, I3, w3, al3)

        # J3: body 2 on body 3, constraint part, about body 3's centre
        F3 = m2 * a_c3 - m2 * gvec - f_spring3
        M3 = dH3
        # J2: body 1 on subtree {2, 3}, about the J2 point (spring is internal)
        F2 = m1 * a_c2 - m1 * gvec + m2 * a_c3 - m2 * gvec
        d2, d3 = r_c2 - r_p2, r_c3 - r_p2
        M2 = (dH2 + np.cross(d2, m1 * a_c2 - m1 * gvec)
              + dH3 + np.cross(d3, m2 * a_c3 - m2 * gvec))
        # J1: ground on everything, about the origin, applied M excluded
        F1 = F2 - m0 * gvec  # rotor centre does not accelerate
        M1 = (dH1 + dH2 + np.cross(r_c2, m1 * a_c2 - m1 * gvec)
              + dH3 + np.cross(r_c3, m2 * a_c3 - m2 * gvec)) - M * ez

        out["m1_position"][:, i] = r_c2
        out["m2_position"][:, i] = r_c3
        out["J2_position"][:, i] = r_p2
        out["omega1"][:, i], out["omega2"][:, i], out["omega3"][:, i] = w1, w2, w3
        out["alpha1"][:, i], out["alpha2"][:, i], out["alpha3"][:, i] = al1, al2, al3
        out["R1"][i], out["R2"][i], out["R3"][i] = R1, R2, R3
        out["J3_force"][:, i], out["J3_moment"][:, i] = F3, M3
        out["J2_force"][:, i], out["J2_moment"][:, i] = F2, M2
        out["J1_force"][:, i], out["J1_moment"][:, i] = F1, M1
        out["spring_force_on_m2"][:, i] = f_spring3

        def ke(m, v, R, I_b, w):
            wb = R.T @ w
            return 0.5 * m * v @ v + 0.5 * wb @ (I_b * wb)

        kinetic[i] = (ke(m0, np.zeros(3), R1, I1, w1) + ke(m1, v_c2, R2, I2, w2)
                      + ke(m2, v_c3, R3, I3, w3))
        potential[i] = (g * (m0 * 0.0 + m1 * r_c2[2] + m2 * r_c3[2])
                        + 0.5 * K * s * s)

    out.update(
        t=t_eval, q=q, qd=qd, qdd=qdd,
        kinetic=kinetic, potential=potential, energy=kinetic + potential,
        work_M=M * q[0],
        stats=dict(nfev=int(sol.nfev), njev=int(sol.njev), message=sol.message),
    )
    return out


# ---------------------------------------------------------------------------
# Independent check of the J3 reaction (Kane's auxiliary generalized speeds)
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _derived_aux():
    mdl = _build_model(auxiliary=True)
    t, q, u, ua, pars = mdl["t"], mdl["q"], mdl["u"], mdl["ua"], mdl["pars"]
    kane = mdl["kane"]
    Fx, Fy, Tx, Ty, Tz = mdl["aux_syms"]
    qs = sp.symbols("q1:4", real=True)
    us = sp.symbols("u1:4", real=True)
    uds = sp.symbols("ud1:4", real=True)
    sub = {}
    for qi, ui, udsi, usi in zip(q, u, uds, us):
        sub[ui.diff(t)] = udsi
        sub[qi.diff(t)] = usi
    sub_f = {qi: qsi for qi, qsi in zip(q, qs)}
    sub_f.update({ui: usi for ui, usi in zip(u, us)})
    sub_f.update({uai: 0 for uai in ua})
    sub_f.update({uai.diff(t): 0 for uai in ua})
    eqs = sp.Matrix(kane.auxiliary_eqs).subs(sub).subs(sub_f)
    sol = sp.solve(list(eqs), [Fx, Fy, Tx, Ty, Tz], dict=True)[0]
    vec = sp.Matrix([sol[Fx], sol[Fy], sol[Tx], sol[Ty], sol[Tz]])
    return sp.lambdify((*qs, *us, *uds, *pars), vec, modules="numpy", cse=True)


def j3_reaction_auxiliary(q, qd, qdd, params=None):
    """J3 reaction (body 2 on body 3) from Kane's auxiliary speeds.

    Independent of the Newton-Euler post-processing in
    :func:`simulate_reference`.  Inputs are (3, n) arrays; returns
    ``(force, moment)`` as (3, n) global arrays (moment about body 3's centre).
    """
    f = _derived_aux()
    f_kin = _derived()[2]
    pv = _param_vector(_merge_params(params))
    q, qd, qdd = (np.atleast_2d(np.asarray(x, float).T).T for x in (q, qd, qdd))
    n = q.shape[1]
    F = np.empty((3, n))
    T = np.empty((3, n))
    for i in range(n):
        fx, fy, tx, ty, tz = np.asarray(f(*q[:, i], *qd[:, i], *qdd[:, i], *pv),
                                        float).reshape(5)
        R2 = _unpack_kin(f_kin(*q[:, i], *qd[:, i], *qdd[:, i], *pv))["R2"]
        F[:, i] = R2 @ np.array([fx, fy, 0.0])
        T[:, i] = R2 @ np.array([tx, ty, tz])
    return F, T


# ---------------------------------------------------------------------------
# Printout and self-check
# ---------------------------------------------------------------------------

def _main():
    np.set_printoptions(precision=10, suppress=False, linewidth=120)
    t0 = time.perf_counter()
    _derived()
    t1 = time.perf_counter()
    t_eval = np.linspace(0.0, 5.0, 501)
    res = simulate_reference(t_eval)
    t2 = time.perf_counter()
    print(f"derivation + lambdify: {t1 - t0:.2f} s, simulation 0..5 s (501 pts): "
          f"{t2 - t1:.2f} s, nfev = {res['stats']['nfev']}")

    for tt in (0.0, 1.0, 5.0):
        i = int(np.argmin(abs(t_eval - tt)))
        print(f"\n t = {t_eval[i]:.2f} s")
        print("  q      =", res["q"][:, i])
        print("  qd     =", res["qd"][:, i])
        print("  qdd    =", res["qdd"][:, i])
        print("  m1 pos =", res["m1_position"][:, i])
        print("  m2 pos =", res["m2_position"][:, i])
        print("  J3 F   =", res["J3_force"][:, i], " |F| =",
              np.linalg.norm(res["J3_force"][:, i]))
        print("  J3 M   =", res["J3_moment"][:, i])
        print("  J2 F   =", res["J2_force"][:, i])
        print("  J2 M   =", res["J2_moment"][:, i])
        print("  J1 F   =", res["J1_force"][:, i])
        print("  J1 M   =", res["J1_moment"][:, i])

    bal = res["energy"] - res["work_M"]
    drift = np.max(np.abs(bal - bal[0]))
    scale = np.max(np.abs(res["energy"] - res["energy"][0])) + np.max(np.abs(res["work_M"]))
    print(f"\nenergy balance: max|E - W - E0| = {drift:.3e} J "
          f"(relative to max|E-E0| + max|W| = {scale:.4f} J: {drift / scale:.3e})")

    # constraint-direction checks
    z2 = res["R2"][:, :, 2].T  # (3, n) body 2's z axis, global
    y1 = res["R1"][:, :, 1].T
    along = np.einsum("in,in->n", res["J3_force"], z2)
    print(f"J3 force along slide axis: max|F.z2| = {np.max(np.abs(along)):.3e} N "
          f"(max|F| = {np.max(np.linalg.norm(res['J3_force'], axis=0)):.3f} N)")
    m2y = np.einsum("in,in->n", res["J2_moment"], y1)
    print(f"J2 moment along J2 axis: max|M.y1| = {np.max(np.abs(m2y)):.3e} N m")
    print(f"J1 moment along Z:       max|M.Z|  = {np.max(np.abs(res['J1_moment'][2])):.3e} N m")

    F_aux, T_aux = j3_reaction_auxiliary(res["q"], res["qd"], res["qdd"])
    print(f"J3 force  Newton-Euler vs Kane auxiliary speeds: max diff = "
          f"{np.max(np.abs(F_aux - res['J3_force'])):.3e} N")
    print(f"J3 moment Newton-Euler vs Kane auxiliary speeds: max diff = "
          f"{np.max(np.abs(T_aux - res['J3_moment'])):.3e} N m")
    z = res["m2_position"][2]
    print(f"m2 Z: mean over 0..5 s = {z.mean():.5f} m, min = {z.min():.5f}, "
          f"max = {z.max():.5f} (static stretch m g/K = {9.8 / 500:.4f} m)")


if __name__ == "__main__":
    _main()
