"""The ``dfsbench`` command. The one place that catches DfsbenchError and picks exit codes."""

from __future__ import annotations

import argparse
import io
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.api import registry
from harness.errors import BadInput, DfsbenchError
from harness.execution.order import Order
from harness.execution.plan import CONFIG_SUITES, SUITES, plan_from_file
from harness.execution.schema import DEFAULT_ENVIRONMENT, Config
from harness.system import files, signals

if TYPE_CHECKING:
    from harness.api.contracts import LabStatus
    from harness.execution.plan import Plan
    from harness.execution.progress import Progress
    from harness.results.catalogue import Catalogue
    from harness.results.store import Store


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
    lab.add_argument("action", choices=["up", "down", "status"])
    lab.add_argument("config", nargs="?", type=Path)
    lab.help_later(lab.add_argument("--env", default=None, help="the environment, over the config's"),
                   _environments)
    lab.add_argument("--force", action="store_true",
                     help="with down: take the lab down even while a run holds its lease (that run then fails)")

    sub.add_parser("list", parents=[results], help="environments, backends and workloads found")

    check = sub.add_parser("check", parents=[results], help="validate a config; exit 2 on error")
    check.add_argument("config", type=Path)

    cmp_ = sub.add_parser("compare", parents=[results], help="print the comparison tables of stored runs")
    cmp_.add_argument("runs", nargs="+", metavar="RUN")
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
    rep.add_argument("runs", nargs="+", metavar="RUN")
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
    exp.add_argument("run", metavar="RUN")
    exp.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")

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
        self.raw.write("\n".join(_shown(line) for line in whole.split("\n")))
        return len(text)

    def flush(self) -> None:
        if self._held:
            self.raw.write(_shown(self._held))
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
        print("\n".join(_shown(line) for line in f"dfsbench: error: {exc}".split("\n")), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(_shown(f"dfsbench: interrupted ({exc}); nothing it created is left running, and everything "
                     "measured is stored"), file=sys.stderr)
        return exc.exit_code if isinstance(exc, signals.Interrupted) else 130
    except sqlite3.DatabaseError as exc:  # a store damaged past its header, or locked
        if "locked" in str(exc) or "busy" in str(exc):
            print("dfsbench: error: the results store is locked by another process\n  hint: wait for "
                  "that process (another dfsbench?) to finish, or give another --results directory",
                  file=sys.stderr)
            return 2
        print(_shown(f"dfsbench: error: the results store cannot be read: {exc}") + "\n  hint: it is left as it "
              "is; restore it from a copy, or give another --results directory", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. 'dfsbench list | head': the reader went away, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path of the user's that is not what it should be, met late
        where = f": {files.printable(exc.filename)}" if exc.filename else ""
        print(_shown(f"dfsbench: error: {exc.strerror or exc}{where}") + "\n  hint: what was measured before is "
              "stored; check that path", file=sys.stderr)
        return 2


def _results_dir(args: argparse.Namespace) -> Path:
    from harness.results.store import default_results_dir  # only commands that read or write runs pay for it

    root: Path = args.results or default_results_dir()
    if root.exists() and not root.is_dir():
        raise BadInput(f"--results {root} is a file, not a directory")
    return root


def _store(args: argparse.Namespace) -> Store:
    from harness.results.store import Store

    return Store(_results_dir(args))


def _catalogue(args: argparse.Namespace) -> Catalogue:
    from harness.results.catalogue import Catalogue

    return Catalogue(_results_dir(args))


def cmd_run(args: argparse.Namespace) -> int:
    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat must be at least 1, not {args.repeat}")
    if not 0 <= args.wait <= 7 * 86400:  # (nan fails both)
        raise BadInput(f"--wait {args.wait:g}: give the seconds to wait for the lab, from 0 to a week (604800)")
    overrides = {"scale": args.scale, "suite": args.suite, "repeat": args.repeat, "backends": args.backends,
                 "workloads": args.workloads,
                 "environment": {"kind": args.env} if args.env else None}
    from harness.execution.progress import Progress
    from harness.execution.runner import execute

    config = args.config
    if args.expect is not None and args.like is None:
        raise BadInput("--expect is the SHA-256 of a bundle: give it with --like BUNDLE")
    if args.like is not None:
        plan = _plan_like(args, overrides)
    elif args.suite in CONFIG_SUITES:
        if config is not None:
            raise BadInput(f"--suite {args.suite} is a config of its own, and a config was given too",
                           hint=f"give one of them (a copy of {CONFIG_SUITES[args.suite].config} is a config "
                                "to change)")
        config, overrides["suite"] = CONFIG_SUITES[args.suite].config, None
        plan = plan_from_file(config, overrides)
    else:
        plan = plan_from_file(config, overrides)
    if args.reference is not None:  # (refused now, not after the run)
        backend, _, variant = args.reference.partition("/")
        planned = [f"{b.name}/{b.variant}" for b in plan.backends if not b.control]
        if f"{backend}/{variant or 'default'}" not in planned:
            raise BadInput(f"--reference {files.printable(args.reference, 80)}: the run has no such backend "
                           "(the control, shown beside the systems, is never half of a verdict)",
                           hint=f"name one of: {', '.join(planned)}")
    _say_notes(plan)
    resume = _catalogue(args).resolve(args.resume) if args.resume is not None else None
    store = _store(args)
    progress = Progress()
    try:
        run_id, ok = execute(plan, store, progress, label=args.label, resume=resume, wait=args.wait)
    finally:
        store.close()
    print(_render(_catalogue(args), [run_id], args.format, reference=args.reference))
    if args.format == "table":
        print(f"run id: {run_id}")
    return 0 if ok else 1


def _plan_like(args: argparse.Namespace, overrides: dict[str, Any]) -> Plan:
    """The plan of a bundle's run (verified first) on this site's environment: the bundle's
    config as it ran, but for its environment and limits — never used: they name another
    site's hosts and hardware — which are CONFIG's (the only sections read of it), or
    --env's kind, or the default environment. A config that names its site elsewhere (a
    directory, a device, fio servers: :data:`harness.api.model.SITE` fields) is refused."""
    from harness.execution.plan import build_plan, load_yaml
    from harness.results import bundle

    given = [flag for flag, key in (("--scale", "scale"), ("--suite", "suite"), ("--repeat", "repeat"),
                                    ("--backends", "backends"), ("--workloads", "workloads"))
             if overrides.get(key) is not None]
    if given or args.resume is not None:
        raise BadInput(f"--like runs the bundle's work as it ran: {', '.join(given) or '--resume'} would change it",
                       hint="leave it out; only the environment is this site's (CONFIG's environment section, "
                            "or --env)")
    site: dict[str, Any] = {}
    if args.config is not None:
        site = load_yaml(args.config)
        other = sorted(str(k) for k in site if k not in ("environment", "limits"))
        if other:
            raise BadInput(f"{files.printable(args.config)}: with --like only its environment and limits are read, "
                           f"and it has {', '.join(files.printable(k, 40) for k in other)} too",
                           hint="give a config of only 'environment:' and 'limits:' (the bundle's config is the rest)")
    with bundle.opened(args.like, args.expect, _reads) as found:
        bundle.must_verify(found, args.like, "nothing was run")
        assert found.store is not None
        info = found.store.run(found.run_id)
        digest = found.sha256
    from harness.execution.schema import as_written

    data = {k: v for k, v in as_written(info.config).items() if k != "environment"}
    data["environment"] = site.get("environment", DEFAULT_ENVIRONMENT)
    env = {"environment": {"kind": args.env}} if args.env else {}
    data.pop("limits", None)  # (the other site's hardware: its link, its clients' memory)
    if "limits" in site:
        data["limits"] = site["limits"]
    plan = build_plan(data, source=f"like run {info.id} (bundle sha256 {digest})", overrides=env,
                      elsewhere=f"bundle {files.printable(args.like)}")
    print(f"running the work of run {info.id} (bundle sha256 {digest[:16]}…) on environment "
          f"'{plan.config.environment.kind}'")
    return plan


def _env_for_lab(args: argparse.Namespace) -> Plan:
    overrides = {"environment": {"kind": args.env} if args.env else None}
    return plan_from_file(args.config, overrides)


def cmd_lab(args: argparse.Namespace) -> int:
    """Any environment's lab, through the Environment contract."""
    from harness.execution.plan import environment_from_file
    from harness.execution.progress import Progress

    progress = Progress()
    if args.force and args.action != "down":
        raise BadInput(f"--force is for 'lab down', not 'lab {args.action}'")
    if args.action == "up":
        plan = _env_for_lab(args)
        env = plan.environment
        with env.lease("lab up", progress.note), progress.step(f"lab up ({env.name}) in {env.where}"):
            cluster = env.start(plan.services() or set(env.provides), progress=progress.note)
            try:
                if not env.client_nodes:
                    _attach_all(plan, cluster, progress)
            except BaseException:
                with signals.shielded():
                    env.stop()  # half a lab is no lab: undo everything, then report why
                raise
        _print_status(env.status())
        _print_lease(env)
        return 0
    env = environment_from_file(args.config, args.env)
    if args.action == "down":
        with ExitStack() as leased:
            _lease_to_take_down(env, leased, args.force, progress)
            with progress.step(f"lab down ({env.name}) in {env.where}"), signals.shielded():
                problems = env.stop()
        if problems:
            raise DfsbenchError("some lab resources could not be removed:\n  " + "\n  ".join(problems),
                                hint="fix what is named above and run 'dfsbench lab down' again")
        return 0
    status = env.status()
    _print_status(status)
    _print_lease(env)
    return 0 if status.healthy else 1


def _lease_to_take_down(env: Any, leased: ExitStack, force: bool, progress: Progress) -> None:
    """The lab's lease for 'lab down' (a stale one is taken over); where a run holds it,
    refused — or, with ``force``, the lab is taken down under that run, which is said.
    (No lab directory: nothing to take down, and none is made for a lease.)"""
    from harness.api.lab import LabBusy, LabEnvironment

    if isinstance(env, LabEnvironment) and not env.lab_dir.exists():
        return
    try:
        leased.enter_context(env.lease("lab down", progress.note))
    except LabBusy as busy:
        who = str(busy.holder) if busy.holder is not None else "another dfsbench process"
        if not force:
            raise DfsbenchError(f"{busy.message}; taking the lab down would pull it from under that run",
                                hint="wait for that run to end, or add --force to take the lab down all the same "
                                     "(that run's cells then fail)") from None
        progress.note(f"--force: taking the lab down under {who}, which holds its lease (its cells will fail)")


def _print_lease(env: Any) -> None:
    """Who holds the lab's lease, where the environment keeps a lab that is up."""
    from harness.api.lab import LabEnvironment

    if not isinstance(env, LabEnvironment) or not env.ledger_path.exists():
        return
    held, taken = env.holder()  # (the lock decides; the ledger only names)
    if taken:
        print(_shown(f"  lease: held by {held or 'a dfsbench process (it has not named itself yet)'}"))
    elif held is None:
        print("  lease: free (no run holds the lab)")
    else:
        why = "is gone" if not held.alive() else "does not hold its lock"
        print(_shown(f"  lease: stale — {held} {why}; the next run or 'lab down' takes it over"))


def _attach_all(plan: Any, cluster: Any, progress: Progress) -> None:
    """Mount every backend that needs the lab, verified, and keep the mounts with the lab."""
    for backend in plan.backends:
        if not backend.requires or backend.kind != "path":
            continue
        with progress.step(f"mount {backend.name}/{backend.variant}"):
            # open without detach: the mount belongs to the lab; 'lab down' undoes it (each
            # variant of a backend under a directory of its own: two would share a mount point)
            target = backend.open(cluster, cluster.workdir / "mnt" / backend.variant)
            progress.note(f"{backend.name} at {target.path} ({target.description.get('fs_type')})")


def _print_status(status: LabStatus) -> None:
    print(f"lab: {'up' if status.up else 'none'} ({status.where})")
    for s in status.services:
        print(f"  {s.name}: {'healthy' if s.healthy else 'NOT HEALTHY'} — {s.state}")
    for path, fstype in status.mounts:
        print(f"  mount {path}: {fstype + ' (verified in /proc/mounts)' if fstype else 'NOT MOUNTED'}")
    if status.processes:
        running = sum(1 for _, alive in status.processes if alive)
        print(f"  processes: {running} of {len(status.processes)} running")
        for name, alive in status.processes:
            if not alive:
                print(f"    {name}: NOT RUNNING")


def cmd_list(args: argparse.Namespace) -> int:
    """Every plugin registered, a line each, its name and what it says of itself escaped
    (a plugin is a stranger's code); one that cannot be used is named BROKEN with why, and
    the others are listed all the same. Exit 1 where one is broken."""
    broken = 0
    for kind in ("environment", "backend", "workload", "system"):
        print(f"{kind}s:")
        for name in registry.names(kind):
            shown = files.printable(name, 80)
            try:
                cls = registry.load(kind, name)
            except DfsbenchError as exc:
                print(f"  {shown:<12} BROKEN: {files.printable(exc.message, 1000)}")
                broken += 1
                continue
            print(f"  {shown:<12} {files.printable(_about(cls), 200)}")
    return 1 if broken else 0


def _about(cls: type) -> str:
    """The first line of what a plugin's module says of itself."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    doc = getattr(module, "__doc__", None)
    lines = doc.strip().splitlines() if isinstance(doc, str) else []
    return lines[0] if lines else ""


def _say_notes(plan: Plan) -> None:
    """What the user should hear before the plan runs: its notes, and every installed plugin
    that cannot be used (a line each: a config that does not name it goes on without it)."""
    notes = list(plan.notes)
    for kind in registry.GROUPS:
        for message in registry.broken(kind).values():
            if not any(message in note for note in notes):
                notes.append(f"{message}; left out (a config that names it is refused)")
    for note in notes:
        print(_shown(f"dfsbench: note: {note}"), file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    plan = plan_from_file(args.config)
    _say_notes(plan)
    print(f"{files.printable(args.config)}: ok — environment {plan.environment.name}, scale {plan.config.scale}, "
          f"repeat {plan.config.repeat}")
    print(f"  backends: {', '.join(f'{b.name}/{b.variant}' for b in plan.backends)}")
    for w in plan.workloads:
        cells = w.cells()
        warmup = w.warmup(cells[0]) if cells else None
        print(f"  workload {w.name}: {len(cells)} cells"
              + (f", each after {warmup[1]:g} s of untimed warm-up ({warmup[0]})" if warmup else ""))
    if len(plan.points) > 1:  # (what is printed of a config is shown escaped: it is a stranger's text)
        print(f"  sweep: {len(plan.points)} points, each runs every cell: "
              + "; ".join(files.printable(p.describe()) for p in plan.points))
    order = plan.config.order
    if not order.shuffle:
        print("  order: as listed (order: listed)")
    elif order.seed is None:
        print("  order: shuffled, from a seed drawn as the run starts (printed then, and stored with the run)")
    else:
        swept = Order(order.seed).points(plan.points, 0)
        print(f"  order: shuffled, seed {order.seed}" + (": the sweep's points in repeat 1: " + "; ".join(
            files.printable(p.describe()) for p in swept if p.values) if len(plan.points) > 1 else ""))
        for line in Order(order.seed).cells_said(swept[0], 0, plan.points.index(swept[0])):
            print(f"    {files.printable(line)}")
    return 0


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading every record of the runs shown: Python's cycle collector would walk the records
    again and again while they are made and tabled (a second of 100,000), and none of them is
    in a cycle; it runs again afterwards."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cmd_compare(args: argparse.Namespace) -> int:
    with _collector_paused():
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from harness.report import gate

    if args.fail_on is not None and args.baseline is None:
        raise BadInput("--fail-on needs --baseline RUN: a regression is measured against something")
    from harness.report.render import terminal
    from harness.report.view import build_view, comparability

    rules = gate.parse_rules(args.fail_on) if args.fail_on is not None else []
    catalogue = _catalogue(args)
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
    if args.table is not None or args.output is not None:
        _tables_csv(args, catalogue, ids, cv)
    elif args.records:
        from harness.report.render import records_csv
        from harness.report.view import build_view

        view = build_view(catalogue, ids, with_tables=False, series=False, reference=args.reference,
                          apart=args.apart)
        print("\n".join(_shown(line) for line in records_csv(view.records).split("\n")), end="")
        return 0
    else:
        print(_render(catalogue, ids, args.format, args.each_repeat, cv, args.series, args.reference, args.apart),
              end="" if args.format != "table" else "\n")
    if base is None:
        return 0
    # what the baseline and the gate say goes beside a document (JSON, CSV) on stdout, never
    # into it: to stderr; a person reading the tables (table, markdown) reads it below them
    said = sys.stderr if args.format in ("json", "csv") else sys.stdout
    for note, who in comparability([catalogue.run(i) for i in [base, *ids]]):
        print(_shown(f"{'not comparable' if who is not None else 'measured apart'}: {note}"), file=said)
    if not rules:
        return 0
    # the gate reads the same annotated records the tables show
    new = build_view(catalogue, ids, with_tables=False, series=False).records
    old = build_view(catalogue, [base], with_tables=False, series=False).records
    compared, findings = gate.check(new, old, rules)
    if compared == 0:
        raise BadInput(f"no cell of {', '.join(ids)} matches a cell of {base} under '{gate.shown(rules)}'",
                       hint="the runs must share workloads, backends, variants and parameters")
    if findings:
        print(terminal([gate.table(findings, base)], []), file=said)
    print(f"gate: {compared} cells compared with {base}; {len(findings)} regressed beyond '{gate.shown(rules)}'",
          file=said)
    return 1 if findings else 0


def _tables_csv(args: argparse.Namespace, catalogue: Catalogue, ids: list[str], cv: float | None) -> None:
    """``compare --format csv --table NAME``: that table on stdout; ``-o DIR``: each table
    (or that one) written to DIR/NAME.csv, where NAME is the table's name (a slug the code
    makes, harness.report.render.table_names: never a path of a stored run's text)."""
    from harness.report.render import table_csv, table_names
    from harness.report.view import build_view

    kept = _kept(_results_dir(args))
    if args.output is not None:  # (before the work)
        if args.output.exists() and not args.output.is_dir():
            raise BadInput(f"-o {files.printable(args.output)} is not a directory: each table is written to a file "
                           "of its own in it", hint="name a directory (it is made where there is none)")
        files.check_output(args.output / "table.csv", "table", kept)
    view = build_view(catalogue, ids, args.each_repeat, cv, reference=args.reference, apart=args.apart)
    found = list(zip(table_names(view.tables), view.tables))
    if args.table is not None:
        found = [(name, t) for name, t in found if name == args.table]
        if not found:
            shown = ", ".join(table_names(view.tables)) or "none (these runs fill no table)"
            raise BadInput(f"--table {files.printable(args.table, 80)}: no such table of these runs",
                           hint=f"name one of: {shown}")
    if args.output is None:
        print("\n".join(_shown(line) for line in table_csv(found[0][1]).split("\n")), end="")
        return
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot make the directory {files.printable(args.output)}: {exc.strerror}") from None
    for name, t in found:
        files.write_text(args.output / f"{name}.csv", table_csv(t), "table", kept)
    print(f"wrote {len(found)} table{'s' if len(found) != 1 else ''} to {files.printable(args.output)}: "
          + ", ".join(f"{name}.csv" for name, _ in found))


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report.html import render
    from harness.report.view import build_view

    catalogue = _catalogue(args)
    ids = [catalogue.resolve(ref) for ref in args.runs]
    if args.output.suffix.lower() not in (".html", ".htm"):
        raise BadInput(f"{files.printable(args.output)}: the report is HTML; name the file *.html")
    kept = _kept(_results_dir(args))
    files.check_output(args.output, "report", kept)  # (before the work; and again as it is written)
    with _collector_paused():
        text = render(build_view(catalogue, ids, reference=args.reference, apart=args.apart))
    files.write_text(args.output, text, "report", kept)
    print(f"wrote {files.printable(args.output)} ({len(text) / 1e6:.1f} MB, self-contained)")
    return 0


def _kept(results: Path) -> dict[Path, str]:
    """What no file dfsbench writes for a user may land on: the store and its journals, and
    every run's raw outputs."""
    from harness.results.schema import DB_NAME

    return {**{results / (DB_NAME + end): "the results store" for end in ("", "-wal", "-shm", "-journal")},
            results / "raw": "among the stored runs' raw outputs"}


MAX_TOOL_OUTPUT = 512 << 20  # fio's json+ of a long run with latency histograms is tens of MiB


def _parsed(tool: str, file: Path) -> tuple[list[Any], bytes]:
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

    sys.stdout.write(json_lines(_parsed(args.tool, args.file)[0]))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harness.results import bundle

    catalogue = _catalogue(args)
    run_id = catalogue.resolve(args.run)
    if run_id not in catalogue.store.run_ids():
        raise BadInput(f"'{files.printable(args.run)}' is a reference run shipped with dfsbench, not a stored one",
                       hint="export a run of --results")
    if not args.output.name.endswith((".tar.gz", ".tgz")):
        raise BadInput(f"{files.printable(args.output)}: a bundle is a gzip'd tar; name the file *.tar.gz")
    digest, counts = bundle.export(catalogue.store, run_id, args.output, _kept(_results_dir(args)))
    print(f"wrote {files.printable(args.output)}: run {run_id}, {counts['records']:,} records, "
          f"{counts['raw']:,} raw outputs")
    print(f"sha256 {digest}  (publish it beside the results: 'dfsbench verify FILE --expect' checks a copy "
          "against it)")
    return 0


def _reads(store: Store, run_id: str) -> None:
    """What the outputs read of a stored run, read of a bundle's before it is taken: the
    comparability check, the tables (terminal, pooled and --apart), the JSON document, the
    CSV of its records and the HTML report, built and thrown away."""
    from harness.report.html import render
    from harness.report.render import json_document, records_csv, terminal
    from harness.report.view import build_view, comparability
    from harness.results.catalogue import Catalogue

    catalogue = Catalogue(store.root)
    info = catalogue.run(run_id)
    comparability([info, info])  # (what compare reads of it beside another run)
    view = build_view(catalogue, [run_id])
    terminal(view.tables, view.header)
    apart = build_view(catalogue, [run_id], apart=True)
    terminal(apart.tables, apart.header)
    whole = build_view(catalogue, [run_id], with_tables=False, series=True)
    json_document(whole)
    records_csv(whole.records)
    render(view)


def _said(found: Any) -> str:
    """Where and when the bundle says it was exported, as its word."""
    from harness.results import bundle

    from harness.units import moment

    came = bundle.said(found)
    return (f"its manifest says: exported from {came['exported_from'] or 'an unknown host'} at "
            f"{moment(came['exported_at'])} by dfsbench {came['exported_by'] or '(not said)'}")


def cmd_verify(args: argparse.Namespace) -> int:
    from harness.results import bundle

    with bundle.opened(args.file, args.expect, _reads) as found:
        shown = files.printable(args.file)
        if found.problems:
            print(f"{shown}: does NOT verify ({len(found.problems)} "
                  f"{'difference' if len(found.problems) == 1 else 'differences'}):")
            for problem in found.problems:
                print(f"  - {_shown(problem)}")
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
        print(f"  {_shown(_said(found))}")
        print(f"  sha256 {found.sha256}")
    return 0


def _import_bundle(args: argparse.Namespace) -> int:
    from harness.results import bundle

    path = Path(args.tool)
    if args.backend is not None or args.variant != "default" or args.label is not None:
        raise BadInput("--backend, --variant and --label are for a tool output (import TOOL FILE): a bundle's "
                       "run keeps its own")
    with bundle.opened(path, args.expect, _reads) as found:
        bundle.must_verify(found, path)  # (before the store is opened: a refused bundle makes no store)
        store = _store(args)
        try:
            run_id, n = bundle.import_into(found, store, path)
        finally:
            store.close()
        told = _said(found)
    print(f"imported run {run_id} from {files.printable(path)}: {n:,} records, {len(found.raw):,} raw outputs; "
          + _shown(told))
    print(f"sha256 {found.sha256}" + (" (the one expected)" if args.expect else
                                      " (not set against a published one: --expect)"))
    print(f"run id: {run_id}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import hashlib
    from dataclasses import replace

    from harness.results.store import new_run_id

    if args.file is None:
        return _import_bundle(args)
    if args.expect is not None:
        raise BadInput("--expect is for a bundle (import BUNDLE): a tool output has no manifest")
    if args.backend is None:
        raise BadInput("import TOOL FILE needs --backend: the system the output was measured on")
    records, data = _parsed(args.tool, args.file)
    store = _store(args)
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


def _render(catalogue: Catalogue, ids: list[str], fmt: str, each_repeat: bool = False,
            cv_threshold: float | None = None, series: bool = False, reference: str | None = None,
            apart: bool = False) -> str:
    from harness.report import summary
    from harness.report.render import csv_text, json_document, markdown, terminal
    from harness.report.view import build_view

    # (a record's figure over time is read only where it is exported: JSON, or CSV with --series)
    view = build_view(catalogue, ids, each_repeat, cv_threshold, with_tables=not series,
                      series=fmt == "json" or series, reference=reference, apart=apart)
    if series:  # (one row per point of every series: harness.report.timelines)
        from harness.report.timelines import csv_text as series_csv, entries

        return "\n".join(_shown(line) for line in series_csv(entries(view.records)).split("\n"))
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
    return "\n".join(_shown(line) for line in text.split("\n"))


def _shown(line: str) -> str:
    """A line of output with its control characters escaped (a CSV line keeps its '\\r')."""
    body, end = (line[:-1], "\r") if line.endswith("\r") else (line, "")
    return (body if body.isprintable() else files.printable(body, most=1 << 30)) + end


COMMANDS = {"run": cmd_run, "lab": cmd_lab, "list": cmd_list, "check": cmd_check,
            "compare": cmd_compare, "parse": cmd_parse, "import": cmd_import, "report": cmd_report,
            "export": cmd_export, "verify": cmd_verify}


if __name__ == "__main__":
    sys.exit(main())
