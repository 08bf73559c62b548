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
from harness.report import cells
from harness.report.data import figure

# what describes a node's record, not the cell it belongs to
ABOUT = ("for", "cores", "process", "process_cpu", "peak_process", "peak_process_cpu", "share", "capacity",
         "started", "ended", "cpus", "disk", "busiest", "role", "serves", "sampled_s")
WHAT = {"cpu": "CPU", "net_rx": "network in", "net_tx": "network out", "blk_read": "disk read",
        "blk_write": "disk write"}


# the share of its capacity (over a pass, not at its peak) at which a node of another system
# counts as busy: the lab was shared with it during the pass (flag 'contended')
CONTENDED = 10.0


def cell_of(m: Measurement) -> cells.Pass:
    """The pass a node's record is of (:func:`harness.report.cells.pass_of`)."""
    return cells.pass_of(m)


def contention(found: list[Measurement], theirs: tuple[str, ...], declared: cells.Roles) -> list[Measurement]:
    """Of one pass's node records, those of another system's nodes (not a client, nor a
    storage node of ``theirs``) at ``CONTENDED`` % of a capacity or more over the pass, the
    busiest first."""
    return sorted((m for m in found if cells.is_node(m) and not m.metric.startswith("peak_")
                   and isinstance(m.params.get("share"), (int, float)) and m.params["share"] >= CONTENDED
                   and not cells.own(m, theirs, declared)), key=lambda m: -m.params["share"])


def contended_text(found: list[Measurement]) -> str:
    """Another system's busy nodes in a pass, in words (the busiest of each node)."""
    seen: dict[str, Measurement] = {}
    for m in found:
        seen.setdefault(m.test, m)
    return "; ".join(f"{m.test}: {m.params['share']:.0f} % of {m.params['capacity']} "
                     f"({WHAT.get(m.metric, m.metric)})" for m in seen.values())


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


def own_nodes(found: list[Measurement], theirs: tuple[str, ...], declared: cells.Roles) -> list[Measurement]:
    """Of a pass's node records, those of the system's own nodes (the clients and its storage
    nodes: :func:`harness.report.cells.own`): what its busiest is chosen among."""
    return [m for m in found if cells.is_node(m) and cells.own(m, theirs, declared)]


def table(records: list[Measurement], name: Callable[[tuple[str, str]], str],
          services: Callable[[tuple[str, str]], tuple[str, ...]] = lambda key: ()
          ) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """The table's rows (:func:`table_rows`) and each row as data (harness.report.data):
    the busiest node's share in % of its capacity, another system's busy nodes, and this
    machine's CPUs and disk busy in %."""
    declared = cells.roles(records)
    passes: dict[cells.Pass, list[Measurement]] = {}
    for m in records:
        if m.workload == RESOURCES and m.test not in ("busiest", "cost"):  # (runs of earlier versions stored
            # their own busiest; the cost records are harness.report.cost's)
            passes.setdefault(cell_of(m), []).append(m)
    workloads = {w: i for i, w in enumerate(dict.fromkeys(str(f[0].params.get("for")) for f in passes.values()))}
    systems = {s: i for i, s in enumerate(dict.fromkeys(k[1:3] for k in passes))}
    rows: list[list[str]] = []
    found_data: list[dict[str, Any]] = []
    for (_, backend, variant, repeat, _, _), found in sorted(
            passes.items(), key=lambda kv: (workloads[str(kv[1][0].params.get("for"))], order(kv[1][0].params),
                                            systems[kv[0][1:3]])):
        theirs = services((backend, variant))
        best = top(own_nodes(found, theirs, declared))
        text, host = busiest(own_nodes(found, theirs, declared)), host_text(found)
        busy = contention(found, theirs, declared)
        others = contended_text(busy)
        if not (text or host or others):
            continue
        rows.append([str(found[0].params.get("for")), describe(found[0].params),
                     name((backend, variant)) + (f" (repeat {repeat + 1})" if repeat else ""),
                     text or "—", f"{others} [L]" if others else "—", host or "—"])
        said = {m.metric: m.value for m in found if m.test == HOST and m.value is not None}
        found_data.append({
            "workload": rows[-1][0], "cell": rows[-1][1], "system": rows[-1][2], "backend": backend,
            "variant": variant, "repeat": repeat, "phase": found[0].params.get("phase"),
            "busiest": _node_data(best, rows[-1][3]),
            "contended": [_node_data(m, "") for m in busy],
            "this_machine": {"cpu_busy": figure(said.get("cpu_busy"), "%", "not sampled"),
                             "disk_busy": figure(said.get("disk_busy"), "%", "not sampled"), "text": rows[-1][5]}})
    return rows, found_data


def _node_data(m: Measurement | None, text: str) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"node": m.test, "resource": m.metric.removeprefix("peak_"), "at_its_peak": m.metric.startswith("peak_"),
            "share": figure(m.params.get("share"), "%"), "capacity": str(m.params.get("capacity")),
            **({"text": text} if text else {})}


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str],
               services: Callable[[tuple[str, str]], tuple[str, ...]] = lambda key: ()) -> list[list[str]]:
    """(workload, cell, system, busiest, another system's busy nodes, this machine) for each
    pass: its workloads and systems in the order they were recorded, its cells by value
    (:func:`order`); ``name`` gives a system's display name from (backend, variant),
    ``services`` the services it runs on. The busiest is chosen among the clients and the
    system's own storage nodes."""
    return table(records, name, services)[0]


TITLE = "Busiest node and resource per cell, and this machine"
COLUMNS = ["workload", "cell", "system", "busiest (share of its capacity)", "another system's busy nodes",
           "this machine"]
NOTE = ("each node's resources as a share of their capacity: CPU of the cores it can use (the "
        "container lab's nodes all share this machine's), network of its link, disk of the rate the "
        "raw-storage baseline measured (where the run has one); 'at its peak': over the busiest few "
        "seconds within the cell, else over the whole cell; the busiest is one of the clients or of the system's own storage nodes (as the environment declares each node's role; a node that declared none counts as the system's own). 'another system's busy nodes': a node of another system on the same lab at 10 % of a capacity or more over the cell — the lab was shared (another run, or that system's own work), and the cell's records are flagged contended [L]. 'this machine': how busy its CPUs and the "
        "disk under the lab were over the cell — at 90 % or more the cell's records are flagged "
        "host-bound [B]. Every node's figures are stored as 'resources' records")
