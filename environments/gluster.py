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
from collections.abc import Callable
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
    backing: str = ""  # the directory holding the bricks (the raw storage)
    volume_options: dict[str, str] | None = None

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
        volume = Volume(self.cli, self.ledger, self.run_dir, self.volume, host,
                        [self.root / "bricks" / f"b{i}" for i in range(self.brick_count)],
                        Layout("replicate" if self.brick_count == self.replica else
                               "distributed-replicate", self.replica), timeout=self.timeout,
                        undo_in_ledger=False)
        volume.create()
        self._phase("volume created")
        volume.start(alive=died, log=self.log_dir / "glusterd.log")
        self._phase("volume started, bricks online")
        return GlusterInfo(host=host, volume=self.volume, volume_type=volume.layout.kind,
                           volume_options=volume.options,
                           replica=self.replica, bricks=volume.brick_specs, socket=str(self.sock),
                           version=gluster_version(), log_dir=str(self.log_dir),
                           phases=self.phases, backing=str(self.root / "bricks"))


@dataclass(frozen=True)
class Layout:
    """A volume type: ``replicate`` (one replica set, the report's vr33), ``distributed-
    replicate`` (several sets), or ``disperse`` (erasure coded, ``redundancy`` bricks may
    fail). The report's ``stripe 3 replica 3`` was removed in Gluster 6; these two are its
    modern stand-ins."""

    kind: str
    replica: int = 3
    redundancy: int = 1

    def create_args(self, bricks: int) -> list[str]:
        if self.kind == "disperse":
            if not 0 < self.redundancy < bricks / 2:
                raise DfsbenchError(f"a disperse volume of {bricks} bricks needs 0 < redundancy < "
                                    f"{bricks / 2:g}, not {self.redundancy}")
            return ["disperse", str(bricks), "redundancy", str(self.redundancy)]
        if bricks % self.replica or (self.kind == "replicate" and bricks != self.replica):
            raise DfsbenchError(f"{bricks} bricks cannot form a {self.kind} volume of replica "
                                f"{self.replica}")
        return ["replica", str(self.replica)] if self.replica > 1 else []


# Gluster's write-behind acknowledges O_DIRECT writes before the bricks have them unless
# strict-o-direct is on; a benchmark that asks for O_DIRECT must get it (cached I/O is
# unaffected). A config can still set it off through volume_options.
HONEST_OPTIONS = {"performance.strict-o-direct": "on"}


class Volume:
    """One volume on a glusterd we run: created with its bricks, started, its brick
    processes recorded in the ledger; stopped and deleted again."""

    def __init__(self, cli: GlusterCli, ledger: Ledger, run_dir: Path, name: str, host: str,
                 bricks: list[Path], layout: Layout, options: dict[str, str] | None = None,
                 timeout: float = 60, undo_in_ledger: bool = True) -> None:
        self.cli, self.ledger, self.run_dir, self.name = cli, ledger, run_dir, name
        self.host, self.bricks, self.layout = host, bricks, layout
        self.options = {**HONEST_OPTIONS, **(options or {})}
        self.timeout = timeout
        self._undo: set[str] = set()
        # False for a lab's own volume, which lives and dies with the lab's private glusterd
        self.undo_in_ledger = undo_in_ledger

    @property
    def brick_specs(self) -> list[str]:
        return [f"{self.host}:{b}" for b in self.bricks]

    def create(self) -> None:
        args = self.layout.create_args(len(self.bricks))
        for brick in self.bricks:
            brick.mkdir(parents=True, exist_ok=True)
        # 'force': the bricks are directories on the host's root file system (and share
        # one host), which Gluster otherwise refuses; that is what a throwaway lab wants.
        self.cli("volume", "create", self.name, *args, "transport", "tcp", *self.brick_specs, "force")
        # in the ledger from here on: a refused option below, a crash, or 'lab down' after
        # one removes the volume
        if self.undo_in_ledger:
            self._undo.add(self.ledger.command(self.cli.argv("volume", "delete", self.name),
                                               f"volume {self.name}"))
        for key, value in self.options.items():
            self.cli("volume", "set", self.name, key, str(value))

    def start(self, alive: Callable[[], str | None] | None = None, log: Path | None = None) -> None:
        self.cli("volume", "start", self.name)
        if self.undo_in_ledger:
            self._undo.add(self.ledger.command(self.cli.argv("volume", "stop", self.name, "force"),
                                               f"volume {self.name} (started)"))
        self.record_processes()
        proc.wait_for(lambda: volume_status(self.cli, self.name, len(self.bricks)),
                      what=f"all {len(self.bricks)} bricks of {self.name} online",
                      timeout=self.timeout, interval=0.2, alive=alive, log=log)

    def record_processes(self) -> None:
        """Bricks and the self-heal daemon are started (daemonised) by glusterd; their pid
        files under our run directory tell us which processes are ours, and their command
        lines name the control sockets they create outside it, which we remove later."""
        def pid_files() -> tuple[bool, list[Path]]:
            files = self._pid_files(f"vols/{self.name}/*.pid") + self._pid_files("shd/*/*.pid")
            return len(files) >= len(self.bricks) + 1, files

        self._record(proc.wait_for(pid_files, what=f"pid files of {self.name}'s bricks",
                                   timeout=self.timeout, interval=0.1))

    def delete(self) -> None:
        problems = self.ledger.undo(only=frozenset(self._undo))  # stop, then delete
        self._undo.clear()
        if problems:
            raise DfsbenchError("; ".join(problems), hint="run 'dfsbench lab down' to retry")
        # glusterd restarts the self-heal daemon when volumes come and go
        self._record(self._pid_files("shd/*/*.pid"))

    def _pid_files(self, pattern: str) -> list[Path]:
        return [f for f in sorted(self.run_dir.glob(pattern)) if f.read_text().strip().isdigit()]

    def _record(self, pid_files: list[Path]) -> None:
        """Add the live processes these pid files name, unless the ledger has them (it
        knows a pid by its start time, so an entry for an earlier process is harmless)."""
        known = {(e["pid"], e.get("start")) for e in self.ledger.entries if e["kind"] == "process"}
        for pid_file in pid_files:
            ident = proc.ProcessId.of(int(pid_file.read_text().strip()))
            if ident is None or (ident.pid, ident.start_ticks) in known:
                continue
            name = "glusterfsd" if "vols" in pid_file.parts else "glustershd"
            args = proc.cmdline(ident.pid)
            self.ledger.process(ident.pid, f"{name} ({pid_file.stem})", grace=10)
            if "-S" in args:
                self.ledger.tree(Path(args[args.index("-S") + 1]))


def volume_status(cli: GlusterCli, volume: str, bricks: int) -> tuple[bool, str]:
    root = cli.xml("volume", "status", volume)
    nodes = root.findall(".//volStatus/volumes/volume/node")
    online = [n for n in nodes if n.findtext("status") == "1" and
              n.findtext("hostname") not in ("Self-heal Daemon", "NFS Server")]
    return len(online) >= bricks, f"{len(online)} of {bricks} bricks online"
