"""The element library's compiled kernels as C text, for an exported FMU
(:mod:`bondgraph.fmu`): the program of :mod:`elements.kernels.compiled` (``_c/program.c``, a
C port with the same sums in the same order) and the quaternion rates.

The quaternion formulas are not copied: they are printed from their one definition in
:mod:`bondgraph.spatial` (called with sympy symbols). The core's exporter asks for these
through the ``c_source`` of the fused moduli (:class:`elements.kernels.blocks._Fused`) and of
the bodies' kinematic rate function; it never imports this module.
"""

from __future__ import annotations

from importlib import resources

import sympy
from sympy.printing.c import C99CodePrinter

from bondgraph import spatial

__all__ = ["program_c_source", "quat_rate_c_source"]


def _entries_c(fn, name: str, args: str) -> str:
    """A C function ``name(args..., double *e)`` writing the entries ``fn`` returns."""
    syms = sympy.symbols(args)
    printer = C99CodePrinter({"strict": True})
    params = ", ".join(f"double {s.name}" for s in syms)
    body = "".join(f"    e[{k}] = {printer.doprint(sympy.sympify(e))};\n"
                   for k, e in enumerate(fn(*syms)))
    return f"static void {name}({params}, double *e) {{\n{body}}}\n\n"


def program_c_source() -> str:
    """``bg_program`` (see ``bondgraph/fmu/c/bg_fused.h``) with the rotation-matrix and
    body-rate formulas it uses."""
    text = resources.files(__package__).joinpath("_c", "program.c").read_text(
        encoding="utf-8")
    return (_entries_c(spatial.quat_matrix_entries, "bg_quat_matrix_entries", "w x y z") +
            _entries_c(spatial.body_rate_entries, "bg_body_rate_entries",
                       "w x y z a b c d") + text)


def quat_rate_c_source() -> str:
    """``bg_kin_rate``: dq/dt = 1/2 q (x) (0, omega^b) for stacks q (nq, 4), omega^b
    (nq, 3) (:func:`elements.kernels.compiled.quat_rates`)."""
    return (_entries_c(spatial.quat_rate_entries, "bg_quat_rate_entries", "w x y z a b c") +
            "void bg_kin_rate(int64_t nq, int64_t qd, int64_t qk, const double *q,\n"
            "                 const double *om, double *out) {\n"
            "    for (int64_t i = 0; i < nq; i++) {\n"
            "        const double *s = q + qd * i, *o = om + qk * i;\n"
            "        bg_quat_rate_entries(s[0], s[1], s[2], s[3], o[0], o[1], o[2], "
            "out + qd * i);\n"
            "    }\n}\n")
