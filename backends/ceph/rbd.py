"""Backend ``rbd``: an RBD image in a pool.

``access: librbd`` (the default) hands the image itself to workloads that speak librbd:
fio's ``rbd`` ioengine and ``rbd bench`` (as in the Ceph test notes, seed 000 §2.3-2.4).

``access: filesystem`` puts a file system on the image for the file workloads. These
machines have no kernel RBD module, so the image is exposed as a file by ``rbd-fuse``,
attached to a loop device, formatted (ext4 or xfs) and mounted — the user-space stand-in
for ``rbd map`` + ``mkfs`` + ``mount``. Dropping caches takes the whole chain down and
up again, so librbd's own cache inside rbd-fuse goes too.

``ec: {k: 2, m: 1}`` keeps the image's data in an erasure-coded pool of its own
(``rbd create --data-pool``), its metadata in the replicated pool: RBD cannot keep an
image's header and object map in an erasure-coded pool.

Everything created (pools, erasure-code profile, image, rbd-fuse process and mount, loop
device, mount) is in the ledger or undone by ``detach``, newest first.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backends.ceph.client import EC_DESCRIPTION, CephBackend, CephCli, EcPool, ErasureCode, Pool, PoolOptions, ec_alone
from harness.api.attach import Attaching
from harness.api.contracts import Bytes, Cluster
from harness.api.mounts import FuseClient, verify_mount
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

XFS_SMALLEST = 300 << 20  # mkfs.xfs (xfsprogs 5.19 and later) makes no smaller file system


class RbdOptions(PoolOptions):
    image_size: Bytes = Field(2 << 30, description="size of the image (accepts 8GiB); "
                                    "holds fio's working set, and is filled once before reads")
    access: Literal["librbd", "filesystem"] = Field("librbd", description="librbd: the image "
                                                    "itself (fio rbd engine, rbd bench); "
                                                    "filesystem: mkfs + mount for file workloads")
    fs: Literal["ext4", "xfs"] = Field("ext4", description="the file system made on the image for access: filesystem")
    client_cache: bool = Field(False, description="librbd's write-back cache (rbd_cache); off by "
                               "default so writes are measured at the cluster, as O_DIRECT would")
    ec: ErasureCode | None = Field(None, description=EC_DESCRIPTION + " (the image's data; its metadata "
                                   "stays in the replicated pool)")

    @field_validator("ec")
    @classmethod
    def _ec_alone(cls, v: ErasureCode | None, info: ValidationInfo) -> ErasureCode | None:
        return ec_alone(v, info)

    @model_validator(mode="after")
    def _room_for_xfs(self) -> RbdOptions:
        if self.access == "filesystem" and self.fs == "xfs" and self.image_size < XFS_SMALLEST:
            raise ValueError(f"an xfs file system needs an image of at least {XFS_SMALLEST >> 20} MiB "
                             f"(mkfs.xfs refuses smaller ones), not {self.image_size >> 20} MiB; "
                             "give a larger image_size or fs: ext4")
        return self



class Rbd(CephBackend):
    name = "rbd"
    display = "RBD"
    target_kind = "rbd"
    suites = {"full": 3}
    # the image the suites attach holds what their rbd bench writes per cell (5 GiB at report
    # scale, the 2014 report's --io-total 5G); it is no larger at quick scale, where rbd bench,
    # which fills it once before its reads, would write the difference for nothing
    REPORT_IMAGE = 5 << 30
    settings = ("rbd_cache",)
    topology = (*CephBackend.topology, "rbd_cache", "erasure_code")
    tools = (("rbd", "ceph-common"),)
    Options = RbdOptions
    options: RbdOptions

    @classmethod
    def suite_options_at(cls, scale: str) -> dict[str, Any]:
        return {"image_size": cls.REPORT_IMAGE} if scale == "report" else {}

    @property
    def kind(self) -> str:
        return "path" if self.options.access == "filesystem" else "rbd"

    def holds(self) -> tuple[str, int] | None:
        # (a file system on the image: its free space is checked before each cell)
        return ("image_size", self.options.image_size) if self.options.access == "librbd" else None

    def only_here(self) -> tuple[str, str] | None:
        # (Backend.attach refuses it where the cluster's client is another machine: a container
        # has no loop devices, and an SSH client host's are not dfsbench's to make)
        if self.options.access == "filesystem":
            return "options.access", ("access 'filesystem' puts the file system on the image through rbd-fuse and a "
                                      "loop device, which only a client on this machine makes; 'access: librbd' "
                                      "needs neither")
        return None

    def creates(self) -> str:
        return ("a pool and " if self.options.pool is None else "") + \
            ("an erasure-code profile, an erasure-coded pool and " if self.options.ec is not None else "") + \
            "an RBD image"

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        o = self.options
        cli = CephCli.of(cluster, self.name, {} if o.client_cache else {"rbd_cache": "false"})
        cli.host.require("rbd", "ceph-common")
        pool = Pool(cli, o, "rbd", "rbd")
        ec = EcPool(cli, o.ec, "rbd", "rbd", self.variant, o.pg_num) if o.ec is not None else None
        image = f"dfsbench-{secrets.token_hex(3)}"
        with Attaching(cluster.ledger, f"rbd/{self.variant}") as attach:
            with attach.step(f"pool {pool.name}", pool.delete) as in_pool:
                pool.create()
            if ec is not None:
                with attach.step(f"erasure-coded pool {ec.name}", ec.delete):
                    ec.create()
            # rbd-fuse leaves its watch on the image when it goes, and the OSDs drop it only
            # after osd_client_watch_timeout (30 s): 'rbd rm' refuses until then. A pool of
            # our own takes the image with it, and no watch holds a pool's removal up.
            with_pool = o.access == "filesystem" and pool.owned
            with attach.step(f"rbd image {pool.name}/{image}", goes_with=in_pool if with_pool else None):
                cli.run("rbd", "create", f"{pool.name}/{image}", "--size", f"{o.image_size >> 20}M",
                        *(["--data-pool", ec.name] if ec is not None else []))
                cli.created(f"rbd image {pool.name}/{image}", "rm", "--no-progress", f"{pool.name}/{image}",
                            tool="rbd")
            description = {**cli.describe(), "client": "librbd", "replicas": pool.size if ec is None else None,
                           "image": image, "image_size": o.image_size, "access": o.access,
                           "environment": cluster.environment, "rbd_cache": o.client_cache, **pool.describe(),
                           **(ec.describe() if ec is not None else {})}
            if o.access == "librbd":
                return cli.target("rbd", self.name, self.variant, description,
                                  cli.access(pool.name, image, o.image_size), detach=attach.detach,
                                  holds=o.image_size)
            if not with_pool:
                # (a loop device lets go of its file, and rbd-fuse of the image, some time after
                # they are told to: the image's removal waits for that, after fs.down)
                with attach.step(f"rbd image {pool.name}/{image} let go", lambda: wait_closed(cli, pool.name, image)):
                    pass
            fs = RbdFilesystem(cluster.ledger, cli, pool.name, image, workdir, o.fs)
            with attach.step(f"{o.fs} on rbd image {pool.name}/{image}", fs.down):
                fs.up(mkfs=True)
            return cli.target("path", self.name, self.variant, {**description, **fs.describe()}, None,
                              path=fs.mountpoint, remount=fs.remount, detach=attach.detach)


def wait_closed(cli: CephCli, pool: str, image: str, timeout: float = 60) -> None:
    """Wait until no client watches the image any more (so it can be removed)."""
    def closed() -> tuple[bool, str]:
        watchers = cli.json_of("rbd", "status", f"{pool}/{image}").get("watchers") or []
        return not watchers, f"{len(watchers)} client(s) still have the image open"

    proc.wait_for(closed, what=f"rbd image {pool}/{image} closed by its clients", timeout=timeout,
                  interval=0.5)


class RbdFilesystem:
    """rbd-fuse → loop device → ext4/xfs → mount, and back down."""

    def __init__(self, ledger: Ledger, cli: CephCli, pool: str, image: str, workdir: Path,
                 fs: str) -> None:
        self.ledger, self.cli, self.pool, self.image, self.fs = ledger, cli, pool, image, fs
        self.fuse_dir = workdir / "rbd-fuse"
        self.mountpoint = workdir / "rbdfs"
        self.fuse = FuseClient(ledger, self.fuse_dir,
                               ["rbd-fuse", *cli.args(), "-p", pool, "-r", image, "-f",
                                str(self.fuse_dir)],
                               "fuse.rbd-fuse", workdir / "log" / "rbd-fuse.log")
        self._mine: frozenset[str] = frozenset()
        self.device = ""

    def up(self, mkfs: bool) -> None:
        proc.require_tool("rbd-fuse", "rbd-fuse")
        proc.require_tool("losetup", "mount")
        self.fuse.mount()
        with self.ledger.capture() as mine:
            try:
                image_file = self.fuse_dir / self.image
                if not image_file.exists():
                    raise DfsbenchError(f"rbd-fuse does not show image {self.image} in {self.fuse_dir}")
                self.device = proc.run(["losetup", "--find", "--show", "--direct-io=on",
                                        str(image_file)]).stdout.strip()
                self.ledger.loop(self.device)
                if mkfs:
                    if self.fs == "xfs":
                        proc.run(["mkfs.xfs", "-q", "-f", "-K", self.device], timeout=600)
                    else:
                        proc.run(["mkfs.ext4", "-q", "-F", "-E",
                                  "lazy_itable_init=0,lazy_journal_init=0,nodiscard", self.device],
                                 timeout=600)
                self.mountpoint.mkdir(parents=True, exist_ok=True)
                proc.run(["mount", "-t", self.fs, self.device, str(self.mountpoint)])
                self.ledger.mount(self.mountpoint)
                verify_mount(self.mountpoint, self.fs)
            except BaseException:
                self._mine = frozenset(mine)
                self.down()
                raise
            self._mine = frozenset(mine)

    def down(self) -> None:
        problems = self.ledger.undo(only=self._mine)
        self._mine = frozenset()
        self.fuse.unmount()
        if problems:
            raise DfsbenchError("could not take the rbd file system down: " + "; ".join(problems))

    def remount(self) -> None:
        self.down()
        self.up(mkfs=False)

    def describe(self) -> dict[str, Any]:
        dio = Path(f"/sys/block/{Path(self.device).name}/loop/dio")
        return {"client": "rbd-fuse + loop device", "fs_type": self.fs,
                "loop_direct_io": dio.read_text().strip() == "1" if dio.exists() else None,
                "note": "no kernel RBD module here: the image is a file exposed by rbd-fuse, "
                        "attached to a loop device"}
