"""Spatial utilities shared by the element library: skew matrices, unit quaternions.

- :func:`skew`, :func:`vee`: x~ y = x cross y, and its inverse.
- :func:`quat_to_matrix`: rotation matrix A (body -> global) of a quaternion (w, x, y, z).
- :func:`matrix_to_quat`: the inverse (scalar part >= 0).
- :func:`quat_rate`: dq/dt = 1/2 q (x) (0, omega^b) (omega^b in body coordinates).
- :func:`body_rate_from_quat_rate`: omega^b from q and dq/dt.
- :func:`quat_multiply`, :func:`axis_angle_matrix`, :func:`frame_from_axis`.
- :func:`quat_matrix_entries`, :func:`quat_rate_entries`, :func:`body_rate_entries`: the
  formulas themselves, on numbers or arrays: the functions above and the compiled kernels
  (``elements.kernels.compiled``) use these.
- :func:`as_rotation`: a rotation matrix from a matrix, a unit quaternion or a rotation
  vector, checked (a reflection, a scaled matrix or a non-unit quaternion is refused).
- :func:`rotation_vector`: the rotation vector (axis times angle) of a rotation matrix.

Quaternions are scalar first and rotate body coordinates into global ones. Functions
normalise their quaternion argument, so a quaternion state that drifts off unit length
still gives a rotation matrix.
"""

from __future__ import annotations

import numpy as np


__all__ = ["skew", "vee", "cross3", "quat_to_matrix", "matrix_to_quat", "quat_rate",
           "body_rate_from_quat_rate", "quat_multiply", "axis_angle_matrix",
           "frame_from_axis", "unit", "as_rotation", "rotation_vector", "ROTATION_TOL",
           "quat_matrix_entries", "quat_rate_entries", "body_rate_entries"]


def skew(v: np.ndarray) -> np.ndarray:
    """The skew-symmetric matrix v~ with v~ y = v x y. ``v`` has shape (3,), or (..., 3)
    for a stack of vectors (then the result is (..., 3, 3))."""
    if np.ndim(v) == 1:
        x, y, z = v
        return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def cross3(a, b) -> np.ndarray:
    """a x b for 3-vectors, or row by row for stacks (..., 3) (np.cross's general
    machinery costs ten times more here)."""
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]])
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def vee(m: np.ndarray) -> np.ndarray:
    """The vector of a skew-symmetric matrix (its skew-symmetric part), shape (3,); for a
    stack (..., 3, 3), shape (..., 3)."""
    m = np.asarray(m)
    return 0.5 * np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                           m[..., 1, 0] - m[..., 0, 1]], axis=-1)


def unit(v, what: str = "vector") -> np.ndarray:
    """``v`` / |v|; raises ValueError for a zero or non-finite vector."""
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    if not np.isfinite(n) or n == 0.0:
        raise ValueError(f"{what} {v.tolist()} has no direction (zero length or not finite)")
    return v / n


# -- the quaternion formulas, written once ----------------------------------------------
# Plain arithmetic on numbers or on numpy arrays (entry by entry), so that the numpy
# functions below and the compiled kernels (elements.kernels.compiled, which compiles these very
# functions with numba) evaluate the same expressions.

def quat_matrix_entries(w, x, y, z):
    """The nine entries, row by row, of the rotation matrix (body -> global) of the unit
    quaternion (w, x, y, z): numbers, or arrays of the same shape."""
    return (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))


def quat_rate_entries(w, x, y, z, a, b, c):
    """dq/dt = 1/2 q (x) (0, omega^b) of q = (w, x, y, z) and omega^b = (a, b, c)."""
    return (0.5 * (-x * a - y * b - z * c), 0.5 * (w * a + y * c - z * b),
            0.5 * (w * b - x * c + z * a), 0.5 * (w * c + x * b - y * a))


def body_rate_entries(w, x, y, z, a, b, c, d):
    """omega^b = 2 vec(conj(q) (x) dq/dt) / |q|^2 of q = (w, x, y, z) and
    dq/dt = (a, b, c, d)."""
    k = 2.0 / (w * w + x * x + y * y + z * z)
    return (k * (w * b - x * a - y * d + z * c), k * (w * c + x * d - y * a - z * b),
            k * (w * d - x * c + y * b - z * a))


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (body -> global) of quaternion ``q`` = (w, x, y, z), normalised;
    for a stack of quaternions (n, 4), the stack of matrices (n, 3, 3)."""
    q = np.asarray(q, dtype=float)
    if q.ndim == 1:
        return np.array(quat_matrix_entries(*(q / np.linalg.norm(q)))).reshape(3, 3)
    w, x, y, z = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    out = np.empty(q.shape[:-1] + (9,))
    for k, e in enumerate(quat_matrix_entries(w, x, y, z)):
        out[..., k] = e
    return out.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix."""
    m = np.asarray(m, dtype=float)
    t = np.trace(m)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a (x) b of quaternions (w, x, y, z), or row by row for stacks
    (n, 4)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    w1, x1, y1, z1 = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    w2, x2, y2, z2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    out[..., 1] = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    out[..., 2] = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    out[..., 3] = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    return out


def quat_rate(q: np.ndarray, omega_body: np.ndarray) -> np.ndarray:
    """dq/dt = 1/2 q (x) (0, omega^b); omega^b in rad/s, body coordinates. Also row by row
    for stacks q (n, 4), omega (n, 3)."""
    q, om = np.asarray(q, dtype=float), np.asarray(omega_body, dtype=float)
    out = np.empty(np.broadcast_shapes(q.shape[:-1], om.shape[:-1]) + (4,))
    for k, e in enumerate(quat_rate_entries(q[..., 0], q[..., 1], q[..., 2], q[..., 3],
                                            om[..., 0], om[..., 1], om[..., 2])):
        out[..., k] = e
    return out


def body_rate_from_quat_rate(q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """omega^b = 2 vec(conj(q) (x) dq/dt) / |q|^2 (rad/s, body coordinates); row by row
    for stacks (n, 4)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qdot, dtype=float)
    out = np.empty(np.broadcast_shapes(q.shape[:-1], qd.shape[:-1]) + (3,))
    for k, e in enumerate(body_rate_entries(q[..., 0], q[..., 1], q[..., 2], q[..., 3],
                                            qd[..., 0], qd[..., 1], qd[..., 2], qd[..., 3])):
        out[..., k] = e
    return out


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` (rad) about the unit ``axis`` (right-hand rule)."""
    a = unit(axis, "rotation axis")
    k = skew(a)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def frame_from_axis(axis: np.ndarray) -> np.ndarray:
    """A right-handed orthonormal frame [d1, d2, a] (columns) whose third axis is ``axis``.

    The choice of d1 is deterministic: the coordinate axis least aligned with ``axis``,
    made perpendicular.
    """
    a = unit(axis, "joint axis")
    helper = np.eye(3)[int(np.argmin(np.abs(a)))]
    d1 = unit(helper - np.dot(helper, a) * a)
    d2 = np.cross(a, d1)
    return np.column_stack([d1, d2, a])


ROTATION_TOL = 1e-3
"""How far a given rotation may be from an exact one (max |R R^T - E| of a matrix, |1 -
|q|| of a quaternion): values typed with four or more significant digits pass and are
made exact (the nearest rotation); a scaled matrix, a reflection or a quaternion of
another length does not."""


def as_rotation(value) -> np.ndarray:
    """The rotation matrix (3, 3) that ``value`` gives: a rotation matrix (3, 3), a unit
    quaternion (w, x, y, z) (4,) or a rotation vector (3,) (axis times angle, rad).

    A matrix or quaternion within :data:`ROTATION_TOL` of a rotation is made exact (the
    nearest rotation matrix, the quaternion normalised).

    Raises
    ------
    ValueError
        Saying what is wrong (not finite, a reflection with det -1, not orthonormal, not
        unit length, a wrong shape) and what would be valid.
    """
    try:
        v = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not numeric; valid: a 3x3 rotation matrix, a "
                         f"unit quaternion (w, x, y, z) or a rotation vector (rad)") from None
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{v.tolist()} is not finite")
    if v.shape == (3, 3):
        err = float(np.abs(v @ v.T - np.eye(3)).max())
        det = float(np.linalg.det(v))
        if det < 0 and err <= ROTATION_TOL:
            raise ValueError(f"{v.tolist()} is a reflection (determinant {det:.3g}), not a "
                             f"rotation; valid: an orthonormal matrix with determinant +1")
        if err > ROTATION_TOL or det <= 0:
            raise ValueError(f"{v.tolist()} is not a rotation matrix (max |R R^T - E| = "
                             f"{err:.3g}, determinant {det:.3g}); valid: an orthonormal "
                             f"matrix with determinant +1")
        u, _, vt = np.linalg.svd(v)
        return u @ vt
    if v.shape == (4,):
        n = float(np.linalg.norm(v))
        if abs(n - 1.0) > ROTATION_TOL:
            raise ValueError(f"quaternion {v.tolist()} has length {n:.6g}, not unit "
                             f"length; valid: a unit quaternion (w, x, y, z), scalar first")
        return quat_to_matrix(v / n)
    if v.shape == (3,):
        angle = float(np.linalg.norm(v))
        return np.eye(3) if angle == 0.0 else axis_angle_matrix(v, angle)
    raise ValueError(f"an array of shape {v.shape} is not a rotation; valid: a 3x3 "
                     f"rotation matrix, a unit quaternion (w, x, y, z) or a rotation "
                     f"vector (3 numbers, rad)")


def rotation_vector(m: np.ndarray) -> np.ndarray:
    """The rotation vector (axis times angle, rad; angle in [0, pi]) of rotation matrix
    ``m`` (3, 3)."""
    q = matrix_to_quat(m)                       # w >= 0: angle in [0, pi]
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-300:
        return np.zeros(3)
    return q[1:] / s * (2.0 * np.arctan2(s, q[0]))
