"""YAML config -> validated, fully expanded Plan. Parse at the edge, once.

The file is read by harness.execution.loader; every key is checked: the top level by the
schema (harness.execution.schema), each plugin's ``options`` by that plugin's own Options
model. Errors name the key path and what is allowed, before anything starts.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from harness.api import registry
from harness.api.contracts import ATTACH_HINT, Backend, Environment, Workload, attachable, attached_in, reaches_past
from harness.api.faults import FaultSpec
from harness.api.model import site_given
from harness.errors import BadInput, DfsbenchError
from harness.execution.loader import load_yaml
from harness.execution.schema import DEFAULT_ENVIRONMENT, Config, WorkloadSpec, as_spec
from harness.execution.sweep import Point, no_shared_cells, points
from harness.system import files
from harness.system.files import printable
from harness.units import size

SCALES = ("quick", "report")
# what runs where the config names no backends, and what each is: the 'report' suite (the
# default, and 'make demo') is the 2014 report's comparison, the 'full' suite every backend
# that declares it with every workload each supports; plugins declare their place in each
# (Backend.suites, Workload.suites)
SUITES = {"report": "the 2014 report's comparison",
          "full": "every workload on every backend"}


class ConfigSuite(NamedTuple):
    """A suite that is a config of its own, shipped with dfsbench (a copy is a config like
    any other)."""

    config: Path
    about: str  # what it runs, in a line of 'dfsbench run --help'


CONFIG_SUITES = {"scaling": ConfigSuite(
    Path(__file__).parent / "suites" / "scaling.yaml",
    "in the container lab: both systems, replica 3 and EC 2+1, over 1 and 2 clients and 1 Gbit and 250 Mbit "
    "links, and a node killed in a large-file write")}


def suite(kind: str, name: str, skipped: list[str] | None = None, scale: Any = "quick") -> list[dict[str, Any]]:
    """The config entries of a built-in suite: each installed plugin of the kind that
    declares it, in the place it declares, with the options it runs with there. A plugin
    that cannot be loaded is left out, and why is added to ``skipped`` (the config named no
    plugin: a broken one that no run asks for stops none)."""
    members = [(cls.suites[name], cls.name) for cls in _installed(kind, skipped, f"the '{name}' suite")
               if name in getattr(cls, "suites", {})]
    return [_default_entry(kind, plugin, scale) for _, plugin in sorted(members)]


def _installed(kind: str, skipped: list[str] | None, what: str) -> list[Any]:
    """Every installed plugin of the kind that loads; why each other one does not is added
    to ``skipped`` (a broken plugin that no config names stops no run)."""
    found = []
    for plugin in registry.names(kind):
        try:
            found.append(registry.load(kind, plugin))
        except registry.PluginError as exc:
            if skipped is not None:
                skipped.append(f"{exc.message}; left out of {what}")
    return found


def _default_entry(kind: str, name: str, scale: Any = "quick") -> dict[str, Any]:
    """A plugin named without options: with those it declares for the suites at the run's
    scale (a name not installed is left to the validation, which says so)."""
    cls = registry.find(kind, name)
    if cls is None:
        return {"name": name}
    at = getattr(cls, "suite_options_at", None)
    with registry.blamed(kind, name, "its suite options"):
        options = at(scale if scale in SCALES else "quick") if callable(at) else getattr(cls, "suite_options", None)
        options = dict(options) if options else {}
    return {"name": name, "options": options} if options else {"name": name}


@dataclass(frozen=True)
class Plan:
    """Everything a run will do, validated and expanded."""

    config: Config
    environment: Environment
    backends: list[Backend]
    workloads: list[Workload]
    source: str = "built-in default"
    extra: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the user should hear before it runs (plugins left out)
    points: tuple[Point, ...] = ()  # the sweep's points (one without a sweep)

    @property
    def config_hash(self) -> str:
        text = json.dumps(self.config.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def services(self) -> set[str]:
        return set().union(*(b.requires for b in self.backends)) if self.backends else set()


def _loc(parts: tuple[Any, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _explain(exc: ValidationError, prefix: str = "") -> BadInput:
    lines = []
    for err in exc.errors():
        loc = _loc(tuple(err["loc"]))
        where = f"{prefix}.{loc}" if prefix and loc != "(top level)" else (prefix or loc)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        lines.append(f"{where}: {msg}" if where != "(top level)" else msg)
    return BadInput("invalid config:\n  " + "\n  ".join(lines))


def _keys_hint(exc: ValidationError, prefix: str, model: type[BaseModel]) -> str | None:
    """The keys ``prefix`` accepts, where an error is about one of its keys (an unknown one, a
    missing one); a value refused, or a key of a mapping inside it, is said by its own
    error, which a list of other keys would only blur."""
    if not any(err["type"] in ("extra_forbidden", "missing") and len(err["loc"]) == 1 for err in exc.errors()):
        return None
    return f"{prefix} accepts: {', '.join(model.model_fields) or '(no options)'}"


def _options_error(exc: ValidationError, prefix: str, model: type[BaseModel]) -> BadInput:
    return BadInput(_explain(exc, prefix).message, hint=_keys_hint(exc, prefix, model))


def _select(configured: Any, names: list[str], kind: str, scale: Any) -> list[Any]:
    """``--backends a,b``: keep the config's entries (with their options and variants) for
    those names, in the order given; a name the config does not mention runs as the suites
    configure it."""
    entries = [as_spec(x) for x in configured] if isinstance(configured, list) else []
    chosen: list[Any] = []
    for name in names:
        matching = [e for e in entries if isinstance(e, dict) and e.get("name") == name]
        chosen += matching or [_default_entry(kind, name, scale)]
    return chosen


def _same_kind(configured: Any, chosen: dict[str, Any]) -> dict[str, Any]:
    """``--env KIND``: the config's environment options stay when it names the same kind
    (they mean nothing to another)."""
    if isinstance(configured, dict) and configured.get("kind", DEFAULT_ENVIRONMENT) == chosen.get("kind"):
        return {**configured, **chosen}
    return chosen


def build_plan(data: dict[str, Any], *, source: str = "built-in default",
               overrides: dict[str, Any] | None = None, elsewhere: str | None = None) -> Plan:
    """Validate a config mapping (plus CLI overrides) into a Plan, or raise BadInput.
    ``elsewhere``: the config was written on another site (``run --like``: what it came
    from): one that names that site's paths, devices or hosts is refused before any
    plugin reads its options (:func:`_no_site_fields`)."""
    data = dict(data)
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in ("backends", "workloads"):
            value = _select(data.get(key), value, key[:-1], data.get("scale", "quick"))
        if key == "environment":
            value = _same_kind(data.get("environment"), value)
        data[key] = value
    for key in ("backends", "workloads"):
        if data.get(key) == []:
            raise BadInput(f"{key}: an empty list: there would be nothing to run",
                           hint=f"leave {key} out for the suite's, or name one or more")
    named = data.get("suite", "report")
    chosen = named if isinstance(named, str) and named in SUITES else "report"  # (else refused below)
    report_suite = False
    skipped: list[str] = []
    suite_backends = not data.get("backends")
    if suite_backends:
        data["backends"] = suite("backend", chosen, skipped, data.get("scale", "quick"))
        if data.get("workloads") is None and chosen == "report":
            data["workloads"] = suite("workload", "report", skipped, data.get("scale", "quick"))
            report_suite = True
    # (a config that names its backends and no workloads runs every workload they support)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise BadInput(_explain(exc).message,
                       hint=f"the config's keys are: {', '.join(Config.model_fields)}") from exc
    if elsewhere is not None:
        _no_site_fields(config, elsewhere)

    environment = _environment(config)
    backends = _backends(config)
    _provided(environment, backends)
    kept = _attachable(config, environment, backends, suite_backends, skipped)
    if len(kept) < len(backends):  # (a suite's backend this environment cannot attach: left out, said)
        config = config.model_copy(update={"backends": [config.backends[j] for j in kept]})
        backends = [backends[j] for j in kept]
        if not backends:
            raise BadInput("no backends to run: " + "; ".join(skipped), hint="name backends that this environment "
                           "attaches")
    kinds = {b.kind for b in backends}
    specs = config.workloads
    if report_suite and specs is not None:  # e.g. fio from every client node of a lab
        specs = [*specs, *(WorkloadSpec.model_validate(w) for w in environment.report_workloads)]
    if specs is None:
        every = _installed("workload", skipped, "the workloads run where a config names none")
        specs = [WorkloadSpec(name=cls.name) for cls in every if cls.accepts & kinds]
    workloads = [_workload(i, spec, config, environment, backends) for i, spec in enumerate(specs)]
    no_shared_cells(workloads)
    with registry.blamed("environment", environment.name, "checking the plan"):
        environment.check_plan(backends, workloads)
    found = points(config, environment, specs, workloads, backends,
                   lambda i, swept: _workload(i, specs[i], config, environment, backends, swept))
    return Plan(config, environment, backends, workloads, source, notes=tuple(skipped), points=found)


def _workload(i: int, spec: WorkloadSpec, config: Config, environment: Environment, backends: list[Backend],
              swept: dict[str, Any] | None = None) -> Workload:
    """The workload of the config's entry ``i`` (with ``swept``: one option set otherwise,
    for a point of a sweep); what its own code raises on the way is its fault, said as such
    (harness.api.registry.blamed)."""
    wcls = _plugin("workload", spec.name, f"workloads[{i}].name")
    with registry.blamed("workload", spec.name, f"checking workloads[{i}]"):
        return _configured(wcls, i, spec, config, environment, backends, swept)


def _configured(wcls: Any, i: int, spec: WorkloadSpec, config: Config, environment: Environment,
                backends: list[Backend], swept: dict[str, Any] | None) -> Workload:
    if not wcls.accepts & {b.kind for b in backends}:
        raise BadInput(f"workloads[{i}]: '{spec.name}' runs on {sorted(wcls.accepts)} targets, "
                       f"and none of the backends provides one")
    merged = {**wcls.defaults(config.scale), **spec.options, **(swept or {})}
    try:
        workload = wcls(wcls.Options.model_validate(merged))
    except ValidationError as exc:
        if swept:
            key, value = next(iter(swept.items()))
            raise BadInput(f"sweep.{key}: {files.printable(json.dumps(value, default=str))} is no value of "
                           f"workloads[{i}] ({spec.name}): " + _explain(exc).message.removeprefix(
                               "invalid config:\n  "),
                           hint=_keys_hint(exc, f"workloads[{i}].options", wcls.Options)) from exc
        raise _options_error(exc, f"workloads[{i}].options", wcls.Options) from exc
    if spec.clients == "first" and workload.clients_asked() == "all":
        raise BadInput(f"workloads[{i}]: 'clients: first' and options that ask for every client host at once "
                       "(fio's all_clients) say two things", hint="give one of them: 'clients: all' runs fio on "
                       "every client host as all_clients does")
    given = spec.clients or workload.clients_asked()
    if given == "all" and environment.client_hosts < 2:
        raise BadInput(f"workloads[{i}]: '{'clients: all' if spec.clients else 'all_clients'}' on environment "
                       f"'{config.environment.kind}', which measures from one client host: there is no "
                       "other to run with, and an aggregate of one would say more than was measured",
                       hint="run it with --env docker (2 or more client nodes) or an existing site's "
                            "client hosts, or leave it out")
    here = workload.on_this_host()
    if here and environment.clients_elsewhere:
        raise BadInput(f"workloads[{i}].options.{here}: '{spec.name}' would run its load on this machine, and "
                       f"environment '{config.environment.kind}' mounts its targets on other client hosts",
                       hint="leave it out (fio: 'all_clients: true' loads a target from every client node)")
    _fits_backends(i, workload, backends, swept)
    _within_bounds(i, workload, swept)
    workload.clients = given or environment.default_clients
    workload.clients_given = given is not None
    if spec.ranks_per_client is not None and spec.ranks_per_client > 1:
        if not workload.ranks:
            raise BadInput(f"workloads[{i}].ranks_per_client: '{spec.name}' does not run as MPI ranks",
                           hint="leave it out; smallfile, largefile and fio run so")
        if environment.client_hosts < 2 or workload.clients != "all":
            raise BadInput(f"workloads[{i}].ranks_per_client: ranks run only in a cell on every client host "
                           "at once (clients: all, with two or more client hosts)", hint="leave it out, or give "
                           "'clients: all' on an environment of several client hosts")
    if spec.ranks_per_client is not None:
        workload.ranks_per_client = spec.ranks_per_client
    if spec.fault is not None:
        try:
            workload.fault = FaultSpec.model_validate(spec.fault)
        except ValidationError as exc:
            raise _options_error(exc, f"workloads[{i}].fault", FaultSpec) from exc
        if not environment.can_fault:
            raise BadInput(f"workloads[{i}].fault: environment '{config.environment.kind}' cannot "
                           "do faults to its nodes", hint="leave out the fault, or run it where its system's nodes "
                                                          "can be faulted ('dfsbench list' says where)")
        for b in backends:
            unfaultable = sorted(s for s in b.requires if not environment.can_fault_system(s))
            if unfaultable and workload.accepts & {b.kind}:
                system = registry.systems().get(unfaultable[0])
                places = registry.places(system, faults=True) if system is not None else []
                raise BadInput(f"workloads[{i}].fault: environment '{config.environment.kind}' cannot fault the "
                               f"nodes of {', '.join(unfaultable)} ({b.name}/{b.variant})",
                               hint=(f"run it in {' or '.join(places)}, or " if places else "")
                               + "leave out the fault or that backend")
        for cell in workload.cells():
            lasts = workload.lasts(cell)
            late = workload.fault.too_late(lasts)
            if late and lasts is not None:
                raise BadInput(f"workloads[{i}].fault.after_s: {late}", hint=f"give after_s less than "
                               f"{lasts[1]:g} s, or the workload a larger {lasts[0]}")
            bound = workload.bound(cell)
            held = workload.fault.held_past(bound)
            if held and bound is not None:
                raise BadInput(f"workloads[{i}].fault.restore_after_s: {held}", hint=f"give restore_after_s less "
                               f"than {bound[1]:g} s, or the workload a larger {bound[0]}")
    return workload


def _within_bounds(i: int, workload: Workload, swept: dict[str, Any] | None) -> None:
    """Refuse a workload's deadline shorter than the work it bounds, as its options fix both
    (Workload.bound, Workload.lasts, and the warm-up before it: Workload.warmup): every cell
    would be stopped as hung before its time."""
    for cell in workload.cells():
        bound, lasts, warmup = workload.bound(cell), workload.lasts(cell), workload.warmup(cell)
        if bound is None or lasts is None:
            continue
        work = lasts[1] + (warmup[1] if warmup else 0.0)
        if bound[1] >= work:
            continue
        made = (f"{lasts[0]} and {warmup[0]} make the cell's work ({work:g} s: {warmup[1]:g} s of untimed "
                "warm-up, then its timed work)") if warmup and warmup[1] else \
            f"{lasts[0]} makes the cell's timed work ({work:g} s)"
        key = f"sweep.{bound[0]}" if swept and bound[0] in swept else f"workloads[{i}].options.{bound[0]}"
        raise BadInput(f"{key}: {bound[1]:g} s is shorter than {made}: {workload.name} would be stopped as hung "
                       "before its time is up",
                       hint=f"give {bound[0]} at least {work:g} s, or the workload less to do")


def _fits_backends(i: int, workload: Workload, backends: list[Backend], swept: dict[str, Any] | None) -> None:
    """Refuse, naming the workload's option and the backend, what the run would refuse (or
    measure other than it says) on a backend's target: an option that keeps the workload off
    its kind (fio's all_clients on an image), I/O that reaches past the end of a device or an
    image whose size the plan fixes, options it cannot run as they say on that kind of
    target — by the rules the run asks too (Workload.refuses in the workload's run,
    reaches_past and Workload.unrunnable before each cell)."""
    def key(option: str) -> str:
        top = re.split(r"[.\[]", option, maxsplit=1)[0]
        return f"sweep.{top}" if swept and top in swept else f"workloads[{i}].options.{option}"

    for j, b in enumerate(backends):
        if b.kind not in workload.accepts:
            continue
        cannot = workload.unrunnable(b.kind)
        if cannot is not None:
            where = key(cannot[0])
            at = "" if not swept or where.startswith("sweep.") else " (at the sweep's " + ", ".join(
                f"{k} {files.printable(json.dumps(v, default=str))}" for k, v in swept.items()) + ")"
            raise BadInput(f"{where}: {cannot[1]}{at}", hint=cannot[2] or None)
        refused = workload.refuses(b.kind)
        if refused is not None:
            raise BadInput(f"{key(refused[0])}: backends[{j}] ({b.name}/{b.variant}) hands out '{b.kind}' targets: "
                           f"{refused[1]}", hint=f"leave {refused[0]} out, or run it in a config of file system "
                                                 "backends (or with --backends)")
        held = b.holds()
        if held is None:
            continue
        for cell in workload.cells():
            past = reaches_past(workload, cell, held[1], f"the {b.kind} target of backends[{j}] "
                                                             f"({b.name}/{b.variant}, options.{held[0]})")
            if past is not None:
                raise BadInput(f"{key(past[0])}: {past[1]}",
                               hint=f"give {past[0]} at most {size(held[1])}, or a larger {held[0]}")


def _attachable(config: Config, environment: Environment, backends: list[Backend], suite_chosen: bool,
                skipped: list[str]) -> list[int]:
    """The indexes of the backends the environment can attach. One whose target only a client
    on this machine reaches (Backend.only_here), in an environment whose client hosts are other
    machines — by the rule the attachment asks too (contracts.attachable) — or whose target is
    this machine's own (Backend.this_host: a directory, a device), in an environment that
    measures targets of its own nodes only, is refused naming its key; where a suite chose it,
    left out and said (``skipped``)."""
    kept = []
    for j, b in enumerate(backends):
        with registry.blamed("backend", b.name, f"checking backends[{j}]"):
            found, hint = attachable(b, not environment.clients_elsewhere,
                                     f"environment '{config.environment.kind}'"), ATTACH_HINT
            own = b.this_host() if not environment.host_targets else None
            elsewhere = attached_in(b, config.environment.kind)
        if elsewhere is not None:
            found, hint = elsewhere[:2], elsewhere[2]
        if own is not None:
            found = own[0], (f"{b.name}/{b.variant}: {own[1]}, and environment '{config.environment.kind}' measures "
                             "targets of its own nodes only, which this machine is none of")
            hint = "leave it out here, or measure it in the local lab or on an existing site"
        if found is None:
            kept.append(j)
        elif suite_chosen:
            skipped.append(f"{found[1]}; left out of the suite")
        else:
            raise BadInput(f"backends[{j}].{found[0]}: {found[1]}", hint=hint)
    return kept


def _backends(config: Config) -> list[Backend]:
    """The config's backends, each with its options and variant (a variant named twice refused)."""
    backends = []
    seen = set()
    for i, spec in enumerate(config.backends):
        cls = _plugin("backend", spec.name, f"backends[{i}].name")
        if (spec.name, spec.variant) in seen:
            raise BadInput(f"backends[{i}]: {spec.name} variant '{spec.variant}' is listed twice",
                           hint="give each configuration of a backend its own variant name")
        seen.add((spec.name, spec.variant))
        try:
            with registry.blamed("backend", spec.name, f"checking backends[{i}]"):
                backends.append(cls(cls.Options.model_validate(spec.options), spec.variant))
        except ValidationError as exc:
            raise _options_error(exc, f"backends[{i}].options", cls.Options) from exc
    if not backends:
        raise BadInput("no backends to run", hint=f"valid backends: {', '.join(registry.names('backend'))}")
    return backends


def _no_site_fields(config: Config, elsewhere: str) -> None:
    """Refuse a config from another site that sets a :data:`harness.api.model.SITE` field
    (a directory, a device, a pool, fio servers or a job file of that site), in a backend's
    or a workload's options or in the sweep: from the config as given, before a validator
    reads a file it names."""
    named = [f for i, spec in enumerate(config.backends)
             for f in site_given(_plugin("backend", spec.name, f"backends[{i}].name").Options, spec.options,
                                 f"backends[{i}].options")]
    for i, w in enumerate(config.workloads or []):
        named += site_given(_plugin("workload", w.name, f"workloads[{i}].name").Options, w.options,
                            f"workloads[{i}].options")
    # a sweep's option is any workload's that has it: those named, or the suite's, or the
    # environment's own (every installed one is asked, not only those the config names)
    every = [cls.Options for cls in _installed("workload", None, "")]
    named += [f for key, values in config.sweep.items() for cls in every for value in values
              for f in site_given(cls, {key: value}, "sweep")]
    named = list(dict.fromkeys(named))
    if named:
        more = f"; and {len(named) - 5} more" if len(named) > 5 else ""
        raise BadInput(f"{elsewhere}: its config names its own site's hosts, paths or devices, which are not "
                       "this site's: " + "; ".join(named[:5]) + more,
                       hint="--like runs work that names no site; write a config of your own from the bundle's "
                            "run.json, with this site's")


def _plugin(kind: str, name: str, where: str) -> Any:
    """The plugin a config names, or an error that says which key named the unknown or
    broken one."""
    try:
        return registry.load(kind, name)
    except DfsbenchError as exc:
        raise type(exc)(f"{where}: {exc.message}", exc.hint) from None


def _provided(environment: Environment, backends: list[Backend]) -> None:
    """Refuse a backend whose services the environment does not provide (a storage system
    whose plugin is broken, or that the environment does not bring up), naming the key."""
    for j, b in enumerate(backends):
        with registry.blamed("backend", b.name, f"checking backends[{j}]"):
            missing = sorted(set(b.requires) - set(environment.provides))
        if not missing:
            continue
        broken = registry.broken("system")
        why = "; ".join(broken[m] for m in missing if m in broken)
        installed = registry.systems()
        need = type(environment).capability
        elsewhere = [m for m in missing if m in installed and m not in broken
                     and not (isinstance(need, type) and issubclass(installed[m], need))]
        if elsewhere and not why:
            m = elsewhere[0]
            places = ", ".join(registry.places(installed[m])) or "no installed environment"
            raise BadInput(f"backends[{j}] ({b.name}/{b.variant}) needs {printable(m)}, which cannot run in environment "
                           f"'{environment.name}': {installed[m].display} runs in {places}",
                           hint="run it in an environment it can run in, or leave the backend out")
        raise BadInput(f"backends[{j}] ({b.name}/{b.variant}) needs {', '.join(printable(m) for m in missing)}, "
                       f"which environment '{environment.name}' does not provide"
                       + (f": {why}" if why else f" (it provides {', '.join(sorted(environment.provides)) or 'none'})"),
                       hint="fix or install that storage system's plugin" if why else
                            "run it in an environment that provides it, or leave the backend out")


def _environment(config: Config) -> Environment:
    env_cls = _plugin("environment", config.environment.kind, "environment.kind")
    with registry.blamed("environment", config.environment.kind, "checking the environment"):
        return _environment_of(env_cls, config)


def _environment_of(env_cls: Any, config: Config) -> Environment:
    options = config.environment.options
    try:
        given = env_cls.Options.model_validate(options)
    except ValidationError as exc:
        raise _options_error(exc, "environment.options", env_cls.Options) from exc
    swept = [v for v in config.sweep.get("clients", ()) if isinstance(v, int) and not isinstance(v, bool)]
    if not swept:
        return env_cls(given)
    # (a lab brings up the most clients a sweep uses, once, and uses the first N at each point:
    # an option the sizing sets and the config did not write is the sweep's to answer for)
    most = max(swept)
    try:
        return env_cls(env_cls.Options.model_validate(env_cls.sized_for(dict(options), most)))
    except ValidationError as exc:
        j = config.sweep["clients"].index(most)
        raise BadInput(f"sweep.clients[{j}]: {most} client hosts are more than environment "
                       f"'{config.environment.kind}' can have: " + _explain(exc).message.removeprefix(
                           "invalid config:\n  "), hint="sweep fewer client hosts") from None


def environment_from_file(path: Path | None, kind: str | None = None) -> Environment:
    """Only the environment of a config (``lab down``/``status`` need nothing else, and
    should not load every plugin to find it)."""
    data = load_yaml(path) if path is not None else {}
    env = data.get("environment", DEFAULT_ENVIRONMENT)
    if kind is not None:
        env = _same_kind(env, {"kind": kind})
    try:
        spec = Config.model_validate({"environment": env}).environment
    except ValidationError as exc:
        raise BadInput(_explain(exc).message) from exc
    return _environment(Config(environment=spec))


def plan_from_file(path: Path | None, overrides: dict[str, Any] | None = None) -> Plan:
    data = load_yaml(path) if path is not None else {}
    return build_plan(data, source=str(path) if path else "built-in default", overrides=overrides)
