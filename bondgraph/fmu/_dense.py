"""The dense engine's data (``c/bg_dense.c``): a plain bond graph's junction tableau and
its fields' laws as C, from an assembled :class:`~bondgraph.StateSpaceModel`.

Every number that depends on a parameter is written as an expression of the FMU's
parameter vector (the two-ports' moduli, the storage fields, the resistances, the
sources), so every parameter the graph uses stays tunable. Nonlinear laws (energies,
resistor laws) are their sympy expressions and derivatives; moduli of kinematic states
are sympy matrices of those states, and their rates along the motion are differentiated
exactly. Refused, naming the element: a Python-callable modulus, a kinematic state with
a rate function, an Euler junction structure without a symbolic form, a position
constraint under Baumgarte stabilisation (its Phi is a Python function).
"""

from __future__ import annotations

import numpy as np
import sympy

from ..branches import Branch
from ..errors import ModelError
from ._cwriter import CFunction, array, scalar, string

__all__ = ["dense_c", "dense_refusal"]


def _kin_symbols(model) -> tuple[dict[str, str], dict[str, int]]:
    """Scalar kinematic states: symbol name -> C (``x[i]``), and -> its position in the
    vector of kinematic rates."""
    sym, pos, k = {}, {}, 0
    for ks in model.kinematic:
        sl = model.state_slices[ks.name]
        if ks.dim == 1:
            sym[ks.name] = f"x[{sl.start}]"
            pos[ks.name] = k
        k += ks.dim
    return sym, pos


def dense_refusal(model, stabilization) -> str:
    """Why the dense engine cannot take ``model`` ("" when it can): the first element it
    cannot write in C, named."""
    for ks in model.kinematic:
        if ks.rate is not None:
            return (f"kinematic state '{ks.name}' has a rate function (a Python function, "
                    f"no C form)")
    for name, _mod, _start, _n2, _n1 in model.layout.modulated:
        el = model.graph.element(name)
        try:
            el.modulus_symbolic()
        except (ModelError, NotImplementedError):
            return (f"{el.kind} '{name}': its modulus is a Python function (no C form); "
                    f"give it as a sympy matrix of kinematic states and parameters")
    for name in model.ejs:
        el = model.graph.element(name)
        if not hasattr(el, "euler_matrix_symbolic"):
            return f"{el.kind} '{name}': its Euler matrix has no symbolic form"
    if stabilization is not None:
        for n, pc in zip(model.unknown_sources, model.position_constraints):
            if pc is not None:
                return (f"'{n}': Baumgarte stabilisation needs its position constraint "
                        f"Phi, a Python function (no C form); export without "
                        f"stabilization")
    return ""


def dense_c(model, iface, x0: np.ndarray, stabilization) -> str:
    """The C data and functions of the dense engine for ``model`` (see the module
    docstring); ``iface`` gives the parameters' places."""
    why = dense_refusal(model, stabilization)
    if why:
        raise ModelError(why)
    L = model.layout
    els = model.graph.elements
    pnames = {sympy.Symbol(p): f"p[{k}]" for p, k in iface.parameter_index.items()}
    kin_c, kin_pos = _kin_symbols(model)
    out = []

    # -- the junction tableau ------------------------------------------------------
    base = np.array(L.base, dtype=float)
    for _name, _mod, start, n2, n1 in L.modulated:
        base[start:start + 2 * n2 * n1] = 0.0
    imp_off = [L.imp_slices[g].start for g in ("Z", "L", "U1", "U2", "E")] + [len(L.imp)]
    rec_off = [L.rec_slices[g].start for g in ("X", "L", "E", "C")] + [len(L.rec)]
    for ctype, name, vals in [
            ("int", "BGD_ROW", L.rows), ("int", "BGD_COL", L.cols),
            ("double", "BGD_BASE", base), ("int", "BGD_COL_U", L.col_u),
            ("int", "BGD_COL_I", L.col_i), ("int", "BGD_IMP", L.imp),
            ("int", "BGD_UNK", L.unk), ("int", "BGD_REC", L.rec),
            ("int", "BGD_IMP_OFF", imp_off), ("int", "BGD_REC_OFF", rec_off)]:
        out.append(array(ctype, name, vals))
    for name, v in [("BGD_NEQ", L.n_eq), ("BGD_NVAR", L.n_var), ("BGD_NIMP", len(L.imp)),
                    ("BGD_NNZ", len(L.rows))]:
        out.append(scalar("int", name, v))

    # -- the moduli and their rates -------------------------------------------------
    mod_fn = CFunction({**pnames, **{sympy.Symbol(k): v for k, v in kin_c.items()}})
    rate_fn = CFunction({**pnames, **{sympy.Symbol(k): v for k, v in kin_c.items()},
                         **{sympy.Symbol(f"_rate_{k}"): f"kin[{p}]"
                            for k, p in kin_pos.items()}})
    starts, n2s, n1s, offs, dyn = [], [], [], [], []
    off = 0
    for name, _mod, start, n2, n1 in L.modulated:
        el = els[name]
        mu = sympy.Matrix(el.modulus_symbolic())
        if mu.shape != (n2, n1):
            raise ModelError(f"{el.kind} '{name}': its symbolic modulus has shape {mu.shape}, "
                             f"its ports ({n2}, {n1})")
        state_syms = [s for s in mu.free_symbols if s.name in kin_c]
        owner = f"{el.kind} '{name}' (its modulus)"
        for i in range(n2):
            for j in range(n1):
                mod_fn.assign(f"mod[{off + i * n1 + j}]", mu[i, j], owner)
                rate = sum((mu[i, j].diff(s) * sympy.Symbol(f"_rate_{s.name}")
                            for s in state_syms), sympy.Integer(0))
                if state_syms:
                    rate_fn.assign(f"out[{off + i * n1 + j}]", rate, owner)
        starts.append(start)
        n2s.append(n2)
        n1s.append(n1)
        offs.append(off)
        dyn.append(int(bool(state_syms)))
        off += n2 * n1
    out += [array("int", "BGD_MOD_START", starts), array("int", "BGD_MOD_N2", n2s),
            array("int", "BGD_MOD_N1", n1s), array("int", "BGD_MOD_OFF", offs),
            array("int", "BGD_MOD_IS_DYNAMIC", dyn),
            scalar("int", "BGD_NMODB", len(starts)), scalar("int", "BGD_NMODV", off),
            scalar("int", "BGD_MOD_DYNAMIC", int(any(dyn)))]
    out.append("int bgd_moduli(bg_inst *m, const double *p, const double *x, double *mod) "
               "{\n    (void)m; (void)p; (void)x; (void)mod;\n" + mod_fn.text() +
               "    return 0;\n}\n")
    out.append("int bgd_moduli_rates(bg_inst *m, const double *p, const double *x, "
               "const double *kin, double *out) {\n    (void)m; (void)p; (void)x; "
               "(void)kin; (void)out;\n" + rate_fn.text() + "    return 0;\n}\n")

    # -- the storage fields ---------------------------------------------------------
    nz = model.n_energy
    fields = CFunction(pnames)
    for n in model.storage:
        el = els[n]
        sl = model.state_slices[el.state_name]
        d = sl.stop - sl.start
        X = sympy.Matrix([sympy.Symbol(f"X[{sl.start + i}]") for i in range(d)])
        for i in range(d):
            fields.names[X[i]] = f"X[{sl.start + i}]"
        owner = f"{el.kind} '{n}'"
        law = None if getattr(el, "is_linear", True) else el.energy_law()
        if law is None:
            Fm = sympy.Matrix(el.field_matrix_symbolic())
            Zs = Fm * X
        else:
            sub = dict(zip(law.variables, X))
            Fm = law.hessian.xreplace(sub)
            Zs = law.gradient.xreplace(sub)
        for i in range(d):
            for j in range(d):
                fields.assign(f"F[{(sl.start + i) * nz + sl.start + j}]", Fm[i, j], owner)
            fields.assign(f"Z[{sl.start + i}]", Zs[i], owner)
    out.append("int bgd_fields(bg_inst *m, const double *p, const double *X, double *Z, "
               "double *F) {\n    (void)m; (void)p; (void)X; (void)Z; (void)F;\n" +
               fields.text() + "    return 0;\n}\n")
    out.append(scalar("int", "BGD_NZ", nz))

    # -- the resistors --------------------------------------------------------------
    nl = model.R.shape[0]
    res = CFunction(pnames)
    nl_off, nl_dim, cases = [], [], []
    o = 0
    for name, resistance_causality in L.members["L"]:
        el = els[name]
        d = el.dim
        owner = f"{el.kind} '{name}'"
        law = None if getattr(el, "is_linear", True) else \
            el.resistor_law(resistance_causality)
        if law is None:
            r = sympy.Matrix(el.resistance_matrix_symbolic())
            if not resistance_causality:
                r = r.inv()
            for i in range(d):
                for j in range(d):
                    res.assign(f"R[{(o + i) * nl + o + j}]", r[i, j], owner)
        else:
            dsyms = [sympy.Symbol(f"d[{i}]") for i in range(d)]
            fn = CFunction({**pnames, **{s: s.name for s in dsyms}})
            sub = dict(zip(law.variables, dsyms))
            what = "effort law" if resistance_causality else "flow law"
            for i in range(d):
                fn.assign(f"value[{i}]", law.expressions[i].xreplace(sub),
                          f"{owner} ({what})")
            for i in range(d):
                for j in range(d):
                    # (a tangent that is not finite counts as zero: not checked)
                    fn.assign(f"jac[{i * d + j}]", law.jacobian[i, j].xreplace(sub),
                              f"{owner} ({what}'s slope)")
            body = fn.text(indent="        ")
            body = "\n".join(ln for ln in body.splitlines()
                             if not ln.strip().startswith("if (!isfinite(jac[")) + "\n"
            cases.append(f"    case {len(nl_off)}: {{\n{body}        return 0;\n    }}\n")
            nl_off.append(o)
            nl_dim.append(d)
        o += d
    out.append("int bgd_resistors(bg_inst *m, const double *p, double *R) {\n    (void)m; "
               "(void)p; (void)R;\n" + res.text() + "    return 0;\n}\n")
    out.append("int bgd_rlaw(bg_inst *m, int k, const double *p, const double *d, "
               "double *value, double *jac) {\n    (void)p; (void)d; (void)value; "
               "(void)jac;\n    switch (k) {\n" + "".join(cases) +
               "    }\n    return bg_fail(m, \"no nonlinear resistor %d\", k);\n}\n")
    out += [scalar("int", "BGD_NL", nl), scalar("int", "BGD_NNL", len(nl_off)),
            array("int", "BGD_NL_OFF", nl_off), array("int", "BGD_NL_DIM", nl_dim)]

    # -- the Euler junction structures ----------------------------------------------
    ne = sum(els[n].dim for n in model.ejs)
    eu = CFunction({})
    o = 0
    for n in model.ejs:
        el = els[n]
        sl = model.state_slices[f"p_{el.momentum}"]
        h = sympy.Matrix([sympy.Symbol(f"x[{sl.start + i}]") for i in range(3)])
        for s in h:
            eu.names[s] = s.name
        RE = el.euler_matrix_symbolic(h)
        for i in range(3):
            for j in range(3):
                eu.assign(f"RE[{(o + i) * ne + o + j}]", RE[i, j], f"{el.kind} '{n}'")
        o += 3
    out.append("int bgd_euler(bg_inst *m, const double *x, double *RE) {\n    (void)m; "
               "(void)x; (void)RE;\n" + eu.text() + "    return 0;\n}\n")

    # -- sizes, kinematic rates, work, the branch ------------------------------------
    work_off = np.r_[0, np.cumsum([e.size for e, _ in model.work_idx])].astype(int)
    work_e = np.concatenate([e for e, _ in model.work_idx]) if model.work_idx else []
    work_f = np.concatenate([f for _, f in model.work_idx]) if model.work_idx else []
    if model.n_u2:
        branch = model.evaluate(0.0, x0, stabilization=stabilization).branch
        code = {Branch.EQ14: 14, Branch.EQ15: 15}.get(branch, 0)
        if not code:
            raise ModelError(f"the constraints of {', '.join(model.unknown_sources)} take "
                             f"neither Eq. (14) nor Eq. (15) at the initial state")
    else:
        code = 0
    stab = stabilization is not None
    out += [scalar("int", "BGD_NE", ne), scalar("int", "BGD_NU1", model.n_u1),
            scalar("int", "BGD_NU2", model.n_u2),
            scalar("int", "BGD_NKIN", len(model._kin_rows)),
            array("int", "BGD_KIN_ROW", model._kin_rows),
            scalar("int", "BGD_NWORK", len(model.work_idx)),
            array("int", "BGD_WORK_OFF", work_off), array("int", "BGD_WORK_E", work_e),
            array("int", "BGD_WORK_F", work_f), scalar("int", "BGD_BRANCH", code),
            scalar("int", "BGD_STAB", int(stab)),
            scalar("double", "BGD_ALPHA2", 2.0 * stabilization.alpha if stab else 0.0),
            scalar("double", "BGD_BETA2", stabilization.beta ** 2 if stab else 0.0)]
    lnames = ", ".join(n for n, _ in L.members["L"]) or "none"
    out.append(f"const char BGD_L_NAMES[] = {string(lnames)};\n")
    nlnames = ", ".join(f"'{n}'" for n, _ in L.members["L"]
                        if not getattr(els[n], "is_linear", True)) or "none"
    out.append(f"const char BGD_NL_NAMES[] = {string(nlnames)};\n")
    out.append(f"const char BGD_E_NAMES[] = {string(', '.join(model.ejs) or 'none')};\n")
    out.append(f"const char BGD_U2_NAMES[] = "
               f"{string(', '.join(model.unknown_sources) or 'none')};\n")
    return "".join(out)
