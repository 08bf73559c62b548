"""Ceph on a site that exists: how the client hosts reach it (the ``ceph`` section of the
existing environment's options), the conf and keyring each client host uses, and what the
cluster is — versions, ``ceph -s``, the OSD tree, pool sizes and rules — read with the Ceph CLI
on the first client host. dfsbench creates nothing in the cluster here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from backends.ceph import client as ceph_client
from backends.ceph.client import CephCli, CephService, keyring_keys
from backends.s3gateway import S3Site, found_on_site
from harness.api.contracts import NAME_PATTERN, HostPath, Name, Options, PlainPath
from harness.errors import BadInput, DfsbenchError
from harness.system.hosts import Host
from harness.system.ledger import Ledger
from harness.system.secret import Expanded, SecretReference, expand, remember


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
    fs_name: Name = Field("cephfs", description="the CephFS file system to mount (ceph fs ls)")
    mounted: PlainPath | None = Field(None, description="CephFS is already mounted here on every client "
                                 "host: use it as it is")
    s3: S3Site | None = Field(None, description="the site's object gateway (RGW), for the backend rgw: "
                              "{endpoint: HOST:PORT, access_key: ${NAME}, secret_key: ${NAME}}")

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
            from harness.api.mounts import GivenMount

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
                           storage_nodes=osd_hosts(described["cluster"].get("osd_tree") or ""),
                           s3=found_on_site(s.s3, self.private, "ceph"))

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
