"""The model a study runs: built once per structure, run with parameter values as data.

- :class:`ParameterInfo`: a parameter a run can set (name, unit, meaning, base value,
  whether it changes the structure).
- :class:`ParametricModel`: a model (a model file, a :class:`ModelSpec`, a
  :class:`~elements.Mechanism` or a factory of either) built, causality-assigned and
  reduced once per structure; a run hands the values of named parameters to it.

How a value reaches a built model. The mechanism's model holds every physical parameter
as data (:attr:`MechanismModel.parameters`: ``m2.mass``, ``J3.spring.k``,
``gravity.z``, ``J1.actuator``, ``push.x``, ...). A run asks the built model for the
same model with its values (:meth:`MechanismModel.with_parameters`): the state-space
model is assembled again from the same causal graph with the new values, and nothing
is copied or changed; the initial coordinates (``J2.q0``, ``J1.qd0``) go to the initial
state. A parameter that cannot be set by value changes the structure (a spring on a
joint that has none, a constant in place of a signal, a factory argument): the model is
built once more for it, and the study says so.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import Baumgarte, ModelError, StateFunction, TimeFunction

from elements.parts.forces import Load
from elements.build_index import Kind
from elements.joints.axis import attachment_of
from elements.joints.kinds import AxisActuator, AxisDamper, AxisSpring, Joint
from elements.mechanism import Mechanism, MechanismModel
from elements.files.tables import ModelFileError, TableReader, read_text
from elements.files.modelfile import ModelSpec, SolverSettings, loads_model, solver_settings

__all__ = ["ParameterInfo", "ParametricModel", "spec_from"]


@dataclass(frozen=True)
class ParameterInfo:
    """A parameter that a run can change.

    Attributes
    ----------
    name : str
        ``"<body>.mass"``, ``"<joint>.spring.k"``, ``"gravity.z"``, ``"<joint>.q0"``, ...
    unit : str
        SI unit of the value.
    meaning : str
    value : float or None
        Its value in the base model (None when the model does not have the element yet,
        or when it is a signal rather than a number).
    structural : bool
        True when setting it changes the structure (the model is built once more with
        it).
    """

    name: str
    unit: str
    meaning: str
    value: float | None
    structural: bool = False


# -- what a run can set -----------------------------------------------------------------------

def _initial_conditions(spec: ModelSpec) -> dict[str, ParameterInfo]:
    """The joints' initial coordinates and rates (``J2.q0``, ``J2.qd0``)."""
    out = {}
    for j in spec.mechanism.joints.values():
        for ax in j.axes:
            u = ax.units()
            out[f"{ax.port}.q0"] = ParameterInfo(
                f"{ax.port}.q0", u["q"], "initial coordinate",
                _as_float(_pick(spec.q0.get(j.name, 0.0), j, ax)))
            out[f"{ax.port}.qd0"] = ParameterInfo(
                f"{ax.port}.qd0", u["qd"], "initial rate",
                _as_float(_pick(spec.qd0.get(j.name, 0.0), j, ax)))
    return out


def _pick(value: Any, joint: Joint, axis) -> Any:
    """One coordinate's part of a joint's initial value (the value itself for a
    one-coordinate joint)."""
    if joint.n_free == 1:
        return value
    if isinstance(value, Mapping):
        return value.get(axis.name, 0.0)
    try:
        return np.asarray(value, dtype=float).reshape(-1)[axis.index]
    except (TypeError, ValueError, IndexError):
        return None


def _structural(spec: ModelSpec) -> dict[str, ParameterInfo]:
    """What a run can set only by changing the structure: attachments a joint lacks,
    constants in place of a joint's or a load's signal."""
    out = {}
    for j in spec.mechanism.joints.values():
        for ax in j.axes:
            u = ax.units()
            for kind, key, unit in (("spring", "k", u["k"]), ("damper", "c", u["c"]),
                                    ("actuator", None, u["effort"])):
                items = ax.items(kind)
                name = f"{ax.port}.{kind}" + ("" if key is None else f".{key}")
                if not items:
                    out[name] = ParameterInfo(
                        name, unit, f"{kind} on the axis; the joint has no {kind}, so the model "
                        f"is built once more with one", None, True)
            for name, a in zip(ax.attachments("actuator"), ax.actuators):
                if isinstance(a.effort, (TimeFunction, StateFunction)):
                    out[name] = ParameterInfo(name, u["effort"], "actuator effort on the axis "
                                              "(a signal in the model: a value replaces it by "
                                              "a constant)", None, True)
    for ld in spec.mechanism.loads.values():
        if isinstance(ld.value, (TimeFunction, StateFunction)):
            for ax in "xyz":
                out[f"{ld.name}.{ax}"] = ParameterInfo(
                    f"{ld.name}.{ax}", ld.unit, f"load {ax} component ({ld.frame} frame); "
                    f"the load is a signal: a value replaces it by a constant vector",
                    None, True)
    return out


def _as_float(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _change_structure(spec: ModelSpec, name: str) -> None:
    """Make ``spec``'s (new, private) mechanism take parameter ``name`` by value: add
    the attachment it names, or replace the signal by a constant placeholder (each run
    sets the value)."""
    mech = spec.mechanism
    owner, _, rest = name.partition(".")
    if owner in mech.loads:
        ld: Load = mech.loads[owner]
        ld.value = _zeros3()
        return
    j, ax, rest = _port_of(mech, name)
    kind, i = attachment_of(rest.split(".")[0]) or (None, 0)
    items = ax.items(kind)
    if not items:
        c = ax.name if j.n_free > 1 else None
        {"spring": lambda: j.add_spring(AxisSpring(1.0), coordinate=c),
         "damper": lambda: j.add_damper(AxisDamper(0.0), coordinate=c),
         "actuator": lambda: j.add_actuator(AxisActuator(0.0), coordinate=c)}[kind]()
        return
    items[i] = AxisActuator(0.0)


def _port_of(mech: Mechanism, name: str):
    """(joint, port, the rest of the name) of a joint parameter's name: ``J3.spring.k``
    (a one-coordinate joint) or ``C1.slide.spring.k`` (a joint with several)."""
    owner, _, rest = name.partition(".")
    j = mech.joints[owner]
    if j.n_free > 1:
        coord, _, rest = rest.partition(".")
        return j, j.axis(coord), rest
    return j, j.axis(), rest


def _zeros3():
    import numpy as np
    return np.zeros(3)


def spec_from(obj: Any, path: str = "<python>") -> ModelSpec:
    """A :class:`ModelSpec` of ``obj`` (a ModelSpec, or a Mechanism with default
    settings)."""
    if isinstance(obj, ModelSpec):
        return obj
    if isinstance(obj, Mechanism):
        return ModelSpec(obj, source=path)
    raise ModelError(f"a study's model must give a ModelSpec or a Mechanism, got "
                     f"{type(obj).__name__}")


# -- the model ------------------------------------------------------------------------------

class ParametricModel:
    """A model built once per structure and run with new values of named parameters.

    Parameters
    ----------
    model : str, os.PathLike, ModelSpec, Mechanism or callable
        A TOML model file (its text is kept, so workers need no access to the file), a
        :class:`~elements.files.modelfile.ModelSpec` or :class:`~elements.Mechanism`, or a
        factory returning either (e.g. :func:`elements.models.three_body_spec`). Keyword
        arguments of a factory can be study parameters too (``"K"``): they change the
        structure, so each distinct value builds the model anew (cached).
    solver : mapping, optional
        Overrides of the model's solver settings (keys of ``[solver]`` in a model file:
        ``t_end`` (s), ``points``, ``rtol``, ...).

    Examples
    --------
    >>> from elements import models
    >>> pm = ParametricModel(models.three_body_spec, solver={"t_end": 0.05, "points": 3})
    >>> pm.parameters()["J3.spring.k"].value, pm.parameters()["J3.spring.k"].unit
    (500.0, 'N/m')
    >>> mm, q0, qd0 = pm.instantiate({"J3.spring.k": 800.0, "m2.mass": 1.5})
    >>> mm.parameters["J3.spring.k"], mm.mass("m2")
    (800.0, 1.5)
    """

    def __init__(self, model: Any, *, solver: Mapping[str, Any] | None = None):
        self._factory: Callable[..., Any] | None = None
        self._text: str | None = None
        self._spec: ModelSpec | None = None
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            self._text = read_text(path, "model file", ModelFileError)
            self.source = path
        elif isinstance(model, (ModelSpec, Mechanism)):
            self._spec = spec_from(model)
            self.source = f"<{type(model).__name__} {self._spec.mechanism.name}>"
        elif callable(model):
            self._factory = model
            self.source = f"{getattr(model, '__module__', '?')}." \
                          f"{getattr(model, '__qualname__', repr(model))}"
        else:
            raise ModelError(f"a study's model must be a model file, a ModelSpec, a "
                             f"Mechanism or a factory, got {type(model).__name__}")
        self.solver_overrides = dict(solver or {})
        self.build_parameters: tuple[str, ...] = self._factory_arguments()
        self.structure: tuple[str, ...] = ()
        self.notes: list[str] = []
        self._templates: dict[tuple, tuple[ModelSpec, MechanismModel]] = {}
        self._lock = threading.Lock()
        self.base = self._fresh_spec({})
        self.solver = self._solver_settings(self.base.solver)

    # -- pickling (cloudpickle ships it to Dask workers) ---------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- structure ---------------------------------------------------------------------
    def _factory_arguments(self) -> tuple[str, ...]:
        if self._factory is None:
            return ()
        try:
            sig = inspect.signature(self._factory)
        except (TypeError, ValueError):
            return ()
        return tuple(n for n, p in sig.parameters.items()
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))

    def _fresh_spec(self, build: Mapping[str, float]) -> ModelSpec:
        """A new ModelSpec (new mechanism objects) for the build parameters ``build``."""
        if self._text is not None:
            return loads_model(self._text, self.source)
        if self._spec is not None:
            import copy
            return copy.deepcopy(self._spec)       # (the user's objects stay theirs)
        try:
            return spec_from(self._factory(**dict(build)), self.source)
        except ModelError:
            raise
        except TypeError as exc:
            raise ModelError(f"model factory {self.source}: {exc}") from None

    def _solver_settings(self, base: SolverSettings) -> SolverSettings:
        if not self.solver_overrides:
            return base
        merged: dict[str, Any] = {"t_start": base.t_start, "t_end": base.t_end,
                                  "points": base.points, "method": base.method,
                                  "rtol": base.rtol, "atol": base.atol,
                                  "projection": base.projection}
        merged.update({k: getattr(base, k) for k in ("max_step", "max_steps",
                                                     "max_wall_time")
                       if getattr(base, k) is not None})
        if base.stabilization is None:
            merged["stabilization"] = "none"
        else:
            merged["stabilization"] = {"alpha": base.stabilization.alpha,
                                       "beta": base.stabilization.beta}
        over = dict(self.solver_overrides)
        if isinstance(over.get("stabilization"), Baumgarte):
            st = over["stabilization"]
            over["stabilization"] = {"alpha": st.alpha, "beta": st.beta}
        elif "stabilization" in over and over["stabilization"] is None:
            over["stabilization"] = "none"
        merged.update(over)
        return solver_settings(TableReader(self.source), merged)

    def parameters(self) -> dict[str, ParameterInfo]:
        """Every parameter a run can set, by name (see :class:`ParameterInfo`): the
        model's own (its :attr:`~elements.MechanismModel.parameters`), the joints'
        initial coordinates and rates, those that change the structure, and the
        factory's keyword arguments (``structural``: each value rebuilds the model)."""
        _, mm = self._template({}, ())
        out = {p.name: ParameterInfo(p.name, p.unit, p.meaning, p.value)
               for p in mm.parameters.declarations()}
        out.update(_initial_conditions(self.base))
        out.update(_structural(self.base))
        for n in self.build_parameters:
            out[n] = ParameterInfo(n, "", f"argument of the factory {self.source}; each "
                                   "distinct value builds the model anew", None, True)
        return out

    def prepare(self, names: Iterable[str]) -> list[str]:
        """Check that every name is a parameter and decide the structure: what cannot be
        set by value (an attachment a joint lacks, a constant in place of a signal) is
        added once, factory arguments rebuild per distinct value. Returns the notes
        that say so.

        Raises
        ------
        ModelError
            For a name that is no parameter, listing the valid ones.
        """
        reg = self.parameters()
        names = list(names)
        unknown = [n for n in names if n not in reg]
        if unknown:
            raise ModelError(f"no parameter(s) {', '.join(map(repr, unknown))} in model "
                             f"{self.source}; valid: {', '.join(reg)}")
        notes = []
        changes = tuple(sorted(n for n in names if reg[n].structural
                               and n not in self.build_parameters))
        for n in changes:
            owner = n.split(".")[0]
            what = reg[n].meaning.split(";")[0]
            notes.append(f"{n}: {what} of {owner} cannot be set by value in the model as "
                         f"it is, which changes the structure: the model is rebuilt once "
                         f"with it, and each run sets its value")
        for n in names:
            if n in self.build_parameters:
                notes.append(f"{n}: an argument of the factory {self.source}, not a value "
                             f"of the built model: each distinct value rebuilds the model "
                             f"(once per worker and structure)")
        self.structure = changes
        self.notes = notes
        return notes

    def _template(self, build: Mapping[str, float], structure: tuple[str, ...] | None = None
                  ) -> tuple[ModelSpec, MechanismModel]:
        """The spec and built model of the structure: factory arguments ``build`` and the
        structural changes (default: those :meth:`prepare` decided). Built once each."""
        structure = self.structure if structure is None else structure
        key = (tuple(sorted((k, float(v)) for k, v in build.items())), structure)
        with self._lock:
            hit = self._templates.get(key)
        if hit is not None:
            return hit
        spec = self._fresh_spec(build)
        for name in structure:
            _change_structure(spec, name)
        built = (spec, spec.mechanism.assemble())
        with self._lock:
            if len(self._templates) >= 32:          # a bounded cache of structures
                self._templates.pop(next(iter(self._templates)))
            self._templates[key] = built
        return built

    def build_key(self, values: Mapping[str, float]) -> dict[str, float]:
        """The structural part of ``values`` (factory arguments)."""
        return {k: v for k, v in values.items() if k in self.build_parameters}

    # -- runs --------------------------------------------------------------------------
    def instantiate(self, values: Mapping[str, float], *, reuse: bool = False
                    ) -> tuple[MechanismModel, dict[str, Any], dict[str, Any]]:
        """The model with ``values`` set, and its initial coordinates and rates.

        The built model of the structure hands back the same model with the values of
        its parameters (:meth:`MechanismModel.with_parameters`: assembled from the same
        causal graph; nothing is copied or changed); the initial coordinates and rates
        (``J2.q0``, ``J1.qd0``) go to the initial state. ``reuse`` is accepted for
        compatibility and has no effect (no copy is made either way).

        Raises
        ------
        ModelError
            For an unknown parameter or an invalid value, naming it and the rule.
        """
        build = self.build_key(values)
        spec, mm = self._template(build)
        return self._with_values(spec, mm, values, build)

    def _with_values(self, spec: ModelSpec, mm: MechanismModel,
                     values: Mapping[str, float], build: Mapping[str, float]
                     ) -> tuple[MechanismModel, dict[str, Any], dict[str, Any]]:
        """``mm`` with the model parameters of ``values``, and the initial coordinates
        and rates with theirs (``build``: the factory arguments, already in ``mm``)."""
        q0, qd0 = dict(spec.q0), dict(spec.qd0)
        params = {}
        for name, v in values.items():
            if name in build:
                continue
            owner, _, what = name.partition(".")
            last = name.rpartition(".")[2]
            if last in ("q0", "qd0") and owner in spec.mechanism.joints:
                target = q0 if last == "q0" else qd0
                j, ax, _ = _port_of(spec.mechanism, name)
                if j.n_free == 1:
                    target[owner] = _finite(name, v)
                else:
                    old = target.get(owner)
                    vals = np.zeros(j.n_free) if old is None else \
                        np.array([_pick(old, j, a) for a in j.axes], dtype=float)
                    vals[ax.index] = _finite(name, v)
                    target[owner] = vals
            else:
                params[name] = v
        if params:
            unknown = [n for n in params if n not in mm.parameters]
            if unknown:
                raise ModelError(f"parameter {unknown[0]!r}: no such parameter of model "
                                 f"'{spec.mechanism.name}'; valid: "
                                 f"{', '.join(self.parameters())}")
            mm = mm.with_parameters(params)
        return mm, q0, qd0

    def fresh(self, values: Mapping[str, float]
              ) -> tuple[MechanismModel, dict[str, Any], dict[str, Any]]:
        """The same model built from scratch (a new mechanism from the source, the
        graph, causality and reduction) with ``values``: for checking
        :meth:`instantiate` (the two must simulate identically)."""
        build = self.build_key(values)
        spec = self._fresh_spec(build)
        for name in self.structure:
            _change_structure(spec, name)
        model_values = {k: v for k, v in values.items() if k not in build and
                        k.rpartition(".")[2] not in ("q0", "qd0")}
        # (into its new objects; whose each parameter is: the structure's build index)
        _set_in_mechanism(spec.mechanism, model_values, self._template(build)[1].index)
        mm, q0, qd0 = self._with_values(spec, spec.mechanism.assemble(), {
            k: v for k, v in values.items() if k not in model_values}, build)
        return mm, q0, qd0

    def simulate(self, values: Mapping[str, float], *, fresh: bool = False,
                 reuse: bool = False, **kwargs: Any):
        """Run with ``values`` and the study's solver settings: a
        :class:`~elements.MechanismResult`. ``fresh=True`` builds from scratch instead
        (see :meth:`fresh`); ``reuse`` has no effect (see :meth:`instantiate`)."""
        mm, q0, qd0 = self.fresh(values) if fresh else self.instantiate(values)
        s = self.solver
        solver, save, budget = s.options()
        return mm.simulate((s.t_start, s.t_end), q0, qd0, solver=solver, save=save,
                           budget=budget, stabilization=s.stabilization,
                           projection=s.projection, **kwargs)

    def fingerprint(self) -> str:
        """A hash of the model's source and solver settings (for resuming safely)."""
        h = hashlib.sha256()
        if self._text is not None:
            h.update(self._text.encode())
        else:
            h.update(self.source.encode())
        h.update(repr(self.solver).encode())
        h.update(repr(self.structure).encode())
        return h.hexdigest()[:16]


def _set_in_mechanism(mech: Mechanism, values: Mapping[str, float], index) -> None:
    """Write parameter values into a new mechanism's objects, as a model file or a
    factory would have given them (for :meth:`ParametricModel.fresh`, an independent
    route to the same model). Whose each parameter is comes from ``index``, the
    :class:`~elements.build_index.BuildIndex` of a build of the same structure."""
    import dataclasses

    import numpy as np

    from elements.parts.rigid_body import INERTIA_ENTRIES, Inertia
    ports = {ax.port: ax for j in mech.joints.values() for ax in j.axes}
    for name, value in values.items():
        v = _finite(name, value)
        a, role = (lambda t: (t.attachment, t.role))(index.target(name))
        if a.kind is Kind.GRAVITY:
            g = np.array(mech.gravity, dtype=float)
            g["xyz".index(role)] = v
            mech.gravity = g
        elif a.kind is Kind.BODY:
            b = mech.bodies[a.owner]
            if role == "mass":
                b.mass = v
            else:
                i, k = INERTIA_ENTRIES[role]
                J = b.inertia.matrix.copy()
                J[i, k] = J[k, i] = v
                b.inertia = Inertia.about_center(J)
        elif a.kind is Kind.LOAD:
            ld = mech.loads[a.owner]
            vec = np.array(ld.value, dtype=float)
            vec["xyz".index(role)] = v
            ld.value = vec
        elif a.kind in (Kind.SPRING, Kind.DAMPER, Kind.ACTUATOR):
            items = ports[a.owner].items(a.kind.value)
            if a.kind is Kind.SPRING:
                items[a.index] = dataclasses.replace(items[a.index], **{
                    {"k": "stiffness", "rest": "rest"}[role]: v})
            elif a.kind is Kind.DAMPER:
                items[a.index] = AxisDamper(v)
            else:
                items[a.index] = AxisActuator(v)
        else:
            raise ModelError(f"parameter {name}: a {a.kind.value} parameter cannot be set "
                             f"in a mechanism's objects")


def _finite(name: str, v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ModelError(f"parameter {name}: must be a number, got {v!r}") from None
    if not math.isfinite(f):
        raise ModelError(f"parameter {name}: must be finite, got {f}")
    return f
