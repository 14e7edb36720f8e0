"""Seeing the motion: a mechanism's results as a 3D animation in the browser.

- :func:`animate`: one self-contained HTML file (three.js r187, the page's own script and
  the data all inlined; no network) that plays the motion in 3D, with play, pause, scrub
  and speed controls, orbit, zoom and pan, joint markers and axes, the global frame,
  gravity's direction, optional traces of points, optional joint-reaction arrows scaled
  to a legend, and time-synchronised plots of chosen columns beside the 3D view.
- :class:`Shape`: how a body is drawn (a box, sphere or cylinder, in body coordinates).
  Without one, a body is drawn as the uniform box with its mass and principal inertia
  (:meth:`Shape.from_inertia`), its sides clipped to a sensible range for point-like
  bodies.
- :func:`load_motion`: the motion from a :class:`~elements.results.MechanismResult` or from
  the output directory of a run (``bodies.csv``, ``joints.csv``, ``mechanism.json``,
  ``units.json``, ``energy.csv``: what ``bondgraph run`` and ``MechanismResult.write``
  produce).

The video of the same motion (matplotlib, no browser) is :func:`elements.video.animate_video`.

Units and frames: SI throughout (m, s, N). Positions, orientations, forces and gravity are
global; shapes, points and joint points are in body coordinates, whose origin is the
body's centre of mass. Reaction arrows are the joints' constraint forces, parent on child,
drawn at the joint's point on the child.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

import numpy as np

from bondgraph._files import write_text
from bondgraph.errors import BondGraphError, ModelError, NameNotFoundError

__all__ = ["Shape", "animate", "load_motion", "moving_bodies", "Motion", "MotionBody",
           "MotionJoint", "HasMotion", "RunDirectoryError", "THREE_VERSION", "geometry_table",
           "joint_from_table"]

THREE_VERSION = "0.187.0"
"""The three.js release bundled in ``elements/_static/three-bundle.min.js`` (MIT)."""

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_static")

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
"""Body colours, in the order of the mechanism's bodies (matplotlib's tab10)."""

MIN_SIDE, MAX_SIDE = 0.03, 0.5
"""Sides of boxes derived from an inertia are clipped to [MIN_SIDE, MAX_SIDE] times the
size of the motion (the diagonal of the box holding every body centre, joint point and the
origin over the run), so that point-like bodies stay visible and bodies given a nominal
inertia do not swamp the scene. Shapes the user gives are never clipped."""

class HasMotion(Protocol):
    """What gives its motion (a :class:`~elements.results.MechanismResult` does): this
    module draws motions and does not depend on how they were computed."""

    def motion(self) -> "Motion": ...


Source = Union[HasMotion, "Motion", str, "os.PathLike[str]"]
TraceSpec = Union[str, tuple[str, Any]]


class RunDirectoryError(BondGraphError):
    """Fires when a run's output directory is missing, lacks a file the animation needs, or
    holds a malformed one; the one-line message names the file (and the key or column)."""


# -- shapes -------------------------------------------------------------------------------

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


# -- the motion ---------------------------------------------------------------------------

@dataclass
class MotionBody:
    """A body's motion: position (3, n) m and quaternion (4, n) (w, x, y, z; body ->
    global) of its centre of mass, its mass (kg), central inertia (3x3, body coordinates,
    kg m^2) and named points (body coordinates, m)."""

    name: str
    mass: float
    inertia: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    points: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class MotionJoint:
    """A joint's geometry (body coordinates, m): the point P on the parent, Q on the child,
    the axis in the parent's and the child's coordinates (None without an axis), and the
    coordinate q (n,) (rad or m; None without one)."""

    name: str
    type: str
    parent: str
    child: str
    P: np.ndarray
    Q: np.ndarray
    axis_parent: np.ndarray | None
    axis_child: np.ndarray | None
    q: np.ndarray | None


@dataclass
class Motion:
    """What the animation and the video draw, from a result or a run's directory.

    t (n,) s; gravity (3,) m/s^2 global; bodies and joints by name; ``ground`` the fixed
    body's name. :meth:`columns` gives every exported column (as in the CSV files),
    :meth:`units` their units, :meth:`reaction` a joint's constraint force (3, n), N,
    parent on child, global.
    """

    name: str
    t: np.ndarray
    gravity: np.ndarray
    bodies: dict[str, MotionBody]
    joints: dict[str, MotionJoint]
    ground: str = "ground"
    _columns: Callable[[], dict[str, np.ndarray]] | None = None
    _units: Callable[[], dict[str, dict[str, str]]] | None = None
    _reaction: Callable[[str], np.ndarray | None] | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def columns(self) -> dict[str, np.ndarray]:
        """Every column by its CSV name (``m2.x``, ``J3.Fx``, ``kinetic``, ...), (n,)."""
        if "columns" not in self._cache:
            self._cache["columns"] = self._columns() if self._columns else {}
        return self._cache["columns"]

    def units(self) -> dict[str, dict[str, str]]:
        """Units and frames of the columns (units.json)."""
        if "units" not in self._cache:
            self._cache["units"] = self._units() if self._units else {}
        return self._cache["units"]

    def reaction(self, joint: str) -> np.ndarray | None:
        """The joint's constraint force, parent on child (3, n), N, global; None when
        unknown."""
        key = f"reaction:{joint}"
        if key not in self._cache:
            self._cache[key] = self._reaction(joint) if self._reaction else None
        return self._cache[key]


def geometry_table(mechanism: Any) -> dict[str, Any]:
    """The joints' geometry and the bodies' named points, as ``mechanism.json`` stores them
    for the animation (body coordinates, m; axes as unit vectors)."""
    joints = {}
    for n, j in mechanism.joints.items():
        has_axis = bool(j.n_free)
        joints[n] = {"type": j.type_name, "parent": j.parent.name, "child": j.child.name,
                     "parent_point": np.asarray(j.P, dtype=float).tolist(),
                     "child_point": np.asarray(j.Q, dtype=float).tolist(),
                     "axis_parent": j.Fa[:, 2].tolist() if has_axis else None,
                     "axis_child": j.Fb[:, 2].tolist() if has_axis else None}
    points = {n: {p: np.asarray(v, dtype=float).tolist() for p, v in b.points.items()}
              for n, b in mechanism.bodies.items() if b.points}
    return {"ground": mechanism.ground.name, "joints": joints, "points": points}


def load_motion(source: Source) -> Motion:
    """The motion of a :class:`~elements.results.MechanismResult`, or of the run whose
    output directory is ``source`` (a path).

    Raises
    ------
    RunDirectoryError
        For a directory: when it is missing, lacks ``bodies.csv`` or ``mechanism.json``,
        or holds a malformed file (the message names the file and the key or column).
    """
    if isinstance(source, Motion):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _from_directory(os.fspath(source))
    if callable(getattr(source, "motion", None)):
        return source.motion()
    raise TypeError(f"animate: expected a MechanismResult or a run's output directory, "
                    f"got {type(source).__name__}")


def joint_from_table(name: str, d: Mapping[str, Any], q) -> MotionJoint:
    """A joint of the motion from its row of :func:`geometry_table` and its coordinate
    history ``q`` (None: the joint has none)."""
    def vec(key):
        v = d.get(key)
        return None if v is None else np.asarray(v, dtype=float).reshape(3)

    return MotionJoint(name, str(d["type"]), str(d["parent"]), str(d["child"]),
                       vec("parent_point"), vec("child_point"), vec("axis_parent"),
                       vec("axis_child"), q)


def _read_csv(path: str) -> dict[str, np.ndarray]:
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot be read ({exc.strerror})") from None
    if not rows:
        raise RunDirectoryError(f"{path}: empty (expected a header row of column names)")
    head = rows[0]
    try:
        data = np.array([[float(v) for v in row] for row in rows[1:] if row], dtype=float)
    except ValueError as exc:
        raise RunDirectoryError(f"{path}: a value is not a number ({exc})") from None
    if data.size == 0:
        data = np.zeros((0, len(head)))
    if data.ndim != 2 or data.shape[1] != len(head):
        raise RunDirectoryError(f"{path}: rows do not all have {len(head)} values (one per "
                                f"header column)")
    return {h: data[:, k] for k, h in enumerate(head)}


def _from_directory(path: str) -> Motion:
    if not os.path.isdir(path):
        raise RunDirectoryError(f"{path}: no such directory (give the --out directory of a "
                                f"run)")
    hint = (f"{path} is not the output directory of a run (bondgraph run MODEL --out DIR "
            f"and MechanismResult.write(DIR) write bodies.csv, joints.csv and mechanism.json)")
    mpath = os.path.join(path, "mechanism.json")
    bpath = os.path.join(path, "bodies.csv")
    for p in (bpath, mpath):
        if not os.path.isfile(p):
            raise RunDirectoryError(f"{p}: not found; {hint}")
    try:
        with open(mpath) as f:
            meta = json.load(f)
    except json.JSONDecodeError as exc:
        raise RunDirectoryError(f"{mpath}: not valid JSON ({exc.msg} at line {exc.lineno})") \
            from None
    if not isinstance(meta, dict):
        raise RunDirectoryError(f"{mpath}: expected a JSON object")

    def key(obj, k, where=""):
        try:
            return obj[k]
        except (KeyError, TypeError, IndexError):
            raise RunDirectoryError(f"{mpath}: no key '{where}{k}'") from None

    cols = _read_csv(bpath)
    if "t" not in cols:
        raise RunDirectoryError(f"{bpath}: no column 't'")
    t = cols["t"]
    try:
        gravity = np.asarray(key(meta, "gravity"), dtype=float).reshape(3)
    except (TypeError, ValueError):
        raise RunDirectoryError(f"{mpath}: 'gravity' must be 3 numbers (m/s^2)") from None
    geo_points = meta.get("points", {}) or {}
    bodies = {}
    for n, b in key(meta, "bodies").items():
        try:
            mass = float(key(b, "mass", f"bodies.{n}."))
            inertia = np.asarray(key(b, "inertia", f"bodies.{n}."), dtype=float).reshape(3, 3)
        except (TypeError, ValueError):
            raise RunDirectoryError(f"{mpath}: body '{n}': mass must be a number and inertia "
                                    f"a 3x3 matrix") from None
        try:
            pos = np.array([cols[f"{n}.{a}"] for a in "xyz"])
            quat = np.array([cols[f"{n}.q{a}"] for a in "wxyz"])
        except KeyError as exc:
            raise RunDirectoryError(f"{bpath}: no column {exc.args[0]!r} (body '{n}' of "
                                    f"mechanism.json)") from None
        pts = {p: np.asarray(v, dtype=float) for p, v in geo_points.get(n, {}).items()}
        bodies[n] = MotionBody(n, mass, inertia, pos, quat, pts)

    jpath = os.path.join(path, "joints.csv")
    jcols = _read_csv(jpath) if os.path.isfile(jpath) else {}
    if jcols and jcols.get("t", np.zeros(0)).size != t.size:
        raise RunDirectoryError(f"{jpath}: {jcols.get('t', np.zeros(0)).size} rows, but "
                                f"bodies.csv has {t.size}")
    joints = {}
    for n, d in (meta.get("joints") or {}).items():
        q = jcols.get(f"{n}.q")
        if q is not None and not np.all(np.isfinite(q)):
            q = None
        try:
            joints[n] = joint_from_table(n, d, q)
        except (KeyError, TypeError, ValueError) as exc:
            raise RunDirectoryError(f"{mpath}: joint '{n}': malformed geometry ({exc})") \
                from None

    epath = os.path.join(path, "energy.csv")

    def columns():
        out: dict[str, np.ndarray] = {}
        for c in (cols, jcols, _read_csv(epath) if os.path.isfile(epath) else {}):
            for k, v in c.items():
                if k != "t" and v.size == t.size:
                    out[k] = v
        return out

    def units():
        upath = os.path.join(path, "units.json")
        if not os.path.isfile(upath):
            return {}
        try:
            with open(upath) as f:
                u = json.load(f)
        except json.JSONDecodeError as exc:
            raise RunDirectoryError(f"{upath}: not valid JSON ({exc.msg} at line "
                                    f"{exc.lineno})") from None
        return u if isinstance(u, dict) else {}

    def reaction(name):
        try:
            return np.array([jcols[f"{name}.F{a}"] for a in "xyz"])
        except KeyError:
            return None

    return Motion(str(meta.get("name", os.path.basename(os.path.normpath(path)))), t,
                  gravity, bodies, joints, str(meta.get("ground", "ground")), columns, units,
                  reaction)


# -- the scene: what is drawn, sized and coloured -----------------------------------------

def rotations(quaternion: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3), body -> global, of quaternions (4, n) (w, x, y, z),
    each normalised."""
    q = np.asarray(quaternion, dtype=float)
    q = q / np.linalg.norm(q, axis=0)
    w, x, y, z = q
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], axis=1)


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


def _default_plots(motion: Motion) -> list[list[str]]:
    ang = [f"{n}.q" for n, j in motion.joints.items() if j.q is not None and j.type != "prismatic"]
    lin = [f"{n}.q" for n, j in motion.joints.items() if j.q is not None and j.type == "prismatic"]
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
                max_frames: int | None = 2000) -> Scene:
    """Resolve what is drawn: shapes (given or from the inertia, clipped), colours, links
    from each centre to the body's joint points, traces, plots, reaction arrows and the
    scene's size and viewing direction."""
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
    pad = max(s.size() for s in resolved.values()) / 2.0
    lower, upper = lower - pad, upper + pad
    extent = float(np.linalg.norm(upper - lower))
    center = 0.5 * (lower + upper)

    g = np.asarray(motion.gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    e1, e2 = _horizontal_basis(up)
    view_dir = 0.55 * e1 - 0.75 * e2 + 0.45 * up
    view_dir /= np.linalg.norm(view_dir)

    # prismatic guides: the slide's range over the run (m), with a margin
    guides = {}
    for name, j in motion.joints.items():
        if j.type == "prismatic" and j.q is not None and j.axis_parent is not None:
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
    return Scene(motion, index, t, resolved, colors, links, trace_list, plot_list, forces,
                 guides, center, extent, lower, upper, up, view_dir, force_scale, force_ref)


# -- the HTML page -----------------------------------------------------------------------

def _flat(a: np.ndarray, digits: int = 7) -> list[float | None]:
    """Frame-major flat list of a (k, n) array, ``digits`` significant digits."""
    arr = np.asarray(a, dtype=float)
    arr = arr.T.ravel() if arr.ndim == 2 else arr.ravel()
    fmt = f"{{:.{digits}g}}".format
    return [float(fmt(v)) if np.isfinite(v) else None for v in arr]


def _vec(v) -> list[float] | None:
    return None if v is None else [float(f"{x:.9g}") for x in np.asarray(v, dtype=float)]


def scene_data(scene: Scene, *, title: str | None = None, speed: float = 1.0
               ) -> dict[str, Any]:
    """The JSON the page's script reads (flat arrays are frame-major)."""
    m = scene.motion
    bodies = []
    for b, mb in m.bodies.items():
        s = scene.shapes[b]
        R, off = s.frame()
        bodies.append({
            "name": b, "color": scene.colors[b],
            "shape": {"kind": s.kind, "dims": list(s.dims), "R": _vec(R.ravel()),
                      "offset": _vec(off)},
            "pos": _flat(mb.position[:, scene.index]),
            "quat": _flat(mb.quaternion[:, scene.index], 8),
            "links": [_vec(p) for p in scene.links[b]]})
    joints = []
    for jn, j in m.joints.items():
        joints.append({"name": jn, "type": j.type, "parent": j.parent, "child": j.child,
                       "P": _vec(j.P), "Q": _vec(j.Q), "axis_parent": _vec(j.axis_parent),
                       "axis_child": _vec(j.axis_child),
                       "guide": list(scene.guides[jn]) if jn in scene.guides else None,
                       "force": _flat(scene.reactions[jn]) if jn in scene.reactions else None})
    traces = [{"label": tr["label"], "color": scene.colors[tr["body"]],
               "pts": _flat(tr["points"])} for tr in scene.traces]
    plots = [{"title": p["title"], "unit": p["unit"],
              "series": [{"name": s["name"], "unit": s["unit"], "color": s["color"],
                          "y": _flat(s["y"])} for s in p["series"]]} for p in scene.plots]
    g = np.asarray(m.gravity, dtype=float)
    dist = scene.extent * 1.6
    lowest = float(min(scene.up @ c for c in _corners(scene.lower, scene.upper)))
    grid_size = _nice(scene.extent * 1.2, "nearest")
    return {
        "title": title or m.name, "name": m.name,
        "three": f"three.js r{THREE_VERSION.split('.')[1]}",
        "t": _flat(scene.t, 10), "speed": float(speed),
        "up": _vec(scene.up), "center": _vec(scene.center), "extent": scene.extent,
        "camera": _vec(scene.center + dist * scene.view_dir),
        "grid": {"origin": _vec(scene.center + (lowest - scene.up @ scene.center) * scene.up),
                 "size": grid_size, "divisions": 20},
        "gravity": _vec(g), "g": float(np.linalg.norm(g)), "sizes": scene.sizes,
        "ground": m.ground, "bodies": bodies, "joints": joints, "traces": traces,
        "plots": plots, "force_scale": scene.force_scale, "force_ref": scene.force_ref,
    }


def _corners(lo, hi):
    return [np.array([x, y, z]) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
            for z in (lo[2], hi[2])]


def _static(name: str) -> str:
    path = os.path.join(STATIC_DIR, name)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:  # pragma: no cover - a broken installation
        raise BondGraphError(f"animation: the package file {path} is missing (reinstall "
                             f"vector-bondgraph)") from None


def _script_safe(text: str) -> str:
    """Text that cannot end the <script> element it is inlined in."""
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(data: Mapping[str, Any]) -> str:
    """The self-contained page for ``data`` (see :func:`scene_data`)."""
    import html
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False)
    page = _static("animation.html")
    parts = {
        "__TITLE__": html.escape(str(data.get("title", "animation"))),
        "__CSS__": _static("animation.css"),
        "__DATA__": _script_safe(payload),
        "__THREE__": _script_safe(_static("three-bundle.min.js")),
        "__APP__": _script_safe(_static("animation.js")),
    }
    out = []
    rest = page
    # substitute each placeholder once, in order, so inlined text is never re-scanned
    for key in ("__TITLE__", "__CSS__", "__DATA__", "__THREE__", "__APP__"):
        head, sep, rest = rest.partition(key)
        if not sep:  # pragma: no cover - the template is part of the package
            raise BondGraphError(f"animation template: placeholder {key} missing")
        out += [head, parts[key]]
    out.append(rest)
    return "".join(out)


def animate(source: Source, path: str | os.PathLike[str], *,
            shapes: Mapping[str, Shape | str] | None = None,
            traces: Sequence[TraceSpec] | None = None,
            reactions: bool | Sequence[str] = True,
            plots: Sequence[str | Sequence[str]] | None = None,
            speed: float = 1.0, title: str | None = None,
            max_frames: int | None = 2000) -> str:
    """Write a self-contained HTML page that animates the motion in 3D (three.js, inlined:
    it opens from a file with no network).

    Parameters
    ----------
    source : MechanismResult or path
        A result, or the output directory of a run (``bondgraph run``, ``write``).
    path : path
        The HTML file to write (written to a temporary name, then renamed).
    shapes : mapping of body name to Shape or str, optional
        How to draw bodies (body coordinates, m), e.g. ``{"m1": Shape.box(0.05, 0.05,
        0.2)}`` or ``{"m2": "sphere:0.03"}``. Other bodies are the box of their inertia.
    traces : sequence, optional
        Points whose paths are drawn: ``"m2"`` (the centre of mass), ``"m2:tip"`` (a named
        point) or ``("m2", (x, y, z))`` (body coordinates, m).
    reactions : bool or sequence of joint names
        Arrows for the joints' constraint forces (parent on child, global, at the joint's
        point on the child), all scaled by one factor that the legend states (N per m of
        arrow). True: every joint; False: none.
    plots : sequence, optional
        Time-synchronised plots beside the 3D view: each item a column name or a list of
        names (one panel), named as in the CSV files (``"m2.z"``, ``"J3.F"``,
        ``"kinetic"``). Default: the joint coordinates (angles and slides apart);
        ``[]`` for none.
    speed : float
        Initial playback speed (simulated seconds per second); the page can change it.
    title : str, optional
        The page title (default: the mechanism's name).
    max_frames : int or None
        At most this many output times are embedded (evenly picked); the page
        interpolates between them (linear positions, slerp orientations).

    Returns
    -------
    str
        The path written.

    The page reads ``?t=1.5`` (seconds: show that time, paused), ``?speed=2`` and
    ``?play=0`` from its URL (``#t=1.5`` works too).
    """
    if not (isinstance(speed, (int, float)) and np.isfinite(speed) and speed > 0):
        raise ModelError(f"animate: speed must be a positive number, got {speed!r}")
    motion = load_motion(source)
    scene = build_scene(motion, shapes=shapes, traces=traces, reactions=reactions,
                        plots=plots, max_frames=max_frames)
    text = render_html(scene_data(scene, title=title, speed=speed))
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    write_text(path, text)
    return path
