"""An attachment's set-up as one transaction (harness.api.attach): a real ledger in a
temporary directory, steps that record real undo commands in it and undos of their own."""

from pathlib import Path

import pytest

from harness.api.attach import Attaching
from harness.errors import DfsbenchError
from harness.system.ledger import Ledger


class Made:
    """Things a test's set-up makes: each recorded in the ledger as the command that
    writes its name to ``undone`` (a file, one name a line), the order they are undone in."""

    def __init__(self, tmp_path: Path) -> None:
        self.ledger = Ledger(tmp_path / "ledger.json")
        self.undone = tmp_path / "undone"

    def record(self, name: str, fails: bool = False) -> str:
        """A resource undone by the ledger (its command fails, leaving it there, if ``fails``)."""
        script = 'echo "$1" >> "$2"' + ("; exit 3" if fails else "")
        return self.ledger.command(["sh", "-c", script, "sh", name, str(self.undone)], name)

    def undo_of(self, name: str, fails: bool = False):
        """A resource's own undo: writes its name, then raises if ``fails``."""
        def undo() -> None:
            with self.undone.open("a") as out:
                out.write(f"{name}\n")
            if fails:
                raise DfsbenchError(f"{name} is busy")
        return undo

    def order(self) -> list[str]:
        return self.undone.read_text().splitlines() if self.undone.exists() else []

    def kept(self) -> list[str]:
        """What the ledger file still holds, by name."""
        return [e["what"] for e in Ledger.open(self.ledger.path).entries]


def test_a_failure_part_way_undoes_each_step_newest_first_and_raises_that_failure(tmp_path):
    made = Made(tmp_path)
    failure = ValueError("mkfs said no")
    with pytest.raises(ValueError) as raised:
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool"):
                made.record("pool")
            with attach.step("volume", made.undo_of("volume")):
                made.record("volume's bricks")  # (its own undo, not the ledger, removes them)
            with attach.step("mount"):
                made.record("mount")
            raise failure
    assert raised.value is failure and not getattr(failure, "__notes__", None)
    assert made.order() == ["mount", "volume", "pool"]
    assert made.kept() == ["volume's bricks"], "the ledger undid more than the steps' undos"


def test_a_step_that_fails_part_way_is_undone_with_what_it_had_recorded(tmp_path):
    made = Made(tmp_path)
    with pytest.raises(DfsbenchError, match="volume start timed out"):
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool"):
                made.record("pool")
            with attach.step("volume"):
                made.record("volume")
                made.record("volume (started)")
                raise DfsbenchError("volume start timed out")
    assert made.order() == ["volume (started)", "volume", "pool"]
    assert made.kept() == []


def test_an_undo_that_fails_neither_hides_the_failure_nor_stops_the_others(tmp_path):
    made = Made(tmp_path)
    failure = DfsbenchError("the mount never showed in /proc/mounts", hint="read the client's log")
    with pytest.raises(DfsbenchError) as raised:
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool"):
                made.record("pool")
            with attach.step("image"):
                made.record("image", fails=True)
            with attach.step("volume", made.undo_of("volume", fails=True)):
                pass
            with attach.step("directory"):
                made.record("directory")
            raise failure
    assert raised.value is failure
    assert made.order() == ["directory", "volume", "image", "pool"], "an undo that failed stopped the rest"
    [note] = failure.__notes__
    assert "undoing the attachment of toyfs/default left" in note
    assert "volume: volume is busy" in note and "image: could not be removed" in note
    said = str(failure)  # (what the CLI and the run print)
    assert said.startswith("the mount never showed in /proc/mounts\n  hint: read the client's log\n") and note in said
    assert made.kept() == ["image"], "what could not be undone is not left for 'lab down'"


def test_an_interrupt_is_undone_and_stays_the_interrupt(tmp_path):
    made = Made(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool"):
                made.record("pool")
                raise KeyboardInterrupt
    assert made.order() == ["pool"] and made.kept() == []


def test_success_keeps_everything_recorded_and_detach_undoes_it_newest_first_once(tmp_path):
    made = Made(tmp_path)
    with Attaching(made.ledger, "toyfs/default") as attach:
        with attach.step("pool"):
            made.record("pool")
        with attach.step("mount", made.undo_of("mount")):
            made.record("mount's process")
        with attach.step("directory"):
            made.record("directory")
    assert made.order() == []
    assert made.kept() == ["pool", "mount's process", "directory"]
    attach.detach()
    assert made.order() == ["directory", "mount", "pool"]
    assert made.kept() == ["mount's process"]  # (its own undo's business)
    attach.detach()
    assert made.order() == ["directory", "mount", "pool"], "a second detach undid something again"


def test_a_detach_that_cannot_undo_a_step_undoes_the_others_and_names_it(tmp_path):
    made = Made(tmp_path)
    with Attaching(made.ledger, "toyfs/default") as attach:
        with attach.step("pool"):
            made.record("pool")
        with attach.step("mount", made.undo_of("mount", fails=True)):
            pass
        with attach.step("directory"):
            made.record("directory")
    with pytest.raises(DfsbenchError) as raised:
        attach.detach()
    assert raised.value.message == "could not detach toyfs/default cleanly: mount: mount is busy"
    assert "dfsbench lab down" in raised.value.hint
    assert made.order() == ["directory", "mount", "pool"]


def test_what_is_recorded_outside_any_step_is_undone_in_its_place(tmp_path):
    made = Made(tmp_path)
    with pytest.raises(ValueError):
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool"):
                made.record("pool")
            made.record("pool's place in the file system")
            with attach.step("mount", made.undo_of("mount")):
                pass
            made.record("a file")
            raise ValueError("late")
    assert made.order() == ["a file", "mount", "pool's place in the file system", "pool"]
    assert made.kept() == []


def test_what_goes_with_an_earlier_step_leaves_the_ledger_when_that_step_is_undone(tmp_path):
    """An RBD image in a pool of its own: the pool's removal takes it; its own removal is
    never run, and its record goes once the pool went — not before."""
    made = Made(tmp_path)
    with Attaching(made.ledger, "toyfs/default") as attach:
        with attach.step("pool", made.undo_of("pool")) as pool:
            made.record("pool's rule")
        with attach.step("image", goes_with=pool):
            made.record("image")
        with attach.step("mount"):
            made.record("mount")
    attach.detach()
    assert made.order() == ["mount", "pool"]
    assert made.kept() == ["pool's rule"]

    made = Made(tmp_path / "busy")
    with pytest.raises(ValueError):
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("pool", made.undo_of("pool", fails=True)) as pool:
                pass
            with attach.step("image", goes_with=pool):
                made.record("image")
            raise ValueError("rbd-fuse did not start")
    assert made.order() == ["pool"]
    assert made.kept() == ["image"], "the image was forgotten while its pool stayed"


def test_only_this_attachments_entries_are_undone(tmp_path):
    made = Made(tmp_path)
    made.record("the lab's volume")
    with pytest.raises(ValueError):
        with Attaching(made.ledger, "toyfs/default") as attach:
            with attach.step("mount"):
                made.record("mount")
            raise ValueError("no")
    assert made.order() == ["mount"] and made.kept() == ["the lab's volume"]


def test_a_step_whose_own_undo_failed_is_undone_as_its_record_says_after_the_steps_after_it(tmp_path):
    """A directory its dead client could not remove goes through a client started for it,
    once that client's mount is undone (its session evicted): not before, not never."""
    made = Made(tmp_path)
    with Attaching(made.ledger, "cephfs/default") as attach:
        with attach.step("mount", made.undo_of("unmount")):
            made.record("the mount's own record")
        with attach.step("directory", made.undo_of("rm through the dead mount", fails=True)):
            made.record("rm through a client started for it")
    attach.detach()  # (nothing is left: no error)
    assert made.order() == ["rm through the dead mount", "unmount", "rm through a client started for it"]
    assert made.kept() == ["the mount's own record"]  # (the mount's undo is its own, which keeps to its record)
    # where the second try fails too, the first failure is what the error says
    made = Made(tmp_path / "again")
    (tmp_path / "again").mkdir()
    with Attaching(made.ledger, "cephfs/default") as attach:
        with attach.step("directory", made.undo_of("rm", fails=True)):
            made.record("rm again", fails=True)
    with pytest.raises(DfsbenchError, match="directory: rm is busy"):
        attach.detach()
    assert made.kept() == ["rm again"]
