"""The s3 workload: its options refuse what is not data of theirs, its records are what its
engine counted (from real captured engine outputs of a run on SeaweedFS's S3 gateway), its
aggregate over clients merges histograms and counts the span, the load generator's
saturation flags a cell, and its engine counts a gateway's wrong answers as errors."""

from __future__ import annotations

import copy
import http.server
import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.api.series import percentile_of_bins
from harness.api.target import S3Access, Target
from harness.execution import together
from workloads import s3_engine
from workloads.s3 import S3, S3Options, bins_s, records

DATA = Path(__file__).resolve().parent.parent / "data" / "s3"
FOUR = json.loads((DATA / "mix-seaweedfs-4-workers.json").read_text())  # 4 workers, warp's mix, 5 s
LISTED = json.loads((DATA / "mix-seaweedfs-2-workers-list.json").read_text())  # 2 workers, list too, 3 s


def target() -> Target:
    return Target("s3", None, "seaweedfs-s3", "default",
                  access=S3Access("127.0.0.1", 1, "key", "/nonexistent", "dfsbench-00000000"))


def cell(result: dict) -> dict:
    return {"object_size": 65536, "mix": "get 45", "objects": 100, "buckets": 1, "workers": result["workers"],
            "seconds": int(result["seconds"])}


def got(result: dict, host: str | None = None) -> dict[tuple[str, str], object]:
    out = {}
    for m in records(result, cell(result), target()):
        if host is not None:
            m = replace(m, params={**m.params, "host": host})
        out[(m.test, m.metric)] = m
    return out


# ---------------------------------------------------------------- options


@pytest.mark.parametrize("sizes", [{"../../etc/passwd": 1}, {"64KiB; rm -rf /": 1}, {"64KiB\n[global]": 1},
                                   {"1TiB": 1}, {"0": 1}, {}, {"64KiB": 0}, {"64KiB": -1}])
def test_object_sizes_that_are_not_sizes_are_refused(sizes):
    with pytest.raises(ValidationError):
        S3Options(seconds=5, sizes=sizes)


@pytest.mark.parametrize("mix", [{"post": 1}, {"get": 0, "put": 0}, {"get": 45, "delete": 10},
                                 {"get": float("inf")}, {"get": -1}])
def test_a_mix_that_cannot_run_is_refused(mix):
    with pytest.raises(ValidationError):
        S3Options(seconds=5, mix=mix)


def test_sizes_written_two_ways_are_one_size_and_cells_say_each_option():
    o = S3Options(seconds=5, sizes={"65536": 1, "64KiB": 2, "4MiB": 1}, workers=[1, 8])
    assert o.sizes == {"64KiB": 3.0, "4MiB": 1.0}
    cells = S3(o).cells()
    assert [c["workers"] for c in cells] == [1, 8]
    assert cells[0]["sizes"] == "64KiB×3, 4MiB×1" and "object_size" not in cells[0]
    assert S3(S3Options(seconds=5)).cells()[0]["object_size"] == 65536


def test_workers_that_would_hold_too_much_memory_are_refused_before_a_cell():
    found = S3(S3Options(seconds=5, sizes={"256MiB": 1}, workers=[16])).unrunnable("s3")
    assert found is not None and found[0] == "sizes"
    assert S3(S3Options(seconds=5)).unrunnable("s3") is None


# ---------------------------------------------------------------- records of a real run


@pytest.mark.parametrize("result", [FOUR, LISTED], ids=["4 workers", "2 workers with list"])
def test_each_operations_rate_and_percentiles_are_what_the_engine_counted(result):
    found = got(result)
    seconds = result["seconds"]
    tried = 0
    for op, counted in result["ops"].items():
        assert found[(op, "iops")].value == pytest.approx(counted["count"] / seconds)
        assert found[(op, "iops")].params["ops"] == counted["count"]
        bins = bins_s(counted["lat"])
        assert found[(op, "lat_p99")].value == percentile_of_bins(bins, 99)
        assert found[(op, "lat_mean")].value == pytest.approx(counted["lat_sum_s"] / counted["count"])
        # a histogram's percentile is within a bin (1.6 %) of the latencies it holds: p50 ≤ p99 ≤ p99.9
        assert found[(op, "lat_p50")].value <= found[(op, "lat_p99")].value <= found[(op, "lat_p99.9")].value
        assert found[(op, "errors")].value == 0 and found[(op, "errors")].params["failed_ops"] == 0
        # its progress ends at what it counted, at the span's end
        assert found[(op, "iops")].progress[-1] == (pytest.approx(result["ended"]), counted["count"])
        tried += counted["count"] + sum(counted["errors"].values())
    assert found[("get", "throughput")].value == pytest.approx(result["ops"]["get"]["bytes"] / seconds)
    assert ("head", "throughput") not in found and ("head", "ttfb_p50") not in found
    assert found[("get", "ttfb_p50")].value <= found[("get", "lat_p50")].value
    assert found[("all", "client_cpu_per_op")].value == pytest.approx(result["cpu_s"] / tried)
    assert not any(m.flags for m in found.values())  # (its load generator was not saturated)


def test_a_load_generator_that_used_all_it_could_flags_every_record_of_the_cell():
    """Saturated is against the CPUs its workers could use: one worker on a 2-CPU host that
    kept its CPU busy is saturated, though it used half of the host (the naive share)."""
    one = copy.deepcopy(LISTED)
    one["workers"], one["cpus"], one["cpu_s"] = 1, 2, 0.95 * one["seconds"]
    found = got(one)
    assert all(m.flags == ("host-bound",) for m in found.values())
    assert found[("all", "client_cpu_per_op")].params["client_cpu_share"] == pytest.approx(0.95)
    one["workers"] = 2  # (the same CPU over two workers that could use two CPUs: not saturated)
    assert not any(m.flags for m in got(one).values())


def test_errors_are_counted_by_kind_beside_the_operations_that_succeeded():
    bad = copy.deepcopy(FOUR)
    get = bad["ops"]["get"]
    get["errors"] = {"status 500": 3, "wrong bytes": 1}
    get["samples"] = {"status 500": "<html>not xml</html>", "wrong bytes": "GET k returned other bytes"}
    found = got(bad)
    errors = found[("get", "errors")]
    assert errors.value == pytest.approx(100 * 4 / (get["count"] + 4))
    assert errors.params["error_kinds"] == {"status 500": 3, "wrong bytes": 1}
    assert errors.params["error_said"]["status 500"] == "<html>not xml</html>"
    # (the rate and the latencies are of the operations that succeeded, as before)
    assert found[("get", "iops")].value == pytest.approx(get["count"] / bad["seconds"])


def test_over_two_clients_the_rate_is_over_the_span_and_the_percentile_of_the_merged_histograms():
    """Two clients, the second 0.5 s later and 8 times slower: the sum of their rates is more
    than they did over the span, and the mean of their p99s is not the p99 of their
    operations."""
    slow = copy.deepcopy(FOUR)
    slow["started"] += 0.5
    slow["ended"] += 0.5
    for counted in slow["ops"].values():
        counted["lat"] = [[s3_engine.bin_of(8 * lower), n] for lower, n in counted["lat"]]
        counted["seconds"] = [[s, n, moved, [[s3_engine.bin_of(8 * lower), c] for lower, c in b]]
                              for s, n, moved, b in counted["seconds"]]
    a, b = got(FOUR, "a"), got(slow, "b")
    both = [m for m in (*a.values(), *b.values())]
    agg = {(m.test, m.metric): m for m in together.aggregate(both, 2)}
    get_a, get_b = a[("get", "iops")], b[("get", "iops")]
    span = FOUR["seconds"] + 0.5
    assert agg[("get", "iops")].value == pytest.approx((get_a.params["ops"] + get_b.params["ops"]) / span)
    assert agg[("get", "iops")].value < get_a.value + get_b.value
    merged = dict(bins_s(FOUR["ops"]["get"]["lat"]))
    for k, v in bins_s(slow["ops"]["get"]["lat"]).items():
        merged[k] = merged.get(k, 0) + v
    p99 = agg[("get", "lat_p99")]
    assert p99.value == percentile_of_bins(merged, 99) and p99.params["basis"] == "merged histograms"
    assert p99.value != pytest.approx((a[("get", "lat_p99")].value + b[("get", "lat_p99")].value) / 2, rel=0.02)
    assert p99.series is not None and len(p99.series.points) >= FOUR["seconds"]


# ---------------------------------------------------------------- the engine against a gateway that lies


class Gateway(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint of the test's own that keeps what is put, and answers as ``lie`` says."""

    protocol_version = "HTTP/1.1"
    store: dict[str, bytes] = {}
    lie = ""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes = b"", length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.lie == "put-500":
            return self._answer(500, b"<html>oops, not XML</html>")
        self.store[self.path] = body
        self._answer(200)

    def do_GET(self) -> None:
        if "list-type" in self.path:
            return self._answer(200, b"plain text, not a listing" if self.lie == "list" else b"<ListBucketResult/>")
        body = self.store.get(self.path)
        if body is None:
            return self._answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        if self.lie == "short":
            body = body[: len(body) // 2]  # (200, and a length that says what it sends: a short object)
        elif self.lie == "flip":
            body = bytes([body[0] ^ 1]) + body[1:]
        self._answer(200, body)

    def do_HEAD(self) -> None:
        body = self.store.get(self.path)
        self._answer(200 if body is not None else 404, length=len(body or b""))

    def do_DELETE(self) -> None:
        self.store.pop(self.path, None)
        self._answer(204)


@pytest.fixture
def gateway(tmp_path):
    Gateway.store, Gateway.lie = {}, ""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    (tmp_path / "secret").write_text("s3cr3t-of-the-test\n")
    endpoint = {"host": "127.0.0.1", "port": server.server_address[1], "access_key": "k",
                "secret_file": str(tmp_path / "secret")}
    yield endpoint
    server.shutdown()
    server.server_close()


PLAN = {"buckets": ["dfsbench-test-0"], "prefix": "o-test/", "objects": 8, "workers": 2,
        "sizes": [[4096, 1], [10, 1]], "seed": 7}


@pytest.mark.parametrize("lie, kind", [("short", "short body"), ("flip", "wrong bytes"), ("list", "not a listing")])
def test_a_gateway_that_answers_200_with_the_wrong_bytes_gives_errors_not_a_crash(gateway, lie, kind):
    assert s3_engine.prepare(gateway, PLAN, create_buckets=False)["objects"] == 8
    Gateway.lie = lie
    result = s3_engine.mix(gateway, PLAN, {"get": 5, "list": 5, "put": 1}, seconds=0.5)
    op = "list" if lie == "list" else "get"
    counted = result["ops"][op]
    # (every answer of that operation lied: none counts as done, each is an error of its kind)
    assert counted["errors"].get(kind, 0) > 0 and counted["count"] == 0
    assert counted["samples"][kind]
    found = {(m.test, m.metric): m for m in records(result, cell(result), target())}
    assert found[(op, "errors")].params["error_kinds"][kind] == counted["errors"][kind]


def test_an_error_body_that_is_not_xml_is_said_as_text(gateway):
    Gateway.lie = "put-500"
    with pytest.raises(RuntimeError, match=r"status 500: <html>oops, not XML"):
        s3_engine.prepare(gateway, PLAN, create_buckets=False)


def test_what_the_mix_puts_comes_back_byte_for_byte_under_the_clients_prefix(gateway):
    s3_engine.prepare(gateway, PLAN, create_buckets=False)
    result = s3_engine.mix(gateway, PLAN, {"get": 5, "put": 2, "delete": 1, "head": 1}, seconds=0.5)
    assert result["verified"] == result["ops"]["get"]["count"] > 0
    assert not any(found["errors"] for found in result["ops"].values())
    assert all(k.startswith("/dfsbench-test-0/o-test/") for k in Gateway.store)
