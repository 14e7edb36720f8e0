"""Files, safely: written whole or not at all, only where the user said, never through a
link someone planted; read only when they are files of a sensible size.

- :func:`atomic_open`: a new temporary file beside the target, created exclusively under
  an unpredictable name (``O_CREAT | O_EXCL | O_NOFOLLOW``: a symbolic link or a file
  already there is never followed or reused), open for writing; renamed onto the target
  when the writing succeeds and removed when it fails or is interrupted (Ctrl-C
  included), so a reader never sees half a file and no ``*.tmp`` is left behind.
- :func:`atomic_path`: the same for writers that take a file name (matplotlib, scipy's
  savemat, ffmpeg): the temporary file is created the same way, then written by name.
- :func:`write_text`: text (UTF-8, whatever the locale) through :func:`atomic_open`.
- :func:`open_append`: a file that grows while a job runs (a study's results), opened
  without following a link.
- :func:`output_name`: a file name that a model or study file asks to be written into
  the output folder: refused (ValueError saying why and what is valid) when it could
  land elsewhere (an absolute path, a directory part, ``..``) or is not a plain name.
- :func:`mat_names`: MATLAB variable names for column names (valid and unique).
- :data:`MAX_POINTS`: the most output points a model or bond graph file may ask for.
- :func:`read_text`: the UTF-8 text of a file the user named, refused (naming it) when it
  is missing, not a regular file (a directory, ``/dev/zero``, a pipe), larger than
  :data:`MAX_FILE_BYTES` or not UTF-8.

Every writer of the package goes through :func:`atomic_open`, :func:`atomic_path` or
:func:`open_append`.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from .errors import ModelError

__all__ = ["atomic_open", "atomic_path", "open_append", "write_text", "output_name",
           "read_text", "mat_names", "MAX_FILE_BYTES", "MAX_POINTS"]

MAX_FILE_BYTES = 10_000_000
"""The largest file read as a model, study, bond graph or robot description file
(bytes)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _create_temporary(path: str, suffix: str) -> tuple[int, str]:
    """A new file beside ``path``, created exclusively (never a link or a file already
    there) under an unpredictable name ending in ``.tmp`` + ``suffix``: (its
    descriptor, its name)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_BINARY", 0)
    folder, name = os.path.split(path)
    for _ in range(100):         # (the name cut so that the temporary one fits in 255)
        tmp = os.path.join(folder, f"{name[:200]}.{secrets.token_hex(6)}.tmp{suffix[:30]}")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free temporary name beside it")

MAX_POINTS = 100_000
"""The most output points a model file or a bond graph file may ask for. Every point is
evaluated again after the run (bond values, reactions, energy) and written to every CSV
file: 100 000 points of the three-body example take about 15 s and 240 MB of files, ten
times that would take minutes and gigabytes. From Python, ``simulate`` takes any grid."""


@contextmanager
def _replacing(path: str, tmp: str) -> Iterator[None]:
    """On a normal exit rename ``tmp`` onto ``path``; on any exception remove ``tmp``."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Yield a file object (``mode`` "w" or "wb"; ``kwargs`` as for :func:`open`, such
    as ``encoding``) on a new temporary file beside ``path`` (see the module
    docstring); on a normal exit it is closed and replaces ``path``, on any exception
    (KeyboardInterrupt included) it is removed and the exception goes on."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes a new file: mode 'w' or 'wb', not {mode!r}")
    path = os.fspath(path)
    fd, tmp = _create_temporary(path, "")
    with _replacing(path, tmp):
        with open(fd, mode, **kwargs) as f:
            yield f


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[str]:
    """Yield the name of a new, empty temporary file beside ``path``, created as
    :func:`atomic_open` creates it, ending in ``.tmp`` + ``suffix`` (for writers that
    choose the format by the extension); the writer writes it by name. On a normal exit
    it replaces ``path``, on any exception (KeyboardInterrupt included) it is removed
    and the exception goes on."""
    path = os.fspath(path)
    fd, tmp = _create_temporary(path, suffix)
    os.close(fd)
    with _replacing(path, tmp):
        yield tmp


def open_append(path: str | os.PathLike, mode: str = "a", **kwargs) -> IO:
    """``path`` opened to add to its end (``mode`` "a" or "ab"; "r+b" to cut a partial
    last line), created when missing, never through a symbolic link (refused with an
    OSError): for a file written while a long job runs (a study's results table), which
    cannot be written whole at the end."""
    flags = {"a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
             "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
             "r+b": os.O_RDWR}[mode] | _NOFOLLOW | getattr(os, "O_BINARY", 0)
    fd = os.open(os.fspath(path), flags, 0o666)
    return open(fd, mode, **kwargs)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` in UTF-8, atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def read_text(path: str | os.PathLike, what: str,
              error: type[ModelError] = ModelError) -> str:
    """The UTF-8 text of the file ``path`` (a ``what``: "model file"...); ``error``
    names it when it is missing, a directory, not a regular file (a device such as
    ``/dev/zero``, a pipe), larger than :data:`MAX_FILE_BYTES`, unreadable or not
    UTF-8."""
    path = os.fspath(path)
    try:         # (non-blocking: opening a named pipe would wait for a writer)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_BINARY", 0))
        with open(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise error(f"{path}: is a directory; give the {what} itself")
            if not stat.S_ISREG(mode):
                raise error(f"{path}: not a regular file (a device, a pipe or a socket); "
                            f"give the {what} itself")
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory; give the {what} itself") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise error(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; valid: a {what} of at "
                    f"most {MAX_FILE_BYTES // 1_000_000} MB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None


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
