"""Every code block of the README runs as written (issue 13, item 11): Python blocks each in a fresh process
and a fresh data dir, the shell blocks with `mnemon` and `python` on PATH, the LLM block against a local fake
server (its endpoint is the one thing substituted), and every `pip install` names extras that exist and bring
what the examples import."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from test_extractor import FIX, llm_stand_in

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", README, re.S | re.M)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
LLM_ENDPOINT = "http://localhost:11434/v1"


def blocks(lang: str, having: str = "") -> list[str]:
    return [code for lang_, code in BLOCKS if lang_ == lang and having in code]


def test_the_readme_has_the_blocks_these_tests_run() -> None:
    assert [lang for lang, _ in BLOCKS] == ["bash", "bash", "bash", "python", "bash", "python", "python", "json",
                                            "bash"]


def user_env(tmp_path: Path) -> dict[str, str]:
    """A shell as after `pip install`: `mnemon` and `python` on PATH, a fresh data dir, no embedding model."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "mnemon").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mnemon_core "$@"\n')
    (bin_dir / "mnemon").chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "integrations"), str(ROOT / "extractor")])
    env["MNEMON_DATA_DIR"] = str(tmp_path / "data")
    env["MNEMON_EMBEDDER"] = "none"
    return env


def run(argv: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("code", blocks("python"), ids=lambda c: c.splitlines()[0])
def test_python_blocks_run(code: str, tmp_path: Path) -> None:
    for module in re.findall(r"^from (\w+)", code, re.M):
        pytest.importorskip(module)
    run([sys.executable, "-c", code], tmp_path, user_env(tmp_path))


def test_the_library_block_links_and_recalls(tmp_path: Path) -> None:
    (code,) = blocks("python", "mem.link(")
    out = run([sys.executable, "-c", code], tmp_path, user_env(tmp_path)).stdout
    # a WHY question: the linked cause comes first
    assert out.strip() == str(["Milvus took seconds to filter our vectors", "Chose Qdrant because of filtering speed"])


def test_the_command_line_block_runs(tmp_path: Path) -> None:
    (code,) = blocks("bash", "mnemon remember")
    env = user_env(tmp_path)
    out = run(["bash", "-euo", "pipefail", "-c", code], tmp_path, env).stdout
    assert 'Active store set to "default"' in out and (tmp_path / "cwd" / "graph.html").exists()
    log = subprocess.run([sys.executable, "-m", "mnemon_core", "log", "--limit", "100"], capture_output=True,
                         text=True, env=env, check=True).stdout
    ops = [line.split()[1] for line in log.splitlines()[2:]]
    assert {"remember", "link", "forget", "gc_keep", "import"} <= set(ops)


def test_the_llm_block_runs_against_a_local_server(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from mnemon_extractor.testing import FakeOpenAIServer

    (code,) = blocks("bash", "mnemon extract")
    assert LLM_ENDPOINT in code
    work = tmp_path / "cwd"
    work.mkdir()
    shutil.copy(FIX / "chatgpt_conversations.json", work / "conversations.json")
    with FakeOpenAIServer(llm_stand_in) as server:
        run(["bash", "-euo", "pipefail", "-c", code.replace(LLM_ENDPOINT, server.base_url)], tmp_path,
            user_env(tmp_path))
    assert json.loads((work / "memory_draft.json").read_text(encoding="utf-8"))["schema_version"] == "1"
    assert any(r["messages"][0]["content"].startswith("You judge links") for r in server.requests)


def test_the_mcp_config_is_json() -> None:
    (code,) = blocks("json")
    assert json.loads(code)["mcpServers"]["mnemon"]["args"] == ["mcp", "serve"]


# ---------------------------------------------------------------- pip install lines: the extras exist and suffice


def pip_targets(text: str) -> list[str]:
    return re.findall(r"""pip install (?:-e )?["']?([.\w-]+(?:\[[\w,]+\])?)["']?""", text)


def extras_of(target: str) -> set[str]:
    """The extras a pip target names, with `all` (and any extra naming others) expanded."""
    found = re.search(r"\[([\w,]+)\]", target)
    todo, out = list(found.group(1).split(",")) if found else [], set()
    while todo:
        name = todo.pop()
        assert name in EXTRAS, f"no extra [{name}] in pyproject.toml"
        out.add(name)
        for req in EXTRAS[name]:
            nested = re.fullmatch(r"mnemon-core\[([\w,]+)\]", req)
            if nested:
                todo.extend(nested.group(1).split(","))
    return out


def distributions(extras: set[str]) -> set[str]:
    reqs = [*PYPROJECT["project"]["dependencies"], *(r for e in extras for r in EXTRAS[e])]
    return {re.split(r"[\[<>=~!; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_readme_pip_lines_name_existing_extras() -> None:
    targets = [t for code in blocks("bash", "pip install") for t in pip_targets(code)]
    assert targets == [".", ".[test,all]", "mnemon-core[langchain]", "mnemon-core[llamaindex]"]
    for t in targets:
        extras_of(t)


COOKBOOK = sorted((ROOT / "cookbook").glob("*.py"))
OWN = {"mnemon_core", "mnemon_extractor", "langchain_mnemon", "llama_index_mnemon"}


@pytest.mark.parametrize("script", COOKBOOK, ids=lambda p: p.name)
def test_each_cookbook_install_line_brings_what_the_script_imports(script: Path) -> None:
    """`pip install "mnemon-core[langchain]"` was not enough for langgraph_agent.py: it imports `langchain`."""
    text = script.read_text(encoding="utf-8")
    (target,) = pip_targets(text)
    allowed = distributions(extras_of(target))
    by_module = importlib.metadata.packages_distributions()
    imported = set(re.findall(r"^\s*(?:from|import) (\w+)", text, re.M)) - OWN - set(sys.stdlib_module_names)
    for module in sorted(imported):
        dists = {d.lower().replace("_", "-") for d in by_module.get(module, [])}
        assert dists, f"{script.name}: {module} is not installed, cannot tell which distribution brings it"
        assert dists & allowed, f"{script.name} imports {module} ({', '.join(dists)}), not in {target}"
