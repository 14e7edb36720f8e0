"""How to write, register and use a new element kind.

``ExampleMass`` is an inertia (I-kind) given by one scalar mass m (kg) that acts
equally along each of its ``dim`` directions: its inertia matrix is m E_dim, so its
field matrix (Eqs. (5)-(6): flow = F p) is F = E_dim / m. The core's ``I`` accepts a
scalar too; the point here is the extension mechanism:

1. subclass the category base (:class:`bondgraph.primitives.StorageBase` for I and C),
2. set the class data ``kind`` (a unique registry key), ``category`` and
   ``state_prefix`` (``"p"``: the state is called ``p_<name>``),
3. implement the hooks: ``field_matrix`` (numeric), ``field_matrix_symbolic`` (for
   :func:`bondgraph.symbolic_equations`), ``parameters`` and ``problems``,
4. decorate the class with :func:`bondgraph.register_element`.

The new kind is then used like a built-in one: causality assignment, assembly,
simulation, diagrams and ``BondGraph.from_networkx`` (which looks kinds up by name).

The model: a point mass on an isotropic spring in 3-D, pulled by a constant force::

    Se:F (dim 3) --> 1:v (dim 3) --> ExampleMass:body (dim 3)
                                '--> C:spring (dim 3)

Frame: one fixed global frame; the spring's displacement q (m) and the force F (N) are
in its components, q = 0 where the spring is unstretched. Each component obeys
m q'' + k q = F_i, whose closed form the cross-check compares against.

Run: ``python examples/custom_element.py`` (exit status 1 if a cross-check fails).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import sympy

try:
    import bondgraph  # noqa: F401
except ImportError:  # a source checkout that is not installed: use the package beside us
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bondgraph import (
    C, BondGraph, Category, OneJunction, Se, assemble, assign_causality, register_element,
    simulate,
)
from bondgraph.element import is_symbolic, resolve_parameter
from bondgraph.primitives import StorageBase


@register_element
class ExampleMass(StorageBase):
    """A mass m (kg) acting equally along ``dim`` directions: p = m v, v = p / m.

    Parameters
    ----------
    name : str
        Element name; the state is ``p_<name>`` (momentum, kg m/s, shape (dim,)).
    mass : float or sympy expression
        The mass m (kg), positive. A sympy symbol takes its value at
        :func:`bondgraph.assemble` (``parameters={...}``).
    dim : int, default 1
        Number of directions (1 scalar, 2 planar, 3 spatial).

    Notes
    -----
    Causality: like every I-kind, it prefers integral causality (it receives the
    effort, a force in N, and imposes the flow, a velocity in m/s).
    """

    kind = "ExampleMass"
    category = Category.INERTIA
    state_prefix = "p"

    def __init__(self, name: str, mass: Any = None, *, dim: int = 1):
        super().__init__(name, dim=dim)
        self.mass = mass

    def parameters(self) -> dict[str, Any]:
        return {"mass": self.mass}

    def problems(self) -> list[str]:
        if self.mass is None:
            return [f"ExampleMass '{self.name}': parameter 'mass' is missing (no physical "
                    f"default is assumed)"]
        if is_symbolic(self.mass):
            return []
        value = np.asarray(self.mass, dtype=float)
        if value.ndim != 0 or not np.isfinite(value) or value <= 0.0:
            return [f"ExampleMass '{self.name}': parameter 'mass' must be one positive "
                    f"number (kg), got {self.mass!r}"]
        return []

    def field_matrix(self, values: Mapping[str, float] | None = None) -> np.ndarray:
        """F = E_dim / m, shape (dim, dim), in 1/kg."""
        m = float(resolve_parameter(self.mass, values, owner=self.name, parameter="mass"))
        return np.eye(self.dim) / m

    def field_matrix_symbolic(self) -> sympy.Matrix:
        return sympy.eye(self.dim) / sympy.sympify(self.mass)

    def label(self) -> str:
        return f"ExampleMass: {self.name}\\nm={self.mass}"


def build(m: float, k: float, force: np.ndarray) -> BondGraph:
    """The 3-D oscillator of the module docstring (m in kg, k in N/m, force in N)."""
    bg = BondGraph("example_mass_oscillator")
    bg.add(Se("F", list(force), dim=3), OneJunction("v", dim=3),
           ExampleMass("body", m, dim=3), C("spring", k, dim=3))
    for tail, head in [("F", "v"), ("v", "body"), ("v", "spring")]:
        bg.connect(tail, head)
    return bg


def main() -> int:
    m, k = 0.5, 200.0                                  # kg, N/m
    force = np.array([1.0, -2.0, -m * 9.81])           # N, global frame
    q0 = np.array([0.01, 0.0, -0.02])                  # m, spring displacement
    v0 = np.array([0.0, 0.3, 0.1])                     # m/s
    bg = build(m, k, force)
    model = assemble(assign_causality(bg))
    print("states:", model.state_names)                # ('p_body', 'q_spring')
    t = np.linspace(0.0, 2.0, 401)
    result = simulate(model, (0.0, 2.0), {"p_body": m * v0, "q_spring": q0}, t_eval=t,
                      method="DOP853", rtol=1e-12, atol=1e-12)
    print(result)

    # Cross-checks
    w = np.sqrt(k / m)                                 # rad/s
    q_eq = force / k
    q_exact = (q_eq[:, None] + (q0 - q_eq)[:, None] * np.cos(w * t)
               + (v0 / w)[:, None] * np.sin(w * t))
    v_exact = -(q0 - q_eq)[:, None] * w * np.sin(w * t) + v0[:, None] * np.cos(w * t)
    err_q = float(np.max(np.abs(result.state("q_spring") - q_exact)))
    err_v = float(np.max(np.abs(result.state("p_body") / m - v_exact)))
    # the registry finds the new kind by name: the same graph written in plain networkx
    # (nodes carry a kind string and constructor arguments) gives the same equations
    g = nx.MultiDiGraph(name="from_networkx")
    g.add_node("F", kind="Se", effort=list(force), dim=3)
    g.add_node("v", kind="1", dim=3)
    g.add_node("body", kind="ExampleMass", mass=m, dim=3)
    g.add_node("spring", kind="C", stiffness=k, dim=3)
    g.add_edges_from([("F", "v"), ("v", "body"), ("v", "spring")])
    again = assemble(assign_causality(BondGraph.from_networkx(g)))
    x = np.random.default_rng(0).normal(size=model.n_states)
    kind_ok = (again.graph.element("body").kind == "ExampleMass"
               and np.array_equal(again.rhs(0.0, x), model.rhs(0.0, x)))
    print(f"max |q - closed form| = {err_q:.3e} m")
    print(f"max |v - closed form| = {err_v:.3e} m/s")
    print(f"built from networkx by kind name, same dx/dt: {kind_ok}")
    ok = result.success and err_q < 1e-9 and err_v < 1e-8 and kind_ok
    print("cross-checks:", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
