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
- The motion comes from :mod:`elements.drawing.motion` (a result, or a run's output directory),
  the scene from :mod:`elements.drawing.scene`; this module turns the scene into the page.

The video of the same motion (matplotlib, no browser) is :func:`elements.drawing.video.animate_video`.

Units and frames: SI throughout (m, s, N). Positions, orientations, forces and gravity are
global; shapes, points and joint points are in body coordinates, whose origin is the
body's centre of mass. Reaction arrows are the joints' constraint forces, parent on child,
drawn at the joint's point on the child.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bondgraph._files import write_text
from bondgraph.errors import BondGraphError, ModelError

from elements.drawing.motion import (
    HasMotion, Motion, MotionBody, MotionContact, MotionJoint, MotionShape,
    RunDirectoryError, Source, TraceSpec,
    geometry_table, joint_from_table, load_motion, rotations,
)
from elements.drawing.scene import MAX_SIDE, MIN_SIDE, PALETTE, Scene, Shape, _nice, build_scene, moving_bodies

__all__ = ["Shape", "animate", "load_motion", "moving_bodies", "Motion", "MotionBody",
           "MotionJoint", "MotionShape", "MotionContact", "HasMotion", "RunDirectoryError", "THREE_VERSION", "geometry_table",
           "joint_from_table", "Scene", "build_scene", "rotations", "PALETTE", "Source",
           "TraceSpec", "MIN_SIDE", "MAX_SIDE", "scene_data", "render_html"]

THREE_VERSION = "0.187.0"
"""The three.js release bundled in ``elements/drawing/_static/three-bundle.min.js`` (MIT)."""

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_static")


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
            "links": [_vec(p) for p in scene.links[b]], "covered": b in scene.covered})
    joints = []
    for jn, j in m.joints.items():
        joints.append({"name": jn, "type": scene.marks.get(jn, j.type), "parent": j.parent,
                       "child": j.child,
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
    for s in scene.collision:      # a ground plane facing up carries the grid
        if s.kind == "plane" and s.body == m.ground and s.rotation[:, 2] @ scene.up > 1 - 1e-9:
            lowest = float(scene.up @ s.position)
            break
    collision = [{"name": s.name, "body": s.body, "kind": s.kind, "size": _vec(s.size),
                  "R": _vec(s.rotation.ravel()), "offset": _vec(s.position),
                  "vertices": None if s.vertices is None else _vec(s.vertices.ravel()),
                  "faces": None if s.faces is None else [int(f) for f in s.faces.ravel()],
                  "color": scene.colors.get(s.body, "#9aa0a8")} for s in scene.collision]
    contacts = [{"pair": name, "point": _flat(c["point"]), "normal": _flat(c["normal"]),
                 "friction": _flat(c["friction"])} for name, c in scene.contacts.items()]
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
        "collision": collision, "plane_size": grid_size, "contacts": contacts,
        "contact_scale": scene.contact_scale, "contact_ref": scene.contact_ref,
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
            max_frames: int | None = 2000, contacts: bool = True) -> str:
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
    contacts : bool
        Arrows for the contact forces (with collision shapes): per pair of shapes, its
        normal and friction force on the pair's second shape, at its centre of
        pressure, one scale for all that the legend states. The collision shapes are
        drawn either way.

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
                        plots=plots, max_frames=max_frames, contacts=contacts)
    text = render_html(scene_data(scene, title=title, speed=speed))
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    write_text(path, text)
    return path
