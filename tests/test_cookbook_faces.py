"""The framework cookbook scripts run as a user would run them (fresh process, fake models, offline), so they
never rot. Each check reads what the script prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COOKBOOK = ROOT / "cookbook"


def run_script(name: str, data_dir: Path) -> list[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "integrations"), env.get("PYTHONPATH", "")])
    env["MNEMON_DATA_DIR"] = str(data_dir)
    proc = subprocess.run([sys.executable, str(COOKBOOK / name)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=data_dir.parent, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout.splitlines()


def test_langchain_chain(data_dir: Path) -> None:
    pytest.importorskip("langchain_core")
    out = run_script("langchain_chain.py", data_dir)
    assert out[:5] == [
        "question: Why did we pick Qdrant?",
        "memories:",
        # Without vectors both match "Qdrant" and nothing else of the question; BM25 favours the shorter one.
        "- [fact] Qdrant runs on the staging cluster since March",
        "- [decision] We chose Qdrant as the vector store because its payload filtering is fast",
        "answer: We chose Qdrant because its payload filtering is fast.",
    ]
    loaded = out[out.index("loaded for the next turn:") + 1 : out.index("loaded for the next turn:") + 3]
    assert sorted(loaded) == [
        "- [decision] We chose Qdrant as the vector store because its payload filtering is fast",
        "- [general] I prefer short answers.",
    ]
    assert "answer: You said you prefer short answers, so: Qdrant, for filtering speed." in out
    assert out[-1] == f"saved 4 insights from the conversation; data dir: {data_dir}"


def test_langgraph_agent(data_dir: Path) -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain.agents")
    out = run_script("langgraph_agent.py", data_dir)
    assert out == [
        ('→ remember({"content": "The user\'s cat is called Miso", "category": "fact", "importance": 4, '
         '"entities": ["Miso"]})'),
        "  remembered \"The user's cat is called Miso\" (added)",
        '→ save_profile({"name": "Ada"})',
        "  saved",
        '→ recall({"query": "what is the cat called?"})',
        "  recalled \"The user's cat is called Miso\"",
        "answer: Your cat is called Miso, Ada.",
        "store: {'content': \"The user's name is Ada\", 'name': 'Ada'}",
        f"data dir: {data_dir}",
    ]
    # The store's item lives in its own mnemon store, beside the agent's memory.
    assert sorted(p.name for p in (data_dir / "data").iterdir()) == ["cookbook-agent", "langgraph-profiles"]


def test_llamaindex_query_engine(data_dir: Path) -> None:
    pytest.importorskip("llama_index.core")
    out = run_script("llamaindex_query_engine.py", data_dir)
    hits = out[: out.index("")]
    assert sorted(line.split(") ", 1)[1] for line in hits) == [
        "Nightly imports kept timing out on the old Postgres box",
        "The worker queue is drained by three consumers",
        "We moved the import job to a dedicated worker queue",
    ]
    assert all("[WHY/" in line for line in hits)
    prompt = out[out.index("the LLM was prompted with:") + 1 :]
    assert "We moved the import job to a dedicated worker queue" in prompt
    assert "Query: Why did we move the import job to a worker queue?" in prompt
    assert out[-1] == f"data dir: {data_dir}"


def test_llamaindex_memory(data_dir: Path) -> None:
    pytest.importorskip("llama_index.core")
    out = run_script("llamaindex_memory.py", data_dir)
    flushed = out[1 : out.index("")]
    assert flushed == [
        "  (user) My cat is called Miso and she hates the vacuum cleaner.",
        "  (assistant) Noted: Miso, no vacuuming near her.",
    ]
    start = out.index("the LLM was prompted with:") + 1
    assert out[start : start + 4] == ["system: <memory>", "<mnemon>",
                                      "- [general] My cat is called Miso and she hates the vacuum cleaner.",
                                      "- [general] Noted: Miso, no vacuuming near her."]
    assert "user: What is my cat called?" in out
    assert out[-1] == f"data dir: {data_dir}"
