"""Workload ``iozone``: the report's matrix of file sizes × record sizes × tests, cached
and with O_DIRECT (``-I``).

One cell is one iozone invocation: one mode and one file size, every record size that fits
the file (as ``iozone -a`` pairs them: a larger record has no row of that file), every
test, with ``-R`` so the output carries iozone's labelled report. Each invocation has a
deadline: the report's author saw ``iozone -I`` hang on one client, so a tool that passes
it is killed with its whole process group, the rows it had finished are kept and the
rest are recorded as ``hung``.

iozone's "kBytes/sec" is 1024 bytes per second; records carry B/s.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from harness.api.contracts import Bytes, Options, Workload
from harness.api.parsing import tool_parser
from harness.api.records import Measurement
from harness.api.tables import Column, MatrixSpec
from harness.api.target import Target
from harness.errors import BadInput, DfsbenchError
from harness.units import size

KIB = 1024

# Every iozone test: our name, its -i number, its column in the result table, and the
# title of its section in the -R report.
TESTS: list[tuple[str, int, str]] = [
    ("write", 0, "Writer report"),
    ("rewrite", 0, "Re-writer report"),
    ("read", 1, "Reader report"),
    ("reread", 1, "Re-Reader report"),
    ("random_read", 2, "Random read report"),
    ("random_write", 2, "Random write report"),
    ("bkwd_read", 3, "Backward read report"),
    ("record_rewrite", 4, "Record rewrite report"),
    ("stride_read", 5, "Stride read report"),
    ("fwrite", 6, "Fwrite report"),
    ("frewrite", 6, "Re-Fwrite report"),
    ("fread", 7, "Fread report"),
    ("freread", 7, "Re-Fread report"),
]
TEST_NAMES = [t[0] for t in TESTS]
WRITES = frozenset({"write", "rewrite", "random_write", "record_rewrite", "fwrite", "frewrite"})
# the tests of the report's iozone tables (results/reference/*/iozone.tsv)
REPORT_TESTS = ("write", "rewrite", "read", "reread", "random_read", "random_write")
BY_TITLE = {title.lower(): name for name, _, title in TESTS}
TEST_NUMBERS = {name: number for name, number, _ in TESTS}
MODES = ("cached", "direct")


class IozoneOptions(Options):
    file_sizes: list[Bytes] = Field(description="file sizes (accepts 128MiB, 1GiB)")
    record_sizes: list[Bytes] = Field(description="record sizes (accepts 4KiB, 64KiB)")
    tests: list[int] = Field([0, 1, 2], description="iozone test numbers (-i): 0 write, 1 read, "
                             "2 random, 3 backwards, 4 record rewrite, 5 stride, 6 fwrite, 7 fread")
    modes: list[Literal["cached", "direct"]] = Field(["cached", "direct"],
                                                     description="cached, and/or direct (-I, O_DIRECT)")
    include_flush: bool = Field(False, description="-e: count fsync/fflush in the timing")
    deadline_s: float = Field(1800, gt=0, description="seconds one iozone invocation may take")


    @field_validator("tests")
    @classmethod
    def _tests(cls, v: list[int]) -> list[int]:
        bad = [t for t in v if not 0 <= t <= 7]
        if bad:
            raise ValueError(f"iozone test numbers are 0-7, got {bad}")
        if 0 not in v:
            raise ValueError("test 0 (write) must be included: the other tests read its file")
        return sorted(v)  # (a test given twice is refused as every list's duplicate is)

    @field_validator("record_sizes", "file_sizes")
    @classmethod
    def _whole_kib(cls, v: list[int], info: ValidationInfo) -> list[int]:
        bad = [(i, r) for i, r in enumerate(v) if r % KIB]
        if bad:  # (iozone's -s and -r take KiB)
            i, r = bad[0]
            raise ValueError(f"{info.field_name}[{i}]: {r} bytes; iozone's sizes are whole KiB")
        return v


def _tag(m: Measurement, target: Target, extra: dict[str, Any]) -> Measurement:
    return Measurement(m.workload, m.test, m.metric, m.value, m.unit, {**m.params, **extra},
                       target.backend, target.variant, flags=m.flags)


# ---------------------------------------------------------------- parsing

# (each over the whole text of a run, a line at a time: '[^\S\n]' is a blank that ends no line)
_ROW = re.compile(r"^[^\S\n]*(\d+)[^\S\n]+(\d+)((?:[^\S\n]+-?\d+)+)[^\S\n]*$", re.MULTILINE)
_SECTION = re.compile(r'^[^\S\n]*"([^"\n]+ report)"[^\S\n]*$', re.IGNORECASE | re.MULTILINE)
_QUOTED_NUMBERS = re.compile(r'"(\d+)"')
_COMMAND = re.compile(r"Command line used:\s*(.*)")
_BANNER = re.compile(r"^[ \t]*Iozone: Performance Test of File I/O[ \t]*$", re.MULTILINE)


@tool_parser("iozone")
def parse(text: str, *, tests: list[int] | None = None, source: str = "iozone output") -> list[Measurement]:
    """Measurements from iozone's output: the rows of its result table (printed as each
    file size finishes, so a run that hung part way still has them) and the labelled
    ``-R`` report (printed at the end), which wins where both give a cell. Old versions (3.397, 3.408) and the current one
    (3.489) print both in the same shape; ``-I`` in the command line sets ``direct``.

    A log of several runs (one after another, as ``iozone … ; iozone -I … | tee``) is read
    run by run, each with its own command line: a cached run's numbers are never labelled
    direct, or the other way; the same cell in two runs is two measurements of it (pooled
    as repeats). A run whose text is another's again — its start (``Run began:``) and
    every number — is that run copied, not measured twice: refused. The unit is the run's
    own: kB/s, or operations per second (``-O``: metric ``ops``), or microseconds per
    operation (``-N``: metric ``latency``); a run that names more than one is refused. A
    cell iozone printed as a negative number is a record without a value, flagged
    ``failed``, saying so."""
    runs = [part for part in _BANNER.split(text) if part.strip()] or [text]
    found: list[Measurement] = []
    seen: dict[str, int] = {}
    for number, run in enumerate(runs, 1):
        records = _parse_run(run, tests, source)
        measured = any(m.value is not None for m in records)
        first = seen.setdefault(run, number) if measured else number  # (a run with no numbers counts none twice)
        if first != number:
            began = _BEGAN.search(run)
            raise BadInput(f"{source}: iozone run {number} of {len(runs)} is run {first} again, word for word "
                           f"({began.group(0).strip() if began else 'the same text'}, the same numbers): a log "
                           "copied into itself, whose copies would count as repeats that were never measured",
                           hint="keep each run once in the log (its own 'Run began:' line tells the runs apart)")
        found += records
    if not found and "iozone" not in text.lower():
        raise BadInput(f"{source} does not look like iozone output (no result table, no -R report)",
                       hint="pass the text iozone printed, run with -R (as 'iozone -R … | tee log')")
    return found


_BEGAN = re.compile(r"Run began:[^\n]*")
# (metric, unit, what one number of iozone's output is in that unit) by iozone's output mode
_MODES = {"-O": ("ops", "op/s", 1.0), "-N": ("latency", "s", 1e-6), "": ("throughput", "B/s", float(KIB))}
# how iozone names its unit in its header (iozone.c prints one of these), by its flag for it
_UNIT_WORDS = {"": ("Output is in kBytes/sec",), "-O": ("OPS Mode", "operations per second"),
               "-N": ("Microseconds/op Mode", "microseconds per operation")}
_UNIT_NAMES = {"": "kBytes/sec", "-O": "operations per second (-O)", "-N": "microseconds per operation (-N)"}


def _mode(text: str, argv: list[str], source: str) -> str:
    """The run's output mode: what its header says its numbers are, and its command line's
    ``-O`` or ``-N``; by default kB/s. A run that names two cannot be read as either."""
    named = {flag for flag, words in _UNIT_WORDS.items() if any(w in text for w in words)} | \
            {flag for flag in ("-O", "-N") if flag in argv}
    if len(named) > 1:
        raise BadInput(f"{source}: an iozone run names "
                       f"{' and '.join(_UNIT_NAMES[f] for f in sorted(named, key=list(_UNIT_NAMES).index))} "
                       "as its unit: the output is ambiguous, and its numbers are read in none of them",
                       hint="pass iozone's output as it printed it: one run names one unit (kBytes/sec; -O "
                            "operations per second; -N microseconds per operation)")
    return named.pop() if named else ""


def _parse_run(text: str, tests: list[int] | None, source: str) -> list[Measurement]:
    command = _COMMAND.search(text)
    argv = command.group(1).split() if command else []
    direct, mode = "O_DIRECT feature enabled" in text or "-I" in argv, _mode(text, argv, source)
    metric, unit, scale = _MODES[mode]
    if tests is None:
        tests = _tests_from_command(argv) if command else [0, 1, 2]
    columns = [name for name in TEST_NAMES if TEST_NUMBERS[name] in tests]
    cells: dict[tuple[str, int, int], float] = {}
    for m in _ROW.finditer(text):
        values = [int(v) for v in m.group(3).split()]
        if len(values) > len(columns):
            raise BadInput(f"{source}: a result row has {len(values)} numbers but the tests "
                           f"run ({', '.join(columns)}) give only {len(columns)} columns: {m.group(0).strip()}")
        fsize, rsize = int(m.group(1)) * KIB, int(m.group(2)) * KIB
        cells.update({(test, fsize, rsize): v for test, v in zip(columns, values)})
    cells.update(_parse_report(text))  # labelled, so it wins where both are present
    out = []
    params: dict[tuple[int, int], dict[str, Any]] = {}  # (one per row: its records share it)
    for (test, fsize, rsize), v in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][2],
                                                                         TEST_NAMES.index(kv[0][0]))):
        if v == 0:  # iozone prints 0 for a test it did not get to (e.g. its report on SIGTERM): no number
            continue
        p = params.get((fsize, rsize))
        if p is None:
            p = params[(fsize, rsize)] = {"file_size": fsize, "record_size": rsize, "direct": direct}
        if v < 0 or not math.isfinite(v):  # (no rate, no time is negative: what iozone printed is not a measurement)
            what = f"a negative {_UNIT_NAMES[mode]}" if v < 0 else "not a finite number"
            out.append(Measurement("iozone", test, metric, None, unit,
                                   {**p, "error": f"iozone printed {v:g} for this cell, which is not a "
                                                  f"measurement ({what})"},
                                   flags=("failed",)))
            continue
        out.append(Measurement("iozone", test, metric, v * scale, unit, p))
    return out


def _tests_from_command(argv: list[str]) -> list[int]:
    tests = [int(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a == "-i" and argv[i + 1].isdigit()]
    return sorted(set(tests)) if tests else list(range(13))


def _parse_report(text: str) -> dict[tuple[str, int, int], float]:
    """``"Writer report"``, then a line of quoted record sizes (KiB), then one line per
    file size: ``"16384"   2078  27659``."""
    out: dict[tuple[str, int, int], float] = {}
    sections = list(_SECTION.finditer(text))
    for i, section in enumerate(sections):
        test = BY_TITLE.get(section.group(1).lower())
        if test is None:
            continue
        records: list[int] = []
        for line in text[section.end():sections[i + 1].start() if i + 1 < len(sections) else len(text)].splitlines():
            if not line.strip():
                continue
            quoted = _QUOTED_NUMBERS.findall(line)
            if not records and quoted and len(quoted) == len(line.replace('"', " ").split()):
                records = [int(q) * KIB for q in quoted]  # the header of record sizes
                continue
            if records and len(quoted) == 1 and line.lstrip().startswith('"'):
                fsize = int(quoted[0]) * KIB
                values = line.split('"', 2)[2].split()
                for rsize, v in zip(records, values):
                    out[(test, fsize, rsize)] = float(v)
    return out


class Iozone(Workload):
    name = "iozone"
    version_argv = ("iozone", "-v")
    tools = (("iozone", "iozone3 (Debian non-free)"),)
    tool = "iozone"
    parser = staticmethod(parse)
    suites = {"report": 0}
    Options = IozoneOptions
    options: IozoneOptions
    # the report's layout: file size KB × record KB → tests, in iozone's KB/s (1024 B/s)
    tables = (MatrixSpec("iozone on {system}, {group}, KB/s", "throughput",
                         group=lambda m: "O_DIRECT (-I)" if m.params.get("direct") else "cached",
                         row=lambda m: ((m.params["file_size"], m.params["record_size"]),
                                        (f"{m.params['file_size'] // KIB}", f"{m.params['record_size'] // KIB}")),
                         row_header=("file size KB", "record KB"),
                         columns=tuple(Column(name, name.replace("_", " ")) for name, _, _ in TESTS),
                         scale=KIB, unit_label="KB/s"),
              # an output of iozone -O or -N (imported): its own unit, in tables of its own
              *(MatrixSpec(f"iozone on {{system}}, {{group}}, {label}", metric,
                           group=lambda m: "O_DIRECT (-I)" if m.params.get("direct") else "cached",
                           row=lambda m: ((m.params["file_size"], m.params["record_size"]),
                                          (f"{m.params['file_size'] // KIB}", f"{m.params['record_size'] // KIB}")),
                           row_header=("file size KB", "record KB"),
                           columns=tuple(Column(name, name.replace("_", " ")) for name, _, _ in TESTS),
                           scale=scale, unit_label=label)
                for metric, label, scale in (("ops", "operations/s (-O)", 1.0), ("latency", "µs per operation (-N)", 1e-6))))

    @classmethod
    def is_write(cls, record: Measurement) -> bool:
        return record.test in WRITES

    @classmethod
    def reference(cls, rows: list[dict[str, str]], run_id: str) -> Iterator[Measurement]:
        """Rows of file KB, record KB, mode (cached|direct), repeat and each test's KB/s."""
        for row in rows:
            params = {"file_size": int(row["file_kb"]) * KIB, "record_size": int(row["record_kb"]) * KIB,
                      "direct": row["mode"] == "direct"}
            for test in REPORT_TESTS:
                yield Measurement("iozone", test, "throughput", float(row[test]) * KIB, "B/s", params,
                                  row["backend"], row["variant"], run_id, int(row["repeat"]))

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        if scale == "report":  # -n 128m -g 1G -r 4K -r 16K -r 64K, plus 128K
            return {"file_sizes": [128 << 20, 256 << 20, 512 << 20, 1 << 30],
                    "record_sizes": [4 * KIB, 16 * KIB, 64 * KIB, 128 * KIB], "deadline_s": 4 * 3600}
        # small enough that the O_DIRECT 4 KiB cells through FUSE and replication (about
        # 1 MB/s on a one-host CephFS: 16 and 32 MiB files took 220 s there alone) keep
        # 'make demo' within 5 minutes
        return {"file_sizes": [4 << 20, 16 << 20], "record_sizes": [4 * KIB, 64 * KIB],
                "deadline_s": 900}

    def cells(self) -> list[dict[str, Any]]:
        return [{"mode": mode, "file_size": size} for mode in self.options.modes
                for size in self.options.file_sizes]

    def writes(self, cell: dict[str, Any]) -> int:
        return int(cell["file_size"])

    def records(self, cell: dict[str, Any]) -> list[int]:
        """The record sizes a cell measures: those that fit its file. iozone 3.489 measures no
        record larger than the file (given alone: 'Error reading block 0'; among smaller
        ones: that row left out, in silence), so a cell is not given one."""
        return [r for r in self.options.record_sizes if r <= int(cell["file_size"])]

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        """A record larger than every file: no cell would measure it (:meth:`records`)."""
        o = self.options
        largest = max(o.file_sizes)
        for j, r in enumerate(o.record_sizes):
            if r > largest:
                i = o.file_sizes.index(largest)
                return (f"record_sizes[{j}]", f"{size(r)} is larger than every file (the largest is file_sizes[{i}], "
                        f"{size(largest)}): iozone reads and writes a file in whole records, and measures nothing "
                        "of a record larger than the file", f"give record sizes of at most {size(largest)}, or a "
                        "larger file")
        return None

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        return "deadline_s", self.options.deadline_s

    def command(self, cell: dict[str, Any], path: Path) -> list[str]:
        o = self.options
        argv = ["iozone", "-R", "-s", f"{cell['file_size'] // KIB}k"]
        for r in self.records(cell):
            argv += ["-r", f"{r // KIB}k"]
        for t in o.tests:
            argv += ["-i", str(t)]
        if cell["mode"] == "direct":
            argv.append("-I")
        if o.include_flush:
            argv.append("-e")
        return argv + ["-f", str(path)]

    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        target.host.require("iozone", "iozone3 (Debian non-free)")
        path = target.directory / f"dfsbench-iozone-{uuid.uuid4().hex[:8]}"
        argv = self.command(cell, path)
        out = raw_dir / f"iozone-{cell['mode']}-{cell['file_size']}.txt"
        with target.host.removing(path):
            result = target.host.run_tool(argv, deadline=self.options.deadline_s, output=out,
                                          cwd=scratch)
        found = parse(result.output, tests=self.options.tests) if result.output.strip() else []
        extra = {"cache": "none (cached mode)" if cell["mode"] == "cached" else "O_DIRECT"}
        done = set()
        for m in found:
            done.add((m.test, m.params["record_size"]))
            yield _tag(m, target, extra)
        missing = [(test, r) for r in self.records(cell) for test in TEST_NAMES
                   if TEST_NUMBERS[test] in self.options.tests and (test, r) not in done]
        if not missing:
            if not result.ok:  # every number is there, but the tool still complained
                raise result.failure()
            return
        flag = "hung" if result.hung else "failed"
        if not found and not result.hung:
            raise DfsbenchError(result.problem() or "iozone printed no results",
                                hint=f"its output is kept in {out}")
        for test, r in missing:
            params = {"file_size": cell["file_size"], "record_size": r,
                      "direct": cell["mode"] == "direct", **extra,
                      "error": (result.problem() or "no result for this cell")[:300]}
            yield Measurement("iozone", test, "throughput", None, "B/s", params,
                              target.backend, target.variant, flags=(flag,))


def estimate_seconds(records: list[Measurement], file_sizes: list[int], record_sizes: list[int],
                     tests: list[int], direct: bool = True) -> dict[tuple[str, str], float]:
    """Seconds a matrix would take per (backend, variant), from measured rates.

    With O_DIRECT every request waits for the storage, so a test's rate depends on the
    record size far more than on the file size: each planned cell takes file size / the
    median rate measured for that test and record size (or the nearest measured record
    size, which overestimates for larger records); a record larger than a file is not run
    on it (:meth:`Iozone.records`)."""
    rates: dict[tuple[str, str, str, int], list[float]] = {}
    for m in records:
        if m.workload == "iozone" and m.value and bool(m.params.get("direct")) == direct:
            rates.setdefault((m.backend, m.variant, m.test, m.params["record_size"]), []).append(m.value)
    out: dict[tuple[str, str], float] = {}
    names = [t for t in TEST_NAMES if TEST_NUMBERS[t] in tests]
    for backend, variant in sorted({(k[0], k[1]) for k in rates}):
        total = 0.0
        for test in names:
            measured = sorted(k[3] for k in rates if k[:3] == (backend, variant, test))
            if not measured:
                continue
            for r in record_sizes:
                nearest = min(measured, key=lambda x: abs(x - r))
                values = sorted(rates[(backend, variant, test, nearest)])
                rate = values[len(values) // 2]
                total += sum(f / rate for f in file_sizes if r <= f)
        out[(backend, variant)] = total
    return out
