"""Chat export → `memory_draft.json` (schema v1, spec 003), through an OpenAI-compatible model.

    draft = Extractor(model="gpt-4o-mini").extract("conversations.json")      # -> ImportDraft

Steps: read the export (`readers`), cut it into chunks by a token budget with overlap (`chunking`), ask the
model for each chunk with the spec's extraction prompt (an answer of at most `answer_tokens(chunk)`), validate
every item of the answer against the draft format, drop what is not worth remembering (`worth`), remap edge
indices to the whole draft, merge insights repeated across chunks, validate the whole draft once more. Nothing
the model says is trusted.

Partial answers stay partial: a bad edge drops that edge, a bad insight that insight (and its edges); only an
answer with no usable insight at all is asked for again, quoting the errors (then the chunk is reported as
failed). An answer cut off at its token limit is not asked for again: the chunk is cut in halves, each asked
for alone (at most `MAX_SPLIT_DEPTH` times over); when the halves come back empty the chunk is a failure, not
"nothing worth remembering". Where it cannot be cut again, the cut-off answer is kept in part (`salvage`): the
insights and edges it wrote in full go through the same checks as a whole answer, the call is reported
`partial`, the item it stopped in is reported dropped (`cut-off`); with no complete insight the chunk fails.
Every dropped item is counted in the report, with the rule that dropped it.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic import ValidationError as PydanticValidationError

from mnemon_core.config import UNSET, make_private_dirs
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

from .chunking import (
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    TokenCounter,
    chunk_conversations,
    split_chunk,
)
from .errors import ExtractionError
from .llm import MAX_ANSWER_TOKENS, Answer, AnswerError, ChatLLM, LLMConfig, describe, without_thinking
from .prompts import EXAMPLE_TIMES, ExtractedEdge, ExtractedInsight, ExtractionAnswer, extraction_messages
from .readers import Conversation, Transcript, read_export
from .worth import chain, counts, fact_free, hubs, names_an_end

DEFAULT_SOURCE = "chat-export"
# Insights of earlier chunks shown to the model (so it neither repeats them nor loses cross-chunk edges).
CONTEXT_INSIGHTS = 20
# Two insights are one when their token sets overlap this much (same category, same negations).
MERGE_JACCARD = 0.8
# A created_at the model gives must lie within the chunk's time span, give or take this.
TIME_SLACK = timedelta(days=1)
NEGATIONS = (*NEGATION_PHRASES, "not", "no", "never", "without")
# The answer a chunk may get, in tokens: a base for the JSON around it, plus this many per transcript token, at
# most MAX_ANSWER_TOKENS. Measured: Qwen2.5-Coder 1.5B needed more than 512 + 2.26 per token for the 20-turn test
# chat (991 transcript tokens; cut at 2 per token), and a cut-off answer costs its whole length again.
ANSWER_TOKENS_BASE = 512
ANSWER_TOKENS_PER_TOKEN = 3.0
# A cut-off chunk is halved, and its halves once more: a model that never stops costs 3x its limit. Past that
# depth a cut-off answer is kept in part (`salvage`). Not 3: probed on the tessera export's messages 15-20, the
# 1.5B model wrote its 6 insights in full, then chained edges to its 1,334-token limit; salvage kept the Redis
# removal, its cause, the Go rule and the on-call week at no cost; a third split spent 1,537 more answer tokens
# (2 calls), and its half 18-20 was cut off again, rewriting earlier chunks' insights in a loop.
MAX_SPLIT_DEPTH = 2
SHOWN_CHARS = 200  # of a dropped insight's content in the report


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


class Dropped(BaseModel):
    """An item of a model's answer that did not reach the draft, and the rule that dropped it."""

    chunk: int
    kind: Literal["insight", "edge"]
    rule: str = Field(description="invalid, no-fact, fragment, question, example, out-of-range, end-dropped, unnamed, "
                      "chain, hub or cut-off (the item a cut-off answer stopped in)")
    item: str = Field(description="the insight's content (cut at 200 characters) or the edge's ends by index")
    detail: str


class ChunkStat(BaseModel):
    """One model call for one chunk (or a half of one): what it cost and what came of it."""

    chunk: int
    messages: str
    outcome: Literal["ok", "empty", "split", "partial", "failed"] = Field(
        description="partial: cut off at its limit where the chunk could not be split again; what it wrote in "
                    "full was kept")
    max_tokens: int = Field(description="the answer's limit, sized to the chunk")
    answer_tokens: int
    seconds: float
    tokens_per_s: float | None
    insights: int = Field(description="insights kept from this answer")


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
    partial: int = Field(description="calls cut off at their limit where the chunk could not be split again: the "
                         "insights they wrote in full were kept, the rest of the answer is lost")
    insights: int = Field(description="insights in the draft, after merging")
    merged: int = Field(description="insights folded into an earlier one (repeated across chunks)")
    edges: int
    failures: list[ChunkFailure]
    insights_dropped: int = Field(description="insights of the answers that did not reach the draft")
    edges_dropped: int
    dropped_by_rule: dict[str, int]
    dropped: list[Dropped]
    splits: int = Field(description="chunks cut in halves after an answer was cut off at its token limit")
    calls: list[ChunkStat]
    seconds: float = Field(description="wall time of the model calls")
    tokens_per_s: float | None = Field(description="answer tokens per second of generation")
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
    """The draft being built: insights (merged as they arrive) and edges between global indices. `shown`: the
    insights a whole answer gave, the ones later prompts list; a cut-off answer's are kept but not shown (the
    1.5B model, shown the Typst insights of a cut-off answer for messages 10-14, listed them again for 15-20
    until it was cut off, and lost the Redis removal it wrote without them)."""

    insights: list[dict[str, Any]] = field(default_factory=list)
    edges: dict[tuple[int, int, str], dict[str, Any]] = field(default_factory=dict)
    merged: int = 0
    shown: set[int] = field(default_factory=set)
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
    (or copied a time of the prompt's example)."""
    times = chunk_times(chunk)
    if given and given not in EXAMPLE_TIMES and not times:
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
    dropped: list[tuple[str, str, str, str]] = field(default_factory=list)  # kind, rule, item, detail
    given: int = 0  # insights the model gave, valid ones before the worth rules


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


def _insight(raw: Any, n: int) -> dict[str, Any]:
    """Insight `n` of an answer, in draft form; ValueError naming it and the field when it breaks a limit
    (checked by `mnemon_core.draft`, where the limits live)."""
    try:
        i = ExtractedInsight.model_validate(raw)
    except PydanticValidationError as e:
        why = describe(e)
        raise ValueError(f"insights[{n}]{'.' if ':' in why else ': '}{why}") from None
    ins = {"content": i.content, "category": i.category.value, "importance": i.importance,
           "tags": normal_tags(i.tags), "entities": unique(i.entities), "created_at": i.created_at}
    try:
        load_draft({"schema_version": "1", "insights": [{k: v for k, v in ins.items() if v is not None}]})
    except ValidationError as e:
        raise ValueError(str(e).replace("insights[0]", f"insights[{n}]")) from None
    return ins


def _edge(raw: Any, n: int) -> tuple[int, int, DraftEdge]:
    """Edge `n` of an answer: its two indices as given (negative: earlier insights) and its checked fields."""
    try:
        e = ExtractedEdge.model_validate(raw)
    except PydanticValidationError as err:
        why = describe(err)
        raise ValueError(f"edges[{n}]{'.' if ':' in why else ': '}{why}") from None
    try:  # its fields, by the draft's own rules, between two stand-in ends
        draft = load_draft({"schema_version": "1", "insights": [{"content": "a"}, {"content": "b"}],
                            "edges": [{**e.model_dump(), "source_index": 0, "target_index": 1}]})
    except ValidationError as err:
        raise ValueError(str(err).replace("edges[0]", f"edges[{n}]")) from None
    return e.source_index, e.target_index, draft.edges[0]


def check_answer(data: Any, earlier: list[dict[str, Any]]) -> ChunkAnswer:
    """The usable part of the model's answer for a chunk. Every insight is checked against every limit of the
    draft format, and edges may point back at the `earlier` insights (oldest first) by negative index. A bad
    item is dropped alone (an edge with it, when it was an end); then the worth rules drop insights that carry
    no fact and edges that say nothing (`worth`). Raises `AnswerError` (the answer is asked for again) only
    when the answer's shape is wrong or not one of its insights can be used."""
    data = with_defaults(data)
    if not isinstance(data, dict) or not isinstance(data["insights"], list) or not isinstance(data["edges"], list):
        raise AnswerError('the answer must be an object with an "insights" array and an "edges" array')
    k = len(earlier)
    dropped: list[tuple[str, str, str, str]] = []
    problems: list[str] = []
    valid: dict[int, dict[str, Any]] = {}
    for n, raw in enumerate(data["insights"]):
        try:
            valid[n] = _insight(raw, n)
        except ValueError as e:
            problems.append(str(e))
            shown = raw.get("content") if isinstance(raw, dict) and isinstance(raw.get("content"), str) else raw
            dropped.append(("insight", "invalid", str(shown)[:SHOWN_CHARS], str(e)))
    if problems and not valid:
        raise AnswerError("; ".join(problems[:10]))
    kept: dict[int, dict[str, Any]] = {}
    for n, ins in valid.items():
        if no_fact := fact_free(ins["content"]):
            dropped.append(("insight", no_fact[0], ins["content"][:SHOWN_CHARS], no_fact[1]))
        else:
            kept[n] = ins

    def content_of(v: int) -> str:
        end = earlier[k + v] if v < 0 else valid[v]
        return " ".join([end["content"], *end.get("entities", [])])

    total = len(data["insights"])
    edges: list[tuple[int, int, DraftEdge]] = []
    given: list[tuple[int, int]] = []  # every edge's ends as given, in range or not (a chain runs past the end)
    for e_no, raw in enumerate(data["edges"]):
        where = f"edges[{e_no}]"
        try:
            s_i, t_i, e = _edge(raw, e_no)
        except ValueError as err:
            dropped.append(("edge", "invalid", where, str(err)))
            continue
        given.append((s_i, t_i))
        item = f"{where}: {s_i} -> {t_i}"
        bad = [f"{where}.{name}: index {v} out of range (this answer has {total} insights"
               + (f" and {k} earlier ones (-1 to -{k}))" if k else ")")
               for name, v in (("source_index", s_i), ("target_index", t_i)) if not -k <= v < total]
        if s_i == t_i:
            bad.append(f"{where}.target_index: must differ from source_index ({s_i})")
        elif s_i < 0 and t_i < 0:
            bad.append(f"{where}: at least one end must be an insight of this answer")
        if bad:
            dropped.append(("edge", "out-of-range", item, "; ".join(bad)))
            continue
        gone = [v for v in (s_i, t_i) if v >= 0 and v not in kept]
        if gone:
            dropped.append(("edge", "end-dropped", item, f"{where}: insight {gone[0]} was dropped"))
            continue
        if not names_an_end(e.reason, content_of(s_i), content_of(t_i)):
            dropped.append(("edge", "unnamed", item, f"{where}: the reason names neither end: {e.reason or '(none)'}"))
            continue
        edges.append((s_i, t_i, e))
    nexts = chain(given)
    dropped += [("edge", "chain", f"{s_i} -> {t_i}", f"one of {len(nexts)} edges that each link an insight to the "
                 "one a fixed step further on") for s_i, t_i, _ in edges if (s_i, t_i) in nexts]
    edges = [x for x in edges if x[:2] not in nexts]
    # A hub too is judged on the edges as given: a star whose other rays were dropped for another reason is
    # still a star (Qwen2.5-Coder 1.5B linked one fact to 7 of 10 insights, 3 of the reasons naming neither end).
    for hub in sorted(hubs(given, total)):
        linked = len({t_i if s_i == hub else s_i for s_i, t_i in given if hub in (s_i, t_i)})
        dropped += [("edge", "hub", f"{s_i} -> {t_i}", f"insight {hub} is linked to {linked} others")
                    for s_i, t_i, _ in edges if hub in (s_i, t_i)]
        edges = [x for x in edges if hub not in x[:2]]
    order = sorted(kept)  # local index → position among the kept insights
    pos = {n: i for i, n in enumerate(order)}
    edges = [(pos.get(s_i, s_i), pos.get(t_i, t_i), e) for s_i, t_i, e in edges]  # negative ends stay
    return ChunkAnswer([kept[n] for n in order], edges, dropped, given=len(valid))


# ---------------------------------------------------------------- a cut-off answer

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")


@dataclass
class Salvage:
    """What a cut-off answer holds in full: `data`, its object with each array's complete items up to where the
    text stops; `stopped_in` the array ("insights", "edges") whose item the text stopped in, and `rest` that
    item as far as it came (both empty when it stopped elsewhere)."""

    data: dict[str, Any]
    stopped_in: str = ""
    rest: str = ""


def salvage(text: str) -> Salvage:
    """The complete part of a JSON answer object cut off at its token limit, read by the JSON decoder item by
    item: an array item counts once it is closed (an object, array or string) or followed by `,` or `]` (a
    number, `true`, … that might have gone on); an item, key or value the text stops in is left out whole."""
    text = without_thinking(text)
    data: dict[str, Any] = {}
    i = text.find("{") + 1
    if not i:
        return Salvage(data)

    def skip(at: int) -> int:
        return _SPACE.match(text, at).end()  # type: ignore[union-attr]

    while (i := skip(i)) < len(text) and text[i] != "}":
        try:
            key, i = _DECODER.raw_decode(text, i)
        except ValueError:
            break
        i = skip(i)
        if not isinstance(key, str) or text[i : i + 1] != ":":
            break
        i = skip(i + 1)
        if text[i : i + 1] != "[":  # not one of the answer's arrays: whole or not at all
            try:
                value, end = _DECODER.raw_decode(text, i)
            except ValueError:
                break
            end = skip(end)
            if text[end : end + 1] not in (",", "}"):
                break
            data[key], i = value, end + (text[end] == ",")
            continue
        items: list[Any] = []
        data[key] = items
        i += 1
        while (i := skip(i)) < len(text) and text[i] != "]":
            try:
                item, end = _DECODER.raw_decode(text, i)
            except ValueError:
                return Salvage(data, key, text[i:].strip())
            after = text[skip(end) : skip(end) + 1]
            if after not in (",", "]") and not isinstance(item, (dict, list, str)):
                return Salvage(data, key, text[i:].strip())
            items.append(item)
            i = skip(end) + (after == ",")
        if text[i : i + 1] != "]":
            break
        i = skip(i + 1)
        i += text[i : i + 1] == ","
    return Salvage(data)


# ---------------------------------------------------------------- the extractor


def answer_tokens(chunk_tokens: int) -> int:
    """The `max_tokens` of a chunk's answer: room for what a dense chat of that size holds, within a cap."""
    return min(MAX_ANSWER_TOKENS, ANSWER_TOKENS_BASE + math.ceil(ANSWER_TOKENS_PER_TOKEN * chunk_tokens))


@dataclass
class _Run:
    """What one run collects, chunk by chunk."""

    total: int
    advance: Any
    collected: Collected = field(default_factory=Collected)
    failures: list[ChunkFailure] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    calls: list[ChunkStat] = field(default_factory=list)
    splits: int = 0


class Extractor:
    """Chat export → validated `ImportDraft`. Model settings: arguments > `MNEMON_LLM_*` > defaults.

    `client` takes a ready `openai.OpenAI` (e.g. with your own `http_client`); `mode` forces an output mode
    (`structured`, `json`, `text`); `temperature` and `seed` (0 and 0: the same export gives the same draft;
    None: the server's own sampling); `progress=True` draws a bar on a terminal's stderr, with each answer's
    tokens/s."""

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
        temperature: float | None = UNSET,
        seed: int | None = UNSET,
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
                                   max_retries=max_retries, temperature=temperature, seed=seed, mode=mode)
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
            raise ExtractionError(f"no insights extracted from {r.file}: {nothing_because(r)}{first}", report=r)
        return result.draft

    def run(self, path: str | Path) -> Extraction:
        """Draft and report of an export file; the draft is None when no insight came out."""
        return self.run_transcript(read_export(path))

    def run_conversations(self, conversations: Sequence[Conversation], *, name: str = "<conversations>") -> Extraction:
        return self.run_transcript(Transcript(name, "conversations", [c for c in conversations if c.messages]))

    def run_transcript(self, transcript: Transcript) -> Extraction:
        chunks = chunk_conversations(transcript.conversations, max_tokens=self.chunk_tokens,
                                     overlap_tokens=self.overlap_tokens, count_tokens=self.count_tokens)
        no_bar = contextlib.nullcontext(lambda n, note=None: None)
        with progress_bar(len(chunks), "extracting") if self.progress else no_bar as advance:
            run = _Run(total=len(chunks), advance=advance)
            for chunk in chunks:
                self._chunk(chunk, run, 0)
                advance(1)
        collected = run.collected
        draft = load_draft(collected.draft_dict(self.source)) if collected.insights else None
        u = self.llm.usage
        report = ExtractionReport(
            file=transcript.path, format=transcript.format, model=self.llm.model, mode=self.llm.mode,
            conversations=len(transcript.conversations), messages=transcript.message_count, chunks=len(chunks),
            chunks_failed=len({f.chunk for f in run.failures}),
            partial=sum(c.outcome == "partial" for c in run.calls), insights=len(collected.insights),
            merged=collected.merged, edges=len(draft.edges) if draft else 0, failures=run.failures,
            insights_dropped=sum(d.kind == "insight" for d in run.dropped),
            edges_dropped=sum(d.kind == "edge" for d in run.dropped),
            dropped_by_rule=counts([d.rule for d in run.dropped]), dropped=run.dropped, splits=run.splits,
            calls=run.calls, seconds=round(u.seconds, 1),
            tokens_per_s=round(u.tokens_per_s, 1) if u.tokens_per_s else None,
            tokens=TokenCount(prompt=u.prompt_tokens, completion=u.completion_tokens, total=u.total_tokens),
        )
        self.last_report = report
        return Extraction(draft, report)

    def _chunk(self, chunk: Chunk, run: _Run, depth: int) -> int:
        """Extract one chunk (or a half of one) into `run`; returns how many insights the model gave for it."""
        collected = run.collected
        shown = sorted(collected.shown)
        earlier_ids = shown[len(shown) - min(self.context_insights, len(shown)):][::-1]  # -1 first
        earlier = [collected.insights[i] for i in earlier_ids]
        header = (f'Conversation "{chunk.conversation}", part {chunk.index + 1} of {run.total} '
                  f"(messages {chunk.span}).")
        messages = extraction_messages(chunk.text(), header, [e["content"] for e in earlier])
        # The answer's earlier insights, oldest first: negative index v sits at k + v.
        earlier_draft = [{kk: v for kk, v in e.items() if v is not None} for e in earlier[::-1]]
        limit = answer_tokens(chunk.tokens)
        label = f"chunk {chunk.index + 1}/{run.total}" + (f" (messages {chunk.span})" if depth else "")

        def progress(tokens: int, seconds: float) -> None:
            run.advance(0, f"{label}: {tokens} tokens, {tokens / max(seconds, 1e-9):.1f} tokens/s")

        answer = self.llm.ask(messages, ExtractionAnswer, lambda data: check_answer(data, earlier_draft),
                              max_tokens=limit, progress=progress)
        value, outcome, error = answer.value, "ok", answer.error or "unknown error"
        halves: list[Chunk] = []
        if value is None and (answer.cut_off or answer.too_long) and depth < MAX_SPLIT_DEPTH:
            halves = split_chunk(chunk, self.count_tokens)
        if value is None:
            outcome = "split" if halves else "failed"
        if outcome == "failed" and answer.cut_off:  # it cannot be asked for in parts: keep what it wrote in full
            value, error = self._salvage(chunk, run, answer, earlier_draft, limit)
            outcome = "partial" if value else "failed"
        self._stat(run, chunk, answer, limit, outcome, len(value.insights) if value else 0)
        if value is None:
            if outcome == "split":  # asked for too much at once: ask for each half instead
                run.splits += 1
                failed = len(run.failures)
                given = sum(self._chunk(h, run, depth + 1) for h in halves)
                if not given and len(run.failures) == failed:
                    self._fail(run, chunk, answer, f"{answer.error}, and its two halves came back empty")
                return given
            self._fail(run, chunk, answer, error)
            return 0
        if not value.given and answer.rejected:  # an empty retry is a model giving up, not an empty chat
            self._fail(run, chunk, answer, f"the answer was rejected ({answer.rejected[-1]}), and the retry "
                                           "came back empty")
            return 0
        self._dropped(run, chunk, value)
        local: list[int] = []
        # The source conversation is the insights' session: import links consecutive ones of it, nothing else.
        session = chunk.conversation.encode(errors="ignore")[:MAX_SESSION_BYTES].decode(errors="ignore") or None
        for ins in value.insights:
            ins = {**ins, "created_at": settle_time(ins["created_at"], ins["content"], chunk), "session": session}
            local.append(collected.add(ins))
            if outcome != "partial":
                collected.shown.add(local[-1])

        def glob(v: int) -> int:
            return local[v] if v >= 0 else earlier_ids[-v - 1]

        for s, t, edge in value.edges:
            collected.link(glob(s), glob(t), edge)
        return value.given

    @staticmethod
    def _salvage(chunk: Chunk, run: _Run, answer: Answer[Any], earlier: list[dict[str, Any]],
                 limit: int) -> tuple[ChunkAnswer | None, str]:
        """The part of a cut-off answer written in full, checked as a whole answer is (`check_answer`), and the
        item it stopped in reported dropped; (None, why) when it holds no insight worth keeping: the chunk
        fails, it is never "nothing worth remembering"."""
        part = salvage(answer.text)
        try:
            value = check_answer(part.data, earlier)
        except AnswerError as e:
            return None, f"{answer.error}, and what it wrote in full is unusable: {e}"
        if part.stopped_in and part.rest:
            kind = "insight" if part.stopped_in == "insights" else "edge"
            value.dropped.append((kind, "cut-off", part.rest[:SHOWN_CHARS],
                                  f"the answer stopped in this {kind} at its limit of {limit} tokens"))
        if value.insights:
            return value, ""
        Extractor._dropped(run, chunk, value)
        held = f"{value.given} complete insights, none worth keeping" if value.given else "no complete insight"
        return None, f"{answer.error}, and it holds {held}"

    @staticmethod
    def _dropped(run: _Run, chunk: Chunk, value: ChunkAnswer) -> None:
        """Record what the checks dropped of a chunk's answer, with the rule that dropped it."""
        run.dropped += [Dropped(chunk=chunk.index, kind=kind, rule=rule, item=item, detail=detail)  # type: ignore[arg-type]
                        for kind, rule, item, detail in value.dropped]

    @staticmethod
    def _stat(run: _Run, chunk: Chunk, answer: Answer[Any], limit: int, outcome: str, kept: int) -> None:
        u = answer.usage
        run.calls.append(ChunkStat(
            chunk=chunk.index, messages=chunk.span, outcome=outcome if outcome != "ok" or kept else "empty",  # type: ignore[arg-type]
            max_tokens=limit, answer_tokens=u.completion_tokens, seconds=round(u.seconds, 1),
            tokens_per_s=round(u.tokens_per_s, 1) if u.tokens_per_s else None, insights=kept))
        if u.tokens_per_s:
            run.advance(0, f"chunk {chunk.index + 1}/{run.total}: {u.completion_tokens} tokens, "
                           f"{u.tokens_per_s:.1f} tokens/s")

    @staticmethod
    def _fail(run: _Run, chunk: Chunk, answer: Answer[Any], error: str) -> None:
        run.failures.append(ChunkFailure(chunk=chunk.index, conversation=chunk.conversation, messages=chunk.span,
                                         attempts=answer.attempts, error=error))


def nothing_because(report: ExtractionReport) -> str:
    """Why a run gave no draft, in a few words."""
    if report.chunks and report.chunks_failed == report.chunks:
        return f"all {report.chunks} chunks failed"
    nothing = "the model found nothing worth remembering"
    if report.chunks_failed:
        nothing = f"{report.chunks_failed} of {report.chunks} chunks failed, and the others gave nothing worth remembering"
    rules = counts([d.rule for d in report.dropped if d.kind == "insight"])
    if rules:
        nothing += f" ({report.insights_dropped} dropped: " + ", ".join(f"{n} {r}" for r, n in rules.items()) + ")"
    return nothing


def write_draft(draft: ImportDraft, path: str | Path) -> None:
    """The draft as `memory_draft.json`: 2-space JSON, UTF-8, defaults and empty optional keys left out. Missing
    folders are made, this user's only (a draft holds what the conversations said), as a data dir's are."""
    data = draft.model_dump(mode="json", exclude_none=True)
    make_private_dirs(Path(path).absolute().parent)
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
