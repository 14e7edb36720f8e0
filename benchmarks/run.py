"""Performance benchmark: chain-N (benchmarks.md section 3) and the three-body example.

Run ``python benchmarks/run.py --help``; benchmarks/README.md explains the columns.
Exits non-zero, with the reasons printed last, when an answer is wrong (energy or
constraint drift, or distance from the reference solution, above its threshold).
"""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Benchmark chain-N and the three-body example (see benchmarks/README.md).")
    p.add_argument("--quick", action="store_true",
                   help="N in 1, 2, 5, 10 with 1 repeat (about a minute)")
    p.add_argument("--n", type=str, default=None,
                   help="comma-separated chain sizes (default 1,2,5,10,20,50,100)")
    p.add_argument("--max-n", type=int, default=None, help="skip chains longer than this")
    p.add_argument("--repeat", type=int, default=None,
                   help="repeats of build and simulation, medians reported (default 3; 1 "
                        "with --quick); fewer when a row's budget runs out")
    p.add_argument("--budget", type=float, default=300.0,
                   help="wall-clock seconds for our simulations of one row, all repeats "
                        "(default 300). A run still going at the budget stops at the last "
                        "output time it reached (0.1 s grid) and the row says so")
    p.add_argument("--span", type=float, default=1.0, help="chain-N span in s (default 1)")
    p.add_argument("--no-three-body", action="store_true", help="skip the three-body row")
    p.add_argument("--no-peers", action="store_true", help="do not run any peer")
    p.add_argument("--pydy-budget", type=float, default=120.0,
                   help="wall-clock seconds for PyDy's symbolic derivation of one chain "
                        "(default 120); past it the child process is killed, the row says "
                        "'derivation unfinished' and longer chains are not tried")
    p.add_argument("--mujoco-match", type=float, default=1e-6,
                   help="MuJoCo's RK4 step is the largest (0.01 s halved) at which body 1's "
                        "and body N's final centres are within this of the reference, in m "
                        "(default 1e-6)")
    p.add_argument("--exudyn-match", type=float, default=1e-6,
                   help="Exudyn's generalized-alpha step is the largest (0.01 s halved) at "
                        "which body 1's and body N's final centres are within this of the "
                        "reference, in m, and the energy drift within --energy-tol "
                        "(default 1e-6)")
    p.add_argument("--exudyn-budget", type=float, default=120.0,
                   help="wall-clock seconds for Exudyn's row (step search, check and timed "
                        "runs; default 120); a row that would take longer is skipped with "
                        "the reason, and longer chains are not tried")
    p.add_argument("--no-profile", action="store_true", help="skip the cProfile runs")
    p.add_argument("--profile-span", type=float, default=0.1,
                   help="simulated span of the chain profile in s (default 0.1)")
    p.add_argument("--selfref-max-n", type=int, default=5,
                   help="for N up to this, also compute our own rtol=1e-12 solution (every "
                        "run, not cached) and check it against the independent reference "
                        "(default 5)")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS/OpenMP threads (default 1: threaded BLAS slows the small "
                        "matrices here down; set before numpy is imported)")
    p.add_argument("--pos-tol", type=float, default=1e-5,
                   help="max distance (m) of a final position from the reference (1e-5)")
    p.add_argument("--energy-tol", type=float, default=1e-6,
                   help="max relative energy drift (1e-6)")
    p.add_argument("--phi-tol", type=float, default=1e-6,
                   help="max |Phi| (m or rad) over the run (1e-6)")
    p.add_argument("--results", type=str, default=None,
                   help="output directory (default benchmarks/results)")
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

# ruff: noqa: E402  (the thread count must be set before numpy is imported)
import cProfile
import datetime as _dt
import io
import json
import platform
import pstats
import time
import warnings

import numpy as np
import scipy
from scipy.integrate import DOP853

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)            # benchmark the working tree

import bondgraph
from bondgraph import Baumgarte, assemble, assign_causality, fastlu
from elements.models import chain, three_body_prismatic

from mincoord import Chain
from peers import RUNNERS, PeerSkipped, availability, integrate

RTOL = ATOL = 1e-8
REF_TOL = 1e-12
REF_CHECK_TOL = 1e-13        # a second reference run: its distance estimates the error
REF_VERSION = 1
STAB = Baumgarte(10.0, 10.0)        # what MechanismModel.simulate(stabilization="auto") uses
THREE_BODY_SPAN = 5.0
DEFAULT_NS = (1, 2, 5, 10, 20, 50, 100)
QUICK_NS = (1, 2, 5, 10)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _numba_version():
    try:
        import numba
    except ImportError:
        return None
    return numba.__version__


def now():
    return time.perf_counter()


def log(msg):
    print(msg, flush=True)


def time_calls(f, min_calls=5, max_calls=200, target=2.0):
    """Median time of calls of f (after 2 warm-up calls): at least ``min_calls``, then
    until ``target`` seconds or ``max_calls``."""
    f()
    f()
    times = []
    start = now()
    while len(times) < max_calls and (len(times) < min_calls or now() - start < target):
        t0 = now()
        f()
        times.append(now() - t0)
    return float(np.median(times)), len(times)


def deadline_dop853(deadline):
    """scipy's DOP853, stopping cleanly once perf_counter() passes ``deadline``: the step
    is accepted, then the solver reports 'finished', so bondgraph.simulate returns the
    output grid up to the last point reached."""
    class DOP853Budget(DOP853):
        stopped_by_budget = False

        def step(self):
            msg = super().step()
            if self.status == "running" and now() > deadline:
                self.status = "finished"
                DOP853Budget.stopped_by_budget = True
            return msg
    return DOP853Budget


def relative_drift(balance, *parts):
    """(max over the samples, at the end) of |balance - balance[0]| / the largest magnitude
    of any energy part (the definition of EnergyLedger.relative_drift)."""
    scale = max(max(float(np.abs(p).max()) for p in parts), 1e-300)
    return (float(np.abs(balance - balance[0]).max() / scale),
            float(abs(balance[-1] - balance[0]) / scale))


def at_time(t_ref, values, t):
    """values[..., k] at the reference time t_ref[k] == t (grids are nested)."""
    k = int(np.argmin(np.abs(t_ref - t)))
    if abs(t_ref[k] - t) > 1e-9:
        raise ValueError(f"time {t} is not on the reference grid")
    return values[..., k]


def fmt(v, spec):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    return format(v, spec)


# ---------------------------------------------------------------------------------------
# reference solutions (cached)
# ---------------------------------------------------------------------------------------
def chain_reference(n, span, results):
    """The independent minimal-coordinate solution at rtol = atol = 1e-12 on a 0.01 s grid,
    cached in results/reference_chain<n>.npz."""
    path = os.path.join(results, f"reference_chain{n}.npz")
    meta = {"version": REF_VERSION, "n": n, "span": span, "rtol": REF_TOL, "atol": REF_TOL,
            "bend": 0.3, "g": 9.81, "method": "DOP853",
            "model": "benchmarks/mincoord.py (joint coordinates, numpy)"}
    ref = None
    if os.path.exists(path):
        with np.load(path) as z:
            stored = json.loads(str(z["meta"]))
            if all(stored.get(k) == v for k, v in meta.items()):
                ref = {k: z[k] for k in z.files if k != "meta"}
                ref["meta"] = stored
    if ref is None:
        log(f"  computing reference for chain-{n} (minimal coordinates, rtol = 1e-12) ...")
        ch = Chain(n)
        grid = np.linspace(0.0, span, int(round(span / 0.01)) + 1)
        t0 = now()
        t, Y, nfev, steps, _ = integrate(ch.rhs, ch.initial_state(0.3), span, grid,
                                         REF_TOL, REF_TOL)
        elapsed = now() - t0
        _, Y2, _, _, _ = integrate(ch.rhs, ch.initial_state(0.3), span, grid[[0, -1]],
                                   REF_CHECK_TOL, REF_CHECK_TOL)
        cen = np.stack([ch.centres(Y[:n, k]) for k in range(t.size)], axis=-1)  # (N,3,T)
        c2 = ch.centres(Y2[:n, -1])
        err = float(np.linalg.norm(cen[:, :, -1] - c2, axis=1).max())
        stored = dict(meta, nfev=int(nfev), steps=int(steps), seconds=elapsed,
                      error_estimate_m=err,
                      error_estimate_how="max distance of any centre at the end from a "
                                         "rtol = atol = 1e-13 run")
        ref = {"t": t, "y": Y, "first": cen[0], "last": cen[-1], "meta": stored}
        _save_ref(path, ref)
    return ref


def self_reference(n, span, budget):
    """Our own chain-n solution at rtol = atol = 1e-12 (never cached: it checks the current
    code): final positions of b1 and bN, or None past the budget."""
    mech, q0 = chain(n)
    mm = mech.assemble()
    t0 = now()
    r = mm.simulate((0.0, span), q0, {}, t_eval=[0.0, span],
                    method=deadline_dop853(now() + budget), rtol=REF_TOL, atol=REF_TOL)
    if not (r.success and r.t[-1] >= span - 1e-12):
        return None
    return {"first": r.body("b1").position[:, -1], "last": r.body(f"b{n}").position[:, -1],
            "nfev": int(r.raw.nfev), "seconds": now() - t0}


def _save_ref(path, ref):
    arrays = {k: v for k, v in ref.items() if k != "meta"}
    tmp = path + ".tmp.npz"
    np.savez(tmp, meta=json.dumps(ref["meta"]), **arrays)
    os.replace(tmp, path)


def three_body_reference(results):
    """The independent Kane's-method model of tests/validation/reference_three_body.py at
    rtol = atol = 1e-12 on a 0.1 s grid, cached in results/reference_three_body.npz."""
    path = os.path.join(results, "reference_three_body.npz")
    meta = {"version": REF_VERSION, "span": THREE_BODY_SPAN, "rtol": REF_TOL, "atol": REF_TOL,
            "model": "tests/validation/reference_three_body.py (sympy Kane, joint coordinates)"}
    if os.path.exists(path):
        with np.load(path) as z:
            stored = json.loads(str(z["meta"]))
            if all(stored.get(k) == v for k, v in meta.items()):
                out = {k: z[k] for k in z.files if k != "meta"}
                out["meta"] = stored
                return out
    src = os.path.join(ROOT, "tests", "validation", "reference_three_body.py")
    if not os.path.exists(src):
        return None
    import importlib.util
    spec = importlib.util.spec_from_file_location("reference_three_body", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    log("  computing the three-body reference (Kane's equations, rtol = 1e-12) ...")
    grid = np.linspace(0.0, THREE_BODY_SPAN, int(round(THREE_BODY_SPAN / 0.1)) + 1)
    r = mod.simulate_reference(grid, rtol=REF_TOL, atol=REF_TOL)
    out = {"t": grid, "first": r["m1_position"], "last": r["m2_position"],
           "meta": dict(meta, nfev=int(r["stats"]["nfev"]))}
    _save_ref(path, out)
    return out


# ---------------------------------------------------------------------------------------
# our model
# ---------------------------------------------------------------------------------------
def build_breakdown(make):
    """One build split into its stages: Mechanism construction, graph, causality, equations."""
    t0 = now()
    mech = make()
    t1 = now()
    graph = mech.build()
    t2 = now()
    causal = assign_causality(graph)
    t3 = now()
    model = assemble(causal)
    t4 = now()
    model.sparse()
    t5 = now()
    return {"construct": t1 - t0, "graph": t2 - t1, "causality": t3 - t2, "equations": t4 - t3,
            "sparse": t5 - t4}


def bench_ours(label, make, q0, span, grid, first, last, args, ref):
    """Build, derivative and simulation timings and the accuracy of one model."""
    repeat = args.repeat
    row = {"model": label, "span_s": span, "rtol": RTOL, "atol": ATOL, "method": "DOP853",
           "stabilization": "Baumgarte(alpha=10, beta=10)"}
    builds = []
    for _ in range(repeat):
        t0 = now()
        mech = make()
        mm = mech.assemble()
        mm.model.sparse()             # the sparse evaluation's patterns and ordering
        builds.append(now() - t0)
    row["build_s"] = float(np.median(builds))
    row["build_stages_s"] = build_breakdown(make)
    row["n_bodies"] = len(mech.bodies)
    row["n_states"] = int(mm.model.n_states)
    x0 = mm.initial_state(q0, {})
    rhs = mm.model.rhs
    row["rhs_s"], row["rhs_calls"] = time_calls(lambda: rhs(0.0, x0, STAB))

    sims, r, capped = [], None, False
    row_start = now()
    deadline = row_start + args.budget
    for k in range(repeat):
        if k > 0 and now() + sims[-1] > deadline:
            break
        method = deadline_dop853(deadline)
        t0 = now()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = mm.simulate((0.0, span), x0=x0, t_eval=grid, method=method, rtol=RTOL,
                            atol=ATOL, stabilization="auto")
        sims.append(now() - t0)
        row["warnings"] = sorted({str(w.message) for w in caught})
        if method.stopped_by_budget:
            capped = True
            break
    row["sim_s"] = float(np.median(sims))
    row["sim_s_all"] = sims
    row["repeats"] = len(sims)
    row["success"] = bool(r.success)
    row["message"] = r.message
    t_end = float(r.t[-1])
    row["t_end"] = t_end
    row["capped"] = capped
    if capped:
        row["cap_reason"] = (f"--budget {args.budget:g} s reached at t = {t_end:g} s of "
                             f"{span:g} s; repeats stopped")
    row["nfev"] = int(r.raw.nfev)
    row["n_steps"] = int(r.raw.n_steps)
    t0 = now()                    # the outputs derived from the states, made when first read
    r.raw.bond_values
    row["outputs_s"] = now() - t0
    e = r.energy
    row["energy_drift"], row["energy_drift_end"] = relative_drift(
        e.balance, e.kinetic, e.gravity, e.springs)
    row["max_abs_phi"] = float(r.max_abs_phi)
    p_first = r.body(first).position[:, -1]
    p_last = r.body(last).position[:, -1]
    row["final_first"], row["final_last"] = p_first.tolist(), p_last.tolist()
    if ref is not None:
        row["err_first_m"] = float(np.linalg.norm(p_first - at_time(ref["t"], ref["first"], t_end)))
        row["err_last_m"] = float(np.linalg.norm(p_last - at_time(ref["t"], ref["last"], t_end)))
        row["reference"] = ref["meta"]["model"]
        row["reference_error_estimate_m"] = ref["meta"].get("error_estimate_m")
    else:
        row["err_first_m"] = row["err_last_m"] = None
        row["reference"] = "none available"
    return row, mm, x0


# ---------------------------------------------------------------------------------------
# peers
# ---------------------------------------------------------------------------------------
def peer_options(name, args):
    """Constructor options of a peer runner, from the command line."""
    return {"pydy": {"budget": args.pydy_budget},
            "mujoco": {"match_tol": args.mujoco_match},
            "exudyn": {"match_tol": args.exudyn_match, "energy_tol": args.energy_tol,
                       "budget": args.exudyn_budget, "repeat": args.repeat}}.get(name, {})


def bench_peer(name, n, span, ours, ref, args):
    """Build, check against the reference, then time one peer on chain-n.

    Peers with ``integrator == "scipy"`` hand an rhs to scipy's DOP853 at our tolerances;
    a peer with its own integrator (MuJoCo, Exudyn) first chooses its step
    (``match_step``) and then runs ``simulate``. A ``PeerSkipped`` (PyDy's build past its
    budget, Exudyn's row past its budget) is reported as skipped (not a failure); any
    other exception, or an answer off the reference, is a failure.
    """
    peer = RUNNERS[name](**peer_options(name, args))
    integrator = getattr(peer, "integrator", "scipy")
    out = {"peer": name, "description": peer.description, "integrator": integrator}
    try:
        builds = []
        for _ in range(args.repeat if getattr(peer, "repeat_build", True) else 1):
            t0 = now()
            peer.build(n)
            builds.append(now() - t0)
        out["build_s"] = float(np.median(builds))
        out["build_repeats"] = len(builds)
        if getattr(peer, "build_time", None) is not None:
            # the peer's own account (PyDy: derivation + code generation, without the
            # child process's start-up and the check's kinematics)
            out["build_wall_s"], out["build_s"] = out["build_s"], float(peer.build_time)
        if getattr(peer, "build_stages", None):
            out["build_stages"] = dict(peer.build_stages)
        y0 = peer.y0
        grid = ref["t"]
        if integrator == "own":
            tried = peer.match_step(span, ref["first"][:, -1], ref["last"][:, -1])
            out["step_search"] = [{"step_s": t[0], "distance_m": t[1],
                                   **({"energy_drift": t[2]} if len(t) > 2 else {})}
                                  for t in tried]
            out["step_s"] = float(peer.dt)

            def run(g):
                return peer.simulate(span, g)
            evaluation = peer.evaluation()
        else:
            a, b = peer.rhs(0.0, y0), peer.rhs(0.0, y0)
            if a is b or np.shares_memory(a, b):
                raise RuntimeError("rhs does not return a fresh array")

            def run(g):
                return integrate(peer.rhs, y0, span, g, RTOL, ATOL)[:4]

            def evaluation():
                return peer.rhs(0.0, y0)
        # check first, then time
        t, Y, nfev, steps = run(grid)
        cen_end = peer.centres(Y[:, -1])
        out["final_first"], out["final_last"] = cen_end[0].tolist(), cen_end[-1].tolist()
        out["err_first_m"] = float(np.linalg.norm(cen_end[0] - ref["first"][:, -1]))
        out["err_last_m"] = float(np.linalg.norm(cen_end[-1] - ref["last"][:, -1]))
        en = np.array([peer.energy(Y[:, k]) for k in range(0, t.size, 10)])
        out["energy_drift"], out["energy_drift_end"] = relative_drift(
            en.sum(axis=1), en[:, 0], en[:, 1])
        out["nfev"], out["n_steps"] = int(nfev), int(steps)
        out["checked"] = bool(out["err_first_m"] <= args.pos_tol
                              and out["err_last_m"] <= args.pos_tol
                              and out["energy_drift"] <= args.energy_tol)
        if not out["checked"]:
            out["failure"] = (f"peer {name}, chain-{n}: answer differs from the reference "
                              f"(|d first| = {out['err_first_m']:.3g} m, |d last| = "
                              f"{out['err_last_m']:.3g} m, energy drift "
                              f"{out['energy_drift']:.3g}); not timed")
            return out
        out["rhs_s"], out["rhs_calls"] = time_calls(evaluation)
        sims = []
        coarse = np.linspace(0.0, span, int(round(span / 0.1)) + 1)
        for _ in range(args.repeat):
            t0 = now()
            run(coarse)
            sims.append(now() - t0)
        out["sim_s"] = float(np.median(sims))
        out["sim_s_all"] = sims
        out["s_per_step"] = out["sim_s"] / max(out["n_steps"], 1)
        out["ratio_rhs"] = ours["rhs_s"] / out["rhs_s"]
        # seconds per simulated second, so that a capped run of ours still compares
        out["ratio_sim"] = (ours["sim_s"] / max(ours["t_end"], 1e-12)) / (out["sim_s"] / span)
        out["ratio_sim_estimated"] = bool(ours["capped"])
    except PeerSkipped as exc:
        out["skipped"] = f"{exc}"
        out["skip_larger"] = exc.larger_too
    except Exception as exc:
        out["failure"] = f"peer {name}, chain-{n}: {type(exc).__name__}: {exc}"
    finally:
        out["notes"] = getattr(peer, "notes", "")
    return out


def peer_summary(p):
    """One log line for a peer's result."""
    if "skipped" in p:
        return f"  {p['peer']}: skipped: {p['skipped']}"
    if "failure" in p:
        return f"  {p['peer']}: FAILED: {p['failure']}"
    return (f"  {p['peer']}: build {p['build_s']:.3g} s, sim {p['sim_s']:.3g} s, "
            f"{p['nfev']} evaluations, {p['n_steps']} steps, |d first| "
            f"{p['err_first_m']:.2g} m, |d last| {p['err_last_m']:.2g} m"
            + (f"; {p['notes']}" if p.get("notes") else ""))


# ---------------------------------------------------------------------------------------
# profiles
# ---------------------------------------------------------------------------------------
def profile(label, make, q0, span, grid, path, note):
    pr = cProfile.Profile()
    t0 = now()
    pr.enable()
    mech = make()
    mm = mech.assemble()
    r = mm.simulate((0.0, span), q0, {}, t_eval=grid, method="DOP853", rtol=RTOL, atol=ATOL)
    pr.disable()
    elapsed = now() - t0
    s = io.StringIO()
    s.write(f"cProfile of {label}: Mechanism construction + assemble() + simulate(0 .. "
            f"{span:g} s, DOP853, rtol = atol = {RTOL:g}); {note}\n"
            f"{r.raw.nfev} derivative evaluations, {r.raw.n_steps} steps, {elapsed:.2f} s "
            f"under the profiler.\n\n=== top 25 by cumulative time ===\n")
    pstats.Stats(pr, stream=s).strip_dirs().sort_stats("cumulative").print_stats(25)
    s.write("\n=== top 25 by internal time ===\n")
    pstats.Stats(pr, stream=s).strip_dirs().sort_stats("tottime").print_stats(25)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(s.getvalue())
    written = [path]
    try:
        from pyinstrument import Profiler
    except ImportError:
        Profiler = None
    if Profiler is not None:
        prof = Profiler()
        prof.start()
        mm = make().assemble()
        mm.simulate((0.0, span), q0, {}, t_eval=grid, method="DOP853", rtol=RTOL, atol=ATOL)
        prof.stop()
        p2 = path.replace(".txt", "_pyinstrument.txt")
        with open(p2, "w", encoding="utf-8") as fh:
            fh.write(prof.output_text(unicode=False, color=False))
        written.append(p2)
    return written


# ---------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------
def table(rows):
    head = ["model", "states", "build s", "rhs ms", "sim s", "outputs s", "span s", "nfev",
            "steps", "E drift", "max|Phi|", "|d first| m", "|d last| m", "reps"]
    lines = []
    for r in rows:
        span = f"{r['t_end']:g}" + ("*" if r["capped"] else "")
        lines.append([r["model"], str(r["n_states"]), fmt(r["build_s"], ".3f"),
                      fmt(1e3 * r["rhs_s"], ".2f"), fmt(r["sim_s"], ".2f"),
                      fmt(r.get("outputs_s"), ".3f"), span,
                      str(r["nfev"]), str(r["n_steps"]), fmt(r["energy_drift"], ".1e"),
                      fmt(r["max_abs_phi"], ".1e"), fmt(r.get("err_first_m"), ".1e"),
                      fmt(r.get("err_last_m"), ".1e"), str(r["repeats"])])
    return _render(head, lines)


def _ratio(v):
    """A ratio: whole numbers from 10 up, two significant digits below (0.11, 3.3)."""
    return fmt(v, ".0f" if v is not None and v >= 10 else ".2g")


def peer_table(rows):
    head = ["model", "peer", "build s", "rhs us", "sim s", "nfev", "steps", "us/step",
            "|d first| m", "|d last| m", "E drift", "ours/peer rhs", "ours/peer sim",
            "notes"]
    lines = []
    for r in rows:
        for p in r.get("peers", []):
            if "skipped" in p:
                lines.append([r["model"], p["peer"], "skipped", *[""] * 10, p["skipped"]])
                continue
            if "rhs_s" not in p:
                lines.append([r["model"], p["peer"], "FAILED", *[""] * 10,
                              "see BENCHMARK FAILED below"])
                continue
            lines.append([r["model"], p["peer"], fmt(p["build_s"], ".3g"),
                          fmt(1e6 * p["rhs_s"], ".1f"), fmt(p["sim_s"], ".3f"),
                          str(p["nfev"]), str(p["n_steps"]), fmt(1e6 * p["s_per_step"], ".1f"),
                          fmt(p["err_first_m"], ".1e"), fmt(p["err_last_m"], ".1e"),
                          fmt(p["energy_drift"], ".1e"), _ratio(p["ratio_rhs"]),
                          _ratio(p["ratio_sim"]) + ("~" if p["ratio_sim_estimated"]
                                                    else ""),
                          p.get("notes", "")])
    return _render(head, lines, left={"notes"}) if lines else ""


def _render(head, lines, left=()):
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]

    def just(c, w, h):
        return c.ljust(w) if h in left else c.rjust(w)
    out = ["  ".join(just(h, w, h) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(just(c, w, h) for c, w, h in zip(l, widths, head)).rstrip()
            for l in lines]
    return "\n".join(out)


def _exponent(rows, key, lo=10, hi=100):
    """Least-squares slope of log(key) against log(N) over the chain rows lo <= N <= hi."""
    pts = [(int(r["model"].split("-")[1]), r[key]) for r in rows
           if r["model"].startswith("chain-") and lo <= int(r["model"].split("-")[1]) <= hi
           and r.get(key)]
    if len(pts) < 2:
        return None
    n, v = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(n, v, 1)[0])


def targets(rows):
    """The issue's targets, each with the measured figure and whether it is met."""
    by = {r["model"]: r for r in rows}
    out = []

    def add(name, value, limit, met, how):
        out.append({"target": name, "measured": value, "limit": limit,
                    "met": None if met is None else bool(met), "how": how})

    e = _exponent(rows, "rhs_s")
    add("derivative cost exponent, N = 10..100", e, 1.1, None if e is None else e <= 1.1,
        "slope of log(rhs s) on log(N)")
    e = _exponent(rows, "build_s")
    add("build time exponent, N = 10..100", e, 1.1, None if e is None else e <= 1.1,
        "slope of log(build s) on log(N); build = construction, graph, causality, "
        "equations and the sparse set-up")
    if "chain-100" in by:
        b = by["chain-100"]["build_s"]
        add("build at N = 100 (s)", b, 0.5, b < 0.5, "median build")
    if "three-body" in by:
        r = by["three-body"]
        t = r["build_s"] + r["sim_s"]
        add("three-body 5 s: build + simulate (s)", t, 1.0, t < 1.0, "medians")
    for n, limit in (("chain-10", 5.0), ("chain-100", 3.0)):
        peers = {p["peer"]: p for p in by.get(n, {}).get("peers", []) if "sim_s" in p}
        if "pinocchio" in peers:
            ratio = by[n]["sim_s"] / peers["pinocchio"]["sim_s"]
            add(f"{n}: ours / Pinocchio + scipy, simulate", ratio, limit, ratio <= limit,
                "same solver and tolerances, one run")
    for n in ("chain-10", "chain-100"):
        for p in by.get(n, {}).get("peers", []):
            if p["peer"] == "mujoco" and "sim_s" in p:
                add(f"{n}: ours / MuJoCo RK4, simulate (information)",
                    by[n]["sim_s"] / p["sim_s"], None, None, "MuJoCo at its matched step")
    for r in rows:
        for p in r.get("peers", []):
            if p["peer"] == "exudyn" and "sim_s" in p:
                ratio = r["sim_s"] / p["sim_s"]
                add(f"{r['model']}: ours / Exudyn, simulate", ratio, 1.0, ratio < 1.0,
                    "Exudyn's generalized-alpha at its matched step")
            elif p["peer"] == "exudyn" and "skipped" in p:
                add(f"{r['model']}: Exudyn", p["skipped"], None, True,
                    f"ours finished in {r['sim_s']:.3g} s; Exudyn did not match the "
                    f"reference within its budget")
            if p["peer"] == "pydy" and "sim_s" in p:
                ours = r["build_s"] + r["sim_s"]
                theirs = p["build_s"] + p["sim_s"]
                add(f"{r['model']}: ours / PyDy derive + simulate", ours / theirs, 1.0,
                    ours < theirs, "build + simulate on both sides")
            elif p["peer"] == "pydy" and "skipped" in p:
                add(f"{r['model']}: PyDy", p["skipped"], None, True,
                    "ours finished; PyDy did not")
    return out


def targets_table(tg):
    lines = []
    for t in tg:
        v = t["measured"]
        lines.append([t["target"], v if isinstance(v, str) else fmt(v, ".4g"),
                      "" if t["limit"] is None else fmt(t["limit"], ".3g"),
                      {True: "met", False: "NOT met", None: "n/a"}[t["met"]]])
    return _render(["target", "measured", "limit", ""], lines, left={"target", "measured"})


def check(row, args):
    fails = []
    name = row["model"]
    if not row["success"]:
        fails.append(f"{name}: simulation failed: {row['message']}")
    if not row["energy_drift"] <= args.energy_tol:
        fails.append(f"{name}: relative energy drift {row['energy_drift']:.3g} > "
                     f"{args.energy_tol:g}")
    if not row["max_abs_phi"] <= args.phi_tol:
        fails.append(f"{name}: max |Phi| {row['max_abs_phi']:.3g} > {args.phi_tol:g}")
    for key, what in (("err_first_m", "first body"), ("err_last_m", "last body")):
        v = row.get(key)
        if v is not None and not v <= args.pos_tol:
            fails.append(f"{name}: final position of the {what} is {v:.3g} m from the "
                         f"reference (> {args.pos_tol:g} m)")
    ref_agree = row.get("selfref_agreement_m")
    if ref_agree is not None and not ref_agree <= args.pos_tol * 1e-3:
        fails.append(f"{name}: our rtol=1e-12 solution is {ref_agree:.3g} m from the "
                     f"independent reference (> {args.pos_tol * 1e-3:g} m)")
    return fails


# ---------------------------------------------------------------------------------------
def main(args):
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.n:
        ns = [int(v) for v in args.n.split(",") if v.strip()]
    else:
        ns = list(QUICK_NS if args.quick else DEFAULT_NS)
    skipped = []
    if args.max_n is not None:
        skipped = [{"model": f"chain-{n}", "reason": f"--max-n {args.max_n}"}
                   for n in ns if n > args.max_n]
        ns = [n for n in ns if n <= args.max_n]
    results = args.results or os.path.join(HERE, "results")
    os.makedirs(results, exist_ok=True)
    started = _dt.datetime.now()
    wall0 = now()
    avail = availability()
    log(f"vector-bondgraph benchmark: chain-N for N in {ns}, repeat {args.repeat}, budget "
        f"{args.budget:g} s per row, BLAS threads {args.threads}")
    for name, a in avail.items():
        log(f"  peer {name}: " + (f"imports (version {a['version']})" +
                                  ("" if a["runner"] else ", no runner implemented")
                                  if a["imports"] else
                                  f"skipped: not installed ({a['error']})"))
    peers = [] if args.no_peers else ["mincoord"] + [
        n for n, a in avail.items() if a["imports"] and a["runner"]]

    rows, failures = [], []
    gave_up = {}        # peer -> (n, reason): a skip that longer chains would repeat
    if not args.no_three_body:
        log("three-body ...")
        ref = three_body_reference(results)
        grid = np.linspace(0.0, THREE_BODY_SPAN, int(round(THREE_BODY_SPAN / 0.1)) + 1)
        row, _, _ = bench_ours("three-body", three_body_prismatic, {}, THREE_BODY_SPAN, grid,
                               "m1", "m2", args, ref)
        row["first_body"], row["last_body"] = "m1", "m2"
        rows.append(row)
        failures += check(row, args)
        log(table([row]).splitlines()[-1])
    for n in ns:
        log(f"chain-{n} ...")
        ref = chain_reference(n, args.span, results)
        grid = np.linspace(0.0, args.span, int(round(args.span / 0.1)) + 1)
        _, q0 = chain(n)
        row, _, _ = bench_ours(f"chain-{n}", lambda n=n: chain(n)[0], q0, args.span, grid,
                               "b1", f"b{n}", args, ref)
        row["first_body"], row["last_body"] = "b1", f"b{n}"
        row["reference_nfev"] = ref["meta"]["nfev"]
        if n <= args.selfref_max_n:
            own = self_reference(n, args.span, args.budget)
            if own is None:
                row["selfref"] = "our rtol = 1e-12 run did not finish within --budget"
            else:
                row["selfref_agreement_m"] = float(max(
                    np.linalg.norm(own["first"] - ref["first"][:, -1]),
                    np.linalg.norm(own["last"] - ref["last"][:, -1])))
                row["selfref_nfev"], row["selfref_s"] = own["nfev"], own["seconds"]
        row["peers"] = []
        for p in peers:
            if p in gave_up and n > gave_up[p][0]:
                res = {"peer": p, "skipped": f"not tried: {gave_up[p][1]}"}
            else:
                res = bench_peer(p, n, args.span, row, ref, args)
                if res.get("skip_larger"):
                    gave_up[p] = (n, f"chain-{n}: {res['skipped']}")
            row["peers"].append(res)
            log(peer_summary(res))
            if "failure" in res:
                failures.append(res["failure"])
        rows.append(row)
        failures += check(row, args)
        log(table([row]).splitlines()[-1])
        if row["capped"]:
            log(f"  capped: {row['cap_reason']}")

    profiles = []
    if not args.no_profile:
        log("profiles ...")
        grid = np.linspace(0.0, THREE_BODY_SPAN, 51)
        if not args.no_three_body:
            profiles += profile("three-body", three_body_prismatic, {}, THREE_BODY_SPAN, grid,
                                os.path.join(results, "profile_three_body.txt"), "full span")
        if ns:
            pn = 50 if 50 in ns else max(ns)
            _, q0 = chain(pn)
            span = min(args.profile_span, args.span)
            profiles += profile(f"chain-{pn}", lambda: chain(pn)[0], q0, span,
                                np.array([0.0, span]),
                                os.path.join(results, f"profile_chain{pn}.txt"),
                                f"span shortened to {span:g} s (--profile-span)")

    meta = {
        "started": started.isoformat(timespec="seconds"),
        "wall_s": now() - wall0,
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "python": platform.python_version(), "numpy": np.__version__,
        "scipy": scipy.__version__, "platform": platform.platform(),
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "blas_threads": args.threads, "bondgraph": getattr(bondgraph, "__version__", "?"),
        # the sparse LU: compiled (bondgraph.fastlu, numba) or SuperLU
        "compiled_lu": fastlu.enabled(), "numba": _numba_version(),
        "ns": ns, "repeat": args.repeat, "budget_s": args.budget, "span_s": args.span,
        "rtol": RTOL, "atol": ATOL, "reference_rtol": REF_TOL,
        "pydy_budget_s": args.pydy_budget, "mujoco_match_m": args.mujoco_match,
        "exudyn_match_m": args.exudyn_match, "exudyn_budget_s": args.exudyn_budget,
    }
    thresholds = {"position_m": args.pos_tol, "energy_relative": args.energy_tol,
                  "phi": args.phi_tol, "selfref_agreement_m": args.pos_tol * 1e-3}
    tg = targets(rows)
    doc = {"meta": meta, "thresholds": thresholds, "peers_available": avail,
           "rows": rows, "targets": tg, "skipped": skipped, "profiles": [os.path.relpath(p, ROOT)
                                                          for p in profiles],
           "failures": failures}
    text = json.dumps(doc, indent=1, default=float)
    latest = os.path.join(results, "latest.json")
    stamped = os.path.join(results, f"run_{started.strftime('%Y%m%d-%H%M%S')}.json")
    for path in (latest, stamped):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)

    log("")
    log(f"Ours (DOP853, rtol = atol = {RTOL:g}; chain span {args.span:g} s, three-body "
        f"{THREE_BODY_SPAN:g} s; medians of {args.repeat} repeat(s)):")
    log(table(rows))
    if any(r["capped"] for r in rows):
        log("* span capped by --budget: the run stopped at the time shown; "
            "sim s is for that part only")
    pt = peer_table(rows)
    if pt:
        log("")
        log("Peers (same chain; scipy DOP853 at the same tolerances, except MuJoCo: its "
            "RK4 at a fixed step, and Exudyn: its generalized-alpha at a fixed step; "
            "checked against the reference before timing; ~ = estimated from a capped run "
            "of ours):")
        log(pt)
    missing = [n for n, a in avail.items() if not a["imports"]]
    if missing:
        log(f"Not installed (optional 'bench' peers): {', '.join(missing)}")
    if tg:
        log("")
        log("Targets of issue 6 (reported, not enforced: only wrong answers fail the run):")
        log(targets_table(tg))
    log("")
    log(f"written: {os.path.relpath(latest, ROOT)}, {os.path.relpath(stamped, ROOT)}"
        + "".join(f", {os.path.relpath(p, ROOT)}" for p in profiles))
    log(f"total wall time {meta['wall_s']:.1f} s")
    if failures:
        log("")
        log("BENCHMARK FAILED: wrong answers:")
        for f in failures:
            log(f"  - {f}")
        return 1
    log("all answers within thresholds: position "
        f"{args.pos_tol:g} m, energy drift {args.energy_tol:g}, |Phi| {args.phi_tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
