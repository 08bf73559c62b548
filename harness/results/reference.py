"""Reference runs: published results kept as data under ``results/reference/NAME/`` and
addressable like stored runs (``dfsbench compare report-2014``).

A reference directory holds ``run.yaml`` (what the run was: environment, targets, limits)
and tables as tab-separated files, one per workload, in the units the source printed;
this module turns them into measurement records.
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

from harness.api.records import Measurement
from harness.errors import BadInput
from harness.results.store import RunInfo

IOZONE_TESTS = ("write", "rewrite", "read", "reread", "random_read", "random_write")


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
    where = directory(name)
    if where is None:
        raise BadInput(f"no reference run '{name}'", hint=f"references: {', '.join(names()) or 'none'}")
    meta = yaml.safe_load((where / "run.yaml").read_text())
    started = calendar.timegm(time.strptime(meta["started"], "%Y-%m-%dT%H:%M:%SZ"))
    targets = {(t["backend"], t["variant"]): t["description"] for t in meta["targets"]}
    info = RunInfo(name, float(started), float(started), "reference", meta.get("label"),
                   str(where), {"reference": name, "limits": meta.get("limits", {})},
                   "reference", {**meta.get("host", {}), "limits": meta.get("limits", {})}, targets)
    records = [*_iozone(where, name), *_largefile(where, name), *_smallfile(where, name),
               *_hung(meta, name)]
    return info, tuple(records)


def _rows(path: Path) -> Iterator[dict[str, str]]:
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    yield from csv.DictReader(lines, delimiter="\t")


def _iozone(where: Path, run_id: str) -> Iterator[Measurement]:
    for row in _rows(where / "iozone.tsv"):
        params = {"file_size": int(row["file_kb"]) * 1024, "record_size": int(row["record_kb"]) * 1024,
                  "direct": row["mode"] == "direct"}
        for test in IOZONE_TESTS:
            yield Measurement("iozone", test, "throughput", float(row[test]) * 1024, "B/s", params,
                              row["backend"], row["variant"], run_id, int(row["repeat"]))


def _largefile(where: Path, run_id: str) -> Iterator[Measurement]:
    for row in _rows(where / "largefile.tsv"):
        size, seconds = int(row["file_size"]), float(row["seconds"])
        params: dict[str, Any] = {"file_size": size, "label": row["label"], "file": row["file"],
                                  "cache": "not dropped (time cp)"}
        moved = size
        if row.get("actual_file_size"):
            params["actual_file_size"] = moved = int(row["actual_file_size"])
        for metric, value, unit in (("elapsed", seconds, "s"), ("throughput", moved / seconds, "B/s")):
            yield Measurement("largefile", row["test"], metric, value, unit, params,
                              row["backend"], row["variant"], run_id)


def _smallfile(where: Path, run_id: str) -> Iterator[Measurement]:
    for row in _rows(where / "smallfile.tsv"):
        files, seconds = int(row["files"]), float(row["seconds"])
        params = {"files": files, "file_size": int(row["file_size"]), "threads": 1,
                  "cache": "reboot",
                  "note": "the client was rebooted between systems"}
        yield Measurement("smallfile", row["test"], "elapsed", seconds, "s", params,
                          row["backend"], row["variant"], run_id)
        yield Measurement("smallfile", row["test"], "files_per_sec", files / seconds, "files/s", params,
                          row["backend"], row["variant"], run_id)


def _hung(meta: dict[str, Any], run_id: str) -> Iterator[Measurement]:
    for h in meta.get("hung", []):
        yield Measurement(h["workload"], "write", "throughput", None, "B/s",
                          {"direct": h.get("mode") == "direct", "note": h.get("note", "")},
                          h["backend"], h["variant"], run_id, flags=("hung",))
