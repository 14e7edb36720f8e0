"""FastDynamics (elements/analysis/fast_dynamics.py): direct and inverse dynamics, the mass matrix
and bias in joint coordinates, one state or a batch, against three references:

- the mechanism's bond graph model (direct_dynamics, initial_state, the maximal
  coordinates and constraint efforts of Eq. (15): a second formulation of ours);
- Pinocchio's ABA, RNEA and CRBA on real robots (Panda fixed base, Solo-12 floating),
  an independent formulation;
- identities: M symmetric positive definite, M qdd + b = tau, batch = one by one.

Tolerances: 1e-8 relative to max(1, the largest value) against Pinocchio (as in
tests/validation/test_robot_descriptions.py: both sides are exact to rounding, seen
near 1e-14; any modelling difference, a wrong axis, inertia or sign, moves them by
orders above 1e-8). Batch against one by one: 1e-12 (the same compiled arithmetic in
the same order; it gives 0 in practice). Against the bond graph: 1e-9 relative (its
constraint solve loses a few digits on inertias spanning decades).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from bondgraph import ModelError
from elements import FastDynamics, direct_dynamics, models
from elements.analysis.dynamics import inverse_dynamics
from robot_data import robots_dir                     # (tests/helpers)

N_STATES = 20


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max()))


ROBOTS = robots_dir()


def _pin():
    try:
        import pinocchio
    except ImportError:
        return None
    return pinocchio


# -- the bond graph model as the reference ---------------------------------------------------
@pytest.fixture(scope="module")
def chain():
    """A 5-link chain (revolute joints about alternating axes)."""
    mech, _ = models.chain(5)
    return mech.assemble()


class TestAgainstBondGraph:
    def test_direct_inverse_and_state_match_the_bond_graph_model(self, chain):
        fd = FastDynamics(chain)
        rng = np.random.default_rng(3)
        for _ in range(5):
            q, qd, tau = (rng.normal(size=fd.n_v) for _ in range(3))
            byname = [dict(zip(fd.velocity_names, a)) for a in (q, qd, tau)]
            ref = direct_dynamics(chain, *byname, method="bond_graph")
            qdd = fd.direct_dynamics(q, qd, tau)
            assert _rel(qdd, [ref[n] for n in fd.velocity_names]) <= 1e-9
            ref_tau = inverse_dynamics(chain, byname[0], byname[1],
                                       dict(zip(fd.velocity_names, qdd)), method="bond_graph")
            assert _rel(fd.inverse_dynamics(q, qd, qdd),
                        [ref_tau[n] for n in fd.velocity_names]) <= 1e-9
            x = fd.state(q, qd)
            assert np.abs(x - chain.initial_state(byname[0], byname[1])).max() <= 1e-12
            G, phi = fd.constraint_jacobian(q)
            G0, phi0 = chain.constraint_jacobian(x)
            assert np.abs(G - G0).max() == 0.0 and np.abs(phi).max() <= 1e-12


def test_rotor_spring_damper_match_the_bond_graph_model():
    """Armature, springs and dampers on the axes: the bond graph model holds them as
    elements on the axis junctions (the rotor's momentum a state of its own); here they
    are M's diagonal and the bias (k (q - rest) + c qd, two springs on one axis)."""
    mech, _ = models.chain(3)
    js = [j for j in mech.joints.values() if j.n_free]
    js[0].add_rotor(0.07)
    js[1].add_spring(12.0, rest=0.2)
    js[1].add_spring(3.0, rest=-0.4)
    js[1].add_damper(0.9)
    js[2].add_rotor(0.01)
    js[2].add_damper(0.3)
    mm = mech.assemble()
    fd = FastDynamics(mm)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd, tau = (rng.normal(size=fd.n_v) for _ in range(3))
        byname = [dict(zip(fd.velocity_names, a)) for a in (q, qd, tau)]
        ref = direct_dynamics(mm, *byname, method="bond_graph")
        qdd = fd.direct_dynamics(q, qd, tau)
        assert _rel(qdd, [ref[n] for n in fd.velocity_names]) <= 1e-9
        ref_tau = inverse_dynamics(mm, byname[0], byname[1],
                                   dict(zip(fd.velocity_names, qdd)), method="bond_graph")
        assert _rel(fd.inverse_dynamics(q, qd, qdd),
                    [ref_tau[n] for n in fd.velocity_names]) <= 1e-9
        assert np.abs(fd.state(q, qd) - mm.initial_state(byname[0], byname[1])).max() \
            <= 1e-12
    # the armature is exactly on M's diagonal: M - M(without rotors) = diag(0.07, 0, 0.01)
    bare, _ = models.chain(3)
    M0 = FastDynamics(bare.assemble()).mass_matrix(q)
    assert np.abs(fd.mass_matrix(q) - M0 - np.diag([0.07, 0.0, 0.01])).max() <= 1e-15


@pytest.mark.parametrize("kind", ["spherical", "free"])
def test_spherical_and_free_joints_match_the_bond_graph_model(kind):
    """A free rotation (a spherical joint, a free joint's after its three slides) is the
    kernel's ball: q a quaternion, qd the angular velocity relative to the parent in the
    child's axes. On a moving parent (a revolute J0), with springs and dampers on the
    free joint's slides: J0's and the slides' qdd, the child's angular acceleration
    (from the ball's qdd), the state and M qdd + b = tau match the bond graph model
    (1e-9 relative, as above; seen 2e-14)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "contract"))
    from test_joint_contract import _mechanism
    from bondgraph.spatial import as_rotation, matrix_to_quat
    mech = _mechanism(kind)
    j = mech.joint("K")
    for c in j.coordinate_names:
        j.add_spring(30.0, rest=0.1, coordinate=c)
        j.add_damper(0.2, coordinate=c)
    mm = mech.assemble()
    fd = FastDynamics(mm)
    rot = ("K.qw", "K.qx", "K.qy", "K.qz")
    slides = ("K.x", "K.y", "K.z") if kind == "free" else ()
    assert fd.coordinate_names == ("J0", *slides, *rot)
    assert fd.velocity_names == ("J0", *slides, "K.wx", "K.wy", "K.wz")
    rng = np.random.default_rng(2)
    for _ in range(5):
        R, u = as_rotation(rng.uniform(-1, 1, 3)), rng.uniform(-1, 1, 3)
        (q0, qd0, t0), tr, trd, ttau = (rng.uniform(-0.5, 0.5, 3) for _ in range(4))
        n = len(slides)
        Q = np.array([q0, *tr[:n], *matrix_to_quat(R)])
        V = np.array([qd0, *trd[:n], *u])
        T = np.array([t0, *ttau[:n], 0.0, 0.0, 0.0])
        w_parent = R @ j.R0 @ u          # (the joint's rate: parent coordinates)
        qn = {"J0": q0, "K": R if kind == "spherical" else (tr, R)}
        qdn = {"J0": qd0, "K": w_parent if kind == "spherical" else (trd, w_parent)}
        tn = {"J0": t0, **({"K": ttau} if n else {})}
        ref = direct_dynamics(mm, qn, qdn, tn, method="bond_graph", bodies=True)
        qdd = fd.direct_dynamics(Q, V, T)
        want = [ref["J0"], *(ref["K"] if n else [])]
        assert _rel(qdd[:1 + n], want) <= 1e-9
        # the ball's own qdd (an error in its terms shifts them alone): the child's
        # body-axes angular velocity A_b^T w_a + u has the rate
        # A_b^T (al_a - w_b x w_a) + u', al_a = s qdd_J0 (J0's global axis s)
        A, _, w, _ = fd.body_twists(Q, V)
        ia, ib = fd.body_names.index("a"), fd.body_names.index("b")
        s_axis = w[ia] / qd0
        alpha = A[ib].T @ (s_axis * qdd[0] - np.cross(w[ib], w[ia])) + qdd[-3:]
        assert _rel(alpha, ref["b.alpha"]) <= 1e-9
        assert np.abs(fd.state(Q, V) - mm.initial_state(qn, qdn)).max() <= 1e-12
        assert _rel(fd.inverse_dynamics(Q, V, qdd), T) <= 1e-12


# -- Pinocchio as the reference -------------------------------------------------------------
needs_pin = pytest.mark.skipif(
    ROBOTS is None or _pin() is None,
    reason="Pinocchio or example-robot-data is not installed (the test extra: pip install "
           "-e '.[test]'): no independent joint-space reference")


def _robot(rel, floating):
    from elements.files.urdf import load_urdf
    from pinocchio_joint_space import PinocchioJointSpace
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, floating_base=floating, mimic="independent")
    fd = FastDynamics(mech.assemble())
    return fd, PinocchioJointSpace(_pin(), path, fd, mech, floating)


ROBOT_CASES = [("panda_description/urdf/panda.urdf", False),
               ("solo_description/robots/solo12.urdf", True)]


@needs_pin
@pytest.mark.parametrize("rel, floating", ROBOT_CASES,
                         ids=["panda-fixed", "solo12-floating"])
def test_aba_rnea_crba_match_pinocchio(rel, floating):
    fd, ref = _robot(rel, floating)
    off = 6 if floating else 0
    damping = fd._axis_params[3][off:]
    rng = np.random.default_rng(22)
    states = [ref.random(rng) for _ in range(N_STATES)]
    for (q, qd, tau), (qp, vp, tp, T) in states:
        qdd = fd.direct_dynamics(q, qd, tau)
        assert _rel(qdd, ref.aba(qp, vp, tp, T, damping)) <= 1e-8
        assert _rel(fd.inverse_dynamics(q, qd, qdd), ref.rnea(qp, vp, qdd, T, damping)) \
            <= 1e-8
        M = fd.mass_matrix(q)
        assert _rel(M, ref.crba(qp, T)) <= 1e-8
        # M qdd + b = tau, M symmetric positive definite
        assert _rel(M @ qdd + fd.bias(q, qd), tau) <= 1e-10
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0.0
    # the batch equals one by one
    Q, QD, TAU = (np.array([s[0][k] for s in states]) for k in range(3))
    one = np.array([fd.direct_dynamics(q, qd, t) for q, qd, t in zip(Q, QD, TAU)])
    assert np.abs(fd.direct_dynamics(Q, QD, TAU) - one).max() <= 1e-12 * np.abs(one).max()
    inv = np.array([fd.inverse_dynamics(q, qd, a) for q, qd, a in zip(Q, QD, one)])
    assert np.abs(fd.inverse_dynamics(Q, QD, one) - inv).max() <= 1e-12 * np.abs(inv).max()
    Ms = np.array([fd.mass_matrix(q) for q in Q])
    assert np.abs(fd.mass_matrix(Q) - Ms).max() <= 1e-12 * np.abs(Ms).max()
    bs = np.array([fd.bias(q, qd) for q, qd in zip(Q, QD)])
    assert np.abs(fd.bias(Q, QD) - bs).max() <= 1e-12 * np.abs(bs).max()


@needs_pin
def test_armature_matches_pinocchio_hand_corrected():
    """A rotor inertia (armature) on panda_joint2 and panda_joint6: Pinocchio's CRBA and
    ABA know no armature here, so its values are corrected by hand: M + diag(armature),
    and qdd from (M + diag(armature)) qdd = tau - damping qd - b with Pinocchio's b
    (RNEA at qdd = 0)."""
    from elements.files.urdf import load_urdf
    from pinocchio_joint_space import PinocchioJointSpace
    rel = "panda_description/urdf/panda.urdf"
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, floating_base=False, mimic="independent")
    arm = {"panda_joint2": 0.31, "panda_joint6": 0.05}
    for n, J in arm.items():
        mech.joints[n].add_rotor(J)
    fd = FastDynamics(mech.assemble())
    ref = PinocchioJointSpace(_pin(), path, fd, mech, False)
    D = np.diag([arm.get(n, 0.0) for n in fd.velocity_names])
    damping = fd._axis_params[3]
    rng = np.random.default_rng(7)
    for _ in range(N_STATES):
        (q, qd, tau), (qp, vp, tp, T) = ref.random(rng)
        M = ref.crba(qp, T) + D
        assert _rel(fd.mass_matrix(q), M) <= 1e-8
        b = ref.rnea(qp, vp, np.zeros(fd.n_v), T, damping)
        assert _rel(fd.direct_dynamics(q, qd, tau), np.linalg.solve(M, tau - b)) <= 1e-8


class TestRefusals:
    def test_screw_joint_refused_by_name(self):
        """(Spherical joints were refused here until FastDynamics took free rotations:
        test_spherical_and_free_joints_match_the_bond_graph_model.)"""
        from elements import Inertia, Mechanism, RigidBody, ScrewJoint
        mech = Mechanism("nut")
        b = RigidBody("link", 1.0, Inertia.principal(0.01, 0.01, 0.01),
                      points={"top": [0, 0, 0.5]})
        mech.add_body(b)
        mech.add_joint(ScrewJoint("S", mech.ground, b, parent_point=[0, 0, 0],
                                  child_point="top", axis=(0, 0, 1), pitch=0.01))
        with pytest.raises(ModelError, match="joint 'S' of type screw: its slide follows "
                                             "its angle.*direct_dynamics"):
            FastDynamics(mech.assemble())

    def test_a_kind_without_axis_motions_and_a_wrong_contract_are_named(self):
        """A user's kind that declares no axis_motions() is refused naming the joint, its
        type and the default reason; one whose declared motion disagrees with its
        coordinate's unit is refused naming the coordinate and both units."""
        from elements import AxisMotion, Inertia, Mechanism, PrismaticJoint, RigidBody

        class Slider(PrismaticJoint):             # (not registered: built directly)
            type_name = "slider_test"

            def axis_motions(self):
                return None

        class Twister(PrismaticJoint):
            type_name = "twister_test"

            def axis_motions(self):
                return (AxisMotion.rotation((0.0, 0.0, 1.0)),)

        for cls, match in ((Slider, "joint 'S' of type slider_test: it does not declare "
                                    r"axis_motions\(\)"),
                           (Twister, "coordinate 'slide' is in m but its motion is a "
                                     r"rotation \(in rad\)")):
            mech = Mechanism("slider")
            b = mech.add_body(RigidBody("b", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
            mech.add_joint(cls("S", mech.ground, b, axis=(0, 0, 1)))
            with pytest.raises(ModelError, match=match):
                FastDynamics(mech.assemble())

    def test_wrong_shapes_and_names(self, chain):
        fd = FastDynamics(chain)
        with pytest.raises(ModelError, match=r"q has shape \(4,\); valid: \(5,\)"):
            fd.mass_matrix(np.zeros(4))
        with pytest.raises(ModelError, match="different numbers of states|qd has shape"):
            fd.bias(np.zeros((3, 5)), np.zeros((2, 5)))
        with pytest.raises(ModelError, match="did you mean"):
            fd.vector({fd.velocity_names[0] + "x": 1.0})
        assert fd.vector({fd.velocity_names[2]: 2.0})[2] == 2.0


class TestDictFunctionsMethods:
    """direct_dynamics / inverse_dynamics (dicts in and out) take ``method``: "auto"
    evaluates through FastDynamics where it takes the mechanism, else the bond graph
    model; "bond_graph" always the latter. Both agree, and bad input gets the same
    message either way."""

    def test_auto_equals_the_bond_graph_and_uses_the_fast_path(self, chain):
        rng = np.random.default_rng(11)
        names = [f"J{i}" for i in range(1, 6)]
        for _ in range(3):
            q, qd, tau = ({n: float(v) for n, v in zip(names, rng.normal(size=5))}
                          for _ in range(3))
            fast = direct_dynamics(chain, q, qd, tau)
            slow = direct_dynamics(chain, q, qd, tau, method="bond_graph")
            assert set(fast) == set(slow)
            assert max(abs(fast[n] - slow[n]) for n in names) <= 1e-9 * max(
                1.0, max(abs(v) for v in slow.values()))
            back = inverse_dynamics(chain, q, qd, fast)
            assert max(abs(back[n] - tau[n]) for n in names) <= 1e-9
        assert isinstance(chain.derived.get("fast"), FastDynamics)

    def test_a_mechanism_fast_dynamics_refuses_takes_the_bond_graph(self):
        """A load on a body: FastDynamics refuses it, "auto" falls back, and the load
        acts (the result differs from the same chain without it)."""
        from elements import PointForce
        mech, _ = models.chain(3)
        body = list(mech.bodies.values())[-1]
        mech.add_load(PointForce("push", body, (0.0, 0.0, 0.0), (2.0, -1.0, 0.5)))
        mm = mech.assemble()
        q = {"J1": 0.3, "J2": -0.2, "J3": 0.1}
        auto = direct_dynamics(mm, q, {}, {})
        assert mm.derived.get("fast", False) is None
        assert auto == direct_dynamics(mm, q, {}, {}, method="bond_graph")
        bare = direct_dynamics(models.chain(3)[0].assemble(), q, {}, {})
        assert abs(auto["J1"] - bare["J1"]) > 1e-3

    @pytest.mark.parametrize("method", ["auto", "bond_graph"])
    def test_bad_input_is_named_either_way(self, chain, method):
        with pytest.raises(ModelError, match="unknown joint 'J9'"):
            direct_dynamics(chain, {"J9": 0.1}, {}, {}, method=method)
        with pytest.raises(ModelError, match="tau given for J7: not joints with an axis"):
            direct_dynamics(chain, {}, {}, {"J7": 1.0}, method=method)
        with pytest.raises(ModelError, match="missing J5"):
            inverse_dynamics(chain, {}, {}, {f"J{i}": 0.0 for i in range(1, 5)},
                             method=method)
        with pytest.raises(ModelError, match="free-body state given for nobody"):
            direct_dynamics(chain, {}, {}, {}, free={"nobody": {}}, method=method)

    def test_an_unknown_method_is_refused(self, chain):
        with pytest.raises(ModelError, match=r"method 'fast'; valid: 'auto', 'bond_graph'"):
            direct_dynamics(chain, {}, {}, {}, method="fast")
