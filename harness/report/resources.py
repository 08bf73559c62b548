"""The table of each cell's busiest node and resource (the ``resources`` records of
``harness.execution.sampling``)."""

from __future__ import annotations

from typing import Any

from harness.api.records import Measurement, describe_cell
from harness.api.sampler import RESOURCES


def table_rows(records: list[Measurement], name: Any) -> list[list[str]]:
    """(workload, cell, system, busiest) for each cell's ``busiest`` record, in the order
    they were recorded; ``name`` gives a system's display name from (backend, variant)."""
    rows = []
    for m in records:
        if m.workload != RESOURCES or m.test != "busiest":
            continue
        cell = describe_cell(m.params, ("for",))
        repeat = f" (repeat {m.repeat + 1})" if m.repeat else ""
        rows.append([str(m.params.get("for")), cell, name((m.backend, m.variant)) + repeat,
                     str(m.params.get("busiest"))])
    return rows


TITLE = "Busiest node and resource per cell"
NOTE = ("each resource at its peak over 2 s within the cell; CPU: 100 % = one core busy "
        "(docker stats), with the process that used most of it over the whole cell; network: "
        "share of the node's link; every node's CPU, memory, network and block I/O (whole cell "
        "and peak) are stored as 'resources' records")
