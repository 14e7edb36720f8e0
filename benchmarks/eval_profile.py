"""Where one compiled evaluation's time goes, and how often the compiled LU's pivot
order fails over a run, on the work-precision models (issue 36, item 1).

    OPENBLAS_NUM_THREADS=1 python benchmarks/eval_profile.py --profile panda three-body
    OPENBLAS_NUM_THREADS=1 python benchmarks/eval_profile.py --fallbacks

``--profile``: one evaluation of the compiled right-hand side (``fused_rhs``, the one the
compiled RK loop calls) and its parts, each timed inside numba (a compiled loop of calls,
so without Python's dispatch and boxing): the element program (the moduli and Phi; then
the moduli's rates), the velocity stage ``_first`` (the sources, the kept system's LU
factorisation and the velocity stage's bond variables), the LU factorisation alone, one
solve with its factors, and the acceleration stage ``_second``; then, beside them,
Pinocchio's ABA on the same robot (``pin.aba`` per call from Python, and the whole
right-hand side that scipy calls in the work-precision benchmark,
``PinocchioODE.rhs``), where Pinocchio imports. Best of 15 x N calls at the model's
initial state (Pinocchio: at its own initial state of the same motion). The kept
system's size and its LU's work are printed too: the updates of the left-looking
factorisation (one multiply-add each) and the terms that fill its entries.

``--fallbacks``: each model simulated as the work-precision benchmark does (0 to its
span, RK45 and DOP853 at rtol = atol = 1e-4, 1e-6, 1e-8, the compiled loop; after one
warm-up run, the best of 3), with the run's ``diagnostics``: accepted steps, those taken
compiled, ``compiled_fallbacks`` (steps handed to scipy) and ``pivot_fallbacks``
(evaluations whose pivot order failed its checks), and the run's seconds per
evaluation. A version of the package without these counts (``PYTHONPATH`` = an older
tree) shows the steps not taken compiled and "-".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):       # this working tree, unless told otherwise
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

MODELS = ("chain-10", "three-body", "panda", "solo12", "talos", "anymal_kinova")


def get_case(name: str):
    import wp_models
    for r in wp_models.ROBOTS:
        if r[0] == name:
            return wp_models.robot_case(*r, mujoco=False)
    if name == "three-body":
        return wp_models.three_body_case()
    return wp_models.chain_case(int(name.split("-")[1]), mujoco=False)


def _best(f, n=1000, repeat=15) -> float:
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        ts.append((time.perf_counter() - t0) / n)
    return min(ts) * 1e6


def _best_loop(f, n=200, repeat=15) -> float:
    """Per call (us) of ``f(n)``, a compiled loop of n calls: the best of ``repeat``."""
    f(2)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(n)
        ts.append((time.perf_counter() - t0) / n)
    return min(ts) * 1e6


_LOOPS: dict = {}


def _loops() -> dict:
    """Compiled loops of n calls of ``fused_rhs`` and of its parts (made once)."""
    if not _LOOPS:
        from numba import njit
        from bondgraph import _lu_kernels as LK
        from bondgraph import _rk_kernels as RK
        from bondgraph import _sparse_kernels as SK
        fr = RK.fused_rhs

        @njit
        def fused(n, t, x, prog, qrate, s0, s1, s2, s3, D):
            s = 0.0
            for _ in range(n):
                xd, ok = fr(t, x, prog, qrate, s0, s1, s2, s3, D)
                s += xd[0]
            return s

        @njit
        def program(n, prog, states, rates, rate, desc, ints, flts, out0, out1):
            for _ in range(n):
                prog(states, rates, rate, desc, ints, flts, out0, out1)
            return out0[0]

        @njit
        def first(n, x, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off, t_coef):
            s = 0.0
            for _ in range(n):
                work, w1, status = SK._first(x, moduli, U1, src, I_all, F_all, IO, FO,
                                             S_ints, S_off, t_coef)
                s += w1[0]
            return s

        @njit
        def second(n, work, src, rates, w1, dU1, phi, a2, b2, I_all, F_all, IO, FO, S_ints,
                   S_off):
            s = 0.0
            for _ in range(n):
                w, y, status = SK._second(work, src, rates, w1, dU1, phi, a2, b2, True,
                                          I_all, F_all, IO, FO, S_ints, S_off, False)
                s += w[0]
            return s

        @njit
        def factor(n, ext, S, O, t_coef, Lx, Vx, d, tau, ratio, weak):
            s = 0
            for _ in range(n):
                s += LK._factor_into(ext, S[O[6]:O[7]], S[O[7]:O[8]], S[O[8]:O[9]], t_coef,
                                     S[O[9]:O[10]], S[O[2]:O[3]], S[O[10]:O[11]],
                                     S[O[4]:O[5]], tau, ratio, Lx, Vx, d, weak)
            return s

        @njit
        def solve(n, b, S, O, Lx, Vx, d):
            s = 0.0
            for _ in range(n):
                y, finite = LK._solve_kernel(b, S[O[0]:O[1]], S[O[1]:O[2]], S[O[2]:O[3]],
                                             S[O[3]:O[4]], Lx, S[O[4]:O[5]], S[O[5]:O[6]],
                                             Vx, d)
                s += y[0]
            return s
        _LOOPS.update(fused=fused, program=program, first=first, second=second,
                      factor=factor, solve=solve)
    return _LOOPS


def _pinocchio(case) -> dict:
    """pin.aba per call and the right-hand side scipy calls (us), at the case's initial
    state; {} where the case has no Pinocchio model."""
    p = case.pin
    if p is None:
        return {}
    q = p._q(p.y0)
    v = p.y0[p.nq:].copy()
    tau = -p.damping * v
    return {"pin.aba per call (from Python)":
            _best(lambda: p.pin.aba(p.model, p.data, q, v, tau)),
            "Pinocchio's right-hand side (PinocchioODE.rhs)":
            _best(lambda: p.rhs(0.0, p.y0))}


def profile(name: str) -> dict:
    from scipy.integrate import DOP853
    from bondgraph import Baumgarte, fastlu
    from bondgraph import _rk_kernels as RK
    from bondgraph._fastrk import compiled_loop
    from bondgraph._sparse_systems import Workspace
    case = get_case(name)
    mm, x0 = case.ours
    model = mm.model
    sr = model.sparse()
    ws = Workspace()
    stab = Baumgarte(10, 10)
    xd = sr.derivative(0.0, x0, stab, ws)
    rhs = types.SimpleNamespace(fast=sr, workspace=ws, calls=0)
    loop, why = compiled_loop(model, DOP853, rhs, stab, ())
    if loop is None:
        raise RuntimeError(f"{name}: no compiled loop: {why}")
    D, _ = loop.pack()
    prog, qrate = loop._program, loop._qrate
    sources = loop._source_kernels       # (the compiled sources' kernels, padded)
    xdc, ok = RK.fused_rhs(0.0, x0, prog, qrate, *sources, D)
    assert ok and np.allclose(xdc, xd, rtol=1e-12, atol=1e-12 * abs(xd).max())
    L = _loops()
    out = {}
    out["one evaluation (fused_rhs, inside numba)"] = _best_loop(
        lambda n: L["fused"](n, 0.0, x0, prog, qrate, *sources, D))
    (dims, xi, v_desc, v_ints, v_flts, r_desc, r_ints, r_flts, _, _, _, _, _, _, _, _,
     I_all, F_all, IO, FO, S_ints, S_off, t_coef, src, U1, dU1, ab, *_) = D
    n_b, n_mod, n_phi = dims[0], dims[1], dims[2]
    states = np.ascontiguousarray(x0[xi].reshape(n_b, 7))
    moduli, phi_p, rates = np.empty(n_mod), np.empty(n_phi), np.empty(n_mod)
    out["  element program: moduli and Phi"] = _best_loop(
        lambda n: L["program"](n, prog, states, states, False, v_desc, v_ints, v_flts, moduli,
                               phi_p))
    if dims[4]:
        srates = np.ones_like(states)           # (the cost does not depend on the values)
        out["  element program: the moduli's rates"] = _best_loop(
            lambda n: L["program"](n, prog, states, srates, True, r_desc, r_ints, r_flts,
                                   rates, np.empty(0)))
    out["  _first: sources, kept-system LU, velocity stage"] = _best_loop(
        lambda n: L["first"](n, x0, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off,
                             t_coef))
    B = sr._B
    st = ws.lu(B.fast).structure if B.n_K else None
    if st is not None:
        ext = B.c.extend(src)
        Lx, Vx, d = np.empty(st.Li.size), np.empty(st.Ui.size), np.empty(st.n)
        out["    kept-system LU factorisation alone"] = _best_loop(
            lambda n: L["factor"](n, ext, S_ints, S_off, t_coef, Lx, Vx, d,
                                  fastlu.REFINE_THRESHOLD, fastlu.SINGULAR_RATIO,
                                  fastlu.WEAK_THRESHOLD))
        b = np.random.default_rng(0).random(st.n)
        out["    one solve with its factors"] = _best_loop(
            lambda n: L["solve"](n, b, S_ints, S_off, Lx, Vx, d))
    K = fastlu._sparse_kernels()
    work, w1, status = K._first(x0, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off,
                                t_coef)
    rates0, phi = np.zeros(n_mod), np.zeros(model.n_u2)
    out["  _second: acceleration stage"] = _best_loop(
        lambda n: L["second"](n, work, src, rates0, w1, dU1, phi, ab[0], ab[1], I_all, F_all,
                              IO, FO, S_ints, S_off))
    out.update(_pinocchio(case))
    line = f"{name}: {B.c.n} unknowns, {B.n_E} condensed, kept system {B.n_K}"
    if st is not None:
        updates = sum(int(st.Lp[k + 1] - st.Lp[k]) for k in st.Ui)
        line += (f" ({B.S.n} entries from {st.t_row.size} terms; L {st.Li.size}, U "
                 f"{st.Ui.size} off the diagonal; {updates} updates)")
    print(line)
    for k, v in out.items():
        print(f"  {k:52s} {v:7.2f} us")
    return out


def fallbacks(name: str, tols=(1e-4, 1e-6, 1e-8), repeat: int = 3) -> list[dict]:
    case = get_case(name)
    mm, x0 = case.ours
    rows = []
    mm.simulate((0.0, case.span), x0=x0, t_eval=[0.0, case.span], rtol=1e-4, atol=1e-4)
    for tol in tols:
        for method in ("RK45", "DOP853"):
            sec = np.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = mm.simulate((0.0, case.span), x0=x0, t_eval=[0.0, case.span],
                                method=method, rtol=tol, atol=tol)
                sec = min(sec, time.perf_counter() - t0)
            d = r.raw.diagnostics
            # (a version without these counts: the steps not taken compiled, and "-")
            row = {"model": name, "method": method, "tol": tol, "s": sec,
                   "nfev": r.raw.nfev, "steps": r.raw.n_steps,
                   "compiled": d["compiled_steps"],
                   "fallbacks": d.get("compiled_fallbacks",
                                      r.raw.n_steps - d["compiled_steps"]),
                   "pivot": d.get("pivot_fallbacks", "-")}
            rows.append(row)
            print(f"{name:14s} {method:6s} {tol:7.0e} {sec:7.3f} s  nfev {row['nfev']:5d}  "
                  f"steps {row['steps']:4d}  compiled {row['compiled']:4d}  "
                  f"compiled_fallbacks {row['fallbacks']:3d} "
                  f"({100 * row['fallbacks'] / max(row['steps'], 1):4.1f} % of steps)  "
                  f"pivot_fallbacks {row['pivot']:>3}  "
                  f"{1e6 * sec / row['nfev']:5.1f} us/evaluation",
                  flush=True)
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=list(MODELS))
    p.add_argument("--profile", action="store_true")
    p.add_argument("--fallbacks", action="store_true")
    a = p.parse_args(argv)
    if not (a.profile or a.fallbacks):
        a.profile = a.fallbacks = True
    for name in a.models:
        if a.profile:
            profile(name)
    if a.fallbacks:
        rows = [r for name in a.models for r in fallbacks(name)]
        worst = max(rows, key=lambda r: r["fallbacks"] / max(r["steps"], 1))
        print(f"largest share of steps handed to scipy: {worst['model']} {worst['method']} "
              f"{worst['tol']:.0e}: {worst['fallbacks']} of {worst['steps']}")


if __name__ == "__main__":
    main()
