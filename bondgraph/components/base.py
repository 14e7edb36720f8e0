"""Component types: composite bond graphs with named ports, built by name.

- :class:`ComponentParameter`, :class:`ComponentPort`: what a component type declares.
- :class:`ComponentType`: a builder function with its declared ports and parameters;
  calling it with an instance name and parameter values gives a
  :class:`bondgraph.Component` (its elements prefixed ``<instance>.`` when added to a
  graph). :func:`define_component` makes one (for a user's own sub-model).
- The registry by name: :func:`register_component`, :func:`component` (build by type
  name, with a did-you-mean for unknown names), :func:`components` (the listing with
  ports, parameters and units).

The port convention of the library (``docs/components.md``):

- **Two-terminal components** (ports ``a`` and ``b``) sit between two nodes. Connect
  ``node_a -> comp.a`` and ``comp.b -> node_b``: the power enters at ``a`` and leaves at
  ``b``. In the effort-across domains (electrical, hydraulic, thermal) the nodes are
  0-junctions (a voltage, pressure or temperature) and the component's elements sit on an
  inner 1-junction: they see the drop e_a - e_b and the through flow from a to b. In 1-D
  mechanics the nodes are 1-junctions (a velocity) and a spring or damper sits on an
  inner 0-junction: it carries one force and sees the relative rate v_a - v_b.
- **A port left unconnected is the reference**: zero effort (ground, ambient zero
  pressure) for the 1-junction components, zero flow (a wall) for the 0-junction ones.
- **One-port mechanics** (a mass, an inertia, a force or speed source) expose ``a``, an
  inner 1-junction: the mass's velocity node itself. Any number of bonds may attach, in
  either direction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from bondgraph.errors import ModelError, NameNotFoundError, did_you_mean
from bondgraph.graph import BondGraph, Component
from bondgraph.primitives import OneJunction, WorkState, ZeroJunction

__all__ = ["through_junction", "across_junction", "source_builder", "ComponentParameter", "ComponentPort", "ComponentType", "ComponentListing",
           "define_component", "register_component", "component", "components",
           "COMPONENT_TYPES", "REQUIRED"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""The default of a parameter that must be given."""

RULES = ("positive", "nonnegative", "any", "value")
"""How a parameter is checked: ``positive`` (a finite number > 0), ``nonnegative``
(>= 0), ``any`` (a finite number), ``value`` (a source value: a number, a sympy
expression of time ``t``, a TimeFunction or a StateFunction, checked by the element).
A sympy expression with free symbols (a declared parameter) passes the number rules: its
value is checked at assembly."""


@dataclass(frozen=True)
class ComponentParameter:
    """A parameter of a component type: its name, unit, meaning, default (``REQUIRED``:
    none) and rule (one of :data:`RULES`)."""

    name: str
    unit: str
    meaning: str
    default: Any = REQUIRED
    rule: str = "positive"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ModelError(f"component parameter '{self.name}': rule {self.rule!r} is not "
                             f"one of {', '.join(RULES)}")

    @property
    def required(self) -> bool:
        """Whether the parameter has no default."""
        return self.default is REQUIRED


@dataclass(frozen=True)
class ComponentPort:
    """A port of a component type: its name, the inner element that bonds attach to, and
    what it is (domain, direction)."""

    name: str
    element: str
    meaning: str = ""


def _number_problem(value: Any, rule: str) -> str | None:
    """Why ``value`` breaks ``rule`` (None: it does not)."""
    if rule in ("value",):
        return None
    if isinstance(value, sympy.Basic):
        if value.free_symbols:
            return None                      # a declared parameter: checked at assembly
        try:
            value = float(value)
        except TypeError:
            return "it is not a real number"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)):
        return f"it is a {type(value).__name__}, not a number"
    v = float(value)
    if not np.isfinite(v):
        return "it is not finite"
    if rule == "positive" and not v > 0:
        return "it must be > 0"
    if rule == "nonnegative" and not v >= 0:
        return "it must be >= 0"
    return None


def through_junction(bg: BondGraph, *elements: Any, junction: str = "j") -> None:
    """Add ``elements`` on a new 1-junction ``junction`` (bonds pointing into them): a
    two-terminal component of an effort-across domain, ports ``a`` and ``b`` on the
    junction, its elements seeing e_a - e_b and the flow from a to b."""
    bg.add(OneJunction(junction), *elements)
    for el in elements:
        bg.connect(junction, el.name)


def across_junction(bg: BondGraph, *elements: Any, junction: str = "j") -> None:
    """Add ``elements`` on a new 0-junction ``junction``: a two-terminal component of 1-D
    mechanics (one force; the elements see the rate v_a - v_b)."""
    bg.add(ZeroJunction(junction), *elements)
    for el in elements:
        bg.connect(junction, el.name)


def source_builder(element: str, cls: Any) -> Callable[..., None]:
    """A builder of one source ``cls(element, value)`` (``Se`` or ``Sf``) on a new
    1-junction ``j``, the bond pointing out of the source; the builder takes the type's
    one parameter. Across domains: ports ``a`` and ``b`` on ``j`` (an effort source
    raises the effort from a to b, a flow source drives its flow from a to b); 1-D
    mechanics: the one port ``a`` on ``j``."""
    def build(bg: BondGraph, **values: Any) -> None:
        (value,) = values.values()
        bg.add(OneJunction("j"), cls(element, value))
        bg.connect(element, "j")
    return build


class ComponentType:
    """A composite bond graph made from parameters: one definition, any number of
    instances.

    Parameters
    ----------
    name : str
        The type's name (``"resistor"``), the key of the registry.
    build : callable
        ``build(bg, **values)`` adds the component's elements and bonds, with unprefixed
        names, to the fresh graph ``bg`` (named after the instance: use ``bg.name`` in
        error messages). ``values`` holds every declared parameter (defaults filled in).
    ports : iterable of ComponentPort or (name, element[, meaning])
        The exposed ports and the inner elements (usually junctions) they stand for.
    parameters : iterable of ComponentParameter or tuples of its fields
        The parameters, with units.
    domain : str
        ``"electrical"``, ``"translational"``, ``"rotational"``, ``"hydraulic"``,
        ``"thermal"``, ``"user"``...
    description : str
        One line: what it is and how its ports are meant to be connected.
    """

    def __init__(self, name: str, build: Callable[..., None],
                 ports: Iterable[ComponentPort | tuple],
                 parameters: Iterable[ComponentParameter | tuple] = (), *,
                 domain: str = "user", description: str = ""):
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"component type name must be an identifier, got {name!r}")
        if not callable(build):
            raise ModelError(f"component type '{name}': build must be a callable "
                             f"build(bg, **parameters), got {build!r}")
        self.name, self.build, self.domain, self.description = name, build, domain, description
        self.ports: tuple[ComponentPort, ...] = tuple(
            p if isinstance(p, ComponentPort) else ComponentPort(*p) for p in ports)
        self.parameters: tuple[ComponentParameter, ...] = tuple(
            p if isinstance(p, ComponentParameter) else ComponentParameter(*p)
            for p in parameters)
        if not self.ports:
            raise ModelError(f"component type '{name}': declare at least one port")
        for what, items in (("port", self.ports), ("parameter", self.parameters)):
            seen = [x.name for x in items]
            dup = sorted({n for n in seen if seen.count(n) > 1})
            if dup:
                raise ModelError(f"component type '{name}': {what} {dup[0]!r} is declared "
                                 f"twice")

    def __repr__(self) -> str:
        return f"ComponentType({self.name!r}: ports {', '.join(p.name for p in self.ports)})"

    def values(self, instance: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """The parameter values of an instance: ``given`` checked (unknown, missing,
        out-of-range values are a ModelError naming the instance, the parameter and what is
        valid) and the defaults filled in."""
        known = {p.name: p for p in self.parameters}
        where = f"component '{instance}' ({self.name})"
        problems = []
        for k in given:
            if k not in known:
                problems.append(f"{where}: unknown parameter {k!r}{did_you_mean(k, known)} "
                                f"(parameters: {self._parameter_list()})")
        out: dict[str, Any] = {}
        for p in self.parameters:
            if p.name in given and given[p.name] is not None:
                v = given[p.name]
                why = _number_problem(v, p.rule)
                if why:
                    problems.append(f"{where}: parameter '{p.name}' = {v!r} ({p.unit}) is not "
                                    f"valid: {why}")
                out[p.name] = v
            elif p.required:
                problems.append(f"{where}: parameter '{p.name}' ({p.meaning}, {p.unit}) is "
                                f"missing")
            else:
                out[p.name] = p.default
        if problems:
            raise ModelError(problems)
        return out

    def _parameter_list(self) -> str:
        return ", ".join(f"{p.name} ({p.unit})" for p in self.parameters) or "none"

    def __call__(self, instance: str, *, ledger: bool = False, **parameters: Any) -> Component:
        """An instance: a :class:`bondgraph.Component` named ``instance``.

        ``ledger=True`` adds a work state to every source (``<instance>.<source>.work``,
        the energy it delivered, J) and every resistor (``<instance>.<R>.dissipated``, J):
        a mechanism's energy ledger and ``SimulationResult.state`` then report them.

        Raises
        ------
        ModelError
            For an unknown, missing or invalid parameter (naming the instance, the
            parameter and what is valid), or a builder that did not create a declared
            port's element.
        """
        if not isinstance(instance, str) or not instance or instance != instance.strip():
            raise ModelError(f"component ({self.name}): the instance name must be a "
                             f"non-empty string, got {instance!r}")
        vals = self.values(instance, parameters)
        bg = BondGraph(instance)
        self.build(bg, **vals)
        missing = [p for p in self.ports if p.element not in bg.elements]
        if missing:
            raise ModelError(f"component '{instance}' ({self.name}): port "
                             f"'{missing[0].name}' names inner element "
                             f"'{missing[0].element}', which the builder did not create "
                             f"(it made: {', '.join(bg.elements)})")
        if ledger:
            for n, el in bg.elements.items():
                cat = el.category.value
                if cat in ("Se", "Sf"):
                    bg.add_work_state(WorkState(f"{n}.work", n))
                elif cat == "R":
                    bg.add_work_state(WorkState(f"{n}.dissipated", n))
        return Component(instance, bg, {p.name: p.element for p in self.ports})

    def describe(self) -> str:
        """A few lines: the type, its ports and its parameters with units and defaults."""
        lines = [f"{self.name} [{self.domain}]: {self.description}".rstrip(": ")]
        for p in self.ports:
            lines.append(f"  port {p.name}: {p.meaning}" if p.meaning else f"  port {p.name}")
        for p in self.parameters:
            d = "" if p.required else f" (default {p.default!r})"
            lines.append(f"  {p.name} [{p.unit}]: {p.meaning}{d}")
        return "\n".join(lines)


COMPONENT_TYPES: dict[str, ComponentType] = {}
"""The registry: type name -> :class:`ComponentType`, in registration order."""


def register_component(ctype: ComponentType, *, replace: bool = False) -> ComponentType:
    """Add a component type to the registry (so :func:`component` finds it by name).

    Raises
    ------
    ModelError
        When the name is taken (unless ``replace``).
    """
    if not isinstance(ctype, ComponentType):
        raise ModelError(f"register_component: expected a ComponentType, got {ctype!r}")
    if ctype.name in COMPONENT_TYPES and not replace:
        raise ModelError(f"component type '{ctype.name}' is already registered; pass "
                         f"replace=True to replace it")
    COMPONENT_TYPES[ctype.name] = ctype
    return ctype


def define_component(name: str, build: Callable[..., None], *,
                     ports: Iterable[ComponentPort | tuple] | Mapping[str, str],
                     parameters: Iterable[ComponentParameter | tuple] = (),
                     description: str = "", domain: str = "user",
                     register: bool = False) -> ComponentType:
    """Define a composite sub-model once, to instantiate it many times.

    ``build(bg, **values)`` adds unprefixed elements to ``bg``; ``ports`` maps port names
    to inner elements (a mapping, or ComponentPort / (name, element, meaning) items);
    ``parameters`` are ComponentParameter or (name, unit, meaning[, default[, rule]])
    tuples. ``register=True`` also adds it to the registry (:func:`component` by name).

    Example: ``tank = define_component("tank", build, ports={"a": "j"}, parameters=[("area",
    "m^2", "cross-section")])``, then ``bg.add(tank("T1", area=0.5), tank("T2", area=1))``.
    """
    if isinstance(ports, Mapping):
        ports = [ComponentPort(k, v) for k, v in ports.items()]
    ctype = ComponentType(name, build, ports, parameters, domain=domain,
                          description=description)
    if register:
        register_component(ctype)
    return ctype


def component(type_name: str, instance: str, *, ledger: bool = False,
              **parameters: Any) -> Component:
    """An instance of the registered component type ``type_name``:
    ``component("resistor", "R1", resistance=100.0)``.

    Raises
    ------
    NameNotFoundError
        For an unknown type name (with the close names, or the list of types).
    ModelError
        For an unknown, missing or invalid parameter.
    """
    try:
        ctype = COMPONENT_TYPES[type_name]
    except (KeyError, TypeError):
        hint = did_you_mean(str(type_name), COMPONENT_TYPES) or \
            f"; component types: {', '.join(COMPONENT_TYPES)}"
        raise NameNotFoundError(f"no component type {type_name!r}{hint}") from None
    return ctype(instance, ledger=ledger, **parameters)


class ComponentListing(dict):
    """Component types by name (a dict) that prints as a table of their ports,
    parameters and units."""

    def __str__(self) -> str:
        rows = ["| component | domain | ports | parameters |", "| --- | --- | --- | --- |"]
        for n, ct in self.items():
            params = ", ".join(f"{p.name} [{p.unit}]" + ("" if p.required else "?")
                               for p in ct.parameters)
            rows.append(f"| {n} | {ct.domain} | {', '.join(p.name for p in ct.ports)} | "
                        f"{params} |")
        return "\n".join(rows)


def components(domain: str | None = None) -> ComponentListing:
    """The registered component types (name -> ComponentType), all or one domain's;
    ``print(components())`` shows a table (``?``: the parameter has a default).

    Raises
    ------
    NameNotFoundError
        For an unknown domain.
    """
    domains = {ct.domain for ct in COMPONENT_TYPES.values()}
    if domain is not None and domain not in domains:
        raise NameNotFoundError(f"no component domain {domain!r}"
                                f"{did_you_mean(domain, domains)}; domains: "
                                f"{', '.join(sorted(domains))}")
    return ComponentListing((n, ct) for n, ct in COMPONENT_TYPES.items()
                            if domain is None or ct.domain == domain)
