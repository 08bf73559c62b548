"""What a storage system needs to bring its daemons up on this host (the local lab), as the
API: free ports, a daemon started and recorded in the lab's ledger the moment it exists,
a wait for it to be ready, and — for faults — a node's processes found and started again.

- :func:`free_ports`: ports nobody listens on now, distinct (each daemon's own).
- :func:`launch`: start ``argv`` in its own session, its output appended to a log, and
  record it in the ledger (pid and start time, so an undo never stops another process that
  took the pid; a stage, so OSDs stop before the monitor they report to; a grace between
  SIGTERM and SIGKILL). A daemon that exits as it starts is an error carrying its log's
  tail. Given a ``node`` (an OSD, a volume server: what a fault names), the ledger keeps how
  it was started, so :func:`relaunch` starts it again the same way.
- :class:`Daemons`: the daemons a bring-up launched; :meth:`Daemons.died` is the ``alive``
  check of :func:`ready` (a wait that ends at once when one of them exits, with its log).
- :func:`ready`: wait, with a deadline, for a check to pass; on timeout the error says what
  was awaited, the last state seen, the tail of the log and a hint.
- :func:`node_pids`, :func:`relaunch`: a node's running processes, from the ledger; the
  node started again as it was launched, its new process in the ledger in place of the old.

Everything here undoes with the lab: ``dfsbench lab down`` stops exactly the processes the
ledger holds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

__all__ = ["Daemons", "Launched", "answers", "free_ports", "launch", "node_pids", "probe_of", "ready", "relaunch",
           "stop_node"]

ready = proc.wait_for  # wait_for(check, what=…, timeout=…, interval=…, alive=…, log=…, hint=…)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports nobody listens on at ``host`` right now."""
    found: list[int] = []
    for _ in range(count * 20):
        port = proc.free_port(host)
        if port not in found:
            found.append(port)
        if len(found) == count:
            return found
    raise DfsbenchError(f"no {count} free TCP ports at {host}", hint="stop what holds the ports, and try again")


@dataclass
class Launched:
    """A daemon started here: its name, its process and its log."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def died(self) -> str | None:
        """Why it is gone ('… exited with code 1: <its log's last lines>'), or None while it runs."""
        if self.popen.poll() is None:
            return None
        return f"{self.name} exited with code {self.popen.returncode}: {proc.log_tail(self.log, 5)}"


def launch(ledger: Ledger, name: str, argv: Sequence[str | PathLike[str]], log: Path, *,
           cwd: Path | None = None, env: Mapping[str, str] | None = None, stage: int = 0,
           grace: float = 10.0, node: str | None = None, probe: tuple[str, int] | None = None) -> Launched:
    """``argv`` started as a daemon of the lab, in the ledger the moment it exists (see the
    module's text); ``node``: the name a fault gives it, where it holds data or serves its
    clients (a gateway); ``probe``: a URL of this host's loopback and the HTTP status it answers
    an anonymous GET with once it serves (a gateway's: after a fault it is whole again only once
    it answers so, :func:`answers`)."""
    if probe is not None and not _loopback(probe[0]):
        raise DfsbenchError(f"a daemon's probe must be a URL of this host's loopback, not {probe[0]!r}")
    child = proc.spawn(argv, log, env=env, cwd=cwd)
    how = None if node is None else {"node": node, "argv": [str(a) for a in argv], "log": str(log),
                                     "cwd": None if cwd is None else str(cwd), "env": dict(env or {}),
                                     **({"probe": list(probe)} if probe else {})}
    try:
        ledger.process(child.pid, name, grace=grace, stage=stage, launch=how)
    except ProcessLookupError:
        child.wait()
        raise DfsbenchError(f"{name} exited as it started (code {child.returncode}): {proc.log_tail(log, 5)}",
                            hint=f"its log: {log}") from None
    return Launched(name, child, log)


@dataclass
class Daemons:
    """The daemons a bring-up launched, so a wait ends at once when one of them exits."""

    ledger: Ledger
    started: list[Launched] = field(default_factory=list)

    def launch(self, name: str, argv: Sequence[str | PathLike[str]], log: Path, **how: object) -> Launched:
        """:func:`launch`, remembered."""
        found = launch(self.ledger, name, argv, log, **how)  # type: ignore[arg-type]
        self.started.append(found)
        return found

    def died(self) -> str | None:
        return next((why for d in self.started if (why := d.died()) is not None), None)


def _loopback(url: str) -> bool:
    import urllib.parse

    found = urllib.parse.urlsplit(url)
    return found.scheme == "http" and found.hostname in ("127.0.0.1", "::1", "localhost")


def probe_of(ledger: Ledger, node: str) -> tuple[str, int] | None:
    """The URL ``node`` answers at once it serves, and with what status, as it was launched
    (None: none was given, or not a loopback URL)."""
    entries = _entries(ledger, node)
    probe = (entries[-1].get("launch") or {}).get("probe") if entries else None
    if isinstance(probe, list) and len(probe) == 2 and isinstance(probe[0], str) and isinstance(probe[1], int) \
            and _loopback(probe[0]):
        return probe[0], probe[1]
    return None


def answers(url: str, status: int, timeout: float = 2.0) -> tuple[bool, str]:
    """Whether a daemon answers an anonymous GET at ``url`` (of this host's loopback) with
    ``status``, the answer it gave when it was started and served."""
    import http.client
    import urllib.parse

    if not _loopback(url):
        return False, f"not a URL of this host's loopback: {url!r}"
    found = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(found.hostname or "127.0.0.1", found.port or 80, timeout=timeout)
    try:
        conn.request("GET", found.path or "/")
        got = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, f"no answer at {found.netloc} ({type(exc).__name__})"
    finally:
        conn.close()
    return got == status, f"answers at {found.netloc} with HTTP {got}" + ("" if got == status else
                                                                         f", not the {status} it gave when it served")


def stop_node(ledger: Ledger, node: str) -> None:
    """Stop every process the ledger holds for ``node`` (the one launched, or the one a fault's
    restore launched in its place) and drop them from it; what could not be stopped is said."""
    ids = frozenset(str(e["id"]) for e in _entries(ledger, node))
    problems = ledger.undo(only=ids) if ids else []
    if problems:
        raise DfsbenchError(f"could not stop {node}: {'; '.join(problems)}")


def _entries(ledger: Ledger, node: str) -> list[dict[str, Any]]:
    return [e for e in ledger.entries if e["kind"] == "process" and (e.get("launch") or {}).get("node") == node]


def node_pids(ledger: Ledger, node: str) -> list[int]:
    """The running processes the ledger holds for ``node`` (by pid and start time: a pid
    another process took since is not one of them)."""
    found = []
    for e in _entries(ledger, node):
        ident = proc.ProcessId(int(e["pid"]), int(e["start"]))
        if ident.alive():
            found.append(ident.pid)
    return found


def relaunch(ledger: Ledger, node: str, timeout: float) -> Launched:
    """``node`` started again as it was last launched (its argv, directory, environment and
    log), returning once it runs (its program, not yet the fork of this one): its new process
    in the ledger, in place of the old one, which must be gone."""
    entries = _entries(ledger, node)
    if not entries:
        raise DfsbenchError(f"the lab's ledger names no process of node '{node}' to start again",
                            hint="take the lab down ('dfsbench lab down') and let the run start one with this dfsbench")
    running = node_pids(ledger, node)
    if running:
        raise DfsbenchError(f"node '{node}' still runs (pid {', '.join(map(str, running))}): "
                            "it is started again only once it is gone")
    last = entries[-1]
    how = dict(last["launch"])
    argv = [str(a) for a in how["argv"]]
    with ledger.the_labs():  # (the lab's daemon, whatever cell's attachment is open around the fault)
        started = launch(ledger, str(last["name"]), argv, Path(how["log"]),
                         cwd=None if how.get("cwd") is None else Path(how["cwd"]), env=how.get("env") or None,
                         stage=int(last.get("stage", 0)), grace=float(last.get("grace", 10.0)), node=node,
                         probe=probe_of(ledger, node))
    ready(lambda: (proc.cmdline(started.popen.pid) == argv, "starting"), what=f"{node} to run again",
          timeout=timeout, interval=0.02, alive=started.died, log=started.log)
    ledger.forget(frozenset(str(e["id"]) for e in entries))  # (once the new one is in: the recipe is never lost)
    return started
