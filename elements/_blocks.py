"""Jacobian blocks: the one mechanism by which joints and loads attach to bodies.

A block is a 0-junction ``J`` of dimension n whose bonds bring, from body junctions
k (a body's ``.v`` or ``.w``), the flows ``mu_k f_k`` with ``mu_k = -G_k``, so that the
flow of one further bond pointing into ``J`` (its port) is

    f_port = sum_k G_k f_k

and the common effort e of J acts on each body as the generalised force G_k^T e
(a force on ``.v``, a body-frame moment on ``.w``). Joints leave constraint blocks'
ports open (the causality assignment inserts an Se* there: its flow is sum G_k f_k =
dPhi/dt, its effort the reaction); a joint's free direction is a block whose port is the
joint's axis 1-junction; a load is a block whose port is its effort source.

G_k are functions of the bodies' kinematic states (orientation quaternions, positions);
:class:`Geometry` turns those state values (and their rates) into the rotation
matrices, positions, angular velocities and velocities the G functions use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bondgraph import MTF, TF, BondGraph, ModulusContext, PositionConstraint, ZeroJunction
from bondgraph.spatial import skew
from bondgraph.spatial import body_rate_from_quat_rate, quat_to_matrix

__all__ = ["Term", "Block", "Geometry", "build_block"]


class Geometry:
    """Kinematic quantities of the (up to two) bodies a block reads.

    Attributes set from states: ``A[b]`` (rotation body -> global), ``r[b]`` (centre of
    mass, global); from rates: ``w[b]`` (angular velocity, body coordinates), ``v[b]``
    (centre-of-mass velocity, global). Ground bodies have A = E, r = 0, w = v = 0.
    """

    __slots__ = ("A", "r", "w", "v", "_memo")

    def __init__(self):
        self.A: dict[str, np.ndarray] = {}
        self.r: dict[str, np.ndarray] = {}
        self.w: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}
        self._memo: dict[tuple, np.ndarray] = {}

    def Adot(self, b: str) -> np.ndarray:
        """dA_b/dt = A_b omega_b~ (needs rates); computed once per geometry."""
        key = ("Adot", b)
        out = self._memo.get(key)
        if out is None:
            out = self._memo[key] = self.A[b] @ skew(self.w[b])
        return out

    def rel(self, a: str, b: str) -> np.ndarray:
        """A_b^T A_a: body a's coordinates to body b's."""
        key = ("rel", a, b)
        out = self._memo.get(key)
        if out is None:
            out = self._memo[key] = self.A[b].T @ self.A[a]
        return out

    def rel_rate(self, a: str, b: str) -> np.ndarray:
        """d(A_b^T A_a)/dt = -omega_b~ A_b^T A_a + A_b^T A_a omega_a~ (needs rates)."""
        key = ("rel_rate", a, b)
        out = self._memo.get(key)
        if out is None:
            rel = self.rel(a, b)
            out = self._memo[key] = rel @ skew(self.w[a]) - skew(self.w[b]) @ rel
        return out


@dataclass
class Term:
    """G_k of one body junction: ``junction`` is ``"<body>.v"`` or ``"<body>.w"``.

    ``G(geo) -> (n, 3)`` and ``G_rate(geo) -> (n, 3)`` (geo has rates); ``constant`` set
    when G never changes (then a TF is used and no rate is needed).
    """

    junction: str
    G: Callable[[Geometry], np.ndarray] | None = None
    G_rate: Callable[[Geometry], np.ndarray] | None = None
    constant: np.ndarray | None = None


@dataclass
class Block:
    """A 0-junction ``name`` of dimension ``dim`` with its terms.

    ``phi(geo) -> (dim,)`` is the position-level constraint (constraint blocks only),
    defined so that dPhi/dt = sum G_k f_k on Phi = 0.
    """

    name: str
    dim: int
    terms: list[Term]
    bodies: tuple  # RigidBody objects whose states the G functions read
    phi: Callable[[Geometry], np.ndarray] | None = None
    constraint: bool = False
    label: str | None = None


def _deps(bodies) -> tuple[str, ...]:
    out = []
    for b in bodies:
        if not b.is_ground:
            out += [b.q, b.r]
    return tuple(out)


_ROTATION_CACHE: dict[bytes, np.ndarray] = {}


def _rotation(q: np.ndarray) -> np.ndarray:
    """quat_to_matrix, memoised: one evaluation reads each body's quaternion many times."""
    key = q.tobytes()
    A = _ROTATION_CACHE.get(key)
    if A is None:
        if len(_ROTATION_CACHE) > 512:
            _ROTATION_CACHE.clear()
        A = _ROTATION_CACHE[key] = quat_to_matrix(q)
    return A


_GEOMETRY_CACHE: dict[tuple, Geometry] = {}


def _geometry(bodies, values, rates=None) -> Geometry:
    """The bodies' geometry at these state values (and rates), memoised: in one
    evaluation every term of a joint reads the same bodies at the same states."""
    parts = [np.asarray(v, dtype=float).tobytes() for v in values]
    if rates is not None:
        parts += [np.asarray(v, dtype=float).tobytes() for v in rates]
    key = (tuple((b.name, b.is_ground) for b in bodies), rates is not None, b"".join(parts))
    geo = _GEOMETRY_CACHE.get(key)
    if geo is None:
        if len(_GEOMETRY_CACHE) > 4096:
            _GEOMETRY_CACHE.clear()
        geo = _GEOMETRY_CACHE[key] = _compute_geometry(bodies, values, rates)
    return geo


def _compute_geometry(bodies, values, rates=None) -> Geometry:
    geo = Geometry()
    k = 0
    for b in bodies:
        if b.is_ground:
            geo.A[b.name] = np.eye(3)
            geo.r[b.name] = np.zeros(3)
            geo.w[b.name] = np.zeros(3)
            geo.v[b.name] = np.zeros(3)
            continue
        q, r = values[k], values[k + 1]
        geo.A[b.name] = _rotation(np.asarray(q, dtype=float))
        geo.r[b.name] = np.asarray(r, dtype=float)
        if rates is not None:
            geo.w[b.name] = body_rate_from_quat_rate(q, rates[k])
            geo.v[b.name] = np.asarray(rates[k + 1], dtype=float)
        k += 2
    return geo


_CONTEXTS: dict[tuple, ModulusContext] = {}


def _context(bodies) -> ModulusContext:
    """The geometry of ``bodies`` as a modulus context: every term of the blocks that read
    these bodies (a joint's constraint and axis blocks) shares one computation per
    evaluation. It depends on the bodies' names and states only, so one object serves
    every graph."""
    key = tuple((b.name, b.is_ground) for b in bodies)
    ctx = _CONTEXTS.get(key)
    if ctx is None:
        deps = _deps(bodies)
        n = len(deps)
        ctx = _CONTEXTS[key] = ModulusContext(
            value=lambda *vals: _compute_geometry(bodies, vals),
            rate=lambda *args: _compute_geometry(bodies, args[:n], args[n:]),
            depends_on=deps)
    return ctx


def build_block(bg: BondGraph, block: Block, *, port_from: str | None = None,
                port_name: str | None = None) -> None:
    """Add ``block`` to ``bg``: its 0-junction, one MTF or TF per term, and, when
    ``port_from`` is given, the port bond ``port_from -> block`` (its flow is
    sum G_k f_k)."""
    pc = None
    if block.phi is not None:
        deps = _deps(block.bodies)
        bodies = block.bodies
        pc = PositionConstraint(block.phi, deps, context=_context(bodies))
    bg.add(ZeroJunction(block.name, dim=block.dim, constraint=block.constraint,
                        constraint_label=block.label, position_constraint=pc))
    for term in block.terms:
        body, kind = term.junction.rsplit(".", 1)
        ename = f"{block.name}.{body}.{kind}"
        if term.constant is not None:
            g = np.asarray(term.constant, dtype=float)
            if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, np.eye(3)):
                bg.connect(block.name, term.junction, name=f"{ename}.b")    # mu = -E
                continue
            if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, -np.eye(3)):
                bg.connect(term.junction, block.name, name=f"{ename}.b")    # mu = +E
                continue
            bg.add(TF(ename, -g))
        else:
            bg.add(MTF(ename, lambda geo, t=term: -t.G(geo),
                       modulus_rate=lambda geo, t=term: -t.G_rate(geo),
                       context=_context(block.bodies), shape=(block.dim, 3)))
        bg.connect(term.junction, ename, name=f"{ename}.b1")
        bg.connect(ename, block.name, name=f"{ename}.b2")
    if port_from is not None:
        bg.connect(port_from, block.name, name=port_name or f"{block.name}.port")
