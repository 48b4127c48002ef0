"""The findings panel: the list (severity, id, title), and the selected finding in full.

In full: the plain explanation, what to do, the evidence lines (Enter opens the log at that line)
and the fix as the unified diff of the TOML change (``a1x_diagnostics.config.plan_fix``, computed by a
worker and handed in with ``show_plan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from a1x_diagnostics.detectors import clip_text
from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_diagnostics.parsing import shape_of
from a1x_diagnostics.printable import printable
from a1x_tui.ui.messages import FixPlanned
from a1x_tui.ui.widgets.diff import DiffView


@dataclass(frozen=True, slots=True)
class Shown:
    key: str
    finding: Finding
    resolved: bool


def severity_text(finding: Finding, resolved: bool) -> Text:
    if resolved:
        return Text("✓ resolved", style="green")
    if finding.severity is Severity.CRITICAL:
        return Text("● CRITICAL", style="bold red")
    return Text("▲ warning", style="yellow")


def ordered(open_: dict[str, Finding], resolved: dict[str, Finding]) -> list[Shown]:
    rank = {Severity.CRITICAL: 0, Severity.WARNING: 1}
    shown = sorted(
        (Shown(k, f, False) for k, f in open_.items()), key=lambda s: (rank.get(s.finding.severity, 2), s.key)
    )
    shown += sorted((Shown(k, f, True) for k, f in resolved.items()), key=lambda s: s.key)
    return shown


EVIDENCE_CHARS = 180


def evidence_prompt(ev: Evidence) -> Text:
    """``rollout_0.log:28  15:30:00 ERROR [Rollout] Failed in ...``: a line's prefix (cosmos, vLLM, glog...,
    as the log reader peels it) shortened to its time and level."""
    where = ev.file.rsplit("/", 1)[-1]
    if ev.line is not None:
        where += f":{ev.line}"
    text = Text(f"{where}  ", style="bold")
    line = printable(ev.text.strip())
    shape = shape_of(line)
    if shape.level is not None and shape.msg != shape.body:
        stamp = f"{shape.ts:%H:%M:%S} " if shape.ts is not None else ""
        text.append(f"{stamp}{shape.level} ", style="dim")
        line = shape.msg
    text.append(clip_text(line, EVIDENCE_CHARS))
    return text


class FindingsPanel(Horizontal):
    """Left: the findings; right: the one under the cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [  # the dashboard's keys for findings, named in the footer here
        Binding("a", "screen.apply_fix", "Apply fix"),
        Binding("t", "screen.restart_train", "Restart train"),
    ]

    DEFAULT_CSS = """
    FindingsPanel #finding-list { width: 32; height: 1fr; }
    FindingsPanel #finding-detail { width: 1fr; height: 1fr; padding: 0 1; }
    FindingsPanel #evidence { height: auto; max-height: 8; }
    FindingsPanel .section { color: $text-muted; margin-top: 1; }
    """

    class Selected(Message):
        """The finding under the cursor changed (the screen plans its fix)."""

        def __init__(self, shown: Shown | None) -> None:
            super().__init__()
            self.shown = shown

    class EvidenceChosen(Message):
        def __init__(self, evidence: Evidence) -> None:
            super().__init__()
            self.evidence = evidence

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: list[Shown] = []
        self.plans: dict[str, FixPlanned] = {}
        self.can_apply = False  # a TOML is known (fixes can be written)
        self.controllable = False  # a supervisor can restart the train stage

    def compose(self) -> ComposeResult:
        yield OptionList(id="finding-list")
        with VerticalScroll(id="finding-detail"):
            yield Static(
                Text("No findings yet: the diagnostics run once the logs' history is read.", style="dim"),
                id="finding-text",
            )
            yield Label("Evidence (Enter: open the log at that line)", classes="section", id="evidence-label")
            yield OptionList(id="evidence")
            yield Label("Fix", classes="section", id="fix-label")
            yield Static("", id="finding-fix")

    @property
    def selected(self) -> Shown | None:
        option_list = self.query_one("#finding-list", OptionList)
        index = option_list.highlighted
        if index is None or not 0 <= index < len(self.shown):
            return None
        return self.shown[index]

    def show(self, open_: dict[str, Finding], resolved: dict[str, Finding]) -> None:
        option_list = self.query_one("#finding-list", OptionList)
        previous = self.selected
        self.shown = ordered(open_, resolved)
        option_list.clear_options()
        for s in self.shown:
            prompt = severity_text(s.finding, s.resolved)
            prompt.append(f"  {s.key}\n", style="bold" if not s.resolved else "dim")
            prompt.append(s.finding.title, style="dim")
            option_list.add_option(Option(prompt, id=s.key))
        if self.shown:
            index = 0
            if previous is not None:
                index = next((i for i, s in enumerate(self.shown) if s.key == previous.key), 0)
            option_list.highlighted = index
        self._show_detail()

    def show_plan(self, plan: FixPlanned) -> None:
        self.plans[plan.key] = plan
        current = self.selected
        if current is not None and current.key == plan.key:
            self._show_fix(current)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "finding-list":
            event.stop()
            self._show_detail()
            self.post_message(self.Selected(self.selected))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_list.id == "evidence":
            current = self.selected
            if current is not None and 0 <= event.option_index < len(current.finding.evidence):
                self.post_message(self.EvidenceChosen(current.finding.evidence[event.option_index]))
        elif event.option_list.id == "finding-list":
            self.query_one("#evidence", OptionList).focus()

    def _show_detail(self) -> None:
        current = self.selected
        text = self.query_one("#finding-text", Static)
        evidence = self.query_one("#evidence", OptionList)
        evidence.clear_options()
        if current is None:
            text.update(Text("No findings: nothing wrong seen so far.", style="dim"))
            self.query_one("#finding-fix", Static).update("")
            return
        f = current.finding
        parts: list[RenderableType] = []
        head = severity_text(f, current.resolved)
        head.append(f"  {f.id}", style="bold")
        parts.append(head)
        parts.append(Text(f.title, style="bold"))
        parts.append(Text(printable(f.explanation)))  # it may quote a log line
        if f.action:
            parts.append(Text.assemble(("What to do: ", "bold"), printable(f.action)))
        if current.resolved:
            parts.append(Text("This finding no longer holds (the condition cleared).", style="green"))
        text.update(Group(*parts))
        for ev in f.evidence:
            evidence.add_option(Option(evidence_prompt(ev)))
        evidence.highlighted = 0 if f.evidence else None
        self._show_fix(current)

    def _show_fix(self, current: Shown) -> None:
        f = current.finding
        fix = self.query_one("#finding-fix", Static)
        if not f.fixes:
            fix.update(
                Text("No TOML change cures this finding" + (": see What to do." if f.action else "."), style="dim")
            )
            return
        lines = Text()
        for fx in f.fixes:
            proposed = "remove the key" if fx.proposed is None else repr(fx.proposed)
            lines.append(f"{fx.path} = {proposed}", style="bold")
            lines.append(f"  (now {fx.current!r}): {fx.why}\n", style="dim")
        plan = self.plans.get(current.key)
        keys = []
        if self.can_apply:
            keys.append("a: apply it to the TOML")
        if self.controllable:
            keys.append("t: restart the train stage")
        hint = Text(" · ".join(keys) + "\n", style="bold cyan") if keys else Text()
        if plan is None:
            body: RenderableType = Text(
                "computing the diff..."
                if self.can_apply
                else "No TOML known: attach with --config TOML to see and apply the diff.",
                style="dim",
            )
        elif plan.refused:
            body = Text(f"Not applicable as is: {plan.refused}", style="yellow")
        else:
            body = DiffView(plan.diff or "")
        fix.update(Group(lines, hint, body))
