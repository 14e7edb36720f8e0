"""What a model says about how to integrate it: the scale of its states and the time
scales of its sources.

- :func:`nominal_scales`: a nominal magnitude of every state (as Modelica's ``nominal``
  attribute): a capacitor's charge from its capacitance and the efforts of its domain,
  a momentum from its mass and the flows of its domain. :func:`~bondgraph.simulate`'s
  default absolute tolerance is a fraction of it, so that the default tolerances mean
  relative accuracy whatever the units and sizes (a femtofarad's charge of 5e-15 C and
  a 1000 kg mass's momentum alike).
- :func:`source_time_scales`: the largest step the sources allow over a span (a fraction
  of the shortest period of a periodic source) and the times where a source jumps or
  has a kink, where a run stops and restarts.

A *domain* is a part of the graph joined by junctions and one-ports only: the
two-ports (TF, GY, MTF, MGY) separate domains, whose efforts and flows have different
units (volts and newtons).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .element import Category, StateView
from .laws import merged_segments
from .reduction import StateSpaceModel

__all__ = ["nominal_scales", "source_time_scales", "TimeScales", "STEPS_PER_PERIOD",
           "ATOL_PER_RTOL"]

STEPS_PER_PERIOD = 20
"""A periodic source bounds the step to its shortest period over this (s): a solver
that steps over a period does not see what happens inside it (a rectifier's diode
conducts for a fraction of each period)."""

ATOL_PER_RTOL = 1e-2
"""The default absolute tolerance of a state is ``ATOL_PER_RTOL * rtol`` times its
nominal scale (with ``rtol = 1e-8``: 1e-10 of the scale, the old fixed default of 1e-10
for a state of scale 1)."""

X0_NOISE = 1e-10
"""A co-energy at the initial state below this fraction of the largest effort or flow
of the model (sources and initial state) is rounding noise, not a scale."""

_SAMPLES = 65
"""Times of the span at which a source of time is sampled for its magnitude."""


def _domains(model: StateSpaceModel) -> dict[str, int]:
    """Element name -> its domain (an integer; union-find over the bonds, not through
    two-ports)."""
    els = model._elements
    parent = {n: n for n in els}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for b in model.graph.bonds:
        a, h = b.tail, b.head
        if a not in els or h not in els:
            continue
        if els[a].category.is_two_port or els[h].category.is_two_port:
            continue
        parent[find(a)] = find(h)
    roots = {r: k for k, r in enumerate(dict.fromkeys(find(n) for n in els))}
    return {n: roots[find(n)] for n in els}


def _source_magnitude(law, t_grid: np.ndarray, view) -> float:
    """The largest |value| of a source over the times ``t_grid`` (0 where it cannot be
    evaluated: a user function that raises is the run's business, not the scale's)."""
    if law.constant is not None:
        return float(np.abs(law.constant).max(initial=0.0))
    times = t_grid if law.expression else t_grid[:1]     # (a user's function: once)
    best = 0.0
    for t in times:
        try:
            with np.errstate(all="ignore"):
                v = np.abs(np.asarray(law.value(float(t), view), dtype=float))
        except Exception:          # noqa: BLE001 (see the docstring)
            continue
        v = v[np.isfinite(v)]
        if v.size:
            best = max(best, float(v.max()))
    return best


class _ModelParts:
    """What :func:`nominal_scales` reads of a model alone (not of the state or span),
    worked out once per model (a model is never changed: ``with_parameters`` makes a
    new one): each element's domain, the sources with their domains, each storage
    element's field block and the diagonal of its inverse (linear ones), and the
    smallest and largest log resistance of each domain's linear resistors."""

    def __init__(self, model: StateSpaceModel):
        self.domain = domain = _domains(model)
        self.n_dom = max(domain.values(), default=-1) + 1
        self.sources = [(name, law, model._elements[name].category, domain[name])
                        for name, law in model.sources.items()]
        laws = {(sl.start, sl.stop): law for sl, law in model._nl_storage}
        self.storage = []
        for name in model.storage:
            el = model._elements[name]
            sl = model.state_slices[el.state_name]
            law = laws.get((sl.start, sl.stop))
            Fb = inv = None
            if law is None:
                Fb = model.F[sl, sl]
                try:
                    with np.errstate(all="ignore"):
                        inv = np.abs(np.diag(np.linalg.inv(Fb)))
                except Exception:      # noqa: BLE001 (a singular field)
                    Fb, inv = None, np.full(el.dim, np.nan)
            self.storage.append((name, sl, el.category, el.dim, law, Fb, inv))
        logR: list[list[float]] = [[] for _ in range(self.n_dom)]
        p = dict(model.parameters)
        for name, el in model._elements.items():
            if el.category is Category.RESISTANCE and getattr(el, "is_linear", True):
                try:
                    d = np.abs(np.diag(np.asarray(el.resistance_matrix(p), dtype=float)))
                except Exception:      # noqa: BLE001 (not a linear resistance)
                    continue
                logR[domain[name]] += [float(np.log(r)) for r in d if 0 < r < np.inf]
        self.log_r = [(min(v), max(v)) if v else None for v in logR]


_PARTS: "weakref.WeakKeyDictionary[StateSpaceModel, _ModelParts]" = \
    weakref.WeakKeyDictionary()
_PARTS_LOCK = threading.Lock()


def _model_parts(model: StateSpaceModel) -> _ModelParts:
    with _PARTS_LOCK:
        parts = _PARTS.get(model)
    if parts is None:
        parts = _ModelParts(model)
        with _PARTS_LOCK:
            _PARTS[model] = parts
    return parts


def _storage_parts(parts: _ModelParts, x0: np.ndarray):
    """For each storage element: (name, slice, category, the diagonal of its inverse
    field (inertia or compliance; NaN where unknown), its co-energy at x0)."""
    out = []
    for name, sl, cat, dim, law, Fb, inv in parts.storage:
        xs = x0[sl]
        try:
            with np.errstate(all="ignore"):
                if law is None:
                    if Fb is None:
                        raise ValueError("singular field")
                    co = Fb @ xs
                else:
                    Fb_x, co = law.tangent(xs), law.coenergy(xs)
                    inv = np.abs(np.diag(np.linalg.inv(Fb_x)))
        except Exception:          # noqa: BLE001 (a singular or undefined field)
            inv, co = np.full(dim, np.nan), np.zeros(dim)
        out.append((name, sl, cat, inv, np.abs(np.asarray(co, dtype=float))))
    return out


def nominal_scales(model: StateSpaceModel, t_span: tuple[float, float] | None = None,
                   x0: np.ndarray | None = None, *, effort: float | None = None,
                   flow: float | None = None) -> np.ndarray:
    """A nominal magnitude of every state component, shape ``(n_states,)``, in the
    state's own unit (C, kg m/s, m, ...), always positive and finite.

    A storage element's state is its inertia or compliance times a scale of its
    co-energy variable in its domain (see the module docstring): a C's charge q = C e
    with e the domain's effort scale, an I's momentum p = m f with f its flow scale (for
    a vector element, the diagonal of the inverse of its field). The effort scale of a
    domain is the largest magnitude of its effort sources (expressions of time sampled
    over ``t_span`` at 65 times, a user's function evaluated at its start), the flow
    scale that of its flow sources; a domain without sources (a free oscillation) takes
    them from its C elements' efforts and its I elements' flows at ``x0`` (ignoring
    those below :data:`X0_NOISE` of the model's largest: rounding noise of a body at
    rest). A domain with only one of the two takes the
    other through its linear resistors (f = e / R with the smallest resistance, e = R f
    with the largest: the larger estimates, since a scale too small would make a
    tolerance finer than the state's rounding); a domain with neither takes the largest
    of the other domains, else 1 (one unit of effort or flow). A nonlinear storage
    element takes its tangent at ``x0``; where that is singular, max(|x0|, 1). Kinematic
    states (positions, orientations, coordinates) and work states take 1 (m, rad, J).

    Parameters
    ----------
    model : StateSpaceModel
    t_span : (float, float), optional
        The run's span (s), over which sources of time are sampled (default: t = 0).
    x0 : ndarray (n_states,), optional
        The initial state (default: zeros).
    effort, flow : float, optional
        The effort and flow scales of every domain, given (the library's mechanisms give
        ``flow=1``: a momentum's scale is its mass times 1 m/s, its tolerance a
        velocity's, as in a joint-coordinate tool).

    Examples
    --------
    >>> from bondgraph import BondGraph, Se, OneJunction, R, C, assemble, assign_causality
    >>> bg = BondGraph("rc")
    >>> _ = bg.add(Se("V", 5.0), OneJunction("i"), R("R", 1e6), C("cap", compliance=1e-15))
    >>> for tail, head in [("V", "i"), ("i", "R"), ("i", "cap")]:
    ...     _ = bg.connect(tail, head)
    >>> round(float(nominal_scales(assemble(assign_causality(bg)))[0]), 20)   # C V (C)
    5e-15
    """
    n = model.n_states
    x0 = np.zeros(n) if x0 is None else np.asarray(x0, dtype=float)
    t0, t1 = (0.0, 0.0) if t_span is None else (float(t_span[0]), float(t_span[1]))
    grid = np.linspace(t0, t1, _SAMPLES) if t1 > t0 else np.array([t0])
    view = StateView(x0, model.state_slices)
    known = _model_parts(model)
    domain, n_dom = known.domain, known.n_dom
    E, F = np.zeros(n_dom), np.zeros(n_dom)
    for name, law, cat, dom in known.sources:
        if cat is Category.EFFORT_SOURCE:
            E[dom] = max(E[dom], _source_magnitude(law, grid, view))
        elif cat is Category.FLOW_SOURCE:
            F[dom] = max(F[dom], _source_magnitude(law, grid, view))
    parts = _storage_parts(known, x0)
    E0, F0 = np.zeros(n_dom), np.zeros(n_dom)      # the co-energies at x0
    for name, _, cat, _, co in parts:
        target = E0 if cat is Category.CAPACITANCE else F0
        if co.size and np.all(np.isfinite(co)):
            target[domain[name]] = max(target[domain[name]], float(co.max()))
    # the state at the start sets the scales of a domain without sources (a free
    # oscillation): not of one whose sources set them (a body at rest up to rounding
    # under gravity has no velocity scale of 1e-13 m/s), nor where it is rounding noise
    noise = X0_NOISE * max(E.max(initial=0.0), F.max(initial=0.0), E0.max(initial=0.0),
                           F0.max(initial=0.0))
    free = (E == 0) & (F == 0)
    for own, at_x0 in ((E, E0), (F, F0)):
        own[free] = np.where(at_x0[free] > noise, at_x0[free], 0.0)
    for k, span in enumerate(known.log_r):   # (upper estimates: an underestimated
        if span is not None:                  # scale is a tolerance tighter than the
            if E[k] == 0 and F[k] > 0:          # state's noise)
                E[k] = F[k] * float(np.exp(span[1]))
            elif F[k] == 0 and E[k] > 0:
                F[k] = E[k] / float(np.exp(span[0]))
    for arr, given in ((E, effort), (F, flow)):
        if given is not None:
            arr[:] = float(given)
        else:
            fallback = arr.max(initial=0.0)
            arr[arr == 0] = fallback if fallback > 0 else 1.0
    out = np.ones(n)
    for name, sl, cat, inv, _ in parts:
        co_scale = (E if cat is Category.CAPACITANCE else F)[domain[name]]
        out[sl] = inv * co_scale
        bad = ~(np.isfinite(out[sl]) & (out[sl] > 0))
        if bad.any():
            out[sl] = np.where(bad, np.maximum(np.abs(x0[sl]), 1.0), out[sl])
    return out


@dataclass(frozen=True)
class TimeScales:
    """What a model's sources say about a span: ``max_step`` (s; inf when no source
    bounds it), ``why`` (the source and its period, "" when none), ``breaks`` (sorted
    times in the span where a source jumps or has a kink after its start: the last float of
    the value before, where a run's segment ends) and ``starts`` (for each, the first
    float of the value after, where the next segment starts:
    :meth:`bondgraph.laws.SourceTiming.segments`)."""

    max_step: float
    why: str
    breaks: np.ndarray
    starts: np.ndarray


def source_time_scales(model: StateSpaceModel, t0: float, t1: float) -> TimeScales:
    """The step bound and the breaks of ``model``'s sources over [t0, t1] (see the
    module docstring): a source whose value is a sympy expression of ``t`` is analysed
    (:class:`~bondgraph.laws.SourceTiming`), a :class:`~bondgraph.TimeFunction` says its
    ``period`` and ``breaks``; the step is at most the shortest period over
    :data:`STEPS_PER_PERIOD`."""
    best, why, parts = np.inf, "", []
    for name, law in model.sources.items():
        timing = law.timing
        if timing is None:
            continue
        period = timing.period(t0, t1)
        if period is not None and period > 0 and period / STEPS_PER_PERIOD < best:
            best = period / STEPS_PER_PERIOD
            why = (f"1/{STEPS_PER_PERIOD} of the period {period:.6g} s of source "
                   f"'{name}'")
        parts.append(timing.segments(t0, t1))
    return TimeScales(best, why, *merged_segments(parts, t1))
