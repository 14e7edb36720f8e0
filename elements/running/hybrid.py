"""Runs of mechanisms with joint stops and Coulomb friction: a run that switches modes.

A port with a limit or friction (:attr:`~elements.JointAxis.switched`) is, at any time,
in one mode:

- **free**: its lock source (friction, impact stops) is an Se of effort
  -coulomb * s, with s the direction it slides in (0 without friction); each compliant
  stop's spring and damper are engaged (their parameters as given) or not (zero);
- **held**: its lock source is an Sf of zero flow (the joint sticks, or rests on an
  impact stop); the Sf's effort is the effort that holds it.

Friction that follows the joint's transverse reaction (``mu``,
:mod:`elements.running.joint_load`) slides under a lock effort that is a law of the
state, solved with the reaction at every evaluation (a model built per set of modes,
kept), and sticks or slips against the static level under the reaction of the
evaluation that gives the holding effort.

The run is a sequence of ordinary runs (:func:`bondgraph.simulate`), each of one graph
(the mechanism with some ports held) with fixed parameters, ended by the first event
that changes a mode (all located to 1e-14 s on the step's interpolant):

- a sliding port's rate reaches zero: it sticks if the effort that would hold it is at
  most the static friction, else it slides on the other way;
- a held port's holding effort exceeds the static friction (or, resting on a stop,
  would have to pull): it slides (moves off the stop);
- a coordinate reaches an impact stop: an impulse along the axis sets its rate to
  -e times the rate before (zero and held when slower than ``rest_speed``); the
  impulse's effect on every momentum is the model's own response to a unit effort on
  the axis (the reduced equations are affine in a source's effort), so every
  constraint keeps holding; the kinetic energy it takes is recorded;
- a coordinate crosses a compliant stop: the stop engages or lets go.

Bounces that accumulate (a Zeno run: a joint pressed onto its stop bounces ever lower,
infinitely often before a finite time) come to rest: a rebound whose next flight,
predicted from the coordinate's acceleration after the impact (2 |qd+| / |qdd|, the
flight of a constant acceleration), would rise less than :data:`ZENO_HEIGHT` off the
stop or, with all the bounces after it (a geometric series of ratio e), last less than
:data:`ZENO_TIME` of the span rests on the stop, as one slower than ``rest_speed``
does. The first step after a rebound is an eighth of its predicted flight (at most
1e-6 of the span), so that its end is off the stop; and the stop's events have a
tolerance (:data:`STOP_TOLERANCE`): a step that ends past a stop with no crossing seen
(a bounce shorter than the step) is searched for the crossing on its interpolant and
not accepted beyond it (:mod:`bondgraph._events`). A run whose output still has a
coordinate past an impact stop by more than :data:`STOP_TOLERANCE` ends with status
``STEP_FAILED`` naming the joint, never ``SUCCESS``.

States move from one graph to the next by name: a held port's rotor inertias are left
out of its graph (a flow source sets their rate) and their momenta are zero there,
exactly. Outputs derived from the states (reactions, efforts) are computed for each
stretch with the graph and parameters that ran it.

- :func:`run`: the run (called by :meth:`~elements.MechanismModel.simulate`).
- :class:`Switch`: one mode change, with the energy an impact took.
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from bondgraph import IntegrationWarning, ModelError, simulate
from bondgraph.results import SimulationResult, Status, summed_diagnostics

from elements.build_index import Kind
from elements.contact.tunnelling import TunnelWatch, tunnelled
from elements.running.joint_load import FrictionLoopError, LoadedFriction, static_limit
from elements.running.switch import Hold, Switch, SwitchKind

__all__ = ["run", "Switch", "SwitchKind", "Hold", "Event", "PortMode", "STOP_TOLERANCE", "ZENO_HEIGHT", "ZENO_TIME"]

STOP_TOLERANCE = 1e-9
"""How far (rad or m) a coordinate may be past an impact stop in a run's output, and
past a stop's (or a sliding rate past zero, rad/s or m/s) at a step's end before the
step is searched for a crossing it missed. Located impacts are within about 1e-14 s
times the rate of the stop."""

ZENO_HEIGHT = 1e-12
"""A rebound predicted to rise less than this off its stop (rad or m) rests on it."""

ZENO_TIME = 1e-9
"""A rebound whose bounces would all be over within this fraction of the run's span
rests on the stop (a Zeno run's accumulation)."""


class Event(Enum):
    """The kinds of a stretch's terminal events: a stuck port's hold exceeds the static
    friction (release), a resting port's hold would pull (leave), a sliding port's rate
    reaches zero (halt), a compliant stop is crossed (cross), an impact stop is reached
    (impact)."""

    RELEASE = "release"
    LEAVE = "leave"
    HALT = "halt"
    CROSS = "cross"
    IMPACT = "impact"


@dataclass
class PortMode:
    """The mode of one switched port (see the module docstring)."""

    axis: Any
    joint: str
    held: Hold | None = None      # None: free to move
    slide: int = 0                # direction of sliding under friction: +1, -1 or 0
    contact: dict[str, bool] = field(default_factory=dict)   # compliant stops engaged

    @property
    def loaded_slide(self) -> bool:
        """Whether it slides under friction that follows its load (its lock effort a
        law: :mod:`elements.running.joint_load`)."""
        f = self.axis.friction
        return self.held is None and self.slide != 0 and f is not None and f.loaded


class _Stretch:
    """One ordinary run of the hybrid run: its graph, its output points and their
    canonical states."""

    def __init__(self, variant, ts, xs):
        self.variant, self.ts, self.xs = variant, ts, xs


# kept with a mechanism model for its later runs (with_parameters makes another model):
# its variants by held ports, and each model's copies with new values by those values
# (weak keys: what a model keeps never refers to it, so it goes when its user drops it)
_VARIANTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_VALUED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _Runner:
    def __init__(self, mm, stab, t_span=(0.0, 1.0)):
        self.mm, self.stab = mm, stab
        self.t_span = (float(t_span[0]), float(t_span[1]))
        self.flight: float | None = None     # predicted flight of the last rebound (s)
        self.ports = [PortMode(ax, j.name) for j in mm.mechanism.joints.values()
                      for ax in j.axes if ax.switched]
        self.names = mm.model.state_names
        self.slices = mm.model.state_slices
        self._variants: dict[frozenset, Any] = _VARIANTS.setdefault(mm, {})
        self._loaded: dict[tuple, Any] = {}     # configured models with friction laws
        self.switches: list[Switch] = []

    # -- graphs, parameters and states ---------------------------------------------------
    def with_values(self, v, vals: dict):
        """``v.with_parameters(vals)``, made once per model and values: modes recur
        (rebounds, sticks and slips), and a new model builds its evaluation again."""
        if not vals:
            return v
        kept = _VALUED.setdefault(v, {})
        key = tuple(sorted(vals.items()))
        if key not in kept:
            kept[key] = v.with_parameters(vals)
        return kept[key]

    def variant(self, held: frozenset, laws: dict | None = None):
        """The mechanism model with the ports ``held`` locked (its drives, e.g. a
        prescribed motion's, and the user's parameter values carried over), and the
        locks of ports in ``laws`` sliding under those efforts (a new model each)."""
        if not held and not laws:
            return self.mm
        v = None if laws else self._variants.get(held)
        if v is None:
            mm = self.mm
            v = type(mm)(mm.mechanism, strict=mm.strict, drives=mm.drives, locks=held,
                         friction_laws=laws)
            own = v.parameters
            v = v.with_parameters({k: val for k, val in mm.parameters.items() if k in own})
            own_u2 = v.model.u2_slices
            if any(n not in own_u2 or own_u2[n].stop - own_u2[n].start != sl.stop - sl.start
                   for n, sl in mm.model.u2_slices.items()):
                raise ModelError(
                    f"holding joint coordinate(s) {', '.join(sorted(held))} still (a stick "
                    f"or a rest on a stop) changes the mechanism's constraint structure; "
                    f"stops and friction are not supported on these ports")
            if not laws:
                self._variants[held] = v
        return v

    def configured(self, modes: list[PortMode], plain: bool = False):
        """The model (MechanismModel) of ``modes``: its graph and parameter values. Ports
        that slide under friction following their load get their lock effort from a
        :class:`~elements.running.joint_load.LoadedFriction` (one model per set of modes
        and values, kept), unless ``plain``: then their lock is a constant -coulomb * s
        like the others' (the graph an impulse is computed on)."""
        held = frozenset(p.axis.port for p in modes if p.held)
        loaded = [] if plain else [p for p in modes if p.loaded_slide]
        v = self.variant(held)
        vals = {}
        base = self.mm.parameters
        for p in modes:
            ax = p.axis
            lock = v.index.find(Kind.LOCK, ax.port)
            if not p.held and lock and all(p is not q for q in loaded):  # (held: an Sf)
                fc = ax.friction.coulomb if ax.friction is not None else 0.0
                vals[lock[0].parameters["effort"]] = -fc * p.slide
            for damper in v.index.find(Kind.STOP_DAMPER, ax.port):
                c = damper.parameters["c"]
                vals[c] = base[c] if p.contact.get(damper.side, False) else 0.0
        if not loaded:
            return self.with_values(v, vals)
        key = (held, tuple((p.axis.port, p.slide) for p in loaded),
               tuple(sorted(vals.items())))
        w = self._loaded.get(key)
        if w is None:
            law = LoadedFriction([(p.axis, p.slide) for p in loaded], self.stab)
            w = self.variant(held, {p.axis.port: law.function(i)
                                    for i, p in enumerate(loaded)})
            w = w.with_parameters(vals) if vals else w
            law.bind(w)
            self._loaded[key] = w
        return w

    def to_variant(self, v, x: np.ndarray) -> np.ndarray:
        return np.array(_state_in(v.model, self.mm.model, x), dtype=float)

    def from_variant(self, v, xv: np.ndarray) -> np.ndarray:
        if v.model.state_names == self.names:
            return np.array(xv, dtype=float)
        x = np.zeros(self.mm.model.n_states)
        for n, sl in v.model.state_slices.items():
            x[self.slices[n]] = xv[sl]
        return x

    # -- what events read ------------------------------------------------------------------
    def q(self, v, xv, p: PortMode) -> float:
        return float(xv[v.model.state_slices[p.axis.state]][0])

    def qd(self, v, xv, p: PortMode) -> float:
        return float(v.coordinate_rates(xv, p.joint)[p.axis.index])

    def qdd(self, v, t, xv, p: PortMode) -> float:
        """The coordinate's acceleration at (t, xv) in the graph ``v`` (rad/s^2 or m/s^2;
        a central difference of its rate along the state's derivative, for predictions:
        the rate is affine in the momenta, and 1e-6 s keeps rounding at 1e-10 of it)."""
        f = v.model.rhs(t, xv, self.stab)
        h = 1e-6
        return (self.qd(v, xv + h * f, p) - self.qd(v, xv - h * f, p)) / (2.0 * h)

    def evaluation(self, v, t, xv):
        """Every bond value of the graph ``v`` at (t, xv), read by a held port's events
        at every step's end: the sparse evaluation, else (not applicable, singular or
        not finite) the dense one, which handles redundancy and explains a failure."""
        sp = v.model.sparse()
        if sp.applicable:
            with np.errstate(all="ignore"):
                ev = sp.evaluate(t, xv, self.stab)
            if ev is not None and np.all(np.isfinite(ev.bond_values)):
                return ev
        return v.model.evaluate(t, xv, stabilization=self.stab, redundancy_ok=True)

    def holding(self, v, t, xv, p: PortMode) -> float:
        """The effort of a held port's lock (along +q on the child; N or N m)."""
        return self.hold_and_limit(v, t, xv, p)[0]

    def hold_and_limit(self, v, t, xv, p: PortMode) -> tuple[float, float]:
        """A held port's holding effort (along +q on the child) and the largest it may
        be before the port slides (its static friction, with the load part under the
        transverse reaction of the same evaluation), N or N m."""
        ev = self.evaluation(v, t, xv)
        e, _ = v.model.bond_slices[v.index.one(Kind.LOCK, p.axis.port).bond]
        return float(ev.bond_values[e][0]), static_limit(v, p.axis, ev.bond_values, xv)

    def spare(self, v, t, xv, p: PortMode, sign: float | None = None) -> float:
        """How far a held port's hold is past what holds it (N or N m; > 0: it moves):
        ``|hold| - limit`` when sticking, ``sign * hold - limit`` resting on a stop
        (``sign`` +1 on the upper stop, -1 on the lower: a hold that would pull)."""
        h, limit = self.hold_and_limit(v, t, xv, p)
        return (abs(h) if sign is None else sign * h) - limit

    def events(self, v, modes):
        """The terminal events of a stretch, each tagged with (port mode, Event, side)."""
        out = []

        def make(g, p, kind, side=None, direction=0.0, tolerance=None):
            g.terminal, g.direction, g.tag = True, direction, (p, kind, side)
            g.scan_steps = True      # (of the stretch's state alone: see bondgraph._fastrk)
            if tolerance is not None:
                g.tolerance = tolerance
            out.append(g)

        for p in modes:
            ax, lim = p.axis, p.axis.limit
            if p.held is Hold.STICK:
                make(lambda t, x, p=p: self.spare(v, t, x, p), p, Event.RELEASE, None, 1.0)
                continue
            if p.held is not None:   # resting on a stop: leaves it when the hold would pull
                sign = 1.0 if p.held is Hold.UPPER else -1.0
                make(lambda t, x, p=p, s=sign: self.spare(v, t, x, p, s),
                     p, Event.LEAVE, p.held.value, 1.0)
                continue
            if ax.friction is not None and p.slide:
                make(lambda t, x, p=p: p.slide * self.qd(v, x, p), p, Event.HALT, None,
                     -1.0, STOP_TOLERANCE)
            if lim is None:
                continue
            for side, at in lim.sides():
                sign = 1.0 if side == "upper" else -1.0
                if lim.kind == "impact":
                    make(lambda t, x, p=p, at=at, s=sign: s * (self.q(v, x, p) - at), p,
                         Event.IMPACT, side, 1.0, STOP_TOLERANCE)
                else:
                    # only the crossing that changes the contact (into the stop when
                    # apart, out of it when in contact): right after a switch the
                    # function starts at zero, and rounding there must not count as
                    # the crossing just taken (a Zeno chain of switches at one time)
                    into = -1.0 if p.contact.get(side, False) else 1.0
                    make(lambda t, x, p=p, at=at, s=sign: s * (self.q(v, x, p) - at), p,
                         Event.CROSS, side, into, STOP_TOLERANCE)
        return out

    # -- switches ------------------------------------------------------------------------
    def hold_effort(self, t, x, p: PortMode, modes, held: Hold) -> tuple[float, float]:
        """The effort that would hold port ``p`` still (held as ``held``) at (t, x), and
        the largest it may be (see :meth:`hold_and_limit`)."""
        trial = [dataclasses.replace(m, contact=dict(m.contact)) for m in modes]
        tp = trial[modes.index(p)]
        tp.held, tp.slide = held, 0
        v = self.configured(trial)
        return self.hold_and_limit(v, t, self.to_variant(v, x), tp)

    def settle(self, t, x, p: PortMode, modes) -> None:
        """A port with friction and zero rate: stick if the holding effort is within
        the static friction, else slide the way the other efforts push."""
        h, limit = self.hold_effort(t, x, p, modes, Hold.STICK)
        if abs(h) <= limit:
            p.held, p.slide = Hold.STICK, 0
            self.switches.append(Switch(t, p.axis.port, SwitchKind.STICK))
        else:
            p.held, p.slide = None, (-1 if h > 0 else 1)
            self.switches.append(Switch(t, p.axis.port, SwitchKind.SLIDE,
                                        direction=p.slide))

    def impulse(self, t, x, p: PortMode, modes, target: float) -> np.ndarray:
        """The state after an impulse along ``p``'s axis that sets its rate to
        ``target``: the momenta move by the model's response to a unit effort there."""
        v = self.configured(modes, plain=True)
        xv = self.to_variant(v, x)
        key = v.index.one(Kind.LOCK, p.axis.port).parameters["effort"]
        probe = self.with_values(v, {key: v.parameters[key] + 1.0})
        d = probe.model.rhs(t, xv) - v.model.rhs(t, xv)
        mask = np.zeros_like(d, dtype=bool)
        for b in v.mechanism.bodies.values():
            for s in (b.linear_momentum, b.angular_momentum):
                mask[v.model.state_slices[s]] = True
        for ax in (a for j in v.mechanism.joints.values() for a in j.axes):
            for stem in v._rotors(ax):
                mask[v.model.state_slices[v.graph.element(stem).state_name]] = True
        d = np.where(mask, d, 0.0)
        before = self.qd(v, xv, p)
        gain = self.qd(v, xv + d, p) - before
        if not gain > 0:
            raise ModelError(f"joint coordinate '{p.axis.port}' has no inertia to take an "
                             f"impact at t = {t:.6g} s (its response to an impulse is {gain:g})")
        return self.from_variant(v, xv + d * ((target - before) / gain))

    def kinetic(self, x) -> float:
        """Energy stored in the I elements at canonical state ``x`` (J)."""
        m = self.mm.model
        vals = self.mm.parameters
        out = 0.0
        for el in self.mm.graph.elements.values():
            if el.kind == "I":
                p = x[m.state_slices[el.state_name]]
                out += 0.5 * float(p @ (el.field_matrix(vals) @ p))   # (F maps p to flow)
        return out

    def switch(self, t, x, p: PortMode, kind: Event, side: str | None,
               modes) -> np.ndarray:
        """Apply the event ``kind`` (on stop ``side``) of port ``p`` at (t, x); the state
        after it."""
        port = p.axis.port
        if kind is Event.RELEASE or kind is Event.LEAVE:
            v = self.configured(modes)
            h = self.holding(v, t, self.to_variant(v, x), p)
            left = p.held
            p.held = None
            if p.axis.friction is not None:
                p.slide = -1 if h > 0 else 1
            self.switches.append(
                Switch(t, port, SwitchKind.SLIDE, direction=-1 if h > 0 else 1)
                if kind is Event.RELEASE else Switch(t, port, SwitchKind.LEAVE, left.value))
            return x
        if kind is Event.HALT:
            self.settle(t, x, p, modes)
            return x
        if kind is Event.CROSS:
            on = not p.contact.get(side, False)
            p.contact[side] = on
            self.switches.append(Switch(t, port, SwitchKind.CONTACT if on else
                                        SwitchKind.SEPARATE, side))
            return x
        # an impact
        lim = p.axis.limit
        v = self.configured(modes)
        before = self.qd(v, self.to_variant(v, x), p)
        target = -lim.restitution * before
        rest = abs(target) < lim.rest_speed or lim.restitution == 0.0
        sign = 1.0 if side == "upper" else -1.0
        ke0 = self.kinetic(x)
        x0 = x
        x = self.impulse(t, x0, p, modes, 0.0 if rest else target)
        if not rest:
            rest = self.zeno(t, x, p, modes, sign, lim.restitution)
            if rest:
                x = self.impulse(t, x0, p, modes, 0.0)
        loss = ke0 - self.kinetic(x)
        after = self.qd(v, self.to_variant(v, x), p)
        if rest:
            # it rests on the stop unless the hold would have to pull it there
            h, limit = self.hold_effort(t, x, p, modes, Hold(side))
            if sign * h <= limit:
                p.held, p.slide = Hold(side), 0
                self.switches.append(Switch(t, port, SwitchKind.REST, side, 0, loss, before,
                                            after))
                return x
            self.switches.append(Switch(t, port, SwitchKind.IMPACT, side, 0, loss, before,
                                        after))
            if p.axis.friction is not None:
                p.slide = -int(sign)
            else:
                p.slide = 0
        else:
            self.switches.append(Switch(t, port, SwitchKind.IMPACT, side, 0, loss, before,
                                        after))
            if p.axis.friction is not None:
                p.slide = 1 if target > 0 else -1
        return x

    def zeno(self, t, x, p: PortMode, modes, sign: float, e: float) -> bool:
        """Whether the rebound at (t, x) (the state after the impulse) is one of bounces
        that accumulate (see the module docstring); else its predicted flight (s; when
        the coordinate is pulled back onto the stop) is kept in :attr:`flight`."""
        trial = [dataclasses.replace(m, contact=dict(m.contact)) for m in modes]
        tp = trial[modes.index(p)]
        if p.axis.friction is not None:
            tp.held, tp.slide = None, -int(sign)
        v = self.configured(trial)
        xv = self.to_variant(v, x)
        speed = abs(self.qd(v, xv, tp))
        pull = sign * self.qdd(v, t, xv, tp)           # towards the stop
        if not pull > 0.0:
            return False
        flight = 2.0 * speed / pull
        t0, t1 = self.t_span
        floor = max(ZENO_TIME * (t1 - t0), 1e4 * np.finfo(float).eps * max(abs(t0), abs(t1)))
        series = flight / (1.0 - e) if e < 1.0 else flight
        if speed * speed / (2.0 * pull) < ZENO_HEIGHT or series < floor:
            return True
        self.flight = min(self.flight or np.inf, flight)
        return False

    def start(self, t0, x0, modes) -> np.ndarray:
        """The modes at the initial state (and the state: a coordinate that starts on
        an impact stop, moving into it, takes the impact); a ModelError for a coordinate
        beyond an impact stop."""
        v = self.mm
        touching = []
        for p in modes:
            lim = p.axis.limit
            q = self.q(v, x0, p)
            if lim is not None:
                for side, at in lim.sides():
                    beyond = q > at if side == "upper" else q < at
                    if lim.kind == "impact" and beyond:
                        raise ModelError(
                            f"joint coordinate '{p.axis.port}' starts at {q:g} "
                            f"{p.axis.unit}, beyond its {side} stop at {at:g}: start it "
                            f"within [{-np.inf if lim.lower is None else lim.lower:g}, "
                            f"{np.inf if lim.upper is None else lim.upper:g}]")
                    if lim.kind == "compliant":
                        p.contact[side] = bool(beyond)
                    elif abs(q - at) <= 1e-12 * max(1.0, abs(at)):
                        touching.append((p, side))
            if p.axis.friction is not None:
                rate = self.qd(v, x0, p)
                if rate != 0.0:
                    p.slide = 1 if rate > 0 else -1
        for p, side in touching:
            into = self.qd(v, x0, p) * (1.0 if side == "upper" else -1.0)
            if into >= 0.0:
                x0 = self.switch(t0, x0, p, Event.IMPACT, side, modes)
        for p in modes:
            if p.axis.friction is not None and not p.slide and not p.held:
                self.settle(t0, x0, p, modes)
        return x0


def run(mm, x0: np.ndarray, t_span: tuple[float, float], grid: np.ndarray, *, method,
        rtol, atol, stabilization, strict: bool, max_switches: int = 10_000,
        events=(), **kwargs) -> tuple[SimulationResult, list[Switch]]:
    """Simulate ``mm`` (a MechanismModel with switched ports) from ``x0`` over
    ``t_span``, output at ``grid``; the joined bond-graph result (in ``mm``'s state
    layout) and the switches. ``atol``: a value, or a function of a stretch's model (a
    variant of ``mm``'s, its own state layout) giving that model's. See the docstring."""
    r = _Runner(mm, stabilization, t_span)
    modes = r.ports
    t, x = float(t_span[0]), np.array(x0, dtype=float)
    x = r.start(t, x, modes)
    user_events = list(events) if not callable(events) else [events]
    stretches: list[_Stretch] = []
    emitted: set[float] = set()
    nfev = n_steps = 0
    first = last = None
    diagnostics: list = []
    # after a switch an event function starts at zero: a short first step puts a step's
    # end on the side the motion leaves to, so that a quick return (a small bounce) is
    # seen as a crossing
    user_first = kwargs.pop("first_step", None)
    short = 1e-6 * (t_span[1] - t_span[0])
    tunnel = t_tunnel = None            # (a shape through another: docs/contact.md)
    while True:
        v = r.configured(modes)
        evs = r.events(v, modes)
        watch = [] if mm.index.contact is None else \
            [TunnelWatch(mm.index.contact, v.model.state_slices)]
        pending = grid[(grid >= t) & (grid <= t_span[1])]
        h0 = user_first if first is None else min(user_first or short, short)
        if r.flight is not None and np.isfinite(r.flight):
            h0 = min(h0 or short, r.flight / 8.0)    # its end off the stop: see the docstring
        r.flight = None
        try:
            seg = simulate(v.model, (t, t_span[1]), r.to_variant(v, x), t_eval=pending,
                           method=method, rtol=rtol,
                           atol=atol(v.model) if callable(atol) else atol,
                           stabilization=stabilization,
                           strict=strict, events=evs + user_events + watch, first_step=h0,
                           check_start=first is None, **kwargs)
        except FrictionLoopError as exc:
            if last is None:                # (at the initial state: nothing to keep)
                raise
            # a stretch whose first state has no sliding state (joint_load's docstring):
            # the run ends there, named, with the stretches before it
            last = dataclasses.replace(last, status=Status.CALLBACK_ERROR, success=False,
                                       failure_time=t, message=str(exc))
            warnings.warn(f"simulation failed: {exc}", IntegrationWarning, stacklevel=3)
            break
        first = first or seg
        last = seg
        diagnostics.append(seg.diagnostics)
        nfev += seg.nfev
        n_steps += seg.n_steps
        keep = [k for k, tk in enumerate(seg.t) if tk in pending and tk not in emitted]
        emitted.update(seg.t[keep].tolist())
        stretches.append(_Stretch(v, seg.t[keep],
                                  np.array([r.from_variant(v, seg.x[:, k]) for k in keep]).T
                                  if keep else np.zeros((len(x), 0))))
        if seg.status is not Status.EVENT or not seg.t.size:
            break
        if watch and watch[0].hit is not None:
            tunnel, t_tunnel = watch[0], float(seg.t[-1])
            break
        te = float(seg.t[-1])
        fired = [e for j, e in enumerate(evs) if len(seg.t_events[j]) and
                 seg.t_events[j][-1] == te]
        if not fired:          # a user's terminal event
            break
        if len(r.switches) >= max_switches:
            last = dataclasses.replace(seg, status=Status.EVENT_STORM, success=False,
                                       failure_time=te, message=(
                                           f"more than max_switches = {max_switches} "
                                           f"stop/friction switches by t = {te:.6g} s "
                                           f"(a Zeno run, or chatter)"))
            break
        x = r.from_variant(v, seg.x[:, -1])
        # one switch per port at a time, an impact first (a coordinate that reaches its
        # stop as its rate reaches zero rests there, and does not also settle): the
        # port's other events were those of its old mode, and its new mode's events
        # start from this state
        done = set()
        for e in sorted(fired, key=lambda e: e.tag[1] is not Event.IMPACT):
            p, kind, side = e.tag
            if p.axis.port not in done:
                done.add(p.axis.port)
                x = r.switch(te, x, p, kind, side, modes)
        t = te
    past = _past_stops(stretches, r)
    if past is not None:
        stretches, t_bad, message = past
        last = dataclasses.replace(last, status=Status.STEP_FAILED, success=False,
                                   failure_time=t_bad, message=message)
        warnings.warn(f"simulation failed: {message}", IntegrationWarning, stacklevel=3)
    joined = _join(mm, stretches, first, last, nfev, n_steps, stabilization,
                   summed_diagnostics(diagnostics))
    return tunnelled(joined, tunnel, kwargs, t_tunnel), r.switches


def _past_stops(stretches: list[_Stretch], r: _Runner):
    """None, or (when an output point has a coordinate past an impact stop by more than
    :data:`STOP_TOLERANCE`, which the events should have made impossible) the stretches
    cut after the first such point, its time, and a message naming the joint, the stop,
    the time and the excess: a run never ends in SUCCESS past a stop."""
    worst = None
    for i, st in enumerate(stretches):
        for p in r.ports:
            lim = p.axis.limit
            if lim is None or lim.kind != "impact" or not st.ts.size:
                continue
            q = st.xs[r.slices[p.axis.state]][0]
            for side, at in lim.sides():
                past = q - at if side == "upper" else at - q
                bad = np.flatnonzero(past > STOP_TOLERANCE)
                if bad.size and (worst is None or st.ts[bad[0]] < worst[0]):
                    k = int(bad[0])
                    worst = (float(st.ts[k]), i, k, p, side, at, float(past[k]))
    if worst is None:
        return None
    t, i, k, p, side, at, excess = worst
    cut = stretches[:i] + [_Stretch(stretches[i].variant, stretches[i].ts[:k + 1],
                                    stretches[i].xs[:, :k + 1])]
    return cut, t, (f"joint coordinate '{p.axis.port}' is {excess:.3g} {p.axis.unit} past "
                    f"its {side} stop at {at:g} at t = {t:.6g} s (more than the stop "
                    f"tolerance {STOP_TOLERANCE:g}): an impact was missed; the output "
                    f"is kept up to there")


def _join(mm, stretches, first, last, nfev, n_steps, stab, diagnostics
          ) -> SimulationResult:
    """One result in ``mm``'s layout whose derived outputs come, stretch by stretch,
    from the graph and parameters that ran it."""
    model = mm.model
    ts = np.concatenate([s.ts for s in stretches])
    xs = np.concatenate([s.xs for s in stretches], axis=1)
    bounds = np.cumsum([0] + [s.ts.size for s in stretches])

    def outputs(t, X):
        if t.size != bounds[-1]:
            raise ModelError("the derived outputs of a run with stops or friction are "
                             "made for its own output points only")
        out = {"U2": np.full((model.n_u2, t.size), np.nan),
               "c": np.full((model.n_u2, t.size), np.nan),
               "phi": np.full((model.n_u2, t.size), np.nan),
               "bond_values": np.zeros((model.layout.n_var, t.size)),
               "energy": np.full(t.size, np.nan)}
        failed, why = [], ""
        for s, a, b in zip(stretches, bounds[:-1], bounds[1:]):
            if a == b:
                continue
            vm = s.variant.model
            Xv = np.array([_state_in(vm, model, X[:, k]) for k in range(a, b)]).T
            d = _derived(vm, stab, t[a:b], Xv)
            failed += list(d["failed_at"])
            why = why or str(d["failed_why"].item())
            out["energy"][a:b] = d["energy"]
            dst, src = _u2_rows(vm, model)
            for key in ("U2", "c", "phi"):
                out[key][dst, a:b] = d[key][src]
            rows = _bond_rows(vm, model)
            out["bond_values"][rows[0], a:b] = d["bond_values"][rows[1]]
        out["failed_at"] = np.array(failed, dtype=float)
        out["failed_why"] = np.array(why, dtype=object)
        return out

    return dataclasses.replace(
        first, t=ts, x=xs, state_names=model.state_names, status=last.status,
        message=last.message, success=last.success, failure_time=last.failure_time,
        nfev=nfev, n_steps=n_steps, sol=None, _state_slices=dict(model.state_slices),
        _bond_slices=model.bond_slices, _u2_slices=dict(model.u2_slices),
        t_events=(), _outputs=outputs, _precomputed=None, diagnostics=diagnostics)


def _state_in(vm, model, x):
    """State ``x`` of ``model`` in ``vm``'s layout (the states ``vm`` has, by name)."""
    if vm.state_names == model.state_names:
        return x
    return np.concatenate([np.atleast_1d(x[model.state_slices[n]]) for n in vm.state_names])


def _derived(vm, stab, t, X):
    from bondgraph._output import derived_outputs
    return derived_outputs(vm, stab, None, t, X)


def _u2_rows(vm, model):
    """(rows in ``model``'s U2, rows in ``vm``'s): a held port's axis block is one more
    constraint there (its effort is the lock's), left out of ``model``'s layout."""
    dst, src = [], []
    for name, sl in model.u2_slices.items():
        vs = vm.u2_slices[name]
        dst += list(range(sl.start, sl.stop))
        src += list(range(vs.start, vs.stop))
    return np.array(dst, dtype=int), np.array(src, dtype=int)


def _bond_rows(vm, model):
    """(rows in ``model``'s bond values, rows in ``vm``'s) of the bonds both have; the
    bonds only ``model`` has (a held port's rotors) are zero while held."""
    dst, src = [], []
    for name, (e, f) in model.bond_slices.items():
        if name in vm.bond_slices:
            ve, vf = vm.bond_slices[name]
            dst += list(range(e.start, e.stop)) + list(range(f.start, f.stop))
            src += list(range(ve.start, ve.stop)) + list(range(vf.start, vf.stop))
    return np.array(dst, dtype=int), np.array(src, dtype=int)
