"""SeaweedFS as a storage system of dfsbench (entry point ``dfsbench.systems``: seaweedfs):
a master, volume servers that hold the data, and a filer that keeps the file system's
metadata; clients mount the filer with ``weed mount`` (FUSE). On the local lab as processes
of this host (``backends.seaweedfs.lab``), on the container lab's nodes
(``backends.seaweedfs.containers``), or found on a site (``backends.seaweedfs.site``).

Where the copies are made: a SeaweedFS client sends each byte once, to the volume server the
master assigned; that server sends it on to the other replicas (measured:
:data:`backends.seaweedfs.weed.COPIES_MEASURED`). Live writes are only ever replicated:
SeaweedFS erasure-codes a volume once it is full and sealed, offline (``ec.encode`` in
``weed shell``), so a backend that asks for an erasure code is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from backends.seaweedfs import site
from backends.seaweedfs.containers import SeaweedContainers
from backends.seaweedfs.lab import LocalLab, SeaweedLocalOptions
from backends.seaweedfs.weed import (REPLICATION_PATTERN, Address, Replication, SeaweedService, Topology, get_json,
                                     read_health, weed_binary)
from harness.errors import DfsbenchError
from harness.api.contracts import Backend
from harness.api.systems import (CONTRACT, LocalFaults, OnSite, Placement, Processes, Refusal, SiteHosts, System)
from harness.system.hosts import Host


class SeaweedFS(System, LocalFaults, SeaweedContainers, OnSite):
    local_gateways = ("s3",)  # (its S3 gateway, where an attachment runs one: backends.seaweedfs.s3)
    name = "seaweedfs"
    display = "SeaweedFS"
    contract = CONTRACT
    client = "weed mount (FUSE)"
    Service = SeaweedService
    packages = ("fuse3",)  # (weed itself is one static binary, copied in from this host)
    LocalOptions = SeaweedLocalOptions
    Site = site.SeaweedSite

    # the key that sizes each lab's volume servers
    sizing: ClassVar[dict[str, str]] = {"local": "seaweedfs_volume_servers", "docker": "seaweedfs_volume_nodes"}

    # ---- every environment

    def lab_replication(self) -> str:
        """The lab's default replication ('' : not a lab's options)."""
        return str(getattr(self.options, "seaweedfs_replication", "") or "")

    def replication_of(self, backend: Backend) -> str:
        """What ``backend`` writes with: its own replication, else the lab's default."""
        return str(getattr(backend.options, "replication", None) or self.lab_replication())

    def refusal(self, backend: Backend, index: int, where: str) -> Refusal | None:
        """An erasure code (anywhere); a replication the lab's volume servers, all on one rack,
        cannot hold."""
        if getattr(backend.options, "ec", None) is not None:
            return Refusal(f"backends[{index}].options.ec",
                           "SeaweedFS writes every live byte to replicas: it erasure-codes a volume only once it "
                           "is full and sealed, offline ('ec.encode' in 'weed shell'), so no write through a "
                           "mount is erasure-coded and dfsbench cannot measure one",
                           "leave out 'ec', and compare replications instead (replication: '000', '001', '002')")
        key = self.sizing.get(where)
        servers = getattr(self.options, key, None) if key else None
        chosen = self.replication_of(backend)
        if not isinstance(servers, int) or not chosen:
            return None
        misfit = Replication(chosen).misfit(servers)
        if not misfit:
            return None
        own = getattr(backend.options, "replication", None) is not None
        return Refusal(f"backends[{index}].options.replication" if own else f"environment.options.{key}",
                       misfit, f"give a replication of at most {servers} copies on one rack (e.g. "
                       f"'00{min(servers - 1, 9)}'), or the lab more volume servers ({key})")

    @classmethod
    def health_of(cls, service: Any, via: Host | None) -> tuple[bool, str]:
        assert isinstance(service, SeaweedService)
        return read_health(service.master, service.filer, service.volume_servers, via)

    def said(self, service: Any, via: Host | None) -> str:
        assert isinstance(service, SeaweedService)
        head = f"{self.display} {service.version}" + (f" (replication {service.replication})"
                                                      if service.replication else "")
        if via is not None:  # (what its master says: the leader, the servers, writable volumes, the filer)
            return f"{head}: {self.health_of(service, via)[1]}"
        return f"{head}: {service.volume_servers} volume servers"

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """The client sends each byte once; the volume server the master assigned sends it to
        the other replicas (measured: :data:`backends.seaweedfs.weed.COPIES_MEASURED`), so the
        storage nodes take in what they keep.

        The ceiling this gives is an upper bound, not a forecast: the server that takes a
        write sends both other copies itself, and while the writes go to one volume (a young
        lab's only writable one) its link out carries two bytes per byte written. On the
        container lab's 1 Gbit links (replication 002, one client writing 256 MiB) that node
        sent 52 MB/s while the client sent 23 MB/s and each node took in 21 MB/s, averaged
        over the cell; the write ran at 51 MiB/s, 43 % of this bound and 86 % of link/2. Where
        the writes spread over volumes whose first copies are on different servers, that
        bound rises to the one here; which it is depends on how many volumes the master has
        grown, which no stored description says — so the bound kept is the one that holds
        either way."""
        copies = description.get("replicas")
        written = description.get("replication")
        if not copies and isinstance(written, str) and re.fullmatch(REPLICATION_PATTERN, written):
            copies = Replication(written).copies
        nodes = description.get("storage_nodes")
        return Placement(float(copies or 1), by_client=False,
                         storage_nodes=nodes if isinstance(nodes, int) and nodes > 0 else 0)

    # ---- the local lab

    def socket_path(self, root: Path) -> Path | None:
        return LocalLab.socket(root)

    def copies(self, backend: Backend) -> float:
        chosen = self.replication_of(backend)
        return float(Replication(chosen).copies) if chosen else 1.0

    def start_processes(self, offer: Processes) -> SeaweedService:
        return LocalLab(weed_binary(), offer, int(getattr(self.options, "seaweedfs_volume_servers", 3)),
                        self.lab_replication() or "002").up()

    def local_nodes(self, service: Any) -> list[str]:
        """Its volume servers, each a process of this host ('volume1', …), started again as they were."""
        return [f"volume{i + 1}" for i in range(service.volume_servers)]

    def local_noticed(self, service: Any, down: str) -> tuple[bool | None, str]:
        """Fewer volume servers listed by the master than the lab started (a killed one it
        drops at once: its gRPC stream breaks; a paused one when its heartbeats stop)."""
        try:
            top = Topology.of(get_json(f"http://{Address.parse(service.master).http}/dir/status"))
        except DfsbenchError as exc:
            return None, exc.message
        listed = len(top.servers)
        return listed < service.volume_servers, f"the master lists {listed} of {service.volume_servers} volume servers"

    # ---- an existing site

    def find_on_site(self, spec: Any, offer: SiteHosts) -> SeaweedService:
        assert isinstance(spec, site.SeaweedSite)
        return site.service(spec, offer)
