"""Faults: a workload may declare one — stop, kill or pause one storage node of the system
under test (or only one OSD or brick process on it) ``after_s`` seconds into each cell's
timed phase (the workload says when that starts: largefile builds its source first), and
bring it back ``restore_after_s`` seconds into it (a cell whose work ends sooner waits:
the node is down as long as asked). Each such cell then runs three
times, its records told apart by ``phase``:

- ``before``: the healthy cluster;
- ``during``: the fault happens while the cell runs (records flagged ``degraded``);
- ``after``: once the cluster is healthy again (or, if it did not recover in time, also
  flagged ``degraded``).

The runner stores, per cell, a ``fault`` record: what was done and its moments on the
records' clock (injected, noticed by the cluster, restored, healthy), the time from the
restore to a healthy cluster (as its system reads its health: ``HEALTH_OK``; all bricks online and
nothing left to heal), and whether what was written during the fault read back intact on
another client once the cluster was healthy. Environments that can do this provide a
:class:`Faults` (``Cluster.faults``); the runner does it on the timeline of
``harness.execution.timeline``, and ``harness.report.faults`` shows it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from harness.api.model import ConfigModel

FAULT = "fault"  # the workload name of the record each fault cell stores
PHASES = ("before", "during", "after")


class FaultSpec(ConfigModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)  # (built when a fault is configured)

    action: Literal["kill", "stop", "pause"] = Field(description="kill: SIGKILL; stop: SIGTERM, "
                                                     "then SIGKILL; pause: freeze (cgroup freezer)")
    target: Literal["node", "process"] = Field("node", description="the whole storage node, or "
                                               "only one OSD / brick process on it")
    node: str | None = Field(None, description="which storage node, by its name in the lab; 'gateway': the "
                             "system's S3 gateway (local lab); default: the system's second storage node")
    after_s: float = Field(gt=0, description="seconds into the cell's timed phase")
    restore_after_s: float | None = Field(None, gt=0, description="seconds into the timed phase to bring "
                                          "it back; a cell whose work ends first waits for it (default: right after the cell)")
    recovery_timeout_s: float = Field(600, gt=0, description="how long to wait for a healthy "
                                      "cluster after the restore")

    @model_validator(mode="after")
    def _order(self) -> FaultSpec:
        if self.restore_after_s is not None and self.restore_after_s <= self.after_s:
            raise ValueError("restore_after_s must come after after_s")
        if self.target == "process" and self.action == "pause":
            raise ValueError("pause applies to a node, not to one process")
        return self

    def too_late(self, lasts: tuple[str, float] | None) -> str:
        """Why the fault would never be done in a cell whose timed phase lasts as long as
        ``lasts`` says (the option that fixes it, and its seconds: ``Workload.lasts``): '' where
        it would be done, or the length is not known before the cell runs. (At the run, a fault
        whose time never came is stored as a 'no-fault' record, and the cell ran three times
        for nothing.)"""
        if lasts is None or self.after_s < lasts[1]:
            return ""
        return (f"{self.after_s:g} s into the cell's timed phase is past its end (it lasts {lasts[1]:g} s, as "
                f"{lasts[0]} makes it): the fault would never be done, and its 'during' run would measure the "
                "healthy cluster again")

    def held_past(self, bound: tuple[str, float] | None) -> str:
        """Why the fault would still hold when the cell's tool is stopped as hung, in a cell
        whose tool may run as long as ``bound`` says (the option that sets it, and its seconds:
        ``Workload.bound``): '' where it is restored before, or no bound is known. (At the run,
        a tool that waits on the node down — a paused one answers nothing — is killed at its
        deadline, and the cell is recorded hung for a fault it was asked to wait out.)"""
        if bound is None or self.restore_after_s is None or self.restore_after_s < bound[1]:
            return ""
        return (f"{self.restore_after_s:g} s into the cell's timed phase is past its deadline ({bound[1]:g} s, as "
                f"{bound[0]} makes it): a tool that waits for the node would be stopped as hung before it is back")


class Injected(ABC):
    """A fault that was done (to node ``node``: one that stores data, or another, such as a
    monitor, whose absence leaves every copy in place), and how to undo it."""

    description: str
    node: str = ""
    stores_data: bool = True
    # when it was done (seconds since the epoch), where that is known better than the moment
    # inject() returned (a process killed at once, after a lookup of its pid that took a while)
    at: float | None = None

    @abstractmethod
    def restore(self) -> None: ...


class Faults(ABC):
    """What an environment can do to its storage nodes."""

    @abstractmethod
    def inject(self, system: str, spec: FaultSpec) -> Injected: ...

    @abstractmethod
    def health(self, system: str) -> tuple[bool, str]:
        """Whether the system is whole again (and what it says it is)."""

    def noticed(self, system: str, injected: Injected) -> tuple[bool | None, str]:
        """Whether the system's own state shows the fault now — a state that names it (an
        OSD marked down, a brick offline), not any failed health check — and what it said;
        None where the system cannot be asked (the node that would answer is the one
        down) or the environment cannot tell."""
        return None, "this environment cannot tell when the system notices a fault"
