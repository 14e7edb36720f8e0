"""Graphs beyond the canonical models, for cross-checks: EJS, algebraic loops, vector TFs."""

from __future__ import annotations

import numpy as np
import sympy

from bondgraph import (
    C, EJS, I, MTF, R, TF, BondGraph, OneJunction, Se, Sf, TimeFunction, ZeroJunction,
    KinematicState,
)


def spinning_body(inertia=(0.2, 0.5, 0.9), damping=0.05, torque=(0.1, -0.2, 0.05)):
    """A rigid body's rotational part: I (3D), EJS, a torque and a rotational damper."""
    bg = BondGraph("spinning_body")
    bg.add(Se("M", list(torque), dim=3), OneJunction("w", dim=3),
           I("J", list(inertia), dim=3), EJS("ejs", momentum="J"), R("d", damping, dim=3))
    for a, h in [("M", "w"), ("w", "J"), ("w", "ejs"), ("w", "d")]:
        bg.connect(a, h)
    return bg


def algebraic_loop():
    """R1 and R2 in an algebraic loop (J_LL != 0): Se-1a-R1, 1a-0b-R2, 0b-1c-{R3, I, C}."""
    bg = BondGraph("algebraic_loop")
    bg.add(Se("E", TimeFunction.sine(1.0, 2.0, offset=0.5)), OneJunction("a"), R("R1", 2.0),
           ZeroJunction("b"), R("R2", 3.0), OneJunction("c"), R("R3", 0.5), I("L", 0.7),
           C("K", 5.0))
    for a, h in [("E", "a"), ("a", "R1"), ("a", "b"), ("b", "R2"), ("b", "c"), ("c", "R3"),
                 ("c", "L"), ("c", "K")]:
        bg.connect(a, h)
    return bg


def vector_constraint():
    """Two 3D masses joined through a constant 3x3 transformer: v2 = T v1 (Se* of dim 3),
    one of them on a 3D spring, driven by a 3D force and a flow source elsewhere."""
    T = np.array([[1.0, 0.2, 0.0], [0.0, 0.9, -0.3], [0.1, 0.0, 1.1]])
    bg = BondGraph("vector_constraint")
    bg.add(Se("F", [1.0, -2.0, 0.5], dim=3), OneJunction("v1", dim=3),
           I("m1", np.diag([1.0, 2.0, 1.5]), dim=3), TF("T", T), ZeroJunction("c", dim=3),
           OneJunction("v2", dim=3), I("m2", [[2.0, 0.1, 0.0], [0.1, 1.0, 0.0], [0.0, 0.0, 3.0]],
                                          dim=3),
           C("k", np.diag([10.0, 20.0, 30.0]), dim=3))
    for a, h in [("F", "v1"), ("v1", "m1"), ("v1", "T"), ("T", "c"), ("c", "v2"),
                 ("v2", "m2"), ("v2", "k")]:
        bg.connect(a, h)
    return bg


def double_pendulum_cartesian(m1=1.0, m2=0.5, l1=1.0, l2=0.7, g=9.81):
    """Two point masses in the plane, rods from primitives: MTFs modulated by positions."""
    bg = BondGraph("double_pendulum_cartesian")
    bg.add(Se("g1", [0.0, -m1 * g], dim=2), Se("g2", [0.0, -m2 * g], dim=2),
           OneJunction("v1", dim=2), OneJunction("v2", dim=2),
           I("m1", m1, dim=2), I("m2", m2, dim=2),
           MTF("rod1_dir", lambda r: (r / l1)[None, :],
               modulus_rate=lambda r, rd: (rd / l1)[None, :], depends_on=("r1",), shape=(1, 2)),
           ZeroJunction("rod1", constraint=True),
           # rod 2 constrains (r2 - r1) . (v2 - v1) = 0
           ZeroJunction("rel", dim=2), OneJunction("vrel", dim=2),
           MTF("rod2_dir", lambda r1, r2: ((r2 - r1) / l2)[None, :],
               modulus_rate=lambda r1, r2, d1, d2: ((d2 - d1) / l2)[None, :],
               depends_on=("r1", "r2"), shape=(1, 2)),
           ZeroJunction("rod2", constraint=True))
    for a, h in [("g1", "v1"), ("v1", "m1"), ("g2", "v2"), ("v2", "m2"),
                 ("v1", "rod1_dir"), ("rod1_dir", "rod1"),
                 ("v2", "rel"), ("rel", "v1"), ("rel", "vrel"), ("vrel", "rod2_dir"),
                 ("rod2_dir", "rod2")]:
        bg.connect(a, h)
    bg.add_kinematic_state(KinematicState("r1", "v1", 2))
    bg.add_kinematic_state(KinematicState("r2", "v2", 2))
    return bg


def prescribed_flow():
    """A mass pushed through a spring by a time-varying flow source (Sf with a rate)."""
    bg = BondGraph("prescribed_flow")
    bg.add(Sf("v0", TimeFunction.sine(0.3, 4.0)), ZeroJunction("spring_node"), C("k", 50.0),
           OneJunction("v"), I("m", 2.0), R("b", 0.4))
    for a, h in [("v0", "spring_node"), ("spring_node", "k"), ("spring_node", "v"),
                 ("v", "m"), ("v", "b")]:
        bg.connect(a, h)
    return bg


def rlc_ladder(n: int = 12):
    """A sine voltage into n sections of a series inductor (1 mH, 0.1 ohm) and a shunt
    capacitor (10 uF) with a leak (1 kohm): 2 n states, 2 n resistors whose inputs are
    all known (a current, a capacitor's voltage)."""
    bg = BondGraph(f"rlc_ladder_{n}")
    bg.add(Se("V", TimeFunction.sine(10.0, 2000.0)))
    prev = "V"
    for k in range(n):
        bg.add(OneJunction(f"s{k}"), I(f"L{k}", 1e-3), R(f"Rs{k}", 0.1),
               ZeroJunction(f"n{k}"), C(f"C{k}", 1e-5), R(f"Rp{k}", 1e3))
        for a, h in [(prev, f"s{k}"), (f"s{k}", f"L{k}"), (f"s{k}", f"Rs{k}"),
                     (f"s{k}", f"n{k}"), (f"n{k}", f"C{k}"), (f"n{k}", f"Rp{k}")]:
            bg.connect(a, h)
        prev = f"n{k}"
    return bg


def _canonical():
    from bondgraph import models
    return {
        "mass_spring_damper": lambda: models.mass_spring_damper(1.3, 20.0, 0.4, 1.0),
        "two_masses_rigid": lambda: models.two_masses_rigid(1.0, 3.0, 2.0),
        "lever": lambda: models.lever(10.0, 2.0, 1.0, 100.0, 0.1),
        "dc_motor": lambda: models.dc_motor(12.0, 1.0, 0.5, 0.1, 0.01, 0.001),
        "cartesian_pendulum": lambda: models.cartesian_pendulum(2.0, 1.5, 9.81),
        "damped_constraint": lambda: models.damped_constraint(2.0, 0.5, 1.0),
    }


def nonlinear_chain(n=6):
    """n masses in a row, each pair joined by a hardening spring (H = q^2/2 + q^4/4) in
    parallel with a damper of effort f + f^3 (nonlinear storage and resistors): a banded
    Jacobian, dX/dt of mass i reading the springs and masses beside it only (not in
    GRAPHS: for tests/unit/test_jacobian.py and benchmarks/implicit.py)."""
    q, f = sympy.Symbol("q"), sympy.Symbol("f")
    bg = BondGraph("nonlinear_chain")
    for i in range(n):
        bg.add(OneJunction(f"v{i}"), I(f"m{i}", 1.0 + 0.1 * i))
        bg.connect(f"v{i}", f"m{i}")
    for i in range(n - 1):
        bg.add(ZeroJunction(f"F{i}"), OneJunction(f"rel{i}"),
               C(f"k{i}", energy=(2.0 + i) * q ** 2 / 2 + q ** 4 / 4),
               R(f"b{i}", effort_law=0.3 * f + 0.1 * f ** 3))
        for a, h in [(f"v{i}", f"F{i}"), (f"F{i}", f"v{i + 1}"), (f"F{i}", f"rel{i}"),
                     (f"rel{i}", f"k{i}"), (f"rel{i}", f"b{i}")]:
            bg.connect(a, h)
    return bg


#: the graphs the reduction, sparse and compiled-LU tests run on (name -> factory): the
#: canonical models and the graphs above
GRAPHS = {**_canonical(), "spinning_body": spinning_body, "algebraic_loop": algebraic_loop,
          "vector_constraint": vector_constraint,
          "double_pendulum_cartesian": double_pendulum_cartesian,
          "prescribed_flow": prescribed_flow}

#: those where Eq. (14) applies (the constraint flow depends on U2): no sparse path
EQ14 = {"damped_constraint"}
