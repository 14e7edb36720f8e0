"""The 3D page of mode shapes (elements.animate_modes) and ``bondgraph linearize
--modes-page``.

- The page's frame data are the nonlinear kinematics: at frames of each mode, every
  body's embedded position and orientation equal ``forward_kinematics`` at
  q0 + shape sin(w t), the shape and w being the closed form of the point-mass double
  pendulum (1 : sqrt 2 in absolute angles); at 0.6 rad, where the linearised motion of
  the bodies is off by centimetres, so a page built from linear kinematics would fail.
- Each mode is labelled with its frequency (Hz) and damping ratio; a bad mode index
  names the valid range.
- In headless Chromium (as tests/test_animation.py drives it): ``?mode=1&t=...`` shows
  mode 1 at that time (the time shown is within the mode), and the bodies are elsewhere
  than in mode 0 at the same time.
- The command writes the page from a model file; a point that is not an equilibrium
  exits 2 and writes nothing.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bondgraph import ModelError
from bondgraph.spatial import quat_to_matrix
from elements import animate_modes, forward_kinematics, linearize_mechanism, models
from test_animation import VIEW, browse, chromium, page_data, page_requests, pixels  # noqa: F401
from test_mode_shapes import G, point_mass_double_pendulum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
M, L, AMP = 0.7, 0.9, 0.6


@pytest.fixture(scope="module")
def pendulum_page(tmp_path_factory):
    mm = point_mass_double_pendulum(M, L).assemble()
    lin = linearize_mechanism(mm, {"J1": 0.0, "J2": 0.0})
    page = tmp_path_factory.mktemp("modes") / "modes.html"
    animate_modes(mm, lin, page, amplitude=AMP, cycles=1.5, frames_per_cycle=24)
    return mm, lin, page


def test_frames_are_the_nonlinear_kinematics_of_the_closed_form_shapes(pendulum_page):
    mm, _, page = pendulum_page
    d = page_data(page)
    r2 = math.sqrt(2.0)
    closed = [(math.sqrt(G / L * (2 - r2)), np.array([1.0, r2 - 1.0])),
              (math.sqrt(G / L * (2 + r2)), np.array([-1.0 / (r2 + 1.0), 1.0]))]
    assert [m["index"] for m in d["modes"]] == [0, 1]
    bodies = {b["name"]: b for b in d["bodies"]}
    worst, off_linear = 0.0, 0.0
    for mode, (w, shape) in zip(d["modes"], closed):
        assert abs(mode["drawn_frequency"] - w) < 1e-9 * w
        assert f"{w / (2 * math.pi):.6g} Hz" in mode["label"]
        assert "damping ratio 0" in mode["label"]
        assert mode["i1"] - mode["i0"] == 36                       # 1.5 cycles of 24 frames
        for i in np.linspace(mode["i0"], mode["i1"], 7).astype(int):
            t = d["t"][i] - mode["t0"]
            q = AMP * shape * math.sin(w * t)
            fk = forward_kinematics(mm, {"J1": q[0], "J2": q[1]})
            for name in ("bob1", "bob2"):
                pos = np.array(bodies[name]["pos"][3 * i:3 * i + 3])
                quat = np.array(bodies[name]["quat"][4 * i:4 * i + 4])
                worst = max(worst, np.abs(pos - fk[name]).max(),
                            np.abs(quat_to_matrix(quat) - fk[f"{name}.A"]).max())
            # the bobs' linearised positions (small-angle) are off by the curvature
            lin2 = L * np.array([q[0] + (q[0] + q[1]), -2.0])
            off_linear = max(off_linear, np.abs(fk["bob2"][:2] - lin2).max())
    print(f"page frames against forward kinematics: worst {worst:.1e} (7 digits kept); "
          f"linear kinematics would be off by {off_linear:.3f} m")
    assert worst < 2e-6
    assert off_linear > 0.05
    # the joint-coordinate plot shows q0 + shape sin(w t)
    series = {s["name"]: s["y"] for p in d["plots"] for s in p["series"]}
    mode = d["modes"][1]
    i = mode["i0"] + 5
    t = d["t"][i] - mode["t0"]
    assert abs(series["J2.q"][i] - AMP * math.sin(closed[1][0] * t)) < 1e-6


def test_bad_mode_index_names_the_valid_range(pendulum_page, tmp_path):
    mm, lin, _ = pendulum_page
    with pytest.raises(ModelError, match=r"no mode 2; valid: 0\.\.1 \(0: 0\.4022 Hz, "
                                         r"1: 0\.9709 Hz\)"):
        animate_modes(mm, lin, tmp_path / "x.html", modes=[0, 2])
    with pytest.raises(ModelError, match=r"no mode -1; valid: 0\.\.1"):
        animate_modes(mm, lin, tmp_path / "x.html", modes=-1)
    with pytest.raises(ModelError, match=r"frames_per_cycle must be a whole number above 3"):
        animate_modes(mm, lin, tmp_path / "x.html", frames_per_cycle=2)
    single = models.compound_pendulum(1.0, 0.5).assemble()       # J1 only
    with pytest.raises(ModelError, match=r"coordinates J2 are not joint coordinates of "
                                         r"mechanism 'compound_pendulum' \(J1\)"):
        animate_modes(single, lin, tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_page_shows_the_mode_asked_for_in_chromium(chromium, pendulum_page, tmp_path):
    _, _, page = pendulum_page
    url = page.as_uri()
    netlog = str(tmp_path / "net.json")
    dom = browse(chromium, f"{url}?mode=1&t=0.2", tmp_path, netlog=netlog).stdout
    assert 'data-ready="webgl"' in dom and 'data-mode="1"' in dom, dom[:400]
    assert re.search(r'<span id="time">t = 0\.200 s / [0-9.]+ s</span>', dom), \
        re.findall(r'<span id="time">[^<]*</span>', dom)
    info = re.search(r'<div class="row" id="mode-info">(.*?)</div></div>', dom, re.S)
    assert info and "mode 1: 0.9" in info.group(1) and "damping ratio 0" in info.group(1)
    assert page_requests(netlog) == []
    shots = {}
    for key, query in (("a", "mode=0&t=0.2"), ("b", "mode=1&t=0.2"), ("c", "mode=1&t=0.2")):
        shots[key] = str(tmp_path / f"{key}.png")
        browse(chromium, f"{url}?{query}", tmp_path, screenshot=shots[key])
    a, b, c = (pixels(shots[k]) for k in "abc")
    moved = (np.abs(a[VIEW] - b[VIEW]).max(axis=-1) > 40).sum()
    same = (np.abs(b[VIEW] - c[VIEW]).max(axis=-1) > 40).sum()
    print(f"3D view: {moved} pixels differ between modes 0 and 1 at t = 0.2 s, {same} "
          f"between two renderings of mode 1")
    assert moved > 1000 and same < 50


def test_command_writes_the_modes_page(tmp_path):
    model = os.path.join(ROOT, "examples", "three_body_prismatic.toml")
    env = dict(os.environ, PYTHONPATH=ROOT)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "bondgraph", *args], capture_output=True,
                              text=True, env=env, timeout=600)

    out = tmp_path / "lin"
    p = cli("linearize", model, "--out", str(out), "--equilibrium", "--at", "J3=-0.01",
            "--inputs", "J1", "--u0", "J1=0", "--modes-page", "--mode-amplitude", "0.05")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "mode 0: 0 Hz, a rigid-body mode" in p.stdout
    assert "mode 2: 3.55881 Hz" in p.stdout and "J3 0.05 m" in p.stdout
    d = page_data(out / "modes.html")
    assert [m["kind"] for m in d["modes"]] == ["rigid", "oscillatory", "oscillatory"]
    assert json.loads(json.dumps(d["modes"][2]["vector"])) == [[0, 0], [0, 0], [0.05, 0]]
    bad = cli("linearize", model, "--out", str(tmp_path / "bad"), "--at", "J3=0.1",
              "--modes-page")
    assert bad.returncode == 2 and "not an equilibrium" in bad.stderr, bad.stderr
    assert not (tmp_path / "bad").exists()


def test_a_joint_with_two_coordinates_moves_by_each(tmp_path):
    """A body hanging from a universal joint (angles about x, then y): its two swinging
    modes move one angle each; the frames are forward_kinematics of {"U": [a1, a2]}."""
    from elements import Inertia, Mechanism, RigidBody, UniversalJoint
    mech = Mechanism("cardan_pendulum", gravity=(0.0, 0.0, -9.81))
    bob = mech.add_body(RigidBody("bob", 1.0, Inertia.principal(0.015, 0.02, 0.01)))
    mech.add_joint(UniversalJoint("U", mech.ground, bob, child_point=(0, 0, 0.5),
                                  axis=(1, 0, 0), axis2=(0, 1, 0)))
    mm = mech.assemble()
    lin = linearize_mechanism(mm, {})
    d = page_data(animate_modes(mm, lin, tmp_path / "u.html", amplitude=0.3,
                                frames_per_cycle=8, cycles=1))
    # about y the bob's 0.02 kg m^2 adds to m l^2: that mode is the slower one
    assert [m["coordinates"] for m in d["modes"]] == [["U.angle1", "U.angle2"]] * 2
    assert [m["vector"] for m in d["modes"]] == [[[0, 0], [0.3, 0]], [[0.3, 0], [0, 0]]]
    pos = np.array(d["bodies"][0]["pos"]).reshape(-1, 3)
    for mode in d["modes"]:
        for i in range(mode["i0"], mode["i1"] + 1, 3):
            s = 0.3 * math.sin(mode["drawn_frequency"] * (d["t"][i] - mode["t0"]))
            angles = [s, 0.0] if mode["vector"][0][0] else [0.0, s]
            fk = forward_kinematics(mm, {"U": angles})
            assert np.abs(pos[i] - fk["bob"]).max() < 1e-6
