"""GPU monitor: NVML sampled in tiers, GPU processes joined to pipeline roles, GPU findings.

No Textual here, and ``pynvml``/``psutil`` load only when a sampler first runs. Typical use::

    sampler = GpuSampler(resolver=RoleResolver(known_pids), writer=SampleWriter(samples_path(run_dir)))
    sampler.start()                    # returns at once; NVML initialises on the sampler thread
    ...
    report = assess(sampler.history_list(), options=GpuCheckOptions(gpu_memory_utilization=0.8))

``gpu_findings_now()`` is the one-call form for ``--check`` on a node.
"""

from __future__ import annotations

from a1x_diagnostics.gpu.backend import NvmlBackend, NvmlCallError, NvmlUnavailable, PynvmlBackend
from a1x_diagnostics.gpu.detect import (
    CHECK_IDS,
    GpuAssessment,
    GpuCheckOptions,
    assess,
    gpu_findings_now,
    unavailable_assessment,
)
from a1x_diagnostics.gpu.fake import FakeBackend, FakeDevice
from a1x_diagnostics.gpu.na import NA, MaybeInt, NotAvailable
from a1x_diagnostics.gpu.roles import ProcessInspector, ProcInfo, PsutilInspector, RoleJoin, RoleResolver, kind_of_label
from a1x_diagnostics.gpu.sampler import GpuSampler, SamplerState
from a1x_diagnostics.gpu.samples import DeviceInfo, DeviceSample, GpuSnapshot, ProcessRole, ProcessSample, RoleKind
from a1x_diagnostics.gpu.store import SampleLog, SampleWriter, read_log, read_run, samples_path

__all__ = [
    "CHECK_IDS",
    "NA",
    "DeviceInfo",
    "DeviceSample",
    "FakeBackend",
    "FakeDevice",
    "GpuAssessment",
    "GpuCheckOptions",
    "GpuSampler",
    "GpuSnapshot",
    "MaybeInt",
    "NotAvailable",
    "NvmlBackend",
    "NvmlCallError",
    "NvmlUnavailable",
    "ProcInfo",
    "ProcessInspector",
    "ProcessRole",
    "ProcessSample",
    "PsutilInspector",
    "PynvmlBackend",
    "RoleJoin",
    "RoleKind",
    "RoleResolver",
    "SampleLog",
    "SampleWriter",
    "SamplerState",
    "assess",
    "gpu_findings_now",
    "kind_of_label",
    "read_log",
    "read_run",
    "samples_path",
    "unavailable_assessment",
]
