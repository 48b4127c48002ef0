"""The supervisor, seen from the app: its state once a second, the commands that act on the run, and
a new run's preflight and start.

State comes from the daemon's socket (``{"op": "status"}``) or, when no daemon answers, from
``state.json`` as ``a1x-tui status`` reads it. Stop and restart run the real ``a1x-tui stop`` and
``a1x-tui restart`` commands in a child process, and a new run starts with ``a1x-tui run --detach``:
they already handle a daemon that is gone (they stop recorded orphans, or start a new supervisor),
and a fresh process is the safe place to fork a daemon from (this app has threads).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from a1x_tui.ui.messages import CommandFinished, PreflightFinished, RunLaunched, RunStateChanged

if TYPE_CHECKING:
    from a1x_supervisor.spec import RunSpec

POLL_S = 1.0

Post = Callable[[Message], Any]


def read_state(run_dir: Path) -> tuple[dict[str, Any] | None, bool, str | None]:
    """(state, live, note) of a run directory now."""
    from a1x_supervisor.launch import offline_status
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.rundir import RunDir

    layout = RunDir(run_dir)
    try:
        reply = SupervisorClient(layout.socket_path, timeout=2.0).request({"op": "status"})
    except NoSupervisor:
        state = offline_status(layout)
        if state is None:
            return None, False, f"{run_dir}: no state.json yet"
        return state, False, "no supervisor answers: state.json as last written"
    state = reply.get("state")
    return (state if isinstance(state, dict) else None), True, None


def _comparable(state: Mapping[str, Any] | None) -> Any:
    if state is None:
        return None
    return {k: v for k, v in state.items() if k != "updated_at"}


class StateFeed:
    """Posts ``RunStateChanged`` whenever the run's state changes (and once at start)."""

    def __init__(self, run_dir: Path, post: Post, *, interval: float = POLL_S) -> None:
        self.run_dir = run_dir
        self.post = post
        self.interval = interval

    def run(self, stop: threading.Event) -> None:
        last: Any = object()
        while not stop.is_set():
            try:
                state, live, note = read_state(self.run_dir)
            except Exception as exc:  # a half-written or foreign file must not end the worker
                state, live, note = None, False, f"cannot read the run's state: {type(exc).__name__}: {exc}"
            current = (_comparable(state), live, note)
            if current != last:
                last = current
                self.post(RunStateChanged(state, live, note))
            stop.wait(self.interval)


def cli_command(*args: str) -> list[str]:
    """``a1x-tui ARGS`` with this interpreter (works from a checkout and from an install)."""
    return [sys.executable, "-m", "a1x_tui", *args]


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class CliAnswer:
    """What one ``a1x-tui`` command said: its exit code (None: no answer in time), stdout then stderr."""

    returncode: int | None
    output: str


def call_cli(args: list[str], *, timeout: float, extra_env: Mapping[str, str] | None = None) -> CliAnswer:
    """Run one ``a1x-tui`` command to its end; ``extra_env`` goes into that child's environment only."""
    try:
        done = subprocess.run(
            cli_command(*args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=cli_env(extra_env),
        )
    except subprocess.TimeoutExpired:
        return CliAnswer(None, "")
    return CliAnswer(done.returncode, "\n".join(t.strip() for t in (done.stdout, done.stderr) if t.strip()))


def run_cli(action: str, args: list[str], post: Post, *, timeout: float = 180.0) -> None:
    """Run one ``a1x-tui`` command to its end and post its answer (never its secrets: it has none)."""
    answer = call_cli(args, timeout=timeout)
    if answer.returncode is None:
        post(CommandFinished(action, False, f"a1x-tui {' '.join(args)} did not answer within {timeout:.0f}s"))
        return
    post(CommandFinished(action, answer.returncode == 0, answer.output or f"exit code {answer.returncode}"))


def run_preflight(spec: RunSpec, environ: Mapping[str, str], post: Post) -> None:
    """Preflight of a new run, for the stages it will execute; posts ``PreflightFinished``."""
    from a1x_supervisor.pipeline import select_stages, stage_names
    from a1x_supervisor.preflight import outputs_present, preflight, render_text

    try:
        stages = select_stages(stage_names(spec), from_stage=None, only=None)
        report = preflight(
            spec,
            stages=stages,
            target="the new run",
            environ=environ,
            skip_verified=lambda stage: outputs_present(spec, stage),
        )
    except Exception as exc:  # another module's failure: say it, do not crash the app
        post(PreflightFinished(None, "", f"preflight failed: {type(exc).__name__}: {exc}"))
        return
    post(PreflightFinished(report, render_text(report)))


def launch_run(spec: RunSpec, post: Post, *, skip_preflight: bool, typed_key: str | None) -> None:
    """A new run directory under the workspace and its detached supervisor (``a1x-tui run --detach``);
    posts ``RunLaunched``. A typed W&B key goes into that child's environment only (docs/ui.md)."""
    from a1x_supervisor.launch import new_run_dir, prepare_run_dir

    if not spec.paths.workspace.is_dir():
        post(RunLaunched(None, "", f"paths.workspace {spec.paths.workspace} does not exist"))
        return
    try:
        run_dir = new_run_dir(spec)
        layout = prepare_run_dir(spec, run_dir)
        layout.log_dir(spec).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        post(RunLaunched(None, "", f"cannot create the run directory: {exc}"))
        return
    args = ["run", "--run-dir", str(run_dir), "--detach"]
    if skip_preflight:
        args.append("--skip-preflight")
    answer = call_cli(args, timeout=120, extra_env={"WANDB_API_KEY": typed_key} if typed_key else None)
    if answer.returncode is None:
        post(RunLaunched(None, "", "the supervisor did not start within 120 s"))
    elif answer.returncode != 0:
        post(RunLaunched(None, answer.output, f"a1x-tui run exited with code {answer.returncode}"))
    else:
        post(RunLaunched(Path(run_dir), answer.output))
