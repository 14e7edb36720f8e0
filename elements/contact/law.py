"""The contact law: how hard a contact pushes back and how it rubs.

- :class:`ContactLaw`: a compliant normal law of Hunt and Crossley's form,
  ``N = k d^n (1 + lambda d')`` (d the penetration depth, m; d' its rate, m/s), never
  pulling (``N >= 0``), and Coulomb friction proportional to it, ``|F_t| = mu N``,
  regularised below a slip velocity: ``F_t = -mu N v_t / sqrt(|v_t|^2 + v_s^2)``;
  optionally rolling and torsional resistance, moments proportional to it that oppose
  the relative angular velocity's tangential and normal parts (w_t, w_n), regularised
  alike: ``M_r = -c_r N w_t / sqrt(|w_t|^2 + w_s^2)``,
  ``M_n = -c_n N w_n / sqrt(|w_n|^2 + w_s^2)`` (c_r, c_n in m, as MuJoCo's).
- :func:`restitution`: the coefficient of restitution the law gives an impact at a
  given speed (exact for the law alone: Hunt and Crossley's phase-plane integral).
- :meth:`ContactLaw.for_restitution`: the damping that gives a restitution at a speed.

Energy: the elastic part ``k d^n`` has the potential ``k d^(n+1) / (n+1)`` (stored in
the contact, J); the damping, the friction and the rolling and torsional resistance
only dissipate. A run reports both in its
energy ledger.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from bondgraph.errors import ModelError

__all__ = ["ContactLaw", "restitution", "NEUTRAL"]


def _check(owner: str, field: str, value: float, *, low: float, strict: bool,
           unit: str, inf_ok: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    ok = (not isinstance(value, bool) and not math.isnan(v) and
          (math.isfinite(v) or (inf_ok and v == math.inf)) and (v > low if strict else v >= low))
    if not ok:
        rule = f"{'>' if strict else '>='} {low:g}"
        raise ModelError(f"{owner}: {field} must be a finite number {rule} ({unit}), got "
                         f"{value!r}")
    return v


@dataclass(frozen=True)
class ContactLaw:
    """A contact's normal and friction law (see the module docstring).

    Parameters
    ----------
    stiffness : float
        k > 0, N/m^n (``inf`` only for a plane whose pairs take the other shape's law).
    exponent : float
        n >= 1: 1 a linear spring, 1.5 Hertz's law of a sphere on a plane.
    damping : float
        lambda >= 0, s/m: Hunt and Crossley's damping (the dissipative force is
        ``lambda d'`` times the elastic one, so it starts at zero with the contact).
    friction : float
        mu >= 0: Coulomb's coefficient.
    slip_velocity : float
        v_s > 0, m/s: below it the friction force grows linearly with the sliding
        speed (a regularisation: a body held by friction creeps at about
        ``v_s |F_t| / (mu N)``).
    owner : str
        What the law belongs to, for error messages (a shape's name).
    rolling : float
        c_r >= 0, m: rolling resistance, the moment ``c_r N`` opposing the relative
        rolling (the relative angular velocity's part tangent to the contact); 0: none.
    torsion : float
        c_n >= 0, m: torsional resistance, the moment ``c_n N`` opposing the relative
        spin about the contact normal; 0: none.
    spin_velocity : float
        w_s > 0, rad/s: below it the rolling and torsional moments grow linearly with
        the angular velocity they oppose (their regularisation, as ``slip_velocity``
        the friction's).
    """

    stiffness: float = 1e5
    exponent: float = 1.0
    damping: float = 1.0
    friction: float = 0.5
    slip_velocity: float = 1e-4
    owner: str = "contact law"
    rolling: float = 0.0
    torsion: float = 0.0
    spin_velocity: float = 1e-3

    def __post_init__(self):
        o = self.owner
        object.__setattr__(self, "stiffness", _check(o, "stiffness", self.stiffness, low=0.0,
                                                     strict=True, unit="N/m^n", inf_ok=True))
        object.__setattr__(self, "exponent", _check(o, "exponent", self.exponent, low=1.0,
                                                    strict=False, unit="1"))
        object.__setattr__(self, "damping", _check(o, "damping", self.damping, low=0.0,
                                                   strict=False, unit="s/m"))
        object.__setattr__(self, "friction", _check(o, "friction", self.friction, low=0.0,
                                                    strict=False, unit="1"))
        object.__setattr__(self, "slip_velocity", _check(
            o, "slip_velocity", self.slip_velocity, low=0.0, strict=True, unit="m/s",
            inf_ok=True))
        object.__setattr__(self, "rolling", _check(o, "rolling", self.rolling, low=0.0,
                                                   strict=False, unit="m"))
        object.__setattr__(self, "torsion", _check(o, "torsion", self.torsion, low=0.0,
                                                   strict=False, unit="m"))
        object.__setattr__(self, "spin_velocity", _check(
            o, "spin_velocity", self.spin_velocity, low=0.0, strict=True, unit="rad/s",
            inf_ok=True))

    def named(self, owner: str) -> "ContactLaw":
        """The same law, its errors naming ``owner``."""
        return dataclasses.replace(self, owner=owner)

    @staticmethod
    def combine(a: "ContactLaw | None", b: "ContactLaw | None") -> "ContactLaw":
        """The law of a pair of shapes: their stiffnesses in series (the softer shape
        gives way; ``inf`` is rigid), the larger damping, the larger friction (as
        MuJoCo takes the larger of two geoms' friction), the smaller slip velocity;
        likewise the larger rolling and torsional resistance and the smaller spin
        velocity. A missing law (a plane without one) takes the other's."""
        if a is None or b is None:
            out = a if b is None else b
            if out is None:
                raise ModelError("a contact pair without a law (give one of its shapes "
                                 "a ContactLaw)")
            return out
        if a.exponent != b.exponent:          # springs of different laws: the softer one
            k, n = min((a.stiffness, a.exponent), (b.stiffness, b.exponent))
        else:
            n = a.exponent
            k = a.stiffness if b.stiffness == math.inf else b.stiffness \
                if a.stiffness == math.inf else a.stiffness * b.stiffness / (a.stiffness +
                                                                             b.stiffness)
        return ContactLaw(k, n, max(a.damping, b.damping), max(a.friction, b.friction),
                          min(a.slip_velocity, b.slip_velocity),
                          f"the pair ({a.owner}, {b.owner})", max(a.rolling, b.rolling),
                          max(a.torsion, b.torsion), min(a.spin_velocity, b.spin_velocity))

    @classmethod
    def for_restitution(cls, e: float, speed: float, **kwargs) -> "ContactLaw":
        """A law whose impacts at ``speed`` (m/s) rebound with restitution ``e`` (0 < e
        <= 1): the damping solved from :func:`restitution`; the other fields as given."""
        e = _check("ContactLaw.for_restitution", "e", e, low=0.0, strict=True, unit="1")
        speed = _check("ContactLaw.for_restitution", "speed", speed, low=0.0, strict=True,
                       unit="m/s")
        if e > 1.0:
            raise ModelError(f"ContactLaw.for_restitution: e must be at most 1, got {e}")
        if e == 1.0:
            return cls(damping=0.0, **kwargs)
        from scipy.optimize import brentq
        lam = brentq(lambda lm: restitution(lm, speed) - e, 1e-12 / speed, 1e6 / speed,
                     xtol=1e-15, rtol=1e-14)
        return cls(damping=lam, **kwargs)


def restitution(damping: float, speed: float) -> float:
    """The restitution v_out / v_in of an impact at ``speed`` (m/s) on a contact of
    Hunt and Crossley's law with ``damping`` lambda (s/m), when the contact force alone
    acts (any stiffness and exponent): from ``m v dv = -k d^n (1 + lambda v) dd``,
    ``G(v) = v / lambda - ln(1 + lambda v) / lambda^2`` takes the same value at entry
    (``v_in``) and exit (``-v_out``)."""
    lam, v = float(damping), float(speed)
    if lam <= 0.0:
        return 1.0
    g_in = v / lam - math.log1p(lam * v) / lam ** 2
    # G(-u) = -u / lam - ln(1 - lam u) / lam^2 grows from 0 (u = 0) to inf (u -> 1/lam)
    from scipy.optimize import brentq

    def gap(u):
        return -u / lam - math.log1p(-lam * u) / lam ** 2 - g_in
    hi = (1.0 - 1e-15) / lam
    u = brentq(gap, 0.0, hi, xtol=1e-16, rtol=1e-15) if gap(hi) > 0 else hi
    return u / v


NEUTRAL = ContactLaw(math.inf, 1.0, 0.0, 0.0, math.inf, "a plane without its own law",
                     0.0, 0.0, math.inf)
"""A plane's law when it has none: rigid, no damping, no friction (its pairs take the
other shape's law)."""
