"""End to end: `a1x-tui run` starts a detached supervisor that runs the stages (stand-ins), and
`status`, `stop`, `restart` talk to it. Real processes, real signals."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import stat
import time
from pathlib import Path

import psutil
import pytest
from supervisor_helpers import HF_SECRET, World, fake_processes, wait_gone

pytestmark = pytest.mark.slow  # whole supervised runs in subprocesses (5-16 s each on the shared 2-core VM)

MOTION_ENTRY = "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"


def _statuses(state: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {s["name"]: s["status"] for s in state["stages"]}


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix != ".sock"]


def _train_running(state: dict) -> bool:  # type: ignore[type-arg]
    train = next(s for s in state["stages"] if s["name"] == "train")
    return train["status"] == "running" and bool(train.get("process"))


def test_full_run_resume_and_restart(world: World) -> None:
    spec = world.write_spec(live_diagnostics=True)
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run succeeded" in done.stdout
    state = world.state()
    assert state["status"] == "succeeded"
    assert set(_statuses(state).values()) == {"succeeded"}
    # evaluate: the stand-in models of the fake venv (eval_standins/) on the curated clips
    evaluated = world.stage("evaluate")["reason"]
    assert evaluated == "minADE 0.250 m trained vs 0.250 m base over 4 clip(s) (+0.0%)"
    assert state["outputs"]["evaluation"] == str(world.run_dir / "evaluate" / "evaluation.json")
    assert wait_gone(state["supervisor"]["pid"])  # the daemon ends with its run and cleans up
    assert not (world.run_dir / "supervisor.sock").exists() and not (world.run_dir / "supervisor.pid").exists()

    progs = [c["prog"] for c in world.calls()]
    assert progs == ["uv", "uv", "uv", "convert", "download", "curate", "cosmos-rl", "export"]
    train = world.calls("cosmos-rl")[0]
    assert train["argv"][-1] == MOTION_ENTRY and train["cwd"] == str(world.ws)
    assert train["env"]["ALPAMAYO_PAI_LOCAL_DIR"] == str(world.root / "pai")
    assert train["env"]["COSMOS_LOG_LEVEL"] == "INFO" and train["env"]["WANDB_MODE"] == "disabled"
    tokens = {c["prog"]: c["has_hf_token"] for c in world.calls()}
    assert tokens == {
        "uv": False,
        "convert": True,
        "download": True,
        "curate": False,
        "cosmos-rl": True,
        "export": False,
    }

    # secrets are never written: not in run.toml, state.json, events.jsonl, stage logs, supervisor.log
    assert (world.run_dir / "stages" / "train.log").read_text().count("HF_TOKEN=[redacted]") == 1
    for path in _files_under(world.run_dir):
        assert HF_SECRET not in path.read_text(errors="replace"), path
    events = [json.loads(line) for line in (world.run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["kind"] == "run_succeeded"
    live = [e["message"] for e in events if "live diagnostics" in e["message"]]
    assert any(m.startswith("live diagnostics follow ") for m in live), live  # the engine followed the run
    assert not [m for m in live if "fail" in m or "unavailable" in m or "error" in m]  # and did not fail

    # no supervisor answers now: status reads state.json and says so
    status = world.cli("status", str(world.run_dir))
    assert status.returncode == 0 and "no supervisor answers" in status.stdout and "SUCCEEDED" in status.stdout

    # resume: everything verifies, nothing runs again
    again = world.cli("run", "--run-dir", str(world.run_dir), "--skip-preflight")
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = world.state()
    by_name = {s["name"]: s for s in resumed["stages"]}
    assert all(s["status"] == "skipped" and s["reason"].startswith("already done")
               for name, s in by_name.items() if name != "verify")
    assert by_name["verify"]["status"] == "succeeded"  # verify always checks
    assert by_name["evaluate"]["reason"] == "already done: " + evaluated  # the same export: not evaluated again
    assert [c["prog"] for c in world.calls()] == progs

    # restart with no supervisor running: a new one runs export again, into a fresh folder
    assert wait_gone(resumed["supervisor"]["pid"])
    restart = world.cli("restart", str(world.run_dir), "--stage", "export")
    assert restart.returncode == 0 and "no supervisor was running" in restart.stdout, restart.stderr
    final = world.wait_final()
    assert final["status"] == "succeeded", final["message"]
    exports = world.calls("export")
    assert len(exports) == 2 and exports[1]["argv"][-1] != exports[0]["argv"][-1]
    assert Path(exports[1]["argv"][-1]).name.startswith("step_4-")


def test_joint_alpamayo1_runs_a_switched_copy_of_the_entry(world: World) -> None:
    spec = world.write_spec(reward_mode="joint", alpamayo_version="1")
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(_statuses(world.state())) == [
        "env", "convert", "download", "grader", "configure", "train", "export", "verify", "evaluate"
    ]  # fmt: skip
    assert world.calls("hf")[0]["argv"] == ["download", "wayveai/Lingo-Judge", "--local-dir", str(world.root / "judge")]
    train = world.calls("cosmos-rl")[0]
    copy = world.run_dir / "config" / "alpamayo_cosmos_rl_post_training_reasoning_entry.py"
    assert train["argv"][-1] == str(copy)
    assert '"alpamayo1_rvla_rl_pai"' in copy.read_text()
    original = world.ws / "recipes/alpamayo1_x_rl/models/reasoning_vla" / copy.name
    assert '"alpamayo1_5_rvla_rl_pai"' in original.read_text()  # the user's checkout is never edited
    assert train["env"]["ALPAMAYO_PAI_REASONING_LOCAL_DIR"] == str(world.root / "reasoning")
    assert train["env"]["ALPAMAYO_PAI_LOCAL_DIR"] is None
    assert world.calls("convert")[0]["argv"][-1] == "nvidia/Alpamayo-R1-10B"


def test_a_download_that_fetched_nothing_fails_the_run(world: World) -> None:
    world.set_modes(download="empty")
    spec = world.write_spec()
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--skip-preflight")
    assert done.returncode == 1
    state = world.state()
    assert state["status"] == "failed"
    download = world.stage("download")
    assert download["status"] == "failed" and download["exit_code"] == 0
    assert "exited 0 but its outputs do not verify" in download["reason"]
    assert "Returning existing local_dir" in download["reason"]
    assert _statuses(state)["curate"] == "pending" and not world.calls("curate")
    log = (world.run_dir / "stages" / "download.log").read_text().splitlines()
    assert log[-1].endswith(f"[a1x-tui] stage failed: {download['reason']}")  # the log says why, at its end


def test_rate_limit_is_retried_and_a_gated_repo_stops_with_the_fix(world: World) -> None:
    world.make_venv()
    world.set_modes(download="429_once", convert="gated")
    spec = world.write_spec()
    done = world.cli(
        "run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--only", "download", "--skip-preflight"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert world.stage("download")["status"] == "succeeded" and world.stage("download")["attempts"] == 2
    kinds = [json.loads(x)["kind"] for x in (world.run_dir / "events.jsonl").read_text().splitlines()]
    assert "stage_retry" in kinds

    gated = world.cli("run", "--run-dir", str(world.run_dir), "--only", "convert", "--skip-preflight")
    assert gated.returncode == 1
    reason = world.stage("convert")["reason"]
    assert "\n" not in reason and "gated repo nvidia/Alpamayo-1.5-10B" in reason
    assert "https://huggingface.co/nvidia/Alpamayo-1.5-10B" in reason and "hf auth login" in reason
    assert f"a1x-tui restart {world.run_dir} --stage convert" in reason
    assert len(world.calls("convert")) == 1  # a gated repo is not retried


def test_launcher_success_without_the_last_step_is_a_failure(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="crash_success")
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert done.returncode == 1
    train = world.stage("train")
    assert train["status"] == "failed" and train["exit_code"] == 0
    assert "training stopped at step 2/4" in train["reason"]


def test_a_dead_replica_stops_the_whole_stage(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="replica_dies")
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert done.returncode == 1
    train = world.stage("train")
    assert train["status"] == "failed"
    assert "Process 2 failed with return code 1" in train["reason"]  # the launcher would keep waiting
    assert "rollout_0.log: exitcode  : -9" in train["reason"]  # which replica, and why
    assert train["failure"]["launcher_line"] == "Process 2 failed with return code 1"
    assert fake_processes(world.root) == []  # the launcher and its other children are gone too


def test_a_job_that_does_not_exit_after_training_is_ended(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="hang_after_finish")
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert done.returncode == 0, done.stdout
    train = world.stage("train")
    assert train["status"] == "succeeded"
    assert "did not exit within 1s: ending it" in train["reason"]
    assert fake_processes(world.root) == []


def _start_detached(world: World, mode: str) -> list[int]:
    world.make_venv()
    world.configure()
    world.set_modes(train=mode)
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight", "--detach")
    assert done.returncode == 0, done.stdout + done.stderr
    # wait for a step: the stand-in has printed all it prints (a launcher writing to the pipe of a
    # killed supervisor dies of SIGPIPE, which would make the crash tests below test something else)
    world.wait_state(
        lambda s: _train_running(s) and bool(next(x for x in s["stages"] if x["name"] == "train")["progress"])
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        procs = fake_processes(world.root)
        if len(procs) >= (3 if mode == "spawn" else 1):
            return [p.pid for p in procs]
        time.sleep(0.05)
    raise AssertionError("the stand-in launcher did not start")


def test_stop_ends_a_stage_that_ignores_sigterm(world: World) -> None:
    pids = _start_detached(world, "ignore_term")
    assert stat.S_IMODE(os.stat(world.run_dir / "supervisor.sock").st_mode) == 0o600  # owner only
    status = world.cli("status", str(world.run_dir), "--json")
    live = json.loads(status.stdout)
    assert live["live"] is True and live["status"] == "running" and live["current_stage"] == "train"
    done = world.cli("stop", str(world.run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no process of the run is left" in done.stdout
    assert all(wait_gone(pid, 5) for pid in pids)
    log = (world.run_dir / "stages" / "train.log").read_text()
    assert "SIGKILL to 1 still alive after the grace period" in log
    state = world.wait_final()
    assert state["status"] == "stopped" and world.stage("train")["status"] == "stopped"


def test_stop_leaves_no_process_behind_even_outside_the_group(world: World) -> None:
    pids = _start_detached(world, "spawn")  # the launcher, a child in its group, one in its own session
    assert len(pids) == 3
    done = world.cli("stop", str(world.run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(wait_gone(pid, 5) for pid in pids)
    assert fake_processes(world.root) == []


def test_killing_the_client_does_not_stop_the_run(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="slow")
    client = world.popen("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    world.wait_state(_train_running)
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=10)
    state = world.wait_final()
    assert state["status"] == "succeeded", state["message"]
    assert world.stage("train")["reason"].startswith("step 4/4")


def test_sighup_only_detaches_the_client(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="slow")
    client = world.popen("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert client.stdout is not None
    seen = ""
    while "attached to" not in seen:  # the client follows the run (its signal handlers are set)
        line = client.stdout.readline()
        assert line, seen
        seen += line
    world.wait_state(_train_running)
    client.send_signal(signal.SIGHUP)  # the SSH session dropped
    out, _ = client.communicate(timeout=10)
    assert client.returncode == 0 and "detached; the run goes on" in out
    assert world.wait_final()["status"] == "succeeded"


def test_restart_a_running_stage(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="slow", steps=6)
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight", "--detach")
    assert done.returncode == 0
    world.wait_state(_train_running)
    restart = world.cli("restart", str(world.run_dir), "--stage", "train")
    assert restart.returncode == 0 and "restarting train" in restart.stdout
    state = world.wait_final()
    assert state["status"] == "succeeded"
    assert world.stage("train")["attempts"] == 2 and len(world.calls("cosmos-rl")) == 2
    first_launcher = world.calls("cosmos-rl")[0]["pid"]
    assert not psutil.pid_exists(first_launcher) or wait_gone(first_launcher, 5)


def test_a_crashed_supervisor_is_reported_honestly_then_resumed(world: World) -> None:
    pids = _start_detached(world, "ignore_term")
    daemon = world.daemon_pid()
    assert daemon is not None
    os.kill(daemon, signal.SIGKILL)  # kill -9 the supervisor
    assert wait_gone(daemon)
    assert all(psutil.pid_exists(pid) for pid in pids)  # its stage lives on, in its own session

    status = world.cli("status", str(world.run_dir))
    assert "no supervisor answers" in status.stdout and "RUNNING" in status.stdout
    assert "still running: stage train" in status.stdout, status.stdout + json.dumps(world.state(), indent=1)

    # a new supervisor finds the run and says what it does not control; it starts nothing
    resumed = world.cli("run", "--run-dir", str(world.run_dir), "--skip-preflight")
    assert resumed.returncode == 1
    state = world.wait_final()
    assert state["status"] == "blocked"
    reason = world.stage("train")["reason"]
    assert world.stage("train")["status"] == "orphaned"
    assert reason.startswith(f"orphaned: pid {pids[0]} still running") or "still running" in reason
    assert len(world.calls("cosmos-rl")) == 1

    # stop with no supervisor: the recorded process group is ended
    stop = world.cli("stop", str(world.run_dir))
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert all(wait_gone(pid, 5) for pid in pids)

    # and now the run resumes: train runs again, the rest follows
    world.set_modes(train="ok")
    again = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert again.returncode == 0, again.stdout + again.stderr
    assert world.stage("train")["status"] == "succeeded" and world.state()["orphans"] == []
    assert len(world.calls("cosmos-rl")) == 2


def test_a_crashed_supervisor_whose_stage_died_too(world: World) -> None:
    pids = _start_detached(world, "ignore_term")
    daemon = world.daemon_pid()
    assert daemon is not None
    os.kill(daemon, signal.SIGKILL)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert wait_gone(daemon) and all(wait_gone(pid) for pid in pids)
    world.set_modes(train="ok")
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(x) for x in (world.run_dir / "events.jsonl").read_text().splitlines()]
    orphaned = [e for e in events if e["kind"] == "stage_orphaned"]
    assert orphaned and orphaned[0]["message"] == f"orphaned: pid {pids[0]} gone"
    assert any(e["kind"] == "supervisor_recovered" for e in events)
    assert world.stage("train")["status"] == "succeeded"


def test_foreground_run_prints_events_and_ctrl_c_stops_it(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="slow", steps=40)
    client = world.popen("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight", "--foreground")
    world.wait_state(_train_running)
    client.send_signal(signal.SIGINT)
    out, _ = client.communicate(timeout=30)
    assert client.returncode == 1
    assert "[train] stage_started: GRPO training (cosmos-rl)" in out and "run_stopped" in out
    assert world.state()["status"] == "stopped" and world.stage("train")["status"] == "stopped"
    assert fake_processes(world.root) == []


def test_a_new_run_gets_a_private_folder_under_the_workspace(world: World) -> None:
    spec = world.write_spec()
    done = world.cli("run", "--spec", str(spec), "--only", "configure", "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (world.ws / "runs").iterdir()
    assert run_dir.name.endswith("-motion") and stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    from a1x_diagnostics.parsing import discover

    layout = discover(run_dir)  # run.toml beside logs/: a run of ours, its stage logs read with it
    assert layout.kind == "run_dir" and any(src.path == "stages/configure.log" for _, src in layout.files)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "succeeded"
    assert state["plan"] == {"from": None, "only": "configure", "force": [], "skip": []}
    skipped = {s["name"]: s["reason"] for s in state["stages"] if s["status"] == "skipped"}
    assert skipped["train"] == "not selected (--from/--only)" and len(skipped) == 8
    toml = (run_dir / "config" / "train.toml").read_text()
    assert f'model_name_or_path = "{world.root / "model"}"' in toml
    assert str(run_dir) in done.stdout
    missing = world.write_spec()
    missing.write_text(missing.read_text().replace(str(world.ws), str(world.root / "nope")))
    refused = world.cli("run", "--spec", str(missing), "--skip-preflight")
    assert refused.returncode == 2 and "does not exist" in refused.stderr
    assert not (world.root / "nope").exists()


def test_an_existing_run_dir_readable_by_others_is_made_private(world: World) -> None:
    world.run_dir.mkdir(mode=0o755)
    world.run_dir.chmod(0o755)  # what mkdir -p under a umask of 022 leaves
    spec = world.write_spec()
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--only", "configure",
                     "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    assert stat.S_IMODE(world.run_dir.stat().st_mode) == 0o700


def test_a_run_dir_that_cannot_be_made_private_is_refused(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from a1x_supervisor.daemon import Plan, Supervisor
    from a1x_supervisor.rundir import RunDirError, make_private

    world.run_dir.mkdir()
    world.run_dir.chmod(0o755)

    def refuse(path: object, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refuse)  # as for a directory of another user
    with pytest.raises(RunDirError) as info:
        make_private(world.run_dir)
    assert str(info.value) == (
        f"{world.run_dir}: mode 0755, readable by others, and it cannot be made 0700 (Operation not permitted): "
        "a run directory must be private; use one of your own"
    )
    with pytest.raises(RunDirError):
        Supervisor(world.run_dir, Plan(), install_signals=False).serve()
    assert sorted(p.name for p in world.run_dir.iterdir()) == []  # refused before anything was written


# Where the daemon dies during `stop`: drawn once from a seeded generator, so a failure can be re-run.
# The stage ignores SIGTERM, so the daemon's stop spans its grace period (1 s) and then SIGKILL.
_KILL_AFTER_S = [round(random.Random(17 + i).uniform(0.0, 1.6), 2) for i in range(3)]


@pytest.mark.parametrize("kill_after", _KILL_AFTER_S, ids=[f"kill-after-{d}s" for d in _KILL_AFTER_S])
def test_a_daemon_killed_during_stop_leaves_a_stopped_run_on_disk(world: World, kill_after: float) -> None:
    pids = _start_detached(world, "ignore_term")
    daemon = world.daemon_pid()
    assert daemon is not None
    stop = world.popen("stop", str(world.run_dir))
    time.sleep(kill_after)
    with contextlib.suppress(ProcessLookupError):
        os.kill(daemon, signal.SIGKILL)
    out, _ = stop.communicate(timeout=60)
    assert stop.returncode == 0, out
    assert f"pid {daemon}" not in out and "kill " not in out, out  # never a dead pid to kill
    assert all(wait_gone(pid, 5) for pid in pids) and fake_processes(world.root) == []

    # state.json and status: a stopped run, no stage left running
    assert wait_gone(daemon)
    state = world.state()
    assert state["status"] == "stopped", state["message"]
    active = {s["name"]: s["status"] for s in state["stages"] if s["status"] in ("running", "checking", "retrying")}
    assert active == {}
    train = world.stage("train")
    assert train["status"] == "stopped" and train["process"] is None, train
    status = world.cli("status", str(world.run_dir))
    assert "STOPPED" in status.stdout.upper() and "still running" not in status.stdout, status.stdout
    assert "stage train" not in status.stdout or "running" not in status.stdout.split("stage train", 1)[1][:40]
    again = world.cli("stop", str(world.run_dir))  # and a second stop has nothing left to do
    assert again.returncode == 0 and "nothing to stop" in again.stdout, again.stdout + again.stderr


def test_stop_without_a_daemon_marks_the_stage_it_ends_stopped(world: World) -> None:
    pids = _start_detached(world, "ignore_term")
    daemon = world.daemon_pid()
    assert daemon is not None
    os.kill(daemon, signal.SIGKILL)
    assert wait_gone(daemon)
    done = world.cli("stop", str(world.run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stage train: 1 process(es) of pid group" in done.stdout
    assert all(wait_gone(pid, 5) for pid in pids)
    train = world.stage("train")
    assert train["status"] == "stopped" and train["process"] is None and train["ended_at"]
    assert train["reason"].startswith("stopped by `a1x-tui stop` (its supervisor was gone)")
    events = [json.loads(x) for x in (world.run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events[-2:]] == ["stage_stopped", "run_stopped"]
    assert json.loads(world.cli("status", str(world.run_dir), "--json").stdout)["status"] == "stopped"
