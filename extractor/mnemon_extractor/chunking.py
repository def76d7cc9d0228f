"""Cutting conversations into chunks the model can read: a token budget per chunk, with overlap.

Tokens are estimated without a tokenizer (none ships with the base install, and servers differ): one token
per CJK character, one per `CHARS_PER_TOKEN` other characters, which errs on the high side for English and
code. Pass `count_tokens=` to use a real tokenizer. Chunks never cross a conversation; a message longer than
the budget is split on paragraph, then line, then character boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .readers import Conversation, Message

DEFAULT_CHUNK_TOKENS = 1200  # transcript tokens per chunk: its answer (extract.answer_tokens) fits MAX_ANSWER_TOKENS
DEFAULT_OVERLAP_TOKENS = 200  # trailing messages repeated at the start of the next chunk
CHARS_PER_TOKEN = 4
MIN_SPLIT_TOKENS = 40  # a chunk is not cut into halves smaller than this (one or two short messages)

TokenCounter = Callable[[str], int]


def _is_wide(ch: str) -> bool:
    o = ord(ch)
    return (
        0x2E80 <= o <= 0x9FFF  # CJK radicals, kana, Han
        or 0xAC00 <= o <= 0xD7AF  # Hangul syllables
        or 0xF900 <= o <= 0xFAFF
        or 0xFF00 <= o <= 0xFFEF  # full-width forms
        or 0x20000 <= o <= 0x2FA1F
    )


def estimate_tokens(text: str) -> int:
    if text.isascii():
        return math.ceil(len(text) / CHARS_PER_TOKEN)
    wide = sum(1 for ch in text if _is_wide(ch))
    return wide + math.ceil((len(text) - wide) / CHARS_PER_TOKEN)


@dataclass
class Chunk:
    index: int
    conversation: str
    messages: list[Message]
    first: int  # 1-based number of the first message within its conversation
    last: int
    tokens: int
    numbers: list[int] = field(default_factory=list)  # each message's number (a split message repeats it)

    @property
    def span(self) -> str:
        return f"{self.first}-{self.last}" if self.first != self.last else str(self.first)

    def text(self) -> str:
        """The transcript as the model reads it: one block per message, time and role first."""
        return "\n\n".join(format_message(m) for m in self.messages)


def format_message(m: Message) -> str:
    head = f"[{m.timestamp}] {m.role}:" if m.timestamp else f"{m.role}:"
    return f"{head}\n{m.content}"


def split_text(text: str, budget: int, count: TokenCounter) -> list[str]:
    """Pieces of `text` of at most `budget` tokens each, cut at paragraph, line, then character bounds."""
    if count(text) <= budget:
        return [text]
    for sep in ("\n\n", "\n", ". ", " "):
        parts = text.split(sep)
        if len(parts) > 1:
            out: list[str] = []
            cur = ""
            for p in parts:
                cand = p if not cur else cur + sep + p
                if count(cand) <= budget:
                    cur = cand
                    continue
                if cur:
                    out.append(cur)
                cur = p
            if cur:
                out.append(cur)
            if all(count(o) <= budget for o in out):
                return out
            return [piece for o in out for piece in split_text(o, budget, count)]
    # One unbroken run (a base64 blob, a long Han paragraph): cut by characters.
    size = max(1, budget * CHARS_PER_TOKEN if text.isascii() else budget)
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    while any(count(p) > budget for p in pieces) and size > 1:
        size = max(1, size // 2)
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return pieces


def _pieces(conv: Conversation, budget: int, count: TokenCounter) -> list[tuple[int, Message]]:
    """(message number, message) with over-long messages split into numbered parts."""
    out: list[tuple[int, Message]] = []
    for n, m in enumerate(conv.messages, 1):
        head = count(format_message(Message(m.role, "", m.timestamp))) + count("(part 999/999) ")
        parts = split_text(m.content, max(1, budget - head), count)
        for k, part in enumerate(parts, 1):
            content = part if len(parts) == 1 else f"(part {k}/{len(parts)}) {part}"
            out.append((n, Message(m.role, content, m.timestamp)))
    return out


def chunk_conversations(
    conversations: Sequence[Conversation],
    *,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    count_tokens: TokenCounter | None = None,
) -> list[Chunk]:
    """Chunks of at most `max_tokens` (estimated) each, in order. Each chunk after the first of a
    conversation starts with the last messages of the one before, up to `overlap_tokens`."""
    if max_tokens < 1:
        raise ValueError(f"chunk size must be at least 1 token, got {max_tokens}")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))  # each chunk must bring something new
    count = count_tokens or estimate_tokens
    sep = count("\n\n")
    chunks: list[Chunk] = []
    for conv in conversations:
        items = _pieces(conv, max_tokens, count)
        cost = [count(format_message(m)) for _, m in items]
        start = 0
        while start < len(items):
            end, used = start, 0
            while end < len(items) and (end == start or used + sep + cost[end] <= max_tokens):
                used += cost[end] + (sep if end > start else 0)
                end += 1
            chunks.append(Chunk(
                index=len(chunks), conversation=conv.title, messages=[m for _, m in items[start:end]],
                first=items[start][0], last=items[end - 1][0], tokens=used,
                numbers=[n for n, _ in items[start:end]],
            ))
            if end >= len(items):
                break
            # Next start: back up over trailing messages that fit in the overlap, but always move forward.
            back, kept = end, 0
            while back - 1 > start and kept + cost[back - 1] <= overlap_tokens:
                back -= 1
                kept += cost[back]
            start = back
    return chunks


def split_chunk(chunk: Chunk, count_tokens: TokenCounter | None = None) -> list[Chunk]:
    """The chunk in two halves of about equal tokens, at a message boundary, or, for a single message, at a
    paragraph, line or word boundary; [] when it cannot be cut any further (under `MIN_SPLIT_TOKENS`)."""
    count = count_tokens or estimate_tokens
    if chunk.tokens < 2 * MIN_SPLIT_TOKENS:
        return []
    numbers = chunk.numbers or [chunk.first] * len(chunk.messages)
    items = list(zip(numbers, chunk.messages))
    if len(items) == 1:
        n, m = items[0]
        head = count(format_message(Message(m.role, "", m.timestamp)))
        pieces = split_text(m.content, max(1, (chunk.tokens - head) // 2 + 1), count)
        if len(pieces) < 2:
            return []
        half = len(pieces) // 2
        items = [(n, Message(m.role, " ".join(pieces[:half]), m.timestamp)),
                 (n, Message(m.role, " ".join(pieces[half:]), m.timestamp))]
    cost = [count(format_message(m)) for _, m in items]
    total, run, cut = sum(cost), 0, 1
    for i, c in enumerate(cost[:-1], 1):  # the cut that leaves the halves closest in size
        run += c
        if abs(total - 2 * run) < abs(total - 2 * sum(cost[:cut])):
            cut = i
    sep = count("\n\n")
    halves = (items[:cut], items[cut:])
    return [Chunk(index=chunk.index, conversation=chunk.conversation, messages=[m for _, m in part],
                  first=part[0][0], last=part[-1][0], numbers=[n for n, _ in part],
                  tokens=sum(count(format_message(m)) for _, m in part) + sep * (len(part) - 1))
            for part in halves]
