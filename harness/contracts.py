"""The three axes: Environment (obtains a cluster), Backend (attaches a target),
Workload (runs a tool on a target). Built-ins and third-party plugins implement these
and register through the entry-point groups ``dfsbench.environments``,
``dfsbench.backends`` and ``dfsbench.workloads``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from harness.hosts import LOCAL, Host
from harness.ledger import Ledger
from harness.records import Measurement
from harness.faults import Faults, FaultSpec
from harness.resources import Sampler

# ---------------------------------------------------------------- what plugins declare


@dataclass(frozen=True)
class SystemFacts:
    """What a backend declares about the system behind a target, read by the limits and
    the tables: how to call it, whether its path crosses a network, how many times a
    byte the client writes crosses the client's link, and whether it is the control
    (shown, but never half of a verdict)."""

    display: str
    network: bool = False
    write_copies: float = 1.0
    control: bool = False
    stored_copies: float = 1.0  # bytes kept per byte written (replicas; (k+m)/k for disperse)


@dataclass(frozen=True)
class Column:
    """A table column: a metric (or, in a matrix, a test) and its heading."""

    key: str
    label: str


def _default_label(m: Measurement) -> tuple[str, str]:
    return m.test, ""


def _everything(m: Measurement) -> bool:
    return True


@dataclass(frozen=True)
class TableSpec:
    """A side-by-side table a workload declares: one row per cell (rows are told apart
    by the cell's identity, so records that differ in any parameter are never pooled),
    one column group per system, and a comparison column decided by ``verdict`` — in
    that metric's direction (a time is better smaller, a rate larger).

    ``label`` gives a record's (group, row) labels; ``order`` sorts rows (default: first
    seen); ``chart`` is the metric the HTML report draws as bars; ``curves`` metrics are
    drawn as one line per row and system (e.g. latency percentiles)."""

    title: str
    columns: tuple[Column, ...]
    verdict: str | None  # None: no comparison column (e.g. a baseline)
    row_header: tuple[str, str] = ("test", "cell")
    label: Callable[[Measurement], tuple[str, str]] = _default_label
    order: Callable[[Measurement], Any] | None = None
    select: Callable[[Measurement], bool] = _everything
    chart: str | None = None
    chart_log: bool = False
    curves: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatrixSpec:
    """A grid per system and group, like the report's iozone tables: rows (e.g. file
    size × record size) by columns that are tests, one metric, shown divided by
    ``scale`` in ``unit_label``. The HTML report draws it as a heatmap with one colour
    scale per group across systems."""

    title: str  # formatted with {system} and {group}
    metric: str
    group: Callable[[Measurement], str]
    row: Callable[[Measurement], tuple[Any, tuple[str, ...]]]  # (sort key, row labels)
    row_header: tuple[str, ...]
    columns: tuple[Column, ...]
    scale: float = 1.0
    unit_label: str = ""


Presentation = TableSpec | MatrixSpec


def _to_bytes(v: Any) -> Any:
    from harness.units import parse_size
    return parse_size(v) if isinstance(v, str) else v


# A size in bytes in any plugin's options: 4096, "40KiB", "256MiB", "1G", "210MB".
Bytes = Annotated[int, BeforeValidator(_to_bytes), Field(gt=0)]


class Options(BaseModel):
    """Base of every plugin's options: unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(Options):
    pass


PluginOptions = Options  # the base, as named inside plugin classes whose Options shadows it


S = TypeVar("S")


@dataclass
class Cluster:
    """What an environment hands to backends: per service (``ceph``, ``gluster``), the
    typed facts a client needs (``harness.services``), the ledger where attached clients
    record what they create, and the hosts the clients run on (this machine, or a lab's
    client nodes: backends mount on the first, workloads that use several take them all).
    ``link`` is the declared rate of every node's link in B/s, where the environment
    shapes one: the network limit of the runs it serves."""

    environment: str
    services: dict[str, Any]
    ledger: Ledger
    workdir: Path
    reused: bool = False
    clients: tuple[Host, ...] = (LOCAL,)
    link: float | None = None
    # a new watcher of the lab's nodes for each cell, where the environment can watch them
    sampler: Callable[[], Sampler] | None = None
    # hosts by the address a service names (a storage node of a lab), where dfsbench may
    # start the far end of a network baseline
    servers: dict[str, Host] = field(default_factory=dict)
    faults: Faults | None = None  # what it can do to its storage nodes (see harness.faults)
    # per client host (by label): kernel, CPUs, memory, clock offset — stored with each target
    hosts_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a directory of this host on the file system that holds every copy of every system's
    # data (a local lab's OSDs and bricks): what a cell writes must fit there, times replicas
    shared_disk: Path | None = None

    def service(self, name: str, kind: type[S], backend: str) -> S:
        """The service a backend needs, or an error saying this environment lacks it."""
        found = self.services.get(name)
        if not isinstance(found, kind):
            from harness.errors import DfsbenchError
            raise DfsbenchError(f"backend '{backend}' needs the '{name}' service, and environment "
                                f"'{self.environment}' provides {', '.join(sorted(self.services)) or 'none'}")
        return found


@dataclass(frozen=True)
class ServiceHealth:
    name: str
    healthy: bool
    state: str  # e.g. "HEALTH_OK", "3 of 3 bricks online"


@dataclass(frozen=True)
class LabStatus:
    """What ``dfsbench lab status`` shows of a lab that stays up between runs."""

    up: bool
    where: str
    services: tuple[ServiceHealth, ...] = ()
    mounts: tuple[tuple[str, str | None], ...] = ()  # (mount point, type seen in /proc/mounts)
    processes: tuple[tuple[str, bool], ...] = ()  # (name, running)

    @property
    def healthy(self) -> bool:
        return self.up and all(s.healthy for s in self.services) and \
            all(fstype for _, fstype in self.mounts) and all(running for _, running in self.processes)


class Environment(ABC):
    """Obtains a cluster: local processes, containers, or one that already exists.

    ``up`` serves a run (reusing a lab that is up, else bringing one up for the run and
    down after it); ``start``, ``stop`` and ``status`` are ``dfsbench lab up|down|status``
    for a lab that stays up between runs."""

    name: ClassVar[str]
    Options: ClassVar[type[Options]] = NoOptions
    # its own client nodes mount the targets (containers): 'lab up' mounts nothing on this host
    client_nodes: ClassVar[bool] = False
    # it can stop, kill or pause its storage nodes (a workload's 'fault'; Cluster.faults)
    can_fault: ClassVar[bool] = False
    # where a workload's config does not say 'clients': the first client host, or all of them
    default_clients: ClassVar[str] = "first"
    # workloads the report suite adds where this environment serves a run (name, options)
    report_workloads: ClassVar[tuple[dict[str, Any], ...]] = ()

    def __init__(self, options: PluginOptions) -> None:
        self.options = options

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the lab lives (a directory, a Docker label, a cluster's address)."""

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """Refuse (BadInput) what this environment must not do, before anything starts."""

    @abstractmethod
    def up(self, services: set[str],
           progress: Callable[[str], None] | None = None) -> AbstractContextManager[Cluster]:
        """Bring up (or reuse) the services; undo exactly what was created on exit.
        ``progress`` hears of long steps (an image build, each phase of a bring-up)."""

    @abstractmethod
    def start(self, services: set[str], progress: Callable[[str], None] | None = None) -> Cluster:
        """Bring the services up and leave them running; on failure undo and re-raise."""

    @abstractmethod
    def stop(self) -> list[str]:
        """Undo everything the lab recorded (also after a crash); returns problems met."""

    @abstractmethod
    def status(self) -> LabStatus:
        """Processes, service health and mounts of the lab."""


@dataclass(frozen=True)
class BlockAccess:
    """How a workload reaches a ``block`` target."""

    device: str
    destructive_ok: bool = False  # only the user's explicit 'allow_destructive: true' sets it


@dataclass(frozen=True)
class CephAccess:
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


@dataclass
class Target:
    """What a backend hands to workloads, by kind:

    - ``path``: a verified mount (or a local directory); ``path`` is where to work.
    - ``block``: a block device, reached through ``access`` (a :class:`BlockAccess`).
    - ``rbd``: an RBD image reached through librbd; ``access`` is a :class:`CephAccess`.
    - ``rados``: a RADOS pool; ``access`` is a :class:`CephAccess`.

    ``server_host`` (where the client's traffic goes) and ``backing`` (the storage under
    the OSDs or bricks) are what the network and raw-storage baselines measure.
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
    access: BlockAccess | CephAccess | None = None
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
    # what workloads did to this attachment: it lives and dies with the attachment, so the
    # new image or device of a later repeat starts empty and is written again before reads
    filled_bytes: int = 0

    @property
    def key(self) -> str:
        return f"{self.backend}/{self.variant}"

    def on(self, host: Host) -> Target:
        """The same attachment as seen from another of its client hosts: paths and tools
        there, and a cache drop that remounts only that host's client (so the others,
        running at the same time, keep theirs)."""
        remount = self.remount
        if self.remount_host is not None:
            remount_host = self.remount_host
            remount = lambda: remount_host(host)  # noqa: E731
        return replace(self, host=host, hosts=(host,), remount=remount, detach=None)

    @property
    def directory(self) -> Path:
        """Where a file workload works: only ``path`` targets have one."""
        if self.kind != "path" or self.path is None:
            from harness.errors import DfsbenchError
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a mounted file system")
        return self.path

    @property
    def block(self) -> BlockAccess:
        if not isinstance(self.access, BlockAccess):
            from harness.errors import DfsbenchError
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a block device")
        return self.access

    @property
    def ceph(self) -> CephAccess:
        if not isinstance(self.access, CephAccess):
            from harness.errors import DfsbenchError
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a Ceph pool or image")
        return self.access

    def stored_description(self) -> dict[str, Any]:
        """The description as stored with the run: the topology, plus where the traffic
        goes and what storage is under it."""
        return {**self.description, "server_host": self.server_host,
                "backing": str(self.backing) if self.backing else None,
                "client_host": self.host.label, "client_hosts": len(self.hosts) or 1}

    def drop_caches(self) -> str:
        """Flush and forget every cache between the workload and the storage.

        Returns how it was done, to be recorded with the measurement.
        """
        from harness import caches
        return caches.drop(self)

    def require_destructive(self, workload: str) -> None:
        """Refuse to write to a raw device unless the user allowed it in so many words."""
        if not self.block.destructive_ok:
            from harness.errors import BadInput
            raise BadInput(f"{workload} would write to the raw device {self.block.device} "
                           f"of backend {self.key}, which destroys what is on it",
                           hint="set 'allow_destructive: true' in that backend's options if "
                                "its contents may be lost")


class Backend(ABC):
    """Turns a cluster into a Target and proves it is what it claims to be."""

    name: ClassVar[str]
    display: ClassVar[str | None] = None  # how tables name it (default: its name)
    network: ClassVar[bool] = False  # its data path crosses a network
    control: ClassVar[bool] = False  # the baseline the systems are shown next to
    requires: ClassVar[frozenset[str]] = frozenset()  # services the environment must provide
    target_kind: ClassVar[str] = "path"
    Options: ClassVar[type[Options]] = NoOptions
    # (command, Debian package) every client host needs for this backend's client
    tools: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init__(self, options: PluginOptions, variant: str = "default") -> None:
        self.options = options
        self.variant = variant

    @property
    def kind(self) -> str:
        """The kind of target this backend, so configured, will hand out."""
        return self.target_kind

    @classmethod
    def facts(cls, description: dict[str, Any]) -> SystemFacts:
        """The facts of one attached target, from its stored description (so stored and
        imported runs get them too). Override where they depend on the topology."""
        return SystemFacts(cls.display or cls.name, cls.network, 1.0, cls.control,
                           float(description.get("replicas") or 1))

    def creates(self) -> str:
        """What this backend, so configured, creates in the cluster for its attachment (e.g.
        "a pool"), '' for nothing: an ``existing`` cluster refuses it without allow_create."""
        return ""

    @abstractmethod
    def open(self, cluster: Cluster, workdir: Path) -> Target:
        """Mount (or map) the storage and verify it. Everything created goes into the
        cluster's ledger; ``Target.detach`` undoes it. A failed open undoes its own work."""

    @contextmanager
    def attach(self, cluster: Cluster, workdir: Path) -> Iterator[Target]:
        """``open`` for the length of a ``with`` block."""
        target = self.open(cluster, workdir)
        try:
            yield target
        finally:
            if target.detach is not None:
                target.detach()


class Workload(ABC):
    """Runs a real tool (or engine) on a target and yields measurements as they exist."""

    name: ClassVar[str]
    accepts: ClassVar[frozenset[str]] = frozenset({"path"})
    tool: ClassVar[str | None] = None  # the tool whose output 'dfsbench parse TOOL' reads
    Options: ClassVar[type[Options]] = NoOptions
    # how its records are shown; none: a generic table of every metric it stored
    tables: ClassVar[tuple[Presentation, ...]] = ()
    # a baseline measures what is under the systems, not a system: "network" (its rate is
    # the network limit of the path), "storage", "latency"; never flagged against limits
    baseline: ClassVar[str | None] = None
    version_argv: ClassVar[tuple[str, ...] | None] = None  # prints the tool's version
    # (command, Debian package) every client host that runs it needs
    tools: ClassVar[tuple[tuple[str, str], ...]] = ()
    # a fault each cell runs through (the config's 'fault' next to the options; harness.faults)
    fault: FaultSpec | None = None
    # 'all': every client host of a target runs each cell at once (the config's 'clients', or
    # the environment's default: then only on file system targets); see harness.runner
    clients: str = "first"
    clients_given: bool = False
    # it spreads a cell over every client host itself (fio's client/server mode), rather
    # than being run on each from a common start (harness.together)
    spreads_itself: ClassVar[bool] = False

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        """Option values for a scale (``quick`` or ``report``); the config overrides them."""
        return {}

    def __init__(self, options: PluginOptions) -> None:
        self.options = options

    @classmethod
    def parse(cls, text: str, source: str) -> list[Measurement]:
        """Records from the text ``tool`` printed (for ``dfsbench parse`` and ``import``)."""
        raise NotImplementedError(f"workload {cls.name} reads no tool output")

    def writes(self, cell: dict[str, Any]) -> int:
        """At most how many bytes a cell writes to the target (checked against its free
        space before the cell runs; 0: nothing worth checking)."""
        return 0

    def verification(self) -> str:
        """How this workload, so configured, checks what it reads back against what it
        wrote ('' : it does not) — what a fault run reports as 'verified'."""
        return ""

    def supports(self, target: Target) -> bool:
        """Whether this workload runs on the target (by default: by its kind)."""
        return target.kind in self.accepts

    @abstractmethod
    def cells(self) -> list[dict[str, Any]]:
        """The parameter combinations this workload will run (for progress and planning)."""

    @abstractmethod
    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        """Run one cell on the target; yield each measurement as soon as it exists."""
