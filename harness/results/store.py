"""Stored runs: one SQLite database plus raw tool outputs in the results directory.

Each measurement is committed the moment it exists, so an interrupted run keeps every
number it produced. Runs are never overwritten. The schema is versioned.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness.api.records import Measurement
from harness.errors import BadInput, DfsbenchError, StoreUnwritable
from harness.system.secret import redact_json
from harness.units import size

SCHEMA_VERSION = 3
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
    repeat INTEGER NOT NULL, flags TEXT NOT NULL, recorded REAL NOT NULL, cell TEXT
);
CREATE INDEX IF NOT EXISTS measurements_run ON measurements(run_id);
""" + """
CREATE TABLE IF NOT EXISTS cells (
    run_id TEXT NOT NULL REFERENCES runs(id), cell TEXT NOT NULL, status TEXT NOT NULL,
    finished REAL NOT NULL, PRIMARY KEY (run_id, cell)
);
CREATE TABLE IF NOT EXISTS superseded AS SELECT * FROM measurements WHERE 0;
"""
# v3: each measurement names its cell (``cell``), each cell's outcome is kept (``cells``),
# and the records of a cell run again by 'run --resume' move to ``superseded``


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


F = TypeVar("F", bound=Callable[..., Any])


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _writes(method: F) -> F:
    """A method that writes to the store: see :meth:`Store.writing`."""
    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        with self.writing():
            return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


# a store with less free than this takes no more runs or cells: raw outputs and records
# of a cell fit in it, and a measurement is never lost to a full disk half-way
MIN_FREE = 16 << 20


class Store:
    """``readonly``: for reading runs (compare, report), which also works on read-only media."""

    def __init__(self, root: Path, readonly: bool = False) -> None:
        self.root = root
        path = root / DB_NAME
        try:
            if readonly and root.is_dir() and (not os.access(root, os.W_OK) or _free(root) < MIN_FREE):
                if not path.exists():
                    raise BadInput(f"no runs are stored in {root}")
                # read-only or full media: nothing may be written. Read-only still reads what
                # a WAL left by a crash holds; where it cannot open (no WAL index there, and
                # none may be made), there is no WAL to read and the file is read as it is
                for mode in ("mode=ro", "immutable=1"):
                    self.db = sqlite3.connect(f"{path.absolute().as_uri()}?{mode}", uri=True,
                                              isolation_level=None)
                    try:
                        self._check_version(readonly=True)
                        return
                    except sqlite3.OperationalError:
                        self.db.close()
                        if mode != "mode=ro":
                            raise
            root.mkdir(parents=True, exist_ok=True)
            self.room()
            if not os.access(root, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
                raise StoreUnwritable(f"--results {root} is read-only: a run stores each measurement "
                                      "there the moment it is made",
                                      hint="give a directory dfsbench can write (--results DIR)")
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise StoreUnwritable(f"--results {root} is read-only ({exc})",
                                      hint="give a directory dfsbench can write (--results DIR)") from None
            if "full" in str(exc):
                raise self._full(exc) from None
            raise self._unreadable(exc) from None
        except sqlite3.DatabaseError as exc:  # (nothing was written to it)
            raise self._unreadable(exc) from None
        except OSError as exc:
            raise BadInput(f"cannot use --results {root}: {exc.strerror}",
                           hint="give a directory this user can write") from None

    def _unreadable(self, exc: Exception) -> BadInput:
        return BadInput(f"{self.root / DB_NAME} is not a dfsbench store that can be opened: {exc}",
                        hint="it is left as it is; give another --results directory, or restore "
                             "that file from a copy")

    def _full(self, exc: object) -> StoreUnwritable:
        return StoreUnwritable(f"the results store in {self.root} cannot take more: {exc}",
                               hint="free space there; every measurement stored before is intact, "
                                    "and 'dfsbench run … --resume RUN' runs what is missing")

    def _check_version(self, readonly: bool = False) -> int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else None
        if version is not None and version > SCHEMA_VERSION:
            raise DfsbenchError(f"{self.root / DB_NAME} has schema version {version}, newer than this "
                                f"dfsbench understands ({SCHEMA_VERSION})", hint="upgrade dfsbench")
        if readonly and version != SCHEMA_VERSION:
            raise BadInput(f"{self.root / DB_NAME} is read-only and has schema version {version}; this "
                           f"dfsbench reads version {SCHEMA_VERSION} and would have to upgrade it",
                           hint="open it once where it can be written")
        return version

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A write to the store; a full or read-only store stops the run (StoreUnwritable)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise self._full(exc) from None
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise self._full(exc.strerror) from None
            raise

    def room(self) -> None:
        """Refuse to start a run or a cell on a store that is (nearly) full, with the figures."""
        free = _free(self.root)
        if free < MIN_FREE:
            raise StoreUnwritable(f"--results {self.root} has {size(free)} free; a run needs at least "
                                  f"{size(MIN_FREE)} there for its records and raw outputs",
                                  hint="free space there, or give another --results directory; what "
                                       "is stored is intact")

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = self._check_version()
        if version == 1:  # v1 kept one targets row per system, overwritten by each repeat
            with self.db:
                self.db.execute("BEGIN")
                self.db.execute("ALTER TABLE targets RENAME TO targets_v1")
                self.db.execute(_TARGETS)
                self.db.execute("INSERT INTO targets SELECT run_id, backend, variant, 0, description "
                                "FROM targets_v1")
                self.db.execute("DROP TABLE targets_v1")
                self.db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
            version = 2
        has_measurements = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='measurements'").fetchone()
        if version == 2:  # v2 knew no cells: its runs cannot be resumed, and read as before
            with self.db:
                self.db.execute("BEGIN")
                if has_measurements:
                    self.db.execute("ALTER TABLE measurements ADD COLUMN cell TEXT")
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        self.db.executescript(_SCHEMA)
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.db.close()

    @_writes
    def raw_dir(self, run_id: str, *parts: str) -> Path:
        path = self.root.joinpath("raw", run_id, *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- writing ------------------------------------------------------------------------
    @_writes
    def begin_run(self, run_id: str, config: dict[str, Any], config_hash: str,
                  host: dict[str, Any], source: str, label: str | None = None) -> None:
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                        (run_id, time.time(), None, "running", label, source,
                         json.dumps(redact_json(config)), config_hash, json.dumps(redact_json(host))))

    @_writes
    def add_target(self, run_id: str, backend: str, variant: str, description: dict[str, Any],
                   repeat: int = 0) -> None:
        """Each attachment's description, once per repeat (a repeat attaches anew; a
        resumed run keeps the first attachment's)."""
        self.db.execute("INSERT OR IGNORE INTO targets VALUES (?,?,?,?,?)",
                        (run_id, backend, variant, repeat, json.dumps(redact_json(description), default=str)))

    def target_descriptions(self, run_id: str) -> list[tuple[str, str, int, dict[str, Any]]]:
        return [(b, v, r, json.loads(d)) for b, v, r, d in self.db.execute(
            "SELECT backend, variant, repeat, description FROM targets WHERE run_id=? "
            "ORDER BY repeat", (run_id,))]

    @_writes
    def add(self, m: Measurement, cell: str | None = None) -> None:
        """Commit one measurement of ``cell`` (see :func:`cell_key`) now (autocommit mode:
        each INSERT is its own transaction)."""
        self.db.execute(
            "INSERT INTO measurements (run_id, workload, test, metric, value, unit, params, backend,"
            " variant, repeat, flags, recorded, cell) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (m.run_id, m.workload, m.test, m.metric, m.value, m.unit,
             json.dumps(redact_json(m.params), sort_keys=True), m.backend, m.variant, m.repeat,
             json.dumps(list(m.flags)), time.time(), cell))

    @_writes
    def cell_ended(self, run_id: str, cell: str, status: str) -> None:
        """A cell's outcome: ``ok``, or why not (``failed``): only ``ok`` cells are not run
        again by ``run --resume``."""
        self.db.execute("INSERT OR REPLACE INTO cells VALUES (?,?,?,?)", (run_id, cell, status, time.time()))

    def cells_done(self, run_id: str) -> set[str]:
        return {c for (c,) in self.db.execute("SELECT cell FROM cells WHERE run_id=? AND status='ok'",
                                              (run_id,))}

    @_writes
    def supersede(self, run_id: str, cell: str) -> int:
        """Move the records of a cell about to run again (an earlier attempt that failed
        or was cut short) out of the run's measurements into ``superseded``: kept, not shown."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("INSERT INTO superseded SELECT * FROM measurements WHERE run_id=? AND cell=?",
                            (run_id, cell))
            moved = self.db.execute("DELETE FROM measurements WHERE run_id=? AND cell=?", (run_id, cell)).rowcount
        return int(moved)

    def knows_cells(self, run_id: str) -> bool:
        """Whether the run was stored by a dfsbench that records cells (so it can resume)."""
        row = self.db.execute("SELECT count(*), count(cell) FROM measurements WHERE run_id=?", (run_id,)).fetchone()
        return bool(row[0] == 0 or row[1] > 0)

    @_writes
    def resumed(self, run_id: str) -> None:
        self.db.execute("UPDATE runs SET status='running', finished=NULL WHERE id=?", (run_id,))

    @_writes
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

    @_writes
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
