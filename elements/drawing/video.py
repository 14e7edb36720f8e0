"""The motion of a mechanism as a video or GIF, drawn by matplotlib (no browser needed).

- :func:`animate_video`: a GIF (Pillow, always available with matplotlib) or an MP4
  (when ffmpeg is installed) of the same scene as :func:`elements.drawing.animation.animate`:
  bodies as their shapes, links from each centre to its joint points, joint markers and
  axes, the global frame, gravity's direction, optional traces, reaction arrows and
  time-synchronised plots with a moving cursor; the collision shapes and the contact
  force arrows (normal and friction, per pair of shapes, at its centre of pressure).

Units and frames as in :mod:`elements.drawing.animation`: SI; positions and forces global; shapes
in body coordinates. The 3D axes are drawn with "up" (against gravity; +Z without
gravity) vertical, and labelled with the global axis each one shows.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping, Sequence

import numpy as np

from bondgraph._files import atomic_path
from bondgraph.errors import BondGraphError, ModelError

from bondgraph._plot import pyplot
from elements.drawing.motion import MotionShape, Source, TraceSpec, load_motion, rotations
from elements.drawing.scene import Scene, Shape, build_scene

__all__ = ["animate_video", "frame_times", "ffmpeg_available"]


def ffmpeg_available() -> bool:
    """Whether matplotlib can write MP4 through ffmpeg."""
    try:
        from matplotlib import animation
        return bool(animation.writers.is_available("ffmpeg"))
    except ImportError:  # pragma: no cover
        return shutil.which("ffmpeg") is not None


def frame_times(t_start: float, t_end: float, fps: float, speed: float = 1.0) -> np.ndarray:
    """The video's frame times (s of simulated time): n = max(2, round(fps (t_end -
    t_start) / speed)) evenly spaced times from t_start to t_end, both included, so the
    video lasts about (t_end - t_start) / speed seconds at ``fps`` frames per second."""
    span = float(t_end) - float(t_start)
    n = max(2, int(round(fps * span / speed))) if span > 0 else 1
    return np.linspace(t_start, t_end, n)


def _slerp(q0: np.ndarray, q1: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Slerp between unit quaternions (4, m) and (4, m) at weights a (m,)."""
    q0 = q0 / np.linalg.norm(q0, axis=0)
    q1 = q1 / np.linalg.norm(q1, axis=0)
    d = np.sum(q0 * q1, axis=0)
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    th = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(th)
    small = s < 1e-9
    w0 = np.where(small, 1.0 - a, np.sin((1.0 - a) * th) / np.where(small, 1.0, s))
    w1 = np.where(small, a, np.sin(a * th) / np.where(small, 1.0, s))
    q = w0 * q0 + w1 * q1
    return q / np.linalg.norm(q, axis=0)


def _interp(t: np.ndarray, times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of (k, n) values at ``times``."""
    return np.array([np.interp(times, t, v) for v in np.atleast_2d(values)])


def _polygons(shape: Shape, resolution: int = 16) -> list[np.ndarray]:
    """The shape's faces, each a (vertices, 3) array in body coordinates (m)."""
    R, off = shape.frame()
    if shape.kind == "box":
        h = np.asarray(shape.dims) / 2.0
        c = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
        faces = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4),
                 (1, 3, 7, 5)]
        polys = [c[list(f)] for f in faces]
    elif shape.kind == "cylinder":
        r, L = shape.dims
        a = np.linspace(0.0, 2.0 * np.pi, resolution, endpoint=False)
        ring = np.stack([r * np.cos(a), r * np.sin(a), np.zeros_like(a)], axis=1)
        bottom, top = ring + [0.0, 0.0, -L / 2], ring + [0.0, 0.0, L / 2]
        polys = [np.array([bottom[k], bottom[(k + 1) % resolution], top[(k + 1) % resolution],
                           top[k]]) for k in range(resolution)] + [bottom, top]
    else:  # sphere: latitude-longitude quads
        r = shape.dims[0]
        nlat, nlon = max(resolution // 2, 4), resolution
        th = np.linspace(0.0, np.pi, nlat + 1)
        ph = np.linspace(0.0, 2.0 * np.pi, nlon + 1)

        def p(i, j):
            return r * np.array([np.sin(th[i]) * np.cos(ph[j]), np.sin(th[i]) * np.sin(ph[j]),
                                 np.cos(th[i])])

        polys = [np.array([p(i, j), p(i, j + 1), p(i + 1, j + 1), p(i + 1, j)])
                 for i in range(nlat) for j in range(nlon)]
    return [q @ R.T + off for q in polys]


def _collision_polygons(s: MotionShape, centre: np.ndarray, size: float,
                        resolution: int = 16) -> list[np.ndarray]:
    """A collision shape's faces in its body's coordinates (m): its surface's triangles
    (:class:`MotionShape`), and for a plane a square ``size`` wide around the point
    nearest ``centre`` (body coordinates)."""
    R, o = s.rotation, s.position
    if s.kind != "plane":
        local = [s.vertices[f] for f in s.faces]
    else:
        u, w, _ = R.T @ (np.asarray(centre, dtype=float) - o)
        h = size / 2.0
        local = [np.array([[u - h, w - h, 0.0], [u + h, w - h, 0.0], [u + h, w + h, 0.0],
                           [u - h, w + h, 0.0]])]
    return [q @ R.T + o for q in local]


def animate_video(source: Source, path: str | os.PathLike[str], *, fps: float = 20.0,
                  speed: float = 1.0, t_span: tuple[float, float] | None = None,
                  shapes: Mapping[str, Shape | str] | None = None,
                  traces: Sequence[TraceSpec] | None = None,
                  reactions: bool | Sequence[str] = False,
                  plots: Sequence[str | Sequence[str]] | None = (),
                  size: tuple[float, float] = (8.0, 6.0), dpi: int = 100,
                  view: tuple[float, float] | None = None, title: str | None = None,
                  progress: bool = False, contacts: bool = True) -> str:
    """Write the motion as a GIF (``.gif``, Pillow) or an MP4 (``.mp4``, ffmpeg).

    Parameters
    ----------
    source : MechanismResult or path
        A result, or the output directory of a run.
    path : path
        The file to write; its suffix picks the format.
    fps : float
        Frames per second of the video.
    speed : float
        Simulated seconds per second of video: the video has ``round(fps * (t_end -
        t_start) / speed)`` frames (at least 2; see :func:`frame_times`).
    t_span : (t_start, t_end), optional
        The part of the run to show (s); default the whole run.
    shapes, traces, reactions, plots
        As :func:`elements.drawing.animation.animate`, except the defaults: no reaction arrows and
        no plots (``plots=None`` gives the joint coordinates, as in the page).
    size, dpi
        Figure size (inches) and resolution: the frames are size * dpi pixels (made even
        for MP4).
    view : (elevation, azimuth), optional
        Degrees, matplotlib's convention about the vertical "up" axis; default the page's
        first view.
    title : str, optional
        Default: the mechanism's name.
    progress : bool
        Print a frame counter on stderr.
    contacts : bool
        Draw the contact forces (as the page: normal and friction per pair of shapes);
        the collision shapes are drawn either way.

    Returns
    -------
    str
        The path written.

    Raises
    ------
    BondGraphError
        For an MP4 without ffmpeg (write a .gif instead, or install ffmpeg), or another
        suffix.
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".gif", ".mp4"):
        raise ModelError(f"animate_video: {path}: the suffix must be .gif (Pillow) or .mp4 "
                         f"(ffmpeg), got {suffix or 'none'!r}")
    if suffix == ".mp4" and not ffmpeg_available():
        raise BondGraphError(f"animate_video: {path}: MP4 needs ffmpeg, which is not "
                             f"installed (apt-get install ffmpeg), or write a .gif")
    for name, v in (("fps", fps), ("speed", speed), ("dpi", dpi)):
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
            raise ModelError(f"animate_video: {name} must be a positive number, got {v!r}")
    plt = pyplot("animate_video")
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    motion = load_motion(source)
    scene = build_scene(motion, shapes=shapes, traces=traces, reactions=reactions,
                        plots=plots, max_frames=None, contacts=contacts)
    t_all = motion.t
    t0, t1 = (float(t_all[0]), float(t_all[-1])) if t_span is None else map(float, t_span)
    if not (t_all[0] <= t0 <= t1 <= t_all[-1]):
        raise ModelError(f"animate_video: t_span ({t0}, {t1}) must lie within the run "
                         f"({t_all[0]}, {t_all[-1]}) s")
    times = frame_times(t0, t1, fps, speed)
    W = _Writer(scene, times, size, dpi, view, title or motion.name, plt, Poly3DCollection,
                even=(suffix == ".mp4"))
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    try:
        with atomic_path(path, suffix) as tmp:
            _write_frames(W, tmp, suffix, times, fps, dpi, progress)
    finally:
        plt.close(W.fig)
    return path


def _write_frames(W, tmp, suffix, times, fps, dpi, progress) -> None:
    """Draw every frame into ``tmp``: a GIF (Pillow) or an MP4 (ffmpeg)."""
    if suffix == ".gif":
        frames = []
        for k in range(times.size):
            frames.append(W.frame(k))
            if progress:
                _progress(k, times.size)
        from PIL import Image
        ims = [Image.fromarray(f) for f in frames]
        ims[0].save(tmp, format="GIF", save_all=True, append_images=ims[1:],
                    duration=max(int(round(1000.0 / fps)), 10), loop=0)
    else:
        from matplotlib import animation
        writer = animation.FFMpegWriter(fps=fps)
        with writer.saving(W.fig, tmp, dpi):
            for k in range(times.size):
                W.update(k)
                writer.grab_frame()
                if progress:
                    _progress(k, times.size)


def _progress(k: int, n: int) -> None:
    import sys
    sys.stderr.write(f"\r  frame {k + 1}/{n}")
    if k + 1 == n:
        sys.stderr.write("\n")
    sys.stderr.flush()


class _Writer:
    """Draws the scene at each frame time on one matplotlib figure."""

    def __init__(self, scene: Scene, times, size, dpi, view, title, plt, Poly3DCollection,
                 even: bool):
        self.scene, self.times = scene, times
        m = scene.motion
        t = m.t
        # display coordinates: e1, e2 horizontal, up vertical (matplotlib's z)
        up = scene.up
        a = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        e1 = a - (a @ up) * up
        e1 /= np.linalg.norm(e1)
        self.M = np.array([e1, np.cross(up, e1), up])         # global -> display
        # poses at the frame times (bodies), forces, traces
        self.pos, self.rot = {}, {}
        for b, mb in m.bodies.items():
            self.pos[b] = _interp(t, times, mb.position)
            idx = np.clip(np.searchsorted(t, times, side="right") - 1, 0, max(t.size - 2, 0))
            nxt = np.minimum(idx + 1, t.size - 1)
            span = np.where(t[nxt] > t[idx], t[nxt] - t[idx], 1.0)
            w = np.clip((times - t[idx]) / span, 0.0, 1.0)
            self.rot[b] = rotations(_slerp(mb.quaternion[:, idx], mb.quaternion[:, nxt], w))
        self.forces = {}
        for jn, f in scene.reactions.items():
            self.forces[jn] = _interp(scene.t, times, f)
        self.traces = [_interp(scene.t, times, tr["points"]) for tr in scene.traces]
        self.contacts = {n: {k: _interp(scene.t, times, v) for k, v in c.items()}
                         for n, c in scene.contacts.items()}

        w_in, h_in = size
        if even:
            w_in = 2 * math.ceil(w_in * dpi / 2) / dpi
            h_in = 2 * math.ceil(h_in * dpi / 2) / dpi
        self.fig = fig = plt.figure(figsize=(w_in, h_in), dpi=dpi, facecolor="white")
        self.dpi = dpi
        if scene.plots:
            ax = fig.add_axes((0.0, 0.0, 0.62, 0.93), projection="3d")
            n = len(scene.plots)
            self.cursors, self.plot_axes = [], []
            for k, p in enumerate(scene.plots):
                h = 0.84 / n
                pa = fig.add_axes((0.7, 0.08 + (n - 1 - k) * h + 0.1 * h, 0.28, 0.72 * h))
                for s in p["series"]:
                    pa.plot(scene.t, s["y"], lw=1.1, color=s["color"], label=s["name"])
                pa.set_title(p["title"] + (f" ({p['unit']})" if p["unit"] else ""),
                             fontsize=8, loc="left")
                pa.tick_params(labelsize=7)
                pa.grid(True, alpha=0.3)
                if k == n - 1:
                    pa.set_xlabel("t (s)", fontsize=7)
                if len(p["series"]) > 1:
                    pa.legend(fontsize=6, loc="upper right")
                self.cursors.append(pa.axvline(times[0], color="k", lw=1.0))
                self.plot_axes.append(pa)
        else:
            ax = fig.add_axes((0.0, 0.0, 1.0, 0.93), projection="3d")
            self.cursors = []
        self.ax = ax
        self.title = fig.text(0.01, 0.975, "", fontsize=10, va="top", family="sans-serif")
        self.name = title

        # limits: the scene's box in display coordinates, equal scales
        corners = np.array([[x, y, z] for x in (scene.lower[0], scene.upper[0])
                            for y in (scene.lower[1], scene.upper[1])
                            for z in (scene.lower[2], scene.upper[2])]) @ self.M.T
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        c, half = 0.5 * (lo + hi), 0.5 * float(np.max(hi - lo)) * 1.02
        ax.set_xlim(c[0] - half, c[0] + half)
        ax.set_ylim(c[1] - half, c[1] + half)
        ax.set_zlim(c[2] - half, c[2] + half)
        ax.set_box_aspect((1, 1, 1))
        names = [_axis_name(v) for v in self.M]
        ax.set_xlabel(f"{names[0]} (m)", fontsize=8)
        ax.set_ylabel(f"{names[1]} (m)", fontsize=8)
        ax.set_zlabel(f"{names[2]} (m)", fontsize=8)
        ax.tick_params(labelsize=7)
        if view is None:
            d = self.M @ scene.view_dir
            view = (math.degrees(math.asin(np.clip(d[2], -1, 1))),
                    math.degrees(math.atan2(d[1], d[0])))
        ax.view_init(elev=view[0], azim=view[1])

        E = scene.extent
        # the global frame and gravity
        for k, col in enumerate(("#e03131", "#2f9e44", "#1c64d1")):
            d = self.M[:, k] * 0.16 * E
            ax.quiver(0, 0, 0, *d, color=col, lw=1.5, arrow_length_ratio=0.15)
            ax.text(*(1.12 * d), "XYZ"[k], color=col, fontsize=8)
        g = np.asarray(m.gravity, dtype=float)
        if np.linalg.norm(g) > 0:
            o = c + np.array([-0.85, -0.85, 0.75]) * half
            gd = self.M @ g / np.linalg.norm(g) * 0.2 * E
            ax.quiver(*o, *gd, color="#333", lw=1.5, arrow_length_ratio=0.2)
            ax.text(*(o + 0.5 * gd), "  g", color="#333", fontsize=9)

        # bodies
        self.polys, self.colls, self.links = {}, {}, {}
        plane = 1.2 * E
        for s in scene.collision:
            if s.body not in m.bodies:     # on the ground: drawn once
                ax.add_collection3d(Poly3DCollection(
                    [q @ self.M.T for q in _collision_polygons(s, scene.center, plane)],
                    facecolor="#9aa0a8", edgecolor="none", alpha=0.3))
        for b in m.bodies:
            shape = scene.shapes[b]
            self.polys[b] = [] if b in scene.covered else _polygons(shape)
            centre = np.zeros(3)
            self.polys[b] += [q for s in scene.collision if s.body == b
                              for q in _collision_polygons(s, centre, plane)]
            coll = Poly3DCollection([], facecolor=scene.colors[b], edgecolor="#333",
                                    linewidths=0.4, alpha=0.95)
            ax.add_collection3d(coll)
            self.colls[b] = coll
            self.links[b] = [ax.plot([], [], [], color=scene.colors[b], lw=2.2)[0]
                             for _ in scene.links[b]]
        # joints: markers at P (parent) and axes
        self.joint_art = []
        for jn, j in m.joints.items():
            mk = ax.plot([], [], [], "o", color="#4a4f57", ms=4)[0]
            axis = ax.plot([], [], [], color="#343a40", lw=1.2)[0] \
                if j.axis_parent is not None else None
            self.joint_art.append((j, mk, axis))
        self.trace_art = [ax.plot([], [], [], color=scene.colors[tr["body"]], lw=1.0)[0]
                          for tr in scene.traces]
        self.force_art = {jn: ax.plot([], [], [], color="#c2255c", lw=2.0)[0]
                          for jn in self.forces}
        self.force_tip = {jn: ax.plot([], [], [], "o", color="#c2255c", ms=3)[0]
                          for jn in self.forces}
        self.contact_art = {n: (ax.plot([], [], [], color="#0b7285", lw=2.0)[0],
                                ax.plot([], [], [], color="#e8590c", lw=2.0)[0])
                            for n in self.contacts}
        if scene.contact_scale:
            fig.text(0.99, 0.94, f"contact normal (teal) and friction (orange): "
                     f"{scene.contact_ref:g} N = {scene.contact_ref * scene.contact_scale:g} m",
                     fontsize=7, ha="right", va="top", color="#0b7285")
        if scene.force_scale:
            fig.text(0.99, 0.975, f"reactions (parent on child): {scene.force_ref:g} N = "
                     f"{scene.force_ref * scene.force_scale:g} m", fontsize=7, ha="right",
                     va="top", color="#c2255c")
        self.decimals = max(2, int(math.ceil(-math.log10(max(
            (times[-1] - times[0]) / max(times.size - 1, 1), 1e-12)))) + 1)

    def _pose(self, body: str, k: int):
        return self.rot[body][k], self.pos[body][:, k]

    def _world(self, body: str, p: np.ndarray, k: int) -> np.ndarray:
        """Display coordinates of body point(s) p (..., 3) at frame k."""
        if body in self.pos:
            R, r = self._pose(body, k)
            w = p @ R.T + r
        else:
            w = np.asarray(p, dtype=float)
        return w @ self.M.T

    def update(self, k: int) -> None:
        sc = self.scene
        for b in sc.motion.bodies:
            self.colls[b].set_verts([self._world(b, p, k) for p in self.polys[b]])
            centre = self._world(b, np.zeros(3), k)
            for line, p in zip(self.links[b], sc.links[b]):
                end = self._world(b, p, k)
                line.set_data_3d(*np.array([centre, end]).T)
        E = sc.extent
        for j, mk, axis in self.joint_art:
            P = self._world(j.parent, j.P, k)
            mk.set_data_3d([P[0]], [P[1]], [P[2]])
            if axis is not None:
                if j.parent in self.rot:
                    d = self.rot[j.parent][k] @ j.axis_parent
                else:
                    d = j.axis_parent
                d = self.M @ (d / np.linalg.norm(d)) * 0.1 * E
                axis.set_data_3d(*np.array([P - d, P + d]).T)
        for line, pts in zip(self.trace_art, self.traces):
            seg = (pts[:, :k + 1].T @ self.M.T).T
            line.set_data_3d(seg[0], seg[1], seg[2])
        for jn, f in self.forces.items():
            j = sc.motion.joints[jn]
            Q = self._world(j.child, j.Q, k)
            tip = Q + self.M @ f[:, k] * sc.force_scale
            self.force_art[jn].set_data_3d(*np.array([Q, tip]).T)
            self.force_tip[jn].set_data_3d([tip[0]], [tip[1]], [tip[2]])
        for n, c in self.contacts.items():     # (NaN out of contact: nothing drawn)
            p = self.M @ c["point"][:, k]
            for line, part in zip(self.contact_art[n], ("normal", "friction")):
                tip = p + self.M @ c[part][:, k] * sc.contact_scale
                line.set_data_3d(*np.array([p, tip]).T)
        tk = self.times[k]
        for cur in self.cursors:
            cur.set_xdata([tk, tk])
        self.title.set_text(f"{self.name}    t = {tk:.{self.decimals}f} s")

    def frame(self, k: int) -> np.ndarray:
        """Frame k as an RGB array (h, w, 3)."""
        self.update(k)
        self.fig.canvas.draw()
        return np.asarray(self.fig.canvas.buffer_rgba())[..., :3].copy()


def _axis_name(v: np.ndarray) -> str:
    k = int(np.argmax(np.abs(v)))
    if abs(abs(v[k]) - 1.0) < 1e-9:
        return ("-" if v[k] < 0 else "") + "XYZ"[k]
    return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"
