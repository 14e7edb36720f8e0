"""Simulation results.

- :class:`SimulationResult`: frozen, typed; scipy's field names plus named accessors.
- :class:`Status`: how a run ended, with a message table.
- :func:`join_results`: one result from consecutive segments of a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable

import numpy as np

from .bonds import component_names
from .branches import Branch
from .errors import NameNotFoundError, did_you_mean, require_extra

__all__ = ["SimulationResult", "Status", "join_results", "summed_diagnostics"]


class Status(Enum):
    """How a run ended."""

    SUCCESS = 0
    EVENT = 1
    STEP_FAILED = -1
    SINGULAR = -2
    NON_FINITE = -3
    CALLBACK_ERROR = -4
    EVENT_STORM = -5
    STEP_LIMIT = -6
    TIME_LIMIT = -7

    @property
    def success(self) -> bool:
        return self.value >= 0

    @property
    def description(self) -> str:
        return {
            Status.SUCCESS: "reached the end of the time span",
            Status.EVENT: "a terminal event occurred",
            Status.STEP_FAILED: "the solver could not take a step (step size below its floor)",
            Status.SINGULAR: "the constraints became singular (a singular configuration)",
            Status.NON_FINITE: "the state or its derivative became non-finite",
            Status.CALLBACK_ERROR: "a user function raised an error",
            Status.EVENT_STORM: "events fired more often than max_events allows",
            Status.STEP_LIMIT: "the run took more steps than max_steps allows",
            Status.TIME_LIMIT: "the run took longer (wall-clock time) than max_wall_time "
                               "allows",
        }[self]


def _lookup(mapping: Mapping[str, Any], name: str, what: str):
    try:
        return mapping[name]
    except KeyError:
        raise NameNotFoundError(f"no {what} named {name!r}"
                                f"{did_you_mean(name, mapping)}") from None


@dataclass(frozen=True)
class SimulationResult:
    """The outcome of :func:`~bondgraph.simulate`, on the output time grid.

    Attributes
    ----------
    t : ndarray, shape (n_points,)
        Output times (s). On failure, the output times reached before it.
    x : ndarray, shape (n_states, n_points)
        States (scipy's orientation, like ``OdeResult.y``).
    state_names : tuple of str
    constraint_forces : mapping of str to ndarray (dim, n_points)
        Every unknown effort source's effort (U_2), keyed by its name (``Se*_...``).
    constraint_flow : ndarray, shape (n_u2, n_points)
        The Se* flows c (velocity-level constraint violation).
    phi : ndarray, shape (n_u2, n_points)
        Position-level constraint values (NaN where none is defined).
    bond_values : ndarray, shape (n_variables, n_points)
        Every bond's effort and flow; read them with :meth:`effort` and :meth:`flow`.
    stored_energy : ndarray, shape (n_points,)
        Energy in the I and C elements (J).

        These five are derived from the states: they are computed, one model
        evaluation per output time, when one of them is first read, so that a run
        whose states alone are wanted does not pay for them. They use the model as it
        is then (change its parameters after the run and read them first if you want
        the values of the run). A point where the evaluation fails (the last state of
        a failed run) holds NaN.
    status : Status
    message : str
    success : bool
    failure_time : float or None
        Time (s) of the failure, when the run failed.
    nfev : int
        Number of derivative evaluations by the solver.
    n_steps : int
        Accepted steps.
    rank_deficiency : int
        Dependent (redundant) constraint components at the initial state.
    redundancy : str
        Which unknown sources take part in the redundancy ("" when none).
    branch : Branch
        Which reduction solved for U_2 (a string enum: ``"15"``, ``"14"`` or ``"none"``).
    sol : callable or None
        Dense output over the whole run when asked for.
    diagnostics : mapping of str to object
        How the run went, for the user: ``"method"`` (the solver's name),
        ``"rhs_evaluations"`` (every derivative evaluation, those of a
        finite-difference Jacobian included, which ``nfev`` leaves out),
        ``"jacobian"`` (what an implicit method was given: ``"analytic: ..."``,
        ``"finite differences in k groups of columns (...)"``,
        ``"dense finite differences (...)"`` or ``"none (explicit method)"``),
        ``"evaluations_per_jacobian"`` (0 for an analytic Jacobian, else the groups
        (and one at the state) or the states), ``"jacobian_evaluations"`` and ``"lu_decompositions"`` (implicit
        methods),
        ``"stiff"`` (True when an explicit run's step size was limited by stability,
        not accuracy: see :class:`bondgraph._diagnosis.StiffnessMonitor`) and
        ``"stiffness"`` (the message then, suggesting ``method="Radau"``; else "");
        ``"drift"`` (only in a run without stabilization whose position constraints
        left more than :data:`bondgraph._diagnosis.DRIFT_RTOL` of the positions' scale,
        or whose constraint flows, of constraints that define no position constraint,
        more than that of their scale: which, how far and when, also said as an
        ``IntegrationWarning``).
        The compiled stepping (:mod:`bondgraph._fastrk`): ``"compiled_loop"``,
        ``"compiled_loop_reason"``, ``"compiled_steps"`` (accepted steps taken
        compiled), ``"compiled_fallbacks"`` (times an evaluation in the compiled loop
        could not answer and scipy took the next step), ``"pivot_fallbacks"``
        (evaluations whose compiled LU's pivot order failed its checks, finished in
        Python with another order or SuperLU) and ``"compiled_evaluations"``
        (evaluations that scipy's own stepping asked for, an implicit method's and its
        Jacobians' included, answered by the same compiled right-hand side in one call:
        :func:`bondgraph._fastrk.compiled_evaluation`).
    """

    t: np.ndarray
    x: np.ndarray
    state_names: tuple[str, ...]
    status: Status
    message: str
    success: bool
    failure_time: float | None
    nfev: int
    n_steps: int
    rank_deficiency: int
    branch: Branch
    redundancy: str
    sol: Any = None
    _state_slices: Mapping[str, slice] = field(default_factory=dict, repr=False)
    _bond_slices: Mapping[str, tuple[slice, slice]] = field(default_factory=dict, repr=False)
    t_events: tuple[np.ndarray, ...] = ()
    _u2_slices: Mapping[str, slice] = field(default_factory=dict, repr=False)
    _outputs: Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]] | None = \
        field(default=None, repr=False, compare=False)
    _precomputed: dict | None = field(default=None, repr=False, compare=False)
    _cache: dict = field(init=False, repr=False, compare=False)
    diagnostics: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_cache", {})
        for a in ("t", "x"):
            arr = getattr(self, a)
            if isinstance(arr, np.ndarray):
                arr.setflags(write=False)

    def __getstate__(self) -> dict:
        """Pickled (or deep-copied) with its derived outputs computed, without the model
        that makes them: they travel with the states they belong to (a copy made with
        ``dataclasses.replace`` keeps them while its t and x are these)."""
        d = self._derived()
        state = dict(self.__dict__)
        state["_outputs"] = None
        state["_precomputed"] = {"t": self.t, "x": self.x,
                                 **{k: v for k, v in d.items() if k != "forces"}}
        state["_cache"] = {}
        return state

    # -- the outputs derived from the states, computed when first read --------------------
    def _derived(self) -> dict[str, np.ndarray]:
        """U_2, c, Phi, the bond values and the stored energy at every output time: one
        evaluation of the model per output point, made when one of them is first read
        (a run whose user reads only the states does not pay for them). A point where
        the evaluation fails (a failed run's last state) holds NaN. Raises
        BondGraphError where there is no model to make them from."""
        d = self._cache
        if "energy" not in d:
            pre = self._precomputed
            if pre is not None and pre["t"] is self.t and pre["x"] is self.x:
                out = {k: v for k, v in pre.items() if k not in ("t", "x")}
            elif self._outputs is not None:
                out = self._outputs(self.t, self.x)
            else:
                from .errors import BondGraphError
                raise BondGraphError(
                    "this result has no model to derive its constraint forces, bond "
                    "values and energy from (a copy of a pickled result with other "
                    "states); simulate again, or read them before copying")
            for arr in out.values():
                arr.setflags(write=False)
            d.update(out)
            self._say_failed_points(d)
        if "forces" not in d:
            d["forces"] = MappingProxyType({name: d["U2"][sl]
                                            for name, sl in self._u2_slices.items()})
        return d

    def _say_failed_points(self, d: Mapping[str, Any]) -> None:
        """An IntegrationWarning where the model could not be evaluated at output points
        other than a failed run's last one (their derived outputs are NaN): never
        silent, although the run's status stays as it was."""
        failed = d.get("failed_at")
        if failed is None or not failed.size:
            return
        if not self.success and failed.size == 1 and failed[0] == self.t[-1]:
            return                            # (the failure state itself)
        from .errors import IntegrationWarning, warn
        warn(f"the model could not be evaluated at {failed.size} of {self.t.size} output "
             f"time(s) (first t = {failed[0]:.6g} s: {d['failed_why'].item()}); the "
             f"constraint forces, bond values and energy there are NaN",
             IntegrationWarning)

    @property
    def constraint_forces(self) -> Mapping[str, np.ndarray]:
        """Every unknown effort source's effort U_2 (N, N m, ... as the source's bond),
        keyed by its name (``Se*_...``): (dim, n_points) each."""
        return self._derived()["forces"]

    @property
    def constraint_flow(self) -> np.ndarray:
        """The Se* flows c (velocity-level constraint violation): (n_u2, n_points)."""
        return self._derived()["c"]

    @property
    def phi(self) -> np.ndarray:
        """Position-level constraint values (m or rad; NaN where none is defined):
        (n_u2, n_points)."""
        return self._derived()["phi"]

    @property
    def bond_values(self) -> np.ndarray:
        """Every bond's effort and flow: (n_variables, n_points); read them with
        :meth:`effort` and :meth:`flow`."""
        return self._derived()["bond_values"]

    @property
    def stored_energy(self) -> np.ndarray:
        """Energy in the I and C elements (J): (n_points,)."""
        return self._derived()["energy"]

    def state(self, name: str) -> np.ndarray:
        """State ``name`` over time: shape (dim, n_points), or (n_points,) when dim = 1."""
        s = _lookup(self._state_slices, name, "state")
        v = self.x[s]
        return v[0] if v.shape[0] == 1 else v

    def effort(self, bond: str) -> np.ndarray:
        """Effort of ``bond`` over time: (dim, n_points), or (n_points,) for a scalar bond."""
        e, _ = _lookup(self._bond_slices, bond, "bond")
        v = self.bond_values[e]
        return v[0] if v.shape[0] == 1 else v

    def flow(self, bond: str) -> np.ndarray:
        """Flow of ``bond`` over time: (dim, n_points), or (n_points,) for a scalar bond."""
        _, f = _lookup(self._bond_slices, bond, "bond")
        v = self.bond_values[f]
        return v[0] if v.shape[0] == 1 else v

    def constraint_force(self, name: str) -> np.ndarray:
        """Effort of unknown source ``name`` (e.g. ``"Se*_J3"``): (dim, n_points)."""
        return _lookup(self.constraint_forces, name, "unknown effort source")

    def to_dataframe(self):
        """The states over time as a pandas DataFrame indexed by time (one column per
        state component); requires the optional pandas."""
        pd = require_extra("pandas", "to_dataframe()", "dataframe")
        slices = self._state_slices
        names = component_names((n, sl.stop - sl.start) for n, sl in slices.items())
        rows = [self.x[sl][k] for sl in slices.values() for k in range(sl.stop - sl.start)]
        cols = dict(zip(names, rows))
        return pd.DataFrame(cols, index=pd.Index(self.t, name="t"))

    @property
    def max_abs_phi(self) -> float:
        """Largest |Phi| over the run (NaN-free entries only; 0 when none defined)."""
        finite = self.phi[np.isfinite(self.phi)]
        return float(np.abs(finite).max()) if finite.size else 0.0

    @property
    def max_abs_constraint_flow(self) -> float:
        """Largest |c| over the run (NaN-free entries only: a point whose evaluation
        failed holds NaN)."""
        finite = self.constraint_flow[np.isfinite(self.constraint_flow)]
        return float(np.abs(finite).max()) if finite.size else 0.0

    def plot(self, path: str | None = None, *, states: Sequence[str] | None = None,
             efforts: Sequence[str] = (), flows: Sequence[str] = (),
             constraint_forces: bool = True) -> Any:
        """A quick look at the run: one panel of states (each vector state by component,
        ``p_m[0]``...), one of the chosen bonds' efforts and flows, one of the
        constraint forces (the Se* efforts), over time (s).

        Parameters
        ----------
        path : str, optional
            Save the figure there (PNG, SVG or PDF by the suffix) without touching
            pyplot's backend; without it the figure comes from pyplot (a notebook shows
            it).
        states : sequence of str, optional
            The states to draw (default: all; a panel draws its first 12 series).
        efforts, flows : sequence of str
            Bonds whose effort or flow to draw (names as :meth:`effort` takes them).
        constraint_forces : bool
            Draw the unknown sources' efforts (when the model has any).

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        MissingExtraError
            When matplotlib is not installed (the ``plot`` extra).
        NameNotFoundError
            An unknown state or bond (naming the close ones).
        """
        from ._plot import panels_figure
        chosen = list(self.state_names) if states is None else list(states)
        for n in chosen:
            _lookup(self._state_slices, n, "state")
        panels = [("states", "state (its own unit)",
                   {c: self.x[self._state_slices[n]][k] for n in chosen
                    for k, c in enumerate(component_names(
                        [(n, self._state_slices[n].stop - self._state_slices[n].start)]))})]
        picked = {}
        for what, names, read in (("e", efforts, self.effort), ("f", flows, self.flow)):
            for b in names:
                v = np.atleast_2d(read(b))
                picked.update(zip(component_names([(f"{b}.{what}", v.shape[0])]), v))
        if picked:
            panels.append(("efforts and flows", "effort or flow", picked))
        if constraint_forces and self._u2_slices:
            panels.append(("constraint forces (U_2)", "effort", {
                c: v[k] for n, v in self.constraint_forces.items()
                for k, c in enumerate(component_names([(n, v.shape[0])]))}))
        return panels_figure(self.t, panels, what="SimulationResult.plot()", path=path,
                             title=f"{self.status.name}: {self.message}")

    def _repr_html_(self) -> str:
        from ._display import html_card
        span = f"{self.t[0]:.6g} .. {self.t[-1]:.6g} s" if self.t.size else "empty"
        rows = [("status", f"{self.status.name}: {self.message}"), ("time span", span),
                ("output points", self.t.size), ("states", len(self.state_names)),
                ("constraint sources", len(self._u2_slices)),
                ("derivative evaluations", self.nfev), ("steps", self.n_steps),
                ("method", self.diagnostics.get("method", ""))]
        if self.failure_time is not None:
            rows.append(("failure time", f"{self.failure_time:.9g} s"))
        if "c" in self._cache:
            rows.append(("max |c|", f"{self.max_abs_constraint_flow:.3g}"))
        notes = [self.diagnostics["stiffness"]] if self.diagnostics.get("stiffness") else []
        return html_card("SimulationResult", rows, notes, status_ok=self.success)

    def __repr__(self) -> str:
        span = f"{self.t[0]:.4g}..{self.t[-1]:.4g} s" if self.t.size else "empty"
        return (f"SimulationResult({self.status.name}: {self.t.size} points over {span}, "
                f"{len(self.state_names)} states, {len(self._u2_slices)} constraint "
                f"sources, nfev={self.nfev}" + (f", max|c|={self.max_abs_constraint_flow:.2e})"
                                                if "c" in self._cache else ")"))


def summed_diagnostics(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The diagnostics of runs joined one after another: the first run's, with the
    counts (evaluations, Jacobians, factorizations, compiled steps and fallbacks)
    summed over all of them, and ``stiff`` if any was (with the first one's reason)."""
    diagnostics = dict(parts[0]) if parts else {}
    for key in ("rhs_evaluations", "jacobian_evaluations", "lu_decompositions",
                "compiled_steps", "compiled_fallbacks", "pivot_fallbacks",
                "compiled_evaluations"):
        if key in diagnostics:
            diagnostics[key] = sum(p.get(key, 0) for p in parts)
    if "stiff" in diagnostics:
        stiff = [p.get("stiffness", "") for p in parts if p.get("stiff")]
        diagnostics["stiff"], diagnostics["stiffness"] = bool(stiff), \
            (stiff[0] if stiff else "")
    return diagnostics


def join_results(parts: Sequence[SimulationResult]) -> SimulationResult:
    """One result from consecutive segments of a run of one model (each segment
    starting where the one before ended: restarts after a projection, say).

    The output points in order (a segment's last point is dropped where the next
    segment starts at its time: the next one's first point stands for it); the counts
    of evaluations and steps summed (also in the diagnostics, which say ``stiff`` when
    any segment was); the status, message and failure time of the last segment (a
    failed segment ends the run: later ones are ignored); the event times concatenated;
    the rest (redundancy, branch) from the first. The derived outputs
    (constraint forces, bond values) are computed from the first segment's model when
    first read; there is no dense output.

    Raises
    ------
    ModelError
        For no segments, or segments of different models (state names differ).
    """
    import dataclasses

    from .errors import ModelError
    parts = list(parts)
    if not parts:
        raise ModelError("join_results needs at least one segment")
    names = parts[0].state_names
    if any(p.state_names != names for p in parts):
        raise ModelError("join_results: the segments are results of different models "
                         "(their state names differ)")
    end = next((k for k, p in enumerate(parts) if not p.success), len(parts) - 1)
    used = parts[:end + 1]
    ts, xs = [], []
    for k, p in enumerate(used):
        n = p.t.size
        if k < len(used) - 1 and n and used[k + 1].t.size and used[k + 1].t[0] == p.t[-1]:
            n -= 1
        ts.append(p.t[:n])
        xs.append(p.x[:, :n])
    final = used[-1]
    events = tuple(np.concatenate([p.t_events[j] for p in used])
                   for j in range(len(parts[0].t_events)))
    diagnostics = summed_diagnostics([p.diagnostics for p in used])
    return dataclasses.replace(
        parts[0], t=np.concatenate(ts), x=np.concatenate(xs, axis=1), status=final.status,
        message=final.message, success=final.success, failure_time=final.failure_time,
        nfev=sum(p.nfev for p in used), n_steps=sum(p.n_steps for p in used), sol=None,
        t_events=events, _precomputed=None, diagnostics=diagnostics)
