"""The ``train`` stage of a cluster run (``a1x_supervisor.stages.train``): the Slurm submission, prepared
and checked on this node, and the link to where a cosmos-dispatch job writes its logs.

With ``compute = "cluster"`` the train stage's one command is the submission (docs/slurm.md):
``sbatch --parsable <run>/slurm/sbatch_script.sh`` (``method = "sbatch"``) or Cosmos-RL's
``python dispatch_job.py ...`` (``method = "cosmos-dispatch"``, docs/reference/cosmos-rl.md §11.1), run through
``SlurmExecutor``. Before anything reaches Slurm the node and GPU arithmetic is planned and the
multi-node rules are checked (``a1x_supervisor.slurm.submit``; docs/reference/alpamayo-recipe.md §8.5:
``data_dispatch_as_rank_in_mesh = true`` is mandatory, the prefetch capacity must cover a node's
replicas): a refusal is a ``StageError`` carrying the findings, warnings travel with the command.
The other stages run on this node as for a local run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a1x_diagnostics.findings import Finding
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.secrets import read_secret
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stage import Command, StageError

if TYPE_CHECKING:
    from a1x_supervisor.slurm.container import NeededPath
    from a1x_supervisor.slurm.spec import ClusterSpec


def _finding_json(finding: Finding) -> dict[str, Any]:
    return finding.model_dump(mode="json")


def _as_path(value: Any) -> Path | None:
    """A TOML path value; a Hub id (``org/name``) is not a path (it is read through the HF cache)."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith(("/", "./", "../", "~")):
        return Path(value).expanduser() if value.startswith("~") else Path(value)
    return None


def dispatch_needed_paths(
    cluster: ClusterSpec,
    *,
    entry: Path,
    model: Any,
    output_dir: Any,
    grader: Any,
    data_var: str,
    data_dir: Any,
    environ: Mapping[str, str],
    workspace: Path | None = None,
) -> list[NeededPath]:
    """The host paths a cosmos-dispatch job's processes open in their containers (docs/slurm.md):
    each must be mounted at the same path (``a1x_supervisor.slurm.container``). A relative
    ``model_name_or_path`` that names a folder of ``workspace`` is a path given wrongly (the job starts in
    the cosmos_rl package folder, where it is read as a Hub id); one that does not is a Hub id."""
    from a1x_supervisor.slurm.container import NeededPath, hf_hub_cache, model_link_targets
    from a1x_supervisor.slurm.plan import CosmosRev

    def local(value: Any) -> Path | None:
        return Path(value).expanduser() if isinstance(value, (str, Path)) and str(value) else None

    needed = [NeededPath("the entry script", entry, is_file=True)]
    model_path = _as_path(model)
    if model_path is None and isinstance(model, str) and model and workspace and (workspace / model).exists():
        model_path = Path(model)  # relative: flagged as such by ``unmounted``
    if model_path is not None:
        key = "policy.model_name_or_path"
        needed.append(NeededPath(f"{key} (the converted model)", model_path, key))
        needed += [
            NeededPath("the converted model's weights (links into the Hugging Face cache)", target)
            for target in model_link_targets(model_path)
        ]
    out = local(output_dir)
    if cluster.cosmos_rev is CosmosRev.PINNED and out is not None:
        needed.append(NeededPath("train.output_dir (checkpoints)", out, "train.output_dir"))
    elif cluster.cosmos_rev is CosmosRev.HEAD and cluster.output_root is not None:
        # HEAD's dispatch_job.py sets train.output_dir under output_root (docs/reference/cosmos-rl.md §11.1).
        needed.append(NeededPath("output_root (train.output_dir goes under it)", cluster.output_root))
    grader_path = local(grader)
    if grader_path is not None:
        key = "custom.alpamayo.reasoning_grading_model_path"
        needed.append(NeededPath(f"{key} (the grader)", grader_path, key))
    if isinstance(data_dir, (str, Path)) and str(data_dir):
        needed.append(NeededPath(f"{data_var} (the PAI data)", Path(data_dir)))
    needed.append(NeededPath("the Hugging Face cache (HF_HOME; the VLM's processor files)", hf_hub_cache(environ)))
    return needed


def cluster_train_command(
    spec: RunSpec,
    rundir: RunDir,
    *,
    record: Mapping[str, Any],
    env: Mapping[str, str],
    path_prepend: tuple[str, ...],
    secrets: tuple[str, ...],
    environ: Mapping[str, str] | None = None,
) -> Command:
    """The submission command of the train stage. Raises ``StageError`` (with ``findings``) when
    the job must not be submitted: the plan fails, a critical finding stands, a variable is missing."""
    from a1x_diagnostics.config.loader import ConfigError, load_config
    from a1x_supervisor.slurm.plan import ConfigSource, toml_get
    from a1x_supervisor.slurm.sbatch import SbatchJob
    from a1x_supervisor.slurm.spec import SlurmSpecError
    from a1x_supervisor.slurm.submit import SubmissionRefused, prepare_dispatch, prepare_sbatch

    cluster = spec.cluster
    if cluster is None:
        raise StageError('compute = "cluster" needs a [cluster] section')
    toml_path = Path(str(record["toml"]))
    try:
        config = load_config(toml_path)
    except ConfigError as exc:
        raise StageError(f"not submitted: {exc}") from None
    source = ConfigSource(str(toml_path), config.locate)
    base = os.environ if environ is None else environ
    # What the submission command will see: this environment, the stage's additions, and the
    # secrets it is given (only their presence is used here; values are never kept).
    submitting = {**base, **env}
    submitting.update({name: "set" for name in secrets if read_secret(name, base)})
    # The job runs the entry from elsewhere (Cosmos-RL's template changes into the cosmos_rl package
    # folder, docs/reference/cosmos-rl.md §11.1-§11.2): always its absolute path, the Alpamayo 1 copy included.
    entry = str(record.get("entry_script") or record["entry_arg"])
    try:
        if cluster.method == "sbatch":
            job = SbatchJob(
                run_dir=rundir.run_dir,
                config_path=toml_path,
                entry=entry,
                workdir=spec.paths.workspace,
                venv=spec.paths.venv_dir,
            )
            submission = prepare_sbatch(
                cluster,
                config.data,
                job,
                source=source,
                environ=submitting,
                n_policy=spec.replicas.policy,
                n_rollout=spec.replicas.rollout,
            )
        else:
            data_var = spec.entry.data_env
            needed = dispatch_needed_paths(
                cluster,
                entry=Path(entry),
                model=toml_get(config.data, "policy.model_name_or_path"),
                output_dir=toml_get(config.data, "train.output_dir"),
                grader=toml_get(config.data, "custom.alpamayo.reasoning_grading_model_path"),
                data_var=data_var,
                data_dir=submitting.get(data_var),
                environ=submitting,
                workspace=spec.paths.workspace,
            )
            submission = prepare_dispatch(
                cluster,
                config.data,
                config_path=toml_path,
                launcher=entry,
                source=source,
                n_policy=spec.replicas.policy,
                n_rollout=spec.replicas.rollout,
                needed=needed,
                environ=submitting,
            )
    except SubmissionRefused as exc:
        raise StageError(str(exc), findings=[_finding_json(f) for f in exc.findings]) from None
    except SlurmSpecError as exc:
        raise StageError(f"not submitted: {exc}") from None
    if submission.log_dir is not None:  # 747d1bd: Slurm fails a job whose --output folder is missing
        try:
            submission.log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StageError(
                f"not submitted: cannot create {submission.log_dir} for the job's batch log: {exc.strerror or exc}"
            ) from None
    method = "sbatch" if cluster.method == "sbatch" else "dispatch_job.py"
    return Command(
        argv=submission.argv,
        cwd=spec.paths.workspace,
        env={**env, **submission.env},
        path_prepend=path_prepend,
        secrets=secrets,
        label=f"submit to Slurm ({method}): {submission.plan.summary()}",
        executor="slurm",
        findings=tuple(_finding_json(f) for f in submission.findings),
    )


def dispatch_logs_target(spec: RunSpec, job_id: str, slurm_dir: Path | None) -> Path | None:
    """Where a cosmos-dispatch job writes its logs, for the ``<run>/slurm`` link: the run directory's
    ``slurm/`` that HEAD's dispatch_job.py printed, else 747d1bd's ``<output-root>/<job-name>/<jobid>``
    (docs/reference/cosmos-rl.md §11.2)."""
    if slurm_dir is not None:
        return slurm_dir
    cluster = spec.cluster
    if cluster is None or cluster.output_root is None:
        return None
    return cluster.output_root / cluster.job_name / job_id


def link_slurm_dir(rundir: RunDir, target: Path) -> str | None:
    """Point ``<run>/slurm`` at ``target`` (cosmos-dispatch writes its logs outside the run directory),
    so ``--check RUN`` and the train monitor read one place. Returns a one-line problem or None."""
    link = rundir.slurm_dir
    if link.resolve() == target.resolve():
        return None
    if link.exists() and not link.is_symlink():
        return f"{link} is a folder, not a link: the job's logs are in {target}"
    try:
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    except OSError as exc:
        return f"cannot link {link} to {target}: {exc.strerror or exc}"
    return None
