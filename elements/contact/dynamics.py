"""Contact forces on bodies, as effort sources of the bond graph.

- :class:`ContactSystem`: the collision shapes of a mechanism with their laws, the
  broad phase, and the states it reads (each body's position, orientation and momenta).
  :meth:`ContactSystem.bind` with the model's parameter values gives a
  :class:`BoundContacts`, which evaluates every contact at a state.
- :class:`ContactWrench`: the effort source (an element kind) by which contact acts on
  a body: four per body with shapes, the elastic force on its velocity junction
  ``<body>.v`` (global, N) and moment on ``<body>.w`` (body axes, N m), and the
  dissipative (damping and friction) force and moment. Splitting them lets the run
  integrate the dissipated energy apart from the work of the elastic part, whose
  potential :meth:`BoundContacts.stored_energy` gives from the configuration: the energy
  ledger then checks the contact instead of assuming it.

At each contact point of shapes A and B (:func:`~elements.contact.detect.collide`: depth
d > 0, unit normal n from A into B, A's and B's deepest points p_a and p_b), with the
pair's :class:`~elements.contact.law.ContactLaw`:

- the penetration rate d' = n . (v(p_a) - v(p_b)), the velocities of the two bodies'
  material points there (global);
- the normal force on B, ``N n``, with ``N = max(k d^n (1 + lambda d'), 0)``: its
  elastic part ``k d^n`` and the rest dissipative;
- the friction force on B, ``-mu N v_t / sqrt(|v_t|^2 + v_s^2)``, v_t the tangential part
  of v(p_b) - v(p_a);
- A gets the opposite forces; each body's force acts at its own deepest point, so the
  elastic forces' power is exactly minus the rate of ``k d^(n+1) / (n+1)``;
- with rolling or torsional resistance (c_r, c_n), the moments on B
  ``-c_r N w_t / sqrt(|w_t|^2 + w_s^2)`` and ``-c_n N w_n / sqrt(|w_n|^2 + w_s^2)``,
  w_n and w_t the parts of B's angular velocity relative to A's along the normal and
  across it (A gets the opposite): dissipative, their power ``M . w_rel <= 0``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import Se, register_element
from bondgraph.element import StateView
from bondgraph.errors import ModelError
from bondgraph.primitives.sources import CompiledSource, SourceLaw
from bondgraph.spatial import quat_to_matrix

from elements.contact.broadphase import CollisionWorld
from elements.contact.detect import capacity, contact_kernel
from elements.contact.law import ContactLaw
from elements.contact.shapes import PLANE, Shape

__all__ = ["ContactSystem", "BoundContacts", "ContactWrench", "ContactRecord", "PARTS",
           "INERTIA_KEYS"]

PARTS = ("elastic force", "elastic moment", "dissipative force", "dissipative moment")
"""The four wrench sources of a body with shapes, in this order."""

INERTIA_KEYS = {"Ixx": (0, 0), "Iyy": (1, 1), "Izz": (2, 2), "Ixy": (0, 1), "Ixz": (0, 2),
                "Iyz": (1, 2)}
"""A body's inertia parameters (``<body>.Ixx`` ...) and their entries (body axes)."""

_LAW_FIELDS = (("stiffness", "k"), ("damping", "damping"), ("friction", "mu"))


@dataclass(frozen=True)
class ContactRecord:
    """The contacts of one pair of shapes at one state.

    points_a, points_b : (k, 3) global, m: A's and B's deepest points.
    normals : (k, 3) from A into B.
    depths : (k,) m.
    normal_force : (k,) N >= 0, on B along the normal.
    friction_force : (k, 3) N, on B.
    slip : (k, 3) m/s: B's point's velocity relative to A's, tangential part.
    stored : float, J: the elastic energy ``k d^(n+1) / (n+1)`` summed over the points.
    moment : (3,) N m, on B (A gets the opposite), global: the rolling and torsional
        resistance summed over the points (zero without them).
    """

    shape_a: str
    shape_b: str
    points_a: np.ndarray
    points_b: np.ndarray
    normals: np.ndarray
    depths: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    slip: np.ndarray
    stored: float
    moment: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))


class ContactSystem:
    """The shapes of a mechanism and what evaluating their contacts needs.

    ``SMALL``: up to this many shapes, every allowed pair is tested on its bounding
    spheres; beyond it, the broad phase sorts bounding boxes.

    Parameters
    ----------
    shapes : sequence of Shape
    laws : mapping shape name -> ContactLaw or None
        None for a plane that takes its partners' laws.
    states : mapping body -> (position, quaternion, linear momentum, angular momentum)
        The state names of every body that carries a shape (not the ground).
    parents : mapping body -> parent body
        The mechanism's tree, for the broad phase's parent filter.
    ground : str
    margin : float
        m, >= 0 (see :class:`~elements.contact.broadphase.CollisionWorld`).
    pairs_on, pairs_off : pairs of shape names
    """

    SMALL = 32

    def __init__(self, shapes: Sequence[Shape], laws: Mapping[str, ContactLaw | None],
                 states: Mapping[str, tuple[str, str, str, str]],
                 parents: Mapping[str, str | None], ground: str = "ground", *,
                 margin: float = 0.0, skip_parent: bool = True,
                 pairs_on: Sequence[tuple[str, str]] = (),
                 pairs_off: Sequence[tuple[str, str]] = ()):
        self.world = CollisionWorld(shapes, parents=parents, skip_parent=skip_parent,
                                    pairs_on=pairs_on, pairs_off=pairs_off, margin=margin,
                                    ground=ground)
        self.shapes = self.world.shapes
        self.laws = dict(laws)
        self.ground = ground
        self.states = dict(states)
        self.bodies = tuple(b for b in dict.fromkeys(s.body for s in self.shapes)
                            if b != ground)
        missing = [b for b in self.bodies if b not in self.states]
        if missing:
            raise ModelError(f"contact shapes on {', '.join(missing)}: no such body (shapes "
                             f"sit on the mechanism's bodies or the ground)")
        self._bound: dict[tuple, BoundContacts] = {}
        self._allowed: list[tuple[int, int]] | None = None
        self._radius: np.ndarray | None = None

    def candidates(self, poses: Mapping[str, tuple[np.ndarray, np.ndarray]]
                   ) -> list[tuple[int, int]]:
        """The pairs worth a narrow-phase test with the bodies at ``poses``: for a few
        shapes, the pairs the filters allow whose bounding spheres (a plane: its
        half-space) come within the margin; for many, the broad phase's sweep and
        prune."""
        if len(self.shapes) > self.SMALL:
            return self.world.candidate_pairs(poses)
        allowed = self.allowed_pairs()
        if self._radius is None:
            self._radius = np.array([0.0 if s.kind == PLANE else s.bounding_radius
                                     for s in self.shapes])
        centres = [_posed(s, poses.get(s.body))[0] for s in self.shapes]
        m, out = self.world.margin, []
        for i, j in allowed:
            a, b = self.shapes[i], self.shapes[j]
            if a.kind == PLANE or b.kind == PLANE:
                p, o = (a, j) if a.kind == PLANE else (b, i)
                if float(p.normal @ centres[o]) - p.offset <= self._radius[o] + m:
                    out.append((i, j))
            elif np.sum((centres[i] - centres[j]) ** 2) <= \
                    (self._radius[i] + self._radius[j] + m) ** 2:
                out.append((i, j))
        return out

    def allowed_pairs(self) -> list[tuple[int, int]]:
        """Every pair of shapes (indices, i < j) the filters let touch."""
        if self._allowed is None:
            n = len(self.shapes)
            self._allowed = [(i, j) for i in range(n) for j in range(i + 1, n)
                             if self.world.allowed(i, j)]
        return self._allowed

    @property
    def depends_on(self) -> tuple[str, ...]:
        """Every state the contact forces read."""
        return tuple(n for b in self.bodies for n in self.states[b])

    def law_parameters(self, shape: str) -> dict[str, str]:
        """A shape's law's parameters: role (``k``, ``damping``, ``mu``) -> name
        (``<shape>.contact.k``...). Empty for a plane without a law."""
        law = self.laws.get(shape)
        if law is None:
            return {}
        return {role: f"{shape}.contact.{role}" for field, role in _LAW_FIELDS
                if np.isfinite(getattr(law, field))}

    def bind(self, values: Mapping[str, float]) -> "BoundContacts":
        """The evaluator with the model's parameter values (masses, inertias, contact
        laws), made once per set of values."""
        names = [f"{b}.{k}" for b in self.bodies for k in ("mass", *INERTIA_KEYS)]
        names += [n for s in self.shapes for n in self.law_parameters(s.name).values()]
        key = tuple(float(values[n]) for n in names)
        bound = self._bound.get(key)
        if bound is None:
            if len(self._bound) > 16:
                self._bound.clear()
            bound = self._bound[key] = BoundContacts(self, values)
        return bound


class BoundContacts:
    """A :class:`ContactSystem` with parameter values: the contacts at a state."""

    def __init__(self, system: ContactSystem, values: Mapping[str, float]):
        self.system = system
        self.mass = {b: float(values[f"{b}.mass"]) for b in system.bodies}
        self.inertia_inv = {}
        for b in system.bodies:
            J = np.empty((3, 3))
            for key, (i, j) in INERTIA_KEYS.items():
                J[i, j] = J[j, i] = float(values[f"{b}.{key}"])
            self.inertia_inv[b] = np.linalg.inv(J)
        self.laws = {}
        for s in system.shapes:
            law = system.laws.get(s.name)
            if law is not None:
                p = system.law_parameters(s.name)
                law = dataclasses.replace(
                    law, owner=s.name,
                    stiffness=float(values[p["k"]]) if "k" in p else law.stiffness,
                    damping=float(values[p["damping"]]) if "damping" in p else law.damping,
                    friction=float(values[p["mu"]]) if "mu" in p else law.friction)
            self.laws[s.name] = law
        self._pair_law: dict[tuple[int, int], ContactLaw] = {}
        self._last: tuple[bytes, Any] | None = None
        self._last_wrench: tuple[bytes, Any] | None = None
        self._packed = None
        from bondgraph import fastlu
        if fastlu.enabled():              # the right-hand side's wrenches in one call
            import elements.contact.compiled as compiled
            self._compiled = compiled
            self._packed = compiled.Packed(system, self)

    def compiled_source(self, k: int, part: int) -> CompiledSource | None:
        """Body ``k``'s wrench part ``part`` as a compiled source (the kernel
        :func:`elements.contact.compiled.wrench_source`, the same numbers as
        :meth:`wrench`), for the compiled Runge-Kutta loop; None without numba."""
        if self._packed is None:
            return None
        states = [self.system.states[b] for b in self.system.bodies]
        return CompiledSource(self, lambda: self._compiled.wrench_source,
                              lambda slices: (*self._packed.flat(slices, states),
                                              12 * len(self.system.bodies)),
                              12 * k + 3 * part + np.arange(3))

    def pair_law(self, i: int, j: int) -> ContactLaw:
        """The law of the pair of shapes ``i`` and ``j`` (indices)."""
        return self._law(i, j)

    def wrench(self, s: StateView) -> dict[str, np.ndarray] | np.ndarray:
        """Every body's contact wrench at the state ``s``: (n_bodies, 4, 3) rows in
        :data:`PARTS` order, bodies in the system's order (compiled where numba is
        enabled, else :meth:`evaluate`'s); the last state's answer is kept."""
        x = s.array
        key = x.tobytes()
        if self._last_wrench is not None and self._last_wrench[0] == key:
            return self._last_wrench[1]
        if self._packed is not None:
            if not self._packed.index.any():
                self._packed.set_indices(s.slices, [self.system.states[b]
                                                    for b in self.system.bodies])
            W, _ = self._compiled.wrenches(*self._packed.args(np.ascontiguousarray(x)))
        else:
            w = self.evaluate(s)[0]
            W = np.array([w[b] for b in self.system.bodies]).reshape(-1, 4, 3)
        self._last_wrench = (key, W)
        return W

    # -- the bodies at a state --------------------------------------------------------
    def _kinematics(self, s: StateView):
        """Every shape body's pose (r, A) and velocity (v, omega; global)."""
        out = {}
        for b in self.system.bodies:
            r_name, q_name, p_name, h_name = self.system.states[b]
            q = np.asarray(s[q_name], dtype=float)
            A = quat_to_matrix(q / np.linalg.norm(q))
            v = np.asarray(s[p_name], dtype=float) / self.mass[b]
            w = A @ (self.inertia_inv[b] @ np.asarray(s[h_name], dtype=float))
            out[b] = (np.asarray(s[r_name], dtype=float), A, v, w)
        return out

    def _law(self, i: int, j: int) -> ContactLaw:
        law = self._pair_law.get((i, j))
        if law is None:
            a, b = self.system.shapes[i], self.system.shapes[j]
            law = self._pair_law[(i, j)] = ContactLaw.combine(self.laws[a.name],
                                                              self.laws[b.name])
        return law

    def evaluate(self, s: StateView) -> tuple[dict[str, np.ndarray], list[ContactRecord]]:
        """(every body's wrenches: body -> (4, 3) rows in :data:`PARTS` order, and the
        records of the pairs in contact) at the state ``s``; the last state's answer is
        kept (the four sources of every body read it in one evaluation)."""
        x = getattr(s, "array", None)
        key = None if x is None else x.tobytes()
        if key is not None and self._last is not None and self._last[0] == key:
            return self._last[1]
        kin = self._kinematics(s)
        poses = {b: (r, A) for b, (r, A, _, _) in kin.items()}
        wrench = {b: np.zeros((4, 3)) for b in self.system.bodies}
        records = []
        shapes = self.system.shapes
        ground = self.system.ground
        for i, j in self.system.candidates(poses):
            a, b = shapes[i], shapes[j]
            rec = self._pair(i, j, a, b, poses.get(a.body), poses.get(b.body),
                             kin.get(a.body), kin.get(b.body))
            if rec is None:
                continue
            records.append(rec)
            F = rec.normal_force[:, None] * rec.normals
            N_el = self._elastic(i, j, rec)
            F_el = N_el[:, None] * rec.normals
            F_d = F - F_el + rec.friction_force
            for body, pts, sign in ((a.body, rec.points_a, -1.0), (b.body, rec.points_b, 1.0)):
                if body == ground:
                    continue
                r, A, _, _ = kin[body]
                arm = pts - r
                wb = wrench[body]
                wb[0] += sign * F_el.sum(axis=0)
                wb[1] += sign * (A.T @ _cross(arm, F_el).sum(axis=0))
                wb[2] += sign * F_d.sum(axis=0)
                wb[3] += sign * (A.T @ (_cross(arm, F_d).sum(axis=0) + rec.moment))
        out = (wrench, records)
        if key is not None:
            self._last = (key, out)
        return out

    def _elastic(self, i: int, j: int, rec: ContactRecord) -> np.ndarray:
        law = self._law(i, j)
        return law.stiffness * rec.depths ** law.exponent

    def _pair(self, i, j, a: Shape, b: Shape, pose_a, pose_b, kin_a, kin_b
              ) -> ContactRecord | None:
        ca, Ra = _posed(a, pose_a)
        cb, Rb = _posed(b, pose_b)
        m = capacity(a, b)
        P, Nn, D = np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
        k = contact_kernel(a.kind, a.params, a.vertices, ca, Ra, b.kind, b.params,
                           b.vertices, cb, Rb, 0.0, P, Nn, D)
        keep = D[:k] > 0.0
        if not np.any(keep):
            return None
        P, Nn, D = P[:k][keep], Nn[:k][keep], D[:k][keep]
        pa = P + 0.5 * D[:, None] * Nn
        pb = P - 0.5 * D[:, None] * Nn
        va = _point_velocity(kin_a, pa)
        vb = _point_velocity(kin_b, pb)
        rel = vb - va
        rate = -np.einsum("ij,ij->i", Nn, rel)                   # d' = n . (v_a - v_b)
        law = self._law(i, j)
        el = law.stiffness * D ** law.exponent
        N = np.maximum(el * (1.0 + law.damping * rate), 0.0)
        vt = rel - np.einsum("ij,ij->i", Nn, rel)[:, None] * Nn
        speed = np.sqrt(np.einsum("ij,ij->i", vt, vt) + law.slip_velocity ** 2) \
            if np.isfinite(law.slip_velocity) else np.full(len(D), np.inf)
        Ft = -(law.friction * N / speed)[:, None] * vt
        stored = float(np.sum(law.stiffness * D ** (law.exponent + 1.0)) /
                       (law.exponent + 1.0))
        moment = np.zeros(3)
        if law.rolling > 0.0 or law.torsion > 0.0:     # (opposing B's spin relative to A)
            w_rel = (0.0 if kin_b is None else kin_b[3]) - (0.0 if kin_a is None else kin_a[3])
            wn = (Nn @ w_rel)[:, None] * Nn                      # per point
            wt = w_rel - wn
            ws2 = law.spin_velocity ** 2
            for c, w in ((law.rolling, wt), (law.torsion, wn)):
                if c > 0.0:
                    size = np.sqrt(np.einsum("ij,ij->i", w, w) + ws2)
                    moment -= ((c * N / size)[:, None] * w).sum(axis=0)
        return ContactRecord(a.name, b.name, pa, pb, Nn, D, N, Ft, vt, stored, moment)

    def stored_energy(self, s: StateView) -> float:
        """The elastic energy in every contact at the state ``s`` (J)."""
        return float(sum(r.stored for r in self.evaluate(s)[1]))


def _posed(shape: Shape, pose) -> tuple[np.ndarray, np.ndarray]:
    """The shape's centre and axes (global) on its body at ``pose`` (None: the
    ground); :meth:`Shape.world_pose` without its checks of the pose (the run's own)."""
    if pose is None:
        return shape.position, shape.rotation
    r, A = pose
    return r + A @ shape.position, A @ shape.rotation


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b row by row ((k, 3) or (3,) with (k, 3)); numpy's cross costs microseconds
    of axis handling per call on such small arrays."""
    a = np.broadcast_to(a, b.shape) if a.ndim < b.ndim else a
    b = np.broadcast_to(b, a.shape) if b.ndim < a.ndim else b
    out = np.empty(a.shape)
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _point_velocity(kin, points: np.ndarray) -> np.ndarray:
    """Velocities (global) of a body's material points (the ground's: zero)."""
    if kin is None:
        return np.zeros_like(points)
    r, _, v, w = kin
    return v + _cross(w, points - r)


@dataclass(frozen=True)
class _Wrench:
    """What a :class:`ContactWrench` carries: the system, the body, which part."""

    system: ContactSystem
    body: str
    part: int


@register_element
class ContactWrench(Se):
    """The effort of contact on a body (see the module docstring): part ``part`` (an
    index into :data:`PARTS`) of the contact wrench of ``body``, from ``system``; a force
    (N, global) on the body's ``.v`` junction or a moment (N m, body axes) on its
    ``.w``. Its value is a function of the state and of the parameters (masses,
    inertias, the shapes' laws), bound when the model is assembled."""

    kind = "ContactWrench"

    def __init__(self, name: str, system: ContactSystem | None = None, body: str = "",
                 part: int = 0):
        super().__init__(name, _Wrench(system, body, int(part)) if system is not None
                         else None, dim=3)

    def problems(self) -> list[str]:
        w = self.value
        if not isinstance(w, _Wrench) or w.body not in w.system.bodies or \
                not 0 <= w.part < len(PARTS):
            return [f"ContactWrench '{self.name}': needs a ContactSystem, one of its bodies "
                    f"and a part 0-3 ({', '.join(PARTS)})"]
        return []

    def problems_at(self, values: Mapping[str, float]) -> list[str]:
        return self.problems()

    def state_dependencies(self) -> tuple[str, ...]:
        return self.value.system.depends_on if isinstance(self.value, _Wrench) else ()

    def law(self, values: Mapping[str, float] | None = None) -> SourceLaw:
        w = self.value
        bound = w.system.bind(values or {})
        k, part = w.system.bodies.index(w.body), w.part
        return SourceLaw(lambda t, s: bound.wrench(s)[k, part].copy(), None, True,
                         compiled=bound.compiled_source(k, part))

    def label(self, values: Mapping[str, float] | None = None) -> str:
        w = self.value
        return f"Se: {self.name}\\ncontact {PARTS[w.part]}" if isinstance(w, _Wrench) \
            else f"Se: {self.name}"
