"""An attachment's set-up as one transaction: what a backend's ``open`` creates, step by
step, is undone newest first if a later step fails, and is exactly what its ``detach``
undoes.

A backend's ``open`` creates things one after another — a pool, a volume, a mount, a
directory in the file system — and each records itself in the cluster's ledger the moment it
exists (``harness.system.ledger.Ledger``: so a crash leaves nothing ``dfsbench lab down``
cannot undo). :class:`Attaching` holds them as the steps of one attachment::

    with Attaching(cluster.ledger, f"cephfs/{self.variant}") as attach:
        with attach.step(f"pool {pool.name}", pool.delete):
            pool.create()
        with attach.step(f"data pool {pool.name} of {fs}"):       # undone by the ledger
            cli.run("ceph", "fs", "add_data_pool", fs, pool.name)
            cli.created(f"data pool {pool.name} of {fs}", "fs", "rm_data_pool", fs, pool.name)
        with attach.step(f"a {FSTYPE} mount at {mnt}", client.unmount):
            entry = client.mount()
        return Target(..., detach=attach.detach)

What it does:

- A step's entries are those the ledger records while its block runs (in this thread:
  ``Ledger.capture``). Its undo is the callable given — a resource's own, which knows more
  than its entries say (a FUSE client that hung is stopped before its mount goes; a
  GlusterFS volume's removal records the self-heal daemon glusterd restarts) — else the
  ledger's undo of exactly those entries.
- A step counts from the moment its block starts, so one that fails part-way is undone
  too: its undo must cope with a set-up that stopped anywhere (each of
  ``harness.api.mounts``'s does, as do the systems' pools and volumes).
- What the ledger records inside the transaction but outside any step is a step of its
  own, in its place, undone by the ledger: nothing recorded is left out.
- ``goes_with``: a resource that goes when an earlier step is undone (an RBD image with the
  pool it is in): it is not undone by itself; its entries leave the ledger once that step
  was undone.
- If the block raises: every step so far is undone, newest first (through Ctrl-C: a
  signal that comes meanwhile is put off until the undo ended). A step whose undo fails
  does not stop the others, and does not take the place of the error: that error is
  re-raised, with what could not be undone as a note (which ``DfsbenchError`` shows). What
  could not be undone stays in the ledger, for ``dfsbench lab down``.
- If it ends well: everything stays recorded, and :meth:`Attaching.detach` (the target's
  ``detach``) undoes every step, newest first, trying each, and then raises one
  ``DfsbenchError`` that names what is left. A second ``detach`` does nothing.
- Either way, a step whose own undo failed is undone once more as its entries in the ledger
  say, after every step after it: a directory its dead client could not remove goes through
  a client started for it, once the dead one's mount is undone (and its session evicted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import TracebackType

from harness.errors import DfsbenchError
from harness.system import signals
from harness.system.ledger import Ledger

LEFT_HINT = "what is left stays in the lab's ledger: 'dfsbench lab down' tries again"


@dataclass(eq=False)
class Step:
    """One thing an attachment created: what it is, the ledger entries it recorded, and
    how it is undone (None: by the ledger, those entries)."""

    what: str
    undo: Callable[[], object] | None = None
    ids: set[str] = field(default_factory=set)
    goes_with: Step | None = None
    carries: list[Step] = field(default_factory=list)  # the steps that go with this one


class Attaching:
    """The steps of one attachment's set-up (``what``: e.g. ``cephfs/default``, for its
    messages), recorded in ``ledger``; see the module's documentation."""

    def __init__(self, ledger: Ledger, what: str) -> None:
        self.ledger, self.what = ledger, what
        self.steps: list[Step] = []
        self._recorded: set[str] = set()  # every entry recorded while the transaction is open
        self._placed: set[str] = set()  # those a step holds
        self._open: ExitStack | None = None
        self._in_step = False

    def __enter__(self) -> Attaching:
        assert self._open is None, "an attachment's transaction is entered once"
        self._open = ExitStack()
        self._recorded = self._open.enter_context(self.ledger.capture())
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        assert self._open is not None
        self._place_the_rest()
        self._open.close()
        if error is None:
            return
        with signals.shielded():  # (a second Ctrl-C waits for the undo: the ledger is not left half undone)
            left = self._undo()
        if left:
            error.add_note(f"undoing the attachment of {self.what} left: {'; '.join(left)} ({LEFT_HINT})")

    @contextmanager
    def step(self, what: str, undo: Callable[[], object] | None = None,
             goes_with: Step | None = None) -> Iterator[Step]:
        """The block creates one thing (``what``, for messages), undone by ``undo`` (None:
        the ledger undoes what the block recorded), or with the earlier step ``goes_with``."""
        assert self._open is not None and not self._in_step, "a step is taken inside its transaction, one at a time"
        self._place_the_rest()
        taken = Step(what, undo, goes_with=goes_with)
        if goes_with is not None:
            goes_with.carries.append(taken)
        self.steps.append(taken)
        self._in_step = True
        try:
            with self.ledger.capture() as ids:
                taken.ids = ids
                yield taken
        finally:
            self._in_step = False
            self._placed |= taken.ids

    def detach(self) -> None:
        """Undo every step, newest first; one error naming what is left, if anything is."""
        left = self._undo()
        if left:
            raise DfsbenchError(f"could not detach {self.what} cleanly: " + "; ".join(left), hint=LEFT_HINT)

    def _place_the_rest(self) -> None:
        """What was recorded since the last step outside any: a step of its own."""
        rest = self._recorded - self._placed
        if rest:
            self.steps.append(Step(f"what {self.what} recorded", ids=set(rest)))
            self._placed |= rest

    def _undo(self) -> list[str]:
        """Undo every step, newest first, each tried whatever the others did; what is left."""
        steps, self.steps = self.steps, []
        failed: list[tuple[Step, list[str]]] = []
        for taken in reversed(steps):
            if taken.goes_with is not None:
                continue  # (undone with that step)
            problems = _undone(taken, self.ledger)
            if problems:
                failed.append((taken, problems))
            else:
                for carried in taken.carries:
                    self.ledger.forget(frozenset(carried.ids))
        # a step whose own undo failed (a directory removed through a client that died) is
        # undone again as its record in the ledger says, once every step after it is undone
        # (that client's unmount, which lets go of what it held)
        left: list[str] = []
        for taken, problems in failed:
            remaining = frozenset(taken.ids & self.ledger.ids())
            if taken.undo is not None and remaining and not self.ledger.undo(only=remaining):
                continue
            left += problems
        return left


def _undone(taken: Step, ledger: Ledger) -> list[str]:
    """Undo one step: what could not be undone (empty: all of it was)."""
    if taken.undo is None:
        return ledger.undo(only=frozenset(taken.ids)) if taken.ids else []
    try:
        taken.undo()
    except Exception as exc:  # (the others are still undone; an interrupt is not caught here)
        said = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"
        return [f"{taken.what}: {said}"]
    return []
