"""The broad phase: which of many shapes may touch (docs/contact.md).

- :func:`sweep_and_prune`: the pairs of axis-aligned boxes that overlap, by sorting the
  boxes along one axis and comparing each only with those whose interval on that axis
  meets its own: O(N log N + K) for N boxes of which K pairs overlap on that axis, not
  the N (N - 1) / 2 comparisons of every pair.
- :class:`CollisionWorld`: shapes on bodies, the filters (same body, body and parent,
  MuJoCo's contype/conaffinity rule, pairs named on or off), the candidate pairs at a
  set of body poses and their contacts (:func:`elements.contact.detect.collide`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.errors import did_you_mean

import elements.contact.detect as detect
from elements.contact.detect import Contacts, _nonnegative
from elements.contact.shapes import PLANE, Shape

__all__ = ["CollisionWorld", "sweep_and_prune"]


def sweep_and_prune(lo: np.ndarray, hi: np.ndarray, axis: int | None = None
                    ) -> tuple[list[tuple[int, int]], int]:
    """The index pairs (i < j) of the boxes [lo[i], hi[i]] (N, 3) that overlap (closed
    intervals on all three axes), and the number of box comparisons made.

    ``axis``: the axis to sort along; None takes the one along which the finite box
    centres spread most. Infinite bounds (a plane's box) are allowed.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    n = len(lo)
    if axis is None:
        finite = np.all(np.isfinite(lo), axis=1) & np.all(np.isfinite(hi), axis=1)
        centres = 0.5 * (lo[finite] + hi[finite])
        axis = int(np.argmax(np.var(centres, axis=0))) if len(centres) > 1 else 0
    order = np.argsort(lo[:, axis], kind="stable")
    a, b = [k for k in range(3) if k != axis]
    pairs: list[tuple[int, int]] = []
    tests = 0
    for p in range(n):
        i = order[p]
        top = hi[i, axis]
        for q in range(p + 1, n):
            j = order[q]
            if lo[j, axis] > top:
                break                 # sorted: no later box reaches this one on the axis
            tests += 1
            if lo[j, a] <= hi[i, a] and lo[i, a] <= hi[j, a] and \
                    lo[j, b] <= hi[i, b] and lo[i, b] <= hi[j, b]:
                pairs.append((int(min(i, j)), int(max(i, j))))
    return sorted(pairs), tests


class CollisionWorld:
    """Shapes on bodies, and which pairs of them may touch.

    Parameters
    ----------
    shapes : sequence of Shape
        The shapes, with unique names.
    parents : mapping body -> parent body, optional
        The bodies' tree (a root maps to None or is left out).
    skip_parent : bool
        A body and its parent never pair (default), except when the parent is the
        ground (MuJoCo's rule: a floating base still meets the floor).
    pairs_on : iterable of (shape name, shape name)
        Pairs that may touch whatever the other filters say.
    pairs_off : iterable of (shape name, shape name)
        Pairs that never touch.
    margin : float
        m, >= 0: bounding boxes grow by it, and contacts with gaps up to it are
        reported (negative depths).
    ground : str
        The ground body's name; its pose is the identity.

    Two shapes on the same body never pair, nor do two planes. Otherwise shapes a and b
    pair when ``(a.contype & b.conaffinity) or (b.contype & a.conaffinity)``.
    """

    def __init__(self, shapes: Sequence[Shape], *, parents: Mapping[str, str | None] | None = None,
                 skip_parent: bool = True, pairs_on: Iterable[tuple[str, str]] = (),
                 pairs_off: Iterable[tuple[str, str]] = (), margin: float = 0.0,
                 ground: str = "ground"):
        self.shapes: tuple[Shape, ...] = tuple(shapes)
        self.index: dict[str, int] = {}
        for k, s in enumerate(self.shapes):
            if not isinstance(s, Shape):
                raise ModelError(f"CollisionWorld: shape {k} is {s!r}, not a Shape "
                                 f"(Plane, Sphere, Capsule, Box, Cylinder or ConvexMesh)")
            if s.name in self.index:
                raise ModelError(f"CollisionWorld: two shapes are named {s.name!r}; "
                                 f"shape names must be unique")
            self.index[s.name] = k
        if not _nonnegative(margin):
            raise ModelError(f"CollisionWorld: margin must be a finite number >= 0 (m), "
                             f"got {margin!r}")
        self.margin = float(margin)
        self.ground = ground
        self.parents: dict[str, str | None] = dict(parents or {})
        self.skip_parent = bool(skip_parent)
        self.pairs_on = frozenset(self._pair(p, "pairs_on") for p in pairs_on)
        self.pairs_off = frozenset(self._pair(p, "pairs_off") for p in pairs_off)
        for i, j in self.pairs_on:
            if self.shapes[i].body == self.shapes[j].body:
                raise ModelError(f"CollisionWorld: pairs_on names {self.shapes[i].name!r} "
                                 f"and {self.shapes[j].name!r}, both on body "
                                 f"{self.shapes[i].body!r}: shapes of one body never "
                                 f"move apart; valid: shapes on two bodies")
        self.bodies = sorted({s.body for s in self.shapes})

    def _pair(self, pair: Any, what: str) -> tuple[int, int]:
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise ModelError(f"CollisionWorld: {what} must hold pairs of shape names, "
                             f"got {pair!r}") from None
        out = []
        for name in (a, b):
            if name not in self.index:
                raise ModelError(f"CollisionWorld: {what} names shape {name!r}, which is "
                                 f"not in the world" + did_you_mean(name, self.index))
            out.append(self.index[name])
        i, j = out
        if i == j:
            raise ModelError(f"CollisionWorld: {what} pairs shape {a!r} with itself")
        return (min(i, j), max(i, j))

    def allowed(self, i: int, j: int) -> bool:
        """Whether shapes i and j (indices) may touch, by the filters alone."""
        a, b = self.shapes[i], self.shapes[j]
        key = (min(i, j), max(i, j))
        if a.body == b.body or (a.kind == PLANE and b.kind == PLANE) or key in self.pairs_off:
            return False
        if key in self.pairs_on:
            return True
        if self.skip_parent and self.ground not in (a.body, b.body) and (
                self.parents.get(a.body) == b.body or self.parents.get(b.body) == a.body):
            return False
        return bool((a.contype & b.conaffinity) or (b.contype & a.conaffinity))

    def _poses(self, poses: Mapping[str, Any]) -> list[Any]:
        out = []
        for s in self.shapes:
            if s.body in poses:
                out.append(poses[s.body])
            elif s.body == self.ground:
                out.append(None)
            else:
                raise ModelError(f"CollisionWorld: no pose for body {s.body!r} (of shape "
                                 f"{s.name!r}); give poses[{s.body!r}] = (position, "
                                 f"rotation)" + did_you_mean(s.body, poses))
        return out

    def aabbs(self, poses: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The shapes' bounding boxes (lower, upper; (N, 3) each, global, m), grown by the
        margin, with the bodies at ``poses`` (body name -> (position, rotation); the
        ground needs none)."""
        lo = np.empty((len(self.shapes), 3))
        hi = np.empty((len(self.shapes), 3))
        for k, (s, pose) in enumerate(zip(self.shapes, self._poses(poses))):
            lo[k], hi[k] = s.aabb(pose)
        return lo - self.margin, hi + self.margin

    def candidate_pairs(self, poses: Mapping[str, Any]) -> list[tuple[int, int]]:
        """The index pairs (i < j) whose bounding boxes overlap and that the filters
        allow, with the bodies at ``poses``."""
        lo, hi = self.aabbs(poses)
        pairs, _ = sweep_and_prune(lo, hi)
        return [(i, j) for i, j in pairs if self.allowed(i, j)]

    def contacts(self, poses: Mapping[str, Any]) -> list[Contacts]:
        """The contacts of every candidate pair that has any, with the bodies at
        ``poses`` (each :class:`Contacts` from the shape listed first into the other)."""
        given = self._poses(poses)
        out = []
        for i, j in self.candidate_pairs(poses):
            found = detect.collide(self.shapes[i], self.shapes[j], given[i], given[j],
                                   margin=self.margin)
            if len(found):
                out.append(found)
        return out
