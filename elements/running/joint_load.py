"""Joint friction that follows the joint's transverse reaction (mu N), and the loop it makes.

A joint coordinate whose friction has a load part (:attr:`AxisFriction.loaded
<elements.AxisFriction>`: ``mu`` > 0) slides under an effort of magnitude

    coulomb + mu * radius * R_t     (a turning coordinate, N m)
    coulomb + mu * R_t              (a sliding one, N)

with R_t (N) the magnitude of the constraint force the joint carries on its child
across its axis: the child's share G^T lambda of the constraint efforts, as
:attr:`MechanismResult.joint(name).force_joint <elements.MechanismResult>` reports it,
its components along d1 and d2 (:func:`transverse_reaction`). The reaction depends on
every effort in the mechanism, this friction's included: an algebraic loop.

**The loop, per evaluation.** While such a port slides, its lock is an Se whose effort
is a :class:`~bondgraph.StateFunction` (:class:`LoadedFriction`) that solves the loop
at the state it is asked about by a fixed-point iteration over the efforts F of all
the graph's loaded sliding ports at once: evaluate the model with F (the evaluation
sees the iterate: it is the same model, asked from inside its own source), read each
port's R_t, Phi(F) = -s (coulomb + mu r R_t) with s the direction of sliding, until
every |Phi(F) - F| <= :data:`LOOP_RTOL` * max(|F|, |Phi(F)|); Phi(F) is the effort
used. The reaction is affine in F (the reduced equations are affine in a source's
effort), R_t = |a + b F|, so Phi is close to affine, with slope mu r dR_t/dF: each
step after the first is extrapolated from the last two (Anderson's mixing of depth
one; for one port, the secant step), which lands on the solution in two or three
steps whatever the slope, where plain substitution would crawl at a slope near 1.
Where the friction adds to its own load at least as fast as itself (a slope of 1 or
more, a Painlevé paradox: the loop has no solution or several), or when it has not
converged after :data:`LOOP_MAX_ITERATIONS` iterations, the law raises
:class:`FrictionLoopError`, naming the joint, the time and the iterates; a run ends
there with status ``CALLBACK_ERROR`` and that message, never ``SUCCESS``, keeping
what it computed before (at the run's very first state, where there is nothing to
keep, :meth:`~elements.MechanismModel.simulate` raises the error). The iteration
starts from the last solution of this thread (consecutive evaluations of a run are
close), so a load that does not depend on the friction (a block on an incline, a
wheel on its axle) takes two evaluations.

Sticking needs no loop: a held port's lock is an Sf whose effort (the holding effort)
comes with the reaction of the same evaluation, and the port slips when the holding
effort exceeds ``static + mu_static r R_t`` (:func:`static_limit`, read by
:mod:`elements.running.hybrid`). An impact's impulse leaves the friction out (a finite
effort during an instant).

- :func:`transverse_reaction`: R_t of a joint from one evaluation.
- :func:`static_limit`: the largest holding effort of a port at one evaluation.
- :class:`LoadedFriction`: the lock efforts of a graph's loaded sliding ports.
- :class:`FrictionLoopError`: the loop did not converge.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from bondgraph import ModelError, StateFunction
from bondgraph.spatial import quat_to_matrix

from elements.kernels.blocks import Junction, term_bond

__all__ = ["transverse_reaction", "static_limit", "LoadedFriction", "FrictionLoopError",
           "LOOP_RTOL", "LOOP_MAX_ITERATIONS"]

LOOP_RTOL = 1e-12
"""The fixed-point iteration's tolerance, relative to the friction efforts (N or N m):
the reaction comes from a linear solve at the state, so its rounding is a few
multiples of the machine epsilon of the efforts in the mechanism; 1e-12 leaves three
digits of room and is below every tolerance a run asks for."""

LOOP_MAX_ITERATIONS = 50
"""Iterations after which a loop that still moves is reported as not converged (the
extrapolated iteration takes two to four where the reaction is close to affine in the
friction, as it is: :meth:`LoadedFriction.solve`)."""


class FrictionLoopError(ModelError):
    """The loop between a joint's load-dependent friction and its reaction did not
    converge (see the module docstring)."""


def transverse_reaction(mm: Any, joint: str, bond_values: np.ndarray,
                        x: np.ndarray) -> float:
    """The magnitude (N) of the constraint force joint ``joint`` carries on its child
    across its axis, at one evaluation of ``mm`` (a MechanismModel): ``bond_values`` the
    evaluation's bond values and ``x`` its state. The force is the sum of the efforts of
    the joint's constraint terms at the child, as the simulation computed them (the
    reactions of :class:`~elements.MechanismResult`), in the child's joint frame; R_t
    is the norm of its d1 and d2 components."""
    j = mm.mechanism.joint(joint)
    child = j.child.name
    m = mm.model
    F = np.zeros(3)
    for blk in mm.blocks[joint]:
        for t in blk.terms:
            if t.owner != child or t.kind is not Junction.V:
                continue
            bond, sign = term_bond(blk, t)
            e, _ = m.bond_slices[bond]
            F += sign * np.asarray(bond_values[e], dtype=float)
    A = quat_to_matrix(np.asarray(x[m.state_slices[j.child.q]], dtype=float))
    d = A @ j.Fb[:, :2]                   # the child's d1, d2 in global coordinates
    return float(np.hypot(*(d.T @ F)))


def static_limit(mm: Any, axis: Any, bond_values: np.ndarray, x: np.ndarray) -> float:
    """The largest holding effort (N or N m) of ``axis`` (a JointAxis) at one evaluation
    of ``mm``: the static friction, with its load part under the joint's transverse
    reaction; 0 without friction."""
    f = axis.friction
    if f is None:
        return 0.0
    if f.mu_static <= 0.0:
        return f.static
    return f.static_level(transverse_reaction(mm, axis.joint, bond_values, x))


class LoadedFriction:
    """The lock efforts (N or N m, on the child along the axis) of the loaded sliding
    ports of one graph, solved together at each state (see the module docstring).

    Parameters
    ----------
    ports : list of (JointAxis, int)
        Each port's axis and its direction of sliding (+1 or -1).
    stabilization : Baumgarte or None
        The run's: the reactions include its terms, as the run's do.

    Build the graph with :meth:`function` as the ports' lock efforts (in the order of
    ``ports``), then :meth:`bind` the assembled model (with its parameter values).
    """

    def __init__(self, ports: list[tuple[Any, int]], stabilization: Any):
        self.ports = list(ports)
        self.stabilization = stabilization
        self.model: Any = None
        self._local = threading.local()

    def function(self, i: int) -> StateFunction:
        """The lock effort of the i-th port, as a source's value."""
        return StateFunction(lambda t, s, i=i: self.effort(i, t, s))

    def bind(self, mm: Any) -> None:
        """The MechanismModel whose graph holds these laws (evaluated in the loop)."""
        self.model = mm

    def effort(self, i: int, t: float, s: Any) -> float:
        """The i-th port's lock effort at time ``t`` (s) and state view ``s``."""
        loc = self._local
        trial = getattr(loc, "trial", None)
        if trial is not None:             # an evaluation inside the loop: its iterate
            return float(trial[i])
        x = np.array(s.array, dtype=float)
        key = (float(t), x.tobytes())
        if getattr(loc, "key", None) != key:
            loc.solution = self.solve(t, x)
            loc.key = key
        return float(loc.solution[i])

    def levels(self, bond_values: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The friction efforts the reactions of one evaluation call for."""
        mm = self.model
        return np.array([-s * ax.friction.kinetic_level(
            transverse_reaction(mm, ax.joint, bond_values, x)) for ax, s in self.ports])

    def evaluate(self, t: float, x: np.ndarray):
        """One evaluation of the bound model at (t, x) (with the iterate as these
        ports' efforts): the sparse one where it applies, on a workspace of this law
        and thread (never the run's: this evaluation happens inside one of the run's),
        else the dense one, which also handles what the sparse one cannot."""
        model = self.model.model
        sp = model.sparse()
        if sp.applicable:
            loc = self._local
            ws = getattr(loc, "ws", None)
            if ws is None:
                ws = loc.ws = sp.workspace()
            ev = sp.evaluate(t, x, self.stabilization, ws)
            if ev is not None:
                return ev
        return model.evaluate(t, x, stabilization=self.stabilization, redundancy_ok=True)

    def solve(self, t: float, x: np.ndarray) -> np.ndarray:
        """The efforts that solve the loop at (t, x): the fixed-point iteration F <-
        Phi(F) (Phi: the levels the reactions at F call for), each step after the first
        extrapolated from the last two (Anderson's mixing of depth one: for one port the
        secant step, exact where the reaction is affine in F); converged when |Phi(F) -
        F| <= LOOP_RTOL max(|F|, |Phi(F)|). :class:`FrictionLoopError` when it does not
        converge, or (one port) when Phi's slope is 1 or more: the friction then adds
        to its own load at least as fast as itself, and the loop has no solution or
        several (no unique sliding state)."""
        if self.model is None:
            raise ModelError("LoadedFriction: no model bound (call bind() after "
                             "assembling the graph that holds its laws)")
        loc = self._local
        last = getattr(loc, "last", None)
        F = last.copy() if last is not None else \
            np.array([-s * ax.friction.coulomb for ax, s in self.ports])
        prev = None                       # (F, Phi(F) - F) of the step before
        slope = float("nan")
        n = 0
        for n in range(1, LOOP_MAX_ITERATIONS + 1):
            loc.trial = F
            try:
                ev = self.evaluate(t, x)
            finally:
                loc.trial = None
            phi = self.levels(ev.bond_values, x)
            if not np.isfinite(phi).all():
                break
            r = phi - F
            if np.all(np.abs(r) <= LOOP_RTOL * np.maximum(np.abs(F), np.abs(phi))):
                loc.last = phi
                return phi
            if prev is None:
                step = r
            else:
                dF, dr = F - prev[0], r - prev[1]
                if F.size == 1 and dF[0] != 0.0:
                    slope = 1.0 + float(dr[0] / dF[0])         # dPhi/dF
                    if slope >= 1.0:
                        break
                dd = float(dr @ dr)
                gamma = float(dr @ r) / dd if dd > 0.0 else 0.0
                step = r - gamma * (dF + dr)
            prev = (F, r)
            F = F + step
        names = ", ".join(f"'{ax.port}'" for ax, _ in self.ports)
        why = (f"the friction adds to its own joint's load at least as fast as itself "
               f"(dF_level/dF = mu * radius * dR_t/dF = {slope:.3g} >= 1), so the loop has "
               f"no solution or several (no unique sliding state, a Painlevé paradox)"
               if slope >= 1.0 else "the iteration does not settle")
        raise FrictionLoopError(
            f"the friction of joint coordinate(s) {names}, which follows the transverse "
            f"reaction (mu), did not converge at t = {t:.6g} s after {n} fixed-point "
            f"iterations (last efforts {F}): {why}; lower mu or the radius")
