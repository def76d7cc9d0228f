"""The texts an agent reads: the guide (when to recall and what to remember), printed at every session start
by the prime hook, and the skill (the commands). Written once per data dir under `prompt/` (reference §8.1),
shared by every host and store; the skill also goes to each host's skills directory.

Both tell the agent to run `mnemon ...`, but the agent's shell need not have mnemon's virtualenv on its PATH.
So each command they name is written out as the executable the hooks run, by absolute path, with the data
directory and store the hooks were given (`name_executable`): the skill when setup writes it, the guide each
time the prime hook prints it. The files under `prompt/` keep the plain `mnemon`, to be edited.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

GUIDE = """\
### Recall: before you answer

Recall on every new user message unless all of these hold: it follows up on a topic that is already fully in
this conversation, it refers to no earlier session, decision or preference, and answering needs nothing
beyond this conversation. Recall before a web search as well: what is stored sharpens the query.

    mnemon recall "<focused keywords>" --limit 5

Write the query yourself, short and specific (names, topics, the decision in question); never paste the
user's message as the query.

### Remember: after you answer

After each substantive answer, decide whether the exchange holds something worth keeping. When unsure, keep
it: a low-importance memory costs little, lost context costs a lot.

Tier A, importance 4-5, always store:
- a directive of the user: a preference, a decision, a correction, "remember this"
- a conclusion you reached from several sources that took real judgment
- a lasting fact about the system or its architecture found in this session
- context about the user that no search could recover

Tier B, importance 2-3, store unless trivial:
- a preference mentioned in passing ("I usually...", "I'd rather not...")
- a topic the user is exploring, a question they raised, a framing they offered
- background on their projects, tools and setup

Tier C, importance 1, store only if it will help again:
- conversational context that makes the next session feel continuous
- a hint about how the user likes to communicate

Nothing of the above: store nothing. If a stored memory already covers it, store only what is new; if the
new fact replaces an old one, store it and link it to the old one with `--type supersedes`.

Use the whole scale: about a fifth at 4-5, half at 2-3, the rest at 1.

How: hand the writing to a sub-agent where your host has them (say what to store: the content, category,
importance, entities, and whether it updates something), so memory work stays out of the main conversation;
the sub-agent reads the mnemon skill for the commands. Without sub-agents, run it yourself after the answer,
briefly.

Never store secrets (passwords, keys, tokens), public or transient facts, or what git already tracks. One
memory holds at most 8000 bytes of UTF-8 (8000 letters of plain English, fewer of other scripts).
"""

SKILL = """\
---
name: mnemon
description: Persistent graph memory for agents. Recall what earlier sessions learned, remember facts, decisions and preferences, link related memories.
---
<!-- written by mnemon setup -->

# mnemon

## Workflow

1. Recall: `mnemon recall "<query>" --limit 10` (`--brief` for short excerpts, `mnemon show <id>` for one in full).
2. Remember: `mnemon remember "<fact>" --cat <category> --imp <1-5> --entities "e1,e2" --source agent`
   - Only byte-identical content is skipped as a duplicate; everything else is added, with an advisory
     `diff_suggestion` (ADD, UPDATE, CONFLICT, DUPLICATE).
   - The answer lists `semantic_candidates` and `causal_candidates`: memories that may be related.
3. Link, using your judgment on those candidates: link only a real cause and effect (`causal`) or a real
   relation of meaning (`semantic`; a high similarity alone is not enough). When the new memory replaces an
   older one, link new to old with `--type supersedes`: recall then ranks the old one lower.
   `mnemon link <id> <candidate> --type <causal|semantic|supersedes> --weight <0-1> [--meta '<json>']`

## Commands

```bash
mnemon remember "<fact>" --cat <category> --imp <1-5> --entities "e1,e2" --source agent
mnemon recall "<query>" --limit 10
mnemon search "<query>" --limit 10
mnemon show <id>
mnemon link <id1> <id2> --type <type> --weight <0-1> [--meta '<json>']
mnemon related <id> --edge causal
mnemon forget <id>
mnemon gc --threshold 0.4
mnemon gc --keep <id>
mnemon import --dry-run <file>
mnemon import <file>
mnemon status
mnemon log
mnemon store list | create <name> | set <name> | remove <name>
```

## Importing old chats

Asked to import chats, notes or other exported context: write a `memory_draft.json` (format in the mnemon
docs, `docs/import.md`; `schema_version: "1"`, `insights` with `content`, `category`, `importance`, `tags`,
`entities`, optional `created_at`, and optional `edges` by `source_index`/`target_index`). Run
`mnemon import --dry-run <file>`, then `mnemon import <file>` once it validates, and check the `errors` field:
an import can partly succeed.

## Guardrails

- Memory work (`remember`, `link`) belongs in a sub-agent where the host has them, not in the main conversation.
- Never store secrets, passwords, tokens or keys.
- Categories: `preference`, `decision`, `fact`, `insight`, `context`, `general`.
- Edge types: `temporal`, `semantic`, `causal`, `entity`, `supersedes`.
- At most 8000 bytes (UTF-8) per memory: about 2,600 Chinese characters.
"""

PROMPT_FILES = {"guide.md": GUIDE, "skill.md": SKILL}
# `mnemon` where a command starts: at the start of a line (a code block) or after a backtick (inline code),
# followed by its subcommand; not the word in prose ("the mnemon skill") or a heading.
_COMMAND = re.compile(r"(?m)(^[ \t]*|`)mnemon(?=[ \t]+[a-z])")


def cli_command() -> list[str]:
    """The mnemon that runs now, by absolute path: the hooks run it whatever PATH the host has. In the resident
    engine `sys.argv` is the engine's, so the console script is looked for next to the interpreter, which is
    the one the `mnemon` that started the engine runs on (a virtualenv's `bin/`)."""
    exe = sys.argv[0] if sys.argv else ""
    if os.path.basename(exe) == "mnemon" and os.path.isfile(exe) and os.access(exe, os.X_OK):
        return [os.path.abspath(exe)]
    beside = os.path.join(os.path.dirname(sys.executable), "mnemon")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return [beside]
    return [sys.executable, "-m", "mnemon_core"]  # `python -m mnemon_core` with no entry point installed


def command_line(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def name_executable(text: str, command: list[str]) -> str:
    """`text` with every `mnemon <subcommand>` it tells the agent to run written as `command` (the executable
    and its global options), so the command works as written in a shell that has no `mnemon` on its PATH."""
    line = command_line(command)
    return _COMMAND.sub(lambda m: m.group(1) + line, text)


def on_path_is(command: list[str], path: str | None = None) -> str | None:
    """Where `mnemon` on PATH (this process's, or `path`) leads when that is not `command`'s executable, ""
    when there is none, None when it is this one."""
    found = shutil.which("mnemon", path=path)
    if found and os.path.realpath(found) == os.path.realpath(command[0]):
        return None
    return found or ""


def prompt_dir(data_dir: Path) -> Path:
    return data_dir / "prompt"


def write_prompt_files(data_dir: Path) -> list[tuple[Path, bool]]:
    """Write `prompt/guide.md` and `prompt/skill.md` where they are missing. A file that is there stays as it
    is: the guide is meant to be edited, and setup runs again for each host. Returns (path, written)."""
    from .jsonc import write_atomic

    out = []
    for name, text in PROMPT_FILES.items():
        path = prompt_dir(data_dir) / name
        if path.exists():
            out.append((path, False))
        else:
            write_atomic(path, text)
            out.append((path, True))
    return out
