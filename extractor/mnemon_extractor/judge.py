"""The link judge: closes the loop the spec leaves to the host LLM (spec 004 §4.5, reference §3.7).

`remember` returns `semantic_candidates` and `causal_candidates`; the judge shows them to a model and links the
ones it picks, with a type (`semantic`, `causal` with sub_type causes / enables / prevents, `supersedes`), a
weight and a reason:

    judge = LinkJudge(mem, model="gpt-4o-mini")
    result = judge.judge(mem.remember("Switched to Qdrant because Milvus was too slow to filter"))
    result.linked, result.declined, result.refused

One call judges the candidates of several insights (`BATCH_INSIGHTS`, at most `BATCH_PAIRS` pairs): each
memory is quoted once, each (new insight, candidate) pair has a ref, and the model lists only the pairs it
links; a pair answered once in a run (A as B's candidate, then B as A's) is not asked about again. A pair that
says the same thing about the same subject with another value is marked `possible_update`, so an update of an
older fact is judged `supersedes`; a link weaker than `MIN_WEIGHT` is declined. Sampling is temperature 0 with
a fixed seed by default: a dry run shows the links the real run makes.

A small model links by habit, so guards decline what says nothing, each with why in `declined`:
- a reason that names neither memory: empty, generic, or the prompt's own words written back (`names_a_memory`);
- a reason that is another memory's content written back, one offered in the same call (`worth.restates`);
- a `causal` or `semantic` reason that does not name both ends, each by a word the other end lacks
  (`worth.ends_named`: two invoicing facts are not linked by "invoice"; an end's content written back names
  only that end, and the decline says so);
- a reason that one answer gives for more than one offered pair (`reused_reasons`);
- a `supersedes` between two memories that are not about the same subject (`same_subject`: a person or a
  project in common is not enough);
- a memory that one answer makes the end of more than `HUB_LINKS` links of one kind (all of them).
The 1.5B model's 11 links on the Tessera draft (RESULTS.md, issue 27), replayed offline
(`benchmarks/judge_replay.py`), are all declined by these: each reason was a memory's content copied, or one
text given for up to 10 pairs; 20 reasons written for true links pass.

Memory content is untrusted: it reaches the model as quoted JSON, pairs are named by refs (`p1`, `p2`, …)
that the judge hands out, and every decision is checked here: only offered pairs, allowed types and sub-types,
weight within [0, 1]. A decision that fails is refused and reported, never linked. Links are made with
`Memory.link(..., created_by="judge")` and metadata `{reason, model, sub_type?}`: the audit of who linked what
and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field
from pydantic import ValidationError as PydanticValidationError

from mnemon_core.config import UNSET
from mnemon_core.errors import NotFoundError, ValidationError
from mnemon_core.models import CausalCandidate, EdgeType, RememberResult, SemanticCandidate
from mnemon_core.text import overlap_min_len, terms

from .llm import MAX_ANSWER_TOKENS, Answer, AnswerError, ChatLLM, LLMConfig, describe
from .prompts import CAUSAL_SUB_TYPES, JUDGE_SYSTEM, JudgeAnswer, JudgeDecision, judge_messages
from .worth import CHAT_WORDS, ends_named, names_an_end, restates

CREATED_BY = "judge"
MAX_REASON_CHARS = 1000  # a metadata value's limit on the MCP face (reference §8.3)
REF_KEYS = ("ref", "pair", "candidate", "candidate_id", "id")  # what a model in JSON mode may call the ref
MIN_WEIGHT = 0.5  # the prompt's "plausible"; weaker links are declined (a small model hands out 0.005)
BATCH_INSIGHTS = 8  # new insights per call
BATCH_PAIRS = 20  # pairs per call: the prompt stays ~2k tokens, the answer within its limit
# An answer's limit: a base for the JSON around it plus a decision's worth per pair (most are left out).
ANSWER_TOKENS_BASE = 64
ANSWER_TOKENS_PER_PAIR = 80
# Update words: a new memory that says one of these about a subject it shares with the candidate may replace it.
CHANGE_WORDS = frozenset(terms("""
    moved changed replaced switched instead longer now updated rescheduled postponed delayed dropped removed
    corrected actually new renamed cancelled canceled reverted
"""))
MONTHS = frozenset(terms("""january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday"""))
UPDATE_SHARED_WORDS = 2  # words of the subject both must share
UPDATE_OVERLAP = 0.6  # of the shorter one's subject words
# The words of the prompt's own rules and of the answer's field descriptions: a reason made only of them (the
# 1.5B model wrote the `supersedes` option back: "the same subject with a new value") names neither memory.
PROMPT_WORDS = frozenset(terms(" ".join([JUDGE_SYSTEM, *(f.description or "" for f in
                                                        JudgeDecision.model_fields.values())])))
# Links of one kind a memory may be an end of in one answer; past that it is a hub (linked by the memory, not by
# the pairs: the 1.5B model made a team introduction `supersedes` 6 others) and all of them are declined.
HUB_LINKS = {"supersedes": 2, "causal": 3}
# Link types whose reason must name both ends by a word of each (`ends_named`); a `supersedes` pair shares its
# subject by design (`same_subject`), so its reason names the subject.
BOTH_ENDS_TYPES = frozenset({"causal", "semantic"})
_DIGIT = re.compile(r"\d")


class JudgeLink(BaseModel):
    candidate_id: str
    source_id: str
    target_id: str
    edge_type: EdgeType
    sub_type: str | None = None
    weight: float
    reason: str


class JudgeDecline(BaseModel):
    candidate_id: str
    reason: str


class JudgeRefusal(BaseModel):
    ref: str = Field(description="what the model named (a ref, an id, or anything else)")
    error: str


class JudgeResult(BaseModel):
    """What the judge did for one insight. With `dry_run`, `linked` lists what it would have linked."""

    id: str
    model: str
    dry_run: bool
    candidates: int
    linked: list[JudgeLink] = Field(default_factory=list)
    declined: list[JudgeDecline] = Field(default_factory=list)
    refused: list[JudgeRefusal] = Field(default_factory=list)
    repeats: list[str] = Field(default_factory=list, description="candidates whose pair with this insight was "
                               "judged earlier in the run, as that insight's candidate (see its result)")
    error: str | None = Field(default=None, description="why no answer came back for this insight's pairs (or "
                              "some of them: the others are in linked, declined or refused)")
    tokens: int = Field(default=0, description="this insight's share of its calls' tokens, by pairs")


def nothing_judged(results: Sequence[JudgeResult]) -> str | None:
    """Why a run achieved nothing, or None: every insight that needed the model got no decision (a server that
    answered 500 or garbage each time). When some did, the others' `error` reports them one by one."""
    asked = [r for r in results if r.candidates]
    if not asked or not all(r.error for r in asked):
        return None
    what = "the insight" if len(asked) == 1 else f"any of the {len(asked)} insights"
    return f"judge: no decision for {what}: {asked[0].error}"


def check_decisions(data: Any) -> list[Any]:
    if not isinstance(data, dict) or not isinstance(data.get("decisions"), list):
        raise AnswerError('the answer must be an object with a "decisions" array')
    return data["decisions"]


def _subject(content: str) -> tuple[set[str], set[str]]:
    """(subject words, values) of a memory: values are numbers, dates, versions, months and weekdays."""
    words, values = set(), set()
    for t in terms(content):
        (values if _DIGIT.search(t) or t in MONTHS else words).add(t)
    return words - CHAT_WORDS, values


def same_subject(a: str, b: str) -> bool:
    """Whether two memories are about one subject: they share `UPDATE_SHARED_WORDS` subject words, and
    `UPDATE_OVERLAP` of the shorter one's (a person or a project named in both is not enough)."""
    aw, bw = _subject(a)[0], _subject(b)[0]
    return len(aw & bw) >= UPDATE_SHARED_WORDS and overlap_min_len(frozenset(aw), frozenset(bw)) >= UPDATE_OVERLAP


def possible_update(new: str, candidate: str) -> bool:
    """Whether `new` may replace `candidate`: the same subject (`same_subject`), and `new` gives another value
    or says that something changed."""
    if not same_subject(new, candidate):
        return False
    (nw, nv), (cw, cv) = _subject(new), _subject(candidate)
    return bool(nv - cv) or bool(nw & CHANGE_WORDS - cw)


def subject_words(text: str) -> set[str]:
    """The words the reason guards go by: a text's subject words (no values, no chat talk)."""
    return _subject(text)[0]


def _unprompted(text: str) -> set[str]:
    return _subject(text)[0] - PROMPT_WORDS


def names_a_memory(reason: str, new: str, candidate: str) -> bool:
    """Whether a link's reason names what it connects: a subject word of one of the two memories (not a value:
    a shared date is no relation) that is not a word of the prompt's rules or of any relation ("related",
    "caused"). Empty, generic and copied reasons name nothing."""
    return names_an_end(reason, new, candidate, _unprompted)


def reason_key(reason: str) -> str:
    """A reason as `reused_reasons` compares it: its terms (case, punctuation and stopwords aside)."""
    return " ".join(terms(reason.strip()[:MAX_REASON_CHARS]))


def offered_ref(named: str, offered: Mapping[str, str]) -> str | None:
    """The offered pair a decision names (`offered`: ref → candidate id): its ref, or the candidate's full id
    when that candidate is in one pair only; None for anything else."""
    ref = named.strip()
    if ref in offered:
        return ref
    same = [r for r, cid in offered.items() if cid == ref]
    return same[0] if len(same) == 1 else None


def reused_reasons(decisions: Sequence[Any], offered: Callable[[str], str | None]) -> dict[str, int]:
    """The reasons (by `reason_key`) that one answer gives for more than one offered pair it links → how many
    pairs: a reason that fits several pairs identifies none (the 1.5B model gave one to 10 pairs). `offered`
    names the offered pair a decision's ref stands for (None: none); a decision about no offered pair is
    refused on its own and makes no other pair's reason a reused one."""
    refs: dict[str, set[str]] = {}
    for raw in decisions:
        if isinstance(raw, dict) and raw.get("link") is True and isinstance(raw.get("reason"), str):
            named = next((raw[k] for k in REF_KEYS if isinstance(raw.get(k), str)), "")
            ref = offered(named)
            if ref is not None:
                refs.setdefault(reason_key(raw["reason"]), set()).add(ref)
    return {key: len(r) for key, r in refs.items() if key and len(r) > 1}


def unrelating(reason: str, edge_type: str, new: str, candidate: str,
               others: Sequence[tuple[str, str]]) -> str | None:
    """Why a reason that names a memory still does not relate the two ends, or None: it is the content of
    another memory offered in the same call (`others`: (id, content)) written back, or a `causal` or `semantic`
    reason does not name both ends, each by a word of its own (`ends_named`; an end's content written back
    names only that end, and is said so). A reason of an end's words alone may relate the two when that end
    states both (a decision with its cause), so an end restated is no reason to decline by itself."""
    for id_, content in others:
        if restates(reason, content, subject_words):
            return f"the reason is another memory's content ({id_}) written back, not what relates the two"
    if edge_type not in BOTH_ENDS_TYPES:
        return None
    named_new, named_cand = ends_named(reason, new, candidate, subject_words)
    if named_new and named_cand:
        return None
    for what, content in (("the new memory's", new), ("the candidate's", candidate)):
        if restates(reason, content, subject_words):
            return f"the reason is {what} content written back, not what relates the two"
    if named_new or named_cand:
        return f"the reason names only the {'new memory' if named_new else 'candidate'}, not the other end"
    return "the reason names neither end by a word the other lacks"


def hub_ends(links: Sequence[JudgeLink]) -> dict[tuple[str, str], int]:
    """The memories that are an end of more than `HUB_LINKS` links of one kind: (id, kind) → links."""
    ends: dict[tuple[str, str], set[str]] = {}
    for lk in links:
        kind = lk.edge_type.value
        if kind in HUB_LINKS:
            ends.setdefault((lk.source_id, kind), set()).add(lk.target_id)
            ends.setdefault((lk.target_id, kind), set()).add(lk.source_id)
    return {end: len(others) for end, others in ends.items() if len(others) > HUB_LINKS[end[1]]}


def _offer_order(entry: tuple[str, dict[str, Any]]) -> tuple[Any, ...]:
    """Semantic candidates first, nearest first; then causal ones by hops; then by content (the id only between
    two memories of the same content)."""
    cid, e = entry
    return ("similarity" not in e, -float(e.get("similarity") or 0.0), e.get("hops", 0), e["content"], cid)


def answer_tokens(pairs: int) -> int:
    return min(MAX_ANSWER_TOKENS, ANSWER_TOKENS_BASE + ANSWER_TOKENS_PER_PAIR * pairs)


@dataclass
class _Item:
    """One insight to judge: the new memory, its result, and its pairs still to ask about."""

    new: dict[str, Any]
    result: JudgeResult
    pairs: list[_Pair] = field(default_factory=list)


@dataclass
class _Pair:
    item: _Item
    cid: str
    shown: dict[str, Any]  # the candidate's hints, as the model sees them
    hint: str | None  # the engine's suggested causal sub_type

    @property
    def key(self) -> frozenset[str]:
        """The two insights, either way round."""
        return frozenset((self.item.result.id, self.cid))


class LinkJudge:
    """Judges the candidates of new insights and links the chosen ones. Model settings: arguments >
    `MNEMON_LLM_*` > defaults; `client` takes a ready `openai.OpenAI`."""

    def __init__(
        self,
        memory: Any,
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
        min_weight: float = MIN_WEIGHT,
        dry_run: bool = False,
    ) -> None:
        self.memory = memory
        config = LLMConfig.resolve(model=model, base_url=base_url, api_key=api_key, timeout=timeout,
                                   max_retries=max_retries, temperature=temperature, seed=seed, mode=mode)
        self.llm = ChatLLM(config, client=client)
        self.min_weight = min_weight
        self.dry_run = dry_run

    def judge(self, item: RememberResult | str, *, dry_run: bool | None = None) -> JudgeResult:
        """Judge one insight: a `RememberResult` (its candidates as returned) or an insight id (candidates
        computed now, as `remember` would)."""
        return self.judge_many([item], dry_run=dry_run)[0]

    def judge_many(self, items: Iterable[RememberResult | str], *, dry_run: bool | None = None) -> list[JudgeResult]:
        """Judge several insights, their pairs batched into few calls; one result each, in order. A pair that
        got its answer is not asked about again from its other end; one whose call failed is (with the
        other insight's pairs)."""
        dry = self.dry_run if dry_run is None else dry_run
        todo = [self._item(i, dry) for i in items]
        waiting = [p for it in todo for p in it.pairs]
        done: set[frozenset[str]] = set()
        while waiting:
            batch: list[_Pair] = []
            later: list[_Pair] = []
            for p in waiting:
                if p.key in done:
                    p.item.result.repeats.append(p.cid)
                    continue
                news = {q.item.result.id for q in batch} | {p.item.result.id}
                full = len(batch) >= BATCH_PAIRS or len(news) > BATCH_INSIGHTS
                (later if full or any(q.key == p.key for q in batch) else batch).append(p)
            if batch:  # else every pair left was answered already
                done |= {p.key for p in self._ask(batch, dry)}
            waiting = later
        return [it.result for it in todo]

    def judge_recent(self, limit: int, *, dry_run: bool | None = None) -> list[JudgeResult]:
        """Judge the `limit` newest insights, newest first."""
        return self.judge_many([i.id for i in self.memory.recent(limit)], dry_run=dry_run)

    # ------------------------------------------------------------------ the pairs

    def _item(self, item: RememberResult | str, dry: bool) -> _Item:
        semantic: Sequence[SemanticCandidate]
        causal: Sequence[CausalCandidate]
        if isinstance(item, RememberResult):
            new = {"id": item.id, "content": item.content, "category": item.category.value,
                   "created_at": item.created_at}
            semantic, causal = (item.semantic_candidates, item.causal_candidates) if item.action != "skipped" \
                else ([], [])  # nothing new was stored
        else:
            ins = self.memory.get(item)
            new = {"id": ins.id, "content": ins.content, "category": ins.category.value,
                   "created_at": ins.created_at}
            semantic, causal = self.memory.candidates(item)
        entries: dict[str, dict[str, Any]] = {}
        for s in semantic:
            entries[s.id] = {"content": s.content, "category": s.category.value, "similarity": s.cosine,
                             "auto_linked": s.auto_linked}
        hints: dict[str, str] = {}
        for c in causal:
            e = entries.setdefault(c.id, {"content": c.content, "category": c.category.value})
            e.update({"hops": c.hop, "via_edge": c.via_edge.value})
            if c.causal_signal:  # without a signal the suggestion is the engine's default, "causes": no evidence
                e.update({"causal_signal": c.causal_signal, "suggested_sub_type": c.suggested_sub_type})
            hints[c.id] = c.suggested_sub_type
        it = _Item(new, JudgeResult(id=new["id"], model=self.llm.model, dry_run=dry, candidates=len(entries)))
        # In an order the memories decide, not their ids: ids are random per store, the engine breaks its ties by
        # them, and a small model's answer moves with the order of the pairs (two runs of one export differed).
        for cid, e in sorted(entries.items(), key=_offer_order):
            if possible_update(new["content"], e["content"]):
                e["possible_update"] = True
            it.pairs.append(_Pair(it, cid, e, hints.get(cid)))
        return it

    def _date(self, id_: str, known: str | None = None) -> str | None:
        if known:
            return known[:10]
        try:
            return self.memory.get(id_).created_at[:10]
        except NotFoundError:
            return None

    def _ask(self, batch: list[_Pair], dry: bool) -> list[_Pair]:
        """One call for `batch`; an answer cut off at its limit is asked for again in two halves. Returns the
        pairs that got an answer (linked, declined, refused or left out by the model)."""
        refs: dict[str, str] = {}  # insight id → m ref
        memories: list[dict[str, Any]] = []
        contents: dict[str, str] = {}  # insight id → content, of every memory in the call

        def ref_of(id_: str, content: str, category: str, created_at: str | None = None) -> str:
            if id_ not in refs:
                refs[id_] = f"m{len(refs) + 1}"
                contents[id_] = content
                date = self._date(id_, created_at)
                memories.append({"ref": refs[id_], "content": content, "category": category,
                                 **({"date": date} if date else {})})
            return refs[id_]

        shown: list[dict[str, Any]] = []
        by_ref: dict[str, _Pair] = {}
        for n, p in enumerate(batch, 1):
            new = p.item.new
            pair = {"ref": f"p{n}", "new": ref_of(new["id"], new["content"], new["category"], new["created_at"]),
                    "candidate": ref_of(p.cid, p.shown["content"], p.shown["category"]),
                    **{k: v for k, v in p.shown.items() if k not in ("content", "category")}}
            shown.append(pair)
            by_ref[pair["ref"]] = p
        answer: Answer[list[Any]] = self.llm.ask(judge_messages(memories, shown), JudgeAnswer, check_decisions,
                                                 max_tokens=answer_tokens(len(batch)))
        self._share(batch, answer.usage.total_tokens)
        if answer.value is None:
            if (answer.cut_off or answer.too_long) and len(batch) > 1:
                half = len(batch) // 2
                return self._ask(batch[:half], dry) + self._ask(batch[half:], dry)
            for p in batch:
                p.item.result.error = p.item.result.error or answer.error
            return []
        decided: set[str] = set()
        first = batch[0].item.result
        chosen: list[tuple[str, _Pair, JudgeLink]] = []
        offered = {ref: p.cid for ref, p in by_ref.items()}
        reused = reused_reasons(answer.value, lambda named: offered_ref(named, offered))
        for raw in answer.value:
            picked = self._decide(raw, by_ref, decided, first, contents, reused)
            if picked:
                chosen.append(picked)
        hubs = hub_ends([lk for _, _, lk in chosen])
        for named, pair, link in chosen:
            kind = link.edge_type.value
            hub = next((h for h in (link.source_id, link.target_id) if (h, kind) in hubs), None)
            if hub is None:
                self._link(named, pair, link, dry)
                continue
            pair.item.result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=(
                f"{hub} is an end of {hubs[hub, kind]} {kind} links in one answer (at most {HUB_LINKS[kind]}): "
                f"{link.reason}")))
        for ref, p in by_ref.items():
            if ref not in decided:
                p.item.result.declined.append(JudgeDecline(candidate_id=p.cid, reason="not linked by the model"))
        return batch

    @staticmethod
    def _share(batch: list[_Pair], tokens: int) -> None:
        """Each insight's share of a call's tokens, by its pairs in the call."""
        per: dict[int, tuple[_Item, int]] = {}
        for p in batch:
            it, n = per.get(id(p.item), (p.item, 0))
            per[id(p.item)] = (it, n + 1)
        for it, n in per.values():
            it.result.tokens += math.ceil(tokens * n / len(batch))

    # ------------------------------------------------------------------ one decision

    def _decide(self, raw: Any, by_ref: dict[str, _Pair], decided: set[str], first: JudgeResult,
                contents: dict[str, str], reused: dict[str, int]) -> tuple[str, _Pair, JudgeLink] | None:
        """(the ref as named, its pair, the link) a decision asks for, once it passed every check; a refused or
        declined decision is recorded in its insight's result (or `first`'s, when it names no offered pair).
        `contents` are the call's memories (id → content), `reused` the answer's reasons given for several
        pairs (`reused_reasons`)."""
        if not isinstance(raw, dict):
            first.refused.append(JudgeRefusal(ref=str(raw)[:100], error="a decision must be an object"))
            return None
        named = next((raw[k] for k in REF_KEYS if isinstance(raw.get(k), str)), None)
        if named is None:
            first.refused.append(JudgeRefusal(ref="", error="the decision names no pair"))
            return None
        ref = offered_ref(named, {r: p.cid for r, p in by_ref.items()})
        if ref is None:
            first.refused.append(JudgeRefusal(ref=named[:100],
                                              error=f"not an offered pair (offered: {', '.join(by_ref)})"))
            return None
        pair = by_ref[ref]
        result = pair.item.result
        if ref in decided:
            result.refused.append(JudgeRefusal(ref=named[:100], error="a second decision for the same pair"))
            return None
        decided.add(ref)
        try:
            d = JudgeDecision.model_validate({"sub_type": None, "reason": "", **raw, "ref": named})
        except PydanticValidationError as e:
            result.refused.append(JudgeRefusal(ref=named[:100], error=describe(e)))
            return None
        reason = d.reason.strip()[:MAX_REASON_CHARS]
        if not d.link:
            result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=reason or "declined"))
            return None
        if isinstance(d.weight, bool) or not 0.0 <= d.weight <= 1.0:
            result.refused.append(JudgeRefusal(ref=named[:100],
                                               error=f"weight must be between 0.0 and 1.0, got {d.weight}"))
            return None
        if d.weight < self.min_weight:
            result.declined.append(JudgeDecline(
                candidate_id=pair.cid, reason=f"weight {d.weight:g} is below the floor {self.min_weight:g}: {reason}"))
            return None
        new, cand = pair.item.new["content"], pair.shown["content"]
        if not names_a_memory(reason, new, cand):
            result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=(
                f"the reason names neither memory: {reason or '(none)'}")))
            return None
        ends = {pair.item.result.id, pair.cid}
        why = unrelating(reason, d.edge_type, new, cand, [(i, c) for i, c in contents.items() if i not in ends])
        if why:
            result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=f"{why}: {reason}"))
            return None
        n = reused.get(reason_key(reason), 0)
        if n:
            result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=(
                f"the answer gives the same reason for {n} pairs: {reason}")))
            return None
        if d.edge_type == "supersedes" and not same_subject(new, cand):
            result.declined.append(JudgeDecline(candidate_id=pair.cid, reason=(
                f"supersedes needs the same subject, and these two share too few words: {reason}")))
            return None
        sub_type = None
        if d.edge_type == "causal":
            sub_type = d.sub_type or (pair.hint if pair.hint in CAUSAL_SUB_TYPES else "causes")
        new_id = pair.item.result.id
        src, dst = (new_id, pair.cid) if d.direction == "new_to_candidate" else (pair.cid, new_id)
        link = JudgeLink(candidate_id=pair.cid, source_id=src, target_id=dst, edge_type=EdgeType(d.edge_type),
                         sub_type=sub_type, weight=d.weight, reason=reason)
        return named, pair, link

    def _link(self, named: str, pair: _Pair, link: JudgeLink, dry: bool) -> None:
        result = pair.item.result
        if not dry:
            meta = {"reason": link.reason, "model": self.llm.model,
                    **({"sub_type": link.sub_type} if link.sub_type else {})}
            try:
                self.memory.link(link.source_id, link.target_id, type=link.edge_type.value, weight=link.weight,
                                 metadata=meta, created_by=CREATED_BY)
            except (NotFoundError, ValidationError) as e:  # e.g. the candidate was forgotten meanwhile
                result.refused.append(JudgeRefusal(ref=named[:100], error=str(e)))
                return
        result.linked.append(link)
