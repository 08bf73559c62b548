"""A command line the tool prints for a person to paste is quoted argument by argument
(shlex.join): pasted into a shell, it runs that command and no other."""

from __future__ import annotations

import io
import re
import shlex

import pytest

from environments.local import LocalEnvironment, LocalOptions
from harness.errors import ToolError
from harness.execution.plan import build_plan
from harness.execution.progress import Progress
from harness.execution.runner import execute
from harness.results.store import Store

CONFIG = {"backends": ["localdir"], "workloads": [{"name": "fio", "options": {"size": "16MiB"}}],
          "scale": "quick"}


def test_an_interrupted_run_says_how_to_resume_it_quoted(tmp_path):
    source = str(tmp_path / "my configs" / "a b;touch pwned.yaml")
    plan = build_plan(CONFIG, source=source)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    object.__setattr__(plan.environment, "up", interrupted)
    out = io.StringIO()
    store = Store(tmp_path / "results")
    with pytest.raises(KeyboardInterrupt):
        execute(plan, store, Progress(out))
    run_id = store.run_ids()[-1]
    line = re.search(r"to run what it did not finish: (.*) \(with the same options\)", out.getvalue())
    assert line, out.getvalue()
    assert shlex.split(line.group(1)) == ["dfsbench", "run", source, "--resume", run_id]


def test_a_failed_command_is_shown_as_it_would_be_typed():
    error = ToolError(["sh", "-c", "echo a; exit 3", "/mnt/with space"], 3, "", "")
    shown = error.message.splitlines()[0]
    assert shown == "command exited with code 3: sh -c 'echo a; exit 3' '/mnt/with space'"


def test_a_lab_down_hint_names_the_environment_quoted(tmp_path):
    class Odd(LocalEnvironment):
        name = "my lab"

    (tmp_path / "ledger.json").write_text("{}")
    hint = Odd(LocalOptions(lab_dir=tmp_path))._found_ledger().hint or ""
    command = re.search(r"run '(.*)' first", hint)
    assert command and shlex.split(command.group(1)) == ["dfsbench", "lab", "down", "--env", "my lab"], hint
