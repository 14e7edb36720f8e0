"""The one-call path of :class:`bondgraph.sparse.SparseReduction`: with numba and a
condensed system, an evaluation is two compiled calls
(:func:`bondgraph._sparse_kernels._first` and ``_second``) around the element
functions, on index and coefficient arrays packed once per model (the plans made here);
and the Euler junctions' blocks of R_E, which both paths read.

:class:`CompiledPath` holds these methods; :class:`~bondgraph.sparse.SparseReduction`
inherits them (one class split in two modules along its seam: building and the numpy
path there, the compiled path here).
"""

from __future__ import annotations

import threading

import numpy as np

from . import fastlu
from . import _sparse_systems as systems
from ._sparse_systems import StepValues, Workspace, _Condensed
from .branches import Branch
from .element import StateView
from .junction import PowerPlan
from .primitives import EJS

__all__ = ["CompiledPath"]


class CompiledPath:
    """The compiled one-call evaluation of a sparse reduction (see the module
    docstring); mixed into :class:`~bondgraph.sparse.SparseReduction`, whose attributes
    it reads."""

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
        if not x.flags.writeable:     # (a result's column: numba would compile the
            x = x.copy()              # stages again for read-only arrays, seconds)
        m = self.model
        fns = m.functions
        kern = fastlu._sparse_kernels()
        moduli, phi = fns.moduli_and_phi(x, shared)
        U1, dU1 = m.source_values(t, s, rates=self.n2 > 0)   # (rates: Eq. (15) only)
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
                parts.append(self._w2_powers(w))
            return np.concatenate(parts)
        n2 = self.n2
        if not self._kin_final:
            kin_rates = fns.kinematic_rates(x, w[m._kin_rows])
        if m.work_idx:
            xdot = np.concatenate([w[self._rec_X], kin_rates, m.work_powers(w)])
        else:
            xdot = np.concatenate([w[self._rec_X], kin_rates])
        return StepValues(t=float(t), x=x, xdot=xdot, U1=U1, U2=y[self._c2:self._c2 + n2],
                          constraint_flow=w[self._rec_C], phi=phi, bond_values=w,
                          branch=Branch.EQ15 if n2 else Branch.NONE, rank=n2)

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
            state.failures += 1
            ext = self._B.c.extend(src)
            if fast.factor(state, ext, current_failed=True) is None and (
                    not fast.may_adopt(state) or
                    systems._superlu_factor(self._B.S, ext, ws) is None):
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
            if status == 2:                # (a refined solve not accepted: the general
                state.failures += 1        # path factors again, with another order)
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
        checks = (fastlu.PIVOT_THRESHOLD, fastlu.SINGULAR_RATIO, fastlu.WEAK_THRESHOLD,
                  fastlu.REFINE_TOL, fastlu.REFINE_THRESHOLD)
        if tuple(scal) != checks:
            scal[:] = checks
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
        if m.nonlinear:                  # (the laws are evaluated in Python)
            return None
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
        src0 = self._sources(L.base, 0.0)
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
        # (without constraint sources there are no z rows: dA/dt enters nowhere, and
        # _second's right-hand side beyond the velocity block has no room for it)
        rate_terms = int(bool(L.dynamic) and not m.omit_rate_terms and self.n2 > 0)
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
        # (the first two as before: an exported FMU's C reads them, without refinement)
        flt_parts[K.F_SCAL] = [fastlu.PIVOT_THRESHOLD, fastlu.SINGULAR_RATIO,
                               fastlu.WEAK_THRESHOLD, fastlu.REFINE_TOL,
                               fastlu.REFINE_THRESHOLD]
        I_all, IO = pack(int_parts, np.int64)
        F_all, FO = pack(flt_parts, np.float64)
        return (I_all, F_all, IO, FO), rate_terms

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
        is_B = pattern is self._B
        kn = self._B_known if is_B else self._M_known
        # the rows of b that can be non-zero (known values' terms, dA/dt's and
        # Baumgarte's rows): C's and G's terms on the others add exact zeros
        support = np.zeros(pattern.c.n, dtype=bool)
        support[kn[0]] = True
        if is_B:
            support[self._n_m + self._dyn_rows] = True
            support[self._n_m + self.n_u:] = True
        if self.model._nl_r:             # (the nonlinear resistors' outputs)
            support[self.n_u:self.n_u + self.n_L] = True
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
            self._w2_powers = PowerPlan(self._w2_work)
            self._w2 = want                # (last: another thread may be reading)
        return self._w2
