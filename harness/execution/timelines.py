"""What the runner keeps of each record over time, and what a fault did to the clients'
rate (``harness.api.series``).

A rate of one client (B/s, files/s, op/s) that reported its progress is kept as its rate in
every second (:func:`harness.api.series.per_second`); a record whose tool gave its own
figures over time keeps those. An aggregate over clients keeps none: its rate in each
second is the sum of its clients' (:func:`harness.api.series.summed`), computed where it is
shown, never stored twice."""

from __future__ import annotations

from typing import Any

from harness.api.records import AMOUNT, OVER_CLIENTS, Measurement
from harness.api.series import SLACK_S, Series, fault_figures, kept, moving, per_second, summed

RATE_ORDER = ("B/s", "files/s", "op/s")  # which rate a fault's figures follow, where a cell has several


def series_of(m: Measurement) -> Series | None:
    """The series kept with a record: the tool's own, else its progress binned per second
    (a client's rate only: never an aggregate's, whose progress is one client's) — only what
    the store reads back of it (:func:`harness.api.series.kept`: in time order, within the
    interval its params give, ``started`` to ``ended``; a progress note outside that is not
    binned, so a clock that stepped to 1970 and back makes no second in between)."""
    started, ended = m.params.get("started"), m.params.get("ended")
    if m.series is not None:
        return kept(m.series, m.unit, started, ended)
    if m.unit not in AMOUNT or m.params.get("host") in OVER_CLIENTS or m.metric.endswith("_stonewalled") \
            or m.value is None:
        return None
    progress = m.progress
    if isinstance(started, (int, float)) and isinstance(ended, (int, float)):
        progress = tuple((t, a) for t, a in progress if started - SLACK_S / 2 <= t <= ended + SLACK_S / 2)
    return kept(per_second(progress), m.unit, started, ended)


def rate_key(m: Measurement) -> tuple[str, str, str]:
    """What a timeline adds up over clients: one test's one rate."""
    return m.test, m.metric, m.unit


def clients_rates(records: list[Measurement], phase: str) -> dict[tuple[str, str, str], list[Measurement]]:
    """The per-client rate records of a phase that have a per-second series, by test and rate."""
    found: dict[tuple[str, str, str], list[Measurement]] = {}
    for m in records:
        if m.params.get("phase") == phase and m.series is not None and m.series.source == "progress" \
                and m.params.get("host") not in OVER_CLIENTS and m.unit in AMOUNT:
            found.setdefault(rate_key(m), []).append(m)
    return found


def fault_params(records: list[Measurement], times: dict[str, float | None]) -> dict[str, Any]:
    """The three figures of a fault (:func:`harness.api.series.fault_figures`) as params of
    its record: of the rate that ran when the fault was injected (the clients' aggregate of
    one test's rate, bytes before files before operations), against that rate's level in
    the ``before`` phase. ``figures_why`` says why a figure is missing."""
    injected, healthy = times.get("injected"), times.get("healthy")
    during = clients_rates(records, "during")
    if injected is None or not during:
        return {"figures_why": "no fault was injected" if injected is None else
                "no client of the cell reported its rate over time"}

    def ran_then(key: tuple[str, str, str]) -> bool:
        return any(s.series is not None and s.series.start <= injected <= s.series.end for s in during[key])

    keys = sorted(during, key=lambda k: (not ran_then(k), RATE_ORDER.index(k[2]) if k[2] in RATE_ORDER else 9))
    key = keys[0]
    before = [m.series for m in clients_rates(records, "before").get(key, []) if m.series]
    now = [m.series for m in during[key] if m.series]
    figures = fault_figures(summed(before), summed(now), injected, healthy, moving(before), moving(now))
    params: dict[str, Any] = {"figures_of": f"{key[0]} {key[1]}, {len(during[key])} client(s)", "rate_unit": key[2],
                              "level": figures.level, "lowest_rate": figures.lowest, "stall_s": figures.stall_s,
                              "back_to_level_s": figures.back_s, "closing_s": figures.closing_s}
    if figures.why:
        params["figures_why"] = "; ".join(f"{k}: {v}" for k, v in figures.why.items())
    return params
