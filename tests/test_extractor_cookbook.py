"""The extractor and judge cookbook scripts run as a user runs them (a fresh process, offline), and with
their one `LLM = …` line pointed at a server of our own, as a real model would be."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mnemon_extractor.testing import FakeOpenAIServer

ROOT = Path(__file__).resolve().parent.parent
COOKBOOK = ROOT / "cookbook"


def run(script: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "extractor")]),
           "MNEMON_DATA_DIR": str(data_dir), "MNEMON_EMBEDDER": "none"}
    return subprocess.run([sys.executable, str(COOKBOOK / script)], capture_output=True, text=True, env=env,
                          timeout=120)


def load(script: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.removesuffix(".py"), COOKBOOK / script)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_extract_chatgpt_offline(tmp_path: Path):
    p = run("extract_chatgpt.py", tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("extract: chatgpt export, 2 conversations, 2 chunks → 3 insights, 1 edges, 0 failed, ")
    assert lines[1] == f"draft: {tmp_path / 'memory_draft.json'}"
    assert lines[2] == "import: 3 imported, 0 skipped, 1 edges"
    why = lines[lines.index("recall 'why did we pick Qdrant?'") + 1:][:3]
    assert any("Qdrant was chosen over Milvus" in line for line in why)
    assert (tmp_path / "data" / "extract-demo" / "mnemon.db").exists()


def test_judge_causal_offline(tmp_path: Path):
    p = run("judge_causal.py", tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "engine causal edges: 0" in out
    assert "-causal/causes->" in out and "the slow filtered queries on Milvus led to the move" in out
    assert ("causal neighbours of the decision: ['Filtered vector queries on Milvus took 900 ms at p95 in the "
            "March benchmark']") in out
    recall = out.split("recall 'why did the search service move to Qdrant?'\n", 1)[1].splitlines()
    # WHY order: the judged cause comes before its effect.
    assert [line.split("] ", 1)[1] for line in recall] == [
        "Filtered vector queries on Milvus took 900 ms at p95 in the March benchmark",
        "The search service moved from Milvus to Qdrant in April",
    ]
    # The cause is there for the judged causal edge to the decision (which is there for its own words): it says so.
    assert [line.split("] ", 1)[0].split()[-1] for line in recall] == ["[WHY/causal", "[WHY/hybrid"]


@pytest.mark.parametrize("script, responder", [("extract_chatgpt.py", "canned"), ("judge_causal.py", "stand_in")])
def test_the_one_line_switch_to_another_server(script: str, responder: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    mod = load(script)
    monkeypatch.setenv("MNEMON_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", [script])
    with FakeOpenAIServer(getattr(mod, responder)) as server:
        mod.LLM = {"base_url": server.base_url, "api_key": "k", "model": "my-model"}
        mod.main()
    assert server.requests and all(r["model"] == "my-model" for r in server.requests)
    assert "recall" in capsys.readouterr().out
