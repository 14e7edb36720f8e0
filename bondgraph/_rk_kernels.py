"""The compiled explicit Runge-Kutta loop and the compiled right-hand side it calls
(arrays and numbers only; imported by :mod:`bondgraph._fastrk` where numba is enabled,
so that ``import bondgraph`` does not import numba).

- :func:`fused_rhs`: dX/dt of a model on the one-call path of
  :mod:`bondgraph._sparse_compiled` as one compiled function: the moduli and Phi by the
  element library's compiled program (passed in: the core does not know it), the
  velocity stage (:func:`bondgraph._sparse_kernels._first`), the kinematic rates (copies
  of flows and one compiled rate kernel, passed in), the moduli's rates (the program
  again), the acceleration stage (``_second``) and the work powers. The same kernels in
  the same order as :meth:`~bondgraph.sparse.SparseReduction.derivative`, so the same
  numbers.
- :func:`rk_advance`: steps of scipy's ``RK45`` or ``DOP853`` (their tableaux passed in
  from the scipy classes; the same error norm, step-size controller and step-size
  floor as ``scipy.integrate._ivp.rk``) until an output time is passed (or, filling
  the output grid itself with each step's interpolant as scipy makes and evaluates it,
  past every output time), the end of the span, a number of steps, the stiffness test
  fires, or an evaluation fails (then the
  state is that of the last accepted step and the caller takes the next step in
  Python). Hairer's stiffness test of :class:`bondgraph._diagnosis.StiffnessMonitor`
  runs after every accepted step, as there.

Symbols as in scipy's ``rk.py``: A, B, C (the tableau), E (RK45's error weights),
E3, E5 (DOP853's), K (stages in rows, the last row f(t + h, y_new)).

numba checks each cached kernel against its own file only, but these inline ``_first``,
``_second`` and the LU kernels of :mod:`bondgraph._sparse_kernels` and
:mod:`bondgraph._lu_kernels`: :mod:`bondgraph._jit` removes every kernel's cache when
any kernel source changes (once seen: the old pivot test kept in the compiled loop).
"""

from __future__ import annotations

import numpy as np
from ._jit import List, njit, types

from ._sparse_kernels import _first, _second

# Explicit signatures: the kernels passed in are first-class functions of these types
# (not dispatchers), so that the loop is compiled once and cached like every kernel.
_f8, _i8 = types.float64, types.int64
_V, _I, _M, _IM = _f8[::1], _i8[::1], _f8[:, ::1], _i8[:, ::1]
PROGRAM_SIGNATURE = types.UniTuple(_i8, 2)(_M, _M, types.boolean, _IM, _I, _V, _V, _V)
"""The element library's program (elements.kernels.compiled.program): (states (n, 7), their
rates (n, 7), rates?, desc, ints, flts, out0, out1) -> a locked gimbal (unused here)."""
RATE_SIGNATURE = _M(_M, _M)
"""A vectorised kinematic rate kernel: (states (n, d), flows (n, k)) -> rates (n, d)."""
SOURCE_SIGNATURE = types.void(_f8, _V, _I, _V, _V)
"""A family of state-dependent sources' compiled kernel
(:class:`bondgraph.primitives.sources.CompiledSource`): (t, x, ints, flts, out) -> None."""
PROGRAM, RATE = types.FunctionType(PROGRAM_SIGNATURE), types.FunctionType(RATE_SIGNATURE)
MAX_FAMILIES = 4
"""Families of compiled sources (kernels) a model may have in the compiled loop."""
SOURCE = types.FunctionType(SOURCE_SIGNATURE)
# (four arguments, not a tuple: numba warns at every call that takes a tuple of them)
PACKED = types.Tuple([_I, _I, _IM, _I, _V, _IM, _I, _V, _I, _I, _I, _I, _IM, _IM, _IM, _I,
                      _I, _V, _I, _I, _I, _I, _V, _V, _V, _V, _V, _I, _I, _I, _I,
                      _IM, _I, _V, _I, _I, _I, _I, _I, _IM, _M, _V])
"""The arrays of a model's compiled right-hand side (bondgraph._fastrk.CompiledLoop.pack);
entries 31 to 37: the compiled sources' offsets (3, MAX_FAMILIES + 1: each family's part
of the ints, of the flts and of the outputs), ints, flts, the pairs (U_1 entry, output)
of their values and those (dU_1/dt entry, output) of the rates that some give; the last
four: the affine position constraints computed beside
the program (couplings: Phi[dest] = sum coef x[index] + constant; dest (k,), index and
coef (k, m), constant (k,); m at most :data:`AFFINE_TERMS`)."""
AFFINE_TERMS = 7
"""The most terms of an affine position constraint in the compiled right-hand side: up to
7, a sum from the first term on is numpy's (Python path: ``(coef * x[idx]).sum(axis=1)``)
to the last bit; numpy sums 8 and more in another order."""

SAFETY = 0.9         # scipy.integrate._ivp.rk: SAFETY, MIN_FACTOR, MAX_FACTOR
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0

# rk_advance's end codes
DONE, FAILED = 0, 1
# the stiffness monitor's state (a float array): count, calm, limited, h |lambda| max,
# the time it fired (NaN: not yet)
M_COUNT, M_CALM, M_LIMITED, M_HLAMBDA, M_STIFF_AT = range(5)
STIFF_STEPS, RESET_AFTER = 15, 6      # StiffnessMonitor's
_NOT_FULL = np.bool_(False)  # _second's full: a literal False would compile it once more


@njit(types.Tuple([_V, types.boolean])(_f8, _V, PROGRAM, RATE, SOURCE, SOURCE, SOURCE, SOURCE,
                                        PACKED), cache=True,
      error_model="numpy")
def fused_rhs(t, x, prog, qrate, s0, s1, s2, s3, D):
    """(dX/dt, ok) at (t, x) of the model packed in ``D`` (see
    :class:`bondgraph._fastrk.CompiledRHS`); ok False where the Python path would not
    return this evaluation's dX/dt (a stage failed, a pivot check failed or a refined
    solve was not accepted, a non-finite value): the caller then hands the step to
    it."""
    (dims, xi, v_desc, v_ints, v_flts, r_desc, r_ints, r_flts, dest_p, ri, copy_dst,
     copy_src, q_state, q_flow, q_dst, w1_kin, I_all, F_all, IO, FO, S_ints, S_off,
     t_coef, src, U1c, dU1, ab, w2_X, work_e, work_f, work_off, s_off, s_ints, s_flts,
     s_dest, s_from, s_rdest, s_rfrom, a_dest, a_idx, a_coef, a_const) = D
    n_b, n_mod, n_phi, n_u2, rate_terms, stab, n_kin = (dims[0], dims[1], dims[2],
                                                        dims[3], dims[4], dims[5],
                                                        dims[6])
    xdot = np.empty(x.size)
    sx = 0.0
    for i in range(x.size):
        sx += x[i]
    if not np.isfinite(sx) or not np.isfinite(t):
        return xdot, False
    # the moduli and Phi (StateFunctions.moduli_and_phi with a fused context)
    states = np.empty((n_b, 7))
    for i in range(n_b):
        for k in range(7):
            states[i, k] = x[xi[7 * i + k]]
    moduli = np.empty(n_mod)
    phi_p = np.empty(n_phi)
    prog(states, states, False, v_desc, v_ints, v_flts, moduli, phi_p)
    phi = np.full(n_u2, np.nan)
    for i in range(n_phi):
        phi[dest_p[i]] = phi_p[i]
    # the affine ones (couplings), summed in numpy's order (AFFINE_TERMS)
    for i in range(a_dest.size):
        s = a_coef[i, 0] * x[a_idx[i, 0]]
        for m in range(1, a_idx.shape[1]):
            s += a_coef[i, m] * x[a_idx[i, m]]
        phi[a_dest[i]] = s + a_const[i]
    # the state-dependent sources (SourceLaw.compiled: a kernel per family), the others
    # constant
    if s_dest.size:
        U1 = U1c.copy()
        out = np.empty(s_off[2, MAX_FAMILIES])
        for k in range(MAX_FAMILIES):
            if s_off[2, k + 1] > s_off[2, k]:
                ints = s_ints[s_off[0, k]:s_off[0, k + 1]]
                flts = s_flts[s_off[1, k]:s_off[1, k + 1]]
                part = out[s_off[2, k]:s_off[2, k + 1]]
                if k == 0:
                    s0(t, x, ints, flts, part)
                elif k == 1:
                    s1(t, x, ints, flts, part)
                elif k == 2:
                    s2(t, x, ints, flts, part)
                else:
                    s3(t, x, ints, flts, part)
        for i in range(s_dest.size):
            U1[s_dest[i]] = out[s_from[i]]
        if s_rdest.size:
            dU1 = dU1.copy()
            for i in range(s_rdest.size):
                dU1[s_rdest[i]] = out[s_rfrom[i]]
    else:
        U1 = U1c
    work, w1, status = _first(x, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off,
                              t_coef)
    if status != 0:
        return xdot, False
    # the kinematic rates (StateFunctions.kinematic_rates): copies, then one kernel
    kin = np.empty(n_kin)
    for i in range(copy_dst.size):
        kin[copy_dst[i]] = w1[w1_kin[copy_src[i]]]
    nq = q_state.shape[0]
    if nq:
        q = np.empty((nq, q_state.shape[1]))
        om = np.empty((nq, q_flow.shape[1]))
        for i in range(nq):
            for k in range(q_state.shape[1]):
                q[i, k] = x[q_state[i, k]]
            for k in range(q_flow.shape[1]):
                om[i, k] = w1[w1_kin[q_flow[i, k]]]
        r = qrate(q, om)
        for i in range(nq):
            for k in range(q_dst.shape[1]):
                kin[q_dst[i, k]] = r[i, k]
    if rate_terms:
        srates = np.empty((n_b, 7))
        for i in range(n_b):
            for k in range(7):
                srates[i, k] = kin[ri[7 * i + k]]
        rates = np.empty(n_mod)
        none = np.empty(0)
        prog(states, srates, True, r_desc, r_ints, r_flts, rates, none)
    else:
        rates = np.zeros(0)
    w, y, status = _second(work, src, rates, w1, dU1, phi, ab[0], ab[1], stab != 0,
                           I_all, F_all, IO, FO, S_ints, S_off, _NOT_FULL)
    if status != 0:
        return xdot, False
    nX = w2_X.size
    for i in range(nX):
        xdot[i] = w[w2_X[i]]
    for i in range(n_kin):
        xdot[nX + i] = kin[i]
    for p in range(work_off.size - 1):
        s = 0.0
        for j in range(work_off[p], work_off[p + 1]):
            s += w[work_e[j]] * w[work_f[j]]
        xdot[nX + n_kin + p] = s
    sd = 0.0
    for i in range(xdot.size):
        sd += xdot[i]
    return xdot, np.isfinite(sd)


@njit(cache=True)
def kernel_lists(program, rate, s0, s1, s2, s3):
    """The typed lists :func:`fused_rhs_listed` takes, made in compiled code (so that
    numba's list methods for these item types are compiled once, with this function,
    and cached, not at each process's first list)."""
    programs = List.empty_list(PROGRAM)
    programs.append(program)
    rates = List.empty_list(RATE)
    rates.append(rate)
    sources = List.empty_list(SOURCE)
    sources.append(s0)
    sources.append(s1)
    sources.append(s2)
    sources.append(s3)
    return programs, rates, sources


@njit(cache=True)
def fused_rhs_listed(t, x, programs, rates, sources, D):
    """:func:`fused_rhs` with its kernels in numba typed lists (``programs[0]``,
    ``rates[0]``, ``sources[0..3]``), for a caller in Python: a typed list crosses from
    Python in one pointer, where each first-class function argument is looked up by
    numba at every call (about 3 us each, six a call: more than the evaluation of a
    small mechanism). Compiled when first called."""
    return fused_rhs(t, x, programs[0], rates[0], sources[0], sources[1], sources[2],
                     sources[3], D)


@njit(cache=True, error_model="numpy")
def grouped_differences_listed(t, y, f0, h, g_off, g_cols, r_off, g_rows, g_at, programs,
                               rates, sources, D, J):
    """Forward differences of :func:`fused_rhs` in groups of columns, into ``J`` (n, n):
    group g perturbs the states ``g_cols[g_off[g]:g_off[g + 1]]`` by ``h`` at once and
    sets ``J[rows, at] = (f(y + h e_g) - f0)[rows] / h[at]`` for its entries
    ``g_rows[r_off[g]:r_off[g + 1]]``, ``g_at[...]`` (each row has one column of the
    group), as :class:`bondgraph._jacobian.GroupedDifferences` does in Python: the same
    arithmetic, so the same numbers. The groups answered, in order (fewer than all where
    an evaluation failed: the caller takes the rest); the kernels in typed lists, as
    :func:`fused_rhs_listed`'s, and ``D`` unboxed once for all groups."""
    n_groups = g_off.size - 1
    for g in range(n_groups):
        yp = y.copy()
        for k in range(g_off[g], g_off[g + 1]):
            c = g_cols[k]
            yp[c] += h[c]
        f, ok = fused_rhs(t, yp, programs[0], rates[0], sources[0], sources[1], sources[2],
                          sources[3], D)
        if not ok:
            return g
        for k in range(r_off[g], r_off[g + 1]):
            r = g_rows[k]
            a = g_at[k]
            J[r, a] = (f[r] - f0[r]) / h[a]
    return n_groups


@njit(cache=True, error_model="numpy")
def _norm(v):
    """np.linalg.norm of a vector, as numpy computes it: sqrt(v . v)."""
    return np.sqrt(np.dot(v, v))


@njit(cache=True, error_model="numpy")
def _error_norm(K, h, scale, dop, E, E3, E5):
    """scipy's ``_estimate_error_norm``: RK45's RMS norm of h K^T E / scale, or
    DOP853's blend of its 5th- and 3rd-order estimates."""
    n = scale.size
    if not dop:
        err = np.dot(K.T, E) * h / scale
        return _norm(err) / n ** 0.5
    e5 = np.dot(K.T, E5) / scale
    e3 = np.dot(K.T, E3) / scale
    n5 = _norm(e5) ** 2
    n3 = _norm(e3) ** 2
    if n5 == 0.0 and n3 == 0.0:
        return 0.0
    return np.abs(h) * n5 / np.sqrt((n5 + 0.01 * n3) * n)


@njit(cache=True, error_model="numpy")
def _initial_step(prog, qrate, s0, s1, s2, s3, D, t0, y0, t_bound, max_step, f0, order,
                  rtol, atol):
    """scipy's ``select_initial_step`` (forward in time; the same sums, numpy's norm),
    with its one evaluation here: (h_abs, evaluated: False where it failed)."""
    n = y0.size
    if n == 0:
        return np.inf, True
    interval = np.abs(t_bound - t0)
    if interval == 0.0:
        return 0.0, True
    scale = atol + np.abs(y0) * rtol
    d0 = _norm(y0 / scale) / n ** 0.5
    d1 = _norm(f0 / scale) / n ** 0.5
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = 1e-6
    else:
        h0 = 0.01 * d0 / d1
    h0 = min(h0, interval)
    y1 = y0 + h0 * f0
    f1, ok = fused_rhs(t0 + h0, y1, prog, qrate, s0, s1, s2, s3, D)
    if not ok:
        return 0.0, False
    d2 = _norm((f1 - f0) / scale) / n ** 0.5 / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1 / (order + 1))
    return min(100 * h0, h1, interval, max_step), True


@njit(cache=True, error_model="numpy")
def _stiff_test(mon, K, A, y_old, y, h, span, boundary, t):
    """StiffnessMonitor.step after an accepted step of size h: True when it fires."""
    s = A.shape[0]
    rho = 0.0
    if h != 0.0 and np.abs(h) <= 1e-2 * span:
        y_s = y_old + h * np.dot(K[:s - 1].T, np.ascontiguousarray(A[s - 1, :s - 1]))
        den = _norm(y - y_s)
        num = _norm(K[s] - K[s - 1])
        rho = np.abs(h) * num / den if den > 0 and np.isfinite(num) else 0.0
    if rho > boundary:
        mon[M_LIMITED] += 1
        mon[M_CALM] = 0
        mon[M_COUNT] += 1
        mon[M_HLAMBDA] = max(mon[M_HLAMBDA], rho)
        if mon[M_COUNT] == STIFF_STEPS and np.isnan(mon[M_STIFF_AT]):
            mon[M_STIFF_AT] = t
            return True
    else:
        mon[M_CALM] += 1
        if mon[M_CALM] >= RESET_AFTER:
            mon[M_COUNT] = 0
    return False


@njit(cache=True, inline="always")
def _with_rows(K, extra):
    """A new array of K's rows and then ``extra`` rows more (not set)."""
    Kx = np.empty((K.shape[0] + extra, K.shape[1]))
    for j in range(K.shape[0]):
        for i in range(K.shape[1]):
            Kx[j, i] = K[j, i]
    return Kx


@njit(cache=True, inline="always")
def _extra_stages(prog, qrate, s0, s1, s2, s3, D, K, XA, XC, X_out, t_old, y_old, h):
    """DOP853's extra stages of the step from (t_old, y_old) of size ``h`` with stages
    ``K`` (its ns + 1 rows), into ``X_out``, as scipy's ``DOP853._dense_output_impl``
    evaluates them: stage s from the stages before it (np.dot: the same BLAS sums).
    False where one failed. (Inlined: the one place, in :func:`rk_advance`, where the
    loop's kernels are linked, so that no other kernel compiles ``fused_rhs`` again.)"""
    n = y_old.size
    ns = K.shape[0]
    nx = XA.shape[0]
    Kx = _with_rows(K, nx)
    for j in range(nx):
        s = ns + j
        dy = np.dot(Kx[:s].T, np.ascontiguousarray(XA[j, :s])) * h
        ks, ok = fused_rhs(t_old + XC[j] * h, y_old + dy, prog, qrate, s0, s1, s2, s3, D)
        if not ok:
            return False
        for i in range(n):
            Kx[s, i] = ks[i]
            X_out[j, i] = ks[i]
    return True


@njit(cache=True)
def _output_inside(G_t, n_out, t):
    """(the count of output times ``G_t[n_out:]`` up to ``t``, whether one of them is
    strictly before ``t``: the step's interpolant is needed)."""
    m = n_out
    inside = False
    while m < G_t.size and G_t[m] <= t:
        if G_t[m] != t:
            inside = True
        m += 1
    return m, inside


@njit(cache=True)
def _outputs(dop, K, X_out, DI, Q, t_old, y_old, t, y, h, G_t, G_y, n_out, m, inside):
    """Write the states at the output times ``G_t[n_out:m]`` (up to ``t``) into
    ``G_y`` (see :func:`rk_advance`) for the step from (t_old, y_old) to (t, y) of size
    ``h`` and stages ``K`` (and, for DOP853 where ``inside``, its extra stages
    ``X_out``)."""
    n = y.size
    if inside:
        _interpolant(dop, K, X_out, DI, Q, y_old, y, h)
    hh = t - t_old                      # (scipy's DenseOutput.h)
    for k in range(n_out, m):
        if G_t[k] == t:
            for i in range(n):
                G_y[k, i] = y[i]
        else:
            _interpolate(dop, Q, y_old, (G_t[k] - t_old) / hh, hh, G_y[k])


@njit(cache=True)
def _interpolant(dop, K, X_out, DI, Q, y_old, y, h):
    """The step's interpolant into ``Q`` (n rows), as scipy makes it: RK45's
    ``Q = K^T P`` (``DI`` = P); DOP853's F (``DI`` = D; from the stages ``K`` and the
    extra stages ``X_out``, F transposed into Q)."""
    n = y.size
    if not dop:
        P = np.dot(K.T, DI)              # (loops copy it: see K_out's)
        for i in range(n):
            for j in range(P.shape[1]):
                Q[i, j] = P[i, j]
        return
    ns = K.shape[0]
    nx = X_out.shape[0]
    Kx = _with_rows(K, nx)
    for j in range(nx):
        for i in range(n):
            Kx[ns + j, i] = X_out[j, i]
    F3 = h * np.dot(DI, Kx)
    for i in range(n):
        dy = y[i] - y_old[i]
        Q[i, 0] = dy
        Q[i, 1] = h * Kx[0, i] - dy
        Q[i, 2] = 2 * dy - h * (K[ns - 1, i] + Kx[0, i])
        for j in range(F3.shape[0]):
            Q[i, 3 + j] = F3[j, i]


@njit(cache=True)
def _interpolate(dop, Q, y_old, x, h, out):
    """The interpolant ``Q`` (:func:`_interpolant`) at ``x`` = (t - t_old) / h into
    ``out``, as scipy's ``RkDenseOutput`` (y_old + h Q [x, x^2, ...]) or
    ``Dop853DenseOutput`` (Horner's scheme from its last F, alternating x and 1 - x)."""
    n, m = Q.shape
    if not dop:
        for i in range(n):
            p = 1.0
            acc = 0.0
            for j in range(m):
                p *= x
                acc += Q[i, j] * p
            out[i] = h * acc + y_old[i]
        return
    for i in range(n):
        acc = 0.0
        for j in range(m):
            acc += Q[i, m - 1 - j]
            if j % 2 == 0:
                acc *= x
            else:
                acc *= 1.0 - x
        out[i] = acc + y_old[i]


@njit(types.Tuple([_i8, _i8, _i8, _f8, _V, _V, _f8, _f8, _f8, _V, types.boolean,
                    types.boolean, _i8, _i8, _f8])(
    PROGRAM, RATE, SOURCE, SOURCE, SOURCE, SOURCE, PACKED, _M, _V, _V, _V, _V, _V,
    types.boolean, _f8, _V, _V, _f8, _f8, _f8, _V, _f8, _f8, _M, _f8, _i8, _V, _f8, _f8,
    _V, _M, _f8[:, :, ::1], _M, _I, _M, _M, _V, _M, types.boolean, _V, _M, _M, _V, _V,
    _f8), cache=True, error_model="numpy")
def rk_advance(prog, qrate, s0, s1, s2, s3, D, A, B, C, E, E3, E5, dop, t, y, f, h_abs,
               t_bound, rtol, atol, max_step, err_exp, K_out, t_stop, max_k, mon, boundary,
               span, T_rec, Y_rec, K_rec, H_rec, N_rec, M_rec, XA, XC, X_out, dense_all,
               G_t, G_y, DI, R_end, R_start, order):
    """Steps of an explicit RK method from (t, y, f = f(t, y)) with the next step size
    ``h_abs``, as ``scipy.integrate._ivp.rk.RungeKutta._step_impl`` and
    ``OdeSolver.step`` take them (forward in time), until a step ends at or past
    ``t_stop`` or ``t_bound``, ``max_k`` steps are taken, the stiffness test fires
    (``boundary`` > 0: it runs), or an evaluation fails or the step size falls below
    its floor (code FAILED: nothing of the failed step is kept).

    Returns (code, steps, evaluations of the steps taken, t, y, f, h_abs, h_previous,
    t_old, y_old, stiff, extra, outputs, restarts, t_bound): the state after the last
    accepted step; ``K_out`` holds its stages (for its dense output and the stiffness
    test).

    ``R_end``, ``R_start`` (the run's next segments: each one's end, from the one after
    ``t_bound``, and where it starts, from the one after ``t_bound``; else size 0): a step
    that ends at ``t_bound`` with steps left to take starts the next segment here, as
    :func:`bondgraph._stepping.step_until_done` starts a new solver there (at its start,
    f evaluated there and scipy's initial step, ``select_initial_step`` of an ``order``
    estimator: :func:`_initial_step`), ``restarts`` times; where an evaluation of the
    restart fails, the loop ends at the segment's end and leaves the restart to the
    caller.

    ``G_t`` (sorted output times, all before ``t_stop``; or size 0): the state at each
    of them that an accepted step reaches is written into the rows of ``G_y``, in order
    (``outputs`` of them): the step's end state where a time is its end, else its
    interpolant as scipy builds and evaluates it (``DI``: RK45's ``P``, or DOP853's
    ``D`` with its extra stages evaluated here and counted; see :func:`_interpolate`).
    Where a step's extra stages fail, the loop stops after that step and leaves its
    output times to the caller.

    ``X_out`` with rows (DOP853's three, ``XA`` and ``XC`` its ``A_EXTRA`` and
    ``C_EXTRA``; else no rows): where the last step's interpolant will be needed (an
    output time strictly inside it, ``t_stop < t``, or ``dense_all``), its extra stages
    are evaluated here, as scipy's ``DOP853._dense_output_impl`` evaluates them (the
    same sums), into ``X_out``, counted in the evaluations, and ``extra`` is True; an
    extra stage that fails leaves them to scipy (``extra`` False, none counted).

    Where ``T_rec`` has room (``max_k`` rows in each; else size 0: nothing is recorded),
    every accepted step i is recorded: its end time and state (T_rec[i], Y_rec[i]), its
    stages (K_rec[i]), [the next step size, its own] (H_rec[i]), the evaluations up to
    it (N_rec[i]) and the stiffness monitor after it (M_rec[i]): the caller can cut the
    run back to any of them (:meth:`bondgraph._fastrk.CompiledLoop.advance`)."""
    record = T_rec.size > 0
    n = y.size
    ns = A.shape[0]                      # n_stages
    K = np.empty((ns + 1, n))
    scale = np.empty(n)
    steps = 0
    nev = 0
    h_prev = 0.0
    t_old = t
    y_old = y
    stiff = False
    n_out = np.int64(0)      # (a literal 0 would compile _outputs a second time)
    nx = X_out.shape[0]
    x_step = -1
    Q = np.empty((n, DI.shape[0] + 3 if dop else DI.shape[1]))
    seg = 0
    while steps < max_k:
        if t - t_bound >= 0:             # the next segment, from its start (see above)
            if seg >= R_start.size:
                break
            start = R_start[seg]
            if not t < start < R_end[seg]:   # (an empty segment, an ulp long: its
                start = np.nextafter(t, np.inf)  # step is of length 0, as scipy's)
            f0, ok = fused_rhs(start, y, prog, qrate, s0, s1, s2, s3, D)
            if not ok:
                break
            h0, ok = _initial_step(prog, qrate, s0, s1, s2, s3, D, start, y, R_end[seg],
                                   max_step, f0, order, rtol, atol)
            if not ok:
                break
            nev += 2
            t, f, h_abs, t_bound = start, f0, h0, R_end[seg]
            seg += 1
        min_step = 10 * np.abs(np.nextafter(t, np.inf) - t)
        if h_abs > max_step:
            ha = max_step
        elif h_abs < min_step:
            ha = min_step
        else:
            ha = h_abs
        accepted = False
        rejected = False
        ev = 0
        while not accepted:
            if ha < min_step:
                return (FAILED, steps, nev, t, y, f, h_abs, h_prev, t_old, y_old, stiff,
                        False, n_out, seg, t_bound)
            h = ha
            t_new = t + h
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            ha = np.abs(h)
            # rk_step
            for i in range(n):
                K[0, i] = f[i]
            for s in range(1, ns):
                # (np.dot as scipy's rk_step: the same BLAS sums, the same numbers)
                ytmp = y + np.dot(K[:s].T, np.ascontiguousarray(A[s, :s])) * h
                ks, ok = fused_rhs(t + C[s] * h, ytmp, prog, qrate, s0, s1, s2, s3, D)
                ev += 1
                if not ok:
                    return (FAILED, steps, nev, t, y, f, h_abs, h_prev, t_old, y_old, stiff,
                            False, n_out, seg, t_bound)
                for i in range(n):
                    K[s, i] = ks[i]
            y_new = y + h * np.dot(K[:ns].T, B)
            f_new, ok = fused_rhs(t + h, y_new, prog, qrate, s0, s1, s2, s3, D)
            ev += 1
            if not ok:
                return (FAILED, steps, nev, t, y, f, h_abs, h_prev, t_old, y_old, stiff,
                        False, n_out, seg, t_bound)
            for i in range(n):
                K[ns, i] = f_new[i]
            for i in range(n):
                scale[i] = atol[i] + max(np.abs(y[i]), np.abs(y_new[i])) * rtol
            err = _error_norm(K, h, scale, dop, E, E3, E5)
            if err < 1:
                if err == 0:
                    factor = MAX_FACTOR
                else:
                    factor = min(MAX_FACTOR, SAFETY * err ** err_exp)
                if rejected:
                    factor = min(1.0, factor)
                ha *= factor
                accepted = True
            else:
                g = SAFETY * err ** err_exp
                ha *= g if g > MIN_FACTOR else MIN_FACTOR    # (NaN: MIN_FACTOR, as max)
                rejected = True
        nev += ev
        steps += 1
        h_prev = h
        t_old = t
        y_old = y
        t = t_new
        y = y_new
        f = f_new
        h_abs = ha
        for j in range(ns + 1):          # (loops: a slice assignment compiles numba's
            for i in range(n):           # shape-error message)
                K_out[j, i] = K[j, i]
        if boundary > 0 and _stiff_test(mon, K, A, y_old, y, h, span, boundary, t):
            stiff = True
        if record:
            i = steps - 1
            T_rec[i] = t
            for c in range(n):           # (loops, as K_out's)
                Y_rec[i, c] = y[c]
                for j in range(ns + 1):
                    K_rec[i, j, c] = K[j, c]
            H_rec[i, 0] = h_abs
            H_rec[i, 1] = h_prev
            N_rec[i] = nev
            for j in range(mon.size):
                M_rec[i, j] = mon[j]
        finite = True
        for i in range(n):
            if not np.isfinite(y[i]):
                finite = False
        if not finite:                   # (the caller ends the run there)
            break
        if n_out < G_t.size and G_t[n_out] <= t:
            m, inside = _output_inside(G_t, n_out, t)
            if inside and nx:
                if not _extra_stages(prog, qrate, s0, s1, s2, s3, D, K, XA, XC, X_out,
                                     t_old, y_old, h):
                    break                # (an extra stage failed: the caller's step)
                nev += nx
                x_step = steps           # (X_out holds this step's extra stages)
            _outputs(dop, K, X_out, DI, Q, t_old, y_old, t, y, h, G_t, G_y, n_out, m,
                     inside)
            n_out = m
        if stiff:
            break
        if t >= t_stop or (t - t_bound >= 0 and seg >= R_start.size):
            break
    extra = False
    if nx and steps and x_step == steps:       # (made for the output times: counted)
        extra = True
    elif nx and steps and (dense_all or t_stop < t):
        # the last step's extra stages (K holds its stages, as K_out does)
        extra = _extra_stages(prog, qrate, s0, s1, s2, s3, D, K, XA, XC, X_out, t_old,
                              y_old, h_prev)
        if extra:
            nev += nx
    return (DONE, steps, nev, t, y, f, h_abs, h_prev, t_old, y_old, stiff, extra, n_out,
            seg, t_bound)


@njit(PROGRAM_SIGNATURE, cache=True)
def no_program(states, rates, want_rates, desc, ints, flts, out, phi):
    """The program of a model without moduli to compute (constant moduli, no Phi: a
    pure bond graph; never called with work to do)."""
    return 0, 0


@njit(RATE_SIGNATURE, cache=True)
def no_rate(q, om):
    """The rate kernel of a model without vectorised kinematic rates (never called)."""
    return q


@njit(SOURCE_SIGNATURE, cache=True)
def no_sources(t, x, ints, flts, out):
    """The source kernel of a model without compiled sources (never called)."""
    pass
