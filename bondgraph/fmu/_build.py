"""Writing an FMU: its C sources, the binary compiled with the system's C compiler, and
the zip archive (FMI 2.0 layout: ``modelDescription.xml``, ``sources/``,
``binaries/<platform>/<identifier>.<so|dylib|dll>``, ``documentation/``).

The C runtime travels as package data (``bondgraph/fmu/c``): the FMI 2.0 headers with
their license, the FMI functions, the co-simulation solver, the small linear algebra and
the two engines. The compiler is ``$CC`` when set, else the first of ``cc``, ``gcc``,
``clang`` on the path; it compiles with ``-ffp-contract=off`` (no fused multiply-adds,
so that sums round as numpy's). A compile failure keeps the sources in a folder beside
the FMU and raises :class:`~bondgraph.errors.FMUBuildError` naming it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import resources

from .._files import atomic_path
from ..errors import FMUBuildError

__all__ = ["RUNTIME", "runtime_text", "platform_folder", "find_compiler", "build_fmu"]

RUNTIME = ("bg_runtime.h", "bg_fmi2.c", "bg_solver.c", "bg_linalg.h", "bg_linalg.c",
           "fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h")
"""The runtime's files (with the engine's: ``bg_dense.*`` or ``bg_fused.*``)."""

LICENSE = "LICENSE_FMI.txt"

CFLAGS = ("-std=c99", "-O2", "-fPIC", "-ffp-contract=off", "-Wall")


def runtime_text(name: str) -> str:
    """The text of a runtime file (package data)."""
    return resources.files(__package__).joinpath("c", name).read_text(encoding="utf-8")


def platform_folder() -> tuple[str, str] | None:
    """(the FMI 2.0 platform folder, the binary's suffix) of this machine, or None where
    FMI 2.0 names none (an architecture other than x86 and x86-64)."""
    bits = "64" if sys.maxsize > 2 ** 32 else "32"
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return None
    if sys.platform.startswith("linux"):
        return f"linux{bits}", ".so"
    if sys.platform == "darwin":
        return f"darwin{bits}", ".dylib"
    if sys.platform == "win32":
        return f"win{bits}", ".dll"
    return None


def find_compiler(cc: str | None = None) -> str | None:
    """The C compiler's path: ``cc`` if given, ``$CC``, else ``cc``, ``gcc``, ``clang``."""
    for cand in ([cc] if cc else []) + ([os.environ["CC"]] if os.environ.get("CC") else []) \
            + ["cc", "gcc", "clang"]:
        path = shutil.which(cand)
        if path:
            return path
    return None


def _keep_sources(path: str, sources: dict[str, str]) -> str:
    """Write the sources into ``<FMU without .fmu>_sources/`` beside the FMU."""
    stem = path[:-4] if path.lower().endswith(".fmu") else path
    folder = f"{stem}_sources"
    os.makedirs(folder, exist_ok=True)
    for name, text in sources.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    return folder


def build_fmu(path: str, identifier: str, xml: str, sources: dict[str, str], *,
              compile_binary: bool = True, cc: str | None = None) -> str | None:
    """Compile ``sources`` (name -> text) and write the FMU at ``path``; returns the
    binary's path inside the archive (None when ``compile_binary`` is False: a
    source-only FMU).

    Raises
    ------
    FMUBuildError
        No compiler, no FMI platform for this machine, or the compiler failed: the
        sources are kept beside ``path`` (the error's ``sources``)."""
    binary_name = None
    binary = None
    if compile_binary:
        plat = platform_folder()
        compiler = find_compiler(cc)
        if plat is None or compiler is None:
            folder = _keep_sources(path, sources)
            what = ("no C compiler found (set CC, or install cc, gcc or clang)"
                    if compiler is None else
                    f"FMI 2.0 names no platform folder for this machine "
                    f"({platform.system()} {platform.machine()})")
            raise FMUBuildError(f"the FMU's binary cannot be built: {what}; its C sources "
                                f"are in {folder} (or export with compile=False for a "
                                f"source-only FMU)", sources=folder)
        folder_name, suffix = plat
        with tempfile.TemporaryDirectory(prefix="bondgraph_fmu_") as tmp:
            for name, text in sources.items():
                with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
            out = os.path.join(tmp, identifier + suffix)
            cfiles = sorted(n for n in sources if n.endswith(".c"))
            cmd = [compiler, *CFLAGS, "-shared", "-o", out, *cfiles, "-lm"]
            if sys.platform == "win32":
                cmd.remove("-fPIC")
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            if proc.returncode != 0 or not os.path.isfile(out):
                folder = _keep_sources(path, sources)
                log = (proc.stderr or proc.stdout or "").strip()
                first = next((ln for ln in log.splitlines() if "error" in ln), log[:300])
                raise FMUBuildError(f"the C compiler ({os.path.basename(compiler)}) failed "
                                    f"on the FMU's sources: {first}; the sources are in "
                                    f"{folder} (the full log: the error's log)",
                                    sources=folder, log=log)
            with open(out, "rb") as f:
                binary = f.read()
        binary_name = f"binaries/{folder_name}/{identifier}{suffix}"
    with atomic_path(path) as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("modelDescription.xml", xml)
            for name, text in sources.items():
                z.writestr(f"sources/{name}", text)
            z.writestr(f"documentation/licenses/{LICENSE}", runtime_text(LICENSE))
            if binary is not None:
                z.writestr(binary_name, binary)
    return binary_name
