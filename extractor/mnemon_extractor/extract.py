"""Chat export → `memory_draft.json` (schema v1, spec 003), through an OpenAI-compatible model.

    draft = Extractor(model="gpt-4o-mini").extract("conversations.json")      # -> ImportDraft

Steps: read the export (`readers`), cut it into chunks by a token budget with overlap (`chunking`), ask the
model for each chunk with the spec's extraction prompt, validate every answer against the draft format (one
retry quoting the error; then the chunk is reported as failed), remap edge indices to the whole draft, merge
insights repeated across chunks, validate the whole draft once more. Nothing the model says is trusted.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mnemon_core.config import UNSET
from mnemon_core.draft import (
    DEFAULT_EDGE_WEIGHT,
    DEFAULT_IMPORTANCE,
    DraftEdge,
    ImportDraft,
    load_draft,
)
from mnemon_core.errors import ValidationError
from mnemon_core.progress import progress_bar
from mnemon_core.text import jaccard, token_set
from mnemon_core.timeutil import parse as parse_time
from mnemon_core.write.constants import MAX_ENTITIES, MAX_SESSION_BYTES, MAX_TAGS, NEGATION_PHRASES

from .chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS, Chunk, TokenCounter, chunk_conversations
from .errors import ExtractionError
from .llm import AnswerError, ChatLLM, LLMConfig
from .prompts import ExtractionAnswer, extraction_messages
from .readers import Conversation, Transcript, read_export

DEFAULT_SOURCE = "chat-export"
# Insights of earlier chunks shown to the model (so it neither repeats them nor loses cross-chunk edges).
CONTEXT_INSIGHTS = 20
# Two insights are one when their token sets overlap this much (same category, same negations).
MERGE_JACCARD = 0.8
# A created_at the model gives must lie within the chunk's time span, give or take this.
TIME_SLACK = timedelta(days=1)
# The timestamp of the prompt's own example: a model that copies it has not inferred anything.
EXAMPLE_TIME = "2024-01-15T09:30:00Z"
NEGATIONS = (*NEGATION_PHRASES, "not", "no", "never", "without")


# ---------------------------------------------------------------- report


class ChunkFailure(BaseModel):
    chunk: int = Field(description="0-based chunk number")
    conversation: str
    messages: str = Field(description="message numbers within the conversation, e.g. 12-30")
    attempts: int = Field(description="model answers received (a retry quotes the validation error)")
    error: str


class TokenCount(BaseModel):
    prompt: int = 0
    completion: int = 0
    total: int = 0


class ExtractionReport(BaseModel):
    """What happened: the summary `mnemon extract` prints. Failed chunks are listed, never dropped silently."""

    file: str
    format: str
    model: str
    mode: str = Field(description="structured, json or text: the output mode the server accepted")
    conversations: int
    messages: int
    chunks: int
    chunks_failed: int
    insights: int = Field(description="insights in the draft, after merging")
    merged: int = Field(description="insights folded into an earlier one (repeated across chunks)")
    edges: int
    failures: list[ChunkFailure]
    tokens: TokenCount


@dataclass
class Extraction:
    draft: ImportDraft | None
    report: ExtractionReport


# ---------------------------------------------------------------- merging


def normal_tags(tags: Sequence[str]) -> list[str]:
    """Lower-case, hyphen-joined, de-duplicated tags (the prompt asks for that form; this makes it so)."""
    out: list[str] = []
    for t in tags:
        if not isinstance(t, str):
            out.append(t)  # left for validation to reject
            continue
        n = re.sub(r"[\s_]+", "-", t.strip().lower()).strip("-")
        if n and n not in out:
            out.append(n)
    return out


def unique(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in items:
        if not isinstance(x, str):
            out.append(x)
            continue
        k = x.strip().casefold()
        if k and k not in seen:
            seen.add(k)
            out.append(x.strip())
    return out


def _key(content: str) -> str:
    return re.sub(r"\s+", " ", content.casefold()).strip().rstrip(".。!！")


def _negations(content: str) -> frozenset[str]:
    low = content.casefold()
    return frozenset(n for n in NEGATIONS if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", low))


@dataclass
class Collected:
    """The draft being built: insights (merged as they arrive) and edges between global indices."""

    insights: list[dict[str, Any]] = field(default_factory=list)
    edges: dict[tuple[int, int, str], dict[str, Any]] = field(default_factory=dict)
    merged: int = 0
    _keys: dict[str, int] = field(default_factory=dict)
    _tokens: list[frozenset[str]] = field(default_factory=list)
    _index: dict[str, set[int]] = field(default_factory=dict)

    def add(self, ins: dict[str, Any]) -> int:
        """Add an insight, or fold it into the one it repeats; returns its index in the draft."""
        same = self._find(ins)
        if same is None:
            i = len(self.insights)
            self.insights.append(dict(ins))
            self._remember(i, ins["content"])
            return i
        self.merged += 1
        old = self.insights[same]
        if len(ins["content"]) > len(old["content"]):  # the most complete statement wins
            old["content"] = ins["content"]
            self._remember(same, ins["content"])
        if old["category"] == "general":
            old["category"] = ins["category"]
        old["importance"] = max(old["importance"], ins["importance"])
        old["tags"] = normal_tags([*old["tags"], *ins["tags"]])[:MAX_TAGS]
        old["entities"] = unique([*old["entities"], *ins["entities"]])[:MAX_ENTITIES]
        times = [t for t in (old.get("created_at"), ins.get("created_at")) if t]
        old["created_at"] = min(times) if times else None
        return same

    def _find(self, ins: dict[str, Any]) -> int | None:
        key = _key(ins["content"])
        if key in self._keys:
            return self._keys[key]
        toks = token_set(ins["content"])
        if not toks:
            return None
        near = set().union(*(self._index.get(t, set()) for t in toks))
        neg = _negations(ins["content"])
        best, best_j = None, MERGE_JACCARD
        for i in sorted(near):
            j = jaccard(toks, self._tokens[i])
            old = self.insights[i]
            if j >= best_j and old["category"] == ins["category"] and _negations(old["content"]) == neg:
                best, best_j = i, j
        return best

    def _remember(self, i: int, content: str) -> None:
        self._keys[_key(content)] = i
        toks = token_set(content)
        if i < len(self._tokens):
            self._tokens[i] = self._tokens[i] | toks
        else:
            self._tokens.append(toks)
        for t in toks:
            self._index.setdefault(t, set()).add(i)

    def link(self, s: int, t: int, edge: DraftEdge) -> None:
        if s == t:  # two ends merged into one insight
            return
        key = (s, t, edge.edge_type.value)
        old = self.edges.get(key)
        if old is None or edge.weight > old["weight"]:
            self.edges[key] = {"source_index": s, "target_index": t, "edge_type": edge.edge_type.value,
                               "weight": edge.weight, **({"reason": edge.reason} if edge.reason else {})}

    def draft_dict(self, source: str | None) -> dict[str, Any]:
        insights = [{k: v for k, v in ins.items() if v is not None} for ins in self.insights]
        return {"schema_version": "1", **({"source": source} if source else {}), "insights": insights,
                "edges": list(self.edges.values())}


# ---------------------------------------------------------------- times


def chunk_times(chunk: Chunk) -> list[str]:
    return sorted(m.timestamp for m in chunk.messages if m.timestamp)


def settle_time(given: str | None, content: str, chunk: Chunk) -> str | None:
    """The insight's created_at: the model's, when it lies within the chunk's time span (± a day); otherwise
    the time of the message that says most of it; None when the chunk has no times and the model gave none
    (or copied the prompt's example)."""
    times = chunk_times(chunk)
    if given and given != EXAMPLE_TIME and not times:
        return given
    if given and times:
        t = parse_time(given)
        if parse_time(times[0]) - TIME_SLACK <= t <= parse_time(times[-1]) + TIME_SLACK:
            return given
    if not times:
        return None
    toks = token_set(content)
    best, best_score = None, -1.0
    for m in chunk.messages:
        if not m.timestamp:
            continue
        score = len(toks & token_set(m.content)) / (len(toks) or 1)
        if score > best_score:  # ties keep the earliest message
            best, best_score = m.timestamp, score
    return best


# ---------------------------------------------------------------- one chunk


@dataclass
class ChunkAnswer:
    insights: list[dict[str, Any]]
    edges: list[tuple[int, int, DraftEdge]]  # indices: ≥ 0 this chunk's insights, < 0 earlier ones (-1 = last)


def _rebase(message: str, offset: int) -> str:
    """`insights[N]` of the combined draft → `insights[N - offset]` of the model's answer."""
    return re.sub(r"insights\[(\d+)\]", lambda m: f"insights[{int(m.group(1)) - offset}]", message)


def with_defaults(data: Any) -> Any:
    """Optional draft keys a model left out (JSON mode has no schema to hold it to) get the draft's defaults."""
    if not isinstance(data, dict):
        return data
    data = {"insights": [], "edges": [], **data}
    if isinstance(data["insights"], list):
        data["insights"] = [
            {"category": "general", "importance": DEFAULT_IMPORTANCE, "tags": [], "entities": [],
             "created_at": None, **i} if isinstance(i, dict) else i
            for i in data["insights"]
        ]
    if isinstance(data["edges"], list):
        data["edges"] = [{"weight": DEFAULT_EDGE_WEIGHT, "reason": "", **e} if isinstance(e, dict) else e
                         for e in data["edges"]]
    return data


def check_answer(data: Any, earlier: list[dict[str, Any]]) -> ChunkAnswer:
    """The model's answer for a chunk, validated against every limit of the draft format (by
    `mnemon_core.draft`), with edges allowed to point back at the `earlier` insights by negative index."""
    ans = ExtractionAnswer.model_validate(with_defaults(data))
    n, k = len(ans.insights), len(earlier)
    insights = [
        {"content": i.content, "category": i.category.value, "importance": i.importance,
         "tags": normal_tags(i.tags), "entities": unique(i.entities), "created_at": i.created_at}
        for i in ans.insights
    ]
    problems = []
    for e_no, e in enumerate(ans.edges):
        for name in ("source_index", "target_index"):
            v = getattr(e, name)
            if not (-k <= v < n):
                where = f"this answer has {n} insights" + (f" and {k} earlier ones (-1 to -{k})" if k else "")
                problems.append(f"edges[{e_no}].{name}: index {v} out of range ({where})")
        if e.source_index == e.target_index:
            problems.append(f"edges[{e_no}].target_index: must differ from source_index ({e.source_index})")
        elif e.source_index < 0 and e.target_index < 0:
            problems.append(f"edges[{e_no}]: at least one end must be an insight of this answer")
    if problems:
        raise AnswerError("; ".join(problems[:10]))
    if not n:
        return ChunkAnswer([], [])
    # One draft of the earlier insights (oldest first) then the new ones, so negative index v sits at k + v
    # and new index v at k + v too: the draft's own validation checks every field.
    combined = {
        "schema_version": "1",
        "insights": [*earlier, *insights],
        "edges": [{**e.model_dump(), "source_index": k + e.source_index, "target_index": k + e.target_index}
                  for e in ans.edges],
    }
    try:
        draft = load_draft(combined)
    except ValidationError as e:
        raise AnswerError(_rebase(str(e), k)) from None
    edges = [(e.source_index, e.target_index, d) for e, d in zip(ans.edges, draft.edges)]
    return ChunkAnswer(insights, edges)


# ---------------------------------------------------------------- the extractor


class Extractor:
    """Chat export → validated `ImportDraft`. Model settings: arguments > `MNEMON_LLM_*` > defaults.

    `client` takes a ready `openai.OpenAI` (e.g. with your own `http_client`); `mode` forces an output mode
    (`structured`, `json`, `text`); `progress=True` draws a bar on a terminal's stderr."""

    def __init__(
        self,
        *,
        model: str | None = UNSET,
        base_url: str | None = UNSET,
        api_key: str | None = UNSET,
        client: Any = None,
        timeout: float | None = UNSET,
        max_retries: int | None = UNSET,
        mode: str | None = None,
        temperature: float | None = None,
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
        overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
        count_tokens: TokenCounter | None = None,
        source: str | None = DEFAULT_SOURCE,
        context_insights: int = CONTEXT_INSIGHTS,
        progress: bool = False,
    ) -> None:
        if isinstance(chunk_tokens, bool) or not isinstance(chunk_tokens, int) or chunk_tokens < 100:
            raise ValidationError(f"chunk size must be at least 100 tokens, got {chunk_tokens}", field="chunk_tokens")
        config = LLMConfig.resolve(model=model, base_url=base_url, api_key=api_key, timeout=timeout,
                                   max_retries=max_retries, temperature=temperature, mode=mode)
        self.llm = ChatLLM(config, client=client)
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self.count_tokens = count_tokens
        self.source = source
        self.context_insights = max(0, context_insights)
        self.progress = progress
        self.last_report: ExtractionReport | None = None

    def extract(self, path: str | Path) -> ImportDraft:
        """The draft of an export file. Raises `ExtractionError` (with `.report`) when no insight came out;
        `last_report` holds the report of the run either way."""
        result = self.run(path)
        if result.draft is None:
            r = result.report
            first = f" (first error: {r.failures[0].error})" if r.failures else ""
            what = (f"all {r.chunks} chunks failed" if r.chunks and r.chunks_failed == r.chunks
                    else "the model found nothing worth remembering")
            raise ExtractionError(f"no insights extracted from {r.file}: {what}{first}", report=r)
        return result.draft

    def run(self, path: str | Path) -> Extraction:
        """Draft and report of an export file; the draft is None when no insight came out."""
        return self.run_transcript(read_export(path))

    def run_conversations(self, conversations: Sequence[Conversation], *, name: str = "<conversations>") -> Extraction:
        return self.run_transcript(Transcript(name, "conversations", [c for c in conversations if c.messages]))

    def run_transcript(self, transcript: Transcript) -> Extraction:
        chunks = chunk_conversations(transcript.conversations, max_tokens=self.chunk_tokens,
                                     overlap_tokens=self.overlap_tokens, count_tokens=self.count_tokens)
        collected = Collected()
        failures: list[ChunkFailure] = []
        no_bar = contextlib.nullcontext(lambda n: None)
        with progress_bar(len(chunks), "extracting") if self.progress else no_bar as advance:
            for chunk in chunks:
                self._chunk(chunk, len(chunks), collected, failures)
                advance(1)
        draft = load_draft(collected.draft_dict(self.source)) if collected.insights else None
        u = self.llm.usage
        report = ExtractionReport(
            file=transcript.path, format=transcript.format, model=self.llm.model, mode=self.llm.mode,
            conversations=len(transcript.conversations), messages=transcript.message_count, chunks=len(chunks),
            chunks_failed=len(failures), insights=len(collected.insights), merged=collected.merged,
            edges=len(draft.edges) if draft else 0, failures=failures,
            tokens=TokenCount(prompt=u.prompt_tokens, completion=u.completion_tokens, total=u.total_tokens),
        )
        self.last_report = report
        return Extraction(draft, report)

    def _chunk(self, chunk: Chunk, total: int, collected: Collected, failures: list[ChunkFailure]) -> None:
        k = min(self.context_insights, len(collected.insights))
        earlier_ids = list(range(len(collected.insights) - k, len(collected.insights)))[::-1]  # -1 first
        earlier = [collected.insights[i] for i in earlier_ids]
        header = (f'Conversation "{chunk.conversation}", part {chunk.index + 1} of {total} '
                  f"(messages {chunk.span}).")
        messages = extraction_messages(chunk.text(), header, [e["content"] for e in earlier])
        # The combined draft lists earlier insights oldest first: index j ↔ negative index j - k.
        earlier_draft = [{kk: v for kk, v in e.items() if v is not None} for e in earlier[::-1]]
        answer = self.llm.ask(messages, ExtractionAnswer, lambda data: check_answer(data, earlier_draft))
        if answer.value is None:
            failures.append(ChunkFailure(chunk=chunk.index, conversation=chunk.conversation, messages=chunk.span,
                                         attempts=answer.attempts, error=answer.error or "unknown error"))
            return
        local: list[int] = []
        # The source conversation is the insights' session: import links consecutive ones of it, nothing else.
        session = chunk.conversation.encode(errors="ignore")[:MAX_SESSION_BYTES].decode(errors="ignore") or None
        for ins in answer.value.insights:
            ins = {**ins, "created_at": settle_time(ins["created_at"], ins["content"], chunk), "session": session}
            local.append(collected.add(ins))

        def glob(v: int) -> int:
            return local[v] if v >= 0 else earlier_ids[-v - 1]

        for s, t, edge in answer.value.edges:
            collected.link(glob(s), glob(t), edge)


def write_draft(draft: ImportDraft, path: str | Path) -> None:
    """The draft as `memory_draft.json`: 2-space JSON, UTF-8, defaults and empty optional keys left out."""
    data = draft.model_dump(mode="json", exclude_none=True)
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
