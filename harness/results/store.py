"""Stored runs: one SQLite database plus raw tool outputs in the results directory.

Each measurement is committed the moment it exists, so an interrupted run keeps every
number it produced. Runs are never overwritten. The schema is versioned.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import secrets
import sqlite3
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from harness.api.parsing import CEILING, plausible, plausible_param
from harness.api.records import Measurement
from harness.api.series import SOURCES, Series, flaw
from harness.errors import BadInput, DfsbenchError, StoreUnwritable
from harness.system.files import printable
from harness.system.names import RULE, is_name, named_path
from harness.system.secret import redact_json
from harness.units import size

SCHEMA_VERSION = 5
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


# how long a command waits for another process's lock on the store before it says so (SQLite
# would wait 30 s by default): a run's writes are single rows, held for milliseconds
LOCK_WAIT = 5.0
# the tables a store of this version has; a read-only command refuses a store without one
TABLES = ("meta", "runs", "targets", "measurements", "cells", "superseded", "series")


NUMBER = (int, float)
# the params every output reads and computes with: what each must be where a row has it
_PARAM_KINDS: dict[str, Any] = {
    **{k: str for k in ("host", "phase", "direction", "cache", "basis")},
    **{k: NUMBER for k in ("ceiling", "started", "ended", "bytes", "ops", "files", "moved",
                           "clients", "file_size", "record_size", "block_size", "threads")},
}
# the facts of a host (a run's, stored with it; a client host's, with its targets) that the
# headers, the comparability notes and the ceilings read (harness.system.hosts.this_machine)
_HOST_KINDS: dict[str, Any] = {
    **{k: str for k in ("hostname", "host", "kernel", "machine", "python", "dfsbench", "imported_from")},
    "cpus": int, "pid": int, "memory": NUMBER, "clock_offset_s": NUMBER, "tools": dict,
}
# what a target's description says of its clients and links, read by the core (not the plugin's own)
_TARGET_KINDS: dict[str, Any] = {"client_facts": dict, "client_host": str, "client_hosts": int,
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


_PLAIN_JSON = json.JSONDecoder()


def _params_text(m: Measurement) -> str:
    """A record's params as stored: JSON whose every number is finite (JSON has no NaN, and
    no dfsbench writes one now); a record that has another is refused, not written."""
    try:
        return json.dumps(redact_json(m.params), sort_keys=True, allow_nan=False)
    except ValueError:
        raise BadInput(f"measurement {printable(m.workload, 60)}/{printable(m.test, 60)}/"
                       f"{printable(m.metric, 60)}: a param is not a finite number, which no store keeps",
                       hint="the tool output is corrupt; nothing of it was stored") from None


def locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


class Store:
    """``readonly``: for reading runs (compare, report). Such a store is opened read-only, so
    nothing a reader does writes to it, and it works on read-only media; a store of an older
    schema is upgraded in memory for the reading, never on disk."""

    def __init__(self, root: Path, readonly: bool = False) -> None:
        self.root = root
        self.readonly = readonly
        path = root / DB_NAME
        try:
            if readonly:
                self._open_readonly(path)
                return
            root.mkdir(parents=True, exist_ok=True)
            self.room()
            if not os.access(root, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
                raise StoreUnwritable(f"--results {printable(root)} is read-only: a run stores each "
                                      "measurement there the moment it is made",
                                      hint="give a directory dfsbench can write (--results DIR)")
            self.db = sqlite3.connect(path, isolation_level=None, timeout=LOCK_WAIT)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except sqlite3.OperationalError as exc:
            if locked(exc):
                raise self.locked() from None
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise StoreUnwritable(f"--results {printable(root)} is read-only ({exc})",
                                      hint="give a directory dfsbench can write (--results DIR)") from None
            if "full" in str(exc):
                raise self._full(exc) from None
            raise self._unreadable(exc) from None
        except sqlite3.DatabaseError as exc:  # (nothing was written to it)
            raise self._unreadable(exc) from None
        except OSError as exc:
            raise BadInput(f"cannot use --results {printable(root)}: {exc.strerror}",
                           hint="give a directory this user can write") from None

    def _open_readonly(self, path: Path) -> None:
        if not path.is_file():
            raise BadInput(f"no runs are stored in {printable(self.root)}",
                           hint="run 'dfsbench run' first, or pass --results DIR")
        # read-only, which still reads what a WAL left by a crash or a running run holds;
        # where that cannot open (read-only media: no WAL index there, and none may be made),
        # there is no WAL to read and the file is read as it is. So is a store in WAL mode
        # with no WAL beside it (no writer has it open: a writer's WAL lives while it does),
        # where SQLite would make an empty WAL and its index only to read
        with open(path, "rb") as f:
            in_wal = f.read(20)[18:19] == b"\x02"
        no_wal = in_wal and not path.with_name(path.name + "-wal").exists()
        for mode in ("immutable=1",) if no_wal else ("mode=ro", "immutable=1"):
            self.db = sqlite3.connect(f"{path.absolute().as_uri()}?{mode}", uri=True,
                                      isolation_level=None, timeout=LOCK_WAIT)
            try:
                version = self._check_version()
                break
            except sqlite3.OperationalError as exc:
                self.db.close()
                if locked(exc) or mode == "immutable=1":
                    raise
        tables = {t for (t,) in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        # the tables a store of its version has (v3 kept no series; v1 and v2 are rebuilt as they read)
        kept = [t for t in TABLES if t != "series" or (version or 0) >= 4] if (version or 0) >= 3 else []
        missing = [t for t in kept if t not in tables]
        if missing:
            raise BadInput(f"{printable(path)} is damaged: it has no table {', '.join(missing)}",
                           hint="it is left as it is; restore it from a copy")
        if version == SCHEMA_VERSION:
            return
        # an older schema: read a copy upgraded in memory
        memory = sqlite3.connect(":memory:", isolation_level=None)
        self.db.backup(memory)
        self.db.close()
        self.db = memory
        self._migrate()

    def locked(self) -> BadInput:
        return BadInput(f"the results store in {printable(self.root)} is locked by another process "
                        f"(waited {LOCK_WAIT:.0f} s)",
                        hint="wait for that process (another dfsbench?) to finish, or give another "
                             "--results directory")

    def _unreadable(self, exc: Exception) -> BadInput:
        return BadInput(f"{self.root / DB_NAME} is not a dfsbench store that can be opened: {exc}",
                        hint="it is left as it is; give another --results directory, or restore "
                             "that file from a copy")

    def _full(self, exc: object) -> StoreUnwritable:
        return StoreUnwritable(f"the results store in {self.root} cannot take more: {exc}",
                               hint="free space there; every measurement stored before is intact, "
                                    "and 'dfsbench run … --resume RUN' runs what is missing")

    def _check_version(self) -> int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            return None
        try:
            version = int(row[0])
        except (TypeError, ValueError):
            raise BadInput(f"{printable(self.root / DB_NAME)}: its meta row 'schema_version' is "
                           f"{printable(repr(row[0]))}, not a whole number: it is damaged, or not a "
                           "dfsbench store", hint="it is left as it is; restore it from a copy") from None
        if version > SCHEMA_VERSION or version < 1:
            raise BadInput(f"{printable(self.root / DB_NAME)} has schema version {version}, "
                           + (f"newer than this dfsbench understands ({SCHEMA_VERSION})"
                              if version > SCHEMA_VERSION else "which no dfsbench wrote"),
                           hint="upgrade dfsbench" if version > SCHEMA_VERSION else
                           "it is left as it is; restore it from a copy")
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
                self.db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
            version = 3
        self.db.executescript(_SCHEMA)  # (the series table first: a store that says 4 has it)
        if version == 3:  # v3 kept no series: its records have none
            self.db.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
            version = 4
        if version == 4:  # v4 kept each series' points as JSON text: packed now, every row at once
            with self.db:
                self.db.execute("BEGIN")
                for seq, points in self.db.execute("SELECT measurement, points FROM series").fetchall():
                    pairs = self._points(points)
                    if pairs is None:  # (left as it is: reading it names it, as before)
                        continue
                    self.db.execute("UPDATE series SET points=? WHERE measurement=?", (packed(pairs), seq))
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        """A writer leaves the store one file (no WAL beside it), which a reader opens
        without making any file, and which copies whole; where another process has it
        open, it stays in WAL mode (that process's reading goes on)."""
        if not self.readonly:
            try:
                self.db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error:
                pass
        self.db.close()

    @_writes
    def raw_dir(self, run_id: str, *parts: str) -> Path:
        """The directory of a run's raw outputs (``parts``: under it), made: each a name
        (harness.system.names), so it is under the results directory whatever a store holds."""
        path = named_path(self.root / "raw", run_id, *parts)
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
        """Each attachment's (backend, variant, repeat, description), its types checked: what
        the core reads of a description (its clients and links, :data:`_TARGET_KINDS`), and
        each client host's facts (:data:`_HOST_KINDS`)."""
        found = []
        for b, v, r, d in self.db.execute("SELECT backend, variant, repeat, description FROM targets "
                                          "WHERE run_id=? ORDER BY repeat", (run_id,)):
            where = f"targets row {printable(b, 80)}/{printable(v, 80)}"
            if not isinstance(b, str) or not isinstance(v, str) or not isinstance(r, int):
                raise self._damaged(where, f"its backend, variant or repeat {printable(repr(r), 60)} is "
                                    "not what dfsbench writes")
            description = self._json(d, dict, where, "description")
            wrong = wrong_kind(description, _TARGET_KINDS, finite=True)
            if wrong:
                raise self._damaged(where, f"its description's {wrong}")
            for host, facts in (description.get("client_facts") or {}).items():
                wrong = wrong_kind(facts, _HOST_KINDS, finite=True) if isinstance(facts, dict) else "not a JSON object"
                if wrong:
                    raise self._damaged(where, f"its client host '{printable(host, 80)}': {wrong}")
            found.append((b, v, r, description))
        return found

    @_writes
    def add(self, m: Measurement, cell: str | None = None) -> int:
        """Commit one measurement of ``cell`` (see :func:`cell_key`) now (autocommit mode:
        each INSERT is its own transaction); its ``seq``."""
        return int(self.db.execute(
            "INSERT INTO measurements (run_id, workload, test, metric, value, unit, params, backend,"
            " variant, repeat, flags, recorded, cell) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (m.run_id, m.workload, m.test, m.metric, m.value, m.unit,
             _params_text(m), m.backend, m.variant, m.repeat,
             json.dumps(list(m.flags)), time.time(), cell)).lastrowid or 0)

    @_writes
    def add_series(self, seq: int, run_id: str, series: Series) -> None:
        """A stored record's figure over time (one row, its points packed: :func:`packed`)."""
        self.db.execute("INSERT OR REPLACE INTO series VALUES (?,?,?,?,?,?)",
                        (seq, run_id, series.source, series.start, series.end, packed(series.points)))

    def series(self, run_id: str) -> dict[int, Series]:
        """The run's series by the ``seq`` of their record (read only by what draws or
        exports them); a row no dfsbench wrote is an error naming it."""
        found = {}
        for seq, source, begin, end, points in self.db.execute(
                'SELECT measurement, source, begin, "end", points FROM series WHERE run_id=?', (run_id,)):
            where = f"series row {seq}"
            pairs = self._points(points)
            if source not in SOURCES or not all(isinstance(x, (int, float)) for x in (begin, end)) or not pairs:
                raise self._damaged(where, "its source, times or points are not what dfsbench writes")
            found[seq] = Series(tuple((float(t), float(v)) for t, v in pairs), float(end), source, float(begin))
        return found

    @staticmethod
    def _points(points: Any) -> list[tuple[float, float]] | None:
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

    @_writes
    def cell_ended(self, run_id: str, cell: str, status: str) -> None:
        """A cell's outcome: ``ok``, or why not (``failed``): only ``ok`` cells are not run
        again by ``run --resume``."""
        self.db.execute("INSERT OR REPLACE INTO cells VALUES (?,?,?,?)", (run_id, cell, status, time.time()))

    def cells_done(self, run_id: str) -> set[str]:
        """The cells of a run not to run again: those that succeeded, and those whose workload
        does not run on the attachment their backend made ('unsupported')."""
        return {c for (c,) in self.db.execute(
            "SELECT cell FROM cells WHERE run_id=? AND status IN ('ok', 'unsupported')", (run_id,))}

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

    def cell_rows(self, run_id: str) -> list[tuple[str, str, float]]:
        """Each cell's (cell, status, finished), as stored (a bundle carries them)."""
        rows = list(self.db.execute("SELECT cell, status, finished FROM cells WHERE run_id=? ORDER BY cell",
                                    (run_id,)))
        for c, status, finished in rows:
            if not isinstance(c, str) or not isinstance(status, str) or not isinstance(finished, NUMBER):
                raise self._damaged(f"cells row {printable(c, 80)}", "a column holds another type")
        return [(c, status, float(finished)) for c, status, finished in rows]

    @_writes
    def adopt_cell(self, run_id: str, cell: str, status: str, finished: float) -> None:
        """A cell's outcome as another store had it (an imported run's)."""
        self.db.execute("INSERT OR REPLACE INTO cells VALUES (?,?,?,?)", (run_id, cell, status, finished))

    @_writes
    def adopt_run(self, info: RunInfo) -> None:
        """A run made elsewhere, as it was stored there (its times, status and source;
        its records follow by :meth:`add`)."""
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                        (info.id, info.started, info.finished, info.status, info.label, info.source,
                         json.dumps(redact_json(info.config), allow_nan=False), info.config_hash,
                         json.dumps(redact_json(info.host), allow_nan=False)))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes that are stored all together or not at all (an import's)."""
        with self.writing():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def records_with_cells(self, run_id: str) -> list[tuple[Measurement, str | None]]:
        """The run's records with their series (:meth:`measurements`), each with its cell."""
        records = self.measurements(run_id)
        cells = [c for (c,) in self.db.execute("SELECT cell FROM measurements WHERE run_id=? ORDER BY seq",
                                               (run_id,))]
        if len(cells) != len(records) or not all(isinstance(c, (str, type(None))) for c in cells):
            raise self._damaged(f"the measurements of run {run_id}", "their cells are not what dfsbench writes")
        return list(zip(records, cells))

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
                 _params_text(m), m.backend, m.variant, m.repeat,
                 json.dumps(list(m.flags)), time.time(), m.cell) for m in records]
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT INTO measurements (run_id, workload, test, metric, value, unit, params,"
                " backend, variant, repeat, flags, recorded, cell) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    @_writes
    def finish_run(self, run_id: str, status: str) -> None:
        self.db.execute("UPDATE runs SET finished=?, status=? WHERE id=?", (time.time(), status, run_id))

    # -- reading ------------------------------------------------------------------------
    def run_ids(self) -> list[Any]:
        """Every stored run's id, oldest first, as stored: one that is not a name (no
        dfsbench made it) is listed too, and refused where it is used (:meth:`named_id`,
        :meth:`run`, :meth:`raw_dir`) — one damaged row hides no other run."""
        return [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY started, id")]

    def named_id(self, run_id: Any) -> str:
        """A stored run's id, which is a name (a run's id names its raw outputs' directory
        and its lab's): a row holding another is damaged."""
        if not is_name(run_id):
            raise self._damaged(f"runs row '{printable(run_id, 80)}'",
                                f"its id is not a name ({RULE}): no dfsbench made it, and a run's id "
                                "names the directories of its raw outputs")
        return str(run_id)

    def run(self, run_id: str) -> RunInfo:
        row = self.db.execute("SELECT id, started, finished, status, label, source, config,"
                              " config_hash, host FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise BadInput(f"no run '{printable(run_id)}' in {printable(self.root)}")
        self.named_id(row[0])
        targets: dict[tuple[str, str], dict[str, Any]] = {}
        for b, v, _, d in self.target_descriptions(run_id):
            targets.setdefault((b, v), d)  # the first attachment's; every repeat's is kept
        where = f"runs row '{printable(run_id)}'"
        config, host = self._json(row[6], dict, where, "config"), self._json(row[8], dict, where, "host")
        if not isinstance(row[1], NUMBER) or not all(isinstance(row[i], str) for i in (0, 3, 7)) \
                or not isinstance(row[2], (*NUMBER, type(None))) \
                or not all(isinstance(row[i], (str, type(None))) for i in (4, 5)):
            raise self._damaged(where, "a time or a text column holds another type")
        wrong = wrong_kind(host, _HOST_KINDS, finite=True)
        if wrong:
            raise self._damaged(where, f"its host fact {wrong}")
        return RunInfo(row[0], row[1], row[2], row[3], row[4], row[5], config, row[7], host, targets)

    def measurements(self, run_id: str, series: bool = True) -> list[Measurement]:
        """The run's records in the order they were stored; with their series unless
        ``series`` is False (what draws no figure over time reads none).

        A stored row's text columns are parsed and checked once per distinct text: the
        params once per tool run (its metrics share theirs, and so share one dict), the
        other columns once per kind of record (workload, test, metric, unit, system and
        flags). SQL says which rows hold a value within every parser's bounds and a whole
        repeat; those become records from their kind's checked fields without being checked
        again. Any other row is checked on its own, and the first damaged row is named.
        (Grouping the rows in SQL, by their params' text, took longer than reading them.)"""
        bounds = " ".join(f"WHEN '{unit}' THEN {ceiling!r}" for unit, ceiling in CEILING.items())
        rows = self.db.execute(
            "SELECT seq, value, repeat, typeof(value) IN ('real', 'integer') AND typeof(repeat) = 'integer'"
            f" AND value >= 0 AND value <= CASE unit {bounds} ELSE {sys.float_info.max!r} END,"
            " params, workload, test, metric, unit, backend, variant, run_id, flags, cell"
            " FROM measurements WHERE run_id=? ORDER BY seq", (run_id,))
        kinds: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any] | None]] = {}
        parsed: dict[str, dict[str, Any]] = {}  # params text -> its dict, checked
        records: list[tuple[int, Measurement]] = []
        for row in rows:
            seq, value, repeat, plain, text = row[:5]
            cell = row[-1]
            if not isinstance(cell, (str, type(None))):
                raise self._damaged(f"measurements row {seq}", "its cell is not what dfsbench writes")
            row = row[:-1]
            params = parsed.get(text) if isinstance(text, str) else None
            if params is None:
                params = self._params(text, seq, parsed)
            kind = kinds.get(row[5:])
            if kind is None:
                fields = self._fields(seq, row[5:])
                w, t, metric, unit, b, var, r, flags = fields
                try:
                    shared = Measurement(w, t, metric, 0.0, unit, {}, b, var, r, 0, flags).__dict__
                except BadInput:  # (a unit no record has: each row is named below)
                    shared = None
                kind = kinds[row[5:]] = (fields, shared)
            fields, shared = kind
            if plain and shared is not None:  # (a record of a checked kind, its value in bounds)
                m = object.__new__(Measurement)
                m.__dict__.update(shared, value=float(value), repeat=repeat, params=params, cell=cell)
            else:
                m = self._of(fields, params, seq, value, repeat)
                if cell is not None:
                    object.__setattr__(m, "cell", cell)
            records.append((seq, m))
        if not series:
            return [m for _, m in records]
        return self._with_series(run_id, records)

    def measurements_of(self, run_id: str, cell: str) -> list[Measurement]:
        """The records of one cell of a run (see :meth:`add`), with their series."""
        rows = self.db.execute(
            "SELECT seq, workload, test, metric, value, unit, params, backend, variant, run_id,"
            " repeat, flags FROM measurements WHERE run_id=? AND cell=? ORDER BY seq", (run_id, cell))
        return self._with_series(run_id, [(row[0], replace(self._measurement(row), cell=cell)) for row in rows])

    def _with_series(self, run_id: str, records: list[tuple[int, Measurement]]) -> list[Measurement]:
        """The records (by their ``seq``), each with its series, which is checked as its
        record is (:func:`harness.api.series.flaw`: finite, plausible in the record's unit, in
        time order, within the record's interval); a series that is not is an error naming
        its row."""
        stored = self.series(run_id)
        out = []
        for seq, m in records:
            found = stored.get(seq)
            if found is not None:
                why = flaw(found, m.unit, m.params.get("started"), m.params.get("ended"))
                if why:
                    raise self._damaged(f"series row {seq}", why)
                m = replace(m, series=found)
            out.append(m)
        return out

    def _measurement(self, row: tuple[Any, ...]) -> Measurement:
        """One stored row as a record (see :meth:`_fields`, :meth:`_params` and :meth:`_of`)."""
        seq, w, t, metric, value, unit, p, b, var, r, rep, f = row
        return self._of(self._fields(seq, (w, t, metric, unit, b, var, r, f)), self._params(p, seq), seq, value, rep)

    def _fields(self, seq: int, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row's text columns but its params, checked: (workload, test, metric, unit,
        backend, variant, run_id, flags). A row a damaged store (or another writer) left
        that no dfsbench wrote is an error naming it (``seq``: its row)."""
        w, t, metric, unit, b, var, r, f = row
        where = f"measurements row {seq}"
        flags = [] if f == "[]" else self._json(f, list, where, "flags")  # (most records: none)
        if not all(isinstance(x, str) for x in (w, t, metric, unit, b, var, r, *flags)):
            raise self._damaged(where, "a text column or a flag holds another type")
        return w, t, metric, unit, b, var, r, tuple(flags)

    def _params(self, text: Any, seq: int, parsed: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """A row's params, parsed and checked; kept in ``parsed`` by their text, where the
        metrics of one tool run find theirs (one dict, which no reader changes)."""
        where = f"measurements row {seq}"
        # (a NaN in a param no output computes with, as an older dfsbench stored it from a
        # tool's output, is read as it is: strict JSON prints it null, named under non_finite;
        # in one an output computes with, it is refused below)
        params = self._json(text, dict, where, "params")
        wrong = wrong_kind(params, _PARAM_KINDS)
        if wrong:
            raise self._damaged(where, f"its param {wrong}")
        for key in _PARAM_KINDS:
            found = params.get(key)
            why = plausible_param(key, found)  # (the bounds of harness.api.parsing, as a value's)
            if why:
                raise self._damaged(where, f"its param '{key}' is {printable(repr(found), 60)}: {why}")
        if parsed is not None:
            parsed[text] = params
        return params

    def _of(self, fields: tuple[Any, ...], params: dict[str, Any], seq: int, value: Any, rep: Any) -> Measurement:
        """A record of checked fields (:meth:`_fields`) and params, with its own value and
        repeat; a value no measurement can have is kept out of every figure, flagged
        ``implausible``."""
        w, t, metric, unit, b, var, r, flags = fields
        where = f"measurements row {seq}"
        if not isinstance(rep, int) or (value is not None and not isinstance(value, (int, float))):
            raise self._damaged(where, f"repeat {printable(repr(rep))} or value {printable(repr(value))} "
                                "is not a number")
        why = plausible(value, unit) if isinstance(value, (int, float)) else ""
        if why:  # (the bounds every parser holds its numbers to: harness.api.parsing)
            params = {**params, "error": f"the stored value {value:g} {unit} cannot be a measurement ({why})"}
            value, flags = None, (*flags, "implausible")
        try:  # (the records of a tool run share their params: no reader changes them)
            return Measurement(w, t, metric, value, unit, params, b, var, r, rep, flags)
        except BadInput as exc:
            raise self._damaged(where, exc.message) from None

    def _damaged(self, where: str, what: str) -> BadInput:
        return BadInput(f"{printable(self.root / DB_NAME)}: {where} is damaged: {printable(what)}",
                        hint="no dfsbench wrote that row; restore the store from a copy, or remove the row")

    def _json(self, text: Any, kind: type, where: str, column: str) -> Any:
        """A JSON column of a stored row, which must hold a ``kind`` (object or array)."""
        try:
            value = _PLAIN_JSON.decode(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, kind):
            raise self._damaged(where, f"its {column} is not a JSON {'object' if kind is dict else 'array'}")
        return value
