"""The config file's JSON Schema, for an editor that validates and completes a config as it
is written (a YAML language server: ``# yaml-language-server: $schema=dfsbench.schema.json``).

It is built from the same models ``dfsbench check`` validates with: the top level
(:mod:`harness.execution.schema`) and the ``Options`` of every installed environment, backend
and workload, each entry's options chosen by its ``kind`` or ``name`` (``if``/``then``, so
that an editor names the key that is wrong, not the entry). A plugin installed later is in
the schema written after it. The schema admits what a config file holds, which is not always
what a model holds once read: a size as ``40KiB`` or as bytes, a workload's options without
the keys its defaults give (each scale has its own). It is the shape only: ``dfsbench check``
also checks what a schema cannot say (a sweep's points, a fault's moment against the cell's
length, a plugin's own rules), and a config it passes is the one that runs.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from harness.api import registry
from harness.api.faults import FaultSpec
from harness.execution.schema import DEFAULT_ENVIRONMENT, Config, PluginSpec, WorkloadSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
REF = "#/$defs/{model}"
PROJECT = "dfsbench"  # (the distribution whose plugins are dfsbench's own: own_only)
# keys a config may give under an older name, by the model and key they stand for
OLD_NAMES = {("SiteOptions", "lab_dir"): "workdir"}


class _Defaults(GenerateJsonSchema):
    """pydantic's schema, with the default a factory makes (a mapping, a list, a model's
    defaults) said as a default, as any other is."""

    def default_schema(self, schema: Any) -> Any:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            try:
                schema = {**schema, "default": factory()}
            except Exception:  # (a stranger's factory: its default goes unsaid)
                return super().default_schema(schema)
            schema.pop("default_factory")
        return super().default_schema(schema)


def config_schema(own_only: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON Schema of a config file, and the plugins left out of it with why (a broken
    plugin, or one whose options have no JSON Schema). ``own_only``: dfsbench's own plugins
    alone (what the generated references in its repository say), not every one installed."""
    left_out: dict[str, str] = {}
    plugins: dict[str, dict[str, type[BaseModel]]] = {}
    for kind in ("environment", "backend", "workload"):
        plugins[kind] = {}
        for name, why in registry.broken(kind).items():
            if not own_only or registry.shipped_with(kind, name, PROJECT):
                left_out[f"{kind} {name}"] = why
        for name, cls in registry.usable(kind).items():
            if own_only and not registry.shipped_with(kind, name, PROJECT):
                continue
            options = getattr(cls, "Options", None)
            try:
                if not (isinstance(options, type) and issubclass(options, BaseModel)):
                    raise TypeError("its Options is not a pydantic model")
                options.model_json_schema(schema_generator=_Defaults)
            except Exception as exc:  # (a stranger's model: said, and the others go on)
                left_out[f"{kind} {name}"] = f"its options have no JSON Schema ({type(exc).__name__})"
                continue
            plugins[kind][name] = options
    models: list[type[BaseModel]] = [Config, FaultSpec, PluginSpec, WorkloadSpec,
                                     *dict.fromkeys(m for by in plugins.values() for m in by.values())]
    refs, found = models_json_schema([(m, "validation") for m in models], ref_template=REF,
                                     schema_generator=_Defaults)
    defs: dict[str, Any] = found["$defs"]
    ref = {m: refs[(m, "validation")]["$ref"] for m in models}
    name_of = {m: ref[m].rsplit("/", 1)[1] for m in models}
    for model in plugins["workload"].values():  # (its defaults, for the run's scale, fill what a config leaves out)
        defs[name_of[model]].pop("required", None)
    for (named, key), old in OLD_NAMES.items():
        if key in defs.get(named, {}).get("properties", {}):
            defs[named]["properties"][old] = {**defs[named]["properties"][key],
                                              "description": f"the name of '{key}' before it was renamed"}
    schema = copy.deepcopy(defs[name_of[Config]])
    entry = defs[name_of[WorkloadSpec]]["properties"]
    variant = defs[name_of[PluginSpec]]["properties"]["variant"]
    props = schema["properties"]
    props["environment"] = _environment(plugins["environment"], ref)
    props["backends"] = {"description": "the storage targets compared, each by its name, or {name, variant, "
                         "options}; empty, null or left out: the suite's",
                         "anyOf": [{"type": "array", "items": _entries(plugins["backend"], ref, {"variant": variant})},
                                   {"type": "null"}]}
    workload = {k: v for k, v in entry.items() if k not in ("name", "variant", "options")}
    workload["fault"] = {**workload["fault"], "anyOf": [{"$ref": ref[FaultSpec]}, {"type": "null"}]}
    workload["fault"].pop("type", None)
    props["workloads"] = {"description": "the workloads run on every backend, each by its name, or {name, "
                          "options, clients, fault, …}; null or left out: the suite's",
                          "anyOf": [{"type": "array", "items": _entries(plugins["workload"], ref, workload)},
                                    {"type": "null"}]}
    schema.pop("required", None)
    # (the top level's own entries, each replaced above by one per plugin; the top level itself)
    schema["$defs"] = {k: v for k, v in defs.items() if k not in
                       {name_of[m] for m in (Config, PluginSpec, WorkloadSpec)} | {"EnvironmentSpec"}}
    schema = {"$schema": DIALECT, "$id": "https://dfsbench.invalid/config.schema.json",
              "title": "dfsbench config", **schema}
    return _clean(schema), left_out


def _environment(by: dict[str, type[BaseModel]], ref: dict[Any, str]) -> dict[str, Any]:
    """An environment by its name alone, or {kind, options} (no kind: the local lab), its
    options those of the environment its kind names."""
    kinds = sorted(by)
    chosen = [{"if": {"properties": {"kind": {"const": name}}, **({} if name == DEFAULT_ENVIRONMENT else
                                                                    {"required": ["kind"]})},
               "then": {"properties": {"options": {"$ref": ref[by[name]]}}}} for name in kinds]
    mapping = {"type": "object", "additionalProperties": False,
               "properties": {"kind": {"enum": kinds, "default": DEFAULT_ENVIRONMENT,
                                       "description": "the environment: " + ", ".join(kinds)},
                              "options": {"type": "object", "description": "its options (the reference's "
                                          "section of that environment)"}},
               "allOf": chosen}
    return {"description": "where the cluster comes from: an environment's name, or {kind, options}; "
            f"default: {DEFAULT_ENVIRONMENT}", "anyOf": [{"enum": kinds}, mapping]}


def _entries(by: dict[str, type[BaseModel]], ref: dict[Any, str], more: dict[str, Any]) -> dict[str, Any]:
    """A backend or workload entry: its name alone, or a mapping (``more``: its keys besides
    name and options) whose ``options`` are those of the plugin it names."""
    names = sorted(by)
    chosen = [{"if": {"properties": {"name": {"const": name}}, "required": ["name"]},
               "then": {"properties": {"options": {"$ref": ref[by[name]]}}}} for name in names]
    mapping = {"type": "object", "additionalProperties": False, "required": ["name"],
               "properties": {"name": {"enum": names, "description": "the plugin: " + ", ".join(names)},
                              **more,
                              "options": {"type": "object", "description": "its options (the reference's "
                                          "section of that plugin)"}},
               "allOf": chosen}
    return {"anyOf": [{"enum": names}, mapping]}


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
