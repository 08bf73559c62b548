"""Backend ``localdir``: a plain directory on this host's disk, the control."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from harness.api.contracts import Backend, Cluster, Options, PlainPath
from harness.api.model import SITE
from harness.api.mounts import MountEntry, find_mount
from harness.api.target import Target
from harness.errors import BadInput
from harness.system import files
from harness.system.files import printable


class LocalDirOptions(Options):
    path: PlainPath | None = Field(None, description="directory to use (default: inside the run's work dir)",
                                   json_schema_extra=SITE)

    @field_validator("path")
    @classmethod
    def _not_the_systems(cls, v: Path | None) -> Path | None:
        why = files.system_directory(v) if v is not None else None
        if why:  # (the workloads write and remove their files in it)
            raise ValueError(f"{printable(v)} is {why}, where no benchmark's files belong; give a directory "
                             "on the disk to measure (e.g. /srv/bench, /var/tmp/bench)")
        return v


class LocalDir(Backend):
    name = "localdir"
    display = "local dir"
    control = True
    suites = {"full": 2}
    Options = LocalDirOptions
    options: LocalDirOptions

    def this_host(self) -> tuple[str, str] | None:
        return "name", "its directory is on this machine's disk"

    def directory(self) -> Path | None:
        return self.options.path

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        base = self.options.path or workdir / "localdir"
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"backend localdir: cannot use {printable(base)} as its directory: {exc.strerror}",
                           hint="give options.path a directory this user can make or write") from None
        mount = _mount_of(base)
        description = {"system": "local", "client": "kernel", "fs_type": mount.fstype if mount else "?",
                       "device": mount.source if mount else "?", "environment": cluster.environment}
        return Target("path", base, self.name, self.variant, description, backing=base)


def _mount_of(path: Path) -> MountEntry | None:
    path = path.resolve()
    for candidate in [path, *path.parents]:
        entry = find_mount(candidate)
        if entry is not None:
            return entry
    return None
