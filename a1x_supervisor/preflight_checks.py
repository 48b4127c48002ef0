"""What every preflight shares (the open-loop one, ``a1x_supervisor.preflight``, and the closed-loop one,
``a1x_supervisor.preflight_alpagym``): the GPUs this process may use, and ``Checks``, which collects a
preflight's findings and check states into one ``Report``."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.findings import CheckResult, CheckState, Evidence, Finding, Fix, Report, Severity, overall_status

GB = 1_000_000_000


@dataclass(frozen=True, slots=True)
class GpuInventory:
    """GPUs this process can use: their memory in bytes (None when unknown) and the source."""

    memory: tuple[int | None, ...]
    source: str


GpuProbe = Callable[[], "GpuInventory | str"]  # an inventory, or the reason there is none


def _visible(count: int, environ: Mapping[str, str]) -> list[int]:
    """NVML indices that ``CUDA_VISIBLE_DEVICES`` leaves visible (NVML itself ignores it)."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(range(count))
    out = []
    for part in value.split(","):
        part = part.strip()
        if part.isdigit() and int(part) < count:
            out.append(int(part))
        elif part:
            return list(range(count)) if part.startswith(("GPU-", "MIG-")) else out
    return out


def probe_gpus(environ: Mapping[str, str] | None = None) -> GpuInventory | str:
    """NVML through ``a1x_diagnostics.gpu`` (imported lazily), else ``nvidia-smi``, else the reason."""
    env = os.environ if environ is None else environ
    nvml_reason = ""
    try:
        from a1x_diagnostics.gpu.backend import PynvmlBackend

        backend = PynvmlBackend()
        backend.init()
        try:
            count = int(backend.device_count())
            memory: list[int | None] = []
            for index in _visible(count, env):
                total = backend.memory(index).total
                memory.append(int(total) if isinstance(total, int) else None)
        finally:
            backend.shutdown()
        return GpuInventory(tuple(memory), "NVML")
    except Exception as exc:  # NvmlUnavailable, a missing module, an NVML call error
        nvml_reason = str(exc) or type(exc).__name__
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return f"no NVML ({nvml_reason}) and no nvidia-smi on PATH"
    try:
        done = subprocess.run(
            [smi, "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    if done.returncode != 0:
        return f"nvidia-smi failed: {(done.stderr or done.stdout).strip()[:200]}"
    rows = [r.split(",") for r in done.stdout.strip().splitlines() if r.strip()]
    by_index: dict[int, int | None] = {}
    for row in rows:
        try:
            by_index[int(row[0])] = int(float(row[1])) * 1024 * 1024
        except (ValueError, IndexError):
            continue
    return GpuInventory(tuple(by_index.get(i) for i in _visible(len(rows), env)), "nvidia-smi")


def machine(
    stages: Sequence[str],
    environ: Mapping[str, str] | None,
    which: Callable[[str], str | None] | None,
    disk_free: Callable[[Path], int] | None,
    skip_verified: Callable[[str], bool] | None,
) -> tuple[Mapping[str, str], Callable[[str], str | None], Callable[[Path], int], list[str]]:
    """What a preflight asks this machine through (tests pass their own): the environment, ``which`` on
    its PATH, free disk space; and the stages still to run, those whose outputs do not verify."""
    env = os.environ if environ is None else environ
    done = skip_verified or (lambda _stage: False)
    return (
        env,
        which or (lambda name: shutil.which(name, path=env.get("PATH"))),
        disk_free or (lambda p: shutil.disk_usage(p).free),
        [s for s in stages if not done(s)],
    )


class Checks:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.results: dict[str, CheckResult] = {}
        self.notes: list[str] = []

    def finding(
        self,
        check_id: str,
        explanation: str,
        *,
        evidence: Sequence[str],
        action: str,
        fixes: Sequence[Fix] = (),
        severity: Severity | None = None,
        **data: Any,
    ) -> None:
        cat = entry(check_id)
        self.findings.append(
            Finding(
                id=check_id,
                severity=severity or cat.severity,
                title=cat.title,
                explanation=explanation,
                evidence=[Evidence(file=f"preflight:{check_id}", line=None, text=t) for t in evidence],
                fixes=list(fixes),
                action=action,
                data=data,
            )
        )
        self.results[check_id] = CheckResult(id=check_id, state=CheckState.FINDING)

    def ok(self, check_id: str, note: str) -> None:
        if self.results.get(check_id, CheckResult(id=check_id, state=CheckState.OK)).state is not CheckState.FINDING:
            self.results[check_id] = CheckResult(id=check_id, state=CheckState.OK, note=note)

    def other(self, check_id: str, state: CheckState, note: str) -> None:
        if check_id not in self.results or self.results[check_id].state is not CheckState.FINDING:
            self.results[check_id] = CheckResult(id=check_id, state=state, note=note)

    def report(self, target: str, stages: Sequence[str], *, pipeline: str = "") -> Report:
        status = overall_status(self.findings)
        worst = ", ".join(f.id for f in self.findings) or "none"
        which = f"{pipeline} stages" if pipeline else "stages"
        count = f"{len(self.findings)} finding(s)"
        summary = f"PREFLIGHT {status.value.upper()} - {count}: {worst} ({which}: {', '.join(stages)})"
        return Report(
            kind="preflight",
            target=target,
            status=status,
            exit_code=status.exit_code,
            summary=summary,
            findings=self.findings,
            checks=list(self.results.values()),
            notes=self.notes,
        )

    def disk(self, cid: str, needs: Sequence[tuple[Path, int, str]], free_of: Callable[[Path], int], *,
             explanation: str, action: str) -> None:
        """``disk_space_low`` (``cid``) for ``needs`` (path, bytes, what for), summed per filesystem."""
        if not needs:
            self.other(cid, CheckState.SKIPPED, "no stage of this run writes large files")
            return
        by_device: dict[int, list[tuple[Path, Path, int, str]]] = {}
        for path, size, what in needs:
            anchor = _existing_parent(path)
            try:
                dev = anchor.stat().st_dev
            except OSError:
                dev = -1
            by_device.setdefault(dev, []).append((path, anchor, size, what))
        short = []
        for items in by_device.values():
            anchor = items[0][1]
            try:
                free = free_of(anchor)
            except OSError as exc:
                self.notes.append(f"cannot read free space of {anchor}: {exc}")
                continue
            total = sum(size for _, _, size, _ in items)
            if free < total:
                parts = "; ".join(f"{size / GB:.0f} GB in {path} for {what}" for path, _, size, what in items)
                short.append(f"{free / GB:.1f} GB free, about {total / GB:.0f} GB needed on one filesystem: {parts}")
        if short:
            self.finding(cid, explanation, evidence=short, action=action)
        else:
            self.ok(cid, "; ".join(f"{items[0][1]}: enough free space" for items in by_device.values()))


def _existing_parent(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")
