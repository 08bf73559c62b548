"""Faults in the local lab: a node there is one data process of this host (an OSD, a brick,
a volume server, as its system names them: ``harness.api.systems.LocalFaults``). It is
killed (SIGKILL), stopped (SIGTERM, then SIGKILL after 10 s, as ``docker stop``) or paused
(SIGSTOP; SIGCONT brings it back); a killed or stopped one is started again by its system.
A fault's ``target`` (the node, or its data process) is the same thing here.

Only a process of the lab is ever signalled: one its ledger holds, by pid and start time (a
daemon it started, a brick glusterd forked for it), and that runs still — a pid another
process took since is not one of them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from harness.api.faults import Faults, FaultSpec, Injected
from harness.api.systems import LocalFaults
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

STOP_GRACE_S = 10.0  # what a stop gives the process after SIGTERM (docker stop's default)


def _signal(ident: proc.ProcessId, sig: int) -> None:
    """``sig`` to the process, if it is still the one it was (its pid not taken since)."""
    if ident.alive():
        os.kill(ident.pid, sig)


class ProcessFault(Injected):
    def __init__(self, description: str, node: str, restore: Callable[[], None], at: float) -> None:
        self.description, self.node, self.at = description, node, at
        self._restore = restore

    def restore(self) -> None:
        self._restore()


def _of_the_lab(ledger: Ledger, pids: list[int]) -> list[proc.ProcessId]:
    """Those of ``pids`` the ledger holds as running processes of the lab."""
    held = {ident for _, ident, alive in ledger.live_processes() if alive}
    return [i for p in pids if (i := proc.ProcessId.of(p)) is not None and i in held]


class ProcessFaults(Faults):
    """What the local lab can do to the data processes of its systems (``services``: each
    system's Service)."""

    def __init__(self, systems: dict[str, Any], services: dict[str, Any], ledger: Ledger, timeout: float) -> None:
        self.systems, self.services = systems, services
        self.ledger, self.timeout = ledger, timeout

    def _system(self, name: str) -> LocalFaults:
        system = self.systems.get(name)
        if not isinstance(system, LocalFaults) or name not in self.services:
            raise DfsbenchError(f"the local lab cannot fault {name}: it names no data processes",
                                hint="leave out the fault ('dfsbench list' says where each system can be faulted)")
        return system

    def inject(self, system: str, spec: FaultSpec) -> Injected:
        s, service = self._system(system), self.services[system]
        nodes = s.local_nodes(service)
        node = spec.node or (nodes[1] if len(nodes) > 1 else nodes[0])
        if node not in nodes:
            raise DfsbenchError(f"fault node '{node}' is not a {system} node of the local lab",
                                hint=f"its nodes: {', '.join(nodes)}")
        idents = _of_the_lab(self.ledger, s.local_pids(service, node, self.ledger))
        if not idents:
            raise DfsbenchError(f"{system} {node} runs no process the lab's ledger holds, to fault",
                                hint="see 'dfsbench lab status'; take the lab down and up again if it is broken")
        if spec.action == "pause":
            for i in idents:
                _signal(i, signal.SIGSTOP)
            return ProcessFault(f"{node} paused", node, lambda: self._resume(idents), time.time())
        at = time.time()  # (the moment of the first signal is the fault's)
        if spec.action == "kill":  # (what is gone is reaped later)
            for i in idents:
                _signal(i, signal.SIGKILL)
        else:
            proc.stop([(i, STOP_GRACE_S) for i in idents])
        verb = "killed" if spec.action == "kill" else "stopped"
        return ProcessFault(f"{node} {verb}", node, lambda: s.local_restart(service, node, self.ledger, self.timeout),
                            at)

    @staticmethod
    def _resume(idents: list[proc.ProcessId]) -> None:
        for i in idents:
            _signal(i, signal.SIGCONT)

    def health(self, system: str) -> tuple[bool, str]:
        return self._system(system).local_health(self.services[system])

    def noticed(self, system: str, injected: Injected) -> tuple[bool | None, str]:
        return self._system(system).local_noticed(self.services[system], injected.node)
