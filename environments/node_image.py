"""The container lab's node image, built here: there is no registry to pull from.

Two layers, each tagged by a hash of its inputs, so an unchanged input is never built
twice (a cached build is one ``docker image inspect``):

- the base: ``debootstrap --variant=minbase`` of the Debian suite from the mirror this
  host's apt sources name, imported with ``docker import``;
- the node: the base plus the Debian packages every node needs (every storage system's,
  as each declares them, and fio, iozone3 from ``non-free``, tools),
  built with ``docker build`` from a Dockerfile given on stdin (no build context).
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.api import registry
from harness.errors import DfsbenchError
from harness.system import proc

SUITE = "bookworm"
LABEL = "dfsbench.image"
# the workloads' tools and what the lab itself runs in a node
TOOLS = (
    "fio", "iozone3", "iperf3", "ioping", "iproute2", "fuse3", "procps", "psmisc",
    "util-linux", "attr", "kmod", "uuid-runtime", "xfsprogs", "e2fsprogs", "python3",
    # a client node can also be an SSH client host of the existing environment (its tests)
    "openssh-server",
)
# every system's packages (in the order of their names), then the tools (a package both
# name stays among the tools: the image's tag is a hash of this list, in its order)
PACKAGES = tuple(dict.fromkeys(
    [*(p for _, system in sorted(registry.systems().items()) for p in system.packages if p not in TOOLS), *TOOLS]))
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
                            hint="the node image is built with debootstrap from the host's mirror")
    return candidates[0].rstrip("/")


def dockerfile(base: str, mirror: str) -> str:
    return "\n".join([
        f"FROM {base}",
        f"RUN printf 'deb {mirror} {SUITE} main non-free\\ndeb {mirror} {SUITE}-updates main non-free\\n'"
        " > /etc/apt/sources.list",
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
        f"--no-install-recommends {' '.join(PACKAGES)} > /dev/null "
        "&& rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb",
        f'LABEL {LABEL}="node"',
        'CMD ["sleep", "infinity"]',
    ]) + "\n"


def _tag(name: str, *inputs: str) -> str:
    digest = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:12]
    return f"dfsbench-{name}:{digest}"


@dataclass(frozen=True)
class Built:
    tag: str
    seconds: float
    reused: bool
    size: int  # bytes


def image_exists(tag: str) -> bool:
    return proc.run(["docker", "image", "inspect", tag], check=False, timeout=60).returncode == 0


def image_size(tag: str) -> int:
    out = proc.run(["docker", "image", "inspect", "--format", "{{.Size}}", tag], timeout=60).stdout
    return int(out.strip() or 0)


def build_base(mirror: str, note: Callable[[str], None]) -> str:
    tag = _tag("base", SUITE, mirror, "minbase")
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


def ensure(note: Callable[[str], None] = lambda _: None) -> Built:
    """The node image: reused when its inputs are unchanged, else built (minutes)."""
    proc.require_tool("docker", "docker.io")
    mirror = host_mirror()
    t0 = time.monotonic()
    text_without_base = dockerfile("BASE", mirror)
    tag = _tag("node", SUITE, mirror, text_without_base)
    if image_exists(tag):
        return Built(tag, time.monotonic() - t0, True, image_size(tag))
    base = build_base(mirror, note)
    note(f"docker build {tag}: {len(PACKAGES)} Debian packages …")
    t1 = time.monotonic()
    proc.run(["docker", "build", "--quiet", "-t", tag, "-"], input=dockerfile(base, mirror), timeout=3600,
             hint="the packages come from the host's Debian mirror")
    note(f"packages installed in {time.monotonic() - t1:.0f} s")
    return Built(tag, time.monotonic() - t0, False, image_size(tag))


def main() -> int:
    """``python -m environments.node_image``: build the node image now (or find it built),
    so a later ``lab up --env docker`` does not pay for it; ``make test`` runs this in the
    background while the unit tests run."""
    t0 = time.monotonic()
    # (stopped, as 'make test' stops it when a step before the container tests fails: the
    # command under way is killed and the half-made root file system removed on the way out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    def note(text: str) -> None:
        print(f"[{time.monotonic() - t0:5.0f} s] {text}", flush=True)

    try:
        built = ensure(note)
    except DfsbenchError as e:
        print(f"dfsbench: the node image could not be built: {e}", file=sys.stderr)
        return 1
    how = "already built" if built.reused else f"built in {built.seconds:.0f} s"
    note(f"node image {built.tag}: {how}, {built.size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
