"""Fixed data for the UI tests: a recorded run's lines, its findings, series, a state and GPUs.

Everything comes from the real recordings in tests/fixtures/cosmos through the same diagnosis the
live follower uses, with a fixed clock, so snapshots and assertions do not depend on when they run.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from a1x_diagnostics.gpu import DeviceSample, GpuSnapshot, ProcessRole, ProcessSample, RoleKind
from a1x_diagnostics.live import finding_key
from a1x_diagnostics.parsing import discover
from a1x_tui.ui.feeds.follow import SeriesDiagnosis, source_label
from a1x_tui.ui.logstore import LineMaker
from a1x_tui.ui.messages import (
    FindingsChanged,
    GpusSampled,
    HostGpus,
    LineChunk,
    LinesArrived,
    LogFileSeen,
    MetricsChanged,
    RunStateChanged,
    SeriesChanged,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "cosmos"
OOM_RUN = FIXTURES / "747d1bd" / "rollout_oom"
COLLAPSE_RUN = FIXTURES / "747d1bd" / "grpo_collapse"
FIXED_NOW = datetime(2026, 11, 29, 15, 10, 0, tzinfo=timezone.utc).timestamp()
GIB = 1024**3


def run_async(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """An ``async def`` test run to completion (no pytest asyncio plugin needed)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return wrapper


def fixture_messages(path: Path, config: Path | None = None) -> list[Any]:
    """What the follow worker would post for ``path`` once its history is read."""
    from a1x_diagnostics.live._engine import engine_diagnosis

    layout = discover(path)
    factory, _ = engine_diagnosis(config)
    diagnosis = SeriesDiagnosis(factory())
    maker = LineMaker()
    chunks = []
    seen = []
    for file_path, source in layout.files:
        lines = file_path.read_text(encoding="utf-8", errors="replace").splitlines()
        diagnosis.file_stat(source, file_path.stat().st_size, FIXED_NOW - 3600)
        diagnosis.feed(source, 1, lines)
        diagnosis.end_file(source)
        made = maker.make(source.path, source_label(source), 1, lines, history=True)
        chunks.append(LineChunk(source.path, source_label(source), 1, tuple(made), history=True, done=True))
        seen.append(LogFileSeen(source.path, source_label(source), str(file_path)))
    evaluation = diagnosis.evaluate(FIXED_NOW)
    findings = {finding_key(f): f for f in evaluation.findings}
    return [
        LinesArrived(chunks),
        FindingsChanged(findings, {}, first=True),
        MetricsChanged(dict(evaluation.metrics)),
        SeriesChanged(dict(diagnosis.snapshot)),
        *seen,
    ]


def iso(seconds_before_now: float) -> str:
    return datetime.fromtimestamp(FIXED_NOW - seconds_before_now, tz=timezone.utc).isoformat(timespec="milliseconds")


def sample_state(run_dir: Path, *, status: str = "running") -> dict[str, Any]:
    """A supervisor state (state.json's object) with the train stage running at step 12 of 30."""
    stages: list[dict[str, Any]] = [
        {
            "name": "download",
            "status": "succeeded",
            "started_at": iso(300),
            "ended_at": iso(240),
            "reason": "12 files for chunk(s) [3116]",
            "attempts": 1,
            "progress": {"text": "fetching files 12/12", "current": 12, "total": 12, "percent": 100.0},
        },
        {
            "name": "convert",
            "status": "succeeded",
            "started_at": iso(240),
            "ended_at": iso(200),
            "reason": "model converted",
            "attempts": 1,
        },
        {"name": "configure", "status": "skipped", "reason": "already done: train.toml", "attempts": 0},
        {
            "name": "train",
            "status": "running",
            "started_at": iso(125),
            "attempts": 1,
            "reason": "",
            "progress": {"text": "step 12/30", "current": 12, "total": 30, "percent": 40.0},
            "process": {"pid": 4242, "pgid": 4242},
        },
        {"name": "export", "status": "pending", "attempts": 0},
        {"name": "verify", "status": "pending", "attempts": 0},
    ]
    return {
        "run_id": run_dir.name,
        "run_dir": str(run_dir),
        "status": status,
        "message": "stages: download, convert, configure, train, export, verify",
        "current_stage": "train",
        "supervisor": {"pid": 4200, "host": "node01", "started_at": iso(300)},
        "stages": stages,
        "updated_at": iso(1),
    }


def sample_gpus() -> GpusSampled:
    def role(label: str, kind: RoleKind) -> ProcessRole:
        return ProcessRole(label=label, kind=kind, source="environment")

    devices = (
        DeviceSample(
            index=0,
            name="NVIDIA H200",
            memory_total=140 * GIB,
            memory_used=62 * GIB,
            memory_free=78 * GIB,
            gpu_utilization=87,
            memory_utilization=40,
            temperature=61,
            power_usage=512_000,
        ),
        DeviceSample(
            index=1,
            name="NVIDIA H200",
            memory_total=140 * GIB,
            memory_used=134 * GIB,
            memory_free=6 * GIB,
            gpu_utilization=97,
            memory_utilization=70,
            temperature=66,
            power_usage=590_000,
        ),
    )
    processes = (
        ProcessSample(gpu=0, pid=4301, memory_used=62 * GIB, role=role("policy_0", RoleKind.POLICY)),
        ProcessSample(gpu=1, pid=4302, memory_used=134 * GIB, role=role("rollout_0", RoleKind.ROLLOUT)),
    )
    snapshot = GpuSnapshot(ts=FIXED_NOW - 2, host="node01", devices=devices, processes=processes)
    return GpusSampled([HostGpus("node01", snapshot, processes, driver="580.159.04")])


def dashboard_messages(run_dir: Path | None) -> list[Any]:
    messages = fixture_messages(OOM_RUN)
    if run_dir is not None:
        messages.append(RunStateChanged(sample_state(run_dir), True))
    messages.append(sample_gpus())
    return messages
