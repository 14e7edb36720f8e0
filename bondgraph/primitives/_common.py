"""Helpers shared by the primitive elements: dimensions, square parameters, checks,
symbolic forms and short labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy

from ..element import is_symbolic, resolve_parameter
from ..errors import ModelError


MAX_DIM = 1000
"""The most components an element's port (and so a bond) may carry: the fields hold
dim x dim matrices, and the equations one state per component."""


def _check_dim(name: str, dim: Any) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or \
            not 1 <= dim <= MAX_DIM:
        raise ModelError(f"element '{name}': dim must be an integer from 1 to {MAX_DIM} "
                         f"(components of its port), got {dim!r}")
    return int(dim)


def _square(name: str, parameter: str, value: Any, dim: int,
            values: Mapping[str, float] | None) -> np.ndarray:
    """A parameter as a (dim, dim) matrix: scalars times identity, vectors as diagonals."""
    arr = resolve_parameter(value, values, owner=name, parameter=parameter)
    if arr.ndim == 0:
        return float(arr) * np.eye(dim)
    if arr.ndim == 1 and arr.shape == (dim,):
        return np.diag(arr)
    if arr.shape == (dim, dim):
        return arr
    raise ModelError(f"element '{name}': parameter '{parameter}' has shape {arr.shape}; "
                     f"valid: a scalar, a vector of {dim} diagonal entries, or a "
                     f"{dim}x{dim} matrix")


def _spd_problems(name: str, parameter: str, value: Any, dim: int) -> list[str]:
    """Problems with a matrix parameter that must be symmetric positive definite."""
    if value is None:
        return [f"element '{name}': parameter '{parameter}' is missing (no physical default "
                f"is assumed)"]
    if is_symbolic(value):
        return []
    try:
        mat = _square(name, parameter, value, dim, None)
    except ModelError as exc:
        return [str(exc)]
    if not np.allclose(mat, mat.T, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(mat).max())):
        return [f"element '{name}': parameter '{parameter}' is not symmetric: {mat.tolist()}"]
    scale = float(np.abs(mat).max()) or 1.0       # (scaled: no overflow inside eigvalsh)
    eig = np.linalg.eigvalsh(0.5 * (mat + mat.T) / scale) * scale
    if eig.min() <= 0.0:
        return [f"element '{name}': parameter '{parameter}' must be positive definite; its "
                f"smallest eigenvalue is {eig.min():.6g}"]
    return []


def _sym_square(value: Any, dim: int) -> sympy.Matrix:
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        return sympy.sympify(value) * sympy.eye(dim)
    if arr.ndim == 1:
        return sympy.diag(*[sympy.sympify(v) for v in arr])
    return sympy.Matrix(arr.tolist())


def _short(value: Any, values: Mapping[str, float] | None = None) -> str:
    """A parameter as short diagram text: numbers to 4 digits, a diagonal matrix as
    diag(...); symbols and expressions as their numbers where ``values`` has every
    symbol's value, as themselves otherwise."""
    if value is None:
        return "?"
    if values:
        arr = np.asarray(value, dtype=object)
        if any(isinstance(v, sympy.Basic) for v in arr.ravel()):
            try:
                value = resolve_parameter(value, values, owner="", parameter="")
            except ModelError:
                pass
    if isinstance(value, sympy.Basic):
        return str(value)
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        try:
            return f"{float(value):.4g}"
        except (TypeError, ValueError):
            return str(value)
    try:
        f = np.asarray(value, dtype=float)
        if f.ndim == 2 and np.allclose(f, np.diag(np.diag(f))):
            return "diag(" + ", ".join(f"{v:.4g}" for v in np.diag(f)) + ")"
        return "[" + ", ".join(f"{v:.4g}" for v in f.ravel()) + "]"
    except (TypeError, ValueError):
        return str(arr.tolist())
