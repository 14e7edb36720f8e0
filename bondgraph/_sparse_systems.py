"""The sparse systems of :mod:`bondgraph.sparse`: fixed patterns refilled per
evaluation, their static condensation, and their LU factors.

- :class:`_Pattern`: a sparse matrix of fixed pattern whose entries are
  ``coef * source[k]``.
- :class:`_Condensed`: a system solved through its static condensation
  (:mod:`bondgraph.condensation`).
- :class:`Workspace`: what one run's evaluations change (the compiled LU's pivot-order
  states).
- :func:`_factor`, :func:`_superlu_factor`, :func:`_splu`: the LU of a pattern at given
  source values (the compiled LU where its pivots pass, SuperLU otherwise).
- :class:`_Terms`: the terms of a system under construction; :func:`_aliases`: the
  classes of bond variables that junction equations say are equal.
"""

from __future__ import annotations

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
from .condensation import Condensation

__all__ = ["Workspace", "StepValues"]


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
            yK = _back(f.lu, self.S, rhs)
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

    def pivot_fallbacks(self) -> int:
        """Evaluations of the one-call compiled path in this workspace whose pivot
        order failed its checks (:attr:`bondgraph.fastlu.LUState.failures`, summed)."""
        return sum(state.failures for state in self._lu.values())


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


def _back(lu, pattern: _Pattern, b: np.ndarray) -> np.ndarray | None:
    """The solution in logical column order (None if not finite)."""
    if isinstance(lu, _CondensedFactors):
        return pattern.solve(lu, b)
    if isinstance(lu, fastlu.Factors):
        return lu.solve_logical(b)
    y = lu.solve(b)[pattern.position]
    return y if np.isfinite(y).all() else None


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
