"""Nonlinear constitutive laws on the sparse evaluation
(:class:`bondgraph.sparse.SparseReduction`): in the single stage of a model without
constraint sources, in the acceleration stage of one with them.

:class:`NonlinearFields` holds these methods; :class:`~bondgraph.sparse.SparseReduction`
inherits them (as it inherits its compiled path from :mod:`bondgraph._sparse_compiled`).

- A storage element with an energy law H(X) gives its co-energy Z = dH/dX from its law
  (:meth:`~bondgraph.laws.BoundEnergy.coenergy`) where a linear one gives F X. Without
  constraint sources nothing else reads its field. With them the acceleration stage
  differentiates Z: dZ/dt = T(X) dX/dt with T = d2H/dX2 the law's tangent (Eq. (15)'s
  H_4 = J_CZ F J_CZ^T with F the tangent). F holds a zero block there, so each of the
  element's components gets a new unknown zeta = dZ/dt where the z rows would read F
  dX/dt, and a row zeta_j - sum_k T_jk dX_k/dt = 0 whose T_jk are sources after the
  1, filled from the laws at each evaluation (:meth:`NonlinearFields._zeta_columns`,
  ``_storage_rate_rows``, ``_tangents``).
- A nonlinear resistor sits in the stage's system (M; with constraint sources B, whose
  velocity stage reads no resistor output: the constraint and kinematic flows do not
  depend on D, checked) with a zero resistive field
  (its row reads D_out = 0), and its output o = r(D_in) enters as that row's right-hand
  side: the system's solution, hence every bond variable, is affine in o, as in the
  dense reduction (:mod:`bondgraph._newton`). Where the resistors' inputs do not depend
  on their outputs (no algebraic loop through them, decided once at random moduli: a
  structural property, not one configuration's), one solve gives the inputs, the laws
  the outputs, and a second solve with the same factors everything else. Where they do,
  the inputs' affine map D_in = c + S o comes from one solve per nonlinear resistor
  input (and one for c) with the same factors, and
  :func:`~bondgraph._newton.solve_resistor_loop` solves the loop on it (its passes
  solve no system); a last solve gives everything at the converged outputs.

Where a law is not finite, the loop does not converge or a solve fails, the evaluation
returns None and the caller takes the dense reduction, which repeats it and raises the
error that names the element (:class:`~bondgraph.NonFiniteLawError`,
:class:`~bondgraph.AlgebraicLoopError`), as before. Both reductions are checked against
each other in ``tests/unit/test_sparse.py``.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _sparse_systems as systems
from ._newton import solve_resistor_loop
from ._sparse_systems import Workspace
from .errors import AlgebraicLoopError, NonFiniteLawError
from .laws import compile_batch

__all__ = ["NonlinearFields"]


class _NotSolved(Exception):
    """A solve of the single stage failed (singular or not finite) inside the loop."""


class NonlinearFields:
    """Nonlinear storage and resistor laws on the single stage (see the module
    docstring); mixed into :class:`~bondgraph.sparse.SparseReduction`, whose attributes
    it reads (``model``, ``_M``, ``_M_known``, ``n_u``, ``n_L``, ``_rec_L``)."""

    def _batch(self, storage: bool):
        """(one numeric function of every nonlinear storage element's co-energy, or of
        every nonlinear resistor's law, :func:`~bondgraph.laws.compile_batch`; the
        places of their variables in X, or in D_in), made on first use."""
        batches = self.__dict__.setdefault("_law_batches", {})
        got = batches.get(storage)
        if got is None:
            laws = self.model._nl_storage if storage else self.model._nl_r
            parts = [(law.variables, law.coenergy_expressions if storage else
                      law.expressions) for _, law in laws]
            f = compile_batch(parts, "the nonlinear storage laws" if storage else
                              "the nonlinear resistor laws")
            at = np.concatenate([np.arange(sl.start, sl.stop) for sl, _ in laws])
            got = batches[storage] = (f, at)
        return got

    def _coenergies(self, X: np.ndarray, Z: np.ndarray) -> bool:
        """Write the nonlinear storage elements' co-energies dH/dX into ``Z`` (the
        linear ones' F X already there), all in one call; False where a law is not
        finite."""
        f, at = self._batch(True)
        try:
            Z[at] = f(*X[at])
        except NonFiniteLawError:
            return False
        return True

    def _resistor_system(self) -> tuple:
        """(pattern, known terms) of the stage whose right-hand side takes the
        resistors' outputs: M, or with constraint sources the acceleration stage's B."""
        return (self._B, self._B_known) if self.n2 else (self._M, self._M_known)

    def _resistor_rows(self, o: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
        """That stage's right-hand side with the resistors' outputs ``o`` (length n_L,
        zero at the linear ones) on their rows D_out - R D_in = 0, added to ``extra``
        (its other terms) where given."""
        rhs = np.zeros(self._resistor_system()[0].shape[0]) if extra is None else extra.copy()
        rhs[self.n_u:self.n_u + self.n_L] += o
        return rhs

    def _resistor_stage(self, t: float, lu, sources: np.ndarray, known: np.ndarray,
                        extra: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray] | None:
        """The stage's (y, w) with every nonlinear resistor's output its law's value at
        its input (see the module docstring), or None where that fails (the dense
        reduction then repeats the evaluation and says why): the single stage's system
        M, or with constraint sources the acceleration stage's B (``extra``: its
        right-hand side's other terms, dA/dt's and Baumgarte's)."""
        m = self.model
        nR, rec_L = self.n_L, self._rec_L
        pattern, kn = self._resistor_system()

        def solved(o: np.ndarray, given: np.ndarray = known, more=extra
                   ) -> tuple[np.ndarray, np.ndarray]:
            got = self._stage(lu, pattern, kn, sources, given, self._resistor_rows(o, more))
            if got is None:
                raise _NotSolved
            return got

        def outputs(d: np.ndarray) -> np.ndarray:
            f, at = self._batch(False)
            o = np.zeros(nR)
            o[at] = f(*d[at])
            if not np.isfinite(o).all():
                raise _NotSolved
            return o

        try:
            with np.errstate(all="ignore"):
                y0, w0 = solved(np.zeros(nR))
                if not self._resistor_loop:
                    return solved(outputs(w0[rec_L]))
                # y and w are affine in o: their values at o = 0 plus one column per
                # nonlinear resistor input (the response to it alone: known values
                # zero), each one solve with the same factors; Newton's passes then
                # solve nothing, nor does the answer
                nl = m._nl_index
                # (where the system's entries never change, nor do the columns)
                static = not (m.layout.dynamic or m.ejs or self._tan_dims)
                cols = self.__dict__.get("_loop_columns") if static else None
                if cols is None:
                    Y = np.empty((y0.size, nl.size))
                    W = np.empty((w0.size, nl.size))
                    zero = np.zeros_like(known)
                    for j, k in enumerate(nl):
                        unit = np.zeros(nR)
                        unit[k] = 1.0
                        Y[:, j], W[:, j] = solved(unit, zero, None)
                    cols = (Y, W)
                    if static:
                        self._loop_columns = cols
                Y, W = cols
                base, S = w0[rec_L], W[rec_L]

                def implied(o: np.ndarray) -> np.ndarray:
                    return base + S @ o[nl]

                key = threading.get_ident()
                starts = [lambda: base.copy(), lambda: np.zeros(nR)]
                warm = key in self._newton_start
                if warm:
                    starts.insert(0, self._newton_start[key].copy)
                d = solve_resistor_loop(m._nl_r, nR, implied, S[nl], starts,
                                        m._nl_names, t, warm)
                self._newton_start[key] = d
                o = outputs(d)[nl]
                return y0 + Y @ o, w0 + W @ o
        except (_NotSolved, AlgebraicLoopError, NonFiniteLawError):
            return None

    def _zeta_columns(self, n_big: int) -> np.ndarray:
        """With constraint sources: per energy state component, the column of the
        acceleration stage's new unknown zeta = dZ/dt where a nonlinear storage law
        gives it (from ``n_big`` on), else -1. F holds a zero block there, so the z
        rows' dZ/dt = F dX/dt terms take zeta instead (``z_terms``)."""
        zeta = -np.ones(self.model.n_energy, dtype=np.int64)
        col = n_big
        for (sl, _), d in zip(self.model._nl_storage, self._tan_dims):
            zeta[sl] = col + np.arange(d)
            col += d
        return zeta

    def _storage_rate_rows(self, T, w_terms, zeta: np.ndarray, n_big: int) -> int:
        """The rows defining zeta (see :meth:`_zeta_columns`): zeta_j - sum_k T_jk(X)
        dX_k/dt = 0 over each element's components, T_jk the law's tangent d2H/dX2 (the
        sources after the 1, filled at each evaluation: Eq. (15)'s F is the tangent);
        the system's new order."""
        one, src = self._off_one, self._off_one + 1
        rows, var, srcs = [], [], []
        for (sl, _), d in zip(self.model._nl_storage, self._tan_dims):
            for j in range(d):
                rows.append(np.full(d, zeta[sl.start + j]))
                var.append(np.asarray(self._rec_X[sl.start:sl.stop], dtype=np.int64))
                srcs.append(src + j * d + np.arange(d))
            src += d * d
        cols = np.flatnonzero(zeta >= 0)
        T.add(zeta[cols], zeta[cols], np.full(cols.size, one), np.ones(cols.size))
        w_terms(T, np.concatenate(rows), np.concatenate(var), np.concatenate(srcs),
                -np.ones(sum(d * d for d in self._tan_dims)), True)
        return n_big + cols.size

    def _tangents(self, X: np.ndarray) -> np.ndarray | None:
        """The nonlinear storage laws' tangents d2H/dX2 at ``X``, flat (the sources after
        the 1), or None where one is not finite."""
        parts = []
        try:
            for sl, law in self.model._nl_storage:
                parts.append(np.asarray(law.tangent(X[sl]), dtype=float).ravel())
        except NonFiniteLawError:
            return None
        return np.concatenate(parts) if parts else np.zeros(0)

    def _has_resistor_loop(self, rng) -> bool:
        """Whether a nonlinear resistor's input depends on a nonlinear resistor's output
        (an algebraic loop through them, possibly through linear resistors and Euler
        junctions) in the stage that reads them (M; with constraint sources the
        acceleration stage's B): the response of their inputs to random outputs, at
        random moduli, Euler matrices and storage tangents. True also where that system
        cannot be solved there (the loop's Newton method then serves every case)."""
        pattern, kn = self._resistor_system()
        sources = self._sources(self._random_data(rng),
                                rng.uniform(-1.0, 1.0, self._off_one - self._off_RE),
                                rng.uniform(0.5, 1.5, self._n_sources - self._off_one - 1))
        lu = systems._factor(pattern, sources, Workspace())
        if lu is None:
            return True
        nl = self.model._nl_index
        o = np.zeros(self.n_L)
        o[nl] = rng.uniform(0.5, 1.5, nl.size)
        got = self._stage(lu, pattern, kn, sources, np.zeros(2 * self._n_imp),
                          self._resistor_rows(o))
        if got is None:
            return True
        w = got[1]
        scale = max(1.0, float(np.abs(w).max(initial=0.0)))
        return bool(np.abs(w[self._rec_L][nl]).max(initial=0.0) > 1e-12 * scale)
