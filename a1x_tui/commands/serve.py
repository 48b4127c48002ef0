"""``a1x-tui serve [RUN|PATH]``: the app in a web browser, through textual-serve (the ``a1x-tui[serve]`` extra).

Each browser tab runs its own ``a1x-tui attach PATH`` (or ``a1x-tui``, the runs list, with no PATH) in a
child process that textual-serve drives over a websocket; closing the tab ends that child, which is
a client of the run like any dashboard: the run goes on (docs/ui.md "In a browser"). textual-serve has
no authentication, so it listens on 127.0.0.1 unless ``--public`` is given for another address, with a
warning; from a laptop, ``ssh -L 8000:127.0.0.1:8000 NODE`` and open http://127.0.0.1:8000. PATH is
checked first, as ``attach`` checks it (one line and exit 3 when it cannot be watched).
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import shlex
import socket
import sys
from pathlib import Path

DEFAULT_PORT = 8000


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (1 to 65535)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="RUN|PATH",
                        help="what each tab shows: as `a1x-tui attach PATH` (HOST:PATH too); none: the runs list")
    parser.add_argument("--config", metavar="TOML", help="the run's TOML (fixes are shown against it), as attach")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    parser.add_argument("--public", action="store_true",
                        help="allow an address other than loopback: anyone who reaches it can stop the run")
    parser.add_argument("--public-url", metavar="URL",
                        help="the URL browsers use to reach this server (default: http://HOST:PORT)")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def app_command(path: str | None, config: str | None) -> str:
    """The shell command textual-serve starts for each tab: this a1x-tui, with this interpreter."""
    words = [sys.executable, "-m", "a1x_tui"]
    if path is not None:
        words += ["attach", path] + (["--config", config] if config else [])
    return shlex.join(words)


def _refusal(path: str, config: str | None) -> str | None:
    """What attach would say about PATH before opening (None: it can be watched)."""
    from a1x_tui.remote.address import parse_remote

    if parse_remote(path) is not None:
        return None  # the far side is asked by each tab's attach
    from a1x_diagnostics.engine import unknown_reason
    from a1x_tui.ui.target import TargetError, resolve_target

    try:
        target = resolve_target(Path(path), Path(config) if config else None)
    except TargetError as exc:
        return str(exc)
    return unknown_reason(target.follow) if target.run_dir is None else None


def run(args: argparse.Namespace) -> int:
    if not is_loopback(args.host):
        if not args.public:
            print(f"a1x-tui serve: {args.host} is not a loopback address and textual-serve has no authentication: "
                  f"listen on 127.0.0.1 and reach it with `ssh -L {args.port}:127.0.0.1:{args.port} HOST`, or pass "
                  "--public", file=sys.stderr)
            return 3
        print(f"a1x-tui serve: WARNING: listening on {args.host}:{args.port} with no authentication: anyone who "
              "can reach it sees the run and can stop it or change its TOML", file=sys.stderr)
    if args.path is not None:
        reason = _refusal(args.path, args.config)
        if reason is not None:
            print(f"a1x-tui serve: {reason}", file=sys.stderr)
            return 3
        from a1x_tui.remote.address import parse_remote

        if parse_remote(args.path) is None:  # each tab's attach starts where the server does; absolute all the same
            args.path = os.path.abspath(args.path)
            args.config = os.path.abspath(args.config) if args.config else None
    try:
        from textual_serve.server import Server
    except ImportError:
        print("a1x-tui serve: textual-serve is not installed: pip install 'a1x-tui[serve]'", file=sys.stderr)
        return 3
    problem = _port_taken(args.host, args.port)
    if problem is not None:
        print(f"a1x-tui serve: {args.host}:{args.port}: {problem} (choose another with --port)", file=sys.stderr)
        return 3
    public_url = args.public_url
    if public_url is None and args.host in ("0.0.0.0", "::"):
        public_url = f"http://{socket.getfqdn()}:{args.port}"  # a browser cannot open 0.0.0.0
    what = f"a1x-tui attach {args.path}" if args.path else "a1x-tui"
    server = Server(app_command(args.path, args.config), host=args.host, port=args.port, title=what,
                    public_url=public_url)
    print(f"a1x-tui serve: {what} on {server.public_url} (each tab is its own dashboard; closing one never stops "
          "the run; Ctrl-C ends the server)", file=sys.stderr, flush=True)
    server.serve()
    return 0


def _port_taken(host: str, port: int) -> str | None:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            return "the port is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
    return None
