"""Writing files safely: whole or not at all, and only where the user said.

- :func:`atomic_path`: a temporary name next to the target, renamed onto it when the
  writing succeeds and removed when it fails or is interrupted (Ctrl-C included), so a
  reader never sees half a file and no ``*.tmp`` is left behind.
- :func:`write_text`: text (UTF-8, whatever the locale) through :func:`atomic_path`.
- :func:`output_name`: a file name that a model or study file asks to be written into
  the output folder: refused (ValueError saying why and what is valid) when it could
  land elsewhere (an absolute path, a directory part, ``..``) or is not a plain name.
- :func:`mat_names`: MATLAB variable names for column names (valid and unique).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["atomic_path", "write_text", "output_name", "mat_names"]


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[str]:
    """Yield a temporary path beside ``path`` (``path + ".tmp" + suffix``; ``suffix``
    for writers that choose the format by the extension); on a normal exit it replaces
    ``path``, on any exception (KeyboardInterrupt included) it is removed and the
    exception goes on."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{suffix}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` in UTF-8, atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)


def output_name(name: object, suffixes: Sequence[str] = (),
                reserved: Sequence[str] = ()) -> str:
    """``name`` if it is a plain file name that stays inside the output folder.

    Refused: anything but a non-empty string; a name with a directory part (``/`` or
    ``\\``), an absolute path, ``.`` or ``..``; control characters; with ``suffixes``, a
    name that does not end in one of them (case-insensitive); a name in ``reserved``
    (the files the run itself writes).

    Raises
    ------
    ValueError
        Saying what is wrong and what would be valid.
    """
    valid = "a plain file name such as 'plot.png' (it is written inside the output folder)"
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{name!r} is not a file name; valid: {valid}")
    if "/" in name or "\\" in name or os.path.isabs(name) or name in (".", ".."):
        raise ValueError(f"{name!r} points outside the output folder (directories and "
                         f"absolute paths are refused); valid: {valid}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise ValueError(f"{name!r} holds control characters; valid: {valid}")
    if len(name.encode("utf-8")) > 255:
        raise ValueError(f"{name[:40]!r}... is longer than a file name may be (255 bytes)")
    if suffixes and not name.lower().endswith(tuple(s.lower() for s in suffixes)):
        raise ValueError(f"{name!r} must end in {' or '.join(suffixes)}")
    if name in reserved:
        raise ValueError(f"{name!r} is a file the run writes itself; choose another name")
    return name


def mat_names(columns) -> dict[str, str]:
    """MATLAB variable names for CSV column names: ``.`` becomes ``_``, ``*`` ``star``,
    any other character that is not an ASCII letter, digit or ``_`` becomes ``u`` and
    its code point in hex (``質`` -> ``u8cea``); a name that does not start with a letter
    gets ``v_`` before it; names are cut to MATLAB's 63 characters and made unique with
    a numbered suffix. The map is written into the MAT file as ``column_names``."""
    out: dict[str, str] = {}
    taken: set[str] = {"column_names"}
    for col in columns:
        parts = []
        for ch in col:
            if ch == ".":
                parts.append("_")
            elif ch == "*":
                parts.append("star")
            elif ch.isascii() and (ch.isalnum() or ch == "_"):
                parts.append(ch)
            else:
                parts.append(f"u{ord(ch):04x}")
        name = "".join(parts)
        if not name or not name[0].isalpha():
            name = "v_" + name
        name = base = name[:63]
        k = 2
        while name in taken:
            tail = f"_{k}"
            name = base[:63 - len(tail)] + tail
            k += 1
        taken.add(name)
        out[col] = name
    return out
