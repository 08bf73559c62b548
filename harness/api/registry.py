"""Plugins found through entry points; built-ins register exactly as a third party would.

A plugin is installed code from someone else: broken, hostile or just old. Whatever it
does when it is imported, checked or asked for its options, it is named in one line (its
distribution and entry point) and the others go on; only a config that names it stops.
An unknown name fails with the list of valid ones; a plugin that breaks its contract fails
at load time with an error naming the plugin and its entry point. A plugin never replaces
another silently: two entry points of one name in one group are both refused, naming both
distributions. A plugin's name is a name by :data:`harness.system.names.RULE`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from importlib.metadata import EntryPoint, distributions
from typing import Any, Literal, overload

from pydantic import ValidationError

from harness.api.contracts import Backend, Environment, Options, Workload
from harness.api.systems import CAPABILITIES, SPOKEN, ContainerLab, LocalLab, OnSite, System
from harness.errors import BadInput, DfsbenchError
from harness.system import signals
from harness.system.files import printable
from harness.system.names import RULE, is_name

GROUPS = {
    "environment": ("dfsbench.environments", Environment),
    "backend": ("dfsbench.backends", Backend),
    "workload": ("dfsbench.workloads", Workload),
    "system": ("dfsbench.systems", System),
}
SCALES = ("quick", "report")  # what a workload's defaults() is asked for (harness.execution.plan)
SAID_MOST = 300  # what a plugin's own words (an exception's text) may take of a line


class PluginError(DfsbenchError):
    """A plugin does not meet its contract."""


@cache
def _entry_points(kind: str) -> dict[str, tuple[EntryPoint, ...]]:
    return _all_entry_points().get(GROUPS[kind][0], {})


@cache
def _all_entry_points() -> dict[str, dict[str, tuple[EntryPoint, ...]]]:
    """Every group's entry points by name, from one reading of every installed distribution
    — each one, not only the first of a name (``importlib.metadata.entry_points`` keeps the
    first distribution of each normalized name and drops the rest in silence, so a
    distribution named like dfsbench, found first on the path, would stand in for it whole).
    One registration seen twice (the same distribution found in two places of the path)
    counts once; a name registered more than once otherwise (by two distributions, or twice
    by one) keeps every registration, so that none of them is used (:func:`load`)."""
    found: dict[str, dict[str, tuple[EntryPoint, ...]]] = {group: {} for group, _ in GROUPS.values()}
    seen: set[tuple[str, str, str, str]] = set()
    for dist in distributions():
        try:
            name = _normalized(dist.metadata["Name"] or "")
            eps = list(dist.entry_points)
        except Exception:  # (a distribution whose metadata cannot be read registers nothing here)
            continue
        for ep in eps:
            if ep.group not in found:
                continue
            same = (ep.group, ep.name, ep.value, name)
            if same in seen:
                continue
            seen.add(same)
            found[ep.group][ep.name] = (*found[ep.group].get(ep.name, ()), ep)
    return found


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def names(kind: str) -> list[str]:
    """Every name registered in the kind's group, loadable or not (``list`` says which is
    broken); as registered: show them with :func:`harness.system.files.printable`."""
    return sorted(_entry_points(kind))


def shipped_with(kind: str, name: str, project: str) -> bool:
    """Whether the plugin of that name is registered by the distribution ``project`` alone
    (dfsbench's own, say, and no other's beside it)."""
    found = _entry_points(kind).get(name, ())
    for ep in found:
        try:
            maker = ep.dist.metadata["Name"] if ep.dist is not None else None
        except Exception:  # (a distribution's metadata is its maker's: unreadable is not ours)
            return False
        if _normalized(maker or "") != _normalized(project):
            return False
    return bool(found)


def distribution(ep: EntryPoint) -> str:
    """The distribution an entry point comes from, and where in it, as shown."""
    dist = getattr(ep, "dist", None)
    name = None
    if dist is not None:
        try:
            name = dist.metadata["Name"]
        except Exception:  # (a distribution's metadata is its maker's: unreadable is said, not raised)
            name = None
    return f"distribution '{printable(name or 'unknown', 80)}', {printable(ep.value, 120)}"


def _plugin(kind: str, name: str, ep: EntryPoint | None = None) -> str:
    """How an error names a plugin: its kind, name, distribution and entry point."""
    where = f" ({distribution(ep)})" if ep is not None else ""
    return f"{kind} plugin '{printable(name, 80)}'{where}"


def _genuine(exc: BaseException) -> bool:
    """A Ctrl-C or SIGTERM that reached dfsbench (its handler set ``cancelled`` before it
    raised), not an interrupt a plugin raised of itself, whatever its type."""
    return signals.cancelled.is_set()


def _said(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # (a plugin's exception whose str() raises says only its type)
        text = ""
    return f"{type(exc).__name__}: {printable(text, SAID_MOST)}" if text else type(exc).__name__


REFUSALS = (ValidationError, DfsbenchError, OSError)  # what a plugin's code may raise of the input, or the host


@contextmanager
def blamed(kind: str, name: str, doing: str, failed: str = "is broken",
           allowed: tuple[type[BaseException], ...] = REFUSALS) -> Iterator[None]:
    """Run a plugin's own code (its options model, a validator, ``defaults()``, its
    constructor, a cell): whatever it raises but what ``allowed`` names (by default a
    refusal of the input — pydantic's ValidationError, a DfsbenchError — or the host's
    answer, an OSError) or a Ctrl-C that reached dfsbench becomes a :class:`PluginError`
    naming the plugin and what it was doing — an exception of any kind, ``SystemExit`` and
    ``KeyboardInterrupt`` raised by the plugin included."""
    try:
        yield
    except allowed:
        raise
    except BaseException as exc:
        if _genuine(exc):
            raise
        eps = _entry_points(kind).get(name, ())
        raise PluginError(f"{_plugin(kind, name, eps[0] if len(eps) == 1 else None)} {failed}: "
                          f"{doing} raised {_said(exc)}",
                          hint="fix or uninstall that plugin; a config that does not name it runs") from None


@contextmanager
def held(kind: str, name: str, doing: str, inner: AbstractContextManager[Any]) -> Iterator[Any]:
    """``inner`` (a plugin's context manager: a backend's attachment) entered and left
    :func:`blamed`: what its end raises (a detach) is the plugin's fault too."""
    with blamed(kind, name, doing):
        value = inner.__enter__()
    try:
        yield value
    except BaseException:
        with blamed(kind, name, f"the end of {doing}"):
            if not inner.__exit__(*sys.exc_info()):
                raise
    else:
        with blamed(kind, name, f"the end of {doing}"):
            inner.__exit__(None, None, None)


@overload
def load(kind: Literal["environment"], name: str) -> type[Environment]: ...
@overload
def load(kind: Literal["backend"], name: str) -> type[Backend]: ...
@overload
def load(kind: Literal["workload"], name: str) -> type[Workload]: ...
@overload
def load(kind: Literal["system"], name: str) -> type[System]: ...
@overload
def load(kind: str, name: str) -> type: ...


def load(kind: str, name: str) -> type:
    """The plugin class registered as ``name`` in the group of ``kind``; BadInput for a
    name not registered, PluginError for one that cannot be used (the same error each
    time it is asked: a plugin is imported once)."""
    found = _load(kind, name)
    if isinstance(found, BaseException):
        raise found
    return found


@cache
def _load(kind: str, name: str) -> type | DfsbenchError:
    eps = _entry_points(kind)
    if name not in eps:
        valid = ", ".join(printable(n, 80) for n in sorted(eps)) or "(none: is dfsbench installed? run 'make demo')"
        return BadInput(f"unknown {kind} '{printable(name, 80)}'; valid {kind}s: {valid}")
    registered = eps[name]
    if len(registered) > 1:
        return PluginError(f"{kind} plugin '{printable(name, 80)}' is registered {len(registered)} times, by "
                           + " and by ".join(distribution(ep) for ep in registered)
                           + ": neither is used, since which one is meant is not known",
                           hint="uninstall the one you do not want (a plugin never replaces another)")
    ep = registered[0]
    if not is_name(name):
        return PluginError(f"{_plugin(kind, name, ep)}: its name is not a name ({RULE}), and a plugin's name "
                           "becomes part of paths and records", hint="ask its maker to rename it, or uninstall it")
    try:
        with blamed(kind, name, "importing it", "failed to load", allowed=()):
            cls = ep.load()
        with blamed(kind, name, "checking its contract", allowed=()):
            problems = _contract(kind, name, cls)
        if not problems:
            _probe(kind, name, cls)
    except PluginError as exc:
        return exc
    if problems:
        return PluginError(f"{_plugin(kind, name, ep)} breaks its contract: " + "; ".join(problems),
                           hint="fix or uninstall that plugin; a config that does not name it runs")
    found: type = cls
    return found


def _contract(kind: str, name: str, cls: Any) -> list[str]:
    """What the class a plugin registered lacks of its kind's contract."""
    base = GROUPS[kind][1]
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return [f"is not a subclass of {base.__module__}.{base.__name__}"]
    problems = []
    declared = getattr(cls, "name", None)
    if declared != name:
        problems.append(f"declares name '{printable(declared, 80)}' but is registered as '{printable(name, 80)}'")
    opts = getattr(cls, "Options", None)
    if not (isinstance(opts, type) and issubclass(opts, Options)):
        problems.append("has an Options attribute that is not a harness.api.contracts.Options model")
    abstract = sorted(getattr(cls, "__abstractmethods__", ()))
    if abstract:
        problems.append(f"does not implement {', '.join(printable(a, 80) for a in abstract)}")
    display = getattr(cls, "display", None)
    if display is not None and not (isinstance(display, str) and display.isprintable() and len(display) <= 64):
        problems.append("declares a display name that is not one line of at most 64 printable characters")
    suites = getattr(cls, "suites", {})
    if not (isinstance(suites, dict) and all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                             for k, v in suites.items())):
        problems.append("declares suites that are not a mapping of suite names to places (whole numbers)")
    tool = getattr(cls, "tool", None) if kind == "workload" else None
    if tool is not None and not is_name(tool):
        problems.append(f"declares a tool whose name is not a name ({RULE})")
    if kind == "system":
        problems += _system_contract(cls)
    return problems


PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]{0,99}")  # a Debian package's name (Debian Policy 5.6.1)


def _system_contract(cls: type[System]) -> list[str]:
    """What a storage system lacks of :mod:`harness.api.systems`: the version of the contract
    it was written against, its declarations, and every method it overrides taking the
    parameters the contract passes (by name, in order) — in the capabilities it declares."""
    problems = []
    version = getattr(cls, "contract", None)
    if type(version) is not int or version not in SPOKEN:
        said = "declares no contract version" if version is None else \
            f"declares contract version {printable(version, 20)}"
        problems.append(f"{said}; this dfsbench speaks version {', '.join(map(str, sorted(SPOKEN)))} "
                        "(contract = harness.api.systems.CONTRACT)")
    if not (isinstance(getattr(cls, "display", None), str) and cls.display):
        problems.append("declares no display name (display = 'How people call it')")
    client = getattr(cls, "client", None)
    if not (isinstance(client, str) and client.isprintable() and 0 < len(client) <= 100):
        problems.append("declares no client (client = 'the client its backends reach it with', "
                        "one line of at most 100 printable characters)")
    service = getattr(cls, "Service", None)
    if not (isinstance(service, type) and dataclasses.is_dataclass(service)):
        problems.append("has a Service that is not a dataclass (the facts its backends get)")
    packages = getattr(cls, "packages", None)
    if not (isinstance(packages, tuple) and all(isinstance(p, str) and PACKAGE.fullmatch(p) for p in packages)):
        problems.append("declares packages that are not a tuple of Debian package names")
    for attribute, capability in (("LocalOptions", LocalLab), ("ContainerOptions", ContainerLab), ("Site", OnSite)):
        model = getattr(cls, attribute, None)
        if issubclass(cls, capability) and not (isinstance(model, type) and issubclass(model, Options)):
            problems.append(f"has a {attribute} that is not a harness.api.contracts.Options model")
    for base in (System, *(c for c in CAPABILITIES if issubclass(cls, c))):
        for method, declared in vars(base).items():
            if callable(declared) or isinstance(declared, classmethod):
                problems += _same_call(cls, base, method)
    return list(dict.fromkeys(problems))


def _same_call(cls: type, base: type, method: str) -> list[str]:
    """Whether ``cls``'s ``method`` takes what the contract's (of ``base``) takes."""
    if method.startswith("_"):
        return []
    want, have = inspect.getattr_static(base, method), inspect.getattr_static(cls, method)
    if have is want:
        return []
    if isinstance(want, classmethod) != isinstance(have, classmethod):
        return [f"{method} must {'' if isinstance(want, classmethod) else 'not '}be a classmethod"]
    if isinstance(have, staticmethod):
        return [f"{method} must not be a staticmethod"]
    try:
        given = inspect.signature(getattr(cls, method))
        asked = inspect.signature(getattr(base, method))
    except (TypeError, ValueError):
        return [f"{method} is not a method"]
    names = [p.name for p in asked.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes = [p.name for p in given.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # (the core passes what the contract names, positionally: any more must have defaults,
    # a keyword-only one too)
    more = [p for p in list(given.parameters.values())[len(names):] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if takes[:len(names)] == names and all(p.default is not p.empty for p in more):
        return []
    return [f"{method}({', '.join(takes)}) does not take what the contract passes: {method}({', '.join(names)})"]


def _probe(kind: str, name: str, cls: Any) -> None:
    """Ask the plugin what every run asks it first — its defaults at each scale, its options
    model validating them (a workload's), or nothing given (the others') — so that one whose
    own code raises is found broken at load, not half-way through a config. A refusal of
    the values (a required option) is the model's answer, not a fault."""
    if kind == "workload":
        for scale in SCALES:
            with blamed(kind, name, f"its defaults('{scale}')", allowed=()):
                given = cls.defaults(scale)
            if not isinstance(given, dict):
                raise PluginError(f"{_plugin(kind, name)} is broken: its defaults('{scale}') is not a mapping "
                                  "of options", hint="fix or uninstall that plugin")
            _validates(kind, name, cls.Options, given)
    elif kind != "system":
        _validates(kind, name, cls.Options, {})


def _validates(kind: str, name: str, model: Any, given: dict[str, Any]) -> None:
    try:
        with blamed(kind, name, "its options' validation", allowed=(ValidationError, DfsbenchError)):
            model.model_validate(given)
    except (ValidationError, DfsbenchError):  # (a refusal of what no one gave: the config's to answer)
        pass


def broken(kind: str) -> dict[str, str]:
    """Every registered plugin of the kind that cannot be used, and why (one line each)."""
    found = {}
    for name in names(kind):
        outcome = _load(kind, name)
        if isinstance(outcome, DfsbenchError):
            found[name] = outcome.message
    return found


def usable(kind: str) -> dict[str, type]:
    """Every registered plugin of the kind that loads, by name (the broken ones: :func:`broken`)."""
    return {name: c for name in names(kind) if isinstance(c := _load(kind, name), type)}


def tools() -> dict[str, type[Workload]]:
    """``dfsbench parse`` tools: the workloads that read a tool's output, by tool name. A
    tool two workloads claim is neither's (:func:`parser`)."""
    claimed = _claims()
    return {tool: by[0] for tool, by in claimed.items() if len(by) == 1}


def _claims() -> dict[str, list[type[Workload]]]:
    claimed: dict[str, list[type[Workload]]] = {}
    for cls in usable("workload").values():
        assert issubclass(cls, Workload)  # (what _contract checked)
        if cls.tool:
            claimed.setdefault(cls.tool, []).append(cls)
    return claimed


def parser(tool: str) -> type[Workload]:
    """The workload that reads ``tool``'s output, or an error that says why there is none."""
    claimed = _claims().get(tool, [])
    if len(claimed) > 1:
        raise PluginError(f"the tool '{printable(tool, 80)}' is claimed by the workloads "
                          + " and ".join(f"'{c.name}' ({distribution(_entry_points('workload')[c.name][0])})"
                                         for c in claimed)
                          + ": neither's parser is used, since which one is meant is not known",
                          hint="uninstall the plugin you do not want")
    if not claimed:
        why = "".join(f"; {message}" for message in broken("workload").values())
        raise BadInput(f"unknown tool '{printable(tool, 80)}'; dfsbench parses: "
                       f"{', '.join(sorted(tools())) or '(none)'}{why}")
    return claimed[0]


@overload
def find(kind: Literal["backend"], name: str) -> type[Backend] | None: ...
@overload
def find(kind: Literal["workload"], name: str) -> type[Workload] | None: ...
@overload
def find(kind: str, name: str) -> type | None: ...


def find(kind: str, name: str) -> type | None:
    """The plugin class, or None when no usable plugin of that name is installed (stored
    runs and imports may name plugins this installation lacks, or has broken: they are
    shown generically)."""
    outcome = _load(kind, name)
    return outcome if isinstance(outcome, type) else None


def places(system: type[System], faults: bool = False) -> list[str]:
    """How each installed environment that can run ``system`` (or, with ``faults``, fault its
    nodes) is called, from the capability each names."""
    found = []
    for env in usable("environment").values():
        assert issubclass(env, Environment)  # (what _contract checked)
        need = env.fault_capability if faults else env.capability
        if isinstance(need, type) and issubclass(system, need):
            found.append(env.called())
    return found


def systems() -> dict[str, type[System]]:
    """Every installed storage system that loads, by name: one that does not is left out
    (:func:`broken` says why), so that it stops no environment, and no run but one of a
    backend that needs it."""
    return usable("system")
