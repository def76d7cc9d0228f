"""The accesses that reads could not apply at once, in a file beside a SQLite database (`<db>.access`).

A read counts the insights it returned (`Store.record_access`), which is a write; when a writer holds the
database's write lock (a long import, another process's transaction) the read does not wait for it: it appends
its access here, one JSON line, taking no lock of the database. The store's next write transaction, of any
process, takes the file away (renames it), reads it and applies every line before its own work, and removes it
once that transaction committed. A transaction that did not commit leaves what it took for the next one.

Two locks keep a line from being lost between an appender and a taker: an appender writes under a shared
`flock` of the file it opened, and only if that file is still the one at the path; a taker renames the file,
then takes an exclusive `flock` of it (an appender already writing finishes first; one that comes later finds
another file at the path and opens that). A line's key (its read's request id, or one of its own) makes it
count once however often it is applied: a taker that committed and died before removing the file leaves it
to be applied again, and `claim_request` then skips each line.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from pathlib import Path

from .base import Access

SUFFIX = ".access"


class AccessFile:
    """The pending accesses of the database at `db_path`."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + SUFFIX)
        self._taken: list[Path] = []  # the files the open transaction applied: removed once it commits

    def add(self, access: Access) -> None:
        """Append one access (with a key of its own when it has none). OSError when it cannot be written."""
        if access.key is None:
            access = access._replace(key=uuid.uuid4().hex)
        line = (json.dumps(access._asdict(), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        while True:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                if _same_file(fd, self.path):  # else a taker renamed it away meanwhile: open the new one
                    while line:
                        line = line[os.write(fd, line):]
                    return
            finally:
                os.close(fd)

    def take(self) -> list[Access]:
        """Inside a write transaction: every pending access (those a transaction that did not commit left
        first, then the file's, in the order they were kept). An unreadable file is left for the next."""
        prefix = self.path.name + "-"
        try:
            left = sorted(self.path.with_name(n) for n in os.listdir(self.path.parent) if n.startswith(prefix))
        except OSError:
            left = []
        taken = self.path.with_name(f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}")
        try:
            os.rename(self.path, taken)
            left.append(taken)
        except FileNotFoundError:
            pass
        accesses: list[Access] = []
        self._taken = []
        for path in left:
            try:
                accesses += _read(path)
            except OSError:
                continue
            self._taken.append(path)
        return accesses

    def applied(self) -> None:
        """After the commit of the transaction that took them: remove the files it applied."""
        for path in self._taken:
            path.unlink(missing_ok=True)
        self._taken = []


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _read(path: Path) -> list[Access]:
    """The whole lines of a taken file, once no appender writes to it; a line torn by a killed appender is
    skipped."""
    with open(path, "rb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        data = f.read()
    out = []
    for line in data.splitlines():
        try:
            d = json.loads(line)
            insight_id = None if d["insight_id"] is None else str(d["insight_id"])
            out.append(Access(key=str(d["key"]), ids=tuple(map(str, d["ids"])), at=str(d["at"]),
                              operation=str(d["operation"]), insight_id=insight_id, detail=str(d["detail"])))
        except (ValueError, KeyError, TypeError):
            continue
    return out
