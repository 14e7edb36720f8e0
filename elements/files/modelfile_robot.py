"""The ``[robot]`` table of a model file: a URDF or MJCF file (relative to the model
file's folder) imported with the options the table gives (:func:`robot_mechanism`).

The format is the document's own (its root element: ``<robot>`` is URDF, ``<mujoco>``
MJCF); a ``format`` key that says otherwise is refused, naming it, rather than reading a
URDF with MuJoCo's URDF reader. What the import has to say is not said here: the
mechanism's ``import_report.said`` becomes the model's notes, which a run says once.
"""

from __future__ import annotations

import os
from typing import Any

from bondgraph import ModelError

from elements.files.tables import ModelFileError, TableReader, read_text, signal, xml_root
from elements.mechanism import Mechanism
from elements.files.mjcf import load_mjcf
from elements.files.urdf import load_urdf

__all__ = ["robot_mechanism", "ROBOT_FORMATS"]

ROBOT_FORMATS = {"robot": "urdf", "mujoco": "mjcf"}
"""Robot description formats by the root element of the document."""

_NAMES = {"urdf": "a URDF", "mjcf": "an MJCF file"}


def robot_mechanism(c: TableReader, r: dict, path: str, gravity: Any) -> Mechanism:
    """The mechanism of the ``[robot]`` table ``r`` of the model file ``path``
    (``gravity``: the model's, or None for the description's own)."""
    c.only(r, "robot", {"file", "format", "floating_base", "mimic", "massless",
                        "min_inertia", "strict", "efforts", "contacts", "limits"})
    rel = c.string(r, "robot", "file")
    base = os.path.dirname(path) if path not in ("<string>", "") else ""
    file = os.path.join(base, rel) if not os.path.isabs(rel) else rel
    if not os.path.exists(file):
        c.fail("robot", "file", f"{rel!r}: no such file (looked for {file}; a path is "
                                f"relative to the model file's folder)")
    try:
        root = xml_root(read_text(file, "robot description", ModelFileError))
    except ModelError as exc:
        c.fail("robot", "file", str(exc))
    found = ROBOT_FORMATS.get(root)
    if found is None:
        c.fail("robot", "file", f"{rel!r} is not a robot description: its root element "
                                f"is {f'<{root}>' if root else 'missing'}; valid: a URDF "
                                f"(<robot>) or an MJCF file (<mujoco>)")
    fmt = c.string(r, "robot", "format", required=False, choices=("urdf", "mjcf"))
    if fmt is not None and fmt != found:
        c.fail("robot", "format", f"{fmt!r}, but {rel!r} is {_NAMES[found]} (its root "
                                  f"element is <{root}>); valid: \"{found}\", or leave "
                                  f"format out (the file says its format)")
    efforts_table = r.get("efforts", {})
    if not isinstance(efforts_table, dict):
        c.fail("robot", "efforts", "must be a table of joint = effort (a number or a signal "
                                   "table)")
    efforts = {jn: signal(v, dim=1, where=f"robot efforts.{jn}", ctx=c)
               for jn, v in efforts_table.items()}
    kw: dict[str, Any] = {"efforts": efforts, "warn": False,
                          "strict": c.boolean(r, "robot", "strict", False)}
    if gravity is not None:
        kw["gravity"] = gravity
    if found == "urdf":
        kw["floating_base"] = c.boolean(r, "robot", "floating_base", False)
        kw["mimic"] = c.string(r, "robot", "mimic", required=False, default="couple",
                               choices=("couple", "independent", "refuse"))
        kw["massless"] = c.string(r, "robot", "massless", required=False, default="refuse",
                                  choices=("refuse", "fix"))
        kw["min_inertia"] = c.number(r, "robot", "min_inertia", required=False,
                                     positive=True)
    else:
        kw["contacts"] = c.boolean(r, "robot", "contacts", True)
        lim = r.get("limits")
        if lim == "impact":
            kw["limits"] = "impact"
        elif isinstance(lim, dict):
            c.only(lim, "robot.limits", {"stiffness", "damping", "restitution"})
            kw["limits"] = {k: c.number(lim, "robot.limits", k, nonneg=True) for k in lim}
        elif lim is not None:
            c.fail("robot", "limits", f"{lim!r}; valid: \"impact\", or a table of stiffness "
                                      f"(N m/rad or N/m) and damping: stops as compliant as "
                                      f"MuJoCo's soft limits")
    if found == "urdf":
        for key in ("contacts", "limits"):
            if key in r:
                c.fail("robot", key, "an MJCF option here (a URDF's <collision> geometry "
                                     "is not imported yet, and its limits are the "
                                     "importer's limits= in Python)")
    if found != "urdf":
        for key in ("floating_base", "mimic", "massless", "min_inertia"):
            if key in r:
                c.fail("robot", key, "a URDF option; an MJCF file says which bodies float "
                                     "(free joints), has no mimic joints and bounds "
                                     "inertias itself (<compiler boundinertia>)")
    try:
        return (load_urdf if found == "urdf" else load_mjcf)(file, **kw)
    except ModelError as exc:
        c.fail("robot", "file", str(exc))
