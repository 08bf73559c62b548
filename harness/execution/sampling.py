"""What the lab's nodes spent over a cell, as records: every node's resources, and the
cell's busiest node and resource (from a :class:`~harness.api.sampler.Sampler`)."""

from __future__ import annotations

from typing import Any

from harness.api.records import Measurement
from harness.api.sampler import RESOURCES, NodeUsage


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
