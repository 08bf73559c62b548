"""Stored runs: one SQLite database plus raw tool outputs in the results directory.

Each measurement is committed the moment it exists, so an interrupted run keeps every
number it produced. Runs are never overwritten. The schema is versioned.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import BadInput, DfsbenchError
from harness.records import Measurement
from harness.secret import redact_json

SCHEMA_VERSION = 2
DB_NAME = "dfsbench.sqlite"

_TARGETS = """
CREATE TABLE IF NOT EXISTS targets (
    run_id TEXT NOT NULL REFERENCES runs(id), backend TEXT NOT NULL, variant TEXT NOT NULL,
    repeat INTEGER NOT NULL, description TEXT NOT NULL,
    PRIMARY KEY (run_id, backend, variant, repeat)
)"""
_SCHEMA = _TARGETS + """;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
    label TEXT, source TEXT, config TEXT NOT NULL, config_hash TEXT NOT NULL, host TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id),
    workload TEXT NOT NULL, test TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
    unit TEXT NOT NULL, params TEXT NOT NULL, backend TEXT NOT NULL, variant TEXT NOT NULL,
    repeat INTEGER NOT NULL, flags TEXT NOT NULL, recorded REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS measurements_run ON measurements(run_id);
"""


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def default_results_dir() -> Path:
    return Path(os.environ.get("DFSBENCH_RESULTS", "results"))


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


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(root / DB_NAME, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:  # (nothing was written to it)
            raise BadInput(f"{root / DB_NAME} is not a dfsbench store that can be opened: {exc}",
                           hint="it is left as it is; give another --results directory, or restore "
                                "that file from a copy") from None
        except OSError as exc:
            raise BadInput(f"cannot use --results {root}: {exc.strerror}",
                           hint="give a directory this user can write") from None

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else None
        if version is not None and version > SCHEMA_VERSION:
            raise DfsbenchError(f"{self.root / DB_NAME} has schema version {version}, newer than this "
                                f"dfsbench understands ({SCHEMA_VERSION})", hint="upgrade dfsbench")
        if version == 1:  # v1 kept one targets row per system, overwritten by each repeat
            with self.db:
                self.db.execute("BEGIN")
                self.db.execute("ALTER TABLE targets RENAME TO targets_v1")
                self.db.execute(_TARGETS)
                self.db.execute("INSERT INTO targets SELECT run_id, backend, variant, 0, description "
                                "FROM targets_v1")
                self.db.execute("DROP TABLE targets_v1")
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        self.db.executescript(_SCHEMA)
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.db.close()

    def raw_dir(self, run_id: str, *parts: str) -> Path:
        path = self.root.joinpath("raw", run_id, *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- writing ------------------------------------------------------------------------
    def begin_run(self, run_id: str, config: dict[str, Any], config_hash: str,
                  host: dict[str, Any], source: str, label: str | None = None) -> None:
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                        (run_id, time.time(), None, "running", label, source,
                         json.dumps(redact_json(config)), config_hash, json.dumps(redact_json(host))))

    def add_target(self, run_id: str, backend: str, variant: str, description: dict[str, Any],
                   repeat: int = 0) -> None:
        """Each attachment's description, once per repeat (a repeat attaches anew)."""
        self.db.execute("INSERT INTO targets VALUES (?,?,?,?,?)",
                        (run_id, backend, variant, repeat, json.dumps(redact_json(description), default=str)))

    def target_descriptions(self, run_id: str) -> list[tuple[str, str, int, dict[str, Any]]]:
        return [(b, v, r, json.loads(d)) for b, v, r, d in self.db.execute(
            "SELECT backend, variant, repeat, description FROM targets WHERE run_id=? "
            "ORDER BY repeat", (run_id,))]

    def add(self, m: Measurement) -> None:
        """Commit one measurement now (autocommit mode: each INSERT is its own transaction)."""
        self.db.execute(
            "INSERT INTO measurements (run_id, workload, test, metric, value, unit, params, backend,"
            " variant, repeat, flags, recorded) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (m.run_id, m.workload, m.test, m.metric, m.value, m.unit,
             json.dumps(redact_json(m.params), sort_keys=True), m.backend, m.variant, m.repeat,
             json.dumps(list(m.flags)), time.time()))

    def add_many(self, records: Iterable[Measurement]) -> int:
        rows = [(m.run_id, m.workload, m.test, m.metric, m.value, m.unit,
                 json.dumps(redact_json(m.params), sort_keys=True), m.backend, m.variant, m.repeat,
                 json.dumps(list(m.flags)), time.time()) for m in records]
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT INTO measurements (run_id, workload, test, metric, value, unit, params,"
                " backend, variant, repeat, flags, recorded) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    def finish_run(self, run_id: str, status: str) -> None:
        self.db.execute("UPDATE runs SET finished=?, status=? WHERE id=?", (time.time(), status, run_id))

    # -- reading ------------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY started, id")]

    def run(self, run_id: str) -> RunInfo:
        row = self.db.execute("SELECT id, started, finished, status, label, source, config,"
                              " config_hash, host FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise BadInput(f"no run '{run_id}' in {self.root}")
        targets: dict[tuple[str, str], dict[str, Any]] = {}
        for b, v, _, d in self.target_descriptions(run_id):
            targets.setdefault((b, v), d)  # the first attachment's; every repeat's is kept
        return RunInfo(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), row[7],
                       json.loads(row[8]), targets)

    def measurements(self, run_id: str) -> list[Measurement]:
        rows = self.db.execute(
            "SELECT workload, test, metric, value, unit, params, backend, variant, run_id, repeat,"
            " flags FROM measurements WHERE run_id=? ORDER BY seq", (run_id,))
        return [Measurement(w, t, m, v, u, json.loads(p), b, var, r, rep, tuple(json.loads(f)))
                for w, t, m, v, u, p, b, var, r, rep, f in rows]
