"""Physical limits and hygiene, decided once for every record a view shows.

Each run knows the limits of the path to each system: the client's network (declared in
the config as ``limits.network``; else the link a lab shaped, stored with the target as
``link`` — and ``links`` per client host where one was shaped differently; else measured
by the run's network baseline — iperf3 — when that crossed a real network, never
loopback) and its RAM (declared ``limits.client_ram``, else the memory of the client host
that ran the record, else this machine's). With the backend's declared facts (does its
path cross a network, how many times does a written byte cross the client's link, how
many bytes are kept per byte written, over how many storage nodes):

- The ceiling of a throughput is the least of two bounds on what its path can carry:
  the client side — the links of the clients the record stands for (one, or every client
  of an aggregate), each divided by the copies its client sends of a written byte (a
  replica-3 GlusterFS FUSE client sends it to every replica: link/3; a Ceph client once,
  to the primary OSD); and the server side — with S storage nodes keeping R bytes per byte
  written, each node takes in R/S of every written byte, so writes stay under S × link / R
  and reads under S × link, whatever the number of clients. While a storage node is down
  (from a fault's injection to its restore) a client that sends every copy itself sends
  one per live node, (S-1)/S of them, and reads come from S-1 nodes; once it is back the
  client sends every copy again, though the system may still be healing. A record's
  ceiling is the bound averaged over its own interval (``started`` to ``ended``): what the
  path could have carried then, over that time. Tables show a cell's share of it.
- ``exceeds-network``: a throughput through a network path above its ceiling — a cache
  (write-behind, the client's page cache) answered, not the storage; on a stonewalled
  aggregate also where one client's part of it is above that client's own ceiling.
- ``degraded``: a record whose interval overlaps a fault of its cell, from the injection
  to the moment the system's health check passed again (or the end, if it never did).
- ``fits-in-cache``: a cell run in cached mode (``direct: false``) whose file is smaller
  than the RAM of the client that ran it (of an aggregate: the smallest of its clients').
- ``write-behind``: an O_DIRECT write (``direct: true``) through a system whose client
  acknowledges writes from a buffer of its own until a close or an fsync
  (``SystemFacts.write_behind``): it measured that buffer.
- ``no-cache-drop``: a read whose record says the caches were not dropped first.
- ``host-bound``: a record whose interval overlaps a cell during which this machine's CPUs,
  or the disk under the lab, were at least :data:`HOST_BOUND` percent busy over the cell —
  where every node of the lab runs on this one machine, that measured the machine.
- Each node's resources are set against their capacity (``params['share']``, percent, and
  ``params['capacity']``): CPU against the cores the node can use (``cores``; all of a
  container lab's nodes share this machine's), the network against the node's link, the
  disk against the rate the run's raw-storage baseline measured, where there is one.
- ``page-cache-kept``: a read after a remount whose kernel page cache could not be dropped
  (a container client): said, not held against the verdict; not where another client than
  the writer read (``other-client``), whose page cache never held the data.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from harness.api import registry
from harness.api.contracts import Workload
from harness.api.faults import FAULT
from harness.api.records import OVER_CLIENTS, Measurement, params_keys
from harness.api.sampler import HOST, RESOURCES
from harness.api.tables import SystemFacts
from harness.api.target import OTHER_CLIENT
from harness.report import cells, resources
from harness.report.stats import median
from harness.results.schema import RunInfo
from harness.system.files import printable
from harness.units import parse_rate, parse_size, rate

# the steps of a cache drop (as workloads record them, e.g. "sync+remount+drop_caches")
# that leave no cache between the client and the storage; "other-client": another client
# host than the writer read it (harness.api.target.OTHER_CLIENT), whose caches never saw it
DROPPING_STEPS = frozenset({"drop_caches", "remount", "reboot", "O_DIRECT", OTHER_CLIENT})
# a FUSE client that dfsbench did not mount (and so cannot remount) kept its own cache
KEPT_STEP = "client-cache-kept"

Window = tuple[float, float]  # (start, end), seconds since the epoch
HOST_BOUND = 90.0  # percent busy over a cell at which this machine's CPUs or disk were its limit


@dataclass(frozen=True)
class PathLimits:
    network: float | None  # B/s: each client's link, unless ``links`` names it
    network_source: str  # "declared", the network baseline that measured it (iperf3), or ""
    client_ram: float | None  # bytes, declared
    facts: SystemFacts
    note: str = ""  # why there is no network limit, where that is worth saying
    links: dict[str, float] = field(default_factory=dict)  # client host → its own link (B/s)
    memory: dict[str, float] = field(default_factory=dict)  # client host → its RAM (bytes)
    client: str = ""  # the client host of the run's one-client cells
    clients: tuple[str, ...] = ()  # every client host of the target, where their facts are known
    this_machine: float | None = None  # its RAM (bytes): the client where no client host is named

    def link_of(self, host: str) -> float | None:
        return self.links.get(host, self.network) if self.network is not None else None

    def at(self, m: Measurement) -> PathLimits:
        """The limits a record was measured under: where a sweep shaped every node's link
        to a rate of its point (the record's ``link`` param), that link — unless the config
        declared the network, which wins everywhere."""
        swept = m.params.get("link")
        if not isinstance(swept, str) or self.network_source == "declared" or self.network is None:
            return self
        try:
            link = float(parse_rate(swept))
        except ValueError:  # (a damaged or foreign param: the target's link stands)
            return self
        if not 0 < link < math.inf:
            return self
        return replace(self, network=link, network_source="the sweep point's shaped link", links={})

    def ceiling(self, write: bool, hosts: tuple[str, ...] = ("",), down: int = 0) -> float | None:
        """The least of the client-side and the server-side bound (B/s) for a record of
        these client hosts, with ``down`` storage nodes down (see the module)."""
        f = self.facts
        if self.network is None or not f.network:
            return None
        nodes = f.storage_nodes
        live = max(nodes - down, 0)
        copies = f.write_copies if write else 1.0
        if write and f.client_fanout and down and nodes:
            copies *= live / nodes  # (one copy fewer to send per node that is down)
        client = sum(self.link_of(h) or 0.0 for h in hosts) / max(copies, 1e-9)
        if not nodes:
            return client
        # (a write with a node down keeps R·live/S copies on live nodes: the same bound)
        server = (nodes * self.network / (f.taken_in or f.stored_copies)) if write else live * self.network
        return min(client, server)

    def ram_of(self, host: str) -> float | None:
        """The RAM of the client that ran a record: declared, else its host's (of an
        aggregate, ``all``: the smallest of the clients'), else this machine's (where the
        client ran)."""
        if self.client_ram:
            return self.client_ram
        if host == "all" and self.memory:
            return min(self.memory.values())
        return self.memory.get(host or self.client) or self.this_machine


def is_write(m: Measurement) -> bool:
    """Whether a record measures writing, as its workload declares (a workload this
    installation lacks: its test is 'write')."""
    cls = _workload(m.workload)
    return cls.is_write(m) if cls is not None else m.test == "write"


@cache
def _workload(name: str) -> type[Workload] | None:
    return registry.find("workload", name)


def caches_dropped(how: object) -> bool:
    """Whether a recorded cache-drop description means the caches were gone: one of its
    '+'-separated steps must be a dropping step ('sync+no-drop_caches' is not)."""
    steps = {step.strip() for step in str(how or "").split("+")}
    return bool(steps & DROPPING_STEPS) and KEPT_STEP not in steps


def role(workload: str) -> str | None:
    if workload in (RESOURCES, FAULT):  # about the lab's nodes: never held against a limit
        return workload
    cls = _workload(workload)
    return cls.baseline if cls is not None else None


def path_limits(info: RunInfo, records: list[Measurement]) -> dict[tuple[str, str], PathLimits]:
    declared = (info.config.get("limits") or {}) if isinstance(info.config, dict) else {}
    ram = declared.get("client_ram")
    client_ram = float(parse_size(ram)) if ram else None
    this_machine = float(info.host.get("memory") or 0) or None
    out = {}
    network_probes: dict[tuple[str, str], list[Measurement]] | None = None
    for key in info.targets:
        facts = info.systems.get(key) or SystemFacts(key[0])
        described = info.targets.get(key) or {}
        network, source, note = None, "", ""
        link = described.get("link")
        links: dict[str, float] = {}
        if declared.get("network"):
            network, source = parse_rate(declared["network"]), "declared"
        elif isinstance(link, (int, float)) and link > 0:  # the lab shaped every node's link so
            network, source = float(link), "the lab's shaped link"
            links = {str(h): float(v) for h, v in (described.get("links") or {}).items()
                     if isinstance(v, (int, float)) and v > 0}
        else:
            if network_probes is None:  # (once for every system: one pass over the records)
                network_probes = {}
                for m in records:
                    if m.metric == "throughput" and m.value and role(m.workload) == "network":
                        network_probes.setdefault((m.backend, m.variant), []).append(m)
            probes = network_probes.get(key, [])
            real = [m for m in probes if not m.params.get("loopback") and m.value is not None]
            if real:  # measured by the run's network baseline (a workload with that role)
                network = median([m.value for m in real if m.value is not None])
                source = ", ".join(sorted({m.workload for m in real}))
            elif probes:
                note = "no network between client and servers (loopback): no network limit applies"
        hosts = described.get("client_facts") or {}
        memory = {str(h): float(f["memory"]) for h, f in hosts.items()
                  if isinstance(f, dict) and isinstance(f.get("memory"), (int, float)) and f["memory"] > 0}
        out[key] = PathLimits(network, source, client_ram, facts, note, links, memory,
                              str(described.get("client_host") or ""), tuple(sorted(memory)), this_machine)
    return out


@dataclass(frozen=True)
class FaultWindows:
    down: list[Window] = field(default_factory=list)  # a node down: injection to restore
    whole: list[Window] = field(default_factory=list)  # the system not whole: injection to healthy


def fault_windows(records: list[Measurement]) -> dict[tuple[str, str, str, int], FaultWindows]:
    """Per (run, backend, variant, repeat): each fault's windows — its node down, from the
    injection to the restore, and the system not whole, to its healthy moment (no end:
    never)."""
    out: dict[tuple[str, str, str, int], FaultWindows] = {}
    for m in records:
        if m.workload != FAULT:
            continue
        start = m.params.get("injected")
        if not isinstance(start, (int, float)):
            continue
        restored, healthy = m.params.get("restored"), m.params.get("healthy")
        windows = out.setdefault((m.run_id, m.backend, m.variant, m.repeat), FaultWindows())
        if m.params.get("stores_data") is not False:  # (a monitor down leaves every copy in place)
            windows.down.append((float(start), float(restored) if isinstance(restored, (int, float)) else math.inf))
        windows.whole.append((float(start), float(healthy) if isinstance(healthy, (int, float)) else math.inf))
    return out


def host_windows(records: list[Measurement]) -> dict[tuple[str, str, str, int], list[Window]]:
    """Per (run, backend, variant, repeat): the cells during which this machine's CPUs or the
    lab's disk were at least HOST_BOUND percent busy."""
    out: dict[tuple[str, str, str, int], list[Window]] = {}
    for m in records:
        if m.workload == RESOURCES and m.test == HOST and m.value is not None and m.value >= HOST_BOUND:
            span = _interval(m)
            if span is not None:
                out.setdefault((m.run_id, m.backend, m.variant, m.repeat), []).append(span)
    return out


def raw_rates(records: list[Measurement]) -> dict[tuple[str, str], float]:
    """Per run and direction (read, write): what the raw-storage baseline measured (B/s)."""
    found: dict[tuple[str, str], list[float]] = {}
    for m in records:
        if m.unit == "B/s" and m.value and role(m.workload) == "storage":
            found.setdefault((m.run_id, "write" if is_write(m) else "read"), []).append(m.value)
    return {k: median(v) for k, v in found.items()}


def capacity(m: Measurement, lim: PathLimits | None, raw: dict[tuple[str, str], float],
             cpus: int) -> tuple[float, str] | None:
    """A node's resource record against its capacity: (share in percent, what the capacity
    is), or None where it has none known (memory; a disk without a baseline)."""
    metric = m.metric.removeprefix("peak_")
    value = m.value or 0.0
    if metric == "cpu":
        cores = m.params.get("cores") or cpus
        return (value / cores, f"{cores} cores") if cores else None
    if metric in ("net_rx", "net_tx") and lim is not None:
        link = lim.link_of(m.test)
        return (100 * value / link, f"its link {rate(link)}") if link else None
    if metric in ("blk_read", "blk_write"):
        base = raw.get((m.run_id, "read" if metric == "blk_read" else "write"))
        return (100 * value / base, f"the raw disk's {rate(base)}") if base else None
    return None


def _interval(m: Measurement) -> Window | None:
    """When a record's value was measured: its timed phase, or for a stonewalled rate the
    window in which all its clients ran."""
    window = m.params.get("stonewall")
    started, ended = window if isinstance(window, list) and len(window) == 2 else \
        (m.params.get("started"), m.params.get("ended"))
    if isinstance(started, (int, float)) and isinstance(ended, (int, float)) and ended >= started:
        return float(started), float(ended)
    return None


def _hosts(m: Measurement, lim: PathLimits) -> tuple[str, ...]:
    """The client hosts whose links a record's traffic crossed: every client of the target
    for an aggregate (``host: all`` or a tool's ``total``, ``clients: N``), else its own."""
    host = m.params.get("host")
    clients = m.params.get("clients")
    if host in OVER_CLIENTS and isinstance(clients, int) and clients > 1:
        named = lim.clients if len(lim.clients) == clients else ()
        return named or tuple(f"client {i + 1}" for i in range(clients))
    return (str(host or m.params.get("read_on") or lim.client or ""),)


def record_ceiling(lim: PathLimits, m: Measurement, windows: list[Window]) -> float | None:
    """The ceiling over the record's interval: the bound at each moment (a node down within
    one of ``windows``, each from a fault's injection to its restore), averaged over the
    time from its start to its end."""
    hosts = _hosts(m, lim)
    write = is_write(m)
    healthy = lim.ceiling(write, hosts)
    span = _interval(m)
    if healthy is None or span is None or not windows:
        return healthy
    start, end = span
    if end <= start:
        down = any(w0 <= start < w1 for w0, w1 in windows)
        return lim.ceiling(write, hosts, 1) if down else healthy
    degraded = lim.ceiling(write, hosts, 1) or healthy
    inside = sum(max(0.0, min(end, w1) - max(start, w0)) for w0, w1 in windows)
    inside = min(inside, end - start)
    return (healthy * (end - start - inside) + degraded * inside) / (end - start)


def _one_client_exceeds(lim: PathLimits, m: Measurement, windows: list[Window]) -> bool:
    """Whether a stonewalled rate counts, for one of its clients, more than that client's
    path could carry in the window (a write counted as it returned, which its client's
    write-behind answered): then a cache answered within the figure, as above a ceiling."""
    each, window = m.params.get("moved_each"), m.params.get("stonewall")
    if not isinstance(each, dict) or not isinstance(window, list) or len(window) != 2 or \
            not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in window) or window[1] <= window[0]:
        return False  # (no window of its own: a foreign or damaged record's, nothing to hold it to)
    seconds = float(window[1]) - float(window[0])
    for host, moved in each.items():
        one = replace(m, params={**m.params, "host": host, "clients": 1, "started": window[0], "ended": window[1]})
        ceiling = record_ceiling(lim, one, windows)
        if ceiling is not None and isinstance(moved, (int, float)) and moved / seconds > ceiling:
            return True
    return False


def overlaps(m: Measurement, windows: list[Window]) -> bool:
    span = _interval(m)
    return span is not None and any(span[0] < w1 and span[1] > w0 for w0, w1 in windows)


def annotate(records: list[Measurement], infos: dict[str, RunInfo]) -> list[Measurement]:
    """The records with the flags their run's limits and faults call for, and the ceiling
    of each throughput as ``params['ceiling']`` (B/s).

    Decided once per cell and kind of record: the records of one system, workload, test,
    metric, unit, flags and params but the circumstantial ones (its repeats), which also
    share what of their circumstances is read here — how the caches were dropped; each
    client's part of a stonewalled rate; and where a fault or a saturated host makes when
    a record ran matter, its repeat and interval. A workload's ``is_write`` is a property
    of the cell (harness.api.contracts). Each record's own value is then held to its
    cell's ceiling, and a node's resource to its capacity, record by record."""
    by_run: dict[str, list[Measurement]] = {}
    for m in records:
        by_run.setdefault(m.run_id, []).append(m)
    limits = {run_id: path_limits(info, by_run.get(run_id, [])) for run_id, info in infos.items()}
    faults = fault_windows(records)
    saturated = host_windows(records)
    raw = raw_rates(records)
    roles = {name: role(name) for name in {m.workload for m in records}}
    windowed = {k[:3] for k in faults} | {k[:3] for k in saturated}
    cell_of = params_keys()
    groups: dict[tuple[Any, ...], tuple[float | None, bool, tuple[str, ...], tuple[str, ...]]] = {}
    with_ceiling: dict[tuple[int, float], tuple[dict[str, Any], dict[str, Any]]] = {}
    out = []
    cpus = {run_id: int(info.host.get("cpus") or 0) for run_id, info in infos.items()}
    for m in records:
        system = (m.run_id, m.backend, m.variant)
        p = m.params
        key = (cell_of(m), m.flags, m.workload, m.test, m.metric, m.unit, system, m.value is None,
               repr(p["cache"]) if "cache" in p else (),
               (m.repeat, p.get("started"), p.get("ended"), repr(p.get("stonewall"))) if system in windowed else None,
               repr((p.get("moved_each"), p.get("stonewall"))) if "moved_each" in p else None)
        found = groups.get(key)
        if found is None:
            lim = limits.get(m.run_id, {}).get((m.backend, m.variant))
            lim = lim.at(m) if lim is not None else None
            where = (m.run_id, m.backend, m.variant, m.repeat)
            windows = faults.get(where, FaultWindows())
            ceiling, one_exceeds = _ceiling(m, lim, windows, roles[m.workload])
            within, above = (_flags(m, lim, windows, saturated.get(where, []), roles[m.workload], ceiling, exceeds)
                             for exceeds in (False, True))
            found = groups[key] = (ceiling, one_exceeds, within, above)
        ceiling, one_exceeds, within, above = found
        exceeds = ceiling is not None and m.value is not None and (m.value > ceiling or one_exceeds)
        flags = above if exceeds else within
        params = p
        if ceiling is not None and m.value is not None:
            held = with_ceiling.get((id(p), ceiling))
            if held is None or held[0] is not p:  # (the metrics of a tool run share their params, and so their copy)
                held = with_ceiling[(id(p), ceiling)] = (p, {**p, "ceiling": ceiling})
            params = held[1]
        if m.workload == RESOURCES and m.test != HOST and m.value is not None:  # (its share: of its own value)
            lim = limits.get(m.run_id, {}).get((m.backend, m.variant))
            share = capacity(m, lim.at(m) if lim is not None else None, raw, cpus.get(m.run_id, 0))
            if share is not None:
                params = {**params, "share": share[0], "capacity": share[1]}
        out.append(m if flags == m.flags and params is p else _with(m, flags, params))
    return _contended(out, infos)


def _contended(records: list[Measurement], infos: dict[str, RunInfo]) -> list[Measurement]:
    """The records (but the nodes' and the faults') of each pass during which a node of
    another system on the same lab was busy (:func:`harness.report.resources.contention`),
    flagged ``contended``: the pass is joined to its nodes by its whole identity
    (:mod:`harness.report.cells`), not by a time that happens to overlap."""
    declared = cells.roles(records)
    passes: dict[cells.Pass, list[Measurement]] = {}
    for m in records:
        if cells.is_node(m):
            passes.setdefault(cells.pass_of(m), []).append(m)
    busy = set()
    for key, found in passes.items():
        info = infos.get(key[0])
        facts = info.systems.get((key[1], key[2])) if info is not None else None
        if resources.contention(found, facts.services if facts is not None else (), declared):
            busy.add(key)
    if not busy:
        return records
    return [_with(m, (*m.flags, "contended"), m.params)
            if m.workload not in (RESOURCES, FAULT) and "contended" not in m.flags and cells.pass_of(m) in busy
            else m for m in records]


def _with(m: Measurement, flags: tuple[str, ...], params: dict[str, Any]) -> Measurement:
    """The record with the flags and params decided for its cell (its other fields as they
    are: checked when it was made), without a dataclass's replace for each record."""
    new = object.__new__(Measurement)
    new.__dict__.update(m.__dict__, flags=flags, params=params)
    return new


def _ceiling(m: Measurement, lim: PathLimits | None, windows: FaultWindows,
             role_of: str | None) -> tuple[float | None, bool]:
    """A throughput's ceiling, and whether one of its clients' parts is above its own path."""
    if lim is None or m.value is None or role_of is not None or m.unit != "B/s" or not lim.facts.network:
        return None, False
    ceiling = record_ceiling(lim, m, windows.down)
    return ceiling, ceiling is not None and _one_client_exceeds(lim, m, windows.down)


def _flags(m: Measurement, lim: PathLimits | None, windows: FaultWindows, hot: list[Window],
           role_of: str | None, ceiling: float | None, exceeds: bool) -> tuple[str, ...]:
    """The flags of a record (but a node's capacity), given its ceiling and whether its
    value is above it."""
    flags = list(m.flags)
    if role_of is None and windows.whole and overlaps(m, windows.whole):
        flags.append("degraded")
    if role_of is None and hot and overlaps(m, hot):
        flags.append("host-bound")
    if lim is not None and m.value is not None and role_of is None:
        if ceiling is not None and exceeds:
            flags.append("exceeds-network")
        size = m.params.get("file_size")
        ram = lim.ram_of(str(m.params.get("host") or m.params.get("read_on") or ""))
        if m.params.get("direct") is False and ram and isinstance(size, (int, float)) and size < ram:
            flags.append("fits-in-cache")
        if lim.facts.write_behind and m.params.get("direct") is True and is_write(m):
            flags.append("write-behind")
    # (a cell run in cached mode on purpose, direct: false, measures the cache by design)
    if "cache" in m.params and not is_write(m) and m.params.get("direct") is not False:
        steps = str(m.params["cache"]).split("+")
        if not caches_dropped(m.params["cache"]):
            flags.append("no-cache-drop")
        elif "no-drop_caches" in steps and OTHER_CLIENT not in steps:
            flags.append("page-cache-kept")
    if flags == list(m.flags):
        return m.flags
    return tuple(dict.fromkeys(flags))


def describe(infos: dict[str, RunInfo], records: list[Measurement]) -> list[str]:
    """One line per run and system on the limits in force, for the header."""
    lines = []
    by_run: dict[str, list[Measurement]] = {}
    links: dict[tuple[str, tuple[str, str]], set[str]] = {}
    for m in records:
        by_run.setdefault(m.run_id, []).append(m)
        if isinstance(m.params.get("link"), str):
            links.setdefault((m.run_id, (m.backend, m.variant)), set()).add(str(m.params["link"]))
    for run_id, info in infos.items():
        for key, lim in path_limits(info, by_run.get(run_id, [])).items():
            if not lim.facts.network:
                continue
            if lim.network is None:
                if lim.note:
                    lines.append(f"  limits of {lim.facts.display}{_variant(key)}: {lim.note}")
                continue
            f = lim.facts
            parts = [f"network {rate(lim.network)} per client ({lim.network_source})"]
            swept = sorted(links.get((run_id, key), set()))
            if swept and lim.network_source != "declared":
                parts[0] += f", reshaped by the sweep to {', '.join(swept)}: each record is held to its point's link"
            parts += [f"{h} {rate(v)}" for h, v in sorted(lim.links.items()) if v != lim.network]
            if f.write_copies != 1:
                parts.append(f"a client's writes cross its link {f.write_copies:g}× "
                             f"(ceiling {rate(lim.network / f.write_copies)})")
            if f.storage_nodes:
                intake = f.taken_in or f.stored_copies
                parts.append(f"{f.storage_nodes} storage nodes keeping {f.stored_copies:g} copies"
                             + (f" (taking in {intake:g} per byte written)" if intake != f.stored_copies else "")
                             + f": all clients together write under {rate(f.storage_nodes * lim.network / intake)} "
                             f"and read under {rate(f.storage_nodes * lim.network)}")
            lines.append(f"  limits of {f.display}{_variant(key)}: " + "; ".join(parts))
    return lines


def _variant(key: tuple[str, str]) -> str:
    return "" if key[1] == "default" else f"/{key[1]}"


# the options of a run's config that set how much its lab asks of this one machine: how many
# nodes the environment runs (its clients, and the systems' storage nodes and OSDs, whatever a
# plugin calls them), and a workload's parallel work and offered load; sampling apart
_WORKLOAD_LOAD = ("numjobs", "iodepth", "threads", "load", "profiles", "all_clients")


_COUNTS = re.compile(r"(?:^|_)(?:clients|nodes|osds)$|_per_node$")  # clients, gluster_nodes, ceph_osds, osds_per_node


def _counts_nodes(key: str) -> bool:
    return bool(_COUNTS.search(key))


def _said(v: Any) -> str:
    return printable(json.dumps(v, default=str, sort_keys=True), 80)


def host_bound_advice(infos: dict[str, RunInfo], records: list[Measurement]) -> list[str]:
    """Per run with host-bound [B] records: how many, and the keys of that run's config that
    would lift it (with their values as given), and ``run --repeat`` — for the header."""
    lines = []
    for run_id, info in infos.items():
        bound = {m.workload for m in records if m.run_id == run_id and "host-bound" in m.flags}
        sampling = ""
        if not bound:
            continue
        config = info.config if isinstance(info.config, dict) else {}
        keys = []
        env = config.get("environment")
        options = env.get("options") if isinstance(env, dict) else None
        if isinstance(options, dict):
            keys += [f"environment.options.{printable(k, 40)}: {_said(v)}" for k, v in options.items()
                     if isinstance(k, str) and _counts_nodes(k) and v is not None]
            if isinstance(options.get("sample_every_s"), (int, float)) and options["sample_every_s"] > 0:
                sampling = (f"Sampling the nodes costs CPU too: environment.options.sample_every_s: "
                            f"{_said(options['sample_every_s'])} (a longer period samples less; 0: a cell's start "
                            "and end only). ")
        listed = config.get("workloads")
        entries: list[Any] = listed if isinstance(listed, list) else []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or entry["name"] not in bound:
                continue
            if entry.get("clients") is not None:
                keys.append(f"workloads[{i}].clients: {_said(entry['clients'])}")
            found = entry.get("options")
            given: dict[str, Any] = found if isinstance(found, dict) else {}
            keys += [f"workloads[{i}].options.{k}: {_said(given[k])}" for k in _WORKLOAD_LOAD
                     if given.get(k) is not None]
        n = len({cells.cell_of(m) for m in records if m.run_id == run_id and "host-bound" in m.flags})
        lines.append(f"  host-bound [B] in run {run_id}: {n} cell run(s) (a cell in one repeat) of {', '.join(sorted(bound))}. "
                     + ("What sets the load on this machine in its config — fewer nodes, less parallel work or "
                        "a lower load lifts it: " + "; ".join(keys) + ". " if keys else
                        "Its config sets none of the options that shape the lab's load (environment.options."
                        "clients or a system's node counts, a workload's numjobs, iodepth, threads or load): "
                        "the defaults did. ")
                     + sampling
                     + "Then 'dfsbench run CONFIG --repeat 3' shows whether the figures move with the machine "
                       "(repeats that vary are flagged unstable [U])")
    return lines
