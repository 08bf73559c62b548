"""The answer as data (issue 44, §4): ``compare --format json`` carries every table the
terminal prints and the answer's lines, each figure a number with its unit — read here off
real container-lab runs (tests/data/docker-run-load: three systems' knees, loads within
p99 ≤ 20 ms and a storage node killed under a fixed load; tests/data/docker-run-cost: what a
GiB cost and each system's bottleneck) without parsing any text; and ``--format csv`` one
table a file (``-o DIR``) or one table (``--table NAME``)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.api.records import FLAGS
from harness.cli import main
from harness.report.data import slug
from harness.report.render import table_csv, table_names
from harness.report.verdicts import Table
from harness.results.catalogue import Catalogue
from tests.unit.builders import stored, stored_with_series
from tests.unit.test_load_report import CLOSED_LOOP, KNEES, WITHIN_20MS

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def load_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    return results, stored_with_series(results, "docker-run-load")


@pytest.fixture(scope="module")
def load_doc(load_run):
    results, run_id = load_run
    shown = subprocess.run([sys.executable, "-m", "harness.cli", "compare", run_id, "--format", "json",
                            "--results", str(results)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def table(doc, name):
    return next(t for t in doc["tables"] if t["name"] == name)


def test_each_systems_knee_and_load_within_the_slo_are_numbers_with_their_units(load_doc):
    rows = table(load_doc, "load")["rows"]
    assert len(rows) == len(KNEES)
    for row in rows:
        key = (row["backend"], row["of"]["test"])
        knee, within = row["knee"], row["within_p99"]
        assert (knee["value"], knee["unit"]) == (KNEES[key], "op/s"), key
        assert (within["value"], within["unit"]) == (WITHIN_20MS[key], "op/s"), key
        assert within["target"] == {"value": 0.02, "unit": "s"} and within["percentile"] == "p99"
        assert round(row["closed_loop_max"]["value"]) == CLOSED_LOOP[key] and row["closed_loop_max"]["unit"] == "op/s"
        if knee["value"] is not None:  # (its latency in s, and the next load, where the p99 went over)
            assert knee["p99"]["unit"] == "s" and 0 < knee["p99"]["value"] < 1
            assert knee["achieved"]["unit"] == "op/s" and knee["achieved"]["value"] > 0
            assert knee["stopped"]["at"]["value"] > knee["value"]
        else:
            assert knee["why"] == knee["stopped"]["text"]
    # SeaweedFS's writes: saturated from the lowest load, and its write buffer [W] says why
    seaweed = next(r for r in rows if (r["backend"], r["of"]["test"]) == ("seaweedfs", "randwrite-4k-qd16"))
    assert seaweed["knee"]["stopped"]["why"] == "saturated"
    assert seaweed["knee"]["stopped"]["at"] == {"value": 200.0, "unit": "op/s"}
    assert {"saturated", "write-behind"} <= set(seaweed["knee"]["stopped"]["flags"]) <= set(FLAGS)
    # GlusterFS's random reads: its p99 went over twice the lowest load's at 400 op/s
    gluster = next(r for r in rows if (r["backend"], r["of"]["test"]) == ("glusterfs", "randread-4k-qd16"))
    assert gluster["knee"]["stopped"]["why"] == "p99 156.2 ms > 2 × the lowest load's 4.8 ms"
    assert gluster["knee"]["stopped"]["at"]["value"] == 400.0


def test_through_the_fault_says_held_or_not_and_its_seconds_above_the_slo_as_numbers(load_doc):
    rows = table(load_doc, "load")["rows"]
    held = {(r["backend"], r["of"]["test"]): [t["held_while_down"] for t in r["through_fault"]] for r in rows}
    # (as test_load_report reads them: only GlusterFS's random reads held while gluster2 was down)
    assert held == {k: [k == ("glusterfs", "randread-4k-qd16")] for k in KNEES}
    for r in rows:
        for t in r["through_fault"]:
            down, healthy = t["while_down"], t["to_healthy"]
            assert all(v["unit"] == "s" for v in (*down.values(), *healthy.values()))
            assert down["seconds"]["value"] == sum(down[k]["value"] for k in ("above", "within", "unknown"))
            assert t["offered"] == {"value": 200.0, "unit": "op/s"}
            assert t["held_while_down"] == (down["above"]["value"] == 0 and down["unknown"]["value"] == 0
                                            and not t["fell_behind"])
    ceph = next(r for r in rows if (r["backend"], r["of"]["test"]) == ("cephfs", "randwrite-4k-qd16"))
    assert (ceph["through_fault"][0]["to_healthy"]["above"]["value"],
            ceph["through_fault"][0]["to_healthy"]["unknown"]["value"]) == (31, 16)


def test_the_faults_table_and_the_answer_are_data_beside_their_text(load_doc, load_run):
    faults = table(load_doc, "faults")
    records = [m for m in Catalogue(load_run[0]).measurements(load_run[1]) if m.workload == "fault"]
    assert len(faults["rows"]) == len(records) == len(faults["text"])
    for row, m in zip(faults["rows"], records):
        assert row["noticed_after"] == {"value": m.params["noticed_after_s"], "unit": "s",
                                        "text": f"{m.params['noticed_after_s']:.1f} s"}
        assert row["healthy_after_restore"]["value"] == m.value and row["healthy_after_restore"]["unit"] == "s"
        assert row["lowest_rate"]["unit"] == m.params["rate_unit"] == row["lowest_rate"]["level"]["unit"]
        assert row["stalled"]["unit"] == row["back_to_level"]["unit"] == "s"
    assert faults["keys"] == ["system", "cell", "fault", "noticed_after", "healthy_after_restore", "lowest_rate",
                              "stalled", "back_to_level", "verified"]
    answer = load_doc["answer"]
    assert answer["lines"] and all(isinstance(line, str) for line in answer["lines"])
    verdicts = {(v["metric"], tuple(v["pair"])): v for v in answer["verdicts"]}
    v = verdicts[("iops", ("GlusterFS", "CephFS"))]
    assert v["text"] == answer["lines"][0]  # (the first line of the answer, as data)
    assert (v["faster"], v["reference"], v["comparable_cells"], v["wins"]) == (
        "GlusterFS", "GlusterFS", 9, {"GlusterFS": 7, "CephFS": 0})
    assert (round(v["ratio"]["median"], 2), round(v["ratio"]["low"], 2), round(v["ratio"]["high"], 2)) == (2.60, 1.20, 5.59)
    assert v["no_verdict"] == {"its rate set by the offered load": 9, "within one run's noise (n=1)": 2, "degraded": 2}


def test_what_a_gib_cost_and_each_bottleneck_are_numbers_in_base_units(tmp_path, capsys):
    run_id = stored(tmp_path)
    assert main(["compare", run_id, "--format", "json", "--results", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    costs = table(doc, "costs")
    per_gib = sorted((r["backend"], r["params"]["side"], r["repeat"], r["value"]) for r in doc["records"]
                     if r["metric"] == "cpu_s_per_gib")
    assert sorted((row["backend"], side, row["repeat"], row[f"{side}_cpu_s_per_gib"]["value"])
                  for row in costs["rows"] for side in ("client", "server")) == per_gib
    for row in costs["rows"]:
        assert row["moved"] == {"value": 4 * 64 * (1 << 20), "unit": "B"}
        assert row["client_peak_memory"]["unit"] == "B" and row["client_peak_memory"]["value"] > 1 << 20
        assert row["server_cpu_s_per_gib"]["unit"] == "s/GiB" and len(row["server_cpu_s_per_gib"]["nodes"]) in (3, 4)
    answer = doc["answer"]
    assert {c["backend"] for c in answer["costs"]} == {"glusterfs", "cephfs"}
    assert all(c["client_cpu_s_per_gib"]["unit"] == "s/GiB" and c["client_cpu_s_per_gib"]["value"] > 0
               for c in answer["costs"])
    busy = {b["backend"]: b for b in answer["bottlenecks"]}
    assert busy["glusterfs"]["resource"] == "net_tx" and busy["glusterfs"]["share"]["unit"] == "%"
    assert busy["glusterfs"]["text"] in "\n".join(answer["lines"])
    # every table the terminal prints is there, by the name --table takes
    assert {t["name"] for t in doc["tables"]} >= {"resources", "costs", "aggregates"}
    assert all(len(t["rows"]) == len(t["text"]) and len(t["keys"]) == len(t["columns"])
               and all(set(t["keys"]) <= set(row) for row in t["rows"]) for t in doc["tables"])


def test_csv_writes_each_table_to_a_file_of_its_name_or_prints_the_one_named(load_run, tmp_path, capsys):
    results, run_id = load_run
    assert main(["compare", run_id, "--format", "json", "--results", str(results)]) == 0
    named = [t["name"] for t in json.loads(capsys.readouterr().out)["tables"]]
    out = tmp_path / "tables"
    assert main(["compare", run_id, "--format", "csv", "-o", str(out), "--results", str(results)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.csv" for n in named)
    load = list(csv.reader(io.StringIO((out / "load.csv").read_text())))
    assert load[0][:2] == ["figure", "system"] and len(load) == 1 + len(KNEES)
    capsys.readouterr()
    assert main(["compare", run_id, "--format", "csv", "--table", "load", "--results", str(results)]) == 0
    assert capsys.readouterr().out == (out / "load.csv").read_bytes().decode()
    # an unknown name: a clear error naming the tables there are
    assert main(["compare", run_id, "--format", "csv", "--table", "lod", "--results", str(results)]) == 2
    said = capsys.readouterr().err
    assert "--table lod: no such table" in said and "load, " in said and "faults" in said


def test_table_names_are_slugs_of_a_safe_alphabet_whatever_a_stored_title_says():
    titles = ["../../etc/passwd", "a/b", "", "..", "Ünïcode ☃", "x" * 500, "a/b", "fio: total"]
    found = table_names([Table(t, ["c"], []) for t in titles])
    assert len(set(found)) == len(found)
    for name in found:
        assert name and len(name) <= 64 and set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
        assert "/" not in name and ".." not in name and not name.startswith("-")
    assert found[:3] == ["etc-passwd", "a-b", "table"] and found[6] == "a-b-2" and slug("fio: total") == "fio-total"


def test_a_cell_a_spreadsheet_would_evaluate_is_quoted_in_a_tables_csv():
    t = Table("t", ["system", "=cmd|' /C calc'!A0"], [["+SUM(A1)", "-5.2"], ["@x", "=HYPERLINK(\"u\")"]])
    rows = list(csv.reader(io.StringIO(table_csv(t))))
    assert rows == [["system", "'=cmd|' /C calc'!A0"], ["'+SUM(A1)", "-5.2"], ["'@x", "'=HYPERLINK(\"u\")"]]


def test_the_example_gate_script_reads_each_systems_knee_and_slo_load(load_doc, tmp_path):
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(load_doc))
    shown = subprocess.run([sys.executable, str(ROOT / "examples" / "load_gate.py"), str(doc)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == len(KNEES)
    assert any(line.startswith("fio randwrite-4k-qd16 write (2 clients) GlusterFS: knee 400 op/s")
               and "p99 ≤ 0.02 s: 400 op/s" in line for line in lines)


def test_the_workloads_tables_the_busiest_nodes_and_the_aggregates_are_numbers_too(tmp_path, capsys):
    """Every table the terminal prints has its figures as numbers with their units: the
    workloads' own tables (a figure per system and column, with n, its flags and the verdict
    as data), the busiest-node table (shares in %) and what several clients moved together."""
    run_id = stored(tmp_path)
    assert main(["compare", run_id, "--format", "json", "--results", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    records = {(r["backend"], r["test"], r["metric"], r["params"].get("host"), r["repeat"]): r["value"]
               for r in doc["records"] if r["workload"] == "largefile"}
    large = next(t for t in doc["tables"] if t["name"].startswith("large-files"))
    row = next(r for r in large["rows"] if r["test"] == "write" and r["params"].get("host") == "all")
    gluster = row[next(k for k in large["keys"] if k.startswith("glusterfs") and "rate" in k)]
    assert gluster["unit"] == "B/s" and gluster["n"] == 2
    assert gluster["value"] == pytest.approx(sorted(v for (b, t, m, h, _), v in records.items()
                                                    if (b, t, m, h) == ("glusterfs", "write", "throughput", "all"))[0]
                                             / 2 + sorted(v for (b, t, m, h, _), v in records.items()
                                                          if (b, t, m, h) == ("glusterfs", "write", "throughput",
                                                                              "all"))[1] / 2)
    verdict = row[large["keys"][-1]]
    assert verdict["against"] == "GlusterFS" and verdict["of"] == "CephFS" and "text" in verdict
    assert gluster["backend"] == "glusterfs" and gluster["metric"] == "throughput"  # (whose figure, of what)
    # every verdict's 'times' names the quicker one as its text does, by as much
    judged = [v for t in doc["tables"] for r in t["rows"] for v in r.values()
              if isinstance(v, dict) and "against" in v and v["faster"] is not None]
    assert len(judged) >= 2
    for v in judged:
        assert v["times"]["quicker"] == v["faster"] and v["times"]["value"] >= 1
        assert v["text"].startswith(f"{v['faster']} {v['times']['value']:.1f}× faster"), v
    busiest = table(doc, "resources")["rows"][0]
    assert busiest["busiest"]["share"]["unit"] == "%" and isinstance(busiest["busiest"]["share"]["value"], float)
    assert busiest["this_machine"]["cpu_busy"]["unit"] == "%"
    together = table(doc, "aggregates")["rows"]
    assert all(r["span"]["unit"] == "s" and r["moved"]["unit"] in ("B", "files") for r in together if r["span"])
