"""Reading TOML files: the text (:func:`read_text`: UTF-8, a regular file of a sensible
size), the TOML (:func:`read_toml`, byte-order mark allowed), checked values of its tables
(:class:`TableReader`: numbers, booleans, vectors, matrices, names, tables; the core's
typed reader with :class:`ModelFileError`), signals (:func:`signal`); every error names
the file, the table and the key.

Used by the model files (:mod:`elements.files.modelfile`), the study files and the robot
importers (for the text).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from bondgraph import ModelError, TimeFunction
from bondgraph._files import read_text
from bondgraph._tables import TableReader as _CoreTableReader, read_toml

__all__ = ["ModelFileError", "TableReader", "signal", "read_text", "read_toml", "xml_root"]


class ModelFileError(ModelError):
    """Fires when a model file is malformed; names the file, the table and the key."""


class TableReader(_CoreTableReader):
    """Checked values from the tables of the model (or study) file ``path``
    (:class:`bondgraph._tables.TableReader`, the package's one typed reader); each
    method returns the value or raises a :class:`ModelFileError` (or the ``error``
    given) naming the file, the table (``where``) and the key."""

    error = ModelFileError


def signal(spec: Any, *, dim: int = 1, where: str = "signal",
           ctx: TableReader | None = None) -> Any:
    """A value table -> a number (dim 1), an array (dim > 1) or a TimeFunction (an
    ``expression`` signal's: :meth:`bondgraph.TimeFunction.expression`, its text read,
    never executed)."""
    c = ctx or TableReader("<table>")

    def val(v, key):
        if dim == 1:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                c.fail(where, key, f"must be a finite number, got {v!r}")
            return float(v)
        return c.vector(v, where, key, dim)

    if not isinstance(spec, dict):
        return val(spec, "value")
    kind = c.string(spec, where, "type",
                    choices=("constant", "step", "ramp", "sine", "table", "expression"))
    if kind == "expression":
        c.only(spec, where, {"type", "expr"})
        text = c.string(spec, where, "expr", required=True)
        at = f"{c.path}: [{where}] 'expr'"
        try:
            f = TimeFunction.expression(text, where=at)
        except ModelError as exc:
            raise ModelFileError(str(exc)) from None
        n = len(f.compiled.params[0])
        if n != dim:
            c.fail(where, "expr", f"gives {n} value{'s' * (n != 1)}; valid: "
                   + ("one expression of t" if dim == 1 else
                      f"a list of {dim} expressions of t, e.g. \"[0, 0, 5*sin(2*t)]\""))
        return f
    if kind == "constant":
        c.only(spec, where, {"type", "value"})
        if "value" not in spec:
            c.fail(where, "value", "missing")
        return val(spec["value"], "value")
    if kind == "step":
        c.only(spec, where, {"type", "time", "before", "after"})
        t0 = c.number(spec, where, "time")
        a = val(spec.get("before", 0.0 if dim == 1 else [0.0] * dim), "before")
        if "after" not in spec:
            c.fail(where, "after", "missing")
        b = val(spec["after"], "after")
        return TimeFunction.step(b, t0, a)
    if kind == "ramp":
        c.only(spec, where, {"type", "slope", "start", "offset"})
        if "slope" not in spec:
            c.fail(where, "slope", "missing")
        k = val(spec["slope"], "slope")
        t0 = c.number(spec, where, "start", required=False, default=0.0)
        off = val(spec.get("offset", 0.0 if dim == 1 else [0.0] * dim), "offset")
        return TimeFunction.ramp(k, t0, off)
    if kind == "sine":
        c.only(spec, where, {"type", "amplitude", "omega", "frequency", "phase", "offset"})
        if "amplitude" not in spec:
            c.fail(where, "amplitude", "missing")
        amp = val(spec["amplitude"], "amplitude")
        if ("omega" in spec) == ("frequency" in spec):
            c.fail(where, "omega", "give exactly one of 'omega' (rad/s) or 'frequency' (Hz)")
        w = c.number(spec, where, "omega") if "omega" in spec else \
            2 * math.pi * c.number(spec, where, "frequency")
        ph = c.number(spec, where, "phase", required=False, default=0.0)
        off = val(spec.get("offset", 0.0 if dim == 1 else [0.0] * dim), "offset")
        return TimeFunction.sine(amp, w, ph, off)
    c.only(spec, where, {"type", "t", "value", "breaks"})
    ts = spec.get("t")
    vs = spec.get("value")
    if not isinstance(ts, list) or len(ts) < 2:
        c.fail(where, "t", "must be a list of at least 2 increasing times")
    tarr = np.array([c.number({"t": v}, where, "t") for v in ts])
    if np.any(np.diff(tarr) <= 0):
        c.fail(where, "t", "times must increase strictly")
    if not isinstance(vs, list) or len(vs) != len(ts):
        c.fail(where, "value", f"must be a list of {len(ts)} values (one per time)")
    varr = np.array([val(v, "value") for v in vs], dtype=float)
    breaks = c.boolean(spec, where, "breaks", required=False, default=True)
    return TimeFunction.table(tarr, varr, breaks=breaks, where=f"{c.path}: [{where}]")


def xml_root(text: str) -> str | None:
    """The name of the root element of the XML document ``text`` (``"robot"`` for a
    URDF, ``"mujoco"`` for MJCF), read from its start, past the declaration, comments
    and a doctype; None when none is found there."""
    head = re.sub(r"<!--.*?(-->|$)", "", text[:65536], flags=re.S)
    match = re.search(r"<(?![?!])\s*([A-Za-z_][\w.:-]*)", head)
    return match.group(1) if match else None
