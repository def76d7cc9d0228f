"""A store's vectors in Milvus Lite through the CLI (the contract's "milvus" param checks every method): what a
user sees is what SQLite alone shows — answers on stdout, nothing on stderr — and a bad URL is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

pytest.importorskip("pymilvus")


def test_remember_and_recall_through_milvus_print_only_the_answer(tmp_path: Path) -> None:
    env = {"MNEMON_VECTOR_URL": f"milvus://{tmp_path / 'v.db'}"}
    r = run_cli("remember", "Deploys freeze on Fridays", "--cat", "decision", env=env)
    assert (r.code, r.err) == (0, "") and r.json()["action"] == "added"
    found = run_cli("recall", "when do deploys freeze", env=env)
    assert (found.code, found.err) == (0, "")
    assert [h["content"] for h in found.json()["results"]] == ["Deploys freeze on Fridays"]


def test_vectors_live_in_milvus_not_in_the_store(tmp_path: Path) -> None:
    from mnemon_core import Memory
    from mnemon_core.store.milvus import MilvusVectors

    url = f"milvus://{tmp_path / 'v.db'}"
    with Memory(store="team-a") as m:
        m.settings.vector_url = url
        s = m.store
        a = m.remember("a note").id
        s.set_vector(a, np.array([1, 0, 0, 0], dtype=np.float32), "m4")
        assert s.inner.get_vector(a, "m4") is None  # the SQLite file holds none
        assert MilvusVectors(url, "team-a").get([a])[a][0] == "m4"
        assert [i for i, _ in s.nearest("m4", np.array([1, 0, 0, 0], dtype=np.float32), 3)] == [a]
        assert s.vector_matrix("m4", 4)[0] == [a] == s.vector_matrix("m4", 4)[0]  # a scan, then a refresh


def test_two_store_objects_of_one_process_see_each_others_vectors(tmp_path: Path) -> None:
    """Milvus Lite has one process per file, so a reader's cache needs no read-back after its own writes; but the
    engine keeps several store objects of one store: a vector another object wrote is in the next matrix and
    search, a forgotten one is gone from it, and reads with no write between them ask Milvus nothing."""
    from mnemon_core import Memory

    url = f"milvus://{tmp_path / 'v.db'}"
    e = [np.eye(4, dtype=np.float32)[i] for i in range(4)]
    with Memory(store="shared") as a, Memory(store="shared") as b:
        a.settings.vector_url = b.settings.vector_url = url
        x, y = a.remember("first note").id, b.remember("second note").id
        a.store.set_vector(x, e[0], "m4")
        assert a.store.vector_matrix("m4", 4)[0] == [x]
        b.store.set_vector(y, e[1], "m4")
        ids, mat = a.store.vector_matrix("m4", 4)
        assert ids == [x, y] and np.allclose(mat[1], e[1])
        assert [i for i, _ in a.store.nearest("m4", e[1], 1)] == [y]
        b.store.soft_delete([y], "2026-01-01T00:00:00Z")
        assert a.store.vector_matrix("m4", 4)[0] == [x]
        a.store.set_vector(x, e[2], "m4")  # its own write: in its cache, and b's is behind
        assert np.allclose(a.store.vector_matrix("m4", 4)[1][0], e[2])
        assert np.allclose(b.store.vector_matrix("m4", 4)[1][0], e[2])
        calls = []
        a.store.milvus.rows = lambda *args, **kw: calls.append(args) or iter(())
        a.store.vector_matrix("m4", 4)
        a.store.ann_index("m4", 4)
        assert calls == []


def test_a_scan_prints_no_library_warning(tmp_path: Path) -> None:
    """pymilvus warns on stderr at every scan ("failed to get mvccTs …" with Milvus Lite): not one line of ours."""
    import subprocess
    import sys

    from conftest import ROOT

    code = ("from mnemon_core.store.milvus import MilvusVectors; import numpy as np, sys; "
            "v = MilvusVectors(sys.argv[1], 's'); v.upsert([('a', 'm', np.ones(4, dtype=np.float32), True)]); "
            "print(len(list(v.rows('ts >= 0', ['model']))))")
    r = subprocess.run([sys.executable, "-c", code, f"milvus://{tmp_path / 'v.db'}"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "1\n", "")


@pytest.mark.parametrize(("url", "message"), [
    ("redis://x", "Error: MNEMON_VECTOR_URL must be milvus:///abs/file.db or http(s)://host:port, got 'redis://x'\n"),
    ("milvus://rel.db", "Error: a Milvus Lite URL names an absolute .db file, milvus:///abs/file.db; got "
                        "'milvus://rel.db'\n"),
])
def test_a_bad_vector_url_is_one_line(url: str, message: str) -> None:
    r = run_cli("recall", "x", env={"MNEMON_VECTOR_URL": url})
    assert (r.code, r.out, r.err) == (1, "", message)


@pytest.mark.parametrize("daemon", ["off", "on"])
def test_processes_in_turn_on_one_milvus_lite_file(tmp_path: Path, data_dir: Path, daemon: str) -> None:
    """The defect of issue 40: the second process found the collection released ("call load() before search"),
    and with the engine on, a call run in-process while the engine held the file could not open it. Calls in
    turn, served and in-process (import), each see what the ones before wrote."""
    from conftest import stop_engines

    env = {"MNEMON_VECTOR_URL": f"milvus://{tmp_path / 'v.db'}", "MNEMON_EMBEDDER": "local", "MNEMON_DAEMON": daemon}
    draft = tmp_path / "d.json"
    draft.write_text('{"schema_version": "1", "insights": [{"content": "Imported: the cache runs on Valkey"}]}')
    try:
        for text in ("Deploys freeze on Fridays", "Alice owns the billing service"):
            r = run_cli("remember", text, "--cat", "fact", env=env)
            assert (r.code, r.err) == (0, ""), r.err
        r = run_cli("import", str(draft), env=env)  # in-process, whatever the engine holds
        assert (r.code, r.json()["imported"]) == (0, 1), r.err
        for query, want in (("when do deploys freeze", "Deploys freeze on Fridays"),
                            ("who owns billing", "Alice owns the billing service"),
                            ("what does the cache run on", "Imported: the cache runs on Valkey")):
            found = run_cli("recall", query, env=env)
            assert (found.code, found.err) == (0, "")
            assert found.json()["results"][0]["content"] == want
        assert run_cli("status", env={**env, "MNEMON_DAEMON": "off"}).json()["total_insights"] == 3
    finally:
        stop_engines(data_dir)


def test_a_milvus_lite_file_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    r = run_cli("recall", "x", env={"MNEMON_VECTOR_URL": f"milvus://{tmp_path / 'no' / 'v.db'}"})
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith(f"Error: cannot open Milvus at milvus://{tmp_path / 'no' / 'v.db'}: ") and r.err.count("\n") == 1


def test_a_milvus_lite_file_held_by_another_process_is_waited_for_then_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from mnemon_core.faces.cli import main
    from mnemon_core.store import holder

    path = tmp_path / "v.db"
    monkeypatch.setenv("MNEMON_VECTOR_URL", f"milvus://{path}")
    held = subprocess.Popen([sys.executable, "-c", "import pymilvus, sys, time; pymilvus.MilvusClient(sys.argv[1]); "
                             "print('held', flush=True); time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout.readline() == "held\n"
        monkeypatch.setattr(holder, "LOCK_WAIT_S", 0.3)
        capsys.readouterr()
        assert main(["recall", "x"]) == 1
        out, err = capsys.readouterr()
        assert (out, err) == ("", f"Error: database is locked: another process held {path} longer than the 0.3 s "
                                  "lock timeout (Milvus Lite lets one process at a time open it); try again\n")
    finally:
        held.kill()
        held.wait()
        held.stdout.close()
