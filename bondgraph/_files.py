"""Writing files safely: whole or not at all, and only where the user said.

- :func:`atomic_path`: a temporary name next to the target, renamed onto it when the
  writing succeeds and removed when it fails or is interrupted (Ctrl-C included), so a
  reader never sees half a file and no ``*.tmp`` is left behind.
- :func:`write_text`: text (UTF-8, whatever the locale) through :func:`atomic_path`.
- :func:`output_name`: a file name that a model or study file asks to be written into
  the output folder: refused (ValueError saying why and what is valid) when it could
  land elsewhere (an absolute path, a directory part, ``..``) or is not a plain name.
- :data:`MAX_POINTS`: the most output points a model or bond graph file may ask for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["atomic_path", "write_text", "output_name", "MAX_POINTS"]

MAX_POINTS = 100_000
"""The most output points a model file or a bond graph file may ask for. Every point is
evaluated again after the run (bond values, reactions, energy) and written to every CSV
file: 100 000 points of the three-body example take about 15 s and 240 MB of files, ten
times that would take minutes and gigabytes. From Python, ``simulate`` takes any grid."""


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
