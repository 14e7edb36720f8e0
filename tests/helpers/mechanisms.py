"""Mechanisms shared by several test modules."""

from __future__ import annotations

import numpy as np

from elements import Inertia, Mechanism, RevoluteJoint, RigidBody

# crank, coupler, rocker, ground link (m)
FOUR_BAR_LINKS = (0.1, 0.3, 0.25, 0.3)


def four_bar() -> Mechanism:
    """A planar four-bar linkage (plane x-y, gravity -y) of thin 0.5 kg rods on four
    revolute joints about z; J3 closes the loop (its constraints are redundant)."""
    a, b, c, d = FOUR_BAR_LINKS
    mech = Mechanism("four_bar", gravity=(0.0, -9.81, 0.0))

    def rod(name, length):
        return mech.add_body(RigidBody(name, 0.5, Inertia.rod(0.5, length, axis=0, thin=1e-5)))

    crank, coupler, rocker = rod("crank", a), rod("coupler", b), rod("rocker", c)
    z = (0, 0, 1)
    mech.add_joint(RevoluteJoint("J1", mech.ground, crank, child_point=(-a / 2, 0, 0), axis=z))
    mech.add_joint(RevoluteJoint("J2", crank, coupler, parent_point=(a / 2, 0, 0),
                                 child_point=(-b / 2, 0, 0), axis=z))
    mech.add_joint(RevoluteJoint("J4", mech.ground, rocker, parent_point=(d, 0, 0),
                                 child_point=(-c / 2, 0, 0), axis=z))
    mech.add_joint(RevoluteJoint("J3", coupler, rocker, parent_point=(b / 2, 0, 0),
                                 child_point=(c / 2, 0, 0), axis=z))
    return mech


def four_bar_start():
    """The assembled four-bar and a state with the crank at 90 degrees turning at
    2 rad/s (the loop closed by Newton)."""
    mm = four_bar().assemble()
    return mm, mm.initial_state({"J1": np.pi / 2}, {"J1": 2.0}, guess={"J2": -1.0, "J4": 1.5})


def sparse_scara():
    """The SCARA of the sparse-evaluation tests (elements.models.scara with fixed,
    deliberately uneven parameters) and its initial joint coordinates (none)."""
    from elements.models import scara
    return scara(2.0, 0.5, (0.01, 0.02, 0.03), (-0.25, 0.02, 0.0), 1.5, 0.4,
                 (0.01, 0.015, 0.02), (-0.2, 0.0, 0.01)), {}


def random_unit_state(model, rng) -> np.ndarray:
    """A random state vector of ``model`` (any positions and momenta), every body's
    quaternion (states ending in ".q") normalised."""
    x = rng.normal(size=model.n_states)
    for name in model.state_names:
        if name.endswith(".q"):
            sl = model.state_slices[name]
            x[sl] /= np.linalg.norm(x[sl])
    return x


def random_states(mech, mm, rng, count, stabilization):
    """``count`` (t, x, stabilization) at random poses reached by joint coordinates in
    [-1, 1] rad (or m) with random momenta added (the bodies move fast in all
    directions), t in [0, 2) s; every second one with ``stabilization``. Draws, per
    state: the coordinates, the momenta, then t."""
    model = mm.model
    coords = [n for n, j in mech.joints.items() if j.n_free == 1]
    out = []
    for k in range(count):
        x = mm.initial_state({c: float(rng.uniform(-1, 1)) for c in coords})
        x[:model.n_energy] += rng.normal(size=model.n_energy)
        out.append((float(rng.uniform(0, 2)), x, stabilization if k % 2 else None))
    return out


def gripper_urdf(mimic: str = "", extra: str = "") -> str:
    """A two-finger URDF gripper: fingers ``l`` (0.2 kg, along +y) and ``r`` (0.3 kg,
    along -y) on prismatic joints from ``base``; ``mimic`` goes inside joint ``r`` (a
    ``<mimic .../>`` element), ``extra`` before ``</robot>``."""
    inertia = ('<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>')
    return f"""<robot name="gripper">
  <link name="base"/>
  <link name="left"><inertial><mass value="0.2"/>{inertia}</inertial></link>
  <link name="right"><inertial><mass value="0.3"/>{inertia}</inertial></link>
  <joint name="l" type="prismatic"><parent link="base"/><child link="left"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="20" velocity="1"/></joint>
  <joint name="r" type="prismatic"><parent link="base"/><child link="right"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.04" effort="20" velocity="1"/>
    {mimic}</joint>
  {extra}
</robot>"""


def urdf_inertial(m, com, diag) -> str:
    """A URDF ``<inertial>``: mass m (kg) at ``com`` ("x y z", m), inertia with the
    diagonal ``diag`` and ixy = 0.001 (kg m^2)."""
    return (f'<inertial><origin xyz="{com}"/><mass value="{m}"/><inertia ixx="{diag[0]}" '
            f'ixy="0.001" ixz="0" iyy="{diag[1]}" iyz="0" izz="{diag[2]}"/></inertial>')


def urdf_joint(name, parent, child, xyz, axis, kind="revolute", rpy="0 0 0") -> str:
    """A URDF ``<joint>`` (limits -1 .. 1) of ``kind`` from ``parent`` to ``child``."""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child '
            f'link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="-1" upper="1" effort="10" velocity="5"/></joint>')
