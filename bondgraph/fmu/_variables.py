"""What an exported FMU shows a tool: its variables, the sources' values in C, and its
``modelDescription.xml``.

- :class:`Interface`: the states (start values from the model's initial state, nominal
  magnitudes), their derivatives, the parameters (tunable where the FMU's C recomputes
  everything they enter; otherwise constants, fixed at export), the inputs (sources the
  user names; a parameter that only such a source used is replaced by the input) and
  the outputs (states, bond efforts and flows, constraint efforts: the names of
  :func:`bondgraph.linearization.output_location`).
- :func:`sources_c`: the C function ``bg_sources`` (U_1 and dU_1/dt from time,
  parameters and inputs: a source's value must be a number or a sympy expression of
  time and parameters; a Python function is refused by name).
- :func:`model_description`: the XML (FMI 2.0, model exchange and co-simulation).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from ..bonds import component_names
from ..element import StateFunction, TimeFunction
from ..errors import ModelError
from ..laws import TIME, TimeLaw, merged_segments
from ..linearization import _input_components, output_location
from ._cwriter import CFunction, array

__all__ = ["Variable", "Interface", "sources_c", "source_breaks", "model_description", "symbols_of",
           "parameter_users", "python_source", "written_value", "model_identifier"]


@dataclass(frozen=True)
class Variable:
    """One scalar variable of the FMU (FMI 2.0 ScalarVariable, type Real)."""

    name: str
    value_reference: int
    causality: str                  # local, parameter, input, output
    variability: str                # continuous, tunable, constant
    initial: str | None             # exact, calculated, None (inputs)
    start: float | None
    unit: str = ""
    description: str = ""
    derivative: int | None = None   # 1-based index of the state it is the derivative of
    nominal: float | None = None


def symbols_of(value) -> set[str]:
    """The names of the sympy symbols in an element's parameter value (numbers, arrays,
    sympy expressions and matrices, lists of them); nothing for callables."""
    if isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return {s.name for s in value.free_symbols}
    if isinstance(value, (list, tuple, np.ndarray)):
        out: set[str] = set()
        for v in np.asarray(value, dtype=object).ravel():
            out |= symbols_of(v)
        return out
    return set()


def parameter_users(model) -> dict[str, list[str]]:
    """Parameter name -> the elements whose laws use it (in element order)."""
    users: dict[str, list[str]] = {n: [] for n in model.parameters}
    for name, el in model.graph.elements.items():
        used = set()
        for v in el.parameters().values():
            used |= symbols_of(v)
        for law_attr in ("energy", "effort_law", "flow_law"):
            used |= symbols_of(getattr(el, law_attr, None))
        for p in used & set(users):
            users[p].append(name)
    return users


@dataclass
class Interface:
    """The FMU's variables (see the module docstring). Made by :meth:`build`.

    Attributes
    ----------
    states, parameters, inputs, outputs : list of Variable
        In value-reference order (states, their derivatives, parameters, inputs,
        outputs).
    input_of : dict of int to int
        U_1 component -> input index.
    parameter_index : dict of str to int
        Parameter name -> its index in the FMU's parameter vector.
    output_where : list of list of (kind, index, coefficient)
        Each output's terms: kind 0 state, 1 bond variable, 2 constraint effort.
    """

    states: list[Variable] = field(default_factory=list)
    derivatives: list[Variable] = field(default_factory=list)
    parameters: list[Variable] = field(default_factory=list)
    inputs: list[Variable] = field(default_factory=list)
    outputs: list[Variable] = field(default_factory=list)
    input_of: dict[int, int] = field(default_factory=dict)
    parameter_index: dict[str, int] = field(default_factory=dict)
    output_where: list[list[tuple[int, int, float]]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)

    @property
    def variables(self) -> list[Variable]:
        return self.states + self.derivatives + self.parameters + self.inputs + self.outputs

    @classmethod
    def build(cls, model, x0: np.ndarray, inputs: Sequence[str], outputs: Sequence[str],
              tunable: set[str], units: Mapping[str, str], nominals: np.ndarray,
              descriptions: Mapping[str, str]) -> "Interface":
        """The interface of ``model`` (see :func:`bondgraph.fmu.export_fmu` for the
        arguments); ``tunable``: the parameters the engine recomputes."""
        out = cls()
        names = component_names([(n, s.stop - s.start) for n, s in model.state_slices.items()])
        vr = 0
        for i, n in enumerate(names):
            out.states.append(Variable(n, vr, "local", "continuous", "exact", float(x0[i]),
                                       units.get(n, ""), descriptions.get(n, "state"),
                                       nominal=float(nominals[i])))
            vr += 1
        for i, n in enumerate(names):
            unit = units.get(f"der({n})", "")
            out.derivatives.append(Variable(f"der({n})", vr, "local", "continuous",
                                            "calculated", None, unit,
                                            f"time derivative of {n}", derivative=i + 1))
            vr += 1
        # inputs: source components, in U_1's layout
        in_names, where = _input_components(model, list(inputs))
        u1_off, start = {}, 0
        for n in model.sources:
            u1_off[n] = start
            start += model.graph.element(n).dim
        users = parameter_users(model)
        input_sources = {src for src, _ in where}
        starts = []
        for (src, comp), label in zip(where, in_names):
            el = model.graph.element(src)
            law = model.sources[src]
            if law.constant is None:
                raise ModelError(f"input {label!r}: source '{src}' varies with time or the "
                                 f"state; an input takes a constant value that the "
                                 f"simulation tool sets (give the source a number or a "
                                 f"parameter)")
            starts.append(float(law.constant[comp]))
            out.input_of[u1_off[src] + comp] = len(out.input_of)
            sym = symbols_of(el.value)
            if not units.get(label) and len(sym) == 1:
                (pname,) = sym
                if pname in model.parameters:
                    units = {**units, label: model.parameters.info(pname).unit}
        # parameters: every one of the model's but those only the inputs' sources used
        for pname in model.parameters:
            used_by = users.get(pname, [])
            if used_by and set(used_by) <= input_sources:
                out.replaced.append(pname)
                continue
            info = model.parameters.info(pname)
            value = float(model.parameters[pname])
            k = len(out.parameters)
            out.parameter_index[pname] = k
            if pname in tunable:
                out.parameters.append(Variable(pname, vr + k, "parameter", "tunable",
                                               "exact", value, info.unit,
                                               info.meaning or "parameter"))
            else:
                why = ("used by no equation of the exported model" if not used_by else
                       "built into the exported structure; export again to change it")
                meaning = f"{info.meaning}; " if info.meaning else ""
                out.parameters.append(Variable(pname, vr + k, "local", "constant", "exact",
                                               value, info.unit, f"{meaning}fixed: {why}"))
        vr += len(out.parameters)
        taken = {v.name for v in out.states + out.derivatives + out.parameters}
        for label, s in zip(in_names, starts):
            if label in taken:
                raise ModelError(f"input {label!r} has the name of another variable of the "
                                 f"FMU (a state or a parameter)")
            out.inputs.append(Variable(label, vr, "input", "continuous", None, s,
                                       units.get(label, ""), descriptions.get(label,
                                                                              "input")))
            taken.add(label)
            vr += 1
        kinds = {"x": 0, "w": 1, "U2": 2}
        items = outputs.items() if isinstance(outputs, Mapping) else \
            [(n, n) for n in outputs]
        for name, what in items:
            if name in taken:
                what = ("an input" if name in {v.name for v in out.inputs} else
                        "a state or a parameter" if name not in
                        {v.name for v in out.outputs} else "another output")
                raise ModelError(f"output {name!r} has the name of {what} of the FMU; "
                                 f"name each variable once")
            terms = [(what, 1.0)] if isinstance(what, str) else list(what)
            if not terms:
                raise ModelError(f"output {name!r}: no quantity given")
            where = []
            for q, coef in terms:
                kind, k = output_location(model, q)
                where.append((kinds[kind], k, float(coef)))
            out.output_where.append(where)
            out.outputs.append(Variable(name, vr, "output", "continuous", "calculated", None,
                                        units.get(name, ""), descriptions.get(name,
                                                                               "output")))
            taken.add(name)
            vr += 1
        return out


_TABLE_C = """\
/* a table source's component k at t: times p[0..n), values p[n + i d + k]; linear
   between the points, the end values outside (the compiled kernel's formulas) */
static void bg_table(const double *p, int n, int d, int k, double t, double *v,
                     double *r) {
    int lo = 0, hi = n;                 /* the first point after t */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (p[mid] <= t) lo = mid + 1; else hi = mid;
    }
    int i = lo - 1;
    if (i < 0) { *v = p[n + k]; *r = 0.0; return; }
    if (i >= n - 1) { *v = p[n + (n - 1) * d + k]; *r = 0.0; return; }
    double y0 = p[n + i * d + k], y1 = p[n + (i + 1) * d + k];
    double s = (y1 - y0) / (p[i + 1] - p[i]);
    *v = s * (t - p[i]) + y0;
    *r = s;
}

"""


def _table_record(el) -> tuple[np.ndarray, int] | None:
    """(the packed times and values, the number of points) of a source whose value is a
    :meth:`TimeFunction.table`; None for any other value."""
    v = el.value
    if not isinstance(v, TimeFunction) or v.compiled is None or v.compiled.kind != "table":
        return None
    rec = v.compiled.record(el.dim)
    return None if rec is None else (rec[1], int(rec[0][3]))


def sources_c(model, iface: Interface) -> str:
    """The C function ``bg_sources`` of the model's known sources (U_1 in the layout's
    order) and their time derivatives: expressions of time and parameters as C
    expressions; a table (:meth:`TimeFunction.table`) as a C array and a lookup (as
    the compiled kernel computes it), whatever its length.

    Raises
    ------
    ModelError
        Naming a source whose value is a Python function (TimeFunction, StateFunction),
        which has no C form.
    """
    names = {sympy.Symbol(p): f"p[{k}]" for p, k in iface.parameter_index.items()}
    names[TIME] = "t"
    fn = CFunction(names)
    head, lookups = [], []
    k = 0
    for n in model.sources:
        el = model.graph.element(n)
        dim = el.dim
        inputs = [k + i in iface.input_of for i in range(dim)]
        table = _table_record(el)
        v = written_value(el) if table is None else None
        if table is None and isinstance(v, (TimeFunction, StateFunction)) and \
                not all(inputs):
            raise ModelError(python_source(el))
        law = None if all(inputs) or table is not None else TimeLaw(v, dim, n,
                                                                     el.value_name)
        if table is not None and not all(inputs):
            data = f"bg_table_{len(head)}"
            head.append(f"/* {el.kind} '{n}': a table of {table[1]} points */\n"
                        f"static {array('double', data, table[0]).lstrip()}")
        for i in range(dim):
            if inputs[i]:
                fn.assign(f"U1[{k + i}]", sympy.Symbol(f"u[{iface.input_of[k + i]}]"),
                          f"{el.kind} '{n}'")
                fn.assign(f"dU1[{k + i}]", 0, f"{el.kind} '{n}'")
            elif table is not None:
                lookups.append(f"    bg_table({data}, {table[1]}, {dim}, {i}, t, "
                               f"&U1[{k + i}], &dU1[{k + i}]);\n")
            else:
                fn.assign(f"U1[{k + i}]", law.expressions[i], f"{el.kind} '{n}'")
                fn.assign(f"dU1[{k + i}]", law.rates[i], f"{el.kind} '{n}' (its rate)")
        k += dim
    for i in iface.input_of.values():
        fn.names[sympy.Symbol(f"u[{i}]")] = f"u[{i}]"
    return ((_TABLE_C + "".join(head) + "\n" if head else "") +
            "int bg_sources(bg_inst *m, double t, const double *p, const double *u, "
            "double *U1, double *dU1) {\n    (void)m; (void)t; (void)p; (void)u; "
            "(void)U1; (void)dU1;\n" + fn.text() + "".join(lookups) + "    return 0;\n}\n")


def source_breaks(model, iface: Interface, t0: float, t1: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(ends, starts) of the segments of a run over (t0, t1) where a source the FMU
    computes (not an input in all its components) jumps or has a kink (sorted, s): the
    last float of the value before and the first of the value after
    (:func:`bondgraph.scales.source_time_scales`' breaks and starts); a model-exchange
    tool sees the starts as time events, the co-simulation solver ends a step at each
    end and starts the next at its start."""
    parts = []
    k = 0
    for n, law in model.sources.items():
        dim = model.graph.element(n).dim
        if law.timing is not None and \
                not all(k + i in iface.input_of for i in range(dim)):
            parts.append(law.timing.segments(t0, t1))
        k += dim
    ends, starts = merged_segments(parts, t1)
    # (breaks a few ulps apart are one: a tool cannot integrate between them, fmpy's
    # CVode 'tout too close to t0' between two time events 8 ulps apart)
    keep_e, keep_s = [], []
    for e, st in zip(ends, starts):
        if keep_s and e - keep_s[-1] <= 64 * np.spacing(max(abs(e), 1.0)):
            keep_s[-1] = max(keep_s[-1], st)
        else:
            keep_e.append(e)
            keep_s.append(st)
    return np.array(keep_e), np.array(keep_s)


def written_value(el) -> Any:
    """Source ``el``'s value, a :class:`TimeFunction` whose form is known (a sine, a
    ramp, a step, a table, an expression: :meth:`TimeFunction.expressions`) written as
    its sympy expressions of ``t``, which C can compute; otherwise the value itself."""
    v = el.value
    if isinstance(v, TimeFunction):
        exprs = v.expressions(el.dim)
        if exprs is not None:
            return exprs
    return v


def python_source(el) -> str:
    """Why source ``el`` (its value a TimeFunction or StateFunction) cannot be exported."""
    what = "StateFunction" if isinstance(el.value, StateFunction) else "TimeFunction"
    return (f"{el.kind} '{el.name}': its value is a Python {what}, which cannot be written "
            f"in C; give it as a number, a sympy expression of time t and parameters (or "
            f"TimeFunction.expression, sine, ramp, step, table), or name it as an input (in all its "
            f"components: the tool then sets it)")


def model_identifier(name: str) -> str:
    """A C identifier from the model's name (the binary's and the functions' prefix)."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "model"
    return ident if not ident[0].isdigit() else f"m_{ident}"


def model_description(iface: Interface, *, name: str, identifier: str, guid: str,
                      description: str, tool: str, when: str, sources: Sequence[str],
                      experiment: Mapping[str, float]) -> str:
    """The FMI 2.0 ``modelDescription.xml`` (model exchange and co-simulation)."""
    root = ET.Element("fmiModelDescription", {
        "fmiVersion": "2.0", "modelName": name, "guid": guid, "description": description,
        "generationTool": tool, "generationDateAndTime": when,
        "variableNamingConvention": "flat", "numberOfEventIndicators": "0"})

    def files(parent):
        sf = ET.SubElement(parent, "SourceFiles")
        for f in sources:
            ET.SubElement(sf, "File", {"name": f})

    me = ET.SubElement(root, "ModelExchange", {
        "modelIdentifier": identifier, "canGetAndSetFMUstate": "true",
        "canSerializeFMUstate": "false", "completedIntegratorStepNotNeeded": "true"})
    files(me)
    cs = ET.SubElement(root, "CoSimulation", {
        "modelIdentifier": identifier, "canHandleVariableCommunicationStepSize": "true",
        "canGetAndSetFMUstate": "true", "canSerializeFMUstate": "false"})
    files(cs)
    used_units = sorted({v.unit for v in iface.variables if v.unit})
    if used_units:
        ud = ET.SubElement(root, "UnitDefinitions")
        for u in used_units:
            ET.SubElement(ud, "Unit", {"name": u})
    cats = ET.SubElement(root, "LogCategories")
    ET.SubElement(cats, "Category", {"name": "logStatusError", "description":
                                     "why an evaluation or a step failed, or a call was "
                                     "refused"})
    ET.SubElement(root, "DefaultExperiment", {k: repr(float(v)) for k, v in experiment.items()})
    mv = ET.SubElement(root, "ModelVariables")
    for v in iface.variables:
        attrs = {"name": v.name, "valueReference": str(v.value_reference),
                 "causality": v.causality, "variability": v.variability}
        if v.initial is not None:
            attrs["initial"] = v.initial
        if v.description:
            attrs["description"] = v.description
        sv = ET.SubElement(mv, "ScalarVariable", attrs)
        real = {}
        if v.start is not None:
            real["start"] = repr(float(v.start))
        if v.unit:
            real["unit"] = v.unit
        if v.derivative is not None:
            real["derivative"] = str(v.derivative)
        if v.nominal is not None:
            real["nominal"] = repr(float(v.nominal))
        ET.SubElement(sv, "Real", real)
    ms = ET.SubElement(root, "ModelStructure")
    index = {v.value_reference: i + 1 for i, v in enumerate(iface.variables)}
    if iface.outputs:
        o = ET.SubElement(ms, "Outputs")
        for v in iface.outputs:
            ET.SubElement(o, "Unknown", {"index": str(index[v.value_reference])})
    if iface.derivatives:
        d = ET.SubElement(ms, "Derivatives")
        for v in iface.derivatives:
            ET.SubElement(d, "Unknown", {"index": str(index[v.value_reference])})
    unknowns = iface.outputs + iface.derivatives
    if unknowns:
        iu = ET.SubElement(ms, "InitialUnknowns")
        for v in sorted(unknowns, key=lambda v: index[v.value_reference]):
            ET.SubElement(iu, "Unknown", {"index": str(index[v.value_reference])})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=False).join(
        ['<?xml version="1.0" encoding="UTF-8"?>\n', "\n"])
