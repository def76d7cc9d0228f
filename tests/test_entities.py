"""Entity extraction and resolution: reference §3.5 and Appendix A."""

from __future__ import annotations

import pytest

from mnemon_core.entities import (
    ACRONYM_STOPWORDS,
    CAMEL_CASE_RE,
    TECH_DICTIONARY,
    extract_entities,
    query_entities,
    resolve_entities,
)
from mnemon_core.errors import ValidationError
from mnemon_core.models import EntityMode


def test_dictionary_and_stopword_sizes() -> None:
    assert len(TECH_DICTIONARY) == 98
    assert len(ACRONYM_STOPWORDS) == 59
    assert {"gRPC", "Neo4j", "OCaml", "FAISS", "Hugging", "RLM"} <= TECH_DICTIONARY
    assert {"IN", "THE", "AND", "ANY", "TOP"} <= ACRONYM_STOPWORDS


# --- path 1: CamelCase ---------------------------------------------------------------------------------


def test_camel_case_two_humps() -> None:
    assert extract_entities("HttpServer handles requests via MyClient") == ["HttpServer", "MyClient"]


def test_camel_case_rejects_one_hump_and_trailing_acronym() -> None:
    assert CAMEL_CASE_RE.findall("Athena FastAPI HttpServer") == ["HttpServer"]
    # Athena is one hump; FooBarAPI ends in capitals, so no word-bounded CamelCase; not in the dictionary.
    assert extract_entities("Athena wrote FooBarAPI") == []
    assert extract_entities("Athena met Zorbo") == []


def test_fastapi_comes_from_the_dictionary_not_camel_case() -> None:
    # Path order shows where it came from: dictionary hits follow every regex hit.
    assert extract_entities("FastAPI beside HttpServer") == ["HttpServer", "FastAPI"]


# --- path 2: ALL-CAPS ----------------------------------------------------------------------------------


def test_all_caps_acronyms() -> None:
    assert extract_entities("the API uses HTTP and SQL with JWT in a DB") == ["API", "HTTP", "SQL", "JWT", "DB"]


def test_all_caps_stopwords_and_lengths() -> None:
    assert extract_entities("IN THE AND IT IS") == []
    # 1 letter and 7 letters are outside 2-6; HTTP2 has no word boundary after the P.
    assert extract_entities("A ABCDEFG HTTP2 ABCDEF") == ["ABCDEF"]


# --- path 3: file paths --------------------------------------------------------------------------------


def test_file_paths() -> None:
    # The original also took v1.2 here; version numbers are no entities (see the tests below).
    text = "Edit ./cmd/root.go and cmd/root.go, see example.com or v1.2."
    assert extract_entities(text) == ["./cmd/root.go", "cmd/root.go", "example.com"]


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        ("Upgraded to 2.0.30 today", []),
        ("Python 2.3 and v1.2 and V3.0.1 are out; pi is 3.14.", ["Python"]),
        ("ship 1.2.0-rc.1 then 1.2.0", []),
        ("Node.js 18.2 on host 10.0.0.5", ["Node.js", "Node"]),
        # a file whose name holds a version is still a file; a name that ends in its version is a version
        ("python3.11 reads config.v2.yaml and app-1.2.tar", ["config.v2.yaml", "app-1.2.tar"]),
        ("pinned go-v0.1.15, release-2.4.0, 2.0.0rc1 and 1.x", []),
        ("e.g. i.e. archive.7z", ["archive.7z"]),
    ],
)
def test_version_numbers_are_not_entities(text: str, entities: list[str]) -> None:
    assert extract_entities(text) == entities


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        # "VS" starts the name "VS Code": a fragment, not an acronym; Claude is in the dictionary
        ("Upgraded Claude Code to 2.0.30 in VS Code", ["Claude"]),
        ("Microsoft SQL Server behind the API Gateway", []),
        ("AWS Lambda calls the API", ["API", "AWS"]),  # AWS still comes from the dictionary
        ("Qdrant VS Milvus", ["Qdrant", "Milvus"]),
        # an acronym followed by a lower-case word, an acronym, punctuation or the end is one of its own
        ("VS code, the API. Then HTTP JWT", ["VS", "API", "HTTP", "JWT"]),
    ],
)
def test_an_all_caps_word_starting_a_longer_name_is_a_fragment(text: str, entities: list[str]) -> None:
    assert extract_entities(text) == entities


def test_queries_drop_the_same_hits() -> None:
    assert query_entities("what changed in 2.0.30 of VS Code?", {"Code"}) == ["Code"]


def test_file_path_context() -> None:
    assert extract_entities('open "a.py" (b.rs) `c.toml`') == ["a.py", "b.rs", "c.toml"]
    # Adjacent paths separated by one space are both found.
    assert extract_entities("a.go b.go") == ["a.go", "b.go"]
    # Not after a letter (x=conf.ini), and the extension must be followed by a delimiter (ASCII \\w).
    assert extract_entities("x=conf.ini config.yaml里") == []
    # Extension of more than 10 word chars is no path.
    assert extract_entities("file.abcdefghijk") == []


# --- path 4: URLs --------------------------------------------------------------------------------------


def test_url_kept_whole() -> None:
    text = "Check https://github.com/user/repo?tab=readme#top for details (or http://a.b/c) <https://x.y/z>"
    assert extract_entities(text) == [
        "https://github.com/user/repo?tab=readme#top",
        "http://a.b/c",
        "https://x.y/z",
    ]


# --- path 5: mentions ----------------------------------------------------------------------------------


def test_mentions_without_at() -> None:
    assert extract_entities("thanks @alice and @_bot2, not @x or @9lives") == ["alice", "_bot2"]


# --- path 6: 《…》 / 「…」 -----------------------------------------------------------------------------


def test_bracketed_titles() -> None:
    assert extract_entities("我读了《三体》和「流浪地球」，还有《》") == ["三体", "流浪地球"]


# --- path 7: dictionary --------------------------------------------------------------------------------


def test_dictionary_exact_case() -> None:
    assert extract_entities("React and react") == ["React"]
    assert extract_entities("we use Go with SQLite, deploy via Docker and gRPC") == ["Go", "SQLite", "Docker", "gRPC"]
    assert extract_entities("go sqlite docker GRPC") == ["GRPC"]  # GRPC only as an ALL-CAPS hit


def test_dictionary_splits_on_non_alphanumeric() -> None:
    # Node.js: "Node" by dictionary after the path hit; snake_case and hyphens split words.
    assert extract_entities("Node.js with redis_Redis and x-Vue") == ["Node.js", "Node", "Redis", "Vue"]


# --- ordering, dedup, mixed ----------------------------------------------------------------------------


def test_path_order_and_exact_dedup() -> None:
    text = "React calls the API, HttpServer calls the API; see @React and React"
    # path 1, path 2, path 5 (React first seen there), then the dictionary adds nothing new.
    assert extract_entities(text) == ["HttpServer", "API", "React"]


def test_empty_text() -> None:
    assert extract_entities("") == []
    assert extract_entities("", {"Athena"}) == []


def test_mixed_chinese_english() -> None:
    text = "选择Qdrant因为HttpServer性能好，API文档见https://qdrant.tech/docs，配置在 ./deploy/qdrant.yaml 里，参考《向量数据库》，感谢@alice"
    assert extract_entities(text) == [
        "HttpServer",
        "API",
        "./deploy/qdrant.yaml",
        "https://qdrant.tech/docs，配置在",
        "alice",
        "向量数据库",
        "Qdrant",
    ]


# --- path 8: known entities ----------------------------------------------------------------------------


def test_known_path_admits_only_known() -> None:
    text = "Athena deployed openclaw on Hermes"
    assert extract_entities(text) == []
    assert extract_entities(text, {"Athena", "openclaw"}) == ["Athena", "openclaw"]


def test_known_path_is_exact_case() -> None:
    assert extract_entities("athena and Openclaw", {"Athena", "openclaw"}) == []


def test_known_path_capitalized_tokens_before_other_words() -> None:
    assert extract_entities("openclaw talks to Athena", {"Athena", "openclaw"}) == ["Athena", "openclaw"]


def test_known_path_rejects_stopwords() -> None:
    known = {"the", "It", "NEW", "Will", "Athena"}
    assert extract_entities("the It NEW Will Athena", known) == ["Athena"]


def test_known_path_comes_after_paths_1_to_7() -> None:
    assert extract_entities("Athena uses React", {"Athena", "React"}) == ["React", "Athena"]


def test_known_path_accepts_any_collection() -> None:
    assert extract_entities("Athena", ["Athena"]) == ["Athena"]
    assert extract_entities("Athena", frozenset({"Athena"})) == ["Athena"]


# --- resolve_entities ----------------------------------------------------------------------------------


def test_mode_merge() -> None:
    got = resolve_entities("we use Docker and SQLite", ["Go", "Docker", "", "Go"], "merge")
    assert got == ["Go", "Docker", "SQLite"]


def test_mode_provided() -> None:
    got = resolve_entities("we use Docker and SQLite", ["Go", "", "Go", "  ", "Athena"], EntityMode.provided)
    assert got == ["Go", "Athena"]


def test_mode_auto() -> None:
    got = resolve_entities("we use Docker and Athena", ["Go"], EntityMode.auto, known={"Athena"})
    assert got == ["Docker", "Athena"]


def test_modes_with_nothing() -> None:
    assert resolve_entities("", [], "merge") == []
    assert resolve_entities("", [""], "provided") == []


def test_bad_mode() -> None:
    with pytest.raises(ValidationError) as err:
        resolve_entities("x", [], "smart")
    assert err.value.field == "entity_mode"


# --- query_entities ------------------------------------------------------------------------------------


def test_query_finds_known_case_insensitively() -> None:
    assert query_entities("tell me about qdrant", {"Qdrant"}) == ["Qdrant"]
    assert query_entities("what did openclaw do with ATHENA", {"Athena", "openclaw"}) == ["Athena", "openclaw"]


def test_query_dedups_case_insensitively() -> None:
    assert query_entities("React react REACT", {"React"}) == ["React"]
    assert query_entities("API and api") == ["API"]


def test_query_without_known_is_extraction() -> None:
    assert query_entities("why HttpServer and React?") == ["HttpServer", "React"]


def test_query_rejects_stopwords() -> None:
    assert query_entities("is it new", {"IT", "NEW", "Is"}) == []


def test_query_stored_spelling_is_deterministic() -> None:
    assert query_entities("qdrant", {"QDRANT", "Qdrant"}) == ["QDRANT"]
    assert query_entities("Qdrant", {"QDRANT", "Qdrant"}) == ["Qdrant"]


def test_status_ranks_no_version_or_fragment(cli, data_dir) -> None:
    notes = [
        "Claude Code 2.0.30 fixed the crash in VS Code",
        "Upgraded Claude Code to 2.0.30 on the build box",
        "Pinned Python 2.3 tooling at v1.2 for the legacy repo",
        "VS Code settings live in .vscode/settings.json",
    ]
    for n in notes:
        r = cli("remember", n)
        assert r.code == 0, r.err
        assert not {"2.0.30", "2.3", "v1.2", "VS"} & set(r.json()["entities"])
    top = cli("status").json()["top_entities"]
    assert top == [{"entity": "Claude", "count": 2}, {"entity": ".vscode/settings.json", "count": 1},
                   {"entity": "Python", "count": 1}]


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        ("Deploy at 09:00 UTC; the PR raises the cache to 512 MB", []),
        ("Backups at 02:00 GMT, 3 GB each, ETA Friday, TODO: check the WIP branch", []),
        ("The API and CLI run on AWS and GCP", ["API", "CLI", "AWS", "GCP"]),  # acronyms that name things stay
    ],
)
def test_time_zones_units_and_workflow_words_are_not_entities(text: str, entities: list[str]) -> None:
    assert extract_entities(text) == entities
    assert query_entities(text, {"UTC", "PR"}) == entities  # nor through the known-entity path of an old store
