"""Seeing the motion: the 3D page (rendered in headless Chromium), the video, the command.

- The three-body page, alone in an empty directory, is opened in headless Chromium with
  every host name unresolvable and a net log: screenshots at t = 0 and t = 1.5 s show a
  drawn canvas and bodies that moved (the same time twice gives the same picture), the
  page reports WebGL and the time asked for, and the net log holds no request made by
  the page (a control page with an image and a fetch shows the log catches both).
- The GIF has round(fps * duration / speed) frames, differing and not blank.
- ``bondgraph animate DIR`` rebuilds the same page data from a run's files; bad input
  exits 2 with one line naming the file.

Chromium comes from Debian's ``chromium`` package: installed here when missing and
running as root with apt-get; otherwise the browser tests are skipped, saying why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from elements import Shape, models
from elements.drawing.animation import (
    MAX_SIDE, MIN_SIDE, RunDirectoryError, build_scene, load_motion, scene_data,
)
from elements.running.runner import run
from elements.drawing.video import animate_video, ffmpeg_available, frame_times

PIL = pytest.importorskip("PIL.Image", reason="Pillow (with matplotlib) reads the frames")
pytest.importorskip("matplotlib", reason="the video is drawn by matplotlib")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WINDOW = (1200, 800)
VIEW = (slice(0, 740), slice(0, 830))        # the 3D view: left of the plots, above the bar
BELOW_LEGEND = (slice(180, 740), slice(0, 830))
BACKGROUND = np.array([244, 245, 247])       # the scene's background colour (#f4f5f7)


# -- fixtures -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The three-body example's run for 2 s (201 output times), animation included."""
    out = tmp_path_factory.mktemp("three_body")
    result, paths = run(models.three_body_spec(2.0, 201), str(out), animation="animation.html")
    assert result.success
    return out, result, paths


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def chromium():
    exe = _find_chromium()
    why = "headless Chromium is not installed"
    if exe is None:
        if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
            proc = subprocess.run(
                "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                "chromium", shell=True, capture_output=True, text=True, timeout=1200)
            exe = _find_chromium()
            if exe is None:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                why += f" and 'apt-get install chromium' failed ({tail[0]})"
        else:
            why += " and this test cannot install it (needs root and apt-get): run " \
                   "'sudo apt-get install chromium'"
    if exe is None:
        pytest.skip(why)
    return exe


def browse(chromium: str, url: str, workdir, *, screenshot: str | None = None,
           netlog: str | None = None) -> subprocess.CompletedProcess:
    """Open ``url`` headless (WebGL through SwiftShader, every host name unresolvable) and
    either save a screenshot or print the DOM after the page's scripts ran."""
    profile = os.path.join(str(workdir), f"profile{len(os.listdir(str(workdir)))}")
    cmd = [chromium, "--headless", "--no-sandbox", f"--user-data-dir={profile}",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--hide-scrollbars",
           f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=4000"]
    if netlog:
        cmd.append(f"--log-net-log={netlog}")
    cmd += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    proc = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=180)
    if screenshot:
        assert os.path.isfile(screenshot), proc.stderr[-2000:]
    return proc


def page_requests(netlog: str) -> list[str]:
    """URLs of the network requests that a page started (the browser's own background
    requests, whose initiator is 'not an origin', are left out)."""
    with open(netlog) as f:
        text = f.read()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:          # a log cut short at exit: close it
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for ev in log["events"]:
        p = ev.get("params") or {}
        if names.get(ev["type"]) == "URL_REQUEST_START_JOB" and "url" in p and \
                p.get("initiator") != "not an origin":
            urls.append(p["url"])
    return urls


def pixels(path: str) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


# -- the page in a browser ------------------------------------------------------------------

@pytest.fixture(scope="module")
def isolated_page(run_dir, tmp_path_factory):
    """The run's page alone in an empty directory: nothing beside it to load."""
    out, _, paths = run_dir
    d = tmp_path_factory.mktemp("alone")
    page = d / "three_body.html"
    shutil.copyfile(paths["animation"], page)
    return page


def test_page_renders_and_bodies_move_in_headless_chromium(chromium, isolated_page, tmp_path):
    url = isolated_page.as_uri()
    shots = {}
    for key, t in (("a", "0"), ("b", "1.5"), ("c", "1.5")):
        shots[key] = str(tmp_path / f"shot_{key}.png")
        browse(chromium, f"{url}?t={t}", tmp_path, screenshot=shots[key],
               netlog=str(tmp_path / f"net_{key}.json"))
    a, b, c = (pixels(shots[k]) for k in "abc")
    assert a.shape == (WINDOW[1], WINDOW[0], 3)
    # the canvas is drawn: grid, frame, bodies (not just the page's background)
    for img in (a, b):
        region = img[BELOW_LEGEND]
        drawn = (np.abs(region - BACKGROUND).max(axis=-1) > 24).mean()
        coloured = ((region.max(axis=-1) - region.min(axis=-1)) > 60).sum()
        assert drawn > 0.02, f"only {drawn:.2%} of the 3D view differs from the background"
        assert coloured > 300, f"{coloured} saturated pixels: no bodies or axes drawn"
    # the bodies moved between t = 0 and t = 1.5 s; the same time gives the same picture
    moved = (np.abs(a[VIEW] - b[VIEW]).max(axis=-1) > 40).sum()
    same = (np.abs(b[VIEW] - c[VIEW]).max(axis=-1) > 40).sum()
    print(f"3D view: {moved} pixels changed between t = 0 and 1.5 s, {same} between two "
          f"renderings of t = 1.5 s")
    assert moved > 1500
    assert same < 50
    for k in "abc":
        assert page_requests(str(tmp_path / f"net_{k}.json")) == []


def test_page_makes_no_network_request_and_obeys_its_url(chromium, isolated_page, tmp_path):
    netlog = str(tmp_path / "page.json")
    dom = browse(chromium, isolated_page.as_uri() + "?t=0.75", tmp_path, netlog=netlog).stdout
    assert 'data-ready="webgl"' in dom, dom[:500]           # three.js ran and drew
    assert re.search(r'<span id="time">t = 0\.750 s / 2 s</span>', dom), \
        re.findall(r'<span id="time">[^<]*</span>', dom)
    assert re.search(r'<div id="message" hidden="">', dom)  # no "WebGL unavailable"
    assert page_requests(netlog) == []
    # without ?t= it plays: 4 s of (virtual) time at speed 0.25 advance it by at most 1 s
    # (on a loaded machine the budget can run out before the first frame: t = 0 once
    # (seen in a full suite beside other jobs, never alone); a page that never plays
    # shows 0 both times)
    for _ in range(2):
        dom = browse(chromium, isolated_page.as_uri() + "?speed=0.25", tmp_path).stdout
        shown = float(re.search(r'<span id="time">t = ([0-9.]+) s', dom).group(1))
        if shown > 0.0:
            break
    assert 0.0 < shown <= 1.0 + 1e-9, shown
    # the check is real: a page that loads an image and fetches data shows both requests
    control = tmp_path / "control.html"
    control.write_text('<!doctype html><img src="http://example.invalid/x.png"><script>'
                       'fetch("https://example.invalid/d.json").catch(function(){});'
                       '</script>')
    ctl_log = str(tmp_path / "control.json")
    browse(chromium, control.as_uri(), tmp_path, netlog=ctl_log)
    assert sorted(page_requests(ctl_log)) == ["http://example.invalid/x.png",
                                              "https://example.invalid/d.json"]


def test_page_is_self_contained(run_dir):
    html = open(run_dir[2]["animation"], encoding="utf-8").read()
    assert not re.search(r"""\b(src|href)\s*=\s*["']?\s*(https?:|//|file:|ftp:)""", html, re.I)
    assert not re.search(r"<link\b|<script[^>]*\bsrc=|<iframe|@import|url\(\s*['\"]?https?:",
                         html, re.I)
    assert "default-src 'none'" in html                     # the browser forbids any fetch
    assert "three.js r187" in html and "OrbitControls" in html
    assert html.count("SPDX-License-Identifier: MIT") >= 1   # three.js's license comment


# -- the data the page draws -----------------------------------------------------------------

def page_data(path) -> dict:
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="anim-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_page_data_are_the_results(run_dir):
    out, result, paths = run_dir
    d = page_data(paths["animation"])
    assert np.allclose(d["t"], result.t, rtol=1e-9, atol=1e-12)
    bodies = {b["name"]: b for b in d["bodies"]}
    assert list(bodies) == ["rotor", "m1", "m2"]
    m2 = np.array(bodies["m2"]["pos"]).reshape(-1, 3).T
    assert np.allclose(m2, result.body("m2").position, rtol=1e-6, atol=1e-9)   # 7 digits
    quat = np.array(bodies["m1"]["quat"]).reshape(-1, 4).T
    assert np.allclose(quat, result.body("m1").quaternion, atol=1e-7)
    joints = {j["name"]: j for j in d["joints"]}
    f = np.array(joints["J3"]["force"]).reshape(-1, 3).T
    assert np.allclose(f, result.joint("J3").force, rtol=1e-6, atol=1e-9)
    assert joints["J3"]["type"] == "prismatic" and joints["J3"]["axis_parent"] == [0, 0, 1]
    assert joints["J2"]["P"] == [0.3, 0, 0] and joints["J2"]["Q"] == [0, 0, 0.1]
    # the slide's guide covers the slide's range over the run
    q3 = result.joint("J3").q
    assert joints["J3"]["guide"][0] < q3.min() and joints["J3"]["guide"][1] > q3.max()
    # traces of the bodies that move (the rotor's centre stays at the origin)
    assert [t["label"] for t in d["traces"]] == ["m1 centre", "m2 centre"]
    # default plots: joint angles and the slide
    assert [[s["name"] for s in p["series"]] for p in d["plots"]] == \
        [["J1.q", "J2.q"], ["J3.q"]]
    assert d["plots"][1]["unit"] == "m" and d["plots"][0]["unit"] == "rad"
    # gravity and the reaction legend: force_ref N drawn as force_ref * force_scale m
    assert d["gravity"] == [0, 0, -9.8] and d["up"] == [0, 0, 1]
    fmax = max(np.linalg.norm(result.joint(j).force, axis=0).max() for j in ("J1", "J2", "J3"))
    assert 0.1 * d["extent"] < fmax * d["force_scale"] <= 0.3 * d["extent"] * (1 + 1e-12)
    # the cubes' inertia (4.167e-4 kg m^2, 1 kg) is a 0.05 m cube: drawn as such
    assert np.allclose(bodies["m1"]["shape"]["dims"], 0.05, rtol=1e-3)


def test_command_line_rebuilds_the_same_page_from_the_files(run_dir, tmp_path):
    out, result, paths = run_dir
    os.remove(paths["animation"])
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "animate", str(out), "--plot",
                        "m2.x,m2.y,m2.z", "--trace", "m2", "--shape", "m2=sphere:0.03"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert os.path.isfile(paths["animation"])
    assert "animation.html" in json.load(open(out / "manifest.json"))["files"]
    from_files = page_data(paths["animation"])
    from_result = page_data(result.animate(str(tmp_path / "py.html"), traces=["m2"],
                                           plots=[["m2.x", "m2.y", "m2.z"]],
                                           shapes={"m2": "sphere:0.03"}))
    # the CSV files hold repr() floats: the data agree exactly
    assert from_files["bodies"] == from_result["bodies"]
    assert from_files["joints"] == from_result["joints"]
    assert from_files["traces"] == from_result["traces"]
    assert from_files["plots"] == from_result["plots"]
    assert from_files["bodies"][2]["shape"]["kind"] == "sphere"


@pytest.mark.parametrize("case", ["missing", "empty", "no_mechanism", "bad_json", "bad_csv",
                                  "bad_shape"])
def test_command_line_bad_input_exits_2_naming_the_file(run_dir, tmp_path, case):
    out = run_dir[0]
    d = tmp_path / "d"
    args = []
    if case == "missing":
        target, named = tmp_path / "nowhere", "nowhere"
    elif case == "empty":
        d.mkdir()
        target, named = d, "bodies.csv"
    else:
        shutil.copytree(out, d)
        target = d
        if case == "no_mechanism":
            os.remove(d / "mechanism.json")
            named = "mechanism.json"
        elif case == "bad_json":
            (d / "mechanism.json").write_text('{"name": "x", ')
            named = "mechanism.json"
        elif case == "bad_csv":
            text = (d / "bodies.csv").read_text().replace("m2.qw", "m2.qq")
            (d / "bodies.csv").write_text(text)
            named = "bodies.csv"
        else:
            args, named = ["--shape", "m2=blob:1"], "'m2'"
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "animate", str(target), *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_load_motion_errors_name_the_file(tmp_path):
    with pytest.raises(RunDirectoryError, match="bodies.csv: not found"):
        load_motion(str(tmp_path))


# -- the video --------------------------------------------------------------------------------

def test_gif_has_the_expected_frames_and_is_not_blank(run_dir, tmp_path):
    from PIL import Image
    result = run_dir[1]
    fps, duration = 8, 1.0
    path = animate_video(result, str(tmp_path / "motion.gif"), fps=fps, t_span=(0.0, duration),
                         traces=["m2"], reactions=True, size=(5.0, 4.0), dpi=80)
    im = Image.open(path)
    assert im.n_frames == round(fps * duration) == frame_times(0.0, duration, fps).size
    assert im.size == (400, 320)
    frames = []
    for k in range(im.n_frames):
        im.seek(k)
        frames.append(np.asarray(im.convert("RGB")).astype(int))
    white = np.array([255, 255, 255])
    for f in frames:
        assert (np.abs(f - white).max(axis=-1) > 40).mean() > 0.02      # drawn, not blank
        assert ((f.max(axis=-1) - f.min(axis=-1)) > 80).sum() > 100    # coloured bodies
    # the motion: the 3D part (below the title line) changes from the first to the last
    body = (slice(40, 320), slice(0, 400))
    assert (np.abs(frames[0][body] - frames[-1][body]).max(axis=-1) > 40).sum() > 150
    # the durations say fps
    assert abs(im.info["duration"] - 1000 / fps) <= 10       # GIF keeps centiseconds


def test_frame_times_follow_fps_and_speed():
    assert frame_times(0.0, 5.0, 20).size == 100
    assert frame_times(0.0, 5.0, 20, speed=2.0).size == 50
    assert frame_times(1.0, 2.0, 30)[[0, -1]].tolist() == [1.0, 2.0]


@pytest.mark.skipif(not ffmpeg_available(), reason="ffmpeg is not installed: MP4 is written "
                    "only when it is (GIF always works)")
def test_mp4_when_ffmpeg_exists(run_dir, tmp_path):
    path = animate_video(run_dir[1], str(tmp_path / "m.mp4"), fps=10, t_span=(0.0, 0.5),
                         size=(4.0, 3.0), dpi=80)
    assert os.path.getsize(path) > 1000
    if shutil.which("ffprobe"):
        out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams",
                              "v:0", "-show_entries", "stream=nb_read_frames,width,height",
                              "-of", "csv=p=0", path], capture_output=True, text=True).stdout
        assert out.split() == ["320,240,5"]


def test_video_refuses_other_formats(run_dir, tmp_path):
    from bondgraph import BondGraphError
    with pytest.raises(BondGraphError, match=r"\.gif .*\.mp4"):
        animate_video(run_dir[1], str(tmp_path / "m.avi"))


# -- shapes -----------------------------------------------------------------------------------

def test_box_from_inertia_has_that_inertia():
    m, sides = 2.0, np.array([0.1, 0.2, 0.3])
    c = m / 12.0 * np.array([sides[1]**2 + sides[2]**2, sides[0]**2 + sides[2]**2,
                             sides[0]**2 + sides[1]**2])
    rng = np.random.default_rng(3)
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    R *= np.sign(np.linalg.det(R))
    J = R @ np.diag(c) @ R.T                              # a rotated box
    s = Shape.from_inertia(m, J)
    Rs, _ = s.frame()
    d = np.asarray(s.dims)
    back = m / 12.0 * np.array([d[1]**2 + d[2]**2, d[0]**2 + d[2]**2, d[0]**2 + d[1]**2])
    assert np.allclose(Rs @ np.diag(back) @ Rs.T, J, atol=1e-12)
    assert np.allclose(sorted(d), sides)


def test_point_like_bodies_are_clipped_and_given_shapes_are_not(run_dir):
    from elements import Inertia, Mechanism, PrismaticJoint, RigidBody
    mech = Mechanism("dots", gravity=(0, 0, -9.81))
    dot = mech.add_body(RigidBody("dot", 1.0, Inertia.principal(1e-12, 1e-12, 1e-12)))
    big = mech.add_body(RigidBody("big", 1.0, Inertia.principal(50.0, 50.0, 50.0)))
    mech.add_joint(PrismaticJoint("J1", mech.ground, dot, axis=(0, 0, 1)))
    mech.add_joint(PrismaticJoint("J2", mech.ground, big, parent_point=(1, 0, 0),
                                  axis=(0, 0, 1)))
    res = mech.assemble().simulate((0.0, 0.5), t_eval=np.linspace(0.0, 0.5, 11))
    sc = build_scene(load_motion(res))
    size = np.linalg.norm(sc.upper - sc.lower)            # includes the shapes' padding
    dims_dot, dims_big = np.asarray(sc.shapes["dot"].dims), np.asarray(sc.shapes["big"].dims)
    assert dims_dot.min() > 1e-3 and dims_big.max() < size
    assert np.allclose(dims_dot / dims_big * MAX_SIDE / MIN_SIDE, 1.0)   # both clipped
    sc2 = build_scene(load_motion(res), shapes={"big": Shape.sphere(2.0)})
    assert sc2.shapes["big"].dims == (2.0,)
    data = scene_data(sc2)
    assert [b["shape"]["kind"] for b in data["bodies"]] == ["box", "sphere"]


@pytest.mark.parametrize("text, kind, dims", [
    ("box:0.1,0.05,0.02", "box", (0.1, 0.05, 0.02)), ("sphere:0.03", "sphere", (0.03,)),
    ("cylinder:0.02,0.3,x", "cylinder", (0.02, 0.3)),
])
def test_shape_strings(text, kind, dims):
    s = Shape.parse(text + "@0,0,0.1#ff0000")
    assert (s.kind, s.dims, s.offset, s.color) == (kind, dims, (0.0, 0.0, 0.1), "#ff0000")


@pytest.mark.parametrize("text", ["box:1,2", "sphere:-1", "cone:1", "box", "cylinder:1,a"])
def test_bad_shape_strings(text):
    from bondgraph import ModelError
    with pytest.raises(ModelError):
        Shape.parse(text)


def test_unknown_names_are_refused(run_dir, tmp_path):
    from bondgraph.errors import NameNotFoundError
    res = run_dir[1]
    with pytest.raises(NameNotFoundError, match="no body 'm9'"):
        res.animate(str(tmp_path / "x.html"), traces=["m9"])
    with pytest.raises(NameNotFoundError, match="no column"):
        res.animate(str(tmp_path / "x.html"), plots=["m2.q"])
    with pytest.raises(NameNotFoundError, match="has no point 'tip'"):
        res.animate(str(tmp_path / "x.html"), traces=["m2:tip"])


# -- contact: the collision shapes and the contact forces -----------------------------------

@pytest.fixture(scope="module")
def crate_dir(tmp_path_factory):
    """A box dropped 1 cm onto a floor while sliding at 1 m/s (friction 0.4): 41 output
    times over 0.4 s, written with its page; four corners in contact, friction while
    it slides."""
    from elements import Inertia, Mechanism, RigidBody
    from elements.contact import Box, ContactLaw, Plane
    m, (a, b, c), g = 2.0, (0.2, 0.1, 0.05), 9.81
    mech = Mechanism("crate", gravity=(0, 0, -g))
    mech.add_body(RigidBody("box", m, Inertia.principal(m * (b * b + c * c) / 3,
                                                         m * (a * a + c * c) / 3,
                                                         m * (a * a + b * b) / 3)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Box("crate", "box", (a, b, c)),
                   ContactLaw(stiffness=1e6, damping=100.0, friction=0.4))
    res = mech.assemble().simulate((0.0, 0.4), free={"box": {
        "position": [0, 0, c + 0.01], "velocity": [1.0, 0, 0]}},
        t_eval=np.linspace(0.0, 0.4, 41), rtol=1e-8, atol=1e-10)
    assert res.success
    out = tmp_path_factory.mktemp("crate")
    paths = res.write(str(out))
    paths["animation"] = res.animate(str(out / "animation.html"))
    return out, res, paths


def _drawn_arrow_matches(drawn: str, point, force, scale: float) -> bool:
    """Whether an arrow as the page reports it (origin and vector, m) starts at
    ``point`` (m) and is ``force`` (N) times ``scale`` (m/N) long: to 1e-6 of its
    length (the page's data keep 7 digits, the report 9) and 1e-7 m."""
    v = np.array([float(x) for x in drawn.split(",")])
    return bool(np.allclose(v[:3], point, rtol=0, atol=1e-7) and
                np.linalg.norm(v[3:] - force * scale) <= 1e-6 * np.linalg.norm(force * scale))


def test_contact_page_data_are_the_contact_history(crate_dir, tmp_path):
    """The page draws the collision shapes on their bodies (the box instead of its
    inertia box) and, per output time, the history's centre of pressure and its normal
    and friction forces (7 digits); the run's directory gives the same data."""
    out, res, paths = crate_dir
    d = page_data(paths["animation"])
    pair = res.contacts().pair("floor", "crate")
    assert [c["kind"] for c in d["collision"]] == ["plane", "box"]
    assert d["collision"][1]["size"][:3] == [0.2, 0.1, 0.05]
    assert d["bodies"][0]["covered"] is True
    (c,) = d["contacts"]
    assert c["pair"] == "floor|crate"
    touching = ~np.isnan(pair.point[0])
    assert touching.sum() > 30 and not touching.all()           # it falls, then lands
    point = np.array([np.nan if v is None else v for v in c["point"]]).reshape(-1, 3).T
    assert np.array_equal(np.isnan(point), np.isnan(pair.point))
    assert np.allclose(point[:, touching], pair.point[:, touching], rtol=1e-6, atol=1e-9)
    normal = np.array(c["normal"]).reshape(-1, 3).T
    friction = np.array(c["friction"]).reshape(-1, 3).T
    assert np.allclose(friction, pair.friction_force, rtol=1e-6, atol=1e-9)
    assert np.allclose(normal, pair.force - pair.friction_force, rtol=1e-6, atol=1e-9)
    assert np.allclose(np.linalg.norm(normal, axis=0), pair.normal_force, rtol=1e-6, atol=1e-9)
    fmax = max(np.linalg.norm(normal, axis=0).max(), np.linalg.norm(friction, axis=0).max())
    assert 0.1 * d["extent"] < fmax * d["contact_scale"] <= 0.25 * d["extent"] * (1 + 1e-12)
    # from the run's files (contacts.csv, mechanism.json): the same page, number for number
    from_files = page_data(__import__("elements").animate(str(out), str(tmp_path / "f.html")))
    for key in ("collision", "contacts", "contact_scale", "bodies"):
        assert from_files[key] == d[key], key
    # the command line, without the arrows: the shapes stay
    p = subprocess.run([sys.executable, "-m", "bondgraph_cli", "animate", str(out), "--out",
                        str(tmp_path / "cli.html"), "--no-contacts"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    cli = page_data(tmp_path / "cli.html")
    assert cli["contacts"] == [] and cli["contact_scale"] is None
    assert cli["collision"] == d["collision"]


def test_contact_arrows_drawn_in_chromium_are_the_contact_forces(chromium, crate_dir,
                                                                 tmp_path):
    """At an output time the page's arrows, read back from the drawn three.js objects
    (their origin, direction and length), are the history's normal and friction forces
    at its centre of pressure, times the legend's scale; the same check with the scale
    1 % off fails."""
    out, res, paths = crate_dir
    d = page_data(paths["animation"])
    pair = res.contacts().pair("floor", "crate")
    k = 20                                                       # t = 0.2 s: sliding
    dom = browse(chromium, f"{Path(paths['animation']).as_uri()}?t={float(res.t[k])!r}",
                 tmp_path).stdout
    row = re.search(r'<span class="contact-readout" data-pair="floor\|crate" '
                    r'data-normal="([^"]*)" data-friction="([^"]*)">', dom)
    assert row, re.findall(r'<span class="contact-readout"[^>]*>', dom)
    normal = pair.force[:, k] - pair.friction_force[:, k]
    friction = pair.friction_force[:, k]
    assert np.linalg.norm(friction) > 0.3 * np.linalg.norm(normal)     # it slides
    scale = d["contact_scale"]
    for drawn, force in ((row.group(1), normal), (row.group(2), friction)):
        assert _drawn_arrow_matches(drawn, pair.point[:, k], force, scale), (drawn, force)
        assert not _drawn_arrow_matches(drawn, pair.point[:, k], force, 1.01 * scale)
    assert f"N = {np.linalg.norm(normal):.4g} N" in dom


def test_contact_video_draws_the_shapes_and_the_arrows(crate_dir, tmp_path):
    """The GIF of the contact run: frames with the contact arrows differ from those
    without only where the arrows are (teal and orange pixels appear)."""
    from PIL import Image
    out = crate_dir[0]
    frames = {}
    for on in (True, False):
        p = animate_video(str(out), str(tmp_path / f"c{on}.gif"), fps=5, t_span=(0.2, 0.4),
                          contacts=on, size=(4.0, 3.0), dpi=80)
        im = Image.open(p)
        im.seek(0)
        frames[on] = np.asarray(im.convert("RGB")).astype(int)
    teal = np.abs(frames[True] - [11, 114, 133]).max(axis=-1) < 40
    assert teal.sum() > 5 and (np.abs(frames[False] - [11, 114, 133]).max(axis=-1) < 40).sum() \
        < teal.sum()
    box = (np.abs(frames[False] - [31, 119, 180]).max(axis=-1) < 40).sum()   # the crate
    assert box > 300


def test_a_pair_with_the_ground_second_is_drawn_on_the_moving_shape():
    """contacts.csv names a pair as the broad phase met it (``s|floor``: forces on the
    floor); the page turns it round (``floor|s``: the same forces, opposite, on the
    sphere), so that arrows act on moving bodies. A pair of two moving shapes stays."""
    from elements.drawing.motion import Motion, MotionBody, MotionContact, MotionShape
    n = 3
    t = np.linspace(0.0, 1.0, n)
    body = MotionBody("ball", 1.0, np.eye(3) * 4e-3, np.zeros((3, n)) + [[0], [0], [0.1]],
                      np.tile([[1.0], [0], [0], [0]], n))
    ground = np.eye(3)
    shapes = [MotionShape("floor", "ground", "plane", np.zeros(4), np.zeros(3), ground),
              MotionShape("s", "ball", "sphere", np.array([0.1, 0, 0, 0]), np.zeros(3),
                          ground),
              MotionShape("t", "ball", "sphere", np.array([0.05, 0, 0, 0]), np.zeros(3),
                          ground)]
    point = np.zeros((3, n))
    down = np.tile([[0.0], [0.0], [-5.0]], n)
    aside = np.tile([[1.0], [0.0], [0.0]], n)
    contacts = {"s|floor": MotionContact("s", "floor", point, down, aside),
                "s|t": MotionContact("s", "t", point, down, aside)}
    motion = Motion("m", t, np.array([0, 0, -9.81]), {"ball": body}, {}, "ground",
                    shapes=shapes, _contacts=lambda: contacts)
    scene = build_scene(motion, plots=[])
    assert sorted(scene.contacts) == ["floor|s", "s|t"]
    assert np.array_equal(scene.contacts["floor|s"]["normal"], -down)
    assert np.array_equal(scene.contacts["floor|s"]["friction"], -aside)
    assert np.array_equal(scene.contacts["s|t"]["normal"], down)
    assert scene.covered == {"ball"}


def test_a_users_slide_is_drawn_as_a_displacement():
    """The page reads a joint's coordinate unit (the contract), not its type name: a
    kind of the user's whose one coordinate is a slide (m) is plotted with the
    displacements and marked with a guide over its range, as a prismatic joint; an
    angle beside it stays with the angles. (Before, a type other than "prismatic" was
    plotted as an angle and drawn as a cube.)"""
    from elements import Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody
    from elements.drawing.scene import build_scene

    class Slider(PrismaticJoint):           # (not registered: the page needs no registry)
        type_name = "slider_test"

    mech = Mechanism("sliders", gravity=(0.0, 0.0, -9.81))
    a = mech.add_body(RigidBody("a", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
    b = mech.add_body(RigidBody("b", 0.5, Inertia.principal(0.01, 0.01, 0.01)))
    mech.add_joint(RevoluteJoint("H", mech.ground, a, axis=(0, 1, 0), child_point=(0.3, 0, 0)))
    mech.add_joint(Slider("S", a, b, axis=(1, 0, 0), spring=50.0))
    mm = mech.assemble()
    res = mm.simulate((0.0, 0.3), x0=mm.initial_state({"H": 0.2, "S": 0.05}),
                      t_eval=np.linspace(0.0, 0.3, 31))
    scene = build_scene(res.motion())
    assert [(p["unit"], [s["name"] for s in p["series"]]) for p in scene.plots] == \
        [("rad", ["H.q"]), ("m", ["S.q"])]
    assert scene.marks == {"H": "revolute", "S": "prismatic"}
    q = res.joint("S").q
    assert scene.guides["S"][0] < q.min() and scene.guides["S"][1] > q.max()
    data = scene_data(scene)
    assert {j["name"]: j["type"] for j in data["joints"]} == {"H": "revolute",
                                                              "S": "prismatic"}
