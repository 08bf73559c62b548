"""The answer the outputs open with (harness.report.summary): it counts the verdicts the
tables decided, by winner and by why there is none, and decides none again."""

from __future__ import annotations

import re
from pathlib import Path

from harness.report import summary
from harness.report.view import ViewRequest, build_view
from harness.results.catalogue import Catalogue
from tests.unit.builders import stored


def test_the_2014_reports_large_files_counted_by_winner_and_by_why_not():
    view = build_view(Catalogue(Path("/nonexistent")), ViewRequest(["report-2014"]))
    line = next(s for s in view.summary if s.startswith("largefile"))
    # its table: CephFS 2.2× and 1.9× faster, one pair within noise, one cache [N], four reads
    # without a cache drop [D] — every one a single run a side
    assert line == ("largefile (elapsed), GlusterFS/sr33 vs CephFS: CephFS faster in 2 of 3 comparable cells "
                    "(2 of these verdicts from one run a side); CephFS 1.92× as fast as GlusterFS/sr33 (median; "
                    "range 1.01×–2.25×). No verdict in 6 cells: 4 flagged no-cache-drop, 1 flagged exceeds-network, "
                    "1 within one run's noise (n=1)."), line


def test_every_win_counted_is_a_win_the_tables_comparison_column_shows():
    view = build_view(Catalogue(Path("/nonexistent")), ViewRequest(["report-2014"]))
    for p in summary.pairings(view.tables):
        shown = [row[-1] for t in view.tables if t.workload == p.workload and t.verdicts for row in t.rows]
        for who in (p.a, p.b):
            said = sum(1 for text in shown if re.match(re.escape(view.systems.name(who)) + r" [\d.]+× faster", text))
            assert p.wins(who) == said, (p.workload, who)


def test_a_lab_run_on_a_saturated_host_says_why_no_cell_has_a_verdict(tmp_path):
    run_id = stored(tmp_path)
    view = build_view(Catalogue(tmp_path), ViewRequest([run_id]))
    assert view.summary[0] == ("largefile (elapsed), GlusterFS vs CephFS: no comparable cell. No verdict in 2 cells: "
                               "2 host-bound.")
    gluster = next(s for s in view.summary if s.startswith("GlusterFS — "))
    assert "bottleneck: the busiest was a client's network out" in gluster
    assert re.search(r"A GiB moved cost largefile [\d.]+ CPU-s/GiB on the clients, [\d.]+ on the servers", gluster)


def test_with_no_more_wins_either_side_the_line_is_led_by_the_faster_median():
    """No cell has a winner (none significant): the line says so, and gives the ratio as
    one no verdict rests on, from the side whose median is the faster ('1.25× as fast',
    never '0.80× as fast as' the slower one, nor 'faster in 0 of 3'); the pair itself is
    named in its one order, the reference first."""
    from harness.report.verdicts import Verdict

    a, b = ("glusterfs", "default"), ("cephfs", "default")
    p = summary.Pairing("largefile", "elapsed", a, b, [
        Verdict(a, b, "elapsed", "", None, ratio, "not significant", (), (2, 2)) for ratio in (0.7, 0.8, 1.1)])
    line = summary.pairing_line(p, lambda k: k[0])
    assert line == ("largefile (elapsed), glusterfs vs cephfs: neither faster in any of the 3 comparable cells; their "
                    "ratio, on which no verdict rests: cephfs 1.25× as fast as glusterfs (median; range 0.91×–1.43×). "
                    "No verdict in 3 cells: 3 no significant difference."), line
    one = summary.Pairing("fio", "iops", a, b, [Verdict(a, b, "iops", "", None, 1.2, "n=1", (), (1, 1))])
    assert summary.pairing_line(one, lambda k: k[0]).startswith(
        "fio (iops), glusterfs vs cephfs: neither faster in the one comparable cell; their ratio, on which no verdict "
        "rests: glusterfs 1.20× as fast as cephfs. No verdict in 1 cell")
    # as many wins each: the ratio names no side either
    p.verdicts[0] = Verdict(a, b, "elapsed", "", b, 0.7, None, (), (2, 2))
    p.verdicts[2] = Verdict(a, b, "elapsed", "", a, 1.1, None, (), (2, 2))
    assert "cephfs faster in 1 of 3 comparable cells, glusterfs in 1; their ratio, which names no side (as many " \
           "verdicts each): cephfs 1.25× as fast as glusterfs" in summary.pairing_line(p, lambda k: k[0])
    p.verdicts[0] = Verdict(a, b, "elapsed", "", None, 0.7, "not significant", (), (2, 2))
    # more wins lead, whatever the median says (the counts come first, and the ratio is as measured)
    p.verdicts[2] = Verdict(a, b, "elapsed", "", a, 1.1, None, (), (2, 2))
    assert summary.pairing_line(p, lambda k: k[0]).startswith("largefile (elapsed), glusterfs vs cephfs: glusterfs "
                                                              "faster in 1 of 3 comparable cells; glusterfs 0.80×")


def test_the_answer_names_every_pair_in_one_order_the_reference_first(tmp_path):
    """The 2014 report's runs, its first system the reference: each line of the answer names
    the pair reference first, whichever won (CephFS led its large-file line, so it read
    'CephFS vs GlusterFS/sr33' beside 'GlusterFS/sr33 vs ...'), and so with --reference."""
    for reference, first in ((None, "GlusterFS/sr33"), ("cephfs", "CephFS")):
        view = build_view(Catalogue(Path("/nonexistent")), ViewRequest(["report-2014"], reference=reference))
        pairs = [line.split(": ", 1)[0].split("), ", 1)[1] for line in view.summary if " vs " in line.split(":")[0]]
        assert pairs and all(p.startswith(first + " vs ") for p in pairs), pairs
        if reference is None:  # (a line the other system leads: named reference first all the same)
            assert any(line.split(": ", 1)[1].startswith("CephFS faster") for line in view.summary), view.summary
