"""Lint of an AlpaGym run's generated configs: ``cosmos_config.toml`` and the Hydra choices in
``resolved_config.yaml`` that produced it (docs/reference/alpagym.md §2, docs/config.md "Closed-loop").

The TOML is Cosmos-RL's, written by the host from its typed schema: the open-loop rules whose keys it
shares run on it (``SHARED``); the recipe's own (its reward, prefetch, entry script, the 747d1bd key
list) do not apply and are reported as skipped. The YAML adds what only AlpaGym knows: the horizon
rule, the policy checkpoint, the GPUs the Cosmos-RL replicas and the simulator need together.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from a1x_diagnostics.alpagym.config import ResolvedConfig, ResolvedConfigError, load_resolved
from a1x_diagnostics.catalog import entry
from a1x_diagnostics.findings import CheckResult, CheckState, Evidence, Finding, Fix, Report, overall_status

SHARED = ("placeholder_path", "batch_not_divisible", "logging_blind", "grpo_became_sft", "no_group_signal",
          "outdated_steps_below_sync", "checkpointing_disabled", "wandb_key_missing")
NOT_HERE = {
    "prefetch_misconfig": "the recipe's node prefetch: AlpaGym's scenes come from AlpaSim",
    "grader_missing": "the recipe's reasoning grader: AlpaGym scores drives in AlpaSim",
    "recommended_value": "the recipe's values: AlpaGym registers its own backend and trainer",
    "unknown_toml_key": "written by the AlpaGym host from its typed schema (Hydra refuses unknown keys)",
    "invalid_value": "the recipe's reward table: AlpaGym's reward is resolved_config.yaml's reward.terms",
    "insufficient_gpus": "the replica counts are launcher flags here: judged from resolved_config.yaml (gpus_too_few)",
    "recipe_parallelism_unsupported": "the recipe's model wrapper",
    "policy_oom_config": "the recipe's model wrapper",
    "tp_size_implicit": "every parallelism size is written by the host",
    "duplicate_samples": "the recipe's data dispatch",
    "gpu_memory_utilization_range": "no vLLM engine in AlpaGym's rollout",
}
EXPERT_MODEL_TYPE = "alpamayo_reasoning_vla_expert"  # what AlpaGym's policy bundle loads (§2.3)
# AlpaGym's AlpaSim topologies and the physical GPUs their services use (packages/alpasim_configs/.../topology).
SIM_GPUS = {"alpagym_gpu1": (1,), "alpagym_gpu_id3": (3,), "alpagym_4gpu": (0, 1, 2, 3),
            "alpagym_8gpu": tuple(range(8)), "1gpu": (0,)}


def _ev(cfg: ResolvedConfig, key: str, text: str | None = None) -> Evidence:
    value = cfg.get(key)
    return Evidence(file=str(cfg.path), line=cfg.line(key), text=text or f"{key}: {value!r}")


def _finding(fid: str, explanation: str, evidence: list[Evidence], fixes: list[Fix] | None = None,
             action: str | None = None, data: dict[str, Any] | None = None) -> Finding:
    cat = entry(fid)
    return Finding(id=fid, severity=cat.severity, title=cat.title, explanation=explanation, evidence=evidence,
                   fixes=fixes or [], action=action, data=data or {})


def horizon(cfg: ResolvedConfig) -> Finding | None:
    """``expected_valid_steps`` = ``n_sim_steps`` - ``force_gt_duration_us // control_timestep_us``
    (the host's own rule: config_validation.py)."""
    wa = "alpasim.wizard_args"
    n, force, step, want = (cfg.integer(f"{wa}.n_sim_steps"), cfg.integer(f"{wa}.force_gt_duration_us"),
                            cfg.integer(f"{wa}.control_timestep_us"), cfg.integer("expected_valid_steps"))
    if None in (n, force, step, want) or not step:
        return None
    assert n is not None and force is not None and step is not None and want is not None
    closed = n - force // step
    if closed == want:
        return None
    return _finding(
        "horizon_mismatch",
        f"Each episode gives n_sim_steps {n} − the force-GT warmup {force // step} (force_gt_duration_us {force} // "
        f"control_timestep_us {step}) = {closed} policy steps, but the trainer's packer budgets expected_valid_steps "
        f"= {want}: the host refuses this config ('AlpaSim rollout horizon does not match the trainer packer budget')"
        + (", and a rollout with more steps than the budget stops training ('refusing to drop replay rows')."
           if closed > want else "."),
        [_ev(cfg, "expected_valid_steps"), _ev(cfg, f"{wa}.n_sim_steps"), _ev(cfg, f"{wa}.force_gt_duration_us"),
         _ev(cfg, f"{wa}.control_timestep_us")],
        [Fix(path="expected_valid_steps", current=want, proposed=closed,
             why="the closed-loop steps one episode gives (a Hydra override: expected_valid_steps=N)")],
        action=f"Relaunch with expected_valid_steps={closed} (n_sim_steps follows it unless set), or set "
        f"alpasim.wizard_args.n_sim_steps={want + force // step}.",
        data={"n_sim_steps": n, "warmup_steps": force // step, "closed_loop_steps": closed,
              "expected_valid_steps": want},
    )


def model_path(cfg: ResolvedConfig) -> list[Finding]:
    path = cfg.get("policy.model.path")
    key = "policy.model.path"
    if not isinstance(path, str) or not path or path == "???":
        return [_finding("host_config_rejected", f"{key} is not set ({path!r}): the host needs the converted "
                         "AlpaGym checkpoint folder.", [_ev(cfg, key)],
                         action="Pass policy.model.path=<the output of convert_release_to_alpagym_checkpoint.py>.",
                         data={"reason": "model_path"})]
    folder = Path(path)
    if not folder.is_dir():
        return []  # another machine's path (a copied run): not judged here
    config_json = folder / "config.json"
    if not config_json.is_file():
        return [_finding("host_config_rejected", f"{key} {path} holds no config.json: the host refuses it "
                         "('policy.model.path is a directory without config.json').", [_ev(cfg, key)],
                         action="Point policy.model.path at the HF bundle folder itself, not its parent.",
                         data={"reason": "model_path"})]
    try:
        model_type = json.loads(config_json.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return []
    if model_type != EXPERT_MODEL_TYPE:
        return [_finding(
            "model_not_converted",
            f"{key} {path} is a {model_type!r} checkpoint; AlpaGym's policy bundle loads only "
            f"{EXPERT_MODEL_TYPE!r} (the release checkpoint converted for AlpaGym).",
            [_ev(cfg, key), Evidence(file=str(config_json), line=None, text=f"model_type: {model_type!r}")],
            action="Convert it first: convert_release_to_alpagym_checkpoint.py --input <release> --output <dir> "
            "--overwrite, then policy.model.path=<dir>.", data={"model_type": model_type})]
    return []


def _product(cfg: ResolvedConfig, prefix: str, keys: tuple[str, ...]) -> int:
    total = 1
    for k in keys:
        v = cfg.integer(f"{prefix}.{k}")
        total *= v if v and v > 0 else 1
    return total


def cosmos_gpus(cfg: ResolvedConfig) -> int:
    """GPUs the Cosmos-RL launcher places: policy replicas × their parallel sizes, plus the rollout's unless
    colocated (the host's own arithmetic, config_validation.py)."""
    policy = _product(cfg, "cosmos.policy.parallelism", ("tp_size", "dp_replicate_size", "pp_size", "cp_size",
                                                          "dp_shard_size"))
    rollout = _product(cfg, "cosmos.rollout.parallelism", ("tp_size", "pp_size"))
    p = cfg.integer("cosmos.launch.policy_replicas") or 1
    r = cfg.integer("cosmos.launch.rollout_replicas") or 1
    colocated = cfg.get("cosmos.mode") == "colocated"
    return p * policy + (0 if colocated else r * rollout)


def gpus(cfg: ResolvedConfig, gpus_per_node: int | None) -> Finding | None:
    need = cosmos_gpus(cfg)
    if cfg.slurm:
        per_node = cfg.integer("execution.slurm.gpus_per_node")
        kind = cfg.get("execution.slurm.topology.kind")
        nodes = cfg.integer("execution.slurm.nodes") or 1
        if per_node is None:
            return None
        if kind == "all_in_one":
            have = per_node - (cfg.integer("execution.slurm.topology.alpasim_gpus") or 0)
        else:
            have = per_node * (cfg.integer("execution.slurm.topology.cosmos_nodes") or max(1, nodes - 1))
        if need <= have:
            return None
        return _finding("gpus_too_few", f"The Cosmos-RL replicas need {need} GPUs, the Slurm topology leaves them "
                        f"{have}: the host refuses it ('Cosmos Slurm GPU capacity is {have}, but policy and rollout "
                        f"replicas require {need}').",
                        [_ev(cfg, "cosmos.launch.policy_replicas"), _ev(cfg, "cosmos.launch.rollout_replicas"),
                         _ev(cfg, "execution.slurm.gpus_per_node")],
                        action="Fewer replicas or smaller parallelism, or a topology that leaves Cosmos-RL more GPUs.",
                        data={"gpus_needed": need, "gpus_available": have})
    if gpus_per_node is None:
        return None
    sim = SIM_GPUS.get(str(cfg.get("alpasim.wizard_args.topology")), ())
    need_all = max(need, (max(sim) + 1) if sim else 0)
    if need_all <= gpus_per_node:
        return None
    return _finding("gpus_too_few", f"This machine has {gpus_per_node} GPU(s); the run needs {need_all}: "
                    f"{need} for the Cosmos-RL replicas" + (f", and the simulator's topology "
                    f"{cfg.get('alpasim.wizard_args.topology')!r} uses GPU {', '.join(map(str, sim))}" if sim else "")
                    + ". AlpaGym's 10B policy needs two GPUs of at least 40 GB.",
                    [_ev(cfg, "cosmos.launch.policy_replicas"), _ev(cfg, "cosmos.launch.rollout_replicas"),
                     _ev(cfg, "alpasim.wizard_args.topology")],
                    action="Run where the GPUs are (topology=local_disaggregated_2gpu needs 2), or fewer replicas.",
                    data={"gpus_needed": need_all, "gpus_available": gpus_per_node})


def lint_resolved(cfg: ResolvedConfig, *, gpus_per_node: int | None = None) -> list[Finding]:
    out: list[Finding] = []
    for result in (horizon(cfg), gpus(cfg, gpus_per_node)):
        if result is not None:
            out.append(result)
    out.extend(model_path(cfg))
    return out


def lint_closed_loop(loaded: Any, resolved: ResolvedConfig | None, *, gpus_per_node: int | None = None,
                     env: Mapping[str, str] | None = None) -> list[Finding]:
    return _run(loaded, resolved, gpus_per_node=gpus_per_node, env=env)[0]


def _run(loaded: Any, resolved: ResolvedConfig | None, *, gpus_per_node: int | None,
         env: Mapping[str, str] | None) -> tuple[list[Finding], list[CheckResult]]:
    from a1x_diagnostics.config import make_context
    from a1x_diagnostics.config.rules import run_rule

    findings: list[Finding] = []
    checks: list[CheckResult] = []
    if loaded is not None:
        ctx = make_context(gpus_per_node=gpus_per_node, env=env)
        for rule_id in SHARED:
            finding, check = run_rule(rule_id, loaded, ctx)
            if finding is not None:
                findings.append(finding)
            checks.append(check)
        checks.extend(CheckResult(id=rid, state=CheckState.SKIPPED, note=why) for rid, why in NOT_HERE.items())
    if resolved is not None:
        found = lint_resolved(resolved, gpus_per_node=gpus_per_node)
        findings.extend(found)
        ids = {f.id for f in found}
        for rid in ("horizon_mismatch", "host_config_rejected", "model_not_converted", "gpus_too_few"):
            checks.append(CheckResult(id=rid, state=CheckState.FINDING if rid in ids else CheckState.OK))
    return findings, checks


def is_alpagym_toml(loaded: Any) -> bool:
    """A Cosmos-RL TOML the AlpaGym host generated (its backend, or its pointer to the resolved config)."""
    return loaded.get("rollout.backend") == "alpagym_rollout" or bool(loaded.get("custom.resolved_config_path"))


def report(toml: Path | None, yaml_path: Path | None, *, gpus_per_node: int | None = None,
           env: Mapping[str, str] | None = None) -> Report:
    """``a1x-tui lint`` of an AlpaGym run's configs (either file, or both)."""
    from a1x_diagnostics.config import ConfigError, load_config

    notes: list[str] = []
    loaded = None
    files: list[str] = []
    if toml is not None:
        files.append(str(toml))
        try:
            loaded = load_config(toml)
        except ConfigError as exc:
            notes.append(f"{exc}")
    resolved = None
    if yaml_path is not None:
        files.append(str(yaml_path))
        try:
            resolved = load_resolved(yaml_path)
        except ResolvedConfigError as exc:
            notes.append(str(exc))
    findings, checks = _run(loaded, resolved, gpus_per_node=gpus_per_node, env=env)
    status = overall_status(findings) if (loaded is not None or resolved is not None) else None
    from a1x_diagnostics.findings import Status

    if status is None:
        status = Status.UNKNOWN
    name = " + ".join(Path(f).name for f in files)
    counts = ", ".join(f"{sum(1 for f in findings if f.severity.value == s)} {s}" for s in ("critical", "warning")
                       if any(f.severity.value == s for f in findings))
    summary = f"LINT {status.value.upper()}: " + (counts or f"{len(checks)} checks passed") + f" in {name}"
    notes.append("Closed-loop (AlpaGym) configs: the open-loop rules its TOML shares, and resolved_config.yaml's.")
    return Report(kind="lint", target=files[0] if files else "", status=status, exit_code=status.exit_code,
                  summary=summary, findings=findings, checks=checks, metrics={}, files=files, notes=notes)


__all__ = ["NOT_HERE", "SHARED", "is_alpagym_toml", "lint_closed_loop", "lint_resolved", "report"]


def lint_target(path: Path, *, gpus_per_node: int | None = None, env: Mapping[str, str] | None = None) -> Report | None:
    """``a1x-tui lint PATH`` when PATH is an AlpaGym run's config (its ``cosmos_config.toml``, its
    ``resolved_config.yaml``, or the run folder): both files, side by side; None for any other TOML."""
    from a1x_diagnostics.parsing.alpagym_layout import COSMOS_TOML, RESOLVED, is_run_folder

    path = Path(path)
    if path.is_dir():
        if not is_run_folder(path):
            return None
        return report(path / COSMOS_TOML, path / RESOLVED, gpus_per_node=gpus_per_node, env=env)
    if path.suffix in (".yaml", ".yml"):
        toml = path.parent / COSMOS_TOML
        return report(toml if toml.is_file() else None, path, gpus_per_node=gpus_per_node, env=env)
    if not path.is_file():  # a FIFO or a device: the open-loop lint refuses it with its one line
        return None
    from a1x_diagnostics.inputs import InputError, read_input

    try:  # through read_input: a /proc file or a device that never ends a read must not block here
        head = read_input(path, limit=1 << 20, what="TOML")
    except InputError:
        return None
    if b'"alpagym_rollout"' not in head and b"resolved_config_path" not in head:
        return None
    yaml_path = path.parent / RESOLVED
    return report(path, yaml_path if yaml_path.is_file() else None, gpus_per_node=gpus_per_node, env=env)
