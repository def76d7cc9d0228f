"""Settings, resolved once when a `Memory` is built: explicit arguments > `MNEMON_*` variables > defaults.

`UNSET` marks "not given" (distinct from an explicit None or ""), so layered defaults resolve correctly.
Store names follow `[a-zA-Z0-9][a-zA-Z0-9_-]*` (the whole name: no trailing newline) and are at most
`MAX_STORE_NAME` characters wherever they come from (flag, env, `active` file), so a name can never escape
the data directory and always makes a valid directory name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .errors import ValidationError


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
EMBEDDERS = ("local", "ollama", "openai", "none")
DEFAULT_EMBED_ENDPOINT = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"


def validate_store_name(name: str, *, hint: bool = False) -> str:
    if not STORE_NAME_RE.fullmatch(name or ""):
        suffix = ": must match [a-zA-Z0-9][a-zA-Z0-9_-]*" if hint else ""
        raise ValidationError(f'invalid store name "{name}"{suffix}', field="store")
    if len(name) > MAX_STORE_NAME:
        raise ValidationError(f"store name too long ({len(name)} characters, max {MAX_STORE_NAME})", field="store")
    return name


def default_data_dir() -> Path:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if not home or home == "~":
        home = "/tmp"
    return Path(home) / ".mnemon"


def parse_duration(text: str) -> float:
    """Go-style durations (`24h`, `90m`, `1h30m`, `45s`), `7d` for whole days, or `0`. Returns seconds."""
    s = text.strip()
    if s in ("0", ""):
        return 0.0
    m = re.fullmatch(r"(\d+)d", s)
    if m:
        return int(m.group(1)) * 86400.0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise ValidationError(
            f'invalid MNEMON_AUTO_PRUNE_MIN_AGE "{text}"; use a duration like 24h, 90m, 7d or 0',
            field="MNEMON_AUTO_PRUNE_MIN_AGE",
        )
    return sum(float(n) * units[u] for n, u in parts)


def _env(name: str) -> str | None:
    v = os.environ.get(name)
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
    max_insights: int = DEFAULT_MAX_INSIGHTS
    prune_min_age_s: float = DEFAULT_PRUNE_MIN_AGE_S
    database_url: str | None = None
    origin: str = "cli"  # who writes: "cli", "mcp", "agent" (library); marks oplog rows and link metadata

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
        max_ins = _env("MNEMON_MAX_INSIGHTS")
        if max_ins is not None:
            try:
                max_val = int(max_ins)
            except ValueError:
                raise ValidationError(
                    f"MNEMON_MAX_INSIGHTS must be an integer, got {max_ins}", field="MNEMON_MAX_INSIGHTS"
                ) from None
        else:
            max_val = DEFAULT_MAX_INSIGHTS
        age = _env("MNEMON_AUTO_PRUNE_MIN_AGE")
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
            max_insights=max_val,
            prune_min_age_s=parse_duration(age) if age is not None else DEFAULT_PRUNE_MIN_AGE_S,
            database_url=database_url or _env("MNEMON_DATABASE_URL"),
            origin=origin,
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
