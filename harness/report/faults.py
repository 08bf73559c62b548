"""The table of what faults did: per cell, what was done, the time to recover and whether
the data verified (the ``fault`` records of ``harness.execution.timeline``)."""

from __future__ import annotations

from collections.abc import Callable

from harness.api.faults import FAULT
from harness.api.records import Measurement, describe_cell


def table_rows(records: list[Measurement], name: Callable[[tuple[str, str]], str]) -> list[list[str]]:
    rows = []
    for m in records:
        if m.workload != FAULT:
            continue
        cell = describe_cell(m.params, ("for", "fault", "health", "verified"))
        recovery = f"{m.value:.1f} s" if m.value is not None else \
            f"not healthy ({m.params.get('health', '')})"[:80]
        rows.append([name((m.backend, m.variant)), f"{m.params.get('for')} {cell}".strip(),
                     str(m.params.get("fault")), recovery, str(m.params.get("verified"))])
    return rows


TITLE = "Faults: what was done during the cell, time to recover, data verified"
COLUMNS = ["system", "cell", "fault", "recovery", "verified"]
NOTE = ("the cell ran three times: 'before' (healthy), 'during' (the fault; flagged degraded) and "
        "'after' (healthy again) — see the phase rows of its own table; recovery is from the "
        "restore to the moment the system's own health check passed (what it said then is the "
        "fault record's 'health')")
