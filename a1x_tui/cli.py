"""The ``a1x-tui`` command line: a thin dispatcher over ``a1x_tui.commands``.

``a1x-tui`` alone opens the interactive app; ``a1x-tui --check PATH`` is the headless report
for agents (it never imports Textual); everything else is a subcommand.
"""

from __future__ import annotations

# Only modules the interpreter has loaded by now, at the top: a Ctrl-C while this module is imported
# (before ``entry`` can catch it) would print a traceback. argparse and the rest load in the functions.
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from a1x_tui import __version__

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import ModuleType

# name -> (module under a1x_tui.commands, one-line help). Modules load lazily, on use.
COMMANDS: dict[str, tuple[str, str]] = {
    "lint": ("lint", "check a recipe TOML before launch (same findings and exit codes as --check)"),
    "fix": ("fix", "show or apply the TOML change that cures a finding"),
    "watch": ("watch", "follow a live run headlessly and print findings as they come and go"),
    "attach": ("attach", "open the dashboard on a run directory or a Cosmos-RL log directory"),
    "init": ("init", "write a commented run spec with defaults"),
    "preflight": ("preflight", "check this machine against a run spec before anything downloads"),
    "run": ("run", "start a supervised run from a run spec (detached)"),
    "status": ("status", "show the state of a supervised run"),
    "stop": ("stop", "stop a supervised run and every process it started"),
    "restart": ("restart", "restart one stage of a supervised run"),
    "gpu-agent": ("gpu_agent", "sample this node's GPUs into a run directory"),
    "demo": ("demo", "a complete simulated run: no GPU, no network"),
    "mcp": ("mcp", "serve the checks, findings and fixes to coding agents over MCP (stdio)"),
    "skill": ("skill", "print the SKILL.md that teaches a coding agent to use a1x-tui"),
    "serve": ("serve", "the app in a web browser (textual-serve), on 127.0.0.1 by default"),
}


USAGE_EXIT = 3  # a bad command line is "unknown" to the monitoring-plugin exit codes (0-3), never critical
FAILED_EXIT = {"fix": 2}  # a command that could not finish (output lost, a file unwritable, Ctrl-C): else 3
STARTS = frozenset({"", "demo", "run", "restart", "attach"})  # they start or hold a run: Ctrl-C is theirs (130)


def _parser(**kwargs: Any) -> argparse.ArgumentParser:
    """argparse's parser, but a usage error exits 3 (argparse's own 2 reads as CRITICAL): the usage
    line and one line naming the problem, on stderr."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.print_usage(sys.stderr)
            self.exit(USAGE_EXIT, f"{self.prog}: error: {message}\n")

    return Parser(**kwargs)


def _load(module: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"a1x_tui.commands.{module}")


def _check_parser() -> argparse.ArgumentParser:
    p = _parser(
        prog="a1x-tui --check",
        description="Diagnose a Cosmos-RL run from its logs. stdout: the report only; "
        "stderr: diagnostics. Exit: 0 ok, 1 warning, 2 critical, 3 unknown.",
    )
    p.add_argument("--check", dest="check", action="store_true", required=True,
                   help="produce the health report (this mode)")
    _load("check").add_arguments(p)
    return p


def _main_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<10} {help_text}" for name, (_, help_text) in COMMANDS.items())
    p = _parser(
        prog="a1x-tui",
        usage="%(prog)s [-h] [--version] [--check PATH] | %(prog)s COMMAND [OPTIONS]",
        description="Drive, watch and diagnose Alpamayo RL post-training (Cosmos-RL + GRPO). "
        "Run with no arguments for the interactive app; `a1x-tui --check PATH` for a headless report.",
        epilog=f"commands:\n{commands}\n\n`a1x-tui COMMAND --help` for a command's options.",
        formatter_class=_raw_description(),
    )
    p.add_argument("--version", action="version", version=f"a1x-tui {__version__}")
    p.add_argument("--check", metavar="PATH", help="headless health report (see `a1x-tui --check --help`)")
    return p


def _raw_description() -> type[argparse.HelpFormatter]:
    import argparse

    return argparse.RawDescriptionHelpFormatter


def _command_parser(name: str) -> argparse.ArgumentParser:
    module, help_text = COMMANDS[name]
    p = _parser(prog=f"a1x-tui {name}", description=help_text)
    _load(module).add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch; only the chosen command's module is imported.

    For every command, a stdout whose reader went away (``| head -1``) ends the output quietly and the
    command keeps its own exit code (``a1x_tui._stdout``)."""
    from a1x_tui import _stdout

    args_list = list(sys.argv[1:] if argv is None else argv)
    # a1x-tui uses no pydantic plugin: without this, the first model class reads the entry points of
    # every installed distribution (a GPU node's venv holds hundreds), which --check pays at start-up.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    real = sys.stdout
    nowhere = open(os.devnull, "w", encoding="utf-8") if real is None else None  # noqa: SIM115 - closed below
    guard = _stdout.install(nowhere or real)
    if nowhere is not None:  # started with stdout closed (>&-): as if its reader had gone at once
        _stdout.closed.set()
    sys.stdout = guard  # a TextIO in all but name (the rest is delegated)
    name = "--check" if "--check" in args_list else (args_list[0] if args_list else "")
    failed = FAILED_EXIT.get(name, 3)
    try:
        code = _dispatch(args_list)
    except BrokenPipeError:  # written around the guard (os.write): same rule, status unknown
        guard.reader_gone()
        code = 1
    except SystemExit:  # argparse's --help, --version and usage errors: as they are, unless output was lost
        guard.flush()
        if not _stdout.failure:
            raise
        code = failed
    except KeyboardInterrupt:  # Ctrl-C where the command has no handling of its own: one line, no traceback
        if name in STARTS:  # a command that starts a run handles Ctrl-C itself (a1x_tui._interrupt): 130 here
            raise
        _say(name, "interrupted (Ctrl-C); nothing more was done")
        code = failed
    except OSError as exc:  # a file or folder the command needed could not be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        _say(name, f"{where}{exc.strerror or exc}")
        code = failed
    finally:
        guard.flush()  # here, not in Python's exit flush, where a closed pipe would print a traceback
        sys.stdout = real
        if nowhere is not None:
            nowhere.close()
    if _stdout.failure:  # the output itself was lost (ENOSPC, EIO): the caller must not trust it
        _say(name, f"could not write the output to stdout: {_stdout.failure[0].strerror or _stdout.failure[0]}")
        return failed
    return code


def _say(name: str, text: str) -> None:
    import contextlib

    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr gone too: the exit code says it
        print(f"a1x-tui{' ' + name if name and not name.startswith('-') else ''}: {text}", file=sys.stderr)


def _dispatch(args_list: list[str]) -> int:
    if "--check" in args_list:
        args = _check_parser().parse_args(args_list)
        return int(_load("check").run(args))
    if not args_list:
        return int(_load("app").run_app())
    name = args_list[0]
    if name not in COMMANDS:
        parser = _main_parser()
        if not name.startswith("-"):  # a word that is no command: name it, and the commands there are
            parser.error(f"unknown command {name!r}{_did_you_mean(name)} (commands: {', '.join(COMMANDS)}; "
                         "or --check PATH)")
        parser.parse_args(args_list)  # prints help/version, or the usage error
        return USAGE_EXIT
    args = _command_parser(name).parse_args(args_list[1:])
    return int(_load(COMMANDS[name][0]).run(args))


def _did_you_mean(word: str) -> str:
    """``: did you mean 'lint'?`` for a mistyped command (``lnt``), else nothing."""
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    return f": did you mean {close[0]!r}?" if close else ""


def entry() -> NoReturn:
    """The program (``a1x-tui``, ``python -m a1x_tui``): ``main``, then the exit.

    ``--check`` leaves without the interpreter's teardown, once its output is flushed: freeing the run's
    collected state, the modules and pydantic's schemas one object at a time took 6-8 % of its wall on
    the dev VM, after the report was out (benchmarks/results/parsing-history-issue14.md, "Eleventh pass").
    It holds nothing to close by then (no file open, no thread still needed; nothing registers ``atexit``).
    Every other command exits as usual: the app, the supervisor and ``watch`` have threads and files to
    close.

    Ctrl-C never prints a traceback: the commands that start something take it as a note while they do
    (``a1x_tui._interrupt``) and say what they did about it; anywhere else the command ends with exit
    code 130. Once the command has returned, a Ctrl-C during the interpreter's teardown ends the
    process as SIGINT does by default, without Python's "Exception ignored" report."""
    args = sys.argv[1:]
    try:
        import signal

        from a1x_tui._interrupt import note_and_raise

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored (`cmd &`)
            signal.signal(signal.SIGINT, note_and_raise)  # each Ctrl-C counted: a1x_tui._interrupt
        code = main(args)
    except KeyboardInterrupt:
        code = 130  # a1x_tui._interrupt.INTERRUPTED
    try:
        import signal

        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
    except KeyboardInterrupt:  # pressed once more, while the line above ran
        code = 130
    if "--check" in args:
        import contextlib

        for stream in (sys.stdout, sys.stderr):  # None where it was closed from the start (``>&-``)
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a reader gone (``| head -1``)
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
