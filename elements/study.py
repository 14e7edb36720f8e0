"""Parameter studies: grid sweeps and Monte Carlo runs of one model, in this process or
on Dask (a local cluster or an existing scheduler), with one results table.

- :class:`ParametricModel`: a model built, causality-assigned and reduced once per
  structure, then run with new values of named parameters (``"J3.spring.k"``,
  ``"J1.actuator"``, ``"m2.mass"``, ...; :meth:`ParametricModel.parameters` lists them).
- :class:`Study`: the model, the parameters to vary (:class:`Grid` or
  :class:`MonteCarlo` with :class:`Uniform`, :class:`Normal`, :class:`LogNormal`,
  :class:`Choice`), the :class:`Output` values to keep, solver overrides;
  :meth:`Study.run` writes ``results.csv`` one row per run as runs finish.
- :func:`load_study`: a study file (TOML, see docs/studies.md) -> :class:`Study`.
- :class:`StudyResult`, :func:`read_results`: the table; :func:`plot_study` an output
  against one parameter (lines) or two (a heat map).

How a value reaches a built model. Every value lives in two places: the mechanism's
objects (a body's ``mass``, a joint's ``AxisSpring``), which initial states, results
and the energy ledger read, and the bond graph's elements that :meth:`Mechanism.build`
made from them (``I: m2.linear``, ``Se: m2.gravity`` = m g, ``C: J3.spring``, ...).
A run works on a copy of the built model (mechanism, graph and causal graph together;
in a study, one copy per worker thread and structure, reset from the base values before
each run): it sets the values on the copy's mechanism objects, writes them into the
copy's elements (:func:`sync_elements`), and re-evaluates the numeric state-space model
from the *same* causal graph with :func:`bondgraph.assemble`: the graph is not rebuilt
and causality is not reassigned. A parameter that cannot be set by value (a spring on
a joint that has none, a factory argument) changes the structure: the model is rebuilt
for it and the study says so (:attr:`Study.notes`).

Units are SI throughout (kg, m, s, rad, N, N m); runtimes are in seconds.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import os
import shutil
from contextlib import contextmanager
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import Baumgarte, ModelError, StateFunction, TimeFunction, assemble
from bondgraph._files import atomic_path, output_name, write_text
from bondgraph.errors import BondGraphError, IntegrationWarning, caused_by_interrupt

from .joints import AxisActuator, AxisDamper, AxisSpring
from .mechanism import Mechanism, MechanismModel
from ._plot import have_matplotlib, pyplot
from .modelfile import (
    PLOT_SUFFIXES, ModelFileError, ModelSpec, SolverSettings, _Ctx, _solver, loads_model,
    read_text, read_toml,
)
from .rigid_body import Inertia

__all__ = [
    "ParametricModel", "ParameterInfo", "sync_elements", "Study", "Grid", "MonteCarlo",
    "Uniform", "Normal", "LogNormal", "Choice", "Output", "Run", "StudyResult",
    "StudyFileError", "load_study", "loads_study", "read_results", "plot_study", "RunProgress",
    "QUANTITIES", "REDUCTIONS",
]

RESULTS = "results.csv"
STUDY_JSON = "study.json"
HISTORIES = "histories"
STUDY_FILES = (RESULTS, STUDY_JSON, "results.parquet")
"""The files a study writes under fixed names (no plot may take one)."""


class StudyFileError(ModelFileError):
    """A malformed study file, or a study that cannot be planned; names the file, the
    table and the key."""


# =======================================================================================
# Named parameters of a built model
# =======================================================================================

@dataclass(frozen=True)
class ParameterInfo:
    """A parameter that a run can change.

    Attributes
    ----------
    name : str
        ``"<body>.mass"``, ``"<joint>.spring.k"``, ``"gravity.z"``, ...
    unit : str
        SI unit of the value.
    meaning : str
    value : float or None
        Its value in the base model (None when the model does not have the element yet,
        or when it is a signal rather than a number).
    structural : bool
        True when setting it adds an element (the model is rebuilt once with it).
    """

    name: str
    unit: str
    meaning: str
    value: float | None
    structural: bool = False


def _is_number(v: Any) -> bool:
    return not isinstance(v, (TimeFunction, StateFunction, str)) and np.ndim(v) == 0


def _axis_units(joint) -> dict[str, str]:
    lin = joint.type_name == "prismatic"
    return {"k": "N/m" if lin else "N m/rad", "rest": "m" if lin else "rad",
            "c": "N s/m" if lin else "N m s/rad", "effort": "N" if lin else "N m",
            "q": "m" if lin else "rad", "qd": "m/s" if lin else "rad/s"}


def _attachment_names(joint, kind: str) -> list[str]:
    """Element-name stems of a joint's springs/dampers/actuators, as Mechanism.build names
    them: ``J3.spring`` for one, ``J3.spring0``, ``J3.spring1`` for several."""
    items = {"spring": joint.springs, "damper": joint.dampers,
             "actuator": joint.actuators}[kind]
    if len(items) == 1:
        return [f"{joint.name}.{kind}"]
    return [f"{joint.name}.{kind}{i}" for i in range(len(items))]


def _registry(spec: ModelSpec) -> dict[str, ParameterInfo]:
    """Every parameter of ``spec`` that a run can set, by name."""
    mech = spec.mechanism
    out: dict[str, ParameterInfo] = {}
    for ax, g in zip("xyz", mech.gravity):
        out[f"gravity.{ax}"] = ParameterInfo(f"gravity.{ax}", "m/s^2",
                                             f"gravity's global {ax} component", float(g))
    for b in mech.bodies.values():
        out[f"{b.name}.mass"] = ParameterInfo(f"{b.name}.mass", "kg", "mass (> 0); its "
                                              "inertia stays as given", float(b.mass))
        for k, ax in enumerate(("Ixx", "Iyy", "Izz")):
            out[f"{b.name}.{ax}"] = ParameterInfo(
                f"{b.name}.{ax}", "kg m^2", f"central inertia, diagonal entry {ax} in body "
                "axes (the result must be a valid inertia)", float(b.inertia.matrix[k, k]))
    for j in mech.joints.values():
        if not j.n_free:
            continue
        u = _axis_units(j)
        out[f"{j.name}.q0"] = ParameterInfo(f"{j.name}.q0", u["q"], "initial coordinate",
                                            _as_float(spec.q0.get(j.name, 0.0)))
        out[f"{j.name}.qd0"] = ParameterInfo(f"{j.name}.qd0", u["qd"], "initial rate",
                                             _as_float(spec.qd0.get(j.name, 0.0)))
        for kind, attrs in (("spring", (("k", "stiffness", u["k"]),
                                        ("rest", "rest", u["rest"]))),
                            ("damper", (("c", "coefficient", u["c"]),)),
                            ("actuator", ((None, "effort", u["effort"]),))):
            items = {"spring": j.springs, "damper": j.dampers, "actuator": j.actuators}[kind]
            stems = _attachment_names(j, kind) if items else [f"{j.name}.{kind}"]
            for i, stem in enumerate(stems):
                for key, attr, unit in attrs:
                    name = stem if key is None else f"{stem}.{key}"
                    if items:
                        v = getattr(items[i], attr)
                        value = float(v) if _is_number(v) else None
                        meaning = f"{kind} {attr} on the axis"
                        if kind == "actuator" and value is None:
                            meaning += " (a signal in the model: a value replaces it by " \
                                       "a constant)"
                        out[name] = ParameterInfo(name, unit, meaning, value)
                    elif key != "rest":     # a spring is added by its stiffness
                        out[name] = ParameterInfo(
                            name, unit, f"{kind} {attr} on the axis; the joint has no "
                            f"{kind}, so the model is rebuilt once with one", None, True)
    for ld in mech.loads.values():
        const = not isinstance(ld.value, (TimeFunction, StateFunction))
        unit = "N" if type(ld).__name__ == "PointForce" else "N m"
        for k, ax in enumerate("xyz"):
            out[f"{ld.name}.{ax}"] = ParameterInfo(
                f"{ld.name}.{ax}", unit, f"load {ax} component ({ld.frame} frame)"
                + ("" if const else "; the load is a signal: a value replaces it by a "
                                     "constant vector"),
                float(ld.value[k]) if const else None)
    return out


def _as_float(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _finite(name: str, v: float, unit: str) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ModelError(f"parameter {name}: must be a number ({unit}), got {v!r}") from None
    if not math.isfinite(v):
        raise ModelError(f"parameter {name}: must be finite ({unit}), got {v}")
    return v


def _apply(spec: ModelSpec, q0: dict, qd0: dict, name: str, value: float) -> None:
    """Set parameter ``name`` on the mechanism objects of ``spec`` (and the initial
    coordinates ``q0``/``qd0``). Validates like the constructors do.

    Raises
    ------
    ModelError
        For an unknown name or an invalid value, naming the parameter and the rule.
    """
    mech = spec.mechanism
    parts = name.split(".")
    if parts[0] == "gravity" and len(parts) == 2 and parts[1] in ("x", "y", "z"):
        g = mech.gravity.copy()
        g["xyz".index(parts[1])] = _finite(name, value, "m/s^2")
        mech.gravity = g
        return
    if parts[0] in mech.bodies and len(parts) == 2:
        b = mech.bodies[parts[0]]
        if parts[1] == "mass":
            v = _finite(name, value, "kg")
            if v <= 0:
                raise ModelError(f"parameter {name}: the mass must be positive (kg), got {v}")
            b.mass = v
            return
        if parts[1] in ("Ixx", "Iyy", "Izz"):
            k = ("Ixx", "Iyy", "Izz").index(parts[1])
            m = b.inertia.matrix.copy()
            m[k, k] = _finite(name, value, "kg m^2")
            try:
                b.inertia = Inertia.about_center(m)
            except ModelError as exc:
                raise ModelError(f"parameter {name} = {value}: {exc}") from None
            return
    if parts[0] in mech.joints and len(parts) >= 2:
        j = mech.joints[parts[0]]
        u = _axis_units(j) if j.n_free else {}
        if j.n_free and parts[1:] == ["q0"]:
            q0[j.name] = _finite(name, value, u["q"])
            return
        if j.n_free and parts[1:] == ["qd0"]:
            qd0[j.name] = _finite(name, value, u["qd"])
            return
        kind, index = _attachment(j, parts[1])
        if kind is not None and j.n_free:
            items = {"spring": j.springs, "damper": j.dampers, "actuator": j.actuators}[kind]
            if not items:
                raise ModelError(f"parameter {name}: joint {j.name} has no {kind}; adding "
                                 f"one changes the structure (ParametricModel.prepare "
                                 f"rebuilds the model with it)")
            if index < len(items):
                key = parts[2] if len(parts) == 3 else None
                if kind == "spring" and key in ("k", "rest"):
                    s = items[index]
                    v = _finite(name, value, u["k" if key == "k" else "rest"])
                    if key == "k" and v <= 0:
                        raise ModelError(f"parameter {name}: the stiffness must be positive "
                                         f"({u['k']}), got {v}")
                    items[index] = dataclasses.replace(
                        s, **({"stiffness": v} if key == "k" else {"rest": v}))
                    return
                if kind == "damper" and key == "c":
                    v = _finite(name, value, u["c"])
                    if v < 0:
                        raise ModelError(f"parameter {name}: the damper coefficient must be "
                                         f">= 0 ({u['c']}), got {v}")
                    items[index] = AxisDamper(v)
                    return
                if kind == "actuator" and key is None:
                    items[index] = AxisActuator(_finite(name, value, u["effort"]))
                    return
    if parts[0] in mech.loads and len(parts) == 2 and parts[1] in ("x", "y", "z"):
        ld = mech.loads[parts[0]]
        vec = np.array(ld.value, dtype=float) if not isinstance(
            ld.value, (TimeFunction, StateFunction)) else np.zeros(3)
        vec["xyz".index(parts[1])] = _finite(name, value, "N or N m")
        ld.value = vec
        return
    raise ModelError(f"parameter {name!r}: no such parameter of model "
                     f"'{mech.name}'; valid: {', '.join(_registry(spec))}")


def _attachment(joint, word: str) -> tuple[str | None, int]:
    """(kind, index) of ``J3.spring`` (one spring, or none yet) or ``J3.spring1`` (one of
    several); (None, 0) when ``word`` names none."""
    for kind in ("spring", "damper", "actuator"):
        items = {"spring": joint.springs, "damper": joint.dampers,
                 "actuator": joint.actuators}[kind]
        if word == kind:
            return (kind, 0) if len(items) <= 1 else (None, 0)
        if word.startswith(kind) and word[len(kind):].isdigit():
            i = int(word[len(kind):])
            return (kind, i) if len(items) > 1 else (None, 0)
    return None, 0


def _add_attachment(joint, kind: str) -> None:
    """A placeholder attachment whose value every run sets (structure change)."""
    if kind == "spring":
        joint.add_spring(AxisSpring(1.0))
    elif kind == "damper":
        joint.add_damper(AxisDamper(0.0))
    else:
        joint.add_actuator(AxisActuator(0.0))


def sync_elements(mm: MechanismModel) -> None:
    """Write the values held by ``mm.mechanism`` (masses, inertias, gravity, axis springs,
    dampers and actuators, load values) into the elements of ``mm``'s bond graph, the
    same way :meth:`Mechanism.build` made them. The graph's structure is untouched; call
    :func:`bondgraph.assemble` on ``mm.causal`` afterwards for the numeric model."""
    mech = mm.mechanism
    els = mm.graph.elements
    for b in mech.bodies.values():
        els[f"{b.name}.linear"].inertia = b.mass
        els[f"{b.name}.angular"].inertia = b.inertia.matrix
        els[f"{b.name}.gravity"].value = b.mass * np.asarray(mech.gravity, dtype=float)
    for j in mech.joints.values():
        if not j.n_free:
            continue
        for stem, s in zip(_attachment_names(j, "spring"), j.springs):
            els[stem].stiffness = s.stiffness
        for stem, d in zip(_attachment_names(j, "damper"), j.dampers):
            els[stem].resistance = d.coefficient
        if j.name not in mm.drives:
            for stem, a in zip(_attachment_names(j, "actuator"), j.actuators):
                els[stem].value = a.effort
    for ld in mech.loads.values():
        els[ld.source].value = ld.value


def _snapshot(mech: Mechanism) -> dict[str, Any]:
    """The values a run can set on ``mech``'s objects (restored by :func:`_restore`)."""
    return {"gravity": np.array(mech.gravity, dtype=float),
            "bodies": {n: (b.mass, b.inertia) for n, b in mech.bodies.items()},
            "joints": {n: (list(j.springs), list(j.dampers), list(j.actuators))
                       for n, j in mech.joints.items()},
            "loads": {n: ld.value for n, ld in mech.loads.items()}}


def _restore(mech: Mechanism, snap: Mapping[str, Any]) -> None:
    """Reset ``mech``'s values to a snapshot. The setters of :func:`_apply` replace
    objects and arrays rather than change them in place, so the snapshot's stay valid."""
    mech.gravity = snap["gravity"].copy()
    for n, (mass, inertia) in snap["bodies"].items():
        b = mech.bodies[n]
        b.mass, b.inertia = mass, inertia
    for n, (springs, dampers, actuators) in snap["joints"].items():
        j = mech.joints[n]
        j.springs[:], j.dampers[:], j.actuators[:] = springs, dampers, actuators
    for n, value in snap["loads"].items():
        mech.loads[n].value = value


# =======================================================================================
# The model, built once per structure
# =======================================================================================

def _spec_from(obj: Any, path: str = "<python>") -> ModelSpec:
    if isinstance(obj, ModelSpec):
        return obj
    if isinstance(obj, Mechanism):
        return ModelSpec(obj, source=path)
    raise ModelError(f"a study's model must give a ModelSpec or a Mechanism, got "
                     f"{type(obj).__name__}")


class ParametricModel:
    """A model built, causality-assigned and reduced once per structure, run with new
    parameter values without rebuilding the graph.

    Parameters
    ----------
    model : str, os.PathLike, ModelSpec, Mechanism or callable
        A TOML model file (its text is kept, so workers need no access to the file), a
        :class:`~elements.modelfile.ModelSpec` or :class:`~elements.Mechanism`, or a
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
    >>> mm.graph.elements["J3.spring"].stiffness, mm.mechanism.bodies["m2"].mass
    (800.0, 1.5)
    """

    def __init__(self, model: Any, *, solver: Mapping[str, Any] | None = None):
        self._factory: Callable[..., Any] | None = None
        self._text: str | None = None
        self._spec: ModelSpec | None = None
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            try:
                with open(path, "rb") as f:
                    self._text = f.read().decode("utf-8")
            except FileNotFoundError:
                raise ModelFileError(f"{path}: no such model file") from None
            self.source = path
        elif isinstance(model, (ModelSpec, Mechanism)):
            self._spec = _spec_from(model)
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
        self.additions: tuple[str, ...] = ()
        self.notes: list[str] = []
        self._templates: dict[tuple, tuple[ModelSpec, MechanismModel]] = {}
        self._lock = threading.Lock()
        self.base = self._fresh_spec({})
        self.solver = self._solver_settings(self.base.solver)

    # -- pickling (cloudpickle ships it to Dask workers) ---------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock", None)
        state.pop("_local", None)             # per-thread working copies stay behind
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
            return copy.deepcopy(self._spec)
        try:
            return _spec_from(self._factory(**dict(build)), self.source)
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
        return _solver(_Ctx(self.source), merged)

    def parameters(self) -> dict[str, ParameterInfo]:
        """Every parameter a run can set, by name (see :class:`ParameterInfo`), plus the
        factory's keyword arguments (``structural``: each value rebuilds the model)."""
        out = _registry(self.base)
        for n in self.build_parameters:
            out[n] = ParameterInfo(n, "", f"argument of the factory {self.source}; each "
                                   "distinct value builds the model anew", None, True)
        return out

    def prepare(self, names: Iterable[str]) -> list[str]:
        """Check that every name is a parameter and decide the structure: attachments a
        joint lacks are added once (the model is rebuilt with them), factory arguments
        rebuild per distinct value. Returns the notes that say so.

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
        adds = tuple(sorted({n.rsplit(".", 1)[0] if n.count(".") == 2 else n
                             for n in names if reg[n].structural
                             and n not in self.build_parameters}))
        for a in adds:
            notes.append(f"{a}: joint {a.split('.')[0]} has no {a.split('.')[1]} in the "
                         f"model, which changes the structure: the model is rebuilt once "
                         f"with one, and each run sets its value")
        for n in names:
            if n in self.build_parameters:
                notes.append(f"{n}: an argument of the factory {self.source}, not a value "
                             f"of the built model: each distinct value rebuilds the model "
                             f"(once per worker and structure)")
        self.additions = adds
        self.notes = notes
        self._templates.clear()
        return notes

    def _template(self, build: Mapping[str, float]) -> tuple[ModelSpec, MechanismModel]:
        key = tuple(sorted((k, float(v)) for k, v in build.items()))
        with self._lock:
            hit = self._templates.get(key)
        if hit is not None:
            return hit
        spec = self._fresh_spec(build)
        for a in self.additions:
            jn, kind = a.split(".")
            _add_attachment(spec.mechanism.joints[jn], kind)
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
        """A model with ``values`` set, and its initial coordinates and rates.

        The values are set on the mechanism objects of a copy of the built model (its
        mechanism, graph and causal graph, copied together), written into its elements
        (:func:`sync_elements`), and the state-space model is re-evaluated from the
        same causal graph (:func:`bondgraph.assemble`). The graph is not rebuilt and
        causality is not reassigned; the base model never changes.

        ``reuse=False`` (the default) copies the built model for this call, so the
        returned model is independent. ``reuse=True`` uses this thread's working copy
        instead (made once per thread and structure; every mechanism value is reset
        from the base model before the run's values are set), so no copy is made: the
        returned model, and a result simulated from it, change with the next
        ``reuse=True`` call on this thread. A study reads each run's outputs at once,
        and uses it.

        Raises
        ------
        ModelError
            For an unknown parameter or an invalid value.
        """
        build = self.build_key(values)
        spec, mm = self._template(build)
        if reuse:
            mm2, snapshot = self._working_copy(build, mm)
            _restore(mm2.mechanism, snapshot)
        else:
            mm2 = copy.deepcopy(mm, {id(mm.model): None})   # the model: re-evaluated
        q0, qd0 = dict(spec.q0), dict(spec.qd0)
        spec2 = ModelSpec(mm2.mechanism, q0, qd0, spec.solver, spec.output, spec.source)
        for name, v in values.items():
            if name not in build:
                _apply(spec2, q0, qd0, name, v)
        sync_elements(mm2)
        mm2.model = assemble(mm2.causal, mm.model.parameters,
                             omit_rate_terms=mm.model.omit_rate_terms)
        mm2.state_names = mm2.model.state_names
        return mm2, q0, qd0

    def _working_copy(self, build: Mapping[str, float], mm: MechanismModel
                      ) -> tuple[MechanismModel, dict[str, Any]]:
        """This thread's copy of the built model ``mm`` of structure ``build``, and the
        snapshot of its mechanism's values to reset it from."""
        local = self.__dict__.get("_local")
        if local is None:
            local = self.__dict__.setdefault("_local", threading.local())
        copies = getattr(local, "copies", None)
        if copies is None:
            copies = local.copies = {}
        key = (tuple(sorted((k, float(v)) for k, v in build.items())), id(mm))
        if key not in copies:
            if len(copies) >= 8:
                copies.pop(next(iter(copies)))
            mm2 = copy.deepcopy(mm, {id(mm.model): None})
            copies[key] = (mm2, _snapshot(mm2.mechanism))
        return copies[key]

    def fresh(self, values: Mapping[str, float]
              ) -> tuple[MechanismModel, dict[str, Any], dict[str, Any]]:
        """The same model built from scratch with ``values``: a new mechanism from the
        source, the values set on it, then graph, causality and reduction. For checking
        :meth:`instantiate` (the two must simulate identically)."""
        build = self.build_key(values)
        spec = self._fresh_spec(build)
        for a in self.additions:
            jn, kind = a.split(".")
            _add_attachment(spec.mechanism.joints[jn], kind)
        q0, qd0 = dict(spec.q0), dict(spec.qd0)
        for name, v in values.items():
            if name not in build:
                _apply(spec, q0, qd0, name, v)
        return spec.mechanism.assemble(), q0, qd0

    def simulate(self, values: Mapping[str, float], *, fresh: bool = False,
                 reuse: bool = False, **kwargs: Any):
        """Run with ``values`` and the study's solver settings: a
        :class:`~elements.MechanismResult`. ``fresh=True`` builds from scratch instead
        (see :meth:`fresh`); ``reuse=True`` runs on this thread's working copy (see
        :meth:`instantiate`: read the result before the next such run)."""
        mm, q0, qd0 = self.fresh(values) if fresh else self.instantiate(values, reuse=reuse)
        s = self.solver
        return mm.simulate((s.t_start, s.t_end), q0, qd0, t_eval=s.t_eval, method=s.method,
                           rtol=s.rtol, atol=s.atol, stabilization=s.stabilization,
                           projection=s.projection, **kwargs)

    def fingerprint(self) -> str:
        """A hash of the model's source and solver settings (for resuming safely)."""
        h = hashlib.sha256()
        if self._text is not None:
            h.update(self._text.encode())
        else:
            h.update(self.source.encode())
        h.update(repr(self.solver).encode())
        h.update(repr(self.additions).encode())
        return h.hexdigest()[:16]


# =======================================================================================
# What to vary
# =======================================================================================

@dataclass(frozen=True)
class Uniform:
    """Uniform between ``low`` and ``high``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)


@dataclass(frozen=True)
class Normal:
    """Normal with ``mean`` and standard deviation ``std`` (may give values a parameter
    refuses, such as a negative mass: those runs fail with a message)."""

    mean: float
    std: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.normal(self.mean, self.std, n)


@dataclass(frozen=True)
class LogNormal:
    """Log-normal: ``median * exp(sigma * N(0, 1))`` (always positive)."""

    median: float
    sigma: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.median * np.exp(self.sigma * rng.standard_normal(n))


@dataclass(frozen=True)
class Choice:
    """One of ``values``, each equally likely."""

    values: tuple[float, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.asarray(self.values, dtype=float)[rng.integers(0, len(self.values), n)]


@dataclass(frozen=True)
class Run:
    """One run of a study: its position in the plan, its stable id (a hash of the
    parameter values, so a resumed study recognises it) and the values."""

    index: int
    run_id: str
    values: dict[str, float]


def _run_id(values: Mapping[str, float], occurrence: int) -> str:
    text = json.dumps({k: float(v).hex() for k, v in sorted(values.items())},
                      sort_keys=True) + f"#{occurrence}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plan(rows: Iterable[dict[str, float]]) -> list[Run]:
    seen: dict[str, int] = {}
    out = []
    for i, values in enumerate(rows):
        base = _run_id(values, 0)
        k = seen.get(base, 0)
        seen[base] = k + 1
        out.append(Run(i, _run_id(values, k), dict(values)))
    return out


class Grid:
    """Every combination of the given values (the first parameter varies slowest).

    ``Grid({"J3.spring.k": [200.0, 500.0], "J1.actuator": np.linspace(0.05, 0.2, 4)})``
    """

    kind = "grid"

    def __init__(self, values: Mapping[str, Sequence[float]]):
        self.values = {k: [float(v) for v in np.atleast_1d(np.asarray(vs, dtype=float))]
                       for k, vs in values.items()}
        for k, vs in self.values.items():
            if not vs:
                raise ModelError(f"grid parameter {k!r} has no values")

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def runs(self) -> list[Run]:
        names = self.names
        return _plan(dict(zip(names, combo))
                     for combo in itertools.product(*self.values.values()))

    def describe(self) -> dict[str, Any]:
        return {"kind": "grid", "values": self.values}


class MonteCarlo:
    """``samples`` runs with each parameter drawn from its distribution.

    Each parameter has its own random stream (seeded by ``seed`` and the parameter's
    position), so a study with more samples repeats the runs of one with fewer.
    """

    kind = "monte_carlo"

    def __init__(self, distributions: Mapping[str, Any], samples: int, seed: int = 0):
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) \
                or samples < 1:
            raise ModelError(f"Monte Carlo samples must be a positive integer, got "
                             f"{samples!r}")
        self.distributions = dict(distributions)
        self.samples = int(samples)
        self.seed = int(seed)

    @property
    def names(self) -> list[str]:
        return list(self.distributions)

    def runs(self) -> list[Run]:
        cols = {}
        for k, (name, dist) in enumerate(self.distributions.items()):
            rng = np.random.default_rng([self.seed, k])
            cols[name] = np.asarray(dist.sample(rng, self.samples), dtype=float)
        return _plan({n: float(cols[n][i]) for n in cols} for i in range(self.samples))

    def describe(self) -> dict[str, Any]:
        return {"kind": "monte_carlo", "samples": self.samples, "seed": self.seed,
                "distributions": {k: {"type": type(d).__name__, **dataclasses.asdict(d)}
                                  for k, d in self.distributions.items()}}


# =======================================================================================
# What to keep
# =======================================================================================

REDUCTIONS = ("final", "initial", "max", "min", "mean", "max_abs", "rms", "history")
"""How an output turns a column over time into a value: the value at the last or first
output time, the largest, the smallest, the mean over the output times, the largest
magnitude, the root mean square, or the whole ``history`` (written to a file per run)."""

QUANTITIES = {
    "energy_drift": "relative drift of the energy balance (1): EnergyLedger.relative_drift",
    "max_phi": "largest |Phi| over joints and output times (m or rad)",
    "max_constraint_flow": "largest |c| over joints and output times (m/s or rad/s)",
    "n_steps": "accepted solver steps (1)",
    "nfev": "right-hand-side evaluations (1)",
    "t_reached": "the last output time reached (s)",
}
"""Whole-run quantities an :class:`Output` can keep instead of a column."""


@dataclass(frozen=True)
class Output:
    """A value to keep from each run.

    Parameters
    ----------
    name : str
        The table's column name.
    columns : tuple of str
        Result columns as in the CSV files of a run (``m2.x``, ``J3.F``, ``J3.Fx``,
        ``kinetic``, ``work.J1.actuator``, ...). With several, the value at each time is
        their Euclidean norm (a force's magnitude, say).
    reduce : str
        One of :data:`REDUCTIONS`; ``history`` keeps the columns over time (one ``.npz``
        file per run under ``histories/``; the table holds its path).
    quantity : str, optional
        Instead of columns, a whole-run quantity of :data:`QUANTITIES`.

    Examples
    --------
    >>> Output("J3_force_max", ("J3.Fx", "J3.Fy", "J3.Fz"), "max").reduce
    'max'
    >>> Output.of("drift", "energy_drift").quantity
    'energy_drift'
    """

    name: str
    columns: tuple[str, ...] = ()
    reduce: str = "final"
    quantity: str | None = None

    def __post_init__(self):
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        object.__setattr__(self, "columns", cols)
        if not isinstance(self.name, str) or not self.name or "," in self.name:
            raise ModelError(f"output name must be a non-empty string without ',', got "
                             f"{self.name!r}")
        if self.quantity is not None:
            if self.quantity not in QUANTITIES:
                raise ModelError(f"output {self.name!r}: unknown quantity "
                                 f"{self.quantity!r}; valid: {', '.join(QUANTITIES)}")
            if cols:
                raise ModelError(f"output {self.name!r}: give either columns or a quantity")
            return
        if not cols:
            raise ModelError(f"output {self.name!r}: give the columns (e.g. ['m2.x']) or a "
                             f"quantity ({', '.join(QUANTITIES)})")
        if self.reduce not in REDUCTIONS:
            raise ModelError(f"output {self.name!r}: unknown reduce {self.reduce!r}; valid: "
                             f"{', '.join(REDUCTIONS)}")

    @classmethod
    def of(cls, name: str, quantity: str) -> "Output":
        """A whole-run quantity (:data:`QUANTITIES`)."""
        return cls(name, (), "final", quantity)

    def evaluate(self, result, cols: Mapping[str, np.ndarray] | None) -> Any:
        """The output's value for one result (``cols``: its columns, by name)."""
        if self.quantity is not None:
            raw = result.raw
            return {"energy_drift": lambda: result.energy.relative_drift,
                    "max_phi": lambda: result.max_abs_phi,
                    "max_constraint_flow": lambda: result.max_abs_constraint_flow,
                    "n_steps": lambda: raw.n_steps, "nfev": lambda: raw.nfev,
                    "t_reached": lambda: float(result.t[-1]) if result.t.size else math.nan,
                    }[self.quantity]()
        assert cols is not None
        missing = [c for c in self.columns if c not in cols]
        if missing:
            raise ModelError(f"output {self.name!r}: no column(s) {', '.join(missing)}; "
                             f"columns: {', '.join(sorted(cols))}")
        if self.reduce == "history":
            return {c: np.asarray(cols[c], dtype=float) for c in self.columns}
        ys = [np.asarray(cols[c], dtype=float) for c in self.columns]
        y = ys[0] if len(ys) == 1 else np.linalg.norm(ys, axis=0)
        if y.size == 0:
            return math.nan
        return float({"final": lambda: y[-1], "initial": lambda: y[0],
                      "max": lambda: y.max(), "min": lambda: y.min(),
                      "mean": lambda: y.mean(), "max_abs": lambda: np.abs(y).max(),
                      "rms": lambda: np.sqrt(np.mean(y * y))}[self.reduce]())

    def describe(self) -> dict[str, Any]:
        return ({"quantity": self.quantity} if self.quantity else
                {"columns": list(self.columns), "reduce": self.reduce})


# =======================================================================================
# One run (in this process or on a worker)
# =======================================================================================

def execute_run(pm: ParametricModel, run: Run, outputs: Sequence[Output]) -> dict[str, Any]:
    """Run one point of a study and return its row: ``run_id``, ``index``, ``status``
    (``ok``; ``failed``: the simulation stopped early; ``error``: it could not run), the
    parameter values, the outputs (NaN unless ok), ``runtime_s`` (s), ``message`` and
    ``worker``. Never raises for a run's own failure: the error is the row's message."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"run_id": run.run_id, "index": run.index, **run.values}
    histories: dict[str, dict[str, np.ndarray]] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IntegrationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            result = pm.simulate(run.values, reuse=True)     # outputs are read below
        if result.success:
            cols = None
            if any(o.quantity is None for o in outputs):
                b, j, e = result.columns()
                cols = {**b, **j, **e}
                t = cols.get("t")
            for o in outputs:
                v = o.evaluate(result, cols)
                if o.reduce == "history" and o.quantity is None:
                    histories[o.name] = {"t": np.asarray(t, dtype=float), **v}
                    row[o.name] = f"{HISTORIES}/{run.run_id}.npz"
                else:
                    row[o.name] = v
            row["status"], row["message"] = "ok", ""
        else:
            for o in outputs:
                row[o.name] = math.nan
            row["status"] = "failed"
            ft = result.raw.failure_time
            row["message"] = f"{result.raw.status.name}" + \
                (f" at t = {ft:.6g} s" if ft is not None else "") + \
                f": {' '.join(str(result.message).split())}"
    except (BondGraphError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        for o in outputs:
            row[o.name] = math.nan
        row["status"] = "error"
        row["message"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    except Exception as exc:  # noqa: BLE001 - a run's bug is its row, not the study's end
        if caused_by_interrupt(exc):     # (a Ctrl-C inside compiled code): not a row
            raise KeyboardInterrupt from exc
        for o in outputs:
            row[o.name] = math.nan
        row["status"] = "error"
        row["message"] = f"internal error {type(exc).__name__}: {' '.join(str(exc).split())}"
    row["runtime_s"] = time.perf_counter() - t0
    row["worker"] = _worker_name()
    if histories:
        row["_histories"] = histories
    return row


def _worker_name() -> str:
    if "distributed" in sys.modules:          # never import Dask for an in-process run
        try:
            from distributed import get_worker
            return get_worker().address
        except (ImportError, ValueError):
            pass
    return f"pid {os.getpid()}"


def _execute_task(pm: ParametricModel, run: Run, outputs: Sequence[Output]
                  ) -> dict[str, Any]:
    """The Dask task: one run."""
    return execute_run(pm, run, outputs)


# =======================================================================================
# Progress
# =======================================================================================

class RunProgress:
    """A one-line progress bar of a study on a stream (stderr by default), at most 10
    updates a second, in the style of :class:`elements.runner.ProgressBar`:
    ``[#####.....]  40/64 runs, 1 failed, 5.2 runs/s, 5 s left``."""

    def __init__(self, total: int, done: int = 0, stream=None, width: int = 30):
        self.total, self.done, self.failed = total, done, 0
        self.stream = stream or sys.stderr
        self.width = width
        self._start = time.monotonic()
        self._new = 0
        self._last = 0.0

    def __call__(self, row: Mapping[str, Any]) -> None:
        self.done += 1
        self._new += 1
        if row.get("status") != "ok":
            self.failed += 1
        now = time.monotonic()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = self.done / self.total if self.total else 1.0
        n = int(frac * self.width)
        rate = self._new / max(now - self._start, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else math.inf
        self.stream.write(f"\r  [{'#' * n}{'.' * (self.width - n)}] {self.done}/{self.total} "
                          f"runs, {self.failed} failed, {rate:.3g} runs/s, "
                          f"{left:.0f} s left   ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


# =======================================================================================
# Executors
# =======================================================================================

def _run_inprocess(pm, runs, outputs) -> Iterator[dict[str, Any]]:
    for run in runs:
        yield execute_run(pm, run, outputs)


def check_executor(executor: Any, workers: Any) -> None:
    """A ModelError unless ``executor`` is "inprocess", "local", a scheduler address
    ("tcp://HOST:PORT" or another Dask protocol) or a ``distributed.Client``, and
    ``workers`` None or a positive integer."""
    ok = executor in ("inprocess", "local") or \
        (isinstance(executor, str) and "://" in executor) or \
        type(executor).__name__ == "Client"
    if not ok:
        raise ModelError(f"unknown executor {executor!r}; valid: 'inprocess', 'local' (a "
                         f"Dask cluster on this machine), a scheduler address such as "
                         f"'tcp://127.0.0.1:8786', or a distributed.Client")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ModelError(f"workers must be a positive integer, got {workers!r}")


def _local_cluster(LocalCluster, n: int):
    """A Dask LocalCluster of ``n`` single-threaded worker processes that ignore SIGINT.

    A Ctrl-C in a terminal goes to every process of the foreground group: the workers
    printed a traceback each before this process closed the cluster. Here they are
    forked by multiprocessing's fork server (Dask's 'forkserver' method), started with
    SIGINT ignored, which its children keep (it restores its own start-up handlers in
    them); this process handles the interrupt and closes the cluster. Where the fork
    server is already running (started by other code), or off the main thread, the
    workers are as Dask makes them."""
    import logging

    import dask
    method = "spawn"
    if _forkserver_ignoring_sigint():
        method = "forkserver"
    with dask.config.set({"distributed.worker.multiprocessing-method": method}), \
            _interrupts_deferred():
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.CRITICAL)


@contextmanager
def _interrupts_deferred():
    """A SIGINT that comes inside is raised (KeyboardInterrupt) when the block ends, not
    in the middle of it (starting or closing a cluster half-way leaves its processes and
    threads in states that print tracebacks). Only in the main thread."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = signal.signal(signal.SIGINT, lambda sig, frame: caught.append(sig))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        raise KeyboardInterrupt


def _forkserver_ignoring_sigint() -> bool:
    """Start multiprocessing's fork server with SIGINT ignored (for the few
    milliseconds it takes to start it, this process ignores SIGINT too), preloading
    what the workers import; whether the fork server is ours (so its children ignore
    SIGINT)."""
    import multiprocessing.forkserver as fs
    import signal
    import threading
    if _FORKSERVER[0]:
        return True
    server = fs._forkserver
    if getattr(server, "_forkserver_pid", None) is not None or \
            threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "SIGINT") or sys.platform == "win32":
        return False
    fs.set_forkserver_preload(["distributed", "elements"])
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fs.ensure_running()
    finally:
        signal.signal(signal.SIGINT, old)
    _FORKSERVER[0] = True
    return True


_FORKSERVER = [False]


def _run_dask(pm, runs, outputs, executor, workers) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ModelError("a Dask executor needs dask.distributed: pip install "
                         "'dask[distributed]' (the 'study' extra), or use the "
                         "'inprocess' executor") from None
    own_client = own_cluster = None
    if isinstance(executor, Client):
        client = executor
    elif executor == "local":
        n = workers or os.cpu_count() or 1
        own_cluster = _local_cluster(LocalCluster, n)
        client = own_client = Client(own_cluster)
    else:
        try:
            client = own_client = Client(executor, timeout="10s")
        except OSError as exc:
            raise ModelError(f"cannot reach the Dask scheduler at {executor}: {exc}") from None
    futures = []
    try:
        nthreads = max(1, sum(client.nthreads().values()))
        window = max(16, 4 * nthreads)
        [pm_future] = client.scatter([pm], broadcast=True, hash=False)
        pending = list(runs)
        pending.reverse()
        ac = as_completed()
        in_flight = {}

        def submit(run):
            fut = client.submit(_execute_task, pm_future, run, outputs, pure=False,
                                key=f"bondgraph-run-{run.run_id}-{time.monotonic_ns()}")
            in_flight[fut.key] = run
            futures.append(fut)
            ac.add(fut)

        while pending and len(in_flight) < window:
            submit(pending.pop())
        for fut in ac:
            run = in_flight.pop(fut.key)
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker: the run's row
                if caused_by_interrupt(exc):
                    raise KeyboardInterrupt from exc
                row = {"run_id": run.run_id, "index": run.index, **run.values,
                       **{o.name: math.nan for o in outputs}, "status": "error",
                       "message": f"{type(exc).__name__} on the cluster: "
                                  f"{' '.join(str(exc).split())}",
                       "runtime_s": math.nan, "worker": ""}
            fut.release()
            if pending:
                submit(pending.pop())
            yield row
    finally:
        with _interrupts_deferred():
            for f in futures:
                if not f.done():
                    f.cancel()
            if own_client is not None:
                own_client.close()
            if own_cluster is not None:
                own_cluster.close()


# =======================================================================================
# The study
# =======================================================================================

@dataclass
class PlotRequest:
    """A figure written at the end of a study: ``output`` against ``x`` (and ``y``)."""

    file: str
    output: str
    x: str
    y: str | None = None


class Study:
    """A parameter study of one model.

    Parameters
    ----------
    model : str, ModelSpec, Mechanism, callable or ParametricModel
        See :class:`ParametricModel`.
    parameters : Grid or MonteCarlo
        What to vary. Parameter names: :meth:`ParametricModel.parameters`.
    outputs : sequence of Output
        What to keep from each run.
    solver : mapping, optional
        Overrides of the model's solver settings (``t_end`` in s, ``points``, ``rtol``,
        ...).
    name : str, optional
    plots : sequence of PlotRequest, optional
        Figures written into the output directory at the end.
    executor : str
        Default for :meth:`run`: ``"local"`` (a Dask LocalCluster with ``workers``
        processes, as many as cores by default), ``"inprocess"``, or a scheduler
        address (``"tcp://host:8786"``).
    workers : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> from elements import models
    >>> study = Study(models.three_body_spec, Grid({"J3.spring.k": [400.0, 600.0]}),
    ...               [Output("m2_z_end", "m2.z", "final")],
    ...               solver={"t_end": 0.05, "points": 6})
    >>> [r.values for r in study.runs()]
    [{'J3.spring.k': 400.0}, {'J3.spring.k': 600.0}]
    """

    def __init__(self, model: Any, parameters: Grid | MonteCarlo,
                 outputs: Sequence[Output], *, solver: Mapping[str, Any] | None = None,
                 name: str | None = None, plots: Sequence[PlotRequest] = (),
                 executor: str = "local", workers: int | None = None):
        if isinstance(model, ParametricModel):
            if solver:
                raise ModelError("give the solver overrides to the ParametricModel")
            self.model = model
        else:
            self.model = ParametricModel(model, solver=solver)
        if not isinstance(parameters, (Grid, MonteCarlo)):
            raise ModelError(f"parameters must be a Grid or a MonteCarlo, got "
                             f"{type(parameters).__name__}")
        self.parameters = parameters
        self.outputs = list(outputs)
        if not self.outputs:
            raise ModelError("a study needs at least one output")
        names = [o.name for o in self.outputs]
        dup = {n for n in names if names.count(n) > 1}
        clash = set(names) & (set(parameters.names) | set(_FIXED_COLUMNS))
        if dup or clash:
            raise ModelError(f"output names must be unique and differ from the parameter "
                             f"and fixed column names: {', '.join(sorted(dup | clash))}")
        self.notes = self.model.prepare(parameters.names)
        self.name = name or self.model.base.mechanism.name
        self.plots = list(plots)
        for p in self.plots:
            self._check_plot(p)
        self.executor = executor
        self.workers = workers

    def _check_plot(self, p: PlotRequest) -> None:
        if p.output not in [o.name for o in self.outputs]:
            raise ModelError(f"plot {p.file}: no output {p.output!r}; outputs: "
                             f"{', '.join(o.name for o in self.outputs)}")
        for ax in (p.x, p.y):
            if ax is not None and ax not in self.parameters.names:
                raise ModelError(f"plot {p.file}: {ax!r} is not a varied parameter; "
                                 f"parameters: {', '.join(self.parameters.names)}")

    def runs(self) -> list[Run]:
        """The planned runs, in order (stable ids)."""
        return self.parameters.runs()

    @property
    def columns(self) -> list[str]:
        """The results table's columns."""
        return ["run_id", "index", "status", *self.parameters.names,
                *[o.name for o in self.outputs], "runtime_s", "message", "worker"]

    def fingerprint(self) -> str:
        """A hash of what makes rows comparable: the model, solver settings, parameter
        names and outputs (not the plan: more samples may resume fewer)."""
        h = hashlib.sha256(self.model.fingerprint().encode())
        h.update(json.dumps([self.parameters.names,
                             [(o.name, o.describe()) for o in self.outputs]]).encode())
        return h.hexdigest()[:16]

    def run(self, out: str | os.PathLike, *, executor: Any = None,
            workers: int | None = None, resume: bool = False, overwrite: bool = False,
            progress: bool | Callable[[Mapping[str, Any]], None] | None = None,
            on_row: Callable[[Mapping[str, Any]], None] | None = None,
            quiet: bool = True) -> "StudyResult":
        """Run the study into directory ``out``.

        ``results.csv`` gets one row per run as runs finish (appended and flushed per
        row), so an interrupted study keeps what it finished. ``resume=True`` skips the
        runs already in it (by run id); ``overwrite=True`` starts anew. ``executor``:
        ``"inprocess"``, ``"local"`` (a Dask LocalCluster of ``workers`` processes,
        default: as many as cores; started and closed here), a scheduler address, or a
        ``distributed.Client``. ``progress``: True for the bar on stderr, or a callable
        taking each row. ``on_row`` is called with each row after it is written (an
        exception there, such as KeyboardInterrupt, stops the study; rows written stay).

        Also writes ``study.json`` (the plan and the notes), ``histories/*.npz`` for
        history outputs, ``results.parquet`` at the end when pyarrow is installed, and
        the plots. Returns the :class:`StudyResult`.

        Raises
        ------
        ModelError
            A directory that holds another study's results, or rows without
            ``resume``/``overwrite``.
        """
        out = os.fspath(out)
        executor = self.executor if executor is None else executor
        workers = self.workers if workers is None else workers
        check_executor(executor, workers)
        if os.path.exists(out) and not os.path.isdir(out):
            raise ModelError(f"study output {out!r} is an existing file; give a directory "
                             f"(it is created when missing)")
        runs = self.runs()
        os.makedirs(out, exist_ok=True)
        results = os.path.join(out, RESULTS)
        done: set[str] = set()
        if os.path.exists(results) and overwrite:
            for name in (RESULTS, STUDY_JSON, "results.parquet"):
                p = os.path.join(out, name)
                if os.path.exists(p):
                    os.remove(p)
            shutil.rmtree(os.path.join(out, HISTORIES), ignore_errors=True)
        elif os.path.exists(results):
            if not resume:
                raise ModelError(f"{out} already holds a study's results ({RESULTS}); pass "
                                 f"--resume to continue it or --overwrite to start anew")
            done = self._resume_ids(out)
        self._write_study_json(out, runs, executor, workers)
        todo = [r for r in runs if r.run_id not in done]
        if progress is True:
            bar: Callable | None = RunProgress(len(runs), len(runs) - len(todo))
        else:
            bar = progress if callable(progress) else None
        t0 = time.perf_counter()
        new = 0
        fresh = not os.path.exists(results)
        try:
            with open(results, "a", newline="", encoding="utf-8") as f:
                writer = csv.writer(f)
                if fresh:
                    writer.writerow(self.columns)
                    f.flush()
                if todo:
                    rows = (_run_inprocess(self.model, todo, self.outputs)
                            if executor == "inprocess" else
                            _run_dask(self.model, todo, self.outputs, executor, workers))
                    try:
                        for row in rows:
                            hist = row.pop("_histories", None)
                            if hist:
                                _write_history(out, row["run_id"], hist)
                            writer.writerow([_cell(row.get(c)) for c in self.columns])
                            f.flush()
                            os.fsync(f.fileno())
                            new += 1
                            if bar is not None:
                                bar(row)
                            if on_row is not None:
                                on_row(row)
                    finally:
                        if hasattr(rows, "close"):
                            rows.close()
        finally:
            if isinstance(bar, RunProgress):
                bar.close()
        elapsed = time.perf_counter() - t0
        res = read_results(out)
        res.elapsed, res.new_runs = elapsed, new
        if _has_pyarrow():
            res.write_parquet(os.path.join(out, "results.parquet"))
        if self.plots:
            if not have_matplotlib():
                print("matplotlib is not installed: no plots (pip install matplotlib)",
                      file=sys.stderr)
            else:
                for p in self.plots:
                    plot_study(res, p.output, p.x, p.y, os.path.join(out, p.file))
        return res

    def _resume_ids(self, out: str) -> set[str]:
        meta = os.path.join(out, STUDY_JSON)
        if os.path.exists(meta):
            try:
                old = json.load(open(meta, encoding="utf-8")).get("fingerprint")
            except (OSError, ValueError):
                old = None
            if old is not None and old != self.fingerprint():
                raise ModelError(f"{out} holds the results of a different study (its model, "
                                 f"solver settings, parameters or outputs differ); use "
                                 f"another directory or --overwrite")
        path = os.path.join(out, RESULTS)
        _drop_partial_line(path)
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            head = next(reader, None)
            if head != self.columns:
                raise ModelError(f"{path}: its columns ({', '.join(head or [])}) are not this "
                                 f"study's ({', '.join(self.columns)}); use another directory "
                                 f"or --overwrite")
            return {r[0] for r in reader if len(r) == len(head)}

    def _write_study_json(self, out, runs, executor, workers) -> None:
        meta = {"name": self.name, "fingerprint": self.fingerprint(),
                "model": self.model.source, "solver": repr(self.model.solver),
                "parameters": self.parameters.describe(),
                "units": {n: self.model.parameters()[n].unit
                          for n in self.parameters.names},
                "outputs": {o.name: o.describe() for o in self.outputs},
                "notes": self.notes, "n_runs": len(runs),
                "executor": executor if isinstance(executor, str) else repr(executor),
                "workers": workers, "columns": self.columns,
                "runs": [[r.run_id, r.values] for r in runs]}
        write_text(os.path.join(out, STUDY_JSON), json.dumps(meta, indent=1,
                                                             ensure_ascii=False))


_FIXED_COLUMNS = ("run_id", "index", "status", "runtime_s", "message", "worker")


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def _write_history(out: str, run_id: str, hist: Mapping[str, Mapping[str, np.ndarray]]
                   ) -> None:
    d = os.path.join(out, HISTORIES)
    os.makedirs(d, exist_ok=True)
    arrays = {}
    for oname, cols in hist.items():
        for c, arr in cols.items():
            arrays[c if c == "t" else f"{oname}/{c}"] = arr
    with atomic_path(os.path.join(d, f"{run_id}.npz"), ".npz") as tmp:
        np.savez(tmp, **arrays)


def _drop_partial_line(path: str) -> None:
    """A study killed while writing a row leaves a line without its newline: cut it (the
    run is done again)."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


# =======================================================================================
# The table
# =======================================================================================

class StudyResult:
    """The results table of a study, one row per run.

    Attributes
    ----------
    rows : list of dict
        In plan order (``index``); values parsed (floats; ``status``, ``message``,
        ``run_id``, ``worker`` as strings).
    parameters, outputs : list of str
        The varied parameters' and the outputs' column names.
    units : dict
        Units of the parameters.
    elapsed : float
        Wall time of the last :meth:`Study.run` (s); ``new_runs`` how many it ran.
    """

    def __init__(self, rows: list[dict[str, Any]], parameters: list[str],
                 outputs: list[str], units: Mapping[str, str] | None = None,
                 directory: str | None = None):
        self.rows = sorted(rows, key=lambda r: r["index"])
        self.parameters = parameters
        self.outputs = outputs
        self.units = dict(units or {})
        self.directory = directory
        self.elapsed = math.nan
        self.new_runs = 0

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> np.ndarray:
        """A column as an array (floats where numeric)."""
        vals = [r.get(name) for r in self.rows]
        try:
            return np.array(vals, dtype=float)
        except (TypeError, ValueError):
            return np.array(vals, dtype=object)

    @property
    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    @property
    def n_ok(self) -> int:
        return self.status_counts.get("ok", 0)

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The rows whose status is not ``ok``."""
        return [r for r in self.rows if r["status"] != "ok"]

    def history(self, run_id: str) -> dict[str, np.ndarray]:
        """The history file of a run (``t`` and ``<output>/<column>`` arrays)."""
        path = os.path.join(self.directory or ".", HISTORIES, f"{run_id}.npz")
        with np.load(path) as z:
            return {k: z[k] for k in z.files}

    def to_dataframe(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise BondGraphError("to_dataframe needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows)

    def write_parquet(self, path: str) -> str:
        """The table as a Parquet file (needs pyarrow)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        cols = {}
        for k in (self.rows[0].keys() if self.rows else []):
            vals = [r.get(k) for r in self.rows]
            if all(isinstance(v, (int, float)) for v in vals):
                cols[k] = pa.array(vals, type=pa.int64() if k == "index" else pa.float64())
            else:                               # text (a history's path; NaN if failed)
                cols[k] = pa.array([None if isinstance(v, float) and math.isnan(v)
                                    else str(v) for v in vals], type=pa.string())
        pq.write_table(pa.table(cols), path)
        return path

    def plot(self, output: str, x: str, y: str | None = None, path: str | None = None):
        """See :func:`plot_study`."""
        return plot_study(self, output, x, y, path)

    def __repr__(self) -> str:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(self.status_counts.items()))
        return f"StudyResult({len(self.rows)} runs: {counts or 'none'})"


def read_results(directory: str | os.PathLike) -> StudyResult:
    """Read a study's ``results.csv`` (and ``study.json``) from ``directory``; a partial
    last line (a killed study) is ignored."""
    directory = os.fspath(directory)
    path = os.path.join(directory, RESULTS)
    if not os.path.exists(path):
        raise ModelError(f"{directory}: no {RESULTS} (give the --out directory of a study)")
    meta = {}
    mpath = os.path.join(directory, STUDY_JSON)
    if os.path.exists(mpath):
        with open(mpath, encoding="utf-8") as f:
            meta = json.load(f)
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(text.splitlines())
    head = next(reader, [])
    params = list(meta.get("parameters", {}).get("values", {}) or
                  meta.get("parameters", {}).get("distributions", {}))
    outputs = list(meta.get("outputs", {}))
    rows = []
    for rec in reader:
        if len(rec) != len(head):
            continue
        row: dict[str, Any] = {}
        for k, v in zip(head, rec):
            if k in ("run_id", "status", "message", "worker"):
                row[k] = v
            elif k == "index":
                row[k] = int(v)
            else:
                try:
                    row[k] = float(v) if v != "" else math.nan
                except ValueError:
                    row[k] = v
        rows.append(row)
    return StudyResult(rows, params, outputs, meta.get("units"), directory)


# =======================================================================================
# Plots
# =======================================================================================

def plot_study(result: StudyResult, output: str, x: str, y: str | None = None,
               path: str | None = None):
    """A figure of ``output`` against parameter ``x`` (one line per combination of the
    other parameters, up to 8, else points), or against ``x`` and ``y``: a heat map with
    contour lines when the runs form a grid, else points coloured by the output. Failed
    runs are gaps. Writes ``path`` (PNG, ...) when given; returns the figure."""
    plt = pyplot("plot_study", to_file=path is not None)
    for name in (output, x) + ((y,) if y else ()):
        if not result.rows or name not in result.rows[0]:
            raise ModelError(f"plot: the table has no column {name!r}")
    z = result.column(output)
    xs = result.column(x)

    def label(p):
        u = result.units.get(p, "")
        return f"{p} ({u})" if u else p

    fig, ax = plt.subplots(figsize=(6, 4))
    if y is None:
        others = [p for p in result.parameters if p not in (x,)]
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(result.rows):
            groups.setdefault(tuple(r.get(p) for p in others), []).append(i)
        if len(groups) <= 8:
            for key, idx in groups.items():
                idx = sorted(idx, key=lambda i: xs[i])
                lab = ", ".join(f"{p} = {v:.4g}" for p, v in zip(others, key)) or None
                ax.plot(xs[idx], z[idx], "o-", ms=3, lw=1.2, label=lab)
            if len(groups) > 1:
                ax.legend(fontsize=7)
        else:
            ax.plot(xs, z, ".", ms=4)
        ax.set_xlabel(label(x))
        ax.set_ylabel(output)
    else:
        ys = result.column(y)
        ux, uy = np.unique(xs), np.unique(ys)
        if ux.size * uy.size == len(result.rows) and ux.size > 1 and uy.size > 1:
            Z = np.full((uy.size, ux.size), np.nan)
            Z[np.searchsorted(uy, ys), np.searchsorted(ux, xs)] = z
            mesh = ax.pcolormesh(ux, uy, np.ma.masked_invalid(Z), shading="nearest",
                                 cmap="viridis")
            if np.isfinite(Z).sum() >= 4 and np.nanmax(Z) > np.nanmin(Z):
                ax.contour(ux, uy, np.ma.masked_invalid(Z), colors="w", linewidths=0.6)
        else:
            mesh = ax.scatter(xs, ys, c=z, s=14, cmap="viridis")
        fig.colorbar(mesh, ax=ax, label=output)
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(y))
    n_bad = len(result.failures)
    ax.set_title(f"{output}" + (f" ({n_bad} failed runs not shown)" if n_bad else ""),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    if path is not None:
        ext = os.path.splitext(os.fspath(path))[1]
        try:
            with atomic_path(path, ext) as tmp:
                fig.savefig(tmp, dpi=120, format=ext[1:].lower() or "png")
        finally:
            plt.close(fig)
    return fig


# =======================================================================================
# Study files
# =======================================================================================

def load_study(path: str | os.PathLike) -> Study:
    """Read a study file (TOML; docs/studies.md).

    Raises
    ------
    StudyFileError
        Naming the file, the table and the key, and saying what is valid.
    """
    path = os.fspath(path)
    return loads_study(read_text(path, "study file", StudyFileError), path)


def _fail(path: str, where: str, key: str, what: str):
    raise StudyFileError(f"{path}: [{where}] '{key}': {what}")


def _num(path, where, key, v, *, positive=False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        _fail(path, where, key, f"must be a finite number, got {v!r}")
    if positive and v <= 0:
        _fail(path, where, key, f"must be positive, got {v!r}")
    return float(v)


def _only(path, where, table, allowed):
    if not isinstance(table, dict):
        _fail(path, where, where, "must be a table")
    for k in table:
        if k not in allowed:
            _fail(path, where, k, f"unknown key; valid keys: {', '.join(sorted(allowed))}")


GRID_FORMS = ("values", "linspace", "logspace")
DISTRIBUTIONS = {"uniform": (Uniform, ("low", "high")), "normal": (Normal, ("mean", "std")),
                 "lognormal": (LogNormal, ("median", "sigma")), "choice": (Choice, ("values",))}


def _parameter(path: str, name: str, spec: Any):
    where = "parameters"
    if isinstance(spec, list):
        spec = {"values": spec}
    if not isinstance(spec, dict) or not spec:
        _fail(path, where, name, "must be a table: { values = [..] }, { linspace = [start, "
                                 "stop, n] }, { logspace = [start, stop, n] } or "
                                 "{ distribution = \"uniform\", low, high } (normal: mean, "
                                 "std; lognormal: median, sigma; choice: values)")
    if "distribution" in spec:
        kind = spec["distribution"]
        if kind not in DISTRIBUTIONS:
            _fail(path, where, f"{name}.distribution", f"unknown value {kind!r}; valid: "
                                                       f"{', '.join(DISTRIBUTIONS)}")
        cls, keys = DISTRIBUTIONS[kind]
        _only(path, f"{where} {name}", spec, {"distribution", *keys})
        args = []
        for k in keys:
            if k not in spec:
                _fail(path, f"{where} {name}", k, f"missing; a {kind} distribution needs "
                                                  f"{', '.join(keys)}")
            if k == "values":
                vs = spec[k]
                if not isinstance(vs, list) or not vs:
                    _fail(path, f"{where} {name}", k, "must be a non-empty list of numbers")
                args.append(tuple(_num(path, f"{where} {name}", k, v) for v in vs))
            else:
                args.append(_num(path, f"{where} {name}", k, spec[k],
                                 positive=k in ("std", "sigma", "median")))
        if kind == "uniform" and args[1] <= args[0]:
            _fail(path, f"{where} {name}", "high", f"must be greater than low ({args[0]})")
        return "mc", cls(*args)
    forms = [k for k in GRID_FORMS if k in spec]
    _only(path, f"{where} {name}", spec, set(GRID_FORMS) | {"distribution"})
    if len(forms) != 1:
        _fail(path, where, name, "give exactly one of values, linspace, logspace (a grid) "
                                 "or distribution (Monte Carlo)")
    form = forms[0]
    v = spec[form]
    if form == "values":
        if not isinstance(v, list) or not v:
            _fail(path, f"{where} {name}", "values", "must be a non-empty list of numbers")
        return "grid", [_num(path, f"{where} {name}", "values", x) for x in v]
    if not isinstance(v, list) or len(v) != 3 or isinstance(v[2], bool) or \
            not isinstance(v[2], int) or v[2] < 1:
        _fail(path, f"{where} {name}", form, f"must be [start, stop, n] with n a positive "
                                             f"integer, got {v!r}")
    a = _num(path, f"{where} {name}", form, v[0])
    b = _num(path, f"{where} {name}", form, v[1])
    if form == "logspace":
        if a <= 0 or b <= 0:
            _fail(path, f"{where} {name}", form, "start and stop must be positive (the "
                                                 "values themselves, spaced geometrically)")
        return "grid", list(np.geomspace(a, b, v[2]))
    return "grid", list(np.linspace(a, b, v[2]))


def loads_study(text: str, path: str = "<string>") -> Study:
    """Parse study-file text (see :func:`load_study`); the model file's path is relative
    to ``path``'s directory."""
    doc = read_toml(text, path, StudyFileError)
    _only(path, "top level", doc, {"study", "solver", "parameters", "output", "executor",
                                   "plot"})
    st = doc.get("study")
    if st is None:
        _fail(path, "study", "study", "missing; give [study] with model = \"MODEL.toml\"")
    _only(path, "study", st, {"name", "model", "samples", "seed"})
    if "model" not in st or not isinstance(st["model"], str):
        _fail(path, "study", "model", "missing or not a string; the model file, relative "
                                      "to the study file")
    model = os.path.normpath(os.path.join(os.path.dirname(path), st["model"]))
    if not os.path.exists(model):
        _fail(path, "study", "model", f"no such model file {st['model']!r} (looked for "
                                      f"{model})")
    name = st.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str):
        _fail(path, "study", "name", "must be a string")
    solver = doc.get("solver", {})
    _only(path, "solver", solver, {"t_start", "t_end", "points", "method", "rtol", "atol",
                                   "stabilization", "projection"})
    params = doc.get("parameters")
    if not params:
        _fail(path, "parameters", "parameters", "missing or empty; give at least one "
                                                "parameter to vary")
    if not isinstance(params, dict):
        _fail(path, "parameters", "parameters", "must be a table")
    parsed = {k: _parameter(path, k, v) for k, v in params.items()}
    kinds = {k for k, _ in parsed.values()}
    if kinds == {"grid", "mc"}:
        _fail(path, "parameters", next(k for k, (kd, _) in parsed.items() if kd == "mc"),
              "a study is either a grid (values, linspace, logspace) or Monte Carlo "
              "(distributions): do not mix them")
    if kinds == {"mc"}:
        if "samples" not in st:
            _fail(path, "study", "samples", "missing; a Monte Carlo study needs the number "
                                            "of samples")
        n = st["samples"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            _fail(path, "study", "samples", f"must be a positive integer, got {n!r}")
        seed = st.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            _fail(path, "study", "seed", f"must be a non-negative integer, got {seed!r}")
        plan: Grid | MonteCarlo = MonteCarlo({k: d for k, (_, d) in parsed.items()}, n, seed)
    else:
        for k in ("samples", "seed"):
            if k in st:
                _fail(path, "study", k, "only for Monte Carlo (distributions)")
        plan = Grid({k: v for k, (_, v) in parsed.items()})
    outs = doc.get("output")
    if not isinstance(outs, list) or not outs:
        _fail(path, "output", "output", "missing; give at least one [[output]] table "
                                        "(two brackets)")
    outputs = []
    for i, o in enumerate(outs):
        where = f"output {i + 1}"
        _only(path, where, o, {"name", "columns", "reduce", "quantity"})
        if not isinstance(o.get("name"), str):
            _fail(path, where, "name", "missing or not a string")
        where = f"output '{o['name']}'"
        cols = o.get("columns", [])
        if isinstance(cols, str):
            cols = [cols]
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            _fail(path, where, "columns", "must be a list of column names (e.g. [\"m2.x\"])")
        if "quantity" in o and o["quantity"] not in QUANTITIES:
            _fail(path, where, "quantity", f"unknown value {o['quantity']!r}; valid: "
                                           f"{', '.join(QUANTITIES)}")
        if "reduce" in o and o["reduce"] not in REDUCTIONS:
            _fail(path, where, "reduce", f"unknown value {o['reduce']!r}; valid: "
                                         f"{', '.join(REDUCTIONS)}")
        try:
            outputs.append(Output(o["name"], tuple(cols), o.get("reduce", "final"),
                                  o.get("quantity")))
        except ModelError as exc:
            _fail(path, where, "columns" if "quantity" not in o else "quantity", str(exc))
    ex = doc.get("executor", {})
    _only(path, "executor", ex, {"type", "workers", "address"})
    etype = ex.get("type", "local")
    if etype not in ("inprocess", "local", "scheduler"):
        _fail(path, "executor", "type", f"unknown value {etype!r}; valid: inprocess, local, "
                                        f"scheduler")
    workers = ex.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        _fail(path, "executor", "workers", f"must be a positive integer, got {workers!r}")
    if etype == "scheduler":
        if not isinstance(ex.get("address"), str):
            _fail(path, "executor", "address", "missing; a scheduler executor needs the "
                                               "address, e.g. \"tcp://127.0.0.1:8786\"")
        executor = ex["address"]
    else:
        if "address" in ex:
            _fail(path, "executor", "address", "only with type = \"scheduler\"")
        executor = etype
    plots = []
    for i, p in enumerate(doc.get("plot", [])):
        where = f"plot {i + 1}"
        _only(path, where, p, {"file", "output", "x", "y"})
        for k in ("file", "output", "x"):
            if not isinstance(p.get(k), str):
                _fail(path, where, k, "missing or not a string")
        try:
            output_name(p["file"], PLOT_SUFFIXES, STUDY_FILES)
        except ValueError as exc:
            _fail(path, where, "file", str(exc))
        if "y" in p and not isinstance(p["y"], str):
            _fail(path, where, "y", "must be a parameter name")
        plots.append(PlotRequest(p["file"], p["output"], p["x"], p.get("y")))
    try:
        pm = ParametricModel(model, solver=solver)
    except StudyFileError:
        raise
    except ModelFileError as exc:
        msg = str(exc)
        if msg.startswith(model):            # the solver overrides are this file's
            msg = path + msg[len(model):]
        raise StudyFileError(msg) from None
    reg = pm.parameters()
    for k in parsed:
        if k not in reg:
            _fail(path, "parameters", k, f"no such parameter of model {st['model']}; valid: "
                                         f"{', '.join(reg)}")
    try:
        return Study(pm, plan, outputs, name=name, plots=plots, executor=executor,
                     workers=workers)
    except StudyFileError:
        raise
    except ModelError as exc:
        where = "plot" if str(exc).startswith("plot") else "output"
        raise StudyFileError(f"{path}: [{where}]: {exc}") from None
