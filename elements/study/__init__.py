"""Parameter studies: grid sweeps and Monte Carlo runs of one model, in this process or
on Dask (a local cluster or an existing scheduler), with one results table.

- :class:`ParametricModel` (:mod:`~elements.study.model`): a model built, causality-
  assigned and reduced once per structure, then run with new values of named
  parameters (``"J3.spring.k"``, ``"J1.actuator"``, ``"m2.mass"``, ...;
  :meth:`ParametricModel.parameters` lists them), handed to it as data.
- :class:`Study` (:mod:`~elements.study.sweep`): the model, the parameters to vary
  (:class:`Grid` or :class:`MonteCarlo` with :class:`Uniform`, :class:`Normal`,
  :class:`LogNormal`, :class:`Choice`: :mod:`~elements.study.plans`), the
  :class:`Output` values to keep (:mod:`~elements.study.outputs`), solver overrides;
  :meth:`Study.run` writes ``results.csv`` one row per run as runs finish, in this
  process or on Dask (:mod:`~elements.study.executors`).
- :func:`load_study` (:mod:`~elements.study.files`): a study file (TOML, see
  docs/studies.md) -> :class:`Study`.
- :class:`StudyResult`, :func:`read_results` (:mod:`~elements.study.table`): the table;
  :func:`plot_study` an output against one parameter (lines) or two (a heat map).

Units are SI throughout (kg, m, s, rad, N, N m); runtimes are in seconds.
"""

from __future__ import annotations

from elements.study.executors import RunProgress, check_executor
from elements.study.files import StudyFileError, load_study, loads_study
from elements.study.model import ParameterInfo, ParametricModel
from elements.study.names import HISTORIES, RESULTS, STUDY_JSON
from elements.study.outputs import QUANTITIES, REDUCTIONS, Output, execute_run
from elements.study.plans import Choice, Grid, LogNormal, MonteCarlo, Normal, Run, Uniform
from elements.study.sweep import Study
from elements.study.table import StudyResult, plot_study, read_results

__all__ = [
    "ParametricModel", "ParameterInfo", "Study", "Grid", "MonteCarlo", "Uniform", "Normal",
    "LogNormal", "Choice", "Output", "Run", "StudyResult", "StudyFileError", "load_study",
    "loads_study", "read_results", "plot_study", "RunProgress", "QUANTITIES", "REDUCTIONS",
    "RESULTS", "STUDY_JSON", "HISTORIES", "check_executor", "execute_run",
]
