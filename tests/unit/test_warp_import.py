"""warp's JSON as records of the s3 workload (``dfsbench parse warp``, ``dfsbench import warp``),
on warp's own outputs (tests/data/warp/README.md): the rates over warp's window with its failed
requests left out, the mean over every request (each window's mean weighted by its requests,
not the mean of the windows' means), no throughput where warp counted a failed request's bytes,
the percentiles said to be left out; and damaged, hostile and compressed input refused in a
line that names the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from harness.cli import main
from harness.commands import tools
from harness.errors import BadInput
from workloads import warp

WARP = Path(__file__).resolve().parents[1] / "data" / "warp"


def doc(name: str) -> str:
    """A fixture as dfsbench reads it (its own reader of zstd files)."""
    return tools.unpacked((WARP / name).read_bytes(), WARP / name, "warp").decode()


def pick(records, test, metric):
    found = [m for m in records if m.test == test and m.metric == metric]
    assert len(found) <= 1, found
    return found[0] if found else None


def test_a_mixed_run_gives_each_operation_its_rate_errors_and_mean():
    records = warp.parse(doc("warp-mixed-1MB-1h.json.zst"), "mixed.json")
    assert {m.test for m in records} == {"get", "put", "head", "delete"}  # (warp's STAT is a HEAD)
    get = pick(records, "get", "iops")
    # GET: 237,921 operations began in warp's window of 3,598 s, none failed
    assert get.value == pytest.approx(237921 / 3598) and get.unit == "op/s"
    assert get.params["ops"] == 237921 and get.params["workers"] == 128 and get.params["object_size"] == 1000000
    assert pick(records, "get", "throughput").value == pytest.approx(237916996812.67044 / 3598)
    assert pick(records, "head", "iops").value == pytest.approx(158566 / 3597)
    assert pick(records, "head", "throughput") is None and pick(records, "delete", "throughput") is None
    assert pick(records, "put", "errors").value == 0 and pick(records, "put", "errors").params["failed_ops"] == 0
    # every request warp timed is in the mean: as many as it made
    assert pick(records, "get", "lat_mean").params["requests_timed"] == 238103
    assert 0 < pick(records, "get", "ttfb_mean").value < pick(records, "get", "lat_mean").value
    assert all(m.workload == "s3" and m.params["tool"] == "warp" for m in records)


def window(requests, mean_ms, size=4096, ttfb_ms=None):
    w = {"requests": requests, "dur_avg_millis": mean_ms, "obj_size": size, "merged_entries": 1}
    if ttfb_ms is not None:
        w["first_byte"] = {"average_millis": ttfb_ms}
    return {"single_sized_requests": w}


def made(op="GET", windows=(), errors=0, failed_in_window=0, commandline="warp mixed", first_errors=None):
    """warp's JSON of one operation, its fields as warp writes them, with numbers known by hand."""
    n = sum(w["single_sized_requests"]["requests"] for w in windows)
    return json.dumps({"v": 2, "commandline": commandline, "by_op_type": {op: {
        "total_requests": n, "total_errors": errors, "concurrency": 8, "first_errors": first_errors,
        "throughput": {"measure_duration_millis": 10000, "ops": n, "errors": failed_in_window, "bytes": 4096.0 * n},
        "requests_by_client": {"c1": list(windows)}}}})


def test_the_mean_weights_each_window_by_its_requests_where_the_mean_of_means_is_wrong():
    """A window of one request that took 10 s beside one of 999 of 10 ms: every request's
    mean is (10 + 999 × 0.010) / 1000 = 0.01999 s; the mean of the two windows' means (what
    warp prints as its average) is 5.005 s."""
    records = warp.parse(made(windows=[window(1, 10000.0, ttfb_ms=9000.0), window(999, 10.0, ttfb_ms=2.0)]), "m")
    assert pick(records, "get", "lat_mean").value == pytest.approx(0.01999)
    assert pick(records, "get", "ttfb_mean").value == pytest.approx((9000 + 999 * 2) / 1000 / 1000)
    assert pick(records, "get", "lat_mean").params["requests_timed"] == 1000


@pytest.mark.parametrize("why, text", [
    ("a request failed (warp timed it with the rest)",
     made(windows=[window(10, 5.0, ttfb_ms=1.0)], errors=1, failed_in_window=1, first_errors=["x"])),
    ("a window of several sizes",
     json.dumps({"v": 2, "commandline": "warp get", "by_op_type": {"GET": {
         "total_requests": 10, "total_errors": 0, "concurrency": 8,
         "throughput": {"measure_duration_millis": 10000, "ops": 10, "bytes": 1.0},
         "requests_by_client": {"c1": [{"multi_sized_requests": {"by_size": [
             {"requests": 9, "avg_duration_millis": 5.0}]}}]}}}})),
    ("a window left out (skipped, yet with requests)",
     made(windows=[window(10, 5.0), {"single_sized_requests": {"skipped": True, "requests": 3}}])),
])
def test_no_mean_where_it_would_not_be_the_mean_of_the_successful_requests(why, text):
    records = warp.parse(text, "m")
    assert pick(records, "get", "lat_mean") is None and pick(records, "get", "ttfb_mean") is None, why
    assert pick(records, "get", "iops") is not None


def test_no_time_to_first_byte_mean_unless_every_window_has_one():
    records = warp.parse(made(windows=[window(10, 5.0, ttfb_ms=1.0), window(10, 5.0)]), "m")
    assert pick(records, "get", "lat_mean").value == pytest.approx(0.005)
    assert pick(records, "get", "ttfb_mean") is None


def test_failed_requests_are_counted_and_leave_out_the_mean_and_a_gets_throughput():
    records = warp.parse(doc("warp-put-512B-2h-errors.json.zst"), "put.json")
    errors = pick(records, "put", "errors")
    assert errors.value == pytest.approx(100 * 640 / 4373934) and errors.params["failed_ops"] == 640
    assert "timeout awaiting response headers" in errors.params["error_said"]["warp 1"]
    assert len(errors.params["error_said"]) == 10
    iops = pick(records, "put", "iops")
    assert iops.value == pytest.approx((4370418 - 640) / 7536) and iops.params["ops"] == 4370418 - 640
    assert iops.params["object_size"] == 512  # (not the 0 B of a window of failed requests only)
    assert pick(records, "put", "lat_mean") is None
    # (warp counts a failed request's object as moved, but a 'warp put''s: no throughput where one failed)
    assert pick(records, "put", "throughput") is None
    get = warp.parse(made(windows=[window(10, 5.0)], errors=1, failed_in_window=1, first_errors=["x"]), "m")
    assert pick(get, "get", "throughput") is None and pick(get, "get", "iops").value == pytest.approx(0.9)


def test_a_get_run_is_its_gets_not_its_preparation():
    records = warp.parse(doc("warp-get-4KB-1m.json.zst"), "get.json")
    assert {m.test for m in records} == {"get"}  # (its 2,560 PUTs made the objects it read)
    assert pick(records, "get", "iops").value == pytest.approx(83748 / 57)
    assert pick(records, "get", "throughput").value == pytest.approx(334927936.5606578 / 57)
    assert pick(records, "get", "lat_mean").params["requests_timed"] == 86063
    assert 0 < pick(records, "get", "ttfb_mean").value <= pick(records, "get", "lat_mean").value
    assert pick(records, "get", "iops").params["object_size"] == 4000
    assert not any(m.metric.startswith(("lat_p", "ttfb_p")) for m in records)  # (see warp.LEFT_OUT)


def test_an_output_of_several_operations_whose_benchmark_is_not_said_is_refused():
    """An analysis of older data names no benchmark: whether its PUTs were measured or made a
    'warp get''s objects is not known."""
    two = json.loads(made(windows=[window(10, 5.0)]))
    two["by_op_type"]["PUT"] = two["by_op_type"]["GET"]
    for commandline, refused in (("", True), ("warp multipart --x", True), ("/warp mixed --x", False),
                                 ("warp get --x", False)):
        two["commandline"] = commandline
        if refused:
            with pytest.raises(BadInput, match="which of them it measured"):
                warp.parse(json.dumps(two), "m")
        else:
            assert {m.test for m in warp.parse(json.dumps(two), "m")} == ({"get", "put"} if "mixed" in commandline
                                                                         else {"get"})


def test_workers_are_each_clients_and_a_rate_limit_is_said():
    two = json.loads(made(windows=[window(10, 5.0)], commandline="warp get --rps-limit=250 --concurrent=8"))
    two["by_op_type"]["GET"].update(concurrency=16, clients=["a", "b"])
    iops = pick(warp.parse(json.dumps(two), "m"), "get", "iops")
    assert iops.params["workers"] == 8 and iops.params["clients"] == 2 and iops.params["warp_rps_limit"] == 250
    two["by_op_type"]["GET"]["concurrency"] = 15
    with pytest.raises(BadInput, match="not a whole number of workers each"):
        warp.parse(json.dumps(two), "m")


def test_first_errors_reach_the_records_as_one_printable_line():
    records = warp.parse(made(windows=[window(10, 5.0)], errors=1, first_errors=["Get \x1b[31mred\nnext"]), "m")
    said = pick(records, "get", "errors").params["error_said"]["warp"]
    assert "\x1b" not in said and "\n" not in said and "red" in said


def test_import_reads_warps_compressed_file_stores_it_and_says_what_it_left_out(tmp_path, capsys):
    results = str(tmp_path / "r")
    assert main(["import", "warp", str(WARP / "warp-put-1MB-1m.json.zst"), "--backend", "rgw",
                 "--results", results]) == 0
    out = capsys.readouterr().out
    assert "imported 4 measurements" in out and "not imported: percentiles" in out
    assert main(["compare", "latest", "--results", results]) == 0
    table = capsys.readouterr().out
    assert "S3: operations per second" in table and "PUT" in table and "64 workers" in table


@pytest.mark.parametrize("text, said", [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not warp's JSON output"),
    ('{"v": 1, "by_op_type": {}}', "data version 1 is not read"),
    ('{"v": 2, "by_op_type": {}}', "names no operation"),
    ('{"v": 2, "by_op_type": {"GET\\u001b[31m": {}}}', "an operation type warp does not name"),
    ('{"v": 2, "by_op_type": {"GET": {"throughput": {"measure_duration_millis": 1000, "ops": -5}}}}',
     "not a number at least 0"),
    ('{"v": 2, "by_op_type": {"GET": {"throughput": {"measure_duration_millis": 1000, "ops": true}}}}',
     "not a number at least 0"),
    ('{"v": 2, "by_op_type": {"GET": {"total_requests": 1e22, "total_errors": 0, "concurrency": 8, "throughput": '
     '{"measure_duration_millis": 1000, "ops": 1e22, "bytes": 0}}}}', "beyond any storage"),
    ('{"v": 2, "by_op_type": {"GET": {"total_requests": 1, "total_errors": 2, "throughput": '
     '{"measure_duration_millis": 1000, "ops": 1}}}}', "more errors than requests"),
    (made(windows=[window(1, 1.0, size=1e30)]), "more than"),
    (made(windows=[window(1, 1.0)]).replace('"concurrency": 8', '"concurrency": 1e300'), "more than"),
    (made(windows=[window(1, 1.0)]).replace('"concurrency": 8', '"concurrency": 0'), "concurrency 0 over 1 warp clients"),
    (made(windows=[window(1, 1.0)], first_errors="abc"), "first_errors is not a list"),
    (made(windows=[window(1.5, 1.0)]), "not a whole number"),
    (made(windows=[window(1, 1.0)]).replace('"GET"', '"STAT"')[:-2] + ', "HEAD": {}}}', "are read as head"),
    ('{"v": 2, "by_op_type": {"GET": {"total_requests": ' + "9" * 5000 + "}}}", "thousands of digits"),
])
def test_output_that_is_not_warps_is_refused_naming_the_file(text, said):
    with pytest.raises(BadInput) as raised:
        warp.parse(text, "suspect.json")
    assert "suspect.json" in raised.value.message and said in raised.value.message
    assert "\x1b" not in raised.value.message


def test_a_damaged_or_too_large_compressed_file_is_refused(tmp_path, monkeypatch):
    whole = (WARP / "warp-put-1MB-1m.json.zst").read_bytes()
    cut = tmp_path / "cut.json.zst"
    cut.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(BadInput, match="cut short"):
        tools.parsed("warp", cut)
    joined = tmp_path / "joined.json.zst"
    joined.write_bytes(whole + b"{}")
    with pytest.raises(BadInput, match="after its zstd-compressed warp output comes something else"):
        tools.parsed("warp", joined)
    damaged = tmp_path / "damaged.json.zst"
    damaged.write_bytes(whole[:20] + bytes(b ^ 0x5A for b in whole[20:60]) + whole[60:])
    with pytest.raises(BadInput, match="does not decompress|cut short"):
        tools.parsed("warp", damaged)
    # two frames (zstd may write a file as several): the document is the two read as one
    two = tmp_path / "two.json.zst"
    text = doc("warp-put-1MB-1m.json.zst").encode()
    two.write_bytes(zstandard.compress(text[:1000]) + zstandard.compress(text[1000:]))
    assert len(tools.parsed("warp", two)[0]) == 4
    monkeypatch.setattr(tools, "MAX_TOOL_OUTPUT", 64 << 10)  # (the file is 74 KB decompressed)
    with pytest.raises(BadInput, match="decompressed, it is more than"):
        tools.parsed("warp", WARP / "warp-put-1MB-1m.json.zst")
