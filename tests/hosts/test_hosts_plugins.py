"""The plugin hosts, OpenClaw, Pi and OpenCode: what setup writes for them, and each plugin loaded by node and
driven with events of the shapes its host sends (docs/agents.md), calling the real `mnemon hook`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hostenv import cfg_of, command, host, mnemon, tree  # noqa: F401  (host: the fixture)
from mnemon_core.hosts import hooks, setup
from mnemon_core.hosts.hooks import COMPACT_SUMMARY, COMPACTED, NUDGE_NEXT, REMIND
from mnemon_core.hosts.prompts import cli_command

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
PLUGIN = {"openclaw": "extensions/mnemon/index.js", "pi": "extensions/mnemon.ts", "opencode": "plugins/mnemon.js"}


def node(h, script: str, plugin: Path, *args: Any) -> Any:
    """Run `script` (an ES module) with node: argv[2] is the plugin (copied to .mjs, as Pi's jiti and OpenCode's
    Bun load it as a module), argv[3] the command that remembers; it prints one JSON value."""
    module = h.project.parent / f"plugin-{plugin.name}.mjs"
    shutil.copyfile(plugin, module)
    harness = h.project.parent / "harness.mjs"
    harness.write_text(script)
    remember = [*command(h), "remember", "Alice prefers short answers"]
    p = subprocess.run([NODE, str(harness), str(module), json.dumps(remember), *map(str, args)], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PATH": os.defpath}, cwd=h.project)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def install_all_phases(h, target: str) -> Path:
    """Setup with every optional phase chosen (compact is off by default), as the terminal menu would."""
    setup.run([target], is_global=False, eject=False, data_dir=h.data, options=["--data-dir", str(h.data)],
              ask=lambda question, default: True)
    return cfg_of(h, target) / PLUGIN[target]


def prime(h, insights: int = 0) -> str:
    status = json.loads(mnemon(h, "status").out)
    assert status["total_insights"] == insights
    return hooks.prime_text(insights, status["edge_count"], h.data, command(h))


def drive(h, target: str, script: str) -> tuple[Any, str, str]:
    """Install `target` with every phase, run `script` on its plugin (the script remembers one memory after its
    first step); returns what it printed and the prime texts before and after that memory."""
    plugin = install_all_phases(h, target)
    before = prime(h)
    out = node(h, script, plugin)
    return out, before, prime(h, 1)


# ---------------------------------------------------------------- what setup writes


@pytest.mark.parametrize("target", ["openclaw", "pi", "opencode"])
def test_the_plugin_calls_this_mnemon_with_the_phases_chosen(host, target: str) -> None:
    r = mnemon(host, "setup", "--target", target)
    assert r.code == 0, r.err
    cfg = cfg_of(host, target)
    text = (cfg / PLUGIN[target]).read_text()
    assert text.startswith(f"// mnemon's plugin for {target}, written by mnemon setup; "
                           f"`mnemon setup --eject --target {target}` removes it.\n")
    assert f"const COMMAND = {json.dumps(command(host))};" in text
    assert f'const HOST = "{target}";' in text and 'const PHASES = new Set(["prime", "remind", "nudge"]);' in text
    assert f"  plugin    {cfg / PLUGIN[target]} (prime, remind, nudge)" in r.out
    if NODE:
        module = host.project.parent / "check.mjs"
        module.write_text(text)
        p = subprocess.run([NODE, "--check", str(module)], capture_output=True, text=True, timeout=60)
        assert (p.returncode, p.stderr) == (0, "")


def test_openclaw_goes_to_the_state_dir_whatever_the_scope(host) -> None:
    assert mnemon(host, "setup", "--target", "openclaw").code == 0
    assert tree(host.project) == {}
    cfg = host.home / ".openclaw"
    assert sorted(tree(cfg)) == ["extensions/mnemon/index.js", "extensions/mnemon/openclaw.plugin.json",
                                 "extensions/mnemon/package.json", "skills/mnemon/.mnemon-setup.json",
                                 "skills/mnemon/SKILL.md"]
    manifest = json.loads((cfg / "extensions/mnemon/openclaw.plugin.json").read_text())
    assert manifest["id"] == "mnemon" and manifest["configSchema"] == {
        "type": "object", "additionalProperties": False, "properties": {}}
    package = json.loads((cfg / "extensions/mnemon/package.json").read_text())
    assert (package["type"], package["openclaw"]) == ("module", {"extensions": ["./index.js"]})
    state = host.home / "state"
    r = mnemon(host, "setup", "--global", "--target", "openclaw", env={"OPENCLAW_STATE_DIR": str(state)})
    assert r.code == 0 and (state / "extensions/mnemon/index.js").is_file()
    assert r.out.rstrip().endswith("--eject --target openclaw")  # no --global: there is one place only


@pytest.mark.parametrize(
    ("config", "note"),
    [
        ('{"plugins": {"allow": ["voice-call"]}}',
         'sets plugins.allow without "mnemon": add it, or the plugin stays off'),
        ('{"plugins": {"entries": {"mnemon": {"enabled": false}}}}',
         "disables the plugin (plugins.entries.mnemon.enabled is false)"),
        ("{plugins: {allow: ['voice-call']}}", 'is not plain JSON: if it sets plugins.allow, add "mnemon" to it'),
        ('{"plugins": {"allow": ["mnemon"]}}', None),
    ],
)
def test_openclaw_config_that_would_keep_the_plugin_off_is_pointed_out_and_left_alone(host, config, note) -> None:
    path = host.home / ".openclaw" / "openclaw.json"
    path.parent.mkdir()
    path.write_text(config)
    r = mnemon(host, "setup", "--target", "openclaw")
    assert r.code == 0, r.err
    notes = [line for line in r.out.splitlines() if line.startswith("  note ")]
    assert notes == ([f"  note      {path} {note}"] if note else [])
    assert path.read_text() == config


def test_pi_and_opencode_global_dirs(host) -> None:
    agent, xdg = host.home / "pi-agent", host.home / "xdg"
    r = mnemon(host, "setup", "--global", "--target", "pi", "opencode",
               env={"PI_CODING_AGENT_DIR": str(agent), "XDG_CONFIG_HOME": str(xdg)})
    assert r.code == 0, r.err
    assert (agent / "extensions/mnemon.ts").is_file() and (agent / "skills/mnemon/SKILL.md").is_file()
    assert (xdg / "opencode/plugins/mnemon.js").is_file() and (xdg / "opencode/skills/mnemon/SKILL.md").is_file()
    assert tree(host.project) == {}
    r = mnemon(host, "setup", "--global", "--target", "pi")
    assert r.code == 0 and (host.home / ".pi/agent/extensions/mnemon.ts").is_file()


# ---------------------------------------------------------------- each plugin, run by node

OPENCLAW = """
import { execFileSync } from "node:child_process";
const [file, remember] = process.argv.slice(2);
const plugin = (await import(file)).default;
const on = {};
plugin.register({ on: (name, handler) => { on[name] = handler; } });
const s1 = { sessionKey: "agent:main:s1" };
const user = (text) => ({ role: "user", content: text });
const reply = (text) => ({ role: "assistant", content: [{ type: "text", text }, { type: "toolCall", name: "exec" }] });
const out = [];
out.push(await on.before_prompt_build({ prompt: "hi", messages: [user("hi")] }, s1));
execFileSync(JSON.parse(remember)[0], JSON.parse(remember).slice(1));
out.push(await on.before_prompt_build({ prompt: "go on", messages: [user("hi"), reply("Refactored the parser.")] }, s1));
out.push(await on.before_prompt_build({ prompt: "ok", messages: [reply("Stored: ran mnemon remember.")] }, s1));
await on.after_compaction({ messageCount: 3 }, s1);
out.push(await on.before_prompt_build({ prompt: "and?", messages: [] }, s1));
out.push(await on.before_prompt_build({ prompt: "and?", messages: [] }, s1));
out.push(await on.before_prompt_build({ prompt: "new", messages: [] }, { sessionKey: "agent:main:s2" }));
console.log(JSON.stringify(out));
"""


@needs_node
def test_openclaw_plugin(host) -> None:
    out, p0, p1 = drive(host, "openclaw", OPENCLAW)
    assert out == [
        {"appendSystemContext": p0, "prependContext": REMIND},
        {"appendSystemContext": p0, "prependContext": f"{REMIND}\n\n{NUDGE_NEXT}"},  # once per session
        {"appendSystemContext": p0, "prependContext": REMIND},  # the reply dealt with memory
        {"appendSystemContext": p0, "prependContext": f"{COMPACTED}\n\n{REMIND}"},
        {"appendSystemContext": p0, "prependContext": REMIND},  # said once
        {"appendSystemContext": p1, "prependContext": REMIND},  # a new session is primed afresh
    ]


PI = """
import { execFileSync } from "node:child_process";
const [file, remember] = process.argv.slice(2);
const extension = (await import(file)).default;
const on = {};
extension({ on: (name, handler) => { on[name] = handler; } });
const reply = (text) => ({ role: "assistant", content: [{ type: "text", text }, { type: "thinking", thinking: "…" }] });
const turn = (prompt) => on.before_agent_start({ prompt, images: [], systemPrompt: "BASE" }, {});
const out = [];
await on.session_start({ reason: "startup" }, {});
out.push(await turn("hi"));
execFileSync(JSON.parse(remember)[0], JSON.parse(remember).slice(1));
await on.agent_end({ messages: [{ role: "user", content: "hi" }, reply("Refactored the parser.")] }, {});
out.push(await turn("go on"));
await on.agent_end({ messages: [reply("No memory is needed for this one.")] }, {});
out.push(await turn("ok"));
out.push((await on.context({ messages: [{ role: "user", content: "ok" }] }, {})) ?? null);
await on.session_compact({ compactionEntry: {}, fromExtension: false }, {});
const compacted = await on.context({ messages: [{ role: "user", content: "ok" }] }, {});
out.push(compacted.messages.map(({ timestamp, ...m }) => ({ ...m, timestamped: typeof timestamp === "number" })));
out.push((await on.context({ messages: [] }, {})) ?? null);
await on.session_start({ reason: "new" }, {});
out.push(await turn("new"));
console.log(JSON.stringify(out));
"""


@needs_node
def test_pi_extension(host) -> None:
    out, p0, p1 = drive(host, "pi", PI)
    assert out == [
        {"systemPrompt": "\n\n".join(["BASE", p0, REMIND])},
        {"systemPrompt": "\n\n".join(["BASE", p0, REMIND, NUDGE_NEXT])},  # guide once a session, not stacked
        {"systemPrompt": "\n\n".join(["BASE", p0, REMIND])},
        None,
        [{"role": "user", "content": "ok", "timestamped": False},
         {"role": "custom", "customType": "mnemon", "content": COMPACTED, "display": False, "timestamped": True}],
        None,
        {"systemPrompt": "\n\n".join(["BASE", p1, REMIND])},
    ]


OPENCODE = """
import { execFileSync } from "node:child_process";
const [file, remember] = process.argv.slice(2);
const { MnemonPlugin } = await import(file);
const hooks = await MnemonPlugin({ directory: process.cwd(), worktree: process.cwd() });
const system = async (input) => { const o = { system: ["BASE"] }; await hooks["experimental.chat.system.transform"](input, o); return o.system; };
const message = (role, id, text) => ({ info: { role, id, sessionID: "s1" }, parts: [{ id: `p-${id}`, type: "text", text }] });
const out = [];
out.push(await system({ sessionID: "s1", model: {} }));
execFileSync(JSON.parse(remember)[0], JSON.parse(remember).slice(1));
out.push(await system({ sessionID: "s1", model: {} }));
out.push(await system({ model: {} }));
const first = { messages: [message("user", "m1", "hi")] };
await hooks["experimental.chat.messages.transform"]({}, first);
await hooks["experimental.chat.messages.transform"]({}, first);
out.push(first.messages[0].parts);
const second = { messages: [message("user", "m1", "hi"), message("assistant", "m2", "Refactored the parser."), message("user", "m3", "go on")] };
await hooks["experimental.chat.messages.transform"]({}, second);
out.push(second.messages[2].parts.map((p) => p.text));
const compaction = { context: [] };
await hooks["experimental.session.compacting"]({ sessionID: "s1" }, compaction);
out.push(compaction.context);
out.push(await system({ sessionID: "s2", model: {} }));
console.log(JSON.stringify(out));
"""


@needs_node
def test_opencode_plugin(host) -> None:
    out, p0, p1 = drive(host, "opencode", OPENCODE)
    assert out == [
        ["BASE", p0], ["BASE", p0], ["BASE"],  # once per session; no session, no guide
        [{"id": "p-m1", "type": "text", "text": "hi"},
         {"type": "text", "text": REMIND, "synthetic": True, "id": "mnemon-m1-1", "sessionID": "s1",
          "messageID": "m1"}],  # added once, however often the messages are transformed
        ["go on", REMIND, NUDGE_NEXT],
        [COMPACT_SUMMARY],
        ["BASE", p1],
    ]


@needs_node
def test_a_phase_left_out_at_setup_does_nothing(host) -> None:
    assert mnemon(host, "setup", "--target", "opencode").code == 0  # the defaults: compact off
    script = """
const { MnemonPlugin } = await import(process.argv[2]);
const hooks = await MnemonPlugin({});
const compaction = { context: [] };
await hooks["experimental.session.compacting"]({ sessionID: "s1" }, compaction);
console.log(JSON.stringify(compaction.context));
"""
    assert node(host, script, cfg_of(host, "opencode") / PLUGIN["opencode"]) == []


@needs_node
def test_a_hook_that_fails_adds_nothing_and_says_why(host) -> None:
    plugin = install_all_phases(host, "pi")
    text = plugin.read_text().replace(json.dumps(command(host)), json.dumps([*cli_command(), "--store", "nope"]))
    plugin.write_text(text)
    script = """
const extension = (await import(process.argv[2])).default;
const on = {};
extension({ on: (name, handler) => { on[name] = handler; } });
console.log(JSON.stringify((await on.before_agent_start({ prompt: "hi", systemPrompt: "BASE" }, {})) ?? null));
"""
    module = host.project.parent / "plugin.mjs"
    shutil.copyfile(plugin, module)
    harness = host.project.parent / "harness.mjs"
    harness.write_text(script)
    p = subprocess.run([NODE, str(harness), str(module)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout) == {"systemPrompt": f"BASE\n\n{REMIND}"}
    assert p.stderr == ("[mnemon] hook prime failed: Error: store \"nope\" does not exist "
                        "(use 'mnemon store create nope' first)\n")


# ---------------------------------------------------------------- the envelopes, through the CLI


@pytest.mark.parametrize(
    ("host_name", "phase", "payload", "expected"),
    [
        ("openclaw", "remind", {}, {"prependContext": REMIND}),
        ("openclaw", "nudge", {"last_assistant_message": None}, None),  # the first prompt
        ("openclaw", "nudge", {"last_assistant_message": {"role": "assistant", "content": "Done."}},
         {"prependContext": NUDGE_NEXT}),
        ("openclaw", "compact", {}, {"prependContext": COMPACTED}),
        ("pi", "remind", {"prompt": "hi"}, {"systemPrompt": REMIND}),
        ("pi", "nudge", {"last_assistant_message": {"content": [{"type": "text", "text": "durable memory: none"}]}},
         None),
        ("pi", "compact", {}, {"message": {"role": "custom", "customType": "mnemon", "content": COMPACTED,
                                            "display": False}}),
        ("opencode", "remind", {}, {"part": {"type": "text", "text": REMIND, "synthetic": True}}),
        ("opencode", "nudge", {"last_assistant_message": {"info": {"role": "assistant"},
                                                          "parts": [{"type": "text", "text": "Done."}]}},
         {"part": {"type": "text", "text": NUDGE_NEXT, "synthetic": True}}),
        ("opencode", "compact", {"session_id": "s1"}, {"context": COMPACT_SUMMARY}),
    ],
)
def test_plugin_hook_envelopes(host, host_name: str, phase: str, payload: dict, expected: dict | None) -> None:
    r = mnemon(host, "hook", phase, "--host", host_name, input=json.dumps(payload))
    assert r.code == 0 and r.err == ""
    assert (json.loads(r.out) if r.out else None) == expected
    assert r.out.count("\n") == (1 if expected else 0)
