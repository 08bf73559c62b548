"""The container lab's node images, built here: there is no registry to pull from.

Each image is a layer on its parent, tagged by a hash of its own inputs only (its parent's
tag and the packages it adds), so an unchanged input is never built twice (a cached build
is one ``docker image inspect``) and a system's layer depends on no other system:

- the base: ``debootstrap --variant=minbase`` of the Debian suite from the mirror this
  host's apt sources name, imported with ``docker import``;
- the tools: the base plus the host's mirror in its apt sources and the packages every
  node needs (:data:`TOOLS`: fio, iozone3 from ``non-free``, …);
- a system's: the tools plus the Debian packages that system declares
  (``System.packages``), those the tools lack; its storage nodes run it;
- the clients': a client node serves every system of its lab, so its image is the lab's
  systems stacked in the order of their names: the first system's own layer, then on it
  each next system's packages not in already (a lab of one system runs one image).

The layers above the base are built with ``docker build`` from a Dockerfile given on stdin
(no build context). Installing a plugin builds its layer (and the clients' of the labs that
have it) only; a system whose packages cannot be installed fails its own layer, and the
labs without it come up.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.api import registry
from harness.api.registry import PACKAGE
from harness.api.systems import ContainerLab, capable
from harness.errors import DfsbenchError, ToolError
from harness.system import proc
from harness.system.files import printable

SUITE = "bookworm"
LABEL = "dfsbench.image"
# the workloads' tools and what the lab itself runs in a node
TOOLS = (
    "fio", "iozone3", "iperf3", "ioping", "iproute2", "fuse3", "procps", "psmisc",
    "util-linux", "attr", "kmod", "uuid-runtime", "xfsprogs", "e2fsprogs", "python3",
    # a client node can also be an SSH client host of the existing environment (its tests)
    "openssh-server",
    # the clients of a cell run as ranks of one MPI job (harness.execution.ranks)
    "openmpi-bin", "python3-mpi4py",
)
STEP = "---> Running in"  # (docker build: a step's output follows this line)
SOURCES_FILE = Path("/etc/apt/sources.list.d/debian.sources")
SOURCES_LIST = Path("/etc/apt/sources.list")


def host_mirror(sources: Path = SOURCES_FILE, legacy: Path = SOURCES_LIST) -> str:
    """The Debian mirror this host's apt uses (the only one reachable here)."""
    candidates: list[str] = []
    if sources.exists():
        for block in sources.read_text().split("\n\n"):
            if re.search(r"^Suites:.*\b" + SUITE + r"\b", block, re.M) and "security" not in block:
                found = re.search(r"^URIs:\s*(\S+)", block, re.M)
                if found:
                    candidates.append(found.group(1))
    if legacy.exists():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and parts[2] == SUITE:
                candidates.append(parts[1])
    if not candidates:
        raise DfsbenchError(f"no Debian {SUITE} mirror found in {sources} or {legacy}",
                            hint="the node images are built with debootstrap from the host's mirror")
    return candidates[0].rstrip("/")


def base_tag(mirror: str) -> str:
    """The base's tag (the base itself is made by :func:`build_base`)."""
    return _tag("base", SUITE, mirror, "minbase")


def _tag(name: str, *inputs: str) -> str:
    digest = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:12]
    return f"dfsbench-{re.sub(r'[^a-z0-9._-]', '-', name.lower())}:{digest}"


@dataclass(frozen=True)
class Layer:
    """An image above the base: its parent and the Debian packages it installs on it."""

    name: str  # what it is: 'tools', a system's name, or 'clients'
    parent: str  # the parent image's tag
    packages: tuple[str, ...]
    of: str  # whose packages these are, as an error names them: "the system 'ceph'"
    mirror: str | None = None  # the apt sources it writes first (the tools': the host's mirror)

    def __post_init__(self) -> None:
        # (the names become a word each of a shell line: only Debian package names do)
        bad = [p for p in self.packages if not isinstance(p, str) or not PACKAGE.fullmatch(p)]
        if bad:
            raise DfsbenchError(f"{self.of} asks for packages that are not Debian package names: "
                                f"{', '.join(printable(str(b), 60) for b in bad[:3])}",
                                hint="fix or uninstall that plugin; the other systems' labs do not need it")

    @property
    def dockerfile(self) -> str:
        sources = [] if self.mirror is None else [
            f"RUN printf 'deb {self.mirror} {SUITE} main non-free\\ndeb {self.mirror} {SUITE}-updates main "
            "non-free\\n' > /etc/apt/sources.list"]
        return "\n".join([
            f"FROM {self.parent}",
            *sources,
            # (apt's output goes nowhere but its errors: a failed install says which package;
            # its lists and caches go, 79 MB that each layer would hold again)
            "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
            f"--no-install-recommends {' '.join(self.packages)} > /dev/null "
            "&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb",
            f'LABEL {LABEL}="{self.name}"',
            'CMD ["sleep", "infinity"]',
        ]) + "\n"

    @property
    def tag(self) -> str:
        """A hash of the Dockerfile: of the parent's tag and the packages, nothing else."""
        return _tag(self.name, self.dockerfile)


@dataclass(frozen=True)
class Images:
    """The images of a lab of some systems, and the layers they need in the order they are
    built (each after its parent)."""

    layers: tuple[Layer, ...]
    systems: dict[str, str]  # a system's name: the tag its storage nodes run
    clients: str  # the tag the client nodes run


def plan(systems: Mapping[str, Sequence[str]], mirror: str) -> Images:
    """The images of a lab of these systems (a name: the packages it declares)."""
    tools = Layer("tools", base_tag(mirror), TOOLS, "the tools every node needs", mirror)
    layers = {tools.tag: tools}

    def on(parent: Layer, name: str, packages: Sequence[str], have: set[str], of: str) -> Layer:
        new = tuple(p for p in dict.fromkeys(packages) if p not in have)
        if not new:  # (nothing to add: the parent is the image)
            return parent
        layer = Layer(name, parent.tag, new, of)
        layers.setdefault(layer.tag, layer)
        return layer

    names = sorted(systems)
    own = {name: on(tools, name, systems[name], set(TOOLS), f"the system '{name}'") for name in names}
    clients, have, stacked = tools, set(TOOLS), []
    for name in names:
        stacked.append(name)
        clients = own[name] if clients is tools else \
            on(clients, "clients", systems[name], have, f"the client nodes of {' + '.join(stacked)}")
        have.update(systems[name])
    return Images(tuple(layers.values()), {name: own[name].tag for name in names}, clients.tag)


@dataclass(frozen=True)
class Built:
    """A lab's images, found or built."""

    images: Images
    built: tuple[str, ...]  # the tags built now (the others were there)
    seconds: float


def image_exists(tag: str) -> bool:
    return proc.run(["docker", "image", "inspect", tag], check=False, timeout=60).returncode == 0


def image_size(tag: str) -> int:
    out = proc.run(["docker", "image", "inspect", "--format", "{{.Size}}", tag], timeout=60).stdout
    return int(out.strip() or 0)


def build_base(mirror: str, note: Callable[[str], None]) -> str:
    tag = base_tag(mirror)
    if image_exists(tag):
        return tag
    proc.require_tool("debootstrap", "debootstrap")
    with tempfile.TemporaryDirectory(prefix="dfsbench-rootfs-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "root"
        note(f"debootstrap {SUITE} (minbase) from {mirror} …")
        t0 = time.monotonic()
        proc.run(["debootstrap", "--variant=minbase", SUITE, str(root), mirror], timeout=1800,
                 hint="debootstrap needs the Debian mirror of the host's apt sources")
        for deb in (root / "var/cache/apt/archives").glob("*.deb"):
            deb.unlink()
        note(f"debootstrap done in {time.monotonic() - t0:.0f} s; docker import …")
        proc.run(["sh", "-c", f'tar -C "{root}" -c . | docker import '
                  f'--change \'LABEL {LABEL}="base"\' - {tag}'], timeout=1800)
        shutil.rmtree(root, ignore_errors=True)
    return tag


def build(layer: Layer, note: Callable[[str], None]) -> None:
    """The layer built on its parent. A failed install raises an error naming whose
    packages they are, with apt's last lines."""
    note(f"docker build {layer.tag}: {len(layer.packages)} Debian packages of {layer.of} …")
    t0 = time.monotonic()
    try:
        # (--force-rm: a failed step leaves no container behind)
        proc.run(["docker", "build", "--quiet", "--force-rm", "-t", layer.tag, "-"], input=layer.dockerfile,
                 timeout=3600)
    except ToolError as e:
        said = re.sub(r"\x1b\[[0-9;]*m", "", f"{e.stdout}\n{e.stderr}")  # (the builder colours apt's errors)
        if STEP in said:  # (what the failed step said, not the builder's account of the steps before)
            said = said.rsplit(STEP, 1)[1].partition("\n")[2]
        said = proc.last_lines(said.strip(), 12) or "(nothing)"
        raise DfsbenchError(
            f"the image layer of {layer.of} could not be built: apt-get install {' '.join(layer.packages)} "
            f"failed ({'timed out' if e.timed_out else f'exit code {e.returncode}'}); it said:\n{said}",
            hint=f"these are Debian {SUITE} packages from the host's mirror: check each name with 'apt-cache "
                 "policy NAME' on this host, and the mirror; labs without this layer are not affected") from e
    note(f"{layer.tag} built in {time.monotonic() - t0:.0f} s")


def ensure(systems: Mapping[str, Sequence[str]], note: Callable[[str], None] = lambda _: None) -> Built:
    """The images of a lab of these systems (a name: its packages): each layer reused when
    it is there (its inputs unchanged), else built (minutes)."""
    proc.require_tool("docker", "docker.io")
    t0 = time.monotonic()
    mirror = host_mirror()
    images = plan(systems, mirror)
    built = []
    for layer in images.layers:
        if image_exists(layer.tag):
            continue
        if layer.parent == base_tag(mirror):
            build_base(mirror, note)
        build(layer, note)
        built.append(layer.tag)
    return Built(images, tuple(built), time.monotonic() - t0)


def installed() -> dict[str, tuple[str, ...]]:
    """Every installed system that can run in the container lab, its packages by its name:
    what a lab of them all needs (the one ``lab up --env docker`` starts without a config)."""
    return {name: system.packages for name, system in capable(registry.systems(), ContainerLab).items()}


def main() -> int:
    """``python -m environments.node_image``: build the images now (or find them built),
    so a later ``lab up --env docker`` does not pay for them: every installed system's own
    layer, each on its own (one that fails stops no other), then the client nodes' image of
    the lab of them all (``lab up`` without a config, as the container lab's tests start
    it). ``make test`` runs this in the background while the unit tests run."""
    t0 = time.monotonic()
    # (stopped, as 'make test' stops it when a step before the container tests fails: the
    # command under way is killed and the half-made root file system removed on the way out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    def note(text: str) -> None:
        print(f"[{time.monotonic() - t0:5.0f} s] {text}", flush=True)

    fresh: set[str] = set()  # (the tags built now)

    def said(what: str, tag: str) -> None:
        note(f"{what}: {tag} ({'built now' if tag in fresh else 'there'}), {image_size(tag) / 2**20:.0f} MiB")

    systems = installed()
    failed = []
    for name, packages in sorted(systems.items()):
        try:
            built = ensure({name: packages}, note)
        except DfsbenchError as e:
            print(f"dfsbench: {e}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        fresh.update(built.built)
        said(name, built.images.systems[name])
    everyone = " + ".join(sorted(systems))
    if failed:
        print(f"dfsbench: the layer of {', '.join(failed)} failed (above): the client nodes' image of "
              f"{everyone} is not built", file=sys.stderr)
        return 1
    try:
        built = ensure(systems, note)  # (every system's layer is there by now: the clients' only)
    except DfsbenchError as e:
        print(f"dfsbench: {e}", file=sys.stderr)
        return 1
    fresh.update(built.built)
    said(f"the client nodes of {everyone}", built.images.clients)
    return 0


if __name__ == "__main__":
    sys.exit(main())
