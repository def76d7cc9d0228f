"""The time a query names (`recall/when.py`): "last Saturday", "a week ago", "in the past month" read against when
the query is asked, and the `hybrid` recipe's factor for what was said inside that window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemon_core import Memory
from mnemon_core.errors import ValidationError
from mnemon_core.models import Insight
from mnemon_core.recall.config import HYBRID, SPEC
from mnemon_core.recall.constants import TIME_WINDOW_FACTOR
from mnemon_core.recall.intent import detect_intent
from mnemon_core.recall.pipeline import scope_of, smart_recall
from mnemon_core.recall.when import asked_time, named_window
from mnemon_core.text import tokens_of
from mnemon_core.timeutil import iso

NOW = datetime(2023, 4, 22, 8, 0, tzinfo=UTC)  # a Saturday
D = timedelta(days=1)


@pytest.mark.parametrize(("query", "window"), [
    # a point in the past: ± half its distance, at least a day
    ("What did I cook a couple of days ago?", (NOW - 3 * D, NOW - D)),
    ("Where was the event two weeks ago?", (NOW - 21 * D, NOW - 7 * D)),
    ("Which shoes did I clean last month?", (NOW - 45 * D, NOW - 15 * D)),
    ("Where did I pray last week?", (NOW - 10.5 * D, NOW - 3.5 * D)),
    ("what happened 3 days ago", (NOW - 4.5 * D, NOW - 1.5 * D)),
    # a weekday: the latest before today (today is Saturday: the Saturday before), a day either side
    ("Who came to the concert last Saturday?", (datetime(2023, 4, 14, tzinfo=UTC), datetime(2023, 4, 17, tzinfo=UTC))),
    ("What did I buy last Friday?", (datetime(2023, 4, 20, tzinfo=UTC), datetime(2023, 4, 23, tzinfo=UTC))),
    ("Where did we hike last weekend?", (datetime(2023, 4, 14, tzinfo=UTC), datetime(2023, 4, 18, tzinfo=UTC))),
    # a span up to now
    ("How many events did I attend in the past month?", (NOW - 30 * D, NOW + D)),
    ("cuisines I tried in the past few months", (NOW - 90 * D, NOW + D)),
    ("the last three weeks of runs", (NOW - 21 * D, NOW + D)),
    ("What did I read this week?", (NOW - 7 * D, NOW + D)),
    ("What did I say yesterday?", (NOW - 2 * D, NOW)),
    # the first named counts
    ("What did I plan yesterday for next month, a week ago?", (NOW - 2 * D, NOW)),
])
def test_named_window(query: str, window: tuple[datetime, datetime]) -> None:
    assert named_window(query, NOW) == window


@pytest.mark.parametrize("query", [
    "Which database did we pick?", "What did I do in May?", "the last time we met", "a few notes on the past",
    "How many days did the trip last?", "the week's plan",
])
def test_no_window(query: str) -> None:
    assert named_window(query, NOW) is None


WORDS = ["last", "past", "this", "a", "couple", "of", "few", "two", "12", "days", "week", "weekend", "months", "year",
         "ago", "saturday", "Sunday", "yesterday", "today", "in", "the", "what", "did", "I", "do", "?"]


@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)),
       st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
def test_any_text_reads_to_a_window_or_none(query: str, now: datetime) -> None:
    window = named_window(query, now)
    assert window is None or window[0] < window[1] <= now + 2 * D


@pytest.mark.parametrize(("now", "saturday"), [
    (datetime(2023, 4, 23, 8, tzinfo=UTC), datetime(2023, 4, 15, tzinfo=UTC)),  # a Sunday: the weekend before
    (datetime(2023, 4, 24, 8, tzinfo=UTC), datetime(2023, 4, 22, tzinfo=UTC)),  # a Monday: the one just past
])
def test_last_weekend(now: datetime, saturday: datetime) -> None:
    assert named_window("what did we do last weekend", now) == (saturday - D, saturday + 3 * D)


def test_asked_time() -> None:
    assert asked_time(datetime(2023, 4, 22, 8, 0)) == NOW  # naive: UTC
    assert asked_time(datetime(2023, 4, 22, 10, 0, tzinfo=timezone(timedelta(hours=2)))) == NOW
    assert abs(asked_time(None) - datetime.now(UTC)) < timedelta(minutes=1)


@given(st.one_of(st.text(), st.integers(), st.floats(), st.dates()))
def test_asked_at_must_be_a_datetime(value: object) -> None:
    if isinstance(value, datetime):
        return
    with pytest.raises(ValidationError, match="asked_at must be a datetime") as err:
        asked_time(value)  # type: ignore[arg-type]
    assert err.value.field == "asked_at"


def _said(mem: Memory, id_: str, content: str, when: datetime) -> None:
    at = iso(when.timestamp())
    ins = Insight(id=id_, content=content, category="general", importance=3, tags=[], entities=[],
                  source="user", created_at=at, updated_at=at, stored_at=at)
    with mem.store.transaction():
        mem.store.insert_insight(ins, tokens_of(content, ins.tags, ins.entities))


def test_what_was_said_inside_the_window_goes_first(mem: Memory) -> None:
    # Two visits to the temple, one said a week before the question, one a month before; the older one's words
    # match the query better. Asked "last week" on the question's day, the one said then goes first; asked
    # without a time, or with the factor off, the better match stays first.
    _said(mem, "old", "I went to the temple with my parents, the temple by the river", NOW - 30 * D)
    _said(mem, "new", "Sunday I went to the temple with Ana", NOW - 7 * D)
    for i in range(6):
        _said(mem, f"x{i}", f"unrelated note {i} about gardening", NOW - (40 + i) * D)
    query = "Who did I go to the temple with last week?"
    assert HYBRID.time_window_factor == TIME_WINDOW_FACTOR > 1 and SPEC.time_window_factor == 1.0
    assert [h.insight.id for h in mem.retrieve(query, limit=2, asked_at=NOW).results] == ["new", "old"]
    assert [h.insight.id for h in mem.retrieve("Who did I go to the temple with?", limit=2, asked_at=NOW).results] == [
        "old", "new"]
    assert [h.insight.id for h in mem.retrieve(query, limit=2).results] == ["old", "new"]  # now: 2026, nothing then
    off = HYBRID.model_copy(update={"time_window_factor": 1.0})
    found = smart_recall(mem.store, query, intent=detect_intent(query), intent_source="auto", limit=2,
                         scope=scope_of(None, None), config=off, asked_at=NOW)
    assert [r.id for r in found.results] == ["old", "new"]


def test_a_bad_asked_at_is_refused_before_anything_is_read(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="asked_at must be a datetime, not str"):
        mem.recall("temple", asked_at="2023-04-22")  # type: ignore[arg-type]
