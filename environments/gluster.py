"""A throwaway GlusterFS volume as plain processes under one directory.

glusterd runs with a private working directory (never /var/lib/glusterd), its own CLI
socket, and listens on its own loopback address: bricks and clients always reach glusterd
on the default port 24007 of the host named in the brick, so a free 127.x.y.z address is
what keeps this lab apart from any other glusterd on the host. Gluster refuses 127.0.0.1
itself as a brick host.
"""

from __future__ import annotations

import random
import re
import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import proc
from harness.errors import DfsbenchError
from harness.ledger import Ledger

GLUSTERD_PORT = 24007


@dataclass(frozen=True)
class GlusterInfo:
    host: str
    volume: str
    volume_type: str
    replica: int
    bricks: list[str]
    socket: str
    version: str
    log_dir: str
    phases: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pick_loopback_address(rng: random.Random | None = None) -> str:
    """A 127.x.y.z address (not 127.0.0.1) on which the glusterd port is free."""
    rng = rng or random.Random()
    for _ in range(50):
        addr = f"127.{rng.randint(1, 254)}.{rng.randint(0, 254)}.{rng.randint(2, 254)}"
        with socket.socket() as s:
            try:
                s.bind((addr, GLUSTERD_PORT))
            except OSError:
                continue
        return addr
    raise DfsbenchError("no free loopback address for glusterd was found in 50 tries")


def gluster_version() -> str:
    out = proc.run(["glusterfs", "--version"], timeout=30).stdout
    match = re.search(r"glusterfs (\S+)", out)
    return match.group(1) if match else "unknown"


class GlusterCli:
    """The gluster CLI bound to one glusterd through its private socket."""

    def __init__(self, sock: Path, log: Path) -> None:
        self.sock, self.log = sock, log

    def __call__(self, *args: str, timeout: float = 120) -> str:
        return proc.run(self.argv(*args), timeout=timeout).stdout

    def argv(self, *args: str) -> list[str]:
        return ["gluster", "--mode=script", f"--glusterd-sock={self.sock}",
                f"--log-file={self.log}", *args]

    def answers(self) -> tuple[bool, str]:
        result = proc.run(self.argv("volume", "list"), timeout=10, check=False)
        return result.returncode == 0, (result.stderr or result.stdout).strip()

    def xml(self, *args: str) -> ET.Element:
        root = ET.fromstring(self(*args, "--xml"))
        if root.findtext("opRet") not in ("0", None):
            raise DfsbenchError(f"gluster {' '.join(args)}: {root.findtext('opErrstr')}")
        return root


class GlusterLab:
    """Brings up glusterd and one volume under ``root``; resources go into ``ledger``."""

    def __init__(self, root: Path, ledger: Ledger, *, bricks: int = 3, replica: int = 3,
                 volume: str = "dfsbench", ready_timeout: float = 60) -> None:
        if bricks % replica:
            raise DfsbenchError(f"{bricks} bricks cannot form replica-{replica} sets")
        self.root, self.ledger = root, ledger
        self.brick_count, self.replica, self.volume = bricks, replica, volume
        self.timeout = ready_timeout
        self.log_dir = root / "log"
        self.run_dir = root / "run"
        self.sock = self.run_dir / "glusterd.socket"
        self.cli = GlusterCli(self.sock, self.log_dir / "cli.log")
        self._t0 = time.monotonic()
        self.phases: dict[str, float] = {}

    def _phase(self, name: str) -> None:
        self.phases[name] = round(time.monotonic() - self._t0, 2)

    def up(self) -> GlusterInfo:
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
        argv = ["glusterd", "-N", "-l", self.log_dir / "glusterd.log",
                "-p", self.run_dir / "glusterd.pid"]
        for key, value in opts.items():
            argv += ["--xlator-option", f"management.{key}={value}"]
        daemon = proc.spawn(argv, self.log_dir / "glusterd.stdout")
        self.ledger.process(daemon.pid, "glusterd", grace=10, stage=1)

        def died() -> str | None:
            return None if daemon.poll() is None else f"glusterd exited with code {daemon.returncode}"

        proc.wait_for(self.cli.answers, what="glusterd to answer its CLI", timeout=self.timeout, interval=0.1,
                      alive=died, log=self.log_dir / "glusterd.log")
        self._phase("glusterd answers")
        bricks = [f"{host}:{self.root / 'bricks' / f'b{i}'}" for i in range(self.brick_count)]
        # 'force': the bricks are directories on the host's root file system, which
        # Gluster otherwise refuses; that is what a throwaway lab wants.
        self.cli("volume", "create", self.volume, "replica", str(self.replica),
                 "transport", "tcp", *bricks, "force")
        self._phase("volume created")
        self.cli("volume", "start", self.volume)
        self._record_volume_processes()
        proc.wait_for(self.bricks_online, what=f"all {self.brick_count} bricks online",
                      timeout=self.timeout, interval=0.2, alive=died,
                      log=self.log_dir / "glusterd.log")
        self._phase("volume started, bricks online")
        vtype = "replicate" if self.brick_count == self.replica else "distributed-replicate"
        return GlusterInfo(host=host, volume=self.volume, volume_type=vtype,
                           replica=self.replica, bricks=bricks, socket=str(self.sock),
                           version=gluster_version(), log_dir=str(self.log_dir),
                           phases=self.phases)

    def _record_volume_processes(self) -> None:
        """Bricks and the self-heal daemon are started (daemonised) by glusterd; their pid
        files under our run directory tell us which processes are ours, and their command
        lines name the control sockets they create outside it, which we remove later."""
        pid_files = proc.wait_for(lambda: self._pid_files(), what="brick pid files",
                                  timeout=self.timeout, interval=0.1)
        for pid_file in pid_files:
            pid = int(pid_file.read_text().strip())
            name = "glusterfsd" if "vols" in pid_file.parts else "glustershd"
            args = proc.cmdline(pid)
            self.ledger.process(pid, f"{name} ({pid_file.stem})", grace=10)
            if "-S" in args:
                self.ledger.tree(Path(args[args.index("-S") + 1]))

    def _pid_files(self) -> tuple[bool, list[Path]]:
        files = sorted(self.run_dir.glob("vols/*/*.pid")) + sorted(self.run_dir.glob("shd/*/*.pid"))
        complete = [f for f in files if f.read_text().strip()]
        return len(complete) >= self.brick_count + 1, complete

    def bricks_online(self) -> tuple[bool, str]:
        return volume_status(self.cli, self.volume, self.brick_count)


def volume_status(cli: GlusterCli, volume: str, bricks: int) -> tuple[bool, str]:
    root = cli.xml("volume", "status", volume)
    nodes = root.findall(".//volStatus/volumes/volume/node")
    online = [n for n in nodes if n.findtext("status") == "1" and
              n.findtext("hostname") not in ("Self-heal Daemon", "NFS Server")]
    return len(online) >= bricks, f"{len(online)} of {bricks} bricks online"
