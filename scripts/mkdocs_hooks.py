"""MkDocs hooks (mkdocs.yml): the README is the site's first page, so that the quick start is
written once; the example configs it links are pages' neighbours, as they are the README's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).resolve().parent
    # (the README links the docs as docs/PAGE.md, from the repository's top)
    readme = (root / "README.md").read_text().replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=readme))
    for example in sorted((root / "examples").iterdir()):
        if example.is_file():
            files.append(File.generated(config, f"examples/{example.name}", content=example.read_text()))
    return files
