"""The table of each cell's busiest node and resource, and how busy this machine was (the
``resources`` records of ``harness.execution.sampling``, set against their capacity by
``harness.report.limits``): the busiest is the highest share of a capacity — a share of
cores, of a link, of the raw disk's rate — never a bounded share beside an unbounded
percentage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.api.records import Measurement, cell_order, describe_cell
from harness.api.sampler import HOST, RESOURCES

# what describes a node's record, not the cell it belongs to
ABOUT = ("for", "cores", "process", "process_cpu", "peak_process", "peak_process_cpu", "share", "capacity",
         "started", "ended", "cpus", "disk", "busiest", "role", "serves", "sampled_s")
WHAT = {"cpu": "CPU", "net_rx": "network in", "net_tx": "network out", "blk_read": "disk read",
        "blk_write": "disk write"}


def _cell(m: Measurement) -> tuple[Any, ...]:
    return (m.run_id, m.backend, m.variant, m.repeat, str(m.params.get("for")), describe_cell(m.params, ABOUT))


cell_of = _cell  # (run, backend, variant, repeat, workload, cell): the cell a node's record is of


def describe(params: dict[str, Any]) -> str:
    """The cell a node's record is of, for people (``size=64 MiB``)."""
    return describe_cell(params, ABOUT)


def order(params: dict[str, Any]) -> tuple[Any, ...]:
    """Where the cell a node's record is of sorts, in every table (by value: harness.api.records.cell_order)."""
    return cell_order({k: v for k, v in params.items() if k not in ABOUT})


def top(records: list[Measurement]) -> Measurement | None:
    """The record of the node and resource with the highest share of its capacity."""
    return max((m for m in records if isinstance(m.params.get("share"), (int, float))),
               key=lambda m: m.params["share"], default=None)


def busiest(records: list[Measurement]) -> str:
    """The node and resource with the highest share of its capacity, in words."""
    best = top(records)
    if best is None:
        return ""
    metric = best.metric.removeprefix("peak_")
    text = f"{best.test}: {best.params['share']:.0f} % of {best.params['capacity']} ({WHAT.get(metric, metric)}" \
           + (", at its peak" if best.metric.startswith("peak_") else ", over the cell") + ")"
    if metric == "cpu":
        name, cpu = ((best.params.get("peak_process"), best.params.get("peak_process_cpu"))
                     if best.metric.startswith("peak_") else (best.params.get("process"), best.params.get("process_cpu")))
        if name:
            text += f"; {name} used {cpu:.0f} % of one core then"
    return text


def host_text(records: list[Measurement]) -> str:
    said = {m.metric: m.value for m in records if m.test == HOST and m.value is not None}
    parts = [f"CPUs {said['cpu_busy']:.0f} % busy" if "cpu_busy" in said else "",
             f"disk {said['disk_busy']:.0f} % busy" if "disk_busy" in said else ""]
    return ", ".join(p for p in parts if p)


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    """(workload, cell, system, busiest, this machine) for each cell: its workloads and
    systems in the order they were recorded, its cells by value (:func:`order`); ``name``
    gives a system's display name from (backend, variant)."""
    cells: dict[tuple[Any, ...], list[Measurement]] = {}
    for m in records:
        if m.workload == RESOURCES and m.test not in ("busiest", "cost"):  # (runs of earlier versions stored
            # their own busiest; the cost records are harness.report.cost's)
            cells.setdefault(_cell(m), []).append(m)
    workloads = {w: i for i, w in enumerate(dict.fromkeys(k[4] for k in cells))}
    systems = {s: i for i, s in enumerate(dict.fromkeys(k[1:3] for k in cells))}
    rows = []
    for (_, backend, variant, repeat, workload, cell), found in sorted(
            cells.items(), key=lambda kv: (workloads[kv[0][4]], order(kv[1][0].params), systems[kv[0][1:3]])):
        top, host = busiest(found), host_text(found)
        if top or host:
            rows.append([workload, cell, name((backend, variant)) + (f" (repeat {repeat + 1})" if repeat else ""),
                         top or "—", host or "—"])
    return rows


TITLE = "Busiest node and resource per cell, and this machine"
COLUMNS = ["workload", "cell", "system", "busiest (share of its capacity)", "this machine"]
NOTE = ("each node's resources as a share of their capacity: CPU of the cores it can use (the "
        "container lab's nodes all share this machine's), network of its link, disk of the rate the "
        "raw-storage baseline measured (where the run has one); 'at its peak': over the busiest few "
        "seconds within the cell, else over the whole cell. 'this machine': how busy its CPUs and the "
        "disk under the lab were over the cell — at 90 % or more the cell's records are flagged "
        "host-bound [B]. Every node's figures are stored as 'resources' records")
