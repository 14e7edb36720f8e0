"""Chains of one-axis joints through massless links, recognised as one joint.

Robot descriptions write a 2- or 3-DOF joint (a wrist, a hip, a shoulder, a planar root)
as revolutes and slides in sequence with massless links between them: URDF's "virtual"
links, MJCF's several joints in one body. In joint coordinates (Pinocchio, MuJoCo) that
costs nothing; in the bond graph's maximal coordinates every body needs an invertible
inertia, so a massless link cannot be a body. The chain is one joint instead, exactly
(the massless links carry no dynamics):

- two revolutes whose axes are not parallel: :class:`~elements.joints.UniversalJoint`
  (the axes at any angle; where they do not meet, with ``axis2_offset``, the link
  between them held at its length);
- three revolutes whose axes meet at a point, each perpendicular to the next, the first
  and third not parallel at rest: :class:`~elements.joints.GimbalJoint`;
- two perpendicular slides and then a revolute perpendicular to both:
  :class:`~elements.joints.PlanarJoint`;
- two or three slides along independent axes: :class:`~elements.joints.TranslationJoint`;
- any other chain of at most six members (two parallel hinges, three hinges whose axes
  do not meet, proper-Euler gimbals, slide-hinge-slide...): :class:`~elements.joints.chain.ChainJoint`, the
  general serial chain (evaluated numerically, no compiled kernel).

Refused (:func:`compose_chain`, with the reason): chains of more than six members, and
chains whose members' motions are dependent at rest (coaxial revolutes, parallel
slides). Each member keeps its own coordinate: the composite's coordinates are the
members' angles and slides, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError

from elements.joints.chain import MAX_MEMBERS, ChainAxis, ChainJoint
from elements.joints.contract import Joint
from elements.joints.kinds import GimbalJoint, PlanarJoint, TranslationJoint, UniversalJoint

__all__ = ["ChainMember", "compose_chain"]

PERPENDICULAR = 1e-9
"""The largest cosine between axes taken as perpendicular."""


@dataclass(frozen=True)
class ChainMember:
    """One joint of a chain: ``kind`` "revolute" or "prismatic", its unit ``axis`` and a
    ``point`` on it, both in the coordinates of the body before the chain at the chain's
    rest (every coordinate 0; m)."""

    name: str
    kind: str
    axis: np.ndarray
    point: np.ndarray


def _meet(members: list[ChainMember]) -> np.ndarray | None:
    """The point where every member's axis passes (least squares), or None when some
    axis misses it by more than 1e-9 m (relative to the size of the points)."""
    M = np.zeros((3, 3))
    rhs = np.zeros(3)
    for m in members:
        P = np.eye(3) - np.outer(m.axis, m.axis)      # projector across the axis
        M += P
        rhs += P @ m.point
    try:
        x = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        return None
    scale = max(1.0, max(float(np.abs(m.point).max()) for m in members))
    for m in members:
        d = (x - m.point) - m.axis * ((x - m.point) @ m.axis)
        if np.linalg.norm(d) > 1e-9 * scale:
            return None
    return x


def _names(members) -> str:
    return ", ".join(f"{m.name} ({m.kind})" for m in members)


def compose_chain(members: list[ChainMember]) -> tuple[type[Joint], dict[str, Any],
                                                        tuple[str, ...]]:
    """The joint kind that equals ``members`` in sequence (each moving the next), its
    keywords (``axis``, ``axis2``, ..., and ``point``: the joint point in the first
    body's coordinates, m) and each member's coordinate name, in order.

    The special kinds (universal, gimbal, planar) where the chain has their form, a
    :class:`ChainJoint` otherwise.

    Raises
    ------
    ModelError
        For a chain of more than six members or whose motions are dependent at rest,
        naming its joints and the reason.
    """
    kinds = tuple(m.kind for m in members)
    axes = [np.asarray(m.axis, dtype=float) for m in members]
    if kinds == ("revolute", "revolute") and abs(axes[0] @ axes[1]) <= 1.0 - 1e-9:
        X = _meet(members)
        if X is not None:
            return UniversalJoint, dict(axis=axes[0], axis2=axes[1], point=X), \
                ("angle1", "angle2")
        P1 = np.asarray(members[0].point, dtype=float)
        return UniversalJoint, dict(axis=axes[0], axis2=axes[1], point=P1,
                                    axis2_offset=np.asarray(members[1].point, dtype=float) - P1), \
            ("angle1", "angle2")
    if kinds == ("revolute",) * 3:
        X = _meet(members)
        perpendicular = abs(axes[0] @ axes[1]) <= PERPENDICULAR and \
            abs(axes[1] @ axes[2]) <= PERPENDICULAR
        if X is not None and perpendicular and np.linalg.norm(np.cross(axes[0], axes[2])) >= 1e-6:
            return GimbalJoint, dict(axis=axes[0], axis2=axes[1], axis3=axes[2], point=X), \
                ("angle1", "angle2", "angle3")
    if kinds == ("prismatic", "prismatic", "revolute") and all(
            abs(axes[i] @ axes[k]) <= PERPENDICULAR for i, k in ((0, 1), (0, 2), (1, 2))):
        return PlanarJoint, dict(axis=axes[2], x_axis=axes[0], y_axis=axes[1],
                                 point=np.asarray(members[2].point, dtype=float)), \
            ("x", "y", "angle")
    if kinds in (("prismatic",) * 2, ("prismatic",) * 3):
        sv = np.linalg.svd(np.column_stack(axes), compute_uv=False)
        if sv[-1] >= 1e-6 * sv[0]:
            extra = {"axis3": axes[2]} if len(axes) == 3 else {}
            return TranslationJoint, dict(axis=axes[0], axis2=axes[1], **extra,
                                          point=np.asarray(members[0].point, dtype=float)), \
                tuple(f"slide{k + 1}" for k in range(len(axes)))
    return _general(members)


def _general(members: list[ChainMember]) -> tuple[type[Joint], dict[str, Any],
                                                   tuple[str, ...]]:
    """The chain as a :class:`ChainJoint` (joint point: the first revolute's point, or
    the first member's), or a ModelError naming its joints and the reason."""
    if len(members) > MAX_MEMBERS:
        raise ModelError(f"the joints {_names(members)} in sequence through massless links: "
                         f"{len(members)} joints, more than the {MAX_MEMBERS} freedoms a "
                         f"joint can have (some are dependent); give a link between them "
                         f"a mass and inertia")
    revolutes = [m for m in members if m.kind == "revolute"]
    X = np.asarray((revolutes or members)[0].point, dtype=float)
    chain = [ChainAxis(m.kind, np.asarray(m.axis, dtype=float),
                       np.asarray(m.point, dtype=float) - X) for m in members]
    try:
        ChainJoint.check_members("+".join(m.name for m in members), chain)
    except ModelError:
        raise ModelError(f"the joints {_names(members)} in sequence through massless "
                         f"links: their motions are dependent at rest (coaxial revolutes "
                         f"or parallel slides): they form no joint; give a link between "
                         f"them a mass and inertia") from None
    names = tuple(f"{'angle' if m.kind == 'revolute' else 'slide'}{k + 1}"
                  for k, m in enumerate(members))
    return ChainJoint, dict(members=chain, point=X), names
