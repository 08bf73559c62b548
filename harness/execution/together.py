"""One cell on every client host of a target at once (a workload's ``clients: all``).

Each client runs the workload on its own view of the attachment (``Target.on``: its own
paths and tools, a cache drop that remounts only its own client), in a thread of its own;
all start together at a barrier. Each client's records carry ``host`` (its name) and
``clients`` (how many ran). The aggregate, ``host: all``, is defined as:

- a rate (B/s, op/s, files/s): the sum of the clients' rates — each measured over its own
  run, which all began together, so the sum holds over the interval they have in common;
- ``elapsed``: the last client's (last done), and ``elapsed_first`` the first's (first
  done); their gap shows how evenly the clients were served.

Latency percentiles stay per client (they cannot be summed). A client that fails is
recorded as failed; the aggregate is then left out, since it would cover fewer clients.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.contracts import Workload
from harness.api.records import Measurement
from harness.api.target import Target
from harness.errors import DfsbenchError
from harness.system.hosts import Host

RATES = frozenset({"B/s", "op/s", "files/s"})


def spread(workload: Workload, target: Target) -> bool:
    """Whether a cell runs on every client host of the target at once: the workload says
    'all' (by default, where the environment's clients are all used, only on file system
    targets: several clients on one RBD image would fight over its lock)."""
    if workload.clients != "all" or len(target.hosts) < 2:
        return False
    return workload.clients_given or target.kind == "path"


def run(workload: Workload, target: Target, cell: dict[str, Any], scratch: Callable[[Host], Path],
        raw_dir: Path, what: str) -> Iterator[Measurement]:
    """Per-client records of the cell, then the aggregate; raises if a client failed
    (after the records of those that did not)."""
    hosts = target.hosts
    barrier = threading.Barrier(len(hosts))
    results: dict[str, list[Measurement]] = {}
    errors: dict[str, str] = {}

    def one(host: Host) -> None:
        view = target.on(host)
        raw = raw_dir / host.label
        raw.mkdir(parents=True, exist_ok=True)
        try:
            where = scratch(host)
            barrier.wait(timeout=300)
            results[host.label] = list(workload.run(view, cell, where, raw))
        except threading.BrokenBarrierError:
            errors[host.label] = "another client failed before the common start"
        except (DfsbenchError, OSError) as exc:
            barrier.abort()
            errors[host.label] = exc.message if isinstance(exc, DfsbenchError) else f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(h,), name=f"dfsbench-{h.label}") for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clients = len(hosts)
    for label, records in results.items():
        for m in records:
            yield replace(m, params={**m.params, "host": label, "clients": clients})
    if errors:
        raise DfsbenchError(f"{what}: " + "; ".join(f"{label}: {error}" for label, error in errors.items()))
    yield from aggregate([m for records in results.values() for m in records], clients)


def aggregate(records: list[Measurement], clients: int) -> list[Measurement]:
    """The ``host: all`` records of a cell run on ``clients`` hosts (see the module)."""
    groups: dict[tuple[str, str, str], list[Measurement]] = {}
    for m in records:
        if m.value is None:
            continue
        key = (m.test, m.metric, repr(sorted((k, repr(v)) for k, v in m.params.items())))
        groups.setdefault(key, []).append(m)
    out = []
    for (_, metric, _), found in groups.items():
        if len(found) != clients:
            continue
        first = found[0]
        params = {**first.params, "host": "all", "clients": clients}
        values = [m.value for m in found if m.value is not None]
        flags = tuple(dict.fromkeys(f for m in found for f in m.flags))
        if first.unit in RATES:
            out.append(replace(first, value=sum(values), params=params, flags=flags))
        elif metric == "elapsed":
            out.append(replace(first, value=max(values), params=params, flags=flags))
            out.append(replace(first, metric="elapsed_first", value=min(values), params=params, flags=flags))
    return out
