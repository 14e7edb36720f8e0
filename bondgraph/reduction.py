"""Reduction of the junction structure and the fields to state equations, Eqs. (14)/(15).

- :func:`assemble`: :class:`~bondgraph.CausalGraph` -> :class:`StateSpaceModel`.
- :class:`StateSpaceModel`: ``rhs(t, x)``, ``constraint_forces(t, x)``, ``evaluate``
  (every intermediate: J blocks, T, H, U_2) at any state.
- :class:`Evaluation`: everything computed at one (t, x).
- :class:`Baumgarte`: constraint stabilisation gains.

Symbol table (paper notation, method.md section 5)
---------------------------------------------------
X        energy states [X_i1; X_i2] (momenta p of I, displacements q of C)
Z = F X  co-energies (Eqs. (5)-(6)); F = blockdiag(inertia^-1, stiffness); an element
         with a nonlinear energy law H has Z = dH/dX and F = d2H/dX2 (its tangent)
D_out = R D_in       resistive field (Eq. (7)); R per element, R^-1 in conductance; a
         nonlinear resistor law is solved by Newton's method, each pass this reduction
         with its tangent and an offset (known input) D_out = R_k D_in + o
E_out = R_E E_in     EJS field (Eq. (8)); R_E = blockdiag(-h~), state dependent
U_1, U_2 known and unknown (constraint) efforts; C the Se* flows (Eq. (13))
A1..A5, B1..B4 the eliminations of D and E, with the corrections of method.md (a):
  G   = (I_1 - J_LL R)^-1
  A1  = [I_2 - J_EE R_E - J_EL R G J_LE R_E]^-1
  A2  = J_EZ F + J_EL R G J_LZ F;   A4 = J_EU1 + J_EL R G J_LU1;   A5 = J_EU2 + J_EL R G J_LU2
  B1  = G (J_LZ F + J_LE R_E A1 A2); B3 = G (J_LU1 + J_LE R_E A1 A4); B4 = G (J_LU2 + J_LE R_E A1 A5)
  T_Y* for any output rows Y:  T_YX = Y_Z F + Y_L R B1 + Y_E R_E A1 A2, etc.
dX/dt = T_X X + T_U1 U_1 + T_U2 U_2;  c = T_CX X + T_CU1 U_1 + T_LE U_2  (T_LE = T_CU2)
Eq. (14): T_LE invertible:  U_2 = -T_LE^-1 (T_CX X + T_CU1 U_1)
Eq. (15): J_CL = J_CE = 0:  H_4 U_2 = -(H_X X + H_3 U_1 + J_CU1 dU_1/dt
                                       + (dJ_CZ/dt) F X + (dJ_CU1/dt) U_1 [+ 2 alpha c + beta^2 Phi])
          H_X = J_CZ F T_X, H_3 = J_CZ F T_U1, H_4 = J_CZ F T_U2. The dJ/dt terms are the
          ones the paper omits (method.md (b)); the bracketed terms are Baumgarte's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.linalg as sla

from . import fastlu
from ._gc import paused
from .branches import Branch
from .causality import CausalGraph
from .element import StateView, is_symbolic
from .errors import AlgebraicLoopError, ModelError, SingularConstraintError
from .evaluation import RANK_RTOL, Evaluation, solve_constraints
from ._newton import loop_slope, solve_resistor_loop
from .junction import JunctionLayout, PowerPlan
from .moduli import StateFunctions
from .parameters import Parameter, ParameterSet
from .primitives.sources import plan_sources
from .stabilization import Baumgarte
from .primitives import (
    KinematicState, StorageBase, UnknownEffort, WorkState, ZeroJunction,
)

__all__ = ["assemble", "StateSpaceModel", "Evaluation", "Baumgarte", "RANK_RTOL"]

_BUILD_LOCK = threading.RLock()
"""Held while a model's sparse evaluation is built (once per model)."""


class StateSpaceModel:
    """The assembled model: fields, junction structure and reduction, ready to evaluate.

    Parameter values are kept apart from structure: :attr:`parameters` holds the values
    of the graph's declared parameters (and of any other sympy symbol its elements use);
    :meth:`with_parameters` returns a model with new values and the same causal graph,
    which is neither copied nor changed. Build it with :func:`assemble`.

    Attributes
    ----------
    causal : CausalGraph
    state_names : tuple of str
        Energy states (``p_<I>``, ``q_<C>``) then kinematic states.
    n_states : int
    unknown_sources : tuple of str
        The Se* names, in the order of U_2.
    parameters : ParameterSet
        Name -> value of every parameter the elements' laws use.
    """

    def __init__(self, cg: CausalGraph, parameters: Mapping[str, float] | None = None, *,
                 omit_rate_terms: bool = False, _like: "StateSpaceModel | None" = None):
        self.omit_rate_terms = bool(omit_rate_terms)
        self._bond_slices = None
        self.causal = cg
        self.graph = cg.graph
        self.parameters: ParameterSet = _parameter_set(self.graph.parameters, parameters)
        els = self.graph.elements
        self._elements = els
        p = dict(self.parameters)
        problems = [msg for el in els.values() for msg in el.problems_at(p)]
        if problems:
            raise ModelError(problems)

        # states ---------------------------------------------------------------------
        self.storage: tuple[str, ...] = tuple(n for n, el in els.items()
                                              if isinstance(el, StorageBase))
        names, slices, start = [], {}, 0
        for n in self.storage:
            el = els[n]
            names.append(el.state_name)
            slices[el.state_name] = slice(start, start + el.dim)
            start += el.dim
        self.n_energy = start
        self.kinematic: tuple[KinematicState, ...] = self.graph.kinematic_states
        for ks in self.kinematic:
            names.append(ks.name)
            slices[ks.name] = slice(start, start + ks.dim)
            start += ks.dim
        self.n_kinematic = start - self.n_energy
        self.work: tuple[WorkState, ...] = self.graph.work_states
        for ws in self.work:
            names.append(ws.name)
            slices[ws.name] = slice(start, start + 1)
            start += 1
        self.state_names: tuple[str, ...] = tuple(names)
        self.state_slices: dict[str, slice] = slices
        self.n_states = start
        energy_names = set(names[:len(self.storage)])

        # fields ---------------------------------------------------------------------
        # (a nonlinear storage element has a zero block in F: its co-energy and tangent
        # come from its law at each evaluation)
        blocks, self._nl_storage = [], []
        for n in self.storage:
            el = els[n]
            law = None if getattr(el, "is_linear", True) else el.energy_law()
            if law is None:
                blocks.append(el.field_matrix(p))
            else:
                blocks.append(np.zeros((el.dim, el.dim)))
                self._nl_storage.append((slices[el.state_name], law.bind(p)))
        self.F = sla.block_diag(*blocks) if blocks else np.zeros((0, 0))
        # the junction structure's layout depends on the two-ports' moduli only: a model
        # of the same causal graph whose moduli hold no parameter shares its layout
        self._parametric_two_ports = (
            _like._parametric_two_ports if _like is not None else
            tuple(n for n, el in els.items() if el.category.is_two_port and
                  any(is_symbolic(v) for v in el.parameters().values())))
        if _like is not None and not self._parametric_two_ports:
            self.moduli = _like.moduli
            self.layout = _like.layout
        else:
            moduli = {}
            for n, el in els.items():
                if el.category.is_two_port:
                    mod = el.modulus(p)
                    moduli[n] = mod
                    for dep in mod.depends_on:
                        if dep in energy_names:
                            raise ModelError(
                                f"{el.kind} '{n}': its modulus depends on energy state "
                                f"'{dep}'; moduli may depend on kinematic states only (their "
                                f"rates must not need the constraint forces)")
            self.moduli = moduli
            self.layout = JunctionLayout(cg, moduli)
        L = self.layout
        rblocks, self._nl_r, off = [], [], 0
        for name, resistance_causality in L.members["L"]:
            el = els[name]
            law = None if getattr(el, "is_linear", True) else \
                el.resistor_law(resistance_causality)
            if law is not None:
                self._nl_r.append((slice(off, off + el.dim), law.bind(p)))
                rblocks.append(np.zeros((el.dim, el.dim)))
                off += el.dim
                continue
            r = el.resistance_matrix(p)
            if not resistance_causality:
                try:
                    r = np.linalg.inv(r)
                except np.linalg.LinAlgError:
                    raise ModelError(f"R '{name}' is in conductance causality (effort in) and "
                                     f"needs an invertible resistance") from None
            rblocks.append(r)
            off += el.dim
        self.R = sla.block_diag(*rblocks) if rblocks else np.zeros((0, 0))
        self.nonlinear: bool = bool(self._nl_storage or self._nl_r)
        """True when a storage element or a resistor has a nonlinear law."""
        self._newton_start: dict[int, np.ndarray] = {}     # (by thread)
        self._static_loop: tuple | None = None       # (see evaluate: nothing varies)
        self._nl_index = np.array([i for sl, _ in self._nl_r
                                   for i in range(sl.start, sl.stop)], dtype=int)
        self._nl_names = ", ".join(f"'{n}'" for n, _ in L.members["L"]
                                   if not getattr(els[n], "is_linear", True))
        self.ejs: tuple[str, ...] = tuple(L.members["E"])
        self.sources = {n: els[n].law(p) for n in L.members["U1"]}
        self.unknown_sources: tuple[str, ...] = tuple(L.members["U2"])
        self.u2_dims = [els[n].dim for n in self.unknown_sources]
        u2_off = np.cumsum([0] + self.u2_dims)
        self.u2_slices = {n: slice(int(u2_off[i]), int(u2_off[i + 1]))
                          for i, n in enumerate(self.unknown_sources)}
        self.u1_dims = [els[n].dim for n in L.members["U1"]]
        self.n_u1 = int(sum(self.u1_dims))
        self.n_u2 = int(u2_off[-1])
        # position constraints per Se*
        self.position_constraints = []
        for n in self.unknown_sources:
            el = els[n]
            j = els.get(el.junction) if isinstance(el, UnknownEffort) and el.junction else None
            pc = j.position_constraint if isinstance(j, ZeroJunction) else None
            self.position_constraints.append(pc)
        # kinematic sources: flow variable indices (one array per source)
        def bond_of(src: str):
            return self.graph.bonds_of(src)[0] if src in els else self.graph.bond(src)

        self.kin_flow_idx = []
        for ks in self.kinematic:
            for src in ks.sources:
                self.kin_flow_idx.append(np.array(L.flow_idx(bond_of(src).name), dtype=int))
        self._kin_rows = (np.concatenate(self.kin_flow_idx) if self.kin_flow_idx
                          else np.zeros(0, dtype=int))
        self.work_idx = [(np.array(L.effort_idx(bond_of(w.source).name), dtype=int),
                          np.array(L.flow_idx(bond_of(w.source).name), dtype=int))
                         for w in self.work]
        self.work_powers = PowerPlan(self.work_idx)
        self._state_dependent_u1 = [n for n, law in self.sources.items() if law.state_dependent]
        self._sparse = None
        self._functions: StateFunctions | None = None
        self._source_plan: tuple | None = None

    # -- conveniences -------------------------------------------------------------------
    def sparse(self):
        """The sparse evaluation of Eq. (15) used while integrating
        (:class:`~bondgraph.sparse.SparseReduction`), built once and kept."""
        if self._sparse is None:
            from .sparse import SparseReduction
            with _BUILD_LOCK:            # (threads asking at once: one builds it)
                if self._sparse is None:
                    self._sparse = paused(SparseReduction)(self)
        return self._sparse

    def with_parameters(self, values: Mapping[str, float] | np.ndarray | None = None,
                        **named: float) -> "StateSpaceModel":
        """A model with new values of some parameters (by name, a mapping or keywords,
        or a whole vector in :attr:`parameters` order), assembled from the same causal
        graph; this model is neither copied nor changed.

        Raises
        ------
        ModelError
            For an unknown parameter (naming the valid ones) or a value that breaks a
            parameter's rule or makes an element invalid (a negative inertia, ...).
        """
        params = self.parameters.updated(values).updated(named or None)
        return StateSpaceModel(self.causal, params, omit_rate_terms=self.omit_rate_terms,
                               _like=self)

    def state_index(self, name: str) -> slice:
        """Slice of state ``name`` in the state vector."""
        return self.state_slices[name] if name in self.state_slices else \
            StateView(np.zeros(0), self.state_slices)[name]

    def initial_state(self, values: Mapping[str, Any]) -> np.ndarray:
        """The state vector from values keyed by state name (every state required).

        Raises
        ------
        ModelError
            Listing missing and unknown names, or a value of the wrong size.
        """
        missing = [n for n in self.state_names if n not in values]
        unknown = [n for n in values if n not in self.state_slices]
        problems = []
        if missing:
            problems.append(f"initial state: missing value(s) for {', '.join(missing)}")
        if unknown:
            problems.append(f"initial state: unknown state name(s) {', '.join(unknown)}; "
                            f"states are {', '.join(self.state_names)}")
        x = np.zeros(self.n_states)
        for n, s in self.state_slices.items():
            if n in values:
                v = np.atleast_1d(np.asarray(values[n], dtype=float))
                if v.size == 1 and s.stop - s.start > 1:
                    problems.append(f"initial state '{n}': needs {s.stop - s.start} values")
                    continue
                if v.size != s.stop - s.start:
                    problems.append(f"initial state '{n}': needs {s.stop - s.start} values, "
                                    f"got {v.size}")
                    continue
                if not np.all(np.isfinite(v)):
                    problems.append(f"initial state '{n}': values must be finite, got {v}")
                    continue
                x[s] = v
        if problems:
            raise ModelError(problems)
        return x

    def stored_energy(self, x: np.ndarray) -> float:
        """Energy in the storage elements (J): X^T F X / 2 for the linear ones plus each
        nonlinear element's H(X)."""
        X = np.asarray(x)[:self.n_energy]
        return 0.5 * float(X @ self.F @ X) + sum(law.energy(X[sl])
                                                 for sl, law in self._nl_storage)

    def bond_index(self, bond: str) -> tuple[slice, slice]:
        """(effort slice, flow slice) of ``bond`` in ``Evaluation.bond_values``."""
        L = self.layout
        b = self.graph.bond(bond)
        o = L.offset[b.name]
        return slice(o, o + b.dim), slice(L.n_half + o, L.n_half + o + b.dim)

    @property
    def bond_slices(self) -> Mapping[str, tuple[slice, slice]]:
        """:meth:`bond_index` of every bond, by name (made once and shared with the
        simulation results: do not modify it)."""
        if self._bond_slices is None:
            self._bond_slices = {b.name: self.bond_index(b.name) for b in self.graph.bonds}
        return self._bond_slices

    # -- evaluation -----------------------------------------------------------------------
    @property
    def functions(self) -> StateFunctions:
        """The moduli, modulus rates, Phi and kinematic rates at a state, planned once
        (:class:`~bondgraph.moduli.StateFunctions`)."""
        if self._functions is None:
            self._functions = StateFunctions(self)
        return self._functions

    def source_values(self, t: float, s: StateView, rates: bool = True
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """U_1 and dU_1/dt (NaN where a source has no rate, all if not ``rates``) at t (s).
        Constant sources are written once (when first needed); compiled ones by one
        kernel call per family; only the others' laws are called."""
        U1c, dU1c, _ = self.source_plan()
        U1, dU1 = U1c.copy(), dU1c.copy()
        families, python = self._source_plan[3:]
        if families is not None:            # (their rates too, where they give them)
            families.fill(t, s, U1, dU1, rates)
        for _, sl, law in python:
            U1[sl] = law.value(t, s)
            if law.rate is not None:
                dU1[sl] = law.rate(t, s) if rates else np.nan
        return U1, dU1

    def source_plan(self) -> tuple[np.ndarray, np.ndarray, list]:
        """(U_1 with the constant sources' values, else 0; dU_1/dt likewise, NaN for a
        varying source without a rate; the varying ones as (name, U_1 slice, law)), once
        (:func:`~bondgraph.primitives.sources.plan_sources`)."""
        if self._source_plan is None:
            self._source_plan = plan_sources(
                self.sources, {n: self._elements[n].dim for n in self.sources},
                self.state_slices, fastlu.enabled())
        return self._source_plan[:3]

    def evaluate(self, t: float, x: np.ndarray, *, stabilization: Baumgarte | None = None,
                 redundancy_ok: bool = True, rank_reference: float = 0.0) -> Evaluation:
        """Evaluate every quantity of the reduction at time ``t`` and state ``x``.

        ``rank_reference`` is a scale of the constraint matrix (e.g. at the initial state)
        below which its singular values count as lost rank.

        Raises
        ------
        SingularConstraintError
            When the constraint matrix is rank deficient and ``redundancy_ok`` is False,
            or when neither Eq. (14) nor Eq. (15) applies.
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_states,):
            raise ModelError(f"state vector has shape {x.shape}; valid: ({self.n_states},) "
                             f"for states {', '.join(self.state_names)}")
        s = StateView(x, self.state_slices)
        L = self.layout
        X = x[:self.n_energy]
        shared: dict[int, Any] = {}
        fns = self.functions
        lu, A_i, W, js = L.solved(lambda: fns.moduli(x, shared))
        b = js.blocks
        RE = (sla.block_diag(*[self._elements[n].euler_matrix(s) for n in self.ejs])
              if self.ejs else np.zeros((0, 0)))
        F, Z = self.F, self.F @ X
        if self._nl_storage:           # co-energies from the laws; F their tangents
            F = F.copy()
            for sl, law in self._nl_storage:
                Z[sl] = law.coenergy(X[sl])
                F[sl, sl] = law.tangent(X[sl])
        U1, dU1 = self.source_values(t, s, rates=self.n_u2 > 0)   # (rates: Eq. (15))
        args = (t, x, Z, F, RE, U1, dU1, b, js, W, lu, L, shared, stabilization,
                redundancy_ok, rank_reference)
        if not self._nl_r:
            return self._reduced(self.R, None, *args)
        # nonlinear resistors: bondgraph._newton on their inputs (affine in the laws'
        # outputs o: the eliminations formed once, for all where nothing varies), from
        # this thread's last solution, else the inputs at o = 0, else zero
        nR, nl = self.R.shape[0], self._nl_index

        def implied(o):
            return self._completed(E, o, *args, din_only=True)

        static = not (L.dynamic or self._nl_storage or self.ejs)
        if static and self._static_loop is not None:
            E, M = self._static_loop
        else:
            E = self._eliminated(self.R, True, *args)
            M = E[6][np.ix_(nl, self.n_u1 + nl)] if self.n_u2 == 0 else \
                loop_slope(nl, nR, implied)        # (B_3's block; else by its columns)
            if static:
                for a in E:                       # (read-only: evaluations share them)
                    a.setflags(write=False)
                self._static_loop = (E, M)
        key = threading.get_ident()
        starts = [lambda: implied(np.zeros(nR)), lambda: np.zeros(nR)]
        warm = key in self._newton_start
        if warm:
            starts.insert(0, self._newton_start[key].copy)
        d = solve_resistor_loop(self._nl_r, nR, implied, M, starts, self._nl_names, t, warm)
        self._newton_start[key] = d
        o = np.zeros(nR)
        for sl, law in self._nl_r:
            o[sl] = law.value(d[sl])
        return self._completed(E, o, *args)[0]

    def _reduced(self, R, o, *args):
        """The reduction at one (t, x) with the resistive field D_out = R D_in (+ o);
        returns the :class:`Evaluation` (and D_in when ``o`` is given)."""
        return self._completed(self._eliminated(R, o is not None, *args), o, *args)

    def _eliminated(self, R, offsets, t, x, Z, F, RE, U1, dU1, b, js, W, lu, L, shared,
                    stabilization, redundancy_ok, rank_reference) -> tuple:
        """The eliminations of D and E with the resistive field R at one (t, x) for
        :meth:`_completed` (independent of the offsets o, inputs after U_1)."""
        def known(Y):
            return b[Y + "U1"] if not offsets else np.hstack([b[Y + "U1"], b[Y + "L"]])

        # eliminate D and E (corrected A1..A5, B1..B4; Z = F X for linear fields)
        nL, nE = R.shape[0], RE.shape[0]
        G = self._inverse(np.eye(nL) - b["LL"] @ R, b["LL"], "resistive", t) if nL \
            else np.zeros((0, 0))
        A1 = self._inverse(np.eye(nE) - b["EE"] @ RE - b["EL"] @ R @ G @ b["LE"] @ RE,
                           b["EE"], "EJS", t) if nE else np.zeros((0, 0))
        A2 = b["EZ"] + b["EL"] @ R @ G @ b["LZ"]
        A4 = known("E") + b["EL"] @ R @ G @ known("L")
        A5 = b["EU2"] + b["EL"] @ R @ G @ b["LU2"]
        B1 = G @ (b["LZ"] + b["LE"] @ RE @ A1 @ A2)
        B3 = G @ (known("L") + b["LE"] @ RE @ A1 @ A4)
        B4 = G @ (b["LU2"] + b["LE"] @ RE @ A1 @ A5)
        RA1 = RE @ A1

        def reduce(YZ, YL, YU1, YU2, YE):
            return (YZ + YL @ R @ B1 + YE @ RA1 @ A2,
                    YU1 + YL @ R @ B3 + YE @ RA1 @ A4,
                    YU2 + YL @ R @ B4 + YE @ RA1 @ A5)

        T_Z, T_U1, T_U2 = reduce(b["XZ"], b["XL"], known("X"), b["XU2"], b["XE"])
        T_CZ, T_CU1, T_LE = reduce(b["CZ"], b["CL"], known("C"), b["CU2"], b["CE"])

        # kinematic flows (before U2 is known; they must not depend on it)
        Wk = W[self._kin_rows]
        Wku1 = Wk[:, L.imp_slices["U1"]]
        K_Z, K_U1, K_U2 = reduce(Wk[:, L.imp_slices["Z"]], Wk[:, L.imp_slices["L"]],
                                 Wku1 if not offsets else
                                 np.hstack([Wku1, Wk[:, L.imp_slices["L"]]]),
                                 Wk[:, L.imp_slices["U2"]], Wk[:, L.imp_slices["E"]])
        return (R, A1, A2, A4, A5, B1, B3, B4, T_Z, T_U1, T_U2, T_CZ, T_CU1, T_LE, K_Z,
                K_U1, K_U2)

    def _completed(self, E, o, t, x, Z, F, RE, U1, dU1, b, js, W, lu, L, shared,
                   stabilization, redundancy_ok, rank_reference, din_only=False):
        """The :class:`Evaluation` from :meth:`_eliminated`'s ``E`` and offsets ``o``
        (None: none), with D_in when ``o`` is given; only D_in when ``din_only``."""
        (R, A1, A2, A4, A5, B1, B3, B4, T_Z, T_U1, T_U2, T_CZ, T_CU1, T_LE, K_Z, K_U1,
         K_U2) = E
        fns = self.functions
        nE = RE.shape[0]
        # o (the offsets of nonlinear resistors) enters as a known input through the
        # columns of D_out: stacked after U_1
        U1a = U1 if o is None else np.concatenate([U1, o])
        if din_only and self.n_u2 == 0:
            return B1 @ Z + B3 @ U1a
        kin_flow0 = K_Z @ Z + K_U1 @ U1a

        n2 = self.n_u2
        H4 = H_X = H_3 = None
        rank = n2
        cscale = 0.0
        c0 = T_CZ @ Z + T_CU1 @ U1a
        phi = fns.phi(x, shared)
        if n2 == 0:
            branch = Branch.NONE
            U2 = np.zeros(0)
        else:
            scale = max(1.0, float(np.abs(js.J).max()))
            coupled = max(np.abs(b["CL"]).max(initial=0.0), np.abs(b["CE"]).max(initial=0.0),
                          np.abs(b["CU2"]).max(initial=0.0))
            if coupled <= 1e-12 * scale:
                branch = Branch.EQ15
                if np.abs(K_U2).max(initial=0.0) > 1e-12 * scale and L.dynamic:
                    raise ModelError("a kinematic state integrates a flow that depends on the "
                                     "constraint efforts; Eq. (15) cannot use it to modulate")
                mrates = fns.moduli_rates(x, fns.kinematic_rates(x, kin_flow0))
                dJ_CZ, dJ_CU1 = self._constraint_rows_rate(lu, W, mrates)
                if self.omit_rate_terms:      # the seed's printed (15c), for comparison only
                    dJ_CZ, dJ_CU1 = 0.0 * dJ_CZ, 0.0 * dJ_CU1
                need_du1 = np.abs(b["CU1"]).max(axis=0) > 0 if b["CU1"].size else \
                    np.zeros(0, dtype=bool)
                if np.any(need_du1 & ~np.isfinite(dU1)):
                    bad = self._u1_names_at(np.flatnonzero(need_du1 & ~np.isfinite(dU1)))
                    raise ModelError(f"source(s) {', '.join(bad)} enter the constraint "
                                     f"equations, so Eq. (15) needs their time derivative: "
                                     f"give TimeFunction(value, rate=...) (a state-dependent "
                                     f"source cannot be used there)")
                dU1z = np.where(np.isfinite(dU1), dU1, 0.0)
                JCF = b["CZ"] @ F
                H4 = JCF @ T_U2
                H_X = JCF @ (T_Z @ F)
                H_3 = JCF @ T_U1
                rhs = (JCF @ (T_Z @ Z) + H_3 @ U1a + b["CU1"] @ dU1z
                       + dJ_CZ @ Z + dJ_CU1 @ U1)
                if o is not None:
                    H_3 = H_3[:, :self.n_u1]
                if stabilization is not None:
                    rhs = rhs + 2.0 * stabilization.alpha * c0 + \
                        stabilization.beta ** 2 * np.nan_to_num(phi)
                U2, rank, cscale = self._solve_named(H4, -rhs, True, rank_reference, Branch.EQ15, t)
            else:
                branch = Branch.EQ14
                U2, rank, cscale = self._solve_named(T_LE, -c0, False,
                                                     rank_reference, Branch.EQ14, t)
            if rank < n2 and not redundancy_ok:
                raise SingularConstraintError(
                    f"the constraint matrix of Eq. ({branch}) has rank {rank} < {n2} at "
                    f"t = {t:.6g} s: " + self.deficient_sources_text(H4 if H4 is not None
                                                                    else T_LE),
                    time=t, sources=self.unknown_sources)
        Din = B1 @ Z + B3 @ U1a + B4 @ U2
        if din_only:
            return Din
        Xdot = T_Z @ Z + T_U1 @ U1a + T_U2 @ U2
        kin_flow = kin_flow0 + K_U2 @ U2
        kin_rates = fns.kinematic_rates(x, kin_flow)
        c = c0 + T_LE @ U2
        # all bond variables: v = [Z; D_out; U1; U2; E_out]
        Ein = A1 @ (A2 @ Z + A4 @ U1a + A5 @ U2) if nE else np.zeros(0)
        Dout = R @ Din if o is None else R @ Din + o
        v = np.concatenate([Z, Dout, U1, U2, RE @ Ein])
        bond_values = W @ v
        powers = self.work_powers(bond_values)
        xdot = np.concatenate([Xdot, kin_rates, powers])
        T_X = T_Z @ F
        if o is not None:
            T_U1 = T_U1[:, :self.n_u1]
        ev = Evaluation(t=float(t), x=x, xdot=xdot, U1=U1, U2=U2, T_X=T_X, T_U1=T_U1,
                        T_U2=T_U2, constraint_flow=c, phi=phi, H4=H4, H_X=H_X, H_3=H_3,
                        branch=branch,
                        rank=int(rank), constraint_scale=cscale, junction=js,
                        bond_values=bond_values)
        return ev if o is None else (ev, Din)

    def __repr__(self) -> str:
        return (f"StateSpaceModel({self.graph.name!r}: {self.n_states} state components in "
                f"{len(self.state_names)} states, {self.n_u1} known and {self.n_u2} unknown "
                f"source components)")

    def _repr_html_(self) -> str:
        from ._display import html_card
        rows = [("states", f"{len(self.state_names)} ({self.n_states} components: "
                           f"{self.n_energy} energy, {self.n_kinematic} kinematic)"),
                ("known sources (U_1)", f"{len(self.sources)} ({self.n_u1} components)"),
                ("unknown effort sources (U_2)", ", ".join(self.unknown_sources) or "none"),
                ("elements", len(self.graph.elements)),
                ("parameters", len(self.parameters))]
        return html_card(f"StateSpaceModel '{self.graph.name}'", rows)

    def rhs(self, t: float, x: np.ndarray, stabilization: Baumgarte | None = None) -> np.ndarray:
        """dx/dt at (t, x): a fresh array of shape (n_states,).

        Uses the sparse evaluation (:meth:`sparse`) where it applies and the dense
        reduction (:meth:`evaluate`) elsewhere; both agree to rounding."""
        sr = self.sparse()
        if sr.applicable:
            x = np.asarray(x, dtype=float)
            if x.shape == (self.n_states,):
                xdot = sr.derivative(t, x, stabilization)
                if xdot is not None:
                    return xdot
        return self.evaluate(t, x, stabilization=stabilization).xdot

    def constraint_forces(self, t: float, x: np.ndarray,
                          stabilization: Baumgarte | None = None) -> dict[str, np.ndarray]:
        """U_2 by unknown source name (the Se* efforts) at (t, x)."""
        ev = self.evaluate(t, x, stabilization=stabilization)
        return {n: ev.U2[s].copy() for n, s in self.u2_slices.items()}

    def deficient_sources_text(self, H: np.ndarray | None, cutoff: float | None = None) -> str:
        """Which unknown sources take part in the (near) null space of ``H``: the singular
        vectors whose singular values are at most ``cutoff`` (default: the rank
        threshold)."""
        if H is None or H.size == 0:
            return ""
        u, sv, vt = np.linalg.svd(H)
        tol = RANK_RTOL * max(sv.max(initial=0.0), 1e-300) if cutoff is None else cutoff
        null = vt[sv <= tol] if np.any(sv <= tol) else vt[-1:]
        weight = np.abs(null).sum(axis=0)
        involved = [n for n, sl in self.u2_slices.items() if weight[sl].max() > 1e-8]
        return (f"{len(H) - int(np.sum(sv > tol))} dependent constraint component(s) among "
                f"{', '.join(involved)}")

    # -- helpers ----------------------------------------------------------------------------
    def _solve_named(self, H, rhs, spd, reference, branch, t):
        """_solve, with the unknown sources and the time in its errors."""
        if not (np.all(np.isfinite(H)) and np.all(np.isfinite(rhs))):
            exc = SingularConstraintError(
                f"the constraint equations of Eq. ({branch}) are not finite at t = {t:.6g} s "
                f"for {', '.join(self.unknown_sources)}: check the parameters (overflow, NaN) "
                f"of the elements these constraints see", time=t,
                sources=self.unknown_sources)
            exc.non_finite = True
            raise exc
        return solve_constraints(H, rhs, spd_sign=spd, reference=reference)

    def _inverse(self, M: np.ndarray, loop: np.ndarray, field: str, t: float) -> np.ndarray:
        """(I - J R)^-1 of an algebraic loop; AlgebraicLoopError naming its elements when
        it is singular or not finite."""
        if np.all(np.isfinite(M)):
            try:
                out = np.linalg.inv(M)
                if np.all(np.isfinite(out)):
                    return out
            except np.linalg.LinAlgError:
                pass
        members = self.layout.members["L"] if field == "resistive" else \
            [(n, True) for n in self.layout.members["E"]]
        dims = [self._elements[n].dim for n, _ in members]
        owner = [n for (n, _), d in zip(members, dims) for _ in range(d)]
        involved = sorted({owner[i] for i in np.flatnonzero(np.abs(loop).sum(axis=0)
                                                            + np.abs(loop).sum(axis=1))}
                          or set(owner))
        raise AlgebraicLoopError(
            f"the algebraic loop through the {field} field ({', '.join(involved)}) cannot be "
            f"solved at t = {t:.6g} s: I - J R is singular or not finite; check their "
            f"parameters")

    def _constraint_rows_rate(self, lu, W, mrates):
        """dJ_CZ/dt and dJ_CU1/dt from the moduli' rates."""
        L = self.layout
        rows_c = L.rec[L.rec_slices["C"]]
        nz = L.imp_slices["Z"]
        nu1 = L.imp_slices["U1"]
        if not L.dynamic or lu is None:
            return (np.zeros((len(rows_c), nz.stop - nz.start)),
                    np.zeros((len(rows_c), nu1.stop - nu1.start)))
        dd = L.rate_data(mrates)
        dA_u, dA_i = L.split(dd)
        # dW_u/dt = -A_u^-1 (dA_u W_u + dA_i), only the C rows are needed
        pos = L.col_u[rows_c]
        sel = np.zeros((len(L.unk), len(rows_c)))
        sel[pos, np.arange(len(rows_c))] = 1.0
        Zt = lu.solve(sel, trans="T")           # columns: rows of A_u^-1
        M = dA_u @ W[L.unk] + dA_i.toarray()
        dWc = -(Zt.T @ M)
        return dWc[:, nz], dWc[:, nu1]

    def _u1_names_at(self, idx) -> list[str]:
        owner = [n for n, d in zip(self.sources, self.u1_dims) for _ in range(d)]
        return list(dict.fromkeys(owner[i] for i in idx))      # (in order, once each)


@paused
def _parameter_set(declared: ParameterSet, given) -> ParameterSet:
    """The declared parameters with the ``given`` values, plus any other name given (the
    value of a sympy symbol an element uses without declaring it)."""
    if isinstance(given, ParameterSet):
        return given
    given = dict(given or {})
    extra = [Parameter(k, v) for k, v in given.items() if k not in declared]
    known = {k: v for k, v in given.items() if k in declared}
    return ParameterSet(declared.updated(known).declarations() + tuple(extra))


def assemble(cg: CausalGraph, parameters: Mapping[str, float] | None = None, *,
             omit_rate_terms: bool = False) -> StateSpaceModel:
    """Build the numeric state-space model of a causal graph.

    Parameters
    ----------
    cg : CausalGraph
        From :func:`~bondgraph.assign_causality`.
    parameters : mapping of str to float, optional
        Values of the graph's declared parameters (:meth:`BondGraph.add_parameter`;
        those not given keep their declared values) and of any other sympy symbol the
        elements' laws use.
    omit_rate_terms : bool
        Drop the dJ_C/dt terms from Eq. (15), as the seed paper prints it. Wrong for
        modulated constraints (reactions lose their centripetal parts, constraints
        drift); offered only to demonstrate that.

    Returns
    -------
    StateSpaceModel
    """
    if not isinstance(cg, CausalGraph):
        raise ModelError(f"assemble expects a CausalGraph (from assign_causality), got "
                         f"{type(cg).__name__}")
    return StateSpaceModel(cg, parameters, omit_rate_terms=omit_rate_terms)
