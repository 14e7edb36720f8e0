"""Work-precision diagrams (issue 22): time against achieved error, ours and the peers.

For each model (chain-10, chain-100, the three-body example, robots of
example-robot-data loaded through ``elements.files.urdf.load_urdf``) every tool runs over a
ladder of tolerances:

- ours: ``MechanismModel.simulate`` with RK45 and DOP853, rtol = atol = tol (atol in
  the units of the coordinates and rates: ``MechanismModel.state_atol``), its steps in
  the compiled loop (``bondgraph._fastrk``, the default where it applies), and the same
  runs with ``compiled_loop=False`` (scipy's stepping: "ours ... scipy loop");
- Pinocchio: ``pin.aba`` in joint coordinates + ``scipy.integrate.solve_ivp`` with RK45
  and DOP853 at the same rtol = atol;
- MuJoCo: its own RK4 at a ladder of fixed steps (span / 50, halved ...).

The achieved error is the largest distance (m) of a model's points at the end of the
span from a common reference: Pinocchio + DOP853 at rtol = atol = 1e-12 (the points:
wp_models.py; the reference's own error is estimated by a 1e-13 run). Our rows also
carry the reactions' error (``reaction_error_rel``: every joint's constraint force and
moment at the end, against our own DOP853 run at 1e-12, relative to the largest force
or moment there; Pinocchio's ABA gives no reactions). Each model's
diagram is written as ``results/wp_<model>.png`` (log-log, every tool on one plot), the
numbers as ``results/work_precision.json``. The headline: our time / Pinocchio +
scipy's at equal achieved error (log-log interpolation along each tool's Pareto front)
at errors 1e-4, 1e-6, 1e-8 m.

Run ``python benchmarks/work_precision.py --help``; benchmarks/README.md explains it.
"""

from __future__ import annotations

import argparse
import os
import sys

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

import wp_models  # noqa: E402

REF_TOL, REF_CHECK_TOL = 1e-12, 1e-13
TARGETS = (1e-4, 1e-6, 1e-8)
METHODS = ("RK45", "DOP853")
ALL_MODELS = ("chain-10", "chain-100", "three-body") + tuple(r[0] for r in wp_models.ROBOTS)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="no chain-100, tolerances 1e-2 .. 1e-10 every decade, fewer "
                         "MuJoCo steps, one repeat")
    ap.add_argument("--models", default=None,
                    help=f"comma-separated subset of {', '.join(ALL_MODELS)}")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed repeats per point, the minimum is kept (2; 1 with --quick)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="a run longer than this (s) ends its tool's ladder (tighter "
                         "tolerances take longer)")
    ap.add_argument("--uniform-atol", action="store_true",
                    help="also run ours with the same atol on every state (the behaviour "
                         "before issue 22: momenta held to atol in kg m/s and kg m^2/s)")
    ap.add_argument("--no-mujoco", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH",
                    help="no runs: the ratios, table and plots again from a saved "
                         "work_precision.json")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    args = ap.parse_args(argv)
    args.models = tuple(m.strip() for m in args.models.split(",")) if args.models else \
        tuple(m for m in ALL_MODELS if not (args.quick and m == "chain-100"))
    unknown = set(args.models) - set(ALL_MODELS)
    if unknown:
        ap.error(f"unknown model(s) {sorted(unknown)}; valid: {', '.join(ALL_MODELS)}")
    if args.repeat is None:
        args.repeat = 1 if args.quick else 2
    # (from 1e-2: at 1e-3 every tool's DOP853 run was already below 1e-4 m on some
    # models, so the comparison at 1e-4 had only upper bounds)
    args.tols = [10.0 ** -k for k in range(2, 11)] if args.quick else \
        [10.0 ** -k for k in range(2, 12)]
    args.steps = 7 if args.quick else 10          # MuJoCo: span/50 halved this many - 1
    return args


def log(msg):
    print(msg, flush=True)


def make_case(name, args):
    mujoco = not args.no_mujoco
    if name.startswith("chain-"):
        return wp_models.chain_case(int(name.split("-")[1]), mujoco=mujoco)
    if name == "three-body":
        return wp_models.three_body_case()
    for label, rel, floating, span, desc in wp_models.ROBOTS:
        if label == name:
            return wp_models.robot_case(label, rel, floating, span, desc, mujoco=mujoco)
    raise KeyError(name)


def distance(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b), axis=1).max())


def reference(case):
    """Pinocchio + DOP853 at 1e-12: the final points, and the distance to a 1e-13 run."""
    t0 = time.perf_counter()
    s = solve_ivp(case.pin.rhs, (0.0, case.span), case.pin.y0, method="DOP853",
                  rtol=REF_TOL, atol=REF_TOL)
    seconds = time.perf_counter() - t0
    s2 = solve_ivp(case.pin.rhs, (0.0, case.span), case.pin.y0, method="DOP853",
                   rtol=REF_CHECK_TOL, atol=REF_CHECK_TOL)
    if not (s.success and s2.success):
        raise RuntimeError(f"{case.name}: the reference run failed: {s.message}")
    pts = case.pin.points(s.y[:, -1])
    return pts, {"tool": "Pinocchio ABA + solve_ivp DOP853", "rtol": REF_TOL, "atol": REF_TOL,
                 "nfev": int(s.nfev), "seconds": seconds,
                 "error_estimate_m": distance(pts, case.pin.points(s2.y[:, -1])),
                 "error_estimate_how": "distance from a rtol = atol = 1e-13 run"}


def reactions(result):
    """Every joint's reaction (force N, moment N m; global) at the end of ``result``."""
    out = {}
    for name in result.model.mechanism.joints:
        j = result.joint(name)
        out[name] = (j.force[:, -1], j.moment[:, -1])
    return out


def timed(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def ladder(label, settings, run, ref, args, post=None):
    """[{setting, seconds, error_m, nfev}] over ``settings`` (a tolerance or a step);
    a run past --budget ends the ladder. ``post()``, called after each timed run (not
    timed), adds fields to its row (ours: the reactions' error)."""
    rows = []
    for s in settings:
        try:
            sec, (pts, nfev) = timed(lambda: run(s), args.repeat)
        except Exception as exc:  # noqa: BLE001 - a failing run is reported, not fatal
            rows.append({"setting": s, "failed": f"{type(exc).__name__}: {exc}"})
            log(f"    {label:<22} {s:9.1e}  failed: {exc}")
            break
        err = distance(pts, ref)
        rows.append({"setting": s, "seconds": sec, "error_m": err, "nfev": int(nfev)})
        extra = post() if post is not None else {}
        rows[-1].update(extra)
        said = "".join(f"  {k} {v:9.2e}" for k, v in extra.items())
        log(f"    {label:<22} {s:9.1e}  {sec:9.4f} s  error {err:9.2e} m  nfev {nfev}{said}")
        if sec > args.budget:
            rows.append({"note": f"stopped: a run took {sec:.1f} s > --budget"})
            break
    return rows


def run_case(case, args):
    mm, x0 = case.ours
    ref, ref_meta = reference(case)
    log(f"  reference: nfev {ref_meta['nfev']}, its own error ~ "
        f"{ref_meta['error_estimate_m']:.1e} m")
    span = case.span
    tools = {}

    last = {}

    def ours(method, atol_of, compiled=True):
        def go(tol):
            r = mm.simulate((0.0, span), x0=x0, t_eval=[0.0, span], method=method,
                            rtol=tol, atol=atol_of(tol), compiled_loop=compiled)
            if not r.success:
                raise RuntimeError(r.message)
            last["result"] = r
            return case.ours_points(r), r.raw.nfev
        return go

    # the reactions' reference: our own DOP853 run at REF_TOL (Pinocchio's ABA gives
    # none); the error: the largest difference of any joint's force (moment) at the end,
    # over the largest force (moment) of the reference there
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours("DOP853", lambda t: t)(REF_TOL)
    reaction_ref = reactions(last["result"])

    def reaction_error():
        got = reactions(last["result"])
        out = 0.0
        for k in (0, 1):
            scale = max(float(np.abs(v[k]).max()) for v in reaction_ref.values())
            diff = max(float(np.abs(got[j][k] - v[k]).max()) for j, v in reaction_ref.items())
            out = max(out, diff / max(scale, 1e-300))
        return {"reaction_error_rel": out}

    def pinocchio(method):
        def go(tol):
            s = solve_ivp(case.pin.rhs, (0.0, span), case.pin.y0, method=method, rtol=tol,
                          atol=tol)
            if not s.success:
                raise RuntimeError(s.message)
            return case.pin.points(s.y[:, -1]), s.nfev
        return go

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours("DOP853", lambda t: t)(args.tols[0])          # (warm-up: compiled kernels)
        ours("DOP853", lambda t: t, False)(args.tols[0])
    for method in METHODS:
        tools[f"ours {method}"] = ladder(f"ours {method}", args.tols,
                                         ours(method, lambda t: t), ref, args,
                                         reaction_error)
        tools[f"ours {method} scipy loop"] = ladder(
            f"ours {method} scipy loop", args.tols, ours(method, lambda t: t, False), ref,
            args)
        if args.uniform_atol:
            n = mm.model.n_states
            tools[f"ours {method} uniform atol"] = ladder(
                f"ours {method} uniform", args.tols,
                ours(method, lambda t: np.full(n, t)), ref, args)
        tools[f"Pinocchio+scipy {method}"] = ladder(f"Pinocchio+scipy {method}", args.tols,
                                                    pinocchio(method), ref, args)
    if case.mujoco is not None:
        steps = [span / 50 / 2 ** k for k in range(args.steps)]

        def mj(dt):
            pts, n = case.mujoco.run(span, dt)
            return pts, 4 * n
        tools["MuJoCo RK4"] = ladder("MuJoCo RK4 (dt)", steps, mj, ref, args)
    return {"name": case.name, "description": case.description, "span_s": span,
            "points": case.points, "n_states_ours": int(mm.model.n_states),
            "nv_pinocchio": int(case.pin.nv), "reference": ref_meta,
            "mujoco_note": case.mujoco_note, "tools": tools}


# ---------------------------------------------------------------------------------------
# equal-error ratios
# ---------------------------------------------------------------------------------------
def front(rows):
    """The Pareto front of (error, seconds): sorted by error, each faster than every
    point more accurate than it."""
    pts = sorted((r["error_m"], r["seconds"]) for r in rows if "error_m" in r
                 and r["error_m"] > 0)
    out = []
    for e, t in pts:                           # from the most accurate
        if not out or t < out[-1][1]:
            out.append((e, t))
    return out


def time_at(rows, err):
    """Seconds to reach ``err`` (log-log interpolation on the front); when even the
    cheapest run is more accurate than ``err``, that run's time (an upper bound: the
    tool's steps are limited by stability there, or the ladder does not go looser),
    marked by :func:`bounded`; None when no run reached ``err``."""
    f = front(rows)
    if not f or err < f[0][0]:
        return None
    if err >= f[-1][0]:
        return float(f[-1][1])
    for (e1, t1), (e2, t2) in zip(f, f[1:]):
        if e1 <= err <= e2:
            w = (np.log(err) - np.log(e1)) / (np.log(e2) - np.log(e1)) if e2 > e1 else 0.0
            return float(np.exp(np.log(t1) + w * (np.log(t2) - np.log(t1))))
    return float(f[0][1])


def bounded(rows, err) -> bool:
    f = front(rows)
    return bool(f) and err > f[-1][0]


def ratios(rec):
    t = rec["tools"]
    out = {}
    for err in TARGETS:
        row = {}
        for m in METHODS:
            a, b = time_at(t.get(f"ours {m}", []), err), \
                time_at(t.get(f"Pinocchio+scipy {m}", []), err)
            row[m] = a / b if a and b else None
        for m in METHODS:
            a, b = time_at(t.get(f"ours {m}", []), err), \
                time_at(t.get(f"ours {m} scipy loop", []), err)
            row[f"{m} compiled/scipy loop"] = a / b if a and b else None
        best_ours = [time_at(t[k], err) for k in (f"ours {m}" for m in METHODS) if k in t]
        best_pin = [time_at(t[k], err) for k in (f"Pinocchio+scipy {m}" for m in METHODS)
                    if k in t]
        bo = min((v for v in best_ours if v), default=None)
        bp = min((v for v in best_pin if v), default=None)
        row["best"] = bo / bp if bo and bp else None
        mj = time_at(t.get("MuJoCo RK4", []), err)
        row["best_vs_mujoco"] = bo / mj if bo and mj else None
        row["seconds"] = {"ours_best": bo, "pinocchio_best": bp, "mujoco": mj}
        row["upper_bound_used"] = sorted(k for k, rows in t.items()
                                         if "uniform" not in k and "scipy loop" not in k
                                         and bounded(rows, err))
        out[f"{err:.0e}"] = row
    # the compiled loop against scipy's stepping, tolerance by tolerance (the same steps:
    # the same errors), median over the ladder
    for m in METHODS:
        a = {r["setting"]: r["seconds"] for r in t.get(f"ours {m}", []) if "seconds" in r}
        b = {r["setting"]: r["seconds"] for r in t.get(f"ours {m} scipy loop", [])
             if "seconds" in r}
        common = [a[k] / b[k] for k in a if k in b]
        out[f"{m} compiled/scipy loop, median"] = float(np.median(common)) if common \
            else None
    return out


def plot(rec, path):
    from bondgraph._plot import pyplot
    plt = pyplot("the work-precision plots")
    fig, ax = plt.subplots(figsize=(7, 5))
    style = {"ours RK45": ("C0", "o-"), "ours DOP853": ("C0", "s-"),
             "ours RK45 scipy loop": ("C4", "o:"), "ours DOP853 scipy loop": ("C4", "s:"),
             "ours RK45 uniform atol": ("C7", "o:"), "ours DOP853 uniform atol": ("C7", "s:"),
             "Pinocchio+scipy RK45": ("C1", "o--"), "Pinocchio+scipy DOP853": ("C1", "s--"),
             "MuJoCo RK4": ("C2", "^-.")}
    for name, rows in rec["tools"].items():
        pts = [(r["error_m"], r["seconds"]) for r in rows if "error_m" in r]
        if not pts:
            continue
        e, t = zip(*pts)
        color, fmt = style.get(name, (None, "x-"))
        ax.loglog(np.maximum(e, 1e-16), t, fmt, color=color, label=name, ms=4)
    ref = rec["reference"]["error_estimate_m"]
    if ref > 0:
        ax.axvline(ref, color="0.7", lw=0.8, ls=":", label="reference's own error")
    ax.set_xlabel(f"error at t = {rec['span_s']:g} s (m): max distance of "
                  f"{'link origins' if 'link' in rec['points'] else 'centres'}")
    ax.set_ylabel("wall time of one run (s)")
    ax.set_title(f"{rec['name']}: work-precision ({rec['n_states_ours']} states ours, "
                 f"nv = {rec['nv_pinocchio']})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(v):
    return "n/a" if v is None else f"{v:.2f}"


def headline(records):
    head = ["model"] + [f"{k} {e:.0e}" for e in TARGETS for k in ("RK45", "DOP853", "best")]
    lines = []
    for rec in records:
        r = rec["ratios"]
        lines.append([rec["name"]] + [fmt(r[f"{e:.0e}"][k]) + (
            "*" if any(k in b or k == "best" for b in r[f"{e:.0e}"]["upper_bound_used"]
                       if "MuJoCo" not in b) else "")
            for e in TARGETS for k in ("RK45", "DOP853", "best")])
    widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(x, widths)) for x in lines]
    out.append("")
    out.append("compiled loop / scipy loop (ours, same tolerances: the same steps), median "
               "over the ladder: " + "; ".join(
                   f"{rec['name']} " + ", ".join(
                       f"{m} {fmt(rec['ratios'].get(f'{m} compiled/scipy loop, median'))}"
                       for m in METHODS) for rec in records))
    return "\n".join(out)


def from_json(args):
    with open(args.from_json, encoding="utf-8") as f:
        saved = json.load(f)
    for rec in saved["models"]:
        rec["ratios"] = ratios(rec)
        plot(rec, os.path.join(ROOT, rec["plot"]))
    saved["headline_table"] = headline(saved["models"])
    log(saved["headline_table"])
    with open(args.from_json + ".tmp", "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1, default=float)
    os.replace(args.from_json + ".tmp", args.from_json)
    return 0


def main(args):
    if args.from_json:
        return from_json(args)
    os.makedirs(args.results, exist_ok=True)
    log(f"work-precision: models {', '.join(args.models)}; tolerances "
        f"{args.tols[0]:g} .. {args.tols[-1]:g}; repeat {args.repeat}")
    records, skipped = [], {}
    for name in args.models:
        log(f"{name}:")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case = make_case(name, args)
        except Exception as exc:  # noqa: BLE001 - a model that does not load is skipped
            skipped[name] = f"{type(exc).__name__}: {exc}"
            log(f"  skipped: {skipped[name]}")
            continue
        if case.mujoco is None:
            log(f"  MuJoCo: {case.mujoco_note}")
        rec = run_case(case, args)
        rec["ratios"] = ratios(rec)
        png = os.path.join(args.results, f"wp_{name.replace('-', '')}.png")
        plot(rec, png)
        rec["plot"] = os.path.relpath(png, ROOT)
        records.append(rec)
    table = headline(records)
    log("\nours / Pinocchio + scipy, time at equal achieved error (m): per solver and "
        "best of each side (n/a: no run reached the error; *: a side's cheapest run is "
        "already more accurate, its time is used)")
    log(table)
    import mujoco
    import pinocchio
    import scipy
    meta = {"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "pinocchio": pinocchio.__version__, "mujoco": mujoco.__version__,
            "cpus": os.cpu_count(), "tolerances": args.tols, "repeat": args.repeat,
            "error": "max distance (m) of the model's points at the end of the span from "
                     "the reference", "targets_m": TARGETS}
    out = os.path.join(args.results, "work_precision.json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "headline_table": table, "skipped": skipped,
                   "models": records}, f, indent=1, default=float)
    os.replace(out + ".tmp", out)
    log(f"\nwritten: {os.path.relpath(out, ROOT)} and the plots wp_*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(parse_args()))
