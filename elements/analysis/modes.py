"""Mode shapes of a mechanism's linear model, as motion of its joints, and their 3D page.

- :func:`mode_shapes`: the modes of a :class:`~bondgraph.linear_model.LinearModel` made
  by :func:`~elements.linearize_mechanism` (states ``<port>.q``, ``<port>.qd``, ...), one
  :class:`ModeShape` per physical mode: a complex pair of eigenvalues is one mode (the
  member with Im > 0), a real eigenvalue is one, and the null space of A (eigenvalue 0,
  no restoring force) gives the rigid-body modes. Each shape is a vector over the
  independent joint coordinates, scaled so that the largest joint excursion is the
  amplitude asked for (rad or m).
- :func:`animate_modes`: one self-contained 3D page (the page of
  :func:`elements.drawing.animation.animate`) with a picker of modes; each mode moves the
  mechanism through q(t) = q0 + amplitude Im(v e^{i w t}) (= q0 + shape sin(w t) for an
  in-phase shape), the bodies placed by the mechanism's nonlinear kinematics (forward
  kinematics along the spanning tree, loops closed by Newton's method) at those joint
  coordinates. The page labels each mode with its frequency (Hz and rad/s), damping
  ratio and shape.

Units and frames: joint coordinates in rad or m (each joint's own), frequencies in Hz and
rad/s, eigenvalues in 1/s, times in s; body positions global (m), orientations body ->
global.
"""

from __future__ import annotations

import cmath
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph._files import write_text
from bondgraph.errors import ModelError
from bondgraph.linear_model import LinearModel
from bondgraph.spatial import matrix_to_quat

import elements.running.closure as closure
from elements.drawing.animation import Shape, render_html, scene_data
from elements.mechanism_model import MechanismModel
from elements.drawing.motion import Motion, MotionBody, TraceSpec, geometry_table, joint_from_table
from elements.drawing.scene import build_scene

__all__ = ["ModeShape", "mode_shapes", "animate_modes", "mode_coordinates"]

SWEEP_HZ = 1.0
"""The frequency (Hz) at which a mode without oscillation (a real eigenvalue, or a
rigid-body mode) is drawn: its shape swept as q0 + shape sin(2 pi SWEEP_HZ t)."""


@dataclass(frozen=True)
class ModeShape:
    """One mode of a mechanism's linear model as motion of its independent joints.

    Attributes
    ----------
    index : int
        Its place in :func:`mode_shapes`' list (rigid-body modes first, then by natural
        frequency).
    kind : str
        ``"oscillatory"`` (a complex pair), ``"real"`` (a real eigenvalue: decays or
        grows without oscillating) or ``"rigid"`` (eigenvalue 0: no restoring force).
    eigenvalue : complex
        1/s; for a pair, the member with Im > 0.
    eigen_index : int or None
        The column of ``LinearModel.modes()`` it comes from (None for a rigid-body mode,
        found from the null space of A).
    natural_frequency : float
        |eigenvalue| (rad/s); 0 for a rigid-body mode.
    frequency_hz : float
        ``natural_frequency / (2 pi)`` (Hz).
    damped_frequency : float
        |Im eigenvalue| (rad/s): the frequency the mode oscillates at.
    damping_ratio : float
        -Re / |eigenvalue| (0 undamped, 1 critical, negative unstable; NaN for a
        rigid-body mode).
    coordinates : tuple of str
        The independent joint coordinates (ports: ``"J1"``, ``"J3.angle"``).
    units : tuple of str
        Their units, ``"rad"`` or ``"m"``.
    vector : ndarray, complex, shape (n,)
        The shape: the eigenvector's joint-coordinate part, scaled so that its largest
        entry is ``amplitude`` (real and positive); |vector[j]| is joint j's excursion
        (rad or m) and its angle the joint's phase. Zero when the mode moves no joint
        (a mode of attached subsystem states only).
    q0 : ndarray, shape (n,)
        The operating point's coordinates (rad or m).
    amplitude : float
        The largest joint excursion (rad or m, in each joint's own unit).
    """

    index: int
    kind: str
    eigenvalue: complex
    eigen_index: int | None
    natural_frequency: float
    frequency_hz: float
    damped_frequency: float
    damping_ratio: float
    coordinates: tuple[str, ...]
    units: tuple[str, ...]
    vector: np.ndarray
    q0: np.ndarray
    amplitude: float

    @property
    def moves_joints(self) -> bool:
        """Whether the mode moves any joint (False: only subsystem states)."""
        return bool(np.any(self.vector != 0))

    @property
    def drawn_frequency(self) -> float:
        """The frequency the page draws it at (rad/s): the damped frequency of an
        oscillating mode, ``2 pi SWEEP_HZ`` for one that does not oscillate."""
        return self.damped_frequency if self.kind == "oscillatory" else \
            2 * math.pi * SWEEP_HZ

    def shape(self) -> dict[str, complex]:
        """The shape by joint coordinate (rad or m; complex: excursion and phase)."""
        return {c: complex(v) for c, v in zip(self.coordinates, self.vector)}

    def displacement(self, t: Any) -> np.ndarray:
        """amplitude Im(v e^{i w t}) at times ``t`` (s), shape (n, len(t)) in rad or m,
        with w :attr:`drawn_frequency`: for an in-phase shape, vector sin(w t)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return np.imag(self.vector[:, None] * np.exp(1j * self.drawn_frequency * t))

    def coordinates_at(self, t: Any) -> dict[str, np.ndarray]:
        """q0 + :meth:`displacement` by joint coordinate (rad or m), each (len(t),)."""
        q = self.q0[:, None] + self.displacement(t)
        return {c: q[k] for k, c in enumerate(self.coordinates)}

    def describe_shape(self) -> str:
        """The shape as text: each joint's excursion, and its phase where it is not in
        phase or opposite (``J1 0.2 rad, J2 -0.283 rad``)."""
        if not self.moves_joints:
            return "no joint motion (a mode of the attached subsystem states)"
        parts = []
        for c, u, v in zip(self.coordinates, self.units, self.vector):
            mag, ph = abs(v), math.degrees(cmath.phase(v)) if v != 0 else 0.0
            if mag <= 1e-12 * self.amplitude:
                parts.append(f"{c} 0 {u}")
            elif abs(ph) < 0.5:
                parts.append(f"{c} {mag:.4g} {u}")
            elif abs(abs(ph) - 180.0) < 0.5:
                parts.append(f"{c} {-mag:.4g} {u}")
            else:
                parts.append(f"{c} {mag:.4g} {u} at {ph:+.0f} deg")
        return ", ".join(parts)

    @property
    def label(self) -> str:
        """One line: the mode's number, frequency (Hz, rad/s), damping ratio and kind."""
        lam = self.eigenvalue
        if self.kind == "rigid":
            head = (f"mode {self.index}: 0 Hz, a rigid-body mode (eigenvalue 0: no "
                    f"restoring force; drawn as a {SWEEP_HZ:g} Hz sweep of its shape)")
        elif self.kind == "real":
            how = "neither decays nor grows" if lam.real == 0 else \
                f"{'decays' if lam.real < 0 else 'grows'} with time constant " \
                f"{1 / abs(lam.real):.4g} s"
            head = (f"mode {self.index}: no oscillation, real eigenvalue {lam.real:.4g} 1/s "
                    f"({how}; damping ratio {self.damping_ratio:+.3g}; drawn as a "
                    f"{SWEEP_HZ:g} Hz sweep)")
        else:
            head = (f"mode {self.index}: {self.frequency_hz:.6g} Hz "
                    f"({self.natural_frequency:.6g} rad/s), damping ratio "
                    f"{0.0 if abs(self.damping_ratio) < 1e-9 else self.damping_ratio:.4g}")
        return head

    def __str__(self) -> str:
        return f"{self.label}; shape {self.describe_shape()}"


def mode_coordinates(linear_model: LinearModel) -> tuple[list[str], list[int]]:
    """The joint coordinates of a mechanism's linear model: (ports, rows of the state
    vector), from its states named ``<port>.q``.

    Raises
    ------
    ModelError
        When it has none (a linear model not made by ``linearize_mechanism``).
    """
    names = list(linear_model.state_names)
    coords = linear_model.coordinates
    if not coords:
        raise ModelError(f"the linear model has no joint-coordinate states (its states: "
                         f"{', '.join(names[:8]) or 'none'}{', ...' if len(names) > 8 else ''}"
                         f"): mode shapes need one made by elements.linearize_mechanism")
    return [c for c, _, _ in coords], [row for _, row, _ in coords]


def mode_shapes(linear_model: LinearModel, *, amplitude: float = 1.0,
                units: Mapping[str, str] | None = None,
                require_equilibrium: bool = True, zero_tol: float | None = None
                ) -> list[ModeShape]:
    """The modes of a mechanism's linear model as joint-coordinate shapes.

    Parameters
    ----------
    linear_model : LinearModel
        Made by :func:`~elements.linearize_mechanism` (states ``<port>.q``,
        ``<port>.qd``, then subsystem states).
    amplitude : float
        The largest joint excursion of every shape (rad or m, in that joint's unit).
    units : mapping of port to unit, optional
        Each coordinate's unit (``"rad"`` or ``"m"``), for the labels; default "rad".
        :func:`animate_modes` takes them from the mechanism.
    require_equilibrium : bool
        As for :meth:`~bondgraph.linear_model.LinearModel.modes`.
    zero_tol : float, optional
        Eigenvalues with |lambda| at most this (1/s) are zero: their modes are the
        rigid-body modes, from the null space of A. Default 1e-5 max(1, max |lambda|).

    Returns
    -------
    list of ModeShape
        Rigid-body modes first, then one per complex pair (Im > 0) or real eigenvalue,
        by natural frequency.

    Raises
    ------
    ModelError
        For a linear model without joint coordinates, a non-positive amplitude, or an
        operating point that is not an equilibrium (see ``require_equilibrium``).
    """
    if not (isinstance(amplitude, (int, float)) and math.isfinite(amplitude)
            and amplitude > 0):
        raise ModelError(f"mode shapes: amplitude must be a positive number (rad or m: the "
                         f"largest joint excursion), got {amplitude!r}")
    ports, rows = mode_coordinates(linear_model)
    unit = tuple((units or {}).get(p, "rad") for p in ports)
    modes = linear_model.modes(require_equilibrium=require_equilibrium)
    lam = modes.eigenvalues
    A = np.asarray(linear_model.A, dtype=float)
    top = float(np.abs(lam).max(initial=0.0))
    ztol = 1e-5 * max(1.0, top) if zero_tol is None else float(zero_tol)
    q0 = np.asarray(linear_model.x0, dtype=float)[rows]
    out: list[ModeShape] = []

    def add(kind, lam_k, k, vec):
        vq = np.asarray(vec, dtype=complex)[rows]
        i = int(np.argmax(np.abs(vq))) if vq.size else 0
        scale = np.abs(vq).max(initial=0.0)
        if scale <= 1e-9 * max(np.linalg.norm(vec), 1e-300):
            vq = np.zeros(len(rows), dtype=complex)
        else:
            vq = amplitude * vq / vq[i]           # the largest: real, positive, = amplitude
            vq[i] = amplitude
            vq[np.abs(vq) <= 1e-15 * amplitude] = 0.0
            if kind != "oscillatory":
                vq = vq.real.astype(complex)
        wn = abs(lam_k)
        with np.errstate(invalid="ignore", divide="ignore"):
            zeta = float(-lam_k.real / wn) if wn > 0 and kind != "rigid" else math.nan
        out.append(ModeShape(len(out), kind, complex(lam_k), k, float(wn),
                             float(wn / (2 * math.pi)), float(abs(lam_k.imag)), zeta,
                             tuple(ports), unit, vq, q0.copy(), float(amplitude)))

    zero = np.abs(lam) <= ztol
    rigid_vectors = []
    if zero.any():
        _, s, vh = np.linalg.svd(A)
        tol = 1e-8 * max(1.0, float(np.abs(A).max(initial=0.0)))
        null = vh[s <= tol].T if s.size else np.zeros((A.shape[0], 0))
        # orthonormal joint-coordinate directions of the null space
        if null.shape[1]:
            u, sq, _ = np.linalg.svd(null[rows], full_matrices=False)
            rigid_vectors = [u[:, k] for k in range(u.shape[1]) if sq[k] > 1e-9]
    for v in rigid_vectors:
        full = np.zeros(A.shape[0])
        full[rows] = v
        add("rigid", 0j, None, full)
    for k, lam_k in enumerate(lam):
        if zero[k] and rigid_vectors:
            continue
        if lam_k.imag < 0:
            continue                                  # the conjugate of a pair
        kind = "oscillatory" if lam_k.imag > 0 else "real"
        add(kind, lam_k, k, modes.shapes[:, k])
    return out


def _pick(shapes: list[ModeShape], modes: Sequence[int] | int | None) -> list[ModeShape]:
    """The modes asked for, by index; a ModelError naming the valid range otherwise."""
    if modes is None:
        return list(shapes)
    idx = [modes] if isinstance(modes, (int, np.integer)) else list(modes)
    listed = ", ".join(f"{s.index}: {s.frequency_hz:.4g} Hz" for s in shapes[:8])
    more = ", ..." if len(shapes) > 8 else ""
    valid = f"valid: 0..{len(shapes) - 1} ({listed}{more})" if shapes else \
        "the model has none"
    if not idx:
        raise ModelError(f"animate_modes: modes=[] names no mode; {valid}")
    for i in idx:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or \
                not 0 <= i < len(shapes):
            raise ModelError(f"animate_modes: no mode {i!r}; {valid} (a complex pair of "
                             f"eigenvalues is one mode)")
    return [shapes[int(i)] for i in idx]


def _frames(mm: MechanismModel, mode: ModeShape, t: np.ndarray,
            guess: Mapping[str, Any] | None):
    """Poses (A, r) by body and every joint's coordinates at the frames of ``mode``:
    the nonlinear kinematics at q0 + displacement(t), loops closed frame by frame."""
    mech = mm.mechanism
    ports = {ax.port: (j, ax) for j in mech.joints.values() for ax in j.axes}
    q = mode.q0[:, None] + mode.displacement(t)
    poses, coords = [], []
    guess = dict(guess or {})
    for i in range(t.size):
        by_joint: dict[str, Any] = {}
        for k, p in enumerate(mode.coordinates):
            j, ax = ports[p]
            if j.n_free == 1:
                by_joint[j.name] = float(q[k, i])
            else:
                cur = by_joint.get(j.name)
                if cur is None:
                    cur = np.array([float(mode.q0[mode.coordinates.index(a.port)])
                                    if a.port in mode.coordinates else 0.0 for a in j.axes])
                cur[ax.index] = q[k, i]
                by_joint[j.name] = cur
        try:
            pose, _, cs = closure.initial_configuration(mm, by_joint, None, None, guess,
                                                        1e-12, 50)
        except ModelError as exc:
            raise ModelError(f"mode {mode.index} at amplitude {mode.amplitude:g}: no "
                             f"consistent configuration at t = {t[i]:.4g} s ({exc}); a "
                             f"smaller amplitude keeps it nearer the operating point") \
                from None
        if mm.loop_joints:
            guess = {n: v for n, v in cs.items() if n not in by_joint}
        poses.append(pose)
        coords.append(cs)
    return poses, coords


def _motion(mm: MechanismModel, picked: list[ModeShape], cycles: float,
            frames_per_cycle: int, guess) -> tuple[Motion, list[dict[str, Any]]]:
    """The modes one after the other on one timeline, and each one's stretch of it."""
    mech = mm.mechanism
    ts, all_poses, all_coords, spans = [], [], [], []
    start = 0.0
    for mode in picked:
        period = 2 * math.pi / mode.drawn_frequency
        n = max(int(math.ceil(cycles * frames_per_cycle)), 2)
        tau = np.linspace(0.0, cycles * period, n + 1)
        poses, coords = _frames(mm, mode, tau, guess)
        i0 = sum(len(x) for x in ts)
        ts.append(start + tau)
        all_poses += poses
        all_coords += coords
        spans.append({"t0": float(start), "t1": float(start + tau[-1]), "i0": i0,
                      "i1": i0 + tau.size - 1, "period": period})
        start += tau[-1] + tau[1]                 # one frame's step between modes
    t = np.concatenate(ts)
    bodies = {}
    for name, b in mech.bodies.items():
        pos = np.array([p[name][1] for p in all_poses]).T
        quat = np.array([matrix_to_quat(p[name][0]) for p in all_poses])
        for k in range(1, len(quat)):                 # one sign: no flips between frames
            if quat[k] @ quat[k - 1] < 0:
                quat[k] = -quat[k]
        bodies[name] = MotionBody(name, float(mm.mass(name)),
                                  np.array(mm.inertia(name), dtype=float), pos, quat.T,
                                  {p: np.asarray(v, dtype=float)
                                   for p, v in b.points.items()})
    geo = geometry_table(mech)
    joints = {}
    cols: dict[str, np.ndarray] = {}
    units: dict[str, dict[str, str]] = {}
    for name, j in mech.joints.items():
        if j.n_free:
            vals = np.array([np.atleast_1d(np.asarray(c[name], dtype=float))
                             for c in all_coords])
            for ax in j.axes:
                cols[f"{ax.port}.q"] = vals[:, ax.index]
                units[f"{ax.port}.q"] = {"unit": ax.unit}
        qj = cols[f"{name}.q"] if j.n_free == 1 else None
        joints[name] = joint_from_table(name, geo["joints"][name], qj)
    motion = Motion(mech.name, t, mm.gravity, bodies, joints, mech.ground.name,
                    lambda: cols, lambda: units, None)
    return motion, spans


def _check_model(mm: MechanismModel, linear_model: LinearModel) -> dict[str, str]:
    """The units of the linear model's coordinates in ``mm``; a ModelError when they are
    not the mechanism's ports."""
    if not isinstance(mm, MechanismModel):
        raise ModelError(f"animate_modes: expected a MechanismModel (Mechanism.assemble()), "
                         f"got {type(mm).__name__}")
    if not isinstance(linear_model, LinearModel):
        raise ModelError(f"animate_modes: expected a LinearModel (from "
                         f"linearize_mechanism), got {type(linear_model).__name__}")
    ports = {ax.port: ax.unit for j in mm.mechanism.joints.values() for ax in j.axes}
    have, _ = mode_coordinates(linear_model)
    bad = [p for p in have if p not in ports]
    if bad:
        raise ModelError(f"animate_modes: the linear model's coordinates "
                         f"{', '.join(bad)} are not joint coordinates of mechanism "
                         f"'{mm.mechanism.name}' ({', '.join(ports) or 'none'}): linearise "
                         f"this mechanism")
    return ports


def animate_modes(mm: MechanismModel, linear_model: LinearModel,
                  path: str | os.PathLike[str], *, modes: Sequence[int] | int | None = None,
                  amplitude: float = 0.2, cycles: float = 2.0, frames_per_cycle: int = 40,
                  seconds_per_cycle: float | None = 2.0,
                  shapes: Mapping[str, Shape | str] | None = None,
                  traces: Sequence[TraceSpec] | None = None,
                  plots: Sequence[str | Sequence[str]] | None = None,
                  title: str | None = None, guess: Mapping[str, Any] | None = None,
                  require_equilibrium: bool = True) -> str:
    """Write a self-contained 3D page that shows the mode shapes of a mechanism: pick a
    mode, and the mechanism moves through it.

    Mode k moves the independent joint coordinates through
    q(t) = q0 + amplitude Im(v_k e^{i w_k t}) (:meth:`ModeShape.coordinates_at`: the
    shape times sin(w_k t) when its joints move in phase), w_k its damped frequency,
    for ``cycles`` periods; the bodies are placed by the mechanism's nonlinear
    kinematics at those coordinates (loops closed frame by frame). Modes without an
    oscillation (a real eigenvalue, or a rigid-body mode with eigenvalue 0) are drawn
    as a sweep of their shape at ``SWEEP_HZ`` and labelled so. Each mode's label gives
    its frequency (Hz and rad/s), damping ratio and shape; the page's time is the time
    since the mode's start (s).

    Parameters
    ----------
    mm : MechanismModel
        The mechanism (``Mechanism.assemble()``) the linear model was made of.
    linear_model : LinearModel
        From :func:`~elements.linearize_mechanism` at an equilibrium.
    path : path
        The HTML file to write.
    modes : int or sequence of int, optional
        Which modes, by their index in :func:`mode_shapes` (default all).
    amplitude : float
        The largest joint excursion of each mode (rad or m, in that joint's unit).
    cycles : float
        Periods of each mode on the page.
    frames_per_cycle : int
        Frames computed per period (the page interpolates between them).
    seconds_per_cycle : float or None
        The page's initial speed per mode, chosen so that one period lasts this long
        (s of wall-clock time); None: real time (speed 1). The speed box changes it.
    shapes, traces, plots, title
        As for :func:`elements.drawing.animation.animate`; ``plots`` defaults to the joint
        coordinates (rad and m apart), whose columns are ``<port>.q``.
    guess : mapping, optional
        Starting coordinates of the dependent joints for closing loops at the first
        frame (then each frame starts from the last).
    require_equilibrium : bool
        As for :meth:`~bondgraph.linear_model.LinearModel.modes`.

    Returns
    -------
    str
        The path written. The page reads ``?mode=K`` (which mode first), ``?t=1.5``
        (seconds into that mode, paused), ``?speed=`` and ``?play=0``.

    Raises
    ------
    ModelError
        For a mode index out of range (naming the valid range and the modes'
        frequencies), a linear model of another mechanism, bad numbers, or a mode whose
        excursion leaves the mechanism without a consistent configuration.
    """
    units = _check_model(mm, linear_model)
    for name, v, lo in (("cycles", cycles, 0.0), ("frames_per_cycle", frames_per_cycle, 3)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v <= lo or (name == "frames_per_cycle" and int(v) != v):
            raise ModelError(f"animate_modes: {name} must be a "
                             f"{'whole number above 3' if lo else 'positive number'}, got "
                             f"{v!r}")
    if seconds_per_cycle is not None and not (
            isinstance(seconds_per_cycle, (int, float)) and math.isfinite(seconds_per_cycle)
            and seconds_per_cycle > 0):
        raise ModelError(f"animate_modes: seconds_per_cycle must be a positive number of "
                         f"seconds or None (real time), got {seconds_per_cycle!r}")
    all_shapes = mode_shapes(linear_model, amplitude=amplitude, units=units,
                             require_equilibrium=require_equilibrium)
    picked = _pick(all_shapes, modes)
    motion, spans = _motion(mm, picked, float(cycles), int(frames_per_cycle), guess)
    if plots is None:
        ports = [p for p in units if f"{p}.q" in motion.columns()]
        plots = [g for g in ([p + ".q" for p in ports if units[p] == "rad"],
                             [p + ".q" for p in ports if units[p] == "m"]) if g]
    scene = build_scene(motion, shapes=shapes, traces=traces, reactions=False, plots=plots,
                        max_frames=None)
    data = scene_data(scene, title=title or f"{mm.mechanism.name}: modes", speed=1.0)
    data["modes"] = [{
        "index": m.index, "kind": m.kind, "label": m.label,
        "shape": m.describe_shape(), "frequency_hz": m.frequency_hz,
        "damping_ratio": None if math.isnan(m.damping_ratio) else m.damping_ratio,
        "eigenvalue": [m.eigenvalue.real, m.eigenvalue.imag],
        "coordinates": list(m.coordinates),
        "vector": [[float(v.real), float(v.imag)] for v in m.vector],
        "q0": [float(v) for v in m.q0], "drawn_frequency": m.drawn_frequency,
        "t0": s["t0"], "t1": s["t1"], "i0": s["i0"], "i1": s["i1"],
        "speed": 1.0 if seconds_per_cycle is None else s["period"] / seconds_per_cycle,
    } for m, s in zip(picked, spans)]
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_text(path, render_html(data))
    return path
