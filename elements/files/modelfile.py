"""Declarative mechanism files (TOML, read with the standard library's tomllib).

- :func:`load_model`: a file -> :class:`ModelSpec` (mechanism, initial state, solver and
  output settings).
- :func:`~elements.files.tables.signal` (re-exported): a file's value table -> a number,
  an array or a TimeFunction.
- :class:`ModelFileError`: names the file, the table, the key and what is valid.

A file never executes code: values are numbers, arrays, names, and signal tables
(constant, step, ramp, sine, table, or an expression of t read as sympy objects). The
format, by example::

    [model]
    name = "pendulum"
    gravity = [0.0, -9.81, 0.0]          # m/s^2, global

    [[body]]
    name = "rod"
    mass = 1.0                           # kg
    inertia = { principal = [0.02, 0.02, 0.02] }   # kg m^2 about the centre; or
    #   { about_center = [[..], [..], [..]] }, { about_point = [[..]..], point = [..] },
    #   { solid_cube = 0.05 } (side, m)
    points = { tip = [0.0, -0.25, 0.0] }           # body coordinates from the centre, m

    [[joint]]
    name = "J1"
    type = "revolute"                    # a registered kind: revolute | prismatic |
                                         # cylindrical | screw | universal | planar |
                                         # spherical | free | fixed (see joint_types())
    parent = "ground"                    # a body name or "ground"
    child = "rod"
    parent_point = [0.0, 0.0, 0.0]       # or a point name
    child_point = [0.0, 0.25, 0.0]
    axis = [0.0, 0.0, 1.0]               # parent coordinates
    spring = { stiffness = 2.0, rest = 0.0 }       # or a number (stiffness)
    damper = { coefficient = 0.1 }                 # or a number
    actuator = { type = "sine", amplitude = 0.5, omega = 3.0 }   # or a number
    limit = { lower = -1.0, upper = 1.0, restitution = 0.5 }    # impact stops, or
    #   { upper = 1.0, stiffness = 1e4, damping = 10.0 } (compliant stops)
    friction = { coulomb = 0.2, static = 0.3 }     # or a number (N m or N; Coulomb)
    #   { mu = 0.1, mu_static = 0.15, radius = 0.01 }: plus mu * radius * the transverse
    #   reaction (N m; on a slide, no radius: mu * the normal reaction, N); coulomb 0 then

    [[coupling]]                         # q_follower = ratio q_leader + offset
    name = "gear"
    leader = "J1"
    follower = "J2"
    ratio = -0.5                         # rad/rad, m/m, m/rad or rad/m
    offset = 0.0

    [[load]]
    name = "push"
    type = "force"                       # force | moment
    body = "rod"
    point = "tip"                        # force only (an error on a moment)
    frame = "global"                     # global | body
    value = [1.0, 0.0, 0.0]              # or a signal table with vector entries

    [initial]
    q = { J1 = 0.5 }                     # a spherical joint: [rx, ry, rz] (rotation
    qd = { J1 = 0.0 }                    #   vector, rad) or [w, x, y, z]; qd: 3 numbers

    [solver]
    t_end = 2.0                          # s (t_start = 0 by default)
    points = 201
    method = "DOP853"                    # RK45 | DOP853 | Radau | BDF | LSODA
    rtol = 1e-9
    atol = 1e-9
    stabilization = { alpha = 10.0, beta = 10.0 }  # or "none"

    [output]
    mat = "result.mat"
    diagram = "bond_graph.svg"
    [[output.plot]]
    file = "tip.png"
    y = ["rod.x", "rod.y"]
    title = "rod centre"

A robot description can stand in for (or beside) the bodies and joints::

    [robot]
    file = "ur5.urdf"                    # .urdf, or MJCF (.xml with <mujoco>, .mjcf);
                                         #   relative to this file's folder
    floating_base = false                # URDF only
    mimic = "couple"                     # URDF only: couple | independent | refuse
    massless = "refuse"                  # URDF only: refuse | fix (joints moving no mass)
    min_inertia = 1e-6                   # URDF only, optional: a bound on principal
                                         #   moments, kg m^2 (as MuJoCo's boundinertia)
    strict = false                       # refuse inertias breaking the triangle inequality
    efforts = { shoulder_pan_joint = 2.0 }   # joint = number or signal table (N m, N)

``[model] gravity`` is then optional (URDF: (0, 0, -9.81); MJCF: the file's).

Signals: ``{ type = "constant", value = v }``, ``{ type = "step", time, before, after }``,
``{ type = "ramp", slope, start = 0, offset = 0 }``, ``{ type = "sine", amplitude,
omega (rad/s) or frequency (Hz), phase = 0, offset = 0 }``, ``{ type = "table", t = [..],
value = [..] }`` (linear interpolation; held constant outside). For loads each number
may be a 3-vector.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bondgraph import Baumgarte, Budget, ModelError, SaveAt, Solver
from bondgraph.element import check_name
from bondgraph._files import MAX_POINTS, output_name
from bondgraph.simulation import METHODS
from bondgraph.spatial import as_rotation

from elements.files.tables import (  # noqa: F401  (signal, read_text, read_toml: re-exported)
    ModelFileError, TableReader, read_text, read_toml, signal,
)
from elements.parts.couplings import JointCoupling
from elements.parts.forces import BodyMoment, PointForce
from elements.files.modelfile_robot import robot_mechanism
from elements.joints.kinds import AxisActuator, AxisDamper, AxisRotor, AxisSpring, joint_type, joint_types
from elements.mechanism import Mechanism
from elements.parts.rigid_body import Inertia, RigidBody

__all__ = ["load_model", "loads_model", "ModelSpec", "ModelFileError", "signal",
           "SolverSettings", "OutputSettings", "PlotSpec"]


@dataclass(frozen=True)
class PlotSpec:
    """A figure of result columns against time (columns named as in the CSV files)."""

    file: str
    y: tuple[str, ...]
    title: str = ""
    ylabel: str = ""
    norm: bool = False   # also plot the norm of the columns (e.g. a force's magnitude)


@dataclass(frozen=True)
class SolverSettings:
    """Time span (s), output points, method and tolerances, stabilisation, the largest
    step (s) and the budget (accepted steps, wall-clock seconds; None: none)."""

    t_start: float = 0.0
    t_end: float = 1.0
    points: int = 101
    method: str = "DOP853"
    rtol: float = 1e-9
    atol: float = 1e-9
    stabilization: Baumgarte | None = Baumgarte(10.0, 10.0)
    projection: bool = False
    max_step: float | None = None
    max_steps: int | None = None
    max_wall_time: float | None = None

    @property
    def t_eval(self) -> np.ndarray:
        """The output times (s)."""
        return np.linspace(self.t_start, self.t_end, self.points)

    def options(self) -> tuple[Solver, SaveAt, Budget]:
        """These settings as :meth:`MechanismModel.simulate`'s option objects (the span,
        the stabilisation and the projection aside)."""
        return (Solver(method=self.method, rtol=self.rtol, atol=self.atol,
                       max_step=self.max_step), SaveAt(t=self.t_eval),
                Budget(max_steps=self.max_steps, max_wall_time=self.max_wall_time))


@dataclass(frozen=True)
class OutputSettings:
    """What a run writes besides the CSV and JSON files."""

    mat: str = "result.mat"
    diagram: str = "bond_graph.svg"
    plots: tuple[PlotSpec, ...] = ()


@dataclass
class ModelSpec:
    """Everything a model file says. ``notes``: what reading it has to say (a robot
    description's import warnings): not said as it is read; a run
    (:func:`elements.running.runner.run`) says them once as warnings, unless quiet."""

    mechanism: Mechanism
    q0: dict[str, Any] = field(default_factory=dict)
    qd0: dict[str, Any] = field(default_factory=dict)
    solver: SolverSettings = field(default_factory=SolverSettings)
    output: OutputSettings = field(default_factory=OutputSettings)
    source: str = "<python>"
    notes: tuple[str, ...] = ()


def _inertia(c: TableReader, spec: Any, where: str, mass: float) -> Inertia:
    if not isinstance(spec, dict) or not spec:
        c.fail(where, "inertia", "must be a table: { principal = [..] }, { about_center = "
                                 "[[..]..] }, { about_point = [[..]..], point = [..] } or "
                                 "{ solid_cube = side }")
    try:
        if "principal" in spec:
            c.only(spec, where, {"principal"})
            return Inertia.principal(*c.vector(spec["principal"], where, "inertia.principal"))
        if "about_center" in spec:
            c.only(spec, where, {"about_center"})
            return Inertia.about_center(c.matrix(spec["about_center"], where,
                                                 "inertia.about_center"))
        if "about_point" in spec:
            c.only(spec, where, {"about_point", "point"})
            if "point" not in spec:
                c.fail(where, "inertia.point", "missing (the point the inertia is about, body "
                                               "coordinates from the centre of mass)")
            return Inertia.about_point(c.matrix(spec["about_point"], where,
                                                "inertia.about_point"),
                                       c.vector(spec["point"], where, "inertia.point"), mass)
        if "solid_cube" in spec:
            c.only(spec, where, {"solid_cube"})
            return Inertia.solid_cube(mass, c.number(spec, where, "solid_cube", positive=True))
    except ModelFileError:
        raise
    except ModelError as exc:
        c.fail(where, "inertia", str(exc))
    c.fail(where, "inertia", f"unknown form {sorted(spec)}; valid: principal, about_center, "
                             f"about_point (+ point), solid_cube")


def _name(c: TableReader, table: dict, where: str, what: str) -> str:
    """A body's, joint's or load's ``name``: refused naming the table and the key."""
    name = c.string(table, where, "name")
    try:
        return check_name(name, what, ".")
    except ModelError as exc:
        c.fail(where, "name", str(exc))


def _point(c: TableReader, value: Any, where: str, key: str, body: RigidBody):
    if isinstance(value, str):
        if value not in body.points:
            c.fail(where, key, f"body '{body.name}' has no point {value!r}; its points: "
                               f"{', '.join(body.points) or 'none'}")
        return value
    return c.vector(value, where, key)


def loads_model(text: str, path: str = "<string>") -> ModelSpec:
    """Parse model-file text (see the module docstring).

    Raises
    ------
    ModelFileError
        Naming ``path``, the table and the key (for a problem the library finds in what
        the file describes, ``path`` and the library's message, which names the
        element)."""
    try:
        return _loads_model(text, path)
    except ModelFileError:
        raise
    except ModelError as exc:
        raise ModelFileError(f"{path}: {exc}") from None


def _loads_model(text: str, path: str) -> ModelSpec:
    c = TableReader(path)
    doc = read_toml(text, path, ModelFileError)
    if "study" in doc and "model" not in doc:
        c.fail("top level", "study", "this is a study file: run it with `bondgraph sweep "
               "FILE --out DIR` (a model file has [model], [[body]], [[joint]], ...)")
    c.only(doc, "top level", {"model", "robot", "body", "joint", "coupling", "load",
                              "initial", "solver", "output"})
    model = c.table(doc, "model", "model")
    c.only(model, "model", {"name", "gravity"})
    name = c.string(model, "model", "name", required=False,
                    default=os.path.splitext(os.path.basename(path))[0])
    if "robot" in doc:
        mech = robot_mechanism(c, c.table(doc, "robot", "robot"), path,
                               c.vector(model["gravity"], "model", "gravity")
                               if "gravity" in model else None)
    else:
        gravity = c.vector(model["gravity"], "model", "gravity") if "gravity" in model \
            else c.fail("model", "gravity", "missing; give [gx, gy, gz] in m/s^2 ([0, 0, 0] "
                                            "for none)")
        mech = Mechanism(name, gravity=gravity)
    names: set[str] = {"ground", *mech.bodies, *mech.joints}
    bodies = c.tables(doc, "body", "body", "body")
    joints = c.tables(doc, "joint", "joint", "joint")
    loads = c.tables(doc, "load", "load", "load")
    initial = c.table(doc, "initial", "initial")
    solver_table = c.table(doc, "solver", "solver")
    output_table = c.table(doc, "output", "output")
    for k, b in enumerate(bodies):
        where = f"body {k + 1}"
        c.only(b, where, {"name", "mass", "inertia", "points"})
        bname = _name(c, b, where, "body")
        where = f"body '{bname}'"
        if bname in names:
            c.fail(where, "name", f"duplicate name {bname!r}; names must be unique")
        names.add(bname)
        mass = c.number(b, where, "mass", positive=True)
        if "inertia" not in b:
            c.fail(where, "inertia", "missing (kg m^2 about the centre of mass)")
        inertia = _inertia(c, b["inertia"], where, mass)
        pts = b.get("points", {})
        if not isinstance(pts, dict):
            c.fail(where, "points", "must be a table of name = [x, y, z]")
        body = RigidBody(bname, mass, inertia,
                         {pn: c.vector(pv, where, f"points.{pn}") for pn, pv in pts.items()})
        mech.add_body(body)
    for k, j in enumerate(joints):
        where = f"joint {k + 1}"
        jname = _name(c, j, where, "joint")
        where = f"joint '{jname}'"
        if jname in names:
            c.fail(where, "name", f"duplicate name {jname!r}; names must be unique")
        names.add(jname)
        kinds = {n: k for n, k in joint_types().items() if k.in_files}
        if j.get("type") in joint_types() and j.get("type") not in kinds:
            c.fail(where, "type", f"a {j['type']} joint cannot be described in a model file "
                                  f"(build it in Python); kinds a file takes: "
                                  f"{', '.join(kinds)}")
        jtype = c.string(j, where, "type", choices=tuple(kinds))
        cls = joint_type(jtype)
        c.only(j, where, {"name", "type", "parent", "child", "parent_point", "child_point",
                          "axis", "rest_rotation", "spring", "damper", "actuator",
                          "rotor", "limit", "friction", *cls.options})
        ends = {}
        for role in ("parent", "child"):
            bn = c.string(j, where, role)
            if bn == "ground":
                ends[role] = mech.ground
            elif bn in mech.bodies:
                ends[role] = mech.bodies[bn]
            else:
                c.fail(where, role, f"names body {bn!r}, which the file does not define; "
                                    f"bodies: ground, {', '.join(mech.bodies)}")
        kw: dict[str, Any] = {}
        for role in ("parent", "child"):
            key = f"{role}_point"
            if key in j:
                kw[key] = _point(c, j[key], where, key, ends[role])
        if "axis" in j:
            kw["axis"] = c.vector(j["axis"], where, "axis")
        elif cls.needs_axis:
            c.fail(where, "axis", f"missing; a {jtype} joint needs [x, y, z] in parent "
                                  f"coordinates")
        if "rest_rotation" in j:
            kw["rest_rotation"] = c.matrix(j["rest_rotation"], where, "rest_rotation")
        for key, kind in cls.options.items():
            if key in j:
                kw[key] = {"vector": c.vector, "matrix": c.matrix}[kind](j[key], where, key) \
                    if kind in ("vector", "matrix") else \
                    c.boolean(j, where, key) if kind == "boolean" else c.number(j, where, key)
        try:
            joint = cls(jname, ends["parent"], ends["child"], **kw)
        except ModelFileError:
            raise
        except ModelError as exc:
            raise ModelFileError(f"{path}: [{where}]: {exc}") from None
        for kind in ("spring", "damper", "rotor", "actuator", "limit", "friction"):
            if kind not in j:
                continue
            if joint.n_free > 1:
                per = j[kind]
                if not isinstance(per, dict):
                    c.fail(where, kind, f"joint '{jname}' ({jtype}) has coordinates "
                                        f"{', '.join(joint.coordinate_names)}: give a table "
                                        f"by coordinate, e.g. {kind} = {{ "
                                        f"{joint.coordinate_names[0]} = ... }}")
                c.only(per, f"{where} {kind}", set(joint.coordinate_names))
                for coord in per:
                    _attachment(c, joint, kind, per, coord, f"{where} {kind}", coord)
            else:
                _attachment(c, joint, kind, j, kind, where, None)
        mech.add_joint(joint)
    for k, cp in enumerate(c.tables(doc, "coupling", "coupling", "coupling")):
        where = f"coupling {k + 1}"
        c.only(cp, where, {"name", "leader", "follower", "ratio", "offset"})
        cname = c.string(cp, where, "name")
        where = f"coupling '{cname}'"
        if cname in names:
            c.fail(where, "name", f"duplicate name {cname!r}; names must be unique")
        names.add(cname)
        ends = {}
        for role in ("leader", "follower"):
            jn = c.string(cp, where, role)
            if jn not in mech.joints:
                c.fail(where, role, f"names joint {jn!r}, which the model does not have; "
                                    f"joints: {', '.join(mech.joints) or 'none'}")
            ends[role] = mech.joints[jn]
        ratio = c.number(cp, where, "ratio")
        offset = c.number(cp, where, "offset", required=False, default=0.0)
        _attach(c, where, "leader", lambda: mech.add_coupling(JointCoupling(
            cname, ends["leader"], ends["follower"], ratio, offset)))
    for k, ld in enumerate(loads):
        where = f"load {k + 1}"
        c.only(ld, where, {"name", "type", "body", "point", "frame", "value"})
        lname = _name(c, ld, where, "load")
        where = f"load '{lname}'"
        if lname in names:
            c.fail(where, "name", f"duplicate name {lname!r}; names must be unique")
        names.add(lname)
        ltype = c.string(ld, where, "type", choices=("force", "moment"))
        bn = c.string(ld, where, "body")
        if bn not in mech.bodies:
            c.fail(where, "body", f"names body {bn!r}, which the file does not define; bodies: "
                                  f"{', '.join(mech.bodies)}")
        frame = c.string(ld, where, "frame", required=False, default="global",
                         choices=("global", "body"))
        if "value" not in ld:
            c.fail(where, "value", "missing: a 3-vector or a signal table")
        value = signal(ld["value"], dim=3, where=f"{where} value", ctx=c)
        if ltype == "force":
            point = _point(c, ld.get("point", [0.0, 0.0, 0.0]), where, "point",
                           mech.bodies[bn])
            mech.add_load(PointForce(lname, mech.bodies[bn], point, value, frame=frame))
        else:
            if "point" in ld:
                c.fail(where, "point", "a moment has no point of application (it acts on the "
                                       "body as a whole): remove 'point', or use type = "
                                       "\"force\"")
            mech.add_load(BodyMoment(lname, mech.bodies[bn], value, frame=frame))
    c.only(initial, "initial", {"q", "qd"})
    q0, qd0 = {}, {}
    for key, target in (("q", q0), ("qd", qd0)):
        table = initial.get(key, {})
        if not isinstance(table, dict):
            c.fail("initial", key, "must be a table of joint = value")
        for jn, v in table.items():
            target[jn] = _initial_value(c, mech, key, jn, v)
    solver = solver_settings(c, solver_table)
    output = _output(c, output_table)
    report = getattr(mech, "import_report", None)
    return ModelSpec(mech, q0, qd0, solver, output, source=path,
                     notes=tuple(report.said) if report is not None else ())


def _attachment(c: TableReader, joint: Any, kind: str, table: dict, key: str, where: str,
                coordinate: str | None) -> None:
    """Read ``table[key]`` as a ``kind`` attachment (spring, damper, rotor, actuator)
    and add it on ``coordinate`` of ``joint`` (None: its only one)."""
    v = table[key]
    if kind == "spring":
        if isinstance(v, dict):
            c.only(v, f"{where} {key}", {"stiffness", "rest"})
            item: Any = AxisSpring(
                c.number(v, f"{where} {key}", "stiffness", positive=True),
                c.number(v, f"{where} {key}", "rest", required=False, default=0.0))
        else:
            item = AxisSpring(c.number(table, where, key, positive=True))
        _attach(c, where, key, lambda: joint.add_spring(item, coordinate=coordinate))
    elif kind == "damper":
        if isinstance(v, dict):
            c.only(v, f"{where} {key}", {"coefficient"})
            coef = c.number(v, f"{where} {key}", "coefficient", nonneg=True)
        else:
            coef = c.number(table, where, key, nonneg=True)
        _attach(c, where, key, lambda: joint.add_damper(AxisDamper(coef),
                                                        coordinate=coordinate))
    elif kind == "limit":
        w = f"{where} {key}"
        if not isinstance(v, dict):
            c.fail(where, key, "must be a table: { lower = ..., upper = ..., restitution = "
                               "... } (impact stops) or { ..., stiffness = ..., damping = "
                               "... } (compliant stops)")
        c.only(v, w, {"lower", "upper", "restitution", "stiffness", "damping", "rest_speed"})
        kw = {k: c.number(v, w, k, required=False) for k in
              ("lower", "upper", "restitution", "stiffness")}
        for k, default in (("damping", 0.0), ("rest_speed", 1e-3)):
            kw[k] = c.number(v, w, k, required=False, default=default, nonneg=True)
        _attach(c, where, key, lambda: joint.add_limit(**kw, coordinate=coordinate))
    elif kind == "friction":
        w = f"{where} {key}"
        load: dict[str, float | None] = {}
        if isinstance(v, dict):
            c.only(v, w, {"coulomb", "static", "viscous", "mu", "mu_static", "radius"})
            # mu (and mu_static): a part following the transverse reaction (radius, m,
            # on a turning coordinate); the constant part may then be 0 (its default)
            load = {k: c.number(v, w, k, required=False, nonneg=True)
                    for k in ("mu", "mu_static")}
            load["radius"] = c.number(v, w, "radius", required=False, positive=True)
            loaded = any(load[k] for k in ("mu", "mu_static"))
            fc = c.number(v, w, "coulomb", default=0.0 if loaded else None,
                          positive=not loaded, nonneg=loaded)
            fs = c.number(v, w, "static", required=False, positive=not loaded,
                          nonneg=loaded)
            visc = c.number(v, w, "viscous", required=False, default=0.0, nonneg=True)
            load["mu"] = load["mu"] or 0.0
        else:
            fc, fs, visc = c.number(table, where, key, positive=True), None, 0.0
        _attach(c, where, key, lambda: joint.add_friction(fc, static=fs, viscous=visc,
                                                          coordinate=coordinate, **load))
    elif kind == "rotor":
        inertia = c.number(table, where, key, positive=True)
        _attach(c, where, key, lambda: joint.add_rotor(AxisRotor(inertia),
                                                       coordinate=coordinate))
    else:
        eff = signal(v, dim=1, where=f"{where} {key}", ctx=c)
        _attach(c, where, key, lambda: joint.add_actuator(AxisActuator(eff),
                                                          coordinate=coordinate))


def _initial_value(c: TableReader, mech: Mechanism, key: str, jn: str, v: Any) -> Any:
    """A joint's initial coordinate (``key`` "q") or rate ("qd") from ``[initial]``,
    named in messages by its full key (``q.J1``)."""
    full = f"{key}.{jn}"
    if jn not in mech.joints:
        c.fail("initial", full, f"no joint {jn!r}; joints: {', '.join(mech.joints)}")
    joint = mech.joints[jn]
    if joint.n_free > 1:
        try:
            return joint.initial_values(v if key == "q" else None,
                                        v if key == "qd" else None)[key == "qd"]
        except ModelError as exc:
            c.fail("initial", full, str(exc))
    if joint.n_free:
        unit = joint.coordinate_unit
        if isinstance(v, list):
            c.fail("initial", full, f"joint '{jn}' ({joint.type_name}) takes one number "
                                    f"({unit}{'/s' if key == 'qd' else ''}), got {v!r}")
        return c.number({full: v}, "initial", full)
    if not joint.free_rotation:            # (the contract: a rotation without ports)
        c.fail("initial", full, f"joint '{jn}' ({joint.type_name}) has no coordinate or rate "
                                f"to set")
    if joint.type_name == "free":          # (ports = false: the free body's model)
        c.fail("initial", full, f"free joint '{jn}' without ports has no key for its pose "
                                f"or twist (its body starts at rest where it is drawn); "
                                f"valid: ports = true, then q.{jn} and qd.{jn} take its "
                                f"coordinates x, y, z and rotation, and their rates")
    if key == "qd":
        if not isinstance(v, list) or len(v) != 3:
            c.fail("initial", full, f"a spherical joint's rate is its angular velocity, 3 "
                                    f"numbers (rad/s, parent coordinates), got {v!r}")
        return c.vector(v, "initial", full)
    # a spherical joint's coordinate: the child's rotation relative to the parent (after
    # rest_rotation), given as a rotation vector or a unit quaternion
    if not isinstance(v, list) or len(v) not in (3, 4):
        c.fail("initial", full, f"a spherical joint's orientation is a rotation vector "
                                f"[rx, ry, rz] (axis times angle, rad, parent coordinates) or "
                                f"a unit quaternion [w, x, y, z], got {v!r}")
    try:
        return as_rotation(c.vector(v, "initial", full, len(v)))
    except ValueError as exc:
        c.fail("initial", full, f"spherical joint '{jn}': {exc}")


def _attach(c, where, key, fn):
    try:
        fn()
    except ModelFileError:
        raise
    except ModelError as exc:
        c.fail(where, key, str(exc))


def solver_settings(c: TableReader, s: dict) -> SolverSettings:
    """The ``[solver]`` table ``s`` (already merged with any defaults) as settings,
    checked."""
    w = "solver"
    c.only(s, w, {"t_start", "t_end", "points", "method", "rtol", "atol", "stabilization",
                  "projection", "max_step", "max_steps", "max_wall_time"})
    t0 = c.number(s, w, "t_start", required=False, default=0.0)
    t1 = c.number(s, w, "t_end")
    if t1 <= t0:
        c.fail(w, "t_end", f"must be greater than t_start ({t0}), got {t1}")
    pts = c.integer(s, w, "points", 101, 2, MAX_POINTS)     # (the grid is kept in memory)
    method = c.string(s, w, "method", required=False, default="DOP853",
                      choices=tuple(METHODS))
    rtol = c.number(s, w, "rtol", required=False, default=1e-9, positive=True)
    atol = c.number(s, w, "atol", required=False, default=1e-9, positive=True)
    stab: Baumgarte | None = Baumgarte(10.0, 10.0)
    if "stabilization" in s:
        st = s["stabilization"]
        if st == "none":
            stab = None
        elif isinstance(st, dict):
            c.only(st, f"{w} stabilization", {"alpha", "beta"})
            stab = Baumgarte(c.number(st, f"{w} stabilization", "alpha", nonneg=True),
                             c.number(st, f"{w} stabilization", "beta", nonneg=True))
        else:
            c.fail(w, "stabilization", f"must be \"none\" or {{ alpha = .., beta = .. }}, got "
                                       f"{st!r}")
    proj = c.boolean(s, w, "projection", False)
    h, wall = (c.number(s, w, k, required=False, positive=True)
               for k in ("max_step", "max_wall_time"))
    return SolverSettings(t0, t1, pts, method, rtol, atol, stab, proj, h,
                          c.integer(s, w, "max_steps", None, 1, required=False), wall)


PLOT_SUFFIXES = (".png", ".svg", ".pdf")
"""What a plot file may be (matplotlib chooses the format by it)."""
DIAGRAM_SUFFIXES = (".svg", ".png", ".pdf")
"""What the bond graph diagram may be (Graphviz's formats; its DOT text goes beside)."""


def check_output(output: "OutputSettings", animation: str | None = None) -> None:
    """Check the file names of ``output`` (and the animation page's): plain names that
    stay inside the run's directory, of the right kind, distinct, and not one of the
    run's own files (:data:`elements.results.RUN_FILES`).

    Raises
    ------
    ModelError
        Naming the setting (``output.mat``, ``output.diagram``, ``output.plot N file``)
        and what is valid.
    """
    for where, key, name, suffixes in _output_names(output, animation):
        try:
            output_name(name, suffixes, _reserved(key))
        except ValueError as exc:
            raise ModelError(f"{where}.{key}: {exc}") from None
    clash = _clash(_output_names(output, animation))
    if clash:
        raise ModelError(f"{clash[0]}.{clash[1]}: {clash[2]}")


def _reserved(key: str) -> tuple[str, ...]:
    from elements.results import RUN_FILES
    return tuple(f for f in RUN_FILES if not (key == "animation" and f == "animation.html"))


def _output_names(output, animation=None):
    """(table, key, file name, valid suffixes) of every output file."""
    yield "output", "mat", output.mat, (".mat",)
    yield "output", "diagram", output.diagram, DIAGRAM_SUFFIXES
    for k, p in enumerate(output.plots):
        yield f"output.plot {k + 1}", "file", p.file, PLOT_SUFFIXES
    if animation:
        yield "run", "animation", animation, (".html",)


def _clash(named) -> tuple[str, str, str] | None:
    """(table, key, message) of the first output whose file another one takes too, or
    None."""
    seen: dict[str, str] = {}
    for where, key, name, _ in named:
        # (the diagram's DOT text takes its stem's .dot too)
        for n in (name.lower(),) + ((os.path.splitext(name)[0].lower() + ".dot",)
                                   if key == "diagram" else ()):
            if n in seen:
                return where, key, (f"{name!r} is also the file of {seen[n]}; give each "
                                    f"output its own name")
            seen[n] = f"[{where}] '{key}'"
    return None


def _output(c: TableReader, o: dict) -> OutputSettings:
    w = "output"
    c.only(o, w, {"mat", "diagram", "plot"})
    mat = c.string(o, w, "mat", required=False, default="result.mat")
    diagram = c.string(o, w, "diagram", required=False, default="bond_graph.svg")
    for key, name, suffixes in (("mat", mat, (".mat",)), ("diagram", diagram,
                                                           DIAGRAM_SUFFIXES)):
        try:
            output_name(name, suffixes, _reserved(key))
        except ValueError as exc:
            c.fail(w, key, str(exc))
    plots = []
    for k, p in enumerate(c.tables(o, "plot", "output.plot", "plot")):
        pw = f"output.plot {k + 1}"
        c.only(p, pw, {"file", "y", "title", "ylabel", "norm"})
        ys = p.get("y")
        if not isinstance(ys, list) or not ys or not all(isinstance(v, str) for v in ys):
            c.fail(pw, "y", "must be a list of column names (e.g. [\"m2.x\"])")
        norm = c.boolean(p, pw, "norm", False)
        file = c.string(p, pw, "file")
        try:
            output_name(file, PLOT_SUFFIXES, _reserved("plot"))
        except ValueError as exc:
            c.fail(pw, "file", str(exc))
        plots.append(PlotSpec(file, tuple(ys),
                              c.string(p, pw, "title", required=False, default=""),
                              c.string(p, pw, "ylabel", required=False, default=""), norm))
    out = OutputSettings(mat, diagram, tuple(plots))
    clash = _clash(_output_names(out))
    if clash:
        c.fail(*clash)
    return out


ROBOT_FILE_SPAN = 1.0
"""The span (s) of a run of a robot description given where a model file is expected."""


def load_model(path: str) -> ModelSpec:
    """Read a model file, or a robot description (URDF or MJCF: a file whose text starts
    with ``<``) read as the model file ``[robot] file = "<that file>"``, ``[solver]
    t_end = ROBOT_FILE_SPAN``: the robot released at rest from its file's pose, with the
    default solver settings and outputs.

    Raises
    ------
    ModelFileError
        Naming the file, the table and the key, and saying what is valid.
    """
    text = read_text(path, "model file", ModelFileError)
    if text.removeprefix("\ufeff").lstrip().startswith("<"):
        text = (f"[robot]\nfile = {json.dumps(os.path.basename(path))}\n"
                f"[solver]\nt_end = {ROBOT_FILE_SPAN!r}\n")
    return loads_model(text, path)
