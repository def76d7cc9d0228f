"""At most once: a command the resident engine runs carries its client's request id, and the command's first
write transaction records it (`Store.claim_request`, in that same transaction). When the engine stops before
its answer reaches the client, the client runs the command again in-process under the same id; the rerun's
write transaction finds the id recorded and writes nothing (`AlreadyDone`), and a read answers without
counting its access a second time. An engine that resumes after its client gave up meets the same check.

The standard library only: the client (`client.py`) starts a request on every served call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .store import Store

__all__ = ["Request", "begin", "claim", "current", "end", "writing"]


@dataclass
class Request:
    id: str
    claimed: bool = False  # this run recorded the id (a later transaction of the same run finds its own row)


_current: ContextVar[Request | None] = ContextVar("mnemon_request", default=None)


def begin(request_id: str) -> Token[Request | None]:
    return _current.set(Request(request_id))


def end(token: Token[Request | None]) -> None:
    _current.reset(token)


def current() -> Request | None:
    return _current.get()


def claim(store: Store, now: str) -> None:
    """Inside a write transaction: record this run's request id, or raise `AlreadyDone` when another run of
    the same request recorded it first. No request (a call in its own process, a library user): nothing."""
    request = _current.get()
    if request is None:
        return
    if not store.claim_request(request.id, now) and not request.claimed:
        from .errors import AlreadyDone

        raise AlreadyDone(request.id)
    request.claimed = True


@contextmanager
def writing(store: Store, now: str) -> Iterator[Store]:
    """A write transaction of this run: its request id is recorded in it first (`claim`), so the rerun of a
    call whose answer the engine lost writes nothing (`AlreadyDone`)."""
    with store.transaction():
        claim(store, now)
        yield store
