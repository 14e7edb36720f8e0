"""Symbolic state equations (sympy), for verification and LaTeX.

- :func:`symbolic_equations`: the reduction of :mod:`bondgraph.reduction` done in sympy.
- :class:`SymbolicEquations`: states, inputs, dX/dt, T matrices, U_2, and ``latex()``.

Parameters may be sympy symbols. Sources with a constant value enter with that value;
time-varying sources enter as functions of ``t``. Moduli must be constant or sympy
matrices of scalar kinematic states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from .branches import Branch
from .causality import CausalGraph, assign_causality
from .element import TimeFunction, StateFunction
from .errors import ModelError, SingularConstraintError
from .graph import BondGraph
from .junction import JunctionLayout
from .primitives import Modulus, StorageBase

__all__ = ["symbolic_equations", "SymbolicEquations"]


@dataclass(frozen=True)
class SymbolicEquations:
    """dX/dt = T_X X + T_U1 U_1 + T_U2 U_2 with U_2 solved, as sympy objects.

    Attributes
    ----------
    states : sympy.Matrix
        State symbols (energy states, then kinematic states).
    inputs : sympy.Matrix
        U_1 (known source values or functions of t).
    xdot : sympy.Matrix
        The right-hand side with U_2 eliminated, simplified.
    T_X, T_U1, T_U2 : sympy.Matrix
    U2 : sympy.Matrix
        The unknown efforts as functions of the states and inputs.
    branch : Branch
        Which reduction gave U_2 (``Branch.EQ15``, ``EQ14`` or ``NONE``).
    """

    states: sympy.Matrix
    inputs: sympy.Matrix
    xdot: sympy.Matrix
    T_X: sympy.Matrix
    T_U1: sympy.Matrix
    T_U2: sympy.Matrix
    U2: sympy.Matrix
    branch: Branch

    def latex(self) -> str:
        """LaTeX of dX/dt = f(X, U_1), one equation per state."""
        lines = []
        for s, e in zip(self.states, self.xdot):
            lines.append(rf"\dot{{{sympy.latex(s)}}} &= {sympy.latex(e)}")
        return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"


def symbolic_equations(model: BondGraph | CausalGraph, simplify: bool = True
                       ) -> SymbolicEquations:
    """Derive the state equations symbolically.

    Parameters
    ----------
    model : BondGraph or CausalGraph
    simplify : bool
        Simplify the result (slow for large graphs).

    Raises
    ------
    ModelError
        If a modulus is a Python callable (no symbolic form) or a source depends on the state.

    Examples
    --------
    >>> import sympy
    >>> from bondgraph import models, symbolic_equations
    >>> m, k, b, F = sympy.symbols("m k b F", positive=True)
    >>> eq = symbolic_equations(models.mass_spring_damper(m, k, b, F))
    >>> eq.xdot.T
    Matrix([[F - b*p_m/m - k*q_k, p_m/m]])
    """
    cg = model if isinstance(model, CausalGraph) else assign_causality(model)
    g = cg.graph
    els = g.elements
    t = sympy.Symbol("t")
    # numeric layout gives the structure; moduli replaced by their symbolic form
    dummy = {}
    for n, el in els.items():
        if el.category.is_two_port:
            dummy[n] = Modulus(el.shape, constant=np.zeros(el.shape))
    L = JunctionLayout(cg, dummy)
    data = [sympy.Integer(int(v)) if float(v).is_integer() else sympy.Float(v)
            for v in L.base]
    kin_syms = {}
    for ks in g.kinematic_states:
        if ks.dim != 1 or ks.rate is not None:
            kin_syms[ks.name] = None
        else:
            kin_syms[ks.name] = sympy.Symbol(ks.name)
    for name, _mod, start, n2, n1 in L.modulated:
        el = els[name]
        try:
            m = el.modulus_symbolic()
        except ModelError:
            raise
        except NotImplementedError as exc:
            raise ModelError(str(exc)) from None
        m = m.subs({s: kin_syms[s.name] for s in m.free_symbols
                    if s.name in kin_syms and kin_syms[s.name] is not None})
        for i in range(n2):
            for j in range(n1):
                data[start + i * n1 + j] = -m[i, j]
                data[start + n2 * n1 + j * n2 + i] = -m[i, j]
    A = sympy.zeros(L.n_eq, L.n_var)
    for r, c, v in zip(L.rows, L.cols, data):
        A[int(r), int(c)] += v
    A_u = A.extract(list(range(L.n_eq)), [int(i) for i in L.unk])
    A_i = A.extract(list(range(L.n_eq)), [int(i) for i in L.imp])
    W = sympy.zeros(L.n_var, len(L.imp))
    for k, i in enumerate(L.imp):
        W[int(i), k] = 1
    if L.n_eq:
        sol = A_u.LUsolve(-A_i)
        for k, i in enumerate(L.unk):
            W[int(i), :] = sol[k, :]
    Jm = W.extract([int(i) for i in L.rec], list(range(len(L.imp))))

    def blk(rg, ig):
        rs, cs = L.rec_slices[rg], L.imp_slices[ig]
        return Jm[rs.start:rs.stop, cs.start:cs.stop]

    storage = [n for n, el in els.items() if isinstance(el, StorageBase)]
    X = sympy.Matrix([sympy.Symbol(f"{els[n].state_name}_{i}") if els[n].dim > 1
                      else sympy.Symbol(els[n].state_name)
                      for n in storage for i in range(els[n].dim)])
    state_by_name = {}
    k = 0
    for n in storage:
        d = els[n].dim
        state_by_name[els[n].state_name] = X[k:k + d, 0]
        k += d
    Zv = sympy.Matrix.vstack(*[els[n].coenergy_symbolic(state_by_name[els[n].state_name])
                               for n in storage]) if storage else sympy.zeros(0, 1)
    F = sympy.diag(*[els[n].tangent_symbolic(state_by_name[els[n].state_name])
                     for n in storage]) if storage else sympy.zeros(0, 0)
    Rb, nonlinear = [], []          # (nonlinear resistors: rows of the L vector, their law)
    off = 0
    for name, res in L.members["L"]:
        el = els[name]
        law = None if getattr(el, "is_linear", True) else el.resistor_law(res)
        if law is not None:
            Rb.append(sympy.zeros(el.dim, el.dim))
            nonlinear.append((off, law))
        else:
            r = el.resistance_matrix_symbolic()
            Rb.append(r if res else r.inv())
        off += el.dim
    R = sympy.diag(*Rb) if Rb else sympy.zeros(0, 0)
    RE = sympy.diag(*[els[n].euler_matrix_symbolic(state_by_name[f"p_{els[n].momentum}"])
                      for n in L.members["E"]]) if L.members["E"] else sympy.zeros(0, 0)
    u1 = []
    # a source's expression of time is kept out of the simplification (a placeholder
    # until the end): sympy's simplify rewrites exp(1000*t) + sin(t) as a polynomial of
    # degree 1000 in exp(i t), for minutes, and cannot simplify the states' equations by
    # it; so is a constant that is no plain number (sin(5) - 1e-300: its trigonometric
    # rewrites factor polynomials with that float, 14 s)
    opaque: dict[sympy.Dummy, sympy.Basic] = {}
    for n in L.members["U1"]:
        el = els[n]
        v = el.value
        if isinstance(v, StateFunction):
            raise ModelError(f"{el.kind} '{n}' depends on the state; symbolic equations need "
                             f"sources of time only")
        if isinstance(v, TimeFunction):
            u1 += [sympy.Function(n)(t)] if el.dim == 1 else \
                [sympy.Function(f"{n}_{i}")(t) for i in range(el.dim)]
        else:
            arr = np.asarray(v, dtype=object)
            vals = [v] * el.dim if arr.ndim == 0 else list(arr.ravel())
            for x in map(sympy.sympify, vals):
                if any(s.name == t.name for s in x.free_symbols) or \
                        not (x.is_Number or x.free_symbols):
                    opaque[sympy.Dummy(n)] = x
                    x = next(reversed(opaque))
                u1.append(x)
    U1 = sympy.Matrix(u1) if u1 else sympy.zeros(0, 1)
    nL, nE = R.shape[0], RE.shape[0]
    n_src = U1.shape[0]
    # a nonlinear resistor's output o = r(D_in) enters as a known input through the D_out
    # columns (its R block is zero); it must be explicit: D_in free of o and of U_2
    O = sympy.Matrix([sympy.Dummy(f"o{i}") for i in range(nL)]) if nonlinear else \
        sympy.zeros(0, 1)
    U1a = sympy.Matrix.vstack(U1, O)

    def known(rg):
        return blk(rg, "U1") if not nonlinear else blk(rg, "U1").row_join(blk(rg, "L"))

    G = (sympy.eye(nL) - blk("L", "L") * R).inv() if nL else sympy.zeros(0, 0)
    A1 = (sympy.eye(nE) - blk("E", "E") * RE - blk("E", "L") * R * G * blk("L", "E") * RE
          ).inv() if nE else sympy.zeros(0, 0)
    A2 = blk("E", "Z") + blk("E", "L") * R * G * blk("L", "Z")
    A4 = known("E") + blk("E", "L") * R * G * known("L")
    A5 = blk("E", "U2") + blk("E", "L") * R * G * blk("L", "U2")
    B1 = G * (blk("L", "Z") + blk("L", "E") * RE * A1 * A2)
    B3 = G * (known("L") + blk("L", "E") * RE * A1 * A4)
    B4 = G * (blk("L", "U2") + blk("L", "E") * RE * A1 * A5)
    if nonlinear:
        subs = {}
        for start, law in nonlinear:
            rows = list(range(start, start + len(law.variables)))
            if any(not B4[r, :].is_zero_matrix for r in rows) or \
                    any(B3[r, n_src + c] != 0 for r in rows for c in range(nL)):
                raise ModelError(f"R '{law.owner}': its input depends on its own output or on "
                                 f"the constraint efforts (an algebraic loop): the symbolic "
                                 f"equations need explicit nonlinear laws (the numeric "
                                 f"reduction solves such loops by Newton's method)")
            d_in = B1.extract(rows, list(range(B1.shape[1]))) * Zv + \
                B3.extract(rows, list(range(n_src))) * U1
            for k, r in enumerate(rows):
                subs[O[r]] = law.expressions[k].xreplace(dict(zip(law.variables, d_in)))
        # offsets of linear rows are zero
        for r in range(nL):
            subs.setdefault(O[r], sympy.Integer(0))
        U1a = U1a.xreplace(subs)

    def reduce(rg):
        return (blk(rg, "Z") + blk(rg, "L") * R * B1 + blk(rg, "E") * RE * A1 * A2,
                known(rg) + blk(rg, "L") * R * B3 + blk(rg, "E") * RE * A1 * A4,
                blk(rg, "U2") + blk(rg, "L") * R * B4 + blk(rg, "E") * RE * A1 * A5)

    T_Z, T_U1a, T_U2 = reduce("X")
    T_CZ, T_CU1a, T_LE = reduce("C")
    T_X, T_U1 = T_Z * F, T_U1a[:, :n_src]
    n2 = T_U2.shape[1]
    if n2 == 0:
        branch, U2 = Branch.NONE, sympy.zeros(0, 1)
    elif blk("C", "L").is_zero_matrix is not False and \
            blk("C", "E").is_zero_matrix is not False and \
            blk("C", "U2").is_zero_matrix is not False:
        branch = Branch.EQ15
        JCZ, JCU1 = blk("C", "Z"), blk("C", "U1")
        dU1 = U1.diff(t)
        # dJ/dt through scalar kinematic states
        kin = [(ks, kin_syms[ks.name]) for ks in g.kinematic_states
               if kin_syms.get(ks.name) is not None]
        dJCZ = sympy.zeros(*JCZ.shape)
        dJCU1 = sympy.zeros(*JCU1.shape)
        for ks, sym in kin:
            fr = L.flow_idx(g.bonds_of(ks.source)[0].name if ks.source in els
                            else ks.source)[0]
            rowW = W[int(fr), :]
            # kinematic rate = flow as a function of v = [Z; D; U1; U2; E] with U2 -> 0
            flow = _row_value(rowW, L, Zv, R, B1, B3, RE, A1, A2, A4, U1a, U1)
            dJCZ += JCZ.diff(sym) * flow
            dJCU1 += JCU1.diff(sym) * flow
        H4 = JCZ * F * T_U2
        rhs = JCZ * F * (T_Z * Zv + T_U1a * U1a) + JCU1 * dU1 + dJCZ * Zv + dJCU1 * U1
        if H4.det() == 0:
            raise SingularConstraintError("H_4 is singular in the symbolic reduction")
        U2 = -H4.LUsolve(rhs)
    else:
        branch = Branch.EQ14
        if T_LE.det() == 0:
            raise SingularConstraintError("T_LE is singular in the symbolic reduction")
        U2 = -T_LE.LUsolve(T_CZ * Zv + T_CU1a * U1a)
    Xdot = T_Z * Zv + T_U1a * U1a + (T_U2 * U2 if n2 else sympy.zeros(X.shape[0], 1))
    kin_states, kin_rates = [], []
    for ks in g.kinematic_states:
        sym = kin_syms.get(ks.name)
        if sym is None:
            raise ModelError(f"kinematic state '{ks.name}': symbolic equations support scalar "
                             f"kinematic states that integrate a flow directly")
        fr = L.flow_idx(g.bonds_of(ks.source)[0].name if ks.source in els else ks.source)[0]
        Dout = R * (B1 * Zv + B3 * U1a + B4 * U2)
        if nonlinear:
            Dout += U1a[n_src:, :]
        v = sympy.Matrix.vstack(Zv, Dout, U1, U2, RE * A1 * (A2 * Zv + A4 * U1a + A5 * U2))
        kin_states.append(sym)
        kin_rates.append((W[int(fr), :] * v)[0])
    states = sympy.Matrix(list(X) + kin_states)
    xdot = sympy.Matrix(list(Xdot) + kin_rates)
    if simplify:
        xdot = xdot.applyfunc(lambda e: sympy.simplify(sympy.expand(e)))
        U2 = U2.applyfunc(sympy.simplify)
    if opaque:
        xdot, U2, U1 = (m.xreplace(opaque) for m in (xdot, U2, U1))
    return SymbolicEquations(states=states, inputs=U1, xdot=xdot, T_X=T_X, T_U1=T_U1,
                             T_U2=T_U2, U2=U2, branch=branch)


def _row_value(rowW, L, Zv, R, B1, B3, RE, A1, A2, A4, U1a, U1):
    """A bond variable's value with U_2 = 0 (kinematic flows must not depend on U_2)."""
    Dout = R * (B1 * Zv + B3 * U1a)
    if U1a.shape[0] > U1.shape[0]:
        Dout += U1a[U1.shape[0]:, :]
    v = sympy.Matrix.vstack(Zv, Dout, U1,
                            sympy.zeros(L.imp_slices["U2"].stop - L.imp_slices["U2"].start, 1),
                            RE * A1 * (A2 * Zv + A4 * U1a))
    return (rowW * v)[0]
