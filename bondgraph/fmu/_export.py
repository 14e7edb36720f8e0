""":func:`export_fmu`: an assembled model as an FMI 2.0 FMU (model exchange and
co-simulation), standalone C with no Python at run time.

The FMU's C evaluates what the Python model evaluates:

- a mechanism whose whole evaluation is compiled (the element library's models) gets the
  fused engine: the compiled kernels the project runs (the velocity and acceleration
  stages, the kept system's LU, the element library's program and quaternion rates)
  ported to C and driven by the same packed arrays (:mod:`._fused`);
- any other model gets the dense engine: the reduction of
  :mod:`bondgraph.reduction` in C, with its laws (nonlinear energies, resistor laws
  solved by Newton's method in algebraic loops, sources of time) printed from their
  sympy expressions (:mod:`._dense`).

What has no C form is refused by name: a source given as a Python function (name it as
an input instead), a Python-callable modulus, a rate function of a kinematic state.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..element import StateFunction, StateView, TimeFunction
from ..errors import ModelError
from ..linearization import _input_components
from ..primitives.sources import SourceLaw
from ..reduction import StateSpaceModel
from ..scales import nominal_scales
from ..stabilization import Baumgarte
from ._build import LICENSE, RUNTIME, build_fmu, runtime_text
from ._cwriter import array, scalar, string
from ._dense import dense_c, dense_refusal
from ._fused import FUSED_SOURCES, fused_c, fused_parts, no_rate_c
from ._variables import Interface, model_description, model_identifier, parameter_users, \
    python_source, source_breaks, sources_c, written_value

__all__ = ["export_fmu", "ExportedFMU", "CS_SOLVERS"]

CS_SOLVERS = ("dopri5", "rk4")
"""The co-simulation solvers: Dormand and Prince's adaptive 5(4) pair, or the classical
Runge-Kutta method with fixed steps."""


@dataclass(frozen=True)
class ExportedFMU:
    """What :func:`export_fmu` wrote.

    Attributes
    ----------
    path : str
        The FMU file.
    identifier : str
        Its model identifier (the binary's name and the C functions' prefix).
    guid : str
    engine : str
        ``"fused"`` (the compiled mechanism evaluation) or ``"dense"`` (the dense
        reduction).
    states, tunable, fixed, inputs, outputs : tuple of str
        The variables' names: state components, parameters a tool may set, parameters
        built into the exported structure (constants), inputs, outputs.
    replaced : tuple of str
        Parameters that only an input's source used (the input replaces them).
    binary : str or None
        The binary's path inside the archive (None: a source-only FMU).
    """

    path: str
    identifier: str
    guid: str
    engine: str
    states: tuple[str, ...]
    tunable: tuple[str, ...]
    fixed: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    replaced: tuple[str, ...]
    binary: str | None


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("vector-bondgraph")
    except Exception:                     # noqa: BLE001 - (a checkout that is not installed)
        return "(checkout)"


def _state_vector(model: StateSpaceModel, x0) -> np.ndarray:
    if isinstance(x0, Mapping):
        return model.initial_state(x0)
    x = np.asarray(x0, dtype=float)
    if x.shape != (model.n_states,) or not np.all(np.isfinite(x)):
        raise ModelError(f"x0 must be a mapping of state names to values or a finite vector "
                         f"of {model.n_states} values (states "
                         f"{', '.join(model.state_names)}), got shape {x.shape}")
    return x


def _inputs_held(model: StateSpaceModel, inputs, t0: float, x0: np.ndarray
                 ) -> StateSpaceModel:
    """``model``, or a copy of it (sharing everything but its sources) whose sources
    named as inputs in all their components hold their value at (t0, x0): what the
    tool sets replaces their laws (a StateFunction's feedback moves into the tool)."""
    _, where = _input_components(model, list(inputs))
    comps: dict[str, set[int]] = {}
    for src, i in where:
        comps.setdefault(src, set()).add(i)
    held = {src for src, c in comps.items() if model.sources[src].constant is None and
            len(c) == model.graph.element(src).dim}
    if not held:
        return model
    m = copy.copy(model)
    m.sources = dict(model.sources)
    m._source_plan = None
    m._sparse = None
    view = StateView(x0, model.state_slices)
    for src in held:
        dim = model.graph.element(src).dim
        try:
            value = np.array(model.sources[src].value(t0, view), dtype=float).reshape(dim)
        except Exception as exc:          # noqa: BLE001 - a user's function
            raise ModelError(f"input '{src}': its value at the initial state (the input's "
                             f"start value) cannot be evaluated: {exc}") from None
        m.sources[src] = SourceLaw(lambda t, s, v=value: v,
                                   lambda t, s, z=np.zeros(dim): z, False, constant=value)
    m._state_dependent_u1 = [n for n, law in m.sources.items() if law.state_dependent]
    return m


def _per_state(model, values, what: str) -> np.ndarray:
    if values is None:
        return np.ones(model.n_states)
    if isinstance(values, Mapping):
        out = np.ones(model.n_states)
        for k, v in values.items():
            if k not in model.state_slices:
                raise ModelError(f"{what}: no state {k!r}; states: "
                                 f"{', '.join(model.state_names)}")
            out[model.state_slices[k]] = v
    else:
        out = np.broadcast_to(np.asarray(values, dtype=float), (model.n_states,)).copy()
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ModelError(f"{what} must be positive and finite")
    return out


def export_fmu(model: StateSpaceModel, path: str | os.PathLike, *, x0: Any,
               inputs: Sequence[str] = (), outputs: Sequence[str] | Mapping[str, Any] = (),
               stabilization: Baumgarte | None = None, name: str | None = None,
               description: str | None = None, units: Mapping[str, str] | None = None,
               descriptions: Mapping[str, str] | None = None, nominals: Any = None,
               start_time: float = 0.0, stop_time: float = 1.0, tolerance: float = 1e-8,
               cs_solver: str = "dopri5", cs_step: float | None = None,
               compile: bool = True, cc: str | None = None) -> ExportedFMU:
    """Write ``model`` as an FMI 2.0 FMU (model exchange and co-simulation) at ``path``.

    Parameters
    ----------
    model : StateSpaceModel
        The assembled model (a mechanism's is ``MechanismModel.model``; the element
        library's :func:`elements.export_fmu` names its joints).
    path : str
        The ``.fmu`` file to write (replaced if it exists).
    x0 : mapping of state name to value, or vector (n_states,)
        The initial state: the states' start values.
    inputs : sequence of str
        Known sources (Se, Sf; ``name[i]`` for one component of a vector source) whose
        value the tool sets (a motor voltage, a joint effort). A parameter that only
        such a source used is replaced by the input.
    outputs : sequence of str, or mapping of str to str or to [(str, float), ...]
        States (or ``state[i]``), ``<bond>.e``, ``<bond>.f``, ``<element>.e``,
        ``<element>.f`` (a one-port's bond), ``Se*_...`` (constraint efforts), as
        :func:`bondgraph.linearize` names outputs. A mapping gives each output its FMU
        name: the value is one such quantity, or a list of (quantity, coefficient), a
        linear combination (a reaction force summed over bonds).
    stabilization : Baumgarte or None
        The constraint stabilisation the Python run would use (``simulate``'s).
    name, description : str
        The model's name (default the graph's) and description.
    units, descriptions : mapping of variable name to str
        Units and descriptions of states, inputs and outputs (parameters carry their
        own from the model).
    nominals : mapping or vector, optional
        Each state's nominal magnitude: a tool's absolute tolerance is its relative
        tolerance times the nominal (fmpy's CVode does so; so does the co-simulation
        solver). Default: the scales :func:`simulate` takes its tolerances from
        (:func:`bondgraph.scales.nominal_scales` over the experiment span at x0; a
        mapping gives some states and leaves the others at 1).
    start_time, stop_time, tolerance : float
        The default experiment (s, s, relative tolerance).
    cs_solver : {"dopri5", "rk4"}
        The co-simulation solver: adaptive Dormand-Prince 5(4) at the tool's tolerance
        (else ``tolerance``), or the classical Runge-Kutta method with fixed steps.
    cs_step : float, optional
        RK4's largest step (s); None: one step per communication step.
    compile : bool
        Compile the binary for this platform (False: a source-only FMU).
    cc : str, optional
        The C compiler (default ``$CC``, else ``cc``, ``gcc`` or ``clang``).

    Returns
    -------
    ExportedFMU

    Raises
    ------
    ModelError
        For what cannot be exported, naming the element and why (a source given as a
        Python function, a callable modulus, ...), or an unknown input or output.
    FMUBuildError
        When the binary cannot be compiled: the sources are kept in a folder beside
        ``path``, which the error names.
    """
    if not isinstance(model, StateSpaceModel):
        raise ModelError(f"export_fmu expects an assembled StateSpaceModel (a mechanism's "
                         f"MechanismModel.model, or elements.export_fmu), got "
                         f"{type(model).__name__}")
    path = os.fspath(path)
    if not path.lower().endswith(".fmu"):
        raise ModelError(f"the FMU's file name must end in .fmu, got {path!r}")
    if cs_solver not in CS_SOLVERS:
        raise ModelError(f"cs_solver must be one of {', '.join(CS_SOLVERS)}, got "
                         f"{cs_solver!r}")
    if cs_step is not None and not (np.isfinite(cs_step) and cs_step > 0):
        raise ModelError(f"cs_step must be a positive number of seconds, got {cs_step!r}")
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ModelError(f"tolerance must be positive, got {tolerance!r}")
    if stabilization is not None and not isinstance(stabilization, Baumgarte):
        raise ModelError(f"stabilization must be a Baumgarte or None, got "
                         f"{type(stabilization).__name__}")
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(outputs, str):
        outputs = [outputs]
    if isinstance(inputs, Mapping):
        raise ModelError("inputs: give the sources' names (a sequence), not a mapping")
    x0 = _state_vector(model, x0)
    nom = _per_state(model, nominals, "nominals") if nominals is not None else \
        nominal_scales(model, (start_time, stop_time), np.asarray(x0, dtype=float))
    model = _inputs_held(model, inputs, float(start_time), x0)
    for n, law in model.sources.items():
        el = model.graph.element(n)
        if isinstance(written_value(el), (TimeFunction, StateFunction)) and \
                law.constant is None:
            raise ModelError(python_source(el))
    name = name or model.graph.name
    identifier = model_identifier(name)

    # the engine
    users = parameter_users(model)
    sources = set(model.sources)
    D = fast = None
    why_fused = "the model has no constraint sources"
    if model.n_u2:
        D, parts, fast = fused_parts(model, x0, stabilization)
        if D is None:
            why_fused = parts
    if D is not None:
        engine = "fused"
        tunable = {p for p, u in users.items() if u and set(u) <= sources}
    else:
        why = dense_refusal(model, stabilization)
        if why:
            extra = f" (the compiled mechanism evaluation does not apply either: " \
                    f"{why_fused})" if model.n_u2 else ""
            raise ModelError(f"model '{model.graph.name}' cannot be exported as an FMU: "
                             f"{why}{extra}")
        engine = "dense"
        tunable = {p for p, u in users.items() if u}
    iface = Interface.build(model, x0, inputs, outputs, tunable, dict(units or {}), nom,
                            dict(descriptions or {}))

    # the generated model file
    engine_files = FUSED_SOURCES if engine == "fused" else ("bg_dense.c", "bg_dense.h")
    body = [sources_c(model, iface)]
    breaks, starts = source_breaks(model, iface, start_time, stop_time)
    if engine == "fused":
        body.append(fused_c(D, fast, parts, model))
    else:
        body.append(dense_c(model, iface, x0, stabilization))
    pnames = [v.name for v in iface.parameters]
    decl = [
        scalar("int", "BG_NX", model.n_states), scalar("int", "BG_NP", len(pnames)),
        scalar("int", "BG_NU", len(iface.inputs)), scalar("int", "BG_NY", len(iface.outputs)),
        scalar("int", "BG_NW", model.layout.n_var), scalar("int", "BG_NU2", model.n_u2),
        array("double", "BG_X0", x0), array("double", "BG_NOMINAL", nom),
        array("double", "BG_P0", [v.start for v in iface.parameters]),
        array("double", "BG_U0", [v.start for v in iface.inputs]),
        array("unsigned char", "BG_P_TUNABLE",
              [int(v.causality == "parameter") for v in iface.parameters]),
        array("unsigned char", "BG_P_POSITIVE",
              [int(model.parameters.info(n).positive) for n in pnames]),
        "const char *const BG_P_NAME[] = {" + (", ".join(string(n) for n in pnames) or "0")
        + "};\n",
        "const char *const BG_X_NAME[] = {" + (", ".join(string(v.name)
                                                   for v in iface.states) or "0") + "};\n",
        array("int", "BG_Y_OFF", np.r_[0, np.cumsum([len(t) for t in iface.output_where])]),
        array("int", "BG_Y_KIND", [k for t in iface.output_where for k, _, _ in t]),
        array("int", "BG_Y_INDEX", [i for t in iface.output_where for _, i, _ in t]),
        array("double", "BG_Y_COEF", [c for t in iface.output_where for _, _, c in t]),
        scalar("int", "BG_CS_SOLVER", CS_SOLVERS.index(cs_solver)),
        scalar("double", "BG_CS_STEP", cs_step or 0.0),
        scalar("double", "BG_CS_RTOL", tolerance),
        scalar("int", "BG_NBREAKS", breaks.size), array("double", "BG_BREAKS", breaks),
        array("double", "BG_STARTS", starts)]
    head = ("/* The model file of the FMU '" + identifier + "', written by vector-bondgraph "
            + _version() + " (bondgraph.fmu): the data and laws of model '" +
            model.graph.name.replace("*/", "* /") + "'. */\n#include <math.h>\n"
            "#include <stdint.h>\n#include \"bg_runtime.h\"\n#include \"" +
            engine_files[1] + "\"\n\n")
    model_c = head + "".join(decl) + "".join(body)
    files = {n: runtime_text(n) for n in RUNTIME}
    for n in engine_files:
        files[n] = runtime_text(n)
    if engine == "fused":
        rate = parts["rate_c"]
        files["bg_program.c"] = ("#include <math.h>\n#include <stdint.h>\n"
                                 "#include \"bg_fused.h\"\n\n" + parts["program_c"]() +
                                 (rate() if rate is not None else no_rate_c()))
    files[LICENSE] = runtime_text(LICENSE)
    guid_text = model_c + "".join(files[n] for n in sorted(files))
    digest = hashlib.sha1(guid_text.encode("utf-8")).hexdigest()
    guid = "{" + "-".join([digest[:8], digest[8:12], digest[12:16], digest[16:20],
                           digest[20:32]]) + "}"
    model_c = model_c.replace("const int BG_NX", f"const char BG_GUID[] = {string(guid)};\n"
                              f"const char BG_MODEL_NAME[] = {string(name)};\n"
                              "const int BG_NX", 1)
    files["model.c"] = model_c
    desc = description or (f"{name}: a vector bond graph model ({model.n_states} state "
                           f"components), exported by vector-bondgraph")
    experiment = {"startTime": start_time, "stopTime": stop_time, "tolerance": tolerance}
    if cs_step:
        experiment["stepSize"] = cs_step
    xml = model_description(
        iface, name=name, identifier=identifier, guid=guid, description=desc,
        tool=f"vector-bondgraph {_version()}",
        when=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        sources=sorted(n for n in files if n.endswith(".c")), experiment=experiment)
    binary = build_fmu(path, identifier, xml, files, compile_binary=compile, cc=cc)
    return ExportedFMU(
        path=path, identifier=identifier, guid=guid, engine=engine,
        states=tuple(v.name for v in iface.states),
        tunable=tuple(v.name for v in iface.parameters if v.causality == "parameter"),
        fixed=tuple(v.name for v in iface.parameters if v.causality != "parameter"),
        inputs=tuple(v.name for v in iface.inputs),
        outputs=tuple(v.name for v in iface.outputs), replaced=tuple(iface.replaced),
        binary=binary)
