"""Resources of the container lab's nodes over one cell, from the Docker stats API (CPU,
memory, network, block I/O of each container, a one-shot sample at the start and at the
end of the cell) and, for the process that used the most CPU in a node, from the node's
/proc (utime + stime of every process, at the same two moments). Every ``every_s``
seconds within the cell each node's stats are sampled again (for the peak rates) and the
client nodes' processes looked at (their tools start and end within the cell)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from environments.nodes import Node
from harness.api.sampler import NodeUsage, Sampler

# every process's name and CPU ticks: fields 2 and 14-15 of /proc/PID/stat
PROCESS_TICKS = "for f in /proc/[0-9]*/stat; do cat $f 2>/dev/null; echo; done"
TICKS_PER_SECOND = 100
EVERY_S = 2.0


Ticks = dict[tuple[int, str], int]  # CPU ticks by (pid, name)


class NodeSampler(Sampler):
    def __init__(self, nodes: list[Node], watched: list[Node] | None = None, every_s: float = EVERY_S) -> None:
        self.nodes, self.every_s = nodes, every_s
        self.watched = watched or []  # nodes whose processes are looked at every every_s
        self.first: dict[str, tuple[float, dict[str, Any], Ticks]] = {}
        self.seen: dict[str, Ticks] = {}  # the last ticks of every process seen in the cell
        self.series: dict[str, list[tuple[float, dict[str, Any]]]] = {}  # stats every every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._docker: Any = None

    def _stats(self, node: Node) -> dict[str, Any] | None:
        try:
            stats: dict[str, Any] = self._client().containers.get(node.name).stats(stream=False, one_shot=True)
        except Exception:  # a node that is gone (a fault) has nothing to say; the cell goes on
            return None
        self.series.setdefault(node.label, []).append((time.monotonic(), stats))
        return stats

    def _client(self) -> Any:
        """One Docker API client for the sampler's life (not one per call)."""
        if self._docker is None:
            import docker

            self._docker = docker.from_env()
        return self._docker

    def _sample(self, node: Node) -> tuple[float, dict[str, Any], Ticks] | None:
        stats = self._stats(node)
        if stats is None:
            return None
        return time.monotonic(), stats, self._ticks(node)

    def _all(self) -> dict[str, tuple[float, dict[str, Any], Ticks]]:
        # all at once: a one-shot sample can wait up to a second for the engine's collector
        with ThreadPoolExecutor(max_workers=len(self.nodes) or 1) as pool:
            samples = list(pool.map(self._sample, self.nodes))
        found = {n.label: s for n, s in zip(self.nodes, samples) if s is not None}
        for node, (_, _, ticks) in found.items():
            self.seen.setdefault(node, {}).update(ticks)
        return found

    def _watch(self) -> None:
        with ThreadPoolExecutor(max_workers=len(self.nodes) + len(self.watched) or 1) as pool:
            while not self._stop.wait(self.every_s):
                list(pool.map(self._stats, self.nodes))
                for node, out in zip(self.watched, pool.map(self._ticks, self.watched)):
                    self.seen.setdefault(node.label, {}).update(out)

    @staticmethod
    def _ticks(node: Node) -> Ticks:
        return process_ticks(node.run(["sh", "-c", PROCESS_TICKS], check=False, timeout=30).stdout)

    def start(self) -> None:
        self.series = {}
        self.first = self._all()
        if self.every_s > 0:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="dfsbench-stats")
            self._thread.start()

    def stop(self) -> list[NodeUsage]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        last = self._all()
        out = []
        for node in last:
            if node in self.first:
                whole = usage(node, self.first[node], (*last[node][:2], self.seen.get(node, last[node][2])))
                cpu, rx, tx = peaks(self.series.get(node, []))
                out.append(replace(whole, peak_cpu=cpu, peak_net_rx=rx, peak_net_tx=tx))
        return out


def peaks(series: list[tuple[float, dict[str, Any]]]) -> tuple[float, float, float]:
    """The highest CPU (%), network in and out (B/s) between consecutive samples of a node."""
    cpu = rx = tx = 0.0
    for (t0, a), (t1, b) in zip(series, series[1:]):
        if t1 - t0 < 0.5:  # too short to be a rate
            continue
        u = usage("", (t0, a, {}), (t1, b, {}))
        cpu, rx, tx = max(cpu, u.cpu), max(rx, u.net_rx), max(tx, u.net_tx)
    return cpu, rx, tx


def usage(node: str, a: tuple[float, dict[str, Any], Ticks], b: tuple[float, dict[str, Any], Ticks]) -> NodeUsage:
    """A node's use of each resource between samples ``a`` and ``b``; the process
    ticks of ``b`` are the last seen of every process (one that started after ``a``
    counts from zero), summed by name."""
    (t0, s0, p0), (t1, s1, p1) = a, b
    seconds = max(t1 - t0, 1e-6)
    cpu0, cpu1 = s0.get("cpu_stats", {}), s1.get("cpu_stats", {})
    used = cpu1.get("cpu_usage", {}).get("total_usage", 0) - cpu0.get("cpu_usage", {}).get("total_usage", 0)
    system = cpu1.get("system_cpu_usage", 0) - cpu0.get("system_cpu_usage", 0)
    cores = cpu1.get("online_cpus") or 1
    cpu = 100.0 * used / system * cores if system > 0 else 0.0
    mem = s1.get("memory_stats", {})
    inactive = mem.get("stats", {}).get("total_inactive_file", mem.get("stats", {}).get("inactive_file", 0))
    memory = float(max(0, mem.get("usage", 0) - inactive))

    def net(stats: dict[str, Any], key: str) -> int:
        return sum(i.get(key, 0) for i in (stats.get("networks") or {}).values())

    def blk(stats: dict[str, Any], op: str) -> int:
        entries = (stats.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []
        return sum(e.get("value", 0) for e in entries if str(e.get("op", "")).lower() == op)

    process, process_cpu = "", 0.0
    deltas: dict[str, int] = {}
    for (pid, name), ticks in p1.items():
        deltas[name] = deltas.get(name, 0) + ticks - p0.get((pid, name), 0)
    if deltas:
        process = max(deltas, key=lambda name: deltas[name])
        process_cpu = 100.0 * max(0, deltas[process]) / TICKS_PER_SECOND / seconds
    return NodeUsage(node, seconds, cpu, memory,
                     (net(s1, "rx_bytes") - net(s0, "rx_bytes")) / seconds,
                     (net(s1, "tx_bytes") - net(s0, "tx_bytes")) / seconds,
                     (blk(s1, "read") - blk(s0, "read")) / seconds,
                     (blk(s1, "write") - blk(s0, "write")) / seconds,
                     process, process_cpu)


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
