"""``dfsbench compare`` and ``dfsbench report``: stored runs as tables (terminal, Markdown,
CSV, JSON), their records or series as CSV, the regression gate, and the HTML report —
each read from the runs' view (harness.report.view)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.commands.common import catalogue_of, collector_paused, kept, results_dir, shown_line
from harness.errors import BadInput
from harness.system import files

if TYPE_CHECKING:
    from harness.report.view import View


def cmd_compare(args: argparse.Namespace) -> int:
    with collector_paused():
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from harness.report import gate

    if args.fail_on is not None and args.baseline is None:
        raise BadInput("--fail-on needs --baseline RUN: a regression is measured against something")
    from harness.report.render import terminal
    from harness.report.view import ViewRequest, build_view, comparability

    rules = gate.parse_rules(args.fail_on) if args.fail_on is not None else []
    catalogue = catalogue_of(args)
    ids = [catalogue.resolve(ref) for ref in args.runs]
    if args.cv_threshold is not None and not 0 < args.cv_threshold < 1000:
        raise BadInput(f"--cv-threshold is a percentage above 0, not {args.cv_threshold}")
    cv = args.cv_threshold / 100 if args.cv_threshold is not None else None
    base = catalogue.resolve(args.baseline) if args.baseline is not None else None
    if args.series and args.format != "csv":
        raise BadInput("--series is for --format csv", hint="--format json has the series under its 'series' key")
    if args.records and (args.format != "csv" or args.series or base is not None):
        raise BadInput("--records is for --format csv, without --series, --baseline or --fail-on",
                       hint="--format json has every record under its 'records' key")
    if (args.table is not None or args.output is not None) and (args.format != "csv" or args.series or args.records):
        raise BadInput("--table and -o are for --format csv, without --series or --records",
                       hint="--format json has every table under its 'tables' key")
    csv_tables = args.table is not None or args.output is not None
    if csv_tables:
        _check_tables_output(args)  # (before the work)
    # one view for all the command shows and the gate reads
    if args.records:
        request = ViewRequest(tuple(ids), with_tables=False, series=False, reference=args.reference, apart=args.apart)
    elif csv_tables:
        request = ViewRequest(tuple(ids), args.each_repeat, cv, reference=args.reference, apart=args.apart)
    else:  # (a record's figure over time is read only where it is exported: JSON, or CSV with --series)
        request = ViewRequest(tuple(ids), args.each_repeat, cv, with_tables=not args.series,
                              series=args.format == "json" or args.series, reference=args.reference, apart=args.apart)
    view = build_view(catalogue, replace(request, baseline=base if rules else None))
    if csv_tables:
        _tables_csv(args, view)
    elif args.records:
        from harness.report.render import records_csv

        print("\n".join(shown_line(line) for line in records_csv(view.records).split("\n")), end="")
        return 0
    else:
        print(render_view(view, args.format, args.series), end="" if args.format != "table" else "\n")
    if base is None:
        return 0
    # what the baseline and the gate say goes beside a document (JSON, CSV) on stdout, never
    # into it: to stderr; a person reading the tables (table, markdown) reads it below them
    said = sys.stderr if args.format in ("json", "csv") else sys.stdout
    for note, who in comparability([catalogue.run(i) for i in [base, *ids]]):
        print(shown_line(f"{'not comparable' if who is not None else 'measured apart'}: {note}"), file=said)
    if not rules:
        return 0
    # the gate reads the same annotated records the tables show, and the baseline's, from the view
    assert view.gate is not None
    compared, findings = gate.check(view.gate.new, view.gate.old, rules)
    if compared == 0:
        raise BadInput(f"no cell of {', '.join(ids)} matches a cell of {base} under '{gate.shown(rules)}'",
                       hint="the runs must share workloads, backends, variants and parameters")
    if findings:
        print(terminal([gate.table(findings, base)], []), file=said)
    print(f"gate: {compared} cells compared with {base}; {len(findings)} regressed beyond '{gate.shown(rules)}'",
          file=said)
    return 1 if findings else 0


def _check_tables_output(args: argparse.Namespace) -> None:
    """``-o DIR``: refused before the work where DIR is not a directory, or is where no table
    may be written."""
    if args.output is not None:
        if args.output.exists() and not args.output.is_dir():
            raise BadInput(f"-o {files.printable(args.output)} is not a directory: each table is written to a file "
                           "of its own in it", hint="name a directory (it is made where there is none)")
        files.check_output(args.output / "table.csv", "table", kept(results_dir(args)))


def _tables_csv(args: argparse.Namespace, view: View) -> None:
    """``compare --format csv --table NAME``: that table on stdout; ``-o DIR``: each table
    (or that one) written to DIR/NAME.csv, where NAME is the table's name (a slug the code
    makes, harness.report.render.table_names: never a path of a stored run's text)."""
    from harness.report.render import table_csv, table_names

    refused = kept(results_dir(args))
    found = list(zip(table_names(view.tables), view.tables))
    if args.table is not None:
        found = [(name, t) for name, t in found if name == args.table]
        if not found:
            shown = ", ".join(table_names(view.tables)) or "none (these runs fill no table)"
            raise BadInput(f"--table {files.printable(args.table, 80)}: no such table of these runs",
                           hint=f"name one of: {shown}")
    if args.output is None:
        print("\n".join(shown_line(line) for line in table_csv(found[0][1]).split("\n")), end="")
        return
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot make the directory {files.printable(args.output)}: {exc.strerror}") from None
    for name, t in found:
        files.write_text(args.output / f"{name}.csv", table_csv(t), "table", refused)
    print(f"wrote {len(found)} table{'s' if len(found) != 1 else ''} to {files.printable(args.output)}: "
          + ", ".join(f"{name}.csv" for name, _ in found))


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report.html import render
    from harness.report.view import ViewRequest, build_view

    catalogue = catalogue_of(args)
    ids = [catalogue.resolve(ref) for ref in args.runs]
    if args.output.suffix.lower() not in (".html", ".htm"):
        raise BadInput(f"{files.printable(args.output)}: the report is HTML; name the file *.html")
    refused = kept(results_dir(args))
    files.check_output(args.output, "report", refused)  # (before the work; and again as it is written)
    with collector_paused():
        text = render(build_view(catalogue, ViewRequest(tuple(ids), reference=args.reference, apart=args.apart)))
    files.write_text(args.output, text, "report", refused)
    print(f"wrote {files.printable(args.output)} ({len(text) / 1e6:.1f} MB, self-contained)")
    return 0


def render_view(view: View, fmt: str, series: bool = False) -> str:
    """The view as ``fmt`` prints it (``series``: CSV of every record's figure over time)."""
    from harness.report import summary
    from harness.report.render import csv_text, json_document, markdown, terminal

    if series:  # (one row per point of every series: harness.report.timelines)
        from harness.report.timelines import csv_text as series_csv, entries

        return "\n".join(shown_line(line) for line in series_csv(entries(view.records)).split("\n"))
    if fmt == "json":  # the answer and tables as data, the annotated records and the runs' context
        return json_document(view)
    header = [*summary.text(view.summary), *view.header]  # (the answer first: harness.report.summary)
    if fmt == "markdown":
        text = markdown(view.tables, header)
    elif fmt == "csv":
        text = csv_text(view.tables)
    else:
        text = terminal(view.tables, header)
    # a stored text (a label, a run id, a name from a store someone else wrote) reaches the
    # terminal with its control characters shown, never acted on
    return "\n".join(shown_line(line) for line in text.split("\n"))
