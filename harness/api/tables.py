"""What a plugin declares about how its records are shown and what its system is: table
specs (side by side, or a grid like the report's iozone tables) and the facts of a system
that the limits and the tables read."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from harness.api.described import Described
from harness.api.records import Measurement

# ---------------------------------------------------------------- what plugins declare


@dataclass(frozen=True)
class Placement:
    """Where a system puts each byte a client writes, for the ceilings and room checks.

    ``copies``: bytes kept per byte written (replicas; (k+m)/k for an erasure code).
    ``by_client``: the client makes the copies itself and sends each over its own link (a
    GlusterFS FUSE client); else the servers make them (a Ceph primary OSD), and the client
    sends each byte once. ``taken_in``: what the storage nodes take in over their links,
    together, per byte written, where it differs from ``copies`` (a Ceph primary takes the
    whole object in and sends k+m-1 chunks on: (2k+m-1)/k); 0: ``copies``.
    ``storage_nodes``: over how many nodes (each behind a link of its own) the copies are
    spread; 0: not known."""

    copies: float = 1.0
    by_client: bool = False
    taken_in: float = 0.0
    storage_nodes: int = 0

    @property
    def client_sends(self) -> float:
        """Bytes that cross the client's link per byte written."""
        return self.copies if self.by_client else 1.0

    @classmethod
    def described(cls, description: dict[str, Any]) -> Placement:
        """What a stored description says by itself: its replicas, made by the servers,
        over its storage nodes."""
        read = Described.read(description)
        return cls(float(read.replicas or 1), storage_nodes=read.storage_nodes or 0)


@dataclass(frozen=True)
class SystemFacts:
    """What a backend declares about the system behind an attached target (from the
    description stored with the run, so stored and imported runs have them too), read by
    the limits, the comparability checks and the tables: how to call it, whether its path
    crosses a network, how many times a byte the client writes crosses the client's link,
    whether it is the control (shown, but never half of a verdict), how many bytes it keeps
    per byte written, over how many storage nodes; and how the header describes it."""

    display: str
    network: bool = False
    write_copies: float = 1.0
    control: bool = False
    stored_copies: float = 1.0  # bytes kept per byte written (replicas; (k+m)/k for disperse)
    # the header's words on its topology, in order ("glusterfs 10.3", "replicate", "3 replicas")
    summary: tuple[str, ...] = ()
    # description keys that hold its settings (a mapping of them, or one value): the header shows them
    settings: tuple[str, ...] = ()
    # description keys that change the numbers: two pooled runs that differ in one are not
    # comparable (besides those every system has: see harness.report.view.TOPOLOGY)
    topology: tuple[str, ...] = ()
    # how it keeps the target's data where the description says (an existing cluster's pool
    # sizes and failure domains, a volume's type and bricks): differing, runs are not comparable
    layout: Any = None
    # the storage nodes its data is spread over, each behind a link of its own (0: not known)
    storage_nodes: int = 0
    # its client sends each copy itself (a GlusterFS FUSE client writes every replica): while
    # a node is down it sends one copy fewer, so its write ceiling rises (see harness.report.limits)
    client_fanout: bool = False
    # the services of the environment it runs on (as its backend requires them: ``ceph``,
    # ``gluster``): the storage nodes of those, and no others, are its servers (harness.report.cost)
    services: tuple[str, ...] = ()
    # what its storage nodes take in over their links, together, per byte a client writes (0:
    # what they keep, ``stored_copies``): a Ceph primary takes the whole object in and sends
    # the other k+m-1 chunks on, so an erasure-coded pool takes in (2k+m-1)/k, keeping (k+m)/k
    taken_in: float = 0.0
    # its client acknowledges writes from a buffer of its own, O_DIRECT or not, until a close or
    # an fsync (a write of direct: true is flagged write-behind)
    write_behind: bool = False

    def __post_init__(self) -> None:
        # as it is stored: a layout computed now compares equal to one read back from a run
        if self.layout is not None:
            object.__setattr__(self, "layout", json.loads(json.dumps(self.layout, default=str)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def stored(cls, data: Any) -> SystemFacts | None:
        """The facts as stored with a run, or None where they are not all there (stored by
        an older dfsbench: see :meth:`with_stored`)."""
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            return None
        try:
            return cls(**_as_fields(data))
        except TypeError:
            return None

    def with_stored(self, data: Any) -> SystemFacts:
        """These facts, with those an older dfsbench stored for the run (fewer fields) in
        place of the ones given now: what was decided when the run was made stands."""
        if not isinstance(data, dict):
            return self
        known = {f.name for f in fields(self)}
        given = _as_fields({k: v for k, v in data.items() if k in known})
        try:
            return replace(self, **given)
        except TypeError:
            return self


def _as_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Stored (JSON) values as the fields hold them: lists as tuples, but for the layout."""
    return {k: tuple(v) if isinstance(v, list) and k != "layout" else v for k, v in data.items()}


class _Said(dict[str, Any]):
    def __missing__(self, key: str) -> None:
        return None


def phrases(description: dict[str, Any], *shown: tuple[str, str]) -> tuple[str, ...]:
    """``(key, template)`` pairs whose key the description has (and is not empty), each
    template filled in from the description: ``("replicas", "{replicas} replicas")``."""
    said = _Said(description)
    return tuple(template.format_map(said) for key, template in shown if description.get(key))


# what the header says of every system whose description has it (Backend.summary)
VERSION = ("version", "{system} {version}")
REPLICAS = ("replicas", "{replicas} replicas")
CLIENT = ("client", "client {client}")
FS_TYPE = ("fs_type", "{fs_type}")


@dataclass(frozen=True)
class Column:
    """A table column: a metric (or, in a matrix, a test) and its heading."""

    key: str
    label: str


def _default_label(m: Measurement) -> tuple[str, str]:
    return m.test, ""


def _everything(m: Measurement) -> bool:
    return True


@dataclass(frozen=True)
class TableSpec:
    """A side-by-side table a workload declares: one row per cell (rows are told apart
    by the cell's identity, so records that differ in any parameter are never pooled),
    one column group per system, and a comparison column decided by ``verdict`` — in
    that metric's direction (a time is better smaller, a rate larger).

    ``label`` gives a record's (group, row) labels; ``order`` sorts rows (default: first
    seen); ``chart`` is the metric the HTML report draws as bars; ``curves`` metrics are
    drawn as one line per row and system (e.g. latency percentiles)."""

    title: str
    columns: tuple[Column, ...]
    verdict: str | None  # None: no comparison column (e.g. a baseline)
    row_header: tuple[str, str] = ("test", "cell")
    label: Callable[[Measurement], tuple[str, str]] = _default_label
    order: Callable[[Measurement], Any] | None = None
    select: Callable[[Measurement], bool] = _everything
    chart: str | None = None
    chart_log: bool = False
    curves: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatrixSpec:
    """A grid per system and group, like the report's iozone tables: rows (e.g. file
    size × record size) by columns that are tests, one metric, shown divided by
    ``scale`` in ``unit_label``. The HTML report draws it as a heatmap with one colour
    scale per group across systems."""

    title: str  # formatted with {system} and {group}
    metric: str
    group: Callable[[Measurement], str]
    row: Callable[[Measurement], tuple[Any, tuple[str, ...]]]  # (sort key, row labels)
    row_header: tuple[str, ...]
    columns: tuple[Column, ...]
    scale: float = 1.0
    unit_label: str = ""


Presentation = TableSpec | MatrixSpec


