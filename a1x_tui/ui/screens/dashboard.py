"""The dashboard: one run, live. Stages and GPUs, logs, plots, findings — and the few actions.

Workers (``a1x_tui.ui.feeds``) follow the logs with the live diagnostics, poll the supervisor and
read the GPUs; they post messages, and this screen hands them to its widgets. Nothing here decides
what is wrong with a run: findings, fixes and their diffs come from ``diagnostics``; stop and
restart are ``a1x-tui stop`` / ``a1x-tui restart``. Every action that changes a run or a file asks
first. Redraws from log traffic happen at most four times a second, and only for the visible tab.
"""

from __future__ import annotations

import gc
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane, Tabs

from a1x_diagnostics.findings import Finding, Outcome, RunOutcome
from a1x_diagnostics.printable import printable
from a1x_tui.ui.feeds.excerpt import read_excerpt
from a1x_tui.ui.feeds.follow_child import follow_apart
from a1x_tui.ui.feeds.gpus import GpuFeed
from a1x_tui.ui.feeds.remote import RemoteFeed
from a1x_tui.ui.feeds.supervision import StateFeed, run_cli
from a1x_tui.ui.feeds.verdict import read_verdict
from a1x_tui.ui.logstore import LogStore
from a1x_tui.ui.messages import (
    CommandFinished,
    ExcerptRead,
    FindingsChanged,
    FixApplied,
    FixPlanned,
    FollowedRunChanged,
    FollowProblem,
    GpusSampled,
    HistoryProgress,
    HistoryRead,
    LinesArrived,
    LinesWanted,
    LogFileReset,
    LogFileSeen,
    MetricsChanged,
    RunStateChanged,
    SeriesChanged,
    VerdictRead,
)
from a1x_tui.ui.screens.confirm import ConfirmScreen
from a1x_tui.ui.target import RunTarget
from a1x_tui.ui.widgets.banner import FailureLine, RunBanner, failed_stage, failure_text
from a1x_tui.ui.widgets.diff import DiffView
from a1x_tui.ui.widgets.findings import FindingsPanel, Shown
from a1x_tui.ui.widgets.gpus import GpuPanel
from a1x_tui.ui.widgets.logs import LogsPanel
from a1x_tui.ui.widgets.plots import PlotsPanel
from a1x_tui.ui.widgets.stages import StagesTable, stage_detail

FINAL = ("succeeded", "failed", "stopped", "blocked")
FINDING_TOAST_S = 6.0  # how long a new finding's toast stays (the Findings tab keeps it)
LOGS_EVERY_S = 0.1
VERDICT_WAIT_S = 10.0  # a read-only attach follows the run once --check's verdict is in, or after this long
FOCUS_IN = {"logs": ("#log-view",), "findings": ("#finding-list",), "overview": ("#stages", "#overview-body")}


def outcome_text(outcome: RunOutcome, *, live: bool, reading: int) -> Text:
    """The run's outcome over the findings: the verdict a read-only attach opens on."""
    style = "bold green" if outcome.state is Outcome.COMPLETED else "bold yellow" if outcome.state in (
        Outcome.RUNNING, Outcome.NOT_STARTED) else "bold red"
    text = Text(f"run {outcome.state.value}", style=style)
    if not live:  # first, so that a long summary cannot push it out of its three lines
        text.append(f" (as a1x-tui --check reads it; live diagnosis once the history is read: {reading} %)", "dim")
    text.append(" — " + printable(outcome.summary or ""))
    return text


class DashboardScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "show_tab('overview')", "Overview", show=False),
        Binding("2", "show_tab('logs')", "Logs", show=False),
        Binding("3", "show_tab('plots')", "Plots", show=False),
        Binding("4", "show_tab('findings')", "Findings", show=False),
        # Everywhere, but named in the footer by the tab they belong to (StagesTable, FindingsPanel):
        # at 80 columns the footer holds one tab's keys, not every key of the dashboard.
        Binding("a", "apply_fix", "Apply fix", show=False),
        Binding("t", "restart_train", "Restart train", show=False),
        Binding("r", "restart_stage", "Restart stage", show=False),
        Binding("s", "stop_run", "Stop run", show=False),
        Binding("l", "stage_log", "Stage log", show=False),
        Binding("escape", "back", "Runs", show=False),
    ]
    DEFAULT_CSS = """
    DashboardScreen #overview-body { height: 1fr; }
    DashboardScreen #stage-detail { margin-bottom: 1; height: auto; }
    DashboardScreen .note { color: $text-muted; padding: 0 1; }
    DashboardScreen TabPane { padding: 0; }
    DashboardScreen .history { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    DashboardScreen .history.hidden { display: none; }
    """

    def __init__(
        self,
        target: RunTarget,
        *,
        live: bool = True,
        clock: Callable[[], float] = time.time,
        verdict: subprocess.Popen[bytes] | None = None,
    ) -> None:
        super().__init__()
        self.target = target
        self._verdict_child = verdict  # --check started by attach before the app: its report is read here
        self.live = live
        self.clock = clock
        self.store = LogStore()
        self.state: dict[str, Any] | None = None
        self.supervisor_live = False
        self.findings_open: dict[str, Finding] = {}
        self.findings_resolved: dict[str, Finding] = {}
        self.metrics: dict[str, Any] = {}
        self.outcome: RunOutcome | None = None
        self.series: dict[str, list[float]] = {}
        self._stop = threading.Event()
        self._dirty: set[str] = set()
        self._apply_after_plan: str | None = None
        self._planning: set[str] = set()
        # While the history is read: the percent read (None once read, or nothing to read), then the
        # first diagnosis: the verdict of --check (read-only attach) or the follower's first evaluation.
        self.reading: int | None = 0 if live else None
        self.history_files = 0
        self.history_bytes = 0
        self.diagnosed = not live  # fixed data (tests) is diagnosed as it arrives
        self.live_diagnosed = not live  # the follower's own evaluation is in (plots, live findings)
        self._following = False
        self._logs_due = False  # a catch-up of the logs tab is scheduled

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunBanner(id="banner")
        yield FailureLine(id="failure")
        with TabbedContent(initial=self._first_tab(), id="tabs"):
            with TabPane("1 Overview", id="overview"), VerticalScroll(id="overview-body"):
                if self.target.controllable:
                    yield StagesTable(id="stages")
                    yield Static("", id="stage-detail", classes="note")
                else:
                    yield Static(
                        Text(
                            f"Attached read-only to {self.target.follow}: a Cosmos-RL log folder, not a run "
                            "supervised by a1x-tui, so there are no stages to show or control.",
                            style="dim",
                        ),
                        classes="note",
                    )
                if self.target.note:
                    yield Static(Text(self.target.note, style="yellow"), classes="note")
                yield GpuPanel(id="gpus")
            with TabPane("2 Logs", id="logs"):
                yield LogsPanel(self.store, id="logs-panel")
            with TabPane("3 Plots", id="plots"):
                yield Static("", id="plots-note", classes="history hidden")
                yield PlotsPanel(id="plots-panel")
            with TabPane("4 Findings", id="findings"):
                yield Static("", id="verdict", classes="history hidden")
                yield FindingsPanel(id="findings-panel")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        panel = self.query_one(FindingsPanel)
        panel.can_apply = self.target.config is not None
        panel.controllable = self.target.controllable
        self._history_notes()
        self._banner()
        self._focus_in(self._first_tab())  # the footer names that tab's keys
        # The app's own objects live as long as it does: a full collection walking them all paused every key
        # for 0.3-0.5 s on the 2-core VM under load (docs/ui.md "Attach on a large run").
        gc.freeze()
        if self.live:
            self.start_feeds()
            self.set_interval(1.0, self._tick)

    def _first_tab(self) -> str:
        """A run of ours opens on its stages; logs attached read-only open on the verdict."""
        return "overview" if self.target.controllable else "findings"

    def start_feeds(self) -> None:
        post = self.post_message
        if self.target.remote is not None:  # attach HOST:PATH: one stream from the far side feeds every tab
            mirror = Path(tempfile.mkdtemp(prefix="a1x-remote-"))
            self._worker("remote", RemoteFeed(self.target.remote, post, mirror).run)
            return
        if self.target.controllable:
            self._start_following()
        else:  # the verdict first, with the machine to itself; then the live follower (or after a while)
            verdict = partial(read_verdict, self.target.follow, self.target.config, post, child=self._verdict_child)
            self._worker("verdict", verdict)
            self.set_timer(VERDICT_WAIT_S, self._start_following)
        if self.target.run_dir is not None:
            self._worker("state", StateFeed(self.target.run_dir, post).run)
        self._worker("gpus", GpuFeed(self.target.run_dir, post, self._known_pids, local_gpus=self._local_gpus).run)

    def _start_following(self) -> None:
        if not self._following:
            self._following = True
            self._worker("follow", partial(follow_apart, self.target.follow, self.target.config, self.post_message))

    def _worker(self, name: str, run: Callable[[threading.Event], None]) -> None:
        self.run_worker(partial(run, self._stop), name=name, group="feeds", thread=True, exit_on_error=False)

    def on_unmount(self) -> None:
        self._stop.set()
        gc.unfreeze()  # what on_mount and the history froze goes back to the collector (a test's process goes on)
        if self.target.remote is not None:
            self.target.remote.close()

    def _local_gpus(self) -> str | None:
        """None when this machine's GPUs belong on the panel, else what it says instead (a worker asks)."""
        source = self.target.gpu_source
        if source == "local":
            return None
        if source == "files":
            return self.target.gpu_note or "no GPU samples in the run folder yet"
        outcome = self.outcome
        if outcome is None:
            return "this machine's GPUs are shown if the logs say the run is running here"
        if outcome.state in (Outcome.RUNNING, Outcome.STALLED):
            return None
        return f"this machine's GPUs are not shown: the logs are of a run that has ended ({outcome.state.value})"

    def _known_pids(self) -> dict[int, str] | None:
        state = self.state
        if not state:
            return None
        pids: dict[int, str] = {}
        for st in state.get("stages") or []:
            proc = st.get("process") or {}
            if isinstance(proc.get("pid"), int):
                pids[proc["pid"]] = str(st.get("name"))
        return pids or None

    def _tick(self) -> None:
        if self.target.controllable and self.state is not None:
            self.query_one(StagesTable).update_state(self.state, self.clock())
            self._stage_detail()

    def _stage_detail(self) -> None:
        row = self.query_one(StagesTable).selected_row
        failed = failed_stage(self.state)
        shown = row is not None and failed is not None and failed.get("name") == row.name
        self.query_one("#stage-detail", Static).update(stage_detail(row, failure_shown=shown))

    def on_data_table_row_highlighted(self, event: StagesTable.RowHighlighted) -> None:
        if isinstance(event.data_table, StagesTable):
            self._stage_detail()

    def _active(self) -> str:
        return str(self.query_one("#tabs", TabbedContent).active)

    def _banner(self) -> None:
        self.query_one(RunBanner).show(
            self.target.name,
            controllable=self.target.controllable,
            state=self.state,
            live=self.supervisor_live,
            findings=self.findings_open,
            metrics=self.metrics,
            outcome=self.outcome,
            reading=None if self.diagnosed else (self.reading if self.reading is not None else 100),
        )
        self.query_one(FailureLine).show(failure_text(self.state) if self.target.controllable else None)
        tabs = self.query_one("#tabs", TabbedContent)
        count = len(self.findings_open)
        tabs.get_tab("findings").label = f"4 Findings ({count})" if count else "4 Findings"

    # -- messages from the workers ------------------------------------------------------------------
    def on_lines_arrived(self, message: LinesArrived) -> None:
        for c in message.chunks:
            self.store.add(c.source, c.label, c.first_lineno, c.lines, history=c.history, done=c.done, merge=False)
        self.store.merged.add([line for c in message.chunks for line in c.lines])
        self._logs_changed()

    def on_log_file_seen(self, message: LogFileSeen) -> None:
        self.store.file(message.source, message.label, message.path)
        self._logs_changed()

    def on_log_file_reset(self, message: LogFileReset) -> None:
        self.store.reset(message.source)
        self._logs_changed()

    def on_followed_run_changed(self, message: FollowedRunChanged) -> None:
        previous = message.previous
        if previous is None:  # the first logs_<ts> of this run appeared: nothing to forget
            return
        for source in [s for s in self.store.files if f"{previous}/" in s]:
            self.store.forget(source)
        self.series = {}
        self.metrics = {}
        self.outcome = None
        self.query_one(LogsPanel).reset_all()
        self._dirty.add("plots")
        self._history_notes()
        self._banner()
        self.notify(f"now following {message.run_name}: a new attempt of the training", title="logs_latest moved")

    def _logs_changed(self) -> None:
        """The store changed: the logs tab catches up at most ten times a second (a cluster run's 193 files
        appear at once: one file list, not 193), and only while it is shown."""
        self._dirty.add("logs")
        if not self._logs_due:
            self._logs_due = True
            self.set_timer(LOGS_EVERY_S, self._catch_up_logs)

    def _catch_up_logs(self) -> None:
        self._logs_due = False
        if self._active() == "logs" and "logs" in self._dirty:
            self._dirty.discard("logs")
            self.query_one(LogsPanel).data_changed()

    def on_findings_changed(self, message: FindingsChanged) -> None:
        if not self.live_diagnosed and not message.first:
            return  # no evaluation yet (a run switch at start): what is shown stands until the first one
        before = set(self.findings_open)
        news = self.live_diagnosed and not message.first  # the first evaluation's findings are the run's past
        self.findings_open, self.findings_resolved = message.open, message.resolved
        self.live_diagnosed = self.diagnosed = True
        self._show_findings()
        new = sorted(set(self.findings_open) - before) if news else []
        if new:
            self._toast_new([self.findings_open[key] for key in new])
        self._plan_selected()

    def _show_findings(self) -> None:
        panel = self.query_one(FindingsPanel)
        for key in list(panel.plans):
            if key not in self.findings_open:
                panel.plans.pop(key)
        panel.show(self.findings_open, self.findings_resolved)
        self._history_notes()
        self._banner()

    def _toast_new(self, new: list[Finding]) -> None:
        """One toast for what one evaluation raised: a stack of them covered the right of the screen."""
        critical = any(f.severity.value == "critical" for f in new)
        severity: Literal["error", "warning"] = "error" if critical else "warning"
        if len(new) == 1:
            f = new[0]
            self.notify(f.title, title=f"{f.severity.value}: {f.id}", severity=severity, timeout=FINDING_TOAST_S,
                        markup=False)
            return
        lines = "\n".join(f"{f.severity.value}: {f.id}" for f in new)
        self.notify(f"{lines}\n4: Findings", title=f"{len(new)} new findings", severity=severity,
                    timeout=FINDING_TOAST_S, markup=False)

    def on_metrics_changed(self, message: MetricsChanged) -> None:
        self.metrics = message.summary
        if message.outcome is not None:
            self.outcome = message.outcome
        if not self.live_diagnosed:  # the follower's first evaluation: its findings follow in this batch
            self.live_diagnosed = self.diagnosed = True
            self._show_findings()
        self._history_notes()
        self._banner()
        self._plots_changed()

    def on_series_changed(self, message: SeriesChanged) -> None:
        self.series = message.series
        self._plots_changed()

    def _plots_changed(self) -> None:
        if self._active() == "plots":
            self.query_one(PlotsPanel).show(self.series, self.metrics)
        else:
            self._dirty.add("plots")

    def on_history_read(self, message: HistoryRead) -> None:
        self.log.info(f"history read: {message.files} files, {message.lines} lines in {message.seconds} s")
        gc.freeze()  # the history's tails (and the app) are long-lived: full collections need not walk them
        self.reading = None
        if not message.files:  # nothing to read yet (a run before its first log): nothing to wait for
            self.diagnosed = self.live_diagnosed = True
        self._history_notes()
        self._banner()

    def on_history_progress(self, message: HistoryProgress) -> None:
        if self.reading is None:
            return
        self.reading, self.history_files, self.history_bytes = message.percent, message.files, message.total
        self._history_notes()
        self._banner()

    def on_verdict_read(self, message: VerdictRead) -> None:
        """``--check``'s report, shown until the follower's first evaluation (unless that came first)."""
        report = message.report
        self.log.info(f"verdict read: {report.status if report else message.error}")
        self._start_following()
        if report is None or self.live_diagnosed or report.status.value == "unknown":
            return
        self.findings_open = dict(message.findings)
        self.findings_resolved = {}
        self.outcome = report.outcome
        self.metrics = dict(report.metrics or {})
        self.diagnosed = True
        self._show_findings()

    def _history_notes(self) -> None:
        """'reading history, N %' on each view that depends on the history, until it is in."""
        reading = self.reading if self.reading is not None else 100
        what = f"reading history, {reading} %"
        if self.history_files:
            what += f" ({self.history_files} files, {self.history_bytes / 2**20:,.0f} MiB)"
        self.query_one(LogsPanel).set_reading(self.reading)
        plots = self.query_one("#plots-note", Static)
        plots.update(Text(what + ": the plots come with the first evaluation", style="bold yellow"))
        plots.set_class(self.live_diagnosed, "hidden")
        verdict = self.query_one("#verdict", Static)
        if not self.diagnosed:
            verdict.update(Text(what + ": the findings come once it is read", style="bold yellow"))
        elif self.outcome is not None:
            verdict.update(outcome_text(self.outcome, live=self.live_diagnosed, reading=reading))
        verdict.set_class(self.diagnosed and self.outcome is None, "hidden")
        self.query_one(FindingsPanel).display = self.diagnosed  # never "no findings" before they are known

    def on_follow_problem(self, message: FollowProblem) -> None:
        self.notify(message.message, severity="warning", timeout=8, markup=False)

    def on_run_state_changed(self, message: RunStateChanged) -> None:
        self.state, self.supervisor_live = message.state, message.live
        if self.target.controllable:
            self.query_one(StagesTable).update_state(self.state, self.clock())
            self._stage_detail()
        self._banner()

    def on_gpus_sampled(self, message: GpusSampled) -> None:
        self.query_one(GpuPanel).show(message.hosts, message.note)

    def on_command_finished(self, message: CommandFinished) -> None:
        self.notify(
            message.output,
            title=message.action,
            severity="information" if message.ok else "error",
            timeout=8,
            markup=False,
        )

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = event.pane.id
        if pane == "logs" and "logs" in self._dirty:
            self._dirty.discard("logs")
            self.query_one(LogsPanel).data_changed()
        if pane == "plots" and "plots" in self._dirty:
            self._dirty.discard("plots")
            self.query_one(PlotsPanel).show(self.series, self.metrics)

    # -- findings, evidence and fixes --------------------------------------------------------------
    def on_findings_panel_selected(self, message: FindingsPanel.Selected) -> None:
        self._plan_selected()

    def _plan_selected(self) -> None:
        panel = self.query_one(FindingsPanel)
        shown = panel.selected
        if shown is None or not shown.finding.fixes or self.target.config is None:
            return
        if shown.key in panel.plans or shown.key in self._planning:
            return
        self._planning.add(shown.key)
        self.run_worker(
            partial(self._plan, shown.key, shown.finding, self.target.config),
            thread=True,
            group="fix",
            exit_on_error=False,
        )

    def _plan(self, key: str, finding: Finding, toml: Path) -> None:
        from a1x_diagnostics.config import ConfigError, FixRefused, load_config, plan_fix

        if self.target.remote is not None:  # planned on the far side, by the run's supervisor
            self.post_message(_remote_plan(self.target.remote, key, finding, toml))
            return
        if not toml.is_file():
            self.post_message(FixPlanned(key, toml, None, f"{toml} does not exist yet (the configure stage writes it)"))
            return
        try:
            plan = plan_fix(load_config(toml), finding.id, finding=finding)
        except (ConfigError, FixRefused, ValueError) as exc:
            self.post_message(FixPlanned(key, toml, None, str(exc).splitlines()[0]))
            return
        self.post_message(FixPlanned(key, toml, plan.diff, None, plan.original_sha256))

    def on_fix_planned(self, message: FixPlanned) -> None:
        self._planning.discard(message.key)
        self.query_one(FindingsPanel).show_plan(message)
        if self._apply_after_plan == message.key:
            self._apply_after_plan = None
            self._confirm_apply(message)

    def on_findings_panel_evidence_chosen(self, message: FindingsPanel.EvidenceChosen) -> None:
        ev = message.evidence
        if ev.line is None:
            self.notify(printable(f"{ev.file}: {ev.text}"), title="evidence (not a log line)", markup=False)
            return
        self.action_show_tab("logs")
        self._dirty.discard("logs")
        logs = self.query_one(LogsPanel)
        logs.data_changed()
        if logs.open_line(ev.file, ev.line) is False:
            self.notify(f"{ev.file} is not among the files followed", severity="warning", markup=False)

    def on_lines_wanted(self, message: LinesWanted) -> None:
        """Lines the logs tab no longer keeps: read around the one wanted from the file."""
        file = self.store.files.get(message.source)
        if file is None or file.path is None:
            self.notify(f"{message.source}:{message.lineno} is not kept, and the file is not known", markup=False,
                        severity="warning")
            return
        self.notify(f"reading {file.label} around line {message.lineno:,}...", timeout=2)
        self.run_worker(
            partial(read_excerpt, file.path, file.source, file.label, message.lineno, self.post_message),
            thread=True,
            group="excerpt",
            exclusive=True,
            exit_on_error=False,
        )

    def on_excerpt_read(self, message: ExcerptRead) -> None:
        if message.error or not self.query_one(LogsPanel).show_excerpt(message):
            self.notify(message.error or f"{message.source} is no longer followed", severity="warning", markup=False)

    def action_apply_fix(self) -> None:
        if self._active() != "findings":
            self.action_show_tab("findings")
        shown = self.query_one(FindingsPanel).selected
        if shown is None:
            self.notify("no finding selected", severity="warning")
            return
        if not shown.finding.fixes:
            self.notify(
                f"no TOML change cures {shown.finding.id}: {shown.finding.action or 'see its explanation'}",
                severity="warning",
            )
            return
        if self.target.config is None:
            self.notify("no TOML known: attach with --config TOML to apply fixes", severity="warning")
            return
        plan = self.query_one(FindingsPanel).plans.get(shown.key)
        if plan is None:
            self._apply_after_plan = shown.key
            self._plan_selected()
            return
        self._confirm_apply(plan)

    def _confirm_apply(self, plan: FixPlanned) -> None:
        if plan.refused or plan.diff is None or plan.toml is None:
            refused = plan.refused or "no change to apply"
            self.notify(refused, severity="warning", title="fix not applicable", markup=False)
            return
        shown = next((s for s in self.query_one(FindingsPanel).shown if s.key == plan.key), None)
        if shown is None:
            return
        body = Group(
            Text.assemble(
                f"{plan.toml}\n",
                ("A backup (<name>.<timestamp>.bak) is written next to it first. ", "dim"),
                ("The running training keeps its old settings until the train stage restarts (t).\n", "dim"),
            ),
            DiffView(plan.diff),
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(partial(self._apply, shown, plan), thread=True, group="fix", exit_on_error=False)

        self.app.push_screen(ConfirmScreen(f"Apply the fix for {shown.finding.id}?", body, confirm="Apply"), answered)

    def _apply(self, shown: Shown, plan: FixPlanned) -> None:
        from a1x_diagnostics.config import FixRefused, apply_fix

        assert plan.toml is not None
        if self.target.remote is not None:
            self.post_message(_remote_apply(self.target.remote, shown, plan))
            return
        try:
            result = apply_fix(plan.toml, shown.finding.id, expected_sha256=plan.sha256, finding=shown.finding)
        except (FixRefused, OSError) as exc:
            self.post_message(FixApplied(shown.key, plan.toml, None, "", str(exc).splitlines()[0]))
            return
        self.post_message(
            FixApplied(shown.key, plan.toml, result.backup, result.after.summary, written=result.written)
        )

    def on_fix_applied(self, message: FixApplied) -> None:
        panel = self.query_one(FindingsPanel)
        panel.plans.pop(message.key, None)
        if message.error:
            self.notify(message.error, title="fix not applied", severity="error", timeout=10, markup=False)
            return
        if not message.written:
            self.notify(f"{message.toml.name} already has it: nothing written", title="nothing to change", timeout=10)
            return
        hint = " Press t to restart the train stage with it." if self.target.controllable else ""
        self.notify(
            f"wrote {message.toml.name} (backup {message.backup.name if message.backup else '-'}).{hint}",
            title="fix applied",
            timeout=10,
        )
        self._plan_selected()

    # -- actions on the run ---------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("stop_run", "restart_stage", "restart_train", "stage_log"):
            return self.target.controllable
        return True

    def action_back(self) -> None:
        """Back to the list of runs, when the dashboard was opened from it (the run goes on)."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab
        self._focus_in(tab)

    def _focus_in(self, tab: str) -> None:
        """Focus moves into the tab shown: left on a widget of the old one, it would be hidden, and the
        widget Textual then moves the focus to (in that old tab) would switch back to it."""
        for wanted in FOCUS_IN.get(tab, ()):
            found = self.query(wanted)
            if found:
                found.first().focus()
                return
        self.query_one("#tabs", TabbedContent).query_one(Tabs).focus()  # the tab bar: ← → move between tabs

    def _run_dir(self) -> str:
        assert self.target.run_dir is not None
        return str(self.target.run_dir)

    def action_stop_run(self) -> None:
        body = Text(
            "The supervisor sends SIGTERM to the running stage's process group, waits its grace period, then "
            "SIGKILL; the run ends as 'stopped'. `a1x-tui restart RUN --stage STAGE` (or r here) resumes it later."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify("stopping the run...", title="stop")
                remote = self.target.remote
                self.run_worker(
                    partial(_remote_command, "stop", remote.stop_run, self.post_message) if remote is not None
                    else partial(run_cli, "stop", ["stop", self._run_dir()], self.post_message),
                    thread=True,
                    group="commands",
                    exit_on_error=False,
                )

        self.app.push_screen(ConfirmScreen("Stop the run?", body, confirm="Stop the run", danger=True), answered)

    def _restart(self, stage: str) -> None:
        body = Text(
            f"The running stage is stopped, then {stage} runs again (even if its outputs verify) and the pipeline "
            f"goes on from it. A TOML you changed is used from now on."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"restarting {stage}...", title="restart")
                args = ["restart", self._run_dir(), "--stage", stage]
                remote = self.target.remote
                self.run_worker(
                    partial(_remote_command, f"restart {stage}", partial(remote.restart, stage), self.post_message)
                    if remote is not None else partial(run_cli, f"restart {stage}", args, self.post_message),
                    thread=True,
                    group="commands",
                    exit_on_error=False,
                )

        self.app.push_screen(ConfirmScreen(f"Restart the {stage} stage?", body, confirm=f"Restart {stage}"), answered)

    def action_restart_train(self) -> None:
        self._restart("train")

    def action_stage_log(self) -> None:
        """The Logs tab on the end of a stage's log: the failed stage's, else the one under the cursor."""
        stage = failed_stage(self.state)
        name = str(stage["name"]) if stage else self.query_one(StagesTable).selected_stage
        name = name or (self.state or {}).get("current_stage")
        if not name:
            self.notify("no stage has started yet", severity="warning")
            return
        self.action_show_tab("logs")
        self._dirty.discard("logs")
        logs = self.query_one(LogsPanel)
        logs.data_changed()
        if not logs.open_line(f"stages/{name}.log", None):
            reason = str((stage or {}).get("reason") or "")
            self.notify(
                f"stages/{name}.log is not written yet" + (f"; the stage says: {reason}" if reason else ""),
                title=f"{name}: no log",
                severity="warning",
                timeout=10,
                markup=False,
            )

    def action_restart_stage(self) -> None:
        stage = None
        if self.target.controllable:
            stage = self.query_one(StagesTable).selected_stage
        stage = stage or (self.state or {}).get("current_stage")
        if not stage:
            self.notify("choose a stage in the overview first", severity="warning")
            return
        self._restart(str(stage))

    def leave_message(self) -> str | None:
        """What the terminal says after the app closes: the run goes on."""
        if not self.target.controllable:
            return None
        status = str((self.state or {}).get("status", "unknown"))
        run = self.target.where
        if status in FINAL:
            return f"a1x-tui: left the dashboard of {run} (the run has ended: {status})."
        pid = ((self.state or {}).get("supervisor") or {}).get("pid")
        who = f"its supervisor (pid {pid})" if pid else "its supervisor"
        return (
            f"a1x-tui: left the dashboard; the run goes on, owned by {who}.\n"
            f"  come back: a1x-tui attach {run}\n"
            f"  status:    a1x-tui status {run}\n"
            f"  stop it:   a1x-tui stop {run}"
        )


def _remote_command(action: str, call: Callable[[], str], post: Callable[[Any], Any]) -> None:
    """Stop or restart over the far side's forwarded control socket (attach HOST:RUN)."""
    from a1x_tui.remote.link import RemoteError

    try:
        post(CommandFinished(action, True, call()))
    except RemoteError as exc:
        post(CommandFinished(action, False, str(exc)))


def _remote_plan(remote: Any, key: str, finding: Finding, toml: Path) -> FixPlanned:
    from a1x_tui.remote.link import RemoteError

    try:
        reply = remote.plan_fix(finding.model_dump(mode="json"))
    except RemoteError as exc:
        return FixPlanned(key, toml, None, str(exc))
    return FixPlanned(key, Path(str(reply.get("toml") or toml)), str(reply.get("diff") or ""), None,
                      str(reply.get("sha256") or ""))


def _remote_apply(remote: Any, shown: Shown, plan: FixPlanned) -> FixApplied:
    from a1x_tui.remote.link import RemoteError

    assert plan.toml is not None
    try:
        reply = remote.apply_fix(shown.finding.model_dump(mode="json"), plan.sha256 or "")
    except RemoteError as exc:
        return FixApplied(shown.key, plan.toml, None, "", str(exc))
    backup = reply.get("backup")
    return FixApplied(shown.key, plan.toml, Path(backup) if backup else None, str(reply.get("summary") or ""),
                      written=bool(reply.get("written")))
