"""What `mnemon setup` checks after an install, one line per target: what it wrote, that the installed prime
hook runs, and that `mnemon status` answers through the executable the hooks and the skill name, both with
no PATH beyond the system's (`os.defpath`), as a host that does not have mnemon's virtualenv would run them.
And once: whether `mnemon` on this PATH is this installation, and what to add when it is not.
"""

from __future__ import annotations

import json
import os
import subprocess

from .base import Plan
from .prompts import command_line, on_path_is
from .settings import SCRIPTS

TIMEOUT_S = 60.0  # a first prime opens the store (and may build it)
PRIME_START = "[mnemon] Memory active ("


def _start(argv: list[str]) -> subprocess.Popen[str] | OSError:
    env = dict(os.environ, PATH=os.defpath)
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    except OSError as e:
        return e


def _result(p: subprocess.Popen[str] | OSError, stdin: str = "") -> tuple[int, str, str]:
    if isinstance(p, OSError):
        return 127, "", str(p)
    try:
        out, err = p.communicate(stdin, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return 1, "", f"no answer within {TIMEOUT_S:.0f} s"
    return p.returncode, out, err


def _failure(what: str, code: int, err: str) -> str:
    lines = err.strip().splitlines()
    return f"{what} failed (exit {code}): {lines[-1] if lines else 'no output'}"


def trial(plan: Plan, cli: list[str], options: list[str]) -> tuple[bool, str]:
    """(ok, the line) for one installed target."""
    target = plan.target
    files = sum(1 for path, _, _ in plan.write if not path.name.startswith("."))
    wrote = f"{files} file(s)" + (f" and {plan.hooks} hook(s) in {target.settings_file}" if plan.settings else "")
    steps = [f"wrote {wrote}"]
    if target.plugin:  # what the plugin runs
        argv = [*cli, *options, "hook", "prime", "--host", target.name]
    elif target.phases:  # what the host runs
        argv = [str(target.scripts_dir(plan.cfg) / SCRIPTS["prime"])]
    else:
        argv = []
    # Both at once: each starts a Python that opens the store.
    status = _start([*cli, *options, "status"])
    prime = _start(argv) if argv else None
    if prime is not None:
        code, out, err = _result(prime, json.dumps(dict(target.check)))
        if code != 0 or PRIME_START not in out:
            _result(status)
            return False, f"{'; '.join(steps)}; " + _failure("the prime hook", code, err)
        steps.append("the prime hook ran")
    code, out, err = _result(status)
    try:
        insights = json.loads(out)["total_insights"] if code == 0 else None
    except (ValueError, KeyError, TypeError):
        insights = None
    if insights is None:
        return False, f"{'; '.join(steps)}; " + _failure("mnemon status", code, err)
    steps.append(f"mnemon status answered ({insights} insights)")
    return True, "; ".join(steps)


def path_advice(cli: list[str]) -> str:
    """Whether typing `mnemon` reaches this installation; the skill and the guide do not depend on it."""
    found = on_path_is(cli)
    named = f"the skill and the guide name {command_line(cli)}, so the agent's commands work as written"
    if found is None:
        return f"PATH      mnemon on PATH is this installation ({cli[0]})"
    where = os.path.dirname(cli[0]) if os.path.basename(cli[0]) == "mnemon" else None
    if found == "":
        return f"PATH      no mnemon on PATH: {named}" + (f"; add {where} to PATH to type mnemon yourself"
                                                          if where else "")
    return f"PATH      mnemon on PATH is {found}, another installation: {named}" + (
        f"; put {where} first in PATH to type this one" if where else "")
