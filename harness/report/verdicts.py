"""One cell, judged: the comparator's vocabulary (harness.report.compare builds its tables
of it). The systems shown — their names, which is the control, which is the reference —
the values of each cell over repeats and runs (:class:`Cells`), and the verdict of two
systems in one cell (:class:`Verdict`), decided once, never a win on an unfit cell; and
the :class:`Table` every output reads, which carries its verdicts."""

from __future__ import annotations

import math

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.api import registry
from harness.api.records import AMOUNT, FLAGS, OFFERED_LOAD, Measurement, flag_marks, lower_is_better, unfit_reason
from harness.api.tables import SystemFacts
from harness.report.data import figure as figure_data
from harness.report.stats import Summary, compare, median, summarize
from harness.units import column

ALPHA = 0.05  # significance level of the A-vs-B test
CV_THRESHOLD = 0.10  # a cell whose repeats vary more is flagged 'unstable'
# One run a side cannot tell noise from a difference: below this ratio a single pair is
# "within one run's noise" (run-to-run swings of 0.74-1.29× were seen on the local lab).
SINGLE_RUN_BAND = 1.3

SystemKey = tuple[str, str]


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    chart: dict[str, Any] | None = None  # what the HTML report draws (see harness.report.html)
    # the verdicts its comparison column shows, decided once (Cells.verdict), for every output that
    # summarises them (harness.report.summary); and the workload whose records it shows
    verdicts: list[Verdict] = field(default_factory=list)
    workload: str = ""
    # what a program reads of it (harness.report.data): a name of the code's own (a slug of its title where
    # none is given), and its rows as data where the code that figures them keeps them — each row an object
    # of the columns' keys (``keys``, in order), a number with its unit as {"value", "unit"}
    name: str = ""
    keys: list[str] = field(default_factory=list)
    data: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Verdict:
    """Two systems in one cell, compared once: who is faster and by how much, or why no one
    is. ``ratio``: how many times ``a`` is faster than ``b`` in the metric's direction (the
    medians' ratio with one value a side, the ratio of geometric means with repeats), where
    both sides have values; ``winner`` None with ``reason``: 'flags' (``unfit`` names them),
    'n=1' (one run a side, within its noise), 'not significant', or 'missing' (a side has no
    value). ``text`` is what the comparison column says."""

    a: SystemKey
    b: SystemKey
    metric: str
    text: str
    winner: SystemKey | None = None
    ratio: float | None = None
    reason: str | None = None
    unfit: tuple[str, ...] = ()
    n: tuple[int, int] = (0, 0)
    row: str = ""  # the row's label (set by the table)
    reference: SystemKey | None = None  # which of the two the other is judged against (set by the table)
    per_client: bool = False  # the row is one client's of several (their aggregate has its own row)


@dataclass(frozen=True)
class Systems:
    """Display names and control status of the systems shown, from backend facts."""

    facts: dict[SystemKey, SystemFacts] = field(default_factory=dict)
    # the system every other is compared with (--reference), where one is named; else the
    # first one shown
    reference: SystemKey | None = None
    # runs shown apart (compare --apart): each system's run; a system is judged against
    # one of its own run (:func:`references`)
    runs: dict[SystemKey, str] = field(default_factory=dict)
    # and across them: a system of a later run judged against itself in the first run shown,
    # where nothing that changes what was measured differs between the two runs for it
    across: dict[SystemKey, SystemKey] = field(default_factory=dict)

    def pairs(self, compared: list[SystemKey]) -> list[tuple[SystemKey, SystemKey]]:
        """Each verdict a table draws among ``compared``, as (reference, system): each system
        against its reference (:func:`references`), then against itself in the first run."""
        return [*((ref, s) for s, ref in references(compared, self.runs).items()),
                *((self.across[s], s) for s in compared if self.across.get(s) in compared)]

    def first(self, compared: list[SystemKey]) -> list[SystemKey]:
        """The systems compared, the reference (where it is among them) first."""
        if self.reference not in compared:
            return compared
        return [self.reference, *(s for s in compared if s != self.reference)]

    def of(self, key: SystemKey) -> SystemFacts:
        """Facts stored with the run, else those the backend plugin declares, else none."""
        f = self.facts.get(key)
        if f is None:
            cls = registry.find("backend", key[0])
            f = self.facts[key] = cls.facts({}) if cls is not None else SystemFacts(key[0])
        return f

    def name(self, key: SystemKey) -> str:
        display = self.of(key).display
        return display if key[1] == "default" else f"{display}/{key[1]}"

    def control(self, key: SystemKey) -> bool:
        return self.of(key).control


# flags that say something of one record, not of the cell it was measured in: an aggregate
# that could not be had (its 'why') leaves the cell's other figures, and their verdicts, as
# they are — the row's values and the note beside them say the same
OF_ONE_RECORD = frozenset({"no-aggregate"})


@dataclass
class Cells:
    """Values, flags and ceilings by (row, system, metric), over repeats and runs."""

    values: dict[tuple[Any, SystemKey, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    flags: dict[tuple[Any, SystemKey, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    ceilings: dict[tuple[Any, SystemKey, str], float] = field(default_factory=dict)
    # a cell's flags over all its metrics: a copy's time is as unfit as its flagged rate
    cell_flags: dict[tuple[Any, SystemKey], set[str]] = field(default_factory=lambda: defaultdict(set))
    offered: set[Any] = field(default_factory=set)  # rows whose rates an offered load set
    units: dict[str, str] = field(default_factory=dict)
    systems: list[SystemKey] = field(default_factory=list)
    cv_threshold: float = CV_THRESHOLD
    _summaries: dict[tuple[Any, SystemKey, str], Summary | None] = field(default_factory=dict)
    _known: set[SystemKey] = field(default_factory=set)
    _said: dict[str, Callable[[float | None], str]] = field(default_factory=dict)  # (see :meth:`said`)

    def add(self, row: Any, m: Measurement, metric: str | None = None) -> None:
        system = (m.backend, m.variant)
        if system not in self._known:
            self._known.add(system)
            self.systems.append(system)
        key = (row, system, metric or m.metric)
        self.units.setdefault(metric or m.metric, m.unit)
        self._said.pop(metric or m.metric, None)
        if m.value is not None:
            self.values[key].append(m.value)
        self.flags[key].update(m.flags)
        self.cell_flags[(row, system)].update(f for f in m.flags if f not in OF_ONE_RECORD)
        if m.params.get("ceiling"):
            self.ceilings[key] = m.params["ceiling"]
        if m.unit in AMOUNT and OFFERED_LOAD in m.params:  # (a rate an offered load set: see verdict)
            self.offered.add(row)

    def summary(self, row: Any, system: SystemKey, metric: str) -> Summary | None:
        """Over the cell's repeats (once per cell: every column and chart asks again)."""
        key = (row, system, metric)
        if key not in self._summaries:
            vals = self.values.get(key)
            self._summaries[key] = summarize(vals) if vals and len(vals) > 1 else None
        return self._summaries[key]

    def get(self, row: Any, system: SystemKey, metric: str) -> tuple[float | None, set[str]]:
        """The median over repeats, and the flags (with 'unstable' above the CV threshold)."""
        key = (row, system, metric)
        vals = self.values.get(key)
        flags = set(self.flags.get(key, set()))
        s = self.summary(row, system, metric)
        if s is not None and s.cv > self.cv_threshold:
            flags.add("unstable")
        return (median(vals) if vals else None), flags

    def share(self, row: Any, system: SystemKey, metric: str) -> float | None:
        ceiling = self.ceilings.get((row, system, metric))
        vals = self.values.get((row, system, metric))
        return median(vals) / ceiling if ceiling and vals else None

    def said(self, metric: str) -> Callable[[float | None], str]:
        """How the metric's values are said: in one unit for all its cells (every system's),
        so a column never shows '36.8 ms' beside '0'0.1"' (:func:`harness.units.column`)."""
        if metric not in self._said:
            medians = [median(v) for (_, _, m), v in self.values.items() if m == metric and v]
            self._said[metric] = column(medians, self.units.get(metric, ""), metric)
        return self._said[metric]

    def figure(self, row: Any, system: SystemKey, metric: str, text: str) -> dict[str, Any]:
        """A cell of the table as data (harness.report.data): its median over repeats in the
        metric's unit, how many values it is of, their spread and its flags; ``text`` as shown."""
        value, flags = self.get(row, system, metric)
        vals = self.values.get((row, system, metric)) or []
        s = self.summary(row, system, metric)
        more: dict[str, Any] = {"backend": system[0], "variant": system[1], "metric": metric, "n": len(vals),
                                "flags": sorted(f for f in flags if f in FLAGS), "text": text}
        if s is not None and value is not None:
            more.update(ci_half_width=s.ci_half_width, cv=s.cv)
        share = self.share(row, system, metric)
        if share is not None:
            more["share_of_ceiling"] = share
        why = "" if value is not None else ("no value: " + ", ".join(sorted(flags)) if flags else "not measured")
        return figure_data(value, self.units.get(metric, ""), why, **more)

    def text(self, row: Any, system: SystemKey, metric: str, seen: set[str]) -> str:
        value, flags = self.get(row, system, metric)
        text = self.said(metric)(value)
        s = self.summary(row, system, metric)
        if s is not None and value is not None and math.isfinite(s.ci_half_width) and math.isfinite(s.cv):
            text += f" ±{s.ci_half_width * 100:.0f}% CV {s.cv * 100:.0f}%"  # (none of a mean of 0: no share of it)
        share = self.share(row, system, metric)
        if share is not None:
            text += f" ({share * 100:.0f}%)"
        seen.update(flags)
        return text + flag_marks(flags)

    def judge(self, row: Any, a: SystemKey, b: SystemKey, metric: str, systems: Systems) -> str:
        """The comparison column's text (see :meth:`verdict`)."""
        return self.verdict(row, a, b, metric, systems).text

    def verdict(self, row: Any, a: SystemKey, b: SystemKey, metric: str, systems: Systems) -> Verdict:
        """The comparison column: never a winner on an unfit cell; with repeats on both
        sides the ratio with its interval and Welch's test; with one value a side, the
        plain ratio marked n=1 and a band wide enough for one run's noise."""
        va, vb = self.values.get((row, a, metric)), self.values.get((row, b, metric))
        flags = self.cell_flags.get((row, a), set()) | self.cell_flags.get((row, b), set())
        unfit = unfit_reason(flags)
        n = (len(va or ()), len(vb or ()))
        if unfit:
            return Verdict(a, b, metric, f"not comparable: {unfit}", reason="flags", n=n,
                           unfit=tuple(sorted(f for f in flags if f in FLAGS and FLAGS[f].unfit)))
        if not va or not vb:
            return Verdict(a, b, metric, "—", reason="missing", n=n)
        if row in self.offered and self.units.get(metric) in AMOUNT and "saturated" not in flags:
            # a rate the clients were asked for, and both did, says how much was offered, not
            # which system is faster (one that fell behind [S] did its most: that compares)
            return Verdict(a, b, metric, "set by the offered load (see what each holds)", reason="offered", n=n)
        name_a, name_b = systems.name(a), systems.name(b)
        lower = lower_is_better(self.units.get(metric, ""))
        c = compare(va, vb)
        if c is None:
            ma, mb = median(va), median(vb)
            if ma <= 0 or mb <= 0:
                return Verdict(a, b, metric, "—", reason="missing", n=n)
            ratio = max(ma, mb) / min(ma, mb)
            speed = mb / ma if lower else ma / mb  # (how many times a is faster)
            count = f"n={len(va)}/{len(vb)}" if len(va) != len(vb) else f"n={len(va)}"
            if ratio < SINGLE_RUN_BAND:
                return Verdict(a, b, metric, f"within noise ({ratio:.2f}×, {count})", ratio=speed, reason="n=1", n=n)
            better_a = ma < mb if lower else ma > mb
            return Verdict(a, b, metric, f"{name_a if better_a else name_b} {ratio:.1f}× faster ({count})",
                           a if better_a else b, speed, n=n)
        speed = 1 / c.ratio if lower else c.ratio
        if not c.significant(ALPHA):
            return Verdict(a, b, metric, f"no significant difference (p={c.p_value:.2f})", ratio=speed,
                           reason="not significant", n=n)
        better_a = c.ratio < 1 if lower else c.ratio > 1
        r, lo, hi = (c.ratio, c.ratio_low, c.ratio_high) if c.ratio >= 1 else \
            (1 / c.ratio, 1 / c.ratio_high, 1 / c.ratio_low)
        p = "p<0.001" if c.p_value < 0.001 else f"p={c.p_value:.3f}"
        return Verdict(a, b, metric, f"{name_a if better_a else name_b} {r:.1f}× faster ({lo:.1f}–{hi:.1f}×, {p})",
                       a if better_a else b, speed, n=n)



def references(compared: list[SystemKey], runs: dict[SystemKey, str] | None = None) -> dict[SystemKey, SystemKey]:
    """Whom each system (not the control) is judged against: where systems share a variant
    name on different backends (``glusterfs/ec21``, ``cephfs/ec21``), the first of its name
    — like against like; any other, the first system shown. Runs shown apart (``runs``:
    each system's run): within each run, as if it were shown alone; a system alone in its
    run is judged against none."""
    if runs:
        found: dict[SystemKey, SystemKey] = {}
        for run in dict.fromkeys(runs.get(s, "") for s in compared):
            found.update(references([s for s in compared if runs.get(s, "") == run]))
        return found
    first: dict[str, SystemKey] = {}
    for s in compared:
        first.setdefault(s[1], s)
    paired = {s: first[s[1]] for s in compared if first[s[1]] != s and first[s[1]][0] != s[0]}
    if not paired:
        return {s: compared[0] for s in compared[1:]}
    head = compared[0]
    return {**{s: head for s in compared if s not in paired and s != head and first[s[1]] == s
               and not any(v == s for v in paired.values())}, **paired}
