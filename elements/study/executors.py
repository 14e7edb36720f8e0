"""Where a study's runs go: this process, a local Dask cluster or a scheduler.

- :func:`check_executor`: an executor that can be used, or a ModelError.
- :class:`RunProgress`: the progress bar of a study.
- The executors: in this process, or on Dask (a ``LocalCluster`` started and closed
  here, whose workers ignore a terminal's Ctrl-C; or a scheduler's address, or a
  ``distributed.Client``), yielding rows as runs finish.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


from bondgraph import ModelError
from bondgraph.errors import caused_by_interrupt, require_extra

from elements.study.outputs import execute_run, _execute_task


class RunProgress:
    """A one-line progress bar of a study on a stream (stderr by default), at most 10
    updates a second, in the style of :class:`bondgraph.RunProgress`:
    ``[#####.....]  40/64 runs, 1 failed, 5.2 runs/s, 5 s left``."""

    def __init__(self, total: int, done: int = 0, stream=None, width: int = 30):
        self.total, self.done, self.failed = total, done, 0
        self.stream = stream or sys.stderr
        self.width = width
        self._start = time.monotonic()
        self._new = 0
        self._last = 0.0

    def __call__(self, row: Mapping[str, Any]) -> None:
        self.done += 1
        self._new += 1
        if row.get("status") != "ok":
            self.failed += 1
        now = time.monotonic()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = self.done / self.total if self.total else 1.0
        n = int(frac * self.width)
        rate = self._new / max(now - self._start, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else math.inf
        self.stream.write(f"\r  [{'#' * n}{'.' * (self.width - n)}] {self.done}/{self.total} "
                          f"runs, {self.failed} failed, {rate:.3g} runs/s, "
                          f"{left:.0f} s left   ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


# =======================================================================================
# Executors
# =======================================================================================

def _run_inprocess(pm, runs, outputs) -> Iterator[dict[str, Any]]:
    for run in runs:
        yield execute_run(pm, run, outputs)


def check_executor(executor: Any, workers: Any) -> None:
    """A ModelError unless ``executor`` is "inprocess", "local", a scheduler address
    ("tcp://HOST:PORT" or another Dask protocol) or a ``distributed.Client``, and
    ``workers`` None or a positive integer."""
    ok = executor in ("inprocess", "local") or \
        (isinstance(executor, str) and "://" in executor) or \
        type(executor).__name__ == "Client"
    if not ok:
        raise ModelError(f"unknown executor {executor!r}; valid: 'inprocess', 'local' (a "
                         f"Dask cluster on this machine), a scheduler address such as "
                         f"'tcp://127.0.0.1:8786', or a distributed.Client")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ModelError(f"workers must be a positive integer, got {workers!r}")
    if executor != "inprocess":       # before anything is written: a study that cannot
        _distributed()                # start leaves no file behind


def _distributed():
    """dask.distributed, or a MissingExtraError naming the ``study`` extra."""
    return require_extra("distributed", "a Dask executor", "study",
                         package="dask[distributed]",
                         hint="or use the 'inprocess' executor (--executor inprocess)")


def _local_cluster(LocalCluster, n: int):
    """A Dask LocalCluster of ``n`` single-threaded worker processes that ignore SIGINT.

    A Ctrl-C in a terminal goes to every process of the foreground group: the workers
    printed a traceback each before this process closed the cluster. Here they are
    forked by multiprocessing's fork server (Dask's 'forkserver' method), started with
    SIGINT ignored, which its children keep (it restores its own start-up handlers in
    them); this process handles the interrupt and closes the cluster. Where the fork
    server is already running (started by other code), or off the main thread, the
    workers are as Dask makes them."""
    import logging

    import dask
    method = "spawn"
    if _forkserver_ignoring_sigint():
        method = "forkserver"
    with dask.config.set({"distributed.worker.multiprocessing-method": method}), \
            _interrupts_deferred():
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.CRITICAL)


@contextmanager
def _interrupts_deferred():
    """A SIGINT that comes inside is raised (KeyboardInterrupt) when the block ends, not
    in the middle of it (starting or closing a cluster half-way leaves its processes and
    threads in states that print tracebacks). Only in the main thread."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = signal.signal(signal.SIGINT, lambda sig, frame: caught.append(sig))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        raise KeyboardInterrupt


def _forkserver_ignoring_sigint() -> bool:
    """Start multiprocessing's fork server with SIGINT ignored (for the few
    milliseconds it takes to start it, this process ignores SIGINT too), preloading
    what the workers import; whether the fork server is ours (so its children ignore
    SIGINT)."""
    import multiprocessing.forkserver as fs
    import signal
    import threading
    if _FORKSERVER[0]:
        return True
    server = fs._forkserver
    if getattr(server, "_forkserver_pid", None) is not None or \
            threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "SIGINT") or sys.platform == "win32":
        return False
    fs.set_forkserver_preload(["distributed", "elements"])
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fs.ensure_running()
    finally:
        signal.signal(signal.SIGINT, old)
    _FORKSERVER[0] = True
    return True


_FORKSERVER = [False]


def _run_dask(pm, runs, outputs, executor, workers) -> Iterator[dict[str, Any]]:
    distributed = _distributed()
    Client, LocalCluster, as_completed = (distributed.Client, distributed.LocalCluster,
                                          distributed.as_completed)
    own_client = own_cluster = None
    if isinstance(executor, Client):
        client = executor
    elif executor == "local":
        n = workers or os.cpu_count() or 1
        own_cluster = _local_cluster(LocalCluster, n)
        client = own_client = Client(own_cluster)
    else:
        try:
            client = own_client = Client(executor, timeout="10s")
        except OSError as exc:
            raise ModelError(f"cannot reach the Dask scheduler at {executor}: {exc}") from None
    futures = []
    try:
        nthreads = max(1, sum(client.nthreads().values()))
        window = max(16, 4 * nthreads)
        [pm_future] = client.scatter([pm], broadcast=True, hash=False)
        pending = list(runs)
        pending.reverse()
        ac = as_completed()
        in_flight = {}

        def submit(run):
            fut = client.submit(_execute_task, pm_future, run, outputs, pure=False,
                                key=f"bondgraph-run-{run.run_id}-{time.monotonic_ns()}")
            in_flight[fut.key] = run
            futures.append(fut)
            ac.add(fut)

        while pending and len(in_flight) < window:
            submit(pending.pop())
        for fut in ac:
            run = in_flight.pop(fut.key)
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker: the run's row
                if caused_by_interrupt(exc):
                    raise KeyboardInterrupt from exc
                row = {"run_id": run.run_id, "index": run.index, **run.values,
                       **{o.name: math.nan for o in outputs}, "status": "error",
                       "message": f"{type(exc).__name__} on the cluster: "
                                  f"{' '.join(str(exc).split())}",
                       "runtime_s": math.nan, "worker": ""}
            fut.release()
            if pending:
                submit(pending.pop())
            yield row
    finally:
        if own_cluster is not None and isinstance(sys.exc_info()[1], KeyboardInterrupt):
            # the scheduler of our own cluster runs in this process: a task of it cut off
            # by the interrupt (a scatter whose worker is gone) is logged by asyncio as
            # "Task exception was never retrieved" with a traceback; the interrupt is
            # the news, the user sees one line
            import logging
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        with _interrupts_deferred():
            for f in futures:
                if not f.done():
                    f.cancel()
            if own_client is not None:
                own_client.close()
            if own_cluster is not None:
                own_cluster.close()
