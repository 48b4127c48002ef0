"""Every stage's command line, flag by flag, against docs/reference/alpamayo-recipe.md and
docs/reference/cosmos-rl.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from supervisor_helpers import World

from a1x_supervisor.pipeline import build_stages, select_stages, stage_names
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import parse_spec
from a1x_supervisor.stage import Command, StageError, StageSpec

CAMERAS = [
    "camera_front_wide_120fov",
    "camera_cross_left_120fov",
    "camera_cross_right_120fov",
    "camera_front_tele_30fov",
]
CALIBRATION = ["camera_intrinsics", "sensor_extrinsics", "vehicle_dimensions"]


def _stages(world: World, **overrides: object) -> dict[str, StageSpec]:
    spec = parse_spec(world.spec_text(**overrides), base=world.root)
    layout = RunDir(world.run_dir)
    return {s.name: s for s in build_stages(spec, layout, {})}


def _one(stage: StageSpec) -> Command:
    commands = list(stage.prepare())
    assert len(commands) == 1
    return commands[0]


def test_convert_command(world: World) -> None:
    cmd = _one(_stages(world, alpamayo_version="1")["convert"])
    # §4 CLI: always --output-dir; --alpamayo-model nvidia/Alpamayo-R1-10B for Alpamayo 1
    assert cmd.argv[1:] == (
        "scripts/convert_release_config_to_training.py",
        "--output-dir",
        str(world.root / "model"),
        "--alpamayo-model",
        "nvidia/Alpamayo-R1-10B",
    )
    assert cmd.argv[0] == str(world.venv / "bin" / "python")
    assert cmd.cwd == world.ws  # run from the repo root
    assert cmd.secrets == ("HF_TOKEN",)
    assert _one(_stages(world)["convert"]).argv[-1] == "nvidia/Alpamayo-1.5-10B"


def test_download_motion_command_passes_several_chunks_as_one_argument(world: World) -> None:
    cmd = _one(_stages(world, chunk_ids=[3116, 3117])["download"])
    assert cmd.argv[1:] == (
        "scripts/download_pai.py",
        "--chunk-ids",
        "3116 3117",  # §5: one string; unquoted ids are 'unrecognized arguments'
        "--camera",
        *CAMERAS,
        "--calibration",
        *CALIBRATION,
        "--labels",
        "egomotion",
        "--output-dir",
        str(world.root / "pai"),
    )
    assert cmd.env["HF_HUB_OFFLINE"] == "0"  # README §5
    assert cmd.secrets == ("HF_TOKEN",)


def test_download_joint_command_always_passes_num_reasoning_clips(world: World) -> None:
    cmd = _one(_stages(world, reward_mode="joint")["download"])
    assert cmd.argv[1:] == (
        "scripts/download_pai.py",
        "--only-reasoning-chunks",
        "--num-reasoning-clips",
        "8",  # §5: the default is None, not 16: without it no mini index is written
        "--camera",
        *CAMERAS,
        "--calibration",
        *CALIBRATION,
        "--labels",
        "egomotion",
        "egomotion.offline",
        "obstacle.offline",
        "--reasoning",
        "ood_reasoning.parquet",
        "--output-dir",
        str(world.root / "reasoning"),
    )
    assert "--chunk-ids" not in cmd.argv


def test_download_without_chunk_ids_is_refused(world: World) -> None:
    from a1x_supervisor.spec import SpecError

    with pytest.raises(SpecError, match="chunk_ids is empty"):
        parse_spec(world.spec_text(chunk_ids=[]), base=world.root)
    # joint mode ignores chunk ids, so an empty list is fine there
    joint = _stages(world, reward_mode="joint", chunk_ids=[])
    assert "--only-reasoning-chunks" in _one(joint["download"]).argv


def test_curate_command(world: World) -> None:
    cmd = _one(_stages(world, chunk_ids=[3116, 3117], num_clips=12)["curate"])
    pai = world.root / "pai"
    assert cmd.argv[1:] == (
        "scripts/curate_pai_samples.py",
        "--clip-index-path",
        str(pai / "clip_index.parquet"),
        "--chunk",
        "3116 3117",
        "--num-samples",
        "12",
        "--output-path",
        str(pai / "clip_index_mini.parquet"),  # §8.1: the motion entry hard-codes this name
    )


def test_grader_command(world: World) -> None:
    cmd = _one(_stages(world, reward_mode="joint")["grader"])
    assert cmd.argv[1:] == ("download", "wayveai/Lingo-Judge", "--local-dir", str(world.root / "judge"))


def test_stage_sets_per_reward_mode(world: World) -> None:
    motion = parse_spec(world.spec_text(), base=world.root)
    joint = parse_spec(world.spec_text(reward_mode="joint"), base=world.root)
    collision = parse_spec(world.spec_text(reward_mode="collision"), base=world.root)
    tail = ["configure", "train", "export", "verify", "evaluate"]
    assert stage_names(motion) == ["env", "convert", "download", "curate", *tail]
    assert stage_names(joint) == stage_names(collision) == ["env", "convert", "download", "grader", *tail]
    assert select_stages(stage_names(motion), from_stage="train", only=None) == tail[1:]
    assert select_stages(stage_names(motion), from_stage="train", only=None, skip=["evaluate"]) == [
        "train", "export", "verify"
    ]
    with pytest.raises(StageError, match="contradict"):
        select_stages(stage_names(motion), from_stage=None, only="evaluate", skip=["evaluate"])
    with pytest.raises(StageError, match="does not apply"):
        select_stages(stage_names(joint), from_stage=None, only="curate")
    with pytest.raises(StageError, match="unknown stage"):
        select_stages(stage_names(joint), from_stage="trian", only=None)


def _configure_record(world: World, entry_arg: str) -> None:
    layout = RunDir(world.run_dir)
    layout.config_dir.mkdir(parents=True)
    record = {"toml": str(layout.train_toml), "entry_arg": entry_arg}
    layout.configure_record.write_text(json.dumps(record))


def test_train_command_and_env_contract_motion(world: World) -> None:
    entry = "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"
    _configure_record(world, entry)
    world.make_venv()
    cmd = _one(_stages(world)["train"])
    assert cmd.argv == (
        str(world.venv / "bin" / "cosmos-rl"),
        "--config",
        str(world.run_dir / "config" / "train.toml"),
        "--policy",
        "1",
        "--rollout",
        "1",
        "--log-dir",
        str(world.run_dir / "logs"),
        entry,
    )
    assert cmd.cwd == world.ws  # §8.2: from the workspace root
    assert cmd.env["ALPAMAYO_PAI_LOCAL_DIR"] == str(world.root / "pai")
    assert "ALPAMAYO_PAI_REASONING_LOCAL_DIR" not in cmd.env
    assert cmd.env["COSMOS_LOG_LEVEL"] == "INFO"  # §3: the entry would default to DEBUG
    assert cmd.env["WANDB_MODE"] == "disabled"
    assert cmd.secrets == ("HF_TOKEN",)


def test_train_env_contract_joint_with_wandb(world: World) -> None:
    _configure_record(world, "/x/entry.py")
    cmd = _one(_stages(world, reward_mode="joint", wandb=True)["train"])
    assert cmd.argv[0] == "cosmos-rl"  # no venv yet: found on PATH
    assert cmd.env["ALPAMAYO_PAI_REASONING_LOCAL_DIR"] == str(world.root / "reasoning")
    assert "ALPAMAYO_PAI_LOCAL_DIR" not in cmd.env
    assert "WANDB_MODE" not in cmd.env
    assert cmd.secrets == ("HF_TOKEN", "WANDB_API_KEY")


def test_train_needs_configure_first(world: World) -> None:
    with pytest.raises(StageError, match="configure"):
        _stages(world)["train"].prepare()


def _checkpoint(root: Path, stamp: str, step: int, ranks: int, *, complete: bool) -> Path:
    path = root / "outputs" / stamp / "checkpoints" / f"step_{step}" / "policy"
    path.mkdir(parents=True)
    (path / "cosmos_config").write_text("{}")
    for r in range(ranks):
        (path / f"model_rank_{r}.pth").write_bytes(b"x")
        if complete or r == 0:
            (path / f".rank_{r}_complete").write_bytes(b"")
    return path


def test_export_command_uses_latest_complete_checkpoint_from_the_log_line(world: World) -> None:
    layout = RunDir(world.run_dir)
    layout.config_dir.mkdir(parents=True)
    layout.train_toml.write_text("[policy.parallelism]\ndp_shard_size = 2\n")
    done50 = _checkpoint(world.root, "20250101000000", 50, 2, complete=True)
    partial60 = _checkpoint(world.root, "20250101000000", 60, 2, complete=False)
    logs = world.run_dir / "logs" / "logs_20250101-000000"
    logs.mkdir(parents=True)
    line = "[rank0]:[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "
    line += "[Policy] Step: {s}, checkpoint saved successfully at {p}."
    (logs / "policy_0.log").write_text(line.format(s=50, p=done50) + "\n" + line.format(s=60, p=partial60) + "\n")
    outputs: dict[str, str] = {}
    spec = parse_spec(world.spec_text(), base=world.root)
    export = {s.name: s for s in build_stages(spec, layout, outputs)}["export"]
    cmd = _one(export)
    # step 60 lacks .rank_1_complete: §12 'complete only when every .rank_<r>_complete marker exists'
    assert cmd.argv[1:] == (
        "scripts/convert_cosmos_rl_checkpoint.py",
        "--cosmos-policy-ckpt",
        str(done50),
        "--base-hf-ckpt",
        str(world.root / "model"),
        "--output-dir",
        str(world.root / "export" / "step_50"),
    )
    assert outputs == {"checkpoint": str(done50), "export_dir": str(world.root / "export" / "step_50")}
    # a non-empty folder is never reused: the next export goes to a fresh one
    (world.root / "export" / "step_50").mkdir(parents=True)
    (world.root / "export" / "step_50" / "stale.safetensors").write_bytes(b"old")
    fresh = Path(_one(export).argv[-1])
    assert fresh.parent == world.root / "export" and fresh.name.startswith("step_50-") and not fresh.exists()


def test_export_without_complete_checkpoint_is_refused(world: World) -> None:
    with pytest.raises(StageError, match="no complete checkpoint"):
        _stages(world)["export"].prepare()


def test_env_stage_commands(world: World) -> None:
    cmds = list(_stages(world)["env"].prepare())
    recipe = world.ws / "recipes" / "alpamayo1_x_rl"
    assert [c.argv for c in cmds[:3]] == [
        ("uv", "venv", "a1x_rl"),
        ("uv", "sync", "--active", "--no-install-package", "flash-attn"),  # §2.1 pass 1
        ("uv", "sync", "--active"),  # pass 2 builds flash-attn against the installed torch
    ]
    assert all(c.cwd == recipe for c in cmds[:3])
    assert cmds[1].env["VIRTUAL_ENV"] == str(world.venv)
    assert cmds[1].path_prepend[0] == str(world.venv / "bin")
    imports = [c.argv[2] for c in cmds[3:]]
    assert imports[0].startswith("import alpamayo_r1, alpamayo, cosmos_rl, vllm")
    assert any("RLWrapperReasoningVLA" in code for code in imports)
    assert any("collect_targets, remap_targets" in code for code in imports)
    world.make_venv()
    assert next(iter(_stages(world)["env"].prepare())).argv[:2] == ("uv", "sync")  # §2.1 'skip if a1x_rl/ exists'
