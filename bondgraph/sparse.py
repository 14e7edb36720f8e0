"""Eq. (15) without dense matrices: the evaluation used while integrating.

:mod:`bondgraph.reduction` forms every block of the paper (J, T_X, T_U2, H_4, ...) as a
dense matrix: clear, and the reference for everything else, but its cost grows with the
square (W, T) and the cube (H_4) of the model's size. While integrating only dX/dt, the
constraint efforts U_2 and the bond values are needed, and the same equations can be
solved as one sparse linear system whose size and fill grow linearly for a tree-like
mechanism. This module does that; ``tests/unit/test_sparse.py`` checks it against the
dense reduction to 1e-12 at random states of every kind of graph it accepts.

The equations (method.md section 5; A w = 0 the junction equations of
:class:`~bondgraph.junction.JunctionLayout`, w_u its unknown and v = [Z; D_out; U_1; U_2;
E_out] its imposed bond variables, S_Y the selection of the received rows Y):

1. velocity stage, U_2 = 0: solve M [w_u; D_out; E_out] = -A_{i,ZU1} [Z; U_1] with
   M = [[A_u, A_iL, A_iE], [-R S_Din, I, 0], [-R_E S_Ein, 0, I]] (the algebraic loops
   through the fields stay in the system). This gives the kinematic flows (independent
   of U_2 in Eq. (15)), hence the kinematic rates, the moduli' rates and dA/dt.
2. acceleration stage: one system in [w_u; D_out; E_out; U_2; z]:

       M [w_u; D_out; E_out] + A_iU2 U_2         = -A_{i,ZU1} [Z; U_1]
       A_u z + A_iZ F S_X w_u                    = -(dA/dt) w^(1) - A_iU1 dU_1/dt
       S_C z                                     = -(2 alpha c + beta^2 Phi)

   z is the time derivative of the junction solution restricted to (Z, U_1); its C rows
   are dc/dt = J_CZ F dX/dt + J_CU1 dU_1/dt + (dJ_CZ/dt) F X + (dJ_CU1/dt) U_1, so the last
   row is Eq. (15) (with Baumgarte's terms) and U_2 comes out with w_u, i.e. with every
   bond value, without forming J, T or H_4.

It applies where the dense reduction takes Eq. (15) with full rank: the constraint and
kinematic flows independent of D, E and U_2 (checked once, at random moduli, so that the
independence is structural and not a coincidence of one configuration). Elsewhere (Eq.
(14), redundant constraints, a singular system at some state) :class:`SparseReduction`
says so and the caller uses the dense reduction, which also gives the diagnostics.

Both sparse systems keep one pattern for the whole run: per evaluation only their data
vectors are refilled (one ``bincount``), and the column ordering that keeps the LU
factors sparse is computed once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .element import StateView

__all__ = ["SparseReduction", "StepValues"]


@dataclass(frozen=True)
class StepValues:
    """What one sparse evaluation gives (the dense :class:`~bondgraph.Evaluation`'s
    fields of the same names, without the matrices).

    Attributes
    ----------
    t : float
    x, xdot : ndarray (n_states,)
    U1, U2 : ndarray
        Known source values; constraint efforts (in ``unknown_sources`` order).
    constraint_flow : ndarray
        c, the Se* flows.
    phi : ndarray
        Position-level constraint values (NaN where a junction defines none).
    bond_values : ndarray (n_variables,)
        Every bond's effort then flow.
    branch : str
        ``"15"`` or ``"none"``.
    rank : int
        ``U2.size`` (the sparse path is used only with full rank).
    """

    t: float
    x: np.ndarray
    xdot: np.ndarray
    U1: np.ndarray
    U2: np.ndarray
    constraint_flow: np.ndarray
    phi: np.ndarray
    bond_values: np.ndarray
    branch: str
    rank: int
    H4: None = None


class _Pattern:
    """A sparse matrix of fixed pattern whose entries are ``coef * source[k]``.

    Built from COO entries (row, col, source index, coefficient); duplicates are summed.
    ``matrix(sources)`` refills the data in one ``bincount``. ``order`` permutes the
    columns (column k of the stored matrix is column ``order[k]`` of the logical one).
    """

    def __init__(self, shape, rows, cols, src, coef, order=None):
        n_rows, n_cols = shape
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if order is not None:
            inv = np.empty_like(order)
            inv[order] = np.arange(len(order))
            cols = inv[cols]
        key = cols * n_rows + rows
        perm = np.argsort(key, kind="stable")
        key = key[perm]
        uniq, group = np.unique(key, return_inverse=True)
        self.group = group.astype(np.int64)
        self.src = np.asarray(src, dtype=np.int64)[perm]
        self.coef = np.asarray(coef, dtype=float)[perm]
        self.n = len(uniq)
        self.indices = (uniq % n_rows).astype(np.int32)
        ucols = uniq // n_rows
        indptr = np.zeros(n_cols + 1, dtype=np.int64)
        np.add.at(indptr, ucols + 1, 1)
        self.indptr = np.cumsum(indptr).astype(np.int32)
        self.shape = shape
        self.order = (np.arange(n_cols) if order is None
                      else np.asarray(order, dtype=np.int64))

    def matrix(self, sources: np.ndarray) -> sp.csc_matrix:
        data = np.bincount(self.group, weights=self.coef * sources[self.src], minlength=self.n)
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)


def _factor(pattern: _Pattern, sources: np.ndarray):
    """splu of the pattern's matrix with its precomputed column order (None if singular
    or not finite)."""
    A = pattern.matrix(sources)
    if not np.all(np.isfinite(A.data)):
        return None
    try:
        lu = spla.splu(A, permc_spec="NATURAL")
    except RuntimeError:
        return None
    d = np.abs(lu.U.diagonal())
    if not np.all(np.isfinite(lu.U.data)) or d.min(initial=np.inf) <= 1e-14 * d.max(initial=0.0):
        return None
    return lu


class SparseReduction:
    """The sparse evaluation of a :class:`~bondgraph.StateSpaceModel` (see the module
    docstring). Build it with :meth:`StateSpaceModel.sparse`; ``applicable`` says whether
    it can be used, ``reason`` why not."""

    def __init__(self, model, rng_seed: int = 20261122):
        self.model = m = model
        L = m.layout
        self.applicable = False
        self.reason = ""
        self.n_u = n_u = len(L.unk)
        self.n_L = n_L = m.R.shape[0]
        self.n_E = n_E = sum(m._elements[n].dim for n in m.ejs)
        self.n2 = n2 = m.n_u2
        isl, rsl = L.imp_slices, L.rec_slices
        group_of_imp = np.empty(len(L.imp), dtype="<U2")
        for g, sl in isl.items():
            group_of_imp[sl] = g
        # A entries: split by the kind of column
        ci = L.col_i[L.cols]
        cu = L.col_u[L.cols]
        kind = np.where(cu >= 0, "u", group_of_imp[np.where(ci >= 0, ci, 0)])
        self._A_rows, self._A_cols = L.rows, L.cols
        self._nA = nA = len(L.rows)
        # sources: [A data (nA) | R flat | R_E flat | 1 | F entries]
        R = m.R
        self._RE_dims = [m._elements[n].dim for n in m.ejs]
        nR, nRE = R.size, sum(d * d for d in self._RE_dims)
        self._off_R, self._off_RE = nA, nA + nR
        self._off_one = nA + nR + nRE
        self._n_sources = self._off_one + 1
        self._R_flat = R.ravel().astype(float)
        one = self._off_one

        # column offsets of the unknown vector y = [w_u, D_out, E_out, U2, z]
        cL, cE, c2, cz = n_u, n_u + n_L, n_u + n_L + n_E, n_u + n_L + n_E + n2
        rec_L = L.rec[rsl["L"]]
        rec_E = L.rec[rsl["E"]]
        self._rec_X = L.rec[rsl["X"]]
        self._rec_C = L.rec[rsl["C"]]
        imp_pos_in_group = np.arange(len(L.imp)) - np.array(
            [isl[g].start for g in group_of_imp], dtype=int)

        def velocity_entries(with_u2: bool):
            rows, cols, src, coef = [], [], [], []
            sel = np.flatnonzero(kind == "u")
            rows.append(L.rows[sel]); cols.append(cu[sel]); src.append(sel)
            coef.append(np.ones(sel.size))
            for g, base in (("L", cL), ("E", cE)) + ((("U2", c2),) if with_u2 else ()):
                sel = np.flatnonzero(kind == g)
                rows.append(L.rows[sel])
                cols.append(base + imp_pos_in_group[ci[sel]])
                src.append(sel)
                coef.append(np.ones(sel.size))
            r0 = L.n_eq
            # D_out - R D_in = 0
            for i in range(n_L):
                rows.append(np.array([r0 + i])); cols.append(np.array([cL + i]))
                src.append(np.array([one])); coef.append(np.ones(1))
                js = np.arange(n_L)
                rows.append(np.full(n_L, r0 + i)); cols.append(L.col_u[rec_L[js]])
                src.append(self._off_R + i * n_L + js); coef.append(-np.ones(n_L))
            r0 += n_L
            # E_out - R_E E_in = 0, block by block
            k, off = 0, self._off_RE
            for d in self._RE_dims:
                for i in range(d):
                    rows.append(np.array([r0 + k + i])); cols.append(np.array([cE + k + i]))
                    src.append(np.array([one])); coef.append(np.ones(1))
                    js = np.arange(d)
                    rows.append(np.full(d, r0 + k + i))
                    cols.append(L.col_u[rec_E[k + js]])
                    src.append(off + i * d + js); coef.append(-np.ones(d))
                off += d * d
                k += d
            return rows, cols, src, coef

        n_m = n_u + n_L + n_E
        rows, cols, src, coef = velocity_entries(False)
        self._M = self._ordered((n_m, n_m), rows, cols, src, coef)

        if n2:
            rows, cols, src, coef = velocity_entries(True)
            # A_u z
            sel = np.flatnonzero(kind == "u")
            r_z = n_m
            rows.append(r_z + L.rows[sel]); cols.append(cz + cu[sel]); src.append(sel)
            coef.append(np.ones(sel.size))
            # A_iZ F S_X w_u: entry (r, Z_j) * F[j, k] at column col_u[rec_X[k]]
            F = m.F
            sel = np.flatnonzero(kind == "Z")
            Fnz = [np.flatnonzero(F[j]) for j in range(F.shape[0])]
            for e in sel:
                j = imp_pos_in_group[ci[e]]
                for k in Fnz[j]:
                    rows.append(np.array([r_z + L.rows[e]]))
                    cols.append(np.array([L.col_u[self._rec_X[k]]]))
                    src.append(np.array([e]))
                    coef.append(np.array([F[j, k]]))
            # S_C z = rhs
            r_c = r_z + L.n_eq
            rows.append(r_c + np.arange(n2)); cols.append(cz + L.col_u[self._rec_C])
            src.append(np.full(n2, one)); coef.append(np.ones(n2))
            n_big = n_m + n2 + n_u
            self._B = self._ordered((n_big, n_big), rows, cols, src, coef)
        # right-hand sides: A entries on the Z and U1 columns
        self._rhs_Z = np.flatnonzero(kind == "Z")
        self._rhs_U1 = np.flatnonzero(kind == "U1")
        self._imp_ZU1 = np.concatenate([np.arange(isl["Z"].start, isl["Z"].stop),
                                        np.arange(isl["U1"].start, isl["U1"].stop)])
        dyn = [np.arange(start, start + 2 * n2_ * n1_) for _, _, start, n2_, n1_ in L.dynamic]
        self._dyn = np.concatenate(dyn) if dyn else np.zeros(0, dtype=int)
        self._cL, self._cE, self._c2 = cL, cE, c2
        self._check(np.random.default_rng(rng_seed))

    # ------------------------------------------------------------------------------------
    def _ordered(self, shape, rows, cols, src, coef) -> _Pattern:
        """A pattern whose column order (COLAMD, from the structure) keeps LU sparse."""
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        src, coef = np.concatenate(src), np.concatenate(coef)
        probe = _Pattern(shape, rows, cols, src, coef)
        if shape[0] == 0:
            return probe
        # the structure alone decides the order: factor it once with generic values
        vals = np.random.default_rng(1).uniform(0.5, 1.5, self._n_sources)
        A = probe.matrix(vals)
        try:
            order = spla.splu(A, permc_spec="COLAMD").perm_c
        except RuntimeError:
            order = np.arange(shape[1])
        return _Pattern(shape, rows, cols, src, coef, order=np.asarray(order, dtype=np.int64))

    def _check(self, rng):
        """Decide ``applicable``: the structural conditions of Eq. (15) at random moduli."""
        m = self.model
        L = m.layout
        if self.n2 and not L.rec_slices["C"].stop > L.rec_slices["C"].start:
            self.reason = "no constraint rows"
            return
        data = L.base.copy()
        for _, _, start, n2_, n1_ in L.dynamic:
            data[start:start + 2 * n2_ * n1_] = 0.0
            vals = rng.uniform(-1.0, 1.0, (n2_, n1_))
            data[start:start + n2_ * n1_] = vals.ravel()
            data[start + n2_ * n1_:start + 2 * n2_ * n1_] = vals.T.ravel()
        try:
            lu, A_i = L.factor(data)
        except Exception as exc:  # noqa: BLE001 - any failure: not applicable
            self.reason = f"junction structure not solvable at random moduli ({exc})"
            return
        isl = L.imp_slices
        rows_c = L.col_u[L.rec[L.rec_slices["C"]]]
        kin = m._kin_rows[L.col_u[m._kin_rows] >= 0] if m._kin_rows.size else m._kin_rows
        rows_k = L.col_u[kin]
        cols = np.r_[np.arange(isl["L"].start, isl["L"].stop),
                     np.arange(isl["U2"].start, isl["U2"].stop),
                     np.arange(isl["E"].start, isl["E"].stop)]
        # W_u[:, cols] r for a random r: zero in a row iff the row's entries are (a.s.)
        u1 = np.arange(isl["U1"].start, isl["U1"].stop)
        rhs = np.column_stack([A_i[:, cols] @ rng.uniform(0.5, 1.5, cols.size)]
                              + ([A_i[:, u1].toarray()] if u1.size else []))
        y = -lu.solve(rhs) if lu is not None else np.zeros((0, rhs.shape[1]))
        scale = max(1.0, float(np.abs(y).max(initial=0.0)))
        if self.n2 and np.abs(y[rows_c, 0]).max(initial=0.0) > 1e-12 * scale:
            self.reason = "the constraint flows depend on D, E or U2 (Eq. (14) applies)"
            return
        if rows_k.size and L.dynamic and np.abs(y[rows_k, 0]).max(initial=0.0) > 1e-12 * scale:
            self.reason = "a kinematic state's flow depends on D, E or U2"
            return
        if self.n2 and u1.size:
            enter = np.abs(y[np.ix_(rows_c, 1 + np.arange(u1.size))]).max(axis=0) > \
                1e-12 * scale
            names = m._u1_names_at(np.flatnonzero(enter))
            if any(m.sources[n].rate is None for n in names):
                self.reason = "a source in the constraint equations has no time derivative"
                return
        self.applicable = True

    # ------------------------------------------------------------------------------------
    def evaluate(self, t: float, x: np.ndarray, stabilization=None) -> StepValues | None:
        """One evaluation, or None where the sparse systems are singular or not finite
        (the caller then uses the dense reduction, which explains the failure)."""
        m = self.model
        L = m.layout
        x = np.asarray(x, dtype=float)
        s = StateView(x, m.state_slices)
        X = x[:m.n_energy]
        data = L.data(m._moduli(s))
        sources = np.empty(self._n_sources)
        sources[:self._nA] = data
        sources[self._off_R:self._off_RE] = self._R_flat
        if m.ejs:
            sources[self._off_RE:self._off_one] = np.concatenate(
                [m._elements[n].euler_matrix(s).ravel() for n in m.ejs])
        sources[self._off_one] = 1.0
        U1, dU1 = m.source_values(t, s)
        v = np.zeros(len(L.imp))
        isl = L.imp_slices
        v[isl["Z"]] = m.F @ X
        v[isl["U1"]] = U1
        wfull = np.zeros(L.n_var)
        wfull[L.imp] = v
        rhs_eq = -np.bincount(L.rows, weights=data * wfull[L.cols], minlength=L.n_eq) \
            if L.n_eq else np.zeros(0)
        n_m = self.n_u + self.n_L + self.n_E
        b = np.zeros(n_m)
        b[:L.n_eq] = rhs_eq
        if not (np.all(np.isfinite(sources)) and np.all(np.isfinite(b))):
            return None
        if self.n2 == 0 or n_m == 0:
            y = self._solve(self._M, sources, b) if n_m else np.zeros(0)
            if y is None:
                return None
            U2 = np.zeros(self.n2)
            branch = "none"
        else:
            y1 = self._solve(self._M, sources, b)
            if y1 is None:
                return None
            w1 = self._full(wfull, y1, v, np.zeros(self.n2))
            kin_rates = m._kin_rates(s, w1[m._kin_rows])
            rhs_z = np.zeros(L.n_eq)
            if L.dynamic and not m.omit_rate_terms:
                mrates = m._moduli_rates(s, StateView(kin_rates, m._kin_slices_all()))
                dA = L.rate_data(mrates)
                d = self._dyn
                rhs_z -= np.bincount(L.rows[d], weights=dA[d] * w1[L.cols[d]],
                                     minlength=L.n_eq)
            if self._rhs_U1.size:
                du1 = np.zeros(L.n_var)
                du1[L.imp[isl["U1"]]] = np.where(np.isfinite(dU1), dU1, 0.0)
                e = self._rhs_U1
                rhs_z -= np.bincount(L.rows[e], weights=data[e] * du1[L.cols[e]],
                                     minlength=L.n_eq)
            c0 = w1[self._rec_C]
            phi = m._phi(s)
            rhs_c = np.zeros(self.n2)
            if stabilization is not None:
                rhs_c -= 2.0 * stabilization.alpha * c0 + \
                    stabilization.beta ** 2 * np.nan_to_num(phi)
            bb = np.concatenate([b, rhs_z, rhs_c])
            if not np.all(np.isfinite(bb)):
                return None
            y = self._solve(self._B, sources, bb)
            if y is None:
                return None
            U2 = y[self._c2:self._c2 + self.n2]
            branch = "15"
        w = self._full(wfull, y, v, U2)
        xdot_X = w[self._rec_X]
        kin_rates = m._kin_rates(s, w[m._kin_rows])
        powers = np.array([w[e] @ w[f] for e, f in m.work_idx])
        xdot = np.concatenate([xdot_X, kin_rates, powers])
        phi = m._phi(s) if branch == "none" else phi
        return StepValues(t=float(t), x=x, xdot=xdot, U1=U1, U2=U2.copy(),
                          constraint_flow=w[self._rec_C], phi=phi, bond_values=w,
                          branch=branch, rank=self.n2)

    def _solve(self, pattern: _Pattern, sources, b):
        lu = _factor(pattern, sources)
        if lu is None:
            return None
        y = np.empty_like(b)
        y[pattern.order] = lu.solve(b)
        return y

    def _full(self, wfull, y, v, U2):
        """Every bond variable from the unknowns y and the imposed values."""
        L = self.model.layout
        isl = L.imp_slices
        w = wfull.copy()
        vv = v.copy()
        vv[isl["L"]] = y[self._cL:self._cL + self.n_L]
        vv[isl["E"]] = y[self._cE:self._cE + self.n_E]
        vv[isl["U2"]] = U2
        w[L.imp] = vv
        w[L.unk] = y[:self.n_u]
        return w

