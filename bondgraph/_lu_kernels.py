"""The compiled kernels of :mod:`bondgraph.fastlu` (arrays and numbers only).

Imported by :mod:`bondgraph.fastlu` when a model first needs them, so that importing
:mod:`bondgraph` does not import numba. See :mod:`bondgraph.fastlu` for the method.
"""

from __future__ import annotations

import numpy as np
from ._jit import njit


#: :func:`_factor_into`'s codes
ACCEPTED, REFINE, REJECTED = 0, 1, 2


@njit(cache=True)
def _grow(a, size):
    """``a`` with room for at least ``size`` entries (capacity doubled), contents kept."""
    if size <= a.size:
        return a
    b = np.empty(max(size, 2 * a.size), dtype=a.dtype)
    for i in range(a.size):     # (a loop: a slice assignment compiles numba's shape-error
        b[i] = a[i]             # message, a second of a cold start)
    return b


@njit(cache=True)
def _symbolic(n, bp, bi):
    """Structure of L and U for B = L U without pivoting (Gilbert & Peierls' reach).

    Parameters
    ----------
    n : int
    bp, bi : int64 ndarrays (n + 1,), (nnz,)
        B's column pointers and row indices (CSC; any order within a column).

    Returns
    -------
    Lp, Li, Up, Ui : int64 ndarrays (n + 1,), (nnz_L,), (n + 1,), (nnz_U,)
        CSC structure of the strict lower part of L and of the strict upper part of U,
        rows ascending in each column. ``Lp[0] == -1`` when a diagonal entry is
        structurally zero (no factorisation with this pivot order).
    """
    Lp = np.zeros(n + 1, dtype=np.int64)
    Up = np.zeros(n + 1, dtype=np.int64)
    Li = np.empty(max(16, 2 * bi.size), dtype=np.int64)
    Ui = np.empty(max(16, 2 * bi.size), dtype=np.int64)
    mark = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    reach = np.empty(n, dtype=np.int64)
    nL = 0
    nU = 0
    for j in range(n):
        top = 0
        count = 0
        for p in range(bp[j], bp[j + 1]):
            i = bi[p]
            if mark[i] != j:
                mark[i] = j
                stack[top] = i
                top += 1
                reach[count] = i
                count += 1
        while top > 0:
            top -= 1
            k = stack[top]
            if k < j:                     # row k is solved in column j: L(:, k) updates
                for q in range(Lp[k], Lp[k + 1]):
                    r = Li[q]
                    if mark[r] != j:
                        mark[r] = j
                        stack[top] = r
                        top += 1
                        reach[count] = r
                        count += 1
        if mark[j] != j:
            Lp[0] = -1
            return Lp, Li[:0], Up, Ui[:0]
        for a in range(1, count):         # insertion sort: a column holds a few rows
            r = reach[a]
            b = a - 1
            while b >= 0 and reach[b] > r:
                reach[b + 1] = reach[b]
                b -= 1
            reach[b + 1] = r
        Ui = _grow(Ui, nU + count)
        Li = _grow(Li, nL + count)
        for a in range(count):
            r = reach[a]
            if r < j:
                Ui[nU] = r
                nU += 1
            elif r > j:
                Li[nL] = r
                nL += 1
        Lp[j + 1] = nL
        Up[j + 1] = nU
    return Lp, Li[:nL].copy(), Up, Ui[:nU].copy()


@njit(cache=True, error_model="numpy")
def _factor_kernel(sources, tp, t_row, t_src, t_coef, Lp, Li, Up, Ui, tau, ratio):
    """Refill B from the sources and factor it on the fixed structure.

    Parameters
    ----------
    sources : float64 ndarray (n_sources,)
    tp, t_row, t_src, t_coef : ndarrays (n + 1,), (n_terms,) x 3
        B's terms by column: column j holds ``t_coef[t] * sources[t_src[t]]`` added to
        row ``t_row[t]``, for t in ``tp[j]:tp[j + 1]``.
    Lp, Li, Up, Ui : int64 ndarrays
        The structure from :func:`_symbolic`.
    tau : float
        u of the threshold test (``PIVOT_THRESHOLD``).
    ratio : float
        Smallest accepted min |pivot| / max |pivot| (``SINGULAR_RATIO``).

    Returns
    -------
    Lx : float64 ndarray (nnz_L,)
        L's strict lower part (its diagonal is 1).
    Vx : float64 ndarray (nnz_U,)
        U's strict upper part, each column divided by its pivot: U = (I + V) D.
    d : float64 ndarray (n,)
        U's diagonal, the pivots.
    ok : bool
        False when a guard failed (the arrays are then incomplete).
    """
    Lx = np.empty(Li.size)
    Vx = np.empty(Ui.size)
    d = np.empty(Up.size - 1)
    code = _factor_into(sources, tp, t_row, t_src, t_coef, Lp, Li, Up, Ui, tau, ratio, Lx,
                        Vx, d, tau)
    return Lx, Vx, d, code == ACCEPTED


@njit(cache=True, error_model="numpy")
def _factor_into(sources, tp, t_row, t_src, t_coef, Lp, Li, Up, Ui, tau, ratio, Lx, Vx, d,
                 weak):
    """:func:`_factor_kernel` writing Lx, Vx and d into the arrays given (their sizes:
    nnz_L, nnz_U, n); returns a code: ``ACCEPTED`` (every guard passed), ``REFINE``
    (factors to be used only with iterative refinement and its acceptance test,
    :func:`_refined_solve`: every guard passed but the threshold test), ``REJECTED``.
    With ``weak < tau``, a pivot below ``weak`` times the largest candidate of its
    column (zero included) is replaced by that bound with the pivot's sign (static
    pivoting with perturbation, as SuperLU_DIST's GESP: the factors are then those of a
    nearby matrix, and the refinement, whose residual uses the system's own entries,
    converges to the solution of the given one or is not accepted), and the code is
    ``REFINE``; a column of the active submatrix that is all zeros (a singular
    matrix) is rejected. ``ratio`` is the test of accepted factors only. With
    ``weak = tau`` (the general path) the code is never ``REFINE``."""
    n = tp.size - 1
    # (indices read as unsigned: no check for negative indices at each access, a fifth
    # of the time; the arrays hold no negative entries)
    tp, t_row, t_src = tp.view(np.uint64), t_row.view(np.uint64), t_src.view(np.uint64)
    Lp, Li, Up, Ui = Lp.view(np.uint64), Li.view(np.uint64), Up.view(np.uint64), \
        Ui.view(np.uint64)
    x = np.zeros(n)                       # column j of B, being reduced
    dmax = 0.0
    dmin = np.inf
    code = ACCEPTED
    for j in range(n):
        for t in range(tp[j], tp[j + 1]):
            x[t_row[t]] += t_coef[t] * sources[t_src[t]]
        total = 0.0                       # sum of |values|: not finite if one is not
        for p in range(Up[j], Up[j + 1]):
            k = Ui[p]
            ukj = x[k]                    # final: the rows above k are applied
            x[k] = 0.0
            Vx[p] = ukj
            total += abs(ukj)
            for q in range(Lp[k], Lp[k + 1]):
                x[Li[q]] -= Lx[q] * ukj
        piv = x[j]
        x[j] = 0.0
        a = abs(piv)
        cmax = a
        for q in range(Lp[j], Lp[j + 1]):
            v = abs(x[Li[q]])
            total += v
            if v > cmax:
                cmax = v
        total += a
        if not np.isfinite(total):
            return REJECTED
        if not (a > 0.0 and a >= weak * cmax):
            if not (weak < tau and cmax > 0.0):
                return REJECTED
            a = weak * cmax               # (perturbed: to be refined)
            piv = a if piv >= 0.0 else -a
            code = REFINE
        elif a < tau * cmax:
            code = REFINE
        inv = 1.0 / piv
        for q in range(Lp[j], Lp[j + 1]):
            i = Li[q]
            Lx[q] = x[i] * inv
            x[i] = 0.0
        for p in range(Up[j], Up[j + 1]):
            Vx[p] *= inv
        d[j] = piv
        dmax = max(dmax, a)
        dmin = min(dmin, a)
    # (factors to be refined are judged by the refined solves' acceptance test: a
    # perturbed pivot's growth would make this ratio meaningless)
    return REJECTED if code == ACCEPTED and dmin <= ratio * dmax else code


@njit(cache=True, error_model="numpy")
def _solve_kernel(b, prow, gather, Li, Lj, Lx, Ui, Uj, Vx, d):
    """Solve A y = b with P_r A P_c = L (I + V) D.

    Parameters
    ----------
    b : float64 ndarray (n,)
        Right-hand side, in A's row order.
    prow : int64 ndarray (n,)
        Row i of A is row ``prow[i]`` of B.
    gather : int64 ndarray (m,)
        The entries wanted: ``w[gather]`` for the solution w of B w = P_r b.
    Li, Lj, Lx : ndarrays (nnz_L,)
        L's strict lower entries (row, column, value), by column ascending.
    Ui, Uj, Vx : ndarrays (nnz_U,)
        V's entries, by column ascending.
    d : float64 ndarray (n,)

    Returns
    -------
    y : float64 ndarray (m,)
    finite : bool
    """
    n = prow.size
    prow, gather = prow.view(np.uint64), gather.view(np.uint64)     # (see _factor_kernel)
    Li, Lj, Ui, Uj = Li.view(np.uint64), Lj.view(np.uint64), Ui.view(np.uint64), \
        Uj.view(np.uint64)
    z = np.empty(n)
    for i in range(n):
        z[prow[i]] = b[i]
    for q in range(Li.size):              # L z = P_r b: z[j] is final when reached
        z[Li[q]] -= Lx[q] * z[Lj[q]]
    for p in range(Ui.size - 1, -1, -1):  # (I + V) u = z, from the last column
        z[Ui[p]] -= Vx[p] * z[Uj[p]]
    y = np.empty(gather.size)
    finite = True
    for c in range(gather.size):          # w = D^-1 u
        k = gather[c]
        v = z[k] / d[k]
        y[c] = v
        if not np.isfinite(v):
            finite = False
    return y, finite


@njit(cache=True, error_model="numpy")
def _residual(b, y, prow, gather, tp, t_row, vals, r):
    """r = b - A y (into ``r``, A's row order) and the componentwise backward error of y,
    max_i |r_i| / (|A| |y| + |b|)_i (Oettli and Prager; 0/0 read as 0, a non-zero
    residual over a zero denominator as infinite), with A's entries ``vals`` by column
    of B = P_r A P_c (``tp``, rows ``t_row`` in B) and y in logical column order
    (``gather``: B's column of each)."""
    n = prow.size
    wB = np.empty(n)
    for c in range(n):
        wB[gather[c]] = y[c]
    ay = np.zeros(n)                      # B w and |B| |w|, by row of B
    aa = np.zeros(n)
    for j in range(n):
        wj = wB[j]
        for t in range(tp[j], tp[j + 1]):
            v = vals[t] * wj
            ay[t_row[t]] += v
            aa[t_row[t]] += abs(v)
    berr = 0.0
    for i in range(n):
        k = prow[i]
        ri = b[i] - ay[k]
        r[i] = ri
        den = aa[k] + abs(b[i])
        if ri != 0.0:
            e = abs(ri) / den if den > 0.0 else np.inf
            if not e <= berr:             # (NaN too)
                berr = e if np.isfinite(e) else np.inf
    return berr


@njit(cache=True, error_model="numpy")
def _refined_solve(b, prow, gather, Li, Lj, Lx, Ui, Uj, Vx, d, tp, t_row, vals, tol,
                   steps):
    """:func:`_solve_kernel` with iterative refinement (in working precision, on
    factors that :func:`_factor_into` marked ``REFINE``) and its acceptance test: y is
    accepted when its componentwise backward error (:func:`_residual`) is at most
    ``tol``, checked after the first solve and after each of at most ``steps``
    corrections y += A^-1 (b - A y). ``vals``, ``tp``, ``t_row``: A's entries by
    column of B (see :func:`_residual`).

    Returns (y, accepted)."""
    prow_u, gather_u = prow.view(np.uint64), gather.view(np.uint64)
    tp_u, t_row_u = tp.view(np.uint64), t_row.view(np.uint64)
    y, finite = _solve_kernel(b, prow, gather, Li, Lj, Lx, Ui, Uj, Vx, d)
    if not finite:
        return y, False
    r = np.empty(b.size)
    for _ in range(steps):
        berr = _residual(b, y, prow_u, gather_u, tp_u, t_row_u, vals, r)
        if berr <= tol:
            return y, True
        dy, finite = _solve_kernel(r, prow, gather, Li, Lj, Lx, Ui, Uj, Vx, d)
        if not finite:
            return y, False
        for c in range(y.size):
            y[c] += dy[c]
    berr = _residual(b, y, prow_u, gather_u, tp_u, t_row_u, vals, r)
    return y, berr <= tol
