"""The three axes: Environment (obtains a cluster), Backend (attaches a target),
Workload (runs a tool on a target). Built-ins and third-party plugins implement these
and register through the entry-point groups ``dfsbench.environments``,
``dfsbench.backends`` and ``dfsbench.workloads``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.api.faults import Faults, FaultSpec
from harness.api.launch import Launch
from harness.api.model import ConfigModel
from harness.api.records import Measurement
from harness.api.sampler import Sampler
from harness.api.tables import CLIENT, FS_TYPE, REPLICAS, VERSION, Placement, Presentation, SystemFacts, phrases
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.system.hosts import LOCAL, Host
from harness.system.ledger import Ledger
from harness.system.names import NAME_PATTERN  # noqa: F401 (plugins import it from here)
from harness.units import size


# the field types of plugins' options, where plugins have always imported them from
from harness.api.fields import (JOB_SYNTAX, Bytes, ClientName, HostName, HostPath, Name, OptionKey,  # noqa: F401
                                OptionValue, PlainPath, host_address, host_key, option_key)


class Options(ConfigModel):
    """Base of every plugin's options: unknown keys are rejected, and what no config may
    hold (harness.api.model) is refused."""

    # (a schema is built when a plugin's options are first validated, not when its module is
    # imported: a suite looks at every installed plugin, and uses few of them)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


class NoOptions(Options):
    pass


PluginOptions = Options  # the base, as named inside plugin classes whose Options shadows it


S = TypeVar("S")


@dataclass
class Cluster:
    """What an environment hands to backends: per service (``ceph``, ``gluster``), the
    typed facts a client needs (declared by the plugins that make and read them), the ledger where attached clients
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
    faults: Faults | None = None  # what it can do to its storage nodes (see harness.api.faults)
    # per client host (by label): kernel, CPUs, memory, clock offset — stored with each target
    hosts_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # how a cell runs on several client hosts at once (harness.api.launch)
    launch: Launch | None = None
    # a directory of this host on the file system that holds every copy of every system's
    # data (a local lab's OSDs and bricks): what a cell writes must fit there, times replicas
    shared_disk: Path | None = None
    # client hosts (by label) whose link differs from ``link`` (B/s)
    links: dict[str, float] = field(default_factory=dict)
    # shapes every node's link to a rate (B/s) until it is called again: a sweep's 'link'
    # (Environment.sweeps), where the environment can change it without a new lab
    reshape: Callable[[float], None] | None = None
    # where the lab's nodes (containers standing for machines) all run on this machine: a
    # path on the disk that holds the lab's data — a cell of a system of the lab during which
    # this machine's CPUs or that disk were saturated measured the machine, not the design
    # (flagged host-bound)
    host_disk: Path | None = None
    # what the header says of every comparison made in this environment
    note: str = ""

    def service(self, name: str, kind: type[S], backend: str) -> S:
        """The service a backend needs, or an error saying this environment lacks it."""
        found = self.services.get(name)
        if not isinstance(found, kind):
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

    # it may measure a target of this machine's own (Backend.this_host) beside its systems: the
    # container lab may not, whose client and storage nodes stand for machines of their own
    host_targets: ClassVar[bool] = True

    # what a sweep may vary between its points on a cluster that stays up (besides the number
    # of client hosts used, which every environment can): e.g. 'link' (Cluster.reshape)
    sweeps: ClassVar[frozenset[str]] = frozenset()

    def can_fault_system(self, system: str) -> bool:
        """Whether it can fault the nodes of ``system`` (by default: whether it can fault at all)."""
        return self.can_fault

    @property
    def client_hosts(self) -> int:
        """How many client hosts its clusters are measured from (this machine: one)."""
        return 1

    @property
    def clients_elsewhere(self) -> bool:
        """Whether its client hosts are other machines than this one (nodes of its own)."""
        return self.client_nodes

    @classmethod
    def sized_for(cls, options: dict[str, Any], clients: int) -> dict[str, Any]:
        """Its options, so that it has ``clients`` client hosts where the config does not say
        how many (a sweep over the number of clients); by default, as they are."""
        return options

    def sweep_value(self, key: str, value: Any) -> tuple[Any, Any]:
        """A value of a sweep over ``key`` (one of :attr:`sweeps`): what the records carry
        in their params, and what the cluster is set to (for 'link': B/s). ValueError: no
        such value."""
        raise ValueError(f"environment '{self.name}' cannot vary {key}")
    # workloads the report suite adds where this environment serves a run (name, options)
    report_workloads: ClassVar[tuple[dict[str, Any], ...]] = ()
    # the services it can bring up, by name, each with the type of the facts it hands to the
    # backends that require it (see Cluster.service)
    provides: ClassVar[dict[str, type]] = {}
    # what a storage system must have to run in it (harness.api.systems: LocalLab, ContainerLab,
    # OnSite), and to have its nodes faulted in it (LocalFaults, ContainerFaults); None: none
    capability: ClassVar[type | None] = None
    fault_capability: ClassVar[type | None] = None
    # how a line names it ('the local lab'; default: "environment '<name>'")
    said: ClassVar[str] = ""

    @classmethod
    def called(cls) -> str:
        return cls.said or f"environment '{cls.name}'"

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

    def lease(self, what: str, note: Callable[[str], None] | None = None,
              wait: float = 0) -> AbstractContextManager[object]:
        """Hold the lab for the block, so that no other process brings it up, uses it or
        takes it down meanwhile (``what``: who holds it, as another's refusal names it: ``run
        <id>``); refused (DfsbenchError) where another holds it, after waiting up to ``wait``
        seconds for it to be let go. An environment that keeps no lab has nothing to hold."""
        return nullcontext()

    def check_lab(self, services: set[str]) -> None:
        """Refuse (DfsbenchError), before a run begins, a lab that is up and that a run needing
        ``services`` could not use (another's options, services it has not); under the run's
        :meth:`lease`."""

    @abstractmethod
    def start(self, services: set[str], progress: Callable[[str], None] | None = None) -> Cluster:
        """Bring the services up and leave them running; on failure undo and re-raise."""

    @abstractmethod
    def stop(self) -> list[str]:
        """Undo everything the lab recorded (also after a crash); returns problems met."""

    @abstractmethod
    def status(self) -> LabStatus:
        """Processes, service health and mounts of the lab."""


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
    # the built-in suites it is part of ('report': the 2014 report's comparison; 'full'), each
    # with its place among their backends (the report shows GlusterFS first)
    suites: ClassVar[dict[str, int]] = {}
    # its options where a suite, or --backends, names it and the config does not configure it
    suite_options: ClassVar[dict[str, Any]] = {}

    @classmethod
    def suite_options_at(cls, scale: str) -> dict[str, Any]:
        """Its options where a suite, or --backends, names it and the config does not
        configure it, at the run's scale ('quick' or 'report'): :attr:`suite_options` at
        either, unless the backend says otherwise."""
        return dict(cls.suite_options)
    # description keys of its settings, and of what else in its topology changes the
    # numbers (see SystemFacts)
    settings: ClassVar[tuple[str, ...]] = ()
    topology: ClassVar[tuple[str, ...]] = ()
    # its client acknowledges writes from a buffer of its own, O_DIRECT or not, and sends them
    # on at a close or an fsync: an O_DIRECT write through it is flagged (write-behind)
    write_behind: ClassVar[bool] = False
    # the environments that can attach it so far (None: every one that provides its services):
    # check refuses it elsewhere before anything starts, and so does its attachment
    environments: ClassVar[frozenset[str] | None] = None

    def __init__(self, options: PluginOptions, variant: str = "default") -> None:
        self.options = options
        self.variant = variant

    @property
    def kind(self) -> str:
        """The kind of target this backend, so configured, will hand out."""
        return self.target_kind

    @classmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """Where its system puts each byte written to the target (how many copies, made by
        the client or by the servers, over how many storage nodes), from its stored
        description: the ceilings and the cost read it. A system's backends answer as the
        system does (``harness.api.systems.System.placement``)."""
        return Placement.described(description)

    @classmethod
    def facts(cls, description: dict[str, Any]) -> SystemFacts:
        """The facts of one attached target, from its stored description (so stored and
        imported runs get them too): its placement, and how the header shows it."""
        where = cls.placement(description)
        return SystemFacts(cls.display or cls.name, cls.network, where.client_sends, cls.control, where.copies,
                           cls.summary(description), cls.settings, cls.topology, cls.layout(description),
                           where.storage_nodes, client_fanout=where.by_client, services=tuple(sorted(cls.requires)),
                           taken_in=where.taken_in, write_behind=cls.write_behind)

    @classmethod
    def summary(cls, description: dict[str, Any]) -> tuple[str, ...]:
        """The header's words on an attached system: its version, replicas, client and the
        type of its file system, where the description has them."""
        return phrases(description, VERSION, REPLICAS, CLIENT, FS_TYPE)

    @classmethod
    def layout(cls, description: dict[str, Any]) -> Any:
        """How the system keeps the target's data, where the description says (an existing
        cluster's): two runs whose layouts differ are not comparable. None: not known."""
        return None

    def holds(self) -> tuple[str, int] | None:
        """How many bytes the block device or RBD image it hands out holds, where the plan
        already fixes it, and the option that does (``("image_size", 2 << 30)``); None: a
        file system (its free space is checked before each cell), or not known before it is
        attached. The attached target says the same as ``Target.holds``."""
        return None

    def only_here(self) -> tuple[str, str] | None:
        """The key of its entry that, so configured, makes its target one that only a client
        on this machine reaches (``options.access``: a file system an image is given through a
        loop device of the client), and why; None: a client host anywhere reaches it. An
        environment whose client hosts are other machines (:attr:`Environment.clients_elsewhere`)
        cannot attach it: check refuses it from the plan, and the attachment by the same rule
        where its client is not this machine (:func:`attachable`)."""
        return None

    def this_host(self) -> tuple[str, str] | None:
        """The key of its entry that, so configured, makes its target this machine's own (a
        directory, a device of this host: ``name`` for the backend itself, ``options.device``),
        measured from this machine whatever the environment's client hosts, and what it is;
        None: a cluster's. An environment that measures targets of its own nodes only
        (:attr:`Environment.host_targets` false) refuses it."""
        return None

    def directory(self) -> Path | None:
        """The directory of this machine its target is, where its options name one (what a
        cell writes must fit there); None: none named (a place in the run's own directory,
        or a cluster's)."""
        return None

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
        """``open`` for the length of a ``with`` block (refused at once where its target is
        one only this machine's client reaches, and the cluster's client is not this machine:
        :func:`attachable`)."""
        found = attachable(self, not cluster.clients or cluster.clients[0].local,
                           f"environment '{cluster.environment}'")
        if found is not None:
            raise DfsbenchError(found[1], hint=ATTACH_HINT)
        elsewhere = attached_in(self, cluster.environment)
        if elsewhere is not None:
            raise DfsbenchError(elsewhere[1], hint=elsewhere[2])
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
    # a fault each cell runs through (the config's 'fault' next to the options; harness.api.faults)
    fault: FaultSpec | None = None
    # 'all': every client host of a target runs each cell at once (the config's 'clients', or
    # the environment's default: then only on file system targets); see harness.execution.together
    clients: str = "first"
    clients_given: bool = False
    # the MPI ranks on each client host of a cell run on several (the config entry's
    # 'ranks_per_client'; None: the environment's)
    ranks_per_client: int | None = None
    # its timed phases are engine calls or measuring tools (Host.engine or Host.run_tool,
    # right after Target.begin): on several client hosts it can run as the ranks of one MPI
    # job (harness.execution.ranks)
    ranks: ClassVar[bool] = False
    # it calls Target.begin right before each timed phase (so several clients start each
    # together, and a fault's clock starts with the measured work); else the cell's start
    # stands for its timed start
    times_phases: ClassVar[bool] = False
    # its cells may run in any order: none reads what another left, or depends on another
    # having run (the run shuffles them with the order's seed, so that their order does not
    # line up with time: harness.execution.order); else they run as :meth:`cells` lists them
    any_order: ClassVar[bool] = False
    # the parser of ``tool``'s output: ``parser(text, source=…)`` → records (a staticmethod)
    parser: ClassVar[Callable[..., list[Measurement]] | None] = None
    # what the parser's records leave out of the tool's output, and why: said where it is
    # parsed or imported ('' where it reads all of it)
    parser_leaves: ClassVar[str] = ""
    # the built-in suites it is part of ('report': the 2014 report's comparison), each with
    # its place among their workloads ('full' runs every workload a backend supports)
    suites: ClassVar[dict[str, int]] = {}

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        """Option values for a scale (``quick`` or ``report``); the config overrides them."""
        return {}

    def __init__(self, options: PluginOptions) -> None:
        self.options = options

    @classmethod
    def parse(cls, text: str, source: str) -> list[Measurement]:
        """Records from the text ``tool`` printed (for ``dfsbench parse`` and ``import``)."""
        if cls.parser is None:
            raise NotImplementedError(f"workload {cls.name} reads no tool output")
        return cls.parser(text, source=source)

    @classmethod
    def is_write(cls, record: Measurement) -> bool:
        """Whether a record of this workload measures writing (its ceiling is the link over
        the copies a write sends; a read after a write needs no cache drop before it). A
        property of the record's cell: decided from its test and its params but the
        circumstantial ones (harness.api.records.CIRCUMSTANTIAL), never from its value, repeat
        or when it ran — the view decides it once per cell (harness.report.limits)."""
        return record.test == "write"

    @classmethod
    def reference(cls, rows: list[dict[str, str]], run_id: str) -> Iterator[Measurement]:
        """Records of a published table of this workload: the rows of
        ``results/reference/NAME/<workload>.tsv``, in the units the source printed."""
        raise NotImplementedError(f"workload {cls.name} reads no reference table")

    def spreads_itself(self) -> bool:
        """Whether, so configured, it spreads a cell over several hosts itself (fio's
        client/server mode), rather than being run on each client host at once from a
        common start (harness.execution.together)."""
        return False

    def on_this_host(self) -> str:
        """The option that, so configured, runs the workload's load on this machine itself
        rather than on the target's client host ('' : none) — which an environment whose
        client hosts are other machines cannot do (Environment.clients_elsewhere)."""
        return ""

    def clients_asked(self) -> str | None:
        """'all' where the workload's own options ask for every client host at once (as
        the config's 'clients: all' does), else None."""
        return None

    def writes(self, cell: dict[str, Any]) -> int:
        """At most how many bytes a cell writes to the target (checked against its free
        space before the cell runs; 0: nothing worth checking)."""
        return 0

    def reaches(self, cell: dict[str, Any]) -> tuple[str, int] | None:
        """How far from its start into a block device or an RBD image a cell's I/O goes, and
        the option that says so (fio: ``("size", …)``); None: its options do not say (a
        user's job file). See :func:`reaches_past`."""
        return None

    def lasts(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        """How long a cell's timed phase lasts as its options fix it, and the option that
        does (fio's ``runtime_s``, time-based); None where its length is the data's, not the
        config's (a copy takes what it takes). A fault after it is never done
        (:meth:`FaultSpec.too_late`)."""
        return None

    def warmup(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        """How long the cell's tool runs untimed before its timed phase (fio's ``ramp_time``:
        excluded from its figures), and the option that says so; None: no warm-up. A
        deadline covers it and the timed phase (:meth:`lasts`); a fault's ``after_s`` is
        counted from its end, the measured work's start."""
        return None

    def unrunnable(self, kind: str) -> tuple[str, str, str] | None:
        """What of its options, so configured, it cannot run as its config says on a target
        of this kind, before its first I/O (a rate its jobs cannot split into whole I/Os, a
        record larger than its file, a queue deeper than its tool takes): the key under its
        options (``load.iops[0]``), why, and what would work; None: nothing. One rule for check
        (asked of every backend of the plan) and the run (asked of the target before each
        cell, harness.execution.checks.room_for)."""
        return None

    def bound(self, cell: dict[str, Any]) -> tuple[str, float] | None:
        """How long one run of the cell's tool may take before it is stopped as hung, and the
        option that says so (``("deadline_s", 1800.0)``); None: no bound of its own. Check
        refuses a bound shorter than the cell lasts (:meth:`lasts`), and a fault restored after
        it (the tool, waiting on the node, would be stopped before it is back)."""
        return None

    def refuses(self, kind: str) -> tuple[str, str] | None:
        """The option that, so configured, keeps it off a target of this kind, and why
        (None: it runs there as on any kind it accepts) — asked at check, of every backend
        of the plan, and by the run, of the target."""
        return None

    def entry(self) -> dict[str, Any]:
        """What sets this entry of the config apart from another entry of the same
        workload besides its cells: its fault, and 'clients' where the config gave it
        (part of each cell's key; empty for an entry with neither, whose keys stay as
        earlier versions stored them)."""
        found: dict[str, Any] = {}
        if self.fault is not None:
            found["fault"] = self.fault.model_dump(mode="json")
        if self.clients_given:
            found["clients"] = self.clients
        if self.ranks_per_client is not None:
            found["ranks_per_client"] = self.ranks_per_client
        return found

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


def reaches_past(workload: Workload, cell: dict[str, Any], holds: int, device: str) -> tuple[str, str] | None:
    """The option of a cell whose I/O would reach past the end of a block device or an RBD
    image of ``holds`` bytes (``device`` names it), and what that would do; None: it stays
    within. fio keeps its offsets within the device (fio 3.33: ``size=32M`` on a 16 MiB loop
    device wrote 16 MiB and reported no error), so such a cell would measure a smaller
    working set than its config says, in silence. One rule for check (a backend's
    :meth:`Backend.holds`) and the run (``Target.holds``)."""
    reach = workload.reaches(cell)
    if reach is None or reach[1] <= holds:
        return None
    key, far = reach
    return key, (f"{size(far)} is more than {device} holds ({size(holds)}): {workload.name} would keep its "
                 f"I/O within its {size(holds)}, and measure a smaller working set than the {size(far)} "
                 "its config says")


def attached_in(backend: Backend, environment: str) -> tuple[str, str, str] | None:
    """Why ``backend`` cannot be attached in ``environment`` (:attr:`Backend.environments`):
    the key, the message, a hint; None: it can."""
    can = backend.environments
    if can is None or environment in can:
        return None
    return "name", (f"{backend.name}/{backend.variant}: dfsbench attaches {backend.name} in environment "
                    f"{' and '.join(repr(e) for e in sorted(can))} only, so far, not in '{environment}'"), \
        f"measure {backend.name} in {' or '.join(repr(e) for e in sorted(can))}, or leave it out here"


ATTACH_HINT = ("leave it out here, or measure it where this machine is the client: the local lab, or an existing "
               "site that names no client hosts")


def attachable(backend: Backend, client_here: bool, where: str) -> tuple[str, str] | None:
    """Why ``backend``, so configured, cannot be attached from a client host that is not
    this machine (``client_here`` false), by its key (:meth:`Backend.only_here`); None: it
    can. One rule for check (an environment whose clients are other machines) and the
    attachment (its client host); ``where`` names the client side in the message."""
    found = backend.only_here()
    if found is None or client_here:
        return None
    key, why = found
    return key, (f"{backend.name}/{backend.variant}: {where} measures from client hosts that are other machines, "
                 f"and {why}")
