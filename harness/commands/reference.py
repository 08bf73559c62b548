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

from harness.api import registry
from harness.commands.common import kept, results_dir, shown_line
from harness.execution.config_schema import config_schema
from harness.system import files

SCHEMA_USE = "# yaml-language-server: $schema=dfsbench.schema.json"


def cmd_schema(args: argparse.Namespace) -> int:
    """The config's JSON Schema (``--markdown``: its reference, as docs/reference/config.md
    but of every plugin installed here), on stdout or into a file; the plugins left out of
    it said on stderr (exit 1 where one is)."""
    built = config_schema()
    schema, left_out = built
    text = config_reference(built=built) if args.markdown else json.dumps(schema, indent=1, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        refused = kept(results_dir(args))  # (the store and the runs' raw outputs are never written over)
        files.check_output(args.output, "schema", refused)
        files.write_text(args.output, text, "schema", refused)
        print(f"wrote {files.printable(args.output)}" + ("" if args.markdown else f": a config's first line "
              f"'{SCHEMA_USE}' (the file's path from the config's directory) lets a YAML language server check "
              "and complete it"), file=sys.stderr)
    for plugin, why in left_out.items():
        print(shown_line(f"dfsbench: left out of the schema: {plugin}: {why}"), file=sys.stderr)
    return 1 if left_out else 0


# --- the config reference ------------------------------------------------------------------

def config_reference(own_only: bool = False,
                     built: tuple[dict[str, Any], dict[str, str]] | None = None) -> str:
    """Every key of a config as Markdown: the top level, an entry's keys, then each
    environment's, backend's and workload's options (``own_only``: dfsbench's own plugins),
    with type, default and description — from the JSON Schema (``built``: what
    :func:`config_schema` gave, where the caller has it already), so that it says what a config
    file holds (sizes as 40KiB, latencies as 20ms), and a workload's defaults at each scale."""
    schema, left_out = built if built is not None else config_schema(own_only)
    defs = schema["$defs"]
    props = schema["properties"]
    out = ["# Config reference", "",
           "Generated from the code (`scripts/reference.py`): every key a config file may hold, from the "
           "models `dfsbench check` validates with. `dfsbench schema` writes the same as a JSON Schema, "
           "for an editor. A size takes `40KiB`, `256MiB` or bytes; a key ending in `_s` is seconds.", ""]
    out += ["## The top level", "",
            "`environment`, `backends` and `workloads` take a plugin's name, or a mapping whose `options` are that "
            "plugin's (below).", ""]
    out += _table(schema, defs, "", flat=("environment", "backends", "workloads")) + [""]
    out += ["### An environment", ""] + _table(_mapping(props["environment"]), defs, "") + [""]
    out += ["### A backend's entry", ""] + _table(_mapping(props["backends"]), defs, "") + [""]
    out += ["### A workload's entry", ""] + _table(_mapping(props["workloads"]), defs, "") + [""]
    scaled = _scaled_defaults()
    for kind, key in (("environment", "environment"), ("backend", "backends"), ("workload", "workloads")):
        out += [f"## {kind.capitalize()}s", ""]
        if kind == "workload":
            out += ["A workload's options that a config leaves out take its defaults at the run's scale "
                    "(`scale: quick`, the default, or `report`): the table gives both.", ""]
        for name, model in _plugins(props[key]):
            out += [f"### {kind} `{name}`", ""]
            body = _resolve(model, defs)
            if body.get("description"):
                out += [_cell(body["description"]), ""]
            rows = _table(body, defs, "", scaled=scaled.get(name, {}) if kind == "workload" else {})
            out += rows + [""] if len(rows) > 2 else ["No options.", ""]
    if left_out:
        out += ["## Left out", ""] + [f"- {_cell(k)}: {_cell(v)}" for k, v in left_out.items()] + [""]
    return "\n".join(out).rstrip() + "\n"


def _scaled_defaults() -> dict[str, dict[str, tuple[Any, Any]]]:
    """Each workload's defaults at the quick and the report scale, by option."""
    found: dict[str, dict[str, tuple[Any, Any]]] = {}
    for name, cls in registry.usable("workload").items():
        try:
            quick, report = getattr(cls, "defaults")("quick"), getattr(cls, "defaults")("report")
        except Exception:  # (a stranger's defaults: unsaid; check and the run say what is wrong)
            continue
        found[name] = {k: (quick.get(k), report.get(k)) for k in {*quick, *report}}
    return found


def undescribed(own_only: bool = False) -> list[str]:
    """The keys of a config whose model gives no description (the config reference would
    name them and say nothing): of the top level, an entry, and every model under them."""
    schema, _ = config_schema(own_only)
    missing = [key for key, field in schema["properties"].items() if not field.get("description")]
    for key in ("environment", "backends", "workloads"):
        missing += [f"{key}[].{k}" for k, f in _mapping(schema["properties"][key])["properties"].items()
                    if not f.get("description")]
    for model, body in schema["$defs"].items():
        for branch in (body, *body.get("anyOf", ())):
            missing += [f"{model}.{k}" for k, f in (branch.get("properties") or {}).items() if not f.get("description")]
    return missing


def _mapping(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry of the top level as a mapping (not its name alone, nor null)."""
    for branch in entry.get("anyOf", ()):
        if branch.get("type") == "array":
            return _mapping(branch["items"])
        if branch.get("type") == "object":
            return branch
    raise KeyError("no mapping")


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
    for chosen in _mapping(entry).get("allOf", ()):
        said = chosen["if"]["properties"]
        yield (said.get("name") or said.get("kind"))["const"], chosen["then"]["properties"]["options"]


def _resolve(field: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = field.get("$ref")
    return defs[ref.rsplit("/", 1)[1]] if isinstance(ref, str) else field


def _table(model: dict[str, Any], defs: dict[str, Any], prefix: str, flat: tuple[str, ...] = (),
           scaled: dict[str, tuple[Any, Any]] | None = None) -> list[str]:
    """A model's keys as rows of a table, with the keys of the models under each (a
    mapping's under ``key.``, a list's items under ``key[].``, a mapping of them by name
    under ``key.NAME.``), but for the keys in ``flat``; ``scaled``: defaults by scale."""
    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    required = set(model.get("required") or ())
    body = next((b for b in (model, *model.get("anyOf", ())) if b.get("properties")), model)
    for key, field in (body.get("properties") or {}).items():
        if key in (scaled or {}):
            quick, report = (scaled or {})[key]
            default = f"quick: {_value(quick)}; report: {_value(report)}"
        else:
            default = "required" if key in required else _value(field.get("default", _NONE))
        rows.append(f"| `{prefix}{key}` | {_type(field, defs)} | {default} | {_cell(field.get('description', ''))} |")
        if key in flat:
            continue
        for ref in dict.fromkeys(_refs(field)):
            sub = defs[ref]
            if sub.get("properties") or any(b.get("properties") for b in sub.get("anyOf", ())):
                rows += _table(sub, defs, f"{prefix}{key}{_under(field, ref)}.")[2:]
        if "propertyNames" in field and "enum" in field["propertyNames"]:
            rows.append(f"| `{prefix}{key}.NAME` | | | NAME one of {_words(field['propertyNames']['enum'])} |")
    return rows


_NONE = object()  # (no default: one the code fills, said in the description)


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
        return _words(field["enum"], " \\| ")
    if "const" in field:
        return _words([field["const"]])
    kind = field.get("type", "any")
    if kind == "array":
        return f"list of {_type(field.get('items', {}), defs)}"
    if kind == "object":
        return "mapping"
    if kind == "string" and field.get("pattern") and "[KkMm" in field["pattern"]:
        return "size"
    if kind == "string" and field.get("pattern") and "[Uu][Ss]" in field["pattern"]:
        return "latency"
    return {"integer": "integer", "number": "number", "string": "text", "boolean": "true/false"}.get(kind, kind)


def _words(values: list[Any], between: str = ", ") -> str:
    return between.join(_code(v if isinstance(v, str) else json.dumps(v)) for v in values)


def _value(v: Any) -> str:
    """A default as the page shows it: the JSON a config would hold (none: —)."""
    return "—" if v is _NONE else _code(json.dumps(v, ensure_ascii=False))


def _code(text: str) -> str:
    """Text as code on the page, whatever it holds (a plugin's words are a stranger's)."""
    text = " ".join(text.split()).replace("`", "'").replace("|", "\\|")
    return f"`{text}`"


def _cell(text: str) -> str:
    """Prose in a table's cell: one line, no markup of its own (a plugin's words may hold
    any, and the page is HTML once built)."""
    text = " ".join(text.split())
    for raw, shown in (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("`", "'"),
                       ("[", "\\["), ("]", "\\]"), ("*", "\\*")):
        text = text.replace(raw, shown)
    return text


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


# --- the flags ------------------------------------------------------------------------------

def flags_page() -> str:
    """Every flag a figure can carry, as the tables print it: its letter, its name, what it
    means, and whether a cell with it names a winner."""
    from harness.api.records import FLAGS

    out = ["# Flags", "",
           "Generated from the code (`scripts/reference.py`): a letter in brackets after a figure says why the "
           "figure is not what it seems; the line under each table says it again. A flag that makes a cell unfit "
           "for a verdict turns its comparison into `not comparable: WHY [LETTER]`: that cell names no winner.", "",
           "| flag | name | what it means | names a winner |", "|---|---|---|---|"]
    for name, flag in sorted(FLAGS.items(), key=lambda kv: kv[1].code):
        verdict = f"no: 'not comparable: {_cell(flag.unfit)}'" if flag.unfit else "yes"
        out.append(f"| `[{flag.code}]` | `{name}` | {_cell(flag.meaning)} | {verdict} |")
    return "\n".join(out) + "\n"


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
