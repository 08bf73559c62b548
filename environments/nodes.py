"""A node of the container lab as a :class:`~harness.system.hosts.Host`: every command runs in
the container through ``docker exec``, paths are the container's, raw outputs come back
here. The lab's bring-up uses :meth:`Node.exec`; backends and workloads use the Host API.

A tool runs under coreutils ``timeout`` inside the container, so a tool past its deadline
is killed where it runs (killing ``docker exec`` here would leave it running there). A
long-running process (a FUSE client, a fio or iperf3 server) writes its pid to a file in
the container and is stopped by that pid; containers run with an init that reaps them.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import tarfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import DfsbenchError
from harness.system import proc
from harness.api.systems import ContainerNode
from harness.system.hosts import RemoteHost, copied_name
from harness.system.ledger import Ledger

ENGINES = "/usr/local/lib/dfsbench"  # where engine scripts are put
# exit codes of coreutils timeout: it stopped the command (TERM), or had to KILL it
TIMED_OUT = (124, 137)


@functools.cache
def _docker_api() -> Any:
    import docker  # (the Docker SDK testcontainers is built on; only where files are put)

    return docker.from_env()


def archive(files: Mapping[str, str], dirs: Sequence[str] = ()) -> bytes:
    """A tar archive to unpack at / : the directories (and every parent of them and of the
    files, each once), then the files, as root, 0644 (as ``docker cp`` of a file made here)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        made: set[str] = set()
        for path in [*dirs, *(str(Path(f).parent) for f in files)]:
            parts = Path(path).relative_to("/").parts
            for depth in range(1, len(parts) + 1):
                name = "/".join(parts[:depth])
                if name not in made:
                    made.add(name)
                    entry = tarfile.TarInfo(name)
                    entry.type, entry.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(entry)
        for path, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(str(Path(path).relative_to("/")))
            entry.size, entry.mode = len(data), 0o644
            tar.addfile(entry, io.BytesIO(data))
    return out.getvalue()


def running(names: Sequence[str]) -> dict[str, bool]:
    """Whether each of these containers runs (one ``docker inspect`` for all of them; one
    that is gone does not)."""
    if not names:
        return {}
    out = proc.run(["docker", "inspect", "--format", "{{.Name}} {{.State.Running}}", *names], check=False,
                   timeout=30).stdout.split("\n")
    said = dict(line.strip().lstrip("/").split(" ", 1) for line in out if " " in line.strip())
    return {name: said.get(name) == "true" for name in names}


class Node(RemoteHost, ContainerNode):
    """A container of the lab, reached with ``docker exec``."""

    clock_offset = 0.0  # (a container reads this machine's kernel clock)
    clock_shared = True

    def __init__(self, name: str, hostname: str | None = None) -> None:
        self.name = name
        self.hostname = hostname  # its name on the lab's network
        self._copied: set[str] = set()  # engine scripts put in the node
        self._ip: str | None = None

    @property
    def label(self) -> str:
        return self.hostname or self.name

    # ---------------------------------------------------------------- for the bring-up

    def argv(self, *args: str) -> list[str]:
        return ["docker", "exec", self.name, *args]

    def exec(self, *args: str, timeout: float = 120, check: bool = True) -> str:
        return proc.run(self.argv(*args), timeout=timeout, check=check).stdout

    def daemon(self, *args: str) -> None:
        """Start a process in the node that outlives this call (``docker exec -d``)."""
        proc.run(["docker", "exec", "-d", self.name, *args], timeout=60)

    def write_files(self, files: Mapping[str, str], dirs: Sequence[str] = ()) -> None:
        """Write text files into the node, and make these directories (with their parents):
        one call of the Docker API, no process in the node and none here — how the bring-up
        hands each node its configuration and keys."""
        import docker.errors

        try:
            _docker_api().api.put_archive(self.name, "/", archive(files, dirs))
        except docker.errors.DockerException as exc:
            raise DfsbenchError(f"could not write {', '.join(files)} into {self.name}: {exc}") from exc

    def put_file(self, local: Path, remote: str, mode: int = 0o755) -> None:
        """Copy a file of this host into the node (one call of the Docker API, streamed from
        the file; its parent directories must exist there)."""
        import docker.errors

        where = Path(remote)
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as tar:
            entry = tar.gettarinfo(str(local), arcname=where.name)
            entry.mode, entry.uid, entry.gid, entry.uname, entry.gname = mode, 0, 0, "root", "root"
            with open(local, "rb") as f:
                tar.addfile(entry, f)
        try:
            _docker_api().api.put_archive(self.name, str(where.parent), data.getvalue())
        except docker.errors.DockerException as exc:
            raise DfsbenchError(f"could not copy {local} into {self.name}:{remote}: {exc}") from exc

    def running(self) -> bool:
        return running([self.name])[self.name]

    # ---------------------------------------------------------------- the Host API

    def wrap(self, argv: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None,
             cwd: Path | None = None, interactive: bool = False) -> list[str]:
        head = ["docker", "exec"] + (["-i"] if interactive else [])
        for key, value in (env or {}).items():
            head += ["-e", f"{key}={value}"]
        if cwd is not None:
            head += ["-w", str(cwd)]
        return [*head, self.name, *map(str, argv)]

    def run(self, argv: Sequence[str | os.PathLike[str]], *, timeout: float = 120, check: bool = True,
            env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return proc.run(self.wrap(argv, env, interactive=input is not None), timeout=timeout, check=check,
                        input=input)

    def run_tool(self, argv: Sequence[str | os.PathLike[str]], *, deadline: float, output: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 grace: float = 5.0) -> proc.ToolRun:
        with self.running_tool(argv, deadline, grace) as inner:
            result = proc.run_tool(self.wrap(inner, env, cwd), deadline=deadline + grace + 30, output=output,
                                   grace=grace)
        if result.returncode in TIMED_OUT:
            result.returncode = None  # killed at its deadline, in the container
        result.argv = [str(a) for a in argv]
        return result

    def python(self, script: Path) -> list[str]:
        where = f"{ENGINES}/{copied_name(script)}"
        if where not in self._copied:
            self.run(["mkdir", "-p", ENGINES])
            proc.run(["docker", "cp", str(script), f"{self.name}:{where}"], timeout=60)
            self._copied.add(where)
        return ["python3", where]

    def scratch(self, here: Path, ledger: Ledger) -> Path:
        # the same path in the node: under the lab's directory, where a client node has a
        # Docker volume of its own (environments.docker), not the fuse-overlayfs root
        where = here
        if self.run(["test", "-d", str(where)], check=False).returncode != 0:
            self.mkdir(where)
            ledger.command(self.wrap(["rm", "-rf", "--one-file-system", str(where)]),
                           f"scratch directory {self.name}:{where}")
        return where

    def address(self) -> str:
        if self._ip is None:
            self._ip = proc.run(["docker", "inspect", "--format",
                                 "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", self.name],
                                timeout=30).stdout.strip()
        return self._ip

    def drop_caches(self) -> bool:
        self.run(["sync"], timeout=600)
        return self.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=False).returncode == 0

    def new_pidfile(self) -> str:
        return f"/run/dfsbench-{uuid.uuid4().hex[:10]}.pid"

    def launch(self, argv: Sequence[str], log: Path, pidfile: str) -> None:
        script = f'log="$1"; shift; mkdir -p "$(dirname "$log")"; echo $$ > {pidfile}; exec "$@" >> "$log" 2>&1'
        proc.run(["docker", "exec", "-d", self.name, "sh", "-c", script, "sh", str(log), *map(str, argv)],
                 timeout=60)
