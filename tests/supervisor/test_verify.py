"""Stage verifications against files the tests write (parquet with pyarrow, checkpoints, exports)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from a1x_supervisor.cosmos_logs import checkpoint_incomplete_reason, latest_complete_checkpoint
from a1x_supervisor.stages.convert import verify_converted
from a1x_supervisor.stages.curate import verify_curated
from a1x_supervisor.stages.download import verify_download_joint, verify_download_motion
from a1x_supervisor.stages.export import verify_export
from a1x_supervisor.stages.train import verify_trained


def _index(path: Path, rows: dict[int, int], *, column: str = "chunk") -> None:
    ids = [f"clip-{c}-{i}" for c, n in rows.items() for i in range(n)]
    chunks = [c for c, n in rows.items() for _ in range(n)]
    pq.write_table(pa.table({"clip_id": ids, column: chunks}), path)


def test_curate_row_count_is_min_of_n_and_available(tmp_path: Path) -> None:
    _index(tmp_path / "clip_index.parquet", {3116: 10, 3117: 30})
    mini = tmp_path / "clip_index_mini.parquet"
    _index(mini, {3116: 10})
    assert verify_curated(tmp_path, chunk_ids=[3116], num_clips=16).ok  # 10 available < 16 asked
    result = verify_curated(tmp_path, chunk_ids=[3116], num_clips=8)
    assert not result.ok and "10 rows, expected min(8, 10) = 8" in result.reason
    _index(mini, {3116: 8})
    assert verify_curated(tmp_path, chunk_ids=[3116], num_clips=8).ok


def test_curate_needs_the_chunk_column_and_only_downloaded_chunks(tmp_path: Path) -> None:
    _index(tmp_path / "clip_index.parquet", {3116: 10, 3117: 30})
    mini = tmp_path / "clip_index_mini.parquet"
    _index(mini, {3116: 4}, column="chunk_id")
    result = verify_curated(tmp_path, chunk_ids=[3116], num_clips=4)
    assert not result.ok and "no 'chunk' column" in result.reason
    _index(mini, {3116: 2, 3117: 2})
    result = verify_curated(tmp_path, chunk_ids=[3116], num_clips=4)
    assert not result.ok and "chunk 3117" in result.reason


def test_curate_reads_a_chunk_id_source_column(tmp_path: Path) -> None:
    # §6: the script filters on 'chunk_id' when the index has it
    _index(tmp_path / "clip_index.parquet", {3116: 3}, column="chunk_id")
    _index(tmp_path / "clip_index_mini.parquet", {3116: 3})
    assert verify_curated(tmp_path, chunk_ids=[3116], num_clips=16).ok
    assert not verify_curated(tmp_path, chunk_ids=[9999], num_clips=16).ok


def _motion_download(root: Path, chunks: list[int]) -> None:
    (root / "metadata").mkdir(parents=True)
    (root / "features.csv").write_text("x\n")
    (root / "metadata" / "feature_presence.parquet").write_bytes(b"x")
    _index(root / "clip_index.parquet", {c: 3 for c in chunks})
    for component, sub in (("camera", "cam_a"), ("calibration", "cal_a"), ("labels", "egomotion")):
        for c in chunks:
            (root / component / sub).mkdir(parents=True, exist_ok=True)
            (root / component / sub / f"{sub}.chunk_{c:04d}.zip").write_bytes(b"z")


def test_download_that_fetched_nothing_fails_and_says_why(tmp_path: Path) -> None:
    kwargs = dict(chunk_ids=[3116], cameras=["cam_a"], calibration=["cal_a"], labels=["egomotion"])
    log = "2025-01-01T00:00:00.000+00:00 Returning existing local_dir `x` as remote repo cannot be accessed"
    result = verify_download_motion(tmp_path, stage_log_text=log, **kwargs)  # type: ignore[arg-type]
    assert not result.ok
    assert "features.csv is missing" in result.reason and "Returning existing local_dir" in result.reason
    _motion_download(tmp_path, [3116])
    assert verify_download_motion(tmp_path, **kwargs).ok  # type: ignore[arg-type]
    (tmp_path / "labels" / "egomotion" / "egomotion.chunk_3116.zip").unlink()
    result = verify_download_motion(tmp_path, **kwargs)  # type: ignore[arg-type]
    assert not result.ok and "labels/egomotion/egomotion.chunk_3116.*" in result.reason


def test_joint_download_checks_the_mini_index(tmp_path: Path) -> None:
    _motion_download(tmp_path, [3116])
    (tmp_path / "reasoning").mkdir()
    (tmp_path / "reasoning" / "ood_reasoning.parquet").write_bytes(b"x")
    kwargs = dict(cameras=["cam_a"], calibration=["cal_a"], labels=["egomotion"])
    result = verify_download_joint(tmp_path, num_reasoning_clips=4, **kwargs)  # type: ignore[arg-type]
    assert not result.ok and "clip_index_reasoning_mini.parquet is missing" in result.reason
    _index(tmp_path / "clip_index_reasoning_mini.parquet", {3116: 4})
    assert verify_download_joint(tmp_path, num_reasoning_clips=4, **kwargs).ok  # type: ignore[arg-type]
    _index(tmp_path / "clip_index_reasoning_mini.parquet", {3116: 2, 3117: 2})
    result = verify_download_joint(tmp_path, num_reasoning_clips=4, **kwargs)  # type: ignore[arg-type]
    assert not result.ok and "chunk_3117" in result.reason


def _converted(model: Path, blob: Path) -> None:
    model.mkdir()
    blob.write_bytes(b"w")
    (model / "model-00001-of-00001.safetensors").symlink_to(blob)
    index = {"weight_map": {"a": "model-00001-of-00001.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    config = {
        "model_type": "alpamayo_reasoning_vla",
        "architectures": ["ReasoningVLA"],
        "x": {"_target_": "alpamayo_r1.a"},
    }
    (model / "config.json").write_text(json.dumps(config))
    for name in ("preprocessor_config.json", "generation_config.json", "tokenizer.json"):
        (model / name).write_text("{}")


def test_converted_model_with_dangling_symlink_fails(tmp_path: Path) -> None:
    model, blob = tmp_path / "model", tmp_path / "blob"
    _converted(model, blob)
    assert verify_converted(model).ok
    blob.unlink()  # §4: deleting the HF cache breaks the converted dir
    result = verify_converted(model)
    assert not result.ok and "dangling symlink" in result.reason


def test_converted_model_of_another_version_fails(tmp_path: Path) -> None:
    model = tmp_path / "model"
    _converted(model, tmp_path / "blob")
    (model / ".a1x-tui-convert.json").write_text(json.dumps({"alpamayo_model": "nvidia/Alpamayo-1.5-10B"}))
    assert verify_converted(model, alpamayo_model="nvidia/Alpamayo-1.5-10B").ok
    result = verify_converted(model, alpamayo_model="nvidia/Alpamayo-R1-10B")
    assert not result.ok and "converted from nvidia/Alpamayo-1.5-10B" in result.reason
    config = json.loads((model / "config.json").read_text())
    config["x"]["_target_"] = "alpamayo1_5.diffusion.x"
    (model / "config.json").write_text(json.dumps(config))
    assert "was not remapped" in verify_converted(model).reason


def _ckpt(root: Path, step: int, ranks: int, done: int) -> Path:
    path = root / "out" / "20250101000000" / "checkpoints" / f"step_{step}" / "policy"
    path.mkdir(parents=True)
    (path / "cosmos_config").write_text("{}")
    for r in range(ranks):
        (path / f"model_rank_{r}.pth").write_bytes(b"x")
    for r in range(done):
        (path / f".rank_{r}_complete").write_bytes(b"")
    return path


def _logs(log_dir: Path, steps: list[str], saved: list[tuple[int, Path]]) -> Path:
    logs = log_dir / "logs_20250101-000000"
    logs.mkdir(parents=True)
    prefix = "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "
    (logs / "controller.log").write_text("".join(f"{prefix}Step: {s}, Reward Mean: 0.1\n" for s in steps))
    text = "".join(f"[rank0]:{prefix}[Policy] Step: {n}, checkpoint saved successfully at {p}.\n" for n, p in saved)
    (logs / "policy_0.log").write_text(text)
    return logs


def test_train_success_needs_last_step_and_a_complete_checkpoint(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    ckpt = _ckpt(tmp_path, 4, 2, done=1)
    logs = _logs(log_dir, ["1/4", "2/4", "3/4", "4/4"], [(4, ckpt)])
    result = verify_trained(log_dir, ranks=2)
    assert not result.ok and ".rank_1_complete" in result.reason
    (ckpt / ".rank_1_complete").write_bytes(b"")
    assert verify_trained(log_dir, ranks=2).ok
    assert checkpoint_incomplete_reason(ckpt, 4) is not None  # rank 2 and 3 never saved
    found = latest_complete_checkpoint(log_dir, 2)
    assert found is not None and found.step == 4 and found.path == ckpt
    (logs / "controller.log").write_text(
        "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - Step: 2/4, Reward Mean: 0\n"
    )
    result = verify_trained(log_dir, ranks=2)
    assert not result.ok and "stopped at step 2/4" in result.reason


def _export(folder: Path, ckpt: Path, ranks: list[int]) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "alpamayo_reasoning_vla"}))
    for name in ("preprocessor_config.json", "tokenizer.json"):
        (folder / name).write_text("{}")
    (folder / "model-00001.safetensors").write_bytes(b"t")
    index = {"weight_map": {"a": "model-00001.safetensors", "b": "model-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    provenance = {"cosmos_policy_ckpt": str(ckpt), "ranks": ranks, "num_keys": 2}
    (folder / "cosmos_export_provenance.json").write_text(json.dumps(provenance))


def test_export_verification(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    out = tmp_path / "export"
    _export(out, ckpt, [0, 1, 2, 3])
    result = verify_export(out, checkpoint=ckpt, ranks=4)
    assert not result.ok and "model-00002.safetensors is missing" in result.reason
    (out / "model-00002.safetensors").write_bytes(b"t")
    assert verify_export(out, checkpoint=ckpt, ranks=4).ok
    result = verify_export(out, checkpoint=ckpt, ranks=8)
    assert not result.ok and "provenance ranks" in result.reason
    assert not verify_export(out, checkpoint=tmp_path / "other", ranks=4).ok


def test_without_pyarrow_the_parquet_checks_say_which_extra_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow is the ``data`` extra, not the core install: the checks that read parquet name it."""
    _index(tmp_path / "clip_index.parquet", {3116: 10})
    _index(tmp_path / "clip_index_mini.parquet", {3116: 10})
    _motion_download(tmp_path, [3116])
    (tmp_path / "reasoning").mkdir()
    (tmp_path / "reasoning" / "ood_reasoning.parquet").write_bytes(b"x")
    _index(tmp_path / "clip_index_reasoning_mini.parquet", {3116: 4})
    kwargs = dict(cameras=["cam_a"], calibration=["cal_a"], labels=["egomotion"])
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow: ImportError, as where it is not installed
    for result in (
        verify_curated(tmp_path, chunk_ids=[3116], num_clips=16),
        verify_download_joint(tmp_path, num_reasoning_clips=4, **kwargs),  # type: ignore[arg-type]
    ):
        assert not result.ok
        assert "\n" not in result.reason and "pyarrow is not installed (pip install 'a1x-tui[data]')" in result.reason
