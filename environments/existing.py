"""Environment ``existing``: storage systems that are already there, and the client machines
that reach them — this machine, or client hosts over SSH. Each system's section of the
options (``environment.options.<system>``) says how to reach it, in the system's own model
(``harness.api.systems.System.Site``).

dfsbench creates nothing in the clusters unless told to: every file goes into a fresh,
uniquely named directory under each mount, and only that directory is removed; pools,
images and volumes need ``allow_create: true`` (refused before anything starts
otherwise). Each backend mounts what is not mounted with its system's client, verifies
every mount, and unmounts only what it mounted. What the clusters are, as each system
describes itself, is stored with each run, and each client host's kernel, CPUs, memory and
clock offset.

Secrets (a key, an SSH password) may come from ``${NAME}`` or ``file:PATH``; they are
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

from pydantic import AliasChoices, Field, field_validator, model_validator

from harness.api import model, registry
from harness.api.contracts import Backend, ClientName, Cluster, HostName, LabStatus, Options, ServiceHealth, Workload, host_key
from harness.api.lab import LabEnvironment, LabOptions, Note
from harness.api.launch import LAUNCH_OPTIONS, Launch, Launching
from harness.api.systems import OnSite, SiteHosts, System, capable, with_sites
from harness.errors import BadInput, DfsbenchError
from harness.system import files
from harness.system.hosts import LOCAL, Host
from harness.system.ledger import Ledger
from harness.system.secret import Expanded, SecretReference, expand, is_reference

SYSTEMS = capable(registry.systems(), OnSite)  # (those that can be found on a site)


# a user name of a client host
UserName = Annotated[Expanded, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")]


class ClientHost(Options):
    """A client machine reached over SSH."""

    host: HostName = Field(description="its address or name")
    user: UserName = Field("root", description="the SSH user (root, or one that may sudo without a password)")
    port: int = Field(22, ge=1, le=65535, description="its SSH port")
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



class SiteOptions(LabOptions, Launching):
    # (configs written for earlier versions call it workdir)
    lab_dir: Path | None = Field(None, validation_alias=AliasChoices("lab_dir", "workdir"),
                                 description=LabOptions.model_fields["lab_dir"].description)
    clients: list[ClientHost] = Field(default_factory=list, description="client hosts over SSH "
                                      "(none: this machine is the client)")
    allow_create: bool = Field(False, description="let backends create pools, RBD images and volumes "
                               "in the clusters (and remove them after)")
    connect_timeout_s: float = Field(10, gt=0, le=300, description="seconds an SSH connection to a client host may take")

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


# a section for each system, in the system's own model, under its name
ExistingOptions = with_sites(SiteOptions, SYSTEMS)


class ExistingEnvironment(LabEnvironment):
    name = "existing"
    Options = ExistingOptions
    options: Any
    client_nodes = True  # its client hosts mount the targets: 'lab up' mounts nothing here
    # a lab is one run's (or one 'lab up' check's): what it did on the client hosts is undone
    # at its end, and a ledger found is what a crashed run left
    stays_up = False
    run_only = LabEnvironment.run_only | {"connect_timeout_s"} | LAUNCH_OPTIONS
    provides = {name: s.Service for name, s in SYSTEMS.items()}
    capability = OnSite
    said = "an existing site"
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

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._hosts: list[Host] = []
        self.systems: dict[str, Any] = {name: s(options) for name, s in SYSTEMS.items()}

    def site(self, name: str) -> Any:
        """The site's section of system ``name`` (None: the config has none)."""
        return getattr(self.options, name, None)

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
            if self.site(service) is None:
                raise BadInput(f"backends {', '.join(b.name for b in backends if service in b.requires)} "
                               f"need the '{service}' cluster, and environment 'existing' does not say "
                               "how to reach one", hint=f"add environment.options.{service}")
        for b in backends:  # (an object store's backend measures the site's own gateway: it must be named)
            if b.target_kind == "s3":
                for service in sorted(b.requires):
                    if getattr(self.site(service), "s3", None) is None:
                        raise BadInput(f"backend {b.name}/{b.variant} measures the site's S3 gateway, and "
                                       f"environment.options.{service} names none",
                                       hint=f"add environment.options.{service}.s3: {{endpoint: HOST:PORT, "
                                            "access_key: ${NAME}, secret_key: ${NAME}}")
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
        offer = SiteHosts(hosts, ledger, session)
        for name in sorted(services):
            spec = self.site(name)
            if spec is None:
                raise BadInput(f"environment 'existing' has no '{name}' section",
                               hint=f"add environment.options.{name}")
            found[name] = self.systems[name].find_on_site(spec, offer)
            note(self.systems[name].said(found[name], hosts[0]))
        return found

    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        made = ledger.data.get("existing", {})
        return Cluster("existing", services, ledger, Path(made["session"]), reused, tuple(self._hosts), None,
                       hosts_facts=made.get("clients", {}), launch=Launch.of(self.options))

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
            # (nothing written: a status check makes no files on the hosts)
            offer = SiteHosts(hosts[:1], Ledger(self.lab_dir / "status.json"), None)
            for name, system in sorted(self.systems.items()):
                spec = self.site(name)
                if spec is None:
                    continue
                try:
                    services.append(ServiceHealth(name, *system.site_health(spec, offer)))
                except DfsbenchError as exc:
                    services.append(ServiceHealth(name, False, exc.message))
        finally:
            for h in hosts:
                h.close()
        return LabStatus(True, self.where, tuple(services))
