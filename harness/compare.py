"""The comparator: a pure function of stored measurements -> the report's tables.

Tables follow the 2014 report: small files (mode × file count: time and files/s) and large
files (mode × size: time and throughput), one column group per system, then a comparison
column that says which system is better and by how much, whatever the metric's direction.
"""

from __future__ import annotations

import json
from collections import defaultdict
from contextvars import ContextVar
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.records import FLAG_CODES, FLAGS, Measurement, flag_marks
from harness.stats import Summary, compare, median, summarize
from harness.units import format_value, size

DISPLAY = {"glusterfs": "GlusterFS", "cephfs": "CephFS", "localdir": "local dir", "rbd": "RBD",
           "rados": "RADOS", "blockdev": "block device"}
CONTROL = {"localdir"}
LOWER_IS_BETTER = {"s"}
# a cell whose repeats vary more than this is flagged 'unstable' (compare --cv-threshold)
CV_THRESHOLD: ContextVar[float] = ContextVar("cv_threshold", default=0.10)
ALPHA = 0.05  # significance level of the A-vs-B test


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
    ceilings: dict[tuple[Any, tuple[str, str], str], float] = field(default_factory=dict)
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
        if m.params.get("ceiling"):
            self.ceilings[key] = m.params["ceiling"]

    def share(self, row: Any, system: tuple[str, str], metric: str) -> float | None:
        """The median's share of the path's physical ceiling (see harness.limits)."""
        ceiling = self.ceilings.get((row, system, metric))
        vals = self.values.get((row, system, metric))
        return median(vals) / ceiling if ceiling and vals else None

    def get(self, row: Any, system: tuple[str, str], metric: str) -> tuple[float | None, set[str]]:
        """The median over repeats, and the flags (with 'unstable' when the repeats vary
        more than the CV threshold)."""
        key = (row, system, metric)
        vals = self.values.get(key)
        flags = set(self.flags.get(key, set()))
        summary = self.summary(row, system, metric)
        if summary is not None and summary.cv > CV_THRESHOLD.get():
            flags.add("unstable")
        return (median(vals) if vals else None), flags

    def summary(self, row: Any, system: tuple[str, str], metric: str) -> Summary | None:
        vals = self.values.get((row, system, metric))
        return summarize(vals) if vals and len(vals) > 1 else None

    def judge(self, row: Any, a: tuple[str, str], b: tuple[str, str], metric: str, unit: str) -> str:
        """The comparison column: with repeats on both sides, the ratio with its interval
        and Welch's test, and 'no significant difference' when it is not; with one value a
        side, the plain ratio."""
        va, vb = self.values.get((row, a, metric)), self.values.get((row, b, metric))
        name_a, name_b = system_name(*a), system_name(*b)
        c = compare(va, vb) if va and vb else None
        if c is None:
            return verdict(median(va) if va else None, median(vb) if vb else None, unit, name_a, name_b)
        if not c.significant(ALPHA):
            return f"no significant difference (p={c.p_value:.2f})"
        # ratio is A/B; for a time, the smaller side is the faster one
        better_a = c.ratio < 1 if unit in LOWER_IS_BETTER else c.ratio > 1
        r, lo, hi = (c.ratio, c.ratio_low, c.ratio_high) if c.ratio >= 1 else \
            (1 / c.ratio, 1 / c.ratio_high, 1 / c.ratio_low)
        p = "p<0.001" if c.p_value < 0.001 else f"p={c.p_value:.3f}"
        return f"{name_a if better_a else name_b} {r:.1f}× faster ({lo:.1f}–{hi:.1f}×, {p})"


def verdict(a: float | None, b: float | None, unit: str, name_a: str, name_b: str) -> str:
    """'CephFS 3.4× faster' — for times lower is better, for rates higher is better."""
    if a is None or b is None or a <= 0 or b <= 0:
        return "—"
    better_a = a < b if unit in LOWER_IS_BETTER else a > b
    ratio = max(a, b) / min(a, b)
    if ratio < 1.05:
        return f"about the same ({ratio:.2f}×)"
    return f"{name_a if better_a else name_b} {ratio:.1f}× faster"


def _cell(value: float | None, unit: str, flags: set[str], seen: set[str], metric: str = "",
          summary: Summary | None = None, share: float | None = None) -> str:
    text = format_value(value, unit, metric)
    if summary is not None and value is not None:  # the median, then its spread over repeats
        text += f" ±{summary.ci_half_width * 100:.0f}% CV {summary.cv * 100:.0f}%"
    if share is not None:
        text += f" ({share * 100:.0f}%)"
    seen.update(flags)
    return text + flag_marks(flags)


def _pair(systems: list[tuple[str, str]]) -> tuple[tuple[str, str], tuple[str, str]] | None:
    compared = [s for s in systems if s[0] not in CONTROL]
    return (compared[0], compared[1]) if len(compared) >= 2 else None


def _flag_notes(seen: set[str]) -> list[str]:
    return [f"[{FLAG_CODES.get(flag, flag)}] {flag}: {FLAGS.get(flag, '')}"
            for flag in sorted(seen, key=lambda f: FLAG_CODES.get(f, f))]


WIDE_COLUMNS = 10  # beyond this a side-by-side table stops fitting a terminal


def _table(title: str, cells: Cells, rows: list[tuple[str, Any, str]], metrics: list[tuple[str, str, str]],
           verdict_metric: tuple[str, str], row_header: list[str]) -> Table:
    """rows: (mode label, row key, row label); metrics: (metric, unit, column label).

    Two systems (plus a control) side by side, as the report did, with a column saying
    which is better; more systems than fit get one line per system instead, each compared
    with the first."""
    systems = cells.systems
    if len(row_header) + len(systems) * len(metrics) + 1 > WIDE_COLUMNS:
        return _long_table(title, cells, rows, metrics, verdict_metric, row_header)
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
                line.append(_cell(value, unit, flags, seen, metric, cells.summary(key, s, metric),
                                  cells.share(key, s, metric)))
        if pair:
            metric, unit = verdict_metric
            line.append(cells.judge(key, pair[0], pair[1], metric, unit))
        out.append(line)
    return Table(title, columns, out, _flag_notes(seen) + _share_note(cells))


def _share_note(cells: Cells) -> list[str]:
    return ["(N%): the rate's share of the network ceiling of its path (see the limits above)"] \
        if any(cells.ceilings.values()) else []


def relative(value: float | None, reference: float | None, unit: str) -> str:
    """'1.8× faster' / '2.2× slower' than the reference, in the metric's direction."""
    if value is None or reference is None or value <= 0 or reference <= 0:
        return "—"
    ratio = max(value, reference) / min(value, reference)
    if ratio < 1.05:
        return f"about the same ({ratio:.2f}×)"
    better = value < reference if unit in LOWER_IS_BETTER else value > reference
    return f"{ratio:.1f}× {'faster' if better else 'slower'}"


def _long_table(title: str, cells: Cells, rows: list[tuple[str, Any, str]],
                metrics: list[tuple[str, str, str]], verdict_metric: tuple[str, str],
                row_header: list[str]) -> Table:
    systems = cells.systems
    compared = [s for s in systems if s[0] not in CONTROL]
    reference = compared[0] if compared else systems[0]
    columns = [*row_header, "system", *[label for _, _, label in metrics],
               f"vs {system_name(*reference)}"]
    seen: set[str] = set()
    out = []
    previous = None
    metric, unit = verdict_metric
    for mode, key, label in rows:
        ref_value, _ = cells.get(key, reference, metric)
        for s in systems:
            if not any(cells.get(key, s, m)[0] is not None or cells.get(key, s, m)[1] for m, _, _ in metrics):
                continue
            head = [mode, label] if (mode, label) != previous else ["", ""]
            previous = (mode, label)
            line = [*head, system_name(*s)]
            for m, u, _ in metrics:
                value, flags = cells.get(key, s, m)
                line.append(_cell(value, u, flags, seen, m, cells.summary(key, s, m), cells.share(key, s, m)))
            if s == reference:
                line.append("")
            elif cells.summary(key, s, metric) and cells.summary(key, reference, metric):
                line.append(cells.judge(key, s, reference, metric, unit))
            else:
                value, _ = cells.get(key, s, metric)
                line.append(relative(value, ref_value, unit))
            out.append(line)
    return Table(title, columns, out, _flag_notes(seen) + _share_note(cells))


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
        shape = f" ({size(file_size)} each, {threads} thread{'s' if threads != 1 else ''})"
    return _table(f"Small files{shape}: time to write, list and read N files",
                  cells, rows, [("elapsed", "s", "time"), ("files_per_sec", "files/s", "rate")],
                  ("elapsed", "s"), ["mode", "files"])


def largefile_table(records: Iterable[Measurement]) -> Table | None:
    cells = Cells()
    keys = set()
    labels: dict[Any, str] = {}
    for m in records:
        if m.workload != "largefile" or m.test == "cell":
            continue
        key = (m.test, m.params.get("file_size"))
        keys.add(key)
        cells.add(key, m)
        if "label" in m.params:  # a reference run's own row label ("2.5G")
            labels[key] = str(m.params["label"])
    if not keys:
        return None
    rows = []
    for test in ("write", "read"):
        for key in sorted((k for k in keys if k[0] == test), key=lambda k: -(k[1] or 0)):
            rows.append((test, key, labels.get(key) or size(key[1])))
    return _table("Large files: copy one file into the mount (write) and back out (read)",
                  cells, rows, [("elapsed", "s", "time"), ("throughput", "B/s", "rate")],
                  ("elapsed", "s"), ["mode", "file size"])


IOZONE_COLUMNS = [("write", "write"), ("rewrite", "rewrite"), ("read", "read"), ("reread", "reread"),
                  ("random_read", "random read"), ("random_write", "random write"),
                  ("bkwd_read", "bkwd read"), ("record_rewrite", "record rewrite"),
                  ("stride_read", "stride read"), ("fwrite", "fwrite"), ("frewrite", "frewrite"),
                  ("fread", "fread"), ("freread", "freread")]


def iozone_tables(records: Iterable[Measurement], each_repeat: bool = False) -> list[Table]:
    """One table per system and mode (and per repeat if asked), in the report's layout:
    file size KB × record KB → write, rewrite, read, reread, random read, random write,
    in iozone's KB/s (1024 B/s)."""
    groups: dict[tuple[Any, ...], Cells] = defaultdict(Cells)
    for m in records:
        if m.workload != "iozone" or "file_size" not in m.params or "record_size" not in m.params:
            continue
        group = (m.backend, m.variant, bool(m.params.get("direct")),
                 (m.run_id, m.repeat) if each_repeat else None)
        groups[group].add((m.params["file_size"], m.params["record_size"], m.test), m)
    out = []
    for (backend, variant, direct, rep), cells in groups.items():  # in the order the records came
        keys = {k for (k, _, _) in cells.values} | {k for (k, _, _) in cells.flags}
        tests = [(t, label) for t, label in IOZONE_COLUMNS if any(k[2] == t for k in keys)]
        shapes = sorted({(k[0], k[1]) for k in keys})
        system = (backend, variant)
        seen: set[str] = set()
        rows = []
        for fsize, rsize in shapes:
            line = [f"{fsize // 1024}", f"{rsize // 1024}"]
            for test, _ in tests:
                value, flags = cells.get((fsize, rsize, test), system, "throughput")
                text = "—" if value is None else f"{value / 1024:.0f}"
                summary = cells.summary((fsize, rsize, test), system, "throughput")
                if summary is not None and value is not None:
                    text += f" CV {summary.cv * 100:.0f}%"
                share = cells.share((fsize, rsize, test), system, "throughput")
                if share is not None:
                    text += f" ({share * 100:.0f}%)"
                seen.update(flags)
                line.append(text + flag_marks(flags))
            rows.append(line)
        mode = "O_DIRECT (-I)" if direct else "cached"
        title = f"iozone on {system_name(backend, variant)}, {mode}, KB/s"
        if rep is not None:
            title += f" — run {rep[0]}, repeat {rep[1] + 1}"
        notes = _flag_notes(seen)
        notes += _share_note(cells)
        out.append(Table(title, ["file size KB", "record KB", *[label for _, label in tests]], rows, notes))
    return out


def _rows_table(title: str, records: Iterable[Measurement], workload: str,
                key_of: Any, label_of: Any, metrics: list[tuple[str, str, str]],
                verdict_metric: tuple[str, str], row_header: list[str]) -> Table | None:
    """A side-by-side table (one column group per system) for workloads whose rows are
    the keys ``key_of`` gives; ``label_of`` turns a key into (mode, label)."""
    cells = Cells()
    keys: list[Any] = []
    for m in records:
        if m.workload != workload or m.test == "cell":
            continue
        key = key_of(m)
        if key is None:
            continue
        if key not in keys:
            keys.append(key)
        cells.add(key, m)
    if not keys:
        return None
    rows = [(*label_of(k), ) for k in keys]
    return _table(title, cells, [(mode, k, label) for k, (mode, label) in zip(keys, rows)], metrics,
                  verdict_metric, row_header)


def fio_table(records: Iterable[Measurement]) -> Table | None:
    records = [m for m in records if m.workload == "fio"]

    def key(m: Measurement) -> Any:
        host = m.params.get("host")
        return (m.test, m.params.get("direction"), host if host not in (None, "all") else "")

    def label(k: Any) -> tuple[str, str]:
        return k[0], f"{k[1]}" + (f" on {k[2]}" if k[2] else "")

    # total latency (submission + completion) where fio measured it: a FUSE client's
    # direct I/O waits in submission, so its completion latency alone looks tiny
    p99 = ("lat_p99", "s", "p99 lat") if any(m.metric == "lat_p99" for m in records) \
        else ("clat_p99", "s", "p99 clat")
    return _rows_table("fio profiles (aggregate over hosts where there are several)", records, "fio",
                       key, label, [("iops", "op/s", "IOPS"), ("throughput", "B/s", "rate"), p99],
                       ("iops", "op/s"), ["job", "direction"])


def rados_table(records: Iterable[Measurement]) -> Table | None:
    return _rows_table("rados bench", records, "rados-bench",
                       lambda m: (m.test, m.params.get("block_size"), m.params.get("threads")),
                       lambda k: (k[0], f"{size(k[1] or 0)} × {k[2]} threads"),
                       [("throughput", "B/s", "rate"), ("iops", "op/s", "IOPS"), ("lat_mean", "s", "mean lat")],
                       ("throughput", "B/s"), ["phase", "objects"])


def rbd_table(records: Iterable[Measurement]) -> Table | None:
    return _rows_table("rbd bench", records, "rbd-bench",
                       lambda m: (m.test, m.params.get("io_pattern"), m.params.get("io_size"),
                                  m.params.get("io_threads")),
                       lambda k: (k[0], f"{k[1]} {size(k[2] or 0)} × {k[3]} threads"),
                       [("iops", "op/s", "IOPS"), ("throughput", "B/s", "rate")],
                       ("throughput", "B/s"), ["io type", "pattern, size"])


BASELINE_METRIC = {"rawdisk": ("throughput", "B/s"), "iperf3": ("throughput", "B/s"),
                   "ioping": ("lat_mean", "s")}


def baselines_table(records: Iterable[Measurement]) -> Table | None:
    picked = [m for m in records if m.workload in BASELINE_METRIC
              and m.metric == BASELINE_METRIC[m.workload][0]]
    cells = Cells()
    keys: list[Any] = []
    for m in picked:
        k = (m.workload, m.test, m.params.get("direction") or "")
        if k not in keys:
            keys.append(k)
        # one column per system: the metric name is the same for every row of a workload
        cells.add(k, Measurement(m.workload, m.test, "value", m.value, m.unit, m.params, m.backend,
                                 m.variant, m.run_id, m.repeat, m.flags))
    if not keys:
        return None
    systems = cells.systems
    seen: set[str] = set()
    rows = []
    for k in keys:
        unit = BASELINE_METRIC[k[0]][1]
        line = [k[0], f"{k[1]} {k[2]}".strip()]
        for s in systems:
            value, flags = cells.get(k, s, "value")
            line.append(_cell(value, unit, flags, seen, BASELINE_METRIC[k[0]][0]))
        rows.append(line)
    return Table("Baselines: raw storage under the cluster (rawdisk), network to the server (iperf3), "
                 "request latency (ioping)", ["tool", "test", *[system_name(*s) for s in systems]],
                 rows, _flag_notes(seen))


def failures_table(records: Iterable[Measurement]) -> Table | None:
    """Every cell without a value, once per system, cell and error (the tests that share
    them, like the six of a hung iozone invocation, on one line)."""
    grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
    for m in records:
        if m.value is not None:
            continue
        cell = ", ".join(f"{k}={size(v) if k.endswith('size') and isinstance(v, int) else v}"
                         for k, v in m.params.items() if k not in ("error", "note", "ceiling"))
        key = (system_name(m.backend, m.variant), m.workload, cell, ",".join(m.flags),
               str(m.params.get("error") or m.params.get("note", "")))
        tests = grouped.setdefault(key, [])
        if m.test != "cell" and m.test not in tests:
            tests.append(m.test)
    if not grouped:
        return None
    rows = [[system, f"{workload} {', '.join(tests)}".strip(), cell, flags, error]
            for (system, workload, cell, flags, error), tests in grouped.items()]
    flags = {f for row in rows for f in row[3].split(",") if f}
    return Table("Cells that failed or hung (no value)", ["system", "workload", "cell", "flags", "error"],
                 rows, _flag_notes(flags))


def stability_notes(records: list[Measurement]) -> list[str]:
    """Whose stability the repeats can judge, and whose they cannot (one run per cell)."""
    counts: dict[tuple[str, str], dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    for m in records:
        if m.value is not None:
            counts[(m.backend, m.variant)][(m.workload, m.test, m.metric, json.dumps(m.params, sort_keys=True,
                                                                                     default=str))] += 1
    repeated = {s for s, c in counts.items() if max(c.values()) > 1}
    if not repeated:
        return []
    notes = [f"{system_name(*s)}: cells measured {max(counts[s].values())} times; the tables show their "
             "median and run-to-run CV" for s in counts if s in repeated]
    notes += [f"{system_name(*s)}: one run per cell — its stability cannot be judged from repeats"
              for s in counts if s not in repeated]
    return notes


def tables(records: list[Measurement], each_repeat: bool = False,
           infos: dict[str, Any] | None = None, cv_threshold: float | None = None) -> list[Table]:
    """Every table the records fill; with the runs' infos, the records first get the flags
    and ceilings of their physical limits (harness.limits)."""
    if cv_threshold is not None:
        token = CV_THRESHOLD.set(cv_threshold)
        try:
            return tables(records, each_repeat, infos)
        finally:
            CV_THRESHOLD.reset(token)
    if infos:
        from harness.limits import annotate
        records = annotate(records, infos)
    built = [*iozone_tables(records, each_repeat), largefile_table(records), smallfile_table(records),
             fio_table(records), rados_table(records), rbd_table(records), baselines_table(records),
             failures_table(records)]
    return [t for t in built if t is not None]
