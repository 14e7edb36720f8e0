"""Tunnelling: a body that passes through a shape between two steps of a run.

The contact forces act only where shapes overlap at the states the solver evaluates. A
fast body meets a thin shape between two of them when a step carries it across the
shape whole (or past the shape's middle, where the contact pushes it out on the far
side): the run would go on, the body on the wrong side, and report SUCCESS.

:class:`TunnelWatch` is an event of the run (``g(t, x)``, terminal) that sees it. At
each accepted step it takes, for every pair of shapes the filters let touch, the
segment that the centre of one (a mover) travelled relative to the other (the
obstacle), in the obstacle's frame at the step's end. If that segment
enters the obstacle, the mover has sunk in deeper than it can (its centre is inside
another solid) or passed through: the event fires (its value goes from +1 to -1), and
the run is ended by :meth:`~elements.mechanism_model.MechanismModel.simulate` with a
failure naming the two shapes, the time, the speed and the largest step that would
have seen it (docs/contact.md). The compiled Runge-Kutta loop takes runs with it
(its attribute ``scan_steps``: the run's events are then evaluated at the ends of the
loop's accepted steps, in order, and the loop is cut back to the step where one
crosses; :mod:`bondgraph._fastrk`). A pair whose mover starts inside its obstacle is not
watched until it has left. Movers: a sphere or capsule against any shape (its core, a
point or a segment, is pushed the wrong way once its centre is inside the other); of
two other shapes (box, cylinder, mesh, ellipsoid), each against the other; never a
plane. (A thin
plate's centre inside a sphere is not tunnelling: the sphere is still pushed back by
the plate's near face until its own centre passes the plate's middle.)

Segment tests, in the obstacle's frame (m): a plane's, a box's and a mesh's half-spaces
(Cyrus and Beck's clipping), a sphere's and a capsule's distance to their core (a point,
a segment), a cylinder's clipping to its caps, then the distance to its axis; any other
convex kind (an ellipsoid) GJK's distance between the segment and the shape, from its
support point alone.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import IntegrationError, IntegrationWarning, Status
from bondgraph.spatial import frame_from_axis, quat_to_matrix

from elements.contact.detect import segment_closest
from elements.contact.gjk import gjk_distance
from elements.contact.shapes import (
    BOX, CAPSULE, CYLINDER, MESH, PLANE, SPHERE, support_point,
)

__all__ = ["TunnelWatch", "tunnelled"]


class TunnelWatch:
    """The terminal event that sees a shape pass through (or sink into) another between
    accepted steps (see the module docstring).

    Parameters
    ----------
    system : ContactSystem
        The mechanism's shapes and the states of their bodies.
    slices : mapping of state name to slice
        Where those states sit in the run's state vector.

    Attributes
    ----------
    hit : tuple or None
        After it fired: (mover shape, obstacle shape, time of the step's end (s), the
        relative speed over the step (m/s), the step (s)).
    """

    terminal = True
    direction = -1
    scan_steps = True        # read at accepted steps' ends only: the compiled loop may run

    def __init__(self, system, slices: Mapping[str, slice]):
        shapes = system.shapes
        self.names = [s.name for s in shapes]
        self.bodies = list(system.bodies)
        where = {b: k for k, b in enumerate(self.bodies)}
        self.body_of = np.array([where.get(s.body, -1) for s in shapes], dtype=np.int64)
        def span(name):
            sl = slices[name]
            return list(range(sl.start, sl.stop))
        self.r_index = np.array([span(system.states[b][0]) for b in self.bodies],
                                dtype=np.int64).reshape(-1, 3)
        self.q_index = np.array([span(system.states[b][1]) for b in self.bodies],
                                dtype=np.int64).reshape(-1, 4)
        self.pos = np.array([s.position for s in shapes], dtype=float).reshape(-1, 3)
        self.rot = np.array([s.rotation for s in shapes], dtype=float).reshape(-1, 3, 3)
        # a mover's centre: a mesh's is the mean of its hull's vertices (inside it)
        self.centre = np.array([s.vertices.mean(axis=0) if s.kind == MESH else np.zeros(3)
                                for s in shapes], dtype=float).reshape(-1, 3)
        self.kind = [s.kind for s in shapes]
        self.params = [np.asarray(s.params, dtype=float) for s in shapes]
        self.halfspaces = [_halfspaces(s) for s in shapes]
        self.verts = [np.asarray(s.vertices, dtype=float) for s in shapes]
        self.reach = np.array([s.bounding_radius for s in shapes])   # (a plane: inf)
        round_ = (SPHERE, CAPSULE)
        pairs = [(i, j) for a, b in system.allowed_pairs() for i, j in ((a, b), (b, a))
                 if self.kind[i] != PLANE and
                 (self.kind[i] in round_ or self.kind[j] not in round_)]
        # reported first: a moving body's shape entering one on the ground
        pairs.sort(key=lambda ij: self.body_of[ij[0]] < 0)
        self.movers = np.array([i for i, _ in pairs], dtype=np.int64)
        self.obstacles = np.array([j for _, j in pairs], dtype=np.int64)
        self.on_plane = np.array([self.kind[j] == PLANE for _, j in pairs], dtype=bool)
        self.ref_t = -np.inf
        self.ref: np.ndarray | None = None
        self.hit: tuple[str, str, float, float, float] | None = None

    def _relative(self, x: np.ndarray) -> np.ndarray:
        """Every mover's centre in its obstacle's frame (pairs, 3), m."""
        r = x[self.r_index]
        A = quat_to_matrix(x[self.q_index]).reshape(-1, 3, 3)     # (normalised)
        n = len(self.kind)
        c = self.pos.copy()
        R = self.rot.copy()
        moving = self.body_of >= 0
        b = self.body_of[moving]
        c[moving] = r[b] + np.einsum("kij,kj->ki", A[b], self.pos[moving])
        R[moving] = np.einsum("kij,kjl->kil", A[b], self.rot[moving])
        centre = c + np.einsum("kij,kj->ki", R, self.centre) if n else c
        m, o = self.movers, self.obstacles
        return np.einsum("kji,kj->ki", R[o], centre[m] - c[o])

    def __call__(self, t: float, x: np.ndarray) -> float:
        if not len(self.movers):
            return 1.0
        p = self._relative(np.asarray(x, dtype=float))
        if self.ref is None:
            self.ref, self.ref_t = p, float(t)
            return 1.0
        crossed = self._crossed(self.ref, p)
        if crossed is None:
            if t > self.ref_t:          # an accepted step's end (not a search inside one)
                self.ref, self.ref_t = p, float(t)
            return 1.0
        if self.hit is None and t > self.ref_t:
            k = crossed
            dt = float(t) - self.ref_t
            speed = float(np.linalg.norm(p[k] - self.ref[k])) / dt
            self.hit = (self.names[self.movers[k]], self.names[self.obstacles[k]],
                        float(t), speed, dt)
        return -1.0

    def _crossed(self, p0: np.ndarray, p1: np.ndarray) -> int | None:
        """The first pair whose segment p0 -> p1 (obstacle frame) enters the obstacle,
        its mover's centre outside it at p0; None."""
        # a plane (z <= 0 in its frame): the centre from above to below
        below = self.on_plane & (p0[:, 2] >= 0.0) & (p1[:, 2] < 0.0)
        if below.any():
            return int(np.nonzero(below)[0][0])
        # the others: a bounding test on the segment's distance from the obstacle's
        # centre, then the shape's own
        d = p1 - p0
        dd = np.einsum("ki,ki->k", d, d)
        s = np.clip(-np.einsum("ki,ki->k", p0, d) / np.where(dd > 0, dd, 1.0), 0.0, 1.0)
        near = p0 + s[:, None] * d
        dist = np.sqrt(np.einsum("ki,ki->k", near, near))
        near = ~self.on_plane & (dist <= self.reach[self.obstacles] + 1e-12)
        for k in np.nonzero(near)[0]:
            j = self.obstacles[k]
            if not _inside(self, j, p0[k]) and _enters(self, j, p0[k], p1[k]):
                return int(k)
        return None

    def message(self) -> str:
        """The failure's message (after :attr:`hit`)."""
        mover, obstacle, t, speed, dt = self.hit
        thin = min(_half_thickness(self, self.names.index(mover)),
                   _half_thickness(self, self.names.index(obstacle)))
        bound = thin / speed if speed > 0 else np.inf
        return (f"contact tunnelling: the centre of shape '{mover}' entered shape "
                f"'{obstacle}' within a step of {dt:.3g} s ending at t = {t:.6g} s, at "
                f"{speed:.3g} m/s relative to it: a step carried it into (or through) the "
                f"shape, past what the contact can push back. Give simulate max_step "
                f"below {bound:.3g} s (half the thinner shape, {thin:.3g} m, at that "
                f"speed), or stiffer contact")


def tunnelled(raw, watch: TunnelWatch | None, options: Mapping[str, Any],
              t_stop: float | None = None):
    """The run ``raw`` (a :class:`~bondgraph.SimulationResult`), failed with ``watch``'s
    message when it fired: status ``STEP_FAILED``, never SUCCESS with a body through a
    shape, failing at ``t_stop`` (s; default the run's last time, where the event ended
    it); raised as :class:`~bondgraph.IntegrationError` when ``options`` (the run's
    keywords) ask ``raise_on_failure``, else warned."""
    if watch is None or watch.hit is None:
        return raw
    message = watch.message()
    if t_stop is None:
        t_stop = float(raw.t[-1]) if raw.t.size else watch.hit[2]
    raw = dataclasses.replace(raw, status=Status.STEP_FAILED, success=False,
                              failure_time=float(t_stop), message=message)
    if options.get("raise_on_failure"):
        raise IntegrationError(message, raw)
    warnings.warn(f"simulation failed: {message}", IntegrationWarning, stacklevel=4)
    return raw


def _halfspaces(s) -> np.ndarray | None:
    """A plane's, box's or mesh's faces as rows (n, d) of n . x <= d (shape frame)."""
    if s.kind == PLANE:
        return np.array([[0.0, 0.0, 1.0, 0.0]])
    if s.kind == BOX:
        h = s.params[:3]
        return np.array([[*(sign * np.eye(3)[a]), h[a]] for a in range(3)
                         for sign in (1.0, -1.0)])
    if s.kind == MESH:
        from scipy.spatial import ConvexHull
        eq = ConvexHull(s.vertices).equations            # n . x + c <= 0 inside
        return np.column_stack([eq[:, :3], -eq[:, 3]])
    return None


def _inside(w: TunnelWatch, j: int, p: np.ndarray) -> bool:
    """Whether the point p (obstacle j's frame) is inside obstacle j."""
    return _enters(w, j, p, p)


def _enters(w: TunnelWatch, j: int, p0: np.ndarray, p1: np.ndarray) -> bool:
    """Whether the segment p0 -> p1 (obstacle j's frame) meets obstacle j's interior."""
    kind, z = w.kind[j], w.params[j]
    if kind == SPHERE or kind == CAPSULE:
        half = z[1] if kind == CAPSULE else 0.0
        a, b = np.array([0.0, 0.0, -half]), np.array([0.0, 0.0, half])
        s, u = segment_closest(p0, p1, a, b)
        gap = (p0 + s * (p1 - p0)) - (a + u * (b - a))
        return float(gap @ gap) < z[0] * z[0]
    if kind == CYLINDER:
        lo, hi = _clip(np.array([[0.0, 0.0, 1.0, z[1]], [0.0, 0.0, -1.0, z[1]]]), p0, p1)
        if lo > hi:
            return False
        q0, q1 = (p0 + lo * (p1 - p0))[:2], (p0 + hi * (p1 - p0))[:2]
        d = q1 - q0
        s = 0.0 if d @ d == 0 else float(np.clip(-(q0 @ d) / (d @ d), 0.0, 1.0))
        near = q0 + s * d
        return float(near @ near) < z[0] * z[0]
    if w.halfspaces[j] is None:            # any other convex kind
        return _meets_convex(kind, z, w.verts[j], p0, p1)
    lo, hi = _clip(w.halfspaces[j], p0, p1)
    return lo < hi or (lo == hi and _strictly(w.halfspaces[j], p0 + lo * (p1 - p0)))


def _strictly(faces: np.ndarray, p: np.ndarray) -> bool:
    return bool(np.all(faces[:, :3] @ p < faces[:, 3]))


def _clip(faces: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> tuple[float, float]:
    """The parameters [lo, hi] of the segment p0 + s (p1 - p0), s in [0, 1], inside
    every face n . x < d (lo > hi: none)."""
    lo, hi = 0.0, 1.0
    d = p1 - p0
    for n0, n1, n2, off in faces:
        den = n0 * d[0] + n1 * d[1] + n2 * d[2]
        num = off - (n0 * p0[0] + n1 * p0[1] + n2 * p0[2])
        if den == 0.0:
            if num <= 0.0:
                return 1.0, 0.0
        elif den > 0.0:
            hi = min(hi, num / den)
        else:
            lo = max(lo, num / den)
        if lo > hi:
            return lo, hi
    return lo, hi


def _half_thickness(w: TunnelWatch, k: int) -> float:
    """A shape's smallest half size (m): a radius, a half extent; a plane's: inf."""
    kind, z = w.kind[k], w.params[k]
    if kind == PLANE:
        return np.inf
    if kind in (SPHERE, CAPSULE, CYLINDER):
        return float(min(z[0], z[1])) if kind == CYLINDER else float(z[0])
    if kind == BOX:
        return float(min(z[:3]))
    faces = w.halfspaces[k]                # a mesh: its centre's distance to a face
    if faces is None:                      # any other: its narrowest sampled width
        return 0.5 * _narrowest(kind, z, w.verts[k])
    return float(np.min(faces[:, 3] - faces[:, :3] @ w.centre[k]))


_ORIGIN, _AXES, _NO_VERTS = np.zeros(3), np.eye(3), np.zeros((0, 3))


def _meets_convex(kind: int, z: np.ndarray, verts: np.ndarray, p0: np.ndarray,
                  p1: np.ndarray) -> bool:
    """Whether the segment p0 -> p1 (the shape's frame) meets a convex shape known by its
    support point alone: GJK's distance between the segment (a capsule's core) and the
    shape is zero."""
    d = p1 - p0
    length = float(np.sqrt(d @ d))
    R = frame_from_axis(d) if length > 0.0 else _AXES
    segment = np.array([0.0, 0.5 * length, 0.0, 0.0])
    W, PA, PB = np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3))
    _, dist = gjk_distance(CAPSULE, segment, _NO_VERTS, 0.5 * (p0 + p1), R, kind,
                           np.asarray(z, dtype=float), verts, _ORIGIN, _AXES, np.inf,
                           W, PA, PB, np.empty(4), np.empty(6))
    return dist < 0.0                      # (-1: overlapping or touching)


def _narrowest(kind: int, z: np.ndarray, verts: np.ndarray) -> float:
    """A convex shape's smallest width (m) over 13 directions (its axes, their face and
    body diagonals), from its support point."""
    dirs = [np.array(v, dtype=float) for v in
            ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1),
             (0, 1, 1), (0, 1, -1), (1, 1, 1), (1, 1, -1), (1, -1, 1), (-1, 1, 1))]
    a, b = np.empty(3), np.empty(3)
    widths = []
    for d in dirs:
        d = d / np.sqrt(d @ d)
        support_point(kind, z, verts, _ORIGIN, _AXES, d, a)
        support_point(kind, z, verts, _ORIGIN, _AXES, -d, b)
        widths.append(float(d @ (a - b)))
    return min(widths)
