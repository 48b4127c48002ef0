"""Overhead of the GPU sampler: the cost of each NVML call tier, and CPU at 1 Hz.

    python benchmarks/gpu_sampler.py [--seconds 60] [--interval 1] [--calls 200] [--out DIR] [--fake]

Part 1 times each call the sampler makes, by tier (static once; device tier every second;
process tier every few seconds, including the psutil role join), and, for comparison, calls the
sampler keeps out of the loop (PCIe throughput, per-process utilisation). Part 2 runs the sampler
thread at ``--interval`` for ``--seconds`` (writing samples to a temporary file, as the agent does)
while the main thread sleeps, and reports this process's CPU time / wall time as percent of one
core. ``--fake`` uses the scripted backend (no GPU): it measures our Python, not NVML.

Results: ``DIR/gpu_sampler.json`` and ``DIR/gpu_sampler.md`` (default ``benchmarks/out/``); the
figures quoted in ``docs/gpu.md`` come from a run on the H200.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from a1x_diagnostics.gpu import FakeBackend, GpuSampler, PynvmlBackend, RoleResolver, SampleWriter
from a1x_diagnostics.gpu.backend import NvmlBackend, NvmlUnavailable
from a1x_diagnostics.gpu.fake import fake_h200


def _timed(fn: Callable[[], object], calls: int) -> dict[str, float]:
    times: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    return {
        "median_us": round(statistics.median(times), 1),
        "p95_us": round(times[int(0.95 * (len(times) - 1))], 1),
        "max_us": round(times[-1], 1),
        "calls": calls,
    }


def tier_costs(backend: NvmlBackend, calls: int) -> dict[str, Any]:
    """Microseconds per call, per GPU, for each tier."""
    backend.init()
    count = backend.device_count()
    out: dict[str, Any] = {"gpus": count, "static": {}, "device": {}, "process": {}, "excluded": {}}
    out["static"]["device_info"] = _timed(lambda: backend.device_info(0), max(5, calls // 20))
    out["static"]["driver_version"] = _timed(backend.driver_version, max(5, calls // 20))
    out["device"]["memory"] = _timed(lambda: backend.memory(0), calls)
    out["device"]["utilization"] = _timed(lambda: backend.utilization(0), calls)
    out["device"]["temperature"] = _timed(lambda: backend.temperature(0), calls)
    out["device"]["power_usage"] = _timed(lambda: backend.power_usage(0), calls)
    out["process"]["processes"] = _timed(lambda: backend.processes(0), calls)
    pids = [p.pid for p in backend.processes(0)]
    resolver = RoleResolver()
    out["process"]["role_join_first"] = _timed(lambda: RoleResolver().join(pids), max(5, calls // 20))
    resolver.join(pids)
    out["process"]["role_join_cached"] = _timed(lambda: resolver.join(pids), calls)
    out["process"]["pids"] = len(pids)
    sampler = GpuSampler(backend, resolver=RoleResolver(), history_size=2)
    sampler.open()
    out["device"]["whole_tier_all_gpus"] = _timed(lambda: sampler.sample(processes=False), calls)
    out["process"]["whole_tier_all_gpus"] = _timed(lambda: sampler.sample(processes=True), max(10, calls // 4))
    if isinstance(backend, PynvmlBackend):
        out["excluded"] = _excluded_costs(max(5, calls // 20))
    return out


def _excluded_costs(calls: int) -> dict[str, Any]:
    """Calls nvitop keeps on a slow tier and we keep out of the loop entirely."""
    import pynvml as nv

    h = nv.nvmlDeviceGetHandleByIndex(0)
    out: dict[str, Any] = {}

    def pcie() -> None:
        nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES)

    def proc_util() -> None:
        with contextlib.suppress(nv.NVMLError):  # NOT_FOUND when no process ran since timestamp 0
            nv.nvmlDeviceGetProcessUtilization(h, 0)

    for name, fn in (("pcie_throughput_tx", pcie), ("process_utilization", proc_util)):
        try:
            out[name] = _timed(fn, calls)
        except nv.NVMLError as exc:
            out[name] = {"error": str(exc)}
    return out


def cpu_at_rate(backend: NvmlBackend, seconds: float, interval: float, process_interval: float) -> dict[str, Any]:
    """Run the sampler thread (with a samples file) and measure this process's CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        writer = SampleWriter(Path(tmp) / "bench.jsonl")
        sampler = GpuSampler(
            backend, interval_s=interval, process_interval_s=process_interval, writer=writer, history_size=600
        )
        if not sampler.open():
            return {"error": sampler.unavailable}
        cpu0, wall0 = time.process_time(), time.perf_counter()
        sampler.start()
        time.sleep(seconds)
        sampler.stop()
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        size = writer.path.stat().st_size
    samples = len(sampler.history_list())
    return {
        "seconds": round(wall, 2),
        "interval_s": interval,
        "process_interval_s": process_interval,
        "samples": samples,
        "cpu_s": round(cpu, 4),
        "cpu_percent_of_one_core": round(100 * cpu / wall, 3),
        "cpu_ms_per_sample": round(1000 * cpu / max(1, samples), 3),
        "bytes_written": size,
        "bytes_per_sample": round(size / max(1, samples), 1),
    }


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# GPU sampler overhead ({result['backend']}, {result['host']})",
        "",
        "| tier | call | median µs | p95 µs |",
        "| --- | --- | --- | --- |",
    ]
    for tier in ("static", "device", "process", "excluded"):
        for name, value in result["tiers"].get(tier, {}).items():
            if isinstance(value, dict) and "median_us" in value:
                lines.append(f"| {tier} | {name} | {value['median_us']} | {value['p95_us']} |")
            elif isinstance(value, dict):
                lines.append(f"| {tier} | {name} | {value.get('error')} | |")
    cpu = result["cpu"]
    if "error" in cpu:
        lines += ["", f"CPU run: {cpu['error']}"]
    else:
        lines += [
            "",
            f"Sampler thread at {cpu['interval_s']} s (processes every {cpu['process_interval_s']} s) for "
            f"{cpu['seconds']} s: {cpu['samples']} samples, CPU {cpu['cpu_s']} s = "
            f"**{cpu['cpu_percent_of_one_core']} % of one core** ({cpu['cpu_ms_per_sample']} ms per sample); "
            f"{cpu['bytes_per_sample']} bytes per JSONL line.",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--process-interval", type=float, default=5.0)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    p.add_argument("--fake", action="store_true", help="scripted backend: no GPU needed")
    args = p.parse_args()
    backend: NvmlBackend = fake_h200(1, [(0, os.getpid(), 1 << 30)]) if args.fake else PynvmlBackend()
    try:
        tiers = tier_costs(backend, args.calls)
    except NvmlUnavailable as exc:
        print(f"gpu_sampler benchmark: NVML unavailable: {exc} (use --fake)", file=sys.stderr)
        return 1
    fresh: NvmlBackend = FakeBackend(list(backend.devices)) if isinstance(backend, FakeBackend) else PynvmlBackend()
    result = {
        "backend": "fake" if args.fake else "pynvml",
        "host": platform.node(),
        "python": platform.python_version(),
        "tiers": tiers,
        "cpu": cpu_at_rate(fresh, args.seconds, args.interval, args.process_interval),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_sampler.json").write_text(json.dumps(result, indent=2))
    md = to_markdown(result)
    (out / "gpu_sampler.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
