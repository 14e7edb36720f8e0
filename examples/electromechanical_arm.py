"""An electromechanical arm: three revolute joints, each driven by a DC motor (armature
resistance and inductance) through a gearbox, under PD position control with gravity
compensation, electrical, mechanical and control parts in one bond graph.

The arm (gravity along -z): a turret turning about z (joint ``J1``), an upper arm
(0.4 m, 2 kg) on a shoulder about the turret's y axis (``J2``), a forearm (0.35 m, 1 kg)
on an elbow about y (``J3``); at q = 0 the arm points along x. Each joint ``Jk`` has a
drive ``Jk.drive``, built from the component library (``docs/components.md``)::

    battery (voltage_source, V = PD law) --> node 0 --> motor (dc_motor: Ra, La, k)
    motor.shaft --> gear (gearbox, ratio n) --> Jk.axis

The motor's rotor inertia sits on the joint axis, reflected through the gearbox
(n^2 J_m, an ``AxisRotor``: the same kinetic energy as J_m on the motor shaft); its
momentum gives the joint rate the controller reads, the joint angle is the joint's own
state. Viscous friction at each joint is an ``AxisDamper``. The batteries' voltages are
``StateFunction`` s::

    V = Kp (q_ref - q) - Kd qd + Ra tau_g(q) / (k n)

where tau_g(q) is the gravity torque at the joint (the last term holds the arm still at
the set-point: there the current is tau_g / (k n)).

The energy ledger: the batteries' delivered work (work states on the sources) equals the
kinetic and gravity energy of the links, the energy in the inductances and rotors, and
the energy dissipated in the armature resistances and the joint friction, to the
integration tolerance.

    python examples/electromechanical_arm.py [--out DIR] [--t-end 2.5]

With ``--out`` it writes the run (bodies.csv, joints.csv, energy.csv, ...), currents.csv,
summary.json and the 3D page ``arm.html`` with the motor currents plotted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

try:
    import bondgraph  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bondgraph import StateFunction, ZeroJunction
from elements import Inertia, Mechanism, RevoluteJoint, RigidBody, component

G = 9.81                                      # m/s^2
L2, M2 = 0.4, 2.0                             # upper arm: m, kg
L3, M3 = 0.35, 1.0                            # forearm: m, kg
MOTOR = {"resistance": 1.0, "inductance": 2e-3, "torque_constant": 0.05}  # ohm, H, N m/A
ROTOR = 2e-5                                  # kg m^2, the motor's rotor
RATIO = 100.0                                 # gearbox n = motor speed / joint speed
FRICTION = 0.05                               # N m s/rad at each joint
KP, KD = 20.0, 0.5                            # V/rad, V s/rad
SET_POINT = {"J1": 0.8, "J2": -0.6, "J3": 0.9}    # rad
JOINTS = ("J1", "J2", "J3")


def gravity_torque(q2: float, q3: float) -> tuple[float, float]:
    """dV/dq of the gravity potential at the shoulder and the elbow (N m): the torque the
    drives must give to hold the arm. A turn q about +y takes the x axis to
    (cos q, 0, -sin q): heights z2 = -L2/2 sin q2, z3 = -L2 sin q2 - L3/2 sin(q2 + q3)."""
    c2, c23 = np.cos(q2), np.cos(q2 + q3)
    return (-G * (M2 * L2 / 2 * c2 + M3 * (L2 * c2 + L3 / 2 * c23)),
            -G * M3 * L3 / 2 * c23)


def controller(mech: Mechanism, joint: str, k: int) -> StateFunction:
    """The battery voltage of joint ``joint`` (the k-th): PD on the joint angle (the
    joint's coordinate state) and rate (the reflected rotor's momentum over its inertia)
    plus the gravity feed-forward, which reads the angles of J2 and J3."""
    angle_state = {j: mech.joints[j].axes[0].state for j in JOINTS}     # "J1.coord"...
    rotor_state = {j: f"p_{j}.rotor" for j in JOINTS}      # the AxisRotor's momentum
    j_reflected = RATIO ** 2 * ROTOR
    ra, kt = MOTOR["resistance"], MOTOR["torque_constant"]

    def voltage(t, s):
        q = s[angle_state[joint]][0]
        qd = s[rotor_state[joint]][0] / j_reflected
        ff = 0.0
        if k > 0:
            ff = gravity_torque(s[angle_state["J2"]][0], s[angle_state["J3"]][0])[k - 1]
        return KP * (SET_POINT[joint] - q) - KD * qd + ra * ff / (kt * RATIO)

    reads = dict.fromkeys((angle_state[joint], rotor_state[joint], angle_state["J2"],
                           angle_state["J3"]))
    return StateFunction(voltage, tuple(reads))


def arm() -> Mechanism:
    """The arm with its three drives (see the module's docstring)."""
    mech = Mechanism("electromechanical_arm", gravity=(0.0, 0.0, -G))
    turret = mech.add_body(RigidBody("turret", 3.0, Inertia.principal(0.01, 0.01, 0.008)))
    upper = mech.add_body(RigidBody("upper", M2, Inertia.rod(M2, L2, axis=0, thin=1e-4)))
    fore = mech.add_body(RigidBody("fore", M3, Inertia.rod(M3, L3, axis=0, thin=1e-4)))
    common = {"rotor": RATIO ** 2 * ROTOR, "damper": FRICTION}
    mech.add_joint(RevoluteJoint("J1", mech.ground, turret, child_point=(0.0, 0.0, -0.1),
                                 axis=(0.0, 0.0, 1.0), **common))
    mech.add_joint(RevoluteJoint("J2", turret, upper, parent_point=(0.0, 0.0, 0.1),
                                 child_point=(-L2 / 2, 0.0, 0.0), axis=(0.0, 1.0, 0.0),
                                 **common))
    mech.add_joint(RevoluteJoint("J3", upper, fore, parent_point=(L2 / 2, 0.0, 0.0),
                                 child_point=(-L3 / 2, 0.0, 0.0), axis=(0.0, 1.0, 0.0),
                                 **common))
    for k, j in enumerate(JOINTS):
        def drive(bg, j=j, k=k):
            d = f"{j}.drive"
            bg.add(component("voltage_source", f"{d}.battery", voltage=controller(mech, j, k),
                             ledger=True),
                   component("dc_motor", f"{d}.motor", ledger=True, **MOTOR),
                   component("gearbox", f"{d}.gear", ratio=RATIO),
                   ZeroJunction(f"{d}.node"))
            bg.connect(f"{d}.battery.b", f"{d}.node")      # battery + -> motor terminal a
            bg.connect(f"{d}.node", f"{d}.motor.a")         # (battery.a, motor.b: ground)
            bg.connect(f"{d}.motor.shaft", f"{d}.gear.a")
            bg.connect(f"{d}.gear.b", f"{j}.axis", name=f"{d}.torque")
        mech.add_subsystem(f"{j}.drive", drive)
    return mech


def currents(res) -> dict[str, np.ndarray]:
    """The motor currents (A): the inductances' momenta over La."""
    return {f"{j}.current": res.raw.state(f"p_{j}.drive.motor.La") / MOTOR["inductance"]
            for j in JOINTS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the run, the currents and the 3D page")
    ap.add_argument("--t-end", type=float, default=2.5, help="end time (s), default 2.5")
    ap.add_argument("--points", type=int, default=501, help="output points, default 501")
    args = ap.parse_args(argv)

    mm = arm().assemble()
    subsystem = [s for s in mm.model.state_names if s.endswith(".motor.La")]
    print("states:", len(mm.model.state_names), "| drive states:", ", ".join(subsystem))
    t = np.linspace(0.0, args.t_end, args.points)
    res = mm.simulate((0.0, args.t_end), t_eval=t, rtol=1e-10, atol=1e-10,
                      states={s: 0.0 for s in subsystem})
    print(f"run: {res.message}")
    if not res.success:
        return 1

    errors = {j: float(res.joint(j).q[-1] - SET_POINT[j]) for j in JOINTS}
    print("set-point errors at the end (rad): " +
          ", ".join(f"{j} {e:+.2e}" for j, e in errors.items()))
    led = res.energy
    battery = sum(v for k, v in led.work.items() if k.endswith(".battery.V"))
    scale = float(np.abs(battery).max())
    drift = float(np.abs(led.balance - led.balance[0]).max())
    print(f"energy: batteries delivered {battery[-1]:.6f} J; links kinetic "
          f"{led.kinetic[-1]:.6f} J, gravity {led.gravity[-1] - led.gravity[0]:+.6f} J; "
          f"armatures {sum(v[-1] for k, v in led.dissipated.items() if k.endswith('Ra')):.6f}"
          f" J, friction "
          f"{sum(v[-1] for k, v in led.dissipated.items() if k.endswith('damper')):.6f} "
          f"J; stored in inductances and rotors {sum(v[-1] for v in led.other.values()):.3e}"
          f" J; balance drift {drift:.2e} J ({drift / scale:.1e} of the work)")
    amps = currents(res)
    ratio_err = max(float(np.abs(amps[f"{j}.current"] - res.raw.effort(f"{j}.drive.torque")
                                 / (MOTOR["torque_constant"] * RATIO)).max())
                    for j in JOINTS)
    print(f"current - joint torque / (k n): largest difference {ratio_err:.2e} A; peak "
          f"currents " + ", ".join(f"{k} {np.abs(v).max():.3f} A" for k, v in amps.items()))

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        res.write(args.out)
        from bondgraph._files import write_text
        rows = ["t," + ",".join(amps)] + [
            ",".join(f"{v:.12g}" for v in (tk, *(amps[c][i] for c in amps)))
            for i, tk in enumerate(res.t)]
        write_text(os.path.join(args.out, "currents.csv"), "\n".join(rows) + "\n")
        write_text(os.path.join(args.out, "summary_arm.json"), json.dumps(
            {"set_point_errors": errors, "energy_drift": drift, "battery_work": scale,
             "current_torque_difference": ratio_err}, indent=2))
        # the 3D page: the motion with the currents as extra plotted columns
        motion = res.motion()
        base_columns, base_units = motion.columns, motion.units
        page = dataclasses.replace(
            motion, _cache={},
            _columns=lambda: {**base_columns(), **amps},
            _units=lambda: {**base_units(), **{c: {"unit": "A"} for c in amps}})
        from elements import animate
        path = animate(page, os.path.join(args.out, "arm.html"),
                       plots=[[f"{j}.q" for j in JOINTS], list(amps)],
                       traces=["fore"], title="electromechanical arm")
        print(f"wrote {args.out} (3D page {os.path.basename(path)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
