"""What the S3 benches share: a SeaweedFS local lab of their own (master, 3 volume servers,
filer) and its S3 gateway, started and checked by the ``seaweedfs-s3`` backend, for the length
of a ``with`` block; everything undone after it, its directory too."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backends.seaweedfs.s3 import SeaweedS3  # noqa: E402
from backends.seaweedfs.system import SeaweedFS  # noqa: E402
from harness.api.contracts import Cluster, NoOptions  # noqa: E402
from harness.api.systems import Processes  # noqa: E402
from harness.api.target import S3Access  # noqa: E402
from harness.system.ledger import Ledger  # noqa: E402


@contextmanager
def seaweedfs_s3(replication: str = "000") -> Iterator[S3Access]:
    """The gateway's endpoint, key pair (the secret in its file) and bucket."""
    work = Path(tempfile.mkdtemp(prefix="dfsbench-s3-bench-"))
    ledger = Ledger(work / "ledger.json")
    (work / "seaweedfs").mkdir()
    system = SeaweedFS(SeaweedFS.LocalOptions(seaweedfs_volume_servers=3, seaweedfs_replication=replication))
    target = None
    try:
        service = system.start_processes(Processes(work / "seaweedfs", ledger, 60, lambda _: None))
        target = SeaweedS3(NoOptions()).open(Cluster("local", {"seaweedfs": service}, ledger, work), work / "attach")
        yield target.reach(S3Access)
    finally:
        if target is not None and target.detach is not None:
            target.detach()
        problems = ledger.undo()
        if problems:
            print("could not undo:", problems, "; left in", work)
        else:
            shutil.rmtree(work, ignore_errors=True)  # (its own directory: nothing of the lab is left in it)
