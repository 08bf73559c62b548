"""fio's client/server mode: ``fio --server`` started on hosts for the length of a cell,
for this machine's ``fio --client`` to run the job on."""

from __future__ import annotations

from pathlib import Path

from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.hosts import Host, Running


def unused_port(host: Host, address: str) -> int:
    """A port nothing listens on at the host's address, picked at random: never one a server
    of an earlier cell may still hold while it goes away (or one the host's owner uses)."""
    import random

    for _ in range(20):
        port = random.randint(20000, 60000)
        if not host.listening(address, port):
            return port
    raise DfsbenchError(f"found no free port for a fio server on {host.name}")


class FioServers:
    """``fio --server`` on each of some hosts, for the length of a ``with`` block: on this
    host's loopback addresses (each standing for one load-generating host), or one in each
    client node of a lab. Their logs are kept with the run."""

    def __init__(self, places: list[tuple[Host, str]], log_dir: Path, scratch: Path) -> None:
        self.places, self.log_dir, self.scratch = places, log_dir, scratch
        self.running: list[tuple[Host, Running, str]] = []

    def __enter__(self) -> list[str]:
        addresses = []
        try:
            for i, (host, address) in enumerate(self.places):
                port = proc.free_port(address) if host.local else unused_port(host, address)
                name = f"fio-server-{i + 1}.log"
                server = host.spawn(["fio", f"--server=ip:{address},{port}"],
                                    (self.log_dir if host.local else self.scratch) / name)
                self.running.append((host, server, name))
                proc.wait_for(lambda: (host.listening(address, port), "not listening yet"),
                              what=f"fio server on {host.name} at {address}:{port}", timeout=20,
                              interval=0.1, alive=server.died)
                addresses.append(f"ip:{address},{port}")
        except BaseException:
            self.__exit__()
            raise
        return addresses

    def __exit__(self, *exc: object) -> None:
        for host, server, name in self.running:
            server.stop(3)
            if not host.local:
                (self.log_dir / f"{host.name}-{name}").write_text(server.output())
        self.running = []
