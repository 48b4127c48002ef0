"""Hugging Face failures read from a stage log: rate limits (retry) and gated repos (one-line fix);
``HfRetry``, the retry policy of the stages that talk to the Hub.

The lines are the catalog's (``a1x_diagnostics.signatures``, ``recipe_hub.py``: ``GatedRepoError`` ...
``Cannot access gated repo for url {url}.``; a 401's ``Repository Not Found for url``; HTTP 429), read
by the log parser: docs/reference/alpamayo-recipe.md §14 rows 3 and 4, §4, §5 (HF 429: re-run with
backoff, already-present files are skipped so a re-run resumes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from a1x_diagnostics.events import Role, Signal, SignalKind, Source
from a1x_diagnostics.parsing import parse_lines
from a1x_supervisor.stage import AfterFailure
from a1x_supervisor.stagelog import strip_timestamp

_STAGE = Source("stage.log", Role.STAGE)
_URL_RE = re.compile(r"https://huggingface\.co/[^\s'\"`)<>]+")


@dataclass(frozen=True, slots=True)
class HfProblem:
    kind: Literal["gated", "unauthorized", "rate_limited"]
    line: str
    repo: str | None

    def fix(self, run_dir: str, stage: str) -> str:
        """The one line that tells the user what to do."""
        repo = self.repo or "the repository"
        retry = f"then `a1x-tui restart {run_dir} --stage {stage}`"
        if self.kind == "gated":
            page = f"https://huggingface.co/{self.repo}" if self.repo else "its page on huggingface.co"
            return (
                f"Hugging Face refused the gated repo {repo}: accept its license at {page} with your account, "
                f"log in (`hf auth login` or export HF_TOKEN), {retry}"
            )
        if self.kind == "unauthorized":
            return (
                f"Hugging Face did not accept the token for {repo}: run `hf auth login` (or export HF_TOKEN), {retry}"
            )
        return f"Hugging Face rate limit (HTTP 429) on {repo}: wait, or set HF_TOKEN for higher limits, {retry}"


def repo_from_url(url: str) -> str | None:
    """``nvidia/Alpamayo-R1-10B`` or ``datasets/nvidia/PhysicalAI-Autonomous-Vehicles`` from a Hub URL."""
    parts = [p for p in url.removeprefix("https://huggingface.co/").split("/") if p]
    if parts and parts[0] == "api":
        parts = parts[1:]
    prefix = ""
    if parts and parts[0] in ("models", "datasets", "spaces"):
        prefix = "" if parts[0] == "models" else parts[0] + "/"
        parts = parts[1:]
    if len(parts) < 2:
        return None
    return f"{prefix}{parts[0]}/{parts[1]}"


def _kind(event: object) -> Literal["gated", "unauthorized", "rate_limited"] | None:
    """What the catalog says a line is: a gated repo, a refused token, or the Hub's rate limit."""
    if isinstance(event, Signal) and event.kind is SignalKind.GATED_REPO:
        return "gated" if event.fields.get("reason") == "gated" else "unauthorized"
    if isinstance(event, Signal) and event.kind is SignalKind.RATE_LIMITED:
        return "rate_limited"
    return None


def scan_hf_problem(text: str) -> HfProblem | None:
    """The most decisive Hugging Face problem in a stage's output: gated > unauthorized > rate limit."""
    found: dict[str, HfProblem] = {}
    lines = [strip_timestamp(raw) for raw in text.splitlines()]
    for event in parse_lines(lines, _STAGE):
        kind = _kind(event)
        if kind is None or kind in found:
            continue
        line = lines[event.line - 1]
        url = _URL_RE.search(line)
        found[kind] = HfProblem(kind, line.strip()[:300], repo_from_url(url.group(0)) if url else None)
    for kind in ("gated", "unauthorized", "rate_limited"):
        if kind in found:
            problem = found[kind]
            if problem.repo is None:
                # the URL is often on a neighbouring line of the same traceback
                url = _URL_RE.search(text)
                if url:
                    return HfProblem(problem.kind, problem.line, repo_from_url(url.group(0)))
            return problem
    return None


@dataclass(frozen=True, slots=True)
class HfRetry:
    """A Hub stage's retry policy (docs/supervisor.md "Stages"): a rate limit (429) is retried with
    backoff, ``backoff_s`` doubling, ``retries`` times (files already present are skipped, so a retry
    resumes); a gated or unauthorized repo fails with the line that says what to do, and the
    ``restart`` command to run after."""

    run_dir: str
    stage: str
    retries: int
    backoff_s: float
    retry_rate_limits: bool = True  # False for training: a run is not retried, a dead replica says more

    def after_failure(self, output: str, attempt: int, *, monitor_stopped: bool) -> AfterFailure | None:
        problem = scan_hf_problem(output)
        if problem is None:
            return None
        if not self.retry_rate_limits and (problem.kind == "rate_limited" or monitor_stopped):
            return None
        if problem.kind == "rate_limited" and attempt <= self.retries:
            delay = self.backoff_s * (2 ** (attempt - 1))
            reason = f"Hugging Face rate limit (429): retry {attempt}/{self.retries} in {delay:.0f}s"
            return AfterFailure(reason, retry_in_s=delay, line=problem.line)
        return AfterFailure(problem.fix(self.run_dir, self.stage))
