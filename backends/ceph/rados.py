"""Backend ``rados``: a RADOS pool, the target of ``rados bench``.

dfsbench creates the pool (with the replica size asked for) and deletes it afterwards,
unless ``pool`` names an existing one.
"""

from __future__ import annotations

from pathlib import Path

from backends.ceph.client import CephBackend, CephCli, Pool, PoolOptions
from harness.api.contracts import Cluster
from harness.api.target import Target


class Rados(CephBackend):
    name = "rados"
    display = "RADOS"
    target_kind = "rados"
    suites = {"full": 4}
    Options = PoolOptions
    options: PoolOptions

    def creates(self) -> str:
        return "a pool" if self.options.pool is None else ""

    def open(self, cluster: Cluster, workdir: Path) -> Target:
        cli = CephCli.of(cluster, self.name)
        cli.host.require("rados", "ceph-common")
        pool = Pool(cli, self.options, "rados", "benchmark")
        pool.create()
        description = {**cli.describe(), "client": "librados", "replicas": pool.size,
                       "environment": cluster.environment, **pool.describe()}
        return cli.target("rados", self.name, self.variant, description, cli.access(pool.name),
                          detach=pool.delete)
