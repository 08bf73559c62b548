"""The fault of one cell on the records' clock: done ``after_s`` seconds into the cell's
measured work (its first timed phase, not its set-up), undone at ``restore_after_s`` — a
cell whose work ends first waits for it, so that the node is down as long as the config
asked, whatever the work's length — or, with none given, at the cell's end; the system's health polled from the injection until it says the fault is
noticed, and from the restore until it is whole again (see ``harness.api.faults``); and
the record of what was done.

Every time is seconds since the epoch on this machine's clock, the one every record's
``started`` and ``ended`` are on, so a table can set the fault against each record's
interval: ``injected``, ``noticed`` (the first look at the system's state that showed the
fault: an OSD marked down, a brick offline — ``Faults.noticed``; a state that showed it
before the injection makes no such time), ``restored`` (its daemons run again),
``healthy`` (the first health check that passed after it). The timeline reads that clock,
and waits, through its :class:`Clock`, which a test drives."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.api.faults import FAULT, Faults, FaultSpec, Injected
from harness.api.records import Measurement
from harness.execution.group import Group
from harness.system import signals

# between health checks while waiting for a healthy system (one CLI call on a node): from
# FIRST_POLL_S, doubling up to POLL_S, so a system back at once is not shown back only at
# the second check 2 s later, and one that takes minutes is asked every 2 s (its figure is
# then within 2 s and a check's length of the truth; the start of the last check that failed
# is kept, the bound below it)
FIRST_POLL_S = 0.1
POLL_S = 2.0
NOTICE_POLL_S = 0.5  # between health checks while the fault holds (when does the system notice?)


class Clock:
    """The time a timeline reads and waits on: ``now``, seconds since the epoch on this
    machine's clock (the records' clock, which every moment it keeps is on); ``sleep``; and
    ``wait``, for an event at most so long (whether it was set). This one is the real time;
    a test gives a timeline one it drives."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(seconds)


@dataclass
class Timeline:
    """The fault of one cell, done at its times on a thread of its own."""

    faults: Faults
    system: str
    spec: FaultSpec
    clock: Clock = field(default_factory=Clock)
    injected: Injected | None = None
    started_at: float | None = None  # the cell's measured work began
    injected_at: float | None = None
    noticed_at: float | None = None
    restored_at: float | None = None
    healthy_at: float | None = None
    unhealthy_at: float | None = None  # the start of the last health check that failed, after the restore
    state: str = ""
    notice: str = ""  # what the system said when it noticed, or why there is no such moment
    unnoticed: bool = False  # looked at until the restore, and the system never showed the fault
    problems: list[str] = field(default_factory=list)
    before: tuple[bool | None, str] | None = None  # the system's state before the fault (:meth:`look_first`)
    _poller: threading.Thread | None = None
    _watcher: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: threading.Event = field(default_factory=threading.Event)
    _ended: bool = False  # the cell's work ended (:meth:`work_ended`): no fault is done after it

    def look_first(self) -> None:
        """Ask the system's state now, before the cell's measured work starts the fault's
        clock (a node already shown down leaves the noticed moment unknown). Asked on the
        fault's clock instead, the answer's seconds on a loaded host (a ``ceph status`` in a
        container) would come before the kill and make it late."""
        self.before = self._baseline()

    def start(self, warmup_s: float = 0.0) -> None:
        """The cell's measured work begins, ``warmup_s`` from now (what its tool runs untimed
        first, such as fio's ramp_time): the fault's clock starts then, so that ``after_s`` is
        counted in measured work."""
        self.started_at = self.clock.now() + max(0.0, warmup_s)
        threading.Thread(target=_quietly(self._run), daemon=True, name="dfsbench-fault").start()

    def _run(self) -> None:
        assert self.started_at is not None
        # (the system must not show a node down already: asked before the clock started, or now)
        baseline = self.before if self.before is not None else self._baseline()
        if self.clock.wait(self._done, max(0.0, self.started_at + self.spec.after_s - self.clock.now())):
            return
        with self._lock:
            if self._done.is_set() or self._ended:  # the cell ended meanwhile: never leave a node down for the next
                return
            try:
                self.injected = self.faults.inject(self.system, self.spec)
                self.injected_at = self.injected.at if self.injected.at is not None else self.clock.now()
            except Exception as exc:
                self.problems.append(f"could not inject the fault: {exc}")
                return
        if baseline[0] is None:
            self.notice = f"not known: {baseline[1]}"
        elif baseline[0]:
            self.notice = f"not known: the system showed a node down before the fault ({baseline[1]})"
        else:
            self._watcher = threading.Thread(target=_quietly(self._notice), daemon=True, name="dfsbench-notice")
            self._watcher.start()
        if self.spec.restore_after_s is not None:  # (at its moment of the timed phase, however long the injection took)
            self.clock.wait(self._done, max(0.0, self.started_at + self.spec.restore_after_s - self.clock.now()))
            self.restore()

    def _baseline(self) -> tuple[bool | None, str]:
        """What the system's state says of a node down before the fault (the question of
        :meth:`_notice`, of no node; None: it could not be asked)."""
        try:
            return self.faults.noticed(self.system, _Nothing())
        except Exception as exc:
            return None, str(getattr(exc, "message", exc))[:200]

    def _notice(self) -> None:
        """Look at the system's state while the fault holds: the first answer that shows
        it is when the system noticed (never, if it is restored first; an answer that came
        after the restore cannot say it noticed before)."""
        assert self.injected is not None
        said = ""
        while self.restored_at is None:
            began = self.clock.now()
            try:
                shown, said = self.faults.noticed(self.system, self.injected)
            except Exception as exc:  # (one failed look, a node slow to answer: look again)
                shown, said = False, f"it did not answer: {str(getattr(exc, 'message', exc))[:150]}"
            answered = self.clock.now()  # (a restore under way holds the lock: this is when it said so)
            if shown is None:
                with self._lock:
                    self.notice = self.notice or f"not known: {said}"
                return
            if shown:
                with self._lock:
                    if self.restored_at is None or answered < self.restored_at:
                        self.noticed_at, self.notice = answered, said
                    elif began < self.restored_at:  # (it may have shown it before, or after, the restore)
                        self.notice = ("not known: the look that showed it began before the restore and "
                                       f"answered after it ({said})")
                return
            self.clock.sleep(NOTICE_POLL_S)
        self.unnoticed = True
        self.notice = self.notice or f"not noticed before it was undone (it said: {said})"

    def work_ended(self) -> float:
        """The cell's work ended: no fault is done from now on (the timer may be about to);
        the seconds the node is still to stay down as asked (:meth:`left_down_s`)."""
        with self._lock:
            self._ended = True
        return self.left_down_s()

    def left_down_s(self) -> float:
        """Seconds the node is still to stay down as asked (0: no fault was done, none holds
        now, or no ``restore_after_s`` was given)."""
        with self._lock:
            if self.injected is None or self.restored_at is not None or self.spec.restore_after_s is None:
                return 0.0
        assert self.started_at is not None
        return max(0.0, self.started_at + self.spec.restore_after_s - self.clock.now())

    def hold(self) -> None:
        """The cell's work ended: the fault holds until ``restore_after_s`` as asked (the
        timer brings the node back then), and is undone here only after that."""
        left = self.left_down_s()
        if left > 0:
            self.clock.sleep(left)
        self.restore()

    def restore(self) -> None:
        """Bring the node back (once; it returns when its daemons run); called by the timer
        or at the end of the cell. From then on the system's health is polled, so the
        recovery time is measured while the cell may still run."""
        self._done.set()
        with self._lock:
            if self.injected is None or self.restored_at is not None:
                return
            try:
                with signals.shielded():  # (a node half brought back is left down for the cells after)
                    self.injected.restore()
            except Exception as exc:
                self.problems.append(f"could not bring it back: {exc}")
            self.restored_at = self.clock.now()
            self._poller = threading.Thread(target=_quietly(self._poll), daemon=True, name="dfsbench-recovery")
            self._poller.start()

    def _poll(self) -> None:
        assert self.restored_at is not None
        interval = FIRST_POLL_S
        while self.clock.now() - self.restored_at < self.spec.recovery_timeout_s:
            began = self.clock.now()
            try:
                ok, self.state = self.faults.health(self.system)
            except Exception as exc:
                ok, self.state = False, str(getattr(exc, "message", exc))
            if ok:
                self.healthy_at = self.clock.now()
                return
            self.unhealthy_at = began  # (healthy only after this: the figure's lower bound)
            self.clock.sleep(interval)
            interval = min(POLL_S, interval * 2)

    def wait_healthy(self) -> tuple[float | None, str]:
        """Seconds from the restore to a healthy system (None: not within the timeout)."""
        if self.restored_at is None or self._poller is None:
            return None, "not restored"
        self._poller.join()
        if self._watcher is not None:
            self._watcher.join(timeout=30)
        if self.healthy_at is None:
            return None, self.state
        return self.healthy_at - self.restored_at, self.state

    @property
    def noticed_after(self) -> float | None:
        """Seconds from the injection to the system noticing it (None: it did not, before
        the restore)."""
        if self.noticed_at is None or self.injected_at is None:
            return None
        return self.noticed_at - self.injected_at

    def times(self) -> dict[str, float | None]:
        """The fault's moments, on the records' clock."""
        return {"injected": self.injected_at, "noticed": self.noticed_at, "restored": self.restored_at,
                "healthy": self.healthy_at, "unhealthy_last": self.unhealthy_at}


def _quietly(work: Callable[[], None]) -> Callable[[], None]:
    """A thread's work that stops, without a word, when the run is interrupted: the main
    thread hears the signal too, and undoes the fault on its way out."""
    def run() -> None:
        with contextlib.suppress(signals.Interrupted):
            work()
    return run


class _Nothing(Injected):
    """No fault: what the system's state says before one is done."""

    description = "no fault"

    def restore(self) -> None:
        pass


def record(timeline: Timeline, recovery: float | None, state: str, verified: str, group: Group) -> Measurement:
    """The fault of the cell of ``group``: what was done and when (relative to the cell's
    measured work, and on the records' clock), the two recovery figures (noticed after,
    healthy after the restore: the value, s), verification."""
    inj = timeline.injected
    what = inj.description if inj else "not injected"
    origin = timeline.started_at

    def rel(t: float | None) -> str:
        return f"{t - origin:.1f} s" if t is not None and origin is not None else "?"

    when = f"at {rel(timeline.injected_at)}" if timeline.injected_at is not None else ""
    back = f", back at {rel(timeline.restored_at)}" if timeline.restored_at is not None else ""
    params: dict[str, Any] = {"for": group.workload, **group.params, "fault": f"{what} {when}{back}".strip(),
                              "health": state[:200], "verified": verified, **timeline.times(),
                              "noticed_after_s": timeline.noticed_after, "notice": timeline.notice[:200],
                              "stores_data": inj.stores_data if inj else None,
                              "measured_from": origin}
    if timeline.problems:
        params["error"] = "; ".join(timeline.problems)[:500]
    flags: tuple[str, ...] = ()
    if inj is None:  # nothing was done to the cluster: nothing to recover from
        recovery, params["why"] = None, "no fault done: " + (
            "; ".join(timeline.problems) or "the timed phase ended before after_s")[:300]
        flags = ("no-fault",)
    elif recovery is None:
        flags = ("degraded",)
    elif timeline.unnoticed:
        # undone before the system noticed it: nothing was recovered, and a time near 0
        # would say the system recovered at once
        recovery, params["why"] = None, "not noticed: " + (timeline.notice or "before it was undone")
        flags = ("not-noticed",)
    return Measurement(FAULT, "recovery", "elapsed", recovery, "s", params, group.backend, group.variant, flags=flags)
