"""Static condensation of a sparse system's constant part, done once per model.

:mod:`bondgraph.sparse` solves, at every derivative evaluation, a system A y = b whose
entries are sums of terms ``coef * source[src]`` (the junction structure's moduli, the
fields' entries, constants). Most of a mechanism's equations are junction sums and
identities whose coefficients never change (about nine tenths of the columns of a
chain's system hold constants only); only the moduli of the rotations and of the fields
vary. Eliminating the constant part once, when the model is built, leaves a system a
tenth of the size to factor at each evaluation.

The split (all indices of A's rows and columns)
    E_c: columns whose entries are all constant; E_r: rows matched one to one with them
    through constant non-zero entries (a maximum bipartite matching), so that the block
    A_EE = A[E_r, E_c] is constant and structurally regular. K_r, K_c: the rest. A_EE is
    block diagonal after permutation (its connected components); the blocks are
    inverted once (as stacks, by size), and a block whose condition number exceeds
    ``MAX_BLOCK_CONDITION`` (or that is singular), or that has more than ``MAX_BLOCK``
    unknowns, is returned to K, so that C = A_EE^-1 is exact to rounding and sparse.

The condensed system (with y_E = y[E_c], y_K = y[K_c], b_E = b[E_r], b_K = b[K_r])
    S y_K = b_K - G b_E,   S = A_KK - A_KE C A_EK,   G = A_KE C,
    y_E = C b_E - H y_K,   H = C A_EK.
G and H have terms linear in the sources (C is constant); S's terms are products of at
most two sources: its pattern is expressed on an extended source vector
[sources, sources[pair_a] * sources[pair_b]], so that it is an ordinary pattern
(:class:`bondgraph.sparse._Pattern`) for the LU. det A = det A_EE det S, so S is singular
exactly when A is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

__all__ = ["Condensation", "condense", "MAX_BLOCK_CONDITION", "MAX_BLOCK"]

#: a constant block of A_EE with a larger 2-norm condition number stays in the
#: factorised system (its inverse would lose more than 8 of 16 digits)
MAX_BLOCK_CONDITION = 1e8

#: a constant block of more unknowns stays in the factorised system (its dense inverse
#: would cost more than it saves)
MAX_BLOCK = 600

#: entries of a block's inverse below this fraction of its largest are rounding noise
_DROP = 1e-15


@dataclass(frozen=True)
class Condensation:
    """The build-time result of :func:`condense` (every array int64 or float64).

    Attributes
    ----------
    n : int
        A's order.
    rE, cE, rK, cK : ndarrays
        The eliminated rows and columns (pairwise: the pivot of column ``cE[k]`` is row
        ``rE[k]``) and the kept ones, in the kept system's order.
    C_row, C_col, C_val : ndarrays
        C = A_EE^-1 as COO in E's local numbering (row k: unknown ``cE[k]``; column k:
        equation ``rE[k]``).
    G_row, G_col, G_src, G_coef : ndarrays
        G = A_KE C: row in K, column in E, ``coef * source[src]``.
    H_row, H_col, H_src, H_coef : ndarrays
        H = C A_EK: row in E, column in K.
    S_row, S_col, S_src, S_coef : ndarrays
        S's terms on the extended sources.
    pair_a, pair_b : ndarrays
        Extended source ``n_sources + p`` is ``source[pair_a[p]] * source[pair_b[p]]``.
    n_sources : int
        Length of the plain source vector.
    """

    n: int
    rE: np.ndarray
    cE: np.ndarray
    rK: np.ndarray
    cK: np.ndarray
    C_row: np.ndarray
    C_col: np.ndarray
    C_val: np.ndarray
    G_row: np.ndarray
    G_col: np.ndarray
    G_src: np.ndarray
    G_coef: np.ndarray
    H_row: np.ndarray
    H_col: np.ndarray
    H_src: np.ndarray
    H_coef: np.ndarray
    S_row: np.ndarray
    S_col: np.ndarray
    S_src: np.ndarray
    S_coef: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    n_sources: int

    def extend(self, sources: np.ndarray) -> np.ndarray:
        """The extended source vector of S's terms (``sources`` itself without pairs)."""
        if not self.pair_a.size:
            return sources
        return np.concatenate([sources, sources[self.pair_a] * sources[self.pair_b]])


def condense(shape: tuple[int, int], rows, cols, src, coef, constant_sources: np.ndarray,
             one: int) -> Condensation | None:
    """The static condensation of the square system whose entry (r, c) is the sum of the
    terms ``coef * source[src]`` at (r, c); ``constant_sources`` holds each source's
    value where it never changes and NaN where it varies; ``one`` is the index of a
    source whose value is 1. None where nothing can be eliminated."""
    n = int(shape[0])
    if n == 0 or shape[0] != shape[1]:
        return None
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    src = np.asarray(src, dtype=np.int64)
    coef = np.asarray(coef, dtype=float)
    cv = np.asarray(constant_sources, dtype=float)
    # fold the constant sources into the coefficients (a constant term is on `one`)
    fixed = np.isfinite(cv[src])
    coef = np.where(fixed, coef * np.where(fixed, cv[src], 0.0), coef)
    src = np.where(fixed, one, src)

    # entries: value where constant, NaN where a term varies
    key = rows * n + cols
    ukey, entry = np.unique(key, return_inverse=True)
    e_row, e_col = ukey // n, ukey % n
    varying = np.zeros(ukey.size, dtype=bool)
    varying[entry[~fixed]] = True
    value = np.bincount(entry, weights=coef, minlength=ukey.size)
    var_col = np.zeros(n, dtype=bool)
    var_col[e_col[varying]] = True

    # pivots: constant non-zero entries in all-constant columns, matched one to one
    ok = ~varying & (value != 0.0) & ~var_col[e_col]
    if not ok.any():
        return None
    graph = sp.csr_matrix((np.ones(int(ok.sum())), (e_row[ok], e_col[ok])), shape=(n, n))
    match = np.asarray(maximum_bipartite_matching(graph, perm_type="column"), dtype=np.int64)
    rE = np.flatnonzero(match >= 0)
    cE = match[rE]
    if rE.size == 0:
        return None

    # A_EE (constant) in E's local numbering: equation rE[k] is local row k, unknown
    # cE[k] local column k
    local_r = -np.ones(n, dtype=np.int64)
    local_r[rE] = np.arange(rE.size)
    local_c = -np.ones(n, dtype=np.int64)
    local_c[cE] = np.arange(cE.size)
    inE = (local_r[e_row] >= 0) & (local_c[e_col] >= 0)
    nE = rE.size
    AEE = sp.csr_matrix((value[inE], (local_r[e_row[inE]], local_c[e_col[inE]])),
                        shape=(nE, nE))
    AEE.eliminate_zeros()             # (a constant entry can be zero: no coupling)
    n_blocks, label = connected_components(abs(AEE) + abs(AEE).T, directed=False)
    keep_block = np.ones(n_blocks, dtype=bool)
    # the blocks, grouped by size, inverted as stacks: each index's block and position
    sizes = np.bincount(label, minlength=n_blocks)
    order = np.argsort(label, kind="stable")
    start = np.r_[0, np.cumsum(sizes)]
    pos = np.empty(nE, dtype=np.int64)
    pos[order] = np.arange(nE) - start[label[order]]
    coo = AEE.tocoo()
    e_blk = label[coo.row]
    c_rows, c_cols, c_vals = [], [], []
    for size in np.unique(sizes):
        blocks = np.flatnonzero(sizes == size)          # the blocks of this size
        if size > MAX_BLOCK:
            keep_block[blocks] = False
            continue
        slot = -np.ones(n_blocks, dtype=np.int64)
        slot[blocks] = np.arange(blocks.size)
        stack = np.zeros((blocks.size, size, size))
        sel = slot[e_blk] >= 0
        np.add.at(stack, (slot[e_blk[sel]], pos[coo.row[sel]], pos[coo.col[sel]]),
                  coo.data[sel])
        members = order[start[blocks][:, None] + np.arange(size)]   # (n_blocks_s, size)
        with np.errstate(all="ignore"):
            cond = np.linalg.cond(stack) if size > 1 else np.ones(blocks.size)
        good = np.isfinite(cond) & (cond <= MAX_BLOCK_CONDITION) & \
            (np.abs(stack).max(axis=(1, 2)) > 0)
        keep_block[blocks[~good]] = False
        if not good.any():
            continue
        inv = np.linalg.inv(stack[good])
        scale = np.abs(inv).max(axis=(1, 2), keepdims=True)
        inv[np.abs(inv) <= _DROP * scale] = 0.0
        k, i, j = np.nonzero(inv)
        mem = members[good]
        c_rows.append(mem[k, i]); c_cols.append(mem[k, j]); c_vals.append(inv[k, i, j])
    if not c_rows:
        return None
    if not keep_block.all():          # ill-conditioned blocks return to K
        keep = keep_block[label]
        renum = -np.ones(nE, dtype=np.int64)
        renum[keep] = np.arange(int(keep.sum()))
        C_row, C_col = renum[np.concatenate(c_rows)], renum[np.concatenate(c_cols)]
        rE, cE = rE[keep], cE[keep]
        nE = rE.size
        if nE == 0:
            return None
        local_r[:] = -1
        local_r[rE] = np.arange(nE)
        local_c[:] = -1
        local_c[cE] = np.arange(nE)
    else:
        C_row, C_col = np.concatenate(c_rows), np.concatenate(c_cols)
    C_val = np.concatenate(c_vals)
    C = sp.csr_matrix((C_val, (C_row, C_col)), shape=(nE, nE))

    rK = np.flatnonzero(local_r < 0)
    cK = np.flatnonzero(local_c < 0)
    nK = rK.size
    kr = -np.ones(n, dtype=np.int64)
    kr[rK] = np.arange(nK)
    kc = -np.ones(n, dtype=np.int64)
    kc[cK] = np.arange(nK)

    # the terms by block
    t_rE, t_cE = local_r[rows], local_c[cols]
    KK = (t_rE < 0) & (t_cE < 0)
    KE = (t_rE < 0) & (t_cE >= 0)
    EK = (t_rE >= 0) & (t_cE < 0)
    nz = coef != 0.0
    KK &= nz; KE &= nz; EK &= nz
    # P1: one row per A_KE term, its column in E; P2: one column per A_EK term
    n1, n2 = int(KE.sum()), int(EK.sum())
    P1 = sp.csr_matrix((coef[KE], (np.arange(n1), t_cE[KE])), shape=(n1, nE))
    P2 = sp.csr_matrix((coef[EK], (t_rE[EK], np.arange(n2))), shape=(nE, n2))
    p1_row, p1_src = kr[rows[KE]], src[KE]
    p2_col, p2_src = kc[cols[EK]], src[EK]

    G = (P1 @ C).tocoo()               # (term, E column)
    H = (C @ P2).tocoo()               # (E row, term)
    Q = (G.tocsr() @ P2).tocoo()       # (term, term): A_KE C A_EK

    # S = A_KK - Q on the extended sources
    qa, qb = p1_src[Q.row], p2_src[Q.col]
    a = np.where(qa == one, qb, qa)                    # a source paired with `one`
    b = np.where((qa == one) | (qb == one), one, qb)   # stays linear in the other
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    bilinear = (lo != one) & (hi != one)
    n_src = cv.size
    pairs, pair_idx = np.unique(lo[bilinear] * n_src + hi[bilinear], return_inverse=True)
    q_src = np.where(lo == one, hi, lo).astype(np.int64)
    q_src[bilinear] = n_src + pair_idx
    S_row = np.concatenate([kr[rows[KK]], p1_row[Q.row]])
    S_col = np.concatenate([kc[cols[KK]], p2_col[Q.col]])
    S_src = np.concatenate([src[KK], q_src])
    S_coef = np.concatenate([coef[KK], -Q.data])
    return Condensation(
        n=n, rE=rE, cE=cE, rK=rK, cK=cK,
        C_row=C_row.astype(np.int64), C_col=C_col.astype(np.int64), C_val=C_val,
        G_row=p1_row[G.row], G_col=G.col.astype(np.int64), G_src=p1_src[G.row],
        G_coef=G.data.astype(float),
        H_row=H.row.astype(np.int64), H_col=p2_col[H.col], H_src=p2_src[H.col],
        H_coef=H.data.astype(float),
        S_row=S_row, S_col=S_col, S_src=S_src, S_coef=S_coef,
        pair_a=(pairs // n_src).astype(np.int64), pair_b=(pairs % n_src).astype(np.int64),
        n_sources=n_src)
