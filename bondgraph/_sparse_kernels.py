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
from ._jit import njit

from ._lu_kernels import REFINE, REJECTED, _factor_into, _refined_solve, _solve_kernel

#: corrections of iterative refinement at most, per solve with factors to be refined
REFINE_STEPS = 6


@njit(cache=True, error_model="numpy")
def _stage(sources, known, extra, e0, ints, ioff, flts, foff, n, n_E, n_K,
           S_ints, S_off, Lx, Vx, d, vals, tol):
    """One stage: w (every bond variable), y (the system's solution, logical order) and
    a code: 0 both finite, 3 not finite, 2 the kept system's refined solve was not
    accepted. ``extra[i - e0]`` is added to row i >= e0 of the right-hand side (e0 = n:
    nothing). ``vals``: empty, or the kept system's entries by term (factors to be
    refined): its solves are then refined and accepted when their componentwise
    backward error is at most ``tol`` (:func:`bondgraph._lu_kernels._refined_solve`).

    ``ints`` holds, between ``ioff[k]`` and ``ioff[k + 1]``: 0 krows, 1 kidx, 2 ksrc
    (the known terms), 3 rE, 4 rK, 5 cE, 6 cK, 7 C_row, 8 C_col, 9 G_row, 10 G_col,
    11 G_src, 12 H_row, 13 H_col, 14 H_src, 15 wsrc (per bond variable: its index in y,
    or -1 - its index in ``known``), 16 brows (the rows of b the stage reads), 17 ebk
    (the entries of b_E it reads), 18 ek (the rows of y_E it gives; y holds garbage
    elsewhere); ``flts`` (by ``foff``): 0 kcoef, 1 C_val, 2 G_coef, 3 H_coef. A stage
    that wants a few variables (the velocity stage, dX/dt alone) has its terms and
    these lists cut down to what they need. ``S_ints`` (by ``S_off``): 0 prow, 1 gather, 2 Li, 3 Lj, 4 Ui, 5 Uj of the
    kept system's LU structure; ``Lx, Vx, d`` its factors' values.
    """
    # (indices read as unsigned, as in _lu_kernels._factor_kernel; wsrc is signed)
    krows = ints[ioff[0]:ioff[1]].view(np.uint64)
    kidx = ints[ioff[1]:ioff[2]].view(np.uint64)
    ksrc = ints[ioff[2]:ioff[3]].view(np.uint64)
    rE = ints[ioff[3]:ioff[4]].view(np.uint64)
    rK = ints[ioff[4]:ioff[5]].view(np.uint64)
    cE = ints[ioff[5]:ioff[6]].view(np.uint64)
    cK = ints[ioff[6]:ioff[7]].view(np.uint64)
    C_row = ints[ioff[7]:ioff[8]].view(np.uint64)
    C_col = ints[ioff[8]:ioff[9]].view(np.uint64)
    G_row = ints[ioff[9]:ioff[10]].view(np.uint64)
    G_col = ints[ioff[10]:ioff[11]].view(np.uint64)
    G_src = ints[ioff[11]:ioff[12]].view(np.uint64)
    H_row = ints[ioff[12]:ioff[13]].view(np.uint64)
    H_col = ints[ioff[13]:ioff[14]].view(np.uint64)
    H_src = ints[ioff[14]:ioff[15]].view(np.uint64)
    wsrc = ints[ioff[15]:ioff[16]]
    brows = ints[ioff[16]:ioff[17]].view(np.uint64)
    ebk = ints[ioff[17]:ioff[18]].view(np.uint64)
    ek = ints[ioff[18]:ioff[19]].view(np.uint64)
    kcoef = flts[foff[0]:foff[1]]
    C_val = flts[foff[1]:foff[2]]
    G_coef = flts[foff[2]:foff[3]]
    H_coef = flts[foff[3]:foff[4]]

    # b = -sum kcoef source known (bincount's order) + extra, on the rows read (the
    # known terms are on those rows only)
    acc = np.empty(n)
    for i in brows:
        acc[i] = 0.0
    for t in range(krows.size):
        acc[krows[t]] += kcoef[t] * sources[ksrc[t]] * known[kidx[t]]
    b = np.empty(n)
    for i in brows:
        r = np.int64(i)
        b[i] = -acc[i] + (extra[r - e0] if r >= e0 else 0.0)

    bE = np.empty(n_E)
    for k in ebk:
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
        if vals.size:
            yK, accepted = _refined_solve(
                rhs, S_ints[S_off[0]:S_off[1]], S_ints[S_off[1]:S_off[2]],
                S_ints[S_off[2]:S_off[3]], S_ints[S_off[3]:S_off[4]], Lx,
                S_ints[S_off[4]:S_off[5]], S_ints[S_off[5]:S_off[6]], Vx, d,
                S_ints[S_off[6]:S_off[7]], S_ints[S_off[7]:S_off[8]], vals, tol,
                REFINE_STEPS)
            if not accepted:
                return np.zeros(0), y, 2
        else:
            yK, finite = _solve_kernel(rhs, S_ints[S_off[0]:S_off[1]],
                                       S_ints[S_off[1]:S_off[2]],
                                       S_ints[S_off[2]:S_off[3]],
                                       S_ints[S_off[3]:S_off[4]], Lx,
                                       S_ints[S_off[4]:S_off[5]],
                                       S_ints[S_off[5]:S_off[6]], Vx, d)
        for i in range(n_K):
            y[cK[i]] = yK[i]
    else:
        yK = np.zeros(0)
    ce = np.empty(n_E)                    # (the C and H terms' rows are among ek)
    he = np.empty(n_E)
    for k in ek:
        ce[k] = 0.0
        he[k] = 0.0
    for t in range(C_row.size):
        ce[C_row[t]] += C_val[t] * bE[C_col[t]]
    for t in range(H_row.size):
        he[H_row[t]] += H_coef[t] * sources[H_src[t]] * yK[H_col[t]]
    for k in ek:
        v = ce[k] - he[k]
        y[cE[k]] = v
        if not np.isfinite(v):
            finite = False

    w = np.empty(wsrc.size)
    for j in range(wsrc.size):
        s = wsrc[j]
        w[j] = y[s] if s >= 0 else known[-1 - s]
    return w, y, 0 if finite else 3


# The fixed arrays of the one-call evaluation, packed so that a call passes few
# arguments (numba's dispatch costs about 0.1 us per argument, and the boxing of a
# returned array about 0.4 us): ``I`` holds the int64 parts and ``F`` the float64 parts
# below, part k of each between ``O[k]`` and ``O[k + 1]`` of its own numbering.
(I_P, I_POFF, I_FOFF, I_INTS1, I_IOFF1, I_FOFF1, I_Q, I_QOFF, I_INTS2, I_IOFF2, I_FOFF2,
 I_SIZES, I_INTS3, I_IOFF3, I_FOFF3) = range(15)
N_INT_PARTS = 15
F_P, F_FLTS1, F_FLTS2, F_SCAL, F_FLTS3 = range(5)
N_FLT_PARTS = 5


@njit(cache=True, inline="always")
def _part(A, O, k):
    """Part ``k`` of a packed array. (Inlined: its part numbers are constants, for which
    numba would compile one specialisation each, 20 in all, 1.5 s of a cold start.)"""
    return A[O[k]:O[k + 1]]


@njit(cache=True, error_model="numpy")
def _first(x, moduli, U1, sources, I, F, IO, FO, S_ints, S_off, t_coef):
    """The velocity stage of an evaluation in one call: the sources' varying entries
    (the junction coefficients with the moduli, the EJS blocks from the momenta,
    written into ``sources``, whose other entries hold their constant values), the known
    values (F X, U_1), the kept system's LU factors and the velocity stage's bond
    variables.

    ``I`` (parts by ``IO``): ``I_P`` the plan P_int (by ``I_POFF``): 0 the moduli's
    direct and 1 transposed positions in the sources, 2 the momenta of the EJS blocks'
    entries, 3 F's indptr, 4 its indices, 5, 6 the pairs of the extended sources,
    7 [offset of R_E, Z's and U_1's offsets and sizes in the known values, n_imp];
    ``F`` (parts by ``FO``): ``F_P`` P_flt (by ``I_FOFF``): 0 the EJS entries' signs,
    1 F's data;
    ``F_SCAL`` [u, ratio, weak, tol, tau] of the LU's checks (u: the threshold of the
    exported FMU's C, which does not refine; here factors with a pivot below tau of
    its column are refined, a pivot below weak perturbed, see
    :func:`bondgraph._lu_kernels._factor_into`; ``tol``: the refined solves'
    acceptance test). ``I_INTS1``, ``I_IOFF1``, ``F_FLTS1``,
    ``I_FOFF1``: the velocity stage's plan as in :func:`_stage`; ``I_SIZES`` [n, n_E,
    n_K] of the acceleration stage's system, then [n, n_E, n_K] of the velocity stage's
    (its own system without U_2, where that condenses entirely: n_K = 0 and no solve;
    else the same). ``S_ints`` (by ``S_off``): the LU structure (0 prow, 1 gather, 2 Li, 3 Lj,
    4 Ui, 5 Uj, 6 tp, 7 t_row, 8 t_src, 9 Lp, 10 Up) with ``t_coef``.

    Returns (work, w1, status): ``work`` = [known, Lx, Vx, d, refine (0/1), the kept
    system's entries by term where refine] for :func:`_second`; status 0 done, 1 a
    varying source or a known value is not finite, 2 the LU's pivots failed their
    checks (or a refined solve was not accepted), 3 w1 is not finite.
    """
    P_int = _part(I, IO, I_P)
    P_off = _part(I, IO, I_POFF)
    F_off = _part(I, IO, I_FOFF)
    P_flt = _part(F, FO, F_P)
    scal = _part(F, FO, F_SCAL)
    sizes = _part(I, IO, I_SIZES)
    n_K = sizes[2]
    dd = P_int[P_off[0]:P_off[1]].view(np.uint64)       # (unsigned: see _stage)
    dt = P_int[P_off[1]:P_off[2]].view(np.uint64)
    e_idx = P_int[P_off[2]:P_off[3]].view(np.uint64)
    F_ptr = P_int[P_off[3]:P_off[4]]
    F_ind = P_int[P_off[4]:P_off[5]].view(np.uint64)
    pa = P_int[P_off[5]:P_off[6]].view(np.uint64)
    pb = P_int[P_off[6]:P_off[7]].view(np.uint64)
    sc = P_int[P_off[7]:P_off[8]]
    off_RE, Z0, nZ, U0, nU, n_imp = sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]
    e_sign = P_flt[F_off[0]:F_off[1]]
    F_dat = P_flt[F_off[1]:F_off[2]]
    Li_size = S_off[3] - S_off[2]
    Ui_size = S_off[5] - S_off[4]
    nk = 2 * n_imp
    base = nk + Li_size + Ui_size + n_K
    work = np.empty(base + 1 + t_coef.size)
    work[base] = 0.0
    known = work[:nk]
    empty = np.zeros(0)
    vals = empty

    for k in range(dd.size):
        v = -moduli[k]
        if not np.isfinite(v):
            return work, empty, 1
        sources[dd[k]] = v
        sources[dt[k]] = v
    for k in range(e_idx.size):
        v = e_sign[k] * x[e_idx[k]]
        if not np.isfinite(v):
            return work, empty, 1
        sources[off_RE + k] = v
    known[:] = 0.0                        # (finite but for F X and U_1, checked here)
    for i in range(nZ):
        s = 0.0
        for p in range(F_ptr[i], F_ptr[i + 1]):
            s += F_dat[p] * x[F_ind[p]]
        if not np.isfinite(s):
            return work, empty, 1
        known[Z0 + i] = s
    for i in range(nU):
        v = U1[i]
        if not np.isfinite(v):
            return work, empty, 1
        known[U0 + i] = v
    if n_K:
        if pa.size:
            ext = np.empty(sources.size + pa.size)
            for p in range(sources.size):     # (loops, not slice assignments: those
                ext[p] = sources[p]           # compile numba's shape-error messages)
            for p in range(pa.size):
                ext[sources.size + p] = sources[pa[p]] * sources[pb[p]]
        else:
            ext = sources
        o = nk
        Lx = work[o:o + Li_size]
        Vx = work[o + Li_size:o + Li_size + Ui_size]
        d = work[o + Li_size + Ui_size:base]
        t_src = S_ints[S_off[8]:S_off[9]]
        code = _factor_into(
            ext, S_ints[S_off[6]:S_off[7]], S_ints[S_off[7]:S_off[8]], t_src, t_coef,
            S_ints[S_off[9]:S_off[10]], S_ints[S_off[2]:S_off[3]],
            S_ints[S_off[10]:S_off[11]], S_ints[S_off[4]:S_off[5]], scal[4], scal[1], Lx,
            Vx, d, scal[2])
        if code == REJECTED:
            return work, empty, 2
        if code == REFINE:                # (kept for the refined solves of both stages)
            work[base] = 1.0
            vals = work[base + 1:]
            for t in range(t_coef.size):
                vals[t] = t_coef[t] * ext[t_src[t]]
    else:
        Lx = Vx = d = empty
    n1, n_E1, n_K1 = sizes[3], sizes[4], sizes[5]
    w1, y1, code = _stage(sources, known, empty, n1, _part(I, IO, I_INTS1),
                          _part(I, IO, I_IOFF1), _part(F, FO, F_FLTS1),
                          _part(I, IO, I_FOFF1), n1, n_E1, n_K1, S_ints, S_off, Lx, Vx,
                          d, vals if n_K1 else empty, scal[3])
    return work, w1, code


@njit(cache=True, error_model="numpy")
def _second(work, sources, rates, w1, dU1, phi, a2, b2, stab, I, F, IO, FO, S_ints, S_off,
            full):
    """The acceleration stage in one call: the right-hand side's dA/dt terms (from the
    moduli's rates ``rates`` and the velocity stage's ``w1``), dU_1/dt (0 where NaN),
    Baumgarte's terms ``a2 c + b2 Phi`` (a2 = 2 alpha, b2 = beta^2; Phi's NaN as 0)
    when ``stab``, then :func:`_stage`; ``work`` and ``sources`` as :func:`_first`
    left them.

    ``I`` (parts by ``IO``) as in :func:`_first`, with ``I_Q`` (by ``I_QOFF``): 0 the
    rows of the dA/dt terms, 1 their moduli, 2 their variables in w1, 3 the constraint
    flows in w1, 4 [z0, n_u, n_imp + U_1's offset, U_1's size, with rate terms (0/1)];
    ``I_INTS2``, ``I_IOFF2``, ``F_FLTS2``, ``I_FOFF2`` the stage's plan (every bond
    variable), used when ``full``; else ``I_INTS3``, ``I_IOFF3``, ``F_FLTS3``,
    ``I_FOFF3``: the plan of the variables dX/dt reads (w holds those, in order).

    Returns (w, y, status): 0 done, 1 the right-hand side is not finite, 2 a refined
    solve was not accepted, 3 the solution is not finite.
    """
    Q_int = _part(I, IO, I_Q)
    Q_off = _part(I, IO, I_QOFF)
    sizes = _part(I, IO, I_SIZES)
    n, n_E, n_K = sizes[0], sizes[1], sizes[2]
    P_off = _part(I, IO, I_POFF)
    P_int = _part(I, IO, I_P)
    n_imp = P_int[P_off[7] + 5]
    nk = 2 * n_imp
    Li_size = S_off[3] - S_off[2]
    Ui_size = S_off[5] - S_off[4]
    known = work[:nk]                     # (dU_1/dt is written into _first's zeros)
    o = nk
    Lx = work[o:o + Li_size]
    Vx = work[o + Li_size:o + Li_size + Ui_size]
    base = o + Li_size + Ui_size + n_K
    d = work[o + Li_size + Ui_size:base]
    vals = work[base + 1:] if work[base] != 0.0 else np.zeros(0)
    tol = _part(F, FO, F_SCAL)[3]
    rows = Q_int[Q_off[0]:Q_off[1]].view(np.uint64)     # (unsigned: see _stage)
    mods = Q_int[Q_off[1]:Q_off[2]].view(np.uint64)
    wdyn = Q_int[Q_off[2]:Q_off[3]].view(np.uint64)
    wC = Q_int[Q_off[3]:Q_off[4]].view(np.uint64)
    sc = Q_int[Q_off[4]:Q_off[5]]
    z0, n_u, dU0, nU, rate_terms = sc[0], sc[1], sc[2], sc[3], sc[4]
    extra = np.zeros(n - z0)              # (rows z0.. of the right-hand side)
    if rate_terms and n_u > extra.size:   # (no z rows: a plan that cannot be; numba
        return np.zeros(0), np.zeros(0), 1  # does not check bounds)
    if rate_terms:
        acc = np.zeros(n_u)
        for t in range(rows.size):
            acc[rows[t]] += (-rates[mods[t]]) * w1[wdyn[t]]
        for i in range(n_u):
            extra[i] = 0.0 - acc[i]
    for i in range(nU):
        v = dU1[i]
        known[dU0 + i] = v if np.isfinite(v) else 0.0
    if stab:
        base = n_u
        for i in range(wC.size):
            p = phi[i]
            pz = 0.0 if np.isnan(p) else p
            extra[base + i] = extra[base + i] - (a2 * w1[wC[i]] + b2 * pz)
    for v in extra:
        if not np.isfinite(v):
            return np.zeros(0), np.zeros(0), 1
    # (one call of _stage with either plan: a second call would be compiled in twice)
    if full:
        p_ints, p_ioff, p_flts, p_foff = I_INTS2, I_IOFF2, F_FLTS2, I_FOFF2
    else:
        p_ints, p_ioff, p_flts, p_foff = I_INTS3, I_IOFF3, F_FLTS3, I_FOFF3
    w, y, code = _stage(sources, known, extra, z0, _part(I, IO, p_ints),
                        _part(I, IO, p_ioff), _part(F, FO, p_flts), _part(I, IO, p_foff), n,
                        n_E, n_K, S_ints, S_off, Lx, Vx, d, vals, tol)
    return w, y, code
