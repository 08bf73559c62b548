"""Ceph in the container lab: a monitor node (mon, mgr, MDS) and OSD nodes with their
OSDs' BlueStore block files on Docker volumes, the CRUSH failure domain being the node
(host), as on a real cluster. Daemons run in the foreground of ``docker exec -d``; the
configuration and keys are made here and written into each node's /etc/ceph through the
Docker API (the containers', never this host's)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from backends.ceph import client as ceph_client
from backends.ceph.client import CephService
from backends.ceph.lab import (DETECTION, FAST_REPORTING, SESSION_SCRIPT, MonSession, keyring_text, lab_conf, lab_keys,
                              osds_up)
from harness.api.contracts import Options
from harness.api.systems import ContainerFaults, ContainerNode, Containers, NodeWish, wait_running
from harness.system.parallel import Stop
from harness.system import proc

DATA = "/data"  # each Ceph node's Docker volume
MON = "ceph-mon1"
RESTORE_TIMEOUT_S = 120.0


class CephContainerOptions(Options):
    ceph_osd_nodes: int = Field(3, ge=1, le=12, description="storage nodes running OSDs (containers ceph-osd1, …)")
    osds_per_node: int = Field(1, ge=1, le=4, description="OSDs on each storage node, each on a device of its own")
    ceph_replicas: int = Field(3, ge=1, le=12, description="pool size; replicas go to different nodes")

    @model_validator(mode="after")
    def _ceph_shape(self) -> CephContainerOptions:
        if self.ceph_replicas > self.ceph_osd_nodes:
            raise ValueError(f"ceph_replicas {self.ceph_replicas} needs as many OSD nodes: the failure "
                             f"domain is the node, and there are {self.ceph_osd_nodes}")
        return self


def osd_names(options: Any) -> list[str]:
    return [f"ceph-osd{i + 1}" for i in range(options.ceph_osd_nodes)]


def osds_down(text: str) -> tuple[bool | None, str]:
    """From ``ceph osd stat --format json``: whether an OSD is marked down."""
    try:
        said = json.loads(text)
    except json.JSONDecodeError:
        return None, f"ceph osd stat said: {text.strip()[:200]}"
    said = said.get("osdmap", said) if isinstance(said, dict) else {}  # (nested in some releases)
    up, total = said.get("num_up_osds"), said.get("num_osds")
    if not isinstance(up, int) or not isinstance(total, int):
        return None, f"ceph osd stat said no OSD counts: {text.strip()[:200]}"
    return up < total, f"{up} of {total} OSDs up"
CONF, ADMIN = "/etc/ceph/ceph.conf", "/etc/ceph/ceph.client.admin.keyring"
# the manager loads every module installed, enabled or not, before it can become active:
# 4 s of Python here, on the path to a healthy cluster. These are never enabled in the lab
# (not by default, nor by dfsbench): they are not loaded at all (the default list is the first)
MGR_NOT_LOADED = ("diskprediction_local,alerts,influx,insights,localpool,mirroring,osd_support,prometheus,"
                  "selftest,snap_schedule,stats,telegraf,test_orchestrator,zabbix")
# set while the cluster forms, removed once it is healthy (as backends.ceph.lab does)
BRINGING_UP = [*((who, option, "1") for who, option in FAST_REPORTING), ("mon", "paxos_propose_interval", "0.1")]


class CephNodes:
    """Ceph on the lab's nodes, each taken the moment its container is up (``Future``s of
    :class:`~environments.nodes.Node`): the monitor's mkfs and every OSD's run at once, and
    every monitor command goes through one session held in the monitor node (no ``ceph``
    CLI, a Python start-up each, per command or poll)."""

    def __init__(self, mon: Future[Any], osds: list[Future[Any]], clients: list[Future[Any]], subnet: str,
                 osds_per_node: int, replicas: int, pg_num: int, timeout: float,
                 phase: Callable[[str], None], log: Path, stop: Stop) -> None:
        self.mon, self.osd_nodes, self.clients = mon, osds, clients
        self.subnet, self.per_node, self.replicas = subnet, osds_per_node, replicas
        self.pg_num, self.timeout, self.phase = pg_num, timeout, phase
        self.log, self.stop = log, stop
        self.fsid = str(uuid.uuid4())
        self.osds = len(osds) * osds_per_node

    def conf(self, mon_ip: str) -> str:
        return lab_conf(self.fsid, f"v2:{mon_ip}:3300", DATA, replicas=self.replicas, pg_num=self.pg_num,
                        osd_size=16 << 30, osd_memory_target=1024 << 20,
                        extra={"global": {"public_network": self.subnet, "log_to_stderr": "false", **DETECTION},
                               "mgr": {"mgr_disabled_modules": MGR_NOT_LOADED}})

    def up(self) -> dict[str, Any]:
        m = self.mon.result()
        mon_ip = m.address()
        keys = lab_keys(self.osds)
        uuids = [str(uuid.uuid4()) for _ in range(self.osds)]  # (known before mkfs: in the osdmap once the mon answers)
        common = {CONF: self.conf(mon_ip),
                  ADMIN: keyring_text({k: v for k, v in keys.items() if k == "client.admin"})}
        with ThreadPoolExecutor(max_workers=len(self.osd_nodes) + 1) as pool:
            try:
                made = [pool.submit(self.osd_node, j, keys, uuids, common) for j in range(len(self.osd_nodes))]
                clients = pool.submit(lambda: [c.result().write_files(common) for c in self.clients])
                self.stop.check("Ceph's bring-up")
                self.mon_node(m, mon_ip, keys, common)
                self.phase("mon made; mon, mgr and MDS started")
                self.stop.check("Ceph's bring-up")
                helper = m.wrap(["python3", "-c", SESSION_SCRIPT.read_text()], interactive=True)
                with MonSession(Path(CONF), Path(ADMIN), self.log, self.timeout, helper, alive=self.stop.why) as mon:
                    self.phase("the monitor answers")
                    self.stop.check("Ceph's bring-up")
                    self.form(mon, uuids, made)
                    clients.result()
                    self.wait_healthy(mon)
                    version = str(mon.command("version").get("version", "")).split()
            except BaseException as error:
                self.stop.fail(error)  # (now: this pool waits for the OSD nodes' mkfs before it raises)
                raise
        return {"ceph_mon": m.name, "ceph_mon_addr": f"v2:{mon_ip}:3300",
                "ceph_osd_nodes": [n.result().name for n in self.osd_nodes],
                "osds": self.osds, "osds_per_node": self.per_node, "ceph_replicas": self.replicas,
                "ceph_version": version[2] if len(version) > 2 else "unknown", "fsid": self.fsid}

    def form(self, mon: MonSession, uuids: list[str], made: list[Future[list[int]]]) -> None:
        """The OSDs in the osdmap, each node's started once made, the pools, and the file
        system once every OSD is up."""
        # PG states reach the monitor through the mgr every 5 s by default, and the monitor
        # commits a change of its maps at most every second: faster while the cluster forms,
        # then back to the defaults (the lab's measurements run with them)
        for who, option, value in BRINGING_UP:
            mon.command("config set", who=who, name=option, value=value)
        for i, osd_uuid in enumerate(uuids):
            mon.command("osd new", uuid=osd_uuid, id=i)
        mon.command("osd pool create", pool="cephfs_metadata", pg_num=self.pg_num)
        mon.command("osd pool create", pool="cephfs_data", pg_num=self.pg_num)
        for job in as_completed(made):
            for i in job.result():
                start_osd(self.osd_nodes[i // self.per_node].result(), i)
        self.phase("pools made, OSDs made and started")
        # the MDS writes to its pools at once: what it wrote with an OSD still booting would
        # then have to be recovered onto it
        proc.wait_for(lambda: osds_up(mon, self.osds), what=f"{self.osds} OSDs up and in",
                      timeout=self.timeout, interval=0.1, alive=self.stop.why)
        mon.command("fs new", fs_name="cephfs", metadata="cephfs_metadata", data="cephfs_data")
        self.phase(f"{self.osds} OSDs up, file system made")

    def wait_healthy(self, mon: MonSession) -> None:
        proc.wait_for(lambda: self.ready(mon), what=f"{self.osds} OSDs up, the MDS active, every PG active+clean",
                      timeout=self.timeout, interval=0.2, alive=self.stop.why)
        self.phase("MDS active, PGs active+clean")
        proc.wait_for(lambda: ceph_client.health(mon.command("health", detail="detail")), what="Ceph HEALTH_OK",
                      timeout=self.timeout, interval=0.2, alive=self.stop.why)
        self.phase("HEALTH_OK")
        for who, option, _ in BRINGING_UP:
            mon.command("config rm", who=who, name=option)

    def mon_node(self, m: Any, mon_ip: str, keys: dict[str, str], common: dict[str, str]) -> None:
        """The monitor node's files and stores, and its daemons started."""
        m.write_files({**common, "/etc/ceph/full.keyring": keyring_text(keys),
               f"{DATA}/mgr/x/keyring": f"[mgr.x]\n\tkey = {keys['mgr.x']}\n",
               f"{DATA}/mds/a/keyring": f"[mds.a]\n\tkey = {keys['mds.a']}\n"}, dirs=[f"{DATA}/mon/a"])
        m.exec("monmaptool", "--create", "--clobber", "--fsid", self.fsid, "--addv", "a",
               f"[v2:{mon_ip}:3300]", "/etc/ceph/monmap")
        m.exec("ceph-mon", "--mkfs", "-i", "a", "--monmap", "/etc/ceph/monmap", "--keyring",
               "/etc/ceph/full.keyring", timeout=self.timeout)
        start_mon_daemons(m)

    def osd_node(self, j: int, keys: dict[str, str], uuids: list[str], common: dict[str, str]) -> list[int]:
        """The OSDs of OSD node ``j`` made (offline: no monitor needed); their ids."""
        node = self.osd_nodes[j].result()
        self.stop.check("Ceph's bring-up")
        ids = list(range(j * self.per_node, (j + 1) * self.per_node))
        node.write_files({**common, **{f"{DATA}/osd/{i}/keyring": f"[osd.{i}]\n\tkey = {keys[f'osd.{i}']}\n"
                                       for i in ids}}, dirs=[f"{DATA}/osd-block"])
        for i in ids:
            # (BlueStore's aio thread polls every 250 ms, and mkfs waits for it at each of its
            # device's closes: polled every 10 ms here, for the mkfs alone)
            node.exec("ceph-osd", "-i", str(i), "--mkfs", "--osd-uuid", uuids[i], "--key", keys[f"osd.{i}"],
                      "--no-mon-config", "--bdev_aio_poll_ms", "10", timeout=self.timeout)
        return ids

    def ready(self, mon: MonSession) -> tuple[bool, str]:
        status = mon.command("status") or {}
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
    """Ceph's health, asked of the monitor node (read by backends.ceph.client, as the
    bring-up's own wait reads it)."""
    out = mon.exec("ceph", "--connect-timeout", "5", "health", "detail", "--format", "json", check=False)
    try:
        said = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        said = {}
    return ceph_client.health(said)


class CephContainers(ContainerFaults):
    """Ceph's part in the container lab (a capability of :class:`backends.ceph.system.Ceph`):
    its nodes, their bring-up, the service its clients reach, its health, and its faults."""

    ContainerOptions = CephContainerOptions
    options: Any

    def container_nodes(self) -> list[NodeWish]:
        """A monitor node (mon, mgr, MDS: no data of its own) and the OSD nodes."""
        return [NodeWish(MON, False, DATA), *(NodeWish(name, True, DATA) for name in osd_names(self.options))]

    def start_containers(self, offer: Containers) -> dict[str, Any]:
        o = self.options
        nodes = [offer.nodes[MON], *(offer.nodes[name] for name in osd_names(o))]
        return CephNodes(nodes[0], nodes[1:], offer.clients, offer.subnet, o.osds_per_node, o.ceph_replicas, 16,
                         offer.timeout, offer.phase, offer.log_dir / "ceph-session.log", offer.stop).up()

    def container_service(self, facts: dict[str, Any], phases: dict[str, float]) -> CephService:
        """The cluster as its client nodes reach it: the conf and keyring in their /etc/ceph."""
        return CephService(
            conf=CONF, keyring=ADMIN, mon_addr=facts["ceph_mon_addr"], fs_name="cephfs", data_pool="cephfs_data",
            metadata_pool="cephfs_metadata", replicas=facts["ceph_replicas"], osds=facts["osds"],
            version=facts["ceph_version"], log_dir="", phases=phases,
            settings={"osd_memory_target": "1024 MiB", "failure_domain": "host",
                      "osd_nodes": str(len(facts["ceph_osd_nodes"])),
                      "mgr_disabled_modules": "those never enabled (not loaded)", **DETECTION},
            storage_nodes=len(facts["ceph_osd_nodes"]))

    def aliases(self, facts: dict[str, Any]) -> dict[str, str]:
        """The service names the monitor by its address."""
        return {self.container_service(facts, {}).mon_host: MON}

    def container_health(self, facts: dict[str, Any], node: Callable[[str], ContainerNode]) -> tuple[bool, str]:
        return health(node(MON))

    def data_process(self) -> str:
        return "ceph-osd"

    def restart(self, facts: dict[str, Any], node: ContainerNode, whole: bool,
                nodes: Callable[[str], ContainerNode]) -> None:
        """The node's daemons started as at bring-up, returning once they run."""
        if node.hostname == MON:
            start_mon_daemons(node)
            wait_running(node, {"ceph-mon": 1, "ceph-mgr": 1, "ceph-mds": 1}, RESTORE_TIMEOUT_S)
            return
        index = int(str(node.hostname).removeprefix("ceph-osd")) - 1  # (ceph-osd1 holds the first OSDs)
        per_node = int(facts.get("osds_per_node", 1))
        for osd in range(index * per_node, (index + 1) * per_node):
            start_osd(node, osd)
        wait_running(node, {"ceph-osd": per_node}, RESTORE_TIMEOUT_S)

    def noticed(self, facts: dict[str, Any], down: str,
                nodes: Callable[[str], ContainerNode]) -> tuple[bool | None, str]:
        """An OSD marked down in the monitor's OSD map (``ceph osd stat``)."""
        if down == MON:
            return None, "the monitor, which would say it, is the node down"
        out = nodes(MON).exec("ceph", "--connect-timeout", "5", "osd", "stat", "--format", "json", check=False)
        return osds_down(out)
