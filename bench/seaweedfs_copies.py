"""Benchmark: where does SeaweedFS make the copies of a write — does its client send each
copy itself (as a GlusterFS FUSE client does) or once, the volume servers sending the rest
(as a Ceph primary OSD does)? The answer is its Placement (backends.seaweedfs.system).

A SeaweedFS local lab (master, N volume servers, filer, as the system starts it), the
backend's mount, and ``strace -f -yy`` on the mount and on every volume server while ``dd``
writes a file through the mount (``conv=fsync``): every byte each process hands to a TCP
socket is summed by the port it was sent to, which names the volume server (or the filer,
or the master). Prints what the client sent per byte written, and what each volume server
sent on to the others. Needs root, /dev/fuse, strace.

    .venv/bin/python bench/seaweedfs_copies.py [--size-mib 64] [--replication 002] [--servers 3]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from backends.seaweedfs.seaweedfs import SeaweedFSBackend
from backends.seaweedfs.system import SeaweedFS
from backends.seaweedfs.weed import Address, Topology, get_json
from harness.api.contracts import Cluster
from harness.api.systems import Processes
from harness.system.ledger import Ledger

CALL = re.compile(r"^(\d+)\s+(write|writev|sendmsg|sendto)\((\d+)<(.*?)>, ")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (write|writev|sendmsg|sendto) resumed>.*\)\s+=\s+(-?\d+)")
DONE = re.compile(r"\)\s+=\s+(-?\d+)")
PEER = re.compile(r"TCP:\[[\d.]+:\d+->[\d.]+:(\d+)\]")


def sent(trace: Path) -> collections.Counter[int]:
    """Bytes a traced process wrote to TCP sockets, by the port of the other end (calls that
    strace split into '<unfinished ...>' and '<... resumed>' counted once)."""
    total: collections.Counter[int] = collections.Counter()
    pending: dict[str, int] = {}
    for line in trace.read_text().splitlines():
        call = CALL.match(line)
        if call:
            peer = PEER.match(call.group(4))
            if line.endswith("<unfinished ...>"):
                if peer:
                    pending[call.group(1)] = int(peer.group(1))
                continue
            done = DONE.search(line)
            if peer and done and int(done.group(1)) > 0:
                total[int(peer.group(1))] += int(done.group(1))
            continue
        resumed = RESUMED.match(line)
        if resumed and resumed.group(1) in pending and int(resumed.group(3)) > 0:
            total[pending.pop(resumed.group(1))] += int(resumed.group(3))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--replication", default="002")
    parser.add_argument("--servers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seaweedfs-copies-") as tmp:
        root = Path(tmp)
        (root / "lab").mkdir()
        ledger = Ledger(root / "ledger.json")
        system = SeaweedFS(SeaweedFS.LocalOptions(seaweedfs_volume_servers=args.servers,
                                                  seaweedfs_replication=args.replication))
        tracers: list[subprocess.Popen[bytes]] = []
        try:
            service = system.start_processes(Processes(root / "lab", ledger, 60, print))
            volumes = {e["pid"]: e["name"] for e in ledger.entries if str(e.get("name", "")).startswith("weed volume")}
            backend = SeaweedFSBackend(SeaweedFSBackend.Options(), "copies")
            with backend.attach(Cluster("local", {"seaweedfs": service}, ledger, root / "work"),
                                root / "work") as target:
                mount = next(e["pid"] for e in ledger.entries if e.get("kind") == "process"
                             and str(e.get("name", "")).startswith("weed seaweedfs"))
                top = Topology.of(get_json(f"http://{Address.parse(service.master).http}/dir/status"))
                port_of = {int(url.rsplit(":", 1)[1]): url for url in top.servers}
                traced = {"mount": mount, **{name: pid for pid, name in volumes.items()}}
                for name, pid in traced.items():
                    tracers.append(subprocess.Popen(["strace", "-f", "-yy", "-qq", "-e", "trace=write,writev,sendmsg,"
                                                     "sendto", "-e", "signal=none", "-o", str(root / f"{name}.trace"),
                                                     "-p", str(pid)], stderr=subprocess.DEVNULL))
                time.sleep(2)  # (strace attached to every thread)
                assert target.path is not None
                subprocess.run(["dd", "if=/dev/urandom", f"of={target.path / 'f'}", "bs=1M",
                                f"count={args.size_mib}", "conv=fsync", "status=none"], check=True)
                os.sync()
                time.sleep(2)
                for tracer in tracers:
                    tracer.send_signal(signal.SIGINT)
                    tracer.wait(30)
                written = args.size_mib << 20
                for name in traced:
                    by_port = sent(root / f"{name}.trace")
                    to_servers = {port_of[p]: n for p, n in by_port.items() if p in port_of}
                    total = sum(to_servers.values())
                    print(f"{name}: sent {total:,} B to volume servers ({total / written:.4f} per byte written): "
                          + ", ".join(f"{url} {n:,}" for url, n in sorted(to_servers.items())))
        finally:
            for tracer in tracers:
                if tracer.poll() is None:
                    tracer.kill()
            print("undo:", ledger.undo() or "clean")


if __name__ == "__main__":
    main()
