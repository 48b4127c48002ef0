"""What the widgets show, as pure functions: stage rows, the banner, GPU lines, the fix diff colours."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ui_helpers import FIXED_NOW, sample_gpus, sample_state

from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_tui.ui.widgets.banner import banner_text
from a1x_tui.ui.widgets.diff import DiffView
from a1x_tui.ui.widgets.findings import evidence_prompt, ordered
from a1x_tui.ui.widgets.gpus import host_text
from a1x_tui.ui.widgets.stages import human_duration, stage_rows


def finding(id_: str, severity: Severity) -> Finding:
    return Finding(id=id_, severity=severity, title=id_, explanation="x", evidence=[Evidence(file="f", text="t")])


def test_stage_rows_show_state_time_and_progress(tmp_path: Path) -> None:
    rows = {r.name: r for r in stage_rows(sample_state(tmp_path), FIXED_NOW)}
    assert rows["download"].duration == "1m00s" and rows["download"].progress == "fetching files 12/12"
    assert rows["train"].status == "running" and rows["train"].duration == "2m05s"
    assert rows["train"].percent == 40.0 and rows["train"].progress == "step 12/30"
    assert rows["configure"].duration == "" and rows["export"].progress == ""
    assert human_duration(3 * 3600 + 120) == "3h02m"


def test_a_pending_slurm_train_stage_shows_the_job_and_its_reason(tmp_path: Path) -> None:
    state = sample_state(tmp_path)
    train = next(st for st in state["stages"] if st["name"] == "train")
    train["slurm"] = {"job_id": "4242", "state": "PENDING", "reason_text": "Resources: waiting for nodes"}
    rows = {r.name: r for r in stage_rows(state, FIXED_NOW)}
    assert rows["train"].reason.startswith("slurm job 4242 PENDING (Resources: waiting for nodes)")


def test_a_requeued_slurm_train_stage_shows_its_part_and_the_step_it_resumed_from(tmp_path: Path) -> None:
    state = sample_state(tmp_path)
    train = next(st for st in state["stages"] if st["name"] == "train")
    train["slurm"] = {
        "job_id": "4242", "state": "RUNNING", "nodes": "n[1-2]", "restarts": 1, "run": "part_1/run_0",
        "part": 1, "resumed_from_step": 210,
    }
    rows = {r.name: r for r in stage_rows(state, FIXED_NOW)}
    assert rows["train"].reason.startswith("slurm job 4242 RUNNING on n[1-2], restart 1; part 1 resumed from step 210")


def test_the_banner_says_read_only_or_the_run_state_and_counts_findings(tmp_path: Path) -> None:
    findings = {"a": finding("vllm_oom", Severity.CRITICAL), "b": finding("grpo_collapse", Severity.WARNING)}
    text = banner_text(
        "run1",
        controllable=True,
        state=sample_state(tmp_path),
        live=True,
        findings=findings,
        metrics={"step": 12, "total_steps": 30},
    ).plain
    assert "RUNNING · train" in text and "step 12/30" in text and "2 findings (1 critical)" in text
    text = banner_text("logs", controllable=False, state=None, live=False, findings={}, metrics={}).plain
    assert "read-only" in text and "no findings" in text


def test_the_banner_says_how_the_run_ended_and_never_green_for_a_failed_one() -> None:
    from a1x_diagnostics.findings import Outcome, RunOutcome

    def banner(state: Outcome) -> str:
        outcome = RunOutcome(state=state, summary="x")
        return banner_text("logs", controllable=False, state=None, live=False, findings={}, metrics={},
                           outcome=outcome).plain

    assert "run completed" in banner(Outcome.COMPLETED) and "no findings" in banner(Outcome.COMPLETED)
    assert "run stalled" in banner(Outcome.STALLED) and "no findings" not in banner(Outcome.STALLED)
    assert "run " not in banner(Outcome.RUNNING).replace("read-only", "") and "no findings" in banner(Outcome.RUNNING)


def test_findings_are_listed_critical_first_then_resolved() -> None:
    shown = ordered(
        {"w": finding("grpo_collapse", Severity.WARNING), "c": finding("vllm_oom", Severity.CRITICAL)},
        {"r": finding("stalled", Severity.CRITICAL)},
    )
    assert [(s.key, s.resolved) for s in shown] == [("c", False), ("w", False), ("r", True)]


def test_gpu_lines_name_processes_by_role() -> None:
    text = host_text(sample_gpus().hosts[0], 100).plain
    assert "GPU0" in text and "GPU1" in text and "96%" in text
    assert "policy_0" in text and "rollout_0" in text and "pid 4302" in text


def test_evidence_and_diff_are_shown_compactly() -> None:
    ev = Evidence(
        file="logs_1/rollout_0.log",
        line=28,
        text="[rank0]:[cosmos] 2026-11-29 15:31:28,001 - cosmos - ERROR - [Rollout] Failed in rollout",
    )
    assert evidence_prompt(ev).plain == "rollout_0.log:28  15:31:28 ERROR [Rollout] Failed in rollout"
    # other loggers' prefixes are shortened the way the log reader peels them
    vllm = Evidence(file="rollout_0.log", line=3,
                    text="(EngineCore_DP0 pid=563) ERROR 12-23 23:34:23 [core.py:708] EngineCore failed to start.")
    assert evidence_prompt(vllm).plain == "rollout_0.log:3  ERROR EngineCore failed to start."
    plain = Evidence(file="rollout_0.log", line=4, text="RuntimeError: boom")
    assert evidence_prompt(plain).plain == "rollout_0.log:4  RuntimeError: boom"
    styles = {span.style for span in DiffView("--- a/t\n+++ b/t\n-x = 1\n+x = 2\n").text().spans}
    assert {"red", "green", "bold"} <= styles


def test_at_80_columns_the_banner_keeps_every_word_about_the_run(tmp_path: Path) -> None:
    """What it says of the run (state, step, findings, supervisor) fits the 78 cells of an 80-column banner:
    the run's name gives way first (its date, then all of it), never "supervisor live" or the findings."""
    findings = {
        "a": finding("vllm_oom", Severity.CRITICAL),
        "b": finding("grpo_collapse", Severity.WARNING),
        "c": finding("rollout_buffer_growth", Severity.WARNING),
    }
    state = sample_state(tmp_path)
    kwargs: dict[str, Any] = dict(controllable=True, state=state, live=True, metrics={"step": 12, "total_steps": 30})
    name = "20261205-213334-motion"
    wide = banner_text(name, findings=findings, width=None, **kwargs).plain
    assert wide.startswith(name) and "  supervisor live" in wide
    for found, width in ((findings, 78), ({}, 78)):
        text = banner_text(name, findings=found, width=width, **kwargs).plain
        assert len(text) <= width, text
        for part in ("RUNNING · train", "step 12/30", "supervisor live"):
            assert part in text, text
        assert ("3 findings (1 critical)" if found else "no findings") in text
    assert banner_text(name, findings={}, width=78, **kwargs).plain.startswith("213334-motion  RUNNING")
    ended = sample_state(tmp_path, status="succeeded")
    text = banner_text(name, controllable=True, state=ended, live=False, findings={}, metrics={}, width=78).plain
    assert "supervisor" not in text  # a run that ended has no supervisor: not said as a problem


def test_a_wrapped_diff_line_keeps_its_marker_on_every_row() -> None:
    from rich.console import Console

    long_add = "+gpu_memory_utilization = 0.7  # lowered after a vLLM out-of-memory in rollout_0 at step 8"
    long_del = "-gpu_memory_utilization = 0.8  # the recipe's default share of the GPU for the vLLM engine"
    context = " # Fraction of each rollout GPU for vLLM; lower it (0.7) after a vLLM out-of-memory."
    diff = "\n".join(["--- a/train.toml", "+++ b/train.toml", "@@ -45,3 +45,3 @@", context, long_del, long_add])
    console = Console(width=40, color_system=None, record=True, file=io.StringIO())
    console.print(DiffView(diff))
    rows = console.export_text().splitlines()
    added = [r for r in rows if r.startswith("+") and not r.startswith("+++")]
    removed = [r for r in rows if r.startswith("-") and not r.startswith("---")]
    assert len(added) >= 3 and len(removed) >= 3, rows  # each wrapped, every row with its marker
    assert "".join(r[1:].strip() + " " for r in added).split() == long_add[1:].split()
    assert "".join(r[1:].strip() + " " for r in removed).split() == long_del[1:].split()
    assert all(len(r) <= 40 for r in rows)
    assert rows[3].startswith(" # Fraction") and rows[4].startswith("   ")  # context goes on, indented


def test_the_step_time_caption_and_the_last_values_say_the_same_number() -> None:
    """The chart's caption names its last step and the median of the last ten, the number "last values"
    shows as the step time (the summary's median, a1x_diagnostics.metrics): the two agree."""
    from ui_helpers import OOM_RUN, fixture_messages

    from a1x_tui.ui.messages import MetricsChanged, SeriesChanged
    from a1x_tui.ui.widgets.plots import metrics_text, step_caption

    messages = fixture_messages(OOM_RUN)
    series = next(m for m in messages if isinstance(m, SeriesChanged)).series
    summary = next(m for m in messages if isinstance(m, MetricsChanged)).summary
    steps = list(series["step_time_s"])
    assert len(steps) > 2 and steps[-1] != summary["step_time_s"]  # the case that read as a disagreement
    caption = step_caption(steps)
    shown = next(line for line in metrics_text(summary).plain.splitlines() if line.startswith("step s (med)"))
    assert caption == f"last {steps[-1]:.2f}, median {shown.split()[-1]}"
