"""Renderers of a View: terminal (rich), Markdown, CSV, and JSON (the annotated records
with the runs' context); JSON lines of plain records for ``dfsbench parse``."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.box import HEAVY_HEAD
from rich.cells import cell_len
from rich.console import Console, JustifyMethod
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text

from harness.api.records import Measurement
from harness.report import data
from harness.report.verdicts import Table
from harness.system import outputs

if TYPE_CHECKING:
    from harness.report.view import View


def terminal(tables: Sequence[Table], header: Sequence[str], width: int | None = None) -> str:
    buf = io.StringIO()
    console = _console(buf, width or 160)
    for line in header:
        if line.isprintable() and line == line.rstrip() and cell_len(line) <= console.width:
            buf.write(line + "\n")  # (what rich prints of a line that fits: the line)
        else:
            console.print(line)
    for t in tables:
        console.print()
        laid = _laid_out(console, t) if len(t.rows) > FAST_FROM else None
        if laid is None:
            console.print(_rich_table(t, t.rows))
        else:  # (each print has reached the buffer when it returns)
            buf.write("".join(line + "\n" for line in laid))
        for note in t.notes:
            console.print(f"  {note}")
    return buf.getvalue()


def _console(buf: io.StringIO, width: int) -> Console:
    """The console every table and line is printed on. What it prints is stored text (a
    variant, a job name, a label, a host from a store someone else wrote), never rich's
    markup or emoji codes: '[/x]' would end a style that is not open (a MarkupError),
    '[bold]' restyle what follows, ':smile:' become a picture. Every str rich renders on it
    (a column's header too) is read as plain text; cells and titles are Text besides."""
    return Console(file=buf, width=width, highlight=False, force_terminal=False, markup=False, emoji=False)


# a table of more rows is laid out by rich once, on the rows that set its columns' widths, and
# its rows are then written line by line as rich writes them (rich renders each cell anew: a
# table of thousands of rows took seconds)
FAST_FROM = 40
_TOP = re.compile("^┏━+(?:┳━+)*┓$")


def _rich_table(t: Table, rows: list[list[str]]) -> RichTable:
    rt = RichTable(title=Text(t.title, style="italic"), title_justify="left", show_lines=False, box=HEAVY_HEAD)
    for i, col in enumerate(t.columns):
        rt.add_column(Text(col), justify=_justify(i, col), overflow="fold")
    for row in rows:  # as plain text: "[hung]" is a flag, not rich markup
        rt.add_row(*(Text(cell) for cell in row))
    return rt


def _justify(i: int, col: str) -> JustifyMethod:
    return "left" if i < 2 or col == "system" or col.startswith("vs ") or col.endswith(("vs", "error")) else "right"


def _laid_out(console: Console, t: Table) -> list[str] | None:
    """The table's lines as rich prints it, or None where a cell holds what rich would
    change (a control character, a tab, a line break): rich prints that table itself.

    Rich sets a column's width from the widest cell and the longest word of its cells (and
    the header), and nothing else of them; so the table rich lays out from the rows holding
    those (a proxy) has the real table's widths, title, header and edges. A row whose cells
    fit their columns is then each cell padded and justified as rich does; another (a cell
    to fold over lines) is rendered by rich, cell by cell, in those widths."""
    if not all(cell.isprintable() for row in t.rows for cell in row) or \
            not all(c.isprintable() for c in (t.title, *t.columns)) or \
            any(len(row) != len(t.columns) for row in t.rows):
        return None
    longest: dict[int, tuple[int, int]] = {}  # column → (width, row) of its widest cell
    wordiest: dict[int, tuple[int, int]] = {}  # column → (width, row) of its longest word
    lengths = []
    for r, row in enumerate(t.rows):
        widths = [cell_len(cell) for cell in row]
        lengths.append(widths)
        for i, (cell, n) in enumerate(zip(row, widths)):
            if n > longest.get(i, (-1, 0))[0]:
                longest[i] = (n, r)
            word = max((cell_len(w) for w in cell.split()), default=n)
            if word > wordiest.get(i, (-1, 0))[0]:
                wordiest[i] = (word, r)
    picked = sorted({r for _, r in (*longest.values(), *wordiest.values())})
    with console.capture() as capture:
        console.print(_rich_table(t, [t.rows[r] for r in picked]))
    proxy = capture.get().split("\n")[:-1]
    top = next((i for i, line in enumerate(proxy) if _TOP.match(line)), None)
    if top is None:
        return None
    sep = next((i for i in range(top + 1, len(proxy)) if not proxy[i].startswith("┃")), None)
    if sep is None or sep + 2 >= len(proxy):
        return None
    widths = [len(part) for part in proxy[top][1:-1].split("┳")]
    justify = [_justify(i, col) for i, col in enumerate(t.columns)]
    out = proxy[:sep + 1]
    for r, (row, lens) in enumerate(zip(t.rows, lengths)):
        # (rich's default box; its last row's edges are the foot's)
        left, divider, right = ((HEAVY_HEAD.foot_left, HEAVY_HEAD.foot_vertical, HEAVY_HEAD.foot_right)
                                if r == len(t.rows) - 1 else
                                (HEAVY_HEAD.mid_left, HEAVY_HEAD.mid_vertical, HEAVY_HEAD.mid_right))
        cells = [[_padded(cell, n, w, how)] if n <= w - 2 else _folded(console, cell, w, how)
                 for cell, n, w, how in zip(row, lens, widths, justify)]
        for k in range(max(len(c) for c in cells)):  # (a folded cell's row: the others blank below)
            out.append(left + divider.join(c[k] if k < len(c) else " " * w for c, w in zip(cells, widths)) + right)
    out.append(proxy[-1])
    return out


def _padded(cell: str, n: int, w: int, how: JustifyMethod) -> str:
    """A cell of ``n`` columns that fits its column of ``w`` (padding included), as rich pads it."""
    if how == "left":
        return f" {cell}{' ' * (w - 2 - n)} "
    kept = cell.rstrip()  # (rich strips a right-justified cell's trailing space)
    return f" {' ' * (w - 2 - cell_len(kept))}{kept} "


def _folded(console: Console, cell: str, w: int, how: JustifyMethod) -> list[str]:
    """A cell wider than its column, as rich renders it: padded by one and folded over lines."""
    options = console.options.update(width=w, justify=how, no_wrap=False, overflow="fold", height=None,
                                     highlight=False)
    lines = console.render_lines(Padding(Text(cell), (0, 1)), options, pad=True)
    return ["".join(seg.text for seg in line) for line in lines]


def markdown(tables: Sequence[Table], header: Sequence[str]) -> str:
    out = [f"- {line}" for line in header]
    for t in tables:
        out += ["", f"### {t.title}", "", "| " + " | ".join(t.columns) + " |",
                "|" + "|".join("---" for _ in t.columns) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in t.rows]
        if t.notes:
            out.append("")
            out += [f"{note}  " for note in t.notes]
    return "\n".join(out) + "\n"


def csv_text(tables: Sequence[Table]) -> str:
    """The tables as CSV, each row beside its table's title (cells that a spreadsheet would
    evaluate are quoted: :func:`harness.system.outputs.csv_cell`)."""
    def rows() -> Iterable[list[str]]:
        for t in tables:
            yield ["table", *t.columns]
            for row in t.rows:
                yield [t.title, *row]
            yield []
    return outputs.csv_text(rows())


RECORD_COLUMNS = ("run", "system", "variant", "workload", "test", "metric", "value", "unit", "flags", "repeat")


def records_csv(records: Sequence[Measurement]) -> str:
    """One row per record, for a program: its value a number (empty where it has none) with
    its unit in a column of its own, its flags joined by ';', and each of the records'
    params a column (named as it is; ``param_NAME`` where the name is one of the columns
    before it), a number as a number, text as text, a list or an object as JSON."""
    keys = sorted({k for m in records for k in m.params}, key=str)
    names = [f"param_{k}" if k in RECORD_COLUMNS or k.startswith("param_") else k for k in keys]

    def param(v: Any) -> object:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return v if math.isfinite(v) else ""
        if isinstance(v, (dict, list)):
            try:
                return json.dumps(v, allow_nan=False, default=str, sort_keys=True)
            except ValueError:  # (a number in it that JSON has not: as an unknown)
                return ""
        return v

    def rows() -> Iterable[list[object]]:
        yield [*RECORD_COLUMNS, *names]
        for m in records:
            yield [m.run_id, m.backend, m.variant, m.workload, m.test, m.metric,
                   "" if m.value is None else m.value, m.unit, ";".join(m.flags), m.repeat,
                   *(param(m.params.get(k)) for k in keys)]
    return outputs.csv_text(rows())


def json_lines(records: Iterable[Measurement]) -> str:
    """One record a line, each strict JSON (:meth:`Measurement.to_json`)."""
    return "".join(m.to_json() + "\n" for m in records)


def json_document(view: View) -> str:
    """One JSON document: the runs' context, the answer and every table the terminal prints
    as data (each figure a number with its unit: harness.report.data), and every annotated
    record (with the flags and ceilings the tables show)."""
    curves = {"curves": view.curves} if view.curves else {}  # (a sweep's: harness.report.sweeps)
    from harness.report.timelines import entries

    series = {"series": entries(view.records)}  # (each record's figure over time, and the clients' sum)
    # (strict JSON: a non-finite param or point is null, named under 'non_finite')
    return outputs.json_text({**view.context(), "answer": view.answer(), "tables": tables_data(view),
                              "records": [m.to_dict() for m in view.records], **curves, **series}) + "\n"


def table_names(tables: Sequence[Table]) -> list[str]:
    """Each table's name, in order, for ``--table NAME`` and ``-o DIR``'s NAME.csv: its own
    (``Table.name``: 'load', 'faults', 'costs'), else a slug of its title (a title may hold a
    stranger's text: a slug is of [a-z0-9-] alone, :func:`harness.report.data.slug`); one
    another table has already gets '-2', '-3'."""
    return data.unique(data.slug(t.name or t.title) for t in tables)


def table_data(t: Table, name: str) -> dict[str, Any]:
    """One table as data (harness.report.data): its rows' data where the code that figured
    them kept it (``Table.data``), else each cell as the terminal prints it."""
    if t.data is not None and len(t.data) == len(t.rows) and t.keys:
        keys, rows = list(t.keys), t.data
    else:
        keys = data.keys_of(t.columns)
        rows = [dict(zip(keys, row)) for row in t.rows]
    return {"title": t.title, "name": name, "columns": list(t.columns), "keys": keys, "rows": rows,
            "text": [list(row) for row in t.rows], "notes": list(t.notes)}


def tables_data(view: View) -> list[dict[str, Any]]:
    """Every table the terminal prints of a view, in its order, as data."""
    return [table_data(t, name) for t, name in zip(view.tables, table_names(view.tables))]


def table_csv(t: Table) -> str:
    """One table as CSV, as the terminal prints it: its columns' labels, then its rows
    (cells a spreadsheet would evaluate quoted: :func:`harness.system.outputs.csv_cell`)."""
    return outputs.csv_text([t.columns, *t.rows])
