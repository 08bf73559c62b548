"""What every record of one cell carries, whichever part of the run made it — the workload,
the sampler of the lab's nodes, the cell's fault — and which the run does not pass around as
four loose values: the workload it is of, the cell's params, the backend and its variant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Group:
    """The group of a cell's records (``params``: the cell's, with what its records say
    besides, such as the values of its point of a sweep and the phase of its fault)."""

    workload: str
    params: dict[str, Any]
    backend: str
    variant: str
