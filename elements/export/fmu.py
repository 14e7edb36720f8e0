"""A mechanism as an FMI 2.0 FMU, by the names of its joints and bodies:
:func:`export_mechanism_fmu`.

The core writes the FMU (:func:`bondgraph.fmu.export_fmu`: the mechanism's compiled
evaluation in C); this module names what a tool sees:

- inputs: joint ports (their actuator's effort; a port without an actuator gets a drive,
  an effort source ``<port>.drive`` that starts at zero) or any source of the graph;
- outputs: ``<port>.q``, ``.qd`` (coordinate and rate), ``.spring``, ``.damper``,
  ``.actuator`` (efforts along the axis on the child), ``<joint>.Fx``, ``.Fy``, ``.Fz``
  (the constraint reaction of the parent on the child, global axes), ``<body>.x``..
  ``.z``, ``.qw``..``.qz`` (its centre and orientation), and any output the core names
  (states, ``<bond>.e``/``.f``, ``Se*_...`` constraint efforts);
- start values from joint coordinates and rates (:meth:`MechanismModel.initial_state`),
  nominal magnitudes from :meth:`MechanismModel.state_atol` (a tool's absolute tolerance
  is its relative tolerance times the nominal), units from the joints' axes.

Joint stops and friction switch the model at events (impacts, sticking); the exported
FMU has no events, so a mechanism with them is refused, naming the joint. So is a joint
whose kernels have no compiled form, which the FMU's C ports: the chain joint (its terms
come from an inverse-kinematics iteration warm-started from its last solution, numpy
only). Every other kind exports: revolute, prismatic, cylindrical, planar, spherical,
fixed, free, universal, gimbal (at gimbal lock the FMU's evaluation fails with
``fmi2Error``, as a run in Python stops with ``GimbalLockError``) and screw joints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from bondgraph import Baumgarte, ModelError, Se
from bondgraph.errors import did_you_mean
from bondgraph.fmu import ExportedFMU, export_fmu

from elements.kernels.blocks import Junction, term_bond
from elements.mechanism_model import MechanismModel

__all__ = ["export_mechanism_fmu"]

_BODY = {**{a: ("r", k) for k, a in enumerate("xyz")},
         **{f"q{a}": ("q", k) for k, a in enumerate("wxyz")}}
_PORT = ("q", "qd", "spring", "damper", "actuator")


def _refuse_switched(mm: MechanismModel) -> None:
    for j in mm.mechanism.joints.values():
        for ax in j.axes:
            if ax.switched:
                what = " and ".join(w for w, on in (("stops", ax.limit is not None),
                                                    ("friction", ax.friction is not None))
                                    if on)
                raise ModelError(
                    f"joint '{j.name}' has {what} on coordinate '{ax.port}': a run switches "
                    f"the model there at events (impacts, sticking), which the exported "
                    f"FMU does not carry (it has no event indicators); remove them "
                    f"(JointAxis.limit, .friction) to export, or model a stop with a spring")


def _refuse_unsupported(mm: MechanismModel) -> None:
    """A ModelError for what the FMU's C cannot carry yet, named: collision shapes
    (contact), and a mechanism without any joint constraint (free bodies alone)."""
    mech = mm.mechanism
    if mech.shapes:
        raise ModelError(
            f"mechanism '{mech.name}' has collision shapes ({', '.join(list(mech.shapes)[:6])}"
            f"{', ...' if len(mech.shapes) > 6 else ''}): contact is not exported to an FMU "
            f"(its detection has no C form yet); export a copy without shapes, or "
            f"simulate it here")
    if mm.model.n_u2 == 0:
        raise ModelError(
            f"mechanism '{mech.name}' has no joint constraint (free bodies only): the "
            f"FMU's C evaluates a mechanism through its constraint solve, which needs at "
            f"least one joint other than a free one; not exported yet")


def _refuse_uncompiled(mm: MechanismModel) -> None:
    """A ModelError naming the first joint whose terms or Phi have no compiled kernel
    (:mod:`elements.kernels.compiled`): the FMU's C runs the compiled program's groups only."""
    from elements.kernels.blocks import Kernel, Sandwich, _CompiledSandwiches, _compiles
    for j in mm.mechanism.joints.values():
        for blk in j.constraint_blocks() + j.axis_blocks():
            kernels = [(t.kernel, True) for t in blk.terms if t.kernel is not None]
            if isinstance(blk.phi, Kernel):
                kernels.append((blk.phi, False))
            for k, with_rate in kernels:
                if type(k) is Sandwich:
                    ok = _CompiledSandwiches.takes(k)
                else:
                    ok = _compiles(k, False) and (not with_rate or _compiles(k, True))
                if not ok:
                    raise ModelError(
                        f"joint '{j.name}' ({j.type_name}): its {type(k).__name__} terms "
                        f"have no compiled kernel (elements/kernels/compiled.py), which the "
                        f"FMU's C runs (a chain joint's terms come from an inverse-"
                        f"kinematics iteration warm-started from its last solution, in "
                        f"numpy only); joints of kinds revolute, prismatic, cylindrical, "
                        f"planar, spherical, fixed, free, universal, gimbal and screw "
                        f"export (a chain whose members a universal, gimbal or planar "
                        f"joint describes exports as that kind)")


def _output(mm: MechanismModel, name: str) -> tuple[Any, str]:
    """(the core's quantity or linear combination, unit) of output ``name``."""
    mech = mm.mechanism
    m = mm.model
    ports = {ax.port: ax for j in mech.joints.values() for ax in j.axes}
    stem, _, what = name.rpartition(".")
    if stem in ports and what in _PORT:
        ax = ports[stem]
        u = ax.units()
        if what == "q":
            return ax.state, u["q"]
        if what == "qd":
            return f"{ax.bond}.f", u["qd"]
        # efforts on the child along the axis: springs and dampers hang off the axis
        # junction (their bonds point away from it), actuators feed it
        sign = 1.0 if what == "actuator" else -1.0
        terms = [(f"{n}.e", sign) for n in ax.attachments(what)
                 if n in m.graph.elements]
        if not terms:
            raise ModelError(f"output {name!r}: coordinate '{stem}' has no {what}")
        return terms, u["effort"]
    if stem in mech.joints and what in ("Fx", "Fy", "Fz"):
        j = mech.joint(stem)
        k = "xyz".index(what[1])
        terms = []
        for blk in mm.blocks[stem]:
            for t in blk.terms:
                if t.owner == j.child.name and t.kind is Junction.V:
                    bond, sign = term_bond(blk, t)
                    terms.append((f"{bond}.e[{k}]", sign))
        if not terms:
            raise ModelError(f"output {name!r}: joint '{stem}' transmits no force")
        return terms, "N"
    if stem in mech.bodies and not mech.bodies[stem].is_ground and what in _BODY:
        attr, k = _BODY[what]
        b = mech.bodies[stem]
        return f"{getattr(b, attr)}[{k}]", "m" if attr == "r" else ""
    if "." in name and stem in mech.joints | mech.bodies | ports and what not in ("e", "f"):
        bodies = [b for b in mech.bodies if not mech.bodies[b].is_ground]
        raise ModelError(
            f"no output {name!r} in mechanism '{mech.name}'; outputs: '<port>.q', '.qd', "
            f"'.spring', '.damper', '.actuator' for ports {', '.join(ports) or 'none'}; "
            f"'<joint>.Fx', '.Fy', '.Fz' for joints {', '.join(mech.joints)}; '<body>.x', "
            f"'.y', '.z', '.qw'..'.qz' for bodies {', '.join(bodies)}; or the graph's "
            f"states, '<bond>.e'/'.f' and 'Se*_...' efforts")
    return name, ""


def export_mechanism_fmu(mm: MechanismModel, path: str | os.PathLike, *,
                         q: Mapping[str, Any] | None = None,
                         qd: Mapping[str, Any] | None = None, x0: Any = None,
                         free: Mapping[str, Mapping[str, Any]] | None = None,
                         guess: Mapping[str, float] | None = None,
                         states: Mapping[str, Any] | None = None,
                         inputs: Sequence[str] = (), outputs: Sequence[str] = (),
                         stabilization: Baumgarte | None | str = "auto",
                         **options: Any) -> ExportedFMU:
    """Write the mechanism model ``mm`` as an FMI 2.0 FMU at ``path`` (see the module
    docstring for the names).

    Parameters
    ----------
    mm : MechanismModel
    path : str
        The ``.fmu`` file.
    q, qd, free, guess, states :
        The initial state, as :meth:`MechanismModel.initial_state` takes it (joint
        coordinates and rates by joint name, rad or m and rad/s or m/s); or ``x0``, a
        full state vector.
    inputs : sequence of str
        Joint ports (the effort of their actuator, N m or N on the child along the
        axis) or sources of the graph.
    outputs : sequence of str
        See the module docstring.
    stabilization : Baumgarte, None or "auto"
        As :meth:`MechanismModel.simulate` takes it ("auto": alpha = beta = 10/s).
    **options
        Passed to :func:`bondgraph.fmu.export_fmu` (``name``, ``description``,
        ``start_time``, ``stop_time``, ``tolerance``, ``cs_solver``, ``cs_step``,
        ``compile``, ``cc``).

    Returns
    -------
    ExportedFMU

    Raises
    ------
    ModelError
        For collision shapes (contact), a mechanism of free bodies alone, joints with
        stops or friction, an unknown input or output (naming the valid ones), or what
        the core cannot write in C (named).
    """
    if not isinstance(mm, MechanismModel):
        raise ModelError(f"export_mechanism_fmu expects a MechanismModel (Mechanism."
                         f"assemble()), got {type(mm).__name__}")
    _refuse_unsupported(mm)
    _refuse_switched(mm)
    _refuse_uncompiled(mm)
    for key in ("x0", "inputs", "outputs", "stabilization", "units", "nominals"):
        if key in options:
            raise ModelError(f"export_mechanism_fmu: {key!r} is given twice")
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(outputs, str):
        outputs = [outputs]
    mech = mm.mechanism
    ports = {ax.port: ax for j in mech.joints.values() for ax in j.axes}
    drives, sources, units = {}, [], {}
    for name in inputs:
        ax = ports.get(name)
        if ax is None:
            if name not in mm.model.sources:
                raise ModelError(
                    f"no input {name!r}{did_you_mean(name, list(ports) + list(mm.model.sources))}"
                    f"; inputs: joint ports ({', '.join(ports) or 'none'}) or the graph's "
                    f"sources ({', '.join(mm.model.sources)})")
            sources.append(name)
            continue
        acts = ax.attachments("actuator")
        if len(acts) > 1:
            raise ModelError(f"input {name!r}: port '{name}' has {len(acts)} actuators "
                             f"({', '.join(acts)}); name one of them")
        src = acts[0] if acts else f"{name}.drive"
        if not acts:
            drives[name] = Se(src, 0.0)
        sources.append(src)
        units[src] = ax.units()["effort"]
    dm = mm.with_drives(drives) if drives else mm
    if x0 is None:
        x0 = dm.initial_state(q, qd, free=free, guess=guess, states=states)
    elif q or qd or free or guess or states:
        raise ModelError("give either x0 or the joint coordinates and rates (q, qd, free, "
                         "guess, states), not both")
    out = {}
    for name in outputs:
        what, unit = _output(dm, name)
        out[name] = what
        if unit:
            units[name] = unit
    for ax in ports.values():
        units[ax.state] = ax.units()["q"]
    stab = Baumgarte(10.0, 10.0) if stabilization == "auto" else stabilization
    options.setdefault("name", mech.name)
    options.setdefault("description",
                       f"mechanism '{mech.name}': {len(mech.bodies)} bodies, "
                       f"{len(mech.joints)} joints, exported by vector-bondgraph")
    return export_fmu(dm.model, path, x0=x0, inputs=sources, outputs=out, stabilization=stab,
                      units=units, nominals=dm.state_atol(1.0), **options)
