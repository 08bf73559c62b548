"""The in-process engines (smallfile, largefile) stop at their deadline like the external
tools: a call that blocks forever (here: opening a FIFO nobody writes, as a stopped FUSE
daemon blocks every call) ends the cell as hung instead of stalling the run."""

from __future__ import annotations

import os
import time

import pytest

from harness import proc
from harness.errors import Hung
from workloads.largefile import copy
from workloads.smallfile import run_phase


def test_smallfile_workers_are_killed_at_the_deadline(tmp_path):
    (tmp_path / "t00").mkdir()
    os.mkfifo(tmp_path / "t00" / "f000000")  # read phase: open() blocks forever
    start = time.monotonic()
    with pytest.raises(Hung, match="deadline of 1 s"):
        run_phase("read", tmp_path, [1], 4096, deadline=1)
    assert time.monotonic() - start < 10


def test_largefile_copy_is_killed_at_the_deadline(tmp_path):
    os.mkfifo(tmp_path / "source")
    start = time.monotonic()
    with pytest.raises(Hung, match="largefile read"):
        proc.call_with_deadline(copy, tmp_path / "source", tmp_path / "back", 1 << 20, False,
                                deadline=1, what="largefile read of 1 bytes")
    assert time.monotonic() - start < 10


def test_call_with_deadline_returns_and_raises_like_the_call(tmp_path):
    (tmp_path / "src").write_bytes(b"x" * 4096)
    assert proc.call_with_deadline(copy, tmp_path / "src", tmp_path / "dst", 4096, True, deadline=30,
                                   what="copy") > 0
    assert (tmp_path / "dst").read_bytes() == b"x" * 4096
    with pytest.raises(OSError):
        proc.call_with_deadline(copy, tmp_path / "missing", tmp_path / "dst", 4096, True, deadline=30,
                                what="copy")
