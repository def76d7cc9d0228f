"""Against a real model (marker `llm`; skipped unless MNEMON_TEST_LLM_URL names an OpenAI-compatible endpoint,
with the model in MNEMON_TEST_LLM_MODEL): the 20-turn chat export of issue 27 goes through `mnemon extract
--import` with the defaults plus the server's URL, then `mnemon judge` twice. On a 2-core CPU server this
takes tens of minutes (see benchmarks/RESULTS.md); CI has no model and skips it.

    MNEMON_TEST_LLM_URL=http://127.0.0.1:8765/v1 MNEMON_TEST_LLM_MODEL=qwen2.5-coder-1.5b python -m pytest -m llm
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLIResult

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("MNEMON_TEST_LLM_URL")  # read at import: the autouse fixture clears MNEMON_* for each test
MODEL = os.environ.get("MNEMON_TEST_LLM_MODEL", "qwen2.5-coder-1.5b")
EXPORT = ROOT.parent / "shared" / "data" / "chat-export-tessera.json"

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(not URL, reason="no model server: set MNEMON_TEST_LLM_URL (and MNEMON_TEST_LLM_MODEL)"),
    pytest.mark.skipif(not EXPORT.exists(), reason=f"{EXPORT} is not here"),
]


def cli(*args: str) -> CLIResult:
    """The CLI in a fresh process, with the defaults plus the server's URL, and no time limit of its own."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")]),
           "MNEMON_LLM_BASE_URL": URL or "", "MNEMON_LLM_MODEL": MODEL}
    return CLIResult(subprocess.run([sys.executable, "-m", "mnemon_core", *args], capture_output=True, text=True,
                                    env=env))


def test_the_tessera_export_with_the_defaults(tmp_path: Path):
    from mnemon_extractor.worth import fact_free

    out = tmp_path / "draft.json"
    r = cli("extract", str(EXPORT), "-o", str(out), "--import")
    assert r.code == 0, r.err
    summary = r.json()
    assert summary["failures"] == []
    contents = [i["content"] for i in json.loads(out.read_text(encoding="utf-8"))["insights"]]
    assert [c for c in contents if fact_free(c)] == []
    low = [c.casefold() for c in contents]
    assert any("nats" in c or "jetstream" in c for c in low if "rabbitmq" in c), contents
    assert any("redis" in c for c in low), contents
    runs = [cli("judge", "--recent", str(summary["import"]["imported"]), "--dry-run") for _ in range(2)]
    assert [x.code for x in runs] == [0, 0], [x.err for x in runs]
    links = [sorted((lk["source_id"], lk["target_id"], lk["edge_type"]) for j in x.json() for lk in j["linked"])
             for x in runs]
    assert links[0] == links[1]
