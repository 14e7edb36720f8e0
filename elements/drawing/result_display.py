"""What a mechanism result shows at a glance: its quick-look figure and its notebook card.

- :func:`mechanism_figure`: the panels of :meth:`MechanismResult.plot` (joint
  coordinates by unit, reaction magnitudes, the energy ledger).
- :func:`mechanism_card`: the HTML of :meth:`MechanismResult._repr_html_` (status,
  counts, drift, what an import left out).
- :func:`import_notes`, :func:`import_summary`: what an import left out, as lines and
  as the ``import`` entry of a run's summary.json.

Both read the result through its public attributes (it is passed in, not imported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bondgraph._display import html_card
from bondgraph._plot import Panel, panels_figure

__all__ = ["mechanism_figure", "mechanism_card", "import_notes", "import_summary"]


def _coordinates(result: Any, names: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """Each chosen joint's coordinates by unit: {"rad": {...}, "m": {...}}."""
    joints = result.model.mechanism.joints
    by_unit: dict[str, dict[str, np.ndarray]] = {"rad": {}, "m": {}}
    for name in names:
        j = result.joint(name)
        q = np.atleast_2d(j.q)
        for k, (coord, unit) in enumerate(joints[name].coordinates):
            label = name if q.shape[0] == 1 else f"{name}.{coord}"
            by_unit.setdefault(unit, {})[label] = q[k]
    return by_unit


def mechanism_figure(result: Any, path: str | None = None, *,
                     joints: Sequence[str] | None = None, reactions: bool = True,
                     energy: bool = True) -> Any:
    """The quick-look figure of a mechanism run (see :meth:`MechanismResult.plot`)."""
    all_joints = list(result.model.mechanism.joints)
    chosen = all_joints if joints is None else list(joints)
    for name in chosen:
        result.joint(name)                       # an unknown name is named here
    panels: list[Panel] = []
    by_unit = _coordinates(result, [n for n in chosen
                                    if result.model.mechanism.joints[n].coordinates])
    if by_unit["rad"]:
        panels.append(("joint angles", "rad", by_unit["rad"]))
    if by_unit["m"]:
        panels.append(("joint displacements", "m", by_unit["m"]))
    if reactions and chosen:
        panels.append(("reaction force |F| (parent on child)", "N",
                       {n: np.linalg.norm(result.joint(n).force, axis=0) for n in chosen}))
        panels.append(("reaction moment |M| (about the joint's point on the child)", "N m",
                       {n: np.linalg.norm(result.joint(n).moment, axis=0) for n in chosen}))
    if energy:
        led = result.energy
        series = {"kinetic": led.kinetic, "gravity": led.gravity, "springs": led.springs}
        series.update({f"work {k}": v for k, v in led.work.items()})
        series.update({f"dissipated {k}": v for k, v in led.dissipated.items()})
        series.update({f"stored {k}": v for k, v in led.other.items()})
        b = led.balance
        series["balance - balance(0)"] = b - b[0]
        panels.append(("energy ledger", "J", series))
    raw = result.raw
    return panels_figure(result.t, panels, what="MechanismResult.plot()", path=path,
                         title=f"{result.model.mechanism.name}: {raw.status.name}")


def import_notes(report: Any) -> list[str]:
    """What an import left out or changed, one line each (empty for no report)."""
    if report is None:
        return []
    notes = [f"not imported: {kind}: {', '.join(names)}"
             for kind, names in (report.not_imported or {}).items()]
    notes += [f"inertia raised to min_inertia: {group}" for group in (report.bounded or {})]
    notes += [f"approximated: {kind}: {', '.join(names)}"
              for kind, names in (getattr(report, "approximated", None) or {}).items()]
    return notes


def import_summary(report: Any) -> dict[str, Any] | None:
    """What a run's summary.json says of the import its mechanism came from: what was
    not imported (by kind, with the joints or elements), the inertias raised to
    ``min_inertia``, and the import's warnings; None for a mechanism not imported."""
    if report is None:
        return None
    return {"not_imported": {k: list(v) for k, v in (report.not_imported or {}).items()},
            "bounded": {k: [list(map(float, a)), list(map(float, b))]
                        for k, (a, b) in (report.bounded or {}).items()},
            "approximated": {k: list(v) for k, v in
                             (getattr(report, "approximated", None) or {}).items()},
            "warnings": list(report.warnings or [])}


def mechanism_card(result: Any) -> str:
    """The notebook card of a mechanism run (see :meth:`MechanismResult._repr_html_`)."""
    raw, mech = result.raw, result.model.mechanism
    span = f"{result.t[0]:.6g} .. {result.t[-1]:.6g} s" if result.t.size else "empty"
    rows = [("status", f"{raw.status.name}: {raw.message}"), ("time span", span),
            ("output points", result.t.size), ("bodies", len(mech.bodies)),
            ("joints", len(mech.joints)), ("states", len(raw.state_names)),
            ("max |Phi|", f"{result.max_abs_phi:.3g}"),
            ("energy balance drift", f"{result.energy.relative_drift:.3g}"),
            ("derivative evaluations", raw.nfev), ("steps", raw.n_steps)]
    if raw.failure_time is not None:
        rows.append(("failure time", f"{raw.failure_time:.9g} s"))
    if result.switches:
        rows.append(("mode switches", len(result.switches)))
    notes = import_notes(getattr(mech, "import_report", None))
    return html_card(f"MechanismResult '{mech.name}'", rows, notes, status_ok=raw.success)
