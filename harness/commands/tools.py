"""``dfsbench parse`` and ``dfsbench import TOOL FILE``: a tool's output read by its
workload's parser, printed as records or stored as a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.api import registry
from harness.commands.bundles import import_bundle
from harness.commands.common import store_of
from harness.errors import BadInput
from harness.system import files


MAX_TOOL_OUTPUT = 512 << 20  # fio's json+ of a long run with latency histograms is tens of MiB
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UNPACK_STEP = 1 << 10  # compressed bytes fed at a time (one KiB can become about 32 MiB)


def parsed(tool: str, file: Path) -> tuple[list[Any], bytes]:
    """The records of a tool's output file, and its bytes as read (once: the file may be a
    pipe, or change)."""
    parser = registry.parser(tool)
    data = files.read_bytes(file, f"{tool} output", MAX_TOOL_OUTPUT)
    text = unpacked(data, file, tool).decode("utf-8", errors="replace").removeprefix("\ufeff")
    records = parser.parse(text, files.printable(file))  # (the name in its errors: one line, no escape)
    if not records:
        raise BadInput(f"{files.printable(file)}: no {tool} results found in it")
    return records, data


def unpacked(data: bytes, file: Path, tool: str) -> bytes:
    """A tool output as its tool wrote it: zstd-compressed (warp's ``.json.zst``) decompressed,
    every frame of it, to :data:`MAX_TOOL_OUTPUT` at most (fed a little at a time, so that a
    small file that would decompress to far more is refused as it grows); anything else as it is."""
    if not data.startswith(ZSTD_MAGIC):
        return data
    import zstandard

    out = bytearray()
    frame = zstandard.ZstdDecompressor().decompressobj()
    rest = memoryview(data)
    try:
        while rest:
            out += frame.decompress(bytes(rest[:UNPACK_STEP]))
            rest = rest[UNPACK_STEP:]
            if len(out) > MAX_TOOL_OUTPUT:
                raise BadInput(f"{files.printable(file)}: decompressed, it is more than {MAX_TOOL_OUTPUT >> 20} "
                               f"MiB, more than any {tool} output dfsbench reads")
            if frame.eof:  # (the next frame, if there is one: zstd's files may hold several)
                rest = memoryview(frame.unused_data + bytes(rest))
                frame = zstandard.ZstdDecompressor().decompressobj()
                if rest and not bytes(rest[:4]) == ZSTD_MAGIC:
                    raise BadInput(f"{files.printable(file)}: after its zstd-compressed {tool} output comes "
                                   "something else", hint="the file is damaged, or two files joined")
                if not rest:
                    return bytes(out)
    except zstandard.ZstdError as exc:
        raise BadInput(f"{files.printable(file)}: a zstd-compressed {tool} output that does not decompress "
                       f"({files.printable(str(exc), 120)})", hint="the file is damaged") from None
    raise BadInput(f"{files.printable(file)}: a zstd-compressed {tool} output cut short (its last frame does not end)",
                   hint="the file was copied or written only in part")


def said_left_out(tool: str) -> str:
    """What the tool's parser does not import, as a line to print ('' where it reads all)."""
    leaves = registry.parser(tool).parser_leaves
    return f"not imported: {leaves}\n" if leaves else ""


def cmd_parse(args: argparse.Namespace) -> int:
    from harness.report.render import json_lines

    sys.stdout.write(json_lines(parsed(args.tool, args.file)[0]))
    sys.stderr.write(said_left_out(args.tool))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import hashlib
    from dataclasses import replace

    from harness.results.store import new_run_id

    if args.file is None:
        return import_bundle(args)
    if args.expect is not None:
        raise BadInput("--expect is for a bundle (import BUNDLE): a tool output has no manifest")
    if args.backend is None:
        raise BadInput("import TOOL FILE needs --backend: the system the output was measured on")
    records, data = parsed(args.tool, args.file)
    store = store_of(args)
    try:
        run_id = new_run_id()
        digest = hashlib.sha256(data).hexdigest()
        store.begin_run(run_id, {"import": {"tool": args.tool, "file": str(args.file), "sha256": digest}},
                        digest[:16], {"imported_from": str(args.file.absolute())}, f"import {args.tool}",
                        args.label)
        store.add_target(run_id, args.backend, args.variant, {"system": args.backend, "imported": True,
                                                              "source_file": str(args.file)}, 0)
        (store.raw_dir(run_id, "import") / "output").write_bytes(data)
        try:
            n = store.add_many(replace(m, backend=args.backend, variant=args.variant, run_id=run_id)
                               for m in records)
        except BaseException:
            store.finish_run(run_id, "failed")  # (not left 'running': nothing of it was stored)
            raise
        store.finish_run(run_id, "complete")
    finally:
        store.close()
    failed = sum(1 for m in records if m.value is None)  # (a cell the tool gave no number for: a record all the same)
    without = f" ({failed} of them failed: the tool printed no measurement for them, see compare)" if failed else ""
    print(f"imported {n} measurements{without} from {files.printable(args.file)} as {args.backend}/{args.variant}")
    sys.stdout.write(said_left_out(args.tool))
    print(f"run id: {run_id}")
    return 0
