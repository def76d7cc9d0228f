"""The files of the hosts that load plugins instead of running commands (OpenClaw, Pi, OpenCode).

Each plugin is the small JavaScript in `templates/`: `runner.js` (run `mnemon hook <phase> --host <host>`
with the host's event on stdin, read its JSON answer) followed by the host's own file, which wires the host's
events to the phases and hands the answers back in the host's result. What to say, and when not to, stays in
`hooks.py`. Setup fills in the command (the mnemon the hooks run, by absolute path, and its options) and the
phases chosen; the file is rewritten on every install.
"""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"
CONSTANTS = "// @constants"


def script(host: str, template: str, marker: str, command: list[str], phases: list[str]) -> str:
    runner = (TEMPLATES / "runner.js").read_text(encoding="utf-8")
    constants = "\n".join([
        f"const COMMAND = {json.dumps(command)}; // the mnemon the hooks run, and its options",
        f"const HOST = {json.dumps(host)};",
        f"const PHASES = new Set({json.dumps(phases)}); // the phases chosen at setup",
    ])
    head = f"// mnemon's plugin for {host}, {marker}; `mnemon setup --eject --target {host}` removes it.\n"
    body = (TEMPLATES / template).read_text(encoding="utf-8")
    return head + runner.replace(CONSTANTS, constants) + "\n" + body


def json_file(value: dict[str, object]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
