"""The role join: supervisor PIDs, environment and command lines, log files, orphans, hidden PIDs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpu_helpers import FakeInspector, proc

from a1x_diagnostics.gpu import ProcInfo, RoleKind, RoleResolver, kind_of_label
from a1x_diagnostics.gpu.roles import ENV_KEYS, PsutilInspector

LAUNCHER = proc(100, 1, "/usr/bin/python", "/usr/bin/cosmos-rl", "--config", "x.toml", "--policy", "1")


def replica_tree(
    inspector: FakeInspector, role: str, shell_pid: int, worker_pid: int, gpus: str, log: str | None = None
) -> None:
    """launcher -> launch_replica.sh --type <role> -> torchrun -> worker (as docs/reference/cosmos-rl.md §2 lays it
    out)."""
    inspector.add(LAUNCHER)
    inspector.add(proc(shell_pid, 100, "bash", "/x/launch_replica.sh", "--type", role, "--ngpus", "1", stdout=log))
    inspector.add(proc(shell_pid + 1, shell_pid, "/usr/bin/python", "/usr/bin/torchrun", "--nproc-per-node=1"))
    env = {"COSMOS_ROLE": role.capitalize(), "CUDA_VISIBLE_DEVICES": gpus, "LOCAL_RANK": "0"}
    inspector.add(proc(worker_pid, shell_pid + 1, "/usr/bin/python", "-m", f"cosmos_rl.{role}.x", env=env))


def test_attached_run_names_replicas_from_their_log_files() -> None:
    insp = FakeInspector()
    replica_tree(insp, "policy", 200, 210, "0,1,2,3", log="/runs/logs_20250101/policy_0.log")
    replica_tree(insp, "rollout", 300, 310, "4", log="/runs/logs_20250101/rollout_0.log")
    join = RoleResolver(inspector=insp).join([210, 310])
    assert join.roles[210].label == "policy_0"
    assert join.roles[210].kind is RoleKind.POLICY
    assert "log file" in join.roles[210].source
    assert join.roles[310].label == "rollout_0"
    assert join.roles[310].cuda_visible_devices == "4"
    assert join.roles[310].local_rank == 0
    assert join.note is None


def test_without_log_files_replicas_are_numbered_by_gpu_order() -> None:
    insp = FakeInspector()
    replica_tree(insp, "rollout", 300, 310, "6")
    replica_tree(insp, "rollout", 400, 410, "5")
    replica_tree(insp, "rollout", 500, 510, "7")
    join = RoleResolver(inspector=insp).join([310, 410, 510])
    assert [join.roles[p].label for p in (410, 310, 510)] == ["rollout_0", "rollout_1", "rollout_2"]
    assert "GPU order" in join.roles[310].source


def test_command_line_alone_is_enough_when_the_environment_is_unreadable() -> None:
    insp = FakeInspector(
        [
            proc(20, 1, "redis-server"),
            proc(30, 10, "python", "-m", "cosmos_rl.dispatcher.run_web_panel", "--port", "8000"),
            proc(10, 5, "bash", "launch_controller.sh"),
            proc(40, 39, "python", "-m", "cosmos_rl.rollout.rollout_entry", "--config", "t.toml"),
            proc(39, 38, "torchrun"),
        ]
    )
    join = RoleResolver(inspector=insp).join([30, 40])
    assert join.roles[30].label == "controller"
    assert join.roles[30].source == "command line"
    assert join.roles[40].kind is RoleKind.ROLLOUT


def test_a_replica_reparented_to_init_is_left_from_a_killed_run() -> None:
    env = {"COSMOS_ROLE": "Rollout", "CUDA_VISIBLE_DEVICES": "0"}
    insp = FakeInspector([proc(77, 1, "python", "-m", "cosmos_rl.rollout.rollout_entry", env=env)])
    role = RoleResolver(inspector=insp).join([77]).roles[77]
    assert role.kind is RoleKind.FOREIGN
    assert not role.kind.part_of_run
    assert role.detail is not None and "parent is PID 1" in role.detail


def test_a_replica_of_another_controller_is_not_part_of_this_run() -> None:
    insp = FakeInspector()
    replica_tree(insp, "rollout", 300, 310, "0")
    insp.infos[310] = proc(
        310, 301, "python", env={"COSMOS_ROLE": "Rollout", "COSMOS_CONTROLLER_HOST": "localhost:8001"}
    )
    role = RoleResolver(inspector=insp, controller_host="localhost:8000").join([310]).roles[310]
    assert role.kind is RoleKind.FOREIGN
    assert role.detail is not None and "localhost:8001" in role.detail


def test_supervised_descendants_belong_and_everything_else_is_foreign() -> None:
    insp = FakeInspector()
    replica_tree(insp, "policy", 200, 210, "0", log="/r/logs/policy_0.log")
    insp.add(proc(900, 1, "python", "-m", "cosmos_rl.rollout.rollout_entry", env={"COSMOS_ROLE": "Rollout"}))
    insp.add(proc(950, 940, "python", "scripts/convert_release_config_to_training.py", "--output-dir", "m"))
    insp.add(proc(940, 1, "a1x-tui-stage"))
    known = {100: "train", 940: "convert"}
    join = RoleResolver(known, inspector=insp).join([210, 900, 950])
    assert join.roles[210].label == "policy_0"  # the launcher is known; the replica's env says which
    assert join.roles[210].source.startswith("supervisor (train)")
    assert join.roles[950].label == "convert"
    assert join.roles[950].kind is RoleKind.STAGE
    assert join.roles[900].kind is RoleKind.FOREIGN
    assert join.roles[900].detail is not None and "did not start" in join.roles[900].detail


def test_supervisor_mapping_is_reread_through_a_callable() -> None:
    insp = FakeInspector([proc(5, 1, "python", "train.py")])
    mapping: dict[int, str] = {}
    resolver = RoleResolver(lambda: mapping, inspector=insp)
    assert resolver.join([5]).roles[5].kind is RoleKind.FOREIGN
    mapping[5] = "policy_0"
    assert resolver.join([5]).roles[5].label == "policy_0"


def test_pids_missing_from_proc_say_pid_namespace() -> None:
    join = RoleResolver(inspector=FakeInspector()).join([4242, 4243])
    assert {r.kind for r in join.roles.values()} == {RoleKind.HIDDEN}
    assert join.hidden == (4242, 4243)
    assert join.note is not None and "PID namespace" in join.note and "4242" in join.note


def test_some_pids_missing_is_reported_without_blaming_all() -> None:
    insp = FakeInspector([proc(5, 1, "python", "x.py")])
    join = RoleResolver(inspector=insp).join([5, 6])
    assert join.note is not None and join.note.startswith("1 GPU process(es) not visible")


def test_proc_reads_are_cached_until_the_pid_is_reused() -> None:
    insp = FakeInspector()
    replica_tree(insp, "rollout", 300, 310, "0")
    resolver = RoleResolver(inspector=insp)
    resolver.join([310])
    first = insp.reads
    resolver.join([310])
    assert insp.reads == first  # cached chain
    # the pid is reused by another process (other start time): read again, not served from cache
    insp.infos[310] = ProcInfo(pid=310, ppid=1, cmdline=("python", "other.py"), environ={}, create_time=99999.0)
    assert resolver.join([310]).roles[310].kind is RoleKind.FOREIGN


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("policy_3", RoleKind.POLICY),
        ("rollout_0", RoleKind.ROLLOUT),
        ("controller", RoleKind.CONTROLLER),
        ("launcher", RoleKind.LAUNCHER),
        ("export", RoleKind.STAGE),
    ],
)
def test_kind_of_label(label: str, kind: RoleKind) -> None:
    assert kind_of_label(label) is kind


def test_real_proc_child_is_joined_and_secrets_are_never_read(tmp_path: Path) -> None:
    """A real child process (no GPU needed): environment, log file index, and no secret kept."""
    log = tmp_path / "logs_1" / "rollout_3.log"
    log.parent.mkdir()
    env = dict(
        os.environ,
        COSMOS_ROLE="Rollout",
        CUDA_VISIBLE_DEVICES="2",
        LOCAL_RANK="1",
        WANDB_API_KEY="sekrit-value",
        HF_TOKEN="hf_sekrit",
    )
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys,time; sys.stdin.read()"], env=env, stdout=out, stdin=subprocess.PIPE
        )
    try:
        info = None
        for _ in range(50):
            info = PsutilInspector().info(child.pid)
            if info is not None and info.environ:
                break
            time.sleep(0.02)
        assert info is not None
        assert set(info.environ) <= set(ENV_KEYS)
        assert "sekrit" not in repr(info)
        role = RoleResolver().join([child.pid]).roles[child.pid]
        assert role.label == "rollout_3"
        assert role.local_rank == 1
        assert role.cuda_visible_devices == "2"
        assert "sekrit" not in repr(role.to_json())
    finally:
        child.kill()
        child.wait()
    # the process is gone: no exception, just not visible
    assert RoleResolver().join([child.pid]).roles[child.pid].kind is RoleKind.HIDDEN
