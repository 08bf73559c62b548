import sqlite3

import pytest

from harness.catalogue import Catalogue

from harness.errors import BadInput
from harness.records import Measurement
from harness.store import SCHEMA_VERSION, Store, new_run_id


def test_record_validates_units_and_missing_values():
    with pytest.raises(BadInput):
        Measurement("largefile", "write", "throughput", 1.0, "MB/s")
    with pytest.raises(BadInput):
        Measurement("largefile", "write", "elapsed", None, "s")  # no value and no flag
    m = Measurement("largefile", "write", "elapsed", None, "s", flags=("failed",))
    assert m.to_dict()["flags"] == ["failed"]
    with pytest.raises(BadInput):
        Measurement("largefile", "write", "elapsed", float("nan"), "s")


def test_run_ids_look_like_the_design():
    rid = new_run_id(0)
    assert rid.startswith("19700101-000000-") and len(rid) == len("20261122-014501-3fa9c2")


def test_store_round_trip_and_resolution(tmp_path, quick_run):
    store = Store(tmp_path)
    rid = quick_run[0].run_id
    store.begin_run(rid, {"scale": "quick"}, "abc", {"hostname": "h"}, "test")
    for m in quick_run:
        store.add(m)
    store.finish_run(rid, "complete")
    assert store.measurements(rid) == quick_run
    catalogue = Catalogue(tmp_path)
    assert catalogue.resolve("latest") == rid
    assert catalogue.resolve(rid[:10]) == rid
    assert catalogue.resolve(rid[-6:]) == rid  # runs are named by their hex suffix in conversation
    with pytest.raises(BadInput):
        catalogue.resolve("nope")
    # each add is committed at once: another connection sees it before the run ends
    other = sqlite3.connect(tmp_path / "dfsbench.sqlite")
    assert other.execute("SELECT count(*) FROM measurements").fetchone()[0] == len(quick_run)
    assert other.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)


def test_store_refuses_newer_schema(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "dfsbench.sqlite")
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    with pytest.raises(Exception) as err:
        Store(tmp_path)
    assert "schema version 99" in str(err.value)
