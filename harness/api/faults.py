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
nothing left to heal), and whether the data written during the fault verified afterwards
(where the workload checks what it reads back). Environments that can do this provide a
:class:`Faults` (``Cluster.faults``); the runner does it on the timeline of
``harness.execution.timeline``, and ``harness.report.faults`` shows it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

FAULT = "fault"  # the workload name of the record each fault cell stores
PHASES = ("before", "during", "after")


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # (built when a fault is configured)

    action: Literal["kill", "stop", "pause"] = Field(description="kill: SIGKILL; stop: SIGTERM, "
                                                     "then SIGKILL; pause: freeze (cgroup freezer)")
    target: Literal["node", "process"] = Field("node", description="the whole storage node, or "
                                               "only one OSD / brick process on it")
    node: str | None = Field(None, description="which storage node, by its name in the lab; "
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
