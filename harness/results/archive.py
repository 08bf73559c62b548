"""A bundle's archive (harness.results.bundle): its members' names and limits, its manifest's
one sum, and reading a bundle back into checked members.

A bundle is a stranger's input. It is read as a stream (never extracted by the archive's
own names): each member must be a regular file of a known name whose every part is a name
(:mod:`harness.system.names`), of at most :data:`MAX_MEMBER` bytes, in all at most
:data:`MAX_TOTAL` bytes unpacked, counted as they are decompressed; each is written under a
temporary directory by a name of our own, and its sum set against what the manifest says.
Its JSON is read strictly (:func:`strict_decode`): no NaN, no key twice, no number SQLite
cannot hold."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import BadInput
from harness.results.store import Store
from harness.system import files
from harness.system.files import printable
from harness.system.names import named_path
from harness.units import size as size_text

FORMAT = "dfsbench-bundle"
VERSION = 1
MANIFEST, RUN, RECORDS, RAW = "manifest.json", "run.json", "records.jsonl", "raw"
MAX_MEMBER = 512 << 20  # a raw output (fio's json+ of a long run is tens of MiB)
MAX_TOTAL = 4 << 30  # unpacked, headers and padding included
MAX_MEMBERS = 20_000
MAX_DEPTH = 8  # parts of a raw output's path under raw/
MAX_JSON = 8 << 20  # run.json and the manifest (what they decode to is held whole: some 25× as much)
MAX_HEADER = 1 << 20  # an archive's own header (a long name, PAX attributes), which the reader holds whole
PART_RULE = "letters, digits, '_', '.' and '-', at most 255, not starting with '.' or '-'"


@dataclass
class Member:
    name: str
    path: Path  # where its bytes are, in the temporary directory
    sha256: str
    size: int


@dataclass
class Opened:
    """What a bundle holds, read and checked: its members' sums against its manifest, and
    its run through a temporary store (``store``; ``problems``: what differs or is wrong —
    none, and the bundle is what its manifest says)."""

    members: dict[str, Member]
    manifest: dict[str, Any]
    sha256: str  # of the manifest as found, without its own 'sha256'
    problems: list[str] = field(default_factory=list)
    expected: bool = False  # set against a published sum (verify --expect)
    readable: bool = True  # a manifest of this format and version: its run can be read
    store: Store | None = None
    run_id: str = ""

    @property
    def raw(self) -> list[Member]:
        return [m for name, m in sorted(self.members.items()) if name.startswith(RAW + "/")]


def canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def whole_sum(manifest: dict[str, Any]) -> str:
    """The bundle's one sum: of its manifest's canonical JSON, without ``sha256`` itself."""
    return hashlib.sha256(canonical({k: v for k, v in manifest.items() if k != "sha256"})).hexdigest()



class _Info(tarfile.TarInfo):
    """An archive header read with a bound on what the archive reader holds in memory at
    once: a long-name or PAX header of more than :data:`MAX_HEADER` bytes, or a sparse
    member, is refused before it is read."""

    def _big(self, what: str) -> None:
        if self.size > MAX_HEADER:
            raise BadInput(f"a bundle's {what} of {size_text(self.size)} (more than {size_text(MAX_HEADER)}): "
                           "not a bundle dfsbench wrote", hint="nothing of it was read")

    def _proc_pax(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        self._big("PAX header")
        return super()._proc_pax(tarfile)  # type: ignore[misc]

    def _proc_gnulong(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        self._big("long name")
        return super()._proc_gnulong(tarfile)  # type: ignore[misc]

    def _proc_sparse(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        raise BadInput("a bundle's member is a sparse file: not a bundle dfsbench wrote", hint="nothing of it was read")


class _Limited(io.RawIOBase):
    """A stream that refuses to give more than ``limit`` bytes: what the archive reader may
    decompress, headers and padding included (a small file that unpacks to a disk's worth
    stops here)."""

    def __init__(self, inner: Any, limit: int, shown: str) -> None:
        self.inner, self.left, self.shown = inner, limit, shown

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = len(buffer)
        data = self.inner.read(min(want, self.left + 1))
        if len(data) > self.left:
            raise BadInput(f"bundle {self.shown} unpacks to more than {size_text(MAX_TOTAL)}: "
                           "not a bundle dfsbench reads", hint="a bundle this large is not one dfsbench wrote")
        self.left -= len(data)
        buffer[:len(data)] = data
        return len(data)


def member_name_flaw(name: str) -> str:
    """'' for a member a bundle may hold, else why it may not."""
    if name in (MANIFEST, RUN, RECORDS):
        return ""
    parts = name.split("/")
    if parts[0] != RAW or len(parts) < 2:
        return f"not one of {MANIFEST}, {RUN}, {RECORDS} or {RAW}/…"
    if len(parts) > MAX_DEPTH + 1:
        return f"deeper than {MAX_DEPTH} directories under {RAW}/"
    for part in parts[1:]:
        try:
            named_path(Path("."), part)
        except BadInput:
            return f"its part '{printable(part, 80)}' is not a name ({PART_RULE})"
    return ""


def _kind(info: tarfile.TarInfo) -> str:
    return ("a symbolic link" if info.issym() else "a hard link" if info.islnk() else "a directory"
            if info.isdir() else "a device" if info.ischr() or info.isblk() else "a FIFO" if info.isfifo()
            else "not a regular file")


def open_bundle(path: Path, tmp: Path) -> Opened:
    """Read the bundle at ``path`` into ``tmp``: every member checked as it streams by
    (BadInput for a bundle that cannot be read at all: not a gzip'd tar, a member of a kind
    or name no bundle holds, too large), then its sums against its manifest (what differs
    is in ``problems``)."""
    shown = printable(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise BadInput(f"cannot read bundle {shown}: {exc.strerror}") from None
    if not os.path.isfile(path) or not (st.st_mode & 0o170000) == 0o100000:
        raise BadInput(f"bundle {shown} is not a regular file", hint="give the path of a file 'dfsbench export' wrote")
    members: dict[str, Member] = {}
    total = 0
    try:
        with open(path, "rb") as f, gzip.GzipFile(fileobj=f, mode="rb") as gz, \
                io.BufferedReader(_Limited(gz, MAX_TOTAL, shown)) as limited, \
                tarfile.open(fileobj=limited, mode="r|", tarinfo=_Info) as tar:
            for info in tar:
                name = info.name
                where = f"bundle {shown}: member '{printable(name, 120)}'"
                if info.sparse is not None:
                    raise BadInput(f"{where} is a sparse file; a bundle holds plain files only",
                                   hint="no dfsbench wrote this bundle; nothing of it was read")
                if not info.isreg():
                    raise BadInput(f"{where} is {_kind(info)}; a bundle holds regular files only",
                                   hint="no dfsbench wrote this bundle; nothing of it was read")
                why = member_name_flaw(name)
                if why:
                    raise BadInput(f"{where}: {why}", hint="no dfsbench wrote this bundle; nothing of it was read")
                if name in members:
                    raise BadInput(f"{where} is there twice", hint="no dfsbench wrote this bundle")
                if len(members) >= MAX_MEMBERS:
                    raise BadInput(f"bundle {shown} holds more than {MAX_MEMBERS:,} members")
                if info.size > MAX_MEMBER or total + info.size > MAX_TOTAL:
                    raise BadInput(f"{where} is {size_text(info.size)}: more than a bundle's member "
                                   f"({size_text(MAX_MEMBER)}) or its whole ({size_text(MAX_TOTAL)})")
                total += info.size
                source = tar.extractfile(info)
                assert source is not None
                target = tmp / f"m{len(members)}"  # (our name, never the archive's)
                h, size = hashlib.sha256(), 0
                with target.open("wb") as out:
                    while chunk := source.read(min(1 << 20, info.size + 1 - size)):
                        size += len(chunk)
                        if size > info.size:  # (never more than its header said)
                            raise BadInput(f"{where} holds more than its header says")
                        h.update(chunk)
                        out.write(chunk)
                members[name] = Member(name, target, h.hexdigest(), size)
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile, ValueError) as exc:
        raise BadInput(f"bundle {shown} cannot be read: {printable(str(exc), 200)}",
                       hint="give a file 'dfsbench export' wrote (a gzip'd tar), whole") from None
    directories = {"/".join(name.split("/")[:i]) for name in members for i in range(1, name.count("/") + 1)}
    both = sorted(directories & set(members))
    if both:  # ('raw/a' a file and 'raw/a/b' a file under it: a path that is both)
        raise BadInput(f"bundle {shown}: member '{printable(both[0], 120)}' is a file and a directory of others",
                       hint="no dfsbench wrote this bundle; nothing of it was read")
    if MANIFEST not in members:
        raise BadInput(f"bundle {shown} has no {MANIFEST}: not a bundle dfsbench wrote")
    manifest = strict_json(members[MANIFEST].path, f"bundle {shown}: {MANIFEST}", dict)
    opened = Opened(members, manifest, "")
    opened.problems = _manifest_problems(opened)
    return opened


def _manifest_problems(opened: Opened) -> list[str]:
    m = opened.manifest
    problems = []
    if m.get("format") != FORMAT or not isinstance(m.get("version"), int) or isinstance(m.get("version"), bool) \
            or m.get("version") != VERSION:
        opened.readable = False
        return [f"its manifest is not a {FORMAT} of version {VERSION} (format "
                f"{printable(repr(m.get('format')), 40)}, version {printable(repr(m.get('version')), 20)})"]
    try:
        opened.sha256 = whole_sum(m)
    except (TypeError, ValueError):
        return ["its manifest holds a value JSON has no number for"]
    listed = m.get("members")
    if not isinstance(listed, list) or not all(
            isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("sha256"), str)
            and isinstance(e.get("bytes"), int) for e in listed):
        return ["its manifest's members are not a list of {name, sha256, bytes}"]
    if m.get("sha256") != opened.sha256:
        problems.append(f"its manifest's own SHA-256 says {printable(str(m.get('sha256')), 70)}, but what the "
                        f"manifest holds sums to {opened.sha256}: the manifest was changed after export")
    said = {}
    for e in listed:
        if e["name"] in said or e["name"] == MANIFEST:
            problems.append(f"its manifest lists '{printable(e['name'], 120)}' "
                            + ("twice" if e["name"] in said else "(itself)"))
        said[e["name"]] = e
    for name, e in said.items():
        found = opened.members.get(name)
        if found is None:
            problems.append(f"'{printable(name, 120)}' is in the manifest but not in the bundle")
        elif found.sha256 != e["sha256"] or found.size != e["bytes"]:
            problems.append(f"'{printable(name, 120)}' differs from what the manifest says: SHA-256 "
                            f"{found.sha256}, {found.size:,} bytes; the manifest says "
                            f"{printable(e['sha256'], 70)}, {e['bytes']:,} bytes")
    for name in sorted(set(opened.members) - set(said) - {MANIFEST}):
        problems.append(f"'{printable(name, 120)}' is in the bundle but not in its manifest")
    return problems


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for k, v in pairs:
        if k in found:
            raise ValueError(f"the key '{printable(k, 60)}' is there twice")
        found[k] = v
    return found


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond a double's range")
    return value


def _whole(text: str) -> int:
    if len(text) > 20 or not -(1 << 63) <= int(text) < 1 << 63:
        raise ValueError(f"{text[:40]} is beyond 64 bits")
    return int(text)


_STRICT = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_unique, parse_float=_finite,
                           parse_int=_whole)


def strict_decode(text: str) -> Any:
    """JSON as the standard has it: no NaN or Infinity, no key twice in an object; and no
    number a double or SQLite cannot hold (1e400, a whole number beyond 64 bits)."""
    value, end = _STRICT.raw_decode(text)
    if text[end:].strip():
        raise ValueError("more after the JSON value")
    return value


def strict_json(path: Path, what: str, kind: type) -> Any:
    text = files.read_text(path, what, MAX_JSON)
    try:
        value = strict_decode(text)
    except (ValueError, RecursionError) as exc:
        raise BadInput(f"{what} is not strict JSON: {printable(str(exc), 120)}",
                       hint="no dfsbench wrote this bundle") from None
    if not isinstance(value, kind):
        raise BadInput(f"{what} is not a JSON {'object' if kind is dict else 'array'}")
    return value

