"""SeaweedFS in the local lab: a master, ``seaweedfs_volume_servers`` volume servers and a
filer as processes of this host under the lab's directory for SeaweedFS, every one on
127.0.0.1 at ports picked free, in a working directory of its own (with empty configuration
files of its own: see :data:`backends.seaweedfs.weed.OWN_CONFIG`), its output in ``log/``;
each in the ledger the moment it exists, stopped in the order filer, volume servers, master."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import Field, model_validator

from backends.seaweedfs.weed import (OWN_CONFIG, REPLICATION_HELP, VOLUME_SIZE_MB, Address, Replication,
                                     ReplicationText, SeaweedService, Topology, filer_argv, filer_config, get_json, leader, master_argv,
                                     read_health, volume_argv)
from harness.api.contracts import Options
from harness.api.daemons import Daemons, free_ports
from harness.api.systems import Processes
from harness.errors import DfsbenchError
from harness.system import proc

# seconds a process gets after SIGTERM: the filer never ends its graceful stop (see
# backends.seaweedfs.weed), a volume server started with -preStopSeconds=0 stops at once
GRACE = {"filer": 1.0, "volume": 5.0, "master": 5.0}


class SeaweedLocalOptions(Options):
    seaweedfs_volume_servers: int = Field(3, ge=1, le=12, description="SeaweedFS volume servers of the local lab")
    seaweedfs_replication: ReplicationText = Field("002", description="the lab's default replication: "
                                                + REPLICATION_HELP)

    @model_validator(mode="after")
    def _seaweedfs_sizes(self) -> SeaweedLocalOptions:
        misfit = Replication(self.seaweedfs_replication).misfit(self.seaweedfs_volume_servers)
        if misfit:
            raise ValueError(f"seaweedfs_replication: {misfit}; give more seaweedfs_volume_servers or fewer copies")
        return self


class LocalLab:
    """Brings up SeaweedFS under ``offer.root``: a master, ``servers`` volume servers, a
    filer, all on 127.0.0.1, each process in the ledger the moment it exists."""

    def __init__(self, weed: str, offer: Processes, servers: int, replication: str) -> None:
        self.weed, self.offer, self.servers, self.replication = weed, offer, servers, replication
        self.root = offer.root
        self.log_dir = self.root / "log"
        self.daemons = Daemons(offer.ledger)
        self.phases: dict[str, float] = {}
        self._t0 = time.monotonic()

    @staticmethod
    def socket(root: Path) -> Path:
        """The lab's one unix socket under ``root`` (a path is at most 107 bytes): the filer's."""
        return root / "run" / "filer.sock"

    def phase(self, name: str) -> None:
        self.phases[name] = round(time.monotonic() - self._t0, 2)
        self.offer.note(f"SeaweedFS: {name} at {self.phases[name]:.1f} s")

    def launch(self, name: str, argv: list[str], cwd: Path, kind: str, stage: int,
               config: dict[str, str] | None = None, node: str | None = None) -> None:
        """``argv`` started in ``cwd`` with its own configuration files (empty, or ``config``)."""
        cwd.mkdir(parents=True, exist_ok=True)
        for file, text in {**dict.fromkeys(OWN_CONFIG, ""), **(config or {})}.items():
            (cwd / file).write_text(text)
        self.daemons.launch(f"weed {name}", argv, self.log_dir / f"{name}.log", cwd=cwd, grace=GRACE[kind],
                            stage=stage, node=node)

    def died(self) -> str | None:
        return self.daemons.died()

    def up(self) -> SeaweedService:
        mp, mg, fp, fg, *volume_ports = free_ports(4 + 2 * self.servers)
        master = str(Address("127.0.0.1", mp, mg))
        filer = str(Address("127.0.0.1", fp, fg))
        self.socket(self.root).parent.mkdir(parents=True, exist_ok=True)
        # stop order: the filer (stage 0), the volume servers (1), the master they report to (2)
        self.launch("master", master_argv(self.weed, "127.0.0.1", mp, mg, str(self.root / "master"),
                                          self.replication), self.root / "master", "master", 2)
        # (a volume server that finds no master retries only seconds later: measured, the lab was
        # up in 7.6 s where it was up in 0.6 s when the master answered first)
        proc.wait_for(lambda: (bool(leader(get_json(f"http://{Address.parse(master).http}/cluster/status"))),
                               "no leader yet"), what="the SeaweedFS master to lead", timeout=self.offer.timeout,
                      interval=0.05, alive=self.died, log=self.log_dir / "master.log")
        self.phase("master leads")
        volumes = [self.root / "volumes" / f"v{i + 1}" for i in range(self.servers)]
        for i, directory in enumerate(volumes):
            port, grpc = volume_ports[2 * i], volume_ports[2 * i + 1]
            self.launch(f"volume{i + 1}", volume_argv(self.weed, "127.0.0.1", port, grpc, str(directory), master),
                        directory, "volume", 1, node=f"volume{i + 1}")
        store = self.root / "filer" / "store"
        self.launch("filer", filer_argv(self.weed, "127.0.0.1", fp, fg, str(store), str(self.socket(self.root)),
                                        master), self.root / "filer", "filer", 0,
                    {"filer.toml": filer_config(str(store))})
        self.phase("volume servers and filer started")
        proc.wait_for(lambda: read_health(master, filer, self.servers), timeout=self.offer.timeout, interval=0.2,
                      what=f"the SeaweedFS master leading, {self.servers} volume servers registered and the filer "
                           "answering", alive=self.died, log=self.log_dir / "master.log")
        self.phase(f"{self.servers} volume servers registered, filer answers")
        version = Topology.of(get_json(f"http://{Address.parse(master).http}/dir/status")).version
        return SeaweedService(master=master, filer=filer, replication=self.replication,
                              volume_servers=self.servers, version=version, log_dir=str(self.log_dir),
                              phases=self.phases, backing=str(self.root / "volumes"), storage_nodes=1,
                              weed=self.weed, volume_dirs=[str(d) for d in volumes],
                              settings={"volumeSizeLimitMB": str(VOLUME_SIZE_MB)})
