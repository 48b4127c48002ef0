"""Progress read from a stage's output, for display (never for success)."""

from __future__ import annotations

from a1x_diagnostics.events import Role, Signal, SignalKind, Step
from a1x_diagnostics.parsing import read_line
from a1x_supervisor.stage import Progress


class LastLine:
    """Any stage: the last non-empty output line as the progress text."""

    def feed(self, line: str) -> Progress | None:
        text = line.strip()
        return Progress(text[:160]) if text else None


class HfDownload:
    """``download`` / ``convert`` / ``grader``: huggingface_hub's 'Fetching N files' bar (the catalog's entry
    ``hub_fetch_progress``, docs/reference/alpamayo-recipe.md §5), else the last line."""

    def feed(self, line: str) -> Progress | None:
        if "%|" in line:  # a tqdm bar: huggingface_hub's aggregate one (the catalog's entry) or a per-file byte bar
            for event in read_line(line, Role.STAGE):
                if isinstance(event, Signal) and event.kind is SignalKind.HUB_FETCH_PROGRESS:
                    done, total = event.fields["done"], event.fields["total"]
                    return Progress(f"fetching files {done}/{total}", current=done, total=total, unit="files")
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
