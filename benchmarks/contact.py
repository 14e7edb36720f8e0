"""Contact on real MJCF files, beside MuJoCo in one run.

For each model (gymnasium's ant and hopper, dm_control's hopper, walker and humanoid
when installed): load it with its geoms as collision shapes (``load_mjcf``, contact laws from
solref/solimp) and its joint ranges as compliant stops, start both from the file's pose
at rest, simulate the span (default 5 s) with ours and with MuJoCo's own stepping, and
print the wall times, their ratio, and the root body's height at the end on both sides
(no actuation: the robot falls, lands and comes to rest).

    python benchmarks/contact.py                 # 5 s each
    python benchmarks/contact.py --span 1 --method Radau
    python benchmarks/contact.py --models "dm humanoid" --span 2

The machine is shared: compare the ratio of one run, not times from another day.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402


def models() -> dict[str, str]:
    out = {}
    try:
        import gymnasium
        base = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
        out.update({"gym ant": str(base / "ant.xml"), "gym hopper": str(base / "hopper.xml")})
    except ImportError:
        print("gymnasium is not installed: its ant and hopper are skipped "
              "(pip install gymnasium)")
    try:
        import dm_control
        suite = Path(dm_control.__file__).parent / "suite"
        out.update({"dm hopper": str(suite / "hopper.xml"),
                    "dm walker": str(suite / "walker.xml"),
                    "dm humanoid": str(suite / "humanoid.xml")})
    except ImportError:
        print("dm_control is not installed: its hopper, walker and humanoid are skipped")
    return out


def run(name: str, path: str, span: float, method: str, limits: dict) -> dict:
    import mujoco

    from elements import RobotImportWarning, load_mjcf, mujoco_coordinates
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotImportWarning)
        t0 = time.perf_counter()
        mech = load_mjcf(path, limits=limits)
        mm = mech.assemble()
        build = time.perf_counter() - t0
    q, qd, free = mujoco_coordinates(mech, model, data.qpos, data.qvel)
    root = next(iter(mech.bodies))
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mm.simulate((0.0, span), q, qd, free=free,
                          t_eval=np.linspace(0.0, span, 51), method=method, rtol=1e-4,
                          atol=1e-6)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    while data.time < span:
        mujoco.mj_step(model, data)
    theirs = time.perf_counter() - t0
    z = res.body(root).position[2]
    return {"model": name, "bodies": len(mech.bodies), "shapes": len(mech.shapes),
            "status": res.raw.status.name, "build_s": round(build, 3),
            "ours_s": round(ours, 3), "mujoco_s": round(theirs, 4),
            "ratio": round(ours / theirs, 1), "nfev": int(res.raw.nfev),
            "root": root, "root_z_ours": float(z[-1]),
            "root_z_mujoco": float(data.xpos[bid][2]),
            "lowest_root_z_ours": float(np.nanmin(z)),
            "energy_drift": float(res.energy.relative_drift)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--span", type=float, default=5.0, help="simulated seconds (5)")
    ap.add_argument("--method", default="DOP853", help="our solver (DOP853)")
    ap.add_argument("--stiffness", type=float, default=50.0,
                    help="the stops' stiffness (N m/rad or N/m) for the joint ranges")
    ap.add_argument("--models", default=None,
                    help="comma-separated names (default: all that are installed)")
    ap.add_argument("--results", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    chosen = models()
    if args.models:
        wanted = [m.strip() for m in args.models.split(",")]
        unknown = [m for m in wanted if m not in chosen]
        if unknown:
            ap.error(f"--models: {', '.join(unknown)} not available; choose from "
                     f"{', '.join(chosen)}")
        chosen = {m: chosen[m] for m in wanted}
    rows = [run(n, p, args.span, args.method, {"stiffness": args.stiffness, "damping": 1.0})
            for n, p in chosen.items()]
    print(f"{'model':<12}{'bodies':>7}{'shapes':>7}{'ours s':>9}{'MuJoCo s':>10}"
          f"{'ratio':>8}  root z ours / MuJoCo (m)   status")
    for r in rows:
        print(f"{r['model']:<12}{r['bodies']:>7}{r['shapes']:>7}{r['ours_s']:>9.2f}"
              f"{r['mujoco_s']:>10.4f}{r['ratio']:>8.0f}  {r['root_z_ours']:.3f} / "
              f"{r['root_z_mujoco']:.3f}   {r['status']}")
    os.makedirs(args.results, exist_ok=True)
    out = Path(args.results) / ("contact.json" if not args.models else
                                "contact_" + "_".join(m.replace(" ", "-") for m in chosen)
                                + ".json")
    out.write_text(json.dumps({"command": " ".join(sys.argv), "span": args.span,
                               "method": args.method, "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
