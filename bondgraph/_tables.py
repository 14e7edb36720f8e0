"""Checked values of TOML files: the one typed reader of the package's files.

- :func:`read_toml`: TOML text (a UTF-8 byte-order mark allowed) as a document; the
  error names the file on text that is not TOML or nests too deeply.
- :class:`TableReader`: the values of a file's tables, each checked for its type and
  range (numbers, integers, booleans, strings and choices, names, vectors, matrices,
  tables, arrays of tables, and any value against a constructor's type annotation with
  :meth:`TableReader.typed`); every error names the file, the table and the key and
  says what is valid, raised as the reader's ``error`` class.

Bond graph files (:mod:`bondgraph._graphfile_read`), model files, study files and robot
descriptions (``elements.files.tables``) read their values through it.
"""

from __future__ import annotations

import collections.abc
import math
import tomllib
import types
import typing
from typing import Any, NoReturn

import numpy as np

from .errors import ModelError, did_you_mean

__all__ = ["TableReader", "read_toml"]


def read_toml(text: str, path: str, error: type[ModelError] = ModelError) -> dict:
    """Parse TOML ``text`` (a UTF-8 byte-order mark at the start is allowed); ``error``
    names ``path`` for text that is not TOML or that nests too deeply to read."""
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: arrays or tables nested too deeply to read") from None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class TableReader:
    """Checked values from the tables of the file ``path``: each method returns the
    value or raises ``error`` (a :class:`~bondgraph.ModelError` subclass) naming the
    file, the table (``where``) and the key.

    A key is required when no ``default`` is given, unless ``required=False`` (then a
    missing key gives ``default``, None)."""

    error: type[ModelError] = ModelError

    def __init__(self, path: str, error: type[ModelError] | None = None):
        self.path = path
        if error is not None:
            self.error = error

    def fail(self, where: str, key: str | None, what: str) -> NoReturn:
        at = f" '{key}'" if key else ""
        raise self.error(f"{self.path}: [{where}]{at}: {what}")

    def only(self, table: dict, where: str, allowed) -> None:
        """Refuse a key of ``table`` that is not in ``allowed``."""
        for k in table:
            if k not in allowed:
                self.fail(where, k, f"unknown key{did_you_mean(k, allowed) or ';'} valid "
                                    f"keys: {', '.join(sorted(allowed))}")

    @staticmethod
    def _required(required: bool | None, default: Any) -> bool:
        return default is None if required is None else required

    def number(self, table: dict, where: str, key: str, default: float | None = None, *,
               required: bool | None = None, positive: bool = False,
               nonneg: bool = False) -> float:
        """A finite number (an integer or a float, never a boolean), as a float."""
        if key not in table:
            if self._required(required, default):
                self.fail(where, key, "missing; a number is required")
            return default
        v = table[key]
        if not _number(v):
            self.fail(where, key, f"must be a number, got {type(v).__name__} {v!r}")
        v = float(v)
        if not math.isfinite(v):
            self.fail(where, key, f"must be finite, got {v}")
        if positive and v <= 0:
            self.fail(where, key, f"must be positive, got {v}")
        if nonneg and v < 0:
            self.fail(where, key, f"must be >= 0, got {v}")
        return v

    def integer(self, table: dict, where: str, key: str, default: int | None = None,
                low: int | None = None, high: int | None = None, *,
                required: bool | None = None) -> int:
        """An integer (never a float or a boolean), from ``low`` to ``high`` when
        given."""
        if key not in table:
            if self._required(required, default):
                self.fail(where, key, "missing; an integer is required")
            return default
        v = table[key]
        bad = isinstance(v, bool) or not isinstance(v, int)
        if bad or (low is not None and v < low) or (high is not None and v > high):
            span = (f" from {low} to {high}" if low is not None and high is not None else
                    f" >= {low}" if low is not None else
                    f" <= {high}" if high is not None else "")
            self.fail(where, key, f"must be an integer{span}, got {v!r}")
        return v

    def boolean(self, table: dict, where: str, key: str, default: bool | None = None, *,
                required: bool | None = None) -> bool:
        """``true`` or ``false`` (never a number or a string such as "yes")."""
        if key not in table:
            if self._required(required, default):
                self.fail(where, key, "missing; true or false is required")
            return default
        v = table[key]
        if not isinstance(v, bool):
            self.fail(where, key, f"must be true or false, got {type(v).__name__} {v!r}")
        return v

    def string(self, table: dict, where: str, key: str, default: str | None = None, *,
               required: bool | None = None, choices=None) -> str:
        """A string; with ``choices``, one of them."""
        if key not in table:
            if self._required(required, default):
                self.fail(where, key, "missing; a string is required")
            return default
        v = table[key]
        if not isinstance(v, str):
            self.fail(where, key, f"must be a string, got {type(v).__name__} {v!r}")
        if choices is not None and v not in choices:
            self.fail(where, key, f"unknown value {v!r}{did_you_mean(v, choices) or ';'} "
                                  f"valid: {', '.join(choices)}")
        return v

    def names(self, table: dict, where: str, key: str) -> tuple[str, ...]:
        """A name or a list of names (default none), as a tuple: ``"q_cap"`` is one
        name, never its characters."""
        v = table.get(key, [])
        if isinstance(v, str):
            return (v,)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.fail(where, key, f"must be a name or a list of names, got {v!r}")
        return tuple(v)

    def vector(self, value: Any, where: str, key: str, n: int = 3) -> np.ndarray:
        """``n`` finite numbers."""
        if not isinstance(value, list) or len(value) != n:
            self.fail(where, key, f"must be a list of {n} numbers, got {value!r}")
        out = []
        for v in value:
            if not _number(v) or not math.isfinite(v):
                self.fail(where, key, f"must be {n} finite numbers, got {value!r}")
            out.append(float(v))
        return np.array(out)

    def matrix(self, value: Any, where: str, key: str) -> np.ndarray:
        """A 3x3 matrix of finite numbers (three lists of three)."""
        if not isinstance(value, list) or len(value) != 3:
            self.fail(where, key, f"must be a 3x3 matrix (three lists of 3 numbers), got "
                                  f"{value!r}")
        return np.array([self.vector(row, where, key) for row in value])

    def table(self, parent: dict, key: str, header: str | None = None) -> dict:
        """``parent[key]`` (default empty) as a table written ``[header]`` (default
        ``[key]``)."""
        header = header or key
        v = parent.get(key, {})
        if not isinstance(v, dict):
            what = ("an array of tables" if isinstance(v, list) and v and
                    all(isinstance(e, dict) for e in v) else f"{type(v).__name__} {v!r}")
            self.fail(header, header.rsplit(".", 1)[-1],
                      f"must be a single table, written [{header}] with one bracket; "
                      f"got {what}")
        return v

    def tables(self, parent: dict, key: str, header: str | None = None,
               what: str | None = None) -> list[dict]:
        """``parent[key]`` (default none) as an array of tables written ``[[header]]``
        (default ``[[key]]``), one per ``what``."""
        header = header or key
        what = what or key.replace("_", " ")
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

    def typed(self, value: Any, hint: Any, where: str, key: str) -> Any:
        """``value`` checked against a constructor's type annotation ``hint`` (as
        :func:`typing.get_type_hints` gives it) and converted for it: ``bool`` takes
        only true or false, ``int`` an integer, ``float`` a number, ``str`` a string, a
        sequence of strings a name or a list of names (one name, never its characters),
        ``tuple[int, int]`` a list of two integers. ``Any`` and unannotated keywords
        are the element's to check (numbers, arrays, expressions). A Python object
        (a callable, a class instance) cannot be written in a file and is refused."""
        if hint is Any or hint is None or hint is type(None):
            return value
        origin = typing.get_origin(hint)
        if origin in (typing.Union, types.UnionType):
            options = [h for h in typing.get_args(hint) if h is not type(None)]
            if len(options) == 1:
                return self.typed(value, options[0], where, key)
            if any(h is Any for h in options):
                return value
            errors = []
            for h in options:
                try:
                    return self.typed(value, h, where, key)
                except self.error as exc:
                    errors.append(str(exc).rsplit(": ", 1)[-1])
            self.fail(where, key, " or ".join(errors))
        if hint is bool:
            return self.boolean({key: value}, where, key)
        if hint is int:
            return self.integer({key: value}, where, key)
        if hint is float:
            return self.number({key: value}, where, key)
        if hint is str:
            return self.string({key: value}, where, key)
        args = typing.get_args(hint)
        if origin in (tuple, list, collections.abc.Sequence) and args and \
                all(a is str or a is Ellipsis for a in args):
            return self.names({key: value}, where, key)
        if origin is tuple and args and all(a is int for a in args):
            if not isinstance(value, list) or len(value) != len(args):
                self.fail(where, key, f"must be a list of {len(args)} integers, got "
                                      f"{value!r}")
            return tuple(self.integer({key: v}, where, key) for v in value)
        name = getattr(hint, "__name__", None) or str(hint)
        self.fail(where, key, f"takes a {name} (a Python object), which a file cannot "
                              f"hold; build this element in Python, or leave {key} out")
