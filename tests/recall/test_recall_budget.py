"""What the agent reads within a token budget (`recall --max-tokens N`, `mnemon_core/recall/budget.py`): the
printed JSON is at most N tokens by the one counter (e5's tokenizer), the results are the unbudgeted ranking's
first ones in its order, a long memory is its best-matching passage with `…` and its id (`show` gives the
whole), only what is shown counts an access; through the library, the CLI, MCP and the framework faces; bad
budgets are one line naming the field and its limits, and nothing is written."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemon_core import AsyncMemory, BudgetRecallResult, Memory
from mnemon_core.errors import ValidationError
from mnemon_core.faces.mcp import Face
from mnemon_core.models import printed
from mnemon_core.recall.budget import count_tokens, passage, passage_keys
from mnemon_core.recall.constants import ELLIPSIS, MAX_TOKENS_MAX, MAX_TOKENS_MIN

QUERY = "why did we pick Qdrant for the vector search?"
FILLER = "The weather was mild and the team walked along the river talking about holidays and football."
LONG = " ".join([FILLER] * 30 + ["We picked Qdrant for the vector search because its payload filtering was the "
                                 "fastest we measured."] + [FILLER] * 30)
SHORT = [
    "Qdrant runs on the staging cluster with 8 GB of memory",
    "Milvus was slower than Qdrant at filtered vector search",
    "We keep the vector search behind one interface so the database can change",
    "The search team prefers managed services over self-hosting",
    "Qdrant snapshots are copied to object storage every night",
    "Vector search latency must stay under 50 ms at p95",
    "The first prototype used pgvector inside Postgres",
    "Filtering by tenant is the main query pattern of the search service",
]
BUDGETS = [MAX_TOKENS_MIN, 200, 300, 450, 700, 1000, 4000]


@pytest.fixture
def stored(data_dir) -> dict[str, str]:
    """A long memory (its query terms in the middle) among short ones, written through `remember`."""
    ids = {}
    with Memory() as mem:
        ids["long"] = mem.remember(LONG, category="decision").id
        for i, text in enumerate(SHORT):
            ids[f"short{i}"] = mem.remember(text).id
    return ids


@pytest.fixture
def frozen(stored):
    """A readonly view: no access bump moves one recall's ranking before the next."""
    with Memory(readonly=True) as mem:
        yield mem


def ids_of(result) -> list[str]:
    return [h.id for h in result.results]


# ---------------------------------------------------------------- the counter


def test_the_counter_is_e5s_tokenizer_without_prefix_or_specials() -> None:
    assert count_tokens("") == count_tokens("  \n ") == 0
    assert count_tokens("hello world") == 3  # "▁hell", "o", "▁world"
    assert count_tokens("a  \n\n b") == count_tokens("a b")  # the tokenizer collapses whitespace
    text = printed({"results": [{"id": "3e90e04f-45e6-4518-b8e2-d73d04e19602", "content": "x"}]})
    assert count_tokens(text) == count_tokens(text)  # deterministic, offline


# ---------------------------------------------------------------- the library


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_budget_holds_and_the_order_is_the_rankings(frozen: Memory, budget: int) -> None:
    whole = frozen.recall(QUERY, limit=20)
    fitted = frozen.recall(QUERY, limit=20, max_tokens=budget)
    assert isinstance(fitted, BudgetRecallResult)
    assert count_tokens(printed(fitted)) <= budget
    assert ids_of(fitted) == ids_of(whole)[: len(fitted.results)]  # the first ones, in rank order
    assert fitted.results, "the smallest budget still shows the best memory"
    assert [h.confidence for h in fitted.results] == [h.confidence for h in whole.results][: len(fitted.results)]


def test_a_larger_budget_shows_more_and_everything_fits_at_last(frozen: Memory) -> None:
    shown = [len(frozen.recall(QUERY, limit=20, max_tokens=b).results) for b in BUDGETS]
    assert shown == sorted(shown) and shown[0] < shown[-1]
    assert shown[-1] == len(frozen.recall(QUERY, limit=20).results) == 9  # 4,000 tokens hold all nine


def test_a_long_memory_is_its_best_matching_passage_with_its_id(frozen: Memory, stored) -> None:
    fitted = frozen.recall(QUERY, limit=20, max_tokens=1000)
    hit = next(h for h in fitted.results if h.id == stored["long"])
    assert hit.truncated and hit.content.startswith(ELLIPSIS) and hit.content.endswith(ELLIPSIS)
    assert "We picked Qdrant for the vector search" in hit.content  # the window holding the query's terms
    assert hit.content.strip(ELLIPSIS) in " ".join(LONG.split())
    assert count_tokens(hit.content) <= 128  # PASSAGE_TOKENS: a tenth of 1,000 is less
    assert frozen.show(stored["long"]).content == LONG  # `show <id>` gives the whole
    data = json.loads(printed(fitted))
    assert data["results"][0].keys() <= {"id", "content", "confidence", "truncated", "superseded"}
    short = next(h for h in data["results"] if h["id"] != stored["long"])
    assert "truncated" not in short and short["content"] in SHORT  # a short memory whole


def test_the_last_memory_is_a_shorter_passage_when_the_rest_is_enough(frozen: Memory, stored) -> None:
    query = "what payload was the fastest we measured?"  # words of the long memory alone
    top = frozen.recall(query, limit=20).results
    assert top[0].id == stored["long"]
    fitted = frozen.recall(query, limit=20, max_tokens=MAX_TOKENS_MIN)
    assert ids_of(fitted) == [stored["long"]] and fitted.results[0].truncated
    assert count_tokens(fitted.results[0].content) < 128


def test_retrieve_marks_the_passages_and_only_shown_memories_count_an_access(stored) -> None:
    with Memory(readonly=True) as reader:
        want = reader.recall(QUERY, limit=20, max_tokens=300)
    with Memory() as mem:
        found = mem.retrieve(QUERY, limit=20, max_tokens=300)
        shown = [h.insight.id for h in found.results]
        assert found.budgeted().model_dump() == want.model_dump()
        assert [bool(h.passage) for h in found.results] == [h.truncated for h in want.results]
        assert 0 < len(shown) < len(stored)
        counts = {id_: mem.show(id_).access_count for id_ in stored.values()}
    assert {i for i, n in counts.items() if n == 2} == set(shown)  # recall + show
    assert {i for i, n in counts.items() if n == 1} == set(stored.values()) - set(shown)  # show alone


async def test_async_memory_gives_the_same(frozen: Memory) -> None:
    amem = AsyncMemory(memory=frozen)
    got = await amem.recall(QUERY, limit=20, max_tokens=300)
    assert got.model_dump() == frozen.recall(QUERY, limit=20, max_tokens=300).model_dump()


BAD = [0, -1, 1, MAX_TOKENS_MIN - 1, MAX_TOKENS_MAX + 1, True, "500", 500.0]


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_bad_budgets_are_one_line_and_write_nothing(stored, value) -> None:
    with Memory() as mem:
        before = len(mem.log(limit=1000))
        with pytest.raises(ValidationError) as e:
            mem.recall(QUERY, max_tokens=value)
        assert str(e.value) == f"max_tokens must be between 150 and 100000, got {value!r:.50}"
        assert e.value.field == "max_tokens" and "\n" not in str(e.value)
        with pytest.raises(ValidationError):
            mem.retrieve(QUERY, max_tokens=value)
        assert len(mem.log(limit=1000)) == before


@pytest.mark.parametrize("flag", ["verbose", "brief", "basic"])
def test_a_budget_is_its_own_shape(stored, flag: str) -> None:
    with Memory() as mem:
        before = len(mem.log(limit=1000))
        with pytest.raises(ValidationError, match=f"^max_tokens and {flag} cannot be used together$"):
            mem.recall(QUERY, max_tokens=500, **{flag: True})
        assert len(mem.log(limit=1000)) == before


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.integers(max_value=MAX_TOKENS_MIN - 1), st.integers(min_value=MAX_TOKENS_MAX + 1),
                       st.floats(allow_nan=False), st.text(max_size=8), st.booleans()))
def test_any_budget_outside_the_limits_is_rejected(frozen: Memory, value) -> None:
    with pytest.raises(ValidationError) as e:
        frozen.recall(QUERY, max_tokens=value)
    assert str(e.value).startswith("max_tokens must be between 150 and 100000, got ")
    assert "\n" not in str(e.value)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(MAX_TOKENS_MIN, 3000), query=st.sampled_from([QUERY, "Qdrant", "football holidays",
                                                                       "search latency", "nothing stored here"]))
def test_any_budget_within_the_limits_holds(frozen: Memory, budget: int, query: str) -> None:
    fitted = frozen.recall(query, limit=20, max_tokens=budget)
    assert count_tokens(printed(fitted)) <= budget
    assert ids_of(fitted) == ids_of(frozen.recall(query, limit=20))[: len(fitted.results)]


WORDS = st.sampled_from(["qdrant", "vector", "search", "the", "river", "walked", "we", "picked", "filtering",
                         "fast,", "tenant.", "Qdrant's", "数据库", "x" * 40, "\n\n", "naïve"])


@settings(max_examples=150, deadline=None, database=None)
@given(words=st.lists(WORDS, max_size=400), budget=st.integers(1, 200))
def test_a_passage_fits_and_is_a_piece_of_the_memory(words: list[str], budget: int) -> None:
    content = " ".join(words)
    text = passage(content, passage_keys("qdrant vector search filtering"), budget)
    assert count_tokens(text) <= budget
    assert text.strip(ELLIPSIS) in " ".join(content.split())


def test_a_passage_without_the_querys_terms_is_the_memorys_head() -> None:
    text = passage(LONG, passage_keys("gardening tomatoes"), 40)
    assert LONG.startswith(text.rstrip(ELLIPSIS)) and text.endswith(ELLIPSIS) and not text.startswith(ELLIPSIS)


# ---------------------------------------------------------------- the command line


@pytest.mark.usefixtures("cli_both_ways")
def test_cli_prints_the_librarys_result_within_the_budget(cli, stored) -> None:
    r = cli("recall", QUERY, "--limit", "20", "--max-tokens", "300")
    assert r.code == 0, r.err
    assert count_tokens(r.out.rstrip("\n")) <= 300
    with Memory(readonly=True) as mem:
        assert r.json() == mem.recall(QUERY, limit=20, max_tokens=300).model_dump(mode="json")
    cut = next(h for h in r.json()["results"] if h.get("truncated"))
    assert cut["content"].startswith(ELLIPSIS)
    assert cli("show", cut["id"]).json()["content"] == LONG


@pytest.mark.parametrize(("args", "message"), [
    (["--max-tokens", "10"], "Error: max_tokens must be between 150 and 100000, got 10"),
    (["--max-tokens", "100001"], "Error: max_tokens must be between 150 and 100000, got 100001"),
    (["--max-tokens", "many"], "Error: argument --max-tokens: invalid int value: 'many'"),
    (["--max-tokens", "500", "--verbose"], "Error: max_tokens and verbose cannot be used together"),
    (["--max-tokens", "500", "--basic"], "Error: max_tokens and basic cannot be used together"),
])
def test_cli_rejects_bad_budgets_in_one_line(cli, stored, args, message) -> None:
    before = cli("log", "--limit", "1000").out
    r = cli("recall", QUERY, *args)
    assert (r.code, r.out, r.err) == (1, "", message + "\n")
    assert cli("log", "--limit", "1000").out == before


# ---------------------------------------------------------------- MCP


def test_mcp_recall_returns_the_budgeted_text(frozen: Memory, stored) -> None:
    face = Face(frozen)
    is_error, text = asyncio.run(face.call("recall", {"query": QUERY, "limit": 20, "max_tokens": 300}))
    assert not is_error and text == printed(frozen.recall(QUERY, limit=20, max_tokens=300))
    assert count_tokens(text) <= 300
    cut = next(h for h in json.loads(text)["results"] if h.get("truncated"))
    is_error, shown = asyncio.run(face.call("show", {"id": cut["id"]}))
    assert not is_error and json.loads(shown)["content"] == LONG


@pytest.mark.parametrize(("value", "message"), [
    (10, "max_tokens must be between 150 and 100000, got 10"),
    ("many", "max_tokens: Input should be a valid integer, unable to parse string as an integer"),
])
def test_mcp_rejects_bad_budgets_in_one_line(frozen: Memory, value, message) -> None:
    assert asyncio.run(Face(frozen).call("recall", {"query": QUERY, "max_tokens": value})) == (True, message)


# ---------------------------------------------------------------- LangChain and LlamaIndex


def test_langchain_retriever_and_tool_show_what_recall_shows(frozen: Memory) -> None:
    pytest.importorskip("langchain_core")
    from langchain_mnemon import MnemonRetriever, create_mnemon_tools

    want = frozen.retrieve(QUERY, limit=20, max_tokens=300)
    docs = MnemonRetriever(memory=frozen, k=20, max_tokens=300).invoke(QUERY)
    assert [d.id for d in docs] == [h.insight.id for h in want.results]
    assert [d.page_content for d in docs] == [h.passage or h.insight.content for h in want.results]
    assert [bool(d.metadata.get("truncated")) for d in docs] == [bool(h.passage) for h in want.results]
    assert [d.id for d in MnemonRetriever(memory=frozen, k=20).invoke(QUERY, max_tokens=300)] == [d.id for d in docs]
    recall = create_mnemon_tools(frozen)[1]
    text = recall.invoke({"query": QUERY, "limit": 20, "max_tokens": 300})  # one line, the same count
    assert json.loads(text) == want.budgeted().model_dump(mode="json") and count_tokens(text) <= 300
    assert count_tokens(text) == count_tokens(printed(want.budgeted()))


def test_llamaindex_retriever_and_memory_block_show_what_recall_shows(frozen: Memory) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index_mnemon import MnemonMemoryBlock, MnemonRetriever

    want = frozen.retrieve(QUERY, limit=20, max_tokens=300)
    nodes = MnemonRetriever(frozen, similarity_top_k=20, max_tokens=300).retrieve(QUERY)
    assert [n.node.id_ for n in nodes] == [h.insight.id for h in want.results]
    assert [n.node.get_content() for n in nodes] == [h.passage or h.insight.content for h in want.results]
    block = MnemonMemoryBlock(memory=frozen, similarity_top_k=20, max_tokens=300)
    text = asyncio.run(block._aget([ChatMessage(role="user", content=QUERY)]))
    lines = text.splitlines()
    assert len(lines) == len(want.results) and count_tokens(text) <= 300
    for line, hit in zip(lines, want.results):  # the long memory as its passage, the short ones whole
        assert line.startswith(f"- [{hit.insight.category}] {ELLIPSIS if hit.passage else ''}")
