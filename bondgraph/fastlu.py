"""Sparse LU with a fixed symbolic structure, compiled with numba (optional).

:mod:`bondgraph.sparse` solves, once per derivative evaluation, one sparse system whose
pattern never changes and whose values change every time. Its systems are tiny in flops
(nearly banded, a few nonzeros per column), so SuperLU's cost is mostly the overhead of
its general machinery, repeated at every call: the symbolic analysis, the pivot search,
the supernode bookkeeping and the Python wrapper. This module does the analysis once per
pivot order and leaves plain compiled loops for every evaluation.

Structure (:class:`Structure`, built from a row and a column permutation)
    With SuperLU's ``perm_r`` and ``perm_c`` of a factorisation of the pattern's matrix,
    B = P_r A P_c has a pivot sequence that is numerically sound at those values. The
    symbolic factorisation of B without pivoting (Gilbert & Peierls: the nonzeros of
    column j of L and U are the nodes reachable from the nonzeros of B(:, j) in the graph
    of L(:, :j)) holds for every value vector: there is no numerical dropping. The
    pattern's terms (``coef * source[src]``, summed into an entry) are sorted by column
    of B with their row in B, so that the factorisation refills B itself.

Numeric factorisation (:meth:`Structure.factor`) and solves (:meth:`Factors.solve`)
    Left-looking, column by column with a dense work vector: scatter the column's terms,
    apply the updates of the earlier columns of L (in increasing row order, a valid
    topological order), check and take the pivot, scale the column of L. No search: the
    pivot of column j is B's diagonal entry. The triangular solves are two flat loops
    over the entries of L and of U (U is stored scaled by its diagonal, column by
    column, so that neither loop needs a division or an inner loop).

Where the pivot order comes from (:class:`FixedLU`)
    Not from generic random values: the entries of these systems are related (a
    modulus and its transpose, the entries of a rotation), and a pivot order chosen for
    independent random entries had pivots that vanish identically at every actual state
    of the chains tested. Instead the first factorisation of a pattern is SuperLU's
    (partial pivoting at actual values) and its permutations give the structure; when
    the structure's pivots later fail their checks (below), the evaluation uses SuperLU
    and its permutations give a new structure (:meth:`FixedLU.adopt`), at most once
    every ``SETUP_INTERVAL`` factorisations, which bounds the set-up cost where the
    pivots keep failing. Before SuperLU, the ``RECENT`` orders the pattern had before
    are tried (:class:`FixedLU`): most failures are met by one of them. A swinging chain does need new orders now and then (a fixed
    pivot on a rotation's entry must fail near the angle where that entry vanishes):
    over 5 s of chain-10 (chain-20), 0.8 % (1.6 %) of the evaluations fell back. A
    structure costs less than a SuperLU factorisation (0.16 ms for chain-10, 1.2 ms for
    chain-100).

Stability guard
    Every column is checked; the factorisation fails (None: the caller uses SuperLU
    for that evaluation, never a wrong answer) when

    * a value is not finite (an entry of U, of L before scaling, or a pivot), or a
      pivot is zero;
    * ``|pivot| < PIVOT_THRESHOLD * max |entry|`` of the pivot's column of the active
      submatrix (the candidates a partial-pivoting search compares): threshold partial
      pivoting with u = ``PIVOT_THRESHOLD = 0.001``, UMFPACK's default where it
      accepts a preferred pivot without searching (as this LU does: its pivots are
      fixed; 0.1 where it searches). Every multiplier in L is then at most 1/u = 1000
      in magnitude. Measured with ``benchmarks/pivots.py`` (5 s runs of chain-5,
      chain-10, chain-20 and 1 s of chain-100, 400 factorisations sampled from each,
      against SuperLU's partial pivoting): scaled residuals ``|A y - b| / (|A| |y|)``
      at most 3.2e-16, the backward error of a stable factorisation, and solutions
      within 1.2e-12 of SuperLU's (relative to their largest entry; the systems'
      condition numbers reach 1e7), against 4.8e-17 and 2.7e-13 with u = 0.01, which
      failed 2.5 to 5 times as often (chain-20: 909 evaluations against 305,
      chain-100: 97 against 40; u = 0.1 fails twice as often again);
    * ``min |pivot| <= SINGULAR_RATIO * max |pivot|`` (1e-14, the test by which
      :func:`bondgraph.sparse._factor` declares SuperLU's factors singular): SuperLU,
      with its own pivots, then decides whether the system is singular.

Refined solves (the one-call compiled evaluation, :mod:`bondgraph._sparse_kernels`)
    A pivot order is chosen where SuperLU took it, and a mechanism moves away from
    there: on Panda's runs 5 to 22 % of the steps met a pivot below u (a rotation's or
    an angular momentum's entry near zero) and left the compiled loop for SuperLU and a
    new order. The one-call evaluation therefore grades its factors: every pivot at
    least ``REFINE_THRESHOLD = 0.01`` of its column's largest candidate (multipliers
    at most 100): used as they are. Otherwise they are kept, and every solve with them
    is refined (y += A^-1 (b - A y), at most ``REFINE_STEPS = 6`` times, the residual
    computed with the system's own entries) and accepted only when its componentwise
    backward error ``max_i |b - A y|_i / (|A| |y| + |b|)_i`` is at most ``REFINE_TOL =
    1e-14`` (about 45 rounding units; Oettli and Prager's measure, which a stable solve
    meets: the accepted y is the exact solution of a system within 1e-14 of the given
    one, entry by entry). A pivot below ``WEAK_THRESHOLD = 1e-8`` (about the square root
    of the rounding unit) of its column, zero included, is replaced by that bound with
    its sign: static pivoting with perturbation, as SuperLU_DIST's GESP, the refinement
    then correcting for the nearby matrix factored. A solve that is not accepted is not
    used, and the evaluation goes the way of a failed order (counted in
    ``LUState.failures``); so does an active column of zeros (a singular matrix) or a
    value that is not finite. Measured (``benchmarks/eval_profile.py``, the six
    work-precision models, RK45 and DOP853 at 1e-4 .. 1e-8): no failed order and no
    step left to scipy in any run (before: Panda 5 to 22 % of its steps, chain-10 2 to
    5 %), the same steps and evaluations; the refinement converges in one correction
    where it is needed (seen: componentwise backward error 1e-10 -> 2e-16 on a
    perturbed Panda system of condition 4e7), and along runs the derivatives are within
    3e-14 of SuperLU's where refined (``tests/unit/test_refined_lu.py``). A refined
    evaluation costs about 2.5 us more (chain-10: 13 -> 15.7 us). The general path
    (:meth:`Structure.factor`) keeps ``PIVOT_THRESHOLD`` and no refinement.

numba is optional. Without it, or with the environment variable ``BONDGRAPH_NO_NUMBA``
set to anything but ``""`` or ``"0"`` when a model's sparse evaluation is built
(:meth:`FixedLU.for_pattern` reads it, once per pattern), that model uses SuperLU
exactly as before; the tests build one model each way to compare the two paths. The
kernels are compiled on first use and cached on disk (``cache=True``, in the package's
``__pycache__``, or numba's user cache directory where that is not writable);
:meth:`FixedLU.for_pattern` runs them once (:func:`warm_up`), so that compiling, or
loading from the cache, happens when the sparse evaluation is built, not while
integrating. That first use costs about 7 s without the cache and 0.3 s with it (most of
which is numba's own start-up, paid by any first compiled call in a process).
"""

from __future__ import annotations

import os
import threading
from types import ModuleType

import numpy as np

__all__ = ["FixedLU", "LUState", "Structure", "Factors", "enabled", "warm_up", "have_numba",
           "warn_if_slow",
           "PIVOT_THRESHOLD", "SINGULAR_RATIO", "SETUP_INTERVAL", "RECENT",
           "REFINE_THRESHOLD", "WEAK_THRESHOLD", "REFINE_TOL"]

#: threshold partial pivoting's u: a pivot below u times the largest candidate of its
#: column fails (see the module docstring)
PIVOT_THRESHOLD = 0.001
#: smallest |pivot| / largest |pivot| accepted (as in bondgraph.sparse._factor)
SINGULAR_RATIO = 1e-14
#: the one-call evaluation's pivot test: factors whose every pivot is at least this
#: times the largest candidate of its column are used as they are; below it, their
#: solves are refined and checked
REFINE_THRESHOLD = 0.01
#: the one-call evaluation's perturbation: a pivot below this times the largest
#: candidate of its column (about the square root of the rounding unit) is replaced by
#: that bound, and the solves are refined and checked (see the module docstring)
WEAK_THRESHOLD = 1e-8
#: a refined solve's acceptance test: its componentwise backward error at most this
REFINE_TOL = 1e-14
#: a new structure (pivot order) at most once per this many factorisations of a pattern
SETUP_INTERVAL = 10
#: earlier structures of a pattern kept to try where the current one's pivots fail
RECENT = 6


def have_numba() -> bool:
    """Whether numba imports here (tried once; the kernels' module,
    ``bondgraph._lu_kernels``, is imported then, so that ``import bondgraph`` does not
    pay numba's import)."""
    return _kernels() is not None


def _kernels() -> ModuleType | None:
    if _KERNELS[0] is None:
        try:
            from . import _lu_kernels, _sparse_kernels
            _KERNELS[0] = _lu_kernels
            _KERNELS[1] = _sparse_kernels
        except ImportError:
            _KERNELS[0] = False
    return _KERNELS[0] or None


def _sparse_kernels() -> ModuleType | None:
    """The compiled stage of :mod:`bondgraph.sparse` (None without numba)."""
    return _KERNELS[1] if _kernels() is not None else None


_KERNELS: list = [None, None]


def enabled() -> bool:
    """Whether the compiled LU may be used: numba importable and the environment
    variable ``BONDGRAPH_NO_NUMBA`` unset, empty or ``"0"``."""
    return os.environ.get("BONDGRAPH_NO_NUMBA", "") in ("", "0") and have_numba()


_WARNED = [False]


def warn_if_slow() -> None:
    """Once per process, where numba does not import (and the environment variable did
    not ask for its absence): a warning that evaluations take the slow path and how to
    get the fast one."""
    if _WARNED[0] or have_numba() or os.environ.get("BONDGRAPH_NO_NUMBA", "") not in ("", "0"):
        return
    _WARNED[0] = True
    from .errors import warn
    warn("numba is not importable here, so models are evaluated with numpy and "
              "SuperLU (the same numbers, 10 to 15 times slower); install it with "
              "'pip install numba' for the compiled path (set BONDGRAPH_NO_NUMBA=1 to "
              "choose the slow path without this warning)", RuntimeWarning)


# ---------------------------------------------------------------------------------------

_WARM = [False]


def warm_up() -> None:
    """Compile the kernels (or load them from numba's on-disk cache) on a 2 x 2 system,
    once per process, so that the first evaluation of a model does not pay for it."""
    if _WARM[0] or not have_numba():
        return
    k = _kernels()
    bp = np.array([0, 2, 4], dtype=np.int64)          # [[2, 1], [1, 2]]
    bi = np.array([0, 1, 0, 1], dtype=np.int64)
    Lp, Li, Up, Ui = k._symbolic(2, bp, bi)
    Lx, Vx, d, _ = k._factor_kernel(np.array([2.0, 1.0]), bp, bi,
                                    np.array([0, 1, 1, 0], dtype=np.int64), np.ones(4),
                                    Lp, Li, Up, Ui, PIVOT_THRESHOLD, SINGULAR_RATIO)
    order = np.arange(2, dtype=np.int64)
    k._solve_kernel(np.ones(2), order, order, Li, np.zeros(1, dtype=np.int64), Lx, Ui,
                    np.ones(1, dtype=np.int64), Vx, d)
    # the sparse evaluation's stage on a 1 x 1 system that condenses entirely: y = 1 / 2
    # (rE, cE, C_row, C_col, wsrc, brows, ebk, ek)
    ints = np.array([0, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    ioff = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 8],
                    dtype=np.int64)
    no = np.zeros(0)
    _KERNELS[1]._stage(no, no, np.ones(1), 0, ints, ioff, np.array([0.5]),
                       np.array([0, 0, 1, 1, 1], dtype=np.int64), 1, 1, 0,
                       np.zeros(0, dtype=np.int64), np.zeros(7, dtype=np.int64), no, no, no,
                       no, 0.0)
    _WARM[0] = True


class Factors:
    """The LU factors of one evaluation, P_r A P_c = L (I + V) D on one
    :class:`Structure`. :meth:`solve` means what ``SuperLU.solve`` means for a single
    right-hand side.

    Attributes
    ----------
    structure : Structure
    Lx, Vx, d : float64 ndarrays (nnz_L,), (nnz_U,), (n,)
        See ``bondgraph._lu_kernels._factor_kernel``.
    """

    __slots__ = ("structure", "Lx", "Vx", "d")

    def __init__(self, structure: "Structure", Lx, Vx, d):
        self.structure, self.Lx, self.Vx, self.d = structure, Lx, Vx, d

    def _solve(self, b, gather):
        s = self.structure
        return _kernels()._solve_kernel(np.asarray(b, dtype=np.float64), s.prow, gather,
                             s.Li, s.Lj, self.Lx, s.Ui, s.Uj, self.Vx, self.d)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """y with A y = b, in A's (stored) column order.

        ``b``: float ndarray (n,); returns a new float64 ndarray (n,)."""
        return self._solve(b, self.structure.pcol)[0]

    def solve_logical(self, b: np.ndarray) -> np.ndarray | None:
        """``solve(b)[position]``, the solution in the pattern's logical column order
        (see :class:`bondgraph.sparse._Pattern`), or None if it is not finite: what
        ``SparseReduction._back`` returns, in one compiled call."""
        y, finite = self._solve(b, self.structure.gather)
        return y if finite else None


class Structure:
    """A pattern's LU structure for one pivot order (not changed once built).

    Attributes
    ----------
    n : int
        The matrix's order.
    prow : int64 ndarray (n,)
        Row i of the stored matrix A is row ``prow[i]`` of B = P_r A P_c (SuperLU's
        ``perm_r``).
    pcol : int64 ndarray (n,)
        A's column j is B's column ``pcol[j]`` (SuperLU's ``perm_c``), so that the
        solution of A y = b is ``y = w[pcol]`` where B w = P_r b.
    gather : int64 ndarray (n,)
        ``pcol[position]``: B's column of each logical column of the pattern.
    tp, t_row, t_src, t_coef : ndarrays (n + 1,), (n_terms,) x 3
        The pattern's terms by column of B, with their row in B.
    Lp, Li, Lj : int64 ndarrays (n + 1,), (nnz_L,), (nnz_L,)
        L's strict lower part: column pointers, rows (ascending), columns.
    Up, Ui, Uj : int64 ndarrays (n + 1,), (nnz_U,), (nnz_U,)
        U's strict upper part, likewise.
    """

    def __init__(self, pattern, perm_r, perm_c):
        n = pattern.shape[0]
        self.n = n
        self._packed = None
        self.prow = prow = np.ascontiguousarray(perm_r, dtype=np.int64)
        self.pcol = pcol = np.ascontiguousarray(perm_c, dtype=np.int64)
        self.gather = np.ascontiguousarray(pcol[np.asarray(pattern.position, np.int64)])
        indices = np.asarray(pattern.indices, dtype=np.int64)
        indptr = np.asarray(pattern.indptr, dtype=np.int64)
        # entry k of A, at (i, j), is entry (prow[i], pcol[j]) of B
        b_row = prow[indices]
        b_col = pcol[np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))]
        bp = np.zeros(n + 1, dtype=np.int64)
        bp[1:] = np.cumsum(np.bincount(b_col, minlength=n))
        order = np.argsort(b_col, kind="stable")
        self.Lp, self.Li, self.Up, self.Ui = _kernels()._symbolic(
            n, bp, np.ascontiguousarray(b_row[order]))
        if not self.valid:
            return
        self.Lj = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.Lp))
        self.Uj = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.Up))
        # the terms by column of B (stable: the terms of an entry keep their order, so
        # they are summed as the pattern's bincount sums them)
        entry = np.asarray(pattern.group, dtype=np.int64)
        t_col = b_col[entry]
        t_order = np.argsort(t_col, kind="stable")
        self.tp = np.zeros(n + 1, dtype=np.int64)
        self.tp[1:] = np.cumsum(np.bincount(t_col, minlength=n))
        self.t_row = np.ascontiguousarray(b_row[entry][t_order])
        self.t_src = np.ascontiguousarray(np.asarray(pattern.src, dtype=np.int64)[t_order])
        self.t_coef = np.ascontiguousarray(
            np.asarray(pattern.coef, dtype=np.float64)[t_order])

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(prow, gather, Li, Lj, Ui, Uj, tp, t_row, t_src, Lp, Up) as one int64 array
        and its 12 offsets (made once): the form :mod:`bondgraph._sparse_kernels` takes
        them in."""
        if self._packed is None:
            parts = [self.prow, self.gather, self.Li, self.Lj, self.Ui, self.Uj, self.tp,
                     self.t_row, self.t_src, self.Lp, self.Up]
            self._packed = (np.ascontiguousarray(np.concatenate(parts), dtype=np.int64),
                            np.r_[0, np.cumsum([p.size for p in parts])].astype(np.int64))
        return self._packed

    @property
    def valid(self) -> bool:
        """False when a pivot of this order is structurally zero."""
        return bool(self.Lp[0] >= 0)

    @property
    def nnz(self) -> int:
        """Stored entries of L and U (the diagonal counted once)."""
        return int(self.Li.size + self.Ui.size + self.n)

    def factor(self, sources: np.ndarray) -> Factors | None:
        """The factors at these source values (float ndarray ``(n_sources,)``), or None
        when a guard fails (see the module docstring)."""
        Lx, Vx, d, ok = _kernels()._factor_kernel(
            np.asarray(sources, dtype=np.float64), self.tp, self.t_row, self.t_src,
            self.t_coef, self.Lp, self.Li, self.Up, self.Ui, PIVOT_THRESHOLD,
            SINGULAR_RATIO)
        return Factors(self, Lx, Vx, d) if ok else None


class LUState:
    """The pivot-order state of one :class:`FixedLU` for one run: which structure is
    current, the ones before it, and the count that spaces out new set-ups.

    It is what changes from one factorisation to the next, kept apart from the
    :class:`FixedLU` (shared, read-only once built) so that runs never share it: every
    simulation starts from a new state, and so gives the same numbers to the last bit
    whatever else runs beside it (another thread, an earlier run of the same model).

    Attributes
    ----------
    structure : Structure or None
        The current pivot order (None before the first :meth:`FixedLU.adopt`).
    recent : list of Structure
        The structures before it, the latest last (at most ``RECENT``).
    setups : int
        Structures adopted so far in this state.
    since_setup : int
        Factorisations since the last set-up.
    failures : int
        Evaluations of the one-call compiled path (:mod:`bondgraph._sparse_compiled`)
        whose current pivot order failed its checks, so that the evaluation was
        finished in Python (a recent order or SuperLU): the pivot-order fallbacks a
        run's diagnostics report (``pivot_fallbacks``).
    """

    __slots__ = ("structure", "recent", "setups", "since_setup", "failures")

    def __init__(self) -> None:
        self.structure: Structure | None = None
        self.recent: list[Structure] = []
        self.setups = 0
        self.since_setup = SETUP_INTERVAL
        self.failures = 0


class FixedLU:
    """The compiled LU of one :class:`bondgraph.sparse._Pattern`: the structures of
    its pivot orders (shared, built once each) and the factorisation on one of them.

    Use :meth:`factor` first, with an :class:`LUState` (:meth:`new_state`); where it
    gives None, factor with SuperLU and, if SuperLU succeeds, pass its factorisation to
    :meth:`adopt`, which takes its pivot order (sound at those values) for the state's
    following factorisations. A new state has no structure: its first factorisation is
    SuperLU's.

    The ``RECENT`` structures before the current one are kept in the state: where the
    current one's pivots fail, :meth:`factor` tries them (the latest first) before giving
    up, and the first that passes becomes the current one. A swinging chain's
    configurations come back near earlier ones, whose pivot orders serve again: over 1 s
    of chain-100, 28 of the 30 failures were met by one of the six orders before (each
    try a compiled factorisation, about 0.1 ms there, against about 1.7 ms for SuperLU
    and a new structure).

    Thread safety: the FixedLU holds no per-factorisation state. Its cache of structures
    (by pivot order; a structure is a pure function of the pattern and the order, so
    the cache changes costs, never values) is guarded by a lock; an :class:`LUState`
    must not be shared between threads.

    Attributes
    ----------
    pattern : bondgraph.sparse._Pattern
    """

    #: structures kept by pivot order (the oldest dropped beyond this)
    CACHE = 64

    def __init__(self, pattern):
        self.pattern = pattern
        self._structures: dict[bytes, Structure] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_pattern(cls, pattern) -> "FixedLU | None":
        """A FixedLU for a square pattern that is not structurally singular, where the
        compiled LU is :func:`enabled` (else None: SuperLU only). Compiles the kernels,
        or loads them from the cache, on its first call in a process."""
        n_rows, n_cols = pattern.shape
        if not enabled() or n_rows == 0 or n_rows != n_cols or \
                pattern.structurally_singular:
            return None
        warm_up()
        return cls(pattern)

    @staticmethod
    def new_state() -> LUState:
        """A state with no structure yet (one per run, or per thread)."""
        return LUState()

    def __getstate__(self) -> dict:
        """Pickled without its lock and its cache (built again on use)."""
        return {"pattern": self.pattern}

    def __setstate__(self, state):
        """Unpickled (a model shipped to another process): compile the kernels there,
        or load them, now rather than at the first factorisation."""
        self.pattern = state["pattern"]
        self._structures = {}
        self._lock = threading.Lock()
        warm_up()

    def factor(self, state: LUState, sources: np.ndarray,
               current_failed: bool = False) -> Factors | None:
        """:meth:`Structure.factor` with the state's current structure, else with its
        recent ones (the first that passes becomes current); None where none passes,
        without a structure, or in a process without numba (where an unpickled FixedLU
        must not run the kernels as plain Python). ``current_failed``: the current
        structure has failed at these values already (the recent ones only; not
        counted as a factorisation)."""
        if not current_failed:
            state.since_setup += 1
        if state.structure is None or not have_numba():
            return None
        if not current_failed:
            f = state.structure.factor(sources)
            if f is not None:
                return f
        recent = state.recent
        for i in range(len(recent) - 1, -1, -1):
            f = recent[i].factor(sources)
            if f is not None:        # (the one that failed becomes the latest of recent)
                recent.append(state.structure)
                state.structure = recent.pop(i)
                return f
        return None

    def may_adopt(self, state: LUState) -> bool:
        """Whether :meth:`adopt` would take a new order in this state now."""
        return state.since_setup >= SETUP_INTERVAL and have_numba()

    def adopt(self, state: LUState, lu) -> None:
        """Take the pivot order of ``lu``, a SuperLU factorisation of the pattern's
        matrix (its ``perm_r`` and ``perm_c``), for the state's following
        factorisations.

        Call it where :meth:`factor` gave None and SuperLU succeeded. At most one
        set-up per ``SETUP_INTERVAL`` factorisations: where the pivots keep failing,
        the evaluations use SuperLU without paying for a new structure each time. A
        structure with a structurally zero pivot is not taken."""
        if not self.may_adopt(state):
            return
        state.since_setup = 0
        state.setups += 1
        structure = self._structure(lu.perm_r, lu.perm_c)
        if structure.valid:
            if state.structure is not None:
                state.recent = (state.recent + [state.structure])[-RECENT:]
            state.structure = structure

    def _structure(self, perm_r, perm_c) -> Structure:
        """The structure of this pivot order (built once, then from the cache)."""
        pr = np.ascontiguousarray(perm_r, dtype=np.int64)
        pc = np.ascontiguousarray(perm_c, dtype=np.int64)
        key = pr.tobytes() + pc.tobytes()
        with self._lock:
            st = self._structures.get(key)
        if st is None:
            st = Structure(self.pattern, pr, pc)
            with self._lock:
                st = self._structures.setdefault(key, st)
                while len(self._structures) > self.CACHE:
                    del self._structures[next(iter(self._structures))]
        return st
