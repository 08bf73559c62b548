"""What a backend hands to workloads: a Target of a kind (a mounted path, a block device,
an image or pool reached through a client library), where its client runs, and how to
drop every cache between a workload and the storage."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import BadInput, DfsbenchError
from harness.system import signals
from harness.system.hosts import LOCAL, Host
from harness.system.names import host_part

A = TypeVar("A", bound="Access")


@dataclass(frozen=True)
class Access:
    """How a workload reaches a target that is not a path: each kind of target has its own
    (a ``block`` target a :class:`BlockAccess`; a kind a plugin adds, the access that
    plugin defines and its workloads read with :meth:`Target.reach`)."""


@dataclass(frozen=True)
class BlockAccess(Access):
    """How a workload reaches a ``block`` target."""

    device: str
    destructive_ok: bool = False  # only the user's explicit 'allow_destructive: true' sets it


@dataclass(frozen=True)
class CephAccess(Access):
    """How a workload reaches a ``rados`` or ``rbd`` target, whatever system serves it: the
    arguments of the Ceph command-line tools (conf, keyring, client, client settings), the
    environment librados reads inside tools that take no ``-c`` (fio's rbd engine), the
    pool, and for ``rbd`` the image and its size. A workload reads it with
    :meth:`Target.reach`, and so needs no system's package."""

    pool: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    client: str
    image: str | None = None
    image_size: int | None = None


@dataclass(frozen=True)
class S3Access(Access):
    """How a workload reaches an ``s3`` target, whatever system serves it: the endpoint
    (plain HTTP, path-style requests), the region its signatures name, the access key, a file
    of mode 0600 on every client host that holds the secret key (never a command line's word),
    and the bucket of the run's own, whose name starts the name of every bucket a workload
    makes there (``<bucket>-<cell tag>-<n>``)."""

    host: str
    port: int
    access_key: str
    secret_file: str
    bucket: str
    region: str = "us-east-1"

    def endpoint(self) -> dict[str, object]:
        """What the S3 engine takes as its endpoint (the secret stays in its file)."""
        return {"host": self.host, "port": self.port, "access_key": self.access_key,
                "secret_file": self.secret_file, "region": self.region}


# the cache step of a read that runs on another client host than the one that wrote the
# data (IOR's -C): no cache of the writer's can answer it, whether or not the reader's
# kernel page cache could be dropped
OTHER_CLIENT = "other-client"


@dataclass
class Written:
    """Data a cell wrote and keeps for a check after a fault (see :meth:`Target.keep`): who
    wrote it and when (this machine's clock), how another client checks it (given that
    client's view of the target: whether what it reads matches), and how it goes."""

    what: str
    writer: Host
    started: float
    ended: float
    check: Callable[[Target], bool]
    remove: Callable[[], None]
    # no client keeps a cache of it (an object store's client): a read on the writer itself is
    # a read from the storage, and checks it where no other client is
    cacheless: bool = False
    # when each of its writes was acknowledged (this machine's clock), where it says: it was then
    # written while a fault held only if one of them falls in it (else: if it spans any of it)
    moments: tuple[float, ...] = ()


@dataclass
class Filled:
    """How far workloads have written an attachment before reading it (bytes from its
    start), so that a later cell reads without writing it again: it lives and dies with the
    attachment (the new image or device of a later repeat starts empty and is written again
    before reads), and the view a cell runs on (:meth:`Target.for_cell`) shares it."""

    bytes: int = 0


class Lineup:
    """What the clients running one cell at once share: the start of each timed phase (every
    client waits there for the others, so all start it together, as IOR and smallfile do),
    the cell's tag (names of files one client writes and another reads), and who hears
    that the cell's measured work begins (the first timed phase: a fault's clock), and in
    how many seconds (a warm-up its tool runs untimed first, such as fio's ramp_time)."""

    def __init__(self, clients: int = 1, on_start: Callable[[float], None] | None = None,
                 scratch: Callable[[Host], Path] | None = None, keep: list[Written] | None = None) -> None:
        self.clients = clients
        self.tag = uuid.uuid4().hex[:8]
        self.scratch = scratch  # a scratch directory of the run on a client host
        self.keep = keep  # where a cell that runs through a fault keeps what it wrote
        self._on_start = on_start
        self._cond = threading.Condition()
        self._arrived = 0
        self._round = 0
        self._step = ""  # where the clients of this round wait
        self._started = False
        self._broken: str | None = None
        self._board: dict[tuple[str, str], Any] = {}
        # when each step let its clients go (this machine's clock): what a launch costs is
        # measured from there (bench/launch_skew.py)
        self.released: dict[str, Any] = {}

    def begin(self, phase: str, warmup_s: float = 0.0, host: Host | None = None, starts: bool = True) -> None:
        """Wait until every client of the cell has come to this timed phase, then go on
        together; the first one also starts what waits for the cell's measured work, which
        begins after ``warmup_s`` (what the tool runs untimed first) — unless the phase
        ``starts`` nothing of it (a run that only finds the most a client does, before the
        measured one). ``host``: the client that comes (a line-up of MPI ranks runs the phase
        itself: harness.execution.ranks)."""
        self.wait(phase)
        if not starts:
            return
        with self._cond:
            first, self._started = not self._started, True
        if first and self._on_start is not None:
            self._on_start(warmup_s)

    def wait(self, step: str) -> None:
        """Wait until every client of the cell has come to this step. A client that comes
        to another step while the others wait at one breaks the line-up: the clients are
        no longer doing the same thing, and none goes on as if they were."""
        with self._cond:
            if self._broken:
                raise DfsbenchError(f"{step}: {self._broken}")
            if self._arrived and step != self._step:
                self._broken = f"one client came to {step!r} while another waited at {self._step!r}"
                self._cond.notify_all()
                raise DfsbenchError(self._broken)
            self._step = step
            self._arrived += 1
            if self._arrived >= self.clients:
                self._arrived, self._round = 0, self._round + 1
                self.released[step] = time.time()
                self._cond.notify_all()
            else:
                round_ = self._round
                while self._round == round_ and not self._broken:
                    self._cond.wait(0.2)
                    signals.check()  # (an interrupted run stops waiting)
                if self._broken:
                    raise DfsbenchError(f"{step}: {self._broken}")

    def abort(self, why: str) -> None:
        """A client failed: the others stop waiting for it."""
        with self._cond:
            self._broken = self._broken or why
            self._cond.notify_all()

    def post(self, name: str, host: Host, value: Any) -> None:
        """What one client says of its part for the others (the digest of what it wrote)."""
        with self._cond:
            self._board[(name, host.label)] = value

    def posted(self, name: str, host: Host) -> Any:
        with self._cond:
            if (name, host.label) not in self._board:
                raise DfsbenchError(f"client {host.label} said nothing of {name!r} before the others read it")
            return self._board[(name, host.label)]


@dataclass
class Target:
    """What a backend hands to workloads, by kind:

    - ``path``: a verified mount (or a local directory); ``path`` is where to work.
    - ``block``: a block device, reached through ``access`` (a :class:`BlockAccess`).
    - any other kind a plugin declares (an image or a pool reached through a client
      library): ``access`` is that kind's own :class:`Access`.

    ``server_host`` (where the client's traffic goes) and ``backing`` (the storage under
    the cluster's daemons) are what the network and raw-storage baselines measure.
    ``description`` is the topology stored with the run (versions, replicas, client,
    options): for people and for the comparability checks, not for workloads to read.
    """

    kind: str
    path: Path | None
    backend: str
    variant: str
    description: dict[str, Any] = field(default_factory=dict)
    remount: Callable[[], None] | None = None  # a fresh client, its caches gone
    detach: Callable[[], None] | None = None  # undo what open() created
    access: Access | None = None
    server_host: str | None = None
    backing: Path | None = None
    host: Host = LOCAL  # where the client runs: paths are this host's, tools run through it
    # where dfsbench may start a server to measure the path to ``server_host`` (iperf3):
    # None where it cannot (this machine's loopback needs none)
    server: Host | None = None
    # every client host with this target attached (fio client/server runs one server on each)
    hosts: tuple[Host, ...] = ()
    remount_host: Callable[[Host], None] | None = None  # a fresh client on one of the hosts
    # the client keeps a cache of its own that drop_caches does not reach, and dfsbench cannot
    # remount it (a FUSE mount the user made): reads after a "cache drop" may come from it
    cache_kept: bool = False
    # what workloads did to this attachment (read and written as ``filled_bytes``)
    filled: Filled = field(default_factory=Filled)
    # the bytes a block device or an RBD image holds (None: a file system, or not known):
    # no cell reaches past them (harness.api.contracts.reaches_past)
    holds: int | None = None
    # every client host the attachment serves (a view of one of them, ``on``, keeps them)
    peers: tuple[Host, ...] = ()
    # the cell this is the view of (:meth:`for_cell`); None: the attachment itself
    lineup: Lineup | None = None
    # the files' tag of work done outside a cell (a workload run by hand)
    loose_tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8], repr=False)

    @property
    def key(self) -> str:
        return f"{self.backend}/{self.variant}"

    @property
    def filled_bytes(self) -> int:
        """How far workloads have written this attachment before reading it (:class:`Filled`)."""
        return self.filled.bytes

    @filled_bytes.setter
    def filled_bytes(self, value: int) -> None:
        self.filled.bytes = value

    def for_cell(self, lineup: Lineup) -> Target:
        """This attachment as the workload of one cell sees it: with the cell's line-up (when
        its timed phases start, its scratch directories, what it keeps through a fault), and
        what was done to the attachment shared with it (:class:`Filled`)."""
        return replace(self, lineup=lineup)

    def on(self, host: Host) -> Target:
        """The same attachment as seen from another of its client hosts: paths and tools
        there, and a cache drop that remounts only that host's client (so the others,
        running at the same time, keep theirs)."""
        remount = self.remount
        if self.remount_host is not None:
            remount_host = self.remount_host
            remount = lambda: remount_host(host.machine)  # noqa: E731
        # (what was filled is copied, not shared: a client's view of a cell run on every
        # client at once fills the image for that cell only, as it always did)
        return replace(self, host=host, hosts=(host,), remount=remount, detach=None,
                       peers=self.peers or self.hosts or (self.host,), filled=Filled(self.filled.bytes))

    def begin(self, phase: str, warmup_s: float = 0.0, starts: bool = True) -> None:
        """Say that a timed phase of the cell starts now (call it right before timing):
        the clients running the cell at once start it together, and the first phase starts
        the cell's measured work (a fault's clock) — ``warmup_s`` later, where the tool runs
        that long untimed first (fio's ramp_time); a phase that ``starts`` nothing of it
        does not (fio's closed-loop run before an offered load)."""
        if self.lineup is not None:
            self.lineup.begin(phase, warmup_s, self.host, starts)

    def settle(self, step: str) -> None:
        """Wait until every client of the cell has done this step (before one removes what
        another may still read)."""
        if self.lineup is not None:
            self.lineup.wait(step)

    def keep(self, written: Written) -> bool:
        """Keep what was written for the check after a fault, where the cell runs through
        one (then it is removed after that check, not by the workload); whether it is kept."""
        if self.lineup is None or self.lineup.keep is None:
            return False
        self.lineup.keep.append(written)
        return True

    def scratch(self) -> Path:
        """The run's scratch directory on this view's host."""
        if self.lineup is None or self.lineup.scratch is None:
            raise DfsbenchError(f"{self.key}: no scratch directory on {self.host.name} outside a cell")
        return self.lineup.scratch(self.host)

    def timing(self, started: float, ended: float,
               progress: Any = ()) -> tuple[dict[str, float], tuple[tuple[float, float], ...]]:
        """A timed phase as this view's host's clock gave it (seconds since the epoch; its
        progress as (time, amount so far) pairs), on this machine's clock: the ``started``
        and ``ended`` params of its records, and their ``progress``."""
        here = self.host.here
        return ({"started": round(here(float(started)), 6), "ended": round(here(float(ended)), 6)},
                tuple((here(float(t)), float(a)) for t, a in progress))

    def post(self, name: str, value: Any) -> None:
        """Say ``value`` of this client's part of the cell, for another client that reads it
        (see :meth:`posted`); outside a line-up of several clients nobody else reads it."""
        if self.lineup is not None:
            self.lineup.post(name, self.host, value)

    def posted(self, name: str, writer: Host, own: Any) -> Any:
        """What client ``writer`` said of ``name`` (``own``: what this client said, if the
        writer is this client)."""
        if writer.label == self.host.label or self.lineup is None:
            return own
        return self.lineup.posted(name, writer)

    @property
    def tag(self) -> str:
        """A tag for the cell's files, the same on every client of the cell (see
        :meth:`file_of`)."""
        return self.lineup.tag if self.lineup is not None else self.loose_tag

    def file_of(self, prefix: str, writer: Host) -> str:
        """The name of what client ``writer`` writes for this cell (``prefix-TAG-WRITER``),
        so that another client finds it; only letters, digits and ``_.-``, and the writer's
        part its own (:func:`harness.system.names.host_part`)."""
        return f"{prefix}-{self.tag}-" + host_part(writer.label)

    def reader(self) -> tuple[Target, Host, str]:
        """Get ready to read back what was written, so that no cache of the writer answers:
        with two or more client hosts, on another one (IOR's ``-C``) — in a cell run on
        all of them at once each client reads what the one before it wrote, in a cell run
        on one the next host reads it; with one host, here, after :meth:`drop_caches`.
        The view that reads, the host whose data it reads, and the cache step as recorded
        ("sync+other-client", or how the caches were dropped)."""
        every = self.peers or self.hosts or (self.host,)
        labels = [h.label for h in every]
        # (several ranks on one machine: the writer is as many places away as the machine has
        # ranks, so that it is on another machine — IOR's -C shifts by the tasks per node)
        shift = sum(1 for h in every if h.machine.label == self.host.machine.label)
        if len(every) <= shift or self.host.label not in labels:
            return self, self.host, self.drop_caches()
        i = labels.index(self.host.label)
        self.host.run(["sync"], timeout=600)  # what this client wrote is on the servers before anyone reads
        if self.lineup is not None and self.lineup.clients > 1:
            return self, every[(i - shift) % len(every)], f"sync+{OTHER_CLIENT}"
        return self.on(every[(i + shift) % len(every)]), self.host, f"sync+{OTHER_CLIENT}"

    @property
    def directory(self) -> Path:
        """Where a file workload works: only ``path`` targets have one."""
        if self.kind != "path" or self.path is None:
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a mounted file system")
        return self.path

    @property
    def block(self) -> BlockAccess:
        if not isinstance(self.access, BlockAccess):
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a block device")
        return self.access

    def reach(self, kind: type[A]) -> A:
        """The target's access of that type, or an error saying the target is not one."""
        if not isinstance(self.access, kind):
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not one reached through "
                                f"{kind.__name__}")
        return self.access

    def stored_description(self) -> dict[str, Any]:
        """The description as stored with the run: the topology, plus where the traffic
        goes and what storage is under it."""
        return {**self.description, "server_host": self.server_host,
                "backing": str(self.backing) if self.backing else None,
                "client_host": self.host.label, "client_hosts": len(self.hosts) or 1}

    def drop_caches(self) -> str:
        """Flush and forget every cache between the workload and the storage: sync, then
        remount the client (a FUSE client's own cache — ceph-fuse's object cache, Gluster's
        io-cache and read-ahead — survives ``drop_caches``), then drop the kernel's page
        cache on the client host.

        Returns how it was done ("sync+remount+drop_caches"), recorded with the measurement.
        """
        def drop() -> str:
            steps = ["sync"]
            if self.remount is not None:
                self.remount()
                steps.append("remount")
            elif self.cache_kept:  # a FUSE client the user mounted: its own cache stays (and is said)
                steps.append("client-cache-kept")
            # a container cannot write drop_caches: the kernel's page cache is then kept (and said)
            steps.append("drop_caches" if self.host.drop_caches() else "no-drop_caches")
            return "+".join(steps)

        return self.host.shared("drop caches", drop)  # (once per machine, for all its ranks)

    def require_destructive(self, workload: str) -> None:
        """Refuse to write to a raw device unless the user allowed it in so many words."""
        if not self.block.destructive_ok:
            raise BadInput(f"{workload} would write to the raw device {self.block.device} "
                           f"of backend {self.key}, which destroys what is on it",
                           hint="set 'allow_destructive: true' in that backend's options if "
                                "its contents may be lost")


