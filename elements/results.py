"""Mechanism results by name, the energy ledger, and export (CSV, MAT, JSON, plots).

- :class:`MechanismResult`: wraps a :class:`~bondgraph.SimulationResult` of a mechanism.
- :class:`BodyResult`, :class:`JointResult`, :class:`EnergyLedger`: named views.

Reaction convention (benchmarks.md): a joint's reaction is the force and moment that the
parent exerts on the child through the joint's constraints only (axis springs, dampers
and actuators are reported apart), in global coordinates, the moment taken about the
joint's point on the child; also given in the child's joint frame. It is the child's
share G_child^T U_2 of the constraint efforts actually applied (stabilisation included).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph._files import atomic_open, atomic_path, mat_names, output_name, write_text
from bondgraph.errors import ModelError, NameNotFoundError, require_extra

from bondgraph import Category, SimulationResult
from bondgraph.spatial import quat_to_matrix

from elements.build_index import Kind
from elements.kernels.blocks import Junction, term_bond
from elements.running.switch import SwitchKind
from elements.energy_ledger import EnergyLedger
from elements.drawing.animation import animate
from elements.drawing.motion import (
    Motion, MotionBody, contacts_from_columns, geometry_table, joint_from_table,
    shapes_from_table,
)
from elements.drawing.result_display import import_summary
from elements.drawing.video import animate_video

__all__ = ["MechanismResult", "BodyResult", "JointResult", "EnergyLedger"]


@dataclass(frozen=True)
class BodyResult:
    """A body over time (global coordinates unless said otherwise).

    position (3, n) m; quaternion (4, n) (w, x, y, z, body -> global); rotation (n, 3, 3);
    velocity (3, n) m/s; angular_velocity (3, n) rad/s global; angular_velocity_body (3, n).
    """

    name: str
    position: np.ndarray
    quaternion: np.ndarray
    rotation: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    angular_velocity_body: np.ndarray


@dataclass(frozen=True)
class JointResult:
    """A joint over time.

    q, qd : (n,) coordinate and rate (rad, rad/s or m, m/s); NaN for joints without one;
        (k, n) for a joint with k > 1 coordinates, rows in ``coordinates`` order.
    force, moment : (3, n) the constraint reaction of the parent on the child (N, N m),
        global coordinates, the moment about the joint's point on the child.
    force_joint, moment_joint : (3, n) the same in the child's joint frame (d1, d2, axis).
    point : (3, n) the joint's point on the child (global, m).
    spring, damper, actuator : (n,) efforts on the child along the joint axis (N or N m;
        the parent feels the opposite), zero where absent: a spring gives -k (q - rest), a
        damper -d qd; (k, n) like q for several coordinates.
    coordinates : the coordinates' names (empty for a joint without one).
    friction, stop : (n,) (or (k, n)) efforts on the child along the axis of Coulomb
        friction (sliding, or holding the joint while it sticks) and of the stops (a
        compliant stop's spring and damper in contact, or the effort holding the joint
        on an impact stop it rests on); zero where absent. Impacts themselves are
        impulses, listed in :attr:`MechanismResult.switches`.
    quaternion, rotation_vector : (4, n), (3, n) or None
        Free rotations (spherical, free joints; see :meth:`Joint.orientation`): quaternion
        (w, x, y, z), sign-continuous; axis times angle (rad, angle in [0, pi]).
    """

    name: str
    q: np.ndarray
    qd: np.ndarray
    force: np.ndarray
    moment: np.ndarray
    force_joint: np.ndarray
    moment_joint: np.ndarray
    point: np.ndarray
    spring: np.ndarray
    damper: np.ndarray
    actuator: np.ndarray
    max_abs_phi: float
    max_abs_constraint_flow: float
    coordinates: tuple[str, ...] = ()
    friction: np.ndarray | None = None
    stop: np.ndarray | None = None
    quaternion: np.ndarray | None = None
    rotation_vector: np.ndarray | None = None


class MechanismResult:
    """Results of a mechanism simulation, by body and joint name.

    Attributes
    ----------
    raw : SimulationResult
        The bond-graph level result (states, every bond, every Se*).
    t : ndarray (n,)
    """

    def __init__(self, mm, raw: SimulationResult, stabilization):
        self.model = mm
        self.raw = raw
        self.t = raw.t
        self.stabilization = stabilization
        self.projection_drift: float | None = None   # max |Phi| each projection removed
        self.switches: list = []     # a run with stops or friction: its mode changes
        self._bodies: dict[str, BodyResult] = {}
        self._cache: dict[str, Any] = {}
        self._joints: dict[str, JointResult] = {}

    # -- convenience ---------------------------------------------------------------------
    @property
    def success(self) -> bool:
        return self.raw.success

    @property
    def message(self) -> str:
        return self.raw.message

    def _x(self, name):
        return self.raw.x[self.model.model.state_slices[name]]

    def body(self, name: str) -> BodyResult:
        """A body's motion by name."""
        if name not in self._bodies:
            b = self.model.mechanism.body(name)
            if b.is_ground:
                raise NameNotFoundError(f"'{name}' is the ground: it does not move")
            quat = self._x(b.q)
            n = self.t.size
            rot = np.array([quat_to_matrix(quat[:, i]) for i in range(n)]) if n else \
                np.zeros((0, 3, 3))
            wb = np.linalg.solve(self.model.inertia(name), self._x(b.angular_momentum))
            wg = np.einsum("nij,jn->in", rot, wb) if n else np.zeros((3, 0))
            self._bodies[name] = BodyResult(name, self._x(b.r), quat, rot,
                                            self._x(b.linear_momentum) /
                                            self.model.mass(name), wg, wb)
        return self._bodies[name]

    def joint(self, name: str) -> JointResult:
        """A joint's coordinate, rate, reaction and axis efforts by name."""
        if name not in self._joints:
            self._joints[name] = self._joint(name)
        return self._joints[name]

    def _joint(self, name: str) -> JointResult:
        mm = self.model
        j = mm.mechanism.joint(name)
        m = mm.model
        n = self.t.size
        raw = self.raw
        F = np.zeros((3, n))           # the constraint force on the child (global)
        Mb = np.zeros((3, n))          # and moment (child coordinates)
        child = j.child.name
        phi_max, c_max = 0.0, 0.0
        for blk in mm.blocks[name]:
            sl = m.u2_slices[mm.source_of(blk)]
            phi_max = max(phi_max, float(np.nanmax(np.abs(raw.phi[sl]), initial=0.0)))
            c_max = max(c_max, float(np.nanmax(np.abs(raw.constraint_flow[sl]),
                                               initial=0.0)))
            for t in blk.terms:
                if t.owner != child:
                    continue
                # G^T lambda on the child: the effort of the term's bond at the body, as
                # the simulation computed it (at every output time at once)
                bond, sign = term_bond(blk, t)
                gen = sign * raw.effort(bond)
                if t.kind is Junction.V:
                    F += gen
                else:
                    Mb += gen
        A = quat_to_matrix(self._x(j.child.q).T) if n else np.zeros((0, 3, 3))
        rq = A @ j.Q                                                  # (n, 3)
        point = self._x(j.child.r) + rq.T
        Mg = np.einsum("nij,jn->in", A, Mb) - np.cross(rq, F.T).T
        frame = A @ j.Fb                                              # (n, 3, 3)
        Fj = np.einsum("nji,jn->in", frame, F)
        Mj = np.einsum("nji,jn->in", frame, Mg)
        zeros = np.zeros(n)
        per_axis = []
        for ax in j.axes:
            # efforts on the child along the axis: springs and dampers hang off the axis
            # junction (their bonds point away from it), actuators feed it
            per_axis.append((
                np.asarray(raw.state(ax.state), dtype=float).reshape(n),
                np.asarray(raw.flow(ax.bond), dtype=float).reshape(n),
                -sum((raw.effort(b) for b in self._axis(ax, "spring")), zeros),
                -sum((raw.effort(b) for b in self._axis(ax, "damper")), zeros),
                sum((raw.effort(b) for b in self._axis(ax, "actuator")), zeros),
                *self._switched_efforts(ax, zeros)))
        if not per_axis:
            q = qd = np.full(n, np.nan)
            spring = damper = actuator = friction = stop = zeros
        elif len(per_axis) == 1:
            q, qd, spring, damper, actuator, friction, stop = per_axis[0]
        else:
            q, qd, spring, damper, actuator, friction, stop = \
                (np.array(v) for v in zip(*per_axis))
        quat, rvec = j.orientation(np.eye(3) if j.parent.is_ground or not n else
                                   quat_to_matrix(self._x(j.parent.q).T), A) \
            if j.free_rotation else (None, None)     # (a free rotation's orientation)
        return JointResult(name, q, qd, F, Mg, Fj, Mj, point, spring, damper, actuator,
                           phi_max, c_max, j.coordinate_names, friction, stop, quat, rvec)

    def _resting(self, port: str) -> np.ndarray:
        """Whether ``port`` rests on an impact stop at each output time (from the run's
        switches, see :meth:`~elements.running.hybrid.Switch.after`)."""
        out = np.zeros(self.t.size, dtype=bool)
        for sw in self.switches:
            if sw.port == port:
                out[sw.after(self.t)] = sw.kind is SwitchKind.REST
        return out

    def _switched_efforts(self, ax, zeros) -> tuple[np.ndarray, np.ndarray]:
        """(friction, stop) efforts on the child along a port's axis."""
        if not ax.switched:
            return zeros, zeros
        index, raw = self.model.index, self.raw
        stop = zeros
        for a in index.find(Kind.STOP_SPRING, ax.port):
            stop = stop + raw.effort(a.bond)
        for a in index.find(Kind.STOP_DAMPER, ax.port):       # (bond into the damper)
            stop = stop - raw.effort(a.bond)
        locks = index.find(Kind.LOCK, ax.port)
        lock = np.asarray(raw.effort(locks[0].bond), dtype=float) if locks else zeros
        resting = self._resting(ax.port)
        friction = np.where(resting, 0.0, lock) if ax.friction is not None else zeros
        return friction, stop + np.where(resting, lock, 0.0)

    def contact_energy(self) -> np.ndarray:
        """The elastic energy stored in the contacts at each output time (J), from the
        configuration: ``k d^(n+1) / (n+1)`` summed over every contact point."""
        contacts = self.contacts()
        return contacts.stored if contacts is not None else np.zeros(self.t.size)

    def contacts(self):
        """The contact forces over the run (:class:`~elements.contact.history.ContactHistory`:
        per pair of shapes and output time, the normal and friction forces, the points,
        the depth and the sliding velocity), or None without collision shapes."""
        if "contacts" not in self._cache:
            from elements.contact.history import contact_history
            system = self.model.index.contact
            self._cache["contacts"] = None if system is None else contact_history(
                system.bind(self.model.parameters), self.raw.x,
                self.model.model.state_slices, self.t)
        return self._cache["contacts"]

    def coupling_effort(self, name: str) -> np.ndarray:
        """The effort coupling ``name`` applies on its follower's axis over time (N m or N;
        on the leader's axis it applies -ratio times this): the Se* effort of its
        constraint junction, read off the follower's bond."""
        c = self.model.mechanism.couplings.get(name)
        if c is None:
            raise ModelError(f"no coupling '{name}' in mechanism "
                             f"'{self.model.mechanism.name}'; couplings: "
                             f"{', '.join(self.model.mechanism.couplings) or 'none'}")
        # the bond points from the follower's axis junction into the coupling: its effort
        # is taken from the axis
        return -np.asarray(self.raw.effort(c.follower_bond()), dtype=float)

    def _axis(self, ax, kind):
        """The bonds of a port's springs, dampers or actuators in the model (a drive
        replaces the actuators)."""
        graph = self.model.graph
        return [graph.bonds_of(e)[0].name for e in ax.attachments(kind) if e in graph]

    def _ports(self, name: str) -> list[str]:
        """The column stems of a joint's coordinates (its name when it has none)."""
        return [ax.port for ax in self.model.mechanism.joint(name).axes] or [name]

    def coordinate(self, port: str) -> np.ndarray:
        """A coordinate's history (rad or m, (n,)) by port name: the joint's name for a
        one-coordinate joint, ``<joint>.<coordinate>`` for one with several."""
        for j in self.model.mechanism.joints.values():
            for ax in j.axes:
                if ax.port == port:
                    return np.asarray(self.raw.state(ax.state), dtype=float).ravel()
        ports = [ax.port for j in self.model.mechanism.joints.values() for ax in j.axes]
        raise NameNotFoundError(f"no joint coordinate '{port}' in mechanism "
                                f"'{self.model.mechanism.name}'; coordinates: "
                                f"{', '.join(ports) or 'none'}")

    # -- energy ------------------------------------------------------------------------------
    @property
    def energy(self) -> EnergyLedger:
        """The energy ledger (kinetic, gravity, springs, work, dissipated)."""
        mm = self.model
        mech = mm.mechanism
        n = self.t.size
        ke = np.zeros(n)
        pe = np.zeros(n)
        g = mm.gravity
        for b in mech.bodies.values():
            p = self._x(b.linear_momentum)
            h = self._x(b.angular_momentum)
            mass = mm.mass(b.name)
            ke += 0.5 * np.sum(p * p, axis=0) / mass
            ke += 0.5 * np.sum(h * np.linalg.solve(mm.inertia(b.name), h), axis=0)
            pe -= mass * (g @ self._x(b.r))
        springs = np.zeros(n)
        other = {}
        values = mm.parameters
        owned = {s for b in mech.bodies.values()
                 for s in (b.linear_momentum, b.angular_momentum)}
        stops = {}
        for j in mech.joints.values():
            for ax in j.axes:
                if ax.limit is not None and ax.limit.kind == "compliant":
                    for side, at in ax.limit.sides():
                        stops[ax.stop_element(side)] = (ax, side, at)
        for ax, side, at in stops.values():   # k (q - stop)^2 / 2 beyond the stop
            gap = np.asarray(self.raw.state(ax.state), dtype=float).reshape(n) - at
            gap = np.maximum(gap, 0.0) if side == "upper" else np.minimum(gap, 0.0)
            springs += 0.5 * ax.limit.stiffness * gap * gap
        for name, el in mm.graph.elements.items():
            if el.kind == "C":
                qs = self._x(el.state_name)
                springs += 0.5 * np.sum(qs * (el.field_matrix(values) @ qs), axis=0)
            elif el.category is Category.INERTIA and el.state_name not in owned:
                ps = self._x(el.state_name)
                other[name] = 0.5 * np.sum(ps * (el.field_matrix(values) @ ps), axis=0)
        work, diss = {}, {}
        attached = mm.index.by_element()
        ports = {ax.port: ax for j in mech.joints.values() for ax in j.axes}
        if mm.index.contact is not None:       # the elastic energy in the contacts
            springs = springs + self.contact_energy()
        for ws in mm.graph.work_states:
            val = self.raw.state(ws.name)
            a = attached.get(ws.source)
            # power into a resistance is energy dissipated; the rest is work done
            if mm.graph.element(ws.source).category is Category.RESISTANCE:
                diss[ws.source] = val
            elif a is not None and a.kind is Kind.CONTACT:
                # contact: the elastic part's work is the potential below (from the
                # geometry, not from this integral: the ledger checks one by the other);
                # the damping and friction dissipate
                if a.index >= 2:
                    diss["contact"] = diss.get("contact", 0.0) - np.asarray(val)
            elif a is not None and a.kind is Kind.LOCK:
                # friction's work (none while held) is a loss
                if ports[a.owner].friction is not None:
                    diss[f"{a.owner}.friction"] = -np.asarray(val)
            else:
                work[ws.source] = val
        for sw in self.switches:       # an impact takes kinetic energy at once
            if sw.loss:
                key = f"{sw.port}.impacts"
                diss[key] = diss.get(key, np.zeros(n)) + np.where(sw.after(self.t), sw.loss, 0.0)
        return EnergyLedger(ke, pe, springs, work, diss, other)

    # -- drift ------------------------------------------------------------------------------
    @property
    def max_abs_phi(self) -> float:
        """Largest |Phi| over all joints and output times (m or rad)."""
        return self.raw.max_abs_phi

    @property
    def max_abs_constraint_flow(self) -> float:
        """Largest |c| over all joints and output times (m/s or rad/s)."""
        return self.raw.max_abs_constraint_flow

    def summary(self) -> dict[str, Any]:
        """Solver statistics, drift, energy balance and redundancy as a JSON-able dict."""
        raw = self.raw
        led = self.energy
        return {
            "mechanism": self.model.mechanism.name,
            "success": bool(raw.success), "status": raw.status.name, "message": raw.message,
            "failure_time": raw.failure_time,
            "t_start": float(self.t[0]) if self.t.size else None,
            "t_end": float(self.t[-1]) if self.t.size else None,
            "n_output_points": int(self.t.size), "nfev": int(raw.nfev),
            "n_steps": int(raw.n_steps), "reduction": f"Eq. ({raw.branch})",
            "stabilization": (None if self.stabilization is None else
                              {"baumgarte_alpha": self.stabilization.alpha,
                               "baumgarte_beta": self.stabilization.beta}),
            "max_abs_phi": self.max_abs_phi,
            "max_abs_constraint_flow": self.max_abs_constraint_flow,
            "max_abs_phi_before_projection": self.projection_drift,
            "energy_balance_relative_drift": led.relative_drift,
            "energy_balance_drift_scale": {"value": led.drift_scale[0],
                                           "is": led.drift_scale[1]},
            "redundant_constraints": int(raw.rank_deficiency),
            "redundancy": raw.redundancy,
            "constraint_sources": list(self.model.model.unknown_sources),
            "inserted_by_causality": [s.name for s in self.model.causal.constraint_sources],
            "import": import_summary(getattr(self.model.mechanism, "import_report", None)),
        }

    def plot(self, path: str | None = None, *, joints: list[str] | None = None,
             reactions: bool = True, energy: bool = True) -> Any:
        """A quick look at the run over time (s): the joint coordinates (a panel for
        angles, rad, and one for displacements, m), the magnitudes of the joints'
        reaction forces (N) and moments (N m), and the energy ledger (J: kinetic,
        gravity, springs, each source's work, each damper's dissipation, and the
        balance's drift from its start).

        ``path`` saves the figure there (PNG, SVG or PDF by the suffix) without touching
        pyplot's backend; without it the figure comes from pyplot (a notebook shows it).
        ``joints`` chooses the joints (default all). Returns the matplotlib ``Figure``;
        raises :class:`~bondgraph.MissingExtraError` without matplotlib (the ``plot``
        extra)."""
        from elements.drawing.result_display import mechanism_figure
        return mechanism_figure(self, path, joints=joints, reactions=reactions,
                                energy=energy)

    def _repr_html_(self) -> str:
        from elements.drawing.result_display import mechanism_card
        return mechanism_card(self)

    def __repr__(self) -> str:
        return (f"MechanismResult({self.model.mechanism.name!r}: {self.raw.status.name}, "
                f"{self.t.size} points, max|Phi|={self.max_abs_phi:.2e}, "
                f"energy drift={self.energy.relative_drift:.2e} of "
                f"{self.energy.drift_scale[0]:.3g} J, {self.energy.drift_scale[1]})")

    # -- export ------------------------------------------------------------------------------
    def columns(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(bodies, joints, energy) columns named ``<body or joint>.<quantity>``."""
        bodies: dict[str, np.ndarray] = {"t": self.t}
        for name in self.model.mechanism.bodies:
            b = self.body(name)
            for k, ax in enumerate("xyz"):
                bodies[f"{name}.{ax}"] = b.position[k]
            for k, ax in enumerate("wxyz"):
                bodies[f"{name}.q{ax}"] = b.quaternion[k]
            for k, ax in enumerate("xyz"):
                bodies[f"{name}.v{ax}"] = b.velocity[k]
            for k, ax in enumerate("xyz"):
                bodies[f"{name}.w{ax}"] = b.angular_velocity[k]
        joints: dict[str, np.ndarray] = {"t": self.t}
        for name in self.model.mechanism.joints:
            j = self.joint(name)
            ports = self._ports(name)
            for k, port in enumerate(ports):
                pick = (lambda v: v) if len(ports) == 1 else (lambda v, k=k: v[k])
                joints[f"{port}.q"] = pick(j.q)
                joints[f"{port}.qd"] = pick(j.qd)
            for k, ax in enumerate("xyz"):
                joints[f"{name}.F{ax}"] = j.force[k]
            for k, ax in enumerate("xyz"):
                joints[f"{name}.M{ax}"] = j.moment[k]
            joints[f"{name}.F"] = np.linalg.norm(j.force, axis=0)
            for k, ax in enumerate(("d1", "d2", "axis")):
                joints[f"{name}.F_{ax}"] = j.force_joint[k]
            for k, ax in enumerate(("d1", "d2", "axis")):
                joints[f"{name}.M_{ax}"] = j.moment_joint[k]
            if j.quaternion is not None:
                for c, v in zip(("qw", "qx", "qy", "qz", "rx", "ry", "rz"),
                                (*j.quaternion, *j.rotation_vector)):
                    joints[f"{name}.{c}"] = v
            for k, port in enumerate(ports):
                pick = (lambda v: v) if len(ports) == 1 else (lambda v, k=k: v[k])
                joints[f"{port}.spring"] = pick(j.spring)
                joints[f"{port}.damper"] = pick(j.damper)
                joints[f"{port}.actuator"] = pick(j.actuator)
                ax = self.model.mechanism.joint(name).axes[k] if j.coordinates else None
                if ax is not None and ax.friction is not None:
                    joints[f"{port}.friction"] = pick(j.friction)
                if ax is not None and ax.limit is not None:
                    joints[f"{port}.stop"] = pick(j.stop)
        led = self.energy
        energy = {"t": self.t, "kinetic": led.kinetic, "gravity": led.gravity,
                  "springs": led.springs}
        for k, v in led.work.items():
            energy[f"work.{k}"] = v
        for k, v in led.dissipated.items():
            energy[f"dissipated.{k}"] = v
        for k, v in led.other.items():
            energy[f"stored.{k}"] = v
        energy["balance"] = led.balance
        return bodies, joints, energy

    def motion(self) -> Motion:
        """The motion (bodies' poses, joints, columns) that the 3D page and the videos
        draw (:mod:`elements.drawing.animation`)."""
        result = self
        mech = result.model.mechanism
        bodies = {}
        for n, b in mech.bodies.items():
            br = result.body(n)
            bodies[n] = MotionBody(
                n, float(self.model.mass(n)), np.array(self.model.inertia(n), dtype=float),
                np.asarray(br.position, dtype=float), np.asarray(br.quaternion, dtype=float),
                {p: np.asarray(v, dtype=float) for p, v in b.points.items()})
        geo = geometry_table(mech)
        joints = {}
        for n, j in mech.joints.items():
            q = np.asarray(result.raw.state(j.coordinate_state), dtype=float).ravel() \
                if j.n_free == 1 else None
            joints[n] = joint_from_table(n, geo["joints"][n], q)

        def columns():
            b, jn, e = result.columns()
            out = {**b, **jn, **e, **result._contact_columns()}
            out.pop("t", None)
            return out

        return Motion(mech.name, np.asarray(result.t, dtype=float), self.model.gravity,
                      bodies, joints, mech.ground.name, columns, result.units,
                      lambda name: np.asarray(result.joint(name).force, dtype=float),
                      shapes=shapes_from_table(geo.get("shapes")),
                      _contacts=lambda: contacts_from_columns(result._contact_columns()))

    def _contact_columns(self) -> dict[str, np.ndarray]:
        """The columns of ``contacts.csv`` (:meth:`ContactHistory.columns`), empty
        without collision shapes."""
        contacts = self.contacts()
        return {} if contacts is None else contacts.columns()

    def animate(self, path: str, **options: Any) -> str:
        """Write a self-contained HTML page animating the motion in 3D (no network needed);
        options as :func:`elements.drawing.animation.animate` (shapes, traces, reactions, plots,
        speed, title). Returns the path."""
        return animate(self, path, **options)

    def animate_video(self, path: str, **options: Any) -> str:
        """Write the motion as a GIF (Pillow) or MP4 (ffmpeg) drawn by matplotlib; options
        as :func:`elements.drawing.video.animate_video` (fps, speed, shapes, traces, plots, ...).
        Returns the path."""
        return animate_video(self, path, **options)

    def to_dataframe(self):
        """Every exported column (bodies, joints, energy, and with collision shapes the
        contacts of ``contacts.csv``) as one pandas DataFrame indexed by time (requires
        the optional pandas: ``pip install vector-bondgraph[dataframe]``).
        """
        pd = require_extra("pandas", "to_dataframe()", "dataframe")
        bodies, joints, energy = self.columns()
        cols = {**bodies, **joints, **energy, **self._contact_columns()}
        t = cols.pop("t")
        return pd.DataFrame(cols, index=pd.Index(t, name="t"))

    def units(self) -> dict[str, dict[str, str]]:
        """Units and frames of every exported column (the CSV's JSON sidecar)."""
        out: dict[str, dict[str, str]] = {"t": {"unit": "s"}}
        for name in self.model.mechanism.bodies:
            for ax in "xyz":
                out[f"{name}.{ax}"] = {"unit": "m", "frame": "global",
                                       "meaning": "centre of mass position"}
                out[f"{name}.v{ax}"] = {"unit": "m/s", "frame": "global",
                                        "meaning": "centre of mass velocity"}
                out[f"{name}.w{ax}"] = {"unit": "rad/s", "frame": "global",
                                        "meaning": "angular velocity"}
            for ax in "wxyz":
                out[f"{name}.q{ax}"] = {"unit": "1", "frame": "body -> global",
                                        "meaning": "orientation quaternion, scalar first"}
        for name, j in self.model.mechanism.joints.items():
            ports = {ax.port: ax.units() for ax in j.axes} or \
                {name: {"q": "rad", "qd": "rad/s", "effort": "N m"}}        # (no axis)
            for port, u in ports.items():
                out[f"{port}.q"] = {"unit": u["q"], "meaning": "joint coordinate"}
                out[f"{port}.qd"] = {"unit": u["qd"], "meaning": "joint rate"}
                for k in ("spring", "damper", "actuator"):
                    out[f"{port}.{k}"] = {"unit": u["effort"],
                                          "meaning": f"{k} effort along the axis, on the "
                                                     f"child"}
            for ax in j.axes:
                for k, have in (("friction", ax.friction), ("stop", ax.limit)):
                    if have is not None:
                        out[f"{ax.port}.{k}"] = {"unit": ax.units()["effort"],
                                                 "meaning": f"{k} effort along the axis, "
                                                            f"on the child"}
            for ax in "xyz":
                out[f"{name}.F{ax}"] = {"unit": "N", "frame": "global",
                                        "meaning": "constraint force, parent on child"}
                out[f"{name}.M{ax}"] = {"unit": "N m", "frame": "global",
                                        "meaning": "constraint moment, parent on child, about "
                                                   "the joint point on the child"}
            out[f"{name}.F"] = {"unit": "N", "meaning": "magnitude of the constraint force"}
            for ax in ("d1", "d2", "axis"):
                out[f"{name}.F_{ax}"] = {"unit": "N", "frame": "child joint frame"}
                out[f"{name}.M_{ax}"] = {"unit": "N m", "frame": "child joint frame"}
            for ax in ("wxyz" if j.free_rotation else ""):
                out[f"{name}.q{ax}"] = {"unit": "1", "frame": "child joint frame -> parent "
                                        "joint frame", "meaning": "relative orientation "
                                        "quaternion, scalar first, sign-continuous"}
            for ax in ("xyz" if j.free_rotation else ""):
                out[f"{name}.r{ax}"] = {"unit": "rad", "frame": "parent joint frame",
                                        "meaning": "relative rotation vector (axis times "
                                                   "angle, angle in [0, pi])"}
        for k in ("kinetic", "gravity", "springs", "balance"):
            out[k] = {"unit": "J"}
        led = self.energy
        for k in led.work:
            out[f"work.{k}"] = {"unit": "J", "meaning": f"work done by {k} on the system"}
        for k in led.dissipated:
            out[f"dissipated.{k}"] = {"unit": "J", "meaning": f"energy dissipated by {k}"}
        for k in led.other:
            out[f"stored.{k}"] = {"unit": "J", "meaning": f"energy stored in {k}"}
        contacts = self.contacts()
        if contacts is not None:          # (the columns of contacts.csv)
            out.update(contacts.units())
        return out

    def write(self, out_dir: str, *, stem: str = "result", mat_name: str | None = None
              ) -> dict[str, str]:
        """Write bodies.csv, joints.csv, energy.csv, contacts.csv (with collision shapes:
        see :meth:`contacts`) (+ units.json), mechanism.json (masses,
        inertias, gravity, springs: what an offline energy check needs), summary.json and a
        MAT file into ``out_dir``; each file is written to a temporary name, then renamed
        (an interrupted write leaves no temporary file).

        MAT variable names are the CSV column names made valid for MATLAB (see
        :func:`mat_names`); the variable ``column_names`` (a cell array, n x 2) maps each
        variable to its column.

        Returns the paths by kind.

        Raises
        ------
        ModelError
            When ``out_dir`` is an existing file, or ``mat_name`` or ``stem`` is not a
            plain ``.mat`` file name inside it.
        """
        out_dir = os.fspath(out_dir)
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise ModelError(f"write: out_dir {out_dir!r} is an existing file; give a "
                             f"directory (it is created when missing)")
        try:
            mat_file = output_name(mat_name or f"{stem}.mat", (".mat",), RUN_FILES)
        except ValueError as exc:
            raise ModelError(f"write: mat_name {exc}") from None
        os.makedirs(out_dir, exist_ok=True)
        bodies, joints, energy = self.columns()
        contacts = self.contacts()
        tables = [("bodies", bodies), ("joints", joints), ("energy", energy)]
        if contacts is not None:      # (contacts.csv: per pair of shapes, as reactions)
            tables.append(("contacts", contacts.columns()))
        paths = {}
        for kind, cols in tables:
            path = os.path.join(out_dir, f"{kind}.csv")
            _atomic_csv(path, cols)
            paths[kind] = path
        units = self.units()
        paths["units"] = os.path.join(out_dir, "units.json")
        write_text(paths["units"], json.dumps(units, indent=2, ensure_ascii=False))
        mech = self.model.mechanism
        mm = self.model
        meta = {"name": mech.name, "gravity": mm.gravity.tolist(),
                "grounded": any(j.parent.is_ground for j in mech.joints.values()),
                "bodies": {n: {"mass": mm.mass(n), "inertia": mm.inertia(n).tolist()}
                           for n in mech.bodies},
                "springs": [{"joint": jn, "stiffness": k, "rest": rest}
                            for jn, _, k, rest in mm.springs()],
                "parameters": {name: {"value": p.value, "unit": p.unit,
                                      "meaning": p.meaning}
                               for name, p in ((p.name, p) for p in
                                               mm.parameters.declarations())}}
        meta.update(geometry_table(mech))
        paths["mechanism"] = os.path.join(out_dir, "mechanism.json")
        write_text(paths["mechanism"], json.dumps(meta, indent=2, ensure_ascii=False))
        paths["summary"] = os.path.join(out_dir, "summary.json")
        write_text(paths["summary"], json.dumps(self.summary(), indent=2, ensure_ascii=False))
        import scipy.io
        every = [cols for _, cols in tables]
        columns = list(dict.fromkeys(k for cols in every for k in cols))
        names = mat_names(columns)
        mat = {names[k]: np.asarray(v) for cols in every for k, v in cols.items()}
        mat["column_names"] = np.array([[names[k], k] for k in columns], dtype=object)
        mpath = os.path.join(out_dir, mat_file)
        with atomic_path(mpath) as tmp:
            scipy.io.savemat(tmp, mat, do_compression=True, appendmat=False)
        paths["mat"] = mpath
        return paths


RUN_FILES = ("bodies.csv", "joints.csv", "energy.csv", "contacts.csv", "units.json",
             "mechanism.json", "summary.json", "manifest.json", "animation.html")
"""The files a run writes under fixed names (no output a user names may take one)."""


def _atomic_csv(path: str, cols: dict[str, np.ndarray]) -> None:
    names = list(cols)
    data = np.column_stack([np.asarray(cols[n], dtype=float) for n in names]) if names else \
        np.zeros((0, 0))
    with atomic_open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row in data:
            w.writerow([repr(float(v)) for v in row])
