"""The docs that cannot drift from the code: every key of a config says what it is; the
generated references and the examples' JSON Schema are what the code makes now; every example
config, and every config block of the README and the docs, is checked by ``dfsbench check``
and by the JSON Schema ``dfsbench schema`` writes; that schema refuses what the config
refuses by its shape (an unknown key, an unknown plugin, a size that is none), and takes
what a config file writes (a size as 40KiB, a latency as 20ms, an order by its name)."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.commands.reference import config_reference, undescribed
from harness.execution.config_schema import config_schema
from harness.units import _LATENCY, _SIZE, LATENCY_PATTERN, SIZE_PATTERN
from tests.unit.inproc import dfsbench

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
# every ```yaml block of the README and the docs: a whole config
BLOCKS = [(path, i, m.group(1)) for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
          for i, m in enumerate(re.finditer(r"```yaml\n(.*?)```", path.read_text(), re.S))]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema, left_out = config_schema()
    assert not left_out, left_out
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_key_of_a_config_says_what_it_is():
    assert undescribed(own_only=True) == []


def test_a_misspelt_key_is_named_by_the_schema(validator):
    """Each entry's options are chosen by its name (if/then), so a validator names the key
    that is wrong, where an anyOf of the plugins would say only that the entry matches none."""
    for config, key, where in (
            ({"workloads": [{"name": "fio", "options": {"runtim_s": 3}}]}, "runtim_s", ["workloads", 0, "options"]),
            ({"backends": [{"name": "cephfs", "options": {"replica": 2}}]}, "replica", ["backends", 0, "options"]),
            ({"environment": {"kind": "docker", "options": {"ceph_osds": 3}}}, "ceph_osds", ["environment", "options"])):
        best = jsonschema.exceptions.best_match(validator.iter_errors(config))
        assert best.validator == "additionalProperties" and list(best.absolute_path) == where, (best.message, config)
        assert f"'{key}' was unexpected" in best.message, best.message


def test_a_plugins_words_reach_the_pages_as_text():
    """A description or a default is a stranger's text (a plugin's): on the page it is text,
    never markup, a table's cell or a code span of its own."""
    from harness.commands.reference import _cell, _code

    assert _cell("<script>x</script> | `y`\nz [a](b) *e*") == \
        "&lt;script&gt;x&lt;/script&gt; \\| 'y' z \\[a\\](b) \\*e\\*"
    assert _code("a`b|c\nd") == "`a'b\\|c d`"


def test_the_generated_references_are_what_the_code_makes():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import reference  # scripts/reference.py
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for path, text in reference.pages().items():
        assert path.exists() and path.read_text() == text, f"{path.name}: run scripts/reference.py"
    page = config_reference()
    for key in ("`repeat`", "`fault.after_s`", "### workload `smallfile`", "`file_size`", "### environment `docker`",
                "`client_links.NAME.rate`", "`clients[].host`", "### backend `rgw`"):
        assert key in page, key


def test_the_examples_are_there():
    names = {p.stem for p in EXAMPLES}
    assert {"first-comparison", "report-2014", "three-systems", "load-through-fault", "scaling-sweep",
            "erasure-coding", "existing-site", "like-a-bundle"} <= names, names
    for path in EXAMPLES:
        assert path.read_text().startswith("# yaml-language-server: $schema=dfsbench.schema.json\n"), path


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_each_example_passes_check_and_the_schema(path, validator, tmp_path, monkeypatch):
    key = tmp_path / "bench.key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    monkeypatch.setenv("C1_KEY", str(key))
    monkeypatch.setenv("C2_PASSWORD", "zq7!x-example")
    data = yaml.safe_load(path.read_text())
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(data)]
    assert not errors, errors
    checked = dfsbench("check", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("path, i, text", BLOCKS, ids=[f"{p.name}#{i}" for p, i, _ in BLOCKS])
def test_each_config_block_of_the_docs_passes_check_and_the_schema(path, i, text, validator, tmp_path, monkeypatch):
    key = tmp_path / "bench.key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    monkeypatch.setenv("C1_KEY", str(key))
    monkeypatch.setenv("C2_PASSWORD", "zq7!x-docs")
    for name in ("RGW_ACCESS", "RGW_SECRET", "WEED_ACCESS", "WEED_SECRET"):
        monkeypatch.setenv(name, "zq7x" + name.lower())
    data = yaml.safe_load(text)
    assert isinstance(data, dict), f"{path.name} block {i} is no config"
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(data)]
    assert not errors, (path.name, i, errors)
    config = tmp_path / "block.yaml"
    config.write_text(yaml.safe_dump(data))
    checked = dfsbench("check", str(config))
    assert checked.returncode == 0, (path.name, i, checked.stdout + checked.stderr)


@pytest.mark.parametrize("config, where", [
    ({"repeats": 2}, "repeats"),                                                    # a key no config has
    ({"backends": ["cephfss"]}, "cephfss"),                                         # a plugin not installed
    ({"backends": [{"name": "cephfs", "options": {"replica": 2}}]}, "replica"),     # another backend's key
    ({"workloads": [{"name": "smallfile", "options": {"file_size": "40 parsecs"}}]}, "40 parsecs"),
    ({"workloads": [{"name": "largefile", "variant": "x"}]}, "variant"),            # a workload has none
    ({"workloads": [{"name": "fio", "fault": {"action": "explode", "after_s": 1}}]}, "fault.action"),
    ({"environment": {"kind": "docker", "options": {"ceph_osds": 3}}}, "ceph_osds"),  # the local lab's key
    ({"slo": {"p99": "fast"}}, "fast"),
    ({"order": "random"}, "random"),
])
def test_the_schema_refuses_what_check_refuses_by_its_shape(config, where, validator, tmp_path):
    assert list(validator.iter_errors(config)), f"the schema took {config}"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    checked = dfsbench("check", str(path))
    assert checked.returncode == 2 and where in checked.stderr, checked.stderr


def test_the_schema_takes_what_a_config_file_writes(validator):
    config = {"environment": "local", "order": "listed", "slo": {"p99": "20ms", "p50": 0.005},
              "workloads": [{"name": "smallfile", "options": {"file_size": "40KiB", "files": [64]}},
                            {"name": "fio", "options": {"profiles": [{"name": "a", "rw": "read", "bs": "4k"}]}},
                            {"name": "largefile", "options": {"sizes": [1 << 20, "1 GiB"]}}, "iozone"],
              "backends": ["cephfs", {"name": "glusterfs", "variant": "r2", "options": {"replica": 2}}]}
    assert not list(validator.iter_errors(config))


@given(st.text(alphabet=" 0123456789.kKmMgGtTpPiIbBsSuµx\n", max_size=12))
def test_the_schemas_patterns_are_the_parsers(text):
    """A size or a latency the schema's pattern takes (searched for, as a JSON Schema validator
    does) is one the parser reads, and the other way round."""
    assert (re.search(SIZE_PATTERN, text) is not None) == (_SIZE.fullmatch(text) is not None), repr(text)
    latency = _LATENCY.fullmatch(text.replace("µs", "us"))
    assert (re.search(LATENCY_PATTERN, text) is not None) == (latency is not None), repr(text)


def test_dfsbench_schema_prints_it_and_writes_it(tmp_path):
    printed = dfsbench("schema")
    assert printed.returncode == 0, printed.stderr
    schema = json.loads(printed.stdout)
    assert schema["$schema"].endswith("2020-12/schema") and "workloads" in schema["properties"]
    out = tmp_path / "dfsbench.schema.json"
    written = dfsbench("schema", "-o", str(out))
    assert written.returncode == 0 and json.loads(out.read_text()) == schema
    assert "yaml-language-server" in written.stderr
    page = dfsbench("schema", "--markdown")
    assert page.returncode == 0 and page.stdout == config_reference(), page.stderr


def test_the_benchmarks_page_names_every_bench():
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert "PLACEHOLDER" not in page and "TODO" not in page
    shared = {"fresh_clone.py", "options.py", "s3lab.py"}  # (what the benches share: no bench of their own)
    missing = [p.name for p in sorted((ROOT / "bench").glob("*.py")) if p.name not in shared and f"`{p.name}" not in page]
    assert not missing, f"docs/benchmarks.md names no {missing}"


def test_the_readmes_first_config_is_the_example_file():
    """The README shows examples/first-comparison.yaml without its comments: the same config."""
    readme = (ROOT / "README.md").read_text()
    shown = next(text for path, _, text in BLOCKS if path.name == "README.md")
    example = (ROOT / "examples" / "first-comparison.yaml").read_text()
    assert "examples/first-comparison.yaml" in readme
    assert yaml.safe_load(shown) == yaml.safe_load(example)
    assert len(readme.splitlines()) <= 150


def test_the_plugin_pages_skeleton_meets_the_contract(tmp_path):
    """The backend, workload and environment of docs/plugins.md load as the registry loads a
    plugin; the workload measures a cell of the backend's target; the lab comes up, says so,
    and goes leaving nothing."""
    from harness.api import registry
    from harness.api.target import Target

    page = (ROOT / "docs" / "plugins.md").read_text()
    code = next(m.group(1) for m in re.finditer(r"```python\n(.*?)```", page, re.S) if "class Scratch(Backend)" in m.group(1))
    plugin = types.ModuleType("my_plugin")  # (as an installed plugin's module is: imported, in sys.modules)
    sys.modules["my_plugin"] = plugin
    try:
        exec(compile(code, "docs/plugins.md", "exec", dont_inherit=True), plugin.__dict__)
    finally:
        del sys.modules["my_plugin"]
    module = plugin.__dict__
    assert registry._contract("backend", "scratch", module["Scratch"]) == []
    assert registry._contract("workload", "listing", module["Listing"]) == []
    assert registry._contract("environment", "shelf", module["ShelfLab"]) == []
    backend = module["Scratch"](module["ScratchOptions"](), "default")
    workload = module["Listing"](module["ListingOptions"].model_validate(module["Listing"].defaults("quick")))
    (tmp_path / "there").mkdir()
    target = Target("path", tmp_path / "there", backend.name, backend.variant, {"system": "scratch"})
    records = [m for cell in workload.cells() for m in workload.run(target, cell, tmp_path, tmp_path)]
    assert len(records) == 1 and records[0].value > 0 and records[0].params == {"entries": 100}
    lab = module["ShelfLab"](module["ShelfOptions"](lab_dir=tmp_path / "lab"))
    cluster = lab.start({"shelf"})
    assert lab.status().up and lab.status().services[0].healthy, lab.status()
    assert cluster.services["shelf"].directory == str(tmp_path / "lab" / "shelf")
    assert lab.stop() == [] and not lab.status().up and not (tmp_path / "lab").exists()
