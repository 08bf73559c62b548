"""The three axes: Environment (obtains a cluster), Backend (attaches a target),
Workload (runs a tool on a target). Built-ins and third-party plugins implement these
and register through the entry-point groups ``dfsbench.environments``,
``dfsbench.backends`` and ``dfsbench.workloads``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from harness.ledger import Ledger
from harness.records import Measurement


def _to_bytes(v: Any) -> Any:
    from harness.units import parse_size
    return parse_size(v) if isinstance(v, str) else v


# A size in bytes in any plugin's options: 4096, "40KiB", "256MiB", "1G", "210MB".
Bytes = Annotated[int, BeforeValidator(_to_bytes), Field(gt=0)]


class Options(BaseModel):
    """Base of every plugin's options: unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(Options):
    pass


@dataclass
class Cluster:
    """What an environment hands to backends: per service (``ceph``, ``gluster``), the
    facts a client needs, plus the ledger where attached clients record what they create."""

    environment: str
    services: dict[str, dict[str, Any]]
    ledger: Ledger
    workdir: Path
    reused: bool = False


class Environment(ABC):
    """Obtains a cluster: local processes, containers, or one that already exists."""

    name: ClassVar[str]
    Options: ClassVar[type[Options]] = NoOptions

    def __init__(self, options: Options) -> None:
        self.options = options

    @abstractmethod
    def up(self, services: set[str]) -> AbstractContextManager[Cluster]:
        """Bring up (or reuse) the services; undo exactly what was created on exit."""


@dataclass
class Target:
    """What a backend hands to workloads, by kind:

    - ``path``: a verified mount (or a local directory); ``path`` is where to work.
    - ``block``: a block device; ``info['device']``, and ``info['destructive_ok']``,
      which only the user's explicit ``allow_destructive: true`` sets.
    - ``rbd``: an RBD image reached through librbd; ``info`` has pool, image, conf,
      keyring, client.
    - ``rados``: a RADOS pool; ``info`` has pool, conf, keyring, client.
    """

    kind: str
    path: Path | None
    backend: str
    variant: str
    description: dict[str, Any] = field(default_factory=dict)
    remount: Callable[[], None] | None = None  # a fresh client, its caches gone
    detach: Callable[[], None] | None = None  # undo what open() created
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.backend}/{self.variant}"

    @property
    def directory(self) -> Path:
        """Where a file workload works: only ``path`` targets have one."""
        if self.kind != "path" or self.path is None:
            from harness.errors import DfsbenchError
            raise DfsbenchError(f"{self.key} is a {self.kind} target, not a mounted file system")
        return self.path

    def drop_caches(self) -> str:
        """Flush and forget every cache between the workload and the storage.

        Returns how it was done, to be recorded with the measurement.
        """
        from harness import caches
        return caches.drop(self)

    def require_destructive(self, workload: str) -> None:
        """Refuse to write to a raw device unless the user allowed it in so many words."""
        if not self.info.get("destructive_ok"):
            from harness.errors import BadInput
            raise BadInput(f"{workload} would write to the raw device {self.info.get('device')} "
                           f"of backend {self.key}, which destroys what is on it",
                           hint="set 'allow_destructive: true' in that backend's options if "
                                "its contents may be lost")


class Backend(ABC):
    """Turns a cluster into a Target and proves it is what it claims to be."""

    name: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset()  # services the environment must provide
    target_kind: ClassVar[str] = "path"
    Options: ClassVar[type[Options]] = NoOptions

    def __init__(self, options: Options, variant: str = "default") -> None:
        self.options = options
        self.variant = variant

    @property
    def kind(self) -> str:
        """The kind of target this backend, so configured, will hand out."""
        return self.target_kind

    @abstractmethod
    def open(self, cluster: Cluster, workdir: Path) -> Target:
        """Mount (or map) the storage and verify it. Everything created goes into the
        cluster's ledger; ``Target.detach`` undoes it. A failed open undoes its own work."""

    @contextmanager
    def attach(self, cluster: Cluster, workdir: Path) -> Iterator[Target]:
        """``open`` for the length of a ``with`` block."""
        target = self.open(cluster, workdir)
        try:
            yield target
        finally:
            if target.detach is not None:
                target.detach()


class Workload(ABC):
    """Runs a real tool (or engine) on a target and yields measurements as they exist."""

    name: ClassVar[str]
    accepts: ClassVar[frozenset[str]] = frozenset({"path"})
    tool: ClassVar[str | None] = None  # the tool whose output 'dfsbench parse TOOL' reads
    Options: ClassVar[type[Options]] = NoOptions

    @classmethod
    def defaults(cls, scale: str) -> dict[str, Any]:
        """Option values for a scale (``quick`` or ``report``); the config overrides them."""
        return {}

    def __init__(self, options: Options) -> None:
        self.options = options

    @classmethod
    def parse(cls, text: str, source: str) -> list[Measurement]:
        """Records from the text ``tool`` printed (for ``dfsbench parse`` and ``import``)."""
        raise NotImplementedError(f"workload {cls.name} reads no tool output")

    def supports(self, target: Target) -> bool:
        """Whether this workload runs on the target (by default: by its kind)."""
        return target.kind in self.accepts

    @abstractmethod
    def cells(self) -> list[dict[str, Any]]:
        """The parameter combinations this workload will run (for progress and planning)."""

    @abstractmethod
    def run(self, target: Target, cell: dict[str, Any], scratch: Path,
            raw_dir: Path) -> Iterator[Measurement]:
        """Run one cell on the target; yield each measurement as soon as it exists."""
