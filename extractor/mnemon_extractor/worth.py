"""What is worth remembering: the checks an extracted insight and edge pass before they reach the draft.

A model held to a JSON schema fills it with whatever it has: a small one turns a greeting ("Morning"), a
sign-off ("Good luck with the launch") or half a sentence ("because of the Typst port") into an insight, and
links one insight to all the others with reasons about something else. Such items pass every limit of the
draft format; these rules drop them, and the extractor reports each one it dropped.

- `fact_free(content)`: fewer than `MIN_FACT_WORDS` words that say something, once stopwords and the words
  of chat talk (greetings, thanks, sign-offs, "quick context", "last thing") are set aside; a short
  fragment that starts with a connective ("because of …", "and then …"); or a lone question (the 0.5B model
  copied "Dana Reyes wants a cron entry for it?" out of a chat).
- `names_an_end(reason, a, b)`: an edge's reason must share a word (stemmed) with at least one of its ends;
  "these are related" says nothing a reader can check. The judge asks more of its links' reasons
  (`ends_named`: a word of each end that the other end lacks; `restates`: not a memory's content written
  back); both take the judge's own view of a text's words (`words`).
- `hubs(edges, n)`: an insight linked to at least `HUB_MIN_EDGES` others and to at least `HUB_SHARE` of the
  answer's other insights is linked to everything: its edges say nothing about any one of them.
- `chain(edges)`: at least `CHAIN_MIN_EDGES` edges, most of the answer's, that each link an insight to the
  one a fixed step further on in the answer (the next, or every second): the model linked by position, not
  by meaning (seen from both local models).
- `copied(content)`: the insight is one of the prompt's own example (the model extracted nothing).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from mnemon_core.text import jaccard, terms, token_set, tokenize

from .prompts import EXAMPLE_ANSWER

MIN_FACT_WORDS = 3  # words that carry content; "Maya prefers Vim" has three
FRAGMENT_WORDS = 6  # a connective-led piece this short is half a sentence
HUB_MIN_EDGES = 5
HUB_SHARE = 0.5
CHAIN_MIN_EDGES = 4
CHAIN_SHARE = 0.75
COPIED_JACCARD = 0.8  # token overlap with an insight of the prompt's example
# A reason restates a memory when all its words are that memory's and they are at least this share of them
# (the 1.5B judge wrote a memory's content back word for word as its reason).
RESTATED_SHARE = 0.8
CONTAINED_SHARE = 0.5  # of an end's words the other end has too: then any of its words names it (`ends_named`)
# Words of chat talk: they make up greetings, thanks, sign-offs and remarks about the conversation itself.
CHAT_WORDS = frozenset("""
    hi hello hey morning evening afternoon night good great nice thanks thank thx cheers bye goodbye luck
    welcome ok okay sure yes yeah yep got noted quick last thing things another topic context chat
    conversation question questions answer please well anyway btw here now today one new first next lot
    much soon later information info
    because since therefore however although though while due also again still already
""".split())
CONNECTIVES = ("because", "since", "so", "and", "but", "or", "then", "due", "as", "which", "that", "while",
               "although", "though", "after", "before", "with", "without", "for", "of", "from", "to")
# Words a reason uses about any relation; they name neither end.
RELATION_WORDS = frozenset(terms("""
    relation related relates relationship link linked links connection connected connects both same topic
    cause causes caused led leads lead result results resulted because reason insight insights memory
    memories item items one other first second another mention mentioned mentions context
"""))
_NUMBER = re.compile(r"\d+")
_QUESTION = re.compile(r"[^.!?]*\?+", re.DOTALL)  # one sentence, and it asks


def fact_words(content: str) -> list[str]:
    """The words of `content` that say something: no stopwords, no chat talk; a run of numbers (a date, a
    version) counts once."""
    out: list[str] = []
    number = False
    for t in tokenize(content):
        if _NUMBER.fullmatch(t):
            if not number:
                out.append(t)
            number = True
            continue
        number = False
        if t not in CHAT_WORDS:
            out.append(t)
    return out


def fact_free(content: str) -> tuple[str, str] | None:
    """(rule, why) when `content` carries no fact of the chat: rule "fragment", "no-fact" or "example"; None
    when it may."""
    if copied(content):
        return "example", "copied from the prompt's example"
    words = re.findall(r"\w+", content.casefold())
    if words and words[0] in CONNECTIVES and len(words) <= FRAGMENT_WORDS:
        return "fragment", f'a fragment: starts with "{words[0]}" and has {len(words)} words'
    if _QUESTION.fullmatch(content.strip()):  # a message copied whole: asks, states nothing
        return "question", "a question, not a fact"
    n = len(fact_words(content))
    if n < MIN_FACT_WORDS:
        return "no-fact", f"no fact: {n} content word{'s' if n != 1 else ''} (at least {MIN_FACT_WORDS})"
    return None


Words = Callable[[str], set[str]]  # a text's words, as a rule sees them


def _named(text: str) -> set[str]:
    return {t for t in terms(text) if not _NUMBER.fullmatch(t)}


def names_an_end(reason: str | None, source: str, target: str, words: Words = _named) -> bool:
    """Whether the reason shares a word with one end (its content and entities as given)."""
    said = words(reason or "") - RELATION_WORDS
    return bool(said & (words(source) | words(target)))


def ends_named(reason: str | None, source: str, target: str, words: Words = _named) -> tuple[bool, bool]:
    """Whether the reason names (source, target), each by a word of its own: one that the other end lacks (a
    word both share, "invoice" of two invoicing facts, names neither). An end whose words the other mostly has
    too (at least `CONTAINED_SHARE` of them: a cause that the decision it led to states again) is named by any
    of its words."""
    said = words(reason or "") - RELATION_WORDS
    s, t = words(source), words(target)

    def own(end: set[str], other: set[str]) -> set[str]:
        return end if len(end & other) >= CONTAINED_SHARE * len(end) else end - other

    return bool(said & own(s, t)), bool(said & own(t, s))


def restates(reason: str | None, content: str, words: Words = _named) -> bool:
    """Whether the reason is `content` written back: no word of its own, and at least `RESTATED_SHARE` of the
    content's words."""
    said, own = words(reason or "") - RELATION_WORDS, words(content) - RELATION_WORDS
    return bool(said) and said <= own and len(said) >= RESTATED_SHARE * len(own)


def hubs(edges: Iterable[tuple[int, int]], insights: int) -> set[int]:
    """The insights of an answer (`insights` of them) linked to everything, by the (source, target) pairs."""
    links: dict[int, set[int]] = {}
    for s, t in edges:
        links.setdefault(s, set()).add(t)
        links.setdefault(t, set()).add(s)
    others = max(insights - 1, 1)
    return {i for i, ends in links.items() if len(ends) >= HUB_MIN_EDGES and len(ends) >= HUB_SHARE * others}


def chain(edges: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
    """The edges that link each insight to the one a fixed step further on, when they are most of the answer's
    edges: the next one, or every second (Qwen2.5-Coder 1.5B wrote 0 → 2, 1 → 3, … 16 → 18 over 6 insights,
    one reason copied into all, until its answer was cut off)."""
    steps = Counter(t - s for s, t in edges if s >= 0 and t > s)
    for step, n in steps.most_common(1):
        if n >= CHAIN_MIN_EDGES and n >= CHAIN_SHARE * len(edges):
            return {(s, t) for s, t in edges if s >= 0 and t == s + step}
    return set()


_EXAMPLE = [token_set(i["content"]) for i in EXAMPLE_ANSWER["insights"]]


def copied(content: str) -> bool:
    """Whether `content` is (nearly) an insight of the prompt's example."""
    toks = token_set(content)
    return any(jaccard(toks, ex) >= COPIED_JACCARD for ex in _EXAMPLE)


def counts(rules: Sequence[str]) -> dict[str, int]:
    """Dropped items per rule, most frequent first (ties by name)."""
    return dict(sorted(Counter(rules).items(), key=lambda kv: (-kv[1], kv[0])))
