"""Cache hygiene before every read phase.

``drop_caches`` empties the kernel's page cache, dentries and inodes, but not the FUSE
clients' own caches (ceph-fuse's object cache, GlusterFS's io-cache and read-ahead
translators): for those the client is remounted. The returned text says what was done
and is stored with the measurements.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.contracts import Target


def drop_kernel_caches() -> bool:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def drop(target: Target) -> str:
    steps = ["sync"]
    if target.remount is not None:
        target.remount()
        steps.append("remount")
    elif target.cache_kept:  # a FUSE client the user mounted: its own cache stays (and is said)
        steps.append("client-cache-kept")
    # a container cannot write drop_caches: the kernel's page cache is then kept (and said)
    steps.append("drop_caches" if target.host.drop_caches() else "no-drop_caches")
    return "+".join(steps)
