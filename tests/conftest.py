import json
from pathlib import Path

import pytest

from harness.api.records import Measurement

DATA = Path(__file__).parent / "data"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first, by their ``takes`` mark (about how many seconds the test
    takes on a two-core machine running the lab step): the lab step's workers are handed
    tests in this order, so the short ones come at the end instead of a long one starting
    last. (pytest-xdist hands out the tests of an xdist group together, the groups of most
    tests first, and gives a worker its next test while it still has up to two to run: the
    order makes the end of the step shorter, not every worker's share equal.)"""
    def takes(item: pytest.Item) -> float:
        mark = item.get_closest_marker("takes")
        return -float(mark.args[0]) if mark is not None and mark.args else 0.0

    items.sort(key=takes)  # (stable: the rest as collected)


@pytest.fixture
def quick_run() -> list[Measurement]:
    """Records of a real quick run (glusterfs, cephfs, localdir) on the local lab."""
    lines = (DATA / "quick-run.jsonl").read_text().splitlines()
    return [Measurement.from_dict(json.loads(line)) for line in lines]
