"""Faults in the container lab: a storage node killed (``docker kill``), stopped (``docker
stop``) or paused (``docker pause``), or only its data process killed (the one its system
names: an OSD, a brick); and the way back — the node started again, its link shaped again
(a restarted container has a new network namespace) and its system's daemons started as at
bring-up; the process started again. What each system does and says is its own
(``harness.api.systems.System.restart``, ``noticed``, ``container_health``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from environments.nodes import Node
from harness.api.faults import Faults, FaultSpec, Injected
from harness.api.systems import runs_gateway
from harness.errors import DfsbenchError
from harness.system import proc


class NodeFault(Injected):
    def __init__(self, description: str, node: str, restore: Callable[[], None], stores_data: bool = True) -> None:
        self.description, self.node, self.stores_data = description, node, stores_data
        self._restore = restore

    def restore(self) -> None:
        self._restore()


class LabFaults(Faults):
    """``facts`` are the lab's (its ledger's ``docker`` entry: what it made for each system);
    ``shape`` re-shapes a node's link."""

    def __init__(self, systems: dict[str, Any], facts: dict[str, Any], shape: Callable[[Node], None]) -> None:
        self.systems, self.facts, self.shape = systems, facts, shape
        self.prefix = f"dfsbench-{facts.get('lab')}-"

    def node(self, hostname: str) -> Node:
        return Node(self.prefix + hostname, hostname)

    def made(self, system: str) -> dict[str, Any]:
        found = (self.facts.get("systems") or {}).get(system)
        if not isinstance(found, dict) or system not in self.systems:
            raise DfsbenchError(f"the container lab has no {system} nodes to fault",
                                hint="take the lab down ('dfsbench lab down --env docker') and let the run "
                                     "start one with this dfsbench")
        return found

    def storage(self, system: str) -> list[str]:
        return list(self.made(system)["data"])

    def inject(self, system: str, spec: FaultSpec) -> Injected:
        made = self.made(system)
        candidates = [*made["data"], *(n for n in made["nodes"] if n not in made["data"])]
        hostname = spec.node or (candidates[1] if len(candidates) > 1 else candidates[0])
        if hostname not in candidates:
            raise DfsbenchError(f"fault node '{hostname}' is not a {system} storage node of this lab",
                                hint=f"its nodes: {', '.join(candidates)}")
        node = self.node(hostname)
        if spec.target == "process":
            name = self.systems[system].data_process()
            self.systems[system].kill_data(node)
            return NodeFault(f"{name} killed on {hostname}", hostname,
                             lambda: self.systems[system].restart(made["facts"], node, False, self.node))
        if spec.action != "pause" and runs_gateway(node):  # (started again, a node starts its system's daemons, not an attachment's gateway)
            raise DfsbenchError(f"fault node '{hostname}' runs an S3 gateway an attachment started: a {spec.action} "
                                "of the node would end the gateway for the rest of the run",
                                hint=f"fault a storage node of {system} instead: "
                                     f"{', '.join(made['data'])}")
        command = {"kill": ["kill"], "stop": ["stop", "-t", "10"], "pause": ["pause"]}[spec.action]
        proc.run(["docker", *command, node.name], timeout=60)
        stores = hostname in made["data"]
        if spec.action == "pause":
            return NodeFault(f"{hostname} paused", hostname, lambda: self._unpause(node), stores)
        verb = "killed" if spec.action == "kill" else "stopped"
        return NodeFault(f"{hostname} {verb}", hostname, lambda: self._start_node(system, node), stores)

    @staticmethod
    def _unpause(node: Node) -> None:
        proc.run(["docker", "unpause", node.name], timeout=60)

    def _start_node(self, system: str, node: Node) -> None:
        proc.run(["docker", "start", node.name], timeout=120)
        self.shape(node)
        self.systems[system].restart(self.made(system)["facts"], node, True, self.node)

    def health(self, system: str) -> tuple[bool, str]:
        return self.systems[system].container_health(self.made(system)["facts"], self.node)

    def noticed(self, system: str, injected: Injected) -> tuple[bool | None, str]:
        """Whether the system's own state names the fault (as the system reads it)."""
        return self.systems[system].noticed(self.made(system)["facts"], injected.node, self.node)
