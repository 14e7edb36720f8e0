"""The assembly layer: a mechanism of bodies, joints and loads, built into a vector bond
graph.

- :class:`Mechanism`: bodies, joints, loads and gravity; :meth:`Mechanism.build` gives the
  ordinary :class:`~bondgraph.BondGraph` (inspect, render or edit it),
  :meth:`Mechanism.assemble` the :class:`~elements.mechanism_model.MechanismModel`
  (initial states, projection, simulation; re-exported here).
- :func:`~elements.joints.attachment_name` (re-exported): the names of a joint's springs,
  dampers and actuators.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bondgraph.errors import NameNotFoundError, did_you_mean

from bondgraph import (
    C, BondGraph, I, KinematicState, ModelError, OneJunction, PositionConstraint, R, Se,
    Sf, StateFunction, TimeFunction, WorkState,
)
from bondgraph.primitives.sources import CompiledSource
from bondgraph._gc import paused
from bondgraph.element import check_name

from elements.build_index import Attachment, BuildIndex, Kind
from elements.kernels.blocks import build_block, frames_context
from elements.parts.rigid_body import INERTIA_ENTRIES
from elements.running.closure import AssemblyError
from elements.parts.couplings import JointCoupling
from elements.parts.forces import Load
from elements.joints.kinds import FreeJoint, Joint, JointAxis, attachment_name
from elements.mechanism_model import MechanismModel
from elements.parts.rigid_body import Ground, RigidBody

__all__ = ["Mechanism", "MechanismModel", "AssemblyError", "attachment_name"]


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
        self.couplings: dict[str, JointCoupling] = {}
        self.frames: dict[str, Any] = {}
        """Named frames fixed on bodies (an importer's links): name ->
        :class:`~elements.files.robot_tree.Frame` (body, position from its centre, rotation)."""
        self.shapes: dict[str, Any] = {}
        """Collision shapes by name (:meth:`add_shape`)."""
        self.contact_laws: dict[str, Any] = {}
        """Each shape's :class:`~elements.contact.law.ContactLaw` (None: a plane that takes
        its partners' laws)."""
        self.contact_options: dict[str, Any] = {"margin": 0.0, "skip_parent": True,
                                                "pairs_on": (), "pairs_off": ()}
        """The broad phase's filters (:meth:`contact_pairs`)."""
        self.free_start: dict[str, dict[str, Any]] = {}
        """Where free bodies start when a run or an analysis is not told (name -> the
        keys of a ``free=`` entry: ``position`` m and ``rotation`` of the centre of mass,
        global, ``velocity``, ``angular_velocity``); a key given in ``free=`` replaces
        the one here; a body not here starts at rest at the origin. The importers put
        each floating body where the file draws it: MJCF at MuJoCo's ``qpos0``, URDF
        a floating base with its root link frame at the origin with the global axes
        (Pinocchio's ``neutral``), a ``floating`` joint's child at the joint's origin."""
        self.import_report: Any = None
        """What an importer made of a robot description
        (:class:`~elements.files.robot_tree.ImportReport`), None for a mechanism built here."""

    def _check_name(self, name: str, what: str):
        if name == "gravity":
            raise ModelError(f"mechanism '{self.name}': 'gravity' is reserved (the gravity "
                             f"parameters are gravity.x, gravity.y, gravity.z); choose "
                             f"another name for the {what}")
        taken = set(self.bodies) | set(self.joints) | set(self.loads) | \
            set(getattr(self, "subsystems", {})) | set(getattr(self, "couplings", {})) | \
            {self.ground.name}
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

    def add_coupling(self, coupling: JointCoupling) -> JointCoupling:
        """Add a coupling between two of the mechanism's joints (returns it): a gear, a
        rack, a belt, a mimic joint (see :class:`~elements.parts.couplings.JointCoupling`)."""
        if not isinstance(coupling, JointCoupling):
            raise ModelError(f"mechanism '{self.name}': add_coupling takes a JointCoupling, "
                             f"got {coupling!r}")
        self._check_name(coupling.name, "coupling")
        for role in ("leader", "follower"):
            j = getattr(coupling, role)
            if self.joints.get(j.name) is not j:
                raise ModelError(f"coupling '{coupling.name}': its {role} '{j.name}' is not a "
                                 f"joint of mechanism '{self.name}' (add it first)")
        followers = {c.follower.name: c.name for c in self.couplings.values()}
        if coupling.follower.name in followers:
            raise ModelError(f"coupling '{coupling.name}': joint '{coupling.follower.name}' "
                             f"already follows coupling '{followers[coupling.follower.name]}'"
                             f"; a joint follows at most one coupling (make it the leader "
                             f"of the other)")
        self.couplings[coupling.name] = coupling
        return coupling

    def add_shape(self, shape: Any, law: Any = None) -> Any:
        """Add a collision shape (returns it): a :class:`~elements.contact.Plane` on the
        ground, or a sphere, capsule, box, cylinder or convex mesh on a body of the
        mechanism (posed in the body's frame, see :mod:`elements.contact`). ``law``
        (:class:`~elements.contact.ContactLaw`) says how its contacts push and rub
        (default ``ContactLaw()``; a plane's default is none: its pairs take the other
        shape's law). The law's stiffness, damping and friction become parameters
        ``<shape>.contact.k``, ``.damping``, ``.mu``."""
        from elements.contact import ContactLaw, Plane, Shape
        if not isinstance(shape, Shape):
            raise ModelError(f"mechanism '{self.name}': add_shape takes a collision shape "
                             f"(Plane, Sphere, Capsule, Box, Cylinder, ConvexMesh), got "
                             f"{shape!r}")
        if shape.name in self.shapes:         # (shapes have their own names: a geom is
            raise ModelError(                 # often called after its body)
                f"mechanism '{self.name}': two shapes are named '{shape.name}'; shape "
                f"names must be unique")
        if shape.body != self.ground.name and shape.body not in self.bodies:
            raise ModelError(f"shape '{shape.name}': body {shape.body!r} is not a body of "
                             f"mechanism '{self.name}' (add it first, or put the shape on "
                             f"'{self.ground.name}'){did_you_mean(shape.body, self.bodies)}")
        if isinstance(shape, Plane) and shape.body != self.ground.name:
            raise ModelError(f"shape '{shape.name}': a plane is a half-space fixed in space: "
                             f"put it on '{self.ground.name}', not on {shape.body!r}")
        if law is None and not isinstance(shape, Plane):
            law = ContactLaw()
        if law is not None:
            if not isinstance(law, ContactLaw):
                raise ModelError(f"shape '{shape.name}': law must be a ContactLaw, got "
                                 f"{law!r}")
            law = law.named(f"shape '{shape.name}'")
        self.shapes[shape.name] = shape
        self.contact_laws[shape.name] = law
        return shape

    def contact_pairs(self, *, on: Sequence[tuple[str, str]] | None = None,
                      off: Sequence[tuple[str, str]] | None = None,
                      skip_parent: bool | None = None, margin: float | None = None) -> None:
        """The broad phase's filters: pairs of shape names that may always touch
        (``on``) or never (``off``); whether a body and its parent skip each other
        (``skip_parent``, default True; the ground is exempt); the detection margin (m).
        Shapes also filter by their masks (``contype``, ``conaffinity``)."""
        opts = self.contact_options
        if on is not None:
            opts["pairs_on"] = tuple(tuple(p) for p in on)
        if off is not None:
            opts["pairs_off"] = tuple(tuple(p) for p in off)
        if skip_parent is not None:
            opts["skip_parent"] = bool(skip_parent)
        if margin is not None:
            opts["margin"] = margin

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
        body, each after its joint (:meth:`free_joints`; an implicit one is in the tree,
        not in :attr:`joints`), and the loop-closing joints).

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
        for fj in self.free_joints():     # the free bodies' joints root trees of their own
            if fj.child.name not in reached:      # (an implicit one: not in self.joints)
                tree.append(fj)
                reached.add(fj.child.name)
                grow()
        lost = [b for b in self.bodies if b not in reached]
        if lost:
            raise ModelError(f"mechanism '{self.name}': bodies {', '.join(lost)} are reached "
                             f"from neither the ground nor a free body (their joints form a "
                             f"cycle of children): make one of them a parent")
        return tree, list(remaining)

    def free_joints(self) -> list[FreeJoint]:
        """The free bodies' joints, in body order: a free joint to the ground without
        ports (:class:`~elements.FreeJoint` with ``ports=False``, which builds nothing).
        A body that is nobody's child stands on one, implicit: made here, named after
        the body, not in :attr:`joints`; a ``FreeJoint(name, mechanism.ground, body,
        ports=False)`` added is the same joint, explicit. Each such body floats (6
        freedoms) unless in a loop; its start is ``free={body: {...}}`` (or the explicit
        joint's ``q``, ``qd``). The spanning tree, initial states, the dynamics
        functions, :class:`~elements.FastDynamics` and results take these joints, one
        path for both."""
        explicit = {j.child.name: j for j in self.joints.values()
                    if isinstance(j, FreeJoint) and j.is_free_body}
        children = {j.child.name for j in self.joints.values()}
        return [explicit[b] if b in explicit else FreeJoint(b, self.ground, body, ports=False)
                for b, body in self.bodies.items() if b in explicit or b not in children]

    def free_bodies(self) -> list[str]:
        """The free bodies: the children of :meth:`free_joints` (every body that is
        nobody's child, and the child of a free joint to the ground without ports), in
        body order. They float (6 freedoms) unless in a loop."""
        return [j.child.name for j in self.free_joints()]

    def build(self, drives: Mapping[str, Any] | None = None,
              locks: Sequence[str] = ()) -> BondGraph:
        """The mechanism's vector bond graph (see :meth:`build_indexed`, which also
        gives the index of what it created)."""
        return self.build_indexed(drives, locks)[0]

    @paused
    def build_indexed(self, drives: Mapping[str, Any] | None = None,
                      locks: Sequence[str] = (),
                      friction_laws: Mapping[str, StateFunction] | None = None
                      ) -> tuple[BondGraph, BuildIndex]:
        """The mechanism's vector bond graph (a new, ordinary, editable BondGraph).

        ``drives`` maps joint names to an effort or flow source element (named
        ``<joint>.drive``) that replaces the joint's actuators on its axis (springs and
        dampers stay): an Se for direct dynamics, an Sf for prescribed motion.
        ``locks`` names ports with friction or impact stops whose lock source is an Sf
        of zero flow (the joint sticks or rests on a stop) instead of an Se; a run
        switches between such graphs (see :class:`~elements.JointAxis.lock`).
        ``friction_laws`` maps ports that slide under friction following their load to
        the effort of their lock (a StateFunction, N or N m; see
        :mod:`elements.running.joint_load`) instead of a constant parameter.

        Returns the graph and its :class:`~elements.build_index.BuildIndex`: every
        attachment created (kind, owner, element, bond, work state, parameters by role).
        """
        if not self.bodies:
            if self.import_report is not None:
                raise ModelError(f"mechanism '{self.name}' has no bodies: every link of its "
                                 f"description is fixed to the root link, which is the "
                                 f"ground (nothing moves); import it with "
                                 f"floating_base=True to make them one free body")
            raise ModelError(f"mechanism '{self.name}' has no bodies: nothing to simulate; "
                             f"add one with add_body(RigidBody(...))")
        drives = dict(drives or {})
        ports = {ax.port: (j, ax) for j in self.joints.values() for ax in j.axes}
        for name in drives:
            if name not in ports:
                j = self.joints.get(name)
                if j is not None and not j.n_free:
                    raise ModelError(f"joint '{name}' ({j.type_name}) has no axis to drive")
                raise ModelError(f"no joint coordinate '{name}' to drive; coordinates: "
                                 f"{', '.join(ports) or 'none'}")
        bg = BondGraph(self.name)
        index = BuildIndex()
        gravity = [bg.add_parameter(f"gravity.{ax}", float(g), "m/s^2",
                                    f"gravity's global {ax} component")
                   for ax, g in zip("xyz", self.gravity)]
        index.add(Attachment(Kind.GRAVITY, "", "gravity",
                             parameters={ax: str(g) for ax, g in zip("xyz", gravity)}))
        for b in self.bodies.values():
            b.build(bg, gravity)
            index.add(Attachment(Kind.BODY, "", b.name, parameters={
                "mass": f"{b.name}.mass",
                **{key: f"{b.name}.{key}" for key in INERTIA_ENTRIES}}))
        # one geometry of all bodies per evaluation, shared by every joint and load
        frames = frames_context([self.ground, *self.bodies.values()])
        for j in self.joints.values():
            for blk in j.constraint_blocks():
                build_block(bg, blk, frames)
            for axis, blk in zip(j.axes, j.axis_blocks()):
                self._build_port(bg, index, j, axis, blk, frames, drives.get(axis.port),
                                 axis.port in locks,
                                 (friction_laws or {}).get(axis.port))
        for c in self.couplings.values():
            build_block(bg, c.block(), None, position_constraint=PositionConstraint(
                c.phi, c.depends_on, affine=((1.0, -c.ratio), -c.offset)))
        for load in self.loads.values():
            build_block(bg, load.block(), frames)
            value = load.value
            params = {}
            if not isinstance(value, (TimeFunction, StateFunction)):
                unit = load.unit
                value = np.array([bg.add_parameter(
                    f"{load.name}.{ax}", float(v), unit, f"load {load.name}'s {ax} "
                    f"component ({load.frame} frame)") for ax, v in zip("xyz", value)],
                    dtype=object)
                params = {ax: str(p) for ax, p in zip("xyz", value)}
            bg.add(Se(load.source, value, dim=3))
            bg.connect(load.source, load.name, name=f"{load.source}.b")
            bg.add_work_state(WorkState(f"{load.name}.work", load.source))
            index.add(Attachment(Kind.LOAD, load.source, load.name,
                                 bond=f"{load.source}.b", work_state=f"{load.name}.work",
                                 parameters=params))
        if self.shapes:
            self._build_contact(bg, index)
        for name, build in self.subsystems.items():
            build(bg)
        return bg, index

    def _build_contact(self, bg: BondGraph, index: BuildIndex) -> None:
        """The contact wrenches: four sources on each body with shapes (elastic and
        dissipative force on ``<body>.v``, moment on ``<body>.w``), each with the work
        state of its power, and the shapes' law parameters."""
        from elements.contact import ContactSystem, ContactWrench
        from elements.contact.dynamics import PARTS
        opts = self.contact_options
        states = {b.name: (b.r, b.q, b.linear_momentum, b.angular_momentum)
                  for b in self.bodies.values()}
        parents = {j.child.name: j.parent.name for j in self.joints.values()}
        system = ContactSystem(list(self.shapes.values()), self.contact_laws, states, parents,
                               self.ground.name, margin=opts["margin"],
                               skip_parent=opts["skip_parent"], pairs_on=opts["pairs_on"],
                               pairs_off=opts["pairs_off"])
        system.states = {b: states[b] for b in system.bodies}
        units = {"k": "N/m^n", "damping": "s/m", "mu": "1"}
        fields = {"k": "stiffness", "damping": "damping", "mu": "friction"}
        for name, law in self.contact_laws.items():
            params = system.law_parameters(name)
            for role, pname in params.items():
                bg.add_parameter(pname, float(getattr(law, fields[role])), units[role],
                                 f"contact law of shape {name}: {fields[role]}",
                                 positive=role == "k")
            index.add(Attachment(Kind.SHAPE, "", name, parameters=params))
        stems = ("elastic_force", "elastic_moment", "dissipative_force", "dissipative_moment")
        for body in system.bodies:
            b = self.bodies[body]
            for part, (stem, junction) in enumerate(zip(stems, (b.v, b.w, b.v, b.w))):
                n = f"{body}.contact.{stem}"
                bg.add(ContactWrench(n, system, body, part))
                bg.connect(n, junction, name=f"{n}.b")
                bg.add_work_state(WorkState(f"{n}.work", n))
                index.add(Attachment(Kind.CONTACT, n, body, index=part, bond=f"{n}.b",
                                     work_state=f"{n}.work"))
        assert len(stems) == len(PARTS)
        index.contact = system

    @staticmethod
    def _build_port(bg: BondGraph, index: BuildIndex, j: Joint, axis: JointAxis, blk,
                    frames, drive, locked: bool = False, law=None) -> None:
        """A coordinate's port: its 1-junction, axis block, attachments (or ``drive``,
        which replaces the actuators), its stops and friction (``locked``: the lock
        source is an Sf of zero flow) and the kinematic state of the coordinate."""
        ax = axis.junction
        port = axis.port
        bg.add(OneJunction(ax))
        build_block(bg, blk, frames, port_from=ax, port_name=axis.bond)
        attached = False
        u = axis.units()
        on = dict(owner=port, joint=j.name)
        for i, (n, s) in enumerate(zip(axis.attachments("spring"), axis.springs)):
            k = bg.add_parameter(f"{n}.k", s.stiffness, u["k"],
                                 f"stiffness of a spring on joint {port}", positive=True)
            bg.add_parameter(f"{n}.rest", s.rest, u["rest"], f"rest position of a "
                             f"spring on joint {port} (its coordinate there)")
            bg.add(C(n, k))
            bg.connect(ax, n, name=f"{n}.b")
            index.add(Attachment(Kind.SPRING, n, index=i, bond=f"{n}.b", **on,
                                 parameters={"k": f"{n}.k", "rest": f"{n}.rest"}))
            attached = True
        for i, (n, d) in enumerate(zip(axis.attachments("damper"), axis.dampers)):
            c = bg.add_parameter(f"{n}.c", d.coefficient, u["c"],
                                 f"coefficient of a damper on joint {port} (>= 0)")
            bg.add(R(n, c))
            bg.connect(ax, n, name=f"{n}.b")
            bg.add_work_state(WorkState(f"{n}.dissipated", n))
            index.add(Attachment(Kind.DAMPER, n, index=i, bond=f"{n}.b", **on,
                                 work_state=f"{n}.dissipated", parameters={"c": f"{n}.c"}))
            attached = True
        # a flow drive sets the rate: a rotor there would be a storage element in
        # differential causality; its effort J qdd is added where the drive's effort is
        # read (dynamics.inverse_dynamics, prescribed_motion)
        rotors = axis.rotors if not (isinstance(drive, Sf) or locked) else ()
        for i, (n, r) in enumerate(zip(axis.attachments("rotor"), rotors)):
            inertia = bg.add_parameter(f"{n}.inertia", r.inertia, u["inertia"],
                                       f"rotor inertia on joint {port}", positive=True)
            bg.add(I(n, inertia))
            bg.connect(ax, n, name=f"{n}.b")
            index.add(Attachment(Kind.ROTOR, n, index=i, bond=f"{n}.b", **on,
                                 parameters={"inertia": f"{n}.inertia"}))
            attached = True
        for i, (n, a) in enumerate(zip(axis.attachments("actuator"),
                                       axis.actuators if drive is None else ())):
            effort = a.effort
            params = {}
            if not isinstance(effort, (TimeFunction, StateFunction)):
                effort = bg.add_parameter(n, float(effort), u["effort"],
                                          f"constant effort of an actuator on joint "
                                          f"{port}, on the child")
                params = {"effort": n}
            bg.add(Se(n, effort))
            bg.connect(n, ax, name=f"{n}.b")
            bg.add_work_state(WorkState(f"{n}.work", n))
            index.add(Attachment(Kind.ACTUATOR, n, index=i, bond=f"{n}.b", **on,
                                 work_state=f"{n}.work", parameters=params))
            attached = True
        if axis.switched:
            attached |= Mechanism._build_switched(bg, index, j, axis, locked, law)
        if drive is not None:
            bg.add(drive)
            bg.connect(drive.name, ax, name=f"{port}.drive.b")
            # the drive's work (an Sf's effort is whatever the motion needs), so that
            # the energy ledger balances under prescribed motion too
            bg.add_work_state(WorkState(f"{port}.drive.work", drive.name))
            index.add(Attachment(Kind.DRIVE, drive.name, bond=f"{port}.drive.b", **on,
                                 work_state=f"{port}.drive.work"))
            attached = True
        if not attached:      # a free axis: zero effort keeps the junction valid
            n = f"{port}.free"
            bg.add(Se(n, 0.0))
            bg.connect(n, ax, name=f"{n}.b")
            index.add(Attachment(Kind.FREE, n, bond=f"{n}.b", **on))
        bg.add_kinematic_state(KinematicState(axis.state, ax, 1))

    @staticmethod
    def _build_switched(bg: BondGraph, index: BuildIndex, j: Joint, axis: JointAxis,
                        locked: bool, law: StateFunction | None = None) -> bool:
        """A port's compliant stops (per side, a spring law -k (q - stop) beyond the
        stop, and a damper whose coefficient a run sets to zero out of contact) and its
        lock source (friction, impact stops)."""
        u = axis.units()
        port, lim, added = axis.port, axis.limit, False
        if lim is not None and lim.kind == "compliant":
            for side, at in lim.sides():
                n = axis.stop_element(side)
                if getattr(index, "stop_family", None) is None:
                    index.stop_family = _StopFamily()
                bg.add(Se(n, _stop_law(axis.state, lim.stiffness, at, side,
                                       index.stop_family)))
                bg.connect(n, axis.junction, name=f"{n}.b")
                index.add(Attachment(Kind.STOP_SPRING, n, port, j.name, side=side,
                                     bond=f"{n}.b"))
                c = bg.add_parameter(f"{n}.damper.c", lim.damping, u["c"],
                                     f"damping of the {side} stop of joint {port} (engaged "
                                     f"in contact only)")
                bg.add(R(f"{n}.damper", c))
                bg.connect(axis.junction, f"{n}.damper", name=f"{n}.damper.b")
                bg.add_work_state(WorkState(f"{n}.damper.dissipated", f"{n}.damper"))
                index.add(Attachment(Kind.STOP_DAMPER, f"{n}.damper", port, j.name,
                                     side=side, bond=f"{n}.damper.b",
                                     work_state=f"{n}.damper.dissipated",
                                     parameters={"c": f"{n}.damper.c"}))
                added = True
        if axis.friction is not None or (lim is not None and lim.kind == "impact"):
            n = axis.lock
            params = {}
            if locked:
                bg.add(Sf(n, 0.0))
            elif law is not None:        # sliding, its level following the load
                bg.add(Se(n, law))
            else:
                e = bg.add_parameter(f"{n}.effort", 0.0, u["effort"],
                                     f"Coulomb friction effort on joint {port} (set by the "
                                     f"run from the direction of motion)")
                bg.add(Se(n, e))
                params = {"effort": f"{n}.effort"}
            bg.connect(n, axis.junction, name=f"{n}.b")
            bg.add_work_state(WorkState(f"{n}.work", n))
            index.add(Attachment(Kind.LOCK, n, port, j.name, bond=f"{n}.b",
                                 work_state=f"{n}.work", parameters=params))
            added = True
        return added

    def assemble(self, *, strict: bool = False,
                 drives: Mapping[str, Any] | None = None,
                 locks: Sequence[str] = ()) -> MechanismModel:
        """Build the graph, assign causality and assemble: a :class:`MechanismModel`.

        The model keeps its own copy of the mechanism as it is now: bodies, joints,
        loads or attachments added or changed later do not reach it (assemble again to
        include them).

        Raises
        ------
        ModelError
            For a mechanism without bodies (nothing would move), or what the build,
            causality assignment or assembly find wrong, naming the element."""
        return MechanismModel(self, strict=strict, drives=drives, locks=locks)

    def __repr__(self) -> str:
        return (f"Mechanism({self.name!r}: {len(self.bodies)} bodies, {len(self.joints)} "
                f"joints, {len(self.loads)} loads)")


class _StopFamily:
    """The compliant stops of one build, as one family of compiled sources
    (:class:`~bondgraph.primitives.sources.CompiledSource`; the kernel
    :func:`elements.kernels.compiled.stop_springs`): each stop's (state, k, at, upper?)."""

    def __init__(self) -> None:
        self.members: list[tuple[str, float, float, bool]] = []

    def add(self, state: str, k: float, at: float, upper: bool) -> CompiledSource:
        self.members.append((state, float(k), float(at), upper))
        return CompiledSource(self, _stop_kernel, self.pack,
                              np.array([len(self.members) - 1]))

    def pack(self, slices) -> tuple[np.ndarray, np.ndarray, int]:
        """The states' indices (-1: not in this model; its output 0, read by no one),
        [k, at, upper] of every stop, and their number."""
        ints = np.array([slices[s].start if s in slices else -1
                         for s, _, _, _ in self.members], dtype=np.int64)
        flts = np.array([[k, at, float(up)] for _, k, at, up in self.members],
                        dtype=float).ravel()
        return ints, flts, len(self.members)


def _stop_kernel():
    from elements.kernels.compiled import stop_springs
    return stop_springs


def _stop_law(state: str, k: float, at: float, side: str,
              family: _StopFamily | None = None) -> StateFunction:
    """A compliant stop's spring: -k (q - at) beyond the stop, 0 before it (N or N m);
    compiled as a member of ``family`` (the same numbers)."""
    if side == "upper":
        def law(t, s):
            return -k * max(float(s[state][0]) - at, 0.0)
    else:
        def law(t, s):
            return -k * min(float(s[state][0]) - at, 0.0)
    compiled = family.add(state, k, at, side == "upper") if family is not None else None
    return StateFunction(law, (state,), compiled)
