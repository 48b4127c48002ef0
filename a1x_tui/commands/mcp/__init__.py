"""``a1x-tui mcp``: an MCP server over stdio for coding agents (docs/agents.md).

Tools: ``check``, ``findings_since``, ``lint``, ``fix_preview``, ``fix_apply``, ``status``, ``stop``, each
answering with the JSON of the matching command. Needs the optional extra (``pip install
'a1x-tui[mcp]'``); without it, one line says so and the exit code is 3. Register it with an agent as the
command ``a1x-tui mcp``.

``tools`` and ``follows`` hold what the tools do (the other commands' library calls, their JSON) and
import no SDK; ``server`` wires them to the official ``mcp`` SDK, imported only here.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Speaks MCP on stdin/stdout until the client closes it; starts no run."


def run(args: argparse.Namespace) -> int:
    try:
        from a1x_tui.commands.mcp.server import serve_stdio
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        print("a1x-tui mcp: the MCP SDK is not installed: pip install 'a1x-tui[mcp]'", file=sys.stderr)
        return 3
    guard, sys.stdout = sys.stdout, sys.__stdout__  # the SDK claims the real stdout for the protocol
    try:
        return serve_stdio()
    finally:
        sys.stdout = guard
