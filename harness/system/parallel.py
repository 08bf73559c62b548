"""What the parts of a bring-up that run at once (in threads) share."""

from __future__ import annotations

import threading

from harness.errors import DfsbenchError


class Stop:
    """What the parts of a lab's bring-up that run at once share: the first to fail says so
    (:meth:`fail`, before it waits for anything of its own) and its error is the one the
    bring-up raises (:attr:`first`); the others start nothing more (:meth:`check`) and end
    their waits (:meth:`why`, a wait's ``alive``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        with self._lock:
            if self.first is None:
                self.first = error

    def why(self) -> str | None:
        return None if self.first is None else "another part of the lab's bring-up failed"

    def check(self, part: str) -> None:
        if self.first is not None:
            raise DfsbenchError(f"{part} stopped: another part of the lab's bring-up failed")
