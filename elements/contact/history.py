"""The contacts of a run, reported like joint reactions.

- :class:`PairHistory`: one pair of shapes over the output times: the summed normal
  force (N), the friction force and the total force on the second shape (N, global),
  the centre of pressure (m, global), the deepest penetration (m), the fastest sliding
  (m/s) and the number of points in contact.
- :class:`ContactHistory`: every pair that touched during the run, the elastic energy
  stored in the contacts at each time (J), and the columns written to ``contacts.csv``.
- :func:`contact_history`: all of it from a run's states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from bondgraph.element import StateView
from bondgraph.errors import NameNotFoundError, did_you_mean

__all__ = ["PairHistory", "ContactHistory", "contact_history"]


@dataclass(frozen=True)
class PairHistory:
    """One pair of shapes over the output times (n of them); forces act on ``shape_b``
    (``shape_a`` feels the opposite), global coordinates.

    normal_force : (n,) N, the sum over the pair's points (0 out of contact).
    friction_force : (3, n) N.
    force : (3, n) N: normal plus friction.
    point : (3, n) m: the centre of pressure, the normal-force-weighted mean of
        ``shape_b``'s contact points (NaN out of contact).
    depth : (n,) m: the deepest penetration (0 out of contact).
    slip_speed : (n,) m/s: the fastest tangential sliding at a point in contact.
    count : (n,) the number of contact points.
    moment : (3, n) N m: the rolling and torsional resistance on ``shape_b`` (zero
        without them; :class:`~elements.contact.law.ContactLaw`).
    """

    shape_a: str
    shape_b: str
    normal_force: np.ndarray
    friction_force: np.ndarray
    force: np.ndarray
    point: np.ndarray
    depth: np.ndarray
    slip_speed: np.ndarray
    count: np.ndarray
    moment: np.ndarray | None = None

    @property
    def name(self) -> str:
        """``<shape_a>|<shape_b>``: the pair's name in ``contacts.csv``."""
        return f"{self.shape_a}|{self.shape_b}"


@dataclass(frozen=True)
class ContactHistory:
    """Every pair that touched during a run (see the module docstring).

    t : (n,) s.
    pairs : mapping ``(shape_a, shape_b)`` -> :class:`PairHistory`.
    stored : (n,) J: the elastic energy in all contacts.
    """

    t: np.ndarray
    pairs: Mapping[tuple[str, str], PairHistory]
    stored: np.ndarray

    def pair(self, a: str, b: str) -> PairHistory:
        """The pair of shapes ``a`` and ``b`` (in either order: the forces are then on
        the one named second)."""
        if (a, b) in self.pairs:
            return self.pairs[(a, b)]
        if (b, a) in self.pairs:
            p = self.pairs[(b, a)]
            return PairHistory(a, b, p.normal_force, -p.friction_force, -p.force,
                               p.point, p.depth, p.slip_speed, p.count,
                               None if p.moment is None else -p.moment)
        names = [f"{x}|{y}" for x, y in self.pairs]
        raise NameNotFoundError(f"shapes {a!r} and {b!r} never touched in this run"
                                f"{did_you_mean(f'{a}|{b}', names)}; pairs in contact: "
                                f"{', '.join(names) or 'none'}")

    def columns(self) -> dict[str, np.ndarray]:
        """The columns of ``contacts.csv``: ``t``, then per pair ``<a>|<b>.N`` (N),
        ``.Fx`` ``.Fy`` ``.Fz`` (N, on b: normal plus friction), ``.Ftx`` ``.Fty``
        ``.Ftz`` (the friction, N, on b), ``.x`` ``.y`` ``.z`` (the centre of pressure,
        m), ``.depth`` (m), ``.slip`` (m/s), ``.count``, ``.Mx`` ``.My`` ``.Mz`` (the
        rolling and torsional resistance, N m, on b); and ``contact_energy`` (J)."""
        out = {"t": self.t}
        for p in self.pairs.values():
            n = p.name
            out[f"{n}.N"] = p.normal_force
            for k, ax in enumerate("xyz"):
                out[f"{n}.F{ax}"] = p.force[k]
            for k, ax in enumerate("xyz"):
                out[f"{n}.Ft{ax}"] = p.friction_force[k]
            for k, ax in enumerate("xyz"):
                out[f"{n}.{ax}"] = p.point[k]
            out[f"{n}.depth"] = p.depth
            out[f"{n}.slip"] = p.slip_speed
            out[f"{n}.count"] = p.count.astype(float)
            moment = np.zeros((3, self.t.size)) if p.moment is None else p.moment
            for k, ax in enumerate("xyz"):
                out[f"{n}.M{ax}"] = moment[k]
        out["contact_energy"] = self.stored
        return out

    def units(self) -> dict[str, dict[str, str]]:
        """Units and frames of :meth:`columns` (as ``units.json`` gives them)."""
        out: dict[str, dict[str, str]] = {}
        for p in self.pairs.values():
            n = p.name
            out[f"{n}.N"] = {"unit": "N", "meaning": f"normal force of {p.shape_a} on "
                                                    f"{p.shape_b}, summed over the points"}
            for ax in "xyz":
                out[f"{n}.F{ax}"] = {"unit": "N", "frame": "global",
                                     "meaning": f"contact force (normal plus friction) of "
                                                f"{p.shape_a} on {p.shape_b}"}
            for ax in "xyz":
                out[f"{n}.Ft{ax}"] = {"unit": "N", "frame": "global",
                                      "meaning": f"friction force of {p.shape_a} on "
                                                 f"{p.shape_b}"}
            for ax in "xyz":
                out[f"{n}.{ax}"] = {"unit": "m", "frame": "global",
                                    "meaning": "centre of pressure (NaN out of contact)"}
            out[f"{n}.depth"] = {"unit": "m", "meaning": "deepest penetration"}
            out[f"{n}.slip"] = {"unit": "m/s", "meaning": "fastest sliding at a point"}
            out[f"{n}.count"] = {"unit": "1", "meaning": "contact points"}
            for ax in "xyz":
                out[f"{n}.M{ax}"] = {"unit": "N m", "frame": "global",
                                     "meaning": f"rolling and torsional resistance of "
                                                f"{p.shape_a} on {p.shape_b}"}
        out["contact_energy"] = {"unit": "J", "meaning": "elastic energy in the contacts"}
        return out


def contact_history(bound, x: np.ndarray, slices: Mapping[str, slice],
                    t: np.ndarray) -> ContactHistory:
    """The :class:`ContactHistory` of states ``x`` (n_states, n) at times ``t``, with
    the bound contact system ``bound``
    (:class:`~elements.contact.dynamics.BoundContacts`)."""
    n = t.size
    acc: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    stored = np.zeros(n)
    for k in range(n):
        xk = np.ascontiguousarray(x[:, k], dtype=float)
        if not np.all(np.isfinite(xk)):
            stored[k] = np.nan
            continue
        _, records = bound.evaluate(StateView(xk, slices))
        for rec in records:
            key = (rec.shape_a, rec.shape_b)
            a = acc.get(key)
            if a is None:
                a = acc[key] = {"N": np.zeros(n), "Ft": np.zeros((3, n)),
                                "F": np.zeros((3, n)), "P": np.full((3, n), np.nan),
                                "d": np.zeros(n), "s": np.zeros(n),
                                "c": np.zeros(n, dtype=int), "M": np.zeros((3, n))}
            N = rec.normal_force
            a["N"][k] = N.sum()
            a["Ft"][:, k] = rec.friction_force.sum(axis=0)
            a["F"][:, k] = (N[:, None] * rec.normals).sum(axis=0) + a["Ft"][:, k]
            if N.sum() > 0:
                a["P"][:, k] = (N[:, None] * rec.points_b).sum(axis=0) / N.sum()
            a["d"][k] = rec.depths.max()
            a["s"][k] = np.sqrt(np.einsum("ij,ij->i", rec.slip, rec.slip)).max()
            a["c"][k] = len(N)
            a["M"][:, k] = rec.moment
            stored[k] += rec.stored
    pairs = {key: PairHistory(key[0], key[1], a["N"], a["Ft"], a["F"], a["P"], a["d"],
                              a["s"], a["c"], a["M"]) for key, a in acc.items()}
    return ContactHistory(np.asarray(t, dtype=float), pairs, stored)
