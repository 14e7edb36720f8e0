"""Where one compiled evaluation's time goes, and how often the compiled LU's pivot
order fails over a run, on the work-precision models (issue 36, item 1).

    OPENBLAS_NUM_THREADS=1 python benchmarks/eval_profile.py --profile panda three-body
    OPENBLAS_NUM_THREADS=1 python benchmarks/eval_profile.py --fallbacks

``--profile``: one evaluation of the compiled right-hand side (``fused_rhs``, the one the
compiled RK loop calls) timed inside numba (a compiled loop of calls, so without
Python's boxing of its 31 arrays), and its parts timed from Python (each such call pays
about 1 us of dispatch): the element program (moduli and Phi), the velocity stage
``_first`` (the sources, the kept system's LU factorisation and the velocity stage's
bond variables), the LU factorisation alone, one solve with its factors, and the
acceleration stage ``_second``. Best of 7 x N calls at the model's initial state.

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


def _best(f, n=1000, repeat=7) -> float:
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        ts.append((time.perf_counter() - t0) / n)
    return min(ts) * 1e6


_REP = [None]


def _repeated():
    """A compiled loop of ``fused_rhs`` calls (made once)."""
    if _REP[0] is None:
        from numba import njit
        from bondgraph import _rk_kernels as RK
        fr = RK.fused_rhs

        @njit
        def rep(n, t, x, prog, qrate, D):
            s = 0.0
            for _ in range(n):
                xd, ok = fr(t, x, prog, qrate, D)
                s += xd[0]
            return s
        _REP[0] = rep
    return _REP[0]


def profile(name: str) -> dict:
    from scipy.integrate import DOP853
    from bondgraph import Baumgarte, fastlu
    from bondgraph import _rk_kernels as RK
    from bondgraph._fastrk import compiled_loop
    from bondgraph._lu_kernels import _factor_kernel
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
    prog, qrate = loop.parts["program"], loop._qrate
    xdc, ok = RK.fused_rhs(0.0, x0, prog, qrate, D)
    assert ok and np.allclose(xdc, xd, rtol=1e-12, atol=1e-12 * abs(xd).max())
    out = {}
    rep = _repeated()
    rep(10, 0.0, x0, prog, qrate, D)
    out["one evaluation (fused_rhs, inside numba)"] = _best(
        lambda: rep(100, 0.0, x0, prog, qrate, D), n=20) / 100
    (dims, xi, v_desc, v_ints, v_flts, _, _, _, _, _, _, _, _, _, _, _, I_all, F_all, IO,
     FO, S_ints, S_off, t_coef, src, U1, dU1, ab, *_) = D
    n_b, n_mod, n_phi = dims[0], dims[1], dims[2]
    states = np.ascontiguousarray(x0[xi].reshape(n_b, 7))
    moduli, phi_p = np.empty(n_mod), np.empty(n_phi)
    out["  element program: moduli and Phi"] = _best(
        lambda: prog(states, states, False, v_desc, v_ints, v_flts, moduli, phi_p))
    K = fastlu._sparse_kernels()
    out["  _first: sources, kept-system LU, velocity stage"] = _best(
        lambda: K._first(x0, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off, t_coef))
    B = sr._B
    st = ws.lu(B.fast).structure if B.n_K else None
    if st is not None:
        ext = B.c.extend(src)
        out["    kept-system LU factorisation alone"] = _best(
            lambda: _factor_kernel(ext, st.tp, st.t_row, st.t_src, st.t_coef, st.Lp, st.Li,
                                   st.Up, st.Ui, fastlu.PIVOT_THRESHOLD,
                                   fastlu.SINGULAR_RATIO))
        f = st.factor(ext)
        b = np.random.default_rng(0).random(st.n)
        out["    one solve with its factors"] = _best(lambda: f.solve_logical(b))
    work, w1, status = K._first(x0, moduli, U1, src, I_all, F_all, IO, FO, S_ints, S_off,
                                t_coef)
    rates, phi = np.zeros(n_mod), np.zeros(model.n_u2)
    out["  _second: acceleration stage"] = _best(
        lambda: K._second(work, src, rates, w1, dU1, phi, ab[0], ab[1], True, I_all, F_all,
                          IO, FO, S_ints, S_off, False))
    print(f"{name}: {B.c.n} unknowns, {B.n_E} condensed, kept system {B.n_K} "
          f"({B.S.n} entries" + (f", L {st.Li.size}, U {st.Ui.size} off the diagonal)"
                                  if st is not None else ")"))
    for k, v in out.items():
        print(f"  {k:52s} {v:7.1f} us")
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
