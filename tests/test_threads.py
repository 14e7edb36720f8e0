"""One model shared by several threads: every run gives the sequential run's numbers to
the last bit, with the compiled LU (numba) and without it (SuperLU).

The evaluation keeps no per-evaluation state on the model: each run has its own
workspace (the pivot-order state of the compiled LU), the sparse matrices handed to
SuperLU are new objects per evaluation, and the one-call path's source buffers are per
thread. Before that, four threads on the Cartesian pendulum without numba ended with
rod-length errors up to 2.8e-2 and reported SUCCESS.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from bondgraph import assemble, assign_causality, models, simulate
from elements import models as em

N_THREADS = 4


@pytest.fixture(params=["numba", "superlu"])
def lu_path(request, monkeypatch):
    """Models built in this test use the compiled LU, or SuperLU only."""
    if request.param == "numba":
        from bondgraph import fastlu
        if not fastlu.have_numba():
            pytest.skip("numba is not installed (the test extra installs it)")
        monkeypatch.delenv("BONDGRAPH_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("BONDGRAPH_NO_NUMBA", "1")
    return request.param


@pytest.fixture
def busy_switching():
    """Threads switch every 10 us (CPython's default is 5 ms), so that runs interleave
    inside evaluations."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _pendulum():
    m, l, g = 2.0, 1.5, 9.81
    model = assemble(assign_causality(models.cartesian_pendulum(m, l, g)))
    th, thd = 1.0, 1.5
    x0 = {"r": l * np.array([np.sin(th), -np.cos(th)]),
          "p_m": m * l * thd * np.array([np.cos(th), np.sin(th)])}

    def run():
        return simulate(model, (0.0, 3.0), x0, rtol=1e-10, atol=1e-10)
    return run


def _three_body():
    mm = em.three_body_prismatic().assemble()

    def run():
        return mm.simulate((0.0, 1.0), t_eval=np.linspace(0.0, 1.0, 51)).raw
    return run


def _chain():
    mech, q0 = em.chain(10)
    mm = mech.assemble()

    def run():
        return mm.simulate((0.0, 0.5), q0, t_eval=np.linspace(0.0, 0.5, 26)).raw
    return run


def _in_threads(run):
    out: list = [None] * N_THREADS
    errors: list = []
    start = threading.Barrier(N_THREADS)

    def target(i):
        try:
            start.wait()
            out[i] = run()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return out


@pytest.mark.parametrize("make", [_pendulum, _three_body, _chain],
                         ids=["cartesian_pendulum", "three_body", "chain10"])
def test_threads_equal_the_sequential_run_to_the_last_bit(make, lu_path, busy_switching):
    run = make()
    ref = run()
    assert ref.success
    again = run()                         # a second run of the same model, same thread
    assert np.array_equal(again.x, ref.x)
    for r in _in_threads(run):
        assert r.success, r.message
        assert np.array_equal(r.t, ref.t)
        assert np.array_equal(r.x, ref.x), np.abs(r.x - ref.x).max()
        assert r.nfev == ref.nfev
        # the derived outputs (reactions, bond values) too
        for name in ref.constraint_forces:
            assert np.array_equal(r.constraint_forces[name], ref.constraint_forces[name])
