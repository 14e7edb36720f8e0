"""Every registered element kind honours the Element contract (parametrized over the
registry, like scipy's solver class tests)."""

from __future__ import annotations

import numpy as np
import pytest

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
}

CORE_KINDS = sorted(SAMPLES)


@pytest.mark.parametrize("kind", CORE_KINDS)
def test_class_data(kind):
    cls = ELEMENT_TYPES[kind]
    assert issubclass(cls, Element)
    assert cls.kind == kind
    assert issubclass(cls, BASES[cls.category])
    assert cls.__doc__


@pytest.mark.parametrize("kind", CORE_KINDS)
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
            m = mod.value_at(*[np.array([0.7])] * len(mod.depends_on))
            assert np.asarray(m).shape == (n2, n1)
    else:
        assert len(ports) == 1 and ports[0].name == "p"
    if isinstance(el, StorageBase):
        F = el.field_matrix(None)
        assert F.shape == (el.dim, el.dim) and np.all(np.isfinite(F))
        assert np.linalg.eigvalsh(0.5 * (F + F.T)).min() > 0
    if isinstance(el, ResistorBase):
        assert el.resistance_matrix(None).shape == (el.dim, el.dim)
    if isinstance(el, SourceBase):
        law = el.law(None)
        assert law.value(0.0, None).shape == (el.dim,)
    assert isinstance(el.parameters(), dict)
    assert el.name in el.label() or el.category.is_junction
