"""Property-based tests (hypothesis): random bond graphs and random mechanisms, with
hostile parameters, either simulate or raise the package's own error naming the culprit;
never any other exception, never a hang (each case bounded in steps and time)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from bondgraph import (
    C, GY, TF, Baumgarte, BondGraph, BondGraphError, I, IntegrationWarning, OneJunction, R,
    Se, Sf, ZeroJunction, assemble, assign_causality, simulate,
)
from elements import (
    FixedJoint, Inertia, Mechanism, PrismaticJoint, RevoluteJoint, RigidBody, SphericalJoint,
)

COUNTS: dict[str, dict[str, int]] = {}

HOSTILE = [0.0, -1.0, np.nan, np.inf, -np.inf, 1e300, 1e-300]


def _tally(suite, outcome):
    c = COUNTS.setdefault(suite, {})
    c[outcome] = c.get(outcome, 0) + 1


def value(draw, scale=1.0, hostile=40):
    if draw(st.integers(0, hostile - 1)) == 0:
        return draw(st.sampled_from(HOSTILE))
    return float(draw(st.floats(0.05, 20.0))) * scale


@st.composite
def bond_graphs(draw):
    bg = BondGraph("fuzz")
    n_junctions = draw(st.integers(1, 5))
    dims = []
    names = []
    for k in range(n_junctions):
        d = draw(st.sampled_from([1, 1, 2, 3]))
        cls = draw(st.sampled_from([ZeroJunction, OneJunction]))
        name = f"j{k}"
        kw = {"dim": d}
        if cls is ZeroJunction and draw(st.booleans()):
            kw["constraint"] = True
        bg.add(cls(name, **kw))
        dims.append(d)
        names.append(name)
    # connect junctions: a tree, through TF/GY where dims differ, plus a random extra bond
    for k in range(1, n_junctions):
        a = draw(st.integers(0, k - 1))
        if dims[a] == dims[k] and draw(st.booleans()):
            bg.connect(names[a], names[k])
        else:
            two = draw(st.sampled_from([TF, GY]))
            shape = (dims[k], dims[a])
            mod = np.array([[value(draw) for _ in range(shape[1])] for _ in range(shape[0])])
            tname = f"t{k}"
            bg.add(two(tname, mod if mod.size > 1 else float(mod[0, 0])))
            bg.connect(names[a], tname)
            bg.connect(tname, names[k])
    # one-ports
    n_ports = draw(st.integers(1, 6))
    for p in range(n_ports):
        k = draw(st.integers(0, n_junctions - 1))
        d = dims[k]
        kind = draw(st.sampled_from(["Se", "Sf", "I", "I", "C", "C", "R"]))
        name = f"{kind}{p}"
        v = value(draw)
        if kind == "Se":
            el = Se(name, [v] * d if d > 1 else v, dim=d)
        elif kind == "Sf":
            el = Sf(name, [v] * d if d > 1 else v, dim=d)
        elif kind == "I":
            el = I(name, v, dim=d)
        elif kind == "C":
            el = C(name, v, dim=d)
        else:
            el = R(name, v, dim=d)
        bg.add(el)
        if kind in ("Se", "Sf") or draw(st.booleans()):
            bg.connect(name, names[k])
        else:
            bg.connect(names[k], name)
    return bg


def names_in(obj) -> set[str]:
    if isinstance(obj, BondGraph):
        return set(obj.elements) | {b.name for b in obj.bonds}
    out = set(obj.bodies) | set(obj.joints) | set(obj.loads)
    return out


def run_case(suite, build):
    try:
        thing = build()
    except BondGraphError as exc:
        _tally(suite, "refused at construction")
        return thing_names_check(exc, None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IntegrationWarning)
            if isinstance(thing, BondGraph):
                model = assemble(assign_causality(thing))
                x0 = np.full(model.n_states, 0.01)
                sparse_agrees(suite, model, x0)
                r = simulate(model, (0.0, 0.01), x0, t_eval=[0.0, 0.01], max_steps=300,
                             rtol=1e-6, atol=1e-8)
            else:
                mm = thing.assemble()
                try:
                    sparse_agrees(suite, mm.model, mm.initial_state())
                except BondGraphError:
                    pass                     # the simulation below reports it
                r = mm.simulate((0.0, 0.01), t_eval=[0.0, 0.01], max_steps=300, rtol=1e-6,
                                atol=1e-8).raw
        _tally(suite, "simulated" if r.success else f"stopped: {r.status.name}")
    except BondGraphError as exc:
        _tally(suite, f"refused: {type(exc).__name__}")
        thing_names_check(exc, thing)


def sparse_agrees(suite, model, x):
    """Where the sparse evaluation applies, it equals the dense reduction. The tolerance
    (1e-6 of the largest bond value) allows for the hostile values' conditioning; a
    structural error in either would be of the order of the values themselves."""
    stab = Baumgarte(10.0, 10.0)
    sr = model.sparse()
    if not sr.applicable:
        return
    with np.errstate(all="ignore"):
        try:
            ev = model.evaluate(0.0, x, stabilization=stab, redundancy_ok=True)
        except BondGraphError:
            return
        sv = sr.evaluate(0.0, x, stab)
    if sv is None or ev.rank < model.n_u2 or not np.all(np.isfinite(ev.bond_values)) \
            or not np.all(np.isfinite(sv.bond_values)) or not np.all(np.isfinite(ev.xdot)):
        return
    scale = 1.0 + max(np.abs(ev.bond_values).max(initial=0.0),
                      np.abs(ev.xdot).max(initial=0.0))
    if scale > 1e12:
        return
    assert np.max(np.abs(sv.xdot - ev.xdot), initial=0.0) <= 1e-6 * scale
    assert np.max(np.abs(sv.bond_values - ev.bond_values), initial=0.0) <= 1e-6 * scale
    _tally(suite, "sparse = dense checked")


def thing_names_check(exc, thing):
    msg = str(exc)
    assert msg.strip(), f"{type(exc).__name__} without a message"
    if thing is not None:
        known = names_in(thing) | {"Se*_"}
        assert any(n and n in msg for n in known), f"message names no culprit: {msg}"


# Work per case is bounded by max_steps (not by a wall-clock deadline, which a loaded
# machine would turn into false failures); the explain phase's tracer is left out.
PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]
FAST = settings(max_examples=2500, deadline=None, derandomize=True, phases=PHASES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(bond_graphs())
def test_random_bond_graphs(bg):
    run_case("random bond graphs", lambda: bg)


@st.composite
def mechanisms(draw):
    def build():
        mech = Mechanism("fuzz", gravity=(0.0, 0.0, -9.81))
        n = draw(st.integers(1, 4))
        bodies = [mech.ground]
        for k in range(n):
            m = value(draw, hostile=25)
            base = value(draw, 0.01, hostile=25)
            # mostly valid tensors (the triangle inequality holds), sometimes not
            principal = [base * draw(st.floats(0.6, 1.0)) for _ in range(3)]
            if draw(st.integers(0, 19)) == 0:
                principal[2] = base * 5.0
            body = RigidBody(f"b{k}", m, Inertia.principal(*principal))
            bodies.append(mech.add_body(body))
        kinds = [RevoluteJoint, PrismaticJoint, SphericalJoint, FixedJoint]

        def vec():
            c = draw(st.integers(0, 12))
            if c == 0:
                return (0.0, 0.0, 0.0)
            if c == 1:
                return (0.0, 0.0, 1.0)
            return tuple(draw(st.floats(-1, 1)) for _ in range(3))

        for k in range(1, n + 1):
            parent = bodies[draw(st.integers(0, k - 1))]
            cls = draw(st.sampled_from(kinds))
            kw = dict(parent_point=vec(), child_point=vec())
            if cls in (RevoluteJoint, PrismaticJoint):
                kw["axis"] = vec()
                if draw(st.booleans()):
                    kw["spring"] = abs(value(draw)) or 1.0
            mech.add_joint(cls(f"J{k}", parent, bodies[k], **kw))
        if n >= 2 and draw(st.booleans()):        # a loop
            a, b = draw(st.sampled_from([(0, 2), (1, 2), (0, n)]))
            mech.add_joint(draw(st.sampled_from(kinds[:3]))(
                "L", bodies[a], bodies[b], parent_point=vec(), child_point=vec(),
                axis=vec() if draw(st.booleans()) else (0.0, 0.0, 1.0)))
        return mech
    return build


@settings(max_examples=800, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mechanisms())
def test_random_mechanisms(build):
    run_case("random mechanisms", build)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(bond_graphs())
def test_random_bond_graphs_slow(bg):
    run_case("random bond graphs (slow)", lambda: bg)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mechanisms())
def test_random_mechanisms_slow(build):
    run_case("random mechanisms (slow)", build)
