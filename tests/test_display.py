"""Around a run: quick-look figures (``result.plot()``), notebook cards
(``_repr_html_``) and the import report that travels with a model into its results.

The figures are checked for what they show (panel titles, axis labels, legend entries
and the plotted data against the result's own arrays), not only that they were drawn.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from bondgraph import assemble, assign_causality, models, simulate  # noqa: E402
from elements import models as mech_models  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def three_body():
    model = mech_models.three_body_prismatic().assemble()
    return model, model.simulate((0.0, 0.5), t_eval=np.linspace(0.0, 0.5, 51))


def _line(ax, label):
    for line in ax.get_lines():
        if line.get_label() == label:
            return line
    raise AssertionError(f"no line {label!r} in panel {ax.get_title()!r}: "
                         f"{[x.get_label() for x in ax.get_lines()]}")


def test_a_mechanism_result_plot_shows_coordinates_reactions_and_energy(three_body,
                                                                        tmp_path):
    model, result = three_body
    path = tmp_path / "three_body.png"
    fig = result.plot(str(path))
    assert path.read_bytes()[:8] == PNG
    axes = fig.axes
    titles = [ax.get_title() for ax in axes]
    assert titles[:2] == ["joint angles", "joint displacements"]
    assert titles[2].startswith("reaction force |F|")
    assert titles[3].startswith("reaction moment |M|")
    assert titles[4] == "energy ledger"
    assert [ax.get_ylabel() for ax in axes] == ["rad", "m", "N", "N m", "J"]
    assert axes[-1].get_xlabel() == "t (s)"
    # J1 and J2 are revolute (rad), J3 prismatic (m): each in its panel, data as read
    assert sorted(x.get_label() for x in axes[0].get_lines()) == ["J1", "J2"]
    j3 = _line(axes[1], "J3")
    np.testing.assert_array_equal(j3.get_ydata(), result.joint("J3").q)
    np.testing.assert_array_equal(j3.get_xdata(), result.t)
    f2 = _line(axes[2], "J2").get_ydata()
    np.testing.assert_allclose(f2, np.linalg.norm(result.joint("J2").force, axis=0))
    drift = _line(axes[4], "balance - balance(0)").get_ydata()
    b = result.energy.balance
    np.testing.assert_allclose(drift, b - b[0])
    assert _line(axes[4], "kinetic").get_ydata()[-1] == result.energy.kinetic[-1]
    assert "work J1.actuator" in [x.get_label() for x in axes[4].get_lines()]
    # joints chosen by name; a wrong one is named
    fig = result.plot(str(tmp_path / "j3.png"), joints=["J3"], energy=False)
    assert [ax.get_title() for ax in fig.axes][0] == "joint displacements"
    with pytest.raises(KeyError, match="J9"):
        result.plot(str(tmp_path / "bad.png"), joints=["J9"])


def test_a_bond_graph_result_plot_shows_states_bonds_and_constraint_forces(tmp_path):
    """The README's two masses: the coupling force m2 F / (m1 + m2) = 1.5 N is the
    constraint panel's line; a chosen bond's effort is drawn by component."""
    bg = models.two_masses_rigid(m1=1.0, m2=3.0, force=2.0)
    model = assemble(assign_causality(bg))
    r = simulate(model, (0.0, 1.0), {"p_m1": 0.0, "p_m2": 0.0})
    bond = next(b.name for b in bg.bonds)
    fig = r.plot(str(tmp_path / "two.png"), efforts=[bond])
    assert (tmp_path / "two.png").read_bytes()[:8] == PNG
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["states", "efforts and flows", "constraint forces (U_2)"]
    np.testing.assert_allclose(_line(fig.axes[2], "Se*_coupling").get_ydata(), 1.5,
                               rtol=1e-12)
    np.testing.assert_array_equal(_line(fig.axes[0], "p_m2").get_ydata(), r.state("p_m2"))
    np.testing.assert_array_equal(_line(fig.axes[1], f"{bond}.e").get_ydata(),
                                  r.effort(bond))
    with pytest.raises(KeyError, match="p_m3"):
        r.plot(str(tmp_path / "bad.png"), states=["p_m3"])


FLOOR = """<mujoco model="drop">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="ball" pos="0 0 1">
      <joint name="slide" type="slide" axis="0 0 1" range="-0.5 0.5" limited="true"/>
      <geom type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_cards_and_the_import_report_travel_with_the_model(three_body, tmp_path):
    """Notebook cards say status, counts and drift; what an MJCF import left out (the
    floor's contacts, the slide's limits) is in the model's card, the result's card,
    summary.json and manifest.json of a run."""
    model, result = three_body
    card = result._repr_html_()
    assert "SUCCESS" in card and "energy balance drift" in card
    assert "<th style='text-align:left;padding-right:1em'>bodies</th><td " \
           "style='text-align:left'>3</td>" in card
    assert "three_body_prismatic" in model._repr_html_()
    assert "Se*_J1.t" in model.model._repr_html_()
    assert "SUCCESS" in result.raw._repr_html_()
    pytest.importorskip("mujoco")
    from elements.files.modelfile import load_model
    from elements.running.runner import run
    (tmp_path / "floor.xml").write_text(FLOOR)
    (tmp_path / "drop.toml").write_text('[robot]\nfile = "floor.xml"\ncontacts = false\n'
                                        '[solver]\nt_end = 0.05\npoints = 6\n')
    spec = load_model(str(tmp_path / "drop.toml"))       # (a model file's run says it)
    mm = spec.mechanism.assemble()
    assert "not imported: contacts" in mm._repr_html_()
    res, _ = run(spec, str(tmp_path / "out"), quiet=True, animation=None)
    assert "floor" in res._repr_html_() and "slide" in res._repr_html_()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    kinds = summary["import"]["not_imported"]
    assert any(k.startswith("contacts") and "floor" in v for k, v in kinds.items())
    assert any(k.startswith("position limits") and v == ["slide"] for k, v in kinds.items())
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["import"]["not_imported"] == kinds
    assert "summary.json" in manifest["files"]
    # a mechanism built in Python has no import entry
    assert result.summary()["import"] is None
    assert os.path.isfile(tmp_path / "out" / "bodies.csv")


def test_a_failed_run_warns_at_the_users_line():
    """The warning of a run that fails names the caller's file and line (the first
    frame outside the package), not a line inside the package."""
    import warnings

    from bondgraph import IntegrationWarning, TimeFunction

    def force(t):
        if t > 0.5:
            raise RuntimeError("the force's table ends at 0.5 s")
        return 1.0

    model = assemble(assign_causality(models.two_masses_rigid(1.0, 3.0,
                                                               TimeFunction(force))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = simulate(model, (0.0, 1.0), {"p_m1": 0.0, "p_m2": 0.0})  # the user's line
    assert not r.success
    ours = [w for w in caught if issubclass(w.category, IntegrationWarning)]
    assert ours, [str(w.message) for w in caught]
    assert ours[0].filename == __file__, ours[0].filename
    import inspect
    src = inspect.getsource(test_a_failed_run_warns_at_the_users_line).splitlines()
    line = next(k for k, text in enumerate(src) if "the user's line" in text)
    assert ours[0].lineno == test_a_failed_run_warns_at_the_users_line.__code__.co_firstlineno + line
