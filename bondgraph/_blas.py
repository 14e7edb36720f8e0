"""BLAS held to one thread while a model is integrated.

The model's matrices are small: a multithreaded BLAS only adds synchronisation (and on
a loaded 2-core machine it was found 100x slower). :func:`one_blas_thread` limits the
BLAS libraries numpy and scipy loaded to one thread for the duration of a block, through
threadpoolctl (its controller is made once; entering the block costs about 12 us), and
restores what they had after, so the rest of the user's program keeps its setting.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext

__all__ = ["one_blas_thread"]

_CONTROLLER: list = []
_LOCK = threading.Lock()


def one_blas_thread() -> AbstractContextManager:
    """A context manager: BLAS limited to one thread inside."""
    if not _CONTROLLER:
        with _LOCK:
            if not _CONTROLLER:
                try:
                    from threadpoolctl import ThreadpoolController
                    _CONTROLLER.append(ThreadpoolController())
                except Exception:  # noqa: BLE001 - no control: run as the process is set
                    _CONTROLLER.append(None)
    controller = _CONTROLLER[0]
    return nullcontext() if controller is None else controller.limit(limits=1,
                                                                      user_api="blas")
