"""RFC 3339 UTC timestamps with second precision (`2026-02-18T10:00:00Z`), as the store keeps them."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def iso(ts: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if ts is None else ts))


def now() -> str:
    return iso()


def parse(value: str) -> datetime:
    """RFC 3339 with any offset → aware UTC datetime. Raises ValueError."""
    v = value.strip()
    if v.endswith(("Z", "z")):
        v = v[:-1] + "+00:00"
    dt = datetime.fromisoformat(v)
    if dt.tzinfo is None or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 timestamp: {value}")
    return dt.astimezone(UTC)


def normalise(value: str) -> str:
    """Any RFC 3339 timestamp → the store's UTC second-precision form."""
    return parse(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def hours_between(a: str, b: str) -> float:
    return (parse(b) - parse(a)).total_seconds() / 3600.0


def days_since(value: str, now_ts: float | None = None) -> float:
    ref = time.time() if now_ts is None else now_ts
    return max(0.0, (ref - parse(value).timestamp()) / 86400.0)
