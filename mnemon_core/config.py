"""Settings, resolved once when a `Memory` is built: explicit arguments > `MNEMON_*` variables > defaults.

`UNSET` marks "not given" (distinct from an explicit None or ""), so layered defaults resolve correctly.
Store names follow `[a-zA-Z0-9][a-zA-Z0-9_-]*` (the whole name: no trailing newline) and are at most
`MAX_STORE_NAME` characters wherever they come from (flag, env, `active` file), so a name can never escape
the data directory and always makes a valid directory name.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from . import console
from .errors import ValidationError
from .timeutil import iso, parse


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final[Any] = _Unset()

STORE_NAME_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]*")  # always fullmatch: `$` would accept "name\n"
MAX_STORE_NAME = 255  # a directory name's limit on common file systems (NAME_MAX)
DEFAULT_STORE = "default"
DEFAULT_MAX_INSIGHTS = 1000
DEFAULT_PRUNE_MIN_AGE_S = 24 * 3600.0
# The oplog is the audit trail: kept by age, so no single command (a big import) can push out its history.
DEFAULT_OPLOG_MAX_AGE_S = 90 * 86400.0
# A safety net, not the rule: every read logs a row and reads are not bounded by MNEMON_MAX_INSIGHTS, so an
# agent stuck in a recall loop could otherwise fill a disk within the 90 days. 10M rows are 1-3 GB on SQLite
# (115 B a recall row, 275 B a 160-byte remember row, measured), 100x what a busy agent logs in 90 days; an
# import reaches it only past 5M insights (one import row each, one prune row each beyond the ceiling).
DEFAULT_OPLOG_MAX_ROWS = 10_000_000
EMBEDDERS = ("local", "ollama", "openai", "none")
DEFAULT_EMBED_ENDPOINT = "http://localhost:11434"
DEFAULT_EMBED_TIMEOUT_S = 30.0  # per request to a remote embedder (spec §3.2); MNEMON_EMBED_TIMEOUT
# A remote server (embedder or LLM) that timed out this many calls in a row is given up on for the rest of
# the run: later calls fail at once, each reported, instead of each waiting out its timeout.
MAX_CONSECUTIVE_TIMEOUTS = 2
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"


def validate_store_name(name: str, *, hint: bool = False) -> str:
    """The documents' one message for every bad name (empty, a path, too long): `invalid store name "x"`, with
    the rule after it in the store commands (`hint`) and the length for a name past the limit (shown cut)."""
    if len(name or "") > MAX_STORE_NAME:
        shown = name[:50] + "…"
        raise ValidationError(f'invalid store name "{shown}": {len(name)} characters, max {MAX_STORE_NAME}',
                              field="store")
    if not STORE_NAME_RE.fullmatch(name or ""):
        suffix = ": must match [a-zA-Z0-9][a-zA-Z0-9_-]*" if hint else ""
        raise ValidationError(f'invalid store name "{name}"{suffix}', field="store")
    return name


def environment() -> Mapping[str, str]:
    """Where settings come from: this process's variables, or those the running command was given
    (`console.own`: in the resident engine, the variables of the client whose command it runs)."""
    return console.environ()


def debug() -> bool:
    """`MNEMON_DEBUG=1`: the faces print the traceback of every error they turn into one line."""
    return environment().get("MNEMON_DEBUG", "") not in ("", "0")


def default_data_dir() -> Path:
    home = environment().get("HOME") or os.path.expanduser("~")
    if not home or home == "~":
        home = "/tmp"
    return Path(home) / ".mnemon"


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as text that stays valid UTF-8 wherever it is printed (JSON, a terminal): a byte of a file name
    that is not UTF-8, which Python holds as a lone surrogate, becomes its escape (`caf\\xe9`)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def make_private_dirs(path: Path) -> None:
    """Create `path` and its missing parents as directories of this user's only (0700): a data directory holds
    memory text, and the resident engine trusts a socket only in a directory no one else may write."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)


def create_private_file(path: Path) -> None:
    """An empty file only this user may read (0600), unless it exists: SQLite gives its -wal and -shm files the
    mode of the database file, so one created here keeps the memory text from other local users."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass


def parse_duration(text: str, name: str) -> float:
    """Go-style durations (`24h`, `90m`, `1h30m`, `45s`), `7d` for whole days, or `0`. Returns seconds;
    `name` is the variable the text came from, for the error."""
    s = text.strip()
    if s in ("0", ""):
        return 0.0
    m = re.fullmatch(r"(\d+)d", s)
    if m:
        return int(m.group(1)) * 86400.0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise ValidationError(f'invalid {name} "{text}"; use a duration like 24h, 90m, 7d or 0', field=name)
    return sum(float(n) * units[u] for n, u in parts)


def _seconds(text: str, name: str) -> float:
    """A positive, finite number of seconds from a variable."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise ValidationError(f'{name} must be a positive number of seconds, got "{text}"', field=name)
    return value


def _env_int(name: str, default: int) -> int:
    v = _env(name)
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        raise ValidationError(f"{name} must be an integer, got {v}", field=name) from None


def env_count(name: str, default: int) -> int:
    """A variable that holds a count: an integer, 0 or more (`default` when unset)."""
    n = _env_int(name, default)
    if n < 0:
        raise ValidationError(f"{name} must be 0 or more, got {n}", field=name)
    return n


@dataclass(frozen=True)
class OplogRetention:
    """What the oplog keeps: rows younger than `max_age_s`, and of those at most the newest `max_rows`;
    0 turns either limit off. Both stores apply this one rule, once per write transaction, at its commit."""

    max_age_s: float = DEFAULT_OPLOG_MAX_AGE_S
    max_rows: int = DEFAULT_OPLOG_MAX_ROWS

    def cutoff(self, now: str) -> str | None:
        """Rows created before this time go (None: no age limit); `now` is RFC 3339, as the rows' times."""
        return iso(parse(now).timestamp() - self.max_age_s) if self.max_age_s > 0 else None

    @classmethod
    def from_env(cls) -> OplogRetention:
        age = _env("MNEMON_OPLOG_MAX_AGE")
        rows = env_count("MNEMON_OPLOG_MAX_ROWS", DEFAULT_OPLOG_MAX_ROWS)
        max_age = parse_duration(age, "MNEMON_OPLOG_MAX_AGE") if age is not None else DEFAULT_OPLOG_MAX_AGE_S
        return cls(max_age_s=max_age, max_rows=rows)


def _env(name: str) -> str | None:
    v = environment().get(name)
    return v if v not in (None, "") else None


@dataclass
class Settings:
    data_dir: Path
    store: str
    readonly: bool = False
    embedder: str = "local"
    embed_endpoint: str = DEFAULT_EMBED_ENDPOINT
    embed_model: str | None = None
    embed_api_key: str | None = field(default=None, repr=False)
    embed_dimensions: int | None = None
    embed_protocol: str | None = None
    embed_timeout_s: float = DEFAULT_EMBED_TIMEOUT_S
    max_insights: int = DEFAULT_MAX_INSIGHTS
    prune_min_age_s: float = DEFAULT_PRUNE_MIN_AGE_S
    database_url: str | None = None
    vector_url: str | None = None  # MNEMON_VECTOR_URL: the vectors in Milvus beside the store (store/milvus.py)
    oplog_retention: OplogRetention = field(default_factory=OplogRetention)
    origin: str = "cli"  # who writes: "cli", "mcp", "agent" (library); marks oplog rows and link metadata
    session: str | None = None  # the remember session (MNEMON_SESSION): consecutive remembers are linked

    @property
    def db_path(self) -> Path:
        return self.data_dir / "data" / self.store / "mnemon.db"

    @classmethod
    def resolve(
        cls,
        data_dir: str | os.PathLike[str] | None = UNSET,
        store: str | None = UNSET,
        readonly: bool = False,
        embedder: str | None = UNSET,
        embed_model: str | None = UNSET,
        database_url: str | None = UNSET,
        origin: str = "agent",
    ) -> Settings:
        dd = Path(data_dir) if data_dir else Path(_env("MNEMON_DATA_DIR") or default_data_dir())
        try:
            dd = dd.expanduser()
        except RuntimeError:  # "~user/..." of a user that does not exist
            raise ValidationError(f'invalid data directory "{dd}": no such user', field="data_dir") from None
        name = resolve_store_name(dd, store)
        emb = (embedder or _env("MNEMON_EMBEDDER") or "local").strip().lower()
        if emb not in EMBEDDERS:
            raise ValidationError(
                f'invalid embedder "{emb}"; valid: {", ".join(EMBEDDERS)}', field="MNEMON_EMBEDDER"
            )
        dims = _env("MNEMON_EMBED_DIMENSIONS")
        if dims is not None:
            if not dims.isdigit() or int(dims) <= 0:
                raise ValidationError(
                    f"MNEMON_EMBED_DIMENSIONS must be a positive integer, got {dims}",
                    field="MNEMON_EMBED_DIMENSIONS",
                )
        age = _env("MNEMON_AUTO_PRUNE_MIN_AGE")
        timeout = _env("MNEMON_EMBED_TIMEOUT")
        return cls(
            data_dir=dd,
            store=name,
            readonly=readonly,
            embedder=emb,
            embed_endpoint=(_env("MNEMON_EMBED_ENDPOINT") or DEFAULT_EMBED_ENDPOINT).rstrip("/"),
            embed_model=embed_model or _env("MNEMON_EMBED_MODEL"),
            embed_api_key=_env("MNEMON_EMBED_API_KEY"),
            embed_dimensions=int(dims) if dims else None,
            embed_protocol=_env("MNEMON_EMBED_PROTOCOL"),
            embed_timeout_s=_seconds(timeout, "MNEMON_EMBED_TIMEOUT") if timeout else DEFAULT_EMBED_TIMEOUT_S,
            max_insights=_env_int("MNEMON_MAX_INSIGHTS", DEFAULT_MAX_INSIGHTS),
            prune_min_age_s=(
                parse_duration(age, "MNEMON_AUTO_PRUNE_MIN_AGE") if age is not None else DEFAULT_PRUNE_MIN_AGE_S
            ),
            database_url=database_url or _env("MNEMON_DATABASE_URL"),
            vector_url=_env("MNEMON_VECTOR_URL"),
            oplog_retention=OplogRetention.from_env(),
            origin=origin,
            session=_env("MNEMON_SESSION"),
        )


def resolve_store_name(data_dir: Path, store: str | None = UNSET) -> str:
    """`--store` > `MNEMON_STORE` > `active` file (empty or invalid → default) > `default`."""
    if store:
        return validate_store_name(store)
    env = _env("MNEMON_STORE")
    if env is not None:
        return validate_store_name(env)
    try:
        active = (data_dir / "active").read_text(encoding="utf-8").strip()
    except OSError:
        active = ""
    if active and STORE_NAME_RE.fullmatch(active):
        return active
    return DEFAULT_STORE
