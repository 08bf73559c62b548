"""Parsers on real tool outputs: captured here from fio 3.33, iozone 3.489, rados/rbd bench
16.2, ioping 1.3 and iperf3 3.12 on a lab, the smallfile samples, and the older outputs
transcribed in the seed documents (fio 3.28, iozone 3.397/3.408, rados bench)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import BadInput
from workloads import baselines, iozone, rados_bench, rbd_bench, smallfile
from workloads.fio import json_output

DATA = Path(__file__).resolve().parents[1] / "data"
TOOLS, SEED = DATA / "tools", DATA / "seed"


def text(path: Path) -> str:
    return path.read_text()


def pick(records, **want):
    found = [m for m in records if all((getattr(m, k, None) if k in ("test", "metric") else
                                        m.params.get(k)) == v for k, v in want.items())]
    assert len(found) == 1, (want, found)
    return found[0]


# ---------------------------------------------------------------- iozone

def test_iozone_3489_cached_report_in_bytes_per_second():
    records = iozone.parse(text(TOOLS / "iozone-cached.txt"))
    assert len(records) == 2 * 2 * 6  # 2 file sizes × 2 record sizes × 6 tests
    w = pick(records, test="write", file_size=16 << 20, record_size=4096)
    assert w.value == 38886 * 1024 and w.unit == "B/s" and w.params["direct"] is False


def test_iozone_3489_direct_sets_direct():
    records = iozone.parse(text(TOOLS / "iozone-direct.txt"))
    assert {m.params["direct"] for m in records} == {True}
    assert pick(records, test="random_write", file_size=32 << 20, record_size=64 << 10).value == 25806 * 1024


def test_iozone_every_test_name_maps():
    records = iozone.parse(text(TOOLS / "iozone-all-tests.txt"))
    assert {m.test for m in records} == set(iozone.TEST_NAMES)


def test_iozone_partial_table_of_a_hung_run_keeps_finished_rows():
    full = text(TOOLS / "iozone-direct.txt")
    cut = full[:full.index("           32768       4")]  # killed while the 32 MiB rows ran
    records = iozone.parse(cut, tests=[0, 1, 2])
    assert {m.params["file_size"] for m in records} == {16 << 20}
    assert pick(records, test="reread", record_size=64 << 10).value == 190360 * 1024


@pytest.mark.parametrize("name, first, last", [
    ("iozone-3.408-gluster-sr33-cached.txt", 16996, 38224),
    ("iozone-3.408-gluster-sr33-direct.txt", 11943, 19191),
    ("iozone-3.408-gluster-vr33-cached.txt", 19587, 38215),
    ("iozone-3.397-ceph-cached.txt", 224863, 15204),
    ("iozone-3.397-ceph-cached-2.txt", 83904, 18511),
])
def test_iozone_seed_transcriptions(name, first, last):
    records = iozone.parse(text(SEED / name))
    assert len(records) == 4 * 3 * 6
    assert pick(records, test="write", file_size=128 << 20, record_size=4096).value == first * 1024
    assert pick(records, test="random_write", file_size=1 << 30, record_size=64 << 10).value == last * 1024
    assert {m.params["direct"] for m in records} == {"direct" in name}


def test_iozone_report_cell_of_a_negative_number_is_a_failed_record():
    """iozone's -R report with -999 in a cell: a record of that cell without a value,
    flagged failed, saying what iozone printed (it was dropped, and 23 records came of 24)."""
    cached = text(TOOLS / "iozone-cached.txt")
    hostile = cached.replace('"16384"   38886  210345 ', '"16384"   -999  210345 ')
    assert hostile != cached
    records = iozone.parse(hostile)
    assert len(records) == 24
    failed = pick(records, test="write", file_size=16 << 20, record_size=4096)
    assert failed.value is None and failed.flags == ("failed",)
    assert "iozone printed -999 for this cell" in failed.params["error"]
    assert pick(records, test="write", file_size=16 << 20, record_size=64 << 10).value == 210345 * 1024


def test_iozone_table_row_with_a_negative_number_is_kept_with_that_cell_failed():
    """Without the -R report (a run cut before it), a result row holding -999: its other
    cells are kept, that one a failed record (the whole row was dropped)."""
    cached = text(TOOLS / "iozone-cached.txt")
    cut = cached[:cached.index("iozone test complete.")].replace(" 5592038 ", " -999 ")
    records = iozone.parse(cut)
    assert len(records) == 24
    assert pick(records, test="read", file_size=16 << 20, record_size=4096).flags == ("failed",)
    assert pick(records, test="rewrite", file_size=16 << 20, record_size=4096).value == 40126 * 1024


def test_iozone_log_of_one_run_copied_into_itself_is_refused():
    """The same run twice, word for word (its 'Run began:' too), is one run copied: its
    copies would be pooled as repeats never measured. Fast: the 75,000 copies of a 200 MB
    log are refused at the second."""
    cached = text(TOOLS / "iozone-cached.txt")
    with pytest.raises(BadInput, match=r"iozone run 2 of 3 is run 1 again, word for word \(Run began: "
                                       r"Sun Nov 22 02:17:30 2026, the same numbers\)"):
        iozone.parse(cached * 3)


def test_iozone_report_cell_that_is_not_a_finite_number_is_a_failed_record():
    """A -R report cell of 'nan': a failed record saying so, as -999 is (a record's value is
    never NaN; the file's other cells are kept)."""
    cached = text(TOOLS / "iozone-cached.txt")
    records = iozone.parse(cached.replace('"16384"   38886  210345 ', '"16384"   nan  210345 '))
    assert len(records) == 24
    failed = pick(records, test="write", file_size=16 << 20, record_size=4096)
    assert failed.value is None and failed.flags == ("failed",)
    assert "iozone printed nan for this cell, which is not a measurement (not a finite number)" in failed.params["error"]


def test_iozone_runs_that_measured_nothing_the_same_way_are_not_a_copy():
    """A retry loop whose first tries failed within one second (the same 'Run began:', the
    same error, no number): nothing of them would be pooled, so nothing is refused; the run
    that measured is read."""
    cached = text(TOOLS / "iozone-cached.txt")
    failed = cached[:cached.index("Output is in kBytes/sec")] + "Can not open temp file: iozonetest\n"
    records = iozone.parse(failed + failed + cached.replace("02:17:30", "02:17:31"))
    assert len(records) == 24 and all(m.value for m in records)


def test_iozone_runs_whose_every_cell_failed_the_same_way_are_not_a_copy():
    """Two tries cut in their first row, each cell -999 (within one second: the same 'Run
    began:'): records without a value, which no table pools as repeats — nothing of them is a
    measurement counted twice, so the log is read, their cells failed records."""
    cached = text(TOOLS / "iozone-cached.txt")
    head = cached[:cached.index("           16384       4")]
    tried = head + "           16384       4     -999     -999     -999     -999     -999     -999\n"
    records = iozone.parse(tried + tried + cached.replace("02:17:30", "02:17:31"))
    assert len([m for m in records if m.value is None and m.flags == ("failed",)]) == 12
    assert len([m for m in records if m.value is not None]) == 24


def test_iozone_log_of_runs_one_after_another_pools_their_cells():
    """The same command run twice (each its own start): every cell twice, as repeats."""
    cached = text(TOOLS / "iozone-cached.txt")
    again = cached.replace("02:17:30", "02:19:02")
    records = iozone.parse(cached + again)
    assert len(records) == 48
    assert [m.value for m in records if m.test == "write" and m.params["file_size"] == 16 << 20
            and m.params["record_size"] == 4096] == [38886 * 1024] * 2


def test_iozone_rejects_other_text():
    with pytest.raises(BadInput, match="does not look like iozone"):
        iozone.parse("hello\nworld\n")


# ---------------------------------------------------------------- fio

def test_fio_json_and_json_plus_give_the_same_metrics():
    for name in ("fio-json.json", "fio-jsonplus.json"):
        records = json_output.parse(text(TOOLS / name))
        assert {m.metric for m in records} == {"throughput", "iops", "lat_mean", "clat_p50", "clat_p90", "clat_p99",
                                              "clat_p99.9"}
        # (each percentile fio's own, from its list: the 90th for p90)
        said = json.loads(text(TOOLS / name))["jobs"][0]["read"]["clat_ns"]["percentile"]
        assert pick(records, metric="clat_p90").value == pytest.approx(said["90.000000"] / 1e9)
        assert {m.test for m in records} == {"randread-4k-qd16"}
        iops = pick(records, metric="iops")
        assert iops.params == {"rw": "randread", "bs": 4096, "iodepth": 16, "numjobs": 1,
                               "ioengine": "libaio", "direct": True, "direction": "read"}
    p99 = pick(json_output.parse(text(TOOLS / "fio-json.json")), metric="clat_p99")
    assert p99.value == pytest.approx(0.008454144) and p99.unit == "s"


def test_fio_total_latency_percentiles_when_measured():
    records = json_output.parse(text(TOOLS / "fio-jsonplus-latpercentiles.json"))  # lat_percentiles=1
    assert pick(records, metric="lat_p99").value == pytest.approx(181248e-9)
    assert pick(records, metric="clat_p99").value == pytest.approx(177152e-9)


def test_fio_mixed_jobs_each_direction_and_instance():
    records = json_output.parse(text(TOOLS / "fio-jsonplus-mixed.json"))
    randrw = [m for m in records if m.test == "randrw" and m.metric == "iops"]
    assert sorted((m.params["direction"], m.params.get("instance", 1)) for m in randrw) == [
        ("read", 1), ("read", 2), ("write", 1), ("write", 2)]
    seq = pick(records, test="seqwrite", metric="throughput")
    assert seq.params["bs"] == 1 << 20 and seq.params["direction"] == "write"


def test_fio_rbd_engine():
    records = json_output.parse(text(TOOLS / "fio-rbd.json"))
    iops = pick(records, metric="iops")
    assert iops.params["ioengine"] == "rbd" and iops.value == pytest.approx(4444.40367)


@pytest.mark.parametrize("name", ["fio-clientserver.json", "fio-clientserver-jsonplus.json"])
def test_fio_client_server_per_host_and_aggregate(name):
    records = json_output.parse(text(TOOLS / name))
    iops = [m for m in records if m.metric == "iops"]
    hosts = {m.params["host"]: m.value for m in iops}
    # fio's own total (not the span of host 'all': fio says no client's start)
    assert set(hosts) == {"127.0.0.2", "127.0.0.3", "total"}
    assert hosts["total"] == pytest.approx(hosts["127.0.0.2"] + hosts["127.0.0.3"], rel=0.01)
    agg = pick(records, metric="iops", host="total")
    assert agg.test == "cs-randread" and agg.params["rw"] == "randread" and agg.params["iodepth"] == 8
    assert agg.params["clients"] == 2 and agg.params["basis"].startswith("fio's own")


def test_fio_neither_json_nor_text_results_is_refused_with_a_hint():
    with pytest.raises(BadInput, match="no fio JSON") as exc:
        json_output.parse("randread: (g=0): rw=randread, bs=(R) 4096B-4096B\nfio-3.28\n")
    assert "--output-format=json" in exc.value.hint


def test_fio_328_text_transcribed_in_seed000():
    records = json_output.parse(text(SEED / "fio-3.28-seed000.txt"))
    # the rbd-engine job of §2.4 and the eight libaio profiles of §2.5
    assert {m.test for m in records} == {
        "write-4M", "Rand_Write_Testing", "Rand_Read_Testing", "Write_PPS_Testing", "Read_PPS_Testing",
        "Rand_Write_Latency_Testing", "Rand_Read_Latency_Testing"}
    rr = pick(records, test="Rand_Read_Testing", metric="iops")
    assert rr.value == 37900 and rr.params["iodepth"] == 128 and rr.params["bs"] == 4096
    assert pick(records, test="Rand_Read_Testing", metric="throughput").value == 148 * (1 << 20)
    assert pick(records, test="Rand_Read_Testing", metric="lat_mean").value == pytest.approx(3376.22e-6)
    assert pick(records, test="Rand_Read_Testing", metric="clat_p99").value == pytest.approx(9110e-6)
    assert pick(records, test="write-4M", metric="clat_p50").value == pytest.approx(1.854)
    assert pick(records, test="write-4M", metric="iops").params["ioengine"] == "rbd"
    # the table under §2.5 says 13.2k IOPS and 9.68 ms for 4k randwrite at depth 128
    assert pick(records, test="Rand_Write_Testing", metric="iops").value == 13200
    assert pick(records, test="Rand_Write_Testing", metric="lat_mean").value == pytest.approx(9.68e-3)


@pytest.mark.parametrize("name, job, iops, numjobs", [
    ("fio-3.1-seed002.txt", "iops", 19900, 1),
    ("fio-3.28-seed003.txt", "write_iops", 214000, 8),
])
def test_fio_text_of_other_seeds(name, job, iops, numjobs):
    m = pick(json_output.parse(text(SEED / name)), test=job, metric="iops")
    assert m.value == iops and m.params["numjobs"] == numjobs


# ---------------------------------------------------------------- rados bench, rbd bench

def test_rados_bench_16_write_seq_rand_in_mib():
    w = rados_bench.parse(text(TOOLS / "rados-write.txt"), mode="write")
    assert pick(w, metric="throughput").value == pytest.approx(232.428 * (1 << 20))
    assert pick(w, metric="iops").value == 58 and pick(w, metric="lat_mean").value == 0.27195
    seq = rados_bench.parse(text(TOOLS / "rados-seq.txt"), source="rados-seq.txt")
    assert {m.test for m in seq} == {"seq"}
    rand = rados_bench.parse(text(TOOLS / "rados-rand.txt"), source="rados-rand.txt")
    assert {m.test for m in rand} == {"rand"}


def test_rados_bench_seed_session_with_three_runs():
    records = rados_bench.parse(text(SEED / "rados-bench-seed000.txt"))
    assert [m.test for m in records if m.metric == "throughput"] == ["write", "seq", "rand"]
    assert pick(records, test="seq", metric="throughput").value == pytest.approx(187.019 * (1 << 20))
    assert pick(records, test="rand", metric="lat_min").value == 0.00127024


def test_rbd_bench_16_uses_ops_times_io_size():
    records = rbd_bench.parse(text(TOOLS / "rbd-bench-write.txt"))
    t = pick(records, metric="throughput")
    assert t.value == pytest.approx(3663.68 * 4096)
    assert t.params["io_pattern"] == "rand" and t.params["io_threads"] == 16


def test_rbd_bench_seed_lines_without_header():
    records = rbd_bench.parse(text(SEED / "rbd-bench-seed000.txt"))
    assert [m.value for m in records if m.metric == "iops"] == [8063.03, 7064.55, 7226.28]
    assert {m.params["io_size"] for m in records} == {4096}  # 5 GiB / 1310720 ops


# ---------------------------------------------------------------- smallfile, baselines

def test_smallfile_json_samples():
    create = smallfile.parse(text(TOOLS / "smallfile-cephfs-create.json"))
    assert pick(create, metric="files_per_sec").value == pytest.approx(865.557, rel=1e-5)
    assert pick(create, metric="elapsed").params == {"files": 512, "file_size": 40960, "threads": 2,
                                                                 "engine": "smallfile"}
    read = smallfile.parse(text(TOOLS / "smallfile-gluster-read.json"))
    assert {m.test for m in read} == {"read"}


def test_ioping_and_iperf3():
    lat = baselines.parse_ioping(text(TOOLS / "ioping-cephfs.json"))
    assert pick(lat, metric="lat_mean").value == pytest.approx(186818e-9)
    assert baselines.parse_iperf3(text(TOOLS / "iperf3.json")) > 1e9


# ---------------------------------------------------------------- CLI

def test_parse_command_prints_records(capsys):
    assert main(["parse", "rados-bench", str(TOOLS / "rados-write.txt")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and '"workload": "rados-bench"' in lines[0]


def test_parse_command_bad_tool_and_bad_file(tmp_path, capsys):
    assert main(["parse", "bonnie", str(TOOLS / "rados-write.txt")]) == 2
    assert "dfsbench parses: fio, iozone, rados-bench, rbd-bench, smallfile" in capsys.readouterr().err
    assert main(["parse", "fio", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    garbage = tmp_path / "x.json"
    garbage.write_text("{not json")
    assert main(["parse", "smallfile", str(garbage)]) == 2


def test_import_stores_a_run_that_compare_prints(tmp_path, capsys):
    results = tmp_path / "results"
    assert main(["import", "iozone", str(SEED / "iozone-3.408-gluster-vr33-cached.txt"),
                 "--backend", "glusterfs", "--variant", "vr33", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "imported 72 measurements" in out
    assert main(["compare", "latest", "--results", str(results)]) == 0
    table = capsys.readouterr().out
    assert "iozone on GlusterFS/vr33, cached, KB/s" in table and "19587" in table


def test_iozone_estimate_from_measured_direct_rates():
    records = iozone.parse(text(TOOLS / "iozone-direct.txt"))  # 16 and 32 MiB × 4 and 64 KiB
    est = iozone.estimate_seconds(records, [1 << 30], [4096], [0, 1, 2])
    # each test's median 4 KiB rate over the two file sizes, 1 GiB each
    expected = 0.0
    for test in ("write", "rewrite", "read", "reread", "random_read", "random_write"):
        rates = sorted(m.value for m in records if m.test == test and m.params["record_size"] == 4096)
        expected += (1 << 30) / rates[len(rates) // 2]
    assert est == {("", "default"): pytest.approx(expected)}
    assert est[("", "default")] > 3600 / 4  # 1 GiB at ~2 MB/s per write-type test: long


def test_rbd_bench_bare_summary_line_parses_without_a_traceback(tmp_path, capsys):
    """A summary line alone (no header, no command line): rbd's own rounded rate is used
    (issue: 'dfsbench parse rbd-bench' ended in a KeyError)."""
    bare = tmp_path / "bare.txt"
    bare.write_text("elapsed:    10  ops:   262144  ops/sec: 25877.28  bytes/sec: 101.08 MiB/s\n")
    assert main(["parse", "rbd-bench", str(bare)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rate = next(r for r in records if r["metric"] == "throughput")
    assert rate["value"] == pytest.approx(101.08 * (1 << 20))
