"""The GPU panel: per GPU a memory bar and a utilisation bar, then its processes by pipeline role.

Readings are ``a1x_diagnostics.gpu`` samples (bytes, percent, °C, mW; ``NA`` where the GPU cannot say).
A simulated source (the demo) says so in the panel's first line, in words.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import Static

from a1x_diagnostics.gpu import NA, DeviceSample, ProcessSample
from a1x_tui.ui.messages import HostGpus

GIB = 1024**3


def _bar(percent: float | None, cells: int) -> Text:
    if percent is None:
        return Text("▕" + "·" * cells + "▏", style="dim")
    filled = round(max(0.0, min(100.0, percent)) / 100 * cells)
    style = "red" if percent >= 95 else ("yellow" if percent >= 85 else "green")
    text = Text("▕")
    text.append("█" * filled, style=style)
    text.append("░" * (cells - filled), style="dim")
    text.append("▏")
    return text


def _gib(value: object) -> str:
    return "N/A" if value is NA or not isinstance(value, int) else f"{value / GIB:.1f}"


def device_line(d: DeviceSample, width: int) -> Text:
    cells = 10 if width >= 90 else 6
    mem = d.memory_percent
    util = float(d.gpu_utilization) if isinstance(d.gpu_utilization, int) else None
    line = Text(f"GPU{d.index:<2}", style="bold")
    line.append(" mem ")
    line.append_text(_bar(mem, cells))
    line.append(f" {mem:3.0f}%" if mem is not None else "  N/A")
    line.append(f" {_gib(d.memory_used)}/{_gib(d.memory_total)}G", style="dim")
    line.append(" util ")
    line.append_text(_bar(util, cells))
    line.append(f" {util:3.0f}%" if util is not None else "  N/A")
    if isinstance(d.temperature, int):
        line.append(f" {d.temperature}°C", style="dim")
    if isinstance(d.power_usage, int):
        line.append(f" {d.power_usage / 1000:.0f}W", style="dim")
    if d.error:
        line.append(f" {d.error}", style="red")
    return line


def process_line(p: ProcessSample) -> Text:
    label = p.role.label if p.role is not None else "unknown"
    kind = p.role.kind.value if p.role is not None else ""
    style = "bold" if kind in ("policy", "rollout") else ("red" if kind in ("foreign",) else "")
    line = Text("      ")
    line.append(f"{label:<22}", style=style)
    line.append(f" pid {p.pid:<8}")
    line.append(f" {_gib(p.memory_used)} GiB", style="dim")
    return line


def host_text(host: HostGpus, width: int) -> Text:
    if host.snapshot is None:
        return Text(f"{host.host}: no GPU readings" + (f" ({host.note})" if host.note else ""), style="dim")
    out = Text()
    head = Text(f"{host.host}", style="bold")
    if host.simulated:
        head.append("  SIMULATED GPUs (a1x-tui demo: no GPU is used)", style="bold magenta")
    elif host.driver:
        head.append(f"  driver {host.driver}", style="dim")
    if host.snapshot is not None:
        clock = datetime.fromtimestamp(host.snapshot.ts).strftime("%H:%M:%S")
        head.append(f"  sampled {clock}", style="dim")
    out.append_text(head)
    if host.note:
        out.append(f"\n  {host.note}", style="yellow")
    by_gpu: dict[int, list[ProcessSample]] = {}
    for p in host.processes:
        by_gpu.setdefault(p.gpu, []).append(p)
    for d in host.snapshot.devices:
        out.append("\n")
        out.append_text(device_line(d, width))
        for p in by_gpu.get(d.index, []):
            out.append("\n")
            out.append_text(process_line(p))
    return out


class GpuPanel(Static):
    DEFAULT_CSS = """
    GpuPanel { height: auto; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("GPUs: waiting for the first reading", id=id)
        self.hosts: list[HostGpus] = []
        self.note: str | None = None

    def show(self, hosts: list[HostGpus], note: str | None) -> None:
        self.hosts, self.note = hosts, note
        width = self.size.width or 80
        if not hosts:
            self.update(Text(f"GPUs: {note or 'no readings'}", style="dim"))
            return
        ordered = sorted(hosts, key=lambda h: h.snapshot is None)  # hosts with readings first
        self.update(Text("\n").join(host_text(h, width) for h in ordered))
