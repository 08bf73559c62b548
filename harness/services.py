"""What an environment hands to backends, per service: typed facts a client needs to
reach the service and that describe it. Environments produce these (the local lab, later
containers and existing clusters); backends read them. Stored as plain mappings in a lab's
ledger, and read back with :func:`service_from_dict`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class CephService:
    conf: str
    keyring: str
    mon_addr: str
    fs_name: str
    data_pool: str
    metadata_pool: str
    replicas: int
    osds: int
    version: str
    log_dir: str
    phases: dict[str, float]
    backing: str = ""  # the directory holding the OSDs' block files (the raw storage)
    client: str = "admin"
    settings: dict[str, str] | None = None  # what differs from a stock cluster
    mounted: str = ""  # already mounted there on every client host (not by dfsbench): used as it is
    cluster: dict[str, Any] | None = None  # how an existing cluster is built (status, OSD tree, pools)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def mon_host(self) -> str:
        """The monitor's host from an address like ``v2:127.0.0.1:3300``."""
        return self.mon_addr.removeprefix("v2:").removeprefix("v1:").rsplit(":", 1)[0].strip("[]")


@dataclass(frozen=True)
class GlusterService:
    host: str
    volume: str
    volume_type: str
    replica: int | None
    bricks: list[str]
    socket: str
    version: str
    log_dir: str
    phases: dict[str, float]
    backing: str = ""  # the directory holding the bricks (the raw storage)
    volume_options: dict[str, str] | None = None
    redundancy: int | None = None  # disperse: bricks that may fail
    mounted: str = ""  # already mounted there on every client host (not by dfsbench): used as it is
    cluster: dict[str, Any] | None = None  # how an existing volume is built (volume info)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Service = CephService | GlusterService
KINDS: dict[str, type[CephService] | type[GlusterService]] = {"ceph": CephService, "gluster": GlusterService}


def service_from_dict(name: str, data: dict[str, Any]) -> Service:
    cls = KINDS[name]
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})
