"""Reading a results store: the runs, their attachments, records, series and cells, each
row checked as it is read — a row no dfsbench wrote is an error naming it, never a figure."""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.parsing import CEILING, plausible, plausible_param
from harness.api.records import Measurement
from harness.api.series import SOURCES, Series, flaw
from harness.errors import BadInput
from harness.results.schema import (DB_NAME, HOST_KINDS, NUMBER, PARAM_KINDS, TARGET_KINDS, RunInfo,
                                    stored_points, wrong_kind)
from harness.system.files import printable
from harness.system.names import RULE, is_name

_PLAIN_JSON = json.JSONDecoder()


class Reader:
    """The reading half of :class:`harness.results.store.Store`: nothing here writes.
    (It stands on the store's open connection, ``db``, in ``root``.)"""

    db: sqlite3.Connection
    root: Path

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
        wrong = wrong_kind(host, HOST_KINDS, finite=True)
        if wrong:
            raise self._damaged(where, f"its host fact {wrong}")
        return RunInfo(row[0], row[1], row[2], row[3], row[4], row[5], config, row[7], host, targets)

    def target_descriptions(self, run_id: str) -> list[tuple[str, str, int, dict[str, Any]]]:
        """Each attachment's (backend, variant, repeat, description), its types checked: what
        the core reads of a description (its clients and links, :data:`TARGET_KINDS`), and
        each client host's facts (:data:`HOST_KINDS`)."""
        found = []
        for b, v, r, d in self.db.execute("SELECT backend, variant, repeat, description FROM targets "
                                          "WHERE run_id=? ORDER BY repeat", (run_id,)):
            where = f"targets row {printable(b, 80)}/{printable(v, 80)}"
            if not isinstance(b, str) or not isinstance(v, str) or not isinstance(r, int):
                raise self._damaged(where, f"its backend, variant or repeat {printable(repr(r), 60)} is "
                                    "not what dfsbench writes")
            description = self._json(d, dict, where, "description")
            wrong = wrong_kind(description, TARGET_KINDS, finite=True)
            if wrong:
                raise self._damaged(where, f"its description's {wrong}")
            for host, facts in (description.get("client_facts") or {}).items():
                wrong = wrong_kind(facts, HOST_KINDS, finite=True) if isinstance(facts, dict) else "not a JSON object"
                if wrong:
                    raise self._damaged(where, f"its client host '{printable(host, 80)}': {wrong}")
            found.append((b, v, r, description))
        return found

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

    def cells_done(self, run_id: str) -> set[str]:
        """The cells of a run not to run again: those that succeeded, and those whose workload
        does not run on the attachment their backend made ('unsupported')."""
        return {c for (c,) in self.db.execute(
            "SELECT cell FROM cells WHERE run_id=? AND status IN ('ok', 'unsupported')", (run_id,))}

    def cell_rows(self, run_id: str) -> list[tuple[str, str, float]]:
        """Each cell's (cell, status, finished), as stored (a bundle carries them)."""
        rows = list(self.db.execute("SELECT cell, status, finished FROM cells WHERE run_id=? ORDER BY cell",
                                    (run_id,)))
        for c, status, finished in rows:
            if not isinstance(c, str) or not isinstance(status, str) or not isinstance(finished, NUMBER):
                raise self._damaged(f"cells row {printable(c, 80)}", "a column holds another type")
        return [(c, status, float(finished)) for c, status, finished in rows]

    def series(self, run_id: str) -> dict[int, Series]:
        """The run's series by the ``seq`` of their record (read only by what draws or
        exports them); a row no dfsbench wrote is an error naming it."""
        found = {}
        for seq, source, begin, end, points in self.db.execute(
                'SELECT measurement, source, begin, "end", points FROM series WHERE run_id=?', (run_id,)):
            where = f"series row {seq}"
            pairs = stored_points(points)
            if source not in SOURCES or not all(isinstance(x, (int, float)) for x in (begin, end)) or not pairs:
                raise self._damaged(where, "its source, times or points are not what dfsbench writes")
            found[seq] = Series(tuple((float(t), float(v)) for t, v in pairs), float(end), source, float(begin))
        return found

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
        wrong = wrong_kind(params, PARAM_KINDS)
        if wrong:
            raise self._damaged(where, f"its param {wrong}")
        for key in PARAM_KINDS:
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
