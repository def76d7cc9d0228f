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


# ---------------------------------------------------------------- a URL's query string and fragment (issue 37)


@pytest.mark.parametrize("text, clean", [
    ("cannot reach the model server at http://127.0.0.1:9/v1?api_key=sk-x: Connection error.",
     f"cannot reach the model server at http://127.0.0.1:9/v1?api_key={MASK}: Connection error."),
    ("https://h/v1?key=a&mode=b;token=c#frag", f"https://h/v1?key={MASK}&mode={MASK};token={MASK}#{MASK}"),
    ("postgresql://bob:pw@db/mem?sslmode=require", f"postgresql://{MASK}@db/mem?sslmode={MASK}"),
    ("http://h/x?sk-bare-token.", f"http://h/x?{MASK}."),
    ("http://h/path#", "http://h/path#"),
    ("no URL? a # sign, a=b&c=d", "no URL? a # sign, a=b&c=d"),
])
def test_url_query_values_and_fragments(text: str, clean: str) -> None:
    assert redact(text) == clean


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=30)  # prose around the URL: no URL, no "="
# Values as a query string carries them; "." and the like at a URL's end are taken for the sentence's.
values = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_%+/", min_size=1,
                 max_size=40)


@given(words, st.sampled_from(["http", "https", "postgresql", "milvus"]),
       st.lists(st.tuples(names, values), max_size=4), st.one_of(st.none(), values), words,
       st.sampled_from(["", ".", ":", ")", ","]))
def test_a_url_keeps_no_query_value_nor_fragment(before: str, scheme: str, params: list[tuple[str, str]],
                                                 fragment: str | None, after: str, end: str) -> None:
    base = f"{scheme}://host.example:8080/v1/path"
    query = "?" + "&".join(f"{k}={v}" for k, v in params) if params else ""
    text = f"{before} {base}{query}{'#' + fragment if fragment is not None else ''}{end} {after}"
    out = redact(text)
    assert out.startswith(f"{before} {base}") and out.endswith(f"{end} {after}")  # what is no secret stays
    for k, v in params:
        assert f"{k}={v}" not in out and f"{k}={MASK}" in out
    if fragment is not None:
        assert f"#{fragment}" not in out and f"#{MASK}" in out
    assert redact(out) == out


def test_the_command_line_never_prints_a_url_secret(cli, data_dir) -> None:
    """The issue's repro: a key in the model server's query string, the server down; and an embedder's."""
    secret = "sk-query-secret-0123456789"
    transcript = data_dir.parent / "chat.md"
    transcript.write_text("user: I prefer tea\nassistant: noted\n", encoding="utf-8")
    url = f"http://127.0.0.1:9/v1?api_key={secret}#{secret}"
    r = cli("extract", str(transcript), env={"MNEMON_LLM_BASE_URL": url})
    assert (r.code, r.err) == (
        1, f"Error: cannot reach the model server at http://127.0.0.1:9/v1?api_key={MASK}#{MASK}: Connection error.\n")
    assert cli("remember", "tea or coffee").code == 0
    env = {"MNEMON_EMBEDDER": "openai", "MNEMON_EMBED_ENDPOINT": f"http://127.0.0.1:9/v1?key={secret}"}
    for args in (["embed", "--all"], ["recall", "tea"]):
        r = cli(*args, env=env)
        assert secret not in r.out + r.err and r.err
