"""Backend ``blockdev``: a raw block device — one the user names (like the cloud disk of
seed 002), or by default a loop device on a sparse file that dfsbench creates and removes.

Writing to a raw device destroys what is on it, so every workload that writes refuses
unless the backend's options say ``allow_destructive: true``. A device that is mounted
is refused outright.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from harness.api.contracts import Backend, Bytes, Cluster, Options, PlainPath
from harness.api.model import SITE
from harness.api.target import BlockAccess, Target
from harness.errors import BadInput, DfsbenchError
from harness.system import proc
from harness.system.ledger import read_mounts


class BlockdevOptions(Options):
    device: PlainPath | None = Field(None, description="a block device, e.g. /dev/vdb (default: a "
                                "loop device on a file dfsbench creates)", json_schema_extra=SITE)
    loop_size: Bytes = Field(4 << 30, description="size of the default loop device's file")
    allow_destructive: bool = Field(False, description="let workloads write to the raw device")

    @field_validator("device")
    @classmethod
    def _device(cls, v: Path | None) -> Path | None:
        if v is not None:
            try:
                check_device(v)
            except BadInput as exc:
                raise ValueError(exc.message) from None
        return v

    @model_validator(mode="after")
    def _destructive(self) -> BlockdevOptions:
        if self.device is not None and not self.allow_destructive:
            raise ValueError(f"the workloads write to the raw device {self.device}, which destroys what "
                             "is on it; set 'allow_destructive: true' if its contents may be lost (or "
                             "leave out 'device' for a throwaway loop device)")
        return self


class Blockdev(Backend):
    name = "blockdev"
    display = "block device"
    target_kind = "block"
    suites = {"full": 5}
    # in a suite, on its own throwaway loop device, which it may overwrite (a user's device
    # needs its own explicit allow_destructive)
    suite_options = {"allow_destructive": True}
    Options = BlockdevOptions
    options: BlockdevOptions

    def holds(self) -> tuple[str, int] | None:
        if self.options.device is None:
            return "loop_size", self.options.loop_size
        found = _device_size(self.options.device)  # (a device named is one of this machine's)
        return ("device", found) if found else None

    def this_host(self) -> tuple[str, str] | None:
        if self.options.device is not None:
            return "options.device", f"{self.options.device} is a device of this machine"
        return "name", "its loop device is one this machine makes"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        o = self.options
        description: dict[str, Any] = {"system": "block device", "environment": cluster.environment}
        mine: frozenset[str] = frozenset()
        if o.device is None:
            proc.require_tool("losetup", "mount")
            workdir.mkdir(parents=True, exist_ok=True)
            backing = workdir / "blockdev.img"
            with cluster.ledger.capture() as created:
                cluster.ledger.tree(backing)
                with open(backing, "wb") as f:
                    f.truncate(o.loop_size)
                device = proc.run(["losetup", "--find", "--show", "--direct-io=on",
                                   str(backing)]).stdout.strip()
                cluster.ledger.loop(device)
            mine = frozenset(created)
            description.update({"device": device, "client": "loop device on a sparse file",
                                "size": o.loop_size})
        else:
            device = str(o.device)
            check_device(o.device)
            description.update({"device": device, "client": "kernel block device",
                                "size": _device_size(o.device)})

        def detach() -> None:
            problems = cluster.ledger.undo(only=mine) if mine else []
            if problems:
                raise DfsbenchError("could not detach the loop device cleanly: " + "; ".join(problems))

        return Target("block", None, self.name, self.variant, description, detach=detach,
                      access=BlockAccess(device, o.allow_destructive), holds=description["size"] or None,
                      backing=workdir if o.device is None else None)


def check_device(device: Path) -> None:
    try:
        mode = os.stat(device).st_mode
    except FileNotFoundError:
        raise BadInput(f"block device {device} does not exist") from None
    if not stat.S_ISBLK(mode):
        raise BadInput(f"{device} is not a block device",
                       hint="for a directory use the 'localdir' backend")
    real = os.path.realpath(device)
    ours = _device_numbers(os.stat(device).st_rdev)
    for swap in _swaps():
        if _mounted_device(swap, "", "swap") in ours:
            raise BadInput(f"{device} holds active swap ({swap}); dfsbench will not write to it",
                           hint="swapoff it first, or choose another device")
    for source, point, fstype, _ in read_mounts():
        if os.path.realpath(source) == real or (source.startswith(real) and
                                                re.fullmatch(r"p?\d+", source[len(real):])) or \
                _mounted_device(source, point, fstype) in ours:
            raise BadInput(f"{device} is mounted at {point}; dfsbench will not write under a file system",
                           hint="unmount it first, or choose another device")


# file systems on a block device, whose mount point's st_dev is that device (a network or
# FUSE file system is never stat'ed here: a dead one would hang the check)
BLOCK_FS = {"ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "exfat", "f2fs", "jfs", "reiserfs", "ntfs", "ntfs3"}


def _device_numbers(rdev: int) -> set[int]:
    """The device number, those of its partitions, and of every device built on any of
    them (LVM, dm-crypt, md: sysfs 'holders'), by number, so another device node of the
    same disk is the same disk."""
    numbers: set[int] = set()
    todo = [rdev]
    while todo:
        number = todo.pop()
        if number in numbers:
            continue
        numbers.add(number)
        where = Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}")
        for dev in [*where.glob("*/dev"), *where.glob("holders/*/dev"), *where.glob("*/holders/*/dev")]:
            try:
                major, minor = dev.read_text().strip().split(":")
                todo.append(os.makedev(int(major), int(minor)))
            except (OSError, ValueError):
                pass
    return numbers


def _swaps() -> list[str]:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return []
    return [line.split()[0] for line in lines if line.split()]


def _mounted_device(source: str, point: str, fstype: str) -> int | None:
    """The device number a mount is on: its source's, when that is a device node, else
    its mount point's (e.g. /dev/root, which is no node)."""
    try:
        if source.startswith("/dev/"):  # (a FUSE or network source is never looked up)
            st = os.stat(source)
            if stat.S_ISBLK(st.st_mode):
                return st.st_rdev
    except OSError:
        pass
    try:
        return os.stat(point).st_dev if fstype in BLOCK_FS else None
    except OSError:
        return None


def _device_size(device: Path) -> int:
    name = os.path.basename(os.path.realpath(device))
    try:
        return int(Path(f"/sys/class/block/{name}/size").read_text()) * 512
    except (OSError, ValueError):
        return 0
