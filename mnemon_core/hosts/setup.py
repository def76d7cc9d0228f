"""`mnemon setup [--target T ...] [--global] [--yes] [--eject]` (reference §8.1).

Without `--target`: the hosts detected (binary on PATH or user config dir present; for `--eject`, where
mnemon is installed), each confirmed interactively on a terminal, all of them with `--yes` or without a
terminal. Every target's changes are planned first, so a settings file that cannot be parsed or a file that
is someone else's stops the whole run before anything is written. After an install, the prompt files
(`<data dir>/prompt/`) and the store the hooks use exist, and each target is tried (check.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable
from pathlib import Path

from .. import console
from ..errors import ReadOnlyError, ValidationError
from . import REGISTRY
from .base import OPTIONAL_DEFAULTS, Plan, Target, installed, plan_eject, plan_install
from .check import path_advice, trials
from .prompts import cli_command, write_prompt_files

TARGETS: dict[str, Target] = {name: importlib.import_module(f"{__package__}.{module}").TARGET
                               for name, (module, _) in REGISTRY.items()}
PHASE_HELP = {
    "remind": "remind the agent to recall and remember on every prompt",
    "nudge": "after each reply, ask whether it warrants a memory",
    "compact": "before the context is compacted, ask to save what matters",
}

Ask = Callable[[str, bool], bool]
# After an install: (ok, one line) for each target, given the executable and the options the hooks run with.
Check = Callable[[list[Plan], list[str], list[str]], list[tuple[bool, str]]]


def tty_ask(question: str, default: bool) -> bool:
    hint = "Y/n" if default else "y/N"
    try:
        answer = input(f"{question} [{hint}] ").strip().lower()
    except EOFError:
        return default
    return default if not answer else answer in ("y", "yes")


def targets_of(names: list[str] | None) -> list[Target]:
    out: list[Target] = []
    for name in names or []:
        if name not in TARGETS:
            valid = ", ".join(list(TARGETS)[:-1]) + " or " + list(TARGETS)[-1]
            raise ValidationError(f'invalid target "{name}" (must be {valid})', field="target")
        if TARGETS[name] not in out:
            out.append(TARGETS[name])
    return out


def run(names: list[str] | None, *, is_global: bool, eject: bool, data_dir: Path, options: list[str],
        ask: Ask | None, ensure_store: Callable[[], str] | None = None, check: Check | None = None,
        failed: list[str] | None = None) -> list[str]:
    """The report. After an install, `ensure_store` makes the store the hooks use and says so, then `check`
    tries each target (the names of those that fail go to `failed`)."""
    chosen = targets_of(names)
    lines: list[str] = []
    if not chosen:
        found = [t for t in TARGETS.values()
                 if (installed(t, t.config_dir(is_global)) if eject else t.detected())]
        if not found:
            what = "mnemon installation" if eject else "supported host"
            lines.append(f"No {what} found ({', '.join(t.display for t in TARGETS.values())}); "
                         "name one with --target.")
            return lines
        verb = "Remove mnemon from" if eject else "Set up"
        chosen = [t for t in found if ask is None or ask(f"{verb} {t.display} ({t.config_dir(is_global)})?", True)]
    selection = dict(OPTIONAL_DEFAULTS)
    if ask is not None and not eject:
        offered = {p.name for t in chosen for p in t.phases} - {"prime"}
        for name, default in OPTIONAL_DEFAULTS.items():
            if name in offered:
                selection[name] = ask(f"Hook {name}: {PHASE_HELP[name]}?", default)
    cli = cli_command()
    plans: list[Plan] = []
    for t in chosen:
        cfg = t.config_dir(is_global)
        plans.append(plan_eject(t, cfg) if eject else plan_install(t, cfg, selection, cli, options, is_global))
    if not eject and plans:
        written = write_prompt_files(data_dir)
        states = ", ".join(f"{p.name} {'written' if new else 'kept'}" for p, new in written)
        lines.append(f"Prompts   {written[0][0].parent} ({states})")
    for plan in plans:
        plan.apply()
        t = plan.target
        if eject:
            lines.append(f"{t.display} ({plan.cfg})" + ("" if plan.report else ": nothing of mnemon's there"))
            lines.extend(plan.report)
        else:
            lines.append(f"{t.display} ({plan.cfg})")
            lines.extend(plan.report)
            lines.extend(t.advice(plan.cfg) if t.advice else [])
            lines.append(f"  {t.note}")
    if eject and plans:
        lines.append("The prompt files (guide.md, skill.md) and the stores stay in the data directory.")
    if not eject and plans:
        if ensure_store is not None:
            lines.append(ensure_store())
        if check is not None:
            for plan, (ok, line) in zip(plans, check(plans, cli, options)):
                lines.append(f"Check     {plan.target.display}: " + ("ok: " if ok else "FAILED: ") + line)
                if not ok and failed is not None:
                    failed.append(plan.target.name)
            lines.append(path_advice(cli))
        names = " ".join(p.target.name for p in plans)
        lines.append(f"Remove with: mnemon setup --eject --target {names}"
                     + (" --global" if is_global and any(not p.target.fixed for p in plans) else ""))
    return lines


def main(a: argparse.Namespace) -> str:
    """The `setup` command: flags → `run`, then the store the hooks use."""
    from ..config import UNSET, Settings

    if a.readonly:
        raise ReadOnlyError("setup")
    settings = Settings.resolve(data_dir=a.data_dir or UNSET, store=a.store or UNSET,
                                database_url=a.database_url or UNSET)
    # What the hooks must be told because they would not find it themselves: a data dir chosen by flag or
    # $MNEMON_DATA_DIR (the host may not pass that variable on), a store chosen by flag.
    options: list[str] = []
    if a.data_dir or os.environ.get("MNEMON_DATA_DIR"):
        options += ["--data-dir", str(settings.data_dir.absolute())]
    if a.store:
        options += ["--store", settings.store]
    ask = None if a.yes or not console.stdin().isatty() else tty_ask

    def ensure_store() -> str:
        from ..stores import StoreCatalog

        stores = StoreCatalog(settings=settings)
        if stores.exists(settings.store):
            return f'Store     "{settings.store}"'
        stores.create(settings.store)
        return f'Store     "{settings.store}" (created)'

    failed: list[str] = []
    lines = run(a.target, is_global=a.is_global, eject=a.eject, data_dir=settings.data_dir, options=options,
                ask=ask, ensure_store=ensure_store, check=trials, failed=failed)
    if failed:  # installed, but a hook does not run: say so on stdout, fail the command
        console.out().write("\n".join(lines) + "\n")
        raise ValidationError(f"the check after setup failed for {', '.join(failed)} (see above)", field="setup")
    return "\n".join(lines) + "\n"
