"""A run that travels (harness.results.bundle): a real run's store exported, verified and
imported into another store whole; and bundles from a stranger — a record changed, a raw
output changed, a manifest that lies, members that are links, devices or '../x', a
decompression bomb, JSON that is not strict — each refused, saying what, with nothing
written outside a temporary directory and nothing of it in the store."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from tests.unit.builders import stored_with_series
from harness import cli
from harness.results import archive, bundle
from harness.results.store import Store

RAW = b'{"fio version": "fio-3.33", "jobs": []}\n'


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The container run of offered load (tests/data/docker-run-load*), with a raw output,
    exported: (the bundle, the run id, the sum export printed); its store is 'a' beside it."""
    tmp_path = tmp_path_factory.mktemp("exported")
    run_id = stored_with_series(tmp_path / "a", "docker-run-load")
    raw = tmp_path / "a" / "raw" / run_id / "fio-randread-r0" / "client1"
    raw.mkdir(parents=True)
    (raw / "fio.json").write_bytes(RAW)
    store = Store(tmp_path / "a")
    try:
        digest, counts = bundle.export(store, run_id, tmp_path / "run.tar.gz", {})
    finally:
        store.close()
    assert counts == {"records": 1934, "raw": 1}
    return tmp_path / "run.tar.gz", run_id, digest


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def pack(path: Path, found: dict[str, bytes], extra: list[tarfile.TarInfo] = (), data: list[bytes] = ()) -> Path:
    """A gzip'd tar of ``found`` (name: bytes), then of ``extra`` (headers as given; their
    bytes from ``data`` or x's)."""
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, content in found.items():
            tar.addfile(_info(name, len(content)), io.BytesIO(content))
        for i, info in enumerate(extra):
            content = data[i] if i < len(data) else b"x" * info.size
            tar.addfile(info, io.BytesIO(content) if info.size else None)
    return path


def resummed(found: dict[str, bytes]) -> dict[str, bytes]:
    """The members with a manifest made again to match them: a forger's bundle."""
    manifest = json.loads(found[archive.MANIFEST])
    manifest["members"] = [{"name": n, "sha256": hashlib.sha256(d).hexdigest(), "bytes": len(d)}
                           for n, d in found.items() if n != archive.MANIFEST]
    manifest["sha256"] = archive.whole_sum(manifest)
    return {**found, archive.MANIFEST: archive.canonical(manifest)}


def problems(path: Path, expect: str | None = None) -> list[str]:
    with bundle.opened(path, expect) as found:
        return found.problems


def run_cli(*argv: str) -> int:
    return cli.main([*argv])


def test_a_run_exported_verifies_and_imports_whole_into_another_store(exported, tmp_path, capsys):
    path, run_id, digest = exported
    assert run_cli("verify", str(path), "--expect", digest) == 0
    said = capsys.readouterr().out
    assert "verified: its SHA-256 is the one expected" in said and f"sha256 {digest}" in said \
        and "1,934 records, 1 raw outputs" in said
    assert run_cli("verify", str(path)) == 0  # (without the published sum: consistent, and no more)
    assert ": consistent: " in capsys.readouterr().out
    assert run_cli("import", str(path), "--results", str(tmp_path / "b"), "--expect", digest) == 0
    a, b = Store(path.parent / "a", readonly=True), Store(tmp_path / "b", readonly=True)
    try:
        got, want = b.records_with_cells(run_id), a.records_with_cells(run_id)
        assert [(m.to_dict(), c) for m, c in got] == [(m.to_dict(), c) for m, c in want]
        assert [m.series for m, _ in got] == [m.series for m, _ in want] and any(m.series for m, _ in got)
        ia, ib = a.run(run_id), b.run(run_id)
        assert (ib.started, ib.finished, ib.status, ib.config, ib.config_hash) == \
            (ia.started, ia.finished, ia.status, ia.config, ia.config_hash)
        assert ib.targets == ia.targets and ib.source == f"bundle sha256:{digest}"
        assert ib.host["bundle"]["bundle_sha256"] == digest and ib.host["hostname"] == ia.host["hostname"]
        assert ib.host["bundle"]["checked_against_published_sum"] is True
    finally:
        a.close()
        b.close()
    assert (tmp_path / "b" / "raw" / run_id / "fio-randread-r0" / "client1" / "fio.json").read_bytes() == RAW
    capsys.readouterr()
    assert run_cli("compare", run_id, "--results", str(tmp_path / "b")) == 0
    assert f"  from elsewhere: imported {time.strftime('%Y-%m-%d', time.gmtime())}" in capsys.readouterr().out
    # the same run twice: refused, the first kept whole
    assert run_cli("import", str(path), "--results", str(tmp_path / "b")) == 2
    assert "is stored already" in capsys.readouterr().err
    b = Store(tmp_path / "b", readonly=True)
    assert len(b.measurements(run_id, series=False)) == 1934
    b.close()


def test_an_import_set_against_another_published_sum_is_refused(exported, tmp_path, capsys):
    path, _, _ = exported
    assert run_cli("import", str(path), "--results", str(tmp_path / "b"), "--expect", "0" * 64) == 2
    assert "does not verify: its SHA-256 is" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()  # (a refused bundle makes no store)


def test_a_record_or_a_raw_output_changed_is_named_and_nothing_is_imported(exported, tmp_path, capsys):
    path, run_id, digest = exported
    found = members(path)
    lines = found[archive.RECORDS].split(b"\n")
    record = json.loads(lines[5])
    record["record"]["value"] = record["record"]["value"] * 2  # a figure made better
    lines[5] = archive.canonical(record)
    changed = pack(tmp_path / "changed.tar.gz", {**found, archive.RECORDS: b"\n".join(lines),
                                                 "raw/fio-randread-r0/client1/fio.json": RAW + b" "})
    said = problems(changed)
    assert len(said) == 2 and all("differs from what the manifest says" in p for p in said)
    assert {p.split("'")[1] for p in said} == {archive.RECORDS, "raw/fio-randread-r0/client1/fio.json"}
    assert run_cli("verify", str(changed)) == 1
    assert "does NOT verify (2 differences)" in capsys.readouterr().out
    assert run_cli("import", str(changed), "--results", str(tmp_path / "b")) == 2
    assert "does not verify" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()  # (a refused bundle makes no store)
    # the forger's bundle (its manifest made again): consistent, so only the published sum tells
    forged = pack(tmp_path / "forged.tar.gz", resummed({**found, archive.RECORDS: b"\n".join(lines)}))
    assert problems(forged) == []
    said = problems(forged, expect=digest)
    assert len(said) == 1 and said[0].endswith(f"not the {digest} expected")


def test_a_manifest_that_lies_is_named(exported, tmp_path):
    path, _, _ = exported
    found = members(path)
    manifest = json.loads(found[archive.MANIFEST])
    manifest["members"].append({"name": "raw/gone.json", "sha256": "0" * 64, "bytes": 1})
    lied = pack(tmp_path / "lied.tar.gz", {**found, archive.MANIFEST: archive.canonical(manifest),
                                           "raw/extra.json": b"{}"})
    said = problems(lied)
    assert any("the manifest was changed after export" in p for p in said)
    assert any("'raw/gone.json' is in the manifest but not in the bundle" in p for p in said)
    assert any("'raw/extra.json' is in the bundle but not in its manifest" in p for p in said)
    other = json.loads(found[archive.MANIFEST])
    other["format"] = "something-else"
    assert "is not a dfsbench-bundle" in problems(pack(tmp_path / "f.tar.gz", {**found, archive.MANIFEST:
                                                                               archive.canonical(other)}))[0]


@pytest.mark.parametrize("kind, name, said", [
    (tarfile.REGTYPE, "../x", "not one of"),
    (tarfile.REGTYPE, "/etc/x", "not one of"),
    (tarfile.REGTYPE, "raw/../../x", "its part '..' is not a name"),
    (tarfile.REGTYPE, "raw/-rf", "its part '-rf' is not a name"),
    (tarfile.REGTYPE, "raw/a/" + "/".join(["d"] * 9) + "/x", "deeper than 8"),
    (tarfile.SYMTYPE, "raw/link", "is a symbolic link"),
    (tarfile.LNKTYPE, "raw/hard", "is a hard link"),
    (tarfile.CHRTYPE, "raw/dev", "is a device"),
    (tarfile.DIRTYPE, "raw/dir", "is a directory"),
    (tarfile.FIFOTYPE, "raw/fifo", "is a FIFO"),
])
def test_a_member_that_is_not_a_plain_file_of_a_plain_name_is_refused_before_anything_is_read(
        exported, tmp_path, monkeypatch, kind, name, said):
    path, _, _ = exported
    info = tarfile.TarInfo(name)
    info.type = kind
    if kind == tarfile.SYMTYPE or kind == tarfile.LNKTYPE:
        info.linkname = "/etc/passwd"
    info.size = 1 if kind == tarfile.REGTYPE else 0
    hostile = pack(tmp_path / "hostile.tar.gz", {}, [info])
    whole = members(path)  # (the hostile member first, a whole bundle after it)
    hostile = pack(tmp_path / "hostile.tar.gz", {}, [info, *(_info(n, len(d)) for n, d in whole.items())],
                   data=[b"x" * info.size, *whole.values()])
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(bundle.BadInput) as caught:
        with bundle.opened(hostile):
            pass
    assert said in caught.value.message
    assert not (tmp_path / "x").exists() and list(work.iterdir()) == [] and list(temp.iterdir()) == []
    assert run_cli("import", str(hostile), "--results", str(tmp_path / "b")) == 2
    assert not (tmp_path / "b").exists()


def test_what_the_archive_reader_holds_is_bounded_headers_too(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_TOTAL", 1 << 20)
    # a PAX header of 900 KiB (no member: the reader holds it whole) and a member of 200 KiB:
    # the members' sizes are within the whole, what was unpacked is not
    header = tmp_path / "header.tar.gz"
    with gzip.open(header, "wb") as gz, tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        info = _info("raw/a", 200 << 10)
        info.pax_headers = {"comment": "x" * (900 << 10)}
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    with pytest.raises(bundle.BadInput, match="unpacks to more than 1 MiB"):
        with bundle.opened(header):
            pass
    # a header larger than any bundle's: refused before it is read
    monkeypatch.setattr(archive, "MAX_TOTAL", 64 << 20)
    with gzip.open(header, "wb") as gz, tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        info = _info("raw/a", 1)
        info.pax_headers = {"comment": "x" * (3 << 20)}
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(bundle.BadInput, match="PAX header of 3.0 MiB"):
        with bundle.opened(header):
            pass


def test_members_whose_headers_say_more_than_a_bundle_holds_are_refused_before_they_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_TOTAL", 1 << 20)
    bomb = tmp_path / "bomb.tar.gz"
    with gzip.open(bomb, "wb") as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        info = tarfile.TarInfo("raw/zeros")
        info.size = 8 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert bomb.stat().st_size < 64 << 10  # (8 MiB of zeros packs to a few KiB)
    with pytest.raises(bundle.BadInput, match="more than a bundle's member"):  # (its header says so)
        with bundle.opened(bomb):
            pass
    # a member whose header says little, in a stream that goes on past the limit
    big = tmp_path / "many.tar.gz"
    with gzip.open(big, "wb") as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for i in range(12):
            info = tarfile.TarInfo(f"raw/z{i}")
            info.size = 200 << 10
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    with pytest.raises(bundle.BadInput, match="more than a bundle's member"):  # (the members' sizes add up past it)
        with bundle.opened(big):
            pass


@pytest.mark.parametrize("change, said", [
    (lambda r: r.replace(b'"value":', b'"value":NaN,"x":', 1), "is not strict JSON"),
    (lambda r: r.replace(b'"unit":"', b'"unit":"furlongs', 1), "unit"),
    (lambda r: r.replace(b'"repeat":0', b'"repeat":"0"', 1), "repeat"),
    (lambda r: r.replace(b'"run_id":"', b'"run_id":"x', 1), "its record is of run"),
    (lambda r: r.replace(b'"workload":"', b'"workload":"a","workload":"', 1), "is there twice"),
])
def test_records_that_no_dfsbench_wrote_are_refused_naming_the_line(exported, tmp_path, change, said):
    path, _, _ = exported
    found = members(path)
    hostile = pack(tmp_path / "h.tar.gz", resummed({**found, archive.RECORDS: change(found[archive.RECORDS])}))
    got = problems(hostile)
    assert len(got) == 1 and "its run cannot be taken" in got[0] and said in got[0] and "line 1" in got[0], got


def test_a_series_outside_its_record_or_a_run_id_that_is_a_path_is_refused(exported, tmp_path):
    path, run_id, _ = exported
    found = members(path)
    lines = [json.loads(x) for x in found[archive.RECORDS].splitlines()]
    n = next(i for i, x in enumerate(lines) if x["series"])
    lines[n]["series"]["points"][0][0] -= 3600  # an hour before its record began
    text = b"\n".join(archive.canonical(x) for x in lines)
    got = problems(pack(tmp_path / "s.tar.gz", resummed({**found, archive.RECORDS: text})))
    assert len(got) == 1 and "series row" in got[0], got
    run = json.loads(found[archive.RUN])
    run["id"] = "../../etc"
    got = problems(pack(tmp_path / "r.tar.gz", resummed({**found, archive.RUN: archive.canonical(run)})))
    assert len(got) == 1 and "is not a name" in got[0], got


def test_not_a_bundle_is_a_clear_error(tmp_path, capsys):
    for name, data in [("empty.tar.gz", b""), ("text.tar.gz", b"hello\n"),
                       ("plain.tar.gz", gzip.compress(b"not a tar"))]:
        (tmp_path / name).write_bytes(data)
        assert run_cli("verify", str(tmp_path / name)) == 2
        assert "cannot be read" in capsys.readouterr().err
    os.mkfifo(tmp_path / "fifo")
    assert run_cli("verify", str(tmp_path / "fifo")) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_records_as_csv_are_numbers_a_program_reads_without_parsing(exported, capsys):
    import csv

    path, run_id, _ = exported
    assert run_cli("compare", run_id, "--results", str(path.parent / "a"), "--format", "csv", "--records") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    store = Store(path.parent / "a", readonly=True)
    records = store.measurements(run_id, series=False)
    store.close()
    assert len(rows) == len(records) == 1934
    for row, m in zip(rows, records):
        assert (row["run"], row["system"], row["workload"], row["metric"], row["unit"]) == \
            (run_id, m.backend, m.workload, m.metric, m.unit)
        assert (float(row["value"]) == m.value) if m.value is not None else row["value"] == ""
        assert set(row["flags"].split(";")) - {""} >= set(m.flags)  # (and the limit flags the tables add)
    p99 = next(r for r in rows if r["metric"] == "lat_p99" and r["offered_iops"])
    assert float(p99["offered_iops"]) > 0 and p99["test"].startswith("rand") and float(p99["started"]) > 1.7e9
    assert run_cli("compare", run_id, "--results", str(path.parent / "a"), "--records") == 2
    assert "--records is for --format csv" in capsys.readouterr().err


def test_a_member_that_is_a_file_and_a_directory_is_refused(exported, tmp_path):
    path, _, _ = exported
    hostile = pack(tmp_path / "h.tar.gz", {**members(path), "raw/a": b"1", "raw/a/b": b"2"})
    with pytest.raises(bundle.BadInput, match="'raw/a' is a file and a directory of others"):
        with bundle.opened(hostile):
            pass


def test_an_imported_run_does_not_go_on_here(exported, tmp_path, capsys):
    path, run_id, _ = exported
    assert run_cli("import", str(path), "--results", str(tmp_path / "b")) == 0
    from harness.execution.progress import Progress
    from harness.execution.resume import resumable

    store = Store(tmp_path / "b")
    try:
        with pytest.raises(bundle.BadInput, match="made elsewhere and imported from a bundle"):
            resumable(None, store, run_id, Progress())  # type: ignore[arg-type]
    finally:
        store.close()


def _deep(n: int) -> dict:
    d: dict = {}
    for _ in range(n):
        d = {"a": d}
    return d


@pytest.mark.parametrize("member, change", [
    (archive.RUN, {"finished": "x"}), (archive.RUN, {"label": 5}), (archive.RUN, {"source": 5}),
    (archive.RUN, {"targets": {}}), (archive.RUN, {"targets": None}), (archive.RUN, {"cells": None}),
    (archive.RUN, {"started": None}), (archive.RUN, {"started": 10 ** 20}), (archive.RUN, {"started": True}),
    (archive.RUN, {"config": _deep(700)}), (archive.RUN, {"host": {"memory": 10 ** 30}}),
    (archive.RUN, {"targets": [["glusterfs", "default", 10 ** 20, {}]]}),
    (archive.RECORDS, {"value": "x"}), (archive.RECORDS, {"flags": {}}), (archive.RECORDS, {"flags": None}),
    (archive.RECORDS, {"repeat": 10 ** 20}), (archive.RECORDS, {"params": _deep(700)}),
    (archive.RECORDS, {"workload": None}), (archive.RECORDS, None),
    (archive.RUN, {"started": 4e9}), (archive.RUN, {"id": "report-2014"}),
])
def test_a_run_no_dfsbench_wrote_is_a_problem_of_the_bundle_never_a_traceback(exported, tmp_path, capsys,
                                                                           member, change):
    path, _, _ = exported
    found = members(path)
    if member == archive.RUN:
        run = json.loads(found[archive.RUN])
        run.update(change)
        text = json.dumps(run).encode()
    else:
        lines = found[archive.RECORDS].split(b"\n")
        first = json.loads(lines[0])
        first["record"] = {} if change is None else {**first["record"], **change}
        lines[0] = json.dumps(first).encode()
        text = b"\n".join(lines)
    hostile = pack(tmp_path / "h.tar.gz", resummed({**found, member: text}))
    if change == {"id": "report-2014"}:  # (the manifest names the run too)
        manifest = json.loads(found[archive.MANIFEST])
        manifest["run_id"] = "report-2014"
        hostile = pack(tmp_path / "h.tar.gz", resummed({**found, member: text, archive.MANIFEST: json.dumps(manifest).encode()}))
    assert run_cli("verify", str(hostile)) == 1
    out, err = capsys.readouterr()
    said = out + err
    assert "its run cannot be taken" in said and "Traceback" not in said and "dfsbench-bundle-" not in said, said
    assert run_cli("import", str(hostile), "--results", str(tmp_path / "b")) == 2
    assert not (tmp_path / "b").exists()  # (a refused bundle makes no store)


def test_numbers_beyond_what_a_double_or_sqlite_holds_are_not_strict_json():
    for text in ('{"a": 1e400}', '{"a": -1e400}', '{"a": 100000000000000000000}', '{"a": NaN}', '{"a": 1, "a": 2}'):
        with pytest.raises(ValueError):
            archive.strict_decode(text)
    assert archive.strict_decode('{"a": 9223372036854775807, "b": 1.5e300}') == {"a": (1 << 63) - 1, "b": 1.5e300}


def test_a_line_of_records_longer_than_any_record_is_refused(exported, tmp_path, monkeypatch):
    path, _, _ = exported
    monkeypatch.setattr(bundle, "MAX_LINE", 1 << 10)
    got = problems(path)
    assert len(got) == 1 and "longer than 1 KiB" in got[0], got


def test_raw_outputs_whose_names_are_not_names_travel_escaped(tmp_path):
    run_id = stored_with_series(tmp_path / "a", "docker-run-load")
    raw = tmp_path / "a" / "raw" / run_id / "fio"
    raw.mkdir(parents=True)
    (raw / "fd00::5-fio-server-1.log").write_bytes(b"a")
    (raw / "my job.fio").write_bytes(b"b")
    store = Store(tmp_path / "a")
    try:
        bundle.export(store, run_id, tmp_path / "r.tar.gz", {})
    finally:
        store.close()
    assert sorted(n for n in members(tmp_path / "r.tar.gz") if n.startswith("raw/")) == \
        ["raw/fio/fd00_3a_3a5-fio-server-1.log", "raw/fio/my_20job.fio"]
    assert problems(tmp_path / "r.tar.gz") == []


def test_records_csv_names_a_param_beside_a_column_and_writes_lists_as_json(capsys):
    from harness.api.records import Measurement
    from harness.report.render import records_csv
    import csv

    m = Measurement("fio", "rr", "iops", 5.0, "op/s", {"value": 3, "hosts": ["c1", "c2"], "cache": "=cmd()"},
                    "glusterfs", "default", "r1", 0, ("saturated",))
    rows = list(csv.DictReader(io.StringIO(records_csv([m]))))
    assert rows == [{"run": "r1", "system": "glusterfs", "variant": "default", "workload": "fio", "test": "rr",
                     "metric": "iops", "value": "5.0", "unit": "op/s", "flags": "saturated", "repeat": "0",
                     "cache": "'=cmd()", "hosts": '["c1", "c2"]', "param_value": "3"}]


def test_two_runs_are_compared_whatever_a_stored_config_holds_for_a_workload():
    from harness.report.view import comparability
    from harness.results.schema import RunInfo

    def run(i: str, workloads: object) -> RunInfo:
        return RunInfo(i, 0.0, None, "complete", None, None, {"workloads": workloads}, "h", {}, {})
    assert comparability([run("a", [{"name": {"x": 1}}, 5]), run("b", "x")]) == []
    assert comparability([run("a", [{"name": "fio", "options": {"size": 1}}]),
                          run("b", [{"name": "fio", "options": {"size": 2}}])]) == \
        [("a vs b: workload fio options differ", "*")]


def test_runs_that_measured_other_things_are_named_not_comparable_and_other_sites_only_said():
    from harness.report.view import comparability
    from harness.results.schema import RunInfo

    def run(i: str, environment: dict, clients: object = None, fault: object = None, sweep: object = None) -> RunInfo:
        config = {"environment": environment, "sweep": sweep,
                  "workloads": [{"name": "fio", "options": {"size": 1}, "clients": clients, "fault": fault}]}
        return RunInfo(i, 0.0, None, "complete", None, None, config, "h", {}, {})
    docker = {"kind": "docker", "options": {"clients": 2, "link": {"rate": "1Gbit"}, "sample_every_s": 4}}
    narrower = {"kind": "docker", "options": {"clients": 1, "link": {"rate": "250Mbit"}, "sample_every_s": 2}}
    assert comparability([run("a", docker), run("b", narrower, "all", {"action": "kill"}, {"clients": [1, 2]})]) == [
        ("a vs b: workload fio clients, fault differ", "*"),
        ("a vs b: sweep not stated vs {'clients': [1, 2]}", "*"),
        ("a vs b: environment clients 2 vs 1", "*"),
        ("a vs b: environment link {'rate': '1Gbit'} vs {'rate': '250Mbit'}", "*"),
        ("a vs b: environment docker options sample_every_s differ", None)]
    # the same work in a local lab and in containers: said, not refused
    assert comparability([run("a", {"kind": "local"}), run("b", docker)]) == \
        [("a vs b: environment local vs docker", None)]


def test_runs_apart_are_each_their_own_systems_named_by_the_run(tmp_path):
    from harness.api.records import Measurement
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    store = Store(tmp_path)
    config = {"environment": {"kind": "local"}, "workloads": [{"name": "largefile", "options": {"sizes": [1 << 20]}}]}
    for run_id, label, rates in (("20270101-000000-aaaaaa", "site-a", (100e6, 80e6)),
                                 ("20270101-000001-bbbbbb", "site-b", (50e6, 60e6))):
        store.begin_run(run_id, config, "h", {"hostname": label, **SAME_TOOLS}, "run", label)
        for backend, value in zip(("glusterfs", "cephfs"), rates):
            store.add_target(run_id, backend, "default", {"system": backend})
            for repeat in (0, 1):
                store.add(Measurement("largefile", "write", "throughput", value * (1 + repeat / 100), "B/s",
                                      {"file_size": 1 << 20}, backend, "default", run_id, repeat))
                store.add(Measurement("largefile", "write", "elapsed", (1 << 20) / (value * (1 + repeat / 100)),
                                      "s", {"file_size": 1 << 20}, backend, "default", run_id, repeat))
        store.finish_run(run_id, "complete")
    store.close()
    catalogue = Catalogue(tmp_path)
    ids = ["20270101-000000-aaaaaa", "20270101-000001-bbbbbb"]
    pooled = build_view(catalogue, ViewRequest(ids))
    assert {(m.backend, m.variant) for m in pooled.records} == {("glusterfs", "default"), ("cephfs", "default")}
    apart = build_view(catalogue, ViewRequest(ids, apart=True))
    assert {(m.backend, m.variant, m.run_id[-6:]) for m in apart.records} == {
        ("glusterfs", "site-a", "aaaaaa"), ("cephfs", "site-a", "aaaaaa"),
        ("glusterfs", "site-b", "bbbbbb"), ("cephfs", "site-b", "bbbbbb")}
    table = next(t for t in apart.tables if t.title.startswith("Large files"))
    shown = " | ".join(table.columns) + "\n" + "\n".join(" | ".join(row) for row in table.rows)
    assert "GlusterFS/site-a" in shown and "CephFS/site-b" in shown, shown
    # a system with two references has both verdicts in its line: its own run's, then its first run's
    line = next(row for row in table.rows if "CephFS/site-b" in row)
    assert "vs GlusterFS/site-b: " in line[-1] and "; vs CephFS/site-a: " in line[-1], line
    # like against like within each run: CephFS of each site against GlusterFS of that site
    said = "\n".join(map(str, apart.summary))
    assert "GlusterFS/site-a vs CephFS/site-a" in said and "GlusterFS/site-b vs CephFS/site-b" in said, said
    # nothing measured differs between the runs: each system of site-b against itself at site-a
    assert "GlusterFS/site-a vs GlusterFS/site-b" in said and "CephFS/site-a vs CephFS/site-b" in said, said
    assert "GlusterFS/site-a vs CephFS/site-b" not in said and "CephFS/site-a vs GlusterFS/site-b" not in said, said
    faster = {(v.winner, v.b if v.winner == v.a else v.a): v.ratio if v.winner == v.a else 1 / v.ratio
              for t in apart.tables for v in t.verdicts if v.winner}
    assert faster[(("glusterfs", "site-a"), ("glusterfs", "site-b"))] == pytest.approx(2.0)
    assert faster[(("cephfs", "site-a"), ("cephfs", "site-b"))] == pytest.approx(80 / 60)
    assert any("across the runs, judged against itself in the first run" in line
               and "GlusterFS/site-b against GlusterFS/site-a" in line for line in apart.header), apart.header


SAME_TOOLS = {"dfsbench": "0.1.0", "tools": {"fio": "fio-3.33"}}  # (what ran two runs of one work)


def test_apart_a_system_is_judged_across_runs_only_where_the_work_is_the_same_and_nothing_measured_differs(tmp_path):
    """Against site a: site b's CephFS went over another link (its GlusterFS is judged, its
    CephFS not); site c ran another scale; site d's config names no workloads (every one,
    with its defaults: other work, though nothing it names differs); site e ran another
    dfsbench. Pooled, each would be a repeat; the naive pairing (same system, any run)
    would judge them all. A system with no records (site b's SeaweedFS) is judged by no
    table, and the header does not say it is."""
    from harness.api.records import Measurement
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    store = Store(tmp_path)
    work = {"scale": "quick", "backends": [{"name": "glusterfs"}, {"name": "cephfs"}],
            "workloads": [{"name": "largefile", "options": {"sizes": [1 << 20]}}]}
    runs = (("20270101-000000-aaaaaa", "site-a", {"environment": {"kind": "local"}, **work}, None, SAME_TOOLS),
            ("20270101-000001-bbbbbb", "site-b", {"environment": {"kind": "docker"}, **work, "repeat": 3}, 125e6,
             SAME_TOOLS),
            ("20270101-000002-cccccc", "site-c", {**work, "scale": "report"}, None, SAME_TOOLS),
            ("20270101-000003-dddddd", "site-d", {**work, "workloads": None}, None, SAME_TOOLS),
            ("20270101-000004-eeeeee", "site-e", work, None, {**SAME_TOOLS, "dfsbench": "0.2.0"}))
    for run_id, label, config, link, tools in runs:
        store.begin_run(run_id, config, "h", {"hostname": label, **tools}, "run", label)
        for backend in ("glusterfs", "cephfs", "seaweedfs"):
            store.add_target(run_id, backend, "default",
                             {"system": backend, **({"link": link} if backend == "cephfs" and link else {})})
            for repeat in (0, 1) if backend != "seaweedfs" else ():
                store.add(Measurement("largefile", "write", "elapsed", 0.01 * (1 + repeat / 100), "s",
                                      {"file_size": 1 << 20}, backend, "default", run_id, repeat))
        store.finish_run(run_id, "complete")
    store.close()
    apart = build_view(Catalogue(tmp_path), ViewRequest([r[0] for r in runs], apart=True))
    crossed = {frozenset((v.a, v.b)) for t in apart.tables for v in t.verdicts if v.a[1] != v.b[1]}
    assert crossed == {frozenset({("glusterfs", "site-a"), ("glusterfs", "site-b")})}, crossed
    header = "\n".join(apart.header)
    assert "measured apart: 20270101-000000-aaaaaa vs 20270101-000001-bbbbbb: environment local vs docker" in header
    assert "not comparable between the runs: 20270101-000000-aaaaaa vs 20270101-000001-bbbbbb: CephFS link " \
           "not stated vs 119.2 MiB/s" in header
    assert "across the runs: CephFS/site-b is not judged against CephFS/site-a: its setup differs (above)" in header
    assert "across the runs: no system of run 20270101-000002-cccccc is judged against the first run's: their " \
           "configs differ in scale; what was measured differs (above)" in header
    assert "across the runs: no system of run 20270101-000003-dddddd is judged against the first run's: their " \
           "configs differ in workloads" in header
    assert "across the runs: no system of run 20270101-000004-eeeeee is judged against the first run's: " \
           "dfsbench 0.1.0 vs 0.2.0" in header
    judged = [line for line in apart.header if "judged against itself" in line]
    assert judged == ["  across the runs, judged against itself in the first run (the same work, and nothing measured "
                      "differs): GlusterFS/site-b against GlusterFS/site-a"], judged


def test_apart_a_pair_whose_only_fit_cells_are_clients_rows_is_not_said_judged(tmp_path):
    """Two runs of one work on two clients: each client's row is fit to compare, but the
    clients' aggregate row (what the answer counts) is degraded on both sides. The answer
    finds no comparable cell, so the header names no pair judged against itself; once the
    aggregate is fit, it does."""
    from harness.api.records import Measurement
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    work = {"environment": {"kind": "local"}, "scale": "quick", "backends": [{"name": "glusterfs"}],
            "workloads": [{"name": "largefile", "options": {"sizes": [1 << 20]}}]}
    runs = (("20270101-000000-aaaaaa", "a"), ("20270101-000001-bbbbbb", "b"))

    def header(root, aggregate_flags):
        store = Store(root)
        for run_id, label in runs:
            store.begin_run(run_id, work, "h", {"hostname": label, **SAME_TOOLS}, "run", label)
            store.add_target(run_id, "glusterfs", "default", {"system": "glusterfs"})
            for repeat in (0, 1):
                for host in ("client1", "client2", "all"):
                    store.add(Measurement("largefile", "write", "elapsed", 0.01 * (1 + repeat / 100), "s",
                                          {"file_size": 1 << 20, "host": host}, "glusterfs", "default", run_id,
                                          repeat, aggregate_flags if host == "all" else ()))
            store.finish_run(run_id, "complete")
        store.close()
        view = build_view(Catalogue(root), ViewRequest([r[0] for r in runs], apart=True))
        assert any(v.per_client and v.ratio is not None for t in view.tables for v in t.verdicts)
        return view
    degraded = header(tmp_path / "degraded", ("degraded",))
    assert "GlusterFS/a vs GlusterFS/b: no comparable cell" in "\n".join(degraded.summary), degraded.summary
    assert not any("judged against itself" in line for line in degraded.header), degraded.header
    fit = header(tmp_path / "fit", ())
    assert any("judged against itself" in line and "GlusterFS/b against GlusterFS/a" in line
               for line in fit.header), fit.header


def test_a_fault_whose_times_are_far_apart_is_counted_not_walked(exported, tmp_path):
    path, _, _ = exported
    found = members(path)
    lines = [json.loads(x) for x in found[archive.RECORDS].splitlines()]
    faults = [x for x in lines if x["record"]["workload"] == "fault"]
    assert faults
    for x in faults:
        x["record"]["params"]["healthy"] = 1e12
        x["record"]["params"]["restored"] = 1e12 - 1
    text = b"\n".join(archive.canonical(x) for x in lines)
    began = time.monotonic()
    problems(pack(tmp_path / "f.tar.gz", resummed({**found, archive.RECORDS: text})))
    assert time.monotonic() - began < 60


def test_an_import_that_stops_half_way_leaves_nothing_and_takes_nothing_of_another(exported, tmp_path, monkeypatch):
    path, run_id, _ = exported
    store = Store(tmp_path / "b")
    real_add, added = Store.add, []

    def failing(self, m, cell=None):
        added.append(1)
        if len(added) == 200:
            raise KeyboardInterrupt
        return real_add(self, m, cell)
    with bundle.opened(path) as found:
        monkeypatch.setattr(Store, "add", failing)  # (once the bundle's own temporary store is read)
        with pytest.raises(KeyboardInterrupt):
            bundle.import_into(found, store, path)
        monkeypatch.setattr(Store, "add", real_add)
    assert store.run_ids() == [] and list((tmp_path / "b" / "raw").iterdir()) == []
    with bundle.opened(path) as found:
        bundle.import_into(found, store, path)
        # another import of it, past the first look (two at once): refused, and the first kept whole
        monkeypatch.setattr(Store, "run_ids", lambda self: [])
        monkeypatch.setattr(bundle, "named_path", lambda root, *names: root.joinpath(*names, "x") if names and
                            names[0] == run_id else root.joinpath(*names))
        with pytest.raises(bundle.BadInput, match="is stored already"):
            bundle.import_into(found, store, path)
    monkeypatch.undo()
    assert len(store.measurements(run_id, series=False)) == 1934
    assert (tmp_path / "b" / "raw" / run_id / "fio-randread-r0" / "client1" / "fio.json").read_bytes() == RAW
    store.close()


def test_apart_other_variants_are_not_judged_across_runs_and_names_never_collide(tmp_path):
    """Two runs of the same work, each of GlusterFS's default and its 'ec' variant: each
    variant of the later run is judged against the same variant of the first, and never
    against the other variant."""
    from harness.api.records import Measurement
    from harness.report.view import ViewRequest, build_view, run_names
    from harness.results.catalogue import Catalogue
    from harness.results.schema import RunInfo

    store = Store(tmp_path)
    for run_id, label in (("20270101-000000-aaaaaa", "20270101-000001-bbbbbb"), ("20270101-000001-bbbbbb", None)):
        store.begin_run(run_id, {"environment": {"kind": "local"}}, "h", {"hostname": "x", **SAME_TOOLS}, "run", label)
        for variant, seconds in (("default", 0.01), ("ec", 0.03)):
            store.add_target(run_id, "glusterfs", variant, {"system": "glusterfs"})
            for repeat in (0, 1):
                store.add(Measurement("largefile", "write", "elapsed", seconds * (1 + repeat / 100), "s",
                                      {"file_size": 1 << 20}, "glusterfs", variant, run_id, repeat))
        store.finish_run(run_id, "complete")
    store.close()
    ids = ["20270101-000000-aaaaaa", "20270101-000001-bbbbbb"]
    view = build_view(Catalogue(tmp_path), ViewRequest(ids, apart=True))
    assert len({(m.backend, m.variant) for m in view.records}) == 4  # (a label that is the other's id: not taken)
    crossed = {frozenset((v.a[1], v.b[1])) for t in view.tables for v in t.verdicts
               if v.a[1].endswith("aaaaaa") != v.b[1].endswith("aaaaaa")}
    assert crossed == {frozenset({"20270101-000000-aaaaaa", "20270101-000001-bbbbbb"}),
                       frozenset({"ec@20270101-000000-aaaaaa", "ec@20270101-000001-bbbbbb"})}, crossed
    infos = {i: RunInfo(i, 0.0, None, "complete", "same", None, {}, "h", {}, {}) for i in ids}
    assert run_names(infos) == {i: i for i in ids}  # (one label for two runs: their ids)


def test_two_sites_of_one_kind_compare_their_client_hosts_by_number_and_pooled_kinds_are_not_comparable(tmp_path):
    from harness.report.view import comparability
    from harness.results.schema import RunInfo

    def run(i, environment):
        return RunInfo(i, 0.0, None, "complete", None, None, {"environment": environment}, "h", {}, {})
    a = {"kind": "existing", "options": {"clients": [{"host": "10.0.0.1", "key_file": "/home/a/.ssh/k"}]}}
    b = {"kind": "existing", "options": {"clients": [{"host": "192.168.1.9", "key_file": "/srv/k"}]}}
    assert comparability([run("a", a), run("b", b)]) == []
    b2 = {"kind": "existing", "options": {"clients": [{"host": "h1"}, {"host": "h2"}]}}
    assert comparability([run("a", a), run("b", b2)]) == [("a vs b: environment clients 1 client hosts vs 2 client hosts", "*")]


def test_whatever_reading_a_bundles_run_raises_is_a_problem_of_the_bundle(exported):
    path, _, _ = exported

    def reader(store, run_id):
        return 1 / 0  # (a reader that a stranger's run makes fail as no test foresaw)
    with bundle.opened(path, check=reader) as found:
        assert len(found.problems) == 1 and "reading it failed (ZeroDivisionError" in found.problems[0]


def test_a_difference_in_the_clients_memory_is_said_in_units_a_person_reads():
    from harness.report.view import comparability
    from harness.results.schema import RunInfo

    def run(i, host, clients=None):
        targets = {("glusterfs", "default"): {"client_facts": clients}} if clients else {}
        return RunInfo(i, 0.0, None, "complete", None, None, {}, "h", host, targets)
    assert comparability([run("a", {"memory": 25276502016}), run("b", {"memory": 8 << 30})]) == [
        ("a vs b: client memory 23.5 GiB vs 8 GiB", "*")]
    assert comparability([run("a", {}, {"c1": {"memory": 4 << 30}}), run("b", {}, {"c1": {"memory": 2 << 30}})]) == [
        ("a vs b: client hosts' memory 4 GiB vs 2 GiB", "*")]
    # twins whose kernels keep a few MiB apart are one size of machine, in either branch
    twins = (16 << 30) - (10 << 20)
    assert comparability([run("a", {"memory": 16 << 30}), run("b", {"memory": twins})]) == []
    assert comparability([run("a", {}, {"c1": {"memory": 16 << 30}}), run("b", {}, {"c1": {"memory": twins}})]) == []
    # two sizes that differ but would read alike are told in MiB; a float is a size too
    assert comparability([run("a", {"memory": 2 << 30}), run("b", {"memory": int(2.045 * (1 << 30))})]) == [
        ("a vs b: client memory 2,048 MiB vs 2,094 MiB", "*")]
    assert comparability([run("a", {"memory": float(16 << 30)}), run("b", {"memory": 8 << 30})]) == [
        ("a vs b: client memory 16 GiB vs 8 GiB", "*")]
    # several hosts in order of size, not of their text ('16 GiB' before '8 GiB')
    hosts = {"c1": {"memory": 16 << 30}, "c2": {"memory": 8 << 30}}
    assert comparability([run("a", {}, hosts), run("b", {}, {**hosts, "c2": {"memory": 32 << 30}})]) == [
        ("a vs b: client hosts' memory 8 GiB, 16 GiB vs 16 GiB, 32 GiB", "*")]


def test_apart_no_pair_is_said_judged_that_no_cell_judged_nor_across_the_tools_that_ran(tmp_path):
    """Against site a: site b's GlusterFS ran on client hosts with another fio (stored with
    its target, not the harness host's), so it is not judged; every cell of site b's CephFS
    is degraded, so no verdict rests on it and the header does not say it was judged; and a
    config key of site c with a line break in it makes no line of its own."""
    from harness.api.records import Measurement
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue

    store = Store(tmp_path)
    work = {"environment": {"kind": "docker"}, "workloads": [{"name": "largefile"}]}
    forged = "zz\n  across the runs, judged against itself in the first run: GlusterFS/c against GlusterFS/a"
    runs = (("20270101-000000-aaaaaa", "a", work, "fio-3.33"), ("20270101-000001-bbbbbb", "b", work, "fio-3.38"),
            ("20270101-000002-cccccc", "c", {**work, forged: 1}, "fio-3.33"))
    for run_id, label, config, fio in runs:
        store.begin_run(run_id, config, "h", {"hostname": label, **SAME_TOOLS}, "run", label)
        for backend in ("glusterfs", "cephfs"):
            store.add_target(run_id, backend, "default", {"system": backend, "tools": {
                "fio": fio if backend == "glusterfs" else "fio-3.33"}})
            for repeat in (0, 1):
                store.add(Measurement("largefile", "write", "elapsed", 0.01 * (1 + repeat / 100), "s",
                                      {"file_size": 1 << 20}, backend, "default", run_id, repeat,
                                      ("degraded",) if backend == "cephfs" and label == "b" else ()))
        store.finish_run(run_id, "complete")
    store.close()
    apart = build_view(Catalogue(tmp_path), ViewRequest([r[0] for r in runs], apart=True))
    header = "\n".join(apart.header)
    assert "not comparable between the runs: 20270101-000000-aaaaaa vs 20270101-000001-bbbbbb: GlusterFS tools" in header
    assert "across the runs: GlusterFS/b is not judged against GlusterFS/a: its setup differs (above)" in header
    assert not any(line.startswith("  across the runs, judged against itself") for line in apart.header), apart.header
    said = "\n".join(apart.summary)
    assert "CephFS/b vs CephFS/a: no comparable cell" in said or "CephFS/a vs CephFS/b: no comparable cell" in said, said
    assert all("\n" not in line for line in apart.header + apart.summary)
    assert "their configs differ in zz\\n  across the runs" in header, header


def test_the_tools_a_local_client_ran_are_the_hosts_and_match_a_client_hosts_same_tools():
    """A local run's attachments say no tools (its client was the harness host, whose tools
    ran); a container run's say its client hosts'. The same fio on both is no difference;
    another is, for that system, said as a person reads it."""
    from harness.report.view import comparability
    from harness.results.schema import RunInfo

    def run(i, host_tools, target_tools):
        d = {"system": "glusterfs", **({"tools": target_tools} if target_tools else {})}
        return RunInfo(i, 0.0, None, "complete", None, None, {}, "h", {"tools": host_tools},
                       {("glusterfs", "default"): d})
    local = run("a", {"fio": "fio-3.33"}, None)
    assert comparability([local, run("b", {"fio": "not installed"}, {"fio": "fio-3.33"})]) == []
    assert comparability([local, run("c", {"fio": "fio-3.33"}, {"fio": "fio-3.38"})]) == [
        ("a vs c: GlusterFS tools fio fio-3.33 vs fio fio-3.38", ("glusterfs", "default"))]


def test_every_stored_string_a_command_prints_is_escaped(exported, tmp_path, capsys):
    """A bundle's run whose stored strings hold escapes (its status, its label, the host it
    says it came from): no command prints one raw — verify, import, compare in every format,
    export — since everything on stdout passes one escaping rule, a field no one thought of
    included."""
    path, _, _ = exported
    found = members(path)
    run = json.loads(found[archive.RUN])
    run.update({"status": "complete\x1b[2J\x1b]0;owned\x07", "label": "site\x1b[31m-a\r"})
    manifest = json.loads(found[archive.MANIFEST])
    manifest["exported"]["host"] = "host\x1b[5m\x9b"
    hostile = pack(tmp_path / "h.tar.gz", resummed({**found, archive.RUN: json.dumps(run).encode(),
                                                    archive.MANIFEST: json.dumps(manifest).encode()}))
    results = str(tmp_path / "b")
    said = []
    for argv in (("verify", str(hostile)), ("import", str(hostile), "--results", results),
                 *(("compare", "latest", "--results", results, "--format", f) for f in
                   ("table", "markdown", "csv", "json")),
                 ("compare", "latest", "--results", results, "--format", "csv", "--records"),
                 ("export", "latest", "--results", results, "-o", str(tmp_path / "again.tar.gz")),
                 ("report", "latest", "--results", results, "-o", str(tmp_path / "r.html"))):
        code = run_cli(*argv)
        out, err = capsys.readouterr()
        said.append((argv[0], code, out, err))
    assert [code for _, code, _, _ in said] == [0] * len(said), said
    for command, _, out, err in said:
        for c in "\x1b\x07\x9b":
            assert c not in out and c not in err, (command, out[:2000], err)
    page = (tmp_path / "r.html").read_text()
    assert not [c for c in "\x1b\x07\x9b\r" if c in page] and "site\\x1b[31m-a\\r" in page
    verified = said[0][2]
    assert "(complete\\x1b[2J\\x1b]0;owned\\x07)" in verified, verified
    assert "exported from host\\x1b[5m\\x9b" in verified, verified
