"""What makes the local lab come up sooner without changing what it is: a manager that loads
only the modules its release always runs."""

from __future__ import annotations

import configparser

import pytest

from backends.ceph import lab as ceph
from backends.ceph.lab import ALWAYS_ON_MGR_MODULES, CephLab
from harness.system.ledger import Ledger

ALWAYS_ON = ALWAYS_ON_MGR_MODULES["16"]


@pytest.fixture
def installed_modules(tmp_path, monkeypatch):
    """A manager module directory as Ceph 16's packages lay it out (files of their own)."""
    installed = tmp_path / "share-ceph-mgr"
    for name in (*ALWAYS_ON, "prometheus", "restful", "dashboard", "__pycache__"):
        (installed / name).mkdir(parents=True)
        (installed / name / "__init__.py").write_text(f"# {name}\n")
    for name in ("mgr_module.py", "mgr_util.py"):
        (installed / name).write_text("# shared by the modules\n")
    monkeypatch.setattr(ceph, "MGR_MODULE_PATH", installed)
    return installed


def test_the_lab_manager_loads_the_modules_always_on_and_what_they_import(installed_modules, tmp_path):
    lab = CephLab(tmp_path / "ceph", Ledger(tmp_path / "ledger.json"))
    (tmp_path / "ceph").mkdir()
    made = lab._mgr_modules("16.2.15")
    assert made is not None
    assert sorted(p.name for p in made.iterdir()) == sorted([*ALWAYS_ON, "mgr_module.py", "mgr_util.py"])
    assert all((made / name).resolve() == installed_modules / name for name in ALWAYS_ON)

    lab._write_conf(made)
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(lab.conf.read_text())
    assert conf["mgr"]["mgr_module_path"] == str(made)
    # nothing enabled beyond what is always on: a module enabled and not loadable is a health error
    assert conf["mon"]["mgr_initial_modules"] == ""


def test_a_release_or_a_layout_not_known_loads_every_module(installed_modules, tmp_path):
    lab = CephLab(tmp_path / "ceph", Ledger(tmp_path / "ledger.json"))
    (tmp_path / "ceph").mkdir()
    assert lab._mgr_modules("19.2.0") is None
    (installed_modules / "volumes" / "__init__.py").unlink()
    (installed_modules / "volumes").rmdir()
    assert lab._mgr_modules("16.2.15") is None
    lab._write_conf(None)
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(lab.conf.read_text())
    assert "mgr_module_path" not in conf["mgr"] and "mgr_initial_modules" not in conf["mon"]
