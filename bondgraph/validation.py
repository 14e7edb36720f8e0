"""Structural and parameter checks that collect every problem and raise once.

- :func:`validate`: check a :class:`~bondgraph.BondGraph`; raises one
  :class:`~bondgraph.ModelError` listing each problem on its own line.
- :func:`state_names`: the names of a graph's states (energy, then kinematic).
"""

from __future__ import annotations

from collections import Counter

from .element import Category
from .errors import ModelError
from .graph import BondGraph
from .primitives import EJS, StorageBase, ZeroJunction

__all__ = ["validate", "state_names"]


def state_names(bg: BondGraph) -> tuple[str, ...]:
    """Energy states (``p_<I>``, ``q_<C>``, in order of addition), then kinematic states,
    then work states."""
    energy = tuple(el.state_name for el in bg.elements.values()
                   if isinstance(el, StorageBase))
    return (energy + tuple(k.name for k in bg.kinematic_states)
            + tuple(w.name for w in bg.work_states))


def validate(bg: BondGraph) -> None:
    """Check the graph and its parameters; raise once with every problem found.

    Checks: each bond's ends exist and their port dimensions agree; every one-port has
    exactly one bond and every two-port one bond per port; junctions have at least two
    bonds (a 0-junction flagged ``constraint=True`` may have one, as the unknown effort
    source will be its second); each element's own parameters (missing, non-finite,
    non-positive or non-symmetric inertia, compliance, wrong shapes); the states that
    elements and kinematic states read exist.

    Raises
    ------
    ModelError
        One error whose message lists every problem, each naming its element or bond.
    """
    if not isinstance(bg, BondGraph):
        hint = ("a mechanism assembles itself: mechanism.assemble()"
                if hasattr(bg, "joints") and hasattr(bg, "bodies") else
                "build one with BondGraph() and add/connect")
        raise ModelError(f"expected a BondGraph, got {type(bg).__name__}; {hint}")
    problems: list[str] = []
    elements = bg.elements
    all_names = state_names(bg)
    names = set(all_names)
    counts = Counter(all_names)
    dup_states = [n for n in names if counts[n] > 1]
    for n in sorted(set(dup_states)):
        problems.append(f"state name '{n}' is used twice (an energy state and a kinematic "
                        f"state, or two kinematic states); state names must be unique")
    for b in bg.bonds:
        for end, port in ((b.tail, b.tail_port), (b.head, b.head_port)):
            if end not in elements:
                problems.append(f"{b}: element '{end}' does not exist")
                continue
            el = elements[end]
            if el.category.is_junction:
                if el.dim != b.dim:
                    problems.append(f"{b}: junction '{end}' has dim {el.dim} but the bond has "
                                    f"dim {b.dim}")
                continue
            specs = {p.name: p.dim for p in el.ports()}
            if port not in specs:
                problems.append(f"{b}: {el.kind} '{end}' has no port '{port}'; valid ports: "
                                f"{', '.join(specs)}")
            elif specs[port] != b.dim:
                problems.append(f"{b}: port dims differ, {el.kind} '{end}'.{port} has dim "
                                f"{specs[port]}, bond has dim {b.dim}")
    for name, el in elements.items():
        bonds = bg.bonds_of(name)
        cat = el.category
        if cat.is_junction:
            minimum = 1 if (isinstance(el, ZeroJunction) and el.constraint) else 2
            if len(bonds) < minimum:
                problems.append(f"junction '{name}' ({el.kind}) has {len(bonds)} bond(s); a "
                                f"junction needs at least {minimum}")
        elif cat.is_two_port:
            for spec in el.ports():
                n = sum(1 for b in bonds if (b.tail == name and b.tail_port == spec.name) or
                        (b.head == name and b.head_port == spec.name))
                if n != 1:
                    problems.append(f"{el.kind} '{name}': port '{spec.name}' has {n} bonds; "
                                    f"each port of a two-port needs exactly one")
        else:
            if len(bonds) != 1:
                listed = ", ".join(b.name for b in bonds) or "none"
                problems.append(f"{el.kind} '{name}' is a one-port with {len(bonds)} bonds "
                                f"({listed}); it needs exactly one")
        problems.extend(el.problems())
        for dep in el.state_dependencies():
            if dep not in names:
                problems.append(f"{el.kind} '{name}' reads state '{dep}', which the graph does "
                                f"not have; states: {', '.join(sorted(names)) or 'none'}")
        if isinstance(el, EJS) and el.momentum:
            target = elements.get(el.momentum)
            if target is None or target.category is not Category.INERTIA or target.dim != 3:
                problems.append(f"EJS '{name}': momentum '{el.momentum}' must name a 3-dim I "
                                f"element of the graph")
    kin_names = {k.name for k in bg.kinematic_states}
    for ks in bg.kinematic_states:
        dims = []
        for src in ks.sources:
            if src in elements:
                el = elements[src]
                if not (el.category is Category.ONE or el.category.is_one_port):
                    problems.append(f"kinematic state '{ks.name}': source '{src}' is a "
                                    f"{el.kind}; valid sources: a 1-junction, a one-port "
                                    f"element or a bond")
                    continue
                dims.append(el.dim)
            else:
                try:
                    dims.append(bg.bond(src).dim)
                except KeyError:
                    problems.append(f"kinematic state '{ks.name}': source '{src}' is neither "
                                    f"an element nor a bond of the graph")
        for r in ks.reads:
            if r not in kin_names:
                problems.append(f"kinematic state '{ks.name}' reads '{r}', which is not a "
                                f"kinematic state of the graph")
        if ks.rate is None and (len(ks.sources) != 1 or (dims and dims[0] != ks.dim)):
            problems.append(f"kinematic state '{ks.name}' has dim {ks.dim} but integrates "
                            f"flows of dims {dims}; give a rate function or match the dims")
    for ws in bg.work_states:
        src = ws.source
        if src in elements:
            if not elements[src].category.is_one_port:
                problems.append(f"work state '{ws.name}': source '{src}' must be a one-port "
                                f"element or a bond")
        else:
            try:
                bg.bond(src)
            except KeyError:
                problems.append(f"work state '{ws.name}': source '{src}' is neither an element "
                                f"nor a bond of the graph")
    if problems:
        raise ModelError(problems)
