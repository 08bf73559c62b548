"""What names a run or a gate is never empty, never said twice, and never echoed whole:
'' is refused (not a new run, not the one stored run it is a prefix of, not a gate
switched off), two rules on one metric or two --fail-on are refused, and a 10 KB
reference is shown cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api.records import Measurement
from harness.errors import BadInput
from harness.report import gate
from harness.results.catalogue import Catalogue
from tests.unit.inproc import dfsbench

FIO = Path(__file__).parent.parent / "data" / "tools" / "fio-json.json"




@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("refs") / "results"
    done = dfsbench("import", "fio", str(FIO), "--backend", "cephfs", "--results", str(root))
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize("args, said", [
    (["compare", ""], "'' names no run"),
    (["report", "", "-o", "r.html"], "'' names no run"),
    (["compare", "latest", "--baseline", ""], "'' names no run"),
    (["compare", "latest", "--baseline", "latest", "--fail-on", ""], "--fail-on '' names no rule"),
    (["compare", "latest", "--baseline", "latest", "--fail-on", "throughput:-10%,throughput:-50%"],
     "two rules on throughput ('throughput:-10%' and 'throughput:-50%')"),
    (["compare", "latest", "--baseline", "latest", "--fail-on", "*:-10%, *:-5%"], "two rules on *"),
    (["compare", "latest", "--baseline", "latest", "--fail-on", "iops:-10%", "--fail-on", "throughput:-5%"],
     "argument --fail-on: is given twice ('iops:-10%' and 'throughput:-5%')"),
    (["compare", "latest", "--baseline", "latest", "--baseline", "latest"], "--baseline: is given twice"),
])
def test_an_empty_or_doubled_reference_or_rule_is_refused(results, args, said):
    got = dfsbench(*args, "--results", str(results))
    assert got.returncode == 2 and said in got.stderr and "Traceback" not in got.stderr, got.stderr
    assert "gate:" not in got.stdout


def test_resume_of_nothing_starts_no_run(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("backends: [localdir]\nworkloads: [fio]\n")
    got = dfsbench("run", str(config), "--resume", "", "--results", str(tmp_path / "results"))
    assert got.returncode == 2 and "'' names no run" in got.stderr, got.stderr
    assert not (tmp_path / "results").exists()  # (no store made, no run begun)
    (tmp_path / "not-a-dir").write_text("")
    got = dfsbench("run", str(config), "--resume", "a", "--resume", "b", "--results", str(tmp_path / "not-a-dir"))
    assert got.returncode == 2 and "argument --resume: is given twice ('a' and 'b')" in got.stderr, got.stderr


def test_a_long_reference_is_shown_cut(results):
    got = dfsbench("compare", "a" * 10_000, "--results", str(results))
    assert got.returncode == 2 and "no run 'aaaa" in got.stderr and "..." in got.stderr
    assert len(got.stderr) < 1000, len(got.stderr)


def test_the_catalogue_resolves_no_empty_reference(results):
    catalogue = Catalogue(results)
    assert catalogue.resolve("latest") == catalogue.store.run_ids()[-1]
    for ref in ("", " "):  # ('' is a prefix of the one stored run's id)
        with pytest.raises(BadInput, match="names no run"):
            catalogue.resolve(ref)


def _records(run_id: str, throughput: float) -> list[Measurement]:
    return [Measurement("fio", "seq-read", metric, value, unit, {"bs": 1 << 20}, "cephfs", "default", run_id)
            for metric, value, unit in (("throughput", throughput, "B/s"), ("iops", throughput / (1 << 20), "op/s"))]


def test_a_metric_s_own_rule_holds_over_the_rule_for_every_metric_in_any_order():
    old, new = _records("a", 100e6), _records("b", 80e6)  # 20 % slower
    for text in ("*:-50%,throughput:-10%", "throughput:-10%,*:-50%"):
        compared, found = gate.check(new, old, gate.parse_rules(text))
        assert compared == 2 and [f.key[2] for f in found] == ["throughput"], text


@pytest.mark.parametrize("text", ["throughput:-１0%", "throughput:-٣%", "throughput:-10%\n", "thröughput:-10%"])
def test_a_rule_is_ascii_and_whole(text):
    with pytest.raises(BadInput, match="is not a rule"):
        gate.parse_rules(text)


def test_a_rule_on_a_metric_no_cell_has_is_refused_beside_a_valid_one(results):
    got = dfsbench("compare", "latest", "--baseline", "latest", "--fail-on", "troughput:-10%,throughput:-10%",
                   "--results", str(results))
    assert got.returncode == 2 and "no cell of both runs has the metric 'troughput'" in got.stderr, got.stderr
    assert "the metrics both runs have: " in got.stderr and "throughput" in got.stderr.split("have: ")[1]
    assert "gate:" not in got.stdout + got.stderr


def test_a_long_rule_is_echoed_cut(results):
    rule = "throughput:-10." + "0" * 10_000 + "%"  # (a rule, however long)
    got = dfsbench("compare", "latest", "--baseline", "latest", "--fail-on", rule, "--results", str(results))
    said = [line for line in got.stdout.splitlines() if line.startswith("gate:")]
    assert got.returncode == 0 and said and len(said[0]) < 300, (got.returncode, got.stderr[-300:])
