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

from harness.api.daemons import answers, node_pids, probe_of, relaunch
from harness.api.faults import Faults, FaultSpec, Injected
from harness.api.systems import LocalFaults
from harness.errors import DfsbenchError
from harness.system import proc
from harness.system.ledger import Ledger

GATEWAY = "gateway"  # a fault's node that names the system's gateway, whatever its name
STOP_GRACE_S = 10.0  # what a stop gives the process after SIGTERM (docker stop's default)


def _signal(ident: proc.ProcessId, sig: int) -> None:
    """``sig`` to the process, if it is still the one it was (its pid not taken since)."""
    if ident.alive():
        os.kill(ident.pid, sig)


class ProcessFault(Injected):
    def __init__(self, description: str, node: str, restore: Callable[[], None], at: float,
                 stores_data: bool = True) -> None:
        self.description, self.node, self.at, self.stores_data = description, node, at, stores_data
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
        # by system: its faulted gateway, the URL it answers at once back, and with what status
        self._probe: dict[str, tuple[str, str, int]] = {}

    def _system(self, name: str) -> LocalFaults:
        system = self.systems.get(name)
        if not isinstance(system, LocalFaults) or name not in self.services:
            raise DfsbenchError(f"the local lab cannot fault {name}: it names no data processes",
                                hint="leave out the fault ('dfsbench list' says where each system can be faulted)")
        return system

    def inject(self, system: str, spec: FaultSpec) -> Injected:
        s, service = self._system(system), self.services[system]
        nodes = s.local_nodes(service)
        # (a gateway an attachment started is a node to name while it runs: never the default)
        gateways = [g for g in s.local_gateways if node_pids(self.ledger, g)]
        node = spec.node or (nodes[1] if len(nodes) > 1 else nodes[0])
        if node == GATEWAY and gateways:  # (whatever the system calls its gateway: one config for every system)
            node = gateways[0]
        if node not in nodes + gateways:
            raise DfsbenchError(f"fault node '{node}' is not a {system} node of the local lab",
                                hint=f"its nodes: {', '.join(nodes + gateways)}" + (
                                    f" (and {', '.join(s.local_gateways)}, a gateway, while an attachment runs one)"
                                    if s.local_gateways and not gateways else ""))
        gateway = node in gateways
        self._probe.pop(system, None)
        probe = probe_of(self.ledger, node) if gateway else None
        idents = _of_the_lab(self.ledger, s.local_pids(service, node, self.ledger))
        if not idents:
            raise DfsbenchError(f"{system} {node} runs no process the lab's ledger holds, to fault",
                                hint="see 'dfsbench lab status'; take the lab down and up again if it is broken")
        if probe is not None:  # (whole again once the gateway answers as it did, not only once it runs)
            self._probe[system] = (node, *probe)
        if spec.action == "pause":
            for i in idents:
                _signal(i, signal.SIGSTOP)
            return ProcessFault(f"{node} paused", node, lambda: self._resume(idents), time.time(),
                                stores_data=not gateway)
        at = time.time()  # (the moment of the first signal is the fault's)
        if spec.action == "kill":  # (what is gone is reaped later)
            for i in idents:
                _signal(i, signal.SIGKILL)
        else:
            proc.stop([(i, STOP_GRACE_S) for i in idents])
        verb = "killed" if spec.action == "kill" else "stopped"
        def restart() -> None:  # (a gateway as it was launched; a data node as its system starts it)
            if gateway:
                relaunch(self.ledger, node, self.timeout)
            else:
                s.local_restart(service, node, self.ledger, self.timeout)

        return ProcessFault(f"{node} {verb}", node, restart, at, stores_data=not gateway)

    @staticmethod
    def _resume(idents: list[proc.ProcessId]) -> None:
        for i in idents:
            _signal(i, signal.SIGCONT)

    def health(self, system: str) -> tuple[bool, str]:
        """The system's health, and where a gateway of its was faulted, whether it answers."""
        healthy, said = self._system(system).local_health(self.services[system])
        probe = self._probe.get(system)
        if probe is None:
            return healthy, said
        node, url, status = probe
        if not node_pids(self.ledger, node):
            return False, f"{said}; the gateway {node} runs no process"
        serves, how = answers(url, status)
        return healthy and serves, f"{said}; the gateway {node} {how}"

    def noticed(self, system: str, injected: Injected) -> tuple[bool | None, str]:
        if not injected.stores_data and injected.node in self._system(system).local_gateways:
            return None, f"{injected.node} is a gateway: the cluster under it has no state that names it down"
        return self._system(system).local_noticed(self.services[system], injected.node)
