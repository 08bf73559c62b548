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
# the shortest period a sampler may be configured with (s): each sample asks every node, and a
# shorter one would spin
MIN_SAMPLE_S = 0.1
CLIENT, SERVER = "client", "server"  # the sides of a lab (NodeRole.side)


@dataclass(frozen=True)
class NodeRole:
    """What a node is in its lab, as the environment that made it declares: a client
    (``side: client``) or a storage node (``side: server``) of the systems it ``serves``
    (service names, as backends ``require`` them: ``ceph``, ``gluster``). The cost of a
    system (harness.report.cost) counts the servers of its own services only."""

    side: str
    serves: tuple[str, ...] = ()


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
    # between each two consecutive samples: (their times on this machine's clock, cpu in % of
    # one core, net_rx, net_tx in B/s)
    points: tuple[tuple[float, float, float, float, float], ...] = ()
    # the CPU time the node used over the cell's sampled window (s), from its counter (None: not counted)
    cpu_seconds: float | None = None
    # the most bytes in use at any sample within the cell, page cache not counted (None: not sampled)
    peak_memory: float | None = None
    role: NodeRole | None = None  # what the node is in its lab, where the environment declared it


class Sampler(ABC):
    """Watches the nodes during one cell: ``start`` before it, ``stop`` after it."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> list[NodeUsage]: ...
