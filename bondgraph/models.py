"""Canonical scalar and planar bond graphs, shared by tests, examples and docs.

- :func:`mass_spring_damper`
- :func:`two_masses_rigid`
- :func:`lever`
- :func:`dc_motor`
- :func:`cartesian_pendulum`
- :func:`damped_constraint` (an explicit Se* whose constraint sees a resistor: Eq. (14))

Parameters are required (numbers or sympy symbols): no physical defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import BondGraph
from .primitives import (
    C,
    GY,
    MTF,
    I,
    KinematicState,
    OneJunction,
    PositionConstraint,
    R,
    Se,
    TF,
    UnknownEffort,
    ZeroJunction,
)

__all__ = ["mass_spring_damper", "two_masses_rigid", "lever", "dc_motor",
           "cartesian_pendulum", "damped_constraint"]


def mass_spring_damper(m: Any, k: Any, b: Any, force: Any) -> BondGraph:
    """A mass on a spring and a damper, driven by a force::

        Se:force --> 1:v --> I:m        m x'' + b x' + k x = force
                        |--> C:k        states p_m = m x', q_k = x
                        '--> R:b

    Parameters: m (kg), k (N/m), b (N s/m), force (N; number, symbol or TimeFunction).
    """
    bg = BondGraph("mass_spring_damper")
    bg.add(Se("force", force), OneJunction("v"), I("m", m), C("k", k), R("b", b))
    for a, h in [("force", "v"), ("v", "m"), ("v", "k"), ("v", "b")]:
        bg.connect(a, h)
    return bg


def two_masses_rigid(m1: Any, m2: Any, force: Any) -> BondGraph:
    """Two masses joined rigidly by a 0-junction between their velocities::

        Se:force --> 1:v1 --> I:m1
                       '--> 0:coupling --> 1:v2 --> I:m2

    The coupling forces v1 = v2; causality inserts ``Se*_coupling`` there, whose effort
    is the coupling force m2 force / (m1 + m2) (N).
    """
    bg = BondGraph("two_masses_rigid")
    bg.add(Se("force", force), OneJunction("v1"), I("m1", m1), ZeroJunction("coupling"),
           OneJunction("v2"), I("m2", m2))
    for a, h in [("force", "v1"), ("v1", "m1"), ("v1", "coupling"), ("coupling", "v2"),
                 ("v2", "m2")]:
        bg.connect(a, h)
    return bg


def lever(force: Any, ratio: Any, m: Any, k: Any, b: Any) -> BondGraph:
    """A massless lever (TF) drives a mass on a spring and damper::

        Se:force --> TF:lever (v_out = ratio v_in) --> 1:v --> I:m, C:k, R:b

    The mass sees force / ratio: m x'' + b x' + k x = force / ratio.
    """
    bg = BondGraph("lever")
    bg.add(Se("force", force), TF("lever", ratio), OneJunction("v"), I("m", m), C("k", k),
           R("b", b))
    for a, h in [("force", "lever"), ("lever", "v"), ("v", "m"), ("v", "k"), ("v", "b")]:
        bg.connect(a, h)
    return bg


def dc_motor(voltage: Any, resistance: Any, inductance: Any, torque_constant: Any,
             inertia: Any, friction: Any) -> BondGraph:
    """A DC motor driving an inertia: electrical R and L, a gyrator, mechanical J and b::

        Se:V --> 1:i --> R:Ra, I:La
                  '--> GY:k --> 1:w --> I:J, R:b

    L di/dt = V - Ra i - k w;  J dw/dt = k i - b w.  States p_La = La i, p_J = J w.
    """
    bg = BondGraph("dc_motor")
    bg.add(Se("V", voltage), OneJunction("i"), R("Ra", resistance), I("La", inductance),
           GY("k", torque_constant), OneJunction("w"), I("J", inertia), R("b", friction))
    for a, h in [("V", "i"), ("i", "Ra"), ("i", "La"), ("i", "k"), ("k", "w"), ("w", "J"),
                 ("w", "b")]:
        bg.connect(a, h)
    return bg


def cartesian_pendulum(m: float, length: float, g: float) -> BondGraph:
    """A planar pendulum in Cartesian coordinates, from primitives::

        Se:gravity (0, -m g) --> 1:v (dim 2) --> I:m (dim 2)
                                    '--> MTF:radial (r^T / l) --> 0:rod (constraint)

    The kinematic state ``r`` (the mass's position from the pivot, m) integrates the
    velocity v and modulates the MTF; the rod junction gets ``Se*_rod`` whose effort is
    the rod tension m (g cos(theta) + l thetadot^2) (N). Phi = l - |r|.
    """
    l = float(length)
    bg = BondGraph("cartesian_pendulum")
    bg.add(Se("gravity", [0.0, -m * g], dim=2), OneJunction("v", dim=2), I("m", m, dim=2),
           MTF("radial", lambda r: (r / l)[None, :], modulus_rate=lambda r, rd: (rd / l)[None, :],
               depends_on=("r",), shape=(1, 2)),
           ZeroJunction("rod", constraint=True,
                        position_constraint=PositionConstraint(
                            lambda r: np.array([l - np.linalg.norm(r)]), ("r",))))
    for a, h in [("gravity", "v"), ("v", "m"), ("v", "radial"), ("radial", "rod")]:
        bg.connect(a, h)
    bg.add_kinematic_state(KinematicState("r", "v", 2))
    return bg


def damped_constraint(m: Any, b: Any, force: Any) -> BondGraph:
    """An explicit Se* whose constraint flow sees a resistor, so that Eq. (14) applies::

        Se:force --> 1:v --> I:m
                       '--> 0:c <-- Se*:u ;  0:c --> R:b

    c = u / b - v = 0 gives u = b v: the mass obeys m v' = force - b v.
    """
    bg = BondGraph("damped_constraint")
    bg.add(Se("force", force), OneJunction("v"), I("m", m), ZeroJunction("c"),
           UnknownEffort("u", junction="c"), R("b", b))
    for a, h in [("force", "v"), ("v", "m"), ("v", "c"), ("u", "c"), ("c", "b")]:
        bg.connect(a, h)
    return bg
