"""Recall step 4, before the cut: the time a query names ("last Saturday", "a week ago", "in the past month").

"Where did I go last week?" is after what was said about a week before it is asked, and a memory's `created_at`
says when it was said. `named_window` reads the English expressions of a time relative to when the query is asked
into a window of instants; the `hybrid` recipe multiplies the score of an insight created inside it by
`RecallConfig.time_window_factor` (`window_factor`). Like the other priors it only reorders what the query's
words, meaning and neighbours brought: a memory of that week about something else stays below them.

A point in the past ("N days ago", "last Saturday") is a window around it, as wide as half its distance from now
(at least a day either side): people round ("a week ago" is six days as often as eight). A span up to now ("in
the past month", "this week", "the last few days") is the span itself. Where a query names two, the first counts.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np

from ..errors import ValidationError
from ..graph import GraphView

__all__ = ["Window", "asked_time", "named_window", "window_factor"]

Window = tuple[datetime, datetime]  # [start, end), aware or naive as the `now` it was read against

DAY = timedelta(days=1)
_UNIT = {"day": DAY, "week": 7 * DAY, "month": 30 * DAY, "year": 365 * DAY}
_COUNT = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_N = r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_U = r"(?P<unit>day|week|month|year)s?"

_AGO = re.compile(rf"\b{_N}\s+{_U}\s+ago\b", re.IGNORECASE)
_SPAN = re.compile(rf"\b(?:past|last)\s+(?:{_N}\s+)?{_U}\b", re.IGNORECASE)
_LAST = re.compile(r"\blast\s+(?P<what>week(?:end)?|month|year|" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)
_THIS = re.compile(r"\bthis\s+(?P<unit>week|month|year)\b", re.IGNORECASE)
_DAY = re.compile(r"\b(?P<what>yesterday|today|tonight|this morning|earlier today)\b", re.IGNORECASE)


def asked_time(asked_at: datetime | None) -> datetime:
    """When a query is asked: `asked_at` (a naive time taken as UTC), or now."""
    if asked_at is None:
        return datetime.now(UTC)
    if not isinstance(asked_at, datetime):
        raise ValidationError(f"asked_at must be a datetime, not {type(asked_at).__name__}", field="asked_at")
    return asked_at if asked_at.tzinfo is not None else asked_at.replace(tzinfo=UTC)


def _around(point: datetime, distance: timedelta) -> Window:
    """A window about `point`, half its distance from now wide either side (at least a day)."""
    slack = max(DAY, distance / 2)
    return point - slack, point + slack


def _count(text: str | None) -> int:
    if text is None:
        return 1
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _COUNT[text]


def named_window(query: str, now: datetime) -> Window | None:
    """The window of time `query` names, relative to `now`, or None when it names none (`when.py`)."""
    found: list[tuple[int, Window]] = []  # (where in the query, the window)
    for m in _AGO.finditer(query):
        distance = _count(m["n"]) * _UNIT[m["unit"].lower()]
        found.append((m.start(), _around(now - distance, distance)))
    for m in _SPAN.finditer(query):
        # "the past month", "the last three weeks" (not "last week" without a count: a point, `_LAST`)
        if m["n"] is None and m.group(0).lower().startswith("last"):
            continue
        found.append((m.start(), (now - _count(m["n"]) * _UNIT[m["unit"].lower()], now + DAY)))
    for m in _LAST.finditer(query):
        what = m["what"].lower()
        if what in _WEEKDAYS or what == "weekend":  # the latest such day before today; a weekend: a past one
            back = (now.weekday() - _WEEKDAYS.index("saturday" if what == "weekend" else what) - 1) % 7 + 1
            if what == "weekend" and back < 2:  # on a Sunday, "last weekend" is the one before
                back += 7
            day = (now - back * DAY).replace(hour=0, minute=0, second=0, microsecond=0)
            days = 2 if what == "weekend" else 1
            found.append((m.start(), (day - DAY, day + (days + 1) * DAY)))
        else:
            distance = _UNIT[what]
            found.append((m.start(), _around(now - distance, distance)))
    for m in _THIS.finditer(query):
        found.append((m.start(), (now - _UNIT[m["unit"].lower()], now + DAY)))
    for m in _DAY.finditer(query):
        back = DAY if m["what"].lower() == "yesterday" else timedelta(0)
        found.append((m.start(), (now - back - DAY, now - back + DAY)))
    return min(found, key=lambda f: f[0])[1] if found else None


def window_factor(view: GraphView, nodes: np.ndarray, window: Window | None, factor: float) -> np.ndarray | None:
    """Per node, `factor` where the insight was created inside `window`, else 1; None when nothing applies."""
    if window is None or factor == 1.0:
        return None
    view.ensure_meta(nodes)
    start, end = (int(t.timestamp()) for t in window)
    created = view.created_key[nodes]
    return np.where((created >= start) & (created < end), factor, 1.0)
