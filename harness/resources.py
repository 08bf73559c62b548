"""What the nodes of a lab spent during each cell: CPU, memory, network and block I/O per
node, and the process that took the most CPU there — so a table can say which node and
resource was busiest (``client1 ceph-fuse: 98 % CPU``) and explain a result instead of
only reporting it.

An environment that can watch its nodes hands the runner a :class:`Sampler` per cell
(``Cluster.sampler``); the runner stores what it saw as records of the workload
``resources``, one per node and metric, plus one ``busiest`` record per cell.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from harness.records import Measurement, describe_cell

RESOURCES = "resources"


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


def busiest(usages: list[NodeUsage], link: float | None) -> tuple[NodeUsage, str, float] | None:
    """The node and resource with the highest load, and that load (percent)."""
    best = None
    for usage in usages:
        for resource, load in usage.loads(link).items():
            if best is None or load > best[2]:
                best = (usage, resource, load)
    return best


def records(usages: list[NodeUsage], link: float | None, workload: str, cell: dict[str, Any],
            backend: str, variant: str) -> list[Measurement]:
    """Per node: cpu (%), memory (B), net_rx, net_tx, blk_read, blk_write (B/s); and the
    cell's busiest node and resource. ``params`` name the cell (``for``) and its values."""
    cell_params = {"for": workload, **cell}
    out = []
    for u in usages:
        params = {**cell_params, "process": u.process, "process_cpu": round(u.process_cpu, 1)}
        for metric, value, unit in (("cpu", u.cpu, "%"), ("memory", u.memory, "B"), ("net_rx", u.net_rx, "B/s"),
                                    ("net_tx", u.net_tx, "B/s"), ("blk_read", u.blk_read, "B/s"),
                                    ("blk_write", u.blk_write, "B/s"), ("peak_cpu", u.peak_cpu, "%"),
                                    ("peak_net_rx", u.peak_net_rx, "B/s"), ("peak_net_tx", u.peak_net_tx, "B/s")):
            out.append(Measurement(RESOURCES, u.node, metric, value, unit, params, backend, variant))
    top = busiest(usages, link)
    if top is not None:
        usage, resource, load = top
        text = f"{usage.node}: {load:.0f} % {resource}"
        if resource == "CPU" and usage.process:  # (tools that ended within the cell are not named)
            text += f" ({usage.process} {usage.process_cpu:.0f} %)"
        out.append(Measurement(RESOURCES, "busiest", "load", load, "%", {**cell_params, "busiest": text},
                               backend, variant))
    return out


def table_rows(records: list[Measurement], name: Any) -> list[list[str]]:
    """(workload, cell, system, busiest) for each cell's ``busiest`` record, in the order
    they were recorded; ``name`` gives a system's display name from (backend, variant)."""
    rows = []
    for m in records:
        if m.workload != RESOURCES or m.test != "busiest":
            continue
        cell = describe_cell(m.params, ("for",))
        repeat = f" (repeat {m.repeat + 1})" if m.repeat else ""
        rows.append([str(m.params.get("for")), cell, name((m.backend, m.variant)) + repeat,
                     str(m.params.get("busiest"))])
    return rows


TITLE = "Busiest node and resource per cell"
NOTE = ("each resource at its peak over 2 s within the cell; CPU: 100 % = one core busy "
        "(docker stats), with the process that used most of it over the whole cell; network: "
        "share of the node's link; every node's CPU, memory, network and block I/O (whole cell "
        "and peak) are stored as 'resources' records")
