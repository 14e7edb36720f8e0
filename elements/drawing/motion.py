"""The motion a view draws: bodies' poses, joints, columns, reactions over time.

- :class:`Motion` (:class:`MotionBody`, :class:`MotionJoint`): what the 3D page and the
  videos draw; :func:`load_motion` gives it from anything that has one
  (:class:`HasMotion`, a :class:`~elements.MechanismResult`) or from the output
  directory of a run (``bodies.csv``, ``joints.csv``, ``mechanism.json``,
  ``units.json``, ``energy.csv``), naming a missing or malformed file
  (:class:`RunDirectoryError`).
- :func:`geometry_table`: a mechanism's joints, points and collision shapes as the run
  directory keeps them; :func:`joint_from_table` a joint of the motion from it,
  :func:`shapes_from_table` its collision shapes (:class:`MotionShape`).
- :func:`contacts_from_columns`: the contact forces to draw (:class:`MotionContact`: per
  pair of shapes, the centre of pressure and the normal and friction forces) from the
  columns of ``contacts.csv``.
- :func:`rotations`: rotation matrices of quaternions over time.

Units and frames: SI (m, s, N); positions, orientations, forces and gravity global;
points and joint points in body coordinates from the centre of mass.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

import numpy as np

from bondgraph.errors import BondGraphError
from bondgraph.spatial import quat_to_matrix

from elements.contact.shapes import KIND_NAMES

__all__ = ["Motion", "MotionBody", "MotionJoint", "MotionShape", "MotionContact",
           "HasMotion", "RunDirectoryError", "load_motion", "geometry_table",
           "joint_from_table", "shapes_from_table", "contacts_from_columns", "rotations",
           "Source", "TraceSpec", "SHAPE_KINDS"]

SHAPE_KINDS = tuple("mesh" if n == "ConvexMesh" else n.lower() for n in KIND_NAMES)
"""The collision shapes' kinds as ``mechanism.json`` names them, by their kernel code
(:data:`elements.contact.shapes.KIND_NAMES` in lower case, ``"mesh"`` for a
``ConvexMesh``)."""


class HasMotion(Protocol):
    """What gives its motion (a :class:`~elements.results.MechanismResult` does): the
    views draw motions and do not depend on how they were computed."""

    def motion(self) -> "Motion": ...


Source = Union[HasMotion, "Motion", str, "os.PathLike[str]"]
TraceSpec = Union[str, tuple[str, Any]]


class RunDirectoryError(BondGraphError):
    """Fires when a run's output directory is missing, lacks a file the animation needs, or
    holds a malformed one; the one-line message names the file (and the key or column)."""


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
class MotionShape:
    """A collision shape to draw (:mod:`elements.contact.shapes`), in its body's
    coordinates (m): ``kind`` one of :data:`SHAPE_KINDS`; ``size`` (4,) the kernels'
    sizes (sphere: r; capsule and cylinder: r, half length; box: half extents;
    ellipsoid: semi-axes; plane, mesh: unused); ``position`` its centre and
    ``rotation`` (3, 3) its axes (shape -> body; a capsule's and a cylinder's axis and a
    plane's outward normal are its z); every shape but a plane: its surface
    (:meth:`~elements.contact.Shape.surface`), ``vertices`` (k, 3, shape frame) and
    triangles ``faces`` (f, 3), which is what is drawn."""

    name: str
    body: str
    kind: str
    size: np.ndarray
    position: np.ndarray
    rotation: np.ndarray
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None


@dataclass
class MotionContact:
    """The contact force of one pair of shapes over the output times, on ``shape_b``
    (``shape_a`` feels the opposite), global: the centre of pressure ``point`` (3, n) m
    (NaN out of contact), the ``normal`` force (3, n) N and the ``friction`` force
    (3, n) N (:class:`~elements.contact.history.PairHistory`)."""

    shape_a: str
    shape_b: str
    point: np.ndarray
    normal: np.ndarray
    friction: np.ndarray

    @property
    def name(self) -> str:
        """``<shape_a>|<shape_b>``, as in ``contacts.csv``."""
        return f"{self.shape_a}|{self.shape_b}"


@dataclass
class Motion:
    """What the animation and the video draw, from a result or a run's directory.

    t (n,) s; gravity (3,) m/s^2 global; bodies and joints by name; ``ground`` the fixed
    body's name. :meth:`columns` gives every exported column (as in the CSV files),
    :meth:`units` their units, :meth:`reaction` a joint's constraint force (3, n), N,
    parent on child, global; ``shapes`` the collision shapes and :meth:`contacts` their
    contact forces.
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
    shapes: list[MotionShape] = field(default_factory=list)
    _contacts: Callable[[], dict[str, MotionContact]] | None = None

    def contacts(self) -> dict[str, MotionContact]:
        """The contact forces by pair name (``floor|foot``); empty without contact."""
        if "contacts" not in self._cache:
            self._cache["contacts"] = self._contacts() if self._contacts else {}
        return self._cache["contacts"]

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
    out = {"ground": mechanism.ground.name, "joints": joints, "points": points}
    shapes = list(getattr(mechanism, "shapes", {}).values())
    if shapes:
        out["shapes"] = [_shape_row(s) for s in shapes]
    return out


def _shape_row(s: Any) -> dict[str, Any]:
    """A collision shape as ``mechanism.json`` keeps it (see :class:`MotionShape`)."""
    row = {"name": s.name, "body": s.body, "kind": SHAPE_KINDS[s.kind],
           "size": np.asarray(s.params, dtype=float).tolist(),
           "position": np.asarray(s.position, dtype=float).tolist(),
           "rotation": np.asarray(s.rotation, dtype=float).tolist()}
    if row["kind"] != "plane":
        verts, faces = s.surface()
        row["vertices"] = verts.tolist()
        row["faces"] = faces.tolist()
    return row


def shapes_from_table(rows: Any) -> list[MotionShape]:
    """The collision shapes of a ``mechanism.json`` (its ``shapes`` list, see
    :func:`geometry_table`); a ValueError, KeyError or TypeError on a malformed row."""
    out = []
    for row in rows or []:
        kind = str(row["kind"])
        if kind not in SHAPE_KINDS:
            raise ValueError(f"shape {row.get('name')!r}: kind must be one of "
                             f"{', '.join(SHAPE_KINDS)}, got {kind!r}")
        verts = row.get("vertices")
        faces = row.get("faces")
        if kind != "plane" and (verts is None or faces is None):
            raise ValueError(f"shape {row.get('name')!r}: no surface (vertices and faces); "
                             f"a {kind} needs them to be drawn (written by this version's "
                             f"runs: run the model again)")
        out.append(MotionShape(
            str(row["name"]), str(row["body"]), kind,
            np.asarray(row["size"], dtype=float).reshape(4),
            np.asarray(row["position"], dtype=float).reshape(3),
            np.asarray(row["rotation"], dtype=float).reshape(3, 3),
            None if verts is None else np.asarray(verts, dtype=float).reshape(-1, 3),
            None if faces is None else np.asarray(faces, dtype=int).reshape(-1, 3)))
    return out


def contacts_from_columns(cols: Mapping[str, np.ndarray]) -> dict[str, MotionContact]:
    """The contact forces to draw from the columns of ``contacts.csv``
    (:meth:`~elements.contact.history.ContactHistory.columns`): per pair ``<a>|<b>``
    the centre of pressure ``.x .y .z``, the total force ``.Fx .Fy .Fz`` and the
    friction ``.Ftx .Fty .Ftz`` (the normal force is their difference). Pairs without
    the friction columns (files written before they were added) are drawn with their
    whole force as the normal force."""
    out = {}
    for key in cols:
        if not key.endswith(".N") or "|" not in key:
            continue
        pair = key[:-2]
        try:
            point = np.array([cols[f"{pair}.{a}"] for a in "xyz"], dtype=float)
            force = np.array([cols[f"{pair}.F{a}"] for a in "xyz"], dtype=float)
        except KeyError:
            continue
        if all(f"{pair}.Ft{a}" in cols for a in "xyz"):
            friction = np.array([cols[f"{pair}.Ft{a}"] for a in "xyz"], dtype=float)
        else:
            friction = np.zeros_like(force)
        a, _, b = pair.partition("|")
        out[pair] = MotionContact(a, b, point, force - friction, friction)
    return out


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

    try:
        shapes = shapes_from_table(meta.get("shapes"))
    except (KeyError, TypeError, ValueError) as exc:
        raise RunDirectoryError(f"{mpath}: 'shapes': a malformed collision shape ({exc})") \
            from None
    epath = os.path.join(path, "energy.csv")
    cpath = os.path.join(path, "contacts.csv")

    def contact_columns():
        if not os.path.isfile(cpath):
            return {}
        c = _read_csv(cpath)
        if c.get("t", np.zeros(0)).size != t.size:
            raise RunDirectoryError(f"{cpath}: {c.get('t', np.zeros(0)).size} rows, but "
                                    f"bodies.csv has {t.size}")
        return c

    def columns():
        out: dict[str, np.ndarray] = {}
        for c in (cols, jcols, _read_csv(epath) if os.path.isfile(epath) else {},
                  contact_columns()):
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
                  reaction, shapes=shapes,
                  _contacts=lambda: contacts_from_columns(contact_columns()))


def rotations(quaternion: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3), body -> global, of quaternions (4, n) (w, x, y, z),
    each normalised (:func:`bondgraph.spatial.quat_to_matrix` on the columns)."""
    q = np.asarray(quaternion, dtype=float)
    return quat_to_matrix(q.T).reshape(-1, 3, 3)
