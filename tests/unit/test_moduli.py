"""bondgraph.moduli: the batched evaluation of moduli, their rates, Phi and kinematic
rates equals the elements called one by one (Modulus.value_at / rate_at,
PositionConstraint.value_at, KinematicState.rate).

The formulas themselves are checked elsewhere against independent references (modulus
rates against central differences and reactions against Newton-Euler in
tests/validation/test_multibody.py, the three-body motion against a Kane model); here the
question is only whether stacking the instances of each kernel form, gathering the
states and scattering the results puts every number where the one-by-one evaluation
puts it. Both compute the same products in the same order, so they agree to a few
rounding errors (1e-13 relative is 500 eps).
"""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import (
    MTF, BondGraph, ModelError, ModulusContext, OneJunction, I, Se, KinematicState,
    ZeroJunction, assemble, assign_causality,
)
from bondgraph.spatial import as_rotation
from elements import (
    BodyMoment, FixedJoint, GimbalJoint, Inertia, Mechanism, PointForce, PrismaticJoint,
    RevoluteJoint, RigidBody, ScrewJoint, SphericalJoint, UniversalJoint, models,
)
from mechanisms import random_unit_state


def _every_kind():
    """Every joint type with compiled kernels (all but the chain joint, whose inverse
    kinematics is numpy's) with ground and body parents, points on and off the centres,
    and every load in both frames."""
    m = Mechanism("every_kind", gravity=(0.0, 0.0, -9.81))
    box = Inertia.principal(0.01, 0.02, 0.03)
    bodies = [m.add_body(RigidBody(f"b{i}", 1.0 + 0.1 * i, box)) for i in range(15)]
    g = m.ground
    m.add_joint(RevoluteJoint("R0", g, bodies[0], child_point=(0.0, 0.0, 0.1), axis=(0, 0, 1)))
    m.add_joint(RevoluteJoint("R1", bodies[0], bodies[1], parent_point=(0.1, 0, 0),
                              child_point=(0, 0.1, 0.05), axis=(1, 2, 0.5)))
    m.add_joint(PrismaticJoint("P0", g, bodies[2], axis=(0, 1, 1)))
    m.add_joint(PrismaticJoint("P1", bodies[1], bodies[3], parent_point=(0.0, 0.2, 0.0),
                               child_point=(0.05, 0.0, 0.02), axis=(1, 0, 0)))
    m.add_joint(SphericalJoint("S0", g, bodies[4], parent_point=(1.0, 0.0, 0.0),
                               child_point=(0.0, 0.0, 0.3)))
    m.add_joint(SphericalJoint("S1", bodies[4], bodies[5], child_point=(0.1, 0.1, 0.1)))
    m.add_joint(FixedJoint("F0", bodies[5], bodies[6], parent_point=(0.2, 0.0, 0.0)))
    m.add_joint(FixedJoint("F1", g, bodies[7], parent_point=(0.0, -1.0, 0.0),
                           child_point=(0.0, 0.0, 0.1)))
    # universal (perpendicular and oblique axes), gimbal and screw joints
    m.add_joint(UniversalJoint("U0", g, bodies[8], child_point=(0.02, 0.0, 0.2),
                               axis=(1, 0, 0), axis2=(0, 1, 0)))
    m.add_joint(UniversalJoint("U1", bodies[8], bodies[9], parent_point=(0, 0, -0.2),
                               child_point=(0.01, 0.02, 0.1), axis=(0, 0, 1),
                               axis2=(1, 1, 0.7),
                               rest_rotation=as_rotation([0.2, -0.1, 0.3])))
    m.add_joint(GimbalJoint("G0", bodies[0], bodies[10], parent_point=(0.1, 0.2, 0.0),
                            child_point=(0.05, 0.0, 0.1), axis=(0, 0, 1), axis2=(1, 1, 0),
                            axis3=(1, -1, 0.2)))
    m.add_joint(ScrewJoint("W0", g, bodies[11], parent_point=(0.0, 1.0, 0.0),
                           child_point=(0.006, -0.004, 0.01), axis=(0.1, 0.0, 1.0),
                           pitch=0.01))
    m.add_joint(ScrewJoint("W1", bodies[11], bodies[12], child_point=(0.0, 0.0, 0.1),
                           axis=(0.2, 1.0, -0.3), pitch=-0.03,
                           rest_rotation=as_rotation([0.1, 0.2, 0.3])))
    # universal joints whose axes do not meet (GapRow, GapLength), from the ground and
    # from a body
    m.add_joint(UniversalJoint("V0", g, bodies[13], parent_point=(0.3, 0.0, 0.5),
                               child_point=(0.0, 0.05, 0.1), axis=(0, 1, 0),
                               axis2=(1, 0, 0.3), axis2_offset=(0.02, 0.03, -0.06)))
    m.add_joint(UniversalJoint("V1", bodies[13], bodies[14], parent_point=(0, 0, -0.1),
                               child_point=(0.01, 0.0, 0.1), axis=(1, 0, 0.2),
                               axis2=(0, 1, 0), axis2_offset=(0.0, 0.04, -0.05),
                               rest_rotation=as_rotation([0.1, 0.2, -0.3])))
    m.add_load(PointForce("fg", bodies[1], (0.1, 0.0, 0.2), [1.0, 0.0, -2.0]))
    m.add_load(PointForce("fb", bodies[3], (0.0, 0.1, 0.0), [0.0, 3.0, 1.0], frame="body"))
    m.add_load(PointForce("f0", bodies[0], (0.0, 0.0, 0.0), [0.5, 0.0, 0.0], frame="body"))
    m.add_load(BodyMoment("mg", bodies[2], [0.1, 0.2, 0.3]))
    m.add_load(BodyMoment("mb", bodies[6], [0.3, -0.2, 0.1], frame="body"))
    return m


MECHANISMS = {
    "every_kind": _every_kind,
    "chain5": lambda: models.chain(5)[0],
    "three_body": models.three_body_prismatic,
}


def _random(model, rng):
    """A random state (unit quaternions, any positions and momenta) and random rates."""
    return random_unit_state(model, rng), rng.normal(size=model.functions.n_kin)


def _one_by_one(model, x, kin_rates):
    """Moduli, rates, Phi and kinematic rates with every element called on its own."""
    fns = model.functions
    kin_pos = fns._kin_pos
    vals, rates = [], []
    for _name, mod, *_ in model.layout.dynamic:
        deps = [x[model.state_slices[d]] for d in mod.depends_on]
        drates = [kin_rates[kin_pos[d]] for d in mod.depends_on]
        vals.append(np.ravel(mod.value_at(*deps)))
        rates.append(np.ravel(mod.rate_at(*deps, *drates)))
    phi = []
    for n, pc in zip(model.unknown_sources, model.position_constraints):
        d = model.u2_slices[n].stop - model.u2_slices[n].start
        phi.append(np.full(d, np.nan) if pc is None else
                   np.ravel(pc.value_at(*[x[model.state_slices[k]] for k in pc.depends_on])))
    flows = np.random.default_rng(3).normal(size=model._kin_rows.size)
    kin, k, f0 = [], 0, 0
    for ks in model.kinematic:
        fl = []
        for _ in ks.sources:
            n = len(model.kin_flow_idx[k])
            fl.append(flows[f0:f0 + n])
            f0, k = f0 + n, k + 1
        if ks.rate is None:
            kin.append(fl[0])
        else:
            kin.append(ks.rate(x[model.state_slices[ks.name]], *fl,
                               *[x[model.state_slices[r]] for r in ks.reads]))
    cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0))
    return cat(vals), cat(rates), cat(phi), flows, cat(kin)


def _close(a, b):
    assert a.shape == b.shape
    scale = 1.0 + np.nanmax(np.abs(b), initial=0.0)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.nanmax(np.abs(a - b), initial=0.0) <= 1e-13 * scale


@pytest.mark.parametrize("make", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_batched_equals_one_by_one(make):
    model = make().assemble().model
    fns = model.functions
    # the batch is really used: one entry per context for moduli, rates and Phi
    assert len(fns._moduli.entries) == 1 and len(fns._rates.entries) == 1
    assert len(fns._phi.entries) == 1
    rng = np.random.default_rng(11)
    for _ in range(5):
        x, kr = _random(model, rng)
        vals, rates, phi, flows, kin = _one_by_one(model, x, kr)
        _close(fns.moduli(x), vals)
        _close(fns.moduli_rates(x, kr), rates)
        _close(fns.phi(x), phi)
        _close(fns.kinematic_rates(x, flows), kin)


# -- the core's generic path, with contexts of the user's ---------------------------------

def _rotating_lever(batch):
    """Two masses driven by one force through two MTFs that share one context (the
    angle's sine and cosine); ``batch`` is the context's batch function."""
    bg = BondGraph("lever")
    calls = {"value": 0}

    def value(th):
        calls["value"] += 1
        return np.array([np.cos(th[0]), np.sin(th[0])])

    def rate(th, thd):
        return np.array([-np.sin(th[0]), np.cos(th[0])]) * thd[0]

    ctx = ModulusContext(value=value, rate=rate, depends_on=("theta",), batch=batch)
    bg.add(Se("F", 1.0), ZeroJunction("a"), MTF("m1", lambda cs: np.array([[1.0 + cs[0]]]),
                                               modulus_rate=lambda cs: np.array([[cs[0]]]),
                                               context=ctx, shape=(1, 1)),
           OneJunction("b"), I("M", 2.0),
           MTF("m2", lambda cs: np.array([[2.0 + cs[1]]]),
               modulus_rate=lambda cs: np.array([[cs[1]]]), context=ctx, shape=(1, 1)),
           OneJunction("c"), I("N", 3.0))
    for a, h in [("F", "a"), ("b", "m1"), ("m1", "a"), ("b", "M"), ("c", "m2"), ("m2", "a"),
                 ("c", "N")]:
        bg.connect(a, h)
    bg.add_kinematic_state(KinematicState("theta", "b", 1))
    return bg, calls


def test_user_contexts_with_and_without_a_batch():
    plain, calls = _rotating_lever(None)
    model = assemble(assign_causality(plain))
    x = np.array([0.4, -0.3, 0.7])
    ref = model.rhs(0.0, x)
    assert calls["value"] >= 1

    def batch(fns):                    # our two moduli in one call
        if len(fns) != 2:
            return None
        return lambda cs: np.array([fn(cs)[0, 0] for fn in fns])

    batched = assemble(assign_causality(_rotating_lever(batch)[0]))
    assert len(batched.functions._moduli.entries) == 1
    np.testing.assert_allclose(batched.rhs(0.0, x), ref, rtol=1e-14, atol=0)

    declined = assemble(assign_causality(_rotating_lever(lambda fns: None)[0]))
    assert len(declined.functions._moduli.entries) == 2
    np.testing.assert_allclose(declined.rhs(0.0, x), ref, rtol=1e-14, atol=0)


def _fuse_of(size=2):
    """A ``fuse`` for the lever's context: its two moduli in one call, the rates in
    another (no Phi)."""
    def fuse(values, rates, phi):
        assert len(values) == 2 and len(rates) == 2 and not phi

        class Fused:
            def values(self, th):
                cs = np.array([np.cos(th[0]), np.sin(th[0])])
                return np.array([1.0 + cs[0], 2.0 + cs[1]])[:size], np.zeros(0)

            def rates(self, th, thd):
                return np.array([-np.sin(th[0]), np.cos(th[0])]) * thd[0]
        return Fused()
    return fuse


def test_a_user_context_that_fuses():
    x = np.array([0.4, -0.3, 0.7])
    ref = assemble(assign_causality(_rotating_lever(None)[0])).rhs(0.0, x)
    bg, calls = _rotating_lever(None)
    ctx = bg.element("m1").context
    fused_ctx = ModulusContext(value=ctx.value, rate=ctx.rate, depends_on=ctx.depends_on,
                               concatenated=True, fuse=_fuse_of())
    for name in ("m1", "m2"):
        object.__setattr__(bg.element(name), "context", fused_ctx)
    model = assemble(assign_causality(bg))
    assert model.functions._fused is not None
    np.testing.assert_allclose(model.rhs(0.0, x), ref, rtol=1e-14, atol=0)
    v, p = model.functions.moduli_and_phi(x)
    np.testing.assert_allclose(v, [1.0 + np.cos(0.7), 2.0 + np.sin(0.7)], rtol=1e-15)
    assert p.shape == (0,)
    kr = np.array([0.25])
    np.testing.assert_allclose(model.functions.moduli_rates(x, kr),
                               [-np.sin(0.7) * 0.25, np.cos(0.7) * 0.25], rtol=1e-15)
    # a fused function of the wrong size is named
    bad = ModulusContext(value=ctx.value, rate=ctx.rate, depends_on=ctx.depends_on,
                         concatenated=True, fuse=_fuse_of(size=1))
    bg2, _ = _rotating_lever(None)
    for name in ("m1", "m2"):
        object.__setattr__(bg2.element(name), "context", bad)
    with pytest.raises(ModelError, match=r"fused moduli and Phi have shapes \(1,\)"):
        assemble(assign_causality(bg2)).functions.moduli_and_phi(x)


def test_a_batch_of_the_wrong_size_is_named():
    bad = assemble(assign_causality(_rotating_lever(lambda fns: lambda cs: np.zeros(3))[0]))
    with pytest.raises(ModelError, match=r"batched values of MTF 'm1', MTF 'm2'.*\(2,\)"):
        bad.rhs(0.0, np.array([0.4, -0.3, 0.7]))


# -- the compiled kernels (elements/kernels/compiled.py) against the numpy stacks ---------------

def compiled_kernels() -> list[str]:
    """Every public compiled function of elements.kernels.compiled (a kernel added there is
    then required to be exercised, hence compared, by the test below). The ``*_typed``
    wrappers (fixed argument types for the compiled RK loop) call ``program`` and
    ``quat_rates`` unchanged; tests/unit/test_fastrk.py compares the compiled right-hand
    side made of them with the Python path."""
    from numba.core.registry import CPUDispatcher
    import elements.kernels.compiled as C
    return sorted(n for n, f in vars(C).items()
                  if isinstance(f, CPUDispatcher) and not n.startswith("_")
                  and not n.endswith("_typed") and n not in SOURCE_KERNELS)


SOURCE_KERNELS = {"stop_springs"}
"""Kernels of sources, not of the element program: tests/unit/test_compiled_sources.py
compares each with its Python law (a compliant stop's run, compiled loop and scipy path,
bit for bit)."""


@pytest.mark.parametrize("make", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_compiled_kernels_equal_numpy(make, monkeypatch):
    """A mechanism built with numba (the geometry, the body rates and every joint term
    and Phi compiled) and one built with BONDGRAPH_NO_NUMBA=1 (the numpy stacks): the
    same moduli, rates, Phi and kinematic rates at random states, to 1e-13 of the
    largest value (the sums are the same; the numpy stacks skip identity factors,
    which only changes the rounding)."""
    pytest.importorskip("numba")
    import elements.kernels.compiled as C
    calls: dict[str, int] = {}
    kernels = compiled_kernels()
    assert len(kernels) >= 10
    for name in kernels:
        fn = getattr(C, name)

        def counted(*a, _fn=fn, _name=name):
            calls[_name] = calls.get(_name, 0) + 1
            return _fn(*a)
        monkeypatch.setattr(C, name, counted)
    monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    compiled = make().assemble().model
    compiled.functions                   # (its batches are planned here, with numba)
    monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
    plain = make().assemble().model
    plain.functions
    rng = np.random.default_rng(5)
    flows = rng.normal(size=plain._kin_rows.size)
    a, b = compiled.functions, plain.functions
    assert a._fused is not None and b._fused is None
    for _ in range(5):
        x, kr = _random(plain, rng)
        # the batches, one compiled call per kernel form
        _close(a.moduli(x), b.moduli(x))
        _close(a._run(a._rates, x, {}, kr), b.moduli_rates(x, kr))
        _close(a.phi(x), b.phi(x))
        _close(a.kinematic_rates(x, flows), b.kinematic_rates(x, flows))
        # the fused programs (elements.kernels.compiled.program): one call for the moduli and
        # Phi, one for the rates
        v, p = a.moduli_and_phi(x)
        _close(v, b.moduli(x))
        _close(p, b.phi(x))
        _close(a.moduli_rates(x, kr), b.moduli_rates(x, kr))
    assert calls["program"] == 10
    assert {"sandwich", "frames", "rates", "quat_rates"} <= set(calls)
    if make is _every_kind:       # every compiled kernel is exercised, hence checked
        assert set(calls) == set(kernels)


def _gimbal_and_screw(pitch: float):
    """A gimbal (axes z, x, y) and a screw (axis z, ``pitch``) from the ground."""
    m = Mechanism("gimbal_screw", gravity=(0.0, 0.0, -9.81))
    box = Inertia.principal(0.01, 0.02, 0.03)
    g = m.ground
    m.add_joint(GimbalJoint("G", g, m.add_body(RigidBody("b", 1.0, box)), axis=(0, 0, 1),
                            axis2=(1, 0, 0), axis3=(0, 1, 0), child_point=(0.0, 0.0, 0.2)))
    m.add_joint(ScrewJoint("W", g, m.add_body(RigidBody("nut", 0.5, box)), axis=(0, 0, 1),
                           pitch=pitch))
    return m.assemble()


@pytest.mark.parametrize("numba", [True, False], ids=["compiled", "numpy"])
def test_gimbal_lock_is_named_on_both_paths(numba, monkeypatch):
    """At the lock (the middle angle a quarter turn: the third axis y turned onto the
    first, z) the batched terms, their rates and the fused program (compiled: the
    kernel's flag, its values NaN) raise GimbalLockError naming the joint; just off it
    they are finite."""
    from elements.kernels.geometry import GimbalLockError
    if numba:
        pytest.importorskip("numba")
        monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
    mm = _gimbal_and_screw(0.01)
    model = mm.model
    fns = model.functions
    assert (fns._fused is not None) == numba
    x = mm.initial_state({"G": [0.2, 1.0, -0.3]}, {"G": [0.1, 0.2, 0.3]})
    kr = np.random.default_rng(2).normal(size=fns.n_kin)
    sl = model.state_slices[mm.mechanism.bodies["b"].q]
    for off, locked in ((0.0, True), (1e-6, False)):
        h = 0.5 * (np.pi / 2 - off)                    # a turn about x by pi/2 - off
        x[sl] = [np.cos(h), np.sin(h), 0.0, 0.0]
        calls = [lambda: fns.moduli(x), lambda: fns.moduli_rates(x, kr),
                 lambda: fns.moduli_and_phi(x)[0]]
        for call in calls:
            if locked:
                with pytest.raises(GimbalLockError, match="gimbal joint 'G' is in gimbal "
                                                          "lock"):
                    call()
            else:
                assert np.isfinite(call()).all()


@pytest.mark.parametrize("numba", [True, False], ids=["compiled", "numpy"])
def test_the_screws_phi_takes_the_nearest_turn(numba, monkeypatch):
    """The screw's Phi = s - p theta less the whole turns 2 pi p that leave it least: a
    nut turned by theta and advanced p theta + (5 + f) turns has Phi = f turns for
    f = 0.2 and f - 1 for f = 0.7, pitch of either sign, through the batch (compiled:
    its kernel) and, compiled, the fused program; to 1e-12 of a turn (rounding of
    s ~ 0.3 m)."""
    from elements.kernels.blocks import _batch, _compiled, _Program
    from elements.kernels.geometry import Geometry
    if numba:
        pytest.importorskip("numba")
        monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
    C = _compiled()
    assert (C is not None) == numba
    for p in (0.01, -0.01):
        mm = _gimbal_and_screw(p)
        kernel = [b for b in mm.blocks["W"] if b.name == "W.lead"][0].phi
        bodies = list(mm.mechanism.bodies.values())
        turn = 2 * np.pi * p
        theta = 0.3
        for f, want in ((0.2, 0.2), (0.7, -0.3)):
            values = []
            for b in bodies:
                if b.name == "nut":
                    values += [[np.cos(theta / 2), 0.0, 0.0, np.sin(theta / 2)],
                               [0.0, 0.0, p * theta + (5 + f) * turn]]
                elif not b.is_ground:
                    values += [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
            geo = Geometry.of(bodies, values)
            got = [_batch([kernel])(geo)[0]]
            if numba:
                states = np.array([np.r_[values[k], values[k + 1]]
                                   for k in range(0, len(values), 2)])
                prog = _Program(C, geo.index, [[(kernel, 1.0)]], rate=False)
                got.append(prog(states)[0][0])
            for v in got:
                assert abs(v - want * turn) < 1e-12 * abs(turn), (p, f, v / turn)
