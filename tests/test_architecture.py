"""docs/architecture.md is the picture of the code: every module under `mnemon_core/` is named in it (by its
path, or by its file name in its folder's entry), so a module added without a place in the picture fails here."""

from __future__ import annotations

import re

from conftest import ROOT


def test_every_module_is_named_in_the_architecture() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "mnemon_core"
    unnamed = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel == "__init__.py" or "__pycache__" in rel:
            continue
        if path.name == "__init__.py":  # a folder's own module: the folder is named
            named = f"{path.parent.name}/" in doc
        else:
            named = rel in doc or re.search(rf"(?<![\w/.]){re.escape(path.name)}(?!\w)", doc) is not None
        if not named:
            unnamed.append(rel)
    assert unnamed == []
