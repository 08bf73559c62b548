"""Environment ``docker``: a multi-node lab in containers, managed with testcontainers.

Storage nodes and client nodes are containers of one locally built image
(``environments.node_image``) on a private Docker network of their own, each link shaped
like the declared one (``tc`` tbf on egress, and on ingress through an ifb device). It
brings up GlusterFS: ``gluster_nodes`` nodes, one brick each on a Docker
volume (the container root is fuse-overlayfs, which Gluster refuses and which is 2×
slower), one replicated volume, and ``clients`` client nodes; and Ceph: a monitor node
(mon, mgr, MDS) and ``ceph_osd_nodes`` OSD nodes, pools of ``ceph_replicas`` with the node
as failure domain, a CephFS. The lab mounts nothing: each attachment of a backend mounts
one client per client node and system (the GlusterFS FUSE client, ceph-fuse), and the
workloads run there (``environments.nodes``), their raw outputs kept here.

Everything created carries the label ``dfsbench.lab=<lab id>`` and goes into the lab's
ledger with the command that removes it, the moment it exists; ``lab down`` undoes the
ledger and then removes whatever else carries the lab's label (a container created just
before a crash), and nothing else.
"""

from __future__ import annotations

import os
import secrets
import shlex
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator, model_validator

from backends.gluster import client as gluster_client
from backends.ceph.client import CephService, ErasureCode, FailureDomains
from backends.gluster.client import HONEST_OPTIONS, GlusterCli, GlusterService, Layout, keeps_copies, options_for
from environments.docker_ceph import DETECTION
from environments.docker_faults import GLUSTER_DETECTION, GLUSTERD, LabFaults
from environments.node_stats import NodeSampler
from environments.nodes import Node, running
from harness.system.parallel import Stop
from harness.api.contracts import Backend, Cluster, LabStatus, Options, ServiceHealth, Workload
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.model import link_rate
from harness.api.sampler import CLIENT, MIN_SAMPLE_S, SERVER, NodeRole
from harness.errors import BadInput, DfsbenchError
from harness.system import files, proc
from harness.system.hosts import Host
from harness.system.ledger import Ledger
from harness.units import parse_rate

LABEL = "dfsbench.lab"
# glusterd runs geo-replication's gsyncd (Python) six times as it starts, 3 s of CPU a node
# here; the lab has no use for geo-replication, and glusterd does without it where gsyncd is
# not installed ("geo-replication module not installed"): so a node's gsyncd is put aside
# before its glusterd starts (in the node only; GLUSTERD follows as "$@")
WITHOUT_GSYNCD = ('for f in /usr/lib/*/glusterfs/gsyncd /usr/libexec/glusterfs/gsyncd; do '
                  'if [ -e "$f" ]; then mv "$f" "$f.off" || exit; fi; done; exec "$@"')
T = TypeVar("T")
SHARED = ("the container lab: every node is a container of this one machine, sharing its CPUs and its "
          "disk; the links between them are shaped, their CPUs and disk are not")
VOLUME = "dfsbench"
BRICKS = "/bricks"
DATA = "/data"


class Link(Options):
    """The link of every node. Only a rate can be emulated here: this kernel has no netem."""

    rate: str = Field("1Gbit", description="e.g. 1Gbit, 100Mbit, 125MB/s")
    delay: str | None = Field(None, description="not available: this kernel has no netem")
    loss: str | None = Field(None, description="not available: this kernel has no netem")

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: str) -> str:
        return link_rate(v)

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


class DockerOptions(LabOptions):
    gluster_nodes: int = Field(3, ge=1, le=12)
    gluster_replica: int = Field(3, ge=1, le=12)
    gluster_layout: Literal["replicate", "distributed-replicate", "disperse"] | None = Field(
        None, description="default: replicate when all bricks form one replica set, else "
        "distributed-replicate")
    gluster_redundancy: int = Field(1, ge=1, le=6, description="disperse: bricks that may fail")
    bricks_per_node: int = Field(1, ge=1, le=4)
    ceph_osd_nodes: int = Field(3, ge=1, le=12)
    osds_per_node: int = Field(1, ge=1, le=4)
    ceph_replicas: int = Field(3, ge=1, le=12, description="pool size; replicas go to different nodes")
    clients: int = Field(2, ge=1, le=8)
    link: Link = Field(default_factory=lambda: Link())
    client_links: dict[str, Link] = Field(default_factory=dict, description="a link of its own for a "
                                          "client node, by name (client1, client2, …): e.g. one client "
                                          "behind a slower link than the others")
    ready_timeout_s: float = Field(180, gt=0)
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
    def _shape(self) -> DockerOptions:
        try:
            self.layout.create_args(self.gluster_bricks)
        except DfsbenchError as exc:
            raise ValueError(f"{exc.message} ({self.gluster_nodes} nodes × {self.bricks_per_node} "
                             "bricks)") from None
        if self.layout.kind != "disperse" and self.gluster_replica > self.gluster_nodes:
            raise ValueError(f"{self.gluster_nodes} GlusterFS nodes cannot hold replica-"
                             f"{self.gluster_replica} sets on different nodes")
        unknown = sorted(set(self.client_links) - {f"client{j + 1}" for j in range(self.clients)})
        if unknown:
            raise ValueError(f"client_links names {', '.join(unknown)}, and the lab's clients are client1 "
                             f"to client{self.clients}")
        if self.ceph_replicas > self.ceph_osd_nodes:
            raise ValueError(f"ceph_replicas {self.ceph_replicas} needs as many OSD nodes: the failure "
                             f"domain is the node, and there are {self.ceph_osd_nodes}")
        return self

    @property
    def gluster_bricks(self) -> int:
        return self.gluster_nodes * self.bricks_per_node

    @property
    def layout(self) -> Layout:
        kind = self.gluster_layout or ("replicate" if self.gluster_bricks == self.gluster_replica
                                       else "distributed-replicate")
        return Layout(kind, self.gluster_replica, self.gluster_redundancy)


def docker(*args: str, timeout: float = 120, check: bool = True) -> str:
    return proc.run(["docker", *args], timeout=timeout, check=check).stdout


class DockerEnvironment(LabEnvironment):
    name = "docker"
    Options = DockerOptions
    options: DockerOptions
    client_nodes = True
    can_fault = True
    provides = {"ceph": CephService, "gluster": GlusterService}
    # the report's suite, plus fio loading the target from every client node at once
    report_workloads = ({"name": "fio", "options": {"all_clients": True}},)

    @property
    def where(self) -> str:
        return f"Docker, ledger in {self.lab_dir}"

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

    def nodes(self, system: str) -> list[str]:
        """The names of a system's nodes a fault may name (as environments.docker_faults)."""
        if system == "gluster":
            return [f"gluster{i + 1}" for i in range(self.options.gluster_nodes)]
        return ["ceph-mon1", *self.storage_nodes(system)]

    def storage_nodes(self, system: str) -> list[str]:
        """The nodes of a system that hold its data: those whose OSD or brick process a
        fault of 'target: process' kills (a monitor node runs none)."""
        if system == "gluster":
            return self.nodes(system)
        return [f"ceph-osd{i + 1}" for i in range(self.options.ceph_osd_nodes)]

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """A fault that names a node names one of every system its workload runs on: a
        node of one system would stop the other's cells, and one the lab has not, every cell.
        A volume of a backend's own, and an erasure-coded pool, fit the lab's nodes, each
        node a failure domain (see :func:`room_for_sets`)."""
        room_for_sets(self.options, backends)
        for w in workloads:
            if w.fault is None or w.fault.node is None:
                continue
            for b in backends:
                for system in sorted(b.requires & set(self.provides)):
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
        from environments import node_image

        t0 = time.monotonic()
        image = node_image.ensure(note)
        note(f"node image {image.tag} ({image.size / 1e6:.0f} MB) "
             f"{'reused' if image.reused else 'built'} in {image.seconds:.1f} s")
        lab = secrets.token_hex(3)
        ledger.data["docker"] = {"lab": lab, "image": image.tag}  # (a crash from here on: swept by label)
        ledger.save()
        bringup = LabBringUp(self.options, ledger, lab, image.tag, services or set(self.provides), note)
        facts = bringup.run()
        ledger.data["docker"].update(facts)
        ledger.data["timings"] = {**bringup.phases, "total": time.monotonic() - t0}
        note(f"docker lab {lab} up in {time.monotonic() - t0:.1f} s")
        return lab_services(ledger.data["docker"], bringup.phases)

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        """What backends get of the lab: its services as seen from a client node (the
        Ceph conf and keyring in the nodes' /etc/ceph, the GlusterFS volume served by the
        first storage node), the client nodes, and the declared link."""
        facts = ledger.data.get("docker", {})
        lab = f"dfsbench-{facts.get('lab')}-"
        clients = tuple(Node(name, name.removeprefix(lab)) for name in facts.get("clients", []))
        link = parse_rate(facts["link"]) if facts.get("link") else None
        storage = [*facts.get("gluster_nodes", []), *([facts["ceph_mon"]] if facts.get("ceph_mon") else []),
                   *facts.get("ceph_osd_nodes", [])]
        nodes = [*clients, *(Node(name, name.removeprefix(lab)) for name in storage)]
        servers: dict[str, Host] = {n.label: n for n in nodes}
        ceph = services.get("ceph")
        if isinstance(ceph, CephService):  # services name the monitor by its address
            servers[ceph.mon_host] = servers["ceph-mon1"]

        # what each node is: a client, or a storage node of one system (its cost counts only its own)
        roles = {n.label: NodeRole(CLIENT) for n in clients}
        roles.update({name.removeprefix(lab): NodeRole(SERVER, ("gluster",))
                      for name in facts.get("gluster_nodes", [])})
        roles.update({name.removeprefix(lab): NodeRole(SERVER, ("ceph",)) for name in
                      [*([facts["ceph_mon"]] if facts.get("ceph_mon") else []), *facts.get("ceph_osd_nodes", [])]})

        def sampler() -> NodeSampler:
            return NodeSampler(nodes, list(clients), self.options.sample_every_s, roles)

        shaped = {"now": link}  # (a node brought back after a fault gets the link of that moment)

        def reshape(rate: float) -> None:
            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(lambda node: reshaped(node, int(rate * 8)), nodes))
            shaped["now"] = rate

        faults = LabFaults(facts, lambda node: shape(node, int(shaped["now"] * 8)) if shaped["now"] else None)
        links = {name: parse_rate(rate) for name, rate in (facts.get("links") or {}).items()}
        return Cluster("docker", services, ledger, self.lab_dir, reused, clients, link, sampler=sampler,
                       servers=servers, faults=faults, hosts_facts=facts.get("client_facts") or {}, links=links,
                       host_disk=Path(facts.get("docker_root") or "/var/lib/docker"), note=SHARED,
                       reshape=reshape if link else None)

    def check_alive(self, ledger: Ledger) -> None:
        prefix = f"dfsbench-{ledger.data.get('docker', {}).get('lab')}-"
        down = [name.removeprefix(prefix) for name, up in
                running(ledger.data.get("docker", {}).get("clients", [])).items() if not up]
        if down:
            raise DfsbenchError(f"the docker lab is broken: client node(s) {', '.join(down)} not running",
                                hint="run 'dfsbench lab down --env docker', then try again")

    def services_of(self, ledger: Ledger) -> dict[str, Any]:
        if "services" in ledger.data:
            return super().services_of(ledger)
        # (a lab set up by a dfsbench that kept only the bring-up's facts)
        return lab_services(ledger.data.get("docker", {}), ledger.data.get("timings", {}))

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
        nodes = [Node(n) for n in facts.get("gluster_nodes", [])]
        clients = [Node(n) for n in facts.get("clients", [])]
        mon = facts.get("ceph_mon")
        ceph = [Node(n) for n in ([mon] if mon else []) + facts.get("ceph_osd_nodes", [])]

        def gluster() -> ServiceHealth:
            try:
                ok, text = gluster_client.health(GlusterCli(nodes[0]), VOLUME, len(facts.get("bricks", nodes)),
                                                 keeps_copies(facts.get("volume_type", ""), facts.get("replica")))
            except DfsbenchError as exc:
                ok, text = False, exc.message
            return ServiceHealth("gluster", ok, text)

        def ceph_health() -> ServiceHealth:
            from environments.docker_ceph import health

            return ServiceHealth("ceph", *health(ceph[0]))

        with ThreadPoolExecutor(max_workers=2) as pool:  # (each system asked at once)
            services = [pool.submit(ask) for ask, there in ((gluster, nodes), (ceph_health, ceph)) if there]
            up = running([n.name for n in nodes + clients + ceph])
            # (no mounts: each run's backends mount their own client on each client node)
            return LabStatus(True, self.where, tuple(s.result() for s in services), (), tuple(up.items()))


def room_for_sets(o: DockerOptions, backends: list[Backend]) -> None:
    """Refuse, naming the backend's key, a set the lab's nodes cannot hold apart, each node a
    failure domain: an erasure code of more chunks (k + m) than the Ceph OSD nodes (than the
    OSDs, where there is one node), a replica set of a GlusterFS volume of the backend's own
    wider than the GlusterFS nodes, or a disperse set that would put more of its bricks on one
    node than its redundancy (a node lost would lose the volume)."""
    for i, b in enumerate(backends):
        copies = getattr(b.options, "replicas", None)
        if "ceph" in b.requires and isinstance(copies, int) and copies > o.ceph_osd_nodes:
            raise BadInput(f"backends[{i}].options.replicas: {b.name}/{b.variant}: a pool of {copies} copies needs "
                           f"as many OSD nodes (each copy on a node of its own), and the container lab has "
                           f"{o.ceph_osd_nodes}: it would never be healthy", hint=f"give replicas at most "
                           f"{o.ceph_osd_nodes}, or the lab more OSD nodes (environment.options.ceph_osd_nodes)")
        code = getattr(b.options, "ec", None)
        if isinstance(code, ErasureCode) and "ceph" in b.requires:
            domains = FailureDomains.over(o.ceph_osd_nodes, o.ceph_osd_nodes * o.osds_per_node)
            refused = domains.refusal(code)
            if refused:
                raise BadInput(f"backends[{i}].options.ec: {b.name}/{b.variant}: {refused} in the container lab",
                               hint=f"give k + m at most {domains.count}, or the lab more OSD nodes "
                                    "(environment.options.ceph_osd_nodes)")
        layout = getattr(b.options, "layout", None)
        if "gluster" not in b.requires or not getattr(b.options, "own_volume", False):
            continue
        bricks, nodes = int(getattr(b.options, "brick_count", 3)), o.gluster_nodes
        if layout == "disperse":
            redundancy = int(getattr(b.options, "redundancy", 1))
            per_node = -(-bricks // nodes)
            if per_node > redundancy:
                raise BadInput(f"backends[{i}].options.bricks: {b.name}/{b.variant}: a disperse volume of "
                               f"{bricks} bricks over the lab's {nodes} GlusterFS nodes puts {per_node} on one "
                               f"node, more than its redundancy {redundancy}: that node lost would lose the volume",
                               hint=f"give it at most {nodes * redundancy} bricks, or the lab more GlusterFS nodes "
                                    "(environment.options.gluster_nodes)")
        else:
            replica = int(getattr(b.options, "replica", 3))
            if replica > nodes:
                raise BadInput(f"backends[{i}].options.replica: {b.name}/{b.variant}: replica {replica} needs as "
                               f"many GlusterFS nodes, each copy on a node of its own, and the lab has {nodes}",
                               hint="give a smaller replica, or the lab more GlusterFS nodes "
                                    "(environment.options.gluster_nodes)")


def lab_services(facts: dict[str, Any], phases: dict[str, float]) -> dict[str, Any]:
    """The services of a lab as its client nodes reach them, from what its bring-up found."""
    services: dict[str, Any] = {}
    if facts.get("ceph_mon"):
        services["ceph"] = CephService(
            conf="/etc/ceph/ceph.conf", keyring="/etc/ceph/ceph.client.admin.keyring",
            mon_addr=facts["ceph_mon_addr"], fs_name="cephfs", data_pool="cephfs_data",
            metadata_pool="cephfs_metadata", replicas=facts["ceph_replicas"], osds=facts["osds"],
            version=facts["ceph_version"], log_dir="", phases=phases,
            settings={"osd_memory_target": "1024 MiB", "failure_domain": "host",
                      "osd_nodes": str(len(facts["ceph_osd_nodes"])),
                      "mgr_disabled_modules": "those never enabled (not loaded)", **DETECTION},
            storage_nodes=len(facts["ceph_osd_nodes"]))
    if facts.get("gluster_nodes"):
        nodes = [n.removeprefix(f"dfsbench-{facts['lab']}-") for n in facts["gluster_nodes"]]
        services["gluster"] = GlusterService(
            host=nodes[0], volume=facts["volume"], volume_type=facts["volume_type"],
            replica=facts["replica"], bricks=list(facts["bricks"]), socket="",
            version=facts["gluster_version"], log_dir="", phases=phases,
            volume_options=options_for(Layout(facts["volume_type"]), {**HONEST_OPTIONS, **GLUSTER_DETECTION}),
            redundancy=facts.get("redundancy"),
            brick_root=BRICKS)
    return services


def link_of(options: DockerOptions, hostname: str) -> Link:
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
    """Storage nodes of each system asked for and client nodes, on a shaped private
    network. Nothing waits for what it does not need: each node is shaped and given its
    daemons the moment its container is up, GlusterFS's peers and volume wait for the
    GlusterFS nodes only, Ceph's monitor for its own node, each OSD for its own. A part that
    fails stops the waits of the others; the error raised is the first part's."""

    def __init__(self, options: DockerOptions, ledger: Ledger, lab: str, image: str,
                 systems: set[str], note: Callable[[str], None]) -> None:
        self.o, self.ledger, self.lab, self.image, self.note = options, ledger, lab, image, note
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
        self.ledger.command(["docker", "network", "rm", self.network], f"network {self.network}")
        hosts: dict[str, list[str]] = {}
        if "ceph" in self.systems:  # (first: the monitor starts Ceph's longest path)
            hosts["ceph"] = ["ceph-mon1", *[f"ceph-osd{i + 1}" for i in range(self.o.ceph_osd_nodes)]]
        if "gluster" in self.systems:
            hosts["gluster"] = [f"gluster{i + 1}" for i in range(self.o.gluster_nodes)]
        hosts["client"] = [f"client{j + 1}" for j in range(self.o.clients)]
        total = sum(len(names) for names in hosts.values())
        links = f"links shaped to {self.o.link.rate}" + "".join(
            f", {name}'s to {link.rate}" for name, link in sorted(self.o.client_links.items()))
        with ThreadPoolExecutor(max_workers=total + len(hosts["client"]) + 3) as pool:  # (one each)
            started = {kind: [pool.submit(self.part, self.node, network, h, kind, total, links) for h in names]
                       for kind, names in hosts.items()}
            client_facts = [pool.submit(self.part, lambda f: f.result().facts(), f) for f in started["client"]]
            docker_root = pool.submit(self.part, docker, "info", "--format", "{{.DockerRootDir}}")
            systems: list[Future[dict[str, Any]]] = []
            if "gluster" in started:
                systems.append(pool.submit(self.part, self.gluster, started["gluster"]))
            if "ceph" in started:
                systems.append(pool.submit(self.part, self.ceph, started["ceph"], started["client"]))
        if self.stop.first is not None:  # (every part has ended; what each started is in the ledger)
            raise self.stop.first
        facts: dict[str, Any] = {"network": self.network, "link": self.o.link.rate,
                                 "docker_root": docker_root.result().strip(),
                                 "links": {name: link.rate for name, link in self.o.client_links.items()},
                                 "clients": [f.result().name for f in started["client"]],
                                 "client_facts": {h: f.result() for h, f in zip(hosts["client"], client_facts)}}
        for system in systems:
            facts.update(system.result())
        return facts

    def node(self, network: Any, host: str, kind: str, total: int, links: str) -> Node:
        """A node's container started, its link shaped, and on a GlusterFS node, glusterd."""
        node = self.container(network, host, kind != "client")
        self._counted("started", total, f"{total} containers started")
        self.stop.check(node.label)
        self.shape(node)
        self._counted("shaped", total, links)
        if kind == "gluster":
            self.stop.check(node.label)
            self.glusterd(node)
        return node

    def gluster(self, started: list[Future[Node]]) -> dict[str, Any]:
        nodes = [f.result() for f in started]
        names = [n.name.removeprefix(f"dfsbench-{self.lab}-") for n in nodes]
        self.phase("GlusterFS: glusterd running on every node")
        self.stop.check("GlusterFS's bring-up")
        cli = GlusterCli(nodes[0])
        for peer in names[1:]:
            cli("peer", "probe", peer)
        proc.wait_for(lambda: self.peers(cli, len(names) - 1), what="every GlusterFS peer connected",
                      timeout=self.o.ready_timeout_s, interval=0.2, alive=self.stop.why)
        layout = self.o.layout
        # node-major order: consecutive bricks (a replica set) are on different nodes
        bricks = [f"{n}:{BRICKS}/b{b}" for b in range(self.o.bricks_per_node) for n in names]
        cli("volume", "create", VOLUME, *layout.create_args(len(bricks)), "transport", "tcp", *bricks, "force")
        # (every option in one 'volume set': one transaction over the peers, not one each)
        options = options_for(layout, {**HONEST_OPTIONS, **GLUSTER_DETECTION})
        cli("volume", "set", VOLUME, *(word for pair in options.items() for word in pair))
        cli("volume", "start", VOLUME)
        proc.wait_for(lambda: gluster_client.health(cli, VOLUME, len(bricks), layout.keeps_copies),
                      what=f"all {len(bricks)} bricks of {VOLUME} online, nothing to heal",
                      timeout=self.o.ready_timeout_s, interval=0.25, alive=self.stop.why)
        self.phase(f"GlusterFS: volume {VOLUME} ({layout.kind}, {len(bricks)} bricks) started")
        return {"gluster_nodes": [n.name for n in nodes], "volume": VOLUME, "bricks": bricks,
                "bricks_per_node": self.o.bricks_per_node,
                "volume_type": layout.kind, "redundancy": layout.redundancy if layout.kind == "disperse" else None,
                "replica": self.o.gluster_replica if layout.kind != "disperse" else None,
                "gluster_version": nodes[0].exec("glusterfs", "--version").split()[1]}

    def ceph(self, nodes: list[Future[Node]], clients: list[Future[Node]]) -> dict[str, Any]:
        from environments.docker_ceph import CephNodes

        subnet = docker("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
                        self.network, timeout=30).strip()
        return CephNodes(nodes[0], nodes[1:], clients, subnet, self.o.osds_per_node, self.o.ceph_replicas,
                         16, self.o.ready_timeout_s, lambda p: self.phase(f"Ceph: {p}"),
                         self.ledger.path.parent / "ceph-session.log", self.stop).up()

    def container(self, network: Any, host: str, storage: bool) -> Node:
        from testcontainers.core.container import DockerContainer

        name = f"dfsbench-{self.lab}-{host}"
        # init: an init process reaps what the daemons started in the node leave behind
        kwargs: dict[str, Any] = {"labels": self.labels, "hostname": host, "init": True,
                                  "cap_add": ["SYS_ADMIN", "NET_ADMIN"]}
        container = DockerContainer(self.image).with_name(name).with_network(network) \
            .with_network_aliases(host).with_command(["sleep", "infinity"])
        if storage:  # bricks, OSD block files and the mon store on a volume, not fuse-overlayfs
            volume = f"{name}-data"
            docker("volume", "create", "--label", f"{LABEL}={self.lab}", volume)
            self.ledger.command(["docker", "volume", "rm", "-f", volume], f"volume {volume}")
            container = container.with_volume_mapping(volume, BRICKS if host.startswith("gluster") else DATA,
                                                      "rw")
        else:
            kwargs["devices"] = ["/dev/fuse:/dev/fuse:rwm"]
        container.with_kwargs(**kwargs).start()
        self.ledger.command(["docker", "rm", "-f", "-v", name], f"container {name}")
        return Node(name)

    def shape(self, node: Node) -> None:
        shape(node, link_of(self.o, node.label.removeprefix(f"dfsbench-{self.lab}-")).bits_per_second)

    def glusterd(self, node: Node) -> None:
        node.exec("sh", "-c", WITHOUT_GSYNCD, "sh", *GLUSTERD)
        proc.wait_for(lambda: (GlusterCli(node).answers()[0], "glusterd not answering yet"),
                      what=f"glusterd on {node.name}", timeout=self.o.ready_timeout_s, interval=0.1,
                      alive=self.stop.why)

    @staticmethod
    def peers(cli: GlusterCli, want: int) -> tuple[bool, str]:
        root = cli.xml("peer", "status")
        connected = [p for p in root.findall(".//peerStatus/peer") if p.findtext("connected") == "1"]
        return len(connected) >= want, f"{len(connected)} of {want} peers connected"
