"""The GlusterFS command-line client as backends and environments use it: the gluster
CLI bound to one glusterd through its socket, volume layouts, and the life cycle of a
volume (created, its options set, started, its processes recorded; stopped and deleted
again), every step recorded in the ledger."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import DfsbenchError
from harness.system import proc, signals
from harness.system.hosts import LOCAL, Host
from harness.system.ledger import Ledger

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET


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
    # a directory on each storage node (its bricks' file system) where a backend may make the
    # bricks of a volume of its own, through the gluster CLI of the nodes (a container lab's);
    # '' where dfsbench may not (an existing cluster's servers)
    brick_root: str = ""

    @property
    def brick_hosts(self) -> list[str]:
        """The hosts of its bricks, in the order the bricks name them, each once."""
        return list(dict.fromkeys(brick.rsplit(":", 1)[0] for brick in self.bricks if ":" in brick))

    @property
    def storage_nodes(self) -> int:
        """The hosts its bricks are on (0: not known)."""
        return len({brick.rsplit(":", 1)[0] for brick in self.bricks if ":" in brick})

    @property
    def keeps_copies(self) -> bool:
        return keeps_copies(self.volume_type, self.replica)


def keeps_copies(volume_type: str, replica: int | None) -> bool:
    """Whether a volume of this type keeps more than one copy of its data (and so can have
    something left to heal): replicas, or a disperse set."""
    return "disperse" in volume_type or (replica or 1) > 1


FSTYPE = "fuse.glusterfs"  # its FUSE client's mounts, as /proc/mounts shows them


def copies_kept(volume_type: str, replica: Any, bricks: int | None, redundancy: int | None) -> float:
    """Bytes a volume keeps per byte written: a disperse volume k+m fragments of each k
    (its bricks over its bricks less its redundancy), a replicated one its replica count."""
    if volume_type == "disperse" and bricks and redundancy:
        return bricks / (bricks - redundancy)
    return float(replica or 1)


def gluster_version() -> str:
    out = proc.run(["glusterfs", "--version"], timeout=30).stdout
    match = re.search(r"glusterfs (\S+)", out)
    return match.group(1) if match else "unknown"


class GlusterCli:
    """The gluster CLI on a host, bound to one glusterd: a private one here through its
    socket (:meth:`on_socket`), a storage node's own (run inside the node), or a server's
    from a client host (``--remote-host``, which answers what only reads)."""

    def __init__(self, host: Host = LOCAL, *connect: str, socket: Path | None = None) -> None:
        self.host, self.connect, self.socket = host, connect, socket

    @classmethod
    def on_socket(cls, sock: Path, log: Path) -> GlusterCli:
        return cls(LOCAL, f"--glusterd-sock={sock}", f"--log-file={log}", socket=sock)

    def heal_info_words(self, volume: str) -> list[str] | None:
        """How this host asks what is left to heal: ``volume heal VOL info`` runs glfsheal,
        which reaches only a glusterd on the host's default socket — so glfsheal itself,
        told the socket, for a glusterd of our own; None from a client host that reaches
        the servers with ``--remote-host``, where it cannot be asked."""
        if self.socket is not None:
            found = sorted(Path("/usr").glob("lib*/*/glusterfs/glfsheal")) + \
                sorted(Path("/usr").glob("lib*/glusterfs/glfsheal"))
            return [str(found[0]) if found else "glfsheal", volume, "--xml", "glusterd-sock", str(self.socket)]
        if any(c.startswith("--remote-host") for c in self.connect):
            return None
        return self.words("volume", "heal", volume, "info", "--xml")

    def words(self, *args: str) -> list[str]:
        return ["gluster", "--mode=script", *self.connect, *args]

    def __call__(self, *args: str, timeout: float = 120) -> str:
        return self.host.run(self.words(*args), timeout=timeout).stdout

    def argv(self, *args: str) -> list[str]:
        """The command that runs ``gluster ARGS`` on the host from this machine (an undo
        in the ledger)."""
        return self.host.wrap(self.words(*args))

    def answers(self) -> tuple[bool, str]:
        result = self.host.run(self.words("volume", "list"), timeout=10, check=False)
        return result.returncode == 0, (result.stderr or result.stdout).strip()

    def xml(self, *args: str) -> ET.Element:
        import xml.etree.ElementTree as ET  # (only where XML is read: a backend's import stays light)

        root = ET.fromstring(self(*args, "--xml"))
        if root.findtext("opRet") not in ("0", None):
            raise DfsbenchError(f"gluster {' '.join(args)}: {root.findtext('opErrstr')}")
        return root


@dataclass(frozen=True)
class Layout:
    """A volume type: ``replicate`` (one replica set, the report's vr33), ``distributed-
    replicate`` (several sets), or ``disperse`` (erasure coded, ``redundancy`` bricks may
    fail). The report's ``stripe 3 replica 3`` was removed in Gluster 6; these two are its
    modern stand-ins."""

    kind: str
    replica: int = 3
    redundancy: int = 1

    @property
    def keeps_copies(self) -> bool:
        return keeps_copies(self.kind, self.replica)

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

# the least value GlusterFS takes for an option on a disperse volume, where it is more than
# on a replicated one: the self-heal daemon's crawl (cluster.heal-timeout) at least every 60 s
# (measured: 'volume set' on a disperse volume refused 10, "out of range [60 - 2147483647]")
DISPERSE_LEAST = {"cluster.heal-timeout": 60}


def options_for(layout: Layout, options: dict[str, str]) -> dict[str, str]:
    """A lab's options for a volume of this layout: on a disperse volume, a value below the
    least it takes is raised to that least (the volume's description says what it got)."""
    if layout.kind != "disperse":
        return dict(options)
    fitted = dict(options)
    for key, least in DISPERSE_LEAST.items():
        value = fitted.get(key)
        if value is not None and value.isdigit() and int(value) < least:
            fitted[key] = str(least)
    return fitted


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
        # once started, the daemons glusterd forked must be in the ledger before anything
        # stops (a run interrupted here left the self-heal daemon running)
        with signals.shielded():
            if self.undo_in_ledger:
                self._undo.add(self.ledger.command(self.cli.argv("volume", "stop", self.name, "force"),
                                                   f"volume {self.name} (started)"))
            self.record_processes()
        proc.wait_for(lambda: health(self.cli, self.name, len(self.bricks), self.layout.keeps_copies),
                      what=f"all {len(self.bricks)} bricks of {self.name} online, nothing to heal",
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
        return pid_files(self.run_dir, pattern)

    def _record(self, found: list[Path]) -> None:
        record_forked(self.ledger, found)


def pid_files(run_dir: Path, pattern: str) -> list[Path]:
    """The pid files under a glusterd's run directory that name a process."""
    return [f for f in sorted(run_dir.glob(pattern)) if f.read_text().strip().isdigit()]


def record_forked(ledger: Ledger, found: list[Path]) -> None:
    """Add the live processes these pid files name (bricks and the self-heal daemon, which
    glusterd forks), unless the ledger has them (it knows a pid by its start time, so an
    entry for an earlier process is harmless); and the control sockets their command lines
    name, made outside the run directory, to remove later."""
    known = {(e["pid"], e.get("start")) for e in ledger.entries if e["kind"] == "process"}
    for pid_file in found:
        ident = proc.ProcessId.of(int(pid_file.read_text().strip()))
        if ident is None or (ident.pid, ident.start_ticks) in known:
            continue
        name = "glusterfsd" if "vols" in pid_file.parts else "glustershd"
        args = proc.cmdline(ident.pid)
        ledger.process(ident.pid, f"{name} ({pid_file.stem})", grace=10)
        if "-S" in args:
            ledger.tree(Path(args[args.index("-S") + 1]))


class NodeVolume:
    """A volume of a backend's own on the glusterds of storage nodes that dfsbench runs
    commands in (a container lab's): one brick directory under each node's brick root per
    brick, brick i on node i mod N (so the bricks of a replica or disperse set are on
    different nodes, each node a failure domain), the lab volume's options and the
    backend's, started, healthy; stopped, deleted and its brick directories removed again
    — each step in the ledger the moment it exists, so a crash leaves nothing 'lab down'
    cannot undo."""

    def __init__(self, nodes: list[tuple[str, Host]], ledger: Ledger, root: str, name: str, layout: Layout,
                 bricks: int, options: dict[str, str], timeout: float = 120) -> None:
        self.nodes, self.ledger, self.root, self.name = nodes, ledger, root, name
        self.layout, self.count, self.options, self.timeout = layout, bricks, options, timeout
        self.cli = GlusterCli(nodes[0][1])
        self._undo: set[str] = set()

    @property
    def brick_specs(self) -> list[str]:
        n = len(self.nodes)
        return [f"{self.nodes[i % n][0]}:{self.root}/{self.name}/b{i // n}" for i in range(self.count)]

    @property
    def storage_nodes(self) -> int:
        return min(len(self.nodes), self.count)

    def create(self) -> None:
        args = self.layout.create_args(self.count)
        # (first in the ledger, so undone last: after the volume is stopped and deleted)
        for label, host in self.nodes[:self.count]:
            self._undo.add(self.ledger.command(host.wrap(["rm", "-rf", f"{self.root}/{self.name}"]),
                                               f"bricks of volume {self.name} on {label}"))
        hosts = dict(self.nodes)
        for spec in self.brick_specs:  # (glusterd makes a brick's own directory, not its parents)
            label, path = spec.rsplit(":", 1)
            hosts[label].run(["mkdir", "-p", path], timeout=60)
        # ('force', as for the lab's own volume: a set has no more bricks on one node than it may lose)
        self.cli("volume", "create", self.name, *args, "transport", "tcp", *self.brick_specs, "force")
        self._undo.add(self.ledger.command(self.cli.argv("volume", "delete", self.name), f"volume {self.name}"))
        for key, value in self.options.items():
            self.cli("volume", "set", self.name, key, str(value))

    def start(self) -> None:
        self.cli("volume", "start", self.name)
        self._undo.add(self.ledger.command(self.cli.argv("volume", "stop", self.name, "force"),
                                           f"volume {self.name} (started)"))
        proc.wait_for(lambda: health(self.cli, self.name, self.count, self.layout.keeps_copies),
                      what=f"all {self.count} bricks of {self.name} online, nothing to heal",
                      timeout=self.timeout, interval=0.5)

    def delete(self) -> None:
        """Stop, delete, remove the bricks (the ledger's order: newest first)."""
        undo, self._undo = frozenset(self._undo), set()
        problems = self.ledger.undo(only=undo)
        if problems:
            raise DfsbenchError("; ".join(problems), hint="run 'dfsbench lab down' to retry")


@dataclass(frozen=True)
class VolumeShape:
    """A volume as ``gluster volume info --xml`` lists it: its name, type, bricks, replica
    count, and whether it is started."""

    name: str
    kind: str  # replicate, disperse, distributed-replicate, …
    bricks: int
    replica: int | None
    started: bool

    @property
    def keeps_copies(self) -> bool:
        return keeps_copies(self.kind, self.replica)


def volumes(info: ET.Element) -> list[VolumeShape]:
    """Every volume ``gluster volume info --xml`` (of all volumes) lists."""
    found = []
    for vol in info.findall(".//volInfo/volumes/volume"):
        replica = (vol.findtext("replicaCount") or "").strip()
        found.append(VolumeShape(vol.findtext("name") or "", (vol.findtext("typeStr") or "").lower(),
                                 int(vol.findtext("brickCount") or 0),
                                 int(replica) if replica.isdigit() else None,
                                 vol.findtext("statusStr") == "Started"))
    return found


def health(cli: GlusterCli, volume: str, bricks: int, copies: bool) -> tuple[bool, str]:
    """Whether a volume is whole — what a lab's status, its bring-up and a fault's recovery
    all wait on: every one of its ``bricks`` online (``volume status``), and, where the
    volume keeps copies, nothing left to heal (``heal info``). Healthy, and what it said
    ("3 of 3 bricks online, 0 entries to heal"). A ``heal info`` that failed, or answered
    for fewer bricks than the volume has, is not known, and so not healthy; where it cannot
    be asked at all (from a client host), healthy means the bricks, and the text says so."""
    online = bricks_online(cli.xml("volume", "status", volume))
    state = f"{online} of {bricks} bricks online"
    if online < bricks:
        return False, state
    if not copies:
        return True, f"{state}, no copies to heal"
    words = cli.heal_info_words(volume)
    if words is None:
        return True, f"{state}; what is left to heal cannot be asked from {cli.host.name} (no glusterd there)"
    heal = cli.host.run(words, check=False, timeout=120)
    try:
        pending = heal_pending(heal.stdout, bricks)
    except (SyntaxError, ValueError) as exc:  # (xml.etree's ParseError is a SyntaxError)
        said = str(exc) if isinstance(exc, ValueError) else \
            ((heal.stderr or heal.stdout).strip().splitlines()[-1:] or [f"exit code {heal.returncode}"])[0]
        return False, f"{state}; what is left to heal is not known ({said[:200]})"
    return pending == 0, f"{state}, {pending} entries to heal"


def bricks_online(status: ET.Element) -> int:
    """How many bricks ``gluster volume status VOL --xml`` says are online (the self-heal
    daemon and NFS server it lists too are not bricks)."""
    nodes = status.findall(".//volStatus/volumes/volume/node")
    return sum(1 for n in nodes if n.findtext("status") == "1"
               and n.findtext("hostname") not in ("Self-heal Daemon", "NFS Server"))


def brick_pids(status: ET.Element) -> dict[str, int]:
    """The process of each brick online, by its path, from ``gluster volume status VOL --xml``."""
    found = {}
    for n in status.findall(".//volStatus/volumes/volume/node"):
        pid = (n.findtext("pid") or "").strip()
        if n.findtext("status") == "1" and n.findtext("hostname") not in ("Self-heal Daemon", "NFS Server") \
                and pid.isdigit() and int(pid) > 0:
            found[n.findtext("path") or ""] = int(pid)
    return found


def heal_pending(xml: str, bricks: int) -> int:
    """Entries left to heal over all bricks, from ``gluster volume heal VOL info --xml``
    (a brick that cannot be asked counts as one). ValueError where the command failed
    (``opRet`` not 0) or named fewer than ``bricks`` bricks: then nothing is known."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(xml)
    ret = (root.findtext("opRet") or "").strip()
    if ret != "0":
        said = (root.findtext("opErrstr") or "").strip() or f"opRet {ret or 'missing'}"
        raise ValueError(f"heal info failed: {said}")
    found = list(root.iter("brick"))
    if len(found) < bricks:
        raise ValueError(f"heal info named {len(found)} of {bricks} bricks")
    total = 0
    for brick in found:
        count = brick.findtext("numberOfEntries")
        total += int(count) if count and count.strip().isdigit() else 1
    return total
