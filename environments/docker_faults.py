"""Faults in the container lab: a storage node killed (``docker kill``), stopped (``docker
stop``) or paused (``docker pause``), or only its OSD / brick process killed; and the way
back — the node started again, its link shaped again (a restarted container has a new
network namespace) and its daemons started as at bring-up; the process started again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends.gluster import client as gluster_client
from backends.gluster.client import GlusterCli
from environments.nodes import Node
from harness.api.faults import Faults, FaultSpec, Injected
from harness.errors import DfsbenchError
from harness.system import proc


# how soon GlusterFS notices a node that is gone: a client gives up on a silent brick after
# 5 s (default 42 s), glusterd on a silent peer likewise — as Ceph's heartbeats
# (environments.docker_ceph.DETECTION), so a kill is noticed within seconds. And how soon
# it heals once the node is back: each self-heal daemon heals only its own node's bricks,
# and the pending entries are in the bricks that stayed up, whose daemons do not hear of
# the return and crawl every heal-timeout (default 600 s: a recovery measured here would
# be mostly that wait); set to 10 s, as Ceph's OSDs start recovery when one comes back
GLUSTER_DETECTION = {"network.ping-timeout": "5", "cluster.heal-timeout": "10"}
GLUSTERD = ["glusterd", "--xlator-option", "management.ping-timeout=5"]
RESTORE_TIMEOUT_S = 120.0


class NodeFault(Injected):
    def __init__(self, description: str, node: str, restore: Callable[[], None], stores_data: bool = True) -> None:
        self.description, self.node, self.stores_data = description, node, stores_data
        self._restore = restore

    def restore(self) -> None:
        self._restore()


class LabFaults(Faults):
    """``facts`` are the lab's (its ledger's ``docker`` entry); ``shape`` re-shapes a node's
    link."""

    def __init__(self, facts: dict[str, Any], shape: Callable[[Node], None]) -> None:
        self.facts, self.shape = facts, shape
        self.prefix = f"dfsbench-{facts.get('lab')}-"

    def node(self, hostname: str) -> Node:
        return Node(self.prefix + hostname, hostname)

    def storage(self, system: str) -> list[str]:
        names = self.facts.get("gluster_nodes", []) if system == "gluster" else \
            self.facts.get("ceph_osd_nodes", [])
        return [n.removeprefix(self.prefix) for n in names]

    def inject(self, system: str, spec: FaultSpec) -> Injected:
        candidates = self.storage(system) + (["ceph-mon1"] if system == "ceph" else [])
        hostname = spec.node or (candidates[1] if len(candidates) > 1 else candidates[0])
        if hostname not in candidates:
            raise DfsbenchError(f"fault node '{hostname}' is not a {system} storage node of this lab",
                                hint=f"its nodes: {', '.join(candidates)}")
        node = self.node(hostname)
        if spec.target == "process":
            name = "glusterfsd" if system == "gluster" else "ceph-osd"
            node.exec("sh", "-c", f"kill -9 $(pidof {name})")  # (our daemons, in our container)
            return NodeFault(f"{name} killed on {hostname}", hostname, lambda: self._start_daemons(system, node,
                                                                                          only_storage=True))
        command = {"kill": ["kill"], "stop": ["stop", "-t", "10"], "pause": ["pause"]}[spec.action]
        proc.run(["docker", *command, node.name], timeout=60)
        stores = hostname in self.storage(system)
        if spec.action == "pause":
            return NodeFault(f"{hostname} paused", hostname, lambda: self._unpause(node), stores)
        verb = "killed" if spec.action == "kill" else "stopped"
        return NodeFault(f"{hostname} {verb}", hostname, lambda: self._start_node(system, node), stores)

    def _force_start(self, via: str) -> tuple[bool, str]:
        try:
            cli = GlusterCli(self.node(via))
            for volume in self._started(cli):  # (the lab's, and any a backend made for itself)
                cli("volume", "start", volume.name, "force")
        except DfsbenchError as exc:  # glusterd of the restarted node not answering yet
            return False, exc.message
        return True, "started"

    def _started(self, cli: GlusterCli) -> list[gluster_client.VolumeShape]:
        """The started volumes of the lab's glusterds: its own, and any volume a backend made
        for its attachment (a disperse volume of its own), whose bricks a fault takes too."""
        found = [v for v in gluster_client.volumes(cli.xml("volume", "info")) if v.started]
        return found or [gluster_client.VolumeShape(self.facts["volume"], self.facts.get("volume_type", ""),
                                                    len(self.facts.get("bricks", self.storage("gluster"))),
                                                    self.facts.get("replica"), True)]

    def _each_volume(self, cli: GlusterCli, ask: Callable[[gluster_client.VolumeShape], tuple[bool, str]],
                     want: Callable[[list[bool]], bool]) -> tuple[bool, str]:
        """``ask`` of every started volume: ``want`` of their answers, and what each said
        (the volume's name before it where there are several)."""
        shapes = self._started(cli)
        said = [(v.name, *ask(v)) for v in shapes]
        text = said[0][2] if len(said) == 1 else "; ".join(f"{name}: {text}" for name, _, text in said)
        return want([ok for _, ok, _ in said]), text

    @staticmethod
    def _unpause(node: Node) -> None:
        proc.run(["docker", "unpause", node.name], timeout=60)

    def _start_node(self, system: str, node: Node) -> None:
        proc.run(["docker", "start", node.name], timeout=120)
        self.shape(node)
        self._start_daemons(system, node)

    def _start_daemons(self, system: str, node: Node, only_storage: bool = False) -> None:
        if system == "gluster":
            if not only_storage:
                # a restarted container keeps the pid files of the daemons that were killed,
                # and its new processes reuse low pids: glusterd would take a brick whose
                # stale pid now names another process for running, and not start it
                node.exec("sh", "-c", "find /var/run/gluster /var/lib/glusterd -name '*.pid' -delete")
                node.exec(*GLUSTERD)
            # (bricks of a started volume that are not running are started; the others stay)
            live = [n for n in self.storage("gluster") if n != node.hostname] or self.storage("gluster")
            proc.wait_for(lambda: self._force_start(live[0]), what="the GlusterFS bricks to be started again",
                          timeout=RESTORE_TIMEOUT_S, interval=2)
            running(node, {"glusterfsd": int(self.facts.get("bricks_per_node", 1))})
            return
        hostname = node.hostname or node.name
        from environments.docker_ceph import start_mon_daemons, start_osd

        if hostname == "ceph-mon1":
            start_mon_daemons(node)
            running(node, {"ceph-mon": 1, "ceph-mgr": 1, "ceph-mds": 1})
            return
        index = self.storage("ceph").index(hostname)
        per_node = int(self.facts.get("osds_per_node", 1))
        for osd in range(index * per_node, (index + 1) * per_node):
            start_osd(node, osd)
        running(node, {"ceph-osd": per_node})

    def health(self, system: str) -> tuple[bool, str]:
        if system == "ceph":
            from environments.docker_ceph import health

            return health(self.node("ceph-mon1"))
        return self._ask_gluster(lambda cli: self._each_volume(
            cli, lambda v: gluster_client.health(cli, v.name, v.bricks, v.keeps_copies), all))

    def _ask_gluster(self, ask: Callable[[GlusterCli], tuple[Any, str]], besides: str = "") -> tuple[Any, str]:
        """Ask the first GlusterFS node (other than ``besides``) whose glusterd answers."""
        said = "no GlusterFS node to ask"
        for hostname in self.storage("gluster"):
            if hostname == besides:
                continue
            try:
                return ask(GlusterCli(self.node(hostname)))
            except DfsbenchError as exc:  # (its glusterd not answering: the next one)
                said = f"{hostname}: {exc.message}"
        raise DfsbenchError(f"no GlusterFS node answered ({said})")

    def noticed(self, system: str, injected: Injected) -> tuple[bool | None, str]:
        """Ceph: an OSD marked down in the monitor's OSD map (``ceph osd stat``); GlusterFS:
        a brick offline in ``volume status``, asked of a node that is not the one down."""
        if system == "ceph":
            if injected.node == "ceph-mon1":
                return None, "the monitor, which would say it, is the node down"
            out = self.node("ceph-mon1").exec("ceph", "--connect-timeout", "5", "osd", "stat", "--format",
                                              "json", check=False)
            return osds_down(out)
        try:
            return self._ask_gluster(lambda cli: self._each_volume(
                cli, lambda v: _bricks_offline(cli, v.name, v.bricks), any), besides=injected.node)
        except DfsbenchError as exc:
            return None, exc.message


def _bricks_offline(cli: GlusterCli, volume: str, bricks: int) -> tuple[bool, str]:
    online = gluster_client.bricks_online(cli.xml("volume", "status", volume))
    return online < bricks, f"{online} of {bricks} bricks online"


def osds_down(text: str) -> tuple[bool | None, str]:
    """From ``ceph osd stat --format json``: whether an OSD is marked down."""
    import json

    try:
        said = json.loads(text)
    except json.JSONDecodeError:
        return None, f"ceph osd stat said: {text.strip()[:200]}"
    said = said.get("osdmap", said) if isinstance(said, dict) else {}  # (nested in some releases)
    up, total = said.get("num_up_osds"), said.get("num_osds")
    if not isinstance(up, int) or not isinstance(total, int):
        return None, f"ceph osd stat said no OSD counts: {text.strip()[:200]}"
    return up < total, f"{up} of {total} OSDs up"


def running(node: Node, daemons: dict[str, int]) -> None:
    """Wait until the node runs this many processes of each daemon: a restore returns only
    when the node's daemons run again (what happens after is the system's recovery)."""
    def counted() -> tuple[bool, str]:
        found = {name: len(node.run(["pidof", name], check=False, timeout=30).stdout.split()) for name in daemons}
        return all(found[n] >= want for n, want in daemons.items()), \
            ", ".join(f"{found[n]} of {want} {n}" for n, want in daemons.items())

    proc.wait_for(counted, what=f"the daemons of {node.label} to run again", timeout=RESTORE_TIMEOUT_S,
                  interval=0.2)
