"""MuJoCo's geoms as collision shapes of an imported mechanism.

- :func:`add_contacts`: every geom that may collide (its ``contype``/``conaffinity``
  bits, MuJoCo's filters) becomes a shape on the body its MuJoCo body was merged into,
  posed from the link's frame (:attr:`Mechanism.frames`); ``<exclude>`` and explicit
  ``<pair>``s become the broad phase's pairs off and on.

What maps how, and what is approximate (every approximation is listed in the import
report under ``approximated``):

- ``plane`` on the world body: a :class:`~elements.contact.Plane` (MuJoCo's planes are
  infinite in collision, as here); a plane on a moving body is not imported.
- ``sphere``, ``capsule``, ``box``, ``cylinder``: the same shape (MuJoCo's sizes are
  half-lengths); ``ellipsoid``: an :class:`~elements.contact.Ellipsoid` of the same
  semi-axes; ``mesh``: its convex hull (MuJoCo collides meshes as their hulls too);
  ``hfield``: not imported.
- friction: the sliding coefficient (``friction[0]``; a pair takes the larger, as
  MuJoCo does); with ``condim`` 4 the torsional one (``friction[1]``, m) as the law's
  ``torsion``, with ``condim`` 6 also the rolling one (``friction[2]``) as its
  ``rolling``: regularised moments where MuJoCo has constraints (reported); with
  ``condim`` 3 (MuJoCo's default, which uses neither) they are listed as not imported.
  The sliding friction is regularised at MuJoCo's creep: its friction rows' reference
  acceleration -b v, mixed by the impedance d, lets a body creep at
  v = (1 - d) F / (d b m) under a tangential force F (an elliptic cone; a pyramidal one
  creeps 1.3 to 2.8 times faster at mu 0.3 to 2, reported), so the slip velocity is
  ``v_s = mu g (1 - d) / (d b)`` (that slope when one point carries the tree's weight).
- ``solref`` (time constant tau, damping ratio zeta) and ``solimp`` (dmin, dmax, width,
  midpoint, power): MuJoCo's soft contact has the reference acceleration
  ``-b v - k d r`` (k = 1 / (dmax tau zeta)^2, b = 2 / (dmax tau), d the impedance at
  the penetration r: dmin at contact, dmax from ``width`` on, MuJoCo's sigmoid between)
  and mixes it with the free motion by d, so that a body resting on one point sinks to
  the r where ``d(r)^2 k r = (1 - d(r)) g``, whatever its mass. Here the stiffness is
  linear (exponent 1): ``k_lin = m g / r`` with that r and m the mass of the body's
  whole tree, so that one contact point carrying the tree's weight rests at MuJoCo's r
  (N points share it: about r / N), and Hunt and Crossley's damping lambda gives that
  spring the damping ratio zeta at that weight: ``lambda = 2 zeta sqrt(k_lin m) /
  (m g)``. Negative ``solref`` (direct stiffness and damping per unit mass, k =
  -solref[0] / dmax^2, b = -solref[1] / dmax) is read as such, with MuJoCo's damping
  d b m at rest.
"""

from __future__ import annotations

import dataclasses
import math

from typing import Any

import numpy as np
from scipy.optimize import brentq

from bondgraph import ModelError
from bondgraph.spatial import quat_to_matrix

from elements.contact import (
    Box, Capsule, ContactLaw, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere,
)

__all__ = ["add_contacts", "GEOM_TYPES"]

GEOM_TYPES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid",
              5: "cylinder", 6: "box", 7: "mesh"}
"""MuJoCo's geom types (mjtGeom) by code."""


def _tree_masses(mech) -> dict[str, float]:
    """Each body's tree mass: the mass of every body connected to it by joints (the
    ground cuts the trees)."""
    adj: dict[str, set[str]] = {b: set() for b in mech.bodies}
    for j in mech.joints.values():
        if not j.parent.is_ground:
            adj[j.parent.name].add(j.child.name)
            adj[j.child.name].add(j.parent.name)
    out: dict[str, float] = {}
    for b in mech.bodies:
        if b in out:
            continue
        seen, todo = {b}, [b]
        while todo:
            for c in adj[todo.pop()] - seen:
                seen.add(c)
                todo.append(c)
        # (fsum: exact, so the same whatever order the set gives, which changes with
        # Python's hash seed; a plain sum made runs differ from process to process)
        total = math.fsum(mech.bodies[c].mass for c in seen)
        out.update({c: total for c in seen})
    return out


def add_contacts(mech, model: Any, geom_names: list[str], body_names: list[str],
                 colliding: list[int], report) -> None:
    """Add the shapes of ``colliding`` geoms (MuJoCo ids) to ``mech`` (see the module
    docstring), and the report's ``approximated`` and ``not_imported`` entries."""
    g = float(np.linalg.norm(mech.gravity)) or 9.81
    tree_mass = _tree_masses(mech)
    approx = report.approximated
    added: dict[int, str] = {}
    for i in colliding:
        kind = GEOM_TYPES.get(int(model.geom_type[i]), "unknown")
        name = geom_names[i]
        link = body_names[int(model.geom_bodyid[i])]
        on_world = int(model.geom_bodyid[i]) == 0
        frame = mech.frames.get(link)
        if on_world or frame is None or frame.body == mech.ground.name:
            body, P, Rb = mech.ground.name, np.zeros(3), np.eye(3)
            if frame is not None and not on_world:
                P, Rb = frame.position, frame.rotation
        else:
            body, P, Rb = frame.body, frame.position, frame.rotation
        pos = P + Rb @ np.asarray(model.geom_pos[i], dtype=float)
        rot = Rb @ quat_to_matrix(np.asarray(model.geom_quat[i], dtype=float))
        size = np.asarray(model.geom_size[i], dtype=float)
        shape = None
        if kind == "plane":
            if body != mech.ground.name:
                report.not_imported.setdefault("planes on moving bodies", []).append(name)
                continue
            n = rot[:, 2]
            shape = Plane(name, n, float(n @ pos))
        elif kind == "sphere":
            shape = Sphere(name, body, size[0], position=pos, rotation=rot)
        elif kind == "capsule":
            shape = Capsule(name, body, size[0], 2 * size[1], position=pos, rotation=rot)
        elif kind == "cylinder":
            shape = Cylinder(name, body, size[0], 2 * size[1], position=pos, rotation=rot)
        elif kind == "box":
            shape = Box(name, body, size[:3], position=pos, rotation=rot)
        elif kind == "ellipsoid":
            shape = Ellipsoid(name, body, size[:3], position=pos, rotation=rot)
        elif kind == "mesh":
            m = int(model.geom_dataid[i])
            a, k = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
            verts = np.asarray(model.mesh_vert[a:a + k], dtype=float)
            shape = ConvexMesh(name, body, verts, position=pos, rotation=rot)
            approx.setdefault("meshes collide as their convex hulls", []).append(name)
        else:
            report.not_imported.setdefault(f"{kind} geoms (no collision shape of that "
                                           f"kind)", []).append(name)
            continue
        shape.contype, shape.conaffinity = int(model.geom_contype[i]), \
            int(model.geom_conaffinity[i])
        law = None
        if kind != "plane" or not on_world:
            law = _law(model, i, tree_mass.get(body, 1.0), g, approx, name)
        elif float(model.geom_friction[i][0]) > 0:
            law = ContactLaw(float("inf"), 1.0, 0.0, float(model.geom_friction[i][0]),
                             float("inf"))
        condim = int(model.geom_condim[i])
        if law is not None and condim >= 4:     # MuJoCo's spin (4) and rolling (6) cones
            law = dataclasses.replace(
                law, torsion=float(model.geom_friction[i][1]),
                rolling=float(model.geom_friction[i][2]) if condim >= 6 else 0.0)
            approx.setdefault(f"condim {condim}: torsional{' and rolling' * (condim >= 6)} "
                              f"friction as regularised moments (spin velocity "
                              f"{law.spin_velocity:g} rad/s)", []).append(name)
        mech.add_shape(shape, law)
        added[i] = name
        if condim < 4 and np.any(np.asarray(model.geom_friction[i][1:]) > 0):
            approx.setdefault("torsional and rolling friction (not imported)",
                              []).append(name)
    _pairs(mech, model, geom_names, body_names, added, approx)


_MINIMP, _MAXIMP = 1e-4, 0.9999
"""MuJoCo's bounds of an impedance (mjMINIMP, mjMAXIMP)."""
_SLIP_VELOCITY = 1e-3
"""The regularisation speed (m/s) of a law without friction (not used)."""
_DSBL_REFSAFE = 1 << 12
"""mjtDisableBit.mjDSBL_REFSAFE: unless set, MuJoCo raises a time constant below two
time steps to two time steps."""


def _impedance(solimp, r: float) -> float:
    """MuJoCo's impedance d at a penetration ``r`` >= 0 (m), for a ``solimp`` (dmin,
    dmax, width (m), midpoint, power): dmin at contact, dmax from ``width`` on, and
    between them its polynomial sigmoid (a x^p below the midpoint, 1 - b (1 - x)^p
    above, x = r / width), with MuJoCo's clamps of each parameter."""
    dmin, dmax = (min(max(float(v), _MINIMP), _MAXIMP) for v in solimp[:2])
    width = max(float(solimp[2]), 1e-15)
    mid = min(max(float(solimp[3]), _MINIMP), _MAXIMP)
    power = max(float(solimp[4]), 1.0)
    x = r / width
    if x >= 1.0:
        return dmax
    y = x ** power / mid ** (power - 1.0) if x < mid else \
        1.0 - (1.0 - x) ** power / (1.0 - mid) ** (power - 1.0)
    return min(max(dmin + y * (dmax - dmin), min(dmin, dmax)), max(dmin, dmax))


def _rest_penetration(solimp, k_ref: float, g: float) -> float:
    """The penetration r (m) at which MuJoCo's soft contact alone carries a body's
    weight, with k_ref the reference stiffness per unit mass (1/s^2) and d(r) the
    impedance there (:func:`_impedance`). MuJoCo's reference acceleration is
    -b v - k_ref d r, and its constraint gives the acceleration (1 - d) a_0 + d a_ref
    (a_0 the unconstrained one, -g): at rest d^2 k_ref r = (1 - d) g."""
    def excess(r: float) -> float:
        d = _impedance(solimp, r)
        return d * d * k_ref * r - (1.0 - d) * g
    dmax = _impedance(solimp, math.inf)
    hi = 2.0 * max(float(solimp[2]), (1.0 - dmax) / dmax ** 2 * g / k_ref) + 1e-12
    return float(brentq(excess, 0.0, hi, xtol=1e-16, rtol=1e-13))


def _law(model, i: int, mass: float, g: float, approx, name: str) -> ContactLaw:
    """The contact law of geom ``i`` from its solref, solimp and friction (see the module
    docstring)."""
    tau, zeta = (float(v) for v in model.geom_solref[i][:2])
    if tau > 0 and not int(model.opt.disableflags) & _DSBL_REFSAFE:
        tau = max(tau, 2.0 * float(model.opt.timestep))     # (MuJoCo's refsafe)
    solimp = [float(v) for v in model.geom_solimp[i][:5]]
    dmax = _impedance(solimp, math.inf)          # (solimp's dmax, MuJoCo's clamps)
    mu = float(model.geom_friction[i][0])
    if tau > 0:      # MuJoCo's reference stiffness and damping per unit mass
        k_ref, b_ref = 1.0 / (dmax * tau * zeta) ** 2, 2.0 / (dmax * tau)
    else:            # direct stiffness and damping (negative solref), per unit mass
        k_ref, b_ref = -tau / dmax ** 2, -zeta / dmax
    if not (k_ref > 0 and math.isfinite(k_ref)):
        raise ModelError(f"geom '{name}': its solref {tau:g} {zeta:g} gives no contact "
                        f"stiffness (valid: a time constant > 0 and a damping ratio > 0, "
                        f"or a direct stiffness < 0)")
    # the linear spring resting where MuJoCo rests when one point carries the tree's
    # weight, with MuJoCo's damping there: d b_ref per unit mass (the damping ratio
    # zeta, where solref gives a time constant)
    r = _rest_penetration(solimp, k_ref, g)
    d = _impedance(solimp, r)
    k = mass * g / r
    c = 2.0 * zeta * np.sqrt(k * mass) if tau > 0 else d * b_ref * mass
    # friction: MuJoCo's friction rows have a_ref = -b v, mixed by d, so a body sliding
    # under a tangential force F creeps at v = (1 - d) F / (d b m) (an elliptic cone;
    # pyramidal ones creep faster); the regularisation speed with that slope at the
    # tree's weight
    v_s = mu * g * (1.0 - d) / (d * b_ref) if mu > 0 else _SLIP_VELOCITY
    approx.setdefault("solref/solimp as a linear spring (resting at MuJoCo's penetration "
                      "when one point carries the tree's weight) with Hunt and Crossley "
                      "damping of the same damping ratio at that weight", []).append(name)
    approx.setdefault("friction regularised at MuJoCo's creep (an elliptic cone's, "
                      "when one point carries the tree's weight; pyramidal cones creep "
                      "1.3 to 2.8 times faster at mu 0.3 to 2)", []).append(name)
    try:
        return ContactLaw(k, 1.0, c / (mass * g), mu, v_s)
    except ModelError as exc:
        raise ModelError(f"geom '{name}' (solref {tau:g} {zeta:g}, solimp "
                         f"{' '.join(f'{v:g}' for v in solimp)}, friction {mu:g}): "
                         f"{exc}") from None


def _pairs(mech, model, geom_names, body_names, added: dict[int, str], approx) -> None:
    """<exclude> (body pairs) as pairs off; explicit <pair>s as pairs on."""
    by_body: dict[int, list[str]] = {}
    for i, name in added.items():
        by_body.setdefault(int(model.geom_bodyid[i]), []).append(name)
    off = []
    for sig in np.asarray(model.exclude_signature, dtype=np.int64).ravel():
        b1, b2 = int(sig) >> 16, int(sig) & 0xFFFF
        off += [(x, y) for x in by_body.get(b1, []) for y in by_body.get(b2, [])]
    on = []
    for p in range(int(model.npair)):
        a, b = int(model.pair_geom1[p]), int(model.pair_geom2[p])
        if a in added and b in added:
            on.append((added[a], added[b]))
            approx.setdefault("explicit pairs (their own friction and solref: the geoms' "
                              "laws combined)", []).append(f"{added[a]}|{added[b]}")
    mech.contact_pairs(on=on or None, off=off or None)
