"""The blocks joint kinds are assembled from (functions of a joint ``j``: its bodies,
points P, Q, frames Fa, Fb and name): constraint blocks (:func:`spherical_block`,
:func:`orientation_block`, :func:`tilt_block`, :func:`across_block`) and coordinate ports
(:func:`turn_port`, :func:`slide_port`). Each constraint block's Phi has dPhi/dt equal to
its flow on Phi = 0; each port's flow is its coordinate's rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bondgraph.spatial import skew

from elements.kernels.blocks import Block, Junction, Term
from elements.kernels.geometry import (
    GapLength, GapRow, OrientationGap, PointGap, PrismaticRotation, RevoluteGap, Sandwich, SlideGap,
)

__all__ = ["body_terms", "kernel_bodies", "spherical_block", "orientation_block", "tilt_block", "across_block",
           "offset_blocks", "turn_port", "slide_port"]


def body_terms(j: Any, pairs) -> list[Term]:
    """Terms for the non-ground bodies among (body, junction kind, kernel, constant)."""
    return [Term(body.name, Junction(kind), kernel, const)
            for body, kind, kernel, const in pairs if not body.is_ground]


def kernel_bodies(j: Any):
    """The parent's and the child's names for the kernels (None: the ground)."""
    return (None if j.parent.is_ground else j.parent.name), j.child.name


def spherical_block(j) -> Block:
    """v_P - v_Q = 0; Phi = r_P - r_Q (global)."""
    a, b = kernel_bodies(j)
    P, Q = j.P, j.Q
    E = np.eye(3)
    pairs = [(j.parent, "v", None, E), (j.child, "v", None, -E)]
    if np.any(P):       # a point at the centre of mass adds no rotational term
        pairs.append((j.parent, "w", Sandwich(E, None, a, -skew(P)), None))
    if np.any(Q):
        pairs.append((j.child, "w", Sandwich(E, None, b, skew(Q)), None))
    return Block(f"{j.name}.t", 3, body_terms(j, pairs), j._bodies(),
                 PointGap(a, b, P, Q), True, f"{j.name}.t")

def orientation_block(j) -> Block:
    """omega_alpha - omega_beta = 0 (global); Phi = vee(A_a F_a (A_b F_b)^T)."""
    a, b = kernel_bodies(j)
    E = np.eye(3)
    terms = body_terms(j, [
        (j.parent, "w", Sandwich(E, None, a, E), None),
        (j.child, "w", Sandwich(E, None, b, -E), None),
    ])
    return Block(f"{j.name}.r", 3, terms, j._bodies(),
                 OrientationGap(a, b, j.Fa @ j.Fb.T), True, f"{j.name}.r")

def tilt_block(j) -> Block:
    """The axis (Fa's third column, on the parent) kept normal to d1, d2 (Fb's first
    two, on the child): Phi = [-a_alpha . d2_beta ; a_alpha . d1_beta], dPhi/dt =
    D^T (w_alpha - w_beta) seen in the child (G_alpha = D^T A_b^T A_a)."""
    a, b = kernel_bodies(j)
    D = j.Fb[:, :2]
    terms = body_terms(j, [
        (j.parent, "w", Sandwich(D.T, b, a, np.eye(3)), None),
        (j.child, "w", None, -D.T),
    ])
    return Block(f"{j.name}.r", 2, terms, j._bodies(),
                 RevoluteGap(a, b, j.Fa[:, 2], D), True, f"{j.name}.r")

def across_block(j, D: np.ndarray, P: Any = None, Q: Any = None, suffix: str = "t") -> Block:
    """No slide along the directions ``D`` fixed on the child (child coordinates,
    (3, k)): Phi = D^T A_b^T (r_P - r_Q) (the seed's Eqs. (1)-(4) for a prismatic
    joint's d1, d2); its rate carries -h^T d~ omega_beta of the turning directions.
    ``P``, ``Q``: the points (parent and child coordinates, m; default the joint's);
    the block is named ``<joint>.<suffix>``."""
    a, b = kernel_bodies(j)
    P = j.P if P is None else np.asarray(P, dtype=float)
    Q = j.Q if Q is None else np.asarray(Q, dtype=float)
    E = np.eye(3)
    pairs = [
        (j.parent, "v", Sandwich(D.T, b, None, E), None),
        (j.child, "v", Sandwich(-D.T, b, None, E), None),
        (j.child, "w", PrismaticRotation(a, b, D, P, Q), None),
    ]
    if np.any(P):
        pairs.insert(1, (j.parent, "w", Sandwich(-D.T, b, a, skew(P)), None))
    return Block(f"{j.name}.{suffix}", D.shape[1], body_terms(j, pairs), j._bodies(),
                 SlideGap(a, b, D, P, Q), True, f"{j.name}.{suffix}")


def offset_blocks(j, a1: np.ndarray, b2: np.ndarray, X1: np.ndarray, X2: np.ndarray,
                  d: float) -> list[Block]:
    """Two revolute axes joined by a rigid massless link, in place of a spherical
    block: ``a1`` through ``X1`` on the parent (parent coordinates), ``b2`` through
    ``X2`` on the child (child coordinates), X1 and X2 the feet of the axes' common
    perpendicular, ``d`` > 0 apart (m). Three rows: X2 - X1 normal to a2
    (``<joint>.t2``) and to a1 (``<joint>.t1``), and |X2 - X1| = d (``<joint>.span``,
    Phi = (|h|^2 - d^2) / (2 d), h = X1 - X2). With the axes' angle held (the
    universal joint's cross) they leave the two turns free; each row is its Phi's exact
    rate."""
    a, b = kernel_bodies(j)
    E = np.eye(3)
    # a1 . (X2 - X1), a1 on the parent: the child-side across block with the roles swapped
    e = np.asarray(a1, dtype=float)[None, :]
    along = Block(f"{j.name}.t1", 1, body_terms(j, [
        (j.parent, "v", Sandwich(-e, a, None, E), None),
        (j.parent, "w", PrismaticRotation(b, a, e.T, X2, X1), None),
        (j.child, "v", Sandwich(e, a, None, E), None),
        (j.child, "w", Sandwich(-e, a, b, skew(X2)), None),
    ]), j._bodies(), SlideGap(b, a, e.T, X2, X1), True, f"{j.name}.t1")
    # d/dt |h|^2 / (2 d) = h . dh/dt / d; on omega_a: (X1 x h_a)^T / d, on omega_b:
    # -(X2 x h_b)^T / d, each a PrismaticRotation with D = -X / d
    span = Block(f"{j.name}.span", 1, body_terms(j, [
        (j.parent, "v", GapRow(a, b, X1, X2, 1.0 / d), None),
        (j.parent, "w", PrismaticRotation(b, a, (-X1 / d)[:, None], X2, X1), None),
        (j.child, "v", GapRow(a, b, X1, X2, -1.0 / d), None),
        (j.child, "w", PrismaticRotation(a, b, (-X2 / d)[:, None], X1, X2), None),
    ]), j._bodies(), GapLength(a, b, X1, X2, d), True, f"{j.name}.span")
    return [across_block(j, np.asarray(b2, dtype=float)[:, None], X1, X2, "t2"), along, span]

def turn_port(j, ax: Any, b_vec: np.ndarray) -> Block:
    """The rate of turning about ``b_vec`` fixed on the child (child coordinates):
    b^T (w_beta - A_b^T A_a w_alpha)."""
    a, b = kernel_bodies(j)
    ab = np.asarray(b_vec, dtype=float)[None, :]
    terms = body_terms(j, [
        (j.parent, "w", Sandwich(-ab, b, a, np.eye(3)), None),
        (j.child, "w", None, ab),
    ])
    return Block(ax.block_name, 1, terms, j._bodies())

def slide_port(j, ax: Any, e: np.ndarray, exact: bool) -> Block:
    """The rate of sliding along ``e`` fixed on the parent (parent coordinates):
    d/dt [(A_a e) . (r_Q - r_P)]. ``exact=False`` drops the parent's turning term
    (e x A_a^T (r_Q - r_P)), which is zero wherever r_Q - r_P lies along e."""
    a, b = kernel_bodies(j)
    P, Q = j.P, j.Q
    d = np.asarray(e, dtype=float)[None, :]
    E = np.eye(3)
    pairs = [(j.parent, "v", Sandwich(-d, a, None, E), None)]
    if exact:
        pairs.append((j.parent, "w", PrismaticRotation(b, a, d.T, Q, P), None))
    elif np.any(P):
        pairs.append((j.parent, "w", None, d @ skew(P)))
    pairs.append((j.child, "v", Sandwich(d, a, None, E), None))
    if np.any(Q):
        pairs.append((j.child, "w", Sandwich(-d, a, b, skew(Q)), None))
    return Block(ax.block_name, 1, body_terms(j, pairs), j._bodies())
