"""A ledger of every host resource dfsbench creates, and the undo of exactly those.

Processes (by pid and start time), mounts, loop devices, files and directories, and
resources inside a cluster (pools, images, volumes: with the command that removes them) are
written to a JSON file the moment they exist, so a crash, a Ctrl-C or another
invocation (``dfsbench lab down``) can undo them. Nothing is ever swept by pattern.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import DfsbenchError
from harness.system import files, proc

LAB = "lab"  # the key in a ledger's data of the identity of its lab (Ledger.lab)


@dataclass
class Ledger:
    path: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _thread: threading.local = field(default_factory=threading.local, repr=False, compare=False)
    # it is (or was) a file: read from one, or written once
    _on_disk: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def open(cls, path: Path) -> Ledger:
        """Load the ledger at ``path``, or start an empty one. One that cannot be read as a
        ledger (not JSON, nested past reading, not of a ledger's shape: written by hand or
        by something else) is a DfsbenchError naming the file."""
        if not path.exists():
            return cls(path)
        try:
            saved = json.loads(path.read_text())
        except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
            raise _unreadable(path, f"it is not JSON ({type(exc).__name__})") from None
        why = _misshapen(saved)
        if why:
            raise _unreadable(path, why)
        entries = saved.get("entries", [])
        for entry in entries:  # undo commands written before a module moved
            argv = entry.get("argv")
            if isinstance(argv, list) and argv[1:3] == ["-m", "harness.ssh"]:
                argv[2] = "harness.system.ssh"
        return cls(path, entries, saved.get("data", {}), _on_disk=True)

    @property
    def lab(self) -> str | None:
        """The identity of the lab this ledger is of (made when the lab is, :data:`LAB`); None
        in a ledger an earlier version wrote, or one of no lab."""
        found = self.data.get(LAB)
        return found if isinstance(found, str) else None

    @property
    def written(self) -> bool:
        """Whether it is (or was) a file: read from one, or written once."""
        return self._on_disk

    def ours(self) -> bool | None:
        """Whether the ledger file at :attr:`path` is this ledger's — of the same lab — (None:
        there is none). A file of another identity, or none readable, is another lab's: one
        made anew in the same place after this one was taken down by another process."""
        try:
            saved = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):
            return False
        data = saved.get("data") if isinstance(saved, dict) else None
        found = data.get(LAB) if isinstance(data, dict) else None
        return (found if isinstance(found, str) else None) == self.lab

    def save(self, revive: bool = False) -> None:
        """Write the ledger. One that was a file and is gone — its lab taken down by another
        process ('lab down --force' under a run) — is not written again (its directory made
        anew, a lab that is no more in it), unless ``revive``: an undo of the whole ledger
        that left something behind keeps it for the next 'lab down'. A ledger file of
        another lab (:meth:`ours`) is never written over."""
        with self._lock:
            here = self.ours()
            if here is False or (here is None and self._on_disk and not revive):
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"entries": self.entries, "data": self.data}, indent=1))
            os.replace(tmp, self.path)
            self._on_disk = True

    def _add(self, entry: dict[str, Any]) -> str:
        entry["id"] = uuid.uuid4().hex[:12]
        if getattr(self._thread, "labs", False):
            entry["labs"] = True
        with self._lock:
            self.entries.append(entry)
        for found in getattr(self._thread, "captures", []):
            found.add(entry["id"])
        self.save()
        return str(entry["id"])

    @contextmanager
    def capture(self) -> Iterator[set[str]]:
        """The ids of the entries this thread adds within the block, and only those:
        ``undo(only=frozenset(found))`` undoes just what the block created, even while other
        threads (other clients of a run at once) add entries of their own."""
        found: set[str] = set()
        captures = getattr(self._thread, "captures", None)
        if captures is None:
            captures = self._thread.captures = []
        captures.append(found)
        try:
            yield found
        finally:  # (by identity: two captures may hold equal sets)
            del captures[next(i for i, c in enumerate(captures) if c is found)]

    @contextmanager
    def the_labs(self) -> Iterator[None]:
        """Entries this thread adds within the block are the lab's (a daemon started again
        after a fault, while a cell's attachment or a run is open around it), not theirs:
        no capture takes them, nor :meth:`since`; they stay until the lab itself is undone."""
        captures = getattr(self._thread, "captures", None)
        self._thread.captures, self._thread.labs = [], True
        try:
            yield
        finally:
            self._thread.captures, self._thread.labs = (captures if captures is not None else []), False

    def since(self, before: frozenset[str]) -> frozenset[str]:
        """The ids of the entries added since ``before`` (:meth:`ids`) but the lab's own."""
        with self._lock:
            return frozenset(e["id"] for e in self.entries if e["id"] not in before and not e.get("labs"))

    def ids(self) -> frozenset[str]:
        """The ids of the entries present now (what a test compares; code that undoes its
        own entries uses :meth:`capture`)."""
        with self._lock:
            return frozenset(e["id"] for e in self.entries)

    def process(self, pid: int, name: str, grace: float = 10.0, stage: int = 0,
                when: str = "processes", launch: dict[str, Any] | None = None) -> proc.ProcessId:
        """A process we started. On undo, lower stages stop first (all of one stage at
        once): e.g. OSDs (0) before the monitor (1) they report their shutdown to. A
        process ``when="first"`` (a measuring tool) stops before anything else is undone.
        ``launch``: how it was started, where it can be started again (a node a fault
        stops: ``harness.api.daemons.relaunch``)."""
        assert when in ("first", "processes"), when
        ident = proc.ProcessId.of(pid)
        if ident is None:
            raise ProcessLookupError(f"{name} (pid {pid}) exited right after it started")
        self._add({"kind": "process", "pid": pid, "start": ident.start_ticks, "name": name,
                   "grace": grace, "stage": stage, "when": when, **({"launch": launch} if launch else {})})
        return ident

    def mount(self, path: Path) -> None:
        self._add({"kind": "mount", "path": str(path)})

    def loop(self, device: str) -> None:
        self._add({"kind": "loop", "device": device})

    def command(self, argv: list[str], what: str, when: str = "cluster", exists: list[str] | None = None) -> str:
        """Something dfsbench made and the command that removes it, undone newest first
        among those of the same ``when``:

        - ``first``: before anything else — what lives in a mount and must go while every
          mount still works (a directory in the user's file system);
        - ``unmount``: with the mounts (an unmount on another host);
        - ``cluster`` (default): after the mounts and before the processes — a resource
          inside a cluster (a pool, an image, a volume), whose daemons must still be up.

        ``exists``: a command that succeeds only while the resource is there; where the
        removal fails and it fails too, the resource is gone already (removed some other
        way, e.g. a sweep by label), which is what the undo wanted. Returns the entry's id."""
        assert when in ("first", "unmount", "cluster"), when
        entry: dict[str, Any] = {"kind": "command", "argv": [str(a) for a in argv], "what": what, "when": when}
        if exists is not None:
            entry["exists"] = [str(a) for a in exists]
        self._add(entry)
        return str(entry["id"])

    def forget(self, ids: frozenset[str]) -> None:
        """Drop entries whose resources are already gone (undone some other way)."""
        with self._lock:
            self.entries = [e for e in self.entries if e["id"] not in ids]
        self.save()

    def tree(self, path: Path, background: bool = False) -> None:
        """A file or directory we created; removed (recursively) on undo — with
        ``background``, renamed aside at once and deleted by a detached ``rm``."""
        self._add({"kind": "tree", "path": str(path), "background": background})

    def live_processes(self) -> list[tuple[str, proc.ProcessId, bool]]:
        out = []
        for e in self.entries:
            if e["kind"] == "process":
                ident = proc.ProcessId(e["pid"], e["start"])
                out.append((e["name"], ident, ident.alive()))
        return out

    def undo(self, only: frozenset[str] | None = None, grace_cap: float | None = None,
             daemons_first: bool = False) -> list[str]:
        """Undo every entry. Returns problems met (empty when all went well).

        Running tools stop first, then commands marked ``first``; then mounts and loop
        devices, newest first (a file system on a loop device on a file in a FUSE mount
        comes apart in that order; a busy FUSE mount blocks its daemon), then commands
        inside clusters, then all processes at once (SIGTERM together, so their shutdowns
        overlap), then files. ``daemons_first``: processes (and the commands that stop them
        elsewhere) before the mounts — for a FUSE client that hung, whose mount cannot be
        unmounted while it is stopped and comes apart at once when it is gone. Each step is
        attempted even if an earlier one failed; what was undone leaves the ledger, so undo
        can be run again after fixing a problem.

        ``grace_cap`` shortens every process's grace between SIGTERM and SIGKILL: for a
        lab that goes away whole, whose data is deleted next, an orderly shutdown (an OSD
        flushing after a heavy run took up to 15 s) buys nothing.
        """
        problems: list[str] = []
        remaining: list[dict[str, Any]] = []
        chosen = [e for e in self.entries if only is None or e["id"] in only]
        newest_first = list(reversed(chosen))

        def when(e: dict[str, Any]) -> str:
            return str(e.get("when", "cluster"))

        def attempt(entries: list[dict[str, Any]]) -> None:
            for entry in entries:
                problem = _attempt(entry)
                if problem:
                    problems.append(problem)
                    remaining.append(entry)

        def stop(entries: list[dict[str, Any]], cap: float | None) -> None:
            for stage in sorted({e.get("stage", 0) for e in entries}):
                batch = [e for e in entries if e.get("stage", 0) == stage]
                idents = {id(e): proc.ProcessId(e["pid"], e["start"]) for e in batch}
                graces = [min(e.get("grace", 10.0), cap if cap is not None else 1e9) for e in batch]
                stuck = set(proc.stop([(idents[id(e)], g) for e, g in zip(batch, graces)]))
                for e in batch:
                    if idents[id(e)] in stuck:
                        problems.append(f"process {e['name']} (pid {e['pid']}) would not stop")
                        remaining.append(e)

        processes = [e for e in newest_first if e["kind"] == "process"]
        commands = [e for e in newest_first if e["kind"] == "command"]

        def mounts() -> None:
            attempt([e for e in newest_first if e["kind"] in ("mount", "loop") or
                     (e["kind"] == "command" and when(e) == "unmount")])

        def daemons() -> None:
            attempt([e for e in commands if when(e) == "cluster"])
            stop([e for e in processes if e.get("when") != "first"], grace_cap)

        stop([e for e in processes if e.get("when") == "first"], 2.0)  # measuring tools
        attempt([e for e in commands if when(e) == "first"])
        for step in ((daemons, mounts) if daemons_first else (mounts, daemons)):
            step()
        attempt([e for e in newest_first if e["kind"] == "tree"])
        self.entries = [e for e in self.entries
                        if any(e is r for r in remaining) or not any(e is c for c in chosen)]
        if self.entries or only is not None:
            self.save(revive=only is None)
        elif self.ours():  # (another lab's ledger, made anew in its place, is not this one's to remove)
            self.path.unlink()
        return problems


def _misshapen(saved: object) -> str | None:
    """Why what a ledger file holds is not a ledger's shape, or None."""
    if not isinstance(saved, dict):
        return f"it holds a JSON {type(saved).__name__}, not an object"
    if not isinstance(saved.get("entries", []), list):
        return "its entries are not a list"
    if not all(isinstance(e, dict) for e in saved.get("entries", [])):
        return "one of its entries is not an object"
    if not isinstance(saved.get("data", {}), dict):
        return "its data is not an object"
    return None


def _unreadable(path: Path, why: str) -> DfsbenchError:
    return DfsbenchError(f"the lab ledger {files.printable(path)} cannot be read: {why}",
                         hint="dfsbench cannot undo what it does not read: take that lab down by hand (its "
                              f"processes, mounts and files), or, if it is not a lab of yours, remove "
                              f"{files.printable(path.parent)}")


_tools: Ledger | None = None


@contextmanager
def recording_tools(ledger: Ledger) -> Iterator[None]:
    """While the block runs, every measuring tool started (:func:`tool_started`) is in
    ``ledger`` until it ends: a dfsbench killed with -9 leaves none running past
    ``dfsbench lab down``."""
    global _tools
    before, _tools = _tools, ledger
    try:
        yield
    finally:
        _tools = before


def tool_started(what: str, pid: int | None = None, stop: list[str] | None = None) -> Callable[[], None]:
    """Record a running tool, by its ``pid`` here or by the ``stop`` command that ends it
    on another host, in the ledger of :func:`recording_tools` (if any). Returns what to
    call once it ended."""
    ledger = _tools
    if ledger is None:
        return lambda: None
    with ledger.capture() as entry:
        if pid is not None:
            try:
                ledger.process(pid, what, grace=2.0, when="first")
            except ProcessLookupError:  # it ended already
                pass
        else:
            assert stop is not None
            ledger.command(stop, what, when="first")
    return lambda: ledger.forget(frozenset(entry))


def tree_made(path: Path) -> Callable[[], None]:
    """Record a directory a running tool needs (an MPI job's hostfile), removed whole by the
    ledger of :func:`recording_tools` (if any) where the run dies before it removes it itself.
    Returns what to call once it is gone."""
    ledger = _tools
    if ledger is None:
        return lambda: None
    with ledger.capture() as entry:
        ledger.tree(path)
    return lambda: ledger.forget(frozenset(entry))


def _attempt(entry: dict[str, Any]) -> str | None:
    try:
        return _UNDO[entry["kind"]](entry)
    except Exception as exc:  # keep undoing the rest; report this one
        return f"{entry['kind']} {entry.get('path') or entry.get('device') or entry.get('what')}: {exc}"


def read_mounts() -> list[tuple[str, str, str, str]]:
    """(source, mount point, type, options) of every line of /proc/mounts, unescaped."""
    with open("/proc/mounts") as mounts:
        rows = [line.split()[:4] for line in mounts]
    return [(_unescape(src), _unescape(point), fstype, opts) for src, point, fstype, opts in rows]


def mount_points() -> list[str]:
    return [point for _, point, _, _ in read_mounts()]


def is_mounted(path: Path) -> bool:
    return str(path) in mount_points()


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _undo_mount(entry: dict[str, Any]) -> str | None:
    path = Path(entry["path"])
    for attempt in range(20):
        if not is_mounted(path):
            return None
        result = proc.run(["umount", str(path)], check=False, timeout=60)
        if result.returncode == 0 and not is_mounted(path):
            return None
        time.sleep(0.25)
    # A mount that stays busy is detached lazily so teardown can go on; say so.
    proc.run(["umount", "-l", str(path)], check=False, timeout=60)
    if is_mounted(path):
        return f"mount {path} is busy and could not be unmounted"
    return f"mount {path} was busy; detached lazily (umount -l)"


def _undo_loop(entry: dict[str, Any]) -> str | None:
    result = proc.run(["losetup", "-d", entry["device"]], check=False, timeout=30)
    if result.returncode != 0 and "No such device" not in result.stderr:
        return f"loop device {entry['device']}: {result.stderr.strip()}"
    return None


def _remove_tree(path: Path, background: bool) -> None:
    """rmtree; with ``background``, the tree is first renamed aside (atomic, same file
    system) and removed by a detached ``rm -rf`` of that new name, so a lab's gigabytes of
    OSD block files and bricks do not hold up teardown: the path itself is gone at once."""
    if not background:
        shutil.rmtree(path, ignore_errors=True)
        return
    aside = path.with_name(f".{path.name}.removing-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    proc.spawn(["rm", "-rf", "--one-file-system", str(aside)], Path(os.devnull))


def _undo_tree(entry: dict[str, Any]) -> str | None:
    path = Path(entry["path"])
    if path.is_dir() and not path.is_symlink():
        inside = [m for m in mount_points() if m == str(path) or m.startswith(f"{path}/")]
        if inside:
            return f"{path} still holds mount point {inside[0]}; not removed"
        _remove_tree(path, bool(entry.get("background")))
    elif path.exists() or path.is_symlink():
        path.unlink()
    return f"{path} could not be removed" if path.exists() else None


def _undo_command(entry: dict[str, Any]) -> str | None:
    result = proc.run(entry["argv"], check=False, timeout=600)
    if result.returncode != 0 and isinstance(entry.get("exists"), list) and \
            proc.run(entry["exists"], check=False, timeout=120).returncode != 0:
        return None  # (gone already: what the undo wanted)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        return f"{entry['what']}: could not be removed ({tail[0][:300]})"
    return None


_UNDO = {"mount": _undo_mount, "loop": _undo_loop, "tree": _undo_tree, "command": _undo_command}
