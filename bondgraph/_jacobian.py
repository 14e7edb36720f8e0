"""The Jacobian d(dX/dt)/dX an implicit solver (Radau, BDF, LSODA) is given.

- :func:`jacobian_options`: the keyword arguments for the solver's constructor (``jac``
  or ``jac_sparsity``), a description of what it gets and what one Jacobian costs, for
  the result's diagnostics.
- :func:`linear_jacobian`: the exact, constant Jacobian A = T_X of a linear model (no
  kinematic or work states, no constraint sources, no Euler junction structure, no
  state-dependent source or modulus: dX/dt = T_X X + T_U1 U_1(t) with constant T_X), or
  None and the reason it is not.
- :func:`jacobian_sparsity`: which state derivatives can depend on which states, from
  the model's structure (:class:`Sparsity`).
- :class:`GroupedDifferences`: the Jacobian by finite differences in those groups.

Any other model's Jacobian is formed by finite differences, when Newton's iteration
converges badly, grouped by the structural sparsity: every group of states whose
derivatives share no row is perturbed at once (one evaluation per group, not per
state). Above :data:`SPARSE_ABOVE` states with at most 10 % nonzeros, Radau and BDF get
the pattern (``jac_sparsity``: scipy's grouped differences and a sparse LU); otherwise
the solver gets :class:`GroupedDifferences`, a dense matrix (LAPACK's LU). A model whose
pattern has no zero gets scipy's dense differences (one evaluation per state). The
Jacobian only steers Newton's iteration: the solution's accuracy is set by rtol and
atol, so an approximate Jacobian costs iterations, never accuracy.

The pattern is structural, never a numeric sample (a sample misses entries that vanish
at one state by accident, a joint at zero angle). The states an element's law reads are
those it declares (:meth:`~bondgraph.Element.state_dependencies`: a modulus's and a
position constraint's ``depends_on``, a :class:`~bondgraph.StateFunction`'s
``depends_on``, an EJS's momentum, a contact system's bodies); a kinematic state's rate
reads its own state, its ``reads`` and the flows it integrates. Such a read state, and
every energy state, may reach every energy, work and kinematic flow through the junction
structure, the fields and the constraint efforts (those rows are taken dense over them);
a state nobody reads (a work state, a joint coordinate no law reads) reaches only the
kinematic rates that read it. Where the junction structure is constant (no constraint
source, no Euler junction, no modulus that reads a state), the energy rows are exact:
dX/dt = T_Z Z + T_U1 U_1 with T_Z = J_XZ + J_XL R (I - J_LL R)^-1 J_LZ, whose pattern
is that of the boolean products of the constant J blocks, of the resistive field (a
nonlinear resistor's whole block, its tangent varying) and of the closure of J_LL R (the
algebraic loops), then of the storage fields' blocks (a nonlinear one's whole block).
A state-dependent source that declares no state it reads makes every column dense, and
the description says which source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.integrate import BDF, LSODA, OdeSolver, Radau

from .errors import BondGraphError

__all__ = ["jacobian_options", "linear_jacobian", "jacobian_cost", "jacobian_sparsity", "Sparsity",
           "GroupedDifferences", "IMPLICIT", "SPARSE_ABOVE"]

IMPLICIT: tuple[type[OdeSolver], ...] = (Radau, BDF, LSODA)
"""The solvers (and their subclasses) that take a Jacobian."""

SPARSE_ABOVE = 200
"""States above which a Jacobian with at most 10 % nonzeros is handed over as a sparse
matrix or pattern (Radau and BDF then factor it with a sparse LU); a smaller or denser
one is dense (LAPACK's LU is faster there)."""

LINEARITY_RTOL = 1e-8
"""Relative tolerance of the check that the model is linear along a trial direction
(rounding in a linear model's derivative is of order 1e-16 relative)."""


def jacobian_options(model, solver_cls: type[OdeSolver], rhs, t0: float,
                     x0: np.ndarray, atol: Any = 0.0) -> tuple[dict[str, Any], str, int]:
    """What ``solver_cls`` is given: the keywords for its constructor (``jac`` or
    ``jac_sparsity``; empty for explicit methods and dense differences), what it is in
    words, and the evaluations one Jacobian costs (0 for an analytic one; scipy's own
    differences may add a few to refine a column lost in rounding). ``atol`` (the run's,
    a number or one per state) is the smallest scale of a state's difference step."""
    if not issubclass(solver_cls, IMPLICIT):
        return {}, "none (explicit method)", 0
    A, why = linear_jacobian(model, rhs, t0, x0)
    if A is None:
        pattern = jacobian_sparsity(model)
        if pattern.dense:
            return ({}, f"dense finite differences ({why}; {pattern.describe()})",
                    model.n_states)
        n = model.n_states
        if n > SPARSE_ABOVE and pattern.pattern.sum() <= 0.1 * n * n and \
                not issubclass(solver_cls, LSODA):           # (LSODA takes no pattern)
            return ({"jac_sparsity": sp.csc_matrix(pattern.pattern, dtype=float)},
                    (f"finite differences in {pattern.groups} groups of columns, sparse "
                     f"LU ({why}; {pattern.describe()})"), pattern.groups)
        return ({"jac": GroupedDifferences(rhs, pattern, atol)},
                (f"finite differences in {pattern.groups} groups of columns ({why}; "
                 f"{pattern.describe()})"), pattern.groups + 1)
    if issubclass(solver_cls, LSODA):       # (LSODA takes a callable only)
        return {"jac": lambda t, y: A}, "analytic: constant T_X (a linear model)", 0
    if A.shape[0] > SPARSE_ABOVE and np.count_nonzero(A) <= 0.1 * A.size:
        return ({"jac": sp.csc_matrix(A)},
                "analytic: constant T_X (a linear model), sparse", 0)
    return {"jac": A}, "analytic: constant T_X (a linear model)", 0


class GroupedDifferences:
    """``jac(t, y)``: d(dX/dt)/dX by forward differences, the states of one group of the
    pattern perturbed together (one evaluation per group, and one at y), as a dense
    matrix (factored by LAPACK's dense LU: faster than a sparse one for the patterns of
    a few hundred states with more than 10 % nonzeros that models have).

    The step of state j is sqrt(eps) max(|y_j|, atol_j) in the direction of its rate,
    scipy's first choice in its own differences (``num_jac``), made exactly
    representable; scipy's further refinement of a column lost in rounding is left out
    (the Jacobian steers Newton's iteration only).

    Where ``rhs`` is the run's :class:`~bondgraph._rhs.RightHandSide` with a compiled
    right-hand side, the groups are evaluated in one compiled call
    (:meth:`~bondgraph._rhs.RightHandSide.grouped_differences`, the same numbers as one
    call per group), and the groups it could not answer one by one here.
    """

    def __init__(self, rhs, sparsity: "Sparsity", atol: Any = 0.0):
        from scipy.optimize._numdiff import group_columns
        P = sparsity.pattern
        self.rhs = rhs
        self.n = P.shape[0]
        self.floor = np.broadcast_to(np.asarray(atol, dtype=float), (self.n,)).copy()
        groups = group_columns(P)
        self.groups = []
        for g in range(int(groups.max()) + 1 if self.n else 0):
            cols = np.flatnonzero(groups == g)
            rows, k = np.nonzero(P[:, cols])         # each row has one column of the group
            self.groups.append((cols, rows, cols[k]))
        self.packed = self._pack(self.groups)

    @staticmethod
    def _pack(groups) -> tuple:
        """The groups as flat arrays for a compiled loop over them (:meth:`bondgraph.
        _rhs.RightHandSide.grouped_differences`): the offsets of each group's columns,
        the columns, the offsets of each group's entries, their rows and columns."""
        def flat(parts):
            return (np.concatenate(parts) if parts else np.zeros(0)).astype(np.int64)
        off = [np.r_[0, np.cumsum([g[i].size for g in groups])].astype(np.int64)
               for i in (0, 1)]
        return (off[0], flat([g[0] for g in groups]), off[1], flat([g[1] for g in groups]),
                flat([g[2] for g in groups]))

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        y = np.array(y, dtype=float)             # (a writeable copy, for compiled code)
        f0 = np.array(self.rhs(t, y), dtype=float)
        h = np.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), self.floor)
        h = np.where(h > 0, h, np.sqrt(np.finfo(float).eps))
        h = np.where(f0 >= 0, h, -h)             # (along the motion, as scipy's)
        h = (y + h) - y
        J = np.zeros((self.n, self.n))
        # the groups in one compiled call where the run has a compiled right-hand side
        # (the same numbers); the rest (all, or from a group it could not answer) here
        compiled = getattr(self.rhs, "grouped_differences", None)
        done = compiled(t, y, f0, h, self.packed, J) if compiled is not None else 0
        for cols, rows, at in self.groups[done:]:
            yp = y.copy()
            yp[cols] += h[cols]
            df = self.rhs(t, yp) - f0
            J[rows, at] = df[rows] / h[at]
        return J


def _not_linear(model) -> list[str]:
    """Why ``model``'s structure is not that of a linear model (empty: it is)."""
    why = []
    if model.n_kinematic:
        why.append("kinematic states")
    if model.work:
        why.append("work states")
    if model.n_u2:
        why.append("constraint sources")
    if model.ejs:
        why.append("Euler junction structures")
    if model._state_dependent_u1:
        why.append(f"state-dependent source(s) {', '.join(model._state_dependent_u1)}")
    moduli = [n for n, m in model.moduli.items() if getattr(m, "depends_on", ())]
    if moduli:
        why.append(f"state-dependent moduli ({', '.join(moduli)})")
    if getattr(model, "nonlinear", False):
        why.append("nonlinear constitutive laws")
    if not (isinstance(model.F, np.ndarray) and isinstance(model.R, np.ndarray)):
        why.append("fields that are not constant matrices")
    return why


def jacobian_cost(model) -> int:
    """The evaluations one finite-difference Jacobian of ``model`` costs in an implicit
    run (its pattern's column groups; every state where the pattern is dense), or 0
    where the model is linear (its Jacobian is T_X, exact and constant)."""
    if not _not_linear(model):
        return 0
    return jacobian_sparsity(model).groups


def linear_jacobian(model, rhs, t0: float, x0: np.ndarray
                    ) -> tuple[np.ndarray | None, str]:
    """(A, "") where dX/dt = A X + b(t) holds exactly with A = T_X, else (None, the
    reason). ``rhs(t, x)`` is the run's right-hand side: two evaluations of it check
    linearity along a fixed trial direction, a guard against a model kind this test does
    not know (the structural conditions are the proof)."""
    why = _not_linear(model)
    if why:
        return None, "not a linear model: " + ", ".join(why)
    with np.errstate(all="ignore"):
        A = np.array(model.evaluate(t0, x0).T_X, dtype=float)
        if A.shape != (model.n_states, model.n_states) or not np.all(np.isfinite(A)):
            return None, "T_X is not a finite square matrix"
        # the guard: f(x0 + d) - f(x0) = A d along a fixed direction d
        d = np.random.default_rng(20).uniform(0.5, 1.0, x0.size) * \
            (1e-2 * np.abs(x0) + 1e-2 * max(float(np.abs(x0).max(initial=0.0)), 1.0))
        f0, f1 = rhs(t0, x0), rhs(t0, x0 + d)
        diff = np.abs(f1 - f0 - A @ d)
        scale = np.abs(A) @ (np.abs(x0) + d) + np.abs(f0) + np.abs(f1)
    if not (np.all(np.isfinite(diff)) and np.all(diff <= LINEARITY_RTOL * scale.max())):
        return None, "the derivative is not linear along a trial direction"
    return A, ""


@dataclass(frozen=True)
class Sparsity:
    """The structural pattern of d(dX/dt)/dX.

    Attributes
    ----------
    pattern : ndarray of bool (n_states, n_states)
        ``pattern[i, j]``: state derivative i may depend on state j.
    groups : int
        Columns of finite differences: states in one group share no row, so one
        evaluation perturbs them all (scipy's ``group_columns``).
    dense_because : str
        Why the pattern is dense throughout ("" when it is not forced dense).
    """

    pattern: np.ndarray
    groups: int
    dense_because: str = ""

    @property
    def dense(self) -> bool:
        """True when no entry is structurally zero."""
        return bool(self.pattern.all())

    def describe(self) -> str:
        n = self.pattern.shape[0]
        if self.dense_because:
            return f"pattern dense: {self.dense_because}"
        return (f"structural pattern {int(self.pattern.sum())} of {n * n} entries, "
                f"{self.groups} groups for {n} states")


def jacobian_sparsity(model) -> Sparsity:
    """The structural pattern of the Jacobian of ``model``'s state derivative (see the
    module docstring for the rules; every entry the model can make nonzero is in it)."""
    from scipy.optimize._numdiff import group_columns
    n, sl = model.n_states, model.state_slices
    elements = model.graph.elements
    kinematic = {ks.name: ks for ks in model.kinematic}

    def idx(name: str) -> np.ndarray:
        return np.arange(sl[name].start, sl[name].stop)

    reads: set[str] = set()
    undeclared = []
    for name, el in elements.items():
        deps = tuple(el.state_dependencies())
        reads.update(deps)
        law = model.sources.get(name)
        if law is not None and law.state_dependent and not deps:
            undeclared.append(name)
    for mod in model.moduli.values():
        reads.update(getattr(mod, "depends_on", ()))
    # a read kinematic state's rate enters the moduli's rates (Eq. (15)'s dJ/dt terms):
    # what that rate reads is read too
    todo = [r for r in reads if r in kinematic]
    while todo:
        for r in kinematic[todo.pop()].reads:
            if r not in reads:
                reads.add(r)
                if r in kinematic:
                    todo.append(r)
    if undeclared:
        return Sparsity(np.ones((n, n), dtype=bool), n,
                        f"state-dependent source(s) {', '.join(undeclared)} declare no "
                        f"state they read")
    bulk_cols = np.zeros(n, dtype=bool)
    bulk_cols[:model.n_energy] = True          # energy states: through the fields
    for r in reads:
        bulk_cols[idx(r)] = True
    P = np.zeros((n, n), dtype=bool)
    energy = _energy_rows(model, idx)
    if energy is None:
        P[:model.n_energy, bulk_cols] = True   # energy rows: junction, fields, U_2
    else:
        P[:model.n_energy] = energy
    P[model.n_energy + model.n_kinematic:, bulk_cols] = True    # work rows: powers
    for ks in model.kinematic:
        rows = idx(ks.name)
        P[rows[:, None], np.flatnonzero(bulk_cols)[None, :]] = True     # its flows
        if ks.rate is not None:
            for r in (ks.name, *ks.reads):
                P[rows[:, None], idx(r)[None, :]] = True
    groups = int(group_columns(P).max()) + 1 if n else 0
    return Sparsity(P, groups)


def _bool_product(*factors: np.ndarray) -> np.ndarray:
    """The pattern of a product of matrices of these patterns (no cancellation assumed)."""
    out = factors[0].astype(np.int64)
    for f in factors[1:]:
        out = np.minimum(out @ f.astype(np.int64), 1)
    return out.astype(bool)


def _energy_rows(model, idx) -> np.ndarray | None:
    """The energy rows' pattern (n_energy, n_states) where the junction structure is
    constant (see the module docstring), else None."""
    if model.n_u2 or model.ejs or any(getattr(m, "depends_on", ())
                                      for m in model.moduli.values()):
        return None
    L = model.layout
    try:                            # (the same every evaluation: no modulus reads a state)
        with np.errstate(all="ignore"):
            lu, A_i = L.factor(L.data(model.functions.moduli(np.zeros(model.n_states),
                                                             {})))
            b = L.structure(L.full_map(lu, A_i)).blocks
    except BondGraphError:          # (a junction structure the run itself will refuse)
        return None
    if not all(np.all(np.isfinite(v)) for v in b.values()):
        return None
    B = {k: v != 0 for k, v in b.items()}
    Rs = model.R != 0                                  # the resistive field's pattern
    for sl, _ in model._nl_r:
        Rs[sl, sl] = True
    loop = np.eye(Rs.shape[0], dtype=bool)             # closure of J_LL R: (I - J_LL R)^-1
    step = _bool_product(B["LL"], Rs)
    while True:
        grown = loop | _bool_product(loop, step)
        if (grown == loop).all():
            break
        loop = grown
    through = _bool_product(B["XL"], Rs, loop)          # X rows through the resistors
    T_Z = B["XZ"] | _bool_product(through, B["LZ"])
    T_U1 = B["XU1"] | _bool_product(through, B["LU1"])
    Fs = model.F != 0                                  # the storage fields' pattern
    for sl, _ in model._nl_storage:
        Fs[sl, sl] = True
    out = np.zeros((model.n_energy, model.n_states), dtype=bool)
    out[:, :model.n_energy] = _bool_product(T_Z, Fs)
    start = 0
    for name, law in model.sources.items():            # U_1 in the layout's order
        dim = model.graph.elements[name].dim
        if law.state_dependent:
            cols = [i for d in model.graph.elements[name].state_dependencies()
                    for i in idx(d)]
            out[np.ix_(T_U1[:, start:start + dim].any(axis=1), cols)] = True
        start += dim
    return out
