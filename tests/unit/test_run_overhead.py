"""What a run does once rather than per run, per call or per output point
(benchmarks/run_overhead.py times it; here only what could be wrong about it):

- the model's part of the nominal scales (bondgraph.scales) is worked out once per
  model: a second model made ``with_parameters`` must get its own (a cache keyed on
  anything coarser than the model would hand it the first model's masses);
- the compiled RK loop gets its kernels' addresses once (bondgraph._jit.first_class):
  numba's per-call lookup (``Dispatcher.get_compile_result``) is not called while the
  loop steps, however many times it returns for an output time;
- the output grid is filled with one call of a step's interpolant for all its output
  times: the states there are the interpolant's (checked against the run's dense
  output, ``sol``, which is built from the same steps, to 1e-14 relative: rounding of
  one matrix product done two ways);
- where a run has no events and no dense output, the compiled loop fills the output
  grid itself (each step's interpolant, as scipy makes and evaluates it) instead of
  returning to Python at every step that reaches an output time.
"""

from __future__ import annotations

import numpy as np
import pytest

from bondgraph import nominal_scales
from bondgraph.fastlu import enabled


def _python_evaluations(monkeypatch) -> list:
    """The times at which the Python right-hand side is called from now on (a list that
    grows)."""
    from bondgraph._rhs import RightHandSide
    calls = []
    original = RightHandSide.__call__

    def counted(self, t, x):
        calls.append(t)
        return original(self, t, x)
    monkeypatch.setattr(RightHandSide, "__call__", counted)
    return calls


def test_nominal_scales_are_the_models_own():
    from elements import models as emodels

    mm = emodels.chain(1)[0].assemble()
    model = mm.model
    first = nominal_scales(model, flow=1.0)
    heavier = mm.with_parameters({"b1.mass": 7.0 * model.parameters["b1.mass"]}).model
    assert heavier is not model
    again, other = nominal_scales(model, flow=1.0), nominal_scales(heavier, flow=1.0)
    assert np.array_equal(again, first)
    # a linear momentum's scale is the mass times the flow scale (1 m/s): 7 times larger;
    # the angular momentum's (the inertia's) is unchanged
    p, h = (model.state_slices[n] for n in ("p_b1.linear", "p_b1.angular"))
    assert other[p] == pytest.approx(7.0 * first[p], rel=1e-12)
    assert np.array_equal(other[h], first[h])
    # the cache does not keep a model alive (its parts hold no reference to it)
    import gc
    import weakref

    gone = weakref.ref(heavier)
    del heavier
    gc.collect()
    assert gone() is None


@pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled loop")
def test_the_loop_looks_its_kernels_up_once(monkeypatch):
    from numba.core.dispatcher import Dispatcher
    from elements import models as emodels

    mm = emodels.three_body_prismatic().assemble()
    mm.simulate((0.0, 0.05), t_eval=np.linspace(0.0, 0.05, 3))     # (compiled, loaded)
    calls = []
    original = Dispatcher.get_compile_result

    def counted(self, sig):
        calls.append(getattr(self, "__name__", "?"))
        return original(self, sig)
    monkeypatch.setattr(Dispatcher, "get_compile_result", counted)
    res = mm.simulate((0.0, 0.5), t_eval=np.linspace(0.0, 0.5, 201))
    diag = res.raw.diagnostics
    assert diag["compiled_loop"] and diag["compiled_steps"] > 20
    # one lookup per kernel when the run's loop is made (program, rate, 4 sources), none
    # per compiled call (there were about compiled_steps of them, each returning at an
    # output time)
    assert len(calls) <= 6, calls


def test_outputs_are_the_steps_interpolants():
    from elements import models as emodels

    mm = emodels.three_body_prismatic().assemble()
    for method in ("RK45", "DOP853"):
        grid = np.linspace(0.0, 0.4, 401)
        res = mm.simulate((0.0, 0.4), t_eval=grid, method=method, dense_output=True)
        raw = res.raw
        assert raw.success and raw.t.size == grid.size
        scale = np.abs(raw.x).max(axis=1, keepdims=True) + 1e-300
        dense = raw.sol(grid)
        assert np.abs((raw.x - dense) / scale).max() < 1e-14


@pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled loop")
@pytest.mark.parametrize("dense", [False, True])
def test_dop853_interpolants_come_from_the_compiled_loop(monkeypatch, dense):
    """DOP853's interpolant needs three more stages per step; where the compiled loop
    took the step it evaluates them too (the Python right-hand side is called only at
    the start: scipy's first evaluation and its initial step), and the run is the scipy
    loop's: the same evaluations counted, the same outputs to 1e-13 of each state's
    largest (the same sums; seen 0.0), with output times inside steps and with
    dense output."""
    from elements import models as emodels

    mm = emodels.three_body_prismatic().assemble()
    grid = np.linspace(0.0, 0.5, 101)
    ref = mm.simulate((0.0, 0.5), t_eval=grid, method="DOP853", dense_output=dense,
                      compiled_loop=False).raw
    calls = _python_evaluations(monkeypatch)
    res = mm.simulate((0.0, 0.5), t_eval=grid, method="DOP853", dense_output=dense).raw
    assert res.diagnostics["compiled_steps"] > 20 and res.diagnostics["compiled_fallbacks"] == 0
    assert len(calls) <= 2, len(calls)
    assert res.nfev == ref.nfev and res.t.size == grid.size
    scale = np.abs(ref.x).max(axis=1, keepdims=True) + 1e-300
    assert np.abs((res.x - ref.x) / scale).max() <= 1e-13
    if dense:
        tt = np.linspace(0.0, 0.5, 777)
        assert np.abs((res.sol(tt) - ref.sol(tt)) / scale).max() <= 1e-13


@pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled loop")
@pytest.mark.parametrize("method", ["RK45", "DOP853"])
@pytest.mark.parametrize("chunk", [None, 5])
def test_the_compiled_loop_fills_the_output_grid(monkeypatch, method, chunk):
    """With more output times than steps, the compiled loop writes the states at them
    itself (each step's interpolant, made and evaluated as scipy's) and does not return
    to Python at each one: at most two compiled calls (the first step is the solver's
    own), one interpolant built in Python (that step's), the same evaluations counted and
    the same states as the scipy loop's to 1e-13 of each state's largest (sums in
    another order; DOP853 seen 0.0). ``chunk``: 5 steps per call, so that the grid is
    filled across calls."""
    import bondgraph._fastrk as fastrk
    from bondgraph import _stepping
    from elements import models as emodels

    if chunk is not None:
        monkeypatch.setattr(_stepping, "CHUNK", chunk)
    mm = emodels.three_body_prismatic().assemble()
    grid = np.linspace(0.0, 0.5, 2001)
    ref = mm.simulate((0.0, 0.5), t_eval=grid, method=method, compiled_loop=False).raw
    calls, built = [], []
    advance, function = fastrk.CompiledLoop.advance, _stepping._Interpolant.function

    def counted(self, *args, **kwargs):
        calls.append(1)
        return advance(self, *args, **kwargs)

    def interpolant(self):
        built.append(1)
        return function(self)
    monkeypatch.setattr(fastrk.CompiledLoop, "advance", counted)
    monkeypatch.setattr(_stepping._Interpolant, "function", interpolant)
    res = mm.simulate((0.0, 0.5), t_eval=grid, method=method).raw
    d = res.diagnostics
    assert d["compiled_loop"] and d["compiled_fallbacks"] == 0
    assert res.n_steps == ref.n_steps and res.nfev == ref.nfev and res.t.size == grid.size
    assert grid.size > 10 * res.n_steps
    np.testing.assert_array_equal(res.t, ref.t)
    scale = np.abs(ref.x).max(axis=1, keepdims=True) + 1e-300
    assert np.abs((res.x - ref.x) / scale).max() <= 1e-13
    assert len(built) <= 1, len(built)
    most = 2 if chunk is None else 2 + res.n_steps // chunk
    assert (chunk is None or len(calls) > res.n_steps // chunk) and len(calls) <= most, \
        (len(calls), res.n_steps)


@pytest.mark.skipif(not enabled(), reason="numba is not enabled: no compiled loop")
def test_with_events_dop853_interpolants_come_from_the_compiled_loop(monkeypatch):
    """With events (a pendulum between impact stops: each stretch of the hybrid run
    watches its stops), DOP853's interpolants at output times were built through the
    Python right-hand side (three evaluations each: 419 calls in this run); the loop
    now evaluates the last step's extra stages there too, and drops them where the
    events' scan cuts the call back to an earlier step. Python is called about once per
    stretch (scipy's start), and the run is the scipy loop's: the same switches and
    evaluations, switch times to 1e-10 s and states to 1e-9 of their largest (the
    run's rtol). The scipy loop's extra stages are the Python path's evaluations, which
    equal the compiled ones to rounding, not always to the last bit: with the
    stretches' tolerances scaled as a plain run's, the second impact time differs by
    1e-16 s, and 24 impacts (restitution 0.95) grow that to 2.5e-12 s and 1.1e-10 in the
    final states (seen; before the scaling, bit for bit)."""
    from elements import models as emodels

    mech, _ = emodels.chain(1)
    j = next(iter(mech.joints.values()))
    j.add_limit(-0.2, 0.2, restitution=0.95)
    mm = mech.assemble()

    def run(**kw):
        return mm.simulate((0.0, 5.0), q={j.name: 0.0}, qd={j.name: 3.0}, method="DOP853",
                           **kw)
    ref = run(compiled_loop=False)
    calls = _python_evaluations(monkeypatch)
    res = run()
    stretches = len(res.switches) + 1
    assert len(res.switches) >= 20 and res.raw.nfev == ref.raw.nfev
    assert [s.kind for s in res.switches] == [s.kind for s in ref.switches]
    assert np.abs(np.array([s.t for s in res.switches]) -
                  np.array([s.t for s in ref.switches])).max() <= 1e-10
    assert len(calls) <= 2 * stretches, (len(calls), stretches)
    scale = np.abs(ref.raw.x).max(axis=1, keepdims=True) + 1e-300
    assert np.abs((res.raw.x - ref.raw.x) / scale).max() <= 1e-9
