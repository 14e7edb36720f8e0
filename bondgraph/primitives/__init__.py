"""The primitive elements, scalar and vector, and their category bases.

Category bases (what a new element kind subclasses; each lists its hooks):

- :class:`SourceBase`: known effort or flow sources (``Se``, ``Sf``).
- :class:`StorageBase`: ``I`` and ``C`` storage fields (Eqs. (5)-(6): Z = F X).
- :class:`ResistorBase`: the resistive field (Eq. (7): D_out = R D_in).
- :class:`EulerBase`: Euler junction structures (Eq. (8): E_out = R_E E_in).
- :class:`TwoPortBase`: transformers and gyrators, constant or modulated.
- :class:`JunctionBase`: 0- and 1-junctions.

Primitive kinds (registered):

=======  =========================  ==================================================
kind     class                      law (bond 1 into a two-port, bond 2 out of it)
=======  =========================  ==================================================
Se       :class:`Se`                effort = value(t[, state])
Sf       :class:`Sf`                flow = value(t[, state])
Se*      :class:`UnknownEffort`     effort unknown (a constraint force); flow = 0
I        :class:`I`                 flow = inertia^-1 p, dp/dt = effort
C        :class:`C`                 effort = stiffness q, dq/dt = flow
R        :class:`R`                 effort = resistance flow
TF       :class:`TF`                f2 = mu f1, e1 = mu^T e2 (mu constant)
MTF      :class:`MTF`               as TF, mu a function of the state
GY       :class:`GY`                e2 = r f1, e1 = r^T f2 (r constant)
MGY      :class:`MGY`               as GY, r a function of the state
EJS      :class:`EJS`               effort = -h~ flow, h the momentum of an I element
0        :class:`ZeroJunction`      common effort, signed flows sum to zero
1        :class:`OneJunction`       common flow, signed efforts sum to zero
=======  =========================  ==================================================

Plus :class:`KinematicState`, a non-energy state that integrates a flow (positions,
orientation quaternions) and may modulate MTF/MGY elements. A port carries at most
:data:`MAX_DIM` components.
"""

from __future__ import annotations

from ._common import MAX_DIM
from .fields import EJS, C, EulerBase, I, R, ResistorBase, StorageBase
from .junctions import (
    JunctionBase, KinematicState, OneJunction, PositionConstraint, WorkState, ZeroJunction,
)
from .sources import (
    CompiledFamilies, CompiledSource, Se, SourceBase, SourceLaw, Sf, UnknownEffort,
)
from .two_ports import GY, MGY, MTF, TF, Modulus, ModulusContext, TwoPortBase

__all__ = [
    "SourceBase", "StorageBase", "ResistorBase", "EulerBase", "TwoPortBase", "JunctionBase",
    "Se", "Sf", "UnknownEffort", "I", "C", "R", "TF", "MTF", "GY", "MGY", "EJS",
    "ZeroJunction", "OneJunction", "KinematicState", "WorkState", "PositionConstraint",
    "Modulus", "ModulusContext", "SourceLaw", "CompiledSource", "CompiledFamilies", "MAX_DIM",
]
