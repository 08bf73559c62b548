"""Renderers of a View: terminal (rich), Markdown, CSV, and JSON (the annotated records
with the runs' context); JSON lines of plain records for ``dfsbench parse``."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from harness.api.records import Measurement
from harness.report.compare import Table

if TYPE_CHECKING:
    from harness.report.view import View


def terminal(tables: list[Table], header: list[str], width: int | None = None) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width or 160, highlight=False, force_terminal=False)
    for line in header:
        console.print(line, markup=False)
    for t in tables:
        console.print()
        rt = RichTable(title=Text(t.title, style="italic"), title_justify="left", show_lines=False)
        for i, col in enumerate(t.columns):
            rt.add_column(col, justify="left" if i < 2 or col == "system" or col.startswith("vs ")
                          or col.endswith(("vs", "error")) else "right",
                          overflow="fold")
        for row in t.rows:  # as plain text: "[hung]" is a flag, not rich markup
            rt.add_row(*(Text(cell) for cell in row))
        console.print(rt)
        for note in t.notes:
            console.print(f"  {note}", markup=False)
    return buf.getvalue()


def markdown(tables: list[Table], header: list[str]) -> str:
    out = [f"- {line}" for line in header]
    for t in tables:
        out += ["", f"### {t.title}", "", "| " + " | ".join(t.columns) + " |",
                "|" + "|".join("---" for _ in t.columns) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in t.rows]
        if t.notes:
            out.append("")
            out += [f"{note}  " for note in t.notes]
    return "\n".join(out) + "\n"


def csv_text(tables: list[Table]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    for t in tables:
        writer.writerow(["table", *t.columns])
        for row in t.rows:
            writer.writerow([t.title, *row])
        writer.writerow([])
    return buf.getvalue()


def json_lines(records: Iterable[Measurement]) -> str:
    return "".join(m.to_json() + "\n" for m in records)


def json_document(view: View) -> str:
    """One JSON document: the runs' context and every annotated record (with the flags and
    ceilings the tables show)."""
    curves = {"curves": view.curves} if view.curves else {}  # (a sweep's: harness.report.sweeps)
    from harness.report.timelines import entries

    series = {"series": entries(view.records)}  # (each record's figure over time, and the clients' sum)
    return json.dumps({**view.context(), "records": [m.to_dict() for m in view.records], **curves, **series},
                      default=str, indent=None) + "\n"
