"""The table of aggregates over several clients (``host: all``, harness.execution.together):
per cell and rate, what all the clients moved over the span from the first start to the
last end, and — where their intervals differed — the rate while all of them ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.api.records import AMOUNT, CIRCUMSTANTIAL, Measurement, describe_cell, flag_marks
from harness.report import cells
from harness.report.data import figure, flags as data_flags
from harness.units import format_value, size


def _clients(params: dict[str, Any]) -> str:
    """Whose records an aggregate adds up: its clients, or the MPI ranks on them."""
    if isinstance(params.get("ranks"), int):
        return f"{params['ranks']} ranks on {params.get('clients')} hosts,"
    return str(params.get("clients"))


def _amount(unit: str, moved: float) -> str:
    return size(moved) if unit == "B/s" else f"{moved:,.0f} {AMOUNT.get(unit, '')}"


def _share(m: Measurement) -> str:
    ceiling = m.params.get("ceiling")
    if not isinstance(ceiling, (int, float)) or not ceiling or m.value is None:
        return ""
    return f", {100 * m.value / ceiling:.0f} % of its ceiling {format_value(ceiling, m.unit, m.metric)}"


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    return table(records, name)[0]


def _figure(m: Measurement | None, text: str, why: str = "") -> dict[str, Any]:
    if m is None or m.value is None:
        return figure(None, m.unit if m is not None else "", why or (str(m.params.get("why") or "") if m else ""),
                      text=text)
    return figure(m.value, m.unit, flags=data_flags(m.flags), text=text)


def table(records: list[Measurement], name: Callable[[tuple[str, str]], str]
          ) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """The table's rows and each row as data (harness.report.data): what all the clients
    moved (in the rate's amount: B, files, ops) over the span from the first start to the last
    end (s), the aggregate over it, and the rate while all ran, in the records' units."""
    spans: dict[tuple[Any, ...], Measurement] = {}
    walls: dict[tuple[Any, ...], Measurement] = {}
    rows = []
    found: list[dict[str, Any]] = []
    for m in records:
        if m.params.get("host") != "all" or m.unit not in AMOUNT:
            continue
        base = m.metric.removesuffix("_stonewalled")
        key = (cells.pass_of(m), m.test, base,  # (a span's and its stonewalled window's: of one pass)
               describe_cell(m.params, ("host", "clients", *CIRCUMSTANTIAL, "why")))
        if m.params.get("basis") == "span":
            spans[key] = m
        elif m.metric.endswith("_stonewalled"):
            walls[key] = m
        elif m.value is None and "no-aggregate" in m.flags:  # (no aggregate, and why)
            rows.append([f"{m.workload} {m.test} {key[-1]}",
                         name((m.backend, m.variant)) + (f" (repeat {m.repeat + 1})" if m.repeat else ""),
                         f"{_clients(m.params)} × {m.metric}", "—",
                         f"none: {m.params.get('why', '')}", "—"])
            found.append(_row(m, rows[-1], None, None, _figure(m, rows[-1][4]), None))
    for key, m in spans.items():
        wall = walls.get(key)
        span = float(m.params["ended"]) - float(m.params["started"])
        if wall is None:
            while_all = "the same (intervals within 5 %)"
        elif wall.value is None:
            while_all = f"— ({wall.params.get('why')})"
        else:
            window = wall.params.get("stonewall") or [0, 0]
            while_all = (f"{format_value(wall.value, wall.unit, wall.metric)}{flag_marks(wall.flags)} over "
                         f"{window[1] - window[0]:.1f} s{_share(wall)}")
        rows.append([f"{m.workload} {m.test} {describe_cell(m.params, ('host', 'clients', *CIRCUMSTANTIAL))}",
                     name((m.backend, m.variant)) + (f" (repeat {m.repeat + 1})" if m.repeat else ""),
                     f"{_clients(m.params)} × {m.metric}",
                     f"{_amount(m.unit, float(m.params.get('moved') or 0))} in {span:.1f} s",
                     format_value(m.value, m.unit, m.metric) + flag_marks(m.flags) + _share(m), while_all])
        amount = AMOUNT.get(m.unit, "")
        found.append(_row(m, rows[-1], figure(float(m.params.get("moved") or 0), {"bytes": "B"}.get(amount, amount)),
                          figure(span, "s"), _figure(m, rows[-1][4]),
                          _figure(wall, while_all) if wall is not None else {"same_as_the_aggregate": True,
                                                                               "text": while_all}))
    return rows, found


def _row(m: Measurement, row: list[str], moved: dict[str, Any] | None, span: dict[str, Any] | None,
         aggregate: dict[str, Any], stonewalled: dict[str, Any] | None) -> dict[str, Any]:
    return {"cell": row[0], "system": row[1], "backend": m.backend, "variant": m.variant, "repeat": m.repeat,
            "workload": m.workload, "test": m.test, "metric": m.metric, "clients": m.params.get("clients"),
            "moved": moved, "span": span, "aggregate": aggregate, "stonewalled": stonewalled}


TITLE = "Several clients at once: what all moved, over what time"
COLUMNS = ["cell", "system", "clients", "moved, first start to last end", "aggregate (table rows 'all')",
           "while all ran (stonewalled)"]
NOTE = ("the aggregate is everything the clients moved over the span from the first one's start to "
        "the last one's end, never a sum of their own rates; where their intervals differ by more "
        "than 5 %, the rate over the time all of them were running (from each one's progress) is "
        "given too (a client counts its bytes as each write returns, so where its write-behind "
        "holds them the stonewalled write rate runs ahead of the storage — flagged [N] where one "
        "client's part is above its own path; largefile's span ends after each client's fsync, "
        "smallfile's and a buffered fio's do not). Each timed phase of such a cell starts behind a "
        "barrier across its clients")
