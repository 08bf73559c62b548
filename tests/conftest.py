import json
from pathlib import Path

import pytest

from harness.api.records import Measurement

DATA = Path(__file__).parent / "data"


@pytest.fixture
def quick_run() -> list[Measurement]:
    """Records of a real quick run (glusterfs, cephfs, localdir) on the local lab."""
    lines = (DATA / "quick-run.jsonl").read_text().splitlines()
    return [Measurement.from_dict(json.loads(line)) for line in lines]
