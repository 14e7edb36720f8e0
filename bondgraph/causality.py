"""Causality assignment (SCAP) with automatic unknown effort sources.

- :func:`assign_causality`: :class:`~bondgraph.BondGraph` -> :class:`CausalGraph`.
- :class:`CausalGraph`: the frozen result: every bond's stroke, the inserted Se*, the
  storage elements that were dependent (X_i2) before the insertion, algebraic loops.
- :class:`InsertedSource`: one inserted unknown effort source.

The procedure (Karnopp's sequential causality assignment, method.md section 4):

1. Sources (Se, Sf, Se*) and the fixed-causality EJS, propagating through junctions,
   transformers and gyrators after each.
2. Each storage element, in the order added, in integral causality, propagating.
3. Each remaining R (resistance causality: flow in, effort out; conductance causality
   for an R whose nonlinear law is given only as flow = g(effort)), propagating; an R
   that had to be chosen here sits in an algebraic loop.
4. Any bond still open (a loop of junctions alone) is chosen arbitrarily, propagating.

A first pass allows differential causality and records the storage elements that end
up dependent: the paper's X_i2. Then the assignment is redone; whenever propagation
would force a storage element into differential causality (or any other conflict), the
causal path is traced back to the 0-junction whose "all flows but one are known" rule
transmitted the constraint; an unknown effort source Se* is inserted there (junctions
flagged ``constraint=True`` are preferred, the nearest first) and the assignment starts
again. A 0-junction left with every flow imposed and no effort (the closing joint of a
loop) also gets one. The user's graph is never mutated: the Se* are added to a copy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from ._gc import paused
from .bonds import Bond, Causality
from .element import Category, Element
from .errors import CausalityError, DifferentialCausalityError
from .graph import BondGraph
from .primitives import UnknownEffort, ZeroJunction
from .validation import validate

__all__ = ["assign_causality", "CausalGraph", "InsertedSource", "StorageCausality"]


class StorageCausality(Enum):
    """Causality of a storage element."""

    INTEGRAL = "integral"
    DIFFERENTIAL = "differential"


@dataclass(frozen=True)
class InsertedSource:
    """An unknown effort source inserted by the causality assignment.

    Attributes
    ----------
    name : str
        ``Se*_<label>`` (label: the junction's ``constraint_label`` or its name).
    junction : str
        The 0-junction it was inserted at.
    bond : str
        Its bond (pointing from the source into the junction).
    dim : int
    reason : str
        Why: which storage element (or junction) it keeps out of differential causality.
    """

    name: str
    junction: str
    bond: str
    dim: int
    reason: str


@dataclass(frozen=True)
class CausalGraph:
    """The frozen result of :func:`assign_causality`.

    Attributes
    ----------
    graph : BondGraph
        A copy of the user's graph with the inserted Se* elements and bonds.
    causality : mapping of bond name to Causality
        Every bond's causal stroke.
    constraint_sources : tuple of InsertedSource
        The inserted unknown effort sources, in insertion order.
    unknown_sources : tuple of str
        Every Se* of the graph (the user's and the inserted), in element order: U_2.
    dependent_storage : tuple of str
        Storage elements in differential causality before any insertion (the paper's X_i2).
    algebraic_loops : tuple of str
        R elements (and bonds) whose causality had to be chosen: they sit in algebraic loops.
    """

    graph: BondGraph
    causality: Mapping[str, Causality]
    constraint_sources: tuple[InsertedSource, ...]
    unknown_sources: tuple[str, ...]
    dependent_storage: tuple[str, ...]
    algebraic_loops: tuple[str, ...]
    source_graph: BondGraph = field(repr=False)

    def stroke(self, bond: str) -> Causality:
        """The causal stroke of ``bond``."""
        return self.causality[bond]

    def effort_receiver(self, bond: str) -> str:
        """The element that receives the effort on ``bond``."""
        b = self.graph.bond(bond)
        return self.causality[bond].effort_receiver(b)

    @property
    def independent_storage(self) -> tuple[str, ...]:
        """Storage elements that were integral before the insertion (the paper's X_i1)."""
        return tuple(n for n, el in self.graph.elements.items()
                     if el.category.is_storage and n not in self.dependent_storage)

    def summary(self) -> str:
        """A short text report of the assignment."""
        lines = [f"causal graph of '{self.graph.name}': {len(self.causality)} bonds"]
        for s in self.constraint_sources:
            lines.append(f"  inserted {s.name} (dim {s.dim}) at 0-junction '{s.junction}': "
                         f"{s.reason}")
        if self.dependent_storage:
            lines.append("  dependent storage before insertion (X_i2): "
                         + ", ".join(self.dependent_storage))
        if self.algebraic_loops:
            lines.append("  algebraic loops through: " + ", ".join(self.algebraic_loops))
        return "\n".join(lines)


# =======================================================================================

class _Conflict(Exception):
    def __init__(self, element: str, bonds: list[int], message: str,
                 under_determined_zero: bool = False):
        super().__init__(message)
        self.element = element
        self.bonds = bonds
        self.message = message
        self.under_determined_zero = under_determined_zero


class _Pass:
    """One run of the SCAP over a fixed graph."""

    def __init__(self, bg: BondGraph, allow_differential: bool):
        self.bg = bg
        self.allow = allow_differential
        self.elements: dict[str, Element] = bg.elements
        self.bonds: list[Bond] = list(bg.bonds)
        self.index = {b.name: i for i, b in enumerate(self.bonds)}
        self.of: dict[str, list[int]] = {n: [] for n in self.elements}
        for i, b in enumerate(self.bonds):
            self.of[b.tail].append(i)
            if b.head != b.tail:
                self.of[b.head].append(i)
        # receiver[i]: name of the element that receives the effort on bond i, or None
        self.receiver: list[str | None] = [None] * len(self.bonds)
        # provenance[i]: (element that decided, rule, trigger bonds)
        self.prov: list[tuple[str, str, tuple[int, ...]] | None] = [None] * len(self.bonds)
        self.differential: list[str] = []
        self.chosen_r: list[str] = []
        self.queue: deque[str] = deque()

    # -- primitives ---------------------------------------------------------------------
    def recv(self, el: str, i: int) -> bool | None:
        r = self.receiver[i]
        return None if r is None else r == el

    def set(self, i: int, receiver: str, by: str, rule: str, triggers: tuple[int, ...]):
        cur = self.receiver[i]
        if cur is not None:
            if cur != receiver:
                b = self.bonds[i]
                raise _Conflict(by, [i, *triggers],
                                f"{b} would need the effort at both ends ({rule} at '{by}')")
            return
        self.receiver[i] = receiver
        self.prov[i] = (by, rule, triggers)
        b = self.bonds[i]
        for end in (b.tail, b.head):
            if end != by:
                self.queue.append(end)
        # the deciding element may have more to propagate too
        self.queue.append(by)

    def assign_one_port(self, name: str, receives_effort: bool, rule: str):
        (i,) = self.of[name]
        b = self.bonds[i]
        other = b.other(name)
        self.set(i, name if receives_effort else other, name, rule, ())
        self.propagate()

    # -- propagation --------------------------------------------------------------------
    def propagate(self):
        while self.queue:
            name = self.queue.popleft()
            self.apply(name)

    def apply(self, name: str):
        el = self.elements[name]
        cat = el.category
        bonds = self.of[name]
        if cat is Category.ZERO:
            ins = [i for i in bonds if self.recv(name, i) is True]
            outs = [i for i in bonds if self.recv(name, i) is False]
            open_ = [i for i in bonds if self.recv(name, i) is None]
            if len(ins) > 1:
                raise _Conflict(name, ins, f"0-junction '{name}' receives the effort from "
                                f"{len(ins)} bonds ({', '.join(self.bonds[i].name for i in ins)}); "
                                f"exactly one may set it")
            if len(ins) == 1:
                for i in open_:
                    self.set(i, self.bonds[i].other(name), name, "common effort", (ins[0],))
            elif len(open_) == 1:
                self.set(open_[0], name, name, "flows known", tuple(outs))
        elif cat is Category.ONE:
            outs = [i for i in bonds if self.recv(name, i) is False]  # flow setters
            ins = [i for i in bonds if self.recv(name, i) is True]
            open_ = [i for i in bonds if self.recv(name, i) is None]
            if len(outs) > 1:
                raise _Conflict(name, outs, f"1-junction '{name}' has its flow set by "
                                f"{len(outs)} bonds ({', '.join(self.bonds[i].name for i in outs)}); "
                                f"exactly one may set it")
            if len(outs) == 1:
                for i in open_:
                    self.set(i, name, name, "common flow", (outs[0],))
            elif len(open_) == 1:
                self.set(open_[0], self.bonds[open_[0]].other(name), name, "efforts known",
                         tuple(ins))
        elif cat.is_two_port:
            self.apply_two_port(name, el)
        elif cat.is_storage:
            (i,) = bonds
            r = self.recv(name, i)
            if r is None:
                return
            integral = (r is True) if cat is Category.INERTIA else (r is False)
            if not integral and name not in self.differential:
                if not self.allow:
                    raise _Conflict(name, [i], f"{el.kind} '{name}' is forced into "
                                    f"differential causality")
                self.differential.append(name)
        elif cat in (Category.EFFORT_SOURCE, Category.UNKNOWN_EFFORT):
            (i,) = bonds
            if self.recv(name, i) is True:
                other = self.elements[self.bonds[i].other(name)]
                raise _Conflict(name, [i], f"{el.kind} '{name}' must impose its effort, but "
                                f"{other.kind} '{other.name}' already imposes one on "
                                f"{self.bonds[i]} (two effort sources on one effort?)")
        elif cat is Category.FLOW_SOURCE:
            (i,) = bonds
            if self.recv(name, i) is False:
                raise _Conflict(name, [i], f"Sf '{name}' must impose its flow, but "
                                f"{self.bonds[i]} asks it for an effort")
        elif cat is Category.EULER:
            (i,) = bonds
            if self.recv(name, i) is True:
                raise _Conflict(name, [i], f"EJS '{name}' must receive the angular velocity "
                                f"(flow) and impose its effort, but {self.bonds[i]} gives "
                                f"it an effort")

    def apply_two_port(self, name: str, el):
        bonds = self.of[name]
        port_of = {}
        for i in bonds:
            b = self.bonds[i]
            port_of[b.tail_port if b.tail == name else b.head_port] = i
        if set(port_of) != {"in", "out"}:
            return
        i1, i2 = port_of["in"], port_of["out"]
        r1, r2 = self.recv(name, i1), self.recv(name, i2)
        tf = el.category is Category.TRANSFORMER
        # standard causality: TF receives flow on 'in' and effort on 'out';
        # GY receives flow on both ports. The other one needs an invertible modulus.
        standard = {i1: False, i2: True} if tf else {i1: False, i2: False}
        if r1 is None and r2 is None:
            return
        known, other = (i1, i2) if r1 is not None else (i2, i1)
        rk = self.recv(name, known)
        is_standard = rk == standard[known]
        want_other = standard[other] if is_standard else (not standard[other])
        if not is_standard and not el.invertible:
            raise _Conflict(name, [known], f"{el.kind} '{name}' would have to be used the "
                            f"other way round (its {self.bonds[known]} receives the "
                            f"{'effort' if rk else 'flow'}), which needs an invertible "
                            f"modulus; its modulus (shape {el.shape}) is not")
        b = self.bonds[other]
        self.set(other, name if want_other else b.other(name), name,
                 "two-port", (known,))

    # -- phases -------------------------------------------------------------------------
    def run(self):
        els = self.elements
        for name, el in els.items():
            cat = el.category
            if cat in (Category.EFFORT_SOURCE, Category.UNKNOWN_EFFORT):
                self.assign_one_port(name, False, "source")
            elif cat is Category.FLOW_SOURCE:
                self.assign_one_port(name, True, "source")
            elif cat is Category.EULER:
                self.assign_one_port(name, False, "EJS")
        for name, el in els.items():
            if el.category.is_storage:
                (i,) = self.of[name]
                if self.receiver[i] is None:
                    self.assign_one_port(name, el.category is Category.INERTIA, "integral")
                else:
                    self.apply(name)
        for name, el in els.items():
            if el.category is Category.RESISTANCE:
                (i,) = self.of[name]
                if self.receiver[i] is None:
                    self.chosen_r.append(name)
                    # (flow in, unless the element's law is written for effort in)
                    self.assign_one_port(name, bool(getattr(el, "prefers_conductance", False)),
                                         "resistance")
        for i, b in enumerate(self.bonds):
            if self.receiver[i] is None:
                self.chosen_r.append(b.name)
                self.set(i, b.head, b.tail, "arbitrary", ())
                self.propagate()
        # a 0-junction with every flow imposed has nothing to set its effort
        for name, el in els.items():
            if el.category is Category.ZERO:
                if not any(self.recv(name, i) for i in self.of[name]):
                    raise _Conflict(name, list(self.of[name]),
                                    f"0-junction '{name}' has every flow imposed and nothing "
                                    f"sets its effort", under_determined_zero=True)
            elif el.category is Category.ONE:
                if all(self.recv(name, i) for i in self.of[name]):
                    raise _Conflict(name, list(self.of[name]),
                                    f"1-junction '{name}' has every effort imposed and nothing "
                                    f"sets its flow")

    # -- trace back ---------------------------------------------------------------------
    def responsible_zero(self, conflict: _Conflict) -> str | None:
        """The 0-junction that transmitted the constraint behind ``conflict``."""
        if conflict.under_determined_zero:
            return conflict.element
        seen: set[int] = set()
        queue = deque(conflict.bonds)
        flagged: list[str] = []
        plain: list[str] = []
        while queue:
            i = queue.popleft()
            if i in seen:
                continue
            seen.add(i)
            p = self.prov[i]
            if p is None:
                continue
            by, rule, triggers = p
            if rule == "flows known" and self.elements[by].category is Category.ZERO:
                el = self.elements[by]
                (flagged if isinstance(el, ZeroJunction) and el.constraint else plain).append(by)
            queue.extend(triggers)
        if flagged:
            return flagged[0]
        if plain:
            return plain[0]
        return None


@paused
def assign_causality(bg: BondGraph) -> CausalGraph:
    """Assign causality to every bond, inserting unknown effort sources where needed.

    Parameters
    ----------
    bg : BondGraph
        The graph; it is validated first and never mutated.

    Returns
    -------
    CausalGraph

    Raises
    ------
    ModelError
        If the graph is invalid (see :func:`~bondgraph.validate`).
    DifferentialCausalityError
        If a storage element stays in differential causality and no 0-junction on its
        causal path can take an Se* (e.g. two inertias rigidly on one 1-junction).
    CausalityError
        On another conflict (e.g. two effort sources on one 0-junction).

    Examples
    --------
    Two masses joined rigidly: the coupling 0-junction gets an Se*.

    >>> from bondgraph import models, assign_causality
    >>> cg = assign_causality(models.two_masses_rigid(m1=1.0, m2=3.0, force=2.0))
    >>> [s.name for s in cg.constraint_sources], cg.dependent_storage
    (['Se*_coupling'], ('m2',))
    """
    validate(bg)
    first = _Pass(bg, allow_differential=True)
    try:
        first.run()
        dependent = tuple(first.differential)
    except _Conflict:
        dependent = tuple(first.differential)

    # Flagged constraint junctions (joints) take an Se* in every ordinary case: insert them
    # up front, so that one pass settles a mechanism; the conflict-driven insertion below
    # handles whatever remains (loops, unflagged junctions). If the up-front insertions
    # conflict with the graph (a flagged junction whose effort something else sets), the
    # assignment starts over without them.
    try:
        work, inserted, p = _insert_until_settled(bg, preinsert=True)
    except (CausalityError, DifferentialCausalityError):
        work, inserted, p = _insert_until_settled(bg, preinsert=False)
    causality = {}
    for i, b in enumerate(p.bonds):
        causality[b.name] = (Causality.EFFORT_TO_HEAD if p.receiver[i] == b.head
                             else Causality.EFFORT_TO_TAIL)
    unknown = tuple(n for n, el in work.elements.items()
                    if el.category is Category.UNKNOWN_EFFORT)
    return CausalGraph(graph=work, causality=causality, constraint_sources=tuple(inserted),
                       unknown_sources=unknown, dependent_storage=dependent,
                       algebraic_loops=tuple(p.chosen_r), source_graph=bg)


def _insert_source(work: BondGraph, junction: str, reason: str) -> InsertedSource:
    """Add an Se* (named after the junction's constraint label) bonded to ``junction``."""
    jel = work.element(junction)
    label = getattr(jel, "constraint_label", None) or junction
    name = f"Se*_{label}"
    k = 2
    while name in work:
        name = f"Se*_{label}_{k}"
        k += 1
    work.add(UnknownEffort(name, dim=jel.dim, junction=junction))
    bond = work.connect(name, junction, name=f"{name}.bond")
    return InsertedSource(name, junction, bond.name, jel.dim, reason)


def _insert_until_settled(bg: BondGraph, preinsert: bool):
    """Run the SCAP on a copy of ``bg``, inserting Se* at the responsible 0-junctions
    until no conflict remains. Returns (graph, inserted sources, the final pass)."""
    work = bg.copy()
    inserted: list[InsertedSource] = []
    if preinsert:
        for name, el in bg.elements.items():
            if isinstance(el, ZeroJunction) and el.constraint and not any(
                    work.element(b.other(name)).category in
                    (Category.EFFORT_SOURCE, Category.UNKNOWN_EFFORT)
                    for b in work.bonds_of(name)):
                inserted.append(_insert_source(
                    work, name, f"constraint junction '{name}' (flagged): its effort is "
                                f"the constraint's reaction"))
    limit = len(inserted) + sum(1 for el in bg.elements.values()
                                if el.category is Category.ZERO) + 1
    while True:
        p = _Pass(work, allow_differential=False)
        try:
            p.run()
            return work, inserted, p
        except _Conflict as conflict:
            junction = p.responsible_zero(conflict)
            if junction is None or len(inserted) >= limit or any(
                    s.junction == junction for s in inserted):
                el = work.elements[conflict.element]
                if el.category.is_storage:
                    raise DifferentialCausalityError(
                        f"{conflict.message}, and no 0-junction on its causal path can take "
                        f"an unknown effort source: combine the dependent storage elements "
                        f"or add a compliance between them") from None
                raise CausalityError(f"causality conflict: {conflict.message}") from None
            inserted.append(_insert_source(work, junction, f"{conflict.message}"))
