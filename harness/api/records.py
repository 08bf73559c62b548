"""The measurement record: one number, in base units, with everything that qualifies it.

This is the public contract spoken by the store, ``parse``, ``import`` and
``compare --format json`` (see DESIGN.md).
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from harness.api.faults import PHASES
from harness.api.histogram import Histogram
from harness.api.series import Series
from harness.errors import BadInput
from harness.system import outputs

UNITS = frozenset({"B", "B/s", "op/s", "s", "files/s", "%", "s/GiB"})  # s/GiB: CPU time per GiB moved

# Every flag a record can carry: its code in a table cell, what it means and what to do
# (printed once under a table), and, for a flag that makes a cell unfit for a verdict, the
# reason the comparison column gives instead of a winner.
@dataclass(frozen=True)
class Flag:
    code: str
    meaning: str
    unfit: str | None = None  # e.g. "cache": the verdict says "not comparable: cache [N]"


FLAGS: dict[str, Flag] = {
    "failed": Flag("F", "the tool failed; the cell has no value. Its error is listed under 'Cells "
                   "that failed'; the raw output is stored with the run.", "failed"),
    "hung": Flag("H", "the tool passed its deadline and was killed; the cell has no value. Check "
                 "the client (the 2014 report saw O_DIRECT hang on one), or raise the workload's "
                 "deadline_s.", "hung"),
    "incomplete": Flag("I", "the tool ended early; the value covers only part of the work. Rerun "
                       "the cell.", "incomplete"),
    "no-cache-drop": Flag("D", "caches were not dropped before this read (or could not be: not "
                          "root?, or a FUSE client the user mounted, which dfsbench cannot "
                          "remount); it may measure the client's cache, not the storage. Run as "
                          "root and let dfsbench mount the file system, or distrust it.",
                          "no cache drop"),
    "page-cache-kept": Flag("K", "the FUSE client was remounted before this read (its own cache "
                            "and the kernel's pages of that mount are gone), but the kernel page "
                            "cache could not be dropped (a container cannot write drop_caches): "
                            "reads of files outside the mount may have been served from memory."),
    "exceeds-network": Flag("N", "faster than the network allows: a cache answered, not the "
                            "storage. Use O_DIRECT, or files larger than the client's RAM, and "
                            "drop caches.", "cache"),
    "fits-in-cache": Flag("C", "cached mode with a file smaller than client RAM: it measures "
                          "caching. Read it as a cache figure, or use O_DIRECT or larger files.",
                          "cache"),
    "write-behind": Flag("W", "the system's client acknowledges a write from a buffer of its own, O_DIRECT "
                         "or not, and sends it to the servers later (at a close or an fsync): this O_DIRECT "
                         "write measured that buffer, not the storage. Compare writes that end with an fsync "
                         "(largefile) or a close (smallfile).", "client buffer"),
    "unstable": Flag("U", "the repeats vary more than the CV threshold; the median is not a firm "
                     "figure. Add repeats or find the source of the noise before comparing."),
    "not-comparable": Flag("X", "the runs shown together (pooled, or --apart) differ in what they measured (listed "
                           "above); the difference may come from that, not from the systems.",
                           "setups differ"),
    "degraded": Flag("G", "measured while part of the cluster was down or recovering.",
                     "degraded"),
    "host-bound": Flag("B", "measured while this machine's CPUs or the disk under the lab were "
                       "saturated (every node of the lab runs on this one machine), or, in an S3 cell, while the "
                       "load generator's workers were on a CPU or waiting for one 90 % of the time: the figure "
                       "measured the machine or the client, not the design. Give the lab fewer nodes or a bigger "
                       "host (an S3 cell: fewer workers, or a client of its own): the header names the options of "
                       "the run's config that set the load (and 'run --repeat').",
                       "host saturated"),
    "contended": Flag("L", "measured while a node of another system on the same lab was busy (at least 10 % of "
                      "its capacity over the pass: another run on the lab, or that system's own work): "
                      "the lab was shared, and the figure may hold the neighbour's load as much as this "
                      "system's. The table of busiest nodes names the node. Run on a lab of its own, or "
                      "when nothing else runs on it.", "lab contended"),
    "no-aggregate": Flag("A", "the clients' records of this cell cannot be added up: they differ in "
                         "their parameters, or do not say when each ran and what it moved (the "
                         "record's 'why' says which); the per-client rows stand alone.", "no aggregate"),
    "implausible": Flag("V", "the stored value cannot be a measurement (below zero, or beyond what any "
                        "storage does: 1 PiB/s, 10^9 op/s or files/s, a year): the store was damaged or "
                        "written by another program; the cell has no value. The record's 'error' gives "
                        "the stored value.",
                        "implausible value"),
    "no-fault": Flag("Z", "no fault was done in this cell: its timed phase ended before the fault's "
                     "after_s (or the fault could not be done: its error says why). Give the cell more "
                     "work or the fault an earlier after_s.", "no fault done"),
    "saturated": Flag("S", "at this offered load the system completed under 95 % of the I/Os offered, by "
                      "more than chance gives the arrivals (3 sigma): it is past what it holds, and the "
                      "latency shown is that of a growing queue, not of the load asked for. Read the "
                      "highest offered load without this flag as what it holds. The clients' aggregate "
                      "('all') carries it where one of its clients does."),
    "not-noticed": Flag("O", "the fault was undone before the system noticed it: there was nothing "
                        "to recover from, so there is no recovery time. Hold the fault longer "
                        "than the system's failure detection to measure one.", "fault not noticed"),
}


def flag_code(flag: str) -> str:
    known = FLAGS.get(flag)
    return known.code if known else flag


def flag_marks(flags: set[str] | frozenset[str] | tuple[str, ...]) -> str:
    """' [N,C]' for a cell's flags, '' for none."""
    return " [" + ",".join(sorted(flag_code(f) for f in flags)) + "]" if flags else ""


def flag_notes(flags: set[str] | frozenset[str]) -> list[str]:
    """One line per flag seen, explaining it (printed once under a table)."""
    return [f"[{flag_code(f)}] {f}: {FLAGS[f].meaning if f in FLAGS else ''}"
            for f in sorted(flags, key=flag_code)]


def unfit_reason(flags: set[str] | frozenset[str]) -> str | None:
    """Why a cell with these flags must not be called a win: 'cache [N,C]', or None."""
    unfit = sorted((f for f in flags if f in FLAGS and FLAGS[f].unfit), key=flag_code)
    if not unfit:
        return None
    reasons = list(dict.fromkeys(FLAGS[f].unfit for f in unfit))
    return f"{', '.join(r for r in reasons if r)} [{','.join(flag_code(f) for f in unfit)}]"


# Params that say how a number was obtained, not which cell it belongs to: two records
# that differ only in these are the same cell (pooled over repeats and runs).
# what the harness adds to a workload's cell: the phase of a fault (harness.api.faults), the
# client of a run on several at once (harness.execution.together, fio's client/server mode)
HARNESS_PARAMS = ("phase", "host")
# what describes how a value came about, not which cell it belongs to
CIRCUMSTANTIAL = frozenset({"cache", "error", "note", "ceiling", "argv", "busiest", "process", "process_cpu",
                            "started", "ended", "bytes", "ops", "moved", "basis", "stonewall", "why",
                            "moved_each", "cpu_s", "nodes", "sampled_s", "stalled_s",
                            # the untimed warm-up before a timed run (fio's ramp_time), left out of it
                            "warmup_s",
                            # an S3 cell's errors and its load generator's CPU: a client's own (CLIENTS_OWN)
                            "failed_ops", "error_kinds", "error_said", "client_cpu_s", "client_busy_share",
                            "reconnects",
                            # an imported warp output's: the window it measured in, and how many
                            # requests a mean is over
                            "window_s", "requests_timed",
                            # how the clients of a cell on several hosts were launched (mpi, exec)
                            "launcher",
                            # a point of offered load is its cell's rate or share (offered_iops,
                            # offered_fraction); what each client offered and the most it did vary
                            "offered_iops_per_client", "max_iops_per_client"})
# what one client says of its own part of a cell (an S3 cell's errors, its load generator's CPU,
# its connections opened again): never a figure of the clients' aggregate, which leaves them out
CLIENTS_OWN = frozenset({"failed_ops", "error_kinds", "error_said", "client_cpu_s", "client_busy_share", "reconnects"})
# what a rate's unit counts, and the param of a client's record that says how much of it the
# client moved in its timed phase (between ``started`` and ``ended``)
AMOUNT = {"B/s": "bytes", "files/s": "files", "op/s": "ops"}
# the ``host`` of a record over several clients: ``all``, what they all moved over the span
# from the first start to the last end (harness.execution.together); ``total``, a tool's
# own total over its clients where it says no client's start (its ``basis`` says how)
ALL_CLIENTS, TOOL_TOTAL = "all", "total"
# the param of a record measured at an offered load (open loop): what each client host offered
# (op/s); its rate then says what was asked of the system, not how fast it is
OFFERED_LOAD = "offered_iops_per_client"
# an open loop fell behind its offered load ('saturated'): under this share of what was offered
# completed, by more than Poisson arrivals vary by chance (this many sigma)
SATURATED_BELOW, CHANCE_SIGMAS = 0.95, 3.0


def fell_behind(asked: float, done: float) -> bool:
    """Fewer operations completed than the ``asked`` ones offered, under :data:`SATURATED_BELOW`
    of them and by more than :data:`CHANCE_SIGMAS` sigma of Poisson arrivals."""
    return done < SATURATED_BELOW * asked and asked - done > CHANCE_SIGMAS * asked ** 0.5
OVER_CLIENTS = frozenset({ALL_CLIENTS, TOOL_TOTAL})


def lower_is_better(unit: str) -> bool:
    """The direction of every metric follows its unit: a time (and CPU time per GiB) is
    better smaller, a rate (B/s, op/s, files/s) or a size better larger."""
    return unit in ("s", "s/GiB")


@dataclass(frozen=True)
class Measurement:
    workload: str
    test: str
    metric: str
    value: float | None
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    backend: str = ""
    variant: str = "default"
    run_id: str = ""
    repeat: int = 0
    flags: tuple[str, ...] = ()
    # how much the record's client had moved so far at moments of its timed phase: (time on
    # this machine's clock, bytes / files / operations as its unit counts them) — what an
    # aggregate over several clients reads for the interval they all ran in. Not part of the
    # record as stored (the raw output keeps it).
    progress: tuple[tuple[float, float], ...] = field(default=(), compare=False, repr=False)
    # the record's figure over time (harness.api.series): given by the tool itself (its
    # per-second lines, a node's samples), or, where none is given, binned by the runner
    # from ``progress``; stored beside the record (the store's ``series`` table)
    series: Series | None = field(default=None, compare=False, repr=False)
    # where the record is a percentile of a latency: the tool's histogram it was taken from
    # (harness.api.histogram), which an aggregate over clients merges. Not stored.
    histogram: Histogram | None = field(default=None, compare=False, repr=False)
    # the cell the record was measured in, as its run stored it (harness.execution.cell.cell_key:
    # system, repeat, workload entry, params and point): what joins a cell's records to each
    # other (harness.report.cells). None for a record no run stored (parse, an import of lines).
    # Not part of the record's JSON: a bundle carries it beside the record.
    cell: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric}: unit "
                           f"'{self.unit}' is not one of {', '.join(sorted(UNITS))}")
        if self.value is None:
            if not self.flags:
                raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric} has no "
                               "value and no flag saying why")
        else:
            value = float(self.value)
            if math.isnan(value) or math.isinf(value):
                raise BadInput(f"measurement {self.workload}/{self.test}/{self.metric}: "
                               f"value {self.value} is not a finite number")
            object.__setattr__(self, "value", value)
        object.__setattr__(self, "flags", tuple(self.flags))

    def to_dict(self) -> dict[str, Any]:
        """The record as the contract's JSON object (its params a copy: what a caller changes
        of it is not the record's)."""
        params = {k: copy.deepcopy(v) if isinstance(v, (dict, list)) else v for k, v in self.params.items()}
        return {"workload": self.workload, "test": self.test, "metric": self.metric, "value": self.value,
                "unit": self.unit, "params": params, "backend": self.backend, "variant": self.variant,
                "run_id": self.run_id, "repeat": self.repeat, "flags": list(self.flags)}

    def to_json(self) -> str:
        """The record as strict JSON: a non-finite param is null, named under ``non_finite``
        (:func:`harness.system.outputs.json_text`)."""
        return outputs.json_text(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k not in ("progress", "series", "histogram", "cell")}
        known["flags"] = tuple(known.get("flags", ()))
        return cls(**known)


def params_key(m: Measurement) -> str:
    """The record's cell within its test, as text: its params but the circumstantial ones."""
    return json.dumps({k: v for k, v in m.params.items() if k not in CIRCUMSTANTIAL},
                      sort_keys=True, default=str)


def params_keys() -> Callable[[Measurement], str]:
    """:func:`params_key`, once per params object: the metrics of one tool run share theirs
    (harness.results.store), and so do records annotated alike (harness.report.limits)."""
    memo: dict[int, tuple[dict[str, Any], str]] = {}

    def key(m: Measurement) -> str:
        found = memo.get(id(m.params))
        if found is None or found[0] is not m.params:  # (holding the params keeps their id theirs)
            found = memo[id(m.params)] = (m.params, params_key(m))
        return found[1]

    return key


_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]+)?)")


def _value_order(key: str, value: Any) -> tuple[Any, ...]:
    """Where a parameter's value sorts among the same parameter's: a fault's phase in time
    order (before, during, after), a number (a size, a count, a load) by its value, a text
    by its words and the numbers in it (``client2`` before ``client10``)."""
    if key == "phase" and value in PHASES:
        return 0, PHASES.index(value), ()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value):
        return 1, value, ()
    parts = _NUMBER.split(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))
    return 2, 0, tuple((text, float(number) if number else -1.0) for text, number in zip(parts[::2], [*parts[1::2], ""]))


def cell_order(params: dict[str, Any]) -> tuple[Any, ...]:
    """How cells sort, in every table: by their parameters in the order the cell names them,
    each by its value (:func:`_value_order`: '64 MiB' before '256 MiB', phases before,
    during, after — never as text); a client's own row after the cell's, by its name, the
    clients' aggregate after theirs."""
    host = params.get("host")
    return (tuple((k, _value_order(k, v)) for k, v in params.items()
                  if k not in CIRCUMSTANTIAL and k != "host"),
            (0, ()) if host is None else (2, ()) if host in OVER_CLIENTS else (1, _value_order("host", host)))


def describe_cell(params: dict[str, Any], leave_out: tuple[str, ...] = ()) -> str:
    """``key=value`` pairs of a cell for people: sizes in units, circumstantial keys and
    ``leave_out`` left out."""
    from harness.units import size

    return " ".join(f"{k}={size(v) if k.endswith('size') and isinstance(v, int) else v}"
                    for k, v in params.items() if k not in CIRCUMSTANTIAL and k not in leave_out)
