"""What the sampler reads: per-GPU samples, per-process samples, their pipeline roles, snapshots.

Units are NVML's own, chosen once: bytes for memory, percent for utilisation, degrees Celsius,
milliwatts for power. Every reading may be ``NA``. Snapshots turn into one JSON object each (one
line of ``<run_dir>/gpu/<hostname>.jsonl``) and back, so a client on another machine sees the same
values the node saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from a1x_diagnostics.gpu.na import NA, MaybeInt, MaybeStr, from_json_int, mib, or_none, pct, to_mib

FORMAT_VERSION = 1


class RoleKind(str, Enum):
    """What a GPU process is to the run being watched."""

    CONTROLLER = "controller"
    POLICY = "policy"
    ROLLOUT = "rollout"
    REFERENCE = "reference"
    LAUNCHER = "launcher"
    STAGE = "stage"  # one of our pipeline stages (convert, eval...)
    FOREIGN = "foreign"  # alive, visible, and not part of this run
    HIDDEN = "hidden"  # NVML reports the pid but /proc does not show it (PID namespace, or it just exited)

    @property
    def part_of_run(self) -> bool:
        return self not in (RoleKind.FOREIGN, RoleKind.HIDDEN)

    @property
    def replica(self) -> bool:
        """Policy and rollout replicas: the processes that train."""
        return self in (RoleKind.POLICY, RoleKind.ROLLOUT)


FOREIGN_LABEL = "not part of this run"
HIDDEN_LABEL = "not visible"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRole:
    """A GPU process joined to the pipeline: ``policy_0``, ``rollout_1``, ``controller``, ``convert``..."""

    label: str
    kind: RoleKind
    source: str  # supervisor | log file | environment | command line | none | procfs
    command: str | None = None  # the command line, shortened; never the environment
    user: str | None = None
    local_rank: int | None = None
    cuda_visible_devices: str | None = None
    detail: str | None = None  # why, when it is not obvious ("parent is init: its launcher is gone")

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind.value,
            "source": self.source,
            "command": self.command,
            "user": self.user,
            "local_rank": self.local_rank,
            "cuda_visible_devices": self.cuda_visible_devices,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ProcessRole:
        try:
            kind = RoleKind(obj.get("kind"))
        except ValueError:
            kind = RoleKind.FOREIGN
        rank = obj.get("local_rank")
        return cls(
            label=str(obj.get("label", FOREIGN_LABEL)),
            kind=kind,
            source=str(obj.get("source", "none")),
            command=_str_or_none(obj.get("command")),
            user=_str_or_none(obj.get("user")),
            local_rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            cuda_visible_devices=_str_or_none(obj.get("cuda_visible_devices")),
            detail=_str_or_none(obj.get("detail")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """What does not change while the driver is loaded: read once per sampler."""

    index: int
    name: MaybeStr = NA
    uuid: MaybeStr = NA
    memory_total: MaybeInt = NA
    power_limit: MaybeInt = NA  # mW

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": or_none(self.name),
            "uuid": or_none(self.uuid),
            "memory_total": or_none(self.memory_total),
            "power_limit": or_none(self.power_limit),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeviceInfo:
        name, uuid = obj.get("name"), obj.get("uuid")
        return cls(
            index=int(obj["index"]),
            name=name if isinstance(name, str) else NA,
            uuid=uuid if isinstance(uuid, str) else NA,
            memory_total=from_json_int(obj.get("memory_total")),
            power_limit=from_json_int(obj.get("power_limit")),
        )


_DEVICE_FIELDS = (
    "memory_total",
    "memory_used",
    "memory_free",
    "gpu_utilization",
    "memory_utilization",
    "temperature",
    "power_usage",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceSample:
    """One GPU at one moment (the 1-second tier)."""

    index: int
    name: MaybeStr = NA
    memory_total: MaybeInt = NA  # bytes
    memory_used: MaybeInt = NA  # bytes, as nvidia-smi's memory.used (reserved memory excluded)
    memory_free: MaybeInt = NA  # bytes
    gpu_utilization: MaybeInt = NA  # percent of time a kernel ran during the driver's last period
    memory_utilization: MaybeInt = NA  # percent of time device memory was read or written
    temperature: MaybeInt = NA  # degrees C
    power_usage: MaybeInt = NA  # mW
    error: str | None = None  # a call failed for another reason than "not supported" (GPU lost...)

    @property
    def memory_percent(self) -> float | None:
        if self.memory_used is NA or self.memory_total is NA or self.memory_total <= 0:
            return None
        return 100.0 * self.memory_used / self.memory_total

    def render(self) -> str:
        """One line, the text of a finding's evidence."""
        power = "N/A" if self.power_usage is NA else f"{self.power_usage / 1000:.0f} W"
        temp = "N/A" if self.temperature is NA else f"{self.temperature} C"
        name = "" if self.name is NA else f" {self.name}"
        used = "N/A" if self.memory_used is NA else str(to_mib(self.memory_used))
        total = mib(self.memory_total)
        text = (
            f"GPU {self.index}{name}: memory {used}/{total} used, free {mib(self.memory_free)}, "
            f"util {pct(self.gpu_utilization)}, {temp}, {power}"
        )
        return text if self.error is None else f"{text} ({self.error})"

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"index": self.index}
        for name in _DEVICE_FIELDS:
            obj[name] = or_none(getattr(self, name))
        if self.error is not None:
            obj["error"] = self.error
        return obj

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], info: DeviceInfo | None = None) -> DeviceSample:
        values = {name: from_json_int(obj.get(name)) for name in _DEVICE_FIELDS}
        error = obj.get("error")
        return cls(
            index=int(obj["index"]),
            name=info.name if info is not None else NA,
            error=error if isinstance(error, str) else None,
            **values,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSample:
    """One process holding memory on one GPU (the slower per-process tier)."""

    gpu: int
    pid: int
    memory_used: MaybeInt = NA  # bytes; NA under MIG or without permission
    role: ProcessRole | None = None

    def render(self) -> str:
        role = "" if self.role is None else f" [{self.role.label}]"
        command = "" if self.role is None or not self.role.command else f" {self.role.command}"
        return f"GPU {self.gpu} pid {self.pid}{role}: {mib(self.memory_used)}{command}"

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"gpu": self.gpu, "pid": self.pid, "memory_used": or_none(self.memory_used)}
        if self.role is not None:
            obj["role"] = self.role.to_json()
        return obj

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ProcessSample:
        role = obj.get("role")
        return cls(
            gpu=int(obj["gpu"]),
            pid=int(obj["pid"]),
            memory_used=from_json_int(obj.get("memory_used")),
            role=ProcessRole.from_json(role) if isinstance(role, Mapping) else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSnapshot:
    """All GPUs of one host at one moment, plus the latest process list when it was refreshed.

    ``processes`` is ``None`` in a snapshot where the per-process tier was not due; ``path`` and
    ``line`` say where the snapshot was read from when it came from a samples file.
    """

    ts: float
    host: str
    devices: tuple[DeviceSample, ...]
    processes: tuple[ProcessSample, ...] | None = None
    processes_ts: float | None = None
    path: str | None = None
    line: int | None = None

    def device(self, index: int) -> DeviceSample | None:
        for d in self.devices:
            if d.index == index:
                return d
        return None

    def with_processes(self, processes: tuple[ProcessSample, ...]) -> GpuSnapshot:
        return replace(self, processes=processes)

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "kind": "sample",
            "ts": round(self.ts, 3),
            "host": self.host,
            "devices": [d.to_json() for d in self.devices],
        }
        if self.processes is not None:
            obj["processes"] = [p.to_json() for p in self.processes]
            obj["processes_ts"] = round(self.processes_ts if self.processes_ts is not None else self.ts, 3)
        return obj

    @classmethod
    def from_json(
        cls,
        obj: Mapping[str, Any],
        infos: Mapping[int, DeviceInfo] | None = None,
        *,
        path: str | None = None,
        line: int | None = None,
    ) -> GpuSnapshot:
        infos = infos or {}
        devices = tuple(
            DeviceSample.from_json(d, infos.get(int(d["index"]))) for d in obj.get("devices", ()) if "index" in d
        )
        raw_procs = obj.get("processes")
        processes = None if raw_procs is None else tuple(ProcessSample.from_json(p) for p in raw_procs)
        pts = obj.get("processes_ts")
        return cls(
            ts=float(obj["ts"]),
            host=str(obj.get("host", "")),
            devices=devices,
            processes=processes,
            processes_ts=float(pts) if isinstance(pts, (int, float)) else None,
            path=path,
            line=line,
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
