"""The fault timeline (inject at after_s, restore at restore_after_s — held that long when the
cell's work ends first — or at the end of the cell, recovery counted from the restore) and the fault's options. The timeline's tests run on
a clock the test drives (:class:`Driven`), so its times hold on a busy machine."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from pydantic import ValidationError

from harness.api.faults import Faults, FaultSpec, Injected
from harness.api.target import Written
from harness.execution.group import Group
from harness.execution.timeline import Clock, Timeline, record
from harness.report.faults import table_rows

QUIET_S = 2.0  # real seconds in which no thread came to or left the clock: the others wait elsewhere


class Driven(Clock):
    """Time that stands still while any thread of the test works and, once each waits on it,
    jumps to the first moment one of them waits for (trio's MockClock with autojump, for
    threads): what the timeline does at its times happens at those times exactly, however
    busy the machine. The test's thread waits for the timeline's in :meth:`idle`; a thread
    of the timeline's that waits on something else (a lock that one waiting here holds)
    counts as waiting once no thread has come to the clock or left it for QUIET_S."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.t = start
        self._cond = threading.Condition()
        self._waiting: dict[threading.Thread, tuple[float, threading.Event]] = {}
        self._others = set(threading.enumerate()) - {threading.current_thread()}  # (not the test's)
        self._moved = time.monotonic()

    def now(self) -> float:
        with self._cond:
            return self.t

    def sleep(self, seconds: float) -> None:
        self.wait(threading.Event(), seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        me = threading.current_thread()
        with self._cond:
            self._waiting[me] = (self.t + seconds, event)
            self._stir()
            try:
                while not event.is_set() and self.t < self._waiting[me][0]:
                    if self._all_waiting():
                        self.t = min(until for until, e in self._waiting.values() if not e.is_set())
                        self._stir()
                    self._cond.wait(0.01)
                return event.is_set()
            finally:
                del self._waiting[me]
                self._stir()

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """The test's thread waits for the timeline's (a join): time moves meanwhile."""
        me = threading.current_thread()
        with self._cond:
            self._waiting[me] = (math.inf, threading.Event())
            self._stir()
        try:
            yield
        finally:
            with self._cond:
                del self._waiting[me]
                self._stir()

    def _stir(self) -> None:
        self._moved = time.monotonic()
        self._cond.notify_all()

    def _all_waiting(self) -> bool:
        ours = [t for t in threading.enumerate() if t not in self._others]
        return all(t in self._waiting and not self._waiting[t][1].is_set() for t in ours) \
            or time.monotonic() - self._moved > QUIET_S


class System(Faults):
    """A system whose node goes down and comes back at the times the timeline chooses; it
    notices a fault ``notice_s`` after it was done, and is healthy again ``heal_s`` after
    the node is back."""

    def __init__(self, clock: Clock, heal_s: float, notice_s: float = 0.0, shown_before: bool = False) -> None:
        self.clock, self.heal_s, self.notice_s, self.events = clock, heal_s, notice_s, []
        self.down: float | None = None
        self.back: float | None = None
        self.shown_before = shown_before  # a node shown down before any fault

    def inject(self, system, spec):
        self.events.append(("inject", system, self.clock.now()))
        self.down = self.clock.now()
        faults = self

        class Down(Injected):
            description = f"{system}2 killed"
            node = "ceph2"

            def restore(self):
                faults.events.append(("restore", system, faults.clock.now()))
                faults.back = faults.clock.now()

        return Down()

    def health(self, system):
        # unhealthy from the start (a warning of its own): that is not noticing the fault
        if self.back is not None:
            ok = self.clock.now() - self.back >= self.heal_s - 1e-9  # (sums of tenths are not exact)
            return ok, "HEALTH_OK" if ok else "HEALTH_WARN PG_DEGRADED"
        return False, "HEALTH_WARN MDS_SLOW_METADATA_IO"

    def noticed(self, system, injected):
        shown = self.shown_before or (injected.node == "ceph2" and self.down is not None
                                      and self.clock.now() - self.down >= self.notice_s - 1e-9)
        return shown, "2 of 3 OSDs up" if shown else "3 of 3 OSDs up"


def test_the_fault_happens_on_the_records_clock_and_both_recovery_figures_are_measured():
    clock = Driven()
    faults = System(clock, heal_s=1.0, notice_s=0.4)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.2, restore_after_s=1.5), clock)
    start = clock.now()
    timeline.start()  # (the runner calls it when the cell's first timed phase begins)
    clock.sleep(1.8)  # the cell
    timeline.restore()  # at the end of the cell: already done by the timer, not again
    assert [e[0] for e in faults.events] == ["inject", "restore"]
    assert [e[2] - start for e in faults.events] == pytest.approx([0.2, 1.5])
    with clock.idle():
        recovery, state = timeline.wait_healthy()
    # healthy 1 s after the restore, which the check at 1.5 s sees (checks at 0, 0.1, 0.3, 0.7
    # and 1.5 s: the wait doubles from 0.1 s; a fixed poll of 2 s said 2 s)
    assert state == "HEALTH_OK" and recovery == pytest.approx(1.5)
    # and healthy came after the last check that failed (at 0.7 s): the bound below it, kept
    assert timeline.times()["unhealthy_last"] - timeline.restored_at == pytest.approx(0.7)
    # the first check that shows it, one notice poll (0.5 s) after the injection
    assert timeline.noticed_after == pytest.approx(0.5)
    m = record(timeline, recovery, state, "yes (digest)", Group("largefile", {"file_size": 1}, "cephfs", "default"))
    assert m.flags == () and m.value == recovery
    # the four moments on the records' clock (seconds since the epoch), in order
    times = [m.params[k] for k in ("injected", "noticed", "restored", "healthy")]
    assert times == pytest.approx([start + 0.2, start + 0.7, start + 1.5, start + 3.5]) and times[0] == faults.events[0][2]
    assert m.params["fault"].startswith("ceph2 killed at 0.2 s, back at 1.5 s")
    assert table_rows([m], lambda k: "CephFS")[0][2:] == [m.params["fault"], f"{timeline.noticed_after:.1f} s",
                                                         f"{recovery:.1f} s", *["not recorded"] * 3,
                                                         "yes (digest)"]


def recorded(faults, spec):
    """A fault on the system's clock, restored 0.2 s after its restore_after_s and waited
    healthy: the timeline, the recovery time and the record."""
    timeline = Timeline(faults, "ceph", spec, faults.clock)
    timeline.start()
    faults.clock.sleep(spec.restore_after_s + 0.2)
    timeline.restore()
    with faults.clock.idle():
        recovery, state = timeline.wait_healthy()
    return timeline, recovery, record(timeline, recovery, state, "not checked",
                                      Group("largefile", {}, "cephfs", "default"))


def test_a_slow_look_at_the_state_before_the_fault_does_not_make_it_late():
    class Slow(System):  # its state takes 1 s to ask (a `ceph status` in a container, on a loaded host)
        def noticed(self, system, injected):
            self.clock.sleep(1.0)
            return super().noticed(system, injected)

    clock = Driven()
    faults = Slow(clock, heal_s=0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.2, restore_after_s=1.5), clock)
    timeline.look_first()  # (the runner asks between the cell's 'before' and its 'during')
    start = clock.now()
    timeline.start()
    clock.sleep(1.8)
    timeline.restore()
    assert faults.events[0][0] == "inject" and faults.events[0][2] - start == pytest.approx(0.2)
    assert timeline.before == (False, "3 of 3 OSDs up")


def test_a_fault_undone_before_the_system_noticed_it_says_so():
    # a 1 s stop that the cluster does not notice
    timeline, _, m = recorded(System(Driven(), heal_s=0, notice_s=30),
                              FaultSpec(action="stop", after_s=0.1, restore_after_s=0.6))
    assert timeline.noticed_after is None and m.params["noticed"] is None
    # no recovery time near 0: nothing was noticed, so nothing recovered
    assert m.value is None and m.flags == ("not-noticed",) and m.params["why"].startswith("not noticed")
    row = table_rows([m], lambda k: "CephFS")[0]
    assert row[3] == "not noticed before it was undone (it said: 3 of 3 OSDs up)" and row[4] == "— (not noticed)"


def test_a_look_that_shows_the_fault_while_the_node_is_being_brought_back_counts():
    class Slow(System):  # its restore takes 0.8 s (a node started again, its daemons), and the
        def inject(self, system, spec):  # system shows the fault 0.5 s after it was done, 0.3 s into it
            down = super().inject(system, spec)
            back, clock = down.restore, self.clock

            class Restoring(type(down)):
                def restore(self):
                    clock.sleep(0.8)
                    back()
            return Restoring()

    clock = Driven()
    faults = Slow(clock, heal_s=0, notice_s=0.5)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.1, restore_after_s=0.3), clock)
    timeline.start()
    clock.sleep(1.5)
    timeline.restore()
    with clock.idle():
        timeline.wait_healthy()
    assert timeline.restored_at - timeline.injected_at == pytest.approx(1.0)  # (0.2 s, then 0.8 s to bring it back)
    assert timeline.noticed_at < timeline.restored_at and not timeline.unnoticed
    assert timeline.noticed_after == pytest.approx(0.5)


def test_a_node_shown_down_before_the_fault_makes_no_noticed_time():
    _, recovery, m = recorded(System(Driven(), heal_s=0, shown_before=True),
                              FaultSpec(action="kill", after_s=0.1, restore_after_s=0.5))
    assert m.params["noticed"] is None and m.value == recovery
    assert table_rows([m], lambda k: "CephFS")[0][3].startswith("not known: the system showed a node down before")


def test_a_fault_without_a_restore_time_is_undone_at_the_end_of_the_cell():
    clock = Driven()
    faults = System(clock, heal_s=0)
    timeline = Timeline(faults, "gluster", FaultSpec(action="stop", after_s=0.1), clock)
    timeline.start()
    clock.sleep(0.3)
    timeline.restore()
    assert [e[0] for e in faults.events] == ["inject", "restore"]
    assert faults.events[1][2] - faults.events[0][2] == pytest.approx(0.2)
    with clock.idle():
        assert timeline.wait_healthy()[0] is not None


def test_a_cell_whose_work_ends_before_restore_after_s_holds_the_node_down_as_asked():
    # the work lasts 0.5 s, the fault is asked from 0.2 s to 3 s, and the system notices a
    # node down after 1 s: undone at the work's end, the fault would last 0.3 s, unnoticed
    clock = Driven()
    faults = System(clock, heal_s=0, notice_s=1.0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.2, restore_after_s=3.0), clock)
    start = clock.now()
    timeline.start()
    clock.sleep(0.5)  # the cell's work
    assert timeline.left_down_s() == pytest.approx(2.5)
    timeline.hold()
    assert timeline.left_down_s() == 0
    assert [(e[0], e[2] - start) for e in faults.events] == [("inject", pytest.approx(0.2)),
                                                            ("restore", pytest.approx(3.0))]
    with clock.idle():
        assert timeline.wait_healthy()[0] is not None
    assert timeline.noticed_after == pytest.approx(1.0) and not timeline.unnoticed
    # no fault done (the work ended before after_s): nothing to hold, and none done later
    clock = Driven()
    faults = System(clock, heal_s=0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.3, restore_after_s=3.0), clock)
    timeline.start()
    assert timeline.left_down_s() == 0
    timeline.hold()
    clock.sleep(4)
    assert faults.events == []


def test_a_cell_shorter_than_after_s_has_no_fault_and_no_late_one():
    clock = Driven()
    faults = System(clock, heal_s=0)
    timeline = Timeline(faults, "ceph", FaultSpec(action="kill", after_s=0.3), clock)
    timeline.start()
    timeline.restore()  # the cell ended first
    clock.sleep(0.6)  # past after_s: the timer must not take a node down for the cells after it
    assert faults.events == [] and timeline.wait_healthy() == (None, "not restored")
    m = record(timeline, None, "not restored", "not checked (no fault was injected)",
               Group("fio", {}, "cephfs", "default"))
    # nothing done to the cluster: no recovery time, and not an unhealthy system either
    assert m.flags == ("no-fault",) and m.value is None
    assert table_rows([m], lambda k: "CephFS")[0][3:5] == ["no fault done", "— (no fault done)"]


def kept(writer, started, ended, good=True, log=None):
    return Written(f"f-{writer.label}", writer, started, ended,
                   lambda view: (log.append(view.host.label) if log is not None else None) or good, lambda: None)


def test_verified_means_read_back_intact_on_another_client_after_the_fault():
    """'yes' only where data written while the fault held was read on another client after
    the system was healthy again; every other case says why it was not checked."""
    from pathlib import Path

    from harness.api.target import Target
    from harness.execution.cell import verify
    from harness.system.hosts import LocalHost

    one, two = LocalHost(), LocalHost()
    one.name, two.name = "client1", "client2"
    target = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(one, two), host=one,
                    remount_host=lambda host: None)
    lone = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(one,), host=one)
    timeline = Timeline(System(Clock(), 0), "ceph", FaultSpec(action="kill", after_s=1))
    workload = type("W", (), {"name": "largefile", "verification": lambda self: "digest"})()
    none_done = verify([kept(one, 10, 20)], timeline, target, workload, True, True)
    assert none_done == "not checked (no fault was injected)"
    timeline.injected_at, timeline.restored_at = 100.0, 110.0
    assert verify([kept(one, 10, 20)], timeline, target, workload, True, True) == \
        "not checked (nothing was written while the fault held)"
    assert verify([kept(one, 105, 108)], timeline, lone, workload, True, True).startswith(
        "not checked (one client only")
    read_on: list[str] = []
    assert verify([kept(one, 99, 104, log=read_on)], timeline, target, workload, True, True) == \
        "yes (digest, read on client2 (sync+remount+drop_caches) after the system was healthy)" and \
        read_on == ["client2"]
    # a FUSE client the user mounted keeps its cache, and it may have read the file in the cell
    kept_cache = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(one, two), host=one, cache_kept=True)
    assert verify([kept(one, 99, 104)], timeline, kept_cache, workload, True, True).startswith(
        "not checked (the caches of client2, which may have read it in the cell, could not be dropped: "
        "sync+client-cache-kept")
    assert verify([kept(two, 99, 104, good=False)], timeline, target, workload, True, True).startswith(
        "no: f-client2 read on client1 does not match")
    assert verify([kept(one, 99, 104)], timeline, target, workload, False, True) == \
        "not checked (the system was not healthy again)"


def test_an_object_stores_data_is_checked_on_its_only_client_which_keeps_no_cache():
    """With one client, data of a client that keeps no cache (an S3 client) is read back on the
    writer itself, and said so; data of one that may (a file system's) is not checked there."""
    from dataclasses import replace

    from harness.api.target import S3Access, Target
    from harness.execution.cell import verify
    from harness.system.hosts import LocalHost

    one = LocalHost()
    one.name = "client1"
    lone = Target("s3", None, "rgw", "default", hosts=(one,), host=one,
                  access=S3Access("127.0.0.1", 1, "k", "/nonexistent", "dfsbench-00000000"))
    timeline = Timeline(System(Clock(), 0), "ceph", FaultSpec(action="kill", after_s=1))
    timeline.injected_at, timeline.restored_at = 100.0, 110.0
    workload = type("W", (), {"name": "s3", "verification": lambda self: "every object read back"})()
    read_on: list[str] = []
    written = replace(kept(one, 99, 104, log=read_on), cacheless=True)
    assert verify([written], timeline, lone, workload, True, True) == \
        "yes (every object read back, read on client1 (no client cache) after the system was healthy)"
    assert read_on == ["client1"]
    assert verify([replace(written, check=lambda view: False)], timeline, lone, workload, True, True) == \
        "no: f-client1 read on client1 does not match what was written"
    assert verify([kept(one, 99, 104)], timeline, lone, workload, True, True).startswith(
        "not checked (one client only")
    # what says when each of its writes was acknowledged was written while the fault held only
    # if one of them falls in it, whatever its span (objects put before and after a gateway down)
    around = replace(written, moments=(99.0, 111.0))
    assert verify([around], timeline, lone, workload, True, True) == \
        "not checked (nothing was written while the fault held)"
    assert verify([replace(written, moments=(99.0, 105.0))], timeline, lone, workload, True, True).startswith("yes (")


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

    from backends.gluster.client import GlusterCli, bricks_online, heal_pending

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

    from backends.ceph.client import health

    tools = Path(__file__).parent.parent / "data" / "tools"
    assert health(json.loads((tools / "ceph-health-detail-ok.json").read_text())) == (True, "HEALTH_OK")
    ok, said = health(json.loads((tools / "ceph-health-detail-osd-down.json").read_text()))
    assert not ok and said == "HEALTH_WARN OSD_DOWN: 1 osds down"
    # what 'ceph status' says of it, and an answer that is not one
    status = json.loads((Path(__file__).parent.parent / "data" / "existing" / "ceph-status.json").read_text())
    assert health(status["health"])[0] == (status["health"]["status"] == "HEALTH_OK")
    assert health(None) == (False, "no answer")


def test_the_report_draws_each_record_of_the_cell_against_the_faults_moments():
    from harness.api.records import Measurement
    from harness.report.faults import timeline_chart
    from harness.report.html import timelines

    fault = Measurement("fault", "recovery", "elapsed", 6.0, "s",
                        {"for": "largefile", "file_size": 1, "fault": "ceph-osd2 killed at 2.0 s", "injected": 1002.0,
                         "noticed": 1006.5, "restored": 1010.0, "healthy": 1016.0}, "cephfs")
    during = Measurement("largefile", "write", "throughput", 1e8, "B/s",
                         {"file_size": 1, "phase": "during", "started": 1000.0, "ended": 1007.0}, "cephfs",
                         flags=("degraded",))
    other_cell = replace(during, params={**during.params, "file_size": 2})  # (another cell's fault)
    before = Measurement("largefile", "write", "throughput", 1e8, "B/s",
                         {"phase": "before", "started": 900.0, "ended": 907.0}, "cephfs")
    chart = timeline_chart([fault, during, before, other_cell], lambda k: "CephFS")
    (one,) = chart["faults"]
    assert one["moments"] == {"injected": 0.0, "noticed": 4.5, "restored": 8.0, "healthy": 14.0}
    assert one["bars"] == [{"label": "write throughput", "start": -2.0, "end": 5.0, "degraded": True}]
    (figure,) = timelines(chart)
    assert figure["data"][0]["base"] == [-2.0] and figure["data"][0]["x"] == [7.0]


def test_a_node_down_is_noticed_from_a_state_that_names_it():
    """Real outputs of the container lab's monitor (``ceph osd stat``), before a kill of
    ceph-osd2 and 1.3 s after it; GlusterFS's from ``volume status`` (one brick offline)."""
    import xml.etree.ElementTree as ET
    from pathlib import Path

    from backends.ceph.containers import osds_down
    from backends.gluster.containers import bricks_offline as _bricks_offline

    tools = Path(__file__).parent.parent / "data" / "tools"
    assert osds_down((tools / "ceph-osd-stat.json").read_text()) == (False, "3 of 3 OSDs up")
    assert osds_down((tools / "ceph-osd-stat-osd-down.json").read_text()) == (True, "2 of 3 OSDs up")
    shown, said = osds_down("Error initializing cluster client: ObjectNotFound('RADOS object not found')")
    assert shown is None and said.startswith("ceph osd stat said: Error initializing")

    class Cli:
        def __init__(self, name):
            self.name = name

        def xml(self, *args):
            return ET.fromstring((tools / self.name).read_text())

    assert _bricks_offline(Cli("gluster-volume-status-brick-down.xml"), "v", 3) == (True, "2 of 3 bricks online")
    assert _bricks_offline(Cli("gluster-volume-status.xml"), "v", 3) == (False, "3 of 3 bricks online")


def test_a_timeline_of_its_own_keeps_its_moments_on_the_records_clock():
    # (the records' times are seconds since the epoch of this machine; a timeline given no
    # clock keeps its moments on that one, not on a monotonic clock that only a lab run
    # would tell apart)
    timeline = Timeline(System(Driven(), heal_s=1.0, notice_s=0.4), "ceph", FaultSpec(action="kill", after_s=5))
    before = time.time()
    assert before <= timeline.clock.now() <= time.time()


def test_a_fault_chart_says_its_times_on_its_axis_clock(tmp_path):
    """A fault chart's axis is seconds from the injection; its title said 'killed at 2.3 s,
    back at 10.2 s' on the cell's clock. It says the restore on the axis's clock, in the
    timeline chart and in the real load run's percentile charts alike."""
    from harness.api.records import Measurement
    from harness.report.faults import from_injection, timeline_chart
    from harness.report.html import tails, timelines
    from harness.report.view import ViewRequest, build_view
    from harness.results.catalogue import Catalogue
    from tests.unit.builders import stored_with_series

    params = {"for": "largefile", "file_size": 1, "fault": "ceph-osd2 killed at 2.3 s, back at 10.2 s",
              "injected": 1002.3, "noticed": 1006.5, "restored": 1010.2, "healthy": 1016.0}
    assert from_injection(params) == "ceph-osd2 killed, restored 7.9 s after the injection"
    assert from_injection({**params, "fault": "ceph-osd2 killed at 2.3 s", "restored": None}) == "ceph-osd2 killed"
    fault = Measurement("fault", "recovery", "elapsed", 6.0, "s", params, "cephfs")
    during = Measurement("largefile", "write", "throughput", 1e8, "B/s",
                         {"file_size": 1, "phase": "during", "started": 1000.0, "ended": 1007.0}, "cephfs")
    (figure,) = timelines(timeline_chart([fault, during], lambda k: "CephFS"))
    assert figure["title"].startswith("CephFS: largefile — ceph-osd2 killed, restored 7.9 s after the injection")
    assert figure["layout"]["xaxis"]["title"] == "s from the injection"
    run_id = stored_with_series(tmp_path, "docker-run-load")
    view = build_view(Catalogue(tmp_path), ViewRequest([run_id]))
    load = next(t.chart for t in view.tables if t.chart and t.chart["kind"] == "load")
    titles = [f["title"] for f in tails(load)]
    assert len(titles) == 6 and not any(" at 10." in t or "back at" in t for t in titles), titles
    for f, title in zip(load["faults"], titles):
        assert f"restored {f['moments']['restored']:.1f} s after the injection" in title, title


def test_an_object_stores_data_is_read_on_the_other_client_with_no_cache_to_drop():
    """With two clients, objects are read back on the client that did not write them, and no
    cache of its is dropped first, nor needed: a container's client can drop none, and an S3
    read asks the gateway (a file system's data there is not checked: its cache could answer)."""
    from dataclasses import replace
    from pathlib import Path

    from harness.api.target import S3Access, Target
    from harness.execution.cell import verify
    from harness.system.hosts import LocalHost

    one, two = LocalHost(), LocalHost()
    one.name, two.name = "client1", "client2"
    # (cache_kept: what a client whose caches cannot be dropped says, as a container's)
    s3 = Target("s3", None, "rgw", "default", hosts=(one, two), host=one, cache_kept=True,
                access=S3Access("10.0.0.2", 7480, "k", "/nonexistent", "dfsbench-00000000"))
    timeline = Timeline(System(Clock(), 0), "ceph", FaultSpec(action="kill", after_s=1))
    timeline.injected_at, timeline.restored_at = 100.0, 110.0
    workload = type("W", (), {"name": "s3", "verification": lambda self: "every object read back"})()
    read_on: list[str] = []
    written = replace(kept(one, 99, 104, log=read_on), cacheless=True)
    assert verify([written], timeline, s3, workload, True, True) == \
        "yes (every object read back, read on client2 (no client cache) after the system was healthy)"
    assert read_on == ["client2"]
    # a file system's data, where the other client's cache cannot be dropped: not checked
    fs = Target("path", Path("/mnt/x"), "cephfs", "default", hosts=(one, two), host=one, cache_kept=True)
    assert verify([kept(one, 99, 104)], timeline, fs, workload, True, True).startswith(
        "not checked (the caches of client2")
