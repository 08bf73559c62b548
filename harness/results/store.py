"""Stored runs: one SQLite database plus raw tool outputs in the results directory.

Each measurement is committed the moment it exists, so an interrupted run keeps every
number it produced. Runs are never overwritten. The schema is versioned.

The store is its schema (harness.results.schema), a writer (harness.results.writer) and
a reader (harness.results.reader); this module opens it, read-only or for writing, and
upgrades an older schema.
"""

from __future__ import annotations

import os
import sqlite3
import secrets
import time
from pathlib import Path

from harness.errors import BadInput, StoreUnwritable
from harness.results.reader import Reader
from harness.results.schema import DB_NAME, SCHEMA_VERSION, TABLES, migrate
from harness.results.writer import Writer
from harness.system.files import printable


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def default_results_dir() -> Path:
    return Path(os.environ.get("DFSBENCH_RESULTS", "results"))


# how long a command waits for another process's lock on the store before it says so (SQLite
# would wait 30 s by default): a run's writes are single rows, held for milliseconds
LOCK_WAIT = 5.0


def locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


class Store(Reader, Writer):
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

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        migrate(self.db, self._check_version())

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
