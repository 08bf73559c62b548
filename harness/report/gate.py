"""The regression gate: ``dfsbench compare NEW --baseline OLD --fail-on 'throughput:-10%'``.

A cell regresses when its median got worse than the rule allows — a lower rate, or a
higher time or latency — and, where both runs have repeats, the change is significant by
Welch's test (a change inside the noise does not fail a build). Cells are matched by
workload, test, metric, backend, variant and parameters. A metric has one rule: its own,
else the rule for every metric (``*``), whatever their order.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.api.records import CIRCUMSTANTIAL, Measurement, lower_is_better
from harness.errors import BadInput
from harness.report.stats import compare, median
from harness.report.verdicts import ALPHA, Systems, Table
from harness.system.files import printable
from harness.units import format_value

# ASCII only, spaces around its parts (a '１' or a newline is no part of a rule), matched whole
_RULE = re.compile(r" *([A-Za-z0-9_.*-]+) *: *([+-]?)([0-9]+(?:\.[0-9]+)?) *% *")
SHOWN = 120  # the most of the user's rules a message echoes


@dataclass(frozen=True)
class Rule:
    metric: str  # a metric name, or * for every metric without a rule of its own
    limit: float  # how much worse is allowed, as a fraction (0.10)
    text: str = ""  # as written


def parse_rules(text: str) -> list[Rule]:
    """'throughput:-10%,lat_p99:+20%' — the sign is optional: 'worse' follows the metric
    (lower for rates, higher for times). One rule a metric (and one '*', for the metrics
    without their own): two would leave which holds to their order."""
    hint = "write METRIC:-N% (e.g. throughput:-10%, lat_p99:+20%, *:-5%), several separated by commas"
    if not text.strip():
        raise BadInput("--fail-on '' names no rule: the gate would check nothing", hint=hint)
    rules: dict[str, Rule] = {}
    for part in text.split(","):
        m = _RULE.fullmatch(part)
        if not m:
            raise BadInput(f"--fail-on: '{printable(part.strip(), 80)}' is not a rule", hint=hint)
        rule = Rule(m.group(1), float(m.group(3)) / 100)
        if rule.metric in rules:
            raise BadInput(f"--fail-on: two rules on {printable(rule.metric, 80)} "
                           f"('{printable(rules[rule.metric].text, 80)}' and '{printable(part.strip(), 80)}')",
                           hint="give each metric one rule")
        rules[rule.metric] = replace(rule, text=part.strip())
    return list(rules.values())


def shown(rules: list[Rule]) -> str:
    """The rules as the user wrote them, for a message: on one line, cut to :data:`SHOWN`."""
    return printable(",".join(r.text for r in rules), SHOWN)


def rule_for(rules: list[Rule], metric: str) -> Rule | None:
    """The rule that holds for ``metric``: its own, else the one for every metric ('*')."""
    return next((r for r in rules if r.metric == metric), None) or next((r for r in rules if r.metric == "*"), None)


def _key(m: Measurement) -> tuple[Any, ...]:
    params = {k: v for k, v in m.params.items() if k not in CIRCUMSTANTIAL}
    return (m.workload, m.test, m.metric, m.backend, m.variant, json.dumps(params, sort_keys=True))


@dataclass(frozen=True)
class Finding:
    key: tuple[Any, ...]
    unit: str
    old: float
    new: float
    change: float  # signed relative change of the median (new / old - 1)
    p_value: float | None
    limit: float


def check(new: Sequence[Measurement], old: Sequence[Measurement], rules: list[Rule]) -> tuple[int, list[Finding]]:
    """(cells compared, regressions). A rule on a metric that no cell of both sides has is
    refused, naming the metrics they have: a misspelt metric would check nothing in silence."""
    def grouped(records: Sequence[Measurement]) -> dict[tuple[Any, ...], list[float]]:
        out: dict[tuple[Any, ...], list[float]] = defaultdict(list)
        for m in records:
            if m.value is not None:
                out[_key(m)].append(m.value)
        return out

    units = {_key(m): m.unit for m in [*new, *old]}
    a, b = grouped(new), grouped(old)
    metrics = sorted({key[2] for key in set(a) & set(b)})
    unknown = [r for r in rules if r.metric != "*" and r.metric not in metrics]
    if metrics and unknown:  # (no cell in common at all: the caller says so)
        raise BadInput(f"--fail-on: no cell of both runs has the metric "
                       f"{', '.join(repr(printable(r.metric, 60)) for r in unknown[:5])}",
                       hint=f"the metrics both runs have: {', '.join(metrics) or 'none'}; "
                            "correct the rule's metric, or use * for every metric")
    compared, found = 0, []
    for key in sorted(set(a) & set(b), key=str):
        rule = rule_for(rules, key[2])
        if rule is None:
            continue
        compared += 1
        unit = units[key]
        old_v, new_v = median(b[key]), median(a[key])
        if old_v <= 0:
            continue
        change = new_v / old_v - 1
        worse = change > rule.limit if lower_is_better(unit) else change < -rule.limit
        c = compare(a[key], b[key])
        if worse and (c is None or c.p_value < ALPHA):
            found.append(Finding(key, unit, old_v, new_v, change, c.p_value if c else None, rule.limit))
    return compared, found


def table(findings: list[Finding], baseline: str, systems: Systems | None = None) -> Table:
    systems = systems or Systems()
    rows = []
    for f in findings:
        workload, test, metric, backend, variant, params = f.key
        cell = ", ".join(f"{k}={v}" for k, v in json.loads(params).items())
        rows.append([systems.name((backend, variant)), f"{workload} {test}", cell, metric,
                     format_value(f.old, f.unit, metric), format_value(f.new, f.unit, metric),
                     f"{f.change * 100:+.1f}% (limit {f.limit * 100:.0f}%)",
                     "—" if f.p_value is None else ("<0.001" if f.p_value < 0.001 else f"{f.p_value:.3f}")])
    return Table(f"Regressions against {baseline}", ["system", "workload", "cell", "metric", "baseline",
                                                     "now", "change", "p"], rows,
                 ["a regression is a median worse than the rule allows (lower rate, higher time "
                  "or latency) and, with repeats on both sides, significant by Welch's test"])
