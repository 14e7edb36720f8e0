"""What a study varies: grids of values and Monte Carlo draws.

- :class:`Grid`: every combination of given values (``values``, ``linspace``,
  ``logspace`` in a study file).
- :class:`MonteCarlo`: ``samples`` draws from :class:`Uniform`, :class:`Normal`,
  :class:`LogNormal` or :class:`Choice` distributions, reproducible by ``seed``.
- :class:`Run`: one point: its id (a hash of its values), index and values.
"""

from __future__ import annotations

import dataclasses

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bondgraph import ModelError


@dataclass(frozen=True)
class Uniform:
    """Uniform between ``low`` and ``high``."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)


@dataclass(frozen=True)
class Normal:
    """Normal with ``mean`` and standard deviation ``std`` (may give values a parameter
    refuses, such as a negative mass: those runs fail with a message)."""

    mean: float
    std: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.normal(self.mean, self.std, n)


@dataclass(frozen=True)
class LogNormal:
    """Log-normal: ``median * exp(sigma * N(0, 1))`` (always positive)."""

    median: float
    sigma: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.median * np.exp(self.sigma * rng.standard_normal(n))


@dataclass(frozen=True)
class Choice:
    """One of ``values``, each equally likely."""

    values: tuple[float, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.asarray(self.values, dtype=float)[rng.integers(0, len(self.values), n)]


@dataclass(frozen=True)
class Run:
    """One run of a study: its position in the plan, its stable id (a hash of the
    parameter values, so a resumed study recognises it) and the values."""

    index: int
    run_id: str
    values: dict[str, float]


def _run_id(values: Mapping[str, float], occurrence: int) -> str:
    text = json.dumps({k: float(v).hex() for k, v in sorted(values.items())},
                      sort_keys=True) + f"#{occurrence}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plan(rows: Iterable[dict[str, float]]) -> list[Run]:
    seen: dict[str, int] = {}
    out = []
    for i, values in enumerate(rows):
        base = _run_id(values, 0)
        k = seen.get(base, 0)
        seen[base] = k + 1
        out.append(Run(i, _run_id(values, k), dict(values)))
    return out


class Grid:
    """Every combination of the given values (the first parameter varies slowest).

    ``Grid({"J3.spring.k": [200.0, 500.0], "J1.actuator": np.linspace(0.05, 0.2, 4)})``
    """

    kind = "grid"

    def __init__(self, values: Mapping[str, Sequence[float]]):
        self.values = {k: [float(v) for v in np.atleast_1d(np.asarray(vs, dtype=float))]
                       for k, vs in values.items()}
        for k, vs in self.values.items():
            if not vs:
                raise ModelError(f"grid parameter {k!r} has no values")

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def runs(self) -> list[Run]:
        names = self.names
        return _plan(dict(zip(names, combo))
                     for combo in itertools.product(*self.values.values()))

    def describe(self) -> dict[str, Any]:
        return {"kind": "grid", "values": self.values}


class MonteCarlo:
    """``samples`` runs with each parameter drawn from its distribution.

    Each parameter has its own random stream (seeded by ``seed`` and the parameter's
    position), so a study with more samples repeats the runs of one with fewer.
    """

    kind = "monte_carlo"

    def __init__(self, distributions: Mapping[str, Any], samples: int, seed: int = 0):
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) \
                or samples < 1:
            raise ModelError(f"Monte Carlo samples must be a positive integer, got "
                             f"{samples!r}")
        self.distributions = dict(distributions)
        self.samples = int(samples)
        self.seed = int(seed)

    @property
    def names(self) -> list[str]:
        return list(self.distributions)

    def runs(self) -> list[Run]:
        cols = {}
        for k, (name, dist) in enumerate(self.distributions.items()):
            rng = np.random.default_rng([self.seed, k])
            cols[name] = np.asarray(dist.sample(rng, self.samples), dtype=float)
        return _plan({n: float(cols[n][i]) for n in cols} for i in range(self.samples))

    def describe(self) -> dict[str, Any]:
        return {"kind": "monte_carlo", "samples": self.samples, "seed": self.seed,
                "distributions": {k: {"type": type(d).__name__, **dataclasses.asdict(d)}
                                  for k, d in self.distributions.items()}}
