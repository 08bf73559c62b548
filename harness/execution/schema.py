"""The config file's schema: the pydantic models a config mapping validates into, the top
level and each plugin's entry, unknown keys refused. Each plugin's ``options`` are checked by
that plugin's own Options model, when harness.execution.plan builds the plan."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, GetJsonSchemaHandler, WithJsonSchema, field_validator, model_validator

from harness.api.contracts import Name
from harness.api.model import MAX_BYTES, ConfigModel, link_rate
from harness.system.files import printable
from harness.units import LATENCY_PATTERN, parse_latency, parse_size
from harness.api.histogram import SLO_PERCENTILES

# the environment of a config that names none
DEFAULT_ENVIRONMENT = "local"


class _Strict(ConfigModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PluginSpec(_Strict):
    name: str = Field(description="the plugin's name (dfsbench list)")
    variant: Name = Field("default", description="a name for this configuration of the backend, in the tables "
                          "(glusterfs/ec21): two entries of one backend need two")
    options: dict[str, Any] = Field(default_factory=dict, description="the plugin's options")


class WorkloadSpec(PluginSpec):
    clients: Literal["first", "all"] | None = Field(
        None, description="run on the first client host, or on every client host at once from a "
        "common start (per-client records and their aggregate, host 'all'); default: the "
        "environment's ('all' for an existing cluster's client hosts, else 'first')")
    fault: dict[str, Any] | None = Field(None, description="a fault each cell runs through: "
                                         "{action: kill|stop|pause, target: node|process, node, "
                                         "after_s, restore_after_s}")
    ranks_per_client: int | None = Field(None, ge=1, le=64, description="MPI ranks on each client "
                                         "host for this workload's cells on several (the environment's "
                                         "'ranks_per_client' otherwise); needs launcher 'mpi'")
    sweep: bool = Field(True, description="false: not part of the config's sweep; it runs once, after the "
                        "sweep's points, on the environment as configured (every client host, its own link)")

    @model_validator(mode="before")
    @classmethod
    def _no_variant(cls, data: Any) -> Any:
        if isinstance(data, dict) and "variant" in data:
            raise ValueError("variant: a workload has none (its records would not say it, and two "
                             "entries of one workload would be pooled as repeats); variants are "
                             "the backends'. Give the workload's options as lists instead")
        return data


class EnvironmentSpec(_Strict):
    kind: str = DEFAULT_ENVIRONMENT
    options: dict[str, Any] = Field(default_factory=dict)


def as_spec(v: Any) -> Any:
    """A plugin entry given by its name alone, as the mapping it stands for."""
    return {"name": v} if isinstance(v, str) else v


class Limits(_Strict):
    """Physical limits of the path to the storage, declared (they win over measured
    baselines): numbers above them are flagged, not printed as wins."""

    network: str | None = Field(None, description="the client's link, e.g. 1Gbit, 10GbE")
    client_ram: str | None = Field(None, description="the client's RAM, e.g. 2GiB")

    @field_validator("network")
    @classmethod
    def _network(cls, v: str | None) -> str | None:
        return link_rate(v) if v is not None else v

    @field_validator("client_ram")
    @classmethod
    def _ram(cls, v: str | None) -> str | None:
        if v is not None and not 0 < parse_size(v) <= MAX_BYTES:
            raise ValueError(f"{v} is no machine's RAM: above 0, and at most 1 PiB")
        return v


class OrderSpec(_Strict):
    """The order a run's cells go in. Shuffled (the default): the points of the sweep in
    each repeat, and the cells of a workload whose cells may run in any order (fio's
    profiles and its points of offered load: Workload.any_order) at each point, in an
    order drawn from ``seed`` — another in each repeat — so that neither a sweep's values nor
    a load's rates line up with time (a cold mount, a file just laid out, a neighbour's
    work falling on the first ones). ``listed``: as the config lists them, every repeat of a
    point before the next point (dfsbench's order before 'order' existed)."""

    shuffle: bool = Field(True, description="false: as the config lists them ('order: listed')")
    seed: int | None = Field(None, ge=0, le=2**53, description="the shuffle's seed; default: one drawn at "
                             "each run, printed as it starts and stored with the run (the same seed, the same "
                             "order)")

    @model_validator(mode="before")
    @classmethod
    def _named(cls, v: Any) -> Any:
        if isinstance(v, str) and v in ORDERS:
            return {"shuffle": v == "shuffled"}
        if isinstance(v, str):
            raise ValueError(f"'{printable(v, 40)}' is no order: give {' or '.join(ORDERS)}, or "
                             "{shuffle: true, seed: N}")
        return v

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """A config file may name an order instead of giving the mapping."""
        return {"anyOf": [{"enum": list(ORDERS)}, handler(core)]}

    @model_validator(mode="after")
    def _seed_shuffles(self) -> OrderSpec:
        if not self.shuffle and self.seed is not None:
            raise ValueError("a seed orders nothing where the cells run as listed (shuffle: false): "
                             "leave it out, or shuffle")
        return self


ORDERS = ("shuffled", "listed")  # the names 'order' takes besides {shuffle, seed}
MAX_REPEAT = 100  # beyond this a spread no longer narrows; a run of days is not a comparison
MAX_POINTS = 32  # the points of a sweep (the product of its lists): each runs every cell again
# what a sweep varies on the environment rather than on a workload's options: how many of its
# client hosts measure (the first N), and the link every node is shaped to (Environment.sweeps)
ENV_SWEEPS = ("clients", "link")


# a latency as a config file gives it (Config._slo reads it): seconds, or a text with its unit
_LATENCY = {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
                      {"type": "string", "pattern": LATENCY_PATTERN}]}


class Config(_Strict):
    environment: EnvironmentSpec = Field(default_factory=EnvironmentSpec)
    limits: Limits = Field(default_factory=Limits, description="the physical limits of the path to the storage, "
                           "declared: a figure above them is flagged, not printed as a win")
    scale: Literal["quick", "report"] = Field("quick", description="the workloads' defaults: 'quick' (minutes) or "
                                               "'report' (the 2014 report's sizes: hours)")
    suite: Literal["report", "full"] = Field("report", description="what runs where the config names no "
                                             "backends or workloads: the report's, or every installed one")
    repeat: int = Field(1, ge=1, le=MAX_REPEAT, description="times each cell is run (medians and "
                        "spread over them)")
    backends: list[PluginSpec] = Field(default_factory=list)  # empty: the suite's
    workloads: list[WorkloadSpec] | None = None  # None: the suite's
    slo: dict[str, Annotated[float, WithJsonSchema(_LATENCY)]] = Field(default_factory=dict, json_schema_extra={
        "propertyNames": {"enum": list(SLO_PERCENTILES)}}, description="a latency target per percentile of "
                                  "the total latency, e.g. {p99: 20ms}: the report gives the highest offered "
                                  "load each system holds within it, healthy and through a fault, and the "
                                  "time spent above it during the fault")
    order: OrderSpec = Field(default_factory=OrderSpec, description="'shuffled' (the default: the sweep's points in "
                         "each repeat, and fio's cells, in an order drawn from a seed printed and stored with the "
                         "run, so that load does not line up with time), 'listed' (as the config lists them), or "
                         "{shuffle: true, seed: N}")
    sweep: dict[Name, list[Any]] = Field(default_factory=dict, description="one or more options, each "
                                         "varied over a list: 'clients' (the first N client hosts), 'link' "
                                         "(every node's link, where the environment shapes one), or an "
                                         "option of the workloads (threads, iodepth, record_sizes, …); "
                                         "several are combined, every point runs every cell")

    own_duplicates = frozenset({"backends", "workloads"})  # (by name and variant; by cell)

    @field_validator("environment", mode="before")
    @classmethod
    def _env(cls, v: Any) -> Any:
        return {"kind": v} if isinstance(v, str) else v

    @field_validator("backends", "workloads", mode="before")
    @classmethod
    def _specs(cls, v: Any) -> Any:
        return [as_spec(x) for x in v] if isinstance(v, list) else v

    @field_validator("slo", mode="before")
    @classmethod
    def _slo(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out = {}
        for key, value in v.items():
            if key not in SLO_PERCENTILES:
                raise ValueError(f"'{printable(str(key), 40)}' is not a percentile the latency is measured at: "
                                 f"give one of {', '.join(SLO_PERCENTILES)}")
            if isinstance(value, bool):
                raise ValueError(f"{key}: {str(value).lower()} is a yes/no, and {key} is a latency (e.g. 20ms)")
            try:
                out[key] = parse_latency(value)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        return out

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        points = 1
        for key, values in v.items():
            if not values:
                raise ValueError(f"{key}: an empty list makes no point to run; give one or more values")
            for item in values:
                if item is None or isinstance(item, bool) and key in ENV_SWEEPS:
                    raise ValueError(f"{key}: {item!r} is no value to run with")
            points *= len(values)
        if points > MAX_POINTS:
            raise ValueError(f"{points} points (the product of its lists): at most {MAX_POINTS}, each runs "
                             "every cell again; sweep fewer values, or in several runs")
        return v


def as_written(stored: Any) -> Any:
    """A config as a run stores it (every key, after defaults) as a config file has it, to
    be read again: a key whose value is null left out (its default), and a workload entry's
    ``variant`` (the runner's, which a config may not give) too."""
    def written(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: written(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [written(v) for v in value]
        return value
    found = written(stored)
    if isinstance(found, dict) and isinstance(found.get("workloads"), list):
        found["workloads"] = [{k: v for k, v in w.items() if k != "variant"} if isinstance(w, dict) else w
                              for w in found["workloads"]]
    return found

