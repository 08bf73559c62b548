"""Environment ``existing``: a Ceph cluster and a GlusterFS pool that are already there,
and the client machines that reach them — this machine, or client hosts over SSH.

dfsbench creates nothing in the clusters unless told to: every file goes into a fresh,
uniquely named directory under each mount, and only that directory is removed; pools,
RBD images and volumes need ``allow_create: true`` (refused before anything starts
otherwise). It mounts what is not mounted (ceph-fuse, the GlusterFS FUSE client), verifies
every mount, and unmounts only what it mounted. What the clusters are — versions, ``ceph
-s``, the OSD tree, pool sizes and rules, ``gluster volume info`` — is stored with each
run, and each client host's kernel, CPUs, memory and clock offset.

Secrets (a Ceph key, an SSH password) may come from ``${NAME}`` or ``file:PATH``; they are
never written anywhere (``harness.system.secret``). The ledger of what a run created (mounts,
client processes, dfsbench's directory on each client host) is kept in ``lab_dir``, so
``dfsbench lab down --env existing CONFIG`` undoes what a crashed run left.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, Field, field_validator, model_validator

from backends.ceph import client as ceph_client
from backends.gluster import client as gluster_client
from backends.ceph.client import CephCli, CephService, keyring_keys
from backends.gluster.client import GlusterCli, GlusterService
from harness.api.contracts import (NAME_PATTERN, Backend, ClientName, Cluster, LabStatus, Name, Options, PlainPath,
                                    ServiceHealth, Workload, host_address, host_key)
from harness.api import model
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.model import SameAs
from harness.errors import BadInput, DfsbenchError
from harness.system import files
from harness.system.hosts import LOCAL, Host
from harness.system.ledger import Ledger
from harness.system.secret import Expanded, SecretReference, expand, is_reference, remember


# a host's name or address (also the label its raw outputs go under, when no 'name' is
# given: never '.', '..' or an option), a user name, and a path on the client hosts that
# goes into a mount option or CEPH_ARGS (no ',', '=', space or newline to split it)
HostName = Annotated[Expanded, AfterValidator(host_address), SameAs(host_key)]
UserName = Annotated[Expanded, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")]
HostPath = Annotated[Expanded, Field(pattern=r"^/[A-Za-z0-9_./+@-]*$"), AfterValidator(files.fits_linux)]


class ClientHost(Options):
    """A client machine reached over SSH."""

    host: HostName = Field(description="its address or name")
    user: UserName = "root"
    port: int = Field(22, ge=1, le=65535)
    key: Expanded | None = Field(None, description="a private key file of this machine")
    password: SecretReference | None = Field(None, description="the password (better ${NAME} or file:PATH)")
    name: ClientName | None = Field(None, description="how tables name it "
                                   "(default: its address)")
    host_keys: Literal["accept-new", "known"] = Field(
        "accept-new", description="accept-new: trust a host key not seen before (as OpenSSH's "
        "StrictHostKeyChecking=accept-new); known: only hosts in ~/.ssh/known_hosts")
    sudo: bool = Field(False, description="run every command with 'sudo -n' (a user other than root)")

    @model_validator(mode="after")
    def _auth(self) -> ClientHost:
        if self.key is None and self.password is None:
            raise ValueError(f"client host {self.host}: give 'key' (a private key file) or 'password'")
        if self.key is not None:
            long = files.too_long(self.key)
            if long is not None:
                raise ValueError(f"client host {self.host}: key: {long}")
            key = Path(self.key).expanduser()
            if not key.is_file():
                raise ValueError(f"client host {self.host}: key file {self.key} does not exist")
            object.__setattr__(self, "key", str(key.absolute()))
        return self


# what the ceph.conf and keyring dfsbench writes may hold: a monitor address list
# (10.0.0.1:6789, [v2:10.0.0.1:3300,v1:10.0.0.1:6789], mon1.example) and a base64 key;
# nothing that ends a line or starts a comment, section or second value
MON_ADDR = r"^[A-Za-z0-9_.:,\[\]/-]+$"
MonAddr = Annotated[Expanded, Field(pattern=MON_ADDR, max_length=1024)]
# (a key of Ceph's is 40 characters: a 16-byte AES secret and its header, in base64)
CEPH_KEY = re.compile(r"[A-Za-z0-9+/]{16,200}={0,2}")


def conf_value(value: str, what: str, pattern: str | re.Pattern[str]) -> str:
    """A value for a line of a file another program reads, checked again where it is
    written (a validator that missed it must not make a second line or section)."""
    if not re.fullmatch(pattern, value):
        raise BadInput(f"{what} cannot go into a Ceph configuration file: it holds characters "
                       "outside letters, digits and . : , [ ] / - _ (+ = for a key)")
    return value


class CephSpec(Options):
    """How the client hosts reach the Ceph cluster."""

    conf: HostPath | None = Field(None, description="ceph.conf on every client host (default "
                                  "/etc/ceph/ceph.conf, unless mon_addr is given)")
    mon_addr: MonAddr | None = Field(None, description="monitor address(es), e.g. 10.0.0.1:6789: "
                                      "dfsbench writes a ceph.conf of its own on each client host")
    client: Name = Field("admin", description="the client name (client.NAME)")
    keyring: HostPath | None = Field(None, description="keyring file on every client host (default "
                                     "/etc/ceph/ceph.client.NAME.keyring)")
    key: SecretReference | None = Field(None, description="the client's key itself (better ${NAME} or "
                            "file:PATH): dfsbench writes a keyring of mode 0600 on each client host")
    fs_name: Name = "cephfs"
    mounted: PlainPath | None = Field(None, description="CephFS is already mounted here on every client "
                                 "host: use it as it is")

    @model_validator(mode="after")
    def _one_way(self) -> CephSpec:
        if self.key is not None and not CEPH_KEY.fullmatch(expand(self.key)):
            raise ValueError("key: not a Ceph key (base64 of 16 to 200 characters: letters, digits, '+', '/', "
                             "ending in '='; Ceph's own are 40)")
        if self.key is not None and self.keyring is not None:
            raise ValueError("give either 'key' or 'keyring', not both")
        if self.mon_addr is not None and self.conf is not None:
            raise ValueError("give either 'mon_addr' or 'conf', not both")
        return self


class GlusterSpec(Options):
    """The GlusterFS volume and the servers that hand out its volfile."""

    servers: list[HostName] = Field(default_factory=list, description="servers of the volume "
                                    "(the first hands out the volfile; default: from the mount)")
    volume: Name | None = Field(None, description="the volume (default: "
                               "from the mount)")
    mounted: PlainPath | None = Field(None, description="the volume is already mounted here on every "
                                 "client host: use it as it is")
    replica: int | None = Field(None, ge=1, le=12, description="the volume's replica count, where "
                                "'gluster volume info' cannot be read from the client hosts")

    @model_validator(mode="after")
    def _where(self) -> GlusterSpec:
        if self.mounted is None and (not self.servers or self.volume is None):
            raise ValueError("give 'servers' and 'volume', or 'mounted' (a path where the volume "
                             "is already mounted)")
        return self


class ExistingOptions(LabOptions):
    # (configs written for earlier versions call it workdir)
    lab_dir: Path | None = Field(None, validation_alias=AliasChoices("lab_dir", "workdir"),
                                 description=LabOptions.model_fields["lab_dir"].description)
    clients: list[ClientHost] = Field(default_factory=list, description="client hosts over SSH "
                                      "(none: this machine is the client)")
    ceph: CephSpec | None = None
    gluster: GlusterSpec | None = None
    allow_create: bool = Field(False, description="let backends create pools, RBD images and volumes "
                               "in the clusters (and remove them after)")
    connect_timeout_s: float = Field(10, gt=0, le=300)

    @field_validator("clients")
    @classmethod
    def _distinct(cls, v: list[ClientHost]) -> list[ClientHost]:
        labels = [c.name or c.host for c in v]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"client host(s) {', '.join(twice)} listed twice (give each a 'name')")
        # one machine under two spellings: another case, a trailing dot, an IPv6 address
        # written out (not two addresses of one machine, which only it can tell)
        found = model.twice([(host_key(c.host), c.port) for c in v])
        if found is not None:
            first, second = (v[j] for j in found)
            raise ValueError(f"client host {second.host} (port {second.port}) is listed twice ({first.host} is the "
                             "same machine): its clients would be counted as two machines in every aggregate")
        return v


class ExistingEnvironment(LabEnvironment):
    name = "existing"
    Options = ExistingOptions
    options: ExistingOptions
    client_nodes = True  # its client hosts mount the targets: 'lab up' mounts nothing here
    # a lab is one run's (or one 'lab up' check's): what it did on the client hosts is undone
    # at its end, and a ledger found is what a crashed run left
    stays_up = False
    provides = {"ceph": CephService, "gluster": GlusterService}
    former_places = (("DFSBENCH_EXISTING_DIR", "/var/tmp/dfsbench-existing"),)
    # every workload on every client host at once (fio in its client/server mode), unless
    # its config says 'clients: first'
    default_clients = "all"

    @property
    def client_hosts(self) -> int:
        return max(1, len(self.options.clients))

    @property
    def clients_elsewhere(self) -> bool:
        return bool(self.options.clients)  # (none: this machine is the client)
    # the report's suite, plus fio
    report_workloads = ({"name": "fio"},)

    def __init__(self, options: ExistingOptions) -> None:
        super().__init__(options)
        self._hosts: list[Host] = []

    @property
    def where(self) -> str:
        hosts = ", ".join(c.name or c.host for c in self.options.clients) or "this machine"
        return f"existing clusters, clients: {hosts}"

    # ---------------------------------------------------------------- before anything runs

    def check_plan(self, backends: list[Backend], workloads: list[Workload]) -> None:
        """Refuse, before any I/O, what would create something in the user's clusters
        without ``allow_create``, or what the config does not say how to reach."""
        needed = set().union(*(b.requires for b in backends)) if backends else set()
        for service in sorted(needed):
            if getattr(self.options, service, None) is None:
                raise BadInput(f"backends {', '.join(b.name for b in backends if service in b.requires)} "
                               f"need the '{service}' cluster, and environment 'existing' does not say "
                               "how to reach one", hint=f"add environment.options.{service}")
        if self.options.allow_create:
            return
        for b in backends:
            creates = b.creates()
            if creates:
                raise BadInput(f"backend {b.name}/{b.variant} would create {creates} in the existing "
                               "cluster, and allow_create is not set",
                               hint="set 'allow_create: true' in environment.options to let dfsbench "
                                    "create (and afterwards remove) it, or name an existing one")

    # ---------------------------------------------------------------- the lab

    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, Any]:
        """There is nothing to start in clusters that exist: connect to every client host,
        make dfsbench's directory there, check the clusters answer and describe them."""
        t0 = time.monotonic()
        hosts = self._hosts = self._connect()
        # one directory of dfsbench's own, of the same name here and on every client host
        # (mount points, client logs, scratch files, pid files): removed whole at the end
        session = Path(f"/var/tmp/dfsbench-{secrets.token_hex(5)}")
        session.mkdir(mode=0o700)
        ledger.tree(session)
        for host in hosts:
            claim = getattr(host, "claim", None)
            if callable(claim):
                claim(session, ledger)
        note(f"client hosts: {', '.join(h.name for h in hosts)} "
             f"({'connected' if not hosts[0].local else 'this machine'} in {time.monotonic() - t0:.1f} s)")
        facts = {h.label: h.facts() for h in hosts}
        for label, f in facts.items():
            offset = f.get("clock_offset_s")
            note(f"  {label}: kernel {f.get('kernel')}, {f.get('cpus')} CPUs, "
                 f"{(f.get('memory') or 0) / 2**30:.1f} GiB" +
                 (f", clock {offset:+.3f} s from this machine's" if offset is not None else ""))
        ledger.data["existing"] = {"clients": facts, "session": str(session)}
        ledger.save()
        found: dict[str, Any] = {}
        if "ceph" in services:
            if self.options.ceph is None:
                raise BadInput("environment 'existing' has no 'ceph' section", hint="add environment.options.ceph")
            found["ceph"] = CephAccessSetup(self.options.ceph, hosts, ledger, session).service()
            note(f"Ceph {found['ceph'].version}: {found['ceph'].osds} OSDs, "
                 f"{(found['ceph'].cluster or {}).get('health', 'health not known')}")
        if "gluster" in services:
            if self.options.gluster is None:
                raise BadInput("environment 'existing' has no 'gluster' section",
                               hint="add environment.options.gluster")
            found["gluster"] = g = gluster_service(self.options.gluster, hosts)
            note(f"GlusterFS {g.version}: volume {g.volume} ({g.volume_type}, {len(g.bricks)} bricks), "
                 f"{gluster_health(g, hosts[0])[1]}")
        return found

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        made = ledger.data.get("existing", {})
        return Cluster("existing", services, ledger, Path(made["session"]), reused, tuple(self._hosts), None,
                       hosts_facts=made.get("clients", {}))

    def undo(self, ledger: Ledger) -> list[str]:
        self._export_passwords()  # (after a crash, 'lab down' undoes through them)
        try:
            return super().undo(ledger)
        finally:
            for host in self._hosts:
                host.close()
            self._hosts = []

    def _connect(self) -> list[Host]:
        if not self.options.clients:
            return [LOCAL]
        from harness.system.ssh import Reach, SshHost

        references = self._export_passwords()

        def one(c: ClientHost) -> Host:
            password = expand(c.password) if c.password else None
            reach = Reach(c.host, c.user, c.port, c.key, references.get(c.name or c.host), c.host_keys,
                          c.sudo, c.name)
            return SshHost(reach, password, self.options.connect_timeout_s)

        hosts: list[Host] = []
        problems: list[str] = []
        with ThreadPoolExecutor(max_workers=8) as pool:
            for future in [pool.submit(one, c) for c in self.options.clients]:
                try:
                    hosts.append(future.result())
                except DfsbenchError as exc:
                    problems.append(exc.message)
        if problems:
            for h in hosts:
                h.close()
            raise BadInput("\n".join(problems), hint="fix the client hosts' entries (or the hosts), "
                           "then run again: nothing was done on any of them")
        return hosts

    def _export_passwords(self) -> dict[str, str | None]:
        """How the ledger refers to each client host's password: the config's ``${NAME}``
        or ``file:``, or, for a password written in the config itself, a variable of this
        process's environment (which the ledger's undo commands inherit) — the ledger keeps
        how to reach a host again, never a password."""
        references: dict[str, str | None] = {}
        for c in self.options.clients:
            label = c.name or c.host
            references[label] = c.password
            if c.password is not None and not is_reference(c.password):
                name = "DFSBENCH_SSH_PASSWORD_" + re.sub(r"\W", "_", label).upper()
                os.environ[name] = expand(c.password)
                references[label] = "${" + name + "}"
        return references

    def status(self) -> LabStatus:
        services: list[ServiceHealth] = []
        try:
            hosts = self._connect()
        except DfsbenchError as exc:
            return LabStatus(False, self.where, (ServiceHealth("clients", False, exc.message),))
        try:
            if self.options.ceph is not None:
                try:
                    info = CephAccessSetup(self.options.ceph, hosts[:1], Ledger(self.lab_dir / "status.json")
                                           ).service()
                    ok, said = ceph_client.health(CephCli(info, host=hosts[0]).json("health", "detail"))
                    services.append(ServiceHealth("ceph", ok, said))
                except DfsbenchError as exc:
                    services.append(ServiceHealth("ceph", False, exc.message))
            if self.options.gluster is not None:
                try:
                    g = gluster_service(self.options.gluster, hosts[:1])
                    services.append(ServiceHealth("gluster", *gluster_health(g, hosts[0])))
                except DfsbenchError as exc:
                    services.append(ServiceHealth("gluster", False, exc.message))
        finally:
            for h in hosts:
                h.close()
        return LabStatus(True, self.where, tuple(services))


# ---------------------------------------------------------------- Ceph


class CephAccessSetup:
    """The conf and keyring each client host uses (its own, or ones dfsbench writes into its
    directory there when the config gives a monitor address or a key), and what the
    cluster is, read with the Ceph CLI on the first client host."""

    def __init__(self, spec: CephSpec, hosts: list[Host], ledger: Ledger, private: Path | None = None) -> None:
        self.spec, self.hosts, self.ledger, self.private = spec, hosts, ledger, private

    def service(self) -> CephService:
        s = self.spec
        conf = s.conf or "/etc/ceph/ceph.conf"
        keyring = s.keyring or f"/etc/ceph/ceph.client.{s.client}.keyring"
        for host in self.hosts:
            if (s.mon_addr or s.key) and self.private is None:
                break  # (a status check: dfsbench writes no files)
            if s.mon_addr or s.key:
                assert self.private is not None
                private = self.private
                if s.mon_addr:
                    conf = str(private / "ceph.conf")
                    mon = conf_value(s.mon_addr, "mon_addr", MON_ADDR)
                    host.write_text(Path(conf), f"[global]\nmon_host = {mon}\n")
                if s.key:
                    keyring = str(private / f"ceph.client.{s.client}.keyring")
                    key = conf_value(expand(s.key), "key", CEPH_KEY)
                    client = conf_value(s.client, "client", NAME_PATTERN)
                    host.write_text(Path(keyring), f"[client.{client}]\n\tkey = {key}\n")
            self._check_files(host, conf, keyring)
        if s.mounted is not None:  # the user's mount: verified before anything runs
            from backends.ceph.cephfs import FSTYPE
            from backends.mounts import GivenMount

            GivenMount(tuple(self.hosts), s.mounted, (FSTYPE, "ceph"), "CephFS").mount()
        probe = CephService(conf=conf, keyring=keyring, mon_addr=s.mon_addr or "", fs_name=s.fs_name,
                            data_pool="", metadata_pool="", replicas=0, osds=0, version="", log_dir="",
                            phases={}, client=s.client)
        cli = CephCli(probe, host=self.hosts[0])
        described = describe_ceph(cli, s.fs_name)
        return CephService(conf=conf, keyring=keyring, mon_addr=described["mon_addr"], fs_name=s.fs_name,
                           data_pool=described["data_pool"], metadata_pool=described["metadata_pool"],
                           replicas=described["data_pool_size"], osds=described["osds"],
                           version=described["version"], log_dir="", phases={}, client=s.client,
                           mounted=str(s.mounted) if s.mounted else "", cluster=described["cluster"],
                           storage_nodes=osd_hosts(described["cluster"].get("osd_tree") or ""))

    def _check_files(self, host: Host, conf: str, keyring: str) -> None:
        """Both files readable on the host; the keyring's keys hidden from every output."""
        for what, path in (("ceph.conf", conf), ("keyring", keyring)):
            if host.run(["test", "-r", path], check=False, timeout=30).returncode != 0:
                raise BadInput(f"the Ceph {what} {path} is not readable on {host.name}",
                               hint=f"give environment.options.ceph.{'conf' if what == 'ceph.conf' else 'keyring'} "
                                    "(a path on every client host), or mon_addr/key")
        text = host.run(["cat", keyring], timeout=30).stdout
        for key in keyring_keys(text):
            remember(key)


def osd_hosts(tree: str) -> int:
    """The hosts in ``ceph osd tree``'s text (the nodes the OSDs are spread over)."""
    return sum(1 for line in tree.splitlines()[1:] if "host" in line.split()[1:4])


def describe_ceph(cli: Any, fs_name: str) -> dict[str, Any]:
    """What the cluster is: ``ceph -s``, versions, the OSD tree, every pool's size, rule
    and PG count, the CRUSH rules' failure domains, and the file system's pools."""
    from harness.errors import ToolError

    try:
        status = cli.json("status")
    except ToolError as exc:
        raise DfsbenchError(f"the Ceph cluster does not answer from {cli.host.name}: "
                            f"{(exc.stderr or exc.stdout).strip().splitlines()[-1:] or exc.returncode}",
                            hint="check the monitor address, the conf, the keyring and the client name") from None
    osdmap = status.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)  # (older releases nest it)
    versions = cli.json("versions")
    overall = list((versions or {}).get("overall", {}))
    found = re.search(r"ceph version (\S+)", overall[0]) if overall else None
    version = found.group(1) if found else "unknown"
    pools = cli.json("osd", "pool", "ls", "detail")
    rules = {r.get("rule_id"): r for r in cli.json("osd", "crush", "rule", "dump") or []}
    tree = cli.run("ceph", "osd", "tree").rstrip()
    mons = cli.json("mon", "dump")
    addrs = [m.get("public_addr", m.get("addr", "")).split("/")[0] for m in (mons or {}).get("mons", [])]

    def domain(rule_id: Any) -> str:
        steps = rules.get(rule_id, {}).get("steps", [])
        kinds = [st.get("type") for st in steps if st.get("op", "").startswith("choose")]
        return kinds[-1] if kinds else "?"

    pool_rows = [{"pool": p.get("pool_name"), "size": p.get("size"), "min_size": p.get("min_size"),
                  "pg_num": p.get("pg_num"), "rule": rules.get(p.get("crush_rule"), {}).get("rule_name"),
                  "failure_domain": domain(p.get("crush_rule")),
                  "type": {1: "replicated", 3: "erasure"}.get(p.get("type"), p.get("type")),
                  "application": sorted((p.get("application_metadata") or {}).keys())} for p in pools or []]
    data_pool = metadata_pool = ""
    filesystems = cli.json("fs", "ls") or []
    fs = next((f for f in filesystems if f.get("name") == fs_name), None)
    if fs is not None:
        data_pool = (fs.get("data_pools") or [""])[0]
        metadata_pool = fs.get("metadata_pool", "")
    sizes = {p["pool"]: p["size"] for p in pool_rows}
    return {"mon_addr": ",".join(a for a in addrs if a), "data_pool": data_pool, "metadata_pool": metadata_pool,
            "data_pool_size": int(sizes.get(data_pool) or 0), "osds": int(osdmap.get("num_osds", 0)),
            "version": version,
            "cluster": {"fsid": status.get("fsid"), "health": ceph_client.health(status.get("health"))[1],
                        "versions": versions, "osd_tree": tree, "pools": pool_rows,
                        "filesystems": [f.get("name") for f in filesystems],
                        "num_osds": osdmap.get("num_osds"), "num_up_osds": osdmap.get("num_up_osds"),
                        "monitors": addrs}}


# ---------------------------------------------------------------- GlusterFS


def gluster_service(spec: GlusterSpec, hosts: list[Host]) -> GlusterService:
    """The volume as the first client host sees it: ``gluster volume info`` asked of its
    server (the CLI's --remote-host), else what the mount and the config say."""
    host = hosts[0]
    servers, volume = list(spec.servers), spec.volume
    mounted = str(spec.mounted) if spec.mounted else ""
    if spec.mounted is not None:  # the user's mount: verified before anything runs
        from backends.gluster.glusterfs import FSTYPE
        from backends.mounts import GivenMount

        entry = GivenMount(tuple(hosts), spec.mounted, (FSTYPE,), "GlusterFS volume").mount()
        server, _, vol = entry.source.partition(":")
        servers = servers or [server]
        volume = volume or vol.lstrip("/")
    assert volume is not None
    info: dict[str, Any] = {}
    version = "unknown"
    if host.has("gluster"):
        got = host.run(["gluster", f"--remote-host={servers[0]}", "--mode=script", "volume", "info", volume,
                        "--xml"], check=False, timeout=60)
        if got.returncode == 0:
            info = volume_info(got.stdout)
    got = host.run(["glusterfs", "--version"], check=False, timeout=30)
    if got.returncode == 0 and got.stdout.split()[1:2]:
        version = got.stdout.split()[1] + " (client)"
    if not info:
        if spec.replica is None:
            raise BadInput(f"'gluster volume info {volume}' could not be read from {host.name}, so the "
                           "volume's replica count is unknown (it sets how often a write crosses the "
                           "client's link)",
                           hint="install glusterfs-server's CLI there, or give environment.options.gluster.replica")
        info = {"type": "Replicate" if spec.replica > 1 else "Distribute", "replica": spec.replica,
                "bricks": [], "options": {}, "source": "config"}
    kind = {"Replicate": "replicate", "Distributed-Replicate": "distributed-replicate",
            "Disperse": "disperse", "Distributed-Disperse": "distributed-disperse",
            "Distribute": "distribute"}.get(info["type"], str(info["type"]).lower())
    return GlusterService(host=servers[0], volume=volume, volume_type=kind,
                          replica=info.get("replica") if "disperse" not in kind else None,
                          bricks=list(info.get("bricks", [])), socket="", version=version, log_dir="",
                          phases={}, volume_options=dict(info.get("options", {})),
                          redundancy=info.get("redundancy"), mounted=mounted,
                          cluster={"volume_info": info, "servers": servers})


def gluster_health(g: GlusterService, host: Host) -> tuple[bool, str]:
    """The volume's health as a client host sees it: its bricks online and nothing left to
    heal (the one reader of backends.gluster.client), asked of its server."""
    if not g.bricks or not host.has("gluster"):
        return False, (f"volume {g.volume} ({g.volume_type}): its bricks cannot be asked from {host.name} "
                       "(no 'gluster volume info' there), so its health is not known")
    try:
        return gluster_client.health(GlusterCli(host, f"--remote-host={g.host}"), g.volume, len(g.bricks),
                                     g.keeps_copies)
    except DfsbenchError as exc:
        return False, exc.message


def volume_info(xml: str) -> dict[str, Any]:
    """The parts of ``gluster volume info --xml`` that say how the volume is built."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return {}
    vol = root.find(".//volInfo/volumes/volume")
    if vol is None:
        return {}

    def num(tag: str) -> int | None:
        text = vol.findtext(tag) if vol is not None else None
        return int(text) if text and text.isdigit() else None

    bricks = [b.findtext("name") or (b.text or "").strip() for b in vol.findall("bricks/brick")]
    options = {o.findtext("name") or "": o.findtext("value") or "" for o in vol.findall("options/option")}
    return {"name": vol.findtext("name"), "type": vol.findtext("typeStr"), "status": vol.findtext("statusStr"),
            "replica": num("replicaCount"), "redundancy": num("redundancyCount") or None,
            "disperse": num("disperseCount") or None, "bricks": bricks, "options": options,
            "transport": vol.findtext("transport"), "source": "gluster volume info"}

