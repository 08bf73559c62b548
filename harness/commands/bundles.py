"""``dfsbench export``, ``verify`` and ``import BUNDLE``: a stored run as one file another
site verifies, imports and runs again (harness.results.bundle), and what the outputs read
of a bundle's run before it is taken."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.commands.common import catalogue_of, kept, results_dir, shown_line, store_of
from harness.errors import BadInput
from harness.system import files

if TYPE_CHECKING:
    from harness.results.store import Store


def cmd_export(args: argparse.Namespace) -> int:
    from harness.results import bundle

    catalogue = catalogue_of(args)
    run_id = catalogue.resolve(args.run)
    if run_id not in catalogue.store.run_ids():
        raise BadInput(f"'{files.printable(args.run)}' is a reference run shipped with dfsbench, not a stored one",
                       hint="export a run of --results")
    if not args.output.name.endswith((".tar.gz", ".tgz")):
        raise BadInput(f"{files.printable(args.output)}: a bundle is a gzip'd tar; name the file *.tar.gz")
    digest, counts = bundle.export(catalogue.store, run_id, args.output, kept(results_dir(args)))
    print(f"wrote {files.printable(args.output)}: run {run_id}, {counts['records']:,} records, "
          f"{counts['raw']:,} raw outputs")
    print(f"sha256 {digest}  (publish it beside the results: 'dfsbench verify FILE --expect' checks a copy "
          "against it)")
    return 0


def reads(store: Store, run_id: str) -> None:
    """What the outputs read of a stored run, read of a bundle's before it is taken: the
    comparability check, the tables (terminal, pooled and --apart), the JSON document, the
    CSV of its records and the HTML report, built and thrown away."""
    from harness.report.html import render
    from harness.report.render import json_document, records_csv, terminal
    from harness.report.view import ViewRequest, build_view, comparability
    from harness.results.catalogue import Catalogue

    catalogue = Catalogue(store.root)
    info = catalogue.run(run_id)
    comparability([info, info])  # (what compare reads of it beside another run)
    view = build_view(catalogue, ViewRequest((run_id,)))
    terminal(view.tables, view.header)
    apart = build_view(catalogue, ViewRequest((run_id,), apart=True))
    terminal(apart.tables, apart.header)
    whole = build_view(catalogue, ViewRequest((run_id,), with_tables=False, series=True))
    json_document(whole)
    records_csv(whole.records)
    render(view)


def said_of(found: Any) -> str:
    """Where and when the bundle says it was exported, as its word."""
    from harness.results import bundle

    from harness.units import moment

    came = bundle.said(found)
    return (f"its manifest says: exported from {came['exported_from'] or 'an unknown host'} at "
            f"{moment(came['exported_at'])} by dfsbench {came['exported_by'] or '(not said)'}")


def cmd_verify(args: argparse.Namespace) -> int:
    from harness.results import bundle

    with bundle.opened(args.file, args.expect, reads) as found:
        shown = files.printable(args.file)
        if found.problems:
            print(f"{shown}: does NOT verify ({len(found.problems)} "
                  f"{'difference' if len(found.problems) == 1 else 'differences'}):")
            for problem in found.problems:
                print(f"  - {shown_line(problem)}")
            return 1
        assert found.store is not None
        info = found.store.run(found.run_id)
        n = len(found.store.records_with_cells(found.run_id))
        if args.expect:
            print(f"{shown}: verified: its SHA-256 is the one expected, every member is what its manifest says, "
                  "and its run reads as a stored one (its tables, JSON, CSV and HTML report build)")
        else:
            print(f"{shown}: consistent: every member is what its manifest says, and its run reads as a stored "
                  "one (its tables, JSON, CSV and HTML report build); that it is the bundle its maker exported, "
                  "only their published SHA-256 tells (--expect)")
        print(f"  run {info.id} ({info.status}), {n:,} records, {len(found.raw):,} raw outputs")
        print(f"  {shown_line(said_of(found))}")
        print(f"  sha256 {found.sha256}")
    return 0


def import_bundle(args: argparse.Namespace) -> int:
    from harness.results import bundle

    path = Path(args.tool)
    if args.backend is not None or args.variant != "default" or args.label is not None:
        raise BadInput("--backend, --variant and --label are for a tool output (import TOOL FILE): a bundle's "
                       "run keeps its own")
    with bundle.opened(path, args.expect, reads) as found:
        bundle.must_verify(found, path)  # (before the store is opened: a refused bundle makes no store)
        store = store_of(args)
        try:
            run_id, n = bundle.import_into(found, store, path)
        finally:
            store.close()
        told = said_of(found)
    print(f"imported run {run_id} from {files.printable(path)}: {n:,} records, {len(found.raw):,} raw outputs; "
          + shown_line(told))
    print(f"sha256 {found.sha256}" + (" (the one expected)" if args.expect else
                                      " (not set against a published one: --expect)"))
    print(f"run id: {run_id}")
    return 0
