"""Reference runs: published results kept as data under ``results/reference/NAME/`` and
addressable like stored runs (``dfsbench compare report-2014``).

A reference directory holds ``run.yaml`` (what the run was: environment, targets, limits)
and tables as tab-separated files, one per workload (``<workload>.tsv``), in the units the
source printed; each workload turns its own table into measurement records.
"""

from __future__ import annotations

import calendar
import csv
import sys
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from harness.api import registry
from harness.api.records import Measurement
from harness.errors import BadInput
from harness.results.schema import RunInfo


def search_path() -> list[Path]:
    """The checkout's ``results/reference`` (also what an editable install uses), then the
    copy installed as data files."""
    here = Path(__file__).resolve().parents[2] / "results" / "reference"
    return [here, Path(sys.prefix) / "share" / "dfsbench" / "reference"]


def names() -> list[str]:
    found: set[str] = set()
    for root in search_path():
        if root.is_dir():
            found |= {p.parent.name for p in root.glob("*/run.yaml")}
    return sorted(found)


def directory(name: str) -> Path | None:
    for root in search_path():
        if (root / name / "run.yaml").is_file():
            return root / name
    return None


@cache
def load(name: str) -> tuple[RunInfo, tuple[Measurement, ...]]:
    """A reference run: what ``run.yaml`` says it was, and its records — each table
    ``<workload>.tsv`` read by that workload's own loader (``Workload.reference``), then
    the cells the source reports as hung."""
    where = directory(name)
    if where is None:
        raise BadInput(f"no reference run '{name}'", hint=f"references: {', '.join(names()) or 'none'}")
    meta = yaml.safe_load((where / "run.yaml").read_text())
    started = calendar.timegm(time.strptime(meta["started"], "%Y-%m-%dT%H:%M:%SZ"))
    targets = {(t["backend"], t["variant"]): t["description"] for t in meta["targets"]}
    info = RunInfo(name, float(started), float(started), "reference", meta.get("label"),
                   str(where), {"reference": name, "limits": meta.get("limits", {})},
                   "reference", {**meta.get("host", {}), "limits": meta.get("limits", {})}, targets)
    records: list[Measurement] = []
    for table in sorted(where.glob("*.tsv")):
        workload = registry.find("workload", table.stem)
        if workload is None:
            raise BadInput(f"reference '{name}' has a table of workload '{table.stem}' ({table}), "
                           "which is not installed", hint="install the plugin that provides it")
        records += workload.reference(list(_rows(table)), name)
    return info, (*records, *_hung(meta, name))


def _rows(path: Path) -> Iterator[dict[str, str]]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    yield from csv.DictReader(lines, delimiter="\t")


def _hung(meta: dict[str, Any], run_id: str) -> Iterator[Measurement]:
    for h in meta.get("hung", []):
        yield Measurement(h["workload"], "write", "throughput", None, "B/s",
                          {"direct": h.get("mode") == "direct", "note": h.get("note", "")},
                          h["backend"], h["variant"], run_id, flags=("hung",))
