"""The view of stored runs (harness.report.view): built from one request, never changed
after it is built, and built once per command."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.report import view as view_module
from harness.report.view import ViewRequest, build_view
from harness.results.catalogue import Catalogue

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"


def test_a_view_cannot_be_changed_after_it_is_built():
    view = build_view(Catalogue(Path("/nonexistent")), ViewRequest(["report-2014"]))
    assert view.tables and view.records and view.header and view.summary  # (something to change)
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.records = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.summary = ("another answer",)  # type: ignore[misc]
    for sequence in (view.ids, view.records, view.header, view.tables, view.curves, view.summary, view.costs):
        assert isinstance(sequence, tuple)
        with pytest.raises(AttributeError):
            sequence.append(None)  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        view.infos["another"] = view.infos["report-2014"]  # type: ignore[index]
    request = ViewRequest(["report-2014"])
    assert request.ids == ("report-2014",)  # (a list given is kept as a tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.apart = True  # type: ignore[misc]


def _imported(results: str, capsys) -> list[str]:
    from harness.cli import main

    ids = []
    for name in ("iozone-3.397-ceph-cached.txt", "iozone-3.397-ceph-cached-2.txt"):
        assert main(["import", "iozone", str(SEED / name), "--backend", "cephfs", "--results", results]) == 0
        ids.append(capsys.readouterr().out.strip().splitlines()[-1].removeprefix("run id: "))
    return ids


@pytest.mark.parametrize("options", [
    ["--baseline", "FIRST", "--fail-on", "throughput:-10%"],
    ["--baseline", "FIRST", "--fail-on", "throughput:-10%", "--apart"],
    ["--baseline", "FIRST", "--fail-on", "throughput:-10%", "--format", "json"],
    ["--baseline", "FIRST", "--fail-on", "throughput:-10%", "--format", "csv", "-o", "OUT"],
    ["--format", "csv", "--records"],
    ["--format", "csv", "--series"],
    [],
])
def test_compare_builds_its_view_once(tmp_path, capsys, monkeypatch, options):
    from harness.cli import main

    results = str(tmp_path / "results")
    first, second = _imported(results, capsys)
    built = []
    real = view_module.build_view

    def counted(*args, **kwargs):
        built.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(view_module, "build_view", counted)
    given = {"FIRST": first, "OUT": str(tmp_path / "tables")}
    code = main(["compare", second, *(given.get(o, o) for o in options), "--results", results])
    assert code in (0, 1), capsys.readouterr().err
    assert len(built) == 1, built
    if "--fail-on" in options:  # (the gate read the baseline from the one view: it compared cells)
        assert built[0].baseline == first
        said = capsys.readouterr()
        assert "cells compared with" in said.out + said.err
