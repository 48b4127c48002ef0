"""Submissions through Cosmos-RL's own ``dispatch_job.py`` to the single-host Slurm of CI: the job starts.

747d1bd (the recipe's pin): the copy in ``data/cosmos_rl_747d1bd`` (unchanged, Apache-2.0; its README says
why it is kept here). HEAD: ``dispatch_job.py`` and its template from the ``cosmos_rl==0.4.4`` wheel on PyPI
(tag v0.4.4 = the HEAD of docs/reference/cosmos-rl.md §0), fetched with pip and checked against its hash.

There is no pyxis here, so the templates' ``srun --container-image`` steps fail at once: what is tested is
that the batch script itself starts and writes its log where our argv put it (747d1bd's own ``--output``
folder does not exist when the job starts: Slurm would fail it with JobLaunchFailure before any line runs).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from slurm_helpers import DATA, cluster_spec, recipe, slurm_answers

from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.slurm import CosmosRev, SlurmExecutor, prepare_dispatch
from a1x_supervisor.slurm.tracking import cancel_job, query_job
from a1x_supervisor.stagelog import StageLog

_WHY_NOT = slurm_answers()
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=_WHY_NOT or "")

PINNED = DATA / "cosmos_rl_747d1bd"
WHEEL = "cosmos_rl==0.4.4"
WHEEL_SHA256 = "22fbbc59f8a656d6e64cc616812f53e10c5c8f70eae4e37b81f19c5829dd62c1"  # PyPI's file, 2026-07-31
SLURM_FILES = ("dispatch_job.py", "cosmos_rl_job_multi_node.sh", "util.py")


@pytest.fixture(scope="session")
def head_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``cosmos_rl/tools/slurm/`` of the 0.4.4 wheel, laid out as a checkout (``--repo-root-path``)."""
    pytest.importorskip("toml", reason="dispatch_job.py imports toml (the dev extra installs it)")
    where = tmp_path_factory.mktemp("wheel")
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(where), WHEEL],
        capture_output=True, text=True, timeout=300, check=False,
    )
    wheels = list(where.glob("cosmos_rl-0.4.4-*.whl"))
    if got.returncode != 0 or not wheels:
        pytest.skip(f"pip could not fetch {WHEEL} from the package index: {got.stderr.strip()[-300:]}")
    assert hashlib.sha256(wheels[0].read_bytes()).hexdigest() == WHEEL_SHA256
    root = where / "checkout"
    with zipfile.ZipFile(wheels[0]) as whl:
        for name in SLURM_FILES:
            target = root / "cosmos_rl" / "tools" / "slurm" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(whl.read(f"cosmos_rl/tools/slurm/{name}"))
    return root


def _submit(tmp_path: Path, repo: Path, rev: CosmosRev, **fields: object) -> tuple[str, Path, str]:
    """Prepare as the train stage does, submit with SlurmExecutor; returns the job id, output root, stage log."""
    pytest.importorskip("toml", reason="dispatch_job.py imports toml (the dev extra installs it)")
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "rl.toml"
    config.write_text((DATA / "recipe_local.toml").read_text())
    entry = tmp_path / "entry.py"
    entry.write_text("print('entry')\n")
    spec = cluster_spec(
        partition="debug", account="a1x", container="/nonexistent/cosmos.sqsh", output_root=tmp_path / "jobs",
        repo_root=repo, python=sys.executable, request_gpus=False, time="5", job_name=f"a1x_{rev.value}_{os.getpid()}",
        cosmos_rev=rev, **fields,
    )
    (tmp_path / "jobs").mkdir()
    sub = prepare_dispatch(spec, recipe(), config_path=config, launcher=str(entry), n_policy=1, n_rollout=0)
    if sub.log_dir is not None:
        sub.log_dir.mkdir(parents=True)  # what the train stage does before it runs the command
    env = {**os.environ, "HOME": str(home), **sub.env}
    log = StageLog(tmp_path / "stage.log", scrubber=Scrubber([]))
    job = SlurmExecutor(poll_interval_s=0.3).start(sub.argv, cwd=tmp_path, env=env, log=log)
    try:
        ended = job.wait(60)
    finally:
        if job.poll() is None:
            cancel_job(job.job_id)
        job.close()
    assert ended is not None, f"job {job.job_id} did not end: {job.info}"
    return job.job_id, tmp_path / "jobs", (tmp_path / "stage.log").read_text()


def test_the_pinned_dispatch_job_starts_and_logs_where_we_asked(tmp_path: Path) -> None:
    job_id, root, _ = _submit(tmp_path, PINNED, CosmosRev.PINNED, cpus_per_task=1)
    name = f"a1x_747d1bd_{os.getpid()}"
    script_log = root / name / f"slurm_{job_id}.log"
    deadline = time.monotonic() + 10
    while not script_log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    text = script_log.read_text()
    # The template's first line ran (747d1bd's cosmos_rl_job_multi_node.sh:21), and its own folders exist.
    assert f"JOBID {job_id}\n" in text, text
    assert (root / name / job_id / "policy").is_dir()
    assert not (root / job_id).exists()  # the template's own --output folder: never created, never needed
    info = query_job(job_id)
    assert info is not None and info.reason != "JobLaunchFailure", info
    # No pyxis on this cluster: the steps fail at their --container-image option, after the script started.
    assert "container-image" in text


def test_heads_dispatch_job_from_the_wheel_starts_in_its_run_folder(tmp_path: Path, head_checkout: Path) -> None:
    job_id, root, stage_log = _submit(
        tmp_path, head_checkout, CosmosRev.HEAD, retries=0, autoresume=False, mounts=[f"{tmp_path}:{tmp_path}"]
    )
    (run,) = root.glob("a1x_head_*")
    text = (run / "slurm" / f"slurm_{job_id}.log").read_text()
    assert "[cosmos-rl-sbatch]: Job started on" in text, text
    assert (run / "slurm" / "part_0" / "run_0").is_dir()
    assert f"job files in {run / 'slurm'}" in stage_log  # the executor found the run folder it printed
    info = query_job(job_id)
    assert info is not None and info.reason != "JobLaunchFailure", info


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs sbatch")
def test_without_our_output_line_the_pinned_template_never_starts(tmp_path: Path) -> None:
    # The failure point 1 of issue 40 describes, on this Slurm: 747d1bd's own --output folder is missing.
    script = (PINNED / "cosmos_rl" / "tools" / "slurm" / "cosmos_rl_job_multi_node.sh").read_text()
    header = "\n".join(line for line in script.splitlines() if line.startswith(("#!", "#SBATCH")))
    header = (header.replace("[[SLURM_ACCOUNT]]", "a1x").replace("[[SLURM_JOB_NAME]]", "a1x_nolog")
              .replace("[[SLURM_JOB_TIME]]", "5").replace("[[TOTAL_NODES]]", "1")
              .replace("[[SLURM_PARTITION]]", "debug").replace("[[OUTPUT_ROOT_PATH]]", str(tmp_path / "jobs"))
              .replace("[[EXTRA_SBATCH_ARGS]]", ""))
    path = tmp_path / "job.sh"
    path.write_text(header + '\necho "JOBID $SLURM_JOB_ID"\n')
    done = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True, check=True)
    job_id = done.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 30
    info = query_job(job_id)
    while (info is None or not info.terminal) and time.monotonic() < deadline:
        time.sleep(0.3)
        info = query_job(job_id)
    assert info is not None and (info.state, info.reason) == ("FAILED", "JobLaunchFailure"), info
    assert not (tmp_path / "jobs").exists()  # nothing ran: no line of the script, no log
