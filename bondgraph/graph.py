"""The editable bond graph: elements as nodes, bonds as edges of a networkx MultiDiGraph.

- :class:`BondGraph`: build, edit, inspect; ``to_networkx`` / ``from_networkx``.
- :class:`Component`: a sub-graph that exposes named ports, added as one piece.

Attribute schema of the networkx graph (what ``to_networkx`` writes and
``from_networkx`` reads)
-------------------------------------------------------------------------------
Nodes are keyed by unique element names (str). Node attributes:

``element``
    The :class:`~bondgraph.Element` object. Optional in ``from_networkx``: without it the
    node must carry ``kind`` (a registered kind, e.g. ``"I"``) and the constructor's
    keyword arguments as attributes (``dim``, ``inertia``, ``modulus``, ...).
``kind``
    The element kind (written by ``to_networkx``).

Edges are bonds, directed in the power direction (tail -> head), keyed by the bond's
name. Edge attributes: ``dim`` (int), ``tail_port`` and ``head_port`` (str; optional in
``from_networkx``: inferred as for :meth:`BondGraph.connect`), and, in a causal graph,
``causality`` (a :class:`~bondgraph.Causality`).

Graph attributes: ``name`` (str), ``kinematic_states`` (tuple of
:class:`~bondgraph.KinematicState`) and ``work_states`` (tuple of
:class:`~bondgraph.WorkState`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import networkx as nx
import sympy

from .bonds import Bond
from .element import Element, check_name, element_type
from .parameters import Parameter, ParameterSet
from .errors import ModelError, NameNotFoundError, PortError, did_you_mean
from .primitives import KinematicState, WorkState

__all__ = ["BondGraph", "Component"]


@dataclass
class Component:
    """A sub-graph packaged as one piece that exposes named ports.

    Parameters
    ----------
    name : str
        Prefix of the component's elements inside a graph (``"<name>.<element>"``).
    graph : BondGraph
        The inner graph, with unprefixed element names.
    ports : mapping of str to str
        Exposed port name -> inner element (usually a junction) that bonds attach to.
    """

    name: str
    graph: "BondGraph"
    ports: dict[str, str] = field(default_factory=dict)


class BondGraph:
    """An editable vector bond graph.

    Elements are nodes with unique names; bonds are directed edges (the power direction)
    with a dimension. The underlying :class:`networkx.MultiDiGraph` is available
    read-only as :attr:`nx` for users' own graph algorithms.

    Examples
    --------
    >>> from bondgraph import BondGraph, Se, I, C, OneJunction
    >>> bg = BondGraph("oscillator")
    >>> _ = bg.add(Se("F", 1.0), OneJunction("v"), I("m", 2.0), C("k", 50.0))
    >>> for a, b in [("F", "v"), ("v", "m"), ("v", "k")]:
    ...     _ = bg.connect(a, b)
    >>> sorted(bg.elements)
    ['F', 'k', 'm', 'v']
    >>> bg.bond("b2").head
    'm'
    """

    def __init__(self, name: str = "model"):
        self.name = check_name(name, "bond graph")
        self._g = nx.MultiDiGraph(name=name)
        self._kinematic: dict[str, KinematicState] = {}
        self._work: dict[str, WorkState] = {}
        self._parameters: dict[str, Parameter] = {}
        self._component_ports: dict[str, str] = {}
        self._bonds: dict[str, Bond] = {}
        self._adjacent: dict[str, list[Bond]] = {}     # node -> its bonds, connection order
        self._counter = itertools.count(1)

    # -- reading ----------------------------------------------------------------------
    @property
    def nx(self) -> nx.MultiDiGraph:
        """A read-only view of the networkx graph (nodes: elements; edges: bonds)."""
        return nx.freeze(self._g.copy(as_view=True))

    @property
    def elements(self) -> dict[str, Element]:
        """Elements by name, in the order they were added."""
        return {n: d["element"] for n, d in self._g.nodes(data=True)}

    @property
    def bonds(self) -> tuple[Bond, ...]:
        """Bonds in the order they were connected."""
        return tuple(self._bonds.values())

    @property
    def kinematic_states(self) -> tuple[KinematicState, ...]:
        """Non-energy states (positions, orientations), in the order they were added."""
        return tuple(self._kinematic.values())

    @property
    def work_states(self) -> tuple[WorkState, ...]:
        """States that integrate the power on a bond, in the order they were added."""
        return tuple(self._work.values())

    @property
    def component_ports(self) -> dict[str, str]:
        """Exposed component ports (``"<component>.<port>"``) -> inner element name."""
        return dict(self._component_ports)

    def element(self, name: str) -> Element:
        """The element called ``name`` (component ports resolve to their inner element).

        Raises
        ------
        KeyError
            With the closest names when there is no such element.
        """
        node = self._resolve(name)
        return self._g.nodes[node]["element"]

    def bond(self, name: str) -> Bond:
        """The bond called ``name``."""
        if name in self._bonds:
            return self._bonds[name]
        raise NameNotFoundError(f"graph '{self.name}' has no bond {name!r}"
                                f"{did_you_mean(name, (b.name for b in self.bonds))}")

    def bonds_of(self, name: str) -> tuple[Bond, ...]:
        """Bonds attached to element ``name``, in connection order."""
        node = self._resolve(name)
        return tuple(self._adjacent.get(node, ()))

    def __contains__(self, name: object) -> bool:
        return name in self._g or name in self._component_ports

    def __len__(self) -> int:
        return self._g.number_of_nodes()

    def __repr__(self) -> str:
        return (f"BondGraph({self.name!r}: {self._g.number_of_nodes()} elements, "
                f"{self._g.number_of_edges()} bonds)")

    # -- editing ----------------------------------------------------------------------
    def add(self, *items: Element | Component) -> "BondGraph":
        """Add elements and components. Returns the graph (for chaining).

        Raises
        ------
        ModelError
            On a duplicate name, or an object that is not an Element or Component.
        """
        for item in items:
            if isinstance(item, Component):
                self._add_component(item)
                continue
            if not isinstance(item, Element):
                raise ModelError(f"graph '{self.name}': can only add Element or Component "
                                 f"objects, got {type(item).__name__} {item!r}")
            if item.name in self._g or item.name in self._component_ports:
                raise ModelError(f"graph '{self.name}': duplicate element name "
                                 f"'{item.name}'; names must be unique")
            self._g.add_node(item.name, element=item, kind=item.kind)
        return self

    def _add_component(self, comp: Component) -> None:
        prefix = comp.name
        inner = comp.graph
        def full(n: str) -> str:
            return n if n.startswith(f"{prefix}.") else f"{prefix}.{n}"

        names = {n: full(n) for n in inner.elements}
        dup = [v for v in names.values() if v in self]
        if dup:
            raise ModelError(f"graph '{self.name}': component '{prefix}' adds names that "
                             f"already exist: {', '.join(dup)}")
        for port, node in comp.ports.items():
            if node not in inner.elements:
                raise PortError(f"component '{prefix}': port '{port}' names missing inner "
                                f"element '{node}'")
        import copy as _copy
        for n, el in inner.elements.items():
            el2 = _copy.copy(el)
            el2.name = names[n]
            # (references to inner elements by name: an EJS's momentum, an Se*'s junction)
            for ref in ("momentum", "junction"):
                target = getattr(el2, ref, None)
                if isinstance(target, str) and target in names:
                    setattr(el2, ref, names[target])
            self.add(el2)
        for b in inner.bonds:
            junction = {n for n in (b.tail, b.head) if inner.elements[n].category.is_junction}
            self.connect(names[b.tail], names[b.head],
                         tail_port=None if b.tail in junction else b.tail_port,
                         head_port=None if b.head in junction else b.head_port,
                         name=full(b.name))
        for ks in inner.kinematic_states:
            src = names.get(ks.source, ks.source)
            self.add_kinematic_state(KinematicState(full(ks.name), src, ks.dim, ks.rate,
                                                    ks.reads))
        for ws in inner.work_states:
            self.add_work_state(WorkState(full(ws.name), names.get(ws.source, ws.source)))
        for port, node in comp.ports.items():
            self._component_ports[f"{prefix}.{port}"] = names[node]

    def connect(self, tail: str, head: str, *, name: str | None = None,
                tail_port: str | None = None, head_port: str | None = None,
                dim: int | None = None) -> Bond:
        """Add a bond from ``tail`` to ``head`` (the power direction).

        Ports are inferred: a one-port's port is ``"p"``; a two-port's port is ``"in"``
        when it is the bond's head and ``"out"`` when it is the tail; a junction's port
        is the bond itself. The dimension is inferred from the ports.

        Raises
        ------
        PortError
            On a missing element or port, a port connected twice, or a dimension mismatch.
        """
        t = self._resolve(tail)
        h = self._resolve(head)
        bname = check_name(name, "bond") if name is not None else self._next_bond_name()
        if bname in self._bonds:
            raise PortError(f"graph '{self.name}': duplicate bond name '{bname}'")
        et, eh = self.element(t), self.element(h)
        tp, tdim = self._port(et, tail_port, as_tail=True, bond=bname)
        hp, hdim = self._port(eh, head_port, as_tail=False, bond=bname)
        dims = {d for d in (tdim, hdim, dim) if d is not None}
        if len(dims) > 1:
            raise PortError(f"bond {bname} ({t}.{tp} -> {h}.{hp}): port dims differ, "
                            f"{tdim} vs {hdim}" + (f" (asked for {dim})" if dim else ""))
        bdim = dims.pop() if dims else 1
        bond = Bond(bname, t, h, tp, hp, bdim)
        self._g.add_edge(t, h, key=bname, bond=bond, dim=bdim, tail_port=tp, head_port=hp)
        self._bonds[bname] = bond
        self._adjacent.setdefault(t, []).append(bond)
        if h != t:
            self._adjacent.setdefault(h, []).append(bond)
        return bond

    def disconnect(self, bond: str | Bond) -> None:
        """Remove a bond (by name or object)."""
        b = self.bond(bond) if isinstance(bond, str) else bond
        self._g.remove_edge(b.tail, b.head, key=b.name)
        del self._bonds[b.name]
        for end in {b.tail, b.head}:
            self._adjacent[end] = [x for x in self._adjacent[end] if x.name != b.name]

    def remove(self, name: str) -> None:
        """Remove an element and its bonds."""
        node = self._resolve(name)
        for b in self.bonds_of(node):
            self.disconnect(b)
        self._g.remove_node(node)
        self._adjacent.pop(node, None)

    def add_kinematic_state(self, state: KinematicState) -> KinematicState:
        """Add a non-energy state that integrates the flow of ``state.source``."""
        if not isinstance(state, KinematicState):
            raise ModelError(f"graph '{self.name}': expected a KinematicState, got {state!r}")
        if state.name in self._kinematic:
            raise ModelError(f"graph '{self.name}': duplicate kinematic state '{state.name}'")
        self._kinematic[state.name] = state
        return state

    def add_work_state(self, state: WorkState) -> WorkState:
        """Add a state that integrates the power on ``state.source``'s bond (J)."""
        if not isinstance(state, WorkState):
            raise ModelError(f"graph '{self.name}': expected a WorkState, got {state!r}")
        if state.name in self._work or state.name in self._kinematic:
            raise ModelError(f"graph '{self.name}': duplicate state name '{state.name}'")
        self._work[state.name] = state
        return state

    def add_parameter(self, name: str, value: float, unit: str = "", meaning: str = "", *,
                      positive: bool = False) -> sympy.Symbol:
        """Declare a named parameter and return its sympy symbol, to use in element laws
        (``I("m2.linear", m)``, ``Se("m2.gravity", m * g)``). Its value is the default of
        every model assembled from this graph; :meth:`StateSpaceModel.with_parameters`
        and ``simulate(..., parameters=...)`` change it without rebuilding anything.

        ``positive``: values must be > 0 (a mass, a stiffness). See
        :class:`~bondgraph.parameters.Parameter`.

        Raises
        ------
        ModelError
            For a name already declared, or a value that breaks the rule.
        """
        if name in self._parameters:
            raise ModelError(f"graph '{self.name}': parameter '{name}' is declared twice")
        p = Parameter(name, value, unit, meaning, positive)
        self._parameters[name] = p
        return p.symbol

    @property
    def parameters(self) -> ParameterSet:
        """The declared parameters (name -> value), in declaration order."""
        return ParameterSet(tuple(self._parameters.values()))

    def copy(self) -> "BondGraph":
        """An independent copy (elements are shared; they are not mutated by the package)."""
        new = BondGraph(self.name)
        new._g = self._g.copy()
        new._bonds = dict(self._bonds)
        new._adjacent = {n: list(v) for n, v in self._adjacent.items()}
        new._kinematic = dict(self._kinematic)
        new._work = dict(self._work)
        new._parameters = dict(self._parameters)
        new._component_ports = dict(self._component_ports)
        new._counter = itertools.count(len(self._bonds) + 1)
        return new

    # -- networkx interchange ---------------------------------------------------------
    def to_networkx(self) -> nx.MultiDiGraph:
        """A plain networkx copy following the module's attribute schema."""
        g = nx.MultiDiGraph(name=self.name, kinematic_states=self.kinematic_states,
                            work_states=self.work_states)
        for n, el in self.elements.items():
            g.add_node(n, element=el, kind=el.kind, **el.parameters())
        for b in self.bonds:
            g.add_edge(b.tail, b.head, key=b.name, dim=b.dim, tail_port=b.tail_port,
                       head_port=b.head_port)
        return g

    @classmethod
    def from_networkx(cls, g: nx.Graph, name: str | None = None) -> "BondGraph":
        """Build a graph from a networkx graph that follows the attribute schema.

        Nodes carry either ``element`` or ``kind`` plus constructor keyword arguments;
        edges point in the power direction and may carry ``dim``, ``tail_port``,
        ``head_port``. Multi-edges keep their keys as bond names.

        Raises
        ------
        ModelError
            Naming the node or edge whose attributes do not fit the schema.
        """
        if not g.is_directed():
            raise ModelError("from_networkx: the graph must be directed (edges point in the "
                             "power direction); got an undirected graph")
        bg = cls(name or g.graph.get("name") or "model")
        problems: list[str] = []
        for n, d in g.nodes(data=True):
            if not isinstance(n, str):
                problems.append(f"node {n!r}: element names must be strings")
                continue
            el = d.get("element")
            if el is None:
                kind = d.get("kind")
                if kind is None:
                    problems.append(f"node '{n}': needs an 'element' or a 'kind' attribute")
                    continue
                try:
                    klass = element_type(kind)
                except KeyError as exc:
                    problems.append(f"node '{n}': {exc.args[0]}")
                    continue
                kwargs = {k: v for k, v in d.items() if k not in ("kind", "element")}
                try:
                    el = klass(n, **kwargs)
                except TypeError as exc:
                    problems.append(f"node '{n}' (kind {kind!r}): bad attributes: {exc}")
                    continue
            elif el.name != n:
                problems.append(f"node '{n}': its element is named '{el.name}'")
                continue
            try:
                bg.add(el)
            except ModelError as exc:
                problems.append(str(exc))
        if problems:
            raise ModelError(problems)
        edges = g.edges(keys=True, data=True) if g.is_multigraph() else \
            ((u, v, None, d) for u, v, d in g.edges(data=True))
        for u, v, k, d in edges:
            try:
                bg.connect(u, v, name=k if isinstance(k, str) else None,
                           tail_port=d.get("tail_port"), head_port=d.get("head_port"),
                           dim=d.get("dim"))
            except ModelError as exc:
                problems.append(f"edge {u!r} -> {v!r}: {exc}")
        for ks in g.graph.get("kinematic_states", ()):
            bg.add_kinematic_state(ks)
        for ws in g.graph.get("work_states", ()):
            bg.add_work_state(ws)
        if problems:
            raise ModelError(problems)
        return bg

    # -- diagrams ---------------------------------------------------------------------
    def to_dot(self) -> str:
        """Graphviz DOT text of the graph (see :mod:`bondgraph.viz`)."""
        from .viz import to_dot
        return to_dot(self)

    def render(self, path: str, format: str | None = None) -> str:
        """Render the diagram to ``path`` (SVG, PNG or PDF); see :func:`bondgraph.viz.render`."""
        from .viz import render
        return render(self, path, format)

    def _repr_svg_(self) -> str | None:
        from .viz import svg_or_none
        return svg_or_none(self)

    # -- helpers ----------------------------------------------------------------------
    def _next_bond_name(self) -> str:
        while True:
            candidate = f"b{next(self._counter)}"
            if candidate not in self._bonds:
                return candidate

    def _resolve(self, name: str) -> str:
        if name in self._g:
            return name
        if name in self._component_ports:
            return self._component_ports[name]
        pool = list(self._g.nodes) + list(self._component_ports)
        raise PortError(f"graph '{self.name}' has no element or component port "
                        f"{name!r}{did_you_mean(name, pool)}")

    def _port(self, el: Element, port: str | None, *, as_tail: bool,
              bond: str) -> tuple[str, int | None]:
        """(port name, port dim) of ``el`` for a new bond; checks it is free."""
        cat = el.category
        if cat.is_junction:
            if port is not None and port != bond:
                raise PortError(f"bond {bond}: junction '{el.name}' has no named ports "
                                f"(got port {port!r}); each bond is its own port")
            return bond, el.dim
        specs = {p.name: p for p in el.ports()}
        if port is None:
            if cat.is_two_port:
                port = "out" if as_tail else "in"
            else:
                port = next(iter(specs))
        if port not in specs:
            raise PortError(f"bond {bond}: {el.kind} '{el.name}' has no port {port!r}; valid "
                            f"ports: {', '.join(specs)}")
        for b in self.bonds_of(el.name):
            used = b.tail_port if b.tail == el.name else b.head_port
            if used == port:
                raise PortError(f"Port '{port}' in {el.kind} '{el.name}' is already connected "
                                f"({b})")
        return port, specs[port].dim
