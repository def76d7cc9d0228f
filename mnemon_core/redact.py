"""Secrets out of messages: the one scrubber for every text that may carry what a server echoed back.

A provider that rejects a key often quotes it (`Incorrect API key provided: Bearer sk-…`), and that text becomes
an error message, a warning, a report field. `redact` takes out the keys we sent, any `Authorization` /
`Bearer` value and the credentials of a URL (`https://user:pass@host`), whichever path the message came from:
the embedders (`BaseEmbedder.redact`) and the LLM extractor and judge (`ChatLLM.redact`).
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


def redact(text: str, *secrets: str | None) -> str:
    """`text` with each of `secrets`, every Authorization / Bearer value and URL credentials masked."""
    known = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS}
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
