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

A solver needs dX/dt alone: :meth:`SparseReduction.derivative` gives it, and where the
one-call path applies (numba, a condensed system, plain EJS elements) its acceleration
stage computes only the bond variables dX/dt reads; :meth:`SparseReduction.evaluate`
gives every bond value and U_2 (what a result's outputs are made of).
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import structural_rank

try:            # scipy's SuperLU binding (see _splu); the public splu is the fallback
    from scipy.sparse.linalg._dsolve import _superlu
except ImportError:  # pragma: no cover
    _superlu = None

from . import fastlu
from .branches import Branch
from .condensation import Condensation, condense
from .element import StateView
from .errors import ModelError
from .primitives import EJS
from .spatial import skew
from .stabilization import Baumgarte

__all__ = ["SparseReduction", "StepValues"]


@dataclass(slots=True)
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
    branch : Branch
        ``Branch.EQ15`` or ``Branch.NONE``.
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
    branch: Branch
    rank: int
    H4: None = None


class _Pattern:
    """A sparse matrix of fixed pattern whose entries are ``coef * source[k]``.

    Built from COO entries (row, col, source index, coefficient); duplicates are summed.
    ``matrix(sources)`` refills the data in one ``bincount``. ``position`` permutes the
    columns: logical column c is stored as column ``position[c]`` (SuperLU's ``perm_c``
    convention), so a solution y of the stored matrix is ``y[position]`` in logical order.
    ``fast`` is the compiled LU (:class:`bondgraph.fastlu.FixedLU`) where
    :meth:`SparseReduction._ordered` prepared one, else None (SuperLU only).
    """

    fast: fastlu.FixedLU | None = None

    def __init__(self, shape, rows, cols, src, coef, position=None,
                 structurally_singular: bool | None = None):
        n_rows, n_cols = shape
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if position is not None:
            cols = position[cols]
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
        self.position = (np.arange(n_cols) if position is None
                         else np.asarray(position, dtype=np.int64))

        # an empty row or column: singular whatever the values (and SuperLU must not see
        # it: an all-empty matrix can crash it)
        self._matrix = sp.csc_matrix((np.ones(self.n), self.indices, self.indptr),
                                     shape=shape)
        self._matrix.has_canonical_format = True
        if structurally_singular is not None:    # (known: the same pattern unpermuted)
            self.structurally_singular = structurally_singular
            return
        self.structurally_singular = bool(
            n_rows != n_cols or np.any(np.diff(self.indptr) == 0)
            or np.unique(self.indices).size < n_rows
            or (n_rows and structural_rank(self._matrix) < n_rows))

    def mark_constants(self, constant_sources: np.ndarray) -> None:
        """Find the rows and columns that always hold a non-zero constant entry
        (``constant_sources``: the value of each constant source, NaN for the varying
        ones); only the others need the per-evaluation check for an all-zero line."""
        n_rows, n_cols = self.shape
        val = np.bincount(self.group, weights=self.coef * constant_sources[self.src],
                          minlength=self.n)
        safe = np.isfinite(val) & (val != 0.0)
        col_of = np.repeat(np.arange(n_cols), np.diff(self.indptr))
        self._lines = []
        for line_of, n_lines in ((col_of, n_cols), (self.indices, n_rows)):
            risky = np.ones(n_lines, dtype=bool)
            risky[line_of[safe]] = False
            seg = -np.ones(n_lines, dtype=np.int64)
            seg[risky] = np.arange(int(risky.sum()))
            idx = np.flatnonzero(risky[line_of])
            self._lines.append((idx, seg[line_of[idx]], int(risky.sum())))

    def has_zero_line(self, data: np.ndarray) -> bool:
        """Whether a row or column of the matrix with these values is all zeros."""
        for idx, seg, n in self._lines:
            if n and np.bincount(seg, np.abs(data[idx]), n).min() == 0.0:
                return True
        return False

    def matrix(self, sources: np.ndarray) -> sp.csc_matrix:
        """The matrix at these source values: a new matrix object (the pattern's index
        arrays shared, read-only), so that evaluations in several threads never see each
        other's values."""
        data = np.bincount(self.group, weights=self.coef * sources[self.src],
                           minlength=self.n).astype(float)
        A = sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape, copy=False)
        A.has_canonical_format = True
        return A


class _Condensed:
    """A square system solved through its static condensation
    (:mod:`bondgraph.condensation`): the kept system S is an ordinary :class:`_Pattern`
    on the extended sources, C, G and H are applied as flat products. ``_factor`` and
    ``SparseReduction._back`` take it where they take a pattern."""

    def __init__(self, condensation: Condensation, S: _Pattern):
        self.c = condensation
        self.S = S
        self.shape = (condensation.n, condensation.n)
        self.n_E, self.n_K = condensation.rE.size, condensation.rK.size

    @property
    def structurally_singular(self) -> bool:
        return self.S.structurally_singular

    @property
    def fast(self) -> fastlu.FixedLU | None:
        """The kept system's compiled LU (None: SuperLU)."""
        return self.S.fast

    def factor(self, sources: np.ndarray, ws: "Workspace"):
        """S's factors at these sources (with the sources, for G and H), or None."""
        c = self.c
        if self.n_K:
            lu = _factor(self.S, c.extend(sources), ws)
            if lu is None:
                return None
        else:
            lu = None
        return _CondensedFactors(lu, sources)

    def solve(self, f: "_CondensedFactors", b: np.ndarray) -> np.ndarray | None:
        """The solution of A y = b in logical column order (None if not finite)."""
        c = self.c
        bE = b[c.rE]
        if f.G is None:
            f.G = c.G_coef * f.sources[c.G_src]
            f.H = c.H_coef * f.sources[c.H_src]
        if self.n_K:
            rhs = b[c.rK] - np.bincount(c.G_row, weights=f.G * bE[c.G_col],
                                        minlength=self.n_K)
            yK = SparseReduction._back(f.lu, self.S, rhs)
            if yK is None:
                return None
            yE = np.bincount(c.C_row, weights=c.C_val * bE[c.C_col], minlength=self.n_E) - \
                np.bincount(c.H_row, weights=f.H * yK[c.H_col], minlength=self.n_E)
        else:
            yK = np.zeros(0)
            yE = np.bincount(c.C_row, weights=c.C_val * bE[c.C_col], minlength=self.n_E)
        y = np.empty(c.n)
        y[c.cK] = yK
        y[c.cE] = yE
        return y if np.isfinite(yE).all() else None


class _CondensedFactors:
    """The kept system's LU factors and the sources G's and H's values come from
    (computed at the first numpy solve; the compiled stage forms them itself)."""

    __slots__ = ("lu", "sources", "G", "H")

    def __init__(self, lu, sources: np.ndarray):
        self.lu, self.sources = lu, sources
        self.G = self.H = None


class Workspace:
    """What one run's sparse evaluations change from one to the next: the pivot-order
    state (:class:`bondgraph.fastlu.LUState`) of each compiled LU, made on first use.

    The :class:`SparseReduction` itself is read-only while evaluating, so one model
    serves any number of threads; each run (:func:`~bondgraph.simulate` makes one per
    run) or thread (the default of :meth:`SparseReduction.evaluate`) has its own
    workspace. A run that starts from a new workspace takes the same pivot orders, hence
    the same numbers to the last bit, whatever ran before or beside it. A workspace must
    not be shared between threads."""

    __slots__ = ("_lu",)

    def __init__(self) -> None:
        self._lu: dict = {}

    def lu(self, fast: fastlu.FixedLU) -> fastlu.LUState:
        """The state of the compiled LU ``fast`` in this workspace."""
        state = self._lu.get(fast)
        if state is None:
            state = self._lu[fast] = fast.new_state()
        return state


def _factor(pattern: "_Pattern | _Condensed", sources: np.ndarray, ws: Workspace):
    """LU factors of the pattern's matrix at these source values (None if singular or
    not finite): the compiled LU on the pattern's fixed structure where it is prepared
    and the workspace's pivot order passes its checks (:mod:`bondgraph.fastlu`), else
    splu with the precomputed column order. A condensed system factors its kept
    system."""
    if isinstance(pattern, _Condensed):
        return pattern.factor(sources, ws)
    if pattern.structurally_singular:
        return None
    fast = pattern.fast
    if fast is not None:          # (a zero row or column gives it a zero pivot: refused)
        lu = fast.factor(ws.lu(fast), sources)
        if lu is not None:
            return lu
    return _superlu_factor(pattern, sources, ws)


def _superlu_factor(pattern: _Pattern, sources: np.ndarray, ws: Workspace):
    """:func:`_factor`'s SuperLU branch: splu on the precomputed column order (None if
    singular or not finite); its pivot order goes to the workspace's state of the
    compiled LU (:meth:`bondgraph.fastlu.FixedLU.adopt`, at most once per
    ``SETUP_INTERVAL`` factorisations)."""
    fast = pattern.fast
    A = pattern.matrix(sources)
    # a row or column of zeros: singular, and SuperLU can crash on it (superlu issue 33);
    # non-finite values come out as a non-finite solution (the caller checks it)
    if pattern.has_zero_line(A.data):
        return None
    try:
        lu, (u_data, u_rows, u_ptr) = _splu(A)
    except RuntimeError:                       # exactly singular
        return None
    n = A.shape[0]
    last = u_ptr[1:] - 1                # SuperLU stores the pivot last in its U column
    if np.array_equal(u_rows[last], np.arange(n)):
        d = np.abs(u_data[last])
    else:
        nnz = u_ptr[-1]
        cols = np.repeat(np.arange(n), np.diff(u_ptr))
        d = np.abs(u_data[:nnz][u_rows[:nnz] == cols])
    if d.size < n or not np.isfinite(d).all() or d.min(initial=np.inf) <= 1e-14 * d.max():
        return None
    if fast is not None:                # its pivots, sound here, for the next evaluations
        fast.adopt(ws.lu(fast), lu)
    return lu


def _raw_csc(arrays, shape=None):
    """SuperLU hands its factors over as (data, indices, indptr) (the arrays may be
    longer than indptr[-1]): keep them raw."""
    return arrays


# small panels and supernodes suit these very sparse, nearly banded systems: a third less
# time than SuperLU's defaults (8, 10) from chain-10 to chain-100
_PANEL_SIZE, _RELAX = 4, 2
_GSTRF_OPTIONS = {"DiagPivotThresh": None, "ColPerm": "NATURAL", "PanelSize": _PANEL_SIZE,
                  "Relax": _RELAX, "SymmetricMode": True}
_DIRECT = [_superlu is not None]


def _splu(A: sp.csc_matrix):
    """``splu(A, permc_spec="NATURAL")`` and the raw arrays of its U factor.

    scipy's splu wraps the factors L and U into sparse matrices on every call, which
    costs more than factoring a mechanism's system; calling its SuperLU binding with the
    same options and keeping the factors raw avoids that. Should the binding change, the
    public splu is used from then on (same numbers, slower)."""
    if _DIRECT[0]:
        try:
            lu = _superlu.gstrf(A.shape[0], A.nnz, A.data, A.indices.astype(np.intc, copy=False),
                                A.indptr.astype(np.intc, copy=False),
                                csc_construct_func=_raw_csc, ilu=False,
                                options=_GSTRF_OPTIONS)
            u = lu.U
            if isinstance(u, tuple) and len(u) == 3:
                return lu, u
        except (TypeError, AttributeError, ValueError):
            pass
        _DIRECT[0] = False
    lu = spla.splu(A, permc_spec="NATURAL", panel_size=_PANEL_SIZE, relax=_RELAX)
    U = lu.U.tocsc()
    return lu, (U.data, U.indices, U.indptr)


class _Terms:
    """Linear terms ``coef * source[src]`` of a system under construction: on an unknown
    column, or on a known value (an index into the evaluation's vector of known values)."""

    def __init__(self):
        self.rows, self.cols, self.src, self.coef = [], [], [], []
        self.krows, self.kidx, self.ksrc, self.kcoef = [], [], [], []

    def add(self, rows, cols, src, coef):
        self.rows.append(rows); self.cols.append(cols)
        self.src.append(src); self.coef.append(coef)

    def known(self, rows, kidx, src, coef):
        self.krows.append(rows); self.kidx.append(kidx)
        self.ksrc.append(src); self.kcoef.append(coef)

    def arrays(self, which):
        parts = (self.rows, self.cols, self.src, self.coef) if which == "matrix" else \
            (self.krows, self.kidx, self.ksrc, self.kcoef)
        return [np.concatenate(p) if p else np.zeros(0, dtype=float if k == 3 else np.int64)
                for k, p in enumerate(parts)]


class SparseReduction:
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
        self._n_sources = self._off_one + 1
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

        in_kept = newrow[L.rows] >= 0
        ent = np.flatnonzero(in_kept)

        def velocity_terms(with_u2):
            T = _Terms()
            w_terms(T, newrow[L.rows[ent]], L.cols[ent], ent, np.ones(ent.size), with_u2)
            r0 = n_u                   # D_out - R D_in = 0
            w_terms(T, r0 + np.arange(n_L), L.imp[isl["L"]], np.full(n_L, one),
                    np.ones(n_L), with_u2)
            w_terms(T, r0 + np.repeat(np.arange(n_L), n_L), np.tile(rec_L, n_L),
                    self._off_R + np.arange(n_L * n_L), -np.ones(n_L * n_L), with_u2)
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
        if not n2:      # without constraints one stage; with them B serves both stages
            self._M, self._M_known = self._system((n_m, n_m), velocity_terms(False))
        else:
            T = velocity_terms(True)
            z_terms(T, n_m + newrow[L.rows[ent]], L.cols[ent], ent, np.ones(ent.size))
            r_c = n_m + n_u
            z_terms(T, r_c + np.arange(n2), self._rec_C, np.full(n2, one), np.ones(n2))
            n_big = n_m + n2 + n_u
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
        self._dyn_terms = self._dyn[live] if n2 else self._dyn[:0]
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
        if self.applicable:
            fastlu.warn_if_slow()

    def __getstate__(self) -> dict:
        """Pickled without the per-thread source buffers and workspaces and the view of
        the LU checks (made again on use: a copy's view would be a copy of the LU
        checks' values, not a view that follows fastlu's)."""
        state = self.__dict__.copy()
        state["_src_bufs"] = {}
        state["_fused_scal"] = None
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
        sources = np.empty(self._n_sources)
        sources[:self._nA] = self._random_data(rng)
        sources[self._off_R:self._off_RE] = self._R_flat
        blocks = [-skew(rng.uniform(-1.0, 1.0, 3)).ravel() if d == 3 else
                  rng.uniform(-1.0, 1.0, d * d) for d in self._RE_dims]
        sources[self._off_RE:self._off_one] = np.concatenate(blocks) if blocks else 0.0
        sources[self._off_one] = 1.0
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
        if self.n2 and self._compiled:
            done = self._evaluate_fused(t, x, s, shared, stabilization, ws)
            if done is not None:
                return done
            shared.clear()
        moduli, phi = fns.moduli_and_phi(x, shared)
        data = L.data(moduli)
        sources = np.empty(self._n_sources)
        sources[:self._nA] = data
        sources[self._off_R:self._off_RE] = self._R_flat
        if m.ejs:
            sources[self._off_RE:self._off_one] = self._euler_matrices(x, s)
        sources[self._off_one] = 1.0
        U1, dU1 = m.source_values(t, s)
        isl = L.imp_slices
        known = np.zeros(2 * self._n_imp)
        known[isl["Z"]] = self._F @ X
        known[isl["U1"]] = U1
        if not (np.isfinite(sources).all() and np.isfinite(known).all()):
            return None
        n2 = self.n2
        if n2 == 0:
            pattern = self._M
            lu = _factor(pattern, sources, ws) if pattern.shape[0] else ()
            if lu is None:
                return None
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
            lu = _factor(self._B, sources, ws)
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
                extra[z0 + self.n_u:] -= 2.0 * stabilization.alpha * c0 + \
                    stabilization.beta ** 2 * np.where(np.isnan(phi), 0.0, phi)
            if not np.isfinite(extra).all():
                return None
            stage = self._stage(lu, self._B, self._B_known, sources, known, extra)
            if stage is None:
                return None
            y, w = stage
            U2 = y[self._c2:self._c2 + n2]
            branch = Branch.EQ15
        if n2 == 0 or not self._kin_final:
            kin_rates = fns.kinematic_rates(x, w[m._kin_rows])
        powers = np.array([w[e] @ w[f] for e, f in m.work_idx])
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
        if self.n2 and self._compiled:
            xdot = self._evaluate_fused(t, x, StateView(x, m.state_slices), {},
                                        stabilization, ws, full=False)
            if xdot is not None:
                return xdot
        ev = self.evaluate(t, x, stabilization, ws)
        return None if ev is None else ev.xdot

    def _evaluate_fused(self, t, x, s, shared, stabilization, ws: Workspace,
                        full: bool = True) -> StepValues | np.ndarray | None:
        """:meth:`evaluate` with constraints in two compiled calls
        (:func:`bondgraph._sparse_kernels._first` and ``_second``; the element functions
        between them), where the system is condensed, the kept system's LU compiled and
        its pivot order set, and the EJS elements plain. None where that does not apply
        or a step of it fails (the caller then takes the general path, which repeats the
        evaluation and handles the failure). With ``full`` False, dX/dt alone (see
        :meth:`derivative`)."""
        args = self._fused_args(ws)
        if args is None:
            return None
        state = args[1]
        if state is not None:
            state.since_setup += 1
        m = self.model
        fns = m.functions
        kern = fastlu._sparse_kernels()
        moduli, phi = fns.moduli_and_phi(x, shared)
        U1, dU1 = m.source_values(t, s)
        # the sources: this thread's buffer (its constant entries set once; taken out
        # while in use, so that an evaluation inside this one gets its own)
        bufs, key = self._src_bufs, threading.get_ident()
        src = bufs.pop(key, None)
        if src is None:
            src = self._src0.copy()
        try:
            got = self._fused_stages(kern, t, x, moduli, phi, U1, dU1, src, args,
                                     stabilization, full, ws)
        finally:
            bufs[key] = src
        if got is None:
            return None
        w, y, kin_rates = got
        if not full:                   # w: the variables _want2
            if not self._kin_final:
                kin_rates = fns.kinematic_rates(x, w[self._w2_kin])
            parts = [w[self._w2_X], kin_rates]
            if m.work_idx:
                parts.append(np.array([w[e] @ w[f] for e, f in self._w2_work]))
            return np.concatenate(parts)
        n2 = self.n2
        if not self._kin_final:
            kin_rates = fns.kinematic_rates(x, w[m._kin_rows])
        if m.work_idx:
            powers = np.array([w[e] @ w[f] for e, f in m.work_idx])
            xdot = np.concatenate([w[self._rec_X], kin_rates, powers])
        else:
            xdot = np.concatenate([w[self._rec_X], kin_rates])
        return StepValues(t=float(t), x=x, xdot=xdot, U1=U1, U2=y[self._c2:self._c2 + n2],
                          constraint_flow=w[self._rec_C], phi=phi, bond_values=w,
                          branch=Branch.EQ15, rank=n2)

    def _fused_stages(self, kern, t, x, moduli, phi, U1, dU1, src, args, stabilization,
                      full, ws):
        """The two compiled calls of :meth:`_evaluate_fused` with the element functions
        between them: (w, y, the velocity stage's kinematic rates), or None."""
        fast, state, st, packed, S, rate_terms = args
        fns = self.model.functions
        work, w1, status = kern._first(x, moduli, U1, src, *packed, *S)
        if status == 2:
            # the pivot order failed its checks here: one of the recent orders, or
            # SuperLU's when it may be adopted (see FixedLU), gives the kept system
            # another; then once more
            if fast is None:
                return None
            ext = self._B.c.extend(src)
            if fast.factor(state, ext, current_failed=True) is None and (
                    not fast.may_adopt(state) or
                    _superlu_factor(self._B.S, ext, ws) is None):
                return None
            if state.structure is st:
                return None
            args = self._fused_args(ws)
            if args is None:
                return None
            fast, state, st, packed, S, rate_terms = args
            work, w1, status = kern._first(x, moduli, U1, src, *packed, *S)
        if status:
            return None
        kin_rates = fns.kinematic_rates(x, w1[self._w1_kin])
        rates = fns.moduli_rates(x, kin_rates) if rate_terms else self._no_float
        if stabilization is not None:
            a2, b2, stab = 2.0 * stabilization.alpha, stabilization.beta ** 2, True
        else:
            a2, b2, stab = 0.0, 0.0, False
        w, y, status = kern._second(work, src, rates, w1, dU1, phi, a2, b2, stab, *packed,
                                    S[0], S[1], full)
        if status:
            return None
        return w, y, kin_rates

    def _fused_args(self, ws: Workspace):
        """The arguments of the two compiled calls of :meth:`_evaluate_fused` that do not
        change from one evaluation to the next of one pivot order: (the kept system's LU
        and its state in ``ws``, or None twice, the state's structure, the packed plan
        (I, F, IO, FO; see :mod:`bondgraph._sparse_kernels`), the structure's (S_ints,
        S_off, t_coef), whether there are rate terms), or None where the one-call path
        does not apply or the state has no pivot order yet."""
        plan = self._fused_plan()
        if plan is None:
            return None
        scal = self._fused_scal
        if scal is None:                     # (a view of F: the LU's checks, read live)
            F, FO, k = plan[0][1], plan[0][3], fastlu._sparse_kernels().F_SCAL
            scal = self._fused_scal = F[FO[k]:FO[k + 1]]
        if scal[0] != fastlu.PIVOT_THRESHOLD or scal[1] != fastlu.SINGULAR_RATIO:
            scal[0], scal[1] = fastlu.PIVOT_THRESHOLD, fastlu.SINGULAR_RATIO
        pattern = self._B
        if pattern.n_K:
            fast = pattern.fast
            if fast is None:
                return None
            state = ws.lu(fast)
            st = state.structure
            if st is None:
                return None
            S = (*st.packed(), st.t_coef)
        else:
            fast = state = st = None
            S = (*self._no_ints, self._no_float)
        packed, rate_terms = plan
        return fast, state, st, packed, S, rate_terms

    def _fused_plan(self):
        """The packed arrays of :meth:`_evaluate_fused` (made once), or None where it
        does not apply (a system not condensed, EJS elements of another kind)."""
        if self._fused is None:
            self._fused = self._make_fused_plan() or False
        return self._fused or None

    def _make_fused_plan(self):
        m = self.model
        L = m.layout
        pattern = self._B
        if self._stage_plans(pattern) is None:
            return None
        gather = self._ejs_gather()
        if gather is None:
            return None
        e_idx, e_sign = gather
        isl = L.imp_slices
        F = self._F
        c = pattern.c
        src0 = np.empty(self._n_sources)
        src0[:self._nA] = L.base
        src0[self._off_R:self._off_RE] = self._R_flat
        src0[self._off_RE:self._off_one] = 0.0
        src0[self._off_one] = 1.0
        scal = [self._off_RE, isl["Z"].start, isl["Z"].stop - isl["Z"].start,
                isl["U1"].start, isl["U1"].stop - isl["U1"].start, self._n_imp]
        ip = [L._dyn_direct, L._dyn_transposed, e_idx, F.indptr, F.indices, c.pair_a,
              c.pair_b, scal]
        if not np.isfinite(src0).all():   # (the one-call path checks the varying ones)
            return None
        self._src0 = src0
        fp = [e_sign, F.data]
        # dA/dt's entry e of the dynamic moduli is -rate[k]: k per entry of _dyn
        mod_of = -np.ones(self._nA, dtype=np.int64)
        k = np.arange(L._dyn_direct.size)
        mod_of[L._dyn_direct] = k
        mod_of[L._dyn_transposed] = k
        mods = mod_of[self._dyn_terms]
        if np.any(mods < 0):
            return None
        rate_terms = int(bool(L.dynamic) and not m.omit_rate_terms)
        qp = [self._dyn_rows, mods, self._w1_dyn, self._w1_C,
              [self._n_m, self.n_u, self._n_imp + isl["U1"].start,
               isl["U1"].stop - isl["U1"].start, rate_terms]]

        def pack(parts, dtype):
            parts = [np.asarray(p, dtype=dtype).ravel() for p in parts]
            return (np.ascontiguousarray(np.concatenate(parts)),
                    np.r_[0, np.cumsum([p.size for p in parts])].astype(np.int64))

        P_int, P_off = pack(ip, np.int64)
        P_flt, F_off = pack(fp, np.float64)
        Q_int, Q_off = pack(qp, np.int64)
        (ints, ioff, flts, foff), _, (ints3, ioff3, flts3, foff3) = self._plans[pattern]
        (ints1, ioff1, flts1, foff1), sizes1 = self._velocity_plan()
        K = fastlu._sparse_kernels()
        int_parts = [None] * K.N_INT_PARTS
        int_parts[K.I_P], int_parts[K.I_POFF], int_parts[K.I_FOFF] = P_int, P_off, F_off
        int_parts[K.I_INTS1], int_parts[K.I_IOFF1], int_parts[K.I_FOFF1] = \
            ints1, ioff1, foff1
        int_parts[K.I_Q], int_parts[K.I_QOFF] = Q_int, Q_off
        int_parts[K.I_INTS2], int_parts[K.I_IOFF2], int_parts[K.I_FOFF2] = ints, ioff, foff
        int_parts[K.I_SIZES] = [c.n, pattern.n_E, pattern.n_K, *sizes1]
        int_parts[K.I_INTS3], int_parts[K.I_IOFF3], int_parts[K.I_FOFF3] = \
            ints3, ioff3, foff3
        flt_parts = [None] * K.N_FLT_PARTS
        flt_parts[K.F_P], flt_parts[K.F_FLTS1], flt_parts[K.F_FLTS2] = P_flt, flts1, flts
        flt_parts[K.F_FLTS3] = flts3
        flt_parts[K.F_SCAL] = [fastlu.PIVOT_THRESHOLD, fastlu.SINGULAR_RATIO]
        I_all, IO = pack(int_parts, np.int64)
        F_all, FO = pack(flt_parts, np.float64)
        return (I_all, F_all, IO, FO), rate_terms

    def _euler_matrices(self, x: np.ndarray, s: StateView) -> np.ndarray:
        """The EJS blocks of R_E, raveled and concatenated: -h~ of every body's angular
        momentum h in one call when all are plain EJS elements, else element by
        element."""
        m = self.model
        gather = self._ejs_gather()
        if gather is None:
            return np.concatenate([m._elements[n].euler_matrix(s).ravel() for n in m.ejs])
        idx, sign = gather
        return sign * x[idx]

    def _ejs_gather(self):
        """(positions in x, signs) of the EJS blocks' entries when every EJS element is
        a plain :class:`~bondgraph.primitives.EJS` (-h~ raveled is [0, h2, -h1, -h2, 0,
        h0, h1, -h0, 0]: one gather), else None (made once)."""
        if self._ejs_momenta is None:
            m = self.model
            els = [m._elements[n] for n in m.ejs]
            if all(type(el) is EJS for el in els):
                sl = [m.state_slices[f"p_{el.momentum}"] for el in els]
                comp = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0], dtype=np.int64)
                sign = np.array([0.0, 1, -1, -1, 0, 1, 1, -1, 0])
                self._ejs_momenta = (
                    np.concatenate([q.start + comp for q in sl]) if sl
                    else np.zeros(0, dtype=np.int64), np.tile(sign, len(sl)))
            else:
                self._ejs_momenta = False
        return self._ejs_momenta or None

    @staticmethod
    def _known_rhs(pattern: _Pattern, kn, sources, known) -> np.ndarray:
        """The right-hand side from the known values' terms."""
        krows, kidx, ksrc, kcoef = kn
        return -np.bincount(krows, weights=kcoef * sources[ksrc] * known[kidx],
                            minlength=pattern.shape[0]).astype(float)

    @staticmethod
    def _back(lu, pattern: _Pattern, b: np.ndarray) -> np.ndarray | None:
        """The solution in logical column order (None if not finite)."""
        if isinstance(lu, _CondensedFactors):
            return pattern.solve(lu, b)
        if isinstance(lu, fastlu.Factors):
            return lu.solve_logical(b)
        y = lu.solve(b)[pattern.position]
        return y if np.isfinite(y).all() else None

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
            w, y, finite = fastlu._sparse_kernels()._stage(
                sources, known, self._no_float if extra is None else extra,
                c.n if extra is None else 0, ints, ioff, flts, foff, c.n, pattern.n_E,
                pattern.n_K, S_ints, S_off, Lx, Vx, dd)
            return (y, w) if finite else None
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

    def _compiled_plan(self, pattern, lu):
        """The packed index and coefficient arrays of :func:`_stage`'s kernel for this
        condensed system (made once), or None where the numpy path applies: no numba,
        a system not condensed, or factors that are SuperLU's."""
        plans = self._stage_plans(pattern)
        if plans is None or not (lu.lu is None or isinstance(lu.lu, fastlu.Factors)):
            return None
        return plans

    def _stage_plans(self, pattern):
        """(every stage, velocity stage) packed plans of a condensed system (made once),
        or None without numba or for a system that is not condensed."""
        if not isinstance(pattern, _Condensed) or not self._compiled:
            return None
        plan = self._plans.get(pattern)
        if plan is None:
            plan = self._plans[pattern] = self._pack(pattern)
        return plan

    def _pack(self, pattern: "_Condensed"):
        """The compiled stage's plans of a condensed system (B or M): every bond
        variable, the velocity stage's (``_want1``) and dX/dt's (``_want2``)."""
        is_B = pattern is getattr(self, "_B", None)
        kn = self._B_known if is_B else self._M_known
        # the rows of b that can be non-zero (known values' terms, dA/dt's and
        # Baumgarte's rows): C's and G's terms on the others add exact zeros
        support = np.zeros(pattern.c.n, dtype=bool)
        support[kn[0]] = True
        if is_B:
            support[self._n_m + self._dyn_rows] = True
            support[self._n_m + self.n_u:] = True
        wsrc = self._wsrc(with_u2=True)
        return (self._plan(pattern, kn, support, wsrc, None),
                self._plan(pattern, kn, support, wsrc, self._want1),
                self._plan(pattern, kn, support, wsrc, self._want2()))

    def _velocity_plan(self):
        """The velocity stage's plan on its own system V (U_2 = 0; see ``__init__``),
        where V exists: else B's (:meth:`_pack`). With the sizes (n, n_E, n_K) of the
        system it solves."""
        V = self._V
        if V is None:
            B = self._B
            return self._plans[B][1], (B.c.n, B.n_E, B.n_K)
        support = np.zeros(V.c.n, dtype=bool)
        support[self._V_known[0]] = True
        plan = self._plan(V, self._V_known, support, self._wsrc(with_u2=False),
                          self._want1)
        return plan, (V.c.n, V.n_E, V.n_K)

    def _wsrc(self, with_u2: bool) -> np.ndarray:
        """Per bond variable: its index in the system's solution y, or -1 - its index in
        the known values (U_2's too where ``with_u2`` is False: zeros there)."""
        isl = self.model.layout.imp_slices
        imp_src = -1 - np.arange(self._n_imp, dtype=np.int64)
        groups = (("L", self._cL), ("E", self._cE)) + ((("U2", self._c2),) if with_u2
                                                       else ())
        for grp, base in groups:
            sl = isl[grp]
            imp_src[sl] = base + np.arange(sl.stop - sl.start)
        return np.where(self._is_u, self._ucol, imp_src[self._ipos]).astype(np.int64)

    @staticmethod
    def _plan(pattern: "_Condensed", kn, support: np.ndarray, wsrc: np.ndarray,
              want: np.ndarray | None):
        """The packed (ints, ioff, flts, foff) of :func:`_sparse_kernels._stage` for
        the bond variables ``want`` (None: every one, and every row of y_E)."""
        c = pattern.c
        krows, kidx, ksrc, kcoef = kn
        k_of_y = -np.ones(c.n, dtype=np.int64)
        k_of_y[c.cE] = np.arange(c.cE.size)
        live = support[c.rE]
        if want is None:
            C_sel, H_sel = np.ones(c.C_row.size, dtype=bool), np.ones(c.H_row.size, bool)
        else:
            wsrc = wsrc[want]
            need = np.zeros(c.cE.size, dtype=bool)
            k = k_of_y[wsrc[wsrc >= 0]]
            need[k[k >= 0]] = True
            C_sel, H_sel = need[c.C_row], need[c.H_row]
        C_sel = C_sel & live[c.C_col]
        G_sel = live[c.G_col]
        # what the stage reads: the rows of y_E behind wsrc and the H terms, the
        # entries of b_E the C and G terms read, the rows of b behind those and the
        # kept system's, and the known values' terms on those rows
        ek = np.full(c.cE.size, want is None)
        ek[c.C_row[C_sel]] = True
        ek[c.H_row[H_sel]] = True
        k = k_of_y[wsrc[wsrc >= 0]]
        ek[k[k >= 0]] = True
        ebk = np.zeros(c.cE.size, dtype=bool)
        ebk[c.C_col[C_sel]] = True
        ebk[c.G_col[G_sel]] = True
        brows = np.zeros(c.n, dtype=bool)
        brows[c.rK] = True
        brows[c.rE[ebk]] = True
        k_sel = brows[krows]
        parts = [krows[k_sel], kidx[k_sel], ksrc[k_sel], c.rE, c.rK, c.cE, c.cK,
                 c.C_row[C_sel], c.C_col[C_sel], c.G_row[G_sel], c.G_col[G_sel],
                 c.G_src[G_sel], c.H_row[H_sel], c.H_col[H_sel], c.H_src[H_sel], wsrc,
                 np.flatnonzero(brows), np.flatnonzero(ebk), np.flatnonzero(ek)]
        fparts = [kcoef[k_sel], c.C_val[C_sel], c.G_coef[G_sel], c.H_coef[H_sel]]
        return (np.ascontiguousarray(np.concatenate(parts), dtype=np.int64),
                np.r_[0, np.cumsum([p.size for p in parts])].astype(np.int64),
                np.ascontiguousarray(np.concatenate(fparts), dtype=np.float64),
                np.r_[0, np.cumsum([p.size for p in fparts])].astype(np.int64))

    def _want2(self) -> np.ndarray:
        """The bond variables dX/dt reads from the acceleration stage (made once): the
        storage elements' rates, the work powers' efforts and flows, and the kinematic
        states' flows where the velocity stage's do not hold; with their positions in
        that list (``_w2_X``, ``_w2_kin``, ``_w2_work``)."""
        if getattr(self, "_w2", None) is None:
            m = self.model
            kin = np.zeros(0, dtype=np.int64) if self._kin_final else \
                np.asarray(m._kin_rows, dtype=np.int64)
            work = [np.asarray(a, dtype=np.int64) for e, f in m.work_idx for a in (e, f)]
            want = np.unique(np.concatenate([np.asarray(self._rec_X, dtype=np.int64), kin,
                                             *work]))
            self._w2_X = np.searchsorted(want, np.asarray(self._rec_X, dtype=np.int64))
            self._w2_kin = np.searchsorted(want, kin)
            self._w2_work = [(np.searchsorted(want, np.asarray(e, dtype=np.int64)),
                              np.searchsorted(want, np.asarray(f, dtype=np.int64)))
                             for e, f in m.work_idx]
            self._w2 = want                # (last: another thread may be reading)
        return self._w2

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


def _aliases(L, dynamic_entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes of bond variables that junction equations of the form a x_i - a x_j = 0
    make equal. Returns (representative of each variable, the equations kept). A class
    holds at most one imposed variable (its representative); an equation that would join
    two imposed variables is kept."""
    n_var = L.n_var
    counts = np.bincount(L.rows, minlength=L.n_eq)
    dyn = np.zeros(len(L.rows), dtype=bool)
    dyn[dynamic_entries] = True
    order = np.argsort(L.rows, kind="stable")
    first = np.searchsorted(L.rows[order], np.arange(L.n_eq))
    parent = np.arange(n_var)
    imposed = np.zeros(n_var, dtype=bool)
    imposed[L.imp] = True

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    kept = []
    for r in range(L.n_eq):
        if counts[r] == 2:
            e1, e2 = order[first[r]], order[first[r] + 1]
            a, b = L.base[e1], L.base[e2]
            i, j = L.cols[e1], L.cols[e2]
            if not dyn[e1] and not dyn[e2] and a != 0.0 and a == -b and i != j:
                ri, rj = find(i), find(j)
                if ri == rj:
                    kept.append(r)          # dependent (cannot happen in a valid graph)
                    continue
                if imposed[ri] and imposed[rj]:
                    kept.append(r)
                    continue
                if imposed[rj]:
                    ri, rj = rj, ri
                parent[rj] = ri              # an imposed root stays the root
                continue
        kept.append(r)
    rep = np.array([find(v) for v in range(n_var)], dtype=np.int64)
    return rep, np.array(kept, dtype=np.int64)

