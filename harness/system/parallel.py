"""What the parts of a bring-up that run at once (in threads) share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from harness.errors import DfsbenchError
from harness.system import signals

P = ParamSpec("P")
T = TypeVar("T")


class Threads(ThreadPoolExecutor):
    """A pool of threads whose block ends once all it was given has ended, whatever ended
    the block. A Ctrl-C in the main thread while it waited for them at a plain pool's end
    left them running: the undo of a partial lab that follows ran beside threads still
    starting what it undoes, and what they recorded after it was left in the ledger. Here
    the interrupt is raised (the threads meet it at their next
    :func:`~harness.system.signals.check`, and end), and what they run is waited for all
    the same, :func:`~harness.system.signals.shielded`. (It waits on the work's futures,
    not by joining the threads: a join that a signal's exception interrupts marks a thread
    that still runs as ended, so a second join returns at once — CPython 3.11's
    ``Thread._wait_for_tstate_lock``.)"""

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers)
        self._given: list[Future[Any]] = []

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        self._given.append(future)
        return future

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            wait(self._given)
        finally:
            with signals.shielded():
                wait(self._given)
                self.shutdown(wait=True)


class Stop:
    """What the parts of a lab's bring-up that run at once share: the first to fail says so
    (:meth:`fail`, before it waits for anything of its own) and its error is the one the
    bring-up raises (:attr:`first`); the others start nothing more (:meth:`check`) and end
    their waits (:meth:`why`, a wait's ``alive``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        with self._lock:
            if self.first is None:
                self.first = error

    def why(self) -> str | None:
        return None if self.first is None else "another part of the lab's bring-up failed"

    def check(self, part: str) -> None:
        if self.first is not None:
            raise DfsbenchError(f"{part} stopped: another part of the lab's bring-up failed")
