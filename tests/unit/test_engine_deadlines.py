"""The engines (smallfile, largefile; ``workloads/engines.py``, run on the client's host)
stop at their deadline like the external tools: a call that blocks forever (here: opening
a FIFO nobody writes, as a stopped FUSE daemon blocks every call) ends the cell as hung
instead of stalling the run."""

from __future__ import annotations

import os
import time

import pytest

from harness.errors import DfsbenchError, Hung
from harness.system.hosts import LOCAL
from workloads import ENGINES as SCRIPT


def test_smallfile_workers_are_killed_at_the_deadline(tmp_path):
    (tmp_path / "t00").mkdir()
    os.mkfifo(tmp_path / "t00" / "f000000")  # read phase: open() blocks forever
    start = time.monotonic()
    with pytest.raises(Hung, match="deadline of 1 s"):
        LOCAL.engine(SCRIPT, "smallfile", {"op": "read", "top": str(tmp_path), "per_thread": [1], "size": 4096,
                                   "deadline": 1}, deadline=1, output=tmp_path / "out.json")
    assert time.monotonic() - start < 10
    assert "workers were killed" in (tmp_path / "out.json").read_text()


def test_largefile_copy_is_killed_at_the_deadline(tmp_path):
    os.mkfifo(tmp_path / "source")
    start = time.monotonic()
    with pytest.raises(Hung, match="copy engine"):
        LOCAL.engine(SCRIPT, "copy", {"src": str(tmp_path / "source"), "dst": str(tmp_path / "back"),
                              "bs": 1 << 20, "fsync": False}, deadline=1, output=tmp_path / "out.json")
    assert time.monotonic() - start < 12


def test_an_engine_returns_and_fails_like_the_call(tmp_path):
    (tmp_path / "src").write_bytes(b"x" * 4096)
    got = LOCAL.engine(SCRIPT, "copy", {"src": str(tmp_path / "src"), "dst": str(tmp_path / "dst"), "bs": 4096,
                                "fsync": True, "digest": True}, deadline=30, output=tmp_path / "a.json")
    assert got["elapsed"] > 0 and len(got["digest"]) == 128
    assert (tmp_path / "dst").read_bytes() == b"x" * 4096
    with pytest.raises(DfsbenchError, match="FileNotFoundError"):
        LOCAL.engine(SCRIPT, "copy", {"src": str(tmp_path / "missing"), "dst": str(tmp_path / "dst"), "bs": 4096,
                              "fsync": True}, deadline=30, output=tmp_path / "b.json")
