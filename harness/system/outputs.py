"""Text that other programs read: every JSON document dfsbench prints is strict JSON, and
every CSV cell it writes is data, never a formula. Every JSON document and CSV text that
dfsbench prints goes through here, so none escapes these rules by being written another
way (its own JSON that only it reads back — the store's columns, the ledger, the engines'
replies — is not an output).

- JSON (RFC 8259) has no NaN or Infinity; Python's ``json`` writes them bare, which a
  strict parser refuses. A non-finite number is written ``null``, and the document (the
  object the text is: a ``compare --format json`` document, one record of ``parse``'s JSON
  lines) says where and what it was under ``non_finite``: a map from the value's JSON
  pointer (RFC 6901, e.g. ``/params/bs`` or ``/series/0/points/3/1``) to ``"NaN"``,
  ``"Infinity"`` or ``"-Infinity"``.
- A CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
  formula to a spreadsheet (``=HYPERLINK(...)`` in a job name from a tool output, a
  backend ``+cmd|calc`` from a store someone else wrote): such a cell is written with a
  single quote before it (the OWASP rule), which a spreadsheet shows as text. A number
  stays a number: a cell that is one (``-5.2``, ``1e+300``) cannot run anything and is
  written as it is.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

NON_FINITE = "non_finite"


def json_text(document: dict[str, Any], indent: int | None = None) -> str:
    """``document`` as strict JSON (see the module): its non-finite numbers ``null``, named
    under ``non_finite``; what json cannot write itself (a path, a date) as its text."""
    try:  # (the common case, at the cost of one dumps: nothing non-finite in it)
        return json.dumps(document, allow_nan=False, default=str, indent=indent)
    except ValueError:
        pass
    found: dict[str, str] = {}
    clean = _finite(document, "", found)
    if NON_FINITE in clean:  # (no record or document of dfsbench has the key: one that does is not ours)
        raise ValueError(f"a JSON document with non-finite numbers already has a '{NON_FINITE}' key")
    return json.dumps({**clean, NON_FINITE: found}, allow_nan=False, default=str, indent=indent)


def _finite(value: Any, pointer: str, found: dict[str, str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        found[pointer] = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{pointer}/{_token(k)}", found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{pointer}/{i}", found) for i, v in enumerate(value)]
    return value


def _token(key: object) -> str:
    """A key as a JSON pointer's reference token (RFC 6901: '~' and '/' escaped)."""
    return str(key).replace("~", "~0").replace("/", "~1")


# what a spreadsheet evaluates when a cell starts with it (OWASP's CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """A cell as written: a number as it is; text that a spreadsheet would evaluate with a
    single quote before it (text that is a number in decimal is a number)."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_text(rows: Iterable[Sequence[object]]) -> str:
    """Rows as CSV, every cell through :func:`csv_cell`."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    for row in rows:
        writer.writerow([csv_cell(cell) for cell in row])
    return buf.getvalue()
