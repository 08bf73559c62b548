"""A toy storage system, written only for the tests against ``harness.api`` alone — the
contract of ``harness.api.systems`` and the daemons of ``harness.api.daemons`` — to prove
that a system a third party writes runs through the local lab: brought up, attached,
measured, faulted, and taken down, with no edit of dfsbench.

``toystore`` runs ``toystore_servers`` servers as processes of this host (small Python
programs that each beat a file of their own 20 times a second) beside a directory that
stands for its space; it is healthy while every server beats. Its backend ``toystorefs``
hands a directory of that space to a workload. A fault kills, stops or pauses one server;
the system notices a server whose beat is older than :data:`SILENT_S`."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.api.contracts import Backend, Cluster, Options
from harness.api.daemons import Daemons, ready
from harness.api.systems import CONTRACT, LocalFaults, Placement, Processes, System
from harness.api.target import Target
from harness.system.hosts import Host

SILENT_S = 1.0  # a server whose beat is older has stopped (it beats every 0.05 s)
SERVER = ("import os, pathlib, sys, time\n"
          "beat = pathlib.Path(sys.argv[1])\n"
          "while True:\n"  # (written aside, then renamed over: a reader never sees half a beat)
          "    beat.with_suffix('.new').write_text(str(time.time()))\n"
          "    os.replace(beat.with_suffix('.new'), beat)\n"
          "    time.sleep(0.05)\n")


@dataclass
class ToyStoreService:
    """What its backend gets: where its space and servers are, and how many servers."""

    root: str
    servers: int
    version: str = "0.1"


class ToyStoreSizes(Options):
    toystore_servers: int = Field(3, ge=1, le=6, description="ToyStore servers of the local lab")


def beating(service: ToyStoreService) -> list[str]:
    """Its servers whose beat is fresh."""
    now, found = time.time(), []
    for i in range(service.servers):
        try:
            beat = float((Path(service.root) / f"server{i + 1}" / "beat").read_text() or 0)
        except (OSError, ValueError):
            continue
        if now - beat < SILENT_S:
            found.append(f"server{i + 1}")
    return found


class ToyStore(System, LocalFaults):
    name = "toystore"
    display = "ToyStore"
    contract = CONTRACT
    client = "a directory of this host"
    Service = ToyStoreService
    LocalOptions = ToyStoreSizes

    @classmethod
    def health_of(cls, service: Any, via: Host | None) -> tuple[bool, str]:
        alive = beating(service)
        return len(alive) == service.servers, f"{len(alive)} of {service.servers} servers beating"

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        return Placement.described(description)

    def start_processes(self, offer: Processes) -> ToyStoreService:
        servers = self.options.toystore_servers
        daemons = Daemons(offer.ledger)
        for i in range(servers):
            home = offer.root / f"server{i + 1}"
            home.mkdir(parents=True)
            daemons.launch(f"toystore server{i + 1}", [sys.executable, "-c", SERVER, home / "beat"],
                           offer.root / "log" / f"server{i + 1}.log", grace=1, node=f"server{i + 1}")
        (offer.root / "space").mkdir()
        service = ToyStoreService(str(offer.root), servers)
        ready(lambda: self.health_of(service, None), what="every ToyStore server to beat", timeout=offer.timeout,
              interval=0.05, alive=daemons.died)
        return service

    def local_nodes(self, service: Any) -> list[str]:
        return [f"server{i + 1}" for i in range(service.servers)]

    def local_noticed(self, service: Any, down: str) -> tuple[bool | None, str]:
        alive = beating(service)
        gone = down not in alive if down else len(alive) < service.servers
        return gone, f"{len(alive)} of {service.servers} servers beating"


class ToyStoreFS(Backend):
    name = "toystorefs"
    display = "ToyStoreFS"
    requires = frozenset({"toystore"})

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        service = cluster.service("toystore", ToyStoreService, self.name)
        where = Path(service.root) / "space" / f"{self.variant}-{os.getpid()}-{time.monotonic_ns()}"
        where.mkdir()
        return Target("path", where, self.name, self.variant,
                      {"system": "toystore", "version": service.version, "storage_nodes": 1},
                      detach=where.rmdir)
