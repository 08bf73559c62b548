"""The s3 workload on the local lab, for real: Ceph's RGW and SeaweedFS's S3 gateway, each
started by its backend for the attachment (RGW's pools made first), the default mix run on
both side by side in one run, and nothing left of either afterwards. Needs root and radosgw."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.system.ledger import Ledger
from tests.helpers import dfsbench
from tests.integration.lab import assert_nothing_left

pytestmark = [
    pytest.mark.lab,
    pytest.mark.takes(60),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("radosgw"), reason="the local lab needs root; RGW radosgw"),
]

RUN = """\
backends: [rgw, seaweedfs-s3]
slo: {p99: 200ms}
workloads:
  - name: s3
    options: {seconds: 3, objects: 60, workers: [3], buckets: 2, sizes: {4KiB: 1, 64KiB: 3}}
  - name: s3
    options: {seconds: 2, objects: 30, workers: [2], mix: {get: 1, put: 1}, load: {iops: [20, 2000]}}
"""


def test_the_s3_mix_on_rgw_and_on_seaweedfs_s3_side_by_side(tmp_path):
    """``dfsbench run`` of the s3 workload on both gateways, on a lab that stays up: each
    started with a key pair of its own and checked (a wrong secret refused), every operation
    of the default mix recorded with its rate, percentiles and errors (none), a comparison
    table; then the lab itself holds nothing of the run — no gateway, no RGW pool, key or
    set-up setting, no SeaweedFS bucket — before it goes down leaving nothing."""
    lab = tmp_path / "lab"
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    (tmp_path / "s3.yaml").write_text(RUN)
    try:
        up = dfsbench("lab", "up", str(tmp_path / "s3.yaml"), env=env, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        ledger = Ledger.open(lab / "ledger.json")
        lab_pids = [ident for _, ident, _ in ledger.live_processes()]
        run = dfsbench("run", str(tmp_path / "s3.yaml"), env=env, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        out = run.stdout
        assert "S3: operations per second by operation" in out and "S3: latency and time to first byte" in out
        assert "Ceph RGW" in out and "SeaweedFS S3" in out and "vs Ceph RGW" in out
        assert "rgw_thread_pool_size=64" in out
        db = sqlite3.connect(tmp_path / "results" / "dfsbench.sqlite")
        rows = db.execute("SELECT backend, test, metric, value, params FROM measurements "
                          "WHERE workload = 's3' AND json_extract(params, '$.offered_iops') IS NULL").fetchall()
        got = {(b, t, m): (v, json.loads(p)) for b, t, m, v, p in rows}
        for backend in ("rgw", "seaweedfs-s3"):
            for op in ("get", "head", "put", "delete"):
                assert got[(backend, op, "iops")][0] > 0, (backend, op)
                assert got[(backend, op, "errors")][0] == 0, got[(backend, op, "errors")]
            params = got[(backend, "get", "iops")][1]
            assert params["sizes"] == "4KiB×1, 64KiB×3" and params["buckets"] == 2 and params["workers"] == 3
            total = sum(got[(backend, op, "iops")][1]["ops"] for op in ("get", "head", "put", "delete"))
            assert got[(backend, "all", "iops")][0] == pytest.approx(total / 3)
            assert got[(backend, "all", "iops")][1]["reconnects"] == 0
            assert 0 < got[(backend, "all", "client_cpu_per_op")][0] < 0.05
            assert 0 < got[(backend, "all", "client_cpu_per_op")][1]["client_busy_share"] <= 1.2
            raw = tmp_path / "results" / "raw"
            mix = json.loads(next(raw.rglob(f"{backend}-default-r0/s3/s3-mix-3.json")).read_text())
            assert mix["verified"] > 0 and mix["connects"] == 3  # (one connection each, kept)
            clean = json.loads(next(raw.rglob(f"{backend}-default-r0/s3/s3-clean-3.json")).read_text())
            assert clean["problems"] == [] and clean["deleted"] > 0
        # the open loop: each point's offered load on its records, the one past what a gateway holds
        # flagged, and the answer says what each holds within the SLO
        for backend in ("rgw", "seaweedfs-s3"):
            low = got_load(db, backend, 20)
            high = got_load(db, backend, 2000)
            assert low["get"][1]["offered_iops_per_client"] == 10.0 and "saturated" not in low["get"][2]
            assert "saturated" in high["all"][2]  # (2000 op/s is past what this 2-core host holds)
        assert "the most load each holds within p99 ≤ 200.0 ms" in out
        described = {b: json.loads(d) for b, d in db.execute("SELECT backend, description FROM targets")}
        assert set(described) == {"rgw", "seaweedfs-s3"}
        for d in described.values():
            assert d["signatures"].startswith("checked") and d["endpoint"].startswith("127.0.0.1:")

        # what the run made in the lab is gone with its attachments
        ceph = ["ceph", "-c", str(lab / "ceph" / "ceph.conf"), "--keyring", str(lab / "ceph" / "keyring")]
        pools = subprocess.run([*ceph, "osd", "pool", "ls"], capture_output=True, text=True, check=True).stdout
        assert "rgw" not in pools, pools
        keys = subprocess.run([*ceph, "auth", "ls"], capture_output=True, text=True, check=True).stdout
        assert "client.rgw" not in keys
        settings = subprocess.run([*ceph, "config", "dump"], capture_output=True, text=True, check=True).stdout
        for name in ("paxos_propose_interval", "mgr_stats_period", "osd_mon_report_interval"):
            assert name not in settings, settings
        assert [ident for _, ident, _ in Ledger.open(lab / "ledger.json").live_processes()] == lab_pids
        assert not [pid for pid in _pids() if ours(pid, tmp_path)], "a gateway was left running"
        assert [b for b in _filer_buckets(ledger) if "dfsbench" in b] == []
    finally:
        if (lab / "ledger.json").exists():
            Ledger.open(lab / "ledger.json").undo()
    assert_nothing_left(lab, None, unledgered=True, within_s=10)


def got_load(db: sqlite3.Connection, backend: str, offered: int) -> dict[str, tuple[float, dict, str]]:
    """The iops records of one point of offered load, by operation: value, params, flags."""
    rows = db.execute("SELECT test, value, params, flags FROM measurements WHERE workload = 's3' AND backend = ? "
                      "AND metric = 'iops' AND json_extract(params, '$.offered_iops') = ?", (backend, offered))
    return {t: (v, json.loads(p), f) for t, v, p, f in rows}


def _pids() -> list[int]:
    """The processes of this host's own mount namespace (a container's gateway, which a container
    lab test beside this one may run, is not the local lab's)."""
    ours = os.readlink("/proc/self/ns/mnt")

    def here(pid: str) -> bool:
        try:
            return os.readlink(f"/proc/{pid}/ns/mnt") == ours
        except OSError:
            return False

    return [int(p) for p in os.listdir("/proc") if p.isdigit() and here(p)]


def ours(pid: int, tmp_path: Path) -> bool:
    """Whether the process is a gateway of this test's lab (radosgw or weed s3, its key files
    under the test's directory): another S3 test of this module may run one of its own beside it."""
    line = _cmdline(pid)
    return (b"radosgw" in line or b"weed\x00-logtostderr\x00s3" in line) and str(tmp_path).encode() in line


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _filer_buckets(ledger: Ledger) -> list[str]:
    """The buckets the lab's SeaweedFS filer holds (its /buckets directory: none, or its entries;
    the gateway keeps a '.system' entry of its own there)."""
    pid = next(ident.pid for name, ident, _ in ledger.live_processes() if name == "weed filer")
    port = next(a[6:].decode() for a in _cmdline(pid).split(b"\0") if a.startswith(b"-port="))
    asked = urllib.request.Request(f"http://127.0.0.1:{port}/buckets/", headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(asked, timeout=10) as answer:
            listing = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise
    return [e["FullPath"] for e in listing.get("Entries") or []]


FAULT = """\
backends: [seaweedfs-s3]
environment: {{kind: local, options: {{seaweedfs_replication: "001"}}}}
workloads:
  - name: s3
    options: {{seconds: 7, objects: 60, workers: [3]}}
    fault: {{action: kill, {node}after_s: 1, restore_after_s: 3, recovery_timeout_s: 120}}
"""


@pytest.mark.parametrize("node, done", [("", "volume2 killed"), ("gateway", "s3 killed")],
                         ids=["a volume server", "the gateway"])
def test_the_s3_mix_through_a_kill_reads_back_what_it_left(tmp_path, node, done):
    """A volume server, or the S3 gateway itself, killed under the mix and started again, on a
    lab that stays up: the cell's 'during' records are degraded; a volume server down is
    noticed by the master, a gateway down by nothing of the cluster (said so), and the gateway
    is whole again only once it answers; the requests it could not take are errors of their
    kind, the mix going on; what the mix left reads back whole after the system is healthy,
    'verified' where a PUT was acknowledged while the node was down (a volume server, with two
    copies over three servers: with three, measured, no PUT is acknowledged while one is down,
    and 'verified' says nothing was written then), and said not checked where none could be
    (the gateway); no gateway is left running after."""
    lab = tmp_path / "lab"
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    (tmp_path / "fault.yaml").write_text(FAULT.format(node=f"node: {node}, " if node else ""))
    try:
        up = dfsbench("lab", "up", str(tmp_path / "fault.yaml"), env=env, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        lab_pids = [ident for _, ident, _ in Ledger.open(lab / "ledger.json").live_processes()]
        run = dfsbench("run", str(tmp_path / "fault.yaml"), env=env, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        db = sqlite3.connect(tmp_path / "results" / "dfsbench.sqlite")
        fault = [json.loads(p) for (p,) in db.execute("SELECT params FROM measurements WHERE workload = 'fault'")]
        # (at 1 s into the phase, as asked: later where the machine is busy, within half a second)
        at = re.match(rf"{done} at ([0-9.]+) s", fault[0]["fault"]) if len(fault) == 1 else None
        assert at and 1.0 <= float(at.group(1)) < 1.5, fault
        verified = fault[0]["verified"]
        if node == "gateway":
            assert fault[0]["stores_data"] is False and fault[0]["noticed_after_s"] is None
            assert "gateway" in fault[0]["notice"] and "the gateway s3 answers at 127.0.0.1:" in fault[0]["health"]
            # (the gateway down moves nothing: where the clients moved again before the phase ended,
            # the window's lowest second is far below the level. Not a stall of a whole second: the
            # figures bin the clients' progress into whole seconds of the records' clock, and an
            # outage of two or three seconds off that clock's grid may leave none of them empty —
            # stall_s then reads 0, as a loaded make test found. Where the clients did not move again
            # — a busy machine started the gateway late — the seconds after their last byte are the
            # phase's closing seconds by definition, and no stall of the window)
            if fault[0]["closing_s"] == 0:
                assert fault[0]["lowest_rate"] < 0.75 * fault[0]["level"], fault
            else:
                assert fault[0]["closing_s"] >= 1 and fault[0]["stall_s"] == 0, fault
            kinds = [json.loads(p).get("error_kinds") or {} for (p,) in db.execute(
                "SELECT params FROM measurements WHERE workload = 's3' AND metric = 'errors' AND "
                "json_extract(params, '$.phase') = 'during'")]
            assert any("no answer: ConnectionRefusedError" in k for k in kinds), kinds
            # (no PUT can be acknowledged by a gateway that is down: unless one landed as it was killed)
            assert verified == "not checked (nothing was written while the fault held)" or \
                verified.startswith("yes ("), verified
        else:
            assert fault[0]["stores_data"] is True and fault[0]["noticed_after_s"] is not None
            assert verified.startswith("yes (every object the mix left, those it put while the fault held among "
                                       "them, read back whole"), verified
            checked = [json.loads(p.read_text()) for p in (tmp_path / "results" / "raw").rglob("s3-check-*.json")]
            assert checked and all(c["wrong"] == 0 and c["checked"] > 60 for c in checked)
        rows = [line for line in run.stdout.splitlines() if "phase=during" in line and "op/s" in line]
        assert len(rows) == 5 and all("op/s [G]" in line for line in rows), run.stdout  # (measured while degraded)
        # (as many processes as the lab had, each running: the node killed runs again, no gateway is left)
        after = Ledger.open(lab / "ledger.json").live_processes()
        assert len(after) == len(lab_pids) and all(alive for _, _, alive in after), after
        assert not [pid for pid in _pids() if ours(pid, tmp_path)], "a gateway was left running"
    finally:
        if (lab / "ledger.json").exists():
            Ledger.open(lab / "ledger.json").undo()
    assert_nothing_left(lab, None, unledgered=True, within_s=10)
