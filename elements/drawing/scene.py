"""What a view draws, sized and coloured: the scene of a motion.

- :class:`Shape`: how a body is drawn (a box, sphere or cylinder, in body coordinates);
  without one, the uniform box with the body's mass and principal inertia
  (:meth:`Shape.from_inertia`), its sides clipped to a sensible range.
- :func:`build_scene` (:class:`Scene`): the frames, bodies with shapes and colours,
  joints, traces, reactions and plots of a motion, and its collision shapes and contact
  forces; :func:`moving_bodies` the bodies that move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bondgraph.errors import ModelError, NameNotFoundError

from elements.drawing.motion import (
    Motion, MotionShape, Source, TraceSpec, load_motion, rotations,
)

__all__ = ["Shape", "Scene", "build_scene", "moving_bodies", "PALETTE", "MIN_SIDE",
           "MAX_SIDE"]

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
"""Body colours, in the order of the mechanism's bodies (matplotlib's tab10)."""

MIN_SIDE, MAX_SIDE = 0.03, 0.5
"""Sides of boxes derived from an inertia are clipped to [MIN_SIDE, MAX_SIDE] times the
size of the motion (the diagonal of the box holding every body centre, joint point and the
origin over the run), so that point-like bodies stay visible and bodies given a nominal
inertia do not swamp the scene. Shapes the user gives are never clipped."""


_CYLINDER_FRAMES = {  # columns: the shape's x, y, z axes in body coordinates
    "x": np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    "y": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "z": np.eye(3),
}
_DIMS = {"box": 3, "sphere": 1, "cylinder": 2}


@dataclass(frozen=True)
class Shape:
    """How a body is drawn, in body coordinates (m; origin at the centre of mass).

    kind : ``"box"`` (dims = side lengths along the shape's x, y, z), ``"sphere"``
        (dims = (radius,)) or ``"cylinder"`` (dims = (radius, length), along ``axis``).
    axis : ``"x"``, ``"y"`` or ``"z"``: the body axis a cylinder runs along.
    offset : the shape's centre in body coordinates (m).
    color : a CSS colour (``"#d62728"``, ``"teal"``); None picks the body's palette colour.
    rotation : (3, 3) the shape's axes in body coordinates (columns); set by
        :meth:`from_inertia` (the principal axes) and for cylinders, else identity.

    Build with :meth:`box`, :meth:`sphere`, :meth:`cylinder`, :meth:`from_inertia` or
    :meth:`parse` (``"box:0.1,0.05,0.05"``, ``"sphere:0.03"``, ``"cylinder:0.02,0.3,z"``).
    """

    kind: str
    dims: tuple[float, ...]
    axis: str = "z"
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    color: str | None = None
    rotation: tuple[tuple[float, float, float], ...] | None = None

    def __post_init__(self):
        if self.kind not in _DIMS:
            raise ModelError(f"shape kind must be box, sphere or cylinder, got {self.kind!r}")
        try:
            dims = tuple(float(d) for d in self.dims)
        except (TypeError, ValueError):
            raise ModelError(f"{self.kind}: dimensions must be numbers (m), got "
                             f"{self.dims!r}") from None
        if len(dims) != _DIMS[self.kind] or not all(np.isfinite(d) and d > 0 for d in dims):
            what = {"box": "3 side lengths", "sphere": "a radius",
                    "cylinder": "a radius and a length"}[self.kind]
            raise ModelError(f"{self.kind}: needs {what}, positive and finite (m), got "
                             f"{list(self.dims)}")
        object.__setattr__(self, "dims", dims)
        if self.axis not in _CYLINDER_FRAMES:
            raise ModelError(f"{self.kind}: axis must be 'x', 'y' or 'z', got {self.axis!r}")
        off = np.asarray(self.offset, dtype=float)
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            raise ModelError(f"{self.kind}: offset must be 3 finite numbers (m), got "
                             f"{self.offset!r}")
        object.__setattr__(self, "offset", tuple(float(v) for v in off))
        if self.color is not None and not isinstance(self.color, str):
            raise ModelError(f"{self.kind}: color must be a CSS colour string, got "
                             f"{self.color!r}")
        if self.rotation is not None:
            r = np.asarray(self.rotation, dtype=float)
            if r.shape != (3, 3) or not np.allclose(r @ r.T, np.eye(3), atol=1e-9) or \
                    np.linalg.det(r) < 0:
                raise ModelError(f"{self.kind}: rotation must be a proper rotation matrix")
            object.__setattr__(self, "rotation", tuple(tuple(float(v) for v in row)
                                                       for row in r))

    @classmethod
    def box(cls, lx: float, ly: float, lz: float, *, offset: Any = (0.0, 0.0, 0.0),
            color: str | None = None) -> "Shape":
        """A box with sides lx, ly, lz (m) along the body's x, y, z axes."""
        return cls("box", (lx, ly, lz), offset=offset, color=color)

    @classmethod
    def sphere(cls, radius: float, *, offset: Any = (0.0, 0.0, 0.0),
               color: str | None = None) -> "Shape":
        """A sphere of ``radius`` (m)."""
        return cls("sphere", (radius,), offset=offset, color=color)

    @classmethod
    def cylinder(cls, radius: float, length: float, *, axis: str = "z",
                 offset: Any = (0.0, 0.0, 0.0), color: str | None = None) -> "Shape":
        """A cylinder of ``radius`` and ``length`` (m) along body axis ``axis``."""
        return cls("cylinder", (radius, length), axis=axis, offset=offset, color=color)

    @classmethod
    def from_inertia(cls, mass: float, inertia: Any) -> "Shape":
        """The uniform box with this mass (kg) and central inertia (3x3, body
        coordinates, kg m^2), aligned with the principal axes (the body axes when the
        inertia is diagonal): side a_i =
        sqrt(6 (I_j + I_k - I_i) / m). A side that comes out zero or negative (a flat or
        point-like inertia) is given 1e-9 m; :func:`animate` clips the sides to the scene."""
        J = np.asarray(getattr(inertia, "matrix", inertia), dtype=float)
        J = 0.5 * (J + J.T)
        if np.abs(J - np.diag(np.diag(J))).max() <= 1e-12 * np.abs(J).max():
            lam, vec = np.diag(J).copy(), np.eye(3)   # principal already: sides along x, y, z
        else:
            lam, vec = np.linalg.eigh(J)
            if np.linalg.det(vec) < 0:
                vec[:, 2] = -vec[:, 2]
        total = lam.sum()
        sides = np.sqrt(np.maximum(6.0 * (total - 2.0 * lam) / float(mass), 0.0))
        sides = np.where(np.isfinite(sides) & (sides > 1e-9), sides, 1e-9)
        return cls("box", tuple(sides), rotation=tuple(map(tuple, vec)))

    @classmethod
    def parse(cls, text: str) -> "Shape":
        """``"box:LX,LY,LZ"``, ``"sphere:R"`` or ``"cylinder:R,L[,AXIS]"`` (m), optionally
        followed by ``"@X,Y,Z"`` (the offset, m) and ``"#RRGGBB"`` (the colour)."""
        if not isinstance(text, str) or ":" not in text:
            raise ModelError(f"shape {text!r}: expected KIND:DIMS, e.g. box:0.1,0.05,0.05, "
                             f"sphere:0.03 or cylinder:0.02,0.3,z")
        color = None
        if "#" in text:
            text, color = text.split("#", 1)
            color = "#" + color
        offset: Any = (0.0, 0.0, 0.0)
        if "@" in text:
            text, off = text.split("@", 1)
            try:
                offset = tuple(float(v) for v in off.split(","))
            except ValueError:
                raise ModelError(f"shape offset {off!r}: expected 3 numbers X,Y,Z (m)") \
                    from None
        kind, _, rest = text.partition(":")
        parts = [p.strip() for p in rest.split(",") if p.strip()]
        axis = "z"
        if kind.strip() == "cylinder" and parts and parts[-1] in _CYLINDER_FRAMES:
            axis = parts.pop()
        try:
            dims = tuple(float(p) for p in parts)
        except ValueError:
            raise ModelError(f"shape {text!r}: dimensions must be numbers (m)") from None
        return cls(kind.strip(), dims, axis=axis, offset=offset, color=color)

    def frame(self) -> tuple[np.ndarray, np.ndarray]:
        """(R, offset): the shape's axes in body coordinates (columns) and its centre (m)."""
        if self.rotation is not None:
            R = np.array(self.rotation, dtype=float)
        elif self.kind == "cylinder":
            R = _CYLINDER_FRAMES[self.axis]
        else:
            R = np.eye(3)
        return R, np.array(self.offset, dtype=float)

    def clipped(self, lo: float, hi: float) -> "Shape":
        """The same box with each side clipped to [lo, hi] (m)."""
        if self.kind != "box":
            return self
        sides = tuple(float(min(max(s, lo), hi)) for s in self.dims)
        return Shape("box", sides, self.axis, self.offset, self.color, self.rotation)

    def size(self) -> float:
        """The diameter of the shape's bounding sphere (m)."""
        d = self.dims
        if self.kind == "box":
            return float(np.linalg.norm(d))
        if self.kind == "sphere":
            return 2.0 * d[0]
        return float(math.hypot(2.0 * d[0], d[1]))


def _nice(x: float, mode: str = "floor") -> float:
    """A 1, 2 or 5 times a power of ten, at most (``floor``) or nearest to x > 0."""
    if not x > 0 or not np.isfinite(x):
        return 1.0
    e = math.floor(math.log10(x))
    cands = [m * 10.0 ** k for k in (e - 1, e, e + 1) for m in (1.0, 2.0, 5.0)]
    if mode == "floor":
        return max(c for c in cands if c <= x * (1 + 1e-12))
    return min(cands, key=lambda c: abs(math.log(c / x)))


def _horizontal_basis(up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = a - (a @ up) * up
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(up, e1)


@dataclass
class Scene:
    """The resolved drawing: frames (indices into the motion), the bodies with their shapes
    and colours, joints, traces, plots and the scene's size. Shared by the HTML page and the
    video; lengths in m, times in s, forces in N."""

    motion: Motion
    index: np.ndarray
    t: np.ndarray
    shapes: dict[str, Shape]
    colors: dict[str, str]
    links: dict[str, list[np.ndarray]]
    traces: list[dict[str, Any]]
    plots: list[dict[str, Any]]
    reactions: dict[str, np.ndarray]
    guides: dict[str, tuple[float, float]]
    center: np.ndarray
    extent: float
    lower: np.ndarray
    upper: np.ndarray
    up: np.ndarray
    view_dir: np.ndarray
    force_scale: float | None
    force_ref: float | None
    collision: list[MotionShape] = field(default_factory=list)
    """The collision shapes, drawn on their bodies (a body with any and no shape given
    is drawn by them alone: see ``covered``)."""
    covered: frozenset[str] = frozenset()
    contacts: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """Per pair of shapes (``floor|foot``): ``point`` (3, frames) m, the centre of
    pressure (NaN out of contact), ``normal`` and ``friction`` (3, frames) N, on the
    pair's second shape, global; a pair whose second shape is on the ground and first
    is not is turned round (``foot|floor`` is drawn as ``floor|foot``)."""
    contact_scale: float | None = None
    """m of arrow per N of contact force (one scale for all pairs)."""
    contact_ref: float | None = None
    marks: dict[str, str] = field(default_factory=dict)
    """How the page marks each joint with one coordinate, from the coordinate's unit
    (the joint contract's): ``"revolute"`` (a hinge along its axis) for an angle,
    ``"prismatic"`` (a guide along its axis) for a displacement."""

    @property
    def sizes(self) -> dict[str, float]:
        """Joint marker radius, link radius, axis arrow length and label height (m)."""
        e = self.extent
        return {"joint": 0.014 * e, "link": 0.005 * e, "axis": 0.12 * e, "label": 0.035 * e,
                "head": 0.025 * e}


def _select_frames(n: int, max_frames: int | None) -> np.ndarray:
    if max_frames is None or n <= max_frames:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max(int(max_frames), 2))).astype(int))


def _trace_points(motion: Motion, spec: TraceSpec) -> tuple[str, str, np.ndarray]:
    """(body, label, global positions (3, n)) of a trace spec: ``"m2"`` (the centre),
    ``"m2:tip"`` (a named point) or ``("m2", (x, y, z))`` (body coordinates, m)."""
    if isinstance(spec, str):
        body, _, point = spec.partition(":")
    else:
        try:
            body, point = spec
        except (TypeError, ValueError):
            raise ModelError(f"trace {spec!r}: expected 'BODY', 'BODY:POINT' or (BODY, "
                             f"(x, y, z))") from None
    if body not in motion.bodies:
        raise NameNotFoundError(f"trace {spec!r}: no body {body!r}; bodies: "
                                f"{', '.join(motion.bodies)}")
    b = motion.bodies[body]
    if point == "" or point is None:
        return body, f"{body} centre", b.position
    if isinstance(point, str):
        if point not in b.points:
            raise NameNotFoundError(f"trace {spec!r}: body {body!r} has no point {point!r}; "
                                    f"its points: {', '.join(b.points) or 'none'}")
        r = b.points[point]
        label = f"{body}:{point}"
    else:
        r = np.asarray(point, dtype=float)
        if r.shape != (3,) or not np.all(np.isfinite(r)):
            raise ModelError(f"trace {spec!r}: the point must be 3 finite numbers (m)")
        label = f"{body} at ({', '.join(f'{v:g}' for v in r)})"
    return body, label, b.position + np.einsum("nij,j->in", rotations(b.quaternion), r)


def moving_bodies(source: Source, limit: int = 6) -> list[str]:
    """The bodies whose centre of mass moves (a range above 1e-3 of the largest body's
    range), at most ``limit`` of them in the mechanism's order: default traces."""
    motion = load_motion(source)
    span = {n: float(np.ptp(b.position, axis=1).max()) if b.position.size else 0.0
            for n, b in motion.bodies.items()}
    top = max(span.values(), default=0.0)
    return [n for n, s in span.items() if top > 0 and s > 1e-3 * top][:limit]


def _coordinate_units(motion: Motion) -> dict[str, str]:
    """Every joint coordinate's column (``<port>.q``) that the motion has, with its unit
    ("rad" or "m"), in the mechanism's order: read from the columns' units (results and
    ``units.json`` write each coordinate's unit from the joint contract). A run directory
    without units falls back on the joint types revolute and prismatic."""
    units, cols = motion.units(), None
    out = {}
    for c, u in units.items():
        if isinstance(u, Mapping) and u.get("meaning") == "joint coordinate" and \
                u.get("unit") in ("rad", "m"):
            cols = motion.columns() if cols is None else cols
            if c in cols and np.all(np.isfinite(cols[c])):
                out[c] = u["unit"]
    if not units:
        out = {f"{n}.q": "m" if j.type == "prismatic" else "rad"
               for n, j in motion.joints.items() if j.q is not None}
    return out


def _default_plots(motion: Motion) -> list[list[str]]:
    """The joint coordinates: angles (rad) in one plot, displacements (m) in another."""
    unit = _coordinate_units(motion)
    ang = [c for c, u in unit.items() if u == "rad"]
    lin = [c for c, u in unit.items() if u == "m"]
    return [g for g in (ang, lin) if g]


def _resolve_plots(motion: Motion, plots, index: np.ndarray) -> list[dict[str, Any]]:
    if plots is None:
        plots = _default_plots(motion)
        if not plots:
            return []
    cols = motion.columns()
    units = motion.units()
    out = []
    colors = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
    for k, group in enumerate(plots):
        names = [group] if isinstance(group, str) else list(group)
        if not names:
            continue
        missing = [c for c in names if c not in cols]
        if missing:
            raise NameNotFoundError(f"plot {k + 1}: no column(s) {', '.join(missing)}; "
                                    f"columns are named as in the CSV files, e.g. "
                                    f"{', '.join(list(cols)[:6])}")
        unit_of = {c: units.get(c, {}).get("unit", "") for c in names}
        same = len(set(unit_of.values())) == 1
        unit = next(iter(unit_of.values())) if same else ""
        title = ", ".join(names) if len(names) <= 3 else f"{names[0]}, ... ({len(names)})"
        series = [{"name": c, "unit": unit_of[c], "color": colors[i % len(colors)],
                   "y": np.asarray(cols[c], dtype=float)[index]}
                  for i, c in enumerate(names)]
        if not same and len(names) > 1:
            title += " (mixed units)"
        out.append({"title": title, "unit": unit, "series": series})
    return out


def build_scene(motion: Motion, *, shapes: Mapping[str, Shape | str] | None = None,
                traces: Sequence[TraceSpec] | None = None,
                reactions: bool | Sequence[str] = True,
                plots: Sequence[str | Sequence[str]] | None = None,
                max_frames: int | None = 2000, contacts: bool = True) -> Scene:
    """Resolve what is drawn: shapes (given or from the inertia, clipped), colours, links
    from each centre to the body's joint points, traces, plots, reaction arrows, the
    collision shapes and (``contacts``) the contact force arrows, and the scene's size
    and viewing direction."""
    n = motion.t.size
    if n == 0:
        raise ModelError(f"animate: the result of '{motion.name}' has no output times")
    if not motion.bodies:
        raise ModelError(f"animate: mechanism '{motion.name}' has no bodies to draw")
    index = _select_frames(n, max_frames)
    t = motion.t[index]
    shapes = dict(shapes or {})
    for name, s in shapes.items():
        if name not in motion.bodies:
            raise NameNotFoundError(f"shape for {name!r}: no such body; bodies: "
                                    f"{', '.join(motion.bodies)}")
        if isinstance(s, str):
            try:
                shapes[name] = Shape.parse(s)
            except ModelError as exc:
                raise ModelError(f"shape for {name!r}: {exc}") from None
        elif not isinstance(s, Shape):
            raise ModelError(f"shape for {name!r}: expected a Shape or a string like "
                             f"'box:0.1,0.05,0.05', got {s!r}")
    rot = {n_: rotations(b.quaternion[:, index]) for n_, b in motion.bodies.items()}
    pos = {n_: b.position[:, index] for n_, b in motion.bodies.items()}

    # links: each body's centre to its joint points (body coordinates)
    links: dict[str, list[np.ndarray]] = {b: [] for b in motion.bodies}
    world_points = [np.zeros((3, 1))]
    for j in motion.joints.values():
        for body, p in ((j.parent, j.P), (j.child, j.Q)):
            if body in motion.bodies:
                if np.linalg.norm(p) > 0:
                    links[body].append(np.asarray(p, dtype=float))
                world_points.append(pos[body] + np.einsum("nij,j->in", rot[body], p))
            else:
                world_points.append(np.asarray(p, dtype=float).reshape(3, 1))
    for b in motion.bodies:
        world_points.append(pos[b])
    trace_list = []
    for spec in traces or ():
        body, label, pts = _trace_points(motion, spec)
        trace_list.append({"body": body, "label": label, "points": pts[:, index]})
        world_points.append(pts[:, index])
    allp = np.concatenate(world_points, axis=1)
    allp = allp[:, np.all(np.isfinite(allp), axis=0)]
    lower, upper = allp.min(axis=1), allp.max(axis=1)
    motion_size = float(np.linalg.norm(upper - lower))

    colors = {}
    resolved: dict[str, Shape] = {}
    auto = {b: Shape.from_inertia(mb.mass, mb.inertia) for b, mb in motion.bodies.items()
            if b not in shapes}
    if motion_size < 1e-9:
        motion_size = max([s.size() for s in auto.values() if s.size() > 1e-6] +
                          [s.size() for s in shapes.values()] + [0.0]) * 2.0 or 1.0
    for k, b in enumerate(motion.bodies):
        s = shapes.get(b)
        if s is None:
            s = auto[b].clipped(MIN_SIDE * motion_size, MAX_SIDE * motion_size)
        resolved[b] = s
        colors[b] = s.color or PALETTE[k % len(PALETTE)]
    pad = max([s.size() / 2.0 for s in resolved.values()] +
              [_reach(s) for s in motion.shapes if s.body in motion.bodies])
    lower, upper = lower - pad, upper + pad
    extent = float(np.linalg.norm(upper - lower))
    center = 0.5 * (lower + upper)

    g = np.asarray(motion.gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    e1, e2 = _horizontal_basis(up)
    view_dir = 0.55 * e1 - 0.75 * e2 + 0.45 * up
    view_dir /= np.linalg.norm(view_dir)

    # one-coordinate joints marked by their coordinate's unit: a hinge for an angle, a
    # guide for a slide, over the slide's range in the run (m), with a margin
    unit = _coordinate_units(motion)
    guides, marks = {}, {}
    for name, j in motion.joints.items():
        if j.q is None or j.axis_parent is None or f"{name}.q" not in unit:
            continue
        marks[name] = "prismatic" if unit[f"{name}.q"] == "m" else "revolute"
        if marks[name] == "prismatic":
            q = j.q[index]
            lo_, hi_ = float(np.min(q)), float(np.max(q))
            m = 0.15 * max(hi_ - lo_, 0.05 * extent)
            guides[name] = (lo_ - m, hi_ + m)

    # reaction arrows
    if reactions is True:
        chosen = list(motion.joints)
    elif reactions is False or reactions is None:
        chosen = []
    else:
        chosen = list(reactions)
        for jn in chosen:
            if jn not in motion.joints:
                raise NameNotFoundError(f"reactions: no joint {jn!r}; joints: "
                                        f"{', '.join(motion.joints)}")
    forces = {}
    for jn in chosen:
        f = motion.reaction(jn)
        if f is not None and motion.joints[jn].child in motion.bodies:
            forces[jn] = np.asarray(f, dtype=float)[:, index]
    fmax = max((float(np.nanmax(np.linalg.norm(f, axis=0))) for f in forces.values()),
               default=0.0)
    if fmax > 0 and np.isfinite(fmax):
        force_scale = _nice(0.3 * extent / fmax, "floor")   # m of arrow per N
        force_ref = _nice(fmax / 2.0, "floor")
    else:
        force_scale = force_ref = None
        forces = {}

    plot_list = _resolve_plots(motion, plots, index)
    scene = Scene(motion, index, t, resolved, colors, links, trace_list, plot_list, forces,
                  guides, center, extent, lower, upper, up, view_dir, force_scale, force_ref,
                  marks=marks)
    _add_contact(scene, motion, index, shapes, contacts)
    return scene


def _reach(s: MotionShape) -> float:
    """How far a collision shape reaches from its body's centre (m; a plane: 0)."""
    if s.kind == "plane" or s.vertices is None or not len(s.vertices):
        return 0.0
    return float(np.linalg.norm(s.position)) + float(np.linalg.norm(s.vertices, axis=1).max())


def _add_contact(scene: Scene, motion: Motion, index: np.ndarray,
                 given: Mapping[str, Shape], contacts: bool) -> None:
    """The collision shapes and the contact arrows of ``scene`` (one scale for every
    pair: the largest normal or friction force is drawn 0.25 of the scene's size long,
    rounded down to 1, 2 or 5 times a power of ten)."""
    scene.collision = [s for s in motion.shapes
                       if s.body in motion.bodies or s.body == motion.ground]
    scene.covered = frozenset(s.body for s in scene.collision
                              if s.body in motion.bodies and s.body not in given)
    if not contacts:
        return
    arrows = {}
    body = {s.name: s.body for s in motion.shapes}
    for name, c in motion.contacts().items():
        sign = 1.0           # drawn on the moving shape: a pair (foot, floor) as floor|foot
        if body.get(c.shape_b) == motion.ground and body.get(c.shape_a) != motion.ground:
            name, sign = f"{c.shape_b}|{c.shape_a}", -1.0
        arrows[name] = {"point": c.point[:, index], "normal": sign * c.normal[:, index],
                        "friction": sign * c.friction[:, index]}
    fmax = max((float(np.nanmax(np.linalg.norm(a[k], axis=0), initial=0.0))
                for a in arrows.values() for k in ("normal", "friction")), default=0.0)
    if fmax > 0 and np.isfinite(fmax):
        scene.contacts = arrows
        scene.contact_scale = _nice(0.25 * scene.extent / fmax, "floor")
        scene.contact_ref = _nice(fmax / 2.0, "floor")


# -- the HTML page -----------------------------------------------------------------------