"""Hostile configs (hypothesis): a valid config with one key given a wrong type, an absurd
value, or a neighbour it does not know. Whatever is refused must be refused as bad input
(exit 2) naming the key; nothing may escape as a traceback."""

import collections
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import BadInput
from harness.execution.plan import build_plan

VALID = {
    "scale": "quick", "repeat": 2, "limits": {"network": "1Gbit", "client_ram": "2GiB"},
    "backends": [{"name": "glusterfs", "variant": "default", "options": {}},
                 {"name": "cephfs", "variant": "r2", "options": {"replicas": 2}}],
    "workloads": [{"name": "largefile", "options": {"sizes": ["64MiB"]}},
                  {"name": "smallfile", "options": {"files": [256], "threads": 4}},
                  {"name": "fio", "options": {"size": "256MiB", "runtime_s": 5}},
                  {"name": "iozone", "options": {"file_sizes": ["16MiB"], "modes": ["direct"]}}],
}
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["../../etc/passwd", "/dev/sda", "-1", "1e309", "NaN", "0",
                                           "99999999EiB", "1Gbit", "${NOT_SET}", "file:/nonexistent"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
def paths(node, prefix=()):
    """Every key path of the config, and where a new key could go."""
    if isinstance(node, dict):
        yield prefix, "new"
        for k, v in node.items():
            yield (*prefix, k), "set"
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield (*prefix, i), "set"
            yield from paths(v, (*prefix, i))


@st.composite
def hostile(draw):
    config = copy.deepcopy(VALID)
    path, how = draw(st.sampled_from(list(paths(config))))
    node = config
    for key in path[:-1] if how == "set" else path:
        node = node[key]
    value = draw(HOSTILE)
    if how == "set":
        node[path[-1]] = value
        return config, path[-1]
    key = draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in node))
    node[key] = value
    return config, key


def test_hostile_configs_are_refused_naming_the_key():
    seen: collections.Counter = collections.Counter()

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hostile())
    def refused_naming_the_key(case):
        config, key = case
        try:
            build_plan(config)
            seen["accepted"] += 1
        except BadInput as exc:
            seen["rejected"] += 1
            text = str(exc)
            assert str(key) in text or (isinstance(key, int) and f"[{key}]" in text), \
                f"refused without naming {key!r}: {text}"

    refused_naming_the_key()
    # the property held over configs both refused and accepted: a strategy that only made
    # valid configs (or only broken ones) would check nothing of the naming
    assert seen["rejected"] >= 100 and seen["accepted"] >= 10, seen
    print(f"\nhostile configs: {sum(seen.values())}, rejected with exit 2 naming the key: {seen['rejected']}")


@pytest.mark.parametrize("bad", ["1e309", "-5MiB", "0", "NaN", "99999999999EiB"])
def test_absurd_sizes_are_refused(bad):
    config = copy.deepcopy(VALID)
    config["workloads"][0]["options"]["sizes"] = [bad]
    with pytest.raises(BadInput, match=r"workloads\[0\]\.options\.sizes"):
        build_plan(config)
