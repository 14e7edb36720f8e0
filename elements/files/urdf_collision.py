"""A URDF's ``<collision>`` geometry as collision shapes of its mechanism.

- :func:`read_collisions`: every link's ``<collision>`` elements as they are written
  (geometry, size, origin in the link frame).
- :func:`add_collisions`: the primitives as shapes on the bodies their links were merged
  into (``mechanism.frames``): ``<box size>`` (full lengths) a :class:`Box`,
  ``<cylinder radius length>`` a :class:`Cylinder` (axis along the collision frame's z,
  as in URDF), ``<sphere radius>`` a :class:`Sphere`; ``<mesh>`` is reported as not
  imported (a mesh file needs a reader: give its hull as a ``ConvexMesh`` yourself).
  The links' shapes touch what the user adds (a floor: ``mech.add_shape(Plane(...))``)
  but not each other (``contype`` 0: a URDF says nothing of self-collision; an SRDF
  would), each with a default :class:`~elements.contact.ContactLaw` unless ``law`` is
  given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from elements.contact import Box, ContactLaw, Cylinder, Sphere

__all__ = ["CollisionSpec", "read_collisions", "add_collisions"]


@dataclass(frozen=True)
class CollisionSpec:
    """One ``<collision>`` of a link: ``kind`` (box, cylinder, sphere, mesh), its sizes
    as written (m), its origin in the link frame (xyz, rotation)."""

    name: str
    link: str
    kind: str
    size: tuple[float, ...]
    xyz: np.ndarray
    R: np.ndarray


def read_collisions(root, source: str, origin, floats) -> list[CollisionSpec]:
    """The ``<collision>`` elements of every ``<link>`` under the XML ``root``
    (``origin`` and ``floats`` are the URDF reader's checked readers of ``<origin>``
    and of numbers, so that errors name the file and the element)."""
    out = []
    for ln in root.findall("link"):
        link = ln.get("name")
        for k, col in enumerate(ln.findall("collision")):
            where = f"{source}: link '{link}' <collision> {k}"
            name = col.get("name") or f"{link}.collision{k}"
            geo = col.find("geometry")
            if geo is None or len(geo) == 0:
                continue
            g = geo[0]
            if g.tag == "box":
                size = tuple(floats(f"{where} <box>", "size", g.get("size"), 3))
            elif g.tag == "cylinder":
                size = (float(floats(f"{where} <cylinder>", "radius", g.get("radius"), 1)[0]),
                        float(floats(f"{where} <cylinder>", "length", g.get("length"), 1)[0]))
            elif g.tag == "sphere":
                size = (float(floats(f"{where} <sphere>", "radius", g.get("radius"), 1)[0]),)
            else:
                size = ()
            xyz, R = origin(col, where)
            out.append(CollisionSpec(name, link, g.tag, size, xyz, R))
    return out


def add_collisions(mech, specs: list[CollisionSpec], law: ContactLaw | None = None
                   ) -> None:
    """Add the primitives of ``specs`` to ``mech`` (see the module docstring); what
    cannot be added is listed in ``mech.import_report.not_imported``."""
    report = mech.import_report
    taken = set(mech.shapes)
    for s in specs:
        frame = mech.frames.get(s.link)
        if s.kind not in ("box", "cylinder", "sphere"):
            report.not_imported.setdefault(f"{s.kind} collision geometry (primitives only: "
                                           f"box, cylinder, sphere)", []).append(s.name)
            continue
        if frame is None or frame.body == mech.ground.name:
            report.not_imported.setdefault("collision geometry of links fixed to the "
                                           "ground", []).append(s.name)
            continue
        name, k = s.name, 2
        while name in taken:
            name, k = f"{s.name}_{k}", k + 1
        taken.add(name)
        pos = frame.position + frame.rotation @ s.xyz
        rot = frame.rotation @ s.R
        kw: dict[str, Any] = dict(position=pos, rotation=rot, contype=0, conaffinity=1)
        if s.kind == "box":
            shape = Box(name, frame.body, 0.5 * np.asarray(s.size), **kw)
        elif s.kind == "cylinder":
            shape = Cylinder(name, frame.body, s.size[0], s.size[1], **kw)
        else:
            shape = Sphere(name, frame.body, s.size[0], **kw)
        mech.add_shape(shape, law)
