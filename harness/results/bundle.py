"""A run that travels: one file holding a stored run whole, which another site verifies,
imports beside its own runs, and runs again on its own cluster (``dfsbench export``,
``verify``, ``import FILE``, ``run --like FILE``).

A bundle is a gzip'd tar of regular files:

- ``run.json``: the run as stored — its id, times, status, label, the config as it ran
  (after defaults), its config hash, the host's facts (the dfsbench and tool versions
  among them), each attachment's description (the systems' facts) and each cell's outcome;
- ``records.jsonl``: every record, one JSON object a line (the record as the contract has
  it, its cell, and its figure over time, if any);
- ``raw/…``: the run's raw tool outputs, by their paths under the run's raw directory;
- ``manifest.json``: the format, the dfsbench that exported it, whose host and when, each
  other member's SHA-256 and size, and ``sha256``: the SHA-256 of the manifest's own
  canonical JSON without that key — one sum that changes with any byte of the run. It is
  the figure a vendor publishes beside its results; ``verify --expect`` checks a bundle
  against it. (A bundle whose every sum was made again after a change is consistent; only
  the published sum tells it from the one exported.)

The archive itself — its members, their limits and sums, and reading it back as a
stranger's stream — is :mod:`harness.results.archive`. Here a bundle's run is exported
from a store, and read back: through a temporary store — written by the store's own
writer, read back by its own reader, with every check a damaged store gets
(:mod:`harness.results.store`) — before anything reaches the user's store."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import secrets
import shutil
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from harness import __version__
from harness.api.records import Measurement
from harness.api.series import SOURCES, Series
from harness.errors import BadInput, DfsbenchError
from harness.results import reference
from harness.results.archive import (FORMAT, MANIFEST, MAX_MEMBER, MAX_MEMBERS, MAX_TOTAL, RAW, RECORDS, RUN, VERSION,
                                     Opened, canonical, member_name_flaw, open_bundle, strict_decode, strict_json,
                                     whole_sum)
from harness.results.schema import DB_NAME, RunInfo
from harness.results.store import Store
from harness.system import files
from harness.system.files import printable
from harness.system.names import RULE, is_name, named_path
from harness.units import size as size_text

MAX_LINE = 16 << 20  # a line of records.jsonl: a record and its series (a day of seconds is some 3 MiB)


# -- writing ----------------------------------------------------------------------------

def _run_doc(store: Store, run_id: str) -> dict[str, Any]:
    info = store.run(run_id)
    return {"id": info.id, "started": info.started, "finished": info.finished, "status": info.status,
            "label": info.label, "source": info.source, "config": info.config, "config_hash": info.config_hash,
            "host": info.host, "targets": [list(t) for t in store.target_descriptions(run_id)],
            "cells": [list(c) for c in store.cell_rows(run_id)]}


def _record_lines(store: Store, run_id: str) -> Iterator[bytes]:
    for m, cell in store.records_with_cells(run_id):
        line = {"record": m.to_dict(), "cell": cell, "series": m.series.to_dict() if m.series else None}
        yield canonical(line) + b"\n"


def _raw_files(store: Store, run_id: str) -> list[tuple[str, Path]]:
    """The run's raw outputs: (name in the bundle, path), regular files only (a link in a
    raw directory is not followed, nor carried). A part of a path that is not a name (a
    client's IPv6 address, a job file's space) is carried as :func:`host_part` writes it,
    so that the bundle holds only names; a run whose raw outputs are more than a bundle
    carries is refused, saying which."""
    top = named_path(store.root / "raw", run_id)
    found: list[tuple[str, Path]] = []
    taken: dict[str, Path] = {}
    total = 0
    for here, dirs, names in os.walk(top):
        dirs.sort()
        for name in sorted(names):
            path = Path(here) / name
            if not path.is_file() or path.is_symlink():
                continue
            parts = [p if member_name_flaw(f"{RAW}/{p}") == "" else _escaped(p) for p in path.relative_to(top).parts]
            member = "/".join((RAW, *parts))
            if member in taken:
                raise BadInput(f"run {run_id}: its raw outputs {printable(path)} and {printable(taken[member])} "
                               f"would travel under one name ({printable(member)})", hint="nothing was written")
            taken[member] = path
            bytes_ = path.stat().st_size
            total += bytes_
            if member_name_flaw(member) or bytes_ > MAX_MEMBER or total > MAX_TOTAL or len(found) >= MAX_MEMBERS:
                raise BadInput(f"run {run_id}: its raw output {printable(path)} cannot travel in a bundle: "
                               + (member_name_flaw(member) or f"a bundle carries at most {size_text(MAX_MEMBER)} a "
                                  f"file, {size_text(MAX_TOTAL)} and {MAX_MEMBERS:,} files in all"),
                               hint="nothing was written")
            found.append((member, path))
    return found


def _escaped(part: str) -> str:
    """A file name as a name: its bytes (as the file system has them, UTF-8 or not) kept
    where they are a DNS name's, any other as '_' and two hex digits (:func:`host_part`'s
    rule), cut to 255."""
    raw = os.fsencode(part)
    kept = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-"
    return "".join(chr(b) if b in kept and (i or chr(b) not in ".-") else f"_{b:02x}"
                   for i, b in enumerate(raw))[:255]


def export(store: Store, run_id: str, out: Path, refused: dict[Path, str]) -> tuple[str, dict[str, int]]:
    """Write the run ``run_id`` of ``store`` as a bundle at ``out`` (written beside it, then
    renamed: a bundle half written is never left under its name). Its sum and counts."""
    files.check_output(out, "bundle", refused)
    with tempfile.TemporaryDirectory(prefix="dfsbench-export-") as tmp:
        parts: list[tuple[str, Path]] = []
        run_path = Path(tmp) / RUN
        run_path.write_bytes(canonical(_run_doc(store, run_id)))
        rec_path = Path(tmp) / RECORDS
        n = 0
        with rec_path.open("wb") as f:
            for line in _record_lines(store, run_id):
                f.write(line)
                n += 1
        parts += [(RUN, run_path), (RECORDS, rec_path), *_raw_files(store, run_id)]
        members = []
        for name, path in parts:
            digest, size = _file_sum(path)
            members.append({"name": name, "sha256": digest, "bytes": size})
        manifest: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "dfsbench": __version__, "run_id": run_id,
            "exported": {"at": time.time(), "host": os.uname().nodename}, "members": members}
        manifest["sha256"] = whole_sum(manifest)
        partial = out.with_name(f".{out.name}.part-{os.getpid()}")
        try:
            with partial.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                _add(tar, MANIFEST, canonical(manifest))
                for name, path in parts:
                    with path.open("rb") as f:
                        _add(tar, name, f, path.stat().st_size)
            os.replace(partial, out)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise
    return manifest["sha256"], {"records": n, "raw": len(parts) - 2}


def _add(tar: tarfile.TarFile, name: str, data: bytes | IO[bytes], size: int | None = None) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data) if isinstance(data, bytes) else int(size or 0)
    info.mode, info.mtime = 0o644, 0
    tar.addfile(info, io.BytesIO(data) if isinstance(data, bytes) else data)


def _file_sum(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


# what run.json and a record line hold: each key's kind ('?': or null)
_RUN_KINDS = {"id": "text", "started": "number", "finished": "number?", "status": "text", "label": "text?",
              "source": "text?", "config": "object", "config_hash": "text", "host": "object", "targets": "list",
              "cells": "list"}
_RECORD_KINDS = {"workload": "text", "test": "text", "metric": "text", "unit": "text", "params": "object",
                 "backend": "text", "variant": "text", "run_id": "text", "repeat": "whole", "flags": "list",
                 "value": "number?"}
_KINDS: dict[str, tuple[type, ...]] = {"text": (str,), "number": (int, float), "whole": (int,), "object": (dict,),
                                       "list": (list,)}


def kind_flaw(doc: dict[str, Any], kinds: dict[str, str]) -> str:
    """'' where ``doc`` holds each key of ``kinds`` as its kind (a bool is no number), else
    the first that it lacks or holds as another."""
    for key, kind in kinds.items():
        if key not in doc:
            return f"it has no '{key}'"
        value = doc[key]
        if value is None and kind.endswith("?"):
            continue
        if not isinstance(value, _KINDS[kind.rstrip("?")]) or isinstance(value, bool):
            return f"its '{key}' is {printable(repr(value), 60)}, not {kind.rstrip('?')}" + \
                (" or null" if kind.endswith("?") else "")
    return ""


def load_run(opened: Opened, tmp: Path, shown: str, check: Callable[[Store, str], None] | None) -> None:
    """The bundle's run, written to a temporary store under ``tmp`` by the store's own
    writer and read back by its reader, then read by ``check`` as the outputs read a stored
    run (``opened.store``); what is wrong with it is a problem of the bundle (its first,
    named). Whatever a stranger's run makes go wrong in that reading is said as such, never
    a traceback, and never as a damage of the user's store, which it does not touch."""
    for name in (RUN, RECORDS):
        if name not in opened.members:
            opened.problems.append(f"it has no {name}")
            return
    temporary = tmp / "store"
    try:
        store = _load(opened, temporary)
        if check is not None:
            check(store, opened.run_id)
    except DfsbenchError as exc:
        opened.problems.append("its run cannot be taken: "
                               + exc.message.replace(printable(temporary / DB_NAME), "its run"))
    except Exception as exc:  # (whatever a stranger's run makes the readers do: its problem, said as such)
        opened.problems.append(f"its run cannot be taken: reading it failed ({type(exc).__name__}: "
                               f"{printable(str(exc), 160)})")
    else:
        return
    if opened.store is not None:
        opened.store.close()
        opened.store = None


def _load(opened: Opened, temporary: Path) -> Store:
    run = strict_json(opened.members[RUN].path, RUN, dict)
    why = kind_flaw(run, _RUN_KINDS)
    if why:
        raise BadInput(f"{RUN}: {why}")
    if not is_name(run["id"]):
        raise BadInput(f"{RUN}: its run id '{printable(run['id'], 80)}' is not a name ({RULE})")
    if run["id"] in reference.names():
        raise BadInput(f"{RUN}: its run id {run['id']} is the name of a reference run dfsbench ships")
    if run["started"] > time.time() + 86400:  # ('latest' is the run started last)
        raise BadInput(f"{RUN}: it says it started at {run['started']:.0f}, in the future")
    if opened.manifest.get("run_id") != run["id"]:
        raise BadInput(f"{RUN}: its run id {run['id']} is not the manifest's "
                       f"({printable(repr(opened.manifest.get('run_id')), 80)})")
    opened.run_id = run["id"]
    store = opened.store = Store(temporary)
    with store.transaction():  # (one commit for all of it, not one a row: a temporary store)
        _adopt(opened, store, run)
    store.run(run["id"])  # (read back: every check a stored run gets)
    store.records_with_cells(run["id"])
    return store


def _adopt(opened: Opened, store: Store, run: dict[str, Any]) -> None:
    """The run of ``run.json`` and its records, written by the store's own writer."""
    store.adopt_run(RunInfo(run["id"], run["started"], run["finished"], run["status"], run["label"],
                            run["source"], run["config"], run["config_hash"], run["host"], {}))
    for i, t in enumerate(run["targets"]):
        if not (isinstance(t, list) and len(t) == 4 and isinstance(t[0], str) and isinstance(t[1], str)
                and isinstance(t[2], int) and not isinstance(t[2], bool) and isinstance(t[3], dict)):
            raise BadInput(f"{RUN}: target {i + 1} is not [backend, variant, repeat, description]")
        store.add_target(run["id"], t[0], t[1], t[3], t[2])
    for i, c in enumerate(run["cells"]):
        if not (isinstance(c, list) and len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
                and isinstance(c[2], (int, float)) and not isinstance(c[2], bool)):
            raise BadInput(f"{RUN}: cell {i + 1} is not [cell, status, finished]")
        store.adopt_cell(run["id"], c[0], c[1], c[2])
    _load_records(opened, store, run["id"])


def _load_records(opened: Opened, store: Store, run_id: str) -> None:
    with opened.members[RECORDS].path.open("rb") as f:
        n = 0
        while raw := f.readline(MAX_LINE + 1):
            n += 1
            where = f"{RECORDS} line {n}"
            if len(raw) > MAX_LINE:
                raise BadInput(f"{where} is longer than {size_text(MAX_LINE)}: no record of dfsbench's is")
            try:
                line = strict_decode(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise BadInput(f"{where} is not strict JSON: {printable(str(exc), 120)}") from None
            if not isinstance(line, dict) or not isinstance(line.get("record"), dict) \
                    or not isinstance(line.get("cell"), (str, type(None))):
                raise BadInput(f"{where} is not {{record, cell, series}}")
            record = line["record"]
            why = kind_flaw(record, _RECORD_KINDS) or ("" if all(isinstance(x, str) for x in record["flags"])
                                                       else "a flag is not text")
            if why:
                raise BadInput(f"{where}: its record: {why}")
            if record["run_id"] != run_id:
                raise BadInput(f"{where}: its record is of run '{printable(record['run_id'], 80)}', not {run_id}")
            try:
                m = Measurement.from_dict(record)
            except BadInput as exc:
                raise BadInput(f"{where}: {exc.message}") from None
            seq = store.add(m, line["cell"])
            s = line.get("series")
            if s is not None:
                store.add_series(seq, run_id, _series(s, where))


def _series(s: Any, where: str) -> Series:
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not isinstance(s, dict) or s.get("source") not in SOURCES or not isinstance(s.get("points"), list) \
            or not s["points"] or not number(s.get("begin")) or not number(s.get("end")) \
            or not all(isinstance(p, list) and len(p) == 2 and number(p[0]) and number(p[1]) for p in s["points"]):
        raise BadInput(f"{where}: its series is not {{source, begin, end, points}} of numbers")
    return Series(tuple((float(t), float(v)) for t, v in s["points"]), float(s["end"]), s["source"],
                  float(s["begin"]))


@contextlib.contextmanager
def opened(path: Path, expect: str | None = None,
           check: Callable[[Store, str], None] | None = None) -> Iterator[Opened]:
    """The bundle at ``path``, read and checked whole in a temporary directory (gone after):
    its problems say what differs from its manifest, from the sum ``expect`` (a published
    one), or what is wrong with its run (``check``: what else must read it — the outputs)."""
    with tempfile.TemporaryDirectory(prefix="dfsbench-bundle-") as tmp:
        found = open_bundle(path, Path(tmp))
        found.expected = expect is not None
        if expect is not None and expect.strip().lower() != found.sha256:
            found.problems.insert(0, f"its SHA-256 is {found.sha256}, not the {printable(expect, 70)} expected"
                                  if found.sha256 else "its manifest gives no sum to set against the one expected")
        if found.readable:
            load_run(found, Path(tmp), printable(path), check)
        try:
            yield found
        finally:
            if found.store is not None:
                found.store.close()


def said(found: Opened) -> dict[str, Any]:
    """What the bundle's manifest says of where and when it was exported, and by which
    dfsbench: its word, shown as such (a time that is no time, as None)."""
    exported = found.manifest.get("exported")
    exported = exported if isinstance(exported, dict) else {}
    at, host, by = exported.get("at"), exported.get("host"), found.manifest.get("dfsbench")
    return {"exported_at": at if isinstance(at, (int, float)) and not isinstance(at, bool) and 0 < at < 1e11
            else None, "exported_from": printable(host, 80) if isinstance(host, str) else None,
            "exported_by": printable(by, 40) if isinstance(by, str) else None}


def must_verify(found: Opened, path: Path, done: str = "nothing was imported") -> None:
    """BadInput, naming the first of what differs, where ``found`` does not verify."""
    if found.problems or found.store is None:
        raise BadInput(f"bundle {printable(path)} does not verify: " + "; ".join(found.problems[:3] or ["no run"]),
                       hint=f"'dfsbench verify FILE' says all that differs; {done}")


def import_into(found: Opened, store: Store, path: Path) -> tuple[str, int]:
    """Bring the verified run of ``found`` into ``store`` under its own id, marked as from
    elsewhere (its source names the bundle's sum; its host facts say what the bundle says
    of where and when it was exported): (its id, its records). All of it or nothing: the
    rows in one transaction, the raw outputs staged beside and moved into place before it
    commits."""
    must_verify(found, path)
    assert found.store is not None
    run_id = found.run_id
    final = named_path(store.root / "raw", run_id)
    if run_id in store.run_ids():
        raise BadInput(f"a run {run_id} is stored already in {printable(store.root)}",
                       hint="it was imported before, or made here; give another --results directory to "
                            "import it beside")
    if final.exists():
        raise BadInput(f"raw outputs of a run {run_id} are in {printable(store.root / 'raw')} already, "
                       "though no such run is stored", hint="move them away, or give another --results directory")
    source = found.store.run(run_id)
    came = {**said(found), "bundle_sha256": found.sha256, "checked_against_published_sum": found.expected,
            "imported_at": time.time()}
    records = found.store.records_with_cells(run_id)
    staging = named_path(store.root / "raw", f"{run_id}.import-{os.getpid()}-{secrets.token_hex(6)}")
    moved = False
    try:
        for member in found.raw:
            parts = member.name.split("/")[1:]
            if not staging.exists():
                staging.mkdir(parents=True)  # (new: never one another import left)
            directory = named_path(staging, *parts[:-1])
            directory.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(member.path, named_path(directory, parts[-1]))
        with store.transaction():
            try:
                store.adopt_run(RunInfo(source.id, source.started, source.finished, source.status, source.label,
                                        f"bundle sha256:{found.sha256}", source.config, source.config_hash,
                                        {**source.host, "bundle": came}, {}))
            except sqlite3.IntegrityError:  # (another import of it, just now)
                raise BadInput(f"a run {run_id} is stored already in {printable(store.root)}") from None
            for b, v, r, d in found.store.target_descriptions(run_id):
                store.add_target(run_id, b, v, d, r)
            for name, status, finished in found.store.cell_rows(run_id):
                store.adopt_cell(run_id, name, status, finished)
            for m, cell in records:
                seq = store.add(m, cell)
                if m.series is not None:
                    store.add_series(seq, run_id, m.series)
            if staging.exists():
                os.rename(staging, final)  # (fails where the directory is there: the run is not taken)
                moved = True
    except BaseException as exc:
        shutil.rmtree(final if moved else staging, ignore_errors=True)  # (ours: made just now)
        if isinstance(exc, OSError):
            raise BadInput(f"cannot import into {printable(store.root)}: {exc.strerror or exc}",
                           hint="nothing of the run was kept; give a directory this user can write, with room") \
                from None
        raise
    return run_id, len(records)
