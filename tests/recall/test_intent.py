"""Recall intent detection: spec §5.2 Step 1, reference §4.1 (baseline EN/ZH and the [L] languages)."""

from __future__ import annotations


import pytest

from mnemon_core.errors import ValidationError
from mnemon_core.models import Intent
from mnemon_core.recall.intent import detect_intent, parse_intent

WHY, WHEN, ENTITY, GENERAL = Intent.WHY, Intent.WHEN, Intent.ENTITY, Intent.GENERAL

# (language, query, expected): a few WHY / WHEN / ENTITY questions per language.
QUESTIONS = [
    # English (baseline)
    ("en", "Why did we choose PostgreSQL?", WHY),
    ("en", "the reason we chose Go because of motivation", WHY),
    ("en", "rationale for the cache", WHY),
    ("en", "When did we choose PostgreSQL?", WHEN),
    ("en", "what happened before the release", WHEN),
    ("en", "timeline of deploys", WHEN),
    ("en", "history and sequence of the migration, during the outage", WHEN),
    ("en", "What is PostgreSQL?", ENTITY),
    ("en", "who is responsible for the API", ENTITY),
    ("en", "tell me about the graph engine", ENTITY),
    ("en", "describe Qdrant", ENTITY),
    # simplified Chinese (baseline)
    ("zh", "我们为什么选择 PostgreSQL？", WHY),
    ("zh", "选择这个方案的理由", WHY),
    ("zh", "我们什么时候选择了 PostgreSQL？", WHEN),
    ("zh", "发布之后做了什么", WHEN),
    ("zh", "PostgreSQL 是什么？", ENTITY),
    ("zh", "介绍一下图引擎", ENTITY),
    # traditional Chinese
    ("zh-Hant", "我們為什麼選擇 PostgreSQL？", WHY),
    ("zh-Hant", "我們為甚麼選擇 PostgreSQL？", WHY),
    ("zh-Hant", "我們什麼時候選擇 PostgreSQL？", WHEN),
    ("zh-Hant", "何時修改 PostgreSQL？", WHEN),
    ("zh-Hant", "PostgreSQL 是什麼？", ENTITY),
    ("zh-Hant", "介紹 PostgreSQL", ENTITY),
    # Hindi
    ("hi", "हमने PostgreSQL क्यों चुना?", WHY),
    ("hi", "हमने PostgreSQL क्यूँ चुना?", WHY),
    ("hi", "PostgreSQL किसलिए?", WHY),
    ("hi", "हमने PostgreSQL कब चुना?", WHEN),
    ("hi", "माइग्रेशन किस समय हुआ?", WHEN),
    ("hi", "PostgreSQL क्या है?", ENTITY),
    ("hi", "वह कौन हैं?", ENTITY),
    ("hi", "डेटाबेस क्या होता है?", ENTITY),
    # Spanish
    ("es", "¿Por qué elegimos PostgreSQL?", WHY),
    ("es", "¿POR QUÉ PostgreSQL?", WHY),
    ("es", "¿Por qué es lento el índice?", WHY),  # "qué es" inside "por qué es" is not ENTITY
    ("es", "¿Por que\u0301 PostgreSQL?", WHY),  # decomposed accent
    ("es", "¿Cuándo elegimos PostgreSQL?", WHEN),
    ("es", "¿Desde cuándo usamos Redis?", WHEN),
    ("es", "¿Cua\u0301ndo migramos?", WHEN),
    ("es", "¿Qué es PostgreSQL?", ENTITY),
    ("es", "¿Quién es Ana?", ENTITY),
    ("es", "¿Que\u0301\u00a0es\tPostgreSQL?", ENTITY),
    # Modern Standard Arabic
    ("ar", "لماذا اخترنا PostgreSQL؟", WHY),
    ("ar", "لِمَاذَا اخترنا PostgreSQL؟", WHY),  # harakat
    ("ar", "لـماذا PostgreSQL؟", WHY),  # tatweel
    ("ar", "متى اخترنا PostgreSQL؟", WHEN),
    ("ar", "مَتَى اخترنا PostgreSQL؟", WHEN),
    ("ar", "ما هو PostgreSQL؟", ENTITY),
    ("ar", "ما هِيَ قاعدة البيانات؟", ENTITY),
    ("ar", "من هو أحمد؟", ENTITY),
    # French
    ("fr", "Pourquoi avons-nous choisi PostgreSQL ?", WHY),
    ("fr", "POURQUOI ce choix ?", WHY),
    ("fr", "Quand avons-nous choisi PostgreSQL ?", WHEN),
    ("fr", "Depuis quand utilisons-nous Redis ?", WHEN),
    ("fr", "Qu'est-ce que PostgreSQL ?", ENTITY),
    ("fr", "Qu’est-ce qu’un index ?", ENTITY),
    ("fr", "Qu'est ce que PostgreSQL ?", ENTITY),
    ("fr", "C’est quoi PostgreSQL ?", ENTITY),
    ("fr", "Qui est Alice ?", ENTITY),
    ("fr", "Qu'est-ce que 'quand' dans PostgreSQL ?", ENTITY),  # quoted cue ignored, apostrophes kept
    # Bengali
    ("bn", "আমরা PostgreSQL কেন বেছে নিয়েছি?", WHY),
    ("bn", "PostgreSQL কী কারণে ধীর?", WHY),
    ("bn", "আমরা কখন PostgreSQL বেছে নিয়েছি?", WHEN),
    ("bn", "PostgreSQL কবে?", WHEN),
    ("bn", "PostgreSQL কী?", ENTITY),
    ("bn", "PostgreSQL কি? ", ENTITY),
    ("bn", "রহিম কে?", ENTITY),
    # Portuguese
    ("pt", "Por que escolhemos PostgreSQL?", WHY),
    ("pt", "PostgreSQL por quê?", WHY),
    ("pt", "PostgreSQL por que\u0302?", WHY),
    ("pt", "Quando escolhemos PostgreSQL?", WHEN),
    ("pt", "O que é PostgreSQL?", ENTITY),
    ("pt", "O que e\u0301 PostgreSQL?", ENTITY),
    ("pt", "Quem é Maria?", ENTITY),
    # Indonesian
    ("id", "Mengapa kita memilih PostgreSQL?", WHY),
    ("id", "Kenapa PostgreSQL?", WHY),
    ("id", "Kapan kita memilih PostgreSQL?", WHEN),
    ("id", "Sejak kapan kita memakai Redis?", WHEN),
    ("id", "Apa itu PostgreSQL?", ENTITY),
    ("id", "Siapa itu Alice?", ENTITY),
    ("id", "Siapa yang menulis modul ini?", ENTITY),
    # Russian
    ("ru", "Почему выбрали PostgreSQL?", WHY),
    ("ru", "ПОЧЕМУ PostgreSQL?", WHY),
    ("ru", "Зачем нам Redis?", WHY),
    ("ru", "Когда выбрали PostgreSQL?", WHEN),
    ("ru", "Что такое PostgreSQL?", ENTITY),
    ("ru", "Кто такая Алиса?", ENTITY),
    # German (capitalised, lower-cased before matching)
    ("de", "Warum haben wir PostgreSQL gewählt?", WHY),
    ("de", "Wieso PostgreSQL?", WHY),
    ("de", "Weshalb PostgreSQL?", WHY),
    ("de", "Wann haben wir PostgreSQL gewählt?", WHEN),
    ("de", "Seit wann nutzen wir Redis?", WHEN),
    ("de", "Was ist PostgreSQL?", ENTITY),
    ("de", "Wer ist Alice?", ENTITY),
    ("de", "Was sind Embeddings?", ENTITY),
]


@pytest.mark.parametrize(("lang", "query", "want"), QUESTIONS, ids=[f"{q[0]}-{i}" for i, q in enumerate(QUESTIONS)])
def test_questions(lang: str, query: str, want: Intent) -> None:
    assert detect_intent(query) is want


def test_every_language_has_why_when_entity() -> None:
    seen: dict[str, set[Intent]] = {}
    for lang, _, want in QUESTIONS:
        seen.setdefault(lang, set()).add(want)
    langs = {"en", "zh", "zh-Hant", "hi", "es", "ar", "fr", "bn", "pt", "id", "ru", "de"}
    assert set(seen) == langs
    assert all(intents == {WHY, WHEN, ENTITY} for intents in seen.values())


@pytest.mark.parametrize(
    "query",
    [
        # no cue at all, in several scripts
        "",
        "SQLite performance tuning",
        "PostgreSQL 索引调优",
        "PostgreSQL इंडेक्स सुधार",
        "Índices de PostgreSQL",
        "فهارس PostgreSQL",
        "Индексы PostgreSQL",
        "PostgreSQL Indizes",
        "PostgreSQL সূচক",
        # yes/no questions and forms outside the lists
        "क्या PostgreSQL तेज़ है?",  # bare क्या opens a yes/no question
        "क्या हमने PostgreSQL चुना?",
        "PostgreSQL কি ভালো?",  # mid-sentence কি is yes/no
        "PostgreSQL কীভাবে কাজ করে?",
        "Apakah PostgreSQL cepat?",
        "PostgreSQL kyun?",
        "لم PostgreSQL",
        # cues of different intents in the additional languages
        "¿Por qué y cuándo elegimos PostgreSQL?",
        "No por qué, sino cuándo elegimos PostgreSQL",
        "क्यों और कब PostgreSQL?",
        "Почему PostgreSQL, was ist PostgreSQL?",
        # additional-language cue against an EN/ZH cue of another intent
        "Why PostgreSQL, cuándo migramos?",
        "Pourquoi PostgreSQL, WHEN migrated?",
        "Pourquoi PostgreSQL, what is its purpose?",
        "when when when pourquoi PostgreSQL?",  # the EN count does not outvote the conflict
        "Was ist the history of PostgreSQL?",
        "Warum 什么时候?",
        # cues inside quotes or code spans
        'The "pourquoi" option',
        "The `wann` flag",
        "The “когда” command",
        "The «क्यों» token",
        "The 'kapan' flag",
        "Die „wann“ Option",
        # baseline ties without an entity cue
        "why did it happen and when",
        "why when PostgreSQL",
        "为什么 时间",
    ],
)
def test_general(query: str) -> None:
    assert detect_intent(query) is GENERAL


@pytest.mark.parametrize(
    "query",
    [
        # English cues inside longer words
        "causeway repairs",
        "somewhen the cache broke",
        "whyever not",
        "reasonable defaults",
        "timestamps and dates",
        "aftermath",
        "whence",
        "why_not flag",
        "why2",
        # Unicode boundaries: letters and marks of any script join a word
        "why中文",
        "éwhy",
        "whyé",
        "timeé",
        "describé",
        # additional-language cues inside longer words
        "екогда",
        "когдаx",
        "xकब",
        "कब्ज",  # कब followed by a virama
        "क्योंकि",  # "because", not "why"
        "কেননা",
        "xকেন",
        "তাকে?",  # কে as a suffix after a vowel sign
        "لماذات",
        "متىx",
        "kapanpun",
        "was istanbul",
        "ékapan",
        "pourquoix",
        "_kapan",
        "kapan_",
        "kapan2",
        "kapan\u0301",  # combining mark after the cue
        "\u0301kapan",
        "कब\u200d",  # zero-width joiner after the cue
        "\u200cকেন",
        "quandary",
        "warumbe",
    ],
)
def test_cues_need_word_boundaries(query: str) -> None:
    assert detect_intent(query) is GENERAL


@pytest.mark.parametrize(
    ("query", "want"),
    [
        # baseline counting and its ENTITY tie rule
        ("what is the reason", ENTITY),
        ("What is the reason for PostgreSQL?", ENTITY),
        ("是什么原因", ENTITY),
        ("why why when PostgreSQL", WHY),
        ("when when why", WHEN),
        ("为什么为什么什么时候 PostgreSQL", WHY),
        ("why why tell me about PostgreSQL", WHY),  # "tell me about" counts once, not twice
        ("why tell me about", ENTITY),
        ("Please retell me about PostgreSQL", ENTITY),  # a refused compound does not hide "about"
        ("Retell me about why we chose PostgreSQL", ENTITY),
        ("étell me about PostgreSQL", ENTITY),
        ("WHY did the BUILD fail", WHY),
        ("the timeline", WHEN),
        ("the time", WHEN),
        ("why中文 原因", WHY),  # Chinese cues are substrings even next to Latin letters
        # additional languages agreeing with each other or with EN/ZH
        ("Why PostgreSQL, pourquoi ce choix?", WHY),
        ("PostgreSQL कब चुना, when?", WHEN),
        ("Was ist PostgreSQL, 是什么?", ENTITY),
        ("Pourquoi PostgreSQL — why, 为什么?", WHY),
        ("¿Por qué no elegimos PostgreSQL? Warum?", WHY),
        ("Pourquoi et pourquoi pas ?", WHY),
        # an additional-language intent wins over a baseline tie when all EN/ZH cues agree with it
        ("Warum? why reason", WHY),
        ("Wann? 时间 when", WHEN),
        # quoted EN cues still count (quotes are ignored only for the additional languages)
        ('"why" flag', WHY),
        ("Pourquoi le flag `when` ?", GENERAL),
    ],
)
def test_combination(query: str, want: Intent) -> None:
    assert detect_intent(query) is want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("WHY", WHY),
        ("why", WHY),
        (" When ", WHEN),
        ("Entity", ENTITY),
        ("general\n", GENERAL),
        ("\tGENERAL", GENERAL),
    ],
)
def test_parse_intent(value: str, want: Intent) -> None:
    assert parse_intent(value) is want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("BOGUS", 'unknown intent "BOGUS"; valid: WHY, WHEN, ENTITY, GENERAL'),
        ("", 'unknown intent ""; valid: WHY, WHEN, ENTITY, GENERAL'),
        ("how", 'unknown intent "how"; valid: WHY, WHEN, ENTITY, GENERAL'),
        ("WHY WHEN", 'unknown intent "WHY WHEN"; valid: WHY, WHEN, ENTITY, GENERAL'),
    ],
)
def test_parse_intent_rejects(value: str, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_intent(value)
    assert str(err.value) == message
    assert err.value.field == "intent"
