"""What the nodes of a lab spent during each cell: CPU, memory, network and block I/O per
node, and the process that took the most CPU there — so a table can say which node and
resource was busiest (``client1 ceph-fuse: 98 % CPU``) and explain a result instead of
only reporting it.

An environment that can watch its nodes hands the runner a :class:`Sampler` per cell
(``Cluster.sampler``); the runner stores what it saw as records of the workload
``resources``, one per node and metric, plus one ``busiest`` record per cell
(``harness.execution.sampling``), and ``harness.report.resources`` shows them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

RESOURCES = "resources"  # the workload name of the records of what the nodes spent


@dataclass(frozen=True)
class NodeUsage:
    """One node over one cell. ``cpu`` is in docker-stats percent (100 = one core busy)."""

    node: str
    seconds: float
    cpu: float
    memory: float  # bytes in use at the end of the cell (page cache not counted)
    net_rx: float  # B/s
    net_tx: float
    blk_read: float
    blk_write: float
    process: str = ""  # the process that used the most CPU in the node during the cell
    process_cpu: float = 0.0
    # the highest rates over a few seconds within the cell (0: not sampled that often)
    peak_cpu: float = 0.0
    peak_net_rx: float = 0.0
    peak_net_tx: float = 0.0

    def loads(self, link: float | None) -> dict[str, float]:
        """Each resource's load as a share of its capacity, in percent, at its peak within
        the cell (where sampled; else over the whole cell): CPU of one core (a FUSE
        client's work is mostly one thread's), the network of the node's link."""
        out = {"CPU": max(self.cpu, self.peak_cpu)}
        if link:
            out["network in"] = 100 * max(self.net_rx, self.peak_net_rx) / link
            out["network out"] = 100 * max(self.net_tx, self.peak_net_tx) / link
        return out


class Sampler(ABC):
    """Watches the nodes during one cell: ``start`` before it, ``stop`` after it."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> list[NodeUsage]: ...
