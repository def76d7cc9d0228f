"""docs/architecture.md is the picture of the code: every module under `mnemon_core/` is named in it (by its
path, or by its file name in its folder's entry), so a module added without a place in the picture fails here."""

from __future__ import annotations

import ast
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



def test_no_face_reaches_into_the_stores_or_the_read_side() -> None:
    """DESIGN.md: faces → Memory → pipelines → stores. A face (faces/, the integrations) imports no module of
    store/, graph/ or recall/: the typed results come through `mnemon_core`'s surface."""
    inner = ("mnemon_core.store", "mnemon_core.graph", "mnemon_core.recall")
    faces = [*(ROOT / "mnemon_core" / "faces").glob("*.py"), *(ROOT / "integrations").rglob("*.py")]
    reaching = []
    for path in sorted(faces):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):  # in faces/, `..store` is mnemon_core.store
                base = "mnemon_core" if node.level == 2 else ""
                module = ".".join(filter(None, [base, node.module]))
                names = [module, *(f"{module}.{a.name}" for a in node.names)]  # `from .. import recall` too
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            reaching += [f"{path.relative_to(ROOT)}: {n}" for n in names
                         if any(n == m or n.startswith(f"{m}.") for m in inner)]
    assert reaching == []
