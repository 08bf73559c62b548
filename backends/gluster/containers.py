"""GlusterFS in the container lab: ``gluster_nodes`` nodes, one glusterd each started the
moment its node is up, their bricks on the node's Docker volume (the container root is
fuse-overlayfs, which Gluster refuses and which is 2× slower), the peers probed and one
volume made and started; and what a fault does to them: a brick process killed, a node
brought back (its glusterd started again, the bricks force-started), what the volume says
while a node is down."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

from pydantic import Field, model_validator

from backends.gluster import client as gluster_client
from backends.gluster.client import HONEST_OPTIONS, GlusterCli, GlusterService, Layout, options_for
from harness.api.contracts import Options
from harness.api.systems import ContainerFaults, ContainerNode, Containers, NodeWish, wait_running
from harness.errors import DfsbenchError
from harness.system import proc

VOLUME = "dfsbench"
BRICKS = "/bricks"
# glusterd runs geo-replication's gsyncd (Python) six times as it starts, 3 s of CPU a node
# here; the lab has no use for geo-replication, and glusterd does without it where gsyncd is
# not installed ("geo-replication module not installed"): so a node's gsyncd is put aside
# before its glusterd starts (in the node only; GLUSTERD follows as "$@")
WITHOUT_GSYNCD = ('for f in /usr/lib/*/glusterfs/gsyncd /usr/libexec/glusterfs/gsyncd; do '
                  'if [ -e "$f" ]; then mv "$f" "$f.off" || exit; fi; done; exec "$@"')
# how soon GlusterFS notices a node that is gone: a client gives up on a silent brick after
# 5 s (default 42 s), glusterd on a silent peer likewise — as Ceph's heartbeats, so a kill is
# noticed within seconds. And how soon it heals once the node is back: each self-heal daemon
# heals only its own node's bricks, and the pending entries are in the bricks that stayed up,
# whose daemons do not hear of the return and crawl every heal-timeout (default 600 s: a
# recovery measured here would be mostly that wait); set to 10 s, as Ceph's OSDs start
# recovery when one comes back
GLUSTER_DETECTION = {"network.ping-timeout": "5", "cluster.heal-timeout": "10"}
GLUSTERD = ["glusterd", "--xlator-option", "management.ping-timeout=5"]
RESTORE_TIMEOUT_S = 120.0


class GlusterContainerOptions(Options):
    gluster_nodes: int = Field(3, ge=1, le=12, description="storage nodes running bricks (containers gluster1, …)")
    gluster_replica: int = Field(3, ge=1, le=12, description="copies of each file (the volume's replica count), each on another node")
    gluster_layout: Literal["replicate", "distributed-replicate", "disperse"] | None = Field(
        None, description="default: replicate when all bricks form one replica set, else "
        "distributed-replicate")
    gluster_redundancy: int = Field(1, ge=1, le=6, description="disperse: bricks that may fail")
    bricks_per_node: int = Field(1, ge=1, le=4, description="bricks on each storage node")

    @model_validator(mode="after")
    def _gluster_shape(self) -> GlusterContainerOptions:
        try:
            self.layout.create_args(self.gluster_bricks)
        except DfsbenchError as exc:
            raise ValueError(f"{exc.message} ({self.gluster_nodes} nodes × {self.bricks_per_node} "
                             "bricks)") from None
        if self.layout.kind != "disperse" and self.gluster_replica > self.gluster_nodes:
            raise ValueError(f"{self.gluster_nodes} GlusterFS nodes cannot hold replica-"
                             f"{self.gluster_replica} sets on different nodes")
        return self

    @property
    def gluster_bricks(self) -> int:
        return self.gluster_nodes * self.bricks_per_node

    @property
    def layout(self) -> Layout:
        kind = self.gluster_layout or ("replicate" if self.gluster_bricks == self.gluster_replica
                                       else "distributed-replicate")
        return Layout(kind, self.gluster_replica, self.gluster_redundancy)


def node_names(options: Any) -> list[str]:
    return [f"gluster{i + 1}" for i in range(options.gluster_nodes)]


def _glusterd(offer: Containers, started: Future[ContainerNode]) -> ContainerNode:
    node = started.result()
    offer.stop.check(node.label)
    node.exec("sh", "-c", WITHOUT_GSYNCD, "sh", *GLUSTERD)
    proc.wait_for(lambda: (GlusterCli(node).answers()[0], "glusterd not answering yet"),
                  what=f"glusterd on {node.label}", timeout=offer.timeout, interval=0.1, alive=offer.stop.why)
    return node


def peers(cli: GlusterCli, want: int) -> tuple[bool, str]:
    root = cli.xml("peer", "status")
    connected = [p for p in root.findall(".//peerStatus/peer") if p.findtext("connected") == "1"]
    return len(connected) >= want, f"{len(connected)} of {want} peers connected"


def every_peer(clis: list[GlusterCli], want: int) -> tuple[bool, str]:
    """Whether each node sees ``want`` peers connected (what the first that does not, says)."""
    for cli in clis:
        ok, said = peers(cli, want)
        if not ok:
            return False, f"{cli.host.label}: {said}"
    return True, f"each node sees {want} peers connected"


# ---------------------------------------------------------------- health and faults


def started_volumes(facts: dict[str, Any], cli: GlusterCli) -> list[gluster_client.VolumeShape]:
    """The started volumes of the lab's glusterds: its own, and any volume a backend made
    for its attachment (a disperse volume of its own), whose bricks a fault takes too."""
    found = [v for v in gluster_client.volumes(cli.xml("volume", "info")) if v.started]
    return found or [gluster_client.VolumeShape(facts["volume"], facts.get("volume_type", ""),
                                                len(facts.get("bricks", facts["nodes"])), facts.get("replica"), True)]


def each_volume(facts: dict[str, Any], cli: GlusterCli,
                ask: Callable[[gluster_client.VolumeShape], tuple[bool, str]],
                want: Callable[[list[bool]], bool]) -> tuple[bool, str]:
    """``ask`` of every started volume: ``want`` of their answers, and what each said
    (the volume's name before it where there are several)."""
    said = [(v.name, *ask(v)) for v in started_volumes(facts, cli)]
    text = said[0][2] if len(said) == 1 else "; ".join(f"{name}: {text}" for name, _, text in said)
    return want([ok for _, ok, _ in said]), text


def ask_any(facts: dict[str, Any], nodes: Callable[[str], ContainerNode],
            ask: Callable[[GlusterCli], tuple[Any, str]], besides: str = "") -> tuple[Any, str]:
    """Ask the first GlusterFS node (other than ``besides``) whose glusterd answers."""
    said = "no GlusterFS node to ask"
    for hostname in facts["nodes"]:
        if hostname == besides:
            continue
        try:
            return ask(GlusterCli(nodes(hostname)))
        except DfsbenchError as exc:  # (its glusterd not answering: the next one)
            said = f"{hostname}: {exc.message}"
    raise DfsbenchError(f"no GlusterFS node answered ({said})")


def bricks_offline(cli: GlusterCli, volume: str, bricks: int) -> tuple[bool, str]:
    online = gluster_client.bricks_online(cli.xml("volume", "status", volume))
    return online < bricks, f"{online} of {bricks} bricks online"


class GlusterContainers(ContainerFaults):
    """GlusterFS's part in the container lab (a capability of :class:`backends.gluster.system.Gluster`):
    its nodes, their bring-up, the volume its clients reach, its health, and its faults."""

    ContainerOptions = GlusterContainerOptions
    options: Any

    def container_nodes(self) -> list[NodeWish]:
        return [NodeWish(name, True, BRICKS) for name in node_names(self.options)]

    def start_containers(self, offer: Containers) -> dict[str, Any]:
        """glusterd on each node as it comes up, then the peers, the volume, its options, and the
        wait for every brick online."""
        names = list(offer.nodes)
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            started = [pool.submit(_glusterd, offer, f) for f in offer.nodes.values()]
            nodes = [f.result() for f in started]
        offer.phase("glusterd running on every node")
        offer.stop.check("GlusterFS's bring-up")
        cli = GlusterCli(nodes[0])
        for peer in names[1:]:
            cli("peer", "probe", peer)
        # (as every node sees it: a volume's staging runs on every peer, and one that has not yet
        # heard of another fails it — "Staging failed on gluster2. Error: Host gluster3 not connected")
        clis = [GlusterCli(n) for n in nodes]
        proc.wait_for(lambda: every_peer(clis, len(names) - 1), what="every GlusterFS peer connected, as each node sees it",
                      timeout=offer.timeout, interval=0.2, alive=offer.stop.why)
        layout = self.options.layout
        # node-major order: consecutive bricks (a replica set) are on different nodes
        bricks = [f"{n}:{BRICKS}/b{b}" for b in range(self.options.bricks_per_node) for n in names]
        cli("volume", "create", VOLUME, *layout.create_args(len(bricks)), "transport", "tcp", *bricks, "force")
        # (every option in one 'volume set': one transaction over the peers, not one each)
        volume_options = options_for(layout, {**HONEST_OPTIONS, **GLUSTER_DETECTION})
        cli("volume", "set", VOLUME, *(word for pair in volume_options.items() for word in pair))
        cli("volume", "start", VOLUME)
        proc.wait_for(lambda: gluster_client.health(cli, VOLUME, len(bricks), layout.keeps_copies),
                      what=f"all {len(bricks)} bricks of {VOLUME} online, nothing to heal",
                      timeout=offer.timeout, interval=0.25, alive=offer.stop.why)
        offer.phase(f"volume {VOLUME} ({layout.kind}, {len(bricks)} bricks) started")
        return {"nodes": names, "volume": VOLUME, "bricks": bricks, "bricks_per_node": self.options.bricks_per_node,
                "volume_type": layout.kind, "redundancy": layout.redundancy if layout.kind == "disperse" else None,
                "replica": self.options.gluster_replica if layout.kind != "disperse" else None,
                "gluster_version": nodes[0].exec("glusterfs", "--version").split()[1]}

    def container_service(self, facts: dict[str, Any], phases: dict[str, float]) -> GlusterService:
        """The volume as the client nodes reach it: served by the first node."""
        return GlusterService(
            host=facts["nodes"][0], volume=facts["volume"], volume_type=facts["volume_type"],
            replica=facts["replica"], bricks=list(facts["bricks"]), socket="",
            version=facts["gluster_version"], log_dir="", phases=phases,
            volume_options=options_for(Layout(facts["volume_type"]), {**HONEST_OPTIONS, **GLUSTER_DETECTION}),
            redundancy=facts.get("redundancy"), brick_root=BRICKS)

    def container_health(self, facts: dict[str, Any], node: Callable[[str], ContainerNode]) -> tuple[bool, str]:
        return ask_any(facts, node, lambda cli: each_volume(
            facts, cli, lambda v: gluster_client.health(cli, v.name, v.bricks, v.keeps_copies), all))

    def noticed(self, facts: dict[str, Any], down: str,
                nodes: Callable[[str], ContainerNode]) -> tuple[bool | None, str]:
        """A brick offline in ``volume status``, asked of a node that is not the one down."""
        try:
            return ask_any(facts, nodes, lambda cli: each_volume(
                facts, cli, lambda v: bricks_offline(cli, v.name, v.bricks), any), besides=down)
        except DfsbenchError as exc:
            return None, exc.message

    def restart(self, facts: dict[str, Any], node: ContainerNode, whole: bool,
                nodes: Callable[[str], ContainerNode]) -> None:
        """glusterd started again on a restarted node, and the bricks not running force-started
        through a node that stayed up; returns once the node runs its bricks again."""
        if whole:
            # a restarted container keeps the pid files of the daemons that were killed, and its
            # new processes reuse low pids: glusterd would take a brick whose stale pid now names
            # another process for running, and not start it
            node.exec("sh", "-c", "find /var/run/gluster /var/lib/glusterd -name '*.pid' -delete")
            node.exec(*GLUSTERD)
        # (bricks of a started volume that are not running are started; the others stay)
        live = [n for n in facts["nodes"] if n != node.hostname] or facts["nodes"]

        def force_start() -> tuple[bool, str]:
            try:
                cli = GlusterCli(nodes(live[0]))
                for volume in started_volumes(facts, cli):  # (the lab's, and any a backend made for itself)
                    cli("volume", "start", volume.name, "force")
            except DfsbenchError as exc:  # glusterd of the restarted node not answering yet
                return False, exc.message
            return True, "started"

        proc.wait_for(force_start, what="the GlusterFS bricks to be started again", timeout=RESTORE_TIMEOUT_S,
                      interval=2)
        wait_running(node, {"glusterfsd": int(facts.get("bricks_per_node", 1))}, RESTORE_TIMEOUT_S)

    def data_process(self) -> str:
        return "glusterfsd"
