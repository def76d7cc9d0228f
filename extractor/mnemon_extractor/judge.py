"""The link judge: closes the loop the spec leaves to the host LLM (spec 004 §4.5, reference §3.7).

`remember` returns `semantic_candidates` and `causal_candidates`; the judge shows them to a model in one call
per new insight, and links the ones it picks, with a type (`semantic`, `causal` with sub_type causes /
enables / prevents, `supersedes`), a weight and a reason:

    judge = LinkJudge(mem, model="gpt-4o-mini")
    result = judge.judge(mem.remember("Switched to Qdrant because Milvus was too slow to filter"))
    result.linked, result.declined, result.refused

Memory content is untrusted: it reaches the model as quoted JSON, candidates are named by refs (`c1`, `c2`,
…) that the judge hands out, and every decision is checked here: only offered candidates, allowed types and
sub-types, weight within [0, 1]. A decision that fails is refused and reported, never linked. Links are made
with `Memory.link(..., created_by="judge")` and metadata `{reason, model, sub_type?}`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field
from pydantic import ValidationError as PydanticValidationError

from mnemon_core.config import UNSET
from mnemon_core.errors import NotFoundError, ValidationError
from mnemon_core.models import CausalCandidate, EdgeType, RememberResult, SemanticCandidate

from .llm import AnswerError, ChatLLM, LLMConfig, describe
from .prompts import CAUSAL_SUB_TYPES, JudgeAnswer, JudgeDecision, judge_messages

CREATED_BY = "judge"
MAX_REASON_CHARS = 1000  # a metadata value's limit on the MCP face (reference §8.3)
REF_KEYS = ("ref", "candidate", "candidate_id", "id")  # what a model in JSON mode may call the ref


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
    error: str | None = Field(default=None, description="why no decision came back (then nothing is linked)")
    tokens: int = 0


def offer(
    semantic: Iterable[SemanticCandidate], causal: Iterable[CausalCandidate]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The candidates as the model sees them (one entry per id, refs c1, c2, …) and ref → insight id."""
    entries: dict[str, dict[str, Any]] = {}
    for s in semantic:
        entries[s.id] = {"content": s.content, "category": s.category.value, "similarity": s.cosine,
                         "auto_linked": s.auto_linked}
    for c in causal:
        e = entries.setdefault(c.id, {"content": c.content, "category": c.category.value})
        e.update({"hops": c.hop, "via_edge": c.via_edge.value, "suggested_sub_type": c.suggested_sub_type})
        if c.causal_signal:
            e["causal_signal"] = c.causal_signal
    refs: dict[str, str] = {}
    shown = []
    for n, (id_, e) in enumerate(entries.items(), 1):
        ref = f"c{n}"
        refs[ref] = id_
        shown.append({"ref": ref, **e})
    return shown, refs


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
        temperature: float | None = None,
        dry_run: bool = False,
    ) -> None:
        self.memory = memory
        config = LLMConfig.resolve(model=model, base_url=base_url, api_key=api_key, timeout=timeout,
                                   max_retries=max_retries, temperature=temperature, mode=mode)
        self.llm = ChatLLM(config, client=client)
        self.dry_run = dry_run

    def judge(self, item: RememberResult | str, *, dry_run: bool | None = None) -> JudgeResult:
        """Judge one insight: a `RememberResult` (its candidates as returned) or an insight id (candidates
        computed now, as `remember` would)."""
        dry = self.dry_run if dry_run is None else dry_run
        if isinstance(item, RememberResult):
            if item.action == "skipped":  # nothing new was stored
                return JudgeResult(id=item.id, model=self.llm.model, dry_run=dry, candidates=0)
            new = {"id": item.id, "content": item.content, "category": item.category.value}
            semantic, causal = item.semantic_candidates, item.causal_candidates
        else:
            ins = self.memory.get(item)
            new = {"id": ins.id, "content": ins.content, "category": ins.category.value}
            semantic, causal = self.memory.candidates(item)
        shown, refs = offer(semantic, causal)
        result = JudgeResult(id=new["id"], model=self.llm.model, dry_run=dry, candidates=len(refs))
        if not refs:
            return result
        hints = {c.id: c.suggested_sub_type for c in causal}
        quoted_new = {"content": new["content"], "category": new["category"]}
        answer = self.llm.ask(judge_messages(quoted_new, shown), JudgeAnswer, check_decisions)
        result.tokens = answer.usage.total_tokens
        if answer.value is None:
            result.error = answer.error
            return result
        decided: set[str] = set()
        for raw in answer.value:
            self._decide(raw, new["id"], refs, hints, decided, dry, result)
        for ref, cid in refs.items():
            if cid not in decided:
                result.declined.append(JudgeDecline(candidate_id=cid, reason="no decision from the model"))
        return result

    def judge_many(self, items: Iterable[RememberResult | str], *, dry_run: bool | None = None) -> list[JudgeResult]:
        return [self.judge(i, dry_run=dry_run) for i in items]

    def judge_recent(self, limit: int, *, dry_run: bool | None = None) -> list[JudgeResult]:
        """Judge the `limit` newest insights, newest first."""
        return self.judge_many([i.id for i in self.memory.recent(limit)], dry_run=dry_run)

    # ------------------------------------------------------------------ one decision

    def _decide(
        self, raw: Any, new_id: str, refs: dict[str, str], hints: dict[str, str], decided: set[str], dry: bool,
        result: JudgeResult,
    ) -> None:
        if not isinstance(raw, dict):
            result.refused.append(JudgeRefusal(ref=str(raw)[:100], error="a decision must be an object"))
            return
        named = next((raw[k] for k in REF_KEYS if isinstance(raw.get(k), str)), None)
        if named is None:
            result.refused.append(JudgeRefusal(ref="", error="the decision names no candidate"))
            return
        cid = refs.get(named.strip()) or (named.strip() if named.strip() in refs.values() else None)
        if cid is None:
            result.refused.append(JudgeRefusal(
                ref=named[:100], error=f"not an offered candidate (offered: {', '.join(refs)})"))
            return
        if cid in decided:
            result.refused.append(JudgeRefusal(ref=named[:100], error="a second decision for the same candidate"))
            return
        decided.add(cid)
        try:
            d = JudgeDecision.model_validate({"sub_type": None, "reason": "", **raw, "ref": named})
        except PydanticValidationError as e:
            result.refused.append(JudgeRefusal(ref=named[:100], error=describe(e)))
            return
        reason = d.reason.strip()[:MAX_REASON_CHARS]
        if not d.link:
            result.declined.append(JudgeDecline(candidate_id=cid, reason=reason or "declined"))
            return
        if isinstance(d.weight, bool) or not 0.0 <= d.weight <= 1.0:
            result.refused.append(JudgeRefusal(ref=named[:100],
                                               error=f"weight must be between 0.0 and 1.0, got {d.weight}"))
            return
        sub_type = None
        if d.edge_type == "causal":
            sub_type = d.sub_type or (hints.get(cid) if hints.get(cid) in CAUSAL_SUB_TYPES else "causes")
        src, dst = (new_id, cid) if d.direction == "new_to_candidate" else (cid, new_id)
        link = JudgeLink(candidate_id=cid, source_id=src, target_id=dst, edge_type=EdgeType(d.edge_type),
                         sub_type=sub_type, weight=d.weight, reason=reason)
        if not dry:
            meta = {"reason": reason, "model": self.llm.model, **({"sub_type": sub_type} if sub_type else {})}
            try:
                self.memory.link(src, dst, type=d.edge_type, weight=d.weight, metadata=meta, created_by=CREATED_BY)
            except (NotFoundError, ValidationError) as e:  # e.g. the candidate was forgotten meanwhile
                result.refused.append(JudgeRefusal(ref=named[:100], error=str(e)))
                return
        result.linked.append(link)
