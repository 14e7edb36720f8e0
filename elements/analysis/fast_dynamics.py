"""Dynamics at many states, fast: one object made per mechanism model, arrays in and out.

- :class:`FastDynamics`: direct dynamics qdd(q, qd, tau), inverse dynamics
  tau(q, qd, qdd), the joint-space mass matrix M(q) and bias b(q, qd), the
  maximal-coordinate state x(q, qd) of the bond graph model and the constraint
  Jacobian there, for one state (q (nq,)) or a batch (Q (B, nq)), each batch in one
  compiled call.

The dict-based functions of :mod:`elements.analysis.dynamics` evaluate the mechanism's bond graph
model (every body's momenta, the constraint efforts of Eq. (15)) at each call; they are
the reference and handle every mechanism. This object evaluates the same equations of
motion in joint coordinates by the recursive Newton-Euler algorithm (compiled, in
:mod:`elements.kernels.tree`): M qdd + b = tau. It takes the masses, inertias,
gravity and the axes' rotors, springs and dampers from the model's parameters, so it
follows :meth:`MechanismModel.with_parameters`. ``tests/unit/test_fast_dynamics.py``
checks it against the bond graph model and against Pinocchio.

Why not the sparse bond graph evaluation on this path: on the 7-DOF Panda it costs
85 us per state at its fastest (the compiled sparse path, 45 constraint efforts and 144
states; 28 us of it reading the drive sources), called once per state from Python, so
a batch of 1000 takes about 0.1 s. The recursion needs no constraint efforts at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bondgraph import ModelError

import elements.kernels.tree as _K
from elements.mechanism_model import MechanismModel

__all__ = ["FastDynamics"]

_FREE = _K.FREE


class FastDynamics:
    """The dynamics of a tree mechanism in joint coordinates, compiled, for one state or
    many (made once per :class:`~elements.mechanism_model.MechanismModel`).

    Coordinates (:attr:`coordinate_names`, ``q``, length :attr:`n_q`): every free body
    (a floating base: its joint one of :meth:`Mechanism.free_joints`) first, in body
    order, as its centre of mass (global, m: ``<body>.x``, ``.y``, ``.z``) and a unit quaternion body -> global
    (``<body>.qw``, ``.qx``, ``.qy``, ``.qz``); then one per joint coordinate, in the
    mechanism's joint order (the order of :func:`~elements.analysis.dynamics.direct_dynamics`'s
    result), named by the coordinate's port (the joint's name for a one-coordinate
    joint): rad or m. Rates, accelerations and efforts (:attr:`velocity_names`, length
    :attr:`n_v`): for a free body its centre's velocity (global, m/s: ``<body>.vx``,
    ``.vy``, ``.vz``) and its angular velocity in body axes (rad/s: ``<body>.wx``,
    ``.wy``, ``.wz``), whose rates are the ``"<body>.a"`` and ``"<body>.alpha"`` of
    ``direct_dynamics``, and whose efforts are the force at the centre (global, N) and
    the torque about it (body axes, N m); then each joint coordinate's rate (rad/s,
    m/s), acceleration and actuator effort (N m, N).

    Supported: trees of joints from the ground or from free bodies whose
    :meth:`~elements.Joint.axis_motions` are rotations and translations (each coordinate
    one, about or along a fixed axis of the joint frame; ``()`` for a fixed joint):
    revolute, prismatic, cylindrical, universal, gimbal, planar, fixed and chain joints,
    and a user's kind that declares them (a joint of n coordinates is n revolutes and
    slides through massless links, read from the contract, not from its type name);
    a free rotation after them (:attr:`~elements.Joint.free_rotation`: spherical and
    free joints) is a ball, with coordinates ``<joint>.qw``, ``.qx``, ``.qy``, ``.qz``
    (the unit quaternion of the child's rotation from its rest relative to the frame
    the joint's motions leave, w first) and rates ``<joint>.wx``, ``.wy``, ``.wz`` (the
    child's angular velocity relative to that frame, in the child's body axes, rad/s;
    its effort a torque in those axes, N m); rotor inertias on the axes (armature: added to M's diagonal); linear
    axis springs and dampers (in the bias: k (q - rest) + c qd); gravity. The
    mechanism's own constant actuators are left out (tau replaces them, as in
    ``direct_dynamics``). Refused, by name, with a ModelError: joints without
    axis motions, each with the reason its kind gives (:attr:`~elements.Joint.
    no_axis_motions`: a screw's pitch; use ``direct_dynamics``, which takes every
    joint), closed loops, couplings, loads,
    attached subsystems, joint stops and friction, nonlinear springs.

    Parameters
    ----------
    mm : MechanismModel

    Examples
    --------
    >>> import numpy as np
    >>> from elements import FastDynamics, models
    >>> fd = FastDynamics(models.chain(2)[0].assemble())
    >>> fd.velocity_names
    ('J1', 'J2')
    >>> qdd = fd.direct_dynamics(np.array([0.3, -0.2]), np.zeros(2), np.zeros(2))
    >>> tau = fd.inverse_dynamics(np.array([0.3, -0.2]), np.zeros(2), qdd)
    >>> bool(np.abs(tau).max() < 1e-12)
    True
    """

    def __init__(self, mm: MechanismModel):
        self.mm = mm
        mech = mm.mechanism
        tree, loops = mm.tree, mm.loop_joints
        problems = []
        if loops:
            problems.append(f"closed loops (joints {', '.join(j.name for j in loops)})")
        if mech.couplings:
            problems.append(f"couplings ({', '.join(mech.couplings)})")
        if mech.loads:
            problems.append(f"loads ({', '.join(mech.loads)})")
        if mech.subsystems:
            problems.append(f"attached subsystems ({', '.join(mech.subsystems)})")
        free = mm.free_joints             # (floating bases: the kernel's free roots)
        motions = {}
        for j in tree:
            if j in free:
                continue
            got = j.checked_axis_motions()
            if got is None:
                problems.append(f"joint '{j.name}' of type {j.type_name}: {j.no_axis_motions} "
                                f"(supported: joints whose axis_motions() are rotations "
                                f"and translations, and free bodies)")
            motions[j.name] = got
            for ax in j.axes:
                if ax.switched:
                    problems.append(f"joint '{j.name}': stops or friction on "
                                    f"{ax.port}")
        p = mm.parameters
        spring_of = {}
        for port, stem, k, rest in mm.springs():
            spring_of.setdefault(port, []).append((k, rest))
        for j in tree:
            for ax in j.axes:
                for stem in ax.attachments("spring"):
                    if f"{stem}.k" not in p.names:
                        problems.append(f"joint '{j.name}': spring '{stem}' is not linear")
        if problems:
            raise ModelError(f"FastDynamics of mechanism '{mech.name}' does not support "
                             f"{'; '.join(problems)}: use direct_dynamics / "
                             f"inverse_dynamics (elements.analysis.dynamics), which take any "
                             f"mechanism")
        # the kernel's bodies: free bodies (their joints'), then per tree joint one body per coordinate
        # (a massless link after each but the last; the child after the last, or after
        # the joint itself when it has none: fixed), each a revolute, prismatic or fixed
        # joint onto the one before, as the joint's axis_motions() say
        qnames, vnames = [], []
        rows: list[tuple] = []            # (name, kind, parent, qi, vi, axis, P, Q, R0)
        index: dict[str, int] = {}
        for n in (fj.child.name for fj in free):
            index[n] = len(rows)
            rows.append((n, _FREE, -1, len(qnames), len(vnames), np.zeros(3), np.zeros(3),
                         np.zeros(3), np.eye(3)))
            qnames += [f"{n}.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
            vnames += [f"{n}.{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz")]
        # joint coordinates in the mechanism's joint order (the dict functions' order)
        coord_of, coords_of = {}, {}
        rest_q = []                       # (the identity of each ball's quaternion)
        for j in mech.joints.values():
            if j in free:
                continue
            if j.n_free == 1:
                coord_of[j.name] = (len(qnames), len(vnames))
            elif j.n_free:
                coords_of[j.name] = (len(qnames), len(vnames), j.n_free)
            qnames += [ax.port for ax in j.axes]
            vnames += [ax.port for ax in j.axes]
            if j.free_rotation:           # its rotation: a quaternion, body-axes rates
                rest_q.append(len(qnames))
                qnames += [f"{j.name}.{c}" for c in ("qw", "qx", "qy", "qz")]
                vnames += [f"{j.name}.{c}" for c in ("wx", "wy", "wz")]
        q_index = {n: i for i, n in enumerate(qnames)}
        v_index = {n: i for i, n in enumerate(vnames)}
        for j in tree:
            if j in free:
                continue
            parent = -1 if j.parent.is_ground else index[j.parent.name]
            # the joint's primitives: (kernel kind, axis, point on it (parent axes, m from
            # P at rest), index in q, in qd): its axis motions, then a ball where its
            # rotation is free (about the joint point the motions moved)
            prims = [(_K.REVOLUTE if m.kind == "rotation" else _K.PRISMATIC,
                      j.Fa @ np.asarray(m.direction), j.Fa @ np.asarray(m.point),
                      q_index[ax.port], v_index[ax.port])
                     for m, ax in zip(motions[j.name], j.axes)]
            if j.free_rotation:
                prims.append((_K.BALL, np.zeros(3), np.zeros(3), q_index[f"{j.name}.qw"],
                              v_index[f"{j.name}.wx"]))
            if not prims:
                prims.append((_K.FIXED, j.Fa[:, 2], np.zeros(3), -1, -1))
            for k, (kind, s_, p_, iq, iv) in enumerate(prims):
                last = k == len(prims) - 1
                # a link's centre is the joint point P at rest, its axes the parent's
                P = (j.P if k == 0 else np.zeros(3)) + p_
                Q = j.Q + j.R0.T @ p_ if last else p_
                name = j.child.name if last else f"{j.name}#{k}"
                if last:
                    index[name] = len(rows)
                rows.append((name, kind, parent, iq, iv, s_, P, Q,
                             j.R0 if last else np.eye(3)))
                parent = len(rows) - 1
        nb = len(rows)
        kind = np.array([r[1] for r in rows], dtype=np.int64)
        parent = np.array([r[2] for r in rows], dtype=np.int64)
        qi = np.array([r[3] for r in rows], dtype=np.int64)
        vi = np.array([r[4] for r in rows], dtype=np.int64)
        axis, P, Qp = (np.array([r[c] for r in rows], dtype=float).reshape(nb, 3)
                       for c in (5, 6, 7))
        R0 = np.array([r[8] for r in rows], dtype=float).reshape(nb, 3, 3)
        order = [r[0] for r in rows]
        self._order = order                  # the kernel's bodies (links "<joint>#k")
        self._real = np.array([i for i, n in enumerate(order) if n in index],
                              dtype=np.int64)
        self._coordinate_of = coord_of       # one-coordinate joint -> (index in q, in qd)
        self._coordinates_of = coords_of     # several: joint -> (first in q, in qd, n)
        self._free = tuple(fj.child.name for fj in free)
        self._rest_q = np.zeros(len(qnames))  # q at rest: 0, 1 for balls' qw
        self._rest_q[rest_q] = 1.0
        self._joints = [j for j in tree if j.n_free]
        self._arrays = (kind, parent, qi, vi, axis, P, Qp, R0)
        self.coordinate_names: tuple[str, ...] = tuple(qnames)
        self.velocity_names: tuple[str, ...] = tuple(vnames)
        self.n_q, self.n_v = len(qnames), len(vnames)
        self.body_names: tuple[str, ...] = tuple(order[i] for i in self._real)
        self._params(mm, spring_of)

    def _params(self, mm, spring_of):
        """The parameter arrays (masses, inertias, gravity, armature, springs, dampers)
        from the model's current values."""
        p = mm.parameters
        nv = self.n_v
        real = set(self.body_names)
        self._mass = np.array([mm.mass(n) if n in real else 0.0 for n in self._order])
        self._Ib = np.array([mm.inertia(n) if n in real else np.zeros((3, 3))
                             for n in self._order]).reshape(-1, 3, 3)
        self._gravity = np.asarray(mm.gravity, dtype=float)
        arm, k, rest, c = (np.zeros(nv) for _ in range(4))
        for j in self._joints:
            for ax in j.axes:
                i = self.velocity_names.index(ax.port)
                arm[i] = sum(p[f"{stem}.inertia"] for stem in ax.attachments("rotor"))
                c[i] = sum(p[f"{stem}.c"] for stem in ax.attachments("damper"))
                springs = spring_of.get(ax.port, [])
                k[i] = sum(kk for kk, _ in springs)
                # several springs: their effort sum_i k_i (q - rest_i) = k (q - rest)
                rest[i] = sum(kk * r for kk, r in springs) / k[i] if k[i] else 0.0
        self._axis_params = (arm, k, rest, c)

    # -- arrays in, arrays out -------------------------------------------------------------
    def _rows(self, value, n, what, B=None):
        """``value`` as C-contiguous float rows (B, n), and whether it was one row; a
        ModelError naming ``what`` for a wrong shape (finiteness is checked in the
        kernel, which names the state)."""
        if type(value) is np.ndarray and value.dtype == np.float64 and \
                value.flags.c_contiguous and value.shape[-1:] == (n,) and value.ndim <= 2:
            a2 = value.reshape(1, n) if value.ndim == 1 else value     # (the usual case)
            single = value.ndim == 1
        else:
            try:
                a = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise ModelError(f"{what} must be numbers, shape ({n},) or (B, {n}); got "
                                 f"{type(value).__name__}") from None
            single = a.ndim == 1
            a2 = np.ascontiguousarray(np.atleast_2d(a))
            if a2.ndim != 2 or a2.shape[1] != n:
                a2 = None
        if a2 is None or (B is not None and a2.shape[0] != B):
            shape = f"({n},)" + ("" if B is None else f" or ({B}, {n})")
            raise ModelError(f"{what} has shape {np.shape(value)}; valid: ({n},) or (B, "
                             f"{n}) (B states; here {shape}), ordered as "
                             f"{'coordinate_names' if what == 'q' else 'velocity_names'}")
        return a2, single

    def _run(self, op: int, q, qd=None, x=None, what="tau"):
        Q, single = self._rows(q, self.n_q, "q")
        B = Q.shape[0]
        QD = self._zeros(B) if qd is None else self._rows(qd, self.n_v, "qd", B)[0]
        X = self._zeros(B) if x is None else self._rows(x, self.n_v, what, B)[0]
        out = np.empty((B, self.n_v))
        out_m = np.empty((B, self.n_v, self.n_v) if op == 2 else (1, 1, 1))
        bad = _K.batch(op, Q, QD, X, *self._arrays, self._mass, self._Ib, self._gravity,
                       *self._axis_params, out, out_m)
        if bad >= 0:
            raise ModelError(f"mechanism '{self.mm.mechanism.name}': the mass matrix is "
                             f"not positive definite at state {bad} (q = "
                             f"{np.round(Q[bad], 6).tolist()}): a coordinate moves no "
                             f"mass")
        if bad < -1:
            i, k = divmod(-bad - 2, 3)
            raise ModelError(f"{('q', 'qd', what)[k]} of state {i} holds values that are "
                             f"not finite")
        if op == 2:
            out = out_m
        return out[0] if single else out

    def _zeros(self, B: int) -> np.ndarray:
        return np.zeros((B, self.n_v))

    def direct_dynamics(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Accelerations qdd (:attr:`velocity_names` order; rad/s^2, m/s^2) from
        coordinates q ((nq,) or (B, nq)), rates qd and actuator efforts tau ((nv,) or
        (B, nv); N m, N): M(q) qdd = tau - b(q, qd), solved by Cholesky.

        Raises
        ------
        ModelError
            For arrays of the wrong shape, values that are not finite, or a mass
            matrix that is not positive definite (naming the state)."""
        return self._run(0, q, qd, tau, "tau")

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Actuator efforts tau = M(q) qdd + b(q, qd) (N m, N; (nv,) or (B, nv)) that give
        accelerations ``qdd`` at ``q``, ``qd`` (recursive Newton-Euler)."""
        return self._run(1, q, qd, qdd, "qdd")

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """The joint-space mass matrix M(q) ((nv, nv) or (B, nv, nv); kg m^2, kg m, kg),
        symmetric positive definite, with the rotors' inertias on its diagonal."""
        return self._run(2, q)

    def bias(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """b(q, qd) = tau at qdd = 0 ((nv,) or (B, nv); N m, N): Coriolis, centrifugal
        and gyroscopic efforts, gravity's, and the axis springs' and dampers'."""
        return self._run(3, q, qd)

    # -- the bond graph model's state ------------------------------------------------------
    def body_twists(self, q: np.ndarray, qd: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A, c, omega, v) of every body (:attr:`body_names` order; rotation body ->
        global (..., nb, 3, 3), centre (m), angular velocity (rad/s) and centre's
        velocity (m/s), all global, (..., nb, 3)) at q ((nq,) or (B, nq)), qd."""
        Q, single = self._rows(q, self.n_q, "q")
        QD = self._rows(qd, self.n_v, "qd", Q.shape[0])[0]
        B, nb = Q.shape[0], len(self._order)
        A = np.empty((B, nb, 3, 3))
        c, w, v = (np.empty((B, nb, 3)) for _ in range(3))
        kind, parent, qi, vi, axis, P, Qp, R0 = self._arrays
        _K.poses(Q, QD, kind, parent, qi, vi, axis, P, Qp, R0, A, c, w, v)
        if len(self._real) < nb:             # (the links inside joints are not bodies)
            A, c, w, v = (x[:, self._real] for x in (A, c, w, v))
        return (A[0], c[0], w[0], v[0]) if single else (A, c, w, v)

    def state(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """The bond graph model's state x ((n_states,) or (B, n_states); the order of
        ``mm.state_names``) at joint coordinates q and rates qd: what
        :meth:`MechanismModel.initial_state` gives from the same values by name (bodies'
        positions, quaternions (w >= 0), momenta, the joint coordinates, springs'
        displacements, rotors' momenta; work states 0). Only for a model without
        subsystems' states (refused at construction)."""
        from bondgraph.spatial import matrix_to_quat
        A, c, w, v = self.body_twists(q, qd)
        single = np.ndim(q) == 1
        if single:
            A, c, w, v = A[None], c[None], w[None], v[None]
        Q = np.atleast_2d(np.asarray(q, dtype=float))
        QD = np.atleast_2d(np.asarray(qd, dtype=float))
        mm, m = self.mm, self.mm.model
        x = np.zeros((Q.shape[0], m.n_states))
        for b, (n, kb) in enumerate(zip(self.body_names, self._real)):
            body = mm.mechanism.body(n)
            Ab = A[:, b]
            x[:, m.state_slices[body.r]] = c[:, b]
            x[:, m.state_slices[body.q]] = [matrix_to_quat(a) for a in Ab]
            x[:, m.state_slices[body.linear_momentum]] = self._mass[kb] * v[:, b]
            wb = np.einsum("bji,bj->bi", Ab, w[:, b])           # body axes
            x[:, m.state_slices[body.angular_momentum]] = wb @ self._Ib[kb].T
        arm, k, rest, _ = self._axis_params
        p = mm.parameters
        for ax in (ax for j in self._joints for ax in j.axes):
            iq = self.coordinate_names.index(ax.port)
            iv = self.velocity_names.index(ax.port)
            x[:, m.state_slices[ax.state]] = Q[:, iq:iq + 1]
            for stem in ax.attachments("spring"):
                x[:, m.state_slices[mm.graph.element(stem).state_name]] = \
                    Q[:, iq:iq + 1] - p[f"{stem}.rest"]
            for stem in mm._rotors(ax):
                x[:, m.state_slices[mm.graph.element(stem).state_name]] = \
                    p[f"{stem}.inertia"] * QD[:, iv:iv + 1]
        return x[0] if single else x

    def constraint_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(G, Phi) of :meth:`MechanismModel.constraint_jacobian` at the state of
        coordinates q ((nq,); a batch (B, nq) gives (B, n_c, 6 nb) and (B, n_c)): G maps
        the bodies' velocity coordinates [v_c (global), omega^b] to the constraint
        rates, Phi the position constraints (0 to rounding here: the state is made by
        the joints' own kinematics)."""
        Q, single = self._rows(q, self.n_q, "q")
        X = self.state(Q, np.zeros((Q.shape[0], self.n_v)))
        got = [self.mm.constraint_jacobian(x) for x in X]
        if single:
            return got[0]
        return np.array([g for g, _ in got]), np.array([f for _, f in got])

    def vector(self, values: Mapping[str, float], *, coordinates: bool = False
               ) -> np.ndarray:
        """An array in :attr:`velocity_names` order (:attr:`coordinate_names` with
        ``coordinates=True``) from values by name (joint name for a joint's
        coordinate); names not given are 0.

        Raises
        ------
        ModelError
            For a name that is not one of them."""
        names = self.coordinate_names if coordinates else self.velocity_names
        pos = {n: i for i, n in enumerate(names)}
        out = np.zeros(len(names))
        for n, v in values.items():
            if n not in pos:
                import difflib
                close = difflib.get_close_matches(n, names, 3)
                raise ModelError(f"'{n}' is not one of this mechanism's "
                                 f"{'coordinates' if coordinates else 'rates'}"
                                 f"{'; did you mean ' + ', '.join(close) if close else ''}"
                                 f" (valid: {', '.join(names)})")
            out[pos[n]] = float(v)
        return out
