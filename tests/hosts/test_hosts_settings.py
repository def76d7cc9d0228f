"""Host settings files: JSON with comments and trailing commas, mnemon's hooks added and taken out by splicing,
every other byte kept (mnemon_core/hosts/jsonc.py, settings.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_core.errors import ValidationError
from mnemon_core.hosts import settings as hooks_file
from mnemon_core.hosts.jsonc import Document, parse, write_atomic

OURS = {
    "SessionStart": [{"hooks": [{"type": "command", "command": "/p/.claude/hooks/mnemon/prime.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "/p/.claude/hooks/mnemon/stop.sh"}]}],
}

COMMENTED = """// user settings: hand-written
{
  /* the model */ "model": "opus",
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}]}, // mine
    ],
    "SessionStart": [
      {"matcher": "startup", "hooks": [
        {"type": "command", "command": "echo hi"},
        {"type": "command", "command": ".claude/hooks/mnemon/prime.sh"},
      ]},
    ],
  },
}
"""


def test_comments_and_trailing_commas_parse() -> None:
    value = parse(COMMENTED).plain()
    assert value["model"] == "opus"
    assert value["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"


def test_strip_takes_only_our_hook_out_of_a_mixed_group() -> None:
    doc = Document(COMMENTED)
    assert hooks_file.strip(doc, "grouped") == 1
    assert doc.text == COMMENTED.replace('        {"type": "command", "command": ".claude/hooks/mnemon/prime.sh"},\n', "")


def test_add_then_strip_gives_back_every_byte() -> None:
    doc = Document(COMMENTED)
    hooks_file.strip(doc, "grouped")
    before = doc.text
    hooks_file.add(doc, "grouped", OURS)
    added = doc.text
    assert hooks_file.ours_in(doc, "grouped") == 2
    assert "// mine" in added and "/* the model */" in added
    assert hooks_file.strip(doc, "grouped") == 2
    assert doc.text == before
    hooks_file.add(doc, "grouped", OURS)
    assert doc.text == added  # the same bytes each time


def test_names_that_merely_contain_mnemon_are_not_ours() -> None:
    text = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mnemonic-tool --mnemon"}]}]}})
    doc = Document(text)
    assert hooks_file.strip(doc, "grouped") == 0 and doc.text == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "settings.json: the top level must be an object"),
        ('{"hooks": []}', 'settings.json: "hooks" must be an object'),
        ('{"hooks": {"Stop": {}}}', 'settings.json: "hooks"."Stop" must be an array'),
        ('{"a": 1 "b": 2}', "settings.json: expected ',' or '}' at line 1 column 9"),
        ('{\n  "a": tru\n}', "settings.json: unexpected 't' at line 2 column 8"),
        ('{"a": 1} x', "settings.json: unexpected text after the document at line 1 column 10"),
        ("{/* open", "settings.json: unterminated /* comment at line 1 column 2"),
        ('{"a": "\x01"}', "settings.json: invalid control character at line 1 column 8"),
    ],
)
def test_a_file_that_is_not_settings_is_refused_with_where(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        hooks_file.add(Document(text, "settings.json"), "grouped", OURS)
    assert str(e.value) == message


_keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_keys.filter(lambda k: k != "hooks"), _values, max_size=4),
    st.sampled_from([None, 2, 4, "\t"]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["\n", "\r\n"]),
)
def test_any_settings_file_round_trips_byte_for_byte(value: dict, indent, foreign_hooks: bool, trailing: bool,
                                                     comments: bool, newline: str) -> None:
    if foreign_hooks:
        value = {**value, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if trailing:  # a comma after every last element that ends a line
        text = re.sub(r"([^\s,\[{])(\n\s*[}\]])", r"\1,\2", text)
    if comments:  # a comment at the end of every line that ends with a comma, and one on top
        text = "// settings\n" + text.replace(",\n", ", // note\n")
    text = text.replace("\n", newline)
    doc = Document(text)
    hooks_file.add(doc, "grouped", OURS)
    merged = parse(doc.text).plain()
    assert {k: v for k, v in merged.items() if k != "hooks"} == {k: v for k, v in value.items() if k != "hooks"}
    assert merged["hooks"]["SessionStart"] == OURS["SessionStart"]
    assert merged["hooks"]["Stop"][-1] == OURS["Stop"][0]
    assert hooks_file.strip(doc, "grouped") == 2
    assert doc.text == text


def test_write_atomic_keeps_mode_and_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}")
    os.chmod(real, 0o600)
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    write_atomic(link, '{"a": 1}\n')
    assert link.is_symlink() and real.read_text() == '{"a": 1}\n'
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["settings.json"]  # no temporary file left
