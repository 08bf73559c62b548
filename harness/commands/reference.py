"""``dfsbench schema``, and the references generated from the code: the config's keys (from
the models ``check`` validates with, the installed plugins' among them) and the commands
(from the argument parser). ``scripts/reference.py`` writes them under ``docs/reference/``;
a unit test fails where the files there are not what the code makes, or a key says nothing
of itself."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from harness.commands.common import kept, results_dir, shown_line
from harness.execution.config_schema import config_schema
from harness.system import files

SCHEMA_USE = "# yaml-language-server: $schema=dfsbench.schema.json"


def cmd_schema(args: argparse.Namespace) -> int:
    """The config's JSON Schema, on stdout or into a file; the plugins left out of it said
    on stderr (exit 1 where one is)."""
    schema, left_out = config_schema()
    text = json.dumps(schema, indent=1, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        refused = kept(results_dir(args))  # (the store and the runs' raw outputs are never written over)
        files.check_output(args.output, "schema", refused)
        files.write_text(args.output, text, "schema", refused)
        print(f"wrote {files.printable(args.output)}: a config's first line '{SCHEMA_USE}' (the file's path "
              "from the config's directory) lets a YAML language server check and complete it", file=sys.stderr)
    for plugin, why in left_out.items():
        print(shown_line(f"dfsbench: left out of the schema: {plugin}: {why}"), file=sys.stderr)
    return 1 if left_out else 0


# --- the config reference ------------------------------------------------------------------

def config_reference() -> str:
    """Every key of a config as Markdown: the top level, then each installed environment's,
    backend's and workload's options, with type, default and description (from the JSON
    Schema, so that it says what a config file holds: sizes as 40KiB, latencies as 20ms)."""
    schema, left_out = config_schema()
    defs = schema["$defs"]
    out = ["# Config reference", "",
           "Generated from the code (`scripts/reference.py`): every key a config file may hold, from the "
           "models `dfsbench check` validates with. `dfsbench schema` writes the same as a JSON Schema, "
           "for an editor. A size takes `40KiB`, `256MiB` or bytes; a time ending in `_s` is seconds.", ""]
    out += ["## The top level", "",
            "`environment`, `backends` and `workloads` take a plugin's name, or a mapping whose `options` are that "
            "plugin's (below). A workload's entry also takes `clients`, `fault`, `ranks_per_client` and `sweep`.", ""]
    out += _table(schema, defs, "", flat=("environment", "backends", "workloads")) + [""]
    out += ["", "### A workload's entry", ""]
    entry = next(v for v in schema["properties"]["workloads"]["anyOf"][0]["items"]["anyOf"] if "properties" in v)
    out += _table({"properties": {k: v for k, v in entry["properties"].items() if k not in ("name", "options")}},
                  defs, "") + [""]
    for kind, key in (("environment", "environment"), ("backend", "backends"), ("workload", "workloads")):
        out += [f"## {kind.capitalize()}s", ""]
        for name, model in _plugins(schema["properties"][key]):
            out += [f"### {kind} `{name}`", ""]
            body = _resolve(model, defs)
            if body.get("description"):
                out += [_one_line(body["description"]), ""]
            rows = _table(body, defs, "")
            out += rows + [""] if len(rows) > 2 else ["No options.", ""]
    if left_out:
        out += ["## Left out", ""] + [f"- {k}: {v}" for k, v in left_out.items()] + [""]
    return "\n".join(out).rstrip() + "\n"


def undescribed() -> list[str]:
    """The keys of a config whose model gives no description (the config reference would
    name them and say nothing)."""
    schema, _ = config_schema()
    defs, seen = schema["$defs"], set[str]()
    found = list(_fields(schema, defs, "", seen, skip=("environment", "backends", "workloads")))
    for key in ("environment", "backends", "workloads"):
        found.append((key, schema["properties"][key]))
        for name, options in _plugins(schema["properties"][key]):
            found += _fields(_resolve(options, defs), defs, f"{key}[{name}].options", seen)
    return [path for path, field in found if not field.get("description")]


def _fields(model: dict[str, Any], defs: dict[str, Any], path: str, seen: set[str],
            skip: tuple[str, ...] = ()) -> Iterator[tuple[str, dict]]:
    """(path, schema) of each key of a model and of the models under it, each model once."""
    for key, field in (model.get("properties") or {}).items():
        where = f"{path}.{key}" if path else key
        if key in skip:
            continue
        yield where, field
        for ref in _refs(field):
            if ref not in seen:
                seen.add(ref)
                yield from _fields(defs[ref], defs, f"{where}", seen)


def _refs(field: Any) -> Iterator[str]:
    """The models a field's schema names, anywhere in it."""
    if isinstance(field, dict):
        if isinstance(field.get("$ref"), str):
            yield field["$ref"].rsplit("/", 1)[1]
        for key, value in field.items():
            if key != "$ref":
                yield from _refs(value)
    elif isinstance(field, list):
        for value in field:
            yield from _refs(value)


def _plugins(entry: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, options schema) of each plugin an entry of the top level may name."""
    found = entry.get("items", entry)
    if "anyOf" in found and "items" in found["anyOf"][0]:
        found = found["anyOf"][0]["items"]
    for variant in found.get("anyOf", []):
        props = variant.get("properties") or {}
        name = (props.get("name") or props.get("kind") or {}).get("const")
        if name is not None:
            yield name, props.get("options", {})


def _resolve(field: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = field.get("$ref")
    return defs[ref.rsplit("/", 1)[1]] if isinstance(ref, str) else field


def _table(model: dict[str, Any], defs: dict[str, Any], prefix: str, flat: tuple[str, ...] = ()) -> list[str]:
    """A model's keys as rows of a table, with the keys of the models under each (a
    mapping's under ``key.``, a list's items under ``key[].``, a mapping of them by name
    under ``key.NAME.``), but for the keys in ``flat``."""
    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    required = set(model.get("required") or ())
    for key, field in (model.get("properties") or {}).items():
        if key in ("name", "kind") and "const" in field:
            continue
        default = "required" if key in required else _value(field.get("default", "—"))
        rows.append(f"| `{prefix}{key}` | {_type(field, defs)} | {default} | {_cell(field.get('description', ''))} |")
        if key in flat:
            continue
        for ref in dict.fromkeys(_refs(field)):
            if defs[ref].get("properties"):
                rows += _table(defs[ref], defs, f"{prefix}{key}{_under(field, ref)}.")[2:]
    return rows


def _under(field: dict[str, Any], ref: str) -> str:
    """How a key's path goes on to a model under it: '' (the key's own mapping), '[]' (the
    items of a list), '.NAME' (the values of a mapping by name)."""
    found = [field, *field.get("anyOf", ())]
    if any(ref in list(_refs(f.get("items"))) for f in found):
        return "[]"
    if any(ref in list(_refs(f.get("additionalProperties"))) for f in found):
        return ".NAME"
    return ""


def _type(field: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in field:
        model = defs[field["$ref"].rsplit("/", 1)[1]]
        return _type(model, defs) if "anyOf" in model else "mapping"
    if "anyOf" in field:
        kinds = [_type(f, defs) for f in field["anyOf"] if f.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    if "enum" in field:
        return " \\| ".join(f"`{v}`" for v in field["enum"])
    if "const" in field:
        return f"`{field['const']}`"
    kind = field.get("type", "any")
    if kind == "array":
        return f"list of {_type(field.get('items', {}), defs)}"
    if kind == "object":
        return "mapping"
    if kind == "string" and field.get("pattern") and "[KkMm" in field["pattern"]:
        return "size"
    return {"integer": "integer", "number": "number", "string": "text", "boolean": "true/false"}.get(kind, kind)


def _value(v: Any) -> str:
    return "—" if v == "—" else f"`{json.dumps(v)}`"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


# --- the command reference -----------------------------------------------------------------

def commands_reference(parser: argparse.ArgumentParser) -> str:
    """Every command and its arguments as Markdown, from the parser ``dfsbench`` parses with
    (each command's --help, as it prints)."""
    out = ["# Command reference", "",
           "Generated from the argument parser (`scripts/reference.py`): what `dfsbench COMMAND --help` prints. "
           "Exit codes: 0 done; 1 a cell failed, a lab or a tool failed, a regression past `--fail-on`, a "
           "bundle that differs, a broken plugin (`list`, `schema`), no healthy lab (`lab status`); 2 bad input "
           "(a config, an argument, a tool's output, a store); 128+N a signal N (130: Ctrl-C).", ""]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in subparsers._choices_actions}
    width = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # (argparse wraps at the terminal's width: the page's is fixed)
    try:
        for name, sub in subparsers.choices.items():
            out += [f"## `dfsbench {name}`", "", helps.get(name) or "", "", "```text",
                    sub.format_help().rstrip(), "```", ""]
    finally:
        if width is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = width
    return "\n".join(out).rstrip() + "\n"


# --- the examples ----------------------------------------------------------------------------

def examples_page(examples: list[tuple[str, str]]) -> str:
    """The example configs as a page: each file's name, the comment it opens with, and the
    file itself (``examples``: name and text of each)."""
    out = ["# Examples", "",
           "Generated from `examples/` (`scripts/reference.py`): ready configs for the questions people bring. "
           "Each is checked by `dfsbench check` and by the JSON Schema in `make test`; its first line names "
           "that schema, for an editor (`examples/dfsbench.schema.json`, what `dfsbench schema` writes). "
           "Copy one and change it.", ""]
    for name, text in examples:
        lines = text.splitlines()
        said = [line[2:] if line.startswith("# ") else line[1:] for line in lines[1:]
                if line.startswith("#")]
        comment: list[str] = []
        commands: list[str] = []
        for line in said:
            (commands if line.startswith("  ") else comment).append(line.strip())
        out += [f"## `{name}`", "", " ".join(comment), ""]
        if commands:
            out += ["```", *commands, "```", ""]
        out += ["```yaml", *(line for line in lines if not line.startswith("#")), "```", ""]
    return "\n".join(out).rstrip() + "\n"
