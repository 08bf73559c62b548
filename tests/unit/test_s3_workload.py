"""The s3 workload: its options refuse what is not data of theirs, its records are what its
engine counted (from real captured engine outputs of a run on SeaweedFS's S3 gateway), its
aggregate over clients merges histograms and counts the span, the load generator's
saturation flags a cell, and its engine counts a gateway's wrong answers as errors."""

from __future__ import annotations

import copy
import http.server
import json
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.api.series import percentile_of_bins
from harness.api.target import S3Access, Target
from harness.execution import together
from workloads import s3_engine
from workloads.s3 import S3, S3Options, bins_s, offered_per_op, records

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


def test_a_mix_that_never_puts_needs_an_object_for_every_worker():
    with pytest.raises(ValidationError, match="object per worker"):
        S3Options(seconds=5, mix={"get": 1}, objects=4, workers=[2, 8])
    assert S3Options(seconds=5, mix={"get": 1, "put": 1}, objects=1, workers=[8]).objects == 1


def test_sizes_written_two_ways_are_one_size_and_cells_say_each_option():
    o = S3Options(seconds=5, sizes={"65536": 1, "64KiB": 2, "4MiB": 1}, workers=[1, 8])
    assert o.sizes == {"64KiB": 3.0, "4MiB": 1.0}
    exact = S3Options(seconds=5, sizes={"100000": 1, "100010": 1, "4KB": 1})  # (never rounded into another)
    assert exact.size_weights() == [[100000, 1.0], [100010, 1.0], [4000, 1.0]]
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


def test_a_load_generator_that_never_waited_for_the_gateway_flags_every_record_of_the_cell():
    """Saturated is on a CPU or waiting for one (schedstat), not CPU used: workers that used
    little CPU but waited in the run queue the rest of the span (a host whose CPUs the lab took)
    never waited for the gateway, and are flagged; workers that used the same CPU and waited
    for the gateway otherwise are not."""
    busy = copy.deepcopy(LISTED)
    span = busy["workers"] * busy["seconds"]
    busy["cpu_s"], busy["busy_s"] = 0.2 * span, 0.95 * span
    found = got(busy)
    assert all(m.flags == ("host-bound",) for m in found.values())
    assert found[("all", "client_cpu_per_op")].params["client_busy_share"] == pytest.approx(0.95)
    busy["busy_s"] = 0.5 * span
    assert not any(m.flags for m in got(busy).values())
    busy["busy_s"] = None  # (a kernel that does not say: not flagged, and said as not known)
    found = got(busy)
    assert not any(m.flags for m in found.values())
    assert found[("all", "client_cpu_per_op")].params["client_busy_share"] is None


def test_a_second_in_which_nothing_completed_is_flat_in_the_progress_not_a_line_across_it():
    """A gateway down for seconds 1-2 of 5: no GET completed then, and the progress says so
    (a rate of 0 in those seconds), where points of the seconds with GETs alone would draw a
    line across them, a rate that never was."""
    down = copy.deepcopy(FOUR)
    get = down["ops"]["get"]
    get["seconds"] = [row for row in get["seconds"] if row[0] not in (1, 2)]
    get["count"] = sum(n for _, n, _, _ in get["seconds"])
    found = got(down)
    progress = found[("get", "iops")].progress
    start = down["started"]
    assert [t - start for t, _ in progress] == pytest.approx([0, 1, 2, 3, 4, 5])
    assert progress[1][1] == progress[2][1] == progress[3][1] > 0  # (flat over seconds 1 and 2)
    intervals = found[("get", "lat_p99")].histogram.intervals
    assert [(round(a - start), dict(b) == {}) for a, _, b in intervals][1:3] == [(1, True), (2, True)]


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
    """Two clients, the second 0.5 s later and 8 times slower: the rate is what they did over
    the span from the first start to the last end, and the p99 is of their operations
    together, not the mean of their p99s."""
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
    delay_s = 0.0  # before each GET of an object is answered
    gets = 0

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
            return self._answer(500, b"<html>oops, not XML</html>\x1b[31m")
        self.store[self.path] = body
        self._answer(200)

    def do_GET(self) -> None:
        if self.path == "/":  # (ListBuckets: the buckets anything was put in, or that were made)
            names = sorted({k.split("/")[1].split("?")[0] for k in self.store})
            return self._answer(200, b"<ListAllMyBucketsResult><Buckets>" + b"".join(
                b"<Bucket><Name>%s</Name></Bucket>" % n.encode() for n in names) + b"</Buckets></ListAllMyBucketsResult>")
        if "list-type" in self.path:
            return self._answer(200, b"plain text, not a listing" if self.lie == "list" else b"<ListBucketResult/>")
        body = self.store.get(self.path)
        if body is None:
            return self._answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        Gateway.gets += 1
        if self.lie == "every-other-fails" and Gateway.gets % 2:
            return self._answer(503, b"<Error><Code>SlowDown</Code></Error>")  # (at once: fast errors)
        time.sleep(self.delay_s)
        if self.lie == "short":
            body = body[: len(body) // 2]  # (200, and a length that says what it sends: a short object)
        elif self.lie == "flip":
            body = bytes([body[0] ^ 1]) + body[1:]
        elif self.lie == "endless":  # (200, chunked, and no end to it)
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"10000\r\n" + b"x" * 0x10000 + b"\r\n")
            except OSError:
                return
        elif self.lie == "trickle":  # (one byte at a time, each well within a read's timeout)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                return
            return
        self._answer(200, body)

    def do_HEAD(self) -> None:
        body = self.store.get(self.path)
        self._answer(200 if body is not None else 404, length=len(body or b""))

    def do_DELETE(self) -> None:
        self.store.pop(self.path, None)
        self._answer(204)


@pytest.fixture
def gateway(tmp_path):
    Gateway.store, Gateway.lie, Gateway.delay_s, Gateway.gets = {}, "", 0.0, 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    server.daemon_threads = True
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


@pytest.mark.parametrize("lie, kind", [("short", "short body"), ("flip", "wrong bytes"), ("list", "not a listing"),
                                       ("endless", "long body")])
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
    assert found[(op, "errors")].value == 100.0


def test_a_body_that_trickles_in_is_an_error_once_the_request_took_its_timeout(gateway):
    """Each byte comes within a read's timeout; the request as a whole may take timeout_s."""
    s3_engine.prepare(gateway, {**PLAN, "sizes": [[200, 1]]}, create_buckets=False)
    Gateway.lie = "trickle"
    t0 = time.monotonic()
    result = s3_engine.mix(gateway, {**PLAN, "sizes": [[200, 1]]}, {"get": 1}, seconds=1.5, timeout_s=0.5)
    assert time.monotonic() - t0 < 5
    errors = result["ops"]["get"]["errors"]
    assert errors.get("no answer: TimeoutError", 0) >= 2 and result["ops"]["get"]["count"] == 0


def test_an_error_body_that_is_not_xml_is_said_as_printable_text(gateway):
    Gateway.lie = "put-500"
    with pytest.raises(RuntimeError, match=r"status 500: <html>oops, not XML</html>\\x1b\[31m"):
        s3_engine.prepare(gateway, PLAN, create_buckets=False)


def test_a_worker_that_cannot_start_ends_the_mix_at_once_with_its_own_error(gateway, tmp_path):
    """Its secret file gone: the mix fails in a moment saying why, not at its deadline as hung."""
    s3_engine.prepare(gateway, PLAN, create_buckets=False)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="FileNotFoundError"):
        s3_engine.mix({**gateway, "secret_file": str(tmp_path / "gone")}, PLAN, {"get": 1}, seconds=1, deadline=60)
    assert time.monotonic() - t0 < 10


def test_an_operation_that_completes_after_the_end_is_neither_counted_nor_timed(gateway):
    """GETs that each take 0.3 s over 1 s, one worker: three complete within the span (fewer
    on a busy machine), the fourth after it."""
    plan = {**PLAN, "workers": 1}
    s3_engine.prepare(gateway, plan, create_buckets=False)
    Gateway.delay_s = 0.3
    result = s3_engine.mix(gateway, plan, {"get": 1}, seconds=1.0)
    get = result["ops"]["get"]
    assert 1 <= get["count"] <= 3 and sum(n for _, n, _, _ in get["seconds"]) == get["count"]
    assert sum(n for _, n in get["lat"]) == get["count"]  # (the one that completed after it is not timed)
    assert all(s == 0 for s, _, _, _ in get["seconds"])  # (each completed within the span's one second)
    assert min(lower for lower, _ in get["lat"]) >= s3_engine.bin_of(int(0.29e9))


def test_failed_operations_are_out_of_the_latencies_and_in_the_cpu_per_operation(gateway):
    """Every other GET fails at once, the others take 50 ms: the p50 is of those that
    succeeded (counting the fast failures in would halve it), and the CPU per operation is
    over every operation tried (over the successes alone it would double)."""
    plan = {**PLAN, "workers": 1}
    s3_engine.prepare(gateway, plan, create_buckets=False)
    Gateway.lie, Gateway.delay_s = "every-other-fails", 0.05
    result = s3_engine.mix(gateway, plan, {"get": 1}, seconds=1.0)
    get = result["ops"]["get"]
    failed = get["errors"]["status 503"]
    # (about ten of each on a quiet machine; a busy one does fewer, and two are enough here)
    assert get["count"] >= 2 and abs(failed - get["count"]) <= 1
    found = {(m.test, m.metric): m for m in records(result, cell(result), target())}
    assert found[("get", "lat_p50")].value >= 0.05
    assert found[("all", "client_cpu_per_op")].value == pytest.approx(result["cpu_s"] / (get["count"] + failed))
    assert found[("get", "errors")].value == pytest.approx(100 * failed / (get["count"] + failed))


def test_what_the_mix_puts_comes_back_byte_for_byte_under_the_clients_prefix(gateway):
    s3_engine.prepare(gateway, PLAN, create_buckets=False)
    result = s3_engine.mix(gateway, PLAN, {"get": 5, "put": 2, "delete": 1, "head": 1}, seconds=0.5)
    assert result["verified"] == result["ops"]["get"]["count"] > 0
    assert not any(found["errors"] for found in result["ops"].values())
    assert all(k.startswith("/dfsbench-test-0/o-test/") for k in Gateway.store)
    assert result["busy_s"] is not None and 0 < result["busy_s"] <= 2 * 0.5 * 1.2


def test_an_open_loop_times_each_request_from_its_arrival_and_says_when_it_fell_behind(gateway):
    """GETs that each take 0.1 s, one worker: offered 3 a second it keeps up, each timed at
    about its 0.1 s; offered 30 a second it can do 10, the arrivals queue behind it, and each
    is timed from its arrival — the wait included (timed from its sending, as a closed loop
    does, every one would say 0.1 s: coordinated omission) — and the cell is 'saturated'."""
    plan = {**PLAN, "workers": 1}
    s3_engine.prepare(gateway, plan, create_buckets=False)
    Gateway.delay_s = 0.1
    easy = s3_engine.mix(gateway, plan, {"get": 1}, seconds=2.0, rate=3.0)
    hard = s3_engine.mix(gateway, plan, {"get": 1}, seconds=2.0, rate=30.0)
    found = {(m.test, m.metric): m for m in records(easy, {**cell(easy), "offered_iops": 3}, target())}
    assert found[("get", "iops")].params["offered_iops_per_client"] == 3.0
    assert "saturated" not in found[("get", "iops")].flags
    assert 0.1 <= found[("get", "lat_p50")].value < 0.2
    busy = {(m.test, m.metric): m for m in records(hard, {**cell(hard), "offered_iops": 30}, target())}
    assert hard["ops"]["get"]["count"] <= 21  # (at most one every 0.1 s)
    assert busy[("get", "lat_p99")].value > 0.6 and "saturated" in busy[("get", "iops")].flags
    # the whole mix's percentiles are of every operation's histogram together
    assert busy[("all", "lat_p99")].value == busy[("get", "lat_p99")].value
    assert busy[("all", "iops")].params["offered_iops_per_client"] == 30.0


def test_each_operation_is_offered_its_share_of_the_rate_by_the_mix():
    weights = {"get": 45.0, "head": 30.0, "put": 15.0, "delete": 10.0}
    offered = offered_per_op({"rate": 200.0, "weights": weights})
    assert offered == {"all": 200.0, "get": 90.0, "head": 60.0, "put": 30.0, "delete": 20.0}
    assert offered_per_op(FOUR) == {}  # (a closed loop offers nothing: as fast as it goes)


def test_a_sites_gateway_that_checks_no_signature_is_refused_and_leaves_nothing_of_the_attachment(
        gateway, tmp_path):
    """On a site that exists, the gateway is the site's: checked as dfsbench's own are. This one
    takes any signature (the test's gateway checks none): refused, saying so; the bucket it made
    there is deleted and the key files written for the clients are gone. A site that names no
    gateway is refused before anything is asked of it."""
    from backends.ceph.rgw import Rgw
    from backends.s3gateway import site_target
    from harness.api.contracts import Cluster
    from harness.errors import BadInput, DfsbenchError
    from harness.system.hosts import LOCAL
    from harness.system.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.json")
    cluster = Cluster("existing", {}, ledger, tmp_path)
    backend = Rgw(Rgw.Options())
    site = {"host": gateway["host"], "port": gateway["port"], "region": "us-east-1", "access_key": "AKIATEST",
            "secret_file": gateway["secret_file"]}
    with pytest.raises(BadInput, match="names no S3 gateway"):
        site_target(backend, cluster, tmp_path / "att", {}, {}, LOCAL)
    with pytest.raises(DfsbenchError, match="does not check signatures"):
        site_target(backend, cluster, tmp_path / "att", site, {}, LOCAL)
    assert not (tmp_path / "att" / "s3-private").exists()
    assert [k for k in Gateway.store if k.startswith("/dfsbench-")] == []  # (its bucket's objects, the probe)
    assert ledger.entries == []


def test_a_gateway_down_as_the_workers_connect_is_errors_of_the_mix_not_its_end(gateway):
    """A fault may come before the mix's workers have opened their connections (the fault's
    clock starts as the mix is launched, and a busy machine starts its workers late): the
    refused connections are errors of their kind, counted while the gateway is down, and the
    mix goes on once it is back — it never fails whole."""
    s3_engine.prepare(gateway, PLAN, create_buckets=False)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # (a port of this machine that nothing listens on)
    down = {**gateway, "port": closed.getsockname()[1]}
    try:
        result = s3_engine.mix(down, PLAN, {"get": 1}, seconds=0.5, deadline=60)
    finally:
        closed.close()
    errors = result["ops"]["get"]["errors"]
    assert errors.get("no answer: ConnectionRefusedError", 0) > 0 and result["ops"]["get"]["count"] == 0, errors
