import sqlite3
from dataclasses import replace

import pytest

from harness.api.records import Measurement
from harness.errors import BadInput
from harness.results.catalogue import Catalogue
from harness.results.schema import SCHEMA_VERSION
from harness.results.store import Store, new_run_id


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


def test_each_repeat_keeps_its_own_target_description(tmp_path):
    """A repeat attaches a new image: its description is stored beside the first's, not
    over it (issue: INSERT OR REPLACE kept only the last)."""
    store = Store(tmp_path)
    store.begin_run("r", {}, "h", {}, "test")
    store.add_target("r", "rbd", "default", {"image": "dfsbench-aaa"}, 0)
    store.add_target("r", "rbd", "default", {"image": "dfsbench-bbb"}, 1)
    assert [(rep, d["image"]) for *_, rep, d in store.target_descriptions("r")] == \
        [(0, "dfsbench-aaa"), (1, "dfsbench-bbb")]
    assert store.run("r").targets[("rbd", "default")]["image"] == "dfsbench-aaa"


def test_a_version_1_store_is_migrated(tmp_path):
    db = sqlite3.connect(tmp_path / "dfsbench.sqlite")
    db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "INSERT INTO meta VALUES ('schema_version', '1');"
                     "CREATE TABLE targets (run_id TEXT, backend TEXT, variant TEXT, description TEXT,"
                     " PRIMARY KEY (run_id, backend, variant));"
                     "INSERT INTO targets VALUES ('r', 'cephfs', 'default', '{\"osds\": 3}');")
    db.close()
    store = Store(tmp_path)
    assert store.target_descriptions("r") == [("cephfs", "default", 0, {"osds": 3})]


def test_runs_whose_setups_differ_are_flagged_not_comparable(tmp_path, quick_run):
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    store = Store(tmp_path)
    ids = []
    for rid, replicas in (("20260101-000000-aaaaaa", 3), ("20260101-000001-bbbbbb", 2)):
        store.begin_run(rid, {"scale": "quick"}, "h", {"cpus": 2, "memory": 1 << 30}, "test")
        for backend in ("glusterfs", "cephfs"):
            store.add_target(rid, backend, "default",
                             {"replicas": replicas if backend == "cephfs" else 3}, 0)
        store.add_many(m.__class__(**{**m.__dict__, "run_id": rid}) for m in quick_run
                       if m.backend != "localdir")
        ids.append(rid)
    view = build_view(Catalogue(tmp_path), ViewRequest(ids))
    assert any("CephFS replicas 3 vs 2" in line for line in view.header)
    flagged = {m.backend for m in view.records if "not-comparable" in m.flags}
    assert flagged == {"cephfs"}
    small = next(t for t in view.tables if t.title.startswith("Small files"))
    assert all(row[-1].startswith("not comparable: setups differ [X]") for row in small.rows)


def test_header_leaves_out_what_is_not_known(tmp_path):
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    header = "\n".join(build_view(Catalogue(tmp_path), ViewRequest(["report-2014"])).header)
    assert "None" not in header and ", 2 GiB RAM" in header and "CPUs" not in header


def test_a_version_2_store_is_migrated_and_its_runs_read_as_before(tmp_path):
    store = Store(tmp_path)
    store.begin_run("old", {}, "h", {}, "test")
    store.add(Measurement("fio", "read", "iops", 100.0, "op/s", {"bs": 4096}, "cephfs", "default", "old"))
    store.db.execute("ALTER TABLE measurements DROP COLUMN cell")
    store.db.execute("DROP TABLE cells")
    store.db.execute("DROP TABLE superseded")
    store.db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    store.close()
    again = Store(tmp_path)
    assert [m.value for m in again.measurements("old")] == [100.0]
    assert not again.knows_cells("old")  # stored without its cells: it cannot be resumed


def test_a_cell_run_again_sets_its_earlier_records_aside(tmp_path):
    store = Store(tmp_path)
    store.begin_run("r", {}, "h", {}, "test")
    m = Measurement("fio", "read", "iops", 100.0, "op/s", {"bs": 4096}, "cephfs", "default", "r")
    store.add(m, "cell-a")
    store.add(replace(m, value=None, flags=("failed",)), "cell-b")
    store.cell_ended("r", "cell-a", "ok")
    store.cell_ended("r", "cell-b", "failed")
    assert store.cells_done("r") == {"cell-a"}
    assert store.supersede("r", "cell-b") == 1
    assert [x.value for x in store.measurements("r")] == [100.0]
    assert store.db.execute("SELECT count(*) FROM superseded").fetchone()[0] == 1  # kept, not shown
    assert store.knows_cells("r")


def test_facts_an_older_dfsbench_stored_stand_where_the_plugin_is_missing_or_differs():
    from harness.results.catalogue import system_facts

    older = {"display": "WeirdFS", "network": True, "write_copies": 3.0, "control": False, "stored_copies": 3.0}
    missing = system_facts("weirdfs", {"facts": older, "version": "9"})
    assert (missing.display, missing.network, missing.write_copies, missing.stored_copies) == \
        ("WeirdFS", True, 3.0, 3.0)
    installed = system_facts("glusterfs", {"facts": {**older, "display": "GlusterFS (then)"}})
    assert installed.display == "GlusterFS (then)" and installed.write_copies == 3.0
    assert installed.topology  # what the plugin adds that the older run did not store


def _repeated(tmp_path, quick_run):
    """The quick run stored three times over as repeats (each repeat's records alike but for
    their values), with a record without a value and one whose stored value is no measurement."""
    store = Store(tmp_path)
    rid = quick_run[0].run_id
    store.begin_run(rid, {}, "h", {}, "test")
    for rep in range(3):
        for m in quick_run:
            store.add(replace(m, repeat=rep, value=m.value * (1 + rep / 10) if m.value else m.value), "c")
    store.add(replace(quick_run[0], value=None, flags=("hung",), repeat=3), "c")
    seq = store.add(replace(quick_run[0], repeat=4), "c")
    store.db.execute("UPDATE measurements SET value=-5.0 WHERE seq=?", (seq,))
    return store, rid


def test_a_runs_records_read_by_group_are_its_rows_read_one_by_one(tmp_path, quick_run):
    store, rid = _repeated(tmp_path, quick_run)
    grouped = store.measurements(rid, series=False)
    one_by_one = store.measurements_of(rid, "c")  # (row by row: each row parsed and checked on its own)
    assert len(grouped) == 3 * len(quick_run) + 2
    assert [m.to_dict() for m in grouped] == [m.to_dict() for m in one_by_one]
    assert grouped[-1].value is None and "implausible" in grouped[-1].flags and "-5" in grouped[-1].params["error"]
    assert grouped[0].params is grouped[len(quick_run)].params  # (a group's params are read once)


def test_the_first_damaged_row_is_named_whatever_group_it_is_in(tmp_path, quick_run):
    store, rid = _repeated(tmp_path, quick_run)
    last = len(quick_run) + 1  # (the first record's second repeat)
    store.db.execute("UPDATE measurements SET value='fast' WHERE seq=?", (last,))
    # a later row of the same figure, whose params sort before those of its repeats (its group
    # comes first from SQL)
    store.db.execute("UPDATE measurements SET params='{\"a\": ' WHERE seq=?", (last + len(quick_run),))
    with pytest.raises(BadInput, match=f"measurements row {last} is damaged"):
        store.measurements(rid)


def test_a_records_dict_is_every_field_but_its_series_and_a_copy(quick_run):
    """to_dict is the contract's record (what asdict gave, less progress, series,
    histogram and the cell it was stored in: a bundle carries that beside it), its
    params a copy down to what they hold."""
    from dataclasses import asdict

    for m in quick_run[:20] + [Measurement("fio", "j", "iops", 1.0, "op/s", params={"hosts": ["a"], "x": {"y": 1}})]:
        want = asdict(m)
        del want["progress"], want["series"], want["histogram"], want["cell"]
        want["flags"] = list(m.flags)
        got = m.to_dict()
        assert got == want and list(got) == list(want)
        got["params"].get("hosts", []).append("b")
        got["params"].get("x", {}).clear()
        assert m.params == want["params"]
