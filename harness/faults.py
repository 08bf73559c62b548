"""Faults: a workload may declare one — stop, kill or pause one storage node of the system
under test (or only one OSD or brick process on it) ``after_s`` seconds into each cell,
and bring it back ``restore_after_s`` seconds into it. Each such cell then runs three
times, its records told apart by ``phase``:

- ``before``: the healthy cluster;
- ``during``: the fault happens while the cell runs (records flagged ``degraded``);
- ``after``: once the cluster is healthy again (or, if it did not recover in time, also
  flagged ``degraded``).

The runner stores, per cell, a ``fault`` record: what was done, when, the time from the
restore to a healthy cluster (Ceph ``HEALTH_OK``; GlusterFS all bricks online and
``heal info`` empty), and whether the data written during the fault verified afterwards
(where the workload checks what it reads back). Environments that can do this provide a
:class:`Faults` (``Cluster.faults``).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.records import Measurement, describe_cell

FAULT = "fault"
POLL_S = 2.0
PHASES = ("before", "during", "after")


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["kill", "stop", "pause"] = Field(description="kill: SIGKILL; stop: SIGTERM, "
                                                     "then SIGKILL; pause: freeze (cgroup freezer)")
    target: Literal["node", "process"] = Field("node", description="the whole storage node, or "
                                               "only one OSD / brick process on it")
    node: str | None = Field(None, description="which storage node (e.g. gluster2, ceph-osd2); "
                             "default: the system's second storage node")
    after_s: float = Field(gt=0, description="seconds into the cell")
    restore_after_s: float | None = Field(None, gt=0, description="seconds into the cell to bring "
                                          "it back (default: right after the cell)")
    recovery_timeout_s: float = Field(600, gt=0, description="how long to wait for a healthy "
                                      "cluster after the restore")

    @model_validator(mode="after")
    def _order(self) -> FaultSpec:
        if self.restore_after_s is not None and self.restore_after_s <= self.after_s:
            raise ValueError("restore_after_s must come after after_s")
        if self.target == "process" and self.action == "pause":
            raise ValueError("pause applies to a node, not to one process")
        return self


class Injected(ABC):
    """A fault that was done, and how to undo it."""

    description: str

    @abstractmethod
    def restore(self) -> None: ...


class Faults(ABC):
    """What an environment can do to its storage nodes."""

    @abstractmethod
    def inject(self, system: str, spec: FaultSpec) -> Injected: ...

    @abstractmethod
    def health(self, system: str) -> tuple[bool, str]:
        """Whether the system is whole again (and what it says it is)."""


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


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    rows = []
    for m in records:
        if m.workload != FAULT:
            continue
        cell = describe_cell(m.params, ("for", "fault", "health", "verified"))
        recovery = f"{m.value:.1f} s" if m.value is not None else \
            f"not healthy ({m.params.get('health', '')})"[:80]
        rows.append([name((m.backend, m.variant)), f"{m.params.get('for')} {cell}".strip(),
                     str(m.params.get("fault")), recovery, str(m.params.get("verified"))])
    return rows


TITLE = "Faults: what was done during the cell, time to recover, data verified"
COLUMNS = ["system", "cell", "fault", "recovery", "verified"]
NOTE = ("the cell ran three times: 'before' (healthy), 'during' (the fault; flagged degraded) and "
        "'after' (healthy again) — see the phase rows of its own table; recovery is from the "
        "restore to HEALTH_OK (Ceph) or all bricks online with nothing left to heal (GlusterFS)")
