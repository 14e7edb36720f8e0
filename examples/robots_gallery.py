"""Real robots from their URDF: a UR5 arm on a fixed base and a Solo12 quadruped on a
floating base, each holding a pose with a PD controller under gravity, simulated and
written as 3D pages.

The URDFs come from the ``example-robot-data`` package (the test extra installs it:
``pip install -e '.[test]'``). A PD controller holding the pose q* is a spring of
stiffness Kp with rest q* and a damper Kd on each joint axis: effort = -Kp (q - q*) -
Kd qd, exactly. The arm sags under gravity until the springs carry it; the quadruped falls
freely (no ground contact) with its legs held bent.

    python examples/robots_gallery.py --out out/robots [--t-end 2.0]

Writes ``ur5.html`` and ``solo12.html`` (open them in a browser) and prints, per robot,
the sag of each joint from its target at the end and the energy balance of the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

from elements import AxisDamper, AxisSpring, animate, load_urdf


def robots_dir() -> str:
    """The robots folder of the example-robot-data package (exit 2 with a message if it
    is not installed)."""
    import importlib.metadata as md
    try:
        dist = md.distribution("example-robot-data")
    except md.PackageNotFoundError:
        sys.exit("error: the example-robot-data package is not installed: "
                 "pip install example-robot-data (or pip install -e '.[test]')")
    return str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def hold(mech, target: dict[str, float], kp: float, kd: float) -> None:
    """A PD controller on every moving joint: a spring (kp, rest = target, 0 where not
    named) and a damper (kd). The file's own actuators stay at zero effort."""
    for name, joint in mech.joints.items():
        joint.add_spring(AxisSpring(kp, target.get(name, 0.0)))
        joint.add_damper(AxisDamper(kd))


def simulate(name: str, mech, q0: dict[str, float], t_end: float, out: str, free=None):
    mm = mech.assemble()
    t = np.linspace(0.0, t_end, 201)
    res = mm.simulate((0.0, t_end), q0, free=free, t_eval=t, rtol=1e-7, atol=1e-9)
    page = animate(res, os.path.join(out, f"{name}.html"), title=f"{name} (URDF)",
                   reactions=False, plots=[])
    sag = {j: float(res.joint(j).q[-1]) - q0.get(j, 0.0) for j in mech.joints}
    worst = max(sag, key=lambda j: abs(sag[j]))
    balance = res.energy.balance
    print(f"{name}: {len(mech.bodies)} bodies, {len(mech.joints)} joints; status "
          f"{res.message}; largest sag from the target at t = {t_end:g} s: {worst} "
          f"{sag[worst]:+.4f}; energy balance drift {np.abs(balance - balance[0]).max():.2e} J; "
          f"wrote {page}")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out/robots")
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    root = robots_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # (the import report lists the limits)
        arm = load_urdf(os.path.join(root, "ur_description/urdf/ur5_robot.urdf"))
        dog = load_urdf(os.path.join(root, "solo_description/robots/solo12.urdf"),
                        floating_base=True)
    pose = {"shoulder_lift_joint": -1.2, "elbow_joint": 1.5, "wrist_1_joint": -1.9,
            "wrist_2_joint": -1.57}
    hold(arm, pose, kp=800.0, kd=20.0)
    simulate("ur5", arm, pose, args.t_end, args.out)
    legs = {f"{leg}_{part}": v for leg in ("FL", "FR", "HL", "HR")
            for part, v in (("HFE", 0.8 if leg[0] == "F" else -0.8),
                            ("KFE", -1.6 if leg[0] == "F" else 1.6))}
    hold(dog, legs, kp=6.0, kd=0.05)
    base = next(iter(dog.free_bodies()))
    simulate("solo12", dog, legs, args.t_end, args.out,
             free={base: {"position": [0.0, 0.0, 0.5], "angular_velocity": [0.0, 0.5, 1.0]}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
