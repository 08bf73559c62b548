"""A string read from a store is a name, never a path: a run id that is not one is a
damaged store naming its row, and the functions that make a path of names refuse any
other, wherever it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import BadInput
from harness.execution.plan import plan_from_file
from harness.execution.runner import host_facts
from harness.results.catalogue import Catalogue
from harness.results.store import Store, new_run_id
from harness.system.names import is_name, named_path
from tests.helpers import dfsbench

CONFIG = """\
backends: [localdir]
workloads:
  - name: fio
    options: {size: 16MiB}
scale: quick
"""
NOT_NAMES = ["../../x", "/abs/path", "a/b", "..", ".", "-rf", ".hidden", "", "x\n", "x" * 256, "a b"]


def files_under(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def test_the_ids_dfsbench_makes_and_the_reference_names_are_names():
    assert is_name(new_run_id()) and is_name("20261122-014501-3fa9c2")
    assert is_name("report-2014") and is_name("resume-1") and is_name("cephfs-default-r0-p2")


@pytest.mark.parametrize("bad", NOT_NAMES, ids=range(len(NOT_NAMES)))
def test_a_path_of_names_refuses_anything_else(tmp_path, bad):
    with pytest.raises(BadInput, match="is not a name"):
        named_path(tmp_path, "runs", bad)
    assert named_path(tmp_path, "runs", "r1") == tmp_path / "runs" / "r1"
    # a directory named by a backend, a variant of 64 letters and a repeat is made
    tag = "-".join(("glusterfs", "v" * 64, "r0", "p12"))
    assert named_path(tmp_path, tag) == tmp_path / tag


@pytest.mark.parametrize("bad", ["../../x", "/abs/path", "-rf"])
def test_the_store_makes_no_raw_directory_of_a_non_name(tmp_path, bad):
    results = tmp_path / "a" / "b" / "results"
    store = Store(results)
    before = files_under(tmp_path)
    for parts in ((bad,), ("r1", bad)):
        with pytest.raises(BadInput, match="is not a name"):
            store.raw_dir(*parts)
    assert files_under(tmp_path) == before
    store.close()


@pytest.mark.parametrize("bad", ["../../x", "/abs/path", "a/b", "x" * 10_000], ids=["up", "abs", "sub", "10KB"])
def test_a_stored_run_id_that_is_not_a_name_is_a_damaged_row(tmp_path, bad):
    store = Store(tmp_path)
    store.begin_run(bad, {}, "h", {}, "test")
    with pytest.raises(BadInput) as caught:
        Catalogue(tmp_path).resolve(bad)
    shown = caught.value.message
    assert "runs row '" in shown and "is damaged" in shown and "its id is not a name" in shown
    assert len(shown) < 600  # (a 10 KB id is named, not echoed whole)
    with pytest.raises(BadInput, match="its id is not a name"):
        store.run(bad)
    with pytest.raises(BadInput, match="its id is not a name"):
        Catalogue(tmp_path).resolve("latest")
    store.close()


FIO = Path(__file__).parent.parent / "data" / "tools" / "fio-json.json"


def test_a_damaged_run_row_hides_no_other_run_and_is_refused_where_it_is_named(tmp_path):
    """A store holding a run whose id is a path: a command about another run works; one that
    names the bad row — its id, 'latest' while it is the latest, a prefix or a suffix that
    matches it, with other runs or alone, or one that matches no run — is refused, naming the row."""
    results = tmp_path / "results"
    imported = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(results), timeout=120)
    assert imported.returncode == 0
    store = Store(results)
    good = store.run_ids()[0]
    twin = good[:4] + "/../y"  # (a prefix of the good run's id matches it too)
    store.begin_run(twin, {}, "h", {}, "test")
    store.begin_run("../../x", {}, "h", {}, "test")  # (the latest)
    store.close()
    for args in (["compare", good], ["compare", good[:8]], ["report", good, "-o", str(tmp_path / "r.html")],
                 ["compare", good, "--baseline", good, "--fail-on", "throughput:-10%"]):
        got = dfsbench(*args, "--results", str(results), timeout=120)
        assert got.returncode == 0 and "damaged" not in got.stderr, (args, got.stderr)
    for ref, row in (("../../x", "../../x"), ("latest", "../../x"), ("../", "../../x"), ("x", "../../x"),
                     (good[:4], twin), (twin, twin), ("nothing-like-it", twin)):
        got = dfsbench("compare", ref, "--results", str(results), timeout=120)
        assert got.returncode == 2 and f"runs row '{row}' is damaged" in got.stderr, (ref, got.stderr)
        assert "Traceback" not in got.stderr


@pytest.mark.parametrize("bad", ["../../escaped", "ABSOLUTE"])
def test_resuming_a_run_whose_id_is_a_path_writes_nothing_outside_the_results(tmp_path, bad):
    """'run CONFIG --resume latest' on a store whose run has the config's hash and an id
    that is a path: refused as a damaged store, before any directory is made."""
    config = tmp_path / "run.yaml"
    config.write_text(CONFIG)
    results = tmp_path / "a" / "b" / "results"
    run_id = str(tmp_path / "escaped") if bad == "ABSOLUTE" else bad
    plan = plan_from_file(config)
    store = Store(results)
    store.begin_run(run_id, plan.config.model_dump(mode="json"), plan.config_hash,
                    {**host_facts(), "pid": 2 ** 22 + 1}, plan.source)
    store.finish_run(run_id, "interrupted")
    store.close()
    before = files_under(tmp_path)
    got = dfsbench("run", str(config), "--resume", "latest", "--results", str(results), timeout=120)
    assert got.returncode == 2, got.stderr
    assert f"runs row '{run_id}' is damaged" in got.stderr and "Traceback" not in got.stderr
    assert files_under(tmp_path) == before
