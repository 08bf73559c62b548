"""The ``dfsbench`` command: its arguments parsed, and each command dispatched to its body
(harness.commands). The one place that catches DfsbenchError and picks exit codes."""

from __future__ import annotations

import argparse
import io
import sqlite3
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, NoReturn

from harness.api import registry
from harness.commands.bundles import cmd_export, cmd_verify
from harness.commands.common import shown_line
from harness.commands.lab import cmd_lab
from harness.commands.listing import cmd_list
from harness.commands.outputs import cmd_compare, cmd_report
from harness.commands.reference import cmd_schema
from harness.commands.run import cmd_check, cmd_run
from harness.commands.tools import cmd_import, cmd_parse
from harness.errors import BadInput, DfsbenchError
from harness.execution.plan import CONFIG_SUITES, SUITES
from harness.execution.schema import DEFAULT_ENVIRONMENT, Config
from harness.system import files, signals


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its errors raised as BadInput; and help that names what is
    installed, made only when help is shown."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._help_later: dict[argparse.Action, tuple[str, Callable[[], str]]] = {}

    def error(self, message: str) -> NoReturn:  # argparse's own exit code is 2 too; keep its text
        self.print_usage(sys.stderr)
        raise BadInput(message)

    def help_later(self, action: argparse.Action, names: Callable[[], str]) -> None:
        """``action``'s help, followed by ``names()`` when this parser's help is shown: what
        is installed, read then, which a command that shows no help does not pay for (the
        tools are known only by importing every workload)."""
        self._help_later[action] = (action.help or "", names)

    def format_help(self) -> str:
        for action, (text, names) in self._help_later.items():
            action.help = f"{text}: {names()}".replace("%", "%%")  # (argparse %-formats a help)
        return super().format_help()


def _installed(kind: str) -> Callable[[], str]:
    """Every installed plugin of the kind, by name (from the entry points: none is imported)."""
    return lambda: ", ".join(files.printable(n, 80) for n in registry.names(kind)) or "(none installed)"


def _environments() -> str:
    shown = [f"{name} (where the config names none)" if name == DEFAULT_ENVIRONMENT else files.printable(name, 80)
             for name in registry.names("environment")]
    return ", ".join(shown) or "(none installed)"


def _tools() -> str:
    broken = registry.broken("workload")  # (a help that fails helps nobody: it says what it left out)
    left = f" (and none of {len(broken)} broken workload plugins: see 'dfsbench list')" if broken else ""
    return ", ".join(sorted(registry.tools())) + left


def _members(name: str) -> str:
    """The installed workloads and backends that take part in a built-in suite, as they
    declare it."""
    from harness.execution.plan import suite

    try:
        workloads, backends = ([entry["name"] for entry in suite(kind, name)] for kind in ("workload", "backend"))
    except registry.PluginError:  # (the list of every backend says why: see _tools)
        return ""
    return f": {', '.join(workloads)} on {', '.join(backends)}" if workloads and backends and name != "full" else ""


def _suites() -> str:
    """Every built-in suite and what it runs, from where the suites are defined."""
    default = Config.model_fields["suite"].default
    about = [f"'{name}'{' (the default)' if name == default else ''} {text}{_members(name)}"
             for name, text in SUITES.items()]
    about += [f"'{name}' (a config of its own, {suite.config.name}) {suite.about}"
              for name, suite in CONFIG_SUITES.items()]
    return "; ".join(about)


def _csv(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    if not any(names):  # '' or ',': not "the default", which an empty list would mean
        raise argparse.ArgumentTypeError(f"'{files.printable(text)}' names nothing; give one or more "
                                         "names separated by commas, or leave the option out")
    if not all(names):
        raise argparse.ArgumentTypeError(f"'{files.printable(text)}' has an empty name between commas")
    for name in names:
        _name(name)
    return names


def _name(text: str) -> str:
    """A backend, variant or workload name from the command line: what a config's name may be."""
    from harness.system.names import RULE, is_name

    if not is_name(text):
        raise argparse.ArgumentTypeError(f"'{files.printable(text)}' is not a name: {RULE}")
    return text


def _label(text: str) -> str:
    """A run's label as given: one line of printable text, as every text of a config is."""
    from harness.api.model import control_character

    if control_character(text):
        raise argparse.ArgumentTypeError(f"'{files.printable(text, 80)}' holds a control character (a line break, "
                                         "an escape, a mark that reverses the text): a label is one line of "
                                         "printable text, as it is stored and shown")
    return text


class _Once(argparse.Action):
    """An option that holds one value: given twice, which was meant is not known (argparse
    would keep the last in silence)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None:
            also = "; its rules go in one, separated by commas" if self.dest == "fail_on" else ""
            raise argparse.ArgumentError(self, f"is given twice ('{files.printable(before, 60)}' and "
                                         f"'{files.printable(values, 60)}'): give it once{also}")
        setattr(namespace, self.dest, values)

RUNS = "a run's id, a unique prefix or suffix of one, 'latest' (the run started last), or a reference name (report-2014)"

REFERENCE = ("the system every other is compared with: a backend's name, and its variant where it has one "
             "(NAME or NAME/VARIANT, as --backends and the stored runs name them); default: the first one shown")


def build_parser() -> argparse.ArgumentParser:
    results = _Parser(add_help=False)
    results.add_argument("--results", type=Path, default=None,
                         help="results directory (default ./results or $DFSBENCH_RESULTS)")
    p = _Parser(prog="dfsbench", description="Repeatable, honest comparisons of distributed file systems.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", parents=[results], help="run the workloads on every backend")
    run.add_argument("config", nargs="?", type=Path, help="YAML config (default: built-in)")
    run.add_argument("--scale", choices=["quick", "report"])
    run.help_later(run.add_argument("--suite", choices=[*SUITES, *CONFIG_SUITES],
                                    help="what runs where the config names nothing"), _suites)
    run.help_later(run.add_argument("--env", help="the environment, over the config's"), _environments)
    run.help_later(run.add_argument("--backends", type=_csv, help="comma-separated backend names"),
                   _installed("backend"))
    run.help_later(run.add_argument("--workloads", type=_csv, help="comma-separated workload names"),
                   _installed("workload"))
    run.add_argument("--repeat", type=int)
    run.add_argument("--label", type=_label, help="a name for the run")
    run.add_argument("--resume", metavar="RUN", action=_Once,
                     help="go on with a stored run that was interrupted, crashed or had failures: "
                          "only its missing and failed cells run, in that run; give the config and "
                          "options it was started with")
    run.add_argument("--like", metavar="BUNDLE", type=Path, action=_Once,
                     help="run the config of a run exported elsewhere ('dfsbench export'), verified first, "
                          "on this site's environment: CONFIG's environment section (only that), or --env, or "
                          f"the '{DEFAULT_ENVIRONMENT}' one")
    run.add_argument("--expect", metavar="SHA256", action=_Once,
                     help="with --like: the bundle's SHA-256 as its maker published it")
    run.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")
    run.add_argument("--reference", metavar="BACKEND[/VARIANT]", action=_Once, help=REFERENCE)
    run.add_argument("--wait", metavar="SECONDS", type=float, default=0.0,
                     help="where another run holds the lab, wait for it to let go, at most SECONDS; without it, "
                          "such a run is refused at once")

    lab = sub.add_parser("lab", parents=[results], help="a throwaway lab that stays up between runs")
    lab.add_argument("action", choices=["up", "down", "status"],
                     help="status exits 1 where no lab is up, or it is not healthy")
    lab.add_argument("config", nargs="?", type=Path)
    lab.help_later(lab.add_argument("--env", default=None, help="the environment, over the config's"),
                   _environments)
    lab.add_argument("--force", action="store_true",
                     help="with down: take the lab down even while a run holds its lease (that run then fails)")

    sub.add_parser("list", parents=[results], help="environments, backends and workloads found")

    check = sub.add_parser("check", parents=[results], help="validate a config; exit 2 on error")
    check.add_argument("config", type=Path)

    cmp_ = sub.add_parser("compare", parents=[results], help="print the comparison tables of stored runs")
    cmp_.add_argument("runs", nargs="+", metavar="RUN", help=RUNS)
    cmp_.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")
    cmp_.add_argument("--series", action="store_true",
                      help="with --format csv: every record's figure over time, one row per point, "
                           "instead of the tables (--format json always has them, under 'series')")
    cmp_.add_argument("--apart", action="store_true",
                      help="each run's systems on their own, named by the run (its label, else its id), instead "
                           "of pooled cell by cell: two sites' runs of one work side by side, each system also judged "
                           "against itself in the first run where nothing measured differs")
    cmp_.add_argument("--records", action="store_true",
                      help="with --format csv: one row per record (value a number, its unit a column, each "
                           "param a column), instead of the tables")
    cmp_.add_argument("--table", metavar="NAME", action=_Once,
                      help="with --format csv: only this table (its name: 'load', 'faults', 'costs', … — "
                           "--format json names every table under 'tables')")
    cmp_.add_argument("-o", "--output", type=Path, metavar="DIR", action=_Once,
                      help="with --format csv: write each table to DIR/NAME.csv instead of printing them")
    cmp_.add_argument("--reference", metavar="BACKEND[/VARIANT]", action=_Once, help=REFERENCE)
    cmp_.add_argument("--each-repeat", action="store_true",
                      help="iozone tables per repeat instead of the median over repeats")
    cmp_.add_argument("--cv-threshold", type=float, default=None, metavar="PERCENT",
                      help="flag a cell 'unstable' above this coefficient of variation (default 10)")
    cmp_.add_argument("--baseline", metavar="RUN", action=_Once,
                      help="compare against this run (with --fail-on: a gate)")
    cmp_.add_argument("--fail-on", metavar="RULE", action=_Once,
                      help="exit 1 when a cell regresses beyond the rule, e.g. 'throughput:-10%%'; "
                           "several separated by commas, one a metric ('*': every metric without its own)")

    rep = sub.add_parser("report", parents=[results], help="write a self-contained HTML report")
    rep.add_argument("runs", nargs="+", metavar="RUN", help=RUNS)
    rep.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    rep.add_argument("--reference", metavar="BACKEND[/VARIANT]", action=_Once, help=REFERENCE)
    rep.add_argument("--apart", action="store_true", help="each run's systems on their own (see compare --apart)")

    parse = sub.add_parser("parse", parents=[results],
                           help="print a tool output's measurement records as JSON lines")
    parse.help_later(parse.add_argument("tool", metavar="TOOL", help="the tool that wrote FILE"), _tools)
    parse.add_argument("file", type=Path, metavar="FILE")

    imp = sub.add_parser("import", parents=[results],
                         help="store a tool output as a run (TOOL FILE), or a run exported elsewhere (BUNDLE)")
    imp.help_later(imp.add_argument("tool", metavar="TOOL|BUNDLE",
                                    help="alone: a bundle 'dfsbench export' wrote (verified first); "
                                         "with FILE: the tool that wrote FILE"), _tools)
    imp.add_argument("file", type=Path, metavar="FILE", nargs="?")
    imp.add_argument("--backend", type=_name, help="the system the tool output was measured on (with TOOL FILE)")
    imp.add_argument("--expect", metavar="SHA256", action=_Once,
                     help="with BUNDLE: its SHA-256 as its maker published it; it is not imported otherwise")
    imp.add_argument("--variant", default="default", type=_name)
    imp.add_argument("--label", type=_label)

    exp = sub.add_parser("export", parents=[results],
                         help="write a stored run as one file another site verifies, imports and runs again")
    exp.add_argument("run", metavar="RUN", help="a run's id, a unique prefix or suffix of one, or 'latest' (the run "
                     "started last)")
    exp.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")

    schema = sub.add_parser("schema", parents=[results], help="write the config's JSON Schema (every installed plugin's options), "
                            "for an editor that checks and completes a config")
    schema.add_argument("-o", "--output", type=Path, metavar="FILE", action=_Once,
                        help="write it to FILE instead of printing it")
    schema.add_argument("--markdown", action="store_true",
                        help="the config reference as Markdown instead: every key of the core and of every plugin "
                             "installed here, its type, default and meaning")

    ver = sub.add_parser("verify", help="check a bundle against its manifest and say what differs; exit 1 if any")
    ver.add_argument("file", type=Path, metavar="FILE")
    ver.add_argument("--expect", metavar="SHA256", action=_Once,
                     help="the bundle's SHA-256 as its maker published it (what 'export' printed)")
    return p


def main(argv: list[str] | None = None) -> int:
    # SIGTERM (e.g. a CI time limit) unwinds like Ctrl-C, so labs and mounts are undone
    signals.install()
    # whatever a command prints on stdout passes the one escaping rule, line by line: a
    # stored or imported string (a status, a label, a plugin's words) reaches no terminal raw
    escaped = _Escaped(sys.stdout)
    try:
        with redirect_stdout(escaped):
            return _main(argv)
    finally:
        escaped.flush()


class _Escaped(io.TextIOBase):
    """A text stream that writes each line to ``raw`` as :func:`_shown` shows it: its
    control characters escaped, a line break kept, and a '\r' only where it ends a line
    (a CSV line's). Nothing of a line is held back but a last '\r', until what follows it
    says whether it ends the line."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._held = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        whole = self._held + text
        self._held = ""
        if whole.endswith("\r"):
            whole, self._held = whole[:-1], "\r"
        self.raw.write("\n".join(shown_line(line) for line in whole.split("\n")))
        return len(text)

    def flush(self) -> None:
        if self._held:
            self.raw.write(shown_line(self._held))
            self._held = ""
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(self.raw.isatty())

    def fileno(self) -> int:
        return int(self.raw.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.raw, "encoding", "utf-8"))


def _main(argv: list[str] | None) -> int:
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        # 'lab down --env existing CONFIG': argparse takes the optional CONFIG only before
        # an option; after one, it is left over
        if args.command == "lab" and args.config is None and len(extra) == 1 and not extra[0].startswith("-"):
            args.config, extra = Path(extra[0]), []
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return COMMANDS[args.command](args)
    except DfsbenchError as exc:  # (a message may quote what a user gave: shown, never acted on)
        print("\n".join(shown_line(line) for line in f"dfsbench: error: {exc}".split("\n")), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(shown_line(f"dfsbench: interrupted ({exc}); nothing it created is left running, and everything "
                     "measured is stored"), file=sys.stderr)
        return exc.exit_code if isinstance(exc, signals.Interrupted) else 130
    except sqlite3.DatabaseError as exc:  # a store damaged past its header, or locked
        if "locked" in str(exc) or "busy" in str(exc):
            print("dfsbench: error: the results store is locked by another process\n  hint: wait for "
                  "that process (another dfsbench?) to finish, or give another --results directory",
                  file=sys.stderr)
            return 2
        print(shown_line(f"dfsbench: error: the results store cannot be read: {exc}") + "\n  hint: it is left as it "
              "is; restore it from a copy, or give another --results directory", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. 'dfsbench list | head': the reader went away, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path of the user's that is not what it should be, met late
        where = f": {files.printable(exc.filename)}" if exc.filename else ""
        print(shown_line(f"dfsbench: error: {exc.strerror or exc}{where}") + "\n  hint: what was measured before is "
              "stored; check that path", file=sys.stderr)
        return 2


# (each command's body is in harness.commands, a module per family of commands)
COMMANDS = {"run": cmd_run, "lab": cmd_lab, "list": cmd_list, "check": cmd_check,
            "compare": cmd_compare, "parse": cmd_parse, "import": cmd_import, "report": cmd_report,
            "export": cmd_export, "verify": cmd_verify, "schema": cmd_schema}


if __name__ == "__main__":
    sys.exit(main())
