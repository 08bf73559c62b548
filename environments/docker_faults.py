"""Faults in the container lab: a storage node killed (``docker kill``), stopped (``docker
stop``) or paused (``docker pause``), or only its OSD / brick process killed; and the way
back — the node started again, its link shaped again (a restarted container has a new
network namespace) and its daemons started as at bring-up; the process started again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends import gluster_client
from backends.gluster_client import GlusterCli
from environments.nodes import Node
from harness.api.faults import Faults, FaultSpec, Injected
from harness.errors import DfsbenchError
from harness.system import proc


class NodeFault(Injected):
    def __init__(self, description: str, restore: Callable[[], None]) -> None:
        self.description = description
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
            return NodeFault(f"{name} killed on {hostname}", lambda: self._start_daemons(system, node,
                                                                                          only_storage=True))
        command = {"kill": ["kill"], "stop": ["stop", "-t", "10"], "pause": ["pause"]}[spec.action]
        proc.run(["docker", *command, node.name], timeout=60)
        if spec.action == "pause":
            return NodeFault(f"{hostname} paused", lambda: self._unpause(node))
        verb = "killed" if spec.action == "kill" else "stopped"
        return NodeFault(f"{hostname} {verb}", lambda: self._start_node(system, node))

    def _force_start(self, via: str) -> tuple[bool, str]:
        try:
            GlusterCli(self.node(via))("volume", "start", self.facts["volume"], "force")
        except DfsbenchError as exc:  # glusterd of the restarted node not answering yet
            return False, exc.message
        return True, "started"

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
                node.exec("glusterd")
            # (bricks of a started volume that are not running are started; the others stay)
            live = [n for n in self.storage("gluster") if n != node.hostname] or self.storage("gluster")
            proc.wait_for(lambda: self._force_start(live[0]), what="the GlusterFS bricks to be started again",
                          timeout=120, interval=2)
            return
        hostname = node.hostname or node.name
        from environments.docker_ceph import start_mon_daemons, start_osd

        if hostname == "ceph-mon1":
            start_mon_daemons(node)
            return
        index = self.storage("ceph").index(hostname)
        per_node = int(self.facts.get("osds_per_node", 1))
        for osd in range(index * per_node, (index + 1) * per_node):
            start_osd(node, osd)

    def health(self, system: str) -> tuple[bool, str]:
        if system == "ceph":
            from environments.docker_ceph import health

            return health(self.node("ceph-mon1"))
        nodes = self.storage("gluster")
        cli = GlusterCli(self.node(nodes[0]))
        return gluster_client.health(cli, self.facts["volume"], len(self.facts.get("bricks", nodes)),
                                     gluster_client.keeps_copies(self.facts.get("volume_type", ""),
                                                                 self.facts.get("replica")))
