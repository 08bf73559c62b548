"""Writing a results store: a run begun and finished, each attachment's description, each
measurement committed the moment it exists, a cell's outcome, an imported run adopted.
A write that meets a full or read-only store stops the run (StoreUnwritable), with what is
stored intact."""

from __future__ import annotations

import errno
import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from harness.api.records import Measurement
from harness.api.series import Series
from harness.errors import BadInput, StoreUnwritable
from harness.results.schema import RunInfo, packed
from harness.system.files import printable
from harness.system.names import named_path
from harness.system.secret import redact_json
from harness.units import size

F = TypeVar("F", bound=Callable[..., Any])


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _writes(method: F) -> F:
    """A method that writes to the store: see :meth:`Store.writing`."""
    @functools.wraps(method)
    def wrapper(self: Writer, *args: Any, **kwargs: Any) -> Any:
        with self.writing():
            return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


# a store with less free than this takes no more runs or cells: raw outputs and records
# of a cell fit in it, and a measurement is never lost to a full disk half-way
MIN_FREE = 16 << 20


# how long a command waits for another process's lock on the store before it says so (SQLite

def _params_text(m: Measurement) -> str:
    """A record's params as stored: JSON whose every number is finite (JSON has no NaN, and
    no dfsbench writes one now); a record that has another is refused, not written."""
    try:
        return json.dumps(redact_json(m.params), sort_keys=True, allow_nan=False)
    except ValueError:
        raise BadInput(f"measurement {printable(m.workload, 60)}/{printable(m.test, 60)}/"
                       f"{printable(m.metric, 60)}: a param is not a finite number, which no store keeps",
                       hint="the tool output is corrupt; nothing of it was stored") from None


class Writer:
    """The writing half of :class:`harness.results.store.Store`: every method that changes
    the store. (It stands on the store's open connection, ``db``, in ``root``.)"""

    db: sqlite3.Connection
    root: Path

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

    def _full(self, exc: object) -> StoreUnwritable:
        return StoreUnwritable(f"the results store in {self.root} cannot take more: {exc}",
                               hint="free space there; every measurement stored before is intact, "
                                    "and 'dfsbench run … --resume RUN' runs what is missing")

    @_writes
    def raw_dir(self, run_id: str, *parts: str) -> Path:
        """The directory of a run's raw outputs (``parts``: under it), made: each a name
        (harness.system.names), so it is under the results directory whatever a store holds."""
        path = named_path(self.root / "raw", run_id, *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

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

    @_writes
    def cell_ended(self, run_id: str, cell: str, status: str) -> None:
        """A cell's outcome: ``ok``, or why not (``failed``): only ``ok`` cells are not run
        again by ``run --resume``."""
        self.db.execute("INSERT OR REPLACE INTO cells VALUES (?,?,?,?)", (run_id, cell, status, time.time()))

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
