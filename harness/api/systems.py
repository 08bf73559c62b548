"""A storage system as a plugin (entry-point group ``dfsbench.systems``): everything about
one system that is not a backend's — the packages its nodes need, how its services come up
on the nodes an environment offers, how they are found on a site that exists, how its health
is read, what a fault may stop and how it notices one, and where it puts the bytes a client
writes.

Environments offer nodes, not systems:

- the local lab offers a directory of its own under the lab and the processes of this host
  (:class:`Processes`; :meth:`LocalLab.start_processes`);
- the container lab offers containers on its shaped network: the system names the nodes it
  wants (:meth:`ContainerLab.container_nodes`), the lab starts and shapes them, and hands them
  over as each comes up (:class:`Containers`; :meth:`ContainerLab.start_containers`);
- the existing environment offers its client hosts and the site's description under the
  system's own key (:attr:`OnSite.Site`; :meth:`OnSite.find_on_site`).

A system is the required core (:class:`System`) and the capabilities it adds: where it can
run (:class:`LocalLab`, :class:`ContainerLab`, :class:`OnSite`) and where its nodes can be
faulted (:class:`LocalFaults`, :class:`ContainerFaults`). What it needs to start and find its
daemons is :mod:`harness.api.daemons`; to mount a client, :mod:`harness.api.mounts`.

Whatever a system starts or creates goes into the lab's ledger the moment it exists, so the
environment undoes it with the rest. The facts a system hands to its backends are a dataclass
of its own (:attr:`System.Service`), which the environment keeps in the ledger as it is.

A system's name is the service its backends ``require`` (``Backend.requires``). Neither
``harness`` nor ``environments`` names any system: they find them in the registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness.api.contracts import Backend, NoOptions, Options, Workload
from harness.api.contracts import Options as Model
from harness.api.tables import Placement
from harness.errors import DfsbenchError
from harness.system.hosts import Host
from harness.system.ledger import Ledger
from harness.system.parallel import Stop

Note = Callable[[str], None]


# ---------------------------------------------------------------- what environments offer


@dataclass
class Processes:
    """The local lab's offer: a directory of the system's own under the lab directory (it
    exists, empty), the lab's ledger, how long a step may take, and where progress goes."""

    root: Path
    ledger: Ledger
    timeout: float
    note: Note


class ContainerNode(Host):
    """A container of the container lab, as a system's bring-up drives it (besides the
    :class:`~harness.system.hosts.Host` API backends and workloads use)."""

    hostname: str | None

    @abstractmethod
    def exec(self, *args: str, timeout: float = 120, check: bool = True) -> str:
        """Run a command in the node; its stdout."""

    @abstractmethod
    def daemon(self, *args: str) -> None:
        """Start a process in the node that outlives this call (in its foreground)."""

    @abstractmethod
    def write_files(self, files: Mapping[str, str], dirs: Sequence[str] = ()) -> None:
        """Write text files into the node, and make these directories."""

    @abstractmethod
    def put_file(self, local: Path, remote: str, mode: int = 0o755) -> None:
        """Copy a file of this host (a binary, say) into the node, as ``remote`` of this mode."""

    @abstractmethod
    def address(self) -> str:
        """The node's address on the lab's network."""

    @abstractmethod
    def wrap(self, argv: Sequence[Any], env: Mapping[str, str] | None = None, cwd: Path | None = None,
             interactive: bool = False) -> list[str]:
        """The command line here that runs ``argv`` in the node."""


@dataclass(frozen=True)
class NodeWish:
    """A node a system wants in the container lab: its host name on the lab's network (which
    names it in faults and tables), whether it holds the system's data (a fault of 'target:
    process' kills its data process; a node that does not — a monitor — may still be faulted
    whole), and where in it a Docker volume of its own is mounted for the system's data (the
    container's root is fuse-overlayfs, which some systems refuse and which is slow)."""

    hostname: str
    stores_data: bool = True
    volume_at: str | None = "/data"


@dataclass
class Containers:
    """The container lab's offer: the system's nodes by host name, each a future that
    resolves the moment its container is up and its link shaped (start with each as it
    comes: the others may still be starting); the client nodes likewise; the network's subnet;
    the ledger; the step timeout; ``phase`` names a step of the bring-up as it ends; ``stop``
    is set when another part of the bring-up failed (``stop.check(what)`` raises then, and
    ``stop.why`` is a ``proc.wait_for`` ``alive``); ``log_dir`` is a directory of this host
    for the system's session logs."""

    nodes: dict[str, Future[ContainerNode]]
    clients: list[Future[ContainerNode]]
    subnet: str
    ledger: Ledger
    timeout: float
    phase: Note
    stop: Stop
    log_dir: Path


@dataclass
class SiteHosts:
    """The existing environment's offer: its client hosts (this machine, or SSH hosts), the
    ledger, and dfsbench's own directory on every client host (``private``: None where
    nothing may be written, as in ``lab status``)."""

    hosts: list[Host]
    ledger: Ledger
    private: Path | None


@dataclass(frozen=True)
class Refusal:
    """What the plan asks that a lab of these sizes cannot hold: the key of the config it
    comes from (``backends[0].options.replicas``), why, and what to do."""

    key: str
    message: str
    hint: str


@dataclass
class Room:
    """How many bytes a cell may write on a system of the local lab, and why."""

    bytes: float
    why: str
    hint: str = "give the workload smaller sizes, or the lab more room under its lab_dir"


# ---------------------------------------------------------------- the plugin

# The version of this contract. A system declares the one it was written against
# (``contract = 2``); the registry refuses one this dfsbench does not speak, naming it.
CONTRACT = 2
SPOKEN = frozenset({2})


class System(ABC):
    """One storage system: the required core. Every system has a name, the Debian packages
    its nodes need, the client its backends reach it with, where it puts each byte written
    (:meth:`placement`) and how its health is read (:meth:`health_of`). Where it can run,
    and whether it can be faulted, are capabilities it adds by also subclassing
    :class:`LocalLab`, :class:`ContainerLab`, :class:`OnSite`, :class:`LocalFaults` or
    :class:`ContainerFaults`; an environment offers only the systems with the capability it
    names (``Environment.capability``), and ``check`` refuses a plan that places a system
    elsewhere.

    An instance is made per environment, with that environment's options (whose keys include
    the system's own sizing keys: :attr:`LocalLab.LocalOptions` in the local lab,
    :attr:`ContainerLab.ContainerOptions` in the container lab; the existing environment's
    options hold the system's :attr:`OnSite.Site` section under its name)."""

    name: ClassVar[str]  # the service name backends require ('ceph')
    display: ClassVar[str]  # how people call it ('Ceph')
    contract: ClassVar[int]  # the version of this contract it was written against (CONTRACT)
    Service: ClassVar[type]  # the dataclass of facts its backends get (Cluster.service)
    # Debian packages every node of the container lab needs for it (servers and clients)
    packages: ClassVar[tuple[str, ...]] = ()
    # the client its backends reach it with, as ``list`` shows it ('ceph-fuse, librados, librbd')
    client: ClassVar[str]
    Options: ClassVar[type[Model]] = NoOptions  # (the registry's contract; unused)

    def __init__(self, options: Any) -> None:
        self.options = options

    def refusal(self, backend: Backend, index: int, where: str) -> Refusal | None:
        """What of ``backend`` (``backends[index]``) a lab of these sizes cannot hold
        (``where``: 'local', 'docker'), or None."""
        return None

    @classmethod
    @abstractmethod
    def health_of(cls, service: Any, via: Host | None) -> tuple[bool, str]:
        """Whether the system is healthy and what it says, asked from ``via`` (a host that
        reaches it: a client host of a site; None: this host, as the local lab)."""

    @classmethod
    @abstractmethod
    def placement(cls, description: dict[str, Any]) -> Placement:
        """Where it puts each byte written, from an attached target's stored description
        (its backends' :meth:`~harness.api.contracts.Backend.placement`;
        :meth:`Placement.described` reads what a description says by itself)."""

    def said(self, service: Any, via: Host | None) -> str:
        """A line on what was found on a site, or brought up ('Ceph 16.2.15: 3 OSDs,
        HEALTH_OK'), asked from ``via`` where it asks (a client host; None: this host)."""
        return f"{self.display} {getattr(service, 'version', '')}".strip()


class LocalLab(ABC):
    """Capability: its services as processes of this host, in the local lab."""

    # sizing keys it adds to the local lab's options (flat, named after the system:
    # ceph_osds, gluster_replica); their validators check them alone
    LocalOptions: ClassVar[type[Model]] = NoOptions

    @abstractmethod
    def start_processes(self, offer: Processes) -> Any:
        """Its services as processes of this host under ``offer.root`` (each in the ledger
        the moment it exists: :func:`harness.api.daemons.launch`); its Service."""

    def socket_path(self, root: Path) -> Path | None:
        """The longest unix socket path its daemons make under ``root`` (a socket's path is
        at most 107 bytes), or None."""
        return None

    def room(self, backend: Backend, free: int, place: Path) -> Room:
        """What a cell may write on it in the local lab, where ``free`` bytes are free under
        ``place`` (where every copy lives)."""
        from harness.units import size

        copies = self.copies(backend)
        return Room(free / copies, f"{size(free)} free under {place}, {copies:g} copies")

    def copies(self, backend: Backend) -> float:
        """Bytes kept per byte ``backend`` writes, as this lab is sized."""
        return 1.0

    def local_health(self, service: Any) -> tuple[bool, str]:
        health: tuple[bool, str] = type(self).health_of(service, None)  # type: ignore[attr-defined]
        return health


class LocalFaults(LocalLab):
    """Capability: faults in the local lab. A node there is one data process of this host
    (an OSD, a brick, a volume server), named as :meth:`local_nodes` says; the lab kills
    (SIGKILL), stops (SIGTERM, then SIGKILL) or pauses (SIGSTOP) it, and brings it back.
    By default a node is the process :func:`harness.api.daemons.launch` started with that
    ``node`` name, and it comes back as it was started."""

    @abstractmethod
    def local_nodes(self, service: Any) -> list[str]:
        """Its data nodes in the local lab ('osd.0', 'osd.1', …), in order: a fault with
        no ``node`` takes the second."""

    # the nodes an attachment of its may start in the local lab, which a fault may name where one
    # runs: a gateway its clients reach it through (Ceph's 'rgw', SeaweedFS's 's3'), that holds
    # no data (harness.api.daemons.launch with that node, and the URL it answers at)
    local_gateways: ClassVar[tuple[str, ...]] = ()

    def local_pids(self, service: Any, node: str, ledger: Ledger) -> list[int]:
        """The running processes of ``node`` (by default, those the ledger holds for it)."""
        from harness.api.daemons import node_pids

        return node_pids(ledger, node)

    def local_restart(self, service: Any, node: str, ledger: Ledger, timeout: float) -> None:
        """``node`` started again after a fault, returning once it runs (by default, as it
        was launched)."""
        from harness.api.daemons import relaunch

        relaunch(ledger, node, timeout)

    def local_noticed(self, service: Any, down: str) -> tuple[bool | None, str]:
        """Whether its own state shows that node ``down`` is gone (an OSD marked down, a
        brick offline), and what it said; None where it cannot be asked. With no node
        named (''), whether it shows any of its nodes gone (asked before a fault: it must
        not)."""
        return None, "it cannot tell when it notices a fault"


class ContainerLab(ABC):
    """Capability: its services on nodes of the container lab."""

    # sizing keys it adds to the container lab's options (flat, named after the system)
    ContainerOptions: ClassVar[type[Model]] = NoOptions

    @abstractmethod
    def container_nodes(self) -> list[NodeWish]:
        """The nodes it wants, as this lab is sized (their host names unique in the lab)."""

    @abstractmethod
    def start_containers(self, offer: Containers) -> dict[str, Any]:
        """Its services on the nodes offered; the facts of what it made (JSON), kept in the
        lab's ledger and handed back to :meth:`container_service` and the fault methods."""

    @abstractmethod
    def container_service(self, facts: dict[str, Any], phases: dict[str, float]) -> Any:
        """Its Service, as the client nodes reach it."""

    @abstractmethod
    def container_health(self, facts: dict[str, Any], node: Callable[[str], ContainerNode]) -> tuple[bool, str]:
        """Its health, asked in its nodes (``node(hostname)``)."""

    def aliases(self, facts: dict[str, Any]) -> dict[str, str]:
        """Addresses its Service names its nodes by (a monitor's), each to the node's host name."""
        return {}


class ContainerFaults(ContainerLab):
    """Capability: faults in the container lab (the nodes are those of
    :meth:`ContainerLab.container_nodes`)."""

    @abstractmethod
    def data_process(self) -> str:
        """The name of the process of a storage node that holds its data ('ceph-osd'): what
        a fault of 'target: process' kills."""

    def kill_data(self, node: ContainerNode) -> None:
        """Kill (SIGKILL) the data process of a storage node: by default every process of
        the node of that name (a system whose node runs another process of the same name
        kills its own way)."""
        node.exec("sh", "-c", f"kill -9 $(pidof {self.data_process()})")  # (our daemons, in our container)

    @abstractmethod
    def restart(self, facts: dict[str, Any], node: ContainerNode, whole: bool,
                nodes: Callable[[str], ContainerNode]) -> None:
        """Its daemons started again on ``node`` after a fault (``whole``: the node was
        restarted; else only its data process was killed), returning once they run."""

    def noticed(self, facts: dict[str, Any], down: str,
                nodes: Callable[[str], ContainerNode]) -> tuple[bool | None, str]:
        """Whether its own state shows that node ``down`` is gone (an OSD marked down, a
        brick offline), and what it said; None where it cannot be asked. With no node
        named (''), whether it shows any of its nodes gone (asked before a fault: it must
        not)."""
        return None, "it cannot tell when it notices a fault"


class OnSite(ABC):
    """Capability: found on a site that exists (the existing environment)."""

    # the model of its section of an existing site's description (environment.options.<name>)
    Site: ClassVar[type[Model]]

    @abstractmethod
    def find_on_site(self, spec: Any, offer: SiteHosts) -> Any:
        """Its Service on the site ``spec`` describes (its :attr:`Site` model), reached from
        the offered hosts; nothing created there."""

    def site_health(self, spec: Any, offer: SiteHosts) -> tuple[bool, str]:
        service = self.find_on_site(spec, offer)
        health: tuple[bool, str] = type(self).health_of(service, offer.hosts[0])  # type: ignore[attr-defined]
        return health


# every capability a system may add (each environment names the one it needs: its
# ``capability``, and ``fault_capability`` for faults)
CAPABILITIES: tuple[type, ...] = (LocalLab, LocalFaults, ContainerLab, ContainerFaults, OnSite)


def capable(systems: Mapping[str, type[System]], capability: type) -> dict[str, type[System]]:
    """The systems that have ``capability`` (what an environment offers)."""
    return {name: s for name, s in systems.items() if issubclass(s, capability)}


def refuse_plan(systems: Mapping[str, System], backends: list[Backend], where: str) -> None:
    """Raise the first refusal any system makes of the plan's backends."""
    from harness.errors import BadInput

    for i, b in enumerate(backends):
        for name in sorted(b.requires & set(systems)):
            found = systems[name].refusal(b, i, where)
            if found is not None:
                raise BadInput(f"{found.key}: {b.name}/{b.variant}: {found.message}", hint=found.hint)


def biggest_cell(w: Workload) -> tuple[int, dict[str, Any]]:
    """The most a cell of ``w`` writes, and that cell."""
    return max(((w.writes(cell), cell) for cell in w.cells()), default=(0, {}), key=lambda found: found[0])



def with_sizes(base: type[Options], part: str, systems: Mapping[str, type[System]]) -> type[Options]:
    """``base`` with the sizing keys of every system for one kind of lab (``part``:
    'LocalOptions', 'ContainerOptions'): the lab's options model."""
    parts = [getattr(s, part, NoOptions) for s in systems.values() if getattr(s, part, NoOptions) is not NoOptions]
    if not parts:
        return base
    # (the lab's own keys first, then each system's in the order of their names)
    return type(base.__name__, (*reversed(parts), base), {"__module__": base.__module__, "__doc__": base.__doc__})


def with_sites(base: type[Options], systems: Mapping[str, type[System]]) -> type[Options]:
    """``base`` with a section for each system that can be used on an existing site, under
    the system's name (None: the site has none)."""
    from pydantic import Field, create_model

    sections: dict[str, Any] = {
        name: (s.Site | None, Field(None, description=f"how the client hosts reach {s.display}"))  # type: ignore[attr-defined]
        for name, s in capable(systems, OnSite).items()}
    made: type[Options] = create_model(base.__name__, __base__=base, __module__=base.__module__, **sections)
    return made


# where a gateway an attachment runs in a container node (an S3 gateway) keeps its pid: a
# fault that would stop the whole node finds it there and is refused (a node started again
# starts its system's daemons, not an attachment's gateway)
GATEWAY_PIDFILES = "/run/dfsbench-gateway-"


def runs_gateway(node: ContainerNode) -> bool:
    """Whether an attachment's gateway runs in the node (:data:`GATEWAY_PIDFILES`)."""
    found = node.run(["sh", "-c", f'for f in {GATEWAY_PIDFILES}*.pid; do [ -e "$f" ] && kill -0 "$(cat "$f")" '
                                  '2>/dev/null && exit 0; done; exit 1'], check=False, timeout=30)
    return found.returncode == 0


def wait_running(node: ContainerNode, daemons: dict[str, int], timeout: float) -> None:
    """Wait until the node runs this many processes of each daemon: a restore returns only
    when the node's daemons run again (what happens after is the system's recovery)."""
    from harness.system import proc

    def counted() -> tuple[bool, str]:
        found = {name: len(node.run(["pidof", name], check=False, timeout=30).stdout.split()) for name in daemons}
        return all(found[n] >= want for n, want in daemons.items()), \
            ", ".join(f"{found[n]} of {want} {n}" for n, want in daemons.items())

    proc.wait_for(counted, what=f"the daemons of {node.label} to run again", timeout=timeout, interval=0.2)
