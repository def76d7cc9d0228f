"""Recall step 1: intent detection (spec §5.2 Step 1, reference §4.1).

Two layers of bounded lexical cues, not language understanding:

* **Baseline EN/ZH** (kept exactly): on the lower-cased query, count the cue matches of each intent; WHY if
  why > when and why > entity, else WHEN if when > why and when > entity, else ENTITY if any entity cue,
  else GENERAL ("what is the reason" → ENTITY, "why … when …" → GENERAL). English cues must stand on Unicode
  word boundaries; Chinese cues (simplified and traditional) match as substrings.
* **Additional languages** ([L] PR #138): question forms in Hindi, Spanish, Arabic, French, Bengali,
  Portuguese, Indonesian, Russian and German. No language identification: every cue that fires votes. If they
  disagree among themselves, or any EN/ZH cue of another intent fired, the answer is GENERAL; otherwise their
  common intent wins over the baseline count. Quoted and code spans are ignored for these cues.

Word boundaries treat letters, combining marks, digits, `_`, ZWJ and ZWNJ as word characters (Python's `\\w`
lacks the marks, which end many Devanagari/Bengali words), so "कब्ज" does not contain "कब" and "causeway"
does not contain "cause".
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterator

from mnemon_core.errors import ValidationError
from mnemon_core.models import Intent

__all__ = ["detect_intent", "parse_intent"]

# --- Baseline cues (reference §4.1), English word-bounded, Chinese as substrings --------------------------
# zh-Hant forms sit with the simplified ones so traditional text is scored by the same counting rule.
WHY_CUES_EN = ("why", "reason", "because", "cause", "motivation", "rationale")
WHY_CUES_ZH = ("为什么", "為什麼", "為甚麼", "原因", "理由")
WHEN_CUES_EN = ("when", "time", "date", "before", "after", "during", "timeline", "history", "sequence")
WHEN_CUES_ZH = ("什么时候", "什麼時候", "甚麼時候", "何时", "何時", "时间", "時間", "之前", "之后", "之後")
ENTITY_CUES_EN = ("what is", "who is", "tell me about", "describe", "about")
ENTITY_CUES_ZH = ("是什么", "是什麼", "是甚麼", "谁是", "誰是", "关于", "關於", "介绍", "介紹")

# --- Additional-language cues ([L] PR #138): regex fragments, matched on NFC, lower-cased text -------------
# A space inside a fragment means "one or more spaces of any kind". Keep these to question forms: generic
# words ("time", "about") in translation would fire on ordinary statements.
MULTILINGUAL_CUES: dict[str, dict[Intent, tuple[str, ...]]] = {
    "hi": {  # bare क्या also opens yes/no questions, so ENTITY needs the copula right after it
        Intent.WHY: ("क्यों", "क्यूँ", "क्यूं", "किसलिए", "किस लिए"),
        Intent.WHEN: ("कब", "किस समय"),
        Intent.ENTITY: (
            "(?:क्या|कौन) (?:है|हैं)",
            "क्या (?:होता|होती|होते) (?:है|हैं)",
            "किसे कहते (?:है|हैं)",
        ),
    },
    "es": {  # "¿Por qué es …?" must stay WHY: the leftmost match consumes "qué"
        Intent.WHY: ("por qué",),
        Intent.WHEN: ("cuándo", "en qué momento"),
        Intent.ENTITY: ("qué (?:es|son)", "quién es", "quiénes son"),
    },
    "ar": {  # harakat and tatweel are stripped first; و/ف ("and", "so") attach to the word
        Intent.WHY: ("[وف]?لماذا",),
        Intent.WHEN: ("[وف]?متى",),
        Intent.ENTITY: ("(?:ما|من) (?:هو|هي)", "ما معنى"),
    },
    "fr": {  # elided "qu'" consumes the next word so the boundary check sees a word end
        Intent.WHY: ("pourquoi",),
        Intent.WHEN: ("quand", "à quel moment"),
        Intent.ENTITY: ("qu['’]est(?:-| )ce (?:que|qu['’]\\w+)", "qui (?:est|sont)", "c['’]est quoi"),
    },
    "bn": {  # কী/কি/কে ask "what/who" only at the end; mid-sentence কি marks a yes/no question
        Intent.WHY: ("কেন", "(?:কী|কি) কারণে"),
        Intent.WHEN: ("কখন", "কবে"),
        Intent.ENTITY: ("(?:কী|কি|কে)\\s*[?？]?\\Z",),
    },
    "pt": {
        Intent.WHY: ("por que", "por quê", "porquê"),
        Intent.WHEN: ("quando",),
        Intent.ENTITY: ("o que (?:é|são)", "quem (?:é|são)"),
    },
    "id": {  # apakah is a yes/no marker, not a cue
        Intent.WHY: ("mengapa", "kenapa"),
        Intent.WHEN: ("kapan",),
        Intent.ENTITY: ("apa itu", "siapa", "apa yang dimaksud"),
    },
    "ru": {
        Intent.WHY: ("почему", "зачем", "отчего"),
        Intent.WHEN: ("когда",),
        Intent.ENTITY: ("что такое", "кто (?:такой|такая|такие)"),
    },
    "de": {
        Intent.WHY: ("warum", "wieso", "weshalb", "weswegen"),
        Intent.WHEN: ("wann",),
        Intent.ENTITY: ("(?:was|wer) (?:ist|sind)", "was bedeutet"),
    },
}

_SCORED = (Intent.WHY, Intent.WHEN, Intent.ENTITY)
_GROUP_INTENT = {intent.lower(): intent for intent in _SCORED}

_JOINERS = "_\u200c\u200d"  # underscore, ZWNJ, ZWJ keep a word together


def _bmp_mark_ranges() -> str:
    """Character-class ranges of every combining mark (M*) in the BMP; built once at import (~4 ms)."""
    ranges: list[str] = []
    start = prev = -2
    for code in range(0x10000):
        if unicodedata.category(chr(code))[0] != "M":
            continue
        if code != prev + 1:
            if start >= 0:
                ranges.append(f"\\u{start:04x}-\\u{prev:04x}")
            start = code
        prev = code
    ranges.append(f"\\u{start:04x}-\\u{prev:04x}")
    return "".join(ranges)


# `\w` is letters, digits and `_`; combining marks and joiners must also count as inside a word, or a cue
# would end in the middle of "कब्ज" or "তাকে". Putting them in the lookarounds lets the regex engine itself
# backtrack to another alternative ("हैं" after "है" was refused).
_WORD_CLASS = "\\w" + _JOINERS + _bmp_mark_ranges()
_NOT_AFTER_WORD = f"(?<![{_WORD_CLASS}])"
_NOT_BEFORE_WORD = f"(?![{_WORD_CLASS}])"


def _is_word_char(ch: str) -> bool:
    return ch in _JOINERS or unicodedata.category(ch)[0] in "LMN"


def _bounded(text: str, start: int, end: int) -> bool:
    """A `\\b` on both sides that knows every mark (backstop: the lookarounds know BMP marks only)."""
    if start > 0 and _is_word_char(text[start - 1]) and _is_word_char(text[start]):
        return False
    if end < len(text) and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
        return False
    return True


def _alternation(fragments: tuple[str, ...] | list[str]) -> str:
    # Longest first, so "timeline" is tried before "time" at the same position.
    return "|".join(sorted(fragments, key=len, reverse=True))


def _intent_groups(cues: dict[Intent, tuple[str, ...]], fragment: Callable[[str], str]) -> re.Pattern[str]:
    """One bounded regex with a named group per intent, so a single scan serves all intents.

    Leftmost match first, non-overlapping: in "¿Por qué es …?" WHY takes "qué" and "qué es" cannot fire.
    """
    groups = "|".join(
        f"(?P<{intent.lower()}>{_alternation([fragment(f) for f in fragments])})"
        for intent, fragments in cues.items()
    )
    return re.compile(f"{_NOT_AFTER_WORD}(?:{groups}){_NOT_BEFORE_WORD}")


# English cues of different intents never overlap, so one scan counts exactly what three separate ones would.
_LEGACY_EN = _intent_groups(
    {Intent.WHY: WHY_CUES_EN, Intent.WHEN: WHEN_CUES_EN, Intent.ENTITY: ENTITY_CUES_EN}, re.escape
)
_LEGACY_ZH = {
    Intent.WHY: re.compile(_alternation(WHY_CUES_ZH)),
    Intent.WHEN: re.compile(_alternation(WHEN_CUES_ZH)),
    Intent.ENTITY: re.compile(_alternation(ENTITY_CUES_ZH)),
}
# All additional languages in one scan; a space in a fragment stands for any run of whitespace.
_MULTI = _intent_groups(
    {intent: tuple(f for lang in MULTILINGUAL_CUES.values() for f in lang[intent]) for intent in _SCORED},
    lambda f: f.replace(" ", r"\s+"),
)

# Arabic harakat (U+064B–U+065F), superscript alef (U+0670) and tatweel (U+0640): decoration, not letters.
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670\u0640]")
# Quoted or code spans name things ("the `wann` flag"); they do not ask. A single quote opens a span only
# when no word character precedes it, so the apostrophes of "qu'est-ce" and "l'index" are left alone.
_QUOTED = re.compile("\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|`[^`]*`|(?<!\\w)'[^']*'")


def _bounded_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Non-overlapping matches that pass `_bounded`; a refused match is retried one character later, so a
    rejected compound does not hide a cue that starts inside it ("retell me about" still yields "about")."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        start, end = m.span()
        if _bounded(text, start, end):
            yield m
            pos = end
        else:
            pos = start + 1


def _legacy_scores(lowered: str) -> dict[Intent, int]:
    scores = {intent: len(pattern.findall(lowered)) for intent, pattern in _LEGACY_ZH.items()}
    for m in _bounded_matches(_LEGACY_EN, lowered):
        scores[_GROUP_INTENT[m.lastgroup or ""]] += 1
    return scores


def _multilingual_intents(query: str) -> set[Intent]:
    """Intents voted by the additional-language cues (empty when none fired)."""
    if not query.isascii():
        query = _ARABIC_MARKS.sub("", unicodedata.normalize("NFC", query))
    text = _QUOTED.sub(" ", query.lower()).strip()
    return {_GROUP_INTENT[m.lastgroup or ""] for m in _bounded_matches(_MULTI, text)}


def detect_intent(query: str) -> Intent:
    """The recall intent of `query` by the spec's cue lists (see the module docstring for the rules)."""
    scores = _legacy_scores(query.lower())
    voted = _multilingual_intents(query)
    if voted:
        if len(voted) > 1:
            return Intent.GENERAL
        (intent,) = voted
        # A cue in another language must not override an EN/ZH cue that asks something else, even when
        # that EN/ZH intent would lose the baseline count.
        if any(score > 0 and other != intent for other, score in scores.items()):
            return Intent.GENERAL
        return intent
    why, when, entity = scores[Intent.WHY], scores[Intent.WHEN], scores[Intent.ENTITY]
    if why > when and why > entity:
        return Intent.WHY
    if when > why and when > entity:
        return Intent.WHEN
    if entity > 0:
        return Intent.ENTITY
    return Intent.GENERAL


def parse_intent(value: str) -> Intent:
    """`--intent` value → Intent: trimmed, case-insensitive; anything else is a ValidationError."""
    try:
        return Intent(value.strip().upper())
    except ValueError:
        # The original quotes the raw value Go-style (%q); JSON string quoting matches it for printable text.
        quoted = json.dumps(value, ensure_ascii=False)
        raise ValidationError(
            f"unknown intent {quoted}; valid: WHY, WHEN, ENTITY, GENERAL", field="intent"
        ) from None
