"""The comparator: a pure function of stored measurements -> the report's tables.

Tables follow the 2014 report: small files (mode × file count: time and files/s) and large
files (mode × size: time and throughput), one column group per system, then a comparison
column that says which system is better and by how much, whatever the metric's direction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.records import FLAGS, Measurement
from harness.stats import median
from harness.units import format_value, size

DISPLAY = {"glusterfs": "GlusterFS", "cephfs": "CephFS", "localdir": "local dir"}
CONTROL = {"localdir"}
LOWER_IS_BETTER = {"s"}


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def system_name(backend: str, variant: str) -> str:
    name = DISPLAY.get(backend, backend)
    return name if variant == "default" else f"{name}/{variant}"


@dataclass
class Cells:
    """Measurements grouped by (row key, system, metric), values over repeats and runs."""

    values: dict[tuple[Any, tuple[str, str], str], list[float]] = field(default_factory=lambda: defaultdict(list))
    flags: dict[tuple[Any, tuple[str, str], str], set[str]] = field(default_factory=lambda: defaultdict(set))
    systems: list[tuple[str, str]] = field(default_factory=list)

    def add(self, row: Any, m: Measurement) -> None:
        system = (m.backend, m.variant)
        if system not in self.systems:
            self.systems.append(system)
        key = (row, system, m.metric)
        if m.value is not None:
            self.values[key].append(m.value)
        self.flags[key].update(m.flags)

    def get(self, row: Any, system: tuple[str, str], metric: str) -> tuple[float | None, set[str]]:
        key = (row, system, metric)
        vals = self.values.get(key)
        return (median(vals) if vals else None), self.flags.get(key, set())


def verdict(a: float | None, b: float | None, unit: str, name_a: str, name_b: str) -> str:
    """'CephFS 3.4× faster' — for times lower is better, for rates higher is better."""
    if a is None or b is None or a <= 0 or b <= 0:
        return "—"
    better_a = a < b if unit in LOWER_IS_BETTER else a > b
    ratio = max(a, b) / min(a, b)
    if ratio < 1.05:
        return f"about the same ({ratio:.2f}×)"
    return f"{name_a if better_a else name_b} {ratio:.1f}× faster"


def _cell(value: float | None, unit: str, flags: set[str], seen: set[str]) -> str:
    text = format_value(value, unit)
    if flags:
        seen.update(flags)
        text += " [" + ",".join(sorted(flags)) + "]"
    return text


def _pair(systems: list[tuple[str, str]]) -> tuple[tuple[str, str], tuple[str, str]] | None:
    compared = [s for s in systems if s[0] not in CONTROL]
    return (compared[0], compared[1]) if len(compared) >= 2 else None


def _flag_notes(seen: set[str]) -> list[str]:
    return [f"[{flag}] {FLAGS.get(flag, '')}" for flag in sorted(seen)]


def _table(title: str, cells: Cells, rows: list[tuple[str, Any, str]], metrics: list[tuple[str, str, str]],
           verdict_metric: tuple[str, str], row_header: list[str]) -> Table:
    """rows: (mode label, row key, row label); metrics: (metric, unit, column label)."""
    systems = cells.systems
    pair = _pair(systems)
    columns = list(row_header)
    for s in systems:
        columns += [f"{system_name(*s)} {label}" for _, _, label in metrics]
    if pair:
        columns.append(f"{system_name(*pair[0])} vs {system_name(*pair[1])}")
    seen: set[str] = set()
    out = []
    previous_mode = None
    for mode, key, label in rows:
        line = [mode if mode != previous_mode else "", label]
        previous_mode = mode
        for s in systems:
            for metric, unit, _ in metrics:
                value, flags = cells.get(key, s, metric)
                line.append(_cell(value, unit, flags, seen))
        if pair:
            metric, unit = verdict_metric
            a, _ = cells.get(key, pair[0], metric)
            b, _ = cells.get(key, pair[1], metric)
            line.append(verdict(a, b, unit, system_name(*pair[0]), system_name(*pair[1])))
        out.append(line)
    return Table(title, columns, out, _flag_notes(seen))


SMALLFILE_MODES = [("create", "write"), ("ls-l", "list (ls -l)"), ("read", "read")]


def smallfile_table(records: Iterable[Measurement]) -> Table | None:
    cells = Cells()
    keys = set()
    for m in records:
        if m.workload != "smallfile" or m.test == "cell":
            continue
        key = (m.test, m.params.get("files"), m.params.get("file_size"), m.params.get("threads"))
        keys.add(key)
        cells.add(key, m)
    if not keys:
        return None
    shapes = {(k[2], k[3]) for k in keys}
    uniform = len(shapes) == 1
    rows = []
    for op, mode in SMALLFILE_MODES:
        for key in sorted(k for k in keys if k[0] == op):
            label = f"{key[1]:,}" if uniform else f"{key[1]:,} × {size(key[2])}, {key[3]} threads"
            rows.append((mode, key, label))
    shape = ""
    if uniform:
        file_size, threads = next(iter(shapes))
        shape = f" ({size(file_size)} each, {threads} threads)"
    return _table(f"Small files{shape}: time to write, list and read N files",
                  cells, rows, [("elapsed", "s", "time"), ("files_per_sec", "files/s", "rate")],
                  ("elapsed", "s"), ["mode", "files"])


def largefile_table(records: Iterable[Measurement]) -> Table | None:
    cells = Cells()
    keys = set()
    for m in records:
        if m.workload != "largefile" or m.test == "cell":
            continue
        key = (m.test, m.params.get("file_size"))
        keys.add(key)
        cells.add(key, m)
    if not keys:
        return None
    rows = []
    for test in ("write", "read"):
        for key in sorted((k for k in keys if k[0] == test), key=lambda k: -(k[1] or 0)):
            rows.append((test, key, size(key[1])))
    return _table("Large files: copy one file into the mount (write) and back out (read)",
                  cells, rows, [("elapsed", "s", "time"), ("throughput", "B/s", "rate")],
                  ("elapsed", "s"), ["mode", "file size"])


def failures_table(records: Iterable[Measurement]) -> Table | None:
    rows = [[system_name(m.backend, m.variant), m.workload,
             ", ".join(f"{k}={v}" for k, v in m.params.items() if k != "error"),
             m.params.get("error", "")]
            for m in records if m.test == "cell" and m.value is None]
    if not rows:
        return None
    return Table("Cells that failed (no value)", ["system", "workload", "cell", "error"], rows,
                 _flag_notes({"failed"}))


def tables(records: list[Measurement]) -> list[Table]:
    built = [smallfile_table(records), largefile_table(records), failures_table(records)]
    return [t for t in built if t is not None]
