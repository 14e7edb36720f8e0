"""The junction structure: the linear relations among bond variables and the J blocks
of the paper's Eqs. (9)-(13).

- :class:`JunctionLayout`: index structures compiled once from a causal graph.
- :class:`JunctionStructure`: the J blocks evaluated at one configuration, by name.

Symbols (paper notation, used only inside this module and :mod:`bondgraph.reduction`)
-------------------------------------------------------------------------------------
Every bond b has an effort e_b and a flow f_b; all of them form w. The junction
elements (0, 1, TF/MTF, GY/MGY) give A(config) w = 0 (method.md section 5a). The field
ports' causal strokes split w into the imposed v = [Z; D_out; U_1; U_2; E_out] and the
received y = [dX/dt; D_in; E_in; C] (C: the Se* flows, the constraint). Solving
A_u w_u = -A_i v (a sparse LU: the "sparse tableau") gives w = W v and y = J v:

    J = [[J_XZ, J_XL, J_XU1, J_XU2, J_XE],     Eqs. (9)-(10)  (X = [X_i1; X_i2])
         [J_LZ, J_LL, J_LU1, J_LU2, J_LE],     Eq. (11)
         [J_EZ, J_EL, J_EU1, J_EU2, J_EE],     Eq. (12)
         [J_CZ, J_CL, J_CU1, J_CU2, J_CE]]     Eq. (13)   (J_CU2 = 0 in a proper graph)

and dJ/dt from the moduli' rates: dW/dt = -A_u^-1 (dA_u/dt W_u + dA_i/dt).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .causality import CausalGraph
from .element import Category
from .errors import AlgebraicLoopError, CausalityError

__all__ = ["JunctionLayout", "JunctionStructure", "GROUPS_IMPOSED", "GROUPS_RECEIVED",
           "PowerPlan"]

GROUPS_IMPOSED = ("Z", "L", "U1", "U2", "E")
GROUPS_RECEIVED = ("X", "L", "E", "C")


class PowerPlan:
    """The powers e_k . f_k of several bonds (each a pair of index arrays into a vector
    of bond variables: its effort's and its flow's) in one vectorised product: made
    once, :meth:`__call__` per evaluation (a Python loop of dot products cost 2-3 us a
    bond, half of a robot's evaluation)."""

    def __init__(self, pairs):
        pairs = [(np.asarray(e, dtype=np.int64), np.asarray(f, dtype=np.int64))
                 for e, f in pairs]
        self.n = len(pairs)
        self.effort = np.concatenate([e for e, _ in pairs]) if pairs else \
            np.zeros(0, dtype=np.int64)
        self.flow = np.concatenate([f for _, f in pairs]) if pairs else \
            np.zeros(0, dtype=np.int64)
        self.owner = np.repeat(np.arange(self.n), [e.size for e, _ in pairs]) if pairs \
            else np.zeros(0, dtype=np.int64)

    def __call__(self, w: np.ndarray) -> np.ndarray:
        """The powers (n,) of the bond variables ``w``."""
        return np.bincount(self.owner, weights=w[self.effort] * w[self.flow],
                           minlength=self.n)


@dataclass(frozen=True)
class JunctionStructure:
    """The J blocks at one configuration.

    Attributes
    ----------
    J : ndarray, shape (n_received, n_imposed)
        The whole map y = J v.
    blocks : dict
        ``blocks["XZ"]`` is J_XZ, etc.: keys are a received group (X, L, E, C) followed
        by an imposed group (Z, L, U1, U2, E).
    W : ndarray, shape (n_variables, n_imposed)
        Every bond variable as a function of v (efforts first, then flows).
    """

    J: np.ndarray
    blocks: dict[str, np.ndarray]
    W: np.ndarray

    def __getitem__(self, key: str) -> np.ndarray:
        return self.blocks[key]


class JunctionLayout:
    """Index structures of the junction structure, compiled once after causality.

    Parameters
    ----------
    cg : CausalGraph
    moduli : dict of str to Modulus
        The numeric moduli of the two-ports (constant or state functions).
    """

    def __init__(self, cg: CausalGraph, moduli: dict):
        g = cg.graph
        self.elements = g.elements
        self.bonds = g.bonds
        self.bond_index = {b.name: i for i, b in enumerate(self.bonds)}
        off = np.cumsum([0] + [b.dim for b in self.bonds])
        self.offset = {b.name: int(off[i]) for i, b in enumerate(self.bonds)}
        self.n_half = int(off[-1])
        self.n_var = 2 * self.n_half

        def e(bname):
            o = self.offset[bname]
            return list(range(o, o + self.bonds[self.bond_index[bname]].dim))

        def f(bname):
            o = self.n_half + self.offset[bname]
            return list(range(o, o + self.bonds[self.bond_index[bname]].dim))

        self.effort_idx, self.flow_idx = e, f

        imposed = {k: [] for k in GROUPS_IMPOSED}
        received = {k: [] for k in GROUPS_RECEIVED}
        self.members = {k: [] for k in ("Z", "L", "U1", "U2", "E", "V1")}
        v1: list[int] = []
        for name, el in self.elements.items():
            cat = el.category
            if cat.is_junction or cat.is_two_port:
                continue
            (b,) = g.bonds_of(name)
            gets_effort = cg.causality[b.name].effort_receiver(b) == name
            ei, fi = e(b.name), f(b.name)
            if cat is Category.INERTIA:
                if not gets_effort:
                    raise CausalityError(f"I '{name}' is in differential causality")
                imposed["Z"] += fi
                received["X"] += ei
                self.members["Z"].append(name)
            elif cat is Category.CAPACITANCE:
                if gets_effort:
                    raise CausalityError(f"C '{name}' is in differential causality")
                imposed["Z"] += ei
                received["X"] += fi
                self.members["Z"].append(name)
            elif cat is Category.RESISTANCE:
                # resistance causality: flow in (D_in), effort out (D_out)
                imposed["L"] += fi if gets_effort else ei
                received["L"] += ei if gets_effort else fi
                self.members["L"].append((name, not gets_effort))
            elif cat is Category.EULER:
                imposed["E"] += ei
                received["E"] += fi
                self.members["E"].append(name)
            elif cat is Category.EFFORT_SOURCE:
                imposed["U1"] += ei
                v1 += fi
                self.members["U1"].append(name)
            elif cat is Category.FLOW_SOURCE:
                imposed["U1"] += fi
                v1 += ei
                self.members["U1"].append(name)
            elif cat is Category.UNKNOWN_EFFORT:
                imposed["U2"] += ei
                received["C"] += fi
                self.members["U2"].append(name)
        self.imposed_groups = imposed
        self.received_groups = received
        self.imp = np.array(sum((imposed[k] for k in GROUPS_IMPOSED), []), dtype=int)
        self.rec = np.array(sum((received[k] for k in GROUPS_RECEIVED), []), dtype=int)
        self.v1 = np.array(v1, dtype=int)
        self.imp_slices = _slices(imposed, GROUPS_IMPOSED)
        self.rec_slices = _slices(received, GROUPS_RECEIVED)
        if len(set(self.imp.tolist())) != len(self.imp):
            raise CausalityError("a bond variable is imposed by both of its ends "
                                 "(two sources bonded directly?)")
        unknown_mask = np.ones(self.n_var, dtype=bool)
        unknown_mask[self.imp] = False
        self.unk = np.flatnonzero(unknown_mask)
        col_u = -np.ones(self.n_var, dtype=int)
        col_u[self.unk] = np.arange(len(self.unk))
        col_i = -np.ones(self.n_var, dtype=int)
        col_i[self.imp] = np.arange(len(self.imp))
        self.col_u, self.col_i = col_u, col_i

        # junction equations: constant COO entries plus modulated blocks
        rows, cols, vals = [], [], []
        self.modulated: list[tuple[str, object, int, list[int], list[int], bool]] = []
        r = 0

        def add(row, col, val):
            rows.append(row)
            cols.append(col)
            vals.append(val)

        for name, el in self.elements.items():
            cat = el.category
            bl = g.bonds_of(name)
            if cat.is_junction:
                n = el.dim
                signs = [b.sign_at(name) for b in bl]
                first = bl[0]
                if cat is Category.ZERO:
                    same, summed = e, f
                else:
                    same, summed = f, e
                for b in bl[1:]:
                    for k in range(n):
                        add(r + k, same(first.name)[k], 1.0)
                        add(r + k, same(b.name)[k], -1.0)
                    r += n
                for k in range(n):
                    for b, s in zip(bl, signs):
                        add(r + k, summed(b.name)[k], float(s))
                r += n
            elif cat.is_two_port:
                ports = {}
                for b in bl:
                    ports[b.tail_port if b.tail == name else b.head_port] = b
                b1, b2 = ports["in"], ports["out"]
                mod = moduli[name]
                n2, n1 = mod.shape
                tf = cat is Category.TRANSFORMER
                # TF: f2 - mu f1 = 0 ; e1 - mu^T e2 = 0
                # GY: e2 - r f1 = 0 ; e1 - r^T f2 = 0
                lhs1 = f(b2.name) if tf else e(b2.name)
                rhs1 = f(b1.name)
                lhs2 = e(b1.name)
                rhs2 = e(b2.name) if tf else f(b2.name)
                for k in range(n2):
                    add(r + k, lhs1[k], 1.0)
                for k in range(n1):
                    add(r + n2 + k, lhs2[k], 1.0)
                block_start = len(vals)
                for i in range(n2):
                    for j in range(n1):
                        add(r + i, rhs1[j], 0.0)            # -mu[i, j]
                for j in range(n1):
                    for i in range(n2):
                        add(r + n2 + j, rhs2[i], 0.0)        # -mu[i, j] (transpose)
                self.modulated.append((name, mod, block_start, n2, n1))
                r += n1 + n2
        self.n_eq = r
        if self.n_eq != len(self.unk):
            raise CausalityError(f"the junction structure has {self.n_eq} equations for "
                                 f"{len(self.unk)} unknown bond variables; check for bonds "
                                 f"between two one-port elements")
        self.rows = np.array(rows, dtype=int)
        self.cols = np.array(cols, dtype=int)
        self.base = np.array(vals, dtype=float)
        self.is_u = self.col_u[self.cols] >= 0
        # position of each modulated entry in the data vector, in (i, j) then (j, i) order
        for k, (name, mod, start, n2, n1) in enumerate(self.modulated):
            if mod.constant is not None:
                m = np.asarray(mod.constant, dtype=float)
                self.base[start:start + n2 * n1] = -m.ravel()
                self.base[start + n2 * n1:start + 2 * n2 * n1] = -m.T.ravel()
        self.dynamic = [(name, mod, start, n2, n1) for (name, mod, start, n2, n1)
                        in self.modulated if mod.constant is None]
        # where entry (i, j) of each dynamic modulus goes: the row block (i, j) order, and
        # the transposed block, (j, i) order
        direct, transposed = [], []
        for _name, _mod, start, n2, n1 in self.dynamic:
            i, j = np.divmod(np.arange(n2 * n1), n1)
            direct.append(start + i * n1 + j)
            transposed.append(start + n2 * n1 + j * n2 + i)
        self._dyn_direct = np.concatenate(direct) if direct else np.zeros(0, dtype=int)
        self._dyn_transposed = np.concatenate(transposed) if transposed else \
            np.zeros(0, dtype=int)
        # CSC structure of A_u and A_i, fixed after causality: per evaluation only the data
        # vector is refilled (no COO -> CSC conversion)
        self._csc_u = self._csc_pattern(self.is_u, self.col_u, len(self.unk))
        self._csc_i = self._csc_pattern(~self.is_u, self.col_i, len(self.imp))

    def _csc_pattern(self, mask, colmap, ncols):
        idx = np.flatnonzero(mask)
        cols = colmap[self.cols[idx]]
        rows = self.rows[idx]
        order = np.lexsort((rows, cols))
        idx, rows, cols = idx[order], rows[order], cols[order]
        # merge duplicates (a coefficient written twice at one position) by summation
        key = cols.astype(np.int64) * (self.n_eq + 1) + rows
        uniq, first = np.unique(key, return_index=True)
        group = (np.cumsum(np.r_[0, np.diff(key) != 0]) if key.size
                 else np.zeros(0, dtype=int))
        indptr = np.zeros(ncols + 1, dtype=np.int32)
        np.add.at(indptr, cols[first] + 1, 1)
        indptr = np.cumsum(indptr).astype(np.int32)
        return idx, group, len(uniq), rows[first].astype(np.int32), indptr, ncols

    # ------------------------------------------------------------------------------------
    def _fill(self, d: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Write -mu (row block) and -mu^T (column block) of every modulated two-port."""
        if self.dynamic:
            d[self._dyn_direct] = -flat
            d[self._dyn_transposed] = -flat
        return d

    def data(self, moduli: np.ndarray) -> np.ndarray:
        """Coefficients of A at a configuration: ``moduli`` holds the dynamic two-ports'
        moduli, each raveled row-major, concatenated in the order of ``dynamic``
        (:meth:`bondgraph.moduli.StateFunctions.moduli`)."""
        return self._fill(self.base.copy(), moduli)

    def rate_data(self, moduli_rates: np.ndarray) -> np.ndarray:
        """Coefficients of dA/dt (zero but for the modulated entries), from the moduli'
        rates in the same layout as :meth:`data`."""
        return self._fill(np.zeros_like(self.base), moduli_rates)

    def split(self, data: np.ndarray) -> tuple[sp.csc_matrix, sp.csc_matrix]:
        """(A_u, A_i): the columns of the unknown and of the imposed variables."""
        out = []
        for idx, group, n, indices, indptr, ncols in (self._csc_u, self._csc_i):
            vals = np.zeros(n)
            np.add.at(vals, group, data[idx])
            out.append(sp.csc_matrix((vals, indices, indptr), shape=(self.n_eq, ncols)))
        return out[0], out[1]

    def factor(self, data: np.ndarray):
        """Sparse LU of A_u and A_i; raises AlgebraicLoopError when A_u is singular."""
        A_u, A_i = self.split(data)
        if A_u.shape[0] == 0:
            return None, A_i
        ok = bool(np.all(np.isfinite(data)))
        lu = None
        if ok:
            try:
                lu = spla.splu(A_u)
                ok = bool(np.all(np.isfinite(lu.U.data))) and \
                    np.min(np.abs(lu.U.diagonal())) > 0.0
            except RuntimeError:
                ok = False
        if not ok:
            raise AlgebraicLoopError(
                "the junction structure cannot be solved for the received variables (its "
                "matrix is singular or not finite); the transformers and gyrators whose "
                "moduli matter: " + self._suspects(data))
        return lu, A_i

    def _suspects(self, data: np.ndarray) -> str:
        """Two-ports with non-finite or rank-deficient moduli (or all two-ports)."""
        bad, every = [], []
        for name, mod, start, n2, n1 in self.modulated:
            m = -data[start:start + n2 * n1].reshape(n2, n1)
            every.append(name)
            if not np.all(np.isfinite(m)) or np.linalg.matrix_rank(m) < min(n2, n1):
                bad.append(name)
        names = bad or every
        return ", ".join(names) if names else "none (check the junctions' bonds)"

    def full_map(self, lu, A_i) -> np.ndarray:
        """W: every bond variable as a linear function of the imposed vector v."""
        W = np.zeros((self.n_var, len(self.imp)))
        W[self.imp, np.arange(len(self.imp))] = 1.0
        if lu is not None and A_i.shape[1]:
            W[self.unk] = -lu.solve(A_i.toarray())
        return W

    def solved(self, moduli: Callable[[], np.ndarray]):
        """(lu, A_i, W, J blocks) at the moduli ``moduli()``: :meth:`factor`,
        :meth:`full_map` and :meth:`structure`. Without modulated two-ports they are the
        same at every state: formed once and kept, read-only (evaluations share them)."""
        kept = getattr(self, "_kept", None)
        if kept is not None:
            return kept
        lu, A_i = self.factor(self.data(moduli()))
        W = self.full_map(lu, A_i)
        js = self.structure(W)
        if not self.dynamic:
            W.setflags(write=False)
            js.J.setflags(write=False)
            self._kept = (lu, A_i, W, js)
        return lu, A_i, W, js

    def structure(self, W: np.ndarray) -> JunctionStructure:
        """The J blocks from the full map W."""
        J = W[self.rec]
        blocks = {}
        for rg in GROUPS_RECEIVED:
            rs = self.rec_slices[rg]
            for ig in GROUPS_IMPOSED:
                blocks[rg + ig] = J[rs, self.imp_slices[ig]]
        return JunctionStructure(J=J, blocks=blocks, W=W)


def _slices(groups: dict[str, list[int]], order) -> dict[str, slice]:
    out, start = {}, 0
    for k in order:
        n = len(groups[k])
        out[k] = slice(start, start + n)
        start += n
    return out
