"""The compiled kernel of :mod:`bondgraph.sparse`'s evaluation (arrays and numbers only).

Imported with :mod:`bondgraph._lu_kernels` (through :func:`bondgraph.fastlu.have_numba`)
so that ``import bondgraph`` does not import numba. One call does, for one stage of an
evaluation, what :meth:`bondgraph.sparse.SparseReduction.evaluate` does in numpy
without numba: the right-hand side from the known values, the condensed solve
(:mod:`bondgraph.condensation`) with the kept system's LU factors
(:mod:`bondgraph.fastlu`), and every bond variable from the solution. The loops visit
the terms in the order of numpy's ``bincount``, so both paths sum in the same order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._lu_kernels import _solve_kernel


@njit(cache=True, error_model="numpy")
def _stage(sources, known, extra, ints, ioff, flts, foff, n, n_E, n_K,
           S_ints, S_off, Lx, Vx, d):
    """One stage: w (every bond variable), y (the system's solution, logical order) and
    whether both are finite.

    ``ints`` holds, between ``ioff[k]`` and ``ioff[k + 1]``: 0 krows, 1 kidx, 2 ksrc
    (the known terms), 3 rE, 4 rK, 5 cE, 6 cK, 7 C_row, 8 C_col, 9 G_row, 10 G_col,
    11 G_src, 12 H_row, 13 H_col, 14 H_src, 15 wsrc (per bond variable: its index in y,
    or -1 - its index in ``known``); ``flts`` (by ``foff``): 0 kcoef, 1 C_val, 2 G_coef,
    3 H_coef. ``S_ints`` (by ``S_off``): 0 prow, 1 gather, 2 Li, 3 Lj, 4 Ui, 5 Uj of the
    kept system's LU structure; ``Lx, Vx, d`` its factors' values.
    """
    krows = ints[ioff[0]:ioff[1]]
    kidx = ints[ioff[1]:ioff[2]]
    ksrc = ints[ioff[2]:ioff[3]]
    rE = ints[ioff[3]:ioff[4]]
    rK = ints[ioff[4]:ioff[5]]
    cE = ints[ioff[5]:ioff[6]]
    cK = ints[ioff[6]:ioff[7]]
    C_row = ints[ioff[7]:ioff[8]]
    C_col = ints[ioff[8]:ioff[9]]
    G_row = ints[ioff[9]:ioff[10]]
    G_col = ints[ioff[10]:ioff[11]]
    G_src = ints[ioff[11]:ioff[12]]
    H_row = ints[ioff[12]:ioff[13]]
    H_col = ints[ioff[13]:ioff[14]]
    H_src = ints[ioff[14]:ioff[15]]
    wsrc = ints[ioff[15]:ioff[16]]
    kcoef = flts[foff[0]:foff[1]]
    C_val = flts[foff[1]:foff[2]]
    G_coef = flts[foff[2]:foff[3]]
    H_coef = flts[foff[3]:foff[4]]

    # b = -sum kcoef source known (bincount's order) + extra
    acc = np.zeros(n)
    for t in range(krows.size):
        acc[krows[t]] += kcoef[t] * sources[ksrc[t]] * known[kidx[t]]
    b = np.empty(n)
    for i in range(n):
        b[i] = -acc[i] + extra[i]

    bE = np.empty(n_E)
    for k in range(n_E):
        bE[k] = b[rE[k]]
    y = np.empty(n)
    finite = True
    if n_K:
        g = np.zeros(n_K)
        for t in range(G_row.size):
            g[G_row[t]] += G_coef[t] * sources[G_src[t]] * bE[G_col[t]]
        rhs = np.empty(n_K)
        for i in range(n_K):
            rhs[i] = b[rK[i]] - g[i]
        yK, finite = _solve_kernel(rhs, S_ints[S_off[0]:S_off[1]],
                                   S_ints[S_off[1]:S_off[2]], S_ints[S_off[2]:S_off[3]],
                                   S_ints[S_off[3]:S_off[4]], Lx,
                                   S_ints[S_off[4]:S_off[5]], S_ints[S_off[5]:S_off[6]],
                                   Vx, d)
        for i in range(n_K):
            y[cK[i]] = yK[i]
    else:
        yK = np.zeros(0)
    ce = np.zeros(n_E)
    for t in range(C_row.size):
        ce[C_row[t]] += C_val[t] * bE[C_col[t]]
    he = np.zeros(n_E)
    for t in range(H_row.size):
        he[H_row[t]] += H_coef[t] * sources[H_src[t]] * yK[H_col[t]]
    for k in range(n_E):
        v = ce[k] - he[k]
        y[cE[k]] = v
        if not np.isfinite(v):
            finite = False

    w = np.empty(wsrc.size)
    for j in range(wsrc.size):
        s = wsrc[j]
        w[j] = y[s] if s >= 0 else known[-1 - s]
    return w, y, finite
