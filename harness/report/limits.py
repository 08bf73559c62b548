"""Physical limits and hygiene, decided once for every record a view shows.

Each run knows the limits of the path to each system: the client's network (declared in
the config as ``limits.network``; else the link a lab shaped, stored with the target as
``link``; else measured by the run's network baseline — iperf3 — when that crossed a real
network, never loopback) and its RAM (declared
``limits.client_ram``, or the client's memory). With the backend's declared facts (does
its path cross a network, how many times does a written byte cross the client's link):

- ``exceeds-network``: a throughput through a network path above the network limit — a
  cache answered, not the storage.
- ``fits-in-cache``: a cell run in cached mode (``direct: false``) whose file is smaller
  than client RAM.
- ``no-cache-drop``: a read whose record says the caches were not dropped first.
- ``page-cache-kept``: a read after a remount whose kernel page cache could not be dropped
  (a container client): said, not held against the verdict.
- The ceiling of a throughput cell: the network limit divided by the write copies, times
  the clients an aggregate stands for (each has a link of its own)
  (a replica-3 GlusterFS FUSE client sends each write to every replica: link/3; a Ceph
  client sends it once to the primary OSD). Tables show a cell's share of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from harness.api import registry
from harness.api.contracts import Workload
from harness.api.faults import FAULT
from harness.api.records import Measurement
from harness.api.sampler import RESOURCES
from harness.api.tables import SystemFacts
from harness.report.stats import median
from harness.results.store import RunInfo
from harness.units import parse_rate, parse_size, rate

# the steps of a cache drop (as workloads record them, e.g. "sync+remount+drop_caches")
# that leave no cache between the client and the storage
DROPPING_STEPS = frozenset({"drop_caches", "remount", "reboot", "O_DIRECT"})
# a FUSE client that dfsbench did not mount (and so cannot remount) kept its own cache
KEPT_STEP = "client-cache-kept"


@dataclass(frozen=True)
class PathLimits:
    network: float | None  # B/s
    network_source: str  # "declared", the network baseline that measured it (iperf3), or ""
    client_ram: float | None  # bytes
    facts: SystemFacts
    note: str = ""  # why there is no network limit, where that is worth saying

    def ceiling(self, write: bool) -> float | None:
        if self.network is None or not self.facts.network:
            return None
        return self.network / (self.facts.write_copies if write else 1)


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
    client_ram = float(parse_size(ram)) if ram else (float(info.host.get("memory") or 0) or None)
    out = {}
    for key in info.targets:
        facts = info.systems.get(key) or SystemFacts(key[0])
        network, source, note = None, "", ""
        link = (info.targets.get(key) or {}).get("link")
        if declared.get("network"):
            network, source = parse_rate(declared["network"]), "declared"
        elif isinstance(link, (int, float)) and link > 0:  # the lab shaped every node's link so
            network, source = float(link), "the lab's shaped link"
        else:
            probes = [m for m in records if (m.backend, m.variant) == key and m.value
                      and m.metric == "throughput" and role(m.workload) == "network"]
            real = [m for m in probes if not m.params.get("loopback") and m.value is not None]
            if real:  # measured by the run's network baseline (a workload with that role)
                network = median([m.value for m in real if m.value is not None])
                source = ", ".join(sorted({m.workload for m in real}))
            elif probes:
                note = "no network between client and servers (loopback): no network limit applies"
        out[key] = PathLimits(network, source, client_ram, facts, note)
    return out


def annotate(records: list[Measurement], infos: dict[str, RunInfo]) -> list[Measurement]:
    """The records with the flags their run's limits call for, and the ceiling of each
    throughput as ``params['ceiling']`` (B/s)."""
    by_run: dict[str, list[Measurement]] = {}
    for m in records:
        by_run.setdefault(m.run_id, []).append(m)
    limits = {run_id: path_limits(info, by_run.get(run_id, [])) for run_id, info in infos.items()}
    roles = {name: role(name) for name in {m.workload for m in records}}
    out = []
    for m in records:
        lim = limits.get(m.run_id, {}).get((m.backend, m.variant))
        flags, params = list(m.flags), m.params
        if lim is not None and m.value is not None and roles[m.workload] is None:
            if m.unit == "B/s" and lim.facts.network:
                links = _links(m)
                if lim.network is not None and m.value > lim.network * links:
                    flags.append("exceeds-network")
                ceiling = lim.ceiling(is_write(m))
                if ceiling is not None:
                    params = {**params, "ceiling": ceiling * links}
            size = m.params.get("file_size")
            if m.params.get("direct") is False and lim.client_ram and isinstance(size, (int, float)) \
                    and size < lim.client_ram:
                flags.append("fits-in-cache")
        # (a cell run in cached mode on purpose, direct: false, measures the cache by design)
        if "cache" in m.params and not is_write(m) and m.params.get("direct") is not False:
            if not caches_dropped(m.params["cache"]):
                flags.append("no-cache-drop")
            elif "no-drop_caches" in str(m.params["cache"]).split("+"):
                flags.append("page-cache-kept")
        if flags != list(m.flags) or params is not m.params:
            m = replace(m, flags=tuple(dict.fromkeys(flags)), params=params)
        out.append(m)
    return out


def _links(m: Measurement) -> int:
    """How many client links a record's traffic crossed: the aggregate over N clients
    (``host: all``, ``clients: N``) had N links of its own; any other record one."""
    clients = m.params.get("clients")
    if m.params.get("host") == "all" and isinstance(clients, int) and clients > 1:
        return clients
    return 1


def describe(infos: dict[str, RunInfo], records: list[Measurement]) -> list[str]:
    """One line per run and system on the limits in force, for the header."""
    lines = []
    for run_id, info in infos.items():
        for key, lim in path_limits(info, [m for m in records if m.run_id == run_id]).items():
            if not lim.facts.network:
                continue
            if lim.network is None:
                if lim.note:
                    lines.append(f"  limits of {lim.facts.display}{_variant(key)}: {lim.note}")
                continue
            copies = f", writes cross it {lim.facts.write_copies:g}× (ceiling " \
                     f"{rate(lim.ceiling(True) or 0)})" if lim.facts.write_copies != 1 else ""
            lines.append(f"  limits of {lim.facts.display}{_variant(key)}: network {rate(lim.network)} "
                         f"({lim.network_source}){copies}")
    return lines


def _variant(key: tuple[str, str]) -> str:
    return "" if key[1] == "default" else f"/{key[1]}"
