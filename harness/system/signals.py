"""Ctrl-C and SIGTERM: stop promptly, then undo what was created whatever else arrives.

The first SIGINT or SIGTERM raises :class:`Interrupted` in the main thread and sets
:data:`cancelled`, which other threads (a bring-up in parallel, clients running at once)
meet at their next command or poll (:func:`check`), and end without a word. Teardown
runs :func:`shielded`: a signal that arrives then is reported and put off until the block
ends, so a second Ctrl-C cannot leave half a lab behind. So is one that arrives while the
first still unwinds towards its teardown (a second Ctrl-C raised on the way there would
skip it). A shielded block that was not already unwinding raises the put-off signal when
it ends.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType

cancelled = threading.Event()
_depth = 0  # shielded blocks of the main thread
_put_off: list[int] = []
_thread = threading.local()  # shielded blocks of other threads (a client's cleanup)


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM: exit code 128 + the signal's number, as a shell reports it."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _handler(signum: int, frame: object) -> None:
    # (cancelled: an interrupt raised before unwinds, on its way to the teardown that
    # undoes what was made; raised again in the 'except' that starts that teardown, before
    # its shielded block, this one would skip it: the local lab's bring-up would undo the lab
    # without waiting for its threads, which may still be starting daemons)
    if _depth or cancelled.is_set():
        if not _put_off:
            sys.stderr.write(f"dfsbench: {signal.Signals(signum).name} received; still undoing what was "
                             "created, which will finish (to abandon it: kill -9, then "
                             "'dfsbench lab down' later)\n")
        _put_off.append(signum)
        return
    cancelled.set()
    raise Interrupted(signum)


def install() -> None:
    """SIGINT and SIGTERM both unwind as :class:`Interrupted` (main thread only); a thread
    that ends on the interrupt (:func:`check`) ends quietly."""
    cancelled.clear()
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)
    global _excepthook
    if threading.excepthook is not _thread_ended:
        _excepthook, threading.excepthook = threading.excepthook, _thread_ended


_excepthook = threading.excepthook


def _thread_ended(args: threading.ExceptHookArgs) -> None:
    """A thread that ends on an interrupt of the run ends without a word: the main thread
    says the run was interrupted, once. (The container lab's stats thread printed its
    traceback before that message.) Any other exception is shown as before."""
    if args.exc_type is not None and issubclass(args.exc_type, Interrupted) and cancelled.is_set():
        return
    _excepthook(args)


def check() -> None:
    """Raise :class:`Interrupted` in a thread that is not the main one once the main one
    was interrupted (unless the thread is in a shielded block of its own): the place a
    worker stops. The main thread meets the signal itself; a teardown runs there alone."""
    if (cancelled.is_set() and threading.current_thread() is not threading.main_thread()
            and not getattr(_thread, "depth", 0)):
        raise Interrupted()


@contextmanager
def shielded() -> Iterator[None]:
    """Run the block to its end even through Ctrl-C and SIGTERM (those are reported and
    put off). In another thread than the main one, signals do not arrive; there the
    block only runs on through :func:`check`."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        _thread.depth = getattr(_thread, "depth", 0) + 1
        try:
            yield
        finally:
            _thread.depth -= 1
        return
    _depth += 1
    unwinding = False
    try:
        yield
    except BaseException:
        unwinding = True
        raise
    finally:
        _depth -= 1
        if not _depth and _put_off:
            signum = _put_off[0]  # the first: the one that asked to stop
            _put_off.clear()
            if not unwinding:  # nothing else is unwinding: the put-off signal does now
                cancelled.set()
                raise Interrupted(signum)


class Teardown(ExitStack):
    """An ExitStack whose unwinding (the undo of what it holds) is :func:`shielded`."""

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> bool:
        with shielded():
            return bool(super().__exit__(kind, value, tb))
