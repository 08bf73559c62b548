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


def parsed(tool: str, file: Path) -> tuple[list[Any], bytes]:
    """The records of a tool's output file, and its bytes as read (once: the file may be a
    pipe, or change)."""
    parser = registry.parser(tool)
    data = files.read_bytes(file, f"{tool} output", MAX_TOOL_OUTPUT)
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    records = parser.parse(text, str(file))
    if not records:
        raise BadInput(f"{files.printable(file)}: no {tool} results found in it")
    return records, data


def cmd_parse(args: argparse.Namespace) -> int:
    from harness.report.render import json_lines

    sys.stdout.write(json_lines(parsed(args.tool, args.file)[0]))
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
    print(f"run id: {run_id}")
    return 0
