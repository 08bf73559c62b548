"""Environment ``docker``: a multi-node lab in containers, managed with testcontainers.

Storage nodes and client nodes are containers of locally built images
(``environments.node_image``: a system's storage nodes run its own layer, the client nodes
one that holds every system of the lab) on a private Docker network of their own, each
link shaped like the declared one (``tc`` tbf on egress, and on ingress through an ifb
device). Each storage system asked for names the nodes it wants
(``harness.api.systems.System.container_nodes``: nodes that hold its data, and others
such as a monitor's), each with a Docker volume for its data where it asks (the
container root is fuse-overlayfs, which some systems refuse and which is slow); the lab
starts and shapes them, with ``clients`` client nodes, and hands each system its nodes the
moment each is up (``System.start_containers``). The lab mounts nothing: each attachment
of a backend mounts one client per client node, and the workloads run there
(``environments.nodes``), their raw outputs kept here.

Everything created carries the label ``dfsbench.lab=<lab id>`` and goes into the lab's
ledger with the command that removes it, the moment it exists; ``lab down`` undoes the
ledger and then removes whatever else carries the lab's label (a container created just
before a crash), and nothing else.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shlex
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field, SerializationInfo, ValidationError, field_serializer, field_validator, model_validator

from environments import node_image
from environments.docker_faults import LabFaults
from environments.node_stats import NodeSampler
from environments.nodes import Node, running
from harness.system.parallel import Stop, Threads
from harness.api import registry
from harness.api.contracts import Backend, Cluster, LabStatus, Options, ServiceHealth, Workload
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.launch import LAUNCH_OPTIONS, Launch, Launching
from harness.api.systems import (ContainerFaults, ContainerLab, ContainerNode, Containers, NodeWish, System, capable,
                                 refuse_plan, with_sizes)
from harness.api.model import link_rate
from harness.api.sampler import CLIENT, MIN_SAMPLE_S, SERVER, NodeRole
from harness.errors import BadInput, DfsbenchError
from harness.system import files, proc, signals
from harness.system.hosts import Host
from harness.system.ledger import Ledger
from harness.units import parse_rate

LABEL = "dfsbench.lab"
SYSTEMS = capable(registry.systems(), ContainerLab)  # (those that can run here)
T = TypeVar("T")
SHARED = ("the container lab: every node is a container of this one machine, sharing its CPUs and its "
          "disk; the links between them are shaped, their CPUs and disk are not")


class Link(Options):
    """The link of every node. Only a rate can be emulated here: this kernel has no netem."""

    rate: str = Field("1Gbit", description="e.g. 1Gbit, 100Mbit, 125MB/s")
    delay: str | None = Field(None, description="not available: this kernel has no netem")
    loss: str | None = Field(None, description="not available: this kernel has no netem")

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: str) -> str:
        return link_rate(v)

    @field_serializer("rate")
    def _as_read(self, v: str, info: SerializationInfo) -> str | int:
        # (asked for the values as read, as a lab's options are compared: '1Gbit' and
        # '1000Mbit' are one rate)
        return self.bits_per_second if (info.context or {}).get("as_read") else v

    @field_validator("delay", "loss")
    @classmethod
    def _no_netem(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError("delay and loss need tc netem, which this kernel does not have: only "
                             "the link's rate is shaped (tc tbf); remove delay/loss")
        return v

    @property
    def bits_per_second(self) -> int:
        return int(parse_rate(self.rate) * 8)


class LabShape(LabOptions, Launching):
    clients: int = Field(2, ge=1, le=8, description="client nodes (containers client1, client2, …); a workload runs on the first unless its entry says clients: all")
    link: Link = Field(default_factory=lambda: Link(), description="the link every node is shaped to (tc on its interface): its rate")
    client_links: dict[str, Link] = Field(default_factory=dict, description="a link of its own for a "
                                          "client node, by name (client1, client2, …): e.g. one client "
                                          "behind a slower link than the others")
    ready_timeout_s: float = Field(180, gt=0, description="seconds the lab may take to come up and be healthy before lab up fails (and undoes what it made)")
    sample_every_s: float = Field(2.0, ge=0, description="how often each node's resources are "
                                  "sampled within a cell (Docker stats; 0: at its start and end only, "
                                  "which costs the least CPU on a small host); at least "
                                  f"{MIN_SAMPLE_S} s")

    @field_validator("sample_every_s")
    @classmethod
    def _period(cls, v: float) -> float:
        if 0 < v < MIN_SAMPLE_S:  # (the sampler would ask Docker for stats without pause)
            raise ValueError(f"{v:g} s: a sample period is at least {MIN_SAMPLE_S} s (each sample asks every "
                             "node's stats), or 0 for a cell's start and end only")
        return v

    @model_validator(mode="after")
    def _clients(self) -> LabShape:
        unknown = sorted(set(self.client_links) - {f"client{j + 1}" for j in range(self.clients)})
        if unknown:
            raise ValueError(f"client_links names {', '.join(unknown)}, and the lab's clients are client1 "
                             f"to client{self.clients}")
        return self


# the lab's own keys and every system's sizing keys (each named after its system)
DockerOptions = with_sizes(LabShape, "ContainerOptions", SYSTEMS)


def ipv4_subnet(said: str) -> str | None:
    """The lab network's IPv4 subnet, of what Docker says of its subnets (None: none is one):
    the network the MPI launcher's daemons and ranks talk over."""
    for word in said.split():
        try:
            return str(ipaddress.IPv4Network(word, strict=False))
        except ValueError:
            continue
    return None


def docker(*args: str, timeout: float = 120, check: bool = True) -> str:
    return proc.run(["docker", *args], timeout=timeout, check=check).stdout


class DockerEnvironment(LabEnvironment):
    name = "docker"
    Options = DockerOptions
    options: Any
    client_nodes = True
    host_targets = False  # (a directory or a device of the host its nodes share is none of theirs)
    can_fault = True  # (its nodes whole; a system's data process, where it names one: ContainerFaults)
    provides = {name: s.Service for name, s in SYSTEMS.items()}
    capability = ContainerLab
    fault_capability = ContainerFaults
    said = "the container lab"
    # the report's suite, plus fio loading the target from every client node at once
    report_workloads = ({"name": "fio", "options": {"all_clients": True}},)

    run_only = LabEnvironment.run_only | {"ready_timeout_s", "sample_every_s"} | LAUNCH_OPTIONS

    @property
    def where(self) -> str:
        return f"Docker, ledger in {self.lab_dir}"

    def can_fault_system(self, system: str) -> bool:
        return isinstance(self.systems.get(system), self.fault_capability)

    def system_keys(self) -> dict[str, frozenset[str]]:
        return {name: frozenset(type(s).ContainerOptions.model_fields) for name, s in self.systems.items()}

    sweeps = frozenset({"link"})  # (tc replaces a node's shaping in place: no new lab)

    @property
    def client_hosts(self) -> int:
        return self.options.clients

    @classmethod
    def sized_for(cls, options: dict[str, Any], clients: int) -> dict[str, Any]:
        return options if "clients" in options else {**options, "clients": clients}

    def sweep_value(self, key: str, value: Any) -> tuple[Any, Any]:
        if key != "link":
            return super().sweep_value(key, value)
        if self.options.client_links:
            raise ValueError("client_links gives client nodes links of their own, and a swept link would "
                             "reshape every node; leave one of them out")
        try:
            link = Link.model_validate({"rate": value} if isinstance(value, str) else value)
        except ValidationError as exc:
            raise ValueError("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from None
        return link.rate, link.bits_per_second / 8

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.systems: dict[str, Any] = {name: s(options) for name, s in SYSTEMS.items()}

    def nodes(self, system: str) -> list[str]:
        """The names of a system's nodes a fault may name: those that hold its data first."""
        wishes = self.systems[system].container_nodes()
        return [w.hostname for w in wishes if w.stores_data] + [w.hostname for w in wishes if not w.stores_data]

    def storage_nodes(self, system: str) -> list[str]:
        """The nodes of a system that hold its data: those whose data process a fault of
        'target: process' kills (a monitor node runs none)."""
        return [w.hostname for w in self.systems[system].container_nodes() if w.stores_data]

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """A fault that names a node names one of every system its workload runs on: a
        node of one system would stop the other's cells, and one the lab has not, every cell.
        What a system refuses of a backend on the lab's nodes (a pool of more copies than
        OSD nodes, a volume of a backend's own whose sets the nodes cannot hold apart)."""
        refuse_plan(self.systems, backends, "docker")
        for w in workloads:
            if w.fault is not None and w.fault.target == "process" and w.fault.action != "kill":
                raise BadInput(f"workload {w.name}: a fault of one data process here kills it (SIGKILL): "
                               f"'{w.fault.action}' would be done as a kill, and recorded so",
                               hint="give 'action: kill' with 'target: process', or "
                                    f"'{w.fault.action}' the whole node ('target: node')")
            if w.fault is None or w.fault.node is None:
                continue
            for b in backends:
                for system in sorted(b.requires & set(self.systems)):
                    if w.fault.node not in self.nodes(system):
                        raise BadInput(f"workload {w.name}: fault node '{files.printable(w.fault.node)}' is "
                                       f"not a {system} node of this lab, and {w.name} runs on "
                                       f"{b.name}/{b.variant}", hint=f"its {system} nodes: "
                                       f"{', '.join(self.nodes(system))}; leave 'node' out to fault the "
                                       "second storage node of each system")
                    if w.fault.target == "process" and w.fault.node not in self.storage_nodes(system):
                        raise BadInput(f"workload {w.name}: fault node '{files.printable(w.fault.node)}' runs no "
                                       f"data process of {system} for 'target: process' to kill (it holds no "
                                       "data)", hint=f"name one of {', '.join(self.storage_nodes(system))}, or "
                                       "fault the whole node with 'target: node'")

    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, Any]:
        t0 = time.monotonic()
        asked = {name: self.systems[name] for name in sorted(services or set(self.provides))}
        built = node_image.ensure({name: type(system).packages for name, system in asked.items()}, note)  # (as checked)
        images = built.images
        note(f"node images of {', '.join(asked)}: {len(built.built)} built, "
             f"{len(images.layers) - len(built.built)} reused, in {built.seconds:.1f} s")
        lab = secrets.token_hex(3)
        # (a crash from here on: swept by label)
        ledger.data["docker"] = {"lab": lab, "images": {"systems": images.systems, "clients": images.clients}}
        ledger.save()
        bringup = LabBringUp(self.options, ledger, lab, images, asked, note)
        facts = bringup.run()
        ledger.data["docker"].update(facts)
        ledger.data["timings"] = {**bringup.phases, "total": time.monotonic() - t0}
        note(f"docker lab {lab} up in {time.monotonic() - t0:.1f} s")
        return lab_services(self.systems, ledger.data["docker"], bringup.phases)

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        """What backends get of the lab: its services as seen from a client node (as each
        system hands them: a configuration file in the client nodes, an address of a storage
        node), the client nodes, and the declared link."""
        facts = ledger.data.get("docker", {})
        lab = f"dfsbench-{facts.get('lab')}-"
        clients = tuple(Node(name, name.removeprefix(lab)) for name in facts.get("clients", []))
        link = parse_rate(facts["link"]) if facts.get("link") else None
        made = lab_systems(facts)
        storage = [hostname for name in sorted(made) for hostname in made[name]["nodes"]]
        nodes = [*clients, *(Node(lab + hostname, hostname) for hostname in storage)]
        servers: dict[str, Host] = {n.label: n for n in nodes}
        for name in sorted(made):  # (a service may name a node by its address: a monitor's)
            if name in self.systems:
                for address, hostname in self.systems[name].aliases(made[name]["facts"]).items():
                    servers[address] = servers[hostname]

        # what each node is: a client, or a storage node of one system (its cost counts only its own)
        roles = {n.label: NodeRole(CLIENT) for n in clients}
        roles.update({hostname: NodeRole(SERVER, (name,)) for name in made for hostname in made[name]["nodes"]})

        def sampler() -> NodeSampler:
            return NodeSampler(nodes, list(clients), self.options.sample_every_s, roles)

        shaped = {"now": link}  # (a node brought back after a fault gets the link of that moment)

        def reshape(rate: float) -> None:
            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(lambda node: reshaped(node, int(rate * 8)), nodes))
            shaped["now"] = rate

        faults = LabFaults(self.systems, facts, lambda node: shape(node, int(shaped["now"] * 8)) if shaped["now"] else None)
        links = {name: parse_rate(rate) for name, rate in (facts.get("links") or {}).items()}
        network = ipv4_subnet(docker("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
                                     str(facts.get("network")), timeout=30, check=False)) if facts.get("network") else None
        return Cluster("docker", services, ledger, self.lab_dir, reused, clients, link, sampler=sampler,
                       servers=servers, faults=faults, hosts_facts=facts.get("client_facts") or {}, links=links,
                       host_disk=Path(facts.get("docker_root") or "/var/lib/docker"), note=SHARED,
                       reshape=reshape if link else None, launch=Launch.of(self.options, network))

    def check_alive(self, ledger: Ledger) -> None:
        """Refuse a lab whose nodes are down, or that an earlier dfsbench set up (it did not
        record which node is whose: its storage nodes would count for no system's cost, and
        no fault could find them)."""
        if "systems" not in ledger.data.get("docker", {}):
            raise DfsbenchError(f"the docker lab in {self.lab_dir} was set up by an earlier version of dfsbench, "
                                "which did not record which system each node serves",
                                hint="run 'dfsbench lab down --env docker' and let the run start a new one")
        prefix = f"dfsbench-{ledger.data.get('docker', {}).get('lab')}-"
        down = [name.removeprefix(prefix) for name, up in
                running(ledger.data.get("docker", {}).get("clients", [])).items() if not up]
        if down:
            raise DfsbenchError(f"the docker lab is broken: client node(s) {', '.join(down)} not running",
                                hint="run 'dfsbench lab down --env docker', then try again")

    def undo(self, ledger: Ledger) -> list[str]:
        """The ledger, then whatever else carries the lab's label (made just before a crash)."""
        lab = ledger.data.get("docker", {}).get("lab")
        problems = super().undo(ledger)
        return problems + sweep(lab) if lab else problems

    def status(self) -> LabStatus:
        ledger = self.saved()
        if ledger is None:
            return LabStatus(False, self.where)
        facts = ledger.data.get("docker", {})
        prefix = f"dfsbench-{facts.get('lab')}-"
        made = {name: made for name, made in lab_systems(facts).items() if name in self.systems}

        def health(name: str) -> ServiceHealth:
            try:
                ok, text = self.systems[name].container_health(made[name]["facts"],
                                                               lambda hostname: Node(prefix + hostname, hostname))
            except DfsbenchError as exc:
                ok, text = False, exc.message
            return ServiceHealth(name, ok, text)

        names = [prefix + hostname for name in sorted(made) for hostname in made[name]["nodes"]]
        with ThreadPoolExecutor(max_workers=len(made) or 1) as pool:  # (each system asked at once)
            services = [pool.submit(health, name) for name in sorted(made)]
            up = running(names + list(facts.get("clients", [])))
            # (no mounts: each run's backends mount their own client on each client node)
            return LabStatus(True, self.where, tuple(s.result() for s in services), (), tuple(up.items()))


def lab_systems(facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the lab made for each system (its ledger's): the nodes by host name (those that
    hold data under 'data'), and the system's facts."""
    found = facts.get("systems")
    return found if isinstance(found, dict) else {}


def lab_services(systems: dict[str, Any], facts: dict[str, Any], phases: dict[str, float]) -> dict[str, Any]:
    """The services of a lab as its client nodes reach them, from what its bring-up found."""
    return {name: systems[name].container_service(made["facts"], phases)
            for name, made in lab_systems(facts).items() if name in systems}


def link_of(options: Any, hostname: str) -> Link:
    """The link a node is shaped to: its own, or the lab's."""
    return options.client_links.get(hostname, options.link)


def shape(node: Node, bits_per_second: int) -> None:
    """tbf on the node's egress, and on its ingress through ifb0 (mirred redirect): the
    commands of :func:`shaping` in one ``docker exec``, the first that fails failing it."""
    node.exec("sh", "-c", " && ".join(shlex.join(argv) for argv in shaping(bits_per_second)))


def shaping(bits_per_second: int) -> list[list[str]]:
    """The commands that shape a node's link, both ways."""
    shaper = _tbf(bits_per_second)
    return [["tc", "qdisc", "replace", "dev", "eth0", "root", *shaper],
            ["ip", "link", "add", "ifb0", "type", "ifb"],
            ["ip", "link", "set", "ifb0", "up"],
            ["tc", "qdisc", "add", "dev", "eth0", "handle", "ffff:", "ingress"],
            # (u32 matching everything: this kernel has no matchall classifier)
            ["tc", "filter", "add", "dev", "eth0", "parent", "ffff:", "protocol", "all", "u32",
             "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", "ifb0"],
            ["tc", "qdisc", "replace", "dev", "ifb0", "root", *shaper]]


def _tbf(bits_per_second: int) -> list[str]:
    return ["tbf", "rate", f"{bits_per_second}bit", "burst", "256kb", "latency", "50ms"]


def reshaped(node: Node, bits_per_second: int) -> None:
    """A shaped node's link set to another rate in place, both ways (as :func:`shape` made it)."""
    shaper = _tbf(bits_per_second)
    node.exec("tc", "qdisc", "replace", "dev", "eth0", "root", *shaper)
    node.exec("tc", "qdisc", "replace", "dev", "ifb0", "root", *shaper)


def sweep(lab: str) -> list[str]:
    """Remove whatever still carries this lab's label (created just before a crash, before
    the ledger heard of it): containers, then volumes, then networks. Nothing else."""
    problems = []
    selector = f"label={LABEL}={lab}"
    kinds = ((["ps", "-aq", "--filter", selector], ["rm", "-f", "-v"]),
             (["volume", "ls", "-q", "--filter", selector], ["volume", "rm", "-f"]),
             (["network", "ls", "-q", "--filter", selector], ["network", "rm"]))
    for listing, removal in kinds:
        found = docker(*listing, check=False).split()
        if found:
            result = proc.run(["docker", *removal, *found], check=False, timeout=120)
            if result.returncode != 0:
                problems.append(f"docker {' '.join(removal)}: {result.stderr.strip()[-300:]}")
    return problems


class LabBringUp:
    """The nodes of each system asked for and the client nodes, on a shaped private
    network. Nothing waits for what it does not need: each node is shaped the moment its
    container is up, and each system is handed its nodes as they come (a system's part
    waits for its own nodes only). A part that fails stops the waits of the others; the
    error raised is the first part's."""

    def __init__(self, options: Any, ledger: Ledger, lab: str, images: node_image.Images,
                 systems: dict[str, Any], note: Callable[[str], None]) -> None:
        self.o, self.ledger, self.lab, self.images, self.note = options, ledger, lab, images, note
        self.systems = systems
        self.labels = {LABEL: lab}
        self.network = f"dfsbench-{lab}"
        self.phases: dict[str, float] = {}
        self._t0 = time.monotonic()
        self.stop = Stop()
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def phase(self, name: str) -> None:
        """Seconds from the start of the bring-up to the end of this phase."""
        with self._lock:
            self.phases[name] = time.monotonic() - self._t0
        self.note(f"{name} at {self.phases[name]:.1f} s")

    def _counted(self, what: str, of: int, name: str) -> None:
        """The phase ``name`` when the last of ``of`` nodes has done ``what``."""
        with self._lock:
            self._counts[what] = self._counts.get(what, 0) + 1
            last = self._counts[what] == of
        if last:
            self.phase(name)

    def part(self, job: Callable[..., T], *args: Any) -> T:
        """One part of the bring-up: where it fails, the others stop."""
        try:
            return job(*args)
        except BaseException as error:
            self.stop.fail(error)
            raise

    def run(self) -> dict[str, Any]:
        from testcontainers.core.network import Network

        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # Ryuk cannot be pulled here
        network = Network(docker_network_kw={"labels": self.labels})
        network.name = self.network
        network.create()
        self.ledger.command(["docker", "network", "rm", self.network], f"network {self.network}",
                            exists=["docker", "network", "inspect", "--format", "{{.Name}}", self.network])
        wanted: dict[str, list[NodeWish]] = {name: system.container_nodes() for name, system in self.systems.items()}
        seen: dict[str, str] = {}
        for name, wishes in wanted.items():
            for wish in wishes:
                if wish.hostname in seen or wish.hostname.startswith("client"):
                    raise DfsbenchError(f"the {name} system wants a node named {wish.hostname}, which "
                                        f"{seen.get(wish.hostname, 'the client nodes')} already has",
                                        hint="a system's nodes need names of their own")
                seen[wish.hostname] = name
        clients = [f"client{j + 1}" for j in range(self.o.clients)]
        total = sum(len(w) for w in wanted.values()) + len(clients)
        links = f"links shaped to {self.o.link.rate}" + "".join(
            f", {name}'s to {link.rate}" for name, link in sorted(self.o.client_links.items()))
        subnet = docker("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
                        self.network, timeout=30).strip()
        with Threads(max_workers=total + len(clients) + len(wanted) + 1) as pool:  # (one each)
            started = {name: {w.hostname: pool.submit(self.part, self.node, network, self.images.systems[name],
                                                      w.hostname, w.volume_at, total, links) for w in wishes}
                       for name, wishes in wanted.items()}
            client_nodes = [pool.submit(self.part, self.node, network, self.images.clients, h, None, total, links)
                            for h in clients]
            client_facts = [pool.submit(self.part, lambda f: f.result().facts(), f) for f in client_nodes]
            docker_root = pool.submit(self.part, docker, "info", "--format", "{{.DockerRootDir}}")
            made: dict[str, Future[dict[str, Any]]] = {}
            for name, system in self.systems.items():
                offer = Containers(started[name], client_nodes, subnet, self.ledger, self.o.ready_timeout_s,
                                   (lambda display: lambda p: self.phase(f"{display}: {p}"))(system.display),
                                   self.stop, self.ledger.path.parent)
                made[name] = pool.submit(self.part, system.start_containers, offer)
        if self.stop.first is not None:  # (every part has ended; what each started is in the ledger)
            raise self.stop.first
        return {"network": self.network, "link": self.o.link.rate,
                "docker_root": docker_root.result().strip(),
                "links": {name: link.rate for name, link in self.o.client_links.items()},
                "clients": [f.result().name for f in client_nodes],
                "client_facts": {h: f.result() for h, f in zip(clients, client_facts)},
                "systems": {name: {"nodes": [w.hostname for w in wanted[name]],
                                   "data": [w.hostname for w in wanted[name] if w.stores_data],
                                   "facts": made[name].result()} for name in self.systems}}

    def node(self, network: Any, image: str, host: str, volume_at: str | None, total: int,
             links: str) -> ContainerNode:
        """A node's container of the image started and its link shaped (a client node: with /dev/fuse)."""
        node = self.container(network, image, host, volume_at)
        self._counted("started", total, f"{total} containers started")
        self.stop.check(node.label)
        self.shape(node)
        self._counted("shaped", total, links)
        return node

    def container(self, network: Any, image: str, host: str, volume_at: str | None) -> Node:
        from docker.types import Mount
        from testcontainers.core.container import DockerContainer

        name = f"dfsbench-{self.lab}-{host}"
        # init: an init process reaps what the daemons started in the node leave behind
        kwargs: dict[str, Any] = {"labels": self.labels, "hostname": host, "init": True,
                                  "cap_add": ["SYS_ADMIN", "NET_ADMIN"]}
        container = DockerContainer(image).with_name(name).with_network(network) \
            .with_network_aliases(host).with_command(["sleep", "infinity"])
        mounts = []
        if volume_at is not None:  # a system's data on a volume, not fuse-overlayfs
            mounts.append(Mount(volume_at, self.volume(f"{name}-data"), type="volume"))
        if host.startswith("client"):
            kwargs["devices"] = ["/dev/fuse:/dev/fuse:rwm"]
            # what a run keeps on a client node (a FUSE client's cache and state, scratch
            # files, logs) lives under the lab's directory: there, a volume of its own, not
            # the fuse-overlayfs root (a FUSE client starting again under load could not
            # create files in the directories it had just made there)
            mounts.append(Mount(str(self.ledger.path.parent), self.volume(f"{name}-work"), type="volume"))
        try:
            container.with_kwargs(**kwargs, mounts=mounts).start()
        except BaseException:  # made but not started? not in the ledger yet, and it holds the volumes
            with signals.shielded():
                label = docker("inspect", "--type", "container", "--format",
                               f'{{{{index .Config.Labels "{LABEL}"}}}}', name, check=False)
                if label.strip() == self.lab:  # (ours: a container of that name from elsewhere stays)
                    docker("rm", "-f", "-v", name, check=False)
            raise
        self.ledger.command(["docker", "rm", "-f", "-v", name], f"container {name}")
        return Node(name, host)

    def volume(self, name: str) -> str:
        """A new Docker volume of the lab's, in the ledger; never one that was there before
        (a name taken is someone else's, or a lab's that was not swept)."""
        if proc.run(["docker", "volume", "inspect", name], timeout=60, check=False).returncode == 0:
            raise DfsbenchError(f"a Docker volume named {name} already exists, and this lab did not make it: "
                                "not using it", hint=f"if nothing uses it, remove it (docker volume rm {name})")
        docker("volume", "create", "--label", f"{LABEL}={self.lab}", name)
        self.ledger.command(["docker", "volume", "rm", "-f", name], f"volume {name}")
        return name

    def shape(self, node: Node) -> None:
        shape(node, link_of(self.o, node.label.removeprefix(f"dfsbench-{self.lab}-")).bits_per_second)
