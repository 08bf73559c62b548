"""The run catalogue: stored runs and reference runs behind one name space.

``resolve`` accepts a full id, a unique prefix or suffix (runs are named by their hex
suffix in conversation: ``841468``), ``latest``, or a reference name (``report-2014``).
Each run's targets get their typed facts (display name, network path, write copies,
control) from the backend plugin that made them; a backend this installation does not
know is shown under its own name, with no network facts assumed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api import registry
from harness.api.contracts import Backend
from harness.api.records import Measurement
from harness.api.tables import SystemFacts
from harness.errors import BadInput, DfsbenchError
from harness.results import reference
from harness.results.schema import RunInfo
from harness.results.store import Store
from harness.system.files import printable


def system_facts(backend: str, description: dict[str, Any]) -> SystemFacts:
    """The facts stored with the run; else (stored by an older dfsbench, or imported) those
    the backend plugin gives for the description — for a backend this installation lacks,
    its name and what every description says — with whatever facts the run did store in
    their place."""
    stored = SystemFacts.stored(description.get("facts"))
    if stored is not None:
        return stored
    try:
        cls = registry.load("backend", backend)
    except DfsbenchError:
        found = SystemFacts(backend, summary=Backend.summary(description))
    else:
        found = cls.facts(description)
    return found.with_stored(description.get("facts"))


class Catalogue:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.root, readonly=True)
        return self._store

    def resolve(self, ref: str) -> str:
        """The id of the run ``ref`` names; a reference that names none (or nothing: '' is a
        prefix of every id) is refused, shown cut to a line."""
        shown = printable(ref, 80)
        if not ref.strip():
            raise BadInput(f"'{shown}' names no run",
                           hint="give a run id, a unique prefix or suffix of one, 'latest', or a reference name")
        if ref in reference.names():
            return ref
        ids = self.store.run_ids()
        if not ids:
            raise BadInput(f"no runs are stored in {printable(self.root)}",
                           hint="run 'dfsbench run' first, or pass --results DIR")
        # a row whose id is not a name is refused, naming it, where it is a candidate: the
        # latest run, the run of that id, one a prefix or suffix matches (among others too),
        # or any, where no run matches the reference (the run sought may be one of them);
        # any other run is found whatever rows beside it are damaged
        if ref == "latest":
            return self.store.named_id(ids[-1])
        if ref in ids:
            return self.store.named_id(ref)
        matches = [self.store.named_id(i) for i in ids
                   if isinstance(i, str) and (i.startswith(ref) or i.endswith(ref))]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            for i in ids:
                self.store.named_id(i)
            raise BadInput(f"no run '{shown}' in {printable(self.root)}",
                           hint="give a run id, a unique prefix or suffix, or 'latest'; the newest "
                                "runs are: " + ", ".join(ids[-5:]))
        raise BadInput(f"'{shown}' matches {len(matches)} runs: {', '.join(matches[:5])}",
                       hint="give more of the id")

    def run(self, run_id: str) -> RunInfo:
        info = reference.load(run_id)[0] if run_id in reference.names() else self.store.run(run_id)
        systems = {key: system_facts(key[0], d) for key, d in info.targets.items()}
        return replace(info, systems=systems)

    def measurements(self, run_id: str, series: bool = True) -> list[Measurement]:
        """A run's records; with their series (figures over time) unless ``series`` is False."""
        if run_id in reference.names():
            return list(reference.load(run_id)[1])
        return self.store.measurements(run_id, series)
