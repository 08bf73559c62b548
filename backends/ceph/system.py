"""Ceph as a storage system of dfsbench's labs and sites: a monitor, a manager, an MDS and
OSDs as processes of this host (``backends.ceph.lab``), on the container lab's nodes, a
monitor node and OSD nodes (``backends.ceph.containers``), or a cluster that exists
(``backends.ceph.site``). Its OSDs make the copies: a client sends each byte once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from backends.ceph import client as ceph_client
from backends.ceph.containers import CephContainers, osds_down
from backends.ceph.client import CephCli, CephService, ErasureCode, FailureDomains
from backends.ceph.lab import CephLab, MonSession, longest_socket
from backends.ceph.site import CephAccessSetup, CephSpec
from harness.api.contracts import Backend, Options
from harness.api.systems import CONTRACT, LocalFaults, OnSite, Placement, Processes, Refusal, Room, SiteHosts, System
from harness.system.hosts import Host
from harness.units import size


class CephLocalOptions(Options):
    ceph_osds: int = Field(3, ge=1, le=12, description="OSD processes, each on a sparse file of its own")
    ceph_replicas: int = Field(3, ge=1, le=12, description="pool size: copies of each object, each on another OSD")
    ceph_osd_size_gib: int = Field(16, ge=2, le=64 << 10, description="sparse file size of each OSD "
                                   "(at most 64 TiB)")

    @model_validator(mode="after")
    def _ceph_sizes(self) -> CephLocalOptions:
        """A pool of more copies than OSDs would never become healthy."""
        if self.ceph_replicas > self.ceph_osds:
            raise ValueError(f"ceph_replicas: {self.ceph_replicas} copies need as many OSDs (each copy on an OSD "
                             f"of its own), and ceph_osds is {self.ceph_osds}")
        return self


class Ceph(System, LocalFaults, CephContainers, OnSite):
    local_gateways = ("rgw",)  # (its S3 gateway, where an attachment runs one: backends.ceph.rgw)
    name = "ceph"
    display = "Ceph"
    contract = CONTRACT
    client = "ceph-fuse, librados, librbd"
    Service = CephService
    packages = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-common", "ceph-fuse", "radosgw")
    LocalOptions = CephLocalOptions
    Site = CephSpec

    # ---- every environment

    def refusal(self, backend: Backend, index: int, where: str) -> Refusal | None:
        """A pool of more copies than the lab has failure domains (OSDs in the local lab, OSD
        nodes in the container lab), or an erasure code of more chunks than there are."""
        o = self.options
        local = where == "local"
        if local:
            count, what, key = o.ceph_osds, "OSDs", "ceph_osds"
            domains = FailureDomains.over(1, o.ceph_osds)  # (all on this host: the domain is the OSD)
        else:
            count, what, key = o.ceph_osd_nodes, "OSD nodes", "ceph_osd_nodes"
            domains = FailureDomains.over(o.ceph_osd_nodes, o.ceph_osd_nodes * o.osds_per_node)
        lab = "the local lab" if local else "the container lab"
        copies = getattr(backend.options, "replicas", None)
        if isinstance(copies, int) and copies > count:
            each = "an OSD" if local else "a node"
            return Refusal(f"backends[{index}].options.replicas",
                           f"a pool of {copies} copies needs as many {what} (each copy on {each} of its own), "
                           f"and {lab} has {count}: it would never be healthy",
                           f"give replicas at most {count}, or the lab more {what} (environment.options.{key})")
        code = getattr(backend.options, "ec", None)
        if isinstance(code, ErasureCode):
            refused = domains.refusal(code)
            if refused:
                return Refusal(f"backends[{index}].options.ec", f"{refused} in {lab}",
                               f"give k + m at most {domains.count}, or the lab more {what} "
                               f"(environment.options.{key})")
        return None

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        return ceph_client.placement(description)

    @classmethod
    def health_of(cls, service: Any, via: Host | None) -> tuple[bool, str]:
        if via is None:  # (this host's lab: through one monitor session)
            with MonSession(Path(service.conf), Path(service.keyring), Path(service.log_dir) / "session.log",
                            connect_timeout=10) as mon:
                return ceph_client.health(mon.command("health", detail="detail"))
        return ceph_client.health(CephCli(service, host=via).json("health", "detail"))

    # ---- the local lab

    def socket_path(self, root: Path) -> Path | None:
        return longest_socket(root, self.options.ceph_osds)

    def copies(self, backend: Backend) -> float:
        code = getattr(backend.options, "ec", None)
        if isinstance(code, ErasureCode):
            return code.width / code.k
        return float(getattr(backend.options, "replicas", None) or self.options.ceph_replicas)

    def room(self, backend: Backend, free: int, place: Path) -> Room:
        o = self.options
        osds = o.ceph_osds * (o.ceph_osd_size_gib << 30)
        copies = self.copies(backend)
        code = getattr(backend.options, "ec", None)
        kept = (f"erasure code {code.k}+{code.m}: {copies:g} bytes kept per byte written"
                if isinstance(code, ErasureCode) else f"{copies:g} copies")
        return Room(min(osds, free) / copies, f"{o.ceph_osds} OSDs of {o.ceph_osd_size_gib} GiB and {size(free)} "
                    f"free under {place}, {kept}", "give the workload smaller sizes, or the lab larger OSDs "
                    "(ceph_osd_size_gib) or more room under its lab_dir")

    def start_processes(self, offer: Processes) -> CephService:
        o = self.options
        return CephLab(offer.root, offer.ledger, osds=o.ceph_osds, replicas=o.ceph_replicas,
                       osd_size=o.ceph_osd_size_gib << 30, ready_timeout=offer.timeout).up()

    def local_nodes(self, service: Any) -> list[str]:
        """Its OSDs, each a process of this host ('osd.0', …), started again as they were."""
        return [f"osd.{i}" for i in range(service.osds)]

    def local_noticed(self, service: Any, down: str) -> tuple[bool | None, str]:
        """An OSD marked down in the monitor's OSD map."""
        with MonSession(Path(service.conf), Path(service.keyring), Path(service.log_dir) / "session.log",
                        connect_timeout=10) as mon:
            said = mon.command("osd stat", check=False)
        return osds_down(said if isinstance(said, str) else json.dumps(said))

    # ---- an existing site

    def find_on_site(self, spec: Any, offer: SiteHosts) -> CephService:
        return CephAccessSetup(spec, offer.hosts, offer.ledger, offer.private).service()

    def said(self, service: Any, via: Host | None) -> str:
        health = (service.cluster or {}).get("health", "health not known")
        return f"Ceph {service.version}: {service.osds} OSDs, {health}"


