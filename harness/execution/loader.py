"""A config file read as hostile input, into a plain mapping (harness.execution.plan validates
it): the file's size bounded; YAML's safe loader only (no tags that build objects); and refused,
before anything is built from it, a document that expands past a bound through anchors and
aliases, nests too deep, refers to itself, says one key twice in a mapping or holds a plain
number in base 60."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import BadInput
from harness.system import files

MAX_VALUES = 100_000  # what a config may expand to: aliases repeat a node without copying it
MAX_DEPTH = 64  # mappings and lists inside each other; a config needs five or six
MAX_CONFIG_BYTES = 128 << 10  # a config is a few dozen keys; 128 KiB is thousands of lines (and
# YAML, parsed in Python, takes about a second for that much)


def _check_nodes(root: yaml.Node, name: str) -> None:
    """Refuse, before anything is built from it, a YAML document that expands to more
    than :data:`MAX_VALUES` values (aliases and merge keys nested in each other: a
    'billion laughs' is counted on the graph, never copied), nests deeper than
    :data:`MAX_DEPTH`, refers to itself, says one key twice in a mapping (YAML would keep
    the last one silently) or holds a plain ``1:30`` (YAML 1.1 reads it as 90, in base 60)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            kids = _children(node)
            size[key] = min(1 + sum(size[id(k)] for k in kids), MAX_VALUES + 1)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > MAX_VALUES:
                raise BadInput(f"{name} expands to more than {MAX_VALUES:,} values (YAML anchors and "
                               "aliases nested in each other?)", hint="a config is a few dozen keys; "
                               "write it out plainly")
            if depth[key] > MAX_DEPTH:
                raise BadInput(f"{name} nests lists and mappings more than {MAX_DEPTH} deep "
                               f"(line {node.start_mark.line + 1})", hint="a config is a few levels deep")
            continue
        if key in size:
            continue
        if key in open_:
            raise BadInput(f"{name} refers to itself (an alias inside its own anchor, line "
                           f"{node.start_mark.line + 1})", hint="write the value out")
        open_.add(key)
        stack.append((node, True))
        if isinstance(node, yaml.MappingNode):
            _no_duplicates(node, name)
        elif isinstance(node, yaml.ScalarNode) and node.style is None and ":" in node.value and \
                node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
            raise BadInput(f"{name}, line {node.start_mark.line + 1}: {node.value} is read by YAML as a "
                           "number in base 60", hint=f"quote it ('{node.value}') if it is text; "
                           "write a duration in seconds and a size with its unit")
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _no_duplicates(node: yaml.MappingNode, name: str) -> None:
    """Keys compared as YAML reads them (``yes`` and ``true`` are one key, ``1`` and
    ``'1'`` two); the merge key ``<<`` is not a key."""
    seen: dict[Any, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        line = key.start_mark.line + 1
        try:
            value = yaml.SafeLoader("").construct_object(key)
            ident: Any = (type(value).__name__, value)
            hash(ident)
        except Exception:  # (a key YAML cannot build is refused when the document is built)
            ident = ("text", key.value)
        if ident in seen:
            raise BadInput(f"{name}: the key '{files.printable(key.value)}' is given twice in one mapping "
                           f"(lines {seen[ident]} and {line})",
                           hint="YAML would keep only the last one; say it once")
        seen[ident] = line


def load_yaml(path: Path) -> dict[str, Any]:
    text = files.read_text(path, "config", MAX_CONFIG_BYTES)
    name = files.printable(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is None:
            return {}
        _check_nodes(root, name)
        data = yaml.SafeLoader("").construct_document(root)
    except RecursionError:
        raise BadInput(f"{name} nests lists and mappings more than {MAX_DEPTH} deep",
                       hint="a config is a few levels deep") from None
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:  # a value YAML cannot build
        raise BadInput(f"{name}: a value YAML cannot read: {files.printable(str(exc))}",  # (e.g. 2024-02-30)
                       hint="quote it if it is text") from None
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadInput(f"{name} is not valid YAML{where}: {files.printable(problem)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput(f"{name}: the top level must be a mapping of keys "
                       f"(environment, scale, repeat, backends, workloads), not {type(data).__name__}")
    return data
