"""Contact against closed forms and a second route.

The law (elements.contact.law): N = k d^n (1 + lambda d') >= 0 at each contact point,
friction mu N regularised below the slip velocity v_s. Bodies start at their static
penetration d0 = (m g / k)^(1/n) (per point), so that no vertical transient disturbs the
closed forms of rigid contact. What the compliance and the regularisation cost is
estimated per test (the tolerances say it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from bondgraph import ModelError
from elements import Inertia, Mechanism, RigidBody
from elements.contact import (
    Box, ContactLaw, Cylinder, Plane, Sphere, restitution,
)

G = 9.81


def _ball(mu=0.3, *, r=0.1, m=1.0, k=1e6, n=1.5, damping=0.0, gravity=(0, 0, -G),
          slip=1e-4, law=None):
    mech = Mechanism("ball", gravity=gravity)
    inertia = 0.4 * m * r * r
    mech.add_body(RigidBody("ball", m, Inertia.principal(inertia, inertia, inertia)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Sphere("s", "ball", r), ContactLaw(stiffness=k, exponent=n,
                                                      damping=damping, friction=mu,
                                                      slip_velocity=slip, **(law or {})))
    return mech.assemble()


def _run(mm, t_end, body, position, velocity=(0, 0, 0), points=101, **kw):
    kw.setdefault("rtol", 1e-9)
    kw.setdefault("atol", 1e-11)
    return mm.simulate((0.0, t_end), free={body: {"position": list(position),
                                                 "velocity": list(velocity)}},
                       t_eval=np.linspace(0.0, t_end, points), **kw)


def test_a_sliding_sphere_rolls_at_five_sevenths_and_friction_takes_the_energy_lost():
    """A solid sphere thrown along the ground without spin slides until
    t* = 2 v0 / (7 mu g), then rolls at 5/7 v0: x(T) = 5/7 v0 T + 1/7 v0 t* after t*.
    The friction's work is the kinetic energy lost, m v0^2 / 7. Tolerances: the
    regularisation lets the rolling sphere creep at about v_s (1e-4 m/s) times the
    (vanishing) friction it needs, and the sliding friction differs from mu N by
    v_s^2 / (2 v^2) < 1e-6 until the last microseconds: 1e-6 m on x, 1e-6 relative on
    speed and energy. mu 1 % off moves x(T) by v0 t* / 700 = 5.5e-4 m."""
    m, r, mu, v0 = 1.0, 0.1, 0.3, 2.0
    mm = _ball(mu, r=r, m=m)
    d0 = (m * G / 1e6) ** (1 / 1.5)
    ts = 2 * v0 / (7 * mu * G)
    T = 1.3 * ts
    res = _run(mm, T, "ball", [0, 0, r - d0], [v0, 0, 0])
    assert res.success
    x = res.body("ball").position[0, -1]
    assert abs(x - (5 / 7 * v0 * T + v0 * ts / 7)) < 1e-6
    v = res.body("ball").velocity[0, -1]
    assert abs(v / (5 / 7 * v0) - 1) < 1e-6
    lost = res.energy.dissipated["contact"][-1]
    assert abs(lost / (m * v0 ** 2 / 7) - 1) < 1e-6
    assert res.energy.relative_drift < 1e-7
    # the contact report: one point, the weight on it, friction while sliding
    pair = res.contacts().pair("floor", "s")
    assert np.allclose(pair.normal_force, m * G, rtol=1e-6)
    sliding = res.t < 0.9 * ts
    assert np.allclose(pair.friction_force[0, sliding], -mu * m * G, rtol=1e-5)
    assert np.all(pair.count == 1)


def test_a_cylinder_on_its_side_rolls_at_two_thirds():
    """A cylinder lying on its side: t* = v0 / (3 mu g), then 2/3 v0;
    x(T) = 2/3 v0 T + 1/6 v0 t*. Two contact points (the ends of the line of contact)
    share the weight."""
    m, r, L, mu, v0 = 2.0, 0.05, 0.2, 0.4, 1.5
    k, n = 2e6, 1.0
    mech = Mechanism("roller", gravity=(0, 0, -G))
    i_axis, i_cross = 0.5 * m * r * r, m * (3 * r * r + L * L) / 12
    mech.add_body(RigidBody("cyl", m, Inertia.principal(i_cross, i_axis, i_cross)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Cylinder("c", "cyl", r, L, rotation=[np.pi / 2, 0, 0]),
                   ContactLaw(stiffness=k, exponent=n, damping=0.0, friction=mu))
    mm = mech.assemble()
    d0 = m * G / 2 / k
    ts = v0 / (3 * mu * G)
    T = 1.4 * ts
    res = _run(mm, T, "cyl", [0, 0, r - d0], [v0, 0, 0])
    assert res.success
    assert abs(res.body("cyl").position[0, -1] - (2 / 3 * v0 * T + v0 * ts / 6)) < 2e-6
    assert abs(res.body("cyl").velocity[0, -1] / (2 / 3 * v0) - 1) < 1e-6
    assert np.all(res.contacts().pair("floor", "c").count == 2)


@pytest.mark.parametrize("alpha, mu, rolls", [(20.0, 0.5, True), (40.0, 0.1, False)])
def test_a_sphere_on_an_incline_rolls_or_slips_as_tan_alpha_compares_with_seven_mu_over_two(
        alpha, mu, rolls):
    """On an incline of angle alpha (gravity tilted by alpha over a level floor), a
    sphere released at rest rolls with a = 5/7 g sin(alpha) when tan(alpha) <= 7 mu / 2,
    else slips with a = g (sin(alpha) - mu cos(alpha)): x(T) = a T^2 / 2. Rolling, the
    regularisation lets the contact creep at v_s (2/7 tan(alpha) / mu) < 3e-5 m/s:
    x within 1e-5 of 0.2 m at T = 0.4 s."""
    a_ = math.radians(alpha)
    g_vec = (G * math.sin(a_), 0.0, -G * math.cos(a_))
    m, r = 1.0, 0.1
    mm = _ball(mu, r=r, m=m, gravity=g_vec)
    d0 = (m * G * math.cos(a_) / 1e6) ** (1 / 1.5)
    T = 0.4
    # Radau: rolling, the regularised friction is a stiff damper (mu N / (m v_s) ~ 5e4/s);
    # DOP853 gives the same x to 1e-15 m in 9453 steps instead of 173
    res = _run(mm, T, "ball", [0, 0, r - d0], points=41, method="Radau")
    assert res.success
    acc = 5 / 7 * G * math.sin(a_) if rolls else G * (math.sin(a_) - mu * math.cos(a_))
    x = res.body("ball").position[0, -1]
    assert abs(x - 0.5 * acc * T * T) < 1e-5 * max(1.0, x)
    assert (math.tan(a_) <= 3.5 * mu) == rolls


def _box(mu=0.4, *, m=2.0, h=(0.2, 0.1, 0.05), k=1e6, damping=5.0):
    mech = Mechanism("crate", gravity=(0, 0, -G))
    a, b, c = h
    mech.add_body(RigidBody("box", m, Inertia.principal(m * (b * b + c * c) / 3,
                                                         m * (a * a + c * c) / 3,
                                                         m * (a * a + b * b) / 3)))
    mech.add_shape(Plane("floor"))
    mech.add_shape(Box("crate", "box", h), ContactLaw(stiffness=k, damping=damping,
                                                      friction=mu))
    return mech.assemble()


def test_a_pushed_box_stops_after_v0_squared_over_two_mu_g_pressing_harder_in_front():
    """A box sliding on its bottom face stops after v0^2 / (2 mu g). Its corners' normal
    forces sum to m g, and the friction's moment about the centre (mu m g times the half
    height c) moves the centre of pressure ahead by mu c. Tolerances: the box pitches by
    about mu m g c / (k a^2) while sliding and settles (damped): 1e-5 m on the distance
    (0.13 m), 2e-4 m on the centre of pressure (8 mm)."""
    m, (a, b, c), mu, v0 = 2.0, (0.2, 0.1, 0.05), 0.4, 1.0
    mm = _box(mu, m=m, damping=100.0)     # (the pitch mode the start excites dies fast)
    d0 = m * G / 4 / 1e6
    t_stop = v0 / (mu * G)
    res = _run(mm, 1.5 * t_stop, "box", [0, 0, c - d0], [v0, 0, 0], points=151,
               rtol=1e-8, atol=1e-10)
    assert res.success
    assert abs(res.body("box").position[0, -1] - v0 ** 2 / (2 * mu * G)) < 1e-5
    pair = res.contacts().pair("floor", "crate")
    sliding = (res.t > 0.2 * t_stop) & (res.t < 0.8 * t_stop)
    assert np.allclose(pair.normal_force[sliding], m * G, rtol=1e-4)
    ahead = pair.point[0, sliding] - res.body("box").position[0, sliding]
    assert np.allclose(ahead, mu * c, atol=2e-4)
    assert np.all(pair.count[sliding] == 4)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_the_implicit_methods_slide_a_box_to_its_stop(method):
    """The implicit methods that the stiffness warning recommends run contact to the
    end: the box pushed at 1 m/s stops after v0^2 / (2 mu g) under Radau and BDF as
    under DOP853 (1e-5 m, as above). They failed on this with NON_FINITE (Radau at t =
    0.19 s) when their Jacobian was dense differences over every state, work states
    included."""
    m, c, mu, v0 = 2.0, 0.05, 0.4, 1.0
    mm = _box(mu, m=m, damping=100.0)
    d0 = m * G / 4 / 1e6
    res = _run(mm, 1.5 * v0 / (mu * G), "box", [0, 0, c - d0], [v0, 0, 0], points=31,
               method=method, rtol=1e-8, atol=1e-10)
    assert res.success, res.message
    assert abs(res.body("box").position[0, -1] - v0 ** 2 / (2 * mu * G)) < 1e-5


def test_a_box_at_rest_presses_its_weight_for_ten_seconds_without_drifting():
    """A box resting on the ground for 10 s: the summed normal force is its weight to
    1e-6 and the penetration stays at m g / (4 k) per corner (to 1e-12 m)."""
    m, c = 2.0, 0.05
    mm = _box(m=m)
    d0 = m * G / 4 / 1e6
    res = _run(mm, 10.0, "box", [0, 0, c - d0], points=21)
    assert res.success
    pair = res.contacts().pair("floor", "crate")
    assert np.allclose(pair.normal_force, m * G, rtol=1e-6)
    assert np.allclose(pair.depth, d0, rtol=0, atol=1e-12)


def test_an_impact_rebounds_with_the_laws_restitution():
    """Without gravity a ball hitting the ground at v_in leaves at e v_in, e from Hunt
    and Crossley's phase-plane integral (restitution(lambda, v_in), exact for the law,
    any k and n): to 1e-6. The damping that gives e = 0.8 at 2 m/s
    (ContactLaw.for_restitution) gives it back."""
    v_in, e = 2.0, 0.8
    law = ContactLaw.for_restitution(e, v_in, stiffness=1e6, exponent=1.5, friction=0.0)
    assert abs(restitution(law.damping, v_in) - e) < 1e-12
    mm = _ball(0.0, k=1e6, n=1.5, damping=law.damping, gravity=(0, 0, 0))
    res = _run(mm, 0.02, "ball", [0, 0, 0.1 + 0.01], [0, 0, -v_in], points=201)
    assert res.success
    vz = res.body("ball").velocity[2, -1]
    assert abs(vz / (e * v_in) - 1) < 1e-6
    # the energy the damping took is the kinetic energy lost
    lost = res.energy.dissipated["contact"][-1]
    assert abs(lost / (0.5 * (v_in ** 2 - vz ** 2)) - 1) < 1e-6


def test_a_dropped_ball_bounces_as_a_one_dimensional_model_of_the_same_law():
    """A ball dropped from 0.3 m with gravity, against an independent 1-D model of the
    same law (m z'' = -m g + N(d, d'), scipy's DOP853 at 1e-12): heights to 1e-7 m over
    three bounces; and the stored plus dissipated energy closes the ledger."""
    m, r, k, n = 1.0, 0.1, 1e6, 1.5
    law = ContactLaw.for_restitution(0.7, 2.0, stiffness=k, exponent=n, friction=0.0)
    mm = _ball(0.0, r=r, m=m, k=k, n=n, damping=law.damping)
    T = 0.9
    res = _run(mm, T, "ball", [0, 0, 0.3], points=91)
    assert res.success

    def one_d(t, y):
        z, v = y
        d = r - z
        N = max(k * d ** n * (1 - law.damping * v), 0.0) if d > 0 else 0.0
        return [v, -G + N / m]

    ref = solve_ivp(one_d, (0, T), [0.3, 0.0], method="DOP853", rtol=1e-12, atol=1e-14,
                    t_eval=res.t, max_step=1e-3)
    assert np.abs(res.body("ball").position[2] - ref.y[0]).max() < 1e-7
    assert res.energy.relative_drift < 1e-6


@pytest.mark.parametrize("make, field", [
    (lambda: Sphere("s", "ball", -0.1), "radius"),
    (lambda: ContactLaw(friction=-0.2, owner="shape 's'"), "friction"),
    (lambda: ContactLaw(stiffness=0.0, owner="shape 's'"), "stiffness"),
    (lambda: ContactLaw(slip_velocity=0.0, owner="shape 's'"), "slip_velocity"),
    (lambda: ContactLaw(rolling=-1e-3, owner="shape 's'"), "shape 's': rolling"),
    (lambda: ContactLaw(torsion=float("nan"), owner="shape 's'"), "shape 's': torsion"),
    (lambda: ContactLaw(spin_velocity=0.0, owner="shape 's'"), "spin_velocity"),
])
def test_bad_contact_input_names_the_shape_and_the_field(make, field):
    with pytest.raises(ModelError, match=field):
        make()


def test_a_shape_on_a_missing_body_or_a_plane_on_a_body_is_refused_by_name():
    mech = Mechanism("m", gravity=(0, 0, -G))
    mech.add_body(RigidBody("ball", 1.0, Inertia.principal(1e-3, 1e-3, 1e-3)))
    with pytest.raises(ModelError, match=r"shape 'heel': body 'bal' .*did you mean 'ball'"):
        mech.add_shape(Sphere("heel", "bal", 0.1))
    with pytest.raises(ModelError, match=r"shape 'tilt': a plane .* on 'ground'"):
        mech.add_shape(Plane("tilt", body="ball"))
    with pytest.raises(ModelError, match="ContactLaw"):
        mech.add_shape(Sphere("s", "ball", 0.1), law=0.5)


def test_contact_forces_are_written_with_the_other_histories(tmp_path):
    """contacts.csv (and the MAT file) hold each pair's normal force, force, centre of
    pressure, depth, slip and point count: the ball resting on the floor presses m g."""
    import csv

    import scipy.io
    m, r = 1.0, 0.1
    mm = _ball(0.3, r=r, m=m)
    d0 = (m * G / 1e6) ** (1 / 1.5)
    res = _run(mm, 0.05, "ball", [0, 0, r - d0], points=6)
    paths = res.write(str(tmp_path), stem="rest")
    with open(paths["contacts"]) as f:
        rows = list(csv.DictReader(f))
    assert abs(float(rows[-1]["floor|s.N"]) - m * G) < 1e-6 * m * G
    assert float(rows[-1]["floor|s.count"]) == 1.0
    assert abs(float(rows[-1]["floor|s.depth"]) - d0) < 1e-9
    mat = scipy.io.loadmat(paths["mat"])
    assert abs(float(np.ravel(mat["flooru007cs_N"])[-1]) - m * G) < 1e-6 * m * G
    # the JSON files: the columns' units, and the shapes for a page drawn from the files
    import json
    units = json.load(open(paths["units"]))
    assert units["floor|s.N"]["unit"] == "N" and units["floor|s.Ftx"]["frame"] == "global"
    assert set(rows[0]) - {"t"} <= set(units)             # every column has its unit
    shapes = json.load(open(paths["mechanism"]))["shapes"]
    assert [(s["name"], s["body"], s["kind"], s["size"][0]) for s in shapes] == \
        [("floor", "ground", "plane", 0.0), ("s", "ball", "sphere", r)]
    # the data frame's columns: the contacts' beside the bodies' (as the reactions)
    cols = res.motion().columns()
    assert np.array_equal(cols["floor|s.N"], res.contacts().pair("floor", "s").normal_force)


def test_the_compiled_wrenches_equal_the_python_evaluation():
    """The right-hand side's compiled contact wrenches (elements.contact.compiled) equal
    the Python evaluation (BoundContacts.evaluate: the records' sums) at random states of
    a scene with every kind of shape, on the floor and on each other. Both call the same
    compiled geometry; the shapes' poses differ by rounding (1e-16), which EPA's
    iteration on a cylinder's curved side (its normal converges to about 1e-5,
    docs/contact.md) can move by more: 1e-6 of the largest force (seen 7e-8). The laws
    have rolling and torsional resistance too. A wrong law (friction, rolling or torsion
    doubled in the packed arrays) is caught."""
    from bondgraph import fastlu
    from bondgraph.element import StateView
    from elements.contact import Capsule, ConvexMesh
    if not fastlu.enabled():
        pytest.skip("numba is not enabled here: there is no compiled path to compare")
    mech = Mechanism("pile", gravity=(0, 0, -G))
    shapes = [Sphere("sph", "a", 0.1), Box("box", "b", [0.1, 0.08, 0.06]),
              Capsule("cap", "c", 0.05, 0.2), Cylinder("cyl", "d", 0.08, 0.1),
              ConvexMesh("mesh", "e", np.random.default_rng(1).normal(size=(12, 3)) * 0.08)]
    for s in shapes:
        mech.add_body(RigidBody(s.body, 1.0, Inertia.principal(0.01, 0.012, 0.014)))
        mech.add_shape(s, ContactLaw(stiffness=1e5, damping=2.0, friction=0.6,
                                     rolling=0.02, torsion=0.01))
    mech.add_shape(Plane("floor"))
    mm = mech.assemble()
    bound = mm.index.contact.bind(mm.parameters)
    assert bound._packed is not None
    rng = np.random.default_rng(5)
    slices = mm.model.state_slices
    checked = 0
    for _ in range(40):
        free = {s.body: {"position": rng.uniform([-0.1, -0.1, 0.0], [0.1, 0.1, 0.15]),
                         "rotation": rng.normal(size=3),
                         "velocity": rng.normal(size=3),
                         "angular_velocity": rng.normal(size=3)} for s in shapes}
        x = mm.initial_state(free=free)
        view = StateView(x, slices)
        W = bound.wrench(view)
        py, records = bound.evaluate(view)
        ref = np.array([py[b] for b in mm.index.contact.bodies])
        scale = max(1.0, float(np.abs(ref).max()))
        assert np.abs(W - ref).max() <= 1e-6 * scale
        checked += len(records)
    assert checked > 40                   # contacts of many kinds were compared
    for column in (3, 5, 6):               # friction, rolling, torsion doubled: seen
        bound._packed.laws[:, column] *= 2.0
        bound._last_wrench = None
        assert np.abs(bound.wrench(view) - ref).max() > 1e-6 * scale or not records
        bound._packed.laws[:, column] /= 2.0


URDF_CRATE = """<robot name="crate">
  <link name="body">
    <inertial><mass value="2.0"/><origin xyz="0 0 0"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision name="hull"><origin xyz="0 0 0"/><geometry><box size="0.4 0.2 0.1"/></geometry></collision>
    <collision name="knob"><origin xyz="0 0 0.1" rpy="0 0 0"/><geometry><sphere radius="0.02"/></geometry></collision>
    <collision name="part"><geometry><mesh filename="part.stl"/></geometry></collision>
  </link>
</robot>"""


def test_urdf_collision_primitives_rest_on_a_floor_with_their_weight():
    """A floating URDF link with a <collision> box (and a sphere, and a mesh that is
    reported as not imported) rests on a floor the user adds: the box's four corners
    carry its weight (to 1e-6), at the static penetration m g / (4 k)."""
    from elements import loads_urdf
    plain = loads_urdf(URDF_CRATE, floating_base=True)
    assert not plain.shapes
    assert plain.import_report.not_imported[
        "collision geometry (contacts=True imports its primitives)"] == ["hull", "knob",
                                                                          "part"]
    law = ContactLaw(stiffness=1e6, damping=5.0, friction=0.5)
    mech = loads_urdf(URDF_CRATE, floating_base=True, contacts=True, contact_law=law,
                      warn=False)
    assert isinstance(mech.shapes["hull"], Box) and isinstance(mech.shapes["knob"], Sphere)
    assert np.allclose(mech.shapes["hull"].params[:3], [0.2, 0.1, 0.05])
    assert "part" in next(v for k, v in mech.import_report.not_imported.items()
                          if k.startswith("mesh"))
    mech.add_shape(Plane("floor"))
    mm = mech.assemble()
    body = next(iter(mech.bodies))
    d0 = 2.0 * G / 4 / 1e6
    res = _run(mm, 1.0, body, [0, 0, 0.05 - d0], points=11)
    assert res.success
    pair = res.contacts().pair("floor", "hull")
    assert np.allclose(pair.normal_force, 2.0 * G, rtol=1e-6)
    assert np.all(pair.count == 4)


def _pellet(v, mech=None, plate=Box, **kw):
    """A pellet (5 mm, 10 g) shot along x at ``v`` (m/s) without gravity at a plate 2 mm
    thick fixed 0.3 m ahead (``plate``: a Box, or an Ellipsoid of the same semi-axes);
    no friction, no damping; stiff enough (5e7 N/m in series) to stop it within 1.5 mm.
    ``mech``: in that mechanism (gravity 0) instead."""
    mech = mech or Mechanism("shot", gravity=(0, 0, 0))
    m, r = 0.01, 0.005
    mech.add_body(RigidBody("pellet", m, Inertia.principal(*[0.4 * m * r * r] * 3)))
    mech.add_shape(plate("plate", "ground", (0.001, 0.2, 0.2), position=(0.3, 0, 0)),
                   ContactLaw(stiffness=1e8, damping=0.0, friction=0.0))
    mech.add_shape(Sphere("ball", "pellet", r), ContactLaw(stiffness=1e8, damping=0.0,
                                                            friction=0.0))
    T = 0.6 / v
    return mech.assemble().simulate((0.0, T), free={"pellet": {
        "position": [0, 0, 0], "velocity": [v, 0, 0]}}, t_eval=np.linspace(0, T, 7), **kw)


def test_a_fast_pellet_never_passes_through_a_thin_plate_unnoticed(monkeypatch):
    """In free flight nothing limits the step, and one step carries the pellet through
    the plate (2 mm) without a state in contact. The run ends in a failure naming both
    shapes, the speed and the step that would see the plate (elements.contact.tunnelling),
    not in SUCCESS; with that max_step the pellet bounces back at -v (elastic: to 1e-6).
    Without the watch (its event made silent) the same run reports SUCCESS with the
    pellet 0.3 m beyond the plate: what the watch is for."""
    from bondgraph import IntegrationError, IntegrationWarning
    from elements.contact.tunnelling import TunnelWatch
    v = 100.0
    with pytest.warns(IntegrationWarning, match="tunnelling"):
        res = _pellet(v)
    assert not res.success and res.raw.status.name == "STEP_FAILED"
    assert "shape 'ball' entered shape 'plate'" in res.raw.message
    assert "at 100 m/s" in res.raw.message and "max_step below 1e-05 s" in res.raw.message
    assert res.body("pellet").position[0, -1] < 0.3            # stopped at the plate
    with pytest.raises(IntegrationError, match="tunnelling"):
        _pellet(v, raise_on_failure=True)
    res = _pellet(v, max_step=1e-5)
    assert res.success
    assert abs(res.body("pellet").velocity[0, -1] / -v - 1) < 1e-6
    # a run that switches modes (a pendulum with joint friction beside): watched too
    from elements import models
    pendulum = models.compound_pendulum(m=1.0, l=0.6)
    pendulum.gravity = np.zeros(3)
    pendulum.joint("J1").add_friction(0.01)
    with pytest.warns(IntegrationWarning, match="tunnelling"):
        res = _pellet(v, pendulum, q={"J1": 0.3})
    assert res.raw.status.name == "STEP_FAILED" and "'ball' entered shape 'plate'" in \
        res.raw.message and res.raw.failure_time < 0.3 / v
    # an ellipsoid plate (semi-axes 1, 200, 200 mm) is watched as the box is
    from elements.contact import Ellipsoid
    with pytest.warns(IntegrationWarning, match="tunnelling"):
        res = _pellet(v, plate=Ellipsoid)
    assert res.raw.status.name == "STEP_FAILED" and "'ball' entered shape 'plate'" in \
        res.raw.message and "max_step below 1e-05 s" in res.raw.message
    assert _pellet(v, plate=Ellipsoid, max_step=1e-5).success
    monkeypatch.setattr(TunnelWatch, "__call__", lambda self, t, x: 1.0)
    res = _pellet(v)
    assert res.success and res.body("pellet").position[0, -1] > 0.59


def test_rolling_resistance_decelerates_a_rolling_sphere_at_five_sevenths_c_g_over_r():
    """A solid sphere rolling at v0 with rolling resistance c (the moment c N opposing
    its rolling) decelerates uniformly: I w' = -r F - c m g with m v' = F and v = w r
    gives a = 5 c g / (7 r). The friction it needs (m a) makes the contact creep at
    v_s m a / (mu m g) = 4.8e-6 m/s; building that slip at the start takes 1/3.5 of it
    from v (the impulse J changes v - w r by 3.5 J / m): 1.4e-6 m/s, so 3e-6 on v and
    x after 1 s. With c 1 % larger the prediction moves by 1.4e-3 m/s. The energy lost
    is what the rolling resistance dissipated (the ledger's contact term, to 1e-6)."""
    m, r, c, v0, T = 1.0, 0.1, 0.002, 1.0, 1.0
    mm = _ball(0.3, r=r, m=m, law={"rolling": c})
    d0 = (m * G / 1e6) ** (1 / 1.5)
    res = mm.simulate((0.0, T), free={"ball": {
        "position": [0, 0, r - d0], "velocity": [v0, 0, 0],
        "angular_velocity": [0, v0 / r, 0]}}, t_eval=np.linspace(0, T, 11),
        method="Radau", rtol=1e-9, atol=1e-11)
    assert res.success
    v, x = res.body("ball").velocity[0], res.body("ball").position[0]
    for coeff, holds in ((c, True), (1.01 * c, False)):     # the right c; 1 % off
        a = 5 * coeff * G / (7 * r)
        assert bool(np.abs(v - (v0 - a * res.t)).max() < 3e-6) is holds
        assert bool(np.abs(x - (v0 * res.t - a * res.t ** 2 / 2)).max() < 3e-6) is holds
    I = 0.4 * m * r * r
    w = res.body("ball").angular_velocity[1]
    lost = 0.5 * m * (v0 ** 2 - v[-1] ** 2) + 0.5 * I * ((v0 / r) ** 2 - w[-1] ** 2)
    assert abs(res.energy.dissipated["contact"][-1] / lost - 1) < 1e-6
    assert res.energy.relative_drift < 1e-7


def test_torsional_resistance_stops_a_spinning_sphere_at_the_predicted_time():
    """A sphere spinning about the vertical at w0 on the ground, torsional resistance
    c_n: the moment c_n m g stops it at t* = I w0 / (c_n m g) = 0.408 s, w falling
    linearly until then (the contact point sits on the axis: no friction) and staying
    at zero after (below the spin velocity w_s = 1e-3 rad/s the moment is a damper of
    rate c_n m g / (I w_s) = 2.5e4 /s: settled within a millisecond). The
    regularisation's moment falls short of c_n m g by w_s^2 / (2 w^2) of it, which by
    the time the spin is w adds up to w_s^2 / (2 w): 2.6e-6 rad/s at 0.19 rad/s, the
    last output time before t*; the test allows 1e-7 + w_s^2 / w (seen 5e-8 at 0.2 s).
    With c_n 1 % off the prediction at 0.4 s moves by 0.1 rad/s. The spin's kinetic
    energy is the contact's dissipation (to 1e-9)."""
    m, r, cn, w0, T = 1.0, 0.1, 0.01, 10.0, 0.6
    mm = _ball(0.3, r=r, m=m, law={"torsion": cn})
    d0 = (m * G / 1e6) ** (1 / 1.5)
    res = mm.simulate((0.0, T), free={"ball": {
        "position": [0, 0, r - d0], "angular_velocity": [0, 0, w0]}},
        t_eval=np.linspace(0, T, 61), method="Radau", rtol=1e-9, atol=1e-11)
    assert res.success
    I = 0.4 * m * r * r
    w = res.body("ball").angular_velocity[2]
    ws = 1e-3                                 # the law's spin velocity (default), rad/s

    def agrees(coeff):
        pred = np.maximum(w0 - coeff * m * G / I * res.t, 0.0)
        on = pred > 0.1                       # (the last output time before t*: 0.19)
        return bool(np.all(np.abs(w - pred)[on] < 1e-7 + ws ** 2 / pred[on]) and
                    np.all(np.abs(w[pred == 0.0]) < 1e-9) and on.sum() + (pred == 0).sum()
                    == w.size)
    assert agrees(cn) and not agrees(1.01 * cn)
    assert 0.40 < I * w0 / (cn * m * G) < 0.41 and w[40] > 0.1 and abs(w[41]) < 1e-9
    assert abs(res.energy.dissipated["contact"][-1] / (0.5 * I * w0 ** 2) - 1) < 1e-9
    # the report: the moment c_n m g against the spin while it turns (on the ball)
    moment = res.contacts().pair("floor", "s").moment
    assert np.allclose(moment[2, 1:36], -cn * m * G, rtol=1e-6)   # (w > 1.4: w_s^2 / w^2)
    assert np.abs(moment[:2]).max() < 1e-12 and abs(moment[2, -1]) < 1e-9
