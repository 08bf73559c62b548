"""The ``existing`` environment against real clusters: a container lab started by
``dfsbench lab up`` stands in for a site's Ceph cluster and GlusterFS pool, and its two
client nodes run Debian's openssh-server, reached over SSH (one by key, one by password).
The run must leave the clusters as it found them, measure from both clients, and never
write a secret anywhere: the password is written in the config itself (the hardest case:
the stored config would hold it), the Ceph key is in the keyring on the client hosts."""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import dfsbench

pytestmark = [
    pytest.mark.lab,
    pytest.mark.xdist_group("docker"),  # (one container lab at a time beside the local labs)
    pytest.mark.skipif(shutil.which("docker") is None or
                       subprocess.run(["docker", "info"], capture_output=True).returncode != 0,
                       reason="needs a running Docker engine"),
]


def docker(*args: str, check: bool = True) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300, check=check).stdout


class Site:
    """The lab as a site: its client nodes' addresses, a key, the canaries."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.lab_dir = tmp / "docker-lab"
        self.env = {"DFSBENCH_DOCKER_LAB_DIR": str(self.lab_dir), "DFSBENCH_RESULTS": str(tmp / "results"),
                    "DFSBENCH_EXISTING_LAB_DIR": str(tmp / "existing")}
        up = dfsbench("lab", "up", "--env", "docker", env=self.env, timeout=1800)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        try:
            self._prepare(tmp)
        except BaseException:
            self.down()
            raise

    def _prepare(self, tmp: Path) -> None:
        import paramiko

        lab = json.loads((self.lab_dir / "ledger.json").read_text())["data"]["docker"]["lab"]
        self.node = lambda name: f"dfsbench-{lab}-{name}"  # noqa: E731
        self.password = "canary-pw-" + secrets.token_hex(8)
        key = paramiko.RSAKey.generate(2048)
        self.key = tmp / "id_rsa"
        key.write_private_key_file(str(self.key))
        public = f"{key.get_name()} {key.get_base64()}\n"
        self.address = {}
        for client in ("client1", "client2"):
            node = self.node(client)
            self.sh(client, "mkdir -p /root/.ssh /run/sshd && chmod 700 /root/.ssh && "
                    f"echo '{public.strip()}' > /root/.ssh/authorized_keys && "
                    f"echo 'root:{self.password}' | chpasswd && "
                    "/usr/sbin/sshd -o PermitRootLogin=yes -o PasswordAuthentication=yes")
            self.address[client] = docker("inspect", "--format",
                                          "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", node).strip()
        # a Ceph client of its own, whose key is the canary, in a keyring on each client host
        mon = self.node("ceph-mon1")
        self.ceph_key = docker("exec", mon, "ceph-authtool", "--gen-print-key").strip()
        keyring = f"[client.canary]\n\tkey = {self.ceph_key}\n"
        caps = "".join(f'\tcaps {d} = "allow *"\n' for d in ("mds", "mgr", "mon", "osd"))
        subprocess.run(["docker", "exec", "-i", mon, "sh", "-c", "cat > /tmp/canary.keyring && ceph auth import "
                        "-i /tmp/canary.keyring && rm /tmp/canary.keyring"], input=keyring + caps, text=True,
                       capture_output=True, check=True, timeout=120)
        for client in ("client1", "client2"):
            self.sh(client, f"printf '{keyring}' > /etc/ceph/ceph.client.canary.keyring && "
                    "chmod 600 /etc/ceph/ceph.client.canary.keyring")
            # the site's own mounts of both systems (the lab mounts nothing itself)
            self.sh(client, "mkdir -p /mnt/glusterfs /mnt/cephfs && "
                    "glusterfs --volfile-server=gluster1 --volfile-id=dfsbench /mnt/glusterfs && "
                    "ceph-fuse /mnt/cephfs && "
                    "for m in /mnt/glusterfs /mnt/cephfs; do i=0; until mountpoint -q $m; do sleep 0.2; "
                    "i=$((i+1)); [ $i -lt 300 ] || exit 1; done; done")

    def sh(self, node: str, script: str) -> str:
        return docker("exec", self.node(node), "sh", "-c", script)

    def config(self, body: str, clients: str | None = None) -> Path:
        clients = clients or (f"[{{host: {self.address['client1']}, key: {self.key}, name: client1}}, "
                              f"{{host: {self.address['client2']}, password: '{self.password}', "
                              "name: client2}]")
        path = self.tmp / f"existing-{secrets.token_hex(3)}.yaml"
        path.write_text(f"environment:\n  kind: existing\n  options:\n    clients: {clients}\n{body}")
        return path

    def run_env(self) -> dict[str, str]:
        return self.env

    def state(self) -> dict[str, object]:
        """What the clusters hold and what the client hosts run: pools, images, volumes,
        top-level directories of both file systems, dfsbench's directories, mounts, clients."""
        c = "ceph --id admin"
        pools = self.sh("client1", f"{c} osd pool ls").split()
        images = {p: self.sh("client1", f"rbd --id admin ls {p} 2>/dev/null || true").split() for p in pools}
        hosts = {}
        for client in ("client1", "client2"):
            hosts[client] = {
                "dfsbench dirs": self.sh(client, "ls -d /var/tmp/dfsbench-* 2>/dev/null || true").split(),
                "mounts": sorted(line.split()[1] for line in self.sh(client, "cat /proc/mounts").splitlines()
                                 if "fuse" in line),
                "clients": self.sh(client, "pgrep -c 'ceph-fuse|glusterfs|^fio$' || true").strip(),
            }
        return {"pools": pools, "images": images,
                "volumes": docker("exec", self.node("gluster1"), "gluster", "volume", "list").split(),
                "filesystems": self.sh("client1", f"{c} fs ls").strip(),
                "cephfs top": self.sh("client1", "ls -A /mnt/cephfs").split(),
                "glusterfs top": self.sh("client1", "ls -A /mnt/glusterfs").split(),
                "hosts": hosts}

    def down(self) -> None:
        dfsbench("lab", "down", "--env", "docker", env=self.env, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    s = Site(tmp_path_factory.mktemp("site"))
    try:
        yield s
    finally:
        s.down()


def leaks(root: Path, canaries: list[str], *texts: str) -> list[str]:
    found = [f"output {i}" for i, text in enumerate(texts) for c in canaries if c in text]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [str(path) for c in canaries if c.encode() in data]
    return found


@pytest.mark.thorough
def test_two_ssh_clients_measure_an_existing_site_and_leave_it_as_it_was(site):
    config = site.config("""    ceph: {client: canary}
    gluster: {servers: [gluster1], volume: dfsbench}
limits: {network: 1Gbit}
backends: [glusterfs, cephfs]
workloads:
  - {name: smallfile, clients: all, options: {files: [64], file_size: 4KiB, threads: 2}}
  - {name: largefile, clients: all, options: {sizes: [16MiB]}}
  - {name: fio, options: {all_clients: true, size: 32MiB, runtime_s: 3,
                          profiles: [{name: w1m, rw: write, bs: 1m, iodepth: 8}]}}
""")
    before = site.state()
    run = dfsbench("run", str(config), env=site.run_env(), timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert site.state() == before
    assert "client hosts: client1 (kernel" in run.stdout and "; client2 (kernel" in run.stdout

    out = dfsbench("compare", "latest", "--format", "json", env=site.env)
    view = json.loads(out.stdout)
    records = view["records"]
    for workload, metric in (("fio", "throughput"), ("smallfile", "files_per_sec"), ("largefile", "throughput")):
        hosts = {(r["backend"], r["params"]["host"]) for r in records
                 if r["workload"] == workload and r["metric"] == metric and r["value"] is not None}
        assert hosts == {(b, h) for b in ("glusterfs", "cephfs") for h in ("client1", "client2", "all")}, workload
    systems = {s["backend"]: s["description"] for s in view["runs"][0]["systems"]}
    assert systems["cephfs"]["environment"] == "existing"
    assert systems["cephfs"]["cluster"]["health"] == "HEALTH_OK"
    assert "ceph-osd1" in systems["cephfs"]["cluster"]["osd_tree"]
    assert {p["pool"]: p["failure_domain"] for p in systems["cephfs"]["cluster"]["pools"]}["cephfs_data"] == "host"
    assert systems["glusterfs"]["cluster"]["volume_info"]["replica"] == 3
    assert systems["glusterfs"]["replicas"] == 3
    assert set(systems["cephfs"]["client_facts"]) == {"client1", "client2"}
    assert all(abs(f["clock_offset_s"]) < 5 for f in systems["cephfs"]["client_facts"].values())
    assert set(systems["cephfs"]["tools_by_host"]) == {"client1", "client2"}

    report = site.tmp / "report.html"
    made = dfsbench("report", "latest", "-o", str(report), env=site.env)
    assert made.returncode == 0, made.stderr
    canaries = [site.password, site.ceph_key]
    assert leaks(site.tmp / "results", canaries, run.stdout, run.stderr, out.stdout, report.read_text()) == []
    assert not (site.tmp / "existing" / "ledger.json").exists()


@pytest.mark.thorough
def test_lab_status_looks_at_the_bricks_and_the_cluster_health(site):
    config = site.config("""    ceph: {client: canary}
    gluster: {servers: [gluster1], volume: dfsbench}
backends: [glusterfs, cephfs]
""")
    status = dfsbench("lab", "status", "--env", "existing", str(config), env=site.run_env(), timeout=600)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "ceph: healthy — HEALTH_OK" in status.stdout
    assert "gluster: healthy — 3 of 3 bricks online" in status.stdout
    # a brick that is down is seen from the client hosts, not hidden behind 'volume info'
    site.sh("gluster2", "kill -9 $(pidof glusterfsd)")
    try:
        down = dfsbench("lab", "status", "--env", "existing", str(config), env=site.run_env(), timeout=600)
        assert down.returncode == 1 and "gluster: NOT HEALTHY — 2 of 3 bricks online" in down.stdout, down.stdout
    finally:
        # (again until it is back: a glusterd that has not yet seen its brick die, as on a
        # busy host, takes 'start force' for a brick already running and starts nothing)
        end = time.monotonic() + 120
        while True:
            docker("exec", site.node("gluster1"), "gluster", "--mode=script", "volume", "start", "dfsbench", "force")
            again = dfsbench("lab", "status", "--env", "existing", str(config), env=site.run_env(), timeout=600)
            if "gluster: healthy — 3 of 3 bricks online" in again.stdout:
                break
            assert time.monotonic() < end, again.stdout
            time.sleep(2)


@pytest.mark.thorough
def test_a_mount_the_user_made_is_used_as_it_is_and_its_cache_is_said(site):
    config = site.config("""    ceph: {mounted: /mnt/cephfs}
    gluster: {mounted: /mnt/glusterfs}
backends: [glusterfs, cephfs]
workloads: [{name: largefile, options: {sizes: [16MiB]}}]
""")
    before = site.state()
    run = dfsbench("run", str(config), env=site.run_env(), timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert site.state() == before  # not unmounted, nothing left in it
    view = json.loads(dfsbench("compare", "latest", "--format", "json", env=site.env).stdout)
    reads = [r for r in view["records"] if r["workload"] == "largefile" and r["test"] == "read"]
    # two client hosts: each reads what the other wrote, which its own client never saw
    assert reads and all(r["params"]["cache"] == "sync+other-client" for r in reads)
    assert not any(r["flags"] for r in reads)
    systems = {s["backend"]: s["description"] for s in view["runs"][0]["systems"]}
    assert systems["glusterfs"]["mounted_by"] == "the user"
    # one client host: it reads back what it wrote, through a FUSE client dfsbench cannot
    # remount, whose own cache may answer — said, and held against the verdict
    one = site.config("""    ceph: {mounted: /mnt/cephfs}
    gluster: {mounted: /mnt/glusterfs}
backends: [glusterfs, cephfs]
workloads: [{name: largefile, options: {sizes: [16MiB]}}]
""", clients=f"[{{host: {site.address['client1']}, key: {site.key}, name: client1}}]")
    run = dfsbench("run", str(one), env=site.run_env(), timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    view = json.loads(dfsbench("compare", "latest", "--format", "json", env=site.env).stdout)
    reads = [r for r in view["records"] if r["workload"] == "largefile" and r["test"] == "read"]
    assert reads and all("client-cache-kept" in r["params"]["cache"] for r in reads)
    assert all("no-cache-drop" in r["flags"] for r in reads)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refusals_come_before_any_io(site, tmp_path):
    before = site.state()
    workload = "workloads: [{name: largefile, options: {sizes: [16MiB]}}]\n"
    one = f"[{{host: {site.address['client1']}, key: {site.key}, name: client1}}]"

    def refused(config: Path, *words: str) -> None:
        run = dfsbench("run", str(config), env=site.run_env(), timeout=600)
        assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
        for word in words:
            assert word in run.stderr, run.stderr
        assert site.password not in run.stderr + run.stdout

    # a 'mounted' path that is really the local disk
    refused(site.config("    ceph: {mounted: /root}\nbackends: [cephfs]\n" + workload, one),
            "client1:/root is not a mount point", "CephFS")
    # a pool dfsbench would create, without allow_create
    refused(site.config("    ceph: {}\nbackends: [rados]\n", one), "would create a pool", "allow_create")
    # a client host that does not answer, named
    port = free_port()
    refused(site.config("    gluster: {servers: [gluster1], volume: dfsbench}\nbackends: [glusterfs]\n" + workload,
                        f"[{{host: 127.0.0.1, port: {port}, key: {site.key}, name: gone}}]"),
            "client host gone", "unreachable")
    # a client host without fio, named with the package
    site.sh("client2", "mv /usr/bin/fio /usr/bin/fio.away")
    try:
        refused(site.config("    gluster: {servers: [gluster1], volume: dfsbench}\nbackends: [glusterfs]\n"
                            "workloads: [fio]\n"), "client2 lacks 'fio' (Debian package fio)")
    finally:
        site.sh("client2", "mv /usr/bin/fio.away /usr/bin/fio")
    # a raw device without allow_destructive
    image = tmp_path / "raw.img"
    image.write_bytes(b"")
    os.truncate(image, 64 << 20)
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        refused(site.config(f"backends: [{{name: blockdev, options: {{device: {device}}}}}]\n", "[]"),
                "allow_destructive")
    finally:
        subprocess.run(["losetup", "-d", device], check=True)
    assert site.state() == before


def test_a_killed_run_is_undone_by_lab_down(site):
    """kill -9 in the middle of a cell (after a remount: the read of the first file): its
    client processes, mounts, directories on the hosts and its directory in the user's
    file system are found from the ledger by 'lab down' and removed; nothing else is."""
    config = site.config("""    gluster: {servers: [gluster1], volume: dfsbench}
backends: [glusterfs]
workloads: [{name: largefile, options: {sizes: [96MiB, 100MiB]}}]
""")
    before = site.state()
    env = {**os.environ, **site.run_env()}
    log = site.tmp / "killed.log"
    with open(log, "w") as out:
        run = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(config)], stdout=out,
                               stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 300
            while "largefile file_size=96 MiB" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(4)  # into the cell: written, remounted, reading
        finally:
            run.kill()
            run.wait()
    killed = site.state()
    assert killed != before, "the run was killed before it created anything: nothing tested"
    down = dfsbench("lab", "down", "--env", "existing", str(config), env=site.run_env(), timeout=600)
    assert down.returncode == 0, down.stdout + down.stderr
    assert site.state() == before


RGW_POOLS = (".rgw.root", "default.rgw.control", "default.rgw.meta", "default.rgw.log",
             "default.rgw.buckets.index", "default.rgw.buckets.data", "default.rgw.buckets.non-ec")


def test_the_sites_own_object_gateway_is_measured_from_both_clients_and_its_secret_goes_nowhere(site):
    """The site's RGW (started here on its monitor's node, as the site's own, with a user of the
    site's): rgw measures it from both client hosts with the keys the config names (the secret
    from a file), makes a bucket of its own there and removes it; the secret key is in no output,
    no stored file, and nothing of dfsbench's is left on the client hosts."""
    mon = site.node("ceph-mon1")
    site.sh("ceph-mon1", "ceph config set mon paxos_propose_interval 0.05 && for p in "
            + " ".join(RGW_POOLS) + "; do ceph osd pool create $p 8 8 >/dev/null && "
            "ceph osd pool application enable $p rgw >/dev/null; done; ceph config rm mon paxos_propose_interval")
    docker("exec", "-d", mon, "sh", "-c", "mkdir -p /data/site-rgw && exec radosgw -f -n client.admin "
           "--keyring=/etc/ceph/ceph.client.admin.keyring "
           "'--rgw_frontends=beast endpoint=0.0.0.0:7480' --rgw_data=/data/site-rgw --run_dir=/data/site-rgw "
           "--log_file=/data/site-rgw.log")
    keys = json.loads(site.sh("ceph-mon1", "radosgw-admin user create --uid=site --display-name=site"))["keys"][0]
    address = docker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", mon).strip()
    secret_file = site.tmp / "rgw-secret"
    secret_file.write_text(keys["secret_key"] + "\n")
    for _ in range(150):  # (the gateway answers once it has read its pools)
        if subprocess.run(["curl", "-fsS", "-o", "/dev/null", f"http://{address}:7480/"],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the site's RGW did not answer: " + site.sh("ceph-mon1", "tail -5 /data/site-rgw.log"))
    buckets = "radosgw-admin bucket list"
    before_buckets = json.loads(site.sh("ceph-mon1", buckets))
    before = site.state()
    config = site.config(f"""    ceph: {{client: canary, s3: {{endpoint: '{address}:7480', access_key: {keys['access_key']},
            secret_key: 'file:{secret_file}'}}}}
    allow_create: true
backends: [rgw]
workloads:
  - {{name: s3, clients: all, options: {{seconds: 2, objects: 20, workers: [2]}}}}
""")
    run = dfsbench("run", str(config), env=site.run_env(), timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert site.state() == before
    assert json.loads(site.sh("ceph-mon1", buckets)) == before_buckets  # (its bucket made and removed)
    out = dfsbench("compare", "latest", "--format", "json", env=site.env)
    view = json.loads(out.stdout)
    rates = {r["params"]["host"] for r in view["records"]
             if r["workload"] == "s3" and r["test"] == "all" and r["metric"] == "iops" and r["value"]}
    assert rates == {"client1", "client2", "all"}, rates
    described = view["runs"][0]["systems"][0]["description"]
    assert described["endpoint"] == f"{address}:7480" and described["environment"] == "existing"
    assert described["gateway"] == "radosgw (the site's)" and described["replicas"] == 3
    assert leaks(site.tmp / "results", [keys["secret_key"]], run.stdout, run.stderr, out.stdout) == []
