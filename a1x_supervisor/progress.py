"""Progress read from a stage's output, for display (never for success)."""

from __future__ import annotations

import re

from a1x_diagnostics.events import Role, Step
from a1x_diagnostics.parsing import read_line
from a1x_supervisor.stage import Progress

# huggingface_hub's aggregate bar (docs/reference/alpamayo-recipe.md §5: 'Fetching {N} files', N = matched files):
# 'Fetching 12 files:  42%|████▏     | 5/12 [00:03<00:04,  1.50it/s]'
_FETCHING_RE = re.compile(r"Fetching (\d+) files:\s*(\d+)%\|[^|]*\|\s*(\d+)/(\d+)")
_PERCENT_RE = re.compile(r"(\d{1,3})%\|")


class LastLine:
    """Any stage: the last non-empty output line as the progress text."""

    def feed(self, line: str) -> Progress | None:
        text = line.strip()
        return Progress(text[:160]) if text else None


class HfDownload:
    """``download`` / ``convert`` / ``grader``: the 'Fetching N files' bar, else the last line."""

    def feed(self, line: str) -> Progress | None:
        m = _FETCHING_RE.search(line)
        if m:
            done, total = int(m.group(3)), int(m.group(4))
            return Progress(f"fetching files {done}/{total}", current=done, total=total, unit="files")
        if _PERCENT_RE.search(line):
            return None  # per-file byte bars: too noisy to show
        text = line.strip()
        return Progress(text[:160]) if text else None


class TrainSteps:
    """``train``: ``Step: n/N`` lines from controller.log (fed by the train monitor)."""

    def feed(self, line: str) -> Progress | None:
        if "Step: " not in line:
            return None
        for event in read_line(line, Role.CONTROLLER):
            if isinstance(event, Step):
                return Progress(f"step {event.step}/{event.total}", current=event.step, total=event.total,
                                unit="steps")
        return None
