"""One contract for every face: the calls' input models (`mnemon_core.inputs`) give the CLI its flags'
defaults and help, the MCP server its schemas, LangChain its choices and limits, and `Memory` the same
defaults; the version is written once."""

from __future__ import annotations

import inspect
import tomllib

import pytest

import mnemon_core
from conftest import ROOT
from mnemon_core import inputs
from mnemon_core.faces.cli import build_parser
from mnemon_core.memory import Memory
from mnemon_core.models import Category, EdgeType, EntityMode, Intent

# (argv that selects the command, model, {field: (CLI dest, Memory method, Memory parameter or None)})
CASES = [
    (["remember", "x"], inputs.RememberInput, {
        "category": ("cat", "remember", "category"), "importance": ("imp", "remember", "importance"),
        "entity_mode": ("entity_mode", "remember", "entity_mode"), "source": ("source", "remember", "source"),
        "no_diff": ("no_diff", "remember", "no_diff"),
    }),
    (["recall", "x"], inputs.RecallInput, {
        "limit": ("limit", "recall", "limit"), "intent": ("intent", "recall", "intent"),
        "category": ("cat", "recall", "category"), "source": ("source", "recall", "source"),
        "basic": ("basic", "recall", "basic"), "max_tokens": ("max_tokens", "recall", "max_tokens"),
    }),
    (["recall", "x"], inputs.RecallShape, {
        "verbose": ("verbose", "recall", "verbose"), "brief": ("brief", "recall", "brief"),
        "excerpt_chars": ("excerpt_chars", "recall", "excerpt_chars"), "recipe": ("recipe", "recall", "recipe"),
    }),
    (["search", "x"], inputs.SearchInput, {"limit": ("limit", "search", "limit")}),
    (["related", "x"], inputs.RelatedInput, {
        "edge_type": ("edge", "related", "edge_type"), "depth": ("depth", "related", "depth"),
    }),
    (["link", "a", "b"], inputs.LinkInput, {
        "edge_type": ("type", "link", "type"), "weight": ("weight", "link", "weight"),
    }),
    (["log"], inputs.LogInput, {"limit": ("limit", "log", "limit")}),
]


@pytest.mark.parametrize(("argv", "model", "fields"), CASES, ids=lambda c: c[0] if isinstance(c, list) else None)
def test_cli_and_memory_defaults_are_the_models(argv, model, fields) -> None:
    args = build_parser().parse_args(argv)
    for field, (dest, method, param) in fields.items():
        want = model.model_fields[field].get_default(call_default_factory=True)
        assert getattr(args, dest) == want, (argv, field)
        assert inspect.signature(getattr(Memory, method)).parameters[param].default == want, (method, param)


def test_cli_help_comes_from_the_models(cli) -> None:
    out = " ".join(cli("remember", "--help").out.split())
    assert f"--imp IMP {inputs.RememberInput.model_fields['importance'].description} (default 3)" in out
    assert "kind of insight: " + "|".join(c.value for c in Category) + " (default general)" in out
    recall = " ".join(cli("recall", "--help").out.split())
    assert "--intent INTENT override the detected intent: WHY|WHEN|ENTITY|GENERAL" in recall
    assert "--excerpt-chars EXCERPT_CHARS characters of a brief excerpt (default 240)" in recall


def test_the_choices_are_the_engines_enums() -> None:
    from typing import get_args

    assert get_args(inputs.literal(Category)) == tuple(c.value for c in Category)
    schemas = {
        ("RememberInput", "category"): Category, ("RememberInput", "entity_mode"): EntityMode,
        ("RecallInput", "intent"): Intent, ("LinkInput", "edge_type"): EdgeType,
        ("RelatedInput", "edge_type"): EdgeType,
    }
    for (model, field), enum in schemas.items():
        prop = getattr(inputs, model).model_json_schema()["properties"][field]
        assert prop["enum"] == [e.value for e in enum], (model, field)


def test_the_version_is_written_once(cli) -> None:
    assert cli("--version").out.strip() == f"mnemon {mnemon_core.__version__}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "mnemon_core/__init__.py"
