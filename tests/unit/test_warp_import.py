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
    return zstandard.ZstdDecompressor().stream_reader((WARP / name).read_bytes()).read().decode()


def pick(records, test, metric):
    found = [m for m in records if m.test == test and m.metric == metric]
    assert len(found) <= 1, found
    return found[0] if found else None


def test_a_mixed_run_gives_each_operation_its_rate_errors_and_mean():
    records = warp.parse(doc("warp-mixed-1MiB-1h.json.zst"), "mixed.json")
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
    assert pick(records, "get", "ttfb_mean").value < pick(records, "get", "lat_mean").value
    assert all(m.workload == "s3" and m.params["tool"] == "warp" for m in records)


def test_the_mean_weights_each_window_by_its_requests_where_the_mean_of_means_is_wrong():
    text = doc("warp-put-512B-2h-errors.json.zst")
    put = json.loads(text)["by_op_type"]["PUT"]
    windows = [w["single_sized_requests"] for c in put["requests_by_client"].values() for w in c
               if not w["single_sized_requests"].get("skipped")]
    naive = sum(w["dur_avg_millis"] for w in windows) / len(windows) / 1000
    mean = pick(warp.parse(text, "put.json"), "put", "lat_mean")
    # windows of one request that hung for minutes weigh as much as windows of 15,000 in a mean
    # of means; weighted by their requests they weigh what they are
    assert naive > 100 * mean.value
    assert mean.value == pytest.approx(sum(w["dur_avg_millis"] * w["requests"] for w in windows)
                                       / sum(w["requests"] for w in windows) / 1000)
    assert mean.params["requests_timed"] == 4373934 and mean.params["failed_among_them"] == 640


def test_failed_requests_are_counted_and_a_throughput_that_counts_their_bytes_is_not_recorded():
    records = warp.parse(doc("warp-put-512B-2h-errors.json.zst"), "put.json")
    errors = pick(records, "put", "errors")
    assert errors.value == pytest.approx(100 * 640 / 4373934) and errors.params["failed_ops"] == 640
    assert "timeout awaiting response headers" in errors.params["error_said"]["warp 1"]
    assert len(errors.params["error_said"]) == 10
    iops = pick(records, "put", "iops")
    assert iops.value == pytest.approx((4370418 - 640) / 7536) and iops.params["ops"] == 4370418 - 640
    assert iops.params["object_size"] == 512  # (not the 0 B of a window of failed requests only)
    assert pick(records, "put", "throughput") is None


def test_a_get_run_keeps_its_preparation_puts_and_its_time_to_first_byte():
    records = warp.parse(doc("warp-get-4KiB-1m.json.zst"), "get.json")
    assert pick(records, "get", "iops").value == pytest.approx(83748 / 57)
    assert pick(records, "get", "throughput").value == pytest.approx(334927936.5606578 / 57)
    assert pick(records, "get", "ttfb_mean").unit == "s"
    assert pick(records, "put", "iops").params["object_size"] == 4000
    assert not any(m.metric.startswith(("lat_p", "ttfb_p")) for m in records)  # (see warp.LEFT_OUT)


def test_import_reads_warps_compressed_file_stores_it_and_says_what_it_left_out(tmp_path, capsys):
    results = str(tmp_path / "r")
    assert main(["import", "warp", str(WARP / "warp-put-1MiB-1m.json.zst"), "--backend", "rgw",
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
    ('{"v": 2, "by_op_type": {"GET\\u001b[31m": {}}}', "is not as warp writes it"),
    ('{"v": 2, "by_op_type": {"GET": {"throughput": {"measure_duration_millis": 1000, "ops": -5}}}}',
     "not a number at least 0"),
    ('{"v": 2, "by_op_type": {"GET": {"throughput": {"measure_duration_millis": 1000, "ops": true}}}}',
     "not a number at least 0"),
    ('{"v": 2, "by_op_type": {"GET": {"total_requests": 1e22, "total_errors": 0, "throughput": '
     '{"measure_duration_millis": 1000, "ops": 1e22, "bytes": 0}}}}', "beyond any storage"),
    ('{"v": 2, "by_op_type": {"GET": {"total_requests": 1, "total_errors": 2, "throughput": '
     '{"measure_duration_millis": 1000, "ops": 1}}}}', "more errors than requests"),
])
def test_output_that_is_not_warps_is_refused_naming_the_file(text, said):
    with pytest.raises(BadInput) as raised:
        warp.parse(text, "suspect.json")
    assert "suspect.json" in raised.value.message and said in raised.value.message
    assert "\x1b" not in raised.value.message


def test_a_damaged_or_too_large_compressed_file_is_refused(tmp_path, monkeypatch):
    whole = (WARP / "warp-put-1MiB-1m.json.zst").read_bytes()
    cut = tmp_path / "cut.json.zst"
    cut.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(BadInput, match="does not decompress|not JSON"):
        tools.parsed("warp", cut)
    monkeypatch.setattr(tools, "MAX_TOOL_OUTPUT", 64 << 10)  # (the file is 74 KB decompressed)
    with pytest.raises(BadInput, match="decompressed, it is more than"):
        tools.parsed("warp", WARP / "warp-put-1MiB-1m.json.zst")
