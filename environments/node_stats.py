"""Resources of the container lab's nodes over one cell, from the Docker stats API (CPU,
memory, network, block I/O of each container, a one-shot sample at the start and at the
end of the cell, and every ``every_s`` seconds within it) and, for the process that used
the most CPU in a node, from the node's /proc (utime + stime of every process).

Every rate is over the time between the samples' own timestamps (the payload's ``read``,
not the moment the call returned, which waits on the engine's collector), and every
counter is read as an increase: one that went down was reset (the container restarted, a
fault), and counts from zero from there. The client nodes' processes are looked at with
each periodic sample (their tools start and end within the cell), so the process named
beside a peak used its share over that same window."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any

from environments.nodes import Node
from harness.api.sampler import NodeRole, NodeUsage, Sampler

# every process's name and CPU ticks: fields 2 and 14-15 of /proc/PID/stat
PROCESS_TICKS = "for f in /proc/[0-9]*/stat; do cat $f 2>/dev/null; echo; done"
TICKS_PER_SECOND = 100
EVERY_S = 2.0
SHORTEST_S = 0.5  # two samples closer than this make no rate


Ticks = dict[tuple[int, str], int]  # CPU ticks by (pid, name)
Sample = tuple[float, dict[str, Any], Ticks | None]  # (payload time, stats, process ticks if looked at)


class NodeSampler(Sampler):
    def __init__(self, nodes: list[Node], watched: list[Node] | None = None, every_s: float = EVERY_S,
                 roles: dict[str, NodeRole] | None = None) -> None:
        self.nodes, self.every_s = nodes, every_s
        self.roles = roles or {}  # by node label: what the environment declares each node is
        self.watched = {n.label for n in watched or []}  # nodes whose processes are looked at every every_s
        self.series: dict[str, list[Sample]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._docker: Any = None

    def _client(self) -> Any:
        """One Docker API client for the sampler's life (not one per call)."""
        if self._docker is None:
            import docker

            self._docker = docker.from_env()
        return self._docker

    def _sample(self, node: Node, processes: bool) -> None:
        try:
            stats: dict[str, Any] = self._client().containers.get(node.name).stats(stream=False, one_shot=True)
        except Exception:  # a node that is gone (a fault) has nothing to say; the cell goes on
            return
        when = stamp(stats)
        series = self.series.setdefault(node.label, [])
        if when is None or not running(stats) or (series and when <= series[-1][0]):
            return  # (a stopped container's payload: zero time, no counters; or no newer reading)
        ticks = self._ticks(node) if processes else None
        series.append((when, stats, ticks))

    def _all(self, every: bool) -> None:
        # all at once: a one-shot sample can wait up to a second for the engine's collector
        with ThreadPoolExecutor(max_workers=len(self.nodes) or 1) as pool:
            list(pool.map(lambda n: self._sample(n, every or n.label in self.watched), self.nodes))

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self._all(every=False)

    @staticmethod
    def _ticks(node: Node) -> Ticks:
        return process_ticks(node.run(["sh", "-c", PROCESS_TICKS], check=False, timeout=30).stdout)

    def start(self) -> None:
        self.series = {}
        self._all(every=True)
        if self.every_s > 0:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="dfsbench-stats")
            self._thread.start()

    def stop(self) -> list[NodeUsage]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._all(every=True)
        out = []
        for node, series in self.series.items():
            if len(series) >= 2:
                cpu_seconds, peak_memory = spent(series)
                out.append(replace(usage(node, series), cpu_seconds=cpu_seconds, peak_memory=peak_memory,
                                   role=self.roles.get(node)))
        return out


def stamp(stats: dict[str, Any]) -> float | None:
    """The time the engine read the stats (seconds since the epoch), from the payload; None
    where it gives none (a stopped container's payload says 0001-01-01)."""
    text = str(stats.get("read") or "")
    try:
        whole, _, rest = text.rstrip("Z").partition(".")
        base = datetime.fromisoformat(whole + "+00:00").timestamp()
    except ValueError:
        return None
    if base <= 0:
        return None
    return base + (float("0." + "".join(c for c in rest if c.isdigit())) if rest else 0.0)


def running(stats: dict[str, Any]) -> bool:
    """Whether a payload is a running container's: a stopped or killed one's has no CPU
    counters and no cores (its zeros are no reading, and no reset to count from)."""
    cpu = stats.get("cpu_stats") or {}
    return bool((cpu.get("cpu_usage") or {}).get("total_usage")) and bool(cpu.get("online_cpus"))


def increase(values: list[float]) -> float:
    """What a cumulative counter counted over consecutive readings; where it went down it
    was reset (a restarted container) and counts from zero there."""
    return sum(b - a if b >= a else b for a, b in zip(values, values[1:]))


def _counters(stats: dict[str, Any]) -> dict[str, float]:
    def net(key: str) -> float:
        return float(sum(i.get(key, 0) for i in (stats.get("networks") or {}).values()))

    def blk(op: str) -> float:
        entries = (stats.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []
        return float(sum(e.get("value", 0) for e in entries if str(e.get("op", "")).lower() == op))

    cpu = float((stats.get("cpu_stats") or {}).get("cpu_usage", {}).get("total_usage", 0))
    return {"cpu": cpu, "rx": net("rx_bytes"), "tx": net("tx_bytes"), "read": blk("read"), "write": blk("write")}


def _rates(samples: list[Sample]) -> dict[str, float]:
    """Per second over the samples' own time: CPU in percent of one core, bytes for the rest."""
    seconds = max(samples[-1][0] - samples[0][0], 1e-6)
    counters = [_counters(s) for _, s, _ in samples]
    out = {k: increase([c[k] for c in counters]) / seconds for k in counters[0]}
    out["cpu"] = 100.0 * out["cpu"] / 1e9
    return out


def _top(before: Ticks, after: Ticks, seconds: float) -> tuple[str, float]:
    """The process name that used the most CPU between two looks (percent of one core):
    one that started after the first look counts from zero."""
    deltas: dict[str, int] = {}
    for (pid, name), ticks in after.items():
        deltas[name] = deltas.get(name, 0) + max(0, ticks - before.get((pid, name), 0))
    if not deltas:
        return "", 0.0
    name = max(deltas, key=lambda n: deltas[n])
    return name, 100.0 * deltas[name] / TICKS_PER_SECOND / max(seconds, 1e-6)


def used_memory(stats: dict[str, Any]) -> float:
    """The bytes a node has in use at one sample, its page cache (inactive files) not counted."""
    mem = stats.get("memory_stats") or {}
    inactive = (mem.get("stats") or {}).get("total_inactive_file", (mem.get("stats") or {}).get("inactive_file", 0))
    return float(max(0, mem.get("usage", 0) - inactive))


def spent(series: list[Sample]) -> tuple[float, float]:
    """What a node spent over its samples (first to last) as totals, not rates: the CPU
    time its counter counted (s: the increase of ``total_usage``, in ns, over the window, a
    reset counting from zero), and the most memory in use at any sample (B)."""
    cpu = increase([_counters(s)["cpu"] for _, s, _ in series]) / 1e9
    return cpu, max(used_memory(s) for _, s, _ in series)


def usage(node: str, series: list[Sample]) -> NodeUsage:
    """A node's use of each resource over its samples (first to last), its peaks between
    consecutive samples (and each of those rates, as its points over time), and the
    process that used the most CPU over the cell (every process seen, at its last look) and
    over the peak's window."""
    whole = _rates(series)
    first, last = series[0], series[-1]
    stats = last[1]
    mem = stats.get("memory_stats", {})
    inactive = mem.get("stats", {}).get("total_inactive_file", mem.get("stats", {}).get("inactive_file", 0))
    cores = int((stats.get("cpu_stats") or {}).get("online_cpus") or 0)
    seen: Ticks = {}
    for _, _, ticks in series:
        seen.update(ticks or {})
    process, process_cpu = _top(first[2] or {}, seen, last[0] - first[0]) if first[2] is not None else ("", 0.0)
    peak = {"cpu": 0.0, "rx": 0.0, "tx": 0.0}
    peak_process, peak_process_cpu = "", 0.0
    points = []
    for a, b in zip(series, series[1:]):
        if b[0] - a[0] < SHORTEST_S:
            continue
        r = _rates([a, b])
        points.append((a[0], b[0], r["cpu"], r["rx"], r["tx"]))
        if r["cpu"] > peak["cpu"]:  # (its processes, where they were looked at both times)
            peak_process, peak_process_cpu = _top(a[2], b[2], b[0] - a[0]) \
                if a[2] is not None and b[2] is not None else ("", 0.0)
        peak = {k: max(peak[k], r[k]) for k in peak}
    return NodeUsage(node, last[0] - first[0], whole["cpu"], float(max(0, mem.get("usage", 0) - inactive)),
                     whole["rx"], whole["tx"], whole["read"], whole["write"], process, process_cpu,
                     peak["cpu"], peak["rx"], peak["tx"], cores, peak_process, peak_process_cpu, tuple(points))


def process_ticks(text: str) -> Ticks:
    """CPU ticks (user + system) of each process, by (pid, name), from /proc/PID/stat lines."""
    out: Ticks = {}
    for line in text.splitlines():
        if ")" not in line or "(" not in line:
            continue
        pid = line.split(" ", 1)[0]
        name = line[line.index("(") + 1:line.rindex(")")]
        fields = line[line.rindex(")") + 1:].split()
        if len(fields) < 13 or not pid.isdigit():
            continue
        out[(int(pid), name)] = int(fields[11]) + int(fields[12])
    return out
