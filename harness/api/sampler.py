"""What the nodes of a lab spent during each cell: CPU, memory, network and block I/O per
node, and the process that took the most CPU there — so a table can say which node and
resource was busiest, as a share of its capacity (``client1: 49 % of its 2 cores``), and
explain a result instead of only reporting it.

An environment that can watch its nodes hands the runner a :class:`Sampler` per cell
(``Cluster.sampler``); the runner stores what it saw as records of the workload
``resources``, one per node and metric (``harness.execution.sampling``); the view sets
each against its capacity (``harness.report.limits``) and ``harness.report.resources``
shows each cell's busiest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

RESOURCES = "resources"  # the workload name of the records of what the nodes spent
HOST = "host"  # the test of its records of this machine under the nodes (harness.execution.sampling)


@dataclass(frozen=True)
class NodeUsage:
    """One node over one cell: rates over the cell, and the highest over a few seconds
    within it (0: not sampled that often). ``cpu`` is in percent of one core (100 = one
    core busy); ``cores`` how many the node can use."""

    node: str
    seconds: float
    cpu: float
    memory: float  # bytes in use at the end of the cell (page cache not counted)
    net_rx: float  # B/s
    net_tx: float
    blk_read: float
    blk_write: float
    process: str = ""  # the process that used the most CPU in the node over the cell
    process_cpu: float = 0.0
    peak_cpu: float = 0.0
    peak_net_rx: float = 0.0
    peak_net_tx: float = 0.0
    cores: int = 0
    # the process that used the most CPU over the window of ``peak_cpu`` (watched nodes only)
    peak_process: str = ""
    peak_process_cpu: float = 0.0


class Sampler(ABC):
    """Watches the nodes during one cell: ``start`` before it, ``stop`` after it."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> list[NodeUsage]: ...
