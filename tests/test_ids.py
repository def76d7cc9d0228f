"""An id where a call takes one (issue 37, item 7): `log` shows an insight's first 8 characters, and every call
that takes an id (show, forget, link, related, gc --keep, embed, the library's get, MCP) takes a unique prefix of
at least 8 characters too; a prefix of several insights is refused, naming them; one resolver serves them all
(`Memory.resolve_id`, over `Store.ids_starting`)."""

from __future__ import annotations

import json
import re

import pytest

from mnemon_core import Memory
from mnemon_core.errors import NotFoundError, ValidationError
from mnemon_core.faces.mcp import Face
from mnemon_core.models import Insight

T0 = "2026-01-01T00:00:00Z"


def twins(mem: Memory) -> list[str]:
    """Two active insights whose ids share their first 9 characters (uuids that happen to), and a deleted third."""
    ids = ["abcdef12-1456-4000-8000-000000000001", "abcdef12-2456-4000-8000-000000000002",
           "abcdef12-3456-4000-8000-000000000003"]
    with mem.store.transaction():
        for n, id_ in enumerate(ids):
            mem.store.insert_insight(Insight(id=id_, content=f"twin {n}", created_at=T0, updated_at=T0), {"twin"})
    mem.store.soft_delete([ids[2]], T0)
    return ids[:2]


def test_every_call_that_takes_an_id_takes_a_unique_prefix(mem: Memory) -> None:
    a = mem.remember("The billing service runs on Postgres", category="fact")
    b = mem.remember("The billing service was moved to Postgres for its transactions", category="decision")
    assert mem.show(a.id[:8]).id == a.id
    assert mem.get(a.id[:9]).id == a.id
    link = mem.link(a.id[:8], b.id[:10], type="causal")
    assert (link.source_id, link.target_id) == (a.id, b.id)
    assert [h.id for h in mem.related(a.id[:8])] == [b.id]
    assert mem.gc_keep(b.id[:8]).id == b.id
    assert mem.forget(a.id[:8]).id == a.id
    with pytest.raises(NotFoundError, match=f"^forget: insight {a.id[:8]} not found or already deleted$"):
        mem.forget(a.id[:8])  # a prefix of a forgotten insight names nothing


def test_a_prefix_of_several_insights_is_refused_naming_them(mem: Memory) -> None:
    first, second = twins(mem)
    message = f'ambiguous id prefix "abcdef12": it starts 2 insights ({first}, {second}); give more of the id'
    for call in (mem.show, mem.forget, mem.related, mem.get, lambda i: mem.link(i, second)):
        with pytest.raises(ValidationError, match="^" + re.escape(message) + "$"):
            call("abcdef12")
    assert mem.show(second).id == second
    assert mem.show(first[:10]).id == first  # long enough to tell them apart


def test_a_prefix_shorter_than_eight_names_nothing(mem: Memory) -> None:
    a = mem.remember("one memory")
    with pytest.raises(NotFoundError, match=f"^insight {a.id[:7]} not found$"):
        mem.show(a.id[:7])


def test_the_command_line_takes_the_ids_log_shows(cli, data_dir) -> None:
    a = cli("remember", "We chose Qdrant for its filtering", "--cat", "decision").json()["id"]
    b = cli("remember", "Qdrant runs on the staging cluster").json()["id"]
    shown = cli("log").out.splitlines()[2].split()[2]
    assert shown == b[:8]
    for args in (["show", shown], ["related", shown], ["link", a[:8], shown, "--type", "semantic"],
                 ["gc", "--keep", shown], ["forget", shown]):
        r = cli(*args)
        assert r.code == 0, (args, r.err)
    assert json.loads(cli("show", a[:8]).out)["id"] == a
    with Memory() as mem:
        twins(mem)
    r = cli("show", "abcdef12")
    assert (r.code, r.out) == (1, "")
    assert r.err == ('Error: ambiguous id prefix "abcdef12": it starts 2 insights ('
                     "abcdef12-1456-4000-8000-000000000001, abcdef12-2456-4000-8000-000000000002); give more of the id\n")


async def test_mcp_takes_a_prefix(mem: Memory) -> None:
    a = mem.remember("The search service moved to Qdrant")
    face = Face(mem)
    err, text = await face.call("show", {"id": a.id[:8]})
    assert not err and json.loads(text)["id"] == a.id
    twins(mem)
    err, text = await face.call("forget", {"id": "abcdef12"})
    assert err and text.startswith('ambiguous id prefix "abcdef12": it starts 2 insights')
