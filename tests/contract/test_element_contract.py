"""Every registered element kind honours the Element contract (parametrized over the
registry, like scipy's solver class tests): the core's kinds and those the element
library registers (importing ``elements`` registers them). A kind registered without a
sample here fails ``test_every_registered_kind_has_a_sample``."""

from __future__ import annotations

import numpy as np
import pytest

import elements  # noqa: F401  (registers the library's element kinds)
from bondgraph import ELEMENT_TYPES, Category, Element
from bondgraph.primitives import (
    EulerBase, JunctionBase, ResistorBase, SourceBase, StorageBase, TwoPortBase,
    UnknownEffort,
)

BASES = {
    Category.EFFORT_SOURCE: SourceBase, Category.FLOW_SOURCE: SourceBase,
    Category.INERTIA: StorageBase, Category.CAPACITANCE: StorageBase,
    Category.RESISTANCE: ResistorBase, Category.EULER: EulerBase,
    Category.TRANSFORMER: TwoPortBase, Category.GYRATOR: TwoPortBase,
    Category.ZERO: JunctionBase, Category.ONE: JunctionBase,
    Category.UNKNOWN_EFFORT: UnknownEffort,
}

SAMPLES = {
    "Se": lambda: ELEMENT_TYPES["Se"]("x", [1.0, 2.0], dim=2),
    "Sf": lambda: ELEMENT_TYPES["Sf"]("x", 0.5),
    "Se*": lambda: ELEMENT_TYPES["Se*"]("x", dim=3),
    "I": lambda: ELEMENT_TYPES["I"]("x", [1.0, 2.0, 3.0], dim=3),
    "C": lambda: ELEMENT_TYPES["C"]("x", 4.0),
    "R": lambda: ELEMENT_TYPES["R"]("x", 0.3),
    "TF": lambda: ELEMENT_TYPES["TF"]("x", np.ones((2, 3))),
    "GY": lambda: ELEMENT_TYPES["GY"]("x", 0.1),
    "MTF": lambda: ELEMENT_TYPES["MTF"]("x", lambda q: np.eye(2) * q, modulus_rate=lambda q, qd:
                                          np.eye(2) * qd, depends_on=("q",), shape=(2, 2)),
    "MGY": lambda: ELEMENT_TYPES["MGY"]("x", lambda q: np.eye(1) * q, modulus_rate=lambda q, qd:
                                          np.eye(1) * qd, depends_on=("q",), shape=(1, 1)),
    "EJS": lambda: ELEMENT_TYPES["EJS"]("x", momentum="J"),
    "0": lambda: ELEMENT_TYPES["0"]("x", dim=3),
    "1": lambda: ELEMENT_TYPES["1"]("x", dim=3),
    "PointMTF": lambda: ELEMENT_TYPES["PointMTF"]("x", "q_b", point=(0.1, -0.2, 0.3),
                                                  sign=-1.0),
}

def _contact_wrench():
    """A ball 1 mm into the floor, at rest: its elastic contact force (part 0)."""
    from elements.contact import ContactLaw, ContactSystem, Plane, Sphere
    system = ContactSystem([Plane("floor"), Sphere("s", "b", 0.1)],
                           {"floor": None, "s": ContactLaw(stiffness=1e5)},
                           {"b": ("b.r", "b.q", "p_b.linear", "p_b.angular")}, {})
    return ELEMENT_TYPES["ContactWrench"]("x", system, "b", 0)


SAMPLES["ContactWrench"] = _contact_wrench
# what a state-dependent sample's law needs: parameter values and a state
_INERTIA = {"Ixx": 0.004, "Iyy": 0.004, "Izz": 0.004, "Ixy": 0.0, "Ixz": 0.0, "Iyz": 0.0}
SOURCE_STATES = {"ContactWrench": (
    {"b.mass": 1.0, **{f"b.{k}": v for k, v in _INERTIA.items()}, "s.contact.k": 1e5,
     "s.contact.damping": 1.0, "s.contact.mu": 0.5},
    {"b.r": [0.0, 0.0, 0.099], "b.q": [1.0, 0.0, 0.0, 0.0], "p_b.linear": [0.0, 0.0, 0.0],
     "p_b.angular": [0.0, 0.0, 0.0]})}

DEPENDENCY_SIZE = {"PointMTF": 4}
"""Entries of each state a modulated kind's modulus reads (a quaternion: 4; default 1)."""

KINDS = sorted(ELEMENT_TYPES)


def test_every_registered_kind_has_a_sample():
    assert not set(ELEMENT_TYPES) - set(SAMPLES), (
        f"registered kinds without a sample in this test: "
        f"{sorted(set(ELEMENT_TYPES) - set(SAMPLES))}")


@pytest.mark.parametrize("kind", KINDS)
def test_class_data(kind):
    cls = ELEMENT_TYPES[kind]
    assert issubclass(cls, Element)
    assert cls.kind == kind
    assert issubclass(cls, BASES[cls.category])
    assert cls.__doc__


@pytest.mark.parametrize("kind", KINDS)
def test_ports_and_laws(kind):
    el = SAMPLES[kind]()
    assert el.problems() == []
    ports = el.ports()
    cat = el.category
    if cat.is_junction:
        assert ports == () and el.dim == 3
    elif cat.is_two_port:
        assert [p.name for p in ports] == ["in", "out"]
        n2, n1 = el.shape
        assert (ports[0].dim, ports[1].dim) == (n1, n2)
        mod = el.modulus(None)
        if mod.constant is not None:
            assert mod.constant.shape == (n2, n1) and np.all(np.isfinite(mod.constant))
        else:
            rng = np.random.default_rng(2)
            n = DEPENDENCY_SIZE.get(kind, 1)
            deps = [rng.normal(size=n) for _ in mod.depends_on]
            rates = [rng.normal(size=n) for _ in mod.depends_on]
            m = mod.value_at(*deps)
            assert np.asarray(m).shape == (n2, n1)
            # the modulus rate is the derivative of the modulus along the states' rates
            # (central differences, h = 1e-6: truncation ~ h^2 times the third
            # derivative, rounding ~ eps / h: both far below 1e-7)
            h = 1e-6
            fd = (np.asarray(mod.value_at(*[d + h * r for d, r in zip(deps, rates)])) -
                  np.asarray(mod.value_at(*[d - h * r for d, r in zip(deps, rates)]))) / (2 * h)
            assert np.allclose(mod.rate_at(*deps, *rates), fd, rtol=1e-7, atol=1e-7)
    else:
        assert len(ports) == 1 and ports[0].name == "p"
    if isinstance(el, StorageBase):
        F = el.field_matrix(None)
        assert F.shape == (el.dim, el.dim) and np.all(np.isfinite(F))
        assert np.linalg.eigvalsh(0.5 * (F + F.T)).min() > 0
    if isinstance(el, ResistorBase):
        assert el.resistance_matrix(None).shape == (el.dim, el.dim)
    if isinstance(el, SourceBase):
        values, state = SOURCE_STATES.get(kind, (None, None))
        law = el.law(values)
        view = None
        if state is not None:
            from bondgraph.element import StateView
            x = np.concatenate([np.asarray(v, dtype=float) for v in state.values()])
            sizes = np.cumsum([0] + [len(v) for v in state.values()])
            view = StateView(x, {n: slice(a, b) for n, a, b in
                                 zip(state, sizes[:-1], sizes[1:])})
        out = law.value(0.0, view)
        assert out.shape == (el.dim,) and np.all(np.isfinite(out))
    assert isinstance(el.parameters(), dict)
    assert el.name in el.label() or el.category.is_junction
