"""The fault of one cell on its own clock: done ``after_s`` seconds into the cell, undone at
``restore_after_s`` (or at its end), then the system's health polled until it is whole
again (see ``harness.api.faults``); and the record of what was done."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.api.faults import FAULT, Faults, FaultSpec, Injected
from harness.api.records import Measurement

POLL_S = 2.0


@dataclass
class Timeline:
    """The fault of one cell, done at its times on a thread of its own."""

    faults: Faults
    system: str
    spec: FaultSpec
    injected: Injected | None = None
    injected_at: float | None = None
    restored_at: float | None = None
    healthy_at: float | None = None
    state: str = ""
    problems: list[str] = field(default_factory=list)
    _poller: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: threading.Event = field(default_factory=threading.Event)
    _start: float = 0.0

    def start(self) -> None:
        self._start = time.monotonic()
        threading.Thread(target=self._run, daemon=True, name="dfsbench-fault").start()

    def _run(self) -> None:
        if self._done.wait(self.spec.after_s):
            return
        with self._lock:
            try:
                self.injected = self.faults.inject(self.system, self.spec)
                self.injected_at = time.monotonic() - self._start
            except Exception as exc:
                self.problems.append(f"could not inject the fault: {exc}")
                return
        if self.spec.restore_after_s is not None:
            self._done.wait(max(0.0, self.spec.restore_after_s - self.spec.after_s))
            self.restore()

    def restore(self) -> None:
        """Bring the node back (once); called by the timer or at the end of the cell. From
        then on the system's health is polled, so the recovery time is measured while the
        cell may still run (a poll every ``POLL_S``: each is one CLI call on a node)."""
        self._done.set()
        with self._lock:
            if self.injected is None or self.restored_at is not None:
                return
            try:
                self.injected.restore()
            except Exception as exc:
                self.problems.append(f"could not bring it back: {exc}")
            self.restored_at = time.monotonic() - self._start
            self._poller = threading.Thread(target=self._poll, daemon=True, name="dfsbench-recovery")
            self._poller.start()

    def _poll(self) -> None:
        assert self.restored_at is not None
        while time.monotonic() - self._start - self.restored_at < self.spec.recovery_timeout_s:
            try:
                ok, self.state = self.faults.health(self.system)
            except Exception as exc:
                ok, self.state = False, str(getattr(exc, "message", exc))
            if ok:
                self.healthy_at = time.monotonic() - self._start
                return
            time.sleep(POLL_S)

    def wait_healthy(self) -> tuple[float | None, str]:
        """Seconds from the restore to a healthy system (None: not within the timeout)."""
        if self.restored_at is None or self._poller is None:
            return None, "not restored"
        self._poller.join()
        if self.healthy_at is None:
            return None, self.state
        return self.healthy_at - self.restored_at, self.state


def record(timeline: Timeline, recovery: float | None, state: str, verified: str, workload: str,
           cell: dict[str, Any], backend: str, variant: str) -> Measurement:
    """The cell's fault: what was done and when, recovery time (s), verification."""
    inj = timeline.injected
    what = inj.description if inj else "not injected"
    when = f"at {timeline.injected_at:.1f} s" if timeline.injected_at is not None else ""
    back = f", back at {timeline.restored_at:.1f} s" if timeline.restored_at is not None else ""
    params = {"for": workload, **cell, "fault": f"{what} {when}{back}".strip(), "health": state[:200],
              "verified": verified}
    if timeline.problems:
        params["error"] = "; ".join(timeline.problems)[:500]
    flags = () if recovery is not None else ("degraded",)
    return Measurement(FAULT, "recovery", "elapsed", recovery, "s", params, backend, variant, flags=flags)
