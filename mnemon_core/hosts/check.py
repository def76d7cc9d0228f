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


def _prime_argv(plan: Plan, cli: list[str], options: list[str]) -> list[str] | None:
    target = plan.target
    if target.plugin:  # what the plugin runs
        return [*cli, *options, "hook", "prime", "--host", target.name]
    if target.phases:  # what the host runs
        return [str(target.scripts_dir(plan.cfg) / SCRIPTS["prime"])]
    return None  # a skill only


def trials(plans: list[Plan], cli: list[str], options: list[str]) -> list[tuple[bool, str]]:
    """(ok, the line) for each installed target. The processes run at once (each is a Python that opens the
    store); `mnemon status` is the same command for every target, so it runs once."""
    status = _start([*cli, *options, "status"])
    primes = [(_start(argv), json.dumps(dict(plan.target.check))) if (argv := _prime_argv(plan, cli, options))
              else None for plan in plans]
    primed = [_result(*p) if p is not None else None for p in primes]
    code, out, err = _result(status)
    try:
        insights = json.loads(out)["total_insights"] if code == 0 else None
    except (ValueError, KeyError, TypeError):
        insights = None
    answered = (f"mnemon status answered ({insights} insights)" if insights is not None
                else _failure("mnemon status", code, err))
    out_lines = []
    for plan, prime in zip(plans, primed):
        files = sum(1 for path, _, _ in plan.write if not path.name.startswith("."))
        steps = [f"wrote {files} file(s)"
                 + (f" and {plan.hooks} hook(s) in {plan.target.settings_file}" if plan.settings else "")]
        ok = insights is not None
        if prime is not None:
            p_code, p_out, p_err = prime
            if p_code != 0 or PRIME_START not in p_out:
                out_lines.append((False, "; ".join([*steps, _failure("the prime hook", p_code, p_err)])))
                continue
            steps.append("the prime hook ran")
        out_lines.append((ok, "; ".join([*steps, answered])))
    return out_lines


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
