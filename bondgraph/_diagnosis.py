"""Why a run stopped, or why it crawled.

- :func:`singularity`: a description of a nearly singular H_4 at a state (naming the
  unknown sources involved), or "" when it is not.
- :data:`SINGULAR_CONDITION`: the scaled condition number above which it is.
- :func:`inconsistency`: a description of the constraints an initial state violates
  (a constraint flow c or a position constraint Phi away from zero), or "".
- :data:`CONSISTENCY_RTOL`: how far, relative to their scale, they may be.
- :func:`drift`: how far a run without stabilization left its constraints (its
  position constraints, and the constraint flows of those that define none), where
  that is more than :data:`DRIFT_RTOL` of their scale, or "".
- :class:`StiffnessMonitor`: Hairer's stiffness test for the explicit Runge-Kutta
  methods (RK45, DOP853), after every accepted step.
"""

from __future__ import annotations

import weakref

import numpy as np
from scipy.integrate import DOP853, RK45

from .errors import caused_by_interrupt

__all__ = ["singularity", "SINGULAR_CONDITION", "StiffnessMonitor", "STABILITY_BOUNDARY",
           "inconsistency", "CONSISTENCY_RTOL", "drift", "DRIFT_RTOL", "DRIFT_POINTS"]

STABILITY_BOUNDARY = {RK45: 3.25, DOP853: 6.1}
"""Where each explicit method's stability region crosses the negative real axis, in
h |lambda| (Hairer and Wanner, Solving ODEs II, section IV.2: 3.3 and 6.1; dopri5 and
dop853 test against 3.25 and 6.1)."""

SINGULAR_CONDITION = 1e8
"""Scaled condition number of H_4 above which a failed run is reported as singular."""


CONSISTENCY_RTOL = 1e-6
"""An initial state is consistent where every constraint flow is at most this fraction
of its scale (the largest flow on its constraint junction's bonds, or the model's
nominal velocity where that is larger: rounding in a mechanism at rest is not a
violation), and every position constraint at most this fraction of the kinematic
states' (the largest position or rotation, or their nominal scale): a state computed
in floating point is far inside (1e-15), one typed with six digits at the edge."""


def inconsistency(model, ev, t: float, nominal: np.ndarray) -> str:
    """Which constraints the evaluation ``ev`` of ``model`` at time ``t`` (its initial
    state) violates beyond :data:`CONSISTENCY_RTOL`, worst first, or "" where none does;
    ``nominal``: the states' nominal scales (:func:`bondgraph.scales.nominal_scales`).

    A constraint flow c (the signed flow sum of a constraint 0-junction: Eq. (15)
    enforces dc/dt = 0, so c stays what it is at the start) is measured against the
    largest flow on that junction's bonds, at least the largest flow of the inertias
    (|F| times their momenta, or their nominal scales where larger); a position constraint Phi
    (where the model defines one) against the largest kinematic state, at least their
    largest nominal scale."""
    if not model.n_u2:
        return ""
    plan = _consistency_plan(model)
    source_of, where = plan[2], plan[3]
    ne = model.n_energy
    c = np.asarray(ev.constraint_flow, dtype=float)
    phi = np.asarray(ev.phi, dtype=float)
    w = np.abs(np.asarray(ev.bond_values, dtype=float))
    scale = _flow_scale(plan, w, np.asarray(ev.x, dtype=float)[:ne], nominal[:ne])
    position = _position_scale(model, np.asarray(ev.x, dtype=float), nominal)
    bad_c = ~(np.abs(c) <= CONSISTENCY_RTOL * scale)
    bad_p = ~np.isnan(phi) & ~(np.abs(phi) <= CONSISTENCY_RTOL * position)
    if not (bad_c.any() or bad_p.any()):
        return ""
    found = []
    for k in np.flatnonzero(bad_c):
        src, junction = where[source_of[k]]
        found.append((abs(c[k]) / max(scale[k], 1e-300), src,
                      f"the constraint flow of {src} (0-junction '{junction}') is "
                      f"{c[k]:.3g}, its scale {scale[k]:.3g}"))
    for k in np.flatnonzero(bad_p):
        src, junction = where[source_of[k]]
        found.append((abs(phi[k]) / max(position, 1e-300), src,
                      f"the position constraint of {src} (0-junction '{junction}') is "
                      f"{phi[k]:.3g}, the positions' scale {position:.3g}"))
    found.sort(key=lambda f: -f[0])
    worst, seen = [], set()
    for _, src, text in found:           # (the worst component of each source)
        if (src, text.startswith("the constraint flow")) not in seen:
            seen.add((src, text.startswith("the constraint flow")))
            worst.append(text)
    more = f" (and {len(worst) - 3} more)" if len(worst) > 3 else ""
    return (f"the initial state violates the constraints at t = {t:.6g} s: "
            + "; ".join(worst[:3]) + more)


DRIFT_RTOL = 1e-3
"""A run without stabilization whose position constraints reach this fraction of the
positions' scale, or whose constraint flows (of constraints that define no position
constraint) reach it of their scale, is said to have drifted (its motion there is off
the constraints)."""


DRIFT_POINTS = 64
"""Output points (evenly spread, the last one included) at which :func:`drift` reads
the position constraints: drift grows over a run, and the result's derived outputs
stay unevaluated until asked for."""


def drift(model, t: np.ndarray, x: np.ndarray, nominal: np.ndarray) -> str:
    """A description of how far a run of ``model`` without stabilization (output times
    ``t`` (n,), states ``x`` (n_states, n)) left its constraints at up to
    :data:`DRIFT_POINTS` of its output points, or "": a position constraint whose
    largest |Phi| exceeds :data:`DRIFT_RTOL` of the positions' scale (the largest
    kinematic state over the run, at least their nominal scale); a constraint that
    defines no position constraint (a velocity constraint alone: a core graph's
    0-junction, a rolling contact) whose constraint flow c exceeds it of its flow scale
    (as :func:`inconsistency` measures it, at that point)."""
    t, x = np.asarray(t, dtype=float), np.asarray(x, dtype=float)
    if not model.n_u2 or t.size == 0 or x.ndim != 2:
        return ""
    position = _position_scale(model, x, nominal)
    picks = np.unique(np.linspace(0, t.size - 1, min(t.size, DRIFT_POINTS)).round()
                      .astype(np.int64))
    worst = (0.0, 0, 0, 0.0)
    undefined = np.zeros(model.n_u2, dtype=bool)     # (constraints without a Phi)
    with np.errstate(all="ignore"):
        for j in picks:
            try:
                phi = np.asarray(model.functions.phi(x[:, j], {}), dtype=float)
            except Exception as exc:     # noqa: BLE001 - a state where Phi fails: skip
                if caused_by_interrupt(exc):
                    raise KeyboardInterrupt from exc
                continue
            undefined |= np.isnan(phi)
            size = np.where(np.isfinite(phi), np.abs(phi), 0.0)
            if size.size and size.max() > worst[0]:
                k = int(np.argmax(size))
                worst = (float(size[k]), k, int(j), float(phi[k]))
    found = []
    size, k, j, value = worst
    if size > DRIFT_RTOL * position:
        found.append((size / max(position, 1e-300),
                      f"the position constraints drifted in this run without "
                      f"stabilization: that of {_source_at(model, k)} reached {value:.3g} "
                      f"at t = {t[j]:.6g} s, {size / max(position, 1e-300):.2g} of the "
                      f"positions' scale {position:.3g}"))
    if undefined.any():
        found += _flow_drift(model, t, x, picks, nominal, undefined)
    if not found:
        return ""
    found.sort(key=lambda f: -f[0])
    return ("; ".join(text for _, text in found) + " (the motion there is off the "
            "constraints); pass stabilization=Baumgarte(alpha, beta) or a tighter rtol")


def _flow_drift(model, t: np.ndarray, x: np.ndarray, picks: np.ndarray,
                nominal: np.ndarray, which: np.ndarray) -> list:
    """[(ratio, text)] for the worst constraint flow among the components ``which`` (a
    mask over U_2) at the output points ``picks``, where it exceeds :data:`DRIFT_RTOL`
    of its flow scale: one evaluation per point (the sparse evaluation where it
    applies)."""
    plan = _consistency_plan(model)
    fast = model.sparse()
    ne = model.n_energy
    worst = (0.0, 0, 0, 0.0, 0.0)
    for j in picks:
        try:
            ev = fast.evaluate(t[j], x[:, j]) if fast.applicable else None
            if ev is None:
                ev = model.evaluate(t[j], x[:, j])
        except Exception as exc:         # noqa: BLE001 - a state it cannot evaluate: skip
            if caused_by_interrupt(exc):
                raise KeyboardInterrupt from exc
            continue
        with np.errstate(all="ignore"):
            c = np.asarray(ev.constraint_flow, dtype=float)
            w = np.abs(np.asarray(ev.bond_values, dtype=float))
            scale = _flow_scale(plan, w, x[:ne, j], nominal[:ne])
            ratio = np.where(which & np.isfinite(c), np.abs(c), 0.0) / np.maximum(scale,
                                                                               1e-300)
        if ratio.size and ratio.max() > worst[0]:
            k = int(np.argmax(ratio))
            worst = (float(ratio[k]), k, int(j), float(c[k]), float(scale[k]))
    ratio, k, j, value, scale = worst
    if not ratio > DRIFT_RTOL:
        return []
    src, junction = plan[3][plan[2][k]]
    return [(ratio, f"the constraint flows drifted in this run without stabilization: "
                    f"that of {src} (0-junction '{junction}', which defines no position "
                    f"constraint) reached {value:.3g} at t = {t[j]:.6g} s, {ratio:.2g} "
                    f"of its scale {scale:.3g}")]


def _flow_scale(plan: tuple, w: np.ndarray, X: np.ndarray,
                nominal: np.ndarray) -> np.ndarray:
    """Each constraint flow's scale: the largest |flow| ``w`` on its junction's bonds, at
    least the model's velocity: |F| times the momenta ``X`` or their ``nominal`` scales,
    whichever is larger (a junction of two bonds carries c itself on its other one)."""
    at, starts, source_of, _, absF = plan
    both = np.maximum(np.abs(np.asarray(X, dtype=float)), np.asarray(nominal, dtype=float))
    velocity = float((absF @ both).max(initial=0.0))
    local = np.maximum.reduceat(w[at], starts)
    return np.maximum(local[source_of], velocity)


def _source_at(model, k: int) -> str:
    """The constraint source (Se*) of U_2's component ``k``."""
    return next(n for n, sl in model.u2_slices.items() if sl.start <= k < sl.stop)


def _position_scale(model, x: np.ndarray, nominal: np.ndarray) -> float:
    """The positions' scale of ``model`` at the states ``x`` (n_states,) or
    (n_states, n): the largest kinematic state, at least their largest nominal scale."""
    ne, nk = model.n_energy, model.n_kinematic
    return max(float(np.abs(x[ne:ne + nk]).max(initial=0.0)),
               float(np.asarray(nominal[ne:ne + nk]).max(initial=0.0)))


_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _consistency_plan(model) -> tuple:
    """What :func:`inconsistency` reads of a model's structure (made once per model):
    the flow entries of every constraint junction's bonds in the bond values, where
    each source's start among them, each constraint component's source, the sources'
    (name, junction), and |F| on the inertias' rows."""
    try:
        plan = _PLANS.get(model)
    except TypeError:                    # (a model that cannot be weakly referenced)
        plan = None
    if plan is not None:
        return plan
    g, slices = model.graph, model.bond_slices
    at, starts, source_of, where = [], [], [], []
    for k, (src, sl) in enumerate(model.u2_slices.items()):
        (bond,) = g.bonds_of(src)
        junction = bond.head if bond.tail == src else bond.tail
        starts.append(len(at))
        for b in g.bonds_of(junction):
            f = slices[b.name][1]
            at += list(range(f.start, f.stop))
        source_of += [k] * (sl.stop - sl.start)
        where.append((src, junction))
    inertia = np.zeros(model.n_energy, dtype=bool)
    for name in model.storage:
        el = model._elements[name]
        if el.kind == "I":
            inertia[model.state_slices[el.state_name]] = True
    plan = (np.asarray(at, dtype=np.int64), np.asarray(starts, dtype=np.int64),
            np.asarray(source_of, dtype=np.int64), where,
            np.abs(np.asarray(model.F, dtype=float))[inertia])
    try:
        _PLANS[model] = plan
    except TypeError:
        pass
    return plan


def singularity(model, t: float, x: np.ndarray, stabilization) -> str:
    """A description of a nearly singular constraint matrix of ``model`` at (t, x), or
    ""."""
    try:
        with np.errstate(all="ignore"):
            ev = model.evaluate(t, x, stabilization=stabilization, redundancy_ok=True)
    except Exception as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        return ""
    H = ev.H4 if ev.H4 is not None else None
    if H is None or not np.all(np.isfinite(H)):
        return ""
    d = np.sqrt(np.abs(np.diag(H)))
    d = np.where(d > 0, d, 1.0)
    sv = np.linalg.svd(H / np.outer(d, d), compute_uv=False)
    structural = model.n_u2 - ev.rank
    live = sv[:len(sv) - structural] if structural > 0 else sv
    if live.size == 0 or live.min() > live.max() / SINGULAR_CONDITION:
        return ""
    return (f"singular configuration near t = {t:.6g} s: the constraint matrix is nearly "
            f"singular (scaled condition {live.max() / max(live.min(), 1e-300):.2g}); "
            f"{model.deficient_sources_text(H / np.outer(d, d), cutoff=live.min() * 1.0001)}")


class StiffnessMonitor:
    """Hairer's stiffness test for an explicit Runge-Kutta run (``RK45``, ``DOP853`` and
    their subclasses): after each accepted step of size h, h |lambda| is estimated as
    ``h |f(t+h, y_new) - f(t+h, y_s)| / |y_new - y_s|`` with y_s the last stage (also at
    t + h; both derivatives are already computed, so it costs no evaluation). A step is
    *stability-limited* when this exceeds the method's :data:`STABILITY_BOUNDARY` and the
    step is below a hundredth of the span: the step size is then set by a fast, decayed
    mode, not by the accuracy of the smooth solution (an accuracy-limited step has
    h |lambda| well inside the boundary). 15 such steps with never 6 ordinary ones in a
    row between them (dopri5's rule) make the run *stiff*: :attr:`message` then suggests
    an implicit method, with what its Jacobians would cost (an implicit method is not
    always cheaper: on contact mechanisms, whose Jacobians are formed by differences over
    most states and re-formed whenever a contact switches, Radau takes 1.4 to 3 times
    DOP853's time, benchmarks/README.md).

    Parameters
    ----------
    solver_cls : type
        The run's solver class (a monitor of any other class never fires).
    span : float
        The run's length (s).
    jacobian_cost : callable, optional
        () -> the evaluations one finite-difference Jacobian of the model costs (its
        column groups), or None; called once, when the message is first made.
    """

    STIFF_STEPS = 15
    RESET_AFTER = 6

    def __init__(self, solver_cls, span: float, jacobian_cost=None):
        self.boundary = next((b for cls, b in STABILITY_BOUNDARY.items()
                              if issubclass(solver_cls, cls)), None)
        self.span = float(span)
        self.count = 0
        self.calm = 0
        self.limited = 0           # stability-limited steps in all
        self.stiff_at: float | None = None
        self.h_lambda = 0.0
        self._jacobian_cost = jacobian_cost
        self._cost: str | None = None         # (the Jacobian's cost in words, made once)

    @property
    def active(self) -> bool:
        return self.boundary is not None

    def step(self, solver) -> bool:
        """Test the step ``solver`` just accepted; True when it makes the run stiff (once:
        later calls return False)."""
        if self.boundary is None:
            return False
        h = solver.h_previous
        rho = 0.0
        if h and abs(h) <= 1e-2 * self.span:
            K, s = solver.K, solver.n_stages
            y_s = solver.y_old + h * (K[:s - 1].T @ solver.A[s - 1, :s - 1])
            den = float(np.linalg.norm(solver.y - y_s))
            num = float(np.linalg.norm(K[s] - K[s - 1]))
            rho = abs(h) * num / den if den > 0 and np.isfinite(num) else 0.0
        if rho > self.boundary:
            self.limited += 1
            self.calm = 0
            self.count += 1
            self.h_lambda = max(self.h_lambda, rho)
            if self.count == self.STIFF_STEPS and self.stiff_at is None:
                self.stiff_at = float(solver.t)
                return True
        else:
            self.calm += 1
            if self.calm >= self.RESET_AFTER:
                self.count = 0
        return False

    @property
    def message(self) -> str:
        """Why the run looks stiff, and what an implicit method would cost ("" while it
        does not look stiff)."""
        if self.stiff_at is None:
            return ""
        if self._cost is None:
            self._cost = -1                  # (unknown)
            if self._jacobian_cost is not None:
                try:
                    self._cost = int(self._jacobian_cost())
                except Exception as exc:     # (a model the pattern cannot read: no count)
                    if caused_by_interrupt(exc):
                        raise KeyboardInterrupt from exc
        head = (f"the run looks stiff from t = {self.stiff_at:.6g} s: the step size is "
                f"limited by the explicit method's stability (h |lambda| up to "
                f"{self.h_lambda:.3g} > {self.boundary:g}), not by accuracy; "
                f"{self.limited} such steps; ")
        if self._cost == 0:
            return head + ("an implicit method is far cheaper here: method=\"Radau\" (or "
                           "\"BDF\"), with the linear model's exact, constant Jacobian")
        each = f"{self._cost} evaluations" if self._cost > 0 else \
            "an evaluation per group of states"
        return head + (f"an implicit method (method=\"Radau\" or \"BDF\") steps at the "
                       f"accuracy the motion needs instead, but each Jacobian it forms "
                       f"costs {each} here (finite differences): it is cheaper where it "
                       f"keeps its Jacobians (smooth stiff modes) and can be slower where "
                       f"contact or switching forces make it form them again and again; "
                       f"compare both on a short span")
