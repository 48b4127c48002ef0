"""``A1xApp``: the screens, the keys every screen shares, themes and the command palette.

Started on the runs (``a1x-tui``), or straight on one run's dashboard (``a1x-tui attach``,
``a1x-tui demo``). Quitting never stops a run: the supervisor owns it, and the terminal says so.
``NO_COLOR`` is honoured by Textual itself (monochrome output); ``ctrl+t`` switches dark and light.
The app alone changes screens: a screen asks with a message (``RunChosen``, ``NewRunChosen``) and
never imports the app or another screen (the contracts in pyproject.toml, docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from a1x_tui.ui.messages import NewRunChosen, RunChosen
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.screens.help import HelpScreen
from a1x_tui.ui.screens.start import StartScreen
from a1x_tui.ui.screens.wizard import WizardScreen
from a1x_tui.ui.target import RunTarget

DARK, LIGHT = "textual-dark", "textual-light"


class A1xApp(App[int]):
    TITLE = "a1x-tui"
    CSS_PATH = "a1x.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "leave", "Quit"),
        Binding("ctrl+c", "leave", "Quit", show=False, priority=True),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
    ]

    def __init__(
        self,
        *,
        target: RunTarget | None = None,
        roots: list[Path] | None = None,
        live: bool = True,
        clock: Callable[[], float] = time.time,
        theme: str | None = None,
        verdict: subprocess.Popen[bytes] | None = None,
    ) -> None:
        """``verdict``: ``a1x-tui --check`` on ``target``, already started by ``a1x-tui attach``."""
        super().__init__()
        self.start_target = target
        self.start_verdict = verdict
        self.roots = roots or []
        self.live = live
        self.clock = clock
        if theme is not None:
            self.theme = theme
        self._loop: asyncio.AbstractEventLoop | None = None
        self._leave_at_mount = False
        self.leave_text: str | None = None  # printed by the command after the app closes (run_until_quit)

    def leave_soon(self) -> None:
        """Quit as ``q`` does, from a SIGINT handler (``a1x_tui._interrupt``): through the event loop once
        it runs, else as soon as the app is mounted."""
        if self._loop is None:
            self._leave_at_mount = True
        else:
            self._loop.call_soon_threadsafe(self.action_leave)

    def on_mount(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.start_target is not None:
            self.push_screen(self.dashboard(self.start_target, verdict=self.start_verdict))
        else:
            self.push_screen(StartScreen(self.roots, live=self.live))
        if self._leave_at_mount:  # its screen is in the stack: the terminal says what goes on
            self.action_leave()

    def dashboard(self, target: RunTarget, verdict: subprocess.Popen[bytes] | None = None) -> DashboardScreen:
        return DashboardScreen(target, live=self.live, clock=self.clock, verdict=verdict)

    def on_run_chosen(self, message: RunChosen) -> None:
        """The run's dashboard over the runs list; what stands above the list (the wizard and its preflight,
        once they have started the run) is closed first."""
        while len(self.screen_stack) > 1 and not isinstance(self.screen, StartScreen):
            self.pop_screen()
        self.push_screen(self.dashboard(message.target))

    def on_new_run_chosen(self, message: NewRunChosen) -> None:
        self.push_screen(WizardScreen())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.theme == DARK else DARK

    def action_leave(self) -> None:
        messages = [m for s in self.screen_stack if isinstance(s, DashboardScreen) if (m := s.leave_message())]
        # not Textual's exit message: Rich would wrap it at the terminal's width, cutting the commands in it
        self.leave_text = "\n".join(dict.fromkeys(messages)) or None
        self.exit(0)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key, and what quitting does to a run", self.action_help)
        yield SystemCommand(
            "Toggle dark / light theme", "Switch between the dark and light themes", self.action_toggle_theme
        )
        if isinstance(screen, DashboardScreen):
            for tab, title in (
                ("overview", "Overview"),
                ("logs", "Logs"),
                ("plots", "Plots"),
                ("findings", "Findings"),
            ):
                yield SystemCommand(
                    f"Show {title}", f"Switch to the {title.lower()} tab", lambda tab=tab: screen.action_show_tab(tab)
                )
            yield SystemCommand(
                "Apply the selected finding's fix", "Shows the TOML diff, asks, keeps a backup", screen.action_apply_fix
            )
            if screen.target.controllable:
                yield SystemCommand(
                    "Restart the train stage", "Asks first; uses the TOML as it is now", screen.action_restart_train
                )
                yield SystemCommand(
                    "Stop the run", "Asks first; SIGTERM, then SIGKILL after the grace period", screen.action_stop_run
                )
