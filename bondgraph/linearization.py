"""Linearisation and equilibria of any assembled state-space model.

- :func:`linearize`: (A, B, C, D) of a :class:`~bondgraph.StateSpaceModel` about an
  operating point, with named states, inputs (sources whose values are overridden) and
  outputs (states, bond efforts and flows, constraint efforts).
- :func:`find_equilibrium`: a steady operating point (rates zero) under given inputs,
  solving for chosen states or inputs; a ModelError when none is found.
- :class:`Equilibrium`: what :func:`find_equilibrium` found.
- :func:`jacobian`: the Jacobian of a vector function by Ridders' extrapolated central
  differences, with an error estimate per entry.

The model is x' = f(t, x, u) where u are the values of the sources named as inputs.
Derivatives: where the model is linear (constant moduli, no kinematic states, no Euler
junction structure, no state-dependent source but the inputs) f and the outputs are
affine in (x, u) and one central difference per variable with a unit-sized step is exact
to rounding; otherwise Ridders' method (central differences at steps h, h/1.4, ...,
extrapolated to h -> 0 by Richardson's tableau) gives each entry with an estimate of its
error. The model's evaluation is real-valued (its kernels are compiled for floats), so
complex-step differentiation is not available.

Work states (the integrals of a source's power) are left out of the linear model: they
feed nothing back.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bonds import component_names
from .element import StateView
from .errors import ModelError, did_you_mean
from .linear_model import LinearModel
from .primitives.sources import SourceLaw
from .reduction import Evaluation, StateSpaceModel

__all__ = ["linearize", "find_equilibrium", "Equilibrium", "jacobian", "output_reader",
           "output_location", "evaluate", "InputOverride", "RIDDERS_LEVELS", "DEFAULT_STEP"]

RIDDERS_LEVELS = 8
"""Steps in Ridders' tableau (each shrinks the step by 1.4; 2 evaluations per step)."""

DEFAULT_STEP = 0.1
"""First step of Ridders' method, relative to max(1, |value|) of each variable: large on
purpose (the extrapolation, not a small step, gives the accuracy, and a large step keeps
rounding small)."""


def jacobian(fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
             step: np.ndarray | float | None = None, *, exact: bool = False,
             levels: int = RIDDERS_LEVELS, second_pass: bool = True
             ) -> tuple[np.ndarray, np.ndarray]:
    """The Jacobian of ``fun`` at ``x0`` and an estimate of each entry's absolute error.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> ndarray (m,)`` for ``x`` of shape (n,).
    x0 : ndarray (n,)
    step : float or ndarray (n,), optional
        The first step per variable (default ``DEFAULT_STEP * max(1, |x0|)``).
    exact : bool
        ``fun`` is affine: one central difference per variable (with the step
        ``max(1, |x0|)`` unless given) is exact but for rounding, which is the estimate.
    levels : int
        Steps of Ridders' tableau.
    second_pass : bool
        Run Ridders' method a second time from a first step 3 times smaller and take
        the difference of the two results into the error estimate (the extrapolation's
        own estimate alone can miss the rounding noise of the function, which the deep
        orders of the tableau amplify).

    Returns
    -------
    J : ndarray (m, n)
        The first pass's result.
    error : ndarray (m, n)
        The largest of: each pass's estimate (the change of the best extrapolation
        between its last two orders, as in Numerical Recipes' ``dfridr``, at least the
        rounding of the differences) and the difference between the passes; for an
        exact Jacobian, the rounding.
    """
    x0 = np.asarray(x0, dtype=float)
    n = x0.size
    base = np.maximum(1.0, np.abs(x0))
    if step is None:
        h0 = base if exact else DEFAULT_STEP * base
    else:
        h0 = np.broadcast_to(np.asarray(step, dtype=float), (n,)).copy()
        if np.any(~np.isfinite(h0)) or np.any(h0 <= 0):
            raise ModelError(f"finite-difference steps must be positive, got {step!r}")
    f0 = np.asarray(fun(x0), dtype=float)
    m = f0.size
    J, E = np.zeros((m, n)), np.zeros((m, n))
    eps = np.finfo(float).eps
    for j in range(n):
        def diff(h):
            xp, xm = x0.copy(), x0.copy()
            xp[j] += h
            xm[j] -= h
            fp, fm = np.asarray(fun(xp), dtype=float), np.asarray(fun(xm), dtype=float)
            rounding = 8 * eps * np.maximum(np.maximum(np.abs(fp), np.abs(fm)),
                                            np.abs(f0)) / (2 * h)
            return (fp - fm) / (2 * h), rounding
        if exact:
            J[:, j], E[:, j] = diff(h0[j])
            continue
        J[:, j], E[:, j] = _ridders(diff, h0[j], levels, m)
        if second_pass:
            J2, E2 = _ridders(diff, h0[j] / 3.0, levels, m)
            E[:, j] = np.maximum(np.maximum(E[:, j], E2), np.abs(J[:, j] - J2))
    return J, E


def _ridders(diff, h, levels, m):
    """Ridders' method for one column: central differences at h, h/1.4, ... in Neville's
    tableau (Richardson extrapolation in h^2); the entry with the smallest estimated
    error, and that error."""
    con, safe = 1.4, 2.0
    tab = np.empty((levels, levels, m))
    tab[0, 0], rnd = diff(h)
    best, err = tab[0, 0].copy(), np.full(m, np.inf)
    for i in range(1, levels):
        h /= con
        tab[i, 0], rnd = diff(h)
        fac = con * con
        for k in range(1, i + 1):
            tab[i, k] = (tab[i, k - 1] * fac - tab[i - 1, k - 1]) / (fac - 1.0)
            fac *= con * con
            e = np.maximum(np.abs(tab[i, k] - tab[i, k - 1]),
                           np.abs(tab[i, k] - tab[i - 1, k - 1]))
            better = e <= err
            best = np.where(better, tab[i, k], best)
            err = np.where(better, e, err)
        if np.all(np.abs(tab[i, i] - tab[i - 1, i - 1]) >= safe * err):
            break          # (higher orders only grow: rounding has taken over)
    return best, np.maximum(err, rnd)


# -- names ---------------------------------------------------------------------------------
def _components(names: Sequence[str], dims: Sequence[int]) -> list[str]:
    """Scalar names (:func:`bondgraph.bonds.component_names`)."""
    return component_names(zip(names, dims))


def _state_components(model: StateSpaceModel) -> tuple[list[str], np.ndarray]:
    """The scalar state names and their positions in x, work states left out."""
    work = {w.name for w in model.work}
    names, idx = [], []
    for n in model.state_names:
        if n in work:
            continue
        sl = model.state_slices[n]
        d = sl.stop - sl.start
        names += _components([n], [d])
        idx += list(range(sl.start, sl.stop))
    return names, np.array(idx, dtype=int)


def _input_components(model: StateSpaceModel, inputs: Sequence[str]
                      ) -> tuple[list[str], list[tuple[str, int]]]:
    """The scalar input names and (source, component) of each, for the sources named
    (a source's name for all its components, ``name[i]`` for one)."""
    if isinstance(inputs, str):
        inputs = [inputs]
    dims = {n: model.graph.element(n).dim for n in model.sources}
    valid = _components(list(dims), list(dims.values()))
    names, where = [], []
    for name in inputs:
        if name in dims:
            comps = [(name, i) for i in range(dims[name])]
        elif name in valid:
            src, _, i = name.rpartition("[")
            comps = [(src, int(i[:-1]))]
        else:
            raise ModelError(f"no source named {name!r} to take as an input"
                             f"{did_you_mean(name, valid)}; sources (Se, Sf): "
                             f"{', '.join(valid) or 'none'}")
        for c in comps:
            label = c[0] if dims[c[0]] == 1 else f"{c[0]}[{c[1]}]"
            if label in names:
                raise ModelError(f"input {label!r} is named twice")
            names.append(label)
            where.append(c)
    return names, where


def output_location(model: StateSpaceModel, name: str) -> tuple[str, int]:
    """Where output ``name`` is found in an evaluation: ``("x", k)`` (state component k),
    ``("U2", k)`` (constraint effort component k) or ``("w", k)`` (bond variable k of
    ``bond_values``: efforts, then flows). The names: a state (or a component
    ``state[i]``), ``<bond>.e`` / ``<bond>.f`` (a bond's effort or flow, in its
    direction), ``<element>.e`` / ``<element>.f`` (the bond of a one-port element), an
    unknown effort source's effort ``Se*_...`` (a constraint effort), each with ``[i]``
    for a component of a vector; a ModelError naming the valid forms otherwise."""
    base, idx = name, 0
    if name.endswith("]") and "[" in name:
        base, _, i = name.rpartition("[")
        try:
            idx = int(i[:-1])
        except ValueError:
            base, idx = name, 0
    if base in model.state_slices:
        sl = model.state_slices[base]
        if not 0 <= idx < sl.stop - sl.start:
            raise ModelError(f"output {name!r}: state {base!r} has {sl.stop - sl.start} "
                             f"components")
        return "x", sl.start + idx
    if base in model.u2_slices:
        sl = model.u2_slices[base]
        if not 0 <= idx < sl.stop - sl.start:
            raise ModelError(f"output {name!r}: {base!r} has {sl.stop - sl.start} "
                             f"components")
        return "U2", sl.start + idx
    stem, dot, what = base.rpartition(".")
    if dot and what in ("e", "f"):
        bond = None
        if stem in model.bond_slices:
            bond = stem
        elif stem in model.graph.elements:
            bonds = model.graph.bonds_of(stem)
            if len(bonds) == 1:
                bond = bonds[0].name
            else:
                raise ModelError(f"output {name!r}: element {stem!r} has {len(bonds)} bonds; "
                                 f"name one of them ({', '.join(b.name for b in bonds)})")
        if bond is not None:
            e, f = model.bond_slices[bond]
            sl = e if what == "e" else f
            if not 0 <= idx < sl.stop - sl.start:
                raise ModelError(f"output {name!r}: bond {bond!r} has dimension "
                                 f"{sl.stop - sl.start}")
            return "w", sl.start + idx
    choices = list(model.state_slices) + list(model.u2_slices) + \
        [f"{b}.{w}" for b in model.bond_slices for w in "ef"] + \
        [f"{n}.{w}" for n in model.graph.elements for w in "ef"]
    raise ModelError(f"no output {name!r}{did_you_mean(name, choices)}; outputs are states "
                     f"({', '.join(model.state_names)}), constraint efforts "
                     f"({', '.join(model.unknown_sources) or 'none'}), and '<bond>.e', "
                     f"'<bond>.f', '<element>.e', '<element>.f' (a one-port's bond), with "
                     f"'[i]' for a component of a vector")


def output_reader(model: StateSpaceModel, name: str) -> Callable[[Evaluation], float]:
    """A function of an :class:`Evaluation` that gives output ``name`` (the names of
    :func:`output_location`); a ModelError naming the valid forms otherwise."""
    kind, k = output_location(model, name)
    if kind == "x":
        return lambda ev: float(ev.x[k])
    if kind == "U2":
        return lambda ev: float(ev.U2[k])
    return lambda ev: float(ev.bond_values[k])


def evaluate(model: StateSpaceModel, t: float, x: np.ndarray) -> Any:
    """Everything at (t, x): the sparse evaluation (:meth:`SparseReduction.evaluate`, a
    :class:`~bondgraph.StepValues`) where it applies, else the dense
    :class:`Evaluation` (same field names for xdot, U2, bond values, c and Phi)."""
    sr = model.sparse()
    if sr.applicable:
        ev = sr.evaluate(t, x)
        if ev is not None:
            return ev
    return model.evaluate(t, x)


# -- inputs as overridden sources ------------------------------------------------------------
class InputOverride:
    """A copy of a model whose sources named as inputs take the values in ``values``
    (constant; their rates zero), the original model untouched."""

    def __init__(self, model: StateSpaceModel, where: Sequence[tuple[str, int]]):
        self.original = model
        self.model = m = copy.copy(model)
        self.where = list(where)
        self.values = np.zeros(len(self.where))
        m.sources = dict(model.sources)
        m._source_plan = None
        m._sparse = None
        per_source: dict[str, list[tuple[int, int]]] = {}
        for k, (src, i) in enumerate(self.where):
            per_source.setdefault(src, []).append((k, i))
        for src, pairs in per_source.items():
            law = model.sources[src]
            dim = model.graph.element(src).dim
            zero = np.zeros(dim)

            def value(t, s, law=law, pairs=pairs):
                v = np.array(law.value(t, s), dtype=float)
                for k, i in pairs:
                    v[i] = self.values[k]
                return v

            whole = len(pairs) == dim
            m.sources[src] = SourceLaw(value, lambda t, s, z=zero: z,
                                       law.state_dependent and not whole)
        m._state_dependent_u1 = [n for n, law in m.sources.items() if law.state_dependent]

    def nominal(self, t: float, x: np.ndarray) -> np.ndarray:
        """The inputs' values in the original model at (t, x)."""
        s = StateView(x, self.original.state_slices)
        out = []
        for src, i in self.where:
            out.append(float(np.atleast_1d(self.original.sources[src].value(t, s))[i]))
        return np.array(out)

    def check_rates(self, ev: Evaluation) -> None:
        """A ModelError for an input that enters the constraint equations (Eq. (15) uses
        its time derivative, which a linear model in (x, u) cannot carry)."""
        cu1 = ev.junction.blocks.get("CU1")
        if ev.H4 is None or cu1 is None or not cu1.size:
            return
        off = np.cumsum([0] + list(self.original.u1_dims))
        pos = {n: int(off[k]) for k, n in enumerate(self.original.sources)}
        bad = [src if self.original.graph.element(src).dim == 1 else f"{src}[{i}]"
               for src, i in self.where if np.abs(cu1[:, pos[src] + i]).max() > 0]
        if bad:
            raise ModelError(f"input(s) {', '.join(bad)} enter the constraint equations "
                             f"(Eq. (15) uses their time derivative): a linear model in "
                             f"(x, u) cannot take them as inputs; choose effort sources")


def _is_affine(model: StateSpaceModel, override: InputOverride) -> bool:
    """Whether the state equations and outputs are affine in (x, u): constant moduli, no
    kinematic states, no EJS, no state-dependent source that is not an input."""
    inputs = {src for src, _ in override.where}
    return (not model.layout.dynamic and not model.kinematic and not model.ejs and
            not any(law.state_dependent for n, law in model.sources.items()
                    if n not in inputs))


# -- linearisation ---------------------------------------------------------------------------
def _state_vector(model: StateSpaceModel, x0: Any) -> np.ndarray:
    if isinstance(x0, Mapping):
        values = dict(x0)
        for w in model.work:
            values.setdefault(w.name, 0.0)
        return model.initial_state(values)
    x = np.asarray(x0, dtype=float)
    if x.shape != (model.n_states,):
        raise ModelError(f"operating point has shape {x.shape}; valid: ({model.n_states},) "
                         f"for states {', '.join(model.state_names)}, or a mapping by name")
    return x


def linearize(model: StateSpaceModel, x0: Mapping[str, Any] | np.ndarray, *,
              inputs: Sequence[str] = (), outputs: Sequence[str] = (),
              u0: Mapping[str, float] | None = None, t: float = 0.0,
              step: float | None = None, exact: bool | None = None) -> LinearModel:
    """Linearise ``model`` about the state ``x0`` and input values ``u0``.

    Parameters
    ----------
    model : StateSpaceModel
    x0 : mapping of state name to value, or ndarray (n_states,)
        The operating point (every state but work states, which default to 0).
    inputs : sequence of str
        Sources (Se, Sf) whose values are the inputs u: a source's name (all its
        components) or ``name[i]``. Their rates are taken as zero.
    outputs : sequence of str
        See :func:`output_reader`: states, ``<bond>.e``, ``<bond>.f``,
        ``<element>.e``, ``<element>.f``, constraint efforts ``Se*_...``.
    u0 : mapping of input name to value, optional
        The inputs at the operating point (default: each source's own value at (t, x0)).
    t : float
        Time of the operating point (s), for time-dependent sources.
    step : float, optional
        First finite-difference step relative to max(1, |value|) (default
        :data:`DEFAULT_STEP`).
    exact : bool, optional
        Force (True) or forbid (False) the exact affine differences; default: used when
        the model is linear (see the module docstring).

    Returns
    -------
    LinearModel
        States are the model's (vector states by component, ``p_m[0]``), work states
        left out.

    Raises
    ------
    ModelError
        An unknown state, input or output name (naming the valid ones), an input that
        enters the constraint equations, or an evaluation that fails at the point.
    """
    override = InputOverride(model, _input_components(model, inputs)[1])
    input_names = _input_components(model, inputs)[0]
    m = override.model
    x = _state_vector(model, x0)
    state_names, sidx = _state_components(model)
    readers = [output_reader(model, o) for o in outputs]
    u = override.nominal(t, x)
    for k, v in (u0 or {}).items():
        if k not in input_names:
            raise ModelError(f"u0 given for {k!r}, not an input{did_you_mean(k, input_names)}"
                             f"; inputs: {', '.join(input_names) or 'none'}")
        u[input_names.index(k)] = float(v)
    ns = sidx.size

    def at(z):
        xx = x.copy()
        xx[sidx] = z[:ns]
        override.values[:] = z[ns:]
        return evaluate(m, t, xx)

    def f(z):
        ev = at(z)
        return np.concatenate([ev.xdot[sidx], [r(ev) for r in readers]])

    z0 = np.concatenate([x[sidx], u])
    override.values[:] = u
    override.check_rates(m.evaluate(t, x))
    ev0 = at(z0)
    affine = _is_affine(model, override) if exact is None else bool(exact)
    J, E = jacobian(f, z0, None if step is None else step * np.maximum(1.0, np.abs(z0)),
                    exact=affine)
    y0 = np.array([r(ev0) for r in readers])
    how = ("exact: the model is linear (one central difference of a unit-sized step "
           "per variable; the errors are rounding)" if affine else
           "Ridders' extrapolated central differences (errors: the extrapolation's own "
           "estimate)")
    notes = []
    if model.work:
        notes.append(f"work states left out: {', '.join(w.name for w in model.work)}")
    if inputs:
        notes.append("inputs' rates taken as zero")
    if ev0.H4 is not None and model.kinematic:
        notes.append(f"constrained: the states are maximal coordinates with "
                     f"{model.n_u2} constraint directions that are not dynamics (zero "
                     f"or spurious eigenvalues); for mechanisms use "
                     f"elements.linearize_mechanism (joint coordinates)")
    return LinearModel(J[:ns, :ns], J[:ns, ns:], J[ns:, :ns], J[ns:, ns:],
                       tuple(state_names), tuple(input_names), tuple(outputs), z0[:ns],
                       z0[ns:], y0, ev0.xdot[sidx], float(t),
                       {"A": E[:ns, :ns], "B": E[:ns, ns:], "C": E[ns:, :ns],
                        "D": E[ns:, ns:]}, how, tuple(notes))


# -- equilibria -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Equilibrium:
    """A steady operating point found by :func:`find_equilibrium`.

    Attributes
    ----------
    x : ndarray (n_states,)
        The full state (work states as given).
    inputs : dict of str to float
        The inputs' values there.
    residual : float
        max |rate| of the steady states there (their units per second).
    nfev : int
        Model evaluations used.
    """

    x: np.ndarray
    inputs: dict[str, float]
    residual: float
    nfev: int


def solve_steady(residual: Callable[[np.ndarray], np.ndarray], z0: np.ndarray,
                 names: Sequence[str], conditions: Sequence[str], *, tol: float,
                 max_nfev: int, what: str) -> tuple[np.ndarray, float, int]:
    """Solve ``residual(z) = 0`` (least squares, trust region) from ``z0`` for the
    unknowns ``names``; (z, max |residual|, evaluations), or a ModelError that says what
    did not converge (``what``: the system), the largest remaining residuals by
    ``conditions`` name and the solver's message."""
    from scipy.optimize import least_squares
    count = [0]

    def fun(z):
        count[0] += 1
        try:
            r = np.asarray(residual(z), dtype=float)
        except ModelError:
            return np.full(len(conditions), 1e10)
        return np.where(np.isfinite(r), r, 1e10)

    r0 = fun(z0)
    if r0.size == 0:
        raise ModelError(f"{what}: nothing to make steady (no conditions)")
    if not np.abs(r0).max() <= tol:
        sol = least_squares(fun, z0, method="trf", x_scale="jac", xtol=1e-15, ftol=1e-15,
                            gtol=1e-15, max_nfev=max_nfev)
        z, r, message = sol.x, fun(sol.x), sol.message
    else:
        z, r, message = z0, r0, "the guess is steady"
    worst = float(np.abs(r).max())
    if not worst <= tol:
        order = np.argsort(-np.abs(r))[:5]
        bad = ", ".join(f"{conditions[i]} ({r[i]:.3g})" for i in order)
        raise ModelError(f"{what}: no equilibrium found: solving for {', '.join(names)} "
                         f"left rates {bad} (largest |rate| {worst:.3g} > tol {tol:g}) after "
                         f"{count[0]} evaluations ({message}); try another guess, other "
                         f"unknowns, or check that one exists under these inputs")
    return z, worst, count[0]


def find_equilibrium(model: StateSpaceModel, x0: Mapping[str, Any] | np.ndarray, *,
                     inputs: Mapping[str, float] | None = None,
                     solve_for: Sequence[str] | None = None,
                     steady: Sequence[str] | None = None, t: float = 0.0,
                     tol: float = 1e-9, max_nfev: int = 500) -> Equilibrium:
    """A state (and, if asked, input values) where the chosen states' rates vanish.

    Parameters
    ----------
    model : StateSpaceModel
    x0 : mapping or ndarray
        The starting guess (and the values of the states not solved for).
    inputs : mapping of source name to value, optional
        Sources held at these values (an input named in ``solve_for`` starts there).
    solve_for : sequence of str, optional
        The unknowns: state names (or components ``name[i]``) and input names. Default:
        every state but work states.
    steady : sequence of str, optional
        The states whose rates must vanish. Default: every state but work states.
    t : float
        Time (s) for time-dependent sources.
    tol : float
        The largest |rate| accepted (state units per second).

    Returns
    -------
    Equilibrium

    Raises
    ------
    ModelError
        Unknown names (naming the valid ones), or no equilibrium found: the message names
        the unknowns, the states whose rates stayed largest and the solver's reason.
    """
    inputs = dict(inputs or {})
    names, where = _input_components(model, list(inputs) + [
        n for n in (solve_for or ()) if n not in model.state_slices and
        n.rpartition("[")[0] not in model.state_slices and n not in inputs])
    override = InputOverride(model, where)
    m = override.model
    x = _state_vector(model, x0)
    u = override.nominal(t, x)
    for k, v in inputs.items():
        for i, nm in enumerate(names):
            if nm == k or nm.startswith(f"{k}["):
                u[i] = float(np.atleast_1d(v)[0 if nm == k else int(nm[len(k) + 1:-1])])
    snames, sidx = _state_components(model)
    pos = {n: ("x", int(i)) for n, i in zip(snames, sidx)}
    for k, n in enumerate(names):
        pos[n] = ("u", k)
    unknowns: list[str] = []
    for n in (snames if solve_for is None else solve_for):
        if n in pos:
            unknowns.append(n)
        elif n in model.state_slices:
            sl = model.state_slices[n]
            unknowns += _components([n], [sl.stop - sl.start])
        else:
            raise ModelError(f"cannot solve for {n!r}{did_you_mean(n, pos)}: not a state or "
                             f"an input; states: {', '.join(snames)}")
    conds: list[str] = []
    for n in (snames if steady is None else steady):
        if n in snames:
            conds.append(n)
        elif n in model.state_slices:
            sl = model.state_slices[n]
            conds += _components([n], [sl.stop - sl.start])
        else:
            raise ModelError(f"steady state {n!r} is not a state{did_you_mean(n, snames)}; "
                             f"states: {', '.join(snames)}")
    cidx = np.array([dict(zip(snames, sidx))[c] for c in conds], dtype=int)

    def put(z):
        xx, uu = x.copy(), u.copy()
        for v, n in zip(z, unknowns):
            kind, i = pos[n]
            if kind == "x":
                xx[i] = v
            else:
                uu[i] = v
        return xx, uu

    def residual(z):
        xx, uu = put(z)
        override.values[:] = uu
        return evaluate(m, t, xx).xdot[cidx]

    z0 = np.array([x[pos[n][1]] if pos[n][0] == "x" else u[pos[n][1]] for n in unknowns])
    z, worst, nfev = solve_steady(residual, z0, unknowns, conds, tol=tol,
                                  max_nfev=max_nfev, what=f"model '{model.graph.name}'")
    xx, uu = put(z)
    return Equilibrium(xx, dict(zip(names, map(float, uu))), worst, nfev)
