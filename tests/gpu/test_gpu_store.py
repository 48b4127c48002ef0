"""Samples on disk: round trip with NA, bounded size by rotation, torn lines, tail reads with exact line numbers."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_helpers import GIB, POLICY0, device, snapshot

from a1x_diagnostics.gpu import (
    NA,
    DeviceInfo,
    DeviceSample,
    GpuSnapshot,
    SampleWriter,
    read_log,
    read_run,
    samples_path,
)


def _writer(tmp_path: Path, max_bytes: int = 1 << 20) -> SampleWriter:
    w = SampleWriter(samples_path(tmp_path, "node1"), max_bytes=max_bytes)
    w.write_start(host="node1", driver="580.159.04", devices=[DeviceInfo(index=0, name="NVIDIA H200")], interval_s=1)
    return w


def test_round_trip_keeps_na_and_roles(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    dev = DeviceSample(index=0, memory_total=100, memory_used=40, memory_free=60, power_usage=NA, temperature=NA)
    w.write_sample(GpuSnapshot(ts=1.0, host="node1", devices=(dev,)))
    w.write_sample(snapshot(2.0, [device(used=GIB)], [(0, 123, GIB, POLICY0)]))
    log = read_log(w.path)
    assert log.driver == "580.159.04" and log.host == "node1"
    first, second = log.snapshots
    assert first.devices[0].power_usage is NA and first.devices[0].temperature is NA
    assert first.devices[0].memory_used == 40
    assert first.devices[0].name == "NVIDIA H200"  # from the start line
    assert first.processes is None
    assert second.processes is not None and second.processes[0].role == POLICY0
    assert (second.path, second.line) == (str(w.path), 3)
    assert "null" in w.path.read_text().splitlines()[1]


def test_rotation_bounds_the_files_and_each_file_stands_alone(tmp_path: Path) -> None:
    w = _writer(tmp_path, max_bytes=8192)
    for i in range(400):
        w.write_sample(snapshot(float(i), [device(used=i)]))
    older = w.path.with_name(w.path.name + ".1")
    assert w.rotations > 1
    assert w.path.stat().st_size <= 8192 and older.stat().st_size <= 8192
    assert json.loads(w.path.read_text().splitlines()[0])["kind"] == "start"
    log = read_log(w.path)
    ts = [s.ts for s in log.snapshots]
    assert ts == sorted(ts) and ts[-1] == 399.0
    assert log.snapshots[-1].devices[0].name == "NVIDIA H200"


def test_torn_and_bad_lines_are_counted_not_raised(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    w.write_sample(snapshot(1.0, [device()]))
    with open(w.path, "a") as f:
        f.write("not json\n[1,2]\n")
        f.write('{"v":1,"kind":"sample","ts":')  # the agent is writing this line right now
    log = read_log(w.path)
    assert len(log.snapshots) == 1
    assert log.bad_lines == 3


def test_tail_read_keeps_exact_line_numbers(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    for i in range(300):
        w.write_sample(snapshot(float(i), [device(used=i)]))
    full = read_log(w.path)
    tail = read_log(w.path, tail_bytes=2000)
    assert 0 < len(tail.snapshots) < len(full.snapshots)
    by_ts = {s.ts: s.line for s in full.snapshots}
    assert all(by_ts[s.ts] == s.line for s in tail.snapshots)
    assert tail.snapshots[-1].devices[0].name == "NVIDIA H200"


def test_unavailable_and_stop_events(tmp_path: Path) -> None:
    w = SampleWriter(samples_path(tmp_path, "node2"))
    w.write_event("unavailable", reason="NVML library (libnvidia-ml.so.1) not found")
    logs = read_run(tmp_path)
    assert logs["node2"].unavailable == "NVML library (libnvidia-ml.so.1) not found"
    w2 = _writer(tmp_path)
    w2.write_event("stop")
    assert read_run(tmp_path)["node1"].stopped
    assert read_run(tmp_path / "nope") == {}
