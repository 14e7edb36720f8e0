"""Canonical scalar and planar bond graphs, shared by tests, examples and docs.

- :func:`mass_spring_damper`
- :func:`two_masses_rigid`
- :func:`lever`
- :func:`dc_motor`
- :func:`cartesian_pendulum`
- :func:`damped_constraint` (an explicit Se* whose constraint sees a resistor: Eq. (14))
- :func:`duffing`, :func:`diode_rectifier`, :func:`orifice_tank` (nonlinear laws)

Parameters are required (numbers or sympy symbols): no physical defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

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
           "cartesian_pendulum", "damped_constraint", "duffing", "diode_rectifier",
           "orifice_tank"]


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


def duffing(m: Any, k: Any, k3: Any) -> BondGraph:
    """A mass on a hardening spring of energy H = k q^2/2 + k3 q^4/4 (J)::

        1:v --> I:m, C:spring (effort k q + k3 q^3)

    m dv/dt = -k q - k3 q^3, dq/dt = v: Duffing's oscillator without damping."""
    q = sympy.Symbol("q")
    bg = BondGraph("duffing")
    bg.add(OneJunction("v"), I("m", m),
           C("spring", energy=sympy.sympify(k) * q ** 2 / 2 + sympy.sympify(k3) * q ** 4 / 4))
    bg.connect("v", "m")
    bg.connect("v", "spring")
    return bg


def diode_rectifier(amplitude: Any, omega: Any, saturation_current: Any,
                    thermal_voltage: Any, series_resistance: Any, capacitance: Any,
                    load: Any) -> BondGraph:
    """A half-wave rectifier: a sine source (V), a diode (Shockley's law
    i = Is (exp(v/Vt) - 1), A) in series with a resistance (ohm), charging a capacitor
    (F) loaded by a resistance (ohm)::

        Se:Vs --> 1:i --> R:diode (flow law), R:Rs
                    '--> 0:out --> C:cap, R:load

    The diode and Rs share the current i: i = Is (exp((Vs - Vc - Rs i)/Vt) - 1), an
    algebraic loop through the diode's law (solved by Newton's method)."""
    e, t = sympy.Symbol("e"), sympy.Symbol("t")
    Is, Vt = sympy.sympify(saturation_current), sympy.sympify(thermal_voltage)
    bg = BondGraph("diode_rectifier")
    bg.add(Se("Vs", sympy.sympify(amplitude) * sympy.sin(sympy.sympify(omega) * t)),
           OneJunction("i"), R("diode", flow_law=Is * (sympy.exp(e / Vt) - 1)),
           R("Rs", series_resistance), ZeroJunction("out"),
           C("cap", compliance=capacitance), R("load", load))
    for a, h in [("Vs", "i"), ("i", "diode"), ("i", "Rs"), ("i", "out"), ("out", "cap"),
                 ("out", "load")]:
        bg.connect(a, h)
    return bg


def orifice_tank(capacitance: Any, discharge: Any) -> BondGraph:
    """A tank of hydraulic capacitance A/(rho g) (m^3/Pa) drained through an orifice
    of flow Q = c sqrt(p) (m^3/s, c in m^3/(s Pa^0.5))::

        0:p --> C:tank, R:orifice (flow law)

    Torricelli: sqrt(V) falls linearly, the tank is empty at T = 2 sqrt(V0 Cap) / c."""
    e = sympy.Symbol("e")
    bg = BondGraph("orifice_tank")
    bg.add(ZeroJunction("p"), C("tank", compliance=capacitance),
           R("orifice", flow_law=sympy.sympify(discharge) * sympy.sqrt(sympy.Abs(e))))
    bg.connect("p", "tank")
    bg.connect("p", "orifice")
    return bg
