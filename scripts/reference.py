"""Writes the references generated from the code: docs/reference/config.md (every key of a
config, from the models of the core and of dfsbench's own plugins), docs/reference/commands.md
(every command, from the argument parser), docs/reference/flags.md (every flag a figure can
carry), docs/examples.md (the example configs), and the
examples' JSON Schema, examples/dfsbench.schema.json (what `dfsbench schema` prints where only
dfsbench's own plugins are installed). Run it after changing an option or a command: the unit
tests (tests/unit/test_reference.py) fail while a file differs from what the code makes. With
--check, writes nothing and exits 1 where one differs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli import build_parser
from harness.commands.reference import commands_reference, config_reference, examples_page, flags_page
from harness.execution.config_schema import config_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "reference"


def pages() -> dict[Path, str]:
    """Each generated file and what the code makes of it; the examples' JSON Schema (their
    first line names it) among them."""
    built = config_schema(own_only=True)  # (dfsbench's own plugins: not what else this machine has)
    schema, _ = built
    examples = [(p.name, p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    return {DOCS / "config.md": config_reference(built=built), DOCS / "commands.md": commands_reference(build_parser()),
            ROOT / "docs" / "examples.md": examples_page(examples), DOCS / "flags.md": flags_page(),
            ROOT / "examples" / "dfsbench.schema.json": json.dumps(schema, indent=1, sort_keys=True) + "\n"}


def main(argv: list[str]) -> int:
    written = pages()
    if "--check" in argv:
        stale = [path for path, text in written.items() if not path.exists() or path.read_text() != text]
        for path in stale:
            print(f"{path.name} is not what the code makes: run scripts/reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {', '.join(str(p.relative_to(ROOT)) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
