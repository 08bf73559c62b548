"""What a results store is on disk: its tables, its schema version and the migrations from
every older one, how a series' points are packed, a stored run's shape (:class:`RunInfo`),
and the types every row's JSON must hold where the core reads it. The writer
(harness.results.writer) and the reader (harness.results.reader) both stand on it."""

from __future__ import annotations

import json
import math
import sqlite3
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.system.files import printable

SCHEMA_VERSION = 5
DB_NAME = "dfsbench.sqlite"

TARGETS = """
CREATE TABLE IF NOT EXISTS targets (
    run_id TEXT NOT NULL REFERENCES runs(id), backend TEXT NOT NULL, variant TEXT NOT NULL,
    repeat INTEGER NOT NULL, description TEXT NOT NULL,
    PRIMARY KEY (run_id, backend, variant, repeat)
)"""
SCHEMA = TARGETS + """;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
    label TEXT, source TEXT, config TEXT NOT NULL, config_hash TEXT NOT NULL, host TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id),
    workload TEXT NOT NULL, test TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
    unit TEXT NOT NULL, params TEXT NOT NULL, backend TEXT NOT NULL, variant TEXT NOT NULL,
    repeat INTEGER NOT NULL, flags TEXT NOT NULL, recorded REAL NOT NULL, cell TEXT
);
CREATE INDEX IF NOT EXISTS measurements_run ON measurements(run_id);
""" + """
CREATE TABLE IF NOT EXISTS cells (
    run_id TEXT NOT NULL REFERENCES runs(id), cell TEXT NOT NULL, status TEXT NOT NULL,
    finished REAL NOT NULL, PRIMARY KEY (run_id, cell)
);
CREATE TABLE IF NOT EXISTS superseded AS SELECT * FROM measurements WHERE 0;
""" + """
CREATE TABLE IF NOT EXISTS series (
    measurement INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), source TEXT NOT NULL,
    begin REAL NOT NULL, "end" REAL NOT NULL, points TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS series_run ON series(run_id);
"""
# v3: each measurement names its cell (``cell``), each cell's outcome is kept (``cells``),
# and the records of a cell run again by 'run --resume' move to ``superseded``
# v4: a record's figure over time (harness.api.series) in ``series``, one row per record
# (``measurement``: its ``seq``; a superseded record's row is no longer read), its points a
# JSON array of [t, value]
# v5: the points packed (:func:`packed`): a second's point in 16 bytes, not some 30 characters
# of text to parse; a v4 store's rows are packed as it is opened for writing (a reader of one
# packs a copy in memory)

# the tables a store of this version has; a read-only command refuses a store without one
TABLES = ("meta", "runs", "targets", "measurements", "cells", "superseded", "series")


def packed(points: Iterable[tuple[float, float]]) -> bytes:
    """A series' points as stored (v5): t, value, t, value… as little-endian doubles, each
    t rounded to the millisecond (as v4 kept it)."""
    flat = [x for t, v in points for x in (round(t, 3), float(v))]
    return struct.pack(f"<{len(flat)}d", *flat)


def unpacked(data: bytes) -> list[tuple[float, float]] | None:
    """The points of a stored series (v5), or None where the bytes are not what dfsbench packs."""
    if not data or len(data) % 16:
        return None
    flat = struct.unpack(f"<{len(data) // 8}d", data)
    return list(zip(flat[::2], flat[1::2]))


def stored_points(points: Any) -> list[tuple[float, float]] | None:
    """A series row's points: packed (v5), or a JSON array of [t, value] (as v4 wrote
    them); None where they are neither."""
    if isinstance(points, bytes):
        return unpacked(points)
    try:
        pairs = json.loads(points) if isinstance(points, str) else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, (int, float)) for x in p) for p in pairs):
        return None
    return [(t, v) for t, v in pairs]


def migrate(db: sqlite3.Connection, version: int | None) -> None:
    """Bring a store of schema ``version`` (None: a new one, no meta row yet) to
    :data:`SCHEMA_VERSION`, one version at a time, each step in one transaction."""
    if version == 1:  # v1 kept one targets row per system, overwritten by each repeat
        with db:
            db.execute("BEGIN")
            db.execute("ALTER TABLE targets RENAME TO targets_v1")
            db.execute(TARGETS)
            db.execute("INSERT INTO targets SELECT run_id, backend, variant, 0, description "
                       "FROM targets_v1")
            db.execute("DROP TABLE targets_v1")
            db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
        version = 2
    has_measurements = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='measurements'").fetchone()
    if version == 2:  # v2 knew no cells: its runs cannot be resumed, and read as before
        with db:
            db.execute("BEGIN")
            if has_measurements:
                db.execute("ALTER TABLE measurements ADD COLUMN cell TEXT")
            db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
        version = 3
    db.executescript(SCHEMA)  # (the series table first: a store that says 4 has it)
    if version == 3:  # v3 kept no series: its records have none
        db.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
        version = 4
    if version == 4:  # v4 kept each series' points as JSON text: packed now, every row at once
        with db:
            db.execute("BEGIN")
            for seq, points in db.execute("SELECT measurement, points FROM series").fetchall():
                pairs = stored_points(points)
                if pairs is None:  # (left as it is: reading it names it, as before)
                    continue
                db.execute("UPDATE series SET points=? WHERE measurement=?", (packed(pairs), seq))
            db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
    if version is None:
        db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


@dataclass(frozen=True)
class RunInfo:
    id: str
    started: float
    finished: float | None
    status: str
    label: str | None
    source: str | None
    config: dict[str, Any]
    config_hash: str
    host: dict[str, Any]
    targets: dict[tuple[str, str], dict[str, Any]]
    systems: dict[tuple[str, str], Any] = field(default_factory=dict)  # SystemFacts, by the catalogue


NUMBER = (int, float)
# the params every output reads and computes with: what each must be where a row has it
PARAM_KINDS: dict[str, Any] = {
    **{k: str for k in ("host", "phase", "direction", "cache", "basis")},
    **{k: NUMBER for k in ("ceiling", "started", "ended", "bytes", "ops", "files", "moved",
                           "clients", "file_size", "record_size", "block_size", "threads")},
}
# the facts of a host (a run's, stored with it; a client host's, with its targets) that the
# headers, the comparability notes and the ceilings read (harness.system.hosts.this_machine)
HOST_KINDS: dict[str, Any] = {
    **{k: str for k in ("hostname", "host", "kernel", "machine", "python", "dfsbench", "imported_from")},
    "cpus": int, "pid": int, "memory": NUMBER, "clock_offset_s": NUMBER, "tools": dict,
}
# what a target's description says of its clients and links, read by the core (not the plugin's own)
TARGET_KINDS: dict[str, Any] = {"client_facts": dict, "client_host": str, "client_hosts": int,
                                 "link": NUMBER, "links": dict}
_KIND_NAMES = {str: "a text", int: "a whole number", NUMBER: "a number", dict: "a JSON object"}


def wrong_kind(found: dict[str, Any], kinds: dict[str, Any], finite: bool = False) -> str | None:
    """Which of ``kinds`` (key: its type) ``found`` holds as another type (a bool is no
    number; with ``finite``, nor is NaN or an infinity), said as 'KEY is VALUE, not A
    KIND'; None where each is right or absent (null). A whole number beyond 64 bits is no
    number either: SQLite holds none, and one beyond a double's range is no measurement."""
    for key, kind in kinds.items():
        value = found.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool) \
                or (finite and isinstance(value, float) and not math.isfinite(value)) \
                or (isinstance(value, int) and not -(1 << 63) <= value < 1 << 63):  # (SQLite's, and a double's range)
            return f"'{printable(key, 60)}' is {printable(repr(value), 60)}, not {_KIND_NAMES[kind]}"
    return None
