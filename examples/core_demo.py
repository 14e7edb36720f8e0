"""The core on two textbook systems: a Cartesian pendulum and a DC motor.

1. The planar pendulum of :func:`bondgraph.models.cartesian_pendulum`, a point mass m
   (kg) on a rigid massless rod of length l (m), built from primitives in Cartesian
   coordinates. The rod's constraint 0-junction gets an unknown effort source
   ``Se*_rod`` from the causality assignment; its effort is the rod tension (N), which
   the run compares with the closed form m (g cos(theta) + l thetadot^2). Frame: the
   global plane with x to the right and y up, origin at the pivot; theta is measured
   from the downward vertical, counter-clockwise positive.
2. The DC motor of :func:`bondgraph.models.dc_motor` (armature resistance and
   inductance, a gyrator with the torque constant, rotor inertia and friction), switched
   on at t = 0 with a constant voltage; compared with the exact solution of its linear
   state equations (a matrix exponential).

Writes into ``--out`` (default ``out/core_demo``):

- ``pendulum.csv``: t (s), x, y (m), tension and closed-form tension (N)
- ``dc_motor.csv``: t (s), current (A), speed (rad/s) and their exact values
- ``pendulum_bond_graph.dot`` and ``.svg``: the causal bond graph (the SVG needs
  Graphviz's ``dot``; without it the DOT text is still written and a note printed)
- ``pendulum_tension.png``, ``dc_motor.png``: plots (matplotlib, Agg backend; skipped
  with a note when matplotlib is not installed)

Run: ``python examples/core_demo.py --out DIR`` (exit status 1 if a cross-check fails).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.linalg import expm

try:
    import bondgraph  # noqa: F401
except ImportError:  # a source checkout that is not installed: use the package beside us
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bondgraph import BondGraphError, assemble, assign_causality, models, render, simulate

TOL = 1e-6          # cross-check threshold: N for the tension, m for |Phi|


def _pyplot():
    """matplotlib.pyplot on the Agg backend, or None (with a note) when not installed."""
    try:
        import matplotlib
    except ImportError:
        print("NOTE: matplotlib is not installed (pip install 'vector-bondgraph[plot]'); "
              "skipping the PNG plots")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def pendulum(out: Path, t_end: float) -> tuple[float, float]:
    """Simulate the pendulum; write its CSV, diagram and plot. Returns (max tension
    residual in N, max |Phi| in m)."""
    m, l, g = 2.0, 1.5, 9.81                       # kg, m, m/s^2
    theta0, thetadot0 = 1.0, 1.5                   # rad, rad/s
    cg = assign_causality(models.cartesian_pendulum(m, l, g))
    print(cg.summary())
    model = assemble(cg)
    x0 = {"r": l * np.array([np.sin(theta0), -np.cos(theta0)]),               # m
          "p_m": m * l * thetadot0 * np.array([np.cos(theta0), np.sin(theta0)])}  # kg m/s
    t = np.linspace(0.0, t_end, int(round(100 * t_end)) + 1)
    r = simulate(model, (0.0, t_end), x0, t_eval=t, method="DOP853", rtol=1e-12,
                 atol=1e-12)
    print(r)
    pos = r.state("r")                              # (2, n), m
    vel = r.state("p_m") / m                        # (2, n), m/s
    cos_theta = -pos[1] / np.linalg.norm(pos, axis=0)
    thetadot_sq = np.sum(vel ** 2, axis=0) / l ** 2
    closed = m * (g * cos_theta + l * thetadot_sq)
    tension = r.constraint_force("Se*_rod")[0]
    np.savetxt(out / "pendulum.csv",
               np.column_stack([r.t, pos[0], pos[1], tension, closed]), delimiter=",",
               header="t_s,x_m,y_m,tension_N,tension_closed_form_N", comments="")

    try:
        path = render(cg, out / "pendulum_bond_graph.svg")
        print(f"wrote {path} and {out / 'pendulum_bond_graph.dot'}")
    except BondGraphError as exc:                   # no Graphviz 'dot': DOT text only
        print(f"NOTE: {exc}")

    plt = _pyplot()
    if plt is None:
        return float(np.max(np.abs(tension - closed))), r.max_abs_phi
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    ax1.plot(r.t, tension, label="Se*_rod effort (bond graph)")
    ax1.plot(r.t, closed, "--", label="m (g cos theta + l thetadot^2)")
    ax1.set_ylabel("rod tension (N)")
    ax1.legend()
    ax2.semilogy(r.t, np.abs(tension - closed) + 1e-18)
    ax2.set_ylabel("|difference| (N)")
    ax2.set_xlabel("t (s)")
    fig.suptitle("Cartesian pendulum: rod tension")
    fig.tight_layout()
    fig.savefig(out / "pendulum_tension.png", dpi=100)
    plt.close(fig)
    return float(np.max(np.abs(tension - closed))), r.max_abs_phi


def dc_motor(out: Path, t_end: float) -> float:
    """Simulate the DC motor; write its CSV and plot. Returns the largest relative
    difference from the exact linear solution."""
    V, Ra, La, k, J, b = 12.0, 1.1, 0.5, 0.08, 0.01, 0.002   # V, ohm, H, N m/A, kg m^2, N m s
    model = assemble(assign_causality(models.dc_motor(V, Ra, La, k, J, b)))
    t = np.linspace(0.0, t_end, 401)
    r = simulate(model, (0.0, t_end), {"p_La": 0.0, "p_J": 0.0}, t_eval=t,
                 method="DOP853", rtol=1e-11, atol=1e-12)
    print(r)
    current = r.state("p_La") / La                  # A
    speed = r.state("p_J") / J                      # rad/s
    # exact: d(i, w)/dt = A (i, w) + (V / La, 0) from rest
    A = np.array([[-Ra / La, -k / La], [k / J, -b / J]])
    u = np.array([V / La, 0.0])
    Ainv_u = np.linalg.solve(A, u)
    exact = np.array([(expm(A * ti) - np.eye(2)) @ Ainv_u for ti in r.t]).T
    np.savetxt(out / "dc_motor.csv",
               np.column_stack([r.t, current, speed, exact[0], exact[1]]), delimiter=",",
               header="t_s,current_A,speed_rad_s,current_exact_A,speed_exact_rad_s",
               comments="")

    scale = np.abs(exact).max(axis=1, keepdims=True)
    err = float(np.max(np.abs(np.vstack([current, speed]) - exact) / scale))
    plt = _pyplot()
    if plt is None:
        return err
    fig, ax1 = plt.subplots(figsize=(7, 4))
    ax1.plot(r.t, speed, color="tab:blue", label="speed")
    ax1.set_xlabel("t (s)")
    ax1.set_ylabel("speed (rad/s)", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(r.t, current, color="tab:red", label="current")
    ax2.set_ylabel("current (A)", color="tab:red")
    fig.suptitle(f"DC motor switched on at {V:g} V")
    fig.tight_layout()
    fig.savefig(out / "dc_motor.png", dpi=100)
    plt.close(fig)
    return err


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/core_demo"),
                        help="output directory (created if missing)")
    parser.add_argument("--t-end", type=float, default=5.0,
                        help="pendulum run length in s (default 5)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    tension_err, phi_max = pendulum(args.out, args.t_end)
    motor_err = dc_motor(args.out, 8.0)

    # Cross-checks
    print(f"pendulum: max |tension - m (g cos th + l thd^2)| = {tension_err:.3e} N")
    print(f"pendulum: max |Phi| (rod length error)          = {phi_max:.3e} m")
    print(f"DC motor: max relative difference from expm      = {motor_err:.3e}")
    ok = tension_err < TOL and phi_max < TOL and motor_err < TOL
    print("cross-checks:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
