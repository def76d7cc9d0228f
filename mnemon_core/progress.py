"""A progress bar on stderr for the long runs (import, embed --all, the extractor)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None]]:
    """`advance(n)` for a bar on stderr when stderr is a terminal and `rich` (extra `progress`) is
    installed; otherwise a no-op, so pipes and logs stay clean."""
    noop: Callable[[int], None] = lambda n: None
    if total <= 0 or not sys.stderr.isatty():
        yield noop
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:
        yield noop
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
