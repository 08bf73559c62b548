"""Erasure coding on both systems, on real labs: largefile on CephFS and RBD with an
erasure-coded data pool of k=2, m=1 (the local lab: the failure domain the OSD), and on a
GlusterFS disperse 2+1 volume of the backend's own and CephFS EC 2+1 (the container lab: the
failure domain the node). The cluster itself is asked, while the run goes, whether the data
went to an erasure-coded pool or a disperse volume; and after it, whether the detach removed
the pool, its profile and rule, and the volume with its bricks."""

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
    """Asks the cluster, every half second while a run goes, what erasure-coded pools and
    disperse volumes it has, and what is in them; ``ask(*argv)`` runs a command where the
    cluster's CLIs are (here, or in a node), returning its output ('' on failure)."""

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
            if "profile" not in seen:
                said = json.loads(self.ceph("ceph", "osd", "pool", "get", name, "erasure_code_profile",
                                            "--format", "json") or "{}")
                seen["profile"] = said.get("erasure_code_profile")
                seen["code"] = json.loads(self.ceph("ceph", "osd", "erasure-code-profile", "get",
                                                    str(seen["profile"]), "--format", "json") or "{}")
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


def until(seen: Callable[[], bool], what: str, timeout: float = 300) -> None:
    """Wait for what the cluster holds to show: as long as a loaded host takes to say it."""
    end = time.monotonic() + timeout
    while not seen():
        assert time.monotonic() < end, f"{what}: not seen within {timeout:.0f} s"
        time.sleep(0.5)


@pytest.mark.skipif(os.geteuid() != 0, reason="the local lab needs root (FUSE mounts, loop devices)")
@pytest.mark.takes(100)
def test_cephfs_and_rbd_on_an_erasure_coded_pool_in_the_local_lab(tmp_path):
    """Where the data goes is asked of the cluster on the attachments ``lab up CONFIG`` makes
    and keeps (the same attach a run makes, held until ``lab down``): nothing the test sees
    depends on catching a run's pool in the seconds it lives, however busy the host. The run
    then shows what it recorded of its own pools, and that its detach removed each."""
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

    try:
        # the lab's two attachments: CephFS (FUSE) and an RBD image (rbd-fuse shows it as a
        # file) with a file system on it, each on an erasure-coded data pool of its own
        mounts = lab_mounts(up.stdout)
        assert set(mounts) - {"ext4", "xfs"} == {"fuse.ceph-fuse", "fuse.rbd-fuse"} and len(mounts) == 3, \
            up.stdout
        for fstype, point in mounts.items():
            if fstype == "fuse.rbd-fuse":
                continue  # (the image itself: written through the file system on it)
            # (where the attachment has a directory of its own, it is the one on the pool)
            space = sorted(Path(point).glob("dfsbench-ec21-*")) or [Path(point)]
            subprocess.run(["dd", "if=/dev/zero", f"of={space[0]}/ec-probe", "bs=4M", "count=4", "conv=fsync"],
                           check=True, capture_output=True, timeout=300)
        watcher = Watcher(ceph)

        def both_hold_the_data() -> bool:
            watcher.look()
            pools = list(watcher.pools.values())
            return len(pools) == 2 and all(p["objects"] >= 4 and p.get("overwrites") for p in pools) and \
                any(any(n.startswith("rbd_data.") for n in p["names"]) for p in pools)

        # the cluster says: two erasure-coded pools, k=2 m=1 over OSDs, overwrites allowed,
        # and what was written through each mount is in them (16 MiB: at least four 4 MiB
        # objects; the image's as rbd_data objects)
        until(both_hold_the_data, f"16 MiB in each of the lab's erasure-coded pools ({watcher.pools})")
        for seen in watcher.pools.values():
            code = seen["code"]
            assert (code["k"], code["m"], code["crush-failure-domain"]) == ("2", "1", "osd"), code
        held = (ceph("ceph", "osd", "pool", "ls"), ceph("ceph", "osd", "erasure-code-profile", "ls"),
                ceph("ceph", "osd", "crush", "rule", "ls"))

        run = dfsbench("run", str(config), env=env)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        view = json.loads(dfsbench("compare", "latest", "--format", "json", env=env).stdout)
        systems = {s["backend"]: s["description"] for s in view["runs"][0]["systems"]}
        for backend in ("cephfs", "rbd"):
            d = systems[backend]
            assert d["erasure_code"] == {"k": 2, "m": 1, "failure_domain": "osd", "pool_type": "erasure"}
            assert d["ec_pool"] not in watcher.pools, "the run used the lab's pool, not one of its own"
        assert systems["rbd"]["replicas"] is None and systems["cephfs"]["replicas"] is None
        written = [r for r in view["records"] if r["workload"] == "largefile" and r["metric"] == "throughput"]
        assert {(r["backend"], r["test"]) for r in written} == {(b, t) for b in ("cephfs", "rbd")
                                                                for t in ("write", "read")}
        # each of the run's detaches removed its pool, the profile and the CRUSH rule Ceph
        # made with it: the cluster holds what the lab held before the run, and no more
        after = (ceph("ceph", "osd", "pool", "ls"), ceph("ceph", "osd", "erasure-code-profile", "ls"),
                 ceph("ceph", "osd", "crush", "rule", "ls"))
        assert after == held
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
