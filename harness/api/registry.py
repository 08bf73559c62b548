"""Plugins found through entry points; built-ins register exactly as a third party would.

An unknown name fails with the list of valid ones; a plugin that breaks its contract
fails at load time with an error naming the plugin and its entry point.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Literal, overload

from harness.api.contracts import Backend, Environment, Options, Workload
from harness.api.systems import System
from harness.errors import BadInput, DfsbenchError

GROUPS = {
    "environment": ("dfsbench.environments", Environment),
    "backend": ("dfsbench.backends", Backend),
    "workload": ("dfsbench.workloads", Workload),
    "system": ("dfsbench.systems", System),
}


class PluginError(DfsbenchError):
    """A plugin does not meet its contract."""


@cache
def _entry_points(kind: str) -> dict[str, EntryPoint]:
    return _all_entry_points().get(GROUPS[kind][0], {})


@cache
def _all_entry_points() -> dict[str, dict[str, EntryPoint]]:
    """Every group's entry points, from one reading of the installed distributions."""
    every = entry_points()
    return {group: {ep.name: ep for ep in every.select(group=group)} for group, _ in GROUPS.values()}


def names(kind: str) -> list[str]:
    return sorted(_entry_points(kind))


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
    return _load(kind, name)


@cache
def _load(kind: str, name: str) -> type:
    """The plugin class registered as ``name`` in the group of ``kind``."""
    eps = _entry_points(kind)
    if name not in eps:
        valid = ", ".join(sorted(eps)) or "(none: is dfsbench installed? run 'make demo')"
        raise BadInput(f"unknown {kind} '{name}'; valid {kind}s: {valid}")
    ep = eps[name]
    try:
        cls = ep.load()
    except Exception as exc:
        raise PluginError(f"{kind} plugin '{name}' ({ep.value}) failed to load: {exc}") from exc
    base = GROUPS[kind][1]
    problems = []
    if not (isinstance(cls, type) and issubclass(cls, base)):
        problems.append(f"is not a subclass of {base.__module__}.{base.__name__}")
    else:
        if getattr(cls, "name", None) != name:
            problems.append(f"declares name '{getattr(cls, 'name', None)}' but is registered as '{name}'")
        opts = getattr(cls, "Options", None)
        if not (isinstance(opts, type) and issubclass(opts, Options)):
            problems.append("has an Options attribute that is not a harness.api.contracts.Options model")
        abstract = sorted(getattr(cls, "__abstractmethods__", ()))
        if abstract:
            problems.append(f"does not implement {', '.join(abstract)}")
    if problems:
        raise PluginError(f"{kind} plugin '{name}' ({ep.value}) breaks its contract: "
                          + "; ".join(problems))
    found: type = cls
    return found


def tools() -> dict[str, type[Workload]]:
    """``dfsbench parse`` tools: the workloads that read a tool's output, by tool name."""
    found: dict[str, type[Workload]] = {}
    for name in names("workload"):
        cls = load("workload", name)
        if cls.tool:
            found[cls.tool] = cls
    return found


@overload
def find(kind: Literal["backend"], name: str) -> type[Backend] | None: ...
@overload
def find(kind: Literal["workload"], name: str) -> type[Workload] | None: ...
@overload
def find(kind: str, name: str) -> type | None: ...


def find(kind: str, name: str) -> type | None:
    """The plugin class, or None when no plugin of that name is installed (stored runs and
    imports may name plugins this installation lacks: they are shown generically)."""
    try:
        return load(kind, name)
    except BadInput:
        return None


def systems() -> dict[str, type[System]]:
    """Every installed storage system, by name."""
    return {name: load("system", name) for name in names("system")}
