"""The distribution a user installs (issue 26 §1): its name is one nobody else holds on PyPI (`mnemon` there is
an unrelated 2017 cache package), the command stays `mnemon` and the import `mnemon_core`, and every install
line of the README, the docs, the cookbook and the messages that name an extra installs this distribution."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DISTRIBUTION = "mnemon-core"


def test_the_distribution_is_mnemon_core_with_the_mnemon_command() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"mnemon": "mnemon_core.daemon.client:run"}
    wheel = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert wheel[0] == "mnemon_core"
    # An extra naming others names this distribution, not the stranger's.
    nested = [r for reqs in project["optional-dependencies"].values() for r in reqs if r.startswith("mnemon")]
    assert nested and all(r.startswith(f"{DISTRIBUTION}[") for r in nested)


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=~!; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_no_requirement_list_names_a_distribution_twice() -> None:
    project = PYPROJECT["project"]
    for label, reqs in [("dependencies", project["dependencies"]), *project["optional-dependencies"].items()]:
        names = [_name(r) for r in reqs]
        assert len(names) == len(set(names)), f"{label}: {sorted(n for n in names if names.count(n) > 1)}"


def _install_lines() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "cookbook").glob("*.py")),
             *sorted((ROOT / "mnemon_core").rglob("*.py")), *sorted((ROOT / "integrations").rglob("*.py")),
             *sorted((ROOT / "extractor").rglob("*.py"))]
    out = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if "pip install" in line or re.search(r"\bmnemon[-\w]*\[", line):
                out.append((str(Path(f).relative_to(ROOT)), line))
    return out


def test_every_install_line_names_mnemon_core() -> None:
    lines = _install_lines()
    assert len(lines) >= 20  # the README, docs/mcp.md, docs/postgres.md, six cookbook scripts, the messages
    for where, line in lines:
        for target in re.findall(r"""pip install ((?:[-\w.'"\[\],{}]+ ?)+)""", line):
            for word in target.split():
                word = word.strip("'\"")
                if word.startswith("mnemon") or word.startswith("["):
                    assert re.fullmatch(rf"{DISTRIBUTION}(\[[\w,{{}}]+\])?", word), f"{where}: {line.strip()}"
        for extra_of in re.findall(r"\b(mnemon[-\w]*)\[", line):
            assert extra_of == DISTRIBUTION, f"{where}: {line.strip()}"
