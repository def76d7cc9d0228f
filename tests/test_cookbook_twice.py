"""Every cookbook script runs twice in a row on one data dir that does not exist yet, as a user who tries a
script again would (issue 37, items 2 and 3): the second run meets what the first stored (a `remember` of the
same text is skipped, an import's insights are duplicates) and must still finish without an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "cookbook").glob("*.py"))
# The packages each script imports beyond the core (the extras of `pip install -e ".[all]"`).
NEEDS = {
    "langchain_chain.py": ["langchain_core"], "langgraph_agent.py": ["langgraph", "langchain.agents"],
    "llamaindex_memory.py": ["llama_index.core"], "llamaindex_query_engine.py": ["llama_index.core"],
    "extract_chatgpt.py": ["openai"], "judge_causal.py": ["openai"],
}


def test_every_script_is_listed() -> None:
    assert set(NEEDS) | {"quickstart.py"} == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_runs_twice_on_one_new_data_dir(script: str, tmp_path: Path) -> None:
    for module in NEEDS.get(script, []):
        pytest.importorskip(module)
    data_dir = tmp_path / "not" / "yet" / "there"
    env = {**os.environ, "MNEMON_DATA_DIR": str(data_dir), "MNEMON_EMBEDDER": "none", "MNEMON_DAEMON": "off",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations"), str(ROOT / "extractor")])}
    for run in ("first", "second"):
        proc = subprocess.run([sys.executable, str(ROOT / "cookbook" / script)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300, check=False)
        assert (proc.returncode, proc.stderr) == (0, ""), f"{run} run of {script}: {proc.stderr}"
        assert proc.stdout.strip(), f"{run} run of {script} printed nothing"
