"""vector-bondgraph: spatial multibody systems as vector bond graphs.

The pipeline, one artefact per stage (none mutates its input)::

    BondGraph --assign_causality--> CausalGraph --assemble--> StateSpaceModel
              --simulate--> SimulationResult

Graph and elements
    BondGraph, Component, Element, Category, register_element, ELEMENT_TYPES,
    Se, Sf, UnknownEffort (Se*), I, C, R, TF, MTF, GY, MGY, EJS, ZeroJunction,
    OneJunction, KinematicState, WorkState, PositionConstraint, TimeFunction, StateFunction,
    StateView, Bond, PortSpec, Causality, skew,
    TimeKernel (a standard function of time as data: compiled, not called)
Stages
    validate, assign_causality, CausalGraph, InsertedSource, assemble,
    StateSpaceModel, Evaluation, Baumgarte, Branch, simulate, SimulationResult, Status,
    join_results (one result from consecutive segments),
    nominal_scales, source_time_scales (the scales behind the default tolerances and
    step bound), RunProgress (a run's progress on stderr),
    SparseReduction, StepValues (the sparse evaluation used while integrating),
    symbolic_equations, SymbolicEquations
Linear models
    linearize, find_equilibrium, Equilibrium, LinearModel, Modes
FMI (an assembled model as an FMU: model exchange and co-simulation, standalone C)
    export_fmu, ExportedFMU
Diagrams
    to_dot, to_graphviz, render
Bond graph files
    save_graph, load_graph, load_graph_file, graph_differences, GraphFile, GraphSolver,
    GraphOutput, GraphFileError, run_graph_file, parse_expression, expression_text
Errors
    BondGraphError, ModelError, PortError, NameNotFoundError, CausalityError, DifferentialCausalityError,
    AlgebraicLoopError, NonFiniteLawError, SingularConstraintError, IntegrationError,
    IntegrationWarning,
    MissingExtraError (an optional package is missing; names the extra),
    FMUBuildError (an FMU's C sources could not be compiled; names where they are kept)
Canonical models
    bondgraph.models
"""

from __future__ import annotations

from . import models
from .bonds import Bond, Causality, PortSpec
from .branches import Branch
from .causality import CausalGraph, InsertedSource, assign_causality
from .element import (
    ELEMENT_TYPES,
    Category,
    Element,
    StateFunction,
    StateView,
    TimeFunction,
    register_element,
)
from .errors import (
    AlgebraicLoopError,
    BondGraphError,
    CausalityError,
    DifferentialCausalityError,
    FMUBuildError,
    IntegrationError,
    IntegrationWarning,
    MissingExtraError,
    ModelError,
    NameNotFoundError,
    NonFiniteLawError,
    PortError,
    SingularConstraintError,
)
from .expressions import expression_text, parse_expression
from .fmu import ExportedFMU, export_fmu
from .graph import BondGraph, Component
from .graphfile import (
    GraphFile, GraphFileError, GraphOutput, GraphSolver, graph_differences, load_graph,
    load_graph_file, save_graph,
)
from .graphrun import run_graph_file
from .primitives import (
    EJS,
    GY,
    MGY,
    MTF,
    TF,
    C,
    I,
    KinematicState,
    OneJunction,
    WorkState,
    PositionConstraint,
    ModulusContext,
    R,
    Se,
    Sf,
    UnknownEffort,
    ZeroJunction,
)
from .laws import EnergyLaw, TimeLaw, VectorLaw
from .moduli import StateFunctions
from .options import DEFAULT, Budget, Event, SaveAt, Solver
from .reduction import Baumgarte, Evaluation, StateSpaceModel, assemble
from .results import SimulationResult, Status, join_results
from .simulation import simulate
from .scales import nominal_scales, source_time_scales
from ._progress import RunProgress
from .linear_model import LinearModel, Modes
from .linearization import Equilibrium, find_equilibrium, linearize
from .spatial import skew
from .sparse import SparseReduction, StepValues
from .timefunctions import TimeKernel
from .symbolic import SymbolicEquations, symbolic_equations
from .validation import validate
from .viz import render, to_dot, to_graphviz

__version__ = "0.1.0"

__all__ = [
    "BondGraph", "Component", "Element", "Category", "register_element", "ELEMENT_TYPES",
    "Se", "Sf", "UnknownEffort", "I", "C", "R", "TF", "MTF", "GY", "MGY", "EJS",
    "ZeroJunction", "OneJunction", "KinematicState", "WorkState", "PositionConstraint", "ModulusContext",
    "TimeFunction", "TimeKernel",
    "StateFunction", "StateView", "Bond", "PortSpec", "Causality", "skew",
    "validate", "assign_causality", "CausalGraph", "InsertedSource", "assemble",
    "StateSpaceModel", "Evaluation", "Baumgarte", "Branch", "simulate", "SimulationResult",
    "Solver", "SaveAt", "Budget", "Event", "DEFAULT",
    "Status", "join_results", "nominal_scales", "source_time_scales", "RunProgress",
    "SparseReduction", "StepValues", "StateFunctions",
    "symbolic_equations", "SymbolicEquations", "to_dot", "to_graphviz", "render",
    "BondGraphError", "ModelError", "PortError", "NameNotFoundError", "CausalityError",
    "DifferentialCausalityError", "AlgebraicLoopError", "NonFiniteLawError",
    "SingularConstraintError",
    "IntegrationError", "IntegrationWarning", "MissingExtraError", "models",
    "linearize", "find_equilibrium", "Equilibrium", "LinearModel", "Modes",
    "EnergyLaw", "VectorLaw", "TimeLaw",
    "save_graph", "load_graph", "load_graph_file", "graph_differences", "GraphFile",
    "GraphSolver", "GraphOutput", "GraphFileError", "run_graph_file", "parse_expression",
    "expression_text", "export_fmu", "ExportedFMU", "FMUBuildError",
]
