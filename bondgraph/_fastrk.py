"""The compiled Runge-Kutta loop in a run: scipy's ``RK45`` and ``DOP853`` stepping
without Python per step, for models whose whole evaluation is compiled.

- :func:`compiled_loop`: the :class:`CompiledLoop` of a run, or the reason it does not
  apply (then the run steps with scipy's solver as before).
- :func:`compiled_evaluation`: for a run that steps in Python (an implicit method,
  events scipy locates), the same compiled right-hand side as one call from Python
  (:meth:`CompiledLoop.evaluate`), where the model's conditions below hold.
- :class:`CompiledLoop`: advances a scipy ``RK45``/``DOP853`` solver object by many
  steps in one compiled call (:func:`bondgraph._rk_kernels.rk_advance`) and writes
  the state back into it: t, y, f, the next step size, the last step's stages,
  ``t_old``, ``y_old``, ``h_previous``, the evaluation counts. The solver object stays
  the authority: its first step (the evaluation at t0 and the initial step size) is
  scipy's, its dense output is scipy's (from the stages the loop left in it; the
  output grid's states, which the loop writes itself where there are no events and no
  dense output, are that interpolant evaluated with scipy's formulas), and
  where the compiled evaluation cannot answer (a pivot order that fails its checks, a
  non-finite value, a step size at its floor) the step is taken by the solver's own
  ``step()`` through :class:`~bondgraph._rhs.RightHandSide`, which handles it as in
  every run. So the steps, states and counts are those of the scipy path (to rounding:
  the sums are the same but for their order).

Where it applies: numba enabled; the sparse one-call evaluation
(:mod:`bondgraph._sparse_compiled`) in use, with its moduli, Phi and kinematic rates
offered as compiled kernels (:meth:`bondgraph.moduli.StateFunctions.compiled_parts`:
the element library's mechanisms), or none to compute (constant moduli and no Phi: a
bond graph of 0, 1, TF, GY, C, I, R and plain EJS elements, with or without constraint
sources); every source constant or state-dependent with a
compiled kernel (:class:`~bondgraph.primitives.sources.CompiledSource`: up to four
families, each one kernel, e.g. the element library's contact wrenches and compliant
stops; the loop computes their values at every evaluation with them); the velocity stage's kinematic rates final; the method exactly
``RK45`` or ``DOP853``; no events but those that may be checked on the accepted steps
the loop returns (:data:`SCAN_STEPS`).

Events in the loop: it records every accepted step of a call; the run's event tracker
scans their ends in order (each event evaluated once per accepted step, as on the
scipy path: :meth:`bondgraph._events.EventTracker.scan`), and where a crossing is found
the solver is set back to the end of that step from the records (its stages, step
sizes, counts, stiffness monitor), so that the tracker locates the crossing in that
step's interpolant as on the scipy path; the steps after it are taken again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.integrate import DOP853, RK45

from . import fastlu
from .errors import signal_safe
from .primitives.sources import CompiledFamilies

__all__ = ["CompiledLoop", "compiled_loop", "compiled_evaluation", "CHUNK", "SCAN_STEPS"]

SCAN_STEPS = "scan_steps"
"""The attribute (True) of an event that the compiled loop may take: one whose value
is read only at the ends of accepted steps (in order, once each) and in the
interpolant of the step where it crosses (e.g. the element library's tunnelling
watch). Other events keep the run on the scipy path."""

CHUNK = 256
"""Steps per compiled call at most: between calls the run returns to Python (a Ctrl-C
is seen there, as between scipy's steps)."""


def _kernels():
    from . import _rk_kernels
    return _rk_kernels


def _tableau(solver_cls) -> tuple:
    """(A, B, C, E, E3, E5, DOP853?) of scipy's class: the coefficients the loop uses
    (read from scipy, not copied)."""
    if solver_cls is DOP853:
        return (np.ascontiguousarray(DOP853.A, dtype=float),
                np.ascontiguousarray(DOP853.B, dtype=float),
                np.ascontiguousarray(DOP853.C, dtype=float), np.zeros(0),
                np.ascontiguousarray(DOP853.E3, dtype=float),
                np.ascontiguousarray(DOP853.E5, dtype=float), True)
    return (np.ascontiguousarray(RK45.A, dtype=float), np.ascontiguousarray(RK45.B, dtype=float),
            np.ascontiguousarray(RK45.C, dtype=float), np.ascontiguousarray(RK45.E, dtype=float),
            np.zeros(0), np.zeros(0), False)


def compiled_loop(model, solver_cls, rhs, stabilization, events, enabled: bool = True, *,
                  constant_sources: bool = True, affine_phi: bool = False
                  ) -> tuple["CompiledLoop | None", str]:
    """The compiled loop of a run, or (None, why it does not apply).

    Parameters
    ----------
    model : StateSpaceModel
    solver_cls : type
        The run's solver class.
    rhs : RightHandSide
        The run's right-hand side (its sparse evaluation and workspace).
    stabilization : Baumgarte or None
    events : sequence
        The run's events (one without the attribute :data:`SCAN_STEPS`: the scipy
        path).
    enabled : bool
        False: the caller forces the scipy path.
    constant_sources : bool
        Require every source to be constant (the loop's U_1 is packed once) or
        state-dependent with a compiled kernel (computed by the loop). False for a
        caller that computes U_1 itself (an exported FMU: :mod:`bondgraph.fmu`): then
        time-varying sources are accepted and state-dependent ones are not.
    affine_phi : bool
        The caller computes the affine position constraints beside the program itself
        (couplings; an exported FMU), so that any number of terms is accepted; the
        compiled right-hand side computes those of at most
        :data:`bondgraph._rk_kernels.AFFINE_TERMS` terms.
    """
    if not enabled:
        return None, "compiled_loop=False"
    if solver_cls not in (RK45, DOP853):
        return None, (f"method {solver_cls.__name__}: the compiled loop takes RK45 and "
                      f"DOP853")
    if any(not getattr(e, SCAN_STEPS, False) for e in events):
        return None, "events are located by the scipy path"
    parts, why = _applies(model, rhs, constant_sources, affine_phi)
    if parts is None:
        return None, why
    return CompiledLoop(model, rhs.fast, rhs, stabilization, solver_cls, parts), ""


def compiled_evaluation(model, rhs, stabilization) -> "CompiledLoop | None":
    """The compiled right-hand side of a run that steps in Python (an implicit method,
    events located by scipy), for :class:`~bondgraph._rhs.RightHandSide` to call
    (:meth:`CompiledLoop.evaluate`), or None where the compiled loop's conditions on the
    model (all but the method and the events) do not hold."""
    parts, _ = _applies(model, rhs, True, False)
    if parts is None:
        return None
    return CompiledLoop(model, rhs.fast, rhs, stabilization, None, parts)


def _applies(model, rhs, constant_sources: bool, affine_phi: bool) -> tuple:
    """(the model's compiled parts, "") where its whole evaluation is compiled (see
    :func:`compiled_loop`), else (None, why not)."""
    if not fastlu.enabled():
        return None, "numba is not enabled"
    fast = rhs.fast
    if fast is None:
        return None, "the sparse evaluation does not apply to this run"
    if not fast._compiled or fast._fused_plan() is None:
        return None, "the sparse evaluation's one-call compiled path does not apply"
    if not fast._kin_final:
        return None, "a kinematic state's rate is not final after the velocity stage"
    varying = [n for n, law in model.sources.items() if law.constant is None]
    if not constant_sources:
        varying = [n for n in varying if model.sources[n].state_dependent]
    else:
        compiled = [n for n in varying if model.sources[n].compiled is not None]
        families = {id(model.sources[n].compiled.family) for n in compiled}
        if len(families) > 4:              # (_rk_kernels.MAX_FAMILIES)
            return None, (f"sources {', '.join(compiled[:3])}: more than 4 families of "
                          f"compiled sources")
        varying = [n for n in varying if n not in compiled]
    if varying:
        return None, (f"source(s) {', '.join(varying[:3])} vary with time or state "
                      f"(Python functions)")
    parts, why = model.functions.compiled_parts()
    if parts is None:
        return None, why
    aff = parts["phi_affine"]
    if aff is not None and not affine_phi and aff[1].shape[1] > _kernels().AFFINE_TERMS:
        return None, (f"an affine position constraint (a coupling) of more than "
                      f"{_kernels().AFFINE_TERMS} terms")
    return parts, ""


class CompiledLoop:
    """Steps of a scipy RK45/DOP853 solver taken in compiled calls (see the module
    docstring). Made by :func:`compiled_loop`.

    Attributes
    ----------
    steps : int
        Accepted steps taken by the compiled loop.
    fallbacks : int
        Times an evaluation inside the loop could not answer (a pivot order that failed
        its checks, a non-finite value), so that the next step was taken by the
        solver's own ``step()`` in Python.
    stiff_now : bool
        Whether the stiffness test fired at the last step of the last :meth:`advance`.
    """

    def __init__(self, model, fast, rhs, stabilization, solver_cls, parts: dict):
        self.model, self.fast, self.rhs = model, fast, rhs
        # (solver_cls None: the evaluation alone, :func:`compiled_evaluation`)
        self.tableau = _tableau(solver_cls) if solver_cls is not None else None
        self.parts = parts
        self.steps = 0
        self.fallbacks = 0
        self.stiff_now = False
        self.restarts = 0                 # (segments the last call went on into)
        self._fallback = False
        fast._want2()                         # (the positions _w2_X, _w2_work)
        m = model
        isl = m.layout.imp_slices
        n_u1 = isl["U1"].stop - isl["U1"].start
        U1, dU1, varying = m.source_plan()   # (the constant sources' values)
        if U1.size != n_u1:
            raise AssertionError("source values do not match the layout")
        self._U1, self._dU1 = U1, dU1
        self._sources = _compiled_sources(m, varying)
        if stabilization is not None:
            ab = np.array([2.0 * stabilization.alpha, stabilization.beta ** 2])
        else:
            ab = np.zeros(2)
        self._ab, self._stab = ab, int(stabilization is not None)
        pairs = fast._w2_work
        self._work_e = np.concatenate([e for e, _ in pairs]).astype(np.int64) if pairs \
            else np.zeros(0, dtype=np.int64)
        self._work_f = np.concatenate([f for _, f in pairs]).astype(np.int64) if pairs \
            else np.zeros(0, dtype=np.int64)
        self._work_off = np.r_[0, np.cumsum([e.size for e, _ in pairs])].astype(np.int64)
        K = _kernels()
        from ._jit import first_class
        # (addresses resolved once: numba would look each up at every compiled call)
        self._program = first_class(parts["program"] or K.no_program, K.PROGRAM_SIGNATURE)
        self._qrate = first_class(parts["rate_kernel"] or K.no_rate, K.RATE_SIGNATURE)
        self._source_kernels = tuple(
            first_class(k, K.SOURCE_SIGNATURE) for k in
            (*self._sources[0],
             *(K.no_sources,) * (K.MAX_FAMILIES - len(self._sources[0]))))
        self._listed = None                   # evaluate()'s typed lists (made once)
        self.evaluations = 0                  # evaluate()'s answers
        self._mon = np.zeros(5)
        self._head = self._tail = None        # pack()'s constant parts (made once)
        self._rec = None                      # advance()'s records of the steps
        self._x = None                        # DOP853's extra stages: (XA, XC, room)
        self._extra = None                    # ((t_old, t), the last step's, if made)
        # (the interpolant's coefficients: RK45's P, DOP853's D; scipy's own arrays)
        self._interpolation = np.ascontiguousarray(
            DOP853.D if solver_cls is DOP853 else RK45.P, dtype=float)

    def evaluate(self, t: float, x: np.ndarray) -> np.ndarray | None:
        """dX/dt by the compiled right-hand side, called from Python (:func:`bondgraph.
        _rk_kernels.fused_rhs_listed`), or None where it cannot answer (the caller then
        takes the Python path, which handles the failure). The same arithmetic as the
        Python path's, bit for bit where both answer."""
        got = self.pack()
        if got is None:
            return None
        D, lu_state = got
        K = _kernels()
        if self._listed is None:
            self._listed = K.kernel_lists(self._program, self._qrate,
                                          *self._source_kernels)
        x = np.ascontiguousarray(x, dtype=float)
        if not x.flags.writeable:             # (the kernel is compiled for writeable ones)
            x = x.copy()
        with signal_safe():
            xdot, ok = K.fused_rhs_listed(float(t), x, *self._listed, D)
        if not ok:                            # (the Python path counts its own)
            return None
        if lu_state is not None:              # (one factorisation, as the Python path's)
            lu_state.since_setup += 1
        self.evaluations += 1
        return xdot

    def grouped_differences(self, t: float, y: np.ndarray, f0: np.ndarray, h: np.ndarray,
                            groups: tuple, J: np.ndarray) -> int:
        """A finite-difference Jacobian's columns by the compiled right-hand side in one
        call (:func:`bondgraph._rk_kernels.grouped_differences_listed`; ``groups`` as
        :meth:`bondgraph._jacobian.GroupedDifferences.packed` gives them), written into
        ``J``: the number of groups answered, in order (0 where the compiled path cannot
        answer; the caller takes the rest in Python). Each answered group counts as one
        evaluation, as :meth:`evaluate`'s."""
        got = self.pack()
        if got is None:
            return 0
        D, lu_state = got
        K = _kernels()
        if self._listed is None:
            self._listed = K.kernel_lists(self._program, self._qrate,
                                          *self._source_kernels)
        with signal_safe():
            done = int(K.grouped_differences_listed(float(t), y, f0, h, *groups,
                                                    *self._listed, D, J))
        if lu_state is not None:              # (one factorisation each, as evaluate's)
            lu_state.since_setup += done
        self.evaluations += done
        return done

    def pack(self):
        """The compiled right-hand side's arrays (:func:`bondgraph._rk_kernels.
        fused_rhs`) at the current pivot order, or None where there is none yet."""
        args = self.fast._fused_args(self.rhs.workspace)
        if args is None:
            return None
        _, state, _, packed, S, rate_terms = args
        if self._head is None:
            p, fast, m = self.parts, self.fast, self.model

            def ints(a, dim=1):
                a = np.asarray(a, dtype=np.int64)
                return np.ascontiguousarray(a.reshape(a.shape[0], -1)
                                            if dim == 2 and a.ndim != 2 else a)

            def flts(a):
                return np.ascontiguousarray(a, dtype=np.float64)
            dims = ints([p["n"], p["n_moduli"], p["n_phi"], m.n_u2, rate_terms, self._stab,
                         m.functions.n_kin])
            (vd, vi, vf), (rd, ri_, rf) = p["values"], p["rates"]
            self._head = (dims, ints(p["xi"]), ints(vd, 2), ints(vi), flts(vf), ints(rd, 2),
                          ints(ri_), flts(rf), ints(p["dest_p"]), ints(p["ri"]),
                          ints(p["copy_dst"]), ints(p["copy_src"]), ints(p["q_state"], 2),
                          ints(p["q_flow"], 2), ints(p["q_dst"], 2), ints(fast._w1_kin))
            aff = p["phi_affine"]
            if aff is None:
                aff = (np.zeros(0), np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(0))
            self._tail = (flts(self._U1), flts(self._dU1), flts(self._ab),
                          ints(fast._w2_X), self._work_e, self._work_f, self._work_off,
                          *self._sources[1:], ints(aff[0]), ints(aff[1], 2),
                          flts(aff[2]), flts(aff[3]))
        I_all, F_all, IO, FO = packed
        D = (*self._head, I_all, F_all, IO, FO, S[0], S[1], S[2], self.fast._src0.copy(),
             *self._tail)
        return D, state

    def derivative(self, t: float, x: np.ndarray) -> np.ndarray | None:
        """dX/dt by the compiled right-hand side alone (None where it cannot answer):
        for tests that compare it with :meth:`bondgraph.sparse.SparseReduction.
        derivative`."""
        got = self.pack()
        if got is None:
            return None
        K = _kernels()
        xdot, ok = K.fused_rhs(float(t), np.asarray(x, dtype=float), self._program,
                               self._qrate, *self._source_kernels, got[0])
        return xdot if ok else None

    def dense_output(self, solver):
        """The solver's interpolant of its last step (``solver.dense_output()``), with
        DOP853's extra stages taken from the compiled call that made the step where it
        evaluated them (:func:`~bondgraph._rk_kernels.rk_advance`'s ``X_out``): scipy's
        own construction, its three evaluations replaced by those values (already
        counted), so the same interpolant without three evaluations through Python."""
        got = self._extra
        if got is None or got[0] != (solver.t_old, solver.t):
            return solver.dense_output()
        h = solver.h_previous
        asked = iter(zip(solver.t_old + DOP853.C_EXTRA * h, got[1]))
        own = solver.fun

        def fun(t, y):                   # (scipy asks for the extra stages in order;
            at, row = next(asked, (None, None))   # anything else: its own evaluation)
            return row.copy() if at is not None and t == at else own(t, y)
        solver.fun = fun
        try:
            return solver.dense_output()
        finally:
            solver.fun = own
            self._extra = None

    def advance(self, solver, t_stop: float, max_k: int, stiffness, scan=None,
                dense: bool = False, output=None, segments=None) -> int:
        """Take up to ``max_k`` steps of ``solver`` compiled (stopping after a step that
        ends at or past ``t_stop``, at the end of the span, or when the stiffness test
        fires: :attr:`stiff_now`); the number of steps taken (0: the caller takes the
        next step with ``solver.step()``, which is then due).

        ``scan(ts, ys)``: the index of the first of the accepted steps (their end times
        and states) that the caller must see alone, or None (the run's events:
        :meth:`bondgraph._events.EventTracker.scan`); the solver is then left at the
        end of that step, as if the call had stopped there.

        DOP853: where the last step will be interpolated (an output time inside it, or
        ``dense``: every step's interpolant is kept), the call also evaluates its extra
        stages, which :meth:`dense_output` then uses (with events, unless the scan cuts
        the call back to an earlier step: then they are dropped, and not counted).

        ``output`` (a :class:`bondgraph._output.OutputGrid`; without ``scan`` and
        ``dense``): the call fills the grid's times that its steps reach (from each
        step's end state or interpolant, as scipy's), writing the states into the
        grid's rows, and does not stop at output times (``t_stop`` is not used); the
        caller fills those of a step the call leaves to it, as before.

        ``segments`` (the run's next segments' ends and starts, as
        :func:`~bondgraph._rk_kernels.rk_advance`'s ``R_end`` and ``R_start``; without
        ``scan`` and ``dense``): the call goes on into them as a new solver would
        (:attr:`restarts` of them; the solver's ``t_bound`` is then the last one's)."""
        self.stiff_now = False
        self.restarts = 0                 # (segments the last call went on into)
        self._extra = None
        if self._fallback:
            self._fallback = False
            return 0
        got = self.pack()
        if got is None:
            return 0
        D, lu_state = got
        K = _kernels()
        A, B, C, E, E3, E5, dop = self.tableau
        n = solver.n
        atol = np.array(np.broadcast_to(np.asarray(solver.atol, dtype=float), (n,)))
        mon = self._mon
        boundary = stiffness.boundary or 0.0
        mon[:] = (stiffness.count, stiffness.calm, stiffness.limited, stiffness.h_lambda,
                  np.nan if stiffness.stiff_at is None else stiffness.stiff_at)
        rec = self._records(solver, max_k if scan is not None else 0)
        extra = self._extras(solver, n, dop)
        if output is not None and scan is None and not dense:
            G_t, G_y = output.pending()
            t_stop = np.inf
        else:
            G_t, G_y = np.zeros(0), np.zeros((0, n))
        R_end, R_start = (np.zeros(0), np.zeros(0)) if segments is None or \
            scan is not None or dense else segments
        if not solver.y.flags.writeable:     # (scipy keeps a caller's read-only x0:
            solver.y = solver.y.copy()       # the kernel is compiled for writeable ones)
        t0, y0 = float(solver.t), solver.y
        with signal_safe():
            code, k, nev, t, y, f, h_abs, h_prev, t_old, y_old, stiff, done, filled, \
                seg, t_bound = \
                K.rk_advance(
                    self._program, self._qrate, *self._source_kernels, D,
                    A, B, C, E, E3, E5, dop,
                    float(solver.t), solver.y, solver.f, float(solver.h_abs),
                    float(solver.t_bound), float(solver.rtol), atol, float(solver.max_step),
                    float(solver.error_exponent), solver.K, float(t_stop), int(max_k), mon,
                    float(boundary), float(stiffness.span), *rec, *extra, bool(dense),
                    G_t, G_y, self._interpolation, R_end, R_start,
                    float(solver.error_estimator_order))
        self.restarts = int(seg)
        if seg:
            solver.t_bound = float(t_bound)
        if filled:
            output.take(filled)
        if k and scan is not None:
            T_rec, Y_rec, K_rec, H_rec, N_rec, M_rec = rec
            cut = scan(T_rec[:k], Y_rec[:k])
            if cut is not None and cut < k - 1:      # back to the end of step `cut`
                # (the extra stages made, if any, are the last step's: not kept, nor
                # counted: the evaluations are those up to step `cut`)
                k, code, stiff, done = cut + 1, K.DONE, False, False
                t, y, f = float(T_rec[cut]), Y_rec[cut].copy(), K_rec[cut, -1].copy()
                h_abs, h_prev, nev = float(H_rec[cut, 0]), float(H_rec[cut, 1]), \
                    int(N_rec[cut])
                t_old, y_old = (float(T_rec[cut - 1]), Y_rec[cut - 1].copy()) if cut \
                    else (t0, y0)
                solver.K[:, :] = K_rec[cut]
                mon[:] = M_rec[cut]
        # the evaluations of the steps taken count as the scipy path counts them (those
        # of a failed attempt are made again by the solver's own step)
        solver.nfev += nev
        self.rhs.calls += nev
        if lu_state is not None:
            lu_state.since_setup += nev
        if boundary:
            stiffness.count, stiffness.calm = int(mon[0]), int(mon[1])
            stiffness.limited, stiffness.h_lambda = int(mon[2]), float(mon[3])
            if not np.isnan(mon[4]):
                stiffness.stiff_at = float(mon[4])
        if k:
            solver.t, solver.y, solver.f = t, y, f
            solver.h_abs, solver.h_previous = h_abs, h_prev
            solver.t_old, solver.y_old = t_old, y_old
            if done:
                self._extra = ((t_old, t), extra[2].copy())
            if solver.direction * (t - solver.t_bound) >= 0:
                solver.status = "finished"
            self.steps += k
            self.stiff_now = bool(stiff)
        self._fallback = code == K.FAILED and k > 0
        if code == K.FAILED:
            self.fallbacks += 1
        return k

    def _extras(self, solver, n: int, wanted: bool) -> tuple:
        """:func:`~bondgraph._rk_kernels.rk_advance`'s (XA, XC, X_out): DOP853's extra
        stages' coefficients and room for them, or none (no rows)."""
        if not wanted:
            return self._no_extra(n)
        if self._x is None or self._x[2].shape[1] != n:
            self._x = (np.ascontiguousarray(DOP853.A_EXTRA, dtype=float),
                       np.ascontiguousarray(DOP853.C_EXTRA, dtype=float),
                       np.empty((DOP853.A_EXTRA.shape[0], n)))
        return self._x

    @staticmethod
    def _no_extra(n: int) -> tuple:
        return np.zeros((0, 0)), np.zeros(0), np.zeros((0, n))

    def _records(self, solver, m: int) -> tuple:
        """:func:`~bondgraph._rk_kernels.rk_advance`'s record arrays for ``m`` steps
        (m = 0: none), kept from call to call."""
        n, s = solver.n, solver.K.shape[0]

        def arrays(m):
            return (np.empty(m), np.empty((m, n)), np.empty((m, s, n)), np.empty((m, 2)),
                    np.empty(m, dtype=np.int64), np.empty((m, 5)))
        if m == 0:
            return arrays(0)
        if self._rec is None or self._rec[0].size < m or self._rec[1].shape[1] != n:
            self._rec = arrays(m)
        return tuple(a[:m] for a in self._rec)


def _compiled_sources(model, varying) -> tuple:
    """(the kernels, one per family, then the compiled sources' packed arrays of
    :data:`bondgraph._rk_kernels.PACKED`: the offsets (3, families + 1) of each
    family's ints, flts and outputs, the ints, the flts, the U_1 entries and the
    outputs that fill them, the dU_1/dt entries and theirs) of a model's sources with a
    compiled kernel (:class:`~bondgraph.primitives.sources.CompiledSource`:
    state-dependent ones, standard functions of time)."""
    got = [(name, sl, law.compiled) for name, sl, law in varying
           if law.compiled is not None]
    f = CompiledFamilies.pack(got, model.state_slices, _kernels().MAX_FAMILIES)
    return f.kernels, f.offsets, f.ints, f.flts, f.dest, f.src, f.rdest, f.rsrc


def diagnostics(loop: "CompiledLoop | None", reason: str, rhs=None) -> dict[str, Any]:
    """The run's diagnostics of the compiled loop: whether it ran, why not, its steps,
    the times it handed a step to scipy (``compiled_fallbacks``), and the evaluations
    of the one-call compiled path whose pivot order failed its checks
    (``pivot_fallbacks``, from the run's workspace ``rhs.workspace``; 0 without one),
    and the evaluations scipy's own steps asked for that the compiled right-hand side
    answered (``compiled_evaluations``: :meth:`CompiledLoop.evaluate`)."""
    ws = getattr(rhs, "workspace", None)
    return {"compiled_loop": loop is not None, "compiled_loop_reason": reason,
            "compiled_steps": loop.steps if loop is not None else 0,
            "compiled_fallbacks": loop.fallbacks if loop is not None else 0,
            "pivot_fallbacks": ws.pivot_fallbacks() if ws is not None else 0,
            "compiled_evaluations": getattr(getattr(rhs, "compiled", None),
                                            "evaluations", 0)}
