"""Canonical mechanisms, shared by tests, examples, docs and benchmarks.

- :func:`three_body_prismatic`: the seed paper's example (benchmarks.md section 1).
- :func:`chain`: chain-N of cubes (benchmarks.md section 3).
- :func:`compound_pendulum`, :func:`spring_pendulum`, :func:`pendulum_on_trolley`,
  :func:`scara`: the MBSlib analytical test systems (benchmarks.md section 2), gravity
  along -y. Their joints carry no actuator: direct and inverse dynamics
  (:mod:`elements.analysis.dynamics`) put tau on the joint axes.
"""

from __future__ import annotations

import numpy as np

from elements.joints.kinds import AxisDamper, AxisSpring, PrismaticJoint, RevoluteJoint
from elements.mechanism import Mechanism
from elements.parts.rigid_body import Inertia, RigidBody

__all__ = ["three_body_prismatic", "three_body_spec", "chain", "THREE_BODY",
           "compound_pendulum", "spring_pendulum", "pendulum_on_trolley", "scara"]

THREE_BODY = {"m_rotor": 1.0, "m1": 1.0, "m2": 1.0, "inertia": 4.167e-4, "M": 0.1,
              "K": 500.0, "a": 0.3, "b": 0.1, "c": 0.15, "g": 9.8}
"""Parameters of the seed paper's example (SI units)."""


def three_body_prismatic(M: float = THREE_BODY["M"], K: float = THREE_BODY["K"],
                         g: float = THREE_BODY["g"]) -> Mechanism:
    """The seed paper's three-body mechanism, exactly as benchmarks.md section 1::

              Z
              |  J1 (revolute, Z) at the origin, moment M on the rotor
        ground+--[rotor]----a=0.3----o J2 (revolute, rotor's y)
                                     |  b = 0.1
                                    [m1]   (cube; its centre b below J2)
                                     |  J3 (prismatic along m1's z), spring K
                                    [m2]   (cube; its centre c = 0.15 below J2 at s = 0)

    Bodies ``rotor``, ``m1``, ``m2``; joints ``J1``, ``J2``, ``J3``. All body frames are
    aligned with the global frame at t = 0; gravity (0, 0, -g).

    Parameters
    ----------
    M : float
        Moment on J1 about +Z, ground on rotor (N m).
    K : float
        Spring along J3 (N/m), unstretched at slide 0.
    g : float
        Gravitational acceleration (m/s^2).
    """
    p = THREE_BODY
    mech = Mechanism("three_body_prismatic", gravity=(0.0, 0.0, -g))
    inertia = Inertia.principal(p["inertia"], p["inertia"], p["inertia"])
    rotor = mech.add_body(RigidBody("rotor", p["m_rotor"], inertia))
    m1 = mech.add_body(RigidBody("m1", p["m1"], inertia))
    m2 = mech.add_body(RigidBody("m2", p["m2"], inertia))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rotor, axis=(0, 0, 1), actuator=M))
    mech.add_joint(RevoluteJoint("J2", rotor, m1, parent_point=(p["a"], 0, 0),
                                 child_point=(0, 0, p["b"]), axis=(0, 1, 0)))
    # the slide starts c below J2, i.e. c - b below m1's centre (rounded as a file writes it)
    mech.add_joint(PrismaticJoint("J3", m1, m2, parent_point=(0, 0, round(p["b"] - p["c"], 12)),
                                  child_point=(0, 0, 0), axis=(0, 0, 1), spring=K))
    return mech


def three_body_spec(t_end: float = 5.0, points: int = 501):
    """The three-body example's run: the mechanism, rest at t = 0, 0..t_end s on
    ``points`` output times, DOP853 at rtol = atol = 1e-10 with Baumgarte (10/s, 10/s),
    and the paper's Figures 6-9 as plots. ``examples/three_body_prismatic.toml`` says the
    same in a model file."""
    from bondgraph import Baumgarte

    from elements.files.modelfile import ModelSpec, OutputSettings, PlotSpec, SolverSettings
    plots = (
        PlotSpec("fig6_m2_x.png", ("m2.x",), "Displacement of m2 in global X",
                 "m2 global X (m)"),
        PlotSpec("fig7_m2_y.png", ("m2.y",), "Displacement of m2 in global Y",
                 "m2 global Y (m)"),
        PlotSpec("fig8_m2_z.png", ("m2.z",), "Displacement of m2 in global Z",
                 "m2 global Z (m)"),
        PlotSpec("fig9_J3_force.png", ("J3.Fx", "J3.Fy", "J3.Fz"),
                 "Resultant constraint force at joint J3 (on m2, global)",
                 "J3 constraint force (N)", norm=True),
    )
    return ModelSpec(three_body_prismatic(), {}, {},
                     SolverSettings(0.0, t_end, points, "DOP853", 1e-10, 1e-10,
                                    Baumgarte(10.0, 10.0), False),
                     OutputSettings("three_body.mat", "bond_graph.svg", plots),
                     source="elements.models.three_body_spec")


def chain(n: int, *, bend: float = 0.3, g: float = 9.81) -> tuple[Mechanism, dict[str, float]]:
    """chain-N (benchmarks.md section 3): N unit cubes (1 kg, side 0.05 m) hanging from
    the origin, joint i at (0, 0, -0.2 (i-1)) in the reference configuration, body i's
    centre 0.1 m below joint i; odd joints turn about the parent's x, even about its y.

    Returns the mechanism and the initial joint coordinates (``bend`` rad each).
    """
    mech = Mechanism(f"chain{n}", gravity=(0.0, 0.0, -g))
    inertia = Inertia.solid_cube(1.0, 0.05)
    parent = mech.ground
    q0 = {}
    for i in range(1, n + 1):
        body = mech.add_body(RigidBody(f"b{i}", 1.0, inertia))
        axis = (1.0, 0.0, 0.0) if i % 2 == 1 else (0.0, 1.0, 0.0)
        ppoint = (0.0, 0.0, 0.0) if i == 1 else (0.0, 0.0, -0.1)
        mech.add_joint(RevoluteJoint(f"J{i}", parent, body, parent_point=ppoint,
                                     child_point=(0.0, 0.0, 0.1), axis=axis))
        q0[f"J{i}"] = bend
        parent = body
    return mech, q0


def compound_pendulum(m: float, l: float, g: float = 9.81) -> Mechanism:
    """MBSlib 1: a uniform rod (mass m, length l) on a revolute joint ``J1`` about z at the
    origin; q = 0 hangs along -y; the rod's central inertia m l^2/12 about x, y and z.
    The rod's end is its point ``"tip"``::

        ground o J1 (z)
               |
               | rod (m, l), centre l/2 below J1 at q = 0
               * tip
    """
    mech = Mechanism("compound_pendulum", gravity=(0.0, -g, 0.0))
    c = m * l * l / 12.0
    rod = mech.add_body(RigidBody("rod", m, Inertia.principal(c, c, c),
                                  points={"tip": (0.0, -l / 2, 0.0)}))
    mech.add_joint(RevoluteJoint("J1", mech.ground, rod, child_point=(0.0, l / 2, 0.0),
                                 axis=(0.0, 0.0, 1.0)))
    return mech


def spring_pendulum(m: float, k: float, d: float, g: float = 9.81,
                    side: float = 0.05) -> Mechanism:
    """MBSlib 2: a point mass m (modelled as a uniform cube of side ``side``, whose
    rotation the joint locks) on a prismatic joint ``J1`` along -y from the origin, with a
    spring k and a damper d in parallel, unstretched at q = 0::

        ground o J1 (along -y), spring k, damper d
               |
               [m]   at y = -q
    """
    mech = Mechanism("spring_pendulum", gravity=(0.0, -g, 0.0))
    mass = mech.add_body(RigidBody("mass", m, Inertia.solid_cube(m, side)))
    mech.add_joint(PrismaticJoint("J1", mech.ground, mass, axis=(0.0, -1.0, 0.0),
                                  spring=AxisSpring(k) if k else None,
                                  damper=AxisDamper(d) if d else None))
    return mech


def pendulum_on_trolley(m: float, l: float, k: float, d: float, g: float = 9.81,
                        m_trolley: float = 1e-3) -> Mechanism:
    """MBSlib 3: a compound pendulum (rod m, l) on a trolley.

    The seed's trolley is massless; here it is a body of small mass ``m_trolley`` (kg) on a
    prismatic joint ``J1`` along x, so the closed form to compare with is the one
    re-derived with that trolley mass (m_trolley -> 0 recovers the seed's; it is not
    approached numerically, as the constraint matrix grows ill-conditioned). The
    trolley's rotation is locked by the prismatic joint, so its rotational inertia never
    enters the dynamics: it is set to m_trolley x (1 m)^2, which keeps H_4 well
    conditioned (a tiny cube's 1e-8 kg m^2 would cost seven digits). The rod hangs from the revolute joint ``J2`` (about z; q2 = 0 hangs
    along -y), with a torsional spring k and damper d on J2::

        ===[trolley]===> x   J1 (prismatic, x)
               o J2 (z), spring k, damper d
               |
               | rod (m, l)
               * tip
    """
    mech = Mechanism("pendulum_on_trolley", gravity=(0.0, -g, 0.0))
    trolley = mech.add_body(RigidBody("trolley", m_trolley,
                                      Inertia.principal(m_trolley, m_trolley, m_trolley)))
    c = m * l * l / 12.0
    rod = mech.add_body(RigidBody("rod", m, Inertia.principal(c, c, c),
                                  points={"tip": (0.0, -l / 2, 0.0)}))
    mech.add_joint(PrismaticJoint("J1", mech.ground, trolley, axis=(1.0, 0.0, 0.0)))
    mech.add_joint(RevoluteJoint("J2", trolley, rod, child_point=(0.0, l / 2, 0.0),
                                 axis=(0.0, 0.0, 1.0),
                                 spring=AxisSpring(k) if k else None,
                                 damper=AxisDamper(d) if d else None))
    return mech


def scara(m1: float, l1: float, I1, r1, m2: float, l2: float, I2, r2,
          g: float = 9.81) -> Mechanism:
    """MBSlib 4: a SCARA arm of two links on revolute joints about z, moving in the vertical
    x-y plane (gravity along -y).

    Link i has mass ``m_i`` (kg), length ``l_i`` (m, joint to joint), central inertia
    ``I_i`` = (Ixx, Iyy, Izz) in its link frame (kg m^2), and centre of mass at offset
    ``r_i`` = (rx, ry, rz) from the link's distal end in the link frame, whose x axis
    points along the link (MBSlib's convention, checked against its mass matrix: a
    uniform link has r = (-l/2, 0, 0)). q = 0 stretches both links along +x. Points
    ``"distal"`` on each link mark the elbow and the end::

        ground o J1 ---- link1 ---- o J2 ---- link2 ---- * distal
    """
    mech = Mechanism("scara", gravity=(0.0, -g, 0.0))
    links = []
    for k, (m, l, I, r) in enumerate(((m1, l1, I1, r1), (m2, l2, I2, r2)), start=1):
        r = np.asarray(r, dtype=float)
        com = np.array([l, 0.0, 0.0]) + r                      # from the proximal joint
        links.append(mech.add_body(RigidBody(f"link{k}", m, Inertia.principal(*I),
                                             points={"proximal": -com, "distal": -r})))
    mech.add_joint(RevoluteJoint("J1", mech.ground, links[0], child_point="proximal",
                                 axis=(0.0, 0.0, 1.0)))
    mech.add_joint(RevoluteJoint("J2", links[0], links[1], parent_point="distal",
                                 child_point="proximal", axis=(0.0, 0.0, 1.0)))
    return mech
