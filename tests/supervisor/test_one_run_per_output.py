"""One live run per spec and output folder (issue 37 point 4): a second start into the folders a live
run writes is refused, naming that run and how to follow or stop it."""

from __future__ import annotations

import time
from pathlib import Path

from supervisor_helpers import World, wait_gone

from a1x_supervisor.claims import Claims, RunClaimed, claimed_by_other
from a1x_supervisor.spec import load_spec


def _runs(world: World) -> list[Path]:
    return sorted(p for p in (world.ws / "runs").iterdir() if p.is_dir()) if (world.ws / "runs").is_dir() else []


def _start(world: World, spec: Path, *more: str) -> str:
    done = world.cli("run", "--spec", str(spec), *more, "--only", "train", "--skip-preflight", "--detach")
    assert done.returncode == 0, done.stdout + done.stderr
    world.wait_state(lambda s: any(x["name"] == "train" and x["status"] == "running" for x in s["stages"]))
    return done.stdout


def test_detach_twice_starts_one_run_and_names_it_to_the_second(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="ignore_term")  # trains, then never ends by itself
    spec = world.write_spec()
    _start(world, spec, "--run-dir", str(world.run_dir))
    run = world.run_dir
    time.sleep(1.0)  # the user starts the same spec again a moment later
    second = world.cli("run", "--spec", str(spec), "--only", "train", "--skip-preflight", "--detach")
    assert second.returncode == 2, second.stdout + second.stderr
    assert f"belongs to the live run {run}" in second.stderr
    assert f"a1x-tui attach {run}" in second.stderr and f"a1x-tui stop {run}" in second.stderr
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    assert _runs(world) == []  # no second run directory was made
    assert world.state()["status"] == "running"
    stopped = world.cli("stop", str(run), timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_a_claim_ends_with_its_run(world: World) -> None:
    # After the first run has ended (here: stopped), the same spec starts again.
    world.make_venv()
    world.configure()
    world.set_modes(train="ignore_term")  # trains, then never ends by itself
    spec = world.write_spec()
    _start(world, spec, "--run-dir", str(world.run_dir))
    pid = world.daemon_pid()
    assert pid is not None
    assert world.cli("stop", str(world.run_dir), timeout=120).returncode == 0
    assert wait_gone(pid)
    again = world.cli("run", "--spec", str(spec), "--only", "train", "--skip-preflight", "--detach")
    assert again.returncode == 0, again.stdout + again.stderr  # a new run of the same spec is not refused
    assert len(_runs(world)) == 1 and "belongs to" not in again.stderr


def test_two_supervisors_starting_at_once_cannot_both_claim(tmp_path: Path, world: World) -> None:
    spec = load_spec(world.write_spec())
    one, two = Claims(spec, tmp_path / "one"), Claims(spec, tmp_path / "two")
    one.acquire()
    try:
        refusal = claimed_by_other(spec)
        assert refusal is not None and str(tmp_path / "one") in str(refusal)
        assert claimed_by_other(spec, tmp_path / "one") is None  # its own run may resume
        try:
            two.acquire()
        except RunClaimed as exc:
            assert "paths.output_dir" in str(exc) and str(tmp_path / "one") in str(exc)
        else:
            raise AssertionError("both claimed the same folders")
    finally:
        one.release()
    two.acquire()  # free again once the first let go
    two.release()
