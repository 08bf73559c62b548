"""A store that is damaged, old, locked or missing, read by the read-only commands: they
never write it, and what is wrong is exit 2 naming the row, the table or the lock."""

import hashlib
import json
import math
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.results.schema import SCHEMA_VERSION
from harness.results.store import LOCK_WAIT
from tests.unit.inproc import dfsbench

FIO = Path(__file__).parent.parent / "data" / "tools" / "fio-json.json"




def files_of(results: Path) -> dict[str, str]:
    """Every file of the results directory and a digest of its bytes."""
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(results.rglob("*")) if p.is_file()}


@pytest.fixture
def stored(tmp_path) -> tuple[Path, str]:
    results = tmp_path / "results"
    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(results))
    assert done.returncode == 0, done.stderr
    # a store as a run leaves it after it ended: checkpointed, no WAL
    db = sqlite3.connect(results / "dfsbench.sqlite")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return results, done.stdout.strip().splitlines()[-1].removeprefix("run id: ")


def change(results: Path, *sql: str) -> None:
    db = sqlite3.connect(results / "dfsbench.sqlite")
    for statement in sql:
        db.execute(statement)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def read_only_commands(results: Path, run_id: str, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    return [dfsbench("compare", run_id, "--results", str(results)),
            dfsbench("compare", run_id, "--results", str(results), "--format", "json"),
            dfsbench("report", run_id, "--results", str(results), "-o", str(tmp_path / "r.html"))]


def test_reading_a_store_writes_nothing_to_it(stored, tmp_path):
    results, run_id = stored
    before = files_of(results)
    for got in read_only_commands(results, run_id, tmp_path):
        assert got.returncode == 0, got.stderr
    assert files_of(results) == before


@pytest.mark.parametrize("table", ["cells", "measurements", "runs"])
def test_a_store_missing_a_table_is_named_and_not_mended(stored, tmp_path, table):
    results, run_id = stored
    change(results, f"DROP TABLE {table}")
    before = files_of(results)
    for got in read_only_commands(results, run_id, tmp_path):
        assert got.returncode == 2, got.stderr
        assert f"has no table {table}" in got.stderr and "Traceback" not in got.stderr
    assert files_of(results) == before


def test_an_older_store_is_read_as_it_is(stored, tmp_path):
    """A version 2 store (no cells): read through a copy upgraded in memory; the file keeps
    its version and its bytes."""
    results, run_id = stored
    change(results, "DROP TABLE cells", "DROP TABLE superseded", "ALTER TABLE measurements DROP COLUMN cell",
           "UPDATE meta SET value='2' WHERE key='schema_version'")
    before = files_of(results)
    got = dfsbench("compare", run_id, "--results", str(results), "--format", "json")
    assert got.returncode == 0, got.stderr
    assert len(json.loads(got.stdout)["records"]) > 0
    assert files_of(results) == before


def test_compare_on_a_missing_results_directory_does_not_make_it(tmp_path):
    for command in (["compare", "latest"], ["report", "latest", "-o", str(tmp_path / "r.html")]):
        got = dfsbench(*command, "--results", str(tmp_path / "none"))
        assert got.returncode == 2 and "no runs are stored" in got.stderr, got.stderr
        assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("sql, named", [
    ("UPDATE measurements SET params='{\"bs\": ' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET flags='\"hung\"' WHERE seq=3", "measurements row 3"),
    ("UPDATE measurements SET value='fast' WHERE seq=1", "measurements row 1"),
    ("UPDATE measurements SET repeat=1.5 WHERE seq=1", "measurements row 1"),
    ("UPDATE measurements SET unit='furlongs' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET workload=x'01' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET params='{\"host\": {\"a\": 1}}' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET params='{\"ceiling\": \"x\"}' WHERE seq=2", "param 'ceiling'"),
    # a number of the params that no record can have: not finite, or beyond the parsers' bounds
    ("UPDATE measurements SET params='{\"bytes\": NaN}' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET params='{\"moved\": Infinity}' WHERE seq=2", "measurements row 2"),
    ("UPDATE measurements SET params='{\"clients\": 1e308}' WHERE seq=2", "param 'clients'"),
    ("UPDATE measurements SET params='{\"clients\": 2.5}' WHERE seq=2", "param 'clients'"),
    ("UPDATE measurements SET params='{\"bytes\": -600}' WHERE seq=2", "param 'bytes'"),
    ("UPDATE measurements SET params='{\"files\": 1e30}' WHERE seq=2", "param 'files'"),
    ("UPDATE measurements SET params='{\"started\": 1e300}' WHERE seq=2", "param 'started'"),
    ("UPDATE runs SET config='[1, 2'", "runs row"),
    ("UPDATE runs SET host='null'", "runs row"),
    ("UPDATE targets SET description='{'", "targets row cephfs/default"),
    # a host's fact stored as text where a number belongs (or a number where a text does)
    ("UPDATE runs SET host='{\"hostname\": \"h\", \"memory\": \"lots\"}'", "host fact 'memory' is 'lots'"),
    ("UPDATE runs SET host='{\"cpus\": \"2\"}'", "host fact 'cpus' is '2', not a whole number"),
    ("UPDATE runs SET host='{\"kernel\": 6}'", "host fact 'kernel' is 6, not a text"),
    ("UPDATE runs SET host='{\"memory\": NaN}'", "host fact 'memory' is nan"),
    ("UPDATE runs SET host='{\"tools\": [\"fio\"]}'", "host fact 'tools'"),
    ("UPDATE runs SET finished='soon'", "runs row"),
    ("UPDATE runs SET label=x'01'", "runs row"),
    ("UPDATE targets SET description='{\"client_facts\": {\"c1\": {\"memory\": \"lots\"}}}'",
     "targets row cephfs/default is damaged: its client host 'c1': 'memory' is 'lots'"),
    ("UPDATE targets SET description='{\"client_facts\": {\"c1\": 5}}'", "client host 'c1': not a JSON object"),
    ("UPDATE targets SET description='{\"link\": \"1Gbit\"}'", "description's 'link' is '1Gbit'"),
    ("UPDATE targets SET repeat='first'", "targets row cephfs/default"),
    # a run id that is a path: the store is damaged, whatever run is asked for
    ("UPDATE runs SET id='../../x'", "runs row '../../x' is damaged"),
    ("UPDATE meta SET value='three' WHERE key='schema_version'", "'schema_version' is 'three'"),
    ("UPDATE meta SET value='3.5' WHERE key='schema_version'", "'schema_version' is '3.5'"),
    ("UPDATE meta SET value='0' WHERE key='schema_version'", "schema version 0"),
    (f"UPDATE meta SET value='{SCHEMA_VERSION + 1}' WHERE key='schema_version'", "newer than this dfsbench"),
])
def test_a_damaged_row_is_exit_2_naming_it(stored, tmp_path, sql, named):
    results, run_id = stored
    change(results, sql)
    before = files_of(results)
    for got in read_only_commands(results, run_id, tmp_path):
        assert got.returncode == 2, got.stderr
        assert named in got.stderr and "Traceback" not in got.stderr, got.stderr
    assert files_of(results) == before


def test_a_non_finite_param_no_output_computes_with_is_read_and_printed_null(stored):
    """A NaN where no figure reads it (a job's bs, as an older dfsbench imported it from a
    tool output): the run is read, its tables print, and its JSON is strict — the value null,
    named under non_finite; only where an output computes with a param (bytes, moved, ...)
    is it a damaged row."""
    results, run_id = stored
    change(results, "UPDATE measurements SET params=json_set(params, '$.bs', 'x') WHERE seq=2",
           "UPDATE measurements SET params=replace(params, '\"bs\":\"x\"', '\"bs\":NaN') WHERE seq=2")
    table = dfsbench("compare", run_id, "--results", str(results))
    assert table.returncode == 0, table.stderr
    got = dfsbench("compare", run_id, "--results", str(results), "--format", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))
    assert [p for p, was in doc["non_finite"].items() if p.endswith("/params/bs") and was == "NaN"]


def test_a_newer_store_refuses_a_run_too(stored):
    results, _ = stored
    change(results, f"UPDATE meta SET value='{SCHEMA_VERSION + 1}' WHERE key='schema_version'")
    got = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(results))
    assert got.returncode == 2 and "newer than this dfsbench" in got.stderr


@pytest.mark.parametrize("value", [1e300, -5.0, 2e18, 1e17])
def test_a_value_no_measurement_can_have_is_flagged_not_shown(stored, value):
    results, run_id = stored
    change(results, f"UPDATE measurements SET value={value!r} WHERE seq=1")
    db = sqlite3.connect(results / "dfsbench.sqlite")
    workload, test, metric = db.execute("SELECT workload, test, metric FROM measurements WHERE seq=1").fetchone()
    db.close()
    got = dfsbench("compare", run_id, "--results", str(results), "--format", "json")
    assert got.returncode == 0, got.stderr
    first = next(r for r in json.loads(got.stdout)["records"]
                 if (r["workload"], r["test"], r["metric"]) == (workload, test, metric))
    assert first["value"] is None and "implausible" in first["flags"]
    assert f"{value:g}" in first["params"]["error"]
    table = dfsbench("compare", run_id, "--results", str(results), "--format", "csv")
    assert table.returncode == 0, table.stderr
    # the value is named only where the table says why the cell has none
    shown = [line for line in table.stdout.splitlines() if f"{value:g}" in line or repr(value) in line]
    assert shown and all("cannot be a measurement" in line and ",implausible," in line for line in shown), shown


def test_a_locked_store_says_so_within_seconds(stored, tmp_path):
    results, run_id = stored
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "db.execute('PRAGMA journal_mode=DELETE'); db.execute('BEGIN EXCLUSIVE'); "
         "db.execute('INSERT INTO meta VALUES (\"x\", \"y\")'); print('held', flush=True); time.sleep(60)",
         str(results / "dfsbench.sqlite")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for command in (["compare", run_id], ["import", "fio", str(FIO), "--backend", "cephfs"]):
            began = time.monotonic()
            got = dfsbench(*command, "--results", str(results))
            took = time.monotonic() - began
            assert got.returncode == 2 and "locked by another process" in got.stderr, got.stderr
            assert "Traceback" not in got.stderr
            assert took < LOCK_WAIT + 10
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("version, table", [("4", "measurements"), ("4", "series"), ("3", "cells")])
def test_an_older_store_missing_a_table_of_its_version_is_named_too(stored, tmp_path, version, table):
    """An older store is read through a copy upgraded in memory, which would make the missing
    table anew, empty: the tables its version has are looked for first."""
    results, run_id = stored
    change(results, *(["DROP TABLE series"] if version == "3" and table != "series" else []), f"DROP TABLE {table}",
           f"UPDATE meta SET value='{version}' WHERE key='schema_version'")
    before = files_of(results)
    for got in read_only_commands(results, run_id, tmp_path):
        assert got.returncode == 2, got.stderr
        assert f"has no table {table}" in got.stderr and "Traceback" not in got.stderr
    assert files_of(results) == before


START = 1.8e9  # (2027: a record's clock)


def _packed(points: list[tuple[float, float]]) -> str:
    """Points as an SQL blob literal, packed as the store packs them."""
    return "x'" + struct.pack(f"<{2 * len(points)}d", *(x for p in points for x in p)).hex() + "'"


@pytest.fixture
def with_series(tmp_path) -> tuple[Path, str]:
    """A stored cell of two clients, each with its rate every second (rows 1 and 2)."""
    from harness.api.records import Measurement
    from harness.api.series import per_second
    from harness.results.store import Store

    results, run_id = tmp_path / "results", "20270115-080000-5e1e55"
    store = Store(results)
    store.begin_run(run_id, {}, "h", {}, "test")
    store.add_target(run_id, "cephfs", "default", {"system": "cephfs"})
    for host in ("c1", "c2"):
        notes = [(START + i, 100.0 * i) for i in range(7)]
        m = Measurement("largefile", "write", "throughput", 100.0, "B/s",
                        {"file_size": 1 << 20, "host": host, "clients": 2, "started": START, "ended": START + 6,
                         "bytes": 600}, "cephfs", "default", run_id)
        series = per_second(notes)
        assert series is not None
        store.add_series(store.add(m, "c"), run_id, series)
    store.finish_run(run_id, "complete")
    store.close()
    return results, run_id


def _series_commands(results: Path, run_id: str, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    return [dfsbench("compare", run_id, "--results", str(results), "--format", "json"),
            dfsbench("compare", run_id, "--results", str(results), "--format", "csv", "--series"),
            dfsbench("report", run_id, "--results", str(results), "-o", str(tmp_path / "r.html"))]


GOOD = [(START + i, 100.0) for i in range(6)]


@pytest.mark.parametrize("sql, said", [
    pytest.param(f"UPDATE series SET points={_packed([(math.nan, 100.0)] + GOOD[1:])} WHERE measurement=1",
                 "not a finite", id="t-nan"),
    pytest.param("UPDATE series SET \"end\"=9e999 WHERE measurement=1", "not a finite", id="end-inf"),
    pytest.param(f"UPDATE series SET points={_packed(GOOD[:2] + [(START + 2, math.inf)])} WHERE measurement=2",
                 "not a finite", id="value-inf"),
    pytest.param(f"UPDATE series SET points={_packed([(START, -5e6)] + GOOD[1:])} WHERE measurement=1",
                 "negative", id="value-negative"),
    pytest.param(f"UPDATE series SET points={_packed(GOOD[:1] + [(START + 1, 1e300)])} WHERE measurement=1",
                 "beyond any storage", id="value-1e300"),
    pytest.param(f"UPDATE series SET points={_packed(GOOD + [(1e300, 100.0)])}, \"end\"=1e300 WHERE measurement=1",
                 "not seconds since the epoch", id="t-1e300"),
    pytest.param(f"UPDATE series SET points={_packed(GOOD[3:] + GOOD[:3])} WHERE measurement=2",
                 "not in time order", id="out-of-order"),
    pytest.param(f"UPDATE series SET begin={START + 5}, \"end\"={START + 1} WHERE measurement=1", "ends",
                 id="begin-after-end"),
    # one client's series at 1970 and the other's now: summing them once took a point per second between
    pytest.param(f"UPDATE series SET points={_packed([(0.0, 100.0)] + GOOD[1:])}, begin=0 WHERE measurement=1",
                 "not seconds since the epoch", id="t-1970"),
    pytest.param(f"UPDATE series SET \"end\"={START + 60} WHERE measurement=2", "outside its record's interval",
                 id="end-after-record"),
])
def test_a_series_no_record_can_have_is_exit_2_naming_its_row(with_series, tmp_path, sql, said):
    results, run_id = with_series
    change(results, sql)
    row = sql.rsplit("measurement=", 1)[1]
    before = files_of(results)
    for got in _series_commands(results, run_id, tmp_path):
        assert got.returncode == 2, got.stderr
        assert f"series row {row} is damaged" in got.stderr and said in got.stderr, got.stderr
        assert "Traceback" not in got.stderr and got.stdout == ""
    assert files_of(results) == before


def test_a_series_at_1970_is_refused_where_its_record_has_no_interval_to_hold_it(with_series, tmp_path):
    """One client's series at 1970 and the other's now, their records saying no started or
    ended: no aggregate from 1970 to now reaches an output, nor does either series."""
    results, run_id = with_series
    change(results, "UPDATE measurements SET params=json_remove(params, '$.started', '$.ended')",
           f"UPDATE series SET points={_packed([(float(i), 100.0) for i in range(6)])}, begin=0, \"end\"=6 "
           "WHERE measurement=1")
    for got in _series_commands(results, run_id, tmp_path):
        assert got.returncode == 2 and "series row 1 is damaged" in got.stderr, got.stderr
        assert "not seconds since the epoch" in got.stderr and got.stdout == ""


@pytest.mark.parametrize("key", ["started", "ended"])
def test_a_record_time_before_dfsbench_existed_is_refused(with_series, tmp_path, key):
    results, run_id = with_series
    change(results, f"UPDATE measurements SET params=json_set(params, '$.{key}', 0) WHERE seq=1")
    got = dfsbench("compare", run_id, "--results", str(results))
    assert got.returncode == 2 and f"its param '{key}' is 0: before any record's" in got.stderr, got.stderr


def test_series_as_dfsbench_keeps_them_are_read(with_series, tmp_path):
    results, run_id = with_series
    for got in _series_commands(results, run_id, tmp_path):
        assert got.returncode == 0, got.stderr
