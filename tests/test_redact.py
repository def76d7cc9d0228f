"""`mnemon_core.redact`: the one scrubber of the embedders and the LLM path (issue 13, item 2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemon_core.redact import MASK, MIN_SECRET_CHARS, redact

KEY = "sk-proj-0123456789abcdef"
# What API keys are made of (no "*", so a mask can never spell one).
keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
               min_size=MIN_SECRET_CHARS, max_size=60)


@pytest.mark.parametrize("text, clean", [
    (f"Incorrect API key provided: {KEY}.", f"Incorrect API key provided: {MASK}."),
    (f'{{"error": {{"message": "you sent Bearer {KEY}"}}}}', f'{{"error": {{"message": "you sent Bearer {MASK}"}}}}'),
    ("Authorization: Bearer other-token-we-never-sent", f"Authorization: Bearer {MASK}"),
    ("authorization=abc123, next", f"authorization={MASK}, next"),
    ('{"Authorization": "Basic dXNlcjpwYXNz"}', f'{{"Authorization": "Basic {MASK}"}}'),
    ("x-api-key: abc123", f"x-api-key: {MASK}"),
    ("cannot reach http://user:pass@host:8080/v1/embeddings", f"cannot reach http://{MASK}@host:8080/v1/embeddings"),
    ("a basic idea; the API key is missing; http://host/a@b", "a basic idea; the API key is missing; http://host/a@b"),
])
def test_examples(text: str, clean: str) -> None:
    assert redact(text, KEY) == clean


def test_a_short_key_is_not_replaced_everywhere() -> None:
    # Masking "k" would garble the message and show where the key's letters are; patterns still apply.
    assert redact("key k, Bearer k", "k") == f"key k, Bearer {MASK}"
    assert redact("no secret here", None, "") == "no secret here"


@given(st.text(), keys, st.text())
def test_a_known_key_never_survives(before: str, key: str, after: str) -> None:
    assert key not in redact(before + key + after + key, key)


@given(st.text(), keys, st.text(), st.sampled_from(["Bearer ", "Authorization: ", "authorization=", "x-api-key: "]))
def test_a_header_value_never_survives(before: str, value: str, after: str, header: str) -> None:
    text = f"{before} {header}{value} {after}"
    assert f"{header}{value}" not in redact(text)


@given(st.text(), st.lists(keys, max_size=3))
def test_redacting_twice_changes_nothing(text: str, secrets: list[str]) -> None:
    once = redact(text, *secrets)
    assert redact(once, *secrets) == once
