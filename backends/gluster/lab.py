"""A throwaway GlusterFS volume as plain processes under one directory.

glusterd runs with a private working directory (never /var/lib/glusterd), its own CLI
socket, and listens on its own loopback address: bricks and clients always reach glusterd
on the default port 24007 of the host named in the brick, so a free 127.x.y.z address is
what keeps this lab apart from any other glusterd on the host. Gluster refuses 127.0.0.1
itself as a brick host.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from backends.gluster.client import GlusterCli, GlusterService, Layout, Volume, gluster_version
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

GLUSTERD_PORT = 24007


def pick_loopback_address(rng: random.Random | None = None) -> str:
    """A 127.x.y.z address (not 127.0.0.1) on which the glusterd port is free."""
    rng = rng or random.Random()
    for _ in range(50):
        addr = f"127.{rng.randint(1, 254)}.{rng.randint(0, 254)}.{rng.randint(2, 254)}"
        if proc.bindable(addr, GLUSTERD_PORT):
            return addr
    raise DfsbenchError("no free loopback address for glusterd was found in 50 tries")


def replica_sets(bricks: int, replica: int) -> str:
    """Why ``bricks`` bricks make no volume of replica-``replica`` sets ('': they do)."""
    if bricks % replica:
        return f"{bricks} bricks cannot form replica-{replica} sets: give a number of bricks that is a multiple of the replica count"
    return ""


def longest_socket(root: Path) -> Path:
    """The longest unix socket path a lab under ``root`` makes: glusterd's own (the bricks'
    and its daemons' go in /var/run/gluster, named by a hash, whatever the run directory)."""
    return root / "run" / "glusterd.socket"


class GlusterLab:
    """Brings up glusterd and one volume under ``root``; resources go into ``ledger``."""

    def __init__(self, root: Path, ledger: Ledger, *, bricks: int = 3, replica: int = 3,
                 volume: str = "dfsbench", ready_timeout: float = 60) -> None:
        refused = replica_sets(bricks, replica)
        if refused:
            raise DfsbenchError(refused)
        self.root, self.ledger = root, ledger
        self.brick_count, self.replica, self.volume = bricks, replica, volume
        self.timeout = ready_timeout
        self.log_dir = root / "log"
        self.run_dir = root / "run"
        self.sock = longest_socket(root)
        self.cli = GlusterCli.on_socket(self.sock, self.log_dir / "cli.log")
        self._t0 = time.monotonic()
        self.phases: dict[str, float] = {}

    def _phase(self, name: str) -> None:
        self.phases[name] = round(time.monotonic() - self._t0, 2)

    def up(self) -> GlusterService:
        for sub in ("state", "run", "log", "bricks"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        host = pick_loopback_address()
        opts = {
            "working-directory": self.root / "state",
            "run-directory": self.run_dir,
            "logging-directory": self.log_dir,
            "glusterd-sockfile": self.sock,
            "transport.socket.bind-address": host,
        }
        argv = ["glusterd", "-N", "-l", str(self.log_dir / "glusterd.log"),
                "-p", str(self.run_dir / "glusterd.pid")]
        for key, value in opts.items():
            argv += ["--xlator-option", f"management.{key}={value}"]
        daemon = proc.spawn(argv, self.log_dir / "glusterd.stdout")
        self.ledger.process(daemon.pid, "glusterd", grace=10, stage=1)

        def died() -> str | None:
            return None if daemon.poll() is None else f"glusterd exited with code {daemon.returncode}"

        proc.wait_for(self.cli.answers, what="glusterd to answer its CLI", timeout=self.timeout, interval=0.1,
                      alive=died, log=self.log_dir / "glusterd.log")
        self._phase("glusterd answers")
        volume = Volume(self.cli, self.ledger, self.run_dir, self.volume, host,
                        [self.root / "bricks" / f"b{i}" for i in range(self.brick_count)],
                        Layout("replicate" if self.brick_count == self.replica else
                               "distributed-replicate", self.replica), timeout=self.timeout,
                        undo_in_ledger=False)
        volume.create()
        self._phase("volume created")
        volume.start(alive=died, log=self.log_dir / "glusterd.log")
        self._phase("volume started, bricks online")
        return GlusterService(host=host, volume=self.volume, volume_type=volume.layout.kind,
                           volume_options=volume.options,
                           replica=self.replica, bricks=volume.brick_specs, socket=str(self.sock),
                           version=gluster_version(), log_dir=str(self.log_dir),
                           phases=self.phases, backing=str(self.root / "bricks"))
