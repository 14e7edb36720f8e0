"""Energy and momentum testing of multibody simulations (seed 000, "MBS Energy Testing").

Computes kinetic and potential energy independently of any simulator, from the bodies'
masses, inertias, angular rates, positions and velocities, by the seed's Eqs. (1)-(2)
(including the reaction-wheel term), with each of its four procedures for the form the
simulation output comes in; then compares them with the simulation's own figures and
runs the conservation and momentum tests, with a text and plot report.

- :func:`kinetic_energy`, :func:`potential_energy`: Eqs. (1) and (2).
- :func:`procedure1` .. :func:`procedure4`: KE and PE from each output form.
- :class:`MotionData`: inertial-frame arrays (procedure 1's inputs) of any simulator.
- :func:`motion_from_result`, :func:`motion_from_directory`: ours (a result, or the
  files ``MechanismResult.write`` wrote).
- :func:`check`: the report (:class:`EnergyReport`); ``python -m elements.analysis.energy_check DIR``.

Array shapes: n_t output times, N bodies, N_w wheels, N_j joint springs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from bondgraph._files import atomic_path
from bondgraph.errors import NameNotFoundError

from elements.energy_ledger import energy_scale

__all__ = ["kinetic_energy", "potential_energy", "procedure1", "procedure2", "procedure3",
           "procedure4", "MotionData", "motion_from_result", "motion_from_directory",
           "linear_momentum", "angular_momentum", "check", "EnergyReport", "CheckLine"]


def kinetic_energy(m, I, omega, rdot, h_wheel=None, I_wheel=None) -> np.ndarray:
    """Eq. (1): KE = 1/2 (sum_i (w_i^T I_i w_i + m_i rdot_i^T rdot_i) + sum_k |h_k|^2 / I_k).

    m (N,) kg; I (n_t, N, 3, 3) or (N, 3, 3) kg m^2 in inertial coordinates; omega and
    rdot (n_t, N, 3) rad/s and m/s inertial; h_wheel (n_t, N_w, 3) N m s (any coordinates:
    only |h| enters); I_wheel (N_w,) spin-axis inertias. Returns (n_t,) J.
    """
    m = np.asarray(m, dtype=float)
    omega = np.asarray(omega, dtype=float)
    rdot = np.asarray(rdot, dtype=float)
    I = np.asarray(I, dtype=float)
    if I.ndim == 3:
        I = np.broadcast_to(I, (omega.shape[0],) + I.shape)
    rot = np.einsum("tni,tnij,tnj->t", omega, I, omega)
    lin = np.einsum("n,tni,tni->t", m, rdot, rdot)
    ke = 0.5 * (rot + lin)
    if h_wheel is not None:
        h = np.asarray(h_wheel, dtype=float)
        ke = ke + 0.5 * np.einsum("tki,tki,k->t", h, h, 1.0 / np.asarray(I_wheel, float))
    return ke


def potential_energy(m, r, g, k=None, theta=None) -> np.ndarray:
    """Eq. (2): PE = 1/2 sum_i k_i theta_i^2 - sum_i m_i g^T r_i.

    r (n_t, N, 3) m inertial; g (3,) m/s^2 inertial; k (N_j,) and theta (n_t, N_j) the
    joint springs' stiffnesses and angles from rest. Returns (n_t,) J.
    """
    m = np.asarray(m, dtype=float)
    pe = -np.einsum("n,i,tni->t", m, np.asarray(g, dtype=float), np.asarray(r, dtype=float))
    if k is not None and len(k):
        th = np.asarray(theta, dtype=float)
        pe = pe + 0.5 * np.einsum("j,tj->t", np.asarray(k, dtype=float), th * th)
    return pe


def procedure1(m, I, omega, r, rdot, g, *, k=None, theta=None, h_wheel=None, I_wheel=None):
    """Procedure 1: everything in inertial coordinates. Returns (KE, PE)."""
    return (kinetic_energy(m, I, omega, rdot, h_wheel, I_wheel),
            potential_energy(m, r, g, k, theta))


def procedure2(m, I, omega, r_hat, r_hat_dot, R, R_dot, g, **extra):
    """Procedure 2, system-CM centric: r_hat, r_hat_dot (n_t, N, 3) from the system
    centre of mass R, R_dot (n_t, 3); all inertial. Returns (KE, PE)."""
    R = np.asarray(R, dtype=float)[:, None, :]
    Rd = np.asarray(R_dot, dtype=float)[:, None, :]
    return procedure1(m, I, omega, np.asarray(r_hat) + R, np.asarray(r_hat_dot) + Rd, g,
                      **extra)


def procedure3(m, I1, omega1, r_hat1, r_hat_dot1, R, R_dot, C1, g, **extra):
    """Procedure 3, body-1 coordinates: I1 (.., N, 3, 3), omega1, r_hat1, r_hat_dot1
    (n_t, N, 3) in body 1's coordinates; R, R_dot (n_t, 3) inertial; C1 (n_t, 3, 3) body-1
    to inertial. I_i = C1 I_i^1 C1^T, w_i = C1 w_i^1, r_i = C1 r_hat_i^1 + R,
    rdot_i = C1 r_hat_dot_i^1 + R_dot.

    ``r_hat_dot1`` must be the inertial time derivative of r_i - R expressed in body 1's
    coordinates, C1^T d/dt (C1 r_hat_i^1), which is d/dt r_hat_i^1 + omega1 x r_hat_i^1:
    the componentwise derivative of r_hat1 alone leaves the rotation of body 1 out (a
    wrong kinetic energy, not an error). Wheel momenta (``h_wheel`` in ``extra``) are
    passed on unchanged, so give them in inertial coordinates: the angular momentum
    adds them to the bodies' (the kinetic energy needs only their magnitude)."""
    C1 = np.asarray(C1, dtype=float)
    I1 = np.asarray(I1, dtype=float)
    if I1.ndim == 3:
        I1 = np.broadcast_to(I1, (C1.shape[0],) + I1.shape)
    I = np.einsum("tij,tnjk,tlk->tnil", C1, I1, C1)
    w = np.einsum("tij,tnj->tni", C1, omega1)
    r = np.einsum("tij,tnj->tni", C1, r_hat1) + np.asarray(R)[:, None, :]
    rd = np.einsum("tij,tnj->tni", C1, r_hat_dot1) + np.asarray(R_dot)[:, None, :]
    return procedure1(m, I, w, r, rd, g, **extra)


def procedure4(m, I, omega, r_rel, r_rel_dot, eta1, eta1_dot, g, **extra):
    """Procedure 4, joint-1 centric: r_rel, r_rel_dot (n_t, N, 3) from joint 1's inertial
    position eta1, eta1_dot (n_t, 3); all inertial. Returns (KE, PE)."""
    e = np.asarray(eta1, dtype=float)[:, None, :]
    ed = np.asarray(eta1_dot, dtype=float)[:, None, :]
    return procedure1(m, I, omega, np.asarray(r_rel) + e, np.asarray(r_rel_dot) + ed, g,
                      **extra)


def linear_momentum(m, rdot) -> np.ndarray:
    """sum_i m_i rdot_i, (n_t, 3) kg m/s."""
    return np.einsum("n,tni->ti", np.asarray(m, float), np.asarray(rdot, float))


def angular_momentum(m, I, omega, r, rdot, h_wheel=None) -> np.ndarray:
    """About the inertial origin: sum_i (r_i x m_i rdot_i + I_i w_i) + sum_k h_k, (n_t, 3)."""
    I = np.asarray(I, dtype=float)
    omega = np.asarray(omega, dtype=float)
    if I.ndim == 3:
        I = np.broadcast_to(I, (omega.shape[0],) + I.shape)
    L = np.cross(np.asarray(r, float), np.asarray(m, float)[None, :, None] *
                 np.asarray(rdot, float)).sum(axis=1)
    L = L + np.einsum("tnij,tnj->ti", I, omega)
    if h_wheel is not None:
        L = L + np.asarray(h_wheel, float).sum(axis=1)
    return L


@dataclass
class MotionData:
    """Procedure 1's inputs, from any simulator (inertial coordinates, SI units).

    Attributes: t (n_t,), m (N,), I (n_t, N, 3, 3) or (N, 3, 3), omega, r, rdot
    (n_t, N, 3), g (3,); optional spring k (N_j,) and theta (n_t, N_j); wheels h_wheel
    (n_t, N_w, 3) and I_wheel (N_w,); the simulator's own KE, PE (n_t,) and work done by
    non-conservative sources (n_t,), net of dissipation, when it reports them; the part of
    that which dampers dissipated (n_t,, J, >= 0: ``work`` includes it with a minus sign),
    when known, which only words the report; names of the bodies; whether joints tie the
    system to the ground (then momentum is not conserved).
    """

    t: np.ndarray
    m: np.ndarray
    I: np.ndarray
    omega: np.ndarray
    r: np.ndarray
    rdot: np.ndarray
    g: np.ndarray
    k: np.ndarray | None = None
    theta: np.ndarray | None = None
    h_wheel: np.ndarray | None = None
    I_wheel: np.ndarray | None = None
    internal_ke: np.ndarray | None = None
    internal_pe: np.ndarray | None = None
    work: np.ndarray | None = None
    body_names: tuple[str, ...] = ()
    dissipated: np.ndarray | None = None
    grounded: bool | None = None


def motion_from_result(result) -> MotionData:
    """Procedure 1's arrays from a :class:`~elements.MechanismResult`, with its internal
    KE, PE and work (the ledger)."""
    mech = result.model.mechanism
    names = tuple(mech.bodies)
    bodies = [result.body(n) for n in names]
    mm = result.model
    m = np.array([mm.mass(n) for n in names])
    rot = np.stack([b.rotation for b in bodies], axis=1)               # (t, N, 3, 3)
    Ib = np.stack([mm.inertia(n) for n in names])
    I = np.einsum("tnij,njk,tnlk->tnil", rot, Ib, rot)
    omega = np.stack([b.angular_velocity.T for b in bodies], axis=1)
    r = np.stack([b.position.T for b in bodies], axis=1)
    rdot = np.stack([b.velocity.T for b in bodies], axis=1)
    ks, th = [], []
    for jn, _, k, rest in mm.springs():
        ks.append(k)
        th.append(result.coordinate(jn) - rest)
    led = result.energy
    diss = sum(led.dissipated.values()) if led.dissipated else 0.0
    work = (sum(led.work.values()) if led.work else 0.0) - diss
    return MotionData(t=result.t, m=m, I=I, omega=omega, r=r, rdot=rdot, g=mm.gravity,
                      k=np.array(ks), theta=np.array(th).T if th else None,
                      internal_ke=led.kinetic, internal_pe=led.gravity + led.springs,
                      work=np.broadcast_to(work, result.t.shape).astype(float),
                      dissipated=np.broadcast_to(diss, result.t.shape).astype(float),
                      body_names=names,
                      grounded=any(j.parent.is_ground for j in mech.joints.values()))


def _read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    head = rows[0]
    data = np.array([[float(v) for v in row] for row in rows[1:]]) if len(rows) > 1 else \
        np.zeros((0, len(head)))
    return {h: data[:, k] for k, h in enumerate(head)}


def motion_from_directory(path: str) -> MotionData:
    """Procedure 1's arrays from files: ``bodies.csv`` (columns ``t``, ``<body>.x/y/z``,
    ``<body>.vx/vy/vz``, ``<body>.wx/wy/wz``, global, and the quaternions
    ``<body>.qw/qx/qy/qz`` that turn body-frame inertias into inertial ones: required for
    every body whose inertia is not the same about every axis), ``mechanism.json``
    (``gravity``, ``bodies: {name: {mass, inertia (3x3 body frame)}}``, ``springs:
    [{joint, stiffness, rest}]``), and, when present, ``joints.csv`` (``<joint>.q``) and
    ``energy.csv`` (``kinetic``, ``gravity``, ``springs`` and ``work.*``, ``dissipated.*``
    columns: the simulator's own figures). Another simulator's output written in this form
    is checked the same way.

    Raises
    ------
    FileNotFoundError, NameNotFoundError
        Naming the missing file or column.
    """
    from bondgraph.spatial import quat_to_matrix
    bpath = os.path.join(path, "bodies.csv")
    mpath = os.path.join(path, "mechanism.json")
    for p in (bpath, mpath):
        if not os.path.exists(p):
            raise FileNotFoundError(f"energy check: {p} is missing (expected the files "
                                    f"MechanismResult.write produces)")
    cols = _read_csv(bpath)
    with open(mpath, encoding="utf-8") as f:
        meta = json.load(f)
    names = tuple(meta["bodies"])
    t = cols["t"]
    m = np.array([meta["bodies"][n]["mass"] for n in names], dtype=float)

    def vec(n, keys):
        try:
            return np.stack([cols[f"{n}.{k}"] for k in keys], axis=1)
        except KeyError as exc:
            raise NameNotFoundError(f"energy check: bodies.csv has no column {exc.args[0]!r}") from None

    r = np.stack([vec(n, ("x", "y", "z")) for n in names], axis=1)
    rdot = np.stack([vec(n, ("vx", "vy", "vz")) for n in names], axis=1)
    omega = np.stack([vec(n, ("wx", "wy", "wz")) for n in names], axis=1)
    I = np.empty((t.size, len(names), 3, 3))
    for k, n in enumerate(names):
        Ib = np.asarray(meta["bodies"][n]["inertia"], dtype=float)
        if np.allclose(Ib, Ib[0, 0] * np.eye(3), rtol=0.0, atol=1e-15 * abs(Ib[0, 0])) \
                and f"{n}.qw" not in cols:
            I[:, k] = Ib                 # (the same about every axis: no rotation needed)
            continue
        q = vec(n, ("qw", "qx", "qy", "qz"))
        for i in range(t.size):
            A = quat_to_matrix(q[i])
            I[i, k] = A @ Ib @ A.T
    k_s, theta = [], []
    jpath = os.path.join(path, "joints.csv")
    jcols = _read_csv(jpath) if os.path.exists(jpath) else {}
    for s in meta.get("springs", []):
        k_s.append(float(s["stiffness"]))
        theta.append(jcols[f"{s['joint']}.q"] - float(s.get("rest", 0.0)))
    data = MotionData(t=t, m=m, I=I, omega=omega, r=r, rdot=rdot,
                      g=np.asarray(meta["gravity"], dtype=float), k=np.array(k_s),
                      theta=np.array(theta).T if theta else None, body_names=names,
                      grounded=meta.get("grounded"))
    epath = os.path.join(path, "energy.csv")
    if os.path.exists(epath):
        e = _read_csv(epath)
        data.internal_ke = e.get("kinetic")
        if "gravity" in e:
            data.internal_pe = e["gravity"] + e.get("springs", 0.0)
        work = np.zeros(t.size)
        diss = np.zeros(t.size)
        for key, v in e.items():
            if key.startswith("work."):
                work = work + v
            elif key.startswith("dissipated."):
                work = work - v
                diss = diss + v
        data.work = work
        data.dissipated = diss
    return data


@dataclass
class CheckLine:
    """One test of the report: its figure, the tolerance, and whether it passed (None
    when the test does not apply)."""

    name: str
    value: float
    tolerance: float
    passed: bool | None
    note: str = ""

    def __post_init__(self):
        # plain Python types whatever the caller computed them with (numpy's bool_ and
        # float64 are not bool and float: `is True` and JSON would trip on them)
        self.value = float(self.value)
        self.tolerance = float(self.tolerance)
        if self.passed is not None:
            self.passed = bool(self.passed)


@dataclass
class EnergyReport:
    """KE and PE computed offline, and the tests (see :func:`check`)."""

    t: np.ndarray
    ke: np.ndarray
    pe: np.ndarray
    lines: list[CheckLine] = field(default_factory=list)
    linear_momentum: np.ndarray | None = None
    angular_momentum: np.ndarray | None = None
    data: MotionData | None = None
    scale: tuple[float, str] = (1.0, "")

    @property
    def passed(self) -> bool:
        """True when every applicable test passed."""
        return all(line.passed for line in self.lines if line.passed is not None)

    def text(self) -> str:
        """The report as text: one line per test with the figure and the tolerance."""
        out = ["MBS energy and momentum tests (seed: MBS Energy Testing, Eqs. (1)-(2)); "
               f"energies relative to {self.scale[0]:.3g} J, {self.scale[1]}"]
        for ln in self.lines:
            status = "n/a " if ln.passed is None else ("PASS" if ln.passed else "FAIL")
            out.append(f"  [{status}] {ln.name}: {ln.value:.3e} (tolerance {ln.tolerance:.1e})"
                       + (f"  {ln.note}" if ln.note else ""))
        out.append("overall: " + ("PASS" if self.passed else "FAIL"))
        return "\n".join(out)

    def plot(self, path: str) -> str:
        """A figure of KE, PE, their sum (and the work balance) and the momenta."""
        from bondgraph._plot import pyplot
        plt = pyplot("the energy report's figure")
        fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        ax = axes[0]
        ax.plot(self.t, self.ke, label="KE (Eq. 1)")
        ax.plot(self.t, self.pe, label="PE (Eq. 2)")
        ax.plot(self.t, self.ke + self.pe, "k", label="KE + PE")
        if self.data is not None and self.data.work is not None:
            ax.plot(self.t, self.ke + self.pe - self.data.work, "k--",
                    label="KE + PE - work")
        ax.set_ylabel("J")
        ax.legend(fontsize=8)
        ax.set_title("overall: " + ("PASS" if self.passed else "FAIL"))
        ax = axes[1]
        if self.linear_momentum is not None:
            for k, c in enumerate("xyz"):
                ax.plot(self.t, self.linear_momentum[:, k], label=f"P{c}")
                ax.plot(self.t, self.angular_momentum[:, k], "--", label=f"L{c}")
        ax.set_xlabel("t (s)")
        ax.set_ylabel("momentum")
        ax.legend(fontsize=8, ncol=3)
        fig.tight_layout()
        try:
            with atomic_path(path, os.path.splitext(path)[1]) as tmp:
                fig.savefig(tmp, dpi=110)
        finally:
            plt.close(fig)
        return path


def check(source, *, rtol: float = 1e-7, conservative: bool | None = None,
          force_free: bool | None = None, external_free: bool | None = None
          ) -> EnergyReport:
    """Energy and momentum tests of a motion.

    Parameters
    ----------
    source : MechanismResult, MotionData, or a directory written by MechanismResult.write
    rtol : float
        Relative tolerance of every test, on the scale max(|KE|, |PE|), or
        :data:`~elements.energy_ledger.ENERGY_FLOOR` when both stay below it (a motion
        at rest; the report's first line says which); momenta: on their largest
        magnitude, or 1.
    conservative : bool, optional
        Whether only conservative forces act (test: KE + PE constant). Default: decided
        from the work column (no work done by any source).
    force_free : bool, optional
        Whether no forces act at all (test: KE constant). Default: g = 0, no springs, no
        work and no joint to the ground.
    external_free : bool, optional
        Whether no external forces act (tests: linear and angular momentum constant).
        Default: g = 0, no work, and no joint to the ground.

    The tests: (1) KE and PE by Eqs. (1)-(2) equal the simulator's own figures (when it
    reports them); (2a) KE + PE constant under conservative forces, or, when sources do
    work or dampers dissipate energy, KE + PE - work + dissipated constant (the report
    names which of the two happen, from ``MotionData.dissipated``); (2b) KE constant when no forces act; momentum: linear
    and angular momentum constant when no external forces act.
    """
    if isinstance(source, MotionData):
        d = source
    elif isinstance(source, (str, os.PathLike)):
        d = motion_from_directory(str(source))
    else:
        d = motion_from_result(source)
    ke, pe = procedure1(d.m, d.I, d.omega, d.r, d.rdot, d.g, k=d.k, theta=d.theta,
                        h_wheel=d.h_wheel, I_wheel=d.I_wheel)
    scale, scale_is = energy_scale(ke, pe)
    rep = EnergyReport(t=d.t, ke=ke, pe=pe, data=d, scale=(scale, scale_is))
    if d.internal_ke is not None:
        err = float(np.abs(ke - d.internal_ke).max() / scale)
        rep.lines.append(CheckLine("KE (Eq. 1) vs the simulation's", err, rtol, err <= rtol))
    if d.internal_pe is not None:
        err = float(np.abs(pe - d.internal_pe).max() / scale)
        rep.lines.append(CheckLine("PE (Eq. 2) vs the simulation's", err, rtol, err <= rtol))
    work = d.work if d.work is not None else np.zeros_like(ke)
    did_work = bool(np.abs(work).max(initial=0.0) > rtol * scale)
    # what makes the system non-conservative: sources that do work, dampers that
    # dissipate energy (work is their net: the sources' work minus the dissipation)
    diss = d.dissipated if d.dissipated is not None else np.zeros_like(ke)
    dissipates = bool(np.abs(diss).max(initial=0.0) > rtol * scale)
    sources = bool(np.abs(work + diss).max(initial=0.0) > rtol * scale) or not dissipates
    if conservative is None:
        conservative = not did_work
    has_springs = d.k is not None and len(d.k) > 0
    grounded = bool(d.grounded)
    if force_free is None:
        force_free = (not np.any(d.g)) and not has_springs and not did_work and not grounded
    total = ke + pe
    drift = float(np.abs(total - total[0]).max() / scale)
    causes = (["sources do work"] if sources else []) + \
        (["dampers dissipate energy"] if dissipates else [])
    rep.lines.append(CheckLine("(a) KE + PE constant", drift, rtol,
                               (drift <= rtol) if conservative else None,
                               "" if conservative else " and ".join(causes)
                               + ": see the balance"))
    if not conservative:
        bal = total - work
        bd = float(np.abs(bal - bal[0]).max() / scale)
        name = "KE + PE" + (" - work of the sources" if sources else "") + \
            (" + dissipated energy" if dissipates else "") + " constant"
        rep.lines.append(CheckLine(name, bd, rtol, bd <= rtol))
    kd = float(np.abs(ke - ke[0]).max() / scale)
    rep.lines.append(CheckLine("(b) KE constant (no forces)", kd, rtol,
                               (kd <= rtol) if force_free else None,
                               "" if force_free else "forces act"))
    P = linear_momentum(d.m, d.rdot)
    L = angular_momentum(d.m, d.I, d.omega, d.r, d.rdot, d.h_wheel)
    rep.linear_momentum, rep.angular_momentum = P, L
    if external_free is None:
        external_free = not np.any(d.g) and not did_work and not grounded
    for name, arr in (("linear momentum constant", P), ("angular momentum constant", L)):
        sc = max(np.abs(arr).max(initial=0.0), 1.0)
        dv = float(np.abs(arr - arr[:1]).max() / sc)
        rep.lines.append(CheckLine(name, dv, rtol, (dv <= rtol) if external_free else None,
                                   "" if external_free else "external forces act"))
    return rep


def main(argv: list[str] | None = None) -> int:
    """``python -m elements.analysis.energy_check DIR [--rtol 1e-7] [--plot FILE]``."""
    ap = argparse.ArgumentParser(prog="python -m elements.analysis.energy_check",
                                 description="Energy and momentum tests of a result directory")
    ap.add_argument("directory")
    ap.add_argument("--rtol", type=float, default=1e-7)
    ap.add_argument("--plot", default=None, help="write the report's figure here (PNG)")
    args = ap.parse_args(argv)
    try:
        rep = check(args.directory, rtol=args.rtol)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(rep.text())
    if args.plot:
        rep.plot(args.plot)
        print(f"figure: {args.plot}")
    return 0 if rep.passed else 1


if __name__ == "__main__":
    sys.exit(main())
