"""How busy this machine is: its CPUs (``/proc/stat``) and the disk under a path
(``/proc/diskstats``), read at two moments. A lab whose nodes all run on this machine
(processes, containers) measures this machine when it is saturated, whatever the design."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Snapshot:
    at: float  # seconds since the epoch
    cpu_busy: int  # jiffies spent on anything but idle and iowait, over all CPUs
    cpu_total: int
    disk_ms: int | None  # milliseconds the disk was busy (io_ticks), None: not found
    cpus: int


def disk_of(path: Path) -> str | None:
    """The name of the whole disk (vda, not vda1) that holds ``path``, as /proc/diskstats
    names it; None where it cannot be told."""
    try:
        dev = os.stat(path).st_dev
        block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    except OSError:
        return None
    if not block.exists():
        return None
    whole = block.parent if (block / "partition").exists() else block
    return whole.name


def snapshot(disk: str | None) -> Snapshot:
    """This machine's CPU and disk counters now."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # (guest time is counted in user already)
    ticks = None
    if disk:
        with open("/proc/diskstats") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 12 and parts[2] == disk:
                    ticks = int(parts[12])
                    break
    return Snapshot(time.time(), total - idle, total, ticks, os.cpu_count() or 1)


def busy(a: Snapshot, b: Snapshot) -> tuple[float, float | None]:
    """The share (percent) of this machine's CPUs that were busy between two snapshots, and
    of the time its disk was busy (None: not known)."""
    total = b.cpu_total - a.cpu_total
    cpu = 100.0 * (b.cpu_busy - a.cpu_busy) / total if total > 0 else 0.0
    disk = None
    if a.disk_ms is not None and b.disk_ms is not None and b.at > a.at:
        disk = min(100.0, 100.0 * (b.disk_ms - a.disk_ms) / ((b.at - a.at) * 1000))
    return cpu, disk
