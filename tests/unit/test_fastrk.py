"""The compiled Runge-Kutta loop (bondgraph._fastrk) against scipy's stepping.

The same run twice, ``compiled_loop=True`` and ``False``: the compiled loop must take the
same steps (count, evaluations) and give the same states and dense output. Tolerance:
1e-12 relative to each state's largest magnitude over the run. The loop uses scipy's
tableau and the same BLAS dot products as scipy's ``rk_step`` on a compiled right-hand
side that is bitwise the Python path's, so the runs agree to the last bit in practice
(seen: 0.0); 1e-12 leaves room for a BLAS that sums in another order, and is still a
thousand times below the solver tolerances used (1e-9), so a wrong coefficient, a wrong
error norm or a missing evaluation shows (see test_a_wrong_coefficient_is_caught).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from robot_data import robot_file  # (tests/helpers)

from bondgraph import Baumgarte, _fastrk, assemble, assign_causality, models, simulate
from bondgraph.fastlu import enabled

pytestmark = pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled "
                                                      "loop")

RTOL_EQUAL = 1e-12


def _chain10():
    from elements.models import chain
    mech, q0 = chain(10)
    mm = mech.assemble()
    return mm, mm.initial_state(q0, {}), 0.5


def _three_body():
    from elements.models import three_body_prismatic
    mm = three_body_prismatic().assemble()
    return mm, mm.initial_state({}, {}), 2.0


def _panda(mimic="independent"):
    path = robot_file("panda_description/urdf/panda.urdf")
    if path is None:
        pytest.skip("example-robot-data is not installed (the test extra): no panda URDF")
    from elements.files.urdf import load_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = load_urdf(path, mimic=mimic)
    mm = mech.assemble()
    rng = np.random.default_rng(0)
    names = [j for j, jt in mech.joints.items() if jt.coordinates]
    if mimic != "independent":           # (a follower's coordinates are set from its leader)
        names = [j for j in names if j != "panda_finger_joint2"]
    q = {j: float(rng.uniform(-0.4, 0.4)) for j in names}
    qd = {j: float(rng.normal(scale=0.5)) for j in names}
    return mm, mm.initial_state(q, qd), 0.5


def _panda_coupled():
    """Panda as its URDF has it: the second finger mimics the first (a coupling, whose
    affine position constraint the compiled right-hand side computes beside the
    program)."""
    mm, x0, span = _panda(mimic="couple")
    assert mm.model.functions.compiled_parts()[0]["phi_affine"] is not None
    return mm, x0, span


MODELS = {"chain-10": _chain10, "three-body": _three_body, "panda": _panda,
          "panda, coupled fingers": _panda_coupled}


def _runs(mm, x0, span, method, **kw):
    out = []
    for compiled in (False, True):
        r = simulate(mm.model, (0.0, span), x0, method=method, rtol=1e-9,
                     atol=mm.state_atol(1e-9), stabilization=Baumgarte(10.0, 10.0),
                     compiled_loop=compiled, **kw)
        out.append(r)
    return out


def _rhs_and_loop(mm, x0, stab, cls=None):
    """A run's right-hand side at x0 (its first evaluation made: it sets the pivot
    order) and its compiled loop for ``cls`` (default DOP853)."""
    from scipy.integrate import DOP853

    from bondgraph.simulation import _start
    rhs = _start(mm.model, 0.0, x0, stab, False, False).rhs
    rhs(0.0, x0)
    loop, why = _fastrk.compiled_loop(mm.model, cls or DOP853, rhs, stab, (), True)
    assert loop is not None, why
    return rhs, loop


def _same(a, b, rtol=RTOL_EQUAL) -> bool:
    """Arrays (states in rows) equal to rtol times each row's largest magnitude."""
    scale = np.maximum(np.abs(a).max(axis=-1, keepdims=True), 1e-300)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= rtol * scale))


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
@pytest.mark.parametrize("name", list(MODELS))
def test_same_steps_and_states_as_scipy(name, method):
    mm, x0, span = MODELS[name]()
    ref, fast = _runs(mm, x0, span, method)
    assert ref.success and fast.success
    assert fast.diagnostics["compiled_loop"], fast.diagnostics["compiled_loop_reason"]
    assert not ref.diagnostics["compiled_loop"]
    # most steps compiled (a step whose evaluation the compiled path cannot answer, e.g.
    # a pivot order to change, is the solver's own)
    assert fast.diagnostics["compiled_steps"] >= 0.8 * fast.n_steps
    assert fast.n_steps == ref.n_steps
    assert fast.nfev == ref.nfev
    assert fast.diagnostics["rhs_evaluations"] == ref.diagnostics["rhs_evaluations"]
    np.testing.assert_array_equal(fast.t, ref.t)
    assert _same(ref.x, fast.x), np.abs(ref.x - fast.x).max()


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_dense_output_equal(method):
    mm, x0, span = _chain10()
    ref, fast = _runs(mm, x0, span, method, dense_output=True)
    assert fast.diagnostics["compiled_loop"]
    ts = np.linspace(0.0, span, 397)
    assert _same(ref.sol(ts), fast.sol(ts))
    assert fast.nfev == ref.nfev          # (DOP853's interpolants cost 3 evaluations)


def test_a_wrong_coefficient_is_caught(monkeypatch):
    """The comparison sees a deliberately wrong tableau: B[0] of DOP853 off by 1e-9."""
    mm, x0, span = _chain10()
    good = _fastrk._tableau

    def wrong(cls):
        A, B, C, E, E3, E5, dop = good(cls)
        B = B.copy()
        B[0] += 1e-9
        return A, B, C, E, E3, E5, dop
    monkeypatch.setattr(_fastrk, "_tableau", wrong)
    ref, fast = _runs(mm, x0, span, "DOP853")
    assert fast.diagnostics["compiled_loop"]
    assert not _same(ref.x, fast.x)


def test_falls_back_where_it_does_not_apply():
    mm, x0, span = _chain10()

    def event(t, x):
        return t - 0.25
    r = simulate(mm.model, (0.0, 0.3), x0, events=[event])
    assert not r.diagnostics["compiled_loop"]
    assert "events" in r.diagnostics["compiled_loop_reason"]
    with pytest.warns(Warning, match="max_steps"):
        r = simulate(mm.model, (0.0, 0.3), x0, method="Radau", max_steps=3)
    assert "takes RK45 and DOP853" in r.diagnostics["compiled_loop_reason"]
    # a modulus given as a Python function (the Cartesian pendulum's MTF): no compiled
    # program computes it
    bg = models.cartesian_pendulum(2.0, 1.5, 9.81)
    r = simulate(assemble(assign_causality(bg)), (0.0, 1.0),
                 {"p_m": [0.0, 0.0], "r": [1.5, 0.0]})
    assert r.success and not r.diagnostics["compiled_loop"]
    assert "not computed by one fused context" in r.diagnostics["compiled_loop_reason"]
    assert r.diagnostics["compiled_steps"] == 0


def test_compiled_rhs_is_the_python_one():
    """The compiled right-hand side alone equals the sparse evaluation's dX/dt."""
    mm, x0, _ = _panda() if robot_file("panda_description/urdf/panda.urdf") else \
        _chain10()
    stab = Baumgarte(10.0, 10.0)
    rhs, loop = _rhs_and_loop(mm, x0, stab)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = x0 + 1e-3 * rng.normal(size=x0.size)
        a, b = rhs(0.1, x), loop.derivative(0.1, x)
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-13 * np.abs(a).max())
        # the same kernel called from Python with its kernels in typed lists
        np.testing.assert_array_equal(loop.evaluate(0.1, x), b)
    assert loop.evaluations == 3


def test_the_compiled_rhs_computes_a_couplings_position_constraint():
    """Panda's mimic fingers (a coupling q2 = q1, an affine Phi on two joint-coordinate
    states): at states off the constraints (Phi != 0, so that the Baumgarte term reads
    the coupling's Phi) the compiled right-hand side equals the Python path's dX/dt to
    1e-13 of its largest entry; with the coupling's constant off by 1e-4 m it does not
    (the check can fail)."""
    mm, x0, _ = _panda_coupled()
    stab = Baumgarte(10.0, 10.0)
    rhs, loop = _rhs_and_loop(mm, x0, stab)
    rng = np.random.default_rng(5)
    xs = [x0 + 1e-3 * rng.normal(size=x0.size) for _ in range(3)]
    for x in xs:
        a, b = rhs(0.1, x), loop.derivative(0.1, x)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-13 * np.abs(a).max())
    loop.pack()                           # (the packed affine constants, a new copy:
    loop._tail = (*loop._tail[:-1], loop._tail[-1] + 1e-4)   # the model's are shared)
    a, b = rhs(0.1, xs[0]), loop.derivative(0.1, xs[0])
    assert np.abs(b - a).max() > 1e-10 * np.abs(a).max()       # (seen: 5e-8)


@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_an_implicit_run_evaluates_the_compiled_rhs(method):
    """Radau and BDF step in Python; on a model whose whole evaluation is compiled each
    evaluation they ask for (their finite-difference Jacobians' included) is the
    compiled right-hand side in one call (``compiled_evaluations``; all but the first,
    which sets the pivot order in Python), and the run equals the one with every
    evaluation in Python (``compiled_loop=False``): the same steps, evaluations and
    states to 1e-12 of each state's largest magnitude."""
    mm, x0, span = _three_body()
    ref, fast = _runs(mm, x0, 0.5, method)
    assert ref.success and fast.success
    assert ref.diagnostics["compiled_evaluations"] == 0
    n = fast.diagnostics["rhs_evaluations"]
    assert fast.diagnostics["jacobian_evaluations"] >= 1
    assert fast.diagnostics["compiled_evaluations"] >= n - 2, (n, fast.diagnostics)
    assert fast.nfev == ref.nfev and fast.n_steps == ref.n_steps
    assert n == ref.diagnostics["rhs_evaluations"]
    assert _same(ref.x, fast.x, 1e-12), np.abs(ref.x - fast.x).max()


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_the_loop_evaluates_the_compiled_rhs_bit_for_bit(method):
    """Each accepted step's last stage f(t, y) in the RK loop is what the compiled
    right-hand side returns for (t, y) called alone, to the last bit (the same code and
    inputs, with no fast-math: no tolerance is needed or given)."""
    from scipy.integrate import DOP853, RK45

    from bondgraph._diagnosis import StiffnessMonitor
    cls = {"RK45": RK45, "DOP853": DOP853}[method]
    mm, x0, span = _three_body()
    stab = Baumgarte(10.0, 10.0)
    rhs, loop = _rhs_and_loop(mm, x0, stab, cls)
    solver = cls(rhs, 0.0, x0, span, rtol=1e-9, atol=mm.state_atol(1e-9))
    monitor = StiffnessMonitor(cls, span)
    for _ in range(8):
        assert loop.advance(solver, span, 3, monitor) == 3
        alone = loop.derivative(solver.t, solver.y)
        np.testing.assert_array_equal(solver.f, alone)
        np.testing.assert_array_equal(solver.K[-1], alone)


def _swing_in_contact():
    """A hinged rod whose tip ball scrapes a floor (compiled contact sources), at a
    state of its run where the ball touches the floor."""
    from tests.unit.test_compiled_sources import _swing
    mm = _swing().assemble()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (it says the run looks stiff)
        res = mm.simulate((0.0, 0.6), q={"J1": 0.6}, method="DOP853",
                          t_eval=np.linspace(0.0, 0.6, 61))
    k = int(np.argmax(res.contact_energy()))
    assert res.contact_energy()[k] > 0
    return mm, res.raw.x[:, k], None


@pytest.mark.parametrize("name", ["three-body", "panda", "swing in contact"])
def test_the_jacobians_groups_in_one_compiled_call_equal_the_python_loop(name):
    """An implicit run's finite-difference Jacobian (GroupedDifferences) takes all its
    groups in one compiled call (RightHandSide.grouped_differences) where the run has a
    compiled right-hand side: the same matrix, to the last bit, as the groups evaluated
    one by one from Python through the same compiled right-hand side, also where the
    compiled call answers only the first groups and Python takes the rest; and every
    group counts as one evaluation. A step off by a factor of 2 in the compiled call
    gives another matrix (the check can fail)."""
    from bondgraph._jacobian import GroupedDifferences, jacobian_sparsity
    from bondgraph.simulation import _start
    mm, x, _ = {"three-body": _three_body, "panda": _panda,
                "swing in contact": _swing_in_contact}[name]()
    stab = Baumgarte(10.0, 10.0)
    rhs = _start(mm.model, 0.0, x, stab, False, False).rhs
    rhs(0.0, x)                       # (the first evaluation sets the pivot order)
    rhs.compiled = _fastrk.compiled_evaluation(mm.model, rhs, stab)
    assert rhs.compiled is not None
    sparsity = jacobian_sparsity(mm.model)
    assert 1 < sparsity.groups < mm.model.n_states
    atol = mm.state_atol(1e-6)
    t = 0.01
    one_by_one = GroupedDifferences(lambda t, y: rhs(t, y), sparsity, atol)(t, x)
    calls = rhs.calls
    jac = GroupedDifferences(rhs, sparsity, atol)
    J = jac(t, x)
    assert rhs.calls - calls == sparsity.groups + 1
    np.testing.assert_array_equal(J, one_by_one)
    assert np.abs(J).max() > 0
    # the compiled call answering the first half only: Python takes the rest
    half = sparsity.groups // 2
    off, cols, r_off, rows, at = jac.packed
    whole = jac.packed
    jac.packed = (off[:half + 1], cols, r_off[:half + 1], rows, at)
    calls, compiled = rhs.calls, rhs.compiled.evaluations
    np.testing.assert_array_equal(jac(t, x), one_by_one)
    assert rhs.calls - calls == sparsity.groups + 1
    assert rhs.compiled.evaluations - compiled == sparsity.groups + 1
    # a wrong step in the compiled call is seen
    real = rhs.compiled.grouped_differences
    jac.packed = whole
    rhs.compiled.grouped_differences = lambda t, y, f0, h, g, J: real(t, y, f0, 2 * h, g, J)
    assert not np.array_equal(jac(t, x), one_by_one)


def test_a_signal_handlers_exception_inside_the_compiled_loop_stops_the_run_as_itself(
        monkeypatch):
    """A signal handler that raises while numba's dispatcher runs Python code around the
    compiled loop's call leaves its exception set as the call returns: Python reports a
    SystemError chained to it (the slow fuzzing met it: a SIGALRM timer, an internal
    error, exit 3). The run raises the handler's exception itself (a BaseException
    other than KeyboardInterrupt, a KeyboardInterrupt alike); a SystemError of any other
    cause still propagates as it is."""
    from signal_fakes import SignalInside, check_raised_as_itself
    mm, x0, span = _three_body()
    fake = SignalInside(_fastrk._kernels(), "rk_advance",
                        "<function rk_advance> returned a result with an exception set")
    monkeypatch.setattr(_fastrk, "_kernels", lambda: fake)
    check_raised_as_itself(
        fake, lambda: mm.simulate((0.0, span), x0=x0, method="DOP853"),
        lambda: mm.simulate((0.0, span), x0=x0, method="DOP853", raise_on_failure=True))


def _pure_graphs():
    """Bond graphs without moduli to compute, all but the last without constraint
    sources (n_u2 = 0): a mass, spring and damper; a lever (TF); a DC motor (GY); a
    tumbling body (EJS); an algebraic loop through resistors; a prescribed flow; the DC
    motor model file (time-varying voltage); two masses joined rigidly (a constraint
    without Phi)."""
    import os

    import rich_graphs as rg

    from bondgraph.graphfile import load_graph_file
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {"mass-spring-damper": models.mass_spring_damper(1.0, 10.0, 0.5, 1.0),
            "lever": models.lever(1.0, 2.0, 1.0, 10.0, 0.3),
            "dc motor": models.dc_motor(12.0, 1.0, 0.01, 0.05, 0.02, 0.001),
            "tumbling body": rg.spinning_body(),
            "resistor loop": rg.algebraic_loop(),
            "prescribed flow": rg.prescribed_flow(),
            "dc motor file": load_graph_file(os.path.join(root, "examples",
                                                          "dc_motor.toml")).graph,
            "two masses rigid": models.two_masses_rigid(1.0, 3.0, 2.0)}


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
@pytest.mark.parametrize("name", list(_pure_graphs()))
def test_pure_bond_graphs_take_the_compiled_loop(name, method):
    """Without constraint sources the one-call evaluation runs on the single stage's
    system (its two stages solve the same system; no U_2, no dA/dt terms), and a model
    without moduli to compute runs a program that computes nothing: the same steps,
    evaluations and states as the Python path to RTOL_EQUAL (before, every such model
    stepped in Python: "no constraint sources", or "not computed by one fused
    context"). At random states its dX/dt and bond values equal the dense reduction's
    to 1e-12 of their largest magnitude."""
    model = assemble(assign_causality(_pure_graphs()[name]))
    assert model.n_u2 == (1 if name == "two masses rigid" else 0)
    rng = np.random.default_rng(7)
    x0 = rng.uniform(-1.0, 1.0, model.n_states)
    if model.n_u2:                       # (on the coupling: v1 = v2)
        x0 = np.array([1.0, 3.0]) * x0[0]
    runs = [simulate(model, (0.0, 1.0), x0, method=method, rtol=1e-9, atol=1e-12,
                     compiled_loop=c) for c in (False, True)]
    ref, fast = runs
    assert ref.success and fast.success
    assert fast.diagnostics["compiled_loop"], fast.diagnostics["compiled_loop_reason"]
    assert fast.diagnostics["compiled_steps"] == fast.n_steps
    assert (fast.n_steps, fast.nfev) == (ref.n_steps, ref.nfev)
    assert _same(ref.x, fast.x), np.abs(ref.x - fast.x).max()
    sr = model.sparse()
    for _ in range(10):
        x, t = rng.uniform(-2.0, 2.0, model.n_states), float(rng.uniform(0.0, 1.0))
        dense, ev = model.evaluate(t, x), sr.evaluate(t, x)
        assert ev.branch == dense.branch
        for a, b in ((ev.xdot, dense.xdot), (ev.bond_values, dense.bond_values),
                     (sr.derivative(t, x), dense.xdot)):
            a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            assert np.abs(a - b).max() <= 1e-12 * max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize("name", ["dc motor", "three-body"])
def test_a_read_only_initial_state_runs_compiled(name):
    """A run continued from another's last state (``res.x[:, -1]``: results are read-only
    views) took the compiled loop with scipy's y still the caller's read-only array,
    and numba refused it (a TypeError, the run lost: every compiled model, mechanisms
    included). The loop now copies it: the same run as from a writeable copy, bit for
    bit."""
    if name == "three-body":
        mm, x, _ = _three_body()
        model = mm.model
    else:
        model = assemble(assign_causality(models.dc_motor(12.0, 1.0, 0.01, 0.05, 0.02,
                                                          0.001)))
        x = np.zeros(2)
    first = simulate(model, (0.0, 0.05), x)
    x0 = first.x[:, -1]
    assert not x0.flags.writeable
    then = simulate(model, (0.05, 0.1), x0)
    again = simulate(model, (0.05, 0.1), x0.copy())
    assert then.success and then.diagnostics["compiled_loop"]
    np.testing.assert_array_equal(then.x, again.x)


def test_a_free_joint_takes_the_compiled_loop_without_rate_terms():
    """A body on a FreeJoint from the ground has no constraint source but moduli that
    vary (the joint's frames): its one-call plan must have no dA/dt terms, as its
    system has no z rows for them. The first version of the single-stage plan kept
    them, and the compiled stage wrote n_u values past the end of a right-hand side of
    length 0 (numba checks no bounds): the heap was corrupted and a later test aborted
    in LAPACK (the fresh-clone suite, in tests/validation/test_free_joint.py). The plan
    says so, the run takes the compiled loop, and equals the Python path."""
    from elements import FreeJoint, Inertia, Mechanism, RigidBody
    mech = Mechanism("free_joint", gravity=(0.0, -9.81, 0.0))
    b = mech.add_body(RigidBody("b", 2.0, Inertia.about_center(np.diag([0.1, 0.2, 0.3]))))
    mech.add_joint(FreeJoint("F", mech.ground, b))
    mm = mech.assemble()
    model = mm.model
    assert model.n_u2 == 0 and model.layout.dynamic
    fast = model.sparse()
    x0 = mm.initial_state({"F": {"x": 0.1, "y": 0.2, "z": 0.3}},
                          {"F": ((1.0, 0.0, 0.5), (0.3, 2.0, 0.1))})
    fast.derivative(0.0, x0)
    plan = fast._fused_plan()
    assert plan is not None and plan[1] == 0          # (rate_terms)
    ref, fastrun = (simulate(model, (0.0, 1.0), x0, method="DOP853", rtol=1e-9, atol=1e-12,
                             compiled_loop=c) for c in (False, True))
    assert fastrun.diagnostics["compiled_loop"], fastrun.diagnostics["compiled_loop_reason"]
    assert (fastrun.n_steps, fastrun.nfev) == (ref.n_steps, ref.nfev)
    assert _same(ref.x, fastrun.x)
    dense = model.evaluate(0.3, x0)
    assert np.abs(fast.derivative(0.3, x0) - dense.xdot).max() <= \
        1e-12 * max(1.0, np.abs(dense.xdot).max())
