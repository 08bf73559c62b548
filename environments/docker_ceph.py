"""Ceph in the container lab: a monitor node (mon, mgr, MDS) and OSD nodes with their
OSDs' BlueStore block files on Docker volumes, the CRUSH failure domain being the node
(host), as on a real cluster. Daemons run in the foreground of ``docker exec -d``; the
configuration and keys are written here and copied into each node's /etc/ceph (the
containers', never this host's)."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from backends import ceph_client
from environments.ceph import keyring_text, lab_conf, lab_keys
from harness.system import proc

DATA = "/data"  # each Ceph node's Docker volume
# how soon the cluster notices a node that is gone (a fault): OSDs ping each other every
# second and report a peer silent for 4 s, and one report is enough (defaults: 6 s, 20 s,
# 2 reporters) — so a kill is noticed within seconds, as the lab's faults need
DETECTION = {"osd_heartbeat_interval": "1", "osd_heartbeat_grace": "4", "mon_osd_min_down_reporters": "1",
             "mon_osd_adjust_heartbeat_grace": "false"}


class CephNodes:
    def __init__(self, mon: Any, osds: list[Any], clients: list[Any], subnet: str,
                 osds_per_node: int, replicas: int, pg_num: int, timeout: float,
                 phase: Callable[[str], None]) -> None:
        self.mon, self.osd_nodes, self.clients = mon, osds, clients
        self.subnet, self.per_node, self.replicas = subnet, osds_per_node, replicas
        self.pg_num, self.timeout, self.phase = pg_num, timeout, phase
        self.fsid = str(uuid.uuid4())
        self.osds = len(osds) * osds_per_node

    def conf(self, mon_ip: str) -> str:
        return lab_conf(self.fsid, f"v2:{mon_ip}:3300", DATA, replicas=self.replicas, pg_num=self.pg_num,
                        osd_size=16 << 30, osd_memory_target=1024 << 20,
                        extra={"global": {"public_network": self.subnet, "log_to_stderr": "false", **DETECTION}})

    def up(self) -> dict[str, Any]:
        mon_ip = self.mon.address()
        keys = lab_keys(self.osds)
        admin = {k: v for k, v in keys.items() if k == "client.admin"}
        with tempfile.TemporaryDirectory(prefix="dfsbench-ceph-") as tmp:
            conf = Path(tmp) / "ceph.conf"
            conf.write_text(self.conf(mon_ip))
            full, client = Path(tmp) / "full.keyring", Path(tmp) / "ceph.client.admin.keyring"
            full.write_text(keyring_text(keys))
            client.write_text(keyring_text(admin))
            for node in [self.mon, *self.osd_nodes, *self.clients]:
                node.exec("mkdir", "-p", "/etc/ceph")
                proc.run(["docker", "cp", str(conf), f"{node.name}:/etc/ceph/ceph.conf"], timeout=60)
                proc.run(["docker", "cp", str(client), f"{node.name}:/etc/ceph/ceph.client.admin.keyring"],
                         timeout=60)
            proc.run(["docker", "cp", str(full), f"{self.mon.name}:/etc/ceph/full.keyring"], timeout=60)
        self.phase("Ceph configuration and keys copied to every node")

        m = self.mon
        m.exec("mkdir", "-p", f"{DATA}/mon/a", f"{DATA}/mgr/x", f"{DATA}/mds/a")
        m.exec("monmaptool", "--create", "--clobber", "--fsid", self.fsid, "--addv", "a",
              f"[v2:{mon_ip}:3300]", "/etc/ceph/monmap")
        m.exec("sh", "-c", f"printf '[mgr.x]\\n\\tkey = {keys['mgr.x']}\\n' > {DATA}/mgr/x/keyring && "
                          f"printf '[mds.a]\\n\\tkey = {keys['mds.a']}\\n' > {DATA}/mds/a/keyring")
        m.exec("ceph-mon", "--mkfs", "-i", "a", "--monmap", "/etc/ceph/monmap", "--keyring",
              "/etc/ceph/full.keyring", timeout=self.timeout)

        def mkfs(i: int) -> str:
            node = self.osd_nodes[i // self.per_node]
            osd_uuid = str(uuid.uuid4())
            node.exec("mkdir", "-p", f"{DATA}/osd/{i}", f"{DATA}/osd-block")
            node.exec("ceph-osd", "-i", str(i), "--mkfs", "--osd-uuid", osd_uuid, "--key", keys[f"osd.{i}"],
                     "--no-mon-config", timeout=self.timeout)
            node.exec("sh", "-c", f"printf '[osd.{i}]\\n\\tkey = {keys[f'osd.{i}']}\\n' > {DATA}/osd/{i}/keyring")
            return osd_uuid

        with ThreadPoolExecutor(max_workers=4) as pool:
            uuids = list(pool.map(mkfs, range(self.osds)))
        start_mon_daemons(m)
        self.phase("Ceph mkfs (mon and OSDs), mon, mgr and MDS started")
        proc.wait_for(lambda: (m.exec("ceph", "--connect-timeout", "5", "mon", "stat", check=False) != "",
                               "no answer"), what="the Ceph monitor to answer", timeout=self.timeout,
                      interval=0.5)
        for i, osd_uuid in enumerate(uuids):
            m.exec("ceph", "osd", "new", osd_uuid, str(i))
            start_osd(self.osd_nodes[i // self.per_node], i)
        m.exec("ceph", "osd", "pool", "create", "cephfs_metadata", str(self.pg_num))
        m.exec("ceph", "osd", "pool", "create", "cephfs_data", str(self.pg_num))
        m.exec("ceph", "fs", "new", "cephfs", "cephfs_metadata", "cephfs_data")
        self.phase("OSDs started, pools and file system made")
        proc.wait_for(self.ready, what=f"{self.osds} OSDs up, the MDS active, every PG active+clean",
                      timeout=self.timeout, interval=0.5)
        self.phase(f"{self.osds} OSDs up, MDS active, PGs active+clean")
        proc.wait_for(self.health, what="Ceph HEALTH_OK", timeout=self.timeout, interval=0.5)
        self.phase("HEALTH_OK")
        version = m.exec("ceph", "--version").split()
        return {"ceph_mon": m.name, "ceph_mon_addr": f"v2:{mon_ip}:3300", "ceph_osd_nodes": [n.name for n in self.osd_nodes],
                "osds": self.osds, "osds_per_node": self.per_node, "ceph_replicas": self.replicas,
                "ceph_version": version[2] if len(version) > 2 else "unknown", "fsid": self.fsid}

    def health(self) -> tuple[bool, str]:
        return health(self.mon)

    def ready(self) -> tuple[bool, str]:
        out = self.mon.exec("ceph", "--connect-timeout", "5", "status", "--format", "json", check=False)
        status = json.loads(out) if out.strip() else {}
        osdmap = status.get("osdmap", {})
        osdmap = osdmap.get("osdmap", osdmap)  # nested in some releases
        up = osdmap.get("num_up_osds", 0)
        pgmap = status.get("pgmap", {})
        total = pgmap.get("num_pgs", 0)
        clean = sum(s.get("count", 0) for s in pgmap.get("pgs_by_state", [])
                    if s.get("state_name") == "active+clean")
        mds = status.get("fsmap", {}).get("up", 0)
        return (up >= self.osds and mds >= 1 and total >= 2 * self.pg_num and clean == total,
                f"{up} of {self.osds} OSDs up, {mds} MDS up, {clean} of {total} PGs active+clean")


def start_mon_daemons(node: Any) -> None:
    """The monitor node's daemons, in the foreground of ``docker exec -d`` (at bring-up,
    and when a fault brought the node back)."""
    node.daemon("ceph-mon", "-f", "-i", "a")
    node.daemon("ceph-mgr", "-f", "-i", "x", "--keyring", f"{DATA}/mgr/x/keyring")
    node.daemon("ceph-mds", "-f", "-i", "a", "--keyring", f"{DATA}/mds/a/keyring")


def start_osd(node: Any, osd: int) -> None:
    node.daemon("ceph-osd", "-f", "-i", str(osd))


def health(mon: Any) -> tuple[bool, str]:
    """Ceph's health, asked of the monitor node (the one reader of backends.ceph_client)."""
    out = mon.exec("ceph", "--connect-timeout", "5", "health", "detail", "--format", "json", check=False)
    try:
        said = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        said = {}
    return ceph_client.health(said)
