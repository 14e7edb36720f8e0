"""Study files (TOML; docs/studies.md): read, checked, made into a :class:`Study`.

- :func:`load_study`, :func:`loads_study`; :class:`StudyFileError` names the file, the
  table and the key.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph._files import output_name

from elements.files.tables import ModelFileError, TableReader, read_text, read_toml
from elements.files.modelfile import PLOT_SUFFIXES
from elements.study.model import ParametricModel
from elements.study.outputs import Output, QUANTITIES, REDUCTIONS
from elements.study.plans import Choice, Grid, LogNormal, MonteCarlo, Normal, Uniform
from elements.study.sweep import PlotRequest, Study
from elements.study.names import STUDY_FILES


class StudyFileError(ModelFileError):
    """A malformed study file, or a study that cannot be planned; names the file, the
    table and the key."""


def load_study(path: str | os.PathLike) -> Study:
    """Read a study file (TOML; docs/studies.md).

    Raises
    ------
    StudyFileError
        Naming the file, the table and the key, and saying what is valid.
    """
    path = os.fspath(path)
    return loads_study(read_text(path, "study file", StudyFileError), path)


def _reader(path: str) -> TableReader:
    """The typed reader of the study file ``path`` (errors: StudyFileError)."""
    return TableReader(path, StudyFileError)


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
        kind = _reader(path).string({f"{name}.distribution": spec["distribution"]}, where,
                                    f"{name}.distribution", choices=tuple(DISTRIBUTIONS))
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
                                   "stabilization", "projection", "max_step", "max_steps",
                                   "max_wall_time"})
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
        _reader(path).string(o, where, "quantity", required=False, choices=tuple(QUANTITIES))
        _reader(path).string(o, where, "reduce", required=False, choices=tuple(REDUCTIONS))
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
