"""Files that one process at a time may open: a Kùzu database, a Milvus Lite file.

Such a file has one holder. The resident engine of a data directory keeps its stores open between calls, so a
call that runs in-process meanwhile (`import`, `migrate`, `MNEMON_DAEMON=off`, or any call while the engine warms
up) would find the file held for as long as the engine lives. An open that finds the file held therefore waits
for it (`LOCK_WAIT_S`, the other stores' write-lock timeout) and, every `ASK_EVERY_S`, asks the engines of its
data directory to let that file go (`resident.release`): they close the stores that hold it (a request running
on one finishes first) and open it again, waiting in their turn, at their next call. The engine itself never
asks (it would ask itself). A file still held at the deadline is one "locked" line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import StoreError
from .sql import WRITE_LOCK_TIMEOUT_S

LOCK_WAIT_S = WRITE_LOCK_TIMEOUT_S  # how long an open waits for another process to let the file go
LOCK_POLL_S = 0.05
ASK_EVERY_S = 0.5  # an engine still warming up has no socket yet: asked again until it answers

T = TypeVar("T")

in_engine = False  # set by the resident engine: it holds files, and waits for the in-process calls' turn


def open_held(open_file: Callable[[], T], held: Callable[[BaseException], bool], path: str, what: str,
              data_dir: str | None) -> T:
    """`open_file()`, waiting while it fails because another process holds `path` (`held`). `what` names the
    database in the message; `data_dir`: whose engines are asked to let the file go (None: none asked)."""
    deadline = time.monotonic() + LOCK_WAIT_S
    asked = 0.0
    while True:
        try:
            return open_file()
        except Exception as e:
            if not held(e):
                raise
            now = time.monotonic()
            if now >= deadline:
                raise StoreError(
                    f"database is locked: another process held {path} longer than the {LOCK_WAIT_S:g} s lock "
                    f"timeout ({what} lets one process at a time open it); try again", path=path,
                ) from e
            if data_dir is not None and not in_engine and now - asked >= ASK_EVERY_S:
                from ..daemon import resident

                asked = now
                resident.release(data_dir, os.path.abspath(path))
            time.sleep(LOCK_POLL_S)
