"""The table of what faults did: per cell, what was done and when, the two recovery figures
— from the fault to the system noticing it, from the restore to healthy — and whether the
data written during the fault verified (the ``fault`` records of
``harness.execution.timeline``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import OVER_CLIENTS, Measurement, describe_cell
from harness.api.sampler import RESOURCES
from harness.report import cells
from harness.report.data import figure
from harness.units import format_value

# the fault record's params that say what happened, not which cell it was
ABOUT = ("for", "fault", "health", "verified", "injected", "noticed", "restored", "healthy", "unhealthy_last",
         "noticed_after_s",
         "measured_from", "started", "ended", "notice", "why", "stores_data",
         # what the clients saw of it (harness.execution.timelines.fault_params)
         "figures_of", "rate_unit", "level", "lowest_rate", "stall_s", "back_to_level_s", "closing_s",
         "figures_why")


def noticed(m: Measurement) -> str:
    """From the injection to the system's state showing it, or why there is no such time."""
    after = m.params.get("noticed_after_s")
    if isinstance(after, (int, float)):
        return f"{after:.1f} s"
    if "injected" not in m.params:  # (a run of an earlier version, which did not look)
        return "not recorded"
    if not isinstance(m.params.get("injected"), (int, float)):
        return "no fault done"
    if m.params.get("notice"):
        return str(m.params["notice"])[:80]
    if isinstance(m.params.get("restored"), (int, float)):
        return "not noticed before it was undone"
    return "not noticed"


def recovered(m: Measurement) -> str:
    """From the restore to healthy; a fault the system never noticed has nothing to recover."""
    if m.value is not None:
        return f"{m.value:.1f} s"
    if "not-noticed" in m.flags:
        return "— (not noticed)"
    if "no-fault" in m.flags:
        return "— (no fault done)"
    return f"not healthy ({m.params.get('health', '')})"[:80]


def _why(m: Measurement, figure: str) -> str:
    """Why a figure of what the clients saw is missing, as its record says."""
    part = _missing(m, figure)
    return f"— ({part})" if part else "—"


def _missing(m: Measurement, figure: str) -> str:
    said = str(m.params.get("figures_why") or "")
    return next((p.split(": ", 1)[1] for p in said.split("; ") if p.startswith(f"{figure}: ")), said)[:90]


def seen(m: Measurement) -> list[str]:
    """What the clients saw (their aggregate rate every second): the lowest rate while the
    fault held, how long they moved nothing, and when they were back to the level before
    it; '—' and why where a figure could not be had, 'not recorded' for a run stored
    before these were."""
    p = m.params
    if "figures_of" not in p and "figures_why" not in p:
        return ["not recorded"] * 3
    level, unit = p.get("level"), str(p.get("rate_unit") or "")
    lowest = p.get("lowest_rate")
    low = (format_value(lowest, unit) + (f" ({lowest / level:.0%} of {format_value(level, unit)})"
                                         if isinstance(level, (int, float)) and level > 0 else "")
           if isinstance(lowest, (int, float)) else _why(m, "lowest"))
    stall = f"{p['stall_s']:.1f} s" if isinstance(p.get("stall_s"), (int, float)) else _why(m, "stall")
    closing = p.get("closing_s")
    if isinstance(closing, (int, float)) and closing >= 0.05:  # (the closing fsync, or a stall to the end)
        stall += f" (+ {closing:.1f} s after the last byte moved, to the run's end)"
    back = f"{p['back_to_level_s']:.1f} s" if isinstance(p.get("back_to_level_s"), (int, float)) else _why(m, "back")
    return [low, stall, back]


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    rows = []
    for m in records:
        if m.workload != FAULT:
            continue
        cell = describe_cell(m.params, ABOUT)
        rows.append([name((m.backend, m.variant)), f"{m.params.get('for')} {cell}".strip(),
                     str(m.params.get("fault")), noticed(m), recovered(m), *seen(m), str(m.params.get("verified"))])
    return rows


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def table_data(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[dict[str, Any]]:
    """The rows of :func:`table_rows` as data (harness.report.data): each time in seconds,
    the lowest rate in its unit (with the level before the fault), or why there is none."""
    rows = []
    for m, text in zip((m for m in records if m.workload == FAULT), table_rows(records, name)):
        p = m.params
        recorded = "figures_of" in p or "figures_why" in p
        unit = str(p.get("rate_unit") or "")
        level = _number(p.get("level"))
        closing = _number(p.get("closing_s"))

        def saw(key: str, unit: str, said: str, text: str, **more: Any) -> dict[str, Any]:
            value = _number(p.get(key))
            return figure(value, unit, "" if value is not None else _missing(m, said) if recorded else "not recorded",
                          text=text, **(more if value is not None else {}))

        rows.append({
            "system": text[0], "backend": m.backend, "variant": m.variant, "workload": p.get("for"),
            "cell": text[1], "fault": text[2],
            "noticed_after": figure(_number(p.get("noticed_after_s")), "s", text[3], text=text[3]),
            "healthy_after_restore": figure(m.value, m.unit or "s", text[4], text=text[4]),
            "lowest_rate": saw("lowest_rate", unit, "lowest", text[5],
                               level=figure(level, unit, "" if level is not None else "not recorded")),
            "stalled": saw("stall_s", "s", "stall", text[6], after_last_byte=figure(closing, "s", "not recorded")),
            "back_to_level": saw("back_to_level_s", "s", "back", text[7]),
            "verified": p.get("verified") if isinstance(p.get("verified"), (bool, type(None))) else text[8]})
    return rows


KEYS = ("system", "cell", "fault", "noticed_after", "healthy_after_restore", "lowest_rate", "stalled",
        "back_to_level", "verified")
TITLE = "Faults: what was done during the cell, when the system noticed, time to recover, data verified"
COLUMNS = ["system", "cell", "fault", "noticed after", "healthy after restore", "lowest rate", "stalled",
           "back to level", "verified"]
NOTE = ("the cell ran three times: 'before' (healthy), 'during' (the fault, timed from the cell's "
        "first timed phase) and 'after' (healthy again) — see the phase rows of its own table; "
        "'degraded' [G] is on exactly the records whose time overlaps the fault, from its "
        "injection to healthy again. 'noticed after': from the injection to the first look at the "
        "system's own state that named the node down (an OSD marked down, a brick offline, a volume "
        "server its master no longer lists: what it said is the fault record's 'notice'); "
        "'healthy after restore': from the node's daemons running again to the end of the first "
        "passing health check (checked 0.1 s after the restore, then at waits doubling up to 2 s; "
        "what it said is the fault record's 'health', and 'unhealthy_last' is the start of the last "
        "check that failed: healthy came between the two); a fault undone before "
        "the system noticed it has no recovery time. From the clients' aggregate rate every second "
        "(of the test that ran at the injection: the record's 'figures_of'), over the seconds every client "
        "moved data: 'lowest rate' in a whole second from the injection to healthy (or to the end of the "
        "'during' run), against the level before the fault (the median rate per second of the 'before' "
        "run); 'stalled': the time in that window in seconds when the clients moved nothing (and, apart, "
        "the time from the last byte moved to the end of the run: its closing fsync, or a stall that "
        "lasted to its end); 'back to level': from the injection to the first second within 10 % of that "
        "level (or above it) after the last second below that; '—' and why where there is no such "
        "figure (not back while the clients moved)")


MOMENTS = ("injected", "noticed", "restored", "healthy")
# the times a fault's description says, on its cell's clock (harness.execution.timeline.record)
_CELL_CLOCK = re.compile(r" at (?:[0-9.]+|\?) s(?:, back at (?:[0-9.]+|\?) s)?$")


def from_injection(params: dict[str, Any]) -> str:
    """A fault as a chart in seconds from the injection says it, on that one clock: 'gluster2
    killed, restored 16.3 s after the injection', not its description's 'killed at 10.2 s,
    back at 26.5 s' on the cell's clock."""
    what = _CELL_CLOCK.sub("", str(params.get("fault", "")))
    injected, restored = params.get("injected"), params.get("restored")
    if all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in (injected, restored)):
        return f"{what}, restored {restored - injected:.1f} s after the injection"  # type: ignore[operator]
    return what


def timeline_chart(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> dict[str, Any] | None:
    """For the HTML report: each fault's moments and the intervals of the records of its
    cell's 'during' run, in seconds from the injection (the one clock they share)."""
    faults = []
    grouped = cells.by_cell(records)
    for f in records:
        if f.workload != FAULT or not isinstance(f.params.get("injected"), (int, float)):
            continue
        zero = float(f.params["injected"])
        moments = {k: float(f.params[k]) - zero for k in MOMENTS if isinstance(f.params.get(k), (int, float))}
        bars = []
        for m in grouped.get(cells.cell_of(f), []):  # (the records of its cell's 'during' pass)
            started, ended = m.params.get("started"), m.params.get("ended")
            if m.workload in (FAULT, RESOURCES) or m.params.get("phase") != "during" \
                    or m.unit not in ("B/s", "files/s", "op/s") or m.value is None \
                    or not isinstance(started, (int, float)) or not isinstance(ended, (int, float)):
                continue
            host = m.params.get("host")
            if "ranks" in m.params and "rank" not in m.params and host not in OVER_CLIENTS:
                continue  # (a host's ranks summed: each rank has its bar)
            rank = f" rank {m.params['rank']}" if "rank" in m.params else ""
            label = f"{m.test} {m.metric}" + (f" on {host}{rank}" if host else "")
            bars.append({"label": label, "start": float(started) - zero, "end": float(ended) - zero,
                         "degraded": "degraded" in m.flags})
        if bars:
            faults.append({"title": f"{name((f.backend, f.variant))}: {f.params.get('for')} — {from_injection(f.params)}",
                           "moments": moments, "bars": bars})
    return {"kind": "timeline", "faults": faults} if faults else None
