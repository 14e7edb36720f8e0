"""Couplings between joints: gears, racks, belts and URDF's mimic joints.

:class:`JointCoupling` holds the coordinates of two joints with an axis in the ratio

    q_follower = ratio * q_leader + offset

(rad or m each: a gear pair of ratio -z1/z2, a rack and pinion of ratio r in m/rad, a
belt, URDF's ``<mimic multiplier offset>``). In bond-graph terms it is a constraint
0-junction fed by the two axis 1-junctions, the leader's through a TF of modulus
-ratio: its flow qd_follower - ratio qd_leader = dPhi/dt is held at zero by the unknown
effort source the causality assignment inserts there, whose effort is the coupling's
effort (a tooth force times a radius). The position constraint reads the joints'
coordinate states (``<joint>.coord``, which integrate the rates and are never wrapped),
so Baumgarte stabilisation also keeps Phi = q_f - ratio q_l - offset at zero over many
turns. An ideal coupling does no work: the energy ledger balances without a term of its
own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bondgraph import ModelError
from bondgraph.element import check_name

from elements.kernels.blocks import Block, Junction, Term
from elements.joints.kinds import Joint

__all__ = ["JointCoupling"]


class JointCoupling:
    """q_follower = ratio * q_leader + offset between two joints with an axis.

    Parameters
    ----------
    name : str
    leader, follower : Joint
        Joints with one free coordinate each (revolute or prismatic; may be of different
        kinds: a rack and pinion couples metres to radians), of the same mechanism.
    ratio : float
        d q_follower / d q_leader (rad/rad, m/m, m/rad or rad/m).
    offset : float
        q_follower at q_leader = 0 (the follower's unit).

    The coupling effort (:meth:`~elements.MechanismResult.coupling_effort`) is the effort
    it applies on the follower's axis (N m or N); on the leader's it applies -ratio times
    that.
    """

    type_name = "coupling"

    def __init__(self, name: str, leader: Joint, follower: Joint, ratio: float,
                 offset: float = 0.0):
        check_name(name, "coupling", ".")
        self.name = name
        for role, j in (("leader", leader), ("follower", follower)):
            if not isinstance(j, Joint) or j.n_free != 1:
                raise ModelError(f"coupling '{name}': the {role} must be a joint with an axis "
                                 f"(revolute or prismatic), got {j!r}")
        if leader is follower:
            raise ModelError(f"coupling '{name}' couples joint '{leader.name}' to itself")
        try:
            ratio, offset = float(ratio), float(offset)
        except (TypeError, ValueError):
            raise ModelError(f"coupling '{name}': ratio and offset must be numbers, got "
                             f"{ratio!r}, {offset!r}") from None
        if not (math.isfinite(ratio) and math.isfinite(offset)):
            raise ModelError(f"coupling '{name}': ratio and offset must be finite, got "
                             f"{ratio}, {offset}")
        self.leader, self.follower = leader, follower
        self.ratio, self.offset = ratio, offset

    def block(self) -> Block:
        """The constraint block: terms on the follower's axis (G = 1) and the leader's
        (G = -ratio; left out when the ratio is 0: the follower is then held at
        ``offset``)."""
        terms = [Term(self.follower.axis().port, Junction.AXIS, constant=np.array([[1.0]]))]
        if self.ratio != 0.0:
            terms.append(Term(self.leader.axis().port, Junction.AXIS,
                              constant=np.array([[-self.ratio]])))
        return Block(self.name, 1, terms, (), constraint=True)

    def expected(self, leader: float, *, rate: bool = False) -> float:
        """The follower's coordinate (or, with ``rate``, its rate or acceleration) for the
        leader's: ratio * leader (+ offset for a coordinate)."""
        return self.ratio * float(leader) + (0.0 if rate else self.offset)

    def agrees(self, follower: float, leader: float, *, rate: bool = False) -> bool:
        """Whether a follower's value given beside the leader's holds the coupling (to
        1e-9 relative, at least 1e-9 absolute)."""
        want = self.expected(leader, rate=rate)
        return abs(float(follower) - want) <= 1e-9 * max(1.0, abs(want))

    @property
    def depends_on(self) -> tuple[str, ...]:
        """The states Phi reads: the follower's and the leader's coordinates."""
        return (self.follower.coordinate_state, self.leader.coordinate_state)

    def phi(self, q_follower: Any, q_leader: Any) -> np.ndarray:
        """Phi = q_follower - ratio q_leader - offset, (1,)."""
        return np.atleast_1d(np.asarray(q_follower, dtype=float) -
                             self.ratio * np.asarray(q_leader, dtype=float) - self.offset)

    def follower_bond(self) -> str:
        """The bond from the follower's axis junction into the coupling (its effort is the
        coupling's effort taken from the follower's axis)."""
        return f"{self.name}.{self.follower.axis_junction}.b1"

    def __repr__(self) -> str:
        return (f"JointCoupling({self.name!r}: q_{self.follower.name} = {self.ratio:g} "
                f"q_{self.leader.name} + {self.offset:g})")
