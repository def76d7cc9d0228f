"""Secrets out of messages: the one scrubber for every text that may carry what a server echoed back.

A provider that rejects a key often quotes it (`Incorrect API key provided: Bearer sk-…`), and that text becomes
an error message, a warning, a report field. `redact` takes out the keys we sent, any `Authorization` /
`Bearer` value, and of every URL its credentials (`https://user:pass@host`), its query-string values
(`?api_key=sk-…`) and its fragment, whichever path the message came from: the embedders
(`BaseEmbedder.redact`), the LLM extractor and judge (`ChatLLM.redact`), a database URL (`status`, store
errors), and every error and warning line the command line prints and the engine logs.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "MIN_SECRET_CHARS", "redact"]

MASK = "***"
# A known key shorter than this is not replaced wherever it occurs: it would garble every message, and the
# masks would spell out the key. Real keys are far longer; the patterns below apply to short ones too.
MIN_SECRET_CHARS = 8
_VALUE = r"[^\s\"',;)}\]]+"  # a header value as it appears in a message or a JSON body
_PATTERNS = (
    (re.compile(rf"(?i)\b(bearer\s+){_VALUE}"), rf"\1{MASK}"),
    (
        re.compile(rf"(?i)\b((?:proxy-)?authorization|(?:x-)?api-key)([\"']?\s*[:=]\s*[\"']?)"
                   rf"((?:basic|bearer|token|digest)\s+)?{_VALUE}"),
        rf"\1\2\3{MASK}",
    ),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@"), rf"\1{MASK}@"),
)
# A URL's query and fragment: a key in the query string (`?api_key=`, `?token=`) or a token after `#` is as
# secret as a password before the host. Punctuation that ends a sentence is not taken for part of the URL.
_URL_TAIL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#\"'<>`]*)([?#][^\s\"'<>`]*)")
_SENTENCE_END = ".,:;!?)]}"


def _mask_tail(m: re.Match[str]) -> str:
    """A URL's `?query#fragment` with every query value and the fragment masked, the parameter names kept."""
    tail = m.group(2)
    kept = tail.rstrip(_SENTENCE_END)
    query, hash_, fragment = kept.partition("#")
    if query:
        parts = re.split(r"([&;])", query[1:])
        query = "?" + "".join(p if p in ("", "&", ";") else p.partition("=")[0] + "=" + MASK if "=" in p else MASK
                              for p in parts)
    return m.group(1) + query + hash_ + (MASK if fragment else "") + tail[len(kept):]


def redact(text: str, *secrets: str | None) -> str:
    """`text` with each of `secrets`, every Authorization / Bearer value and URL credentials masked."""
    known = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS}
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return _URL_TAIL.sub(_mask_tail, text)
