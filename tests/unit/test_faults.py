"""The fault timeline (inject at after_s, restore at restore_after_s or at the end of the
cell, recovery counted from the restore) and the fault's options."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from harness.api.faults import Faults, FaultSpec, Injected
from harness.execution.timeline import Timeline, record
from harness.report.faults import table_rows


class Clock(Faults):
    """A system whose node goes down and comes back at the times the timeline chooses,
    and is healthy again ``heal_s`` after that."""

    def __init__(self, heal_s: float) -> None:
        self.heal_s, self.events, self.back = heal_s, [], None

    def inject(self, system, spec):
        self.events.append(("inject", system, time.monotonic()))
        clock = self

        class Down(Injected):
            description = f"{system}2 killed"

            def restore(self):
                clock.events.append(("restore", system, time.monotonic()))
                clock.back = time.monotonic()

        return Down()

    def health(self, system):
        ok = self.back is not None and time.monotonic() - self.back >= self.heal_s
        return ok, "HEALTH_OK" if ok else "HEALTH_WARN"


def test_the_fault_happens_on_time_and_recovery_counts_from_the_restore():
    faults = Clock(heal_s=1.0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.2, restore_after_s=0.5))
    start = time.monotonic()
    timeline.start()
    time.sleep(0.8)  # the cell
    timeline.restore()  # at the end of the cell: already done by the timer, not again
    assert [e[0] for e in faults.events] == ["inject", "restore"]
    assert 0.15 < faults.events[0][2] - start < 0.4 and 0.45 < faults.events[1][2] - start < 0.7
    recovery, state = timeline.wait_healthy()
    assert state == "HEALTH_OK" and 0.9 < recovery < 3.5
    m = record(timeline, recovery, state, "yes (digest)", "largefile", {"file_size": 1}, "cephfs", "default")
    assert m.flags == () and m.value == recovery
    assert m.params["fault"].startswith("ceph2 killed at 0.2 s, back at 0.5 s")
    assert table_rows([m], lambda k: "CephFS")[0][2:] == [m.params["fault"], f"{recovery:.1f} s", "yes (digest)"]


def test_a_fault_without_a_restore_time_is_undone_at_the_end_of_the_cell():
    faults = Clock(heal_s=0)
    timeline = Timeline(faults, "gluster", FaultSpec(action="stop", after_s=0.1))
    timeline.start()
    time.sleep(0.3)
    timeline.restore()
    assert [e[0] for e in faults.events] == ["inject", "restore"]
    assert timeline.wait_healthy()[0] is not None


def test_a_cell_shorter_than_after_s_has_no_fault_and_no_recovery():
    faults = Clock(heal_s=0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=5))
    timeline.start()
    timeline.restore()
    time.sleep(0.1)
    assert faults.events == [] and timeline.wait_healthy() == (None, "not restored")
    assert "degraded" in record(timeline, None, "not restored", "", "fio", {}, "cephfs", "default").flags


def test_fault_options_are_checked():
    with pytest.raises(ValidationError, match="restore_after_s must come after"):
        FaultSpec(action="kill", after_s=5, restore_after_s=2)
    with pytest.raises(ValidationError, match="pause applies to a node"):
        FaultSpec(action="pause", target="process", after_s=1)
    with pytest.raises(ValidationError):
        FaultSpec(action="reboot", after_s=1)


def test_gluster_health_reads_the_bricks_online_and_what_is_left_to_heal():
    """Real outputs of replica-3 volumes: healthy; one brick process killed and three files
    written (4 entries on each live brick, and the brick that cannot be asked counts as
    one); a heal info that failed (glfsheal found no glusterd on its default socket) or
    covers too few bricks is not known."""
    import xml.etree.ElementTree as ET
    from pathlib import Path

    from backends.gluster_client import GlusterCli, bricks_online, heal_pending

    tools = Path(__file__).parent.parent / "data" / "tools"
    assert bricks_online(ET.fromstring((tools / "gluster-volume-status.xml").read_text())) == 3
    assert bricks_online(ET.fromstring((tools / "gluster-volume-status-brick-down.xml").read_text())) == 2
    assert heal_pending((tools / "gluster-heal-info.xml").read_text(), 3) == 0
    assert heal_pending((tools / "gluster-heal-info-pending.xml").read_text(), 3) == 4 + 1 + 4
    with pytest.raises(ValueError, match="named 3 of 4 bricks"):
        heal_pending((tools / "gluster-heal-info.xml").read_text(), 4)
    with pytest.raises(ValueError, match="Not able to fetch volfile from glusterd"):
        heal_pending((tools / "gluster-heal-info-no-glusterd.xml").read_text(), 3)
    # who can ask: a node's own glusterd through the CLI; a glusterd of our own through
    # glfsheal told its socket; a client host reaching the servers remotely cannot
    assert GlusterCli().heal_info_words("v")[-3:] == ["v", "info", "--xml"]
    own = GlusterCli.on_socket(Path("/lab/glusterd.socket"), Path("/lab/cli.log")).heal_info_words("v")
    assert own[1:] == ["v", "--xml", "glusterd-sock", "/lab/glusterd.socket"] and own[0].endswith("glfsheal")
    assert GlusterCli(GlusterCli().host, "--remote-host=gluster1").heal_info_words("v") is None


def test_ceph_health_reads_its_status_and_every_check():
    import json
    from pathlib import Path

    from backends.ceph_client import health

    tools = Path(__file__).parent.parent / "data" / "tools"
    assert health(json.loads((tools / "ceph-health-detail-ok.json").read_text())) == (True, "HEALTH_OK")
    ok, said = health(json.loads((tools / "ceph-health-detail-osd-down.json").read_text()))
    assert not ok and said == "HEALTH_WARN OSD_DOWN: 1 osds down"
    # what 'ceph status' says of it, and an answer that is not one
    status = json.loads((Path(__file__).parent.parent / "data" / "existing" / "ceph-status.json").read_text())
    assert health(status["health"])[0] == (status["health"]["status"] == "HEALTH_OK")
    assert health(None) == (False, "no answer")
