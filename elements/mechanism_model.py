"""An assembled mechanism: its bond graph, causal graph and state-space model, with the
mechanism-level operations: parameters by name, states from joint coordinates (forward
kinematics for trees, Gauss-Newton on the closure residuals for closed loops; see
:mod:`elements.running.closure`), projection onto Phi = 0 and c = 0, and simulation.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bondgraph import (
    Baumgarte, Budget, ModelError, RunProgress, SaveAt, Solver, Status, assemble,
    assign_causality, nominal_scales, simulate,
)
from bondgraph.options import merge_options
from bondgraph.parameters import ParameterSet
from bondgraph.results import join_results
from bondgraph.spatial import matrix_to_quat, quat_to_matrix

import elements.running.closure as closure
import elements.running.hybrid as hybrid
from elements.contact.tunnelling import tunnelled
from elements.joints.free import FreeJoint
from elements.kernels.blocks import Block
from elements.parts.rigid_body import INERTIA_ENTRIES, Inertia, RigidBody

__all__ = ["MechanismModel"]

RTOL_FLOOR = 100 * np.finfo(float).eps
"""The smallest rtol scipy's explicit solvers take (it raises smaller ones to it)."""


class MechanismModel:
    """An assembled mechanism: the bond graph, its causal graph, the state-space model, and
    the mechanism-level operations (initial states, projection, reactions, simulation).

    Attributes
    ----------
    mechanism : Mechanism
        The model's own copy of the mechanism it was assembled from (see
        :meth:`Mechanism.assemble`, the usual way to make one).
    graph : BondGraph
        The mechanism's vector bond graph (before causality).
    index : BuildIndex
        What the build created, by handle (:mod:`elements.build_index`): every
        attachment's element, bond, work state and parameters.
    causal : CausalGraph
    model : StateSpaceModel
    """

    def __init__(self, mechanism: Any, *, strict: bool = False,
                 drives: Mapping[str, Any] | None = None, locks: Sequence[str] = (),
                 friction_laws: Mapping[str, Any] | None = None):
        # its own copy: later edits of the mechanism (a body added, a spring attached)
        # must not reach a model built without them (user functions are shared, not
        # copied: deepcopy keeps functions as they are)
        self.mechanism = mechanism = copy.deepcopy(mechanism)
        self.strict = strict
        self.drives = dict(drives or {})
        self.tree, self.loop_joints = mechanism.spanning_tree()
        order = list(mechanism.bodies)
        self.free_joints: list[FreeJoint] = sorted(
            (j for j in self.tree if isinstance(j, FreeJoint) and j.is_free_body),
            key=lambda j: order.index(j.child.name))
        """The free bodies' joints (:meth:`Mechanism.free_joints`), those of :attr:`tree`,
        in body order."""
        self.locks = frozenset(locks)
        # (a hybrid run's sliding ports whose friction follows their load: not copied,
        # the laws are bound to this model: elements.running.joint_load)
        self.friction_laws = dict(friction_laws or {})
        self.graph, self.index = mechanism.build_indexed(self.drives, tuple(sorted(self.locks)),
                                                         self.friction_laws)
        self.causal = assign_causality(self.graph)
        self.model = assemble(self.causal)
        self.blocks: dict[str, list[Block]] = {
            j.name: j.constraint_blocks() for j in mechanism.joints.values()}
        self.state_names = self.model.state_names
        # what analyses derive from this model and keep for the next call (the driven
        # models of direct and inverse dynamics, FastDynamics): made for these
        # parameter values, so with_parameters starts its model with none
        self.derived: dict[str, Any] = {}
        self._block_of: dict[str, Block] = {}
        self._source_of: dict[str, str] = {}
        at = {s.junction: s.name for s in self.causal.constraint_sources}
        for blocks in self.blocks.values():
            for blk in blocks:
                if blk.name in at:
                    self._source_of[blk.name] = at[blk.name]
                    self._block_of[at[blk.name]] = blk

    # -- parameters ------------------------------------------------------------------------
    @property
    def parameters(self) -> ParameterSet:
        """Every parameter of the model, name -> value: gravity (``gravity.x``), bodies'
        masses and inertias (``m2.mass``, ``m2.Ixx``, ..., ``m2.Iyz``), springs
        (``J3.spring.k``, ``J3.spring.rest``), dampers (``J2.damper.c``), constant
        actuators (``J1.actuator``) and loads (``push.x``), and those of attached
        subsystems (see :class:`~bondgraph.parameters.ParameterSet`)."""
        return self.model.parameters

    def with_parameters(self, values: Mapping[str, float] | None = None,
                        **named: float) -> "MechanismModel":
        """This mechanism's model with other parameter values (see :attr:`parameters`):
        the same graph, causal graph and structure, a state-space model assembled from
        them with the new values. Neither this model nor its mechanism is copied or
        changed.

        Raises
        ------
        ModelError
            For an unknown name (listing the valid ones) or a value that breaks a rule
            (a mass must be positive, an inertia valid, a damper non-negative...).
        """
        params = self.model.parameters.updated(values).updated(named or None)
        for name, body in self.mechanism.bodies.items():
            try:
                Inertia(_inertia_of(params, name), body.inertia.check_triangle)
            except ModelError as exc:
                raise ModelError(f"body '{name}': its inertia parameters give an invalid "
                                 f"inertia: {exc}") from None
        new = copy.copy(self)
        new.model = self.model.with_parameters(params)
        new.derived = {}            # (made for the old values: not to be reused)
        return new

    def with_drives(self, drives: Mapping[str, Any]) -> "MechanismModel":
        """This mechanism's model with drives on joint ports (see :class:`MechanismModel`:
        port name -> an Se or Sf named ``<port>.drive``, replacing the actuators there)
        and this model's parameter values (those the driven model keeps: the replaced
        actuators' are gone). Direct and inverse dynamics, prescribed motion and
        linearisation build theirs here, so that they follow :meth:`with_parameters`."""
        driven = MechanismModel(self.mechanism, strict=self.strict, drives=drives)
        own = driven.parameters
        same = {k: v for k, v in self.parameters.items() if k in own}
        return driven.with_parameters(same) if same else driven

    def mass(self, body: str) -> float:
        """The mass of ``body`` (kg) in this model."""
        return self.parameters[f"{body}.mass"]

    def inertia(self, body: str) -> np.ndarray:
        """The central inertia of ``body`` in body axes (kg m^2, (3, 3)) in this model."""
        return _inertia_of(self.parameters, body)

    def springs(self) -> list[tuple[str, str, float, float]]:
        """Every axis spring in this model: (port, element name, stiffness, rest)
        (N/m or N m/rad; m or rad); the port is the joint's name for a one-coordinate
        joint, ``<joint>.<coordinate>`` otherwise (see
        :meth:`~elements.results.MechanismResult.coordinate`)."""
        p = self.parameters
        out = []
        for j in self.mechanism.joints.values():
            for ax in j.axes:
                for stem in ax.attachments("spring"):
                    out.append((ax.port, stem, p[f"{stem}.k"], p[f"{stem}.rest"]))
        return out

    @property
    def gravity(self) -> np.ndarray:
        """Gravity in this model (m/s^2, global, (3,))."""
        p = self.parameters
        return np.array([p["gravity.x"], p["gravity.y"], p["gravity.z"]])

    # -- state <-> poses ---------------------------------------------------------------------
    def _body_state(self, x: np.ndarray, body: RigidBody):
        m = self.model
        if body.is_ground:
            return np.eye(3), np.zeros(3)
        q = x[m.state_slices[body.q]]
        return quat_to_matrix(q), x[m.state_slices[body.r]].copy()

    def poses(self, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """(rotation body -> global, centre of mass) of every body at state ``x``."""
        return {n: self._body_state(x, b) for n, b in self.mechanism.bodies.items()}

    def _rotors(self, axis) -> list[str]:
        """A port's rotor inertias in this model (a flow drive leaves them out)."""
        return [stem for stem in axis.attachments("rotor") if stem in self.graph]

    def twists(self, x: np.ndarray, bodies: Sequence[str] | None = None
               ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """(angular velocity, velocity of the centre of mass), both global (rad/s, m/s),
        of ``bodies`` (default every body; the ground's are zero) at state ``x``."""
        m, mech = self.model, self.mechanism
        out = {}
        for n in (mech.bodies if bodies is None else bodies):
            b = mech.bodies.get(n)
            if b is None or b.is_ground:
                out[n] = (np.zeros(3), np.zeros(3))
                continue
            A = quat_to_matrix(x[m.state_slices[b.q]])
            h = x[m.state_slices[b.angular_momentum]]
            out[n] = (A @ np.linalg.solve(self.inertia(n), h),
                      x[m.state_slices[b.linear_momentum]] / self.mass(n))
        return out

    def coordinate_rates(self, x: np.ndarray, joint: str) -> np.ndarray:
        """A joint's coordinate rates (rad/s or m/s, (n,)) at state ``x``."""
        j = self.mechanism.joint(joint)
        names = [j.parent.name, j.child.name]
        pose = {n: (self._body_state(x, j.parent if n == j.parent.name else j.child))
                for n in names}
        return j.rates(pose, self.twists(x, names))

    def mechanism_states(self) -> dict[str, str]:
        """The states the mechanism itself owns, name -> what holds it: the bodies'
        positions, orientations and momenta, the joints' coordinates, their springs'
        displacements, and the work states (the rest belong to attached subsystems)."""
        out = {}
        for b in self.mechanism.bodies.values():
            for s in (b.r, b.q, b.linear_momentum, b.angular_momentum):
                out[s] = b.name
        for j in self.mechanism.joints.values():
            for ax in j.axes:
                out[ax.state] = j.name
                for stem in ax.attachments("spring") + self._rotors(ax):
                    out[self.graph.element(stem).state_name] = stem
        for ws in self.graph.work_states:
            out[ws.name] = ws.source
        return out

    def state_from_poses(self, pose, twist, coords: Mapping[str, float],
                         states: Mapping[str, Any] | None = None) -> np.ndarray:
        """The state vector from body poses (A, r) and twists (omega, v; global), joint
        coordinates (by joint name: a number, or an array for a joint with several), and
        values of any other states (subsystems) by name."""
        m = self.model
        vals: dict[str, Any] = {}
        for n, b in self.mechanism.bodies.items():
            A, r = pose[n]
            w, v = twist[n]
            vals[b.r] = r
            vals[b.q] = matrix_to_quat(A)
            vals[b.linear_momentum] = self.mass(n) * v
            vals[b.angular_momentum] = self.inertia(n) @ (A.T @ w)
        for j in self.mechanism.joints.values():
            if not j.axes:
                continue
            cs = np.atleast_1d(np.asarray(coords[j.name], dtype=float))
            rates = None
            for ax, c in zip(j.axes, cs):
                c = float(c)
                vals[ax.state] = c
                for stem in ax.attachments("spring"):
                    vals[self.graph.element(stem).state_name] = \
                        c - self.parameters[f"{stem}.rest"]
                rotors = self._rotors(ax)
                if rotors:
                    if rates is None:
                        rates = j.rates(pose, twist)
                    for stem in rotors:
                        vals[self.graph.element(stem).state_name] = \
                            self.parameters[f"{stem}.inertia"] * rates[ax.index]
        for ws in self.graph.work_states:
            vals[ws.name] = 0.0
        for k, v in (states or {}).items():
            if k in vals:
                raise ModelError(f"initial state '{k}' belongs to the mechanism; give it "
                                 f"through joint coordinates and rates")
            vals[k] = v
        return m.initial_state(vals)

    def state_atol(self, atol: float) -> np.ndarray:
        """The absolute tolerance of every state (``(n_states,)``) for a tolerance
        ``atol`` given in the units of the coordinates and their rates (m, rad, m/s,
        rad/s), as in a joint-coordinate tool: ``atol`` times each state's nominal scale
        (:func:`bondgraph.nominal_scales` with a flow scale of 1: a body's linear
        momentum scales with its mass, its angular momentum (body axes) with the diagonal
        of its inertia, a rotor's momentum with the rotor's inertia, an attached
        subsystem's storage with its inertia or compliance times its domain's flow or
        effort scale; positions, quaternions, joint coordinates and work states take
        1), and no state more than ``atol`` (a body heavier than 1 kg keeps atol on its
        momentum: tighter than needed, never looser than before the scaling).

        Without the scaling an angular momentum of a small link (inertia 1e-4 kg m^2)
        held to ``atol`` lets its angular velocity err 1e4 times more than ``atol``:
        runs ended 10 to 100 times farther from the reference than a joint-coordinate
        integration at the same tolerances (issue 22, benchmarks/work_precision.py)."""
        return np.minimum(float(atol) * nominal_scales(self.model, flow=1.0), float(atol))

    def _tolerances(self, rtol: Any, atol: Any) -> tuple[Any, Callable[[Any], Any]]:
        """(the rtol a run's solver gets, the atol it gets for a model: this one's or a
        variant's of a switched run, with its own state layout) from the tolerances
        given to :meth:`simulate`. A number ``atol`` becomes :meth:`state_atol`'s vector
        (the model's own nominal scales with a flow scale of 1); with a number ``rtol``
        too, both are multiplied by :meth:`error_norm_scale`. Anything else is passed as
        given (bad values: ``bondgraph.simulate`` says why)."""
        if not (np.ndim(atol) == 0 and isinstance(atol, (int, float, np.number)) and
                np.isfinite(atol) and atol > 0):
            return rtol, lambda model: atol
        given = float(atol)
        k = None
        if np.ndim(rtol) == 0 and isinstance(rtol, (int, float, np.number)) and \
                np.isfinite(rtol) and rtol >= RTOL_FLOOR:
            k = self.error_norm_scale()
            rtol = max(float(rtol) * k, RTOL_FLOOR)
        made: dict[int, tuple[Any, np.ndarray]] = {}

        def atol_of(model) -> np.ndarray:
            got = made.get(id(model))
            if got is None:
                a = np.minimum(given * nominal_scales(model, flow=1.0), given)
                if k is not None:
                    # a state whose atol the inertia scaling already made tighter than
                    # atol k keeps it (not both factors: their product put light links'
                    # angular momenta at 2e-15, below the rounding of the constraint
                    # solve near a singular configuration, and a run into one took 22
                    # times the steps to reach it)
                    a = np.minimum(a, given * k)
                got = made[id(model)] = (model, a)       # (the model kept: its id stays)
            return got[1]
        return rtol, atol_of

    def error_norm_scale(self) -> float:
        """The factor (<= 1) on both tolerances that makes the solvers' error norm count
        independent states, as a joint-coordinate tool's does: sqrt(n / N).

        scipy's step control takes the root mean square of the scaled errors over all N
        states. A mechanism's state holds 13 numbers per body (position, quaternion,
        momenta) and a coordinate per joint, where a joint-coordinate tool holds 2 per
        freedom: the same error in the motion spreads over fewer of its states, so the
        mean over N reads it sqrt(N / n) times smaller, and runs at equal tolerances ended
        2.5 to 3 times farther from the reference (the three-body, chain-10; issue 22).
        n = 2 F + the states that are not the mechanism's (an attached subsystem's), with
        F the freedoms: the mechanism's momentum components (6 per body, 1 per rotor)
        less the constraint rows (every unknown effort source: joints, couplings, rotors
        and subsystem inertias tied to a joint rate; a tie of a subsystem's inertia makes
        n one smaller than exact: a slightly tighter control, never a looser one)."""
        m, sl = self.model, self.model.state_slices
        own = self.mechanism_states()
        size = {name: sl[name].stop - sl[name].start for name in own}
        momenta = sum(size[b.linear_momentum] + size[b.angular_momentum]
                      for b in self.mechanism.bodies.values() if not b.is_ground)
        momenta += sum(size[self.graph.element(stem).state_name]
                       for j in self.mechanism.joints.values() for ax in j.axes
                       for stem in self._rotors(ax))
        rows = m.n_u2
        freedoms = max(momenta - rows, 1)
        n = 2 * freedoms + m.n_states - sum(size.values())
        return float(np.sqrt(min(max(n, 1), m.n_states) / m.n_states))

    def initial_state(self, q: Mapping[str, Any] | None = None,
                      qd: Mapping[str, Any] | None = None, *,
                      free: Mapping[str, Mapping[str, Any]] | None = None,
                      guess: Mapping[str, float] | None = None,
                      states: Mapping[str, Any] | None = None, tol: float = 1e-12,
                      max_iterations: int = 50, t: float = 0.0) -> np.ndarray:
        """A consistent state from joint coordinates ``q`` and rates ``qd`` (by joint name).

        Trees: forward kinematics; joints not named take coordinate and rate 0.
        Closed loops: the coordinates of the tree joints not named in ``q`` are solved by
        Newton's method on the loop joints' Phi = 0 (minimum-norm steps, starting from
        ``guess``, default 0), and their rates from c = 0. Spherical joints take a rotation matrix and an angular velocity
        (parent coordinates). Free bodies (each on a free joint to the ground without
        ports: nobody's child, :meth:`Mechanism.free_joints`) take their pose and twist
        from ``free[name]``: a mapping with ``rotation`` (3x3, body -> global),
        ``position`` (m, its centre of mass), ``angular_velocity`` (rad/s, global) and
        ``velocity`` (m/s), each defaulting to :attr:`Mechanism.free_start`'s, else to
        the identity or zero; an explicit such joint takes ``free[body]`` or its own
        ``q``/``qd`` (both: a ModelError naming the body and the joint). ``states`` gives values, by state name, for the states of
        attached subsystems (e.g. a motor inductance's ``p_motor.La``); they are required.
        A flow source (Sf) on a coordinate's axis junction (a subsystem's velocity
        source, a prescribed motion's drive) fixes that coordinate's rate: it is read at
        time ``t`` (s), and a rate not given is taken from it.

        Raises
        ------
        ModelError
            For a coordinate given for an unknown joint, or a rate given that contradicts
            the flow source on its axis (naming the joint and the source).
        AssemblyError
            When Newton's method does not converge (the loop cannot close), naming the
            loop joints and the residual; when the state's velocities violate a
            constraint (a flow source elsewhere that the rates given do not follow),
            naming the joint and the violation.
        """
        pose, twist, coords = closure.initial_configuration(self, q, qd, free, guess, tol,
                                                            max_iterations, t)
        x = self.state_from_poses(pose, twist, coords, states)
        closure.check_rates(self, x, t)
        return x

    # -- constraints and projection --------------------------------------------------------
    def source_of(self, block: Block) -> str:
        """The unknown effort source (``Se*``) the causality assignment put at a joint's
        constraint block: its effort is the block's constraint effort (lambda)."""
        return self._source_of[block.name]

    def block_of(self, source: str) -> Block:
        """The joint constraint block whose effort the unknown source ``source`` carries.

        Raises
        ------
        ModelError
            For a source that is not at a joint's constraint (a subsystem's)."""
        try:
            return self._block_of[source]
        except KeyError:
            raise ModelError(f"unknown effort source '{source}' is not a joint constraint "
                             f"of mechanism '{self.mechanism.name}'") from None

    def constraint_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(G, Phi): G maps the bodies' velocity coordinates [v_c (global), omega^b] in body
        order to the constraint rates; Phi the position constraints, in Se* order."""
        return closure.constraint_jacobian(self, x)

    def project(self, x: np.ndarray, *, tol: float = 1e-12, max_iterations: int = 20
                ) -> np.ndarray:
        """Project a state onto Phi = 0 (positions, minimum-norm in the bodies' coordinates)
        and c = 0 (velocities, minimum kinetic-energy-metric correction)."""
        return closure.project(self, x, tol, max_iterations)

    # -- simulation --------------------------------------------------------------------------
    def __repr__(self) -> str:
        m = self.mechanism
        return (f"MechanismModel({m.name!r}: {len(m.bodies)} bodies, {len(m.joints)} "
                f"joints, {self.model.n_states} state components)")

    def _repr_html_(self) -> str:
        from bondgraph._display import html_card

        from elements.drawing.result_display import import_notes
        m, sm = self.mechanism, self.model
        rows = [("bodies", len(m.bodies)), ("joints", len(m.joints)),
                ("states", f"{len(sm.state_names)} ({sm.n_states} components)"),
                ("constraint sources (U_2)", f"{len(sm.unknown_sources)} "
                                             f"({sm.n_u2} components)"),
                ("parameters", len(sm.parameters))]
        return html_card(f"MechanismModel '{m.name}'", rows,
                         import_notes(getattr(m, "import_report", None)))

    def simulate(self, t_span: tuple[float, float], q: Mapping[str, Any] | None = None,
                 qd: Mapping[str, Any] | None = None, *, x0: np.ndarray | None = None,
                 free: Mapping[str, Mapping[str, Any]] | None = None,
                 guess: Mapping[str, float] | None = None,
                 states: Mapping[str, Any] | None = None,
                 t_eval: Sequence[float] | None = None,
                 method: str | type = "DOP853",
                 rtol: float = 1e-9, atol: Any = 1e-9,
                 max_step: float | None = None,
                 stabilization: Baumgarte | None | str = "auto", projection: bool = False,
                 events: Sequence[Callable[[float, np.ndarray], float]] = (),
                 max_steps: int | None = None, max_wall_time: float | None = None,
                 progress: Callable[[float], None] | bool | None = None,
                 parameters: Mapping[str, float] | None = None,
                 first_step: float | None = None, dense_output: bool = False,
                 raise_on_failure: bool = False, max_events: int = 10_000,
                 dense_reduction: bool = False, compiled_loop: bool = True,
                 max_switches: int = 10_000, solver: Solver | None = None,
                 save: SaveAt | None = None, budget: Budget | None = None):
        """Simulate from joint coordinates and rates (or a full state ``x0``).

        Parameters
        ----------
        t_span : (float, float)
            Start and end time (s).
        q, qd : mapping of joint name to coordinate (rad, m) and rate, optional
            The initial state (:meth:`initial_state`, with ``free``, ``guess`` and
            ``states``); or ``x0``, a full state vector.
        t_eval : array_like, optional
            Output times (s); default: 501 evenly spaced points.
        method : str or OdeSolver subclass
            A name of :data:`bondgraph.simulation.METHODS` (``"DOP853"``, ``"RK45"``,
            ``"Radau"``, ``"BDF"``, ``"LSODA"``) or a scipy ``OdeSolver`` subclass, as in
            :func:`bondgraph.simulate`; an implicit method forms the mechanism's Jacobian
            by finite differences grouped by its structural sparsity (its cost is in
            ``result.raw.diagnostics``).
        rtol, atol : float
            ``atol`` (a number) is in the units of the coordinates and their rates (m,
            rad, m/s, rad/s): each momentum state's tolerance is scaled by its body's mass
            or inertia where that is below 1 (:meth:`state_atol`; in runs with joint
            stops or friction, which switch models, each model's own); an array (one per
            state) is used as given. With a number for both, ``rtol`` and ``atol`` are also
            multiplied by :meth:`error_norm_scale` (about 0.3 to 0.4 for trees), so that
            they mean the accuracy they mean in a joint-coordinate tool (Pinocchio +
            scipy at the same tolerances reaches the same error;
            ``benchmarks/work_precision.py``).
        max_step : float, optional
            Largest step (s); None: as :func:`bondgraph.simulate` (a periodic actuator
            or load bounds it to 1/20 of its period; steps and ramps are breaks, where
            the run restarts).
        stabilization : Baumgarte, None or "auto"
            ``"auto"`` uses Baumgarte gains alpha = beta = 10/s (a choice that is stable
            and far from the mechanism's own frequencies in the examples; pass None to
            see the raw drift).
        projection : bool
            Also project the state onto Phi = 0 and c = 0 at every output time (the
            solver restarts there).
        events : sequence of callables ``g(t, x) -> float``
            Zero crossings located, as in :func:`bondgraph.simulate` (``x`` is the
            model's state vector; ``terminal`` and ``direction`` attributes).
        max_steps, max_wall_time : optional
            The run's budget: accepted steps and wall-clock seconds (statuses
            ``STEP_LIMIT`` and ``TIME_LIMIT``, the result so far kept); over the whole
            run, also with ``projection``.
        progress : callable, bool or None
            As in :func:`bondgraph.simulate`; True shows the whole run's progress on
            stderr once it has taken more than 2 s.
        parameters : mapping of str to float, optional
            Values of some of :attr:`parameters` for this run (the run is that of
            :meth:`with_parameters`; this model is not changed).
        first_step, dense_output, raise_on_failure, max_events, dense_reduction,
        compiled_loop
            As in :func:`bondgraph.simulate` (the first step, s; a continuous solution;
            raising :class:`~bondgraph.IntegrationError` instead of returning a failed
            run; the most event crossings; the dense reduction; the compiled RK loop).
        max_switches : int
            With joint stops or friction: the most mode switches (impacts, sticking,
            release) before the run ends with the named failure of an event storm
            (status ``EVENT_STORM``, the result so far kept); unused otherwise.
        solver, save, budget : Solver, SaveAt, Budget, optional
            The options above grouped in objects (:mod:`bondgraph.options`), as in
            :func:`bondgraph.simulate`: a field left at ``DEFAULT`` keeps this method's
            default (DOP853, rtol = atol = 1e-9, 501 output points); an option given
            both as a keyword and in an object is refused, naming it.

        Returns
        -------
        MechanismResult
        """
        options = dict(t_eval=t_eval, method=method, rtol=rtol, atol=atol,
                       max_step=max_step, stabilization=stabilization,
                       projection=projection, events=events, max_steps=max_steps,
                       max_wall_time=max_wall_time, first_step=first_step,
                       dense_output=dense_output, raise_on_failure=raise_on_failure,
                       max_events=max_events, dense_reduction=dense_reduction,
                       compiled_loop=compiled_loop, max_switches=max_switches)
        if solver is not None or save is not None or budget is not None:
            options = merge_options("MechanismModel.simulate", options, _SIMULATE_DEFAULTS,
                                    solver=solver, save=save, budget=budget)
        if parameters is not None:
            return self.with_parameters(parameters).simulate(
                t_span, q, qd, x0=x0, free=free, guess=guess, states=states,
                progress=progress, **options)
        try:
            t_span = (float(t_span[0]), float(t_span[1]))
            if len(t_span) != 2:
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise ModelError(f"t_span must be two numbers (start, end) in s, got "
                             f"{t_span!r}") from None
        if x0 is None:
            x0 = self.initial_state(q, qd, free=free, guess=guess, states=states,
                                    t=t_span[0])
        elif q or qd or free or guess or states:
            raise ModelError("give either x0 or the joint coordinates and rates (q, qd, free, "
                             "guess, states), not both")
        reporter = RunProgress(*t_span) if progress is True else None
        try:
            return self._simulate(t_span, x0, reporter or progress or None, **options)
        finally:
            if reporter is not None:
                reporter.close()

    def _simulate(self, t_span, x0, progress, *, t_eval, method, rtol, atol, max_step,
                  stabilization, projection, events, max_steps, max_wall_time, max_switches,
                  **kwargs):
        """:meth:`simulate` from a state: the run (switched, projected or plain)."""
        from elements.results import MechanismResult
        stab = Baumgarte(10.0, 10.0) if stabilization == "auto" else stabilization
        grid = np.linspace(t_span[0], t_span[1], 501) if t_eval is None else \
            np.asarray(t_eval, dtype=float)
        kwargs.update(max_step=max_step, events=events, progress=progress)
        switched = any(ax.switched for j in self.mechanism.joints.values() for ax in j.axes)
        watch = None
        if self.index.contact is not None and not switched:    # (docs/contact.md; a
            from elements.contact.tunnelling import TunnelWatch   # switched run's: hybrid)
            watch = TunnelWatch(self.index.contact, self.model.state_slices)
            kwargs["events"] = [*([events] if callable(events) else events), watch]
        rtol, atol_of = self._tolerances(rtol, atol)
        if switched:
            if projection:
                raise ModelError("projection=True is not available with joint stops or "
                                 "friction (their impacts and sticking switch the model)")
            # (each stretch's model, a variant of this one, gets its own atol vector)
            raw, switches = hybrid.run(self, x0, t_span, grid, method=method, rtol=rtol,
                                       atol=atol_of, stabilization=stab, strict=self.strict,
                                       max_steps=max_steps, max_wall_time=max_wall_time,
                                       max_switches=max_switches, **kwargs)
            res = MechanismResult(self, raw, stab)
            res.switches = switches
            return res
        atol = atol_of(self.model)
        if not projection:
            res = simulate(self.model, t_span, x0, t_eval=grid, method=method, rtol=rtol,
                           atol=atol, stabilization=stab, strict=self.strict,
                           max_steps=max_steps, max_wall_time=max_wall_time, **kwargs)
            return MechanismResult(self, tunnelled(res, watch, kwargs), stab)
        parts = []
        x = self.project(x0)
        removed = 0.0
        steps_left = max_steps
        deadline = None if max_wall_time is None else time.monotonic() + max_wall_time
        for k in range(len(grid) - 1):
            wall = None if deadline is None else max(deadline - time.monotonic(), 1e-9)
            seg = simulate(self.model, (grid[k], grid[k + 1]), x, t_eval=[grid[k], grid[k + 1]],
                           method=method, rtol=rtol, atol=atol, stabilization=stab,
                           strict=self.strict, max_steps=steps_left, max_wall_time=wall,
                           check_start=k == 0, **kwargs)
            if not seg.success or (watch is not None and watch.hit):
                parts.append(seg)
                break
            if steps_left is not None:        # (the budget is the whole run's)
                steps_left -= seg.n_steps
                if steps_left <= 0 and k < len(grid) - 2:
                    parts.append(dataclasses.replace(
                        seg, status=Status.STEP_LIMIT, success=False,
                        failure_time=float(grid[k + 1]),
                        message=f"more than max_steps = {max_steps} steps by t = "
                                f"{grid[k + 1]:.6g} s"))
                    break
            _, phi_end = self.constraint_jacobian(seg.x[:, -1])
            removed = max(removed, float(np.abs(phi_end).max(initial=0.0)))
            x = self.project(seg.x[:, -1])
            parts.append(_with_last(seg, x))
        res = MechanismResult(self, tunnelled(join_results(parts), watch, kwargs), stab)
        res.projection_drift = removed
        return res


_SIMULATE_DEFAULTS = {k: p.default for k, p in
                      inspect.signature(MechanismModel.simulate).parameters.items()}
""":meth:`MechanismModel.simulate`'s keyword defaults (a keyword that differs was
given)."""


def _inertia_of(params, body: str) -> np.ndarray:
    """A body's central inertia (body axes, (3, 3)) from its parameters."""
    J = np.empty((3, 3))
    for key, (i, j) in INERTIA_ENTRIES.items():
        J[i, j] = J[j, i] = params[f"{body}.{key}"]
    return J


def _with_last(seg, x_last):
    """The segment with its end state replaced by the projected one."""
    xs = np.array(seg.x)
    xs[:, -1] = x_last
    return dataclasses.replace(seg, x=xs)
