"""Writing TOML (the standard library reads it, :mod:`tomllib`, but does not write it).

- :func:`value_text`: a value as TOML: booleans, integers, floats (``repr``: exact,
  ``inf`` and ``nan`` included), strings, arrays and inline tables.
- :func:`table_text`: a ``[header]`` or ``[[header]]`` table of key = value lines.
- :func:`key_text`: a key, bare when it can be, quoted otherwise.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["value_text", "table_text", "key_text"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _string(s: str) -> str:
    # JSON's escapes are TOML's (\" \\ \n \t \uXXXX...); TOML also refuses a raw DEL
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def key_text(key: str) -> str:
    """``key`` bare (letters, digits, ``_``, ``-``) or quoted (``"m2.mass"``: a dot in a
    bare key would nest tables)."""
    return key if _BARE.match(key) else _string(key)


def value_text(v: Any) -> str:
    """``v`` as a TOML value.

    Raises
    ------
    TypeError
        For a value TOML cannot hold (None, an object).
    """
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{key_text(k)} = {value_text(x)}" for k, x in v.items()) \
            + " }" if v else "{}"
    raise TypeError(f"TOML cannot hold {type(v).__name__} {v!r}")


def table_text(header: str, table: Mapping[str, Any], *, array: bool = False) -> str:
    """``[header]`` (``[[header]]`` with ``array``) and one ``key = value`` line per
    entry, ending with a newline."""
    head = f"[[{header}]]" if array else f"[{header}]"
    return head + "\n" + "".join(f"{key_text(k)} = {value_text(v)}\n"
                                 for k, v in table.items())
