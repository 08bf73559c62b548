"""Erasure coding on both systems, on real labs: largefile on CephFS and RBD with an
erasure-coded data pool of k=2, m=1 (the local lab: the failure domain the OSD), and on a
GlusterFS disperse 2+1 volume of the backend's own and CephFS EC 2+1 (the container lab: the
failure domain the node). The cluster itself is asked whether the data went to an
erasure-coded pool or a disperse volume (in the local lab, of the attachments ``lab up``
holds; in the container lab, while the run goes), and after the run whether its detaches
removed the pools, their profiles and rules, and the volume with its bricks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.system.ledger import Ledger
from tests.helpers import dfsbench

pytestmark = [pytest.mark.lab]


class Watcher(threading.Thread):
    """Asks the cluster what erasure-coded pools and disperse volumes it has, and what is in
    them: once (``look``), or every half second while a run goes (started as a thread);
    ``ceph(*argv)`` and ``gluster(*argv)`` run a command where the cluster's CLIs are (here,
    or in a node), returning its output ('' on failure)."""

    def __init__(self, ceph: Callable[..., str], gluster: Callable[..., str] | None = None) -> None:
        super().__init__(daemon=True)
        self.ceph, self.gluster = ceph, gluster
        self.pools: dict[str, dict[str, Any]] = {}  # EC pool → profile, its k/m/domain, objects seen
        self.volumes: dict[str, dict[str, Any]] = {}  # volume → type, counts, bricks, options
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            self.look()

    def look(self) -> None:
        listed = self.ceph("ceph", "osd", "pool", "ls", "detail", "--format", "json")
        for pool in json.loads(listed or "[]"):
            if not pool.get("erasure_code_profile"):
                continue
            name = pool["pool_name"]
            seen = self.pools.setdefault(name, {"objects": 0, "names": set()})
            if not seen.get("code"):  # (asked until it is answered: a loaded host may time out)
                said = json.loads(self.ceph("ceph", "osd", "pool", "get", name, "erasure_code_profile",
                                            "--format", "json") or "{}")
                seen["profile"] = said.get("erasure_code_profile")
                seen["code"] = json.loads(self.ceph("ceph", "osd", "erasure-code-profile", "get",
                                                    str(seen["profile"]), "--format", "json") or "{}") \
                    if seen["profile"] else {}
            if not seen.get("overwrites"):  # (set just after the pool is made: asked until it is)
                seen["overwrites"] = json.loads(self.ceph("ceph", "osd", "pool", "get", name, "allow_ec_overwrites",
                                                          "--format", "json") or "{}").get("allow_ec_overwrites")
            objects = self.ceph("rados", "-p", name, "ls").split()
            seen["objects"] = max(seen["objects"], len(objects))
            seen["names"].update(objects)
        if self.gluster is None:
            return
        said = self.gluster("gluster", "--mode=script", "volume", "info", "all", "--xml")
        if not said:
            return
        for vol in ET.fromstring(said).findall(".//volInfo/volumes/volume"):
            name = vol.findtext("name") or ""
            if vol.findtext("typeStr") != "Disperse":
                continue
            self.volumes[name] = {
                "type": vol.findtext("typeStr"), "disperse": vol.findtext("disperseCount"),
                "redundancy": vol.findtext("redundancyCount"),
                "bricks": [b.findtext("name") for b in vol.findall("bricks/brick")],
                "options": {o.findtext("name"): o.findtext("value") for o in vol.findall("options/option")}}

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=60)
        self.look()


LOCAL_RUN = """\
environment: local
backends:
  - {name: cephfs, variant: ec21, options: {ec: {k: 2, m: 1}}}
  - {name: rbd, variant: ec21, options: {ec: {k: 2, m: 1}, access: filesystem, image_size: 128MiB}}
workloads:
  - {name: largefile, options: {sizes: [16MiB]}}
"""


def lab_mounts(status: str) -> dict[str, str]:
    """The mounts ``lab status`` shows the lab holding: file system type → mount point."""
    found = re.findall(r"^  mount (.+): (\S+) \(verified in /proc/mounts\)$", status, re.MULTILINE)
    return {fstype: point for point, fstype in found}


def until(seen: Callable[[], str | None], timeout: float = 300) -> None:
    """Wait until ``seen()`` says nothing is missing (None); else it says what is. A loaded
    host is given minutes: nothing here is a race against the host's speed."""
    end = time.monotonic() + timeout
    while (missing := seen()) is not None:
        assert time.monotonic() < end, f"not seen within {timeout:.0f} s: {missing}"
        time.sleep(0.5)


@pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, loop devices)")
@pytest.mark.takes(100)
@pytest.mark.thorough
def test_cephfs_and_rbd_on_an_erasure_coded_pool_in_the_local_lab(tmp_path):
    """Where the data goes is asked of the cluster on the attachments ``lab up CONFIG`` makes
    and keeps (the same attach a run makes, held until ``lab down``): nothing the test sees
    depends on catching a run's pool in the seconds it lives, however busy the host. Then a
    run: the pools it made (the cluster's pool count says how many) and its records, and the
    cluster after it holding what the lab held before it."""
    lab = tmp_path / "lab"
    env = {"DFSBENCH_LOCAL_LAB_DIR": str(lab), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    config = tmp_path / "ec.yaml"
    config.write_text(LOCAL_RUN)
    up = dfsbench("lab", "up", str(config), env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    conf, keyring = lab / "ceph" / "ceph.conf", lab / "ceph" / "keyring"

    def ceph(tool: str, *args: str) -> str:
        got = subprocess.run([tool, "-c", str(conf), "--keyring", str(keyring), *args], capture_output=True,
                             text=True, timeout=120)
        return got.stdout if got.returncode == 0 else ""

    def said(tool: str, *args: str) -> str:  # (what must be answered: no answer fails the test)
        got = subprocess.run([tool, "-c", str(conf), "--keyring", str(keyring), *args], capture_output=True,
                             text=True, timeout=300)
        assert got.returncode == 0, f"{tool} {' '.join(args)}: {got.stderr}"
        return got.stdout

    try:
        # the lab's two attachments: CephFS (FUSE) and an RBD image (rbd-fuse shows it as a
        # file) with a file system on it, each on an erasure-coded data pool of its own
        mounts = lab_mounts(up.stdout)
        assert set(mounts) - {"ext4", "xfs"} == {"fuse.ceph-fuse", "fuse.rbd-fuse"} and len(mounts) == 3, \
            up.stdout
        [on_image] = [point for fstype, point in mounts.items() if not fstype.startswith("fuse.")]
        spaces = sorted(Path(mounts["fuse.ceph-fuse"]).glob("dfsbench-ec21-*"))
        assert len(spaces) == 1, spaces  # (the attachment's directory: the one laid out on its pool)
        probe = spaces[0] / "ec-probe"
        for where in (probe, Path(on_image) / "ec-probe"):
            subprocess.run(["dd", "if=/dev/zero", f"of={where}", "bs=4M", "count=4", "conv=fsync"],
                           check=True, capture_output=True, timeout=300)
        pools = json.loads(said("ceph", "osd", "pool", "ls", "detail", "--format", "json"))
        ec = {p["pool_name"] for p in pools if p.get("erasure_code_profile")}
        [image_pool] = [p["pool_name"] for p in pools if p["pool_name"].startswith("dfsbench-rbd-")
                        and p["pool_name"] not in ec]
        [image] = said("rbd", "ls", image_pool).split()
        info = json.loads(said("rbd", "info", f"{image_pool}/{image}", "--format", "json"))
        # the file's layout names the CephFS attachment's pool; the image's data pool is the RBD one's
        file_pool = os.getxattr(probe, "ceph.file.layout.pool").decode()
        assert {file_pool, info["data_pool"]} == ec and len(ec) == 2, (file_pool, info, ec)
        watcher = Watcher(ceph)
        # Ceph's names for their data: the file's objects are <inode in hex>.<index>, the
        # image's <block_name_prefix>.<index>
        theirs = {file_pool: f"{os.stat(probe).st_ino:x}.", info["data_pool"]: info["block_name_prefix"] + "."}

        def missing() -> str | None:
            watcher.look()
            for pool, prefix in theirs.items():
                seen = watcher.pools.get(pool, {})
                mine = [n for n in seen.get("names", ()) if n.startswith(prefix)]
                if len(mine) < 4 or not seen.get("overwrites") or not seen.get("code"):
                    return f"{pool}: {len(mine)} objects named {prefix}*, overwrites {seen.get('overwrites')}, " \
                           f"code {seen.get('code')}"
            return None

        # the cluster says: both pools erasure-coded k=2 m=1 over OSDs, overwrites allowed, and
        # what was written through each mount is in its pool (16 MiB: at least four 4 MiB objects)
        until(missing)
        for pool in ec:
            code = watcher.pools[pool]["code"]
            assert (code["k"], code["m"], code["crush-failure-domain"]) == ("2", "1", "osd"), code

        def held() -> tuple[list[str], ...]:
            return tuple(sorted(said("ceph", *what).split()) for what in
                         (("osd", "pool", "ls"), ("osd", "erasure-code-profile", "ls"), ("osd", "crush", "rule", "ls")))

        before = held()
        assert ec <= set(before[0])
        made = json.loads(said("ceph", "osd", "dump", "--format", "json"))["pool_max"]
        run = dfsbench("run", str(config), env=env)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        view = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)
        systems = {s["backend"]: s["description"] for s in view["runs"][0]["systems"]}
        for backend in ("cephfs", "rbd"):
            d = systems[backend]
            assert d["erasure_code"] == {"k": 2, "m": 1, "failure_domain": "osd", "pool_type": "erasure"}
            assert d["ec_pool"] not in ec, "the run used the lab's pool, not one of its own"
        assert systems["rbd"]["replicas"] is None and systems["cephfs"]["replicas"] is None
        written = [r for r in view["records"] if r["workload"] == "largefile" and r["metric"] == "throughput"]
        assert {(r["backend"], r["test"]) for r in written} == {(b, t) for b in ("cephfs", "rbd")
                                                                for t in ("write", "read")}
        # the run made three pools (CephFS's erasure-coded one; RBD's for the image and its
        # erasure-coded data pool), and its detaches removed each with the profile and the
        # CRUSH rule Ceph made with it: the cluster holds what the lab held before the run
        assert json.loads(said("ceph", "osd", "dump", "--format", "json"))["pool_max"] == made + 3
        assert held() == before
    finally:
        down = dfsbench("lab", "down", env=env)
        assert down.returncode == 0, down.stderr
        if (lab / "ledger.json").exists():
            Ledger.open(lab / "ledger.json").undo()


DOCKER_RUN = """\
environment: {kind: docker, options: {clients: 1, link: {rate: 1Gbit}, sample_every_s: 0}}
backends:
  - {name: glusterfs, variant: ec21, options: {layout: disperse}}
  - {name: cephfs, variant: ec21, options: {ec: {k: 2, m: 1}}}
workloads:
  - {name: largefile, options: {sizes: [32MiB]}}
"""


def docker(*args: str, check: bool = True) -> str:
    got = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300)
    if check and got.returncode != 0:
        raise AssertionError(got.stderr)
    return got.stdout if got.returncode == 0 else ""


@pytest.mark.xdist_group("docker")  # (one container lab at a time beside the local labs)
@pytest.mark.thorough
@pytest.mark.skipif(shutil.which("docker") is None or
                    subprocess.run(["docker", "info"], capture_output=True).returncode != 0,
                    reason="needs a running Docker engine")
def test_glusterfs_disperse_and_cephfs_erasure_coded_in_the_container_lab(tmp_path):
    lab_dir = tmp_path / "docker-lab"
    env = {"DFSBENCH_DOCKER_LAB_DIR": str(lab_dir), "DFSBENCH_RESULTS": str(tmp_path / "results")}
    config = tmp_path / "ec.yaml"
    config.write_text(DOCKER_RUN)
    up = dfsbench("lab", "up", str(config), env=env, timeout=1800)
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        lab = json.loads((lab_dir / "ledger.json").read_text())["data"]["docker"]["lab"]
        mon, gluster1 = f"dfsbench-{lab}-ceph-mon1", f"dfsbench-{lab}-gluster1"

        def ceph(*argv: str) -> str:
            return docker("exec", mon, *argv, check=False)

        def gluster(*argv: str) -> str:
            return docker("exec", gluster1, *argv, check=False)

        volumes_before = gluster("gluster", "--mode=script", "volume", "list").split()
        pools_before = ceph("ceph", "osd", "pool", "ls")
        watcher = Watcher(ceph, gluster)
        watcher.start()
        try:
            run = dfsbench("run", str(config), env=env, timeout=1800)
        finally:
            watcher.stop()
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        view = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)
        systems = {s["backend"]: s for s in view["runs"][0]["systems"]}

        # GlusterFS: a disperse volume of its own, 3 bricks with redundancy 1 on the three
        # nodes, the lab volume's honest and failure-detection options
        g = systems["glusterfs"]["description"]
        volume = watcher.volumes[g["volume"]]
        assert (volume["disperse"], volume["redundancy"]) == ("3", "1"), volume
        bricks = volume["bricks"]
        assert sorted(b.split(":")[0] for b in bricks) == ["gluster1", "gluster2", "gluster3"], bricks
        assert volume["options"]["performance.strict-o-direct"] == "on"
        assert volume["options"]["network.ping-timeout"] == "5"
        assert g["volume_type"] == "disperse" and g["storage_nodes"] == 3
        # CephFS: an erasure-coded pool over the three nodes, the data in it
        c = systems["cephfs"]["description"]
        assert c["erasure_code"] == {"k": 2, "m": 1, "failure_domain": "host", "pool_type": "erasure"}
        seen = watcher.pools[c["ec_pool"]]
        assert (seen["code"]["k"], seen["code"]["m"], seen["code"]["crush-failure-domain"]) == ("2", "1", "host")
        assert int(seen["objects"]) >= 8, seen  # 32 MiB in 4 MiB objects
        # what crosses the client's link: a disperse client sends 3/2 of each write, a Ceph
        # client once: their write ceilings are 2/3 of the link, and the link
        writes = {r["backend"]: r for r in view["records"]
                  if r["workload"] == "largefile" and r["test"] == "write" and r["metric"] == "throughput"}
        assert writes["glusterfs"]["params"]["ceiling"] == pytest.approx(125e6 * 2 / 3)
        assert writes["cephfs"]["params"]["ceiling"] == pytest.approx(125e6)
        assert systems["glusterfs"]["facts"]["write_copies"] == pytest.approx(1.5)

        # the detach stopped and deleted the volume and removed its bricks; the pool went
        assert gluster("gluster", "--mode=script", "volume", "list").split() == volumes_before
        for brick in bricks:  # (…/dfsbench-ec21-<hex>/b0: the volume's directory is gone)
            node, path = brick.split(":")
            gone = subprocess.run(["docker", "exec", f"dfsbench-{lab}-{node}", "test", "-e", str(Path(path).parent)],
                                  capture_output=True)
            assert gone.returncode == 1, brick
        assert ceph("ceph", "osd", "pool", "ls") == pools_before
        assert ceph("ceph", "osd", "erasure-code-profile", "ls").split() == ["default"]
    finally:
        down = dfsbench("lab", "down", "--env", "docker", env=env, timeout=600)
        assert down.returncode == 0, down.stderr
