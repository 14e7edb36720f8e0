"""An inverted pendulum on a cart: an LQR designed on the linear model, run on the
nonlinear mechanism.

The cart (1 kg) slides along x on a prismatic joint ``slide``; the pole (a uniform rod,
0.3 kg, 0.8 m) turns on a revolute joint ``hinge`` about z at the cart's centre, upright
at q = 0 (gravity along -y). Steps:

1. linearise about the upright equilibrium (``elements.linearize_mechanism``), the cart's
   force as the input: states z = [slide.q, hinge.q, slide.qd, hinge.qd];
2. the linear model has one unstable mode, sqrt(m g (l/2) / J_eff) (printed);
3. LQR: K from the continuous algebraic Riccati equation (scipy), u = -K z;
4. the same mechanism with the controller as the cart's actuator (a StateFunction of the
   joint coordinates and the bodies' momenta) is simulated from the pole tilted by
   0.2 rad: it stays up and returns to the upright, cart at the origin.

    python examples/lqr_cart_pole.py [--out DIR] [--t-end 6] [--angle 0.2]

With ``--out`` it writes the linear model (CSV, MAT, JSON), its Bode and step plots of
force -> pole angle, and a plot of the nonlinear run against the closed-loop linear one.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

try:
    import bondgraph  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scipy.linalg import solve_continuous_are

from bondgraph import StateFunction
from elements import (
    Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody, linearize_mechanism,
)

M_CART, M_POLE, LENGTH, G = 1.0, 0.3, 0.8, 9.81      # kg, kg, m, m/s^2


def cart_pole(force=None) -> Mechanism:
    """The cart and pole; ``force`` (a number, TimeFunction or StateFunction, N) is the
    cart's actuator when given."""
    mech = Mechanism("cart_pole", gravity=(0.0, -G, 0.0))
    cart = mech.add_body(RigidBody("cart", M_CART, Inertia.solid_cube(M_CART, 0.2)))
    pole = mech.add_body(RigidBody("pole", M_POLE, Inertia.rod(M_POLE, LENGTH, axis=1,
                                                                 thin=1e-4)))
    mech.add_joint(PrismaticJoint("slide", mech.ground, cart, axis=(1.0, 0.0, 0.0),
                                  **({} if force is None else {"actuator": force})))
    mech.add_joint(RevoluteJoint("hinge", cart, pole, child_point=(0.0, -LENGTH / 2, 0.0),
                                 axis=(0.0, 0.0, 1.0)))
    return mech


def controller(mech: Mechanism, K: np.ndarray) -> StateFunction:
    """u = -K z, z = [x, theta, xdot, thetadot] read from the states: the joints'
    coordinates, the cart's momentum (it only translates along x) and the pole's angular
    momentum about z (it turns about z only: its body z axis stays the global z, so
    thetadot = h_z / J_zz)."""
    slide, hinge = (mech.joints[n].axes[0].state for n in ("slide", "hinge"))
    p_cart = mech.bodies["cart"].linear_momentum
    h_pole = mech.bodies["pole"].angular_momentum
    j_zz = M_POLE * LENGTH ** 2 / 12

    def force(t, s):
        z = np.array([s[slide][0], s[hinge][0], s[p_cart][0] / M_CART, s[h_pole][2] / j_zz])
        return float(-K @ z)

    return StateFunction(force, (slide, hinge, p_cart, h_pole))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the linear model and plots here")
    ap.add_argument("--t-end", type=float, default=6.0, help="end time (s), default 6")
    ap.add_argument("--angle", type=float, default=0.2,
                    help="initial tilt of the pole (rad), default 0.2")
    args = ap.parse_args(argv)

    # 1-2. the linear model about the upright and its modes
    lin = linearize_mechanism(cart_pole().assemble(), {"slide": 0.0, "hinge": 0.0},
                              inputs=["slide"], outputs=["hinge.q", "slide.q", "pole.x"])
    print(lin)
    print("states:", ", ".join(lin.state_names), "| input:", lin.input_names[0])
    print(lin.modes().table())
    # closed form of the unstable root (cart free): J_eff thetaddot = m g (l/2) theta with
    # J_eff = J_c + m (l/2)^2 (1 - m / (M + m))
    m, half = M_POLE, LENGTH / 2
    j_eff = m * LENGTH ** 2 / 12 + m * half ** 2 * (1 - m / (M_CART + m))
    unstable = np.sqrt(m * G * half / j_eff)
    got = float(lin.modes().eigenvalues.real.max())
    print(f"unstable eigenvalue {got:.10f} 1/s; closed form {unstable:.10f} 1/s")

    # 3. LQR on the linear model
    Q = np.diag([1.0, 20.0, 1.0, 1.0])
    R = np.array([[0.1]])
    P = solve_continuous_are(lin.A, lin.B, Q, R)
    K = np.linalg.solve(R, lin.B.T @ P)
    closed = np.linalg.eigvals(lin.A - lin.B @ K)
    print("LQR gain K:", np.array2string(K[0], precision=4))
    print("closed-loop eigenvalues:", np.array2string(np.sort_complex(closed), precision=4))

    # 4. the nonlinear mechanism with the controller as the cart's actuator
    mech = cart_pole()
    mech = cart_pole(controller(mech, K[0]))
    mm = mech.assemble()
    t = np.linspace(0.0, args.t_end, 301)
    run = mm.simulate((0.0, args.t_end), {"hinge": args.angle}, t_eval=t, rtol=1e-9,
                      atol=1e-9)
    theta, x = run.joint("hinge").q, run.joint("slide").q
    z_lin = np.zeros((4, t.size))
    from scipy.linalg import expm
    for k, tk in enumerate(t):
        z_lin[:, k] = expm((lin.A - lin.B @ K) * tk) @ np.array([0.0, args.angle, 0.0, 0.0])
    print(f"nonlinear run: {run.message}; max |theta| {np.abs(theta).max():.4f} rad, "
          f"|theta| at {t[-1]:g} s {abs(theta[-1]):.2e} rad, cart at {x[-1]:+.2e} m; "
          f"largest difference from the closed-loop linear model "
          f"{np.abs(theta - z_lin[1]).max():.2e} rad")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        lin.write(args.out, stem="cart_pole")
        lin.bode_plot(os.path.join(args.out, "bode_force_to_angle.png"),
                      [("slide", "hinge.q")])
        lin.step_plot(os.path.join(args.out, "step_force_to_angle.png"),
                      [("slide", "hinge.q")], t=np.linspace(0.0, 1.0, 200))
        from bondgraph._plot import pyplot
        plt = pyplot("the cart-pole plot")
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(t, theta, label="pole angle, nonlinear (rad)")
        ax.plot(t, z_lin[1], "--", label="pole angle, linear closed loop (rad)")
        ax.plot(t, x, label="cart position, nonlinear (m)")
        ax.set_xlabel("time (s)")
        ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "lqr_run.png"), dpi=110)
        plt.close(fig)
        print(f"wrote {', '.join(sorted(os.listdir(args.out)))} into {args.out}")
    ok = (run.success and abs(got - unstable) < 1e-8 * unstable and
          np.all(closed.real < 0) and np.abs(theta).max() <= abs(args.angle) + 1e-9 and
          abs(theta[-1]) < 1e-2 * abs(args.angle) and abs(x[-1]) < 1e-2)
    print("cross-checks:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
