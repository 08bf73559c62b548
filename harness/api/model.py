"""The base of every model a config is read into: what no field of any config may hold.

A value of the right type can still be nonsense: ``repeat: true`` (YAML's yes, which
Python counts as 1), a deadline of ``.inf``, an empty list of file sizes (a matrix of no
cells), the same size twice (one cell run and pooled twice), a size no disk holds. Each
field says what it admits; these rules hold for every field of every plugin, so no plugin
has to remember them:

- a number is a number: a yes/no is refused where a number or a list of numbers is asked;
- no float is infinite or NaN;
- a field named ``*_s`` is seconds, and at most :data:`MAX_SECONDS`;
- a list is not empty where its default is not (an empty matrix makes no cells), and no
  item is in it twice — as the field reads it (``64MiB`` and ``65536KiB`` are one size, ``4``
  and ``4.0`` one number): :func:`twice` finds them, here and in a sweep's lists;
- no text holds a control character (a line break, a tab, an escape, a mark that reverses
  the text after it): every value of a config is one line of printable text, and is stored and shown as it was given.
"""

from __future__ import annotations

import json
import types
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator

from harness.units import parse_rate, rate, size

MAX_SECONDS = 7 * 86400  # a deadline, a duration or a wait of a week is not a benchmark's
# what a size in a config may be: more than any file, device or OSD a benchmark makes
MAX_BYTES = 1 << 50
# the slowest link a config may declare or shape (B/s): 1 kbit/s; below it, a rate is a typo
# ('0.1bit' would shape a link to nothing, and every ceiling would be 0)
MIN_LINK = 1000 / 8


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _numeric(tp: Any) -> bool:
    """Whether a field of type ``tp`` takes only numbers (int or float, optionally None)."""
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        kinds = [_unwrap(a) for a in get_args(tp) if a is not type(None)]
        return bool(kinds) and all(k in (int, float) for k in kinds)
    return tp in (int, float)


def _numeric_items(tp: Any) -> bool:
    """Whether a field of type ``tp`` is a list (or tuple, set) of numbers, optionally None."""
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return any(_numeric_items(a) for a in get_args(tp) if a is not type(None))
    return get_origin(tp) in (list, tuple, set, frozenset) and any(_numeric(a) for a in get_args(tp))


def _item_key(tp: Any) -> Callable[[Any], Any] | None:
    """The :class:`SameAs` key of the items of a list type, if its item type has one."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        return next((k for a in get_args(tp) if (k := _item_key(a)) is not None), None)
    if get_origin(tp) not in (list, tuple, set, frozenset):
        return None
    for item in get_args(tp):
        same = [m for m in getattr(item, "__metadata__", ()) if isinstance(m, SameAs)]
        if same:
            return same[-1].key
    return None


def _canonical(item: Any) -> Any:
    """An item as it compares: a model by its fields, a whole float as its integer."""
    if isinstance(item, BaseModel):
        item = item.model_dump(mode="json")
    if isinstance(item, float) and item.is_integer():
        return int(item)
    if isinstance(item, dict):
        return {str(k): _canonical(v) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        return [_canonical(v) for v in item]
    return item


def _same(item: Any) -> str:
    return json.dumps(_canonical(item), sort_keys=True, default=str)


@dataclass(frozen=True)
class SameAs:
    """In a type's ``Annotated`` metadata: what an item of the type is compared by in a list
    (:func:`twice`), where its text is kept as given but two spellings name one thing
    (a host: ``FD00:0::5`` is ``fd00::5``)."""

    key: Callable[[Any], Any]


def twice(items: list[Any], key: Callable[[Any], Any] | None = None) -> tuple[int, int] | None:
    """The places (first, second) of the first item that is in ``items`` twice, each item
    compared as parsed into its type (give them validated: a size in bytes, a rate in B/s),
    or by ``key`` of it; None: each is there once. A value twice in a list of a config is
    one cell (or one point) run twice and pooled as if it were a repeat."""
    seen: dict[str, int] = {}
    for j, item in enumerate(items):
        first = seen.setdefault(_same(item if key is None else key(item)), j)
        if first != j:
            return first, j
    return None


# what turns the order of the text that follows it around on a terminal (U+202E: a name that
# reads 'exe.txt' ends in 'txt.exe'), as a control character changes the terminal itself
# (Unicode's bidirectional embeddings, overrides and isolates, and its three directional marks)
_REORDERING = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})
_MARKS = frozenset("\u200e\u200f\u061c")


def control_character(text: str) -> bool:
    """Whether ``text`` — a value of a config, or one given on the command line to be
    stored (a run's label) — holds a control character (a line break, a tab, an escape) or
    a mark that reorders the text around it (U+202E); none of them is kept anywhere."""
    return any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c in _MARKS or unicodedata.bidirectional(c) in _REORDERING
               for c in text)


def _control(value: Any, where: str) -> str | None:
    """Where in ``value`` (a config's text, or lists and mappings of it) a control character is."""
    if isinstance(value, str):
        return where if control_character(value) else None
    if isinstance(value, dict):
        items = [(f"{where}.{k}", k) for k in value] + [(f"{where}.{k}", v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{where}[{j}]", v) for j, v in enumerate(value)]
    else:
        return None
    return next((found for w, v in items if (found := _control(v, w)) is not None), None)


def shown(item: Any, key: str) -> str:
    """An item of the list ``key`` of a config, as a person reads it (a size in binary units)."""
    if "size" in key and isinstance(item, int) and not isinstance(item, bool) and item >= 1024:
        return size(item)
    return str(item) if not isinstance(item, BaseModel) else _same(item)


class ConfigModel(BaseModel):
    """Unknown keys are refused, and the rules above hold."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    # lists whose items the model compares by a rule of its own (e.g. a backend by its name
    # and variant, not by all its options)
    own_duplicates: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _no_yes_for_a_number(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for key, value in data.items():
            where = _control(key, str(key)) or _control(value, str(key))
            if where is not None:  # (the message names it as given; the CLI shows it escaped)
                raise ValueError(f"{where}: a control character (a line break, a tab?) in a key or a value: "
                                 "each of a config is one line of printable text; remove it")
            f = cls.model_fields.get(key) if isinstance(key, str) else None
            if f is None:
                continue
            if isinstance(value, bool) and _numeric(f.annotation):
                raise ValueError(f"{key}: {str(value).lower()} is a yes/no, and {key} is a number")
            if isinstance(value, list) and _numeric_items(f.annotation):
                for i, item in enumerate(value):
                    if isinstance(item, bool):
                        raise ValueError(f"{key}[{i}]: {str(item).lower()} is a yes/no, and {key} "
                                         "holds numbers")
        return data

    @model_validator(mode="after")
    def _sane(self) -> Any:
        for key, f in type(self).model_fields.items():
            value = getattr(self, key)
            if key.endswith("_s") and isinstance(value, (int, float)) and value > MAX_SECONDS:
                raise ValueError(f"{key}: {value:g} s is more than a week ({MAX_SECONDS} s), the most "
                                 "a benchmark's time may be")
            if isinstance(value, (list, tuple)):
                if not value and (f.is_required() or f.get_default(call_default_factory=True)):
                    raise ValueError(f"{key}: an empty list makes nothing to run; leave {key} out "
                                     "for its default, or give one or more values")
                found = twice(list(value), _item_key(f.annotation)) if key not in self.own_duplicates else None
                if found is not None:
                    item = value[found[1]]
                    raise ValueError(f"{key}: {shown(item, key)} is given twice; each would be run and "
                                     "pooled as if it were a repeat")
        return self


def link_rate(text: str) -> str:
    """A link's rate as a config gives it ('1Gbit', '125MB/s'): at least :data:`MIN_LINK`,
    at most :data:`MAX_BYTES` per second (ValueError naming both, else)."""
    if not MIN_LINK <= parse_rate(text) <= MAX_BYTES:
        raise ValueError(f"{text} is no link's rate: at least 1 kbit/s ({rate(MIN_LINK)}), and at most 1 PB/s")
    return text


def bytes_bound(value: int) -> int:
    """A size in a config: at most :data:`MAX_BYTES`."""
    if value > MAX_BYTES:
        raise ValueError(f"{size(value)} is more than any disk holds (the most is {size(MAX_BYTES)})")
    return value


# a field whose value names something of the site a config ran on — a path, a device, a
# host — rather than the work: ``Field(..., json_schema_extra=SITE)``. A config run again on
# another site (``run --like``) must not carry one (:func:`site_given`).
SITE: dict[str, Any] = {"site": True}


def site_given(cls: type[BaseModel], data: Any, where: str) -> list[str]:
    """Where the raw ``data`` a model of ``cls`` would be read from (a stranger's, not yet
    validated: a validator may read a file a field names) sets a :data:`SITE` field, by
    any name the field is read by, and the models in it (alone, in a list, or as a
    mapping's values): 'WHERE.FIELD = VALUE' each (the value as JSON, which escapes what is
    not printable, cut short; nothing else is done with it)."""
    found: list[str] = []
    if not isinstance(data, dict):
        return found
    for name, info in cls.model_fields.items():
        for key in (k for k in _read_as(name, info) if k in data):
            value = data[key]
            extra = info.json_schema_extra
            if isinstance(extra, dict) and extra.get("site") and value is not None \
                    and value != info.get_default(call_default_factory=True):
                found.append(f"{where}.{name} = {_shown(value)}")
            items = list(_objects(value, _mapping(info.annotation)))
            for inner in _models_in(info.annotation):
                for item in items:
                    found += site_given(inner, item, f"{where}.{name}")
    return list(dict.fromkeys(found))


def _read_as(name: str, info: Any) -> list[str]:
    """Every key a field is read by: its name, its alias, its validation aliases."""
    keys = [name, info.alias]
    chosen = info.validation_alias
    keys += [c for c in getattr(chosen, "choices", [chosen]) if isinstance(c, str)]
    return [k for k in dict.fromkeys(keys) if isinstance(k, str)]


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (ValueError, TypeError, RecursionError):
        text = f"(a {type(value).__name__})"
    return text if len(text) <= 160 else text[:159] + "…"


def _objects(value: Any, mapping: bool, depth: int = 0) -> Iterator[dict[str, Any]]:
    """The objects a value holds that a model may be read from: itself, those in its lists,
    and (``mapping``: a field whose type is or holds a mapping) its values — at any depth."""
    if depth > 16:  # (no config nests deeper; a stranger's may)
        return
    if isinstance(value, dict):
        yield value
        if mapping:
            for v in value.values():
                yield from _objects(v, mapping, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v, mapping, depth + 1)


def _mapping(annotation: Any) -> bool:
    """Whether a field's type is (or may be) a mapping, whose values are read as models."""
    return get_origin(annotation) is dict or any(_mapping(arg) for arg in get_args(annotation))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The model classes a field's type names (itself, in a list or a mapping, optional, or
    one of a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return list(dict.fromkeys(m for arg in get_args(annotation) for m in _models_in(arg)))
