"""The Ceph command-line clients as a backend sees them: the cluster's conf, keyring and
client name on every call, and the pool life cycle (create with a replica size, wait
until its placement groups are active+clean, delete)."""

from __future__ import annotations

import contextlib
import json
import re
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationInfo

from harness.api.contracts import Backend, Cluster, Name, Options
from harness.api.model import SITE
from harness.api.tables import CLIENT, FS_TYPE, REPLICAS, VERSION, Placement, phrases
from harness.api.target import CephAccess, Target
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
    s3: dict[str, Any] = field(default_factory=dict)  # an existing site's RGW (backends.s3gateway.found_on_site)

    @property
    def mon_host(self) -> str:
        """The monitor's host from an address like ``v2:127.0.0.1:3300``."""
        return self.mon_addr.removeprefix("v2:").removeprefix("v1:").rsplit(":", 1)[0].strip("[]")


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


def placement(description: dict[str, Any]) -> Placement:
    """A Ceph client writes each byte once, to the primary OSD (which forwards the
    replicas, or cuts the object into its chunks), so a write crosses the client's link
    once, also to an erasure-coded pool; the cluster keeps (k+m)/k bytes of each byte
    written to an erasure-coded pool, its size for a replicated one, and its nodes take
    in (2k+m-1)/k over their links: the whole byte at the primary, then the chunks it
    sends on."""
    found = Placement.described(description)
    code = description.get("erasure_code")
    if isinstance(code, dict) and code.get("k") and code.get("m"):
        k, m = int(code["k"]), int(code["m"])
        # (the primary takes the whole byte in, and sends k+m-1 chunks of 1/k on to the others)
        return replace(found, copies=(k + m) / k, taken_in=(2 * k + m - 1) / k)
    return found


class CephBackend(Backend):
    """What the backends of a Ceph cluster (CephFS, RBD, RADOS) share: the header names
    its OSDs, their number is part of the topology, and an existing cluster's pools (size,
    failure domain, type) are how it keeps the data."""

    network = True  # a Ceph client writes each byte once, to the primary OSD
    requires = frozenset({"ceph"})
    topology: ClassVar[tuple[str, ...]] = ("osds",)

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        return placement(description)

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        said = phrases(description, VERSION, REPLICAS, OSDS, CLIENT, FS_TYPE)
        code = description.get("erasure_code")
        if isinstance(code, dict) and code.get("k"):
            said = (*said[:1], f"erasure code {code['k']}+{code['m']} (failure domain {code.get('failure_domain')})",
                    *said[1:])
        return said

    @classmethod
    def layout(cls, description: dict[str, Any]) -> Any:
        cluster = description.get("cluster") or {}
        used = (description.get("data_pool"), description.get("pool"))
        pools = {p.get("pool"): (p.get("size"), p.get("failure_domain"), p.get("type"))
                 for p in cluster.get("pools") or [] if p.get("pool") in used}
        return pools or None


class PoolOptions(Options):
    pool: Name | None = Field(None, description="use this existing pool (never deleted) instead of "
                             "creating one", json_schema_extra=SITE)
    replicas: int | None = Field(None, ge=1, le=12, description="size of the pool dfsbench creates "
                                 "(default: the cluster's)")
    pg_num: int = Field(16, ge=1, le=4096, description="placement groups of the pool dfsbench creates")


class ErasureCode(Options):
    """An erasure code of a pool: every object cut into ``k`` data chunks and ``m`` coding
    chunks, each kept on a failure domain (a node) of its own, so that any ``m`` of them
    may be lost; the pool keeps (k+m)/k bytes of each byte written."""

    k: int = Field(ge=2, le=8, description="data chunks of each object")
    m: int = Field(ge=1, le=4, description="coding chunks: the nodes that may fail")

    @property
    def width(self) -> int:
        """The chunks of each object: one per failure domain."""
        return self.k + self.m


def ec_alone(code: ErasureCode | None, info: ValidationInfo) -> ErasureCode | None:
    """Refuse ``ec`` next to ``replicas`` (an erasure-coded pool has no replica size): the
    ``ec`` validator of an options model whose ``replicas`` comes before it."""
    if code is not None and info.data.get("replicas") is not None:
        raise ValueError("'ec' and 'replicas' together: an erasure-coded pool keeps k+m chunks of each "
                         "object, not replicas; leave one of them out")
    return code


EC_DESCRIPTION = ("an erasure-coded data pool of its own, e.g. {k: 2, m: 1}: k data and m coding chunks of "
                  "each object, each on a node of its own")


@dataclass(frozen=True)
class FailureDomains:
    """Where a pool's chunks can go, from the cluster's OSD tree: the host where its OSDs
    are on several hosts (each chunk on a node of its own, so a node lost loses one chunk),
    the OSD where they are all on one host (a lab on one machine: a host cannot hold k+m
    chunks apart), and how many there are of that kind."""

    kind: str
    count: int
    hosts: int
    osds: int

    @classmethod
    def of(cls, tree: Any) -> FailureDomains:
        """From ``ceph osd tree --format json``: hosts that hold OSDs, and the OSDs."""
        nodes = (tree.get("nodes") or []) if isinstance(tree, dict) else []
        osds = sum(1 for n in nodes if n.get("type") == "osd")
        hosts = sum(1 for n in nodes if n.get("type") == "host" and n.get("children"))
        return cls.over(hosts, osds)

    @classmethod
    def over(cls, hosts: int, osds: int) -> FailureDomains:
        """Those of a cluster of ``osds`` OSDs on ``hosts`` hosts (what a lab knows of
        itself before it is up)."""
        if hosts >= 2:
            return cls("host", hosts, hosts, osds)
        return cls("osd", osds, hosts, osds)

    def refusal(self, code: ErasureCode) -> str:
        """Why a code cannot be placed here ('' : it can)."""
        if code.width <= self.count:
            return ""
        where = (f"the cluster's OSDs are on {self.hosts} hosts" if self.kind == "host" else
                 f"the cluster has {self.osds} OSDs, all on one host")
        return (f"an erasure code of k={code.k} + m={code.m} puts {code.width} chunks on as many "
                f"{'nodes' if self.kind == 'host' else 'OSDs'} (its failure domain: {self.kind}), and {where}")


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

    def forget(self, ids: frozenset[str]) -> None:
        """Drop resources recorded with :meth:`created` that went some other way (with
        the pool that held them)."""
        if self.ledger is not None and ids:
            self.ledger.forget(ids)

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
        return pool_clean(self.cli, self.name)

    def delete(self) -> None:
        if self.owned:
            self.cli.remove(self._undo)
            self._undo = frozenset()

    def describe(self) -> dict[str, Any]:
        return {"pool": self.name, "pool_size": self.size, "pool_created_by_dfsbench": self.owned,
                "pg_num": self.options.pg_num if self.owned else None}



class EcPool:
    """An erasure-coded pool a backend makes for its attachment: an erasure-code profile of
    its own (named from the variant; k, m, the failure domain the cluster's OSD tree gives),
    the pool and the CRUSH rule Ceph makes with it, overwrites allowed (CephFS and RBD write
    in place), the application enabled — each in the ledger as it exists, and removed again
    (pool, rule, profile) by :meth:`delete`."""

    def __init__(self, cli: CephCli, code: ErasureCode, purpose: str, application: str, variant: str,
                 pg_num: int = 16, timeout: float = 120) -> None:
        self.cli, self.code, self.application, self.timeout = cli, code, application, timeout
        token = secrets.token_hex(3)
        self.name = f"dfsbench-{purpose}-ec-{token}"
        self.profile = f"dfsbench-{variant}-{token}"
        self.pg_num = pg_num
        self.domain = ""
        self.min_size = 0
        self._undo: frozenset[str] = frozenset()

    def create(self) -> None:
        domains = FailureDomains.of(self.cli.json("osd", "tree"))
        refused = domains.refusal(self.code)
        if refused:
            raise BadInput(refused, hint=f"give the erasure code at most {domains.count} chunks (k + m), "
                                         "or use a cluster with more storage nodes")
        self.domain = domains.kind
        k, m = self.code.k, self.code.m
        try:
            self.cli.run("ceph", "osd", "erasure-code-profile", "set", self.profile, f"k={k}", f"m={m}",
                         f"crush-failure-domain={self.domain}")
            self._undo |= self.cli.created(f"erasure-code profile {self.profile}", "osd",
                                           "erasure-code-profile", "rm", self.profile)
            self.cli.run("ceph", "osd", "pool", "create", self.name, str(self.pg_num), str(self.pg_num),
                         "erasure", self.profile)
            # (Ceph made a CRUSH rule for it, named after it, and keeps that after the pool)
            try:
                rule = str(self.cli.json("osd", "pool", "get", self.name, "crush_rule")["crush_rule"])
            except BaseException:  # (not in the ledger yet: the pool, then its rule, go now)
                with contextlib.suppress(DfsbenchError):
                    self.cli.run("ceph", "osd", "pool", "delete", self.name, self.name, "--yes-i-really-really-mean-it")
                    self.cli.run("ceph", "osd", "crush", "rule", "rm", self.name)
                raise
            self._undo |= self.cli.created(f"CRUSH rule {rule}", "osd", "crush", "rule", "rm", rule)
            self._undo |= self.cli.created(f"pool {self.name}", "osd", "pool", "delete", self.name, self.name,
                                           "--yes-i-really-really-mean-it")
            self.cli.run("ceph", "osd", "pool", "set", self.name, "allow_ec_overwrites", "true")
            self.cli.run("ceph", "osd", "pool", "application", "enable", self.name, self.application)
            proc.wait_for(lambda: pool_clean(self.cli, self.name),
                          what=f"pool {self.name}'s placement groups active+clean",
                          timeout=self.timeout, interval=0.5)
            self.min_size = int(self.cli.json("osd", "pool", "get", self.name, "min_size")["min_size"])
        except BaseException:
            self.delete()
            raise

    def delete(self) -> None:
        """The pool, its rule and its profile, newest first (the ledger's order)."""
        undo, self._undo = self._undo, frozenset()
        self.cli.remove(undo)

    def describe(self) -> dict[str, Any]:
        """What the target's topology says of the code (two runs whose codes differ are not
        comparable), and the pool and profile it made."""
        return {"erasure_code": {"k": self.code.k, "m": self.code.m, "failure_domain": self.domain,
                                 "pool_type": "erasure"},
                "ec_profile": self.profile, "ec_pool": self.name, "ec_min_size": self.min_size}


def pool_clean(cli: CephCli, pool: str) -> tuple[bool, str]:
    """Whether every placement group of a pool is active+clean, and how many are."""
    data = cli.json("pg", "ls-by-pool", pool)
    stats = data.get("pg_stats", []) if isinstance(data, dict) else data or []
    states = [pg.get("state", "") for pg in stats]
    good = sum(1 for s in states if s == "active+clean")
    return bool(states) and good == len(states), f"{good} of {len(states)} PGs active+clean"
