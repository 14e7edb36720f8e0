"""bondgraph.linearization and bondgraph.linear_model: the differences and their error
estimate, names and mistakes, export, plots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bondgraph import LinearModel, ModelError, assemble, assign_causality, linearize
from bondgraph import models as core_models
from bondgraph.linearization import jacobian


def test_ridders_jacobian_and_its_error_estimate():
    """A smooth nonlinear map with a known Jacobian: every entry within its estimated
    error (which is below 1e-9), and the exact mode on an affine map exact to 1e-15."""
    def f(x):
        return np.array([np.sin(x[0]) * np.exp(x[1]), x[0] ** 3 - x[1] / (1 + x[0] ** 2)])

    x = np.array([0.7, -0.4])
    true = np.array([[np.cos(x[0]) * np.exp(x[1]), np.sin(x[0]) * np.exp(x[1])],
                     [3 * x[0] ** 2 + 2 * x[0] * x[1] / (1 + x[0] ** 2) ** 2,
                      -1 / (1 + x[0] ** 2)]])
    J, E = jacobian(f, x)
    assert np.all(np.abs(J - true) <= np.maximum(E, 1e-15))
    assert E.max() < 1e-9
    M = np.array([[1.0, -2.0, 3.5], [4.0, 0.25, -1.0]])
    J, E = jacobian(lambda z: M @ z + 7.0, np.array([1.0, 2.0, -3.0]), exact=True)
    assert np.abs(J - M).max() < 1e-15 and E.max() < 1e-13
    with pytest.raises(ModelError, match="steps must be positive"):
        jacobian(f, x, step=0.0)


def motor():
    return assemble(assign_causality(core_models.dc_motor(12.0, 1.2, 0.05, 0.08, 0.02, 0.01)))


def test_names_are_checked_and_the_valid_ones_listed():
    m = motor()
    x0 = {"p_La": 0.0, "p_J": 0.0}
    with pytest.raises(ModelError, match=r"no source named 'U'.*sources \(Se, Sf\): V"):
        linearize(m, x0, inputs=["U"])
    with pytest.raises(ModelError, match=r"no output 'J.w'.*did you mean 'J.f'"):
        linearize(m, x0, outputs=["J.w"])
    with pytest.raises(ModelError, match=r"element 'k' has 2 bonds"):
        linearize(m, x0, outputs=["k.f"])
    with pytest.raises(ModelError, match=r"u0 given for 'W', not an input; inputs: V"):
        linearize(m, x0, inputs=["V"], u0={"W": 1.0})
    with pytest.raises(ModelError, match=r"missing value\(s\) for p_J"):
        linearize(m, {"p_La": 0.0})
    lin = linearize(m, x0, inputs=["V"], outputs=["J.f"])
    with pytest.raises(ModelError, match=r"no input named 'J'.*inputs: V"):
        lin.transfer("J", "J.f", 1j)
    with pytest.raises(ModelError, match=r"not an equilibrium: dx/dt is not zero for p_La"):
        lin.modes()
    with pytest.raises(ModelError, match="shape"):
        LinearModel(np.zeros((2, 2)), np.zeros((2, 1)), np.zeros((1, 2)), np.zeros((1, 2)),
                    ("a", "b"), ("u",), ("y",), np.zeros(2), np.zeros(1), np.zeros(1),
                    np.zeros(2))


def test_written_matrices_read_back_with_their_names(tmp_path):
    import scipy.io
    m = motor()
    lin = linearize(m, {"p_La": 0.01, "p_J": 0.02}, inputs=["V"], outputs=["J.f", "b1.e"])
    paths = lin.write(tmp_path / "out")
    names = sorted(p.rsplit("/", 1)[1] for p in paths)
    assert names == ["linear.json", "linear.mat", "linear_A.csv", "linear_B.csv",
                     "linear_C.csv", "linear_D.csv", "linear_point.csv"]
    rows = (tmp_path / "out" / "linear_C.csv").read_text().splitlines()
    assert rows[0] == ",p_La,p_J" and rows[1].startswith("J.f,")
    C = np.array([[float(v) for v in r.split(",")[1:]] for r in rows[1:]])
    assert np.array_equal(C, lin.C)
    data = json.loads((tmp_path / "out" / "linear.json").read_text())
    assert data["inputs"] == ["V"] and np.array_equal(np.array(data["A"]), lin.A)
    mat = scipy.io.loadmat(tmp_path / "out" / "linear.mat")
    assert np.array_equal(mat["B"], lin.B)
    assert [str(s[0]) for s in mat["output_names"].ravel()] == ["J.f", "b1.e"]     # (cells)
    with pytest.raises(ModelError, match="unknown format"):
        lin.write(tmp_path, ["xls"])


def test_bode_and_step_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    lin = linearize(motor(), {"p_La": 0.0, "p_J": 0.0}, inputs=["V"], outputs=["J.f"])
    for path in (lin.bode_plot(tmp_path / "bode.png", [("V", "J.f")]),
                 lin.step_plot(tmp_path / "step.png")):
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ModelError, match="no output named 'w'"):
        lin.bode_plot(tmp_path / "x.png", [("V", "w")])


def test_step_response_of_the_linear_model_is_exact():
    """response() integrates exactly (matrix exponential): a first-order lag."""
    lin = LinearModel([[-2.0]], [[4.0]], [[1.0]], [[0.0]], ("x",), ("u",), ("y",),
                      [0.0], [0.0], [0.0], [0.0])
    t = np.linspace(0, 3, 7)
    x = lin.response(t, {"u": 0.5})
    assert np.allclose(x[0], 1.0 * (1 - np.exp(-2 * t)), rtol=1e-13, atol=1e-15)
    assert abs(lin.transfer("u", "y", 0.0) - 2.0) < 1e-15


def test_an_input_that_enters_the_constraints_is_refused():
    """A flow source imposing a velocity that a constraint sees: Eq. (15) needs its
    time derivative, which a model in (x, u) cannot carry."""
    from bondgraph import BondGraph, I, OneJunction, Sf, ZeroJunction, Se
    bg = BondGraph("driven")
    bg.add(Sf("v_in", 1.0), ZeroJunction("c", constraint=True), OneJunction("v"),
           I("m", 2.0), Se("F", 0.0))
    for a, h in [("v_in", "c"), ("c", "v"), ("F", "v"), ("v", "m")]:
        bg.connect(a, h)
    m = assemble(assign_causality(bg))
    with pytest.raises(ModelError, match="v_in enter the constraint equations"):
        linearize(m, {"p_m": 0.0}, inputs=["v_in"])
