"""bondgraph.spatial: the quaternion formulas, written once, against independent forms
(scipy's Rotation, the matrix exponential of the body rate), and their compiled copies
(elements.kernels.compiled compiles the same functions) against the numpy ones.

Tolerances: every comparison is of a few dozen floating-point operations on numbers of
order 1, so 1e-13 (about 500 eps) bounds the rounding; a wrong sign or a swapped entry
gives errors of order 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from bondgraph.spatial import (
    body_rate_from_quat_rate, quat_multiply, quat_rate, quat_to_matrix, skew,
)

RNG = np.random.default_rng(11)
Q = RNG.normal(size=(50, 4)) * RNG.uniform(0.5, 2.0, size=(50, 1))   # not unit length
W = RNG.normal(size=(50, 3))


def test_matrix_equals_scipy_rotation():
    ref = Rotation.from_quat(Q[:, [1, 2, 3, 0]]).as_matrix()     # scipy: scalar last
    assert np.max(np.abs(quat_to_matrix(Q) - ref)) < 1e-13
    for q, r in zip(Q[:5], ref[:5]):                                # one at a time
        assert np.max(np.abs(quat_to_matrix(q) - r)) < 1e-13


def test_quaternion_rate_moves_the_matrix_by_the_body_rate():
    """dq/dt = 1/2 q (x) (0, w) means A(t) = A(0) expm(t w~): one small step of the
    quaternion (second order) matches the exponential to O(dt^3)."""
    dt = 1e-4
    for q, w in zip(Q[:10], W[:10]):
        q = q / np.linalg.norm(q)
        qd = quat_rate(q, w)
        qdd = quat_rate(qd, w)         # d2q/dt2 for a constant body rate (linear in q)
        step = q + dt * qd + 0.5 * dt * dt * qdd
        A1 = quat_to_matrix(q) @ expm(dt * skew(w))
        assert np.max(np.abs(quat_to_matrix(step) - A1)) < 1e-11


def test_body_rate_inverts_quaternion_rate():
    qd = quat_rate(Q, W)
    assert np.max(np.abs(body_rate_from_quat_rate(Q, qd) - W)) < 1e-13
    # and quat_rate is half the Hamilton product with (0, w)
    pure = np.concatenate([np.zeros((len(W), 1)), W], axis=1)
    assert np.max(np.abs(qd - 0.5 * quat_multiply(Q, pure))) < 1e-13


def test_compiled_formulas_equal_numpy():
    pytest.importorskip("numba")
    from elements.kernels import compiled as C
    states = np.concatenate([Q, RNG.normal(size=(len(Q), 3))], axis=1)
    A, r = C.frames(states)
    assert np.array_equal(A[0], np.eye(3)) and np.array_equal(r[0], np.zeros(3))
    assert np.max(np.abs(A[1:] - quat_to_matrix(Q))) < 1e-13
    assert np.array_equal(r[1:], states[:, 4:])
    assert np.max(np.abs(C.quat_rates(Q, W) - quat_rate(Q, W))) < 1e-13
    qd = quat_rate(Q, W)
    w, v, Adot = C.rates(Q, qd, np.ones((len(Q), 3)), A)
    assert np.max(np.abs(w[1:] - W)) < 1e-12
    assert np.max(np.abs(Adot[1:] - A[1:] @ skew(W))) < 1e-12
