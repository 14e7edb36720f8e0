"""A stand-in for a call into which a signal handler's exception lands and surfaces as a
``SystemError`` chained to it (what numba's dispatcher and CPython 3.11's ``ast.parse``
do), and the check that the package raises the handler's exception as itself.

- :class:`SignalInside`: forwards every attribute to a real object but ``method``, which
  raises ``SystemError(message)`` from :attr:`SignalInside.cause`.
- :func:`check_raised_as_itself`: a caller's timer (a BaseException) and a
  KeyboardInterrupt are raised as themselves by ``call``; a SystemError of another cause
  propagates as it is (``call_other``, default ``call``)."""

from __future__ import annotations

from typing import Any, Callable

import pytest


class Timer(BaseException):
    """A caller's own timer (as a test harness's SIGALRM handler raises)."""


class SignalInside:
    """``real`` with ``method`` replaced by a call that fails as a signal inside it."""

    def __init__(self, real: Any, method: str, message: str):
        self._real, self._method, self._message = real, method, message
        self.cause: BaseException = KeyboardInterrupt()

    def __getattr__(self, name: str) -> Any:
        if name == self._method:
            return self._fail
        return getattr(self._real, name)

    def _fail(self, *args, **kwargs):
        try:
            raise self.cause
        except BaseException as exc:
            raise SystemError(self._message) from exc


def check_raised_as_itself(fake: SignalInside, call: Callable[[], Any],
                           call_other: Callable[[], Any] | None = None) -> None:
    for cause in (Timer(), KeyboardInterrupt()):
        fake.cause = cause
        with pytest.raises(type(cause)):
            call()
    fake.cause = ValueError("not a signal")
    with pytest.raises(SystemError):
        (call_other or call)()
