"""Entity extraction and resolution (reference §3.5, Appendix A; spec 004 §4.2).

Paths 1-7 are the original's regexes and tech dictionary, applied in that order; hits are deduplicated by
exact string, first occurrence kept, and any hit that is an acronym stopword is dropped. Path 8 (v0.1.14+)
admits a plain word only when it equals an entity the store already knows, so it never admits a first
mention.

Two departures from the original, which made its top entities `2.0.30` and `VS` (issue 13): the file-path
path no longer yields version numbers and plain numbers (`2.0.30`, `v1.2`, `3.14`, which have the shape of
`name.ext`), and the ALL-CAPS path skips a word that starts a longer capitalized name (`VS` of "VS Code",
`SQL` of "SQL Server"): it is a fragment of that name, not an acronym of its own. And (issue 26) the ALL-CAPS
path drops time zones, units and workflow abbreviations (`UTC`, `MB`, `PR`: `NOT_NAMES`), and the path path a
name that ends in a version (`go-v0.1.15`, `python3.11`, `1.x`).

Word classes are ASCII, as in Go's regexp (`\\b`, `\\w`, `\\s` are ASCII there): "HttpServer性能" still yields
`HttpServer`, and "config.yaml里" is not a path.

Callers pass `known` as a set: it is only probed with `in`, never scanned, so `remember` stays O(|text|).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from mnemon_core.errors import ValidationError
from mnemon_core.models import EntityMode
from mnemon_core.text import STOPWORDS

__all__ = [
    "ACRONYM_STOPWORDS",
    "NOT_NAMES",
    "TECH_DICTIONARY",
    "extract_entities",
    "query_entities",
    "resolve_entities",
]

# Appendix A: 98 exact-case terms (the original's docs say "200+"; its code has these 98).
TECH_DICTIONARY: frozenset[str] = frozenset(
    """Go Rust Python Java Kotlin Swift Ruby Elixir Zig Lua Dart Scala Perl Haskell OCaml Julia Clojure
    JavaScript TypeScript React Vue Angular Svelte Next Nuxt Node Deno Bun Vite Webpack
    SQLite PostgreSQL Postgres MySQL Redis MongoDB DynamoDB Cassandra Qdrant Milvus Chroma Pinecone Neo4j
    Weaviate Elasticsearch
    Docker Kubernetes Terraform Ansible Nginx Caddy Kafka RabbitMQ AWS GCP Azure Vercel Netlify Cloudflare
    Supabase Firebase
    Ollama OpenAI Claude Anthropic PyTorch TensorFlow LangChain LlamaIndex FAISS Hugging
    Git GitHub GitLab Cobra FastAPI Flask Django Rails Spring Express Gin Echo Fiber Pytest Jest Vitest
    gRPC GraphQL WebSocket OAuth JWT YAML TOML Protobuf MAGMA MCP RLM""".split()
)

# §3.5: upper-case English words that the ALL-CAPS path would otherwise take for acronyms (59).
ACRONYM_STOPWORDS: frozenset[str] = frozenset(
    """IN ON AT TO BY OR AN IF IS IT OF AS DO NO SO UP WE HE MY BE GO THE AND FOR ARE BUT NOT YOU ALL
    CAN HER WAS ONE OUR OUT HAS HAD HOW MAN NEW NOW OLD SEE WAY MAY SAY SHE TWO USE BOY DID GET HIM HIS LET
    PUT TOP TOO ANY""".split()
)

# Upper-case words that name no thing of their own (issue 26): time zones, units of size and time, workflow
# abbreviations. The ALL-CAPS path would take each for an acronym; dropped like the acronym stopwords.
NOT_NAMES: frozenset[str] = frozenset(
    """UTC GMT EST EDT CST CDT MST MDT PST PDT CET CEST EET EEST BST IST JST KST AEST AEDT
    KB MB GB TB PB KIB MIB GIB TIB SEC MIN HR HRS AM PM
    PR PRS MR TODO FIXME FYI ASAP ETA EOD EOW TBD WIP OK""".split()
)

# 1. CamelCase, >= 2 humps of capital + lower-case run: HttpServer yes; Athena (1 hump), FastAPI (API is no hump) no.
CAMEL_CASE_RE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b", re.ASCII)
# 2. ALL-CAPS words of 2-6 letters on word boundaries, unless a capitalized word follows ("VS Code").
ALL_CAPS_RE = re.compile(r"\b[A-Z]{2,6}\b(?! [A-Z][a-z])", re.ASCII)
# 3. File-path-like: at start or after whitespace/quote/"(", a run of [.\w/-] ending in "." + 1-10 word
#    chars, followed by whitespace, quote, ")", ",", "." or end. Lookarounds (not consumed delimiters) so
#    two paths separated by one space are both found. Backtick counts as a quote (Markdown code spans).
FILE_PATH_RE = re.compile(r"""(?<![^\s"'`(])[.\w/-]+\.\w{1,10}(?=[\s"'`),.]|$)""", re.ASCII)
#    A path hit that is a number or a version names nothing: 2.0.30, v1.2, 1.2.0-rc.1, 3.14, 2.0.0rc1, 1.x, a
#    name with its version (go-v0.1.15, python3.11, release-2.4.0), a dotted abbreviation (e.g, i.e).
VERSION_RE = re.compile(
    r"(?:[\w-]*?[-_]|[A-Za-z]+)?[vV]?\d+(?:\.(?:\d+\w*|[xX]))+(?:-[.\w-]*)?|[A-Za-z](?:\.[A-Za-z])+", re.ASCII
)
# 4. URLs, kept whole up to whitespace, quote, "<", ">" or ")".
URL_RE = re.compile(r"""https?://[^\s"'`<>)]+""")
# 5. @mentions: >= 2 word chars starting with a letter or underscore; the entity is the name without "@".
MENTION_RE = re.compile(r"@([A-Za-z_]\w+)", re.ASCII)
# 6. Text inside Chinese title marks 《…》 or corner brackets 「…」.
BRACKETED_RE = re.compile(r"《([^》]+)》|「([^」]+)」")
# 7./8. ASCII-alphanumeric words, case kept (underscore and hyphen split words).
ASCII_WORD_RE = re.compile(r"[A-Za-z0-9]+")
# 8. Capitalized tokens for the known-entity path.
CAPITALIZED_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z][a-zA-Z0-9]+")


def _regex_hits(text: str) -> Iterable[str]:
    """Paths 1-6 in order, before stopword filtering and dedup."""
    for m in CAMEL_CASE_RE.finditer(text):
        yield m.group()
    for m in ALL_CAPS_RE.finditer(text):
        yield m.group()
    if "." in text:
        for m in FILE_PATH_RE.finditer(text):
            if not VERSION_RE.fullmatch(m.group()):
                yield m.group()
    if "://" in text:
        for m in URL_RE.finditer(text):
            yield m.group()
    if "@" in text:
        for m in MENTION_RE.finditer(text):
            yield m.group(1)
    if "《" in text or "「" in text:
        for m in BRACKETED_RE.finditer(text):
            inner = (m.group(1) or m.group(2)).strip()
            if inner:
                yield inner


def _base_entities(text: str, words: list[str]) -> list[str]:
    """Paths 1-7, deduplicated by exact string in first-occurrence order, acronym stopwords dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for hit in _regex_hits(text):
        if hit not in seen and hit not in ACRONYM_STOPWORDS and hit not in NOT_NAMES:
            seen.add(hit)
            out.append(hit)
    for w in words:
        if w in TECH_DICTIONARY and w not in seen and w not in ACRONYM_STOPWORDS:
            seen.add(w)
            out.append(w)
    return out


def _is_stopword(word: str) -> bool:
    return word in ACRONYM_STOPWORDS or word.upper() in NOT_NAMES or word.lower() in STOPWORDS


def _known_candidates(text: str, words: list[str]) -> Iterable[str]:
    """Path 8's candidates: capitalized tokens first, then every ASCII word."""
    for m in CAPITALIZED_RE.finditer(text):
        yield m.group()
    yield from words


def extract_entities(text: str, known: Collection[str] = ()) -> list[str]:
    """Entities of `text`: paths 1-7, then (only when `known` is non-empty) the known-entity path.

    `known` should be a set: each candidate word is probed with `in`, exact case.
    """
    words = ASCII_WORD_RE.findall(text)
    out = _base_entities(text, words)
    if not known:
        return out
    seen = set(out)
    for w in _known_candidates(text, words):
        if w in seen or w not in known or _is_stopword(w):
            continue
        seen.add(w)
        out.append(w)
    return out


def _dedup_nonempty(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for e in items:
        if not e or not e.strip() or e in seen:
            continue
        seen.add(e)
        out.append(e)
    return out


def resolve_entities(
    text: str, provided: Sequence[str], mode: EntityMode | str, known: Collection[str] = ()
) -> list[str]:
    """Combine `--entities` with extraction as `--entity-mode` says (§3.5).

    merge: provided first, then extracted; provided: only provided; auto: only extracted. Deduplicated by
    exact string, empty (or blank) entries dropped. Extraction is skipped in `provided` mode.
    """
    try:
        m = EntityMode(mode)
    except ValueError:
        allowed = ", ".join(e.value for e in EntityMode)
        raise ValidationError(f"entity mode must be one of {allowed}, got {mode!r}", field="entity_mode") from None
    if m is EntityMode.provided:
        return _dedup_nonempty(provided)
    extracted = extract_entities(text, known)
    if m is EntityMode.auto:
        return extracted
    return _dedup_nonempty([*provided, *extracted])


def query_entities(text: str, known: Collection[str] = ()) -> list[str]:
    """Entities of a recall query, spelled as stored.

    The same paths as `extract_entities`, but the known-entity path matches case-insensitively ("qdrant"
    finds stored "Qdrant") and any hit that case-insensitively equals a known entity takes the stored
    spelling; the result is deduplicated case-insensitively. When two stored spellings differ only in
    case, an exact match wins, otherwise the lexicographically smallest (so the answer does not depend on
    set order). Builds a lower-case index of `known` once per call: O(|known|), fine for queries.
    """
    words = ASCII_WORD_RE.findall(text)
    base = _base_entities(text, words)
    lowered: dict[str, str] = {}
    for k in known:
        key = k.lower()
        prev = lowered.get(key)
        if prev is None or k < prev:
            lowered[key] = k

    def stored(word: str) -> str | None:
        if word in known:
            return word
        return lowered.get(word.lower())

    out: list[str] = []
    seen: set[str] = set()

    def add(entity: str) -> None:
        key = entity.lower()
        if key not in seen:
            seen.add(key)
            out.append(entity)

    for e in base:
        add(stored(e) or e)
    if lowered:
        for w in _known_candidates(text, words):
            s = stored(w)
            if s is None or _is_stopword(w) or _is_stopword(s):
                continue
            add(s)
    return out
