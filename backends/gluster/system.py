"""GlusterFS as a storage system of dfsbench's labs and sites: glusterd and one volume as
processes of this host (``backends.gluster.lab``), a glusterd on each of the container
lab's GlusterFS nodes (``backends.gluster.containers``), or a volume that exists
(``backends.gluster.site``). Its FUSE client makes the copies: it sends each one itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from backends.gluster import client as gluster_client
from backends.gluster.containers import GlusterContainers, bricks_offline
from backends.gluster.client import GlusterCli, GlusterService, copies_kept
from backends.gluster.lab import GlusterLab, longest_socket, replica_sets
from backends.gluster.site import GlusterSpec, gluster_health, gluster_service
from harness.api.contracts import Backend, Options
from harness.api.systems import (CONTRACT, LocalFaults, OnSite, Placement, Processes, Refusal, SiteHosts, System)
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger
from harness.system.hosts import Host


class GlusterLocalOptions(Options):
    gluster_bricks: int = Field(3, ge=1, le=24, description="brick processes, each on a directory of its own")
    gluster_replica: int = Field(3, ge=1, le=12, description="copies of each file (the volume's replica count)")

    @model_validator(mode="after")
    def _gluster_sets(self) -> GlusterLocalOptions:
        """What the lab's bring-up would refuse (GlusterLab), said of its keys now."""
        refused = replica_sets(self.gluster_bricks, self.gluster_replica)
        if refused:
            raise ValueError(f"gluster_bricks, gluster_replica: {refused}")
        return self


class Gluster(System, LocalFaults, GlusterContainers, OnSite):
    name = "gluster"
    display = "GlusterFS"
    contract = CONTRACT
    client = "glusterfs (FUSE)"
    Service = GlusterService
    packages = ("glusterfs-server", "glusterfs-client")
    LocalOptions = GlusterLocalOptions
    Site = GlusterSpec

    # ---- every environment

    def refusal(self, backend: Backend, index: int, where: str) -> Refusal | None:
        """A volume of the backend's own (container lab) whose sets the nodes cannot hold apart,
        each node a failure domain: a replica set wider than the nodes, or a disperse set that
        would put more of its bricks on one node than its redundancy."""
        opts = backend.options
        if where != "docker" or not getattr(opts, "own_volume", False):
            return None
        bricks, nodes = int(getattr(opts, "brick_count", 3)), self.options.gluster_nodes
        if getattr(opts, "layout", None) == "disperse":
            redundancy = int(getattr(opts, "redundancy", 1))
            per_node = -(-bricks // nodes)
            if per_node > redundancy:
                return Refusal(f"backends[{index}].options.bricks",
                               f"a disperse volume of {bricks} bricks over the lab's {nodes} GlusterFS nodes puts "
                               f"{per_node} on one node, more than its redundancy {redundancy}: that node lost "
                               "would lose the volume",
                               f"give it at most {nodes * redundancy} bricks, or the lab more GlusterFS nodes "
                               "(environment.options.gluster_nodes)")
            return None
        replica = int(getattr(opts, "replica", 3))
        if replica > nodes:
            return Refusal(f"backends[{index}].options.replica",
                           f"replica {replica} needs as many GlusterFS nodes, each copy on a node of its own, "
                           f"and the lab has {nodes}",
                           "give a smaller replica, or the lab more GlusterFS nodes (environment.options.gluster_nodes)")
        return None

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """A GlusterFS FUSE client sends every write to each replica itself (k+m over k
        fragments for disperse), so a write crosses the client's link that many times."""
        bricks, redundancy = description.get("bricks"), description.get("redundancy")
        kept = copies_kept(str(description.get("volume_type") or ""), description.get("replicas"),
                           int(bricks) if bricks else None, int(redundancy) if redundancy else None)
        return replace(Placement.described(description), copies=kept, by_client=True)

    @classmethod
    def health_of(cls, service: Any, via: Host | None) -> tuple[bool, str]:
        if via is None:  # (this host's lab: its glusterd's own socket)
            cli = GlusterCli.on_socket(Path(service.socket), Path(service.log_dir) / "cli.log")
            return gluster_client.health(cli, service.volume, len(service.bricks), service.keeps_copies)
        return gluster_health(service, via)

    # ---- the local lab

    def socket_path(self, root: Path) -> Path | None:
        return longest_socket(root)

    def copies(self, backend: Backend) -> float:
        """Of the backend's own volume where it makes one, else of the lab's."""
        opts = backend.options
        layout = getattr(opts, "layout", None)
        if not layout:
            return float(self.options.gluster_replica)
        return copies_kept(layout, getattr(opts, "replica", None) or self.options.gluster_replica,
                           int(getattr(opts, "brick_count", 3)), int(getattr(opts, "redundancy", 1)))

    def start_processes(self, offer: Processes) -> GlusterService:
        o = self.options
        return GlusterLab(offer.root, offer.ledger, bricks=o.gluster_bricks, replica=o.gluster_replica,
                          ready_timeout=offer.timeout).up()

    @staticmethod
    def _local_cli(service: Any) -> GlusterCli:
        return GlusterCli.on_socket(Path(service.socket), Path(service.log_dir) / "cli.log")

    def local_nodes(self, service: Any) -> list[str]:
        """The bricks of the lab's volume ('brick1', …): each a glusterfsd its glusterd started."""
        return [f"brick{i + 1}" for i in range(len(service.bricks))]

    def local_pids(self, service: Any, node: str, ledger: Ledger) -> list[int]:
        """The brick's process, as its glusterd says (``volume status``)."""
        path = service.bricks[self.local_nodes(service).index(node)].rsplit(":", 1)[-1]
        pid = gluster_client.brick_pids(self._local_cli(service).xml("volume", "status", service.volume)).get(path)
        return [] if pid is None else [pid]

    def local_restart(self, service: Any, node: str, ledger: Ledger, timeout: float) -> None:
        """Every started volume force-started (its bricks not running are started, the others
        stay), returning once the brick runs again, in the lab's ledger as those of its
        bring-up are (glusterd forks it)."""
        cli = self._local_cli(service)
        run_dir = Path(service.socket).parent
        # a brick's pid file still names the killed brick, and glusterd takes a live process of
        # that pid (another's, since) for the brick running, and does not start it: a pid file
        # that names no running process of the lab's ledger goes
        held = {ident.pid: ident for _, ident, alive in ledger.live_processes() if alive}
        stale = []
        for pid_file in gluster_client.pid_files(run_dir, "vols/*/*.pid"):
            said = pid_file.read_text().strip()
            ident = proc.ProcessId.of(int(said)) if said.isdigit() else None
            if ident is None or held.get(ident.pid) != ident:
                stale.append(pid_file)
                pid_file.unlink(missing_ok=True)
        for volume in gluster_client.volumes(cli.xml("volume", "info")):
            if volume.started:
                cli("volume", "start", volume.name, "force")
        proc.wait_for(lambda: (bool(self.local_pids(service, node, ledger)), "not online"),
                      what=f"GlusterFS {node} to be online again", timeout=timeout, interval=0.2)
        with ledger.the_labs():
            gluster_client.record_forked(ledger, gluster_client.pid_files(run_dir, "vols/*/*.pid")
                                         + gluster_client.pid_files(run_dir, "shd/*/*.pid"))
        # (the new one in: the entries of the bricks that are gone go)
        ledger.forget(frozenset(e["id"] for e in ledger.entries if e["kind"] == "process"
                                and e["name"] in {f"glusterfsd ({f.stem})" for f in stale}
                                and not proc.ProcessId(e["pid"], e["start"]).alive()))

    def local_noticed(self, service: Any, down: str) -> tuple[bool | None, str]:
        """A brick offline in ``volume status``."""
        try:
            return bricks_offline(self._local_cli(service), service.volume, len(service.bricks))
        except DfsbenchError as exc:
            return None, exc.message

    # ---- an existing site

    def find_on_site(self, spec: Any, offer: SiteHosts) -> GlusterService:
        return gluster_service(spec, offer.hosts)

    def said(self, service: Any, via: Host | None) -> str:
        health = self.health_of(service, via)[1] if via is not None else ""
        return (f"GlusterFS {service.version}: volume {service.volume} ({service.volume_type}, "
                f"{len(service.bricks)} bricks), {health}").rstrip(", ")
