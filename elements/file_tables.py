"""Reading TOML files: the text (UTF-8, byte-order mark allowed), the TOML, and checked
values of its tables (:class:`TableReader`: numbers, vectors, matrices, names, tables),
signals (:func:`signal`); every error names the file, the table and the key.

Used by the model files (:mod:`elements.modelfile`), the study files and the URDF importer
(for the text).
"""

from __future__ import annotations

import math
import tomllib
from typing import Any

import numpy as np

from bondgraph import ModelError, TimeFunction

__all__ = ["ModelFileError", "TableReader", "signal", "read_text", "read_toml"]


class ModelFileError(ModelError):
    """Fires when a model file is malformed; names the file, the table and the key."""


class TableReader:
    """Checked values from the tables of the file ``path``: each method returns the
    value or raises a :class:`ModelFileError` naming the file, the table (``where``) and
    the key."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, key: str, what: str):
        raise ModelFileError(f"{self.path}: [{where}] '{key}': {what}")

    def number(self, table: dict, where: str, key: str, *, required=True, default=None,
               positive=False, nonneg=False) -> float:
        if key not in table:
            if required:
                self.fail(where, key, "missing; a number is required")
            return default
        v = table[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(where, key, f"must be a number, got {type(v).__name__} {v!r}")
        v = float(v)
        if not math.isfinite(v):
            self.fail(where, key, f"must be finite, got {v}")
        if positive and v <= 0:
            self.fail(where, key, f"must be positive, got {v}")
        if nonneg and v < 0:
            self.fail(where, key, f"must be >= 0, got {v}")
        return v

    def integer(self, table: dict, where: str, key: str, *, required=True, default=None,
                low: int = 1, high: int | None = None, why: str = "") -> int:
        """An integer from ``low`` to ``high`` (None: no bound; ``why`` explains the
        bound in the message)."""
        if key not in table:
            if required:
                self.fail(where, key, "missing; an integer is required")
            return default
        v = table[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low or \
                (high is not None and v > high):
            rule = f"from {low} to {high}{why}" if high is not None else f">= {low}"
            self.fail(where, key, f"must be an integer {rule}, got {v!r}")
        return v

    def boolean(self, table: dict, where: str, key: str, default: bool) -> bool:
        v = table.get(key, default)
        if not isinstance(v, bool):
            self.fail(where, key, f"must be true or false, got {v!r}")
        return v

    def vector(self, value: Any, where: str, key: str, n: int = 3) -> np.ndarray:
        if not isinstance(value, list) or len(value) != n:
            self.fail(where, key, f"must be a list of {n} numbers, got {value!r}")
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                self.fail(where, key, f"must be {n} finite numbers, got {value!r}")
            out.append(float(v))
        return np.array(out)

    def matrix(self, value: Any, where: str, key: str) -> np.ndarray:
        if not isinstance(value, list) or len(value) != 3:
            self.fail(where, key, f"must be a 3x3 matrix (three lists of 3 numbers), got "
                                  f"{value!r}")
        return np.array([self.vector(row, where, key) for row in value])

    def string(self, table: dict, where: str, key: str, *, required=True, default=None,
               choices=None) -> str:
        if key not in table:
            if required:
                self.fail(where, key, "missing; a string is required")
            return default
        v = table[key]
        if not isinstance(v, str):
            self.fail(where, key, f"must be a string, got {type(v).__name__} {v!r}")
        if choices is not None and v not in choices:
            self.fail(where, key, f"unknown value {v!r}; valid: {', '.join(choices)}")
        return v

    def table(self, parent: dict, key: str, header: str) -> dict:
        """``parent[key]`` (default empty) as a table written ``[header]``."""
        v = parent.get(key, {})
        if not isinstance(v, dict):
            what = ("an array of tables" if isinstance(v, list) and v and
                    all(isinstance(e, dict) for e in v) else f"{type(v).__name__} {v!r}")
            self.fail(header, header.rsplit(".", 1)[-1],
                      f"must be a single table, written [{header}] with one bracket; "
                      f"got {what}")
        return v

    def tables(self, parent: dict, key: str, header: str, what: str) -> list[dict]:
        """``parent[key]`` (default none) as an array of tables written ``[[header]]``."""
        v = parent.get(key, [])
        if isinstance(v, dict):
            self.fail(header, header.rsplit(".", 1)[-1],
                      f"must be an array of tables: write [[{header}]] with two brackets, "
                      f"once per {what}, even for a single {what} (a single-bracket "
                      f"[{header}] is a plain table)")
        if not isinstance(v, list) or not all(isinstance(e, dict) for e in v):
            self.fail(header, header.rsplit(".", 1)[-1],
                      f"must be an array of tables written [[{header}]], one per {what}; "
                      f"got {v!r}")
        return v

    def only(self, table: dict, where: str, allowed):
        for k in table:
            if k not in allowed:
                self.fail(where, k, f"unknown key; valid keys: {', '.join(sorted(allowed))}")


def signal(spec: Any, *, dim: int = 1, where: str = "signal",
           ctx: TableReader | None = None) -> Any:
    """A value table -> a number (dim 1), an array (dim > 1) or a TimeFunction."""
    c = ctx or TableReader("<table>")

    def val(v, key):
        if dim == 1:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                c.fail(where, key, f"must be a finite number, got {v!r}")
            return float(v)
        return c.vector(v, where, key, dim)

    if not isinstance(spec, dict):
        return val(spec, "value")
    kind = c.string(spec, where, "type", choices=("constant", "step", "ramp", "sine", "table"))
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
        zero = 0.0 if dim == 1 else np.zeros(dim)
        return TimeFunction(lambda t: b if t >= t0 else a, lambda t: zero)
    if kind == "ramp":
        c.only(spec, where, {"type", "slope", "start", "offset"})
        if "slope" not in spec:
            c.fail(where, "slope", "missing")
        k = val(spec["slope"], "slope")
        t0 = c.number(spec, where, "start", required=False, default=0.0)
        off = val(spec.get("offset", 0.0 if dim == 1 else [0.0] * dim), "offset")
        zero = 0.0 if dim == 1 else np.zeros(dim)
        return TimeFunction(lambda t: off + k * max(t - t0, 0.0),
                            lambda t: k if t >= t0 else zero)
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
        return TimeFunction(lambda t: off + amp * np.sin(w * t + ph),
                            lambda t: amp * w * np.cos(w * t + ph))
    c.only(spec, where, {"type", "t", "value"})
    ts = spec.get("t")
    vs = spec.get("value")
    if not isinstance(ts, list) or len(ts) < 2:
        c.fail(where, "t", "must be a list of at least 2 increasing times")
    tarr = np.array([c.number({"t": v}, where, "t") for v in ts])
    if np.any(np.diff(tarr) <= 0):
        c.fail(where, "t", "times must increase strictly")
    if not isinstance(vs, list) or len(vs) != len(ts):
        c.fail(where, "value", f"must be a list of {len(ts)} values (one per time)")
    varr = np.array([val(v, "value") for v in vs], dtype=float).reshape(len(ts), -1)
    slopes = np.diff(varr, axis=0) / np.diff(tarr)[:, None]

    def value(t):
        out = np.array([np.interp(t, tarr, varr[:, k]) for k in range(varr.shape[1])])
        return float(out[0]) if dim == 1 else out

    def rate(t):
        i = int(np.searchsorted(tarr, t, side="right")) - 1
        if i < 0 or i >= len(slopes):
            r = np.zeros(varr.shape[1])
        else:
            r = slopes[i]
        return float(r[0]) if dim == 1 else r

    return TimeFunction(value, rate)


def read_text(path: str, what: str, error: type[ModelError]) -> str:
    """The UTF-8 text of the file ``path``; ``error`` names it when it is missing, a
    directory, unreadable or not UTF-8."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory; give the {what} itself") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_toml(text: str, path: str, error: type[ModelError]) -> dict:
    """Parse TOML text (a UTF-8 byte-order mark at the start is allowed); ``error``
    names ``path`` for text that is not TOML or that nests too deeply to read."""
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: arrays or tables nested too deeply to read") from None
