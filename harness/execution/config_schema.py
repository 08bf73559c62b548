"""The config file's JSON Schema, for an editor that validates and completes a config as it
is written (a YAML language server: ``# yaml-language-server: $schema=dfsbench.schema.json``).

It is built from the same models ``dfsbench check`` validates with: the top level
(:mod:`harness.execution.schema`) and the ``Options`` of every installed environment, backend
and workload, each entry's options chosen by its ``kind`` or ``name``. A plugin installed
later is in the schema written after it. The schema admits what a config file holds, which
is not always what a model holds once read: a size as ``40KiB`` or as bytes, a workload's
options without the keys its defaults give (each scale has its own). It is the shape only:
``dfsbench check`` also checks what a schema cannot say (a sweep's points, a fault's moment
against the cell's length, a plugin's own rules), and a config it passes is the one that runs.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from harness.api import registry
from harness.api.faults import FaultSpec
from harness.execution.schema import Config, WorkloadSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
REF = "#/$defs/{model}"


def config_schema() -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON Schema of a config file, and the plugins left out of it with why (a broken
    plugin, or one whose options have no JSON Schema)."""
    left_out: dict[str, str] = {}
    plugins: dict[str, dict[str, type[BaseModel]]] = {}
    for kind in ("environment", "backend", "workload"):
        for name, why in registry.broken(kind).items():
            left_out[f"{kind} {name}"] = why
        plugins[kind] = {}
        for name, cls in registry.usable(kind).items():
            options = getattr(cls, "Options", None)
            try:
                if not (isinstance(options, type) and issubclass(options, BaseModel)):
                    raise TypeError("its Options is not a pydantic model")
                options.model_json_schema()
            except Exception as exc:  # (a stranger's model: said, and the others go on)
                left_out[f"{kind} {name}"] = f"its options have no JSON Schema ({type(exc).__name__})"
                continue
            plugins[kind][name] = options
    models: list[type[BaseModel]] = [Config, FaultSpec, *dict.fromkeys(m for by in plugins.values() for m in by.values())]
    refs, defs = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    ref = {m: refs[(m, "validation")]["$ref"] for m in models}
    schema = copy.deepcopy(defs["$defs"][ref[Config].rsplit("/", 1)[1]])
    defs = defs["$defs"]
    for kind, by in plugins.items():
        if kind == "workload":  # (a workload's defaults, for the run's scale, fill what a config leaves out)
            for model in by.values():
                defs[ref[model].rsplit("/", 1)[1]].pop("required", None)
    props = schema["properties"]
    props["environment"] = _environment(plugins["environment"], ref)
    props["backends"] = {"type": "array", "description": "the storage targets compared, each by its name, or "
                         "{name, variant, options}; empty or left out: the suite's",
                         "items": _entries(plugins["backend"], ref, defs, None)}
    props["workloads"] = {"description": "the workloads run on every backend, each by its name, or {name, "
                          "options, clients, fault, …}; left out: the suite's",
                          "anyOf": [{"type": "array", "items": _entries(plugins["workload"], ref, defs,
                                                                        ref[FaultSpec])},
                                    {"type": "null"}]}
    for name in ("backends", "workloads"):
        schema.get("required", []).count(name) and schema["required"].remove(name)
    # (the top level's own entries, each replaced above by one per plugin; the top level itself)
    schema["$defs"] = {k: v for k, v in defs.items()
                       if k not in ("EnvironmentSpec", "PluginSpec", "WorkloadSpec", ref[Config].rsplit("/", 1)[1])}
    schema = {"$schema": DIALECT, "$id": "https://dfsbench.invalid/config.schema.json",
              "title": "dfsbench config", **schema}
    return _clean(schema), left_out


def _environment(by: dict[str, type[BaseModel]], ref: dict[Any, str]) -> dict[str, Any]:
    """An environment by its name alone, or {kind, options} (no kind: the local lab)."""
    from harness.execution.schema import DEFAULT_ENVIRONMENT
    kinds = sorted(by)
    entries = []
    for name in kinds:
        kind: dict[str, Any] = {"const": name}
        entry: dict[str, Any] = {"type": "object", "additionalProperties": False,
                                 "properties": {"kind": kind, "options": {"$ref": ref[by[name]]}}}
        if name != DEFAULT_ENVIRONMENT:
            entry["required"] = ["kind"]
        entries.append(entry)
    return {"description": "where the cluster comes from: an environment's name, or {kind, options}; "
            f"default: {DEFAULT_ENVIRONMENT}",
            "anyOf": [{"enum": kinds}, *entries]}


def _entries(by: dict[str, type[BaseModel]], ref: dict[Any, str], defs: dict[str, Any],
             fault: str | None) -> dict[str, Any]:
    """A backend or workload entry: its name alone, or a mapping whose ``options`` are the
    named plugin's; a workload's also takes the keys of :class:`WorkloadSpec`."""
    spec = WorkloadSpec.model_json_schema(ref_template=REF)["properties"] if fault else {}
    variant = Config.model_json_schema(ref_template=REF)["$defs"]["PluginSpec"]["properties"]["variant"]
    entries = []
    for name in sorted(by):
        props: dict[str, Any] = {"name": {"const": name}}
        if not fault:
            props["variant"] = variant
        props["options"] = {"$ref": ref[by[name]]}
        for key, value in spec.items():
            if key not in ("name", "variant", "options"):
                props[key] = {**value, "anyOf": [{"$ref": fault}, {"type": "null"}]} if key == "fault" else value
        entries.append({"type": "object", "additionalProperties": False, "required": ["name"],
                        "properties": props})
    return {"anyOf": [{"enum": sorted(by)}, *entries]}


def _clean(value: Any) -> Any:
    """The schema without pydantic's own keys beside JSON Schema's (a constraint it has
    already said as a keyword, e.g. ``gt`` beside ``exclusiveMinimum``)."""
    if isinstance(value, dict):
        return {k: ({name: _clean(v) for name, v in v.items()} if k in _NAMED else _clean(v))
                for k, v in value.items() if k not in _PYDANTIC_ONLY}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


_PYDANTIC_ONLY = frozenset({"gt", "ge", "lt", "le"})
_NAMED = frozenset({"properties", "$defs"})  # (keys that are names, not keywords)
