"""SeaweedFS in the container lab: the master and the filer on ``seaweedfs-master1``, one
volume server on each of ``seaweedfs-vol1..N``, every one's data and output on the node's
Docker volume (``/data``), known to the others by the node's host name on the lab's network
(a container started again may get another address). This host's ``weed`` (one static
binary of 153 MB) is copied into every node, the client nodes too, as each comes up. A fault:
the volume server of a node killed ('weed', the only one there) or the node itself; the way
back starts its servers again and waits until the master lists it."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field, model_validator

from backends.seaweedfs.weed import (OWN_CONFIG, REPLICATION_HELP, VOLUME_SIZE_MB, Address, Replication,
                                     ReplicationText, SeaweedService, Topology, filer_argv, filer_config, get_json, leader, master_argv,
                                     read_health, version_of, volume_argv, weed_binary)
from harness.api.contracts import Options
from harness.api.systems import ContainerFaults, ContainerNode, Containers, NodeWish, wait_running
from harness.errors import DfsbenchError
from harness.system import proc

T = TypeVar("T")

MASTER_NODE = "seaweedfs-master1"
VOLUME_NODE = "seaweedfs-vol{}"
WEED_IN_NODE = "/usr/local/bin/weed"  # where this host's weed goes in each node
DATA = "/data"  # a node's Docker volume (NodeWish.volume_at)
# ports in a node (each node has a network namespace of its own): weed's defaults
NODE_PORTS = {"master": 9333, "volume": 8080, "filer": 8888}
RESTORE_TIMEOUT_S = 120.0


class SeaweedContainerOptions(Options):
    seaweedfs_volume_nodes: int = Field(3, ge=1, le=12, description="SeaweedFS volume nodes of the container "
                                        "lab (one volume server each)")
    seaweedfs_replication: ReplicationText = Field("002", description="the lab's default replication: "
                                                + REPLICATION_HELP)

    @model_validator(mode="after")
    def _seaweedfs_nodes(self) -> SeaweedContainerOptions:
        misfit = Replication(self.seaweedfs_replication).misfit(self.seaweedfs_volume_nodes)
        if misfit:
            raise ValueError(f"seaweedfs_replication: {misfit}; give more seaweedfs_volume_nodes or fewer copies")
        return self


def install_weed(node: ContainerNode, weed: str) -> None:
    """This host's ``weed`` copied into the node as :data:`WEED_IN_NODE` (where it is not
    there already: a node restarted keeps it)."""
    size = Path(weed).stat().st_size
    have = node.exec("sh", "-c", f"stat -c %s {WEED_IN_NODE} 2>/dev/null || true", timeout=30).strip()
    if have != str(size):
        node.put_file(Path(weed), WEED_IN_NODE, 0o755)


def node_daemon(node: ContainerNode, name: str, argv: list[str], config: dict[str, str] | None = None) -> None:
    """``argv`` as a daemon of the node, in a working directory of its own under the node's
    data volume (with configuration files of its own: empty, or ``config``), its output in
    /data/log, its pid in :func:`pidfile`."""
    where = f"{DATA}/{name}"
    files = {**dict.fromkeys(OWN_CONFIG, ""), **(config or {})}
    node.write_files({f"{where}/{file}": text for file, text in files.items()}, dirs=[where, f"{DATA}/log"])
    node.daemon("sh", "-c", 'cd "$1" && log="$2" && echo $$ > "$3" && shift 3 && exec "$@" >> "$log" 2>&1', "sh",
                where, f"{DATA}/log/{name}.log", pidfile(name), *argv)


def pidfile(name: str) -> str:
    """Where the daemon ``name`` ('volume') of a node keeps its pid."""
    return f"{DATA}/{name}/pid"


def kill_volume(node: ContainerNode) -> None:
    """SIGKILL to the node's volume server, by its pid (the master's node runs two weeds)."""
    node.exec("sh", "-c", f'kill -9 "$(cat {pidfile("volume")})"')


def leads(master: str, via: ContainerNode) -> tuple[bool, str]:
    """Whether the master at ``master`` answers ``via`` with a leader."""
    said = leader(get_json(f"http://{Address.parse(master).http}/cluster/status", via))
    return bool(said), f"leader {said or 'none yet'}"


def node_master(hostname: str) -> str:
    return f"{hostname}:{NODE_PORTS['master']}"


def start_master(node: ContainerNode, replication: str) -> None:
    host = node.hostname or MASTER_NODE
    port = NODE_PORTS["master"]
    node_daemon(node, "master", master_argv(WEED_IN_NODE, host, port, port + 10000, f"{DATA}/master",
                                            replication, bind="0.0.0.0"))
    port = NODE_PORTS["filer"]
    store = f"{DATA}/filer/store"
    node_daemon(node, "filer", filer_argv(WEED_IN_NODE, host, port, port + 10000, store, f"{DATA}/filer/filer.sock",
                                          node_master(host), bind="0.0.0.0"), {"filer.toml": filer_config(store)})


def start_volume(node: ContainerNode, master: str) -> None:
    host = node.hostname or node.name
    port = NODE_PORTS["volume"]
    node_daemon(node, "volume", volume_argv(WEED_IN_NODE, host, port, port + 10000, f"{DATA}/volume", master,
                                            bind="0.0.0.0"))


def volume_nodes(options: Any) -> list[str]:
    return [VOLUME_NODE.format(i + 1) for i in range(int(getattr(options, "seaweedfs_volume_nodes", 3)))]


def health(facts: dict[str, Any], nodes: Callable[[str], ContainerNode]) -> tuple[bool, str]:
    """Asked in the master's node."""
    return read_health(str(facts["master"]), str(facts["filer"]), len(facts.get("nodes") or []),
                       nodes(MASTER_NODE))


def listed(facts: dict[str, Any], nodes: Callable[[str], ContainerNode]) -> Topology:
    """What the master says of its volume servers, asked in its node."""
    return Topology.of(get_json(f"http://{Address.parse(str(facts['master'])).http}/dir/status",
                                nodes(MASTER_NODE)))


def shown_down(top: Topology, urls: dict[str, str], down: str) -> bool:
    """Whether the master's topology lacks the volume server of node ``down`` (``urls``: each
    volume node's server by its host name), or with no node named (''), any of them."""
    missing = [node for node, url in urls.items() if url not in top.servers]
    return down in missing if down else bool(missing)


class SeaweedContainers(ContainerFaults):
    """SeaweedFS's part in the container lab (a capability of :class:`backends.seaweedfs.system.SeaweedFS`):
    its nodes, their bring-up, the service its clients reach, its health, and its faults."""

    ContainerOptions = SeaweedContainerOptions
    options: Any

    def container_nodes(self) -> list[NodeWish]:
        """The master's node (it holds metadata, not data: a fault of 'target: process' kills no
        data there) and the volume nodes, each with a Docker volume at /data."""
        return [NodeWish(MASTER_NODE, stores_data=False, volume_at=DATA),
                *(NodeWish(name, stores_data=True, volume_at=DATA) for name in volume_nodes(self.options))]

    def start_containers(self, offer: Containers) -> dict[str, Any]:
        """weed copied into each node and each client node as it comes up, the servers started
        at once (a volume server retries its master until it answers), then the wait until the
        master leads, lists every volume server, and the filer answers."""
        weed = weed_binary()
        replication = str(getattr(self.options, "seaweedfs_replication", "002"))
        master = node_master(MASTER_NODE)
        volumes = volume_nodes(self.options)

        def part(job: Callable[..., T], *args: Any) -> T:
            try:
                return job(*args)
            except BaseException as error:
                offer.stop.fail(error)
                raise

        def server(hostname: str) -> ContainerNode:
            node = offer.nodes[hostname].result()
            offer.stop.check(f"SeaweedFS on {hostname}")
            install_weed(node, weed)
            if hostname == MASTER_NODE:
                start_master(node, replication)
            else:  # (one that finds no master retries only seconds later: see backends.seaweedfs.lab)
                proc.wait_for(lambda: leads(master, node), what=f"the SeaweedFS master, from {hostname}",
                              timeout=offer.timeout, interval=0.1, alive=offer.stop.why)
                start_volume(node, master)
            return node

        def client(started: Future[ContainerNode]) -> None:
            node = started.result()
            offer.stop.check(f"SeaweedFS's client on {node.label}")
            install_weed(node, weed)

        with ThreadPoolExecutor(max_workers=1 + len(volumes) + len(offer.clients)) as pool:
            servers = {h: pool.submit(part, server, h) for h in [MASTER_NODE, *volumes]}
            for started in offer.clients:
                pool.submit(part, client, started)
        if offer.stop.first is not None:  # (every part has ended; the first error is the bring-up's)
            raise offer.stop.first
        offer.phase(f"weed in {len(servers) + len(offer.clients)} nodes, its servers started")
        facts: dict[str, Any] = {"master": master, "filer": f"{MASTER_NODE}:{NODE_PORTS['filer']}",
                                 "nodes": volumes, "replication": replication}
        head = servers[MASTER_NODE].result()
        proc.wait_for(lambda: health(facts, lambda _: head), interval=0.25, timeout=offer.timeout,
                      what=f"the SeaweedFS master leading, {len(volumes)} volume servers registered and the filer "
                           "answering", alive=offer.stop.why)
        facts["version"] = version_of(head.exec(WEED_IN_NODE, "version", timeout=30))
        offer.phase(f"{len(volumes)} volume servers registered, filer answers")
        return facts

    def container_service(self, facts: dict[str, Any], phases: dict[str, float]) -> SeaweedService:
        """The lab as the client nodes reach it: by the nodes' host names."""
        nodes = list(facts.get("nodes") or [])
        return SeaweedService(master=str(facts["master"]), filer=str(facts["filer"]),
                              replication=str(facts.get("replication") or ""), volume_servers=len(nodes),
                              version=str(facts.get("version") or ""), log_dir=f"{DATA}/log in each node",
                              phases=dict(phases), storage_nodes=len(nodes), weed=WEED_IN_NODE,
                              settings={"volumeSizeLimitMB": str(VOLUME_SIZE_MB)})

    def noticed(self, facts: dict[str, Any], down: str,
                nodes: Callable[[str], ContainerNode]) -> tuple[bool | None, str]:
        """Whether the master no longer lists the volume server of node ``down`` (a killed one it
        drops at once: its gRPC stream breaks; a paused one when its heartbeats stop); with no
        node named (''), whether it lacks any of the lab's."""
        if down == MASTER_NODE:
            return None, "the SeaweedFS master is the node that is down: no other node can tell"
        try:
            top = listed(facts, nodes)
        except DfsbenchError as exc:
            return None, exc.message
        urls = {n: f"{n}:{NODE_PORTS['volume']}" for n in facts.get("nodes") or []}
        return shown_down(top, urls, down), f"the master lists {len(top.servers)} volume servers: " + (", ".join(top.servers) or "none")

    def restart(self, facts: dict[str, Any], node: ContainerNode, whole: bool,
                nodes: Callable[[str], ContainerNode]) -> None:
        """The servers of a node started again (the master's node: the master and the filer; a
        volume node: its volume server, on the volumes it kept), returning once they run — as
        the other systems' restarts do: the time until the master lists every volume server
        again is the recovery the fault table measures (health), not part of the restore."""
        if node.hostname == MASTER_NODE:
            start_master(node, str(facts.get("replication") or "002"))
            wait_running(node, {"weed": 2}, RESTORE_TIMEOUT_S)  # (the master and the filer)
            return
        start_volume(node, str(facts["master"]))
        wait_running(node, {"weed": 1}, RESTORE_TIMEOUT_S)

    def container_health(self, facts: dict[str, Any], node: Callable[[str], ContainerNode]) -> tuple[bool, str]:
        return health(facts, node)

    def data_process(self) -> str:
        return "weed volume"

    def kill_data(self, node: ContainerNode) -> None:
        kill_volume(node)
