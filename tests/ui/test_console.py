"""`a1x-tui status`'s text: one table row per stage, its detail beside it, never read as markup."""

from __future__ import annotations

from a1x_tui.console import render_state

STATE = {
    "run_dir": "/runs/r",
    "status": "running",
    "supervisor": {"pid": 7, "host": "node"},
    "stages": [
        {"name": "env", "status": "skipped", "reason": "already done: venv /v passes the import contract"},
        {
            "name": "train",
            "status": "running",
            "progress": {"text": "step 3/10"},
            "process": {"pid": 4242},
            "slurm": {"job_id": "42", "state": "PENDING", "reason_text": "Resources: waiting for nodes [x]"},
        },
        {"name": "export", "status": "pending", "reason": "not shown while pending"},
        {"name": "verify", "status": "failed", "reason": "exited 0 but its outputs do not verify: [bold]x[/bold]"},
    ],
}


def _row(text: str, stage: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if stage in line.split()[1:3])
    return lines[start:]


def test_a_stage_row_holds_its_mark_status_and_detail_and_a_pipe_gets_whole_lines() -> None:
    text = render_state(STATE)
    assert text.splitlines()[0] == "run /runs/r: RUNNING"
    assert _row(text, "env")[0].split() == ["[=]", "env", "skipped", "already", "done:", "venv", "/v", "passes",
                                             "the", "import", "contract"]
    train = _row(text, "train")
    assert train[0].split() == ["[>]", "train", "running", "step", "3/10", "(pid", "4242)"]
    column = train[0].index("step 3/10")
    assert train[1][column:] == "slurm job 42 PENDING (Resources: waiting for nodes [x])"  # under its stage's detail
    assert _row(text, "export")[0].split() == ["[", "]", "export", "pending"]
    assert "[bold]x[/bold]" in _row(text, "verify")[0]  # log text is never markup
    assert all(line == line.rstrip() for line in text.splitlines())


def test_in_a_narrow_terminal_the_detail_wraps_in_its_column() -> None:
    text = render_state(STATE, width=50)
    assert all(len(line) <= 50 for line in text.splitlines() if not line.startswith("run "))
    train = _row(text, "train")
    column = train[0].index("step 3/10")
    assert train[1][:column].strip() == "" and train[1][column:].startswith("slurm job 42 PENDING")
