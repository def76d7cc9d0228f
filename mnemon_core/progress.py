"""A progress bar on stderr for the long runs (import, embed --all, the extractor)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .console import err

__all__ = ["progress_bar"]


Advance = Callable[..., None]  # advance(n, note=None): n more done; `note` (if given) replaces the label


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Advance]:
    """`advance(n, note=None)` for a bar on stderr when stderr is a terminal and `rich` (extra `progress`) is
    installed; otherwise a no-op, so pipes and logs stay clean. A note (the extractor's "chunk 2/5: 5.9
    tokens/s") replaces the label until the next one."""
    noop: Advance = lambda n, note=None: None
    if total <= 0 or not err().isatty():  # a command the engine runs writes into a buffer
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

        def advance(n: int, note: str | None = None) -> None:
            bar.update(task, advance=n, **({"description": note} if note is not None else {}))

        yield advance
