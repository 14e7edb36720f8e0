"""Dynamics at a state, three ways, on real robots in one run (issue 22, item 3).

For Panda (7-DOF arm + 2 fingers, fixed base), Solo-12 (quadruped, floating) and
Talos (humanoid, floating; talos_reduced.urdf), per state and for a batch of B states:

- ours, old path: ``direct_dynamics`` / ``inverse_dynamics`` with
  ``method="bond_graph"`` (elements.analysis.dynamics: the bond graph model, dense reduction,
  dicts in and out; a few states only, it is slow);
- ours, the same dict functions with ``method="auto"`` (the default: FastDynamics
  underneath, dicts in and out);
- ours, new path: :class:`elements.FastDynamics` (compiled Newton-Euler in joint
  coordinates; one call for the batch);
- Pinocchio's ABA, RNEA and CRBA (one Python call per state for the batch).

Every time is a median over repeats; the table gives the times and the ratios to
Pinocchio's measured in the same run, and beside each of ours its largest error
against Pinocchio (relative to max(1, |Pinocchio's|)) over the states timed.

    python benchmarks/dynamics_api.py [--batch 1000] [--repeat 5] [--robots panda,solo12]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "helpers")]

ROBOTS = {"panda": ("panda_description/urdf/panda.urdf", False),
          "solo12": ("solo_description/robots/solo12.urdf", True),
          "talos": ("talos_data/robots/talos_reduced.urdf", True)}


def _robots_dir() -> str:
    import importlib.metadata as md
    return str(md.distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots"))


def _median_time(f, repeat: int, inner: int = 1) -> float:
    """The median over ``repeat`` of the time per call of ``inner`` calls (s)."""
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        ts.append((time.perf_counter() - t0) / inner)
    return float(np.median(ts))


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max()))


def bench(name: str, batch: int, repeat: int, old_states: int) -> list[dict]:
    import pinocchio as pin
    from pinocchio_joint_space import PinocchioJointSpace
    from elements import FastDynamics, direct_dynamics, inverse_dynamics
    from elements.files.urdf import load_urdf
    from bondgraph.spatial import quat_to_matrix
    rel, floating = ROBOTS[name]
    path = os.path.join(_robots_dir(), rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, floating_base=floating, mimic="independent")
    mm = mech.assemble()
    fd = FastDynamics(mm)
    ref = PinocchioJointSpace(pin, path, fd, mech, floating)
    model, data = ref.model, ref.data
    off = 6 if floating else 0
    damping = fd._axis_params[3][off:]
    rng = np.random.default_rng(2026)
    states = [ref.random(rng) for _ in range(batch)]
    Q, QD, TAU = (np.array([s[0][k] for s in states]) for k in range(3))
    QP, VP, TP = (np.array([s[1][k] for s in states]) for k in range(3))
    Ts = [s[1][3] for s in states]
    # (compile and warm up)
    fd.direct_dynamics(Q[:2], QD[:2], TAU[:2])
    fd.inverse_dynamics(Q[:2], QD[:2], TAU[:2])
    fd.mass_matrix(Q[:2])
    rows = []
    # -- direct dynamics ------------------------------------------------------------------
    qdd = fd.direct_dynamics(Q, QD, TAU)
    err_new = max(_rel(qdd[i], ref.aba(QP[i], VP[i], TP[i], Ts[i], damping))
                  for i in range(batch))
    names = fd.velocity_names[off:]
    base = fd.body_names[0] if floating else None

    def old_dd(i, method="bond_graph"):
        q, qd, tau = Q[i], QD[i], TAU[i]
        free = None
        if floating:
            A = quat_to_matrix(q[3:7])
            free = {base: {"rotation": A, "position": q[0:3],
                           "angular_velocity": A @ qd[3:6], "velocity": qd[0:3]}}
        out = direct_dynamics(mm, dict(zip(names, q[7 if floating else 0:])),
                              dict(zip(names, qd[off:])), dict(zip(names, tau[off:])),
                              free=free, method=method)
        a = np.array([out[n] for n in names])
        if floating:
            a = np.concatenate([out[f"{base}.a"], out[f"{base}.alpha"], a])
        return a

    old_dd(0)                                       # (builds and caches the model)
    err_old = max(_rel(old_dd(i), qdd[i]) for i in range(old_states)) + err_new
    t_old = _median_time(lambda: old_dd(0), max(1, min(repeat, 3)), old_states)
    err_old = max(err_old, max(_rel(old_dd(i, "auto"), qdd[i]) for i in range(10)))
    t_dict = _median_time(lambda: old_dd(0, "auto"), repeat, 200)
    t_one = _median_time(lambda: fd.direct_dynamics(Q[0], QD[0], TAU[0]), repeat, 200)
    t_batch = _median_time(lambda: fd.direct_dynamics(Q, QD, TAU), repeat)
    p_one = _median_time(lambda: pin.aba(model, data, QP[0], VP[0], TP[0]), repeat, 200)
    p_batch = _median_time(lambda: [pin.aba(model, data, QP[i], VP[i], TP[i])
                                    for i in range(batch)], repeat)
    rows.append(dict(robot=name, op="direct (ABA)", nv=fd.n_v, old=t_old, dict=t_dict,
                     one=t_one,
                     batch=t_batch, pin_one=p_one, pin_batch=p_batch, err_new=err_new,
                     err_old=err_old))
    # -- inverse dynamics -----------------------------------------------------------------
    tau = fd.inverse_dynamics(Q, QD, qdd)
    err_new = max(_rel(tau[i], ref.rnea(QP[i], VP[i], qdd[i], Ts[i], damping))
                  for i in range(batch))
    t_old = t_dict = float("nan")
    err_old = float("nan")
    if not floating:             # (the old inverse dynamics takes no floating base)
        def old_id(i, method="bond_graph"):
            out = inverse_dynamics(mm, dict(zip(names, Q[i])), dict(zip(names, QD[i])),
                                   dict(zip(names, qdd[i])), method=method)
            return np.array([out[n] for n in names])
        old_id(0)
        err_old = max(_rel(old_id(i), tau[i]) for i in range(old_states)) + err_new
        err_old = max(err_old, max(_rel(old_id(i, "auto"), tau[i]) for i in range(10)))
        t_old = _median_time(lambda: old_id(0), max(1, min(repeat, 3)), old_states)
        t_dict = _median_time(lambda: old_id(0, "auto"), repeat, 200)
    AP = np.array([ref._acc_pin(qdd[i], VP[i], Ts[i]) for i in range(batch)])
    t_one = _median_time(lambda: fd.inverse_dynamics(Q[0], QD[0], qdd[0]), repeat, 200)
    t_batch = _median_time(lambda: fd.inverse_dynamics(Q, QD, qdd), repeat)
    p_one = _median_time(lambda: pin.rnea(model, data, QP[0], VP[0], AP[0]), repeat, 200)
    p_batch = _median_time(lambda: [pin.rnea(model, data, QP[i], VP[i], AP[i])
                                    for i in range(batch)], repeat)
    rows.append(dict(robot=name, op="inverse (RNEA)", nv=fd.n_v, old=t_old, dict=t_dict,
                     one=t_one,
                     batch=t_batch, pin_one=p_one, pin_batch=p_batch, err_new=err_new,
                     err_old=err_old))
    # -- mass matrix ------------------------------------------------------------------------
    M = fd.mass_matrix(Q)
    err_new = max(_rel(M[i], ref.crba(QP[i], Ts[i])) for i in range(batch))
    t_one = _median_time(lambda: fd.mass_matrix(Q[0]), repeat, 200)
    t_batch = _median_time(lambda: fd.mass_matrix(Q), repeat)
    p_one = _median_time(lambda: pin.crba(model, data, QP[0]), repeat, 200)
    p_batch = _median_time(lambda: [pin.crba(model, data, QP[i]) for i in range(batch)],
                           repeat)
    rows.append(dict(robot=name, op="mass matrix (CRBA)", nv=fd.n_v, old=float("nan"),
                     dict=float("nan"), one=t_one, batch=t_batch, pin_one=p_one, pin_batch=p_batch,
                     err_new=err_new, err_old=float("nan")))
    return rows


def _us(t: float) -> str:
    return "-" if not np.isfinite(t) else f"{t * 1e6:.1f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--old-states", type=int, default=3,
                    help="states timed on the old (bond graph, dict) path")
    ap.add_argument("--robots", default=",".join(ROBOTS))
    args = ap.parse_args(argv)
    try:
        import pinocchio  # noqa: F401
        _robots_dir()
    except Exception as exc:  # noqa: BLE001 - say why and stop
        print(f"needs pinocchio and example-robot-data: {exc}")
        return
    rows = []
    for name in args.robots.split(","):
        rows += bench(name, args.batch, args.repeat, args.old_states)
    B = args.batch
    print(f"\nper state (us) and a batch of {B} (ms); ratios to Pinocchio's in this run; "
          f"err new: FastDynamics' largest relative difference to Pinocchio over the "
          f"states; err dicts: the dict functions' (both methods) to it, plus err new\n")
    print("| robot | nv | operation | bond graph dicts /state | auto dicts /state | "
          "FastDynamics /state | Pinocchio /state | new/Pin | "
          f"new batch {B} (ms) | Pinocchio loop {B} (ms) | new/Pin | "
          "old/new | err new | err dicts |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- |")
    for r in rows:
        speedup = "-" if not np.isfinite(r["old"]) else f"{r['old'] / r['one']:.0f}"
        err_old = "-" if not np.isfinite(r["err_old"]) else f"{r['err_old']:.1e}"
        print(f"| {r['robot']} | {r['nv']} | {r['op']} | {_us(r['old'])} | "
              f"{_us(r['dict'])} | {_us(r['one'])} "
              f"| {_us(r['pin_one'])} | {r['one'] / r['pin_one']:.2f} | "
              f"{r['batch'] * 1e3:.2f} | {r['pin_batch'] * 1e3:.2f} | "
              f"{r['batch'] / r['pin_batch']:.2f} | {speedup} | {r['err_new']:.1e} | "
              f"{err_old} |")

if __name__ == "__main__":
    main()
