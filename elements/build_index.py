"""What building a mechanism created, by handle: the one record that results, hybrid
runs and studies read instead of building element and parameter names and parsing them
back.

- :class:`Kind`: what an attachment is (a spring, a damper, an actuator, a stop's spring
  or damper, a lock, a drive, a load, a contact...).
- :class:`Attachment`: one element the build attached, with its owner (the joint
  coordinate's port, the body or the load), its bond, the work state that integrates
  its power, and its parameters by role (``{"k": "J3.spring.k", "rest": ...}``).
- :class:`BuildIndex`: every attachment, looked up by kind, port and side, and every
  parameter's owner (:meth:`BuildIndex.target`).

:meth:`Mechanism.build <elements.Mechanism.build>` fills one; an assembled
:class:`~elements.MechanismModel` keeps it as ``index``. A new attachment kind is a new
:class:`Kind` member and the code that builds it; whoever reads it asks the index.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from bondgraph.errors import NameNotFoundError, did_you_mean

__all__ = ["Kind", "Attachment", "ParameterTarget", "BuildIndex"]


class Kind(Enum):
    """What an attachment is."""

    SPRING = "spring"              # on a joint coordinate: C element
    DAMPER = "damper"              # on a joint coordinate: R element
    ACTUATOR = "actuator"          # on a joint coordinate: Se element
    ROTOR = "rotor"                # on a joint coordinate: I element
    FREE = "free"                  # a coordinate with nothing attached: Se of zero effort
    STOP_SPRING = "stop spring"    # a compliant stop's spring law (Se of the coordinate)
    STOP_DAMPER = "stop damper"    # a compliant stop's damper (R, engaged in contact)
    LOCK = "lock"                  # friction and impact stops: Se (sliding) or Sf (held)
    DRIVE = "drive"                # direct or inverse dynamics' source on a coordinate
    LOAD = "load"                  # a point force or body moment: Se on a body block
    BODY = "body"                  # a body's mass and inertia (parameters only)
    GRAVITY = "gravity"            # the mechanism's gravity (parameters only)
    CONTACT = "contact"            # a body's contact wrench sources (index: the part)
    SHAPE = "shape"                # a collision shape (its contact law's parameters)


@dataclass(frozen=True)
class Attachment:
    """One thing the build attached.

    Attributes
    ----------
    kind : Kind
    element : str
        Its element in the graph ("" for parameter-only records: bodies, gravity).
    owner : str
        The joint coordinate's port (``J3``, ``C1.slide``), the body, the load or the
        contact pair it belongs to.
    joint : str or None
        The joint, for attachments on a coordinate.
    index : int
        Its place among the attachments of its kind on its owner (0, 1, ...).
    side : str or None
        ``"lower"`` or ``"upper"`` for a stop's spring and damper.
    bond : str
        The bond that connects it ("" where none).
    work_state : str or None
        The work state that integrates its power (J): the work it does, or for a
        resistor the energy it dissipates.
    parameters : mapping of str to str
        Its parameters by role (``"k"``, ``"rest"``, ``"c"``, ``"effort"``, ``"inertia"``,
        ``"x"``...) -> the parameter's name.
    """

    kind: Kind
    element: str
    owner: str
    joint: str | None = None
    index: int = 0
    side: str | None = None
    bond: str = ""
    work_state: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ParameterTarget:
    """Whose parameter a name is: the attachment and the role it plays there."""

    attachment: Attachment
    role: str


class BuildIndex:
    """Every attachment a build created (see the module docstring)."""

    def __init__(self) -> None:
        self._items: list[Attachment] = []
        self._params: dict[str, ParameterTarget] = {}
        self.contact: Any = None
        """The mechanism's :class:`~elements.contact.dynamics.ContactSystem` (None
        without collision shapes): what results read the contacts from."""

    def add(self, att: Attachment) -> Attachment:
        """Record ``att`` (the build calls this)."""
        self._items.append(att)
        for role, name in att.parameters.items():
            self._params[name] = ParameterTarget(att, role)
        return att

    def __iter__(self) -> Iterator[Attachment]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def find(self, kind: Kind | None = None, owner: str | None = None, *,
             side: str | None = None) -> list[Attachment]:
        """The attachments of ``kind`` on ``owner`` (None: any), and of ``side``."""
        return [a for a in self._items if (kind is None or a.kind is kind) and
                (owner is None or a.owner == owner) and (side is None or a.side == side)]

    def one(self, kind: Kind, owner: str, *, side: str | None = None) -> Attachment:
        """The one attachment of ``kind`` on ``owner`` (and ``side``)."""
        found = self.find(kind, owner, side=side)
        if len(found) != 1:
            raise NameNotFoundError(f"{owner!r} has {len(found)} {kind.value} "
                                    f"attachment(s)" + (f" on its {side} side" if side else "")
                                    + "; expected one")
        return found[0]

    def by_element(self) -> Mapping[str, Attachment]:
        """Attachment by its element's name."""
        return MappingProxyType({a.element: a for a in self._items if a.element})

    def target(self, parameter: str) -> ParameterTarget:
        """Whose parameter ``parameter`` is; a NameNotFoundError naming close ones for a
        name the build did not create (an attached subsystem's own parameters included:
        those are not the mechanism's)."""
        try:
            return self._params[parameter]
        except KeyError:
            raise NameNotFoundError(f"no parameter {parameter!r} of the mechanism"
                                    f"{did_you_mean(parameter, self._params)}") from None

    def parameters(self) -> Mapping[str, ParameterTarget]:
        """Every parameter the build created, by name."""
        return MappingProxyType(self._params)
