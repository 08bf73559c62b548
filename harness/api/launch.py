"""How the clients of a cell run on several client hosts at once: as the ranks of one MPI
job (Open MPI's ``mpirun``, as IOR and mdtest run), or each started by dfsbench for each
phase (``exec``). An environment whose client hosts are several takes the options of
:class:`Launching`, and hands the run a :class:`Launch` in its ``Cluster``; the job itself
is ``harness.execution.ranks``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, field_validator, model_validator

from harness.api.model import ConfigModel

# (a run's: a lab that is up serves runs launched either way)
LAUNCH_OPTIONS = frozenset({"launcher", "ranks_per_client", "mpi_network"})
MOST_RANKS_PER_CLIENT = 64


class Launching(ConfigModel):
    """The options of an environment that runs a cell on several client hosts at once."""

    launcher: Literal["mpi", "exec"] | None = Field(
        None, description="how a cell runs on several client hosts at once: 'mpi', the clients as "
        "the ranks of one Open MPI job launched from this machine (a barrier before each timed "
        "phase); 'exec', a process started on each client host for each phase; default: 'mpi' "
        "where this machine and every client host have Open MPI and mpi4py, else 'exec' (the run "
        "says why)")
    ranks_per_client: int = Field(1, ge=1, le=MOST_RANKS_PER_CLIENT, description="MPI ranks on each "
                                  "client host (IOR's tasks per node), each doing a client's share "
                                  "of a cell; more than 1 needs launcher 'mpi'. A workload entry may "
                                  "give its own")
    mpi_network: str | None = Field(None, description="the IPv4 network (CIDR, e.g. 10.0.0.0/24) Open "
                                    "MPI's daemons and ranks talk over, where the client hosts have "
                                    "several (its oob_tcp_if_include and btl_tcp_if_include); the "
                                    "container lab uses its own")

    @model_validator(mode="after")
    def _ranks_need_mpi(self) -> Launching:
        if self.ranks_per_client > 1 and self.launcher == "exec":
            raise ValueError(f"ranks_per_client {self.ranks_per_client} needs launcher 'mpi' (the exec launcher "
                             "runs one client per host)")
        return self

    @field_validator("mpi_network")
    @classmethod
    def _network(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            return str(ipaddress.IPv4Network(v, strict=False))
        except ValueError as exc:
            raise ValueError(f"not an IPv4 network in CIDR form (10.0.0.0/24): {exc}") from None


@dataclass(frozen=True)
class Launch:
    """What a run's environment says of launching a cell on several client hosts: the
    launcher asked (None: the run chooses), the ranks per client host, and the network its
    ranks talk over (None: any)."""

    asked: str | None = None
    ranks_per_client: int = 1
    network: str | None = None

    @classmethod
    def of(cls, options: Launching, network: str | None = None) -> Launch:
        return cls(options.launcher, options.ranks_per_client, options.mpi_network or network)
