"""The set-up wizard: every up-front choice once, then the preflight report and one confirmation.

One form (it scrolls at 80×24): open or closed loop (AlpaGym: the release checkpoint, experiment,
Hydra overrides, local or deploy=slurm), Alpamayo version, reward mode, PAI chunks and clips, W&B (project,
experiment; the key from the environment, or typed masked — it is passed to the supervisor in its
environment only, never written), compute shape and replicas, and the paths with the free space
beside each. "Check" builds the run spec (``a1x_supervisor.spec`` validates it) and shows preflight;
"Start the run" there is the only confirmation. After that nothing is asked again. These screens ask
and show; preflight and the start of the run are ``feeds.supervision``'s, in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Footer, Input, Label, RadioSet, Static

from a1x_tui.ui.answers import (
    ALPAGYM_FIELDS,
    CLUSTER_FIELDS,
    PATH_FIELDS,
    AnswerError,
    Answers,
    Problem,
    default_answers,
    free_space,
    spec_from_answers,
)
from a1x_tui.ui.feeds.supervision import launch_run, run_preflight
from a1x_tui.ui.messages import DiskChecked, PreflightFinished, RunChosen, RunLaunched
from a1x_tui.ui.widgets.choices import Choice, Tick

if TYPE_CHECKING:
    from a1x_supervisor.spec import RunSpec


def _radio(name: str, choices: list[tuple[str, str]], current: str) -> RadioSet:
    return RadioSet(
        *(
            Choice(label, value=value == current, id=f"{name}-{value.replace('.', '_')}")
            for value, label in choices
        ),
        id=name,
        classes="choice",
    )


class WizardScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+n", "check", "Check and continue"),
    ]
    DEFAULT_CSS = """
    WizardScreen #form { height: 1fr; padding: 0 1; }
    WizardScreen .section { text-style: bold; margin-top: 1; color: $accent; }
    WizardScreen .choice { height: auto; width: 100%; layout: horizontal; border: none; padding: 0; }
    WizardScreen .field { height: auto; margin-bottom: 1; }
    WizardScreen .row { height: 1; }
    WizardScreen .row Label { width: 26; }
    WizardScreen .field-error { display: none; height: auto; color: $error; padding: 0 0 0 26; }
    WizardScreen .field-error.shown { display: block; }
    WizardScreen .row Input.-invalid-answer { background: $error 30%; }
    WizardScreen .row Input { width: 1fr; height: 1; border: none; padding: 0 1; background: $boost; }
    WizardScreen .row Input:focus { background: $accent 30%; }
    WizardScreen #wandb { border: none; padding: 0; margin-bottom: 1; }
    WizardScreen .row .free { width: 20; padding: 0 0 0 1; color: $text-muted; }
    WizardScreen #error { color: $error; height: auto; padding: 0 1; }
    WizardScreen #buttons { height: auto; align-horizontal: right; padding: 0 1; }
    WizardScreen #buttons Button { margin-left: 2; }
    """

    def __init__(
        self,
        answers: Answers | None = None,
        *,
        environ: dict[str, str] | None = None,
        free: Callable[[str], str] = free_space,
    ) -> None:
        super().__init__()
        self.answers = answers or default_answers()
        self.environ = dict(os.environ) if environ is None else environ
        self.free = free

    def compose(self) -> ComposeResult:
        a = self.answers
        key_in_env = bool(self.environ.get("WANDB_API_KEY"))

        def row(field: str, label: str, widget: Widget, *extra: Widget, classes: str = "") -> ComposeResult:
            """A labelled answer, and the line under it where what is wrong with it is said."""
            with Vertical(classes=f"field {classes}".strip()):
                with Horizontal(classes="row"):
                    yield Label(label)
                    yield widget
                    yield from extra
                yield Static("", id=f"error-{field}", classes="field-error")

        with VerticalScroll(id="form"):
            yield Label("Training", classes="section")
            loops = [("alpamayo", "open loop (alpamayo-recipes)"), ("alpagym", "closed loop (AlpaGym + AlpaSim)")]
            yield _radio("pipeline", loops, a.pipeline)
            for name, label in ALPAGYM_FIELDS:
                widget = Input(a.alpagym.get(name, ""), id=f"alpagym-{name}")
                yield from row(f"alpagym-{name}", label, widget, classes="alpagym")
            yield _radio("deploy", [("local", "this node (docker compose)"), ("slurm", "deploy=slurm")], a.deploy)
            yield Label("Alpamayo version", classes="section")
            yield _radio("version", [("1.5", "Alpamayo 1.5"), ("1", "Alpamayo 1 (R1)")], a.alpamayo_version)
            yield Label("Reward", classes="section")
            yield _radio("reward", [("motion", "motion"), ("joint", "motion + reasoning (joint)")], a.reward_mode)
            yield Label("Data", classes="section")
            yield from row("chunks", "PAI chunk ids (motion)", Input(a.chunk_ids, id="chunks", placeholder="3116 3117"))
            yield from row("clips", "clips to use", Input(a.clips, id="clips", type="integer"))
            yield Label("Weights & Biases", classes="section")
            yield Tick("log to W&B (project and experiment below)", a.wandb, id="wandb")
            yield Static("", id="error-wandb", classes="field-error")
            yield from row("wandb-project", "project", Input(a.wandb_project, id="wandb-project"))
            yield from row("wandb-experiment", "experiment", Input(a.wandb_experiment, id="wandb-experiment"))
            if key_in_env:
                found = Text("found in the environment (used, never stored)", style="green")
                key: Widget = Static(found, id="key-note")
            else:
                key = Input(id="wandb-key", password=True, placeholder="typed here: used for this run, never stored")
            yield from row("wandb-key", "WANDB_API_KEY", key)
            yield Label("Compute", classes="section")
            yield _radio("compute", [("local", "one node (local)"), ("cluster", "cluster values")], a.compute)
            yield from row("policy", "policy replicas", Input(a.policy_replicas, id="policy", type="integer"))
            yield from row("rollout", "rollout replicas", Input(a.rollout_replicas, id="rollout", type="integer"))
            for name, label in CLUSTER_FIELDS:
                widget = Input(a.cluster.get(name, ""), id=f"cluster-{name}", placeholder="Slurm's default")
                yield from row(f"cluster-{name}", f"{label} (cluster)", widget, classes="cluster")
            yield Label("Paths", classes="section")
            for name, label in PATH_FIELDS:
                free = Static("", id=f"free-{name}", classes="free")
                yield from row(f"path-{name}", label, Input(a.paths.get(name, ""), id=f"path-{name}"), free)
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Back", id="back")
                yield Button("Check this machine →", id="check", variant="primary")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        for name, _ in PATH_FIELDS:
            self._check_disk(name, self.answers.paths.get(name, ""))
        self._show_what_applies()
        for field in self.query(Input):
            # A steady cursor: a blinking one repaints the screen twice a second over SSH, and a picture
            # taken of the form showed the cursor or not by when it was taken (the flaky wizard snapshot).
            field.cursor_blink = False
        self.query_one("#version", RadioSet).focus()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        if event.radio_set.id in ("pipeline", "compute"):
            self._show_what_applies()

    def _show_what_applies(self) -> None:
        """AlpaGym's answers only for a closed-loop run, the Slurm values only for cluster compute (the
        answers ignore the others: answers.spec_from_answers)."""
        def picked(name: str) -> str | None:
            found = self.query(f"#{name}")
            button = found.first(RadioSet).pressed_button if found else None
            return button.id.removeprefix(f"{name}-") if button is not None and button.id else None

        closed = picked("pipeline") == "alpagym"
        cluster = not closed and picked("compute") == "cluster"
        for widget in self.query(".alpagym"):
            widget.display = closed
        self.query_one("#deploy").display = closed
        for widget in self.query(".cluster"):
            widget.display = cluster

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("path-"):
            self._check_disk(event.input.id.removeprefix("path-"), event.value)

    @work(thread=True, exit_on_error=False)
    def _check_disk(self, name: str, text: str) -> None:
        self.post_message(DiskChecked(name, self.free(text)))

    def on_disk_checked(self, message: DiskChecked) -> None:
        self.query_one(f"#free-{message.field_id}", Static).update(message.text)

    def _choice(self, name: str) -> str:
        pressed = self.query_one(f"#{name}", RadioSet).pressed_button
        assert pressed is not None and pressed.id is not None
        return pressed.id.removeprefix(f"{name}-").replace("_", ".")

    def read_answers(self) -> Answers:
        def value(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value

        return Answers(
            alpamayo_version=self._choice("version"),
            reward_mode=self._choice("reward"),
            chunk_ids=value("chunks"),
            clips=value("clips"),
            wandb=self.query_one("#wandb", Checkbox).value,
            wandb_project=value("wandb-project"),
            wandb_experiment=value("wandb-experiment"),
            compute=self._choice("compute"),
            policy_replicas=value("policy"),
            rollout_replicas=value("rollout"),
            paths={name: value(f"path-{name}") for name, _ in PATH_FIELDS},
            cluster={name: value(f"cluster-{name}") for name, _ in CLUSTER_FIELDS},
            pipeline=self._choice("pipeline"),
            alpagym={name: value(f"alpagym-{name}") for name, _ in ALPAGYM_FIELDS},
            deploy=self._choice("deploy"),
        )

    def typed_key(self) -> str | None:
        found = self.query("#wandb-key")
        if not found:
            return None
        return cast(Input, found.first()).value.strip() or None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "back":
            self.action_back()
        elif event.button.id == "check":
            self.action_check()

    def action_back(self) -> None:
        self.app.pop_screen()

    def show_problems(self, problems: list[Problem]) -> None:
        """Each message under its answer; the cursor on the first wrong one (scrolled into view)."""
        for shown in self.query(".field-error.shown"):
            shown.remove_class("shown")
        for field in self.query(".-invalid-answer"):
            field.remove_class("-invalid-answer")
        summary = self.query_one("#error", Static)
        if not problems:
            summary.update("")
            return
        first: Widget | None = None
        for problem in problems:
            found = self.query(f"#error-{problem.field}") if problem.field else None
            if not found:
                continue
            found.first(Static).update(Text(f"✗ {problem.message}"))  # Text: a path is not markup
            found.first().add_class("shown")
            widgets = self.query(f"#{problem.field}")
            if widgets:
                widgets.first().add_class("-invalid-answer")
                first = first or widgets.first()
        more = f" (and {len(problems) - 1} more, each marked ✗ under its answer)" if len(problems) > 1 else ""
        summary.update(Text(f"✗ {problems[0].message}{more}"))
        if first is None:  # no single answer to blame: the message by the buttons is in view
            summary.scroll_visible(animate=False)
            return
        first.focus()
        self.call_after_refresh(self._reveal, problems[0].field)

    def _reveal(self, field: str | None) -> None:
        """The wrong answer and the line under it, in view."""
        if field:
            self.query_one(f"#error-{field}").scroll_visible(animate=False)

    def action_check(self) -> None:
        try:
            spec = spec_from_answers(self.read_answers())
        except AnswerError as exc:
            self.show_problems(exc.problems)
            return
        self.show_problems([])
        environ = dict(self.environ)
        key = self.typed_key()
        if key:
            environ["WANDB_API_KEY"] = key
        self.app.push_screen(PreflightScreen(cast("RunSpec", spec), environ=environ, typed_key=key))


class PreflightScreen(Screen[None]):
    """The choices, what preflight found, and the one confirmation."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]
    DEFAULT_CSS = """
    PreflightScreen #summary { padding: 0 1; height: auto; }
    PreflightScreen #report-box { height: 1fr; border: round $primary; padding: 0 1; }
    PreflightScreen #buttons { height: auto; align-horizontal: right; padding: 0 1; }
    PreflightScreen #buttons Button { margin-left: 2; }
    """

    def __init__(self, spec: RunSpec, *, environ: dict[str, str], typed_key: str | None) -> None:
        super().__init__()
        self.spec = spec
        self.environ = environ
        self.typed_key = typed_key
        self.report: Any = None
        self.launching = False

    def compose(self) -> ComposeResult:
        s = self.spec
        what = (
            f"closed loop with AlpaGym: experiment {s.alpagym.experiment}, deploy={s.alpagym.deploy}, "
            if s.alpagym is not None
            else f"Alpamayo {s.alpamayo_version}, {s.reward_mode} reward, {s.compute} compute, "
            f"{s.replicas.policy} policy + {s.replicas.rollout} rollout replica(s), "
        )
        summary = Text.assemble(
            ("New run: ", "bold"),
            what + f"W&B {'on: ' + s.wandb.project if s.wandb.enabled else 'off'}\n",
            ("runs go under ", "dim"),
            str(s.paths.workspace / "runs"),
        )
        with Vertical():
            yield Static(summary, id="summary")
            with VerticalScroll(id="report-box"):
                yield Static(Text("preflight: checking this machine...", style="dim"), id="report")
            with Horizontal(id="buttons"):
                yield Button("Back", id="back")
                yield Button("Start the run", id="start", variant="primary", disabled=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        preflight = partial(run_preflight, self.spec, self.environ, self.post_message)
        self.run_worker(preflight, thread=True, exit_on_error=False)

    def on_preflight_finished(self, message: PreflightFinished) -> None:
        box = self.query_one("#report", Static)
        start = self.query_one("#start", Button)
        if message.error:
            box.update(Text(message.error, style="red"))
            return
        self.report = message.report
        box.update(Text(message.text))
        critical = message.report is not None and message.report.exit_code >= 2
        start.label = "Start anyway" if critical else "Start the run"
        start.variant = "error" if critical else "primary"
        start.disabled = False
        start.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "back":
            self.action_back()
        elif event.button.id == "start" and not self.launching:
            self.launching = True
            event.button.disabled = True
            self.query_one("#report", Static).update(Text("starting the supervisor...", style="bold"))
            self._launch()

    def action_back(self) -> None:
        if not self.launching:
            self.app.pop_screen()

    def _launch(self) -> None:
        critical = self.report is not None and self.report.exit_code >= 2  # the user chose "Start anyway"
        launch = partial(launch_run, self.spec, self.post_message, skip_preflight=critical, typed_key=self.typed_key)
        self.run_worker(launch, thread=True, exit_on_error=False)

    def on_run_launched(self, message: RunLaunched) -> None:
        if message.run_dir is None:
            self.launching = False
            self.query_one("#report", Static).update(
                Text.assemble((f"✗ {message.error}\n\n", "bold red"), message.output)
            )
            self.query_one("#start", Button).disabled = False
            return
        from a1x_tui.ui.target import resolve_target

        self.post_message(RunChosen(resolve_target(message.run_dir)))  # the app opens its dashboard
