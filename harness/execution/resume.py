"""'run --resume': whether a stored run may go on (the same config, no longer running, stored
with its cells), and the run it goes on as."""

from __future__ import annotations

import json
import platform
from typing import Any

from harness.errors import BadInput
from harness.execution.cell import Run
from harness.execution.order import stored_order
from harness.execution.plan import Plan
from harness.execution.progress import Progress
from harness.results.store import Store
from harness.system import proc
from harness.system.secret import redact_json


def resumable(plan: Plan, store: Store, ref: str, progress: Progress) -> Run:
    """The stored run ``ref`` made ready to go on: the same config (else what changed),
    not still running, stored with its cells; its successful cells are left alone."""
    info = store.run(ref)
    if isinstance(info.host.get("bundle"), dict):  # (its cells were measured on another site's cluster)
        raise BadInput(f"run {ref} was made elsewhere and imported from a bundle: it cannot go on here",
                       hint="'dfsbench run --like BUNDLE' runs its work anew on this site")
    if info.config_hash != plan.config_hash:
        changed = differences(info.config, redact_json(plan.config.model_dump(mode="json")))
        raise BadInput(f"run {ref} was made with another config; a resumed run must be the same run. "
                       f"What differs (stored → now):\n  " + "\n  ".join(changed or ["a secret's value"]),
                       hint=f"give the config and the options (--scale, --backends, …) run {ref} was "
                            "started with, or start a new run")
    pid, host = info.host.get("pid"), info.host.get("hostname")
    running = proc.ProcessId.of(pid) if isinstance(pid, int) and host == platform.node() else None
    if info.status == "running" and running is not None and running.alive():
        raise BadInput(f"run {ref} is still running (pid {pid})", hint="wait for it, or stop it first")
    if not store.knows_cells(ref):
        raise BadInput(f"run {ref} was stored by an older dfsbench that did not record its cells; "
                       "it cannot be resumed", hint="start a new run")
    done = store.cells_done(ref)
    sessions = 1 + sum(1 for p in store.raw_dir(ref).glob("resume-*"))
    store.resumed(ref)
    order = stored_order(info.host.get("order"))  # (the first session's: its seed, not a new one)
    progress.note(f"resuming run {ref} (was {info.status}): {len(done)} cells done are kept; "
                  f"the missing and failed ones run now; {order.said()}")
    return Run(plan, store, progress, ref, done, (f"resume-{sessions}",), order)


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """``key: old → new`` for each place two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [line for key in sorted(set(old) | set(new), key=str)
                for line in differences(old.get(key, "(absent)"), new.get(key, "(absent)"),
                                        f"{path}.{key}" if path else str(key))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [f"{path or '(the config)'}: {json.dumps(old)} → {json.dumps(new)}"]
