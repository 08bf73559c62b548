"""What the lab's nodes, and this machine under them, spent over a cell, as records
(workload ``resources``): per node (test: its name) cpu and peak_cpu (% of one core),
memory (B), net_rx, net_tx, blk_read, blk_write and their peaks (B/s), with the cores it
can use and the process that used the most CPU; and, where every node runs on this
machine, ``host``: cpu_busy and disk_busy (% of this machine's CPUs and of the time its
disk was busy). The view sets each against its capacity (``harness.report.limits``)."""

from __future__ import annotations

from typing import Any

from harness.api.records import Measurement
from harness.api.sampler import HOST, RESOURCES, NodeUsage
from harness.api.series import Series
from harness.execution.group import Group
from harness.system import load


def records(usages: list[NodeUsage], group: Group) -> list[Measurement]:
    """Every node's records of one cell (of its ``group``); ``params`` name the cell
    (``for``) and its values."""
    cell_params = {"for": group.workload, **group.params}
    out = []
    for u in usages:
        params = {**cell_params, "cores": u.cores, "process": u.process, "process_cpu": round(u.process_cpu, 1),
                  "peak_process": u.peak_process, "peak_process_cpu": round(u.peak_process_cpu, 1),
                  **_declared(u)}
        for metric, value, unit in (("cpu", u.cpu, "%"), ("memory", u.memory, "B"), ("net_rx", u.net_rx, "B/s"),
                                    ("net_tx", u.net_tx, "B/s"), ("blk_read", u.blk_read, "B/s"),
                                    ("blk_write", u.blk_write, "B/s"), ("peak_cpu", u.peak_cpu, "%"),
                                    ("peak_net_rx", u.peak_net_rx, "B/s"), ("peak_net_tx", u.peak_net_tx, "B/s")):
            out.append(Measurement(RESOURCES, u.node, metric, value, unit, params, group.backend, group.variant,
                                   series=over_time(u, metric)))
        out += spent_records(u, params, group)
    return out


def spent_records(u: NodeUsage, params: dict[str, Any], group: Group) -> list[Measurement]:
    """A node's totals over the cell's sampled window, where the sampler counted them:
    ``cpu_time`` (s, from its CPU counter) and ``peak_memory`` (B); with what the environment
    declared the node is (``role``: client or server; ``serves``: the services of a storage
    node, comma-joined) and how long the window was (``sampled_s``) — what the cost of a
    system is computed from (harness.report.cost)."""
    said = {**params, **_declared(u), "sampled_s": round(u.seconds, 3)}
    return [Measurement(RESOURCES, u.node, metric, value, unit, said, group.backend, group.variant)
            for metric, value, unit in (("cpu_time", u.cpu_seconds, "s"), ("peak_memory", u.peak_memory, "B"))
            if value is not None]


def _declared(u: NodeUsage) -> dict[str, str]:
    """What the environment declared the node is, on each of its records: ``role`` (client or
    server) and, for a storage node, the services it ``serves`` (comma-joined) — which tells a
    node of the system under test from another system's on a shared lab."""
    return {"role": u.role.side if u.role else "", "serves": ",".join(u.role.serves) if u.role else ""}


SAMPLED = {"cpu": 2, "net_rx": 3, "net_tx": 4}  # the metrics kept over time: their place in a point


def over_time(u: NodeUsage, metric: str) -> Series | None:
    """A node's figure between each two consecutive samples (``samples``), where it has one."""
    column = SAMPLED.get(metric)
    if column is None or not u.points:
        return None
    return Series(tuple((p[0], p[column]) for p in u.points), u.points[-1][1], "samples")


def host_records(before: load.Snapshot, after: load.Snapshot, disk: str | None, group: Group) -> list[Measurement]:
    """This machine over one cell (of its ``group``): how busy its CPUs and the lab's disk were."""
    cpu, disk_busy = load.busy(before, after)
    params = {"for": group.workload, **group.params, "cpus": after.cpus, "disk": disk or "",
              "started": round(before.at, 6), "ended": round(after.at, 6)}
    out = [Measurement(RESOURCES, HOST, "cpu_busy", cpu, "%", params, group.backend, group.variant)]
    if disk_busy is not None:
        out.append(Measurement(RESOURCES, HOST, "disk_busy", disk_busy, "%", params, group.backend, group.variant))
    return out
