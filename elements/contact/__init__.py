"""Contact geometry: collision shapes, the narrow phase and the broad phase
(docs/contact.md).

- :mod:`elements.contact.shapes`: :class:`Plane`, :class:`Sphere`, :class:`Capsule`,
  :class:`Box`, :class:`Cylinder`, :class:`ConvexMesh`, :class:`Ellipsoid`, posed in their bodies' frames.
- :mod:`elements.contact.detect`: :func:`collide`, the :class:`Contacts` of two shapes
  (closed forms, else :mod:`elements.contact.gjk`: GJK and EPA).
- :mod:`elements.contact.broadphase`: :class:`CollisionWorld`, the candidate pairs of
  many shapes (sweep and prune, filters) and all their contacts.
- :mod:`elements.contact.law`: :class:`ContactLaw` (Hunt and Crossley's normal law,
  regularised Coulomb friction), :func:`restitution`.
- :mod:`elements.contact.dynamics`: :class:`ContactSystem` and the
  :class:`ContactWrench` sources by which contact acts on bodies.
- :mod:`elements.contact.tunnelling`: :class:`TunnelWatch`, the event that ends a run
  in which a shape passes through another between two steps.
"""

from __future__ import annotations

from elements.contact.broadphase import CollisionWorld, sweep_and_prune
from elements.contact.detect import Contacts, collide
from elements.contact.dynamics import ContactRecord, ContactSystem, ContactWrench
from elements.contact.law import ContactLaw, restitution
from elements.contact.shapes import (
    Box, Capsule, ConvexMesh, Cylinder, Ellipsoid, Plane, Shape, Sphere,
)
from elements.contact.tunnelling import TunnelWatch

__all__ = ["Shape", "Plane", "Sphere", "Capsule", "Box", "Cylinder", "ConvexMesh", "Ellipsoid",
           "Contacts", "collide", "CollisionWorld", "sweep_and_prune", "ContactLaw",
           "restitution", "ContactSystem", "ContactWrench", "ContactRecord",
           "TunnelWatch"]
