"""The fused engine's data (``c/bg_fused.c``): the packed arrays of a model's compiled
right-hand side (:meth:`bondgraph._fastrk.CompiledLoop.pack`) at the export's pivot
order, and the element library's kernels as C.

Where it applies: the model's whole evaluation is compiled (numba enabled, the sparse
one-call path, constraint sources, the moduli, their rates and Phi in one fused context
that offers its C source, at most one vectorised kinematic rate that offers its C
source). Sources may vary with time (their values are computed in C); the parameters
that only the sources use stay tunable, every other number is built into the arrays.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import RK45

from .._fastrk import compiled_loop
from .._rhs import RightHandSide
from ._cwriter import array, scalar, string

__all__ = ["fused_parts", "fused_c", "FUSED_SOURCES"]

FUSED_SOURCES = ("bg_fused.c", "bg_fused.h")

# the order of CompiledLoop.pack's D (bondgraph._rk_kernels.fused_rhs unpacks it so)
_D = ("DIMS", "XI", "V_DESC", "V_INTS", "V_FLTS", "R_DESC", "R_INTS", "R_FLTS", "DEST_P",
      "RI", "COPY_DST", "COPY_SRC", "Q_STATE", "Q_FLOW", "Q_DST", "W1_KIN", "I_ALL", "F_ALL",
      "IO", "FO", "S_INTS", "S_OFF", "T_COEF", "SRC", "U1", "DU1", "AB", "W2_X", "WORK_E",
      "WORK_F", "WORK_OFF", "SRC_SIZE", "SRC_INTS", "SRC_FLTS", "SRC_DEST", "SRC_FROM",
      "SRC_RDEST", "SRC_RFROM", "AFF_DEST", "AFF_IDX", "AFF_COEF", "AFF_CONST")
# (the compiled sources': none in an export, which refuses state-dependent sources; the
# affine Phi: written from the compiled parts as BGF_PHIA_*)
_NO_C = ("U1", "DU1", "SRC_SIZE", "SRC_INTS", "SRC_FLTS", "SRC_DEST", "SRC_FROM",
         "SRC_RDEST", "SRC_RFROM", "AFF_DEST", "AFF_IDX", "AFF_COEF", "AFF_CONST")


def fused_parts(model, x0: np.ndarray, stabilization):
    """(the packed arrays D, the compiled parts, the sparse reduction) of ``model`` at
    the initial state, or (None, why not, None)."""
    parts, why = model.functions.compiled_parts()
    if parts is None:
        return None, why, None
    if not parts.get("program_c"):
        return None, "the fused moduli offer no C source of their kernel", None
    if parts["rate_kernel"] is not None and not parts.get("rate_c"):
        return None, "the kinematic rate kernel offers no C source", None
    fast = model.sparse()
    if not fast.applicable:
        return None, f"the sparse evaluation does not apply ({fast.reason})", None
    ws = fast.workspace()
    with np.errstate(all="ignore"):
        ev = fast.evaluate(0.0, x0, stabilization, ws)
    if ev is None or not np.all(np.isfinite(ev.xdot)):
        return None, "the sparse evaluation cannot evaluate the initial state", None
    rhs = RightHandSide(model, stabilization, fast, ws, ev.rank, lambda: 1.0)
    loop, why = compiled_loop(model, RK45, rhs, stabilization, (), True,
                              constant_sources=False, affine_phi=True)
    if loop is None:
        return None, why, None
    got = loop.pack()
    if got is None:
        return None, "the compiled evaluation has no pivot order at the initial state", None
    return got[0], parts, fast


def fused_c(D, fast, parts, model) -> str:
    """The C arrays of bg_fused.h from the packed arrays ``D`` (and the compiled parts'
    affine Phi), with the owner of each modulus entry (its element, in the layout's
    order of the dynamic two-ports: ``BGF_MOD_OWNER``, ``BGF_MOD_NAME``) for the
    engine's messages."""
    out = []
    owners, names = [], []
    for name, _mod, _start, n2, n1 in model.layout.dynamic:
        owners += [len(names)] * (n2 * n1)
        names.append(f"{model._elements[name].kind} '{name}'")
    out += [array("int64_t", "BGF_MOD_OWNER", owners),
            "const char *const BGF_MOD_NAME[] = {" +
            (", ".join(string(n) for n in names) or "0") + "};\n"]
    aff = parts.get("phi_affine")
    if aff is None:
        aff = (np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.int64),
               np.zeros((0, 0)), np.zeros(0))
    dest, idx, coef, const = aff
    out += [scalar("int64_t", "BGF_NPHIA", dest.size),
            scalar("int64_t", "BGF_PHIA_M", idx.shape[1] if idx.ndim == 2 else 0),
            array("int64_t", "BGF_PHIA_DEST", dest), array("int64_t", "BGF_PHIA_IDX", idx),
            array("double", "BGF_PHIA_COEF", coef), array("double", "BGF_PHIA_CONST", const)]
    for name, a in zip(_D, D):
        a = np.asarray(a)
        if name in _NO_C:
            continue                    # (U_1: computed by bg_sources)
        ctype = "double" if a.dtype.kind == "f" else "int64_t"
        if name == "DIMS":
            out.append(f"const int64_t BGF_DIMS[7] = {{{', '.join(str(int(v)) for v in a)}}};\n")
            continue
        if name == "AB":
            out.append(f"const double BGF_AB[2] = {{{float(a[0])!r}, {float(a[1])!r}}};\n")
            continue
        out.append(array(ctype, f"BGF_{name}", a.ravel()))
    v_desc, r_desc = np.asarray(D[2]), np.asarray(D[5])
    q_state, q_flow = np.asarray(D[12]), np.asarray(D[13])
    nq = q_state.shape[0] if q_state.ndim == 2 else 0
    out += [scalar("int64_t", "BGF_V_NDESC", v_desc.shape[0]),
            scalar("int64_t", "BGF_R_NDESC", r_desc.shape[0]),
            scalar("int64_t", "BGF_NCOPY", np.asarray(D[10]).size),
            scalar("int64_t", "BGF_NQ", nq),
            scalar("int64_t", "BGF_QD", q_state.shape[1] if nq else 0),
            scalar("int64_t", "BGF_QK", q_flow.shape[1] if nq else 0),
            scalar("int64_t", "BGF_NSRC", np.asarray(D[23]).size),
            scalar("int64_t", "BGF_NW2X", np.asarray(D[27]).size),
            scalar("int64_t", "BGF_NWORK", np.asarray(D[30]).size - 1),
            scalar("int64_t", "BGF_C2", fast._c2)]
    return "".join(out)


def no_rate_c() -> str:
    """``bg_kin_rate`` of a model without a vectorised kinematic rate (never called)."""
    return ("void bg_kin_rate(int64_t nq, int64_t qd, int64_t qk, const double *q, "
            "const double *om, double *out) {\n    (void)nq; (void)qd; (void)qk; (void)q; "
            "(void)om; (void)out;\n}\n")
