"""The base of environments that keep a lab: everything a lab creates is recorded in a
ledger in its lab directory the moment it exists, so that the end of a run, ``dfsbench
lab down`` or a later invocation after a crash undoes exactly that.

The base owns what every such environment does the same way — where the lab lives (the
``lab_dir`` option, else ``$DFSBENCH_<NAME>_LAB_DIR``, else
``/var/tmp/dfsbench-<name>-lab``), its ledger, its lease (one process at a time uses,
brings up or takes down a lab: :meth:`LabEnvironment.lease`), the refusal to start a
second lab over one, the undo of a partial bring-up, ``up`` (reuse a lab that stays up —
only one brought up with the options the run asks for — else start one for the run and
stop it after) and ``stop``. An environment keeps what is its own: how
its services come up (:meth:`LabEnvironment.bring_up`), what backends get of a lab that
is up (:meth:`LabEnvironment.cluster`), and its status.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from harness.api.contracts import Cluster, Environment, Options, PluginOptions
from harness.errors import BadInput, DfsbenchError
from harness.system import files, signals
from harness.system.lease import Holder, LeaseLock
from harness.system.ledger import LAB, Ledger

Note = Callable[[str], None]


LEDGER = "ledger.json"
LEASE = "lease"  # the lock file of the lab's lease (harness.system.lease), beside its ledger
LEASE_POLL_S = 1.0  # how often a process that waits for a lease tries to take it
LEASE_NOTE_S = 30.0  # how often it says that it still waits
LEASE_TURNS = 100  # how often the lab's directory may go under a process taking its lease before it gives up
DEFAULT_ROOT = Path("/var/tmp")  # where labs live unless told otherwise


def lab_variable(name: str) -> str:
    """The environment variable that moves an environment's lab: DFSBENCH_<NAME>_LAB_DIR."""
    return "DFSBENCH_" + "".join(c if c.isalnum() else "_" for c in name.upper()) + "_LAB_DIR"


# a lab directory's path ends up in the daemons' configuration files and command lines
# (ceph.conf, glusterd's options, mount points, CEPH_ARGS): only characters none of them
# reads as syntax
SAFE_PATH = re.compile(r"[A-Za-z0-9_./+@-]+")
SAFE_CHARACTERS = "letters, digits and _ . / + @ - only"


def checked_lab_dir(where: str | Path, source: str) -> Path:
    """``where`` as an absolute path (relative: to the working directory, which is part of
    it then), or BadInput naming ``source`` where it holds a character a daemon's files
    would read as syntax."""
    path = Path(where).absolute()
    if not SAFE_PATH.fullmatch(str(path)):
        raise BadInput(f"{source}: the lab directory {str(path)!r} holds characters a lab's daemons "
                       "would read as syntax", hint=f"use a path of {SAFE_CHARACTERS}")
    why = _not_a_lab(path)
    if why:
        raise BadInput(f"{source}: the lab directory {files.printable(path)} is {why}", hint=A_LAB_DIR)
    return path


A_LAB_DIR = "give the lab a directory of its own, which it makes and removes whole (e.g. /var/tmp/dfsbench-lab)"


def _not_a_lab(path: Path) -> str | None:
    """Why ``path`` cannot be a lab's directory (one that is dfsbench's alone: the lab removes
    it whole), or None."""
    return files.system_directory(path, dedicated=True)


class LabOptions(Options):
    lab_dir: Path | None = Field(None, description="where the lab keeps its ledger and the runs' "
                                 "files (default $DFSBENCH_<NAME>_LAB_DIR, else "
                                 "/var/tmp/dfsbench-<name>-lab)")

    @field_validator("lab_dir")
    @classmethod
    def _safe(cls, v: Path | None) -> Path | None:
        if v is not None and not SAFE_PATH.fullmatch(str(v)):
            raise ValueError(f"{str(v)!r} holds characters a lab's daemons would read as syntax; use "
                             f"{SAFE_CHARACTERS}")
        why = _not_a_lab(v) if v is not None else None
        if why:
            raise ValueError(f"{files.printable(v)} is {why}; {A_LAB_DIR}")
        return v


class LabBusy(DfsbenchError):
    """Another process holds the lease on the lab: ``holder`` (None: it has not said who
    it is yet)."""

    def __init__(self, message: str, holder: Holder | None, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.holder = holder


class LabTakenDown(DfsbenchError):
    """The lab a process brought up or uses was taken down under it by another command
    ('lab down --force'): its ledger is gone, or is another lab's, made anew in its place."""


MISSING = object()  # a key one side of a comparison of options has not


class LabEnvironment(Environment):
    """An environment whose lab is recorded in a ledger in its lab directory."""

    Options: ClassVar[type[Options]] = LabOptions
    options: LabOptions
    # 'lab up' leaves the lab running, for runs to reuse; False: a lab lives for one run (or
    # one 'lab up' check), and a ledger found is what a run that crashed left to undo
    stays_up: ClassVar[bool] = True
    # seconds a daemon gets after SIGTERM when the whole lab goes away (None: its own grace):
    # its data is deleted right after, so there is nothing for an orderly shutdown to keep
    teardown_grace: ClassVar[float | None] = None
    # (variable, default directory) under which earlier versions of dfsbench kept this
    # environment's lab: the variable is still read, and a lab found there still undone
    former_places: ClassVar[tuple[tuple[str, str], ...]] = ()
    # the options that do not change the lab, only how a run uses it (how long it waits, how
    # often it samples): a lab brought up with other values of these is reused all the same.
    # Every other option — the lab's own and each system's sizing keys — must be what the lab
    # was brought up with (:meth:`differences`)
    run_only: ClassVar[frozenset[str]] = frozenset({"lab_dir"})

    def __init__(self, options: PluginOptions) -> None:
        super().__init__(options)
        self._lease: Holder | None = None  # the lease this object holds on its lab

    @property
    def lab_dir(self) -> Path:
        """The ``lab_dir`` option, else ``$DFSBENCH_<NAME>_LAB_DIR``, else the default; where
        neither is given, a lab an earlier dfsbench keeps under a name of its own
        (:attr:`former_places`) is still this environment's, until it is taken down."""
        if self.options.lab_dir is not None:
            return checked_lab_dir(self.options.lab_dir, "lab_dir")
        for variable in (lab_variable(self.name), *(v for v, _ in self.former_places)):
            if os.environ.get(variable):
                return checked_lab_dir(os.environ[variable], f"${variable}")
        default = DEFAULT_ROOT / f"dfsbench-{self.name}-lab"
        if not (default / LEDGER).exists():
            for _, path in self.former_places:
                if (Path(path) / LEDGER).exists():
                    return Path(path)
        return checked_lab_dir(default, "the default lab directory")

    @property
    def ledger_path(self) -> Path:
        return self.lab_dir / LEDGER

    @property
    def where(self) -> str:
        return str(self.lab_dir)

    def saved(self) -> Ledger | None:
        """The ledger of the lab that is up (or that a crash left), if there is one."""
        return Ledger.open(self.ledger_path) if self.ledger_path.exists() else None

    # ---------------------------------------------------------------- the lease

    def holder(self) -> tuple[Holder | None, bool]:
        """Who the lab's ledger says holds its lease (None: nobody), and whether its lease is
        held now: its lock taken by a process (the lock decides: a holder the ledger names
        while nobody holds the lock is stale — gone, or never the lock's)."""
        ledger = self.saved()
        held = Holder.read(ledger.data.get("lease")) if ledger is not None else None
        return held, LeaseLock.taken(self.lab_dir / LEASE)

    @contextmanager
    def lease(self, what: str, note: Note | None = None, wait: float = 0) -> Iterator[Holder]:
        """Hold the lab's lease for the block (``what``: who holds it, as a refusal names it:
        ``run <id>``, ``lab up``): no other process brings this lab up, uses it or takes it
        down meanwhile. Where another holds its lock, refused (:class:`LabBusy`) naming the
        holder the ledger names — after waiting up to ``wait`` seconds for it to be let go,
        said now and then (``note``). Whoever takes the lock holds the lease: a holder the
        ledger still names is replaced, which is said. Let go at the end of the block,
        however it ends."""
        say = note or (lambda _: None)
        if self._lease is not None:
            raise DfsbenchError(f"the {self.name} lab in {self.lab_dir} is leased twice by one process")
        me, lock = self._take(what, say, wait)
        self._lease = me
        try:
            yield me
        finally:
            with signals.shielded():
                self._let_go(me, lock)

    def _take(self, what: str, say: Note, wait: float) -> tuple[Holder, LeaseLock]:
        """The lease taken (its holder in the ledger, where there is a lab), waiting up to
        ``wait`` seconds for another holder to let go; else LabBusy."""
        began = told = time.monotonic()
        while True:
            lock = self._lock()
            if lock.held:
                try:
                    return self._write_holder(Holder.me(what), say), lock
                except BaseException:
                    lock.release()
                    raise
            held = self.holder()[0]
            waited = time.monotonic() - began
            if waited >= wait:
                raise self._busy(held, waited if wait else None)
            if time.monotonic() - told >= LEASE_NOTE_S or told == began:
                say(f"waiting for the lease on the {self.name} lab, held by "
                    f"{held or 'another dfsbench process'} ({waited:.0f} s of at most {wait:.0f} s)")
                told = time.monotonic()
            time.sleep(min(LEASE_POLL_S, max(0.0, wait - waited)))

    def _lock(self) -> LeaseLock:
        """The lease's lock, taken if no other process holds it (see :attr:`LeaseLock.held`)."""
        for _ in range(LEASE_TURNS):
            self.lab_dir.mkdir(parents=True, exist_ok=True)
            lock = LeaseLock(self.lab_dir / LEASE)
            try:
                lock.take()
                return lock
            except FileNotFoundError:  # (another's _let_go removed the directory after our mkdir)
                continue
        raise DfsbenchError(f"the {self.name} lab's directory {files.printable(self.lab_dir)} was removed "
                            f"{LEASE_TURNS} times between its making and the taking of its lease",
                            hint="something removes it over and over: find what, and stop it")

    def _write_holder(self, me: Holder, say: Note) -> Holder:
        """``me`` as the lease's holder in the ledger (where there is a lab), over any holder it
        names: this process holds the lock, so that one does not."""
        ledger = self.saved()
        if ledger is None:
            return me
        held = Holder.read(ledger.data.get("lease"))
        if held is not None and (held.pid, held.start) != (me.pid, me.start):
            if held.alive():
                say(f"the lease on the {self.name} lab named {held} as its holder, which did not hold its lock; "
                    "replaced")
            else:
                say(f"the lease of {held} on the {self.name} lab is stale: its process is gone; taken over")
        ledger.data["lease"] = me.saved()
        ledger.save()
        return me

    def _let_go(self, me: Holder, lock: LeaseLock) -> None:
        """The lease off the ledger (where the lab is still there), the lock let go, and the
        lab's directory removed where the lease made it and no lab is in it."""
        self._lease = None
        try:
            ledger = self.saved()
            if ledger is not None and Holder.read(ledger.data.get("lease")) == me:
                del ledger.data["lease"]
                ledger.save()
        finally:
            lock.release()
            if not self.ledger_path.exists():
                try:
                    self.lab_dir.rmdir()
                except OSError:  # (not empty, or already gone)
                    pass

    def _leased(self, note: Note | None) -> AbstractContextManager[object]:
        """The lease for a caller that did not take one itself (a run takes its own first)."""
        return nullcontext() if self._lease is not None else self.lease("a dfsbench process", note)

    def _busy(self, holder: Holder | None, waited: float | None = None) -> LabBusy:
        who = f"{holder} holds its lease" if holder is not None else "another dfsbench process holds its lease"
        after = f" (still, after waiting {waited:.0f} s)" if waited is not None else ""
        return LabBusy(f"the {self.name} lab in {files.printable(self.lab_dir)} is in use: {who}{after}", holder,
                       hint=f"wait for it to end ('dfsbench run --wait SECONDS' waits for it), or give this one "
                            f"a lab of its own (environment.options.lab_dir, or ${lab_variable(self.name)})")

    # ---------------------------------------------------------------- what the lab was made with

    def system_keys(self) -> dict[str, frozenset[str]]:
        """Each system's sizing keys among the options, by system (none: the options are the
        lab's own): a system the run does not use is not compared."""
        return {}

    def lab_options(self) -> dict[str, Any]:
        """The options that shape the lab, as recorded in its ledger when it is made."""
        return {k: v for k, v in self.options.model_dump(mode="json").items() if k not in self.run_only}

    def differences(self, ledger: Ledger, services: set[str]) -> list[tuple[str, Any, Any]]:
        """(key, the lab's value, this run's) for each option that shapes the lab (the lab's own
        and the sizing keys of the systems in ``services``) whose value the lab was brought
        up with is not the one this run's config asks for; a value of a key one side has not
        is :data:`MISSING`. Nested options are compared key by key (``link.rate``), each as the
        option reads it: both sides are validated by the option's type and dumped with the
        context ``{"as_read": True}``, in which an option given as a text with units dumps the
        quantity it reads ('1Gbit' and '1000Mbit': 1000000000 bits per second); a difference
        is named in each side's own words."""
        from pydantic import TypeAdapter, ValidationError

        keys = self.system_keys()
        used = set().union(*(k for name, k in keys.items() if name in services))
        others = set().union(*(k for name, k in keys.items() if name not in services)) - used
        recorded = ledger.data.get("options")
        lab = recorded if isinstance(recorded, dict) else {}
        mine = self.lab_options()
        fields = type(self.options).model_fields

        def read(key: str, value: Any) -> Any:
            field = fields.get(key)
            if field is None or value is MISSING:
                return value
            adapter: TypeAdapter[Any] = TypeAdapter(field.rebuild_annotation())
            try:
                return adapter.dump_python(adapter.validate_python(value), mode="json", context={"as_read": True})
            except ValidationError:
                return value  # (a value this dfsbench does not take: as recorded)

        found: list[tuple[str, Any, Any]] = []
        for key in sorted(set(lab) | set(mine)):
            if key in self.run_only or key in others:
                continue
            theirs, ours = lab.get(key, MISSING), mine.get(key, MISSING)
            differ = {k for k, _, _ in _differ(key, read(key, theirs), read(key, ours))}
            said = [d for d in _differ(key, theirs, ours) if d[0] in differ]
            found += said or ([(key, theirs, ours)] if differ else [])  # (read, a value took another shape)
        return found

    # ---------------------------------------------------------------- each environment's own

    @abstractmethod
    def bring_up(self, ledger: Ledger, services: set[str], note: Note) -> dict[str, Any]:
        """Bring the services up, every resource in ``ledger`` the moment it exists (and
        whatever the environment needs later in ``ledger.data``); the facts of each service
        by name, of the types :attr:`provides` names. A failure is undone by the base."""

    @abstractmethod
    def cluster(self, ledger: Ledger, services: dict[str, Any], reused: bool) -> Cluster:
        """What backends get of the lab that is up, from its ledger."""

    def check_alive(self, ledger: Ledger) -> None:
        """Refuse (DfsbenchError) to reuse a lab that is up but broken."""

    def undo(self, ledger: Ledger) -> list[str]:
        """Undo what the ledger holds; the problems met. (An environment adds what its
        ledger cannot hold: a sweep of what carries the lab's label, its connections.)"""
        return ledger.undo(grace_cap=self.teardown_grace)

    @property
    def down_command(self) -> str:
        """The command that takes this lab down, as a person pastes it."""
        return shlex.join(["dfsbench", "lab", "down", "--env", self.name])

    # ---------------------------------------------------------------- the contract

    @contextmanager
    def up(self, services: set[str], progress: Note | None = None) -> Iterator[Cluster]:
        """The lab for a run, under its lease (the run's, where it took one first): the lab
        that is up, reused — it stays up — or one brought up for the run, torn down at its end.
        A lab taken down under the run by another command ('lab down --force') is said so at
        the end, however the run ended (:class:`LabTakenDown`: what failed in the run then is
        its cause), and another lab made in its place since is left alone."""
        with self._leased(progress):
            ledger = self.saved()
            if ledger is not None:
                cluster = self.reuse(ledger, services)
                try:
                    yield cluster
                except Exception:
                    self._still_here(ledger.lab)  # (what ended the run is then its cause)
                    raise
                self._still_here(ledger.lab)
                return
            cluster, lab = self._open(services, progress or (lambda _: None))
            try:
                yield cluster
            finally:
                problems = self.stop(only=lab)
                if problems:
                    raise DfsbenchError(f"the {self.name} lab was not torn down cleanly:\n  " + "\n  ".join(problems),
                                        hint=f"run '{self.down_command}' to retry")

    def start(self, services: set[str], progress: Note | None = None) -> Cluster:
        with self._leased(progress):
            cluster, lab = self._open(services, progress or (lambda _: None))
            if not self.stays_up:  # brought up to be checked, and let go again
                problems = self.stop(only=lab)
                if problems:
                    raise DfsbenchError(f"could not undo the {self.name} lab's check:\n  " + "\n  ".join(problems),
                                        hint=f"run '{self.down_command}' to retry")
        return cluster

    def open(self, services: set[str], note: Note) -> Cluster:
        """A new lab with the services: refused where one is (or a crash left one) or the
        lab directory holds something else; on failure, what was made is undone."""
        return self._open(services, note)[0]

    def _open(self, services: set[str], note: Note) -> tuple[Cluster, str]:
        """:meth:`open`, and the identity of the lab it made (in its ledger: :attr:`Ledger.lab`)."""
        unknown = services - set(self.provides)
        if unknown:
            raise DfsbenchError(f"environment '{self.name}' cannot provide {sorted(unknown)}; it provides "
                                f"{', '.join(sorted(self.provides)) or 'none'}")
        if self.ledger_path.exists():
            raise self._found_ledger()
        if self.lab_dir.exists() and any(p.name != LEASE for p in self.lab_dir.iterdir()):
            raise DfsbenchError(f"{self.lab_dir} exists and is not empty, but holds no lab ledger",
                                hint=f"choose another lab_dir (or {lab_variable(self.name)}), or remove "
                                     "that directory yourself")
        ledger = Ledger(self.ledger_path)
        lab = ledger.data[LAB] = uuid.uuid4().hex  # (a lab made anew in this place later is another)
        if self._lease is not None:  # (from the start: no other run joins a lab on its way up)
            ledger.data["lease"] = self._lease.saved()
        if self.stays_up:  # what a later run compares its own with before it reuses the lab
            ledger.data["options"] = self.lab_options()
        ledger.tree(self.lab_dir, background=True)  # (made by dfsbench: it goes whole)
        try:
            found = self.bring_up(ledger, services, note)
            ledger.data["services"] = {name: asdict(facts) for name, facts in found.items()
                                       if is_dataclass(facts) and not isinstance(facts, type)}
            ledger.save()
            return self.cluster(ledger, found, reused=False), lab
        except BaseException:
            with signals.shielded():  # half a lab is no lab: undo everything, then say why
                try:
                    problems = self.stop(only=lab)
                except LabTakenDown as gone:  # (or its ledger never written: nothing to undo)
                    problems = [gone.message] if ledger.written else []
            if problems:
                note("undoing the partial lab left: " + "; ".join(problems))
            raise

    def check_lab(self, services: set[str]) -> None:
        """Refuse, before a run begins, the lab that is up where the run could not use it
        (:meth:`reuse` refuses the same)."""
        ledger = self.saved()
        if ledger is not None:
            self._usable(ledger, services)

    def reuse(self, ledger: Ledger, services: set[str]) -> Cluster:
        """The lab that is up, for a run that needs ``services``."""
        return self.cluster(ledger, self._usable(ledger, services), reused=True)

    def _usable(self, ledger: Ledger, services: set[str]) -> dict[str, Any]:
        """The services of the lab that is up, where a run that needs ``services`` may use
        it: one that stays up, alive, brought up with the options the run's config asks for,
        with those services."""
        if not self.stays_up:
            raise self._found_ledger()
        self.check_alive(ledger)
        if not isinstance(ledger.data.get("options"), dict):
            raise DfsbenchError(f"the {self.name} lab in {self.lab_dir} was set up by an earlier version of "
                                "dfsbench, which did not record the options it was brought up with: whether it "
                                "is the lab this run's config asks for cannot be told",
                                hint=f"run '{self.down_command}' and let the run start its own lab")
        differ = self.differences(ledger, services)
        if differ:
            raise DfsbenchError(
                f"the running {self.name} lab in {files.printable(self.lab_dir)} was brought up with other options "
                "than this run's config asks for; measured on it, the run would be stored with options its lab "
                "did not have:\n  " + "\n  ".join(
                    f"environment.options.{files.printable(key, 80)}: the lab has {_shown(lab, 'no value recorded')}, "
                    f"the config asks for {_shown(mine, 'none: no such option here')}" for key, lab, mine in differ),
                hint=f"run with the options the lab was brought up with, or give this run a lab of its own "
                     f"(environment.options.lab_dir, or ${lab_variable(self.name)}), or take this one down "
                     f"('{self.down_command}') and let the run bring up its own")
        found = self.services_of(ledger)
        if not services <= set(found):
            raise DfsbenchError(f"the running {self.name} lab in {self.lab_dir} has "
                                f"{sorted(found) or 'no services'}, this run needs {sorted(services)}",
                                hint=f"run '{self.down_command}' and let the run start its own lab")
        return found

    def services_of(self, ledger: Ledger) -> dict[str, Any]:
        """The typed facts of the services the ledger names (keys a later or earlier
        dfsbench wrote that these types lack are passed over; one they need and the ledger
        lacks makes the lab one to take down, not to use)."""
        found = {}
        for name, facts in ledger.data.get("services", {}).items():
            kind = self.provides.get(name)
            if kind is None or not isinstance(facts, dict):
                continue
            known = {f.name for f in fields(kind)} if is_dataclass(kind) else set(facts)
            try:
                found[name] = kind(**{k: v for k, v in facts.items() if k in known})
            except TypeError as exc:
                raise DfsbenchError(f"the {self.name} lab in {self.lab_dir} was set up by another version "
                                    f"of dfsbench: its {name} service cannot be read ({exc})",
                                    hint=f"run '{self.down_command}' and start a new one") from None
        return found

    def stop(self, only: str | None = None) -> list[str]:
        """Undo the lab in the lab directory (``only``: where it is the lab of that identity,
        else :class:`LabTakenDown` and nothing undone); the problems met."""
        ledger = self._ledger_of(only) if only is not None else self.saved()
        if ledger is None:
            return []
        problems = self.undo(ledger)
        if not problems:
            if ledger.ours():  # (not another lab's, made in its place meanwhile)
                self.ledger_path.unlink()
            for made in (self.lab_dir / "runs", self.lab_dir):  # (the ledger's tree, if still here)
                try:
                    made.rmdir()
                except OSError:
                    pass
        return problems

    def _still_here(self, lab: str | None) -> None:
        """Nothing where the lab in the lab directory is the lab ``lab`` (its identity), else
        :class:`LabTakenDown` (:meth:`_ledger_of`)."""
        self._ledger_of(lab)

    def _ledger_of(self, lab: str | None) -> Ledger:
        """The ledger in the lab directory, where it is of the lab ``lab`` (its identity);
        else :class:`LabTakenDown`: that lab was taken down by another command, and what is
        there now (nothing, or another lab made in its place) is not this process's to touch."""
        now = "the lab there now is another one, made since: left alone"
        try:
            ledger = self.saved()
        except DfsbenchError:  # (what is there now cannot be read: not this process's lab either)
            ledger = None
        else:
            if ledger is None:
                now = "no lab is there now"
            elif ledger.lab == lab:
                return ledger
        raise LabTakenDown(f"the {self.name} lab in {files.printable(self.lab_dir)} was taken down under this "
                           f"process by another command ('{self.down_command} --force'); {now}",
                           hint="run again (on the lab that is up then, or on one the run brings up itself), or "
                                f"give the run a lab of its own (environment.options.lab_dir, or "
                                f"${lab_variable(self.name)})")

    def _found_ledger(self) -> DfsbenchError:
        down = self.down_command
        if self.stays_up:
            return DfsbenchError(f"a {self.name} lab is already set up in {self.lab_dir}",
                                 hint=f"use it, or run '{down}' first")
        return DfsbenchError(f"an earlier run left things to undo (ledger {self.ledger_path})",
                             hint=f"run '{down} CONFIG' first")


def _differ(key: str, lab: Any, mine: Any) -> list[tuple[str, Any, Any]]:
    """(key, lab's, mine) where the two values of an option differ; two mappings key by key."""
    if isinstance(lab, dict) and isinstance(mine, dict):
        return [found for k in sorted(set(lab) | set(mine), key=str)
                for found in _differ(f"{key}.{k}", lab.get(k, MISSING), mine.get(k, MISSING))]
    same = lab is not MISSING and mine is not MISSING and type(lab) is type(mine) and lab == mine
    return [] if same else [(key, lab, mine)]


def _shown(value: Any, missing: str) -> str:
    """An option's value in a message, as JSON, escaped (a config's or a ledger's text)."""
    if value is MISSING:
        return f"({missing})"
    return files.printable(json.dumps(value, sort_keys=True, ensure_ascii=False), 120)
