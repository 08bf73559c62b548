import pytest

from harness.system import proc
from harness.system.ledger import Ledger
from tests.integration.lab import Watched, start


@pytest.fixture
def started(tmp_path):
    """Starts a watched ``dfsbench run`` of a config (tests/integration/lab.py); whatever
    the test found, nothing of it outlives the test."""
    runs: list[Watched] = []

    def go(config: str) -> Watched:
        runs.append(start(tmp_path, config))
        return runs[-1]

    yield go
    for w in runs:
        if w.child.poll() is None:
            w.child.kill()
        if (w.lab / "ledger.json").exists():
            Ledger.open(w.lab / "ledger.json").undo()
        proc.stop([(p, 1) for p in w.processes])
