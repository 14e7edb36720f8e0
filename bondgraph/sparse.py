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
   bond value, without forming J, T or H_4. The dA/dt terms on rows of z that cannot
   reach U_2 (decided once at random moduli; a chain's effort rows) are left out.

It applies where the dense reduction takes Eq. (15) with full rank: the constraint and
kinematic flows independent of D, E and U_2 (checked once, at random moduli, so that the
independence is structural and not a coincidence of one configuration). Elsewhere (Eq.
(14), redundant constraints, a singular system at some state) :class:`SparseReduction`
says so and the caller uses the dense reduction, which also gives the diagnostics.
Nonlinear storage and resistor laws are taken too (:mod:`bondgraph._sparse_laws`), with
or without constraint sources.

With constraints, the acceleration stage's LU factors also serve the velocity stage:
the flows that stage needs do not depend on U_2, D or E (checked), so a first solve with
the known right-hand side gives them, and one factorisation per evaluation suffices.
The one-call path does better where the velocity stage's own system (U_2 = 0) condenses
entirely, as a chain's does: its flows are then a sparse product, with no solve. Its
bond values differ from B's first solve's by the junction structure's response to U_2
(and D, E), whose constraint flows vanish at every configuration (checked in _check);
so does their rate along the motion, and the dA/dt terms that response adds leave
dc/dt, hence U_2 and dX/dt, unchanged.
The systems keep one pattern for the whole run: per evaluation only their data vectors
are refilled, and the column ordering that keeps the LU factors sparse is computed
once. With numba installed, the LU is :mod:`bondgraph.fastlu`'s (compiled, on a fixed
pivot order taken from SuperLU, refilling the matrix inside the factorisation); where
its pivot checks fail, or without numba, SuperLU's (the data refilled by one
``bincount``).

Without constraint sources (and without nonlinear laws) the one-call path runs on the
single stage's system M: its velocity stage and its second stage solve that one system
(no U_2, no dA/dt terms), the second for the variables dX/dt reads.

A solver needs dX/dt alone: :meth:`SparseReduction.derivative` gives it, and where the
one-call path applies (numba, a condensed system, plain EJS elements) its acceleration
stage computes only the bond variables dX/dt reads; :meth:`SparseReduction.evaluate`
gives every bond value and U_2 (what a result's outputs are made of).
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from . import fastlu
from ._sparse_compiled import CompiledPath
from ._sparse_laws import NonlinearFields
from . import _sparse_systems as systems
from ._sparse_systems import StepValues, Workspace, _aliases, _back, _Condensed, _Pattern, _Terms
from .branches import Branch
from .condensation import condense
from .element import StateView
from .errors import ModelError
from .spatial import skew
from .stabilization import Baumgarte

__all__ = ["SparseReduction", "StepValues", "Workspace"]


class SparseReduction(CompiledPath, NonlinearFields):
    """The sparse evaluation of a :class:`~bondgraph.StateSpaceModel` (see the module
    docstring). Build it with :meth:`StateSpaceModel.sparse`; ``applicable`` says whether
    it can be used, ``reason`` why not.

    Before the systems are formed, the junction equations that only say two bond
    variables are equal (most of a 0-junction's effort and a 1-junction's flow equations)
    are eliminated: each class of equal variables keeps one representative, an imposed
    variable where the class has one. This halves the systems of a mechanism."""

    def __init__(self, model, rng_seed: int = 20261122, condensed: bool = True):
        self.model = m = model
        self.condensed = condensed
        L = m.layout
        self._ejs_momenta = None          # set on first use (see _euler_matrices)
        self._V = self._V_known = None    # the velocity stage's system (see below)
        self.applicable = False
        self.reason = ""
        self._kin_final = False
        self.n_L = n_L = m.R.shape[0]
        self.n_E = n_E = sum(m._elements[n].dim for n in m.ejs)
        self.n2 = n2 = m.n_u2
        isl, rsl = L.imp_slices, L.rec_slices
        n_imp = len(L.imp)
        group_of_imp = np.empty(n_imp, dtype="<U2")
        for g, sl in isl.items():
            group_of_imp[sl] = g
        pos_in_group = np.arange(n_imp) - np.array([isl[g].start for g in group_of_imp],
                                                   dtype=np.int64)
        self._nA = nA = len(L.rows)
        # sources: [A data (nA) | R flat | R_E flat | 1]
        R = m.R
        self._RE_dims = [m._elements[n].dim for n in m.ejs]
        nR, nRE = R.size, sum(d * d for d in self._RE_dims)
        self._off_R, self._off_RE = nA, nA + nR
        self._off_one = nA + nR + nRE
        # (with constraint sources, the nonlinear storage laws' tangents d2H/dX2 after
        # the 1: their rates' terms dZ/dt = T(X) dX/dt in the acceleration stage)
        self._tan_dims = [sl.stop - sl.start for sl, _ in m._nl_storage] if m.n_u2 else []
        self._n_sources = self._off_one + 1 + sum(d * d for d in self._tan_dims)
        self._R_flat = R.ravel().astype(float)
        one = self._off_one
        dyn = [np.arange(start, start + 2 * a * b) for _, _, start, a, b in L.dynamic]
        self._dyn = np.concatenate(dyn) if dyn else np.zeros(0, dtype=np.int64)
        # the sources' values where they never change (NaN: they vary with the state)
        cv = np.full(self._n_sources, np.nan)
        cv[:nA] = L.base
        cv[self._dyn] = np.nan
        cv[self._off_R:self._off_RE] = self._R_flat
        cv[one] = 1.0
        self._constant_sources = cv

        # -- alias elimination --------------------------------------------------------
        rep, kept = _aliases(L, self._dyn)
        ipos = L.col_i[rep]                       # imposed representative: index in v
        unknown_rep = ipos < 0
        reps_u = np.unique(rep[unknown_rep])
        ucol = -np.ones(L.n_var, dtype=np.int64)
        ucol[reps_u] = np.arange(reps_u.size)
        self._ucol = ucol[rep]                    # per variable: its unknown column or -1
        self._ipos = np.where(unknown_rep, 0, ipos)
        self._is_u = unknown_rep
        n_ur = reps_u.size
        newrow = -np.ones(L.n_eq, dtype=np.int64)
        newrow[kept] = np.arange(kept.size)
        self._newrow = newrow
        if kept.size != n_ur:
            self.reason = (f"alias elimination left {kept.size} equations for {n_ur} "
                           f"unknowns")
            return
        self.n_u = n_u = n_ur
        cL, cE, c2, cz = n_u, n_u + n_L, n_u + n_L + n_E, n_u + n_L + n_E + n2
        self._cL, self._cE, self._c2 = cL, cE, c2
        rec_L, rec_E = L.rec[rsl["L"]], L.rec[rsl["E"]]
        self._rec_L = rec_L
        self._rec_X, self._rec_C = L.rec[rsl["X"]], L.rec[rsl["C"]]
        Fs = sp.csr_matrix(m.F)
        self._F = Fs                      # (block diagonal: its product costs O(n))
        Z0 = isl["Z"].start

        def w_terms(T, rows, var, src, coef, with_u2):
            rows, var = np.asarray(rows, dtype=np.int64), np.asarray(var, dtype=np.int64)
            src, coef = np.asarray(src, dtype=np.int64), np.asarray(coef, dtype=float)
            u = self._is_u[var]
            T.add(rows[u], self._ucol[var[u]], src[u], coef[u])
            p = self._ipos[var[~u]]
            r, sr, cf = rows[~u], src[~u], coef[~u]
            g = group_of_imp[p]
            for grp, base in (("L", cL), ("E", cE), ("U2", c2)):
                sel = g == grp
                if grp == "U2" and not with_u2:
                    continue
                T.add(r[sel], base + pos_in_group[p[sel]], sr[sel], cf[sel])
            sel = (g == "Z") | (g == "U1")
            T.known(r[sel], p[sel], sr[sel], cf[sel])

        zeta = None                       # (see _sparse_laws._zeta_columns)

        def z_terms(T, rows, var, src, coef):
            rows, var = np.asarray(rows, dtype=np.int64), np.asarray(var, dtype=np.int64)
            src, coef = np.asarray(src, dtype=np.int64), np.asarray(coef, dtype=float)
            u = self._is_u[var]
            T.add(rows[u], cz + self._ucol[var[u]], src[u], coef[u])
            p = self._ipos[var[~u]]
            r, sr, cf = rows[~u], src[~u], coef[~u]
            g = group_of_imp[p]
            sel = g == "U1"
            T.known(r[sel], n_imp + p[sel], sr[sel], cf[sel])
            # dZ/dt = F dX/dt, and dX/dt is a received (w) variable
            iz = np.flatnonzero(g == "Z")
            j = p[iz] - Z0
            cnt = Fs.indptr[j + 1] - Fs.indptr[j]
            ind = np.repeat(Fs.indptr[j], cnt) + np.arange(cnt.sum()) - \
                np.repeat(np.cumsum(cnt) - cnt, cnt)
            w_terms(T, np.repeat(r[iz], cnt), self._rec_X[Fs.indices[ind]],
                    np.repeat(sr[iz], cnt), np.repeat(cf[iz], cnt) * Fs.data[ind], True)
            if zeta is not None:      # (a nonlinear storage law's dZ/dt: its zeta)
                on = zeta[j] >= 0
                T.add(r[iz][on], zeta[j[on]], sr[iz][on], cf[iz][on])

        in_kept = newrow[L.rows] >= 0
        ent = np.flatnonzero(in_kept)

        def velocity_terms(with_u2):
            T = _Terms()
            w_terms(T, newrow[L.rows[ent]], L.cols[ent], ent, np.ones(ent.size), with_u2)
            r0 = n_u                   # D_out - R D_in = 0
            w_terms(T, r0 + np.arange(n_L), L.imp[isl["L"]], np.full(n_L, one),
                    np.ones(n_L), with_u2)
            # (R's structural non-zeros only: a field is block diagonal by element, and
            # a term per entry of the dense n_L x n_L matrix made every evaluation's sums
            # grow with the square of the resistors: an RLC ladder of 40 sections had
            # 6 400 known terms for 160 unknowns)
            r_nz = np.flatnonzero(self._R_flat)
            w_terms(T, r0 + r_nz // max(n_L, 1), rec_L[r_nz % max(n_L, 1)],
                    self._off_R + r_nz, -np.ones(r_nz.size), with_u2)
            r0 += n_L                  # E_out - R_E E_in = 0, block by block
            w_terms(T, r0 + np.arange(n_E), L.imp[isl["E"]], np.full(n_E, one),
                    np.ones(n_E), with_u2)
            rows_e, vars_e, src_e = [], [], []
            k, off = 0, self._off_RE
            for d in self._RE_dims:
                rows_e.append(r0 + k + np.repeat(np.arange(d), d))
                vars_e.append(np.tile(rec_E[k:k + d], d))
                src_e.append(off + np.arange(d * d))
                off += d * d
                k += d
            if rows_e:
                w_terms(T, np.concatenate(rows_e), np.concatenate(vars_e),
                        np.concatenate(src_e), -np.ones(sum(d * d for d in self._RE_dims)),
                        with_u2)
            return T

        n_m = n_u + n_L + n_E
        self._n_m = n_m
        self._B = self._B_known = None
        live = self._dyn[:0]
        if not n2:      # without constraints one stage; with them B serves both stages
            self._M, self._M_known = self._system((n_m, n_m), velocity_terms(False))
            if condensed and fastlu.enabled() and not m.nonlinear:
                # the one-call path on M: its two stages solve the same system (no
                # U_2, no dA/dt terms), the second for dX/dt's variables; the first
                # computes only the kinematic flows (no solve where M condenses
                # entirely)
                self._B, self._B_known = self._M, self._M_known
                if isinstance(self._M, _Condensed) and self._M.n_K == 0:
                    self._V, self._V_known = self._M, self._M_known
        else:
            T = velocity_terms(True)
            if self._tan_dims:
                zeta = self._zeta_columns(n_m + n2 + n_u)
            z_terms(T, n_m + newrow[L.rows[ent]], L.cols[ent], ent, np.ones(ent.size))
            r_c = n_m + n_u
            z_terms(T, r_c + np.arange(n2), self._rec_C, np.full(n2, one), np.ones(n2))
            n_big = n_m + n2 + n_u
            if self._tan_dims:          # (the nonlinear storage laws' rates: zeta)
                n_big = self._storage_rate_rows(T, w_terms, zeta, n_big)
            self._B, self._B_known = self._system((n_big, n_big), T)
            live = self._rate_rows_reaching_u2(T, (n_big, n_big), newrow[L.rows[self._dyn]],
                                               np.random.default_rng(rng_seed + 1))
            # the velocity stage's own system (U_2 = 0), for the one-call path: where
            # it condenses entirely, its flows cost a sparse product, not a solve with
            # B's factors (chain-100: 4485 unknowns, none kept)
            if condensed and fastlu.enabled():
                V, V_known = self._system((n_m, n_m), velocity_terms(False))
                if isinstance(V, _Condensed) and V.n_K == 0:
                    self._V, self._V_known = V, V_known
        self._n_imp = n_imp
        # the dA/dt terms (entries of A data ``_dyn_terms``): on their rows of z, at the
        # bond variables of their columns; only those whose rows reach U_2
        self._dyn_terms = self._dyn[live]
        self._dyn_rows = newrow[L.rows[self._dyn_terms]]
        self._dyn_cols = L.cols[self._dyn_terms]
        # the bond variables the velocity stage gives the acceleration stage
        want = [m._kin_rows, self._dyn_cols, L.rec[rsl["C"]]]
        self._want1 = np.unique(np.concatenate([np.asarray(a, dtype=np.int64)
                                                for a in want]))
        self._w1_kin, self._w1_dyn, self._w1_C = (
            np.searchsorted(self._want1, np.asarray(a, dtype=np.int64)) for a in want)
        # the compiled stage (see _stage): with numba, for condensed systems
        self._compiled = fastlu.enabled()
        self._plans: dict = {}
        self._no_ints = (np.zeros(0, dtype=np.int64), np.zeros(12, dtype=np.int64))
        self._fused = None                # the one-call stages' plan (see _fused_plan)
        self._no_float = np.zeros(0)
        self._fused_scal = None           # (a view of the plan: the LU's checks)
        self._src0 = self._no_float       # the one-call path's sources: constant values
        self._src_bufs: dict = {}         # and a buffer per thread (see _evaluate_fused)
        self._local = threading.local()   # each thread's default workspace
        self._check(np.random.default_rng(rng_seed))
        self._resistor_loop = False       # (nonlinear resistors: see _sparse_laws)
        self._newton_start: dict = {}     # (by thread: the loop's last solution)
        if self.applicable and m._nl_r:
            self._resistor_loop = self._has_resistor_loop(np.random.default_rng(rng_seed + 2))
        if self.applicable:
            fastlu.warn_if_slow()

    def __getstate__(self) -> dict:
        """Pickled without the per-thread source buffers and workspaces and the view of
        the LU checks (made again on use: a copy's view would be a copy of the LU
        checks' values, not a view that follows fastlu's)."""
        state = self.__dict__.copy()
        state["_src_bufs"] = {}
        state["_fused_scal"] = None
        state.pop("_law_batches", None)   # (compiled laws: made again on use)
        del state["_local"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def workspace(self) -> Workspace:
        """A new :class:`Workspace` (one per run: :func:`~bondgraph.simulate` makes
        one, so that a run's numbers do not depend on what ran before or beside it)."""
        return Workspace()

    def _default_workspace(self) -> Workspace:
        """This thread's workspace, for evaluations not given one."""
        ws = getattr(self._local, "ws", None)
        if ws is None:
            ws = self._local.ws = Workspace()
        return ws

    def _random_data(self, rng) -> np.ndarray:
        """The junction equations' data with every dynamic modulus random in [-1, 1]
        (its transposed entries the same values): where _check and the rate-term check
        decide structure."""
        L = self.model.layout
        data = L.base.copy()
        for _, _, start, n2_, n1_ in L.dynamic:
            vals = rng.uniform(-1.0, 1.0, (n2_, n1_))
            data[start:start + n2_ * n1_] = vals.ravel()
            data[start + n2_ * n1_:start + 2 * n2_ * n1_] = vals.T.ravel()
        return data

    def _sources(self, data: np.ndarray, euler, tangents=0.0) -> np.ndarray:
        """The sources vector the systems' terms index: [A data (the moduli's values,
        ``data``) | R flat | R_E flat (``euler``: the Euler junctions' matrices, or 0.0)
        | 1 | the nonlinear storage laws' tangents, flat (``tangents``; only with
        constraint sources)]."""
        sources = np.empty(self._n_sources)
        sources[:self._nA] = data
        sources[self._off_R:self._off_RE] = self._R_flat
        sources[self._off_RE:self._off_one] = euler
        sources[self._off_one] = 1.0
        sources[self._off_one + 1:] = tangents
        return sources

    def _rate_rows_reaching_u2(self, T: _Terms, shape, rows: np.ndarray, rng) -> np.ndarray:
        """Which of the dA/dt terms (rows ``rows`` of z in B) can change U_2, as a mask.

        Everything an evaluation gives depends on the acceleration stage's right-hand
        side only through U_2 (the bond values solve the first block, where z does not
        enter), so a term on a row that does not reach U_2 is work for nothing: in a
        junction structure of 0, 1, TF and MTF elements the effort equations' rows of z
        (the terms of the moduli's transposes) are such rows. Decided once, as _check
        decides, at random moduli: the row i reaches U_2 where (B^-T S_U2^T r)_i is not
        zero, for a random r (zero at every value where it is structurally zero; not
        zero almost surely otherwise). Every term is kept where B is singular there."""
        keep = np.ones(rows.size, dtype=bool)
        if not rows.size:
            return keep
        blocks = [-skew(rng.uniform(-1.0, 1.0, 3)).ravel() if d == 3 else
                  rng.uniform(-1.0, 1.0, d * d) for d in self._RE_dims]
        sources = self._sources(self._random_data(rng),
                                np.concatenate(blocks) if blocks else 0.0,
                                rng.uniform(0.5, 1.5, self._n_sources - self._off_one - 1))
        r_, c_, s_, k_ = T.arrays("matrix")
        pattern = _Pattern(shape, r_, c_, s_, k_)
        if pattern.structurally_singular:
            return keep
        B = pattern.matrix(sources).tocsc()
        B.eliminate_zeros()         # (an empty line can crash SuperLU: superlu issue 33)
        if np.any(np.diff(B.indptr) == 0) or np.unique(B.indices).size < shape[0]:
            return keep
        e = np.zeros(shape[0])
        e[self._c2:self._c2 + self.n2] = rng.uniform(0.5, 1.5, self.n2)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", spla.MatrixRankWarning)
                y = spla.spsolve(B.T.tocsc(), e)
        except (RuntimeError, ValueError):
            return keep
        if not np.isfinite(y).all():
            return keep
        scale = float(np.abs(y).max(initial=0.0))
        reach = np.abs(y) > 1e-9 * scale
        return reach[self._n_m + rows]

    def _system(self, shape, T: _Terms):
        rows, cols, src, coef = T.arrays("matrix")
        krows, kidx, ksrc, kcoef = T.arrays("known")
        known = (krows.astype(np.int64), kidx.astype(np.int64), ksrc.astype(np.int64), kcoef)
        # (a structurally singular system is kept whole: its pattern says so, where the
        # condensed one's products could hide it behind entries that cancel)
        cond = None
        if self.condensed and not _Pattern(shape, rows, cols, src, coef).structurally_singular:
            cond = condense(shape, rows, cols, src, coef, self._constant_sources,
                            self._off_one)
        if cond is None:
            return self._ordered(shape, rows, cols, src, coef), known
        nK = cond.rK.size
        S = self._ordered((nK, nK), cond.S_row, cond.S_col, cond.S_src, cond.S_coef,
                          extend=cond.extend)
        return _Condensed(cond, S), known

    # ------------------------------------------------------------------------------------

    def _ordered(self, shape, rows, cols, src, coef, extend=None) -> _Pattern:
        """A pattern whose column order (COLAMD, from the structure) keeps LU sparse.
        ``extend`` maps the sources to the vector the terms' ``src`` index (a
        condensed system's extended sources)."""
        constants = self._constant_sources if extend is None else \
            extend(self._constant_sources)
        probe = _Pattern(shape, rows, cols, src, coef)
        if shape[0] == 0 or probe.structurally_singular:
            probe.mark_constants(constants)
            return probe
        # the structure alone decides the order: factor it once with generic values
        vals = np.random.default_rng(1).uniform(0.5, 1.5, self._n_sources)
        if extend is not None:
            vals = extend(vals)
        A = probe.matrix(vals)
        # the column order of the two that leaves fewer factor entries (COLAMD's or the
        # minimum degree's on A^T A: chain-100's kept system 12 936 and 11 557, the
        # compiled LU's updates 45 000 and 34 000)
        order, best = np.arange(shape[1]), np.inf
        for spec in ("COLAMD", "MMD_ATA"):
            try:
                lu = spla.splu(A, permc_spec=spec)
            except RuntimeError:
                continue
            nnz = lu.L.nnz + lu.U.nnz
            if nnz < best:
                order, best = lu.perm_c, nnz
        # (its structural rank is the probe's: scipy's structural_rank took minutes on
        # chain-100's kept system in the minimum degree's column order, not 1 ms)
        pattern = _Pattern(shape, rows, cols, src, coef,
                           position=np.asarray(order, dtype=np.int64),
                           structurally_singular=False)
        pattern.mark_constants(constants)
        pattern.fast = fastlu.FixedLU.for_pattern(pattern)
        return pattern

    def _check(self, rng):
        """Decide ``applicable``: the structural conditions of Eq. (15) at random moduli."""
        m = self.model
        L = m.layout
        if self.n2 and not L.rec_slices["C"].stop > L.rec_slices["C"].start:
            self.reason = "no constraint rows"
            return
        data = self._random_data(rng)
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
        # the components of sources without a time derivative must stay out of the
        # constraint rows (Eq. (15) differentiates them)
        owner = [n for n, d in zip(m.sources, m.u1_dims) for _ in range(d)]
        u1 = isl["U1"].start + np.array([i for i, n in enumerate(owner)
                                         if m.sources[n].rate is None], dtype=np.int64)
        rhs = np.column_stack([A_i[:, cols] @ rng.uniform(0.5, 1.5, cols.size)]
                              + ([A_i[:, u1].toarray()] if u1.size else []))
        y = -lu.solve(rhs) if lu is not None else np.zeros((0, rhs.shape[1]))
        scale = max(1.0, float(np.abs(y).max(initial=0.0)))
        if self.n2 and np.abs(y[rows_c, 0]).max(initial=0.0) > 1e-12 * scale:
            self.reason = "the constraint flows depend on D, E or U2 (Eq. (14) applies)"
            return
        kin_dependent = bool(rows_k.size) and \
            np.abs(y[rows_k, 0]).max(initial=0.0) > 1e-12 * scale
        if kin_dependent and L.dynamic:
            self.reason = "a kinematic state's flow depends on D, E or U2"
            return
        self._kin_final = not kin_dependent     # the velocity stage's kinematic rates hold
        if self.n2 and u1.size and \
                np.abs(y[np.ix_(rows_c, 1 + np.arange(u1.size))]).max() > 1e-12 * scale:
            self.reason = "a source in the constraint equations has no time derivative"
            return
        self.applicable = True

    # ------------------------------------------------------------------------------------

    def evaluate(self, t: float, x: np.ndarray,
                 stabilization: Baumgarte | None = None,
                 workspace: Workspace | None = None) -> StepValues | None:
        """dX/dt, U_2 and every bond value at time ``t`` (s) and state ``x`` (shape
        ``(n_states,)``, the model's state order), with Baumgarte's terms when
        ``stabilization`` is given. None where the sparse system is singular or not
        finite: the caller then uses :meth:`StateSpaceModel.evaluate`, which explains
        the failure. Call only when ``applicable``. ``workspace``: the run's
        (:meth:`workspace`), default this thread's."""
        m = self.model
        L = m.layout
        fns = m.functions
        x = np.asarray(x, dtype=float)
        if x.shape != (m.n_states,):       # (the compiled stages do not check indices)
            raise ModelError(f"state vector has shape {x.shape}; valid: ({m.n_states},) "
                             f"for states {', '.join(m.state_names)}")
        s = StateView(x, m.state_slices)
        X = x[:m.n_energy]
        ws = workspace if workspace is not None else self._default_workspace()
        shared: dict = {}                 # the modulus contexts' values at x
        if self._B is not None and self._compiled:
            done = self._evaluate_fused(t, x, s, shared, stabilization, ws)
            if done is not None:
                return done
            shared.clear()
        moduli, phi = fns.moduli_and_phi(x, shared)
        data = L.data(moduli)
        sources = self._sources(data, self._euler_matrices(x, s) if m.ejs else 0.0)
        U1, dU1 = m.source_values(t, s, rates=self.n2 > 0)   # (rates: Eq. (15) only)
        isl = L.imp_slices
        known = np.zeros(2 * self._n_imp)
        known[isl["Z"]] = self._F @ X
        if m._nl_storage and not self._coenergies(X, known[isl["Z"]]):
            return None
        if self._tan_dims:                # (with constraint sources: Eq. (15)'s F)
            tangents = self._tangents(X)
            if tangents is None:
                return None
            sources[self._off_one + 1:] = tangents
        known[isl["U1"]] = U1
        if not (np.isfinite(sources).all() and np.isfinite(known).all()):
            return None
        n2 = self.n2
        if n2 == 0:
            pattern = self._M
            lu = systems._factor(pattern, sources, ws) if pattern.shape[0] else ()
            if lu is None:
                return None
            if m._nl_r:
                stage = self._resistor_stage(t, lu, sources, known)
            else:
                stage = self._stage(lu, pattern, self._M_known, sources, known, None)
            if stage is None:
                return None
            y, w = stage
            U2 = np.zeros(0)
            branch = Branch.NONE
        else:
            # one factorisation serves both stages: the first solve (dU_1/dt, dA/dt and
            # Baumgarte's terms left out) gives every flow the C rows and the kinematic
            # states see, and these do not depend on U_2, D or E (checked in _check), so
            # its U_2 and efforts, whatever they are, leave dc/dt unchanged
            lu = systems._factor(self._B, sources, ws)
            if lu is None:
                return None
            stage = self._stage(lu, self._B, self._B_known, sources, known, None,
                                first=True)
            if stage is None:
                return None
            _, w1 = stage                 # the variables _want1, at _w1_kin, _w1_dyn, _w1_C
            kin_rates = fns.kinematic_rates(x, w1[self._w1_kin])
            extra = np.zeros(self._B.shape[0])
            z0 = self._n_m
            if L.dynamic and not m.omit_rate_terms:
                dA = L.rate_data(fns.moduli_rates(x, kin_rates))
                extra[z0:z0 + self.n_u] -= np.bincount(
                    self._dyn_rows, weights=dA[self._dyn_terms] * w1[self._w1_dyn],
                    minlength=self.n_u)
            known[self._n_imp + isl["U1"].start:self._n_imp + isl["U1"].stop] = \
                np.where(np.isfinite(dU1), dU1, 0.0)
            if stabilization is not None:
                c0 = w1[self._w1_C]
                # (NaN: no Phi defined; an infinite Phi leaves extra non-finite: None)
                extra[z0 + self.n_u:z0 + self.n_u + n2] -= 2.0 * stabilization.alpha * c0 + \
                    stabilization.beta ** 2 * np.where(np.isnan(phi), 0.0, phi)
            if not np.isfinite(extra).all():
                return None
            if m._nl_r:
                stage = self._resistor_stage(t, lu, sources, known, extra)
            else:
                stage = self._stage(lu, self._B, self._B_known, sources, known, extra)
            if stage is None:
                return None
            y, w = stage
            U2 = y[self._c2:self._c2 + n2]
            branch = Branch.EQ15
        if n2 == 0 or not self._kin_final:
            kin_rates = fns.kinematic_rates(x, w[m._kin_rows])
        powers = m.work_powers(w)
        xdot = np.concatenate([w[self._rec_X], kin_rates, powers])
        return StepValues(t=float(t), x=x, xdot=xdot, U1=U1, U2=U2.copy(),
                          constraint_flow=w[self._rec_C], phi=phi, bond_values=w,
                          branch=branch, rank=n2)

    def derivative(self, t: float, x: np.ndarray,
                   stabilization: Baumgarte | None = None,
                   workspace: Workspace | None = None) -> np.ndarray | None:
        """dX/dt alone at time ``t`` (s) and state ``x`` (shape ``(n_states,)``, the
        model's state order and units): :meth:`evaluate`'s ``xdot`` (a fresh array, each
        state's unit per second), with Baumgarte's terms when ``stabilization`` is
        given; None where :meth:`evaluate` would give None. Where the one-call path
        applies, its acceleration stage computes only the bond variables dX/dt reads
        (what a solver needs; the outputs come from :meth:`evaluate`). ``workspace``:
        the run's (:meth:`workspace`), default this thread's."""
        m = self.model
        x = np.asarray(x, dtype=float)
        if x.shape != (m.n_states,):
            raise ModelError(f"state vector has shape {x.shape}; valid: ({m.n_states},) "
                             f"for states {', '.join(m.state_names)}")
        ws = workspace if workspace is not None else self._default_workspace()
        if self._B is not None and self._compiled:
            xdot = self._evaluate_fused(t, x, StateView(x, m.state_slices), {},
                                        stabilization, ws, full=False)
            if xdot is not None:
                return xdot
        ev = self.evaluate(t, x, stabilization, ws)
        return None if ev is None else ev.xdot

    @staticmethod
    def _known_rhs(pattern: _Pattern, kn, sources, known) -> np.ndarray:
        """The right-hand side from the known values' terms."""
        krows, kidx, ksrc, kcoef = kn
        return -np.bincount(krows, weights=kcoef * sources[ksrc] * known[kidx],
                            minlength=pattern.shape[0]).astype(float)

    _back = staticmethod(_back)

    def _stage(self, lu, pattern, kn, sources, known, extra, first: bool = False):
        """(y, w): the system's solution for the known values' right-hand side plus
        ``extra`` (None: nothing), and every bond variable; None if not finite. One
        compiled call where the system is condensed and its LU compiled, else numpy
        (the same sums in the same order). ``first``: the velocity stage, which needs
        only the bond variables ``self._want1`` (w holds those, in that order; the
        compiled call computes no other, and y only where they read it)."""
        n2 = self.n2
        plan = self._compiled_plan(pattern, lu)
        if plan is not None:
            ints, ioff, flts, foff = plan[1] if first else plan[0]
            c = pattern.c
            f = lu.lu
            if f is None:
                S_ints, S_off = self._no_ints
                Lx = Vx = dd = self._no_float
            else:
                S_ints, S_off = f.structure.packed()
                Lx, Vx, dd = f.Lx, f.Vx, f.d
            w, y, code = fastlu._sparse_kernels()._stage(
                sources, known, self._no_float if extra is None else extra,
                c.n if extra is None else 0, ints, ioff, flts, foff, c.n, pattern.n_E,
                pattern.n_K, S_ints, S_off, Lx, Vx, dd, self._no_float, 0.0)
            return (y, w) if code == 0 else None
        if pattern.shape[0] == 0:
            y = np.zeros(0)
        else:
            b = self._known_rhs(pattern, kn, sources, known)
            if extra is not None:
                b += extra
            y = self._back(lu, pattern, b)
            if y is None:
                return None
        w = self._full(y, known, y[self._c2:self._c2 + n2])
        return (y, w[self._want1]) if first else (y, w)

    def _full(self, y, known, U2):
        """Every bond variable from the unknowns y and the known values."""
        L = self.model.layout
        isl = L.imp_slices
        v = known[:self._n_imp].copy()
        v[isl["L"]] = y[self._cL:self._cL + self.n_L]
        v[isl["E"]] = y[self._cE:self._cE + self.n_E]
        v[isl["U2"]] = U2
        if self.n_u == 0:
            return v[self._ipos]
        return np.where(self._is_u, y[np.where(self._is_u, self._ucol, 0)], v[self._ipos])
