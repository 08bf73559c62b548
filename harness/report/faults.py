"""The table of what faults did: per cell, what was done and when, the two recovery figures
— from the fault to the system noticing it, from the restore to healthy — and whether the
data written during the fault verified (the ``fault`` records of
``harness.execution.timeline``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.api.faults import FAULT
from harness.api.records import Measurement, describe_cell

# the fault record's params that say what happened, not which cell it was
ABOUT = ("for", "fault", "health", "verified", "injected", "noticed", "restored", "healthy", "noticed_after_s",
         "measured_from", "started", "ended", "notice", "why", "stores_data")


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


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    rows = []
    for m in records:
        if m.workload != FAULT:
            continue
        cell = describe_cell(m.params, ABOUT)
        rows.append([name((m.backend, m.variant)), f"{m.params.get('for')} {cell}".strip(),
                     str(m.params.get("fault")), noticed(m), recovered(m), str(m.params.get("verified"))])
    return rows


TITLE = "Faults: what was done during the cell, when the system noticed, time to recover, data verified"
COLUMNS = ["system", "cell", "fault", "noticed after", "healthy after restore", "verified"]
NOTE = ("the cell ran three times: 'before' (healthy), 'during' (the fault, timed from the cell's "
        "first timed phase) and 'after' (healthy again) — see the phase rows of its own table; "
        "'degraded' [G] is on exactly the records whose time overlaps the fault, from its "
        "injection to healthy again. 'noticed after': from the injection to the first look at the "
        "system's state that showed it (Ceph: an OSD marked down; GlusterFS: a brick offline); "
        "'healthy after restore': from the node's daemons running again to the first passing "
        "health check (what it said then is the fault record's 'health'); a fault undone before "
        "the system noticed it has no recovery time")


MOMENTS = ("injected", "noticed", "restored", "healthy")


def timeline_chart(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> dict[str, Any] | None:
    """For the HTML report: each fault's moments and the intervals of the records of its
    cell's 'during' run, in seconds from the injection (the one clock they share)."""
    faults = []
    for f in records:
        if f.workload != FAULT or not isinstance(f.params.get("injected"), (int, float)):
            continue
        zero = float(f.params["injected"])
        cell = {k: v for k, v in f.params.items() if k not in ABOUT and k != "error"}
        moments = {k: float(f.params[k]) - zero for k in MOMENTS if isinstance(f.params.get(k), (int, float))}
        bars = []
        for m in records:
            started, ended = m.params.get("started"), m.params.get("ended")
            if (m.run_id, m.backend, m.variant, m.repeat) != (f.run_id, f.backend, f.variant, f.repeat) \
                    or m.workload != f.params.get("for") or m.params.get("phase") != "during" \
                    or any(m.params.get(k) != v for k, v in cell.items()) \
                    or m.unit not in ("B/s", "files/s", "op/s") or m.value is None \
                    or not isinstance(started, (int, float)) or not isinstance(ended, (int, float)):
                continue
            host = m.params.get("host")
            label = f"{m.test} {m.metric}" + (f" on {host}" if host else "")
            bars.append({"label": label, "start": float(started) - zero, "end": float(ended) - zero,
                         "degraded": "degraded" in m.flags})
        if bars:
            faults.append({"title": f"{name((f.backend, f.variant))}: {f.params.get('for')} — {f.params.get('fault')}",
                           "moments": moments, "bars": bars})
    return {"kind": "timeline", "faults": faults} if faults else None
