"""Physical limits and hygiene, applied to stored measurements by the comparator.

Each run knows the limits of the path to each system: the client's network (declared in
the config as ``limits.network``, or measured by the iperf3 baseline) and its RAM
(declared ``limits.client_ram``, or the client's memory). From them:

- ``exceeds-network``: a throughput through a network file system above the network
  limit — a cache answered, not the storage.
- ``fits-in-cache``: an iozone cell in cached mode whose file is smaller than client RAM.
- ``no-cache-drop``: a read whose caches were not dropped first (the run says how).
- The ceiling of a throughput cell: the network limit divided by how many times a byte
  crosses the client's link — a replica-3 GlusterFS FUSE client sends each write to
  every replica (ceiling ≈ link/3), a Ceph client sends it once to the primary OSD.
  Tables show a cell's share of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.compare import system_name
from harness.records import Measurement
from harness.stats import median
from harness.store import RunInfo
from harness.units import parse_rate, parse_size, rate

WRITES = {"write", "rewrite", "random_write", "record_rewrite", "fwrite", "frewrite", "create"}
NETWORK_SYSTEMS = {"glusterfs", "ceph"}
DROPPED = ("drop_caches", "remount", "reboot", "O_DIRECT")


@dataclass(frozen=True)
class PathLimits:
    network: float | None  # B/s
    network_source: str  # "declared" | "iperf3" | ""
    client_ram: float | None  # bytes
    write_copies: float  # times a written byte crosses the client's link
    network_fs: bool

    def ceiling(self, write: bool) -> float | None:
        if self.network is None or not self.network_fs:
            return None
        return self.network / (self.write_copies if write else 1)


def is_write(m: Measurement) -> bool:
    return m.test in WRITES or m.params.get("direction") == "write" or \
        m.params.get("io_type") == "write"


def path_limits(info: RunInfo, records: list[Measurement]) -> dict[tuple[str, str], PathLimits]:
    declared = (info.config.get("limits") or {}) if isinstance(info.config, dict) else {}
    ram = declared.get("client_ram")
    client_ram = float(parse_size(ram)) if ram else (float(info.host.get("memory") or 0) or None)
    out = {}
    for (backend, variant), d in info.targets.items():
        network, source = None, ""
        if declared.get("network"):
            network, source = parse_rate(declared["network"]), "declared"
        else:
            measured = [m.value for m in records if m.workload == "iperf3" and m.value and
                        (m.backend, m.variant) == (backend, variant)]
            if measured:
                network, source = median(measured), "iperf3"
        out[(backend, variant)] = PathLimits(network, source, client_ram, _write_copies(d),
                                             d.get("system") in NETWORK_SYSTEMS)
    return out


def _write_copies(d: dict[str, Any]) -> float:
    if d.get("system") != "glusterfs":
        return 1.0  # a Ceph client writes once, to the primary OSD
    if d.get("volume_type") == "disperse" and d.get("bricks") and d.get("redundancy"):
        bricks = int(d["bricks"])
        return bricks / (bricks - int(d["redundancy"]))
    return float(d.get("replicas") or 1)


def annotate(records: list[Measurement], infos: dict[str, RunInfo]) -> list[Measurement]:
    """The records with the flags their run's limits call for, and the ceiling of each
    throughput as ``params['ceiling']`` (B/s) for the tables."""
    limits: dict[str, dict[tuple[str, str], PathLimits]] = {}
    by_run: dict[str, list[Measurement]] = {}
    for m in records:
        by_run.setdefault(m.run_id, []).append(m)
    for run_id, info in infos.items():
        limits[run_id] = path_limits(info, by_run.get(run_id, []))
    out = []
    for m in records:
        lim = limits.get(m.run_id, {}).get((m.backend, m.variant))
        flags, params = list(m.flags), m.params
        if lim is not None and m.value is not None:
            if m.unit == "B/s" and lim.network_fs and m.workload not in ("iperf3", "rawdisk"):
                ceiling = lim.ceiling(is_write(m))
                if lim.network is not None and m.value > lim.network:
                    flags.append("exceeds-network")
                if ceiling is not None:
                    params = {**params, "ceiling": ceiling}
            if m.workload == "iozone" and not m.params.get("direct") and lim.client_ram and \
                    m.params.get("file_size", 0) < lim.client_ram:
                flags.append("fits-in-cache")
        if m.workload in ("largefile", "smallfile") and not is_write(m) and \
                not any(word in str(m.params.get("cache", "")) for word in DROPPED):
            flags.append("no-cache-drop")
        if flags != list(m.flags) or params is not m.params:
            m = replace(m, flags=tuple(dict.fromkeys(flags)), params=params)
        out.append(m)
    return out


def describe(infos: dict[str, RunInfo], records: list[Measurement]) -> list[str]:
    """One line per run on the limits in force, for the header."""
    lines = []
    for run_id, info in infos.items():
        for (backend, variant), lim in path_limits(info, [m for m in records if m.run_id == run_id]).items():
            if not lim.network_fs or lim.network is None:
                continue
            copies = f", writes cross it {lim.write_copies:g}× (ceiling {rate(lim.ceiling(True) or 0)})" \
                if lim.write_copies != 1 else ""
            lines.append(f"  limits of {system_name(backend, variant)}: network {rate(lim.network)} "
                         f"({lim.network_source}){copies}")
    return lines
