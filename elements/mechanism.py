"""The assembly layer: a mechanism of bodies, joints and loads, built into a vector bond
graph, with consistent initial states and simulation.

- :class:`Mechanism`: bodies, joints, loads and gravity; :meth:`Mechanism.build` gives the
  ordinary :class:`~bondgraph.BondGraph` (inspect, render or edit it),
  :meth:`Mechanism.assemble` the :class:`MechanismModel`.
- :class:`MechanismModel`: the assembled state-space model plus the mechanism's
  structure: initial states from joint coordinates (forward kinematics for trees, Newton
  on Phi = 0 for closed loops), projection onto Phi = 0 and c = 0, reactions, simulation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bondgraph.errors import NameNotFoundError

from bondgraph import (
    C, BondGraph, Baumgarte, KinematicState, ModelError, OneJunction, R, Se, StateFunction,
    TimeFunction, WorkState,
    assemble, assign_causality, simulate,
)
from bondgraph._gc import paused
from bondgraph.parameters import ParameterSet
from bondgraph.results import join_results
from bondgraph.element import MAX_MAGNITUDE, check_name
from bondgraph.spatial import as_rotation, matrix_to_quat, quat_to_matrix

from ._blocks import Block, _geometry, build_block, frames_context
from ._kernels import Geometry
from .forces import Load
from .joints import Joint
from .rigid_body import INERTIA_ENTRIES, Ground, Inertia, RigidBody

__all__ = ["Mechanism", "MechanismModel", "AssemblyError"]


CLOSED_TOL = 1e-8
"""Largest closure residual (m, or an entry of a rotation matrix) an initial state may
leave at a joint."""


class AssemblyError(ModelError):
    """Fires when a consistent initial state cannot be found (Newton on Phi = 0 did not
    converge, or the coordinates given do not fit the mechanism)."""


class Mechanism:
    """A multibody mechanism: bodies, joints, loads and gravity.

    Parameters
    ----------
    name : str
    gravity : 3-vector
        Gravitational acceleration, global coordinates (m/s^2); (0, 0, 0) for none.

    Examples
    --------
    >>> from elements import Mechanism, RigidBody, Inertia, RevoluteJoint
    >>> mech = Mechanism("pendulum", gravity=(0.0, -9.81, 0.0))
    >>> rod = mech.add_body(RigidBody("rod", 1.0, Inertia.rod(1.0, 0.5, axis=1, thin=1e-4)))
    >>> _ = mech.add_joint(RevoluteJoint("J1", mech.ground, rod, child_point=(0, 0.25, 0),
    ...                                  axis=(0, 0, 1)))
    >>> model = mech.assemble()
    >>> [s.name for s in model.causal.constraint_sources]
    ['Se*_J1.t', 'Se*_J1.r']
    """

    def __init__(self, name: str = "mechanism", gravity: Any = (0.0, 0.0, 0.0)):
        self.name = check_name(name, "mechanism")
        try:
            g = np.array(gravity, dtype=float)
        except (TypeError, ValueError):
            g = np.zeros(0)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"mechanism '{name}': gravity must be 3 finite numbers (m/s^2), "
                             f"got {gravity!r}")
        self.gravity = g
        self.ground = Ground()
        self.bodies: dict[str, RigidBody] = {}
        self.joints: dict[str, Joint] = {}
        self.loads: dict[str, Load] = {}
        self.subsystems: dict[str, Any] = {}

    def _check_name(self, name: str, what: str):
        if name == "gravity":
            raise ModelError(f"mechanism '{self.name}': 'gravity' is reserved (the gravity "
                             f"parameters are gravity.x, gravity.y, gravity.z); choose "
                             f"another name for the {what}")
        taken = set(self.bodies) | set(self.joints) | set(self.loads) | \
            set(getattr(self, "subsystems", {})) | {self.ground.name}
        if name in taken:
            raise ModelError(f"mechanism '{self.name}': duplicate name '{name}' for a {what}; "
                             f"names of bodies, joints and loads must be unique")

    def add_body(self, body: RigidBody) -> RigidBody:
        """Add a body (returns it)."""
        if not isinstance(body, RigidBody) or body.is_ground:
            raise ModelError(f"mechanism '{self.name}': add_body takes a RigidBody, got {body!r}")
        self._check_name(body.name, "body")
        self.bodies[body.name] = body
        return body

    def add_joint(self, joint: Joint) -> Joint:
        """Add a joint (returns it); its bodies must already be in the mechanism."""
        if not isinstance(joint, Joint):
            raise ModelError(f"mechanism '{self.name}': add_joint takes a Joint, got {joint!r}")
        self._check_name(joint.name, "joint")
        for role, b in (("parent", joint.parent), ("child", joint.child)):
            if not (b is self.ground or self.bodies.get(b.name) is b):
                raise ModelError(f"joint '{joint.name}': its {role} '{b.name}' is not a body of "
                                 f"mechanism '{self.name}' (add it first, or use "
                                 f"mechanism.ground)")
        self.joints[joint.name] = joint
        return joint

    def add_load(self, load: Load) -> Load:
        """Add a load (returns it)."""
        if not isinstance(load, Load):
            raise ModelError(f"mechanism '{self.name}': add_load takes a load, got {load!r}")
        self._check_name(load.name, "load")
        if self.bodies.get(load.body.name) is not load.body:
            raise ModelError(f"load '{load.name}': its body '{load.body.name}' is not in "
                             f"mechanism '{self.name}'")
        self.loads[load.name] = load
        return load

    def add_subsystem(self, name: str, build) -> None:
        """Attach any bond graph: ``build(bg)`` adds elements and bonds to the mechanism's
        graph when it is built (connect them to a joint's ``<joint>.axis`` 1-junction or a
        body's ``<body>.v`` / ``<body>.w``). Element names should start with ``name.``."""
        if not callable(build):
            raise ModelError(f"subsystem '{name}': build must be a callable taking the graph")
        self._check_name(name, "subsystem")
        self.subsystems[name] = build

    def body(self, name: str) -> RigidBody:
        """The body called ``name`` (or the ground)."""
        if name == self.ground.name:
            return self.ground
        try:
            return self.bodies[name]
        except KeyError:
            raise NameNotFoundError(f"mechanism '{self.name}' has no body {name!r}; bodies: "
                           f"{', '.join(self.bodies)}") from None

    def joint(self, name: str) -> Joint:
        """The joint called ``name``."""
        try:
            return self.joints[name]
        except KeyError:
            raise NameNotFoundError(f"mechanism '{self.name}' has no joint {name!r}; joints: "
                           f"{', '.join(self.joints)}") from None

    # structure ---------------------------------------------------------------------------
    def spanning_tree(self) -> tuple[list[Joint], list[Joint]]:
        """(tree joints, in breadth-first order from the ground and then from each free
        body, and the loop-closing joints).

        Raises
        ------
        ModelError
            Naming bodies that no tree reaches (every one of them is a child, in a cycle).
        """
        reached = {self.ground.name}
        tree: list[Joint] = []
        remaining = list(self.joints.values())

        def grow():
            progress = True
            while progress:
                progress = False
                for j in list(remaining):
                    if j.parent.name in reached and j.child.name not in reached:
                        tree.append(j)
                        reached.add(j.child.name)
                        remaining.remove(j)
                        progress = True

        grow()
        for name in self.free_bodies():   # free bodies root trees of their own
            if name not in reached:
                reached.add(name)
                grow()
        lost = [b for b in self.bodies if b not in reached]
        if lost:
            raise ModelError(f"mechanism '{self.name}': bodies {', '.join(lost)} are reached "
                             f"from neither the ground nor a free body (their joints form a "
                             f"cycle of children): make one of them a parent")
        return tree, list(remaining)

    def free_bodies(self) -> list[str]:
        """Bodies that are nobody's child: they float (6 freedoms) unless in a loop."""
        children = {j.child.name for j in self.joints.values()}
        return [b for b in self.bodies if b not in children]

    @paused
    def build(self, drives: Mapping[str, Any] | None = None) -> BondGraph:
        """The mechanism's vector bond graph (a new, ordinary, editable BondGraph).

        ``drives`` maps joint names to an effort or flow source element (named
        ``<joint>.drive``) that replaces the joint's actuators on its axis (springs and
        dampers stay): an Se for direct dynamics, an Sf for prescribed motion.
        """
        if not self.bodies:
            raise ModelError(f"mechanism '{self.name}' has no bodies: nothing to simulate; "
                             f"add one with add_body(RigidBody(...))")
        drives = dict(drives or {})
        for jn in drives:
            j = self.joint(jn)
            if not j.n_free:
                raise ModelError(f"joint '{jn}' ({j.type_name}) has no axis to drive")
        bg = BondGraph(self.name)
        gravity = [bg.add_parameter(f"gravity.{ax}", float(g), "m/s^2",
                                    f"gravity's global {ax} component")
                   for ax, g in zip("xyz", self.gravity)]
        for b in self.bodies.values():
            b.build(bg, gravity)
        # one geometry of all bodies per evaluation, shared by every joint and load
        frames = frames_context([self.ground, *self.bodies.values()])
        for j in self.joints.values():
            for blk in j.constraint_blocks():
                build_block(bg, blk, frames)
            if j.n_free:
                ax = j.axis_junction
                bg.add(OneJunction(ax))
                build_block(bg, j.axis_block(), frames, port_from=ax,
                            port_name=f"{j.name}.axis.b")
                attached = False
                u = j.units()
                for i, s in enumerate(j.springs):
                    n = attachment_name(j.name, "spring", i, len(j.springs))
                    k = bg.add_parameter(f"{n}.k", s.stiffness, u["k"],
                                         f"stiffness of a spring on joint {j.name}",
                                         positive=True)
                    bg.add_parameter(f"{n}.rest", s.rest, u["rest"], f"rest position of a "
                                     f"spring on joint {j.name} (its coordinate there)")
                    bg.add(C(n, k))
                    bg.connect(ax, n, name=f"{n}.b")
                    attached = True
                for i, d in enumerate(j.dampers):
                    n = attachment_name(j.name, "damper", i, len(j.dampers))
                    c = bg.add_parameter(f"{n}.c", d.coefficient, u["c"],
                                         f"coefficient of a damper on joint {j.name} "
                                         f"(>= 0)")
                    bg.add(R(n, c))
                    bg.connect(ax, n, name=f"{n}.b")
                    bg.add_work_state(WorkState(f"{n}.dissipated", n))
                    attached = True
                for i, a in enumerate(j.actuators if j.name not in drives else ()):
                    n = attachment_name(j.name, "actuator", i, len(j.actuators))
                    effort = a.effort
                    if not isinstance(effort, (TimeFunction, StateFunction)):
                        effort = bg.add_parameter(n, float(effort), u["effort"],
                                                  f"constant effort of an actuator on "
                                                  f"joint {j.name}, on the child")
                    bg.add(Se(n, effort))
                    bg.connect(n, ax, name=f"{n}.b")
                    bg.add_work_state(WorkState(f"{n}.work", n))
                    attached = True
                if j.name in drives:
                    el = drives[j.name]
                    bg.add(el)
                    bg.connect(el.name, ax, name=f"{j.name}.drive.b")
                    # the drive's work (an Sf's effort is whatever the motion needs), so
                    # that the energy ledger balances under prescribed motion too
                    bg.add_work_state(WorkState(f"{j.name}.drive.work", el.name))
                    attached = True
                if not attached:      # a free axis: zero effort keeps the junction valid
                    n = f"{j.name}.free"
                    bg.add(Se(n, 0.0))
                    bg.connect(n, ax, name=f"{n}.b")
                bg.add_kinematic_state(KinematicState(j.coordinate_state, ax, 1))
        for load in self.loads.values():
            build_block(bg, load.block(), frames)
            value = load.value
            if not isinstance(value, (TimeFunction, StateFunction)):
                unit = load.unit
                value = np.array([bg.add_parameter(
                    f"{load.name}.{ax}", float(v), unit, f"load {load.name}'s {ax} "
                    f"component ({load.frame} frame)") for ax, v in zip("xyz", value)],
                    dtype=object)
            bg.add(Se(load.source, value, dim=3))
            bg.connect(load.source, load.name, name=f"{load.source}.b")
            bg.add_work_state(WorkState(f"{load.name}.work", load.source))
        for name, build in self.subsystems.items():
            build(bg)
        return bg

    def assemble(self, *, strict: bool = False,
                 drives: Mapping[str, Any] | None = None) -> "MechanismModel":
        """Build the graph, assign causality and assemble: a :class:`MechanismModel`.

        The model keeps its own copy of the mechanism as it is now: bodies, joints,
        loads or attachments added or changed later do not reach it (assemble again to
        include them).

        Raises
        ------
        ModelError
            For a mechanism without bodies (nothing would move), or what the build,
            causality assignment or assembly find wrong, naming the element."""
        return MechanismModel(self, strict=strict, drives=drives)

    def __repr__(self) -> str:
        return (f"Mechanism({self.name!r}: {len(self.bodies)} bodies, {len(self.joints)} "
                f"joints, {len(self.loads)} loads)")


class MechanismModel:
    """An assembled mechanism: the bond graph, its causal graph, the state-space model, and
    the mechanism-level operations (initial states, projection, reactions, simulation).

    Attributes
    ----------
    mechanism : Mechanism
    graph : BondGraph
        The mechanism's vector bond graph (before causality).
    causal : CausalGraph
    model : StateSpaceModel
    """

    def __init__(self, mechanism: Mechanism, *, strict: bool = False,
                 drives: Mapping[str, Any] | None = None):
        # its own copy: later edits of the mechanism (a body added, a spring attached)
        # must not reach a model built without them (user functions are shared, not
        # copied: deepcopy keeps functions as they are)
        self.mechanism = mechanism = copy.deepcopy(mechanism)
        self.strict = strict
        self.drives = dict(drives or {})
        self.tree, self.loop_joints = mechanism.spanning_tree()
        self.graph = mechanism.build(self.drives)
        self.causal = assign_causality(self.graph)
        self.model = assemble(self.causal)
        self.blocks: dict[str, list[Block]] = {
            j.name: j.constraint_blocks() for j in mechanism.joints.values()}
        self.state_names = self.model.state_names

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
        for name in self.mechanism.bodies:
            try:
                Inertia.about_center(_inertia_of(params, name))
            except ModelError as exc:
                raise ModelError(f"body '{name}': its inertia parameters give an invalid "
                                 f"inertia: {exc}") from None
        new = copy.copy(self)
        new.model = self.model.with_parameters(params)
        return new

    def mass(self, body: str) -> float:
        """The mass of ``body`` (kg) in this model."""
        return self.parameters[f"{body}.mass"]

    def inertia(self, body: str) -> np.ndarray:
        """The central inertia of ``body`` in body axes (kg m^2, (3, 3)) in this model."""
        return _inertia_of(self.parameters, body)

    def springs(self) -> list[tuple[str, str, float, float]]:
        """Every axis spring in this model: (joint, element name, stiffness, rest)
        (N/m or N m/rad; m or rad)."""
        p = self.parameters
        out = []
        for j in self.mechanism.joints.values():
            for i in range(len(j.springs)):
                stem = attachment_name(j.name, "spring", i, len(j.springs))
                out.append((j.name, stem, p[f"{stem}.k"], p[f"{stem}.rest"]))
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

    def _forward(self, q: Mapping[str, Any], qd: Mapping[str, Any], free=None):
        mech = self.mechanism
        pose = {mech.ground.name: (np.eye(3), np.zeros(3))}
        twist = {mech.ground.name: (np.zeros(3), np.zeros(3))}
        for name in mech.free_bodies():
            A, r, w, v = _free_state(name, (free or {}).get(name))
            pose[name] = (A, r)
            twist[name] = (w, v)
        for j in self.tree:
            A_a, r_a = pose[j.parent.name]
            w_a, v_a = twist[j.parent.name]
            qj = q.get(j.name, 0.0 if j.n_free else None)
            qdj = qd.get(j.name, 0.0 if j.n_free else None)
            A_b, r_b = j.child_pose(A_a, r_a, qj)
            pose[j.child.name] = (A_b, r_b)
            twist[j.child.name] = j.child_twist(A_a, r_a, w_a, v_a, A_b, r_b, qdj)
        return pose, twist

    def state_from_poses(self, pose, twist, coords: Mapping[str, float],
                         states: Mapping[str, Any] | None = None) -> np.ndarray:
        """The state vector from body poses (A, r) and twists (omega, v; global), joint
        coordinates, and values of any other states (subsystems) by name."""
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
            if j.n_free:
                c = float(coords[j.name])
                vals[j.coordinate_state] = c
                for i, s in enumerate(j.springs):
                    stem = attachment_name(j.name, "spring", i, len(j.springs))
                    vals[f"q_{stem}"] = c - self.model.parameters[f"{stem}.rest"]
        for ws in self.graph.work_states:
            vals[ws.name] = 0.0
        for k, v in (states or {}).items():
            if k in vals:
                raise ModelError(f"initial state '{k}' belongs to the mechanism; give it "
                                 f"through joint coordinates and rates")
            vals[k] = v
        return m.initial_state(vals)

    def initial_state(self, q: Mapping[str, Any] | None = None,
                      qd: Mapping[str, Any] | None = None, *,
                      free: Mapping[str, Mapping[str, Any]] | None = None,
                      guess: Mapping[str, float] | None = None,
                      states: Mapping[str, Any] | None = None, tol: float = 1e-12,
                      max_iterations: int = 50) -> np.ndarray:
        """A consistent state from joint coordinates ``q`` and rates ``qd`` (by joint name).

        Trees: forward kinematics; joints not named take coordinate and rate 0.
        Closed loops: the coordinates of the tree joints not named in ``q`` are solved by
        Newton's method on the loop joints' Phi = 0 (minimum-norm steps, starting from
        ``guess``, default 0), and their rates from c = 0. Spherical joints take a rotation matrix and an angular velocity
        (parent coordinates). Free bodies (nobody's child) take their pose and twist from
        ``free[name]``: a mapping with ``rotation`` (3x3, body -> global), ``position``
        (m), ``angular_velocity`` (rad/s, global) and ``velocity`` (m/s), each defaulting
        to the identity or zero. ``states`` gives values, by state name, for the states of
        attached subsystems (e.g. a motor inductance's ``p_motor.La``); they are required.

        Raises
        ------
        ModelError
            For a coordinate given for an unknown joint.
        AssemblyError
            When Newton's method does not converge (the loop cannot close), naming the
            loop joints and the residual.
        """
        for d, what in ((q, "coordinates"), (qd, "rates")):
            if d is not None and not isinstance(d, Mapping):
                raise ModelError(f"initial joint {what} must be a mapping of joint names to "
                                 f"values, e.g. {{'J1': 0.3}}; got {d!r}")
        q = dict(q or {})
        qd = dict(qd or {})
        for d, what in ((q, "coordinate"), (qd, "rate")):
            for name in d:
                if name not in self.mechanism.joints:
                    raise ModelError(f"initial {what} given for unknown joint '{name}'; "
                                     f"joints: {', '.join(self.mechanism.joints)}")
        for name in set(q) | set(qd):        # checked, in the form the joint takes
            qv, qdv = self.mechanism.joints[name].initial_values(q.get(name), qd.get(name))
            for d, v in ((q, qv), (qd, qdv)):
                if v is not None:
                    d[name] = v
        unknown = [n for n in (free or {}) if n not in self.mechanism.free_bodies()]
        if unknown:
            raise ModelError(f"free-body state given for {', '.join(unknown)}, which are not "
                             f"free bodies; free bodies: "
                             f"{', '.join(self.mechanism.free_bodies()) or 'none'}")
        free = dict(free or {})
        if self.loop_joints:
            solve_for = [j.name for j in self.tree if j.n_free and j.name not in q]
            q = self._close_loops(q, solve_for, tol, max_iterations, dict(guess or {}), free)
            qd = self._close_rates(q, qd, [j for j in solve_for if j not in qd], free)
        pose, twist = self._forward(q, qd, free)
        self._check_closed(pose)
        coords = {}
        for j in self.mechanism.joints.values():
            if j.n_free:
                if j.name in q:
                    coords[j.name] = float(q[j.name])
                else:
                    A_a, r_a = pose[j.parent.name]
                    A_b, r_b = pose[j.child.name]
                    coords[j.name] = j.coordinate(A_a, r_a, A_b, r_b)
        return self.state_from_poses(pose, twist, coords, states)

    def _loop_residual(self, q, free):
        """The loop joints' closure residuals (zero exactly where each joint holds; see
        :meth:`elements._kernels.Kernel.closure`) at tree coordinates ``q`` (and free
        bodies' states ``free``)."""
        pose, _ = self._forward(q, {}, free)
        return self._closure(pose, self.loop_joints)

    def _closure(self, pose, joints) -> np.ndarray:
        out = [blk.phi.closure(Geometry.of_poses(pose, blk.bodies))
               for j in joints for blk in self.blocks[j.name] if blk.phi is not None]
        return np.concatenate(out) if out else np.zeros(0)

    def _check_closed(self, pose) -> None:
        """Raise an AssemblyError naming the joint where a pose does not satisfy a
        joint's constraints (to 1e-8: metres, or the entries of a rotation)."""
        for j in self.mechanism.joints.values():
            res = self._closure(pose, [j])
            if res.size and not np.abs(res).max() <= CLOSED_TOL:
                raise AssemblyError(
                    f"mechanism '{self.mechanism.name}': the initial configuration does not "
                    f"satisfy joint '{j.name}' ({j.type_name}): residual "
                    f"{np.abs(res).max():.3g} > {CLOSED_TOL:g}. Check the geometry, the "
                    f"coordinates given, or give a guess nearer the intended assembly")

    def _close_loops(self, q, solve, tol, max_iterations, guess, free):
        """Tree coordinates ``q`` with the joints ``solve`` solved so that the loop
        joints close (free bodies at ``free``)."""
        q = dict(q)
        for n in solve:
            q.setdefault(n, float(guess.get(n, 0.0)))
        if not solve:
            res = self._loop_residual(q, free)
            if np.abs(res).max() > 1e-9:
                raise AssemblyError(self._loop_message(res, "the coordinates given do not close "
                                                            "the loop and none is left free"))
            return q
        z = np.array([q[n] for n in solve], dtype=float)

        def residual(zz):
            return self._loop_residual(dict(q, **dict(zip(solve, zz))), free)

        # Gauss-Newton on the closure residual (zero only where every loop joint holds),
        # each step cut back until it lowers |residual|
        res = residual(z)
        why = f"Newton's method did not converge in {max_iterations} iterations"
        for _ in range(max_iterations):
            if np.abs(res).max() < tol:
                return dict(q, **dict(zip(solve, z)))
            h = 1e-7
            Jm = np.empty((res.size, z.size))
            for k in range(z.size):
                zp, zm = z.copy(), z.copy()
                zp[k] += h
                zm[k] -= h
                Jm[:, k] = (residual(zp) - residual(zm)) / (2 * h)
            step = np.linalg.lstsq(Jm, -res, rcond=None)[0]
            n0 = float(np.linalg.norm(res))
            for lam in 0.5 ** np.arange(20):
                z_new = z + lam * step
                r_new = residual(z_new)
                if np.linalg.norm(r_new) < n0:
                    break
            else:
                why = ("Newton's method stalled (no step lowers the residual: the loop "
                       "does not close near this guess)")
                break
            z, res = z_new, r_new
        if np.abs(res).max() < max(tol, 1e-10):
            return dict(q, **dict(zip(solve, z)))
        raise AssemblyError(self._loop_message(res, why))

    def _loop_message(self, res, why):
        return (f"mechanism '{self.mechanism.name}': {why}; loop joints "
                f"{', '.join(j.name for j in self.loop_joints)}, max |residual| = "
                f"{np.abs(res).max():.3g}. Check the geometry or give other coordinates "
                f"or a guess (initial_state's guess=...) nearer the intended assembly")

    def _close_rates(self, q, qd, solve, free):
        """Rates ``qd`` with those of the joints ``solve`` solved from c = 0."""
        qd = dict(qd)
        for n in solve:
            qd.setdefault(n, 0.0)
        if not solve:
            return qd

        def c_of(z):
            pose, twist = self._forward(q, dict(qd, **dict(zip(solve, z))), free)
            coords = {j.name: 0.0 for j in self.mechanism.joints.values() if j.n_free}
            coords.update({k: float(v) for k, v in q.items() if np.ndim(v) == 0})
            x = self.state_from_poses(pose, twist, coords, self._extra_zero())
            ev = self.model.evaluate(0.0, x)
            rows = [ev.constraint_flow[self.model.u2_slices[s]] for s in self._loop_sources()]
            return np.concatenate(rows)

        z0 = np.zeros(len(solve))
        c0 = c_of(z0)
        Jm = np.column_stack([c_of(np.eye(len(solve))[k]) - c0 for k in range(len(solve))])
        z = np.linalg.lstsq(Jm, -c0, rcond=None)[0]
        return dict(qd, **dict(zip(solve, z)))

    def _extra_zero(self):
        owned = set()
        for b in self.mechanism.bodies.values():
            owned |= {b.r, b.q, b.linear_momentum, b.angular_momentum}
        for j in self.mechanism.joints.values():
            owned.add(j.coordinate_state)
        owned |= {w.name for w in self.graph.work_states}
        return {n: np.zeros(self.model.state_slices[n].stop - self.model.state_slices[n].start)
                for n in self.state_names if n not in owned and not n.startswith("q_")}

    def _loop_sources(self):
        names = []
        for j in self.loop_joints:
            for blk in self.blocks[j.name]:
                names.append(f"Se*_{blk.label}")
        return names

    # -- projection ------------------------------------------------------------------------
    def constraint_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(G, Phi): G maps the bodies' velocity coordinates [v_c (global), omega^b] in body
        order to the constraint rates; Phi the position constraints, in Se* order."""
        m = self.model
        bodies = list(self.mechanism.bodies.values())
        col = {}
        for i, b in enumerate(bodies):
            col[f"{b.name}.v"] = 6 * i
            col[f"{b.name}.w"] = 6 * i + 3
        rows, phis = [], []
        for src in m.unknown_sources:
            blk = self._block_of_source(src)
            geo = _geometry(blk.bodies, [x[m.state_slices[n]] for n in _deps(blk.bodies)])
            G = np.zeros((blk.dim, 6 * len(bodies)))
            for t in blk.terms:
                g = t.constant if t.constant is not None else t.G(geo)
                G[:, col[t.junction]:col[t.junction] + 3] += g
            rows.append(G)
            phis.append(blk.phi(geo))
        return (np.vstack(rows) if rows else np.zeros((0, 6 * len(bodies))),
                np.concatenate(phis) if phis else np.zeros(0))

    def _block_of_source(self, src: str) -> Block:
        label = src[len("Se*_"):]
        jname = label.split(".")[0]
        for blk in self.blocks.get(jname, []):
            if blk.label == label:
                return blk
        raise ModelError(f"unknown effort source '{src}' is not a joint constraint of "
                         f"mechanism '{self.mechanism.name}'")

    def project(self, x: np.ndarray, *, tol: float = 1e-12, max_iterations: int = 20
                ) -> np.ndarray:
        """Project a state onto Phi = 0 (positions, minimum-norm in the bodies' coordinates)
        and c = 0 (velocities, minimum kinetic-energy-metric correction)."""
        m = self.model
        x = np.array(x, dtype=float)
        bodies = list(self.mechanism.bodies.values())
        for _ in range(max_iterations):
            G, phi = self.constraint_jacobian(x)
            if phi.size == 0 or np.abs(phi).max() < tol:
                break
            dz = -np.linalg.lstsq(G, phi, rcond=None)[0]
            for i, b in enumerate(bodies):
                x[m.state_slices[b.r]] += dz[6 * i:6 * i + 3]
                A = quat_to_matrix(x[m.state_slices[b.q]])
                dth = dz[6 * i + 3:6 * i + 6]
                ang = np.linalg.norm(dth)
                if ang > 0:
                    from bondgraph.spatial import axis_angle_matrix
                    A = A @ axis_angle_matrix(dth, ang)
                x[m.state_slices[b.q]] = matrix_to_quat(A) * np.sign(
                    np.dot(matrix_to_quat(A), x[m.state_slices[b.q]]) or 1.0)
        # velocities: minimise the kinetic energy of the correction subject to G u = 0
        G, _ = self.constraint_jacobian(x)
        if G.shape[0]:
            u = np.zeros(6 * len(bodies))
            mass = {b.name: self.mass(b.name) for b in bodies}
            inertia = {b.name: self.inertia(b.name) for b in bodies}
            for i, b in enumerate(bodies):
                u[6 * i:6 * i + 3] = x[m.state_slices[b.linear_momentum]] / mass[b.name]
                u[6 * i + 3:6 * i + 6] = np.linalg.solve(inertia[b.name],
                                                         x[m.state_slices[b.angular_momentum]])
            Mi = np.zeros((6 * len(bodies), 6 * len(bodies)))
            for i, b in enumerate(bodies):
                Mi[6 * i:6 * i + 3, 6 * i:6 * i + 3] = np.eye(3) / mass[b.name]
                Mi[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = np.linalg.inv(inertia[b.name])
            H = G @ Mi @ G.T
            lam = np.linalg.lstsq(H, G @ u, rcond=None)[0]
            u = u - Mi @ G.T @ lam
            for i, b in enumerate(bodies):
                x[m.state_slices[b.linear_momentum]] = mass[b.name] * u[6 * i:6 * i + 3]
                x[m.state_slices[b.angular_momentum]] = inertia[b.name] @ u[6 * i + 3:6 * i + 6]
        return x

    # -- simulation --------------------------------------------------------------------------
    def simulate(self, t_span: tuple[float, float], q: Mapping[str, Any] | None = None,
                 qd: Mapping[str, Any] | None = None, *, x0: np.ndarray | None = None,
                 free: Mapping[str, Mapping[str, Any]] | None = None,
                 guess: Mapping[str, float] | None = None,
                 states: Mapping[str, Any] | None = None,
                 t_eval: Sequence[float] | None = None, method: str = "DOP853",
                 rtol: float = 1e-9, atol: float = 1e-9,
                 stabilization: Baumgarte | None | str = "auto", projection: bool = False,
                 parameters: Mapping[str, float] | None = None, **kwargs: Any):
        """Simulate from joint coordinates and rates (or a full state ``x0``).

        ``free``, ``guess`` and ``states`` are passed to :meth:`initial_state`.
        ``parameters``: values of some of :attr:`parameters` for this run (the run is
        that of :meth:`with_parameters`; this model is not changed).
        ``stabilization="auto"`` uses Baumgarte gains alpha = beta = 10/s (a choice that is
        stable and far from the mechanism's own frequencies in the examples; pass None to
        see the raw drift). ``projection=True`` also projects the state onto Phi = 0 and
        c = 0 at every output time (the solver restarts there).

        Returns
        -------
        MechanismResult
        """
        from .results import MechanismResult
        if parameters is not None:
            return self.with_parameters(parameters).simulate(
                t_span, q, qd, x0=x0, free=free, guess=guess, states=states, t_eval=t_eval,
                method=method, rtol=rtol, atol=atol, stabilization=stabilization,
                projection=projection, **kwargs)
        try:
            t_span = (float(t_span[0]), float(t_span[1]))
            if len(t_span) != 2:
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise ModelError(f"t_span must be two numbers (start, end) in s, got "
                             f"{t_span!r}") from None
        if x0 is None:
            x0 = self.initial_state(q, qd, free=free, guess=guess, states=states)
        elif q or qd or free or guess or states:
            raise ModelError("give either x0 or the joint coordinates and rates (q, qd, free, "
                             "guess, states), not both")
        stab = Baumgarte(10.0, 10.0) if stabilization == "auto" else stabilization
        grid = np.linspace(t_span[0], t_span[1], 501) if t_eval is None else \
            np.asarray(t_eval, dtype=float)
        if not projection:
            res = simulate(self.model, t_span, x0, t_eval=grid, method=method, rtol=rtol,
                           atol=atol, stabilization=stab, strict=self.strict, **kwargs)
            return MechanismResult(self, res, stab)
        parts = []
        x = self.project(x0)
        removed = 0.0
        for k in range(len(grid) - 1):
            seg = simulate(self.model, (grid[k], grid[k + 1]), x, t_eval=[grid[k], grid[k + 1]],
                           method=method, rtol=rtol, atol=atol, stabilization=stab,
                           strict=self.strict, **kwargs)
            if not seg.success:
                parts.append(seg)
                break
            _, phi_end = self.constraint_jacobian(seg.x[:, -1])
            removed = max(removed, float(np.abs(phi_end).max(initial=0.0)))
            x = self.project(seg.x[:, -1])
            parts.append(_with_last(seg, x))
        res = MechanismResult(self, join_results(parts), stab)
        res.projection_drift = removed
        return res


def _free_state(name, spec):
    spec = dict(spec or {})
    allowed = {"rotation", "position", "angular_velocity", "velocity"}
    bad = set(spec) - allowed
    if bad:
        raise ModelError(f"free body '{name}': unknown key(s) {', '.join(sorted(bad))}; valid: "
                         f"{', '.join(sorted(allowed))}")
    try:
        A = as_rotation(spec.get("rotation", np.eye(3)))
    except ValueError as exc:
        raise ModelError(f"free body '{name}': rotation {exc}") from None
    vecs = []
    for key in ("position", "angular_velocity", "velocity"):
        try:
            v = np.array(spec.get(key, np.zeros(3)), dtype=float)
        except (TypeError, ValueError):
            v = np.zeros(0)
        if v.shape != (3,) or not np.all(np.isfinite(v)) or np.abs(v).max() > MAX_MAGNITUDE:
            raise ModelError(f"free body '{name}': {key} must be 3 finite numbers (at most "
                             f"{MAX_MAGNITUDE:.0e} in magnitude), got {spec.get(key)!r}")
        vecs.append(v)
    return A, vecs[0], vecs[1], vecs[2]


def _inertia_of(params, body: str) -> np.ndarray:
    """A body's central inertia (body axes, (3, 3)) from its parameters."""
    J = np.empty((3, 3))
    for key, (i, j) in INERTIA_ENTRIES.items():
        J[i, j] = J[j, i] = params[f"{body}.{key}"]
    return J


def attachment_name(joint: str, kind: str, i: int, count: int) -> str:
    """The element name of a joint's i-th spring, damper or actuator (of ``count``):
    ``J3.spring`` for one, ``J3.spring0``, ``J3.spring1`` for several; its parameters
    are named after it (``J3.spring.k``, ``J3.spring.rest``, ``J3.damper.c``, and the
    actuator's constant effort ``J1.actuator``)."""
    return f"{joint}.{kind}{i}" if count > 1 else f"{joint}.{kind}"


def _deps(bodies):
    from ._blocks import _deps as d
    return d(bodies)


def _with_last(seg, x_last):
    """The segment with its end state replaced by the projected one."""
    import dataclasses
    xs = np.array(seg.x)
    xs[:, -1] = x_last
    return dataclasses.replace(seg, x=xs)
