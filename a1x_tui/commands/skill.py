"""``a1x-tui skill``: print the SKILL.md that teaches a coding agent to use a1x-tui (docs/agents.md).

The text is ``a1x_tui/SKILL.md`` (package data): a name and a description for agents that load skills,
then when to use it, how to set it up, check, follow, lint and fix. ``tests/agents/test_skill.py`` runs
every command it shows. Save it where the agent looks for skills, e.g.
``a1x-tui skill > ~/.claude/skills/a1x-tui/SKILL.md``.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Save it for your agent: a1x-tui skill > SKILLS_DIR/a1x-tui/SKILL.md"


def text() -> str:
    from importlib import resources

    return resources.files("a1x_tui").joinpath("SKILL.md").read_text(encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(text())
    return 0
