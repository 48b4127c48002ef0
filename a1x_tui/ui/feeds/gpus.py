"""The GPU worker: samples written under the run (``<run>/gpu/<host>.jsonl``), else this node's NVML.

``a1x-tui gpu-agent`` (and the demo's simulated GPUs) write per-host samples into the run directory,
so a dashboard on any machine sees every node. Without such files the app samples the local GPUs
itself with ``a1x_diagnostics.gpu.GpuSampler``, joining processes to the run's stages through the
supervisor's recorded pids. Where neither exists, the panel shows the one-line reason.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_tui.ui.messages import GpusSampled, HostGpus

POLL_S = 1.0
TAIL_BYTES = 256 * 1024
STALE_PROCESSES_S = 15.0  # a process list older than this (three process tiers) is not shown
SIMULATED_PREFIX = "simulated"  # the demo's driver string (a1x_tui.demo.gpu)

Post = Callable[[Message], Any]
KnownPids = Callable[[], dict[int, str] | None]


def hosts_from_files(run_dir: Path) -> list[HostGpus]:
    """The latest sample of every host that wrote one under ``run_dir``."""
    from a1x_diagnostics.gpu import read_log

    folder = run_dir / "gpu"
    out: list[HostGpus] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.jsonl")):
        log = read_log(path, tail_bytes=TAIL_BYTES)
        with_procs = log.latest_with_processes()
        latest = log.latest
        if with_procs is not None and latest is not None and latest.ts - with_procs.ts > STALE_PROCESSES_S:
            with_procs = None
        driver = log.driver
        out.append(
            HostGpus(
                host=log.host or path.stem,
                snapshot=latest,
                processes=(with_procs.processes or ()) if with_procs is not None else (),
                driver=driver,
                simulated=bool(driver and driver.startswith(SIMULATED_PREFIX)),
                note=log.unavailable or ("the agent stopped" if log.stopped else None),
            )
        )
    return out


class GpuFeed:
    """``local_gpus()`` says whether this machine's GPUs belong on the panel while the run directory holds no
    samples: None when they do, else the line the panel shows instead (the dashboard decides from the
    target and the run's outcome: a recorded run's logs say nothing of this machine's GPUs)."""

    def __init__(
        self,
        run_dir: Path | None,
        post: Post,
        known_pids: KnownPids,
        *,
        local_gpus: Callable[[], str | None] = lambda: None,
        interval: float = POLL_S,
    ) -> None:
        self.run_dir = run_dir
        self.post = post
        self.known_pids = known_pids
        self.local_gpus = local_gpus
        self.interval = interval

    def run(self, stop: threading.Event) -> None:
        sampler: Any = None
        try:
            while not stop.is_set():
                hosts = hosts_from_files(self.run_dir) if self.run_dir is not None else []
                why_not = None if hosts else self.local_gpus()
                if hosts:
                    self.post(GpusSampled(hosts))
                elif why_not is not None:
                    if sampler is not None:
                        sampler.stop(timeout=1.0)
                        sampler = None
                    self.post(GpusSampled([], note=why_not))
                else:
                    if sampler is None:
                        sampler = self._local_sampler()
                    self.post(self._local(sampler))
                stop.wait(self.interval)
        finally:
            if sampler is not None:
                sampler.stop(timeout=1.0)

    def _local_sampler(self) -> Any:
        from a1x_diagnostics.gpu import GpuSampler, RoleResolver

        sampler = GpuSampler(interval_s=self.interval, resolver=RoleResolver(self.known_pids))
        sampler.start()
        return sampler

    def _local(self, sampler: Any) -> GpusSampled:
        state = sampler.state
        if state.unavailable:
            return GpusSampled([], note=f"no GPU readings: {state.unavailable}")
        snapshot = sampler.latest
        if snapshot is None:
            return GpusSampled([], note="reading the GPUs...")
        host = HostGpus(
            host=snapshot.host,
            snapshot=snapshot,
            processes=sampler.processes,
            driver=state.driver,
            note=state.role_note,
        )
        return GpusSampled([host])
