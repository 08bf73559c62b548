"""Every table and the answer as data, for a program (``compare --format json``'s 'tables'
and 'answer', ``--format csv --table NAME`` / ``-o DIR``): what the terminal prints, with
each figure a number and its unit beside it, so a script that gates a release reads
numbers, never the terminal's text. The modules that figure a table make its rows' data
with these helpers (``Table.data``); harness.report.render writes them.

A table is ``{"title", "name", "columns", "keys", "rows", "text", "notes"}``: ``name`` a
slug the code makes (:func:`slug`, harness.report.render.table_names), ``columns`` the
labels the terminal prints, ``keys`` the key of each column in a row (a row may say more:
a system's backend and variant), ``rows`` an object per row, ``text`` the rows as the
terminal prints them. A cell of a row is one of:

- a figure: ``{"value": 0.0195, "unit": "s"}`` — in the base units the records keep (s, B,
  B/s, op/s; a cost in s/GiB), with what else the figure has (a knee's latency, its flags,
  what stopped it) and ``text``, what the terminal prints of it;
- no figure: ``{"value": null, "why": "..."}`` (and its ``unit``, where it would have one);
- text (a system's name, a cell's parameters), or a list of figures (a fault at each load).

A table whose code builds only its text (a workload's own tables) has its text as its cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness.api.records import FLAGS

NAME_MOST = 60  # characters of a table's name


def figure(value: float | None, unit: str, why: str = "", **more: Any) -> dict[str, Any]:
    """A figure of a table as data: its value in ``unit``, or None and ``why`` there is none."""
    if value is None:
        return {"value": None, "unit": unit, "why": why, **more}
    return {"value": value, "unit": unit, **more}


def flags(found: Iterable[str]) -> list[str]:
    """The flags a figure carries that the tables mark (named, in order)."""
    return sorted(f for f in set(found) if f in FLAGS)


def slug(text: str, most: int = NAME_MOST) -> str:
    """A name made of ``text`` from [a-z0-9-] alone (a title may be a stranger's text: a
    workload's or a system's name from a stored run): never '/', '.' or a space; never empty."""
    made = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:most].strip("-")
    return made or "table"


def unique(made: Iterable[str], sep: str = "-") -> list[str]:
    """Names in order, one that an earlier one has already getting '-2', '-3' (``sep``)."""
    out: list[str] = []
    for base in made:
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}{sep}{n}"
        out.append(name)
    return out


def keys_of(columns: list[str]) -> list[str]:
    """The keys of a table's columns where its code names none: each label's slug, with '_'."""
    return unique((slug(label).replace("-", "_") for label in columns), "_")
