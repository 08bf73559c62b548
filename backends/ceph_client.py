"""The Ceph command-line clients as a backend sees them: the cluster's conf, keyring and
client name on every call, and the pool life cycle (create with a replica size, wait
until its placement groups are active+clean, delete)."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from harness.api.contracts import Backend, Cluster, Name, Options
from harness.api.tables import CLIENT, FS_TYPE, REPLICAS, VERSION, phrases
from harness.api.target import Access, Target
from harness.errors import BadInput, DfsbenchError
from harness.system import proc
from harness.system.hosts import LOCAL, Host
from harness.system.ledger import Ledger


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
    storage_nodes: int = 0  # hosts its OSDs are spread over, each with a link of its own (0: not known)

    @property
    def mon_host(self) -> str:
        """The monitor's host from an address like ``v2:127.0.0.1:3300``."""
        return self.mon_addr.removeprefix("v2:").removeprefix("v1:").rsplit(":", 1)[0].strip("[]")


@dataclass(frozen=True)
class CephAccess(Access):
    """How a workload reaches a ``rados`` or ``rbd`` target: the arguments of the Ceph
    command-line tools (conf, keyring, client, client settings), the environment librados
    reads inside tools that take no ``-c`` (fio's rbd engine), the pool, and for ``rbd``
    the image and its size."""

    pool: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    client: str
    image: str | None = None
    image_size: int | None = None


def health(said: Any) -> tuple[bool, str]:
    """Whether a Ceph cluster is healthy, from what it says of its health (``ceph health
    detail --format json``, the monitor's ``health`` command, or the ``health`` of ``ceph
    status``) — what a lab's status, its bring-up and a fault's recovery all read: healthy
    at HEALTH_OK, and its status with each check's message ("HEALTH_WARN OSD_DOWN: …")."""
    doc = said if isinstance(said, dict) else {}
    status = doc.get("status", "no answer")
    checks = "; ".join(f"{k}: {v.get('summary', {}).get('message', '')}"
                       for k, v in (doc.get("checks") or {}).items())
    return status == "HEALTH_OK", f"{status} {checks}".strip()


def keyring_keys(text: str) -> list[str]:
    """The ``key = …`` values of a Ceph keyring file."""
    return [m.group(1) for m in re.finditer(r"^\s*key\s*=\s*(\S+)", text, re.M)]


OSDS = ("osds", "{osds} OSDs")


class CephBackend(Backend):
    """What the backends of a Ceph cluster (CephFS, RBD, RADOS) share: the header names
    its OSDs, their number is part of the topology, and an existing cluster's pools (size,
    failure domain, type) are how it keeps the data."""

    network = True  # a Ceph client writes each byte once, to the primary OSD
    requires = frozenset({"ceph"})
    topology: ClassVar[tuple[str, ...]] = ("osds",)

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        return phrases(description, VERSION, REPLICAS, OSDS, CLIENT, FS_TYPE)

    @classmethod
    def layout(cls, description: dict[str, Any]) -> Any:
        cluster = description.get("cluster") or {}
        used = (description.get("data_pool"), description.get("pool"))
        pools = {p.get("pool"): (p.get("size"), p.get("failure_domain"), p.get("type"))
                 for p in cluster.get("pools") or [] if p.get("pool") in used}
        return pools or None


class PoolOptions(Options):
    pool: Name | None = Field(None, description="use this existing pool (never deleted) instead of "
                             "creating one")
    replicas: int | None = Field(None, ge=1, le=12, description="size of the pool dfsbench creates "
                                 "(default: the cluster's)")
    pg_num: int = Field(16, ge=1, le=4096)


class CephCli:
    """The Ceph CLIs of one client host (this machine, or a lab's client node, whose
    conf and keyring paths the service names)."""

    def __init__(self, info: CephService, settings: dict[str, str] | None = None,
                 ledger: Ledger | None = None, host: Host = LOCAL, server: Host | None = None) -> None:
        self.info = info
        self.ledger = ledger
        self.host = host
        self.server = server  # the monitor's host, where dfsbench can start a server
        self.conf, self.keyring = info.conf, info.keyring
        self.client = info.client
        self.settings = dict(settings or {})  # client-side Ceph options, e.g. rbd_cache

    @classmethod
    def of(cls, cluster: Cluster, backend: str, settings: dict[str, str] | None = None) -> CephCli:
        info = cluster.service("ceph", CephService, backend)
        return cls(info, settings, cluster.ledger, cluster.clients[0], cluster.servers.get(info.mon_host))

    def created(self, what: str, *undo: str, tool: str = "ceph") -> frozenset[str]:
        """Record a resource this client created in the ledger, with the command that
        removes it; the returned ids undo exactly it."""
        if self.ledger is None:
            raise DfsbenchError(f"cannot record {what}: this Ceph client has no ledger")
        return frozenset({self.ledger.command(self.host.wrap([tool, *self.args(), *undo]), what)})

    def remove(self, ids: frozenset[str]) -> None:
        """Undo resources recorded with :meth:`created`; a failure says what is left."""
        if self.ledger is None or not ids:
            return
        problems = self.ledger.undo(only=ids)
        if problems:
            raise DfsbenchError("; ".join(problems), hint="run 'dfsbench lab down' to retry")

    def args(self) -> list[str]:
        return ["-c", self.conf, *self._rest()]

    def _rest(self) -> list[str]:
        return ["--keyring", self.keyring, "--id", self.client,
                *[f"--{key}={value}" for key, value in self.settings.items()]]

    def env(self) -> dict[str, str]:
        """For tools that take no -c (fio's rbd engine): librados reads these."""
        return {"CEPH_CONF": self.conf, "CEPH_ARGS": " ".join(self._rest())}

    def run(self, tool: str, *args: str, timeout: float = 120) -> str:
        return self.host.run([tool, *self.args(), *args], timeout=timeout).stdout

    def json(self, *args: str) -> Any:
        return self.json_of("ceph", *args)

    def json_of(self, tool: str, *args: str) -> Any:
        """What ``tool`` (ceph, rbd, rados) prints with ``--format json``."""
        return json.loads(self.run(tool, *args, "--format", "json") or "null")

    def describe(self) -> dict[str, Any]:
        described = {"system": "ceph", "version": self.info.version, "osds": self.info.osds,
                     "cluster_settings": self.info.settings, "storage_nodes": self.info.storage_nodes}
        if self.info.cluster:
            described["cluster"] = self.info.cluster
        return described

    def target(self, kind: str, backend: str, variant: str, description: dict[str, Any],
               access: CephAccess | None, path: Path | None = None, **rest: Any) -> Target:
        """A target of this cluster: its traffic goes to the monitor's host, its storage is
        the OSDs' backing directory."""
        return Target(kind, path, backend, variant, description, access=access,
                      server_host=self.info.mon_host,
                      backing=Path(self.info.backing) if self.info.backing else None,
                      host=self.host, server=self.server, **rest)

    def access(self, pool: str, image: str | None = None, image_size: int | None = None) -> CephAccess:
        """What workloads need to reach a pool or image: ``args`` for the Ceph CLIs (rados,
        rbd), ``env`` for librados inside other tools (fio), the client name."""
        return CephAccess(pool, tuple(self.args()), tuple(self.env().items()), self.client,
                          image, image_size)


class Pool:
    """A pool a backend uses: created (and later deleted) by us unless the user named one."""

    def __init__(self, cli: CephCli, options: PoolOptions, purpose: str, application: str,
                 timeout: float = 120) -> None:
        self.cli, self.options, self.application, self.timeout = cli, options, application, timeout
        self.owned = options.pool is None
        self.name = options.pool or f"dfsbench-{purpose}-{secrets.token_hex(3)}"
        self.size = 0
        self._undo: frozenset[str] = frozenset()

    def create(self) -> None:
        o = self.options
        if not self.owned:
            pools = self.cli.json("osd", "pool", "ls")
            if self.name not in pools:
                raise BadInput(f"pool '{self.name}' does not exist in this cluster",
                                    hint=f"existing pools: {', '.join(pools) or 'none'}")
        else:
            self.cli.run("ceph", "osd", "pool", "create", self.name, str(o.pg_num), str(o.pg_num),
                         "replicated")
            self._undo = self.cli.created(f"pool {self.name}", "osd", "pool", "delete", self.name, self.name,
                                          "--yes-i-really-really-mean-it")
            try:
                if o.replicas is not None:
                    self.cli.run("ceph", "osd", "pool", "set", self.name, "size", str(o.replicas),
                                 "--yes-i-really-mean-it")
                    self.cli.run("ceph", "osd", "pool", "set", self.name, "min_size",
                                 str(max(1, o.replicas - 1)))
                self.cli.run("ceph", "osd", "pool", "application", "enable", self.name,
                             self.application)
                proc.wait_for(self.clean, what=f"pool {self.name}'s placement groups active+clean",
                              timeout=self.timeout, interval=0.5)
            except BaseException:
                self.delete()
                raise
        self.size = int(self.cli.json("osd", "pool", "get", self.name, "size")["size"])

    def clean(self) -> tuple[bool, str]:
        data = self.cli.json("pg", "ls-by-pool", self.name)
        stats = data.get("pg_stats", []) if isinstance(data, dict) else data or []
        states = [pg.get("state", "") for pg in stats]
        good = sum(1 for s in states if s == "active+clean")
        return bool(states) and good == len(states), f"{good} of {len(states)} PGs active+clean"

    def delete(self) -> None:
        if self.owned:
            self.cli.remove(self._undo)
            self._undo = frozenset()

    def describe(self) -> dict[str, Any]:
        return {"pool": self.name, "pool_size": self.size, "pool_created_by_dfsbench": self.owned,
                "pg_num": self.options.pg_num if self.owned else None}

