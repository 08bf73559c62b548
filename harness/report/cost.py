"""What each GiB a system moved cost its nodes: per system and cell, the CPU time its client
nodes and its own storage nodes used per GiB the cell's clients moved, and the most memory
one of those nodes had in use — as records (workload ``resources``, test ``cost``, metrics
``cpu_s_per_gib`` in s/GiB and ``peak_memory`` in B, param ``side: client|server``), a table
beside the cell's throughput, and a bar chart in the HTML report.

Everything comes from raw figures on one clock: each node's ``cpu_time`` record (what its
CPU counter counted over the cell's sampled window, harness.execution.sampling), and the
``bytes`` of the cell's per-client records (or an aggregate's ``moved``) whose timed phase
lies within that cell. Which nodes count is declared, never guessed: the environment tags
each node with its ``role`` (client or server) and the services it ``serves``; a system's
servers are the nodes of the services its backend requires (``SystemFacts.services``) — a
GlusterFS cell never counts the idle Ceph nodes of the same lab. An environment that
watches only its client hosts gives the client side alone, and the table says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import CIRCUMSTANTIAL, OVER_CLIENTS, Measurement, flag_marks, flag_notes
from harness.api.sampler import CLIENT, HOST, RESOURCES, SERVER
from harness.report import cells, resources
from harness.report.data import figure, flags
from harness.units import format_value, size

GIB = float(1 << 30)
COST = "cost"  # the test of the cost records
METRIC = "cpu_s_per_gib"
SIDES = (CLIENT, SERVER)
# the node records' params that describe the node, not the cell
NODE_PARAMS = frozenset(resources.ABOUT) - {"for"} | {"role", "serves", "sampled_s"}
CARRIED = ("degraded", "host-bound", "not-comparable")  # flags of the moved records a cost keeps


@dataclass(frozen=True)
class Side:
    nodes: tuple[str, ...]
    cpu_s: float  # CPU time the side's nodes used over the cell's sampled window
    peak_memory: float | None  # the most memory one of them had in use at a sample


@dataclass(frozen=True)
class Cost:
    """One cell of one system: what its clients moved, and what each side spent on it."""

    run_id: str
    backend: str
    variant: str
    repeat: int
    workload: str
    cell: dict[str, Any]  # the cell's params (``for``: the workload), as the node records say
    moved: float  # bytes the cell's clients moved
    rates: tuple[tuple[str, float, str], ...]  # (test, value, unit) of the cell's rates, as measured
    sides: dict[str, Side]
    flags: tuple[str, ...] = ()

    def per_gib(self, side: str) -> float | None:
        """CPU-seconds per GiB moved (2^30 bytes) on one side: the CPU time that side's nodes
        used over the cell's sampled window, divided by the GiB the cell's clients moved."""
        found = self.sides.get(side)
        return found.cpu_s / (self.moved / GIB) if found is not None and self.moved > 0 else None


def _identity(m: Measurement) -> str:
    """What tells one client's figure of a cell from another's: its test and its params but
    for how it came about (the metric is left out: a rate and its count moved the same bytes)."""
    return json.dumps([m.test, {k: v for k, v in m.params.items() if k not in CIRCUMSTANTIAL}],
                      sort_keys=True, default=str)


def _within(m: Measurement, start: float, end: float) -> bool:
    s, e = m.params.get("started"), m.params.get("ended")
    return isinstance(s, (int, float)) and isinstance(e, (int, float)) and start <= s and e <= end


def moved(records: list[Measurement]) -> tuple[float, list[Measurement]]:
    """What a cell's clients moved (bytes) and the records that say it: the ``bytes`` of
    each client's rate (B/s) records, one per client and figure; where no client's record
    says, the ``moved`` of the aggregates over the clients. Never a rate times a time."""
    own: dict[str, Measurement] = {}
    over: dict[str, Measurement] = {}
    for m in records:
        if m.unit != "B/s" or m.value is None:
            continue
        if m.params.get("host") in OVER_CLIENTS:
            if isinstance(m.params.get("moved"), (int, float)):
                key = _identity(m)
                if key not in over or m.params["moved"] > over[key].params["moved"]:
                    over[key] = m  # (the span's amount, not the stonewalled window's)
        elif isinstance(m.params.get("bytes"), (int, float)):
            own.setdefault(_identity(m), m)
    if own:
        return float(sum(m.params["bytes"] for m in own.values())), list(own.values())
    return float(sum(m.params["moved"] for m in over.values())), list(over.values())


def costs(records: list[Measurement], services: Callable[[tuple[str, str]], tuple[str, ...]]) -> list[Cost]:
    """Every cell whose nodes' CPU time was counted and whose clients moved bytes, in the
    order the cells were recorded; ``services`` gives the services a system (backend,
    variant) runs on. Nodes whose role was not declared make no cost."""
    spent: dict[cells.Pass, list[Measurement]] = {}
    for m in records:
        if m.workload == RESOURCES and m.test not in (HOST, COST) and m.metric in ("cpu_time", "peak_memory") \
                and m.value is not None and m.params.get("role") in SIDES:
            spent.setdefault(resources.cell_of(m), []).append(m)
    work: dict[cells.Pass, list[Measurement]] = {}  # (each pass's own records: harness.report.cells)
    for m in records:
        if m.workload not in (RESOURCES, FAULT):
            work.setdefault(cells.pass_of(m), []).append(m)
    out = []
    for key, found in spent.items():
        run_id, backend, variant, repeat = key[:4]
        first = found[0]
        workload = str(first.params.get("for"))
        starts = [m.params["started"] for m in found if isinstance(m.params.get("started"), (int, float))]
        ends = [m.params["ended"] for m in found if isinstance(m.params.get("ended"), (int, float))]
        if not starts or not ends:
            continue
        mine = [m for m in work.get(key, []) if _within(m, min(starts), max(ends))]
        amount, said = moved(mine)
        if amount <= 0:
            continue  # nothing moved: no cost per GiB
        theirs = set(services((backend, variant)))
        sides = {}
        for side in SIDES:
            nodes = [m for m in found if m.params.get("role") == side
                     and (side == CLIENT or theirs & set(str(m.params.get("serves") or "").split(",")))]
            cpu = {m.test: m.value for m in nodes if m.metric == "cpu_time"}
            memory = [m.value for m in nodes if m.metric == "peak_memory" and m.value is not None]
            if cpu:
                sides[side] = Side(tuple(sorted(cpu)), float(sum(v for v in cpu.values() if v is not None)),
                                   max(memory) if memory else None)
        if not sides:
            continue
        cell = {k: v for k, v in first.params.items() if k not in NODE_PARAMS and k not in ("started", "ended")}
        rates = tuple((m.test, float(m.value), m.unit) for m in _shown_rates(mine) if m.value is not None)
        flags = tuple(f for f in CARRIED if any(f in m.flags for m in said))
        out.append(Cost(run_id, backend, variant, repeat, workload, cell, amount, rates, sides, flags))
    return out


def _shown_rates(records: list[Measurement]) -> list[Measurement]:
    """The cell's throughput as its table shows it: per test, the aggregate over the clients
    where several ran, else the one client's rate (no client's alone stands for the cell)."""
    found: dict[str, tuple[int, Measurement]] = {}
    for m in records:
        if m.metric != "throughput" or m.unit != "B/s" or m.value is None:
            continue
        host = m.params.get("host")
        rank = 0 if host in OVER_CLIENTS else 1 if host is None else 2
        if rank < 2 and (m.test not in found or rank < found[m.test][0]):
            found[m.test] = (rank, m)
    return [m for _, m in found.values()]


def cost_records(found: list[Cost]) -> list[Measurement]:
    """The costs as records: per cell and side, ``cpu_s_per_gib`` (s/GiB) and ``peak_memory`` (B)."""
    out = []
    for c in found:
        for side, s in c.sides.items():
            params = {**c.cell, "side": side, "nodes": ",".join(s.nodes), "cpu_s": round(s.cpu_s, 3),
                      "moved": c.moved}
            value = c.per_gib(side)
            if value is not None:
                out.append(Measurement(RESOURCES, COST, METRIC, value, "s/GiB", params, c.backend, c.variant,
                                       c.run_id, c.repeat, c.flags))
            if s.peak_memory is not None:
                out.append(Measurement(RESOURCES, COST, "peak_memory", s.peak_memory, "B", params, c.backend,
                                       c.variant, c.run_id, c.repeat, c.flags))
    return out


TITLE = "What each GiB cost: CPU time per GiB moved, on the clients and on the system's servers"
COLUMNS = ["workload", "cell", "system", "throughput", "moved", "client CPU-s/GiB", "server CPU-s/GiB",
           "client peak memory", "server peak memory"]
NOTE = ("CPU-s/GiB: the CPU time the side's nodes used over the cell's sampled window (from their CPU "
        "counters), divided by the GiB (2^30 B) the cell's clients moved (the bytes of their own records). "
        "'server': the storage nodes of the system under test only (a lab's nodes of another system are not "
        "counted); the work a cell does besides moving data (its set-up, cache drops, a remount) is in the "
        "window too. Peak memory: the most one node of the side had in use at a sample (page cache not "
        "counted). The figures of each side are stored as 'resources' records, test 'cost'")
NOT_SAMPLED = "not sampled"
SERVERS_UNSEEN = ("'not sampled': the environment watched only its client hosts (an existing cluster's "
                  "storage nodes are not reachable), so only the client side's cost is known")


def _rates_text(c: Cost) -> str:
    return "; ".join(f"{test} {format_value(v, unit)}" for test, v, unit in c.rates) or "—"


def _side_text(c: Cost, side: str) -> tuple[str, str]:
    s = c.sides.get(side)
    if s is None:
        return NOT_SAMPLED, NOT_SAMPLED
    value = c.per_gib(side)
    return (f"{value:.2f} ({len(s.nodes)} node{'s' if len(s.nodes) != 1 else ''})" if value is not None else "—",
            size(s.peak_memory) if s.peak_memory is not None else "—")


def _ordered(found: list[Cost], name: Callable[[tuple[str, str]], str]) -> list[Cost]:
    return sorted(found, key=lambda c: (c.workload, resources.order(c.cell), name((c.backend, c.variant)),
                                        c.run_id, c.repeat))


def table(found: list[Cost], name: Callable[[tuple[str, str]], str]) -> tuple[list[list[str]], list[str]]:
    """The cost table's rows and notes."""
    rows: list[list[str]] = []
    seen: set[str] = set()
    for c in _ordered(found, name):
        cpu_c, mem_c = _side_text(c, CLIENT)
        cpu_s, mem_s = _side_text(c, SERVER)
        cell = resources.describe(c.cell)
        rows.append([c.workload, cell, name((c.backend, c.variant)) + (f" (repeat {c.repeat + 1})" if c.repeat else ""),
                     _rates_text(c) + flag_marks(c.flags), size(c.moved), cpu_c, cpu_s, mem_c, mem_s])
        seen.update(c.flags)
    notes = [NOTE] + ([SERVERS_UNSEEN] if any(SERVER not in c.sides for c in found) else []) + flag_notes(seen)
    return rows, notes


KEYS = ("workload", "cell", "system", "throughput", "moved", "client_cpu_s_per_gib", "server_cpu_s_per_gib",
        "client_peak_memory", "server_peak_memory")


def table_data(found: list[Cost], name: Callable[[tuple[str, str]], str]) -> list[dict[str, Any]]:
    """The cost table's rows as data (harness.report.data), in its order: CPU-seconds per
    GiB moved and peak memory in B per side ('not sampled' where the side was not), what
    the clients moved in B, the cell's rates each in its unit."""
    rows = []
    for c in _ordered(found, name):
        row: dict[str, Any] = {
            "workload": c.workload, "cell": resources.describe(c.cell), "system": name((c.backend, c.variant)),
            "backend": c.backend, "variant": c.variant, "run": c.run_id, "repeat": c.repeat,
            "throughput": [{"test": test, **figure(v, unit)} for test, v, unit in c.rates],
            "moved": figure(c.moved, "B"), "flags": flags(c.flags)}
        for side in SIDES:
            s = c.sides.get(side)
            row[f"{side}_cpu_s_per_gib"] = figure(c.per_gib(side), "s/GiB", NOT_SAMPLED if s is None else "nothing moved",
                                                  **({"nodes": list(s.nodes)} if s is not None else {}))
            row[f"{side}_peak_memory"] = figure(s.peak_memory if s is not None else None, "B",
                                                NOT_SAMPLED if s is None else "not measured")
        rows.append(row)
    return rows


def medians(found: Sequence[Cost], key: tuple[str, str]) -> list[tuple[str, dict[str, float | None]]]:
    """Per workload of one system, the median of its cells' CPU-seconds per GiB on each
    side (None: that side has no figure)."""
    from harness.report.stats import median

    mine = [c for c in found if (c.backend, c.variant) == key]
    out = []
    for workload in dict.fromkeys(c.workload for c in mine):
        theirs = [c for c in mine if c.workload == workload]
        per_side: dict[str, float | None] = {}
        for side in SIDES:
            values = [v for c in theirs for v in [c.per_gib(side)] if v is not None]
            per_side[side] = median(values) if values else None
        out.append((workload, per_side))
    return out


def sentence(found: list[Cost], key: tuple[str, str]) -> str:
    """What a GiB cost one system, per workload: 'largefile 1.90 CPU-s/GiB on the clients,
    0.70 on the servers' (the median of its cells' own figures), or '' where it has none."""
    parts = []
    for workload, per_side in medians(found, key):
        said: list[str] = []
        for side, words in ((CLIENT, "on the clients"), (SERVER, "on the servers")):
            value = per_side[side]
            if value is not None:
                said.append(f"{value:.2f}{' CPU-s/GiB' if not said else ''} {words}")
            elif side == SERVER:
                said.append("servers not sampled")
        parts.append(f"{workload} " + ", ".join(said))
    return "; ".join(parts)


def chart(found: list[Cost], name: Callable[[tuple[str, str]], str]) -> dict[str, Any] | None:
    """Bars per cell: each system's CPU-s/GiB on its clients and on its servers."""
    if not found:
        return None
    labels = list(dict.fromkeys(f"{c.workload} {resources.describe(c.cell)}".strip()
                                for c in sorted(found, key=lambda c: (c.workload, resources.order(c.cell)))))
    from harness.report.stats import median

    series: dict[str, list[list[float]]] = {}
    for c in found:
        at = labels.index(f"{c.workload} {resources.describe(c.cell)}".strip())
        for side in SIDES:
            value = c.per_gib(side)
            if value is not None:
                who = f"{name((c.backend, c.variant))}, {'clients' if side == CLIENT else 'servers'}"
                series.setdefault(who, [[] for _ in labels])[at].append(value)
    return {"kind": "cost", "title": "CPU time per GiB moved, per cell (median over repeats)", "x": labels,
            "series": [{"name": k, "y": [median(v) if v else None for v in ys]} for k, ys in series.items()],
            "unit": "CPU-s/GiB"}
