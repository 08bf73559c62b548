"""A config's sweep, expanded into its points (harness.execution.plan builds the plan of
them): the product of the sweep's lists, the first key varying slowest, each point with
what its records carry, the workloads it runs — with a swept option set — and the client
hosts and link it measures with. A list that holds one value twice as its key reads it,
or a key that would leave a workload measuring the same at every point, is refused."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.api import registry
from harness.api.contracts import Backend, Environment, Workload
from harness.api.records import describe_cell
from harness.api.model import shown, twice
from harness.errors import BadInput
from harness.execution.schema import ENV_SWEEPS, Config, WorkloadSpec
from harness.system import files
from harness.units import rate

# the workload of a config's entry ``i`` with one option set otherwise (``{option: value}``)
Configure = Callable[[int, dict[str, Any]], Workload]


@dataclass(frozen=True)
class Point:
    """One point of a sweep: what its records carry in their params (``{"clients": 1,
    "link": "250Mbit"}``; nothing without a sweep), the workloads it runs (with a swept
    option set), the client hosts it measures from (the first N; None: all), and the link
    every node is shaped to (B/s; None: the environment's)."""

    values: dict[str, Any]
    workloads: list[Workload]
    clients: int | None = None
    link: float | None = None

    def describe(self) -> str:
        if not self.values:
            return "outside the sweep: " + ", ".join(w.name for w in self.workloads) + ", once"
        return ", ".join(f"{k} {files.printable(str(v))}" for k, v in self.values.items())


def points(config: Config, environment: Environment, specs: list[WorkloadSpec], workloads: list[Workload],
           backends: list[Backend], configure: Configure) -> tuple[Point, ...]:
    """Every point of the config's sweep (one, of no values, without a sweep): the product
    of its lists, the first key varying slowest. An environment key sets the client hosts
    or the link of the point; any other names an option of one or more workloads, which
    those run with at that point (``configure`` makes a workload with it set)."""
    if not config.sweep:
        return (Point({}, workloads),)
    alone = [w for w, spec in zip(workloads, specs) if not spec.sweep]  # (run once, after the points)
    swept_specs = [(i, spec) for i, spec in enumerate(specs) if spec.sweep]
    if not swept_specs:
        raise BadInput("sweep: every workload says 'sweep: false': the sweep would run nothing",
                       hint="leave the sweep out, or let a workload be part of it")
    axes = _axes(config, environment, specs, swept_specs, configure)
    if "clients" in config.sweep:
        for i, w in ((i, workloads[i]) for i, _ in swept_specs):
            if w.clients != "all":
                raise BadInput(f"sweep.clients: workloads[{i}] ({w.name}) runs on the first client host only, "
                               "so it would measure the same at every point, and its records would say more "
                               "clients than it ran on", hint="give it 'clients: all', or run it in a config "
                               "without this sweep")
    found = [_point_of(combo, environment, specs, workloads, backends, configure)
             for combo in itertools.product(*axes)]
    return tuple(found) + ((Point({}, alone),) if alone else ())


def _axes(config: Config, environment: Environment, specs: list[WorkloadSpec],
          swept_specs: list[tuple[int, WorkloadSpec]], configure: Configure) -> list[list[tuple[str, Any, Any]]]:
    """Each key of the sweep with its values: (key, the records' value, what is applied)."""
    axes: list[list[tuple[str, Any, Any]]] = []
    for key, values in config.sweep.items():
        if key == "clients":
            axes.append([("clients", _clients(v, j, environment), None) for j, v in enumerate(values)])
            _once(key, values, [value for _, value, _ in axes[-1]])
        elif key in ENV_SWEEPS:
            if key not in environment.sweeps:
                raise BadInput(f"sweep.{key}: environment '{config.environment.kind}' cannot vary it between "
                               "points", hint=f"it can vary: {', '.join(('clients', *sorted(environment.sweeps)))}")
            axes.append([(key, *_env_value(environment, key, v, j)) for j, v in enumerate(values)])
            _once(key, values, [applied for _, _, applied in axes[-1]], rate)
        else:
            owners = [i for i, spec in swept_specs if key in registry.load("workload", spec.name).Options.model_fields]
            others = [i for i, _ in swept_specs if i not in owners]
            if owners and others:
                raise BadInput(f"sweep.{key}: workloads[{others[0]}] ({specs[others[0]].name}) has no such option, "
                               "so it would measure the same at every point, and its records would carry a "
                               f"{key} it did not run with", hint="give it 'sweep: false' (it then runs once), or "
                               "run it in a config without this sweep")
            if not owners:
                raise BadInput(f"sweep.{key}: neither the environment nor any workload of this config has "
                               "such an option", hint="sweep 'clients', 'link', or an option of a workload "
                               "(e.g. threads, iodepth, record_sizes)")
            axes.append([(key, v, owners) for v in values])
            i = owners[0]
            _once(key, values, [_recorded(configure(i, {key: _as_option(specs[i], key, v)}), key) for v in values])
    return axes


def _point_of(combo: tuple[tuple[str, Any, Any], ...], environment: Environment, specs: list[WorkloadSpec],
              workloads: list[Workload], backends: list[Backend], configure: Configure) -> Point:
    """The point of one combination of the sweep's values: what its records say, and the
    workloads it runs (with the values applied)."""
    recorded: dict[str, Any] = {}
    clients, link = None, None
    chosen: list[Workload | None] = [w if spec.sweep else None for w, spec in zip(workloads, specs)]
    for key, value, applied in combo:
        if key == "clients":
            clients = value
        elif key in ENV_SWEEPS:
            link = applied
        else:
            for i in applied:
                chosen[i] = configure(i, {key: _as_option(specs[i], key, value)})
            first = chosen[applied[0]]
            assert first is not None  # (an owner of the key is part of the sweep)
            value = _recorded(first, key)
        recorded[key] = value
    mine = [w for w in chosen if w is not None]
    no_shared_cells(mine)
    if any(w not in workloads for w in mine):
        environment.check_plan(backends, mine)
    return Point(recorded, mine, clients, link)


def _once(key: str, given: list[Any], parsed: list[Any], show: Callable[[Any], str] | None = None) -> None:
    """Refuse a sweep's list that holds one value twice as the key reads it (``64MiB`` and
    ``67108864``, ``1Gbit`` and ``125MB/s``, ``4`` and ``4.0``): the two points would be one,
    run twice and pooled as if they were repeats."""
    found = twice(parsed)
    if found is not None:
        first, second = found
        value = files.printable(show(parsed[first]) if show else shown(parsed[first], key))
        raise BadInput(f"sweep.{key}[{second}]: {value} is given twice (sweep.{key}[{first}] is "
                       f"{files.printable(json.dumps(given[first], default=str))}, and this "
                       f"{files.printable(json.dumps(given[second], default=str))}): the two points would be "
                       "one, run twice and pooled as if it were a repeat",
                       hint=f"give each value of sweep.{key} once")


def _clients(value: Any, j: int, environment: Environment) -> int:
    most = environment.client_hosts
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise BadInput(f"sweep.clients[{j}]: {files.printable(repr(value))} is not a number of client hosts "
                       f"from 1 to {most}, the environment's", hint="the environment's options set how many "
                       "client hosts it has (the container lab's 'clients')")
    return value


def _env_value(environment: Environment, key: str, value: Any, j: int) -> tuple[Any, Any]:
    try:
        return environment.sweep_value(key, value)
    except ValueError as exc:
        raise BadInput(f"sweep.{key}[{j}]: {files.printable(str(exc))}") from None


def _as_option(spec: WorkloadSpec, key: str, value: Any) -> Any:
    """A swept value as the option's: in a list of one where the option is a list."""
    cls = registry.load("workload", spec.name)
    annotation = str(cls.Options.model_fields[key].annotation)
    return [value] if annotation.startswith(("list", "tuple")) and not isinstance(value, list) else value


def _recorded(workload: Workload, key: str) -> Any:
    """What the records of a point carry of a swept option: its validated value (a size in
    bytes), the item of a list of one."""
    value = getattr(workload.options, key)
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def no_shared_cells(workloads: list[Workload]) -> None:
    """Two entries of one workload that make the same cell (the same name and parameters)
    would store their records under one cell key: pooled as if they were repeats, and run
    again as one by 'run --resume'."""
    made: dict[str, int] = {}
    for i, w in enumerate(workloads):
        for cell in w.cells():
            key = json.dumps([w.name, w.entry(), cell], sort_keys=True, default=str)
            first = made.setdefault(key, i)
            if first != i:
                raise BadInput(f"workloads[{first}] and workloads[{i}] are both '{w.name}' and both make "
                               f"the cell {describe_cell(cell) or '(no parameters)'}: their records "
                               "would be pooled as if they were repeats of one",
                               hint="list the workload once, with every value it should run in its lists; "
                                    "entries that differ only in options their records do not carry "
                                    "(such as fio's direct) belong in two configs")
